//! `cargo bench -p bay --bench history`: what each daily command costs with 10, 10,000 and
//! 100,000 ended changes on the remote. Issue 15: bay must cost the same on its
//! ten-thousandth merge as on its first, so the goal for every ratio to the smallest history
//! is 1.2. Ratios, measured in one run on one machine; no test fails on them.
//!
//! Each history is built into a bare remote by `support::history::build` (seconds, with one
//! `git fast-import`; a tenth of the changes are blocked, then abandoned, a tenth abandoned,
//! the rest merge). The commands run in two clones of it, each fetched once first:
//!
//! - a fresh clone, cloned as over a network (only the objects main reaches: 320,000 of the
//!   1.6 million the 100,000-change remote holds), whose mirror (`refs/bay-mirror/origin/`)
//!   holds only what the commands fetch: what the remote's history costs;
//! - a clone that holds every chain, as a long-lived runner's clone holds them (it fetched the
//!   chain of every change that passed through the queue, and bay never drops a ref from the
//!   mirror that it does not fetch again; a local clone, so it holds every object the remote
//!   ever held), and every index shard (its compactions fetched each): what the clone's own
//!   history adds. In the fresh clone, a command that needs a shard the clone never fetched
//!   (`start` of an intent, `status` and `undo` of a compacted change) fetches all of it, so
//!   its times there include those first fetches.
//!
//! Then, run after run, each size and clone in turn (so that a machine busy for a while slows
//! all alike), the commands as an agent and a runner run them, each timed alone:
//! `start` (a new intent), `merge` (queue it), `status`, `status <live change>`,
//! `status <merged change>` (a recent one from the history), a busy `runner run --once` (it
//! merges the queued change), an idle one, an idle one that writes its presence (a push: once
//! a heartbeat in life; here a runner name of its own each time), `merge --wait` of another
//! change under the `unchecked = true` policy, the plumbing floor of a merge on the same
//! remote (fetch, merge-tree, commit-tree, one atomic push; `git push` hears every ref the
//! remote holds, so the floor grows too), `abandon` of a third, and `undo` of the change
//! `merge --wait` merged (whose undo change is then abandoned). The medians are printed. The
//! first round is left out of them and printed apart for the fresh clone: what each command
//! cost once, right after `git clone`, and the objects the clone then holds (a layout that made
//! a new clone fetch every ended change would show there and nowhere else).
//!
//! With `BAY_BENCH_TRACE=1`, each command then runs once more at each size under Git's trace
//! (`GIT_TRACE2_EVENT`), and the bench prints where its time went: each `git` it started, how
//! long it ran, and how many refspecs each fetch named.
//!
//! The remotes keep ended changes as runners' compactions leave them (merged changes in the
//! index's shards, `refs/bay/compacted/...`, the newest few still waiting);
//! `BAY_BENCH_LAYOUT=per-change` keeps every change by refs of its own instead, as bay did
//! before compaction.
//!
//! `BAY_BENCH_SIZES=10,10000` runs a subset (the first size is the one the ratios divide by),
//! `BAY_BENCH_CLONES=fresh` (or `held`) one kind of clone, `BAY_BENCH_RUNS=3` fewer runs (5 by
//! default), and `BAY_BENCH_DIR=<path>` keeps the remotes and clones there to look at
//! afterwards.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bay_core::id::ChangeId;
use support::history::{self, History, Layout};
use support::{bay, git, median, ms, timed_bay, write};

/// The commands timed, in the order the table lists them.
const COMMANDS: [&str; 12] = [
    "start",
    "merge",
    "merge --wait",
    "plumbing floor",
    "status",
    "status <live>",
    "status <merged>",
    "abandon",
    "undo",
    "runner --once, idle",
    "runner --once, busy",
    "runner --once, presence",
];

/// The config of each history's main: a heartbeat long enough that only the first runner
/// pass writes the runner's presence, so that idle and busy passes are timed without it.
const CONFIG: &str = "[runner]\nlease_s = 3600\nheartbeat_s = 1800\n";

/// The clones the commands run in: what each holds before the first command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Held {
    /// Only main, as `git clone` over a network leaves it.
    Fresh,
    /// Every chain, the queue, the runner's log and notes, as a long-lived runner's clone.
    Chains,
}

