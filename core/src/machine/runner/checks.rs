//! Running the plan's checks on one candidate: up to `[runner] parallel_checks` at once, each
//! recorded in the plan's order; reruns, flaky checks and baseline comparisons.
//!
//! Answers can come in any order. Each waits in `answered` until every run before it is
//! recorded, so the chain holds the checks in the policy's order and a failure ends the
//! operation at the first failing run in that order. A `baseline = "base"` check runs alone,
//! after the runs before it are recorded. When a check answers `unavailable`, no further check
//! starts, nothing after it is recorded, and the claim goes back.
//!
//! Everything here works on the candidate's [`Checking`]: a check action answers only while
//! the work checks its candidate.

use std::collections::BTreeSet;

use super::Runner;
use super::gap::{Attempt, FailedCheck, Gap, Refusal};
use super::work::{
    Baselines, Checking, Ending, Judged, Phase, Placed, Purpose, Running, Then, Work, Write,
};
use crate::check::plan::AdapterFrom;
use crate::check::reuse::{failing_on_base, product_failures};
use crate::check::{
    CheckExit, CheckRequest, CheckTarget, CommitTree, EvidenceExtras, EvidenceRecord, JudgedCheck,
    Judgement, RequestInput, UnitReason, Verdict, judge,
};
use crate::git::Oid;
use crate::id::OpId;
use crate::machine::{Action, ActionId, CheckRun};
use crate::policy::{Baseline, CheckSpec};
use crate::reason::ReasonCode;
use crate::result::OpState;
use crate::time::Timestamp;

impl Runner {
    /// Starts runs of the plan, in order, while fewer than `parallel_checks` are in flight,
    /// once the candidate is recorded. A baseline check starts only alone, once every run
    /// before it is recorded.
    pub(super) fn start_checks(
        &mut self,
        checking: &mut Checking,
        progress_until: &mut Option<Timestamp>,
    ) {
        let limit = self.cfg.parallel_checks.max(1) as usize;
        loop {
            if !checking.candidate.recorded {
                return;
            }
            let index = checking.next_start;
            let Some(planned) = checking.plan.runs.get(index) else {
                return;
            };
            let alone = |spec: &CheckSpec| spec.baseline.is_some();
            let running_alone = checking.running.keys().any(|i| {
                checking
                    .plan
                    .runs
                    .get(*i)
                    .is_some_and(|run| alone(&run.spec))
            });
            if checking.running.len() >= limit
                || running_alone
                || (alone(&planned.spec)
                    && (index != checking.done || !checking.running.is_empty()))
            {
                return;
            }
            checking.next_start += 1;
            self.start_run(checking, progress_until, index);
        }
    }

    /// Sends run `index` of the plan on the candidate. The progress deadline starts with the
    /// first run.
    pub(super) fn start_run(
        &mut self,
        checking: &mut Checking,
        progress_until: &mut Option<Timestamp>,
        index: usize,
    ) {
        if let Some(waived) = checking.waived.get(&index) {
            // A waiver answers without a run, and never as a pass.
            let why = format!(
                "The check did not pass, and {} waived it on this candidate: {}",
                waived.waived_by, waived.why
            );
            checking
                .answered
                .insert(index, Judged::unrun(Verdict::Unknown, why));
            return;
        }
        if let Some(carried) = checking.carried_run(index) {
            checking.answered.insert(index, carried);
            return;
        }
        if let Some(producer) = checking.reused.get(&index) {
            // A pass on exactly these inputs stands: it answers without a run, and keeps the
            // note it has.
            let why = format!(
                "A pass by {producer} on exactly these inputs stands; the check did not run again."
            );
            checking
                .answered
                .insert(index, Judged::unrun(Verdict::Pass, why));
            return;
        }
        let planned = checking.plan.runs[index].clone();
        let spec = planned.spec;
        let built = &checking.candidate.built;
        let candidate = CommitTree {
            commit: built.commit.clone(),
            tree: built.tree.clone(),
        };
        let adapter_from = match planned.adapter_from {
            AdapterFrom::Base => checking.base.commit.clone(),
            AdapterFrom::Candidate => built.commit.clone(),
        };
        let base = checking.base.clone();
        let changed_paths = built.changed_paths.clone();
        let request = request_for(checking, &spec, candidate, base, changed_paths);
        let run = check_run(spec, request, adapter_from, index);
        let purpose = Purpose::Check { index };
        self.send_run(checking, progress_until, index, run, purpose);
    }

