//! Records bay cannot read, on a real remote: a ref pointed at a blob by hand, a marker or a
//! request that says what is not so, main gone from under a check. Each is that change's (or
//! that runner's) problem alone: a runner refuses or passes it over by name, never loops, and
//! the queue goes on. Every run here is bounded, so a runner that loops fails its test.

mod support;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// Longer than any run here takes, shorter than a hung test's patience.
const BOUND: Duration = Duration::from_secs(60);

/// A world whose policy needs no check, so runs are quick.
fn unchecked() -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/other.txt", "Other\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            "revision = 1\nunchecked = true\n",
            false,
        ),
    ])
}

/// Two changes queued, one after the other: ann's first, then bob's. Returns both changes and
/// their views.
fn two_queued(world: &World) -> [(String, std::path::PathBuf); 2] {
    let ann = world.clone_as("ann");
    let bob = world.clone_as("bob");
    let first = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let second = world.submit(&bob, "bob", "other", "src/other.txt", "Another\n");
    [first, second]
}

/// A blob written into the remote, for a ref to point at.
fn blob(world: &World) -> String {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(&world.remote)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .expect("a stdin")
                .write_all(b"not a record\n")?;
            child.wait_with_output()
        })
        .expect("git hash-object runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Points `name` on the remote at `value`, as a person with plain Git would.
fn set_remote(world: &World, name: &str, value: &str) {
    git_dir(&world.remote, &["update-ref", name, value]);
}

/// `bay runner run --once` in `clone`, which must end within [`BOUND`]: a runner that loops
/// is killed, and the test fails saying so.
fn once(clone: &Path) -> Ran {
    ended(spawn_once(clone))
}

/// `bay runner run --once` in `clone`, started in the background.
fn spawn_once(clone: &Path) -> Child {
    Command::new(BAY)
        .current_dir(clone)
        .arg("-C")
        .arg(clone)
        .args(["--json", "runner", "run", "--once"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bay starts")
}

/// What a runner started with [`spawn_once`] printed, once it ended within [`BOUND`].
fn ended(mut child: Child) -> Ran {
    let until = Instant::now() + BOUND;
    let status = loop {
        if let Some(status) = child.try_wait().expect("bay runs") {
            break status;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            panic!("bay runner run --once did not end within {BOUND:?}: it loops");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .expect("a stdout")
        .read_to_string(&mut stdout)
        .expect("bay's output");
    child
        .stderr
        .take()
        .expect("a stderr")
        .read_to_string(&mut stderr)
        .expect("bay's errors");
    let doc: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|_| panic!("the runner printed no one document: {stdout:?} {stderr}"));
    let schema: serde_json::Value =
        serde_json::from_str(bay_core::schema::RESULT).expect("the schema is JSON");
    if let Err(errors) = schema_errors(&schema, &doc) {
        panic!("the runner printed a document outside bay.result/1: {errors:?}\n{doc}");
    }
    Ran {
        doc,
        code: status.code().expect("an exit code"),
        stderr,
    }
}

/// The entries `detail` of a result lists under `key` that bay cannot read, by their refs.
fn unreadable(doc: &serde_json::Value, key: &str) -> Vec<String> {
    doc["detail"][key]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|entry| entry["readable"] == false)
        .map(|entry| {
            assert!(
                entry["why"].is_string() && entry["hint"].is_string(),
                "each says why and what to do: {entry}"
            );
            entry["ref"].as_str().expect("a ref").to_string()
        })
        .collect()
}

#[test]
fn a_chain_pointed_at_a_blob_is_passed_over_by_name_and_the_queue_goes_on() {
    let world = unchecked();
    let [(ann, _), (bob, bob_view)] = two_queued(&world);
    let chain = format!("refs/bay/changes/{ann}");
    set_remote(&world, &chain, &blob(&world));

    let run = once(&world.admin);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(unreadable(&run.doc, "skipped"), vec![chain.clone()]);
    let merged = bay(&bob_view, "bob", &["status"]);
    assert_eq!(
        merged.doc["decision"], "merged",
        "the change behind it merged"
    );

    let queue = bay(&world.admin, "admin", &["status"]);
    assert_eq!(unreadable(&queue.doc, "operations"), vec![chain.clone()]);
    assert!(
        queue.doc["say"]
            .as_str()
            .is_some_and(|say| say.contains("cannot be read")),
        "{queue:?}"
    );
    let status = bay(&world.admin, "admin", &["status", &ann]);
    assert_eq!(status.doc["decision"], "failed", "{status:?}");
    assert!(
        status.doc["detail"]["why"]
            .as_str()
            .is_some_and(|why| why.contains(&chain)),
        "{status:?}"
    );
    assert_eq!(world.merges_of(&bob), 1);
}

#[test]
fn a_queue_place_pointed_at_a_blob_is_named_and_its_change_asks_again_for_a_new_place() {
    let world = unchecked();
    let [(ann, ann_view), (bob, bob_view)] = two_queued(&world);
    let place = "refs/bay/queue/0000000001";
    set_remote(&world, place, &blob(&world));

    let run = once(&world.admin);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(unreadable(&run.doc, "skipped"), vec![place.to_string()]);
    assert_eq!(bay(&bob_view, "bob", &["status"]).doc["decision"], "merged");
    let queue = bay(&world.admin, "admin", &["status"]);
    assert_eq!(
        unreadable(&queue.doc, "operations"),
        vec![place.to_string()]
    );

    // The change that waited there hears that no runner will take it, and what to do.
    let status = bay(&ann_view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "failed", "{status:?}");
    assert_eq!(status.doc["detail"]["place"]["ref"], place);
    // Asking again takes a new place and gives the broken one up, in one push.
    let again = bay(&ann_view, "ann", &["merge"]);
    assert_eq!(again.doc["decision"], "queued", "{again:?}");
    assert_eq!(world.remote_ref(place), None, "the broken place is gone");
    let run = once(&world.admin);
    assert!(run.doc["detail"]["skipped"].is_null(), "{run:?}");
    assert_eq!(bay(&ann_view, "ann", &["status"]).doc["decision"], "merged");
    assert_eq!((world.merges_of(&ann), world.merges_of(&bob)), (1, 1));
}

#[test]
fn a_merged_marker_for_a_queued_change_ends_it_already_merged_and_never_merges_it() {
    let world = World::standard();
    let [(ann, ann_view), (bob, bob_view)] = two_queued(&world);
    // A marker made by hand, naming main as it stands: the change counts as merged.
    let main = world.remote_ref("main").expect("main");
    let marker = format!("refs/bay/landed/{ann}");
    set_remote(&world, &marker, &main);

    let run = once(&world.admin);
    assert_eq!(run.code, 0, "{run:?}");
    let status = bay(&ann_view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "CHANGE_ALREADY_MERGED", "{status:?}");
    assert_eq!(status.doc["detail"]["marker"], marker.as_str());
    assert_eq!(world.merges_of(&ann), 0, "never merged a second time");
    assert_eq!(world.remote_ref(&marker), Some(main), "the marker stands");
    // One claim and its end: the runner wrote no step again and again.
    let steps: Vec<String> = world
        .chain(&ann)
        .iter()
        .map(|step| step["kind"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        steps.iter().filter(|kind| *kind == "claim").count(),
        1,
        "{steps:?}"
    );
    let events = log_events(&world, "admin");
    assert!(
        events
            .iter()
            .any(|(_, event)| event["op"] == format!("{ann}.1")
                && event["kind"] == "refused"
                && event["code"] == "CHANGE_ALREADY_MERGED"),
        "{events:?}"
    );
    assert_eq!(bay(&bob_view, "bob", &["status"]).doc["decision"], "merged");
    assert_eq!(world.merges_of(&bob), 1);
}

/// Replaces the tip of `change`'s chain on the remote (its request, just written) with a copy
/// whose step names `draft` and carries no draft commit, as a person could write one by hand,
/// and moves the refs that named the tip (the chain, its queue place, the queue's last).
fn forge_request(world: &World, change: &str, draft: &str) {
    let chain = format!("refs/bay/changes/{change}");
    let tip = world.remote_ref(&chain).expect("the chain");
    let body = git_dir(&world.remote, &["cat-file", "commit", &tip]);
    let (headers, message) = body.split_once("\n\n").expect("a commit");
    let parent = headers
        .lines()
        .find_map(|line| line.strip_prefix("parent "))
        .expect("a first parent");
    let step: serde_json::Value =
        serde_json::from_str(message.split_once("\n\n").expect("a subject and a step").1)
            .expect("the step is JSON");
    let real = step["draft"].as_str().expect("a request names its draft");
    let forged = message.replace(real, draft);
    let commit = world.record_commit(&[parent], forged.trim_end());
    for name in world.refs_at(&tip) {
        set_remote(world, &name, &commit);
    }
}

#[test]
fn a_request_naming_a_draft_the_remote_lacks_fails_by_name_and_the_queue_goes_on() {
    let world = unchecked();
    let [(ann, ann_view), (bob, bob_view)] = two_queued(&world);
    let nowhere = "0123456789abcdef0123456789abcdef01234567";
    forge_request(&world, &ann, nowhere);

    let run = once(&world.admin);
    assert_eq!(run.code, 0, "{run:?}");
    let status = bay(&ann_view, "ann", &["status"]);
    assert_eq!(
        (&status.doc["decision"], &status.doc["state"]),
        (&"failed".into(), &"failed".into()),
        "{status:?}"
    );
    assert_eq!(status.doc["detail"]["missing"][0], nowhere, "{status:?}");
    assert!(status.doc["detail"]["hint"].is_string(), "{status:?}");
    let events = log_events(&world, "admin");
    assert!(
        events
            .iter()
            .any(|(_, event)| event["op"] == format!("{ann}.1") && event["kind"] == "failed"),
        "{events:?}"
    );
    assert_eq!(bay(&bob_view, "bob", &["status"]).doc["decision"], "merged");
    assert_eq!((world.merges_of(&ann), world.merges_of(&bob)), (0, 1));
}

/// A runner's own ref pointed at a blob stops that runner, naming the ref, before it claims
/// anything; a runner of another name merges the queue.
fn own_ref_at_a_blob_stops_only_its_runner(own: &str) {
    let world = World::standard();
    let [(ann, ann_view), (bob, bob_view)] = two_queued(&world);
    let name = format!("{own}/admin");
    set_remote(&world, &name, &blob(&world));

    let run = once(&world.admin);
    assert_eq!(run.doc["decision"], "failed", "{run:?}");
    assert_eq!(run.doc["detail"]["ref"], name.as_str(), "{run:?}");
    assert!(run.doc["detail"]["hint"].is_string(), "{run:?}");
    let kinds: Vec<serde_json::Value> = world
        .chain(&ann)
        .iter()
        .map(|s| s["kind"].clone())
        .collect();
    assert!(
        !kinds.contains(&"claim".into()),
        "it claimed nothing: {kinds:?}"
    );

    let other = world.clone_as("other");
    let run = once(&other);
    assert_eq!(run.code, 0, "{run:?}");
    for view in [&ann_view, &bob_view] {
        assert_eq!(bay(view, "agent", &["status"]).doc["decision"], "merged");
    }
    assert_eq!((world.merges_of(&ann), world.merges_of(&bob)), (1, 1));
}

#[test]
fn a_runner_whose_log_is_a_blob_stops_by_name_and_another_runner_merges() {
    own_ref_at_a_blob_stops_only_its_runner("refs/bay/log");
}

#[test]
fn a_runner_whose_evidence_notes_are_a_blob_stops_by_name_and_another_runner_merges() {
    own_ref_at_a_blob_stops_only_its_runner("refs/notes/bay/evidence");
}

#[test]
fn main_deleted_while_a_check_runs_ends_the_work_by_name_and_the_run() {
    // The check waits, inside its tree, for the test to let it go.
    let gated = CHECK.replace(
        "request=$(cat)",
        "request=$(cat)\ntouch started\nwhile [ ! -e go ]; do sleep 0.05; done\nrm go",
    );
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", &gated, true),
    ]);
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let runner = spawn_once(&world.admin);
    let checks = world.admin.join(".git/bay/check");
    let trees = || -> Vec<std::path::PathBuf> {
        let entries = |dir: &Path| -> Vec<std::path::PathBuf> {
            std::fs::read_dir(dir)
                .map(|entries| entries.flatten().map(|e| e.path()).collect())
                .unwrap_or_default()
        };
        entries(&checks)
            .iter()
            .flat_map(|candidate| entries(candidate))
            .map(|slot| slot.join("tree"))
            .collect()
    };
    wait_until(BOUND, "the runner inside its check", || {
        trees().iter().any(|tree| tree.join("started").exists())
    });
    let base = world.remote_ref("main").expect("main");
    git_dir(&world.remote, &["update-ref", "-d", "refs/heads/main"]);
    for tree in trees() {
        write(&tree, "go", "");
    }

    let run = ended(runner);
    assert_eq!(run.doc["decision"], "failed", "{run:?}");
    assert!(
        run.doc["detail"]["why"]
            .as_str()
            .is_some_and(|why| why.contains("refs/heads/main")),
        "{run:?}"
    );
    // The claim went back, saying why, and nothing merged.
    let last = world.chain(&change).last().cloned().expect("a step");
    assert_eq!(last["kind"], "release", "{last}");
    assert!(
        last["why"].as_str().is_some_and(|why| why.contains("main")),
        "{last}"
    );
    // Main back, nothing merged: the change is queued as it was, for the next runner.
    git_dir(&world.remote, &["update-ref", "refs/heads/main", &base]);
    assert_eq!(world.merges_of(&change), 0);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["state"], "submitted", "{status:?}");
}
