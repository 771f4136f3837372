//! A reviewer outside bay, with real Git and ssh-keygen's keys: `bay evidence missing` lists
//! main's commits no review covers, `bay evidence record --kind review` writes one review per
//! merge signed whole by `bay.reviewerKey` (ssh-keygen verifies it), and under a key registry
//! only a review that verifies against the `reviewer` file counts.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::*;

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The standard world with two merges on main, and a reviewer clone `rev` whose
/// `bay.reviewerName` is `review-bot` and whose `bay.reviewerKey` is a fresh key. Returns
/// the clone, the key and the two merges, oldest first.
fn reviewed_world() -> (World, PathBuf, PathBuf, [String; 2]) {
    let world = World::standard();
    world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    world.merged("bob", "other", "src/other.txt", "More\n");
    let log = git_dir(&world.remote, &["rev-list", "--first-parent", "main"]);
    let mut merges = log.lines().take(2).map(str::to_owned);
    let second = merges.next().expect("a merge");
    let first = merges.next().expect("a merge");
    let (rev, key) = reviewer(&world);
    (world, rev, key, [first, second])
}

/// The reviewer clone `rev`, as `review-bot` with a fresh key; the clone and the key.
fn reviewer(world: &World) -> (PathBuf, PathBuf) {
    let rev = world.clone_as("rev");
    let dir = world.root.path().join("keys");
    std::fs::create_dir(&dir).expect("a folder for keys");
    let key = keygen(&dir, "review-bot");
    git(&rev, &["config", "bay.reviewerName", "review-bot"]);
    git(&rev, &["config", "bay.reviewerKey", path(&key)]);
    (rev, key)
}

fn missing(clone: &Path, extra: &[&str]) -> Ran {
    let mut args = vec![
        "evidence",
        "missing",
        "--kind",
        "review",
        "--producer",
        "review-bot",
    ];
    args.extend(extra);
    let ran = bay(clone, "rev", &args);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    // A release gate reads when main was fetched: this command's own fetch.
    assert!(
        ran.doc["freshness"]["fetched_at"]
            .as_str()
            .is_some_and(|at| at.ends_with('Z')),
        "{ran:?}"
    );
    ran
}

fn listed(ran: &Ran) -> Vec<String> {
    ran.doc["detail"]["missing"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|m| m["commit"].as_str().expect("a commit").to_owned())
        .collect()
}

fn review(clone: &Path, commit: &str, verdict: &str, extra: &[&str]) -> Ran {
    let mut args = vec![
        "evidence",
        "record",
        "--kind",
        "review",
        "--verdict",
        verdict,
        "--commit",
        commit,
    ];
    args.extend(extra);
    bay(clone, "rev", &args)
}

/// Whether ssh-keygen verifies `record`'s signature, over its canonical bytes, as `name`
/// under `key`.
fn verifies(record: &Value, name: &str, key: &Path, dir: &Path) -> bool {
    let signature = record["signature"].as_str().expect("a signed record");
    let mut unsigned = record.clone();
    unsigned
        .as_object_mut()
        .expect("an object")
        .remove("signature");
    let bytes = serde_json::to_vec(&unsigned).expect("json");
    let public = std::fs::read_to_string(format!("{}.pub", key.display())).expect("a .pub");
    let allowed = dir.join("allowed");
    std::fs::write(&allowed, format!("{name} {public}")).expect("written");
    let sig = dir.join("record.sig");
    std::fs::write(&sig, signature).expect("written");
    let mut verify = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", "bay-evidence", "-I", name, "-f"])
        .arg(&allowed)
        .arg("-s")
        .arg(&sig)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh-keygen runs");
    verify
        .stdin
        .take()
        .expect("stdin")
        .write_all(&bytes)
        .expect("written");
    verify
        .wait_with_output()
        .expect("ssh-keygen ends")
        .status
        .success()
}

