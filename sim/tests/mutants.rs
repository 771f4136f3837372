//! Every invariant checker can fail: a runner broken in one way is caught by the simulator
//! within a stated number of seeds. A checker that cannot fail is a defect.

use bay_core::machine::runner::{Mutant, RunnerConfig};
use bay_sim::faults::FaultClass;
use bay_sim::invariants::Invariant;
use bay_sim::{Scenario, run_seed};

/// Runs seeds from 0 until one breaks `invariant`, up to `budget` seeds; returns the seed.
fn first_catch(
    tweak: fn(&mut RunnerConfig),
    invariant: Invariant,
    faults: &[FaultClass],
    budget: u64,
) -> Option<u64> {
    first_catch_in(Scenario::default(), tweak, invariant, faults, budget)
}

/// [`first_catch`] in `scenario`, its faults and tweak replaced.
fn first_catch_in(
    scenario: Scenario,
    tweak: fn(&mut RunnerConfig),
    invariant: Invariant,
    faults: &[FaultClass],
    budget: u64,
) -> Option<u64> {
    let scenario = Scenario {
        allowed: faults.iter().copied().collect(),
        tweak: Some(tweak),
        ..scenario
    };
    (0..budget).find(|seed| {
        run_seed(*seed, &scenario)
            .violations
            .iter()
            .any(|v| v.invariant == invariant)
    })
}

/// The first seed that catches `mutant` (which `tweak` sets) as `invariant`, which must come
/// within `budget` seeds.
fn expect_caught(
    mutant: Mutant,
    tweak: fn(&mut RunnerConfig),
    invariant: Invariant,
    faults: &[FaultClass],
    budget: u64,
) -> u64 {
    expect_caught_in(
        Scenario::default(),
        mutant,
        tweak,
        invariant,
        faults,
        budget,
    )
}

/// [`expect_caught`] in `scenario`, its faults and tweak replaced.
fn expect_caught_in(
    scenario: Scenario,
    mutant: Mutant,
    tweak: fn(&mut RunnerConfig),
    invariant: Invariant,
    faults: &[FaultClass],
    budget: u64,
) -> u64 {
    let caught = first_catch_in(scenario, tweak, invariant, faults, budget);
    assert!(
        caught.is_some(),
        "{mutant:?} was not caught as {invariant:?} within {budget} seeds"
    );
    let seed = caught.unwrap_or_default();
    eprintln!("{mutant:?}: caught as {} at seed {seed}", invariant.code());
    seed
}

macro_rules! mutant_test {
    ($name:ident, $mutant:expr, $invariant:expr, $budget:expr, [$($fault:expr),*]) => {
        #[test]
        fn $name() {
            fn tweak(cfg: &mut RunnerConfig) {
                cfg.mutant = Some($mutant);
            }
            expect_caught($mutant, tweak, $invariant, &[$($fault),*], $budget);
        }
    };
}

use FaultClass::*;

mutant_test!(
    main_without_lease_breaks_s1,
    Mutant::MainWithoutLease,
    Invariant::AppendOnlyMain,
    200,
    [OutsidePush]
);
mutant_test!(
    merge_not_atomic_breaks_s2,
    Mutant::MergeNotAtomic,
    Invariant::Once,
    200,
    [OutsidePush]
);
mutant_test!(
    reused_checks_break_s3,
    Mutant::ReuseChecksAfterMainMoved,
    Invariant::MergedIsChecked,
    200,
    [OutsidePush]
);
mutant_test!(
    ignored_limits_break_s3,
    Mutant::IgnoreLimits,
    Invariant::MergedIsChecked,
    200,
    [OutsidePush]
);
mutant_test!(
    skipped_fencing_breaks_s4,
    Mutant::SkipFencing,
    Invariant::Fencing,
    4000,
    [Pause, SlowCheck]
);
mutant_test!(
    baseline_without_the_base_breaks_s5,
    Mutant::BaselineWithoutBase,
    Invariant::UnknownNeverPasses,
    200,
    []
);
mutant_test!(
    any_tree_breaks_s5,
    Mutant::AcceptAnyTree,
    Invariant::UnknownNeverPasses,
    200,
    [LyingCheck]
);
mutant_test!(
    rewritten_heartbeat_breaks_s6,
    Mutant::RewriteHeartbeat,
    Invariant::NothingLost,
    200,
    [SlowCheck]
);
mutant_test!(
    skipped_head_breaks_s7,
    Mutant::SkipClaimedHead,
    Invariant::Order,
    200,
    [SlowCheck]
);
mutant_test!(
    no_takeover_breaks_liveness,
    Mutant::NeverTakeOver,
    Invariant::Liveness,
    200,
    [Crash]
);
mutant_test!(
    whole_draft_breaks_s8,
    Mutant::WholeDraft,
    Invariant::UndoReverses,
    2_000,
    []
);
mutant_test!(
    ignored_holds_break_s9,
    Mutant::IgnoreHolds,
    Invariant::HeldTakesFixes,
    1_000,
    [OutsidePush]
);
mutant_test!(
    ignored_red_breaks_s11,
    Mutant::IgnoreRed,
    Invariant::RedTakesOwnersFixes,
    1_000,
    []
);
mutant_test!(
    an_ignored_hold_plugin_breaks_s9,
    Mutant::IgnoreHoldPlugin,
    Invariant::HeldTakesFixes,
    1_000,
    []
);
mutant_test!(
    ignored_dependencies_break_s10,
    Mutant::IgnoreDependencies,
    Invariant::AfterItsDependencies,
    1_000,
    []
);
mutant_test!(
    an_end_without_its_event_breaks_s12,
    Mutant::LogNothing,
    Invariant::LogMatches,
    200,
    []
);
mutant_test!(
    log_wrong_commit_breaks_s12,
    Mutant::LogWrongCommit,
    Invariant::LogMatches,
    200,
    []
);

