//! The state machines of bay's commands and of the runner.
//!
//! Every machine has the same shape, in the manner of quinn-proto:
//!
//! ```text
//! machine.handle(now, event)   // an input: a completion or a tick; `now` is this machine's clock
//! machine.poll_action()        // drain until None: what to do next
//! machine.poll_timeout()       // when to tick next, and why
//! machine.outcome()            // the bay.result/1, once the command is done
//! ```
//!
//! After constructing a machine and after every `handle`, a driver drains `poll_action`,
//! executes the actions (in any order, concurrently if it likes), and feeds each completion
//! back with the action's id. When nothing is in flight it waits until `poll_timeout` and
//! sends `Tick`. One loop serves the real driver and the simulator alike.

pub mod abandon;
pub(crate) mod agent;
pub mod approve;
pub mod checkpoint;
pub mod completion_read;
pub mod enrol;
pub mod evidence;
mod io;
pub mod keys_read;
pub mod lineage;
pub mod merge;
pub mod merge_wait;
pub mod missing;
mod outbox;
pub mod plugin_test;
pub(crate) mod red_read;
pub mod release;
pub mod runner;
pub mod runner_keys;
pub mod since;
pub mod start;
pub mod status;
pub mod undo;
pub mod unreadable;
pub mod waiting;

pub use io::*;
pub use outbox::Outbox;

use serde::Serialize;

use crate::result::BayResult;
use crate::time::Timestamp;

/// Why a machine wants to be woken: timeouts carry a reason so traces read well.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Wake {
    /// The next runner pass.
    Pass,
    /// A held claim needs its heartbeat.
    Heartbeat,
    /// A check ran past its time limit without an answer.
    CheckDeadline,
    /// Work on the head ran past its progress deadline.
    ProgressDeadline,
    /// A claim someone else holds may have gone silent for a whole lease.
    LeaseWatch,
    /// Try again after a fault.
    Backoff,
}

/// A deadline on the machine's own clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Deadline {
    pub at: Timestamp,
    pub why: Wake,
}

/// The common interface of every machine.
pub trait Machine {
    /// Feeds one input. `Err` only when the driver breaks the protocol.
    fn handle(&mut self, now: Timestamp, event: Event) -> Result<(), Misuse>;
    /// The next action to execute, until `None`.
    fn poll_action(&mut self) -> Option<(ActionId, Action)>;
    /// When to send the next `Tick`, if the machine waits on time.
    fn poll_timeout(&self) -> Option<Deadline>;
    /// The command's result, once it is done.
    fn outcome(&self) -> Option<&BayResult>;
}
