//! The `corrupt` fault: a person with plain Git writes one of bay's records wrongly. A chain or
//! a queue place pointed at a blob, a merged marker for a change that never merged, a request
//! naming a draft nobody holds, a runner's log or evidence notes pointed at a blob, or main
//! deleted for a while.
//!
//! Each is that change's (or that runner's) problem alone. Runners pass an unreadable chain or
//! place over, end the other operations by name, and a runner whose own record is broken
//! stops; the checkers leave out only what can never end (`Checker::chain_corrupted`, and so
//! on), so liveness holds the healthy changes to merging around the broken ones. Only the
//! runner's own records and main are mended, when the faults stop, as a person who read the
//! stopped runner's words would mend them; a chain or place stays broken.

use std::collections::BTreeMap;

use bay_core::git::{Oid, refs};
use bay_core::id::OpId;
use bay_core::machine::{Machine, PushPlan};
use bay_core::record::StepBody;

use super::{Ev, Millis, Role, World};
use crate::agent::Cmd;
use crate::faults::FaultClass;
use crate::rng::Rng;

/// What the fault did, and what it has yet to undo.
#[derive(Debug)]
pub struct Corruptions {
    rng: Rng,
    /// How many of each kind, for the report.
    pub counts: BTreeMap<&'static str, u64>,
    /// Main's tip while main is deleted.
    main: Option<Oid>,
    /// A runner's own refs pointed at a blob, with what they held before.
    own: Vec<(String, Option<Oid>)>,
    /// The next request an agent pushes names a draft nobody holds.
    forge: bool,
}

/// Every kind the fault picks from.
const KINDS: [&str; 7] = [
    "chain", "place", "marker", "request", "log", "notes", "main",
];

impl Corruptions {
    pub fn new(rng: Rng) -> Corruptions {
        Corruptions {
            rng,
            counts: BTreeMap::new(),
            main: None,
            own: Vec::new(),
            forge: false,
        }
    }

    /// When the first one comes.
    pub fn first(&mut self) -> Millis {
        self.rng.range(20_000, 200_000)
    }
}

impl World {
    /// One record written wrongly, then the next one scheduled.
    pub(super) fn corrupt(&mut self) {
        if self.healed {
            return;
        }
        let kind = *self.corrupt.rng.pick(&KINDS);
        let done = match kind {
            "chain" => self.corrupt_chain(),
            "place" => self.corrupt_place(),
            "marker" => self.forge_marker(),
            "request" => {
                self.corrupt.forge = true;
                false
            }
            "log" => self.corrupt_own(refs::log),
            "notes" => self.corrupt_own(refs::evidence),
            _ => self.delete_main(),
        };
        if done {
            *self.corrupt.counts.entry(kind).or_insert(0) += 1;
            self.trace.note(self.t, usize::MAX, "corrupt", 0);
        }
        let next = self.corrupt.rng.range(60_000, 300_000) / self.mix.intensity;
        self.after(next, Ev::Corrupt);
    }

    /// A blob nobody can read as a record.
    fn blob(&mut self) -> Oid {
        let text = format!("not a record, written at {}\n", self.t);
        self.git.store.blob(&text)
    }

    /// The queue places whose operation is live, each with its operation: what a person might
    /// break now.
    fn live_places(&self) -> Vec<(u64, OpId)> {
        self.git
            .remote
            .refs
            .iter()
            .filter_map(|(name, oid)| {
                let seq = refs::parse_queue(name)?;
                let op = self.git.store.step(oid)?.op()?.clone();
                let tip = self.git.remote.get(&refs::change(&op.change))?;
                let record = self.git.store.fold(tip)?.ok()?;
                (record.live_op()?.id == op).then_some((seq, op))
            })
            .collect()
    }

    /// One live place, picked.
    fn pick_live(&mut self) -> Option<(u64, OpId)> {
        let live = self.live_places();
        (!live.is_empty()).then(|| self.corrupt.rng.pick(&live).clone())
    }

    fn corrupt_chain(&mut self) -> bool {
        let Some((_, op)) = self.pick_live() else {
            return false;
        };
        let blob = self.blob();
        self.git.remote.refs.insert(refs::change(&op.change), blob);
        self.checker.chain_corrupted(op.change);
        true
    }