impl Held {
    fn name(self) -> &'static str {
        match self {
            Held::Fresh => "fresh",
            Held::Chains => "held",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Held::Fresh => "in a fresh clone (its mirror holds only what the commands fetch)",
            Held::Chains => "in a clone that holds every chain (as a long-lived runner's does)",
        }
    }
}

/// One history: the clones the commands run in, and what was built.
struct Site {
    count: usize,
    clones: Vec<(Held, PathBuf)>,
    history: History,
    built: Duration,
    refs: usize,
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes = sizes();
    let runs = env_number("BAY_BENCH_RUNS").unwrap_or(5);
    let kinds = kinds();
    let kept = std::env::var_os("BAY_BENCH_DIR").map(|dir| {
        std::fs::create_dir_all(&dir).expect("BAY_BENCH_DIR");
        std::fs::canonicalize(&dir).expect("BAY_BENCH_DIR")
    });
    let temporary = tempfile::Builder::new()
        .prefix("bay-bench-")
        .tempdir()
        .expect("a folder");
    let root = kept
        .clone()
        .unwrap_or_else(|| temporary.path().to_path_buf());
    let sites: Vec<Site> = sizes
        .iter()
        .map(|&count| site(&root, count, &kinds))
        .collect();
    for site in &sites {
        println!(
            "{:>7} ended changes: built in {:.1} s; {} refs on the remote",
            site.count,
            site.built.as_secs_f64(),
            site.refs
        );
    }

    // One round first, apart: caches and a clone's first fetches do not count in the medians,
    // but what the first round costs in a fresh clone (its first fetch of what bay keeps) is
    // printed on its own.
    let mut first_round = Vec::new();
    for site in &sites {
        for (held, clone) in &site.clones {
            let took = round(site, *held, clone, 0, None);
            if *held == Held::Fresh {
                first_round.push((took, objects_in(clone)));
            }
        }
    }
    let mut samples: BTreeMap<(Held, &str, usize), Vec<Duration>> = BTreeMap::new();
    for run in 1..=runs {
        for (at, site) in sites.iter().enumerate() {
            for (held, clone) in &site.clones {
                for (command, took) in round(site, *held, clone, run, None) {
                    samples.entry((*held, command, at)).or_default().push(took);
                }
            }
        }
    }
    if !first_round.is_empty() {
        print_first_round(&sites, &first_round);
    }
    for held in &kinds {
        print_table(*held, &sites, &samples);
    }

    if std::env::var_os("BAY_BENCH_TRACE").is_some() {
        for site in &sites {
            for (held, clone) in &site.clones {
                let traces = trace_dir(&root, *held, site.count);
                std::fs::create_dir_all(&traces).expect("a folder for traces");
                round(site, *held, clone, runs + 1, Some(&traces));
            }
        }
        for held in &kinds {
            print_traces(&root, *held, &sites);
        }
    }
    if let Some(dir) = kept {
        println!("the remotes and clones are in {}", dir.display());
    }
}

fn sizes() -> Vec<usize> {
    match std::env::var("BAY_BENCH_SIZES") {
        Ok(list) => list
            .split(',')
            .map(|size| {
                size.trim()
                    .replace('_', "")
                    .parse()
                    .expect("BAY_BENCH_SIZES: numbers")
            })
            .collect(),
        Err(_) => vec![10, 10_000, 100_000],
    }
}

/// How the remotes keep ended changes: as runners' compactions leave them, or with
/// `BAY_BENCH_LAYOUT=per-change` every change by refs of its own, as bay kept them before.
fn layout() -> Layout {
    match std::env::var("BAY_BENCH_LAYOUT").as_deref() {
        Ok("per-change") => Layout::PerChange,
        Ok("compacted") | Err(_) => Layout::Compacted,
        Ok(other) => panic!("BAY_BENCH_LAYOUT: compacted or per-change, not {other:?}"),
    }
}

