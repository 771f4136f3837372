//! `[runner] batch` with real Git: the head's runner checks the head and the entries behind it
//! as one tree, merges them in one push, each with its own commit and `Bay-Batch` trailer; on
//! a failure it bisects over prefixes on the same main and merges the passing one.

mod support;

use serde_json::Value;
use support::*;

/// A remote whose runners batch up to eight entries, under a policy that lets unsigned
/// evidence be reused.
fn world_batching() -> World {
    world_batching_under("")
}

/// [`world_batching`], its policy's checks followed by `checks`.
fn world_batching_under(checks: &str) -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}batch = {{ max = 8 }}\n"),
            false,
        ),
        (
            ".bay/policy.toml",
            &policy(&format!("{checks}\n[policy]\nreuse_unsigned = true\n")),
            false,
        ),
        (".bay/check", CHECK, true),
    ])
}

/// The batch id of `trailers`' first (newest) commit, which must have one.
fn batch_id(trailers: &[Option<String>]) -> String {
    trailers[0]
        .as_deref()
        .and_then(|t| t.split(' ').next())
        .expect("a batch id")
        .to_owned()
}

/// Queues one change per `(path, content)`, each by its own agent, in that order.
fn queued(world: &World, files: &[(&str, &str)]) -> Vec<String> {
    files
        .iter()
        .enumerate()
        .map(|(n, (path, content))| {
            let actor = format!("agent{n}");
            let clone = world.clone_as(&actor);
            world
                .submit(&clone, &actor, &format!("write {path}"), path, content)
                .0
        })
        .collect()
}

/// Queues `files` as [`queued`] does, then runs `bay runner run --once`, which must end with
/// exit 0.
fn queued_then_run(world: &World, files: &[(&str, &str)]) -> (Vec<String>, Ran) {
    let changes = queued(world, files);
    let run = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(run.code, 0, "{run:?}");
    (changes, run)
}

/// The `Bay-Batch` trailer of each commit main gained, newest first, `None` for a commit with
/// none.
fn batch_trailers(world: &World) -> Vec<Option<String>> {
    world
        .main_log()
        .iter()
        .map(|entry| {
            entry
                .lines()
                .find_map(|line| line.strip_prefix("Bay-Batch: "))
                .map(str::to_owned)
        })
        .collect()
}

/// The merged outcome of `change`'s one operation.
fn outcome(world: &World, change: &str) -> Value {
    world
        .chain(change)
        .into_iter()
        .rev()
        .find(|step| step["kind"] == "outcome")
        .expect("an outcome")
}

/// The runner's check runs, as the evidence it left, in the order they ran.
fn runs(world: &World) -> Vec<Value> {
    let mut runs: Vec<Value> = world
        .evidence("admin")
        .into_iter()
        .filter(|record| record["check"] == "files")
        .collect();
    runs.sort_by_key(|record| record["at"].as_u64());
    runs
}

