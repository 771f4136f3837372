//! A runner's key taken out of the registry after it signed a candidate: the merge is never
//! pushed with that signature (`REGISTRY_CHANGED`), and a runner with a valid key signs the
//! same tree on the same parent again, with no check run again. Against the simulator's Git
//! model, with real SSHSIG signatures that core verifies.

use bay_core::check::plan::parse_policy;
use bay_core::git::refs;
use bay_core::id::OpId;
use bay_core::machine::enrol::{Enrol, EnrolInput};
use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::runner_keys::{RunnerKeys, RunnerKeysInput};
use bay_core::machine::{Completion, Event, Machine};
use bay_core::reason::ReasonCode;
use bay_core::result::{Decision, OpState};
use bay_core::time::Timestamp;
use bay_core::trust::Keys as TrustKeys;
use bay_core::trust::record::KeySetting;
use bay_core::trust::registry::{Class, Enrolment, REF, Reason, judge_chain};
use bay_sim::bench::{
    Bench, MAIN, drain_passing as drain, passing_exit, run_passing as run, until_check,
};
use bay_sim::keys;

const POLICY: &str = "revision = 1\n\n[[check]]\nid = \"unit\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\nmaterialize_timeout_s = 10\n";

fn enrol(bench: &mut Bench, request: Enrolment) {
    let input = EnrolInput {
        request,
        signer: bench.git.keys.public("admin"),
        key_path: keys::path("admin"),
    };
    let mut enrol = Enrol::new(input, Timestamp(1_000));
    bench.run(&mut enrol);
    let result = enrol.outcome().expect("enrolled");
    assert_eq!(result.decision, Decision::Ok, "{result:?}");
}

/// A registry with the key `admin` and, for each runner, an executor and a producer key.
fn registry(bench: &mut Bench, runners: &[&str]) {
    let admin = bench.git.keys.public("admin");
    enrol(
        bench,
        Enrolment::Add {
            class: Class::Registry,
            name: "admin".into(),
            key: admin,
        },
    );
    for runner in runners {
        for (class, key) in [(Class::Executor, "executor"), (Class::Producer, "producer")] {
            let key = bench.git.keys.public(&format!("{runner}.{key}"));
            let name = (*runner).to_owned();
            enrol(bench, Enrolment::Add { class, name, key });
        }
    }
}

/// A runner named `name` with its keys judged as `bay runner run` judges them.
fn runner(bench: &mut Bench, name: &str, clock: u64) -> Runner {
    runner_with(bench, name, clock, |_| {})
}

/// A runner as [`runner`] makes one, its config then changed by `tweak`.
fn runner_with(
    bench: &mut Bench,
    name: &str,
    clock: u64,
    tweak: impl FnOnce(&mut RunnerConfig),
) -> Runner {
    let setting = |bench: &mut Bench, key: &str| {
        let key = format!("{name}.{key}");
        Some(KeySetting {
            path: keys::path(&key),
            public: Ok(bench.git.keys.public(&key)),
        })
    };
    let input = RunnerKeysInput {
        runner: name.into(),
        main: MAIN.into(),
        executor: setting(bench, "executor"),
        producer: setting(bench, "producer"),
    };
    let mut keys = RunnerKeys::new(input, Timestamp(clock));
    bench.run(&mut keys);
    let mut cfg = RunnerConfig::new(name, MAIN, clock);
    cfg.signer = keys.signer().cloned();
    assert!(cfg.signer.is_some(), "{:?}", keys.outcome());
    tweak(&mut cfg);
    Runner::new(cfg, Timestamp(clock))
}

/// A change checked by runner `a` under `policy`, whose executor key the registry takes out
/// while its last check runs; then runner `b`, whose key is valid, takes the operation up.
/// Returns the checks each ran, and the bench.
fn revoked_while_checking(policy: &str, checks: usize) -> (Bench, OpId, Vec<String>, Vec<String>) {
    let mut bench = Bench::new(Some(policy));
    registry(&mut bench, &["a", "b"]);
    let op = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let base = bench.main();
    let mut a = runner(&mut bench, "a", 1_000_000);
    let mut b = runner(&mut bench, "b", 1_000_000);
    let ran_a = run(&mut bench, &mut a, 1_000_000, &mut |bench, before| {
        if before + 1 == checks {
            let remove = Enrolment::Remove {
                class: Class::Executor,
                name: "a".into(),
                reason: Reason::Revoked,
            };
            enrol(bench, remove);
        }
    });
    assert_eq!(
        bench.main(),
        base,
        "nothing lands with a removed key's signature"
    );
    let record = bench.record(&op.change);
    let operation = record.op(&op).expect("the operation");
    assert_eq!(operation.released, Some(ReasonCode::RegistryChanged));
    assert_eq!(operation.owner, None);
    assert!(!operation.state.is_terminal(), "{:?}", operation.state);
    // a claims nothing more.
    assert!(run(&mut bench, &mut a, 1_100_000, &mut |_, _| {}).is_empty());
    assert_eq!(bench.main(), base);
    let ran_b = run(&mut bench, &mut b, 1_100_000, &mut |_, _| {});
    (bench, op, ran_a, ran_b)
}

