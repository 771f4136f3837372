//! `[runner] ahead` under every fault: with every runner checking queued entries early, each
//! on the base the entries ahead of it predict, every invariant still holds after every step,
//! and predictions that main matched did merge with no new run.

use bay_core::machine::runner::RunnerConfig;
use bay_sim::{Scenario, run_seed};

#[test]
fn every_invariant_holds_with_every_runner_checking_ahead() {
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.evidence_reuse = true;
        cfg.ahead = 3;
    }
    let scenario = Scenario {
        runners: 3,
        changes: 8,
        tweak: Some(tweak),
        ..Scenario::default()
    };
    let (mut early, mut reused) = (0, 0);
    for seed in 0..300 {
        let report = run_seed(seed, &scenario);
        assert!(
            report.violations.is_empty(),
            "seed {seed} broke {:?}",
            report.violations
        );
        let (runs, passes) = report.ahead.unwrap_or_default();
        early += runs;
        reused += passes;
    }
    eprintln!("{early} early runs, {reused} passes reused");
    assert!(early > 0, "no runner checked an entry early");
    assert!(reused > 0, "no early pass was reused at the head");
}
