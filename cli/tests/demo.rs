//! `bay demo`, the README's main-job command, as a test: two agents' changes through a runner
//! on a throwaway remote, one merging and one conflicting and repaired, and every command it
//! names for a look with plain Git working.

mod support;

use support::*;

#[test]
fn the_demo_merges_both_changes_and_every_look_it_names_works() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let dir = root.path().join("demo");
    let ran = bay(
        root.path(),
        "demo",
        &["demo", "--dir", dir.to_str().expect("utf-8")],
    );
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    assert_eq!(ran.code, 0);
    assert_eq!(ran.doc["detail"]["merged"], 2, "{ran:?}");
    let steps = ran.doc["detail"]["steps"].as_array().expect("steps");
    let said = |actor: &str, decision: &str| {
        steps
            .iter()
            .any(|step| step["actor"] == actor && step["decision"] == decision)
    };
    assert!(said("ann", "merged"), "{steps:?}");
    assert!(
        said("bob", "blocked"),
        "bob's change conflicted first: {steps:?}"
    );
    assert!(said("bob", "merged"), "{steps:?}");
    let main = git(&dir.join("admin"), &["log", "--format=%s", "origin/main"]);
    assert_eq!(main.lines().count(), 3, "{main}");
    for look in ran.doc["detail"]["look"].as_array().expect("look") {
        let command = look.as_str().expect("a command");
        assert!(!command.contains('<'), "a placeholder: {command}");
        let out = std::process::Command::new("sh")
            .args(["-c", command])
            .output()
            .expect("sh runs");
        assert!(
            out.status.success() && !out.stdout.is_empty(),
            "{command}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if command.contains(" notes ") {
            let note = String::from_utf8_lossy(&out.stdout);
            assert!(note.contains("\"verdict\":\"pass\""), "{note}");
        }
    }
}