#[test]
fn a_signed_review_covers_its_merge_and_missing_lists_the_rest() {
    let (world, rev, key, [first, second]) = reviewed_world();
    let all = listed(&missing(&rev, &[]));
    assert_eq!(all.len(), 3, "the first commit and both merges: {all:?}");
    assert_eq!(all[1..], [first.clone(), second.clone()]);

    let body = world.root.path().join("review.json");
    std::fs::write(
        &body,
        r#"{"findings": ["unchecked null in src/greeting.txt"]}"#,
    )
    .expect("written");
    let body_arg = ["--body", path(&body), "--version", "cli-2.3"];
    let ran = review(&rev, &first, "product_failure", &body_arg);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    assert_eq!(
        ran.doc["detail"]["recorded"].as_array().map(Vec::len),
        Some(1)
    );
    assert_eq!(
        ran.doc["detail"]["trust"], "unsigned",
        "no registry: {ran:?}"
    );

    // One record, on the merge's tree, naming the merge, signed whole with the reviewer key.
    let records = world.evidence("review-bot");
    let [record] = records.as_slice() else {
        panic!("{records:?}")
    };
    let tree = git_dir(&world.remote, &["rev-parse", &format!("{first}^{{tree}}")]);
    let noted = git_dir(
        &world.remote,
        &[
            "notes",
            "--ref",
            "refs/notes/bay/evidence/review-bot",
            "list",
        ],
    );
    assert!(noted.contains(tree.trim()), "{noted}");
    assert_eq!(record["kind"], "review");
    assert_eq!(record["commit"], first.as_str());
    assert_eq!(record["verdict"], "product_failure");
    assert_eq!(record["findings"][0], "unchecked null in src/greeting.txt");
    let dir = world.root.path().join("keys");
    assert!(verifies(record, "review-bot", &key, &dir));
    let mut changed = record.clone();
    changed["findings"][0] = Value::from("nothing");
    assert!(
        !verifies(&changed, "review-bot", &key, &dir),
        "a changed finding fails"
    );

    // The same content again writes nothing; a changed verdict needs a new version.
    let again = review(&rev, &first, "product_failure", &body_arg);
    assert_eq!(again.doc["detail"]["unchanged"], 1, "{again:?}");
    let differs = review(&rev, &first, "pass", &body_arg);
    assert_eq!(differs.doc["decision"], "failed", "{differs:?}");
    let why = differs.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("--version"), "{why}");

    // The reviewed merge is covered, whatever its verdict; --since lists only what follows.
    let left = listed(&missing(&rev, &[]));
    assert!(!left.contains(&first) && left.contains(&second), "{left:?}");
    assert_eq!(
        listed(&missing(&rev, &["--since", &first])),
        vec![second.clone()]
    );
    assert_eq!(
        listed(&missing(&rev, &["--since", &second])),
        Vec::<String>::new()
    );

    // A body that names a field of the record itself is refused, and nothing is written.
    std::fs::write(&body, r#"{"verdict": "pass"}"#).expect("written");
    let forged = review(&rev, &second, "unknown", &["--body", path(&body)]);
    assert_eq!(forged.doc["decision"], "failed", "{forged:?}");
    assert_eq!(world.evidence("review-bot").len(), 1);
}

#[test]
fn a_review_needs_the_reviewer_name_and_key_even_without_a_registry() {
    let (world, rev, _, [first, _]) = reviewed_world();
    git(&rev, &["config", "--unset", "bay.reviewerKey"]);
    let ran = review(&rev, &first, "pass", &[]);
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    let why = ran.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("bay.reviewerKey"), "{why}");
    git(&rev, &["config", "--unset", "bay.reviewerName"]);
    let ran = review(&rev, &first, "pass", &[]);
    let why = ran.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("bay.reviewerName"), "{why}");
    assert!(world.evidence("review-bot").is_empty());
}

