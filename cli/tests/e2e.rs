//! bay end to end: the `bay` binary, real `git`, real bare remotes, real sandboxed checks.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use support::*;

#[test]
fn a_change_started_edited_and_merged_by_a_runner_lands_once_with_its_evidence() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(
        &ann,
        "ann",
        "greet warmly",
        "src/greeting.txt",
        "Hello, friend\n",
    );
    assert!(
        view.starts_with(ann.join(".git/bay/views")),
        "the view lives under the common Git directory"
    );
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(status.doc["state"], "merged");
    let timing = &status.doc["detail"]["operation"]["timing"];
    assert!(
        timing["merged_at"].is_u64() && timing["total_s"].is_u64(),
        "{timing}"
    );
    assert_eq!(world.merges_of(&change), 1);
    let marker = world
        .remote_ref(&format!("refs/bay/landed/{change}"))
        .expect("the marker");
    let main = world.remote_ref("main").expect("main");
    assert_eq!(marker, main, "the marker names the merged commit");
    // The check's evidence sits on the merged tree, under the runner's producer name.
    let tree = git_dir(&world.remote, &["rev-parse", "main^{tree}"])
        .trim()
        .to_string();
    let note = git_dir(
        &world.remote,
        &[
            "notes",
            "--ref=refs/notes/bay/evidence/admin",
            "show",
            &tree,
        ],
    );
    let record: serde_json::Value =
        serde_json::from_str(note.lines().next().expect("a record")).expect("JSON");
    assert_eq!(record["verdict"], "pass");
    assert_eq!(record["check"], "files");
    assert_eq!(record["candidate"]["tree"], tree.as_str());
    // The merged file holds the bytes the agent wrote.
    assert_eq!(
        git_dir(&world.remote, &["show", "main:src/greeting.txt"]),
        "Hello, friend\n"
    );
}

#[test]
fn two_agents_racing_one_intent_get_one_change() {
    let world = World::standard();
    let clones: Vec<PathBuf> = ["ann", "bob", "cat"]
        .iter()
        .map(|name| world.clone_as(name))
        .collect();
    // Each start runs on its own thread, let go at one moment: the three race.
    let gate = std::sync::Barrier::new(clones.len());
    let changes: Vec<Ran> = std::thread::scope(|scope| {
        let racing: Vec<_> = clones
            .iter()
            .zip(["ann", "bob", "cat"])
            .map(|(clone, actor)| {
                let gate = &gate;
                scope.spawn(move || {
                    gate.wait();
                    let args = ["start", "fix the footer", "--paths", "src/greeting.txt"];
                    bay(clone, actor, &args)
                })
            })
            .collect();
        racing
            .into_iter()
            .map(|start| start.join().expect("no panic"))
            .collect()
    });
    // One start opens the change; the others, by other actors, find it live and held, and
    // refuse to adopt it: it is not idle.
    let opened: Vec<&Ran> = changes
        .iter()
        .filter(|r| r.doc["decision"] == "ok")
        .collect();
    assert_eq!(opened.len(), 1, "{changes:?}");
    let change = opened[0].doc["change"].as_str().expect("a change");
    let holder = opened[0].doc["detail"]["actor"].clone();
    for lost in changes.iter().filter(|r| r.doc["decision"] != "ok") {
        assert_eq!(lost.doc["reason"], "CHANGE_SUPERSEDED", "{lost:?}");
        assert_eq!(lost.doc["change"], change, "one intent, one change");
        assert_eq!(lost.doc["detail"]["held_by"], holder, "{lost:?}");
    }
    let intents = git_dir(
        &world.remote,
        &["for-each-ref", "--format=%(refname)", "refs/bay/intents"],
    );
    assert_eq!(intents.lines().count(), 1, "{intents}");
}

/// A world whose takeover window is three seconds (the lease two).
fn world_with_a_short_takeover() -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            "[runner]\nlease_s = 2\nheartbeat_s = 1\ntakeover_s = 3\n",
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ])
}

