//! `bay start`: open a change for an intent, or pick up an existing one.
//!
//! One intent claims one change even when starts race: a start creates the change's chain and
//! the intent's generation ref in one atomic push, and the generation ref is create-only, so of
//! racing starts exactly one wins; the others read the winner's change and pick it up. The same
//! words pick up the intent's open change. After the intent's change merged, a start opens the
//! intent's next generation, which names the merged change as the one it supersedes.
//!
//! A start may take in work made outside bay ([`Import`]): a branch (`--from`) or the main
//! checkout's edits (`bay save`). That work's net change on current main, taken with Git's
//! merge base, becomes the change's first draft, written with its start in the same push; a
//! conflict with main or a path the change does not declare refuses before anything is written.

mod detail;
mod held;

pub use held::{Holder, SESSION_ENV, Sessions, export_line};

use super::agent::{self, MAX_RACES, Nonces};
use super::{
    Action, Append, ChainQuery, Completion, Expect, FetchSpec, NewValue, Outbox, PushOutcome,
    PushPlan, RawStep, RefUpdate, Refreshed, Refs,
};
use std::collections::BTreeMap;

use self::detail::{Gathered, Overlap, Refusal, TakenFrom};
use crate::actor::{self, ActorSource};
use crate::config::Config;
use crate::conflict::{self, Labels};
use crate::detail::Detail;
use crate::disk::DiskSpace;
use crate::git::{Oid, refs};
use crate::id::{ChangeId, intent_digest};
use crate::limits::PathStat;
use crate::policy::AgentRules;
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

/// Work made outside bay that a start takes in as the change's first draft.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Import {
    /// `--from <branch>`: a branch by name or full ref. The remote's branch wins over this
    /// clone's; `local` is this clone's tip of it, read before the machine starts.
    Branch { name: String, local: Option<Oid> },
    /// `bay save`: the main checkout's edits, committed on `head` (never on a branch). The
    /// change declares exactly the paths they touch, and no view is made.
    Checkout { edits: Oid, head: Oid },
}

impl Import {
    /// The ref a `--from` names on the remote: a full ref as given, a name as a branch.
    pub fn branch_ref(name: &str) -> String {
        if name.starts_with("refs/") {
            name.to_owned()
        } else {
            format!("refs/heads/{name}")
        }
    }

    /// Why `name` cannot name a branch to take in, if it cannot: Git would refuse it as a
    /// branch ([`crate::ref_name::branch_problem`]), and a `*`, which bay's fetch would read
    /// as a glob, is among what it refuses.
    pub fn refuse_name(name: &str) -> Option<String> {
        crate::ref_name::branch_problem(name)
            .map(|problem| format!("--from {name:?} is not a branch name Git takes: it {problem}"))
    }
}

/// Imported work, brought up to one main commit.
#[derive(Clone, Debug)]
struct Imported {
    /// The main commit it was brought up to.
    main: Oid,
    draft: Oid,
    /// The paths its draft changes on that main.
    paths: Vec<String>,
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
    /// Work made outside bay to take in as the first draft.
    pub import: Option<Import>,
}

/// What each action is for, with what the start found before it that its answer needs.
#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    /// The record of the change the words name, when no ref of its own names it.
    CompactedNamed,
    /// A step toward the change, once the fetch found main at `main`: the commit a new change
    /// starts on, and the one a change picked up or work taken in is brought up to.
    Fetched {
        main: Oid,
        then: Then,
    },
    /// What the change met, read once it is opened (and its view made).
    News {
        opened: Box<Opened>,
        news: News,
    },
}

/// A step toward the change, once main is known.
#[derive(Clone, Debug)]
enum Then {
    /// Whether main still holds `merge`, the merge of the change `fixes` names.
    FixOnMain {
        fixes: ChangeId,
        merge: Oid,
    },
    /// Where the imported work, at `tip`, forks from main.
    ImportBase {
        tip: Oid,
    },
    ImportDraft,
    ImportPaths(Oid),
    ReadIntent,
    /// The index's record of the intent's latest compacted generation.
    CompactedIntent,
    /// The record of the change a fix names, from the index.
    CompactedFix,
    /// The records of the changes `--after` names that no ref of their own names.
    CompactedAfter,
    /// More of the remote: the chain of `change`, the intent's latest generation.
    FetchChain {
        spec: FetchSpec,
        change: ChangeId,
    },
    /// More of the remote: the generations of the intent of the change found.
    FetchIntents {
        spec: FetchSpec,
        found: Box<Found>,
    },
    ReadChain,
    /// The freeze of the found change's draft.
    Freeze(Box<Found>),
    /// The found change's draft brought up to main, after the freeze that saved it.
    Refresh {
        found: Box<Found>,
        frozen: Refreshed,
    },
    /// The push that opens generation `generation` of the intent as `change`.
    Create {
        generation: u32,
        change: ChangeId,
    },
    /// The push that picks the found change up, with `draft` as its draft.
    Save {
        found: Box<Found>,
        draft: Oid,
    },
    /// The change's view, made for `opened`; a change picked up again was on `base`.
    View {
        opened: Box<Opened>,
        base: Option<Oid>,
    },
    /// When this clone first held the tip of another actor's live change, the one found.
    Idle(Box<Found>),
    /// The change records this clone holds, and then their chains, to count the actor's live
    /// changes before a new one opens as generation `generation`.
    Held {
        generation: u32,
        supersedes: Option<ChangeId>,
    },
    HeldChains {
        generation: u32,
        supersedes: Option<ChangeId>,
    },
}

/// What the opened change met, read for the result.
#[derive(Clone, Debug)]
enum News {
    Behind,
    Places,
    FetchLive(FetchSpec),
    ReadLive,
}

/// An existing change, as read: its record and its chain's tip.
#[derive(Clone, Debug)]
struct Found {
    record: ChangeRecord,
    tip: Oid,
}

/// The change a start goes on with, for its view.
#[derive(Debug)]
enum Taken {
    /// A change picked up as read, and its draft brought up to main.
    PickedUp { found: Box<Found>, draft: Oid },
    /// The change this start created.
    Written(ChangeId),
}

/// The view a start makes once its push has landed: of which change, declaring which paths,
/// showing which draft, and, for a change picked up, the base it was on before (to say how
/// far behind main it was).
#[derive(Clone, Debug)]
struct ViewPlan {
    change: ChangeId,
    paths: Vec<String>,
    draft: Oid,
    base: Option<Oid>,
}

