//! `bay status [<change>]`: what a change's operation is doing, or what the queue holds.
//! It reads the remote and writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};

use super::agent::{fold_chain, fold_one, holds, on_main};
use super::completion_read::{CompletionRead, CompletionStep};
use super::red_read::{RedRead, RedStep};
use super::since::{not_linear_warnings, unattributed};
use super::unreadable::Unreadable;
use super::{
    Action, ChainQuery, ChainRead, Completion, Fault, FetchSpec, Outbox, PluginExit, RawStep, Refs,
    unreadable,
};
use crate::check::plan::{POLICY_PATH, parse_policy};
use crate::config::{CONFIG_PATH, Config, Held, MainHold, hold_on};
use crate::detail::{Detail, Unread};
use crate::event::BayEvent;
use crate::flow::{FLOW_CHAINS, FLOW_EVENTS, FLOW_LOGS, TIMED_WINDOW_MS};
use crate::git::{Oid, refs};
use crate::id::{ChangeId, OpId};
use crate::machine::runner::deps::{Waiting, dependency, waiting};
use crate::policy::Signing;
use crate::presence::{Judged, PRESENCES_READ, Presence, judge, no_live_runner};
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Step};
use crate::report;
use crate::result::{BayResult, Decision, OpState};
use crate::time::Timestamp;
use crate::trust::record::{Keys, Trust};
use crate::trust::registry::{REF as REGISTRY, RegistryCommit, judge_chain};

/// How many of the newest queue places a status without a change reads.
pub const RECENT_PLACES: usize = 50;

#[derive(Clone, Debug)]
pub struct StatusInput {
    /// The change to report on; `None` reports the queue.
    pub change: Option<ChangeId>,
    pub main: String,
    /// Whether the result ends with `detail.flow` (and, for a merged change,
    /// `detail.completion`): `bay status` shows them, while a command that only watches one
    /// operation end (`bay merge` waiting on another runner) leaves out reads it would not
    /// show.
    pub flow: bool,
}

#[derive(Clone, Debug)]
enum Purpose {
    /// The index shards this clone already holds: those of the change and of its undos join
    /// the first fetch, which then brings only what they gained since.
    Held,
    Fetch,
    /// The requests the newest queue places hold: each place and its value.
    ReadPlaces(Vec<(u64, Oid)>),
    FetchChains(FetchSpec),
    ReadChains,
    /// The one change asked about, gone from the refs: the index shards that hold its
    /// compacted chain and its undos' latest compacted generation, in one fetch; then its
    /// chain's file at its shard's tip.
    FetchCompacted(ChangeId, FetchSpec),
    ReadCompactedChain(ChangeId, Oid),
    /// Whether main still holds a merged change's merge.
    OnMain(Box<ChangeRecord>),
    /// Main's config, for a hold that keeps the change's live operation waiting.
    ReadConfig(Box<ChangeRecord>),
    /// The hold plugin main's config sets, asked whether main is held now, for the result made
    /// so far.
    AskHold(Box<ChangeRecord>, Box<BayResult>),
    /// The changes its live operation waits for with `--after`: their markers and chains.
    FetchAfter(Box<ChangeRecord>, FetchSpec),
    /// Those of them gone from the refs, as the index they were compacted into holds them.
    CompactedAfter(Box<ChangeRecord>),
    /// The index shard of the change's undos, fetched for the result so far when the chain's
    /// own fetch did not bring it; then its record of their latest compacted generation.
    FetchUndoShard(Box<BayResult>, FetchSpec),
    CompactedUndo(Box<BayResult>),
    ReadAfter(Box<ChangeRecord>),
    /// The operation's draft test-merged onto main, for the result made so far.
    TestMerge(Box<BayResult>),
    /// A merged change's undos: the start steps of their intent's generations, then the
    /// markers of their changes (`detail.undone_by` of the result made so far).
    ReadUndos(Box<BayResult>),
    FetchUndone(Box<BayResult>, Vec<ChangeId>, FetchSpec),
    /// The presences of runners the fetch brought, then when this clone first held each: the
    /// `no_live_runner` warning of the result made so far.
    Presences(Box<BayResult>),
    Seen(Box<BayResult>, Vec<RawStep>),
    /// Main's red, read for the result made so far (`detail.red`, `detail.red_pending`).
    Red(Box<(BayResult, RedRead)>),
    /// Main's config, for `[red] window`, then the commit that added it, then main's newest
    /// commits after it: `detail.unattributed` of the result made so far.
    Window(Box<BayResult>),
    Added(Box<BayResult>, u32),
    Unattributed(Box<BayResult>, u32),
    /// The change chains this clone holds, then their records: `detail.flow` of the result
    /// made so far.
    FlowHeld(Box<BayResult>),
    FlowLogs(Box<FlowRead>),
    FlowLog(Box<FlowRead>),
    FlowChains(Box<FlowRead>),
    /// A merged change's merge commit raw, then the policy at its base (`[policy] signing`),
    /// then the registry: `detail.trust` of the result made so far (`trust::record`).
    TrustCommit(Box<BayResult>),
    TrustPolicy(Box<BayResult>, String),
    TrustRegistry(Box<BayResult>, String, Signing),
    /// A merged change's completion, read for the result made so far (`detail.completion`).
    Completion(Box<(BayResult, CompletionRead)>),
}

/// A result on its way to `detail.flow`, with what is read so far: the chains to read, the
/// logs still to read, and the ends read from logs.
#[derive(Clone, Debug)]
struct FlowRead {
    result: BayResult,
    chains: Vec<ChainQuery>,
    logs: Vec<Oid>,
    ends: Vec<BayEvent>,
}

/// The `bay status` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Status {
    input: StatusInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    remote: Refs,
    /// What the change's live operation waits for with `--after`, once read.
    waits: Option<Option<Waiting>>,
    /// Whether main's commits outside bay were read for the result.
    unattributed_read: bool,
    /// Main's commits in the red window, as the unattributed read found them: the merges
    /// `detail.flakes` counts.
    window: Option<BTreeSet<Oid>>,
    /// How many operations the status found waiting: live ones among the queue places it
    /// read, or the change's own.
    waiting: u64,
    /// Whether the runners' presences were judged for the result.
    presences_read: bool,
    /// The newest queue places' operations, by change, with each place.
    requests: BTreeMap<ChangeId, (u64, OpId)>,
    /// The places and changes of the queue that bay cannot read, as `machine::unreadable`
    /// names them.
    unreadable: Vec<Unreadable>,
    /// The records of changes its operation names, read from the index.
    compacted_after: Vec<ChainRead>,
    /// The latest undo of the change compacted into the index, once read.
    compacted_undo: Option<Option<ChangeId>>,
    /// The index shards this command's fetches named: `remote` holds each as the remote had
    /// it (absent there: the remote has none).
    fetched_shards: BTreeSet<String>,
    /// `[agent] max_live_changes` in main's policy: each actor's limit in `detail.flow`.
    limit: Option<u64>,
    /// The merge of a merged change still on main, until its completion is read.
    merged: Option<Oid>,
    outcome: Option<BayResult>,
}

impl Status {
    /// The live changes one actor may hold, as main's policy says (`[agent]
    /// max_live_changes`), for each actor's row of `detail.flow`.
    pub fn limited(&mut self, max_live_changes: Option<u64>) {
        self.limit = max_live_changes;
    }

