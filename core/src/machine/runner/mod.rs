//! The runner: takes the head of the queue, claims it, builds the candidate, runs the required
//! checks on that exact tree, and merges it with one atomic push.
//!
//! A runner works in passes. A pass fetches, finds the head of the queue (the lowest queue
//! place whose operation has not ended) and acts on it:
//!
//! - unclaimed: claim it, by appending a claim step leased on the chain's tip;
//! - claimed by this runner (a tip it wrote): take its work up again;
//! - claimed by another: watch the chain's tip, and take over only after it has not moved for
//!   one whole `lease_s` on this runner's own clock.
//!
//! While it holds a claim, the runner renews it every `heartbeat_s` and writes every step with
//! a lease on its own last step, so a runner whose claim was taken over can write nothing more.
//! The merge is one atomic push: main `base -> candidate` (leased on `base`), the merged marker
//! (create-only) and the outcome step (leased on the runner's last step). Whenever a write's
//! fate is unknown, the runner drops what it holds in memory and lets the next pass read the
//! truth from the remote: it never pushes blindly again.

mod ahead;
mod approval;
mod batch;
mod bisect;
mod carry;
mod checks;
mod compaction;
pub mod deps;
mod gap;
mod hold;
mod keys;
mod late;
mod merged;
mod notify;
mod own;
mod pass;
mod presence;
mod red;
mod request;
mod reuse_keys;
mod unmerged;
mod work;

#[cfg(feature = "mutants")]
mod mutant;
#[cfg(feature = "mutants")]
pub use mutant::Mutant;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use super::agent::Nonces;
use super::{Action, ActionId, Deadline, Event, FetchSpec, Machine, Misuse, Outbox, Refs, Wake};
use crate::config::Trailers;
use crate::git::Oid;
use crate::id::{ChangeId, OpId};
use crate::presence::EarlyRun;
use crate::record::{ChangeRecord, Step, StepBody};
use crate::result::BayResult;
use crate::time::Timestamp;

use pass::{Chain, Pass, Place, Watch};
pub use request::UnpushedRequest;
use work::Work;
pub use work::candidate_message;

/// How long a runner keeps going.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunMode {
    /// Pass after pass, for ever (`bay runner run`).
    Loop,
    /// Passes until the queue has nothing this runner can do now (`bay runner run --once`).
    Once,
    /// Only this operation, until it ends (`bay merge --wait`).
    Only(OpId),
}

/// What a runner needs to know. Times are in milliseconds of the runner's own clock. It is
/// plain data, so that a golden trace can name the runner it was recorded with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerConfig {
    /// The runner's name: the `by` of its steps and the producer of its evidence.
    pub runner: String,
    /// Main's branch name.
    pub main: String,
    pub lease_ms: u64,
    pub heartbeat_ms: u64,
    /// Between passes when there is nothing to do.
    pub interval_ms: u64,
    /// Before trying again after a fault.
    pub backoff_ms: u64,
    /// How long past a check's `timeout_s` the runner waits for the driver's answer before it
    /// judges the check `unknown` by itself.
    pub check_grace_ms: u64,
    /// The head's progress deadline, from its first check: the execution budget plus the
    /// publish window. Past it the claim goes back; the third time, `QUEUE_DEADLINE_EXCEEDED`.
    #[serde(default = "default_progress_ms")]
    pub progress_ms: u64,
    /// How many of a candidate's checks run at once (`[runner] parallel_checks`, 1 to 16).
    #[serde(default = "one")]
    pub parallel_checks: u32,
    /// `[policy] evidence_reuse = "exact-inputs"`: reuse a pass recorded on exactly a run's
    /// inputs: signed, under a registry that signs everything; else where the policy at the
    /// base sets `reuse_unsigned` (see `reuse_keys`).
    #[serde(default)]
    pub evidence_reuse: bool,
    /// `[runner] ahead`: how many queued entries behind a head another runner holds this
    /// runner checks early, each on the base the entries ahead of it predict.
    #[serde(default)]
    pub ahead: u32,
    /// `[runner] footprint_lanes`: check a queued entry early on the current main when its
    /// footprint is disjoint from every entry ahead, and carry `footprint = true` passes to a
    /// later candidate of the same operation whose stamp is the same.
    #[serde(default)]
    pub footprint_lanes: bool,
    /// `[runner] batch`: the head's runner checks the head and the entries behind it as one
    /// tree, and merges them in one push (`batch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<crate::config::BatchSettings>,
    /// `[red] window`: how many first-parent main commits judge a red main.
    #[serde(default = "red_window")]
    pub red_window: u32,
    /// `[runner] bisect_post`: with nothing to merge, narrow a red post check's suspect range.
    #[serde(default)]
    pub bisect_post: bool,
    /// How many merged markers a pass lets wait before it compacts them:
    /// [`crate::compact::COMPACT_AT`], or `[retention] ref_budget` when that is lower (the
    /// simulator sets fewer, to compact often).
    #[serde(default = "compact_at")]
    pub compact_at: usize,
    /// `[retention] window_s`: how long an abandoned change keeps its refs (and so its
    /// drafts, which a start may take up again) before a runner compacts it.
    #[serde(default = "retention_ms")]
    pub retention_ms: u64,
    pub trailers: Trailers,
    pub mode: RunMode,
    /// The environments this machine serves; `None` serves every one.
    pub environments: Option<Vec<String>>,
    /// Entropy for step nonces.
    pub nonce_seed: u64,
    /// The host this runner runs on and its bay version, for its presence.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub machine: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// What this runner signs with, once `machine::runner_keys` judged its keys against the
    /// registry: its candidates and merges with the executor key, its evidence with the
    /// producer key. None signs nothing (no registry, or `signing = "approvals"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<crate::trust::record::RunnerSigner>,
    /// The remote's registry signs only approvals (`[policy] signing = "approvals"` at main
    /// when the runner started): what it writes unsigned says `trust: approvals`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approvals_only: bool,
    #[cfg(feature = "mutants")]
    #[serde(skip)]
    pub mutant: Option<Mutant>,
}

