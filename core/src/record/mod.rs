//! The change record: every step of a change, as data.
//!
//! A change lives on the remote as a chain of commits under `refs/bay/changes/<change>`, one
//! commit per step, each carrying its step as JSON in the commit message. Anyone can rebuild
//! the true state of a change from its chain alone: [`ChangeRecord::fold`] is the one reader.
//! Every writer appends by compare-and-swap on the tip, so a step is never lost or rewritten
//! without the remote refusing the push.

mod fold;
mod step;

pub use fold::{CandidateRec, ChangeRecord, CheckRec, OpOutcome, Operation, RecordError};
pub use step::{STEP_SCHEMA, Step, StepBody, StepParseError};

#[cfg(test)]
mod tests;
