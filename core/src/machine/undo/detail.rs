//! What `bay undo` names in its `detail`: the facts it gathers, and each way it refuses, every
//! one with its reason code and fields. A refusal names the facts gathered so far beside its
//! own.

use serde::Serialize;
use serde_json::Value;

use crate::detail::Detail;
use crate::id::ChangeId;
use crate::machine::agent::NotMerged;
use crate::reason::ReasonCode;

/// The facts an undo gathers on its way.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Gathered {
    /// The change it undoes.
    pub reverts: ChangeId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
    /// An earlier undo of the same change, ended unmerged, that this one supersedes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<ChangeId>,
    /// Why nothing was opened: the change's work is no longer on main.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo: Option<&'static str>,
}

impl Gathered {
    pub fn new(reverts: ChangeId) -> Gathered {
        Gathered {
            reverts,
            view: None,
            generation: None,
            supersedes: None,
            undo: None,
        }
    }
}

impl Detail for Gathered {}
impl Detail for Refusal {}

/// Each way an undo refuses, with what its `detail` names besides the facts gathered.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum Refusal {
    /// `DISK_LOW`: too little room for a view (`DiskSpace::detail`).
    DiskLow(crate::disk::DiskSpace),
    /// `CHANGE_NOT_MERGED`: the change named is not on main.
    NotMerged(NotMerged),
    /// `CHANGE_SUPERSEDED`: an earlier undo of the change has not merged yet.
    EarlierUndo {
        superseded_by: ChangeId,
        why: &'static str,
    },
    /// `MERGE_RETRY_EXHAUSTED`: other undos kept winning the race.
    RacesLost { why: &'static str },
    /// `MERGE_CONFLICT`: the reverse does not apply to main as it is.
    Conflict { conflicts: Vec<String> },
}

impl Refusal {
    pub fn code(&self) -> ReasonCode {
        match self {
            Refusal::DiskLow(_) => ReasonCode::DiskLow,
            Refusal::NotMerged(_) => ReasonCode::ChangeNotMerged,
            Refusal::EarlierUndo { .. } => ReasonCode::ChangeSuperseded,
            Refusal::RacesLost { .. } => ReasonCode::MergeRetryExhausted,
            Refusal::Conflict { .. } => ReasonCode::MergeConflict,
        }
    }

    /// Its detail: its own fields, then the facts gathered.
    pub fn detail(&self, gathered: &Gathered) -> Value {
        let mut detail = self.to_json();
        if let Value::Object(fields) = &mut detail {
            fields.extend(gathered.to_map());
        }
        detail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(text: &str) -> ChangeId {
        ChangeId::parse(text).expect("a change id")
    }

    #[test]
    fn a_refusal_names_its_fields_and_what_was_gathered() {
        let mut gathered = Gathered::new(change("c7k2m4qa"));
        assert_eq!(
            Refusal::RacesLost { why: "lost" }.detail(&gathered),
            json!({"why": "lost", "reverts": "c7k2m4qa"})
        );
        gathered.view = Some("/v".into());
        gathered.generation = Some(2);
        let conflict = Refusal::Conflict {
            conflicts: vec!["src/a.rs".into()],
        };
        assert_eq!(conflict.code(), ReasonCode::MergeConflict);
        assert_eq!(
            conflict.detail(&gathered),
            json!({"conflicts": ["src/a.rs"], "reverts": "c7k2m4qa", "view": "/v",
                   "generation": 2})
        );
        let earlier = Refusal::EarlierUndo {
            superseded_by: change("k2m4qa7c"),
            why: "not merged yet",
        };
        assert_eq!(earlier.code(), ReasonCode::ChangeSuperseded);
        assert_eq!(earlier.detail(&gathered)["superseded_by"], "k2m4qa7c");
    }
}
