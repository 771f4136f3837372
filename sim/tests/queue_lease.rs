//! The queue and its leases against a reference model, with `proptest-state-machine`.
//!
//! **The model** ([`Model`]) is a few lines of pure bookkeeping: the operations with their queue
//! place, state and claim holder; each change's tip as a fresh number per write; and, per
//! runner, its own clock, the next time it passes, the operation it works (with its check in
//! flight and its heartbeat due), the claimed tip it watches and since when on its own clock,
//! and the tips that prove its claim. Its rules are the protocol's: the head is the lowest
//! live place; an unclaimed head is claimed; a runner's own claim is taken up again only from
//! a tip it wrote; another's claim is watched and taken over only once its tip stood still for
//! one whole lease on the taker's clock; every write is leased on the tip the writer last
//! read or wrote, so a runner that was replaced writes nothing; a reply lost is never pushed
//! again blindly; an operation gives its place up in the push that ends it.
//!
//! **The transitions** are an agent asking to merge (a new change, or again on one, which
//! ends its live operation), a runner's tick at its clock or at its own next deadline, a
//! runner's clock moving on or jumping back (every runner has its own clock, started anywhere
//! in a day, so drift is clocks moving apart), a held check answered pass or fail, a runner
//! crashing and starting again with its memory lost, a runner pausing past the lease while
//! the others pass, run one lease on their clocks and pass again, and the reply to a runner's
//! next push lost, with the push applied or not.
//!
//! **The system under test** is core's `Start`, `Merge` and `Runner` machines, run against
//! the simulator's Git model through [`bay_sim::bench::Bench`]. After every transition the
//! remote is read back and each chain folded with core's record fold, and it must hold what
//! the model predicts: the live queue places and their order, each operation's state and
//! claim holder, which chains moved, each change merged on main once or not at all, with its
//! marker; and each runner's operation in hand and next deadline. Independently of the model,
//! the driver checks every claim on an operation someone else held as it is pushed: the taker
//! must have read that very tip at least one lease earlier on its own clock, with no crash in
//! between.
//!
//! **Left out**: checks that hang, lie or are unavailable, several checks per policy,
//! conflicts and `no_effect`, main moved by outside pushes, failed fetches, pushes that are
//! not sent, abandon, and `merge --wait`; the simulator (`sim/src/world.rs`) covers them.
//!
//! Each run is 128 cases of up to 50 transitions (`PROPTEST_CASES` asks for more). Proptest
//! shrinks a failure to a short sequence of transitions: the mutant tests at the end break the
//! runner on purpose and assert how short.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;

use bay_core::git::{Oid, refs};
use bay_core::id::{ChangeId, OpId};
use bay_core::machine::runner::{Mutant, Runner, RunnerConfig};
use bay_core::machine::{
    Action, ActionId, Completion, Deadline, Event, Machine, PushOutcome, PushPlan, PushReport,
    Refs, Wake,
};
use bay_core::record::{ChangeRecord, StepBody};
use bay_core::result::OpState;
use bay_core::time::Timestamp;
use bay_sim::bench::{Bench, MAIN, failing_exit, passing_exit};
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestError, TestRng, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

const RUNNERS: [&str; 3] = ["a", "b", "c"];
const LEASE: u64 = 60_000;
const HEARTBEAT: u64 = 10_000;
const INTERVAL: u64 = 10_000;
/// One required check, with a time limit no run of this test reaches.
const POLICY: &str = "revision = 1\n\n[[check]]\nid = \"unit\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 1000000\n";

/// One step of the world.
#[derive(Clone, Debug)]
enum Transition {
    /// An agent starts a new change and asks to merge it.
    Submit,
    /// The agent of `change` edits it again and asks to merge again, ending its live operation.
    Resubmit { change: usize },
    /// The runner handles a tick at its clock as it is.
    Tick { runner: usize },
    /// The runner's clock runs on to its next deadline (if it is ahead), and it ticks.
    Wake { runner: usize },
    /// The runner's clock moves on (drift, a pause, a jump forward).
    Advance { runner: usize, ms: u64 },
    /// The runner's clock jumps back.
    Rewind { runner: usize, ms: u64 },
    /// The check the runner has in flight answers.
    Answer { runner: usize, pass: bool },
    /// The runner's process dies and starts again: everything in memory is lost.
    Crash { runner: usize },
    /// The runner stops while the others run on: each of them wakes, its clock runs one
    /// lease, and each wakes again.
    Pause { runner: usize },
    /// The reply to the runner's next push is lost; the push `applied` or not.
    LoseReply { runner: usize, applied: bool },
}

