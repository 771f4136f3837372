use super::*;
use crate::check::Verdict;
use crate::git::Oid;
use crate::record::{Step, StepBody};
use crate::result::OpState;
use proptest::prelude::*;
use serde_json::json;

const DAY_S: u64 = 24 * 3600;

fn oid(n: u8) -> Oid {
    Oid::parse(&format!("{n:040x}")).expect("forty hex digits")
}

/// One change's chain, written step by step at the times (seconds) a test gives.
struct Chain {
    change: ChangeId,
    steps: Vec<Step>,
}

impl Chain {
    fn start(n: u8, actor: &str, at_s: u64) -> Chain {
        let change = ChangeId::from_entropy([n, 0, 0, 0, 1]);
        let mut chain = Chain {
            change,
            steps: Vec::new(),
        };
        chain.push(
            actor,
            at_s,
            StepBody::Start {
                intent: format!("task {n}"),
                actor: actor.into(),
                paths: vec!["src/".into()],
                base: oid(1),
                generation: 1,
                supersedes: None,
                fixes: None,
                reverts: None,
                after: Vec::new(),
            },
        );
        chain
    }

    fn push(&mut self, by: &str, at_s: u64, body: StepBody) -> &mut Chain {
        self.steps.push(Step {
            change: self.change.clone(),
            at: Timestamp::from_secs(at_s),
            by: by.into(),
            nonce: self.steps.len() as u64,
            body,
        });
        self
    }

    fn request(&mut self, at_s: u64) -> &mut Chain {
        let actor = self.steps[0].by.clone();
        let op = self.change.op(1);
        self.push(
            &actor,
            at_s,
            StepBody::Request {
                op,
                draft: oid(2),
                base: oid(1),
                seq: 1,
            },
        )
    }

    fn claim(&mut self, at_s: u64) -> &mut Chain {
        let op = self.change.op(1);
        self.push("runner", at_s, StepBody::Claim { op })
    }

    fn candidate(&mut self, at_s: u64) -> &mut Chain {
        let op = self.change.op(1);
        let candidate = op.candidate(1);
        self.push(
            "runner",
            at_s,
            StepBody::Candidate {
                op,
                candidate,
                base: oid(1),
                base_tree: oid(3),
                commit: oid(4),
                tree: oid(5),
            },
        )
    }

    fn check(&mut self, at_s: u64, name: &str) -> &mut Chain {
        let op = self.change.op(1);
        let candidate = op.candidate(1);
        self.push(
            "runner",
            at_s,
            StepBody::Check {
                op,
                candidate,
                check: name.into(),
                environment: "linux".into(),
                verdict: Verdict::Pass,
                why: String::new(),
            },
        )
    }

    fn end(&mut self, at_s: u64, state: OpState) -> &mut Chain {
        let op = self.change.op(1);
        self.push(
            "runner",
            at_s,
            StepBody::Outcome {
                op,
                state,
                reason: None,
                detail: serde_json::json!({}),
            },
        )
    }

    fn abandon(&mut self, at_s: u64) -> &mut Chain {
        let actor = self.steps[0].by.clone();
        self.push(&actor, at_s, StepBody::Abandon)
    }

    fn record(&self) -> ChangeRecord {
        ChangeRecord::fold(&self.steps).expect("the test's chain folds")
    }
}

#[test]
fn percentiles_of_nothing_are_none() {
    assert_eq!(p50_p90(&[]), None);
    assert_eq!(percentiles(&[], Measured::Merged), None);
}

#[test]
fn percentiles_of_one_value_are_that_value() {
    assert_eq!(p50_p90(&[42]), Some((42, 42)));
}

#[test]
fn percentiles_take_the_nearest_rank_whatever_the_order() {
    assert_eq!(p50_p90(&[2, 1]), Some((1, 2)));
    let tens: Vec<u64> = (1..=10).rev().collect();
    assert_eq!(p50_p90(&tens), Some((5, 9)));
    let hundred: Vec<u64> = (1..=100).collect();
    assert_eq!(p50_p90(&hundred), Some((50, 90)));
}

#[test]
fn percentiles_of_ties_are_the_tied_value() {
    assert_eq!(p50_p90(&[7, 7, 7, 7]), Some((7, 7)));
    assert_eq!(p50_p90(&[1, 9, 9, 9, 9]), Some((9, 9)));
}

proptest! {
    #[test]
    fn p50_is_never_above_p90_and_both_are_values(values in prop::collection::vec(any::<u64>(), 0..64)) {
        match p50_p90(&values) {
            None => prop_assert!(values.is_empty()),
            Some((p50, p90)) => {
                prop_assert!(p50 <= p90);
                prop_assert!(values.contains(&p50));
                prop_assert!(values.contains(&p90));
                let max = values.iter().copied().max().unwrap_or(0);
                let min = values.iter().copied().min().unwrap_or(0);
                prop_assert!(min <= p50 && p90 <= max);
            }
        }
    }
}

