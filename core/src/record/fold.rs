//! Rebuilding a change's state from its chain: the one reader every command and the runner use.

use serde::Serialize;

use super::step::{Step, StepBody};
use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::Oid;
use crate::id::{CandidateId, ChangeId, OpId};
use crate::reason::ReasonCode;
use crate::result::OpState;
use crate::time::Timestamp;

/// A chain that breaks the record's rules. Honest writers cannot make one, because each
/// append is a compare-and-swap on the tip; a reader that meets one refuses to act on it.
/// The detail of an operation a step other than its outcome ended (an abandon, a newer
/// request): the kind of that step.
#[derive(Serialize)]
struct EndedBy {
    ended_by: &'static str,
}

impl Detail for EndedBy {}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    /// Index of the offending step, oldest first.
    pub step: usize,
    pub why: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "step {} of the change record: {}",
            self.step + 1,
            self.why
        )
    }
}

/// The state of a change, as its chain says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangeRecord {
    pub change: ChangeId,
    pub intent: String,
    /// The actor who holds the change now: its starter, or the last to adopt it.
    pub actor: String,
    pub paths: Vec<String>,
    pub generation: u32,
    pub supersedes: Option<ChangeId>,
    /// The merged change it fixes, when it was started `--fixes`.
    pub fixes: Option<ChangeId>,
    /// The merged change it undoes, when `bay undo` opened it.
    pub reverts: Option<ChangeId>,
    /// The changes that must merge (or end `no_effect`) before it may, from `--after`.
    pub after: Vec<ChangeId>,
    pub started_at: Timestamp,
    /// The latest draft and the main commit it was made on (the start's base until a draft
    /// is saved).
    pub draft: Option<Oid>,
    pub base: Oid,
    pub ops: Vec<Operation>,
    /// Every set of conflict markers bay wrote into one of its drafts, oldest first: a request
    /// may merge only a draft none of them is left in.
    pub marked: Vec<crate::conflict::Marked>,
    pub abandoned: bool,
    /// When it was abandoned, on the abandoning machine's clock.
    pub abandoned_at: Option<Timestamp>,
    /// The number of steps folded.
    pub steps: usize,
}

/// One request to merge, and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Operation {
    pub id: OpId,
    pub seq: u64,
    pub draft: Oid,
    pub base: Oid,
    pub requested_at: Timestamp,
    pub requested_by: String,
    pub state: OpState,
    /// The runner holding the claim, while one does.
    pub owner: Option<String>,
    /// How many claims were taken on it.
    pub claims: u32,
    /// Who wrote the latest claim, whether or not it still holds.
    pub claimed_by: Option<String>,
    /// When the first claim was written, on its writer's clock: the operation reached the head.
    pub first_claim_at: Option<Timestamp>,
    pub candidates: Vec<CandidateRec>,
    pub checks: Vec<CheckRec>,
    /// Why the last claim was given back, if one was.
    pub released: Option<ReasonCode>,
    /// The detail the last release gave, if it gave one (what an `APPROVAL_PENDING` wait
    /// owes).
    pub released_detail: Option<serde_json::Value>,
    /// When the last release was written, on its writer's clock.
    pub released_at: Option<Timestamp>,
    /// How many times the head's progress deadline gave the claim back.
    pub deadline_releases: u32,
    /// The place it queues behind since it last lost its place at the head, if it did.
    pub behind: Option<u64>,
    /// A batch's bisection found it at fault: it joins no batch again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub culprit: bool,
    pub outcome: Option<OpOutcome>,
}

impl Operation {
    /// Where the operation stands in the queue: places in order of number, but one that lost
    /// its place at the head stands right behind the place it names, after any other that
    /// lost its place behind the same one earlier in number order.
    pub fn queue_key(&self) -> (u64, bool, u64) {
        match self.behind {
            Some(behind) => (behind, true, self.seq),
            None => (self.seq, false, self.seq),
        }
    }

