//! One simulated run: a remote, runners and agents on their own clocks, the faults a seed picks,
//! and the checkers that watch every step.
//!
//! Everything happens on one thread in virtual time, from one seed. Machines are bay's own
//! core machines; this module only executes their actions against the in-memory Git and
//! delivers the completions, with latency, loss and faults.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use bay_core::check::Verdict as CheckVerdict;
use bay_core::check::plan::POLICY_PATH;
use bay_core::config::{CONFIG_PATH, Trailers};
use bay_core::git::{Oid, refs};
use bay_core::machine::evidence::{Merged, RecordEvidence, RecordInput};
use bay_core::machine::runner::{RunMode, Runner, RunnerConfig};
use bay_core::machine::{
    Action, ActionId, Completion, Event, Fault, Machine, PluginExit, PushOutcome, PushPlan,
    PushReport,
};
use bay_core::red::PostCheck;
use bay_core::time::Timestamp;

use crate::agent::{Agent, Cmd};
use crate::checks::{self, Behaviour, Truth};
use crate::faults::{FaultClass, FaultMix};
use crate::git_model::GitModel;
use crate::history::{self, History};
use crate::invariants::{Checker, Invariant, Violation};
use crate::rng::Rng;
use crate::trace::Trace;

mod corrupt;
mod keys;
mod locks;

/// Virtual milliseconds.
pub type Millis = u64;

/// What a run looks like, before the seed fills in the details.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub runners: usize,
    pub agents: usize,
    pub changes: usize,
    pub allowed: std::collections::BTreeSet<FaultClass>,
    /// Applied to every runner's configuration: the mutation tests use it to run broken runners.
    pub tweak: Option<fn(&mut RunnerConfig)>,
    /// Keep the whole trace, for `replay`.
    pub full_trace: bool,
    /// Ended changes on the remote before the agents start, most of them compacted (see
    /// `history`).
    pub history: usize,
    /// How each agent's hook session decides an edit of the lockable path: `lock::take`, or
    /// a mutant of it (see `world::locks`).
    pub lock_take: crate::locks::Decide,
    /// Every seed's policy declares its checks' read sets and every runner checks beside the
    /// head (`footprint_lanes`), where a seed alone would only now and then.
    pub lanes: bool,
    /// Every seed reuses evidence under a policy that lets unsigned records count, and its
    /// runners check the head and the entries behind it as one tree (`batch`).
    pub batch: bool,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            runners: 2,
            agents: 3,
            changes: 6,
            allowed: FaultClass::ALL.into_iter().collect(),
            tweak: None,
            full_trace: false,
            history: 0,
            lock_take: bay_core::lock::take,
            lanes: false,
            batch: false,
        }
    }
}

/// The lease and heartbeat of most seeds' runners, the spec's defaults.
pub const LEASE_MS: Millis = 60_000;
pub const HEARTBEAT_MS: Millis = 10_000;
/// The other `[runner] lease_s` and `heartbeat_s` a seed may draw, each pair one a person may
/// write (a heartbeat shorter than the lease): a short lease renewed often, heartbeats that
/// come close to the lease's end, and a long lease. How far a renewal may lag before another
/// runner takes the claim over moves every takeover race.
const OTHER_LEASES_MS: [(Millis, Millis); 4] = [
    (20_000, 3_000),
    (30_000, 25_000),
    (60_000, 55_000),
    (120_000, 10_000),
];
/// The runners' pass interval in most seeds; some draw a longer one (`World::interval_ms`).
pub const INTERVAL_MS: Millis = 10_000;
/// The longer pass intervals a seed may draw: a pass that comes seldom moves every race a
/// runner runs against the other writers.
const LONG_INTERVALS_MS: [Millis; 2] = [30_000, 60_000];
pub const CHECK_TIMEOUT_S: u64 = 120;
/// Each simulated check's `materialize_timeout_s`: a runner waits out the copy's limit and the
/// run's before it calls a check that never answers `unknown`.
pub const MATERIALIZE_TIMEOUT_S: u64 = 30;
const CHECK_GRACE_MS: Millis = 30_000;
/// The longest the fault phase lasts.
pub const FAULT_PHASE_MS: Millis = 30 * 60_000;
/// The liveness bound for one operation after the faults stop, with runners that pass every
/// `interval_ms` and hold claims for `lease_ms`: a lease to see a silent claim out, two
/// passes, every check's time limit and grace, and a margin for pushes and builds.
pub const fn per_op_bound_ms(interval_ms: Millis, lease_ms: Millis) -> Millis {
    lease_ms + 2 * interval_ms + MAX_CHECKS * CHECK_WAIT_MS + 30_000
}
/// The longest a runner waits for one check to answer.
const CHECK_WAIT_MS: Millis = (MATERIALIZE_TIMEOUT_S + CHECK_TIMEOUT_S) * 1000 + CHECK_GRACE_MS;
/// A short progress deadline for the head, which slow checks (up to three leases) outrun.
pub const PROGRESS_MS_SHORT: Millis = 90_000;
/// A hold of main as a person writes it, to end long after any simulated run.
const HOLD: &str = "[[hold]]\nend = \"2099-01-01T00:00:00Z\"\nreason = \"a freeze\"\n";
/// The hold plugin some seeds configure on main. Its answers are the world's to script
/// ([`PluginAnswer`]); the program's bytes only need to be on main.
const HOLD_PLUGIN: &str = "[plugin.hold]\ncommand = \"scripts/bay-hold\"\ntimeout_s = 5\n";
const HOLD_PLUGIN_PROGRAM: &str = "scripts/bay-hold";

/// What the scripted hold plugin answers now. Every answer but `Clear` holds main: the last
/// three are answers bay cannot read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PluginAnswer {
    /// `{"held": false}`.
    Clear,
    /// `{"held": true, "reason": ...}`.
    Held,
    /// Not the answer's JSON.
    Garbage,
    /// A non-zero exit.
    Fails,
    /// No exit before `timeout_s`.
    Hangs,
}

impl PluginAnswer {
    const ALL: [PluginAnswer; 5] = [
        PluginAnswer::Clear,
        PluginAnswer::Held,
        PluginAnswer::Garbage,
        PluginAnswer::Fails,
        PluginAnswer::Hangs,
    ];

    pub fn holds(self) -> bool {
        self != PluginAnswer::Clear
    }

    /// How the scripted program's run ends, and after how long.
    fn exit(self, timeout_s: u64) -> (Millis, PluginExit) {
        let exited = |code: i32, stdout: &str| PluginExit::Exited {
            code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
        };
        match self {
            PluginAnswer::Clear => (20, exited(0, "{\"held\": false}\n")),
            PluginAnswer::Held => (
                20,
                exited(0, "{\"held\": true, \"reason\": \"an incident\"}"),
            ),
            PluginAnswer::Garbage => (20, exited(0, "<html>busy</html>")),
            PluginAnswer::Fails => (20, exited(2, "")),
            PluginAnswer::Hangs => (timeout_s * 1000, PluginExit::TimedOut),
        }
    }
}
/// The most required checks a simulated policy has.
pub const MAX_CHECKS: u64 = 2;
/// Paths agents edit: few, so changes collide.
/// `policy` with read sets declared, where it has a `unit` check: `unit` reads (and is
/// required for) only `src/a.txt` and `e.txt`, two more checks each one other file of `src/`,
/// and `docs` only `docs/`; so changes to different files are checked beside each other.
fn with_footprints(policy: &str) -> String {
    if !policy.contains("id = \"unit\"\n") {
        return policy.to_owned();
    }
    let narrow = |path: &str| format!("when_paths = [\"{path}\"]\nfootprint = true");
    let more = [
        check("unit-b", &narrow("src/b.txt")),
        check("unit-c", &narrow("src/c.txt")),
    ];
    policy
        .replace(
            "id = \"unit\"\n",
            "id = \"unit\"\nwhen_paths = [\"src/a.txt\", \"e.txt\"]\nfootprint = true\n",
        )
        .replace("id = \"docs\"\n", "id = \"docs\"\nfootprint = true\n")
        + &more.concat()
}

