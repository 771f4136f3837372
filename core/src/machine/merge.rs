//! `bay merge`: freeze the draft, record the request with a queue place, and return `queued`.
//!
//! Before it writes anything, a draft that holds conflict markers bay wrote into it (when it
//! brought the draft up to main) is refused `MERGE_CONFLICT`, naming the files: an unresolved
//! conflict never merges. Then the draft is judged by the `[limits]` of the policy at its base,
//! measured against that base: a change over a cap is refused `CHANGE_TOO_LARGE` and never
//! queued. The policy is read once per draft; a policy that sets no cap costs no measuring, and
//! one that is missing or invalid is left to the runner, which refuses it by the policy at the
//! candidate's base.
//!
//! The request step and the queue place go up in one atomic push, leased on the chain's tip and
//! create-only on the place: a lost race (another request took the place, or someone else wrote
//! to the change) moves nothing, and the command starts over. Asking again with the same draft
//! returns the operation already queued, so a retry never queues twice.

mod refusal;

use self::refusal::{Refusal, Review};
use super::agent::{MAX_RACES, Nonces, fold_one, give_up_place, read_chain};
use super::runner::{Seed, UnpushedRequest};
use super::unreadable::lost_place;
use super::{
    Action, Append, ChainQuery, ChainRead, Completion, Expect, FetchSpec, NewValue, Outbox,
    PushOutcome, PushPlan, PushReport, RefUpdate, Refreshed, Refs,
};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::check::plan::{POLICY_PATH, parse_policy};
use crate::conflict::{self, Labels};
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::id::{ChangeId, OpId};
use crate::limits::PathStat;
use crate::policy::Policy;
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Step, StepBody};
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

#[derive(Clone, Debug)]
pub struct MergeInput {
    pub change: ChangeId,
    pub actor: String,
    pub main: String,
    /// Entropy for step nonces.
    pub entropy: u64,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    ReadLast,
    ReadChain,
    /// The freeze of the draft of the change as read.
    Freeze(Box<Read>),
    /// The push of the checkpoint that names the markers a carried-over draft holds.
    Mark(Box<Carried>),
    /// The view made from that draft, to show the markers to resolve.
    Show(Box<Carried>),
    /// One file the draft's conflict markers were left in, read with every other such file
    /// for the same request.
    Marked {
        path: String,
        ask: Arc<Ask>,
    },
    /// The policy at the draft's base, for its `[limits]`.
    Policy(Box<Ask>),
    /// The policy on main, for `[limits] max_waiting_approvals`, with the base's.
    MainPolicy(Box<Policy>, Box<Ask>),
    /// The draft's measures against its base, for the caps of these policies.
    Stats(Box<Caps>, Box<Ask>),
    /// The change records this clone holds, for `[limits] max_waiting_approvals`, this cap.
    Held(u64, Box<Ask>),
    HeldChains(u64, Box<Ask>),
    /// The push of the request step.
    Request(Box<Requesting>),
    /// The request step written into the clone's store for the runner to carry, and the push
    /// it would have been.
    WriteRequest(Box<PushPlan>, Box<Requesting>),
}

/// The policies a draft's caps come from: its size caps from the policy at its base, and the
/// cap on the waits for a yes from main's, as are the approval checks that decide whether the
/// draft owes one (`bay` reads approval checks from main).
#[derive(Clone, Debug)]
struct Caps {
    at_base: Policy,
    /// Main's policy, when main moved past the base; `None`: the base's.
    on_main: Option<Policy>,
}

impl Caps {
    fn on_main(&self) -> &Policy {
        self.on_main.as_ref().unwrap_or(&self.at_base)
    }

    /// The cap on the waits for a yes, when main sets one and asks for approvals at all.
    fn waits(&self) -> Option<u64> {
        let policy = self.on_main();
        policy
            .limits
            .max_waiting_approvals
            .filter(|_| !policy.approvals.is_empty())
    }
}

/// The change's record as one fetch found it, and its chain's tip: what a request is built
/// on, until a lost race reads it again.
#[derive(Clone, Debug)]
struct Read {
    record: ChangeRecord,
    tip: Oid,
}