/// An operation: one request to merge.
#[derive(Clone, Debug)]
struct Op {
    change: usize,
    seq: u64,
    state: OpState,
    owner: Option<usize>,
}

/// The operation a runner works, with its check in flight.
#[derive(Clone, Debug)]
struct Work {
    op: usize,
    /// The tip the runner last wrote: its next write is leased on it.
    tip: u64,
    heartbeat_at: u64,
}

/// Another's claim, watched on the runner's own clock.
#[derive(Clone, Debug)]
struct Watch {
    change: usize,
    tip: u64,
    since: u64,
}

#[derive(Clone, Debug)]
struct RunnerModel {
    clock: u64,
    next_pass: u64,
    work: Option<Work>,
    watch: Option<Watch>,
    /// The change whose claim this runner may hold, and the tips that prove it.
    mine: Option<(usize, BTreeSet<u64>)>,
    /// The reply to the next push is lost; the push applied or not.
    lose: Option<bool>,
}

/// The reference model: see the module documentation.
#[derive(Clone, Debug)]
struct Model {
    runners: Vec<RunnerModel>,
    /// Each change's tip: a fresh number for every write that lands.
    tips: Vec<u64>,
    ops: Vec<Op>,
    next_seq: u64,
    next_tip: u64,
}

impl Model {
    fn fresh(&mut self) -> u64 {
        self.next_tip += 1;
        self.next_tip
    }

    fn merged(&self, change: usize) -> bool {
        self.ops
            .iter()
            .any(|op| op.change == change && op.state == OpState::Merged)
    }

    /// The live queue places in order: the first is the head.
    fn queue(&self) -> Vec<usize> {
        let mut live: Vec<usize> = (0..self.ops.len())
            .filter(|i| !self.ops[*i].state.is_terminal())
            .collect();
        live.sort_by_key(|i| self.ops[*i].seq);
        live
    }

    /// When the runner wants its next tick, and why.
    fn deadline(&self, r: usize) -> (u64, Wake) {
        let runner = &self.runners[r];
        match &runner.work {
            Some(work) => (work.heartbeat_at, Wake::Heartbeat),
            None => match &runner.watch {
                Some(watch) if watch.since + LEASE <= runner.next_pass => {
                    (runner.next_pass, Wake::LeaseWatch)
                }
                _ => (runner.next_pass, Wake::Pass),
            },
        }
    }

