//! Checking beside the head (`[runner] footprint_lanes`). While a prediction walks the
//! queue, each entry's footprint (`check::footprint::of_entry`: the `when_paths` of the checks
//! its diff requires) is set against those of every entry ahead of it. An entry behind the
//! head whose footprint is disjoint from all of them is built again on the current main, and
//! its `footprint = true` checks run there, one a pass: the record is stamped, and hangs on the
//! candidate's tree and on the operation's draft, where its owner's candidate finds it.
//!
//! Nothing here is trusted at the head: the owner stamps its own candidate and carries the pass
//! only where the stamps are the same (`runner::carry`). Disjoint footprints only make that
//! likely; an entry ahead that changed the read set after all leaves the record unused, and the
//! check runs. Merges stay in queue order: a lane run merges nothing and claims nothing.

use super::{Entry, Predict, Purpose as AheadPurpose};
use crate::check::footprint::{self, Stamp, TreeFile};
use crate::check::{
    ChangeContext, CheckRequest, CheckTarget, CommitTree, EvidenceRecord, RequestInput, Verdict,
};
use crate::id::OpId;
use crate::machine::runner::Runner;
use crate::machine::{Action, BuildResult, CandidateSpec, CheckRun, Completion, Fault, Misuse};
use crate::policy::CheckSpec;

/// The lanes of a prediction: the main early lane runs build on, and the footprints of the
/// entries built so far (literal prefixes; one empty prefix is the whole tree).
#[derive(Clone, Debug)]
pub(in crate::machine::runner) struct Lanes {
    main: CommitTree,
    ahead: Vec<String>,
}

impl Lanes {
    pub(super) fn on(main: CommitTree) -> Lanes {
        Lanes {
            main,
            ahead: Vec::new(),
        }
    }

    /// An entry the prediction could not build (a conflict): its footprint is unknown, so it
    /// is taken as the whole tree, and no entry behind it goes beside it.
    pub(super) fn unknown(&mut self) {
        self.ahead.push(String::new());
    }
}

/// An entry going beside the head, and how far its lane run stands.
#[derive(Clone, Debug)]
pub(in crate::machine::runner) struct Lane {
    /// The prediction to go on with when the entry needs no run: it has taken the entry.
    predict: Predict,
    entry: Entry,
    /// The entry's footprint checks this runner can run.
    runs: Vec<CheckSpec>,
    /// The entry built on the lane's main, once built.
    candidate: Option<(CommitTree, Vec<String>)>,
    /// Each run's stamp there, once read.
    stamps: Vec<Option<Stamp>>,
    /// The line ahead of the entry: whether a run of it here is worth it.
    line: super::Line,
}

impl Lane {
    /// The prediction goes on past the entry as if it merged as `candidate`, its owner still
    /// to check it unless a lane pass answers it.
    pub(super) fn predict_after(&mut self, candidate: &CommitTree) {
        self.predict.base = candidate.clone();
        self.predict.line = self.line.after(false, false);
    }
}

/// Whether `records` hold a pass of `spec` for operation `op` made beside the head (stamped)
/// by a producer the check allows: its owner will most likely carry it and not run the check,
/// so an entry right behind it is the head in a moment. Only the line reads this; what
/// carries is decided at the head, by the stamp.
pub(super) fn passed_beside(records: &[String], spec: &CheckSpec, op: &OpId) -> bool {
    let op = op.to_string();
    records
        .iter()
        .filter_map(|line| EvidenceRecord::from_json(line).ok())
        .any(|record| {
            record.verdict == Verdict::Pass
                && record
                    .footprint
                    .as_ref()
                    .is_some_and(|stamp| footprint::of_operation(&record, spec, &op, stamp))
        })
}

/// What each action of a lane run is for.
#[derive(Clone, Debug)]
pub(in crate::machine::runner) enum Purpose {
    Build(Box<Lane>),
    Files(Box<Lane>),
    Notes(Box<Lane>),
    Run(Box<Lane>, usize, Box<CheckRequest>),
}

impl Runner {
    /// Whether the entry just built, whose plan requires `required`, goes beside the head:
    /// then the lane to build, holding `predict` to go on with. Every entry's footprint joins
    /// those ahead of the next.
    pub(super) fn beside(
        &self,
        predict: &mut Predict,
        entry: &Entry,
        at_head: bool,
        required: &[CheckSpec],
    ) -> Option<Lane> {
        let lanes = predict.lanes.as_mut()?;
        let own = footprint::of_entry(required);
        let disjoint = !at_head && footprint::disjoint(&own, &lanes.ahead);
        lanes.ahead.extend(own);
        let runs: Vec<CheckSpec> = required
            .iter()
            .filter(|spec| footprint::read_set(spec).is_some() && self.cannot_run(spec).is_none())
            .cloned()
            .collect();
        (disjoint && !runs.is_empty()).then(|| Lane {
            predict: predict.clone(),
            entry: entry.clone(),
            runs,
            candidate: None,
            stamps: Vec::new(),
            line: predict.line,
        })
    }

    /// Builds the lane's entry on the lane's main.
    pub(super) fn build_beside(&mut self, lane: Lane) {
        let Some(lanes) = &lane.predict.lanes else {
            return self.predict_next(lane.predict);
        };
        let candidate = lane.entry.candidate();
        let message = crate::machine::runner::candidate_message(
            &lane.entry.record,
            lane.entry.op(),
            &lane.entry.operation.requested_by,
            &candidate,
            &self.cfg.trailers,
        );
        // Never signed: a lane candidate is never pushed, and its records count by stamp.
        let spec = CandidateSpec {
            candidate,
            base: lanes.main.commit.clone(),
            draft: lane.entry.operation.draft.clone(),
            merge_base: lane.entry.operation.base.clone(),
            message,
            sign: None,
        };
        self.send_lane(Action::BuildCandidate(spec), Purpose::Build(Box::new(lane)));
    }

