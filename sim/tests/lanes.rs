//! `footprint = true` and `[runner] footprint_lanes`, scene by scene against the simulator's
//! Git model: a pass carries to a later candidate of its operation only while the files its
//! verdict reads are the same, and an entry whose footprint is disjoint from the head's is
//! checked beside it, on the current main, and merges on that record with no new run.

use bay_core::check::EvidenceRecord;
use bay_core::git::refs;
use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::{Action, Completion, Event, Machine};
use bay_core::result::OpState;
use bay_core::time::Timestamp;
use bay_sim::bench::{Bench, MAIN, passing_exit, run_passing as run, until_check};
use bay_sim::{Scenario, run_seed};

/// A check `a` of `src/a.txt` and a check `b` of `b_paths`, each declaring its read set with
/// `extra`.
fn policy_with(extra: &str, b_paths: &str) -> String {
    let check = |id: &str, path: &str| {
        format!(
            "[[check]]\nid = \"{id}\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\nmaterialize_timeout_s = 10\nwhen_paths = [\"{path}\"]\n{extra}\n"
        )
    };
    format!(
        "revision = 1\n\n{}{}\n[policy]\nreuse_unsigned = true\n",
        check("a", "src/a.txt"),
        check("b", b_paths)
    )
}

/// A check of `src/a.txt` and one of `src/b.txt`, each declaring its read set with `extra`.
fn policy(extra: &str) -> String {
    policy_with(extra, "src/b.txt")
}

const FOOTPRINT: &str = "footprint = true";

fn runner(name: &str, lanes: bool) -> Runner {
    let mut cfg = RunnerConfig::new(name, MAIN, 1);
    cfg.evidence_reuse = true;
    cfg.footprint_lanes = lanes;
    Runner::new(cfg, Timestamp(1_000_000))
}

/// The records noted on `object` in every producer's evidence notes.
fn records_on(bench: &mut Bench, object: &bay_core::git::Oid) -> Vec<EvidenceRecord> {
    let tips: Vec<_> = bench
        .git
        .remote
        .refs
        .iter()
        .filter(|(name, _)| name.starts_with(refs::EVIDENCE))
        .map(|(_, tip)| tip.clone())
        .collect();
    let read = Action::ReadNotes {
        notes: tips,
        objects: vec![object.clone()],
    };
    match bench.answer(&read) {
        Some(Completion::NotesRead(Ok(lines))) => lines
            .iter()
            .filter_map(|line| EvidenceRecord::from_json(line).ok())
            .collect(),
        other => panic!("notes read as {other:?}"),
    }
}

/// One change to both files, checked by a runner (`lanes` or not) while someone pushes `path`
/// to main around bay during its second check. The first check's record went up on its own;
/// the second's rode with the merge push main's move refused. Returns the checks the runner
/// ran and the merged tree's records.
fn main_moves_while_checking(
    extra: &str,
    lanes: bool,
    path: &str,
) -> (Vec<String>, Vec<EvidenceRecord>) {
    let mut bench = Bench::new(Some(&policy(extra)));
    let op = bench.submit(
        "fix a",
        &[("src/a.txt", "a fixed\n"), ("src/b.txt", "b fixed\n")],
    );
    let mut a = runner("a", lanes);
    let ran = run(&mut bench, &mut a, 1_000_000, &mut |bench, n| {
        if n == 1 {
            bench.push_to_main(path, "outside\n");
        }
    });
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    let tree = bench
        .git
        .store
        .get(&bench.main())
        .map(|c| c.tree.clone())
        .expect("main");
    (ran, records_on(&mut bench, &tree))
}

#[test]
fn a_pass_carries_to_the_next_candidate_while_its_read_set_is_the_same() {
    let (ran, records) = main_moves_while_checking(FOOTPRINT, true, "src/z.txt");
    assert_eq!(
        ran,
        ["a", "b", "b"],
        "a's pass on the first candidate carries"
    );
    let carried: Vec<&EvidenceRecord> = records.iter().filter(|r| r.carried.is_some()).collect();
    assert_eq!(
        carried.len(),
        1,
        "the merged tree holds the carried record: {records:?}"
    );
    let source = carried[0].carried.as_ref().expect("a source");
    assert_eq!(source.producer, "a");
    assert_ne!(
        source.candidate.tree, carried[0].candidate.tree,
        "it names the first candidate"
    );
    assert_eq!(
        carried[0].footprint.as_ref().map(|s| s.candidate.len()),
        Some(64)
    );
}

#[test]
fn a_changed_read_set_or_no_lanes_or_no_footprint_runs_the_check_again() {
    // The read set is all of src/, which the outside push changed.
    let wide = format!("{FOOTPRINT}\npaths = [\"src/\"]");
    let (ran, _) = main_moves_while_checking(&wide, true, "src/z.txt");
    assert_eq!(
        ran,
        ["a", "b", "a", "b"],
        "a changed read set never carries"
    );
    let (ran, _) = main_moves_while_checking(FOOTPRINT, false, "src/z.txt");
    assert_eq!(ran, ["a", "b", "a", "b"], "carrying needs footprint_lanes");
    let (ran, records) = main_moves_while_checking("", true, "src/z.txt");
    assert_eq!(ran, ["a", "b", "a", "b"], "and footprint = true");
    assert!(
        records
            .iter()
            .all(|r| r.carried.is_none() && r.footprint.is_none())
    );
}

