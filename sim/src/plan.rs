//! `bay-sim plan`: a capacity planner. It runs core's real runner, start and merge machines
//! in a quiet world (no faults, each change its own file, so nothing conflicts) at the arrival
//! rate, check times, failure and flake rates and runners it is given, and sets what it
//! measures beside the analytic bounds of one check slot, of the arrivals, and of the
//! throughput settings: `ahead`, `footprint_lanes` and `batch`, each simulated when set and a
//! what-if bound when not.
//!
//! Changes spread over `areas` source folders at random. With one area, main's policy has
//! one required check; with more, one `footprint = true` check per area, reading only that
//! folder, so each change still needs one run, a batch one for each area its members touch,
//! and `footprint_lanes` has disjoint entries to check beside the head.
//!
//! Time is the world's virtual time: a simulated day takes well under a second. One seed
//! fixes every draw, so the same settings and seeds print the same numbers.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use bay_core::id::{ChangeId, OpId};
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::start::{Start, StartInput, StartTarget};
use bay_core::machine::{Action, ActionId, Completion, Event, Machine};
use bay_core::result::{Decision, OpState};
use bay_core::time::Timestamp;

use crate::bench::{failing_exit, passing_exit};
use crate::git_model::{GitModel, View};
use crate::rng::Rng;

const MAIN: &str = "main";
/// The world's clocks all read this at its start.
const T0: u64 = 1_800_000_000_000;
const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;
/// Merges in the first hour are not counted: the queue fills up then.
pub const WARMUP_MS: u64 = HOUR;
/// How long an agent takes to repair a change whose check failed.
const REPAIR_MS: u64 = 2 * MINUTE;
/// How often an agent looks at its operation (it also hears at once when a runner ends it).
const POLL_MS: u64 = 5 * MINUTE;

/// How long a check run takes, in minutes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Fixed(f64),
    /// Uniform between the two.
    Uniform(f64, f64),
    /// Exponential with this mean.
    Exp(f64),
}

impl Dist {
    /// `10` (fixed), `5..15` (uniform) or `exp:10` (exponential, mean 10).
    pub fn parse(text: &str) -> Result<Dist, String> {
        let number = |s: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("{s:?} is not a positive number of minutes"))
        };
        if let Some(mean) = text.strip_prefix("exp:") {
            return Ok(Dist::Exp(number(mean)?));
        }
        if let Some((a, b)) = text.split_once("..") {
            let (a, b) = (number(a)?, number(b)?);
            if b < a {
                return Err(format!("the range {text} is empty"));
            }
            return Ok(Dist::Uniform(a, b));
        }
        Ok(Dist::Fixed(number(text)?))
    }

    pub fn mean(&self) -> f64 {
        match *self {
            Dist::Fixed(m) | Dist::Exp(m) => m,
            Dist::Uniform(a, b) => (a + b) / 2.0,
        }
    }

    /// The same shape, every time multiplied by `k`.
    pub fn scaled(&self, k: f64) -> Dist {
        match *self {
            Dist::Fixed(m) => Dist::Fixed(m * k),
            Dist::Uniform(a, b) => Dist::Uniform(a * k, b * k),
            Dist::Exp(m) => Dist::Exp(m * k),
        }
    }

    /// The longest a run may take, for the check's `timeout_s`.
    fn ceiling(&self) -> f64 {
        match *self {
            Dist::Fixed(m) => m,
            Dist::Uniform(_, b) => b,
            Dist::Exp(m) => 40.0 * m,
        }
    }

    /// One run's duration, in milliseconds.
    fn sample(&self, rng: &mut Rng) -> u64 {
        let minutes = match *self {
            Dist::Fixed(m) => m,
            Dist::Uniform(a, b) => a + (b - a) * unit(rng),
            Dist::Exp(m) => (-m * (1.0 - unit(rng)).ln()).min(self.ceiling()),
        };
        ((minutes * MINUTE as f64) as u64).max(1)
    }

    pub fn name(&self) -> String {
        match *self {
            Dist::Fixed(m) => minutes(m),
            Dist::Uniform(a, b) => format!("{}..{}", minutes(a), minutes(b)),
            Dist::Exp(m) => format!("exp:{}", minutes(m)),
        }
    }
}