    /// A request on `change`: a new place at the back; the live operation it replaces ends
    /// and gives its place up.
    fn request(&mut self, change: usize) {
        if let Some(live) = self
            .ops
            .iter_mut()
            .filter(|op| op.change == change && !op.state.is_terminal())
            .last()
        {
            live.state = OpState::Superseded;
            live.owner = None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.ops.push(Op {
            change,
            seq,
            state: OpState::Submitted,
            owner: None,
        });
        self.tips[change] = self.fresh();
    }

    fn wake(&mut self, r: usize) {
        let (at, _) = self.deadline(r);
        let clock = &mut self.runners[r].clock;
        *clock = (*clock).max(at);
        self.tick(r);
    }

    fn tick(&mut self, r: usize) {
        let runner = &self.runners[r];
        match &runner.work {
            Some(work) if runner.clock >= work.heartbeat_at => self.heartbeat(r),
            Some(_) => {}
            None if runner.clock >= runner.next_pass => self.pass(r),
            None => {}
        }
    }

    /// A pass: find the head and claim it, take it up again, or watch it.
    fn pass(&mut self, r: usize) {
        let now = self.runners[r].clock;
        let Some(&head) = self.queue().first() else {
            self.runners[r].watch = None;
            self.runners[r].next_pass = now + INTERVAL;
            return;
        };
        let change = self.ops[head].change;
        let tip = self.tips[change];
        let mine =
            matches!(&self.runners[r].mine, Some((c, tips)) if *c == change && tips.contains(&tip));
        match self.ops[head].owner {
            None => {
                self.runners[r].watch = None;
                self.begin(r, head, false);
            }
            Some(owner) if owner == r && mine => {
                self.runners[r].watch = None;
                self.begin(r, head, true);
            }
            Some(_) => {
                let runner = &mut self.runners[r];
                let watched = runner
                    .watch
                    .as_ref()
                    .filter(|w| w.change == change && w.tip == tip)
                    .map(|w| w.since);
                match watched {
                    Some(since) if now.saturating_sub(since) >= LEASE => {
                        runner.watch = None;
                        return self.begin(r, head, false);
                    }
                    Some(_) => {}
                    None => {
                        runner.watch = Some(Watch {
                            change,
                            tip,
                            since: now,
                        })
                    }
                }
                let expires = runner.watch.as_ref().map_or(u64::MAX, |w| w.since + LEASE);
                runner.next_pass = (now + INTERVAL).min(expires);
            }
        }
    }

    /// Works `op` from scratch: its first write carries the candidate, and the claim unless
    /// the runner holds it already.
    fn begin(&mut self, r: usize, op: usize, claimed: bool) {
        let change = self.ops[op].change;
        let written = self.fresh();
        let tip = self.tips[change];
        let runner = &mut self.runners[r];
        let now = runner.clock;
        // What proves the claim if the write's reply is lost.
        runner.mine = claimed.then(|| (change, BTreeSet::from([tip])));
        match runner.lose.take() {
            None => {
                runner.mine = Some((change, BTreeSet::from([written])));
                runner.work = Some(Work {
                    op,
                    tip: written,
                    heartbeat_at: now + HEARTBEAT,
                });
                self.claimed(op, r, written);
            }
            Some(applied) => {
                if applied {
                    self.claimed(op, r, written);
                }
                self.in_doubt(r, change, claimed, written);
            }
        }
    }

    fn claimed(&mut self, op: usize, r: usize, tip: u64) {
        self.ops[op].owner = Some(r);
        self.ops[op].state = OpState::Running;
        self.tips[self.ops[op].change] = tip;
    }

    /// A write whose reply was lost: the runner drops its work and remembers the tip it may
    /// have written.
    fn in_doubt(&mut self, r: usize, change: usize, claimed: bool, written: u64) {
        let runner = &mut self.runners[r];
        match runner.mine.as_mut() {
            Some((_, tips)) if claimed => {
                tips.insert(written);
            }
            _ => runner.mine = Some((change, BTreeSet::from([written]))),
        }
        self.drop_work(r);
    }

    fn drop_work(&mut self, r: usize) {
        let runner = &mut self.runners[r];
        runner.work = None;
        runner.next_pass = runner.clock;
    }

    fn heartbeat(&mut self, r: usize) {
        let Some(work) = self.runners[r].work.clone() else {
            return;
        };
        let change = self.ops[work.op].change;
        let leased = self.tips[change] == work.tip;
        let written = self.fresh();
        let runner = &mut self.runners[r];
        match runner.lose.take() {
            None if leased => {
                self.tips[change] = written;
                let now = runner.clock;
                if let Some(work) = runner.work.as_mut() {
                    work.tip = written;
                    work.heartbeat_at = now + HEARTBEAT;
                }
                if let Some((_, tips)) = runner.mine.as_mut() {
                    *tips = BTreeSet::from([written]);
                }
            }
            // Refused: another writer moved the chain. The runner writes nothing more.
            None => {
                runner.mine = None;
                self.drop_work(r);
            }
            Some(applied) => {
                if applied && leased {
                    self.tips[change] = written;
                }
                self.in_doubt(r, change, true, written);
            }
        }
    }

    /// The check answers; its record goes up with the operation's end.
    fn answer(&mut self, r: usize, pass: bool) {
        let Some(work) = self.runners[r].work.clone() else {
            return;
        };
        let change = self.ops[work.op].change;
        let leased = self.tips[change] == work.tip;
        let written = self.fresh();
        let end = |model: &mut Model| {
            model.tips[change] = written;
            let op = &mut model.ops[work.op];
            op.owner = None;
            op.state = if pass {
                OpState::Merged
            } else {
                OpState::Blocked
            };
        };
        match self.runners[r].lose.take() {
            // Accepted, the operation ended; or refused, and the runner learns it was replaced.
            // Either way it lets go.
            None => {
                if leased {
                    end(self);
                }
                self.runners[r].mine = None;
                self.drop_work(r);
            }
            Some(applied) => {
                if applied && leased {
                    end(self);
                }
                self.in_doubt(r, change, true, written);
            }
        }
    }
}

impl ReferenceStateMachine for Model {
    type State = Model;
    type Transition = Transition;

