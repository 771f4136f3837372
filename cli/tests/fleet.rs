//! `CHANGE_HELD` across machines, with real Git and two clones named by `bay.machine`: a hook
//! event on one machine starts a background `bay live push` of its live summary to
//! `refs/bay/live/<machine>`; another clone's `bay status` fetches it, and its `bay start` of
//! that change as the same actor is refused naming the first machine's session, until that
//! session's end pushes a summary without it. `bay status --fleet` shows the session too.

mod support;

use std::path::Path;
use std::time::Duration;

use support::*;

/// Feeds `bay hook <moment>` the Claude Code payload of `event` for `session` in `tree`, as
/// Claude Code runs its hooks (it sets `CLAUDE_PROJECT_DIR`, which names the product here).
fn hook(tree: &Path, moment: &str, event: &str, session: &str) {
    claude_hook(
        tree,
        moment,
        event,
        session,
        &[("CLAUDE_PROJECT_DIR", tree)],
    );
}

/// The live summary `refs/bay/live/<machine>` holds on the remote, once it holds `want`
/// sessions, waited for: the hook pushes it in the background.
fn summary_with(world: &World, machine: &str, want: usize) -> serde_json::Value {
    let name = format!("refs/bay/live/{machine}");
    let mut doc = serde_json::Value::Null;
    wait_until(
        Duration::from_secs(30),
        &format!("{name} with {want} session(s)"),
        || {
            let Some(tip) = world.remote_ref(&name) else {
                return false;
            };
            let text = git_dir(&world.remote, &["show", &format!("{tip}:live.json")]);
            doc = serde_json::from_str(&text).expect("live.json is JSON");
            doc["sessions"].as_array().map(Vec::len) == Some(want)
        },
    );
    doc
}

#[test]
fn a_session_on_another_machine_holds_its_change_until_it_ends() {
    let world = World::with_runner("takeover_s = 600\n");
    let a = world.clone_as("a");
    let b = world.clone_as("b");
    git(&a, &["config", "bay.machine", "alpha"]);
    git(&b, &["config", "bay.machine", "beta"]);

    let first = bay(&a, "ann", &["start", "greet", "--paths", "src/"]);
    assert_eq!(first.code, 0, "{}", first.doc);
    let change = first.doc["change"].as_str().expect("a change").to_owned();
    let view = std::path::PathBuf::from(first.doc["detail"]["view"].as_str().expect("a view"));
    hook(&view, "session.start", "SessionStart", "s1");

    let summary = summary_with(&world, "alpha", 1);
    assert_eq!(summary["schema"], "bay.live/1");
    assert_eq!(summary["machine"], "alpha");
    let row = &summary["sessions"][0];
    assert_eq!(row["session"], "s1");
    assert_eq!(row["actor"], "ann");
    assert_eq!(row["change"], change.as_str());
    assert_eq!(row["agent"], "claude");
    assert_eq!(row["last_event"], "session.start");
    assert_eq!(row["permission_mode"], "default");

    // B's plain `bay status` brings the summary into its mirror of the remote.
    let status = bay(&b, "ann", &["status"]);
    assert_eq!(status.code, 0, "{}", status.doc);
    let mirrored = git(
        &b,
        &["for-each-ref", "--format=%(refname)", "refs/bay-mirror/"],
    );
    assert!(
        mirrored.contains("refs/bay-mirror/origin/bay/live/alpha"),
        "{mirrored}"
    );
    // The fleet map reads that copy, with no fetch: both machines, and A's session.
    let map = bay(&b, "ann", &["status", "--fleet"]);
    assert_eq!(map.code, 0, "{}", map.doc);
    let machines: Vec<&str> = map.doc["detail"]["machines"]
        .as_array()
        .expect("machines")
        .iter()
        .filter_map(|m| m["machine"].as_str())
        .collect();
    assert_eq!(machines, ["beta", "alpha"], "{}", map.doc);
    let sessions = map.doc["detail"]["sessions"].as_array().expect("sessions");
    assert_eq!(sessions.len(), 1, "{}", map.doc);
    assert_eq!(sessions[0]["machine"], "alpha");
    assert_eq!(sessions[0]["change"], change.as_str());
    assert_eq!(sessions[0]["state"], "working");

    let held = bay(&b, "ann", &["start", &change]);
    assert_eq!(held.code, 10, "{}", held.doc);
    assert_eq!(held.doc["reason"], "CHANGE_HELD", "{}", held.doc);
    let holder = &held.doc["detail"]["holder"];
    assert_eq!(holder["machine"], "alpha", "{}", held.doc);
    assert_eq!(holder["session"], "s1");
    assert_eq!(holder["actor"], "ann");
    // Another name meets the change's actor, not the session.
    let bob = bay(&b, "bob", &["start", &change]);
    assert_ne!(bob.doc["reason"], "CHANGE_HELD", "{}", bob.doc);

    // The session ends: its machine pushes a summary without it, and B picks the change up
    // once its `bay status` fetched that.
    hook(&view, "session.end", "SessionEnd", "s1");
    summary_with(&world, "alpha", 0);
    let status = bay(&b, "ann", &["status"]);
    assert_eq!(status.code, 0, "{}", status.doc);
    let after = bay(&b, "ann", &["start", &change]);
    assert_eq!(after.code, 0, "{}", after.doc);
    assert_eq!(after.doc["change"], change.as_str());
}
