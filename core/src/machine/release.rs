//! The release of views after `bay start`: this machine's views of changes that ended (merged,
//! abandoned, or `no_effect`) at least `[retention] window_s` ago go, so that views do not pile
//! up. A view with work in it stays: edits or untracked files, a `HEAD` bay did not place, a
//! lock, or one `git worktree remove` refuses; and so do the view the command runs in and the
//! view it just made. A read that fails releases nothing and refuses nothing: the start stands.

use super::agent::fold_chain;
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

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
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
        let spec = FetchSpec::new(candidates.iter().map(|change| refs::change_pattern(change)));
        let empty = candidates.is_empty();
        let mut release = Release {
            input,
            out: Outbox::default(),
            now,
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
        detail.insert("released_views".into(), serde_json::json!(self.released));
        self.outcome = Some(BayResult::ok(None, detail));
        self.out.forget_all();
    }

    /// Nothing is released when the remote or a view cannot be read.
    fn fail(&mut self, _why: String) {
        self.done();
    }

    fn on_fetched(&mut self, remote: Refs) {
        let chains: Vec<ChainQuery> = remote
            .iter()
            .filter_map(|(name, tip)| {
                Some(ChainQuery {
                    change: refs::parse_change(name)?,
                    tip: tip.clone(),
                    known: None,
                })
            })
            .collect();
        if chains.is_empty() {
            return self.done();
        }
        self.out.send(Action::ReadChains { chains }, Purpose::Read);
    }

    fn on_chains(&mut self, reads: Vec<ChainRead>) {
        let window = self.input.retention_ms;
        let now = self.now;
        self.ended = reads
            .iter()
            .filter_map(|read| fold_chain(read).ok().map(|(record, _)| record))
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
