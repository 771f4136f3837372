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

/// A person commits a hold plugin to main: `script` as `scripts/bay-hold`, executable, and
/// the config that runs it, with `timeout_s` of `timeout_s`.
fn set_plugin(world: &World, script: &str, timeout_s: u64) {
    set_plugin_at(world, "scripts/bay-hold", script, timeout_s);
}

/// As [`set_plugin`], with the program at `program`.
fn set_plugin_at(world: &World, program: &str, script: &str, timeout_s: u64) {
    git(&world.admin, &["fetch", "--quiet", "origin", "main"]);
    git(&world.admin, &["reset", "--quiet", "--hard", "origin/main"]);
    let config =
        format!("{CONFIG}\n[plugin.hold]\ncommand = \"{program}\"\ntimeout_s = {timeout_s}\n");
    write(&world.admin, ".bay/config.toml", &config);
    write_program(&world.admin, program, script);
    git(&world.admin, &["add", "--all"]);
    git(&world.admin, &["commit", "--quiet", "-m", "hold plugin"]);
    git(&world.admin, &["push", "--quiet", "origin", "main"]);
}

/// A hold plugin that answers `answer` when asked `status`, and fails when asked anything else.
fn answering(answer: &str) -> String {
    format!("#!/bin/sh\n[ \"$1\" = status ] || exit 9\nprintf '%s\\n' '{answer}'\n")
}

const HELD: &str = r#"{"held": true, "reason": "incident 7"}"#;
const CLEAR: &str = r#"{"held": false}"#;

/// `bay merge --wait` in `view` as `actor`: what it gave, checked to be a held wait when `held`.
fn wait_held(view: &Path, actor: &str) -> serde_json::Value {
    let waited = bay(view, actor, &["merge", "--wait"]);
    assert_eq!(waited.code, 0, "{waited:?}");
    assert_eq!(waited.doc["decision"], "queued", "{waited:?}");
    assert_eq!(waited.doc["reason"], "MAIN_HELD", "{waited:?}");
    let hold = waited.doc["detail"]["hold"].clone();
    assert_eq!(hold["source"], "plugin", "{waited:?}");
    assert!(
        hold["end"].is_null(),
        "a plugin's hold has no end: {waited:?}"
    );
    hold
}

#[test]
fn a_hold_plugin_that_answers_held_lets_only_fixes_through_until_it_answers_clear() {
    let world = World::standard();
    let broken = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    set_plugin(&world, &answering(HELD), 10);

    // The plain change rewrites the plugin to answer clear: the plugin runs from main's tip,
    // so a change never lifts a hold for itself.
    let carol = world.clone_as("carol");
    let (plain, plain_view) = world.edited(
        &carol,
        "carol",
        "lift it",
        "scripts/bay-hold",
        &answering(r#"{"held": false, "reason": "lifted by the change itself"}"#),
        &[],
    );
    let hold = wait_held(&plain_view, "carol");
    assert_eq!(hold["reason"], "incident 7");
    assert_eq!(world.merges_of(&plain), 0);

    let status = bay(&plain_view, "carol", &["status"]);
    assert_eq!(status.doc["reason"], "MAIN_HELD", "{status:?}");
    assert_eq!(
        status.doc["detail"]["hold"]["source"], "plugin",
        "{status:?}"
    );
    assert_eq!(status.doc["detail"]["hold"]["reason"], "incident 7");

    // A fix goes through the hold.
    let bob = world.clone_as("bob");
    let (fix, fix_view) = world.edited(
        &bob,
        "bob",
        "fix it",
        "src/greeting.txt",
        "Hi there\n",
        &["--fixes", &broken],
    );
    let merged = bay(&fix_view, "bob", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(world.merges_of(&fix), 1);

    // The runner passes the plain change over while the plugin holds main.
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&plain), 0);

    // Main's own plugin, a new program the plain change does not touch, lifts the hold.
    set_plugin_at(&world, "scripts/clear", &answering(CLEAR), 10);
    let merged = bay(&plain_view, "carol", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(world.merges_of(&plain), 1);
}

#[test]
fn a_hold_plugin_bay_cannot_read_holds_main() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    for (script, timeout_s, why) in [
        (answering("not json"), 10, "is not {"),
        (
            answering(r#"{"held": false, "until": "later"}"#),
            10,
            "is not {",
        ),
        (
            format!("#!/bin/sh\nprintf '%s\\n' '{CLEAR}'\nexit 1\n"),
            10,
            "exited with 1",
        ),
        (
            format!("#!/bin/sh\nsleep 30\nprintf '%s\\n' '{CLEAR}'\n"),
            1,
            "timeout_s",
        ),
        ("#!/no/such/interpreter\n".to_owned(), 10, "could not start"),
    ] {
        set_plugin(&world, &script, timeout_s);
        let hold = wait_held(&view, "ann");
        let reason = hold["reason"].as_str().expect("a reason");
        assert!(reason.contains(why), "{script}: {reason}");
        assert!(reason.contains("counts as held"), "{reason}");
    }
    assert_eq!(world.merges_of(&change), 0);

    set_plugin(&world, &answering(CLEAR), 10);
    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
}

#[test]
fn the_hold_plugin_gets_only_path_and_home_and_runs_outside_the_repository() {
    let world = World::standard();
    // It answers held when it sees anything of the runner's environment but PATH and HOME,
    // lacks either, or runs inside a clone.
    let script = format!(
        "#!/bin/sh\n\
         if [ -n \"$BAY_SECRET\" ] || [ -n \"$BAY_ACTOR\" ]; then printf '%s\\n' '{{\"held\": true, \"reason\": \"leaked\"}}'; exit 0; fi\n\
         if [ -z \"$PATH\" ] || [ -z \"$HOME\" ]; then printf '%s\\n' '{{\"held\": true, \"reason\": \"no PATH or HOME\"}}'; exit 0; fi\n\
         if [ -e .bay ] || [ -e .git ]; then printf '%s\\n' '{{\"held\": true, \"reason\": \"in a clone\"}}'; exit 0; fi\n\
         printf '%s\\n' '{CLEAR}'\n"
    );
    set_plugin(&world, &script, 10);
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let merged = bay_with(
        &view,
        "ann",
        &["merge", "--wait"],
        &[("BAY_SECRET", "hunter2"), ("HOME", "/tmp")],
    );
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(world.merges_of(&change), 1);
}
