//! `bay-sim plan`: the capacity planner's simulated throughput against its analytic bounds,
//! where they should agree and where another bound binds, and its determinism per seed.

use bay_sim::plan::{self, Dist, Plan};

/// A saturated queue: more changes arrive than one check slot can take, and every agent
/// keeps one queued.
fn saturated(check: Dist) -> Plan {
    Plan {
        agents: 6,
        arrivals_per_hour: 60.0,
        check,
        failure_rate: 0.0,
        flake_rate: 0.0,
        runners: 1,
        retries: 0,
        hours: 8.0,
        ahead: 0,
        batch: 0,
        areas: 1,
        lanes: false,
    }
}

fn one_slot(plan: &Plan) -> f64 {
    plan::bounds(plan)
        .into_iter()
        .find(|b| b.name == "one slot")
        .expect("the one-slot row")
        .per_day
}

/// Runs `plan` over `seeds` and holds it to its binding bound: `bound`, `per_day` merges a
/// day, within 10%.
fn at_bound(plan: &Plan, seeds: (u64, u64), bound: &str, per_day: f64) -> plan::Report {
    let report = plan::report(plan, seeds, false);
    assert_eq!(report.binding().name, bound);
    assert!((report.binding().per_day - per_day).abs() < 1e-9);
    assert!(
        report.deviation().abs() < 0.1,
        "{:.1} a day against {per_day:.1}",
        report.measured.merges_per_day
    );
    report
}

#[test]
fn a_saturated_queue_merges_at_the_one_slot_bound() {
    let plan = saturated(Dist::Fixed(10.0));
    assert_eq!(one_slot(&plan), 144.0, "1,440/T with T = 10 minutes");
    let measured = plan::measure(&plan, (0, 1)).merges_per_day;
    let ratio = measured / 144.0;
    assert!(
        (0.9..=1.0).contains(&ratio),
        "the simulator merged {measured:.1} a day, the bound is 144 (ratio {ratio:.3})"
    );
    let report = plan::report(&plan, (0, 1), false);
    assert_eq!(report.binding().name, "one slot");
    assert!(report.deviation().abs() < 0.1);
}

#[test]
fn retries_of_flakes_and_failures_count_in_t() {
    // A fifth of the changes broken at first and a tenth of the runs flaking: 1.311 runs a
    // merge, so T is 13.1 minutes and the bound 109.8 a day, not 144.
    let plan = Plan {
        failure_rate: 0.2,
        flake_rate: 0.1,
        hours: 12.0,
        ..saturated(Dist::Fixed(10.0))
    };
    let bound = one_slot(&plan);
    assert!((bound - 1440.0 / (10.0 * (0.2 + 1.0 / 0.9))).abs() < 1e-9);
    let measured = plan::measure(&plan, (0, 2));
    let ratio = measured.merges_per_day / bound;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "the simulator merged {:.1} a day, the bound is {bound:.1}",
        measured.merges_per_day
    );
    assert!(
        measured.merges_per_day < 0.9 * 144.0,
        "failures and flakes take slot time"
    );
    let per_merge = measured.check_minutes_per_merge;
    assert!(
        (per_merge / plan.slot_minutes() - 1.0).abs() < 0.1,
        "{per_merge:.2} check-minutes per merge against T = {:.2}",
        plan.slot_minutes()
    );
}

#[test]
fn more_runners_do_not_raise_one_slots_throughput() {
    let one = plan::measure(&saturated(Dist::Fixed(10.0)), (0, 1)).merges_per_day;
    let three = Plan {
        runners: 3,
        ..saturated(Dist::Fixed(10.0))
    };
    let three = plan::measure(&three, (0, 1)).merges_per_day;
    assert!(
        (three / one - 1.0).abs() < 0.03,
        "one runner {one:.1} a day, three {three:.1}"
    );
}

#[test]
fn when_arrivals_are_the_bottleneck_they_are_the_bound() {
    let plan = Plan {
        agents: 4,
        arrivals_per_hour: 2.0,
        hours: 24.0,
        ..saturated(Dist::Uniform(5.0, 15.0))
    };
    let measured = plan::measure(&plan, (0, 2)).merges_per_day;
    assert!(
        measured < 0.5 * one_slot(&plan),
        "{measured:.1} a day is well below the one-slot bound of 144"
    );
    let ratio = measured / 48.0;
    assert!(
        (0.8..=1.2).contains(&ratio),
        "{measured:.1} a day against 48 arrivals a day"
    );
    let report = plan::report(&plan, (0, 2), false);
    assert_eq!(report.binding().name, "arrivals");
    assert!(
        report.measured.wait_p50_min < 5.0,
        "the queue is mostly empty"
    );
}

