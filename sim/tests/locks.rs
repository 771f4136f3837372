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