pub const PATHS: [&str; 5] = ["src/a.txt", "src/b.txt", "src/c.txt", "docs/d.txt", "e.txt"];
pub const MAIN: &str = "main";

/// A required check of a simulated policy, `extra` its further keys: run by `checks::run`
/// from the adapter under `checks/`.
pub fn check(id: &str, extra: &str) -> String {
    format!(
        "[[check]]\nid = \"{id}\"\nenvironment = \"sim\"\ncommand = \"checks/run {id}\"\nadapter = [\"checks/\"]\nexpected_minimum = 3\ntimeout_s = {CHECK_TIMEOUT_S}\nmaterialize_timeout_s = {MATERIALIZE_TIMEOUT_S}\n{extra}\n"
    )
}

/// A machine's own clock: drifting, and jumping when the seed says so.
#[derive(Clone, Debug)]
pub struct Clock {
    epoch: Millis,
    local_at_epoch: u64,
    /// Per-mille fast (positive) or slow (negative).
    rate: i64,
}

impl Clock {
    fn new(local_start: u64, rate: i64) -> Clock {
        Clock {
            epoch: 0,
            local_at_epoch: local_start,
            rate,
        }
    }

    pub fn local(&self, t: Millis) -> Timestamp {
        let elapsed = t.saturating_sub(self.epoch) as i128 * (1000 + self.rate as i128) / 1000;
        Timestamp((self.local_at_epoch as i128 + elapsed).max(0) as u64)
    }

    /// The first global moment at which this clock reads `local` or later.
    fn global_for(&self, local: Timestamp) -> Millis {
        let ahead = local.millis().saturating_sub(self.local_at_epoch) as i128;
        let rate = (1000 + self.rate as i128).max(1);
        self.epoch + ((ahead * 1000 + rate - 1) / rate) as u64
    }

    fn jump(&mut self, t: Millis, delta: i64) {
        self.local_at_epoch = (self.local(t).millis() as i64 + delta).max(0) as u64;
        self.epoch = t;
    }
}

/// What runs on a host.
#[derive(Debug)]
pub enum Role {
    Runner {
        machine: Option<Box<Runner>>,
        down_until: Option<Millis>,
        restarts: u64,
    },
    Agent(Box<Agent>),
}

#[derive(Debug)]
pub struct Host {
    pub name: String,
    pub clock: Clock,
    pub role: Role,
    /// Bumped when the host's process dies, so answers to the old process are dropped.
    pub incarnation: u32,
    pub paused_until: Millis,
    pub partitioned_until: Millis,
    /// The pending wake-up, and its token (a newer one makes older wake-ups stale).
    wake: Option<(Millis, u64)>,
}

#[derive(Debug)]
enum Ev {
    Deliver {
        host: usize,
        incarnation: u32,
        id: ActionId,
        completion: Box<Completion>,
    },
    PushArrives {
        host: usize,
        incarnation: u32,
        id: ActionId,
        plan: Box<PushPlan>,
        fate: Fate,
    },
    Wake {
        host: usize,
        token: u64,
    },
    AgentStep {
        host: usize,
    },
    Crash {
        host: usize,
    },
    Restart {
        host: usize,
    },
    Pause {
        host: usize,
    },
    Partition {
        host: usize,
    },
    ClockJump {
        host: usize,
    },
    OutsidePush,
    /// A producer outside bay answers main's post check on main's tip.
    PostAnswer,
    /// The scripted hold plugin changes its answer.
    PluginFlip,
    /// Someone writes one of bay's records by hand, wrongly (see `corrupt`).
    Corrupt,
    /// Main, deleted by hand, is pushed back.
    MainBack,
    /// An agent host's hook session acts on the lockable path (see `locks`).
    LockStep {
        host: usize,
    },
    /// A lock push of an agent host's hook session reaches the remote.
    LockPush {
        host: usize,
        session: u32,
        writes: Vec<bay_core::lock::Write>,
        kind: locks::Kind,
        fate: Fate,
    },
    Heal,
    /// A `keys` fault (see `keys`).
    Keys,
    /// A runner's removed executor key is replaced, and the runner started again with it.
    Rekey {
        host: usize,
    },
    /// A forged key file or signer is mended.
    Unforge {
        path: String,
    },
    /// The approver answers the operations that wait for a yes.
    Approve,
}

/// What becomes of one push on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Normal,
    /// Applied, but the reply is lost.
    AppliedNoReply,
    /// The connection broke before the remote applied it; no reply.
    LostBeforeApply,
}

