//! One test per judging rule, each built so that it fails if its rule is removed: every case
//! starts from a result that passes and changes one thing.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::check::{CheckTarget, CommitTree, RequestInput};
use crate::git::Oid;

fn oid(digit: char) -> Oid {
    Oid::parse(&digit.to_string().repeat(40)).expect("forty hex digits")
}

const COMMIT: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const TREE: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

fn request() -> CheckRequest {
    CheckRequest::build(RequestInput {
        target: CheckTarget {
            id: "unit".into(),
            environment: "linux-x86_64".into(),
            timeout_s: 600,
            expected_minimum: 1,
            fixtures: vec![],
            inputs: vec![],
            materialized: None,
        },
        policy_revision: "p7".into(),
        candidate: CommitTree {
            commit: oid('a'),
            tree: oid('b'),
        },
        base: CommitTree {
            commit: oid('c'),
            tree: oid('d'),
        },
        changed_paths: vec!["src/lib.rs".into()],
        change: None,
    })
}

/// A result with one unit per verdict word, all selected and completed.
fn result(verdicts: &[&str]) -> Value {
    let checks: Vec<Value> = verdicts
        .iter()
        .enumerate()
        .map(|(n, verdict)| json!({"id": format!("t{n}"), "verdict": verdict}))
        .collect();
    json!({
        "schema": "bay.check.result/1",
        "exercised": {"commit": COMMIT, "tree": TREE},
        "plan": {"selected": checks.len(), "completed": checks.len()},
        "checks": checks,
    })
}

fn passing() -> Value {
    result(&["pass", "pass", "pass"])
}

fn exit(stdout: impl Into<Vec<u8>>, exit_code: Option<i32>) -> CheckExit {
    CheckExit {
        stdout: stdout.into(),
        exit_code,
        timed_out: false,
        millis: 10,
        infra: None,
        sandbox_read: vec![],
        adapter: vec![],
        stderr_log: None,
    }
}

fn exit_of(doc: &Value) -> CheckExit {
    exit(doc.to_string(), Some(0))
}

fn judged(expected_minimum: u64, exit: &CheckExit) -> JudgedCheck {
    match judge(&request(), expected_minimum, exit) {
        Judgement::Judged(judged) => judged,
        Judgement::Unavailable { reason } => panic!("unexpectedly unavailable: {reason}"),
    }
}

fn verdict(expected_minimum: u64, exit: &CheckExit) -> Verdict {
    judged(expected_minimum, exit).verdict
}

fn verdict_of(doc: &Value) -> Verdict {
    verdict(1, &exit_of(doc))
}

/// Sets `doc[outer][inner]`, or `doc[outer]` when `inner` is empty.
fn with(mut doc: Value, outer: &str, inner: &str, value: Value) -> Value {
    if inner.is_empty() {
        doc[outer] = value;
    } else {
        doc[outer][inner] = value;
    }
    doc
}

#[test]
fn a_clean_result_passes() {
    let judged = judged(3, &exit_of(&passing()));
    assert_eq!(judged.verdict, Verdict::Pass);
    assert_eq!(
        (judged.units, judged.selected, judged.completed),
        (3, Some(3), Some(3))
    );
    assert!(judged.failed.is_empty());
}

#[test]
fn surrounding_whitespace_and_unknown_fields_are_allowed() {
    let mut doc = passing();
    doc["coverage"] = json!({"lines": 0.8});
    doc["checks"][0]["seconds"] = json!(1.5);
    doc["checks"][0]["owner"] = json!("web");
    let stdout = format!("\n  {doc}\n\t ");
    assert_eq!(verdict(1, &exit(stdout, Some(0))), Verdict::Pass);
}

// Infra, timeout and size come first.

#[test]
fn a_driver_failure_is_infra_failure_whatever_was_printed() {
    let mut run = exit_of(&passing());
    run.infra = Some("env variable NPM_TOKEN is not set\non this runner.\n".into());
    let judged = judged(1, &run);
    assert_eq!(judged.verdict, Verdict::InfraFailure);
    assert_eq!(
        judged.why,
        "The driver could not run the check: env variable NPM_TOKEN is not set on this runner."
    );
}

#[test]
fn a_timeout_is_unknown_even_with_a_passing_result() {
    let mut run = exit_of(&passing());
    run.timed_out = true;
    assert_eq!(verdict(1, &run), Verdict::Unknown);
}