impl RunnerConfig {
    /// What an unsigned merge or check refusal of this runner says of its trust.
    pub fn unsigned_trust(&self) -> &'static str {
        if self.approvals_only {
            crate::trust::Trust::Approvals.as_str()
        } else {
            crate::trust::Trust::Unsigned.as_str()
        }
    }

    /// A runner with the spec's default timings (`lease_s` 60, `heartbeat_s` 10, a pass every
    /// 10 seconds).
    pub fn new(
        runner: impl Into<String>,
        main: impl Into<String>,
        nonce_seed: u64,
    ) -> RunnerConfig {
        RunnerConfig {
            runner: runner.into(),
            main: main.into(),
            lease_ms: 60_000,
            heartbeat_ms: 10_000,
            interval_ms: 10_000,
            backoff_ms: 2_000,
            check_grace_ms: 30_000,
            progress_ms: default_progress_ms(),
            parallel_checks: 1,
            evidence_reuse: false,
            ahead: 0,
            footprint_lanes: false,
            batch: None,
            red_window: red_window(),
            bisect_post: false,
            compact_at: compact_at(),
            retention_ms: retention_ms(),
            trailers: Trailers::default(),
            mode: RunMode::Loop,
            environments: None,
            nonce_seed,
            machine: String::new(),
            version: String::new(),
            signer: None,
            approvals_only: false,
            #[cfg(feature = "mutants")]
            mutant: None,
        }
    }

    /// The same runner, set as `.bay/config.toml` on main says: its lease, heartbeat and
    /// progress deadline, how many checks run at once, evidence reuse, the red window, post
    /// bisection, when to compact and the repository's trailer keys. Every runner of a repository, wherever it
    /// runs, takes them the same way.
    pub fn configured(mut self, config: &crate::config::Config) -> RunnerConfig {
        self.lease_ms = config.runner.lease_s.saturating_mul(1000);
        self.heartbeat_ms = config.runner.heartbeat_s.saturating_mul(1000);
        self.progress_ms = config.runner.progress_s().saturating_mul(1000);
        self.parallel_checks = config.runner.parallel_checks;
        self.evidence_reuse = config.evidence_reuse;
        self.ahead = config.runner.ahead;
        self.footprint_lanes = config.runner.footprint_lanes;
        self.batch = config.runner.batch;
        self.red_window = config.red_window();
        self.bisect_post = config.runner.bisect_post;
        self.compact_at = usize::try_from(config.ref_budget)
            .unwrap_or(usize::MAX)
            .min(crate::compact::COMPACT_AT);
        self.retention_ms = config.retention_window_s.saturating_mul(1000);
        self.trailers = config.trailers.clone();
        self
    }
}

