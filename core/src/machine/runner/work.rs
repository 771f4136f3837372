//! Working one claimed operation: policy, candidate, checks, and the merge push.

use std::collections::{BTreeMap, BTreeSet};

use super::{Purpose as RunnerPurpose, Runner, Stage};
use crate::check::plan::{self, AdapterFrom, Plan, parse_policy};
use crate::check::{
    ChangeContext, CheckExit, CheckRequest, CheckTarget, CommitTree, EvidenceExtras,
    EvidenceRecord, Judgement, RequestInput, Verdict, judge,
};
use crate::git::{Oid, refs};
use crate::id::{CandidateId, OpId};
use crate::limits::PathStat;
use crate::machine::agent::give_up_place;
use crate::machine::{
    Action, ActionId, Append, BuildResult, CandidateSpec, CheckRun, Completion, Deadline, Expect,
    FetchSpec, Misuse, NewValue, NoteAdd, PushOutcome, PushPlan, PushReport, RefUpdate, Wake,
};
use crate::policy::Baseline;
use crate::policy::{CheckSpec, Policy};
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, StepBody};
use crate::result::OpState;
use crate::time::Timestamp;

pub use crate::check::plan::POLICY_PATH;

/// How many times the progress deadline gives an operation's claim back before it is blocked.
const QUEUE_DEADLINE_RELEASES: u32 = 3;

/// What a work action was for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    ReadPolicy,
    Build,
    /// The measures of a built candidate, judged by the base's `[limits]` before the
    /// candidate becomes the work's.
    Stats(Built),
    /// The candidate's own policy, for a change that alters the checks.
    ReadOwnPolicy,
    Check {
        index: usize,
    },
    /// The base run of a `baseline = "base"` check whose run on the candidate failed.
    Baseline {
        index: usize,
        run: Judged,
    },
    Heartbeat {
        parent: Oid,
    },
    /// A chain write, and the steps it appends.
    Write(Write, Vec<crate::record::Step>),
    /// A fetch to learn why a write was refused.
    Verify(Write, FetchSpec),
}

/// A chain write the work wants, built into a push only when no other chain write is in
/// flight, so that each one leases on the tip the previous one made. Every write also carries
/// what is not recorded yet: the claim, and the candidate. So a runner claims with its first
/// write, once it knows what the operation needs, and an operation that needs no check merges
/// in one push.
#[derive(Clone, Debug)]
pub(super) enum Write {
    /// Only the claim and the candidate; the checks come next.
    Record,
    /// A judged check, then what follows it.
    Check {
        index: usize,
        verdict: Verdict,
        why: String,
        record: String,
        then: Then,
    },
    Merge,
    End(Ending),
    Release {
        reason: Option<ReasonCode>,
        why: String,
    },
}

/// What a recorded check leads to, in the same push.
#[derive(Clone, Debug)]
pub(super) enum Then {
    /// The same check again on the same tree (`retry_on_failure`).
    Again,
    /// The next check.
    Continue,
    /// The operation ends short of a merge.
    End(Ending),
    /// That was the last check: merge.
    Merge,
}

impl Write {
    /// Whether this push moves main.
    fn merges(&self) -> bool {
        matches!(
            self,
            Write::Merge
                | Write::Check {
                    then: Then::Merge,
                    ..
                }
        )
    }
}

/// One judged run of a check on the candidate.
#[derive(Clone, Debug)]
pub(super) struct Judged {
    pub verdict: Verdict,
    pub why: String,
    /// The evidence record, as JSON; empty when none is kept.
    pub record: String,
    /// The ids of the units that failed with `product_failure`.
    pub failed: Vec<String>,
}

/// The base runs of one base tree: per (check, environment), the units that failed there, or
/// `None` when the run gave no verdict to compare with.
pub(super) type Baselines = BTreeMap<(String, String), Option<BTreeSet<String>>>;

/// How an operation ends short of a merge.
#[derive(Clone, Debug)]
pub(super) struct Ending {
    pub state: OpState,
    pub reason: Option<ReasonCode>,
    pub detail: serde_json::Value,
}

/// The candidate the work built.
#[derive(Clone, Debug)]
pub(super) struct Built {
    pub id: CandidateId,
    pub commit: Oid,
    pub tree: Oid,
    pub base_tree: Oid,
    pub changed_paths: Vec<String>,
}

/// One operation in hand.
#[derive(Clone, Debug)]
pub(super) struct Work {
    pub record: ChangeRecord,
    pub op: OpId,
    /// The chain's tip as this runner last read or wrote it: every write leases on it.
    pub tip: Oid,
    /// The claim is recorded (at `tip` or before it).
    pub claimed: bool,
    /// The current candidate is recorded.
    pub recorded: bool,
    /// Main as the candidate is built on it.
    pub base: Oid,
    pub policy: Option<Policy>,
    pub built: Option<Built>,
    /// What the current candidate must pass.
    pub plan: Option<Plan>,
    /// How many of the plan's runs the current candidate has passed.
    pub done: usize,
    /// The runs of the current check so far on this candidate (`retry_on_failure`), each
    /// `{verdict, why}`.
    pub attempts: Vec<serde_json::Value>,
    /// What the merge's `coverage_gaps` must name besides the plan's: checks that passed only
    /// after failing (`allow_flaky`), with every run, and failures the base shares
    /// (`baseline_failures`).
    pub gaps: Vec<serde_json::Value>,
    /// Times main moved under a merge push in this work.
    pub main_moved: u32,
    pub heartbeat_at: Timestamp,
    /// A chain write (heartbeat included) is in flight.
    pub writing: bool,
    /// A write waiting for the one in flight.
    pub deferred: Option<Write>,
    /// The check in flight: its action, its deadline and the request it was sent.
    pub check: Option<(ActionId, Timestamp, CheckRequest)>,
    /// The progress deadline, set when the first check starts: the wait before it (for a
    /// machine that can run the check, say) never counts.
    pub progress_until: Option<Timestamp>,
    /// The last heartbeat this work wrote and the parent it was given (for a mutant).
    #[cfg(feature = "mutants")]
    pub last_heartbeat_parent: Option<(Oid, Oid)>,
}

