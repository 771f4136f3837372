//! `bay undo` and `bay start --fixes` with real Git: a merged change taken back out of main
//! by a new checked change, and the trailers that name what each merge undoes or fixes.

mod support;

use std::path::Path;

use serde_json::Value;
use support::*;

fn main_tree(world: &World) -> String {
    git_dir(&world.remote, &["rev-parse", "main^{tree}"])
        .trim()
        .to_owned()
}

fn main_message(world: &World) -> String {
    git_dir(&world.remote, &["log", "-1", "--format=%B", "main"])
}

fn undo(dir: &Path, change: &str, wait: bool) -> Ran {
    let mut args = vec!["undo", change];
    if wait {
        args.push("--wait");
    }
    bay(dir, "ann", &args)
}

#[test]
fn an_undo_then_an_undo_of_the_undo_restores_each_tree() {
    let world = World::standard();
    let before = main_tree(&world);
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let after = main_tree(&world);
    assert_ne!(before, after);

    let undone = undo(&world.admin, &change, true);
    assert_eq!(undone.code, 0, "{undone:?}");
    assert_eq!(undone.doc["decision"], "merged", "{undone:?}");
    assert_eq!(undone.doc["detail"]["reverts"], change.as_str());
    assert_eq!(main_tree(&world), before, "the edits are gone");
    let message = main_message(&world);
    assert!(message.contains(&format!("Reverts: {change}")), "{message}");
    let first_undo = undone.doc["change"]
        .as_str()
        .expect("the undo change")
        .to_owned();
    assert_ne!(first_undo, change);

    let redone = undo(&world.admin, &first_undo, true);
    assert_eq!(redone.doc["decision"], "merged", "{redone:?}");
    assert_eq!(
        main_tree(&world),
        after,
        "an undo of the undo brings the edits back"
    );
    assert!(main_message(&world).contains(&format!("Reverts: {first_undo}")));

    // The change is back on main: a second undo of it takes the next generation, and names
    // the first undo as the one it supersedes.
    let again = undo(&world.admin, &change, true);
    assert_eq!(again.doc["decision"], "merged", "{again:?}");
    assert_eq!(again.doc["detail"]["generation"], 2, "{again:?}");
    assert_eq!(again.doc["detail"]["supersedes"], first_undo.as_str());
    assert_eq!(main_tree(&world), before);
    let message = main_message(&world);
    assert!(
        message.contains(&format!("Supersedes: {first_undo}")),
        "{message}"
    );
    assert!(message.contains(&format!("Reverts: {change}")), "{message}");

    // The lineage lists each pair, newest first, from what the last fetch brought.
    bay(&world.admin, "ann", &["status"]);
    let lineage = bay(&world.admin, "ann", &["status", "--lineage"]);
    assert_eq!(lineage.code, 0, "{lineage:?}");
    let pairs: Vec<(String, String, String)> = lineage.doc["detail"]["lineage"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|pair| {
            assert_eq!(pair["publication"], true, "{pair}");
            let field = |key: &str| pair[key].as_str().unwrap_or_default().to_owned();
            (field("change"), field("relation"), field("target"))
        })
        .collect();
    let second_undo = again.doc["change"].as_str().expect("a change").to_owned();
    let redo = redone.doc["change"].as_str().expect("a change").to_owned();
    let pair = |a: &str, relation: &str, b: &str| (a.to_owned(), relation.to_owned(), b.to_owned());
    assert_eq!(
        pairs,
        vec![
            pair(&second_undo, "supersedes", &first_undo),
            pair(&second_undo, "reverts", &change),
            pair(&redo, "reverts", &first_undo),
            pair(&first_undo, "reverts", &change),
        ]
    );
    let said = lineage.doc["say"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("Main names 4 pairs")
            && said.contains(&format!(
                "({second_undo} replaces {first_undo}, {second_undo} undoes {change}, {redo} \
                 undoes {first_undo} and 1 more)"
            )),
        "{said}"
    );
    // A range reads part of main: here its newest merge alone.
    let tip = git(
        &world.admin,
        &["rev-parse", "refs/bay-mirror/origin/heads/main"],
    );
    let range = format!("{}~1..{}", tip.trim(), tip.trim());
    let part = bay(&world.admin, "ann", &["status", "--lineage", &range]);
    assert_eq!(part.doc["detail"]["commits"], 1, "{part:?}");
    assert_eq!(
        part.doc["detail"]["lineage"].as_array().map(Vec::len),
        Some(2)
    );
    let bad = bay(&world.admin, "ann", &["status", "--lineage=--output=x"]);
    assert_eq!(bad.code, 20, "{bad:?}");
}

