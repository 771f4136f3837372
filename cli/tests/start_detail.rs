//! What `bay start` says of the work around a change, with real Git: the live changes whose
//! declared paths overlap it (`detail.overlaps`), and, when it picks a change up again, the
//! main commits it missed (`detail.behind`). Neither refuses anything.

mod support;

use support::*;

#[test]
fn a_start_names_live_changes_whose_paths_overlap() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (live, _) = world.submit(&ann, "ann", "the api", "src/greeting.txt", "Hi\n");
    let bob = world.clone_as("bob");
    let start = bay(
        &bob,
        "bob",
        &["start", "the callers", "--paths", "src/"],
    );
    assert_eq!(start.code, 0, "{start:?}");
    let overlaps = &start.doc["detail"]["overlaps"];
    assert_eq!(overlaps[0]["change"], live.as_str(), "{start:?}");
    assert_eq!(overlaps[0]["intent"], "the api");
    assert_eq!(overlaps[0]["actor"], "ann");
    assert_eq!(overlaps[0]["paths"], serde_json::json!(["src/greeting.txt"]));
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