impl Work {
    /// Work on `op` of `record`, whose chain's tip is `tip`; `claimed` when this runner holds
    /// the claim there already.
    pub fn new(
        record: ChangeRecord,
        op: OpId,
        tip: Oid,
        claimed: bool,
        base: Oid,
        now: Timestamp,
        heartbeat_ms: u64,
    ) -> Work {
        Work {
            record,
            op,
            tip,
            claimed,
            recorded: false,
            base,
            policy: None,
            built: None,
            plan: None,
            done: 0,
            attempts: Vec::new(),
            gaps: Vec::new(),
            main_moved: 0,
            heartbeat_at: now.plus_millis(heartbeat_ms),
            writing: false,
            deferred: None,
            check: None,
            progress_until: None,
            #[cfg(feature = "mutants")]
            last_heartbeat_parent: None,
        }
    }

    pub fn deadline(&self) -> Option<Deadline> {
        let heartbeat = (self.claimed && !self.writing).then_some(Deadline {
            at: self.heartbeat_at,
            why: Wake::Heartbeat,
        });
        let check = self.check.as_ref().map(|(_, at, _)| Deadline {
            at: *at,
            why: Wake::CheckDeadline,
        });
        let progress = self
            .progress_until
            .filter(|_| !self.writing)
            .map(|at| Deadline {
                at,
                why: Wake::ProgressDeadline,
            });
        [heartbeat, check, progress]
            .into_iter()
            .flatten()
            .min_by_key(|deadline| deadline.at)
    }
}

impl Runner {
    fn work_mut(&mut self) -> &mut Work {
        self.work
            .as_mut()
            .expect("work actions are handled only while working")
    }

    fn send_work(&mut self, action: Action, purpose: Purpose) -> ActionId {
        self.out.send(action, RunnerPurpose::Work(purpose))
    }

    pub(super) fn read_policy(&mut self) {
        let commit = self.work_mut().base.clone();
        self.send_work(
            Action::ReadFile {
                commit,
                path: POLICY_PATH.into(),
            },
            Purpose::ReadPolicy,
        );
    }

    pub(super) fn work_tick(&mut self) {
        let now = self.now;
        let Some(work) = self.work.as_mut() else {
            return;
        };
        if let Some((id, at, _)) = &work.check {
            let (id, at) = (*id, *at);
            if now >= at {
                // The driver should have killed the check at its time limit; it did not answer,
                // so the check is unknown, never a pass. Its late answer is ignored.
                work.check = None;
                self.out.forget(id);
                let index = self.work_mut().done;
                let why = "The check ran past its time limit and never answered.".to_string();
                return self.judged(
                    index,
                    Judged {
                        verdict: Verdict::Unknown,
                        why,
                        record: String::new(),
                        failed: Vec::new(),
                    },
                );
            }
        }
        let work = self.work_mut();
        if !work.writing && work.progress_until.is_some_and(|until| now >= until) {
            return self.past_deadline();
        }
        let work = self.work_mut();
        if work.claimed && !work.writing && now >= work.heartbeat_at {
            self.heartbeat();
        }
    }

    /// The head ran past its progress deadline: whatever is in flight is dropped and the claim
    /// goes back, so the queue moves; the third time the operation is blocked.
    fn past_deadline(&mut self) {
        let work = self.work_mut();
        work.progress_until = None;
        if let Some((id, _, _)) = work.check.take() {
            self.out.forget(id);
        }
        let work = self.work.as_ref().expect("past a deadline while working");
        let releases = work
            .record
            .op(&work.op)
            .map_or(0, |op| op.deadline_releases);
        let seconds = self.cfg.progress_ms / 1000;
        if releases + 1 >= QUEUE_DEADLINE_RELEASES {
            return self.end(
                OpState::Blocked,
                Some(ReasonCode::QueueDeadlineExceeded),
                serde_json::json!({
                    "progress_deadline_s": seconds,
                    "releases": releases + 1,
                }),
            );
        }
        self.release(
            Some(ReasonCode::QueueDeadlineExceeded),
            format!("the checks ran past the head's progress deadline of {seconds} s"),
        );
    }

    fn heartbeat(&mut self) {
        let (change, op) = {
            let work = self.work_mut();
            (work.record.change.clone(), work.op.clone())
        };
        let step = self.step(&change, StepBody::Heartbeat { op });
        let parent = self.heartbeat_parent();
        let parent_sent = parent.clone();
        let plan = PushPlan {
            appends: vec![Append::on(change, Some(parent), vec![step], None)],
            atomic: true,
            ..PushPlan::default()
        };
        #[cfg(feature = "mutants")]
        let plan = self.mutant_plan(plan);
        self.work_mut().writing = true;
        self.send_work(
            Action::Push(plan),
            Purpose::Heartbeat {
                parent: parent_sent,
            },
        );
    }

    #[cfg(not(feature = "mutants"))]
    fn heartbeat_parent(&mut self) -> Oid {
        self.work_mut().tip.clone()
    }

    /// Sends `write` again (for a mutant).
    #[cfg(feature = "mutants")]
    pub(super) fn write_again(&mut self, write: Write) {
        self.write(write);
    }