fn one() -> u32 {
    1
}

fn red_window() -> u32 {
    crate::red::DEFAULT_WINDOW
}

fn compact_at() -> usize {
    crate::compact::COMPACT_AT
}

fn retention_ms() -> u64 {
    crate::config::Config::default()
        .retention_window_s
        .saturating_mul(1000)
}

/// The spec's default deadline: a 30-minute budget and a 60-second window.
fn default_progress_ms() -> u64 {
    crate::config::RunnerSettings::default()
        .progress_s()
        .saturating_mul(1000)
}

/// What a caller already knows of the remote, handed to a new runner so that its first pass
/// reads nothing it knows: `merge --wait` hands over the view its request was made on. Every
/// write is leased, so a view that went stale costs a refused push and a fresh pass, never
/// safety.
#[derive(Clone, Debug)]
pub struct Seed {
    pub refs: Refs,
    /// One change whose chain the caller read, oldest step first, each with its commit.
    pub change: ChangeId,
    pub chain: Vec<(Oid, Step)>,
    /// Main's config as the caller read it at the main in `refs`, when it did: the runner
    /// then knows main's holds without reading them again.
    pub config: Option<crate::config::Config>,
    /// The runner whose log and evidence tips `refs` holds as the caller fetched them
    /// ([`refs::runner_patterns`]): a runner of that name need not fetch them.
    pub tips_of: Option<String>,
    /// The request the caller wrote and did not push, for this runner's first write to carry;
    /// `refs` and `chain` hold it as if it were up.
    pub request: Option<UnpushedRequest>,
    /// `.bay/policy.toml` as the caller read it at a commit (`None` when absent there): a
    /// candidate built on that commit takes it without reading it again.
    pub policy: Option<(Oid, Option<Vec<u8>>)>,
}

/// What each action in flight was for.
#[derive(Clone, Debug)]
enum Purpose {
    Fetch(FetchSpec),
    FetchChains(FetchSpec),
    ReadPlaces,
    ReadChains,
    /// The compacted records of changes live operations name.
    ReadCompacted,
    /// Main's config at `main`, for its holds.
    ReadConfig {
        main: Oid,
        then: hold::Then,
    },
    /// The hold plugin, asked whether main is held now.
    AskHold {
        then: hold::Ask,
    },
    /// The notify plugin, handed an event this runner wrote. Delivered or lost, it is never
    /// sent again; it outlives the work and the runner's own end, which waits for it.
    Notify,
    /// An action of a bisect of a red post check.
    Bisect(bisect::Purpose),
    /// An action of checking queued entries early (`[runner] ahead`).
    Ahead(ahead::Purpose),
    /// An action of a compaction of merged changes into the index.
    Compact(compaction::Purpose),
    /// This runner's presence, pushed. Like a notice it outlives the work, and a runner that
    /// finishes waits for it.
    Presence,
    /// A `Culprit` step a batch's bisection wrote on another change's chain: like a notice it
    /// outlives the batch, and whether it landed changes nothing here.
    Culprit,
    /// The presence an earlier run of this runner left, read once.
    PresenceRead,
    /// The tips of this runner's own log and evidence notes, to know they are commits.
    OwnTips,

    /// An action of the current work.
    Work(work::Purpose),
    /// An action of the batch in hand.
    Batch(batch::Purpose),
}

impl Purpose {
    /// A push or plugin run that outlives the work it came from: nothing waits on its answer,
    /// and a runner that finishes waits for it.
    fn is_notice(&self) -> bool {
        matches!(self, Purpose::Notify | Purpose::Presence | Purpose::Culprit)
    }
}

