//! S13: a bisect halves a red post check's suspect range with each midpoint run, and runs the
//! one merge left once more, never anything else.
//!
//! Judged from the records alone, with its own walk of main, not core's judgement: for each
//! bisect record a runner pushes, the answers held before it (a failure wins on a commit) must
//! show a pass below the run and a failure above it, with the run on no answered merge and
//! splitting the range between them into halves of at most half of it, rounded up; that is
//! what bounds a bisect of n merges to log2(n) runs, rounded up. A rerun must be on a merge
//! that failed, right above a pass, and run again for no other rerun before. A run whose
//! runner may have read other records than the remote held at its push (another producer
//! pushed since its read, or someone pointed its notes ref at a blob or mended it) is counted,
//! not judged; a notes ref someone pointed at a blob before the runner read holds nothing.

use std::collections::BTreeMap;

use bay_core::check::Verdict;
use bay_core::git::{Oid, refs};
use bay_core::red::{BisectRun, PostRecord};

use super::{Checker, Invariant};
use crate::remote::{NotesLog, Remote};
use crate::store::Store;

/// How far down main's first-parent line S13 looks for the answers around a run.
const LINE: usize = 400;

/// A runner fetches the records a little before it reads the trees: pushes this close before
/// the tree read may be missing from what it judged.
pub(super) const READ_MARGIN_MS: u64 = 500;

/// What S13 keeps between pushes.
#[derive(Debug, Default)]
pub struct BisectWatch {
    /// When each runner last read the red for a run (its tree read, just after).
    read_at: BTreeMap<String, u64>,
    /// When each producer's records went up, in order.
    pushes: Vec<(u64, String)>,
    /// Bisect runs recorded, reruns among them, and runs left unjudged.
    pub runs: u64,
    pub reruns: u64,
    pub unjudged: u64,
}

/// The answers of one check on main's line, newest first: each commit and its answer, if any.
type Line = Vec<(Oid, Option<Verdict>)>;

impl Checker {
    /// A runner read what it bisects next at `at`.
    pub fn bisect_read(&mut self, runner: &str, at: u64) {
        self.bisect.read_at.insert(runner.to_owned(), at);
    }

    /// Records that `producer` pushed records at `at`.
    pub(super) fn evidence_pushed(&mut self, at: u64, producer: &str) {
        self.bisect.pushes.push((at, producer.to_owned()));
    }

    /// S13 for a move of `producer`'s evidence notes from `old` to `new`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_bisect(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        notes: &NotesLog,
        producer: &str,
        old: Option<&Oid>,
        new: Option<&Oid>,
    ) {
        let read = self.bisect.read_at.get(producer).copied().unwrap_or(0);
        let concurrent = self
            .bisect
            .pushes
            .iter()
            .any(|(t, who)| who != producer && t + READ_MARGIN_MS >= read);
        self.evidence_pushed(at, producer);
        let Some(new) = new else { return };
        for record in added(notes, old, new) {
            let Some(run) = BisectRun::of(&record) else {
                continue;
            };
            self.bisect.runs += 1;
            self.bisect.reruns += u64::from(run == BisectRun::Rerun);
            if concurrent {
                self.bisect.unjudged += 1;
                continue;
            }
            // Main as runners last read it: the tip someone deleted, while it is gone.
            let main = remote
                .refs
                .get(&self.main_ref)
                .or(self.main_deleted.as_ref())
                .cloned();
            let tips: Vec<Oid> = remote
                .refs
                .iter()
                .filter_map(|(name, tip)| match name.strip_prefix(refs::EVIDENCE)? {
                    who if who == producer => old.cloned(),
                    // Pointed at a blob before the runner read: it read nothing there.
                    _ if self.notes_replaced_before(name, read) => None,
                    _ => self.evidence_as_read(name, tip),
                })
                .collect();
            let line = answers(store, notes, main, &tips, &record);
            if let Err(what) = judge(&line, &record.commit, run) {
                self.violate(
                    Invariant::BisectHalves,
                    at,
                    format!(
                        "{producer}'s bisect {} of {}: {what}",
                        run.as_str(),
                        record.check
                    ),
                );
            }
        }
    }
}

/// The records `new` adds to `old`'s notes.
fn added(notes: &NotesLog, old: Option<&Oid>, new: &Oid) -> Vec<PostRecord> {
    let empty = BTreeMap::new();
    let before = old.and_then(|o| notes.trees.get(o)).unwrap_or(&empty);
    let Some(after) = notes.trees.get(new) else {
        return Vec::new();
    };
    after
        .iter()
        .flat_map(|(object, text)| {
            let held = before.get(object).map_or(0, |t| t.lines().count());
            text.lines().skip(held).collect::<Vec<_>>()
        })
        .filter_map(PostRecord::from_json)
        .collect()
}

/// The answers of `record`'s check along main's line from `main` before the push, from the
/// records at every producer's notes `tips` as runners could have read them: the pusher's as
/// its notes were before the push, and one someone pointed at a blob as the tip it replaced
/// (a runner that read it a moment before bisects on what it held).
fn answers(
    store: &Store,
    notes: &NotesLog,
    main: Option<Oid>,
    tips: &[Oid],
    record: &PostRecord,
) -> Line {
    let mut line = Vec::new();
    let mut next = main;
    while let Some(commit) = next.filter(|_| line.len() < LINE) {
        next = store.get(&commit).and_then(|c| c.parents.first().cloned());
        let verdicts: Vec<Verdict> = tips
            .iter()
            .flat_map(|tip| notes.records(tip, &commit))
            .filter_map(PostRecord::from_json)
            .filter(|r| r.check == record.check && r.environment == record.environment)
            .map(|r| r.verdict)
            .collect();
        let answer = if verdicts.contains(&Verdict::ProductFailure) {
            Some(Verdict::ProductFailure)
        } else if verdicts.contains(&Verdict::Pass) {
            Some(Verdict::Pass)
        } else {
            None
        };
        line.push((commit, answer));
    }
    line
}

/// Whether a run on `commit` is the one a bisect may make on `line`.
fn judge(line: &Line, commit: &Oid, run: BisectRun) -> Result<(), String> {
    let Some(at) = line.iter().position(|(c, _)| c == commit) else {
        return Err(format!("{commit} is not on main's first-parent line"));
    };
    let below = line[at + 1..]
        .iter()
        .position(|(_, answer)| answer.is_some())
        .map(|i| (at + 1 + i, line[at + 1 + i].1));
    let Some((pass_at, Some(Verdict::Pass))) = below else {
        return Err(format!("{commit} has no pass below it"));
    };
    match run {
        BisectRun::Midpoint => {
            if line[at].1.is_some() {
                return Err(format!("{commit} was answered already"));
            }
            let above = line[..at].iter().rposition(|(_, answer)| answer.is_some());
            let Some(fail_at) = above.filter(|i| line[*i].1 == Some(Verdict::ProductFailure))
            else {
                return Err(format!("{commit} has no failure above it"));
            };
            // The range is the merges above the pass up to the failure.
            let range = pass_at - fail_at;
            let half = range.div_ceil(2);
            let (if_fails, if_passes) = (pass_at - at, at - fail_at);
            if if_fails.max(if_passes) > half {
                return Err(format!(
                    "{commit} splits a range of {range} into {if_fails} and {if_passes}"
                ));
            }
            Ok(())
        }
        BisectRun::Rerun => {
            if line[at].1 != Some(Verdict::ProductFailure) || pass_at != at + 1 {
                return Err(format!(
                    "{commit} is not one failed merge right above a pass"
                ));
            }
            Ok(())
        }
    }
}
