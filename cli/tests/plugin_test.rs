//! `bay plugin test check`: bay's contract cases against real check commands, run in the
//! sandbox on a scratch repository, leaving the repository they were run from as it was.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

/// What a repository looks like to Git: its files' state and every ref.
fn snapshot(dir: &Path) -> (String, String) {
    (
        git(dir, &["status", "--porcelain", "--ignored"]),
        git(dir, &["for-each-ref"]),
    )
}

fn cases(doc: &Value) -> Vec<(String, bool)> {
    doc["detail"]["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            (
                c["case"].as_str().expect("a name").to_owned(),
                c["passed"].as_bool().expect("passed"),
            )
        })
        .collect()
}

fn failing(doc: &Value) -> Vec<String> {
    cases(doc)
        .into_iter()
        .filter(|(_, passed)| !passed)
        .map(|(name, _)| name)
        .collect()
}

/// A clone whose main holds `check` at `.bay/check`, not committed in the clone: a check is
/// tested before it is committed.
fn clone_with_check(world: &World, check: &str) -> std::path::PathBuf {
    let ann = world.clone_as("ann");
    write(&ann, ".bay/check", check);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        ann.join(".bay/check"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    ann
}

/// `bay plugin test check [flags] -- .bay/check` as ann in `ann`.
fn test_check(ann: &Path, flags: &[&str]) -> Ran {
    let mut args = vec!["plugin", "test", "check"];
    args.extend_from_slice(flags);
    args.extend(["--", ".bay/check"]);
    bay(ann, "ann", &args)
}

#[test]
fn an_honest_check_passes_every_case_and_nothing_changes() {
    let world = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let ann = clone_with_check(&world, CHECK);
    let before = snapshot(&ann);
    let ran = test_check(&ann, &["--timeout-s", "60"]);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    assert_eq!(ran.code, 0);
    assert_eq!(cases(&ran.doc).len(), 7);
    assert!(failing(&ran.doc).is_empty(), "{ran:?}");
    let records = ran.doc["detail"]["bay_records"]
        .as_array()
        .expect("records");
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["verdict"], "pass");
    assert_eq!(records[0]["units"], 1, "one file under src/");
    assert_eq!(snapshot(&ann), before, "the repository is as it was");
}

#[test]
fn a_check_that_names_another_tree_fails_the_test() {
    let lying = CHECK.replace(
        r#""$commit" "$tree" "$count""#,
        r#""$commit" "0000000000000000000000000000000000000000" "$count""#,
    );
    let world = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let ann = clone_with_check(&world, &lying);
    let ran = test_check(&ann, &[]);
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    assert_eq!(ran.code, 20);
    let failing = failing(&ran.doc);
    assert!(
        failing.contains(&"an honest result".to_owned()),
        "{failing:?}"
    );
    assert!(
        failing.contains(&"a result for another tree".to_owned()),
        "{failing:?}"
    );
    assert!(
        !failing.contains(&"a missing variable".to_owned()),
        "bay still refuses to start a check without its variables: {failing:?}"
    );
    assert!(ran.doc["detail"]["bay_records"][0]["verdict"] == "unknown");
}

#[test]
fn a_check_that_logs_on_stdout_fails_noisy_stderr() {
    let noisy = CHECK.replace(
        "request=$(cat)",
        "request=$(cat)\necho 'running the tests...'",
    );
    let world = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let ann = clone_with_check(&world, &noisy);
    let ran = test_check(&ann, &[]);
    assert_eq!(ran.code, 20, "{ran:?}");
    assert!(
        failing(&ran.doc).contains(&"noisy stderr".to_owned()),
        "{ran:?}"
    );
}

#[test]
fn a_check_with_fewer_units_than_expected_fails_the_honest_case() {
    let world = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let ann = clone_with_check(&world, CHECK);
    let ran = test_check(&ann, &["--expected-minimum", "50"]);
    assert_eq!(ran.code, 20, "{ran:?}");
    assert!(
        failing(&ran.doc).contains(&"an honest result".to_owned()),
        "{ran:?}"
    );
}

#[test]
fn a_flag_is_held_to_the_rules_of_its_key() {
    let world = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let ann = clone_with_check(&world, CHECK);
    let ran = test_check(&ann, &["--path", "bin"]);
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    assert_eq!(ran.code, 20);
    let why = ran.doc["detail"]["why"].as_str().expect("a why");
    assert!(why.contains("`path`") && why.contains("\"bin\""), "{why}");
}

/// `bay plugin test hold -- scripts/bay-hold` as ann in `ann`, with `flags` first.
fn test_hold(ann: &Path, flags: &[&str]) -> Ran {
    let mut args = vec!["plugin", "test", "hold"];
    args.extend_from_slice(flags);
    args.extend(["--", "scripts/bay-hold"]);
    bay(ann, "ann", &args)
}

#[test]
fn a_hold_plugin_not_yet_committed_is_asked_status_and_its_answer_judged() {
    let world = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let ann = world.clone_as("ann");
    let before = snapshot(&ann);
    for (answer, held) in [
        (r#"{"held": false}"#, false),
        (r#"{"held": true, "reason": "incident 7"}"#, true),
        ("not json", true),
    ] {
        write_program(
            &ann,
            "scripts/bay-hold",
            &format!("#!/bin/sh\n[ \"$1\" = status ] || exit 9\nprintf '%s\\n' '{answer}'\n"),
        );
        let ran = test_hold(&ann, &[]);
        assert_eq!(
            (ran.doc["decision"].as_str(), ran.code),
            (Some("ok"), 0),
            "{ran:?}"
        );
        assert_eq!(ran.doc["detail"]["held"], held, "{answer}: {ran:?}");
        if held {
            assert_eq!(ran.doc["detail"]["hold"]["source"], "plugin", "{ran:?}");
        }
    }
    let ran = test_hold(&ann, &[]);
    let reason = ran.doc["detail"]["hold"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.starts_with("the hold plugin's answer is not") && reason.ends_with("counts as held"),
        "{ran:?}"
    );
    let refused = test_hold(&ann, &["--timeout-s", "121"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(
        refused.doc["say"]
            .as_str()
            .is_some_and(|say| say.contains("timeout_s")),
        "{refused:?}"
    );
    std::fs::remove_dir_all(ann.join("scripts")).expect("remove the plugin");
    assert_eq!(snapshot(&ann), before, "the repository is as it was");
}