    /// Each runner's clock starts anywhere in a day: no two agree.
    fn init_state() -> BoxedStrategy<Model> {
        prop::collection::vec(0..86_400_000u64, RUNNERS.len())
            .prop_map(|clocks| Model {
                runners: clocks
                    .into_iter()
                    .map(|clock| RunnerModel {
                        clock,
                        next_pass: clock,
                        work: None,
                        watch: None,
                        mine: None,
                        lose: None,
                    })
                    .collect(),
                tips: Vec::new(),
                ops: Vec::new(),
                next_seq: 1,
                next_tip: 0,
            })
            .boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Transition> {
        let runner = || 0..RUNNERS.len();
        // Half the moves forward are short, half pass a whole lease at once.
        let forward = prop_oneof![1..HEARTBEAT, LEASE..=2 * LEASE];
        let mut choices: Vec<(u32, BoxedStrategy<Transition>)> = vec![
            (2, Just(Transition::Submit).boxed()),
            (
                3,
                runner()
                    .prop_map(|runner| Transition::Tick { runner })
                    .boxed(),
            ),
            (
                3,
                runner()
                    .prop_map(|runner| Transition::Wake { runner })
                    .boxed(),
            ),
            (
                3,
                (runner(), forward)
                    .prop_map(|(runner, ms)| Transition::Advance { runner, ms })
                    .boxed(),
            ),
            (
                1,
                (runner(), 1..=LEASE)
                    .prop_map(|(runner, ms)| Transition::Rewind { runner, ms })
                    .boxed(),
            ),
            (
                1,
                runner()
                    .prop_map(|runner| Transition::Crash { runner })
                    .boxed(),
            ),
            (
                2,
                runner()
                    .prop_map(|runner| Transition::Pause { runner })
                    .boxed(),
            ),
            (
                1,
                (runner(), any::<bool>())
                    .prop_map(|(runner, applied)| Transition::LoseReply { runner, applied })
                    .boxed(),
            ),
        ];
        let checking: Vec<usize> = (0..RUNNERS.len())
            .filter(|r| state.runners[*r].work.is_some())
            .collect();
        if !checking.is_empty() {
            choices.push((
                2,
                (prop::sample::select(checking), prop::bool::weighted(0.7))
                    .prop_map(|(runner, pass)| Transition::Answer { runner, pass })
                    .boxed(),
            ));
        }
        let open: Vec<usize> = (0..state.tips.len())
            .filter(|c| !state.merged(*c))
            .collect();
        if !open.is_empty() {
            choices.push((
                1,
                prop::sample::select(open)
                    .prop_map(|change| Transition::Resubmit { change })
                    .boxed(),
            ));
        }
        prop::strategy::Union::new_weighted(choices).boxed()
    }

    fn preconditions(state: &Model, transition: &Transition) -> bool {
        match transition {
            Transition::Answer { runner, .. } => state.runners[*runner].work.is_some(),
            Transition::Resubmit { change } => *change < state.tips.len() && !state.merged(*change),
            _ => true,
        }
    }

    fn apply(mut state: Model, transition: &Transition) -> Model {
        match *transition {
            Transition::Submit => {
                state.tips.push(0);
                state.request(state.tips.len() - 1);
            }
            Transition::Resubmit { change } => state.request(change),
            Transition::Tick { runner } => state.tick(runner),
            Transition::Wake { runner } => state.wake(runner),
            Transition::Advance { runner, ms } => state.runners[runner].clock += ms,
            Transition::Pause { runner } => {
                let others = || (0..RUNNERS.len()).filter(move |o| *o != runner);
                others().for_each(|o| state.wake(o));
                others().for_each(|o| state.runners[o].clock += LEASE);
                others().for_each(|o| state.wake(o));
            }
            Transition::Rewind { runner, ms } => {
                let clock = &mut state.runners[runner].clock;
                *clock = clock.saturating_sub(ms);
            }
            Transition::Answer { runner, pass } => state.answer(runner, pass),
            Transition::Crash { runner } => {
                let runner = &mut state.runners[runner];
                runner.work = None;
                runner.watch = None;
                runner.mine = None;
                runner.next_pass = runner.clock;
            }
            Transition::LoseReply { runner, applied } => {
                state.runners[runner].lose = Some(applied);
            }
        }
        state
    }
}

/// A runner's process in the system under test, with the runner's clock and its faults.
struct Rig {
    runner: Runner,
    clock: u64,
    /// Restarts so far: each process gets its own nonces.
    incarnation: u64,
    /// The check run this process handed out last, unanswered.
    check: Option<(ActionId, Action)>,
    lose: Option<bool>,
    /// For each chain this process fetched: the tip, and when (its clock) it first saw it.
    seen: BTreeMap<String, (Oid, u64)>,
}

/// The system under test: the real machines against the Git model.
struct World {
    bench: Bench,
    rigs: Vec<Rig>,
    mutant: Option<Mutant>,
    changes: Vec<ChangeId>,
    ops: Vec<OpId>,
    /// Per change, the model's tip and the real tip at the last comparison.
    tips: Vec<(u64, Oid)>,
    requests: u64,
}

fn runner_config(r: usize, incarnation: u64, mutant: Option<Mutant>) -> RunnerConfig {
    let seed = (r as u64 + 1) * 1_000 + incarnation;
    let mut cfg = RunnerConfig::new(RUNNERS[r], MAIN, seed);
    cfg.lease_ms = LEASE;
    cfg.heartbeat_ms = HEARTBEAT;
    cfg.interval_ms = INTERVAL;
    cfg.check_grace_ms = 5_000;
    cfg.mutant = mutant;
    cfg
}

impl World {
    fn rig(&mut self, r: usize) -> &mut Rig {
        &mut self.rigs[r]
    }