fn kinds() -> Vec<Held> {
    match std::env::var("BAY_BENCH_CLONES").as_deref() {
        Ok("fresh") => vec![Held::Fresh],
        Ok("held") => vec![Held::Chains],
        Ok(other) => panic!("BAY_BENCH_CLONES: fresh or held, not {other:?}"),
        Err(_) => vec![Held::Fresh, Held::Chains],
    }
}

fn env_number(name: &str) -> Option<usize> {
    let value = std::env::var(name).ok()?;
    Some(value.parse().unwrap_or_else(|_| panic!("{name}: a number")))
}

/// A remote with `count` ended changes, and a clone of each kind that fetched it.
fn site(root: &Path, count: usize, kinds: &[Held]) -> Site {
    let (remote, first) = support::repository(root, &format!("history-{count}"));
    write(&first.join(".bay/config.toml"), CONFIG);
    git(&first, &["commit", "--quiet", "-am", "a long heartbeat"]);
    git(&first, &["push", "--quiet", "origin", "main"]);
    let started = Instant::now();
    let history = history::build(&remote, count, layout());
    let built = started.elapsed();
    let refs = git(&remote, &["for-each-ref", "--format=x"])
        .lines()
        .count();
    let clones = kinds
        .iter()
        .map(|&held| {
            let clone = root.join(format!("history-{count}-{}", held.name()));
            support::clone_of(&remote, &clone, held == Held::Chains);
            git(&clone, &["fetch", "--quiet", "origin"]);
            if held == Held::Chains {
                hold_chains(&clone);
            }
            (held, clone)
        })
        .collect();
    Site {
        count,
        clones,
        history,
        built,
        refs,
    }
}

/// Fetches into the clone's mirror what a long-lived runner's clone holds: main, every chain
/// (keeping reflogs, as bay's fetches of chains do), every index shard (its compactions
/// fetched each), the queue, the runners' logs and the evidence notes.
fn hold_chains(clone: &Path) {
    let mirror = bay_drivers::remote::mirror_prefix("origin");
    let refspecs: Vec<String> = [
        "refs/heads/main",
        "refs/bay/changes/*",
        "refs/bay/compacted/*",
        "refs/bay/queue/*",
        "refs/bay/log/*",
        "refs/notes/bay/*",
    ]
    .iter()
    .map(|pattern| format!("+{pattern}:{mirror}{}", &pattern["refs/".len()..]))
    .collect();
    let mut args = vec![
        "-c",
        "core.logAllRefUpdates=always",
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "origin",
    ];
    args.extend(refspecs.iter().map(String::as_str));
    git(clone, &args);
}

/// One round of every command on one site; `traces` names a folder to trace each command into.
fn round(
    site: &Site,
    held: Held,
    clone: &Path,
    run: usize,
    traces: Option<&Path>,
) -> Vec<(&'static str, Duration)> {
    let mut round = Round {
        count: site.count,
        traces,
        took: Vec::with_capacity(COMMANDS.len()),
    };
    let file = |k: usize| format!("src/file{}.txt", (3 * run + k) % 50);
    let intent = |k: &str| format!("bench {} {} {run} {k}", site.count, held.name());

    // A change queued, seen, and merged by a runner.
    let started = round.time(
        "start",
        clone,
        &["start", &intent("a"), "--paths", &file(0)],
    );
    let (queued, view) = change_and_view(&started);
    write(
        &view.join(file(0)),
        &format!("{} queued in run {run}\n", held.name()),
    );
    let merge = round.time("merge", &view, &["merge"]);
    assert_eq!(merge["decision"], "queued", "{merge}");
    round.time("status", clone, &["status"]);
    round.time("status <live>", clone, &["status", queued.as_str()]);
    let merged = recent_merge(&site.history);
    let seen = round.time("status <merged>", clone, &["status", merged.as_str()]);
    assert_eq!(seen["decision"], "merged", "{seen}");
    let busy = round.time("runner --once, busy", clone, &["runner", "run", "--once"]);
    let landed = bay(clone, &["status", queued.as_str()], &[]);
    assert_eq!(
        landed["decision"], "merged",
        "busy pass {busy}; then {landed}"
    );
    round.time("runner --once, idle", clone, &["runner", "run", "--once"]);
    let presence = format!("bench-presence-{}-{run}", held.name());
    git(clone, &["config", "bay.runnerName", &presence]);
    round.time(
        "runner --once, presence",
        clone,
        &["runner", "run", "--once"],
    );
    git(clone, &["config", "bay.runnerName", support::RUNNER]);

    // A change merged here, against the floor.
    let started = bay(clone, &["start", &intent("b"), "--paths", &file(1)], &[]);
    let (waited, view) = change_and_view(&started);
    write(
        &view.join(file(1)),
        &format!("{} merged in run {run}\n", held.name()),
    );
    let merged = round.time("merge --wait", &view, &["merge", "--wait"]);
    assert_eq!(merged["decision"], "merged", "{merged}");
    let floor = support::floor_once(clone, run * 2 + usize::from(held == Held::Chains));
    round.took.push(("plumbing floor", floor));

    // A change abandoned, and the merge undone (its undo change abandoned).
    let started = bay(clone, &["start", &intent("c"), "--paths", &file(2)], &[]);
    let (_, view) = change_and_view(&started);
    round.time("abandon", &view, &["abandon"]);
    let undo = round.time("undo", clone, &["undo", waited.as_str()]);
    let undo_change = undo["change"].as_str().expect("the undo's change");
    let abandoned = bay(clone, &["abandon", undo_change], &[]);
    assert_eq!(abandoned["decision"], "ok", "{abandoned}");
    round.took
}