#[derive(Debug)]
struct Queued {
    at: Millis,
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

/// A recurring fault: its class, the first and last moment of its first time, what it does
/// to a host, and whether it applies to this host.
type FaultTimer = (FaultClass, Millis, Millis, fn(usize) -> Ev, bool);

/// How a run ended.
#[derive(Debug)]
pub struct RunReport {
    pub seed: u64,
    pub faults: Vec<&'static str>,
    pub violations: Vec<Violation>,
    pub outcomes: BTreeMap<&'static str, u64>,
    /// Ended operations by reason code.
    pub reasons: BTreeMap<&'static str, u64>,
    /// `bay merge` refusals, which end no operation because none was queued, by reason code.
    pub submit_refusals: BTreeMap<&'static str, u64>,
    /// What `bay undo` gave (`opened`, `nothing to undo`, a reason code, `failed`), and how
    /// many undo merges S8 checked (`merged`).
    pub undos: BTreeMap<&'static str, u64>,
    /// What `bay merge --wait` gave: the runs started (`ran`), and each one's decision.
    pub waits: BTreeMap<&'static str, u64>,
    /// Merges of fixes and undos S9 saw land on a held main.
    pub held_merges: u64,
    /// Post check answers recorded, how many failed, merges S11 judged onto a red main, and
    /// merges it left unjudged because an answer arrived while their operation was in flight.
    pub red: BTreeMap<&'static str, u64>,
    /// Runner log events S12 checked.
    pub logged: u64,
    /// Presences S14 checked.
    pub presences: u64,
    /// What the `keys` fault did (`revoked`, `rotated`, `enrolled`, `forged-key`,
    /// `forged-bytes`), and `registry` when the seed keeps one.
    pub keys: BTreeMap<&'static str, u64>,
    /// Ended changes a runner compacted into the index, each S16 checked, and of those the
    /// abandoned and the `no_effect` ones.
    pub compacted: u64,
    pub compacted_abandoned: u64,
    pub compacted_no_effect: u64,
    /// Ended changes the remote held before the agents started (`Scenario::history`).
    pub history: u64,
    /// Whether main's config set a hold plugin, how many times runners asked it, and how many
    /// of its answers held main.
    pub plugin: Option<(u64, u64)>,
    /// With `[runner] ahead`: the early runs runners made on predicted bases, and the passes
    /// merged operations reused rather than ran.
    pub ahead: Option<(u64, u64)>,
    /// With `[runner] footprint_lanes`: the passes merged operations carried from another
    /// candidate of theirs with the same read set.
    pub lanes: Option<u64>,
    /// With `[runner] batch`: the batches merged, and their members.
    pub batch: Option<(u64, u64)>,
    /// Dependents left waiting, as they must, on a change that is open with nothing queued.
    pub dependency_waits: u64,
    /// The records someone wrote wrongly by hand (the `corrupt` fault), by kind.
    pub corruptions: BTreeMap<&'static str, u64>,
    /// What the agents' hook sessions did on the lockable path: edits let through (each one
    /// S17 checked), `held`, `renewed`, `died`, `unreachable`, `unsettled`.
    pub locks: BTreeMap<&'static str, u64>,
    /// Operations left open, as they must be, on a chain or a place bay cannot read.
    pub unreadable_open: u64,
    pub merged: u64,
    pub ops: u64,
    pub virtual_ms: Millis,
    /// How often the seed's runners started a pass (`World::interval_ms`).
    pub interval_ms: Millis,
    /// The seed's runners' lease and heartbeat (`World::lease_ms`).
    pub lease_ms: Millis,
    pub heartbeat_ms: Millis,
    pub events: u64,
    pub trace_hash: u64,
    pub trace: Vec<String>,
    pub liveness_bound_ms: Option<Millis>,
}

#[derive(Debug)]
pub struct World {
    pub t: Millis,
    seq: u64,
    queue: BinaryHeap<Reverse<Queued>>,
    pub git: GitModel,
    pub truth: Truth,
    pub checker: Checker,
    pub hosts: Vec<Host>,
    pub mix: FaultMix,
    pub healed: bool,
    pub rng: Rng,
    net_rng: Rng,
    check_rng: Rng,
    fault_rng: Rng,
    /// The producer of post check answers: its own stream, so other draws stay as they were.
    post_rng: Rng,
    /// Draws `ahead`, apart from every other draw.
    ahead_rng: Rng,
    /// Whether runners check entries beside the head and carry footprint passes (`[runner]
    /// footprint_lanes`), in half the seeds that reuse evidence, drawn from `lanes_rng`.
    footprint_lanes: bool,
    lanes_rng: Rng,
    /// How runners batch (`[runner] batch`), in some seeds that reuse evidence, drawn from
    /// `batch_rng`.
    batch: Option<bay_core::config::BatchSettings>,
    batch_rng: Rng,
    /// Post check answers recorded, and failed ones.
    post_answers: BTreeMap<&'static str, u64>,
    pub trace: Trace,
    scenario: Scenario,
    /// Tasks not yet taken by an agent.
    pub tasks_left: usize,
    pub next_task: usize,
    /// Intents agents work on now, which another agent may pick too.
    pub intents: Vec<(String, Vec<String>)>,
    /// The head's progress deadline every runner of this seed uses (`[runner]
    /// execution_budget_s` plus `publish_window_s` in the repository's config).
    progress_ms: Millis,
    /// How many checks of a candidate every runner of this seed runs at once.
    parallel_checks: u32,
    /// Whether runners reuse passes on exactly the same inputs (where the policy allows it).
    evidence_reuse: bool,
    /// How often every runner of this seed starts a pass (`[runner] interval_s`): mostly
    /// [`INTERVAL_MS`], in some seeds longer, drawn from `interval_rng`.
    interval_ms: Millis,
    interval_rng: Rng,
    /// Every runner's `[runner] lease_s` and `heartbeat_s`: mostly [`LEASE_MS`] and
    /// [`HEARTBEAT_MS`], in some seeds one of [`OTHER_LEASES_MS`], drawn from `lease_rng`.
    lease_ms: Millis,
    heartbeat_ms: Millis,
    lease_rng: Rng,
    /// Whether runners bisect a red post check (`[runner] bisect_post`).
    bisect_post: bool,
    /// How many queued entries a runner that does not hold the head checks early (`[runner]
    /// ahead`), in half the seeds that reuse evidence.
    ahead: u32,
    /// How many ended changes a runner lets wait before it compacts them: few, picked from
    /// the seed alone, so that compaction runs under every fault in most seeds.
    compact_at: usize,
    /// How long an abandoned change waits before it may be compacted: none to 80 seconds,
    /// so that some are compacted before a start takes them up again and some after.
    retention_ms: u64,
    /// The hold plugin's answer now, when main's config sets one (`HOLD_PLUGIN`, for good).
    pub plugin: Option<PluginAnswer>,
    plugin_rng: Rng,
    /// The hold plugin's runs so far, and those whose answer held main.
    plugin_runs: (u64, u64),
    /// Check runs on a base that was never main: early runs on a prediction.
    early_runs: u64,
    /// `bay merge` refusals so far, by reason code.
    pub submit_refusals: BTreeMap<&'static str, u64>,
    /// What `bay undo` gave so far.
    pub undos: BTreeMap<&'static str, u64>,
    /// What `bay merge --wait` gave so far.
    pub waits: BTreeMap<&'static str, u64>,
    /// Which tasks end in `bay merge --wait`: its own stream, so that other draws stay as
    /// they were.
    pub wait_rng: Rng,
    deadline: Option<Millis>,
    events: u64,
    wake_tokens: u64,
    /// What the `corrupt` fault did and has yet to undo (see `corrupt`).
    corrupt: corrupt::Corruptions,
    /// The ended changes the remote held before the agents started.
    pub history: History,
    /// The agents' hook sessions on the lockable path, and what S17 knows of them.
    locks: locks::LockSessions,
    /// The key registry, the runners' keys and the `keys` fault (see `keys`).
    keys: keys::KeyWorld,
}

impl World {
    pub fn new(seed: u64, scenario: Scenario) -> World {
        let mut rng = Rng::new(seed);
        // The `corrupt` fault's own stream, so that a seed without it runs as before it was.
        let mut corrupt_rng = Rng::new(seed ^ 0x636f_7272_7570_7421);
        let mix = FaultMix::pick(&mut rng.split(1), &mut corrupt_rng, &scenario.allowed);
        let mut world = World {
            t: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            git: GitModel::default(),
            truth: Truth::default(),
            checker: Checker::new(MAIN),
            hosts: Vec::new(),
            mix,
            healed: false,
            net_rng: rng.split(2),
            check_rng: rng.split(3),
            fault_rng: rng.split(4),
            // Seeded apart from `rng`, so adding it changed no other draw of any seed.
            post_rng: Rng::new(seed ^ 0x706f_7374_5f63_6921),
            ahead_rng: Rng::new(seed ^ 0x6168_6561_6421),
            footprint_lanes: false,
            lanes_rng: Rng::new(seed ^ 0x006c_616e_6573),
            batch: None,
            batch_rng: Rng::new(seed ^ 0x0062_6174_6368),
            post_answers: BTreeMap::new(),
            // A stream of its own, so that a seed without a plugin runs as it did before there
            // was one.
            plugin_rng: Rng::new(seed).split(5),
            plugin: None,
            plugin_runs: (0, 0),
            early_runs: 0,
            rng,
            trace: Trace::new(scenario.full_trace),
            tasks_left: scenario.changes,
            next_task: 0,
            intents: Vec::new(),
            progress_ms: RunnerConfig::new("", MAIN, 0).progress_ms,
            parallel_checks: 1,
            evidence_reuse: false,
            interval_ms: INTERVAL_MS,
            interval_rng: Rng::new(seed ^ 0x696e_7465_7276_616c),
            lease_ms: LEASE_MS,
            heartbeat_ms: HEARTBEAT_MS,
            lease_rng: Rng::new(seed ^ 0x6c65_6173_6573),
            bisect_post: false,
            ahead: 0,
            compact_at: 2 + (seed % 7) as usize,
            retention_ms: (seed % 5) * 20_000,
            submit_refusals: BTreeMap::new(),
            waits: BTreeMap::new(),
            wait_rng: Rng::new(seed ^ 0x7761_6974_5f68_6572),
            undos: BTreeMap::new(),
            deadline: None,
            events: 0,
            wake_tokens: 0,
            corrupt: corrupt::Corruptions::new(corrupt_rng),
            history: History::default(),
            // A stream of its own, so that adding the lock sessions moved no other draw.
            locks: locks::LockSessions::new(
                Rng::new(seed ^ 0x6c6f_636b_735f_7331),
                scenario.lock_take,
            ),
            keys: keys::KeyWorld::new(seed),
            scenario,
        };
        if world
            .keys
            .fault_on(world.scenario.allowed.contains(&FaultClass::Keys))
        {
            world.mix.on.insert(FaultClass::Keys);
        }
        world.setup();
        world
    }

