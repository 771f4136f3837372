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
//!   moved it is built and checked anew, and a fresh yes is owed (carrying a yes to a later
//!   candidate is not built yet).
//!
//! A candidate taken up again is judged before any claim: a wait that is still owed writes
//! nothing, so an idle runner never adds steps to a waiting change.

use super::work::{Built, Checking, Ending, Merge, Phase, Placed, Purpose, Work, Write};
use super::{RunMode, Runner};
use crate::approval::{About, Judgement, judge};
use crate::git::{Oid, refs};
use crate::machine::keys_read::{KeysRead, KeysStep};
use crate::machine::{Action, Completion, Fault, FetchSpec, Misuse, Refs};
use crate::policy::Policy;
use crate::reason::ReasonCode;
use crate::record::{CandidateRec, Operation};
use crate::result::OpState;
use crate::trust::record::Keys;
use crate::trust::registry::{REF as REGISTRY, Version};

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
    /// it is now: built on this very main, and no check of it recorded short of a pass.
    pub(super) fn resumable(&self, work: &Work) -> Option<CandidateRec> {
        let operation = work.record.op(&work.op)?;
        if operation.released != Some(ReasonCode::ApprovalPending) {
            return None;
        }
        let candidate = operation.candidates.last()?;
        let clean = operation
            .checks
            .iter()
            .filter(|check| check.candidate == candidate.id)
            .all(|check| check.verdict == crate::check::Verdict::Pass);
        (candidate.base == work.base && clean).then(|| candidate.clone())
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
            resumed: true,
        };
        if self.cfg.signer.is_some() {
            let read = Action::ReadCommits {
                commits: vec![built.commit.clone()],
            };
            self.send_work(read, Purpose::Signature(built, Box::new(policy)));
            return self.keep(work);
        }
        self.measure(work, built, policy)
    }

    /// A candidate taken up again: the runs the record holds passes of, in the plan's order,
    /// stand; the rest run under a claim written first. With every run passed, the approvals
    /// are judged at once, before any claim.
    pub(super) fn resume_checks(&mut self, mut work: Box<Work>, mut checking: Checking) -> Placed {
        let candidate = checking.candidate.built.id.clone();
        let passed = work.record.op(&work.op).map_or(0, |operation| {
            checking
                .plan
                .runs
                .iter()
                .take_while(|run| {
                    operation.checks.iter().any(|check| {
                        check.candidate == candidate
                            && check.check == run.spec.id
                            && check.environment == run.spec.environment
                            && check.verdict == crate::check::Verdict::Pass
                    })
                })
                .count()
        });
        checking.done = passed;
        checking.next_start = passed;
        let rest = passed < checking.plan.runs.len();
        work.phase = Phase::Checking(Box::new(checking));
        if rest {
            return self.write(work, Write::Record);
        }
        self.advance(work)
    }

    /// Fetches the evidence and the registry afresh, to read the approvals on the candidate.
    pub(super) fn ask_approvals(&mut self, work: Box<Work>) -> Placed {
        let spec = FetchSpec::new([refs::EVIDENCE_PATTERN.to_string(), format!("{REGISTRY}*")]);
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
        spec.apply(&mut self.refs, fetched);
        match self.refs.get(REGISTRY).cloned() {
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
                let objects = vec![built.commit.clone(), built.tree.clone()];
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

    /// Judges the records `lines` on the candidate under `version`, the registry.
    fn judge_approvals(
        &mut self,
        mut work: Box<Work>,
        version: Option<Box<Version>>,
        lines: Vec<String>,
    ) -> Placed {
        let unsigned = self.cfg.unsigned_trust();
        let change = work.record.change.to_string();
        let Phase::Checking(checking) = &mut work.phase else {
            return self.keep(work);
        };
        checking.judging = false;
        let built = &checking.candidate.built;
        let about = About {
            change,
            candidate: built.id.to_string(),
            commit: built.commit.clone(),
            tree: built.tree.clone(),
            base_tree: Some(built.base_tree.clone()),
        };
        let keys = Keys {
            registry: version.as_deref(),
            signing: checking.policy.signing,
        };
        match judge(&checking.approvals, &lines, keys, &about) {
            Judgement::Approved(yes) => {
                let mut merge: Merge = checking.merge(unsigned);
                if let serde_json::Value::Object(detail) = &mut merge.detail {
                    detail.insert("approvals".into(), serde_json::Value::from(yes));
                }
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
                        detail,
                    }),
                )
            }
            Judgement::Pending(mut approval) => {
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
                approval["paths"] = serde_json::json!(paths);
                let lands_by = match self.cfg.mode {
                    RunMode::Only(_) => "author",
                    RunMode::Loop | RunMode::Once => "executor",
                };
                let detail = serde_json::json!({ "approval": approval, "lands_by": lands_by });
                let tips = self.approval_tips();
                self.awaiting.insert(work.op.clone(), tips);
                if !work.claimed {
                    // Taken up again and still owed: nothing to write.
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
