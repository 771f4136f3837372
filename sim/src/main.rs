//! `bay-sim`: run bay's machines through seeded faults and check its promises.
//!
//! ```text
//! bay-sim run --seeds 0..10000 [--runners N] [--agents M] [--changes K] [--faults all|none|LIST]
//!              [--history H] [--lanes] [--batch] [--json]
//! bay-sim run --seeds 0..100 --check-determinism
//! bay-sim replay --seed S [same options]
//! bay-sim plan [--agents N] [--arrivals R] [--check-minutes D] [--failure-rate P]
//!              [--flake-rate P] [--runners N] [--retries N] [--ahead N] [--areas D] [--lanes]
//!              [--batch N]
//!              [--hours H] [--seeds A..B] [--json]
//! ```
//!
//! Exit codes: 0 when every seed kept every promise; 3 for a broken safety invariant; 4 for a
//! liveness failure; 5 for a panic; 6 when a seed ran differently twice; 2 for a usage error.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::process::ExitCode;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bay_sim::faults::FaultClass;
use bay_sim::invariants::Invariant;
use bay_sim::{RunReport, Scenario, run_seed};
use clap::{Args, Parser, Subcommand};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "bay-sim",
    version,
    about = "Run bay's merge path through seeded faults and check its promises"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a range of seeds and report.
    Run {
        /// Seeds to run, as A..B (B excluded).
        #[arg(long, value_parser = parse_range)]
        seeds: (u64, u64),
        #[command(flatten)]
        world: WorldArgs,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Run each seed twice and compare the traces' hashes.
        #[arg(long)]
        check_determinism: bool,
        /// Worker threads (default: the machine's cores). Each seed runs on one thread.
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Run one seed and print its whole trace.
    Replay {
        #[arg(long)]
        seed: u64,
        #[command(flatten)]
        world: WorldArgs,
    },
    /// Plan capacity: run the real core at given rates and set it beside the analytic bounds.
    Plan(PlanArgs),
}

#[derive(Args, Clone)]
struct PlanArgs {
    /// Agents, each working one change at a time.
    #[arg(long, default_value_t = 8)]
    agents: usize,
    /// New changes an hour (a Poisson stream).
    #[arg(long, default_value_t = 12.0)]
    arrivals: f64,
    /// Minutes a check run takes: 10 (fixed), 5..15 (uniform) or exp:10 (exponential).
    #[arg(long, default_value = "10", value_parser = bay_sim::plan::Dist::parse)]
    check_minutes: bay_sim::plan::Dist,
    /// The share of changes broken at first, whose check fails until their agent repairs them.
    #[arg(long, default_value_t = 0.1)]
    failure_rate: f64,
    /// The share of check runs that fail on a good change.
    #[arg(long, default_value_t = 0.05)]
    flake_rate: f64,
    /// Runners taking the queue's head.
    #[arg(long, default_value_t = 2)]
    runners: usize,
    /// The check's `retry_on_failure` (with `allow_flaky`).
    #[arg(long, default_value_t = 0)]
    retries: u32,
    /// Simulated hours counted per seed, after a first hour of warm-up.
    #[arg(long, default_value_t = 24.0)]
    hours: f64,
    /// The runners' `[runner] ahead`: how many queued entries a runner that does not hold the
    /// head checks early. 0, the default, leaves it off.
    #[arg(long, default_value_t = 0)]
    ahead: u32,
    /// The runners' `[runner] batch` `max`: the head's runner checks the head and the entries
    /// behind it as one tree, up to this many. 0, the default, leaves it off; else 2 to 64.
    #[arg(long, default_value_t = 0, value_parser = parse_batch)]
    batch: u32,
    /// Source folders the changes spread over at random; with two or more, one
    /// `footprint = true` check per folder.
    #[arg(long, default_value_t = 4)]
    areas: u32,
    /// The runners' `[runner] footprint_lanes`: check entries beside the head whose folders
    /// no entry ahead touches.
    #[arg(long)]
    lanes: bool,
    /// Seeds to run, as A..B (B excluded); their samples are pooled.
    #[arg(long, value_parser = parse_range, default_value = "0..3")]
    seeds: (u64, u64),
    /// Skip the one-step setting changes (and so the advice).
    #[arg(long)]
    no_advice: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
struct WorldArgs {
    /// Runners in the world.
    #[arg(long, default_value_t = 2)]
    runners: usize,
    /// Agents in the world.
    #[arg(long, default_value_t = 3)]
    agents: usize,
    /// Tasks the agents share, each one change.
    #[arg(long, default_value_t = 6)]
    changes: usize,
    /// Fault classes the seeds pick from: all, none, or a comma-separated list.
    #[arg(long, default_value = "all", value_parser = FaultClass::parse_set)]
    faults: BTreeSet<FaultClass>,
    /// Ended changes on the remote before the agents start, as runners' compactions leave
    /// them: most merged ones in the index, the newest few waiting with their refs.
    #[arg(long, default_value_t = 0)]
    history: usize,
    /// Every seed's policy declares its checks' read sets (`footprint = true`), and every
    /// runner checks entries beside the head (`[runner] footprint_lanes`).
    #[arg(long)]
    lanes: bool,
    /// Every seed reuses evidence, and where its policy lets unsigned records count, every
    /// runner checks the head and the entries behind it as one tree (`[runner] batch`).
    #[arg(long)]
    batch: bool,
}

impl WorldArgs {
    fn scenario(&self, full_trace: bool) -> Scenario {
        Scenario {
            runners: self.runners.max(1),
            agents: self.agents.max(1),
            changes: self.changes,
            allowed: self.faults.clone(),
            tweak: None,
            full_trace,
            history: self.history,
            lock_take: bay_core::lock::take,
            lanes: self.lanes,
            batch: self.batch,
        }
    }

