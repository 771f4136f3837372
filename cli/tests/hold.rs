//! Holds of main with real Git: a `[[hold]]` in main's `.bay/config.toml` lets only fixes and
//! undos merge, `bay status` and `bay merge --wait` say `MAIN_HELD` with `detail.hold`, and the
//! held change merges once the hold is gone.

mod support;

use std::path::Path;

use support::*;

/// A person commits main's config as `text`, straight to main.
fn set_config(world: &World, text: &str) {
    git(&world.admin, &["fetch", "--quiet", "origin", "main"]);
    git(&world.admin, &["reset", "--quiet", "--hard", "origin/main"]);
    write(&world.admin, ".bay/config.toml", text);
    git(&world.admin, &["commit", "--quiet", "-am", "config"]);
    git(&world.admin, &["push", "--quiet", "origin", "main"]);
}

const HOLD: &str = "\n[[hold]]\nend = \"2099-01-01T00:00:00Z\"\nreason = \"the release freeze\"\n";

#[test]
fn a_held_main_takes_only_fixes_and_says_why_the_rest_waits() {
    let world = World::standard();
    let broken = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    set_config(&world, &format!("{CONFIG}{HOLD}"));

    let carol = world.clone_as("carol");
    let (plain, plain_view) = world.submit(&carol, "carol", "other", "src/other.txt", "More\n");
    let bob = world.clone_as("bob");
    let start = bay(
        &bob,
        "bob",
        &["start", "fix it", "--fixes", &broken, "--paths", "src/"],
    );
    let view = Path::new(start.doc["detail"]["view"].as_str().expect("a view")).to_owned();
    write(&view, "src/greeting.txt", "Hi there\n");
    let queued = bay(&view, "bob", &["merge"]);
    assert_eq!(queued.doc["decision"], "queued", "{queued:?}");
    let fix = start.doc["change"].as_str().expect("a change").to_owned();

    // The plain change was asked for first, yet the fix alone goes in.
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&fix), 1);
    assert_eq!(world.merges_of(&plain), 0);

    let status = bay(&plain_view, "carol", &["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert_eq!(status.doc["decision"], "queued", "{status:?}");
    assert_eq!(status.doc["reason"], "MAIN_HELD", "{status:?}");
    assert_eq!(status.doc["waiting_for"], "hold", "{status:?}");
    let hold = &status.doc["detail"]["hold"];
    assert_eq!(hold["source"], "window", "{status:?}");
    assert_eq!(hold["reason"], "the release freeze");
    assert_eq!(hold["end"], "2099-01-01T00:00:00Z");
    let waited = bay(&plain_view, "carol", &["merge", "--wait"]);
    assert_eq!(waited.code, 0, "{waited:?}");
    assert_eq!(waited.doc["reason"], "MAIN_HELD", "{waited:?}");
    assert_eq!(world.merges_of(&plain), 0);

    // A hold removed on main ends at once.
    set_config(&world, CONFIG);
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&plain), 1);
}

#[test]
fn a_hold_that_ended_holds_nothing() {
    let world = World::standard();
    set_config(
        &world,
        &format!("{CONFIG}\n[[hold]]\nend = \"2001-01-01T00:00:00Z\"\nreason = \"long ago\"\n"),
    );
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let status = bay(&view, "ann", &["status"]);
    assert!(status.doc["detail"]["hold"].is_null(), "{status:?}");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&change), 1);
}
