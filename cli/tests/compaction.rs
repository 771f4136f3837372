//! Compaction with real Git: a runner moves ended changes' refs into the index's shards
//! (`refs/bay/compacted/changes/<x>`, `refs/bay/compacted/intents/<x>`), and
//! every command reads a compacted change as it read it before. A low `[retention]
//! ref_budget` makes a runner compact once that many changes are ready (by default, 32).

mod support;

use support::*;

/// A world whose runners compact once `budget` changes are ready.
fn world(budget: u32) -> World {
    let config = format!("{CONFIG}\n[retention]\nref_budget = {budget}\n");
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/other.txt", "Other\n", false),
        (".bay/config.toml", &config, false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ])
}

/// The remote's refs under `prefix`.
fn remote_refs(world: &World, prefix: &str) -> Vec<String> {
    git_dir(
        &world.remote,
        &["for-each-ref", "--format=%(refname)", prefix],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// The index shards a clone's mirror holds (`changes/<x>`, `intents/<x>`): what its commands
/// fetched of the index.
fn shards_fetched(clone: &std::path::Path) -> Vec<String> {
    git(clone, &["for-each-ref", "--format=%(refname)"])
        .lines()
        .filter_map(|name| {
            name.split_once("/bay/compacted/")
                .map(|(_, s)| s.to_owned())
        })
        .collect()
}

/// The main commit that merged `change`.
fn merge_of(world: &World, change: &str) -> String {
    let needle = format!("Change-Id: {change}");
    let entry = world
        .main_log()
        .into_iter()
        .find(|entry| entry.contains(&needle))
        .expect("the change merged");
    entry.split('\0').next().expect("an id").to_owned()
}

#[test]
fn compacted_changes_read_as_merged_and_nothing_merges_twice() {
    let world = world(2);
    let ann = world.clone_as("ann");
    let (first, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let second = world.merged("bob", "other", "src/other.txt", "Other 2\n");
    // The pass that merged the second found two markers waiting and compacted both.
    let shard = format!("refs/bay/compacted/changes/{}", &first[..1]);
    let index = world.remote_ref(&shard).expect("an index shard");
    let shards = remote_refs(&world, "refs/bay/compacted");
    for change in [&first, &second] {
        for name in [
            format!("refs/bay/changes/{change}"),
            format!("refs/bay/landed/{change}"),
        ] {
            assert_eq!(world.remote_ref(&name), None, "{name} is compacted");
        }
    }
    assert_eq!(
        remote_refs(&world, "refs/bay/intents"),
        Vec::<String>::new()
    );

    // The next merge's marker waits for the next compaction.
    let third = world.merged("cat", "third", "src/third.txt", "3\n");
    assert_eq!(
        remote_refs(&world, "refs/bay/landed"),
        [format!("refs/bay/landed/{third}")]
    );
    assert_eq!(remote_refs(&world, "refs/bay/compacted"), shards);
    assert_eq!(world.remote_ref(&shard), Some(index.clone()));
    // Plain Git reads the index.
    let kept = git_dir(
        &world.remote,
        &["show", &format!("{index}:changes/{}/{first}", &first[..2])],
    );
    assert!(kept.contains("bay.compacted/1"), "{kept}");

    // A fresh clone reads the compacted change as merged, with its commit.
    let dave = world.clone_as("dave");
    let status = bay(&dave, "dave", &["status", &first]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert!(
        status.doc.to_string().contains(&merge_of(&world, &first)),
        "{status:?}"
    );
    // It fetched the one change shard that holds it, and the intent shard of its undos:
    // never the whole index.
    let fetched = shards_fetched(&dave);
    let undos = bay_core::id::intent_digest(&format!("undo of {first}"));
    let expected = [
        format!("changes/{}", &first[..1]),
        format!("intents/{}", &undos[..1]),
    ];
    assert!(
        fetched.iter().all(|shard| expected.contains(shard)) && fetched.contains(&expected[0]),
        "{fetched:?} of {:?}",
        remote_refs(&world, "refs/bay/compacted")
    );

    // A fresh clone's start of a new intent fetches the one intent shard its intent would be
    // in (should the remote hold it), and no change shard.
    let erin = world.clone_as("erin");
    let new = bay(
        &erin,
        "erin",
        &["start", "tidy", "--paths", "src/other.txt"],
    );
    assert_eq!(new.code, 0, "{new:?}");
    let tidy = format!("intents/{}", &bay_core::id::intent_digest("tidy")[..1]);
    let fetched = shards_fetched(&erin);
    assert!(fetched.iter().all(|shard| *shard == tidy), "{fetched:?}");

    // A retry of its merge says it merged already, as before compaction, and merges nothing.
    let retry = bay(&view, "ann", &["merge"]);
    assert_eq!(retry.doc["reason"], "CHANGE_ALREADY_MERGED", "{retry:?}");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&first), 1);

    // Its id names it still.
    let by_id = bay(&dave, "dave", &["start", &first]);
    assert_eq!(by_id.doc["reason"], "CHANGE_ALREADY_MERGED", "{by_id:?}");

    // Its intent started again opens the next generation.
    let again = bay(
        &dave,
        "dave",
        &["start", "greet", "--paths", "src/greeting.txt"],
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.doc["detail"]["generation"], 2, "{again:?}");
    assert_eq!(again.doc["detail"]["supersedes"], first.as_str());

    // A change may wait for it, or fix it.
    let after = bay(
        &dave,
        "dave",
        &[
            "start",
            "after it",
            "--paths",
            "src/a.txt",
            "--after",
            &second,
        ],
    );
    assert_eq!(after.code, 0, "{after:?}");
    let fix = bay(
        &dave,
        "dave",
        &[
            "start",
            "fix it",
            "--paths",
            "src/other.txt",
            "--fixes",
            &second,
        ],
    );
    assert_eq!(fix.code, 0, "{fix:?}");
    assert_eq!(fix.doc["detail"]["fixes"], second.as_str(), "{fix:?}");

    // And it can be undone.
    let undone = bay(&world.admin, "ann", &["undo", &first, "--wait"]);
    assert_eq!(undone.doc["decision"], "merged", "{undone:?}");
    assert_eq!(undone.doc["detail"]["reverts"], first.as_str());
    let greeting = git_dir(&world.remote, &["show", "main:src/greeting.txt"]);
    assert_eq!(greeting, "Hello\n");
    let undone_by = bay(&dave, "dave", &["status", &first]);
    assert_eq!(
        undone_by.doc["detail"]["undone_by"],
        serde_json::json!([undone.doc["change"]]),
        "{undone_by:?}"
    );

    // Once the undo is compacted too, the lineage still pairs it with what it undid.
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let undo_change = undone.doc["change"].as_str().expect("the undo's change");
    assert_eq!(
        world.remote_ref(&format!("refs/bay/changes/{undo_change}")),
        None
    );
    let lineage = bay(&dave, "dave", &["status", "--lineage"]);
    let pairs = lineage.doc["detail"]["lineage"].to_string();
    assert!(
        pairs.contains(undo_change) && pairs.contains(first.as_str()),
        "{lineage:?}"
    );
    let still = bay(&dave, "dave", &["status", &first]);
    assert_eq!(
        still.doc["detail"]["undone_by"],
        undone_by.doc["detail"]["undone_by"]
    );
    // Every shard is a line of versions, each a child of the one before and one place
    // further, back to a first with no parent at place 0. One intent merged and compacted
    // twice adds to its intent's shard twice (a runner compacts two ready changes at once).
    for n in 0..4 {
        world.submit(&ann, "ann", "once more", "src/other.txt", &format!("{n}\n"));
        bay(&world.admin, "runner", &["runner", "run", "--once"]);
        bay(&world.admin, "runner", &["runner", "run", "--once"]);
    }
    assert!(shard_lines(&world).into_iter().max().unwrap_or(0) > 1);
}

/// The length of each index shard's line of versions on the remote, each checked: a child of
/// the one before and one place further, back to a first with no parent at place 0.
fn shard_lines(world: &World) -> Vec<usize> {
    let mut lengths = Vec::new();
    for shard in remote_refs(world, "refs/bay/compacted/") {
        let line = git_dir(
            &world.remote,
            &["log", "--first-parent", "--format=%P%x00%B%x01", &shard],
        );
        let versions: Vec<&str> = line
            .split('\x01')
            .filter(|v| !v.trim().is_empty())
            .collect();
        for (n, version) in versions.iter().enumerate() {
            let (parents, message) = version.trim_start().split_once('\0').expect("a version");
            let place = bay_core::compact::place_in_line(message);
            assert_eq!(
                place,
                Some((versions.len() - 1 - n) as u32),
                "{shard}: {line}"
            );
            assert_eq!(
                parents.is_empty(),
                n + 1 == versions.len(),
                "{shard}: {line}"
            );
        }
        lengths.push(versions.len());
    }
    lengths
}

#[test]
fn an_abandoned_change_is_compacted_only_past_the_retention_window() {
    let world = world(1);
    let ann = world.clone_as("ann");
    let (old, _) = world.edited(&ann, "ann", "old work", "src/old.txt", "old\n", &[]);
    let (young, _) = world.edited(&ann, "ann", "young work", "src/young.txt", "young\n", &[]);
    for change in [&old, &young] {
        let abandoned = bay(&ann, "ann", &["abandon", change]);
        assert_eq!(abandoned.doc["decision"], "ok", "{abandoned:?}");
    }
    let markers = remote_refs(&world, "refs/bay/abandoned");
    assert_eq!(markers.len(), 2, "{markers:?}");
    // The old one was abandoned long ago, as its marker's name says.
    let name = markers
        .iter()
        .find(|name| name.ends_with(old.as_str()))
        .expect("the old change's marker");
    let value = world.remote_ref(name).expect("its value");
    let long_ago = format!("refs/bay/abandoned/0000000001/{old}");
    git_dir(&world.remote, &["update-ref", &long_ago, &value]);
    git_dir(&world.remote, &["update-ref", "-d", name]);

    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.remote_ref(&format!("refs/bay/changes/{old}")), None);
    assert_eq!(world.remote_ref(&long_ago), None);
    assert!(
        world
            .remote_ref(&format!("refs/bay/changes/{young}"))
            .is_some()
    );
    assert_eq!(remote_refs(&world, "refs/bay/abandoned").len(), 1);

    // Still readable as abandoned; its intent opens a new change; its drafts are gone.
    let dave = world.clone_as("dave");
    let status = bay(&dave, "dave", &["status", &old]);
    assert_eq!(status.code, 0, "{status:?}");
    assert_eq!(status.doc["detail"]["open"], false, "{status:?}");
    assert_eq!(status.doc["detail"]["intent"], "old work", "{status:?}");
    let by_id = bay(&dave, "dave", &["start", &old]);
    assert_eq!(by_id.doc["decision"], "failed", "{by_id:?}");
    assert!(
        by_id.doc.to_string().contains("bay start \\\"old work\\\""),
        "{by_id:?}"
    );
    let again = bay(
        &dave,
        "dave",
        &["start", "old work", "--paths", "src/old.txt"],
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.doc["detail"]["generation"], 2, "{again:?}");
    assert_eq!(again.doc["detail"]["supersedes"], old.as_str());
}

#[test]
fn a_change_whose_work_was_already_on_main_is_compacted_past_the_retention_window() {
    let world = world(1);
    let first = world.merged("ann", "the same line", "src/same.txt", "same\n");
    // Bob's change makes the very edit that merged: its candidate is main, so no_effect.
    let bob = world.clone_as("bob");
    let (late, view) = world.submit(&bob, "bob", "the same line again", "src/same.txt", "same\n");
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["state"], "no_effect", "{status:?}");
    let markers = remote_refs(&world, "refs/bay/no-effect");
    assert_eq!(markers.len(), 1, "{markers:?}");
    assert!(markers[0].ends_with(late.as_str()), "{markers:?}");
    // Adoptable until the window passes: a pass now leaves it (the merged one goes).
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.remote_ref(&format!("refs/bay/changes/{first}")), None);
    assert!(
        world
            .remote_ref(&format!("refs/bay/changes/{late}"))
            .is_some()
    );

    // Its marker says it ended long ago: the next pass compacts it.
    let value = world.remote_ref(&markers[0]).expect("its value");
    let long_ago = format!("refs/bay/no-effect/0000000001/{late}");
    git_dir(&world.remote, &["update-ref", &long_ago, &value]);
    git_dir(&world.remote, &["update-ref", "-d", &markers[0]]);
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.remote_ref(&format!("refs/bay/changes/{late}")), None);
    assert!(remote_refs(&world, "refs/bay/no-effect").is_empty());

    // Still read as no_effect; by id it names its intent; its intent opens the next change.
    let dave = world.clone_as("dave");
    let status = bay(&dave, "dave", &["status", &late]);
    assert_eq!(status.doc["state"], "no_effect", "{status:?}");
    let by_id = bay(&dave, "dave", &["start", &late]);
    assert_eq!(by_id.doc["decision"], "failed", "{by_id:?}");
    assert!(
        by_id.doc.to_string().contains("already on main"),
        "{by_id:?}"
    );
    let again = bay(
        &dave,
        "dave",
        &["start", "the same line again", "--paths", "src/same.txt"],
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(again.doc["detail"]["generation"], 2, "{again:?}");
    assert_eq!(again.doc["detail"]["supersedes"], late.as_str());
}