#[test]
fn the_same_seeds_give_the_same_report() {
    let plan = Plan {
        failure_rate: 0.1,
        flake_rate: 0.05,
        hours: 4.0,
        ..saturated(Dist::Exp(8.0))
    };
    let once = plan::report(&plan, (3, 5), false).to_json();
    let again = plan::report(&plan, (3, 5), false).to_json();
    assert_eq!(once, again);
    let other = plan::report(&plan, (5, 7), false).to_json();
    assert_ne!(once["simulated"], other["simulated"], "the seeds matter");
}

#[test]
fn the_command_prints_one_json_document_with_the_table_and_advice() {
    let run = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_bay-sim"))
            .args([
                "plan",
                "--json",
                "--hours",
                "3",
                "--seeds",
                "0..1",
                "--agents",
                "4",
                "--arrivals",
                "30",
            ])
            .output()
            .expect("bay-sim runs")
    };
    let out = run();
    assert!(out.status.success());
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let rows: Vec<(&str, bool)> = doc["bounds"]
        .as_array()
        .expect("bounds")
        .iter()
        .map(|b| {
            (
                b["bound"].as_str().unwrap_or_default(),
                b["simulated"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("arrivals", true),
            ("one slot", true),
            ("speculation, ahead = 2", false),
            ("footprint lanes", false),
            ("batching, batch = 4", false)
        ],
        "without --ahead, --lanes or --batch their rows are what-ifs"
    );
    for tried in ["ahead 0 -> 2", "footprint lanes off -> on", "batch 0 -> 4"] {
        assert!(
            doc["variants"]
                .as_array()
                .expect("variants")
                .iter()
                .any(|v| v["change"] == tried),
            "{tried} is one of the changes tried"
        );
    }
    assert!(doc["simulated"]["merges_per_day"].as_f64().unwrap_or(0.0) > 0.0);
    assert!(!doc["variants"].as_array().expect("variants").is_empty());
    assert!(
        doc["advice"]
            .as_str()
            .is_some_and(|a| a.contains("gains the most") || a.contains("no one-step change")),
        "{}",
        doc["advice"]
    );
    assert_eq!(run().stdout, out.stdout, "the same seed prints the same");
}

#[test]
fn two_runners_checking_ahead_merge_at_the_speculation_bound() {
    // One runner checks the head while the other checks the entry behind it, on main with the
    // head merged: two check slots, so twice one slot's 144 a day when nothing fails.
    let plan = Plan {
        runners: 2,
        ahead: 2,
        agents: 12,
        ..saturated(Dist::Fixed(10.0))
    };
    let report = at_bound(&plan, (0, 2), "speculation, ahead = 2", 288.0);
    let alone = plan::measure(
        &Plan {
            ahead: 0,
            ..plan.clone()
        },
        (0, 2),
    );
    assert!(
        report.measured.merges_per_day > 1.8 * alone.merges_per_day,
        "{:.1} a day checking ahead, {:.1} without",
        report.measured.merges_per_day,
        alone.merges_per_day
    );
    // A tenth of the changes broken: a failing head makes the run behind it a miss, which
    // runs again; still within 10% of the bound.
    let failing = Plan {
        failure_rate: 0.1,
        hours: 12.0,
        ..plan
    };
    let report = plan::report(&failing, (0, 3), false);
    assert!(
        report.deviation().abs() < 0.1,
        "{:.1} a day against {:.1}",
        report.measured.merges_per_day,
        report.binding().per_day
    );
}

#[test]
fn a_full_queue_below_its_bound_is_not_blamed_on_too_few_agents() {
    // A fifth of the changes broken: two runners checking ahead fall more than 10% short of
    // the speculation row while every entry waits, so the agents are not what is short.
    let plan = Plan {
        runners: 2,
        ahead: 1,
        agents: 16,
        failure_rate: 0.2,
        ..saturated(Dist::Fixed(10.0))
    };
    let report = plan::report(&plan, (0, 2), false);
    assert!(report.deviation() < -0.1, "{:.3}", report.deviation());
    assert!(report.measured.wait_p50_min > 10.0);
    let why = report.explain();
    assert!(why.contains("the queue is full"), "{why}");
    assert!(!why.contains("too few agents"), "{why}");
}

#[test]
fn check_minutes_are_named_as_a_person_writes_them() {
    assert_eq!(Dist::Fixed(12.0).scaled(0.8).name(), "9.6");
    assert_eq!(Dist::Uniform(5.0, 15.0).name(), "5..15");
    assert_eq!(Dist::Exp(2.5).scaled(0.8).name(), "exp:2");
    assert_eq!(Dist::Fixed(1.0 / 3.0).name(), "0.33");
}

#[test]
fn two_runners_with_footprint_lanes_merge_at_the_lanes_bound() {
    // Changes spread over four folders, one footprint check each: while one runner checks the
    // head, the other checks an entry whose folder none ahead touches, and its pass carries.
    // When the head merges, the entry right behind it merges at once three times in four.
    let plan = Plan {
        runners: 2,
        agents: 12,
        areas: 4,
        lanes: true,
        ..saturated(Dist::Fixed(10.0))
    };
    let report = at_bound(&plan, (0, 2), "footprint lanes", 144.0 * 1.75);
    let alone = plan::measure(
        &Plan {
            lanes: false,
            ..plan.clone()
        },
        (0, 2),
    );
    assert!(
        report.measured.merges_per_day > 1.6 * alone.merges_per_day,
        "{:.1} a day with lanes, {:.1} without",
        report.measured.merges_per_day,
        alone.merges_per_day
    );
    // Two folders: only an entry whose folder differs from the head's, and from every entry
    // between, goes beside it; half of them.
    let two = Plan { areas: 2, ..plan };
    at_bound(&two, (0, 2), "footprint lanes", 144.0 * 1.5);
}

#[test]
fn three_runners_checking_ahead_split_the_entries() {
    // Two runners idle while the third checks the head: each leaves to the other the entries
    // worth a run it would also pick, so both check ahead, not the same entry twice.
    let plan = Plan {
        runners: 3,
        ahead: 2,
        agents: 16,
        ..saturated(Dist::Fixed(10.0))
    };
    let report = at_bound(&plan, (0, 3), "speculation, ahead = 2", 432.0);
    assert!(
        report.measured.check_minutes_per_merge < 14.0,
        "{:.2} check-minutes a merge: runs made twice",
        report.measured.check_minutes_per_merge
    );
}

#[test]
fn one_runner_batching_merges_at_the_batching_bound() {
    // Sixteen agents keep the queue deep; one run merges four changes, so one slot merges
    // four times as many.
    let plan = Plan {
        agents: 16,
        batch: 4,
        ..saturated(Dist::Fixed(10.0))
    };
    at_bound(&plan, (0, 2), "batching, batch = 4", 576.0);
    // Without batching the same queue merges at one slot's rate.
    let alone = plan::measure(
        &Plan {
            batch: 0,
            ..plan.clone()
        },
        (0, 2),
    )
    .merges_per_day;
    assert!(alone <= 144.0, "{alone:.1} a day without batching");
    // With a tenth of the changes broken, bisection and the culprit's own run cost runs, and
    // the members behind a culprit wait for the next batch: below the bound, still well above
    // one slot.
    let failing = Plan {
        failure_rate: 0.1,
        ..plan
    };
    let report = plan::report(&failing, (0, 2), false);
    assert_eq!(report.binding().name, "batching, batch = 4");
    let measured = report.measured.merges_per_day;
    assert!(measured > 1.5 * one_slot(&failing), "{measured:.1} a day");
    assert!(
        measured <= 1.1 * report.binding().per_day,
        "{measured:.1} a day"
    );
}

#[test]
fn a_batch_over_areas_costs_a_check_for_each_area_it_touches() {
    // Four areas, one check each: a batch of four touches 4(1 - (3/4)^4) = 2.73 of them on
    // average, so its run costs 27.3 minutes of checks, not 10, and merges 210.7 a day, not
    // 576. The row that assumed one check a run showed 576 while the simulator merged 216.
    let plan = Plan {
        agents: 16,
        batch: 4,
        areas: 4,
        ..saturated(Dist::Fixed(10.0))
    };
    let touched = 4.0 * (1.0 - 0.75f64.powi(4));
    at_bound(
        &plan,
        (0, 2),
        "batching, batch = 4",
        1440.0 / (10.0 * touched) * 4.0,
    );
    // With a tenth broken, a bisection's run costs at least the failing area's check, and the
    // simulator stays within 10% of that bound: its other areas' passes carry by footprint.
    let failing = Plan {
        failure_rate: 0.1,
        ..plan
    };
    let report = plan::report(&failing, (0, 2), false);
    assert_eq!(report.binding().name, "batching, batch = 4");
    assert!(
        report.deviation().abs() < 0.1,
        "{:.1} a day against {:.1}",
        report.measured.merges_per_day,
        report.binding().per_day
    );
    // A batch of eight over four areas runs 36 minutes of checks before any bisection. The
    // planner sets the head's progress deadline to fit a batch's runs, as a user would size
    // `execution_budget_s`; one that fit three runs alone gave up most failing batches for
    // time and merged 0.43 of the bound.
    let eight = Plan {
        batch: 8,
        ..failing
    };
    let report = plan::report(&eight, (0, 2), false);
    assert_eq!(report.binding().name, "batching, batch = 8");
    assert!(
        report.deviation() > -0.4,
        "{:.1} a day against {:.1}",
        report.measured.merges_per_day,
        report.binding().per_day
    );
}