#[test]
fn another_actor_adopts_a_live_change_only_once_it_is_idle_for_the_takeover_window() {
    let world = world_with_a_short_takeover();
    let (ann, zed) = (world.clone_as("ann"), world.clone_as("zed"));
    let args = ["start", "tidy the greeting", "--paths", "src/greeting.txt"];
    let opened = bay(&ann, "ann", &args);
    let change = opened.doc["change"].as_str().expect("a change").to_string();
    // The same actor picks its own change up at once.
    let again = bay(&ann, "ann", &args);
    assert_eq!(again.doc["change"], change.as_str());
    assert_eq!(again.doc["detail"]["adopted"], false, "{again:?}");
    let first = Instant::now();
    let held = bay(&zed, "zed", &args);
    assert_eq!(held.code, 10, "{held:?}");
    assert_eq!(held.doc["reason"], "CHANGE_SUPERSEDED", "{held:?}");
    assert_eq!(held.doc["change"], change.as_str());
    assert_eq!(held.doc["detail"]["held_by"], "ann");
    assert_eq!(held.doc["detail"]["takeover_s"], 3);
    // Once zed's clone has seen the chain stand still for the window, zed adopts it. The
    // clone's record of when it first saw the tip is in whole seconds.
    let mut adopted = None;
    wait_until(Duration::from_secs(60), "zed's adoption", || {
        let ran = bay(&zed, "zed", &args);
        let ok = ran.doc["decision"] == "ok";
        adopted = Some(ran);
        ok
    });
    let adopted = adopted.expect("a start ran");
    assert!(
        first.elapsed() >= Duration::from_secs(2),
        "adopted too soon"
    );
    assert_eq!(adopted.doc["change"], change.as_str());
    assert_eq!(adopted.doc["detail"]["adopted"], true, "{adopted:?}");
}

#[test]
fn the_actor_is_bay_actor_else_the_user_name_else_agent_and_says_which() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let start = |intent: &str, env: &[(&str, &str)]| {
        let args = ["start", intent, "--paths", "src/greeting.txt"];
        let mut command = Command::new(BAY);
        command
            .arg("-C")
            .arg(&ann)
            .arg("--json")
            .args(args)
            .env_remove("BAY_ACTOR")
            .env_remove("USER")
            .env_remove("LOGNAME");
        for (name, value) in env {
            command.env(name, value);
        }
        let ran = held(&mut command, &args);
        assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
        (
            ran.doc["detail"]["actor"].clone(),
            ran.doc["detail"]["actor_source"].clone(),
        )
    };
    let named = start("one", &[("BAY_ACTOR", "ann"), ("USER", "zed")]);
    assert_eq!(named, ("ann".into(), "env".into()));
    let user = start("two", &[("USER", "zed")]);
    assert_eq!(user, ("zed".into(), "user-default".into()));
    let logname = start("three", &[("LOGNAME", "yve")]);
    assert_eq!(logname, ("yve".into(), "user-default".into()));
    let nobody = start("four", &[]);
    assert_eq!(nobody, ("agent".into(), "default".into()));
}

#[test]
fn at_a_terminal_a_command_prints_its_plain_sentence_and_exits_as_through_a_pipe() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let piped = bay(&ann, "ann", &["status"]);
    let (text, exit) = at_a_terminal(&ann, "ann", "status");
    assert_eq!(text, piped.doc["say"].as_str().expect("a sentence"));
    assert!(!text.starts_with('{'), "{text}");
    assert_eq!((exit, piped.code), (Some(0), 0), "{text}");
}

#[test]
fn merge_or_abandon_with_no_change_outside_a_view_is_a_usage_error_naming_both_ways() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    for command in ["merge", "abandon"] {
        let out = Command::new(BAY)
            .arg("-C")
            .arg(&ann)
            .args(["--json", command])
            .output()
            .expect("bay runs");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains(&format!("`bay {command} <change>`"))
                && said.contains("run it in the change's folder")
                && said.contains(&format!("Usage: bay {command}")),
            "{said}"
        );
        let (shown, exit) = at_a_terminal(&ann, "ann", command);
        assert_eq!(exit, Some(2), "{shown}");
        assert!(
            shown.contains(&format!("`bay {command} <change>`")),
            "{shown}"
        );
    }
}

/// Runs `bay <args>` in `dir` under `script`, which gives it a terminal for stdout and stderr
/// alike (`-e` passes bay's exit code on); what the terminal showed, and the exit code.
fn at_a_terminal(dir: &std::path::Path, actor: &str, args: &str) -> (String, Option<i32>) {
    let command = format!("{BAY} -C {} {args}", dir.display());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .env("BAY_ACTOR", actor)
        .output()
        .expect("script runs");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    (text.trim().to_owned(), out.status.code())
}