/// Minutes as a person writes them: at most two decimals, none that are zero (`9.6`, not
/// `9.600000000000001`, which is what `12 x 0.8` is in floating point).
fn minutes(m: f64) -> String {
    let text = format!("{m:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A number in [0, 1).
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn chance(rng: &mut Rng, p: f64) -> bool {
    p > 0.0 && unit(rng) < p
}

/// What the planner is asked about.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Agents, each working one change at a time.
    pub agents: usize,
    /// New changes an hour, arriving at random (a Poisson stream), taken up by free agents.
    pub arrivals_per_hour: f64,
    /// Minutes one check run takes.
    pub check: Dist,
    /// The share of changes whose first version is broken: their check fails until the agent
    /// repairs them.
    pub failure_rate: f64,
    /// The share of check runs that fail on a good change.
    pub flake_rate: f64,
    pub runners: usize,
    /// The check's `retry_on_failure` (with `allow_flaky`): runs again at once after a failure.
    pub retries: u32,
    /// Hours counted, after the first hour.
    pub hours: f64,
    /// The runners' `[runner] ahead`, simulated: with it, runners that do not hold the head
    /// check the entries behind it early. 0 leaves it off, and the speculation row then shows
    /// the bound of `ahead = 2` as a what-if.
    pub ahead: u32,
    /// The runners' `[runner] batch` `max`, simulated: the head's runner checks the head and up
    /// to `batch - 1` entries behind it as one tree. 0 leaves it off, and the batching row then
    /// shows the bound of `batch = 4` as a what-if.
    pub batch: u32,
    /// Source folders the changes spread over, each equally likely; one check per folder when
    /// there are two or more.
    pub areas: u32,
    /// The runners' `[runner] footprint_lanes`, simulated.
    pub lanes: bool,
}

impl Default for Plan {
    fn default() -> Plan {
        Plan {
            agents: 8,
            arrivals_per_hour: 12.0,
            check: Dist::Fixed(10.0),
            failure_rate: 0.1,
            flake_rate: 0.05,
            runners: 2,
            retries: 0,
            hours: 24.0,
            ahead: 0,
            batch: 0,
            areas: 4,
            lanes: false,
        }
    }
}

impl Plan {
    /// Whether runners reuse evidence: early runs, carried passes and batches need it.
    fn reuses(&self) -> bool {
        self.ahead > 0 || self.lanes || self.batching()
    }

    /// Whether runners batch: a batch has two members or more.
    fn batching(&self) -> bool {
        self.batch >= 2
    }

    /// The folder task `n`'s file goes in, `area` drawn for it.
    fn file(&self, n: u64, area: u32) -> String {
        match self.areas {
            0 | 1 => format!("src/task-{n}.txt"),
            _ => format!("src/area-{area}/task-{n}.txt"),
        }
    }

    /// The policy on main: one required check, or one `footprint = true` check per area;
    /// with `ahead` or lanes, unsigned evidence reusable, as early runs and carries need.
    fn policy(&self) -> String {
        let timeout = (self.check.ceiling() * 60.0).ceil() as u64 + 60;
        let retry = match self.retries {
            0 => String::new(),
            n => format!("retry_on_failure = {n}\nallow_flaky = true\n"),
        };
        let check = |id: &str, narrow: &str| {
            format!(
                "\n[[check]]\nid = \"{id}\"\nenvironment = \"sim\"\n\
                 command = \"checks/run {id}\"\nadapter = [\"checks/\"]\nexpected_minimum = 3\n\
                 timeout_s = {timeout}\nmaterialize_timeout_s = 30\n{retry}{narrow}"
            )
        };
        let checks: String = match self.areas {
            0 | 1 => check("unit", ""),
            n => (0..n)
                .map(|k| {
                    let narrow = format!("when_paths = [\"src/area-{k}/\"]\nfootprint = true\n");
                    check(&format!("area-{k}"), &narrow)
                })
                .collect(),
        };
        let reuse = match self.reuses() {
            false => "",
            true => "\n[policy]\nreuse_unsigned = true\n",
        };
        format!("revision = 1\n{checks}{reuse}")
    }

    /// Check runs a change needs on average to merge: a broken change fails every run of its
    /// first attempt (`1 + retries` runs), then each attempt reruns flakes until a pass or
    /// the retries run out, and a flaked attempt goes back to its agent: 1/(1-flake) runs.
    pub fn runs_per_merge(&self) -> f64 {
        let f = self.flake_rate.clamp(0.0, 0.999);
        self.failure_rate * f64::from(self.retries + 1) + 1.0 / (1.0 - f)
    }

    /// The most check runs, one after another, that the head's runner may spend before the
    /// head's progress deadline, which the planner sets to fit them (`execution_budget_s`, as
    /// a user sizes it for such a queue): three for a change alone; for a batch, its run, a
    /// bisection's runs, each a check for every area the members touch, and the culprit's own.
    fn head_runs(&self) -> u64 {
        match self.batching() {
            false => 3,
            true => {
                let checks = u64::from(self.areas.clamp(1, self.batch));
                (1 + u64::from(self.batch.next_power_of_two().trailing_zeros())) * checks + 1
            }
        }
    }

    /// T: check minutes the one slot spends per merged change.
    pub fn slot_minutes(&self) -> f64 {
        self.check.mean() * self.runs_per_merge()
    }

    /// The share of check runs that fail.
    fn run_failure(&self) -> f64 {
        1.0 - 1.0 / self.runs_per_merge()
    }
}

/// One row of bounds: its name, merges a day at most, and whether the simulator runs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub name: String,
    pub per_day: f64,
    pub simulated: bool,
    pub how: String,
}