    /// Sends `write` now, or after the chain write in flight.
    fn write(&mut self, write: Write) {
        let work = self.work_mut();
        if work.writing {
            work.deferred = Some(write);
            return;
        }
        work.writing = true;
        let plan = self.plan(&write);
        #[cfg(feature = "mutants")]
        let plan = self.mutant_plan(plan);
        let steps: Vec<crate::record::Step> =
            plan.appends.iter().flat_map(|a| a.steps.clone()).collect();
        // Never push a step the record would refuse: a chain no reader can fold would hold its
        // operation for good.
        let mut check = self.work_mut().record.clone();
        if let Err(error) = steps.iter().try_for_each(|step| check.append(step)) {
            self.work_mut().writing = false;
            let why = format!(
                "bay would have written a step its record refuses ({error}); please report it"
            );
            let claimed = self.work_mut().claimed;
            return match write {
                Write::Release { .. } => self.drop_work(self.cfg.backoff_ms),
                _ if claimed => self.write(Write::Release { reason: None, why }),
                _ => self.drop_work(self.cfg.backoff_ms),
            };
        }
        self.send_work(Action::Push(plan), Purpose::Write(write, steps));
    }

    fn plan(&mut self, write: &Write) -> PushPlan {
        let work = self
            .work
            .clone()
            .expect("writes are planned only while working");
        let change = work.record.change.clone();
        let op = work.op.clone();
        let mut plan = PushPlan {
            atomic: true,
            ..PushPlan::default()
        };
        let mut steps = Vec::new();
        let mut carry = None;
        if !work.claimed {
            steps.push(self.step(&change, StepBody::Claim { op: op.clone() }));
        }
        if let Some(built) = work.built.clone().filter(|_| !work.recorded) {
            steps.push(self.step(
                &change,
                StepBody::Candidate {
                    op: op.clone(),
                    candidate: built.id,
                    base: work.base.clone(),
                    base_tree: built.base_tree,
                    commit: built.commit.clone(),
                    tree: built.tree,
                },
            ));
            // The candidate's step keeps the candidate commit reachable as its second parent.
            if steps.len() == 1 {
                carry = Some(built.commit);
            }
        }
        match write {
            Write::Record => {}
            Write::Check {
                index,
                verdict,
                why,
                record,
                then,
            } => {
                let built = work
                    .built
                    .clone()
                    .expect("a check runs on a built candidate");
                let spec = self.check_spec(*index);
                steps.push(self.step(
                    &change,
                    StepBody::Check {
                        op: op.clone(),
                        candidate: built.id,
                        check: spec.id.clone(),
                        environment: spec.environment.clone(),
                        verdict: *verdict,
                        why: why.clone(),
                    },
                ));
                if !record.is_empty() {
                    let producer = self.cfg.runner.clone();
                    let expect = match self.refs.get(&refs::evidence(&producer)) {
                        Some(tip) => Expect::Is(tip.clone()),
                        None => Expect::Absent,
                    };
                    plan.notes.push(NoteAdd {
                        producer,
                        expect,
                        object: built.tree,
                        record: record.clone(),
                    });
                }
                match then {
                    Then::Again | Then::Continue => {}
                    Then::End(end) => self.push_ending(&work, &mut plan, &mut steps, end),
                    Then::Merge => self.push_merge(&work, &mut plan, &mut steps),
                }
            }
            Write::Merge => self.push_merge(&work, &mut plan, &mut steps),
            Write::End(end) => self.push_ending(&work, &mut plan, &mut steps, end),
            Write::Release { reason, why } => {
                steps.push(self.step(
                    &change,
                    StepBody::Release {
                        op: op.clone(),
                        reason: *reason,
                        why: why.clone(),
                    },
                ));
            }
        }
        plan.appends
            .push(Append::on(change, Some(work.tip), steps, carry));
        plan
    }

    /// The outcome step of an ending short of a merge, and the queue place it gives up.
    fn push_ending(
        &mut self,
        work: &Work,
        plan: &mut PushPlan,
        steps: &mut Vec<crate::record::Step>,
        end: &Ending,
    ) {
        plan.updates.extend(self.give_up_place(work));
        steps.push(self.step(
            &work.record.change,
            StepBody::Outcome {
                op: work.op.clone(),
                state: end.state,
                reason: end.reason,
                detail: end.detail.clone(),
            },
        ));
    }

    /// The merge: the merged outcome, main `base -> candidate` leased on `base`, the merged
    /// marker (create-only), and the queue place given up, all in one atomic push.
    fn push_merge(
        &mut self,
        work: &Work,
        plan: &mut PushPlan,
        steps: &mut Vec<crate::record::Step>,
    ) {
        let change = work.record.change.clone();
        let built = work
            .built
            .clone()
            .expect("a merge pushes a built candidate");
        steps.push(self.step(
            &change,
            StepBody::Outcome {
                op: work.op.clone(),
                state: OpState::Merged,
                reason: None,
                detail: merged_detail(work, &built),
            },
        ));
        plan.updates.push(RefUpdate {
            name: self.main_ref(),
            expect: Expect::Is(work.base.clone()),
            new: NewValue::Oid(built.commit.clone()),
        });
        plan.updates.push(RefUpdate {
            name: refs::landed(&change),
            expect: Expect::Absent,
            new: NewValue::Oid(built.commit),
        });
        plan.updates.extend(self.give_up_place(work));
    }

    /// An ending operation gives its queue place up in the same push, so that the queue holds
    /// only places whose operations have not ended.
    fn give_up_place(&self, work: &Work) -> Option<RefUpdate> {
        let seq = work.record.op(&work.op)?.seq;
        give_up_place(&self.refs, seq)
    }

    fn check_spec(&self, index: usize) -> CheckSpec {
        let work = self.work.as_ref().expect("checks run only while working");
        let plan = work
            .plan
            .as_ref()
            .expect("checks run after the plan is made");
        plan.runs[index].spec.clone()
    }

    /// Ends the operation short of a merge.
    fn end(&mut self, state: OpState, reason: Option<ReasonCode>, detail: serde_json::Value) {
        self.write(Write::End(Ending {
            state,
            reason,
            detail,
        }));
    }

    /// Gives the claim back after a fault, so another runner may claim at once. Before the
    /// claim is recorded there is nothing to give back: the work is dropped.
    fn release(&mut self, reason: Option<ReasonCode>, why: String) {
        if !self.work_mut().claimed {
            return self.let_go(reason, why);
        }
        self.write(Write::Release { reason, why });
    }