/// A push whose reply was lost: the step it wrote, the view it was to make (worked out when
/// the push went, on the main it went on), and the generation it created, if it created one.
#[derive(Debug)]
struct Written {
    step: Oid,
    view: ViewPlan,
    generation: Option<u32>,
}

/// The change opened or picked up: what the reads after it need.
#[derive(Clone, Debug)]
struct Opened {
    change: ChangeId,
    /// Its declared paths.
    paths: Vec<String>,
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
    /// The step this machine wrote, when its fate is unknown.
    written: Option<Written>,
    /// The imported work, once built: its draft on main.
    imported: Option<Imported>,
    /// The id a change that takes work in will have: its draft is written before its start.
    reserved: Option<ChangeId>,
    /// The main commit found to hold the merge of the change a fix names.
    fix_on: Option<Oid>,
    /// The merge of the change a fix names, from its marker or its compacted record, once
    /// known: `Some(None)` when the index holds no merge of it.
    fix_merge: Option<Option<Oid>>,
    /// Every change `--after` names that has no chain ref was found merged in the index.
    after_compacted: bool,
    /// What the result will say, filled as the work goes.
    detail: Gathered,
    change: Option<ChangeId>,
    outcome: Option<BayResult>,
    /// How long another actor's live change must stay idle before this actor adopts it
    /// (`[runner] takeover_s`).
    takeover_ms: u64,
    /// Main's `[agent]` rules ([`Start::policed`]), and, once read for a new change under a
    /// limit, the live changes this actor holds among the records this clone holds.
    rules: AgentRules,
    live: Option<Vec<ChangeId>>,
    /// The hook sessions of this clone ([`Start::in_sessions`]).
    sessions: Sessions,
}

impl Start {
    pub fn new(mut input: StartInput, now: Timestamp) -> Start {
        // A fix, a change that waits for others and a branch taken in are new work: none
        // adopts an ended change.
        input.new |= input.fixes.is_some()
            || !input.after.is_empty()
            || matches!(input.import, Some(Import::Branch { .. }));
        let bad_name = match &input.import {
            Some(Import::Branch { name, .. }) => Import::refuse_name(name),
            _ => None,
        };
        let nonces = Nonces::new(input.entropy);
        let mut start = Start {
            input,
            out: Outbox::default(),
            now,
            nonces,
            races: 0,
            remote: Refs::new(),
            written: None,
            imported: None,
            reserved: None,
            fix_on: None,
            fix_merge: None,
            after_compacted: false,
            detail: Gathered::default(),
            change: None,
            outcome: None,
            takeover_ms: Config::default().runner.takeover_s.saturating_mul(1000),
            rules: AgentRules::default(),
            live: None,
            sessions: Sessions::default(),
        };
        // Below the machine's floor nothing is made, not even the change's record.
        if let Some(disk) = start.input.disk.clone().filter(DiskSpace::is_low) {
            start.refuse(Refusal::DiskLow(disk.clone()));
            return start;
        }
        if let Some(why) = bad_name {
            start.fail(why);
            return start;
        }
        let fetch = start.first_fetch();
        start.out.send(fetch, Purpose::Fetch);
        start
    }

    /// Takes the settings of main's config, read by the command's first fetch: how long
    /// another actor's change must stay idle before this one adopts it.
    pub fn configured(&mut self, config: &Config) {
        self.takeover_ms = config.runner.takeover_s.saturating_mul(1000);
    }

    /// Takes main's `[agent]` rules, read with main's config, and where the actor's name came
    /// from. An actor without a name the policy requires is refused here; the limit is held at
    /// [`Self::create`] alone, so picking up a change adds none, and only a new change under a
    /// limit reads the change records this clone holds to count its live ones.
    pub fn policed(&mut self, rules: &AgentRules, source: ActorSource) {
        self.rules = rules.clone();
        if let Some(refused) = actor::unnamed(rules, source) {
            self.finish(refused);
        }
    }

    /// Takes the hook sessions of this clone: a change whose view another live session of this
    /// actor works in is not picked up (`CHANGE_HELD`).
    pub fn in_sessions(&mut self, sessions: Sessions) {
        self.sessions = sessions;
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        let result = report::failed(why, self.change.as_ref());
        self.finish(result);
    }

    fn refuse(&mut self, refusal: Refusal) {
        let detail = refusal.to_json();
        let result = report::refused(refusal.code(), self.change.as_ref(), None, detail);
        self.finish(result);
    }

    fn main(&self) -> Option<Oid> {
        self.remote.get(&refs::main(&self.input.main)).cloned()
    }

    /// Sends `action`, a step toward the change once the fetch found main at `main`.
    fn send(&mut self, action: Action, main: &Oid, then: Then) {
        let main = main.clone();
        self.out.send(action, Purpose::Fetched { main, then });
    }

    /// Sends `action`, a read of what the opened change met.
    fn send_news(&mut self, action: Action, opened: Opened, news: News) {
        let opened = Box::new(opened);
        self.out.send(action, Purpose::News { opened, news });
    }

    /// Starts over from a fresh fetch after losing a race.
    fn again(&mut self) {
        self.races += 1;
        if self.races > MAX_RACES {
            return self.refuse(Refusal::RacesLost {
                why: "other starts kept winning the race for this intent",
            });
        }
        let fetch = self.first_fetch();
        self.out.send(fetch, Purpose::Fetch);
    }