    pub fn new(input: StatusInput, now: Timestamp) -> Status {
        let mut status = Status {
            input,
            out: Outbox::default(),
            now,
            remote: Refs::new(),
            waits: None,
            unattributed_read: false,
            window: None,
            waiting: 0,
            presences_read: false,
            requests: BTreeMap::new(),
            unreadable: Vec::new(),
            compacted_after: Vec::new(),
            compacted_undo: None,
            fetched_shards: BTreeSet::new(),
            limit: None,
            merged: None,
            outcome: None,
        };
        match &status.input.change {
            // A clone that asked about a compacted change before holds its shards: fetched
            // with the rest, they cost what they gained since, not a fetch of their own.
            Some(_) => {
                let held = Action::ReadHeld {
                    prefix: refs::INDEX.into(),
                    limit: refs::INDEX_SHARDS,
                };
                status.out.send(held, Purpose::Held);
            }
            None => status.fetch(Vec::new()),
        }
        status
    }

    /// The change's shard and its undos' shard, as far as this clone holds them. What it
    /// holds only shapes the fetches: a read it cannot make fetches both later.
    fn on_held(&mut self, held: Result<Refs, Fault>) {
        let held = held.unwrap_or_default();
        let shards = self
            .input
            .change
            .iter()
            .flat_map(|change| {
                [
                    refs::index_of_change(change),
                    refs::index_of_intent(&undo_digest(change)),
                ]
            })
            .filter(|shard| held.contains_key(shard))
            .collect();
        self.fetch(shards);
    }

    /// The first fetch: main and the queue, and the change's refs with `shards`.
    fn fetch(&mut self, shards: Vec<String>) {
        // A change's live operation is judged with its queue place, so both read the queue.
        let mut patterns = vec![
            refs::main(&self.input.main),
            refs::QUEUE_PATTERN.to_string(),
        ];
        if let Some(change) = &self.input.change {
            patterns.push(refs::change_pattern(change));
            // Its undos, should it have merged: the generations of their one intent.
            patterns.push(refs::intents_pattern(&undo_digest(change)));
            // The key registry, should the change have merged: its merge's trust.
            patterns.push(crate::trust::registry::fetch_pattern());
        }
        if self.input.flow {
            // Plain `bay status` judges whether a runner runs, from the same fetch.
            patterns.push(refs::EXECUTOR_PATTERN.to_string());
            // And each machine's live summary, for `bay start` (`CHANGE_HELD`) and the
            // fleet map: one ref per machine.
            patterns.push(refs::LIVE_PATTERN.to_string());
        }
        patterns.extend(shards.iter().map(|shard| refs::index_pattern(shard)));
        self.fetched_shards.extend(shards);
        self.out
            .send(Action::Fetch(FetchSpec::new(patterns)), Purpose::Fetch);
    }

    /// Warns `no_live_runner` when operations wait and no runner is fresh, then adds what
    /// main's post checks say (`detail.red`, `detail.red_pending`), then ends.
    fn finish(&mut self, result: BayResult) {
        if self.input.flow && !self.presences_read && result.decision != Decision::Failed {
            self.presences_read = true;
            if self.waiting > 0 {
                return self.read_presences(result);
            }
        }
        match self.remote.get(&refs::main(&self.input.main)).cloned() {
            Some(main) => {
                let (reader, read) = RedRead::start(main);
                self.out
                    .send(read, Purpose::Red(Box::new((result, reader))));
            }
            None => self.conclude(result),
        }
    }

    /// Reads the first [`PRESENCES_READ`] presences the fetch brought, by runner name (none
    /// read when none came).
    fn read_presences(&mut self, result: BayResult) {
        let oids: Vec<Oid> = self.presences().into_iter().map(|(_, oid)| oid).collect();
        if oids.is_empty() {
            return self.with_presences(result, &[], &BTreeMap::new());
        }
        self.out.send(
            Action::ReadSteps { oids },
            Purpose::Presences(Box::new(result)),
        );
    }

    /// The presences the fetch brought, by runner, at most [`PRESENCES_READ`].
    fn presences(&self) -> Vec<(String, Oid)> {
        self.remote
            .iter()
            .filter_map(|(name, oid)| Some((refs::parse_executor(name)?.to_string(), oid.clone())))
            .take(PRESENCES_READ)
            .collect()
    }

    fn on_presences(&mut self, result: BayResult, read: Vec<RawStep>) {
        let names = self
            .presences()
            .into_iter()
            .map(|(runner, _)| refs::executor(&runner))
            .collect();
        self.out.send(
            Action::ReadSeen { names },
            Purpose::Seen(Box::new(result), read),
        );
    }

    /// Judges each presence on this clone's clock, from when this clone first held it, and
    /// warns when operations wait and none is fresh. The warning refuses nothing. The early
    /// runs the presences list of the change's own operation are its `prechecks`.
    fn with_presences(
        &mut self,
        mut result: BayResult,
        read: &[RawStep],
        seen: &BTreeMap<String, Timestamp>,
    ) {
        let presences: Vec<(String, Result<Presence, String>)> = self
            .presences()
            .into_iter()
            .map(|(runner, oid)| {
                let presence = read
                    .iter()
                    .find(|raw| raw.oid == oid)
                    .ok_or_else(|| "its commit could not be read".to_string())
                    .and_then(|raw| Presence::from_message(&raw.message));
                (runner, presence)
            })
            .collect();
        let judged: Vec<Judged> = presences
            .iter()
            .map(|(runner, presence)| {
                let first_seen = seen.get(&refs::executor(runner)).copied();
                judge(runner, presence, first_seen, self.now)
            })
            .collect();
        if let Some(warning) = no_live_runner(self.waiting, &judged) {
            add_warnings(&mut result, vec![warning.to_json()]);
        }
        list_prechecks(&mut result, &presences);
        self.finish(result);
    }

    fn conclude(&mut self, result: BayResult) {
        let main = self.remote.get(&refs::main(&self.input.main)).cloned();
        match main {
            Some(commit) if !self.unattributed_read && result.decision != Decision::Failed => {
                self.unattributed_read = true;
                let read = Action::ReadFile {
                    commit,
                    path: CONFIG_PATH.into(),
                };
                self.out.send(read, Purpose::Window(Box::new(result)));
            }
            _ => self.read_flow(result),
        }
    }

    /// Reads the flow of work from the change chains and runner logs this clone's fetches
    /// brought (the newest [`FLOW_CHAINS`] chains, the newest [`FLOW_EVENTS`] events of the
    /// newest [`FLOW_LOGS`] logs), never fetching more: the flow costs a status no network,
    /// and no more however many changes the remote holds. A failed status shows none.
    fn read_flow(&mut self, result: BayResult) {
        if !self.input.flow || result.decision == Decision::Failed {
            return self.end(result);
        }
        let read = Action::ReadHeld {
            prefix: refs::CHANGES.into(),
            limit: FLOW_CHAINS,
        };
        self.out.send(read, Purpose::FlowHeld(Box::new(result)));
    }

    /// The chains held; then the logs held.
    fn on_flow_held(&mut self, result: BayResult, held: Refs) {
        let chains: Vec<ChainQuery> = held
            .iter()
            .filter_map(|(name, tip)| ChainQuery::of_ref(name, tip))
            .collect();
        let flow = FlowRead {
            result,
            chains,
            logs: Vec::new(),
            ends: Vec::new(),
        };
        let read = Action::ReadHeld {
            prefix: refs::LOG.into(),
            limit: FLOW_LOGS,
        };
        self.out.send(read, Purpose::FlowLogs(Box::new(flow)));
    }

    /// Reads the next log's newest events, one log at a time; then the chains.
    fn next_flow_read(&mut self, mut flow: FlowRead) {
        if let Some(tip) = flow.logs.pop() {
            // Events older than the flow's longest window change no figure it shows.
            let read = Action::ReadLog {
                range: Some(tip.to_string()),
                limit: FLOW_EVENTS,
                since: Some(self.now.minus_millis(TIMED_WINDOW_MS)),
            };
            self.out.send(read, Purpose::FlowLog(Box::new(flow)));
            return;
        }
        if flow.chains.is_empty() {
            return self.with_flow(flow, Ok(Vec::new()));
        }
        let chains = std::mem::take(&mut flow.chains);
        self.out.send(
            Action::ReadChains { chains },
            Purpose::FlowChains(Box::new(flow)),
        );
    }

