//! A runner's pass: read the queue from the remote, find its head, and claim, resume or watch.

use std::collections::BTreeSet;

use super::deps::Waiting;
use super::hold::{HoldAnswer, Then};
use super::unmerged::Unmerged;
use super::{Purpose, RunMode, Runner, Stage, work::Work};
use crate::config::Held;
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::id::{ChangeId, OpId};
use crate::machine::agent::unreadable_chain;
use crate::machine::{
    Action, ChainQuery, ChainRead, Completion, FetchSpec, Misuse, RawStep, unreadable,
};
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Operation, Step, StepBody};
use crate::result::BayResult;
use crate::time::Timestamp;

/// One queue place: the request step it points at, and that request's operation.
#[derive(Clone, Debug)]
pub(super) struct Place {
    pub oid: Oid,
    /// Why the place holds no request bay can read: then it holds nothing to do, and runners
    /// pass it over (see `machine::unreadable`).
    pub op: Result<OpId, String>,
}

/// A chain as last read, oldest step first.
#[derive(Clone, Debug)]
pub(super) struct Chain {
    pub tip: Oid,
    pub steps: Vec<(Oid, Step)>,
    pub record: Result<ChangeRecord, String>,
}

/// A claim held by someone else, watched on this runner's own clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Watch {
    pub change: ChangeId,
    pub tip: Oid,
    pub since: Timestamp,
}

impl Watch {
    pub fn expires(&self, lease_ms: u64) -> Timestamp {
        self.since.plus_millis(lease_ms)
    }
}

/// What one pass has done so far. Each pass starts with a new one, and drops it when it ends:
/// nothing of it outlives the pass but the hold plugin's answer, which the work the pass
/// begins takes with it.
#[derive(Debug, Default)]
pub(super) struct Pass {
    /// The hold plugin's answer, once this pass asked it.
    pub hold: HoldAnswer,
    /// Whether this pass has read the changes live operations name with `--after`, and those
    /// of them compacted into the index.
    pub dependencies_read: bool,
    pub compacted_read: bool,
    /// Whether this pass has looked for a red post check to bisect, and a bisect run's.
    pub bisect: super::bisect::Bisecting,
    /// Whether this pass has looked for merged changes to compact, and a compaction's.
    pub compaction: super::compaction::Compacting,
    /// Whether this pass has looked for a queued entry to check early, and an early run's.
    pub ahead: super::ahead::Ahead,
}

/// What the pass found at the head of the queue.
enum Head {
    Empty,
    /// The live operation first in queue order, as read: its change's record, the operation
    /// in it, and the chain's tip.
    Op {
        record: Box<ChangeRecord>,
        operation: Box<Operation>,
        tip: Oid,
    },
}

/// A queue place's live operation, as read at its chain's tip.
struct Live<'a> {
    tip: &'a Oid,
    record: &'a ChangeRecord,
    operation: &'a Operation,
}

impl Runner {
    /// A pass fetches main, the queue and the evidence notes: what an idle pass reads, the
    /// same however much history the remote holds. Chains come after, only those it needs.
    pub(super) fn start_pass(&mut self) {
        // The hold plugin answers for now: each pass that needs its answer asks again.
        self.stage = Stage::Passing(Pass::default());
        if self.seeded.is_some() {
            // The first pass of a seeded runner starts from what it was handed, and reads only
            // its own log's and notes' tips when the seed lacks them: its pushes append to
            // both, and a guess would cost a refused push and a candidate built again.
            if !self.tips_known {
                let spec = FetchSpec::new(refs::runner_patterns(&self.cfg.runner));
                self.out
                    .send(Action::Fetch(spec.clone()), Purpose::Fetch(spec));
                return;
            }
            return self.read_places();
        }
        // From here on a request handed over unpushed is judged by what the remote holds.
        self.request.read();
        // The merged, abandoned and no-effect markers too, which a runner compacts once
        // enough are ready: few, so the fetch costs the same however many changes ended.
        let mut spec = FetchSpec::new([
            self.main_pattern(self.main_in_doubt),
            refs::QUEUE_PATTERN.to_string(),
            refs::EVIDENCE_PATTERN.to_string(),
            refs::LANDED_PATTERN.to_string(),
            refs::ABANDONED_PATTERN.to_string(),
            refs::NO_EFFECT_PATTERN.to_string(),
        ])
        .maintained();
        if !self.tips_known {
            spec.patterns.push(refs::log_pattern(&self.cfg.runner));
        }
        if !self.presence_known && self.says_presence() {
            spec.patterns.push(refs::executor_pattern(&self.cfg.runner));
        }
        self.out
            .send(Action::Fetch(spec.clone()), Purpose::Fetch(spec));
    }