#[test]
fn merge_wait_and_a_runner_tell_a_terminal_each_step_and_a_pipe_nothing() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    let main = git_dir(&world.remote, &["rev-parse", "main"]);
    let (shown, code) = at_a_terminal(&view, "ann", "merge --wait");
    assert_eq!(code, Some(0), "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[..lines.len() - 1],
        [
            format!("Building {change}.1.1 on main {}", &main[..7]),
            format!("Checking {change} with files (any), for at most 60 s"),
            format!("Adding {change}.1 to main"),
        ],
        "{shown}"
    );
    assert!(lines[lines.len() - 1].starts_with("This change is now part of main"));

    // Through a pipe: the document on stdout, and on stderr the sentence alone.
    let (second, view) = world.edited(&ann, "ann", "again", "src/greeting.txt", "Yo\n", &[]);
    let piped = Command::new(BAY)
        .arg("-C")
        .arg(&view)
        .args(["merge", "--wait"])
        .env("BAY_ACTOR", "ann")
        .output()
        .expect("bay runs");
    let doc: serde_json::Value = serde_json::from_slice(&piped.stdout).expect("one document");
    assert_eq!(doc["decision"], "merged", "{doc}");
    assert_eq!(
        String::from_utf8_lossy(&piped.stderr).trim(),
        doc["say"].as_str().expect("a sentence")
    );
    assert_eq!(world.merges_of(&second), 1);

    // A runner says it started, then each step and each operation it ended.
    let (third, _) = world.submit(&ann, "ann", "third", "src/greeting.txt", "Hey\n");
    let (shown, code) = at_a_terminal(&world.admin, "runner", "runner run --once");
    assert_eq!(code, Some(0), "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(
        lines[0], "Runner admin works the queue of main once, until nothing is left to do",
        "{shown}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with(&format!("{third}.1 is now part of main ("))),
        "{shown}"
    );
    let piped = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(piped.stderr, "", "--json prints nothing on stderr");
}

#[test]
fn a_declared_path_outside_the_repository_with_a_wildcard_or_padded_is_a_usage_error() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    // Git drops a sparse pattern's trailing spaces: `src ` would show `src/`.
    for path in [
        "../secrets",
        "src/*.txt",
        "src ",
        " src",
        "src /greeting.txt",
    ] {
        let out = Command::new(BAY)
            .arg("-C")
            .arg(&ann)
            .args(["--json", "start", "peek", "--paths", path])
            .output()
            .expect("bay runs");
        assert_eq!(out.status.code(), Some(2), "{path}");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(said.contains(&format!("{path:?}")), "{said}");
    }
    let changes = git_dir(&world.remote, &["for-each-ref", "refs/bay/changes"]);
    assert!(changes.is_empty(), "nothing was started: {changes}");
}

#[test]
fn a_view_works_offline_after_the_start() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    // The remote goes away: the view's files, its history and its diff need none of it.
    let away = world.root.path().join("away.git");
    std::fs::rename(&world.remote, &away).expect("the remote goes away");
    assert_eq!(
        std::fs::read_to_string(view.join("src/greeting.txt")).expect("the file"),
        "Hi\n"
    );
    let diff = git(&view, &["diff", "--name-only"]);
    assert_eq!(diff.trim(), "src/greeting.txt");
    git(&view, &["log", "-1", "--format=%H"]);
    let status = git(&view, &["status", "--porcelain"]);
    assert_eq!(status.trim(), "M src/greeting.txt");
    // Asking to merge needs the remote, and says it could not reach it.
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "failed", "{merge:?}");
    std::fs::rename(&away, &world.remote).expect("the remote is back");
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&change), 1);
}