    /// Sends `run`, in the slot of plan index `index`.
    fn send_run(
        &mut self,
        checking: &mut Checking,
        progress_until: &mut Option<Timestamp>,
        index: usize,
        run: CheckRun,
        purpose: Purpose,
    ) {
        let deadline = self.check_deadline(&run.check);
        let request = run.request.clone();
        let id = self.send_work(Action::RunCheck(Box::new(run)), purpose);
        let progress = self.now.plus_millis(self.cfg.progress_ms);
        checking.running.insert(
            index,
            Running {
                id,
                deadline,
                request,
            },
        );
        progress_until.get_or_insert(progress);
    }

    /// When a run of `spec` started now is given up. The driver bounds the copy
    /// (`materialize_timeout_s`) and the run (`timeout_s`) each on its own; this deadline only
    /// catches a driver that never answers, so it waits out both, and a grace.
    pub(super) fn check_deadline(&self, spec: &CheckSpec) -> crate::time::Timestamp {
        self.now
            .plus_secs(spec.materialize_timeout_s.saturating_add(spec.timeout_s))
            .plus_millis(self.cfg.check_grace_ms)
    }

    /// Goes on with the checks when no chain write is in flight: a write waiting its turn
    /// first, then the next run's answer in order, else more runs. Before the checks are
    /// planned there is nothing more to go on with.
    pub(super) fn advance(&mut self, mut work: Box<Work>) -> Placed {
        // While the hold plugin is asked about the push that moves main, nothing else starts.
        if work.writing || work.asking.is_some() {
            return self.keep(work);
        }
        if work.deferred.is_some() {
            return self.send_deferred(work);
        }
        let Work {
            phase: Phase::Checking(checking),
            progress_until,
            ..
        } = &mut *work
        else {
            return self.keep(work);
        };
        let done = checking.done;
        let mut next = checking.answered.remove(&done).map(|run| (done, run));
        if next.is_none() {
            self.start_checks(checking, progress_until);
            // A reused pass answers as soon as it starts.
            let done = checking.done;
            next = checking.answered.remove(&done).map(|run| (done, run));
        }
        let Some((index, run)) = next else {
            if checking.approval_due() {
                checking.judging = true;
                return self.ask_approvals(work);
            }
            return self.keep(work);
        };
        match self.judged(checking, progress_until, index, run) {
            Some(write) => self.write(work, write),
            None => self.keep(work),
        }
    }

    /// The run in slot `index` answered with `exit`, if it is the one in flight there.
    fn take_running(checking: &mut Checking, index: usize, id: ActionId) -> Option<CheckRequest> {
        match checking.running.get(&index) {
            Some(running) if running.id == id => checking.running.remove(&index).map(|r| r.request),
            _ => None,
        }
    }

    pub(super) fn on_check(
        &mut self,
        mut work: Box<Work>,
        id: ActionId,
        index: usize,
        exit: CheckExit,
    ) -> Placed {
        let Work {
            phase: Phase::Checking(checking),
            op,
            ..
        } = &mut *work
        else {
            return self.keep(work);
        };
        let Some(request) = Self::take_running(checking, index, id) else {
            return self.keep(work);
        };
        let spec = checking.spec(index);
        #[cfg(feature = "mutants")]
        let request = self.mutant_request(request, &exit);
        match judge(&request, spec.expected_minimum, &exit) {
            Judgement::Unavailable { reason } => self.unavailable(work, reason),
            Judgement::Judged(judged) => {
                let mut record = self.evidence(op, checking, &spec, &request, &judged, &exit);
                record.footprint = checking.stamps.get(&index).cloned();
                let record = record.to_json();
                let failed = judged
                    .failed
                    .iter()
                    .filter(|unit| unit.verdict == Verdict::ProductFailure)
                    .cloned()
                    .collect();
                let run = Judged {
                    verdict: judged.verdict,
                    why: judged.why,
                    record,
                    failed,
                    stderr_log: exit.stderr_log,
                };
                checking.answered.insert(index, run);
                self.advance(work)
            }
        }
    }

    /// The evidence record of one judged run of `op`'s candidate.
    fn evidence(
        &self,
        op: &OpId,
        checking: &Checking,
        spec: &CheckSpec,
        request: &CheckRequest,
        judged: &JudgedCheck,
        exit: &CheckExit,
    ) -> EvidenceRecord {
        let extras = EvidenceExtras {
            producer: self.cfg.runner.clone(),
            op: op.to_string(),
            candidate_id: checking.candidate.built.id.to_string(),
            at: self.now,
            definition: crate::check::definition::digest(spec, &exit.adapter),
        };
        EvidenceRecord::new(request, judged, exit, extras)
    }