    /// Lets go of the work after a release: try again after a while; but a `--once` run that
    /// cannot run the head's check here has nothing more it can do now, and ends.
    fn let_go(&mut self, reason: Option<ReasonCode>, why: String) {
        if reason != Some(ReasonCode::CheckUnavailable) {
            let backoff = self.cfg.backoff_ms;
            return self.drop_work(backoff);
        }
        if self.cfg.mode == super::RunMode::Once {
            let mut detail = serde_json::Map::new();
            detail.insert("unavailable".into(), serde_json::Value::from(why));
            return self.finish(crate::result::BayResult::ok(None, detail));
        }
        let interval = self.cfg.interval_ms;
        self.drop_work(interval);
    }

    pub(super) fn on_work(
        &mut self,
        id: ActionId,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        if self.work.is_none() {
            return Ok(());
        }
        match (purpose, completion) {
            (Purpose::ReadPolicy, Completion::FileRead(result)) => self.on_policy(result),
            (Purpose::Build, Completion::CandidateBuilt(result)) => self.on_built(result),
            (Purpose::Stats(built), Completion::StatsRead(result)) => self.on_stats(built, result),
            (Purpose::ReadOwnPolicy, Completion::FileRead(result)) => self.on_own_policy(result),
            (Purpose::Check { index }, Completion::CheckExited(exit)) => {
                self.on_check(id, index, exit)
            }
            (Purpose::Baseline { index, run }, Completion::CheckExited(exit)) => {
                self.on_baseline(id, index, run, exit)
            }
            (Purpose::Heartbeat { parent }, Completion::Pushed(report)) => {
                self.on_heartbeat(report, parent)
            }
            (Purpose::Write(write, steps), Completion::Pushed(report)) => {
                self.on_written(write, steps, report)
            }
            (Purpose::Verify(write, spec), Completion::Fetched(result)) => {
                self.on_verified(write, spec, result)
            }
            (purpose, completion) => {
                return Err(Misuse(format!("{purpose:?} answered with {completion:?}")));
            }
        }
        Ok(())
    }

    fn on_policy(&mut self, result: Result<Option<Vec<u8>>, crate::machine::Fault>) {
        match result {
            Err(fault) => self.release(None, format!("could not read {POLICY_PATH}: {fault}")),
            Ok(None) => {
                let detail =
                    serde_json::json!({ "path": POLICY_PATH, "base": self.work_mut().base });
                self.end(OpState::Blocked, Some(ReasonCode::PolicyMissing), detail)
            }
            Ok(Some(bytes)) => match parse_policy(&bytes) {
                Ok(policy) => {
                    self.work_mut().policy = Some(policy);
                    self.build();
                }
                Err(why) => self.end(
                    OpState::Blocked,
                    Some(ReasonCode::PolicyInvalid),
                    serde_json::json!({ "path": POLICY_PATH, "why": why }),
                ),
            },
        }
    }

    fn build(&mut self) {
        let trailers = self.cfg.trailers.clone();
        let work = self.work_mut();
        work.plan = None;
        work.done = 0;
        work.attempts.clear();
        work.gaps.clear();
        work.built = None;
        let operation = work
            .record
            .op(&work.op)
            .expect("the work's operation is in its record");
        // Candidates are numbered as the record holds them: one built and never recorded
        // (main moved before it went up) leaves no gap.
        let attempt = u32::try_from(operation.candidates.len() + 1).unwrap_or(u32::MAX);
        let candidate = work.op.candidate(attempt);
        let intent = one_line(&work.record.intent);
        let message = format!(
            "{intent}\n\nChange-Id: {change}\n{ik}: {intent}\n{ak}: {actor}\nBay-Op: {op}\nBay-Candidate: {candidate}\n",
            change = work.record.change,
            ik = trailers.intent,
            ak = trailers.actor,
            actor = one_line(&operation.requested_by),
            op = work.op,
        );
        let spec = CandidateSpec {
            candidate,
            base: work.base.clone(),
            draft: operation.draft.clone(),
            merge_base: operation.base.clone(),
            message,
        };
        self.send_work(Action::BuildCandidate(spec), Purpose::Build);
    }

    fn on_built(&mut self, result: Result<BuildResult, crate::machine::Fault>) {
        match result {
            Err(fault) => self.release(None, format!("could not build the candidate: {fault}")),
            Ok(BuildResult::Conflict { paths }) => self.end(
                OpState::Blocked,
                Some(ReasonCode::MergeConflict),
                serde_json::json!({ "paths": paths }),
            ),
            Ok(BuildResult::Clean {
                commit,
                tree,
                base_tree,
                changed_paths,
            }) => {
                let base = self.work_mut().base.clone();
                if tree == base_tree {
                    return self.end(
                        OpState::NoEffect,
                        None,
                        serde_json::json!({ "main_commit": base, "tree": tree }),
                    );
                }
                let work = self.work_mut();
                let attempt = work.record.op(&work.op).map_or(1, |o| {
                    u32::try_from(o.candidates.len() + 1).unwrap_or(u32::MAX)
                });
                let built = Built {
                    id: work.op.candidate(attempt),
                    commit,
                    tree,
                    base_tree,
                    changed_paths,
                };
                let unmeasured = work
                    .policy
                    .as_ref()
                    .expect("a candidate is built under a policy")
                    .limits
                    .is_unset();
                let base = work.base.clone();
                #[cfg(feature = "mutants")]
                let unmeasured = unmeasured || self.mutant_ignores_limits();
                if unmeasured {
                    return self.accept(built);
                }
                // The caps of the policy at the base judge the candidate against that base,
                // before any check runs; a policy without caps costs no measuring.
                let read = Action::ReadStats {
                    base,
                    commit: built.commit.clone(),
                };
                self.send_work(read, Purpose::Stats(built));
            }
        }
    }