/// The commands of one round timed so far.
struct Round<'a> {
    count: usize,
    traces: Option<&'a Path>,
    took: Vec<(&'static str, Duration)>,
}

impl Round<'_> {
    /// Runs and times one bay command (traced into its own file when tracing); a refusal or a
    /// fault stops the bench, since it would time something else.
    fn time(&mut self, command: &'static str, dir: &Path, args: &[&str]) -> serde_json::Value {
        let env: Vec<(&str, String)> = self
            .traces
            .map(|traces| {
                let file = trace_file(traces, command).display().to_string();
                ("GIT_TRACE2_EVENT", file)
            })
            .into_iter()
            .collect();
        let (elapsed, result) = timed_bay(dir, args, &env);
        let decision = result["decision"].as_str().unwrap_or_default();
        assert!(
            !matches!(decision, "blocked" | "failed"),
            "{command} with {} ended changes: {result}",
            self.count
        );
        self.took.push((command, elapsed));
        result
    }
}

fn change_and_view(started: &serde_json::Value) -> (ChangeId, PathBuf) {
    let change = started["change"].as_str().expect("a change");
    let view = started["detail"]["view"].as_str().expect("a view");
    (
        ChangeId::parse(change).expect("a change id"),
        PathBuf::from(view),
    )
}

/// A merge from the history, among the last: the one a person would ask about; the newest
/// that the index holds when the history is compacted, so that reading it back is timed.
fn recent_merge(history: &History) -> ChangeId {
    history
        .compacted
        .last()
        .or(history.merged.last())
        .cloned()
        .expect("every history merges something")
}

fn trace_file(dir: &Path, command: &str) -> PathBuf {
    let name: String = command
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    dir.join(format!("{name}.json"))
}

fn trace_dir(root: &Path, held: Held, count: usize) -> PathBuf {
    root.join(format!("trace-{count}-{}", held.name()))
}

