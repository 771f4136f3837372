use super::*;
use crate::check::Verdict;
use crate::git::Oid;
use crate::id::ChangeId;
use crate::reason::ReasonCode;
use crate::result::OpState;
use crate::time::Timestamp;
use proptest::prelude::*;

fn oid(n: u8) -> Oid {
    Oid::parse(&format!("{n:040x}")).expect("forty hex digits")
}

fn change() -> ChangeId {
    ChangeId::parse("c7k2m4qa").expect("a valid id")
}

fn step(by: &str, body: StepBody) -> Step {
    Step {
        change: change(),
        at: Timestamp(1),
        by: by.into(),
        nonce: 7,
        body,
    }
}

fn start() -> Step {
    step(
        "ann",
        StepBody::first_start("fix the login", "ann", &["src/"], oid(1)),
    )
}

fn request(n: u32) -> Step {
    step(
        "ann",
        StepBody::Request {
            op: change().op(n),
            draft: oid(2),
            base: oid(1),
            seq: u64::from(n),
        },
    )
}

fn claim(runner: &str, n: u32) -> Step {
    step(runner, StepBody::Claim { op: change().op(n) })
}

fn candidate(runner: &str, n: u32, attempt: u32) -> Step {
    step(
        runner,
        StepBody::Candidate {
            op: change().op(n),
            candidate: change().op(n).candidate(attempt),
            base: oid(1),
            base_tree: oid(3),
            commit: oid(4),
            tree: oid(5),
        },
    )
}

fn outcome(runner: &str, n: u32, state: OpState) -> Step {
    step(
        runner,
        StepBody::Outcome {
            op: change().op(n),
            state,
            reason: None,
            detail: serde_json::json!({}),
        },
    )
}

fn fold(steps: &[Step]) -> Result<ChangeRecord, RecordError> {
    ChangeRecord::fold(steps)
}

#[test]
fn a_whole_merge_folds_to_merged() {
    let record = fold(&[
        start(),
        request(1),
        claim("r1", 1),
        candidate("r1", 1, 1),
        outcome("r1", 1, OpState::Merged),
    ])
    .expect("an honest chain folds");
    let op = record.merged().expect("merged");
    assert_eq!(op.id, change().op(1));
    assert!(record.ended());
    assert_eq!(record.steps, 5);
    assert!(record.live_op().is_none());
}

#[test]
fn a_chain_must_begin_with_its_one_start() {
    assert!(fold(&[]).is_err());
    assert!(fold(&[request(1)]).is_err());
    let error = fold(&[start(), start()]).expect_err("a second start");
    assert_eq!(error.step, 1);
}

#[test]
fn operations_and_candidates_count_up_from_one() {
    assert!(fold(&[start(), request(2)]).is_err());
    assert!(fold(&[start(), request(1), claim("r1", 1), candidate("r1", 1, 2)]).is_err());
    assert!(
        fold(&[
            start(),
            request(1),
            claim("r1", 1),
            candidate("r1", 1, 1),
            candidate("r1", 1, 2)
        ])
        .is_ok()
    );
}

#[test]
fn a_runner_writes_only_under_its_own_claim() {
    // r2 took the claim over; r1's heartbeat after that breaks the record.
    let steps = [
        start(),
        request(1),
        claim("r1", 1),
        claim("r2", 1),
        step("r1", StepBody::Heartbeat { op: change().op(1) }),
    ];
    let error = fold(&steps).expect_err("a fenced runner wrote");
    assert_eq!(error.step, 4);
    assert!(error.why.contains("r2"), "{error}");
    // Writing with no claim at all is refused too.
    assert!(fold(&[start(), request(1), candidate("r1", 1, 1)]).is_err());
    // After a release, the next claim may come from anyone.
    let release = step(
        "r1",
        StepBody::Release {
            op: change().op(1),
            reason: None,
            why: "fault".into(),
            behind: None,
            detail: None,
        },
    );
    let record = fold(&[start(), request(1), claim("r1", 1), release, claim("r2", 1)])
        .expect("a release then a claim");
    assert_eq!(
        record.live_op().and_then(|op| op.owner.clone()),
        Some("r2".to_string())
    );
}

