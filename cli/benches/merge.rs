//! `cargo bench -p bay`: what a merge costs against the plumbing floor, and what an idle runner
//! pass costs with little and with much history. Ratios, measured in one run on one machine;
//! no test fails on them.
//!
//! - `merge --wait` under an `unchecked = true` policy, against the floor on the same
//!   repository: one fetch, one merge-tree, one commit-tree, one atomic push. Goal: 1.5. Once
//!   with the repositories in the temporary folder (on disk), once in `/dev/shm` (in memory):
//!   a merge writes more files than the floor (bay's records are commits and refs: about ten
//!   objects and five refs at the remote, against four and one), so where creating a file is
//!   slow at times, as on this machine's disk, the first ratio rises with it.
//! - how many candidates `merge --wait` builds, and check runs it records, per merge under a
//!   policy with one check, over a few merges in one clone. Goal: 1 (each candidate built is
//!   checked; a second one means the check ran twice for one merge).
//! - the `git` processes one `merge --wait` starts (counted through a `git` on PATH that logs).
//! - where one more `merge --wait`'s time goes, from Git's own trace (`GIT_TRACE2_EVENT`): the
//!   push, the fetch, the other `git` processes, and the rest (bay itself, the objects and refs
//!   it writes, starting processes). The trace slows every `git` a little.
//! - one idle `bay runner run --once` pass with 2,000 ended changes against one with 10.
//!   Goal: 1.2, because a pass must cost the same however much history there is.
//! - the same, for the pass that writes the runner's presence (at most once a heartbeat): a
//!   push, whose cost grows with the refs the remote advertises to it. No goal; shown so that
//!   the cost is seen.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::history::{self, Layout};
use support::{RUNS, bay, git, ms, paired, ratio, repository, repository_with, write};

/// A check that passes every file under `src/`, one unit each.
const CHECK: &str = r#"#!/bin/sh
request=$(cat)
ids=$(printf '%s' "$request" | sed -n 's/.*"candidate":{"commit":"\([0-9a-f]*\)","tree":"\([0-9a-f]*\)".*/"commit":"\1","tree":"\2"/p')
printf '{"schema":"bay.check.result/1","exercised":{%s},"plan":{"selected":1,"completed":1},"checks":[{"id":"src","verdict":"pass"}]}\n' "$ids"
"#;

/// A policy that runs [`CHECK`].
const CHECKED: &str = "revision = 1\n\n[[check]]\nid = \"files\"\nenvironment = \"any\"\ncommand = \".bay/check\"\nadapter = [\".bay/check\"]\nexpected_minimum = 1\ntimeout_s = 60\npath = [\"/usr/bin\", \"/bin\"]\n";

/// One `bay merge --wait` of a fresh one-file change, with `env` set for it; the start and the
/// edit are not timed.
fn merge_once(clone: &Path, n: usize, env: &[(&str, String)]) -> (Duration, String) {
    let start = bay(
        clone,
        &[
            "start",
            &format!("bench change {n}"),
            "--paths",
            &format!("src/file{n}.txt"),
        ],
        &[],
    );
    let view = PathBuf::from(start["detail"]["view"].as_str().expect("a view"));
    write(
        &view.join(format!("src/file{n}.txt")),
        &format!("changed {n}\n"),
    );
    let started = Instant::now();
    let merged = bay(&view, &["merge", "--wait"], env);
    let elapsed = started.elapsed();
    assert_eq!(merged["decision"], "merged", "{merged}");
    let change = merged["change"].as_str().expect("a change").to_string();
    (elapsed, change)
}

