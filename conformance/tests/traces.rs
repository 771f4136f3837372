//! bay's main scenarios, recorded as golden traces against the simulator's Git model: a clean
//! merge, a conflict, main moving under a merge, a takeover, a lost reply, a lying check, and a
//! footprint pass carried over main's move.
//!
//! Each test records its scenario afresh and requires the trace to equal the committed file
//! (a change of behaviour shows as a diff in review), and every committed trace to replay on
//! a fresh core. `BAY_BLESS=1 cargo test -p bay-conformance --test traces` rewrites the files.

use std::collections::VecDeque;

use bay_conformance::trace::{self, Recorder, Trace};
use bay_core::git::{Oid, refs};
use bay_core::id::OpId;
use bay_core::machine::runner::{RunMode, RunnerConfig};
use bay_core::machine::{Action, ActionId, Completion, Event, Machine, PushOutcome};
use bay_core::result::Decision;
use bay_core::time::Timestamp;
use bay_sim::bench::{Bench, MAIN, passing_exit};

const POLICY: &str = "revision = 1\n\n[[check]]\nid = \"unit\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\n";

/// The model, the agents' views, and the recorded runners.
struct Scene {
    bench: Bench,
    rec: Recorder,
    op: OpId,
}

impl Scene {
    /// A remote whose main holds a policy with one check, and one change asking to merge: the
    /// agent is not traced, the runners are.
    fn new() -> Scene {
        Scene::with(POLICY, &[("src/a.txt", "a fixed\n")])
    }

    /// A remote whose main holds `policy`, and one change of `edits` asking to merge.
    fn with(policy: &str, edits: &[(&str, &str)]) -> Scene {
        let mut bench = Bench::new(Some(policy));
        let op = bench.submit("fix a", edits);
        Scene {
            bench,
            rec: Recorder::default(),
            op,
        }
    }

    /// A runner for the scene's operation alone, on its own clock.
    fn runner(&mut self, name: &str, now: u64, seed: u64) {
        self.runner_with(name, now, seed, |_| {});
    }

    /// [`Scene::runner`], its config then changed by `tweak`.
    fn runner_with(&mut self, name: &str, now: u64, seed: u64, tweak: fn(&mut RunnerConfig)) {
        let mut config = RunnerConfig::new(name, MAIN, seed);
        config.lease_ms = 60_000;
        config.heartbeat_ms = 10_000;
        config.check_grace_ms = 5_000;
        config.mode = RunMode::Only(self.op.clone());
        tweak(&mut config);
        self.rec.runner(name, config, Timestamp(now));
    }

    /// Feeds `event` at `now`, then answers from the model every action it can until the
    /// runner waits: on time, on a check, or on an action `hold` picks. Returns what waits.
    fn feed(
        &mut self,
        name: &str,
        now: u64,
        event: Event,
        hold: &dyn Fn(&Action) -> bool,
    ) -> Vec<(ActionId, Action)> {
        let mut held = Vec::new();
        let mut inputs = VecDeque::from([event]);
        while let Some(input) = inputs.pop_front() {
            self.rec
                .handle(name, Timestamp(now), input)
                .expect("the scene drives the runner as a driver must");
            while let Some((id, action)) = self.rec.poll_action(name) {
                if matches!(action, Action::RunCheck(_)) || hold(&action) {
                    held.push((id, action));
                    continue;
                }
                let completion = self
                    .bench
                    .answer(&action)
                    .expect("the model answers all but checks");
                inputs.push_back(Event::Done(id, completion));
            }
        }
        held
    }

    /// Ticks at `now` and returns the one check the runner then runs.
    fn tick_to_check(&mut self, name: &str, now: u64) -> (ActionId, Action) {
        let mut held = self.feed(name, now, Event::Tick, &|_| false);
        assert_eq!(held.len(), 1, "one check runs: {held:?}");
        held.remove(0)
    }

    fn outcome(&self, name: &str) -> (Decision, Option<String>) {
        let result = self
            .rec
            .runner_ref(name)
            .outcome()
            .expect("the runner has ended");
        let reason = result.reason.map(|r| r.to_string());
        (result.decision, reason)
    }

    fn finish(self, scenario: &str, about: &str) -> Trace {
        self.rec.finish(scenario, about)
    }
}

/// The check's answer to the run `id`: an honest pass for the candidate `action` names, or,
/// with `tree`, the same pass claimed for that tree instead.
fn answer(id: ActionId, action: &Action, tree: Option<&Oid>) -> Event {
    let mut exit = passing_exit(action);
    if let (Some(tree), Action::RunCheck(run)) = (tree, action) {
        let honest = run.request.candidate.tree.to_string();
        let stdout = String::from_utf8_lossy(&exit.stdout).replace(&honest, tree.as_str());
        exit.stdout = stdout.into_bytes();
    }
    Event::Done(id, Completion::CheckExited(exit))
}

fn is_merge_push(action: &Action) -> bool {
    matches!(action, Action::Push(plan) if plan.updates.iter().any(|u| u.name == refs::main(MAIN)))
}

