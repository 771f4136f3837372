//! Checking queued entries early (`[runner] ahead = N`). A runner whose pass finds the head
//! held by another runner checks the entries behind it now, each on the base the entries
//! ahead of it predict: main with each of them merged, in queue order. It merges nothing,
//! claims nothing and writes nothing to any change: a run's record goes into its own evidence
//! notes, on the predicted candidate's tree, with the predicted base in it.
//!
//! When the entry reaches the head, its owner builds the real candidate. Where main matches
//! the prediction, that candidate has the predicted tree on the predicted base tree, and
//! exact-inputs reuse (`check::reuse::reusable_pass`) finds the pass: the check does not run
//! again. Where it misses, the record is about another tree or another base, and no reader
//! counts it. A prediction is never trusted, only matched.
//!
//! The prediction: an entry that conflicts, or whose tree is main's already, is predicted not
//! to merge, and the entries behind build on the base before it; an entry that changes the
//! policy or a check's `adapter` files stops the prediction, since the checks behind it would
//! be its own. Only checks whose evidence counts for a tree are run early: one keyed by its
//! commit could never match, as the real candidate is another commit.
//!
//! As a bisect does, a pass runs at most one check early and keeps nothing in memory after:
//! the next pass predicts again and runs the first check no producer has recorded on exactly
//! those inputs, so two runners run one entry's check on one base at most once each. It passes
//! over an entry whose owner would start its own run as soon (`Line::worth_a_run`).
//!
//! While an early run is out the runner makes no pass: a head whose lease runs out meanwhile
//! is taken over once the run ends, at most one check's time late.

mod lanes;
mod peers;

pub(super) use peers::Peers;

use super::reuse_keys::{ReuseBy, Then};
use super::{Purpose as RunnerPurpose, RunMode, Runner};
use crate::check::plan::{self, POLICY_PATH, parse_policy};
use crate::check::reuse::recorded;
use crate::check::{
    ChangeContext, CheckRequest, CheckTarget, CommitTree, EvidenceExtras, EvidenceRecord,
    Judgement, RequestInput, judge,
};
use crate::git::Oid;
use crate::id::OpId;
use crate::machine::{
    Action, BuildResult, CandidateSpec, CheckRun, Completion, Misuse, PushOutcome, PushPlan,
};
use crate::policy::{CheckSpec, Policy};
use crate::presence::{EARLY_RUNS_LISTED, EarlyRun};
use crate::record::{ChangeRecord, Operation};
use crate::time::Timestamp;

/// Where a pass stands with checking ahead.
#[derive(Debug, Default)]
pub(super) enum Ahead {
    /// It has not looked for an entry to check early.
    #[default]
    Unlooked,
    /// It has looked, and no early run is in flight.
    Looked,
    /// An early run is in flight, given up at this moment.
    Running(Timestamp),
}

/// One queued entry, as a prediction builds it.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    record: ChangeRecord,
    operation: Operation,
}

impl Entry {
    /// The candidate the entry's owner would build next: numbered as its record holds them.
    fn candidate(&self) -> crate::id::CandidateId {
        self.operation.next_candidate()
    }

    fn op(&self) -> &OpId {
        &self.operation.id
    }
}

/// A prediction under way: main's policy, and main with every entry built so far that is
/// predicted to merge.
#[derive(Clone, Debug)]
pub(super) struct Predict {
    policy: Policy,
    main: Oid,
    base: CommitTree,
    /// The entries still to build, in queue order; the head is first until it is built.
    entries: std::collections::VecDeque<Entry>,
    /// Whether the entry built next is the head, whose own runner checks it.
    at_head: bool,
    /// Where the line ahead of the entry built next stands, which says whether an early run
    /// of it can end before its owner would run it (see [`Line::worth_a_run`]).
    line: Line,
    /// How many more entries behind the head may be checked early on their predicted base
    /// (`ahead`); the prediction may walk further for lanes.
    exact_left: u32,
    /// With `footprint_lanes`: the main lane runs build on, and the footprints ahead.
    lanes: Option<lanes::Lanes>,
    /// How many more entries worth a run this runner leaves to the runners before it
    /// (`peers`).
    leave: usize,
}