/// Where the runner is, with what that stage alone holds.
#[derive(Debug)]
enum Stage {
    /// Waiting for the next pass, which starts at `next_pass`.
    Idle { next_pass: Timestamp },
    /// A pass is reading the remote, with what it has done so far.
    Passing(Pass),
    /// Working a claimed operation (see `work`). A step of the work takes it out of the stage
    /// and places the runner again (`work::Placed`).
    Working(Box<Work>),
    /// Reading main's tree and policy, before a batch forms (see `batch`).
    Forming(Box<batch::Forming>),
    /// Checking the head and the entries behind it as one tree (see `batch`).
    Batching(Box<batch::Batch>),
    /// Done (`Once` or `Only` modes), with this result once every notice and presence in
    /// flight is done.
    Finishing(BayResult),
    /// Done, with this result.
    Done(BayResult),
}

/// One runner. See the module documentation for what it does, and [`Machine`] for how to
/// drive it.
#[derive(Debug)]
pub struct Runner {
    cfg: RunnerConfig,
    out: Outbox<Purpose>,
    now: Timestamp,
    nonces: Nonces,
    stage: Stage,
    /// The remote's refs as of the last fetch.
    refs: Refs,
    /// Queue places read so far, by sequence number.
    places: BTreeMap<u64, Place>,
    /// Chains read so far, by change.
    chains: BTreeMap<ChangeId, Chain>,
    /// Every queue place at or below this one has ended; passes start above it.
    floor: u64,
    /// The last request's step (`refs/bay/queue/last`) as last read, with its place's number
    /// (`None` when that step names no request): how far the queue this runner read reaches.
    last_request: Option<(Oid, Option<u64>)>,
    watch: Option<Watch>,
    /// Chain tips this runner wrote for the claim it may still hold: the pass that finds one
    /// of them at the tip takes the work up again.
    mine: Option<(ChangeId, BTreeSet<Oid>)>,
    /// A change whose chain came with a seed: the first pass does not fetch it.
    seeded: Option<ChangeId>,
    /// Merges this runner pushed and saw accepted, for reports.
    merged: u64,
    /// The latest early runs on queued entries (`[runner] ahead`, `footprint_lanes`) whose
    /// records went up, oldest first, at most `EARLY_RUNS_LISTED`: the presence lists them,
    /// and a `--once` run's report.
    prechecks: VecDeque<EarlyRun>,
    /// Operations that wait for an approval, each with the evidence tips (other than this
    /// runner's own) it was last judged on: a pass passes one over until they move.
    awaiting: BTreeMap<OpId, Vec<(String, Oid)>>,
    /// The base runs of `baseline = "base"` checks on one base tree, so that each runs once:
    /// per (check, environment), the units that failed there, or `None` when the base run
    /// gave no verdict to compare with.
    baselines: Option<(Oid, work::Baselines)>,
    /// The holds main's config says of at one main commit, read once per commit.
    holds: Option<(Oid, Result<crate::config::Config, String>)>,
    /// A request handed over unpushed, until a write carrying it lands (see `request`).
    request: request::Handover,
    /// The policy a seed brought, at its commit, until the first candidate takes it.
    seed_policy: Option<(Oid, Option<Vec<u8>>)>,
    /// Whether `refs` holds the tips of this runner's log and evidence notes as the remote has
    /// them: a check's record appends to the notes, and the push that ends an operation to the
    /// log, each leased on that tip. Fetched once (by the first pass, and again after a push
    /// whose fate is unknown), then followed through this runner's own pushes, so an idle pass
    /// never reads a log. (A pass fetches every producer's notes anyway.)
    tips_known: bool,
    /// Whether `refs` holds this runner's presence tip as the remote has it: fetched by the
    /// first pass and after a presence push that did not go through, then followed through
    /// this runner's own pushes, so a pass fetches nothing more for it.
    presence_known: bool,
    /// When this runner last pushed its presence, on its own clock, or an earlier run of it
    /// did: at most once per heartbeat.
    last_presence: presence::Last,
    /// Whether main may be gone: a fetch failed since main was last seen. A pass then fetches
    /// main by a pattern that says whether it is there (see `main_pattern`).
    main_in_doubt: bool,
    /// The tips of its own log and evidence notes this runner knows are commits, which it can
    /// append to (see `own`).
    own_commits: own::Known,
    /// The registry tip whose `executor` file last enrolled the key of a candidate this
    /// runner was about to merge: the same tip fetched again needs no read.
    keys_seen: Option<Oid>,
    /// The registry as reuse judged it last, with its tip (see `reuse_keys`).
    reuse_keys: reuse_keys::Judged,
    /// When each producer's evidence notes last moved, as this runner saw it: whom early runs
    /// are split with (`ahead::Peers`).
    peers: ahead::Peers,
    /// The registry no longer enrols this runner's executor key (`REGISTRY_CHANGED`): it
    /// claims nothing more until it starts again with a key the registry enrols.
    withdrawn: bool,
    /// What batches are judged by: the recent failure rate and the culprits found.
    memory: batch::Memory,
}

