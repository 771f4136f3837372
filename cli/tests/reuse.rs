//! `[policy] evidence_reuse = "exact-inputs"` with real Git: a pass recorded on exactly a
//! run's inputs stands for the next attempt at the same candidate, where the policy at the
//! base allows unsigned reuse (`[policy] reuse_unsigned`), or, whatever the policy says, where
//! a key registry signs everything and the pass's record is signed.

mod support;

use serde_json::Value;
use support::*;

/// A check that has no worker (`unavailable`) until the file `$GATE/open` exists, then passes.
const GATED: &str = r#"#!/bin/sh
request=$(cat)
commit=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\1/p')
tree=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/\2/p')
if [ ! -e "$GATE/open" ]; then
  printf '{"schema":"bay.check.result/1","unavailable":"the gate is shut"}\n'
  exit 0
fi
printf '{"schema":"bay.check.result/1","exercised":{"commit":"%s","tree":"%s"},"plan":{"selected":1,"completed":1},"checks":[{"id":"gate","verdict":"pass"}]}\n' "$commit" "$tree"
"#;

/// A remote whose policy runs `files` (the usual check) and then `gated`, with `policy_extra`
/// after the checks, and whose config turns exact-inputs reuse on.
fn gated_world(policy_extra: &str) -> World {
    gated_world_with("", "", policy_extra)
}

/// As [`gated_world`], with `files_extra` in the `files` check and `runner_extra` in the
/// config's `[runner]`.
fn gated_world_with(files_extra: &str, runner_extra: &str, policy_extra: &str) -> World {
    let check = |id: &str, program: &str, extra: &str| {
        format!(
            "\n[[check]]\nid = \"{id}\"\nenvironment = \"any\"\ncommand = \"{program}\"\nadapter = [\"{program}\"]\nexpected_minimum = 1\ntimeout_s = 60\nenv = [\"GATE\"]\n{extra}"
        )
    };
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}{runner_extra}\n[policy]\nevidence_reuse = \"exact-inputs\"\n"),
            false,
        ),
        (
            ".bay/policy.toml",
            &format!(
                "revision = 1\n{}{}{policy_extra}",
                check("files", ".bay/check", files_extra),
                check("gated", ".bay/gated", "")
            ),
            false,
        ),
        (".bay/check", CHECK, true),
        (".bay/gated", GATED, true),
    ])
}

/// Submits one edit, then runs the runner twice: once with the gate shut (the first check
/// passes, the second has no worker), once with it open. Returns the final status and how
/// many records each check left, in policy order.
fn run_twice(world: &World) -> (Value, usize, usize) {
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let gate = Gate::shut(world);
    gate.run(world);
    let waiting = bay(&view, "ann", &["status"]).doc;
    assert_eq!(waiting["decision"], "queued", "{waiting}");
    assert_eq!(world.merges_of(&change), 0);
    assert_eq!(
        count(world, "files"),
        1,
        "the first check ran and left its record"
    );
    assert_eq!(
        count(world, "gated"),
        0,
        "an unavailable check keeps no record"
    );

    gate.open();
    gate.run(world);
    let status = bay(&view, "ann", &["status"]).doc;
    (status, count(world, "files"), count(world, "gated"))
}

/// A home whose Git config turns the sandbox off, so that the gated check sees the gate the
/// test opens, and the gate folder, shut.
struct Gate {
    home: std::path::PathBuf,
    gate: std::path::PathBuf,
}

impl Gate {
    fn shut(world: &World) -> Gate {
        let home = world.root.path().join("home");
        std::fs::create_dir_all(&home).expect("mkdir");
        write(&home, ".gitconfig", "[bay]\n\texecutorSandbox = none\n");
        let gate = world.root.path().join("gate");
        std::fs::create_dir_all(&gate).expect("mkdir");
        Gate { home, gate }
    }

    fn open(&self) {
        write(&self.gate, "open", "");
    }

    /// One `bay runner run --once` in the admin clone, which must end with exit code 0.
    fn run(&self, world: &World) {
        let env = [
            ("HOME", self.home.to_str().expect("utf-8")),
            ("GATE", self.gate.to_str().expect("utf-8")),
        ];
        let ran = bay_with(&world.admin, "runner", &["runner", "run", "--once"], &env);
        assert_eq!(ran.code, 0, "{ran:?}");
    }
}

/// How many pass records of `check` the remote holds, from any producer.
fn count(world: &World, check: &str) -> usize {
    world
        .evidence("admin")
        .iter()
        .filter(|record| record["check"] == check && record["verdict"] == "pass")
        .count()
}

#[test]
fn a_pass_on_exactly_these_inputs_is_not_run_again() {
    let world = gated_world("\n[policy]\nreuse_unsigned = true\n");
    let (status, files, gated) = run_twice(&world);
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(
        files, 1,
        "the first pass stood: the check did not run again"
    );
    assert_eq!(gated, 1);
}

#[test]
fn without_reuse_unsigned_in_the_policy_every_check_runs_again() {
    let world = gated_world("");
    let (status, files, gated) = run_twice(&world);
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(
        files, 2,
        "unsigned evidence is reused only where the policy says so"
    );
    assert_eq!(gated, 1);
}

