//! The figures `detail.flow` and `detail.flakes` name, as `flow` computes them.

use serde::Serialize;

use crate::approval::OldestWaiting;
use crate::detail::Detail;
use crate::id::ChangeId;

/// `detail.flow`: the live changes, the merges and how long they took, the oldest live change
/// and what waits for an approval. A figure nothing measured is `null`.
#[derive(Serialize)]
pub(super) struct Flow<'a> {
    pub live: usize,
    pub by_actor: Vec<ActorLive<'a>>,
    /// The merges of the last 7 days.
    pub merged: usize,
    pub cycle_time_s: Option<Percentiles>,
    pub queue_wait_s: Option<Percentiles>,
    pub check_time_s: Option<Percentiles>,
    pub oldest_live: Option<OldestLive<'a>>,
    pub waiting_approval: WaitingApproval,
}

impl Detail for Flow<'_> {}

/// The live changes one actor holds, against `[agent] max_live_changes` (`null` where no
/// policy sets one).
#[derive(Serialize)]
pub(super) struct ActorLive<'a> {
    pub actor: &'a str,
    pub live: usize,
    pub limit: Option<u64>,
}

/// The 50th and 90th percentiles of what was measured, and how much was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Percentiles {
    pub p50: u64,
    pub p90: u64,
    #[serde(flatten)]
    pub of: Measured,
}

/// What percentiles were taken of, named by what it counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Measured {
    /// The merges timed.
    Merged(usize),
    /// The check runs timed.
    Runs(usize),
}

/// The live change started first, and how long ago.
#[derive(Serialize)]
pub(super) struct OldestLive<'a> {
    pub change: &'a ChangeId,
    pub intent: &'a str,
    pub actor: &'a str,
    /// Seconds since the epoch, on the starter's clock.
    pub started_at: u64,
    pub age_s: u64,
}

/// The changes that wait for an approval: how many, the oldest, and its age (`null` with
/// none).
#[derive(Serialize)]
pub(super) struct WaitingApproval {
    pub count: usize,
    pub oldest: Option<OldestWaiting>,
    pub age_s: Option<u64>,
}

/// One check that merged flaky within the red window, and how many merges it did so in.
#[derive(Serialize)]
pub(super) struct Flaky {
    pub check: String,
    pub environment: String,
    pub merges: u64,
}

impl Detail for Flaky {}

/// The outcome detail of an operation's end a runner log reports: the runner that logged it.
#[derive(Serialize)]
pub(super) struct FromLog<'a> {
    pub from_log: Option<&'a str>,
}

impl Detail for FromLog<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Only the tests read percentiles alone: `Flow` writes them.
    impl Detail for Percentiles {}

    #[test]
    fn percentiles_name_what_they_count() {
        let merges = Percentiles {
            p50: 200,
            p90: 300,
            of: Measured::Merged(4),
        };
        assert_eq!(
            merges.to_json(),
            json!({"p50": 200, "p90": 300, "merged": 4})
        );
        let runs = Percentiles {
            of: Measured::Runs(7),
            ..merges
        };
        assert_eq!(runs.to_json(), json!({"p50": 200, "p90": 300, "runs": 7}));
    }

    #[test]
    fn a_flow_names_every_figure_and_null_for_the_unmeasured() {
        let change = ChangeId::from_entropy([1, 0, 0, 0, 1]);
        let flow = Flow {
            live: 1,
            by_actor: vec![ActorLive {
                actor: "ann",
                live: 1,
                limit: None,
            }],
            merged: 0,
            cycle_time_s: None,
            queue_wait_s: None,
            check_time_s: None,
            oldest_live: Some(OldestLive {
                change: &change,
                intent: "greet",
                actor: "ann",
                started_at: 10,
                age_s: 5,
            }),
            waiting_approval: WaitingApproval {
                count: 0,
                oldest: None,
                age_s: None,
            },
        };
        assert_eq!(
            flow.to_json(),
            json!({
                "live": 1,
                "by_actor": [{"actor": "ann", "live": 1, "limit": null}],
                "merged": 0,
                "cycle_time_s": null,
                "queue_wait_s": null,
                "check_time_s": null,
                "oldest_live": {"change": change, "intent": "greet", "actor": "ann",
                                "started_at": 10, "age_s": 5},
                "waiting_approval": {"count": 0, "oldest": null, "age_s": null},
            })
        );
    }

    #[test]
    fn the_other_details_name_their_one_field() {
        let flaky = Flaky {
            check: "unit".into(),
            environment: "linux".into(),
            merges: 2,
        };
        assert_eq!(
            flaky.to_json(),
            json!({"check": "unit", "environment": "linux", "merges": 2})
        );
        assert_eq!(
            FromLog {
                from_log: Some("r1")
            }
            .to_json(),
            json!({"from_log": "r1"})
        );
        assert_eq!(
            FromLog { from_log: None }.to_json(),
            json!({"from_log": null})
        );
    }
}
