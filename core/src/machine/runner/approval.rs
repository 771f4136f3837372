//! A candidate that owes a person's yes (`kind = "approval"` checks whose `when_paths` it
//! touches): once every run passed, the runner reads the approval records on the candidate
//! and judges them (`crate::approval::judge`) against the key registry as the remote holds it.
//!
//! - Every check owed has a counted yes: the candidate merges, its `detail.approvals` naming
//!   each record that answered.
//! - A counted no: the operation ends `CHECK_FAILED`, naming each approver who said no.
//! - Else the operation waits: its claim goes back with `APPROVAL_PENDING` and the release
//!   step's `detail` (`approval`: the candidate, the checks owed and who may answer them;
//!   `lands_by`), which `bay status`, `bay waiting` and `bay approve` read. It keeps its queue
//!   place and holds up no one: a pass passes it over until an evidence tip other than this
//!   runner's own moves. Then the runner takes the same candidate up again, without building
//!   it or running its passed checks, as long as main has not moved under it; once main has
//!   moved it is built and checked anew, and an earlier yes carries to it while the files
//!   it covers stay the same (`crate::approval::carries`; never with `carry = false`).
//!
//! A candidate taken up again is judged before any claim: a wait that is still owed, and that
//! the record already shows, writes nothing, so an idle runner never adds steps to a waiting
//! change; one taken over from a claim that lapsed before it went back writes the wait.

use super::work::{Built, Checking, Ending, Merge, Phase, Placed, Purpose, Work, Write};
use super::{RunMode, Runner};
use std::collections::BTreeMap;

use serde::Serialize;

use crate::approval::{
    About, Carried, Carry, Compared, Earlier, Judgement, Pending, carries, judge,
};
use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::machine::keys_read::{KeysRead, KeysStep};
use crate::machine::{Action, Completion, Fault, FetchSpec, Misuse, Refs};
use crate::policy::{Baseline, Policy};
use crate::reason::ReasonCode;
use crate::record::{CandidateRec, Operation};
use crate::result::OpState;
use crate::trust::record::Keys;
use crate::trust::registry::Version;

impl Checking {
    /// Every run is recorded as passed, the candidate is recorded, and a yes is owed that is
    /// not being judged yet.
    pub(super) fn approval_due(&self) -> bool {
        !self.approvals.is_empty()
            && !self.judging
            && self.candidate.recorded
            && self.done >= self.plan.runs.len()
            && self.running.is_empty()
    }
}

impl Runner {
    /// The evidence tips a waiting operation was judged on: every producer's but this
    /// runner's own, whose notes never hold an approval.
    pub(super) fn approval_tips(&self) -> Vec<(String, Oid)> {
        let own = refs::evidence(&self.cfg.runner);
        self.refs
            .iter()
            .filter(|(name, _)| name.starts_with(refs::EVIDENCE) && **name != own)
            .map(|(name, tip)| (name.clone(), tip.clone()))
            .collect()
    }

    /// Whether a pass passes `operation` over: it waits for an approval, no runner holds it,
    /// and no evidence moved since this runner last judged it.
    pub(super) fn still_awaiting(&self, operation: &Operation) -> bool {
        operation.released == Some(ReasonCode::ApprovalPending)
            && operation.owner.is_none()
            && self
                .awaiting
                .get(&operation.id)
                .is_some_and(|tips| *tips == self.approval_tips())
    }

    /// The recorded candidate of a waiting operation that can be taken up again on main as
    /// it is now, under `policy` (the policy there): built on this very main, and no check of
    /// it recorded short of a pass.
    pub(super) fn resumable(&self, work: &Work, policy: &Policy) -> Option<CandidateRec> {
        Runner::taken_up(work, ReasonCode::ApprovalPending, policy).cloned()
    }

