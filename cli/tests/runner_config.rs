//! The runner's settings from `.bay/config.toml` on main, with real Git and a real check: the
//! head's progress deadline (`execution_budget_s` plus `publish_window_s`).

mod support;

use support::*;

/// The usual check, slowed down so that it outlasts a one-second budget when `when` holds in
/// the check's folder (a shell test; `true` always).
fn slow_check(when: &str) -> String {
    CHECK.replace(
        "request=$(cat)",
        &format!("request=$(cat)\n{when} && sleep 2"),
    )
}

/// A remote whose head has a one-second budget and no publish window, and whose check is
/// `check`.
fn budget_world(check: &str) -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}execution_budget_s = 1\npublish_window_s = 0\n"),
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", check, true),
    ])
}

#[test]
fn a_head_past_its_progress_deadline_three_times_is_blocked() {
    let world = budget_world(&slow_check("true"));
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(
        status.doc["reason"], "QUEUE_DEADLINE_EXCEEDED",
        "{status:?}"
    );
    assert_eq!(status.doc["detail"]["releases"], 3, "{status:?}");
    assert_eq!(world.merges_of(&change), 0);
    let releases = world
        .chain(&change)
        .iter()
        .filter(|step| step["kind"] == "release" && step["reason"] == "QUEUE_DEADLINE_EXCEEDED")
        .count();
    assert_eq!(releases, 2, "two claims given back, the third time blocked");
}

#[test]
fn a_head_past_its_deadline_lets_the_change_behind_it_merge_first() {
    // Only a tree holding src/slow.txt makes the check outlast the budget.
    let world = budget_world(&slow_check("[ -e src/slow.txt ]"));
    let ann = world.clone_as("ann");
    let (slow, view) = world.submit(&ann, "ann", "slow", "src/slow.txt", "slow\n");
    let bob = world.clone_as("bob");
    let (quick, _) = world.submit(&bob, "bob", "greet", "src/greeting.txt", "Hi\n");
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&quick), 1);
    // The run says what it did.
    assert_eq!(pass.doc["detail"]["merged"], 1, "{pass:?}");
    let say = pass.doc["say"].as_str().unwrap_or_default();
    assert!(say.contains("one change went into main"), "{say}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(
        status.doc["reason"], "QUEUE_DEADLINE_EXCEEDED",
        "{status:?}"
    );
    // The slow change lost its place the first time: the quick one merged before it ended.
    let slow_chain = world.chain(&slow);
    let first_release = slow_chain
        .iter()
        .find(|step| step["kind"] == "release")
        .expect("a release");
    assert!(first_release["behind"].is_u64(), "{first_release}");
    let merged_at = world
        .chain(&quick)
        .iter()
        .rev()
        .find(|step| step["kind"] == "outcome")
        .and_then(|step| step["at"].as_u64())
        .expect("the quick change's outcome");
    let ended_at = slow_chain.last().and_then(|step| step["at"].as_u64());
    let ended_at = ended_at.expect("the slow change's last step");
    assert!(merged_at < ended_at, "{merged_at} before {ended_at}");
}

#[test]
fn a_head_within_its_deadline_merges() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}execution_budget_s = 60\n"),
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", &slow_check("true"), true),
    ]);
    let ann = world.clone_as("ann");
    let (change, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&change), 1);
}

/// A world whose one check runs on the environment `gpu`.
fn gpu_world(config: &str) -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", config, false),
        (
            ".bay/policy.toml",
            &policy("").replace("environment = \"any\"", "environment = \"gpu\""),
            false,
        ),
        (".bay/check", CHECK, true),
    ])
}

#[test]
fn a_machine_that_does_not_serve_the_environment_leaves_the_check_to_one_that_does() {
    let world = gpu_world(CONFIG);
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    git(&world.admin, &["config", "bay.checkEnvironment", "cpu"]);
    for _ in 0..3 {
        let pass = bay(&world.admin, "admin", &["runner", "run", "--once"]);
        assert_eq!(pass.code, 0, "{pass:?}");
        assert!(pass.doc["detail"]["unavailable"].is_string(), "{pass:?}");
    }
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "queued", "{status:?}");
    let claims = world
        .chain(&change)
        .iter()
        .filter(|step| step["kind"] == "claim")
        .count();
    assert_eq!(claims, 0, "a machine that cannot end it never claims it");
    assert_eq!(world.merges_of(&change), 0);

    let gpu = world.clone_as("gpu");
    git(&gpu, &["config", "bay.checkEnvironment", "gpu"]);
    bay(&gpu, "gpu", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&change), 1);
}

#[test]
fn one_empty_environment_serves_nothing() {
    let world = gpu_world(CONFIG);
    let ann = world.clone_as("ann");
    let (change, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    git(&world.admin, &["config", "bay.checkEnvironment", ""]);
    let pass = bay(&world.admin, "admin", &["runner", "run", "--once"]);
    assert!(pass.doc["detail"]["unavailable"].is_string(), "{pass:?}");
    assert_eq!(world.merges_of(&change), 0);
}

fn rendezvous_world(parallel: u32, wait: u32) -> World {
    rendezvous_world_with(&format!("{CONFIG}parallel_checks = {parallel}\n"), "", wait)
}

/// Runs one change through a runner whose machine has no sandbox, with `RENDEZVOUS` set.
fn run_rendezvous(world: &World) -> (String, serde_json::Value) {
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    run_once_with_rendezvous(world);
    (change, bay(&view, "ann", &["status"]).doc)
}

#[test]
fn parallel_checks_run_a_candidate_s_checks_at_once() {
    let world = rendezvous_world(2, 300);
    let (change, status) = run_rendezvous(&world);
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(world.merges_of(&change), 1);
    // Recorded in the policy's order, whichever answered first.
    let checks: Vec<String> = world
        .chain(&change)
        .iter()
        .filter(|step| step["kind"] == "check")
        .map(|step| step["check"].as_str().expect("a check id").to_owned())
        .collect();
    assert_eq!(checks, vec!["a", "b"]);
}

#[test]
fn one_check_at_a_time_by_default() {
    // The same checks, one after another: the first never meets the second.
    let world = rendezvous_world(1, 10);
    let (change, status) = run_rendezvous(&world);
    assert_eq!(status["reason"], "CHECK_FAILED", "{status}");
    assert_eq!(status["detail"]["check"], "a", "{status}");
    assert_eq!(world.merges_of(&change), 0);
}
