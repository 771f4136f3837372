//! bay-drivers: the real driver. It executes core's actions with real programs (Git through
//! the `git` program, checks in a bwrap sandbox, views as Git worktrees) and answers with
//! completions. It decides nothing: every choice is core's.

mod bounded;
pub mod check;
pub mod checkout;
pub mod clock;
pub mod custody;
pub mod discover;
pub mod disk;
pub mod git;
pub mod gitoxide;
pub mod head;
pub mod index;
pub mod local_refs;
pub mod markers;
pub mod objects;
pub mod plugin;
mod programs;
pub mod pump;
pub mod reader;
pub mod remote;
pub mod sandbox;
pub mod scratch;
pub mod sign;
pub mod trees;
pub mod views;

#[cfg(test)]
mod testing;
