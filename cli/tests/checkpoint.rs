//! `bay hook`'s draft checkpoints against real Git: the one a session saves when it sits idle
//! becomes a checkpoint step on the change's record on the remote, so another clone's
//! `bay start <change>` gets the work of a session killed without a stop; without an answer
//! from the remote, the draft stays at the local ref, the row says so, and the session goes on.
//! A view whose work is carried over onto a draft another clone saved, with a conflict, shows
//! the markers bay recorded, and its merge is refused until they are settled.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use support::*;

const SESSION: &str = "5d2e8f10-7a3b-4c1d-9e2f-0a1b2c3d4e5f";

/// The usual world, with a checkpoint after one idle second and Claude Code's hooks.
fn world() -> World {
    let config =
        format!("{CONFIG}\n[hooks]\ncheckpoint_idle_s = 1\n\n[agent]\nproduct = \"claude\"\n");
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", &config, false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ])
}

/// Runs `bay hook <moment>` in `view` as `actor`, with a Claude Code payload of `event`.
fn hook(view: &Path, actor: &str, moment: &str, event: &str) -> Output {
    let payload = serde_json::json!({
        "session_id": SESSION,
        "cwd": view,
        "permission_mode": "default",
        "hook_event_name": event,
        "tool_calls": [],
    });
    let mut child = Command::new(BAY)
        .args(["hook", moment])
        .current_dir(view)
        .env("BAY_ACTOR", actor)
        .env_remove("CLAUDE_ENV_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bay runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload.to_string().as_bytes())
        .expect("the payload is written");
    child.wait_with_output().expect("bay ends")
}

/// The session's work record in the clone of `view`.
fn rows(view: &Path) -> Vec<Value> {
    let common = git(view, &["rev-parse", "--git-common-dir"]);
    let record = view
        .join(common.trim())
        .join("bay/sessions")
        .join(SESSION)
        .join("record.jsonl");
    std::fs::read_to_string(record)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("a row"))
        .collect()
}

