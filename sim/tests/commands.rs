//! Agent commands, scene by scene, against the simulator's Git model: what `status`, `start`
//! and `undo` say of a change once main is not what the change's record expects.

use bay_core::git::refs;
use bay_core::id::ChangeId;
use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::start::{Start, StartInput, StartTarget};
use bay_core::machine::status::{Status, StatusInput};
use bay_core::machine::undo::{Undo, UndoInput};
use bay_core::machine::{Event, Machine};
use bay_core::reason::ReasonCode;
use bay_core::result::{BayResult, Decision};
use bay_core::time::Timestamp;
use bay_sim::bench::{Bench, MAIN};

/// Runs one runner pass to its end, answering everything from the bench (no check runs).
fn runner_pass(bench: &mut Bench) {
    let mut runner = Runner::new(RunnerConfig::new("a", MAIN, 0), Timestamp(0));
    runner
        .handle(Timestamp(0), Event::Tick)
        .expect("a faithful driver");
    while let Some((id, action)) = runner.poll_action() {
        let completion = bench.answer(&action).expect("no check runs");
        runner
            .handle(Timestamp(0), Event::Done(id, completion))
            .expect("a faithful driver");
    }
}

fn outcome(bench: &mut Bench, machine: &mut dyn Machine) -> BayResult {
    bench.run(machine);
    machine.outcome().cloned().expect("the command ended")
}

fn status(bench: &mut Bench, change: &ChangeId) -> BayResult {
    let input = StatusInput {
        change: Some(change.clone()),
        main: MAIN.into(),
        flow: false,
    };
    outcome(bench, &mut Status::new(input, Timestamp(1)))
}

fn fix(bench: &mut Bench, change: &ChangeId) -> BayResult {
    let input = StartInput {
        target: StartTarget::Intent {
            intent: "fix it".into(),
            paths: vec!["src/".into()],
        },
        actor: "bob".into(),
        main: MAIN.into(),
        new: false,
        fixes: Some(change.clone()),
        after: Vec::new(),
        entropy: 11,
        disk: None,
        import: None,
    };
    outcome(bench, &mut Start::new(input, Timestamp(1)))
}

fn undo(bench: &mut Bench, change: &ChangeId) -> BayResult {
    let input = UndoInput {
        target: change.clone(),
        actor: "bob".into(),
        main: MAIN.into(),
        entropy: 12,
        disk: None,
    };
    outcome(bench, &mut Undo::new(input, Timestamp(1)))
}

#[test]
fn a_change_whose_merge_main_was_moved_back_past_is_not_merged() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let before = bench.main();
    let op = bench.submit("first", &[("src/a.txt", "a2\n")]);
    runner_pass(&mut bench);
    let change = op.change;
    assert_eq!(status(&mut bench, &change).decision, Decision::Merged);
    // Main moves on around bay: the merge is still on it.
    bench.move_main();
    assert_eq!(status(&mut bench, &change).decision, Decision::Merged);

    // Someone forces main back to before the merge; the record and the marker stay.
    bench
        .git
        .remote
        .refs
        .insert(refs::main(MAIN), before.clone());
    assert!(bench.git.remote.get(&refs::landed(&change)).is_some());
    let merge = bench
        .record(&change)
        .merge_commit()
        .expect("the record names its merge")
        .to_string();
    let said = status(&mut bench, &change);
    assert_eq!(
        (said.decision, said.reason),
        (Decision::Blocked, Some(ReasonCode::ChangeNotMerged)),
        "{said:?}"
    );
    assert_eq!(said.detail["merge"], merge.as_str());
    assert_eq!(said.detail["main"], before.to_string());
    for refused in [fix(&mut bench, &change), undo(&mut bench, &change)] {
        assert_eq!(
            refused.reason,
            Some(ReasonCode::ChangeNotMerged),
            "{refused:?}"
        );
        assert_eq!(refused.detail["merge"], merge.as_str());
        assert!(
            refused.change.is_none(),
            "no change was opened: {refused:?}"
        );
    }
}