#[test]
fn a_linear_bisect_breaks_s13() {
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.mutant = Some(Mutant::BisectLinear);
        cfg.bisect_post = true;
    }
    // A linear walk differs from halving only on a range of four merges or more, so more
    // agents than usual merge more changes than usual.
    let scenario = Scenario {
        agents: 6,
        changes: 24,
        allowed: Default::default(),
        tweak: Some(tweak),
        ..Scenario::default()
    };
    let caught = (0..1_500u64).find(|seed| {
        run_seed(*seed, &scenario)
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::BisectHalves)
    });
    assert!(
        caught.is_some(),
        "a linear bisect was not caught as S13 within 1,500 seeds"
    );
    eprintln!(
        "BisectLinear: caught as S13 at seed {}",
        caught.unwrap_or_default()
    );
}

mutant_test!(
    a_presence_every_pass_breaks_s14,
    Mutant::PresenceEveryPass,
    Invariant::PresencePerHeartbeat,
    200,
    []
);
mutant_test!(
    a_request_with_conflict_markers_left_in_breaks_s15,
    Mutant::IgnoreConflictMarkers,
    Invariant::NoConflictMarkers,
    1_000,
    []
);
mutant_test!(
    a_record_bay_cannot_read_holding_up_the_queue_breaks_liveness,
    Mutant::StopAtUnreadable,
    Invariant::Liveness,
    200,
    [Corrupt]
);
mutant_test!(
    a_compaction_that_drops_the_index_breaks_s16,
    Mutant::CompactFromNothing,
    Invariant::CompactionKeeps,
    200,
    []
);
mutant_test!(
    a_compaction_that_drops_abandoned_markers_breaks_s16,
    Mutant::AbandonedMarkersStale,
    Invariant::CompactionKeeps,
    200,
    []
);
mutant_test!(
    a_compaction_of_a_change_taken_up_again_breaks_s16,
    Mutant::CompactLive,
    Invariant::CompactionKeeps,
    1_000,
    []
);

#[test]
fn a_lock_take_without_lease_breaks_s17_in_the_main_world() {
    // The agents' hook sessions race for the lockable path under every fault; a take with no
    // lease lets two of them edit it.
    let scenario = Scenario {
        lock_take: bay_core::lock::mutant::take_without_lease,
        ..Scenario::default()
    };
    let caught = (0..200u64).find(|seed| {
        run_seed(*seed, &scenario)
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::OneLockHolder)
    });
    assert!(
        caught.is_some(),
        "a lock take with no lease was not caught as S17 within 200 seeds"
    );
    eprintln!(
        "take_without_lease: caught as S17 in the main world at seed {}",
        caught.unwrap_or_default()
    );
}
mutant_test!(
    any_signature_breaks_s18,
    Mutant::AcceptAnySignature,
    Invariant::ForgedNeverCounts,
    400,
    [Keys]
);
mutant_test!(
    ignored_key_removal_breaks_s19,
    Mutant::IgnoreKeyRemoval,
    Invariant::RemovedKeyNeverLands,
    400,
    [Keys]
);
mutant_test!(
    approval_of_any_commit_breaks_s20,
    Mutant::ApprovalOfAnyCommit,
    Invariant::ApprovalForItsCandidate,
    400,
    [Keys]
);