    /// The last recorded candidate of an operation whose claim went back for `released`, if
    /// it can be taken up again on main as it is now: built on this very main, and no check
    /// of it recorded short of a pass. A product failure of a check `policy` (the policy at
    /// that main) judges against the base stands as a pass here: one with a new failure ends
    /// the operation, so a failure recorded before the claim went back failed on the base
    /// too. Without it, a candidate waiting for a `carry = false` approval was built again at
    /// every claim, and the approval given for it never counted.
    pub(super) fn taken_up<'w>(
        work: &'w Work,
        released: ReasonCode,
        policy: &Policy,
    ) -> Option<&'w CandidateRec> {
        let operation = work.record.op(&work.op)?;
        if operation.released != Some(released) {
            return None;
        }
        let candidate = operation.candidates.last()?;
        let against_base = |id: &str| {
            policy
                .checks
                .iter()
                .any(|spec| spec.id == id && spec.baseline == Some(Baseline::Base))
        };
        let clean = operation
            .checks
            .iter()
            .filter(|check| check.candidate == candidate.id)
            .all(|check| match check.verdict {
                Verdict::Pass => true,
                Verdict::ProductFailure => against_base(&check.check),
                _ => false,
            });
        (candidate.base == work.base && clean).then_some(candidate)
    }

    /// The recorded candidate's changed paths are read: it goes the way a built one does
    /// (signature, caps, red, plan), as the candidate the record already holds.
    pub(super) fn on_resume(
        &mut self,
        work: Box<Work>,
        candidate: CandidateRec,
        policy: Policy,
        result: Result<Vec<crate::limits::PathStat>, Fault>,
    ) -> Placed {
        let stats = match result {
            Ok(stats) => stats,
            Err(fault) => {
                return self.release(
                    work,
                    None,
                    format!("could not read the waiting candidate's paths: {fault}"),
                );
            }
        };
        let built = Built {
            id: candidate.id,
            commit: candidate.commit,
            tree: candidate.tree,
            base_tree: candidate.base_tree,
            changed_paths: stats.into_iter().map(|stat| stat.path).collect(),
            signed: false,
            signed_by: None,
            stands_for: None,
            resumed: true,
        };
        self.sign_or_measure(work, built, policy)
    }

    /// A candidate taken up again: the runs the record holds passes of, in the plan's order,
    /// stand; the rest run under a claim written first. With every run passed, the approvals
    /// are judged at once, before any claim.
    pub(super) fn resume_checks(&mut self, work: Box<Work>, checking: Checking) -> Placed {
        // The evidence of each pass must still be there: read it first.
        let built = &checking.candidate.built;
        let read = Action::ReadNotes {
            notes: self.evidence_tips(),
            objects: vec![built.tree.clone(), built.commit.clone()],
        };
        self.send_work(read, Purpose::ResumeNotes(Box::new(checking)));
        self.keep(work)
    }

    /// The evidence on the candidate taken up again is read: a run stands when the record
    /// holds a pass of it (for a candidate signed again after `REGISTRY_CHANGED`, of the one
    /// it stands for: the same tree on the same parent) and a pass of it is still in the
    /// evidence on exactly its inputs (its tree, or for a commit-keyed check this very
    /// commit, which a candidate signed again never has: that check runs again).
    pub(super) fn on_resume_notes(
        &mut self,
        mut work: Box<Work>,
        mut checking: Checking,
        result: Result<Vec<String>, Fault>,
    ) -> Placed {
        let lines = match result {
            Ok(lines) => lines,
            Err(fault) => {
                let why = format!("could not read the evidence of the candidate's passes: {fault}");
                return self.release(work, None, why);
            }
        };
        let built = &checking.candidate.built;
        let candidate = built.stands_for.clone().unwrap_or_else(|| built.id.clone());
        let target = crate::check::CommitTree {
            commit: built.commit.clone(),
            tree: built.tree.clone(),
        };
        let passed = work.record.op(&work.op).map_or(0, |operation| {
            checking
                .plan
                .runs
                .iter()
                .take_while(|run| {
                    let recorded = operation.checks.iter().any(|check| {
                        check.candidate == candidate
                            && check.check == run.spec.id
                            && check.environment == run.spec.environment
                            && check.verdict == Verdict::Pass
                    });
                    recorded
                        && crate::check::reuse::reusable_pass(
                            &lines,
                            &run.spec,
                            &target,
                            &built.base_tree,
                        )
                        .is_some()
                })
                .count()
        });
        checking.done = passed;
        checking.next_start = passed;
        let rest = passed < checking.plan.runs.len();
        let recorded = checking.candidate.recorded;
        let merge = (!rest && !recorded && checking.approvals.is_empty())
            .then(|| checking.merge(self.cfg.unsigned_trust()));
        work.phase = Phase::Checking(Box::new(checking));
        if let Some(merge) = merge {
            return self.write(work, Write::Merge(Box::new(merge)));
        }
        if rest || !recorded {
            return self.write(work, Write::Record);
        }
        self.advance(work)
    }

    /// Fetches the evidence and the registry afresh, to read the approvals on the candidate.
    pub(super) fn ask_approvals(&mut self, work: Box<Work>) -> Placed {
        let spec = FetchSpec::new([
            refs::EVIDENCE_PATTERN.to_string(),
            crate::trust::registry::fetch_pattern(),
        ]);
        self.send_work(Action::Fetch(spec.clone()), Purpose::ApprovalFetch(spec));
        self.keep(work)
    }

    pub(super) fn on_approval_fetch(
        &mut self,
        work: Box<Work>,
        spec: FetchSpec,
        result: Result<Refs, Fault>,
    ) -> Placed {
        let fetched = match result {
            Ok(fetched) => fetched,
            Err(fault) => return self.approval_unread(work, format!("{fault}")),
        };
        match self.registry_tip(spec, fetched) {
            Some(registry) => {
                let (reader, read) = KeysRead::start(work.base.clone(), registry);
                self.send_work(read, Purpose::ApprovalKeys(Box::new(reader)));
                self.keep(work)
            }
            // Without a registry no approval counts: nothing to read.
            None => self.judge_approvals(work, None, Vec::new()),
        }
    }

    pub(super) fn on_approval_keys(
        &mut self,
        work: Box<Work>,
        mut reader: KeysRead,
        completion: Completion,
    ) -> Result<Placed, Misuse> {
        Ok(match reader.on(completion) {
            Err(completion) => {
                let _placed = self.keep(work);
                return Err(Misuse(format!(
                    "the approval keys read answered with {completion:?}"
                )));
            }
            Ok(KeysStep::Ask(action)) => {
                self.send_work(*action, Purpose::ApprovalKeys(Box::new(reader)));
                self.keep(work)
            }
            Ok(KeysStep::Done(_, version)) => {
                let notes = self.evidence_tips();
                let Phase::Checking(checking) = &work.phase else {
                    return Ok(self.keep(work));
                };
                let built = &checking.candidate.built;
                // The earlier candidates too, whose yes may carry to this one.
                let mut objects = vec![built.commit.clone(), built.tree.clone()];
                objects.extend(earlier(&work).into_iter().map(|e| e.commit));
                if notes.is_empty() {
                    return Ok(self.judge_approvals(work, Some(version), Vec::new()));
                }
                let read = Action::ReadNotes { notes, objects };
                self.send_work(read, Purpose::ApprovalNotes(Some(version)));
                self.keep(work)
            }
            // A registry that breaks its rules vouches for no one: nothing counts.
            Ok(KeysStep::Broken(_)) => self.judge_approvals(work, None, Vec::new()),
            Ok(KeysStep::Unread(fault)) => self.approval_unread(work, fault.0),
        })
    }

    pub(super) fn on_approval_notes(
        &mut self,
        work: Box<Work>,
        version: Option<Box<Version>>,
        result: Result<Vec<String>, Fault>,
    ) -> Placed {
        match result {
            Ok(lines) => self.judge_approvals(work, version, lines),
            Err(fault) => self.approval_unread(work, format!("{fault}")),
        }
    }

    /// The approvals could not be read: nothing is judged; the claim goes back, or an
    /// unclaimed candidate is let go, and a later pass reads again.
    fn approval_unread(&mut self, work: Box<Work>, fault: String) -> Placed {
        self.release(
            work,
            None,
            format!("could not read the approvals the candidate owes: {fault}"),
        )
    }

    /// Judges the records `lines` on the candidate under `version`, the registry: first the
    /// yeses on earlier candidates that may carry, whose files are compared (`ReadStats` of
    /// the two candidates and of their bases) before the judgement.
    fn judge_approvals(
        &mut self,
        mut work: Box<Work>,
        version: Option<Box<Version>>,
        lines: Vec<String>,
    ) -> Placed {
        let earlier = earlier(&work);
        let (Some(about), Phase::Checking(checking)) = (about(&work), &mut work.phase) else {
            return self.keep(work);
        };
        let keys = Keys {
            registry: version.as_deref(),
            signing: checking.policy.signing,
        };
        let found = carries(&checking.approvals, &lines, keys, &about, &earlier);
        if found.is_empty() {
            return self.approvals_judged(work, version, lines, BTreeMap::new());
        }
        let built = checking.candidate.built.clone();
        let base = checking.base.commit.clone();
        let mut slots = 0;
        for earlier in found.iter().flat_map(Carry::compared) {
            for (from, to) in [
                (earlier.commit.clone(), built.commit.clone()),
                (earlier.base.clone(), base.clone()),
            ] {
                let read = Action::ReadStats {
                    base: from,
                    commit: to,
                };
                self.send_work(read, Purpose::CarryStats(slots));
                slots += 1;
            }
        }
        checking.carrying = Some(Box::new(Carrying {
            version,
            lines,
            diffs: vec![None; slots],
            carries: found,
        }));
        self.keep(work)
    }

    /// One comparison of a carried yes's files answered; once all did, the judgement.
    pub(super) fn on_carry_stats(
        &mut self,
        mut work: Box<Work>,
        index: usize,
        result: Result<Vec<crate::limits::PathStat>, Fault>,
    ) -> Placed {
        let Phase::Checking(checking) = &mut work.phase else {
            return self.keep(work);
        };
        let Some(carrying) = checking.carrying.as_mut() else {
            return self.keep(work);
        };
        // A comparison that could not be made keeps nothing the same: the yes is set aside.
        let paths = match result {
            Ok(stats) => Ok(stats.into_iter().map(|stat| stat.path).collect()),
            Err(fault) => Err(fault.0),
        };
        if let Some(slot) = carrying.diffs.get_mut(index) {
            *slot = Some(paths);
        }
        if carrying.diffs.iter().any(Option::is_none) {
            return self.keep(work);
        }
        let Some(carrying) = checking.carrying.take() else {
            return self.keep(work);
        };
        let Carrying {
            version,
            lines,
            carries,
            diffs,
        } = *carrying;
        // Two comparisons for each compared candidate, in the order they were sent.
        let mut diffs = diffs.into_iter().flatten();
        let mut carried = BTreeMap::new();
        for carry in carries {
            let compared: Vec<Compared> = carry
                .compared()
                .map(|_| match (diffs.next(), diffs.next()) {
                    (Some(Ok(candidates)), Some(Ok(bases))) => Ok((candidates, bases)),
                    (Some(Err(why)), _) | (_, Some(Err(why))) => Err(why),
                    _ => Err("no comparison was made".to_owned()),
                })
                .collect();
            if let Some(check) = checking.approvals.iter().find(|c| c.id == carry.check) {
                carried.insert(carry.check.clone(), carry.outcome(check, &compared));
            }
        }
        self.approvals_judged(work, version, lines, carried)
    }

    /// The judgement, with what carried from earlier candidates.
    fn approvals_judged(
        &mut self,
        mut work: Box<Work>,
        version: Option<Box<Version>>,
        lines: Vec<String>,
        carried: BTreeMap<String, Carried>,
    ) -> Placed {
        let unsigned = self.cfg.unsigned_trust();
        let (Some(about), Phase::Checking(checking)) = (about(&work), &mut work.phase) else {
            return self.keep(work);
        };
        checking.judging = false;
        #[cfg(feature = "mutants")]
        let about = self.mutant_about(about, &lines);
        let built = &checking.candidate.built;
        let keys = Keys {
            registry: version.as_deref(),
            signing: checking.policy.signing,
        };
        match judge(&checking.approvals, &lines, keys, &about, &carried) {
            Judgement::Approved(yes) => {
                let mut merge: Merge = checking.merge(unsigned);
                merge.detail.carried_approvals = yes
                    .iter()
                    .filter(|answer| answer.carried.is_some())
                    .cloned()
                    .collect();
                merge.detail.approvals = Some(yes);
                self.awaiting.remove(&work.op);
                self.write(work, Write::Merge(Box::new(merge)))
            }
            Judgement::Rejected(detail) => {
                self.awaiting.remove(&work.op);
                self.write(
                    work,
                    Write::End(Ending {
                        state: OpState::Blocked,
                        reason: Some(ReasonCode::CheckFailed),
                        detail: detail.to_json(),
                    }),
                )
            }
            Judgement::Pending(pending) => {
                // The paths a yes is owed for: what the candidate changes under `when_paths`.
                let paths: Vec<&String> = built
                    .changed_paths
                    .iter()
                    .filter(|path| {
                        checking
                            .approvals
                            .iter()
                            .any(|c| crate::glob::any_path_matches(&c.when_paths, path))
                    })
                    .collect();
                let detail = Awaiting {
                    approval: AwaitedOn {
                        pending: &pending,
                        paths,
                    },
                    lands_by: match self.cfg.mode {
                        RunMode::Only(_) => "author",
                        RunMode::Loop | RunMode::Once => "executor",
                    },
                }
                .to_json();
                let tips = self.approval_tips();
                self.awaiting.insert(work.op.clone(), tips);
                // Taken up again and still owed, as the record already says (released for this
                // very candidate, held by no one): nothing to write. Taken over from a claim
                // that lapsed before it went back, the wait is written, claim and release in
                // one push, or no approver would ever be asked.
                let recorded_wait = checking.candidate.recorded
                    && work.record.op(&work.op).is_some_and(|operation| {
                        operation.owner.is_none()
                            && operation.released == Some(ReasonCode::ApprovalPending)
                    });
                if !work.claimed && recorded_wait {
                    return self.awaits_approval(work);
                }
                let why = "every check passed; a person's approval is still owed".to_owned();
                self.write(
                    work,
                    Write::Release {
                        reason: Some(ReasonCode::ApprovalPending),
                        why,
                        behind: None,
                        detail: Some(detail),
                    },
                )
            }
        }
    }

    /// The operation waits for an approval and this runner holds no claim on it: `merge
    /// --wait` ends with the wait as the record says it; a runner goes on with the queue.
    pub(super) fn awaits_approval(&mut self, work: Box<Work>) -> Placed {
        self.mine = None;
        if self.cfg.mode == RunMode::Only(work.op.clone())
            && let Some(operation) = work.record.op(&work.op)
        {
            let result = crate::report::op_result(&work.record, operation);
            return self.end_with(work, result);
        }
        self.drop_work(work, 0)
    }
}