    /// Reads after a fault in a pass: rest, then try again.
    pub(super) fn pass_failed(&mut self) {
        let backoff = self.cfg.backoff_ms;
        self.rest(backoff);
    }

    /// Folds a pass's fetch into what this runner knows of the remote; a failed fetch ends
    /// the pass. Whether the pass goes on.
    fn absorb_fetch(&mut self, spec: FetchSpec, completion: Completion) -> Result<bool, Misuse> {
        let Completion::Fetched(result) = completion else {
            return Err(Misuse("a fetch answered with another completion".into()));
        };
        match result {
            Ok(fetched) => {
                self.tips_known |= spec.covers(&refs::log(&self.cfg.runner))
                    && spec.covers(&refs::evidence(&self.cfg.runner));
                self.presence_known |= spec.covers(&refs::executor(&self.cfg.runner));
                spec.apply(&mut self.refs, fetched);
                self.saw_main(&spec);
                Ok(true)
            }
            Err(_) => {
                self.main_in_doubt = true;
                self.pass_failed();
                Ok(false)
            }
        }
    }

    /// After a fetch that named main: main is in doubt again only once a fetch fails.
    pub(super) fn saw_main(&mut self, spec: &FetchSpec) {
        let main = self.main_ref();
        if spec.covers(&main) {
            self.main_in_doubt = !self.refs.contains_key(&main);
        }
    }

    pub(super) fn on_fetched(
        &mut self,
        spec: FetchSpec,
        completion: Completion,
    ) -> Result<(), Misuse> {
        // A seeded first pass (`merge --wait`) reads nothing it can do without: a push to an
        // own ref that is no commit fails, and the next pass reads the tip then.
        if self.absorb_fetch(spec, completion)?
            && (self.seeded.is_some() || !self.read_own_tips())
            && !self.read_earlier_presence()
        {
            self.read_places();
        }
        Ok(())
    }

    /// Reads the request of every queue place above the floor not read yet.
    pub(super) fn read_places(&mut self) {
        let live: BTreeSet<u64> = self
            .refs
            .keys()
            .filter_map(|name| refs::parse_queue(name))
            .collect();
        // Places gone from the remote (their operations ended) are forgotten.
        let gone: Vec<(u64, Place)> = self
            .places
            .extract_if(.., |seq, _| !live.contains(seq))
            .collect();
        for (seq, place) in gone {
            if let Ok(op) = place.op {
                self.place_gone(seq, op);
            }
        }
        let mut unread: Vec<Oid> = live
            .iter()
            .filter(|seq| **seq > self.floor)
            .filter_map(|seq| {
                let oid = &self.refs[&refs::queue(*seq)];
                match self.places.get(seq) {
                    Some(place) if &place.oid == oid => None,
                    _ => Some(oid.clone()),
                }
            })
            .collect();
        // The last request's step is read with the places, unless a place holds it (the usual
        // case: the newest place; then it is among them) or it was read before.
        if let Some(last) = self.refs.get(refs::QUEUE_LAST)
            && self.place_of(last).is_none()
            && self
                .last_request
                .as_ref()
                .is_none_or(|(read, _)| read != last)
        {
            unread.push(last.clone());
        }
        if unread.is_empty() {
            self.fetch_chains();
        } else {
            self.out
                .send(Action::ReadSteps { oids: unread }, Purpose::ReadPlaces);
        }
    }