    /// Main, and what names the change: the intent's generations, or the change's chain (and
    /// the chain of a change this machine created, when its push went unanswered).
    fn first_fetch(&self) -> Action {
        // The queue too: the live changes whose paths overlap this one's are named. And the
        // index shard that holds the intent's latest generation once compacted: a sixteenth
        // of the intents, never the whole index. A named change found by no ref is read from
        // the index after (`agent::read_compacted`).
        let mut patterns = vec![
            refs::main(&self.input.main),
            refs::QUEUE_PATTERN.to_string(),
        ];
        match &self.input.target {
            StartTarget::Intent { intent, .. } => {
                patterns.push(refs::intents_pattern(&intent_digest(intent)));
                patterns.push(agent::compacted_intent_pattern(intent));
                // Words that are a change id may name that change.
                if let Some(change) = self.named_change() {
                    patterns.push(refs::change_pattern(&change));
                }
            }
            StartTarget::Change(change) => patterns.push(refs::change_pattern(change)),
        }
        patterns.extend(self.change.iter().map(refs::change_pattern));
        // A fix's change: its marker, or, once compacted, its record in the index.
        patterns.extend(
            self.input
                .fixes
                .iter()
                .flat_map(|c| [refs::landed_pattern(c), refs::change_pattern(c)]),
        );
        patterns.extend(self.input.after.iter().map(refs::change_pattern));
        // A trailing `*`: a branch the remote lacks is no fault, since this clone may hold it.
        if let Some(Import::Branch { name, .. }) = &self.input.import {
            patterns.push(format!("{}*", Import::branch_ref(name)));
        }
        Action::Fetch(FetchSpec::new(patterns).maintained())
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
        // remote, by a ref of its own or in the index; otherwise it is an intent.
        if let Some(change) = self.named_change() {
            if self.remote.contains_key(&refs::change(&change)) {
                self.input.target = StartTarget::Change(change);
            } else if let Some(read) = agent::read_compacted(vec![change]) {
                self.out.send(read, Purpose::CompactedNamed);
                return;
            }
        }
        self.after_fetch();
    }

    /// The words name a compacted change (a merged one), or are an intent after all.
    fn on_compacted_named(&mut self, reads: Vec<super::ChainRead>) {
        if let Some(read) = reads.iter().find(|read| read.unreadable.is_none()) {
            self.input.target = StartTarget::Change(read.change.clone());
        }
        self.after_fetch();
    }

    /// Goes on from what the fetch brought: main, and the change a fix names.
    fn after_fetch(&mut self) {
        let Some(main) = self.main() else {
            return self.fail(format!(
                "the remote has no {}",
                refs::main(&self.input.main)
            ));
        };
        self.check_fix(main);
    }

    /// Goes on from main at `main` once the change a fix names is known to be on it.
    fn check_fix(&mut self, main: Oid) {
        // A fix names a change on main: its merged marker says it merged, and main as it is now
        // must still hold that merge (asked again only when a fetch brought another main).
        if let Some(fixes) = self.input.fixes.clone() {
            let merge = self
                .remote
                .get(&refs::landed(&fixes))
                .cloned()
                .or_else(|| self.fix_merge.clone().flatten());
            let Some(merge) = merge else {
                // No marker: once compacted, its record in the index names its merge.
                let unread =
                    self.fix_merge.is_none() && !self.remote.contains_key(&refs::change(&fixes));
                if let Some(read) = unread
                    .then(|| agent::read_compacted(vec![fixes.clone()]))
                    .flatten()
                {
                    self.send(read, &main, Then::CompactedFix);
                    return;
                }
                return self.refuse(Refusal::NotMerged(agent::NotMerged {
                    target: fixes,
                    main,
                    merge: None,
                }));
            };
            self.fix_merge = Some(Some(merge.clone()));
            if self.fix_on.as_ref() != Some(&main) {
                let ask = agent::on_main(&merge, &main);
                self.send(ask, &main, Then::FixOnMain { fixes, merge });
                return;
            }
        }
        self.go_on(main);
    }

    /// The record of the change a fix names, from the index: merged, or no change at all.
    fn on_compacted_fix(&mut self, main: Oid, reads: Vec<super::ChainRead>) {
        self.fix_merge = Some(agent::merge_of(&reads));
        self.check_fix(main);
    }

    /// Main holds `merge`, the merge of the change the fix names, or main moved back past it.
    fn on_fix_base(&mut self, main: Oid, fixes: ChangeId, merge: Oid, base: Option<Oid>) {
        if !agent::holds(&merge, base.as_ref()) {
            return self.refuse(Refusal::NotMerged(agent::NotMerged {
                target: fixes,
                main,
                merge: Some(merge),
            }));
        }
        self.fix_on = Some(main.clone());
        self.go_on(main);
    }

    /// The changes `--after` names that only the index could hold: each merged, or no change.
    fn on_compacted_after(&mut self, main: Oid, reads: Vec<super::ChainRead>) {
        if let Some(absent) = reads.iter().find(|read| read.unreadable.is_some()) {
            return self.after_missing(&absent.change.clone());
        }
        self.after_compacted = true;
        self.go_on(main);
    }

    fn after_missing(&mut self, change: &ChangeId) {
        self.fail(format!(
            "--after names {change}, which is not on the remote; start it first"
        ));
    }

    /// What follows a fetch once the change a fix names is known to be on main, at `main`.
    fn go_on(&mut self, main: Oid) {
        // Each change to wait for must be on the remote: by its chain, or merged and
        // compacted into the index.
        let missing: Vec<ChangeId> = self
            .input
            .after
            .iter()
            .filter(|change| !self.remote.contains_key(&refs::change(change)))
            .cloned()
            .collect();
        if let Some(first) = missing.first()
            && !self.after_compacted
        {
            let first = first.clone();
            return match agent::read_compacted(missing) {
                Some(read) => self.send(read, &main, Then::CompactedAfter),
                None => self.after_missing(&first),
            };
        }
        if let Some(written) = self.written.take() {
            // A start of ours whose reply was lost: it won if its step is where the intent points.
            // Its view shows what the push wrote, not the main fetched now: a draft made on
            // a newer main than the record's base would carry that main's files as its work.
            if self.remote.values().any(|oid| oid == &written.step) {
                if let Some(generation) = written.generation {
                    self.detail.generation = Some(generation);
                }
                return self.make(main, written.view);
            }
        }
        // Imported work is brought up to the main just fetched before anything is decided.
        if self.input.import.is_some() && self.imported.as_ref().map(|i| &i.main) != Some(&main) {
            return self.import(main);
        }
        self.open(main);
    }

    /// Opens the intent's change, or picks the named one up.
    fn open(&mut self, main: Oid) {
        match self.input.target.clone() {
            StartTarget::Change(change) => self.read_chain(main, change),
            StartTarget::Intent { intent, .. } => {
                match agent::latest_generation(&self.remote, &intent) {
                    None => match agent::read_compacted_generation(&self.remote, &intent) {
                        Some(read) => self.send(read, &main, Then::CompactedIntent),
                        None => self.create(main, 1, None),
                    },
                    Some((_, oid)) => {
                        let read = Action::ReadSteps { oids: vec![oid] };
                        self.send(read, &main, Then::ReadIntent);
                    }
                }
            }
        }
    }

