//! Each way `bay merge` refuses to submit, with the reason code it names and the fields of its
//! `detail`.

use serde::Serialize;

use crate::approval::OldestWaiting;
use crate::detail::Detail;
use crate::id::OpId;
use crate::limits::TooLarge;
use crate::reason::ReasonCode;

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum Refusal {
    /// `MERGE_RETRY_EXHAUSTED`: other writers kept moving the change or the queue.
    RacesLost { why: &'static str },
    /// `CHANGE_ALREADY_MERGED`, naming the operation that merged it.
    AlreadyMerged { merged_op: OpId },
    /// `CHANGE_SUPERSEDED`: the change was abandoned.
    Abandoned { abandoned: bool },
    /// `MERGE_CONFLICT`: conflict markers remain in the view's files.
    MarkersRemain {
        paths: Vec<String>,
        markers_remain: bool,
        markers: Vec<String>,
    },
    /// `MERGE_CONFLICT`: saving the view carried its work over onto a draft saved elsewhere,
    /// and these files conflicted; `view` shows them with markers, now recorded.
    Carried {
        conflicts: Vec<String>,
        view: String,
        markers: Vec<String>,
        carried_over: bool,
    },
    /// `CHANGE_TOO_LARGE`: the draft is over a `[limits]` cap at its base.
    TooLarge(TooLarge),
    /// `WIP_LIMIT`: too many of this actor's changes wait for a person's yes.
    WipLimit { review: Review },
}

/// `detail.review` of `WIP_LIMIT`: how many wait, the cap, and the oldest with its age.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(super) struct Review {
    pub waiting: usize,
    pub max: u64,
    pub oldest: Option<OldestWaiting>,
    pub age_s: Option<u64>,
}

impl Refusal {
    pub fn code(&self) -> ReasonCode {
        match self {
            Refusal::RacesLost { .. } => ReasonCode::MergeRetryExhausted,
            Refusal::AlreadyMerged { .. } => ReasonCode::ChangeAlreadyMerged,
            Refusal::Abandoned { .. } => ReasonCode::ChangeSuperseded,
            Refusal::MarkersRemain { .. } | Refusal::Carried { .. } => ReasonCode::MergeConflict,
            Refusal::TooLarge(_) => ReasonCode::ChangeTooLarge,
            Refusal::WipLimit { .. } => ReasonCode::WipLimit,
        }
    }
}

impl Detail for Refusal {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conflict::Labels;
    use crate::id::ChangeId;
    use serde_json::json;

    #[test]
    fn each_refusal_names_its_code_and_fields() {
        let op = ChangeId::parse("c7k2m4qa").expect("an id").op(2);
        let refusals = [
            (
                Refusal::AlreadyMerged { merged_op: op },
                ReasonCode::ChangeAlreadyMerged,
                json!({"merged_op": "c7k2m4qa.2"}),
            ),
            (
                Refusal::Abandoned { abandoned: true },
                ReasonCode::ChangeSuperseded,
                json!({"abandoned": true}),
            ),
            (
                Refusal::MarkersRemain {
                    paths: vec!["src/a.rs".into()],
                    markers_remain: true,
                    markers: vec!["<<<<<<< main".into()],
                },
                ReasonCode::MergeConflict,
                json!({"paths": ["src/a.rs"], "markers_remain": true, "markers": ["<<<<<<< main"]}),
            ),
            (
                Refusal::Carried {
                    conflicts: vec!["src/a.rs".into()],
                    view: "/r/.git/bay/views/c7k2m4qa".into(),
                    markers: Labels::carried(&ChangeId::parse("c7k2m4qa").expect("an id")).lines(),
                    carried_over: true,
                },
                ReasonCode::MergeConflict,
                json!({"conflicts": ["src/a.rs"], "view": "/r/.git/bay/views/c7k2m4qa",
                       "markers": ["<<<<<<< saved draft of c7k2m4qa", ">>>>>>> this view"],
                       "carried_over": true}),
            ),
            (
                Refusal::WipLimit {
                    review: Review {
                        waiting: 3,
                        max: 3,
                        oldest: Some(OldestWaiting {
                            change: crate::id::ChangeId::parse("k2m4qa7c").expect("an id"),
                            intent: "greet".into(),
                            actor: "ann".into(),
                            age_s: 60,
                        }),
                        age_s: Some(60),
                    },
                },
                ReasonCode::WipLimit,
                json!({"review": {"waiting": 3, "max": 3,
                                  "oldest": {"change": "k2m4qa7c", "intent": "greet",
                                             "actor": "ann", "age_s": 60},
                                  "age_s": 60}}),
            ),
        ];
        for (refusal, code, detail) in refusals {
            assert_eq!((refusal.code(), refusal.to_json()), (code, detail));
        }
    }
}