#[test]
fn under_a_registry_only_a_review_signed_by_an_enrolled_reviewer_key_counts() {
    let (world, rev, key, [first, second]) = reviewed_world();
    let dir = world.root.path().join("keys");
    let registry = keygen(&dir, "bay-registry");
    git(
        &world.admin,
        &["config", "bay.registryKey", path(&registry)],
    );
    let enrol = |args: &[&str]| {
        let mut all = vec!["enrol"];
        all.extend(args);
        let ran = bay(&world.admin, "admin", &all);
        assert_eq!(ran.code, 0, "{ran:?}");
    };
    enrol(&["registry", "admin", &format!("{}.pub", registry.display())]);

    // Not enrolled: refused before anything is written.
    let ran = review(&rev, &first, "pass", &[]);
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    let why = ran.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("bay enrol reviewer review-bot"), "{why}");
    assert!(world.evidence("review-bot").is_empty());

    enrol(&["reviewer", "review-bot", &format!("{}.pub", key.display())]);
    let ran = review(&rev, &first, "pass", &[]);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    assert_eq!(ran.doc["detail"]["trust"], "signed", "{ran:?}");

    // A review on the second merge in the reviewer's notes, but signed by no key, does not
    // count.
    let tree = git_dir(&world.remote, &["rev-parse", &format!("{second}^{{tree}}")]);
    let base = git_dir(
        &world.remote,
        &["rev-parse", &format!("{second}^^{{tree}}")],
    );
    let unsigned = serde_json::json!({
        "schema": "bay.evidence/1", "kind": "review", "id": format!("review-bot/review/{second}/x"),
        "producer": "review-bot", "verdict": "pass", "commit": second,
        "tree": tree.trim(), "base_tree": base.trim(), "at": 1,
    });
    git_dir(
        &world.remote,
        &[
            "-c",
            "user.name=forger",
            "-c",
            "user.email=forger@test.invalid",
            "notes",
            "--ref",
            "refs/notes/bay/evidence/review-bot",
            "append",
            "-m",
            &unsigned.to_string(),
            tree.trim(),
        ],
    );
    let ran = missing(&rev, &["--since", &first]);
    assert_eq!(listed(&ran), vec![second.clone()], "{ran:?}");
    assert_eq!(ran.doc["detail"]["trust"], "signed");
    let ran = missing(&rev, &[]);
    assert!(
        !listed(&ran).contains(&first),
        "the signed review counts: {ran:?}"
    );
}

/// `detail.completion` of `change`, as `bay status <change>` gives it.
fn completion(world: &World, change: &str) -> Value {
    let status = bay(&world.admin, "admin", &["status", change]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    status.doc["detail"]["completion"].clone()
}

#[test]
fn a_reviewed_dimension_is_judged_by_status_under_the_profile_and_never_holds_a_merge() {
    let dimension = "\n[[dimension]]\nname = \"reviewed\"\nkind = \"review\"\n\
                     producers = [\"review-bot\"]\n\n[profile.release]\n\
                     require = [\"merged\", \"checked\", \"reviewed\"]\n";
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}\n[policy]\nprofile = \"release\"\n"),
            false,
        ),
        (".bay/policy.toml", &policy(dimension), false),
        (".bay/check", CHECK, true),
    ]);
    // The profile requires a review, yet the change merges without one.
    let change = world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let merge = world.remote_ref("refs/heads/main").expect("main");
    let done = completion(&world, &change);
    assert_eq!(done["profile"], "release", "{done}");
    assert_eq!(done["verdict"], "unmet", "{done}");
    assert_eq!(done["unmet"], serde_json::json!(["reviewed missing"]));
    assert_eq!(done["dimensions"]["merged"]["state"], "met");
    assert_eq!(done["dimensions"]["reviewed"]["state"], "missing");

    let (rev, _) = reviewer(&world);
    let ran = review(&rev, &merge, "product_failure", &[]);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    let done = completion(&world, &change);
    assert_eq!(
        done["dimensions"]["reviewed"]["state"], "rejected",
        "{done}"
    );
    assert_eq!(done["unmet"], serde_json::json!(["reviewed rejected"]));

    // A later merge that fixes the change answers the rejection.
    let clone = world.clone_as("dan");
    let (_, view) = world.edited(
        &clone,
        "dan",
        "fix the greeting",
        "src/greeting.txt",
        "Hi there\n",
        &["--fixes", &change],
    );
    let merged = bay(&view, "dan", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let done = completion(&world, &change);
    assert_eq!(
        done["dimensions"]["reviewed"]["state"], "answered",
        "{done}"
    );
    assert_eq!(done["verdict"], "met", "{done}");
}

