//! `[limits]` through core's machines against the simulator's Git model: `bay merge` refuses a
//! draft over a cap of the policy at its base before it writes anything, measures nothing when
//! the policy sets no cap, and the runner refuses a candidate over a cap that main's policy
//! gained after the request was queued.

use bay_core::git::refs;
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::runner::{RunMode, Runner, RunnerConfig};
use bay_core::machine::{Action, Event, Machine};
use bay_core::reason::ReasonCode;
use bay_core::result::{Decision, OpState};
use bay_core::time::Timestamp;
use bay_sim::bench::{Bench, MAIN};

const UNCHECKED: &str = "revision = 1\nunchecked = true\n";

fn capped(limits: &str) -> String {
    format!("{UNCHECKED}\n[limits]\n{limits}")
}

/// Runs `bay merge` on a change whose view holds `edits`, and returns its result, the names
/// of the actions it asked for, and whether the remote's refs stayed as they were.
fn merge(
    bench: &mut Bench,
    edits: &[(&str, &str)],
) -> (bay_core::result::BayResult, Vec<&'static str>, bool) {
    let change = bench.start("grow", 7);
    for (path, text) in edits {
        bench.edit(&change, path, text);
    }
    let before = bench.git.remote.refs.clone();
    let mut merge = Merge::new(
        MergeInput {
            change,
            actor: "ann".into(),
            main: MAIN.into(),
            entropy: 8,
        },
        Timestamp(2),
    );
    let mut asked = Vec::new();
    while merge.outcome().is_none() {
        let (id, action) = merge.poll_action().expect("a command waits on an action");
        asked.push(action.name());
        let completion = bench.answer(&action).expect("no check");
        merge
            .handle(Timestamp(2), Event::Done(id, completion))
            .expect("a faithful model");
    }
    let untouched = bench.git.remote.refs == before;
    (merge.outcome().cloned().expect("ended"), asked, untouched)
}

#[test]
fn a_draft_over_a_cap_at_its_base_is_refused_and_nothing_is_written() {
    let mut bench = Bench::new(Some(&capped("max_added_lines = 2\n")));
    let (result, asked, untouched) = merge(&mut bench, &[("src/a.txt", "a\none\ntwo\nthree\n")]);
    assert_eq!(result.decision, Decision::Blocked, "{result:?}");
    assert_eq!(result.reason, Some(ReasonCode::ChangeTooLarge));
    assert_eq!(
        result.detail["exceeded"],
        serde_json::json!([{"cap": "max_added_lines", "max": 2, "value": 3, "paths": ["src/a.txt"]}])
    );
    assert!(!asked.contains(&"push"), "{asked:?}");
    assert!(untouched, "the remote is as it was");
}

#[test]
fn a_draft_within_its_caps_is_queued_and_no_cap_means_no_measuring() {
    let mut bench = Bench::new(Some(&capped("max_files = 1\nmax_file_mib = 1\n")));
    let (result, asked, _) = merge(&mut bench, &[("src/a.txt", "a\nmore\n")]);
    assert_eq!(result.decision, Decision::Queued, "{result:?}");
    assert!(asked.contains(&"read-stats"), "{asked:?}");

    let mut bench = Bench::new(Some(UNCHECKED));
    let (result, asked, _) = merge(&mut bench, &[("src/a.txt", "a\nmore\n")]);
    assert_eq!(result.decision, Decision::Queued, "{result:?}");
    assert!(!asked.contains(&"read-stats"), "{asked:?}");
}

#[test]
fn a_binary_file_is_judged_by_its_size_alone() {
    let mut bench = Bench::new(Some(&capped("max_added_lines = 1\nmax_file_mib = 1\n")));
    let small = format!("\0{}", "x\n".repeat(1000));
    let (result, _, _) = merge(&mut bench, &[("src/image.bin", &small)]);
    assert_eq!(
        result.decision,
        Decision::Queued,
        "its 1,000 lines do not count: {result:?}"
    );

    let mut bench = Bench::new(Some(&capped("max_added_lines = 1\nmax_file_mib = 1\n")));
    let big = format!("\0{}", "x".repeat(1024 * 1024));
    let (result, _, _) = merge(&mut bench, &[("src/image.bin", &big)]);
    assert_eq!(
        result.reason,
        Some(ReasonCode::ChangeTooLarge),
        "{result:?}"
    );
    assert_eq!(result.detail["exceeded"][0]["cap"], "max_file_mib");
    assert_eq!(result.detail["exceeded"][0]["value"], 1.1);
    assert_eq!(result.detail["exceeded"].as_array().map(Vec::len), Some(1));
}

#[test]
fn the_runner_refuses_a_candidate_over_a_cap_main_gained_after_the_request() {
    let mut bench = Bench::new(Some(UNCHECKED));
    let op = bench.submit(
        "grow",
        &[("src/a.txt", "a\none\ntwo\n"), ("src/b.txt", "b\nc\n")],
    );
    let tightened = capped("max_files = 1\n");
    bench
        .git
        .remote
        .outside_push(&mut bench.git.store, MAIN, ".bay/policy.toml", &tightened);
    let main = bench.main();

    let mut cfg = RunnerConfig::new("r", MAIN, 1);
    cfg.mode = RunMode::Once;
    let mut clock = Timestamp(1_000);
    let mut runner = Runner::new(cfg, clock);
    runner.handle(clock, Event::Tick).expect("a tick");
    while runner.outcome().is_none() {
        let Some((id, action)) = runner.poll_action() else {
            clock = runner
                .poll_timeout()
                .expect("a pass waits on an action or a time")
                .at;
            runner.handle(clock, Event::Tick).expect("a tick");
            continue;
        };
        assert!(!matches!(action, Action::RunCheck(_)), "no check runs");
        let completion = bench.answer(&action).expect("no check");
        runner
            .handle(clock, Event::Done(id, completion))
            .expect("a faithful model");
    }
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::ChangeTooLarge))
    );
    let record = bench.record(&op.change);
    let operation = record.op(&op).expect("recorded");
    assert!(operation.candidates.is_empty(), "no candidate goes up");
    let detail = &operation.outcome.as_ref().expect("ended").detail;
    assert_eq!(
        detail["exceeded"],
        serde_json::json!([{"cap": "max_files", "max": 1, "value": 2, "paths": ["src/a.txt", "src/b.txt"]}])
    );
    assert_eq!(bench.main(), main, "main did not move");
    assert!(
        !bench
            .git
            .remote
            .refs
            .keys()
            .any(|name| name.starts_with("refs/bay/queue/0")),
        "the queue place went with the operation"
    );
    assert_eq!(bench.git.remote.get(&refs::landed(&op.change)), None);
}