#[test]
fn two_changes_to_the_same_lines_give_merge_conflict_with_the_paths_and_a_repair_merges() {
    let world = World::standard();
    let (ann, bob) = (world.clone_as("ann"), world.clone_as("bob"));
    let (first, _) = world.submit(&ann, "ann", "French", "src/greeting.txt", "Bonjour\n");
    let (second, bob_view) = world.submit(&bob, "bob", "Spanish", "src/greeting.txt", "Hola\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&first), 1);
    let refused = bay(&bob_view, "bob", &["status"]);
    assert_eq!(refused.code, 10, "{refused:?}");
    assert_eq!(refused.doc["reason"], "MERGE_CONFLICT");
    assert_eq!(
        refused.doc["detail"]["paths"],
        serde_json::json!(["src/greeting.txt"])
    );
    assert!(refused.doc["next_step"].is_string() && refused.doc["allowed"].is_array());
    let said = refused.doc["say"].as_str().unwrap_or_default();
    assert!(
        said.contains("(src/greeting.txt)") && said.contains(&format!("`bay start {second}`")),
        "{said}"
    );
    // bob picks the change up: the view shows the conflict; he settles it and asks again.
    let again = bay(&bob, "bob", &["start", &second]);
    assert_eq!(
        again.doc["detail"]["conflicts"],
        serde_json::json!(["src/greeting.txt"]),
        "{again:?}"
    );
    let said = again.doc["say"].as_str().unwrap_or_default();
    assert!(
        said.contains("same lines (src/greeting.txt); settle them in the folder"),
        "{said}"
    );
    let marked = std::fs::read_to_string(bob_view.join("src/greeting.txt")).expect("the file");
    assert_eq!(
        marked,
        format!("<<<<<<< main\nBonjour\n=======\nHola\n>>>>>>> change {second}\n"),
        "the sides are named for people"
    );
    assert!(
        again.doc["say"]
            .as_str()
            .is_some_and(|s| s.contains("conflict markers")),
        "{again:?}"
    );
    // Asked to merge with the markers still there, bay refuses and names the file; main
    // keeps what it had.
    let main_before = world.remote_ref("refs/heads/main");
    for args in [&["merge"][..], &["merge", "--wait"]] {
        let early = bay(&bob_view, "bob", args);
        assert_eq!(early.doc["reason"], "MERGE_CONFLICT", "{early:?}");
        assert_eq!(early.code, 10);
        assert_eq!(early.doc["detail"]["markers_remain"], true, "{early:?}");
        assert_eq!(
            early.doc["detail"]["paths"],
            serde_json::json!(["src/greeting.txt"])
        );
        assert!(
            early.doc["say"]
                .as_str()
                .is_some_and(|s| s.contains("markers"))
        );
    }
    assert_eq!(world.remote_ref("refs/heads/main"), main_before);
    // Only one marker line left is still unsettled.
    let closing = format!("Bonjour\nHola\n>>>>>>> change {second}\n");
    write(&bob_view, "src/greeting.txt", &closing);
    let half = bay(&bob_view, "bob", &["merge"]);
    assert_eq!(half.doc["reason"], "MERGE_CONFLICT", "{half:?}");
    write(&bob_view, "src/greeting.txt", "Bonjour\nHola\n");
    assert_eq!(bay(&bob_view, "bob", &["merge"]).doc["decision"], "queued");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&second), 1);
    assert_eq!(
        git_dir(&world.remote, &["show", "main:src/greeting.txt"]),
        "Bonjour\nHola\n"
    );
}

#[test]
fn a_failed_check_names_its_failed_units_in_the_sentence() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (_, view) = world.edited(&ann, "ann", "empty", "src/greeting.txt", "", &[]);
    let refused = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(refused.doc["reason"], "CHECK_FAILED", "{refused:?}");
    let said = refused.doc["say"].as_str().unwrap_or_default();
    assert!(
        said.starts_with("A required check did not pass (files: src/greeting.txt);"),
        "{said}"
    );
}

#[test]
fn a_check_that_reports_another_tree_gives_check_unknown() {
    let lying = CHECK.replace(
        r#""$commit" "$tree" "$count""#,
        r#""$commit" "0000000000000000000000000000000000000000" "$count""#,
    );
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", &lying, true),
    ]);
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_UNKNOWN", "{status:?}");
    assert_eq!(status.code, 10);
    assert_eq!(world.merges_of(&change), 0);
}

#[test]
fn merge_wait_with_no_runner_merges_here() {
    let world = World::standard();
    // The remote keeps a reflog of every ref, so the test can count the pushes to the chain.
    git_dir(
        &world.remote,
        &["config", "core.logAllRefUpdates", "always"],
    );
    let ann = world.clone_as("ann");
    // The second merge in the clone finds its runner's log and evidence notes on the remote,
    // which the first one wrote: it must still build and check one candidate.
    for (intent, text) in [("greet", "Hi there\n"), ("greet again", "Hello there\n")] {
        let start = bay(
            &ann,
            "ann",
            &["start", intent, "--paths", "src/greeting.txt"],
        );
        let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
        write(&view, "src/greeting.txt", text);
        let merged = bay(&view, "ann", &["merge", "--wait"]);
        assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
        assert_eq!(merged.code, 0);
        let change = start.doc["change"].as_str().expect("a change");
        assert_eq!(
            merged.doc["candidate"],
            format!("{change}.1.1"),
            "one candidate"
        );
        assert_eq!(world.merges_of(change), 1);
        let candidates = world.chain(change);
        let candidates = candidates.iter().filter(|s| s["kind"] == "candidate");
        assert_eq!(
            candidates.count(),
            1,
            "{intent}: one candidate built and checked"
        );
        // With nothing queued ahead, the request went up with the runner's claim: the start,
        // the request with the claim and its candidate, and the check's record with the
        // merge moved the chain (a request of its own, or a refused record, would add one).
        let pushes = git_dir(
            &world.remote,
            &[
                "reflog",
                "show",
                "--format=%H",
                &format!("refs/bay/changes/{change}"),
            ],
        );
        assert_eq!(pushes.lines().count(), 3, "{intent}: {pushes}");
        // Asking again changes nothing and says so.
        let again = bay(&view, "ann", &["merge"]);
        assert_eq!(again.doc["reason"], "CHANGE_ALREADY_MERGED", "{again:?}");
        assert_eq!(world.merges_of(change), 1);
    }
}

