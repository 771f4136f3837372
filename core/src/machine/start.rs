//! `bay start`: open a change for an intent, or pick up an existing one.
//!
//! One intent claims one change even when starts race: a start creates the change's chain and
//! the intent's generation ref in one atomic push, and the generation ref is create-only, so of
//! racing starts exactly one wins; the others read the winner's change and pick it up. The same
//! words pick up the intent's open change. After the intent's change merged, a start opens the
//! intent's next generation, which names the merged change as the one it supersedes.

use super::agent::{self, MAX_RACES, Nonces};
use super::{
    Action, Append, Completion, Expect, FetchSpec, NewValue, Outbox, PushOutcome, PushPlan,
    RawStep, RefUpdate, Refreshed, Refs,
};
use crate::disk::DiskSpace;
use crate::git::{Oid, refs};
use crate::id::{ChangeId, intent_digest};
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Step, StepBody};
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

/// The most main commits `detail.behind` counts.
pub const MAX_BEHIND: u32 = 10_000;

/// What to start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartTarget {
    /// `bay start <intent> --paths <path>...`
    Intent { intent: String, paths: Vec<String> },
    /// `bay start <change>`
    Change(ChangeId),
}

#[derive(Clone, Debug)]
pub struct StartInput {
    pub target: StartTarget,
    pub actor: String,
    pub main: String,
    /// `--new`: open the intent's next change instead of adopting its ended one.
    pub new: bool,
    /// `--fixes <change>`: the merged change a new change fixes.
    pub fixes: Option<ChangeId>,
    /// `--after <change>...`: changes that must merge before a new change may.
    pub after: Vec<ChangeId>,
    /// Entropy for the change id and step nonces.
    pub entropy: u64,
    /// Free space where the view would go, when this machine sets a floor (`bay.minFreeMiB`).
    pub disk: Option<DiskSpace>,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    ReadIntent,
    FetchChain,
    FetchIntents,
    ReadChain,
    Freeze,
    Refresh,
    Create { generation: u32 },
    Save,
    View,
    Behind,
    Places,
    FetchLive(FetchSpec),
    ReadLive,
}

/// The `bay start` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Start {
    input: StartInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    nonces: Nonces,
    races: u32,
    remote: Refs,
    /// The change picked up, as read.
    found: Option<(ChangeRecord, Oid)>,
    /// The patterns of a fetch in flight after the first.
    more: Option<FetchSpec>,
    /// The draft the view shows: the picked-up draft, brought up to main.
    view_draft: Option<Oid>,
    /// The start step this machine wrote, when its fate is unknown.
    written: Option<Oid>,
    /// What the result will say, filled as the work goes.
    detail: serde_json::Map<String, serde_json::Value>,
    change: Option<ChangeId>,
    outcome: Option<BayResult>,
}

impl Start {
    pub fn new(mut input: StartInput, now: Timestamp) -> Start {
        // A fix or a change that waits for others is new work: it never adopts an ended change.
        input.new |= input.fixes.is_some() || !input.after.is_empty();
        let nonces = Nonces::new(input.entropy);
        let mut start = Start {
            input,
            out: Outbox::default(),
            now,
            nonces,
            races: 0,
            remote: Refs::new(),
            found: None,
            more: None,
            view_draft: None,
            written: None,
            detail: serde_json::Map::new(),
            change: None,
            outcome: None,
        };
        // Below the machine's floor nothing is made, not even the change's record.
        if let Some(disk) = start.input.disk.clone().filter(DiskSpace::is_low) {
            start.refuse(ReasonCode::DiskLow, disk.detail());
            return start;
        }
        let fetch = start.first_fetch();
        start.out.send(fetch, Purpose::Fetch);
        start
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        let result = report::failed(why, self.change.as_ref());
        self.finish(result);
    }

    fn refuse(&mut self, code: ReasonCode, detail: serde_json::Value) {
        let result = report::refused(code, self.change.as_ref(), None, detail);
        self.finish(result);
    }

    fn main(&self) -> Option<Oid> {
        self.remote.get(&refs::main(&self.input.main)).cloned()
    }

    /// Starts over from a fresh fetch after losing a race.
    fn again(&mut self) {
        self.races += 1;
        if self.races > MAX_RACES {
            return self.refuse(
                ReasonCode::MergeRetryExhausted,
                serde_json::json!({ "why": "other starts kept winning the race for this intent" }),
            );
        }
        self.found = None;
        let fetch = self.first_fetch();
        self.out.send(fetch, Purpose::Fetch);
    }