#[test]
fn a_newer_request_supersedes_the_live_one() {
    let record =
        fold(&[start(), request(1), claim("r1", 1), request(2)]).expect("a second request");
    assert_eq!(record.ops[0].state, OpState::Superseded);
    assert_eq!(
        record.ops[0].outcome.as_ref().and_then(|o| o.reason),
        Some(ReasonCode::ChangeSuperseded)
    );
    assert_eq!(
        record.live_op().map(|op| op.id.clone()),
        Some(change().op(2))
    );
}

#[test]
fn nothing_follows_a_merge_but_reading() {
    let merged = [
        start(),
        request(1),
        claim("r1", 1),
        candidate("r1", 1, 1),
        outcome("r1", 1, OpState::Merged),
    ];
    for after in [
        request(2),
        step("ann", StepBody::Abandon),
        step(
            "bob",
            StepBody::Adopt {
                actor: "bob".into(),
            },
        ),
    ] {
        let mut steps = merged.to_vec();
        steps.push(after);
        assert!(fold(&steps).is_err());
    }
    // A merge needs a candidate, and an outcome must end the operation.
    assert!(
        fold(&[
            start(),
            request(1),
            claim("r1", 1),
            outcome("r1", 1, OpState::Merged)
        ])
        .is_err()
    );
    assert!(
        fold(&[
            start(),
            request(1),
            claim("r1", 1),
            outcome("r1", 1, OpState::Running)
        ])
        .is_err()
    );
}

#[test]
fn only_the_holder_abandons_and_an_abandon_ends_the_live_operation() {
    let by_other = step("bob", StepBody::Abandon);
    assert!(fold(&[start(), request(1), by_other]).is_err());
    let record =
        fold(&[start(), request(1), step("ann", StepBody::Abandon)]).expect("the holder abandons");
    assert!(record.abandoned && record.ended());
    assert_eq!(record.ops[0].state, OpState::Superseded);
    // Adopting reopens it for the adopter, who may then request again.
    let adopt = step(
        "bob",
        StepBody::Adopt {
            actor: "bob".into(),
        },
    );
    let mut again = request(2);
    again.by = "bob".into();
    let record = fold(&[
        start(),
        request(1),
        step("ann", StepBody::Abandon),
        adopt,
        again,
    ])
    .expect("adopted");
    assert_eq!(record.actor, "bob");
    assert!(!record.abandoned);
}

#[test]
fn a_check_must_name_the_latest_candidate() {
    let check = |attempt| {
        step(
            "r1",
            StepBody::Check {
                op: change().op(1),
                candidate: change().op(1).candidate(attempt),
                check: "unit".into(),
                environment: "linux".into(),
                verdict: Verdict::Pass,
                why: "ok".into(),
            },
        )
    };
    let base = [
        start(),
        request(1),
        claim("r1", 1),
        candidate("r1", 1, 1),
        candidate("r1", 1, 2),
    ];
    let mut stale = base.to_vec();
    stale.push(check(1));
    assert!(fold(&stale).is_err());
    let mut fresh = base.to_vec();
    fresh.push(check(2));
    assert_eq!(
        fold(&fresh).expect("a check on the latest").ops[0]
            .checks
            .len(),
        1
    );
}

#[test]
fn steps_round_trip_through_commit_messages() {
    let steps = [
        start(),
        request(1),
        claim("r1", 1),
        candidate("r1", 1, 1),
        outcome("r1", 1, OpState::Blocked),
    ];
    for original in steps {
        let message = original.to_message();
        assert!(message.starts_with("bay: "), "{message}");
        assert_eq!(Step::from_message(&message), Ok(original));
    }
}