/// The analytic bounds, from `plan` alone.
pub fn bounds(plan: &Plan) -> Vec<Bound> {
    let m = plan.check.mean();
    let t = plan.slot_minutes();
    let p = plan.run_failure();
    let mut rows = vec![
        Bound {
            name: "arrivals".into(),
            per_day: plan.arrivals_per_hour * 24.0,
            simulated: true,
            how: format!("{} changes an hour x 24", plan.arrivals_per_hour),
        },
        Bound {
            name: "one slot".into(),
            per_day: 1440.0 / t,
            simulated: !plan.reuses(),
            how: format!(
                "1440/T, T = {m:.2} min x {:.3} runs per merge = {t:.2} min",
                plan.runs_per_merge()
            ),
        },
    ];
    // Speculation: the head and the candidates behind it that idle runners check at once, each
    // on the assumption that all before it pass (one runner a run: `ahead` entries, at most
    // one fewer than the runners); a round of one run's length merges the passes up to the
    // first failure.
    let a = if plan.ahead > 0 { plan.ahead } else { 2 };
    let at_once = a.min(plan.runners.saturating_sub(1) as u32) + 1;
    let round: f64 = (1..=at_once).map(|i| (1.0 - p).powi(i as i32)).sum();
    rows.push(Bound {
        name: format!("speculation, ahead = {a}"),
        per_day: 1440.0 / m * round,
        simulated: plan.ahead > 0 && !plan.lanes,
        how: format!(
            "1440/m x sum (1-p)^i, i = 1..{at_once} (ahead and runners - 1, the lesser, + 1), \
             p = {p:.3}"
        ),
    });
    // Lanes: the head's owner runs the head; each other runner checks an entry behind it
    // whose area no entry ahead touches, and its pass carries. When the head merges, each
    // entry right behind it that such a run answered merges at once: the i-th one only when
    // its area differs from the i entries ahead (all different already), 1 - i/D, and while
    // runners are left to have checked it.
    let d = f64::from(plan.areas.max(1));
    let carried: f64 = (1..plan.runners)
        .scan(1.0, |p, i| {
            *p *= (1.0 - i as f64 / d).max(0.0);
            Some(*p)
        })
        .sum();
    rows.push(Bound {
        name: "footprint lanes".into(),
        per_day: 1440.0 / t * (1.0 + carried),
        simulated: plan.lanes && plan.ahead == 0,
        how: format!(
            "1440/T x (1 + sum over i < runners of prod (1 - j/D), j = 1..i), D = {} areas: \
             {:.2} merges a run",
            plan.areas.max(1),
            1.0 + carried
        ),
    });
    // Batching: one run checks `batch` changes together; a failing batch is bisected, about
    // log2(batch) more runs for its one culprit, which then runs alone at its turn and goes
    // back. With one check per area the batch's run costs a check for each area its members
    // touch, E(k) = D(1 - (1 - 1/D)^k) of them for k members; a bisection's run costs at least
    // the failing area's check (the others' passes carry by footprint where their areas'
    // files are the same), so a run each is the bound.
    let batch = if plan.batching() { plan.batch } else { 4 };
    let b = f64::from(batch);
    let failing = 1.0 - (1.0 - p).powf(b);
    let touched = match plan.areas {
        0 | 1 => 1.0,
        _ => d * (1.0 - (1.0 - 1.0 / d).powf(b)),
    };
    let runs = touched + failing * (b.log2().ceil() + 1.0);
    rows.push(Bound {
        name: format!("batching, batch = {batch}"),
        per_day: 1440.0 / m * b * (1.0 - p) / runs,
        simulated: plan.batching() && plan.ahead == 0 && !plan.lanes,
        how: format!(
            "1440/m x b(1-p) / (E(b) + P(fail) x (ceil(log2 b) + 1)), E(b) = {touched:.2} \
             areas of {} touched: {runs:.2} check runs a batch",
            plan.areas.max(1)
        ),
    });
    rows
}

/// What one seed measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Merges counted (after the warm-up) and the hours they were counted over.
    pub merges: u64,
    pub hours: f64,
    /// From each counted operation's request to a runner taking it up, in ms.
    pub queue_waits: Vec<u64>,
    /// From each counted merge's first request to its merge, in ms.
    pub to_merge: Vec<u64>,
    /// Check-run milliseconds started in the counted window, and how many runs.
    pub check_ms: u64,
    pub check_runs: u64,
    /// Changes still waiting for an agent at the end.
    pub backlog: u64,
    /// Operations ended other than merged or refused by their check (should stay 0).
    pub other_ends: u64,
}

/// What a setting gave over all its seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub merges_per_day: f64,
    pub wait_p50_min: f64,
    pub wait_p95_min: f64,
    pub to_merge_p50_min: f64,
    pub to_merge_p95_min: f64,
    pub check_minutes_per_merge: f64,
    pub backlog: f64,
    pub other_ends: u64,
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[index] as f64 / MINUTE as f64
}

