//! Agent commands, scene by scene, against the simulator's Git model: what `status`, `start`
//! and `undo` say of a change once main is not what the change's record expects.

use bay_core::git::refs;
use bay_core::hook::session::Session;
use bay_core::id::ChangeId;
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::start::{Sessions, Start, StartInput, StartTarget};
use bay_core::machine::status::{Status, StatusInput};
use bay_core::machine::undo::{Undo, UndoInput};
use bay_core::machine::{Action, Completion, Event, Machine, PushOutcome};
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

/// A start of `intent` by `actor` under main's `[agent]` `rules`, weighing `sessions`.
fn start_with(
    bench: &mut Bench,
    actor: &str,
    intent: &str,
    rules: &bay_core::policy::AgentRules,
    sessions: Sessions,
) -> BayResult {
    let input = StartInput {
        target: StartTarget::Intent {
            intent: intent.into(),
            paths: vec!["src/".into()],
        },
        actor: actor.into(),
        main: MAIN.into(),
        new: false,
        fixes: None,
        after: Vec::new(),
        entropy: 21,
        disk: None,
        import: None,
    };
    let mut start = Start::new(input, Timestamp::from_secs(100));
    start.policed(rules, bay_core::actor::ActorSource::Env);
    start.in_sessions(sessions);
    outcome(bench, &mut start)
}

#[test]
fn a_live_session_of_the_same_name_holds_its_change_against_a_second_start() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let rules = bay_core::policy::AgentRules::default();
    let first = start_with(&mut bench, "ann", "greet", &rules, Sessions::default());
    let change = first.change.clone().expect("a change");
    let tip = bench.git.remote.get(&refs::change(&change)).cloned();
    let heard = Timestamp::from_secs(90);
    let sessions = Sessions {
        in_views: vec![(change.clone(), Session::begin("s1", "/v", "ann", heard))],
        own: None,
        here: None,
        machine: "box".into(),
        remote: Vec::new(),
    };
    let held = start_with(&mut bench, "ann", "greet", &rules, sessions.clone());
    assert_eq!(held.reason, Some(ReasonCode::ChangeHeld), "{held:?}");
    assert_eq!(held.detail["holder"]["session"], "s1");
    assert_eq!(held.detail["holder"]["machine"], "box");
    assert_eq!(
        bench.git.remote.get(&refs::change(&change)).cloned(),
        tip,
        "nothing was written"
    );
    // Another name is not held by it; nor is the holder itself.
    let bob = start_with(&mut bench, "bob", "greet", &rules, sessions.clone());
    assert_ne!(bob.reason, Some(ReasonCode::ChangeHeld), "{bob:?}");
    let own = Sessions {
        own: Some("s1".into()),
        ..sessions
    };
    let again = start_with(&mut bench, "ann", "greet", &rules, own);
    assert_eq!(again.decision, Decision::Ok, "{again:?}");
    assert_eq!(again.change, Some(change));
}

#[test]
fn the_live_changes_limit_is_read_by_the_machine_for_a_new_change_alone() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let rules = bay_core::policy::AgentRules {
        max_live_changes: Some(1),
        ..Default::default()
    };
    let first = start_with(&mut bench, "ann", "greet", &rules, Sessions::default());
    assert_eq!(first.decision, Decision::Ok, "{first:?}");
    let over = start_with(&mut bench, "ann", "part", &rules, Sessions::default());
    assert_eq!(over.reason, Some(ReasonCode::WipLimit), "{over:?}");
    assert_eq!(
        over.detail["live_changes"],
        serde_json::json!([first.change.clone().expect("a change")])
    );
    let again = start_with(&mut bench, "ann", "greet", &rules, Sessions::default());
    assert_eq!(
        again.decision,
        Decision::Ok,
        "picking up adds none: {again:?}"
    );
    let bob = start_with(&mut bench, "bob", "part", &rules, Sessions::default());
    assert_eq!(bob.decision, Decision::Ok, "{bob:?}");
}

/// Whether each fetch `machine` asks for, in order, lets Git's auto maintenance follow it,
/// as the bench answers everything.
fn maintained_fetches(bench: &mut Bench, machine: &mut dyn Machine) -> Vec<bool> {
    let mut fetches = Vec::new();
    machine
        .handle(Timestamp(1), Event::Tick)
        .expect("a faithful driver");
    while let Some((id, action)) = machine.poll_action() {
        if let bay_core::machine::Action::Fetch(spec) = &action {
            fetches.push(spec.maintain);
        }
        let completion = bench.answer(&action).expect("no check runs");
        machine
            .handle(Timestamp(1), Event::Done(id, completion))
            .expect("a faithful driver");
    }
    fetches
}