    /// The ends a log reports; a commit that is no event is no end.
    fn on_flow_log(&mut self, mut flow: FlowRead, events: Vec<RawStep>) {
        flow.ends.extend(
            events
                .iter()
                .filter_map(|raw| BayEvent::from_message(&raw.message).ok())
                .filter(|event| event.kind.end_state().is_some()),
        );
        self.next_flow_read(flow);
    }

    /// `detail.flow` from the chains read (a chain that does not fold is left out, as the
    /// queue's rows leave it out) and the logs' ends, or `{unread}` with the reason.
    fn with_flow(&mut self, flow: FlowRead, reads: Result<Vec<ChainRead>, Fault>) {
        let mut flakes = None;
        let value = match reads {
            Ok(reads) => {
                let records: Vec<ChangeRecord> = reads
                    .iter()
                    .filter_map(|read| crate::compact::fold(read).ok())
                    .collect();
                flakes = self
                    .window
                    .as_ref()
                    .map(|window| crate::flow::flakes(&records, window));
                crate::flow::flow(&records, &flow.ends, self.now, self.limit)
            }
            Err(fault) => crate::flow::unread(&fault.0),
        };
        let mut result = flow.result;
        result.detail.insert("flow".into(), value);
        if let Some(flakes) = flakes {
            result.detail.insert("flakes".into(), flakes);
        }
        self.end(result);
    }

    /// The flow unread, with the reason.
    fn flow_unread(&mut self, flow: FlowRead, fault: Fault) {
        self.with_flow(flow, Err(fault));
    }

    /// Ends with the result, said again: warnings and an undo were added to it after it was
    /// made, and the sentence tells both.
    fn end(&mut self, result: BayResult) {
        let main = self.remote.get(&refs::main(&self.input.main)).cloned();
        self.outcome = Some(report::with_main(result.said(), main.as_ref()));
        self.out.forget_all();
    }

    /// `[red] window` from main's config (50 by default, and for a config that cannot be read),
    /// then the commit that added the config.
    fn on_window(&mut self, result: BayResult, bytes: Option<Vec<u8>>) {
        let window = Config::at_main(bytes.as_deref())
            .map_or(crate::red::DEFAULT_WINDOW, |config| config.red_window());
        // Unattributed commits are read once main was fetched.
        let Some(main) = self.main() else {
            return self.with_unattributed(result, Err(Fault("main was not fetched".into())));
        };
        // A config added before the window leaves the window whole: look only within it.
        let read = Action::ReadAdded {
            commit: main,
            path: CONFIG_PATH.into(),
            within: window,
        };
        self.out
            .send(read, Purpose::Added(Box::new(result), window));
    }

    fn on_added(&mut self, result: BayResult, window: u32, added: Option<Oid>) {
        let Some(main) = self.main() else {
            return self.with_unattributed(result, Err(Fault("main was not fetched".into())));
        };
        let read = Action::ReadHistory(super::HistoryQuery {
            from: added,
            to: main,
            limit: window,
            newest: true,
            since: None,
        });
        self.out
            .send(read, Purpose::Unattributed(Box::new(result), window));
    }

    /// `detail.unattributed`, or `{unread}` with the reason when main could not be read.
    fn with_unattributed(&mut self, mut result: BayResult, unattributed: Result<Value, Fault>) {
        let value = unattributed.unwrap_or_else(|fault| {
            Unread {
                unread: format!("bay could not read main's history: {fault}"),
            }
            .to_json()
        });
        result.detail.insert("unattributed".into(), value);
        self.read_flow(result);
    }

    fn fail(&mut self, why: String) {
        let change = self.input.change.clone();
        self.conclude(report::failed(why, change.as_ref()));
    }

    /// One step of reading main's red; a done read adds `detail.red` and `detail.red_pending`
    /// with `trust`, and one that could not read says `detail.red.unread`, never green.
    fn on_red(
        &mut self,
        mut result: BayResult,
        mut reader: RedRead,
        completion: Completion,
    ) -> Option<Completion> {
        match reader.on(completion, &mut self.remote) {
            Err(completion) => return Some(*completion),
            Ok(RedStep::Ask(action)) => {
                self.out
                    .send(*action, Purpose::Red(Box::new((result, reader))));
            }
            Ok(RedStep::Done(None)) => self.conclude(result),
            Ok(RedStep::Done(Some(red))) => {
                let (reds, pending) = red.shown();
                result.detail.insert("red".into(), reds.to_json());
                result
                    .detail
                    .insert("red_pending".into(), pending.to_json());
                // A merge's own trust, read from its signature, stands.
                result
                    .detail
                    .entry("trust")
                    .or_insert_with(|| Value::from(crate::red::TRUST));
                self.conclude(result);
            }
            Ok(RedStep::Unread(why)) => {
                result
                    .detail
                    .insert("red".into(), Unread { unread: why }.to_json());
                self.conclude(result);
            }
        }
        None
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        match self.input.change.clone() {
            Some(change) => match ChainQuery::whole(&self.remote, &change) {
                Some(chain) => {
                    let read = Action::ReadChains {
                        chains: vec![chain],
                    };
                    self.out.send(read, Purpose::ReadChains);
                }
                None => self.compacted(change),
            },
            None => {
                let places: Vec<(u64, Oid)> = self
                    .remote
                    .iter()
                    .rev()
                    .filter_map(|(name, oid)| Some((refs::parse_queue(name)?, oid.clone())))
                    .take(RECENT_PLACES)
                    .collect();
                let oids = places.iter().map(|(_, oid)| oid.clone()).collect();
                self.out
                    .send(Action::ReadSteps { oids }, Purpose::ReadPlaces(places));
            }
        }
    }

    /// The requests the newest places hold; a place that holds none is named as unreadable.
    fn on_places(&mut self, places: Vec<(u64, Oid)>, steps: Vec<RawStep>) {
        for (seq, oid) in places {
            let message = steps
                .iter()
                .find(|raw| raw.oid == oid)
                .map(|raw| raw.message.as_str());
            match unreadable::request_at(seq, message) {
                Ok(op) => {
                    self.requests.insert(op.change.clone(), (seq, op));
                }
                Err(why) => self.unreadable.push(unreadable::place(seq, &why)),
            }
        }
        let changes: BTreeSet<ChangeId> = self.requests.keys().cloned().collect();
        if changes.is_empty() {
            return self.finish(self.queue_result(Vec::new()));
        }
        let spec = FetchSpec::new(changes.iter().map(refs::change_pattern));
        self.out
            .send(Action::Fetch(spec.clone()), Purpose::FetchChains(spec));
    }

    fn on_chains_fetched(&mut self, spec: FetchSpec, fetched: Refs) {
        spec.apply(&mut self.remote, fetched);
        let chains = ChainQuery::every_whole(&self.remote);
        if chains.is_empty() {
            return self.finish(self.queue_result(Vec::new()));
        }
        self.out
            .send(Action::ReadChains { chains }, Purpose::ReadChains);
    }