    fn on_stats(&mut self, built: Built, result: Result<Vec<PathStat>, crate::machine::Fault>) {
        let stats = match result {
            Ok(stats) => stats,
            Err(fault) => {
                return self.release(None, format!("could not measure the candidate: {fault}"));
            }
        };
        let work = self.work.as_ref().expect("measuring while working");
        let policy = work
            .policy
            .as_ref()
            .expect("a candidate is built under a policy");
        match policy.limits.judge(&stats) {
            Some(too_large) => self.end(
                OpState::Blocked,
                Some(ReasonCode::ChangeTooLarge),
                too_large.detail(),
            ),
            None => self.accept(built),
        }
    }

    /// Takes a candidate within the caps as the work's, then reads its own policy when it
    /// changes the checks, or plans at once.
    fn accept(&mut self, built: Built) {
        let work = self.work_mut();
        let policy = work
            .policy
            .as_ref()
            .expect("a candidate is built under a policy");
        let own_policy =
            plan::changes_checks(policy, &built.changed_paths).then(|| Action::ReadFile {
                commit: built.commit.clone(),
                path: POLICY_PATH.into(),
            });
        work.built = Some(built);
        work.recorded = false;
        match own_policy {
            Some(read) => {
                self.send_work(read, Purpose::ReadOwnPolicy);
            }
            None => self.planned(None),
        }
    }

    fn on_own_policy(&mut self, result: Result<Option<Vec<u8>>, crate::machine::Fault>) {
        match result {
            Err(fault) => self.release(
                None,
                format!("could not read the change's own {POLICY_PATH}: {fault}"),
            ),
            Ok(bytes) => self.planned(bytes.map(|bytes| parse_policy(&bytes))),
        }
    }

    /// Decides what the candidate must pass (`own` is the change's own policy, as
    /// [`plan::plan`] takes it), then records the claim and the candidate; with nothing to
    /// run, they go up with the merge in one push.
    fn planned(&mut self, own: Option<Result<Policy, String>>) {
        let work = self.work.as_ref().expect("planning while working");
        let policy = work
            .policy
            .as_ref()
            .expect("a candidate is built under a policy");
        let built = work.built.as_ref().expect("planning a built candidate");
        let planned = plan::plan(policy, own, &built.changed_paths, &self.now.date());
        match planned {
            Err(why) => self.end(
                OpState::Blocked,
                Some(ReasonCode::PolicyInvalid),
                serde_json::json!({ "path": POLICY_PATH, "why": why }),
            ),
            Ok(plan) => {
                // A run this machine may not do means the operation cannot end here: leave it,
                // unclaimed, to a machine that can.
                if let Some(why) = plan.runs.iter().find_map(|run| self.cannot_run(&run.spec)) {
                    return self.unavailable(why);
                }
                let nothing_to_run = plan.runs.is_empty();
                #[cfg(feature = "mutants")]
                let nothing_to_run = nothing_to_run || self.mutant_reuses_checks();
                self.work_mut().plan = Some(plan);
                self.write(if nothing_to_run {
                    Write::Merge
                } else {
                    Write::Record
                });
            }
        }
    }

    /// Runs the next required check, or merges when none is left.
    fn next_check(&mut self) {
        let work = self.work.as_ref().expect("checks run only while working");
        let index = work.done;
        let plan = work
            .plan
            .as_ref()
            .expect("checks run after the plan is made");
        let Some(planned) = plan.runs.get(index).cloned() else {
            return self.write(Write::Merge);
        };
        let spec = planned.spec;
        let built = work.built.clone().expect("checks run on a built candidate");
        let candidate = CommitTree {
            commit: built.commit.clone(),
            tree: built.tree.clone(),
        };
        let base = CommitTree {
            commit: work.base.clone(),
            tree: built.base_tree.clone(),
        };
        let request = self.request_for(&spec, candidate, base, built.changed_paths.clone());
        let work = self.work.as_ref().expect("checks run only while working");
        let deadline = self
            .now
            .plus_secs(spec.timeout_s)
            .plus_millis(self.cfg.check_grace_ms);
        let adapter_from = match planned.adapter_from {
            AdapterFrom::Base => work.base.clone(),
            AdapterFrom::Candidate => built.commit.clone(),
        };
        let run = CheckRun {
            check: spec,
            request: request.clone(),
            adapter_from,
            candidate: built.commit,
        };
        let id = self.send_work(Action::RunCheck(Box::new(run)), Purpose::Check { index });
        let progress = self.now.plus_millis(self.cfg.progress_ms);
        let work = self.work_mut();
        work.check = Some((id, deadline, request));
        work.progress_until.get_or_insert(progress);
    }

    /// The request for one run of `spec` on `candidate`, made on `base`, about this work's
    /// change under the base's policy.
    fn request_for(
        &self,
        spec: &CheckSpec,
        candidate: CommitTree,
        base: CommitTree,
        changed_paths: Vec<String>,
    ) -> CheckRequest {
        let work = self.work.as_ref().expect("checks run only while working");
        let policy = work
            .policy
            .as_ref()
            .expect("checks run after the policy is read");
        let revision = work
            .record
            .op(&work.op)
            .expect("the work's operation is in its record")
            .draft
            .clone();
        CheckRequest::build(RequestInput {
            target: CheckTarget::of(spec),
            policy_revision: policy.revision.to_string(),
            candidate,
            base,
            changed_paths,
            change: Some(ChangeContext {
                id: work.record.change.clone(),
                intent: work.record.intent.clone(),
                actor: work.record.actor.clone(),
                revision,
                messages: Vec::new(),
            }),
        })
    }