#[test]
fn only_a_runner_pass_and_an_agent_start_let_git_maintain_the_clone() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    bench.submit("first", &[("src/a.txt", "a2\n")]);
    // A busy pass: its first fetch is the loop's, the chains' after it are not.
    let mut runner = Runner::new(RunnerConfig::new("a", MAIN, 0), Timestamp(0));
    let pass = maintained_fetches(&mut bench, &mut runner);
    assert!(pass.len() > 1, "the pass fetched chains too: {pass:?}");
    assert!(pass[0], "a pass's fetch maintains");
    assert!(pass[1..].iter().all(|m| !m), "{pass:?}");
    // A start's fetch maintains; a status's never does.
    let start = maintained_fetches(&mut bench, &mut Start::new(intent("another"), Timestamp(1)));
    assert_eq!(start.first(), Some(&true), "{start:?}");
    let input = StatusInput {
        change: None,
        main: MAIN.into(),
        flow: true,
    };
    let status = maintained_fetches(&mut bench, &mut Status::new(input, Timestamp(1)));
    assert!(
        !status.is_empty() && status.iter().all(|m| !m),
        "{status:?}"
    );
}

/// Runs `start` to its end against `bench`, losing the reply of its first push (the remote
/// takes it), and calling `meanwhile` before the machine hears of it.
fn start_losing_the_first_reply(
    bench: &mut Bench,
    start: &mut Start,
    meanwhile: impl FnOnce(&mut Bench),
) -> BayResult {
    let mut meanwhile = Some(meanwhile);
    while start.outcome().is_none() {
        let (id, action) = start.poll_action().expect("a start waits on an action");
        let completion = match (&action, meanwhile.take()) {
            (Action::Push(plan), Some(meanwhile)) => {
                let (mut report, _) = bench.git.push(plan);
                assert_eq!(report.outcome, PushOutcome::Accepted);
                report.outcome = PushOutcome::Unknown {
                    why: "no reply".into(),
                };
                meanwhile(bench);
                Completion::Pushed(report)
            }
            (_, later) => {
                meanwhile = later;
                bench.answer(&action).expect("a start runs no checks")
            }
        };
        start
            .handle(Timestamp(1), Event::Done(id, completion))
            .expect("a faithful driver");
    }
    start.outcome().cloned().expect("the start ended")
}

/// A start of `intent` by `ann`, declaring `src/`.
fn intent(intent: &str) -> StartInput {
    StartInput {
        target: StartTarget::Intent {
            intent: intent.into(),
            paths: vec!["src/".into()],
        },
        actor: "ann".into(),
        main: MAIN.into(),
        new: false,
        fixes: None,
        after: Vec::new(),
        entropy: 31,
        disk: None,
        import: None,
    }
}

/// A start whose reply was lost, and which found its start on the remote when it asked
/// again, made its view on the main fetched then instead of the base its start recorded: the
/// view's files were a later main's, so the change's draft carried that main's edits as its
/// own, and merging it put back on main what main had since taken out.
#[test]
fn a_start_whose_reply_was_lost_shows_the_base_it_wrote_not_a_later_main() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let base = bench.main();
    let mut start = Start::new(intent("edit b"), Timestamp(1));
    let said = start_losing_the_first_reply(&mut bench, &mut start, |bench| {
        bench
            .git
            .remote
            .outside_push(&mut bench.git.store, MAIN, "src/a.txt", "interim\n");
    });
    assert_eq!(said.decision, Decision::Ok, "{said:?}");
    let change = said.change.clone().expect("the start names its change");
    assert_eq!(bench.record(&change).base, base);
    let view = &bench.views[&change];
    assert_eq!(
        view.head.as_ref(),
        Some(&base),
        "the view shows the recorded base"
    );
    assert_eq!(
        bench.git.store.blob_text(&view.files["src/a.txt"]),
        Some("a\n")
    );
    assert_eq!(said.detail["generation"], 1, "{said:?}");

    // Main takes the interim edit out again; the change edits only src/b.txt and merges.
    bench
        .git
        .remote
        .outside_push(&mut bench.git.store, MAIN, "src/a.txt", "a\n");
    bench.edit(&change, "src/b.txt", "b by ann\n");
    let asked = bench.ask_to_merge(&change, 32);
    assert_eq!(asked.outcome().map(|r| r.decision), Some(Decision::Queued));
    runner_pass(&mut bench);
    let main = bench.main();
    assert_eq!(bench.git.store.read(&main, "src/b.txt"), Some("b by ann\n"));
    assert_eq!(
        bench.git.store.read(&main, "src/a.txt"),
        Some("a\n"),
        "the merge carries only the change's own edit"
    );
}