/// Runs `plan` on every seed of `seeds` and pools what they measured.
pub fn measure(plan: &Plan, seeds: (u64, u64)) -> Measured {
    let samples: Vec<Sample> = (seeds.0..seeds.1).map(|s| simulate(plan, s)).collect();
    let hours: f64 = samples.iter().map(|s| s.hours).sum();
    let merges: u64 = samples.iter().map(|s| s.merges).sum();
    let mut waits: Vec<u64> = samples.iter().flat_map(|s| s.queue_waits.clone()).collect();
    let mut to_merge: Vec<u64> = samples.iter().flat_map(|s| s.to_merge.clone()).collect();
    waits.sort_unstable();
    to_merge.sort_unstable();
    let check_ms: u64 = samples.iter().map(|s| s.check_ms).sum();
    Measured {
        merges_per_day: merges as f64 * 24.0 / hours.max(1e-9),
        wait_p50_min: percentile(&waits, 0.5),
        wait_p95_min: percentile(&waits, 0.95),
        to_merge_p50_min: percentile(&to_merge, 0.5),
        to_merge_p95_min: percentile(&to_merge, 0.95),
        check_minutes_per_merge: check_ms as f64 / MINUTE as f64 / merges.max(1) as f64,
        backlog: samples.iter().map(|s| s.backlog as f64).sum::<f64>() / samples.len() as f64,
        other_ends: samples.iter().map(|s| s.other_ends).sum(),
    }
}

#[derive(Debug)]
enum Ev {
    Deliver {
        runner: usize,
        id: ActionId,
        completion: Box<Completion>,
    },
    Wake {
        runner: usize,
        token: u64,
    },
    Arrival,
    AgentStep {
        agent: usize,
    },
}

#[derive(Debug)]
struct Queued {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Queued {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Queued {}
impl PartialOrd for Queued {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Queued {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

#[derive(Debug)]
struct Task {
    n: u64,
    change: Option<ChangeId>,
    op: Option<OpId>,
    broken: bool,
    /// The folder its file is in.
    area: u32,
    first_request: Option<u64>,
}

#[derive(Debug)]
struct Host {
    runner: Runner,
    wake: Option<(u64, u64)>,
    working: Option<OpId>,
}

/// The planner's world: a remote, runners, agents, a backlog, and a clock.
struct World<'a> {
    plan: &'a Plan,
    t: u64,
    end: u64,
    seq: u64,
    tokens: u64,
    queue: BinaryHeap<Reverse<Queued>>,
    git: GitModel,
    views: BTreeMap<ChangeId, View>,
    runners: Vec<Host>,
    agents: Vec<Option<Task>>,
    backlog: VecDeque<u64>,
    next_task: u64,
    rng: Rng,
    check_rng: Rng,
    arrival_rng: Rng,
    /// Draws each task's area: a stream of its own, so one area draws as before areas were.
    area_rng: Rng,
    /// Each live operation's agent and request time.
    ops: BTreeMap<OpId, (usize, u64)>,
    sample: Sample,
}

/// Runs one seed of `plan` and returns what it measured.
pub fn simulate(plan: &Plan, seed: u64) -> Sample {
    let mut rng = Rng::new(seed);
    let mut git = GitModel::default();
    let policy = plan.policy();
    git.init_main(
        MAIN,
        &[
            ("src/a.txt", "a\n"),
            (bay_core::check::plan::POLICY_PATH, policy.as_str()),
        ],
    );
    let end = WARMUP_MS + (plan.hours * HOUR as f64) as u64;
    let mut world = World {
        plan,
        t: 0,
        end,
        seq: 0,
        tokens: 0,
        queue: BinaryHeap::new(),
        git,
        views: BTreeMap::new(),
        runners: Vec::new(),
        agents: (0..plan.agents.max(1)).map(|_| None).collect(),
        backlog: VecDeque::new(),
        next_task: 0,
        check_rng: rng.split(1),
        arrival_rng: rng.split(2),
        area_rng: Rng::new(seed ^ 0x_a2ea),
        rng,
        ops: BTreeMap::new(),
        sample: Sample {
            hours: plan.hours,
            ..Sample::default()
        },
    };
    world.run();
    world.sample
}

impl World<'_> {
    fn at(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse(Queued {
            at: at.max(self.t),
            seq: self.seq,
            ev,
        }));
    }

    fn now(&self) -> Timestamp {
        Timestamp(T0 + self.t)
    }

    fn run(&mut self) {
        let lease_ms = 60_000;
        let progress_ms = (self.plan.check.ceiling() * MINUTE as f64) as u64
            * self.plan.head_runs()
            + 10 * MINUTE;
        for n in 0..self.plan.runners.max(1) {
            let mut cfg = RunnerConfig::new(format!("runner-{n}"), MAIN, self.rng.next_u64());
            cfg.lease_ms = lease_ms;
            cfg.ahead = self.plan.ahead;
            cfg.footprint_lanes = self.plan.lanes;
            cfg.batch = self
                .plan
                .batching()
                .then_some(bay_core::config::BatchSettings {
                    min: 2,
                    max: self.plan.batch.min(bay_core::batch::MAX_MEMBERS),
                    max_failure_ppm: 300_000,
                });
            cfg.evidence_reuse = self.plan.reuses();
            cfg.progress_ms = progress_ms.max(cfg.progress_ms);
            let runner = Runner::new(cfg, self.now());
            self.runners.push(Host {
                runner,
                wake: None,
                working: None,
            });
            self.settle(n);
        }
        self.arrive_next();
        while let Some(Reverse(next)) = self.queue.pop() {
            if next.at >= self.end {
                break;
            }
            self.t = next.at;
            self.git.clock = self.now();
            match next.ev {
                Ev::Deliver {
                    runner,
                    id,
                    completion,
                } => self.feed(runner, Event::Done(id, *completion)),
                Ev::Wake { runner, token } => {
                    if self.runners[runner].wake.map(|(_, t)| t) == Some(token) {
                        self.runners[runner].wake = None;
                        self.feed(runner, Event::Tick);
                    }
                }
                Ev::Arrival => {
                    self.next_task += 1;
                    self.backlog.push_back(self.next_task);
                    if let Some(free) = self.agents.iter().position(Option::is_none) {
                        self.at(self.t, Ev::AgentStep { agent: free });
                    }
                    self.arrive_next();
                }
                Ev::AgentStep { agent } => self.agent_step(agent),
            }
        }
        self.sample.backlog = self.backlog.len() as u64;
    }

