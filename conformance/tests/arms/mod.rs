//! The two arms bay holds to the contract: the simulator's model and the real Git driver.
#![allow(dead_code)]

pub mod git;
pub mod sim;