    /// The options, as the replay command line repeats them.
    fn flags(&self) -> String {
        let faults = if self.faults.len() == FaultClass::ALL.len() {
            "all".to_string()
        } else if self.faults.is_empty() {
            "none".to_string()
        } else {
            self.faults
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(",")
        };
        let history = match self.history {
            0 => String::new(),
            n => format!(" --history {n}"),
        };
        let lanes = if self.lanes { " --lanes" } else { "" };
        let batch = if self.batch { " --batch" } else { "" };
        format!(
            "--runners {} --agents {} --changes {} --faults {faults}{history}{lanes}{batch}",
            self.runners, self.agents, self.changes
        )
    }
}

fn parse_batch(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if n == 0 || (2..=bay_core::batch::MAX_MEMBERS).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?} is not 0 (off) or a batch size from 2 to 64"
        )),
    }
}

fn parse_range(text: &str) -> Result<(u64, u64), String> {
    let (a, b) = text
        .split_once("..")
        .ok_or("seeds are a range A..B, such as 0..1000")?;
    let a: u64 = a.parse().map_err(|_| format!("{a:?} is not a seed"))?;
    let b: u64 = b.parse().map_err(|_| format!("{b:?} is not a seed"))?;
    if b <= a {
        return Err(format!("the range {text} holds no seed"));
    }
    Ok((a, b))
}

/// How one seed went.
enum Verdict {
    Kept(RunReport),
    Broke(RunReport),
    Panicked { seed: u64, message: String },
    Diverged { seed: u64, first: u64, second: u64 },
}

fn judge(seed: u64, scenario: &Scenario, determinism: bool) -> Verdict {
    let run = || std::panic::catch_unwind(AssertUnwindSafe(|| run_seed(seed, scenario)));
    let report = match run() {
        Ok(report) => report,
        Err(panic) => {
            return Verdict::Panicked {
                seed,
                message: panic_text(&panic),
            };
        }
    };
    if determinism {
        match run() {
            Ok(again) if again.trace_hash != report.trace_hash => {
                return Verdict::Diverged {
                    seed,
                    first: report.trace_hash,
                    second: again.trace_hash,
                };
            }
            Ok(_) => {}
            Err(panic) => {
                return Verdict::Panicked {
                    seed,
                    message: panic_text(&panic),
                };
            }
        }
    }
    if report.violations.is_empty() {
        Verdict::Kept(report)
    } else {
        Verdict::Broke(report)
    }
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

/// CPU seconds this process has used, from /proc (user and system), when the platform says.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn main() -> ExitCode {
    // A panic is reported with its seed, not printed by the default hook mid-run.
    std::panic::set_hook(Box::new(|_| {}));
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            seeds,
            world,
            json,
            check_determinism,
            jobs,
        } => run(seeds, &world, json, check_determinism, jobs),
        Command::Replay { seed, world } => replay(seed, &world),
        Command::Plan(args) => plan(&args),
    }
}

