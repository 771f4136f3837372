//! The runner, scene by scene, against the simulator's Git model: each test stops the world at
//! the moment that matters (a held check, a lost reply, a moved main) and checks what the
//! runner does next.

use std::collections::BTreeMap;

use bay_core::check::{CheckExit, Verdict};
use bay_core::event::BayEvent;
use bay_core::git::{Oid, refs};
use bay_core::id::OpId;
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::merge_wait::MergeWait;
use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::{
    Action, ActionId, Completion, Event, Expect, LogAdd, Machine, NoteAdd, PluginExit, PushOutcome,
    PushPlan, PushReport, Refreshed, Wake,
};
use bay_core::presence::Presence;
use bay_core::reason::ReasonCode;
use bay_core::record::{Step, StepBody};
use bay_core::result::OpState;
use bay_core::time::Timestamp;
use bay_sim::bench::{Bench, MAIN, passing_exit as pass};
use bay_sim::remote::Applied;

const LEASE: u64 = 60_000;
const HEARTBEAT: u64 = 10_000;
const POLICY: &str = "revision = 1\n\n[[check]]\nid = \"unit\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\nmaterialize_timeout_s = 10\n";

/// One runner on its own clock.
struct Rig {
    runner: Runner,
    clock: u64,
    /// Actions handed out and not answered yet.
    held: Vec<(ActionId, Action)>,
}

impl Rig {
    fn new(name: &str, clock: u64) -> Rig {
        Rig::with(name, clock, |_| {})
    }

    /// A rig whose runner's config `tweak` changes.
    fn with(name: &str, clock: u64, tweak: impl FnOnce(&mut RunnerConfig)) -> Rig {
        let mut cfg = RunnerConfig::new(name, MAIN, clock);
        cfg.lease_ms = LEASE;
        cfg.heartbeat_ms = HEARTBEAT;
        cfg.interval_ms = 10_000;
        cfg.check_grace_ms = 5_000;
        tweak(&mut cfg);
        Rig {
            runner: Runner::new(cfg, Timestamp(clock)),
            clock,
            held: Vec::new(),
        }
    }

    fn feed(&mut self, event: Event) {
        self.runner
            .handle(Timestamp(self.clock), event)
            .expect("a faithful driver");
    }

    /// Ticks at `clock`, then answers everything until the runner waits on time or on an
    /// action `stop` picks, which it returns unanswered. Every push it answers is listed.
    fn run_until(
        &mut self,
        bench: &mut Bench,
        clock: u64,
        stop: &dyn Fn(&Action) -> bool,
    ) -> Option<(ActionId, Action)> {
        self.clock = clock;
        self.feed(Event::Tick);
        loop {
            let (id, action) = self.runner.poll_action()?;
            if stop(&action) {
                return Some((id, action));
            }
            match bench.answer(&action) {
                Some(completion) => self.feed(Event::Done(id, completion)),
                None => self.held.push((id, action)),
            }
        }
    }

    /// Answers the check run `check` (action `id`) with an honest pass, and everything after
    /// it, until the runner waits; returns what it then holds out, if anything.
    fn answer_pass(
        &mut self,
        bench: &mut Bench,
        id: ActionId,
        check: &Action,
    ) -> Option<(ActionId, Action)> {
        self.answer(bench, id, Completion::CheckExited(pass(check)), &|_| false)
    }

    /// Runs the first pass at 1,000,000, answers its check with a pass, and returns the
    /// merge push it then holds out.
    fn checked_merge(&mut self, bench: &mut Bench) -> (ActionId, Action) {
        let (id, check) = self
            .run_until(bench, 1_000_000, &is_check)
            .expect("a check runs");
        self.merge_after(bench, id, &check)
    }

    /// Answers the check run `check` (action `id`) with a pass and returns the merge push.
    fn merge_after(
        &mut self,
        bench: &mut Bench,
        id: ActionId,
        check: &Action,
    ) -> (ActionId, Action) {
        self.answer(
            bench,
            id,
            Completion::CheckExited(pass(check)),
            &is_merge_push,
        )
        .expect("a merges")
    }

    /// Answers a held or stopped action.
    fn answer(
        &mut self,
        bench: &mut Bench,
        id: ActionId,
        completion: Completion,
        stop: &dyn Fn(&Action) -> bool,
    ) -> Option<(ActionId, Action)> {
        self.feed(Event::Done(id, completion));
        loop {
            let (id, action) = self.runner.poll_action()?;
            if stop(&action) {
                return Some((id, action));
            }
            match bench.answer(&action) {
                Some(completion) => self.feed(Event::Done(id, completion)),
                None => self.held.push((id, action)),
            }
        }
    }
}

fn is_check(action: &Action) -> bool {
    matches!(action, Action::RunCheck(_))
}

/// A push of the work: a presence, which goes up beside it, is not one.
fn is_push(action: &Action) -> bool {
    matches!(action, Action::Push(plan) if plan.presence.is_none())
}

/// The steps a push appends, by kind.
fn kinds(plan: &PushPlan) -> Vec<&'static str> {
    plan.appends
        .iter()
        .flat_map(|a| a.steps.iter().map(Step::kind))
        .collect()
}

fn push_plan(action: &Action) -> &PushPlan {
    match action {
        Action::Push(plan) => plan,
        other => panic!("not a push: {other:?}"),
    }
}

/// A bench with one change submitted, and runner `a` whose first pass holds out the check
/// run on its candidate (action `id`).
fn one_change_checking() -> (Bench, OpId, Rig, ActionId, Action) {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    let (id, check) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a check runs");
    (bench, op, a, id, check)
}

fn is_merge_push(action: &Action) -> bool {
    matches!(action, Action::Push(plan) if plan.updates.iter().any(|u| u.name == refs::main(MAIN)))
}

#[test]
fn an_honest_run_merges_the_checked_candidate_once() {
    let (mut bench, op, mut a, id, check) = one_change_checking();
    let checked_tree = match &check {
        Action::RunCheck(run) => run.request.candidate.tree.clone(),
        _ => unreachable!(),
    };
    a.answer_pass(&mut bench, id, &check);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert_eq!(bench.merges_of(&op.change), 1);
    let main_tree = bench.git.store.get(&bench.main()).map(|c| c.tree.clone());
    assert_eq!(
        main_tree,
        Some(checked_tree),
        "main holds exactly the tree that was checked"
    );
    assert!(
        bench.git.remote.get(&refs::landed(&op.change)).is_some(),
        "the marker came with the merge"
    );
}

#[test]
fn a_claim_is_taken_over_only_after_a_whole_lease_on_the_watchers_clock() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    // Runner a claims, builds, and then goes silent inside its check. Its clock is an hour
    // behind b's, so its steps look old to anyone who would read their times.
    let mut a = Rig::new("a", 1_000_000);
    let (check_id, check) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a's check runs");
    let mut b = Rig::new("b", 1_000_000 + 3_600_000);
    let t0 = b.clock;
    assert!(
        b.run_until(&mut bench, t0, &is_push).is_none(),
        "b sees a's fresh claim and waits"
    );
    assert!(
        b.run_until(&mut bench, t0 + LEASE - 1, &is_push).is_none(),
        "not a millisecond early"
    );
    let (id, claim) = b
        .run_until(&mut bench, t0 + LEASE, &is_push)
        .expect("b takes over");
    assert_eq!(
        kinds(push_plan(&claim)),
        vec!["claim", "candidate"],
        "the claim goes up with the candidate"
    );
    let claimed = bench_push(&mut bench, &claim);
    let (b_check_id, b_check) = b
        .answer(&mut bench, id, claimed, &is_check)
        .expect("b checks");
    // a wakes up and reports its check: its write is leased on its own last step, which is no
    // longer the tip, so the remote refuses it and a writes nothing more.
    let next = a.answer_pass(&mut bench, check_id, &check);
    assert!(next.is_none());
    let record = bench.record(&op.change);
    let after_takeover: Vec<&str> = record.ops[0].checks.iter().map(|c| c.by.as_str()).collect();
    assert!(
        after_takeover.is_empty(),
        "a's check was never recorded: {after_takeover:?}"
    );
    assert!(a.runner.working_on().is_none(), "a let go");
    b.answer_pass(&mut bench, b_check_id, &b_check);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert_eq!(bench.merges_of(&op.change), 1);
    let merger = bench.record(&op.change).ops[0]
        .outcome
        .as_ref()
        .map(|o| o.by.clone());
    assert_eq!(merger.as_deref(), Some("b"));
}

/// Applies a push to the remote and returns its completion.
fn bench_push(bench: &mut Bench, action: &Action) -> Completion {
    Completion::Pushed(bench.git.push(push_plan(action)).0)
}

#[test]
fn a_tip_that_moves_restarts_the_watch() {
    let mut bench = Bench::new(Some(POLICY));
    bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 5_000_000);
    let (check_id, _check) = a
        .run_until(&mut bench, 5_000_000, &is_check)
        .expect("a's check runs");
    let mut b = Rig::new("b", 0);
    assert!(b.run_until(&mut bench, 0, &is_push).is_none());
    // a renews its claim before b's lease runs out.
    let (hb_id, heartbeat) = a
        .run_until(&mut bench, 5_000_000 + HEARTBEAT, &is_push)
        .expect("a renews its lease on time");
    assert_eq!(kinds(push_plan(&heartbeat)), vec!["heartbeat"]);
    let renewed = bench_push(&mut bench, &heartbeat);
    a.answer(&mut bench, hb_id, renewed, &|_| false);
    assert!(b.run_until(&mut bench, LEASE - 1, &is_push).is_none());
    assert!(
        b.run_until(&mut bench, LEASE, &is_push).is_none(),
        "the tip moved, so b watches it afresh"
    );
    let (id, claim) = b
        .run_until(&mut bench, 2 * LEASE, &is_push)
        .expect("a whole lease after the move");
    assert_eq!(
        kinds(push_plan(&claim)),
        vec!["claim", "candidate"],
        "the claim goes up with the candidate"
    );
    let _ = (check_id, id);
}

#[test]
fn a_lost_reply_to_the_merge_is_read_back_never_pushed_again() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    let (merge_id, merge) = a.checked_merge(&mut bench);
    // The push lands, and its reply is lost.
    let (mut report, _) = bench.git.push(push_plan(&merge));
    assert_eq!(report.outcome, PushOutcome::Accepted);
    report.outcome = PushOutcome::Unknown {
        why: "the connection broke".into(),
    };
    let next = a.answer(&mut bench, merge_id, Completion::Pushed(report), &is_push);
    assert!(
        next.is_none(),
        "a reads the remote instead of pushing: {next:?}"
    );
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert_eq!(bench.merges_of(&op.change), 1);
    // Later passes find the operation ended and push nothing.
    assert!(a.run_until(&mut bench, 1_100_000, &is_push).is_none());
}

#[test]
fn a_merge_lost_before_it_applied_is_checked_again_and_merged_once() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    let (merge_id, merge) = a.checked_merge(&mut bench);
    // The connection broke before the remote applied anything.
    let steps = bay_sim::remote::write_objects(&mut bench.git.store, push_plan(&merge));
    let lost = PushReport {
        steps,
        notes: Vec::new(),
        log: None,
        presence: None,
        indexes: Vec::new(),
        outcome: PushOutcome::Unknown {
            why: "broken".into(),
        },
    };
    let next = a.answer(&mut bench, merge_id, Completion::Pushed(lost), &is_check);
    assert!(next.is_none(), "a does not act blindly on an unknown push");
    assert_eq!(bench.state(&op).0, OpState::Running);
    // The next pass reads that the claim is still its own, and works the operation again.
    let (id, check) = a
        .run_until(&mut bench, 1_000_100, &is_check)
        .expect("checked again");
    a.answer_pass(&mut bench, id, &check);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert_eq!(bench.merges_of(&op.change), 1);
}