#[test]
fn a_runner_killed_in_the_middle_of_a_check_is_taken_over_after_the_lease_and_merges_once() {
    let world = world_with_an_endless_check();
    let ann = world.clone_as("ann");
    let (change, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let mut a = endless_runner(&world.admin);
    let checks = world.admin.join(".git/bay/check");
    wait_until(Duration::from_secs(60), "runner a inside its check", || {
        started(&checks)
    });
    // While the operation runs, its candidate is kept by a local ref.
    let op = format!("refs/bay/inflight/{change}.1");
    assert_eq!(
        inflight(&world.admin),
        op,
        "the candidate is kept while its check runs"
    );
    a.kill().expect("kill -9 runner a");
    a.wait().expect("runner a is gone");
    let b = world.clone_as("b");
    let pass = bay_with(
        &b,
        "runner",
        &["runner", "run", "--once"],
        &[("BAY_SLOW", "0")],
    );
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&change), 1, "merged exactly once");
    let claims: Vec<String> = world
        .chain(&change)
        .iter()
        .filter(|step| step["kind"] == "claim")
        .map(|step| step["by"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(claims, vec!["admin", "b"], "b took the claim over from a");
    assert_eq!(
        inflight(&b),
        "",
        "the operation ended with b's push, and b's ref for its candidate went with it"
    );
    let outcome = world.chain(&change).last().cloned().expect("an outcome");
    assert_eq!(
        (outcome["kind"].as_str(), outcome["by"].as_str()),
        (Some("outcome"), Some("b"))
    );
}

#[test]
fn merge_wait_with_seconds_watches_only_while_the_change_waits_for_a_runner() {
    let world = world_with_an_endless_check();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    // No runner: the seconds run out while the change waits, and it is queued still.
    let waited = bay(&view, "ann", &["merge", "--wait=1"]);
    assert_eq!(waited.doc["decision"], "queued", "{waited:?}");
    assert_eq!(waited.doc["state"], "submitted", "{waited:?}");
    assert_eq!(waited.code, 0);
    // A runner takes it: the watch returns as soon as the change runs, long before its
    // seconds run out, and the run goes on.
    let mut runner = endless_runner(&world.admin);
    let window = Duration::from_secs(120);
    let began = std::time::Instant::now();
    let watched = bay(&view, "ann", &["merge", "--wait=120"]);
    let took = began.elapsed();
    runner.kill().expect("stop the runner");
    runner.wait().expect("the runner is gone");
    assert_eq!(watched.doc["decision"], "queued", "{watched:?}");
    assert_eq!(watched.doc["state"], "running", "{watched:?}");
    assert_eq!(watched.code, 0);
    assert!(took < window, "the watch ran its {window:?} out");
    assert_eq!(world.merges_of(&change), 0);
}

/// A world whose check first touches `started`, then runs on while `BAY_SLOW` is 1: a runner
/// started with it (see `endless_runner`) is surely inside its check until it is killed.
fn world_with_an_endless_check() -> World {
    let endless = CHECK.replace(
        "request=$(cat)",
        "request=$(cat)\ntouch started\nwhile [ \"$BAY_SLOW\" = 1 ]; do sleep 0.1; done",
    );
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy("env = [\"BAY_SLOW\"]\n"), false),
        (".bay/check", &endless, true),
    ])
}

