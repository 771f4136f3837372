//! S13 against a notes ref the `corrupt` fault broke: judged by what the bisecting runner
//! could read there.

use bay_core::machine::runner::RunnerConfig;
use bay_sim::{Scenario, run_seed};

fn seldom(cfg: &mut RunnerConfig) {
    cfg.interval_ms = 60_000;
}

/// Seed 9788 with 60 s passes: the fault points runner-0's notes at a blob half a second
/// before runner-1 reads the records for a bisect run, so runner-1 runs a merge whose answer
/// it could not read. That is no broken bisect; S13 once called it "answered already".
#[test]
fn a_bisect_that_read_a_broken_notes_ref_is_judged_by_what_it_read() {
    let scenario = Scenario {
        runners: 2,
        agents: 6,
        changes: 20,
        batch: true,
        tweak: Some(seldom),
        ..Scenario::default()
    };
    let report = run_seed(9788, &scenario);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    // The scene is still this seed's: a bisect ran, and the fault broke a notes ref.
    assert!(report.red.get("bisect runs") > Some(&0), "{:?}", report.red);
    assert!(
        report.corruptions.get("notes") > Some(&0),
        "{:?}",
        report.corruptions
    );
}