#[test]
fn main_moving_during_the_merge_means_a_new_candidate_checked_again() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    let (id, first) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a check runs");
    bench.move_main();
    let (id, second) = a
        .answer(
            &mut bench,
            id,
            Completion::CheckExited(pass(&first)),
            &is_check,
        )
        .expect("again");
    let tree = |action: &Action| match action {
        Action::RunCheck(run) => run.request.candidate.tree.clone(),
        _ => unreachable!(),
    };
    assert_ne!(
        tree(&first),
        tree(&second),
        "the second run checks the new candidate"
    );
    a.answer_pass(&mut bench, id, &second);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    let main_tree = bench.git.store.get(&bench.main()).map(|c| c.tree.clone());
    assert_eq!(main_tree, Some(tree(&second)));
}

#[test]
fn main_moving_twice_gives_the_claim_back_with_main_moved() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    let (id, first) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a check runs");
    bench.move_main();
    let (id, second) = a
        .answer(
            &mut bench,
            id,
            Completion::CheckExited(pass(&first)),
            &is_check,
        )
        .expect("again");
    bench.move_main();
    a.answer_pass(&mut bench, id, &second);
    let record = bench.record(&op.change);
    assert_eq!(record.ops[0].state, OpState::Submitted, "back in the queue");
    assert_eq!(record.ops[0].released, Some(ReasonCode::MainMoved));
    assert_eq!(bench.merges_of(&op.change), 0);
}

#[test]
fn the_runner_renews_its_claim_while_a_check_runs() {
    let mut bench = Bench::new(Some(POLICY));
    bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    a.run_until(&mut bench, 1_000_000, &is_check)
        .expect("a check runs");
    assert!(
        a.run_until(&mut bench, 1_000_000 + HEARTBEAT - 1, &is_push)
            .is_none()
    );
    let (_, push) = a
        .run_until(&mut bench, 1_000_000 + HEARTBEAT, &is_push)
        .expect("a heartbeat");
    assert_eq!(kinds(push_plan(&push)), vec!["heartbeat"]);
}

#[test]
fn a_check_that_never_answers_is_unknown_at_its_deadline() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    a.run_until(&mut bench, 0, &is_check).expect("a check runs");
    // Heartbeats keep going; the check never answers. materialize_timeout_s is 10, timeout_s
    // 100, grace 5 seconds: the copy's limit counts apart from the run's.
    let mut clock = 0;
    while bench.state(&op).0 == OpState::Running && clock < 200_000 {
        clock += HEARTBEAT / 2;
        a.run_until(&mut bench, clock, &|_| false);
    }
    assert!(
        clock >= 115_000,
        "not before the copy's and the run's limits and the grace: {clock}"
    );
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::CheckUnknown))
    );
    let record = bench.record(&op.change);
    assert_eq!(record.ops[0].checks.len(), 1);
    assert_eq!(
        record.ops[0].checks[0].verdict,
        bay_core::check::Verdict::Unknown
    );
}

#[test]
fn a_head_past_its_progress_deadline_gives_its_claim_back_and_the_third_time_is_blocked() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    // The checks never answer; the deadline (40 s) comes before their limit (100 s).
    let mut a = Rig::with("a", 0, |cfg| cfg.progress_ms = 40_000);
    let mut clock = 0;
    let mut claims = 0;
    while !bench.state(&op).0.is_terminal() && clock < 1_000_000 {
        if a.run_until(&mut bench, clock, &is_check).is_some() {
            claims += 1;
        }
        clock += HEARTBEAT / 2;
    }
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::QueueDeadlineExceeded))
    );
    assert_eq!(claims, 3, "three runs of the check, one per claim");
    let record = bench.record(&op.change);
    assert_eq!(record.ops[0].deadline_releases, 2);
    assert!(
        record.ops[0].checks.is_empty(),
        "no check answered, none is recorded"
    );
    assert_eq!(bench.merges_of(&op.change), 0);
}

#[test]
fn a_head_past_its_deadline_loses_its_place_to_the_operation_behind_it() {
    let mut bench = Bench::new(Some(POLICY));
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let second = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| cfg.progress_ms = 40_000);
    a.run_until(&mut bench, 0, &is_check)
        .expect("the head's check runs");
    assert_eq!(bench.state(&first).0, OpState::Running);
    // Its check never answers. Past the deadline, the next check to run is the second's.
    let mut clock = 0;
    let (id, check) = loop {
        clock += HEARTBEAT / 2;
        assert!(clock < 200_000, "no other check ran");
        if let Some(run) = a.run_until(&mut bench, clock, &is_check) {
            break run;
        }
    };
    assert_eq!(
        bench.state(&first).0,
        OpState::Submitted,
        "it gave its claim back"
    );
    assert_eq!(
        bench.state(&second).0,
        OpState::Running,
        "the one behind it went first"
    );
    let lost = bench.record(&first.change).ops[0].clone();
    let behind = bench.record(&second.change).ops[0].seq;
    assert_eq!(lost.behind, Some(behind), "it queues behind the last place");
    a.answer_pass(&mut bench, id, &check);
    assert_eq!(bench.state(&second), (OpState::Merged, None));
    assert_eq!(bench.merges_of(&first.change), 0);
}

/// Queues a plain change, then a fix of `first` (merged): the plain one is ahead.
fn plain_then_fix(bench: &mut Bench, first: &OpId) -> (OpId, OpId) {
    let plain = bench.submit("plain", &[("src/b.txt", "b2\n")]);
    let fix = bench.start_fixing("fix", 9, Some(first.change.clone()));
    bench.edit(&fix, "src/a.txt", "a3\n");
    let fix = bench
        .ask_to_merge(&fix, 10)
        .outcome()
        .and_then(|r| r.op_id.clone())
        .expect("queued");
    (plain, fix)
}

#[test]
fn a_held_main_takes_the_fix_and_passes_the_plain_change_over_until_the_hold_ends() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let first = bench.submit("first", &[("src/a.txt", "a2\n")]);
    let mut a = Rig::new("a", 0);
    a.run_until(&mut bench, 0, &|_| false);
    assert_eq!(bench.state(&first).0, OpState::Merged);
    bench.push_to_main(
        ".bay/config.toml",
        "[[hold]]\nend = \"2099-01-01T00:00:00Z\"\nreason = \"freeze\"\n",
    );
    let (plain, fix) = plain_then_fix(&mut bench, &first);
    a.run_until(&mut bench, 20_000, &|_| false);
    assert_eq!(bench.state(&fix).0, OpState::Merged, "the fix goes in");
    assert_eq!(
        bench.state(&plain).0,
        OpState::Submitted,
        "the plain change waits"
    );
    assert_eq!(
        bench.record(&plain.change).ops[0].claims,
        0,
        "passed over, never claimed"
    );
    bench.push_to_main(".bay/config.toml", "");
    a.run_until(&mut bench, 40_000, &|_| false);
    assert_eq!(
        bench.state(&plain).0,
        OpState::Merged,
        "merged once the hold ends"
    );
}

fn is_plugin(action: &Action) -> bool {
    matches!(action, Action::RunPlugin(_))
}

/// The hold plugin exits 0 having printed `stdout`.
fn plugin_says(stdout: &str) -> Completion {
    Completion::PluginExited(PluginExit::Exited {
        code: Some(0),
        stdout: stdout.as_bytes().to_vec(),
    })
}

const PLUGIN_HELD: &str = r#"{"held": true, "reason": "incident"}"#;
const PLUGIN_CLEAR: &str = r#"{"held": false}"#;

#[test]
fn the_hold_plugin_is_asked_for_an_ordinary_head_and_again_before_the_push_that_merges_it() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let first = bench.submit("first", &[("src/a.txt", "a2\n")]);
    let mut a = Rig::new("a", 0);
    a.run_until(&mut bench, 0, &|_| false);
    assert_eq!(bench.state(&first).0, OpState::Merged);
    bench.push_to_main("scripts/bay-hold", "#!/bin/sh\n");
    bench.push_to_main(
        ".bay/config.toml",
        "[plugin.hold]\ncommand = \"scripts/bay-hold --team infra\"\ntimeout_s = 3\n",
    );
    assert!(
        a.run_until(&mut bench, 10_000, &is_plugin).is_none(),
        "an idle pass asks nothing"
    );

    // A plain change at the head: the pass asks the plugin, from main's tip, with `status`.
    let (plain, fix) = plain_then_fix(&mut bench, &first);
    let (id, ask) = a
        .run_until(&mut bench, 20_000, &is_plugin)
        .expect("the pass asks the plugin");
    let Action::RunPlugin(run) = &ask else {
        unreachable!()
    };
    assert_eq!(
        (run.commit.clone(), run.program.as_str(), run.timeout_s),
        (bench.main(), "scripts/bay-hold", 3)
    );
    assert_eq!(run.args, ["--team", "infra", "status"]);
    // Held: the plain change is passed over and the fix merges, with no second question.
    assert!(
        a.answer(&mut bench, id, plugin_says(PLUGIN_HELD), &is_plugin)
            .is_none()
    );
    assert_eq!(bench.state(&fix).0, OpState::Merged, "the fix goes in");
    assert_eq!(bench.state(&plain).0, OpState::Submitted);
    assert_eq!(bench.record(&plain.change).ops[0].claims, 0, "passed over");

    // An answer bay cannot read holds main too: garbage at the pass, then a timeout before
    // the push that would merge.
    let (id, _) = a.run_until(&mut bench, 40_000, &is_plugin).expect("asked");
    assert!(
        a.answer(&mut bench, id, plugin_says("<html>"), &is_plugin)
            .is_none()
    );
    assert_eq!(bench.state(&plain).0, OpState::Submitted);
    let (id, _) = a.run_until(&mut bench, 60_000, &is_plugin).expect("asked");
    let (id, _) = a
        .answer(&mut bench, id, plugin_says(PLUGIN_CLEAR), &is_plugin)
        .expect("asked again before the push that merges");
    let timed_out = Completion::PluginExited(PluginExit::TimedOut);
    assert!(a.answer(&mut bench, id, timed_out, &is_plugin).is_none());
    assert_eq!(bench.state(&plain).0, OpState::Submitted, "nothing pushed");
    assert_eq!(bench.merges_of(&plain.change), 0);

    // Clear twice: it merges.
    let (id, _) = a.run_until(&mut bench, 80_000, &is_plugin).expect("asked");
    let (id, _) = a
        .answer(&mut bench, id, plugin_says(PLUGIN_CLEAR), &is_plugin)
        .expect("asked again");
    a.answer(&mut bench, id, plugin_says(PLUGIN_CLEAR), &is_plugin);
    assert_eq!(bench.state(&plain).0, OpState::Merged);
}

#[test]
fn a_claimed_change_gives_its_claim_back_when_the_plugin_holds_main_before_the_merge_push() {
    let mut bench = Bench::new(Some(POLICY));
    bench.push_to_main("scripts/bay-hold", "#!/bin/sh\n");
    bench.push_to_main(
        ".bay/config.toml",
        "[plugin.hold]\ncommand = \"scripts/bay-hold\"\n",
    );
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let (id, _) = a.run_until(&mut bench, 0, &is_plugin).expect("asked");
    let (id, check) = a
        .answer(&mut bench, id, plugin_says(PLUGIN_CLEAR), &is_check)
        .expect("the check runs");
    // The check passes while the plugin turns to held: the push that merges is never sent.
    let (id_ask, _) = a
        .answer(
            &mut bench,
            id,
            Completion::CheckExited(pass(&check)),
            &is_plugin,
        )
        .expect("asked before the push that merges");
    assert!(
        a.answer(&mut bench, id_ask, plugin_says(PLUGIN_HELD), &is_plugin)
            .is_none()
    );
    assert_eq!(bench.merges_of(&op.change), 0);
    let operation = &bench.record(&op.change).ops[0];
    assert_eq!(
        (operation.state, operation.claims, operation.released),
        (OpState::Submitted, 1, Some(ReasonCode::MainHeld)),
        "the claim went back, saying why"
    );
}

