//! `bay-sim run`'s summary, as a maintainer reads it.

/// Each seed counts once under its runners' pass interval, and the seeds draw more than one.
#[test]
fn the_summary_counts_the_seeds_by_their_runners_interval() {
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
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
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
