//! `bay enrol` with real Git and ssh-keygen's keys: the first key creates the key registry,
//! each version is signed as Git signs commits (Git's own `verify-commit` agrees), a removed
//! key is never enrolled again, and a registry broken by hand is named by commit, file and
//! line.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::*;

const REGISTRY: &str = "refs/bay/registry";

fn public(path: &Path) -> String {
    format!("{}.pub", path.display())
}

fn key_line(path: &Path) -> String {
    let text = std::fs::read_to_string(public(path)).expect("a .pub");
    let fields: Vec<&str> = text.split_whitespace().collect();
    format!("{} {}", fields[0], fields[1])
}

struct Keys {
    registry: PathBuf,
    agent: PathBuf,
    alice: PathBuf,
}

fn world_with_keys() -> (World, Keys) {
    let world = World::standard();
    let dir = world.root.path().join("keys");
    std::fs::create_dir(&dir).expect("a folder for keys");
    let keys = Keys {
        registry: keygen(&dir, "bay-registry"),
        agent: keygen(&dir, "agent-7"),
        alice: keygen(&dir, "alice"),
    };
    git(
        &world.admin,
        &[
            "config",
            "bay.registryKey",
            keys.registry.to_str().expect("a path"),
        ],
    );
    (world, keys)
}

fn enrol(world: &World, args: &[&str]) -> Ran {
    let mut all = vec!["enrol"];
    all.extend(args);
    bay(&world.admin, "admin", &all)
}

fn registry_file(world: &World, name: &str) -> String {
    git_dir(&world.remote, &["show", &format!("{REGISTRY}:{name}")])
}

fn refused(ran: &Ran, says: &str) {
    assert_eq!(ran.code, 20, "{ran:?}");
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    let why = ran.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains(says), "{why:?} should say {says:?}");
}

