//! Where a command's rules come from, with real Git: main and its remote from `bay.main` and
//! `bay.remote` (else the remote's default branch), `.bay/config.toml` and `.bay/policy.toml`
//! only as main holds them, and the repository's own trailer keys on what merges.

mod support;

use std::path::{Path, PathBuf};

use support::*;

/// A remote whose default branch is `trunk`, holding the usual files with `config` added to
/// the config, and a clone of it as `ann` that calls it `upstream`.
fn trunk_world(config: &str) -> (World, PathBuf) {
    let world = World::on_branch(
        "trunk",
        &[
            ("src/greeting.txt", "Hello\n", false),
            (".bay/config.toml", &format!("{CONFIG}{config}"), false),
            (".bay/policy.toml", &policy(""), false),
            (".bay/check", CHECK, true),
        ],
    );
    let ann = world.clone_calling_it("ann", "upstream");
    git(&ann, &["config", "bay.remote", "upstream"]);
    (world, ann)
}

/// Starts a change in `clone` as `actor`, writes `content` to the greeting in its view, and
/// merges it here (`merge --wait`).
fn merge_here(clone: &Path, actor: &str, intent: &str, content: &str) -> Ran {
    let start = bay(
        clone,
        actor,
        &["start", intent, "--paths", "src/greeting.txt"],
    );
    assert_eq!(start.doc["decision"], "ok", "{start:?}");
    let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
    write(&view, "src/greeting.txt", content);
    bay(&view, actor, &["merge", "--wait"])
}

#[test]
fn main_is_the_remotes_default_branch_on_the_remote_bay_remote_names() {
    let (world, ann) = trunk_world("");
    // The clone's own copy of the rules is not read: only main's.
    write(&ann, ".bay/config.toml", "[runner]\nlease_s = \"broken\"\n");
    write(&ann, ".bay/policy.toml", "not = [toml\n");
    let merged = merge_here(&ann, "ann", "greet", "Hi\n");
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let on_trunk = git_dir(&world.remote, &["show", "trunk:src/greeting.txt"]);
    assert_eq!(on_trunk, "Hi\n");
    assert!(
        git_dir(&world.remote, &["for-each-ref", "refs/heads/main"]).is_empty(),
        "nothing merges to a main the remote does not name"
    );
}

#[test]
fn bay_main_in_git_config_names_main_over_the_default_branch() {
    let (world, ann) = trunk_world("");
    git(&ann, &["push", "--quiet", "upstream", "trunk:release"]);
    git(&ann, &["config", "bay.main", "release"]);
    let merged = merge_here(&ann, "ann", "greet", "Hi\n");
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(
        git_dir(&world.remote, &["show", "release:src/greeting.txt"]),
        "Hi\n"
    );
    assert_eq!(
        git_dir(&world.remote, &["show", "trunk:src/greeting.txt"]),
        "Hello\n"
    );
}

#[test]
fn without_bay_remote_the_remote_is_origin_and_without_it_main_is_unknown() {
    let (_world, ann) = trunk_world("");
    git(&ann, &["config", "--unset", "bay.remote"]);
    let refused = bay(
        &ann,
        "ann",
        &["start", "greet", "--paths", "src/greeting.txt"],
    );
    // No origin here: bay cannot tell which branch is main, and says where it looked.
    assert_eq!(refused.doc["reason"], "CONFIG_MISSING", "{refused:?}");
    assert_eq!(refused.code, 10);
    let looked_at = refused.doc["detail"]["looked_at"].to_string();
    assert!(
        looked_at.contains("refs/remotes/origin/HEAD"),
        "{looked_at}"
    );
}

#[test]
fn the_repositorys_trailer_keys_name_intent_and_actor_on_the_merge() {
    let (world, ann) = trunk_world("\n[trailers]\nintent = \"Why\"\nactor = \"Who\"\n");
    let merged = merge_here(&ann, "ann", "greet in French", "Bonjour\n");
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let change = merged.doc["change"].as_str().expect("a change");
    let message = git_dir(&world.remote, &["log", "-1", "--format=%B", "trunk"]);
    let trailers: Vec<&str> = message.lines().filter(|line| line.contains(": ")).collect();
    assert!(trailers.contains(&"Why: greet in French"), "{message}");
    assert!(trailers.contains(&"Who: ann"), "{message}");
    assert!(
        trailers.contains(&format!("Change-Id: {change}").as_str()),
        "{message}"
    );
    assert!(
        !trailers
            .iter()
            .any(|line| line.starts_with("Intent:") || line.starts_with("Actor:")),
        "{message}"
    );
}