    fn on_chains(&mut self, reads: Vec<ChainRead>) {
        if let Some(change) = self.input.change.clone() {
            return match fold_one(&reads) {
                Ok((record, _, steps)) => match record
                    .live_op()
                    .and_then(|op| unreadable::lost_place(&self.remote, &steps, op))
                {
                    Some(place) => self.lost_place(&record, place),
                    None => self.one(record),
                },
                Err(why) => {
                    // A record that does not fold: say what a person does about it.
                    let mut result = report::failed(why, Some(&change));
                    let hint = unreadable::hint_for_chain(&change);
                    result.detail.insert("hint".into(), Value::from(hint));
                    self.conclude(result)
                }
            };
        }
        let mut rows = Vec::new();
        for read in &reads {
            let record = match fold_chain(read) {
                Ok((record, _)) => record,
                Err(why) => {
                    if let Some((seq, op)) = self.requests.get(&read.change) {
                        self.unreadable.push(unreadable::chain(*seq, op, &why));
                    }
                    continue;
                }
            };
            if let Some(op) = record.ops.last() {
                rows.push((
                    op.queue_key(),
                    QueueRow {
                        op_id: op.id.clone(),
                        change: record.change.clone(),
                        intent: record.intent.clone(),
                        actor: record.actor.clone(),
                        state: op.state,
                        reason: op.outcome.as_ref().and_then(|o| o.reason),
                        runner: op.owner.clone(),
                    },
                ));
            }
        }
        rows.sort_by_key(|(key, _)| *key);
        let result = self.queue_result(rows.into_iter().map(|(_, row)| row).collect());
        self.waiting = result.detail["queue_depth"].as_u64().unwrap_or(0);
        self.finish(result);
    }

    /// A live operation whose queue place holds no request a runner can read: no runner will
    /// take it up, so the result says so, names the place and what to do, and nothing else.
    fn lost_place(&mut self, record: &ChangeRecord, place: Unreadable) {
        let why = format!(
            "its place in line ({}) holds no request bay can read, so no runner will pick it up; \
             submit it again to take a new place",
            place.name(),
        );
        let mut result = report::failed(why, Some(&record.change));
        result.detail.insert("place".into(), place.to_json());
        self.conclude(result);
    }

    /// One change's status; a live operation first learns what it waits for with `--after`,
    /// then whether main is held for it.
    fn one(&mut self, record: ChangeRecord) {
        // A merged change is merged while main holds its merge.
        if let (Some(merge), Some(main)) = (record.merge_commit(), self.main()) {
            let ask = on_main(merge, &main);
            self.out.send(ask, Purpose::OnMain(Box::new(record)));
            return;
        }
        self.waiting = u64::from(record.live_op().is_some());
        if record.live_op().is_some() && !record.after.is_empty() && self.waits.is_none() {
            let spec = FetchSpec::new(
                record
                    .after
                    .iter()
                    .flat_map(|c| [refs::landed_pattern(c), refs::change_pattern(c)]),
            );
            let fetch = Action::Fetch(spec.clone());
            self.out
                .send(fetch, Purpose::FetchAfter(Box::new(record), spec));
            return;
        }
        let main = self.remote.get(&refs::main(&self.input.main)).cloned();
        match (record.live_op(), main) {
            (Some(_), Some(commit)) => {
                let read = Action::ReadFile {
                    commit,
                    path: CONFIG_PATH.into(),
                };
                self.out.send(read, Purpose::ReadConfig(Box::new(record)));
            }
            _ => self.undos(report::status(&record)),
        }
    }

    /// Compacted, or never a change. A compacted change is an ended one, and a merged one is
    /// read with its undos: the shards of both the first fetch did not name come in one fetch.
    fn compacted(&mut self, change: ChangeId) {
        let shards: Vec<String> = [
            refs::index_of_change(&change),
            refs::index_of_intent(&undo_digest(&change)),
        ]
        .into_iter()
        .filter(|shard| !self.fetched_shards.contains(shard))
        .collect();
        if shards.is_empty() {
            return self.read_compacted(change);
        }
        let spec = FetchSpec::new(shards.iter().map(|shard| refs::index_pattern(shard)));
        self.fetched_shards.extend(shards);
        let fetch = Action::Fetch(spec.clone());
        self.out.send(fetch, Purpose::FetchCompacted(change, spec));
    }

    /// The change's chain's file at its shard's tip, or absent, by name, when the remote has
    /// no such shard.
    fn read_compacted(&mut self, change: ChangeId) {
        match self.remote.get(&refs::index_of_change(&change)).cloned() {
            Some(shard) => {
                let read = Action::ReadFile {
                    commit: shard.clone(),
                    path: crate::compact::change_path(&change),
                };
                self.out
                    .send(read, Purpose::ReadCompactedChain(change, shard));
            }
            None => self.on_chains(vec![crate::compact::read_back_unsharded(&change)]),
        }
    }

    /// A merged change's status reads which of its undos merged; any other ends as it is.
    fn undos(&mut self, result: BayResult) {
        // An undo compacted into the index merged: the index names the latest such. Its shard
        // is fetched only for a merged change, with the change's own shard when that was
        // fetched, else now.
        if result.decision == Decision::Merged
            && self.compacted_undo.is_none()
            && let Some(change) = &self.input.change
        {
            let digest = undo_digest(change);
            let shard = refs::index_of_intent(&digest);
            if !self.fetched_shards.contains(&shard) {
                let spec = FetchSpec::new([refs::index_pattern(&shard)]);
                self.fetched_shards.insert(shard);
                let fetch = Action::Fetch(spec.clone());
                self.out
                    .send(fetch, Purpose::FetchUndoShard(Box::new(result), spec));
                return;
            }
            self.compacted_undo = Some(None);
            if let Some(tip) = self.remote.get(&shard) {
                let read = Action::ReadFile {
                    commit: tip.clone(),
                    path: crate::compact::intent_path(&digest),
                };
                self.out
                    .send(read, Purpose::CompactedUndo(Box::new(result)));
                return;
            }
        }
        let digest = self.input.change.as_ref().map(undo_digest);
        let oids: Vec<Oid> = self
            .remote
            .iter()
            .filter(|(name, _)| {
                refs::parse_intent(name).is_some_and(|(d, _)| Some(d) == digest.as_deref())
            })
            .map(|(_, oid)| oid.clone())
            .collect();
        if result.decision != Decision::Merged || oids.is_empty() {
            return self.undone(result, Vec::new());
        }
        self.out.send(
            Action::ReadSteps { oids },
            Purpose::ReadUndos(Box::new(result)),
        );
    }

    fn on_compacted_undo(&mut self, result: BayResult, file: Option<Vec<u8>>) {
        let latest = super::agent::compacted_generation(file.as_deref())
            .ok()
            .flatten()
            .map(|latest| latest.change);
        self.compacted_undo = Some(latest);
        self.undos(result);
    }

    /// Ends with `detail.undone_by`: the undos in `undone`, after the one compacted, if any.
    fn undone(&mut self, mut result: BayResult, undone: Vec<ChangeId>) {
        let undone: Vec<ChangeId> = self
            .compacted_undo
            .clone()
            .flatten()
            .into_iter()
            .chain(undone)
            .collect();
        if !undone.is_empty() {
            result.detail.insert(
                "undone_by".into(),
                Value::from_iter(undone.iter().map(ChangeId::as_str)),
            );
        }
        self.read_completion(result);
    }

    /// A merged change still on main: its completion under the profile at its base; any
    /// other result, and a command that only watches an operation end, ends as it is.
    fn read_completion(&mut self, result: BayResult) {
        match (self.merged.take(), self.main(), &self.input.change) {
            (Some(merge), Some(main), Some(change)) if self.input.flow => {
                let registry = self.remote.get(REGISTRY).cloned();
                let (reader, read) = CompletionRead::start(change.clone(), merge, main, registry);
                self.out
                    .send(read, Purpose::Completion(Box::new((result, reader))));
            }
            _ => self.finish(result),
        }
    }

