//! Evidence reuse: a record already on the remote answers instead of a run.
//!
//! - `[policy] evidence_reuse = "exact-inputs"` in the config, with a key registry that signs
//!   everything, or else the policy's `reuse_unsigned = true`: a pass already recorded on
//!   exactly the inputs a run would have is not run again. Under such a registry only a
//!   record whose signature verifies counts ([`signed_only`]), whatever `reuse_unsigned`
//!   says. Exactly the inputs: the same check and
//!   environment; the same tree (or, for a check whose evidence counts only for one commit,
//!   the same commit); and the same base tree, which pins the policy and the `adapter` files
//!   the check ran with (and with them its definition).
//! - `baseline = "base"`: the base's own record of the check (made when the base was a
//!   candidate, with the same definition) says what fails on the base, so the check need not
//!   run there.
//!
//! A record from a producer the check's `producers` leaves out never counts.

use std::collections::BTreeSet;

use super::{CheckTarget, CommitTree, EvidenceKey, EvidenceRecord, UnitReason, Verdict};
use crate::git::Oid;
use crate::policy::{CheckSpec, Signing};
use crate::trust::registry::Version;
use crate::trust::{Keys, Trust};

/// The records among `records` that a registry signing everything vouches for: each signed
/// by a `producer` key `registry` enrols under the record's own `producer`
/// ([`Keys::record`]). Reuse under such a registry takes no other: a record anyone could
/// have written names a producer, but only the producer's key can sign it.
pub fn signed_only(records: Vec<String>, registry: &Version) -> Vec<String> {
    let keys = Keys {
        registry: Some(registry),
        signing: Signing::All,
    };
    records
        .into_iter()
        .filter(|line| keys.record(line) == Trust::Signed)
        .collect()
}

/// The records among `records` (each one note line) of `spec`'s check and environment, by a
/// producer it allows, on exactly `target`: its tree, or its commit for a commit-keyed check.
fn records_on<'a>(
    records: &'a [String],
    spec: &'a CheckSpec,
    target: &'a CommitTree,
) -> impl Iterator<Item = EvidenceRecord> + 'a {
    let by_commit = CheckTarget::of(spec).keyed_by_commit();
    records
        .iter()
        .filter_map(|line| EvidenceRecord::from_json(line).ok())
        .filter(move |record| {
            let on_target = if by_commit {
                record.key == EvidenceKey::Commit && record.candidate.commit == target.commit
            } else {
                record.key == EvidenceKey::Tree && record.candidate.tree == target.tree
            };
            on_target
                && record.check == spec.id
                && record.environment == spec.environment
                && spec
                    .producers
                    .as_ref()
                    .is_none_or(|producers| producers.contains(&record.producer))
        })
}

/// The producer of a pass among `records` that a run of `spec` on `candidate`, made on a base
/// whose tree is `base_tree`, may reuse.
pub fn reusable_pass(
    records: &[String],
    spec: &CheckSpec,
    candidate: &CommitTree,
    base_tree: &Oid,
) -> Option<String> {
    records_on(records, spec, candidate)
        .find(|record| record.verdict == Verdict::Pass && &record.base.tree == base_tree)
        .map(|record| record.producer)
}

/// Whether a producer `spec` allows recorded a run of it, with any verdict, on exactly
/// `candidate` made on a base whose tree is `base_tree`: then an early run of it there would
/// only repeat what is known.
pub fn recorded(
    records: &[String],
    spec: &CheckSpec,
    candidate: &CommitTree,
    base_tree: &Oid,
) -> bool {
    records_on(records, spec, candidate).any(|record| &record.base.tree == base_tree)
}

/// What `spec` fails on `base`, by the base's own records among `records` made with
/// `definition` that pass or fail. A unit counts as failing there only when every such record
/// fails it, so a base that flaked never hides a failure. `None` without such a record.
pub fn failing_on_base(
    records: &[String],
    spec: &CheckSpec,
    base: &CommitTree,
    definition: &str,
) -> Option<BTreeSet<String>> {
    records_on(records, spec, base)
        .filter(|record| {
            record.definition == definition
                && matches!(record.verdict, Verdict::Pass | Verdict::ProductFailure)
        })
        .map(|record| product_failures(&record.failed))
        .reduce(|all, one| all.intersection(&one).cloned().collect())
}