#[test]
fn messages_that_are_not_steps_are_refused() {
    for message in [
        "",
        "subject only",
        "bay: x\n\nnot json",
        "bay: x\n\n{\"schema\":\"bay.step/2\"}",
    ] {
        assert!(Step::from_message(message).is_err(), "{message:?}");
    }
    let other_schema = start().to_message().replace("bay.step/1", "bay.step/9");
    assert!(Step::from_message(&other_schema).is_err());
}

#[test]
fn a_remembered_step_is_the_read_of_that_very_message() {
    let messages = [
        claim("r1", 1).to_message(),
        claim("r2", 1).to_message(),
        claim("r1", 1)
            .to_message()
            .replace("bay.step/1", "bay.step/9"),
    ];
    let read = || {
        messages
            .iter()
            .map(|m| Step::from_message(m))
            .collect::<Vec<_>>()
    };
    let fresh = read();
    assert_eq!(fresh[0], Ok(claim("r1", 1)));
    assert_eq!(fresh[1], Ok(claim("r2", 1)));
    assert!(fresh[2].is_err());
    let remembered = crate::memo::remembering(|| {
        let first = read();
        let kept = crate::memo::remembered::<Result<Step, StepParseError>>();
        assert_eq!(kept, Some(3));
        assert_eq!(read(), first);
        assert_eq!(
            crate::memo::remembered::<Result<Step, StepParseError>>(),
            kept
        );
        first
    });
    assert_eq!(remembered, fresh);
}

#[test]
fn append_extends_a_record_as_a_fold_would() {
    let steps = [start(), request(1), claim("r1", 1), candidate("r1", 1, 1)];
    let mut record = fold(&steps[..2]).expect("folds");
    for step in &steps[2..] {
        record.append(step).expect("appends");
    }
    assert_eq!(record, fold(&steps).expect("folds"));
    assert!(record.append(&request(9)).is_err());
}

fn any_step() -> impl Strategy<Value = Step> {
    let runner = prop_oneof![Just("r1"), Just("r2"), Just("ann")];
    (runner, 0u8..9, 1u32..3, 1u32..3).prop_map(|(by, kind, n, attempt)| match kind {
        0 => start(),
        1 => request(n),
        2 => claim(by, n),
        3 => step(by, StepBody::Heartbeat { op: change().op(n) }),
        4 => candidate(by, n, attempt),
        5 => outcome(by, n, OpState::Merged),
        6 => outcome(by, n, OpState::Blocked),
        7 => step(by, StepBody::Abandon),
        _ => step(
            by,
            StepBody::Release {
                op: change().op(n),
                reason: None,
                why: String::new(),
                behind: None,
                detail: None,
            },
        ),
    })
}

proptest! {
    /// Any sequence folds or is refused; it never panics, and a refusal names a step inside it.
    #[test]
    fn folding_never_panics(steps in proptest::collection::vec(any_step(), 0..12)) {
        match fold(&steps) {
            Ok(record) => {
                prop_assert_eq!(record.steps, steps.len());
                prop_assert!(record.ops.iter().filter(|op| op.state == OpState::Merged).count() <= 1);
            }
            Err(error) => prop_assert!(error.step < steps.len().max(1)),
        }
    }
}

/// A release by `r1` of operation 1, for `reason`, that queues it behind `behind`.
fn release_behind(reason: Option<ReasonCode>, behind: Option<u64>) -> Step {
    step(
        "r1",
        StepBody::Release {
            op: change().op(1),
            reason,
            why: "past the deadline".into(),
            behind,
            detail: None,
        },
    )
}

