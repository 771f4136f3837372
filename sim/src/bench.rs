//! A bench for tests that drive core's machines by hand against the [`GitModel`]: the remote,
//! the agents' views, and the answer to every action but a check run, with no latency and no
//! faults. The scene tests (`sim/tests/runner.rs`) and the queue and lease model test
//! (`sim/tests/queue_lease.rs`) share it; the world (`world.rs`) has its own scheduler.

use std::collections::BTreeMap;

use bay_core::check::CheckExit;
use bay_core::git::{Oid, refs};
use bay_core::id::{ChangeId, OpId};
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::runner::Runner;
use bay_core::machine::start::{Start, StartInput, StartTarget};
use bay_core::machine::{Action, ActionId, Completion, Event, Machine};
use bay_core::reason::ReasonCode;
use bay_core::record::ChangeRecord;
use bay_core::result::OpState;
use bay_core::time::Timestamp;

use crate::git_model::{GitModel, View};

/// Main's branch name on every bench.
pub const MAIN: &str = "main";

/// The remote and the agents' views.
#[derive(Debug)]
pub struct Bench {
    pub git: GitModel,
    pub views: BTreeMap<ChangeId, View>,
}

impl Bench {
    /// A remote whose main holds `src/a.txt`, `src/b.txt` and, if given, `.bay/policy.toml`.
    pub fn new(policy: Option<&str>) -> Bench {
        let mut files = vec![("src/a.txt", "a\n"), ("src/b.txt", "b\n")];
        if let Some(policy) = policy {
            files.push((".bay/policy.toml", policy));
        }
        let mut git = GitModel::default();
        git.init_main(MAIN, &files);
        Bench {
            git,
            views: BTreeMap::new(),
        }
    }

    pub fn main(&self) -> Oid {
        self.git
            .remote
            .get(&refs::main(MAIN))
            .cloned()
            .expect("main exists")
    }

    /// Answers every action but a check run (checks are the test's to answer).
    pub fn answer(&mut self, action: &Action) -> Option<Completion> {
        self.git.answer(action, &mut self.views)
    }

    /// Runs an agent command to its end.
    pub fn run(&mut self, machine: &mut dyn Machine) {
        self.git.run_command(machine, &mut self.views, Timestamp(1));
    }

    /// Starts a change for `intent` (declaring `src/`) as the actor `ann`.
    pub fn start(&mut self, intent: &str, entropy: u64) -> ChangeId {
        self.start_fixing(intent, entropy, None)
    }

    /// Starts a change for `intent` that fixes `fixes`, when given (`bay start --fixes`).
    pub fn start_fixing(
        &mut self,
        intent: &str,
        entropy: u64,
        fixes: Option<ChangeId>,
    ) -> ChangeId {
        let target = StartTarget::Intent {
            intent: intent.into(),
            paths: vec!["src/".into()],
        };
        let mut start = Start::new(
            StartInput {
                target,
                actor: "ann".into(),
                main: MAIN.into(),
                new: false,
                fixes,
                after: Vec::new(),
                entropy,
                disk: None,
                import: None,
            },
            Timestamp(1),
        );
        self.run(&mut start);
        start
            .outcome()
            .and_then(|r| r.change.clone())
            .expect("the start opened a change")
    }

    /// Writes `text` to `path` in the view of `change`.
    pub fn edit(&mut self, change: &ChangeId, path: &str, text: &str) {
        let blob = self.git.store.blob(text);
        self.views
            .get_mut(change)
            .expect("the view exists")
            .files
            .insert(path.to_string(), blob);
    }

    /// Runs `bay merge` on `change` to its end and returns the machine (for its outcome and
    /// its seed).
    pub fn ask_to_merge(&mut self, change: &ChangeId, entropy: u64) -> Merge {
        self.ask_to_merge_then_run(change, entropy, None)
    }

    /// [`Bench::ask_to_merge`] as `bay merge --wait` does, when `runner` works it next (and
    /// may carry the request, when `.1`).
    pub fn ask_to_merge_then_run(
        &mut self,
        change: &ChangeId,
        entropy: u64,
        runner: Option<(&str, bool)>,
    ) -> Merge {
        let input = MergeInput {
            change: change.clone(),
            actor: "ann".into(),
            main: MAIN.into(),
            entropy,
        };
        let mut merge = match runner {
            Some((runner, carried)) => Merge::then_run_as(input, Timestamp(2), runner, carried),
            None => Merge::new(input, Timestamp(2)),
        };
        self.run(&mut merge);
        merge
    }

    /// Starts a change for `intent`, writes `edits` into its view, and asks to merge it.
    pub fn submit(&mut self, intent: &str, edits: &[(&str, &str)]) -> OpId {
        let change = self.start(intent, 7);
        for (path, text) in edits {
            self.edit(&change, path, text);
        }
        self.ask_to_merge(&change, 8)
            .outcome()
            .and_then(|r| r.op_id.clone())
            .expect("the merge queued an operation")
    }

