//! The results commands print, built from the change record. Every reader of an operation's
//! state (`merge`, `merge --wait`, `status`) goes through here, so they cannot disagree.

use serde_json::{Map, Value};

use crate::git::Oid;
use crate::id::ChangeId;
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Operation};
use crate::result::{BayResult, OpState, WaitingFor};

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
            None => BayResult::failed("the operation ended without a reason").with_state(state),
        },
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
    };
    result.change = Some(record.change.clone());
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
    result.change = change.cloned();
    result
}

/// A fault no reason code names: nothing changed, and why.
pub fn failed(why: String, change: Option<&ChangeId>) -> BayResult {
    let mut result = BayResult::failed(&why);
    result.change = change.cloned();
    result
}

/// `bay start` opened or picked up `change`.
pub fn started(change: &ChangeId, detail: Value, main: Option<&Oid>) -> BayResult {
    let mut result = BayResult::ok(None, object(detail));
    result.change = Some(change.clone());
    with_main(result, main)
}

/// `bay abandon` gave `change` up.
pub fn abandoned(change: &ChangeId) -> BayResult {
    let mut detail = Map::new();
    detail.insert("abandoned".into(), Value::Bool(true));
    let mut result = BayResult::ok(None, detail);
    result.change = Some(change.clone());
    result
}

/// Names the main commit the result reflects. The driver fills in when it fetched it.
pub fn with_main(result: BayResult, main: Option<&Oid>) -> BayResult {
    match main {
        Some(main) => result.with_freshness(main.as_str(), "this command's fetch"),
        None => result,
    }
}