/// The ids of the units that failed with `product_failure`.
pub fn product_failures(failed: &[UnitReason]) -> BTreeSet<String> {
    failed
        .iter()
        .filter(|unit| unit.verdict == Verdict::ProductFailure)
        .map(|unit| unit.id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::definition::tests::spec;
    use crate::check::{CheckExit, CheckRequest, EvidenceExtras, RequestInput, judge};
    use crate::time::Timestamp;

    fn ct(commit: char, tree: char) -> CommitTree {
        CommitTree {
            commit: Oid::parse(&commit.to_string().repeat(40)).expect("an id"),
            tree: Oid::parse(&tree.to_string().repeat(40)).expect("an id"),
        }
    }

    /// A record of `spec` run on `candidate` (base `ct('b', 'c')`) by `producer`, passing or not.
    fn record(spec: &CheckSpec, candidate: CommitTree, producer: &str, pass: bool) -> String {
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget::of(spec),
            policy_revision: "1".into(),
            candidate: candidate.clone(),
            base: ct('b', 'c'),
            changed_paths: vec![],
            change: None,
        });
        let verdict = if pass { "pass" } else { "product_failure" };
        let stdout = serde_json::json!({
            "schema": "bay.check.result/1",
            "exercised": candidate,
            "plan": {"selected": 1, "completed": 1},
            "checks": [{"id": "u", "verdict": verdict}],
        });
        let exit = CheckExit {
            stdout: stdout.to_string().into_bytes(),
            exit_code: Some(0),
            ..CheckExit::default()
        };
        let judged = judge(&request, 1, &exit).judged().cloned().expect("judged");
        let extras = EvidenceExtras {
            producer: producer.into(),
            op: String::new(),
            candidate_id: String::new(),
            at: Timestamp(1),
            definition: String::new(),
        };
        EvidenceRecord::new(&request, &judged, &exit, extras).to_json()
    }

    #[test]
    fn a_pass_on_the_same_tree_and_base_is_reused() {
        let spec = spec("");
        let candidate = ct('a', 'd');
        let records = vec![
            "not a record".to_owned(),
            record(&spec, candidate.clone(), "ci-1", true),
        ];
        let base_tree = ct('b', 'c').tree;
        assert_eq!(
            reusable_pass(&records, &spec, &candidate, &base_tree).as_deref(),
            Some("ci-1")
        );
        // Another commit with the same tree counts for a tree-keyed check.
        assert!(reusable_pass(&records, &spec, &ct('e', 'd'), &base_tree).is_some());
    }

    #[test]
    fn anything_else_is_run_again() {
        let spec = spec("");
        let candidate = ct('a', 'd');
        let base_tree = ct('b', 'c').tree;
        let failing = vec![record(&spec, candidate.clone(), "ci-1", false)];
        assert!(reusable_pass(&failing, &spec, &candidate, &base_tree).is_none());
        let passing = vec![record(&spec, candidate.clone(), "ci-1", true)];
        assert!(
            reusable_pass(&passing, &spec, &ct('a', 'e'), &base_tree).is_none(),
            "another tree"
        );
        assert!(
            reusable_pass(&passing, &spec, &candidate, &ct('9', 'f').tree).is_none(),
            "another base, so maybe another check"
        );
        let mut elsewhere = spec.clone();
        elsewhere.environment = "mac".into();
        assert!(reusable_pass(&passing, &elsewhere, &candidate, &base_tree).is_none());
        let only_ci2 = self::spec("producers = [\"ci-2\"]\n");
        assert!(
            reusable_pass(&passing, &only_ci2, &candidate, &base_tree).is_none(),
            "a producer the check does not accept"
        );
    }

    #[test]
    fn a_commit_keyed_pass_counts_only_for_its_commit() {
        let spec = spec("inputs = [\"commit\"]\n");
        let candidate = ct('a', 'd');
        let base_tree = ct('b', 'c').tree;
        let records = vec![record(&spec, candidate.clone(), "ci-1", true)];
        assert!(reusable_pass(&records, &spec, &candidate, &base_tree).is_some());
        assert!(reusable_pass(&records, &spec, &ct('e', 'd'), &base_tree).is_none());
    }

    #[test]
    fn the_base_s_own_records_say_what_fails_there() {
        let spec = spec("baseline = \"base\"\n");
        let base = ct('b', 'c');
        let failing = record(&spec, base.clone(), "ci-1", false);
        let passing = record(&spec, base.clone(), "ci-1", true);
        let on = |records: &[String], definition: &str| {
            failing_on_base(records, &spec, &base, definition)
        };
        let u = BTreeSet::from(["u".to_owned()]);
        assert_eq!(on(std::slice::from_ref(&failing), ""), Some(u));
        assert_eq!(
            on(&[failing.clone(), passing], ""),
            Some(BTreeSet::new()),
            "a unit the base also passed is no pre-existing failure"
        );
        assert_eq!(
            on(std::slice::from_ref(&failing), "another"),
            None,
            "another definition"
        );
        let elsewhere = record(&spec, ct('a', 'd'), "ci-1", false);
        assert_eq!(on(&[elsewhere], ""), None, "a record of another tree");
        assert_eq!(on(&[], ""), None);
    }
}
