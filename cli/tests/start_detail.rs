//! What bay says of the work around a change, with real Git: at `bay start`, the live changes
//! whose declared paths overlap it (`detail.overlaps`) and, when it picks a change up again,
//! the main commits it missed (`detail.behind`); at `bay status`, a conflict with main found
//! before the operation reaches the head (`operation.conflict`). None of them refuses anything.
//! A start also releases clean views of changes that ended past the retention window
//! (`detail.released_views`).

mod support;

use std::time::Duration;

use support::*;

#[test]
fn a_start_names_live_changes_whose_paths_overlap() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (live, _) = world.submit(&ann, "ann", "the api", "src/greeting.txt", "Hi\n");
    let bob = world.clone_as("bob");
    let start = bay(&bob, "bob", &["start", "the callers", "--paths", "src/"]);
    assert_eq!(start.code, 0, "{start:?}");
    let overlaps = &start.doc["detail"]["overlaps"];
    assert_eq!(overlaps[0]["change"], live.as_str(), "{start:?}");
    assert_eq!(overlaps[0]["intent"], "the api");
    assert_eq!(overlaps[0]["actor"], "ann");
    assert_eq!(
        overlaps[0]["paths"],
        serde_json::json!(["src/greeting.txt"])
    );
    let apart = bay(&bob, "bob", &["start", "the docs", "--paths", "docs/"]);
    assert_eq!(apart.code, 0, "{apart:?}");
    assert!(apart.doc["detail"]["overlaps"].is_null(), "{apart:?}");
}

#[test]
fn a_change_picked_up_again_counts_the_main_commits_it_missed() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let start = bay(&ann, "ann", &["start", "slow work", "--paths", "docs/"]);
    let change = start.doc["change"].as_str().expect("a change").to_owned();
    assert!(
        start.doc["detail"]["behind"].is_null(),
        "a new change missed nothing"
    );
    world.merged("bob", "one", "src/greeting.txt", "Hi\n");
    world.merged("carol", "two", "src/other.txt", "More\n");
    let again = bay(&ann, "ann", &["start", &change]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.doc["detail"]["behind"], 2, "{again:?}");
}

#[test]
fn paths_named_again_on_picking_a_change_up_widen_its_view() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let start = bay(&ann, "ann", &["start", "greet", "--paths", "docs/"]);
    let view = std::path::PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
    assert!(
        !view.join("src/greeting.txt").exists(),
        "only docs/ at first"
    );
    let again = bay(&ann, "ann", &["start", "greet", "--paths", "src/"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.doc["change"], start.doc["change"], "the same change");
    assert!(
        view.join("src/greeting.txt").exists(),
        "src/ joined the view"
    );
    let patterns = git(&view, &["sparse-checkout", "list"]);
    assert!(
        patterns.contains("/docs") && patterns.contains("/src"),
        "{patterns}"
    );
}

#[test]
fn a_queued_change_that_conflicts_with_main_says_so_before_it_reaches_the_head() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (_, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    // Main changes the same line meanwhile.
    world.merged("bob", "greet too", "src/greeting.txt", "Hey\n");
    let queued = bay(&view, "ann", &["merge"]);
    assert_eq!(queued.doc["decision"], "queued", "{queued:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(
        status.doc["decision"], "queued",
        "it keeps its place: {status:?}"
    );
    let conflict = &status.doc["detail"]["operation"]["conflict"];
    assert_eq!(conflict["reason"], "MERGE_CONFLICT", "{status:?}");
    assert_eq!(conflict["paths"], serde_json::json!(["src/greeting.txt"]));

    // A queued change that merges cleanly says nothing of the kind.
    let carol = world.clone_as("carol");
    let (_, clean) = world.submit(&carol, "carol", "other", "src/other.txt", "More\n");
    let status = bay(&clean, "carol", &["status"]);
    assert!(
        status.doc["detail"]["operation"]["conflict"].is_null(),
        "{status:?}"
    );
}

/// A start releases this machine's clean views of changes that ended `[retention] window_s` ago
/// or more, and names them; a view with work in it stays, and so does every view of a change
/// that ended more recently.
#[test]
fn a_start_releases_clean_views_of_changes_that_ended_past_the_retention_window() {
    let config = format!("{CONFIG}\n[retention]\nwindow_s = 1\n");
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/other.txt", "Other\n", false),
        ("docs/readme.md", "Read me\n", false),
        (".bay/config.toml", &config, false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ]);
    let ann = world.clone_as("ann");
    let (done, done_view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(
        bay(&done_view, "ann", &["merge", "--wait"]).doc["decision"],
        "merged"
    );
    let (kept, kept_view) = world.edited(&ann, "ann", "other", "src/other.txt", "More\n", &[]);
    assert_eq!(
        bay(&kept_view, "ann", &["merge", "--wait"]).doc["decision"],
        "merged"
    );
    // Work left in an ended change's view keeps it.
    write(&kept_view, "src/other.txt", "Even more\n");
    let first = bay(&ann, "ann", &["start", "docs", "--paths", "docs/"]);
    let open = first.doc["change"].as_str().expect("a change").to_owned();
    // Once the window has passed, a start releases the clean view and names it.
    let mut released = first.doc["detail"]["released_views"].clone();
    wait_until(
        Duration::from_secs(20),
        "the retention window to pass",
        || {
            if released != serde_json::json!([]) {
                return true;
            }
            let start = bay(&ann, "ann", &["start", &open]);
            assert_eq!(start.code, 0, "{start:?}");
            released = start.doc["detail"]["released_views"].clone();
            false
        },
    );
    assert_eq!(released, serde_json::json!([done]));
    assert!(!done_view.exists(), "the released view is gone");
    assert!(kept_view.exists(), "a view with work in it stays ({kept})");
}

#[test]
fn a_view_of_a_change_that_ended_within_the_window_stays() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (_, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(
        bay(&view, "ann", &["merge", "--wait"]).doc["decision"],
        "merged"
    );
    let start = bay(&ann, "ann", &["start", "next", "--paths", "docs/"]);
    assert_eq!(start.doc["detail"]["released_views"], serde_json::json!([]));
    assert!(view.exists(), "a week has not passed");
}