fn nothing(_: &Action) -> bool {
    false
}

fn clean_merge() -> Trace {
    let mut scene = Scene::new();
    scene.runner("runner-1", 1_000_000, 11);
    let (id, check) = scene.tick_to_check("runner-1", 1_000_000);
    scene.feed("runner-1", 1_000_100, answer(id, &check, None), &nothing);
    assert_eq!(scene.outcome("runner-1"), (Decision::Merged, None));
    scene.finish(
        "clean-merge",
        "A runner claims the head, checks its candidate, and merges it with one atomic push.",
    )
}

fn conflict() -> Trace {
    let mut scene = Scene::new();
    scene.bench.git.remote.outside_push(
        &mut scene.bench.git.store,
        MAIN,
        "src/a.txt",
        "a, elsewhere\n",
    );
    scene.runner("runner-1", 1_000_000, 11);
    let held = scene.feed("runner-1", 1_000_000, Event::Tick, &nothing);
    assert!(held.is_empty(), "no check runs on a conflict: {held:?}");
    assert_eq!(
        scene.outcome("runner-1"),
        (Decision::Blocked, Some("MERGE_CONFLICT".into()))
    );
    scene.finish(
        "conflict",
        "Main changed the file the draft changed: the runner refuses MERGE_CONFLICT with its path.",
    )
}

fn main_moved() -> Trace {
    let mut scene = Scene::new();
    scene.runner("runner-1", 1_000_000, 11);
    let (id, check) = scene.tick_to_check("runner-1", 1_000_000);
    scene
        .bench
        .git
        .remote
        .outside_push(&mut scene.bench.git.store, MAIN, "src/z.txt", "outside\n");
    let held = scene.feed("runner-1", 1_000_100, answer(id, &check, None), &nothing);
    assert_eq!(held.len(), 1, "a new candidate is checked: {held:?}");
    let (id, check) = &held[0];
    scene.feed("runner-1", 1_000_200, answer(*id, check, None), &nothing);
    assert_eq!(scene.outcome("runner-1"), (Decision::Merged, None));
    scene.finish(
        "main-moved",
        "Main moves while the check runs: the merge push is refused, a new candidate is built and checked, and merged.",
    )
}