fn plan(args: &PlanArgs) -> ExitCode {
    let rate = |p: f64| (0.0..1.0).contains(&p);
    if !rate(args.failure_rate)
        || !rate(args.flake_rate)
        || args.hours.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)
    {
        eprintln!("bay-sim plan: rates are in [0, 1) and hours above 0");
        return ExitCode::from(2);
    }
    let plan = bay_sim::plan::Plan {
        agents: args.agents.max(1),
        arrivals_per_hour: args.arrivals.max(0.0),
        check: args.check_minutes,
        failure_rate: args.failure_rate,
        flake_rate: args.flake_rate,
        runners: args.runners.max(1),
        retries: args.retries,
        hours: args.hours,
        ahead: args.ahead,
        batch: args.batch,
        areas: args.areas.clamp(1, 64),
        lanes: args.lanes,
    };
    let report = bay_sim::plan::report(&plan, args.seeds, !args.no_advice);
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    ExitCode::SUCCESS
}

fn run(
    seeds: (u64, u64),
    world: &WorldArgs,
    json: bool,
    determinism: bool,
    jobs: Option<usize>,
) -> ExitCode {
    let scenario = world.scenario(false);
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let next = AtomicU64::new(seeds.0);
    let tally: Mutex<Tally> = Mutex::new(Tally::default());
    let (wall, cpu_before) = (Instant::now(), cpu_seconds());
    let progress = Progress::new(seeds.1.saturating_sub(seeds.0));
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= seeds.1 {
                        break;
                    }
                    let verdict = judge(seed, &scenario, determinism);
                    let mut tally = tally
                        .lock()
                        .expect("no worker panics while holding the lock");
                    tally.add(verdict, world);
                    progress.seed_done(&tally);
                }
            });
        }
    });
    progress.finish();
    let wall = wall.elapsed().as_secs_f64();
    let cpu = match (cpu_before, cpu_seconds()) {
        (Some(before), Some(after)) if after > before => after - before,
        _ => wall * jobs as f64,
    };
    let tally = tally.into_inner().expect("the workers are done");
    summarize(seeds, world, tally, wall, cpu, json)
}

/// How far a run is, on stderr when it is a terminal: a line redrawn at most twice a second.
struct Progress {
    total: u64,
    shown: Option<Mutex<Instant>>,
}

impl Progress {
    fn new(total: u64) -> Progress {
        use std::io::IsTerminal;
        Progress {
            total,
            shown: std::io::stderr()
                .is_terminal()
                .then(|| Mutex::new(Instant::now())),
        }
    }

    /// One more seed judged; `tally` holds all judged so far.
    fn seed_done(&self, tally: &Tally) {
        let Some(shown) = &self.shown else { return };
        let Ok(mut shown) = shown.lock() else { return };
        if shown.elapsed().as_millis() < 500 {
            return;
        }
        *shown = Instant::now();
        eprint!(
            "\r{} of {} seeds, {} broken",
            tally.judged,
            self.total,
            tally.failures.len()
        );
    }

    /// Clears the line before the summary.
    fn finish(&self) {
        if self.shown.is_some() {
            eprint!("\r\x1b[2K");
        }
    }
}

/// What a run's seeds add up to, summed as each is judged: however many seeds a run takes,
/// it holds these sums and its broken seeds, never every seed's report.
#[derive(Default)]
struct Tally {
    judged: u64,
    outcomes: BTreeMap<&'static str, u64>,
    reasons: BTreeMap<&'static str, u64>,
    submit_refusals: BTreeMap<&'static str, u64>,
    undos: BTreeMap<&'static str, u64>,
    waits: BTreeMap<&'static str, u64>,
    red: BTreeMap<&'static str, u64>,
    corruptions: BTreeMap<&'static str, u64>,
    locks: BTreeMap<&'static str, u64>,
    keys: BTreeMap<&'static str, u64>,
    unreadable_open: u64,
    held_merges: u64,
    dependency_waits: u64,
    logged: u64,
    presences: u64,
    compacted: u64,
    compacted_abandoned: u64,
    compacted_no_effect: u64,
    history: u64,
    /// Seeds with a hold plugin, its runs, and its answers that held main.
    plugin: (u64, u64, u64),
    ahead: (u64, u64, u64),
    lanes: (u64, u64),
    batch: (u64, u64, u64),
    /// Seeds by their runners' pass interval, in seconds.
    intervals: BTreeMap<u64, u64>,
    /// Seeds by their runners' lease and heartbeat, in seconds.
    leases: BTreeMap<(u64, u64), u64>,
    merged: u64,
    ops: u64,
    events: u64,
    /// Each broken seed, by seed, as the summary names it.
    failures: Vec<(u64, serde_json::Value)>,
    code: u8,
}