    /// Main, and what names the change: the intent's generations, or the change's chain (and
    /// the chain of a change this machine created, when its push went unanswered).
    fn first_fetch(&self) -> Action {
        // The queue too: the live changes whose paths overlap this one's are named.
        let mut patterns = vec![
            refs::main(&self.input.main),
            refs::QUEUE_PATTERN.to_string(),
        ];
        match &self.input.target {
            StartTarget::Intent { intent, .. } => {
                patterns.push(refs::intents_pattern(&intent_digest(intent)));
                // Words that are a change id may name that change.
                if let Some(change) = self.named_change() {
                    patterns.push(refs::change_pattern(&change));
                }
            }
            StartTarget::Change(change) => patterns.push(refs::change_pattern(change)),
        }
        patterns.extend(self.change.iter().map(refs::change_pattern));
        patterns.extend(self.input.fixes.iter().map(refs::landed_pattern));
        patterns.extend(self.input.after.iter().map(refs::change_pattern));
        Action::Fetch(FetchSpec::new(patterns))
    }

    /// Fetches more of the remote before going on with `then`.
    fn fetch_more(&mut self, patterns: Vec<String>, then: Purpose) {
        let spec = FetchSpec::new(patterns);
        self.more = Some(spec.clone());
        self.out.send(Action::Fetch(spec), then);
    }

    fn on_more_fetched(&mut self, fetched: Refs, then: Purpose) {
        if let Some(spec) = self.more.take() {
            spec.apply(&mut self.remote, fetched);
        }
        match (then, self.change.clone()) {
            (Purpose::FetchChain, Some(change)) => self.read_chain(change),
            (Purpose::FetchIntents, _) => self.decide(),
            _ => self.fail("a fetch answered out of turn".into()),
        }
    }

    /// The change the words name, when they are a change id and `--new` was not asked for.
    fn named_change(&self) -> Option<ChangeId> {
        match &self.input.target {
            StartTarget::Intent { intent, .. } if !self.input.new => ChangeId::parse(intent).ok(),
            _ => None,
        }
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        // The argument is read as a change when it is a change id whose record is on the
        // remote; otherwise it is an intent.
        if let Some(change) = self
            .named_change()
            .filter(|c| self.remote.contains_key(&refs::change(c)))
        {
            self.input.target = StartTarget::Change(change);
        }
        if self.main().is_none() {
            return self.fail(format!(
                "the remote has no {}",
                refs::main(&self.input.main)
            ));
        }
        // A fix names a change on main: its merged marker says so.
        if let Some(fixes) = &self.input.fixes
            && !self.remote.contains_key(&refs::landed(fixes))
        {
            let main = self.main();
            return self.refuse(
                ReasonCode::ChangeNotMerged,
                serde_json::json!({ "target": fixes, "main": main }),
            );
        }
        // Each change to wait for must be on the remote.
        if let Some(missing) = self
            .input
            .after
            .iter()
            .find(|change| !self.remote.contains_key(&refs::change(change)))
        {
            return self.fail(format!(
                "--after names {missing}, which is not on the remote; start it first"
            ));
        }
        if let Some(written) = self.written.take() {
            // A start of ours whose reply was lost: it won if its step is where the intent points.
            if self.remote.values().any(|oid| oid == &written) {
                return self.make_view();
            }
        }
        match self.input.target.clone() {
            StartTarget::Change(change) => self.read_chain(change),
            StartTarget::Intent { intent, .. } => {
                match agent::latest_generation(&self.remote, &intent) {
                    None => self.create(1, None),
                    Some((_, oid)) => {
                        self.out
                            .send(Action::ReadSteps { oids: vec![oid] }, Purpose::ReadIntent);
                    }
                }
            }
        }
    }

    fn on_intent_read(&mut self, steps: Vec<RawStep>) {
        match steps.first().map(|raw| Step::from_message(&raw.message)) {
            Some(Ok(step)) => {
                self.change = Some(step.change.clone());
                self.fetch_more(
                    vec![refs::change_pattern(&step.change)],
                    Purpose::FetchChain,
                );
            }
            _ => self.fail("the record of this intent cannot be read".into()),
        }
    }

    fn read_chain(&mut self, change: ChangeId) {
        self.change = Some(change.clone());
        match agent::read_chain(&self.remote, &change) {
            Ok(read) => {
                self.out.send(read, Purpose::ReadChain);
            }
            Err(why) => self.fail(why),
        }
    }

