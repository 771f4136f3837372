//! What the benches share: `git` and `bay` run as a user runs them, a bare remote with a clone,
//! medians of runs that take turns, the plumbing floor of a merge, a remote with a long
//! history (`history`), and where a command's time went by Git's own trace (`trace`).

// Each bench is a crate of its own and uses a part of this module.
#![allow(dead_code)]

pub mod history;
pub mod trace;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const BAY: &str = env!("CARGO_BIN_EXE_bay");

/// How many times each measured thing runs; the median is reported.
pub const RUNS: usize = 9;

/// The runner name `repository` gives its clone; a built history's runner log and evidence
/// notes are this runner's, so the clone's runner appends to them.
pub const RUNNER: &str = "bench";

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `git` in `dir` with `input` on stdin.
pub fn git_with_input(dir: &Path, args: &[&str], input: &[u8]) -> String {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git runs");
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write");
    }
    let out = child.wait_with_output().expect("git runs");
    assert!(out.status.success(), "git {args:?} failed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `bay --json` in `dir` as the actor `bench`, with `env` set; its `bay.result/1`.
pub fn bay(dir: &Path, args: &[&str], env: &[(&str, String)]) -> serde_json::Value {
    let mut command = Command::new(BAY);
    command
        .arg("-C")
        .arg(dir)
        .arg("--json")
        .args(args)
        .env("BAY_ACTOR", "bench");
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().expect("bay runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("bay {args:?}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// [`bay`], timed.
pub fn timed_bay(
    dir: &Path,
    args: &[&str],
    env: &[(&str, String)],
) -> (Duration, serde_json::Value) {
    let started = Instant::now();
    let result = bay(dir, args, env);
    (started.elapsed(), result)
}

/// The medians of `RUNS` runs of two things, the two alternated, so that a machine busy for a
/// while slows both alike.
pub fn paired(mut run: impl FnMut(usize) -> (Duration, Duration)) -> (Duration, Duration) {
    let (a, b): (Vec<Duration>, Vec<Duration>) = (0..RUNS).map(&mut run).unzip();
    (median(a), median(b))
}

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

pub fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

/// An unchecked policy: a merge runs no check.
pub const UNCHECKED: &str = "revision = 1\nunchecked = true\n";

/// A bare remote whose main holds an unchecked policy, and a clone of it.
pub fn repository(root: &Path, name: &str) -> (PathBuf, PathBuf) {
    repository_with(root, name, UNCHECKED, &[])
}

/// A bare remote whose main holds `policy` and the executable `programs`, and a clone of it.
pub fn repository_with(
    root: &Path,
    name: &str,
    policy: &str,
    programs: &[(&str, &str)],
) -> (PathBuf, PathBuf) {
    let remote = root.join(format!("{name}.git"));
    git(
        root,
        &[
            "init",
            "--quiet",
            "--bare",
            "--initial-branch=main",
            remote.to_str().expect("utf-8"),
        ],
    );
    let clone = clone_of(&remote, &root.join(name), false);
    for n in 0..50 {
        write(
            &clone.join(format!("src/file{n}.txt")),
            &format!("line {n}\n"),
        );
    }
    write(&clone.join(".bay/config.toml"), "[runner]\nlease_s = 60\n");
    write(&clone.join(".bay/policy.toml"), policy);
    for (path, program) in programs {
        write(&clone.join(path), program);
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(clone.join(path), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    git(&clone, &["add", "--all"]);
    git(&clone, &["commit", "--quiet", "-m", "first"]);
    git(&clone, &["push", "--quiet", "origin", "main"]);
    (remote, clone)
}

/// A clone of `remote` at `clone`, set up for bay as [`RUNNER`]. With `every_object`, Git's
/// local clone hardlinks the remote's packs, so the clone holds every object the remote ever
/// held; without, it is cloned as over a network (`--no-local`) and holds only what main
/// reaches.
pub fn clone_of(remote: &Path, clone: &Path, every_object: bool) -> PathBuf {
    let mut args = vec!["clone", "--quiet"];
    if !every_object {
        args.push("--no-local");
    }
    args.extend([
        remote.to_str().expect("utf-8"),
        clone.to_str().expect("utf-8"),
    ]);
    git(remote, &args);
    for (key, value) in [
        ("user.name", "bench"),
        ("user.email", "bench@bench.invalid"),
        ("bay.runnerName", RUNNER),
        ("bay.main", "main"),
        // As `bay install` sets a clone up: each fetch adds to the commit-graph, and the
        // first is written here. Git's walks (a leased push asks whether the new value
        // descends from the old) stop at generation numbers instead of walking all of main.
        ("fetch.writeCommitGraph", "true"),
    ] {
        git(clone, &["config", key, value]);
    }
    git(
        clone,
        &["commit-graph", "write", "--reachable", "--changed-paths"],
    );
    clone.to_path_buf()
}

/// One merge with plumbing alone: fetch, merge-tree, commit-tree, one atomic push. Only those
/// four are timed; the draft is made before.
pub fn floor_once(clone: &Path, n: usize) -> Duration {
    let base = git(clone, &["rev-parse", "origin/main"]);
    let blob = git_with_input(
        clone,
        &["hash-object", "-w", "--stdin"],
        format!("floor {n}\n").as_bytes(),
    );
    let tree = git(clone, &["rev-parse", &format!("{base}^{{tree}}")]);
    let index = clone.join(".git/bench-index");
    let env_index = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(clone)
            .args(args)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .expect("git");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    env_index(&["read-tree", &tree]);
    env_index(&[
        "update-index",
        "--add",
        "--cacheinfo",
        &format!("100644,{blob},src/floor.txt"),
    ]);
    let draft_tree = env_index(&["write-tree"]);
    let draft = git(
        clone,
        &["commit-tree", &draft_tree, "-p", &base, "-m", "draft"],
    );
    // The timed part.
    let started = Instant::now();
    git(clone, &["fetch", "--quiet", "origin", "main"]);
    let merged = git(
        clone,
        &[
            "merge-tree",
            "--write-tree",
            &format!("--merge-base={base}"),
            &base,
            &draft,
        ],
    );
    let merged_tree = merged.lines().next().expect("a tree").to_string();
    let commit = git(
        clone,
        &["commit-tree", &merged_tree, "-p", &base, "-m", "merge"],
    );
    git(
        clone,
        &[
            "push",
            "--quiet",
            "--atomic",
            "--porcelain",
            &format!("--force-with-lease=refs/heads/main:{base}"),
            "origin",
            &format!("{commit}:refs/heads/main"),
        ],
    );
    let elapsed = started.elapsed();
    git(clone, &["fetch", "--quiet", "origin", "main"]);
    elapsed
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}