#[test]
fn a_wait_for_a_machine_that_serves_the_check_never_counts_toward_the_deadline() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| {
        cfg.progress_ms = 40_000;
        cfg.environments = Some(vec!["elsewhere".into()]);
    });
    let mut clock = 0;
    while clock < 10 * 40_000 {
        assert!(
            a.run_until(&mut bench, clock, &is_check).is_none(),
            "no check runs here"
        );
        clock += HEARTBEAT;
    }
    assert_eq!(bench.state(&op).0, OpState::Submitted);
    let record = bench.record(&op.change);
    assert_eq!(
        record.ops[0].claims, 0,
        "a machine that cannot end it never claims it"
    );
    assert_eq!(record.ops[0].deadline_releases, 0);
}

/// Two checks, `unit` then `lint`.
fn two_checks() -> String {
    format!(
        "{POLICY}\n{}",
        POLICY
            .replace("revision = 1\n\n", "")
            .replace("\"unit\"", "\"lint\"")
    )
}

#[test]
fn parallel_checks_run_at_once_and_are_recorded_in_the_policy_s_order() {
    let policy = two_checks();
    let mut bench = Bench::new(Some(&policy));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| cfg.parallel_checks = 2);
    let (unit_id, unit) = a.run_until(&mut bench, 0, &is_check).expect("unit runs");
    let (lint_id, lint) = a.runner.poll_action().expect("lint runs at the same time");
    assert!(is_check(&lint));
    // lint answers first: nothing is recorded before unit's turn.
    a.answer_pass(&mut bench, lint_id, &lint);
    assert!(bench.record(&op.change).ops[0].checks.is_empty());
    a.answer_pass(&mut bench, unit_id, &unit);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    let checks: Vec<String> = bench.record(&op.change).ops[0]
        .checks
        .iter()
        .map(|c| c.check.clone())
        .collect();
    assert_eq!(checks, vec!["unit", "lint"], "in the policy's order");
}

#[test]
fn a_failure_in_order_ends_the_operation_whatever_answers_later() {
    let policy = two_checks();
    let mut bench = Bench::new(Some(&policy));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| cfg.parallel_checks = 2);
    let (unit_id, unit) = a.run_until(&mut bench, 0, &is_check).expect("unit runs");
    let (lint_id, lint) = a.runner.poll_action().expect("lint runs at the same time");
    a.answer(
        &mut bench,
        unit_id,
        Completion::CheckExited(bay_sim::bench::failing_exit(&unit)),
        &|_| false,
    );
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::CheckFailed))
    );
    // lint's late answer changes nothing.
    a.feed(Event::Done(lint_id, Completion::CheckExited(pass(&lint))));
    assert!(a.runner.poll_action().is_none());
    assert_eq!(bench.record(&op.change).ops[0].checks.len(), 1);
}

/// The check's answer that no worker here can run it.
fn unavailable_exit() -> CheckExit {
    CheckExit {
        stdout: br#"{"schema": "bay.check.result/1", "unavailable": "no worker"}"#.to_vec(),
        exit_code: Some(0),
        ..CheckExit::default()
    }
}

/// Runs the first claim of the one operation: `unit` passes, then `lint` has no worker here,
/// so the claim goes back with unit's pass on record. Returns lint's run.
fn unit_passes_then_lint_is_unavailable(bench: &mut Bench, a: &mut Rig) -> Action {
    let (id, unit) = a.run_until(bench, 0, &is_check).expect("unit runs");
    let (id, lint) = a
        .answer(bench, id, Completion::CheckExited(pass(&unit)), &is_check)
        .expect("then lint");
    a.answer(
        bench,
        id,
        Completion::CheckExited(unavailable_exit()),
        &|_| false,
    );
    lint
}

#[test]
fn a_pass_on_exactly_the_same_inputs_is_reused_when_the_policy_allows_it() {
    let policy = format!("{}\n[policy]\nreuse_unsigned = true\n", two_checks());
    let mut bench = Bench::new(Some(&policy));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| cfg.evidence_reuse = true);
    let lint = unit_passes_then_lint_is_unavailable(&mut bench, &mut a);
    assert_eq!(bench.state(&op).0, OpState::Submitted);
    // The next claim builds the same candidate: unit's pass stands, only lint runs.
    let (id, again) = a
        .run_until(&mut bench, 60_000, &is_check)
        .expect("a check runs again");
    let id_of = |action: &Action| match action {
        Action::RunCheck(run) => run.check.id.clone(),
        _ => unreachable!(),
    };
    assert_eq!(id_of(&again), "lint", "unit is not run again");
    assert_eq!(id_of(&lint), "lint");
    a.answer_pass(&mut bench, id, &again);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    let record = bench.record(&op.change);
    let last: Vec<String> = record.ops[0]
        .checks
        .iter()
        .filter(|c| c.candidate == record.ops[0].candidates[1].id)
        .map(|c| format!("{}:{}", c.check, c.why.contains("did not run again")))
        .collect();
    assert_eq!(last, vec!["unit:true", "lint:false"]);
}

#[test]
fn without_the_policy_s_leave_a_pass_is_never_reused() {
    let mut bench = Bench::new(Some(&two_checks()));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| cfg.evidence_reuse = true);
    unit_passes_then_lint_is_unavailable(&mut bench, &mut a);
    let (_, again) = a
        .run_until(&mut bench, 60_000, &is_check)
        .expect("a check runs again");
    assert!(
        matches!(&again, Action::RunCheck(run) if run.check.id == "unit"),
        "unit runs again"
    );
    assert_eq!(bench.state(&op).0, OpState::Running);
}

#[test]
fn an_unavailable_check_keeps_no_record_and_gives_the_claim_back() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let (id, _) = a.run_until(&mut bench, 0, &is_check).expect("a check runs");
    a.answer(
        &mut bench,
        id,
        Completion::CheckExited(unavailable_exit()),
        &|_| false,
    );
    let record = bench.record(&op.change);
    assert_eq!(record.ops[0].state, OpState::Submitted);
    assert_eq!(record.ops[0].released, Some(ReasonCode::CheckUnavailable));
    assert!(record.ops[0].checks.is_empty(), "no attempt is recorded");
}

#[test]
fn a_lying_check_blocks_with_check_unknown() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let (id, check) = a.run_until(&mut bench, 0, &is_check).expect("a check runs");
    let Action::RunCheck(run) = &check else {
        unreachable!()
    };
    // A pass for the base's tree, not the candidate's.
    let mut lie = pass(&check);
    let text = String::from_utf8(lie.stdout).expect("utf-8").replace(
        run.request.candidate.tree.as_str(),
        run.request.base.tree.as_str(),
    );
    lie.stdout = text.into_bytes();
    a.answer(&mut bench, id, Completion::CheckExited(lie), &|_| false);
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::CheckUnknown))
    );
    assert_eq!(bench.merges_of(&op.change), 0);
}

#[test]
fn a_baseline_check_whose_base_run_gives_no_verdict_is_unknown_never_a_pass() {
    let policy = format!("{POLICY}baseline = \"base\"\n");
    let mut bench = Bench::new(Some(&policy));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let (id, check) = a.run_until(&mut bench, 0, &is_check).expect("a check runs");
    let failing = bay_sim::bench::failing_exit(&check);
    let (id, on_base) = a
        .answer(&mut bench, id, Completion::CheckExited(failing), &is_check)
        .expect("the check runs on the base");
    let (Action::RunCheck(candidate), Action::RunCheck(base)) = (&check, &on_base) else {
        unreachable!()
    };
    assert_eq!(
        base.request.candidate.tree, candidate.request.base.tree,
        "the base run is of the base tree"
    );
    let garbage = CheckExit {
        stdout: b"no result".to_vec(),
        exit_code: Some(0),
        ..CheckExit::default()
    };
    a.answer(&mut bench, id, Completion::CheckExited(garbage), &|_| false);
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::CheckUnknown))
    );
    let record = bench.record(&op.change);
    assert_eq!(record.ops[0].checks[0].verdict, Verdict::Unknown);
    assert_eq!(bench.merges_of(&op.change), 0);
}

#[test]
fn outcomes_without_checks_name_their_reason() {
    // Main already has the work: no_effect, and no check runs.
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("nothing", &[("src/a.txt", "a\n")]);
    let mut a = Rig::new("a", 0);
    assert!(a.run_until(&mut bench, 0, &is_check).is_none());
    assert_eq!(bench.state(&op), (OpState::NoEffect, None));

    // No policy at the base.
    let mut bench = Bench::new(None);
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    Rig::new("a", 0).run_until(&mut bench, 0, &|_| false);
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::PolicyMissing))
    );

    // A policy with an unknown key: refused, naming the key and its line.
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\nfrobnicate = 1\n"));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    Rig::new("a", 0).run_until(&mut bench, 0, &|_| false);
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::PolicyInvalid))
    );
    let record = bench.record(&op.change);
    let why = record.ops[0]
        .outcome
        .as_ref()
        .map(|o| o.detail["why"].to_string())
        .unwrap_or_default();
    assert!(why.contains("frobnicate") && why.contains('3'), "{why}");

    // An unchecked policy merges with no check at all.
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    assert!(
        Rig::new("a", 0)
            .run_until(&mut bench, 0, &is_check)
            .is_none()
    );
    assert_eq!(bench.state(&op), (OpState::Merged, None));
}

#[test]
fn a_failed_check_names_where_its_stderr_was_kept() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let (id, check) = a
        .run_until(&mut bench, 0, &is_check)
        .expect("the check runs");
    let log = "bay/logs/check-x-0-unit.stderr";
    let exit = CheckExit {
        stderr_log: Some(log.into()),
        ..bay_sim::bench::failing_exit(&check)
    };
    a.answer(&mut bench, id, Completion::CheckExited(exit), &|_| false);
    assert_eq!(
        bench.state(&op),
        (OpState::Blocked, Some(ReasonCode::CheckFailed))
    );
    let record = bench.record(&op.change);
    let named = record.ops[0]
        .outcome
        .as_ref()
        .map(|o| o.detail["checks"][0]["stderr_log"].clone());
    assert_eq!(named, Some(serde_json::json!(log)));
}

#[test]
fn a_conflict_with_main_names_the_paths() {
    let mut bench = Bench::new(Some(POLICY));
    let first = bench.submit("first", &[("src/a.txt", "one\n")]);
    let second = bench.submit("second", &[("src/a.txt", "two\n")]);
    let mut a = Rig::new("a", 0);
    let (id, check) = a
        .run_until(&mut bench, 0, &is_check)
        .expect("the first is checked");
    a.answer_pass(&mut bench, id, &check);
    assert_eq!(bench.state(&first).0, OpState::Merged);
    assert!(
        a.run_until(&mut bench, 20_000, &is_check).is_none(),
        "the second never reaches a check"
    );
    assert_eq!(
        bench.state(&second),
        (OpState::Blocked, Some(ReasonCode::MergeConflict))
    );
    let record = bench.record(&second.change);
    let paths = record.ops[0]
        .outcome
        .as_ref()
        .map(|o| o.detail["paths"].clone());
    assert_eq!(paths, Some(serde_json::json!(["src/a.txt"])));
}

#[test]
fn a_completion_for_an_action_never_issued_is_misuse() {
    let mut a = Rig::new("a", 0);
    let stranger = Completion::Fetched(Ok(BTreeMap::new()));
    assert!(
        a.runner
            .handle(Timestamp(0), Event::Done(ActionId(999), stranger))
            .is_err()
    );
    // And for one issued, a completion of the wrong kind is misuse too.
    a.feed(Event::Tick);
    let (id, action) = a.runner.poll_action().expect("a pass fetches");
    assert!(matches!(action, Action::Fetch(_)));
    let drafted = Refreshed::clean(Oid::parse(&"1".repeat(40)).expect("an id"));
    let wrong = Completion::DraftFrozen(Ok(drafted));
    assert!(
        a.runner
            .handle(Timestamp(0), Event::Done(id, wrong))
            .is_err()
    );
}