#[test]
fn enrol_remove_and_a_removed_key_refused_under_any_name() {
    let (world, keys) = world_with_keys();

    // The first key creates the registry, and only the registry key itself may.
    let first = enrol(&world, &["agent", "agent-7", &public(&keys.agent)]);
    refused(&first, "the first key is a `registry` key");
    assert_eq!(world.remote_ref(REGISTRY), None, "nothing was written");
    let not_own = enrol(&world, &["registry", "admin", &public(&keys.alice)]);
    refused(&not_own, "the first key is a `registry` key");

    let created = enrol(&world, &["registry", "admin", &public(&keys.registry)]);
    assert_eq!(created.code, 0, "{created:?}");
    assert_eq!(created.doc["detail"]["enrolled"]["class"], "registry");
    let tip = world.remote_ref(REGISTRY).expect("the registry exists");
    assert_eq!(created.doc["detail"]["registry"], tip.as_str());
    assert_eq!(
        registry_file(&world, "registry"),
        format!("admin {}\n", key_line(&keys.registry))
    );

    // Git itself verifies the version, with the registry file as its allowed signers.
    let signers = world.root.path().join("allowed_signers");
    std::fs::write(&signers, registry_file(&world, "registry")).expect("written");
    git(&world.admin, &["fetch", "--quiet", "origin", REGISTRY]);
    git(
        &world.admin,
        &[
            "-c",
            &format!("gpg.ssh.allowedSignersFile={}", signers.display()),
            "verify-commit",
            &tip,
        ],
    );

    let alice = enrol(&world, &["approver", "alice", &public(&keys.alice)]);
    assert_eq!(alice.code, 0, "{alice:?}");
    let agent = enrol(&world, &["agent", "agent-7", &public(&keys.agent)]);
    assert_eq!(agent.code, 0, "{agent:?}");
    assert!(
        agent.doc["say"]
            .as_str()
            .unwrap_or_default()
            .contains("agent agent-7")
    );
    let parent = git_dir(&world.remote, &["rev-parse", &format!("{REGISTRY}^")]);
    assert_eq!(
        parent.trim(),
        alice.doc["detail"]["registry"],
        "a fast-forward chain"
    );

    // Refusals write nothing.
    let before = world.remote_ref(REGISTRY);
    refused(
        &enrol(&world, &["agent", "agent-8", &public(&keys.agent)]),
        "already enrolled, as agent `agent-7`",
    );
    refused(
        &enrol(&world, &["reviewer", "agent-7", &public(&keys.alice)]),
        "already enrolled",
    );
    refused(
        &enrol(&world, &["agent", "Agent_7", &public(&keys.alice)]),
        "The agent name is a short lower-case word",
    );
    refused(
        &enrol(
            &world,
            &["agent", "agent-9", &keys.alice.display().to_string()],
        ),
        "private key",
    );
    refused(
        &enrol(
            &world,
            &["--remove", "agent", "nobody", "--reason", "revoked"],
        ),
        "`nobody` has no key in the agent class",
    );
    refused(
        &enrol(
            &world,
            &["--remove", "registry", "admin", "--reason", "rotated"],
        ),
        "never removes the last `registry` key",
    );
    assert_eq!(world.remote_ref(REGISTRY), before);

    let removed = enrol(
        &world,
        &["--remove", "agent", "agent-7", "--reason", "revoked"],
    );
    assert_eq!(removed.code, 0, "{removed:?}");
    assert_eq!(removed.doc["detail"]["removed"]["reason"], "revoked");
    assert_eq!(registry_file(&world, "agent"), "");
    let line = registry_file(&world, "removed");
    assert!(
        line.starts_with("agent agent-7 revoked ")
            && line.trim_end().ends_with(&key_line(&keys.agent)),
        "{line}"
    );

    // A removed key is never enrolled again, under any name.
    let again = enrol(&world, &["agent", "agent-9", &public(&keys.agent)]);
    refused(&again, "never enrolled again");

    // A usage error is Git-free and exits 2.
    let out = Command::new(env!("CARGO_BIN_EXE_bay"))
        .current_dir(&world.admin)
        .args(["enrol", "--remove", "agent", "agent-7"])
        .output()
        .expect("bay runs");
    assert_eq!(out.status.code(), Some(2));
}

/// Writes a registry version on `parent` by hand, signed by Git with `key`, and pushes it,
/// forced: each broken version here replaces the one before.
fn push_by_hand(world: &World, parent: &str, key: &Path, files: &[(&str, String)]) -> String {
    let dir = &world.admin;
    git(dir, &["fetch", "--quiet", "origin", REGISTRY]);
    let mut tree = String::new();
    for (name, text) in files {
        let blob = run_stdin(dir, &["hash-object", "-w", "--stdin"], text);
        tree.push_str(&format!("100644 blob {blob}\t{name}\n"));
    }
    let tree = run_stdin(dir, &["mktree"], &tree);
    let commit = git(
        dir,
        &[
            "-c",
            "gpg.format=ssh",
            "-c",
            &format!("user.signingKey={}", key.display()),
            "commit-tree",
            "-S",
            &tree,
            "-p",
            parent,
            "-m",
            "by hand",
        ],
    );
    let commit = commit.trim().to_owned();
    git(
        dir,
        &[
            "push",
            "--quiet",
            "origin",
            &format!("+{commit}:{REGISTRY}"),
        ],
    );
    commit
}

