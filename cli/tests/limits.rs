//! `[limits]` with real Git: `bay merge` refuses a change over a cap of the policy at its base
//! with `CHANGE_TOO_LARGE` before it writes anything, the runner refuses a queued change over a
//! cap main's policy gained since, and a binary file is judged by its size alone.

mod support;

use std::path::PathBuf;

use support::*;

/// The usual world, its policy capped by `limits` (lines of a `[limits]` table).
fn world_with(limits: &str) -> World {
    let policy = policy(&format!("\n[limits]\n{limits}"));
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy, false),
        (".bay/check", CHECK, true),
    ])
}

/// Starts a change declaring `path` as `actor`, in a clone of its own, and writes `content`
/// there; returns the view.
fn edit(world: &World, actor: &str, path: &str, content: &str) -> PathBuf {
    let clone = world.clone_as(actor);
    let start = bay(&clone, actor, &["start", "grow", "--paths", path]);
    assert_eq!(start.code, 0, "{start:?}");
    let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
    write(&view, path, content);
    view
}

#[test]
fn bay_merge_refuses_a_change_over_a_cap_and_writes_nothing() {
    let world = world_with("max_added_lines = 2\n");
    let view = edit(
        &world,
        "ann",
        "src/greeting.txt",
        "Hello\none\ntwo\nthree\n",
    );
    let refs_before = git_dir(&world.remote, &["for-each-ref"]);
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.code, 10, "{merge:?}");
    assert_eq!(merge.doc["decision"], "blocked");
    assert_eq!(merge.doc["reason"], "CHANGE_TOO_LARGE");
    assert_eq!(
        merge.doc["detail"]["exceeded"],
        serde_json::json!([{"cap": "max_added_lines", "max": 2, "value": 3, "paths": ["src/greeting.txt"]}])
    );
    assert_eq!(
        merge.doc["say"],
        "This change is too big to save here (it adds 3 lines, over 2); split it into smaller \
         changes, then submit each one."
    );
    assert_eq!(
        git_dir(&world.remote, &["for-each-ref"]),
        refs_before,
        "nothing reached the remote"
    );

    // Split to fit, the same change is queued, and holds exactly the view's files.
    write(&view, "src/greeting.txt", "Hello\none\ntwo\n");
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    let main = world.remote_ref("refs/heads/main").expect("main");
    assert_eq!(
        git_dir(
            &world.remote,
            &["show", &format!("{main}:src/greeting.txt")]
        ),
        "Hello\none\ntwo\n"
    );
}

#[test]
fn the_runner_refuses_a_queued_change_over_a_cap_main_gained_since() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "grow", "src/greeting.txt", "Hi\nall\n");
    // The policy on main gains a cap after the request was queued.
    let capped = policy("\n[limits]\nmax_added_lines = 1\n");
    write(&world.admin, ".bay/policy.toml", &capped);
    git(&world.admin, &["commit", "--quiet", "-am", "cap the lines"]);
    git(&world.admin, &["push", "--quiet", "origin", "main"]);
    let main = world.remote_ref("refs/heads/main");

    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "blocked", "{status:?}");
    assert_eq!(status.doc["reason"], "CHANGE_TOO_LARGE");
    assert_eq!(status.doc["state"], "blocked");
    assert_eq!(
        status.doc["detail"]["exceeded"],
        serde_json::json!([{"cap": "max_added_lines", "max": 1, "value": 2, "paths": ["src/greeting.txt"]}])
    );
    assert_eq!(world.merges_of(&change), 0);
    assert_eq!(world.remote_ref("refs/heads/main"), main);
    assert_eq!(world.evidence_lines("runner"), 0, "no check ran");
    let kinds: Vec<String> = world
        .chain(&change)
        .iter()
        .map(|step| step["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(kinds, ["start", "request", "claim", "outcome"]);
}

#[test]
fn a_binary_file_is_judged_by_its_size_alone() {
    let world = world_with("max_added_lines = 1\nmax_file_mib = 1\n");
    // Many lines, but binary: they do not count, and the file is under a MiB.
    let small = format!("\0{}", "line\n".repeat(1000));
    let view = edit(&world, "ann", "src/image.bin", &small);
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");

    // Over a MiB, it is refused by size, and only by size.
    let big = format!("\0{}", "x".repeat(1_100_000));
    let view = edit(&world, "bob", "src/big.bin", &big);
    let merge = bay(&view, "bob", &["merge"]);
    assert_eq!(merge.code, 10, "{merge:?}");
    assert_eq!(
        merge.doc["detail"]["exceeded"],
        serde_json::json!([{"cap": "max_file_mib", "max": 1, "value": 1.1, "paths": ["src/big.bin"]}])
    );
    assert_eq!(
        merge.doc["say"],
        "This change is too big to save here (src/big.bin is 1.1 MiB, over 1 MiB); keep large \
         files elsewhere, such as a shared drive."
    );
}