    pub(super) fn on_places(&mut self, completion: Completion) -> Result<(), Misuse> {
        let Completion::StepsRead(result) = completion else {
            return Err(Misuse(
                "a step read answered with another completion".into(),
            ));
        };
        let Ok(raw) = result else {
            self.pass_failed();
            return Ok(());
        };
        let seqs: Vec<u64> = self
            .refs
            .keys()
            .filter_map(|name| refs::parse_queue(name))
            .collect();
        for seq in seqs.into_iter().filter(|seq| *seq > self.floor) {
            let oid = self.refs[&refs::queue(seq)].clone();
            if self.places.get(&seq).is_some_and(|place| place.oid == oid) {
                continue;
            }
            // A place that is no commit is left out of the answer: it holds no request.
            let message = raw
                .iter()
                .find(|r| r.oid == oid)
                .map(|RawStep { message, .. }| message.as_str());
            let op = unreadable::request_at(seq, message);
            self.places.insert(seq, Place { oid, op });
        }
        if let Some(last) = self.refs.get(refs::QUEUE_LAST)
            && let Some(raw) = raw.iter().find(|raw| raw.oid == *last)
        {
            let seq = match Step::from_message(&raw.message).map(|step| step.body) {
                Ok(StepBody::Request { seq, .. }) => Some(seq),
                _ => None,
            };
            self.last_request = Some((last.clone(), seq));
        }
        self.fetch_chains();
        Ok(())
    }

    /// The number of the last place taken as of this runner's read of the queue: the place
    /// that holds the step `refs/bay/queue/last` names, or that step's own request. `None` when
    /// it cannot tell (no such ref, or a step that names no request).
    fn queue_reach(&self) -> Option<u64> {
        let last = self.refs.get(refs::QUEUE_LAST)?;
        self.place_of(last).or_else(|| {
            self.last_request
                .as_ref()
                .filter(|(read, _)| read == last)
                .and_then(|(_, seq)| *seq)
        })
    }

