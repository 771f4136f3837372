//! How the runner ends an operation short of a merge, outside its check runs (those end as
//! `gap::Refusal` says): each way is one variant, which fixes the operation's state, its
//! reason code and the fields its `detail` names, so no end can pair a reason with another's
//! detail.

use serde::Serialize;

use super::work::Ending;
use crate::check::plan::POLICY_PATH;
use crate::detail::Detail;
use crate::git::Oid;
use crate::id::ChangeId;
use crate::limits::TooLarge;
use crate::reason::ReasonCode;
use crate::result::OpState;

impl Detail for Unmerged {}

/// One way an operation ends short of a merge, with what its `detail` names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(super) enum Unmerged {
    /// `QUEUE_DEADLINE_EXCEEDED`: the head's progress deadline released it once too often.
    DeadlineExceeded {
        progress_deadline_s: u64,
        releases: u32,
    },
    /// `POLICY_MISSING`: the base holds no policy.
    PolicyMissing { path: &'static str, base: Oid },
    /// `POLICY_INVALID`: the policy at the base, or the plan it makes, is refused.
    PolicyInvalid { path: &'static str, why: String },
    /// `MERGE_CONFLICT`, with the paths that conflict.
    MergeConflict { paths: Vec<String> },
    /// Failed, with no reason code: the request names a draft the remote does not hold.
    DraftMissing {
        why: String,
        draft: Oid,
        missing: Vec<Oid>,
        hint: &'static str,
    },
    /// No effect: the candidate's tree is the base's.
    NoEffect { main_commit: Oid, tree: Oid },
    /// `CHANGE_TOO_LARGE`: over a `[limits]` cap.
    TooLarge(TooLarge),
    /// `MAIN_RED`: a red post check covers a path it changes.
    MainRed(crate::red::detail::Refusal),
    /// `CHANGE_ALREADY_MERGED`: its merged marker stands though its record holds no merge.
    AlreadyMerged {
        marker: String,
        commit: Oid,
        why: String,
    },
    /// `DEPENDENCY_ABANDONED`: changes it names with `--after` ended unmerged.
    DependencyAbandoned { ended: Vec<ChangeId> },
}

impl Unmerged {
    pub fn policy_missing(base: Oid) -> Unmerged {
        Unmerged::PolicyMissing {
            path: POLICY_PATH,
            base,
        }
    }

    pub fn policy_invalid(why: String) -> Unmerged {
        Unmerged::PolicyInvalid {
            path: POLICY_PATH,
            why,
        }
    }

    /// The request names `draft`, of which the remote lacks `missing`.
    pub fn draft_missing(draft: Oid, missing: Vec<Oid>) -> Unmerged {
        let why = format!(
            "the draft this request names, or the version of main it was made on, is not on the \
             remote ({}), so bay cannot build it; start the work again as a new change",
            missing
                .iter()
                .map(Oid::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        );
        Unmerged::DraftMissing {
            why,
            draft,
            missing,
            hint: "its record names a draft the remote does not hold: start the work again with \
                   `bay start <intent> --new`",
        }
    }

    /// The change's merged marker `marker` names `commit`, though its record holds no merge.
    pub fn already_merged(marker: String, commit: Oid) -> Unmerged {
        let why = format!(
            "{marker} says this change merged as {commit}, though its record holds no merge; bay \
             never merges a change twice"
        );
        Unmerged::AlreadyMerged {
            marker,
            commit,
            why,
        }
    }

    /// The operation's state once ended so.
    fn state(&self) -> OpState {
        match self {
            Unmerged::DraftMissing { .. } => OpState::Failed,
            Unmerged::NoEffect { .. } => OpState::NoEffect,
            _ => OpState::Blocked,
        }
    }

    /// The reason code it ends with, if any.
    fn reason(&self) -> Option<ReasonCode> {
        Some(match self {
            Unmerged::DeadlineExceeded { .. } => ReasonCode::QueueDeadlineExceeded,
            Unmerged::PolicyMissing { .. } => ReasonCode::PolicyMissing,
            Unmerged::PolicyInvalid { .. } => ReasonCode::PolicyInvalid,
            Unmerged::MergeConflict { .. } => ReasonCode::MergeConflict,
            Unmerged::DraftMissing { .. } | Unmerged::NoEffect { .. } => return None,
            Unmerged::TooLarge(_) => ReasonCode::ChangeTooLarge,
            Unmerged::MainRed(_) => ReasonCode::MainRed,
            Unmerged::AlreadyMerged { .. } => ReasonCode::ChangeAlreadyMerged,
            Unmerged::DependencyAbandoned { .. } => ReasonCode::DependencyAbandoned,
        })
    }

    /// The end as the work writes it.
    pub fn ending(&self) -> Ending {
        Ending {
            state: self.state(),
            reason: self.reason(),
            detail: self.to_json(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:040x}")).expect("an oid")
    }

    #[test]
    fn each_end_names_its_state_reason_and_detail() {
        let ends = [
            (
                Unmerged::DeadlineExceeded {
                    progress_deadline_s: 1900,
                    releases: 3,
                },
                OpState::Blocked,
                Some(ReasonCode::QueueDeadlineExceeded),
                json!({"progress_deadline_s": 1900, "releases": 3}),
            ),
            (
                Unmerged::policy_missing(oid(1)),
                OpState::Blocked,
                Some(ReasonCode::PolicyMissing),
                json!({"path": ".bay/policy.toml", "base": oid(1)}),
            ),
            (
                Unmerged::policy_invalid("no revision".into()),
                OpState::Blocked,
                Some(ReasonCode::PolicyInvalid),
                json!({"path": ".bay/policy.toml", "why": "no revision"}),
            ),
            (
                Unmerged::MergeConflict {
                    paths: vec!["src/a.rs".into()],
                },
                OpState::Blocked,
                Some(ReasonCode::MergeConflict),
                json!({"paths": ["src/a.rs"]}),
            ),
            (
                Unmerged::NoEffect {
                    main_commit: oid(2),
                    tree: oid(3),
                },
                OpState::NoEffect,
                None,
                json!({"main_commit": oid(2), "tree": oid(3)}),
            ),
            (
                Unmerged::MainRed(crate::red::detail::Refusal {
                    red: Vec::new(),
                    owners: Vec::new(),
                    trust: crate::red::TRUST,
                }),
                OpState::Blocked,
                Some(ReasonCode::MainRed),
                json!({"red": [], "owners": [], "trust": "unsigned"}),
            ),
        ];
        for (end, state, reason, detail) in ends {
            let ending = end.ending();
            assert_eq!(
                (ending.state, ending.reason, ending.detail),
                (state, reason, detail)
            );
        }
    }

    #[test]
    fn a_missing_draft_fails_naming_what_is_missing_and_what_to_do() {
        let ending = Unmerged::draft_missing(oid(4), vec![oid(4), oid(5)]).ending();
        assert_eq!((ending.state, ending.reason), (OpState::Failed, None));
        assert_eq!(ending.detail["missing"], json!([oid(4), oid(5)]));
        let why = ending.detail["why"].as_str().unwrap_or_default();
        assert!(why.contains(oid(5).as_str()), "{why}");
        let hint = ending.detail["hint"].as_str().unwrap_or_default();
        assert!(hint.contains("bay start <intent> --new"), "{hint}");
    }

    #[test]
    fn a_marker_without_a_merge_names_it_and_never_merges_twice() {
        let ending = Unmerged::already_merged("refs/bay/landed/c7k2m4qa".into(), oid(6)).ending();
        assert_eq!(ending.reason, Some(ReasonCode::ChangeAlreadyMerged));
        assert_eq!(ending.detail["marker"], "refs/bay/landed/c7k2m4qa");
        assert_eq!(ending.detail["commit"], json!(oid(6)));
        let why = ending.detail["why"].as_str().unwrap_or_default();
        assert!(why.contains("never merges a change twice"), "{why}");
    }
}