#[test]
fn stdout_over_4_mib_is_unknown() {
    let doc = passing().to_string();
    let padded = |len: usize| format!("{doc}{}", " ".repeat(len - doc.len()));
    assert_eq!(
        verdict(1, &exit(padded(MAX_STDOUT_BYTES), Some(0))),
        Verdict::Pass
    );
    assert_eq!(
        verdict(1, &exit(padded(MAX_STDOUT_BYTES + 1), Some(0))),
        Verdict::Unknown
    );
}

// No valid result.

#[test]
fn no_document_is_unknown() {
    assert_eq!(verdict(0, &exit("", Some(1))), Verdict::Unknown);
    assert_eq!(
        verdict(0, &exit("Traceback (most recent call last):", Some(1))),
        Verdict::Unknown
    );
}

#[test]
fn an_exit_code_alone_is_never_evidence() {
    let judged = judged(0, &exit("", Some(0)));
    assert_eq!(judged.verdict, Verdict::Unknown);
    assert!(judged.why.contains("exit code alone"));
    assert_eq!(
        verdict(0, &exit("all tests passed\n", Some(0))),
        Verdict::Unknown
    );
}

#[test]
fn anything_but_one_json_object_is_unknown() {
    let doc = passing().to_string();
    for stdout in [
        format!("{doc}{doc}"),
        format!("log line\n{doc}"),
        format!("{doc}\ntrailing"),
        format!("[{doc}]"),
        "null".to_owned(),
        "\u{feff}{}".to_owned(),
        doc[..doc.len() - 1].to_owned(),
    ] {
        assert_eq!(
            verdict(0, &exit(stdout.clone(), Some(0))),
            Verdict::Unknown,
            "{stdout}"
        );
    }
    assert_eq!(
        verdict(0, &exit(vec![0xff, 0xfe, b'{', b'}'], Some(0))),
        Verdict::Unknown
    );
}

#[test]
fn a_missing_or_other_schema_is_unknown() {
    let mut doc = passing();
    doc.as_object_mut().expect("an object").remove("schema");
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    for schema in [
        json!("bay.check.result/2"),
        json!("bay.check.request/1"),
        json!(1),
    ] {
        assert_eq!(
            verdict_of(&with(passing(), "schema", "", schema)),
            Verdict::Unknown
        );
    }
}

// Unavailable.

#[test]
fn unavailable_alone_keeps_no_verdict() {
    let doc = json!({"schema": "bay.check.result/1", "unavailable": "no GPU on this runner"});
    assert_eq!(
        judge(&request(), 1, &exit(doc.to_string(), Some(0))),
        Judgement::Unavailable {
            reason: "no GPU on this runner".into()
        }
    );
}

#[test]
fn unavailable_with_checks_is_unknown() {
    let doc = with(passing(), "unavailable", "", json!("busy"));
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    let doc = with(passing(), "unavailable", "", json!(true));
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
}

// Exercised.

#[test]
fn a_missing_exercised_is_unknown() {
    let mut doc = passing();
    doc.as_object_mut().expect("an object").remove("exercised");
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    assert_eq!(
        verdict_of(&with(passing(), "exercised", "", json!(COMMIT))),
        Verdict::Unknown
    );
}

#[test]
fn a_result_for_another_tree_is_rejected_whole() {
    let doc = with(passing(), "exercised", "tree", json!("e".repeat(40)));
    let judged = judged(1, &exit_of(&doc));
    assert_eq!(judged.verdict, Verdict::Unknown);
    assert_eq!(judged.units, 0, "nothing of a rejected result is kept");
    assert!(judged.selected.is_none());
}

#[test]
fn a_result_for_another_commit_is_rejected_whole() {
    let doc = with(passing(), "exercised", "commit", json!("e".repeat(40)));
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    let doc = with(
        passing(),
        "exercised",
        "commit",
        json!(COMMIT.to_uppercase()),
    );
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    let doc = with(passing(), "exercised", "commit", Value::Null);
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
}

#[test]
fn a_failure_for_another_tree_is_unknown_too() {
    let doc = with(
        result(&["product_failure"]),
        "exercised",
        "tree",
        json!("e".repeat(40)),
    );
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
}

// Malformed plan or units.