impl Runner {
    /// Fetches the evidence and the registry afresh, to read the waivers on the candidate.
    pub(super) fn read_waivers(&mut self, work: Box<Work>, reuse: bool) -> Placed {
        let spec = FetchSpec::new([
            refs::EVIDENCE_PATTERN.to_string(),
            crate::trust::registry::fetch_pattern(),
        ]);
        self.send_work(
            Action::Fetch(spec.clone()),
            Purpose::WaiverFetch(spec, reuse),
        );
        self.keep(work)
    }

    pub(super) fn on_waiver_fetch(
        &mut self,
        work: Box<Work>,
        spec: FetchSpec,
        reuse: bool,
        result: Result<Refs, Fault>,
    ) -> Placed {
        let fetched = match result {
            Ok(fetched) => fetched,
            Err(fault) => {
                return self.release(work, None, format!("could not read the waivers: {fault}"));
            }
        };
        match self.registry_tip(spec, fetched) {
            Some(registry) => {
                let (reader, read) = KeysRead::start(work.base.clone(), registry);
                self.send_work(read, Purpose::WaiverKeys(Box::new(reader), reuse));
                self.keep(work)
            }
            // Without a registry no waiver counts.
            None => self.waivers_read(work, None, reuse, Vec::new()),
        }
    }