/// A draft to request, on the record as read.
#[derive(Clone, Debug)]
struct Ask {
    read: Read,
    draft: Oid,
}

/// A draft that carried the view's work over onto a draft saved elsewhere, with conflicts,
/// and the paths of the change's view.
#[derive(Clone, Debug)]
struct Carried {
    frozen: Refreshed,
    paths: Vec<String>,
}

/// The request step in flight, on the record as read: the operation it asks for and the
/// queue place it takes.
#[derive(Clone, Debug)]
struct Requesting {
    record: ChangeRecord,
    step: Step,
    op: OpId,
    seq: u64,
}

/// The `bay merge` machine (without `--wait`). Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Merge {
    input: MergeInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    nonces: Nonces,
    races: u32,
    remote: Refs,
    /// The frozen draft, kept across races so a retry requests the same work.
    draft: Option<Oid>,
    /// The base and draft found within the caps of the policy at that base, so a retry after
    /// a lost race does not measure them again.
    within_limits: Option<(Oid, Oid)>,
    /// The files of the draft that bay left conflict markers in, as read so far, and the
    /// draft found free of them.
    marked_read: BTreeMap<String, Option<Vec<u8>>>,
    settled: Option<Oid>,
    /// A request step whose push's fate is unknown.
    written: Option<Oid>,
    /// The queue place the request takes.
    next_seq: u64,
    /// The change's chain as read, oldest step first, with the request once it is up.
    chain: Vec<(Oid, Step)>,
    /// The runner that works the operation next in this process (`merge --wait`), whose log
    /// and evidence tips each fetch brings along, so that the runner need not fetch them.
    runner: Option<String>,
    /// Whether that runner may carry the request in its first write (see
    /// `runner::UnpushedRequest`), and the request written so, once it is.
    carried: bool,
    unpushed: Option<UnpushedRequest>,
    /// The policy as read at the draft's base, for its `[limits]`: handed over with the seed,
    /// so that a runner building on that same commit need not read it again.
    policy: Option<(Oid, Option<Vec<u8>>)>,
    /// `merge --wait` on a machine with no check sandbox: the refusal to give, before
    /// anything is written, when the policy at the draft's base has checks to run.
    no_sandbox: Option<BayResult>,
    outcome: Option<BayResult>,
    #[cfg(feature = "mutants")]
    mutant: Option<super::runner::Mutant>,
}

impl Merge {
    pub fn new(input: MergeInput, now: Timestamp) -> Merge {
        Merge::start(input, now, None, false)
    }

    /// A merge whose operation the runner `runner` works next, in this process: its fetches
    /// also bring that runner's log and evidence tips, handed over with the [`Seed`]. With `carried`, when
    /// nothing is queued ahead, the request is written and not pushed, for the runner's first
    /// write to carry.
    pub fn then_run_as(input: MergeInput, now: Timestamp, runner: &str, carried: bool) -> Merge {
        Merge::start(input, now, Some(runner.to_owned()), carried)
    }

    /// This machine has no check sandbox, and the merge is run here (`merge --wait`): it
    /// refuses with `refusal` ([`crate::doctor::sandbox_refusal`]) before it writes anything,
    /// when the policy at the draft's base has checks to run.
    pub fn without_sandbox(&mut self, refusal: BayResult) {
        self.no_sandbox = Some(refusal);
    }

    /// The sandbox refusal, when this machine has none and the policy read has checks to run;
    /// a policy that is missing or invalid is left to the runner, which refuses it by name.
    fn sandbox_refused(&self) -> Option<BayResult> {
        let refusal = self.no_sandbox.as_ref()?;
        let (_, bytes) = self.policy.as_ref()?;
        let policy = parse_policy(bytes.as_deref()?).ok()?;
        policy
            .runs_checks()
            .then(|| refusal.clone().with_change(Some(self.input.change.clone())))
    }