#[test]
fn a_malformed_plan_is_unknown() {
    let mut doc = passing();
    doc.as_object_mut().expect("an object").remove("plan");
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    let mut doc = passing();
    doc["plan"]
        .as_object_mut()
        .expect("an object")
        .remove("selected");
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    for bad in [
        json!(-1),
        json!(3.0),
        json!(2.5),
        json!("3"),
        Value::Null,
        json!(1e20),
    ] {
        for key in ["selected", "completed"] {
            let doc = with(passing(), "plan", key, bad.clone());
            assert_eq!(verdict_of(&doc), Verdict::Unknown, "{key} = {bad}");
        }
    }
}

#[test]
fn malformed_units_are_unknown() {
    let mut doc = passing();
    doc.as_object_mut().expect("an object").remove("checks");
    assert_eq!(verdict_of(&doc), Verdict::Unknown);
    assert_eq!(
        verdict_of(&with(passing(), "checks", "", json!({}))),
        Verdict::Unknown
    );
    for unit in [
        json!("t0"),
        json!({"verdict": "pass"}),
        json!({"id": 7, "verdict": "pass"}),
        json!({"id": "t0"}),
        json!({"id": "t0", "verdict": "passed"}),
        json!({"id": "t0", "verdict": "PASS"}),
        json!({"id": "t0", "verdict": "flaky"}),
        json!({"id": "t0", "verdict": "pass", "reason": 3}),
    ] {
        let mut doc = passing();
        doc["checks"][0] = unit.clone();
        assert_eq!(verdict_of(&doc), Verdict::Unknown, "{unit}");
    }
}

// Reasons.

#[test]
fn a_reason_of_exactly_2048_bytes_is_kept() {
    let mut doc = result(&["pass", "product_failure"]);
    doc["checks"][1]["reason"] = json!("r".repeat(MAX_REASON_BYTES));
    let judged = judged(1, &exit(doc.to_string(), Some(1)));
    assert_eq!(judged.verdict, Verdict::ProductFailure);
    assert_eq!(
        judged.failed[0].reason.as_ref().map(String::len),
        Some(MAX_REASON_BYTES)
    );

    let mut doc = passing();
    doc["checks"][0]["reason"] = json!("r".repeat(MAX_REASON_BYTES));
    assert_eq!(verdict_of(&doc), Verdict::Pass);
}

#[test]
fn a_reason_of_2049_bytes_is_infra_failure() {
    let mut doc = result(&["pass", "product_failure"]);
    doc["checks"][1]["reason"] = json!("r".repeat(MAX_REASON_BYTES + 1));
    let judged = judged(1, &exit(doc.to_string(), Some(1)));
    assert_eq!(judged.verdict, Verdict::InfraFailure);
    assert_eq!(judged.failed.len(), 1);
    assert_eq!(
        judged.failed[0].reason, None,
        "bay never cuts a reason, nor keeps it whole"
    );

    // Even on a unit that passed.
    let mut doc = passing();
    doc["checks"][2]["reason"] = json!("r".repeat(MAX_REASON_BYTES + 1));
    assert_eq!(verdict_of(&doc), Verdict::InfraFailure);
}

#[test]
fn the_reason_limit_counts_bytes_not_characters() {
    let mut doc = result(&["product_failure"]);
    doc["checks"][0]["reason"] = json!("é".repeat(1025));
    assert_eq!(
        verdict(1, &exit(doc.to_string(), Some(1))),
        Verdict::InfraFailure
    );
}

// Unit verdicts.

#[test]
fn a_product_failure_fails_the_check() {
    let mut doc = result(&["pass", "product_failure", "pass"]);
    doc["checks"][1]["reason"] = json!("expected 2, got 3");
    let judged = judged(1, &exit(doc.to_string(), Some(1)));
    assert_eq!(judged.verdict, Verdict::ProductFailure);
    assert_eq!(
        judged.failed,
        vec![UnitReason {
            id: "t1".into(),
            verdict: Verdict::ProductFailure,
            reason: Some("expected 2, got 3".into()),
        }]
    );
}

#[test]
fn product_failure_beats_infra_failure() {
    let doc = result(&["infra_failure", "product_failure", "unknown"]);
    let judged = judged(1, &exit(doc.to_string(), Some(1)));
    assert_eq!(judged.verdict, Verdict::ProductFailure);
    assert_eq!(
        judged.failed.len(),
        3,
        "every unit that did not pass is listed"
    );
}

#[test]
fn infra_failure_beats_unknown() {
    assert_eq!(
        verdict_of(&result(&["unknown", "infra_failure", "pass"])),
        Verdict::InfraFailure
    );
}