    /// Judges a run in its turn: the write that records it, with what follows in the same
    /// push; or `None` while the failure of a baseline check is compared with the base. A
    /// `product_failure` runs again on the same tree while `retry_on_failure` allows; a pass
    /// after a failure is flaky (`CHECK_FLAKY`, unless `allow_flaky`, which merges it as a
    /// coverage gap); any other verdict but `pass` ends the operation; the last run's pass
    /// merges.
    fn judged(
        &mut self,
        checking: &mut Checking,
        progress_until: &mut Option<Timestamp>,
        index: usize,
        run: Judged,
    ) -> Option<Write> {
        let spec = checking.spec(index);
        let Judged {
            verdict,
            why,
            record,
            ..
        } = run.clone();
        if let Some(waived) = checking.waived.get(&index).cloned() {
            // Waived: a gap the merge names with the real verdict, never a pass.
            checking.gaps.push(Gap::Waived(waived));
            let then = checking.after_pass(index, self.cfg.unsigned_trust());
            return Some(check_write(
                checking, &spec, verdict, why, record, None, then,
            ));
        }
        checking.attempts.push(Attempt {
            verdict,
            why: why.clone(),
        });
        let failures = checking
            .attempts
            .iter()
            .filter(|run| run.verdict == Verdict::ProductFailure)
            .count();
        let blocked = |reason: ReasonCode, refusal: Refusal| {
            Then::End(Ending {
                state: OpState::Blocked,
                reason: Some(reason),
                detail: refusal.to_json(),
            })
        };
        let then = match verdict {
            Verdict::ProductFailure if failures <= spec.retry_on_failure as usize => Then::Again,
            Verdict::ProductFailure if spec.baseline == Some(Baseline::Base) => {
                return self.against_baseline(checking, progress_until, index, run);
            }
            Verdict::ProductFailure => blocked(
                ReasonCode::CheckFailed,
                Refusal::Failed {
                    check: spec.id.clone(),
                    verdict,
                    why: why.clone(),
                    runs: checking.attempts.clone(),
                    checks: vec![failed_check(&spec, &run, run.failed.iter(), None)],
                },
            ),
            Verdict::InfraFailure | Verdict::Unknown => blocked(
                ReasonCode::CheckUnknown,
                Refusal::Unknown {
                    check: spec.id.clone(),
                    verdict,
                    why: why.clone(),
                    baseline: None,
                },
            ),
            Verdict::Pass if failures > 0 && !spec.allow_flaky => blocked(
                ReasonCode::CheckFlaky,
                Refusal::Flaky {
                    check: spec.id.clone(),
                    environment: spec.environment.clone(),
                    checks: checking.attempts.clone(),
                },
            ),
            Verdict::Pass => {
                if failures > 0 {
                    checking.gaps.push(Gap::Flaky {
                        check: spec.id.clone(),
                        environment: spec.environment.clone(),
                        flaky: true,
                        runs: checking.attempts.clone(),
                    });
                }
                checking.after_pass(index, self.cfg.unsigned_trust())
            }
        };
        Some(check_write(
            checking, &spec, verdict, why, record, None, then,
        ))
    }

    /// A `baseline = "base"` check failed on the candidate: compare its failing units with the
    /// same check's result on the base. That is the base's own record of the check, when the
    /// remote holds one made with the same definition; else the check runs once on the base
    /// tree, and its record is kept. The write, when the comparison needs nothing read.
    fn against_baseline(
        &mut self,
        checking: &mut Checking,
        progress_until: &mut Option<Timestamp>,
        index: usize,
        run: Judged,
    ) -> Option<Write> {
        let spec = checking.spec(index);
        let base = checking.base.clone();
        let key = (spec.id.clone(), spec.environment.clone());
        #[cfg(feature = "mutants")]
        if let Some(pretended) = self.mutant_baseline(&run.failed) {
            let pretended = Some(pretended.into_iter().collect());
            return Some(self.baseline_judged(checking, index, run, pretended, None));
        }
        if let Some((tree, known)) = &self.baselines
            && *tree == base.tree
            && let Some(failing) = known.get(&key)
        {
            let failing = failing.clone();
            return Some(self.baseline_judged(checking, index, run, failing, None));
        }
        let notes = self.evidence_tips();
        if notes.is_empty() {
            self.run_base(checking, progress_until, index, run);
            return None;
        }
        let objects = vec![base.tree, base.commit];
        let read = Action::ReadNotes { notes, objects };
        self.send_work(read, Purpose::BaseRecords { index, run });
        None
    }

