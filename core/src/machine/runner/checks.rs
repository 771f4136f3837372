//! Running the plan's checks on one candidate: up to `[runner] parallel_checks` at once, each
//! recorded in the plan's order; reruns, flaky checks and baseline comparisons.
//!
//! Answers can come in any order. Each waits in `answered` until every run before it is
//! recorded, so the chain holds the checks in the policy's order and a failure ends the
//! operation at the first failing run in that order. A `baseline = "base"` check runs alone,
//! after the runs before it are recorded. When a check answers `unavailable`, no further check
//! starts, nothing after it is recorded, and the claim goes back.

use std::collections::BTreeSet;

use super::Runner;
use super::work::{Baselines, Ending, Judged, Placed, Purpose, Running, Then, Work, Write};
use crate::check::plan::AdapterFrom;
use crate::check::reuse::{failing_on_base, product_failures};
use crate::check::{
    ChangeContext, CheckExit, CheckRequest, CheckTarget, CommitTree, EvidenceExtras,
    EvidenceRecord, JudgedCheck, Judgement, RequestInput, UnitReason, Verdict, judge,
};
use crate::git::Oid;
use crate::machine::{Action, ActionId, CheckRun};
use crate::policy::{Baseline, CheckSpec};
use crate::reason::ReasonCode;
use crate::result::OpState;

impl Runner {
    /// Starts runs of the plan, in order, while fewer than `parallel_checks` are in flight. A
    /// baseline check starts only alone, once every run before it is recorded.
    pub(super) fn start_checks(&mut self, work: &mut Work) {
        let limit = self.cfg.parallel_checks.max(1) as usize;
        loop {
            let Some(plan) = work.plan.as_ref().filter(|_| work.recorded) else {
                return;
            };
            let index = work.next_start;
            let Some(planned) = plan.runs.get(index) else {
                return;
            };
            let alone = |spec: &CheckSpec| spec.baseline.is_some();
            let running_alone = work
                .running
                .keys()
                .any(|i| plan.runs.get(*i).is_some_and(|run| alone(&run.spec)));
            if work.running.len() >= limit
                || running_alone
                || (alone(&planned.spec) && (index != work.done || !work.running.is_empty()))
            {
                return;
            }
            work.next_start += 1;
            self.start_run(work, index);
        }
    }

    /// Sends run `index` of the plan on the candidate. The progress deadline starts with the
    /// first run.
    pub(super) fn start_run(&mut self, work: &mut Work, index: usize) {
        if let Some(producer) = work.reused.get(&index) {
            // A pass on exactly these inputs stands: it answers without a run, and keeps the
            // note it has.
            let why = format!(
                "A pass by {producer} on exactly these inputs stands; the check did not run again."
            );
            let run = Judged {
                verdict: Verdict::Pass,
                why,
                record: String::new(),
                failed: Vec::new(),
                stderr_log: None,
            };
            work.answered.insert(index, run);
            return;
        }
        let plan = work
            .plan
            .as_ref()
            .expect("checks run after the plan is made");
        let planned = plan.runs[index].clone();
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
        let adapter_from = match planned.adapter_from {
            AdapterFrom::Base => work.base.clone(),
            AdapterFrom::Candidate => built.commit.clone(),
        };
        let request = self.request_for(work, &spec, candidate, base, built.changed_paths.clone());
        self.send_run(
            work,
            index,
            spec,
            request,
            adapter_from,
            Purpose::Check { index },
        );
    }

