//! `bay.minFreeMiB`: below this machine's floor, `bay start` makes nothing (`DISK_LOW`) and a
//! check copies nothing and does not run (`infra_failure` naming `DISK_LOW`), never a pass.

mod support;

use support::*;

/// A floor no machine reaches.
const HUGE: &str = "999999999999";

#[test]
fn a_start_below_the_floor_makes_no_change_and_no_view() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    git(&ann, &["config", "bay.minFreeMiB", HUGE]);
    let refs_before = git_dir(&world.remote, &["for-each-ref"]);
    let ran = bay(
        &ann,
        "ann",
        &["start", "greet", "--paths", "src/greeting.txt"],
    );
    assert_eq!(ran.doc["reason"], "DISK_LOW", "{ran:?}");
    assert_eq!(ran.code, 10);
    assert_eq!(ran.doc["detail"]["floor_mib"], 999_999_999_999_u64);
    assert!(ran.doc["detail"]["free_mib"].as_u64().is_some(), "{ran:?}");
    assert_eq!(git_dir(&world.remote, &["for-each-ref"]), refs_before);
    assert!(!ann.join(".git/bay/views").exists(), "no view was made");

    // The same start with the floor met goes ahead.
    git(&ann, &["config", "bay.minFreeMiB", "1"]);
    let ran = bay(
        &ann,
        "ann",
        &["start", "greet", "--paths", "src/greeting.txt"],
    );
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
}

#[test]
fn a_check_below_the_floor_does_not_run_and_never_passes() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let (change, view) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    git(&world.admin, &["config", "bay.minFreeMiB", HUGE]);
    bay(&world.admin, "runner", &["runner", "run", "--once"]);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_UNKNOWN", "{status:?}");
    assert!(
        status.doc.to_string().contains("DISK_LOW"),
        "the refusal names the floor: {status:?}"
    );
    assert_eq!(world.merges_of(&change), 0);
}

#[test]
fn a_floor_that_is_no_number_is_named() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    git(&ann, &["config", "bay.minFreeMiB", "lots"]);
    let ran = bay(
        &ann,
        "ann",
        &["start", "greet", "--paths", "src/greeting.txt"],
    );
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    assert!(
        ran.doc["detail"]["why"]
            .as_str()
            .is_some_and(|why| why.contains("bay.minFreeMiB") && why.contains("lots"))
    );
}
