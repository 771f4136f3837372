//! `bay merge --wait` runs the checks itself, so on a machine with no check sandbox (a PATH
//! without `bwrap`, as the runner's own test has) it refuses `SANDBOX_ABSENT` as `bay runner
//! run` does, before it writes anything; a policy with no checks to run needs no sandbox.

mod support;

use std::path::Path;
use std::process::Command;

use support::home::*;
use support::*;

/// A home whose PATH holds Git alone: no `bwrap`, so no sandbox.
fn bare_home() -> (Home, String) {
    let home = Home::new();
    let found = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh runs");
    let git_program = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    std::fs::create_dir_all(home.bin()).expect("a bin folder");
    std::os::unix::fs::symlink(&git_program, home.bin().join("git")).expect("a link to Git");
    let path = home.bin().display().to_string();
    (home, path)
}

fn world_with(policy_text: &str) -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", policy_text, false),
        (".bay/check", CHECK, true),
    ])
}

fn merge_wait(home: &Home, path: &str, view: &Path) -> Ran {
    home.bay(view, path, &["merge", "--wait"], &[("BAY_ACTOR", "ann")])
}

#[test]
fn without_a_sandbox_merge_wait_refuses_before_it_writes_anything() {
    let world = world_with(&policy(""));
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let before = world.chain(&change);
    let (home, path) = bare_home();
    let refused = merge_wait(&home, &path, &view);
    assert_eq!(refused.code, 10, "{refused:?}");
    assert_eq!(refused.doc["decision"], "blocked", "{}", refused.doc);
    assert_eq!(refused.doc["reason"], "SANDBOX_ABSENT", "{}", refused.doc);
    assert_eq!(refused.doc["change"], change.as_str(), "{}", refused.doc);
    assert_eq!(world.chain(&change), before, "no request, no claim");
    assert_eq!(
        world.remote_ref("refs/bay/queue/last"),
        None,
        "no queue place"
    );
    assert_eq!(
        std::fs::read_to_string(view.join("src/greeting.txt")).expect("the file"),
        "Hi\n"
    );
}

#[test]
fn a_policy_with_no_checks_merges_with_merge_wait_without_a_sandbox() {
    let world = world_with("revision = 1\nunchecked = true\n");
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let (home, path) = bare_home();
    let merged = merge_wait(&home, &path, &view);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(world.merges_of(&change), 1);
}