impl Predict {
    /// Whether an entry worth a run is this runner's to run, or one it leaves to another
    /// (then one fewer is left).
    fn mine(&mut self) -> bool {
        match self.leave {
            0 => true,
            _ => {
                self.leave -= 1;
                false
            }
        }
    }
}

/// The entries ahead of the one built next, as far as an early run of it is concerned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Line {
    /// Whether the head has a run no record answers yet: its owner is still checking it.
    head_unanswered: bool,
    /// Whether some entry between the head and the one built next has a run no record
    /// answers yet: someone must still check it, after the head.
    unanswered_between: bool,
    /// Whether the entry built next is the one right behind the head.
    right_behind_head: bool,
}

impl Line {
    /// Whether an early run of the entry built next can end before its owner would run it.
    ///
    /// An entry behind a line whose every run is answered is the head in a moment, and its
    /// owner runs it then: a run here would start no sooner, and only run it twice. So is an
    /// entry whose line is the head being checked and, between, only answered entries: it is
    /// the head as soon as the head's run ends, about when a run started here would. The
    /// entry right behind a head being checked is worth it (its run here starts while the
    /// head's is under way), and so is any entry with an unanswered one between: that one
    /// needs a run of its own first.
    fn worth_a_run(self) -> bool {
        self.unanswered_between || (self.head_unanswered && self.right_behind_head)
    }

    /// The line for the entry behind one that is `answered` (or not).
    fn after(self, at_head: bool, answered: bool) -> Line {
        if at_head {
            return Line {
                head_unanswered: !answered,
                unanswered_between: false,
                right_behind_head: true,
            };
        }
        Line {
            head_unanswered: self.head_unanswered,
            unanswered_between: self.unanswered_between || !answered,
            right_behind_head: false,
        }
    }
}

/// An entry built on its predicted base, with the runs it would need there.
#[derive(Clone, Debug)]
pub(super) struct Target {
    predict: Predict,
    entry: Entry,
    candidate: CommitTree,
    changed_paths: Vec<String>,
    /// The runs an early run could answer: those whose evidence counts for the tree.
    runs: Vec<CheckSpec>,
    /// Whether the plan also needs a run no early one can answer (keyed by its commit, or one
    /// this runner may not run).
    unmatched: bool,
    /// Whether the entry is the head, only read, never run early.
    at_head: bool,
    /// Whether `ahead` reaches this far: else the target is only read, for the prediction.
    early: bool,
}

/// What a prediction starts from: main, and the entries from the head on.
#[derive(Clone, Debug)]
pub(super) struct Start {
    main: Oid,
    entries: std::collections::VecDeque<Entry>,
}

/// What each action of checking ahead is for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    MainTree(Box<Start>),
    Policy(Box<Start>, Oid),
    Build(Box<Predict>, Box<Entry>),
    Notes(Box<Target>),
    Run(Box<Target>, Box<CheckSpec>, Box<CheckRequest>),
    Record(Box<EarlyRun>),
    /// The registry read before the prediction reads the passes it may reuse.
    ReuseKeys(super::reuse_keys::Purpose),
    /// A step of a run beside the head (`footprint_lanes`).
    Lane(lanes::Purpose),
}