#[test]
fn an_unknown_unit_makes_the_check_unknown() {
    assert_eq!(verdict_of(&result(&["pass", "unknown"])), Verdict::Unknown);
}

#[test]
fn an_oversized_reason_beats_a_product_failure() {
    let mut doc = result(&["product_failure", "pass"]);
    doc["checks"][1]["reason"] = json!("r".repeat(MAX_REASON_BYTES + 1));
    assert_eq!(verdict_of(&doc), Verdict::InfraFailure);
}

#[test]
fn a_product_failure_counts_even_when_the_run_is_short() {
    let doc = with(result(&["product_failure"]), "plan", "selected", json!(10));
    assert_eq!(
        verdict(5, &exit(doc.to_string(), Some(1))),
        Verdict::ProductFailure
    );
}

// Counts.

#[test]
fn completed_below_selected_is_unknown() {
    let doc = with(passing(), "plan", "completed", json!(2));
    let judged = judged(1, &exit_of(&doc));
    assert_eq!(judged.verdict, Verdict::Unknown);
    assert_eq!((judged.selected, judged.completed), (Some(3), Some(2)));
}

#[test]
fn too_few_units_is_unknown() {
    assert_eq!(verdict(3, &exit_of(&passing())), Verdict::Pass);
    let judged = judged(4, &exit_of(&passing()));
    assert_eq!(judged.verdict, Verdict::Unknown);
    assert!(judged.why.contains("expected minimum of 4"));
}

#[test]
fn one_unit_listed_many_times_counts_once() {
    let mut doc = result(&["pass"; 5]);
    for unit in doc["checks"].as_array_mut().expect("checks") {
        unit["id"] = json!("t0");
    }
    let judged = judged(5, &exit_of(&doc));
    assert_eq!((judged.verdict, judged.units), (Verdict::Unknown, 1));
    assert!(judged.why.contains("reported 1 units"), "{}", judged.why);
    assert_eq!(verdict(1, &exit_of(&doc)), Verdict::Pass);
}

#[test]
fn an_empty_selection_passes_only_with_expected_minimum_zero() {
    let empty = result(&[]);
    let judged = judged(0, &exit_of(&empty));
    assert_eq!(judged.verdict, Verdict::Pass);
    assert_eq!(judged.units, 0);
    assert_eq!(verdict(1, &exit_of(&empty)), Verdict::Unknown);
}

// The exit code against a pass.

#[test]
fn a_non_zero_exit_with_a_passing_result_is_unknown() {
    assert_eq!(
        verdict(1, &exit(passing().to_string(), Some(1))),
        Verdict::Unknown
    );
    assert_eq!(
        verdict(1, &exit(passing().to_string(), Some(-1))),
        Verdict::Unknown
    );
}

#[test]
fn a_signal_with_a_passing_result_is_unknown() {
    let judged = judged(1, &exit(passing().to_string(), None));
    assert_eq!(judged.verdict, Verdict::Unknown);
    assert!(judged.why.contains("signal"));
}

#[test]
fn a_signal_without_a_result_is_unknown() {
    assert_eq!(verdict(0, &exit("", None)), Verdict::Unknown);
}

#[test]
fn whys_are_one_line() {
    let mut cases = vec![exit("", Some(0)), exit_of(&passing())];
    let mut doc = result(&["product_failure"]);
    doc["checks"][0]["id"] = json!("line one\nline two");
    cases.push(exit(doc.to_string(), Some(1)));
    for run in cases {
        let why = judged(1, &run).why;
        assert!(!why.contains('\n') && why.ends_with('.'), "{why}");
    }
}

// Properties.

const KEYS: [&str; 14] = [
    "schema",
    "exercised",
    "plan",
    "checks",
    "unavailable",
    "commit",
    "tree",
    "selected",
    "completed",
    "selection",
    "id",
    "verdict",
    "reason",
    "seconds",
];

/// Any JSON, weighted toward the names and words of the contract so that deep paths are hit.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0u64..5).prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        Just(json!(RESULT_SCHEMA)),
        Just(json!(COMMIT)),
        Just(json!(TREE)),
        prop::sample::select(vec!["pass", "product_failure", "infra_failure", "unknown"])
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(5, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    prop::sample::select(KEYS.to_vec()).prop_map(String::from),
                    ".{0,6}"
                ],
                inner,
                0..6,
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A unit that is well formed most of the time.
fn unit() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => (
            ".{0,8}",
            prop::sample::select(vec!["pass", "product_failure", "infra_failure", "unknown"]),
            prop::option::of(".{0,16}"),
        )
            .prop_map(|(id, verdict, reason)| json!({"id": id, "verdict": verdict, "reason": reason})),
        1 => json_value(),
    ]
}