    fn on_completion(
        &mut self,
        mut result: BayResult,
        mut reader: CompletionRead,
        completion: Completion,
    ) -> Option<Completion> {
        match reader.on(completion, &mut self.remote) {
            Err(completion) => return Some(*completion),
            Ok(CompletionStep::Ask(action)) => {
                self.out
                    .send(*action, Purpose::Completion(Box::new((result, reader))));
            }
            Ok(CompletionStep::Done(report)) => {
                result.detail.insert("completion".into(), report.to_json());
                self.finish(result);
            }
        }
        None
    }

    fn on_undos(&mut self, result: BayResult, steps: Vec<RawStep>) {
        let undos: Vec<ChangeId> = steps
            .iter()
            .filter_map(|raw| Step::from_message(&raw.message).ok())
            .map(|step| step.change)
            .collect();
        if undos.is_empty() {
            return self.undone(result, Vec::new());
        }
        let spec = FetchSpec::new(undos.iter().map(refs::landed_pattern));
        let fetch = Action::Fetch(spec.clone());
        self.out
            .send(fetch, Purpose::FetchUndone(Box::new(result), undos, spec));
    }

    /// `detail.undone_by`: the undos whose merged marker is on the remote, in the order their
    /// generations came.
    fn on_undone(
        &mut self,
        result: BayResult,
        undos: Vec<ChangeId>,
        spec: FetchSpec,
        fetched: Refs,
    ) {
        spec.apply(&mut self.remote, fetched);
        let undone: Vec<ChangeId> = undos
            .into_iter()
            .filter(|undo| self.remote.contains_key(&refs::landed(undo)))
            .collect();
        self.undone(result, undone);
    }

    fn on_after_fetched(&mut self, record: ChangeRecord, spec: FetchSpec, fetched: Refs) {
        spec.apply(&mut self.remote, fetched);
        let gone: Vec<ChangeId> = record
            .after
            .iter()
            .filter(|change| {
                !self.remote.contains_key(&refs::change(change))
                    && !self.remote.contains_key(&refs::landed(change))
            })
            .cloned()
            .collect();
        if let Some(read) = super::agent::read_compacted(gone) {
            self.out
                .send(read, Purpose::CompactedAfter(Box::new(record)));
            return;
        }
        self.read_after(record);
    }

    /// Reads the chains of the changes `record` names that are still on the remote.
    fn read_after(&mut self, record: ChangeRecord) {
        let chains: Vec<ChainQuery> = record
            .after
            .iter()
            .filter_map(|change| ChainQuery::whole(&self.remote, change))
            .collect();
        if chains.is_empty() {
            return self.on_after(record, &[]);
        }
        self.out.send(
            Action::ReadChains { chains },
            Purpose::ReadAfter(Box::new(record)),
        );
    }

    /// A merged change's status: `merged` while main holds its merge, `CHANGE_NOT_MERGED` once
    /// main moved back past it.
    fn on_merge_held(&mut self, record: &ChangeRecord, base: Option<Oid>) {
        // Asked only for a merged change, with main fetched: without either, its record
        // answers alone.
        let (Some(merge), Some(main)) = (record.merge_commit(), self.main()) else {
            return self.finish(report::status(record));
        };
        if holds(merge, base.as_ref()) {
            // Merged and still on main: how far its merge is trusted, then which of its undos
            // merged since, then its completion.
            self.merged = Some(merge.clone());
            self.read_trust(report::status(record), merge.clone());
        } else {
            self.finish(report::merge_left_main(record, merge, &main));
        }
    }

    /// `detail.trust` of a merge still on main: with a registry on the remote, its signature
    /// judged against the registry as read now, under the mode of the policy at its base;
    /// without one, unsigned.
    fn read_trust(&mut self, mut result: BayResult, merge: Oid) {
        if !self.remote.contains_key(REGISTRY) {
            result
                .detail
                .insert("trust".into(), Value::from(Trust::Unsigned.as_str()));
            return self.undos(result);
        }
        let read = Action::ReadCommits {
            commits: vec![merge],
        };
        self.out.send(read, Purpose::TrustCommit(Box::new(result)));
    }

    fn on_trust_commit(&mut self, result: BayResult, raw: Vec<String>) {
        let Some(raw) = raw.into_iter().next() else {
            return self.fail("reading the merge commit gave nothing".into());
        };
        let headers = raw.split_once("\n\n").map_or(raw.as_str(), |(h, _)| h);
        let base = headers
            .lines()
            .find_map(|line| line.strip_prefix("parent "))
            .and_then(|parent| Oid::parse(parent).ok());
        match base {
            Some(commit) => {
                let read = Action::ReadFile {
                    commit,
                    path: POLICY_PATH.into(),
                };
                self.out
                    .send(read, Purpose::TrustPolicy(Box::new(result), raw));
            }
            None => self.on_trust_policy(result, raw, None),
        }
    }

    fn on_trust_policy(&mut self, result: BayResult, raw: String, policy: Option<Vec<u8>>) {
        // A policy that cannot be read signs everything: the stricter reading.
        let signing = policy
            .and_then(|bytes| parse_policy(&bytes).ok())
            .map_or(Signing::All, |policy| policy.signing);
        let Some(tip) = self.remote.get(REGISTRY).cloned() else {
            return self.undos(result);
        };
        self.out.send(
            Action::ReadRegistry { tip },
            Purpose::TrustRegistry(Box::new(result), raw, signing),
        );
    }

    fn on_trust_registry(
        &mut self,
        mut result: BayResult,
        raw: &str,
        signing: Signing,
        chain: &[RegistryCommit],
    ) {
        let trust = match judge_chain(chain) {
            Ok(version) => Keys {
                registry: Some(&version),
                signing,
            }
            .commit(raw),
            Err(broken) => {
                // Nothing signed can be trusted while the registry breaks its rules.
                result.detail.insert(
                    "registry".into(),
                    serde_json::to_value(&broken).unwrap_or(Value::Null),
                );
                Trust::Unsigned
            }
        };
        result
            .detail
            .insert("trust".into(), Value::from(trust.as_str()));
        self.undos(result);
    }

    /// What the named changes are decides whether the operation waits for them.
    fn on_after(&mut self, record: ChangeRecord, reads: &[ChainRead]) {
        let records: Vec<(ChangeId, Option<ChangeRecord>)> = reads
            .iter()
            .chain(&self.compacted_after)
            .map(|read| (read.change.clone(), fold_chain(read).ok().map(|(r, _)| r)))
            .collect();
        let waits = waiting(&record, |change| {
            let read = records
                .iter()
                .find(|(c, _)| c == change)
                .and_then(|(_, r)| r.as_ref());
            dependency(
                self.remote.contains_key(&refs::landed(change)),
                self.remote.contains_key(&refs::change(change)) || read.is_some(),
                read,
            )
        });
        self.waits = Some(waits);
        self.one(record);
    }

    /// A held operation waits `MAIN_HELD`, and `detail.hold` says by what; one whose named
    /// changes have not merged waits `DEPENDENCY_PENDING` with `detail.pending`.
    fn on_config(&mut self, record: &ChangeRecord, bytes: Option<Vec<u8>>) {
        let config = Config::at_main(bytes.as_deref());
        let mut result = report::status(record);
        if let Some(Some(waiting)) = self.waits.clone() {
            result = result.waiting_on(waiting.code(), waiting.to_json());
        }
        if let Some(hold) = hold_on(&config, self.now, record.fixes_or_undoes()) {
            result = result.waiting_on(ReasonCode::MainHeld, Held { hold }.to_json());
        } else if let (Ok(config), Some(main)) = (&config, self.main())
            && let Some(plugin) = config.hold_plugin.as_ref()
            && !record.fixes_or_undoes()
        {
            // No window holds main: the plugin, run from main's tip as a runner runs it, says
            // whether it holds main now.
            let run = Action::RunPlugin(crate::plugin::hold_call(plugin, &main));
            let purpose = Purpose::AskHold(Box::new(record.clone()), Box::new(result));
            self.out.send(run, purpose);
            return;
        }
        self.test_merge(record, result);
    }

