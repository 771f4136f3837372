//! Checking several queued changes as one tree (`[runner] batch`): the pieces a runner decides
//! a batch by, kept apart from the IO so that each is small enough to prove.
//!
//! A batch is a chain of member candidates on main: the head's candidate on main, the next
//! member's on that, and so on, each with its own commit and a [`trailer`]. Prefix `i` of the
//! batch is the chain's `i`-th commit, so no prefix is ever built twice. The last commit's tree
//! is checked once; on a failure [`Bisect`] finds the largest passing prefix and the first
//! failing member, running each prefix at most once. [`Window`] is the recent failure rate
//! that stops batches while checks fail often.

use std::collections::{BTreeSet, VecDeque};

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

/// How many finished places' outcomes a runner keeps: enough that the last [`WINDOW`] of those
/// overlapping any head are among them, for a queue whose areas are not too many.
pub const KEPT: usize = 256;

/// One finished queue place's check outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// A `CHECK_FAILED` or `CHECK_FLAKY` end; a merge is a pass.
    pub failed: bool,
    /// The checks its operation recorded, by id: its footprint, under a policy.
    pub checks: BTreeSet<String>,
}

/// The check outcomes of the finished queue places a runner saw, oldest first, the last
/// [`KEPT`] of them. The failure rate reads the last [`WINDOW`] of those a caller counts: all
/// of them, or with `footprint_lanes` those whose footprint overlaps the head's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    outcomes: VecDeque<Outcome>,
}

impl Window {
    /// Notes one outcome, forgetting the oldest past [`KEPT`].
    pub fn note(&mut self, outcome: Outcome) {
        if self.outcomes.len() == KEPT {
            self.outcomes.pop_front();
        }
        self.outcomes.push_back(outcome);
    }

    /// Whether the failure rate over the last [`WINDOW`] outcomes `counts` keeps is at most
    /// `max_ppm` millionths. With no such outcome there is no rate to be above.
    pub fn allows(&self, max_ppm: u32, counts: impl Fn(&Outcome) -> bool) -> bool {
        let last: Vec<&Outcome> = self
            .outcomes
            .iter()
            .rev()
            .filter(|outcome| counts(outcome))
            .take(WINDOW)
            .collect();
        let failures = last.iter().filter(|outcome| outcome.failed).count() as u64;
        failures * 1_000_000 <= u64::from(max_ppm) * last.len() as u64
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

    fn outcome(failed: bool, check: &str) -> Outcome {
        Outcome {
            failed,
            checks: BTreeSet::from([check.to_string()]),
        }
    }

    #[test]
    fn the_window_holds_twenty_outcomes() {
        let mut window = Window::default();
        let all = |_: &Outcome| true;
        assert!(window.allows(0, all), "no outcome yet");
        for _ in 0..14 {
            window.note(outcome(false, "unit"));
        }
        for _ in 0..6 {
            window.note(outcome(true, "unit"));
        }
        assert!(window.allows(300_000, all), "6 of 20 is 0.3, not above it");
        window.note(outcome(true, "unit"));
        assert!(!window.allows(300_000, all), "7 of 20 is above 0.3");
        for _ in 0..WINDOW {
            window.note(outcome(false, "unit"));
        }
        assert!(window.allows(0, all), "the failures fell out of the window");
    }

    #[test]
    fn the_rate_reads_the_last_twenty_outcomes_the_caller_counts() {
        let mut window = Window::default();
        for _ in 0..7 {
            window.note(outcome(true, "api"));
        }
        for _ in 0..30 {
            window.note(outcome(false, "web"));
        }
        let api = |o: &Outcome| o.checks.contains("api");
        assert!(
            window.allows(300_000, |_| true),
            "the api failures left the last twenty"
        );
        assert!(
            !window.allows(300_000, api),
            "but are all the api outcomes there are"
        );
        window.note(outcome(false, "api"));
        assert!(!window.allows(300_000, api), "7 of 8 still fail");
        for _ in 0..KEPT {
            window.note(outcome(false, "web"));
        }
        assert!(window.allows(0, api), "no api outcome is kept any more");
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