    fn on_chain(&mut self, reads: Vec<super::ChainRead>) {
        let (record, tip, _) = match agent::fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        let by_id = matches!(self.input.target, StartTarget::Change(_));
        let digest = intent_digest(&record.intent);
        self.found = Some((record.clone(), tip));
        if by_id && record.ended() {
            // Whether a newer change holds the intent now decides what to say.
            return self.fetch_more(vec![refs::intents_pattern(&digest)], Purpose::FetchIntents);
        }
        self.decide();
    }

    /// Picks the found change up, or opens the intent's next change, or refuses.
    fn decide(&mut self) {
        let (record, _) = self
            .found
            .clone()
            .expect("a decision follows a found change");
        let newer = self.newer_generation(&record);
        let by_id = matches!(self.input.target, StartTarget::Change(_));
        if record.merged().is_some() || (record.ended() && (self.input.new || newer.is_some())) {
            if by_id {
                return match newer {
                    Some(generation) => self.refuse(
                        ReasonCode::ChangeSuperseded,
                        serde_json::json!({ "superseded_generation": generation }),
                    ),
                    None => self.refuse(ReasonCode::ChangeAlreadyMerged, serde_json::json!({})),
                };
            }
            let next = newer.unwrap_or(record.generation) + 1;
            return self.create(next, Some(record.change.clone()));
        }
        // Pick it up: save the work in this machine's view, if it has one, then bring that
        // draft up to main, as this actor's.
        let action = Action::FreezeDraft {
            change: record.change.clone(),
            parent: record.current_draft().clone(),
            base: record.base.clone(),
        };
        self.out.send(action, Purpose::Freeze);
    }

    fn on_frozen(&mut self, draft: Oid) {
        let (record, _) = self.found.clone().expect("a freeze follows a found change");
        let main = self.main().expect("main was checked after the fetch");
        let action = Action::RefreshDraft {
            change: record.change.clone(),
            draft,
            base: record.base,
            onto: main,
        };
        self.out.send(action, Purpose::Refresh);
    }

    fn newer_generation(&self, record: &ChangeRecord) -> Option<u32> {
        let digest = intent_digest(&record.intent);
        self.remote
            .keys()
            .filter_map(|name| refs::parse_intent(name))
            .filter(|(d, generation)| *d == digest && *generation > record.generation)
            .map(|(_, generation)| generation)
            .max()
    }

    fn on_refreshed(&mut self, refreshed: Refreshed) {
        let (record, tip) = self
            .found
            .clone()
            .expect("a refresh follows a found change");
        let main = self.main().expect("main was checked after the fetch");
        let actor = self.input.actor.clone();
        let mut steps = Vec::new();
        let adopting = record.actor != actor || record.ended();
        if adopting {
            steps.push(self.nonces.step(
                &record.change,
                self.now,
                &actor,
                StepBody::Adopt {
                    actor: actor.clone(),
                },
            ));
        }
        if &refreshed.draft != record.current_draft() || record.base != main {
            let body = StepBody::Checkpoint {
                draft: refreshed.draft.clone(),
                base: main,
            };
            steps.push(self.nonces.step(&record.change, self.now, &actor, body));
        }
        self.detail
            .insert("adopted".into(), serde_json::Value::Bool(adopting));
        if !refreshed.conflicts.is_empty() {
            self.detail
                .insert("conflicts".into(), serde_json::json!(refreshed.conflicts));
        }
        self.found = Some((record.clone(), tip.clone()));
        self.view_draft = Some(refreshed.draft.clone());
        if steps.is_empty() {
            return self.make_view();
        }
        let plan = PushPlan {
            appends: vec![Append::on(
                record.change.clone(),
                Some(tip),
                steps,
                Some(refreshed.draft),
            )],
            atomic: true,
            ..PushPlan::default()
        };
        self.out.send(Action::Push(plan), Purpose::Save);
    }

