//! What a check's runs leave on the way to a merge, as types: each run of the check under
//! way ([`Attempt`]), and what the merge's `coverage_gaps` names beside the plan's own
//! ([`Gap`]). Each serialises to the JSON the result documents publish, so a decision reads
//! fields, never keys of a JSON value.

use serde::Serialize;

use crate::approval::Waived;
use crate::check::Verdict;

/// One run of the check under way on the candidate (`retry_on_failure`): `{verdict, why}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Attempt {
    pub verdict: Verdict,
    pub why: String,
}

/// One entry a merge's `coverage_gaps` names because of how a check's runs went.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub(super) enum Gap {
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

impl Gap {
    /// The JSON `coverage_gaps` holds.
    pub(super) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
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
}
