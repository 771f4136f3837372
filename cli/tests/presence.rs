//! A runner's presence with real Git: each pass writes `refs/bay/executor/<runner>` at most
//! once per heartbeat, and plain `bay status` warns `no_live_runner` when operations wait and
//! no runner is fresh, judged by when this clone first held each presence, on its own clock.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::*;

/// The usual world with a long heartbeat, so a `--once` run makes several passes within one.
fn world() -> World {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            "[runner]\nlease_s = 120\nheartbeat_s = 60\n",
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ]);
    // The remote keeps a reflog of every ref, so the test can count the writes.
    git(
        &world.remote,
        &["config", "core.logAllRefUpdates", "always"],
    );
    world
}

/// The presence document on the remote, and its commit's parents.
fn presence(world: &World, runner: &str) -> (Value, String) {
    let name = format!("refs/bay/executor/{runner}");
    let message = git_dir(&world.remote, &["log", "-1", "--format=%B", &name]);
    let (subject, body) = message.split_once("\n\n").expect("a subject and a body");
    assert_eq!(subject, format!("bay: presence {runner}"));
    let parents = git_dir(&world.remote, &["log", "-1", "--format=%P", &name]);
    (
        serde_json::from_str(body.trim()).expect("the presence is JSON"),
        parents.trim().to_string(),
    )
}