    fn arrive_next(&mut self) {
        let rate = self.plan.arrivals_per_hour;
        if rate <= 0.0 {
            return;
        }
        let gap = -(1.0 - unit(&mut self.arrival_rng)).ln() / rate * HOUR as f64;
        self.at(self.t + gap as u64, Ev::Arrival);
    }

    fn counted(&self) -> bool {
        self.t >= WARMUP_MS
    }

    // ---- runners ---------------------------------------------------------------------------

    fn feed(&mut self, r: usize, event: Event) {
        let now = self.now();
        self.runners[r]
            .runner
            .handle(now, event)
            .expect("the planner answers each action once, in kind");
        self.settle(r);
    }

    /// Executes the runner's actions and schedules its next wake-up; notes when it takes up an
    /// operation and when it lets one go.
    fn settle(&mut self, r: usize) {
        let mut actions = Vec::new();
        while let Some(action) = self.runners[r].runner.poll_action() {
            actions.push(action);
        }
        for (id, action) in actions {
            self.execute(r, id, action);
        }
        if let Some(deadline) = self.runners[r].runner.poll_timeout() {
            let at = deadline.at.millis().saturating_sub(T0).max(self.t);
            if self.runners[r].wake.is_none_or(|(pending, _)| pending > at) {
                self.tokens += 1;
                self.runners[r].wake = Some((at, self.tokens));
                self.at(
                    at,
                    Ev::Wake {
                        runner: r,
                        token: self.tokens,
                    },
                );
            }
        }
        let working = self.runners[r].runner.working_on().cloned();
        if working != self.runners[r].working {
            if let Some(op) = &working
                && let Some((_, asked)) = self.ops.get(op)
                && self.counted()
                && *asked >= WARMUP_MS
            {
                self.sample.queue_waits.push(self.t - asked);
            }
            if let Some(done) = self.runners[r].working.take() {
                self.op_may_have_ended(&done);
            }
            self.runners[r].working = working;
        }
    }

    /// A runner let `op` go: if it ended, its agent hears at once.
    fn op_may_have_ended(&mut self, op: &OpId) {
        let Some(&(agent, _)) = self.ops.get(op) else {
            return;
        };
        let ended = self
            .git
            .record(&op.change)
            .and_then(|record| record.op(op).map(|o| o.state.is_terminal()))
            .unwrap_or(false);
        if ended {
            self.at(self.t, Ev::AgentStep { agent });
        }
    }

    fn execute(&mut self, r: usize, id: ActionId, action: Action) {
        if let Action::RunCheck(run) = &action {
            let millis = self.plan.check.sample(&mut self.check_rng);
            let broken = self
                .git
                .store
                .tree_of(&run.request.candidate.tree)
                .is_some_and(|files| {
                    files.values().any(|blob| {
                        self.git
                            .store
                            .blob_text(blob)
                            .is_some_and(|t| t.contains("BUG"))
                    })
                });
            let flaked = chance(&mut self.check_rng, self.plan.flake_rate);
            let mut exit = match broken || flaked {
                true => failing_exit(&action),
                false => passing_exit(&action),
            };
            exit.millis = millis;
            if self.counted() {
                self.sample.check_ms += millis;
                self.sample.check_runs += 1;
            }
            return self.reply(r, id, millis, Completion::CheckExited(exit));
        }
        let delay = match &action {
            Action::Fetch(_) | Action::Push(_) => 40,
            Action::BuildCandidate(_) => 5,
            _ => 2,
        };
        let mut no_views = BTreeMap::new();
        let completion = self
            .git
            .answer(&action, &mut no_views)
            .expect("the model answers all but checks and plugins, and no plugin is set");
        self.reply(r, id, delay, completion);
    }

    fn reply(&mut self, runner: usize, id: ActionId, delay: u64, completion: Completion) {
        self.at(
            self.t + delay,
            Ev::Deliver {
                runner,
                id,
                completion: Box::new(completion),
            },
        );
    }

    // ---- agents ----------------------------------------------------------------------------