    /// Main's first commit: a few files and the policy the seed picks; on the history the
    /// scenario asks for, when it asks for one, as a person's commit over it.
    fn setup(&mut self) {
        // Fewer merged changes of the history wait than make a runner compact, so the agents'
        // first merges do. The history draws nothing from the seed.
        let over = (self.scenario.history > 0).then(|| {
            self.history =
                history::start(&mut self.git, self.scenario.history, self.compact_at - 1);
            self.git
                .remote
                .get(&refs::main(MAIN))
                .cloned()
                .expect("a history has a main")
        });
        let mut files = over
            .as_ref()
            .and_then(|tip| self.git.store.files(tip))
            .map(|files| (*files).clone())
            .unwrap_or_default();
        // The seed's policy replaces the history's, or there is none.
        files.remove(POLICY_PATH);
        for path in PATHS {
            let blob = self.git.store.blob(&format!("{path} as it began\n"));
            files.insert(path.to_string(), blob);
        }
        let policy = self.pick_policy().map(|policy| self.with_approval(policy));
        if let Some(policy) = &policy {
            let blob = self.git.store.blob(policy);
            files.insert(POLICY_PATH.to_string(), blob);
        }
        // Some repositories give the head a budget that slow checks outrun.
        if self.rng.chance(150) {
            self.progress_ms = PROGRESS_MS_SHORT;
        }
        // Some run a candidate's checks at once.
        if self.rng.chance(300) {
            self.parallel_checks = 2 + self.rng.range(0, 1) as u32;
        }
        self.evidence_reuse = self.rng.chance(500) || self.scenario.batch;
        // Some runners pass seldom, drawn apart from every other draw.
        if self.interval_rng.chance(250) {
            self.interval_ms = *self.interval_rng.pick(&LONG_INTERVALS_MS);
        }
        // Some write another lease and heartbeat, drawn apart too.
        if self.lease_rng.chance(250) {
            (self.lease_ms, self.heartbeat_ms) = *self.lease_rng.pick(&OTHER_LEASES_MS);
        }
        // Drawn apart from the seed's other draws, so that every other draw stays as it was.
        if self.evidence_reuse && self.ahead_rng.chance(500) {
            self.ahead = 1 + self.ahead_rng.range(0, 2) as u32;
        }
        // Some of those check the head and the entries behind it as one tree, drawn apart too.
        if self.evidence_reuse && (self.scenario.batch || self.batch_rng.chance(300)) {
            self.batch = Some(bay_core::config::BatchSettings {
                min: 2,
                max: 2 + self.batch_rng.range(0, 3) as u32,
                max_failure_ppm: [300_000, 1_000_000][self.batch_rng.range(0, 1) as usize],
            });
        }
        // Some of those check entries beside the head, under a policy whose checks declare
        // their read sets (`footprint_lanes`), drawn apart too.
        let lanes = self.scenario.lanes || (self.evidence_reuse && self.lanes_rng.chance(500));
        if let (true, Some(policy)) = (lanes, policy) {
            self.footprint_lanes = true;
            let blob = self.git.store.blob(&with_footprints(&policy));
            files.insert(POLICY_PATH.to_string(), blob);
        }
        // Some repositories ask a hold plugin, whose answer flips while the faults last.
        if self.plugin_rng.chance(300) {
            for (path, text) in [
                (CONFIG_PATH, HOLD_PLUGIN),
                (HOLD_PLUGIN_PROGRAM, "#!/bin/sh\n"),
            ] {
                let blob = self.git.store.blob(text);
                files.insert(path.to_string(), blob);
            }
            self.plugin = Some(PluginAnswer::Clear);
            self.checker.plugin_answers(0, false);
            let at = self.plugin_rng.range(5_000, 60_000);
            self.at(at, Ev::PluginFlip);
        }
        let tree = self.git.store.tree(files);
        let root = match over {
            None => self
                .git
                .store
                .commit(tree, Vec::new(), "The first version\n"),
            Some(tip) => {
                let message = "This seed's files and policy, over a long history\n";
                self.git.store.commit(tree, vec![tip], message)
            }
        };
        self.git.remote.refs.insert(refs::main(MAIN), root.clone());
        // Half the runners of a post check bisect it; drawn from its own stream, so that
        // every other draw stays as it was.
        if !self.post_checks(&root).is_empty() {
            self.bisect_post = self.post_rng.chance(500);
        }
        self.checker.history(&self.git, &self.history);
        let drift = self.mix.has(FaultClass::Clock);
        let names: Vec<String> = (0..self.scenario.runners)
            .map(|n| format!("runner-{n}"))
            .chain((0..self.scenario.agents).map(|n| format!("agent-{n}")))
            .collect();
        self.enrol_all(&names);
        for n in 0..self.scenario.runners {
            let clock = self.new_clock(drift);
            let name = format!("runner-{n}");
            let machine = self.new_runner(&name, &clock);
            self.hosts.push(Host {
                name,
                clock,
                role: Role::Runner {
                    machine: machine.map(Box::new),
                    down_until: None,
                    restarts: 0,
                },
                incarnation: 0,
                paused_until: 0,
                partitioned_until: 0,
                wake: None,
            });
        }
        for n in 0..self.scenario.agents {
            let clock = self.new_clock(drift);
            let agent = Agent::new(format!("agent-{n}"), self.rng.split(100 + n as u64));
            self.hosts.push(Host {
                name: format!("agent-{n}"),
                clock,
                role: Role::Agent(Box::new(agent)),
                incarnation: 0,
                paused_until: 0,
                partitioned_until: 0,
                wake: None,
            });
        }
        for host in 0..self.hosts.len() {
            match self.hosts[host].role {
                Role::Runner { .. } => self.settle(host),
                Role::Agent(_) => {
                    let at = self.rng.range(0, 2_000);
                    self.at(at, Ev::AgentStep { host });
                    let at = self.locks.first();
                    self.at(at, Ev::LockStep { host });
                }
            }
            self.schedule_faults(host);
        }
        if self.mix.has(FaultClass::OutsidePush) {
            let at = self.fault_rng.range(10_000, 60_000);
            self.at(at, Ev::OutsidePush);
        }
        if !self.post_checks(&root).is_empty() {
            let at = self.post_rng.range(20_000, 60_000);
            self.at(at, Ev::PostAnswer);
        }
        self.schedule_keys();
        if self.mix.has(FaultClass::Corrupt) {
            let at = self.corrupt.first();
            self.at(at, Ev::Corrupt);
        }
        self.at(FAULT_PHASE_MS, Ev::Heal);
    }

    /// The policy on main: usually checks, sometimes none required, rarely absent; and the
    /// rules that change what a runner does: a check required only for some paths, a post
    /// check, reruns of failures with flaky merges allowed or refused, a quarantine, failures
    /// judged against the base, and in some a `[limits]` cap that agents' larger edits go over.
    fn pick_policy(&mut self) -> Option<String> {
        let limits = match self.rng.range(0, 99) {
            0..=9 => "\n[limits]\nmax_files = 1\n",
            10..=19 => "\n[limits]\nmax_added_lines = 12\n",
            20..=29 => "\n[limits]\nmax_file_mib = 1\n",
            _ => "",
        };
        // Half the policies let unsigned evidence be reused.
        let reuse = if self.rng.chance(500) {
            "\n[policy]\nreuse_unsigned = true\n"
        } else {
            ""
        };
        // Where every runner batches, every policy lets it (the draws above stay as they were).
        let reuse = match self.scenario.batch {
            true => "\n[policy]\nreuse_unsigned = true\n",
            false => reuse,
        };
        self.pick_checks().map(|policy| policy + limits + reuse)
    }

    fn pick_checks(&mut self) -> Option<String> {
        let roll = self.rng.range(0, 99);
        let policy = |checks: &[String], more: &str| {
            Some(format!("revision = 1\n\n{}{more}", checks.concat()))
        };
        match roll {
            0..=2 => None,
            3..=9 => Some("revision = 1\nunchecked = true\n".to_string()),
            10..=44 => policy(&[check("unit", "")], ""),
            45..=59 => policy(
                &[check("unit", ""), check("docs", "when_paths = [\"docs/\"]")],
                "",
            ),
            60..=69 => policy(
                &[
                    check("unit", "retry_on_failure = 2\nallow_flaky = true"),
                    check("deploy", "stage = \"post\"\nwhen_paths = [\"src/\"]"),
                ],
                "",
            ),
            70..=79 => policy(
                &[check("unit", "retry_on_failure = 1"), check("lint", "")],
                "[[quarantine]]\nid = \"lint\"\nenvironment = \"sim\"\nreason = \"red on main\"\nend = \"2030-01-01\"\nowner = \"sim\"\n",
            ),
            80..=89 => policy(&[check("unit", "baseline = \"base\"")], ""),
            _ => policy(&[check("unit", ""), check("lint", "")], ""),
        }
    }