    /// Sends one run of `spec` for `request`, in the slot of plan index `index`.
    fn send_run(
        &mut self,
        work: &mut Work,
        index: usize,
        spec: CheckSpec,
        request: CheckRequest,
        adapter_from: crate::git::Oid,
        purpose: Purpose,
    ) {
        let deadline = self.check_deadline(&spec);
        let run = CheckRun {
            check: spec,
            candidate: request.candidate.commit.clone(),
            request: request.clone(),
            adapter_from,
            slot: u32::try_from(index).unwrap_or(u32::MAX),
        };
        let id = self.send_work(Action::RunCheck(Box::new(run)), purpose);
        let progress = self.now.plus_millis(self.cfg.progress_ms);
        work.running.insert(
            index,
            Running {
                id,
                deadline,
                request,
            },
        );
        work.progress_until.get_or_insert(progress);
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
    /// first, then the next run's answer in order, else more runs.
    pub(super) fn advance(&mut self, mut work: Box<Work>) -> Placed {
        // While the hold plugin is asked about the push that moves main, nothing else starts.
        if work.writing || work.asking.is_some() {
            return self.keep(work);
        }
        if work.deferred.is_some() {
            return self.send_deferred(work);
        }
        let done = work.done;
        if let Some(run) = work.answered.remove(&done) {
            return self.judged(work, done, run);
        }
        self.start_checks(&mut work);
        // A reused pass answers as soon as it starts.
        let done = work.done;
        match work.answered.remove(&done) {
            Some(run) => self.judged(work, done, run),
            None => self.keep(work),
        }
    }

    /// The run in slot `index` answered with `exit`, if it is the one in flight there.
    fn take_running(work: &mut Work, index: usize, id: ActionId) -> Option<CheckRequest> {
        match work.running.get(&index) {
            Some(running) if running.id == id => work.running.remove(&index).map(|r| r.request),
            _ => None,
        }
    }

    /// The request for one run of `spec` on `candidate`, made on `base`, about this work's
    /// change under the base's policy.
    fn request_for(
        &self,
        work: &Work,
        spec: &CheckSpec,
        candidate: CommitTree,
        base: CommitTree,
        changed_paths: Vec<String>,
    ) -> CheckRequest {
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

    pub(super) fn on_check(
        &mut self,
        mut work: Box<Work>,
        id: ActionId,
        index: usize,
        exit: CheckExit,
    ) -> Placed {
        let Some(request) = Self::take_running(&mut work, index, id) else {
            return self.keep(work);
        };
        let spec = self.check_spec(&work, index);
        #[cfg(feature = "mutants")]
        let request = self.mutant_request(request, &exit);
        match judge(&request, spec.expected_minimum, &exit) {
            Judgement::Unavailable { reason } => self.unavailable(work, reason),
            Judgement::Judged(judged) => {
                let record = self.evidence(&work, &spec, &request, &judged, &exit);
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
                work.answered.insert(index, run);
                self.advance(work)
            }
        }
    }

    /// The evidence record of one judged run, as the note's JSON.
    fn evidence(
        &self,
        work: &Work,
        spec: &CheckSpec,
        request: &CheckRequest,
        judged: &JudgedCheck,
        exit: &CheckExit,
    ) -> String {
        let extras = EvidenceExtras {
            producer: self.cfg.runner.clone(),
            op: work.op.to_string(),
            candidate_id: work
                .built
                .as_ref()
                .map(|b| b.id.to_string())
                .unwrap_or_default(),
            at: self.now,
            definition: crate::check::definition::digest(spec, &exit.adapter),
        };
        EvidenceRecord::new(request, judged, exit, extras).to_json()
    }

    /// Records a judged check, with what follows in the same push. A `product_failure` runs
    /// again on the same tree while `retry_on_failure` allows; a pass after a failure is
    /// flaky (`CHECK_FLAKY`, unless `allow_flaky`, which merges it as a coverage gap); any
    /// other verdict but `pass` ends the operation; the last run's pass merges.
    pub(super) fn judged(&mut self, mut work: Box<Work>, index: usize, run: Judged) -> Placed {
        let spec = self.check_spec(&work, index);
        let Judged {
            verdict,
            why,
            record,
            ..
        } = run.clone();
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
                return self.against_baseline(work, index, run);
            }
            Verdict::ProductFailure => blocked(
                ReasonCode::CheckFailed,
                serde_json::json!({
                    "check": spec.id,
                    "verdict": verdict,
                    "why": why,
                    "runs": runs,
                    "checks": [failed_check(&spec, &run, run.failed.iter(), None)],
                }),
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
        self.write(
            work,
            Write::Check {
                index,
                verdict,
                why,
                record,
                base_record: None,
                then,
            },
        )
    }

    /// A `baseline = "base"` check failed on the candidate: compare its failing units with the
    /// same check's result on the base. That is the base's own record of the check, when the
    /// remote holds one made with the same definition; else the check runs once on the base
    /// tree, and its record is kept.
    fn against_baseline(&mut self, work: Box<Work>, index: usize, run: Judged) -> Placed {
        let spec = self.check_spec(&work, index);
        let base = base_of_work(&work);
        let key = (spec.id.clone(), spec.environment.clone());
        #[cfg(feature = "mutants")]
        if let Some(pretended) = self.mutant_baseline(&run.failed) {
            let pretended = Some(pretended.into_iter().collect());
            return self.baseline_judged(work, index, run, pretended, None);
        }
        if let Some((tree, known)) = &self.baselines
            && *tree == base.tree
            && let Some(failing) = known.get(&key)
        {
            let failing = failing.clone();
            return self.baseline_judged(work, index, run, failing, None);
        }
        let notes = self.evidence_tips();
        if notes.is_empty() {
            return self.run_base(work, index, run);
        }
        let objects = vec![base.tree, base.commit];
        let read = Action::ReadNotes { notes, objects };
        self.send_work(read, Purpose::BaseRecords { index, run });
        self.keep(work)
    }

    /// The evidence on the base answered: the base's own records of the check, made with the
    /// definition the candidate's run had, decide what fails there; without one, the check
    /// runs on the base.
    pub(super) fn on_base_records(
        &mut self,
        work: Box<Work>,
        index: usize,
        run: Judged,
        records: Result<Vec<String>, crate::machine::Fault>,
    ) -> Placed {
        let spec = self.check_spec(&work, index);
        let base = base_of_work(&work);
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
                self.baseline_judged(work, index, run, Some(failing), None)
            }
            None => self.run_base(work, index, run),
        }
    }