#[test]
fn a_runner_steps_are_all_leased_on_the_tip_they_extend() {
    let mut bench = Bench::new(Some(POLICY));
    bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let mut pushes = Vec::new();
    let mut next = a.run_until(&mut bench, 0, &|action| is_push(action) || is_check(action));
    while let Some((id, action)) = next {
        let completion = if is_check(&action) {
            Completion::CheckExited(pass(&action))
        } else {
            pushes.push(push_plan(&action).clone());
            bench_push(&mut bench, &action)
        };
        next = a.answer(&mut bench, id, completion, &|action| {
            is_push(action) || is_check(action)
        });
    }
    // The claim goes up with the candidate, and the last check with the merge.
    let shapes: Vec<Vec<&str>> = pushes.iter().map(kinds).collect();
    assert_eq!(
        shapes,
        vec![vec!["claim", "candidate"], vec!["check", "outcome"]]
    );
    for plan in &pushes {
        assert!(plan.atomic);
        for append in &plan.appends {
            let leased = append.parent.clone().map(bay_core::machine::Expect::Is);
            assert_eq!(Some(append.expect.clone()), leased, "{:?}", kinds(plan));
        }
    }
    let merge = pushes.last().expect("the merge");
    let by_name: BTreeMap<&str, &bay_core::machine::Expect> = merge
        .updates
        .iter()
        .map(|u| (u.name.as_str(), &u.expect))
        .collect();
    assert!(matches!(
        by_name[refs::main(MAIN).as_str()],
        bay_core::machine::Expect::Is(_)
    ));
    let change = pushes[0].appends[0].change.clone();
    assert_eq!(
        by_name[refs::landed(&change).as_str()],
        &bay_core::machine::Expect::Absent
    );
    let _ = StepBody::Abandon;
}

#[test]
fn with_no_check_required_the_claim_the_candidate_and_the_merge_go_in_one_push() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::new("a", 0);
    let (id, push) = a.run_until(&mut bench, 0, &is_push).expect("one push");
    assert_eq!(
        kinds(push_plan(&push)),
        vec!["claim", "candidate", "outcome"]
    );
    let names: Vec<&str> = push_plan(&push)
        .updates
        .iter()
        .map(|u| u.name.as_str())
        .collect();
    assert!(names.contains(&refs::main(MAIN).as_str()), "{names:?}");
    let applied = bench_push(&mut bench, &push);
    assert!(
        a.answer(&mut bench, id, applied, &is_push).is_none(),
        "nothing more to push"
    );
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert!(place_of(&bench, &op).is_none(), "the place is given up");
}

/// The queue place of `op` on the remote, if it holds one.
fn place_of(bench: &Bench, op: &OpId) -> Option<Oid> {
    bench
        .git
        .remote
        .get(&refs::queue(op_seq(bench, op)))
        .cloned()
}

fn op_seq(bench: &Bench, op: &OpId) -> u64 {
    bench.record(&op.change).op(op).expect("recorded").seq
}

/// Runs a merge request and returns the machine, for its seed.
fn request(bench: &mut Bench, intent: &str, path: &str, text: &str) -> Merge {
    let change = bench.start(intent, 7);
    bench.edit(&change, path, text);
    bench.ask_to_merge(&change, 8)
}

/// A seeded runner named "here", which logged an end before, works the request `merge`
/// made: the actions it sends, and the bench after.
fn seeded_run(bench: &mut Bench, merge: &Merge) -> (OpId, Vec<&'static str>, Runner) {
    let (op, mut runner) = wait_runner(merge);
    let actions = run_to_end(bench, &mut runner);
    (op, actions, runner)
}

/// The runner `merge --wait` starts after `merge`: named "here", in `Only` mode, seeded from
/// the request's view with the config the request read, as the command hands it over.
fn wait_runner(merge: &Merge) -> (OpId, Runner) {
    let op = merge
        .outcome()
        .and_then(|r| r.op_id.clone())
        .expect("queued");
    let mut cfg = RunnerConfig::new("here", MAIN, 1);
    cfg.mode = bay_core::machine::runner::RunMode::Only(op.clone());
    cfg.lease_ms = LEASE;
    let seed = bay_core::machine::runner::Seed {
        config: Some(bay_core::config::Config::default()),
        ..merge.seed().expect("a seed")
    };
    (op, Runner::seeded(cfg, Timestamp(0), seed))
}

/// A bench where the runner "here" logged an end before, so its log has a tip.
fn bench_with_earlier_log() -> Bench {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let earlier = BayEvent::outside_merge(&bench.main(), "outside", "earlier", Timestamp(1));
    bench.git.push(&PushPlan {
        log: Some(LogAdd::on("here", None, earlier.to_message())),
        atomic: true,
        ..PushPlan::default()
    });
    bench
}

#[test]
fn a_runner_started_from_the_request_s_view_reads_none_of_it_and_merges() {
    let mut bench = bench_with_earlier_log();
    let merge = request(&mut bench, "fix a", "src/a.txt", "a fixed\n");
    let (op, actions, runner) = seeded_run(&mut bench, &merge);
    assert_eq!(
        actions,
        vec!["fetch", "build-candidate", "push"],
        "no read of what the seed held (the policy included): only its own log's tip, which \
         no seed holds, so the one push lands"
    );
    assert_eq!(
        log_events(&bench, "here").len(),
        2,
        "its event follows the earlier one"
    );
    assert_eq!(
        runner.outcome().map(|r| r.decision),
        Some(bay_core::result::Decision::Merged)
    );
    assert_eq!(bench.merges_of(&op.change), 1);
}

#[test]
fn a_request_that_fetched_its_runner_s_log_hands_it_over_and_the_runner_fetches_nothing() {
    let mut bench = bench_with_earlier_log();
    let (_, merge) = wait_request(&mut bench, false);
    let (op, actions, runner) = seeded_run(&mut bench, &merge);
    assert_eq!(actions, vec!["build-candidate", "push"]);
    assert_eq!(log_events(&bench, "here").len(), 2);
    assert_eq!(
        runner.outcome().map(|r| r.decision),
        Some(bay_core::result::Decision::Merged)
    );
    assert_eq!(bench.merges_of(&op.change), 1);
}

/// Runs the seeded runner `runner` until it ends or ten leases pass, ticking a second at a
/// time; the names of the actions it sent.
fn run_to_end(bench: &mut Bench, runner: &mut Runner) -> Vec<&'static str> {
    runner.handle(Timestamp(0), Event::Tick).expect("a tick");
    let (mut clock, mut actions) = (0, Vec::new());
    while runner.outcome().is_none() && clock < 10 * LEASE {
        while let Some((id, action)) = runner.poll_action() {
            actions.push(action.name());
            let completion = bench.answer(&action).expect("no check");
            runner
                .handle(Timestamp(clock), Event::Done(id, completion))
                .expect("faithful");
        }
        clock += 1_000;
        runner
            .handle(Timestamp(clock), Event::Tick)
            .expect("a tick");
    }
    actions
}

/// `bay merge --wait` of a new change's edit, up to its runner's start (see
/// [`Merge::then_run_as`]).
fn wait_request(bench: &mut Bench, carried: bool) -> (bay_core::id::ChangeId, Merge) {
    let change = bench.start("fix a", 7);
    bench.edit(&change, "src/a.txt", "a fixed\n");
    let merge = bench.ask_to_merge_then_run(&change, 8, Some(("here", carried)));
    (change, merge)
}

/// [`wait_runner`] for a request written and not pushed, as on an empty queue.
fn carried_runner(merge: &Merge) -> (OpId, Runner) {
    let carried = merge.seed().is_some_and(|seed| seed.request.is_some());
    assert!(carried, "nothing queued ahead: the request is carried");
    wait_runner(merge)
}

#[test]
fn a_carried_request_goes_up_with_the_merge_in_one_push() {
    let mut bench = bench_with_earlier_log();
    let (change, merge) = wait_request(&mut bench, true);
    assert_eq!(
        bench.record(&change).ops.len(),
        0,
        "the request is written, not pushed"
    );
    let (op, mut runner) = carried_runner(&merge);
    let actions = run_to_end(&mut bench, &mut runner);
    assert_eq!(actions, vec!["build-candidate", "push"]);
    assert_eq!(
        runner.outcome().map(|r| r.decision),
        Some(bay_core::result::Decision::Merged)
    );
    assert!(!runner.request_dropped());
    assert_eq!(bench.merges_of(&op.change), 1);
    let record = bench.record(&op.change);
    assert_eq!(record.op(&op).map(|o| o.state), Some(OpState::Merged));
    assert!(
        place_of(&bench, &op).is_none(),
        "a place taken and given up in one push never exists"
    );
    let last = bench.git.remote.get(refs::QUEUE_LAST).cloned();
    let request = bench
        .git
        .store
        .step(&last.expect("the queue's last request"))
        .and_then(|step| step.op().cloned());
    assert_eq!(request, Some(op), "the queue's last request is this one");
}

#[test]
fn a_carried_request_that_loses_a_race_never_goes_up_and_is_asked_again() {
    let mut bench = bench_with_earlier_log();
    let (change, merge) = wait_request(&mut bench, true);
    let (op, mut runner) = carried_runner(&merge);
    // Meanwhile another agent's request takes the queue's next place.
    let other = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    run_to_end(&mut bench, &mut runner);
    assert!(runner.request_dropped(), "{:?}", runner.outcome());
    assert_eq!(bench.merges_of(&op.change), 0);
    assert!(
        bench.record(&change).op(&op).is_none(),
        "the request never went up"
    );
    assert_eq!(
        bench.state(&other),
        (OpState::Submitted, None),
        "the other request keeps its place"
    );
    // Asked again on its own, it queues behind the other.
    let again = bench.ask_to_merge_then_run(&change, 9, Some(("here", true)));
    assert!(
        again.seed().is_some_and(|seed| seed.request.is_none()),
        "something is queued ahead: the request goes up on its own"
    );
    assert_eq!(bench.record(&change).ops.len(), 1);
}

#[test]
fn a_stale_seed_costs_a_refused_push_never_a_wrong_merge() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let merge = request(&mut bench, "fix a", "src/a.txt", "a fixed\n");
    let op = merge
        .outcome()
        .and_then(|r| r.op_id.clone())
        .expect("queued");
    // After the request, someone pushes to main and another runner claims the operation.
    bench.move_main();
    let mut other = Rig::new("other", 0);
    let (id, claim) = other
        .run_until(&mut bench, 0, &is_push)
        .expect("the other runner claims");
    let mut held = claim.clone();
    if let Action::Push(plan) = &mut held {
        // Only its claim lands; it then goes silent.
        plan.updates.clear();
        plan.appends[0].steps.truncate(1);
    }
    let _ = (id, bench_push(&mut bench, &held));
    let mut cfg = RunnerConfig::new("here", MAIN, 1);
    cfg.mode = bay_core::machine::runner::RunMode::Only(op.clone());
    cfg.lease_ms = LEASE;
    let mut runner = Runner::seeded(cfg, Timestamp(0), merge.seed().expect("a seed"));
    run_to_end(&mut bench, &mut runner);
    assert_eq!(
        runner.outcome().map(|r| r.decision),
        Some(bay_core::result::Decision::Merged)
    );
    assert_eq!(
        bench.merges_of(&op.change),
        1,
        "merged once, on the main that was there"
    );
    let claims: Vec<String> = bench.record(&op.change).ops[0]
        .claimed_by
        .iter()
        .cloned()
        .collect();
    assert_eq!(
        claims,
        vec!["here".to_string()],
        "it took the silent claim over after a lease"
    );
}

/// The events on runner `name`'s log on the remote, newest first.
fn log_events(bench: &Bench, name: &str) -> Vec<BayEvent> {
    let mut events = Vec::new();
    let mut at = bench.git.remote.get(&refs::log(name)).cloned();
    while let Some(oid) = at {
        let commit = bench.git.store.get(&oid).expect("a log commit is stored");
        events.push(BayEvent::from_message(&commit.message).expect("a log commit is an event"));
        at = commit.parents.first().cloned();
    }
    events
}

fn is_fetch(action: &Action) -> bool {
    matches!(action, Action::Fetch(_))
}