    fn new_clock(&mut self, drift: bool) -> Clock {
        let start = 1_800_000_000_000 + self.rng.range(0, 3_600_000);
        let rate = if drift {
            self.rng.range(0, 100) as i64 - 50
        } else {
            0
        };
        Clock::new(start, rate)
    }

    /// A runner named `name`; none when the registry refuses its keys, as `bay runner run`
    /// refuses to start (`RUNNER_KEY_MISSING`).
    fn new_runner(&mut self, name: &str, clock: &Clock) -> Option<Runner> {
        let mut cfg = self.unsigned_config(name, RunMode::Loop);
        cfg.signer = self.signer_for(name).ok()?;
        Some(Runner::new(cfg, clock.local(self.t)))
    }

    /// The configuration every runner of this world runs with, named `name`, in `mode`, with
    /// its keys as the registry judges them.
    pub fn runner_config(&mut self, name: &str, mode: RunMode) -> RunnerConfig {
        let mut cfg = self.unsigned_config(name, mode);
        cfg.signer = self.signer_for(name).ok().flatten();
        cfg
    }

    fn unsigned_config(&mut self, name: &str, mode: RunMode) -> RunnerConfig {
        let mut cfg = RunnerConfig::new(name, MAIN, self.rng.next_u64());
        cfg.lease_ms = self.lease_ms;
        cfg.heartbeat_ms = self.heartbeat_ms;
        cfg.interval_ms = self.interval_ms;
        cfg.check_grace_ms = CHECK_GRACE_MS;
        cfg.progress_ms = self.progress_ms;
        cfg.parallel_checks = self.parallel_checks;
        cfg.evidence_reuse = self.evidence_reuse;
        cfg.bisect_post = self.bisect_post;
        cfg.ahead = self.ahead;
        cfg.footprint_lanes = self.footprint_lanes;
        cfg.evidence_reuse |= self.footprint_lanes;
        cfg.batch = self.batch;
        cfg.compact_at = self.compact_at;
        cfg.retention_ms = self.retention_ms;
        cfg.trailers = Trailers::default();
        cfg.mode = mode;
        if let Some(tweak) = self.scenario.tweak {
            tweak(&mut cfg);
        }
        cfg
    }

    fn at(&mut self, at: Millis, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse(Queued {
            at: at.max(self.t),
            seq: self.seq,
            ev,
        }));
    }

    fn after(&mut self, delay: Millis, ev: Ev) {
        self.at(self.t + delay, ev);
    }

    /// Runs to the end: every task done and every operation ended, or a violation, or the
    /// liveness bound.
    pub fn run(mut self, seed: u64) -> RunReport {
        self.play();
        self.report(seed)
    }

    /// Runs to the end and keeps the world, for a look at what it holds.
    pub fn run_keep(mut self) -> World {
        self.play();
        self
    }

    fn play(&mut self) {
        while let Some(Reverse(next)) = self.queue.pop() {
            self.t = next.at;
            self.events += 1;
            self.step(next.ev);
            if self
                .checker
                .violations
                .iter()
                .any(|v| v.invariant.is_safety())
            {
                break;
            }
            if self.healed && self.all_done() {
                break;
            }
            if let Some(deadline) = self.deadline
                && self.t >= deadline
            {
                self.checker.check_liveness(self.t, deadline);
                break;
            }
        }
    }

    fn all_done(&self) -> bool {
        self.hosts.iter().all(|host| match &host.role {
            Role::Agent(agent) => agent.is_done(),
            Role::Runner { .. } => true,
        }) && !self.checker.any_open()
    }

    fn report(self, seed: u64) -> RunReport {
        let waiting = self.checker.dependency_waits();
        let unreadable_open = self.checker.unreadable_open();
        // A scenario's tweak may set `ahead` where the seed did not.
        let ahead = (self.ahead > 0 || self.early_runs > 0)
            .then(|| (self.early_runs, self.checker.reused_passes()));
        let carried = self.checker.carried_passes();
        let lanes = (self.footprint_lanes || carried > 0).then_some(carried);
        let batch = self
            .batch
            .map(|_| (self.checker.batches, self.checker.batch_members));
        let mut outcomes = BTreeMap::new();
        let mut reasons = BTreeMap::new();
        // The history's operations ended before the seed began: the seed's are those submitted.
        let ended = self
            .checker
            .ended
            .iter()
            .filter(|(op, _)| self.checker.submitted.contains_key(*op));
        for (_, (_, state, reason)) in ended {
            *outcomes.entry(state.as_str()).or_insert(0) += 1;
            if let Some(reason) = reason {
                *reasons.entry(reason.as_str()).or_insert(0) += 1;
            }
        }
        RunReport {
            seed,
            faults: self.mix.names(),
            merged: self.checker.merges,
            ops: self.checker.submitted.len() as u64,
            violations: self.checker.violations,
            outcomes,
            reasons,
            submit_refusals: self.submit_refusals,
            waits: self.waits,
            undos: {
                let mut undos = self.undos;
                undos.insert("merged", self.checker.undo_merges);
                undos
            },
            held_merges: self.checker.held_merges,
            red: {
                let mut red = self.post_answers;
                red.insert("merged onto red", self.checker.red_merges);
                red.insert("unjudged", self.checker.red_unjudged);
                red.insert("bisect runs", self.checker.bisect.runs);
                red.insert("bisect reruns", self.checker.bisect.reruns);
                red.insert("bisect unjudged", self.checker.bisect.unjudged);
                red
            },
            logged: self.checker.events,
            presences: self.checker.presences_checked,
            compacted: self.checker.compaction.compacted,
            compacted_abandoned: self.checker.compaction.compacted_abandoned,
            compacted_no_effect: self.checker.compaction.compacted_no_effect,
            history: self.history.changes().len() as u64,
            plugin: self.plugin.map(|_| self.plugin_runs),
            ahead,
            lanes,
            batch,
            dependency_waits: waiting,
            corruptions: self.corrupt.counts.clone(),
            keys: self.keys.report(),
            locks: self.locks.counts.clone(),
            unreadable_open,
            virtual_ms: self.t,
            interval_ms: self.interval_ms,
            lease_ms: self.lease_ms,
            heartbeat_ms: self.heartbeat_ms,
            events: self.events,
            trace_hash: self.trace.hash(),
            trace: self.trace.lines(),
            liveness_bound_ms: self.deadline,
        }
    }

    fn step(&mut self, ev: Ev) {
        match ev {
            Ev::Deliver {
                host,
                incarnation,
                id,
                completion,
            } => self.deliver(host, incarnation, id, *completion),
            Ev::PushArrives {
                host,
                incarnation,
                id,
                plan,
                fate,
            } => self.push_arrives(host, incarnation, id, *plan, fate),
            Ev::Wake { host, token } => self.wake(host, token),
            Ev::AgentStep { host } => self.agent_step(host),
            Ev::Crash { host } => self.crash(host),
            Ev::Restart { host } => self.restart(host),
            Ev::Pause { host } => self.pause(host),
            Ev::Partition { host } => self.partition(host),
            Ev::ClockJump { host } => self.clock_jump(host),
            Ev::OutsidePush => self.outside_push(),
            Ev::PostAnswer => self.post_answer(),
            Ev::PluginFlip => self.plugin_flip(),
            Ev::Corrupt => self.corrupt(),
            Ev::MainBack => self.main_back(),
            Ev::LockStep { host } => self.lock_step(host),
            Ev::LockPush {
                host,
                session,
                writes,
                kind,
                fate,
            } => self.lock_push_arrives(host, session, writes, kind, fate),
            Ev::Heal => self.heal(),
            Ev::Keys => self.keys_fault(),
            Ev::Rekey { host } => self.rekey(host),
            Ev::Unforge { path } => self.unforge(&path),
            Ev::Approve => self.approve_waiting(),
        }
    }

    // ---- machines ------------------------------------------------------------------------

