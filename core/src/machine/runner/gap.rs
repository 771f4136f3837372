//! What a check's runs leave, as types: each run of the check under way ([`Attempt`]), what
//! a merge's `coverage_gaps` names beside the plan's own ([`Gap`]), and the `detail` of a
//! refusal the runs end in ([`Refusal`]). Each serialises to the JSON the result documents
//! publish, so a decision reads fields, never keys of a JSON value.

use serde::Serialize;

use crate::approval::Waived;
use crate::check::plan::Quarantined;
use crate::check::{UnitReason, Verdict};
use crate::detail::Detail;

/// One run of the check under way on the candidate (`retry_on_failure`): `{verdict, why}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Attempt {
    pub verdict: Verdict,
    pub why: String,
}

/// One entry a merge's `coverage_gaps` names: a check the plan found quarantined, or one
/// whose runs went so that the evidence does not cover it whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub(super) enum Gap {
    /// Quarantined by the policy: it ran nowhere.
    Quarantined(Quarantined),
    /// It passed only after failing, and the check allows that (`allow_flaky`): every run.
    Flaky {
        check: String,
        environment: String,
        /// Always `true`.
        flaky: bool,
        runs: Vec<Attempt>,
    },
    /// It failed only on units that fail on the base too (`baseline = "base"`).
    Baseline {
        check: String,
        environment: String,
        baseline_failures: Vec<String>,
    },
    /// It did not pass, and a signed waiver for this candidate answers it.
    Waived(Waived),
}

impl Detail for Gap {}

/// The `detail` of an operation a check's runs end short of a merge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub(super) enum Refusal {
    /// `CHECK_FAILED` after every run allowed (`retry_on_failure`).
    Failed {
        check: String,
        verdict: Verdict,
        why: String,
        runs: Vec<Attempt>,
        checks: Vec<FailedCheck>,
    },
    /// `CHECK_FAILED` on units the base passes (`baseline = "base"`).
    NewFailures {
        check: String,
        verdict: Verdict,
        why: String,
        new_failures: Vec<String>,
        /// Always `compared`.
        baseline: &'static str,
        checks: Vec<FailedCheck>,
    },
    /// `CHECK_UNKNOWN`: no verdict, or (with `baseline`) a base run that gave none.
    Unknown {
        check: String,
        verdict: Verdict,
        why: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        baseline: Option<&'static str>,
    },
    /// `CHECK_FLAKY`: a pass after a failure, which the check does not allow: every run.
    Flaky {
        check: String,
        environment: String,
        checks: Vec<Attempt>,
    },
}

impl Refusal {
    pub(super) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// One failed check as `detail.checks` lists it for `CHECK_FAILED`: under `reasons` each
/// failed unit (with its reason when the check sent one); with a baseline, `reasons` holds
/// only the new failures and `baseline_failures` the pre-existing ones; and `stderr_log`,
/// when the driver kept one, where the end of the run's stderr is, in the Git directory of
/// the machine that ran it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct FailedCheck {
    pub check: String,
    pub environment: String,
    pub verdict: Verdict,
    pub why: String,
    pub reasons: Vec<UnitReason>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_failures: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_log: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gap_serialises_as_the_result_names_it() {
        let runs = vec![
            Attempt {
                verdict: Verdict::ProductFailure,
                why: "u failed".into(),
            },
            Attempt {
                verdict: Verdict::Pass,
                why: "all passed".into(),
            },
        ];
        let flaky = Gap::Flaky {
            check: "unit".into(),
            environment: "linux".into(),
            flaky: true,
            runs,
        };
        assert_eq!(
            flaky.to_json(),
            serde_json::json!({
                "check": "unit",
                "environment": "linux",
                "flaky": true,
                "runs": [
                    {"verdict": "product_failure", "why": "u failed"},
                    {"verdict": "pass", "why": "all passed"},
                ],
            })
        );
        let baseline = Gap::Baseline {
            check: "unit".into(),
            environment: "linux".into(),
            baseline_failures: vec!["u".into()],
        };
        assert_eq!(
            baseline.to_json(),
            serde_json::json!({"check": "unit", "environment": "linux", "baseline_failures": ["u"]})
        );
        let waived = Gap::Waived(Waived {
            check: "e2e".into(),
            environment: "linux".into(),
            verdict: "product_failure".into(),
            waived_by: "alice".into(),
            why: "known".into(),
            record: "alice/w1".into(),
        });
        assert_eq!(
            waived.to_json(),
            serde_json::json!({
                "check": "e2e", "environment": "linux", "verdict": "product_failure",
                "waived_by": "alice", "why": "known", "record": "alice/w1",
            })
        );
    }

    #[test]
    fn a_refusal_names_only_what_it_holds() {
        let unknown = Refusal::Unknown {
            check: "unit".into(),
            verdict: Verdict::InfraFailure,
            why: "no sandbox".into(),
            baseline: None,
        };
        assert_eq!(
            unknown.to_json(),
            serde_json::json!({"check": "unit", "verdict": "infra_failure", "why": "no sandbox"})
        );
        let failed = FailedCheck {
            check: "unit".into(),
            environment: "linux".into(),
            verdict: Verdict::ProductFailure,
            why: "u failed".into(),
            reasons: vec![UnitReason {
                id: "u".into(),
                verdict: Verdict::ProductFailure,
                reason: None,
            }],
            baseline_failures: Some(vec!["v".into()]),
            stderr_log: None,
        };
        let new_failures = Refusal::NewFailures {
            check: "unit".into(),
            verdict: Verdict::ProductFailure,
            why: "u failed".into(),
            new_failures: vec!["u".into()],
            baseline: "compared",
            checks: vec![failed],
        };
        assert_eq!(
            new_failures.to_json(),
            serde_json::json!({
                "check": "unit", "verdict": "product_failure", "why": "u failed",
                "new_failures": ["u"], "baseline": "compared",
                "checks": [{
                    "check": "unit", "environment": "linux", "verdict": "product_failure",
                    "why": "u failed", "reasons": [{"id": "u", "verdict": "product_failure"}],
                    "baseline_failures": ["v"],
                }],
            })
        );
    }
}