#[test]
fn the_status_of_an_undone_change_says_it_was_undone_and_by_what() {
    let world = World::standard();
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let status = |what: &str| bay(&world.admin, "ann", &["status", what]);
    let before = status(&change);
    assert_eq!(before.doc["detail"].get("undone_by"), None, "{before:?}");

    // An undo that has not merged yet has undone nothing.
    let asked = undo(&world.admin, &change, false);
    assert_eq!(asked.doc["decision"], "queued", "{asked:?}");
    let undo_change = asked.doc["change"].as_str().expect("the undo").to_owned();
    let waiting = status(&change);
    assert_eq!(waiting.doc["detail"].get("undone_by"), None, "{waiting:?}");
    assert_eq!(waiting.doc["say"], before.doc["say"]);

    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let undone = status(&change);
    assert_eq!(undone.doc["decision"], "merged", "{undone:?}");
    assert_eq!(
        undone.doc["detail"]["undone_by"],
        serde_json::json!([undo_change]),
        "{undone:?}"
    );
    let said = undone.doc["say"].as_str().unwrap_or_default();
    assert!(
        said.contains("taken back out") && said.contains(&format!("({undo_change})")),
        "{said}"
    );
}

#[test]
fn an_undo_of_a_change_not_on_main_is_refused_and_opens_nothing() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (queued, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    for change in [queued.as_str(), "zzzzzzzz"] {
        let refused = undo(&world.admin, change, false);
        assert_eq!(refused.code, 10, "{refused:?}");
        assert_eq!(refused.doc["reason"], "CHANGE_NOT_MERGED", "{refused:?}");
        assert!(
            refused.doc["change"].is_null(),
            "no change opened: {refused:?}"
        );
        assert!(refused.doc["detail"]["main"].is_string(), "{refused:?}");
    }
    let intents = git_dir(&world.remote, &["for-each-ref", "refs/bay/intents/"]);
    assert_eq!(
        intents.lines().count(),
        1,
        "only the queued change's intent: {intents}"
    );
    let bad = undo(&world.admin, "not a change", false);
    assert_eq!(bad.code, 20, "{bad:?}");
}

#[test]
fn an_undo_of_an_effect_already_gone_opens_nothing() {
    let world = World::standard();
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    world.merged("bob", "greet back", "src/greeting.txt", "Hello\n");
    let tip = git_dir(&world.remote, &["rev-parse", "main"]);
    let nothing = undo(&world.admin, &change, true);
    assert_eq!(nothing.code, 0, "{nothing:?}");
    assert_eq!(nothing.doc["decision"], "ok", "{nothing:?}");
    assert_eq!(nothing.doc["detail"]["undo"], "nothing to undo");
    assert_eq!(nothing.doc["detail"]["reverts"], change.as_str());
    assert!(nothing.doc["change"].is_null(), "{nothing:?}");
    assert_eq!(git_dir(&world.remote, &["rev-parse", "main"]), tip);
}

#[test]
fn an_undo_that_conflicts_leaves_its_view_for_repair() {
    let world = World::standard();
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    world.merged("bob", "greet again", "src/greeting.txt", "Hey\n");
    let conflict = undo(&world.admin, &change, true);
    assert_eq!(conflict.code, 10, "{conflict:?}");
    assert_eq!(conflict.doc["reason"], "MERGE_CONFLICT", "{conflict:?}");
    assert_eq!(
        conflict.doc["detail"]["conflicts"],
        serde_json::json!(["src/greeting.txt"])
    );
    assert_eq!(conflict.doc["detail"]["reverts"], change.as_str());
    let view = Path::new(conflict.doc["detail"]["view"].as_str().expect("a view")).to_owned();
    let text = std::fs::read_to_string(view.join("src/greeting.txt")).expect("the file");
    assert!(
        text.contains("<<<<<<< main\n") && text.contains(&format!(">>>>>>> undo of {change}\n")),
        "conflict markers to resolve: {text}"
    );
    let early = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(early.doc["reason"], "MERGE_CONFLICT", "{early:?}");
    assert_eq!(early.doc["detail"]["markers_remain"], true, "{early:?}");
    // Resolved in the view, the undo merges like any change.
    write(&view, "src/greeting.txt", "Hello\n");
    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert!(main_message(&world).contains(&format!("Reverts: {change}")));
}