/// A looping runner in `clone`, in the background, whose checks in
/// `world_with_an_endless_check` never end.
fn endless_runner(clone: &std::path::Path) -> std::process::Child {
    Command::new(BAY)
        .arg("-C")
        .arg(clone)
        .args(["--json", "runner", "run", "--interval-s", "1"])
        .env("BAY_SLOW", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the runner starts")
}

/// The local refs that keep candidates, in `clone`.
fn inflight(clone: &std::path::Path) -> String {
    let listed = git(
        clone,
        &["for-each-ref", "--format=%(refname)", "refs/bay/inflight"],
    );
    listed.trim().to_string()
}

/// Whether some check run under `dir` has started (it touches `started` in its tree).
/// Whether a check wrote `started` in its tree: `<dir>/<candidate>/<slot>/tree/started`.
fn started(dir: &std::path::Path) -> bool {
    let entries = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    entries(dir)
        .iter()
        .flat_map(|candidate| entries(candidate))
        .any(|slot| slot.join("tree/started").exists())
}

#[test]
fn a_runner_killed_during_its_push_leaves_no_double_merge_and_the_outcome_is_read_back() {
    let world = World::standard();
    // The remote holds every push that moves main until the test lets it go.
    let gate = world.root.path().join("gate");
    let arrived = world.root.path().join("arrived");
    let hook = format!(
        "#!/bin/sh\nwhile read old new ref; do\n  if [ \"$ref\" = refs/heads/main ]; then\n    touch {arrived}\n    while [ ! -e {gate} ]; do sleep 0.05; done\n  fi\ndone\n",
        arrived = arrived.display(),
        gate = gate.display()
    );
    write(&world.remote, "hooks/pre-receive", &hook);
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            world.remote.join("hooks/pre-receive"),
            std::fs::Permissions::from_mode(0o755),
        )
        .expect("chmod");
    }
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let mut a = world.spawn_runner(&world.admin);
    wait_until(
        Duration::from_secs(60),
        "runner a's merge push at the remote",
        || arrived.exists(),
    );
    a.kill().expect("kill -9 runner a");
    a.wait().expect("runner a is gone");
    // The push a sent still lands, with nobody left to hear the reply.
    write(world.root.path(), "gate", "");
    wait_until(Duration::from_secs(30), "the held push to land", || {
        world.merges_of(&change) == 1
    });
    let b = world.clone_as("b");
    let pass = bay(&b, "runner", &["runner", "run", "--once"]);
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&change), 1, "no double merge");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
}

#[test]
fn a_runner_that_loses_its_merge_push_reply_merges_once_and_goes_on() {
    let world = World::standard();
    // Once main has moved, the remote kills the `git push` that moved it (its client, up the
    // process tree): the push applied, and the runner, alive, never hears so.
    let armed = world.root.path().join("armed");
    let killed = world.root.path().join("killed");
    let hook = format!(
        r#"#!/bin/sh
grep -q ' refs/heads/main$' || exit 0
rm {armed} 2>/dev/null || exit 0
pid=$PPID
while [ "$pid" -gt 1 ]; do
  if tr '\0' ' ' < /proc/$pid/cmdline | grep -q ' push --porcelain'; then kill -9 "$pid" && touch {killed}; exit 0; fi
  pid=$(cut -d' ' -f4 /proc/$pid/stat)
done
"#,
        armed = armed.display(),
        killed = killed.display()
    );
    write_program(&world.remote, "hooks/post-receive", &hook);
    write(world.root.path(), "armed", "");
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let pass = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert!(
        killed.exists(),
        "the remote killed the merge push after it applied"
    );
    assert_eq!(pass.code, 0, "{pass:?}");
    assert_eq!(world.merges_of(&change), 1, "the push applied once");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    // The runner goes on: its log moved with the lost push, and its next merge builds on it.
    let (next, _) = world.submit(&ann, "ann", "part", "src/other.txt", "Bye\n");
    let again = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(world.merges_of(&change), 1, "no double merge");
    assert_eq!(world.merges_of(&next), 1, "{again:?}");
    let merged: Vec<String> = log_events(&world, "admin")
        .into_iter()
        .filter(|(_, event)| event["kind"] == "merged")
        .map(|(_, event)| event["change"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(merged, vec![change, next], "each merge logged once");
}

#[test]
fn a_check_sees_neither_home_nor_the_network_and_writes_only_its_candidate() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    let port = listener.local_addr().expect("an address").port();
    let secret_dir = tempfile::tempdir().expect("a home");
    write(secret_dir.path(), "secret", "s3cret\n");
    let home = secret_dir.path().display().to_string();
    let outside = tempfile::tempdir().expect("a folder outside");
    let probe = format!(
        r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
unit() {{ if [ "$2" = yes ]; then printf '{{"id":"%s","verdict":"product_failure","reason":"%s"}}' "$1" "$1"; else printf '{{"id":"%s","verdict":"pass"}}' "$1"; fi; }}
if cat {home}/secret >/dev/null 2>&1; then home=yes; else home=no; fi
if touch {outside}/escaped 2>/dev/null; then wrote=yes; else wrote=no; fi
if bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' 2>/dev/null; then net=yes; else net=no; fi
if [ -e "$HOME/../../../../../.git/config" ] || [ -e ../../../../../config ]; then git=yes; else git=no; fi
touch inside || exit 3
printf '{{"schema":"bay.check.result/1","exercised":{{"commit":"%s","tree":"%s"}},"plan":{{"selected":4,"completed":4}},"checks":[%s,%s,%s,%s]}}\n' "$commit" "$tree" "$(unit read-home $home)" "$(unit write-outside $wrote)" "$(unit network $net)" "$(unit see-git $git)"
"#,
        home = home,
        outside = outside.path().display(),
    );
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy("")
                .replace("command = \".bay/check\"", "command = \".bay/probe\"")
                .replace("adapter = [\".bay/check\"]", "adapter = [\".bay/probe\"]")
                .replace(
                    "path = [\"/usr/bin\", \"/bin\"]",
                    "path = [\"/usr/bin\", \"/bin\"]\nnetwork = false",
                ),
            false,
        ),
        (".bay/probe", &probe, true),
    ]);
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    // The runner's clone says no sandbox: only the machine's owner may, so it stays.
    git(&world.admin, &["config", "bay.executorSandbox", "none"]);
    let pass = bay_with(
        &world.admin,
        "runner",
        &["runner", "run", "--once"],
        &[("HOME", &home)],
    );
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(
        status.doc["decision"], "merged",
        "every probe found the door shut: {status:?}"
    );
    assert_eq!(world.merges_of(&change), 1);
    assert!(!outside.path().join("escaped").exists());

    // The same probes, with the sandbox turned off on purpose by the machine's owner, find
    // every door open: the check fails on each, so the pass above was the sandbox's doing.
    write(
        secret_dir.path(),
        ".gitconfig",
        "[bay]\n\texecutorSandbox = none\n",
    );
    let bob = world.clone_as("bob");
    let (second, view) = world.submit(&bob, "bob", "greet again", "src/greeting.txt", "Hey\n");
    bay_with(
        &world.admin,
        "runner",
        &["runner", "run", "--once"],
        &[("HOME", &home)],
    );
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_FAILED", "{status:?}");
    assert_eq!(world.merges_of(&second), 0);
    let tree = world
        .chain(&second)
        .iter()
        .rev()
        .find(|s| s["kind"] == "candidate")
        .map(|s| s["tree"].clone());
    let tree = tree
        .and_then(|t| t.as_str().map(str::to_string))
        .expect("a candidate tree");
    let note = git_dir(
        &world.remote,
        &[
            "notes",
            "--ref=refs/notes/bay/evidence/admin",
            "show",
            &tree,
        ],
    );
    for probe in ["read-home", "write-outside", "network", "see-git"] {
        assert!(
            note.contains(&format!(
                "\"id\":\"{probe}\",\"verdict\":\"product_failure\""
            )),
            "{probe} passed without a sandbox: {note}"
        );
    }
    drop(listener);
}

