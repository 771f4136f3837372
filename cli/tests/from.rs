//! `bay start <intent> --paths <path>... --from <branch>` with real Git: a branch made outside
//! bay, taken in as one change whose first draft is the branch's net change on current main,
//! and merged as one checked commit. The remote's branch wins over this clone's; a path the
//! change does not declare, or a conflict with main, refuses before anything is written.

mod support;

use std::path::Path;

use support::*;

/// Makes branch `name` in `clone` from main with one commit per `(path, content)`; returns its
/// tip.
fn branch(clone: &Path, name: &str, edits: &[(&str, &str)]) -> String {
    git(clone, &["checkout", "--quiet", "-b", name, "origin/main"]);
    for (path, content) in edits {
        write(clone, path, content);
        git(clone, &["add", "--all"]);
        git(clone, &["commit", "--quiet", "-m", &format!("edit {path}")]);
    }
    git(clone, &["checkout", "--quiet", "main"]);
    git(clone, &["rev-parse", name]).trim().to_owned()
}

/// How many refs the remote holds under `refs/bay/`.
fn bay_refs(world: &World) -> usize {
    git_dir(&world.remote, &["for-each-ref", "refs/bay/"])
        .lines()
        .count()
}

#[test]
fn a_branch_on_the_remote_merges_as_one_checked_commit_on_current_main() {
    let world = World::standard();
    let bob = world.clone_as("bob");
    let tip = branch(
        &bob,
        "feature",
        &[("src/greeting.txt", "Hi\n"), ("src/new.txt", "New\n")],
    );
    git(&bob, &["push", "--quiet", "origin", "feature"]);
    // Main moves on meanwhile, elsewhere.
    world.merged("carol", "other", "src/other.txt", "Moved\n");
    let main_before = world.remote_ref("refs/heads/main").expect("main");

    let ann = world.clone_as("ann");
    let start = bay(
        &ann,
        "ann",
        &[
            "start",
            "take feature",
            "--paths",
            "src/",
            "--from",
            "feature",
        ],
    );
    assert_eq!(start.code, 0, "{start:?}");
    assert_eq!(start.doc["detail"]["from"]["source"], "remote", "{start:?}");
    assert_eq!(start.doc["detail"]["from"]["commit"], tip.as_str());
    let view = Path::new(start.doc["detail"]["view"].as_str().expect("a view")).to_owned();
    assert_eq!(
        std::fs::read_to_string(view.join("src/new.txt")).expect("the branch's file"),
        "New\n"
    );
    let change = start.doc["change"].as_str().expect("a change").to_owned();

    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let main = world.remote_ref("refs/heads/main").expect("main");
    // One commit on main, on the main it found, holding the branch's edits and main's.
    assert_eq!(
        git_dir(&world.remote, &["rev-parse", &format!("{main}^")]).trim(),
        main_before
    );
    assert_eq!(world.merges_of(&change), 1);
    for (path, content) in [
        ("src/greeting.txt", "Hi\n"),
        ("src/new.txt", "New\n"),
        ("src/other.txt", "Moved\n"),
    ] {
        assert_eq!(
            git_dir(&world.remote, &["show", &format!("{main}:{path}")]),
            content
        );
    }
    let tree = git_dir(&world.remote, &["rev-parse", &format!("{main}^{{tree}}")]);
    assert!(
        world
            .evidence("runner")
            .iter()
            .chain(world.evidence("ann").iter())
            .any(|record| record.to_string().contains(tree.trim())),
        "the merged tree has its check's evidence"
    );
}

#[test]
fn the_remote_branch_wins_over_a_local_one_and_a_local_one_is_taken_when_alone() {
    let world = World::standard();
    let bob = world.clone_as("bob");
    let pushed = branch(&bob, "feature", &[("src/new.txt", "Pushed\n")]);
    git(&bob, &["push", "--quiet", "origin", "feature"]);
    // Bob's own branch moves on without a push.
    git(&bob, &["checkout", "--quiet", "feature"]);
    write(&bob, "src/new.txt", "Local\n");
    git(&bob, &["commit", "--quiet", "-am", "local only"]);
    git(&bob, &["checkout", "--quiet", "main"]);

    let start = bay(
        &bob,
        "bob",
        &["start", "take it", "--paths", "src/", "--from", "feature"],
    );
    assert_eq!(start.code, 0, "{start:?}");
    assert_eq!(start.doc["detail"]["from"]["source"], "remote");
    assert_eq!(start.doc["detail"]["from"]["commit"], pushed.as_str());

    let local = branch(&bob, "mine", &[("src/mine.txt", "Mine\n")]);
    let start = bay(
        &bob,
        "bob",
        &[
            "start",
            "take mine",
            "--paths",
            "src/",
            "--from",
            "refs/heads/mine",
        ],
    );
    assert_eq!(start.code, 0, "{start:?}");
    assert_eq!(start.doc["detail"]["from"]["source"], "local");
    assert_eq!(start.doc["detail"]["from"]["commit"], local.as_str());
}

#[test]
fn paths_the_change_does_not_declare_refuse_and_create_nothing() {
    let world = World::standard();
    let bob = world.clone_as("bob");
    branch(
        &bob,
        "wide",
        &[("src/greeting.txt", "Hi\n"), ("docs/new.md", "New\n")],
    );
    let before = bay_refs(&world);
    let start = bay(
        &bob,
        "bob",
        &["start", "take wide", "--paths", "src/", "--from", "wide"],
    );
    assert_eq!(start.doc["reason"], "PATHS_UNDECLARED", "{start:?}");
    assert_eq!(start.code, 10, "{start:?}");
    assert_eq!(
        start.doc["detail"]["uncovered"],
        serde_json::json!(["docs/new.md"])
    );
    assert!(start.doc["change"].is_null(), "{start:?}");
    assert_eq!(bay_refs(&world), before, "nothing was written");
}

#[test]
fn a_branch_that_conflicts_with_main_refuses_and_creates_nothing() {
    let world = World::standard();
    let bob = world.clone_as("bob");
    branch(&bob, "clash", &[("src/greeting.txt", "Hi\n")]);
    world.merged("carol", "greet", "src/greeting.txt", "Hey\n");
    let before = bay_refs(&world);
    let start = bay(
        &bob,
        "bob",
        &["start", "take clash", "--paths", "src/", "--from", "clash"],
    );
    assert_eq!(start.doc["reason"], "MERGE_CONFLICT", "{start:?}");
    assert_eq!(
        start.doc["detail"]["conflicts"],
        serde_json::json!(["src/greeting.txt"])
    );
    assert_eq!(bay_refs(&world), before, "nothing was written");
}

#[test]
fn a_branch_nowhere_or_a_name_git_refuses_fails() {
    let world = World::standard();
    let bob = world.clone_as("bob");
    for name in ["nowhere", "a..b", "x*"] {
        let start = bay(
            &bob,
            "bob",
            &["start", "take it", "--paths", "src/", "--from", name],
        );
        assert_eq!(start.doc["decision"], "failed", "{name}: {start:?}");
        assert_eq!(start.code, 20, "{start:?}");
    }
}