/// A change picked up again whose checkpoint push went unanswered, and was found on the
/// remote when the start asked again, shows the draft that checkpoint names, markers and
/// all; before, the start gave up ("a picked-up change was not read") or, for an intent,
/// showed main.
#[test]
fn a_pick_up_whose_reply_was_lost_shows_the_refreshed_draft() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let change = bench.start("edit a", 33);
    bench.edit(&change, "src/a.txt", "ann's a\n");
    bench
        .git
        .remote
        .outside_push(&mut bench.git.store, MAIN, "src/a.txt", "main's a\n");
    let main = bench.main();
    let mut input = intent("edit a");
    input.target = StartTarget::Change(change.clone());
    let mut start = Start::new(input, Timestamp(1));
    let said = start_losing_the_first_reply(&mut bench, &mut start, |_| {});
    assert_eq!(said.decision, Decision::Ok, "{said:?}");
    let record = bench.record(&change);
    assert_eq!(record.base, main);
    let draft = record.draft.clone().expect("the checkpoint names a draft");
    let view = &bench.views[&change];
    assert_eq!(view.head.as_ref(), Some(&draft));
    let text = bench.git.store.blob_text(&view.files["src/a.txt"]);
    assert!(
        text.is_some_and(|text| text.starts_with("<<<<<<< main\nmain's a\n")),
        "{text:?}"
    );
    assert_eq!(record.marked.len(), 1, "the markers are named: {record:?}");
}

/// A change whose view here edits `src/a.txt` as `here`, while the same change's view on
/// another machine saved `src/a.txt` as `elsewhere` and asked to merge it: the record names
/// a draft this view never showed, and both changed one line.
fn saved_on_two_machines(bench: &mut Bench) -> ChangeId {
    let change = bench.start("edit a", 7);
    let mut elsewhere = bench.views.clone();
    let blob = bench.git.store.blob("elsewhere\n");
    elsewhere
        .get_mut(&change)
        .expect("a view")
        .files
        .insert("src/a.txt".into(), blob);
    let mut merge = merge_as_ann(&change, 8);
    bench
        .git
        .run_command(&mut merge, &mut elsewhere, Timestamp(2));
    let queued = merge.outcome().expect("the merge ended");
    assert_eq!(queued.decision, Decision::Queued, "{queued:?}");
    bench.edit(&change, "src/a.txt", "here\n");
    change
}

fn merge_as_ann(change: &ChangeId, entropy: u64) -> Merge {
    let input = MergeInput {
        change: change.clone(),
        actor: "ann".into(),
        main: MAIN.into(),
        entropy,
    };
    Merge::new(input, Timestamp(2))
}

/// The text of `path` in this machine's view of `change`.
fn in_view(bench: &Bench, change: &ChangeId, path: &str) -> String {
    let blob = &bench.views[change].files[path];
    bench
        .git
        .store
        .blob_text(blob)
        .expect("a text file")
        .to_owned()
}

#[test]
fn a_merge_that_carries_its_view_over_a_conflicting_draft_saved_elsewhere_is_refused() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let change = saved_on_two_machines(&mut bench);
    let said = outcome(&mut bench, &mut merge_as_ann(&change, 9));
    assert_eq!(said.reason, Some(ReasonCode::MergeConflict), "{said:?}");
    assert_eq!(said.detail["conflicts"], serde_json::json!(["src/a.txt"]));
    // The markers are recorded, and the view shows them, both sides whole.
    let record = bench.record(&change);
    let named: Vec<&String> = record.marked.iter().flat_map(|m| &m.paths).collect();
    assert_eq!(named, ["src/a.txt"], "{record:?}");
    assert_eq!(
        in_view(&bench, &change, "src/a.txt"),
        "<<<<<<< saved draft of ".to_owned()
            + change.as_str()
            + "\nelsewhere\n=======\nhere\n>>>>>>> this view\n"
    );
    // Asked again with the markers left, the merge is refused again.
    let again = outcome(&mut bench, &mut merge_as_ann(&change, 10));
    assert_eq!(again.reason, Some(ReasonCode::MergeConflict), "{again:?}");
    assert_eq!(again.detail["markers_remain"], true, "{again:?}");
    // Settled, it is requested with the settled file.
    bench.edit(&change, "src/a.txt", "both\n");
    let settled = outcome(&mut bench, &mut merge_as_ann(&change, 11));
    assert_eq!(settled.decision, Decision::Queued, "{settled:?}");
    let draft = bench
        .record(&change)
        .live_op()
        .expect("a live op")
        .draft
        .clone();
    let files = bench.git.store.files(&draft).expect("the draft's files");
    let text = bench.git.store.blob_text(&files["src/a.txt"]);
    assert_eq!(text, Some("both\n"));
}