    /// The number of the queue place, as fetched, that points at `step`.
    fn place_of(&self, step: &Oid) -> Option<u64> {
        self.refs
            .range::<str, _>((
                std::ops::Bound::Included(refs::QUEUE),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(name, _)| name.starts_with(refs::QUEUE))
            .find(|(_, oid)| *oid == step)
            .and_then(|(name, _)| refs::parse_queue(name))
    }

    /// Whether `operation` lost its place at the head behind a place this runner's read of the
    /// queue does not reach. Its queue read is then older than that loss (read before a pause,
    /// say, with the chains read after), so places ahead of the operation may be missing from
    /// it: the operation is passed over until a pass reads the queue again.
    fn behind_unread(&self, operation: &Operation) -> bool {
        let Some(behind) = operation.behind else {
            return false;
        };
        self.queue_reach().is_some_and(|reach| behind > reach)
    }

    /// The changes a pass reads: those of the places above the floor, and the one this runner
    /// works in `Only` mode.
    fn wanted(&self) -> BTreeSet<ChangeId> {
        let mut wanted: BTreeSet<ChangeId> = self
            .places
            .range(self.floor + 1..)
            .filter_map(|(_, place)| place.op.as_ref().ok().map(|op| op.change.clone()))
            .collect();
        if let RunMode::Only(op) = &self.cfg.mode {
            wanted.insert(op.change.clone());
        }
        // The changes of places gone since the last pass, for their outcomes.
        wanted.extend(self.memory.finishing.values().map(|op| op.change.clone()));
        // And the changes they wait for, once the pass has fetched those.
        if self.pass().is_some_and(|pass| pass.dependencies_read) {
            wanted.extend(self.dependencies());
        }
        wanted
    }

    /// Fetches the chains of the changes the pass reads.
    fn fetch_chains(&mut self) {
        let mut wanted = self.wanted();
        if let Some(seeded) = self.seeded.take() {
            wanted.remove(&seeded);
            if wanted.is_empty() {
                return self.read_chains();
            }
        }
        if wanted.is_empty() {
            return self.decide();
        }
        // With each chain its merged marker: a change marked merged never merges again.
        let spec = FetchSpec::new(
            wanted
                .iter()
                .flat_map(|change| [refs::change_pattern(change), refs::landed_pattern(change)]),
        );
        self.out
            .send(Action::Fetch(spec.clone()), Purpose::FetchChains(spec));
    }

    pub(super) fn on_chains_fetched(
        &mut self,
        spec: FetchSpec,
        completion: Completion,
    ) -> Result<(), Misuse> {
        if self.absorb_fetch(spec, completion)? {
            self.read_chains();
        }
        Ok(())
    }

    /// Reads every chain a pass needs whose tip moved since it was last read; first, the
    /// records of named changes whose refs are gone, from the index they were compacted into.
    fn read_chains(&mut self) {
        let compacted = self.compacted_dependencies();
        if let Some(read) = crate::machine::agent::read_compacted(compacted) {
            self.out.send(read, Purpose::ReadCompacted);
            return;
        }
        let wanted = self.wanted();
        let queries: Vec<ChainQuery> = wanted
            .into_iter()
            .filter_map(|change| {
                let tip = self.refs.get(&refs::change(&change))?.clone();
                let known = self.chains.get(&change).map(|chain| chain.tip.clone());
                (known.as_ref() != Some(&tip)).then_some(ChainQuery { change, tip, known })
            })
            .collect();
        if queries.is_empty() {
            self.decide();
        } else {
            self.out
                .send(Action::ReadChains { chains: queries }, Purpose::ReadChains);
        }
    }

    /// The compacted records of named changes, read: then the chains.
    pub(super) fn on_compacted(&mut self, completion: Completion) -> Result<(), Misuse> {
        let Completion::ChainsRead(result) = completion else {
            return Err(Misuse(
                "a compacted read answered with another completion".into(),
            ));
        };
        let Ok(reads) = result else {
            self.pass_failed();
            return Ok(());
        };
        for read in reads {
            // A change the index lacks is gone: it stays unread, and so ended.
            if read.unreadable.is_none() {
                self.absorb_chain(read);
            }
        }
        if let Some(pass) = self.pass_mut() {
            pass.compacted_read = true;
        }
        self.read_chains();
        Ok(())
    }

    pub(super) fn on_chains(&mut self, completion: Completion) -> Result<(), Misuse> {
        let Completion::ChainsRead(result) = completion else {
            return Err(Misuse(
                "a chain read answered with another completion".into(),
            ));
        };
        let Ok(reads) = result else {
            self.pass_failed();
            return Ok(());
        };
        for read in reads {
            self.absorb_chain(read);
        }
        self.decide();
        Ok(())
    }

    /// Adds what was read of one chain to the cache and folds it again.
    pub(super) fn absorb_chain(&mut self, read: ChainRead) {
        let mut steps: Vec<(Oid, Step)> =
            match (read.reached_known, self.chains.remove(&read.change)) {
                (true, Some(chain)) => chain.steps,
                _ => Vec::new(),
            };
        let mut unreadable = read
            .unreadable
            .as_deref()
            .map(|why| unreadable_chain(&read.change, why));
        for raw in read.steps.into_iter().rev() {
            match Step::from_message(&raw.message) {
                Ok(step) => steps.push((raw.oid, step)),
                Err(e) => unreadable = Some(format!("step {}: {e}", raw.oid.short())),
            }
        }
        let record = match unreadable {
            Some(why) => Err(why),
            None => {
                let only: Vec<Step> = steps.iter().map(|(_, step)| step.clone()).collect();
                ChangeRecord::fold(&only).map_err(|e| e.to_string())
            }
        };
        self.chains.insert(
            read.change,
            Chain {
                tip: read.tip,
                steps,
                record,
            },
        );
    }

    /// A queue place's live operation: `None` when it has ended or cannot be read.
    fn live_state(&self, place: &Place) -> Option<Live<'_>> {
        let op = place.op.as_ref().ok()?;
        let chain = self.chains.get(&op.change)?;
        if self.refs.get(&refs::change(&op.change)) != Some(&chain.tip) {
            return None;
        }
        let record = chain.record.as_ref().ok()?;
        let operation = record.op(op)?;
        (!operation.state.is_terminal()).then_some(Live {
            tip: &chain.tip,
            record,
            operation,
        })
    }

    /// Whether a fetch since the pass read its chains moved the ref of a change queued above
    /// the floor (a compaction's fetch does, for the changes it may compact; one of them may
    /// be live, such as one whose merged marker someone made by hand). Its operation may be
    /// live at the new tip: the head and every entry behind it are found only once it is read
    /// again, or a live operation would be passed over as ended.
    fn read_short_of_a_tip(&self) -> bool {
        self.places.range(self.floor + 1..).any(|(_, place)| {
            let Ok(op) = &place.op else { return false };
            self.refs
                .get(&refs::change(&op.change))
                .is_some_and(|tip| self.chains.get(&op.change).is_none_or(|c| &c.tip != tip))
        })
    }