impl Runner {
    /// A runner that starts its first pass at `now`.
    pub fn new(cfg: RunnerConfig, now: Timestamp) -> Runner {
        let nonces = Nonces::new(cfg.nonce_seed);
        Runner {
            cfg,
            out: Outbox::default(),
            now,
            nonces,
            stage: Stage::Idle { next_pass: now },
            refs: Refs::new(),
            places: BTreeMap::new(),
            chains: BTreeMap::new(),
            floor: 0,
            last_request: None,
            watch: None,
            mine: None,
            seeded: None,
            merged: 0,
            prechecks: VecDeque::new(),
            awaiting: BTreeMap::new(),
            baselines: None,
            holds: None,
            request: request::Handover::None,
            seed_policy: None,
            tips_known: false,
            presence_known: false,
            last_presence: presence::Last::Unread,
            main_in_doubt: false,
            own_commits: own::Known::new(),
            keys_seen: None,
            reuse_keys: None,
            peers: ahead::Peers::default(),
            withdrawn: false,
            memory: batch::Memory::default(),
        }
    }

    /// A runner whose first pass starts from `seed` instead of the remote.
    pub fn seeded(cfg: RunnerConfig, now: Timestamp, seed: Seed) -> Runner {
        let mut runner = Runner::new(cfg, now);
        if let (Some(config), Some(main)) = (seed.config, seed.refs.get(&runner.main_ref())) {
            runner.holds = Some((main.clone(), Ok(config)));
        }
        runner.refs = seed.refs;
        runner.tips_known = seed.tips_of.as_deref() == Some(runner.cfg.runner.as_str());
        runner.request = request::Handover::of(seed.request);
        runner.seed_policy = seed.policy;
        if let Some((tip, _)) = seed.chain.last() {
            let steps: Vec<Step> = seed.chain.iter().map(|(_, step)| step.clone()).collect();
            let record = ChangeRecord::fold(&steps).map_err(|e| e.to_string());
            // The places whose request is in the chain need no read.
            for (oid, step) in &seed.chain {
                if let StepBody::Request { op, seq, .. } = &step.body
                    && runner.refs.get(&crate::git::refs::queue(*seq)) == Some(oid)
                {
                    runner.places.insert(
                        *seq,
                        Place {
                            oid: oid.clone(),
                            op: Ok(op.clone()),
                        },
                    );
                }
            }
            runner.chains.insert(
                seed.change.clone(),
                Chain {
                    tip: tip.clone(),
                    steps: seed.chain,
                    record,
                },
            );
            runner.seeded = Some(seed.change);
        }
        runner
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.cfg
    }

    /// How many merges this runner saw accepted.
    pub fn merges(&self) -> u64 {
        self.merged
    }

    /// The operation this runner is working, if any.
    pub fn working_on(&self) -> Option<&OpId> {
        match &self.stage {
            Stage::Batching(batch) => Some(batch.op()),
            Stage::Forming(forming) => Some(forming.op()),
            _ => self.work().map(|w| &w.op),
        }
    }

    /// The work in hand, while working.
    fn work(&self) -> Option<&Work> {
        match &self.stage {
            Stage::Working(work) => Some(work),
            _ => None,
        }
    }

    /// What the pass under way has done so far, while one is.
    fn pass(&self) -> Option<&Pass> {
        match &self.stage {
            Stage::Passing(pass) => Some(pass),
            _ => None,
        }
    }

    fn pass_mut(&mut self) -> Option<&mut Pass> {
        match &mut self.stage {
            Stage::Passing(pass) => Some(pass),
            _ => None,
        }
    }

    /// Whether the runner is done, or done once its notices are.
    fn done(&self) -> bool {
        matches!(self.stage, Stage::Finishing(_) | Stage::Done(_))
    }

    /// A step by this runner, with a fresh nonce.
    fn step(&mut self, change: &ChangeId, body: StepBody) -> Step {
        self.nonces.step(change, self.now, &self.cfg.runner, body)
    }