    /// Asks to merge the work in `change`'s view, after a fresh edit.
    fn request(&mut self, c: usize) -> OpId {
        self.requests += 1;
        let change = self.changes[c].clone();
        let text = format!("version {}\n", self.requests);
        self.bench.edit(&change, &format!("src/c{c}.txt"), &text);
        self.bench
            .ask_to_merge(&change, 10_000 + self.requests)
            .outcome()
            .and_then(|r| r.op_id.clone())
            .expect("the merge queued an operation")
    }

    /// The runner's clock runs on to its next deadline, if that is ahead, and it ticks.
    fn wake(&mut self, r: usize) {
        let rig = self.rig(r);
        if let Some(deadline) = rig.runner.poll_timeout() {
            rig.clock = rig.clock.max(deadline.at.0);
        }
        self.tick(r);
    }

    fn tick(&mut self, r: usize) {
        let rig = self.rig(r);
        rig.runner
            .handle(Timestamp(rig.clock), Event::Tick)
            .expect("a faithful driver");
        self.drive(r);
    }

    /// Answers the runner's actions until it waits on time or on its check.
    fn drive(&mut self, r: usize) {
        while let Some((id, action)) = self.rigs[r].runner.poll_action() {
            let completion = match &action {
                Action::RunCheck(_) => {
                    self.rigs[r].check = Some((id, action));
                    continue;
                }
                Action::Fetch(spec) => {
                    let fetched = self.bench.git.fetch(spec);
                    if let Ok(refs) = &fetched {
                        self.saw(r, refs);
                    }
                    Completion::Fetched(fetched)
                }
                // A presence is no write of the queue's: it goes up as it is.
                Action::Push(plan) if plan.presence.is_some() => {
                    Completion::Pushed(self.bench.git.push(plan).0)
                }
                Action::Push(plan) => self.push(r, plan),
                other => self.bench.answer(other).expect("only checks are held"),
            };
            let rig = &mut self.rigs[r];
            rig.runner
                .handle(Timestamp(rig.clock), Event::Done(id, completion))
                .expect("a faithful driver");
        }
    }