    /// Creates generation `generation` of the intent as a new change.
    fn create(&mut self, generation: u32, supersedes: Option<ChangeId>) {
        let StartTarget::Intent { intent, paths } = self.input.target.clone() else {
            return self.fail("only an intent opens a new change".into());
        };
        let entropy = self.nonces.next().to_be_bytes();
        let change =
            ChangeId::from_entropy([entropy[0], entropy[1], entropy[2], entropy[3], entropy[4]]);
        let base = self.main().expect("main was checked after the fetch");
        if let Some(old) = &supersedes {
            self.detail
                .insert("supersedes".into(), serde_json::json!(old));
        }
        if let Some(fixes) = &self.input.fixes {
            self.detail.insert("fixes".into(), serde_json::json!(fixes));
        }
        if !self.input.after.is_empty() {
            self.detail
                .insert("after".into(), serde_json::json!(self.input.after));
        }
        let body = StepBody::Start {
            intent: intent.clone(),
            actor: self.input.actor.clone(),
            paths,
            base,
            generation,
            supersedes,
            fixes: self.input.fixes.clone(),
            reverts: None,
            after: self.input.after.clone(),
        };
        let actor = self.input.actor.clone();
        let step = self.nonces.step(&change, self.now, &actor, body);
        let plan = PushPlan {
            appends: vec![Append::on(change.clone(), None, vec![step], None)],
            updates: vec![RefUpdate {
                name: refs::intent(&intent_digest(&intent), generation),
                expect: Expect::Absent,
                new: NewValue::Step { append: 0, step: 0 },
            }],
            atomic: true,
            ..PushPlan::default()
        };
        self.change = Some(change);
        self.found = None;
        self.out
            .send(Action::Push(plan), Purpose::Create { generation });
    }