    /// Runs the check once on the base tree, with the base's adapters.
    fn run_base(&mut self, mut work: Box<Work>, index: usize, run: Judged) -> Placed {
        let spec = self.check_spec(&work, index);
        let base = base_of_work(&work);
        let request = self.request_for(&work, &spec, base.clone(), base.clone(), Vec::new());
        self.send_run(
            &mut work,
            index,
            spec,
            request,
            base.commit,
            Purpose::Baseline { index, run },
        );
        self.keep(work)
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
        let Some(request) = Self::take_running(&mut work, index, id) else {
            return self.keep(work);
        };
        let spec = self.check_spec(&work, index);
        let (failing, kept) = match judge(&request, spec.expected_minimum, &exit) {
            Judgement::Judged(judged) => {
                let failing = match judged.verdict {
                    Verdict::ProductFailure => Some(product_failures(&judged.failed)),
                    Verdict::Pass => Some(BTreeSet::new()),
                    _ => None,
                };
                let record = self.evidence(&work, &spec, &request, &judged, &exit);
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
        self.baseline_judged(work, index, run, failing, kept)
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
        mut work: Box<Work>,
        index: usize,
        run: Judged,
        base: Option<BTreeSet<String>>,
        kept: Option<(Oid, String)>,
    ) -> Placed {
        let spec = self.check_spec(&work, index);
        let required = work.plan.as_ref().map_or(0, |p| p.runs.len());
        let Some(base) = base else {
            let why = format!(
                "{} The same check on the base gave no verdict to compare with, so the run is \
                 unknown.",
                run.why
            );
            let detail = serde_json::json!({
                "check": spec.id,
                "verdict": Verdict::Unknown,
                "why": why,
                "baseline": "the base run gave no verdict",
            });
            let then = Then::End(Ending {
                state: OpState::Blocked,
                reason: Some(ReasonCode::CheckUnknown),
                detail,
            });
            return self.write(
                work,
                Write::Check {
                    index,
                    verdict: Verdict::Unknown,
                    why,
                    record: run.record,
                    base_record: kept,
                    then,
                },
            );
        };
        let (shared, new): (Vec<&UnitReason>, Vec<&UnitReason>) =
            run.failed.iter().partition(|unit| base.contains(&unit.id));
        let shared_ids: Vec<&String> = shared.iter().map(|unit| &unit.id).collect();
        let (then, why) = if !run.failed.is_empty() && new.is_empty() {
            work.gaps.push(serde_json::json!({
                "check": spec.id,
                "environment": spec.environment,
                "baseline_failures": shared_ids,
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
        } else {
            let new_ids: Vec<&String> = new.iter().map(|unit| &unit.id).collect();
            let detail = serde_json::json!({
                "check": spec.id,
                "verdict": run.verdict,
                "why": run.why,
                "new_failures": new_ids,
                "baseline": "compared",
                "checks": [failed_check(&spec, &run, new.into_iter(), Some(&shared_ids))],
            });
            let then = Then::End(Ending {
                state: OpState::Blocked,
                reason: Some(ReasonCode::CheckFailed),
                detail,
            });
            (then, run.why.clone())
        };
        self.write(
            work,
            Write::Check {
                index,
                verdict: run.verdict,
                why,
                record: run.record,
                base_record: kept,
                then,
            },
        )
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

/// The base the candidate in hand was built on: main's commit and its tree.
fn base_of_work(work: &Work) -> CommitTree {
    let built = work
        .built
        .as_ref()
        .expect("checks run on a built candidate");
    CommitTree {
        commit: work.base.clone(),
        tree: built.base_tree.clone(),
    }
}

/// One failed check as `detail.checks` lists it for `CHECK_FAILED`: its verdict, and under
/// `reasons` each failed unit (with its reason when the check sent one); with a baseline,
/// `reasons` holds only the new failures and `baseline_failures` the pre-existing ones; and
/// `stderr_log`, when the driver kept one, where the end of the run's stderr is, in the Git
/// directory of the machine that ran it.
fn failed_check<'a>(
    spec: &CheckSpec,
    run: &Judged,
    reasons: impl Iterator<Item = &'a UnitReason>,
    baseline_failures: Option<&Vec<&String>>,
) -> serde_json::Value {
    let mut check = serde_json::json!({
        "check": spec.id,
        "environment": spec.environment,
        "verdict": run.verdict,
        "why": run.why,
        "reasons": reasons.collect::<Vec<_>>(),
    });
    if let Some(shared) = baseline_failures {
        check["baseline_failures"] = serde_json::json!(shared);
    }
    if let Some(log) = &run.stderr_log {
        check["stderr_log"] = serde_json::json!(log);
    }
    check
}
