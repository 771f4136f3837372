//! What bay says of the work around a change, with real Git: at `bay start`, the live changes
//! whose declared paths overlap it (`detail.overlaps`) and, when it picks a change up again,
//! the main commits it missed (`detail.behind`); at `bay status`, a conflict with main found
//! before the operation reaches the head (`operation.conflict`). None of them refuses anything.

mod support;

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
