//! What a runner gives a check, end to end with real Git, a real runner and bwrap: only the
//! changed files plus `paths` (`materialize = "changed"`), and the machine's
//! `bay.checkReadPath` directories, readable and never writable.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

/// Passes its one unit only when its tree holds exactly `$EXPECTED` (a space-separated, sorted
/// list) and the request says `"materialized":"changed"`; otherwise fails it, naming what it saw.
const SEEN: &str = r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
materialized=$(printf '%s' "$request" | sed -n 's/.*"materialized":"\([a-z]*\)".*/\1/p')
seen=$(find . -type f | sort | tr '\n' ' ')
if [ "$seen" = "$EXPECTED " ] && [ "$materialized" = changed ]; then v='"pass"'; else v="\"product_failure\",\"reason\":\"saw $seen materialized=$materialized\""; fi
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":1,"completed":1},"checks":[{"id":"seen","verdict":%s}]}\n' "$commit" "$tree" "$v"
"#;

/// A world whose policy runs `script` as its one check, with `extra` keys on it.
fn world(script: &str, extra: &str) -> World {
    let policy = format!(
        "revision = 1\n\n[[check]]\nid = \"seen\"\nenvironment = \"any\"\ncommand = \".bay/seen\"\nadapter = [\".bay/seen\"]\nexpected_minimum = 1\ntimeout_s = 60\npath = [\"/usr/bin\", \"/bin\"]\n{extra}"
    );
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/other.txt", "Other\n", false),
        ("docs/guide.txt", "Guide\n", false),
        (".lint.toml", "rules\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy, false),
        (".bay/seen", script, true),
    ])
}

/// Submits one edit as ann, runs the runner once with `env`, and returns ann's status.
fn run_one(world: &World, path: &str, env: &[(&str, &str)]) -> Value {
    let ann = world.clone_as("ann");
    let (_, view) = world.submit(&ann, "ann", "edit", path, "changed\n");
    let pass = bay_with(&world.admin, "runner", &["runner", "run", "--once"], env);
    assert_eq!(pass.code, 0, "{pass:?}");
    bay(&view, "ann", &["status"]).doc
}

/// A check that sees only the files the change touches, and `.lint.toml`, and is told what
/// it should see in `EXPECTED`.
const CHANGED_ONLY: &str =
    "env = [\"EXPECTED\"]\nmaterialize = \"changed\"\npaths = [\".lint.toml\"]\n";

#[test]
fn a_changed_only_check_sees_exactly_the_changed_files_and_its_paths() {
    let world = world(SEEN, CHANGED_ONLY);
    let status = run_one(
        &world,
        "src/greeting.txt",
        &[("EXPECTED", "./.lint.toml ./src/greeting.txt")],
    );
    assert_eq!(status["decision"], "merged", "{status}");
    let records = world.evidence("admin");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["verdict"], "pass");
    assert_eq!(
        records[0]["key"], "commit",
        "what it saw depends on the base"
    );
    // Its note hangs on the merged commit itself, never on a tree another commit could share.
    let merged = git_dir(&world.remote, &["rev-parse", "main"])
        .trim()
        .to_owned();
    let on_commit = git_dir(
        &world.remote,
        &[
            "notes",
            "--ref=refs/notes/bay/evidence/admin",
            "show",
            &merged,
        ],
    );
    assert!(on_commit.contains("\"key\":\"commit\""), "{on_commit}");
}

#[test]
fn a_check_that_sees_other_files_than_it_expects_blocks_the_merge() {
    // The same check, told to expect the whole tree, proves it was not given it.
    let world = world(SEEN, CHANGED_ONLY);
    let status = run_one(
        &world,
        "src/greeting.txt",
        &[(
            "EXPECTED",
            "./.lint.toml ./docs/guide.txt ./src/greeting.txt ./src/other.txt",
        )],
    );
    assert_eq!(status["reason"], "CHECK_FAILED", "{status}");
    let records = world.evidence("admin");
    assert_eq!(
        records[0]["failed"][0]["reason"],
        "saw ./.lint.toml ./src/greeting.txt  materialized=changed",
        "{records:?}"
    );
}

/// Passes when it reads both machine directories and cannot write to either.
const READS: &str = r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
unit() { if eval "$2" >/dev/null 2>&1; then v='"pass"'; else v="\"product_failure\",\"reason\":\"$1\""; fi; units="$units${units:+,}{\"id\":\"$1\",\"verdict\":$v}"; }
units=""
unit read_cache '[ "$(cat "$CACHE/token.txt")" = cached ]'
unit read_store '[ "$(cat "$STORE/s.txt")" = stored ]'
unit no_write_cache '! touch "$CACHE/written"'
unit no_write_store '! touch "$STORE/written"'
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":4,"completed":4},"checks":[%s]}\n' "$commit" "$tree" "$units"
"#;

#[test]
fn a_check_reads_the_machines_read_paths_and_never_writes_them() {
    let world = world(READS, "env = [\"CACHE\", \"STORE\"]\n");
    let root = world.root.path();
    let home = root.join("home");
    let cache = root.join("cache");
    let store = home.join("store");
    for (dir, file, content) in [(&cache, "token.txt", "cached"), (&store, "s.txt", "stored")] {
        write(dir, file, content);
    }
    // The machine's global config: one absolute value, one under ~/, and one missing.
    write(
        &home,
        ".gitconfig",
        &format!(
            "[bay]\n\tcheckReadPath = {}\n\tcheckReadPath = ~/store\n\tcheckReadPath = {}\n",
            cache.display(),
            root.join("missing").display()
        ),
    );
    let text = |path: &Path| path.display().to_string();
    let status = run_one(
        &world,
        "src/greeting.txt",
        &[
            ("HOME", &text(&home)),
            ("CACHE", &text(&cache)),
            ("STORE", &text(&store)),
        ],
    );
    assert_eq!(status["decision"], "merged", "{status}");
    assert!(!cache.join("written").exists() && !store.join("written").exists());
    let records = world.evidence("admin");
    assert_eq!(
        records[0]["sandbox_read"],
        serde_json::json!([text(&cache), text(&store)]),
        "{records:?}"
    );
    assert!(records[0].get("key").is_none(), "a tree-keyed record");
}

#[test]
fn a_read_path_over_the_repository_fails_the_check_as_infra() {
    let world = world(READS, "env = [\"CACHE\", \"STORE\"]\n");
    let home = world.root.path().join("home");
    write(
        &home,
        ".gitconfig",
        &format!("[bay]\n\tcheckReadPath = {}\n", world.admin.display()),
    );
    let status = run_one(
        &world,
        "src/greeting.txt",
        &[
            ("HOME", &home.display().to_string()),
            ("CACHE", "/nowhere"),
            ("STORE", "/nowhere"),
        ],
    );
    assert_eq!(status["reason"], "CHECK_UNKNOWN", "{status}");
    assert_eq!(status["detail"]["verdict"], "infra_failure", "{status}");
    let why = status["detail"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains(&format!(
            "bay.checkReadPath {:?} overlaps",
            world.admin.display().to_string()
        )),
        "{status}"
    );
}
