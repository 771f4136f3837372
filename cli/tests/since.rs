//! The runner's log and `bay status --since` with real Git: each operation a runner ends is one
//! `bay.event/1` commit on `refs/bay/log/<runner>` on the remote, and `--since` lists the merges
//! and events after a cursor, merges made outside bay included.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::*;

/// `bay status --since [<cursor>]` (and `--merged`) in `dir`; the answer, which must be ok.
fn since(dir: &Path, cursor: Option<&str>, merged: bool) -> Value {
    let mut args = vec!["status", "--since"];
    args.extend(cursor);
    if merged {
        args.push("--merged");
    }
    let ran = bay(dir, "ann", &args);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    ran.doc["detail"].clone()
}

fn cursor(detail: &Value) -> String {
    detail["cursor"].as_str().expect("a cursor").to_string()
}

fn list<'a>(detail: &'a Value, key: &str) -> &'a Vec<Value> {
    detail[key].as_array().expect("a list")
}

/// Commits `content` to `path` in a fresh clone and pushes it to main with plain Git.
fn push_around_bay(world: &World, path: &str, content: &str) -> String {
    let clone = world.clone_as("carol");
    write(&clone, path, content);
    git(
        &clone,
        &["commit", "--quiet", "--all", "-m", "edit around bay"],
    );
    git(&clone, &["push", "--quiet", "origin", "main"]);
    git(&clone, &["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn the_log_holds_one_event_per_end_and_since_lists_what_came_after_each_cursor() {
    let world = World::standard();
    let start = since(&world.admin, None, false);
    assert_eq!(
        list(&start, "merges").len(),
        0,
        "a first call lists nothing"
    );
    assert_eq!(list(&start, "events").len(), 0);
    let first = cursor(&start);

    // One change merges; another fails its check (an empty file) and is refused.
    let ann = world.clone_as("ann");
    let (good, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let bob = world.clone_as("bob");
    let (bad, _) = world.submit(&bob, "bob", "empty", "src/empty.txt", "");
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");

    let events = log_events(&world, "admin");
    assert_eq!(events.len(), 2, "one event each: {events:?}");
    let merged = events
        .iter()
        .find(|(_, e)| e["change"] == good.as_str())
        .expect("the merge's event");
    let refused = events
        .iter()
        .find(|(_, e)| e["change"] == bad.as_str())
        .expect("the refusal's event");
    assert_eq!(
        merged.0,
        format!("bay: {good}.1 merged"),
        "named by its op id"
    );
    assert_eq!(merged.1["kind"], "merged");
    assert_eq!(merged.1["actor"], "ann");
    let marker = world
        .remote_ref(&format!("refs/bay/landed/{good}"))
        .expect("the marker");
    assert_eq!(merged.1["commit"], marker.as_str());
    assert_eq!(refused.1["kind"], "refused");
    assert_eq!(refused.1["code"], "CHECK_FAILED");
    assert_eq!(refused.1["actor"], "bob");

    let after_first = since(&world.admin, Some(&first), false);
    let merges = list(&after_first, "merges");
    assert_eq!(merges.len(), 1, "{after_first}");
    assert_eq!(merges[0]["commit"], marker.as_str());
    assert_eq!(merges[0]["change"], good.as_str());
    assert_eq!(merges[0]["actor"], "ann");
    assert_eq!(merges[0]["outside_bay"], false);
    let ids: Vec<&Value> = list(&after_first, "events")
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert_eq!(ids.len(), 2, "{after_first}");
    assert!(ids.contains(&&merged.1["id"]) && ids.contains(&&refused.1["id"]));
    assert_eq!(after_first["more"], false);
    let second = cursor(&after_first);

    // After one more merge, the second cursor lists exactly it and its event.
    let third = world.merged("dan", "other", "src/other.txt", "Another\n");
    let after_second = since(&world.admin, Some(&second), false);
    let merges = list(&after_second, "merges");
    assert_eq!(merges.len(), 1, "{after_second}");
    assert_eq!(merges[0]["change"], third.as_str());
    let events = list(&after_second, "events");
    assert_eq!(events.len(), 1, "{after_second}");
    assert_eq!(events[0]["change"], third.as_str());
    assert_eq!(events[0]["kind"], "merged");
    assert_eq!(events[0]["commit"], merges[0]["commit"]);

    // `--merged` lists the same merges, and no events.
    let merged_only = since(&world.admin, Some(&second), true);
    assert_eq!(list(&merged_only, "merges"), list(&after_second, "merges"));
    assert!(merged_only.get("events").is_none(), "{merged_only}");
}

#[test]
fn a_plain_push_to_main_shows_as_outside_bay_with_its_event() {
    let world = World::standard();
    let start = cursor(&since(&world.admin, None, true));
    let commit = push_around_bay(&world, "src/other.txt", "Edited by hand\n");

    let merged = since(&world.admin, Some(&start), true);
    let merges = list(&merged, "merges");
    assert_eq!(merges.len(), 1, "{merged}");
    assert_eq!(merges[0]["commit"], commit.as_str());
    assert_eq!(merges[0]["outside_bay"], true);
    assert_eq!(merges[0]["merged_as"], "outside");
    assert_eq!(merges[0]["subject"], "edit around bay");
    assert_eq!(merged["off_first_parent"], 0);

    let all = since(&world.admin, Some(&start), false);
    let events = list(&all, "events");
    assert_eq!(events.len(), 1, "{all}");
    assert_eq!(events[0]["kind"], "outside_merge");
    assert_eq!(events[0]["commit"], commit.as_str());
    assert_eq!(events[0]["merged_as"], "outside");

    // A merge of a side branch of two commits: one row, the two commits off the line counted.
    let next = cursor(&merged);
    let clone = world.clone_as("frank");
    git(&clone, &["checkout", "--quiet", "-b", "side"]);
    for n in ["one", "two"] {
        write(&clone, "src/side.txt", n);
        git(&clone, &["add", "--all"]);
        git(&clone, &["commit", "--quiet", "-m", n]);
    }
    git(&clone, &["checkout", "--quiet", "main"]);
    write(&clone, "src/greeting.txt", "Hello from main\n");
    git(&clone, &["commit", "--quiet", "--all", "-m", "on main"]);
    git(
        &clone,
        &["merge", "--quiet", "--no-ff", "-m", "merge side", "side"],
    );
    git(&clone, &["push", "--quiet", "origin", "main"]);
    let merged = since(&world.admin, Some(&next), true);
    let merges = list(&merged, "merges");
    let how: Vec<&Value> = merges.iter().map(|m| &m["merged_as"]).collect();
    assert_eq!(how, ["outside", "merge"], "{merged}");
    assert_eq!(merged["off_first_parent"], 2, "{merged}");
}

#[test]
fn a_cursor_bay_did_not_return_is_a_usage_error() {
    let world = World::standard();
    let good = cursor(&since(&world.admin, None, false));
    // One hex digit of the cursor's body changed to another: its checksum no longer matches.
    let mut tampered: Vec<char> = good.chars().collect();
    tampered[2] = if tampered[2] == '0' { '1' } else { '0' };
    let tampered: String = tampered.into_iter().collect();
    for bad in ["garbage", tampered.as_str()] {
        let out = Command::new(BAY)
            .arg("-C")
            .arg(&world.admin)
            .args(["status", "--json", "--since", bad])
            .output()
            .expect("bay runs");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("not a cursor bay returned"), "{stderr}");
    }
}

#[test]
fn a_cursor_whose_main_commit_this_clone_lacks_fails_saying_to_start_over() {
    let world = World::standard();
    let lacking = bay_core::machine::since::Cursor {
        main: bay_core::git::Oid::parse(&"e".repeat(40)).expect("an id"),
        logs: Default::default(),
        reds: Default::default(),
    }
    .encode();
    push_around_bay(&world, "src/other.txt", "moved\n");
    let ran = bay(&world.admin, "ann", &["status", "--since", &lacking]);
    assert_eq!(ran.code, 20, "{ran:?}");
    let why = ran.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("without a cursor"), "{ran:?}");
}

#[test]
fn help_lists_since_with_an_optional_cursor_and_merged() {
    let nowhere = tempfile::tempdir().expect("a folder");
    let help = bay(nowhere.path(), "ann", &["help", "status"]);
    let status = &help.doc["detail"]["commands"][0];
    assert_eq!(status["name"], "status", "{help:?}");
    let flag = |name: &str| {
        list(status, "arguments")
            .iter()
            .find(|a| a["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from {status}"))
    };
    assert_eq!(flag("--since")["value_optional"], true);
    assert_eq!(flag("--since")["value"], "CURSOR");
    assert_eq!(flag("--merged")["value"], Value::Null);
    let runner = bay(nowhere.path(), "ann", &["help", "runner"]);
    let writes = runner.doc["detail"]["commands"][0]["writes"]
        .as_str()
        .unwrap_or_default();
    assert!(writes.contains("refs/bay/log/<runner>"), "{writes}");
}

#[test]
fn plain_status_names_the_commits_that_went_around_bay_within_the_red_window() {
    let world = World::standard();
    world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let commit = push_around_bay(&world, "src/other.txt", "Edited by hand\n");

    let status = bay(&world.admin, "ann", &["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    let unattributed = &status.doc["detail"]["unattributed"];
    assert_eq!(unattributed["window"], 50, "{unattributed}");
    assert_eq!(unattributed["count"], 1, "{unattributed}");
    assert_eq!(
        unattributed["through_bay"], 1,
        "the commit that added the config is not read"
    );
    assert_eq!(
        unattributed["by_writer"][0]["writer"],
        "carol <carol@test.invalid>"
    );
    assert_eq!(unattributed["merges"][0]["commit"], commit.as_str());
    assert_eq!(unattributed["merges"][0]["merged_as"], "outside");
    assert_eq!(unattributed["merges"][0]["subject"], "edit around bay");

    // A window of one reads only the newest commit: a bay merge after the outside push.
    let clone = world.clone_as("erin");
    write(
        &clone,
        ".bay/config.toml",
        &format!("{CONFIG}[red]\nwindow = 1\n"),
    );
    git(
        &clone,
        &["commit", "--quiet", "--all", "-m", "a red window of one"],
    );
    git(&clone, &["push", "--quiet", "origin", "main"]);
    world.merged("dan", "other", "src/other.txt", "Again\n");
    let narrow = bay(&world.admin, "ann", &["status"]);
    let unattributed = &narrow.doc["detail"]["unattributed"];
    assert_eq!(unattributed["window"], 1, "{unattributed}");
    assert_eq!(unattributed["count"], 0, "{unattributed}");
    assert_eq!(unattributed["through_bay"], 1, "{unattributed}");
}

#[test]
fn in_a_view_since_starts_at_the_change_s_base_and_lists_only_its_events() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (mine, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let bob = world.clone_as("bob");
    let (theirs, _) = world.submit(&bob, "bob", "other", "src/other.txt", "Other too\n");
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(log_events(&world, "admin").len(), 2);

    let detail = since(&view, None, false);
    assert_eq!(detail["change"], mine.as_str(), "{detail}");
    let changes: Vec<&Value> = list(&detail, "merges")
        .iter()
        .map(|m| &m["change"])
        .collect();
    assert_eq!(
        changes,
        [mine.as_str(), theirs.as_str()],
        "every merge since its base"
    );
    let events = list(&detail, "events");
    assert_eq!(events.len(), 1, "only its own: {detail}");
    assert_eq!(events[0]["change"], mine.as_str());
    assert_eq!(events[0]["kind"], "merged");
}

#[test]
fn a_merge_outside_bay_that_hides_a_bay_merge_is_named_and_the_bay_merge_listed_with_via() {
    let world = World::standard();
    // A clone from before the bay merge works on, then merges main in with its own commit as
    // the first parent, as a forge merge can, and pushes: the bay merge is off the line.
    let forge = world.clone_as("forge");
    let start = cursor(&since(&world.admin, None, false));
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    write(&forge, "src/other.txt", "Forge work\n");
    git(&forge, &["commit", "--quiet", "--all", "-m", "forge work"]);
    git(
        &forge,
        &[
            "pull",
            "--quiet",
            "--no-rebase",
            "--no-edit",
            "origin",
            "main",
        ],
    );
    git(&forge, &["push", "--quiet", "origin", "main"]);
    let merge = git(&forge, &["rev-parse", "HEAD"]).trim().to_string();

    let detail = since(&world.admin, Some(&start), false);
    let merges = list(&detail, "merges");
    let rows: Vec<(&Value, &Value)> = merges.iter().map(|m| (&m["change"], &m["via"])).collect();
    assert_eq!(rows.len(), 3, "{detail}");
    assert_eq!(
        rows[1],
        (&Value::from(change.as_str()), &Value::from(merge.as_str()))
    );
    assert_eq!(merges[2]["merged_as"], "merge");
    let not_linear: Vec<&Value> = list(&detail, "events")
        .iter()
        .filter(|e| e["kind"] == "main_not_linear")
        .collect();
    assert_eq!(not_linear.len(), 1, "{detail}");
    assert_eq!(not_linear[0]["commit"], merge.as_str());

    let status = bay(&world.admin, "ann", &["status"]);
    let warnings = status.doc["detail"]["warnings"]
        .as_array()
        .expect("warnings");
    assert_eq!(warnings[0]["warning"], "main_not_linear", "{status:?}");
    let unattributed = &status.doc["detail"]["unattributed"];
    assert_eq!(unattributed["merges_off_first_parent"], 1, "{unattributed}");
    assert_eq!(unattributed["through_bay"], 1, "{unattributed}");
}
