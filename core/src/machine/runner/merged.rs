//! The `detail` of a merged outcome, as a runner writes it into the change's chain and
//! `bay status`, `bay merge --wait` and `bay runner run` show it. One type for the head's usual
//! path and for every member of a batch, so the two cannot drift.

use serde::Serialize;

use super::carry::CarriedCheck;
use super::gap::Gap;
use crate::approval::Counted;
use crate::check::plan::{NotRequired, Plan, PostCheck};
use crate::detail::Detail;
use crate::git::Oid;
use crate::id::CandidateId;

/// What a merged outcome names: the candidate that merged, what the plan spared or could not
/// cover, the checks and approvals carried to it, how far its evidence is trusted, and, for a
/// member of a batch, the batch whose last tree was checked in its stead.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(super) struct Merged {
    pub candidate: CandidateId,
    pub commit: Oid,
    pub tree: Oid,
    /// The candidate's first parent: main, or in a batch the member before.
    pub base: Oid,
    /// Checks the plan left out, each with why (`Plan::not_required`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_required: Vec<NotRequired>,
    /// Checks that run after the merge and so judge nothing before it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub post_checks: Vec<PostCheck>,
    /// What the evidence does not cover: quarantined checks, then flaky ones let through.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coverage_gaps: Vec<Gap>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub carried: Vec<CarriedCheck>,
    /// `signed`, `approvals` or `unsigned`.
    pub trust: &'static str,
    /// The yeses that answered the approvals owed, when any were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Vec<Counted>>,
    /// Those of them carried from an earlier candidate.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub carried_approvals: Vec<Counted>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchOf>,
}

/// A batch member's `detail.batch`: its own tree was not checked alone; the batch's last one
/// was, on the batch's base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct BatchOf {
    pub id: String,
    /// The member's place in the batch, from 1.
    pub index: usize,
    pub size: usize,
    pub base: Oid,
    pub commit: Oid,
    pub tree: Oid,
}

impl Merged {
    /// The detail of `candidate` (`commit` with `tree`, on `base`) merged under `plan`, its
    /// evidence trusted as `trust`.
    pub fn new(
        (candidate, commit, tree, base): (CandidateId, Oid, Oid, Oid),
        plan: &Plan,
        trust: &'static str,
    ) -> Merged {
        Merged {
            candidate,
            commit,
            tree,
            base,
            not_required: plan.not_required.clone(),
            post_checks: plan.post_checks.clone(),
            coverage_gaps: plan
                .quarantined
                .iter()
                .cloned()
                .map(Gap::Quarantined)
                .collect(),
            carried: Vec::new(),
            trust,
            approvals: None,
            carried_approvals: Vec::new(),
            batch: None,
        }
    }
}

impl Detail for Merged {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:040x}")).expect("an oid")
    }

    fn merged(plan: &Plan) -> Merged {
        let candidate = CandidateId::parse("c7k2m4qa.1.1").expect("a candidate id");
        Merged::new((candidate, oid(1), oid(2), oid(3)), plan, "unsigned")
    }

    #[test]
    fn a_plain_merge_names_its_candidate_and_trust_and_leaves_empty_lists_out() {
        assert_eq!(
            merged(&Plan::default()).to_json(),
            json!({"candidate": "c7k2m4qa.1.1", "commit": oid(1), "tree": oid(2), "base": oid(3),
                   "trust": "unsigned"})
        );
    }

    #[test]
    fn what_the_plan_spared_the_approvals_and_the_batch_are_named_when_there() {
        let plan = Plan {
            not_required: vec![NotRequired {
                check: "e2e".into(),
                environment: "linux".into(),
                reason: "no path".into(),
            }],
            post_checks: vec![PostCheck {
                check: "deploy".into(),
                environment: "linux".into(),
            }],
            quarantined: vec![crate::check::plan::Quarantined {
                check: "flaky".into(),
                environment: "linux".into(),
                quarantined: true,
                reason: "red".into(),
                end: "2026-10-25".into(),
                owner: None,
                since: None,
                overdue: Some(false),
            }],
            ..Plan::default()
        };
        let mut detail = merged(&plan);
        detail.coverage_gaps.push(Gap::Baseline {
            check: "late".into(),
            environment: "linux".into(),
            baseline_failures: vec!["t1".into()],
        });
        detail.approvals = Some(Vec::new());
        detail.batch = Some(BatchOf {
            id: "c7k2m4qa.1.1".into(),
            index: 2,
            size: 3,
            base: oid(4),
            commit: oid(5),
            tree: oid(6),
        });
        let json = detail.to_json();
        assert_eq!(
            json["not_required"],
            json!([{"check": "e2e", "environment": "linux", "reason": "no path"}])
        );
        assert_eq!(json["post_checks"][0]["check"], "deploy");
        assert_eq!(
            json["coverage_gaps"],
            json!([
                {"check": "flaky", "environment": "linux", "quarantined": true, "reason": "red",
                 "end": "2026-10-25", "overdue": false},
                {"check": "late", "environment": "linux", "baseline_failures": ["t1"]},
            ]),
            "quarantines first, then what the runs left"
        );
        assert_eq!(
            json["approvals"],
            json!([]),
            "asked, even if none is listed"
        );
        assert!(json.get("carried_approvals").is_none());
        assert_eq!(
            json["batch"],
            json!({"id": "c7k2m4qa.1.1", "index": 2, "size": 3, "base": oid(4),
                   "commit": oid(5), "tree": oid(6)})
        );
    }
}
