//! One step of a change's chain, and how it reads and writes as a commit message.

use serde::{Deserialize, Serialize};

use crate::check::Verdict;
use crate::git::Oid;
use crate::id::{CandidateId, ChangeId, OpId};
use crate::reason::ReasonCode;
use crate::result::OpState;
use crate::time::Timestamp;

/// The schema name of a step document.
pub const STEP_SCHEMA: &str = "bay.step/1";

/// One step of a change, written by an agent (`by` is its actor) or a runner (`by` is its name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Step {
    pub change: ChangeId,
    /// The writer's own clock. Informational (timings); never compared across machines.
    pub at: Timestamp,
    pub by: String,
    /// Entropy from the writer, so that every step commit has an id no other write can make:
    /// a lost push reply is then settled by comparing ids.
    pub nonce: u64,
    #[serde(flatten)]
    pub body: StepBody,
}

/// What happened, by kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepBody {
    /// The change was opened for `intent`, by `by`, on main at `base`.
    Start {
        intent: String,
        actor: String,
        paths: Vec<String>,
        base: Oid,
        generation: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        supersedes: Option<ChangeId>,
        /// The merged change this one fixes (`bay start --fixes`): its merge says `Fixes:`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fixes: Option<ChangeId>,
        /// The merged change this one undoes (`bay undo`): its merge says `Reverts:`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reverts: Option<ChangeId>,
        /// The changes that must merge first (`bay start --after`): its merge says
        /// `Bay-After:` for each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        after: Vec<ChangeId>,
    },
    /// Another actor, or the same one after an abandon, took the change up again.
    Adopt { actor: String },
    /// The draft as it stands: a commit whose tree is the view's work, made on main at `base`;
    /// with `marked`, the files bay left with conflict markers in it, which must be settled
    /// before the change may merge.
    Checkpoint {
        draft: Oid,
        base: Oid,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        marked: Option<crate::conflict::Marked>,
    },
    /// A request to merge `draft` (made on main at `base`), holding queue place `seq`.
    Request {
        op: OpId,
        draft: Oid,
        base: Oid,
        seq: u64,
    },
    /// A runner claims the operation. Its lease runs from here, renewed by heartbeats.
    Claim { op: OpId },
    /// The claim's owner is alive.
    Heartbeat { op: OpId },
    /// The owner gives the claim back, so another runner may claim at once.
    Release {
        op: OpId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<ReasonCode>,
        why: String,
        /// The operation lost its place at the head (past its progress deadline): from now on
        /// it queues right behind the place of this number, the last one taken when it lost
        /// it, and ahead of any place taken after.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        behind: Option<u64>,
        /// What the wait is for, as an object: with `APPROVAL_PENDING`, `approval` names the
        /// candidate, the checks owed and who may answer them. It becomes the `detail` of the
        /// results that report the waiting operation.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[cfg_attr(feature = "arbitrary", arbitrary(with = arbitrary_release_detail))]
        detail: Option<serde_json::Value>,
    },
    /// The owner built candidate `candidate`: `commit` (tree `tree`) on main at `base`.
    Candidate {
        op: OpId,
        candidate: CandidateId,
        base: Oid,
        base_tree: Oid,
        commit: Oid,
        tree: Oid,
    },
    /// One required check's judged run on the latest candidate.
    Check {
        op: OpId,
        candidate: CandidateId,
        check: String,
        environment: String,
        verdict: Verdict,
        why: String,
    },
    /// The operation ended. For `merged`, this step is pushed in the same atomic push that
    /// moves main and creates the merged marker.
    Outcome {
        op: OpId,
        state: OpState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<ReasonCode>,
        /// An object: it becomes the `detail` of the results that report the operation.
        #[cfg_attr(feature = "arbitrary", arbitrary(with = arbitrary_detail))]
        detail: serde_json::Value,
    },
    /// The change's actor gave it up. A live operation ends with it.
    Abandon,
    /// A batch's bisection (batch `batch`) found this live operation fails on top of the
    /// members ahead of it: it joins no batch again and is judged alone at its own turn. The
    /// runner that bisected writes it holding no claim on the operation; it changes nothing
    /// else, so every batching runner learns it from the chain it reads anyway.
    Culprit { op: OpId, batch: String },
}

#[cfg(feature = "arbitrary")]
fn arbitrary_detail(u: &mut arbitrary::Unstructured<'_>) -> arbitrary::Result<serde_json::Value> {
    let text: String = u.arbitrary()?;
    Ok(serde_json::json!({ "note": text }))
}