/// Every runner reusing evidence and checking two entries ahead.
fn reusing_ahead(cfg: &mut RunnerConfig) {
    cfg.evidence_reuse = true;
    cfg.ahead = 2;
}

/// With every runner checking ahead: an early run keyed by its change, so a pass on a
/// prediction main missed merges a tree no one checked on its base.
#[test]
fn a_precheck_by_change_breaks_s3() {
    fn tweak(cfg: &mut RunnerConfig) {
        reusing_ahead(cfg);
        cfg.mutant = Some(Mutant::PrecheckByChange);
    }
    let mutant = Mutant::PrecheckByChange;
    expect_caught(
        mutant,
        tweak,
        Invariant::MergedIsChecked,
        &[OutsidePush],
        2000,
    );
}

#[test]
fn reuse_of_unsigned_records_under_a_registry_breaks_s5() {
    // Reuse on, and checking ahead so that the head looks for passes while its runs are in
    // flight; the `keys` fault forges passes for the inputs of head runs.
    fn tweak(cfg: &mut RunnerConfig) {
        reusing_ahead(cfg);
        cfg.mutant = Some(Mutant::ReuseUnsigned);
    }
    let s5 = Invariant::UnknownNeverPasses;
    let seed = expect_caught(Mutant::ReuseUnsigned, tweak, s5, &[Keys], 1500);
    // The catch is the mutant's: the real core, with the same settings and forged passes,
    // breaks nothing on the same seeds.
    assert_eq!(first_catch(reusing_ahead, s5, &[Keys], seed + 1), None);
}

#[test]
fn carrying_across_read_sets_breaks_s5() {
    // Every runner checks beside the head under footprint policies; a person's pushes to main
    // change files the carried checks read.
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.mutant = Some(Mutant::CarryAcrossReadSets);
    }
    fn real(_: &mut RunnerConfig) {}
    let lanes = || Scenario {
        lanes: true,
        runners: 3,
        ..Scenario::default()
    };
    let s5 = Invariant::UnknownNeverPasses;
    let mutant = Mutant::CarryAcrossReadSets;
    let seed = expect_caught_in(lanes(), mutant, tweak, s5, &[OutsidePush], 600);
    // The real core carries on the same seeds and breaks nothing.
    assert_eq!(
        first_catch_in(lanes(), real, s5, &[OutsidePush], seed + 1),
        None
    );
}

/// Seeds where every runner batches, with queues long enough to form batches.
fn batches() -> Scenario {
    Scenario {
        batch: true,
        agents: 6,
        changes: 20,
        ..Scenario::default()
    }
}

/// A batching runner broken as `mutant` (which `tweak` sets) is caught as `invariant` within
/// `budget` seeds, while the real core batches on the same seeds and breaks nothing.
fn batch_mutant_caught(
    mutant: Mutant,
    tweak: fn(&mut RunnerConfig),
    invariant: Invariant,
    budget: u64,
) {
    fn real(_: &mut RunnerConfig) {}
    let seed = expect_caught_in(batches(), mutant, tweak, invariant, &[], budget);
    assert_eq!(
        first_catch_in(batches(), real, invariant, &[], seed + 1),
        None
    );
}

#[test]
fn a_batch_out_of_queue_order_is_caught() {
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.mutant = Some(Mutant::BatchOutOfOrder);
    }
    batch_mutant_caught(Mutant::BatchOutOfOrder, tweak, Invariant::Order, 400);
}

#[test]
fn a_batch_member_on_red_paths_breaks_s11() {
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.mutant = Some(Mutant::BatchIgnoresRed);
    }
    let s11 = Invariant::RedTakesOwnersFixes;
    batch_mutant_caught(Mutant::BatchIgnoresRed, tweak, s11, 1_000);
}

#[test]
fn a_batch_member_that_owes_a_yes_breaks_s20() {
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.mutant = Some(Mutant::BatchIgnoresApprovals);
    }
    let s20 = Invariant::ApprovalForItsCandidate;
    batch_mutant_caught(Mutant::BatchIgnoresApprovals, tweak, s20, 200);
}