    fn start(input: MergeInput, now: Timestamp, runner: Option<String>, carried: bool) -> Merge {
        let nonces = Nonces::new(input.entropy);
        let mut merge = Merge {
            input,
            out: Outbox::default(),
            now,
            nonces,
            races: 0,
            remote: Refs::new(),
            draft: None,
            within_limits: None,
            written: None,
            next_seq: 1,
            chain: Vec::new(),
            runner,
            carried,
            unpushed: None,
            policy: None,
            no_sandbox: None,
            outcome: None,
            marked_read: BTreeMap::new(),
            settled: None,
            #[cfg(feature = "mutants")]
            mutant: None,
        };
        let fetch = merge.fetch();
        merge.out.send(fetch, Purpose::Fetch);
        merge
    }

    /// Main, the change's chain, and the queue, where the request takes a place; and the log
    /// and evidence notes of the runner that works it next, if one does.
    fn fetch(&self) -> Action {
        let mut spec = FetchSpec::new([
            refs::main(&self.input.main),
            refs::change_pattern(&self.input.change),
            refs::QUEUE_PATTERN.to_string(),
        ]);
        spec.patterns.extend(
            self.runner
                .as_deref()
                .into_iter()
                .flat_map(refs::runner_patterns),
        );
        Action::Fetch(spec)
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        let result = report::failed(why, Some(&self.input.change));
        self.finish(result);
    }

    fn again(&mut self) {
        self.races += 1;
        if self.races > MAX_RACES {
            let why = "other writers kept moving the change or the queue";
            return self.refuse(&self.input.change.clone(), Refusal::RacesLost { why });
        }
        let fetch = self.fetch();
        self.out.send(fetch, Purpose::Fetch);
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        // The next place follows the last request's, which that request's step names.
        match self.remote.get(refs::QUEUE_LAST).cloned() {
            Some(last) => {
                self.out
                    .send(Action::ReadSteps { oids: vec![last] }, Purpose::ReadLast);
            }
            None => {
                self.next_seq = 1;
                self.read_chain();
            }
        }
    }

    fn on_last(&mut self, steps: Vec<super::RawStep>) {
        let last = steps
            .first()
            .and_then(|raw| Step::from_message(&raw.message).ok());
        match last.map(|step| step.body) {
            Some(StepBody::Request { seq, .. }) => {
                self.next_seq = seq + 1;
                self.read_chain();
            }
            _ => self.fail(format!("{} does not name a request", refs::QUEUE_LAST)),
        }
    }

    fn read_chain(&mut self) {
        self.out.send(
            read_chain(&self.remote, &self.input.change),
            Purpose::ReadChain,
        );
    }

    fn on_chain(&mut self, reads: Vec<ChainRead>) {
        let (record, tip, chain) = match fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        self.chain = chain;
        if let Some(written) = self.written.take()
            && self.chain.iter().any(|(oid, _)| *oid == written)
        {
            // The request whose reply was lost did land.
            return self.queued(&record);
        }
        if let Some(op) = record.merged() {
            let merged_op = op.id.clone();
            return self.refuse(&record.change, Refusal::AlreadyMerged { merged_op });
        }
        if record.abandoned {
            return self.refuse(&record.change, Refusal::Abandoned { abandoned: true });
        }
        let freeze = Action::FreezeDraft {
            change: record.change.clone(),
            parent: record.current_draft().clone(),
            base: record.base.clone(),
            labels: Labels::carried(&record.change),
        };
        let read = Read { record, tip };
        match self.draft.clone() {
            Some(draft) => self.request(read, draft),
            None => {
                self.out.send(freeze, Purpose::Freeze(Box::new(read)));
            }
        }
    }

