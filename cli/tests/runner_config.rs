//! The runner's settings from `.bay/config.toml` on main, with real Git and a real check: the
//! head's progress deadline (`execution_budget_s` plus `publish_window_s`).

mod support;

use support::*;

/// The usual check, slowed down so that it outlasts a one-second budget.
fn slow_check() -> String {
    CHECK.replace("request=$(cat)", "request=$(cat)\nsleep 2")
}

#[test]
fn a_head_past_its_progress_deadline_three_times_is_blocked() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}execution_budget_s = 1\npublish_window_s = 0\n"),
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", &slow_check(), true),
    ]);
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
fn a_head_within_its_deadline_merges() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}execution_budget_s = 60\n"),
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", &slow_check(), true),
    ]);
    let ann = world.clone_as("ann");
    let (change, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&change), 1);
}