#[test]
fn three_queued_changes_merge_on_one_run_in_one_push() {
    let world = world_batching();
    let (changes, run) = queued_then_run(
        &world,
        &[
            ("src/a.txt", "a\n"),
            ("src/b.txt", "b\n"),
            ("src/c.txt", "c\n"),
        ],
    );
    assert_eq!(run.doc["detail"]["merged"], 3, "{}", run.doc);

    // Main moved once, to the last member: three commits, in queue order, each its own.
    let trailers = batch_trailers(&world);
    let id = batch_id(&trailers);
    assert_eq!(
        trailers[..3],
        [
            Some(format!("{id} 3/3")),
            Some(format!("{id} 2/3")),
            Some(format!("{id} 1/3"))
        ]
    );
    assert_eq!(trailers[3], None, "the first version");
    for (n, change) in changes.iter().enumerate() {
        assert_eq!(world.merges_of(change), 1);
        let needle = format!("Change-Id: {change}");
        assert!(world.main_log()[2 - n].contains(&needle), "queue order");
        // Each result names the batch, because its own tree was not checked alone.
        let outcome = outcome(&world, change);
        assert_eq!(outcome["state"], "merged");
        let batch = &outcome["detail"]["batch"];
        assert_eq!(batch["id"], id.as_str(), "{outcome}");
        assert_eq!(
            (batch["index"].as_u64(), batch["size"].as_u64()),
            (Some(n as u64 + 1), Some(3))
        );
        let tip = git_dir(&world.remote, &["rev-parse", "main^{tree}"]);
        assert_eq!(batch["tree"], tip.trim());
        assert_eq!(outcome["detail"]["trust"], "unsigned");
    }
    // One run, on the last member's tree, on main as it was.
    let runs = runs(&world);
    assert_eq!(runs.len(), 1, "{runs:?}");
    let tip = git_dir(&world.remote, &["rev-parse", "main^{tree}"]);
    assert_eq!(runs[0]["candidate"]["tree"], tip.trim());
    let base = git_dir(&world.remote, &["rev-parse", "main~3^{tree}"]);
    assert_eq!(runs[0]["base"]["tree"], base.trim());
    assert_eq!(runs[0]["verdict"], "pass");
}

#[test]
fn a_failing_member_is_bisected_out_and_the_prefix_ahead_of_it_merges() {
    let world = world_batching();
    // The third empties a file, which the check fails.
    let (changes, _) = queued_then_run(
        &world,
        &[
            ("src/a.txt", "a\n"),
            ("src/b.txt", "b\n"),
            ("src/greeting.txt", ""),
            ("src/d.txt", "d\n"),
        ],
    );
    // The first two merged as a batch of two; the culprit failed at its own turn; the last
    // merged alone, as no batch forms of one.
    let trailers = batch_trailers(&world);
    let id = batch_id(&trailers[2..]);
    assert_eq!(
        trailers[..3],
        [None, Some(format!("{id} 2/2")), Some(format!("{id} 1/2"))],
        "{trailers:?}"
    );
    let merged: Vec<usize> = changes.iter().map(|c| world.merges_of(c)).collect();
    assert_eq!(merged, [1, 1, 0, 1]);
    let culprit = outcome(&world, &changes[2]);
    assert_eq!(culprit["reason"], "CHECK_FAILED", "{culprit}");
    // Its chain names it the batch's culprit, for every runner to read.
    let named: Vec<Value> = world
        .chain(&changes[2])
        .into_iter()
        .filter(|step| step["kind"] == "culprit")
        .collect();
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0]["batch"], id.as_str(), "{named:?}");
    assert!(culprit["detail"].get("batch").is_none());
    assert!(
        outcome(&world, &changes[3])["detail"]
            .get("batch")
            .is_none()
    );

    // The whole batch, then prefixes 2 and 3, each once; the culprit alone; the last alone.
    let runs = runs(&world);
    let verdicts: Vec<&str> = runs.iter().filter_map(|r| r["verdict"].as_str()).collect();
    assert_eq!(
        verdicts,
        [
            "product_failure",
            "pass",
            "product_failure",
            "product_failure",
            "pass"
        ],
        "{runs:?}"
    );
    let trees: std::collections::BTreeSet<&str> = runs[..3]
        .iter()
        .filter_map(|r| r["candidate"]["tree"].as_str())
        .collect();
    assert_eq!(trees.len(), 3, "no prefix ran twice");
}