    /// `detail.hold` names the hold plugin's hold when it holds main, or gives no answer bay
    /// can read.
    fn on_hold_answer(&mut self, record: &ChangeRecord, result: BayResult, exit: &PluginExit) {
        let result = match crate::plugin::judge_hold(exit) {
            Some(reason) => result.waiting_on(
                ReasonCode::MainHeld,
                Held {
                    hold: MainHold::plugin(&reason),
                }
                .to_json(),
            ),
            None => result,
        };
        self.test_merge(record, result);
    }

    fn main(&self) -> Option<crate::git::Oid> {
        self.remote.get(&refs::main(&self.input.main)).cloned()
    }

    /// The result so far, once an operation no runner holds is test-merged onto main.
    fn test_merge(&mut self, record: &ChangeRecord, result: BayResult) {
        // An operation no runner holds yet is test-merged onto main: a conflict found early is
        // news for its agent, who can repair it before it reaches the head.
        match (record.live_op(), self.main()) {
            (Some(op), Some(onto)) if op.owner.is_none() => {
                let test = Action::TestMerge {
                    onto,
                    draft: op.draft.clone(),
                    base: op.base.clone(),
                };
                self.out.send(test, Purpose::TestMerge(Box::new(result)));
            }
            _ => self.finish(result),
        }
    }

    /// A conflict found early shows as `operation.conflict`, with `MERGE_CONFLICT` and the
    /// paths; a clean test, or one that could not run, adds nothing.
    fn on_tested(&mut self, mut result: BayResult, conflicts: Result<Vec<String>, Fault>) {
        if let Ok(paths) = conflicts
            && !paths.is_empty()
            && let Some(Value::Object(operation)) = result.detail.get_mut("operation")
        {
            operation.insert("conflict".into(), EarlyConflict::of(paths).to_json());
        }
        self.finish(result);
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::ReadPlaces(places), Completion::StepsRead(Ok(steps))) => {
                self.on_places(places, steps)
            }
            (Purpose::FetchChains(spec), Completion::Fetched(Ok(fetched))) => {
                self.on_chains_fetched(spec, fetched)
            }
            (Purpose::ReadChains, Completion::ChainsRead(Ok(reads))) => self.on_chains(reads),
            (Purpose::OnMain(record), Completion::MergeBaseFound(Ok(base))) => {
                self.on_merge_held(&record, base)
            }
            (Purpose::ReadConfig(record), Completion::FileRead(Ok(bytes))) => {
                self.on_config(&record, bytes)
            }
            (Purpose::AskHold(record, result), Completion::PluginExited(exit)) => {
                self.on_hold_answer(&record, *result, &exit)
            }
            (Purpose::FetchAfter(record, spec), Completion::Fetched(Ok(fetched))) => {
                self.on_after_fetched(*record, spec, fetched)
            }
            (Purpose::Held, Completion::HeldRead(held)) => self.on_held(held),
            (Purpose::FetchCompacted(change, spec), Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.remote, fetched);
                self.read_compacted(change)
            }
            (Purpose::ReadCompactedChain(change, shard), Completion::FileRead(Ok(file))) => {
                let read = crate::compact::read_back(&change, &shard, file.as_deref());
                self.on_chains(vec![read])
            }
            (Purpose::FetchUndoShard(result, spec), Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.remote, fetched);
                self.undos(*result)
            }
            (Purpose::CompactedUndo(result), Completion::FileRead(Ok(file))) => {
                self.on_compacted_undo(*result, file)
            }
            (Purpose::CompactedAfter(record), Completion::ChainsRead(Ok(reads))) => {
                self.compacted_after = reads;
                self.read_after(*record)
            }
            (Purpose::ReadAfter(record), Completion::ChainsRead(Ok(reads))) => {
                self.on_after(*record, &reads)
            }
            (Purpose::TestMerge(result), Completion::MergeTested(tested)) => {
                self.on_tested(*result, tested)
            }
            (Purpose::ReadUndos(result), Completion::StepsRead(Ok(steps))) => {
                self.on_undos(*result, steps)
            }
            (Purpose::FetchUndone(result, undos, spec), Completion::Fetched(Ok(fetched))) => {
                self.on_undone(*result, undos, spec, fetched)
            }
            (Purpose::Presences(result), Completion::StepsRead(read)) => {
                // Presences that cannot be read are judged so, never left out.
                self.on_presences(*result, read.unwrap_or_default())
            }
            (Purpose::Seen(result, read), Completion::SeenRead(seen)) => {
                self.with_presences(*result, &read, &seen.unwrap_or_default())
            }
            (Purpose::Completion(read), completion) => {
                let (result, reader) = *read;
                return self.on_completion(result, reader, completion);
            }
            (Purpose::Red(red), completion) => {
                let (result, reader) = *red;
                return self.on_red(result, reader, completion);
            }
            (Purpose::Window(result), Completion::FileRead(read)) => {
                self.on_window(*result, read.ok().flatten())
            }
            (Purpose::Added(result, window), Completion::AddedRead(Ok(added))) => {
                self.on_added(*result, window, added)
            }
            (Purpose::Added(result, _), Completion::AddedRead(Err(fault))) => {
                self.with_unattributed(*result, Err(fault))
            }
            (Purpose::Unattributed(mut result, window), Completion::HistoryRead(read)) => {
                if let Ok(commits) = &read {
                    self.window = Some(
                        commits
                            .iter()
                            .flat_map(|commit| std::iter::once(commit).chain(&commit.brought))
                            .map(|commit| commit.oid.clone())
                            .collect(),
                    );
                    add_warnings(&mut result, not_linear_warnings(commits));
                }
                let value = read.map(|commits| unattributed(window, &commits).to_json());
                self.with_unattributed(*result, value)
            }
            (Purpose::FlowHeld(result), Completion::HeldRead(held)) => match held {
                Ok(held) => self.on_flow_held(*result, held),
                Err(fault) => {
                    let mut result = *result;
                    result
                        .detail
                        .insert("flow".into(), crate::flow::unread(&fault.0));
                    self.end(result);
                }
            },
            (Purpose::FlowLogs(mut flow), Completion::HeldRead(held)) => match held {
                Ok(held) => {
                    flow.logs = held.into_values().collect();
                    self.next_flow_read(*flow)
                }
                Err(fault) => self.flow_unread(*flow, fault),
            },
            (Purpose::FlowLog(flow), Completion::LogRead(read)) => match read {
                Ok(events) => self.on_flow_log(*flow, events),
                Err(fault) => self.flow_unread(*flow, fault),
            },
            (Purpose::FlowChains(flow), Completion::ChainsRead(reads)) => {
                self.with_flow(*flow, reads)
            }
            (Purpose::TrustCommit(result), Completion::CommitsRead(Ok(raw))) => {
                self.on_trust_commit(*result, raw)
            }
            (Purpose::TrustPolicy(result, raw), Completion::FileRead(Ok(policy))) => {
                self.on_trust_policy(*result, raw, policy)
            }
            (Purpose::TrustRegistry(result, raw, signing), Completion::RegistryRead(Ok(chain))) => {
                self.on_trust_registry(*result, &raw, signing, &chain)
            }
            (_, completion) => return Some(completion),
        }
        None
    }
}

/// The digest of the intent every undo of `change` shares.
fn undo_digest(change: &ChangeId) -> String {
    crate::id::intent_digest(&super::undo::undo_intent(change))
}