    /// The evidence on the base answered: the base's own records of the check, made with the
    /// definition the candidate's run had, decide what fails there; without one, the check
    /// runs on the base.
    pub(super) fn on_base_records(
        &mut self,
        mut work: Box<Work>,
        index: usize,
        run: Judged,
        records: Result<Vec<String>, crate::machine::Fault>,
    ) -> Placed {
        let Work {
            phase: Phase::Checking(checking),
            progress_until,
            ..
        } = &mut *work
        else {
            return self.keep(work);
        };
        let spec = checking.spec(index);
        let base = checking.base.clone();
        let definition = EvidenceRecord::from_json(&run.record).map(|record| record.definition);
        let found = match definition {
            Ok(definition) => {
                failing_on_base(&records.unwrap_or_default(), &spec, &base, &definition)
            }
            Err(_) => None,
        };
        match found {
            Some(failing) => {
                self.remember_base(&spec, base.tree, Some(failing.clone()));
                let write = self.baseline_judged(checking, index, run, Some(failing), None);
                self.write(work, write)
            }
            None => {
                self.run_base(checking, progress_until, index, run);
                self.keep(work)
            }
        }
    }

    /// Runs the check once on the base tree, with the base's adapters.
    fn run_base(
        &mut self,
        checking: &mut Checking,
        progress_until: &mut Option<Timestamp>,
        index: usize,
        run: Judged,
    ) {
        let spec = checking.spec(index);
        let base = checking.base.clone();
        let request = request_for(checking, &spec, base.clone(), base.clone(), Vec::new());
        let check = check_run(spec, request, base.commit, index);
        let purpose = Purpose::Baseline { index, run };
        self.send_run(checking, progress_until, index, check, purpose);
    }

    /// The base run answered: remember what failed there, keep its record on the base, and
    /// judge the candidate's failure.
    pub(super) fn on_baseline(
        &mut self,
        mut work: Box<Work>,
        id: ActionId,
        index: usize,
        run: Judged,
        exit: CheckExit,
    ) -> Placed {
        let Work {
            phase: Phase::Checking(checking),
            op,
            ..
        } = &mut *work
        else {
            return self.keep(work);
        };
        let Some(request) = Self::take_running(checking, index, id) else {
            return self.keep(work);
        };
        let spec = checking.spec(index);
        let (failing, kept) = match judge(&request, spec.expected_minimum, &exit) {
            Judgement::Judged(judged) => {
                let failing = match judged.verdict {
                    Verdict::ProductFailure => Some(product_failures(&judged.failed)),
                    Verdict::Pass => Some(BTreeSet::new()),
                    _ => None,
                };
                let record = self
                    .evidence(op, checking, &spec, &request, &judged, &exit)
                    .to_json();
                let object = if CheckTarget::of(&spec).keyed_by_commit() {
                    request.candidate.commit.clone()
                } else {
                    request.candidate.tree.clone()
                };
                (failing, Some((object, record)))
            }
            Judgement::Unavailable { reason } => return self.unavailable(work, reason),
        };
        self.remember_base(&spec, request.candidate.tree.clone(), failing.clone());
        let write = self.baseline_judged(checking, index, run, failing, kept);
        self.write(work, write)
    }

    /// Remembers what `spec` failed on the base tree `tree`, so that it runs once per base.
    fn remember_base(&mut self, spec: &CheckSpec, tree: Oid, failing: Option<BTreeSet<String>>) {
        let baselines = match &mut self.baselines {
            Some((known, baselines)) if *known == tree => baselines,
            slot => &mut slot.insert((tree, Baselines::new())).1,
        };
        baselines.insert((spec.id.clone(), spec.environment.clone()), failing);
    }