    fn on_check(&mut self, id: ActionId, index: usize, exit: CheckExit) {
        let request = match self.work_mut().check.take() {
            Some((current, _, request)) if current == id => request,
            other => {
                self.work_mut().check = other;
                return;
            }
        };
        let spec = self.check_spec(index);
        #[cfg(feature = "mutants")]
        let request = self.mutant_request(request, &exit);
        match judge(&request, spec.expected_minimum, &exit) {
            Judgement::Unavailable { reason } => self.unavailable(reason),
            Judgement::Judged(judged) => {
                let work = self.work.as_ref().expect("judging while working");
                let extras = EvidenceExtras {
                    producer: self.cfg.runner.clone(),
                    op: work.op.to_string(),
                    candidate_id: work
                        .built
                        .as_ref()
                        .map(|b| b.id.to_string())
                        .unwrap_or_default(),
                    at: self.now,
                    definition: crate::check::definition::digest(&spec, &exit.adapter),
                };
                let record = EvidenceRecord::new(&request, &judged, &exit, extras).to_json();
                let failed = judged
                    .failed
                    .iter()
                    .filter(|unit| unit.verdict == Verdict::ProductFailure)
                    .map(|unit| unit.id.clone())
                    .collect();
                self.judged(
                    index,
                    Judged {
                        verdict: judged.verdict,
                        why: judged.why,
                        record,
                        failed,
                    },
                );
            }
        }
    }

    /// Records a judged check, with what follows in the same push. A `product_failure` runs
    /// again on the same tree while `retry_on_failure` allows; a pass after a failure is
    /// flaky (`CHECK_FLAKY`, unless `allow_flaky`, which merges it as a coverage gap); any
    /// other verdict but `pass` ends the operation; the last run's pass merges.
    fn judged(&mut self, index: usize, run: Judged) {
        let spec = self.check_spec(index);
        let Judged {
            verdict,
            why,
            record,
            ..
        } = run.clone();
        let work = self.work_mut();
        let required = work.plan.as_ref().map_or(0, |p| p.runs.len());
        work.attempts
            .push(serde_json::json!({ "verdict": verdict, "why": why }));
        let failures = work
            .attempts
            .iter()
            .filter(|run| run["verdict"] == Verdict::ProductFailure.as_str())
            .count();
        let runs = serde_json::Value::from(work.attempts.clone());
        let blocked = |reason: ReasonCode, detail: serde_json::Value| {
            Then::End(Ending {
                state: OpState::Blocked,
                reason: Some(reason),
                detail,
            })
        };
        let then = match verdict {
            Verdict::ProductFailure if failures <= spec.retry_on_failure as usize => Then::Again,
            Verdict::ProductFailure if spec.baseline == Some(Baseline::Base) => {
                return self.against_baseline(index, run);
            }
            Verdict::ProductFailure => blocked(
                ReasonCode::CheckFailed,
                serde_json::json!({ "check": spec.id, "verdict": verdict, "why": why, "runs": runs }),
            ),
            Verdict::InfraFailure | Verdict::Unknown => blocked(
                ReasonCode::CheckUnknown,
                serde_json::json!({ "check": spec.id, "verdict": verdict, "why": why }),
            ),
            Verdict::Pass if failures > 0 && !spec.allow_flaky => blocked(
                ReasonCode::CheckFlaky,
                serde_json::json!({
                    "check": spec.id,
                    "environment": spec.environment,
                    "checks": runs,
                }),
            ),
            Verdict::Pass => {
                if failures > 0 {
                    work.gaps.push(serde_json::json!({
                        "check": spec.id,
                        "environment": spec.environment,
                        "flaky": true,
                        "runs": runs,
                    }));
                }
                if index + 1 >= required {
                    Then::Merge
                } else {
                    Then::Continue
                }
            }
        };
        self.write(Write::Check {
            index,
            verdict,
            why,
            record,
            then,
        });
    }

    /// A `baseline = "base"` check failed on the candidate: compare its failing units with the
    /// same check's run on the base, run once per base tree.
    fn against_baseline(&mut self, index: usize, run: Judged) {
        let spec = self.check_spec(index);
        let work = self.work.as_ref().expect("judging while working");
        let built = work.built.clone().expect("checks run on a built candidate");
        let key = (spec.id.clone(), spec.environment.clone());
        #[cfg(feature = "mutants")]
        if let Some(pretended) = self.mutant_baseline(&run.failed) {
            return self.baseline_judged(index, run, Some(pretended.into_iter().collect()));
        }
        if let Some((tree, known)) = &self.baselines
            && *tree == built.base_tree
            && let Some(base) = known.get(&key)
        {
            let base = base.clone();
            return self.baseline_judged(index, run, base);
        }
        let base = CommitTree {
            commit: work.base.clone(),
            tree: built.base_tree.clone(),
        };
        let request = self.request_for(&spec, base.clone(), base.clone(), Vec::new());
        let deadline = self
            .now
            .plus_secs(spec.timeout_s)
            .plus_millis(self.cfg.check_grace_ms);
        let check = CheckRun {
            check: spec,
            request: request.clone(),
            adapter_from: base.commit.clone(),
            candidate: base.commit,
        };
        let id = self.send_work(
            Action::RunCheck(Box::new(check)),
            Purpose::Baseline { index, run },
        );
        self.work_mut().check = Some((id, deadline, request));
    }

    /// The base run answered: remember what failed there, and judge the candidate's failure.
    fn on_baseline(&mut self, id: ActionId, index: usize, run: Judged, exit: CheckExit) {
        let request = match self.work_mut().check.take() {
            Some((current, _, request)) if current == id => request,
            other => {
                self.work_mut().check = other;
                return;
            }
        };
        let spec = self.check_spec(index);
        let failing_on_base = match judge(&request, spec.expected_minimum, &exit) {
            Judgement::Judged(judged) if judged.verdict == Verdict::ProductFailure => Some(
                judged
                    .failed
                    .iter()
                    .filter(|unit| unit.verdict == Verdict::ProductFailure)
                    .map(|unit| unit.id.clone())
                    .collect::<BTreeSet<String>>(),
            ),
            Judgement::Judged(judged) if judged.verdict == Verdict::Pass => Some(BTreeSet::new()),
            _ => None,
        };
        let tree = request.candidate.tree.clone();
        let baselines = match &mut self.baselines {
            Some((known, baselines)) if *known == tree => baselines,
            slot => &mut slot.insert((tree, Baselines::new())).1,
        };
        baselines.insert(
            (spec.id.clone(), spec.environment.clone()),
            failing_on_base.clone(),
        );
        self.baseline_judged(index, run, failing_on_base);
    }