    fn saw(&mut self, r: usize, fetched: &Refs) {
        let rig = &mut self.rigs[r];
        for (name, tip) in fetched
            .iter()
            .filter(|(n, _)| n.starts_with("refs/bay/changes/"))
        {
            if rig.seen.get(name).is_none_or(|(seen, _)| seen != tip) {
                rig.seen.insert(name.clone(), (tip.clone(), rig.clock));
            }
        }
    }

    /// Applies a push, or loses its reply, after checking every takeover it makes.
    fn push(&mut self, r: usize, plan: &PushPlan) -> Completion {
        self.check_takeovers(r, plan);
        let git = &mut self.bench.git;
        let lost = PushOutcome::Unknown {
            why: "the connection broke".into(),
        };
        let report = match self.rigs[r].lose.take() {
            None => git.push(plan).0,
            Some(true) => PushReport {
                outcome: lost,
                ..git.push(plan).0
            },
            Some(false) => PushReport {
                steps: bay_sim::remote::write_objects(&mut git.store, plan),
                notes: Vec::new(),
                log: None,
                presence: None,
                indexes: Vec::new(),
                outcome: lost,
            },
        };
        Completion::Pushed(report)
    }

    /// A claim on an operation another holds (or this runner before it lost its memory) is
    /// pushed only by a runner that read that very tip a whole lease ago on its own clock.
    fn check_takeovers(&self, r: usize, plan: &PushPlan) {
        let rig = &self.rigs[r];
        for append in &plan.appends {
            let Some(op) = append.steps.iter().find_map(|step| match &step.body {
                StepBody::Claim { op } => Some(op),
                _ => None,
            }) else {
                continue;
            };
            let parent = append.parent.clone().expect("a claim extends a chain");
            let steps = self.bench.git.store.chain(&parent).expect("a chain");
            let record = ChangeRecord::fold(&steps).expect("an honest record");
            let Some(holder) = record.op(op).and_then(|o| o.owner.clone()) else {
                continue;
            };
            let name = refs::change(&append.change);
            let watched = rig.seen.get(&name).filter(|(tip, _)| *tip == parent);
            assert!(
                watched.is_some_and(|(_, since)| rig.clock.saturating_sub(*since) >= LEASE),
                "{} took {op} over from {holder} at {} having seen its tip since {:?}",
                RUNNERS[r],
                rig.clock,
                watched.map(|(_, since)| since),
            );
        }
    }

    /// The remote and the runners hold what the model predicts.
    fn compare(&mut self, model: &Model) {
        let queue: Vec<u64> = self
            .bench
            .git
            .remote
            .refs
            .keys()
            .filter_map(|name| refs::parse_queue(name))
            .collect();
        let predicted: Vec<u64> = model.queue().iter().map(|i| model.ops[*i].seq).collect();
        assert_eq!(queue, predicted, "the live queue places, in order");
        for (i, op) in self.ops.iter().enumerate() {
            let record = self.bench.record(&op.change);
            let real = record.op(op).expect("the operation is recorded");
            let want = &model.ops[i];
            assert_eq!(real.seq, want.seq, "{op}'s place");
            assert_eq!(real.state, want.state, "{op}'s state");
            let owner = want.owner.map(|r| RUNNERS[r].to_string());
            assert_eq!(real.owner, owner, "who holds {op}'s claim");
        }
        for (c, change) in self.changes.iter().enumerate() {
            let tip = self
                .bench
                .git
                .remote
                .get(&refs::change(change))
                .cloned()
                .expect("the chain exists");
            let (model_then, real_then) = &self.tips[c];
            assert_eq!(
                *model_then == model.tips[c],
                *real_then == tip,
                "{change}'s chain moved as the model says"
            );
            self.tips[c] = (model.tips[c], tip);
            let merged = usize::from(model.merged(c));
            assert_eq!(self.bench.merges_of(change), merged, "{change} merged once");
            let marker = self.bench.git.remote.get(&refs::landed(change)).is_some();
            assert_eq!(marker, merged == 1, "{change}'s marker iff its merge");
        }
        for (r, rig) in self.rigs.iter().enumerate() {
            let want = &model.runners[r];
            assert_eq!(rig.clock, want.clock);
            let working = want.work.as_ref().map(|w| &self.ops[w.op]);
            assert_eq!(
                rig.runner.working_on(),
                working,
                "what {} works",
                RUNNERS[r]
            );
            let (at, why) = model.deadline(r);
            let deadline = Some(Deadline {
                at: Timestamp(at),
                why,
            });
            assert_eq!(
                rig.runner.poll_timeout(),
                deadline,
                "{}'s next deadline",
                RUNNERS[r]
            );
        }
    }
}

/// Which runner the world runs: the honest one, or one with a [`Mutant`].
trait Variant: 'static {
    const MUTANT: Option<Mutant>;
}

#[derive(Debug)]
struct Honest;
impl Variant for Honest {
    const MUTANT: Option<Mutant> = None;
}

struct QueueLease<V>(PhantomData<V>);

impl<V: Variant> StateMachineTest for QueueLease<V> {
    type SystemUnderTest = World;
    type Reference = Model;