    /// Finds the head, the live operation first in queue order, raising the floor over every
    /// place that ended before the first live one.
    fn find_head(&mut self) -> Head {
        let mut floor = self.floor;
        let mut ended_so_far = true;
        // The first live operation in queue order (`Operation::queue_key`).
        let mut head: Option<Live<'_>> = None;
        for (seq, place) in self.places.range(self.floor + 1..) {
            #[cfg(feature = "mutants")]
            if self.mutant_stops_at(place) {
                break;
            }
            if let Some(live) = self.live_state(place) {
                ended_so_far = false;
                if self.waits(&live) {
                    continue;
                }
                #[cfg(feature = "mutants")]
                if self.mutant_skips_claimed_head(&live.record.change, &live.operation.id) {
                    continue;
                }
                let key = live.operation.queue_key();
                if head
                    .as_ref()
                    .is_none_or(|first| key < first.operation.queue_key())
                {
                    head = Some(live);
                }
                continue;
            }
            if ended_so_far && self.place_has_ended(place) {
                floor = *seq;
            } else {
                ended_so_far = false;
            }
        }
        let head = head.map_or(Head::Empty, |live| Head::Op {
            record: Box::new(live.record.clone()),
            operation: Box::new(live.operation.clone()),
            tip: live.tip.clone(),
        });
        self.floor = floor;
        head
    }

    /// A held operation, or one whose dependencies or approvals are pending, is passed over:
    /// it waits without holding up the others. So is one queued behind a place this runner's
    /// read of the queue does not reach.
    fn waits(&self, live: &Live<'_>) -> bool {
        self.behind_unread(live.operation)
            || self.held(live.record).is_some()
            || self.still_awaiting(live.operation)
            || matches!(self.waiting_on(live.record), Some(Waiting::Pending { .. }))
    }

    /// The live operations above the floor that do not wait, in queue order (the head first),
    /// each with its change's record.
    pub(super) fn in_queue_order(&self) -> Vec<(ChangeRecord, Operation)> {
        let mut live: Vec<Live<'_>> = self
            .places
            .range(self.floor + 1..)
            .filter_map(|(_, place)| self.live_state(place))
            .filter(|live| !self.waits(live))
            .collect();
        live.sort_by_key(|live| live.operation.queue_key());
        live.into_iter()
            .map(|live| (live.record.clone(), live.operation.clone()))
            .collect()
    }

    /// Ended for good: its chain was read at the remote's tip and the operation is over. A
    /// place whose chain is merely unread is not, nor one bay cannot read: the floor stays below
    /// it, so that a pass reads it again once someone mends it.
    fn place_has_ended(&self, place: &Place) -> bool {
        let Ok(op) = &place.op else { return false };
        let Some(chain) = self.chains.get(&op.change) else {
            return !self.refs.contains_key(&refs::change(&op.change));
        };
        match &chain.record {
            Ok(record) => record.op(op).is_none_or(|o| o.state.is_terminal()),
            Err(_) => false,
        }
    }

    /// Why the chain of `change`, read at the remote's tip, does not fold; `None` when it does
    /// or is not read there.
    pub(super) fn unreadable_at_tip(&self, change: &ChangeId) -> Option<&str> {
        let chain = self.chains.get(change)?;
        let at_tip = self.refs.get(&refs::change(change)) == Some(&chain.tip);
        chain
            .record
            .as_ref()
            .err()
            .filter(|_| at_tip)
            .map(String::as_str)
    }

    /// The queue places above the floor this runner passes over because it cannot read them: a
    /// place that holds no request, or an operation whose chain does not fold at the remote's
    /// tip, each named as `machine::unreadable` names it.
    pub(super) fn unreadable(&self) -> Vec<unreadable::Unreadable> {
        self.places
            .range(self.floor + 1..)
            .filter_map(|(seq, place)| match &place.op {
                Err(why) => Some(unreadable::place(*seq, why)),
                Ok(op) => self
                    .unreadable_at_tip(&op.change)
                    .map(|why| unreadable::chain(*seq, op, why)),
            })
            .collect()
    }