    /// Every unit that failed on the candidate also failed on the base: the failures are
    /// pre-existing, the rest of the result is judged (it passed every other rule), and the
    /// merge names them in `coverage_gaps` as `baseline_failures`. A new failure, or a base run
    /// with no verdict to compare with, fails the check.
    fn baseline_judged(&mut self, index: usize, run: Judged, base: Option<BTreeSet<String>>) {
        let spec = self.check_spec(index);
        let required = self.work_mut().plan.as_ref().map_or(0, |p| p.runs.len());
        let failed: BTreeSet<String> = run.failed.iter().cloned().collect();
        let (then, why) = match &base {
            Some(base) if !failed.is_empty() && failed.is_subset(base) => {
                let ids: Vec<&String> = failed.iter().collect();
                self.work_mut().gaps.push(serde_json::json!({
                    "check": spec.id,
                    "environment": spec.environment,
                    "baseline_failures": ids,
                }));
                let then = if index + 1 >= required {
                    Then::Merge
                } else {
                    Then::Continue
                };
                (
                    then,
                    format!("{} Every failing unit also fails on the base.", run.why),
                )
            }
            _ => {
                let new: Vec<&String> = match &base {
                    Some(base) => failed.difference(base).collect(),
                    None => failed.iter().collect(),
                };
                let detail = serde_json::json!({
                    "check": spec.id,
                    "verdict": run.verdict,
                    "why": run.why,
                    "new_failures": new,
                    "baseline": if base.is_some() { "compared" } else { "the base run gave no verdict" },
                });
                let then = Then::End(Ending {
                    state: OpState::Blocked,
                    reason: Some(ReasonCode::CheckFailed),
                    detail,
                });
                (then, run.why.clone())
            }
        };
        self.write(Write::Check {
            index,
            verdict: run.verdict,
            why,
            record: run.record,
            then,
        });
    }

    /// Why this machine may not run `spec`: it does not serve the check's environment
    /// (`bay.checkEnvironment`), or the policy names other `producers`, whose records alone
    /// would count.
    fn cannot_run(&self, spec: &CheckSpec) -> Option<String> {
        if let Some(served) = &self.cfg.environments
            && !served.contains(&spec.environment)
        {
            return Some(format!(
                "this runner does not serve the environment {}",
                spec.environment
            ));
        }
        match &spec.producers {
            Some(producers) if !producers.contains(&self.cfg.runner) => Some(format!(
                "only {} may answer the check {}, and this runner is {}",
                producers.join(", "),
                spec.id,
                self.cfg.runner
            )),
            _ => None,
        }
    }

    /// No worker can run the check here: keep no record, give the claim back, and wait.
    fn unavailable(&mut self, why: String) {
        self.release(Some(ReasonCode::CheckUnavailable), why);
    }

    fn on_heartbeat(&mut self, report: PushReport, parent: Oid) {
        let written = last_written(&report);
        let heartbeat_ms = self.cfg.heartbeat_ms;
        let backoff = self.cfg.backoff_ms;
        let now = self.now;
        let work = self.work_mut();
        work.writing = false;
        match (report.outcome, written) {
            (PushOutcome::Accepted, Some(tip)) => {
                work.tip = tip.clone();
                work.heartbeat_at = now.plus_millis(heartbeat_ms);
                #[cfg(feature = "mutants")]
                {
                    work.last_heartbeat_parent = Some((tip.clone(), parent));
                }
                #[cfg(not(feature = "mutants"))]
                let _ = parent;
                self.remember(tip);
                self.send_deferred();
            }
            (PushOutcome::NotSent(_), _) => {
                work.heartbeat_at = now.plus_millis(backoff);
                self.send_deferred();
            }
            // A mutant shrugs the refusal off and goes on working.
            #[cfg(feature = "mutants")]
            (PushOutcome::Rejected { .. }, _)
                if self.cfg.mutant == Some(super::Mutant::SkipFencing) =>
            {
                self.work_mut().heartbeat_at = now.plus_millis(heartbeat_ms);
                self.send_deferred();
            }
            // Refused: the claim was taken over, or the change moved under it. Write nothing more.
            (PushOutcome::Rejected { .. }, _) => {
                self.mine = None;
                self.drop_work(0);
            }
            (_, written) => self.in_doubt(written),
        }
    }

    fn send_deferred(&mut self) {
        if let Some(write) = self.work_mut().deferred.take() {
            self.write(write);
        }
    }

    /// Adds a tip this runner wrote to the tips that prove its claim.
    fn remember(&mut self, tip: Oid) {
        if let Some((_, tips)) = self.mine.as_mut() {
            tips.clear();
            tips.insert(tip);
        }
    }

    /// A write's fate is unknown: drop the work; the next pass reads which tip won and takes the
    /// work up again if either is this runner's.
    fn in_doubt(&mut self, written: Option<Oid>) {
        let work = self.work_mut();
        let (claimed, change) = (work.claimed, work.record.change.clone());
        if let Some(written) = written {
            match self.mine.as_mut() {
                Some((_, tips)) if claimed => {
                    tips.insert(written);
                }
                // The claim itself may have landed: only the tip it wrote would prove it.
                _ => self.mine = Some((change, std::collections::BTreeSet::from([written]))),
            }
        }
        self.drop_work(0);
    }