    /// Records the request for `draft`, unless the live operation already asks for it from a
    /// queue place a runner can read. One whose place is gone or holds no request bay can read
    /// is asked again: the new request takes a new place and gives the broken one up.
    fn request(&mut self, read: Read, draft: Oid) {
        self.draft = Some(draft.clone());
        let record = &read.record;
        // Without a sandbox, the policy at the draft's base says first whether this machine
        // can run the merge at all, even one already queued, which it would run too.
        if self.no_sandbox.is_some()
            && self
                .policy
                .as_ref()
                .is_none_or(|(base, _)| *base != record.base)
        {
            let policy = Action::ReadFile {
                commit: record.base.clone(),
                path: POLICY_PATH.into(),
            };
            self.out
                .send(policy, Purpose::Policy(Box::new(Ask { read, draft })));
            return;
        }
        if let Some(refused) = self.sandbox_refused() {
            return self.finish(refused);
        }
        if record.live_op().is_some_and(|op| {
            op.draft == draft && lost_place(&self.remote, &self.chain, op).is_none()
        }) {
            return self.queued(record);
        }
        if !record.marked.is_empty() && self.settled.as_ref() != Some(&draft) {
            return self.read_marked(Ask { read, draft });
        }
        let judged = (record.base.clone(), draft.clone());
        if self.within_limits.as_ref() != Some(&judged) {
            let policy = Action::ReadFile {
                commit: record.base.clone(),
                path: POLICY_PATH.into(),
            };
            self.out
                .send(policy, Purpose::Policy(Box::new(Ask { read, draft })));
            return;
        }
        let Read { record, tip } = read;
        let n = u32::try_from(record.ops.len() + 1).unwrap_or(u32::MAX);
        let seq = self.next_seq;
        let op = record.change.op(n);
        let body = StepBody::Request {
            op: op.clone(),
            draft: draft.clone(),
            base: record.base.clone(),
            seq,
        };
        let step = self
            .nonces
            .step(&record.change, self.now, &self.input.actor, body);
        let plan = PushPlan {
            appends: vec![Append::on(
                record.change.clone(),
                Some(tip),
                vec![step.clone()],
                Some(draft),
            )],
            // The request takes a new place; the operation it replaces gives its place up.
            updates: [
                RefUpdate {
                    name: refs::queue(seq),
                    expect: Expect::Absent,
                    new: NewValue::Step { append: 0, step: 0 },
                },
                RefUpdate {
                    name: refs::QUEUE_LAST.to_string(),
                    expect: match self.remote.get(refs::QUEUE_LAST) {
                        Some(last) => Expect::Is(last.clone()),
                        None => Expect::Absent,
                    },
                    new: NewValue::Step { append: 0, step: 0 },
                },
            ]
            .into_iter()
            .chain(
                record
                    .live_op()
                    .and_then(|op| give_up_place(&self.remote, op.seq)),
            )
            .collect(),
            atomic: true,
            ..PushPlan::default()
        };
        let carried = self.carried && record.after.is_empty() && self.nothing_queued_ahead(&record);
        let requesting = Box::new(Requesting {
            record,
            step,
            op,
            seq,
        });
        if carried {
            let write = Action::WriteSteps(plan.appends[0].clone());
            self.out
                .send(write, Purpose::WriteRequest(Box::new(plan), requesting));
            return;
        }
        self.out
            .send(Action::Push(plan), Purpose::Request(requesting));
    }

    /// The view's work is saved as `frozen`. A clean draft is requested; one that carried the
    /// view's work over onto a draft saved elsewhere with conflicts holds markers no record
    /// names yet, so a checkpoint naming them goes up first (unless the record names that
    /// draft already), and the merge is refused with the view made from that draft for the
    /// agent to resolve.
    fn on_frozen(&mut self, read: Read, frozen: Refreshed) {
        if frozen.conflicts.is_empty() {
            return self.request(read, frozen.draft);
        }
        let Read { record, tip } = read;
        if frozen.draft == *record.current_draft() {
            // The record names this draft and its markers already: an earlier merge stopped
            // before it made the view.
            let carried = Carried {
                frozen,
                paths: record.paths,
            };
            return self.show(carried);
        }
        let plan = self.nonces.checkpoint(
            &record,
            tip,
            self.now,
            &self.input.actor,
            frozen.draft.clone(),
            Labels::carried(&record.change).marked(&frozen.marked),
        );
        let carried = Carried {
            frozen,
            paths: record.paths,
        };
        self.out
            .send(Action::Push(plan), Purpose::Mark(Box::new(carried)));
    }