    /// The candidate the record takes next: numbered as the record holds them, from 1.
    pub fn next_candidate(&self) -> crate::id::CandidateId {
        let attempt = u32::try_from(self.candidates.len() + 1).unwrap_or(u32::MAX);
        self.id.candidate(attempt)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CandidateRec {
    pub id: CandidateId,
    pub base: Oid,
    pub base_tree: Oid,
    pub commit: Oid,
    pub tree: Oid,
    pub by: String,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckRec {
    pub candidate: CandidateId,
    pub check: String,
    pub environment: String,
    pub verdict: Verdict,
    pub why: String,
    pub by: String,
    pub at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpOutcome {
    pub state: OpState,
    pub reason: Option<ReasonCode>,
    pub detail: serde_json::Value,
    pub by: String,
    pub at: Timestamp,
}

impl ChangeRecord {
    /// Folds a chain, oldest step first, into the change's state, refusing a chain that
    /// breaks the rules (see [`RecordError`]).
    pub fn fold(steps: &[Step]) -> Result<ChangeRecord, RecordError> {
        let mut steps_iter = steps.iter().enumerate();
        let Some((_, first)) = steps_iter.next() else {
            return Err(RecordError {
                step: 0,
                why: "the chain is empty".into(),
            });
        };
        let StepBody::Start {
            intent,
            actor,
            paths,
            base,
            generation,
            supersedes,
            fixes,
            reverts,
            after,
        } = &first.body
        else {
            return Err(RecordError {
                step: 0,
                why: format!("it begins with {}, not start", first.kind()),
            });
        };
        let mut record = ChangeRecord {
            change: first.change.clone(),
            intent: intent.clone(),
            actor: actor.clone(),
            paths: paths.clone(),
            generation: *generation,
            supersedes: supersedes.clone(),
            fixes: fixes.clone(),
            reverts: reverts.clone(),
            after: after.clone(),
            started_at: first.at,
            draft: None,
            base: base.clone(),
            ops: Vec::new(),
            marked: Vec::new(),
            abandoned: false,
            abandoned_at: None,
            steps: 1,
        };
        for (index, step) in steps_iter {
            record
                .apply(step)
                .map_err(|why| RecordError { step: index, why })?;
            record.steps += 1;
        }
        Ok(record)
    }

    /// Folds one more step onto the record, as if the chain had been read with it.
    pub fn append(&mut self, step: &Step) -> Result<(), RecordError> {
        self.apply(step).map_err(|why| RecordError {
            step: self.steps,
            why,
        })?;
        self.steps += 1;
        Ok(())
    }

    /// The operation that merged this change, if one did.
    pub fn merged(&self) -> Option<&Operation> {
        self.ops.iter().find(|op| op.state == OpState::Merged)
    }

    /// The commit the merge pushed onto main: its operation's last candidate, since a runner
    /// merges exactly the candidate it checked last (and a merge records one).
    pub fn merge_commit(&self) -> Option<&Oid> {
        self.merged()?
            .candidates
            .last()
            .map(|candidate| &candidate.commit)
    }

    /// The latest operation, if it has not ended.
    pub fn live_op(&self) -> Option<&Operation> {
        self.ops.last().filter(|op| !op.state.is_terminal())
    }

    pub fn op(&self, id: &OpId) -> Option<&Operation> {
        self.ops.iter().find(|op| &op.id == id)
    }

    /// Ended: merged, abandoned, or its last operation found the work already on main. Such a
    /// change takes no new request until someone adopts it (a merged one never does).
    pub fn ended(&self) -> bool {
        self.merged().is_some()
            || self.abandoned
            || self
                .ops
                .last()
                .is_some_and(|op| op.state == OpState::NoEffect)
    }

    /// When the change ended, by the clock of the machine that ended it; `None` while it has
    /// not.
    pub fn ended_at(&self) -> Option<Timestamp> {
        if let Some(op) = self.merged() {
            return op.outcome.as_ref().map(|outcome| outcome.at);
        }
        if self.abandoned {
            return self.abandoned_at;
        }
        self.ops
            .last()
            .filter(|op| op.state == OpState::NoEffect)
            .and_then(|op| op.outcome.as_ref())
            .map(|outcome| outcome.at)
    }

    /// Every commit bay placed in the change's view: the start's base and each draft.
    pub fn placed(&self) -> Vec<&Oid> {
        let mut placed: Vec<&Oid> = vec![&self.base];
        placed.extend(self.draft.iter());
        placed.extend(self.ops.iter().map(|op| &op.draft));
        placed
    }

    /// Whether the change fixes or undoes a merged change (`Fixes:`, `Reverts:`): the only
    /// work a held main takes.
    pub fn fixes_or_undoes(&self) -> bool {
        self.fixes.is_some() || self.reverts.is_some()
    }

    /// The changes this one fixes, undoes or supersedes: a red they own never holds it up.
    pub fn answers_for(&self) -> Vec<ChangeId> {
        [&self.fixes, &self.reverts, &self.supersedes]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }

    /// The draft a new request would merge: the latest saved draft, else the start's base.
    pub fn current_draft(&self) -> &Oid {
        self.draft.as_ref().unwrap_or(&self.base)
    }

    fn apply(&mut self, step: &Step) -> Result<(), String> {
        if step.change != self.change {
            return Err(format!(
                "it names change {}, not {}",
                step.change, self.change
            ));
        }
        if let Some(op) = step.op()
            && op.change != self.change
        {
            return Err(format!("operation {op} belongs to another change"));
        }
        match &step.body {
            StepBody::Start { .. } => return Err("a second start".into()),
            StepBody::Adopt { actor } => {
                self.refuse_if_merged("adopt")?;
                self.actor = actor.clone();
                self.abandoned = false;
                self.abandoned_at = None;
            }
            StepBody::Checkpoint {
                draft,
                base,
                marked,
            } => {
                self.refuse_if_merged("checkpoint")?;
                self.draft = Some(draft.clone());
                self.base = base.clone();
                self.marked.extend(marked.clone());
            }
            StepBody::Request {
                op,
                draft,
                base,
                seq,
            } => {
                self.refuse_if_merged("request")?;
                if self.abandoned {
                    return Err("a request on an abandoned change".into());
                }
                let expected =
                    u32::try_from(self.ops.len() + 1).map_err(|_| "too many operations")?;
                if op.n != expected {
                    return Err(format!(
                        "operation {op} out of order; the next is {expected}"
                    ));
                }
                // A new request ends the one it replaces: the newer draft is the one to merge.
                self.end_live_op(step, OpState::Superseded, ReasonCode::ChangeSuperseded);
                self.draft = Some(draft.clone());
                self.base = base.clone();
                self.ops.push(Operation {
                    id: op.clone(),
                    seq: *seq,
                    draft: draft.clone(),
                    base: base.clone(),
                    requested_at: step.at,
                    requested_by: step.by.clone(),
                    state: OpState::Submitted,
                    owner: None,
                    claims: 0,
                    first_claim_at: None,
                    claimed_by: None,
                    candidates: Vec::new(),
                    checks: Vec::new(),
                    released: None,
                    released_detail: None,
                    released_at: None,
                    deadline_releases: 0,
                    behind: None,
                    culprit: false,
                    outcome: None,
                });
            }
            StepBody::Claim { op } => {
                let live = self.live_mut(op)?;
                live.owner = Some(step.by.clone());
                live.claims += 1;
                live.first_claim_at.get_or_insert(step.at);
                live.claimed_by = Some(step.by.clone());
                live.state = OpState::Running;
            }
            StepBody::Heartbeat { op } => {
                self.owned_mut(op, &step.by)?;
            }
            StepBody::Culprit { op, .. } => {
                self.live_mut(op)?.culprit = true;
            }
            StepBody::Release {
                op,
                reason,
                behind,
                detail,
                ..
            } => {
                let live = self.owned_mut(op, &step.by)?;
                if let Some(behind) = *behind {
                    // Losing a place only ever moves an operation back.
                    if *reason != Some(ReasonCode::QueueDeadlineExceeded) {
                        return Err("only a release past the deadline loses its place".into());
                    }
                    if behind < live.queue_key().0 {
                        return Err(format!(
                            "{op} may not move ahead to place {behind} from {}",
                            live.queue_key().0
                        ));
                    }
                    live.behind = Some(behind);
                }
                live.owner = None;
                live.released = *reason;
                live.released_detail = detail.clone();
                live.released_at = Some(step.at);
                if *reason == Some(ReasonCode::QueueDeadlineExceeded) {
                    live.deadline_releases += 1;
                }
                live.state = OpState::Submitted;
            }
            StepBody::Candidate {
                op,
                candidate,
                base,
                base_tree,
                commit,
                tree,
            } => {
                let live = self.owned_mut(op, &step.by)?;
                let expected =
                    u32::try_from(live.candidates.len() + 1).map_err(|_| "too many candidates")?;
                if &candidate.op != op || candidate.attempt != expected {
                    return Err(format!(
                        "candidate {candidate} out of order; the next is {op}.{expected}"
                    ));
                }
                live.state = OpState::Running;
                live.candidates.push(CandidateRec {
                    id: candidate.clone(),
                    base: base.clone(),
                    base_tree: base_tree.clone(),
                    commit: commit.clone(),
                    tree: tree.clone(),
                    by: step.by.clone(),
                    at: step.at,
                });
            }
            StepBody::Check {
                op,
                candidate,
                check,
                environment,
                verdict,
                why,
            } => {
                let live = self.owned_mut(op, &step.by)?;
                if live.candidates.last().map(|c| &c.id) != Some(candidate) {
                    return Err(format!(
                        "a check on {candidate}, which is not the latest candidate"
                    ));
                }
                live.checks.push(CheckRec {
                    candidate: candidate.clone(),
                    check: check.clone(),
                    environment: environment.clone(),
                    verdict: *verdict,
                    why: why.clone(),
                    by: step.by.clone(),
                    at: step.at,
                });
            }
            StepBody::Outcome {
                op,
                state,
                reason,
                detail,
            } => {
                if !state.is_terminal() {
                    return Err(format!(
                        "an outcome with state {}, which does not end",
                        state.as_str()
                    ));
                }
                let live = self.owned_mut(op, &step.by)?;
                if *state == OpState::Merged && live.candidates.is_empty() {
                    return Err("merged with no candidate".into());
                }
                live.owner = None;
                live.state = *state;
                live.outcome = Some(OpOutcome {
                    state: *state,
                    reason: *reason,
                    detail: detail.clone(),
                    by: step.by.clone(),
                    at: step.at,
                });
            }
            StepBody::Abandon => {
                self.refuse_if_merged("abandon")?;
                if step.by != self.actor {
                    return Err(format!(
                        "{} abandoned a change held by {}",
                        step.by, self.actor
                    ));
                }
                self.end_live_op(step, OpState::Superseded, ReasonCode::ChangeSuperseded);
                self.abandoned = true;
                self.abandoned_at = Some(step.at);
            }
        }
        Ok(())
    }

    fn refuse_if_merged(&self, what: &str) -> Result<(), String> {
        match self.merged() {
            Some(op) => Err(format!("a {what} after {} merged", op.id)),
            None => Ok(()),
        }
    }

    fn end_live_op(&mut self, step: &Step, state: OpState, reason: ReasonCode) {
        if let Some(live) = self.ops.last_mut().filter(|op| !op.state.is_terminal()) {
            live.owner = None;
            live.state = state;
            live.outcome = Some(OpOutcome {
                state,
                reason: Some(reason),
                detail: EndedBy {
                    ended_by: step.kind(),
                }
                .to_json(),
                by: step.by.clone(),
                at: step.at,
            });
        }
    }

    /// The operation `op`, which must be the latest and not ended.
    fn live_mut(&mut self, op: &OpId) -> Result<&mut Operation, String> {
        match self.ops.last_mut() {
            Some(last) if &last.id == op && !last.state.is_terminal() => Ok(last),
            Some(last) if &last.id == op => Err(format!("{op} has already ended")),
            _ => Err(format!("{op} is not the latest operation")),
        }
    }

    /// The live operation `op`, whose claim `runner` must hold: a runner that lost its claim
    /// can write nothing more (fencing).
    fn owned_mut(&mut self, op: &OpId, runner: &str) -> Result<&mut Operation, String> {
        let live = self.live_mut(op)?;
        match &live.owner {
            Some(owner) if owner == runner => Ok(live),
            Some(owner) => Err(format!("{runner} wrote to {op}, whose claim {owner} holds")),
            None => Err(format!("{runner} wrote to {op} without a claim")),
        }
    }
}