    /// The machine running on `host` now, if any.
    fn machine(&mut self, host: usize) -> Option<&mut dyn Machine> {
        match &mut self.hosts[host].role {
            Role::Runner { machine, .. } => machine.as_deref_mut().map(|m| m as &mut dyn Machine),
            Role::Agent(agent) => agent.cmd.as_mut().map(Cmd::machine),
        }
    }

    /// Drains the host machine's actions, executes them, and schedules its next wake-up.
    fn settle(&mut self, host: usize) {
        let mut actions = Vec::new();
        if let Some(machine) = self.machine(host) {
            while let Some(action) = machine.poll_action() {
                actions.push(action);
            }
        }
        for (id, action) in actions {
            self.trace.note(self.t, host, action.name(), id.0);
            self.execute(host, id, action);
        }
        let deadline = self.machine(host).and_then(|m| m.poll_timeout());
        if let Some(deadline) = deadline {
            let at = self.hosts[host].clock.global_for(deadline.at).max(self.t);
            let stale = self.hosts[host]
                .wake
                .is_some_and(|(pending, _)| pending <= at);
            if !stale {
                self.wake_tokens += 1;
                let token = self.wake_tokens;
                self.hosts[host].wake = Some((at, token));
                self.at(at, Ev::Wake { host, token });
            }
        }
        let finished = match &self.hosts[host].role {
            Role::Agent(agent) => agent
                .cmd
                .as_ref()
                .is_some_and(|cmd| cmd.machine_ref().outcome().is_some()),
            Role::Runner { .. } => false,
        };
        if finished {
            self.agent_finished(host);
        }
    }

    fn feed(&mut self, host: usize, event: Event) {
        let now = self.hosts[host].clock.local(self.t);
        let phase = self.wait_phase(host);
        let Some(machine) = self.machine(host) else {
            return;
        };
        if let Err(misuse) = machine.handle(now, event) {
            self.checker.violations.push(Violation {
                invariant: Invariant::Liveness,
                at: self.t,
                what: format!("{}: {misuse}", self.hosts[host].name),
            });
        }
        // `merge --wait` moved on to a run (or to a request asked again): a new incarnation
        // of this host's runner, whose first actions go out after this.
        if self.wait_phase(host) != phase {
            self.hosts[host].incarnation += 1;
        }
        self.settle(host);
    }

    /// The phase of the agent's `merge --wait`, if it runs one.
    fn wait_phase(&self, host: usize) -> Option<u32> {
        match &self.hosts[host].role {
            Role::Agent(agent) => match &agent.cmd {
                Some(crate::agent::Cmd::Wait(waited)) => Some(waited.generation()),
                _ => None,
            },
            Role::Runner { .. } => None,
        }
    }

    fn deliver(&mut self, host: usize, incarnation: u32, id: ActionId, completion: Completion) {
        if self.hosts[host].incarnation != incarnation {
            return;
        }
        if self.hosts[host].paused_until > self.t {
            let until = self.hosts[host].paused_until;
            self.at(
                until,
                Ev::Deliver {
                    host,
                    incarnation,
                    id,
                    completion: Box::new(completion),
                },
            );
            return;
        }
        self.trace.note(self.t, host, "done", id.0);
        self.feed(host, Event::Done(id, completion));
    }

    fn wake(&mut self, host: usize, token: u64) {
        if self.hosts[host].wake.map(|(_, t)| t) != Some(token) {
            return;
        }
        if self.hosts[host].paused_until > self.t {
            let until = self.hosts[host].paused_until;
            self.hosts[host].wake = Some((until, token));
            self.at(until, Ev::Wake { host, token });
            return;
        }
        self.hosts[host].wake = None;
        self.trace.note(self.t, host, "tick", 0);
        self.feed(host, Event::Tick);
    }

    // ---- executing actions ---------------------------------------------------------------

    fn latency(&mut self) -> Millis {
        self.net_rng.range(5, 80)
    }

    fn reply(&mut self, host: usize, id: ActionId, delay: Millis, completion: Completion) {
        let incarnation = self.hosts[host].incarnation;
        self.after(
            delay,
            Ev::Deliver {
                host,
                incarnation,
                id,
                completion: Box::new(completion),
            },
        );
    }

    fn cut_off(&self, host: usize) -> bool {
        self.hosts[host].partitioned_until > self.t
    }

    fn execute(&mut self, host: usize, id: ActionId, action: Action) {
        self.keys_note(host, &action);
        match action {
            Action::Fetch(spec) => {
                let lat = self.latency();
                let fail = self.cut_off(host)
                    || self
                        .net_rng
                        .chance(self.mix.rate(FaultClass::FetchFail, 30));
                let completion = if fail {
                    Completion::Fetched(Err(Fault("could not reach the remote".into())))
                } else {
                    Completion::Fetched(self.git.fetch(&spec))
                };
                self.reply(host, id, lat, completion);
            }
            Action::Push(plan) => {
                let plan = self.maybe_forge(host, plan);
                let lat = self.latency();
                if self.cut_off(host)
                    || self.net_rng.chance(self.mix.rate(FaultClass::PushFail, 30))
                {
                    let report = crate::remote::not_sent("could not reach the remote".into());
                    return self.reply(host, id, lat, Completion::Pushed(report));
                }
                let fate = if self
                    .net_rng
                    .chance(self.mix.rate(FaultClass::LostReply, 40))
                {
                    if self.net_rng.chance(700) {
                        Fate::AppliedNoReply
                    } else {
                        Fate::LostBeforeApply
                    }
                } else {
                    Fate::Normal
                };
                let incarnation = self.hosts[host].incarnation;
                self.after(
                    lat / 2,
                    Ev::PushArrives {
                        host,
                        incarnation,
                        id,
                        plan: Box::new(plan),
                        fate,
                    },
                );
            }
            Action::RunCheck(run) => {
                let main = self.git.remote.get(&refs::main(MAIN));
                if run.request.change.is_some()
                    && main.is_some_and(|main| {
                        !self.git.store.is_ancestor(&run.request.base.commit, main)
                    })
                {
                    self.early_runs += 1;
                } else if run.request.change.is_some() {
                    self.forge_evidence(&run);
                }
                let behaviour = self.behaviour();
                match checks::run(
                    &self.git.store,
                    &mut self.truth,
                    &mut self.check_rng,
                    behaviour,
                    &run,
                    self.lease_ms,
                ) {
                    checks::Run::Exits { millis, exit } => {
                        self.reply(host, id, millis, Completion::CheckExited(exit))
                    }
                    checks::Run::Silent => {}
                }
            }
            Action::RunPlugin(run) => {
                // The program's bytes are main's; its answer is the world's script.
                let answer = self.plugin.unwrap_or(PluginAnswer::Fails);
                let (millis, exit) = match self.git.store.read(&run.commit, &run.program) {
                    Some(_) => answer.exit(run.timeout_s),
                    None => (
                        1,
                        PluginExit::NotStarted(format!("no {} there", run.program)),
                    ),
                };
                self.trace
                    .note(self.t, host, "plugin-run", u64::from(answer.holds()));
                self.plugin_runs.0 += 1;
                self.plugin_runs.1 += u64::from(answer.holds());
                self.reply(host, id, millis, Completion::PluginExited(exit));
            }
            local => {
                if let Action::WriteSteps(append) = &local {
                    // A request written for its runner to carry: S7, S9 and S11 time the
                    // operation from here.
                    for op in append.steps.iter().filter_map(|step| step.op()) {
                        self.checker.request_written(op.clone(), self.t);
                    }
                }
                if let (Action::ReadTrees { .. }, Role::Runner { .. }) =
                    (&local, &self.hosts[host].role)
                {
                    // Only a bisect reads trees: S13 judges its run against what it read.
                    let name = self.hosts[host].name.clone();
                    self.checker.bisect_read(&name, self.t);
                }
                // Local work: the model answers at once; only its duration is the world's.
                let delay = match &local {
                    Action::BuildCandidate(_) => 5,
                    Action::RefreshDraft { .. } => 3,
                    Action::ReadChains { .. } | Action::FreezeDraft { .. } => 2,
                    Action::MakeView { .. } => 2,
                    _ => 1,
                };
                let mut no_views = BTreeMap::new();
                let views = match &mut self.hosts[host].role {
                    Role::Agent(agent) => &mut agent.views,
                    Role::Runner { .. } => &mut no_views,
                };
                let completion = self
                    .git
                    .answer(&local, views)
                    .expect("the model answers all but checks, which are run above");
                self.keys_built(&completion);
                self.reply(host, id, delay, completion);
            }
        }
    }