    /// An intent whose generations were all compacted: the latest merged, or was abandoned
    /// past the retention window with its drafts, so the next opens.
    fn on_compacted_intent(&mut self, main: Oid, file: Option<Vec<u8>>) {
        match agent::compacted_generation(file.as_deref()) {
            Ok(None) => self.create(main, 1, None),
            Ok(Some(latest)) => self.create(main, latest.generation + 1, Some(latest.change)),
            Err(why) => self.fail(why),
        }
    }

    fn on_intent_read(&mut self, main: Oid, steps: Vec<RawStep>) {
        match steps.first().map(|raw| Step::from_message(&raw.message)) {
            Some(Ok(step)) => {
                let change = step.change;
                self.change = Some(change.clone());
                let spec = FetchSpec::new([refs::change_pattern(&change)]);
                let fetch = Action::Fetch(spec.clone());
                self.send(fetch, &main, Then::FetchChain { spec, change });
            }
            _ => self.fail("the record of this intent cannot be read".into()),
        }
    }

    fn read_chain(&mut self, main: Oid, change: ChangeId) {
        self.change = Some(change.clone());
        self.send(
            agent::read_chain(&self.remote, &change),
            &main,
            Then::ReadChain,
        );
    }

    fn on_chain(&mut self, main: Oid, reads: Vec<super::ChainRead>) {
        let (record, tip, _) = match agent::fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        let by_id = matches!(self.input.target, StartTarget::Change(_));
        let digest = intent_digest(&record.intent);
        let ended = record.ended();
        let found = Box::new(Found { record, tip });
        if by_id && ended {
            // Whether a newer change holds the intent now decides what to say.
            let spec = FetchSpec::new([refs::intents_pattern(&digest)]);
            let fetch = Action::Fetch(spec.clone());
            return self.send(fetch, &main, Then::FetchIntents { spec, found });
        }
        self.decide(main, found, false);
    }

    /// Picks the found change up, or opens the intent's next change, or refuses. `idle`: the
    /// found change, another actor's, was found idle for the takeover window.
    fn decide(&mut self, main: Oid, found: Box<Found>, idle: bool) {
        let record = &found.record;
        let newer = self.newer_generation(record);
        let by_id = matches!(self.input.target, StartTarget::Change(_));
        if record.merged().is_some() || (record.ended() && (self.input.new || newer.is_some())) {
            if by_id {
                return match newer {
                    Some(generation) => self.refuse(Refusal::NewerGeneration {
                        superseded_generation: generation,
                    }),
                    None => self.refuse(Refusal::AlreadyMerged {}),
                };
            }
            let next = newer.unwrap_or(record.generation) + 1;
            return self.create(main, next, Some(record.change.clone()));
        }
        // A change that ended short of a merge (abandoned, or its work already on main),
        // compacted past the retention window, has no drafts left to take up: its intent
        // opens a new change instead.
        if record.ended() && !self.remote.contains_key(&refs::change(&record.change)) {
            if by_id {
                let how = if record.abandoned {
                    "was abandoned"
                } else {
                    "found its work already on main"
                };
                return self.fail(format!(
                    "{} {how} longer ago than the retention window, and its drafts \
                     went with its record; `bay start \"{}\"` opens a new change for its intent",
                    record.change, record.intent
                ));
            }
            return self.create(main, record.generation + 1, Some(record.change.clone()));
        }
        // Another actor's live change is theirs until it has stayed idle for the takeover
        // window, judged on this machine's clock from when this clone first held its tip.
        if !record.ended() && record.actor != self.input.actor && !idle {
            let names = vec![refs::change(&record.change)];
            return self.send(Action::ReadSeen { names }, &main, Then::Idle(found));
        }
        // Two live sessions of one actor never share a change: another's view is its own.
        let holder = self.sessions.holder(
            &record.change,
            &self.input.actor,
            self.now,
            self.takeover_ms,
        );
        if let Some(holder) = holder {
            let detail = self
                .sessions
                .detail(&record.change, holder, self.now, self.takeover_ms);
            self.change = Some(record.change.clone());
            return self.refuse(Refusal::Held(detail));
        }
        // Imported work goes onto the open change as its next draft, when its paths allow.
        if let Some(imported) = self.imported.clone() {
            let uncovered = uncovered(&record.paths, &imported.paths);
            if !uncovered.is_empty() {
                self.change = Some(record.change.clone());
                return self.refuse(Refusal::PathsUndeclared {
                    uncovered,
                    declared: record.paths.clone(),
                });
            }
            let refreshed = Refreshed::clean(imported.draft);
            return self.on_refreshed(main, found, None, refreshed);
        }
        // Pick it up: save the work in this machine's view, if it has one, then bring that
        // draft up to main, as this actor's.
        let action = Action::FreezeDraft {
            change: record.change.clone(),
            parent: record.current_draft().clone(),
            base: record.base.clone(),
            labels: Labels::carried(&record.change),
        };
        self.send(action, &main, Then::Freeze(found));
    }

    fn on_frozen(&mut self, main: Oid, found: Box<Found>, frozen: Refreshed) {
        let record = &found.record;
        let action = Action::RefreshDraft {
            labels: Labels::draft(&self.input.main, &record.change),
            change: record.change.clone(),
            draft: frozen.draft.clone(),
            base: record.base.clone(),
            onto: main.clone(),
        };
        self.send(action, &main, Then::Refresh { found, frozen });
    }

