//! Checking several queued changes as one tree (`[runner] batch`): the pieces a runner decides
//! a batch by, kept apart from the IO so that each is small enough to prove.
//!
//! A batch is a chain of member candidates on main: the head's candidate on main, the next
//! member's on that, and so on, each with its own commit and a [`trailer`]. Prefix `i` of the
//! batch is the chain's `i`-th commit, so no prefix is ever built twice. The last commit's tree
//! is checked once; on a failure [`Bisect`] finds the largest passing prefix and the first
//! failing member, running each prefix at most once. [`Window`] is the recent failure rate
//! that stops batches while checks fail often.

use std::collections::VecDeque;

/// The trailer key each member commit of a batch carries.
pub const TRAILER: &str = "Bay-Batch";

/// How many check outcomes the failure rate reads.
pub const WINDOW: usize = 20;

/// The most members a batch takes (`max` may not say more).
pub const MAX_MEMBERS: u32 = 64;

/// The trailer line of member `index` (from 1) of a batch of `size`: `Bay-Batch: <id> <i>/<k>`.
pub fn trailer(id: &str, index: usize, size: usize) -> String {
    format!("{TRAILER}: {id} {index}/{size}\n")
}

/// The batch trailer of a commit message: the batch id, the member's index and the batch's
/// size; `None` when the message has none, or one that does not read.
pub fn read_trailer(message: &str) -> Option<(String, usize, usize)> {
    let prefix = format!("{TRAILER}: ");
    let line = message
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))?;
    let (id, place) = line.split_once(' ')?;
    let (index, size) = place.split_once('/')?;
    let (index, size) = (index.parse().ok()?, size.parse().ok()?);
    (1 <= index && index <= size && !id.is_empty()).then(|| (id.to_string(), index, size))
}

/// A bisection over the prefixes of a batch of `size` members whose whole tree failed.
///
/// Prefix 0 (main itself) counts as passing and the whole batch as failing; each step runs the
/// prefix halfway between the longest known to pass and the shortest known to fail, so every
/// prefix runs at most once and the search ends after about log2(size) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bisect {
    /// The longest prefix known to pass.
    passed: usize,
    /// The shortest prefix known to fail.
    failed: usize,
}

/// Where a bisection ended: the longest passing prefix and the culprit, the first member
/// (from 1) whose prefix failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub passing: usize,
    pub culprit: usize,
}

impl Bisect {
    /// A bisection of a batch of `size` members whose whole tree failed.
    pub fn new(size: usize) -> Bisect {
        Bisect {
            passed: 0,
            failed: size,
        }
    }

    /// The prefix to run next, or `None` once the culprit is found.
    pub fn next(&self) -> Option<usize> {
        (self.failed > self.passed + 1).then(|| self.passed + (self.failed - self.passed) / 2)
    }

    /// Prefix `prefix`, the one [`Bisect::next`] named, passed or failed.
    pub fn judged(&mut self, prefix: usize, passed: bool) {
        if passed {
            self.passed = self.passed.max(prefix);
        } else {
            self.failed = self.failed.min(prefix);
        }
    }

    /// The longest passing prefix and the culprit, once no prefix is left to run.
    pub fn found(&self) -> Option<Found> {
        self.next().is_none().then_some(Found {
            passing: self.passed,
            culprit: self.failed,
        })
    }
}

/// The last [`WINDOW`] check outcomes of finished queue places this runner saw: a merge is a
/// pass, a `CHECK_FAILED` or `CHECK_FLAKY` end a failure.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// `true` for a failure, oldest first.
    outcomes: VecDeque<bool>,
}

impl Window {
    /// Notes one outcome, forgetting the oldest past the window.
    pub fn note(&mut self, failed: bool) {
        if self.outcomes.len() == WINDOW {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back(failed);
    }

    /// Whether the failure rate is at most `max_ppm` millionths. With no outcome yet there is
    /// no rate to be above.
    pub fn allows(&self, max_ppm: u32) -> bool {
        let failures = self.outcomes.iter().filter(|failed| **failed).count() as u64;
        failures * 1_000_000 <= u64::from(max_ppm) * self.outcomes.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_trailer_reads_back() {
        let line = trailer("abcdefgh.1.1", 2, 3);
        assert_eq!(line, "Bay-Batch: abcdefgh.1.1 2/3\n");
        let message = format!("intent\n\nChange-Id: abcdefgh\n{line}");
        assert_eq!(
            read_trailer(&message),
            Some(("abcdefgh.1.1".to_string(), 2, 3))
        );
        for bad in [
            "Bay-Batch: x 0/3",
            "Bay-Batch: x 4/3",
            "Bay-Batch: x 1",
            "Bay-Batch:  1/2",
        ] {
            assert_eq!(read_trailer(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_window_holds_twenty_outcomes() {
        let mut window = Window::default();
        assert!(window.allows(0), "no outcome yet");
        for _ in 0..14 {
            window.note(false);
        }
        for _ in 0..6 {
            window.note(true);
        }
        assert!(window.allows(300_000), "6 of 20 is 0.3, not above it");
        window.note(true);
        assert!(!window.allows(300_000), "7 of 20 is above 0.3");
        for _ in 0..WINDOW {
            window.note(false);
        }
        assert!(window.allows(0), "the failures fell out of the window");
    }

    proptest! {
        /// Whatever member is the culprit, the bisection finds it, runs no prefix twice, never
        /// runs the whole batch or main again, and runs about log2(size) prefixes.
        #[test]
        fn bisection_finds_the_first_failing_member(size in 2usize..=64, culprit in 1usize..=64) {
            let culprit = culprit.min(size);
            let mut bisect = Bisect::new(size);
            let mut ran = std::collections::BTreeSet::new();
            while let Some(prefix) = bisect.next() {
                prop_assert!(0 < prefix && prefix < size);
                prop_assert!(ran.insert(prefix), "prefix {} ran twice", prefix);
                bisect.judged(prefix, prefix < culprit);
            }
            prop_assert_eq!(bisect.found(), Some(Found { passing: culprit - 1, culprit }));
            prop_assert!(ran.len() <= (usize::BITS - size.leading_zeros()) as usize);
        }
    }
}
