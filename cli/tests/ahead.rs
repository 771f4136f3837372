//! `[runner] ahead` with real Git: a runner that does not hold the head checks the entry behind
//! it on main with the head merged, and when main matches that prediction the entry merges on
//! that evidence with no new run.

mod support;

use bay_core::id::{ChangeId, OpId};
use bay_core::record::{Step, StepBody};
use bay_core::time::Timestamp;
use serde_json::Value;
use support::*;

/// A remote whose runners check two entries ahead, under a policy that lets unsigned evidence
/// be reused.
fn world_ahead() -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", &format!("{CONFIG}ahead = 2\n"), false),
        (
            ".bay/policy.toml",
            &policy("\n[policy]\nreuse_unsigned = true\n"),
            false,
        ),
        (".bay/check", CHECK, true),
    ])
}

/// Appends a claim by runner `other` to `change`'s chain on the remote, as a runner that is
/// still at work on it would have: the next runner sees a fresh claim and must wait a lease.
fn claimed_by_other(world: &World, change: &str) {
    let chain = format!("refs/bay/changes/{change}");
    let tip = world.remote_ref(&chain).expect("the chain");
    let op = world
        .chain(change)
        .iter()
        .find(|step| step["kind"] == "request")
        .and_then(|step| step["op"].as_str().map(str::to_owned))
        .expect("a request");
    let claim = Step {
        change: ChangeId::parse(change).expect("a change id"),
        at: Timestamp(0),
        by: "other".into(),
        nonce: 7,
        body: StepBody::Claim {
            op: OpId::parse(&op).expect("an op id"),
        },
    };
    let commit = world.record_commit(&[&tip], claim.to_message().trim_end());
    git_dir(&world.remote, &["update-ref", &chain, &commit]);
}

/// The evidence records of `files` the runner (the admin clone's) left on the remote.
fn records(world: &World) -> Vec<Value> {
    world
        .evidence("admin")
        .into_iter()
        .filter(|record| record["check"] == "files")
        .collect()
}

/// Two changes queued, the first writing `greeting` into `src/greeting.txt`, the second
/// another file; the first claimed by another runner; then `bay runner run --once` here,
/// which ended with exit 0. Returns the world, both changes and the run.
fn behind_a_held_head(greeting: &str) -> (World, String, String, Ran) {
    let world = world_ahead();
    let ann = world.clone_as("ann");
    let bob = world.clone_as("bob");
    let (first, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", greeting);
    let (second, _) = world.submit(&bob, "bob", "part", "src/farewell.txt", "Bye\n");
    claimed_by_other(&world, &first);
    let run = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(run.code, 0, "{run:?}");
    (world, first, second, run)
}

#[test]
fn the_entry_behind_a_held_head_is_checked_early_and_merges_on_that_run() {
    // The head is another runner's: this one checks the entry behind it, then, once the
    // claim has been still for a whole lease, takes the head over and merges both.
    let (world, first, second, run) = behind_a_held_head("Hi\n");
    assert_eq!(world.merges_of(&first), 1);
    assert_eq!(world.merges_of(&second), 1);
    let prechecks = run.doc["detail"]["prechecks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(prechecks.len(), 1, "{}", run.doc);
    assert_eq!(prechecks[0]["change"], second.as_str());
    assert_eq!(prechecks[0]["verdict"], "pass");

    // The early run's base was main with the head merged, and it stood for the merge.
    let merged_first = git_dir(&world.remote, &["rev-parse", "main~1^{tree}"]);
    assert_eq!(prechecks[0]["base"]["tree"], merged_first.trim());
    let merged_second = git_dir(&world.remote, &["rev-parse", "main^{tree}"]);
    assert_eq!(prechecks[0]["candidate"]["tree"], merged_second.trim());
    let checks: Vec<String> = world
        .chain(&second)
        .iter()
        .filter(|step| step["kind"] == "check")
        .map(|step| step["why"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(checks.len(), 1, "{checks:?}");
    assert!(checks[0].contains("did not run again"), "{checks:?}");
    assert_eq!(
        records(&world).len(),
        2,
        "one run on the head, one early run on the entry behind it"
    );
}

#[test]
fn a_prediction_main_misses_never_counts() {
    // The head empties a file, which the check fails: main never takes it.
    let (world, first, second, run) = behind_a_held_head("");
    assert_eq!(world.merges_of(&first), 0);
    assert_eq!(world.merges_of(&second), 1);
    let prechecks = run.doc["detail"]["prechecks"].clone();
    assert_eq!(prechecks[0]["change"], second.as_str(), "{}", run.doc);
    // Predicted on main with the empty file, the early run failed; on main as it is, the
    // entry is another tree, checked again, and its own pass is what merged it.
    assert_eq!(prechecks[0]["verdict"], "product_failure");
    let merged = git_dir(&world.remote, &["rev-parse", "main^{tree}"]);
    assert_ne!(prechecks[0]["candidate"]["tree"], merged.trim());
    let on_merged: Vec<Value> = records(&world)
        .into_iter()
        .filter(|record| record["candidate"]["tree"] == merged.trim())
        .collect();
    assert_eq!(on_merged.len(), 1, "{on_merged:?}");
    assert_eq!(on_merged[0]["verdict"], "pass");
    assert_eq!(
        records(&world).len(),
        3,
        "the head's, the early run's, the entry's own"
    );
}