/// A result that differs from the candidate in its `exercised`, and may be otherwise perfect.
fn misdirected_result() -> impl Strategy<Value = Value> {
    let other = prop_oneof![
        Just(json!("e".repeat(40))),
        Just(json!(COMMIT)),
        Just(json!(TREE)),
        Just(Value::Null),
        json_value(),
    ];
    let exercised = prop_oneof![
        (other.clone(), any::<bool>()).prop_map(|(other, keep_commit)| if keep_commit {
            json!({"commit": COMMIT, "tree": other})
        } else {
            json!({"commit": other, "tree": TREE})
        }),
        json_value(),
    ]
    .prop_filter("must differ from the candidate", |exercised| {
        exercised.get("commit") != Some(&json!(COMMIT))
            || exercised.get("tree") != Some(&json!(TREE))
    });
    (
        exercised,
        prop::collection::vec(unit(), 0..5),
        0u64..6,
        0u64..6,
        json_value(),
    )
        .prop_map(|(exercised, checks, selected, completed, extra)| {
            json!({
                "schema": RESULT_SCHEMA,
                "exercised": exercised,
                "plan": {"selected": selected, "completed": completed},
                "checks": checks,
                "extra": extra,
            })
        })
}

fn any_exit(stdout: Vec<u8>) -> impl Strategy<Value = CheckExit> {
    (
        any::<Option<i32>>(),
        any::<bool>(),
        any::<u64>(),
        prop::option::of(".{0,8}"),
    )
        .prop_map(move |(exit_code, timed_out, millis, infra)| CheckExit {
            stdout: stdout.clone(),
            exit_code,
            timed_out,
            millis,
            infra,
            sandbox_read: vec![],
            adapter: vec![],
            stderr_log: None,
        })
}

proptest! {
    #[test]
    fn judge_never_panics_on_any_bytes(
        stdout in prop::collection::vec(any::<u8>(), 0..512),
        exit_code: Option<i32>,
        timed_out: bool,
        minimum in 0u64..4,
    ) {
        let run = CheckExit { stdout, exit_code, timed_out, millis: 0, infra: None, sandbox_read: vec![], adapter: vec![], stderr_log: None };
        let _ = judge(&request(), minimum, &run);
    }

    #[test]
    fn judge_never_panics_on_any_json(doc in json_value(), minimum in 0u64..4) {
        let mut pretty = serde_json::to_vec_pretty(&doc).expect("a value serializes");
        pretty.push(b'\n');
        let _ = judge(&request(), minimum, &exit(pretty, Some(0)));
    }

    #[test]
    fn judge_never_panics_on_near_results(
        doc in (prop::collection::vec(unit(), 0..5), 0u64..6, 0u64..6).prop_map(
            |(checks, selected, completed)| json!({
                "schema": RESULT_SCHEMA,
                "exercised": {"commit": COMMIT, "tree": TREE},
                "plan": {"selected": selected, "completed": completed},
                "checks": checks,
            })
        ),
        run in any_exit(Vec::new()),
        minimum in 0u64..4,
    ) {
        let run = CheckExit { stdout: doc.to_string().into_bytes(), ..run };
        let judged = judge(&request(), minimum, &run);
        // A pass always rests on a full, clean run.
        if judged.verdict() == Some(Verdict::Pass) {
            let judged = judged.judged().expect("a pass is judged");
            prop_assert!(judged.failed.is_empty());
            prop_assert!(judged.units >= minimum);
            prop_assert!(judged.completed >= judged.selected);
            prop_assert_eq!(run.exit_code, Some(0));
            prop_assert!(!run.timed_out && run.infra.is_none());
        }
    }

    #[test]
    fn a_result_for_anything_but_the_candidate_never_passes(
        doc in misdirected_result(),
        minimum in 0u64..4,
    ) {
        let judged = judge(&request(), minimum, &exit(doc.to_string(), Some(0)));
        prop_assert_ne!(judged.verdict(), Some(Verdict::Pass));
    }
}
