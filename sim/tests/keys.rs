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
use bay_core::machine::{Action, Completion, Event, Machine};
use bay_core::reason::ReasonCode;
use bay_core::result::{Decision, OpState};
use bay_core::time::Timestamp;
use bay_core::trust::Keys as TrustKeys;
use bay_core::trust::record::KeySetting;
use bay_core::trust::registry::{Class, Enrolment, REF, Reason, judge_chain};
use bay_sim::bench::{Bench, MAIN, passing_exit};
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
    Runner::new(cfg, Timestamp(clock))
}

/// Runs `runner` at `clock` until it waits, answering each check with a pass; `on_check`
/// is called before each is answered with how many ran before. Returns the checks it ran.
fn run(
    bench: &mut Bench,
    runner: &mut Runner,
    clock: u64,
    on_check: &mut dyn FnMut(&mut Bench, usize),
) -> Vec<String> {
    let now = Timestamp(clock);
    runner.handle(now, Event::Tick).expect("a faithful driver");
    let mut checks = Vec::new();
    while let Some((id, action)) = runner.poll_action() {
        let completion = match &action {
            Action::RunCheck(run) => {
                on_check(bench, checks.len());
                checks.push(run.check.id.clone());
                Completion::CheckExited(passing_exit(&action))
            }
            _ => bench.answer(&action).expect("the model answers"),
        };
        runner
            .handle(now, Event::Done(id, completion))
            .expect("a faithful driver");
    }
    checks
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