    /// Every unit that failed on the candidate also failed on the base: the failures are
    /// pre-existing, the rest of the result is judged (it passed every other rule), and the
    /// merge names them in `coverage_gaps` as `baseline_failures`. A new failure fails the
    /// check; a base run with no verdict to compare with makes the run `unknown`, never a pass.
    fn baseline_judged(
        &mut self,
        checking: &mut Checking,
        index: usize,
        run: Judged,
        base: Option<BTreeSet<String>>,
        kept: Option<(Oid, String)>,
    ) -> Write {
        let spec = checking.spec(index);
        let Some(base) = base else {
            let why = format!(
                "{} The same check on the base gave no verdict to compare with, so the run is \
                 unknown.",
                run.why
            );
            let refusal = Refusal::Unknown {
                check: spec.id.clone(),
                verdict: Verdict::Unknown,
                why: why.clone(),
                baseline: Some("the base run gave no verdict"),
            };
            let then = Then::End(Ending {
                state: OpState::Blocked,
                reason: Some(ReasonCode::CheckUnknown),
                detail: refusal.to_json(),
            });
            return check_write(
                checking,
                &spec,
                Verdict::Unknown,
                why,
                run.record,
                kept,
                then,
            );
        };
        let (shared, new): (Vec<&UnitReason>, Vec<&UnitReason>) =
            run.failed.iter().partition(|unit| base.contains(&unit.id));
        let shared_ids: Vec<String> = shared.iter().map(|unit| unit.id.clone()).collect();
        let (then, why) = if !run.failed.is_empty() && new.is_empty() {
            checking.gaps.push(Gap::Baseline {
                check: spec.id.clone(),
                environment: spec.environment.clone(),
                baseline_failures: shared_ids,
            });
            let then = checking.after_pass(index, self.cfg.unsigned_trust());
            (
                then,
                format!("{} Every failing unit also fails on the base.", run.why),
            )
        } else {
            let refusal = Refusal::NewFailures {
                check: spec.id.clone(),
                verdict: run.verdict,
                why: run.why.clone(),
                new_failures: new.iter().map(|unit| unit.id.clone()).collect(),
                baseline: "compared",
                checks: vec![failed_check(&spec, &run, new.into_iter(), Some(shared_ids))],
            };
            let then = Then::End(Ending {
                state: OpState::Blocked,
                reason: Some(ReasonCode::CheckFailed),
                detail: refusal.to_json(),
            });
            (then, run.why.clone())
        };
        check_write(checking, &spec, run.verdict, why, run.record, kept, then)
    }

    /// Why this machine may not run `spec`: it does not serve the check's environment
    /// (`bay.checkEnvironment`), or the policy names other `producers`, whose records alone
    /// would count.
    pub(super) fn cannot_run(&self, spec: &CheckSpec) -> Option<String> {
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
    pub(super) fn unavailable(&mut self, work: Box<Work>, why: String) -> Placed {
        self.release(work, Some(ReasonCode::CheckUnavailable), why)
    }
}

/// The request for one run of `spec` on `candidate`, made on `base`, about the change under
/// the base's policy.
fn request_for(
    checking: &Checking,
    spec: &CheckSpec,
    candidate: CommitTree,
    base: CommitTree,
    changed_paths: Vec<String>,
) -> CheckRequest {
    CheckRequest::build(RequestInput {
        target: CheckTarget::of(spec),
        policy_revision: checking.policy.revision.to_string(),
        candidate,
        base,
        changed_paths,
        change: Some(checking.change.clone()),
    })
}

/// One run of `spec` for `request`, in the slot of plan index `index`.
fn check_run(spec: CheckSpec, request: CheckRequest, adapter_from: Oid, index: usize) -> CheckRun {
    CheckRun {
        check: spec,
        candidate: request.candidate.commit.clone(),
        request,
        adapter_from,
        slot: u32::try_from(index).unwrap_or(u32::MAX),
    }
}

/// The write that records a judged run of `spec` on the candidate with `verdict`, keeping the
/// run's own `record` (when there is one) and `base_record` (that of its run on the base), and
/// what follows in the same push.
fn check_write(
    checking: &Checking,
    spec: &CheckSpec,
    verdict: Verdict,
    why: String,
    record: String,
    base_record: Option<(Oid, String)>,
    then: Then,
) -> Write {
    let built = &checking.candidate.built;
    // A record that counts only for the exact commit hangs on the commit.
    let object = if CheckTarget::of(spec).keyed_by_commit() {
        built.commit.clone()
    } else {
        built.tree.clone()
    };
    // A stamped record hangs on the draft too, where a later candidate finds it (`carry`).
    let on_draft = (!record.is_empty() && checking.stamped(spec))
        .then(|| (checking.change.revision.clone(), record.clone()));
    let kept = (!record.is_empty()).then_some((object, record));
    Write::Check {
        candidate: built.id.clone(),
        check: spec.id.clone(),
        environment: spec.environment.clone(),
        verdict,
        why,
        notes: base_record
            .into_iter()
            .chain(kept)
            .chain(on_draft)
            .collect(),
        then,
    }
}

/// One failed check as `detail.checks` lists it for `CHECK_FAILED` ([`FailedCheck`]).
fn failed_check<'a>(
    spec: &CheckSpec,
    run: &Judged,
    reasons: impl Iterator<Item = &'a UnitReason>,
    baseline_failures: Option<Vec<String>>,
) -> FailedCheck {
    FailedCheck {
        check: spec.id.clone(),
        environment: spec.environment.clone(),
        verdict: run.verdict,
        why: run.why.clone(),
        reasons: reasons.cloned().collect(),
        baseline_failures,
        stderr_log: run.stderr_log.clone(),
    }
}
