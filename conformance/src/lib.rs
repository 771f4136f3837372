//! bay-conformance: what every bay driver must do, and what bay's core must decide, written
//! down once so that the simulator, the real Git driver and anyone else's can be held to it.
//!
//! Two parts:
//!
//! - [`contract`]: driver contract cases (atomic pushes with leases, create-only refs,
//!   deletions, a lost reply, fetches, step and chain reads, `merge-tree` candidates, notes, a
//!   view's sparse checkout). Each case runs on a fresh [`Arm`] and is observed in symbols, then
//!   compared with what real Git answered when `golden/contract.json` was recorded. bay runs it
//!   against the simulator's model and against real bare repositories through `bay-drivers`.
//! - [`trace`]: golden traces, the events a runner machine was fed and the actions, deadlines
//!   and outcomes it answered with, for bay's main scenarios. Any build of the core must
//!   reproduce them exactly.
//!
//! # Checking your own driver
//!
//! Implement [`Arm`] over your driver and a fresh remote, then run the contract from a test:
//!
//! ```ignore
//! #[test]
//! fn my_driver_honours_bay_s_contract() {
//!     let report = bay_conformance::contract::run(|| MyArm::with_a_fresh_remote());
//!     println!("{} of {} cases match Git", report.matching(), report.cases.len());
//!     report.assert_conforms();
//! }
//! ```
//!
//! - `commit`, `set_remote_ref`, `remote_ref`, `files`, `shape` and `notes` are the test's own
//!   hands and eyes: do them however is plainest for your store (with plain Git, for a Git
//!   store), not through the code under test.
//! - `execute` is your driver: answer every action but `RunCheck` exactly as you would answer a
//!   runner or an agent. Faults are compared by presence only; their wording is yours.
//! - `push_reply_lost` must make the remote take the push and your driver lose the answer
//!   (bay's Git arm kills the push while the server's `pre-receive` hook waits); your driver must
//!   then say `Unknown`, never `Accepted`, `Rejected` or `NotSent`.
//! - `view_files` and `edit_view` stand for an agent's editor in the view `MakeView` made.
//!
//! A failing case prints each fact that differs from Git's answer. To check a core of your own
//! against the traces, see [`trace::replay`].

pub mod arm;
pub mod contract;
pub mod seen;
pub mod trace;

pub use arm::{Arm, Files};
