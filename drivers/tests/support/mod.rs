//! Fixtures the driver tests share: real repositories in temporary folders. Each test binary
//! uses only part of them.
#![allow(dead_code)]

pub mod checks;
pub mod remote;
