//! The `bay.result/1` document: the one thing every command prints for a program to read.
//!
//! A command's whole answer is this document: its `decision` picks the exit code, a refusal's
//! `reason` picks `allowed`, `retry_when` and `next_step` from the reason table, and `say`
//! repeats it in one plain sentence for a person. Building all of that here keeps the CLI a
//! printer: it never decides what a result means.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::{CandidateId, ChangeId, OpId};
use crate::reason::{Allowed, ReasonCode};

/// The value of `schema`. A reader refuses any other, since a new major version may change what
/// the fields mean.
pub const SCHEMA: &str = "bay.result/1";

/// The exit code of a usage error, which prints no result at all.
pub const USAGE_EXIT_CODE: u8 = 2;

/// What happened, in one word. It alone decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// The change is on main. The only decision that says so.
    Merged,
    /// Accepted; the outcome comes later.
    Queued,
    /// Refused by policy or by the state of things, with a reason code.
    Blocked,
    /// An operation fault.
    Failed,
    /// Done, with nothing merged by this command.
    Ok,
}

impl Decision {
    pub const ALL: [Decision; 5] = [
        Decision::Merged,
        Decision::Queued,
        Decision::Blocked,
        Decision::Failed,
        Decision::Ok,
    ];

    /// The process exit code. A queued merge exits 0 because the request was accepted, which is
    /// all the command promised; `blocked` and `failed` differ so that a script can tell a
    /// refusal it may act on from a fault.
    pub const fn exit_code(self) -> u8 {
        match self {
            Decision::Ok | Decision::Merged | Decision::Queued => 0,
            Decision::Blocked => 10,
            Decision::Failed => 20,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Decision::Merged => "merged",
            Decision::Queued => "queued",
            Decision::Blocked => "blocked",
            Decision::Failed => "failed",
            Decision::Ok => "ok",
        }
    }
}

/// Where an operation is: on its way through `submitted`, `admitted`, `running` and `checked`
/// to `merged`, or ended as `blocked`, `failed`, `superseded` or `no_effect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum OpState {
    /// The merge request is recorded.
    Submitted,
    /// A runner (or the external runner) took the request in.
    Admitted,
    /// A runner holds it and is building or checking the candidate.
    Running,
    /// Every required check passed; the push to main comes next.
    Checked,
    /// The candidate is on main.
    Merged,
    /// Refused with a reason code; it moves again only after someone acts.
    Blocked,
    /// Ended by a fault.
    Failed,
    /// Another change took over its intent.
    Superseded,
    /// Main already had the same files, so nothing was merged and no check ran.
    NoEffect,
}

impl OpState {
    pub const ALL: [OpState; 9] = [
        OpState::Submitted,
        OpState::Admitted,
        OpState::Running,
        OpState::Checked,
        OpState::Merged,
        OpState::Blocked,
        OpState::Failed,
        OpState::Superseded,
        OpState::NoEffect,
    ];

    /// The operation will not move again: the liveness checks wait for exactly these.
    pub const fn is_terminal(self) -> bool {
        match self {
            OpState::Submitted | OpState::Admitted | OpState::Running | OpState::Checked => false,
            OpState::Merged
            | OpState::Blocked
            | OpState::Failed
            | OpState::Superseded
            | OpState::NoEffect => true,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            OpState::Submitted => "submitted",
            OpState::Admitted => "admitted",
            OpState::Running => "running",
            OpState::Checked => "checked",
            OpState::Merged => "merged",
            OpState::Blocked => "blocked",
            OpState::Failed => "failed",
            OpState::Superseded => "superseded",
            OpState::NoEffect => "no_effect",
        }
    }
}

/// What a queued operation waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum WaitingFor {
    /// No runner has taken it yet.
    Runner,
    /// The remote did not answer.
    Remote,
    /// Operations ahead of it in the queue.
    Queue,
    /// A hold on main.
    Hold,
    /// Changes it was started `--after`.
    Dependencies,
}