#[test]
fn nothing_read_is_an_empty_flow_with_nulls() {
    let flow = flow(&[], &[], Timestamp::from_secs(1_000), None);
    assert_eq!(flow["live"], 0);
    assert_eq!(flow["by_actor"], serde_json::json!([]));
    assert_eq!(flow["merged"], 0);
    for key in [
        "cycle_time_s",
        "queue_wait_s",
        "check_time_s",
        "oldest_live",
    ] {
        assert_eq!(flow[key], Value::Null, "{key}");
    }
    assert_eq!(flow["waiting_approval"]["count"], 0);
    assert_eq!(flow["waiting_approval"]["oldest"], Value::Null);
}

/// The reader's clock: forty days after the epoch of these tests, so windows have room.
const NOW_S: u64 = 40 * DAY_S;

fn merged(n: u8, actor: &str, start_s: u64) -> Chain {
    let mut chain = Chain::start(n, actor, start_s);
    chain
        .request(start_s + 100)
        .claim(start_s + 130)
        .candidate(start_s + 140)
        .check(start_s + 150, "unit")
        .check(start_s + 170, "lint")
        .end(start_s + 200, OpState::Merged);
    chain
}

#[test]
fn a_merge_is_counted_and_timed_from_its_steps() {
    let records = [merged(1, "ann", NOW_S - DAY_S).record()];
    let flow = flow(&records, &[], Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["live"], 0);
    assert_eq!(flow["merged"], 1);
    assert_eq!(
        flow["cycle_time_s"],
        serde_json::json!({"p50": 200, "p90": 200, "merged": 1})
    );
    assert_eq!(
        flow["queue_wait_s"],
        serde_json::json!({"p50": 30, "p90": 30, "merged": 1})
    );
    // unit ran 140..150 and lint 150..170.
    assert_eq!(
        flow["check_time_s"],
        serde_json::json!({"p50": 10, "p90": 20, "runs": 2})
    );
    assert_eq!(flow["oldest_live"], Value::Null);
}

#[test]
fn windows_split_merges_by_age() {
    let records = [
        merged(1, "ann", NOW_S - 3 * DAY_S).record(),
        merged(2, "bob", NOW_S - 10 * DAY_S).record(),
        merged(3, "cyd", NOW_S - 35 * DAY_S).record(),
    ];
    let flow = flow(&records, &[], Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["merged"], 1, "only the merge of the last 7 days");
    assert_eq!(
        flow["cycle_time_s"]["merged"], 2,
        "the merges of the last 30"
    );
    assert_eq!(flow["check_time_s"]["runs"], 4);
}

#[test]
fn an_unchecked_merge_adds_no_check_run() {
    let mut chain = Chain::start(1, "ann", NOW_S - 500);
    chain
        .request(NOW_S - 400)
        .claim(NOW_S - 390)
        .candidate(NOW_S - 380)
        .end(NOW_S - 370, OpState::Merged);
    let flow = flow(&[chain.record()], &[], Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["cycle_time_s"]["merged"], 1);
    assert_eq!(flow["check_time_s"], Value::Null);
}

#[test]
fn live_changes_are_counted_per_actor_with_the_oldest_named() {
    let mut queued = Chain::start(1, "ann", NOW_S - 600);
    queued.request(NOW_S - 500);
    let open = Chain::start(2, "ann", NOW_S - 300);
    let bobs = Chain::start(3, "bob", NOW_S - 900);
    let mut abandoned = Chain::start(4, "bob", NOW_S - 5_000);
    abandoned.abandon(NOW_S - 4_000);
    let mut no_effect = Chain::start(5, "cyd", NOW_S - 6_000);
    no_effect
        .request(NOW_S - 5_900)
        .claim(NOW_S - 5_800)
        .end(NOW_S - 5_700, OpState::NoEffect);
    let records: Vec<_> = [&queued, &open, &bobs, &abandoned, &no_effect]
        .iter()
        .map(|chain| chain.record())
        .collect();
    let flow = flow(&records, &[], Timestamp::from_secs(NOW_S), Some(3));
    assert_eq!(flow["live"], 3);
    assert_eq!(
        flow["by_actor"],
        serde_json::json!([
            {"actor": "ann", "live": 2, "limit": 3},
            {"actor": "bob", "live": 1, "limit": 3},
        ])
    );
    assert_eq!(flow["oldest_live"]["change"], bobs.change.to_string());
    assert_eq!(flow["oldest_live"]["age_s"], 900);
    assert_eq!(flow["merged"], 0);
    assert_eq!(flow["cycle_time_s"], Value::Null);
}