/// Adds each of `from`'s counts into `into`.
fn add_counts(into: &mut BTreeMap<&'static str, u64>, from: &BTreeMap<&'static str, u64>) {
    for (what, n) in from {
        *into.entry(what).or_insert(0) += n;
    }
}

impl Tally {
    /// Adds one seed's verdict.
    fn add(&mut self, verdict: Verdict, world: &WorldArgs) {
        self.judged += 1;
        match verdict {
            Verdict::Kept(report) | Verdict::Broke(report) => {
                self.merged += report.merged;
                self.ops += report.ops;
                self.events += report.events;
                add_counts(&mut self.outcomes, &report.outcomes);
                add_counts(&mut self.reasons, &report.reasons);
                add_counts(&mut self.submit_refusals, &report.submit_refusals);
                add_counts(&mut self.undos, &report.undos);
                add_counts(&mut self.waits, &report.waits);
                add_counts(&mut self.red, &report.red);
                add_counts(&mut self.corruptions, &report.corruptions);
                add_counts(&mut self.locks, &report.locks);
                add_counts(&mut self.keys, &report.keys);
                self.unreadable_open += report.unreadable_open;
                self.held_merges += report.held_merges;
                self.logged += report.logged;
                self.presences += report.presences;
                self.compacted += report.compacted;
                self.compacted_abandoned += report.compacted_abandoned;
                self.compacted_no_effect += report.compacted_no_effect;
                self.history += report.history;
                self.dependency_waits += report.dependency_waits;
                if let Some((runs, held)) = report.plugin {
                    let plugin = &mut self.plugin;
                    *plugin = (plugin.0 + 1, plugin.1 + runs, plugin.2 + held);
                }
                if let Some((early, reused)) = report.ahead {
                    let ahead = &mut self.ahead;
                    *ahead = (ahead.0 + 1, ahead.1 + early, ahead.2 + reused);
                }
                if let Some(carried) = report.lanes {
                    self.lanes = (self.lanes.0 + 1, self.lanes.1 + carried);
                }
                *self.intervals.entry(report.interval_ms / 1000).or_insert(0) += 1;
                let lease = (report.lease_ms / 1000, report.heartbeat_ms / 1000);
                *self.leases.entry(lease).or_insert(0) += 1;
                if let Some((batches, members)) = report.batch {
                    let batch = &mut self.batch;
                    *batch = (batch.0 + 1, batch.1 + batches, batch.2 + members);
                }
                if !report.violations.is_empty() {
                    let safety = report.violations.iter().any(|v| v.invariant.is_safety());
                    self.code = self.code.max(if safety { 3 } else { 4 });
                    self.failures
                        .push((report.seed, failure_json(&report, world)));
                }
            }
            Verdict::Panicked { seed, message } => {
                self.code = self.code.max(5);
                self.failures.push((
                    seed,
                    serde_json::json!({
                        "seed": seed, "class": "panic", "what": message,
                        "replay": format!("bay-sim replay --seed {seed} {}", world.flags()),
                    }),
                ));
            }
            Verdict::Diverged {
                seed,
                first,
                second,
            } => {
                self.code = self.code.max(6);
                self.failures.push((
                    seed,
                    serde_json::json!({
                        "seed": seed, "class": "determinism",
                        "what": format!("trace hashes {first:016x} and {second:016x} differ"),
                        "replay": format!("bay-sim replay --seed {seed} {}", world.flags()),
                    }),
                ));
            }
        }
    }
}