fn run_stdin(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("written");
    let out = child.wait_with_output().expect("git ends");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_registry_broken_by_hand_is_named_by_commit_file_and_line() {
    let (world, keys) = world_with_keys();
    assert_eq!(
        enrol(&world, &["registry", "admin", &public(&keys.registry)]).code,
        0
    );
    assert_eq!(
        enrol(&world, &["agent", "agent-7", &public(&keys.agent)]).code,
        0
    );
    assert_eq!(
        enrol(
            &world,
            &["--remove", "agent", "agent-7", "--reason", "rotated"]
        )
        .code,
        0
    );
    let registry = registry_file(&world, "registry");
    let removed = registry_file(&world, "removed");
    let good = world.remote_ref(REGISTRY).expect("the registry exists");

    // The removed key, enrolled again by hand under another name.
    let again = push_by_hand(
        &world,
        &good,
        &keys.registry,
        &[
            ("registry", registry.clone()),
            ("removed", removed.clone()),
            ("agent", format!("agent-9 {}\n", key_line(&keys.agent))),
        ],
    );
    let ran = enrol(&world, &["approver", "alice", &public(&keys.alice)]);
    assert_eq!(ran.code, 10, "{ran:?}");
    assert_eq!(ran.doc["reason"], "REGISTRY_UNREADABLE", "{ran:?}");
    assert_eq!(ran.doc["detail"]["commit"], again.as_str());
    assert_eq!(ran.doc["detail"]["file"], "agent");
    assert_eq!(ran.doc["detail"]["line"], 1);
    assert!(
        ran.doc["detail"]["why"]
            .as_str()
            .unwrap_or_default()
            .contains("never enrolled again"),
        "{ran:?}"
    );
    assert_eq!(world.remote_ref(REGISTRY).as_deref(), Some(again.as_str()));

    // A file of no class, and a version signed by a key that is not a registry key.
    let odd = push_by_hand(
        &world,
        &good,
        &keys.registry,
        &[
            ("registry", registry.clone()),
            ("removed", removed.clone()),
            ("owners", String::new()),
        ],
    );
    let ran = enrol(&world, &["approver", "alice", &public(&keys.alice)]);
    assert_eq!(ran.doc["reason"], "REGISTRY_UNREADABLE", "{ran:?}");
    assert_eq!(ran.doc["detail"]["commit"], odd.as_str());
    assert!(
        ran.doc["detail"]["why"]
            .as_str()
            .unwrap_or_default()
            .contains("`owners`")
    );

    let forged = push_by_hand(
        &world,
        &good,
        &keys.alice,
        &[("registry", registry), ("removed", removed)],
    );
    let ran = enrol(&world, &["approver", "alice", &public(&keys.alice)]);
    assert_eq!(ran.doc["reason"], "REGISTRY_UNREADABLE", "{ran:?}");
    assert_eq!(ran.doc["detail"]["commit"], forged.as_str());
}

#[test]
fn a_removed_key_enrolled_again_by_hand_is_mended_by_enrol_remove() {
    let (world, keys) = world_with_keys();
    for args in [
        vec!["registry", "admin", &public(&keys.registry)],
        vec!["agent", "agent-7", &public(&keys.agent)],
        vec!["--remove", "agent", "agent-7", "--reason", "rotated"],
    ] {
        assert_eq!(enrol(&world, &args).code, 0, "{args:?}");
    }
    let registry = registry_file(&world, "registry");
    let removed = registry_file(&world, "removed");
    let good = world.remote_ref(REGISTRY).expect("the registry exists");
    push_by_hand(
        &world,
        &good,
        &keys.registry,
        &[
            ("registry", registry),
            ("removed", removed.clone()),
            ("agent", format!("agent-9 {}\n", key_line(&keys.agent))),
        ],
    );
    let ran = enrol(&world, &["approver", "alice", &public(&keys.alice)]);
    assert_eq!(ran.doc["reason"], "REGISTRY_UNREADABLE", "{ran:?}");

    // The removal of what breaks it mends it.
    let ran = enrol(
        &world,
        &["--remove", "agent", "agent-9", "--reason", "revoked"],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    // The key keeps its first removal, once; the registry reads again.
    assert_eq!(registry_file(&world, "removed"), removed);
    assert!(!registry_file(&world, "agent").contains("agent-9"));
    let ran = enrol(&world, &["approver", "alice", &public(&keys.alice)]);
    assert_eq!(ran.code, 0, "{ran:?}");
}
