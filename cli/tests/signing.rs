//! A runner under a key registry that signs everything, with real Git and ssh-keygen's keys:
//! with its executor and producer keys enrolled it signs the merge it pushes to main (Git's
//! own `verify-commit` agrees, against the registry's `executor` file) and the evidence it
//! writes (`ssh-keygen -Y verify` agrees); without them it refuses `RUNNER_KEY_MISSING` and
//! claims nothing.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::*;

const REGISTRY: &str = "refs/bay/registry";

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

fn world_with_registry() -> (World, RunnerKeys) {
    let world = World::standard();
    let keys = enrol_runner_keys(&world);
    (world, keys)
}

/// An allowed-signers file made from one class file of the remote's registry.
fn allowed_signers(world: &World, keys: &RunnerKeys, class: &str) -> PathBuf {
    let text = git_dir(&world.remote, &["show", &format!("{REGISTRY}:{class}")]);
    let file = keys.dir.join(format!("allowed-{class}"));
    std::fs::write(&file, format!("{}\n", text.trim_end())).expect("written");
    file
}

#[test]
fn a_runner_with_enrolled_keys_signs_the_merge_and_its_evidence() {
    let (world, keys) = world_with_registry();
    configure_runner_keys(&world, &keys);
    let clone = world.clone_as("ann");
    let (change, view) = world.submit(&clone, "ann", "greet", "src/greeting.txt", "Hi\n");
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(world.merges_of(&change), 1, "{ran:?}");

    // Git itself verifies the merge on main against the registry's executor file.
    let signers = allowed_signers(&world, &keys, "executor");
    let verified = Command::new("git")
        .arg("--git-dir")
        .arg(&world.remote)
        .arg("-c")
        .arg(format!("gpg.ssh.allowedSignersFile={}", path(&signers)))
        .args(["verify-commit", "main"])
        .output()
        .expect("git runs");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    let raw = git_dir(&world.remote, &["cat-file", "commit", "main"]);
    assert!(
        raw.contains("gpgsig -----BEGIN SSH SIGNATURE-----"),
        "{raw}"
    );

    // Each evidence record carries a signature ssh-keygen verifies over its canonical bytes.
    let records = world.evidence("admin");
    assert!(!records.is_empty());
    let producers = allowed_signers(&world, &keys, "producer");
    for record in records {
        let signature = record["signature"].as_str().expect("a signed record");
        let mut unsigned = record.clone();
        unsigned
            .as_object_mut()
            .expect("an object")
            .remove("signature");
        let bytes = serde_json::to_vec(&unsigned).expect("json");
        let sig = keys.dir.join("record.sig");
        std::fs::write(&sig, signature).expect("written");
        let mut verify = Command::new("ssh-keygen")
            .args(["-Y", "verify", "-n", "bay-evidence", "-I", "admin", "-f"])
            .arg(&producers)
            .arg("-s")
            .arg(&sig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ssh-keygen runs");
        use std::io::Write;
        verify
            .stdin
            .take()
            .expect("stdin")
            .write_all(&bytes)
            .expect("written");
        let out = verify.wait_with_output().expect("ssh-keygen ends");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(status.doc["detail"]["trust"], "signed", "{status:?}");
    let status = bay(&world.admin, "admin", &["status", &change]);
    assert_eq!(status.doc["detail"]["trust"], "signed", "{status:?}");

    // `merge --wait` runs its operation here as a runner does, and says it signed: the
    // candidate's signature was read back and verified before it was pushed.
    // In ann's clone, with no keys, it refuses as a runner does and sends nothing.
    let (second, view) = world.edited(&clone, "ann", "other", "src/other.txt", "More\n", &[]);
    let queued_before = git_dir(&world.remote, &["for-each-ref", "refs/bay/queue/"]);
    let refused = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(refused.doc["reason"], "RUNNER_KEY_MISSING", "{refused:?}");
    assert_eq!(world.merges_of(&second), 0);
    assert_eq!(
        git_dir(&world.remote, &["for-each-ref", "refs/bay/queue/"]),
        queued_before,
        "the request never went up"
    );
    let (second, view) = world.edited(
        &world.admin,
        "admin",
        "more",
        "src/other.txt",
        "More\n",
        &[],
    );
    let waited = bay(&view, "admin", &["merge", "--wait"]);
    assert_eq!(waited.doc["decision"], "merged", "{waited:?}");
    assert_eq!(waited.doc["detail"]["trust"], "signed", "{waited:?}");
    assert_eq!(world.merges_of(&second), 1);

    // Once the executor key is revoked, nothing it signed counts, this merge too.
    let ran = bay(
        &world.admin,
        "admin",
        &[
            "enrol", "--remove", "executor", "admin", "--reason", "revoked",
        ],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    let status = bay(&world.admin, "admin", &["status", &change]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(status.doc["detail"]["trust"], "unsigned", "{status:?}");
}

#[test]
fn a_runner_without_its_keys_refuses_runner_key_missing_and_claims_nothing() {
    let (world, keys) = world_with_registry();
    let clone = world.clone_as("ann");
    let (change, _) = world.submit(&clone, "ann", "greet", "src/greeting.txt", "Hi\n");
    let steps = world.chain(&change).len();
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.doc["reason"], "RUNNER_KEY_MISSING", "{ran:?}");
    let problems = ran.doc["detail"]["keys"].as_array().expect("keys");
    let settings: Vec<&str> = problems
        .iter()
        .map(|p| p["setting"].as_str().expect("a setting"))
        .collect();
    assert_eq!(settings, ["bay.executorKey", "bay.producerKey"], "{ran:?}");
    assert_eq!(world.chain(&change).len(), steps, "nothing claimed");
    assert_eq!(world.merges_of(&change), 0);

    // Keys swapped: each is enrolled, but not where it signs.
    git(
        &world.admin,
        &["config", "bay.executorKey", path(&keys.producer)],
    );
    git(
        &world.admin,
        &["config", "bay.producerKey", path(&keys.executor)],
    );
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.doc["reason"], "RUNNER_KEY_MISSING", "{ran:?}");
    assert_eq!(world.chain(&change).len(), steps, "nothing claimed");

    // With `signing = "approvals"` on main the runner needs no key and merges unsigned.
    configure_none(&world);
    let policy = policy("\n[policy]\nsigning = \"approvals\"\n");
    write(&world.admin, ".bay/policy.toml", &policy);
    git(
        &world.admin,
        &["commit", "--quiet", "-am", "sign only approvals"],
    );
    git(&world.admin, &["push", "--quiet", "origin", "main"]);
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(world.merges_of(&change), 1, "{ran:?}");
    let raw = git_dir(&world.remote, &["cat-file", "commit", "main"]);
    assert!(!raw.contains("gpgsig"), "{raw}");
    let status = bay(&world.admin, "admin", &["status", &change]);
    assert_eq!(status.doc["detail"]["trust"], "approvals", "{status:?}");
    // The runner's own outcome says so too.
    let chain = world.chain(&change);
    let outcome = chain.last().expect("an outcome step").to_string();
    assert!(outcome.contains(r#""trust":"approvals""#), "{outcome}");
}

fn configure_none(world: &World) {
    for key in ["bay.executorKey", "bay.producerKey"] {
        git(&world.admin, &["config", "--unset", key]);
    }
}

/// One row of `bay doctor` in the admin clone.
fn doctor_row(world: &World, name: &str) -> serde_json::Value {
    let ran = bay(&world.admin, "admin", &["doctor"]);
    ran.doc["detail"]["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == name))
        .cloned()
        .unwrap_or_else(|| panic!("no {name} row: {ran:?}"))
}

#[test]
fn doctor_shows_the_signing_mode_and_turns_red_for_a_key_others_can_read() {
    use std::os::unix::fs::PermissionsExt;
    let (world, keys) = world_with_registry();
    configure_runner_keys(&world, &keys);
    git(&world.admin, &["fetch", "--quiet", "origin"]);
    let signing = doctor_row(&world, "signing");
    assert_eq!(signing["found"], "all", "{signing}");
    assert_eq!(signing["registry"], true, "{signing}");

    // ssh-keygen writes private keys 0600: no agent session runs here, so green.
    let row = doctor_row(&world, "key-custody");
    assert_eq!(row["state"], "green", "{row}");
    // Readable by others: any agent on another account may read it.
    std::fs::set_permissions(&keys.executor, std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let row = doctor_row(&world, "key-custody");
    assert_eq!(row["state"], "red", "{row}");
    assert_eq!(row["code"], "KEY_EXPOSED", "{row}");
    assert_eq!(row["key"], "bay.executorKey", "{row}");
}