    /// The record of `change` as its chain on the remote folds, or `None` if it has no chain.
    ///
    /// # Panics
    /// If the chain does not fold: honest writers never make such a chain.
    pub fn try_record(&self, change: &ChangeId) -> Option<ChangeRecord> {
        if self.git.remote.get(&refs::change(change)).is_none() {
            return self.git.record(change).map(|record| (*record).clone());
        }
        let tip = self.git.remote.get(&refs::change(change))?;
        let steps = self
            .git
            .store
            .chain(tip)
            .expect("every chain commit is a step");
        Some(ChangeRecord::fold(&steps).expect("an honest record"))
    }

    /// The record of `change`, which must exist.
    pub fn record(&self, change: &ChangeId) -> ChangeRecord {
        self.try_record(change).expect("the change exists")
    }

    /// The state of `op` and the reason it ended with, as the remote's record says.
    pub fn state(&self, op: &OpId) -> (OpState, Option<ReasonCode>) {
        let record = self.record(&op.change);
        let op = record.op(op).expect("the operation is recorded");
        (op.state, op.outcome.as_ref().and_then(|o| o.reason))
    }

    /// Commits made on main by bay merges of `change`.
    pub fn merges_of(&self, change: &ChangeId) -> usize {
        let (oids, _) = self.git.store.first_parents(&self.main(), None);
        let needle = format!("Change-Id: {change}");
        oids.iter()
            .filter(|oid| {
                self.git
                    .store
                    .get(oid)
                    .is_some_and(|c| c.message.contains(&needle))
            })
            .count()
    }

    /// Someone commits `text` as `path` straight to main.
    pub fn push_to_main(&mut self, path: &str, text: &str) {
        self.git
            .remote
            .outside_push(&mut self.git.store, MAIN, path, text);
    }

    /// Someone pushes to main around bay.
    pub fn move_main(&mut self) {
        self.git
            .remote
            .outside_push(&mut self.git.store, MAIN, "src/z.txt", "outside\n");
    }
}

/// Runs `runner` at `clock` until it waits, answering each check with a pass; `on_check` is
/// called before each is answered with how many ran before. Returns the checks it ran, by id.
pub fn run_passing(
    bench: &mut Bench,
    runner: &mut Runner,
    clock: u64,
    on_check: &mut dyn FnMut(&mut Bench, usize),
) -> Vec<String> {
    let now = Timestamp(clock);
    runner.handle(now, Event::Tick).expect("a faithful driver");
    drain_passing(bench, runner, now, on_check)
}

/// Answers `runner`'s actions at `now` until it waits, each check with a pass, as
/// [`run_passing`] does.
pub fn drain_passing(
    bench: &mut Bench,
    runner: &mut Runner,
    now: Timestamp,
    on_check: &mut dyn FnMut(&mut Bench, usize),
) -> Vec<String> {
    let mut checks = Vec::new();
    while let Some((id, action)) = runner.poll_action() {
        let completion = match &action {
            Action::RunCheck(run) => {
                on_check(bench, checks.len());
                checks.push(run.check.id.clone());
                Completion::CheckExited(passing_exit(&action))
            }
            _ => bench.answer(&action).expect("the model answers"),
        };
        runner
            .handle(now, Event::Done(id, completion))
            .expect("a faithful driver");
    }
    checks
}

/// Answers `runner`'s actions at `clock` (after a tick, when `tick`) until it runs a check, or
/// waits: that run, if any, for the test to answer.
pub fn until_check(
    bench: &mut Bench,
    runner: &mut Runner,
    clock: u64,
    tick: bool,
) -> Option<(ActionId, Action)> {
    let now = Timestamp(clock);
    if tick {
        runner.handle(now, Event::Tick).expect("a faithful driver");
    }
    while let Some((id, action)) = runner.poll_action() {
        if matches!(action, Action::RunCheck(_)) {
            return Some((id, action));
        }
        let completion = bench.answer(&action).expect("the model answers");
        runner
            .handle(now, Event::Done(id, completion))
            .expect("a faithful driver");
    }
    None
}

/// An honest passing result (three units) for the candidate a check run names.
///
/// # Panics
/// If `action` is not a check run.
pub fn passing_exit(action: &Action) -> CheckExit {
    exit_with(action, "pass", 0)
}

/// An honest result for the candidate a check run names whose first unit failed on it.
///
/// # Panics
/// If `action` is not a check run.
pub fn failing_exit(action: &Action) -> CheckExit {
    exit_with(action, "product_failure", 1)
}

fn exit_with(action: &Action, first: &str, exit_code: i32) -> CheckExit {
    let Action::RunCheck(run) = action else {
        panic!("not a check run: {action:?}")
    };
    let candidate = &run.request.candidate;
    let stdout = serde_json::json!({
        "schema": "bay.check.result/1",
        "exercised": { "commit": candidate.commit, "tree": candidate.tree },
        "plan": { "selected": 3, "completed": 3 },
        "checks": [{"id": "a", "verdict": first}, {"id": "b", "verdict": "pass"}, {"id": "c", "verdict": "pass"}],
    });
    CheckExit {
        stdout: stdout.to_string().into_bytes(),
        exit_code: Some(exit_code),
        timed_out: false,
        millis: 10,
        infra: None,
        sandbox_read: Vec::new(),
        adapter: Vec::new(),
        stderr_log: None,
    }
}
