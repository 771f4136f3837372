//! S17 on locks across machines, under every fault the lock simulation draws: it holds for
//! `bay_core::lock::take` on many seeds, and a take with no lease breaks it.

use bay_core::lock;
use bay_sim::invariants::Invariant;
use bay_sim::locks;

#[test]
fn at_most_one_live_holder_under_every_fault() {
    for seed in 0..300 {
        let violations = locks::run(seed, lock::take);
        assert!(violations.is_empty(), "seed {seed}: {violations:?}");
    }
}

#[test]
fn a_take_without_lease_breaks_s17() {
    let caught = (0..200).find(|seed| {
        locks::run(*seed, lock::mutant::take_without_lease)
            .iter()
            .any(|v| v.invariant == Invariant::OneLockHolder)
    });
    assert!(
        caught.is_some(),
        "a take with no lease was not caught within 200 seeds"
    );
    eprintln!(
        "take_without_lease: caught as S17 at seed {}",
        caught.unwrap_or_default()
    );
}

/// A take whose answer is lost, heard of only at a later edit that finds the lock its own,
/// is judged by the clock it was decided on: seed 818 with four runners has such a take, and
/// a clock that jumps back between the two (S17 once judged the edit's clock, and broke).
#[test]
fn a_take_heard_of_late_is_judged_when_it_landed() {
    let scenario = bay_sim::Scenario {
        runners: 4,
        ..bay_sim::Scenario::default()
    };
    for seed in 810..826 {
        let report = bay_sim::run_seed(seed, &scenario);
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:?}",
            report.violations
        );
    }
}
