//! Passes that land while the head's own run is in flight (`[runner] ahead`, and
//! `footprint_lanes`).
//!
//! A runner checking ahead (or beside the head) runs an entry early while the head is
//! checked, so its run usually ends a moment after the entry becomes the head and its owner
//! has started a run of its own: the owner read the notes before the early record was there.
//! So, with either set, the owner looks again after each heartbeat while runs are in flight:
//! it fetches the evidence notes and reads those on its candidate (and on its draft, where a
//! stamped record hangs), and a run that a pass on exactly its inputs now answers
//! (`check::reuse::reusable_pass`, as before the runs), or that a pass of its operation with
//! the same stamp now carries to (`runner::carry`), stops waiting for its own answer, which is
//! ignored when it comes. A pass is still only ever taken on exactly the candidate's tree and
//! base tree, or on exactly the files its verdict reads.

use super::Runner;
use super::work::{Judged, Phase, Placed, Purpose, Work};
use crate::check::reuse::reusable_pass;
use crate::check::{CommitTree, Verdict};
use crate::git::refs;
use crate::machine::{Action, Fault, FetchSpec, Refs};

/// Whether the owner looks for passes that land while its runs are in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Late {
    /// Not here: neither `ahead` nor `footprint_lanes`, or a plan whose passes are never
    /// reused.
    Off,
    /// After the next heartbeat.
    Idle,
    /// A fetch or a read of the notes is out.
    Looking,
}

impl Runner {
    /// After a heartbeat: fetch the evidence notes when runs are in flight and a pass could
    /// answer them; else go on with the checks.
    pub(super) fn look_for_late_passes(&mut self, mut work: Box<Work>) -> Placed {
        if let Phase::Checking(checking) = &mut work.phase
            && checking.late == Late::Idle
            && !checking.running.is_empty()
        {
            checking.late = Late::Looking;
            let spec = FetchSpec::new([refs::EVIDENCE_PATTERN.to_string()]);
            self.send_work(Action::Fetch(spec.clone()), Purpose::LateFetch(spec));
            return self.keep(work);
        }
        self.advance(work)
    }

    pub(super) fn on_late_fetch(
        &mut self,
        mut work: Box<Work>,
        spec: FetchSpec,
        fetched: Result<Refs, Fault>,
    ) -> Placed {
        let notes = match fetched {
            Ok(fetched) => {
                spec.apply(&mut self.refs, fetched);
                self.evidence_tips()
            }
            Err(_) => Vec::new(),
        };
        let Phase::Checking(checking) = &mut work.phase else {
            return self.advance(work);
        };
        if notes.is_empty() || checking.running.is_empty() {
            checking.late = Late::Idle;
            return self.advance(work);
        }
        let built = &checking.candidate.built;
        let mut objects = vec![built.tree.clone(), built.commit.clone()];
        if !checking.stamps.is_empty() {
            objects.push(checking.change.revision.clone());
        }
        self.send_work(Action::ReadNotes { notes, objects }, Purpose::LateNotes);
        self.keep(work)
    }

    /// Each run in flight that a pass on exactly its inputs now answers is answered by it; each
    /// other that a pass of its operation with its stamp now carries to, by that.
    pub(super) fn on_late_notes(
        &mut self,
        mut work: Box<Work>,
        read: Result<Vec<String>, Fault>,
    ) -> Placed {
        let Phase::Checking(checking) = &mut work.phase else {
            return self.advance(work);
        };
        checking.late = Late::Idle;
        let records = self.counted(&checking.policy, read.unwrap_or_default());
        let built = &checking.candidate.built;
        let candidate = CommitTree {
            commit: built.commit.clone(),
            tree: built.tree.clone(),
        };
        let mut answered: Vec<(usize, Judged)> = checking
            .running
            .keys()
            .filter_map(|index| {
                let spec = &checking.plan.runs.get(*index)?.spec;
                let producer = reusable_pass(&records, spec, &candidate, &built.base_tree)?;
                let why = format!(
                    "A pass by {producer} on exactly these inputs landed while the check ran \
                     here; it stands, and the check did not run again."
                );
                Some((*index, Judged::unrun(Verdict::Pass, why)))
            })
            .collect();
        let carried: Vec<(usize, String)> = checking
            .carried(&records, &work.op, &self.cfg.runner, self.now)
            .into_iter()
            .filter(|(index, _)| {
                checking.running.contains_key(index)
                    && answered.iter().all(|(done, _)| done != index)
            })
            .collect();
        for (index, record) in carried {
            answered.push((index, super::carry::carried_judged(record.clone())));
            checking.carry_from.insert(index, record);
        }
        for (index, run) in answered {
            if let Some(running) = checking.running.remove(&index) {
                self.out.forget(running.id);
                checking.answered.insert(index, run);
            }
        }
        self.advance(work)
    }
}