    fn main_ref(&self) -> String {
        crate::git::refs::main(&self.cfg.main)
    }

    /// How a fetch names main: exactly, which fails the fetch when main is gone; or, when a
    /// fetch failed since main was last seen (`main_in_doubt`), and to learn why a write was
    /// refused, with a `*`, which says whether main is there. That pattern may bring other
    /// branches whose names start with main's too: only then, and only their refs, which the
    /// runner never reads.
    fn main_pattern(&self, in_doubt: bool) -> String {
        let main = self.main_ref();
        if in_doubt { format!("{main}*") } else { main }
    }

    /// Main is gone from the remote: nothing can merge until someone pushes it back. A loop
    /// runner looks again after a while; a run that ends (`--once`, `merge --wait`) ends now,
    /// naming main, rather than wait for it.
    fn main_gone(&mut self) {
        if self.cfg.mode == RunMode::Loop {
            let backoff = self.cfg.backoff_ms;
            return self.rest(backoff);
        }
        let name = self.main_ref();
        let mut result = crate::report::failed(
            format!("main ({name}) is gone from the remote, so nothing can be added to it"),
            None,
        );
        result
            .detail
            .insert("ref".into(), serde_json::Value::from(name.clone()));
        result.detail.insert(
            "hint".into(),
            serde_json::Value::from(format!(
                "push main back to {name} on the remote; the queue waits for it, and runners \
                 take it up again"
            )),
        );
        self.finish(result);
    }

    /// Schedules the next pass `after_ms` from now and rests.
    fn rest(&mut self, after_ms: u64) {
        if self.done() {
            return;
        }
        self.stage = Stage::Idle {
            next_pass: self.now.plus_millis(after_ms),
        };
    }

    /// Ends the runner with `result`, once every notice it handed the notify plugin is done.
    fn finish(&mut self, result: BayResult) {
        self.request.end();
        self.forget_all_but_notices();
        self.stage = if self.notices_in_flight() {
            Stage::Finishing(result)
        } else {
            Stage::Done(result)
        };
    }

    fn forget_all_but_notices(&mut self) {
        self.out.forget_all_but(Purpose::is_notice);
    }

    fn notices_in_flight(&self) -> bool {
        self.out.in_flight().any(Purpose::is_notice)
    }

    /// A culprit's step went up, or did not: nothing is retried.
    fn on_culprit_noted(&mut self, completion: crate::machine::Completion) -> Result<(), Misuse> {
        let crate::machine::Completion::Pushed(_) = completion else {
            return Err(Misuse(
                "a culprit's push answered with another completion".into(),
            ));
        };
        self.end_if_finishing();
        Ok(())
    }

    /// A notice is done, delivered or lost: nothing is retried. The last one lets a runner
    /// that finished meanwhile end.
    fn on_notified(&mut self, completion: crate::machine::Completion) -> Result<(), Misuse> {
        let crate::machine::Completion::PluginExited(_) = completion else {
            return Err(Misuse(
                "a notify plugin run answered with another completion".into(),
            ));
        };
        self.end_if_finishing();
        Ok(())
    }

    /// A runner that finished while notices or a presence were in flight ends with the last.
    fn end_if_finishing(&mut self) {
        if self.notices_in_flight() {
            return;
        }
        let placeholder = Stage::Idle {
            next_pass: self.now,
        };
        self.stage = match std::mem::replace(&mut self.stage, placeholder) {
            Stage::Finishing(result) => Stage::Done(result),
            stage => stage,
        };
    }

    /// The record of `change` as last read, if it is readable.
    fn record(&self, change: &ChangeId) -> Option<&ChangeRecord> {
        self.chains
            .get(change)
            .and_then(|chain| chain.record.as_ref().ok())
    }
}