#[test]
fn a_stale_log_lease_refuses_the_merge_push_which_goes_again_on_the_logs_new_tip() {
    let (mut bench, op, mut a, id, check) = one_change_checking();
    // Another process under the same runner name ends something meanwhile.
    let other = BayEvent::outside_merge(&bench.main(), "outside", "elsewhere", Timestamp(1));
    let (report, _) = bench.git.push(&PushPlan {
        log: Some(LogAdd::on("a", None, other.to_message())),
        atomic: true,
        ..PushPlan::default()
    });
    let other_tip = report.log.expect("the other process's event is written");
    let (merge_id, merge) = a.merge_after(&mut bench, id, &check);
    let refused = bench_push(&mut bench, &merge);
    assert!(matches!(
        refused,
        Completion::Pushed(PushReport {
            outcome: PushOutcome::Rejected { .. },
            ..
        })
    ));
    assert_eq!(bench.merges_of(&op.change), 0, "nothing moved");
    let (again_id, again) = a
        .answer(&mut bench, merge_id, refused, &is_merge_push)
        .expect("the same merge goes again, with no new candidate or check");
    let log = push_plan(&again).log.clone().expect("with its event");
    assert_eq!(log.parent, Some(other_tip), "on the log's new tip");
    let accepted = bench_push(&mut bench, &again);
    a.answer(&mut bench, again_id, accepted, &|_| false);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert_eq!(bench.merges_of(&op.change), 1);
    let events = log_events(&bench, "a");
    assert_eq!(events.len(), 2, "one event each: {events:?}");
    assert_eq!(events[0].op.as_ref(), Some(&op));
    assert_eq!(
        events[0].commit,
        Some(bench.main()),
        "the merge names main's new commit"
    );
    // Later passes read no log: an idle runner's cost does not grow with it.
    let (_, fetch) = a
        .run_until(&mut bench, 1_100_000, &is_fetch)
        .expect("a pass fetches");
    let Action::Fetch(spec) = fetch else {
        unreachable!()
    };
    assert!(
        spec.patterns.iter().all(|p| !p.starts_with(refs::LOG)),
        "an idle pass fetched a log: {spec:?}"
    );
}

#[test]
fn a_stale_notes_lease_refuses_the_check_record_which_goes_again_on_the_notes_new_tip() {
    let (mut bench, op, mut a, id, check) = one_change_checking();
    // Another process under the same runner name records evidence meanwhile.
    let (report, _) = bench.git.push(&PushPlan {
        notes: vec![NoteAdd {
            producer: "a".into(),
            expect: Expect::Absent,
            object: bench.main(),
            record: "{}".into(),
            key: None,
        }],
        atomic: true,
        ..PushPlan::default()
    });
    let other_tip = report
        .notes
        .first()
        .cloned()
        .expect("the other note is written");
    let (merge_id, merge) = a.merge_after(&mut bench, id, &check);
    let refused = bench_push(&mut bench, &merge);
    assert!(matches!(
        refused,
        Completion::Pushed(PushReport {
            outcome: PushOutcome::Rejected { .. },
            ..
        })
    ));
    let (again_id, again) = a
        .answer(&mut bench, merge_id, refused, &|action| {
            is_merge_push(action) || is_check(action) || action.name() == "build-candidate"
        })
        .expect("the same record and merge go again");
    assert!(
        is_merge_push(&again),
        "no new candidate or check run: {again:?}"
    );
    let notes = &push_plan(&again).notes;
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].expect,
        Expect::Is(other_tip),
        "on the notes' new tip"
    );
    let accepted = bench_push(&mut bench, &again);
    a.answer(&mut bench, again_id, accepted, &|_| false);
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    assert_eq!(bench.record(&op.change).ops[0].candidates.len(), 1);
}

/// The notify plugin gets each event the runner writes, once, on stdin, from main's tip; an
/// answer that says lost sends nothing again.
#[test]
fn each_event_the_runner_writes_goes_to_the_notify_plugin_once_and_is_never_sent_again() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    bench.push_to_main("scripts/notify", "#!/bin/sh\n");
    bench.push_to_main(
        ".bay/config.toml",
        "[plugin.notify]\ncommand = \"scripts/notify --quiet\"\n",
    );
    let tip = bench.main();
    let first = bench.submit("first", &[("src/a.txt", "a2\n")]);
    let mut a = Rig::new("a", 0);
    let (id, notice) = a
        .run_until(&mut bench, 0, &is_plugin)
        .expect("the merge's event goes to the plugin");
    assert_eq!(bench.state(&first).0, OpState::Merged, "after the merge");
    let Action::RunPlugin(run) = &notice else {
        unreachable!()
    };
    assert_eq!(
        (run.commit.clone(), run.program.as_str(), run.timeout_s),
        (tip, "scripts/notify", 5)
    );
    assert_eq!(run.args, ["--quiet"]);
    let event: serde_json::Value = serde_json::from_slice(&run.stdin).expect("an event");
    assert_eq!(event["schema"], "bay.event/1");
    assert_eq!(event["kind"], "merged");
    assert_eq!(event["op"], first.to_string());
    // Lost: nothing is sent again, and an idle runner asks nothing.
    let lost = Completion::PluginExited(PluginExit::Exited {
        code: Some(1),
        stdout: Vec::new(),
    });
    assert!(a.answer(&mut bench, id, lost, &is_plugin).is_none());
    assert!(a.run_until(&mut bench, 60_000, &is_plugin).is_none());
}

/// `bay merge --wait` of a new change's edit, as core's [`MergeWait`] runs it: run with the
/// bench answering every action and a tick a second, until it ends or ten leases pass. Before
/// the action named `before` is answered, `meanwhile` runs once. The names of the actions.
fn merge_wait(
    bench: &mut Bench,
    before: &str,
    meanwhile: impl FnMut(&mut Bench),
) -> (bay_core::id::ChangeId, MergeWait, Vec<&'static str>) {
    merge_wait_of(bench, ("fix a", "a fixed\n"), before, meanwhile)
}

/// [`merge_wait`] of the change `(intent, text)`: `src/a.txt` made `text`, every check run
/// answered with an honest pass.
fn merge_wait_of(
    bench: &mut Bench,
    (intent, text): (&str, &str),
    before: &str,
    mut meanwhile: impl FnMut(&mut Bench),
) -> (bay_core::id::ChangeId, MergeWait, Vec<&'static str>) {
    let change = bench.start(intent, 7);
    bench.edit(&change, "src/a.txt", text);
    let input = MergeInput {
        change: change.clone(),
        actor: "ann".into(),
        main: MAIN.into(),
        entropy: 8,
    };
    let mut cfg = RunnerConfig::new("here", MAIN, 1);
    cfg.lease_ms = LEASE;
    let mut wait = MergeWait::new(input, Timestamp(0), cfg);
    wait.configured(bay_core::config::Config::default());
    let (mut clock, mut actions, mut met) = (0, Vec::new(), false);
    while wait.outcome().is_none() && clock < 10 * LEASE {
        while let Some((id, action)) = wait.poll_action() {
            actions.push(action.name());
            if !met && action.name() == before {
                met = true;
                meanwhile(bench);
            }
            let completion = match action {
                Action::RunCheck(_) => Completion::CheckExited(pass(&action)),
                _ => bench.answer(&action).expect("only checks are the test's"),
            };
            wait.handle(Timestamp(clock), Event::Done(id, completion))
                .expect("faithful");
        }
        clock += 1_000;
        wait.handle(Timestamp(clock), Event::Tick).expect("a tick");
    }
    (change, wait, actions)
}

#[test]
fn merge_wait_carries_its_request_in_the_merge_push_and_merges_once() {
    let mut bench = bench_with_earlier_log();
    let (change, wait, actions) = merge_wait(&mut bench, "push", |_| {});
    assert_eq!(
        wait.outcome().map(|r| r.decision),
        Some(bay_core::result::Decision::Merged)
    );
    assert_eq!(
        actions.iter().filter(|name| **name == "push").count(),
        1,
        "the request, the claim and the merge in one push: {actions:?}"
    );
    assert!(wait.carried_request());
    assert_eq!(wait.generation(), 1, "one request, one run");
    assert_eq!(wait.op(), Some(&bench.record(&change).ops[0].id));
    assert_eq!(bench.merges_of(&change), 1);
}

/// `bay merge --wait` run again in the same clone: its runner's evidence notes now exist, and
/// its first check record must append to them, so the request's fetch hands their tip over.
#[test]
fn a_second_merge_wait_builds_and_checks_one_candidate_on_its_runner_s_notes() {
    let mut bench = Bench::new(Some(POLICY));
    for (n, text) in ["a once\n", "a twice\n"].into_iter().enumerate() {
        let intent = format!("edit {n}");
        let (change, wait, actions) = merge_wait_of(&mut bench, (&intent, text), "push", |_| {});
        assert_eq!(
            wait.outcome().map(|r| r.decision),
            Some(bay_core::result::Decision::Merged),
            "merge {n}: {actions:?}"
        );
        let count = |name: &str| actions.iter().filter(|a| **a == name).count();
        assert_eq!(
            (count("build-candidate"), count("run-check"), count("push")),
            (1, 1, 2),
            "merge {n} builds and checks exactly one candidate, and no push is refused: \
             {actions:?}"
        );
        let record = bench.record(&change);
        assert_eq!(record.ops[0].candidates.len(), 1, "merge {n}");
    }
}

#[test]
fn merge_wait_whose_carried_request_loses_its_place_asks_again_on_its_own() {
    let mut bench = bench_with_earlier_log();
    // Just before the runner's first push, another agent's request takes the queue's next
    // place: the carried request cannot go up.
    let mut other = None;
    let (change, wait, actions) = merge_wait(&mut bench, "push", |bench| {
        other = Some(bench.submit("fix b", &[("src/b.txt", "b fixed\n")]));
    });
    assert_eq!(
        wait.generation(),
        3,
        "a request, its run, a request of its own, its run: {actions:?}"
    );
    let record = bench.record(&change);
    assert_eq!(record.ops.len(), 1, "the request went up once, on its own");
    let op = record.ops[0].id.clone();
    assert_eq!(
        wait.op(),
        Some(&op),
        "the operation of the request asked again"
    );
    assert_eq!(
        bench.state(&op).0,
        OpState::Submitted,
        "queued behind the other"
    );
    assert_eq!(
        bench.state(&other.expect("the other request")).0,
        OpState::Submitted,
        "the other request keeps its place, ahead"
    );
    // No runner works the other: the run here waits its turn, and merges nothing meanwhile.
    assert!(wait.outcome().is_none(), "{:?}", wait.outcome());
    assert_eq!(bench.merges_of(&change), 0);
}

#[test]
fn merge_wait_refuses_a_reply_to_an_action_it_has_not_in_flight() {
    let mut bench = bench_with_earlier_log();
    let change = bench.start("fix a", 7);
    bench.edit(&change, "src/a.txt", "a fixed\n");
    let input = MergeInput {
        change,
        actor: "ann".into(),
        main: MAIN.into(),
        entropy: 8,
    };
    let mut wait = MergeWait::new(input, Timestamp(0), RunnerConfig::new("here", MAIN, 1));
    let (id, action) = wait.poll_action().expect("the request's fetch");
    let completion = bench.answer(&action).expect("an answer");
    wait.handle(Timestamp(0), Event::Done(id, completion.clone()))
        .expect("faithful");
    // The same id again: no longer in flight, a driver's mistake.
    assert!(
        wait.handle(Timestamp(0), Event::Done(id, completion))
            .is_err()
    );
    // An id never handed out is refused too.
    let never = bay_core::machine::ActionId(999);
    assert!(
        wait.handle(
            Timestamp(0),
            Event::Done(never, Completion::StepsRead(Ok(Vec::new())))
        )
        .is_err()
    );
}