impl Runner {
    /// The head is another runner's: check the entries behind it early when `ahead` is set
    /// (once a pass, never for `merge --wait`), else rest until the next pass or the lease's
    /// end.
    pub(super) fn ahead_or_rest(&mut self) {
        let main = self.refs.get(&self.main_ref()).cloned();
        let on = (self.cfg.ahead > 0 || self.cfg.footprint_lanes)
            && self.cfg.evidence_reuse
            && !matches!(self.cfg.mode, RunMode::Only(_));
        let looking = self
            .pass_mut()
            .filter(|pass| on && matches!(pass.ahead, Ahead::Unlooked))
            .map(|pass| pass.ahead = Ahead::Looked)
            .is_some();
        let (Some(main), true) = (main, looking) else {
            return self.rest_until_watch();
        };
        // Lanes look as far as the furthest `ahead` allows, whatever `ahead` says.
        let span = if self.cfg.footprint_lanes {
            MAX_AHEAD
        } else {
            self.cfg.ahead
        };
        let entries: std::collections::VecDeque<Entry> = self
            .in_queue_order()
            .into_iter()
            .take(1 + span as usize)
            .map(|(record, operation)| Entry { record, operation })
            .collect();
        if entries.len() < 2 {
            return self.rest_until_watch();
        }
        self.peers.saw(&self.refs, self.now);
        let read = Action::ReadTrees {
            commits: vec![main.clone()],
        };
        self.send_ahead(read, Purpose::MainTree(Box::new(Start { main, entries })));
    }

    fn send_ahead(&mut self, action: Action, purpose: Purpose) {
        self.out.send(action, RunnerPurpose::Ahead(purpose));
    }

    /// The early run in flight answered, or was given up.
    fn ahead_run_over(&mut self) {
        if let Some(pass) = self.pass_mut()
            && let Ahead::Running(_) = pass.ahead
        {
            pass.ahead = Ahead::Looked;
        }
    }

    /// An early run that never answered by its deadline: forgotten, and nothing recorded.
    pub(super) fn ahead_tick(&mut self) {
        let now = self.now;
        if let Some(pass) = self.pass()
            && let Ahead::Running(at) = pass.ahead
            && now >= at
        {
            self.ahead_run_over();
            self.out
                .forget_all_but(|purpose| !matches!(purpose, RunnerPurpose::Ahead(_)));
            self.pass_failed();
        }
    }

    pub(super) fn on_ahead(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match (purpose, completion) {
            (Purpose::MainTree(start), Completion::TreesRead(read)) => match read.as_deref() {
                Ok([tree]) => {
                    let read = Action::ReadFile {
                        commit: start.main.clone(),
                        path: POLICY_PATH.into(),
                    };
                    self.send_ahead(read, Purpose::Policy(start, tree.clone()));
                }
                _ => self.pass_failed(),
            },
            (Purpose::Policy(start, tree), Completion::FileRead(read)) => {
                // Main's policy, as the head's runner reads it. Early checks count only where
                // it lets evidence be reused, as the head's runner does: under a registry,
                // once it is read, since only signed records count there.
                let policy = read
                    .ok()
                    .flatten()
                    .and_then(|bytes| parse_policy(&bytes).ok());
                let by = policy.as_ref().and_then(|policy| self.reuse_by(policy));
                match (policy, by) {
                    (Some(policy), Some(by)) => {
                        let Start { main, entries } = *start;
                        let owner = entries
                            .front()
                            .and_then(|head| head.operation.owner.as_deref());
                        let leave = self.peers.before(
                            &self.cfg.runner,
                            owner,
                            self.now,
                            self.cfg.progress_ms,
                        );
                        let base = CommitTree {
                            commit: main.clone(),
                            tree,
                        };
                        let predict = Predict {
                            policy,
                            lanes: self
                                .cfg
                                .footprint_lanes
                                .then(|| lanes::Lanes::on(base.clone())),
                            base,
                            main,
                            entries,
                            at_head: true,
                            line: Line::default(),
                            exact_left: self.cfg.ahead,
                            leave,
                        };
                        if by == ReuseBy::Registry {
                            self.read_reuse_keys(Then::Ahead(Box::new(predict)));
                        } else {
                            self.predict_next(predict);
                        }
                    }
                    _ => self.rest_until_watch(),
                }
            }
            (Purpose::Build(predict, entry), Completion::CandidateBuilt(built)) => {
                self.on_predicted(*predict, *entry, built.ok());
            }
            (Purpose::Notes(target), Completion::NotesRead(read)) => {
                if let Some(records) = self.early_records(&target.predict.policy, read) {
                    self.run_first_unrecorded(*target, &records);
                }
            }
            (Purpose::Run(target, spec, request), Completion::CheckExited(exit)) => {
                if let Some(record) = self.early_record(&target.entry, &spec, &request, &exit) {
                    let noted = Noted {
                        change: &target.entry.record.change,
                        op: target.entry.op(),
                        base: &target.predict.base,
                        candidate: &target.candidate,
                        lane: false,
                    };
                    #[cfg(feature = "mutants")]
                    let extra = self
                        .mutant_prechecks_by_change()
                        .then(|| target.entry.operation.draft.clone());
                    #[cfg(not(feature = "mutants"))]
                    let extra = None;
                    self.note_early(noted, &spec, record, extra);
                }
            }
            (Purpose::Record(listed), Completion::Pushed(report)) => match report.outcome {
                // The next pass predicts again and goes on from this record.
                PushOutcome::Accepted => {
                    if self.prechecks.len() == EARLY_RUNS_LISTED {
                        self.prechecks.pop_front();
                    }
                    self.prechecks.push_back(*listed);
                    self.rest(0);
                }
                PushOutcome::Rejected { .. }
                | PushOutcome::Unknown { .. }
                | PushOutcome::NotSent(_) => self.pass_failed(),
            },
            (Purpose::ReuseKeys(purpose), completion) => {
                self.on_reuse_keys(purpose, completion)?;
            }
            (Purpose::Lane(purpose), completion) => self.on_lane(purpose, completion)?,
            (purpose, completion) => {
                return Err(Misuse(format!(
                    "checking ahead's {purpose:?} answered with {completion:?}"
                )));
            }
        }
        Ok(())
    }