    fn on_pushed(&mut self, purpose: Purpose, report: super::PushReport) {
        let written = report.steps.first().and_then(|s| s.last()).cloned();
        match report.outcome {
            PushOutcome::Accepted => {
                if let Purpose::Create { generation } = purpose {
                    self.detail
                        .insert("generation".into(), serde_json::json!(generation));
                }
                self.make_view();
            }
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

    fn make_view(&mut self) {
        let main = self.main().expect("main was checked after the fetch");
        let (change, paths, draft) = match &self.found {
            Some((record, _)) => (
                record.change.clone(),
                record.paths.clone(),
                self.view_draft
                    .clone()
                    .unwrap_or_else(|| record.current_draft().clone()),
            ),
            None => {
                let StartTarget::Intent { paths, .. } = &self.input.target else {
                    return self.fail("a picked-up change was not read".into());
                };
                let change = self.change.clone().expect("a created change has an id");
                (change, paths.clone(), main)
            }
        };
        self.change = Some(change.clone());
        self.out.send(
            Action::MakeView {
                change,
                paths,
                draft,
            },
            Purpose::View,
        );
    }

    fn on_view(&mut self, view: String) {
        self.detail
            .insert("view".into(), serde_json::Value::String(view));
        // A change picked up again says how many main commits it missed.
        let main = self.main().expect("main was checked after the fetch");
        match &self.found {
            Some((record, _)) if record.base != main => {
                let read = Action::ReadLog {
                    range: Some(format!("{}..{main}", record.base)),
                    limit: MAX_BEHIND,
                };
                self.out.send(read, Purpose::Behind);
            }
            _ => self.read_places(),
        }
    }

    fn on_behind(&mut self, missed: Vec<RawStep>) {
        self.detail
            .insert("behind".into(), serde_json::json!(missed.len()));
        self.read_places();
    }

    /// The requests of the queue's places, for the live changes among them.
    fn read_places(&mut self) {
        let oids: Vec<Oid> = self
            .remote
            .iter()
            .filter(|(name, _)| refs::parse_queue(name).is_some())
            .map(|(_, oid)| oid.clone())
            .collect();
        if oids.is_empty() {
            return self.done();
        }
        self.out.send(Action::ReadSteps { oids }, Purpose::Places);
    }

    fn on_places(&mut self, steps: Vec<RawStep>) {
        let mine = self.change.clone();
        let changes: std::collections::BTreeSet<ChangeId> = steps
            .iter()
            .filter_map(|raw| Step::from_message(&raw.message).ok())
            .map(|step| step.change)
            .filter(|change| Some(change) != mine.as_ref())
            .collect();
        if changes.is_empty() {
            return self.done();
        }
        let spec = FetchSpec::new(changes.iter().map(refs::change_pattern));
        self.out
            .send(Action::Fetch(spec.clone()), Purpose::FetchLive(spec));
    }

    fn on_live_fetched(&mut self, spec: FetchSpec, fetched: Refs) {
        spec.apply(&mut self.remote, fetched);
        let mine = self.change.clone();
        let chains: Vec<super::ChainQuery> = self
            .remote
            .iter()
            .filter_map(|(name, tip)| {
                let change = refs::parse_change(name)?;
                (Some(&change) != mine.as_ref() && spec.covers(name)).then(|| super::ChainQuery {
                    change,
                    tip: tip.clone(),
                    known: None,
                })
            })
            .collect();
        if chains.is_empty() {
            return self.done();
        }
        self.out
            .send(Action::ReadChains { chains }, Purpose::ReadLive);
    }

    /// Names every live change whose declared paths overlap this one's: it refuses nothing.
    fn on_live(&mut self, reads: Vec<super::ChainRead>) {
        let paths = self.paths();
        let overlaps: Vec<serde_json::Value> = reads
            .iter()
            .filter_map(|read| agent::fold_chain(read).ok())
            .map(|(record, _)| record)
            .filter(|record| {
                record.live_op().is_some() && crate::paths::overlap(&paths, &record.paths)
            })
            .map(|record| {
                serde_json::json!({
                    "change": record.change,
                    "intent": record.intent,
                    "actor": record.actor,
                    "paths": record.paths,
                })
            })
            .collect();
        if !overlaps.is_empty() {
            self.detail
                .insert("overlaps".into(), serde_json::json!(overlaps));
        }
        self.done();
    }

    /// This change's declared paths.
    fn paths(&self) -> Vec<String> {
        match (&self.found, &self.input.target) {
            (Some((record, _)), _) => record.paths.clone(),
            (None, StartTarget::Intent { paths, .. }) => paths.clone(),
            (None, StartTarget::Change(_)) => Vec::new(),
        }
    }

    fn done(&mut self) {
        let change = self
            .change
            .clone()
            .expect("a view is made for a known change");
        let main = self.main();
        let result = report::started(
            &change,
            serde_json::Value::Object(self.detail.clone()),
            main.as_ref(),
        );
        self.finish(result);
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::ReadIntent, Completion::StepsRead(Ok(steps))) => self.on_intent_read(steps),
            (
                then @ (Purpose::FetchChain | Purpose::FetchIntents),
                Completion::Fetched(Ok(fetched)),
            ) => self.on_more_fetched(fetched, then),
            (Purpose::ReadChain, Completion::ChainsRead(Ok(reads))) => self.on_chain(reads),
            (Purpose::Freeze, Completion::DraftFrozen(Ok(draft))) => self.on_frozen(draft),
            (Purpose::Refresh, Completion::DraftRefreshed(Ok(refreshed))) => {
                self.on_refreshed(refreshed)
            }
            (purpose @ (Purpose::Create { .. } | Purpose::Save), Completion::Pushed(report)) => {
                self.on_pushed(purpose, report)
            }
            (Purpose::View, Completion::ViewMade(Ok(view))) => self.on_view(view),
            (Purpose::Behind, Completion::LogRead(Ok(missed))) => self.on_behind(missed),
            (Purpose::Places, Completion::StepsRead(Ok(steps))) => self.on_places(steps),
            (Purpose::FetchLive(spec), Completion::Fetched(Ok(fetched))) => {
                self.on_live_fetched(spec, fetched)
            }
            (Purpose::ReadLive, Completion::ChainsRead(Ok(reads))) => self.on_live(reads),
            // What the change meets is news, never a condition: a read that fails leaves it
            // out, and the change and its view stand.
            (Purpose::Behind, Completion::LogRead(Err(_))) => self.read_places(),
            (Purpose::Places, Completion::StepsRead(Err(_)))
            | (Purpose::FetchLive(_), Completion::Fetched(Err(_)))
            | (Purpose::ReadLive, Completion::ChainsRead(Err(_))) => self.done(),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Start, "start");

/// The fault a failed completion carries, as text.
pub(super) fn fault_of(completion: &Completion) -> Option<String> {
    match completion {
        Completion::Fetched(Err(f))
        | Completion::StepsRead(Err(f))
        | Completion::ChainsRead(Err(f))
        | Completion::FileRead(Err(f))
        | Completion::StatsRead(Err(f))
        | Completion::LogRead(Err(f))
        | Completion::HistoryRead(Err(f))
        | Completion::AddedRead(Err(f))
        | Completion::MergeTested(Err(f))
        | Completion::CandidateBuilt(Err(f))
        | Completion::DraftFrozen(Err(f))
        | Completion::DraftRefreshed(Err(f))
        | Completion::ViewMade(Err(f)) => Some(f.to_string()),
        _ => None,
    }
}