    pub(super) fn on_waiver_keys(
        &mut self,
        work: Box<Work>,
        mut reader: KeysRead,
        reuse: bool,
        completion: Completion,
    ) -> Result<Placed, Misuse> {
        Ok(match reader.on(completion) {
            Err(completion) => {
                let _placed = self.keep(work);
                return Err(Misuse(format!(
                    "the waiver keys read answered with {completion:?}"
                )));
            }
            Ok(KeysStep::Ask(action)) => {
                self.send_work(*action, Purpose::WaiverKeys(Box::new(reader), reuse));
                self.keep(work)
            }
            Ok(KeysStep::Done(_, version)) => {
                let notes = self.evidence_tips();
                let Phase::Checking(checking) = &work.phase else {
                    return Ok(self.keep(work));
                };
                let built = &checking.candidate.built;
                let objects = vec![built.commit.clone(), built.tree.clone()];
                if notes.is_empty() {
                    return Ok(self.waivers_read(work, Some(version), reuse, Vec::new()));
                }
                let read = Action::ReadNotes { notes, objects };
                self.send_work(read, Purpose::WaiverNotes(Some(version), reuse));
                self.keep(work)
            }
            Ok(KeysStep::Broken(_)) => self.waivers_read(work, None, reuse, Vec::new()),
            Ok(KeysStep::Unread(fault)) => self.release(
                work,
                None,
                format!("could not read the waivers: {}", fault.0),
            ),
        })
    }