fn warnings(detail: &Value) -> Vec<Value> {
    detail["warnings"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|w| w["warning"] == "no_live_runner")
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

fn status(dir: &Path) -> Value {
    let ran = bay(dir, "ann", &["status"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    ran.doc["detail"].clone()
}

#[test]
fn a_pass_writes_the_presence_with_its_fields_once_per_heartbeat() {
    let world = world();
    let ann = world.clone_as("ann");
    let (change, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let runner = world.clone_as("r1");
    // One pass takes the operation on and merges it; the next finds nothing and ends. Both
    // run within one heartbeat.
    let ran = bay(&runner, "r1", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(world.merges_of(&change), 1);

    let (doc, parents) = presence(&world, "r1");
    assert_eq!(parents, "", "a presence keeps no history");
    assert_eq!(doc["schema"], "bay.presence/1");
    assert_eq!(doc["runner"], "r1");
    assert_eq!(doc["bay"], env!("CARGO_PKG_VERSION"));
    assert!(doc["machine"].is_string());
    assert!(doc["environments"].is_null(), "{doc}");
    assert!(doc["last_pass"].as_u64().is_some_and(|at| at > 0));
    assert_eq!(doc["holding"], format!("{change}.1"));
    assert_eq!(doc["queue_depth"], 1);
    assert_eq!(doc["lease_ms"], 120_000);
    assert_eq!(doc["interval_ms"], 10_000);

    let writes = git_dir(
        &world.remote,
        &["reflog", "show", "--format=%H", "refs/bay/executor/r1"],
    );
    assert_eq!(
        writes.lines().count(),
        1,
        "two passes within one heartbeat write once: {writes}"
    );

    // The runner run again within the heartbeat finds its earlier presence and writes none.
    let again = bay(&runner, "r1", &["runner", "run", "--once"]);
    assert_eq!(again.code, 0, "{again:?}");
    let writes = git_dir(
        &world.remote,
        &["reflog", "show", "--format=%H", "refs/bay/executor/r1"],
    );
    assert_eq!(
        writes.lines().count(),
        1,
        "a run again within one heartbeat: {writes}"
    );
}

#[test]
fn status_warns_no_live_runner_while_operations_wait_and_no_runner_is_fresh() {
    let world = world();
    let ann = world.clone_as("ann");
    world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");

    // No runner has ever run.
    let detail = status(&world.admin);
    let warned = warnings(&detail);
    assert_eq!(warned.len(), 1, "{detail}");
    assert_eq!(warned[0]["waiting"], 1);
    assert_eq!(warned[0]["runners"], serde_json::json!([]));
    assert!(
        warned[0]["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("bay runner run"))
    );

    // A runner that serves none of the policy's environments passes and leaves it waiting.
    let runner = world.clone_as("r1");
    git(&runner, &["config", "bay.checkEnvironment", "elsewhere"]);
    let ran = bay(&runner, "r1", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    let (doc, _) = presence(&world, "r1");
    assert_eq!(doc["environments"], serde_json::json!(["elsewhere"]));

    // Fresh: this clone's fetch brought it just now.
    let detail = status(&world.admin);
    assert!(warnings(&detail).is_empty(), "{detail}");
    assert_eq!(detail["queue_depth"], 1);

    // The same presence, first held by this clone an hour ago on its own clock: stale,
    // whatever the runner's clock says, and the next fetch does not make it new.
    let mirror = "refs/bay-mirror/origin/bay/executor/r1";
    let tip = git(&world.admin, &["rev-parse", mirror]).trim().to_string();
    git(&world.admin, &["update-ref", "-d", mirror]);
    let an_hour_ago = format!(
        "@{} +0000",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_secs()
            - 3_600
    );
    let out = Command::new("git")
        .arg("-C")
        .arg(&world.admin)
        .args([
            "-c",
            "core.logAllRefUpdates=always",
            "update-ref",
            mirror,
            &tip,
        ])
        .env("GIT_COMMITTER_DATE", an_hour_ago)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "{out:?}");
    let detail = status(&world.admin);
    let warned = warnings(&detail);
    assert_eq!(warned.len(), 1, "{detail}");
    let row = &warned[0]["runners"][0];
    assert_eq!(row["runner"], "r1");
    assert_eq!(row["stale"], true);
    assert!(
        row["age_s"].as_u64().is_some_and(|age| age >= 3_600),
        "{row}"
    );
}

#[test]
fn status_lists_the_changes_waiting_and_says_when_no_runner_was_heard_from() {
    let world = world();
    let ann = world.clone_as("ann");
    let (change, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");

    let said = |dir: &Path| {
        let ran = bay(dir, "ann", &["status"]);
        ran.doc["say"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(
        said(&world.admin),
        format!(
            "One change is waiting to be added to main ({change} \"greet\": waiting for a \
             runner), but no runner has been heard from lately; start one with `bay runner run`."
        )
    );

    // A fresh runner that serves none of its checks leaves it waiting, and heard from.
    let runner = world.clone_as("r1");
    git(&runner, &["config", "bay.checkEnvironment", "elsewhere"]);
    bay(&runner, "r1", &["runner", "run", "--once"]);
    assert_eq!(
        said(&world.admin),
        format!(
            "One change is waiting to be added to main ({change} \"greet\": waiting for a \
             runner); nothing to do."
        )
    );
}

#[test]
fn status_lists_the_early_runs_presences_name_under_the_operations_prechecks() {
    let world = world();
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let main = world.remote_ref("refs/heads/main").expect("main");
    let tree = git_dir(&world.remote, &["rev-parse", "main^{tree}"]);
    let at = serde_json::json!({"commit": main, "tree": tree.trim()});
    let early = |op: &str| {
        serde_json::json!({"change": op.split('.').next(), "op": op, "check": "files",
            "environment": "any", "verdict": "pass", "base": at, "candidate": at})
    };
    let ours = early(&format!("{change}.1"));
    // A runner checked this operation early, and another change's too.
    let doc = serde_json::json!({"schema": "bay.presence/1", "runner": "r9", "machine": "box",
        "bay": "0.1.0", "environments": null, "last_pass": 1, "holding": null, "queue_depth": 2,
        "interval_ms": 10_000, "lease_ms": 120_000, "progress_ms": 600_000,
        "prechecks": [early("aaaaaaaa.1"), ours]});
    let commit = world.record_commit(&[], &format!("bay: presence r9\n\n{doc}"));
    git_dir(
        &world.remote,
        &["update-ref", "refs/bay/executor/r9", &commit],
    );

    let ran = bay(&view, "ann", &["status"]);
    let operation = &ran.doc["detail"]["operation"];
    let mut listed = ours.clone();
    listed["runner"] = "r9".into();
    assert_eq!(
        operation["prechecks"],
        serde_json::json!([listed]),
        "{ran:?}"
    );

    // A presence lists no early run of another change's operation.
    let (other, other_view) = world.submit(&ann, "ann", "part", "src/farewell.txt", "Bye\n");
    assert_ne!(other, change);
    let ran = bay(&other_view, "ann", &["status"]);
    assert!(
        ran.doc["detail"]["operation"].get("prechecks").is_none(),
        "{ran:?}"
    );
}