    fn init_test(model: &Model) -> World {
        let rigs = model
            .runners
            .iter()
            .enumerate()
            .map(|(r, m)| Rig {
                runner: Runner::new(runner_config(r, 0, V::MUTANT), Timestamp(m.clock)),
                clock: m.clock,
                incarnation: 0,
                check: None,
                lose: None,
                seen: BTreeMap::new(),
            })
            .collect();
        World {
            bench: Bench::new(Some(POLICY)),
            rigs,
            mutant: V::MUTANT,
            changes: Vec::new(),
            ops: Vec::new(),
            tips: Vec::new(),
            requests: 0,
        }
    }

    fn apply(mut world: World, model: &Model, transition: Transition) -> World {
        match transition {
            Transition::Submit => {
                let c = world.changes.len();
                let change = world.bench.start(&format!("task {c}"), 100 + c as u64);
                world.changes.push(change);
                let op = world.request(c);
                world.ops.push(op);
                let tip = Oid::parse(&"0".repeat(40)).expect("an id");
                world.tips.push((0, tip));
            }
            Transition::Resubmit { change } => {
                let op = world.request(change);
                world.ops.push(op);
            }
            Transition::Tick { runner } => world.tick(runner),
            Transition::Wake { runner } => world.wake(runner),
            Transition::Advance { runner, ms } => world.rig(runner).clock += ms,
            Transition::Pause { runner } => {
                let others = || (0..RUNNERS.len()).filter(move |o| *o != runner);
                others().for_each(|o| world.wake(o));
                others().for_each(|o| world.rig(o).clock += LEASE);
                others().for_each(|o| world.wake(o));
            }
            Transition::Rewind { runner, ms } => {
                let rig = world.rig(runner);
                rig.clock = rig.clock.saturating_sub(ms);
            }
            Transition::Answer { runner, pass } => {
                let rig = world.rig(runner);
                let (id, check) = rig.check.take().expect("the model says a check runs");
                let exit = if pass {
                    passing_exit(&check)
                } else {
                    failing_exit(&check)
                };
                rig.runner
                    .handle(
                        Timestamp(rig.clock),
                        Event::Done(id, Completion::CheckExited(exit)),
                    )
                    .expect("a faithful driver");
                world.drive(runner);
            }
            Transition::Crash { runner } => {
                let mutant = world.mutant;
                let rig = world.rig(runner);
                rig.incarnation += 1;
                let cfg = runner_config(runner, rig.incarnation, mutant);
                rig.runner = Runner::new(cfg, Timestamp(rig.clock));
                rig.check = None;
                rig.seen.clear();
            }
            Transition::LoseReply { runner, applied } => world.rig(runner).lose = Some(applied),
        }
        world.compare(model);
        world
    }
}

/// 128 runs, unless `PROPTEST_CASES` asks for another number. A failure's seed is kept in
/// `queue_lease.proptest-regressions` beside this file and tried first on every later run.
fn model_config() -> Config {
    let cases = match std::env::var_os("PROPTEST_CASES") {
        Some(_) => Config::default().cases,
        None => 128,
    };
    Config {
        cases,
        max_shrink_iters: 4_096,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    }
}

prop_state_machine! {
    #![proptest_config(model_config())]

    #[test]
    fn the_queue_and_its_leases_do_what_the_model_says(sequential 1..50 => QueueLease<Honest>);
}

/// Whether the model test fails on a runner with `V`'s mutant for exactly this sequence (it
/// must also meet the model's preconditions).
fn fails<V: Variant>(initial: &Model, transitions: &[Transition]) -> bool {
    let mut state = initial.clone();
    for transition in transitions {
        if !Model::preconditions(&state, transition) {
            return false;
        }
        state = Model::apply(state, transition);
    }
    let run = || {
        let (initial, transitions) = (initial.clone(), transitions.to_vec());
        QueueLease::<V>::test_sequential(Config::default(), initial, transitions, None);
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).is_err()
}

/// Runs the model test on a runner with `V`'s mutant from a fixed seed. Returns the failure,
/// the sequence proptest shrank it to, and that sequence with every transition it can do
/// without taken out. (`proptest-state-machine` deletes each transition once, back to front,
/// and then simplifies them; one that became needless only after a later simplification
/// stays.)
fn caught<V: Variant>() -> (String, Vec<Transition>, Vec<Transition>) {
    let config = Config {
        cases: 256,
        max_shrink_iters: 4_096,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(config.rng_algorithm);
    let mut runner = TestRunner::new_with_rng(config.clone(), rng);
    let result = runner.run(
        &Model::sequential_strategy(1..50),
        |(initial, transitions, seen)| {
            QueueLease::<V>::test_sequential(config.clone(), initial, transitions, seen);
            Ok(())
        },
    );
    let (why, initial, shrunk) = match result {
        Err(TestError::Fail(why, (initial, transitions, _))) => {
            (why.to_string(), initial, transitions)
        }
        other => panic!("{:?} was not caught: {other:?}", V::MUTANT),
    };
    let mut shortest = shrunk.clone();
    while let Some(without) = (0..shortest.len())
        .map(|i| [&shortest[..i], &shortest[i + 1..]].concat())
        .find(|without| fails::<V>(&initial, without))
    {
        shortest = without;
    }
    (why, shrunk, shortest)
}

macro_rules! mutant_test {
    ($name:ident, $variant:ident, $mutant:expr, shrunk <= $shrunk:expr, shortest $steps:expr) => {
        #[derive(Debug)]
        struct $variant;
        impl Variant for $variant {
            const MUTANT: Option<Mutant> = Some($mutant);
        }

        #[test]
        fn $name() {
            let (why, shrunk, shortest) = caught::<$variant>();
            eprintln!(
                "{:?} caught: {why}\nproptest shrank it to {shrunk:?}\nthe shortest: {shortest:?}",
                $mutant,
            );
            assert!(shrunk.len() <= $shrunk, "{shrunk:#?}");
            assert_eq!(shortest.len(), $steps, "{shortest:#?}");
        }
    };
}

// An agent asks; b claims; b pauses while a and c see its claim, run one lease and pass
// again: a must take over, and the mutant never does.
mutant_test!(
    a_runner_that_never_takes_over_is_caught_in_three_steps,
    NeverTakesOver,
    Mutant::NeverTakeOver,
    shrunk <= 4,
    shortest 3
);

// Two agents ask; c claims the head; a must watch it, and the mutant claims the second.
mutant_test!(
    a_runner_that_skips_a_claimed_head_is_caught_in_four_steps,
    SkipsClaimedHead,
    Mutant::SkipClaimedHead,
    shrunk <= 4,
    shortest 4
);

// An agent asks; a claims; a pauses and b takes over; a wakes for its heartbeat, which is
// refused, and must let go; the mutant goes on working.
mutant_test!(
    a_runner_that_ignores_fencing_is_caught_in_four_steps,
    IgnoresFencing,
    Mutant::SkipFencing,
    shrunk <= 6,
    shortest 4
);