#[test]
fn a_pick_up_that_carries_its_view_over_a_conflicting_draft_saved_elsewhere_names_the_markers() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let change = saved_on_two_machines(&mut bench);
    let mut input = intent("edit a");
    input.target = StartTarget::Change(change.clone());
    let said = outcome(&mut bench, &mut Start::new(input, Timestamp(3)));
    assert_eq!(said.decision, Decision::Ok, "{said:?}");
    assert_eq!(said.detail["conflicts"], serde_json::json!(["src/a.txt"]));
    let record = bench.record(&change);
    let named: Vec<&String> = record.marked.iter().flat_map(|m| &m.paths).collect();
    assert_eq!(named, ["src/a.txt"], "{record:?}");
    let lines: Vec<&String> = record.marked.iter().flat_map(|m| &m.lines).collect();
    assert!(
        lines.iter().any(|line| *line == ">>>>>>> this view"),
        "{lines:?}"
    );
    assert!(in_view(&bench, &change, "src/a.txt").contains("\n>>>>>>> this view\n"));
    // The checkpoint names the draft the view shows.
    let draft = record.draft.clone().expect("a draft");
    assert_eq!(bench.views[&change].head.as_ref(), Some(&draft));
    let merged = outcome(&mut bench, &mut merge_as_ann(&change, 12));
    assert_eq!(merged.reason, Some(ReasonCode::MergeConflict), "{merged:?}");
    assert_eq!(merged.detail["markers_remain"], true, "{merged:?}");
}

#[test]
fn a_merge_that_stopped_after_recording_carried_markers_shows_that_draft_when_run_again() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let change = saved_on_two_machines(&mut bench);
    // The first merge records the carried draft and its markers, then stops before it makes
    // the view from it.
    let mut stopped = merge_as_ann(&change, 9);
    loop {
        let (id, action) = stopped.poll_action().expect("the merge goes on");
        if matches!(action, Action::MakeView { .. }) {
            break;
        }
        let completion = bench.answer(&action).expect("no check runs");
        stopped
            .handle(Timestamp(2), Event::Done(id, completion))
            .expect("a faithful driver");
    }
    let steps = bench.record(&change).marked.len();
    assert_eq!(steps, 1, "the markers are recorded");
    assert_eq!(in_view(&bench, &change, "src/a.txt"), "here\n");
    let again = outcome(&mut bench, &mut merge_as_ann(&change, 10));
    assert_eq!(again.reason, Some(ReasonCode::MergeConflict), "{again:?}");
    assert_eq!(
        bench.record(&change).marked.len(),
        1,
        "nothing new recorded"
    );
    assert_eq!(
        in_view(&bench, &change, "src/a.txt"),
        "<<<<<<< saved draft of ".to_owned()
            + change.as_str()
            + "\nelsewhere\n=======\nhere\n>>>>>>> this view\n",
        "one set of markers, not markers around markers"
    );
}

#[test]
fn a_lost_reply_to_the_carried_markers_checkpoint_is_read_back_never_pushed_again() {
    let mut bench = Bench::new(Some("revision = 1\nunchecked = true\n"));
    let change = saved_on_two_machines(&mut bench);
    let mut merge = merge_as_ann(&change, 9);
    let mut pushes = 0;
    while merge.outcome().is_none() {
        let (id, action) = merge.poll_action().expect("the merge goes on");
        let mut completion = bench.answer(&action).expect("no check runs");
        if let Completion::Pushed(report) = &mut completion {
            pushes += 1;
            // The checkpoint lands; its reply is lost.
            report.outcome = PushOutcome::Unknown {
                why: "the connection dropped".into(),
            };
        }
        merge
            .handle(Timestamp(2), Event::Done(id, completion))
            .expect("a faithful driver");
    }
    let said = merge.outcome().cloned().expect("the merge ended");
    assert_eq!(said.reason, Some(ReasonCode::MergeConflict), "{said:?}");
    assert_eq!(pushes, 1, "the checkpoint is read back, never pushed again");
    assert_eq!(bench.record(&change).marked.len(), 1);
    assert!(in_view(&bench, &change, "src/a.txt").starts_with("<<<<<<< saved draft of "));
}