    fn behaviour(&mut self) -> Behaviour {
        if self.healed {
            return Behaviour::Honest;
        }
        let mix = &self.mix;
        let table = [
            (Behaviour::Slow, mix.rate(FaultClass::SlowCheck, 60)),
            (Behaviour::Hung, mix.rate(FaultClass::HungCheck, 20)),
            (Behaviour::Lost, mix.rate(FaultClass::HungCheck, 10)),
            (Behaviour::Flaky, mix.rate(FaultClass::FlakyCheck, 30)),
            (
                Behaviour::Unavailable,
                mix.rate(FaultClass::UnavailableCheck, 30),
            ),
            (Behaviour::WrongTree, mix.rate(FaultClass::LyingCheck, 25)),
            (Behaviour::TooFewUnits, mix.rate(FaultClass::LyingCheck, 15)),
            (Behaviour::HugeReason, mix.rate(FaultClass::LyingCheck, 10)),
            (Behaviour::FailingExit, mix.rate(FaultClass::LyingCheck, 10)),
            (Behaviour::Garbage, mix.rate(FaultClass::LyingCheck, 10)),
        ];
        let mut roll = self.check_rng.range(0, 999);
        for (behaviour, per_mille) in table {
            if roll < per_mille {
                return behaviour;
            }
            roll -= per_mille.min(roll);
        }
        Behaviour::Honest
    }

    fn push_arrives(
        &mut self,
        host: usize,
        incarnation: u32,
        id: ActionId,
        plan: PushPlan,
        fate: Fate,
    ) {
        let lat = self.latency();
        if fate == Fate::LostBeforeApply {
            let report = PushReport {
                steps: Vec::new(),
                notes: Vec::new(),
                log: None,
                presence: None,
                indexes: Vec::new(),
                outcome: PushOutcome::Unknown {
                    why: "the connection broke".into(),
                },
            };
            let steps = crate::remote::write_objects(&mut self.git.store, &plan);
            let report = PushReport { steps, ..report };
            return self.after(
                lat / 2,
                Ev::Deliver {
                    host,
                    incarnation,
                    id,
                    completion: Box::new(Completion::Pushed(report)),
                },
            );
        }
        let (mut report, applied) = self.git.push(&plan);
        // A runner pushes, or an agent's `merge --wait`, which runs as a runner of its name.
        let pusher = match &self.hosts[host].role {
            Role::Runner { .. } => Some(self.hosts[host].name.clone()),
            Role::Agent(agent) => {
                matches!(agent.cmd, Some(Cmd::Wait(_))).then(|| self.hosts[host].name.clone())
            }
        };
        self.trace
            .note(self.t, host, "push-applied", applied.moves.len() as u64);
        self.checker
            .after_push(self.t, &self.git, &self.truth, &applied, pusher.as_deref());
        if pusher.is_some() && report.outcome == PushOutcome::Accepted {
            self.keys_pushed(host, &plan, &applied);
        }
        if let Some(pusher) = &pusher {
            self.checker.presence_pushed(
                self.t,
                &self.git.store,
                &applied,
                pusher,
                u64::from(incarnation),
                self.heartbeat_ms,
            );
        }
        if fate == Fate::AppliedNoReply {
            report.outcome = PushOutcome::Unknown {
                why: "no reply".into(),
            };
        }
        self.after(
            lat / 2,
            Ev::Deliver {
                host,
                incarnation,
                id,
                completion: Box::new(Completion::Pushed(report)),
            },
        );
    }

    // ---- agents ----------------------------------------------------------------------------

    fn agent_step(&mut self, host: usize) {
        let now = self.hosts[host].clock.local(self.t);
        let Role::Agent(agent) = &mut self.hosts[host].role else {
            return;
        };
        if agent.cmd.is_some() {
            return;
        }
        let next = crate::agent::next(self, host, now);
        if let Some(delay) = next {
            self.after(delay, Ev::AgentStep { host });
        }
        if matches!(&self.hosts[host].role, Role::Agent(agent) if agent.cmd.is_some()) {
            self.settle(host);
        }
    }

    fn agent_finished(&mut self, host: usize) {
        let delay = crate::agent::finished(self, host);
        // `merge --wait` goes on as a runner, in the same command.
        if matches!(&self.hosts[host].role, Role::Agent(agent) if agent.cmd.is_some()) {
            self.settle(host);
        }
        self.after(delay, Ev::AgentStep { host });
    }

    // ---- faults ----------------------------------------------------------------------------

    fn schedule_faults(&mut self, host: usize) {
        let runner = matches!(self.hosts[host].role, Role::Runner { .. });
        let plan: [FaultTimer; 4] = [
            (
                FaultClass::Crash,
                10_000,
                150_000,
                |host| Ev::Crash { host },
                runner,
            ),
            (
                FaultClass::Pause,
                10_000,
                150_000,
                |host| Ev::Pause { host },
                runner,
            ),
            (
                FaultClass::Partition,
                5_000,
                100_000,
                |host| Ev::Partition { host },
                true,
            ),
            (
                FaultClass::Clock,
                10_000,
                150_000,
                |host| Ev::ClockJump { host },
                true,
            ),
        ];
        for (class, lo, hi, make, applies) in plan {
            if applies && self.mix.has(class) {
                let at = self.t + self.fault_rng.range(lo, hi) / self.mix.intensity;
                self.at(at, make(host));
            }
        }
    }

    fn reschedule(&mut self, lo: Millis, hi: Millis, ev: Ev) {
        if !self.healed {
            let delay = self.fault_rng.range(lo, hi) / self.mix.intensity;
            self.after(delay, ev);
        }
    }

    fn crash(&mut self, host: usize) {
        if self.healed {
            return;
        }
        let down = self.fault_rng.range(1_000, 90_000);
        if let Role::Runner {
            machine,
            down_until,
            ..
        } = &mut self.hosts[host].role
            && machine.take().is_some()
        {
            *down_until = Some(self.t + down);
            self.hosts[host].incarnation += 1;
            self.hosts[host].wake = None;
            self.trace.note(self.t, host, "crash", down);
            self.after(down, Ev::Restart { host });
        }
        self.reschedule(30_000, 200_000, Ev::Crash { host });
    }

    fn restart(&mut self, host: usize) {
        let needs = matches!(&self.hosts[host].role, Role::Runner { machine: None, .. });
        if !needs {
            return;
        }
        let clock = self.hosts[host].clock.clone();
        let name = self.hosts[host].name.clone();
        let Some(runner) = self.new_runner(&name, &clock) else {
            // Its keys are refused: it stays down until a person enrols a new one.
            return;
        };
        if let Role::Runner {
            machine,
            down_until,
            restarts,
        } = &mut self.hosts[host].role
        {
            *machine = Some(Box::new(runner));
            *down_until = None;
            *restarts += 1;
        }
        self.trace.note(self.t, host, "restart", 0);
        self.settle(host);
    }

    fn pause(&mut self, host: usize) {
        if self.healed {
            return;
        }
        let length = self.fault_rng.range(self.lease_ms, 3 * self.lease_ms);
        self.hosts[host].paused_until = self.t + length;
        self.trace.note(self.t, host, "pause", length);
        self.reschedule(30_000, 200_000, Ev::Pause { host });
    }

    fn partition(&mut self, host: usize) {
        if self.healed {
            return;
        }
        let length = self.fault_rng.range(2_000, 60_000);
        self.hosts[host].partitioned_until = self.t + length;
        self.trace.note(self.t, host, "partition", length);
        self.reschedule(20_000, 150_000, Ev::Partition { host });
    }

