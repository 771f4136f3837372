//! The JSON Schemas bay publishes (`schemas/*.json`), compiled into it: `bay help --json`
//! names them, and tests hold every document bay prints to them with a real validator
//! (`jsonschema`, a dev-dependency). Core validates nothing at run time: each document is
//! built by typed code, and what comes in is read by its own parser.

/// The schemas bay publishes, as compiled into it.
pub const RESULT: &str = include_str!("../../schemas/bay.result.schema.json");
pub const CHECK_REQUEST: &str = include_str!("../../schemas/bay.check.request.schema.json");
pub const CHECK_RESULT: &str = include_str!("../../schemas/bay.check.result.schema.json");
pub const EVENT: &str = include_str!("../../schemas/bay.event.schema.json");

/// Validates `doc` against `schema` for core's own tests: every way it fails, each with the
/// path where.
#[cfg(test)]
pub(crate) fn validate(
    schema: &serde_json::Value,
    doc: &serde_json::Value,
) -> Result<(), Vec<String>> {
    let validator = jsonschema::validator_for(schema).expect("a published schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(text: &str) -> Value {
        serde_json::from_str(text).expect("a published schema is JSON")
    }

    #[test]
    fn every_published_schema_is_a_valid_2020_12_schema() {
        for text in [RESULT, CHECK_REQUEST, CHECK_RESULT, EVENT] {
            let schema = parse(text);
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            jsonschema::meta::validate(&schema).expect("a valid schema");
        }
    }

    #[test]
    fn a_result_is_held_to_its_schema() {
        let schema = parse(RESULT);
        let good = json!({"schema": "bay.result/1", "decision": "queued", "say": "Saved.", "op_id": "c7k2m4qa.1",
            "state": "submitted", "waiting_for": "runner", "change": "c7k2m4qa", "evidence": []});
        assert_eq!(validate(&schema, &good), Ok(()));
        for bad in [
            json!({"schema": "bay.result/2", "decision": "ok", "say": "x"}),
            json!({"schema": "bay.result/1", "decision": "done", "say": "x"}),
            json!({"schema": "bay.result/1", "decision": "ok", "say": ""}),
            json!({"schema": "bay.result/1", "decision": "ok", "say": "x", "extra": 1}),
            json!({"schema": "bay.result/1", "decision": "ok", "say": "x", "op_id": "C7K2M4QA.1"}),
            json!({"schema": "bay.result/1", "decision": "ok"}),
        ] {
            assert!(validate(&schema, &bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_result_core_builds_meets_the_published_schema() {
        use crate::reason::ReasonCode;
        use crate::result::{BayResult, OpState, WaitingFor};
        let schema = parse(RESULT);
        let op = crate::id::ChangeId::parse("c7k2m4qa").expect("valid").op(1);
        let mut results: Vec<BayResult> = ReasonCode::ALL
            .iter()
            .map(|code| BayResult::refusal(*code, serde_json::Map::new()))
            .collect();
        results.push(BayResult::failed("the remote did not answer"));
        results.push(BayResult::queued(OpState::Submitted, WaitingFor::Runner).with_op(op.clone()));
        results.push(BayResult::merged(serde_json::Map::new()).with_candidate(op.candidate(2)));
        results.push(
            BayResult::ok(Some(OpState::NoEffect), serde_json::Map::new())
                .with_freshness("a1b2c3d", "now"),
        );
        for result in results {
            let doc = serde_json::to_value(&result).expect("serializes");
            assert_eq!(validate(&schema, &doc), Ok(()), "{doc}");
        }
    }

    #[test]
    fn every_request_core_builds_meets_the_published_schema() {
        use crate::check::{
            ChangeContext, CheckInput, CheckRequest, CheckTarget, CommitTree, Materialized,
            RequestInput,
        };
        use crate::git::Oid;
        let oid = |c: char| Oid::parse(&c.to_string().repeat(40)).expect("an id");
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget {
                id: "unit".into(),
                environment: "linux".into(),
                timeout_s: 60,
                expected_minimum: 1,
                fixtures: vec![],
                inputs: vec![CheckInput::Commit, CheckInput::History],
                materialized: Some(Materialized::Changed),
            },
            policy_revision: "3".into(),
            candidate: CommitTree {
                commit: oid('a'),
                tree: oid('b'),
            },
            base: CommitTree {
                commit: oid('c'),
                tree: oid('d'),
            },
            changed_paths: vec!["src/a".into()],
            change: Some(ChangeContext {
                id: crate::id::ChangeId::parse("c7k2m4qa").expect("valid"),
                intent: "fix".into(),
                actor: "ann".into(),
                revision: oid('e'),
                messages: vec!["one".into()],
            }),
        });
        let sent = request.with_git_dir("/repo/.git/bay/check/a/git");
        let doc: Value = serde_json::from_str(&sent.to_json()).expect("JSON");
        assert_eq!(validate(&parse(CHECK_REQUEST), &doc), Ok(()));
        assert_eq!(doc["materialized"], "changed");
        assert_eq!(doc["git"]["refs"]["revision"], "e".repeat(40));
    }

    #[test]
    fn a_check_result_is_one_of_a_result_or_unavailable() {
        let schema = parse(CHECK_RESULT);
        let tree = "a".repeat(40);
        let result = json!({"schema": "bay.check.result/1", "exercised": {"commit": tree, "tree": tree},
            "plan": {"selected": 1, "completed": 1}, "checks": [{"id": "t", "verdict": "pass"}]});
        assert_eq!(validate(&schema, &result), Ok(()));
        let unavailable = json!({"schema": "bay.check.result/1", "unavailable": "no worker"});
        assert_eq!(validate(&schema, &unavailable), Ok(()));
        let both = json!({"schema": "bay.check.result/1", "unavailable": "x", "exercised": {"commit": tree, "tree": tree},
            "plan": {"selected": 1, "completed": 1}, "checks": []});
        assert!(validate(&schema, &both).is_err());
        let bad_verdict = json!({"schema": "bay.check.result/1", "exercised": {"commit": tree, "tree": tree},
            "plan": {"selected": 1, "completed": 1}, "checks": [{"id": "t", "verdict": "ok"}]});
        assert!(validate(&schema, &bad_verdict).is_err());
    }
}