#[test]
fn an_operation_past_its_deadline_loses_its_place_and_only_ever_moves_back() {
    let deadline = Some(ReasonCode::QueueDeadlineExceeded);
    let record = fold(&[start(), request(1), claim("r1", 1)]).expect("a claim");
    assert_eq!(record.ops[0].queue_key(), (1, false, 1));
    let lost = |behind, reason| {
        fold(&[
            start(),
            request(1),
            claim("r1", 1),
            release_behind(reason, Some(behind)),
        ])
    };
    let record = lost(7, deadline).expect("moved back behind place 7");
    assert_eq!(record.ops[0].queue_key(), (7, true, 1));
    assert!(
        (7, true, 1) > (7, false, 7),
        "behind the place it names, ahead of place 8"
    );
    assert!((7, true, 1) < (8, false, 8));
    // Never ahead of where it stood, and only for a release past the deadline.
    let again = fold(&[
        start(),
        request(1),
        claim("r1", 1),
        release_behind(deadline, Some(7)),
        claim("r1", 1),
        release_behind(deadline, Some(5)),
    ]);
    let error = again.expect_err("moving ahead is refused");
    assert!(error.why.contains("may not move ahead"), "{error}");
    let error = lost(7, None).expect_err("a plain release keeps its place");
    assert!(
        error.why.contains("only a release past the deadline"),
        "{error}"
    );
    // A later plain release leaves the place it lost as it was.
    let record = fold(&[
        start(),
        request(1),
        claim("r1", 1),
        release_behind(deadline, Some(7)),
        claim("r1", 1),
        release_behind(None, None),
    ])
    .expect("a plain release");
    assert_eq!(record.ops[0].queue_key(), (7, true, 1));
}

#[test]
fn the_timing_of_an_ended_operation_names_each_moment_and_check_run() {
    let at = |step: Step, secs: u64| Step {
        at: Timestamp::from_secs(secs),
        ..step
    };
    let check = step(
        "r1",
        StepBody::Check {
            op: change().op(1),
            candidate: change().op(1).candidate(1),
            check: "unit".into(),
            environment: "linux".into(),
            verdict: Verdict::Pass,
            why: "ok".into(),
        },
    );
    let record = fold(&[
        at(start(), 100),
        at(request(1), 100),
        at(claim("r1", 1), 130),
        at(candidate("r1", 1, 1), 140),
        at(check, 200),
        at(outcome("r1", 1, OpState::Merged), 210),
    ])
    .expect("an honest chain folds");
    let timing = crate::report::timing(&record.ops[0]).expect("an ended operation");
    assert_eq!(
        serde_json::to_value(timing).expect("plain data"),
        serde_json::json!({
            "submitted_at": 100,
            "queued_at": 100,
            "head_at": 130,
            "queue_wait_s": 30,
            "merged_at": 210,
            "checks": [{
                "check": "unit",
                "environment": "linux",
                "candidate": "c7k2m4qa.1.1",
                "started_at": 140,
                "finished_at": 200,
                "verdict": "pass",
            }],
            "attempts": 1,
            "check_s": 60,
            "total_s": 110,
        })
    );
}

#[test]
fn any_runner_may_name_a_live_operation_a_culprit_and_nothing_else_changes() {
    let culprit = |by: &str, n: u32| {
        step(
            by,
            StepBody::Culprit {
                op: change().op(n),
                batch: "k2m4qa7c.1.1".into(),
            },
        )
    };
    let before = fold(&[start(), request(1)]).expect("folds");
    let record = fold(&[start(), request(1), culprit("r2", 1)]).expect("no claim is needed");
    assert!(record.ops[0].culprit);
    let mut unmarked = record.clone();
    unmarked.ops[0].culprit = false;
    unmarked.steps = before.steps;
    assert_eq!(unmarked, before, "only the mark changed");
    // Under another runner's claim too; never on an ended or an unknown operation.
    assert!(fold(&[start(), request(1), claim("r1", 1), culprit("r2", 1)]).is_ok());
    let ended = [
        start(),
        request(1),
        claim("r1", 1),
        outcome("r1", 1, OpState::Blocked),
    ];
    let mut steps = ended.to_vec();
    steps.push(culprit("r2", 1));
    assert!(fold(&steps).is_err());
    assert!(fold(&[start(), request(1), culprit("r2", 2)]).is_err());
}