    pub(super) fn on_waiver_notes(
        &mut self,
        work: Box<Work>,
        version: Option<Box<Version>>,
        reuse: bool,
        result: Result<Vec<String>, Fault>,
    ) -> Placed {
        match result {
            Ok(lines) => self.waivers_read(work, version, reuse, lines),
            Err(fault) => self.release(work, None, format!("could not read the waivers: {fault}")),
        }
    }

    /// Each waivable run a counted waiver answers is marked waived; then the checks go on.
    fn waivers_read(
        &mut self,
        mut work: Box<Work>,
        version: Option<Box<Version>>,
        reuse: bool,
        lines: Vec<String>,
    ) -> Placed {
        let Phase::Checking(mut checking) = std::mem::replace(&mut work.phase, Phase::Unbuilt)
        else {
            return self.keep(work);
        };
        let keys = Keys {
            registry: version.as_deref(),
            signing: checking.policy.signing,
        };
        let built = checking.candidate.built.clone();
        checking.waived = checking
            .plan
            .runs
            .iter()
            .enumerate()
            .filter(|(_, run)| run.spec.waivable)
            .filter_map(|(index, run)| {
                crate::approval::waived(&run.spec, &lines, keys, &built.tree, &built.base_tree)
                    .map(|gap| (index, gap))
            })
            .collect();
        self.checks_planned(work, *checking, reuse)
    }
}