/// A `git` on PATH that logs each call before running the real one.
fn git_shim(root: &Path) -> (PathBuf, PathBuf) {
    let dir = root.join("shim");
    let log = root.join("git-calls.log");
    let real = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh");
    let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
    let shim = format!(
        "#!/bin/sh\ncase \"$1\" in -C) echo \"$3\" ;; --git-dir=*) echo \"$2\" ;; *) echo \"$1\" ;; esac >> {}\nexec {real} \"$@\"\n",
        log.display()
    );
    write(&dir.join("git"), &shim);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("git"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    (dir, log)
}

/// An idle pass of a runner that has never run here, so it writes its presence: a push, which
/// hears every ref the remote advertises.
fn presence_pass(clone: &Path, n: usize) -> Duration {
    git(
        clone,
        &["config", "bay.runnerName", &format!("bench-presence-{n}")],
    );
    let elapsed = idle_pass(clone);
    git(clone, &["config", "bay.runnerName", "bench"]);
    elapsed
}

fn idle_pass(clone: &Path) -> Duration {
    let started = Instant::now();
    let pass = bay(clone, &["runner", "run", "--once"], &[]);
    let elapsed = started.elapsed();
    assert_eq!(pass["decision"], "ok", "{pass}");
    elapsed
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = tempfile::Builder::new()
        .prefix("bay-bench-")
        .tempdir()
        .expect("a folder");
    let (_, clone) = repository(root.path(), "merge");
    let (floor, merge) = merge_against_floor(&clone);
    // The same in memory, where creating a file costs no disk: bay writes more files per merge
    // than the floor (its records are commits and refs), so a slow disk moves the first ratio.
    let memory = Path::new("/dev/shm");
    let in_memory = memory.is_dir().then(|| {
        let root = tempfile::Builder::new()
            .prefix("bay-bench-")
            .tempdir_in(memory)
            .expect("a folder in memory");
        let (_, clone) = repository(root.path(), "merge");
        merge_against_floor(&clone)
    });
    let (shim, log) = git_shim(root.path());
    let path = format!(
        "{}:{}",
        shim.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    merge_once(&clone, RUNS + 1, &[("PATH", path)]);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    let mut by_command: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for line in calls.lines() {
        *by_command.entry(line).or_default() += 1;
    }
    println!(
        "merge --wait (unchecked), on disk ({}): {:.1} ms; plumbing floor: {:.1} ms; ratio {:.2} \
         (goal 1.5)",
        root.path().parent().unwrap_or(root.path()).display(),
        ms(merge),
        ms(floor),
        ratio(merge, floor),
    );
    if let Some((floor, merge)) = in_memory {
        println!(
            "merge --wait (unchecked), in memory (/dev/shm): {:.1} ms; plumbing floor: {:.1} ms; \
             ratio {:.2} (goal 1.5)",
            ms(merge),
            ms(floor),
            ratio(merge, floor),
        );
    }
    println!(
        "git processes in one merge --wait: {} ({})",
        calls.lines().count(),
        by_command
            .iter()
            .map(|(c, n)| format!("{c} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let events = root.path().join("trace2.json");
    let (traced, _) = merge_once(
        &clone,
        RUNS + 2,
        &[("GIT_TRACE2_EVENT", events.display().to_string())],
    );
    let split = Split::read(&events);
    println!(
        "where one merge --wait's {:.1} ms go: push {:.1} ms, fetch {:.1} ms, {} other git \
         processes {:.1} ms, bay itself and starting processes {:.1} ms",
        ms(traced),
        split.push * 1000.0,
        split.fetch * 1000.0,
        split.others,
        split.other * 1000.0,
        ms(traced) - (split.push + split.fetch + split.other) * 1000.0,
    );

    let (remote, checked) =
        repository_with(root.path(), "checked", CHECKED, &[(".bay/check", CHECK)]);
    let merges = 3;
    let (mut candidates, mut records) = (0, 0);
    for n in 0..merges {
        let change = merge_once(&checked, n, &[]).1;
        let chain = git(
            &remote,
            &["log", "--format=%B", &format!("refs/bay/changes/{change}")],
        );
        candidates += chain.matches("\"kind\":\"candidate\"").count();
        records += chain.matches("\"kind\":\"check\"").count();
    }
    println!(
        "merge --wait with one check, {merges} merges in one clone: {:.2} candidates built and \
         {:.2} check runs recorded per merge (goal 1)",
        candidates as f64 / merges as f64,
        records as f64 / merges as f64,
    );

    // Both remotes as runners' compactions leave them: with every change by refs of its own
    // (`Layout::PerChange`, bay before compaction), each pass here would be a compaction of
    // the next batch, not an idle pass. The history bench measures both layouts.
    let (small_remote, small) = repository(root.path(), "small");
    history::build(&small_remote, 10, Layout::Compacted);
    let (large_remote, large) = repository(root.path(), "large");
    history::build(&large_remote, 2_000, Layout::Compacted);
    idle_pass(&small);
    idle_pass(&large);
    let (small_pass, large_pass) = paired(|_| (idle_pass(&small), idle_pass(&large)));
    println!(
        "idle runner pass: {:.1} ms with 10 ended changes, {:.1} ms with 2,000; ratio {:.2} (goal 1.2)",
        ms(small_pass),
        ms(large_pass),
        ratio(large_pass, small_pass)
    );
    let (small_presence, large_presence) =
        paired(|n| (presence_pass(&small, n), presence_pass(&large, n)));
    println!(
        "idle pass that writes its presence (once a heartbeat): {:.1} ms with 10 ended changes, \
         {:.1} ms with 2,000; ratio {:.2}",
        ms(small_presence),
        ms(large_presence),
        ratio(large_presence, small_presence)
    );
}

/// The seconds the `git` processes bay started ran, from Git's own trace (`GIT_TRACE2_EVENT`):
/// the push, the fetch, and the others (less the object reader, which lives as long as bay).
#[derive(Default)]
struct Split {
    push: f64,
    fetch: f64,
    other: f64,
    others: usize,
}

impl Split {
    fn read(events: &Path) -> Split {
        let mut split = Split::default();
        for process in support::trace::processes(events) {
            match process.command.as_str() {
                "push" => split.push += process.seconds,
                "fetch" => split.fetch += process.seconds,
                "cat-file" => {}
                _ => {
                    split.other += process.seconds;
                    split.others += 1;
                }
            }
        }
        split
    }
}

/// The medians of `merge --wait` and of the floor on `clone`, alternated, after one warm-up
/// of each (so that caches and the first fetch do not count).
fn merge_against_floor(clone: &Path) -> (Duration, Duration) {
    support::floor_once(clone, 1000);
    merge_once(clone, 49, &[]);
    paired(|n| (support::floor_once(clone, n), merge_once(clone, n, &[]).0))
}