fn summarize(
    seeds: (u64, u64),
    world: &WorldArgs,
    tally: Tally,
    wall: f64,
    cpu: f64,
    json: bool,
) -> ExitCode {
    let Tally {
        outcomes,
        reasons,
        submit_refusals,
        undos,
        waits,
        red,
        corruptions,
        locks,
        keys,
        unreadable_open,
        held_merges,
        dependency_waits,
        logged,
        presences,
        compacted,
        compacted_abandoned,
        compacted_no_effect,
        history,
        plugin,
        ahead,
        lanes,
        batch,
        intervals,
        leases,
        merged,
        ops,
        events,
        mut failures,
        code,
        ..
    } = tally;
    // Seeds finish out of order on several workers; the summary names them in order.
    failures.sort_by_key(|(seed, _)| *seed);
    let failures: Vec<serde_json::Value> = failures.into_iter().map(|(_, json)| json).collect();
    let count = seeds.1 - seeds.0;
    let seeds_per_s = count as f64 / wall.max(1e-9);
    let merges_per_cpu_s = merged as f64 / cpu.max(1e-9);
    let terminal: u64 = outcomes.values().sum();
    if json {
        let doc = serde_json::json!({
            "seeds": count,
            "seed_range": [seeds.0, seeds.1],
            "violations": failures.len(),
            "merged": merged,
            "operations": ops,
            "terminal": terminal,
            "outcomes": outcomes,
            "reasons": reasons,
            "submit_refusals": submit_refusals,
            "undos": undos,
            "waits": waits,
            "held_merges": held_merges,
            "red": red,
            "hold_plugin": {"seeds": plugin.0, "runs": plugin.1, "held": plugin.2},
            "ahead": {"seeds": ahead.0, "early_runs": ahead.1, "reused": ahead.2},
            "lanes": {"seeds": lanes.0, "carried": lanes.1},
            "batch": {"seeds": batch.0, "batches": batch.1, "members": batch.2},
            "runner_interval_s": intervals,
            "runner_lease_heartbeat_s": leases
                .iter()
                .map(|((lease, heartbeat), n)| (format!("{lease}/{heartbeat}"), *n))
                .collect::<BTreeMap<_, _>>(),
            "dependency_waits": dependency_waits,
            "corruptions": corruptions,
            "locks": locks,
            "keys": keys,
            "unreadable_open": unreadable_open,
            "logged": logged,
            "presences": presences,
            "compacted": compacted,
            "compacted_abandoned": compacted_abandoned,
            "compacted_no_effect": compacted_no_effect,
            "history": history,
            "events": events,
            "seeds_per_s": round(seeds_per_s),
            "merges_per_cpu_s": round(merges_per_cpu_s),
            "cpu_s": round(cpu),
            "wall_s": round(wall),
            "failures": failures,
        });
        println!("{doc}");
    } else {
        println!(
            "bay-sim: {count} seeds ({}..{}), {}",
            seeds.0,
            seeds.1,
            world.flags()
        );
        let outcomes: Vec<String> = outcomes
            .iter()
            .map(|(state, n)| format!("{state} {n}"))
            .collect();
        println!(
            "operations: {ops} submitted, {terminal} ended: {}",
            outcomes.join(", ")
        );
        let reasons: Vec<String> = reasons
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        println!("reasons: {}", reasons.join(", "));
        let refusals: Vec<String> = submit_refusals
            .iter()
            .map(|(code, n)| format!("{code} {n}"))
            .collect();
        println!("refused at submit: {}", refusals.join(", "));
        let undos: Vec<String> = undos
            .iter()
            .map(|(what, n)| format!("{what} {n}"))
            .collect();
        println!("undos: {}", undos.join(", "));
        let waits: Vec<String> = waits
            .iter()
            .map(|(what, n)| format!("{what} {n}"))
            .collect();
        println!("merge --wait: {}", waits.join(", "));
        let red: Vec<String> = red.iter().map(|(what, n)| format!("{what} {n}")).collect();
        println!("red main: {}", red.join(", "));
        println!(
            "holds and dependencies: {held_merges} merges of fixes and undos onto a held main, \
             {dependency_waits} dependents left waiting on an open change"
        );
        let corruptions: Vec<String> = corruptions
            .iter()
            .map(|(what, n)| format!("{what} {n}"))
            .collect();
        println!(
            "corrupt records: {}; {unreadable_open} operations left open on a chain or place \
             bay cannot read",
            corruptions.join(", ")
        );
        let locks: Vec<String> = locks
            .iter()
            .map(|(what, n)| format!("{what} {n}"))
            .collect();
        println!(
            "locks: {} (each edit let through checked for a second live holder, S17)",
            locks.join(", ")
        );
        let keys: Vec<String> = keys.iter().map(|(what, n)| format!("{what} {n}")).collect();
        println!(
            "keys: {} (each merge's signature judged against the registry, S18, S19, and its \
             approvals, S20)",
            keys.join(", ")
        );
        println!("runner logs: {logged} events, each checked against its outcome (S12)");
        println!("runner presences: {presences}, each a heartbeat after the last (S14)");
        println!(
            "compaction: {compacted} ended changes moved into the index ({compacted_abandoned} \
             abandoned, {compacted_no_effect} no_effect), each kept whole (S16)"
        );
        if history > 0 {
            println!(
                "history: each seed began from {} ended changes on the remote",
                world.history
            );
        }
        println!(
            "hold plugin: set in {} seeds, asked {} times, {} answers held main",
            plugin.0, plugin.1, plugin.2
        );
        println!(
            "ahead: set in {} seeds, {} early runs on predicted bases, {} passes reused",
            ahead.0, ahead.1, ahead.2
        );
        println!(
            "footprint lanes: set in {} seeds, {} passes carried by read set",
            lanes.0, lanes.1
        );
        println!(
            "batch: set in {} seeds, {} batches merged {} changes",
            batch.0, batch.1, batch.2
        );
        let intervals: Vec<String> = intervals
            .iter()
            .map(|(s, n)| format!("{s} s in {n} seeds"))
            .collect();
        println!("runner interval: {}", intervals.join(", "));
        let leases: Vec<String> = leases
            .iter()
            .map(|((lease, heartbeat), n)| format!("{lease}/{heartbeat} s in {n} seeds"))
            .collect();
        println!("runner lease/heartbeat: {}", leases.join(", "));
        println!("violations: {}", failures.len());
        println!(
            "speed: {seeds_per_s:.0} seeds/s, {merges_per_cpu_s:.0} merges per CPU-second ({cpu:.1} s CPU, {wall:.1} s wall, {events} events)"
        );
        for failure in failures.iter().take(5) {
            println!(
                "\nFAILED seed {} ({}): {}",
                failure["seed"], failure["class"], failure["what"]
            );
            if let Some(trace) = failure["trace"].as_array() {
                for line in trace {
                    println!("  {}", line.as_str().unwrap_or_default());
                }
            }
            println!("replay: {}", failure["replay"].as_str().unwrap_or_default());
        }
    }
    ExitCode::from(code)
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn failure_json(report: &RunReport, world: &WorldArgs) -> serde_json::Value {
    let first = &report.violations[0];
    let class = if first.invariant.is_safety() {
        "correctness"
    } else {
        "liveness"
    };
    let invariants: Vec<&str> = report
        .violations
        .iter()
        .map(|v| v.invariant.code())
        .collect();
    serde_json::json!({
        "seed": report.seed,
        "class": class,
        "invariant": first.invariant.code(),
        "invariants": invariants,
        "what": format!("{} {} at {:.3}s", first.invariant.code(), first.what, first.at as f64 / 1000.0),
        "faults": report.faults,
        "runner_interval_s": report.interval_ms / 1000,
        "runner_lease_heartbeat_s": lease_heartbeat(report),
        "trace": report.trace.iter().rev().take(15).rev().collect::<Vec<_>>(),
        "replay": format!("bay-sim replay --seed {} {}", report.seed, world.flags()),
    })
}

/// A seed's runners' lease and heartbeat, as `<lease>/<heartbeat>` in seconds.
fn lease_heartbeat(report: &RunReport) -> String {
    format!("{}/{}", report.lease_ms / 1000, report.heartbeat_ms / 1000)
}

fn replay(seed: u64, world: &WorldArgs) -> ExitCode {
    let scenario = world.scenario(true);
    let verdict = judge(seed, &scenario, false);
    match verdict {
        Verdict::Kept(report) | Verdict::Broke(report) => {
            for line in &report.trace {
                println!("{line}");
            }
            println!("\nseed {seed}: faults {}", report.faults.join(", "));
            println!("runner interval: {} s", report.interval_ms / 1000);
            println!("runner lease/heartbeat: {} s", lease_heartbeat(&report));
            let outcomes: Vec<String> = report
                .outcomes
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect();
            println!(
                "operations: {} submitted; {}",
                report.ops,
                outcomes.join(", ")
            );
            if let Some(bound) = report.liveness_bound_ms {
                println!(
                    "liveness bound: {:.1}s of virtual time",
                    bound as f64 / 1000.0
                );
            }
            for violation in &report.violations {
                println!(
                    "VIOLATION {} at {:.3}s: {}",
                    violation.invariant.code(),
                    violation.at as f64 / 1000.0,
                    violation.what
                );
            }
            let code = match report.violations.first().map(|v| v.invariant) {
                None => 0,
                Some(Invariant::Liveness) => 4,
                Some(_) => 3,
            };
            ExitCode::from(code)
        }
        Verdict::Panicked { message, .. } => {
            println!("seed {seed} panicked: {message}");
            ExitCode::from(5)
        }
        Verdict::Diverged { .. } => unreachable!("replay runs a seed once"),
    }
}
