//! `bay start --after` with real Git: a dependent submitted first waits, passed over at the
//! head, until what it names merges; then it merges with a `Bay-After:` trailer. One whose
//! named change was abandoned can never merge as it is.

mod support;

use std::path::PathBuf;

use support::*;

/// Ann's change `api`, open and unrequested, and Bob's change that names it with `--after`,
/// with its view.
fn api_and_callers(world: &World) -> (PathBuf, String, PathBuf, String, PathBuf) {
    let ann = world.clone_as("ann");
    let (api, _) = world.edited(&ann, "ann", "the api", "src/api.txt", "api\n", &[]);
    let bob = world.clone_as("bob");
    let (callers, view) = world.edited(
        &bob,
        "bob",
        "the callers",
        "src/callers.txt",
        "calls the api\n",
        &["--after", &api],
    );
    let queued = bay(&view, "bob", &["merge"]);
    assert_eq!(queued.doc["decision"], "queued", "{queued:?}");
    (ann, api, bob, callers, view)
}

#[test]
fn a_dependent_submitted_first_merges_only_after_what_it_names() {
    let world = World::standard();
    let (ann, api, _, callers, view) = api_and_callers(&world);
    // A change behind it is not held up.
    let carol = world.clone_as("carol");
    let (other, _) = world.submit(&carol, "carol", "other", "src/other.txt", "More\n");

    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&callers), 0, "the api has not merged");
    assert_eq!(
        world.merges_of(&other),
        1,
        "passed over, it holds no one up"
    );
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["reason"], "DEPENDENCY_PENDING", "{status:?}");
    assert_eq!(status.doc["waiting_for"], "dependencies", "{status:?}");
    assert_eq!(status.doc["detail"]["pending"], serde_json::json!([api]));
    let waited = bay(&view, "bob", &["merge", "--wait"]);
    assert_eq!(waited.doc["reason"], "DEPENDENCY_PENDING", "{waited:?}");

    let merged = bay(&ann, "ann", &["merge", &api, "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&callers), 1);
    let message = git_dir(&world.remote, &["log", "-1", "--format=%B", "main"]);
    assert!(message.contains(&format!("Bay-After: {api}")), "{message}");
}

#[test]
fn a_dependent_of_an_abandoned_change_is_refused_and_an_unknown_one_fails() {
    let world = World::standard();
    let (ann, api, bob, callers, view) = api_and_callers(&world);
    let abandoned = bay(&ann, "ann", &["abandon", &api]);
    assert_eq!(abandoned.code, 0, "{abandoned:?}");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["reason"], "DEPENDENCY_ABANDONED", "{status:?}");
    assert_eq!(status.doc["detail"]["ended"], serde_json::json!([api]));
    assert_eq!(world.merges_of(&callers), 0);

    let unknown = bay(
        &bob,
        "bob",
        &["start", "more", "--paths", "src/", "--after", "zzzzzzzz"],
    );
    assert_eq!(unknown.code, 20, "{unknown:?}");
}