    fn clock_jump(&mut self, host: usize) {
        if self.healed {
            return;
        }
        let delta = self.fault_rng.range(0, 240_000) as i64 - 120_000;
        let t = self.t;
        self.hosts[host].clock.jump(t, delta);
        self.trace
            .note(self.t, host, "clock-jump", delta.unsigned_abs());
        // The pending wake-up was computed on the old clock; compute it again.
        self.hosts[host].wake = None;
        self.settle(host);
        self.reschedule(30_000, 200_000, Ev::ClockJump { host });
    }

    fn outside_push(&mut self) {
        if self.healed {
            return;
        }
        let (path, content) = self.outside_edit();
        let applied = self
            .git
            .remote
            .outside_push(&mut self.git.store, MAIN, &path, &content);
        self.trace.note(self.t, usize::MAX, "outside-push", 0);
        self.checker
            .after_push(self.t, &self.git, &self.truth, &applied, None);
        let next = self.fault_rng.range(20_000, 120_000) / self.mix.intensity;
        self.after(next, Ev::OutsidePush);
    }

    /// What a person pushes to main around bay: an edit to a file agents edit too; now and
    /// then a cap added to a policy that had none, which the runner must then enforce on the
    /// changes already queued under the old policy; or a hold of main put in or taken out.
    fn outside_edit(&mut self) -> (String, String) {
        let main = self.git.remote.get(&refs::main(MAIN)).cloned();
        if self.fault_rng.chance(4) {
            let held = main.as_ref().is_some_and(|main| self.main_held(main));
            let config = if held { "" } else { HOLD };
            return (
                CONFIG_PATH.into(),
                format!("{}{config}", self.plugin_config()),
            );
        }
        let policy = main
            .and_then(|main| self.git.store.read(&main, POLICY_PATH))
            .filter(|policy| !policy.contains("[limits]"))
            .map(str::to_owned);
        match policy {
            Some(policy) if self.fault_rng.chance(250) => {
                let cap = self
                    .fault_rng
                    .pick(&["max_files = 1", "max_added_lines = 3"]);
                (POLICY_PATH.into(), format!("{policy}\n[limits]\n{cap}\n"))
            }
            _ => {
                let path = *self.fault_rng.pick(&PATHS);
                (
                    path.into(),
                    format!("{path} edited outside bay at {}", self.t),
                )
            }
        }
    }

    /// The post checks of the policy at `main`.
    fn post_checks(&self, main: &Oid) -> Vec<PostCheck> {
        self.git
            .store
            .policy(main, POLICY_PATH)
            .and_then(Result::ok)
            .map(|policy| PostCheck::of(&policy))
            .unwrap_or_default()
    }

    /// A producer outside bay runs main's post check on main's tip and records its answer with
    /// the `bay evidence record` machine: a failure now and then, which turns main red on the
    /// check's paths until a pass on a newer merge, or a fix, undo or supersede of the owner.
    fn post_answer(&mut self) {
        if self.healed {
            return;
        }
        let main = self.git.remote.get(&refs::main(MAIN)).cloned();
        let checks = main
            .as_ref()
            .map(|main| self.post_checks(main))
            .unwrap_or_default();
        let commit = main
            .as_ref()
            .and_then(|main| self.git.store.get(main))
            .cloned();
        if let (Some(main), Some(check), Some(commit)) = (main, checks.first(), commit) {
            let failed = self.post_rng.chance(300);
            let base_tree = commit
                .parents
                .first()
                .and_then(|parent| self.git.store.get(parent))
                .map(|parent| parent.tree.clone());
            let input = RecordInput {
                main: MAIN.into(),
                producer: "post-ci".into(),
                producer_key: None,
                reviewer: None,
                reviewer_key: None,
                approver: None,
                approver_key: None,
                check: check.id.clone(),
                environment: check.environment.clone(),
                kind: "check".into(),
                verdict: if failed {
                    CheckVerdict::ProductFailure
                } else {
                    CheckVerdict::Pass
                }
                .as_str()
                .into(),
                why: String::new(),
                version: None,
                inputs: Vec::new(),
                body: None,
                commits: vec![Merged {
                    commit: main,
                    tree: commit.tree.clone(),
                    base_tree,
                }],
            };
            let mut machine = RecordEvidence::new(input, Timestamp(self.t));
            self.git
                .run_command(&mut machine, &mut BTreeMap::new(), Timestamp(self.t));
            let recorded = machine
                .outcome()
                .and_then(|result| result.detail.get("recorded"))
                .and_then(|ids| ids.as_array())
                .is_some_and(|ids| !ids.is_empty());
            if recorded {
                self.checker.post_recorded(self.t, "post-ci");
                *self.post_answers.entry("answers").or_insert(0) += 1;
                if failed {
                    *self.post_answers.entry("failures").or_insert(0) += 1;
                }
                self.trace
                    .note(self.t, usize::MAX, "post-answer", u64::from(failed));
            }
        }
        let next = self.post_rng.range(15_000, 60_000);
        self.after(next, Ev::PostAnswer);
    }

    /// Main's config apart from its holds: the hold plugin, when the seed set one.
    fn plugin_config(&self) -> &'static str {
        if self.plugin.is_some() {
            HOLD_PLUGIN
        } else {
            ""
        }
    }

    /// The hold plugin answers otherwise from now on: clear half the time, else one of the
    /// answers that hold main, until the faults stop.
    fn plugin_flip(&mut self) {
        if self.healed || self.plugin.is_none() {
            return;
        }
        let answer = if self.plugin_rng.chance(500) {
            PluginAnswer::Clear
        } else {
            *self.plugin_rng.pick(&PluginAnswer::ALL[1..])
        };
        self.set_plugin(answer);
        let next = self.plugin_rng.range(10_000, 120_000);
        self.after(next, Ev::PluginFlip);
    }

    fn set_plugin(&mut self, answer: PluginAnswer) {
        self.plugin = Some(answer);
        self.checker.plugin_answers(self.t, answer.holds());
        self.trace
            .note(self.t, usize::MAX, "plugin-flip", u64::from(answer.holds()));
    }

    /// Whether main's config at `main` holds main, as a person left it.
    fn main_held(&self, main: &bay_core::git::Oid) -> bool {
        self.git
            .store
            .read(main, CONFIG_PATH)
            .is_some_and(|config| config.contains("[[hold]]"))
    }

    /// The faults stop: every runner is up, no pause or partition lasts, main's hold (if a
    /// person left one) ends, the hold plugin answers clear, and from now on every submitted operation must end within the
    /// bound.
    fn heal(&mut self) {
        if self.healed {
            return;
        }
        // What a person reads from a stopped runner or a missing main, mended; a chain or a
        // place bay named unreadable stays so, and the healthy changes merge around it.
        self.mend();
        self.heal_keys();
        let main = self.git.remote.get(&refs::main(MAIN)).cloned();
        if self.plugin.is_some() {
            self.set_plugin(PluginAnswer::Clear);
        }
        if main.is_some_and(|main| self.main_held(&main)) {
            let config = self.plugin_config();
            let applied =
                self.git
                    .remote
                    .outside_push(&mut self.git.store, MAIN, CONFIG_PATH, config);
            self.trace.note(self.t, usize::MAX, "outside-push", 0);
            self.checker
                .after_push(self.t, &self.git, &self.truth, &applied, None);
        }
        self.healed = true;
        self.trace.note(self.t, usize::MAX, "heal", 0);
        for host in 0..self.hosts.len() {
            self.hosts[host].paused_until = self.hosts[host].paused_until.min(self.t);
            self.hosts[host].partitioned_until = 0;
            self.restart(host);
        }
        let open = self.checker.open_ops() as u64;
        let future = 3 * self.scenario.agents as u64 + 1;
        self.deadline =
            Some(self.t + per_op_bound_ms(self.interval_ms, self.lease_ms) * (open + future));
    }

    /// Ends the fault phase early once every task has been handed out and every agent is done.
    pub fn maybe_heal(&mut self) {
        if !self.healed && self.tasks_left == 0 {
            self.at(self.t, Ev::Heal);
        }
    }
}
