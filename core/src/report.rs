//! The results commands print, built from the change record. Every reader of an operation's
//! state (`merge`, `merge --wait`, `status`) goes through here, so they cannot disagree.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::Oid;
use crate::id::{CandidateId, ChangeId};
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, CheckRec, Operation};
use crate::result::{BayResult, OpState, WaitingFor};
use crate::time::Timestamp;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => {
            let mut map = Map::new();
            map.insert("value".into(), other);
            map
        }
    }
}

/// The result that tells where operation `op` of `record` is.
pub fn op_result(record: &ChangeRecord, op: &Operation) -> BayResult {
    let result = match (&op.outcome, op.state) {
        (Some(outcome), OpState::Merged) => BayResult::merged(object(outcome.detail.clone())),
        (Some(outcome), OpState::NoEffect) => {
            BayResult::ok(Some(OpState::NoEffect), object(outcome.detail.clone()))
        }
        (Some(outcome), state) => match outcome.reason {
            Some(code) => {
                BayResult::refusal(code, object(outcome.detail.clone())).with_state(state)
            }
            // A fault no code names: its outcome says why, and what else it holds.
            None => {
                let why = outcome.detail["why"]
                    .as_str()
                    .unwrap_or("the operation ended without a reason");
                let mut result = BayResult::failed(why);
                result.detail.extend(object(outcome.detail.clone()));
                result.with_state(state)
            }
        },
        // It waits for a person's yes: the release said for what, and who may give it.
        (None, state) if awaits_approval(op) => BayResult::refusal(
            ReasonCode::ApprovalPending,
            object(op.released_detail.clone().unwrap_or(Value::Null)),
        )
        .with_state(state),
        (None, state) => {
            let mut result = BayResult::queued(state, WaitingFor::Runner);
            if let Some(code) = op.released {
                result
                    .detail
                    .insert("last_release".into(), Value::from(code.as_str()));
            }
            result
        }
    };
    let mut result = match op.candidates.last() {
        Some(candidate) => result.with_candidate(candidate.id.clone()),
        None => result.with_op(op.id.clone()),
    }
    .with_change(Some(record.change.clone()));
    if !op.state.is_terminal() {
        result.evidence = Some(
            op.checks
                .iter()
                .map(|c| format!("{}/{}", c.by, c.candidate))
                .collect(),
        );
    }
    result
}

/// Whether live operation `op` waits for an approval: a runner gave its claim back with
/// `APPROVAL_PENDING`, and no one has claimed it since.
pub fn awaits_approval(op: &Operation) -> bool {
    !op.state.is_terminal()
        && op.owner.is_none()
        && op.released == Some(ReasonCode::ApprovalPending)
        && op.released_detail.is_some()
}

/// The status of a change whose record says it merged, but whose merge `merge` main at `main`
/// no longer holds (someone moved main back past it): `CHANGE_NOT_MERGED`, never `merged`,
/// since only main says what is on main. `detail` keeps what the record says beside them.
pub fn merge_left_main(record: &ChangeRecord, merge: &Oid, main: &Oid) -> BayResult {
    let recorded = status(record);
    let mut detail = recorded.detail;
    detail.insert("target".into(), Value::from(record.change.to_string()));
    detail.insert("merge".into(), Value::from(merge.to_string()));
    detail.insert("main".into(), Value::from(main.to_string()));
    let mut result = BayResult::refusal(ReasonCode::ChangeNotMerged, detail);
    result.op_id = recorded.op_id;
    result.change = recorded.change;
    result.candidate = recorded.candidate;
    result
}

/// A refusal with `code`, about `change` (and `op`) when known.
pub fn refused(
    code: ReasonCode,
    change: Option<&ChangeId>,
    op: Option<&Operation>,
    detail: Value,
) -> BayResult {
    let mut result = BayResult::refusal(code, object(detail));
    if let Some(op) = op {
        result = result.with_op(op.id.clone());
    }
    result.with_change(change.cloned())
}

/// A fault no reason code names: nothing changed, and why.
pub fn failed(why: String, change: Option<&ChangeId>) -> BayResult {
    BayResult::failed(&why).with_change(change.cloned())
}

/// `bay start` opened or picked up `change`.
pub fn started(change: &ChangeId, detail: Value, main: Option<&Oid>) -> BayResult {
    let result = BayResult::ok(None, object(detail)).with_change(Some(change.clone()));
    with_main(result, main)
}

/// `bay abandon` gave `change` up.
pub fn abandoned(change: &ChangeId) -> BayResult {
    let mut detail = Map::new();
    detail.insert("abandoned".into(), Value::Bool(true));
    BayResult::ok(None, detail).with_change(Some(change.clone()))
}

/// Names the main commit the result reflects. The driver fills in when it fetched it.
pub fn with_main(result: BayResult, main: Option<&Oid>) -> BayResult {
    match main {
        Some(main) => result.with_freshness(main.as_str(), "this command's fetch"),
        None => result,
    }
}