    fn agent_step(&mut self, a: usize) {
        if self.agents[a].is_none() {
            let Some(n) = self.backlog.pop_front() else {
                return;
            };
            let broken = chance(&mut self.rng, self.plan.failure_rate);
            let area = match self.plan.areas {
                0 | 1 => 0,
                d => self.area_rng.range(0, u64::from(d - 1)) as u32,
            };
            self.agents[a] = Some(Task {
                n,
                change: None,
                op: None,
                broken,
                area,
                first_request: None,
            });
        }
        let task = self.agents[a].as_ref().expect("a task in hand");
        let Some(op) = task.op.clone() else {
            // A new change: start it, write it, ask to merge.
            let target = StartTarget::Intent {
                intent: format!("task {}", task.n),
                paths: vec![self.plan.file(task.n, task.area)],
            };
            return self.submit(a, target);
        };
        let state = self
            .git
            .record(&op.change)
            .and_then(|record| record.op(&op).map(|o| o.state));
        match state {
            Some(OpState::Merged) => {
                let task = self.agents[a].take().expect("a task in hand");
                self.ops.remove(&op);
                if self.counted() {
                    self.sample.merges += 1;
                    let first = task.first_request.unwrap_or(self.t);
                    self.sample.to_merge.push(self.t - first);
                }
                self.at(self.t, Ev::AgentStep { agent: a });
            }
            Some(OpState::Blocked) => {
                // The check failed: repair the change (it is no longer broken) and ask again.
                self.ops.remove(&op);
                let task = self.agents[a].as_mut().expect("a task in hand");
                task.op = None;
                task.broken = false;
                self.at(self.t + REPAIR_MS, Ev::AgentStep { agent: a });
            }
            Some(state) if state.is_terminal() => {
                self.ops.remove(&op);
                self.sample.other_ends += 1;
                self.agents[a] = None;
                self.at(self.t, Ev::AgentStep { agent: a });
            }
            _ => self.at(self.t + POLL_MS, Ev::AgentStep { agent: a }),
        }
    }

    /// Starts (or picks up again) the agent's change, writes its file, and asks to merge it.
    fn submit(&mut self, a: usize, target: StartTarget) {
        let task = self.agents[a].as_ref().expect("a task in hand");
        let (n, broken, file) = (task.n, task.broken, self.plan.file(task.n, task.area));
        let target = match &task.change {
            Some(change) => StartTarget::Change(change.clone()),
            None => target,
        };
        let now = self.now();
        let mut start = Start::new(
            StartInput {
                target,
                actor: format!("agent-{a}"),
                main: MAIN.into(),
                new: false,
                fixes: None,
                after: Vec::new(),
                entropy: self.rng.next_u64(),
                disk: None,
                import: None,
            },
            now,
        );
        self.git.run_command(&mut start, &mut self.views, now);
        let Some(change) = start.outcome().and_then(|r| r.change.clone()) else {
            self.sample.other_ends += 1;
            self.agents[a] = None;
            return self.at(self.t, Ev::AgentStep { agent: a });
        };
        let text = format!("task {n}{}\n", if broken { " BUG" } else { "" });
        let blob = self.git.store.blob(&text);
        self.views
            .entry(change.clone())
            .or_default()
            .files
            .insert(file, blob);
        let mut merge = Merge::new(
            MergeInput {
                change: change.clone(),
                actor: format!("agent-{a}"),
                main: MAIN.into(),
                entropy: self.rng.next_u64(),
            },
            now,
        );
        self.git.run_command(&mut merge, &mut self.views, now);
        let queued = merge
            .outcome()
            .filter(|r| r.decision == Decision::Queued)
            .and_then(|r| r.op_id.clone());
        let task = self.agents[a].as_mut().expect("a task in hand");
        task.change = Some(change);
        match queued {
            Some(op) => {
                task.first_request.get_or_insert(self.t);
                task.op = Some(op.clone());
                self.ops.insert(op, (a, self.t));
                self.at(self.t + POLL_MS, Ev::AgentStep { agent: a });
            }
            None => {
                self.sample.other_ends += 1;
                self.agents[a] = None;
                self.at(self.t, Ev::AgentStep { agent: a });
            }
        }
    }
}

/// One change of setting the planner tries, and what it gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub change: String,
    pub merges_per_day: f64,
    pub gain: f64,
}

/// The planner's whole answer: the settings, what the simulator measured, the bounds, and
/// the setting changes it tried.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub plan: Plan,
    pub seeds: (u64, u64),
    pub measured: Measured,
    pub bounds: Vec<Bound>,
    pub variants: Vec<Variant>,
}