#[test]
fn a_pass_on_another_tree_of_the_same_base_is_never_reused() {
    let world = gated_world("\n[policy]\nreuse_unsigned = true\n");
    let ann = world.clone_as("ann");
    let (first, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let gate = Gate::shut(&world);
    // The first candidate passes `files`, then waits on the gate; main stays where it was.
    gate.run(&world);
    assert_eq!(count(&world, "files"), 1);
    let abandoned = bay(&ann, "ann", &["abandon", &first]);
    assert_eq!(abandoned.code, 0, "{abandoned:?}");
    // Another change on the same base: same check, same base tree, another tree.
    gate.open();
    let bob = world.clone_as("bob");
    let (_, view) = world.submit(&bob, "bob", "bye", "src/bye.txt", "Bye\n");
    gate.run(&world);
    let status = bay(&view, "bob", &["status"]).doc;
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(
        count(&world, "files"),
        2,
        "each candidate ran its own check"
    );
}

#[test]
fn under_a_registry_that_signs_everything_a_signed_pass_is_reused_without_reuse_unsigned() {
    let world = gated_world("");
    let keys = enrol_runner_keys(&world);
    configure_runner_keys(&world, &keys);
    let (status, files, gated) = run_twice(&world);
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(
        files, 1,
        "the signed pass stood: the check did not run again"
    );
    assert_eq!(gated, 1);
    assert_eq!(status["detail"]["trust"], "signed", "{status}");
}

#[test]
fn under_a_registry_a_pass_whose_signature_fails_is_run_again() {
    let world = gated_world("\n[policy]\nreuse_unsigned = true\n");
    let keys = enrol_runner_keys(&world);
    configure_runner_keys(&world, &keys);
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let gate = Gate::shut(&world);
    gate.run(&world);
    assert_eq!(count(&world, "files"), 1);
    // Someone with plain Git rewrites each record: its time moves by a millisecond, its
    // signature stays, so it no longer verifies; everything reuse matches on is unchanged.
    let notes = "refs/notes/bay/evidence/admin";
    let listed = git_dir(&world.remote, &["notes", "--ref", notes, "list"]);
    for object in listed
        .lines()
        .filter_map(|line| line.split_whitespace().nth(1))
    {
        let text = git_dir(&world.remote, &["notes", "--ref", notes, "show", object]);
        let tampered: Vec<String> = text
            .lines()
            .map(|line| {
                let mut record: Value = serde_json::from_str(line).expect("a record");
                let at = record["at"].as_u64().expect("a time");
                record["at"] = Value::from(at + 1);
                record.to_string()
            })
            .collect();
        let message = tampered.join("\n");
        let add = ["notes", "--ref", notes, "add", "-f", "-m", &message, object];
        let identity = [
            "-c",
            "user.name=someone",
            "-c",
            "user.email=someone@example.com",
        ];
        git_dir(&world.remote, &[&identity[..], &add[..]].concat());
    }
    gate.open();
    gate.run(&world);
    let status = bay(&view, "ann", &["status"]).doc;
    assert_eq!(status["decision"], "merged", "{status}");
    assert_eq!(world.merges_of(&change), 1);
    assert_eq!(
        count(&world, "files"),
        2,
        "the tampered pass did not count, even with reuse_unsigned: the check ran again"
    );
}

/// One change checked while someone pushes `path` to main around bay, under a policy whose
/// `files` check reads only `src/` (`footprint = true`) and a runner that carries
/// (`footprint_lanes`): the first pass `files` on the first candidate, then the gate opens on
/// a new one. Returns the final status and the `files` pass records, carried or not.
fn pushed_around_a_footprint(path: &str) -> (Value, Vec<Value>) {
    let world = gated_world_with(
        "when_paths = [\"src/\"]\nfootprint = true\n",
        "footprint_lanes = true\n",
        "\n[policy]\nreuse_unsigned = true\n",
    );
    let ann = world.clone_as("ann");
    let (_, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let gate = Gate::shut(&world);
    gate.run(&world);
    // Stamped, the record hangs on the candidate's tree and on the draft.
    assert_eq!(count(&world, "files"), 2);
    let person = world.clone_as("person");
    write(&person, path, "pushed around bay\n");
    git(&person, &["add", "--all"]);
    git(&person, &["commit", "--quiet", "-m", "around bay"]);
    git(&person, &["push", "--quiet", "origin", "main"]);
    gate.open();
    gate.run(&world);
    let status = bay(&view, "ann", &["status"]).doc;
    let mut passes: Vec<Value> = world
        .evidence("admin")
        .into_iter()
        .filter(|record| record["check"] == "files" && record["verdict"] == "pass")
        .collect();
    passes.sort_by_key(Value::to_string);
    passes.dedup();
    (status, passes)
}

#[test]
fn a_footprint_pass_carries_over_a_push_outside_the_files_it_reads() {
    let (status, passes) = pushed_around_a_footprint("README.md");
    assert_eq!(status["decision"], "merged", "{status}");
    let (carried, ran): (Vec<&Value>, Vec<&Value>) = passes
        .iter()
        .partition(|record| record.get("carried").is_some());
    assert_eq!(ran.len(), 1, "files ran once: {passes:?}");
    assert_eq!(
        carried.len(),
        1,
        "and its pass carried to the new candidate"
    );
    assert_eq!(carried[0]["carried"]["candidate"], ran[0]["candidate"]);
    assert_eq!(carried[0]["footprint"], ran[0]["footprint"]);
    assert_eq!(
        carried[0]["candidate"]["tree"], status["detail"]["tree"],
        "{status}"
    );
    // The merge names what it carried, and from where.
    let named = &status["detail"]["carried"];
    assert_eq!(named[0]["check"], "files", "{status}");
    assert_eq!(
        named[0]["from"]["candidate"], ran[0]["candidate"],
        "{status}"
    );
}

#[test]
fn a_push_inside_the_files_it_reads_runs_the_check_again() {
    let (status, passes) = pushed_around_a_footprint("src/other.txt");
    assert_eq!(status["decision"], "merged", "{status}");
    assert!(
        passes.iter().all(|record| record.get("carried").is_none()),
        "{passes:?}"
    );
    assert_eq!(passes.len(), 2, "files ran on each candidate");
    assert!(status["detail"].get("carried").is_none(), "{status}");
}
