//! The driver contract on bay's two arms. Real Git is the oracle: its observations are the
//! golden file, and the simulator's model must see exactly the same.
//!
//! `BAY_BLESS=1 cargo test -p bay-conformance --test contract` rewrites the golden file from
//! real Git; review its diff like code.

mod arms;

use std::collections::BTreeSet;

use arms::git::GitArm;
use arms::sim::SimArm;
use bay_conformance::contract::{self, Report};
use bay_sim::remote::Flaw;

fn golden_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/contract.json")
}

fn summary(arm: &str, report: &Report) {
    println!(
        "{arm} arm: {} of {} contract cases match Git",
        report.matching(),
        report.cases.len()
    );
}

#[test]
fn real_git_through_the_driver_sees_what_the_golden_file_holds() {
    let report = contract::run(GitArm::new);
    if std::env::var_os("BAY_BLESS").is_some() {
        let text = serde_json::to_string_pretty(&report.observed()).expect("observations print");
        std::fs::write(golden_path(), text + "\n").expect("the golden file is written");
        return;
    }
    summary("git", &report);
    report.assert_conforms();
}

#[test]
fn the_simulator_s_model_sees_what_git_sees() {
    let report = contract::run(SimArm::default);
    summary("sim", &report);
    report.assert_conforms();
}

#[test]
fn every_case_has_a_golden_observation_and_every_observation_a_case() {
    let cases: BTreeSet<String> = contract::cases()
        .iter()
        .map(|c| c.name.to_owned())
        .collect();
    let golden: BTreeSet<String> = contract::golden().into_keys().collect();
    assert_eq!(cases, golden, "bless the golden file from real Git");
}

/// The cases a flawed model fails.
fn failing(flaw: Flaw) -> BTreeSet<String> {
    contract::run(|| SimArm::flawed(flaw))
        .cases
        .into_iter()
        .filter(|c| !c.matches())
        .map(|c| c.name)
        .collect()
}

#[test]
fn a_model_whose_atomic_pushes_apply_half_fails_the_contract() {
    let failed = failing(Flaw::NonAtomicPush);
    assert!(
        failed.contains("push: one stale lease fails the whole atomic push"),
        "{failed:?}"
    );
}

#[test]
fn a_model_whose_create_only_refs_overwrite_fails_the_contract() {
    let failed = failing(Flaw::CreateOverwrites);
    assert!(
        failed.contains("push: create-only on a taken name"),
        "{failed:?}"
    );
}

/// A known difference, kept visible: Git reports a ref that already holds the pushed value as
/// "up to date" before it looks at the lease, so a push whose lease no longer holds but whose
/// ref already has the new value is accepted by Git and refused by the model. bay's new values
/// are fresh commits (every step has a nonce), so only a replay of a push that already landed
/// meets this, and then "accepted" is what happened.
#[test]
fn known_difference_a_ref_already_at_its_new_value_ignores_its_lease() {
    use bay_conformance::Arm;
    use bay_core::machine::{
        Action, Completion, Expect, NewValue, PushOutcome, PushPlan, RefUpdate,
    };
    fn push(arm: &mut dyn Arm) -> PushOutcome {
        let a = arm.commit(&[], &[("file", "A")], "A");
        let b = arm.commit(&[], &[("file", "B")], "B");
        arm.set_remote_ref("refs/bay/x", Some(&a));
        let plan = PushPlan {
            updates: vec![RefUpdate {
                name: "refs/bay/x".into(),
                expect: Expect::Is(b),
                new: NewValue::Oid(a),
            }],
            atomic: true,
            ..PushPlan::default()
        };
        match arm.execute(&Action::Push(plan)) {
            Completion::Pushed(report) => report.outcome,
            other => panic!("a push answered {other:?}"),
        }
    }
    assert_eq!(
        push(&mut SimArm::default()),
        PushOutcome::Rejected {
            refs: vec!["refs/bay/x".into()]
        }
    );
    assert_eq!(push(&mut GitArm::new()), PushOutcome::Accepted);
}