#[test]
fn a_superseded_change_and_a_change_read_twice_count_once_or_not_at_all() {
    let old = Chain::start(1, "ann", NOW_S - 600);
    let mut newer = Chain::start(2, "ann", NOW_S - 300);
    if let StepBody::Start { supersedes, .. } = &mut newer.steps[0].body {
        *supersedes = Some(old.change.clone());
    }
    let records = [old.record(), newer.record(), newer.record()];
    let flow = flow(&records, &[], Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["live"], 1);
    assert_eq!(flow["oldest_live"]["change"], newer.change.to_string());
}

#[test]
fn a_step_from_a_clock_ahead_of_the_reader_never_makes_a_negative_time() {
    let records = [merged(1, "ann", NOW_S + 50).record()];
    let flow = flow(&records, &[], Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["merged"], 1);
    assert_eq!(flow["cycle_time_s"]["p50"], 200);
}

/// The event a runner's log holds for the end of `change`'s first operation.
fn logged_end(change: &ChangeId, state: OpState, at_s: u64) -> BayEvent {
    let op = change.op(1);
    crate::event::BayEvent::ended(crate::event::Ended {
        runner: "far-runner",
        change,
        op: &op,
        actor: "ann",
        at: Timestamp::from_secs(at_s),
        state,
        code: None,
        merge: None,
    })
    .expect("an end")
}

#[test]
fn a_log_ends_a_chain_read_before_its_operation_ended() {
    let mut stale = Chain::start(1, "ann", NOW_S - 1_000);
    stale.request(NOW_S - 900);
    let records = [stale.record()];
    let ends = [logged_end(&stale.change, OpState::Merged, NOW_S - 400)];
    let flow = flow(&records, &ends, Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["live"], 0, "{flow}");
    assert_eq!(flow["merged"], 1);
    assert_eq!(
        flow["cycle_time_s"],
        serde_json::json!({"p50": 600, "p90": 600, "merged": 1})
    );
    // The chain never saw the claim, so it carries no wait.
    assert_eq!(flow["queue_wait_s"], Value::Null);
}

#[test]
fn a_log_never_rewrites_an_end_the_chain_holds_and_counts_merges_of_unread_chains() {
    let mut failed = Chain::start(1, "ann", NOW_S - 1_000);
    failed
        .request(NOW_S - 900)
        .claim(NOW_S - 890)
        .end(NOW_S - 880, OpState::Failed);
    let unread = ChangeId::from_entropy([9, 9, 9, 9, 9]);
    let ends = [
        logged_end(&failed.change, OpState::Merged, NOW_S - 100),
        logged_end(&unread, OpState::Merged, NOW_S - 50),
        logged_end(&unread, OpState::Merged, NOW_S - 40),
        logged_end(&unread, OpState::Failed, NOW_S - 30),
    ];
    let flow = flow(&[failed.record()], &ends, Timestamp::from_secs(NOW_S), None);
    assert_eq!(flow["live"], 1, "a failed operation leaves its change live");
    assert_eq!(flow["merged"], 1, "the unread change's merge, once");
    assert_eq!(
        flow["cycle_time_s"],
        Value::Null,
        "no start to time it from"
    );
}

/// A merged chain whose outcome names merge commit `commit` and these coverage gaps.
fn merged_with(n: u8, commit: Oid, gaps: serde_json::Value) -> ChangeRecord {
    let mut chain = Chain::start(n, "ann", 10);
    chain.request(20).claim(30).candidate(40);
    let op = chain.change.op(1);
    chain.push(
        "runner",
        50,
        StepBody::Outcome {
            op,
            state: OpState::Merged,
            reason: None,
            detail: serde_json::json!({ "commit": commit, "coverage_gaps": gaps }),
        },
    );
    chain.record()
}

#[test]
fn flakes_count_each_check_s_flaky_merges_in_the_window_only() {
    let flaky = |check: &str| json!({ "check": check, "environment": "linux", "flaky": true });
    let records = vec![
        merged_with(1, oid(4), json!([flaky("unit")])),
        merged_with(2, oid(6), json!([flaky("unit"), flaky("lint")])),
        // Outside the window, and a gap that is no flake: neither counts.
        merged_with(3, oid(7), json!([flaky("unit")])),
        merged_with(
            4,
            oid(8),
            json!([{ "check": "unit", "environment": "linux", "baseline_failures": [] }]),
        ),
    ];
    let window = BTreeSet::from([oid(4), oid(6), oid(8)]);
    assert_eq!(
        flakes(&records, &window),
        json!([
            { "check": "lint", "environment": "linux", "merges": 1 },
            { "check": "unit", "environment": "linux", "merges": 2 },
        ])
    );
    assert_eq!(flakes(&records, &BTreeSet::new()), json!([]));
}
