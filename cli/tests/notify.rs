//! The notify plugin with real Git: after each event a runner writes to its log, it hands that
//! `bay.event/1` to `[plugin.notify] command` on stdin, with only `PATH` and `HOME` from its
//! environment. A plugin that fails loses the notice and changes nothing else; bay never sends
//! it again.

mod support;

use std::path::Path;

use support::*;

/// Appends each notice, one line, to `$HOME/notices`; fails when `FAIL` is in `$HOME`.
const NOTIFY: &str = r#"#!/bin/sh
if [ -e "$HOME/FAIL" ]; then exit 3; fi
if [ -n "$BAY_ACTOR" ]; then echo "leaked BAY_ACTOR" >> "$HOME/notices"; fi
cat >> "$HOME/notices"
echo >> "$HOME/notices"
"#;

fn world() -> World {
    let config = format!("{CONFIG}\n[plugin.notify]\ncommand = \"scripts/notify\"\n");
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/other.txt", "Other\n", false),
        (".bay/config.toml", &config, false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
        ("scripts/notify", NOTIFY, true),
    ])
}

/// `bay merge --wait` in a fresh view of `path`, with `home` as `HOME`.
fn merge_with_home(world: &World, actor: &str, path: &str, content: &str, home: &Path) -> Ran {
    let clone = world.clone_as(actor);
    let (_, view) = world.edited(&clone, actor, actor, path, content, &[]);
    bay_with(
        &view,
        actor,
        &["merge", "--wait"],
        &[("HOME", home.to_str().expect("a path in UTF-8"))],
    )
}

fn notices(home: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(home.join("notices"))
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect()
}

#[test]
fn each_event_a_runner_writes_goes_to_the_notify_plugin_once() {
    let world = world();
    let home = tempfile::tempdir().expect("a home");
    let merged = merge_with_home(&world, "ann", "src/greeting.txt", "Hi\n", home.path());
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let refused = merge_with_home(&world, "bob", "src/greeting.txt", "", home.path());
    assert_eq!(refused.doc["reason"], "CHECK_FAILED", "{refused:?}");

    let notices = notices(home.path());
    assert_eq!(notices.len(), 2, "one notice per event: {notices:?}");
    let schema: serde_json::Value =
        serde_json::from_str(bay_core::schema::EVENT).expect("the schema is JSON");
    for notice in &notices {
        if let Err(errors) = schema_errors(&schema, notice) {
            panic!("a notice outside bay.event/1: {errors:?}\n{notice}");
        }
    }
    assert_eq!(notices[0]["kind"], "merged");
    assert_eq!(notices[0]["change"], merged.doc["change"]);
    assert_eq!(notices[1]["kind"], "refused");
    assert_eq!(notices[1]["code"], "CHECK_FAILED");
}

#[test]
fn a_failing_notify_plugin_loses_the_notice_and_nothing_else() {
    let world = world();
    let home = tempfile::tempdir().expect("a home");
    std::fs::write(home.path().join("FAIL"), "").expect("write");
    let merged = merge_with_home(&world, "ann", "src/greeting.txt", "Hi\n", home.path());
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert!(notices(home.path()).is_empty());
    // The event stays in the runner's log for `bay status --since`.
    let log = git_dir(&world.remote, &["log", "--format=%s", "refs/bay/log/ann"]);
    assert_eq!(log.lines().count(), 1, "{log}");
}