    /// Builds the next entry on the base predicted so far; with none left, rests.
    pub(super) fn predict_next(&mut self, mut predict: Predict) {
        let Some(entry) = predict.entries.pop_front() else {
            return self.rest_until_watch();
        };
        let candidate = entry.candidate();
        let message = super::candidate_message(
            &entry.record,
            entry.op(),
            &entry.operation.requested_by,
            &candidate,
            &self.cfg.trailers,
        );
        // Never signed: a predicted candidate is never pushed, and the record is keyed by its
        // tree.
        let spec = CandidateSpec {
            candidate,
            base: predict.base.commit.clone(),
            draft: entry.operation.draft.clone(),
            merge_base: entry.operation.base.clone(),
            message,
            sign: None,
        };
        self.send_ahead(
            Action::BuildCandidate(spec),
            Purpose::Build(Box::new(predict), Box::new(entry)),
        );
    }

    /// An entry built on its predicted base: it moves the prediction on, stops it, or is
    /// the target of an early run.
    fn on_predicted(&mut self, mut predict: Predict, entry: Entry, built: Option<BuildResult>) {
        let at_head = std::mem::replace(&mut predict.at_head, false);
        let Some(BuildResult::Clean {
            commit,
            tree,
            base_tree,
            changed_paths,
        }) = built
        else {
            // A conflict, or a draft this clone cannot build: predicted not to merge. A
            // fault building it predicts nothing.
            if let Some(lanes) = &mut predict.lanes {
                lanes.unknown();
            }
            return match built {
                Some(_) => self.predict_next(predict),
                None => self.rest_until_watch(),
            };
        };
        if tree == base_tree {
            // Its work is on main already: it ends `no_effect`, and moves nothing.
            return self.predict_next(predict);
        }
        let candidate = CommitTree { commit, tree };
        // Planned under main's policy and no policy of its own: an entry that changes the
        // policy or an adapter (`plan::changes_checks`) cannot be, and that is the only refusal.
        // The checks behind it would be its own, so the prediction stops there.
        let planned = match plan::plan(&predict.policy, None, &changed_paths, &self.now.date()) {
            Ok(plan) => plan.runs,
            Err(_) => return self.rest_until_watch(),
        };
        let planned_runs = planned.len();
        let required: Vec<CheckSpec> = planned.into_iter().map(|run| run.spec).collect();
        let early = !at_head && predict.exact_left > 0;
        // Within `ahead`'s reach an entry is run on its predicted base, beside the head only
        // past it: an entry moves only towards the head, so it is never run both ways.
        let beside = self.beside(&mut predict, &entry, at_head, &required);
        if let Some(mut lane) = beside.filter(|_| !early) {
            // Its owner still runs it, behind the head: the prediction takes it as merged, and
            // goes on from there once the lane run is over.
            lane.predict_after(&candidate);
            return self.build_beside(lane);
        }
        if !at_head {
            predict.exact_left = predict.exact_left.saturating_sub(1);
        }
        let runs: Vec<CheckSpec> = required
            .into_iter()
            .filter(|spec| {
                !CheckTarget::of(spec).keyed_by_commit() && self.cannot_run(spec).is_none()
            })
            .collect();
        let target = Target {
            predict,
            entry,
            candidate,
            changed_paths,
            unmatched: runs.len() < planned_runs,
            runs,
            at_head,
            early,
        };
        let notes = self.evidence_tips();
        // Past `ahead`'s reach nothing runs early on a prediction, and without lanes the line
        // the notes would judge decides nothing more. With lanes it says where a lane run is
        // worth it, and a pass beside the head, hung on the draft, answers an entry too.
        let lanes = target.predict.lanes.is_some();
        let past_ahead = !target.early && target.predict.exact_left == 0 && !lanes;
        if target.runs.is_empty() || notes.is_empty() || past_ahead {
            return self.run_first_unrecorded(target, &[]);
        }
        let mut objects = vec![target.candidate.tree.clone()];
        if lanes {
            objects.push(target.entry.operation.draft.clone());
        }
        let read = Action::ReadNotes { notes, objects };
        self.send_ahead(read, Purpose::Notes(Box::new(target)));
    }