/// Adds `warnings` to the result's one `detail.warnings` array.
fn add_warnings(result: &mut BayResult, warnings: Vec<Value>) {
    if warnings.is_empty() {
        return;
    }
    let entry = result
        .detail
        .entry("warnings")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(all) = entry {
        all.extend(warnings);
    }
}

/// `operation.conflict`: a conflict with main found before any runner took the operation.
#[derive(Debug, Serialize)]
struct EarlyConflict {
    /// Always `MERGE_CONFLICT`, what the runner will refuse it with.
    reason: ReasonCode,
    paths: Vec<String>,
}

impl Detail for EarlyConflict {}

impl EarlyConflict {
    fn of(paths: Vec<String>) -> EarlyConflict {
        EarlyConflict {
            reason: ReasonCode::MergeConflict,
            paths,
        }
    }
}

/// One operation of the queue, as `bay status` lists it.
#[derive(Debug, Serialize)]
struct QueueRow {
    op_id: OpId,
    change: ChangeId,
    intent: String,
    actor: String,
    state: OpState,
    reason: Option<ReasonCode>,
    runner: Option<String>,
}

/// One entry of `detail.operations`: an operation read, or a place or change bay cannot read.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Listed<'a> {
    Read(QueueRow),
    Unreadable(&'a Unreadable),
}

/// The queue: every operation read, in queue order, and how many have not ended.
impl Status {
    /// The queue's result: the operations read, in queue order, then each place or change bay
    /// cannot read (`readable: false`, why, and what to do), which runners pass over.
    fn queue_result(&self, rows: Vec<QueueRow>) -> BayResult {
        let live = rows.iter().filter(|row| !row.state.is_terminal()).count();
        let listed: Vec<Listed> = rows
            .into_iter()
            .map(Listed::Read)
            .chain(self.unreadable.iter().map(Listed::Unreadable))
            .collect();
        let mut detail = Map::new();
        detail.insert("queue_depth".into(), Value::from(live));
        detail.insert(
            "operations".into(),
            serde_json::to_value(listed).unwrap_or_default(),
        );
        BayResult::ok(None, detail)
    }
}

super::agent::command_machine!(Status, "status");