fn footprint_carried() -> Trace {
    let check = |id: &str, path: &str| {
        format!(
            "[[check]]\nid = \"{id}\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\nwhen_paths = [\"{path}\"]\nfootprint = true\n\n"
        )
    };
    let policy = format!(
        "revision = 1\n\n{}{}[policy]\nreuse_unsigned = true\n",
        check("a", "src/a.txt"),
        check("b", "src/b.txt")
    );
    let edits = [("src/a.txt", "a fixed\n"), ("src/b.txt", "b fixed\n")];
    let mut scene = Scene::with(&policy, &edits);
    scene.runner_with("runner-1", 1_000_000, 11, |config| {
        config.evidence_reuse = true;
        config.footprint_lanes = true;
    });
    let (id, first) = scene.tick_to_check("runner-1", 1_000_000);
    let held = scene.feed("runner-1", 1_000_100, answer(id, &first, None), &nothing);
    assert_eq!(held.len(), 1, "the second check: {held:?}");
    let (id, second) = &held[0];
    scene
        .bench
        .git
        .remote
        .outside_push(&mut scene.bench.git.store, MAIN, "src/z.txt", "outside\n");
    let held = scene.feed("runner-1", 1_000_200, answer(*id, second, None), &nothing);
    let checks: Vec<&str> = held
        .iter()
        .filter_map(|(_, action)| match action {
            Action::RunCheck(run) => Some(run.check.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(checks, ["b"], "a's pass carries to the new candidate");
    let (id, again) = &held[0];
    scene.feed("runner-1", 1_000_300, answer(*id, again, None), &nothing);
    assert_eq!(scene.outcome("runner-1"), (Decision::Merged, None));
    scene.finish(
        "footprint-carried",
        "Two footprint checks; main moves outside their files while the second runs: the new candidate is stamped, the first check's pass carries, only the second runs again, and it merges.",
    )
}

fn takeover() -> Trace {
    let mut scene = Scene::new();
    scene.runner("runner-1", 1_000_000, 11);
    // runner-1 claims the operation, starts its check, and is never heard from again.
    let _ = scene.tick_to_check("runner-1", 1_000_000);
    scene.runner("runner-2", 7_000_000, 22);
    let mut now = 7_000_000;
    let mut held = scene.feed("runner-2", now, Event::Tick, &nothing);
    while held.is_empty() {
        let deadline = scene
            .rec
            .runner_ref("runner-2")
            .poll_timeout()
            .expect("a watching runner waits on time");
        assert!(deadline.at.0 <= 7_000_000 + 120_000, "took over in time");
        now = deadline.at.0;
        held = scene.feed("runner-2", now, Event::Tick, &nothing);
    }
    assert!(now - 7_000_000 >= 60_000, "not before a whole lease");
    let (id, check) = &held[0];
    scene.feed("runner-2", now + 100, answer(*id, check, None), &nothing);
    assert_eq!(scene.outcome("runner-2"), (Decision::Merged, None));
    scene.finish(
        "takeover",
        "A runner goes silent mid-check; another watches its claim for one whole lease on its own clock, takes over, and merges.",
    )
}

fn lost_reply() -> Trace {
    let mut scene = Scene::new();
    scene.runner("runner-1", 1_000_000, 11);
    let (id, check) = scene.tick_to_check("runner-1", 1_000_000);
    let held = scene.feed(
        "runner-1",
        1_000_100,
        answer(id, &check, None),
        &is_merge_push,
    );
    let (id, Action::Push(plan)) = &held[0] else {
        panic!("the merge push waits: {held:?}")
    };
    // The remote applies the merge; its reply never arrives.
    let (mut report, _) = scene.bench.git.push(plan);
    report.outcome = PushOutcome::Unknown {
        why: "no reply".into(),
    };
    let mut held = scene.feed(
        "runner-1",
        1_000_200,
        Event::Done(*id, Completion::Pushed(report)),
        &is_merge_push,
    );
    // The runner drops what it holds and reads the truth at its next pass.
    while held.is_empty() && scene.rec.runner_ref("runner-1").outcome().is_none() {
        let deadline = scene
            .rec
            .runner_ref("runner-1")
            .poll_timeout()
            .expect("a runner without an outcome waits on time");
        held = scene.feed("runner-1", deadline.at.0, Event::Tick, &is_merge_push);
    }
    assert!(held.is_empty(), "never pushed again: {held:?}");
    assert_eq!(scene.outcome("runner-1"), (Decision::Merged, None));
    scene.finish(
        "lost-reply",
        "The merge push applies but its reply is lost: the runner reads the remote, finds its merge, and never pushes again.",
    )
}

fn lying_check() -> Trace {
    let mut scene = Scene::new();
    scene.runner("runner-1", 1_000_000, 11);
    let (id, check) = scene.tick_to_check("runner-1", 1_000_000);
    let elsewhere = scene.bench.git.store.blob("another tree");
    scene.feed(
        "runner-1",
        1_000_100,
        answer(id, &check, Some(&elsewhere)),
        &nothing,
    );
    assert_eq!(
        scene.outcome("runner-1"),
        (Decision::Blocked, Some("CHECK_UNKNOWN".into()))
    );
    scene.finish(
        "lying-check",
        "A check reports a pass for another tree: the result is unknown, never a pass, and the change is blocked CHECK_UNKNOWN.",
    )
}

fn path(scenario: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("golden/traces")
        .join(format!("{scenario}.json"))
}

/// Records `scenario` and holds it to its golden file (or writes the file, when blessing).
fn golden(recorded: Trace) {
    let file = path(&recorded.scenario);
    let text = serde_json::to_string_pretty(&recorded).expect("a trace prints") + "\n";
    if std::env::var_os("BAY_BLESS").is_some() {
        std::fs::write(&file, text).expect("the trace is written");
        return;
    }
    let committed = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{}: {e}; bless it with BAY_BLESS=1", file.display()));
    let committed: Trace = serde_json::from_str(&committed).expect("a committed trace reads");
    if committed != recorded {
        let at = committed
            .entries
            .iter()
            .zip(&recorded.entries)
            .position(|(a, b)| a != b)
            .unwrap_or(committed.entries.len().min(recorded.entries.len()));
        panic!(
            "the core no longer behaves as {} records, from entry {at}; if that is meant, bless it with BAY_BLESS=1 and review the diff",
            file.display()
        );
    }
    trace::replay(&committed).unwrap_or_else(|d| panic!("{}: {d}", file.display()));
}

#[test]
fn a_clean_merge() {
    golden(clean_merge());
}

#[test]
fn a_conflict() {
    golden(conflict());
}

#[test]
fn main_moving_under_a_merge() {
    golden(main_moved());
}

#[test]
fn a_footprint_pass_carried() {
    golden(footprint_carried());
}

#[test]
fn a_takeover() {
    golden(takeover());
}

#[test]
fn a_lost_reply() {
    golden(lost_reply());
}

#[test]
fn a_lying_check() {
    golden(lying_check());
}

#[test]
fn every_bundled_trace_replays_and_a_changed_answer_is_caught() {
    let traces = trace::golden();
    assert_eq!(traces.len(), 7);
    for trace in &traces {
        trace::replay(trace).unwrap_or_else(|d| panic!("{}: {d}", trace.scenario));
    }
    // A core that answered one action differently is caught at that entry.
    let mut changed = traces[0].clone();
    let index = changed
        .entries
        .iter()
        .position(|e| {
            matches!(
                e,
                trace::Entry::Action {
                    action: Some(_),
                    ..
                }
            )
        })
        .expect("a trace holds actions");
    if let trace::Entry::Action { action, .. } = &mut changed.entries[index] {
        *action = Some(serde_json::json!([0, "something else"]));
    }
    let divergence = trace::replay(&changed).expect_err("a changed trace diverges");
    assert_eq!(divergence.entry, index);
}
