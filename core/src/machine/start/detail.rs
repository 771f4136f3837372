//! What `bay start` names in its `detail`: the facts it gathers as it goes, and each way it
//! refuses, every one with the reason code it ends with and the fields it names.

use serde::Serialize;

use crate::detail::Detail;
use crate::git::Oid;
use crate::id::ChangeId;
use crate::machine::agent::NotMerged;
use crate::reason::ReasonCode;

/// The facts a start gathers on its way, each left out until known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(super) struct Gathered {
    /// The branch the work was taken in from (`--from`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<TakenFrom>,
    /// Whether a change picked up again was another actor's, taken over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adopted: Option<bool>,
    /// Paths where bringing the draft up to main conflicted, for the agent to settle.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<ChangeId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixes: Option<ChangeId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<ChangeId>,
    /// The generation of the intent a new change opened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
    /// The folder of the change's view.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    /// How many main commits a change picked up again had missed (up to `MAX_BEHIND`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behind: Option<usize>,
    /// Live changes whose declared paths overlap this one's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overlaps: Vec<Overlap>,
    /// Why taking work in opened nothing: it held nothing main lacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nothing: Option<&'static str>,
}

/// `detail.from`: the branch work was taken in from, where it was found, and its tip.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct TakenFrom {
    pub branch: String,
    /// `remote` or `local`.
    pub source: &'static str,
    pub commit: Oid,
}

/// One live change whose paths overlap the started one's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Overlap {
    pub change: ChangeId,
    pub intent: String,
    pub actor: String,
    pub paths: Vec<String>,
}

impl Detail for Gathered {}
impl Detail for Refusal {}

/// Each way a start refuses, with what its `detail` names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum Refusal {
    /// `MERGE_RETRY_EXHAUSTED`: other starts of the intent kept winning the race.
    RacesLost { why: &'static str },
    /// `CHANGE_NOT_MERGED`: the change `--fixes` names is not on main.
    NotMerged(NotMerged),
    /// `CHANGE_SUPERSEDED`: the intent has a newer generation than the change named.
    NewerGeneration { superseded_generation: u32 },
    /// `CHANGE_SUPERSEDED`: another actor's live change, not idle for the takeover window.
    HeldByAnother {
        held_by: String,
        takeover_s: u64,
        why: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        idle_s: Option<u64>,
    },
    /// `CHANGE_ALREADY_MERGED`, naming nothing more.
    AlreadyMerged {},
    /// `CHANGE_HELD`: another live session of this actor holds it (`held::Sessions::detail`).
    Held(super::held::HeldBy),
    /// `PATHS_UNDECLARED`: paths the work changes that no declared path covers.
    PathsUndeclared {
        uncovered: Vec<String>,
        declared: Vec<String>,
    },
    /// `MERGE_CONFLICT`: the work taken in conflicts with main; what was gathered, with the
    /// conflicts.
    Conflict(Gathered),
    /// `DISK_LOW`: too little room for a view (`DiskSpace::detail`).
    DiskLow(crate::disk::DiskSpace),
}

impl Refusal {
    pub fn code(&self) -> ReasonCode {
        match self {
            Refusal::RacesLost { .. } => ReasonCode::MergeRetryExhausted,
            Refusal::NotMerged(_) => ReasonCode::ChangeNotMerged,
            Refusal::NewerGeneration { .. } | Refusal::HeldByAnother { .. } => {
                ReasonCode::ChangeSuperseded
            }
            Refusal::AlreadyMerged {} => ReasonCode::ChangeAlreadyMerged,
            Refusal::Held(_) => ReasonCode::ChangeHeld,
            Refusal::PathsUndeclared { .. } => ReasonCode::PathsUndeclared,
            Refusal::Conflict(_) => ReasonCode::MergeConflict,
            Refusal::DiskLow(_) => ReasonCode::DiskLow,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(text: &str) -> ChangeId {
        ChangeId::parse(text).expect("a change id")
    }

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:040x}")).expect("an oid")
    }

    #[test]
    fn nothing_gathered_names_nothing_and_each_fact_its_own_key() {
        assert_eq!(Gathered::default().to_json(), json!({}));
        let gathered = Gathered {
            from: Some(TakenFrom {
                branch: "topic".into(),
                source: "remote",
                commit: oid(1),
            }),
            adopted: Some(false),
            conflicts: vec!["src/a.rs".into()],
            generation: Some(2),
            behind: Some(0),
            overlaps: vec![Overlap {
                change: change("c7k2m4qa"),
                intent: "greet".into(),
                actor: "ann".into(),
                paths: vec!["src/".into()],
            }],
            ..Gathered::default()
        };
        assert_eq!(
            gathered.to_json(),
            json!({"from": {"branch": "topic", "source": "remote", "commit": oid(1)},
                   "adopted": false, "conflicts": ["src/a.rs"], "generation": 2, "behind": 0,
                   "overlaps": [{"change": "c7k2m4qa", "intent": "greet", "actor": "ann",
                                 "paths": ["src/"]}]})
        );
    }

    #[test]
    fn each_refusal_names_its_code_and_fields() {
        let refusals = [
            (
                Refusal::NotMerged(NotMerged {
                    target: change("c7k2m4qa"),
                    main: oid(1),
                    merge: None,
                }),
                ReasonCode::ChangeNotMerged,
                json!({"target": "c7k2m4qa", "main": oid(1)}),
            ),
            (
                Refusal::NewerGeneration {
                    superseded_generation: 3,
                },
                ReasonCode::ChangeSuperseded,
                json!({"superseded_generation": 3}),
            ),
            (
                Refusal::HeldByAnother {
                    held_by: "bob".into(),
                    takeover_s: 600,
                    why: "held",
                    idle_s: Some(5),
                },
                ReasonCode::ChangeSuperseded,
                json!({"held_by": "bob", "takeover_s": 600, "why": "held", "idle_s": 5}),
            ),
            (
                Refusal::AlreadyMerged {},
                ReasonCode::ChangeAlreadyMerged,
                json!({}),
            ),
            (
                Refusal::Conflict(Gathered {
                    conflicts: vec!["src/a.rs".into()],
                    ..Gathered::default()
                }),
                ReasonCode::MergeConflict,
                json!({"conflicts": ["src/a.rs"]}),
            ),
        ];
        for (refusal, code, detail) in refusals {
            assert_eq!((refusal.code(), refusal.to_json()), (code, detail));
        }
    }
}