/// Each check run of `op` with the moment it started: a check runs from the step before it (its
/// candidate, or the check recorded before it on that candidate) to its own, each time on its
/// writer's clock. `operation.timing` and `detail.flow` both time runs this way, so the two
/// never disagree about one run.
pub fn check_runs(op: &Operation) -> impl Iterator<Item = (&CheckRec, Timestamp)> {
    op.checks.iter().map(|check| {
        let started = op
            .checks
            .iter()
            .filter(|c| c.candidate == check.candidate && c.at <= check.at && *c != check)
            .map(|c| c.at)
            .chain(
                op.candidates
                    .iter()
                    .filter(|c| c.id == check.candidate)
                    .map(|c| c.at),
            )
            .max()
            .unwrap_or(check.at);
        (check, started)
    })
}

/// `operation.timing` of an ended operation, in Unix seconds, from the times its steps carry
/// (each on its writer's clock; never a clock read now). A field whose source is missing is
/// left out.
pub fn timing(op: &Operation) -> Option<Timing> {
    let outcome = op.outcome.as_ref()?;
    let submitted = op.requested_at.secs();
    let mut check_ms = 0;
    let checks = check_runs(op)
        .map(|(check, started)| {
            check_ms += check.at.millis_since(started);
            CheckTiming {
                check: check.check.clone(),
                environment: check.environment.clone(),
                candidate: check.candidate.clone(),
                started_at: started.secs(),
                finished_at: check.at.secs(),
                verdict: check.verdict,
            }
        })
        .collect();
    let merged = op.state == OpState::Merged;
    Some(Timing {
        submitted_at: submitted,
        queued_at: submitted,
        head_at: op.first_claim_at.map(|head| head.secs()),
        queue_wait_s: op
            .first_claim_at
            .map(|head| head.secs().saturating_sub(submitted)),
        merged_at: merged.then_some(outcome.at.secs()),
        ended_at: (!merged).then_some(outcome.at.secs()),
        checks,
        attempts: op.candidates.len(),
        check_s: check_ms / 1000,
        total_s: outcome.at.secs().saturating_sub(submitted),
    })
}

/// When an ended operation was asked for, reached the head, and ended (`merged_at` for a
/// merge, `ended_at` for any other end), and how long its checks took.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timing {
    pub submitted_at: u64,
    pub queued_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_wait_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged_at: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
    pub checks: Vec<CheckTiming>,
    pub attempts: usize,
    pub check_s: u64,
    pub total_s: u64,
}

/// One check run of the operation: from the candidate (or the run before it) to its record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CheckTiming {
    pub check: String,
    pub environment: String,
    pub candidate: CandidateId,
    pub started_at: u64,
    pub finished_at: u64,
    pub verdict: Verdict,
}

/// The commands an approver runs for an operation waiting for a yes, as the runner that
/// released it wrote them (`null` each when it wrote none).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ApprovalCommands {
    pub approve: Option<Value>,
    pub reject: Option<Value>,
    pub record: Option<Value>,
}

impl Detail for Timing {}
impl Detail for ApprovalCommands {}

/// What `bay status <change>` says: the latest operation's result, with the change and, once
/// the operation ended, its timing.
pub fn status(record: &ChangeRecord) -> BayResult {
    let Some(op) = record.ops.last() else {
        let mut detail = Map::new();
        detail.insert("intent".into(), Value::from(record.intent.clone()));
        detail.insert("actor".into(), Value::from(record.actor.clone()));
        detail.insert("open".into(), Value::Bool(!record.ended()));
        return BayResult::ok(None, detail).with_change(Some(record.change.clone()));
    };
    let mut result = op_result(record, op);
    result
        .detail
        .insert("intent".into(), Value::from(record.intent.clone()));
    result
        .detail
        .insert("actor".into(), Value::from(record.actor.clone()));
    let mut operation = Map::new();
    operation.insert("id".into(), Value::from(op.id.to_string()));
    operation.insert("state".into(), Value::from(op.state.as_str()));
    operation.insert("seq".into(), Value::from(op.seq));
    if let Some(owner) = &op.owner {
        operation.insert("runner".into(), Value::from(owner.clone()));
    }
    if let Some(timing) = timing(op) {
        operation.insert("timing".into(), timing.to_json());
    }
    if awaits_approval(op) {
        // The commands an approver runs: a yes, a no, or a record by hand.
        let approval = op
            .released_detail
            .as_ref()
            .and_then(|detail| detail.get("approval"));
        let command = |key: &str| approval.and_then(|a| a.get(key)).cloned();
        let commands = ApprovalCommands {
            approve: command("approve"),
            reject: command("reject"),
            record: command("record"),
        };
        operation.insert("approval".into(), commands.to_json());
    }
    result
        .detail
        .insert("operation".into(), Value::Object(operation));
    result
}