#[test]
fn a_key_removed_after_it_signed_lands_nothing_and_another_runner_signs_the_same_tree() {
    let (bench, op, ran_a, ran_b) = revoked_while_checking(POLICY, 1);
    assert_eq!(ran_a, ["unit"]);
    assert!(ran_b.is_empty(), "no check runs again: {ran_b:?}");
    assert_eq!(bench.state(&op), (OpState::Merged, None));
    let record = bench.record(&op.change);
    let operation = record.op(&op).expect("the operation");
    let [signed, again] = &operation.candidates[..] else {
        panic!("two candidates: {:?}", operation.candidates);
    };
    let merged = bench.main();
    assert_eq!(merged, again.commit);
    assert_ne!(merged, signed.commit, "signed again: a new commit");
    let commit = bench.git.store.get(&merged).expect("the merge").clone();
    assert_eq!(
        (commit.tree, commit.parents),
        (signed.tree.clone(), vec![signed.base.clone()])
    );
    // The merge verifies as signed against the registry as it is now.
    let tip = bench.git.remote.get(REF).expect("a registry").clone();
    let version = judge_chain(&bench.git.read_registry(&tip).expect("read")).expect("judged");
    let policy = parse_policy(POLICY.as_bytes()).expect("a policy");
    let trust = TrustKeys {
        registry: Some(&version),
        signing: policy.signing,
    };
    let raw = bench.git.raw_commit(&merged).expect("raw");
    assert_eq!(trust.commit(&raw), bay_core::trust::Trust::Signed);
    assert!(bench.git.remote.get(&refs::landed(&op.change)).is_some());
}

#[test]
fn signed_again_only_a_check_keyed_to_the_commit_runs_again() {
    let policy = format!(
        "{POLICY}\n[[check]]\nid = \"message\"\nenvironment = \"sim\"\ncommand = \"checks/run\"\nadapter = [\"checks/\"]\nexpected_minimum = 2\ntimeout_s = 100\nmaterialize_timeout_s = 10\ninputs = [\"commit\"]\n"
    );
    let (bench, op, ran_a, ran_b) = revoked_while_checking(&policy, 2);
    assert_eq!(ran_a, ["unit", "message"]);
    assert_eq!(
        ran_b,
        ["message"],
        "the tree's pass stands, the commit's does not"
    );
    assert_eq!(bench.state(&op), (OpState::Merged, None));
}

/// Two changes queued under a registry that signs everything and `policy`: runner `a` claims the head and holds its check out; runner `b`, checking
/// ahead with its producer key signing as `producer_key` says, checks the second early. Then
/// `a`'s check passes, the head merges, and `a` takes the second up. Returns the checks `a`
/// ran for the second, and whether it merged.
fn checked_ahead_under_a_registry(policy: &str, producer_key: Option<&str>) -> (Vec<String>, bool) {
    let mut bench = Bench::new(Some(policy));
    registry(&mut bench, &["a", "b"]);
    let first = bench.submit("fix a", &[("src/a.txt", "a fixed\n")]);
    let second = bench.submit("fix b", &[("src/b.txt", "b fixed\n")]);
    let reuse = |cfg: &mut RunnerConfig| cfg.evidence_reuse = true;
    let mut a = runner_with(&mut bench, "a", 1_000_000, reuse);
    let mut b = runner_with(&mut bench, "b", 1_000_000, |cfg| {
        cfg.evidence_reuse = true;
        cfg.ahead = 2;
        if let (Some(key), Some(signer)) = (producer_key, cfg.signer.as_mut()) {
            signer.producer_key = keys::path(key);
        }
    });
    let now = Timestamp(1_000_000);
    let head = until_check(&mut bench, &mut a, 1_000_000, true).expect("a checks the head");
    let early = run(&mut bench, &mut b, 1_000_000, &mut |_, _| {});
    assert_eq!(early, ["unit"], "b checks the second early");
    assert_eq!(bench.state(&second).0, OpState::Submitted, "b owns nothing");
    let (id, check) = head;
    a.handle(
        now,
        Event::Done(id, Completion::CheckExited(passing_exit(&check))),
    )
    .expect("a faithful driver");
    drain(&mut bench, &mut a, now, &mut |_, _| {});
    assert_eq!(bench.state(&first), (OpState::Merged, None));
    let ran = run(&mut bench, &mut a, 1_010_000, &mut |_, _| {});
    (ran, bench.state(&second) == (OpState::Merged, None))
}

#[test]
fn under_a_registry_that_signs_everything_a_signed_early_pass_is_reused() {
    // The policy does not set `reuse_unsigned`: the registry stands in for it.
    let (ran, merged) = checked_ahead_under_a_registry(POLICY, None);
    assert!(ran.is_empty(), "b's signed pass answers: {ran:?}");
    assert!(merged);
}

#[test]
fn under_a_registry_a_pass_its_producer_s_key_did_not_sign_is_run_again() {
    // b's records are signed by a key the registry never enrolled as b's producer key.
    let (ran, merged) = checked_ahead_under_a_registry(POLICY, Some("thief"));
    assert_eq!(ran, ["unit"], "the check runs on the real candidate");
    assert!(merged);
    // Under such a registry `reuse_unsigned = true` changes nothing.
    let policy = format!("{POLICY}\n[policy]\nreuse_unsigned = true\n");
    let (ran, merged) = checked_ahead_under_a_registry(&policy, Some("thief"));
    assert_eq!(ran, ["unit"], "still run again");
    assert!(merged);
}
