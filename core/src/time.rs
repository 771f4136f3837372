//! Time as data. core never reads a clock: every input carries the caller's `now`, and every
//! deadline goes out through `poll_timeout`. Two machines' clocks are never compared.

use serde::{Deserialize, Serialize};

/// A moment on one machine's own clock, in milliseconds since the Unix epoch.
///
/// Only moments from the same clock may be compared. A step's `at` is the writer's clock and is
/// informational: it feeds `operation.timing`, never a lease decision.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(transparent)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub const fn from_secs(secs: u64) -> Self {
        Timestamp(secs.saturating_mul(1000))
    }

    pub const fn millis(self) -> u64 {
        self.0
    }

    /// Whole seconds since the epoch, rounded down.
    pub const fn secs(self) -> u64 {
        self.0 / 1000
    }

    pub const fn plus_millis(self, ms: u64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }

    pub const fn plus_secs(self, secs: u64) -> Self {
        self.plus_millis(secs.saturating_mul(1000))
    }

    /// Milliseconds from `earlier` to `self`, zero if `earlier` is later (a clock that jumped
    /// back never makes a negative wait).
    pub const fn millis_since(self, earlier: Timestamp) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:03}", self.0 / 1000, self.0 % 1000)
    }
}