#[test]
fn a_second_undo_waits_for_the_first_to_merge() {
    let world = World::standard();
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let first = undo(&world.admin, &change, false);
    assert_eq!(first.doc["decision"], "queued", "{first:?}");
    let first_undo = first.doc["change"].as_str().expect("a change").to_owned();
    let second = undo(&world.admin, &change, false);
    assert_eq!(second.code, 10, "{second:?}");
    assert_eq!(second.doc["reason"], "CHANGE_SUPERSEDED", "{second:?}");
    assert_eq!(second.doc["detail"]["superseded_by"], first_undo.as_str());
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let third: Value = undo(&world.admin, &change, false).doc;
    assert_eq!(third["detail"]["undo"], "nothing to undo", "{third}");
}

#[test]
fn a_fix_names_the_merged_change_it_fixes() {
    let world = World::standard();
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let bob = world.clone_as("bob");
    let refused = bay(
        &bob,
        "bob",
        &["start", "fix it", "--fixes", "zzzzzzzz", "--paths", "src/"],
    );
    assert_eq!(refused.code, 10, "{refused:?}");
    assert_eq!(refused.doc["reason"], "CHANGE_NOT_MERGED", "{refused:?}");
    let start = bay(
        &bob,
        "bob",
        &["start", "fix it", "--fixes", &change, "--paths", "src/"],
    );
    assert_eq!(start.code, 0, "{start:?}");
    assert_eq!(start.doc["detail"]["fixes"], change.as_str());
    let view = Path::new(start.doc["detail"]["view"].as_str().expect("a view")).to_owned();
    write(&view, "src/greeting.txt", "Hi there\n");
    let merged = bay(&view, "bob", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let message = main_message(&world);
    assert!(message.contains(&format!("Fixes: {change}")), "{message}");
    bay(&bob, "bob", &["status"]);
    let lineage = bay(&bob, "bob", &["status", "--lineage"]).doc;
    let fix = &lineage["detail"]["lineage"][0];
    assert_eq!(fix["relation"], "fixes", "{lineage}");
    assert_eq!(fix["target"], change.as_str());
    assert_eq!(fix["change"], start.doc["change"]);
}

#[test]
fn a_change_whose_merge_was_forced_off_main_is_not_merged() {
    let world = World::standard();
    let before = git_dir(&world.remote, &["rev-parse", "main"])
        .trim()
        .to_owned();
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let merge = git_dir(&world.remote, &["rev-parse", "main"])
        .trim()
        .to_owned();
    let bob = world.clone_as("bob");
    // A person forces main back to before the merge; the change's record and marker stay.
    git(
        &world.admin,
        &[
            "push",
            "--quiet",
            "--force",
            "origin",
            &format!("{before}:refs/heads/main"),
        ],
    );
    let status = bay(&bob, "bob", &["status", &change]);
    assert_eq!(status.code, 10, "{status:?}");
    assert_eq!(status.doc["reason"], "CHANGE_NOT_MERGED", "{status:?}");
    assert_eq!(status.doc["detail"]["merge"], merge.as_str());
    assert_eq!(status.doc["detail"]["main"], before.as_str());
    let fix = bay(
        &bob,
        "bob",
        &["start", "fix it", "--fixes", &change, "--paths", "src/"],
    );
    assert_eq!(fix.doc["reason"], "CHANGE_NOT_MERGED", "{fix:?}");
    let undone = undo(&bob, &change, false);
    assert_eq!(undone.doc["reason"], "CHANGE_NOT_MERGED", "{undone:?}");
    let changes = git_dir(&world.remote, &["for-each-ref", "refs/bay/changes"]);
    assert_eq!(changes.lines().count(), 1, "nothing was opened: {changes}");
}
