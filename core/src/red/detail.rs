//! What a result says of main's post checks: each red check and each pending one, as
//! `bay status` lists them (`detail.red`, `detail.red_pending`) and a `MAIN_RED` refusal names
//! them. One type for both places, so the two cannot say a red check differently.

use serde::Serialize;

use super::{Pending, RedCheck, TRUST};
use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::Oid;
use crate::id::ChangeId;

/// One red post check: `detail.red[]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RedShown {
    pub check: String,
    pub environment: String,
    /// Its `when_paths`, or `**` for a check on every path.
    pub paths: Vec<String>,
    /// The merge that owns the red, and its change when the merge names one.
    pub merge: Oid,
    pub change: Option<ChangeId>,
    pub suspect: Suspect,
    /// The one merge the evidence leaves, with each answer that left it.
    pub culprit: Option<Culprit>,
    /// `null` before any bisect run.
    pub bisect: Option<Bisected>,
}

/// The range the red lies in: from just above the last pass up to the first failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Suspect {
    pub last_pass: Option<Oid>,
    pub first_failure: Oid,
    /// Newest first.
    pub merges: Vec<Oid>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Culprit {
    pub commit: Oid,
    pub change: Option<ChangeId>,
    /// Each answered merge from the pass up to the newest failure, oldest first.
    pub verdicts: Vec<Answered>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Answered {
    pub commit: Oid,
    pub verdict: Verdict,
}

/// Where a bisect of the range stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bisected {
    pub runs: u32,
    pub state: BisectState,
    /// The one merge that both passed and failed, when the bisect found a flake.
    pub flaky: Option<Oid>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BisectState {
    /// A run gave no verdict: the bisect stops there.
    Undecided,
    Flaky,
    /// One merge is left and its rerun failed again.
    Confirmed,
    Narrowing,
}

/// A post check no merge of the window answers yet: `detail.red_pending[]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PendingShown {
    pub check: String,
    pub environment: String,
    pub state: PendingState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingState {
    Pending,
    /// The window is full, so any answer is older than it.
    PendingBeyondWindow,
}

/// The detail of a `MAIN_RED` refusal: each red check the change touches, and the changes
/// that own them (a fix, undo or supersede of one of those is let through).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub red: Vec<RedShown>,
    pub owners: Vec<ChangeId>,
    pub trust: &'static str,
}

impl Detail for RedShown {}
impl Detail for PendingShown {}
impl Detail for Refusal {}

impl RedShown {
    pub fn of(red: &RedCheck) -> RedShown {
        let (merge, change) = red.owner();
        RedShown {
            check: red.check.id.clone(),
            environment: red.check.environment.clone(),
            paths: red.check.paths.clone().unwrap_or_else(|| vec!["**".into()]),
            merge,
            change,
            suspect: Suspect {
                last_pass: red.last_pass.clone(),
                first_failure: red.first_failure.clone(),
                merges: red
                    .suspects
                    .iter()
                    .map(|(commit, _)| commit.clone())
                    .collect(),
            },
            culprit: red.culprit.as_ref().map(|(commit, change)| Culprit {
                commit: commit.clone(),
                change: change.clone(),
                verdicts: red
                    .verdicts
                    .iter()
                    .map(|(commit, verdict)| Answered {
                        commit: commit.clone(),
                        verdict: *verdict,
                    })
                    .collect(),
            }),
            bisect: Bisected::of(red),
        }
    }
}

impl Bisected {
    fn of(red: &RedCheck) -> Option<Bisected> {
        if red.bisect.runs == 0 {
            return None;
        }
        let state = if red.bisect.undecided {
            BisectState::Undecided
        } else if red.flaky.is_some() {
            BisectState::Flaky
        } else if red.culprit.is_some() && red.bisect.reran {
            BisectState::Confirmed
        } else {
            BisectState::Narrowing
        };
        Some(Bisected {
            runs: red.bisect.runs,
            state,
            flaky: red.flaky.clone(),
        })
    }
}

impl PendingShown {
    pub fn of(pending: &Pending) -> PendingShown {
        PendingShown {
            check: pending.check.id.clone(),
            environment: pending.check.environment.clone(),
            state: match pending.beyond_window {
                true => PendingState::PendingBeyondWindow,
                false => PendingState::Pending,
            },
        }
    }
}

impl Refusal {
    pub fn of(blocking: &[&RedCheck]) -> Refusal {
        let owners: std::collections::BTreeSet<ChangeId> =
            blocking.iter().filter_map(|red| red.owner().1).collect();
        Refusal {
            red: blocking.iter().map(|red| RedShown::of(red)).collect(),
            owners: owners.into_iter().collect(),
            trust: TRUST,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::red::{Bisect, PostCheck};
    use serde_json::json;

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:02x}").repeat(20)).expect("hex")
    }

    fn red(paths: Option<Vec<String>>, bisect: Bisect) -> RedCheck {
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        RedCheck {
            check: PostCheck {
                id: "smoke".into(),
                environment: "linux".into(),
                paths,
                producers: None,
            },
            first_failure: oid(1),
            last_pass: Some(oid(3)),
            suspects: vec![(oid(1), Some(change.clone())), (oid(2), None)],
            culprit: Some((oid(1), Some(change))),
            verdicts: vec![(oid(2), Verdict::Pass), (oid(1), Verdict::ProductFailure)],
            flaky: None,
            bisect,
        }
    }

    #[test]
    fn a_red_check_shows_its_range_culprit_and_bisect() {
        let confirmed = Bisect {
            runs: 2,
            reran: true,
            undecided: false,
        };
        assert_eq!(
            RedShown::of(&red(None, confirmed)).to_json(),
            json!({
                "check": "smoke",
                "environment": "linux",
                "paths": ["**"],
                "merge": oid(1),
                "change": "c7k2m4qa",
                "suspect": {"last_pass": oid(3), "first_failure": oid(1), "merges": [oid(1), oid(2)]},
                "culprit": {
                    "commit": oid(1),
                    "change": "c7k2m4qa",
                    "verdicts": [
                        {"commit": oid(2), "verdict": "pass"},
                        {"commit": oid(1), "verdict": "product_failure"},
                    ],
                },
                "bisect": {"runs": 2, "state": "confirmed", "flaky": null},
            })
        );
        let unbisected = RedShown::of(&red(Some(vec!["src/**".into()]), Bisect::default()));
        assert_eq!(unbisected.to_json()["bisect"], json!(null));
        assert_eq!(unbisected.to_json()["paths"], json!(["src/**"]));
    }

    #[test]
    fn a_refusal_names_each_red_check_its_owners_once_and_the_trust() {
        let one = red(None, Bisect::default());
        let refusal = Refusal::of(&[&one, &one]);
        let json = refusal.to_json();
        assert_eq!(json["owners"], json!(["c7k2m4qa"]));
        assert_eq!(json["trust"], "unsigned");
        assert_eq!(json["red"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn a_pending_check_says_whether_the_window_is_full() {
        let pending = |beyond_window| Pending {
            check: red(None, Bisect::default()).check,
            beyond_window,
        };
        assert_eq!(
            PendingShown::of(&pending(false)).to_json(),
            json!({"check": "smoke", "environment": "linux", "state": "pending"})
        );
        assert_eq!(
            PendingShown::of(&pending(true)).to_json()["state"],
            "pending_beyond_window"
        );
    }
}
