//! The release of views after `bay start`: this machine's views of changes that ended (merged,
//! abandoned, or `no_effect`) at least `[retention] window_s` ago go, so that views do not pile
//! up. A view with work in it stays: edits or untracked files, a `HEAD` bay did not place, a
//! lock, or one `git worktree remove` refuses; and so do the view the command runs in and the
//! view it just made. A read that fails releases nothing and refuses nothing: the start stands.
//!
//! One start looks at [`LOOKED_AT`] views at most, taken in turn from a place its clock picks, so
//! that a start costs the same however many views this machine holds, and every view is looked
//! at over the starts that follow. A change compacted into the index is read there.

use super::{Action, ChainQuery, ChainRead, Completion, FetchSpec, Outbox, Refs, ViewFacts};
use crate::git::refs;
use crate::id::ChangeId;
use crate::record::ChangeRecord;
use crate::result::BayResult;
use crate::time::Timestamp;

#[derive(Clone, Debug)]
pub struct ReleaseInput {
    /// The changes with a view on this machine.
    pub views: Vec<ChangeId>,
    /// Views that stay whatever their change: the one the command runs in, the one it made.
    pub keep: Vec<ChangeId>,
    /// `[retention] window_s`, in milliseconds.
    pub retention_ms: u64,
}

/// The most views one start looks at.
pub const LOOKED_AT: usize = 16;

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    /// Chains, from their refs or from the index.
    Read,
    Inspect,
    Release(ChangeId),
}

/// The release machine. Drive it as [`Machine`](crate::machine::Machine) says; its outcome is
/// `ok` with `detail.released_views`.
#[derive(Debug)]
pub struct Release {
    input: ReleaseInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    /// The views looked at this time.
    looked_at: Vec<ChangeId>,
    /// Chains read so far, while `reading` more reads are in flight.
    reads: Vec<ChainRead>,
    reading: usize,
    /// The records of the views' changes that ended long enough ago.
    ended: Vec<ChangeRecord>,
    released: Vec<ChangeId>,
    pending: usize,
    outcome: Option<BayResult>,
}

impl Release {
    pub fn new(input: ReleaseInput, now: Timestamp) -> Release {
        let candidates: Vec<&ChangeId> = input
            .views
            .iter()
            .filter(|change| !input.keep.contains(change))
            .collect();
        // From a place the clock picks, so that every view comes round in turn.
        let from = usize::try_from(now.secs()).unwrap_or(0) % candidates.len().max(1);
        let looked_at: Vec<ChangeId> = candidates
            .iter()
            .cycle()
            .skip(from)
            .take(candidates.len().min(LOOKED_AT))
            .map(|change| (*change).clone())
            .collect();
        let spec = FetchSpec::new(looked_at.iter().map(refs::change_pattern));
        let empty = looked_at.is_empty();
        let mut release = Release {
            input,
            out: Outbox::default(),
            now,
            looked_at,
            reads: Vec::new(),
            reading: 0,
            ended: Vec::new(),
            released: Vec::new(),
            pending: 0,
            outcome: None,
        };
        if empty {
            release.done();
        } else {
            release.out.send(Action::Fetch(spec), Purpose::Fetch);
        }
        release
    }

    fn done(&mut self) {
        let mut detail = serde_json::Map::new();
        detail.insert(
            "released_views".into(),
            serde_json::Value::from_iter(self.released.iter().map(ChangeId::as_str)),
        );
        self.outcome = Some(BayResult::ok(None, detail));
        self.out.forget_all();
    }

    /// Nothing is released when the remote or a view cannot be read.
    fn fail(&mut self, _why: String) {
        self.done();
    }

    /// Reads each view's chain: from its ref, or, once compacted, from the index.
    fn on_fetched(&mut self, remote: Refs) {
        let chains: Vec<ChainQuery> = remote
            .iter()
            .filter_map(|(name, tip)| ChainQuery::of_ref(name, tip))
            .collect();
        let compacted: Vec<ChangeId> = self
            .looked_at
            .iter()
            .filter(|change| !remote.contains_key(&refs::change(change)))
            .cloned()
            .collect();
        if !chains.is_empty() {
            self.reading += 1;
            self.out.send(Action::ReadChains { chains }, Purpose::Read);
        }
        if let Some(read) = super::agent::read_compacted(compacted) {
            self.reading += 1;
            self.out.send(read, Purpose::Read);
        }
        if self.reading == 0 {
            self.done();
        }
    }

    fn on_chains(&mut self, reads: Vec<ChainRead>) {
        self.reads.extend(reads);
        self.reading -= 1;
        if self.reading > 0 {
            return;
        }
        let window = self.input.retention_ms;
        let now = self.now;
        self.ended = self
            .reads
            .iter()
            .filter_map(|read| crate::compact::fold(read).ok())
            .filter(|record| {
                record
                    .ended_at()
                    .is_some_and(|at| now.0.saturating_sub(at.0) >= window)
            })
            .collect();
        if self.ended.is_empty() {
            return self.done();
        }
        let changes = self.ended.iter().map(|r| r.change.clone()).collect();
        self.out
            .send(Action::InspectViews { changes }, Purpose::Inspect);
    }

    /// Releases each view that holds no work: clean, unlocked, at a commit bay placed.
    fn on_inspected(&mut self, facts: Vec<ViewFacts>) {
        let free: Vec<ChangeId> = facts
            .iter()
            .filter(|view| view.clean && !view.locked)
            .filter(|view| {
                let record = self.ended.iter().find(|r| r.change == view.change);
                match (record, &view.head) {
                    (Some(record), Some(head)) => record.placed().contains(&head),
                    _ => false,
                }
            })
            .map(|view| view.change.clone())
            .collect();
        if free.is_empty() {
            return self.done();
        }
        self.pending = free.len();
        for change in free {
            self.out.send(
                Action::ReleaseView {
                    change: change.clone(),
                },
                Purpose::Release(change),
            );
        }
    }

    fn on_released(&mut self, change: ChangeId, released: bool) {
        if released {
            self.released.push(change);
        }
        self.pending -= 1;
        if self.pending == 0 {
            self.released.sort();
            self.done();
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Read, Completion::ChainsRead(Ok(reads))) => self.on_chains(reads),
            (Purpose::Inspect, Completion::ViewsInspected(Ok(facts))) => self.on_inspected(facts),
            (Purpose::Release(change), Completion::ViewReleased(result)) => {
                self.on_released(change, result.unwrap_or(false))
            }
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Release, "release");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;

    #[test]
    fn with_no_other_view_it_reads_nothing_and_releases_nothing() {
        let input = ReleaseInput {
            views: vec![ChangeId::parse("c7k2m4qa").expect("an id")],
            keep: vec![ChangeId::parse("c7k2m4qa").expect("an id")],
            retention_ms: 1,
        };
        let mut release = Release::new(input, Timestamp(10));
        assert!(release.poll_action().is_none());
        let outcome = release.outcome().expect("done at once");
        assert_eq!(outcome.detail["released_views"], serde_json::json!([]));
    }
}