/// Two changes under `policy`: the head edits `src/a.txt`, the next `src/b.txt`. Runner `a`
/// claims the head and holds its first check; runner `b` (with lanes) makes its pass. Then the
/// head passes and merges, and `a` takes the second up. Returns the checks `b` ran, those `a`
/// ran for the second, and whether the second merged.
fn beside_the_head(policy: &str) -> (Vec<String>, Vec<String>, bool) {
    let mut bench = Bench::new(Some(policy));
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let later = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = runner("a", true);
    let mut b = runner("b", true);
    let now = Timestamp(1_000_000);
    let (id, check) = until_check(&mut bench, &mut a, 1_000_000, true).expect("a checks A");
    let beside = run(&mut bench, &mut b, 1_000_000, &mut |_, _| {});
    assert_eq!(bench.state(&later).0, OpState::Submitted, "b owns nothing");
    a.handle(
        now,
        Event::Done(id, Completion::CheckExited(passing_exit(&check))),
    )
    .expect("a faithful driver");
    while let Some((id, action)) = a.poll_action() {
        let completion = match &action {
            Action::RunCheck(_) => Completion::CheckExited(passing_exit(&action)),
            _ => bench.answer(&action).expect("the model answers"),
        };
        a.handle(now, Event::Done(id, completion))
            .expect("a faithful driver");
    }
    assert_eq!(bench.state(&first), (OpState::Merged, None));
    let ran = run(&mut bench, &mut a, 1_010_000, &mut |_, _| {});
    let merged = bench.state(&later) == (OpState::Merged, None);
    let outcome = bench
        .record(&later.change)
        .op(&later)
        .and_then(|op| op.outcome.clone());
    let named = outcome.map(|o| o.detail["carried"].clone());
    // The merge names each pass it carried and where it came from; none when it ran.
    match named {
        Some(serde_json::Value::Array(carried)) => {
            assert!(ran.is_empty() && merged, "{carried:?}");
            assert_eq!(carried[0]["from"]["producer"], "b");
        }
        other => assert!(!ran.is_empty() || !merged, "{other:?}"),
    }
    (beside, ran, merged)
}

#[test]
fn a_disjoint_entry_is_checked_beside_the_head_and_merges_on_that_record() {
    let (beside, ran, merged) = beside_the_head(&policy(FOOTPRINT));
    assert_eq!(beside, ["b"], "b checks the second on the current main");
    assert!(
        ran.is_empty(),
        "its pass carries to the real candidate: {ran:?}"
    );
    assert!(merged);
}

#[test]
fn an_entry_that_overlaps_the_head_waits_its_turn() {
    // Check b reads all of src/, which the head's change requires it for too.
    let (beside, ran, merged) = beside_the_head(&policy_with(FOOTPRINT, "src/"));
    assert!(
        beside.is_empty(),
        "nothing beside an overlapping head: {beside:?}"
    );
    assert_eq!(ran, ["b"]);
    assert!(merged);
    // Without footprint = true nothing carries, so nothing is checked beside the head.
    let (beside, ran, merged) = beside_the_head(&policy(""));
    assert!(beside.is_empty(), "{beside:?}");
    assert_eq!(ran, ["b"]);
    assert!(merged);
}

fn check_id(action: &Action) -> &str {
    match action {
        Action::RunCheck(run) => &run.check.id,
        _ => "",
    }
}

#[test]
fn a_lane_pass_that_lands_while_the_owner_runs_its_own_answers_it() {
    let mut bench = Bench::new(Some(&policy(FOOTPRINT)));
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let later = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let mut a = runner("a", true);
    let mut b = runner("b", true);
    let at = 1_000_000;
    let (head, head_check) = until_check(&mut bench, &mut a, at, true).expect("a checks A");
    let (lane, lane_check) = until_check(&mut bench, &mut b, at, true).expect("b checks B");
    assert_eq!(check_id(&lane_check), "b", "beside the head");
    // A passes and merges; a takes B up and, finding no record yet, runs b itself.
    a.handle(
        Timestamp(at),
        Event::Done(head, Completion::CheckExited(passing_exit(&head_check))),
    )
    .expect("a faithful driver");
    assert!(until_check(&mut bench, &mut a, at, false).is_none());
    assert_eq!(bench.state(&first), (OpState::Merged, None));
    let at = at + 10_000;
    let (_, own) = until_check(&mut bench, &mut a, at, true).expect("a runs B's check");
    assert_eq!(check_id(&own), "b");
    // The lane run ends and its record goes up; a heartbeat later, a reads it and carries.
    b.handle(
        Timestamp(at),
        Event::Done(lane, Completion::CheckExited(passing_exit(&lane_check))),
    )
    .expect("a faithful driver");
    assert!(until_check(&mut bench, &mut b, at, false).is_none());
    let after = at + RunnerConfig::new("a", MAIN, 1).heartbeat_ms + 1;
    let more = until_check(&mut bench, &mut a, after, true);
    assert!(more.is_none(), "no other run: {more:?}");
    assert_eq!(
        bench.state(&later),
        (OpState::Merged, None),
        "B merged on the carried pass"
    );
}

#[test]
fn every_invariant_holds_with_every_runner_checking_beside_the_head() {
    let scenario = Scenario {
        runners: 3,
        changes: 8,
        lanes: true,
        ..Scenario::default()
    };
    let mut carried = 0;
    for seed in 0..300 {
        let report = run_seed(seed, &scenario);
        assert!(
            report.violations.is_empty(),
            "seed {seed} broke {:?}; replay: bay-sim replay --seed {seed} --runners 3 --changes 8 --lanes",
            report.violations
        );
        carried += report.lanes.unwrap_or_default();
    }
    eprintln!("{carried} passes carried by read set");
    assert!(carried > 0, "no pass was carried");
}