    fn send_lane(&mut self, action: Action, purpose: Purpose) {
        self.send_ahead(action, AheadPurpose::Lane(purpose));
    }

    pub(super) fn on_lane(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match (purpose, completion) {
            (Purpose::Build(lane), Completion::CandidateBuilt(built)) => {
                self.on_lane_built(*lane, built.ok());
            }
            (Purpose::Files(lane), Completion::FilesRead(read)) => self.on_lane_files(*lane, read),
            (Purpose::Notes(lane), Completion::NotesRead(read)) => {
                if let Some(records) = self.early_records(&lane.predict.policy, read) {
                    self.run_unstamped(*lane, &records);
                }
            }
            (Purpose::Run(lane, index, request), Completion::CheckExited(exit)) => {
                let spec = &lane.runs[index];
                if let Some(mut record) = self.early_record(&lane.entry, spec, &request, &exit) {
                    record.footprint = lane.stamps.get(index).cloned().flatten();
                    let noted = super::Noted {
                        change: &lane.entry.record.change,
                        op: lane.entry.op(),
                        base: &request.base,
                        candidate: &request.candidate,
                        lane: true,
                    };
                    let draft = lane.entry.operation.draft.clone();
                    self.note_early(noted, spec, record, Some(draft));
                }
            }
            (purpose, completion) => {
                return Err(Misuse(format!(
                    "a lane's {purpose:?} answered with {completion:?}"
                )));
            }
        }
        Ok(())
    }

    /// The entry built on the lane's main: read the files its stamps rest on. An entry that
    /// does not build cleanly there has no lane run; the prediction goes on.
    fn on_lane_built(&mut self, mut lane: Lane, built: Option<BuildResult>) {
        let Some(BuildResult::Clean {
            commit,
            tree,
            base_tree,
            changed_paths,
        }) = built
        else {
            return match built {
                Some(_) => self.predict_next(lane.predict),
                None => self.rest_until_watch(),
            };
        };
        let Some(lanes) = &lane.predict.lanes else {
            return self.predict_next(lane.predict);
        };
        if tree == base_tree {
            return self.predict_next(lane.predict);
        }
        let read = Action::ReadFiles {
            commits: vec![commit.clone(), lanes.main.commit.clone()],
            under: footprint::prefixes(&lane.runs),
        };
        lane.candidate = Some((CommitTree { commit, tree }, changed_paths));
        self.send_lane(read, Purpose::Files(Box::new(lane)));
    }

    /// The files read: each run's stamp, then the records of the operation on its draft. A
    /// read that failed (a path that is not UTF-8, say) runs nothing here; the prediction goes
    /// on.
    fn on_lane_files(&mut self, mut lane: Lane, read: Result<Vec<Vec<TreeFile>>, Fault>) {
        let Ok([candidate, base]) = <[Vec<TreeFile>; 2]>::try_from(read.unwrap_or_default()) else {
            return self.predict_next(lane.predict);
        };
        lane.stamps = lane
            .runs
            .iter()
            .map(|spec| footprint::stamp(spec, &candidate, &base))
            .collect();
        let notes = self.evidence_tips();
        if notes.is_empty() {
            return self.run_unstamped(lane, &[]);
        }
        let read = Action::ReadNotes {
            notes,
            objects: vec![lane.entry.operation.draft.clone()],
        };
        self.send_lane(read, Purpose::Notes(Box::new(lane)));
    }

    /// Runs the lane's first check that no allowed producer recorded for the operation with
    /// the same stamp; with none left, the prediction goes on.
    fn run_unstamped(&mut self, lane: Lane, records: &[String]) {
        let op = lane.entry.op().to_string();
        let unrecorded = lane.runs.iter().enumerate().find_map(|(index, spec)| {
            let stamp = lane.stamps.get(index).cloned().flatten()?;
            let recorded = records
                .iter()
                .filter_map(|line| EvidenceRecord::from_json(line).ok())
                .any(|record| footprint::of_operation(&record, spec, &op, &stamp));
            (!recorded).then_some(index)
        });
        // As an early run on a prediction: not where the owner would start its own run as
        // soon (`Line::worth_a_run`).
        let mut lane = lane;
        let mine = unrecorded.is_some() && lane.line.worth_a_run() && lane.predict.mine();
        let (Some(index), Some((candidate, changed_paths)), Some(lanes), true) =
            (unrecorded, &lane.candidate, &lane.predict.lanes, mine)
        else {
            let mut predict = lane.predict;
            predict.line = lane.line.after(false, unrecorded.is_none());
            return self.predict_next(predict);
        };
        let spec = &lane.runs[index];
        let record = &lane.entry.record;
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget::of(spec),
            policy_revision: lane.predict.policy.revision.to_string(),
            candidate: candidate.clone(),
            base: lanes.main.clone(),
            changed_paths: changed_paths.clone(),
            change: Some(ChangeContext {
                id: record.change.clone(),
                intent: record.intent.clone(),
                actor: record.actor.clone(),
                revision: lane.entry.operation.draft.clone(),
                messages: Vec::new(),
            }),
        });
        let run = CheckRun {
            check: spec.clone(),
            request: request.clone(),
            adapter_from: lanes.main.commit.clone(),
            candidate: candidate.commit.clone(),
            slot: 0,
        };
        self.ahead_running(spec);
        self.send_lane(
            Action::RunCheck(Box::new(run)),
            Purpose::Run(Box::new(lane), index, Box::new(request)),
        );
    }
}
