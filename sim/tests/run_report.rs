//! `bay-sim run`'s summary, as a maintainer reads it.

/// `bay-sim run --json` over seeds 0..40 with no faults: its one document.
fn summary_of_forty_quiet_seeds() -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bay-sim"))
        .args([
            "run", "--seeds", "0..40", "--faults", "none", "--json", "--jobs", "1",
        ])
        .output()
        .expect("bay-sim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// Each seed counts once under its runners' pass interval, and the seeds draw more than one.
#[test]
fn the_summary_counts_the_seeds_by_their_runners_interval() {
    let doc = summary_of_forty_quiet_seeds();
    let intervals = doc["runner_interval_s"]
        .as_object()
        .expect("runner_interval_s is an object");
    let seeds: u64 = intervals
        .values()
        .filter_map(serde_json::Value::as_u64)
        .sum();
    assert_eq!(seeds, 40, "{intervals:?}");
    assert!(
        intervals.get("10").and_then(|n| n.as_u64()) > Some(0),
        "{intervals:?}"
    );
    assert!(
        intervals.keys().any(|s| s == "30" || s == "60"),
        "some seeds pass seldom: {intervals:?}"
    );
}

/// Each seed counts once under its runners' lease and heartbeat, most under the spec's
/// defaults and some under others; a seed's runners run with the pair it drew, as their
/// presence on the remote says.
#[test]
fn the_summary_counts_the_seeds_by_their_runners_lease_and_each_runner_holds_it() {
    let doc = summary_of_forty_quiet_seeds();
    let leases = doc["runner_lease_heartbeat_s"]
        .as_object()
        .expect("runner_lease_heartbeat_s is an object");
    let seeds: u64 = leases.values().filter_map(serde_json::Value::as_u64).sum();
    assert_eq!(seeds, 40, "{leases:?}");
    assert!(leases.get("60/10").and_then(|n| n.as_u64()) > Some(0));
    assert!(leases.keys().any(|k| k != "60/10"), "{leases:?}");

    let quiet = bay_sim::Scenario {
        allowed: Default::default(),
        ..bay_sim::Scenario::default()
    };
    let (seed, report) = (0..200)
        .map(|seed| (seed, bay_sim::run_seed(seed, &quiet)))
        .find(|(_, report)| report.lease_ms == 20_000)
        .expect("a seed of 200 draws a 20 s lease");
    assert_eq!(report.heartbeat_ms, 3_000);
    let world = bay_sim::world::World::new(seed, quiet).run_keep();
    let tip = world
        .git
        .remote
        .get(&bay_core::git::refs::executor("runner-0"))
        .expect("runner-0 wrote its presence");
    let commit = world.git.store.get(tip).expect("the presence commit");
    let presence =
        bay_core::presence::Presence::from_message(&commit.message).expect("a presence bay reads");
    assert_eq!(presence.lease_ms, 20_000, "seed {seed}");
}
