//! The `[agent]` table of main's policy, with real Git: `require_actor` refuses a start whose
//! actor name came from a default (`ACTOR_UNNAMED`), and `max_live_changes` refuses a start
//! that would give the actor one live change too many (`WIP_LIMIT`), counting the change
//! records this clone holds; picking up one's own change adds none.

mod support;

use std::process::Command;

use support::*;

fn world(agent: &str) -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy(&format!("\n[agent]\n{agent}")),
            false,
        ),
        (".bay/check", CHECK, true),
    ])
}

#[test]
fn a_required_name_must_come_from_bay_actor() {
    let world = world("require_actor = true\n");
    let ann = world.clone_as("ann");
    let mut command = Command::new(BAY);
    command
        .current_dir(&ann)
        .args(["--json", "start", "the docs", "--paths", "docs/"])
        .env_remove("BAY_ACTOR")
        .env("USER", "ann");
    let unnamed = held(&mut command, &["start"]);
    assert_eq!(unnamed.code, 10, "{}", unnamed.doc);
    assert_eq!(unnamed.doc["reason"], "ACTOR_UNNAMED");
    assert_eq!(unnamed.doc["detail"]["actor_source"], "user-default");
    assert_eq!(
        git_dir(&world.remote, &["for-each-ref", "refs/bay/changes/"]),
        "",
        "nothing was started"
    );
    let named = bay(&ann, "ann", &["start", "the docs", "--paths", "docs/"]);
    assert_eq!(named.code, 0, "{}", named.doc);
}

#[test]
fn the_live_changes_limit_refuses_a_new_change_but_never_a_pick_up() {
    let world = world("max_live_changes = 2\n");
    let ann = world.clone_as("ann");
    let first = bay(&ann, "ann", &["start", "the docs", "--paths", "docs/"]);
    let second = bay(&ann, "ann", &["start", "the api", "--paths", "src/"]);
    assert_eq!((first.code, second.code), (0, 0), "{first:?} {second:?}");
    let third = bay(&ann, "ann", &["start", "the tests", "--paths", "tests/"]);
    assert_eq!(third.code, 10, "{}", third.doc);
    assert_eq!(third.doc["reason"], "WIP_LIMIT");
    let mut live: Vec<&str> = [&first, &second]
        .iter()
        .filter_map(|ran| ran.doc["change"].as_str())
        .collect();
    live.sort_unstable();
    assert_eq!(third.doc["detail"]["live_changes"], serde_json::json!(live));
    assert_eq!(third.doc["detail"]["limit"], 2);
    // Picking up one's own change adds none.
    let again = bay(&ann, "ann", &["start", "the docs", "--paths", "docs/"]);
    assert_eq!(again.code, 0, "{}", again.doc);
    assert_eq!(again.doc["change"], first.doc["change"]);
    // Another actor has limits of its own.
    let bob = bay(&ann, "bob", &["start", "the tests", "--paths", "tests/"]);
    assert_eq!(bob.code, 0, "{}", bob.doc);
    // Status names each actor's live changes against the limit.
    let status = bay(&ann, "ann", &["status"]);
    let rows = status.doc["detail"]["flow"]["by_actor"].clone();
    assert_eq!(
        rows,
        serde_json::json!([
            {"actor": "ann", "live": 2, "limit": 2},
            {"actor": "bob", "live": 1, "limit": 2},
        ]),
        "{}",
        status.doc
    );
    // An abandoned change no longer counts.
    let view = first.doc["detail"]["view"]
        .as_str()
        .expect("a view")
        .to_owned();
    let abandoned = bay(std::path::Path::new(&view), "ann", &["abandon"]);
    assert_eq!(abandoned.code, 0, "{}", abandoned.doc);
    let fourth = bay(&ann, "ann", &["start", "the notes", "--paths", "notes/"]);
    assert_eq!(fourth.code, 0, "{}", fourth.doc);
}