    /// Acts on what the pass read, once it knows whether main is held.
    pub(super) fn decide(&mut self) {
        self.read_finished();
        if self.request_settled() {
            return;
        }
        if let RunMode::Only(op) = &self.cfg.mode
            && let Some(result) = self.only_outcome(op)
        {
            self.finish(result);
            return;
        }
        if let RunMode::Only(op) = &self.cfg.mode
            && let Some(why) = self.unreadable_at_tip(&op.change)
        {
            // `merge --wait` on a change whose record it cannot read: it can do nothing here.
            let why = format!("{why}; {}", unreadable::hint_for_chain(&op.change));
            self.finish(crate::report::failed(why, Some(&op.change)));
            return;
        }
        if let Some(main) = self.refs.get(&self.main_ref()).cloned()
            && !self.holds_known(&main, Then::Decide)
        {
            return;
        }
        if self.compaction_due() {
            return self.compact();
        }
        // The changes live operations wait for: their markers and records, once a pass.
        if let Some(pass) = self.pass_mut().filter(|pass| !pass.dependencies_read) {
            pass.dependencies_read = true;
            if let Some(spec) = self.dependencies_spec() {
                self.out
                    .send(Action::Fetch(spec.clone()), Purpose::FetchChains(spec));
                return;
            }
        }
        if let RunMode::Only(op) = &self.cfg.mode
            && let Some(record) = self.record(&op.change)
            && let Some(waiting @ Waiting::Pending { .. }) = self.waiting_on(record)
        {
            // `merge --wait` before what it needs merged: the operation stays queued.
            let result = crate::report::refused(
                waiting.code(),
                Some(&op.change),
                record.op(op),
                waiting.to_json(),
            );
            self.finish(result);
            return;
        }
        // The hold plugin is asked only for an operation the pass would take on now: the head
        // (which for `merge --wait` must wait when it is another's), or `merge --wait`'s own.
        let mut heads: Vec<ChangeRecord> = match self.find_head() {
            Head::Op { record, .. } => vec![*record],
            Head::Empty => Vec::new(),
        };
        if let RunMode::Only(op) = &self.cfg.mode {
            heads.extend(self.record(&op.change).cloned());
        }
        if self.asking_before_decide(&heads) {
            return;
        }
        if let RunMode::Only(op) = &self.cfg.mode
            && let Some(record) = self.record(&op.change)
            && let Some(hold) = self.held(record)
        {
            // `merge --wait` on a held main: the operation stays queued, and says why.
            let result = crate::report::refused(
                ReasonCode::MainHeld,
                Some(&op.change),
                record.op(op),
                Held { hold }.to_json(),
            );
            self.finish(result);
            return;
        }
        if self.read_short_of_a_tip() {
            return self.read_chains();
        }
        let head = self.find_head();
        self.present_pass(&head);
        if self.withdrawn() {
            // Its executor key is no longer enrolled: another runner signs and merges.
            return self.idle_or_done();
        }
        let Head::Op {
            record,
            operation,
            tip,
        } = head
        else {
            self.watch = None;
            return self.bisect_or_rest();
        };
        if let RunMode::Only(only) = &self.cfg.mode
            && only != &operation.id
        {
            // Another operation is ahead: it merges first, by whichever runner.
            let interval = self.cfg.interval_ms;
            return self.rest(interval);
        }
        match &operation.owner {
            None => {
                self.watch = None;
                self.begin(*record, &operation, tip, false);
            }
            Some(owner) if owner == &self.cfg.runner && self.is_mine(&record.change, &tip) => {
                self.watch = None;
                self.begin(*record, &operation, tip, true);
            }
            Some(_) => self.watch_or_take_over(*record, &operation, tip),
        }
    }

    /// The presence of this pass: the live places it found, and the head it takes on (one no
    /// one holds, or that this runner holds).
    fn present_pass(&mut self, head: &Head) {
        let depth = self
            .places
            .range(self.floor + 1..)
            .filter(|(_, place)| self.live_state(place).is_some())
            .count();
        let holding = match head {
            Head::Op { operation, .. } => match &operation.owner {
                None => Some(operation.id.clone()),
                Some(owner) => (owner == &self.cfg.runner).then(|| operation.id.clone()),
            },
            Head::Empty => None,
        };
        self.present(holding, depth as u64);
    }

    /// With nothing to do now: rest until the next pass, or end a `--once` run.
    pub(super) fn idle_or_done(&mut self) {
        if self.cfg.mode == RunMode::Once {
            // What it passed over because it cannot read it, by name: someone has to mend it.
            let mut detail = serde_json::Map::new();
            let skipped = self.unreadable();
            if !skipped.is_empty() {
                detail.insert("skipped".into(), skipped.to_json());
            }
            // How many changes this run merged, so that it says what it did.
            if self.merged > 0 {
                detail.insert("merged".into(), serde_json::Value::from(self.merged));
            }
            // The runs it made early on queued entries (`[runner] ahead`).
            if !self.prechecks.is_empty() {
                let listed = serde_json::to_value(&self.prechecks).unwrap_or_default();
                detail.insert("prechecks".into(), listed);
            }
            let result = BayResult::ok(None, detail);
            self.finish(result);
        } else {
            let interval = self.cfg.interval_ms;
            self.rest(interval);
        }
    }