impl Machine for Runner {
    fn handle(&mut self, now: Timestamp, event: Event) -> Result<(), Misuse> {
        self.now = now;
        match event {
            Event::Tick => self.on_tick(),
            Event::Done(id, completion) => {
                let Some(purpose) = self.out.complete(id)? else {
                    return Ok(());
                };
                match purpose {
                    Purpose::Fetch(spec) => self.on_fetched(spec, completion)?,
                    Purpose::FetchChains(spec) => self.on_chains_fetched(spec, completion)?,
                    Purpose::ReadPlaces => self.on_places(completion)?,
                    Purpose::ReadChains => self.on_chains(completion)?,
                    Purpose::ReadCompacted => self.on_compacted(completion)?,
                    Purpose::ReadConfig { main, then } => self.on_config(main, then, completion)?,
                    Purpose::AskHold { then } => self.on_hold_answer(id, then, completion)?,
                    Purpose::Notify => self.on_notified(completion)?,
                    Purpose::Bisect(purpose) => self.on_bisect(purpose, completion)?,
                    Purpose::Ahead(purpose) => self.on_ahead(purpose, completion)?,
                    Purpose::Compact(purpose) => self.on_compaction(purpose, completion)?,
                    Purpose::Presence => self.on_presence(completion)?,
                    Purpose::Culprit => self.on_culprit_noted(completion)?,
                    Purpose::PresenceRead => self.on_earlier_presence(completion)?,
                    Purpose::OwnTips => self.on_own_tips(completion)?,

                    Purpose::Work(purpose) => self.on_work(id, purpose, completion)?,
                    Purpose::Batch(purpose) => self.on_batching(purpose, completion)?,
                }
            }
        }
        Ok(())
    }

    fn poll_action(&mut self) -> Option<(ActionId, Action)> {
        self.out.poll()
    }

    fn poll_timeout(&self) -> Option<Deadline> {
        match &self.stage {
            Stage::Idle { next_pass } => Some(Deadline {
                at: *next_pass,
                why: self.idle_reason(*next_pass),
            }),
            Stage::Working(work) => work.deadline(),
            Stage::Batching(batch) => batch.deadline(),
            Stage::Forming(_) => None,
            Stage::Passing(pass) => match (&pass.bisect, &pass.ahead) {
                (bisect::Bisecting::Running(at), _) | (_, ahead::Ahead::Running(at)) => {
                    Some(Deadline {
                        at: *at,
                        why: Wake::CheckDeadline,
                    })
                }
                _ => None,
            },
            Stage::Finishing(_) | Stage::Done(_) => None,
        }
    }

    fn outcome(&self) -> Option<&BayResult> {
        match &self.stage {
            Stage::Done(result) => Some(result),
            _ => None,
        }
    }
}

impl Runner {
    fn on_tick(&mut self) {
        match self.stage {
            Stage::Idle { next_pass } if self.now >= next_pass => self.start_pass(),
            Stage::Working(_) => self.work_tick(),
            Stage::Batching(_) => self.batch_tick(),
            Stage::Passing(_) => {
                self.bisect_tick();
                self.ahead_tick();
            }
            _ => {}
        }
    }

    fn idle_reason(&self, next_pass: Timestamp) -> Wake {
        match &self.watch {
            Some(watch) if watch.expires(self.cfg.lease_ms) <= next_pass => Wake::LeaseWatch,
            _ => Wake::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_takes_its_settings_from_the_config_on_main() {
        let config = crate::config::Config::parse(
            "[runner]\nlease_s = 3\nheartbeat_s = 1\nexecution_budget_s = 40\npublish_window_s = 5\n\
             parallel_checks = 4\nbisect_post = true\n\n[policy]\nevidence_reuse = \"exact-inputs\"\n\n\
             [red]\nwindow = 7\n\n[trailers]\nintent = \"Why\"\nactor = \"Who\"\n",
        )
        .expect("a valid config");
        let cfg = RunnerConfig::new("r", "main", 1).configured(&config);
        assert_eq!(
            (cfg.lease_ms, cfg.heartbeat_ms, cfg.progress_ms),
            (3_000, 1_000, 45_000)
        );
        assert_eq!((cfg.parallel_checks, cfg.red_window), (4, 7));
        assert!(cfg.evidence_reuse && cfg.bisect_post);
        assert_eq!(
            (cfg.trailers.intent.as_str(), cfg.trailers.actor.as_str()),
            ("Why", "Who")
        );
        // What the config does not set keeps its default.
        let plain = RunnerConfig::new("r", "main", 1)
            .configured(&crate::config::Config::parse("").expect("an empty config"));
        assert_eq!(plain, RunnerConfig::new("r", "main", 1));
    }
}