#[test]
fn a_head_whose_prefix_passed_merges_alone_on_that_run() {
    let world = world_batching();
    let (changes, _) = queued_then_run(&world, &[("src/a.txt", "a\n"), ("src/greeting.txt", "")]);
    // One member passed: no batch merges. The head took its usual path, where the pass of its
    // own tree on the same main answered its check.
    assert_eq!(batch_trailers(&world)[..2], [None, None]);
    let merged: Vec<usize> = changes.iter().map(|c| world.merges_of(c)).collect();
    assert_eq!(merged, [1, 0]);
    let why: Vec<String> = world
        .chain(&changes[0])
        .iter()
        .filter(|step| step["kind"] == "check")
        .filter_map(|step| step["why"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(why.len(), 1, "{why:?}");
    assert!(why[0].contains("did not run again"), "{why:?}");
    let verdicts: Vec<String> = runs(&world)
        .iter()
        .filter_map(|r| r["verdict"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(verdicts, ["product_failure", "pass", "product_failure"]);
}

#[test]
fn with_footprint_lanes_a_batch_takes_only_entries_that_overlap_the_head() {
    let check = |id: &str, folder: &str| {
        format!(
            "\n[[check]]\nid = \"{id}\"\nenvironment = \"any\"\ncommand = \".bay/check\"\n\
             adapter = [\".bay/check\"]\nexpected_minimum = 1\ntimeout_s = 60\n\
             path = [\"/usr/bin\", \"/bin\"]\nwhen_paths = [\"{folder}\"]\nfootprint = true\n"
        )
    };
    let policy = format!(
        "revision = 1\n{}{}\n[policy]\nreuse_unsigned = true\n",
        check("north", "src/north/"),
        check("south", "src/south/")
    );
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}footprint_lanes = true\nbatch = {{ max = 8 }}\n"),
            false,
        ),
        (".bay/policy.toml", &policy, false),
        (".bay/check", CHECK, true),
    ]);
    let (changes, _) = queued_then_run(
        &world,
        &[
            ("src/north/a.txt", "a\n"),
            ("src/north/b.txt", "b\n"),
            ("src/south/c.txt", "c\n"),
        ],
    );
    let merged: Vec<usize> = changes.iter().map(|c| world.merges_of(c)).collect();
    assert_eq!(merged, [1, 1, 1]);
    // The two that share the head's footprint merged as one batch; the third, disjoint, on
    // its own, after them.
    let trailers = batch_trailers(&world);
    assert_eq!(trailers[0], None, "{trailers:?}");
    assert!(trailers[1].as_deref().is_some_and(|t| t.ends_with(" 2/2")));
    assert!(trailers[2].as_deref().is_some_and(|t| t.ends_with(" 1/2")));
    assert!(world.main_log()[0].contains(&format!("Change-Id: {}", changes[2])));
}

#[test]
fn under_a_registry_that_signs_everything_each_member_is_signed() {
    // No `reuse_unsigned`: the registry is what lets a batch form.
    let world = World::with_runner("batch = { max = 4 }\n");
    let keys = enrol_runner_keys(&world);
    configure_runner_keys(&world, &keys);
    let (changes, _) = queued_then_run(&world, &[("src/a.txt", "a\n"), ("src/b.txt", "b\n")]);
    let trailers = batch_trailers(&world);
    assert!(
        trailers[0].as_deref().is_some_and(|t| t.ends_with(" 2/2")),
        "{trailers:?}"
    );
    assert!(
        trailers[1].as_deref().is_some_and(|t| t.ends_with(" 1/2")),
        "{trailers:?}"
    );
    // Git itself verifies both members against the registry's executor file.
    let executors = git_dir(&world.remote, &["show", "refs/bay/registry:executor"]);
    let signers = keys.dir.join("allowed-executor");
    std::fs::write(&signers, format!("{}\n", executors.trim_end())).expect("written");
    for commit in ["main", "main~1"] {
        let verified = std::process::Command::new("git")
            .arg("--git-dir")
            .arg(&world.remote)
            .arg("-c")
            .arg(format!("gpg.ssh.allowedSignersFile={}", signers.display()))
            .args(["verify-commit", commit])
            .output()
            .expect("git runs");
        assert!(verified.status.success(), "{commit}: {verified:?}");
    }
    for change in &changes {
        let outcome = outcome(&world, change);
        assert_eq!(outcome["detail"]["trust"], "signed", "{outcome}");
        assert!(outcome["detail"]["batch"].is_object(), "{outcome}");
    }
}