    /// Runs the target's first check that no producer has recorded on exactly these inputs;
    /// when every one is recorded, the entry is predicted to merge and the next one builds on
    /// it.
    fn run_first_unrecorded(&mut self, mut target: Target, records: &[String]) {
        // A run is answered when recorded on exactly these inputs or (with lanes) passed
        // beside the head, to be carried: its owner will not run it.
        let unrecorded = target
            .runs
            .iter()
            .find(|spec| {
                let beside = target.predict.lanes.is_some()
                    && lanes::passed_beside(records, spec, target.entry.op());
                !beside && !recorded(records, spec, &target.candidate, &target.predict.base.tree)
            })
            .cloned();
        let answered = unrecorded.is_none() && !target.unmatched;
        let worth = target.early && target.predict.line.worth_a_run();
        let spec = match unrecorded {
            Some(spec) if worth && target.predict.mine() => spec,
            _ => {
                // The head, one whose runs are all answered, or one its owner would run as
                // soon: predicted to merge, and the next entry builds on it.
                let Target {
                    mut predict,
                    candidate,
                    at_head,
                    ..
                } = target;
                predict.line = predict.line.after(at_head, answered);
                predict.base = candidate;
                return self.predict_next(predict);
            }
        };
        let record = &target.entry.record;
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget::of(&spec),
            policy_revision: target.predict.policy.revision.to_string(),
            candidate: target.candidate.clone(),
            base: target.predict.base.clone(),
            changed_paths: target.changed_paths.clone(),
            change: Some(ChangeContext {
                id: record.change.clone(),
                intent: record.intent.clone(),
                actor: record.actor.clone(),
                revision: target.entry.operation.draft.clone(),
                messages: Vec::new(),
            }),
        });
        self.ahead_running(&spec);
        // The adapter comes from main: no entry ahead changed it, or the prediction stopped.
        let run = CheckRun {
            check: spec.clone(),
            request: request.clone(),
            adapter_from: target.predict.main.clone(),
            candidate: target.candidate.commit.clone(),
            slot: 0,
        };
        self.send_ahead(
            Action::RunCheck(Box::new(run)),
            Purpose::Run(Box::new(target), Box::new(spec), Box::new(request)),
        );
    }

    /// The records read before an early run that count under `policy`; none, and the pass
    /// fails, when the read did.
    fn early_records(
        &mut self,
        policy: &Policy,
        read: Result<Vec<String>, crate::machine::Fault>,
    ) -> Option<Vec<String>> {
        match read {
            Ok(records) => Some(self.counted(policy, records)),
            Err(_) => {
                self.pass_failed();
                None
            }
        }
    }

    /// The record of an early run of `spec` for `entry` that answered with `exit`; none, and
    /// the pass rests, when no machine here can run it.
    fn early_record(
        &mut self,
        entry: &Entry,
        spec: &CheckSpec,
        request: &CheckRequest,
        exit: &crate::check::CheckExit,
    ) -> Option<EvidenceRecord> {
        self.ahead_run_over();
        match judge(request, spec.expected_minimum, exit) {
            Judgement::Unavailable { .. } => {
                self.rest_until_watch();
                None
            }
            Judgement::Judged(judged) => {
                let extras = EvidenceExtras {
                    producer: self.cfg.runner.clone(),
                    op: entry.op().to_string(),
                    candidate_id: entry.candidate().to_string(),
                    at: self.now,
                    definition: crate::check::definition::digest(spec, &exit.adapter),
                };
                Some(EvidenceRecord::new(request, &judged, exit, extras))
            }
        }
    }

    /// An early run of `spec` is out: no pass until it answers or its deadline passes.
    fn ahead_running(&mut self, spec: &CheckSpec) {
        let deadline = self.check_deadline(spec);
        if let Some(pass) = self.pass_mut() {
            pass.ahead = Ahead::Running(deadline);
        }
    }

    /// Notes an early run's record on its candidate's tree (and on `extra`, the draft of a
    /// stamped lane record), in this runner's evidence notes, leased on the tip the pass
    /// fetched; the run is listed under `prechecks`.
    fn note_early(
        &mut self,
        noted: Noted<'_>,
        spec: &CheckSpec,
        record: EvidenceRecord,
        extra: Option<Oid>,
    ) {
        let listed = EarlyRun {
            change: noted.change.clone(),
            op: noted.op.clone(),
            check: spec.id.clone(),
            environment: spec.environment.clone(),
            verdict: record.verdict,
            base: noted.base.clone(),
            candidate: noted.candidate.clone(),
            beside_head: noted.lane,
        };
        let json = record.to_json();
        let objects = std::iter::once(noted.candidate.tree.clone()).chain(extra);
        let notes = self.own_notes(objects.map(|object| (object, json.clone())));
        let plan = PushPlan {
            notes,
            atomic: true,
            ..PushPlan::default()
        };
        self.send_ahead(Action::Push(plan), Purpose::Record(Box::new(listed)));
    }
}

/// What the listing of an early run names.
struct Noted<'a> {
    change: &'a crate::id::ChangeId,
    op: &'a OpId,
    base: &'a CommitTree,
    candidate: &'a CommitTree,
    /// Whether it ran beside the head, on the current main (`footprint_lanes`).
    lane: bool,
}

/// The furthest `ahead` reaches; lanes look as far.
const MAX_AHEAD: u32 = 16;

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn an_early_run_is_worth_it_only_where_its_owner_would_not_start_as_soon() {
        let head_checked = Line::default().after(true, false);
        assert!(
            head_checked.worth_a_run(),
            "right behind a head being checked"
        );
        let head_answered = Line::default().after(true, true);
        assert!(!head_answered.worth_a_run(), "the head in a moment");
        let behind_answered = head_checked.after(false, true);
        assert!(
            !behind_answered.worth_a_run(),
            "the head as soon as the head's run ends"
        );
        let behind_unanswered = head_checked.after(false, false);
        assert!(
            behind_unanswered.worth_a_run(),
            "one ahead needs a run first"
        );
        assert!(behind_unanswered.after(false, true).worth_a_run());
        assert!(head_answered.after(false, false).worth_a_run());
    }
}