#[test]
fn a_signing_runner_never_checks_or_merges_a_candidate_whose_signature_does_not_verify() {
    let mut bench = Bench::new(Some(POLICY));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let signer = bay_core::trust::record::RunnerSigner {
        executor_key: bay_sim::keys::path("a.executor"),
        producer_key: bay_sim::keys::path("a.producer"),
        executor_signers:
            "a ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEHZMmOi6qxlml6NZljupSooIs0XnEI/jbILagCubsN8\n"
                .into(),
        executor_public: String::new(),
    };
    let mut a = Rig::with("a", 1_000_000, |cfg| cfg.signer = Some(signer));
    let is_read = |action: &Action| matches!(action, Action::ReadCommits { .. });
    let stop = |action: &Action| {
        is_read(action)
            || is_check(action)
            || matches!(action, Action::BuildCandidate(spec) if spec.sign.is_none())
    };
    let (id, read) = a
        .run_until(&mut bench, 1_000_000, &stop)
        .expect("the candidate is read back");
    assert!(is_read(&read), "built signed, then read back: {read:?}");
    // The model's candidate carries no signature: the runner gives its claim back.
    let raw = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\ncandidate\n".to_owned();
    let next = a.answer(
        &mut bench,
        id,
        Completion::CommitsRead(Ok(vec![raw])),
        &|action| is_check(action) || is_merge_push(action),
    );
    assert!(next.is_none(), "nothing checked or merged: {next:?}");
    assert_eq!(bench.merges_of(&op.change), 0);
    assert_ne!(bench.state(&op).0, OpState::Merged);
}

/// `POLICY` with unsigned evidence reusable, and two changes queued behind each other on
/// separate files; runner `a` holds the first and its check, runner `b` checks ahead.
fn two_queued_and_a_checking() -> (Bench, OpId, OpId, Rig, ActionId, Action) {
    let policy = format!("{POLICY}\n[policy]\nreuse_unsigned = true\n");
    let mut bench = Bench::new(Some(&policy));
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let second = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = Rig::with("a", 1_000_000, |cfg| cfg.evidence_reuse = true);
    let (id, check) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a checks the head");
    (bench, first, second, a, id, check)
}

/// A runner that checks up to two entries ahead.
fn ahead_rig(name: &str, clock: u64) -> Rig {
    Rig::with(name, clock, |cfg| {
        cfg.evidence_reuse = true;
        cfg.ahead = 2;
    })
}

/// Runner `b` checks `second` ahead, on main with the head merged, and notes a pass there.
fn b_checks_ahead(bench: &mut Bench, second: &OpId, head: &Action) -> Action {
    let mut b = ahead_rig("b", 1_000_000);
    let (id, early) = b
        .run_until(bench, 1_000_000, &is_check)
        .expect("b checks an entry ahead");
    let (Action::RunCheck(run), Action::RunCheck(head_run)) = (&early, head) else {
        unreachable!()
    };
    let change = run.request.change.as_ref().map(|c| c.id.clone());
    assert_eq!(
        change.as_ref(),
        Some(&second.change),
        "the entry behind the head"
    );
    assert_eq!(
        run.request.base.tree, head_run.request.candidate.tree,
        "its base is main with the head merged"
    );
    let (_, record) = b
        .answer(bench, id, Completion::CheckExited(pass(&early)), &is_push)
        .expect("b notes the run");
    let plan = push_plan(&record);
    assert!(
        plan.appends.is_empty() && plan.updates.is_empty() && plan.notes.len() == 1,
        "an early run writes only its own evidence note: {plan:?}"
    );
    assert_eq!(plan.notes[0].producer, "b");
    bench_push(bench, &record);
    early
}

#[test]
fn a_runner_ahead_checks_the_next_entry_and_the_head_reuses_that_pass() {
    let (mut bench, first, second, mut a, id, head) = two_queued_and_a_checking();
    b_checks_ahead(&mut bench, &second, &head);
    assert_eq!(
        bench.state(&second).0,
        OpState::Submitted,
        "b took no ownership"
    );
    // The head merges; its runner takes the next one up, on exactly the predicted base.
    a.answer_pass(&mut bench, id, &head);
    assert_eq!(bench.state(&first), (OpState::Merged, None));
    let ran = a.run_until(&mut bench, 1_000_000 + 10_000, &is_check);
    assert!(ran.is_none(), "the early pass answers: {ran:?}");
    assert_eq!(bench.state(&second), (OpState::Merged, None));
    let record = bench.record(&second.change);
    assert!(
        record.ops[0].checks[0].why.contains("did not run again"),
        "{:?}",
        record.ops[0].checks
    );
}

#[test]
fn a_missed_prediction_never_counts() {
    let (mut bench, first, second, mut a, id, head) = two_queued_and_a_checking();
    b_checks_ahead(&mut bench, &second, &head);
    // The head fails: main never takes it, and the early run was on another base.
    a.answer(
        &mut bench,
        id,
        Completion::CheckExited(bay_sim::bench::failing_exit(&head)),
        &|_| false,
    );
    assert_eq!(bench.state(&first).0, OpState::Blocked);
    let (_, again) = a
        .run_until(&mut bench, 1_000_000 + 10_000, &is_check)
        .expect("the check runs on the real candidate");
    let Action::RunCheck(run) = &again else {
        unreachable!()
    };
    assert_eq!(run.request.base.commit, bench.main(), "on main as it is");
}

#[test]
fn a_runner_ahead_runs_each_check_on_one_base_once() {
    let (mut bench, _, second, _a, _, head) = two_queued_and_a_checking();
    b_checks_ahead(&mut bench, &second, &head);
    // Its next pass predicts the same and finds the record: nothing more to run early.
    let mut c = ahead_rig("c", 1_000_000);
    let ran = c.run_until(&mut bench, 1_000_000, &is_check);
    assert!(ran.is_none(), "{ran:?}");
}

#[test]
fn a_pass_that_lands_while_the_head_s_own_run_is_in_flight_answers_it() {
    let policy = format!("{POLICY}\n[policy]\nreuse_unsigned = true\n");
    let mut bench = Bench::new(Some(&policy));
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let second = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = ahead_rig("a", 1_000_000);
    let (head_id, head) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a checks the head");
    // b starts its early run of the second entry, which has not answered when the head merges.
    let mut b = ahead_rig("b", 1_000_000);
    let (early_id, early) = b
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("b checks ahead");
    a.answer_pass(&mut bench, head_id, &head);
    assert_eq!(bench.state(&first), (OpState::Merged, None));
    let (_, own) = a
        .run_until(&mut bench, 1_010_000, &is_check)
        .expect("a runs the second entry itself: no record is there yet");
    let (Action::RunCheck(own_run), Action::RunCheck(early_run)) = (&own, &early) else {
        unreachable!()
    };
    assert_eq!(
        own_run.request.candidate.tree,
        early_run.request.candidate.tree
    );
    // b's run ends first and its record goes up.
    let (_, record) = b
        .answer(
            &mut bench,
            early_id,
            Completion::CheckExited(pass(&early)),
            &is_push,
        )
        .expect("b notes its run");
    bench_push(&mut bench, &record);
    // After a's next heartbeat it reads the notes again: the pass answers its run.
    a.run_until(&mut bench, 1_010_000 + HEARTBEAT, &|_| false);
    assert_eq!(bench.state(&second), (OpState::Merged, None));
    let record = bench.record(&second.change);
    assert!(
        record.ops[0].checks[0]
            .why
            .contains("landed while the check ran"),
        "{:?}",
        record.ops[0].checks
    );
}

#[test]
fn a_head_that_changes_the_checks_stops_the_prediction() {
    let policy = format!("{POLICY}\n[policy]\nreuse_unsigned = true\n");
    let mut bench = Bench::new(Some(&policy));
    // The head changes the policy: the entries behind it would run its checks.
    let raised = policy.replace("revision = 1", "revision = 2");
    bench.submit("new policy", &[(".bay/policy.toml", raised.as_str())]);
    bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = ahead_rig("a", 1_000_000);
    a.run_until(&mut bench, 1_000_000, &is_check)
        .expect("a checks the head");
    let mut b = ahead_rig("b", 1_000_000);
    let ran = b.run_until(&mut bench, 1_000_000, &is_check);
    assert!(ran.is_none(), "nothing is checked behind it: {ran:?}");
    // An ordinary head lets the same runner check the entry behind it.
    let (mut bench, _, second, _a, _, head) = two_queued_and_a_checking();
    b_checks_ahead(&mut bench, &second, &head);
}

/// A runner's config that checks the head and the entries behind it as one tree: two to
/// eight of them, no batch above a failure rate of 0.3.
fn batching(cfg: &mut RunnerConfig) {
    cfg.evidence_reuse = true;
    cfg.batch = Some(bay_core::config::BatchSettings {
        min: 2,
        max: 8,
        max_failure_ppm: 300_000,
    });
}

/// Runner `b`, which batches (with `lanes`, under checks by area, `api/` and `web/`), watches
/// while runner `a` ends a change to `src/a.txt` or `api/a.txt` (its check passing or
/// failing); then two changes to `next`'s two paths queue: whether `b` checks them as one
/// batch (a request that names no change).
fn batches_after_another_runner_ended(
    ended: &str,
    a_passes: bool,
    lanes: bool,
    next: [&str; 2],
) -> bool {
    let area = |id: &str| {
        format!(
            "[[check]]\nid = \"{id}\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\nmaterialize_timeout_s = 10\nwhen_paths = [\"{id}/\"]\n\n"
        )
    };
    let policy = if lanes {
        format!(
            "revision = 1\n\n{}{}[policy]\nreuse_unsigned = true\n",
            area("api"),
            area("web")
        )
    } else {
        format!("{POLICY}\n[policy]\nreuse_unsigned = true\n")
    };
    let mut bench = Bench::new(Some(&policy));
    bench.submit("fix a", &[(ended, "a fixed\n")]);
    let mut a = Rig::new("a", 1_000_000);
    let (id, check) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a checks A");
    let mut b = Rig::with("b", 1_000_000, |cfg| {
        batching(cfg);
        cfg.footprint_lanes = lanes;
    });
    // b sees A's place, held by a, and waits.
    assert!(b.run_until(&mut bench, 1_000_000, &is_check).is_none());
    let exit = if a_passes {
        pass(&check)
    } else {
        bay_sim::bench::failing_exit(&check)
    };
    a.answer(&mut bench, id, Completion::CheckExited(exit), &|_| false);
    bench.submit("fix b", &[(next[0], "b fixed\n")]);
    bench.submit("fix c", &[(next[1], "c fixed\n")]);
    let (_, run) = b
        .run_until(&mut bench, 1_020_000, &is_check)
        .expect("b checks the head");
    let Action::RunCheck(run) = run else {
        unreachable!()
    };
    run.request.change.is_none()
}

#[test]
fn a_failure_another_runner_ended_counts_in_the_batch_failure_rate() {
    // One failed check of one outcome is above 0.3: no batch; one pass is not.
    let next = ["src/b.txt", "src/c.txt"];
    assert!(!batches_after_another_runner_ended(
        "src/a.txt",
        false,
        false,
        next
    ));
    assert!(batches_after_another_runner_ended(
        "src/a.txt",
        true,
        false,
        next
    ));
}

#[test]
fn with_footprint_lanes_the_failure_rate_reads_only_places_overlapping_the_head() {
    // A failure in api/ stops a batch of api/ changes, not one of web/ changes.
    let api = ["api/b.txt", "api/c.txt"];
    let web = ["web/b.txt", "web/c.txt"];
    assert!(!batches_after_another_runner_ended(
        "api/a.txt",
        false,
        true,
        api
    ));
    assert!(batches_after_another_runner_ended(
        "api/a.txt",
        false,
        true,
        web
    ));
    assert!(batches_after_another_runner_ended(
        "api/a.txt",
        true,
        true,
        api
    ));
}

/// A bench whose policy lets unsigned evidence be reused, with one change queued per name,
/// each writing `src/<name>.txt`, in that order.
fn queued_under_reuse(names: &[&str]) -> (Bench, Vec<OpId>) {
    let mut bench = Bench::new(Some(&format!(
        "{POLICY}\n[policy]\nreuse_unsigned = true\n"
    )));
    let ops = names
        .iter()
        .map(|name| {
            bench.submit(
                &format!("fix {name}"),
                &[(&format!("src/{name}.txt"), "x\n")],
            )
        })
        .collect();
    (bench, ops)
}