/// Yeses on earlier candidates that may carry, while their files are compared.
#[derive(Clone, Debug)]
pub(super) struct Carrying {
    version: Option<Box<Version>>,
    lines: Vec<String>,
    carries: Vec<Carry>,
    /// Per carry, for each of its compared candidates ([`Carry::compared`]), the paths that
    /// differ between the two candidates, then between their bases; `None` until answered,
    /// `Err` when the comparison could not be made.
    diffs: Vec<Option<Result<Vec<String>, String>>>,
}

/// The candidate the work judges, as an approval record names it.
fn about(work: &Work) -> Option<About> {
    let Phase::Checking(checking) = &work.phase else {
        return None;
    };
    let built = &checking.candidate.built;
    Some(About {
        change: work.record.change.to_string(),
        candidate: built.id.to_string(),
        commit: built.commit.clone(),
        tree: built.tree.clone(),
        base_tree: Some(built.base_tree.clone()),
    })
}

/// Every candidate of the change the record holds, over all its operations, oldest first.
fn earlier(work: &Work) -> Vec<Earlier> {
    work.record
        .ops
        .iter()
        .flat_map(|op| op.candidates.iter())
        .map(|c| Earlier {
            commit: c.commit.clone(),
            base: c.base.clone(),
        })
        .collect()
}
/// The detail of a release that waits for a person's yes: what is owed and on which of the
/// candidate's paths, and who merges it once given (`executor`, or its `author` for a run of
/// one change).
#[derive(Serialize)]
struct Awaiting<'a> {
    approval: AwaitedOn<'a>,
    lands_by: &'static str,
}

#[derive(Serialize)]
struct AwaitedOn<'a> {
    #[serde(flatten)]
    pending: &'a Pending,
    paths: Vec<&'a String>,
}

impl Detail for Awaiting<'_> {}