fn kinds(world: &World, change: &str) -> Vec<String> {
    world
        .chain(change)
        .iter()
        .map(|step| step["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A session starts in a view, edits, and sits idle past the interval: its next event (a
/// step's end) checkpoints.
fn idle_session(view: &Path) -> Output {
    let started = hook(view, "ann", "session.start", "SessionStart");
    assert_eq!(started.status.code(), Some(0), "{started:?}");
    std::thread::sleep(Duration::from_millis(1_100));
    hook(view, "ann", "step.end", "PostToolBatch")
}

#[test]
fn an_idle_checkpoint_reaches_the_record_and_another_clone_picks_up_the_killed_session_s_work() {
    let world = world();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let step = idle_session(&view);
    assert_eq!(step.status.code(), Some(0), "{step:?}");
    let row = rows(&view).pop().expect("a row");
    assert_eq!(row["checkpoint"], true, "{row}");
    assert_eq!(row["saved"]["to"], "chain", "{row}");
    let chain = world.chain(&change);
    let last = chain.last().expect("a chain");
    assert_eq!(last["kind"], "checkpoint", "{chain:?}");
    assert_eq!(last["by"], "ann");
    let draft = last["draft"].as_str().expect("a draft");
    assert_eq!(
        git_dir(
            &world.remote,
            &["show", &format!("{draft}:src/greeting.txt")]
        ),
        "Hi\n"
    );
    // The same work again is no second step.
    std::thread::sleep(Duration::from_millis(1_100));
    let again = hook(&view, "ann", "step.end", "PostToolBatch");
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert_eq!(kinds(&world, &change).len(), chain.len(), "no new step");

    // The session is killed: no stop, no session end. The same agent on another machine
    // takes the change up, and its view holds the work.
    let elsewhere = world.clone_as("ann-laptop");
    let start = bay(&elsewhere, "ann", &["start", &change]);
    assert_eq!(start.code, 0, "{start:?}");
    let picked = Path::new(start.doc["detail"]["view"].as_str().expect("a view"));
    assert_eq!(
        std::fs::read_to_string(picked.join("src/greeting.txt")).expect("the file"),
        "Hi\n"
    );
}

#[test]
fn a_merge_after_a_checkpoint_builds_on_it_and_meets_no_conflict_with_it() {
    let world = world();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let step = idle_session(&view);
    assert_eq!(step.status.code(), Some(0), "{step:?}");
    let checkpoint = world.chain(&change).pop().expect("a step");
    assert_eq!(checkpoint["kind"], "checkpoint", "{checkpoint}");
    let draft = checkpoint["draft"].as_str().expect("a draft");
    // The line the checkpoint holds, edited again: the view's files are still all its work.
    write(&view, "src/greeting.txt", "Hi again\n");
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    let request = world.chain(&change).pop().expect("a step");
    assert_eq!(request["kind"], "request", "{request}");
    let requested = request["draft"].as_str().expect("a draft");
    assert_eq!(
        git_dir(
            &world.remote,
            &["show", &format!("{requested}:src/greeting.txt")]
        ),
        "Hi again\n"
    );
    assert_eq!(
        git_dir(&world.remote, &["rev-parse", &format!("{requested}^")]).trim(),
        draft,
        "the requested draft grew from the checkpoint"
    );
}

#[test]
fn without_an_answer_from_the_remote_the_checkpoint_stays_local_and_the_session_goes_on() {
    let world = world();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let before = kinds(&world, &change);
    let gone = world.root.path().join("gone.git");
    git(
        &ann,
        &["remote", "set-url", "origin", &gone.display().to_string()],
    );
    let step = idle_session(&view);
    assert_eq!(step.status.code(), Some(0), "never blocks: {step:?}");
    assert!(step.stdout.is_empty(), "{step:?}");
    let row = rows(&view).pop().expect("a row");
    assert_eq!(row["verdict"], "ok", "{row}");
    assert_eq!(row["saved"]["to"], "local", "{row}");
    assert_eq!(row["saved"]["code"], "REMOTE_UNREACHABLE", "{row}");
    let kept = git(
        &view,
        &[
            "rev-parse",
            "--verify",
            &format!("refs/bay/checkpoints/{change}"),
        ],
    );
    assert_eq!(
        git(
            &view,
            &["show", &format!("{}:src/greeting.txt", kept.trim())]
        ),
        "Hi\n"
    );
    assert_eq!(kinds(&world, &change), before, "the remote got nothing");
    let status = git(&view, &["status", "--porcelain"]);
    assert!(!status.is_empty(), "the edits stay unsaved for bay merge");

    let ended = hook(&view, "ann", "session.end", "SessionEnd");
    assert_eq!(ended.status.code(), Some(0), "{ended:?}");
    let row = rows(&view).pop().expect("a row");
    assert_eq!(row["saved"]["to"], "local", "{row}");
}

/// A change whose view in ann's clone says "Hi" on the greeting's line, while the same agent
/// on another machine picked it up, said "Hey" there and asked to merge: the record names a
/// draft the first view never showed. The change and that first view.
fn saved_on_two_clones(world: &World) -> (String, std::path::PathBuf) {
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let laptop = world.clone_as("ann-laptop");
    let start = bay(&laptop, "ann", &["start", &change]);
    assert_eq!(start.code, 0, "{start:?}");
    let there = Path::new(start.doc["detail"]["view"].as_str().expect("a view")).to_owned();
    write(&there, "src/greeting.txt", "Hey\n");
    let queued = bay(&there, "ann", &["merge"]);
    assert_eq!(queued.doc["decision"], "queued", "{queued:?}");
    (change, view)
}

#[test]
fn a_pick_up_over_a_conflicting_draft_saved_on_another_clone_names_the_markers() {
    let world = world();
    let (change, view) = saved_on_two_clones(&world);
    let start = bay(&view, "ann", &["start", &change]);
    assert_eq!(start.code, 0, "{start:?}");
    assert_eq!(
        start.doc["detail"]["conflicts"],
        serde_json::json!(["src/greeting.txt"])
    );
    let shown = std::fs::read_to_string(view.join("src/greeting.txt")).expect("the file");
    assert!(shown.contains("\n>>>>>>> this view\n"), "{shown}");
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["reason"], "MERGE_CONFLICT", "{merge:?}");
    assert_eq!(merge.doc["detail"]["markers_remain"], true, "{merge:?}");
}

#[test]
fn work_carried_over_a_conflicting_draft_saved_on_another_clone_is_marked_and_refused() {
    let world = world();
    let (change, view) = saved_on_two_clones(&world);

    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["reason"], "MERGE_CONFLICT", "{merge:?}");
    assert_eq!(merge.doc["detail"]["carried_over"], true, "{merge:?}");
    let say = merge.doc["say"].as_str().expect("a sentence");
    assert!(
        say.starts_with("A draft of this change saved elsewhere"),
        "{say}"
    );
    assert_eq!(
        merge.doc["detail"]["conflicts"],
        serde_json::json!(["src/greeting.txt"])
    );
    let shown = std::fs::read_to_string(view.join("src/greeting.txt")).expect("the file");
    assert_eq!(
        shown,
        format!("<<<<<<< saved draft of {change}\nHey\n=======\nHi\n>>>>>>> this view\n")
    );
    let named = world.chain(&change).pop().expect("a step");
    assert_eq!(named["kind"], "checkpoint", "{named}");
    assert_eq!(
        named["marked"]["paths"],
        serde_json::json!(["src/greeting.txt"])
    );
    // The markers left in, it is refused again; settled, it is asked for.
    let again = bay(&view, "ann", &["merge"]);
    assert_eq!(again.doc["reason"], "MERGE_CONFLICT", "{again:?}");
    assert_eq!(again.doc["detail"]["markers_remain"], true, "{again:?}");
    write(&view, "src/greeting.txt", "Hey, hi\n");
    let settled = bay(&view, "ann", &["merge"]);
    assert_eq!(settled.doc["decision"], "queued", "{settled:?}");
    let request = world.chain(&change).pop().expect("a step");
    let requested = request["draft"].as_str().expect("a draft");
    assert_eq!(
        git_dir(
            &world.remote,
            &["show", &format!("{requested}:src/greeting.txt")]
        ),
        "Hey, hi\n"
    );
}