    /// A checkpoint whose fate is unknown is read back by the next freeze: a record that took
    /// it names the carried draft, which the freeze then answers again.
    fn on_mark_pushed(&mut self, carried: Carried, report: PushReport) {
        match report.outcome {
            PushOutcome::Accepted => self.show(carried),
            PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => self.again(),
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    /// Makes the view show the carried-over draft, its markers now recorded.
    fn show(&mut self, carried: Carried) {
        let make = Action::MakeView {
            change: self.input.change.clone(),
            paths: carried.paths.clone(),
            draft: carried.frozen.draft.clone(),
        };
        self.out.send(make, Purpose::Show(Box::new(carried)));
    }

    /// Reads each file of the draft `ask` names that bay left conflict markers in.
    fn read_marked(&mut self, ask: Ask) {
        self.marked_read.clear();
        #[cfg(feature = "mutants")]
        if self.mutant == Some(super::runner::Mutant::IgnoreConflictMarkers) {
            self.settled = Some(ask.draft.clone());
            return self.request(ask.read, ask.draft);
        }
        let ask = Arc::new(ask);
        for path in conflict::paths(&ask.read.record.marked) {
            let read = Action::ReadFile {
                commit: ask.draft.clone(),
                path: path.clone(),
            };
            let ask = Arc::clone(&ask);
            self.out.send(read, Purpose::Marked { path, ask });
        }
    }

    /// One marked file read; once every one is, a draft that still holds a marker line bay
    /// wrote is refused, naming the files.
    fn on_marked(&mut self, path: String, bytes: Option<Vec<u8>>, ask: Arc<Ask>) {
        self.marked_read.insert(path, bytes);
        let record = &ask.read.record;
        if self.marked_read.len() < conflict::paths(&record.marked).len() {
            return;
        }
        let unresolved = conflict::unresolved(&record.marked, &self.marked_read);
        if unresolved.is_empty() {
            let Ask { read, draft } = Arc::unwrap_or_clone(ask);
            self.settled = Some(draft.clone());
            return self.request(read, draft);
        }
        let mut markers: Vec<String> = record
            .marked
            .iter()
            .flat_map(|m| m.lines.iter().cloned())
            .collect();
        markers.sort();
        markers.dedup();
        let refusal = Refusal::MarkersRemain {
            paths: unresolved,
            markers_remain: true,
            markers,
        };
        self.refuse(&record.change.clone(), refusal);
    }

    /// A broken merge for the simulator's tests (see `runner::Mutant`).
    #[cfg(feature = "mutants")]
    pub fn mutate(&mut self, mutant: Option<super::runner::Mutant>) {
        self.mutant = mutant;
    }

    /// Whether the queue, as fetched, holds no place but the one this change's own operation
    /// gives up: the request would be the head at once.
    fn nothing_queued_ahead(&self, record: &ChangeRecord) -> bool {
        let own = record.live_op().map(|op| op.seq);
        self.remote
            .keys()
            .filter_map(|name| refs::parse_queue(name))
            .all(|seq| Some(seq) == own)
    }

    /// The request step is in the clone's store: the runner carries it, so this command sees
    /// the remote as if it were up. A step that could not be written is pushed as usual.
    fn on_request_written(
        &mut self,
        plan: PushPlan,
        requesting: Box<Requesting>,
        written: Result<Vec<Oid>, super::Fault>,
    ) {
        let Some(step) = written.ok().and_then(|oids| oids.first().cloned()) else {
            self.out
                .send(Action::Push(plan), Purpose::Request(requesting));
            return;
        };
        let append = &plan.appends[0];
        self.unpushed = Some(UnpushedRequest::new(
            append.change.clone(),
            requesting.op.clone(),
            step.clone(),
            append.parent.clone(),
            plan.updates.clone(),
        ));
        self.requested(*requesting, step);
    }

    fn on_policy(&mut self, ask: Ask, bytes: Option<Vec<u8>>) {
        let base = ask.read.record.base.clone();
        self.policy = Some((base.clone(), bytes.clone()));
        if let Some(refused) = self.sandbox_refused() {
            return self.finish(refused);
        }
        let Some(policy) = bytes.and_then(|bytes| parse_policy(&bytes).ok()) else {
            return self.within(ask);
        };
        match self.remote.get(&refs::main(&self.input.main)) {
            Some(main) if *main != base => {
                let read = Action::ReadFile {
                    commit: main.clone(),
                    path: POLICY_PATH.into(),
                };
                self.out
                    .send(read, Purpose::MainPolicy(Box::new(policy), Box::new(ask)));
            }
            _ => self.measure(
                Caps {
                    at_base: policy,
                    on_main: None,
                },
                ask,
            ),
        }
    }

    /// Main's policy read; one bay cannot read leaves the base's to say the cap (the runner
    /// refuses the merge on main's broken policy all the same).
    fn on_main_policy(&mut self, at_base: Policy, ask: Ask, bytes: Option<Vec<u8>>) {
        let on_main = bytes.and_then(|bytes| parse_policy(&bytes).ok());
        self.measure(Caps { at_base, on_main }, ask);
    }

    fn measure(&mut self, caps: Caps, ask: Ask) {
        // A cap on the waits for a yes needs the draft's paths, to know whether it owes one.
        if caps.at_base.limits.sizes_unset() && caps.waits().is_none() {
            return self.within(ask);
        }
        let read = Action::ReadStats {
            base: ask.read.record.base.clone(),
            commit: ask.draft.clone(),
        };
        self.out
            .send(read, Purpose::Stats(Box::new(caps), Box::new(ask)));
    }

    fn on_stats(&mut self, caps: &Caps, ask: Ask, stats: &[PathStat]) {
        let paths: Vec<String> = stats.iter().map(|stat| stat.path.clone()).collect();
        match caps.at_base.limits.judge(stats) {
            Some(too_large) => {
                self.refuse(&self.input.change.clone(), Refusal::TooLarge(too_large));
            }
            None => match caps.waits() {
                // The cap never holds a change that needs no approval.
                Some(cap) if !crate::approval::required(caps.on_main(), &paths).is_empty() => {
                    let held = Action::ReadHeld {
                        prefix: refs::CHANGES.into(),
                        limit: crate::flow::FLOW_CHAINS,
                    };
                    self.out.send(held, Purpose::Held(cap, Box::new(ask)));
                }
                _ => self.within(ask),
            },
        }
    }

    /// The change records this clone holds, from its earlier fetches, read with no fetch, as
    /// `bay status` reads its flow.
    fn on_held(&mut self, cap: u64, ask: Ask, held: Refs) {
        let chains: Vec<ChainQuery> = held
            .iter()
            .filter_map(|(name, tip)| ChainQuery::of_ref(name, tip))
            .collect();
        if chains.is_empty() {
            return self.within(ask);
        }
        self.out.send(
            Action::ReadChains { chains },
            Purpose::HeldChains(cap, Box::new(ask)),
        );
    }

    /// `WIP_LIMIT` while `cap` other live changes wait for a yes: `detail.review` names how
    /// many, the `max`, the `oldest` and its `age_s`.
    fn on_held_chains(&mut self, cap: u64, ask: Ask, reads: Vec<ChainRead>) {
        let records: Vec<ChangeRecord> = reads
            .iter()
            .filter_map(|read| super::agent::fold_chain(read).ok())
            .map(|(record, _)| record)
            .collect();
        let (count, oldest) =
            crate::approval::waiting_queue(&records, Some(&self.input.change), self.now);
        if (count as u64) < cap {
            return self.within(ask);
        }
        let review = Review {
            waiting: count,
            max: cap,
            age_s: oldest.as_ref().map(|oldest| oldest.age_s),
            oldest,
        };
        self.refuse(&self.input.change.clone(), Refusal::WipLimit { review });
    }

    /// Refuses `change`'s submission so.
    fn refuse(&mut self, change: &ChangeId, refusal: Refusal) {
        let result = report::refused(refusal.code(), Some(change), None, refusal.to_json());
        self.finish(result);
    }

    /// The draft is within the caps at its base: request it.
    fn within(&mut self, ask: Ask) {
        let Ask { read, draft } = ask;
        self.within_limits = Some((read.record.base.clone(), draft.clone()));
        self.request(read, draft);
    }

    fn on_pushed(&mut self, requesting: Requesting, report: PushReport) {
        let written = report.steps.first().and_then(|s| s.last()).cloned();
        match report.outcome {
            PushOutcome::Accepted => match written {
                Some(written) => self.requested(requesting, written),
                None => self.fail("the remote took the request and named no step".into()),
            },
            PushOutcome::Rejected { .. } => self.again(),
            PushOutcome::Unknown { .. } => {
                self.written = written;
                self.again();
            }
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    /// The request step `written` is up (or written for the runner to carry): the remote as the
    /// push left it, so a runner started from this view reads none of it, and the result.
    fn requested(&mut self, requesting: Requesting, written: Oid) {
        let Requesting {
            mut record,
            step,
            seq,
            ..
        } = requesting;
        for name in [
            refs::change(&self.input.change),
            refs::queue(seq),
            refs::QUEUE_LAST.to_string(),
        ] {
            self.remote.insert(name, written.clone());
        }
        if let Some(old) = record.live_op() {
            self.remote.remove(&refs::queue(old.seq));
        }
        self.chain.push((written, step.clone()));
        match record.append(&step) {
            Ok(()) => self.queued(&record),
            Err(e) => self.fail(format!("the request does not fit the record: {e}")),
        }
    }

    /// What this command knows of the remote once its request is up, for a runner that works
    /// the operation next (`merge --wait`).
    pub fn seed(&self) -> Option<Seed> {
        // A live operation that waits for an approval is queued too: `merge --wait` takes it
        // up, and merges it once the yes is in.
        self.outcome.as_ref().filter(|r| {
            r.decision == crate::result::Decision::Queued
                || r.reason == Some(ReasonCode::ApprovalPending)
        })?;
        Some(Seed {
            refs: self.remote.clone(),
            change: self.input.change.clone(),
            chain: self.chain.clone(),
            config: None,
            tips_of: self.runner.clone(),
            request: self.unpushed.clone(),
            policy: self.policy.clone(),
        })
    }

    fn queued(&mut self, record: &ChangeRecord) {
        let Some(op) = record.ops.last() else {
            // The step this command wrote is in the chain, yet the chain holds no request: the
            // answers about the remote disagree with each other.
            return self.fail("the remote's record shows no request after bay wrote one".into());
        };
        let main = self.remote.get(&refs::main(&self.input.main)).cloned();
        let result = report::with_main(report::op_result(record, op), main.as_ref());
        self.finish(result);
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::ReadLast, Completion::StepsRead(Ok(steps))) => self.on_last(steps),
            (Purpose::ReadChain, Completion::ChainsRead(Ok(reads))) => self.on_chain(reads),
            (Purpose::Freeze(read), Completion::DraftFrozen(Ok(frozen))) => {
                self.on_frozen(*read, frozen)
            }
            (Purpose::Mark(carried), Completion::Pushed(report)) => {
                self.on_mark_pushed(*carried, report)
            }
            (Purpose::Show(carried), Completion::ViewMade(Ok(view))) => {
                let refusal = Refusal::Carried {
                    conflicts: carried.frozen.conflicts,
                    view,
                    markers: Labels::carried(&self.input.change).lines(),
                    carried_over: true,
                };
                self.refuse(&self.input.change.clone(), refusal);
            }
            (Purpose::Marked { path, ask }, Completion::FileRead(Ok(bytes))) => {
                self.on_marked(path, bytes, ask)
            }
            (Purpose::Policy(ask), Completion::FileRead(Ok(bytes))) => self.on_policy(*ask, bytes),
            (Purpose::MainPolicy(policy, ask), Completion::FileRead(Ok(bytes))) => {
                self.on_main_policy(*policy, *ask, bytes)
            }
            (Purpose::Stats(caps, ask), Completion::StatsRead(Ok(stats))) => {
                self.on_stats(&caps, *ask, &stats)
            }
            (Purpose::Held(cap, ask), Completion::HeldRead(Ok(held))) => {
                self.on_held(cap, *ask, held)
            }
            (Purpose::HeldChains(cap, ask), Completion::ChainsRead(Ok(reads))) => {
                self.on_held_chains(cap, *ask, reads)
            }
            (Purpose::Request(requesting), Completion::Pushed(report)) => {
                self.on_pushed(*requesting, report)
            }
            (Purpose::WriteRequest(plan, requesting), Completion::StepsWritten(written)) => {
                self.on_request_written(*plan, requesting, written)
            }
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Merge, "merge");