    /// Adopts the found change when its tip has been the same, as this clone saw it, for the
    /// whole takeover window; otherwise refuses `CHANGE_SUPERSEDED`, naming its holder. A tip
    /// whose first sight this clone did not record is not known to be idle.
    fn on_idle(&mut self, main: Oid, found: Box<Found>, seen: BTreeMap<String, Timestamp>) {
        let idle_ms = seen
            .get(&refs::change(&found.record.change))
            .map(|since| self.now.millis_since(*since));
        if idle_ms.is_some_and(|idle| idle >= self.takeover_ms) {
            return self.decide(main, found, true);
        }
        self.refuse(Refusal::HeldByAnother {
            held_by: found.record.actor.clone(),
            takeover_s: self.takeover_ms / 1000,
            why: "another actor holds this change, and it has not been idle for the takeover window",
            idle_s: idle_ms.map(|idle| idle / 1000),
        });
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

    /// Picks the found change up with its draft `refreshed` on main. When saving this view's
    /// work carried it over onto the recorded draft with conflicts (`frozen`), the markers
    /// that left stay in the refreshed draft (or inside the refresh's own), so its checkpoint
    /// names both merges' marks: the record names every marker the view will show.
    fn on_refreshed(
        &mut self,
        main: Oid,
        found: Box<Found>,
        frozen: Option<Refreshed>,
        refreshed: Refreshed,
    ) {
        let Found { record, tip } = &*found;
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
        let (mut conflicts, carried) = match frozen {
            Some(frozen) => (
                frozen.conflicts,
                Labels::carried(&record.change).marked(&frozen.marked),
            ),
            None => (Vec::new(), None),
        };
        if &refreshed.draft != record.current_draft() || record.base != main {
            let brought = Labels::draft(&self.input.main, &record.change).marked(&refreshed.marked);
            let body = StepBody::Checkpoint {
                draft: refreshed.draft.clone(),
                base: main.clone(),
                marked: conflict::joined(carried, brought),
            };
            steps.push(self.nonces.step(&record.change, self.now, &actor, body));
        }
        self.detail.adopted = Some(adopting);
        conflicts.extend(refreshed.conflicts.iter().cloned());
        conflicts.sort();
        conflicts.dedup();
        self.detail.conflicts = conflicts;
        let draft = refreshed.draft;
        if steps.is_empty() {
            return self.make_view(main, Taken::PickedUp { found, draft });
        }
        let plan = PushPlan::of(Append::on(
            record.change.clone(),
            Some(tip.clone()),
            steps,
            Some(draft.clone()),
        ));
        self.send(Action::Push(plan), &main, Then::Save { found, draft });
    }

    /// Creates generation `generation` of the intent as a new change.
    fn create(&mut self, main: Oid, generation: u32, supersedes: Option<ChangeId>) {
        let StartTarget::Intent { intent, paths } = self.input.target.clone() else {
            return self.fail("only an intent opens a new change".into());
        };
        if self.rules.max_live_changes.is_some() {
            let Some(live) = &self.live else {
                let held = Action::ReadHeld {
                    prefix: refs::CHANGES.into(),
                    limit: crate::flow::FLOW_CHAINS,
                };
                let then = Then::Held {
                    generation,
                    supersedes,
                };
                return self.send(held, &main, then);
            };
            if let Some(refused) = actor::over_limit(&self.rules, live) {
                return self.finish(refused);
            }
        }
        let change = self.reserved.take().unwrap_or_else(|| self.new_id());
        let base = main.clone();
        self.detail.supersedes = supersedes.clone();
        self.detail.fixes = self.input.fixes.clone();
        self.detail.after = self.input.after.clone();
        let body = StepBody::Start {
            intent: intent.clone(),
            actor: self.input.actor.clone(),
            paths,
            base: base.clone(),
            generation,
            supersedes,
            fixes: self.input.fixes.clone(),
            reverts: None,
            after: self.input.after.clone(),
        };
        let actor = self.input.actor.clone();
        let mut steps = vec![self.nonces.step(&change, self.now, &actor, body)];
        // Imported work is the first draft, written with the start.
        let carrier = self
            .imported
            .as_ref()
            .map(|imported| imported.draft.clone());
        if let Some(draft) = &carrier {
            let checkpoint = StepBody::Checkpoint {
                draft: draft.clone(),
                base,
                marked: None,
            };
            steps.push(self.nonces.step(&change, self.now, &actor, checkpoint));
        }
        let plan = PushPlan {
            appends: vec![Append::on(change.clone(), None, steps, carrier)],
            updates: vec![RefUpdate {
                name: refs::intent(&intent_digest(&intent), generation),
                expect: Expect::Absent,
                new: NewValue::Step { append: 0, step: 0 },
            }],
            atomic: true,
            ..PushPlan::default()
        };
        self.change = Some(change.clone());
        self.send(
            Action::Push(plan),
            &main,
            Then::Create { generation, change },
        );
    }

    /// The push of `taken`, a change created as generation `generation` or one picked up.
    fn on_pushed(
        &mut self,
        main: Oid,
        generation: Option<u32>,
        taken: Taken,
        report: super::PushReport,
    ) {
        let written = report.steps.first().and_then(|s| s.last()).cloned();
        match report.outcome {
            PushOutcome::Accepted => {
                if let Some(generation) = generation {
                    self.detail.generation = Some(generation);
                }
                self.make_view(main, taken);
            }
            PushOutcome::Rejected { .. } => self.again(),
            PushOutcome::Unknown { .. } => match self.plan_view(&main, taken) {
                Ok(view) => {
                    self.written = written.map(|step| Written {
                        step,
                        view,
                        generation,
                    });
                    self.again();
                }
                Err(why) => self.fail(why),
            },
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    /// Makes the view of the change `taken`, on main at `main`.
    fn make_view(&mut self, main: Oid, taken: Taken) {
        match self.plan_view(&main, taken) {
            Ok(plan) => self.make(main, plan),
            Err(why) => self.fail(why),
        }
    }

    /// The view of the change `taken` on main at `main`: a change picked up shows its draft,
    /// brought up to main; a change created shows `main` (or the work it took in).
    fn plan_view(&self, main: &Oid, taken: Taken) -> Result<ViewPlan, String> {
        Ok(match taken {
            Taken::PickedUp { found, draft } => {
                let Found { record, .. } = *found;
                // Paths named again on picking a change up widen its view: it holds what the
                // change declared at its start and what this start names.
                let mut paths = record.paths;
                if let StartTarget::Intent { paths: named, .. } = &self.input.target {
                    for path in named {
                        if !paths.contains(path) {
                            paths.push(path.clone());
                        }
                    }
                }
                ViewPlan {
                    change: record.change,
                    paths,
                    draft,
                    base: Some(record.base),
                }
            }
            Taken::Written(change) => {
                let StartTarget::Intent { paths, .. } = &self.input.target else {
                    return Err("a picked-up change was not read".into());
                };
                let draft = self
                    .imported
                    .as_ref()
                    .map_or(main.clone(), |i| i.draft.clone());
                ViewPlan {
                    change,
                    paths: paths.clone(),
                    draft,
                    base: None,
                }
            }
        })
    }

    /// Makes the view `plan` names, on main at `main`.
    fn make(&mut self, main: Oid, plan: ViewPlan) {
        let ViewPlan {
            change,
            paths,
            draft,
            base,
        } = plan;
        self.change = Some(change.clone());
        let opened = Box::new(Opened {
            change: change.clone(),
            paths: paths.clone(),
        });
        // A save merges from the main checkout: it makes no view.
        if matches!(self.input.import, Some(Import::Checkout { .. })) {
            return self.read_places(*opened);
        }
        let action = Action::MakeView {
            change,
            paths,
            draft,
        };
        self.send(action, &main, Then::View { opened, base });
    }

    /// The view is made; a change picked up again on `base` says how many main commits it
    /// missed.
    fn on_view(&mut self, main: Oid, opened: Opened, base: Option<Oid>, view: String) {
        self.detail.view = Some(view);
        match base {
            Some(base) if base != main => {
                let read = Action::ReadLog {
                    range: Some(format!("{base}..{main}")),
                    limit: MAX_BEHIND,
                    since: None,
                };
                self.send_news(read, opened, News::Behind);
            }
            _ => self.read_places(opened),
        }
    }

    fn on_behind(&mut self, opened: Opened, missed: Vec<RawStep>) {
        self.detail.behind = Some(missed.len());
        self.read_places(opened);
    }

    /// The requests of the queue's places, for the live changes among them.
    fn read_places(&mut self, opened: Opened) {
        let oids: Vec<Oid> = self
            .remote
            .iter()
            .filter(|(name, _)| refs::parse_queue(name).is_some())
            .map(|(_, oid)| oid.clone())
            .collect();
        if oids.is_empty() {
            return self.done(opened);
        }
        self.send_news(Action::ReadSteps { oids }, opened, News::Places);
    }

    fn on_places(&mut self, opened: Opened, steps: Vec<RawStep>) {
        let changes: std::collections::BTreeSet<ChangeId> = steps
            .iter()
            .filter_map(|raw| Step::from_message(&raw.message).ok())
            .map(|step| step.change)
            .filter(|change| *change != opened.change)
            .collect();
        if changes.is_empty() {
            return self.done(opened);
        }
        let spec = FetchSpec::new(changes.iter().map(refs::change_pattern));
        let fetch = Action::Fetch(spec.clone());
        self.send_news(fetch, opened, News::FetchLive(spec));
    }

    fn on_live_fetched(&mut self, opened: Opened, spec: FetchSpec, fetched: Refs) {
        spec.apply(&mut self.remote, fetched);
        let chains: Vec<super::ChainQuery> = self
            .remote
            .iter()
            .filter_map(|(name, tip)| {
                let change = refs::parse_change(name)?;
                (change != opened.change && spec.covers(name)).then(|| super::ChainQuery {
                    change,
                    tip: tip.clone(),
                    known: None,
                })
            })
            .collect();
        if chains.is_empty() {
            return self.done(opened);
        }
        self.send_news(Action::ReadChains { chains }, opened, News::ReadLive);
    }

    /// Names every live change whose declared paths overlap this one's: it refuses nothing.
    fn on_live(&mut self, opened: Opened, reads: Vec<super::ChainRead>) {
        let paths = &opened.paths;
        self.detail.overlaps = reads
            .iter()
            .filter_map(|read| agent::fold_chain(read).ok())
            .map(|(record, _)| record)
            .filter(|record| {
                record.live_op().is_some() && crate::paths::overlap(paths, &record.paths)
            })
            .map(|record| Overlap {
                change: record.change,
                intent: record.intent,
                actor: record.actor,
                paths: record.paths,
            })
            .collect();
        self.done(opened);
    }

    fn new_id(&mut self) -> ChangeId {
        let entropy = self.nonces.next().to_be_bytes();
        ChangeId::from_entropy([entropy[0], entropy[1], entropy[2], entropy[3], entropy[4]])
    }

    /// Finds where the imported work forks from main: a branch anywhere in main's history; a
    /// checkout's `HEAD` must be on main itself, or it holds commits main lacks.
    fn import(&mut self, main: Oid) {
        self.imported = None;
        let tip = match self.input.import.clone() {
            Some(Import::Branch { name, local }) => {
                let remote = self.remote.get(&Import::branch_ref(&name)).cloned();
                let source = if remote.is_some() { "remote" } else { "local" };
                let Some(tip) = remote.or(local) else {
                    return self.fail(format!(
                        "no branch {name} on the remote or in this clone; push it, or name it as \
                         `git branch` lists it"
                    ));
                };
                self.detail.from = Some(TakenFrom {
                    branch: name,
                    source,
                    commit: tip.clone(),
                });
                tip
            }
            Some(Import::Checkout { head, .. }) => head,
            None => return self.fail("nothing to take in".into()),
        };
        let ask = Action::MergeBase {
            one: tip.clone(),
            two: main.clone(),
        };
        self.send(ask, &main, Then::ImportBase { tip });
    }

    /// The imported work at `tip` forks from main at `base`.
    fn on_import_base(&mut self, main: Oid, tip: Oid, base: Option<Oid>) {
        let (draft, base) = match (self.input.import.clone(), base) {
            (Some(Import::Branch { name, .. }), None) => {
                return self.fail(format!(
                    "the branch {name} shares no history with main, so it has no net change on it"
                ));
            }
            (Some(Import::Branch { .. }), Some(base)) => (tip, base),
            (Some(Import::Checkout { edits, head }), Some(base)) if base == head => (edits, head),
            (Some(Import::Checkout { .. }), _) => {
                return self.fail(
                    "your HEAD holds commits that main lacks; merge them through bay first, or \
                     check out main"
                        .into(),
                );
            }
            (None, _) => return self.fail("nothing to take in".into()),
        };
        // Work that forks from main itself is its own net change: it stays the draft, message
        // and all (a save's `--message`).
        if base == main {
            let refreshed = Refreshed {
                draft,
                conflicts: Vec::new(),
                marked: Vec::new(),
            };
            return self.on_import_draft(main, refreshed);
        }
        let change = match self.reserved.clone() {
            Some(change) => change,
            None => {
                let change = self.new_id();
                self.reserved = Some(change.clone());
                change
            }
        };
        // A conflict refuses the import before anything is written, so no marker is kept.
        let action = Action::RefreshDraft {
            labels: Labels::draft(&self.input.main, &change),
            change,
            draft,
            base,
            onto: main.clone(),
        };
        self.send(action, &main, Then::ImportDraft);
    }

    /// A conflict refuses before anything is written; a clean draft is measured for its paths.
    fn on_import_draft(&mut self, main: Oid, refreshed: Refreshed) {
        if !refreshed.conflicts.is_empty() {
            let mut gathered = self.detail.clone();
            gathered.conflicts = refreshed.conflicts;
            return self.refuse(Refusal::Conflict(gathered));
        }
        let read = Action::ReadStats {
            base: main.clone(),
            commit: refreshed.draft.clone(),
        };
        self.send(read, &main, Then::ImportPaths(refreshed.draft));
    }

    fn on_import_paths(&mut self, main: Oid, draft: Oid, stats: Vec<PathStat>) {
        let paths: Vec<String> = stats.into_iter().map(|stat| stat.path).collect();
        if paths.is_empty() {
            let mut gathered = self.detail.clone();
            gathered.nothing = Some(match self.input.import {
                Some(Import::Checkout { .. }) => crate::save::NOTHING_TO_SAVE,
                _ => "the branch holds nothing main lacks",
            });
            let result = BayResult::ok(None, gathered.to_map());
            return self.finish(report::with_main(result, self.main().as_ref()));
        }
        let saving = matches!(self.input.import, Some(Import::Checkout { .. }));
        let StartTarget::Intent {
            paths: declared, ..
        } = &mut self.input.target
        else {
            return self.fail("only an intent takes work in".into());
        };
        if saving {
            // A save declares exactly what it changes.
            *declared = paths.clone();
        } else {
            let uncovered = uncovered(declared, &paths);
            if !uncovered.is_empty() {
                let declared = declared.clone();
                return self.refuse(Refusal::PathsUndeclared {
                    uncovered,
                    declared,
                });
            }
        }
        self.imported = Some(Imported {
            main: main.clone(),
            draft,
            paths,
        });
        self.open(main);
    }

    /// The change records this clone holds, from its earlier fetches: their chains are read
    /// as `bay status` reads its flow, with no fetch, for the live changes a limit counts.
    fn on_held(&mut self, main: Oid, generation: u32, supersedes: Option<ChangeId>, held: Refs) {
        let chains: Vec<ChainQuery> = held
            .iter()
            .filter_map(|(name, tip)| ChainQuery::of_ref(name, tip))
            .collect();
        let then = Then::HeldChains {
            generation,
            supersedes,
        };
        self.send(Action::ReadChains { chains }, &main, then);
    }

    fn done(&mut self, opened: Opened) {
        let main = self.main();
        let result = report::started(&opened.change, self.detail.to_json(), main.as_ref());
        self.finish(result);
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::CompactedNamed, Completion::ChainsRead(Ok(reads))) => {
                self.on_compacted_named(reads)
            }
            (Purpose::Fetched { main, then }, completion) => {
                return self.on_then(main, then, completion);
            }
            (Purpose::News { opened, news }, completion) => {
                return self.on_news(*opened, news, completion);
            }
            (_, completion) => return Some(completion),
        }
        None
    }

    /// Acts on the completion of a step toward the change, on main at `main`.
    fn on_then(&mut self, main: Oid, then: Then, completion: Completion) -> Option<Completion> {
        match (then, completion) {
            (Then::FixOnMain { fixes, merge }, Completion::MergeBaseFound(Ok(base))) => {
                self.on_fix_base(main, fixes, merge, base)
            }
            (Then::ImportBase { tip }, Completion::MergeBaseFound(Ok(base))) => {
                self.on_import_base(main, tip, base)
            }
            (Then::ImportDraft, Completion::DraftRefreshed(Ok(refreshed))) => {
                self.on_import_draft(main, refreshed)
            }
            (Then::ImportPaths(draft), Completion::StatsRead(Ok(stats))) => {
                self.on_import_paths(main, draft, stats)
            }
            (Then::ReadIntent, Completion::StepsRead(Ok(steps))) => {
                self.on_intent_read(main, steps)
            }
            (Then::CompactedFix, Completion::ChainsRead(Ok(reads))) => {
                self.on_compacted_fix(main, reads)
            }
            (Then::CompactedAfter, Completion::ChainsRead(Ok(reads))) => {
                self.on_compacted_after(main, reads)
            }
            (Then::CompactedIntent, Completion::FileRead(Ok(file))) => {
                self.on_compacted_intent(main, file)
            }
            (Then::FetchChain { spec, change }, Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.remote, fetched);
                self.read_chain(main, change);
            }
            (Then::FetchIntents { spec, found }, Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.remote, fetched);
                self.decide(main, found, false);
            }
            (Then::ReadChain, Completion::ChainsRead(Ok(reads))) => self.on_chain(main, reads),
            (Then::Freeze(found), Completion::DraftFrozen(Ok(frozen))) => {
                self.on_frozen(main, found, frozen)
            }
            (Then::Refresh { found, frozen }, Completion::DraftRefreshed(Ok(refreshed))) => {
                self.on_refreshed(main, found, Some(frozen), refreshed)
            }
            (Then::Create { generation, change }, Completion::Pushed(report)) => {
                self.on_pushed(main, Some(generation), Taken::Written(change), report)
            }
            (Then::Save { found, draft }, Completion::Pushed(report)) => {
                self.on_pushed(main, None, Taken::PickedUp { found, draft }, report)
            }
            (Then::View { opened, base }, Completion::ViewMade(Ok(view))) => {
                self.on_view(main, *opened, base, view)
            }
            (Then::Idle(found), Completion::SeenRead(Ok(seen))) => self.on_idle(main, found, seen),
            (
                Then::Held {
                    generation,
                    supersedes,
                },
                Completion::HeldRead(Ok(held)),
            ) => self.on_held(main, generation, supersedes, held),
            (
                Then::HeldChains {
                    generation,
                    supersedes,
                },
                Completion::ChainsRead(Ok(reads)),
            ) => {
                self.live = Some(crate::flow::live_changes(&reads, &self.input.actor));
                self.create(main, generation, supersedes);
            }
            (
                Then::Held { .. } | Then::HeldChains { .. },
                completion @ (Completion::HeldRead(Err(_)) | Completion::ChainsRead(Err(_))),
            ) => self.fail(format!(
                "the change records this clone holds could not be read, so the live changes \
                 cannot be counted: {}",
                fault_of(&completion).unwrap_or_default()
            )),
            (_, completion) => return Some(completion),
        }
        None
    }

    /// Acts on the completion of a read of what the opened change met.
    fn on_news(
        &mut self,
        opened: Opened,
        news: News,
        completion: Completion,
    ) -> Option<Completion> {
        match (news, completion) {
            (News::Behind, Completion::LogRead(Ok(missed))) => self.on_behind(opened, missed),
            (News::Places, Completion::StepsRead(Ok(steps))) => self.on_places(opened, steps),
            (News::FetchLive(spec), Completion::Fetched(Ok(fetched))) => {
                self.on_live_fetched(opened, spec, fetched)
            }
            (News::ReadLive, Completion::ChainsRead(Ok(reads))) => self.on_live(opened, reads),
            // What the change meets is news, never a condition: a read that fails leaves it
            // out, and the change and its view stand.
            (News::Behind, Completion::LogRead(Err(_))) => self.read_places(opened),
            (News::Places, Completion::StepsRead(Err(_)))
            | (News::FetchLive(_), Completion::Fetched(Err(_)))
            | (News::ReadLive, Completion::ChainsRead(Err(_))) => self.done(opened),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Start, "start");

/// The paths of `changed` that no path of `declared` covers.
fn uncovered(declared: &[String], changed: &[String]) -> Vec<String> {
    changed
        .iter()
        .filter(|path| !crate::paths::any_covers(declared, path))
        .cloned()
        .collect()
}

/// The fault a failed completion carries, as text.
pub(super) fn fault_of(completion: &Completion) -> Option<String> {
    match completion {
        Completion::Fetched(Err(f))
        | Completion::StepsRead(Err(f))
        | Completion::ChainsRead(Err(f))
        | Completion::FileRead(Err(f))
        | Completion::StatsRead(Err(f))
        | Completion::NotesRead(Err(f))
        | Completion::LogRead(Err(f))
        | Completion::HistoryRead(Err(f))
        | Completion::AddedRead(Err(f))
        | Completion::HeldRead(Err(f))
        | Completion::MergeTested(Err(f))
        | Completion::MergeBaseFound(Err(f))
        | Completion::CandidateBuilt(Err(f))
        | Completion::DraftFrozen(Err(f))
        | Completion::DraftRefreshed(Err(f))
        | Completion::ViewMade(Err(f))
        | Completion::ViewsInspected(Err(f))
        | Completion::ViewReleased(Err(f))
        | Completion::RegistryRead(Err(f))
        | Completion::RegistryWritten(Err(f)) => Some(f.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reason::ReasonCode;

    #[test]
    fn a_branch_is_named_by_name_or_full_ref() {
        assert_eq!(Import::branch_ref("feature"), "refs/heads/feature");
        assert_eq!(Import::branch_ref("team/x"), "refs/heads/team/x");
        assert_eq!(Import::branch_ref("refs/heads/x"), "refs/heads/x");
    }

    #[test]
    fn names_git_would_refuse_or_bay_would_read_as_a_glob_are_refused() {
        for good in ["feature", "team/x-1", "refs/heads/v1.2"] {
            assert_eq!(Import::refuse_name(good), None, "{good}");
        }
        for bad in [
            "", "-x", "/x", "x/", "x.lock", "a..b", "a//b", "a@{1}", "a b", "a*", "a?", "a[b",
            "a~1", "a^", "a:b", "a\\b", ".x", "x.", "a\nb",
        ] {
            assert!(Import::refuse_name(bad).is_some(), "{bad:?}");
        }
    }

    /// A start with `--fixes` of a change whose marker names `merge`, on a main at `main`,
    /// with the merge base of the two answered `base`: its outcome, if it ended.
    fn fix_on(base: Option<Oid>) -> Option<BayResult> {
        use crate::machine::{Event, Machine};
        let oid = |digit: &str| Oid::parse(&digit.repeat(40)).expect("an id");
        let fixes = ChangeId::parse("c7k2m4qa").expect("an id");
        let input = StartInput {
            target: StartTarget::Intent {
                intent: "fix it".into(),
                paths: vec!["src/".into()],
            },
            actor: "ann".into(),
            main: "main".into(),
            new: false,
            fixes: Some(fixes.clone()),
            after: Vec::new(),
            entropy: 1,
            disk: None,
            import: None,
        };
        let now = Timestamp::from_secs(1_000);
        let mut start = Start::new(input, now);
        let (fetch, _) = start.poll_action().expect("a fetch");
        let remote = Refs::from([
            (refs::main("main"), oid("1")),
            (refs::landed(&fixes), oid("2")),
        ]);
        start
            .handle(now, Event::Done(fetch, Completion::Fetched(Ok(remote))))
            .expect("in kind");
        let (asked, action) = start.poll_action().expect("the ancestry question");
        assert_eq!(
            action,
            Action::MergeBase {
                one: oid("2"),
                two: oid("1")
            }
        );
        start
            .handle(
                now,
                Event::Done(asked, Completion::MergeBaseFound(Ok(base))),
            )
            .expect("in kind");
        start.outcome().cloned()
    }

    #[test]
    fn a_fix_of_a_change_whose_merge_main_no_longer_holds_is_refused() {
        let merge = Oid::parse(&"2".repeat(40)).expect("an id");
        let refused =
            fix_on(Some(Oid::parse(&"3".repeat(40)).expect("an id"))).expect("refused at once");
        assert_eq!(refused.reason, Some(ReasonCode::ChangeNotMerged));
        assert_eq!(refused.detail["merge"], merge.to_string());
        assert_eq!(
            fix_on(None).map(|r| r.reason),
            Some(Some(ReasonCode::ChangeNotMerged))
        );
        assert_eq!(
            fix_on(Some(merge)),
            None,
            "main holds it: the start goes on"
        );
    }

    #[test]
    fn uncovered_names_only_what_no_declared_path_covers() {
        let declared = vec!["src/".to_owned(), "README.md".to_owned()];
        let changed = ["src/a.rs", "README.md", "docs/b.md"].map(String::from);
        assert_eq!(uncovered(&declared, &changed), vec!["docs/b.md".to_owned()]);
        assert!(uncovered(&declared, &changed[..2]).is_empty());
    }
}