    fn on_written(&mut self, write: Write, steps: Vec<crate::record::Step>, report: PushReport) {
        let written = last_written(&report);
        self.work_mut().writing = false;
        match (report.outcome, written) {
            (PushOutcome::Accepted, Some(tip)) => {
                let change = self.work_mut().record.change.clone();
                let work = self.work_mut();
                work.tip = tip.clone();
                work.recorded = true;
                // What this runner wrote, folded in, keeps the record it holds true.
                let folded = steps.iter().try_for_each(|step| work.record.append(step));
                if !work.claimed {
                    work.claimed = true;
                    self.mine = Some((change, std::collections::BTreeSet::new()));
                }
                self.remember(tip);
                if folded.is_err() {
                    // The record refuses what was just written: never build on it.
                    return self.drop_work(self.cfg.backoff_ms);
                }
                if let Some(note) = report.notes.first() {
                    self.refs
                        .insert(refs::evidence(&self.cfg.runner), note.clone());
                }
                self.after_write(write);
            }
            (PushOutcome::Rejected { .. }, _) => {
                self.work_mut().writing = true;
                let change = self.work_mut().record.change.clone();
                let spec = FetchSpec::new([
                    self.main_ref(),
                    refs::change_pattern(&change),
                    refs::landed_pattern(&change),
                    refs::EVIDENCE_PATTERN.to_string(),
                ]);
                self.send_work(Action::Fetch(spec.clone()), Purpose::Verify(write, spec));
            }
            (PushOutcome::NotSent(_), _) => {
                // Nothing reached the remote; the claim still stands. Try the pass again later.
                let backoff = self.cfg.backoff_ms;
                self.drop_work(backoff);
            }
            (_, written) => self.in_doubt(written),
        }
    }

    /// Goes on after a write the remote accepted.
    fn after_write(&mut self, write: Write) {
        match write {
            Write::Record => self.next_check(),
            Write::Check {
                then: Then::Again, ..
            } => self.next_check(),
            Write::Check {
                then: Then::Continue,
                ..
            } => {
                let work = self.work_mut();
                work.done += 1;
                work.attempts.clear();
                self.next_check();
            }
            Write::Merge
            | Write::Check {
                then: Then::Merge, ..
            } => {
                self.merged += 1;
                self.finished();
            }
            Write::Check {
                then: Then::End(_), ..
            }
            | Write::End(_) => self.finished(),
            Write::Release { reason, why } => {
                self.mine = None;
                self.let_go(reason, why);
            }
        }
    }

    /// The operation ended by this runner's push.
    fn finished(&mut self) {
        self.mine = None;
        let work = self.work.take().expect("an operation ends while working");
        self.out.forget_all();
        if self.cfg.mode == super::RunMode::Only(work.op.clone()) {
            // `merge --wait`: the result comes from the record, with this runner's own steps
            // folded in, as every reader's does.
            if let Some(op) = work.record.op(&work.op) {
                return self.finish(crate::report::op_result(&work.record, op));
            }
        }
        self.stage = Stage::Idle;
        self.next_pass = self.now;
    }

    /// Learns why a write was refused and goes on.
    fn on_verified(
        &mut self,
        write: Write,
        spec: FetchSpec,
        result: Result<crate::machine::Refs, crate::machine::Fault>,
    ) {
        self.work_mut().writing = false;
        let Ok(fetched) = result else {
            let backoff = self.cfg.backoff_ms;
            return self.drop_work(backoff);
        };
        spec.apply(&mut self.refs, fetched);
        let work = self.work.clone().expect("verifying while working");
        let change = work.record.change.clone();
        let chain_moved = self.refs.get(&refs::change(&change)) != Some(&work.tip);
        let landed = self.refs.contains_key(&refs::landed(&change));
        if chain_moved || landed {
            #[cfg(feature = "mutants")]
            if !landed
                && self.mutant_ignores_fence(&write, self.refs.get(&refs::change(&change)).cloned())
            {
                return;
            }
            // Fenced: another writer moved the change. This runner writes nothing more to it.
            self.mine = None;
            return self.drop_work(0);
        }
        let main_now = self.refs.get(&self.main_ref()).cloned();
        match write {
            write if write.merges() && main_now.as_ref() != Some(&work.base) => {
                let Some(main_now) = main_now else {
                    return self.release(None, "main is gone from the remote".into());
                };
                let moved = {
                    let work = self.work_mut();
                    work.main_moved += 1;
                    work.base = main_now;
                    work.main_moved
                };
                if moved <= 1 {
                    // Main moved: build again on the new main, under the policy there, once.
                    self.read_policy();
                } else {
                    self.release(
                        Some(ReasonCode::MainMoved),
                        "main moved twice during the push".into(),
                    );
                }
            }
            // The chain did not move, so the refusal came from elsewhere (our evidence notes were
            // behind, or the remote refused for its own reasons): drop and let the pass retry.
            _ => {
                let backoff = self.cfg.backoff_ms;
                self.drop_work(backoff)
            }
        }
    }
}

/// What a merge's outcome names: the candidate, and what the plan spared or could not
/// cover (`not_required`, `post_checks`, `coverage_gaps` with quarantines and flaky checks).
fn merged_detail(work: &Work, built: &Built) -> serde_json::Value {
    let mut detail = serde_json::Map::new();
    detail.insert("candidate".into(), serde_json::json!(built.id));
    detail.insert("commit".into(), serde_json::json!(built.commit));
    detail.insert("tree".into(), serde_json::json!(built.tree));
    detail.insert("base".into(), serde_json::json!(work.base));
    if let Some(plan) = &work.plan {
        detail.extend(plan.detail());
    }
    if !work.gaps.is_empty() {
        let gaps = detail
            .entry("coverage_gaps")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let serde_json::Value::Array(gaps) = gaps {
            gaps.extend(work.gaps.iter().cloned());
        }
    }
    serde_json::Value::Object(detail)
}

/// The last step commit a push wrote, if it wrote any.
fn last_written(report: &PushReport) -> Option<Oid> {
    report.steps.first().and_then(|steps| steps.last()).cloned()
}

/// Text that goes into a single trailer or subject line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