#[test]
fn a_batch_runs_its_checks_at_once_with_parallel_checks() {
    // Two checks that pass only when both run at once: the batch's tree passes only if its
    // runs start together, as `parallel_checks = 2` asks.
    let world = rendezvous_world_with(
        &format!("{CONFIG}parallel_checks = 2\nbatch = {{ max = 8 }}\n"),
        "\n[policy]\nreuse_unsigned = true\n",
        300,
    );
    let changes = queued(&world, &[("src/a.txt", "a\n"), ("src/b.txt", "b\n")]);
    let run = run_once_with_rendezvous(&world);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.doc["detail"]["merged"], 2, "{}", run.doc);
    let trailers = batch_trailers(&world);
    let ends = |n: usize, suffix: &str| trailers[n].as_deref().is_some_and(|t| t.ends_with(suffix));
    assert!(ends(0, " 2/2") && ends(1, " 1/2"), "{trailers:?}");
    for change in &changes {
        assert_eq!(world.merges_of(change), 1);
    }
}

/// Queues changes to `src/a.txt` and `src/b.txt`, then `third`, and runs the runner once:
/// the first two merge as one batch of two, and the third does not merge. Returns the three.
fn two_batched_before(world: &World, third: (&str, &str)) -> Vec<String> {
    let (changes, _) = queued_then_run(world, &[("src/a.txt", "a\n"), ("src/b.txt", "b\n"), third]);
    let trailers = batch_trailers(world);
    let id = batch_id(&trailers);
    assert_eq!(
        trailers[..2],
        [Some(format!("{id} 2/2")), Some(format!("{id} 1/2"))],
        "{trailers:?}"
    );
    let merged: Vec<usize> = changes.iter().map(|c| world.merges_of(c)).collect();
    assert_eq!(merged, [1, 1, 0]);
    changes
}

#[test]
fn a_red_post_check_stops_the_chain_before_a_member_on_its_paths() {
    let smoke = "\n[[check]]\nid = \"smoke\"\nenvironment = \"any\"\ncommand = \".bay/check\"\n\
                 adapter = [\".bay/check\"]\nexpected_minimum = 1\ntimeout_s = 60\n\
                 path = [\"/usr/bin\", \"/bin\"]\nstage = \"post\"\nwhen_paths = [\"api/**\"]\n";
    let world = world_batching_under(smoke);
    let ci = world.clone_as("ci");
    let main = world.remote_ref("refs/heads/main").expect("main");
    let red = smoke_answer(&ci, &main, "product_failure");
    assert_eq!(red.doc["decision"], "ok", "{red:?}");
    // The first two merged as one batch; the third, on the red paths, was refused at its turn.
    let changes = two_batched_before(&world, ("api/c.txt", "c\n"));
    assert_eq!(outcome(&world, &changes[2])["reason"], "MAIN_RED");
}

#[test]
fn a_member_that_owes_a_persons_yes_is_left_to_its_own_turn() {
    let approval = "\n[[check]]\nid = \"billing-approval\"\nenvironment = \"people\"\n\
                    kind = \"approval\"\nwhen_paths = [\"billing/\"]\n";
    let world = world_batching_under(approval);
    // No approval carries onto a batch's tree: the third waits for a yes on its own candidate.
    let changes = two_batched_before(&world, ("billing/c.txt", "c\n"));
    let steps = world.chain(&changes[2]);
    assert!(
        steps.iter().all(|step| step["kind"] != "outcome"),
        "{steps:?}"
    );
    let candidate = steps.iter().rev().find(|step| step["kind"] == "candidate");
    let message = candidate
        .and_then(|c| c["commit"].as_str())
        .map(|commit| git_dir(&world.remote, &["log", "-1", "--format=%B", commit]));
    assert!(
        message.is_some_and(|m| !m.contains("Bay-Batch")),
        "its own candidate, built alone"
    );
}