/// The setting changes worth a try from `plan`: each one step of one setting.
pub fn variants(plan: &Plan) -> Vec<(String, Plan)> {
    let mut out = Vec::new();
    let mut add = |name: String, change: &dyn Fn(&mut Plan)| {
        let mut p = plan.clone();
        change(&mut p);
        out.push((name, p));
    };
    add(
        format!("runners {} -> {}", plan.runners, plan.runners + 1),
        &|p| p.runners += 1,
    );
    let ahead = if plan.ahead > 0 { plan.ahead + 1 } else { 2 };
    add(format!("ahead {} -> {ahead}", plan.ahead), &|p| {
        p.ahead = ahead;
    });
    if !plan.lanes && plan.areas > 1 {
        add("footprint lanes off -> on".into(), &|p| p.lanes = true);
    }
    let batch = if plan.batching() { plan.batch * 2 } else { 4 };
    add(format!("batch {} -> {batch}", plan.batch), &|p| {
        p.batch = batch.min(bay_core::batch::MAX_MEMBERS);
    });
    add(
        format!("agents {} -> {}", plan.agents, plan.agents * 2),
        &|p| p.agents *= 2,
    );
    add(
        format!(
            "check minutes {} -> {}",
            plan.check.name(),
            plan.check.scaled(0.8).name()
        ),
        &|p| p.check = p.check.scaled(0.8),
    );
    if plan.flake_rate > 0.0 {
        add(
            format!(
                "flake rate {} -> {}",
                plan.flake_rate,
                plan.flake_rate / 2.0
            ),
            &|p| p.flake_rate /= 2.0,
        );
        add(
            format!("retries {} -> {}", plan.retries, plan.retries + 1),
            &|p| p.retries += 1,
        );
    }
    if plan.failure_rate > 0.0 {
        add(
            format!(
                "failure rate {} -> {}",
                plan.failure_rate,
                plan.failure_rate / 2.0
            ),
            &|p| p.failure_rate /= 2.0,
        );
    }
    add(
        format!(
            "arrivals {}/h -> {}/h",
            plan.arrivals_per_hour,
            plan.arrivals_per_hour * 2.0
        ),
        &|p| p.arrivals_per_hour *= 2.0,
    );
    out
}

