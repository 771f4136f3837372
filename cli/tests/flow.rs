//! The flow of work in plain `bay status` (`detail.flow`), with real Git: live changes per
//! actor, the merges and their times, the oldest live change, read from the change records the
//! clone holds. A fresh clone shows only what its own fetches brought, and the flow fetches
//! nothing of its own.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

/// The changes this clone's mirror holds, by id.
fn held_changes(clone: &Path) -> Vec<String> {
    git(
        clone,
        &[
            "for-each-ref",
            "--format=%(refname:lstrip=5)",
            "refs/bay-mirror/origin/bay/changes",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

fn flow_of(clone: &Path, actor: &str) -> Value {
    let status = bay(clone, actor, &["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    status.doc["detail"]["flow"].clone()
}

#[test]
fn status_shows_the_flow_of_the_changes_this_clone_holds() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    // One change merged through the checked policy, by a runner in this clone.
    let (merged, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let pass = bay(&ann, "ann", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&merged), 1);
    // One queued, one only started, and one abandoned.
    let (queued, _) = world.submit(&ann, "ann", "other", "src/other.txt", "More\n");
    let (open, _) = world.edited(&ann, "ann", "notes", "docs/notes.md", "n\n", &[]);
    let (abandoned, _) = world.edited(&ann, "ann", "dropped", "docs/x.md", "x\n", &[]);
    let abandon = bay(&ann, "ann", &["abandon", &abandoned]);
    assert_eq!(abandon.code, 0, "{abandon:?}");
    // Another agent's queued change reaches this clone through the queue status reads.
    let bob = world.clone_as("bob");
    let (bobs, _) = world.submit(&bob, "bob", "bob's", "docs/bob.md", "b\n");

    let flow = flow_of(&ann, "ann");
    assert_eq!(flow["live"], 3, "{flow}");
    assert_eq!(
        flow["by_actor"],
        serde_json::json!([
            {"actor": "ann", "live": 2, "limit": null},
            {"actor": "bob", "live": 1, "limit": null},
        ]),
        "{flow}"
    );
    assert_eq!(flow["merged"], 1, "{flow}");
    let cycle = &flow["cycle_time_s"];
    assert_eq!(cycle["merged"], 1, "{flow}");
    assert!(cycle["p50"].as_u64() <= cycle["p90"].as_u64(), "{flow}");
    assert_eq!(flow["queue_wait_s"]["merged"], 1, "{flow}");
    assert!(flow["check_time_s"]["runs"].as_u64() >= Some(1), "{flow}");
    let oldest = &flow["oldest_live"];
    assert_eq!(oldest["change"], queued.as_str(), "{flow}");
    assert!(oldest["age_s"].is_u64(), "{flow}");
    assert_eq!(flow["waiting_approval"]["count"], 0, "{flow}");
    for change in [&open, &abandoned, &bobs] {
        assert_ne!(oldest["change"], change.as_str());
    }

    // A fresh clone holds only what its status fetched: the queued changes, not the merge.
    let carol = world.clone_as("carol");
    assert!(held_changes(&carol).is_empty());
    let flow = flow_of(&carol, "carol");
    let mut held = held_changes(&carol);
    held.sort();
    let mut queued_now = vec![queued.clone(), bobs.clone()];
    queued_now.sort();
    assert_eq!(held, queued_now, "the flow fetched no chain of its own");
    assert_eq!(flow["live"], 2, "{flow}");
    assert_eq!(flow["merged"], 0, "{flow}");
    assert!(flow["cycle_time_s"].is_null(), "{flow}");
    assert!(flow["check_time_s"].is_null(), "{flow}");
    assert_eq!(flow["oldest_live"]["change"], queued.as_str(), "{flow}");
}

#[test]
fn a_status_that_watches_one_change_in_merge_shows_no_flow_but_plain_status_of_it_does() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    let flow = &status.doc["detail"]["flow"];
    assert_eq!(flow["live"], 1, "{status:?}");
    assert_eq!(flow["oldest_live"]["change"], change.as_str(), "{status:?}");
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    assert!(merge.doc["detail"]["flow"].is_null(), "{merge:?}");
}

#[test]
fn a_change_merged_elsewhere_ends_in_the_flow_once_this_clone_holds_the_runners_log() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let bob = world.clone_as("bob");
    let (bobs, _) = world.submit(&bob, "bob", "bob's", "src/other.txt", "More\n");
    // Ann's status reads the queue, and so holds bob's chain as it stands: queued.
    let flow = flow_of(&ann, "ann");
    assert_eq!(flow["live"], 1, "{flow}");
    assert_eq!(flow["oldest_live"]["change"], bobs.as_str(), "{flow}");
    // A runner elsewhere merges it. Ann's queue no longer names it, so her chain stays old.
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&bobs), 1);
    let flow = flow_of(&ann, "ann");
    assert_eq!(
        flow["live"], 1,
        "what the clone holds, nothing fetched: {flow}"
    );
    // `status --since` fetches the runner logs; from then on the flow reads the merge there.
    let since = bay(&ann, "ann", &["status", "--since"]);
    assert_eq!(since.code, 0, "{since:?}");
    let flow = flow_of(&ann, "ann");
    assert_eq!(flow["live"], 0, "{flow}");
    assert_eq!(flow["merged"], 1, "{flow}");
    assert_eq!(flow["cycle_time_s"]["merged"], 1, "{flow}");
    assert!(flow["oldest_live"].is_null(), "{flow}");
}