    fn corrupt_place(&mut self) -> bool {
        let Some((seq, _)) = self.pick_live() else {
            return false;
        };
        let blob = self.blob();
        self.git.remote.refs.insert(refs::queue(seq), blob);
        self.checker.place_corrupted(seq);
        true
    }

    /// A merged marker for a live operation's change, naming main as it stands.
    fn forge_marker(&mut self) -> bool {
        let (Some((_, op)), Some(main)) = (
            self.pick_live(),
            self.git.remote.get(&refs::main(super::MAIN)).cloned(),
        ) else {
            return false;
        };
        let marker = refs::landed(&op.change);
        if self.git.remote.refs.contains_key(&marker) {
            return false;
        }
        self.git.remote.refs.insert(marker, main);
        self.checker.marker_forged(op.change);
        true
    }

    /// One of the first runner's own refs (named by `name`) pointed at a blob. Only the first
    /// runner's, and only with another runner to go on with the queue.
    fn corrupt_own(&mut self, name: fn(&str) -> String) -> bool {
        let runner = match self.hosts.first() {
            Some(host) if self.scenario.runners > 1 => host.name.clone(),
            _ => return false,
        };
        let name = name(&runner);
        if self.corrupt.own.iter().any(|(broken, _)| *broken == name) {
            return false;
        }
        let blob = self.blob();
        let before = self.git.remote.refs.insert(name.clone(), blob);
        if name.starts_with(refs::EVIDENCE) {
            self.checker
                .notes_replaced(self.t, name.clone(), before.clone());
        }
        self.corrupt.own.push((name, before));
        true
    }

    /// Main deleted, pushed back a little later.
    fn delete_main(&mut self) -> bool {
        if self.corrupt.main.is_some() {
            return false;
        }
        let Some(tip) = self.git.remote.refs.remove(&refs::main(super::MAIN)) else {
            return false;
        };
        self.checker.main_deleted(Some(tip.clone()));
        self.corrupt.main = Some(tip);
        let back = self.corrupt.rng.range(5_000, 60_000);
        self.after(back, Ev::MainBack);
        true
    }

    /// Main pushed back as it was: nothing else can make main while it is gone.
    pub(super) fn main_back(&mut self) {
        if let Some(tip) = self.corrupt.main.take() {
            self.git.remote.refs.insert(refs::main(super::MAIN), tip);
            self.checker.main_deleted(None);
        }
    }

    /// The runner's own refs set back, and a runner that stopped on them started again; main
    /// pushed back if it is still gone.
    pub(super) fn mend(&mut self) {
        self.main_back();
        for (name, before) in std::mem::take(&mut self.corrupt.own) {
            self.checker.notes_mended(self.t, &name);
            match before {
                Some(tip) => self.git.remote.refs.insert(name, tip),
                None => self.git.remote.refs.remove(&name),
            };
        }
        for host in &mut self.hosts {
            if let Role::Runner { machine, .. } = &mut host.role
                && machine.as_ref().is_some_and(|m| m.outcome().is_some())
            {
                // Started again by the heal, as after a crash.
                *machine = None;
                host.incarnation += 1;
                host.wake = None;
            }
        }
    }

    /// An agent's request, when the fault asked for one: it names a draft nobody holds and
    /// carries none, as a request written by hand would. Everything else goes as it came.
    pub(super) fn maybe_forge(&mut self, host: usize, mut plan: PushPlan) -> PushPlan {
        let merging = matches!(&self.hosts[host].role, Role::Agent(agent)
            if matches!(agent.cmd, Some(Cmd::Merge(_))));
        if !self.corrupt.forge || !merging || !self.mix.has(FaultClass::Corrupt) {
            return plan;
        }
        let nowhere = format!(
            "{:016x}{:016x}{:08x}",
            self.corrupt.rng.next_u64(),
            self.corrupt.rng.next_u64(),
            self.corrupt.rng.next_u64() as u32
        );
        let nowhere = Oid::parse(&nowhere).expect("40 hex digits make an object id");
        let Some(append) = plan.appends.first_mut() else {
            return plan;
        };
        let Some(StepBody::Request { draft, .. }) = append.steps.first_mut().map(|s| &mut s.body)
        else {
            return plan;
        };
        *draft = nowhere;
        append.carry = None;
        self.corrupt.forge = false;
        *self.corrupt.counts.entry("request").or_insert(0) += 1;
        self.trace.note(self.t, host, "corrupt", 0);
        plan
    }
}