#[cfg(feature = "arbitrary")]
fn arbitrary_release_detail(
    u: &mut arbitrary::Unstructured<'_>,
) -> arbitrary::Result<Option<serde_json::Value>> {
    let some: bool = u.arbitrary()?;
    if some {
        arbitrary_detail(u).map(Some)
    } else {
        Ok(None)
    }
}

/// The JSON body of a step commit's message, behind its subject line.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    schema: std::borrow::Cow<'a, str>,
    #[serde(flatten)]
    step: std::borrow::Cow<'a, Step>,
}

/// A commit message that is not a bay step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepParseError(pub String);

impl std::fmt::Display for StepParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a bay step: {}", self.0)
    }
}

impl StepBody {
    /// A first generation's start by `actor` of `intent` on `base`, declaring `paths`, with
    /// nothing it supersedes, fixes, reverts or waits for: the start tests build most.
    #[cfg(test)]
    pub(crate) fn first_start(intent: &str, actor: &str, paths: &[&str], base: Oid) -> StepBody {
        StepBody::Start {
            intent: intent.into(),
            actor: actor.into(),
            paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            base,
            generation: 1,
            supersedes: None,
            fixes: None,
            reverts: None,
            after: Vec::new(),
        }
    }
}

impl Step {
    /// The operation this step belongs to, if any.
    pub fn op(&self) -> Option<&OpId> {
        match &self.body {
            StepBody::Request { op, .. }
            | StepBody::Claim { op }
            | StepBody::Heartbeat { op }
            | StepBody::Release { op, .. }
            | StepBody::Candidate { op, .. }
            | StepBody::Check { op, .. }
            | StepBody::Outcome { op, .. }
            | StepBody::Culprit { op, .. } => Some(op),
            StepBody::Start { .. } | StepBody::Adopt { .. } | StepBody::Checkpoint { .. } => None,
            StepBody::Abandon => None,
        }
    }

    /// The kind, as written in the document.
    pub fn kind(&self) -> &'static str {
        match &self.body {
            StepBody::Start { .. } => "start",
            StepBody::Adopt { .. } => "adopt",
            StepBody::Checkpoint { .. } => "checkpoint",
            StepBody::Request { .. } => "request",
            StepBody::Claim { .. } => "claim",
            StepBody::Heartbeat { .. } => "heartbeat",
            StepBody::Release { .. } => "release",
            StepBody::Candidate { .. } => "candidate",
            StepBody::Check { .. } => "check",
            StepBody::Outcome { .. } => "outcome",
            StepBody::Abandon => "abandon",
            StepBody::Culprit { .. } => "culprit",
        }
    }

    /// The step's commit message: a subject that `git log --oneline` makes readable, a blank
    /// line, and the step document.
    pub fn to_message(&self) -> String {
        let subject = match (self.op(), &self.body) {
            (_, StepBody::Outcome { op, state, .. }) => format!("bay: {op} {}", state.as_str()),
            (Some(op), _) => format!("bay: {op} {}", self.kind()),
            (None, _) => format!("bay: {} {}", self.change, self.kind()),
        };
        let wire = Wire {
            schema: STEP_SCHEMA.into(),
            step: std::borrow::Cow::Borrowed(self),
        };
        let body =
            serde_json::to_string(&wire).expect("a step serializes: its fields are plain data");
        format!("{subject}\n\n{body}\n")
    }

    /// Reads a step back from its commit message; once per distinct message while the caller
    /// remembers ([`crate::memo`]).
    pub fn from_message(message: &str) -> Result<Step, StepParseError> {
        crate::memo::recall(&[message.as_bytes()], || Step::read_message(message))
    }

    fn read_message(message: &str) -> Result<Step, StepParseError> {
        let (_, body) = message
            .split_once("\n\n")
            .ok_or_else(|| StepParseError("no body after the subject".into()))?;
        let wire: Wire<'static> =
            serde_json::from_str(body.trim()).map_err(|e| StepParseError(e.to_string()))?;
        if wire.schema != STEP_SCHEMA {
            return Err(StepParseError(format!(
                "schema {:?}, not {STEP_SCHEMA}",
                wire.schema
            )));
        }
        let step = wire.step.into_owned();
        if let StepBody::Outcome { detail, .. } = &step.body
            && !detail.is_object()
        {
            // bay writes no other. A result could only keep another under a key of its own,
            // one level deeper than the reader took it, which may be one level past what a
            // JSON reader of the result takes.
            return Err(StepParseError(
                "an outcome's detail is not an object".into(),
            ));
        }
        Ok(step)
    }
}