#[test]
fn policy_missing_and_config_missing_are_named() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
    ]);
    let ann = world.clone_as("ann");
    let (_, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "POLICY_MISSING", "{status:?}");

    let bare = World::new(&[("src/greeting.txt", "Hello\n", false)]);
    let bob = bare.clone_as("bob");
    let refused = bay(&bob, "bob", &["start", "greet", "--paths", "src"]);
    assert_eq!(refused.doc["reason"], "CONFIG_MISSING", "{refused:?}");
    assert_eq!(refused.code, 10);
}

#[test]
fn an_invalid_policy_is_refused_naming_its_key_table_and_line() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy("colour = \"blue\"\n"), false),
        (".bay/check", CHECK, true),
    ]);
    let ann = world.clone_as("ann");
    let (_, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "POLICY_INVALID", "{status:?}");
    let why = status.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("colour") && why.contains("[[check]]") && why.contains("line 11"),
        "{why}"
    );

    // An invalid config fails every command with exit 20, naming the problem.
    let broken = World::new(&[(".bay/config.toml", "[runner]\nlease_s = \"soon\"\n", false)]);
    let failed = bay(&broken.admin, "x", &["status"]);
    assert_eq!(failed.code, 20, "{failed:?}");
    assert!(
        failed.doc["detail"]["why"]
            .as_str()
            .unwrap_or_default()
            .contains("lease_s")
    );
}

#[test]
fn abandon_is_only_for_the_holder_and_then_anyone_can_adopt() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let start = bay(&ann, "ann", &["start", "tidy", "--paths", "src/other.txt"]);
    let change = start.doc["change"].as_str().expect("a change").to_string();
    let refused = bay(&ann, "bob", &["abandon", &change]);
    assert_eq!(refused.doc["reason"], "ABANDON_REFUSED", "{refused:?}");
    let done = bay(&ann, "ann", &["abandon", &change]);
    assert_eq!(done.doc["decision"], "ok", "{done:?}");
    let adopted = bay(&ann, "bob", &["start", "tidy", "--paths", "src/other.txt"]);
    assert_eq!(adopted.doc["change"], change.as_str());
    assert_eq!(adopted.doc["detail"]["adopted"], true);
}

