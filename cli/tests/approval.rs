//! A person's approval, with real Git and ssh-keygen's keys: a change to paths an approval
//! check names waits `APPROVAL_PENDING` once its checks passed, holding up no one; `bay status`
//! says who may approve it and how; only a yes signed by a key the registry's `approver` file
//! enrols counts, and then the runner merges that same candidate without running its checks
//! again; a signed no blocks it `CHECK_FAILED`, naming the approver.

mod support;

use std::path::{Path, PathBuf};

use support::*;

/// An approval check on `billing/`; under a registry only approvals are signed, so the runner
/// needs no keys of its own.
const APPROVAL_CHECK: &str = "\n[[check]]\nid = \"billing-approval\"\nenvironment = \"people\"\n\
                              kind = \"approval\"\nwhen_paths = [\"billing/\"]\n\
                              \n[policy]\nsigning = \"approvals\"\n";

fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A remote whose policy asks a person's yes for `billing/`.
fn approval_world() -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("billing/rates.txt", "1\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy(APPROVAL_CHECK), false),
        (".bay/check", CHECK, true),
    ])
}

fn runner_once(world: &World) -> Ran {
    let ran = bay(&world.admin, "runner", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    ran
}

fn kinds(world: &World, change: &str) -> Vec<String> {
    world
        .chain(change)
        .iter()
        .map(|step| step["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The key registry, held by `admin`, with `alice` enrolled as an approver in the clone
/// `alice` (its `bay.approverName` and `bay.approverKey` set). Returns that clone.
fn enrolled_approver(world: &World, name: &str) -> PathBuf {
    let dir = world.root.path().join("keys");
    std::fs::create_dir_all(&dir).expect("a folder for keys");
    let registry = dir.join("bay-registry");
    if !registry.exists() {
        keygen(&dir, "bay-registry");
        git(
            &world.admin,
            &["config", "bay.registryKey", path(&registry)],
        );
        let ran = bay(
            &world.admin,
            "admin",
            &[
                "enrol",
                "registry",
                "admin",
                &format!("{}.pub", registry.display()),
            ],
        );
        assert_eq!(ran.code, 0, "{ran:?}");
    }
    let key = keygen(&dir, name);
    let ran = bay(
        &world.admin,
        "admin",
        &["enrol", "approver", name, &format!("{}.pub", key.display())],
    );
    assert_eq!(ran.code, 0, "{ran:?}");
    let clone = world.clone_as(name);
    git(&clone, &["config", "bay.approverName", name]);
    git(&clone, &["config", "bay.approverKey", path(&key)]);
    clone
}

#[test]
fn a_change_to_approval_paths_waits_for_a_yes_and_holds_up_no_one() {
    let world = approval_world();
    let ann = world.clone_as("ann");
    let (billing, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    // The change elsewhere, queued behind it, merges past the one that waits.
    let (other, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    let before = kinds(&world, &billing);
    runner_once(&world);
    assert_eq!(world.merges_of(&other), 1);
    assert_eq!(kinds(&world, &billing), before, "passed over, not taken up");
    assert_eq!(world.merges_of(&billing), 0);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.code, 10, "{status:?}");
    assert_eq!(status.doc["decision"], "blocked", "{status:?}");
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let detail = &status.doc["detail"];
    assert_eq!(detail["lands_by"], "executor", "{detail}");
    let approval = &detail["approval"];
    let candidate = world
        .chain(&billing)
        .iter()
        .rev()
        .find(|step| step["kind"] == "candidate")
        .cloned()
        .expect("a candidate step");
    assert_eq!(approval["commit"], candidate["commit"], "{approval}");
    assert_eq!(approval["tree"], candidate["tree"], "{approval}");
    assert_eq!(approval["checks"][0]["check"], "billing-approval");
    assert!(
        approval["checks"][0]["why"]
            .as_str()
            .is_some_and(|why| why.contains("no key registry")),
        "without a registry no approval can count: {approval}"
    );
    assert_eq!(
        detail["operation"]["approval"]["approve"],
        format!("bay approve {billing}")
    );
    assert!(
        detail["operation"]["approval"]["record"]
            .as_str()
            .is_some_and(|cmd| cmd.starts_with("bay evidence record --kind approval")),
        "{detail}"
    );
    // The files check ran and passed; the wait is recorded once.
    let steps = kinds(&world, &billing);
    assert_eq!(
        steps.iter().filter(|k| *k == "check").count(),
        1,
        "{steps:?}"
    );
    assert_eq!(
        steps.last().map(String::as_str),
        Some("release"),
        "{steps:?}"
    );

    // `merge --wait` says the same and returns.
    let waited = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(waited.doc["reason"], "APPROVAL_PENDING", "{waited:?}");
    assert_eq!(world.merges_of(&billing), 0);
}

#[test]
fn an_enrolled_approvers_yes_merges_the_same_candidate_without_running_its_checks_again() {
    let world = approval_world();
    let alice = enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    let (billing, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");

    // Nothing waits yet: approving is refused, as `failed` with why and what to do.
    let early = bay(&alice, "alice", &["approve", &billing]);
    assert_eq!(early.code, 20, "{early:?}");
    assert!(early.doc["detail"]["recovery"].is_string(), "{early:?}");

    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let approval = &status.doc["detail"]["approval"];
    assert_eq!(
        approval["checks"][0]["approvers"],
        serde_json::json!(["alice"])
    );
    let waited_on = approval["commit"].as_str().expect("a candidate").to_owned();
    let checks_before = kinds(&world, &billing)
        .iter()
        .filter(|k| *k == "check")
        .count();

    // A name the registry does not enrol as an approver signs nothing that counts: refused.
    let mallory = world.clone_as("mallory");
    let dir = world.root.path().join("keys");
    let stray = keygen(&dir, "mallory");
    git(&mallory, &["config", "bay.approverName", "mallory"]);
    git(&mallory, &["config", "bay.approverKey", path(&stray)]);
    let refused = bay(&mallory, "mallory", &["approve", &billing]);
    assert_eq!(refused.code, 20, "{refused:?}");
    assert!(
        refused.doc["detail"]["why"]
            .as_str()
            .is_some_and(|why| why.contains("not enrolled")),
        "{refused:?}"
    );
    assert_eq!(world.evidence_lines("mallory"), 0);

    let approved = bay(
        &alice,
        "alice",
        &["approve", &billing, "--why", "refunds look right"],
    );
    assert_eq!(approved.code, 0, "{approved:?}");
    assert_eq!(approved.doc["detail"]["commit"], waited_on.as_str());
    assert_eq!(approved.doc["detail"]["lands_by"], "executor");
    assert_eq!(approved.doc["detail"]["trust"], "signed");
    let records = world.evidence("alice");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["kind"], "approval");
    assert_eq!(records[0]["commit"], waited_on.as_str());
    assert_eq!(records[0]["why"], "refunds look right");
    assert!(records[0]["signature"].is_string());
    // Again: the same yes is already there, and nothing more is written.
    let again = bay(
        &alice,
        "alice",
        &["approve", &billing, "--why", "refunds look right"],
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(world.evidence_lines("alice"), 1);

    runner_once(&world);
    assert_eq!(world.merges_of(&billing), 1);
    let main = world.remote_ref("refs/heads/main").expect("main");
    assert_eq!(main, waited_on, "the very candidate that waited merged");
    let steps = kinds(&world, &billing);
    assert_eq!(
        steps.iter().filter(|k| *k == "check").count(),
        checks_before,
        "no check ran again: {steps:?}"
    );
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(
        status.doc["detail"]["approvals"][0]["approver"], "alice",
        "{status:?}"
    );
}

#[test]
fn a_signed_no_blocks_the_change_naming_the_approver_and_a_hand_record_counts_too() {
    let world = approval_world();
    let alice = enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    let (billing, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    let rejected = bay(
        &alice,
        "alice",
        &["reject", &billing, "--why", "The refund rule is wrong"],
    );
    assert_eq!(rejected.code, 0, "{rejected:?}");
    assert_eq!(rejected.doc["detail"]["lands_by"], "author_repairs");
    runner_once(&world);
    assert_eq!(world.merges_of(&billing), 0);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_FAILED", "{status:?}");
    assert_eq!(status.doc["detail"]["checks"][0]["approver"], "alice");
    assert_eq!(status.doc["detail"]["lands_by"], "author_repairs");
    assert_eq!(
        status.doc["detail"]["checks"][0]["why"],
        "The refund rule is wrong"
    );

    // A second change: a yes recorded by hand, on the candidate, counts as `bay approve`'s.
    let (second, view) = world.submit(&ann, "ann", "rates", "billing/rates.txt", "3\n");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let commit = status.doc["detail"]["approval"]["commit"]
        .as_str()
        .expect("a candidate")
        .to_owned();
    // The candidate hangs on the change's record.
    git(
        &alice,
        &[
            "fetch",
            "--quiet",
            "origin",
            &format!("refs/bay/changes/{second}"),
        ],
    );
    let by_hand = bay(
        &alice,
        "alice",
        &[
            "evidence",
            "record",
            "--kind",
            "approval",
            "--verdict",
            "pass",
            "--commit",
            &commit,
            "--check",
            "billing-approval",
            "--environment",
            "people",
        ],
    );
    assert_eq!(by_hand.code, 0, "{by_hand:?}");
    assert_eq!(by_hand.doc["detail"]["trust"], "signed", "{by_hand:?}");
    runner_once(&world);
    assert_eq!(world.merges_of(&second), 1);
}

#[test]
fn waiting_lists_what_waits_for_this_approver_with_its_candidate_paths_and_diff() {
    let world = approval_world();
    let alice = enrolled_approver(&world, "alice");
    // Nothing waits: ok, with an empty list.
    let empty = bay(&alice, "alice", &["waiting"]);
    assert_eq!(empty.code, 0, "{empty:?}");
    assert_eq!(empty.doc["detail"]["waiting"], serde_json::json!([]));

    let ann = world.clone_as("ann");
    let (billing, view) = world.edited(
        &ann,
        "ann",
        "refunds",
        "billing/rates.txt",
        "2\n3\n",
        &["--paths", "src/greeting.txt"],
    );
    write(&view, "src/greeting.txt", "Hi\n");
    write(&view, "billing/notes.txt", "new\n");
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");

    let listed = bay(&alice, "alice", &["waiting"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let waiting = listed.doc["detail"]["waiting"].as_array().expect("a list");
    assert_eq!(waiting.len(), 1, "{listed:?}");
    let item = &waiting[0];
    assert_eq!(item["change"], billing.as_str());
    assert_eq!(item["intent"], "refunds");
    assert_eq!(item["actor"], "ann");
    assert_eq!(
        item["paths"],
        serde_json::json!(["billing/notes.txt", "billing/rates.txt"])
    );
    assert_eq!(item["checks"][0]["check"], "billing-approval");
    // One file added, two changed ("1" to "2\n3", "Hello" to "Hi"), none removed.
    assert_eq!(
        item["diff"]["summary"],
        serde_json::json!({
            "files": 3, "added": 1, "changed": 2, "removed": 0,
            "lines_added": 4, "lines_removed": 2,
        }),
        "{item}"
    );
    assert_eq!(item["commit"], status.doc["detail"]["approval"]["commit"]);

    // Once main's policy names only bob, both changes (the first built again on the new main)
    // owe bob's yes: none is listed to alice; without a name, both are.
    let bob_only = policy(&APPROVAL_CHECK.replace(
        "when_paths = [\"billing/\"]\n",
        "when_paths = [\"billing/\"]\nproducers = [\"bob\"]\n",
    ));
    write(
        &world.admin,
        ".bay/policy.toml",
        &bob_only.replace("revision = 1", "revision = 2"),
    );
    git(&world.admin, &["commit", "--quiet", "-am", "only bob"]);
    git(&world.admin, &["push", "--quiet", "origin", "main"]);
    let (_, view) = world.submit(&ann, "ann", "more", "billing/more.txt", "4\n");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let listed = bay(&alice, "alice", &["waiting"]);
    assert_eq!(
        listed.doc["detail"]["waiting"],
        serde_json::json!([]),
        "{listed:?}"
    );
    git(&alice, &["config", "--unset", "bay.approverName"]);
    let everyone = bay(&alice, "alice", &["waiting"]);
    assert_eq!(
        everyone.doc["detail"]["waiting"].as_array().map(Vec::len),
        Some(2)
    );
}

#[test]
fn a_yes_carries_to_a_later_candidate_while_the_approved_files_stay_the_same() {
    let world = approval_world();
    let alice = enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    let (billing, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    // Main moves under it with a change elsewhere, then alice approves what waited.
    world.merged("bob", "greet", "src/greeting.txt", "Hi\n");
    let approved = bay(&alice, "alice", &["approve", &billing]);
    assert_eq!(approved.code, 0, "{approved:?}");
    let approved_commit = approved.doc["detail"]["commit"].clone();

    runner_once(&world);
    assert_eq!(
        world.merges_of(&billing),
        1,
        "the yes held for the new candidate"
    );
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_ne!(
        status.doc["detail"]["commit"], approved_commit,
        "a later candidate merged"
    );
    let carried = &status.doc["detail"]["carried_approvals"][0];
    assert_eq!(carried["approver"], "alice", "{status:?}");
    assert!(carried["carried_from"].is_string(), "{carried}");

    // A second change: main changes a file under billing/ before the yes; it is set aside.
    let (second, view) = world.submit(&ann, "ann", "rates", "billing/rates.txt", "3\n");
    runner_once(&world);
    git(&world.admin, &["pull", "--quiet", "origin", "main"]);
    write(&world.admin, "billing/fees.txt", "5\n");
    git(&world.admin, &["add", "billing/fees.txt"]);
    git(&world.admin, &["commit", "--quiet", "-m", "fees by hand"]);
    git(&world.admin, &["push", "--quiet", "origin", "main"]);
    let approved = bay(&alice, "alice", &["approve", &second]);
    assert_eq!(approved.code, 0, "{approved:?}");
    runner_once(&world);
    assert_eq!(world.merges_of(&second), 0);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let set_aside = &status.doc["detail"]["approval"]["checks"][0]["set_aside"];
    assert_eq!(
        set_aside["paths"],
        serde_json::json!(["billing/fees.txt"]),
        "{status:?}"
    );
}

/// A no stops a yes from carrying only on the same files: once the author repaired them and
/// a yes came for the repair, that yes carries to a candidate built after main moved.
#[test]
fn a_no_on_files_since_repaired_does_not_stop_a_later_yes_from_carrying() {
    let world = approval_world();
    let alice = enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    let (billing, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    let rejected = bay(&alice, "alice", &["reject", &billing, "--why", "wrong"]);
    assert_eq!(rejected.code, 0, "{rejected:?}");
    runner_once(&world);
    // The author repairs the file and asks again; alice says yes to the repair.
    write(&view, "billing/rates.txt", "4\n");
    let again = bay(&view, "ann", &["merge"]);
    assert_eq!(again.doc["decision"], "queued", "{again:?}");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    world.merged("bob", "greet", "src/greeting.txt", "Hi\n");
    let approved = bay(&alice, "alice", &["approve", &billing]);
    assert_eq!(approved.code, 0, "{approved:?}");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(
        status.doc["detail"]["carried_approvals"][0]["approver"], "alice",
        "{status:?}"
    );
}

#[test]
fn max_waiting_approvals_refuses_a_change_that_needs_one_more_and_never_another() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("billing/rates.txt", "1\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy(&format!(
                "{APPROVAL_CHECK}\n[limits]\nmax_waiting_approvals = 1\n"
            )),
            false,
        ),
        (".bay/check", CHECK, true),
    ]);
    let ann = world.clone_as("ann");
    let (first, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    // This clone's records: the flow shows the queue of waits.
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let status = bay(&ann, "ann", &["status"]);
    assert_eq!(
        status.doc["detail"]["flow"]["waiting_approval"]["count"], 1,
        "{status:?}"
    );
    assert_eq!(
        status.doc["detail"]["flow"]["waiting_approval"]["oldest"]["change"],
        first.as_str()
    );

    let (_, second) = world.edited(&ann, "ann", "fees", "billing/fees.txt", "3\n", &[]);
    let refused = bay(&second, "ann", &["merge"]);
    assert_eq!(refused.doc["reason"], "WIP_LIMIT", "{refused:?}");
    let review = &refused.doc["detail"]["review"];
    assert_eq!(
        (review["waiting"].clone(), review["max"].clone()),
        (1.into(), 1.into())
    );
    assert_eq!(review["oldest"]["change"], first.as_str(), "{review}");
    // A change that needs no approval is never held by the cap.
    let (other, _) = world.submit(&ann, "ann", "greet", "src/greeting.txt", "Hi\n");
    runner_once(&world);
    assert_eq!(world.merges_of(&other), 1);
}

/// The cap is main's, as the spec says ("reads the cap from main"): a change started before
/// main set it is held to it all the same.
#[test]
fn max_waiting_approvals_is_read_from_main_not_the_drafts_base() {
    let world = approval_world();
    let ann = world.clone_as("ann");
    world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    let (_, second) = world.edited(&ann, "ann", "fees", "billing/fees.txt", "3\n", &[]);
    // Main sets the cap after the second change's base.
    let capped = policy(&format!(
        "{APPROVAL_CHECK}\n[limits]\nmax_waiting_approvals = 1\n"
    ));
    write(&world.admin, ".bay/policy.toml", &capped);
    git(
        &world.admin,
        &["commit", "--quiet", "-am", "cap the waits for a yes"],
    );
    git(&world.admin, &["push", "--quiet", "origin", "HEAD:main"]);
    let refused = bay(&second, "ann", &["merge"]);
    assert_eq!(refused.doc["reason"], "WIP_LIMIT", "{refused:?}");
    assert_eq!(refused.doc["detail"]["review"]["max"], 1, "{refused:?}");
}

#[test]
fn without_a_runner_the_authors_merge_wait_waits_then_merges_once_approved() {
    let world = approval_world();
    enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    let (billing, view) = world.edited(&ann, "ann", "refunds", "billing/rates.txt", "2\n", &[]);
    let waited = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(waited.code, 10, "{waited:?}");
    assert_eq!(waited.doc["reason"], "APPROVAL_PENDING", "{waited:?}");
    assert_eq!(waited.doc["detail"]["lands_by"], "author", "{waited:?}");
    assert!(
        waited.doc["say"]
            .as_str()
            .is_some_and(|say| say.contains("`bay merge --wait`")),
        "{waited:?}"
    );
    // alice approves on the author's machine, whose clone holds the view: it lands from here.
    let key = world.root.path().join("keys").join("alice");
    git(&ann, &["config", "bay.approverName", "alice"]);
    git(&ann, &["config", "bay.approverKey", path(&key)]);
    let approved = bay(&ann, "alice", &["approve", &billing]);
    assert_eq!(approved.code, 0, "{approved:?}");
    assert_eq!(approved.doc["detail"]["lands_by"], "here", "{approved:?}");
    let say = approved.doc["say"].as_str().unwrap_or_default();
    assert!(say.contains("in this clone"), "{say}");
    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(world.merges_of(&billing), 1);
    assert_eq!(
        merged.doc["detail"]["commit"], approved.doc["detail"]["commit"],
        "the candidate approved is the one merged"
    );
}

#[test]
fn a_waiver_lets_one_failed_check_through_on_that_candidate_never_as_a_pass() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("billing/rates.txt", "1\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy(&format!("waivable = true\n{APPROVAL_CHECK}")),
            false,
        ),
        (".bay/check", CHECK, true),
    ]);
    let alice = enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    // An empty file under src/ fails the files check.
    let (change, view) = world.submit(&ann, "ann", "blank", "src/blank.txt", "");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "CHECK_FAILED", "{status:?}");
    // `bay waiting` lists the waivable check, its real verdict and the command.
    let listed = bay(&alice, "alice", &["waiting"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let item = &listed.doc["detail"]["waiting"][0];
    assert_eq!(item["change"], change.as_str(), "{listed:?}");
    assert_eq!(item["waivable"][0]["check"], "files");
    assert_eq!(item["waivable"][0]["verdict"], "product_failure");
    assert_eq!(
        item["waivable"][0]["waive"],
        format!("bay approve {change} --waive files --why <text>")
    );
    // Listed to anyone with no `bay.approverName`, never to an approver name the registry
    // does not enrol.
    let anyone = bay(&ann, "ann", &["waiting"]);
    assert_eq!(
        anyone.doc["detail"]["waiting"][0]["change"],
        change.as_str()
    );
    git(&ann, &["config", "bay.approverName", "mallory"]);
    let stranger = bay(&ann, "ann", &["waiting"]);
    assert_eq!(
        stranger.doc["detail"]["waiting"],
        serde_json::json!([]),
        "{stranger:?}"
    );

    // A waiver needs a reason.
    let bare = bay(&alice, "alice", &["approve", &change, "--waive", "files"]);
    assert_eq!(bare.code, 20, "{bare:?}");
    let waived = bay(
        &alice,
        "alice",
        &[
            "approve",
            &change,
            "--waive",
            "files",
            "--why",
            "Runner out of disk; OPS-12",
        ],
    );
    assert_eq!(waived.code, 0, "{waived:?}");
    assert_eq!(waived.doc["detail"]["lands_by"], "author");
    let say = waived.doc["say"].as_str().unwrap_or_default();
    assert!(
        say.contains("waiver (files)") && say.contains("no pass"),
        "{say}"
    );
    let records = world.evidence("alice");
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0]["kind"], "waiver");
    assert_eq!(records[0]["verdict"], "unknown", "a waiver is never a pass");
    assert_eq!(records[0]["waived_verdict"], "product_failure");

    // The author asks again: the same candidate's content merges, the check named as a gap.
    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    let gaps = merged.doc["detail"]["coverage_gaps"]
        .as_array()
        .expect("gaps");
    let gap = gaps
        .iter()
        .find(|gap| gap["waived_by"] == "alice")
        .expect("the waiver is a gap");
    assert_eq!(gap["check"], "files");
    assert_eq!(gap["verdict"], "product_failure");
    assert_eq!(gap["why"], "Runner out of disk; OPS-12");
    let say = merged.doc["say"].as_str().unwrap_or_default();
    assert!(
        say.contains("did not pass") && say.contains("waived"),
        "{say}"
    );
}

#[test]
fn a_change_to_the_policy_owes_a_yes_under_its_own_policy_too() {
    let world = approval_world();
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(
        &ann,
        "ann",
        "ask for src",
        "src/greeting.txt",
        "Hi\n",
        &["--paths", ".bay/policy.toml"],
    );
    let own = policy(&format!(
        "{APPROVAL_CHECK}\n[[check]]\nid = \"src-approval\"\nenvironment = \"people\"\n\
         kind = \"approval\"\nwhen_paths = [\"src/\"]\n"
    ))
    .replace("revision = 1", "revision = 2");
    write(&view, ".bay/policy.toml", &own);
    let merge = bay(&view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    runner_once(&world);
    assert_eq!(world.merges_of(&change), 0);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    assert_eq!(
        status.doc["detail"]["approval"]["checks"][0]["check"], "src-approval",
        "{status:?}"
    );
}

/// A change whose `baseline = "base"` check fails on its base too (an empty file on main)
/// waits for a `carry = false` yes; once given, the runner merges that very candidate. Before,
/// a recorded product failure kept the candidate from being taken up again: the runner built
/// a new one at every claim, and the yes, given for the one before, never counted.
#[test]
fn a_yes_on_a_candidate_whose_failures_its_base_shares_merges_it_with_carry_off() {
    let approval = APPROVAL_CHECK.replace(
        "when_paths = [\"billing/\"]\n",
        "when_paths = [\"billing/\"]\ncarry = false\n",
    );
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/empty", "", false),
        ("billing/rates.txt", "1\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy(&format!("baseline = \"base\"\n{approval}")),
            false,
        ),
        (".bay/check", CHECK, true),
    ]);
    let alice = enrolled_approver(&world, "alice");
    let ann = world.clone_as("ann");
    let (billing, view) = world.submit(&ann, "ann", "refunds", "billing/rates.txt", "2\n");
    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["reason"], "APPROVAL_PENDING", "{status:?}");
    let waited_on = status.doc["detail"]["approval"]["commit"]
        .as_str()
        .expect("a candidate")
        .to_owned();
    let approved = bay(&alice, "alice", &["approve", &billing]);
    assert_eq!(approved.code, 0, "{approved:?}");

    runner_once(&world);
    let status = bay(&view, "ann", &["status"]);
    assert_eq!(status.doc["decision"], "merged", "{status:?}");
    assert_eq!(world.merges_of(&billing), 1);
    let main = world.remote_ref("refs/heads/main").expect("main");
    assert_eq!(main, waited_on, "the very candidate that waited merged");
}