#[test]
fn past_the_heads_progress_deadline_a_batch_is_given_up_and_the_head_goes_alone() {
    let (mut bench, ops) = queued_under_reuse(&["a", "b", "c"]);
    let mut runner = Rig::with("r", 1_000_000, |cfg| {
        batching(cfg);
        cfg.progress_ms = 55_000;
    });
    let (_, run) = runner
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("the batch is checked");
    let Action::RunCheck(run) = run else {
        unreachable!()
    };
    assert!(
        run.request.change.is_none(),
        "a batch's run names no change"
    );
    // The run has 110 s before it is given up; the progress deadline, 55 s, comes first.
    // Until then the batch only renews the head's claim.
    for clock in (1_010_000..=1_050_000).step_by(10_000) {
        let ran = runner.run_until(&mut bench, clock, &is_check);
        assert!(ran.is_none(), "at {clock}: {ran:?}");
    }
    let next = runner.runner.poll_timeout().map(|d| (d.at, d.why));
    assert_eq!(next, Some((Timestamp(1_055_000), Wake::ProgressDeadline)));
    let (_, alone) = runner
        .run_until(&mut bench, 1_055_000, &is_check)
        .expect("the head is checked alone");
    let Action::RunCheck(alone) = alone else {
        unreachable!()
    };
    let named = alone.request.change.as_ref().map(|change| &change.id);
    assert_eq!(named, Some(&ops[0].change));
}

#[test]
fn the_next_presence_lists_an_early_run_for_bay_status() {
    let (mut bench, _first, second, _a, _, _head) = two_queued_and_a_checking();
    let mut b = ahead_rig("b", 1_000_000);
    let (id, early) = b
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("b checks an entry ahead");
    let is_presence =
        |action: &Action| matches!(action, Action::Push(plan) if plan.presence.is_some());
    let early_presence = b.answer(
        &mut bench,
        id,
        Completion::CheckExited(pass(&early)),
        &is_presence,
    );
    assert!(early_presence.is_none(), "at most one presence a heartbeat");
    // A heartbeat later the pass says its presence, which lists the run.
    let (_, push) = b
        .run_until(&mut bench, 1_000_000 + HEARTBEAT, &is_presence)
        .expect("b says its presence");
    let message = &push_plan(&push)
        .presence
        .as_ref()
        .expect("a presence")
        .message;
    let presence = Presence::from_message(message).expect("a presence b wrote");
    let listed: Vec<(&OpId, &str, Verdict)> = presence
        .prechecks
        .iter()
        .map(|run| (&run.op, run.check.as_str(), run.verdict))
        .collect();
    assert_eq!(listed, [(&second, "unit", Verdict::Pass)]);
}

/// A change behind the head names with `--after` a change abandoned after it queued: it
/// never merges (it ends `DEPENDENCY_ABANDONED` at its turn), so a batch stops before it and,
/// with fewer than two members, the head goes alone. Before, the batch took it and merged it
/// (bay-sim seed 74163, S10).
#[test]
fn a_batch_stops_before_a_change_whose_dependency_ended_unmerged() {
    use bay_core::machine::abandon::{Abandon, AbandonInput};
    use bay_core::machine::start::{Start, StartInput, StartTarget};
    let mut bench = Bench::new(Some(&format!(
        "{POLICY}\n[policy]\nreuse_unsigned = true\n"
    )));
    let head = bench.submit("fix a", &[("src/a.txt", "x\n")]);
    let named = bench.start("fix d", 41);
    let mut start = Start::new(
        StartInput {
            target: StartTarget::Intent {
                intent: "fix b".into(),
                paths: vec!["src/".into()],
            },
            actor: "ann".into(),
            main: MAIN.into(),
            new: false,
            fixes: None,
            after: vec![named.clone()],
            entropy: 42,
            disk: None,
            import: None,
        },
        Timestamp(1),
    );
    bench.run(&mut start);
    let waiting = start
        .outcome()
        .and_then(|r| r.change.clone())
        .expect("a change after the other");
    bench.edit(&waiting, "src/b.txt", "x\n");
    let queued = bench.ask_to_merge(&waiting, 43);
    assert!(queued.outcome().and_then(|r| r.op_id.clone()).is_some());
    let mut abandon = Abandon::new(
        AbandonInput {
            change: named,
            actor: "ann".into(),
            entropy: 44,
        },
        Timestamp(2),
    );
    bench.run(&mut abandon);
    bench.submit("fix c", &[("src/c.txt", "x\n")]);

    let mut runner = Rig::with("r", 1_000_000, batching);
    let (_, run) = runner
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("the head is checked");
    let Action::RunCheck(run) = run else {
        unreachable!()
    };
    let checked = run.request.change.as_ref().map(|change| &change.id);
    assert_eq!(checked, Some(&head.change), "the head goes alone");
}

/// A change waits for a person's yes; main moves, and a runner takes it up again, builds a
/// new candidate, checks it and dies before its claim goes back. The runner that takes the
/// lapsed claim over resumes that candidate, judges the yes still owed, and writes the wait
/// (claim and release, `APPROVAL_PENDING`) so an approver is asked again; before, it wrote
/// nothing, as if the record already said so, and the dead claim stayed for good (bay-sim
/// seed 145206: open at the liveness bound).
#[test]
fn a_lapsed_claim_that_owes_an_approval_is_released_for_it_by_the_next_runner() {
    let policy = format!(
        "{POLICY}\n[[check]]\nid = \"owner-approval\"\nenvironment = \"people\"\nkind = \"approval\"\nwhen_paths = [\"src/a.txt\"]\n"
    );
    let mut bench = Bench::new(Some(&policy));
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let owner = |bench: &Bench| {
        let operation = bench.record(&op.change).op(&op).cloned().expect("the op");
        (operation.owner, operation.released)
    };
    // Runner a checks it; its claim goes back for the yes.
    let mut a = Rig::new("a", 1_000_000);
    let (id, check) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a checks the change");
    a.answer(
        &mut bench,
        id,
        Completion::CheckExited(pass(&check)),
        &|_| false,
    );
    assert_eq!(owner(&bench), (None, Some(ReasonCode::ApprovalPending)));

    // Main moves; runner c takes it up, checks a new candidate and dies before its release.
    bench.move_main();
    let releases = |action: &Action| {
        matches!(action, Action::Push(plan) if plan.appends.iter().any(|append| append
            .steps
            .iter()
            .any(|step| matches!(step.body, StepBody::Release { .. }))))
    };
    let mut c = Rig::new("c", 1_100_000);
    let (id, check) = c
        .run_until(&mut bench, 1_100_000, &is_check)
        .expect("c checks the new candidate");
    let release = c.answer(
        &mut bench,
        id,
        Completion::CheckExited(pass(&check)),
        &releases,
    );
    assert!(release.is_some(), "c would give its claim back for the yes");
    drop(c);
    assert_eq!(owner(&bench).0.as_deref(), Some("c"));

    // Runner b takes the lapsed claim over.
    let mut b = Rig::new("b", 2_000_000);
    for clock in (2_000_000..=2_000_000 + 2 * LEASE).step_by(10_000) {
        let ran = b.run_until(&mut bench, clock, &is_check);
        assert!(ran.is_none(), "its checks stand: {ran:?}");
    }
    assert_eq!(
        owner(&bench),
        (None, Some(ReasonCode::ApprovalPending)),
        "the wait is on the record, held by no one"
    );
    assert_eq!(bench.state(&op).0, OpState::Submitted);
}

/// A runner reads the queue, then stalls before it reads the chains (a paused process). Meanwhile
/// a second change queues and the head, past its deadline, loses its place behind it. The
/// stalled runner's chain read shows the first change queued behind a place its queue read
/// never held: it must not take that change as the head, since the place ahead is unknown to it.
#[test]
fn a_runner_whose_queue_read_predates_a_lost_place_does_not_take_the_change_behind_it() {
    assert!(
        !stalled_runner_claims_the_lost_head(false),
        "the stalled runner took the change behind a place it never read"
    );
}

/// The same, when the newest request's place is gone before the stalled read (that change
/// was abandoned): `refs/bay/queue/last` names a step no place holds, which the read takes
/// with the places to know how far it reaches.
#[test]
fn a_queue_read_whose_newest_place_is_gone_still_knows_how_far_it_reaches() {
    assert!(
        !stalled_runner_claims_the_lost_head(true),
        "the stalled runner took the change behind a place it never read"
    );
}

/// Whether the stalled runner of the scenes above claims the first change, which lost its
/// place behind a change queued after the stalled runner read the queue; with `gone`, a
/// change queued and abandoned between the first and the stalled read.
fn stalled_runner_claims_the_lost_head(gone: bool) -> bool {
    use bay_core::machine::abandon::{Abandon, AbandonInput};
    let mut bench = Bench::new(Some(POLICY));
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    if gone {
        let dropped = bench.submit("fix z", &[("src/z.txt", "z\n")]);
        let input = AbandonInput {
            change: dropped.change.clone(),
            actor: "ann".into(),
            entropy: 44,
        };
        bench.run(&mut Abandon::new(input, Timestamp(2)));
        assert!(bench.state(&dropped).0.is_terminal(), "its place is gone");
    }
    let mut stalled = Rig::new("stalled", 0);
    let (read_id, read) = stalled
        .run_until(&mut bench, 0, &|action| {
            matches!(action, Action::ReadSteps { .. })
        })
        .expect("the pass reads the queue's one place");
    let second = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = Rig::with("a", 0, |cfg| cfg.progress_ms = 40_000);
    let mut clock = 0;
    while bench.state(&second).0 != OpState::Running {
        clock += HEARTBEAT / 2;
        assert!(clock < 200_000, "the second never became the head");
        a.run_until(&mut bench, clock, &is_check);
    }
    let lost = bench.record(&first.change).ops[0].clone();
    assert_eq!(lost.behind, Some(bench.record(&second.change).ops[0].seq));

    let steps = bench.answer(&read).expect("a step read");
    stalled.answer(&mut bench, read_id, steps, &|_| false);
    let tip = bench
        .git
        .remote
        .get(&refs::change(&first.change))
        .cloned()
        .expect("a chain");
    let steps = bench.git.store.chain(&tip).expect("a chain");
    steps
        .iter()
        .any(|step| step.by == "stalled" && matches!(step.body, StepBody::Claim { .. }))
}

/// Runner `a` batches four queued changes and bisects the third out (the check fails on every
/// tree that holds its file), then merges the two ahead of it. Runner `b`, which batches too
/// and never bisected anything, checks the culprit alone at its turn: the culprit is known
/// from its chain, not from `a`'s memory.
#[test]
fn a_culprit_one_runner_found_is_checked_alone_by_another() {
    let (mut bench, ops) = queued_under_reuse(&["a", "b", "c", "d"]);
    let holds_c = |bench: &Bench, check: &Action| {
        let Action::RunCheck(run) = check else {
            return false;
        };
        bench
            .git
            .store
            .files(&run.request.candidate.commit)
            .is_some_and(|files| files.contains_key("src/c.txt"))
    };
    let mut a = Rig::with("a", 1_000_000, batching);
    let mut next = a.run_until(&mut bench, 1_000_000, &is_check);
    while let Some((id, check)) = next {
        let exit = match holds_c(&bench, &check) {
            true => bay_sim::bench::failing_exit(&check),
            false => pass(&check),
        };
        next = a.answer(&mut bench, id, Completion::CheckExited(exit), &is_check);
    }
    let merged: Vec<usize> = ops.iter().map(|op| bench.merges_of(&op.change)).collect();
    assert_eq!(
        merged,
        [1, 1, 0, 0],
        "the prefix ahead of the culprit merged"
    );
    let culprit = bench.record(&ops[2].change).ops[0].clone();
    assert!(culprit.culprit, "the culprit's chain says so: {culprit:?}");

    let mut b = Rig::with("b", 1_000_000, batching);
    let (_, run) = b
        .run_until(&mut bench, 1_020_000, &is_check)
        .expect("b checks the head");
    let Action::RunCheck(run) = run else {
        unreachable!()
    };
    assert_eq!(
        run.request.change.as_ref().map(|change| &change.id),
        Some(&ops[2].change),
        "the culprit is checked alone, in no batch"
    );
}

