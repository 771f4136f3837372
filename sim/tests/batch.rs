//! `[runner] batch` under every fault: the simulator's invariants hold after every step while
//! runners check the head and the entries behind it as one tree, merge whole batches in one
//! push, and bisect failing ones.

use bay_sim::{Scenario, run_seed};

#[test]
fn every_invariant_holds_with_every_runner_batching() {
    let scenario = Scenario {
        agents: 6,
        changes: 20,
        batch: true,
        ..Scenario::default()
    };
    let (mut batches, mut members) = (0, 0);
    for seed in 0..300 {
        let report = run_seed(seed, &scenario);
        assert!(
            report.violations.is_empty(),
            "seed {seed} broke {:?}; replay: bay-sim replay --seed {seed} --agents 6 --changes 20 --batch",
            report.violations
        );
        let (b, m) = report.batch.unwrap_or_default();
        (batches, members) = (batches + b, members + m);
    }
    eprintln!("{batches} batches merged {members} changes");
    assert!(batches > 10, "only {batches} batches merged");
    assert!(members >= 2 * batches, "a batch has two members or more");
}