/// Lists under `operation.prechecks` the early runs of the result's operation that the
/// presences name, each with its runner, by the runners' names: shown, never judged, since a
/// presence is no evidence (the run's record is, in its runner's notes).
fn list_prechecks(result: &mut BayResult, presences: &[(String, Result<Presence, String>)]) {
    let Some(op) = result.op_id.clone() else {
        return;
    };
    let listed: Vec<Value> = presences
        .iter()
        .filter_map(|(runner, presence)| Some((runner, presence.as_ref().ok()?)))
        .flat_map(|(runner, presence)| {
            presence
                .prechecks
                .iter()
                .filter(|run| run.op == op)
                .map(move |run| {
                    let mut row = serde_json::to_value(run).unwrap_or_default();
                    if let Value::Object(row) = &mut row {
                        row.insert("runner".into(), Value::from(runner.as_str()));
                    }
                    row
                })
        })
        .collect();
    if let (false, Some(Value::Object(operation))) =
        (listed.is_empty(), result.detail.get_mut("operation"))
    {
        operation.insert("prechecks".into(), Value::Array(listed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Event, Machine};

    /// Runs a queue status at `now` to its end against a remote whose main is one commit and
    /// whose queue is empty; `answer` answers what it takes, the rest reads as nothing there.
    /// Returns the result and the names of the actions asked, in order.
    fn drive(
        flow: bool,
        now: Timestamp,
        mut answer: impl FnMut(&Action) -> Option<Completion>,
    ) -> (BayResult, Vec<&'static str>) {
        let main = Oid::parse(&"1".repeat(40)).expect("an id");
        let input = StatusInput {
            change: None,
            main: "main".into(),
            flow,
        };
        let mut status = Status::new(input, now);
        let mut asked = Vec::new();
        while status.outcome().is_none() {
            let (id, action) = status.poll_action().expect("a status waits on an action");
            asked.push(action.name());
            let completion = answer(&action).unwrap_or_else(|| match action {
                Action::Fetch(_) => {
                    Completion::Fetched(Ok(Refs::from([("refs/heads/main".into(), main.clone())])))
                }
                Action::ReadSteps { .. } => Completion::StepsRead(Ok(Vec::new())),
                Action::ReadFile { .. } => Completion::FileRead(Ok(None)),
                Action::ReadAdded { .. } => Completion::AddedRead(Ok(None)),
                Action::ReadHistory(_) => Completion::HistoryRead(Ok(Vec::new())),
                Action::ReadHeld { .. } => Completion::HeldRead(Ok(Refs::new())),
                Action::ReadLog { .. } => Completion::LogRead(Ok(Vec::new())),
                other => panic!("a queue status asked {other:?}"),
            });
            status
                .handle(now, Event::Done(id, completion))
                .expect("each action answered once, in kind");
        }
        (status.outcome().expect("ended").clone(), asked)
    }

    /// A queue status whose every held read answers `held`.
    fn run(flow: bool, held: Result<Refs, Fault>) -> (BayResult, Vec<&'static str>) {
        drive(flow, Timestamp::from_secs(1_000), |action| {
            matches!(action, Action::ReadHeld { .. }).then(|| Completion::HeldRead(held.clone()))
        })
    }

    #[test]
    fn the_queue_lists_each_operation_then_each_unreadable_place_and_counts_the_live() {
        let input = StatusInput {
            change: None,
            main: "main".into(),
            flow: false,
        };
        let mut status = Status::new(input, Timestamp::from_secs(1_000));
        status.unreadable = vec![super::super::unreadable::place(9, "no step")];
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let row = |n: u32, state: OpState, reason: Option<ReasonCode>| QueueRow {
            op_id: change.op(n),
            change: change.clone(),
            intent: "fix".into(),
            actor: "ann".into(),
            state,
            reason,
            runner: (state == OpState::Running).then(|| "r1".to_owned()),
        };
        let result = status.queue_result(vec![
            row(1, OpState::Blocked, Some(ReasonCode::CheckFailed)),
            row(2, OpState::Running, None),
        ]);
        let detail = Value::from(result.detail);
        assert_eq!(detail["queue_depth"], 1, "the blocked one has ended");
        assert_eq!(
            detail["operations"][0],
            serde_json::json!({
                "op_id": "c7k2m4qa.1",
                "change": "c7k2m4qa",
                "intent": "fix",
                "actor": "ann",
                "state": "blocked",
                "reason": "CHECK_FAILED",
                "runner": null,
            })
        );
        assert_eq!(detail["operations"][1]["runner"], "r1");
        assert_eq!(detail["operations"][2]["ref"], "refs/bay/queue/0000000009");
        assert_eq!(detail["operations"][2]["readable"], false);
        assert_eq!(
            EarlyConflict::of(vec!["src/a".into()]).to_json(),
            serde_json::json!({"reason": "MERGE_CONFLICT", "paths": ["src/a"]})
        );
    }

    #[test]
    fn flow_that_cannot_be_read_says_why_and_the_status_stands() {
        let (result, asked) = run(true, Err(Fault("the disk is gone".into())));
        assert_eq!(result.decision, Decision::Ok);
        let unread = result.detail["flow"]["unread"].as_str().expect("unread");
        assert!(unread.contains("the disk is gone"), "{unread}");
        assert!(result.detail["flow"].get("live").is_none());
        assert_eq!(asked.iter().filter(|name| **name == "fetch").count(), 1);
    }

    #[test]
    fn a_clone_holding_no_chain_shows_an_empty_flow_without_fetching() {
        let (result, asked) = run(true, Ok(Refs::new()));
        assert_eq!(result.detail["flow"]["live"], 0);
        assert!(result.detail["flow"]["oldest_live"].is_null());
        assert_eq!(asked.last(), Some(&"read-held"));
        assert_eq!(asked.iter().filter(|name| **name == "fetch").count(), 1);
    }

    #[test]
    fn the_flow_reads_a_runner_log_no_further_back_than_its_longest_window() {
        let log = Oid::parse(&"2".repeat(40)).expect("an id");
        let mut log_reads = Vec::new();
        drive(
            true,
            Timestamp::from_secs(40 * 24 * 3600),
            |action| match action {
                Action::ReadHeld { prefix, .. } if prefix == refs::LOG => Some(
                    Completion::HeldRead(Ok(Refs::from([(refs::log("r1"), log.clone())]))),
                ),
                Action::ReadLog { .. } => {
                    log_reads.push(action.clone());
                    None
                }
                _ => None,
            },
        );
        let read = Action::ReadLog {
            range: Some(log.to_string()),
            limit: FLOW_EVENTS,
            since: Some(Timestamp::from_secs(10 * 24 * 3600)),
        };
        assert_eq!(log_reads, [read]);
    }

    /// `bay status <change>` of a merged change that compaction took off the refs, in a clone
    /// that holds `held` of the index: the fetches it made, and its result. The remote's
    /// shards answer every fetch that names them.
    fn compacted_status(held: &[&str]) -> (BayResult, Vec<FetchSpec>) {
        use crate::record::{Step, StepBody};
        let oid = |c: char| Oid::parse(&c.to_string().repeat(40)).expect("an id");
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let undo = ChangeId::parse("u7k2m4qa").expect("an id");
        let op = change.op(1);
        let step = |by: &str, body| Step {
            change: change.clone(),
            at: Timestamp(1),
            by: by.into(),
            nonce: 7,
            body,
        };
        let steps = [
            step(
                "ann",
                StepBody::first_start("fix", "ann", &["src/"], oid('1')),
            ),
            step(
                "ann",
                StepBody::Request {
                    op: op.clone(),
                    draft: oid('2'),
                    base: oid('1'),
                    seq: 1,
                },
            ),
            step("r1", StepBody::Claim { op: op.clone() }),
            step(
                "r1",
                StepBody::Candidate {
                    op: op.clone(),
                    candidate: op.candidate(1),
                    base: oid('1'),
                    base_tree: oid('3'),
                    commit: oid('4'),
                    tree: oid('5'),
                },
            ),
            step(
                "r1",
                StepBody::Outcome {
                    op: op.clone(),
                    state: crate::result::OpState::Merged,
                    reason: None,
                    detail: serde_json::json!({}),
                },
            ),
        ];
        let chain = ChainRead {
            change: change.clone(),
            tip: Oid::parse(&format!("{:040x}", 16)).expect("an id"),
            steps: steps
                .iter()
                .rev()
                .enumerate()
                .map(|(n, step)| RawStep {
                    oid: Oid::parse(&format!("{:040x}", n + 16)).expect("an id"),
                    message: step.to_message(),
                })
                .collect(),
            reached_known: false,
            unreadable: None,
        };
        let (main, change_shard, undo_shard) = (oid('4'), oid('a'), oid('b'));
        let undo_index = refs::index_of_intent(&undo_digest(&change));
        let generation = crate::compact::Generation {
            generation: 1,
            change: undo.clone(),
        };
        let input = StatusInput {
            change: Some(change.clone()),
            main: "main".into(),
            flow: false,
        };
        let now = Timestamp::from_secs(1_000);
        let remote = Refs::from([
            ("refs/heads/main".into(), main.clone()),
            (refs::index_of_change(&change), change_shard.clone()),
            (undo_index.clone(), undo_shard.clone()),
        ]);
        let mut status = Status::new(input, now);
        let mut fetches = Vec::new();
        while status.outcome().is_none() {
            let (id, action) = status.poll_action().expect("a status waits on an action");
            let completion = match &action {
                Action::ReadHeld { prefix, .. } => Completion::HeldRead(Ok(remote
                    .iter()
                    .filter(|(name, _)| name.starts_with(prefix.as_str()))
                    .filter(|(name, _)| held.iter().any(|shard| shard == name))
                    .map(|(name, oid)| (name.clone(), oid.clone()))
                    .collect())),
                Action::Fetch(spec) => {
                    fetches.push(spec.clone());
                    let refs = remote
                        .iter()
                        .filter(|(name, _)| spec.covers(name))
                        .map(|(name, oid)| (name.clone(), oid.clone()))
                        .collect();
                    Completion::Fetched(Ok(refs))
                }
                Action::ReadFile { commit, path } => Completion::FileRead(Ok(
                    if *commit == change_shard && *path == crate::compact::change_path(&change) {
                        Some(crate::compact::encode(&chain).into_bytes())
                    } else if *commit == undo_shard
                        && *path == crate::compact::intent_path(&undo_digest(&change))
                    {
                        Some(generation.encode().into_bytes())
                    } else {
                        None
                    },
                )),
                Action::MergeBase { .. } => Completion::MergeBaseFound(Ok(Some(oid('4')))),
                Action::ReadSteps { .. } => Completion::StepsRead(Ok(Vec::new())),
                Action::ReadCommits { .. } => Completion::CommitsRead(Ok(Vec::new())),
                Action::ReadAdded { .. } => Completion::AddedRead(Ok(None)),
                Action::ReadHistory(_) => Completion::HistoryRead(Ok(Vec::new())),
                other => panic!("a status of a compacted change asked {other:?}"),
            };
            status
                .handle(now, Event::Done(id, completion))
                .expect("each action answered once, in kind");
        }
        let result = status.outcome().expect("ended").clone();
        assert_eq!(result.decision, Decision::Merged, "{result:?}");
        assert_eq!(result.detail["undone_by"], serde_json::json!([undo]));
        (result, fetches)
    }

    fn change_shard() -> String {
        refs::index_of_change(&ChangeId::parse("c7k2m4qa").expect("an id"))
    }

    fn undo_shard() -> String {
        refs::index_of_intent(&undo_digest(&ChangeId::parse("c7k2m4qa").expect("an id")))
    }

    /// In a clone that holds neither shard, both come in the status's second fetch, the only
    /// one after the first; the chain is read from the one and the undo from the other.
    #[test]
    fn a_compacted_change_is_read_with_its_undos_from_one_fetch_of_both_shards() {
        let (_, fetches) = compacted_status(&[]);
        assert_eq!(fetches.len(), 2, "{fetches:?}");
        let second = FetchSpec::new([
            refs::index_pattern(&change_shard()),
            refs::index_pattern(&undo_shard()),
        ]);
        assert_eq!(fetches[1], second);
        assert!(!fetches[0].covers(&change_shard()));
    }

    /// A clone that holds the shards fetches what they gained with the first fetch, and
    /// makes no other; one that holds one of them fetches the other alone after it.
    #[test]
    fn the_shards_a_clone_holds_come_with_the_first_fetch() {
        let (change, undo) = (change_shard(), undo_shard());
        let (_, fetches) = compacted_status(&[&change, &undo]);
        assert_eq!(fetches.len(), 1, "{fetches:?}");
        assert!(fetches[0].covers(&change) && fetches[0].covers(&undo));
        let (_, fetches) = compacted_status(&[&undo]);
        assert_eq!(fetches.len(), 2, "{fetches:?}");
        assert!(fetches[0].covers(&undo) && !fetches[0].covers(&change));
        assert_eq!(fetches[1], FetchSpec::new([refs::index_pattern(&change)]));
    }

    #[test]
    fn a_status_without_flow_never_reads_what_the_clone_holds() {
        let (result, asked) = run(false, Ok(Refs::new()));
        assert!(result.detail.get("flow").is_none());
        assert!(!asked.contains(&"read-held"));
    }
}