    fn is_mine(&self, change: &ChangeId, tip: &Oid) -> bool {
        matches!(&self.mine, Some((mine, tips)) if mine == change && tips.contains(tip))
    }

    /// Takes over a claim only after its chain has not moved for one whole lease, timed on
    /// this runner's own clock from the moment it first saw that tip.
    fn watch_or_take_over(&mut self, record: ChangeRecord, operation: &Operation, tip: Oid) {
        let lease = self.cfg.lease_ms;
        match &self.watch {
            Some(watch) if watch.change == record.change && watch.tip == tip => {
                #[cfg(feature = "mutants")]
                if self.mutant_never_takes_over() {
                    return self.rest_until_watch();
                }
                if self.now.millis_since(watch.since) >= lease {
                    self.watch = None;
                    return self.begin(record, operation, tip, false);
                }
            }
            _ => {
                self.watch = Some(Watch {
                    change: record.change,
                    tip,
                    since: self.now,
                })
            }
        }
        self.ahead_or_rest();
    }

    pub(super) fn rest_until_watch(&mut self) {
        let interval = self.cfg.interval_ms;
        self.rest(interval);
        if let (Some(watch), Stage::Idle { next_pass }) = (&self.watch, &mut self.stage) {
            let expires = watch.expires(self.cfg.lease_ms);
            if expires < *next_pass {
                *next_pass = expires;
            }
        }
    }

    /// Works `op` from scratch: under a claim this runner holds at `tip` (`claimed`), or
    /// claiming it with the first write, leased on the `tip` the pass read. A runner reads the
    /// policy and builds the candidate before it claims, so the claim goes up with what the
    /// operation needs next: its candidate, or its whole merge when no check is required.
    fn begin(&mut self, record: ChangeRecord, operation: &Operation, tip: Oid, claimed: bool) {
        let change = record.change.clone();
        self.mine = claimed.then(|| (change.clone(), BTreeSet::from([tip.clone()])));
        let Some(base) = self.refs.get(&self.main_ref()).cloned() else {
            return self.main_gone();
        };
        let waiting = self.waiting_on(&record);
        let hold = self
            .pass_mut()
            .map(|pass| std::mem::take(&mut pass.hold))
            .unwrap_or_default();
        // Unclaimed, and with nothing that ends it before a candidate, the head may take the
        // entries behind it into a batch.
        if !claimed
            && waiting.is_none()
            && self.marked_merged(&change).is_none()
            && let Some(members) = self.batch_members(operation)
        {
            return self.begin_batch(members, base, hold);
        }
        let work = Work::new(
            record,
            operation,
            tip,
            claimed,
            base,
            hold,
            self.now.plus_millis(self.cfg.heartbeat_ms),
        );
        let work = Box::new(work);
        // From here on the work is in hand: each step of it places the runner again.
        self.stage = Stage::Idle {
            next_pass: self.now,
        };
        let _placed = if let Some(Waiting::Abandoned { ended }) = waiting {
            self.end(work, Unmerged::DependencyAbandoned { ended })
        } else if let Some(end) = self.marked_merged(&change) {
            self.end(work, end)
        } else {
            self.read_policy(work)
        };
    }

    /// The merged marker of a change whose record has not merged: made outside bay, or by a
    /// hand that moved the record back. The marker is what says a change merged (the merge
    /// push creates it with main, create-only), so bay reads it as merged and never merges the
    /// change again: its live operation ends `CHANGE_ALREADY_MERGED`, naming the marker,
    /// rather than building a merge whose push the marker refuses, pass after pass.
    pub(super) fn marked_merged(&self, change: &ChangeId) -> Option<Unmerged> {
        let name = refs::landed(change);
        let commit = self.refs.get(&name)?.clone();
        Some(Unmerged::already_merged(name, commit))
    }

    /// For `merge --wait`: the result once the operation has ended.
    fn only_outcome(&self, op: &OpId) -> Option<BayResult> {
        let record = self.record(&op.change)?;
        if self.refs.get(&refs::change(&op.change)) != self.chains.get(&op.change).map(|c| &c.tip) {
            return None;
        }
        let operation = record.op(op)?;
        operation
            .state
            .is_terminal()
            .then(|| crate::report::op_result(record, operation))
    }
}