impl WaitingFor {
    pub const ALL: [WaitingFor; 5] = [
        WaitingFor::Runner,
        WaitingFor::Remote,
        WaitingFor::Queue,
        WaitingFor::Hold,
        WaitingFor::Dependencies,
    ];
}

/// The `schema` field: always [`SCHEMA`]. A type of its own, so a document of another version
/// fails to parse instead of being misread.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "&'static str")]
pub struct Schema;

impl TryFrom<String> for Schema {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        if text == SCHEMA {
            Ok(Schema)
        } else {
            Err(format!("not a {SCHEMA} document: schema {text:?}"))
        }
    }
}

impl From<Schema> for &'static str {
    fn from(_: Schema) -> &'static str {
        SCHEMA
    }
}

/// Which main the result reflects and when it was fetched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Freshness {
    /// The main commit, as the driver names it (a short id is fine for people).
    pub main: String,
    /// When this command fetched main, as the driver's RFC 3339 text, or the driver's note that
    /// it read the local cache instead. core never reads a clock, so it only carries this.
    pub fetched_at: String,
}

/// One `bay.result/1` document. Optional fields are left out when absent; an empty `detail`
/// is left out too, since it carries no fact.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BayResult {
    pub schema: Schema,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op_id: Option<OpId>,
    pub decision: Decision,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReasonCode>,
    /// One plain sentence for a person: what happened and what to do next.
    pub say: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<CandidateId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<OpState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<WaitingFor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<u64>,
    /// Evidence record ids so far. `Some(vec![])` prints `[]`: "none yet" is a fact, unlike
    /// a result that does not speak of evidence at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub detail: Map<String, Value>,
    /// On a refusal, what can still be done. `Some(vec![])` prints `[]`, which means bay acts
    /// on its own; `None` means the result is no refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<Allowed>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_when: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freshness: Option<Freshness>,
}

impl BayResult {
    /// The exit code of the command that prints this result.
    pub fn exit_code(&self) -> u8 {
        self.decision.exit_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_decision() {
        let codes: Vec<(Decision, u8)> = Decision::ALL.map(|d| (d, d.exit_code())).to_vec();
        assert_eq!(
            codes,
            [
                (Decision::Merged, 0),
                (Decision::Queued, 0),
                (Decision::Blocked, 10),
                (Decision::Failed, 20),
                (Decision::Ok, 0),
            ]
        );
        assert!(
            Decision::ALL
                .iter()
                .all(|d| d.exit_code() != USAGE_EXIT_CODE)
        );
    }

    #[test]
    fn enums_serialize_as_their_names() {
        for decision in Decision::ALL {
            let json = serde_json::to_value(decision).expect("serializes");
            assert_eq!(json, Value::from(decision.as_str()));
        }
        for state in OpState::ALL {
            let json = serde_json::to_value(state).expect("serializes");
            assert_eq!(json, Value::from(state.as_str()));
        }
        let waits = serde_json::to_string(&WaitingFor::ALL).expect("serializes");
        assert_eq!(
            waits,
            r#"["runner","remote","queue","hold","dependencies"]"#
        );
    }

    #[test]
    fn terminal_states_are_the_endings() {
        let terminal: Vec<&str> = OpState::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .map(OpState::as_str)
            .collect();
        assert_eq!(
            terminal,
            ["merged", "blocked", "failed", "superseded", "no_effect"]
        );
    }

    #[test]
    fn schema_refuses_other_versions() {
        assert_eq!(
            serde_json::to_string(&Schema).expect("serializes"),
            r#""bay.result/1""#
        );
        assert!(serde_json::from_str::<Schema>(r#""bay.result/1""#).is_ok());
        assert!(serde_json::from_str::<Schema>(r#""bay.result/2""#).is_err());
        assert!(serde_json::from_str::<Schema>(r#""""#).is_err());
    }
}