fn print_table(held: Held, sites: &[Site], samples: &BTreeMap<(Held, &str, usize), Vec<Duration>>) {
    let first = sites.first().map_or(0, |site| site.count);
    println!("\n{}:", held.title());
    let mut header = format!("{:<26}", "median, ms");
    for site in sites {
        header.push_str(&format!("{:>10}", site.count));
    }
    for site in sites.iter().skip(1) {
        header.push_str(&format!("{:>14}", format!("{}/{first}", site.count)));
    }
    println!("{header}   (goal for each ratio: 1.2)");
    let medians: BTreeMap<(&str, usize), Duration> = COMMANDS
        .iter()
        .flat_map(|&command| (0..sites.len()).map(move |at| (command, at)))
        .map(|(command, at)| {
            let taken = samples
                .get(&(held, command, at))
                .cloned()
                .map_or(Duration::ZERO, median);
            ((command, at), taken)
        })
        .collect();
    for command in COMMANDS {
        let mut line = format!("{command:<26}");
        for at in 0..sites.len() {
            line.push_str(&format!("{:>10.1}", ms(medians[&(command, at)])));
        }
        for at in 1..sites.len() {
            let ratio = support::ratio(medians[&(command, at)], medians[&(command, 0)]);
            line.push_str(&format!("{ratio:>14.2}"));
        }
        println!("{line}");
    }
    let mut line = format!("{:<26}", "merge --wait / floor");
    for at in 0..sites.len() {
        let ratio = support::ratio(
            medians[&("merge --wait", at)],
            medians[&("plumbing floor", at)],
        );
        line.push_str(&format!("{ratio:>10.2}"));
    }
    println!("{line}");
    let mut line = format!("{:<26}", "refs on the remote");
    for site in sites {
        line.push_str(&format!("{:>10}", site.refs));
    }
    println!("{line}");
}

/// What the first round cost in each fresh clone, once, and how many objects the clone held
/// after it: a clone's first command fetches what bay keeps on the remote, so this is where a
/// layout that makes a new clone fetch every ended change would show.
fn print_first_round(sites: &[Site], first_round: &[(Vec<(&'static str, Duration)>, u64)]) {
    let first = sites.first().map_or(0, |site| site.count);
    println!("\nthe first round in a fresh clone (once, right after `git clone`):");
    let mut header = format!("{:<26}", "ms");
    for site in sites {
        header.push_str(&format!("{:>10}", site.count));
    }
    for site in sites.iter().skip(1) {
        header.push_str(&format!("{:>14}", format!("{}/{first}", site.count)));
    }
    println!("{header}");
    for command in COMMANDS {
        let took: Vec<Duration> = first_round
            .iter()
            .map(|(round, _)| {
                round
                    .iter()
                    .find(|(name, _)| *name == command)
                    .map_or(Duration::ZERO, |(_, took)| *took)
            })
            .collect();
        let mut line = format!("{command:<26}");
        for taken in &took {
            line.push_str(&format!("{:>10.1}", ms(*taken)));
        }
        for taken in took.iter().skip(1) {
            let ratio = support::ratio(*taken, took[0]);
            line.push_str(&format!("{ratio:>14.2}"));
        }
        println!("{line}");
    }
    let mut line = format!("{:<26}", "objects in the clone");
    for (_, objects) in first_round {
        line.push_str(&format!("{objects:>10}"));
    }
    println!("{line}");
}

/// The objects a clone holds, packed and loose, as `git count-objects -v` counts them.
fn objects_in(clone: &Path) -> u64 {
    git(clone, &["count-objects", "-v"])
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(": ")?;
            matches!(key, "count" | "in-pack").then(|| value.trim().parse::<u64>().ok())?
        })
        .sum()
}

/// Where each traced command's time went, size by size: each `git` it started, in order, with
/// how long it ran (the object reader, `cat-file`, lives as long as bay and is left out).
fn print_traces(root: &Path, held: Held, sites: &[Site]) {
    println!(
        "\nwhere the time went (GIT_TRACE2_EVENT), one traced run of each command {}:",
        held.title()
    );
    for command in COMMANDS {
        if command == "plumbing floor" {
            continue;
        }
        println!("{command}:");
        for site in sites {
            let file = trace_file(&trace_dir(root, held, site.count), command);
            let processes = support::trace::processes(&file);
            let mut total = 0.0;
            let mut parts = Vec::new();
            for process in &processes {
                if process.command == "cat-file" {
                    continue;
                }
                total += process.seconds;
                let mut part = format!("{} {:.1}", process.command, process.seconds * 1000.0);
                if process.command == "fetch" || process.command == "push" {
                    // The remote, then the refspecs.
                    let refspecs = process.operands().len().saturating_sub(1);
                    part.push_str(&format!(" ({refspecs} refspecs)"));
                }
                parts.push(part);
            }
            println!(
                "  {:>7}: git {:.1} ms in {} processes: {}",
                site.count,
                total * 1000.0,
                parts.len(),
                parts.join(", ")
            );
        }
    }
}