/// A compaction reads the chains of the changes it chose before its fetch, never of those that
/// came due while the fetch was out: the runner holds such a change's chain tip from an earlier
/// pass, which may predate its abandonment, and reading it as live would delete the abandoned
/// marker as stale, with the change neither compacted nor taken up again.
#[test]
fn a_change_that_comes_due_while_a_compaction_fetches_is_left_for_the_next() {
    use bay_core::machine::abandon::{Abandon, AbandonInput};
    let mut bench = Bench::new(Some(POLICY));
    let abandoned = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let mut a = Rig::with("a", 1_000_000, |cfg| {
        cfg.compact_at = 1;
        cfg.retention_ms = 2_000_000;
    });
    // a fails the first change's check: it holds the chain's tip as its outcome left it.
    let (id, check) = a
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("a checks the first change");
    let failed = Completion::CheckExited(bay_sim::bench::failing_exit(&check));
    a.answer(&mut bench, id, failed, &|_| false);
    let mut abandon = Abandon::new(
        AbandonInput {
            change: abandoned.change.clone(),
            actor: "ann".into(),
            entropy: 9,
        },
        Timestamp(1),
    );
    bench.run(&mut abandon);
    let marker = refs::abandoned(&abandoned.change, Timestamp(1));
    assert!(bench.git.remote.get(&marker).is_some(), "abandoned");
    // A second change merges: its merged marker makes a compaction due at once.
    let merged = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let (id, check) = a
        .run_until(&mut bench, 1_100_000, &is_check)
        .expect("a checks the second change");
    a.answer_pass(&mut bench, id, &check);
    assert_eq!(bench.state(&merged), (OpState::Merged, None));
    // The next pass compacts the merged change; the abandoned one's window ends while the
    // compaction's fetch is out.
    let compaction_fetch = |action: &Action| {
        matches!(action, Action::Fetch(spec)
            if spec.patterns.contains(&refs::change_pattern(&merged.change)))
    };
    let (id, fetch) = a
        .run_until(&mut bench, 1_500_000, &compaction_fetch)
        .expect("a compacts the merged change");
    a.clock = 2_500_000;
    let fetched = bench.answer(&fetch).expect("the model answers");
    a.answer(&mut bench, id, fetched, &|_| false);
    assert!(
        bench
            .git
            .remote
            .get(&refs::change(&merged.change))
            .is_none(),
        "the merged change was compacted"
    );
    let kept = bench.git.remote.get(&marker).is_some()
        || bench
            .git
            .remote
            .get(&refs::change(&abandoned.change))
            .is_none();
    assert!(
        kept,
        "the abandoned marker went, and the change was not compacted with it"
    );
}

/// S4 judges a culprit note by who holds the operation as the chain stood: any runner may note
/// one nobody holds (a claim given back since counts for nothing), and none may note one a
/// claim of another runner holds.
#[test]
fn s4_lets_any_runner_note_a_culprit_nobody_holds_and_no_runner_one_another_holds() {
    use bay_sim::checks::Truth;
    use bay_sim::invariants::{Checker, Invariant};
    let culprit_by_b = |released: bool| {
        let mut bench = Bench::new(Some(POLICY));
        let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
        let mut checker = Checker::new(MAIN);
        let truth = Truth::default();
        let mut push = |bench: &mut Bench, by: &str, body: StepBody| {
            let applied = append_as(bench, &op, by, body);
            checker.after_push(1, &bench.git, &truth, &applied, Some(by));
        };
        push(&mut bench, "a", StepBody::Claim { op: op.clone() });
        if released {
            let release = StepBody::Release {
                op: op.clone(),
                reason: Some(ReasonCode::QueueDeadlineExceeded),
                why: "past the progress deadline".into(),
                behind: Some(1),
                detail: None,
            };
            push(&mut bench, "a", release);
        }
        let culprit = StepBody::Culprit {
            op: op.clone(),
            batch: "batch".into(),
        };
        push(&mut bench, "b", culprit);
        checker
            .violations
            .iter()
            .map(|v| v.invariant)
            .collect::<Vec<Invariant>>()
    };
    assert_eq!(culprit_by_b(true), vec![], "nobody held it");
    assert_eq!(culprit_by_b(false), vec![Invariant::Fencing], "a held it");
}

/// A compaction moves a change only with the marker of the end its chain holds: a change
/// taken up and abandoned again after the pass's fetch has a marker the compaction never
/// read, which its push would leave behind for good, naming a change no ref holds.
#[test]
fn a_change_abandoned_again_while_a_compaction_fetches_waits_for_its_new_marker() {
    use bay_core::machine::abandon::{Abandon, AbandonInput};
    use bay_core::machine::start::{Start, StartInput, StartTarget};
    let mut bench = Bench::new(Some(POLICY));
    let change = bench.start("fix a", 7);
    let abandon = |bench: &mut Bench, at: u64| {
        let input = AbandonInput {
            change: change.clone(),
            actor: "ann".into(),
            entropy: at,
        };
        let mut abandon = Abandon::new(input, Timestamp(at));
        bench
            .git
            .run_command(&mut abandon, &mut bench.views, Timestamp(at));
        refs::abandoned(&change, Timestamp(at))
    };
    let first = abandon(&mut bench, 1_000);
    // Taken up again: the first marker is stale.
    let mut start = Start::new(
        StartInput {
            target: StartTarget::Change(change.clone()),
            actor: "ann".into(),
            main: MAIN.into(),
            new: false,
            fixes: None,
            after: Vec::new(),
            entropy: 8,
            disk: None,
            import: None,
        },
        Timestamp(2_000),
    );
    bench
        .git
        .run_command(&mut start, &mut bench.views, Timestamp(2_000));
    assert!(!bench.record(&change).ended(), "taken up again");
    let mut a = Rig::with("a", 1_000_000, |cfg| {
        cfg.compact_at = 1;
        cfg.retention_ms = 0;
    });
    let compaction_fetch = |action: &Action| {
        matches!(action, Action::Fetch(spec)
            if spec.patterns.contains(&refs::change_pattern(&change)))
    };
    let (id, fetch) = a
        .run_until(&mut bench, 1_000_000, &compaction_fetch)
        .expect("a compacts, or deletes the stale marker");
    // Abandoned again while the compaction's fetch is out.
    let second = abandon(&mut bench, 5_000);
    assert_ne!(first, second);
    let fetched = bench.answer(&fetch).expect("the model answers");
    a.answer(&mut bench, id, fetched, &|_| false);
    let left: Vec<&String> = bench
        .git
        .remote
        .refs
        .keys()
        .filter(|name| refs::parse_ended(name).is_some_and(|(c, _)| c == change))
        .collect();
    let compacted = bench.git.remote.get(&refs::change(&change)).is_none();
    assert!(
        !compacted || left.is_empty(),
        "compacted with a marker left behind: {left:?}"
    );
    // The next pass reads both markers and moves the change, and both, into the index.
    a.run_until(&mut bench, 1_100_000, &|_| false);
    assert!(
        bench.git.remote.get(&refs::change(&change)).is_none(),
        "compacted"
    );
    assert!(bench.git.remote.get(&first).is_none(), "{first} deleted");
    assert!(bench.git.remote.get(&second).is_none(), "{second} deleted");
}

/// Appends `body` to the chain of `op`'s change as `by`, another writer than the rig's runner,
/// and returns what the push moved, for a checker to judge.
fn append_as(bench: &mut Bench, op: &OpId, by: &str, body: StepBody) -> Applied {
    let change = op.change.clone();
    let tip = bench.git.remote.get(&refs::change(&change)).cloned();
    let step = Step {
        change: change.clone(),
        at: Timestamp(1_000_000),
        by: by.into(),
        nonce: bench.git.remote.refs.len() as u64,
        body,
    };
    let plan = PushPlan::of(bay_core::machine::Append::on(change, tip, vec![step], None));
    let (report, applied) = bench.git.push(&plan);
    assert_eq!(report.outcome, PushOutcome::Accepted);
    applied
}

/// A compaction fetches the refs of the changes it may compact, and so moves them in the
/// runner's copy after the pass read their chains. One may be live: here the head, held by
/// another runner, whose merged marker someone made by hand, and whose holder renews its claim
/// while the fetch is out. The pass once found the head read short of its tip, took it for
/// ended, and claimed the operation behind it, to merge it first (S7; seed 1869 of
/// `--batch --agents 6 --changes 20` with a 20 s lease renewed every 3 s).
#[test]
fn a_head_whose_chain_a_compaction_moved_is_read_again_not_passed_over() {
    let mut bench = Bench::new(Some(POLICY));
    let head = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let behind = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    append_as(&mut bench, &head, "x", StepBody::Claim { op: head.clone() });
    let main = bench.main();
    bench
        .git
        .remote
        .refs
        .insert(refs::landed(&head.change), main);
    let mut a = Rig::with("a", 1_000_000, |cfg| cfg.compact_at = 1);
    let compaction_fetch = |action: &Action| {
        matches!(action, Action::Fetch(spec)
            if spec.patterns.contains(&refs::change_pattern(&head.change))
                && spec.patterns.iter().any(|p| p.starts_with(refs::INDEX)))
    };
    let (id, fetch) = a
        .run_until(&mut bench, 1_000_000, &compaction_fetch)
        .expect("the marker makes a compaction due, and it fetches the head's chain");
    append_as(
        &mut bench,
        &head,
        "x",
        StepBody::Heartbeat { op: head.clone() },
    );
    let fetched = bench.answer(&fetch).expect("the model answers");
    a.answer(&mut bench, id, fetched, &|_| false);
    assert!(
        bench.git.remote.get(&refs::change(&head.change)).is_some(),
        "a live change is not compacted"
    );
    let record = bench.record(&behind.change);
    let operation = record.op(&behind).expect("recorded");
    assert_eq!(operation.state, OpState::Submitted);
    assert_eq!(
        operation.owner, None,
        "the operation behind the head is not taken on"
    );
    assert!(
        a.held.iter().all(|(_, action)| !is_check(action)),
        "a checks nothing"
    );
}

/// A batch checks its tree with two runs at once (`parallel_checks = 2`). While the head's
/// claim is being renewed, one run answers that no worker here can run it: the batch is left,
/// and waits for the renewal before its head goes alone. The other run answers meanwhile: it
/// counts for nothing. The runner once took that answer for a driver's misuse and stopped
/// (seed 69724 of `--batch --agents 6 --changes 20`).
#[test]
fn a_batch_run_that_answers_after_the_batch_was_left_counts_for_nothing() {
    let policy = format!("{}\n[policy]\nreuse_unsigned = true\n", two_checks());
    let mut bench = Bench::new(Some(&policy));
    for name in ["a", "b"] {
        bench.submit(
            &format!("fix {name}"),
            &[(&format!("src/{name}.txt"), "x\n")],
        );
    }
    let mut r = Rig::with("r", 1_000_000, |cfg| {
        batching(cfg);
        cfg.parallel_checks = 2;
    });
    let (unit_id, unit) = r
        .run_until(&mut bench, 1_000_000, &is_check)
        .expect("the batch is checked");
    let Action::RunCheck(run) = &unit else {
        unreachable!()
    };
    assert!(run.request.change.is_none(), "a batch's run");
    let (lint_id, lint) = r.runner.poll_action().expect("lint runs at the same time");
    assert!(is_check(&lint));
    let renewal =
        |action: &Action| matches!(action, Action::Push(plan) if kinds(plan) == ["heartbeat"]);
    let (beat_id, beat) = r
        .run_until(&mut bench, 1_000_000 + HEARTBEAT, &renewal)
        .expect("the head's claim is renewed");
    r.answer(
        &mut bench,
        unit_id,
        Completion::CheckExited(unavailable_exit()),
        &|_| false,
    );
    r.feed(Event::Done(lint_id, Completion::CheckExited(pass(&lint))));
    // The renewal lands; the head goes alone, and lint runs again for it.
    let renewed = bench_push(&mut bench, &beat);
    let (_, alone) = r
        .answer(&mut bench, beat_id, renewed, &is_check)
        .expect("the head is checked alone");
    let Action::RunCheck(alone) = alone else {
        unreachable!()
    };
    assert!(alone.request.change.is_some(), "the head's own run");
}