#[test]
fn the_cli_speaks_json_through_a_pipe_and_a_sentence_with_usage_errors_apart() {
    let world = World::standard();
    // Through a pipe without --json: the document on stdout, the sentence on stderr.
    let out = Command::new(BAY)
        .arg("-C")
        .arg(&world.admin)
        .arg("status")
        .output()
        .expect("runs");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one document");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        doc["say"].as_str().expect("say")
    );
    // A usage error exits 2 with no document.
    let usage = Command::new(BAY)
        .args(["merge", "--wait=soon"])
        .output()
        .expect("runs");
    assert_eq!(usage.status.code(), Some(2));
    assert!(usage.stdout.is_empty());
    let version = Command::new(BAY).arg("--version").output().expect("runs");
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("bay "));
    // Outside a repository: a failed result, exit 20.
    let nowhere = tempfile::tempdir().expect("a folder");
    let ran = bay(nowhere.path(), "ann", &["status"]);
    assert_eq!(ran.code, 20);
}

#[test]
fn help_for_a_command_bay_lacks_is_a_usage_error_naming_the_commands_it_has() {
    let nowhere = tempfile::tempdir().expect("a folder");
    // Through a pipe: exit 2, nothing on stdout, and the name and bay's commands on stderr.
    let piped = Command::new(BAY)
        .current_dir(nowhere.path())
        .args(["help", "status", "config"])
        .output()
        .expect("bay runs");
    let said = String::from_utf8_lossy(&piped.stderr);
    assert_eq!(piped.status.code(), Some(2), "{said}");
    assert!(piped.stdout.is_empty(), "no document");
    assert!(said.contains("\"config\""), "{said}");
    assert!(said.contains("start") && said.contains("merge"), "{said}");
    // At a terminal (`script` gives bay one; `-e` passes its exit code on): the same, no panic.
    let command = format!("{BAY} help config");
    let at_terminal = Command::new("script")
        .current_dir(nowhere.path())
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("script runs");
    let text = String::from_utf8_lossy(&at_terminal.stdout);
    assert_eq!(at_terminal.status.code(), Some(2), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        text.contains("\"config\"") && text.contains("start"),
        "{text}"
    );
}

#[test]
fn help_json_lists_every_command_reason_word_and_the_schema() {
    let nowhere = tempfile::tempdir().expect("a folder");
    let help = bay(nowhere.path(), "ann", &["help"]);
    let detail = &help.doc["detail"];
    let commands: Vec<&str> = detail["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for name in [
        "start", "merge", "abandon", "status", "runner", "help", "demo",
    ] {
        assert!(commands.contains(&name), "{name} missing from {commands:?}");
    }
    for command in detail["commands"].as_array().expect("commands") {
        assert!(
            command["writes"].is_string() && command["never"].is_string(),
            "{command}"
        );
    }
    let merge = detail["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .find(|c| c["name"] == "merge")
        .expect("merge");
    let wait = merge["arguments"]
        .as_array()
        .expect("arguments")
        .iter()
        .find(|a| a["name"] == "--wait")
        .expect("--wait");
    assert_eq!(wait["value_optional"], true);
    for code in bay_core::reason::ReasonCode::ALL {
        let listed = detail["reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .find(|r| r["code"] == code.as_str());
        let listed = listed.unwrap_or_else(|| panic!("{} missing", code.as_str()));
        for field in ["allowed", "retry_when", "next_step", "transient"] {
            assert!(!listed[field].is_null(), "{} has no {field}", code.as_str());
        }
    }
    assert_eq!(detail["words"].as_array().map(Vec::len), Some(7));
    assert_eq!(detail["schema"]["title"], "bay.result/1");
}

#[test]
fn a_view_holds_the_blobs_exact_bytes_whatever_core_autocrlf_says() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\nworld\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            "revision = 1\nunchecked = true\n",
            false,
        ),
    ]);
    let ann = world.clone_as("ann");
    git(&ann, &["config", "core.autocrlf", "true"]);
    // The control: a plain checkout under this setting does convert the line endings.
    git(&ann, &["rm", "--quiet", "--cached", "-r", "."]);
    git(&ann, &["reset", "--quiet", "--hard"]);
    let converted = std::fs::read(ann.join("src/greeting.txt")).expect("the file");
    assert_eq!(
        converted, b"Hello\r\nworld\r\n",
        "autocrlf converts a plain checkout here"
    );
    let start = bay(
        &ann,
        "ann",
        &["start", "greet", "--paths", "src/greeting.txt"],
    );
    let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
    assert_eq!(
        std::fs::read(view.join("src/greeting.txt")).expect("the file"),
        b"Hello\nworld\n"
    );
    write(&view, "src/greeting.txt", "Hello\nthere\n");
    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(
        git_dir(&world.remote, &["show", "main:src/greeting.txt"]),
        "Hello\nthere\n"
    );
}