/// Runs the plan and, when `advise`, each variant, over `seeds`.
pub fn report(plan: &Plan, seeds: (u64, u64), advise: bool) -> Report {
    let measured = measure(plan, seeds);
    let variants = match advise {
        false => Vec::new(),
        true => variants(plan)
            .into_iter()
            .map(|(change, p)| {
                let m = measure(&p, seeds).merges_per_day;
                Variant {
                    change,
                    merges_per_day: m,
                    gain: m - measured.merges_per_day,
                }
            })
            .collect(),
    };
    Report {
        plan: plan.clone(),
        seeds,
        measured,
        bounds: bounds(plan),
        variants,
    }
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl Report {
    /// The variant that gains the most merges a day, if any gains at all.
    pub fn best(&self) -> Option<&Variant> {
        self.variants
            .iter()
            .filter(|v| v.gain > 0.5)
            .max_by(|a, b| a.gain.total_cmp(&b.gain))
    }

    /// The tightest bound the simulator runs: what its merges a day should approach.
    pub fn binding(&self) -> &Bound {
        self.bounds
            .iter()
            .filter(|b| b.simulated)
            .min_by(|a, b| a.per_day.total_cmp(&b.per_day))
            .expect("the arrivals row is always simulated")
    }

    /// The simulator's merges a day over the binding bound, minus one.
    pub fn deviation(&self) -> f64 {
        self.measured.merges_per_day / self.binding().per_day - 1.0
    }

    /// Why the simulator and its binding bound agree, or where and why they differ.
    pub fn explain(&self) -> String {
        let binding = self.binding();
        let dev = self.deviation();
        let settings = [self.plan.ahead > 0, self.plan.lanes, self.plan.batching()];
        if settings.iter().filter(|on| **on).count() > 1 {
            return "with more than one of ahead, footprint lanes and batch, no one row bounds \
                    the simulator alone: compare each alone"
                .into();
        }
        if dev.abs() <= 0.1 {
            return format!(
                "the simulator and the {} bound agree within 10%: that bound holds here",
                binding.name
            );
        }
        if dev > 0.0 {
            return "the simulator is above its bound: check times vary and few merges were \
                    counted; run more seeds or hours"
                .into();
        }
        if binding.name.starts_with("batching") {
            return "the simulator is below its bound: a failing batch merges only the prefix \
                    ahead of its culprit while the members behind it wait for the next batch, \
                    and while more than max_failure_rate (0.3) of the last 20 outcomes failed \
                    no batch forms"
                .into();
        }
        if (binding.name.starts_with("speculation") || binding.name == "footprint lanes")
            && self.plan.runners > 2
        {
            return "the simulator is below its bound: runners checking ahead or beside the head \
                    split the entries by whose evidence notes moved lately, as nothing tells one \
                    what another has started; a runner whose guess is off runs an entry twice or \
                    leaves one to its owner, more often the more runners there are"
                .into();
        }
        let slot = self.bounds[1].per_day;
        let arrivals = self.bounds[0].per_day;
        if (0.7..1.4).contains(&(arrivals / slot)) {
            "the simulator is below both bounds: arrivals and the slot are close, so random \
             arrivals leave the slot idle at times while at others a queue builds (a queue near \
             saturation never reaches either bound)"
                .into()
        } else if self.measured.wait_p50_min < self.plan.check.mean() {
            "the simulator is below its bound: too few agents keep the queue full (each works \
             one change at a time and takes two minutes to repair one), so the slot idles"
                .into()
        } else {
            format!(
                "the simulator is below its bound though the queue is full (half the entries \
                 wait {:.0} min or more): the row counts failures more kindly than the runners \
                 meet them; with --failure-rate 0 --flake-rate 0 it holds",
                self.measured.wait_p50_min
            )
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let p = &self.plan;
        let m = &self.measured;
        serde_json::json!({
            "settings": {
                "agents": p.agents,
                "arrivals_per_hour": p.arrivals_per_hour,
                "check_minutes": p.check.name(),
                "check_minutes_mean": p.check.mean(),
                "failure_rate": p.failure_rate,
                "flake_rate": p.flake_rate,
                "runners": p.runners,
                "ahead": p.ahead,
                "areas": p.areas,
                "footprint_lanes": p.lanes,
                "batch": p.batch,
                "retries": p.retries,
                "hours": p.hours,
                "seed_range": [self.seeds.0, self.seeds.1],
            },
            "simulated": {
                "merges_per_day": r1(m.merges_per_day),
                "queue_wait_p50_min": r1(m.wait_p50_min),
                "queue_wait_p95_min": r1(m.wait_p95_min),
                "time_to_merge_p50_min": r1(m.to_merge_p50_min),
                "time_to_merge_p95_min": r1(m.to_merge_p95_min),
                "check_minutes_per_merge": r1(m.check_minutes_per_merge),
                "backlog_at_end": r1(m.backlog),
                "other_ends": m.other_ends,
            },
            "slot_minutes": r1(p.slot_minutes() * 10.0) / 10.0,
            "bounds": self.bounds.iter().map(|b| serde_json::json!({
                "bound": b.name,
                "merges_per_day": r1(b.per_day),
                "simulated": b.simulated,
                "how": b.how,
            })).collect::<Vec<_>>(),
            "binding": self.binding().name,
            "deviation": r1(self.deviation() * 1000.0) / 1000.0,
            "explanation": self.explain(),
            "variants": self.variants.iter().map(|v| serde_json::json!({
                "change": v.change,
                "merges_per_day": r1(v.merges_per_day),
                "gain": r1(v.gain),
            })).collect::<Vec<_>>(),
            "advice": self.advice(),
        })
    }

    /// Which setting to change, in a sentence.
    pub fn advice(&self) -> String {
        match (self.variants.is_empty(), self.best()) {
            (true, _) => "no setting was tried: run without --no-advice".to_string(),
            (false, Some(best)) => format!(
                "{} gains the most: {:+.1} merges a day",
                best.change, best.gain
            ),
            (false, None) => "no one-step change gains a merge a day".to_string(),
        }
    }

    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let p = &self.plan;
        let m = &self.measured;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "bay-sim plan: {} agents, {} changes/h, check {} min (mean {:.2}), failure rate {}, \
             flake rate {}, {} runners (ahead {}, footprint lanes {}, batch {}), retries {}, \
             {} areas; \
             {} h counted x seeds {}..{}",
            p.agents,
            p.arrivals_per_hour,
            p.check.name(),
            p.check.mean(),
            p.failure_rate,
            p.flake_rate,
            p.runners,
            p.ahead,
            if p.lanes { "on" } else { "off" },
            p.batch,
            p.retries,
            p.areas.max(1),
            p.hours,
            self.seeds.0,
            self.seeds.1
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "simulated (real core): {:.1} merges/day; queue wait p50 {:.1} min, p95 {:.1} min; \
             time to merge p50 {:.1} min, p95 {:.1} min; {:.2} check-minutes per merged change",
            m.merges_per_day,
            m.wait_p50_min,
            m.wait_p95_min,
            m.to_merge_p50_min,
            m.to_merge_p95_min,
            m.check_minutes_per_merge
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<26} {:>10} {:>10} {:>8}  how",
            "bound", "bound/day", "sim/day", "sim/bnd"
        );
        for b in &self.bounds {
            let (sim, ratio) = match b.simulated {
                true => (
                    format!("{:.1}", m.merges_per_day),
                    format!("{:.2}", m.merges_per_day / b.per_day),
                ),
                false => ("-".to_string(), "-".to_string()),
            };
            let _ = writeln!(
                out,
                "{:<26} {:>10.1} {:>10} {:>8}  {}",
                b.name, b.per_day, sim, ratio, b.how
            );
        }
        let _ = writeln!(out);
        let binding = self.binding();
        let _ = writeln!(
            out,
            "binding: {} ({:.1}/day); the simulator is {:+.1}% from it",
            binding.name,
            binding.per_day,
            self.deviation() * 100.0
        );
        let _ = writeln!(out, "why: {}", self.explain());
        if !self.variants.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(out, "{:<34} {:>10} {:>8}", "one change", "sim/day", "gain");
            for v in &self.variants {
                let _ = writeln!(
                    out,
                    "{:<34} {:>10.1} {:>+8.1}",
                    v.change, v.merges_per_day, v.gain
                );
            }
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "advice: {}", self.advice());
        out
    }
}