#[test]
fn under_signing_approvals_a_review_runs_unsigned_and_needs_no_enrolment() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy("\n[policy]\nsigning = \"approvals\"\n"),
            false,
        ),
        (".bay/check", CHECK, true),
    ]);
    world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let merge = world.remote_ref("refs/heads/main").expect("main");
    let (rev, _) = reviewer(&world);
    let registry = keygen(&world.root.path().join("keys"), "bay-registry");
    git(
        &world.admin,
        &["config", "bay.registryKey", path(&registry)],
    );
    let public = format!("{}.pub", registry.display());
    let ran = bay(
        &world.admin,
        "admin",
        &["enrol", "registry", "admin", &public],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = review(&rev, &merge, "pass", &[]);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    assert_eq!(ran.doc["detail"]["trust"], "approvals", "{ran:?}");
    let ran = missing(&rev, &[]);
    assert!(!listed(&ran).contains(&merge), "the review counts: {ran:?}");
    assert_eq!(ran.doc["detail"]["trust"], "approvals");
}

#[test]
fn a_check_record_is_signed_by_the_producer_key_and_under_a_registry_needs_it_enrolled() {
    let world = World::standard();
    world.merged("ann", "greet", "src/greeting.txt", "Hi\n");
    let merge = world.remote_ref("refs/heads/main").expect("main");
    let ci = world.clone_as("ci");
    let dir = world.root.path().join("keys");
    std::fs::create_dir(&dir).expect("a folder for keys");
    let key = keygen(&dir, "ci-post");
    git(&ci, &["config", "bay.producerName", "ci-post"]);
    git(&ci, &["config", "bay.producerKey", path(&key)]);
    let answer = |verdict: &str| {
        let args = [
            "evidence",
            "record",
            "--kind",
            "check",
            "--verdict",
            verdict,
            "--commit",
            &merge,
            "--check",
            "smoke",
            "--environment",
            "any",
        ];
        bay(&ci, "ci", &args)
    };
    let ran = answer("pass");
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    let records = world.evidence("ci-post");
    let [record] = records.as_slice() else {
        panic!("{records:?}")
    };
    assert!(verifies(record, "ci-post", &key, &dir));

    // Under a registry that signs everything, a producer key not enrolled writes nothing.
    let registry = keygen(&dir, "bay-registry");
    git(
        &world.admin,
        &["config", "bay.registryKey", path(&registry)],
    );
    let public = format!("{}.pub", registry.display());
    let ran = bay(
        &world.admin,
        "admin",
        &["enrol", "registry", "admin", &public],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    let ran = answer("product_failure");
    assert_eq!(ran.doc["decision"], "failed", "{ran:?}");
    let why = ran.doc["detail"]["why"].as_str().unwrap_or_default();
    assert!(why.contains("bay enrol producer ci-post"), "{why}");
    assert_eq!(world.evidence("ci-post").len(), 1);

    // Enrolled, its record counts, and says so of itself.
    let public = format!("{}.pub", key.display());
    let ran = bay(
        &world.admin,
        "admin",
        &["enrol", "producer", "ci-post", &public],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    let args = [
        "evidence",
        "record",
        "--kind",
        "check",
        "--verdict",
        "product_failure",
        "--commit",
        &merge,
        "--check",
        "smoke",
        "--environment",
        "any",
        "--version",
        "2",
    ];
    let ran = bay(&ci, "ci", &args);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    let records = world.evidence("ci-post");
    let signed: Vec<&Value> = records
        .iter()
        .filter(|record| record["verdict"] == "product_failure")
        .collect();
    let [signed] = signed.as_slice() else {
        panic!("{records:?}")
    };
    assert_eq!(signed["trust"], "signed", "{signed}");
    assert!(verifies(signed, "ci-post", &key, &dir));
}
