//! What `bay waiting` lists: each change that waits for an approval, with the checks owed
//! and what its candidate changes, and each change blocked on a check a waiver could let
//! through.

use serde::Serialize;
use serde_json::Value;

use crate::check::Verdict;
use crate::detail::{Detail, Unread};
use crate::git::Oid;
use crate::id::{CandidateId, ChangeId};
use crate::limits::PathStat;

/// The answer's `detail`: the approver it lists for (`null` without `bay.approverName`) and
/// what waits, the approvals in queue order and then the waivers.
#[derive(Serialize)]
pub(super) struct Listed<'a> {
    pub approver: Option<&'a str>,
    pub waiting: Vec<Item<'a>>,
}

impl Detail for Listed<'_> {}

/// One thing listed: a yes owed or a waiver offered.
#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Item<'a> {
    Approval(&'a Approval),
    Waiver(&'a Waiver),
}

/// A change whose live operation waits for a yes on its released candidate. What the
/// release named (`paths`, `checks`, `approve`, `reject`, `lands_by`) is carried as the
/// record holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(super) struct Approval {
    pub change: ChangeId,
    pub intent: String,
    pub actor: String,
    pub candidate: CandidateId,
    pub commit: Oid,
    pub tree: Oid,
    pub paths: Value,
    /// Only the checks this machine's approver may answer (every one without one).
    pub checks: Vec<Value>,
    pub approve: Value,
    pub reject: Value,
    pub lands_by: Value,
    /// What the candidate changes, once measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Diff>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Diff {
    pub summary: Summary,
}

/// `diff.summary`: what a candidate changes against its base, or why it could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub(super) enum Summary {
    /// The files it adds, changes and removes (and how many in all), and the lines it adds
    /// and removes (a binary file's count none).
    Measured {
        files: usize,
        added: usize,
        changed: usize,
        removed: usize,
        lines_added: u64,
        lines_removed: u64,
    },
    Unread(Unread),
}

impl Summary {
    pub fn of(stats: &[PathStat]) -> Summary {
        let removed = stats.iter().filter(|s| s.bytes.is_none()).count();
        // A path the base lacks that the candidate lacks too is no change a diff lists; a
        // driver that says so anyway is counted as removed, never a panic.
        let added = stats
            .iter()
            .filter(|s| s.created && s.bytes.is_some())
            .count();
        Summary::Measured {
            files: stats.len(),
            added,
            changed: stats.len().saturating_sub(added + removed),
            removed,
            lines_added: stats.iter().filter_map(|s| s.added_lines).sum(),
            lines_removed: stats.iter().filter_map(|s| s.removed_lines).sum(),
        }
    }
}

/// A change whose last operation ended blocked on a check, on its last candidate: listed
/// when the policy at that candidate's base marks the check waivable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Waiver {
    pub change: ChangeId,
    pub intent: String,
    pub actor: String,
    pub candidate: CandidateId,
    pub commit: Oid,
    /// The one check it is blocked on, listed as a list.
    pub waivable: [Waivable; 1],
}

/// A check a waiver could let through: its real verdict, and the command that waives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Waivable {
    pub check: String,
    pub environment: String,
    pub verdict: Verdict,
    pub waive: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Only the tests read these alone: `Listed` writes them.
    impl Detail for Approval {}
    impl Detail for Summary {}
    impl Detail for Waiver {}

    fn change() -> ChangeId {
        ChangeId::parse("c7k2m4qa").expect("a change id")
    }

    fn oid(hex: char) -> Oid {
        Oid::parse(&hex.to_string().repeat(40)).expect("an oid")
    }

    fn candidate() -> CandidateId {
        CandidateId::parse("c7k2m4qa.1.1").expect("a candidate id")
    }

    fn approval() -> Approval {
        Approval {
            change: change(),
            intent: "greet".into(),
            actor: "ann".into(),
            candidate: candidate(),
            commit: oid('a'),
            tree: oid('b'),
            paths: json!(["src/"]),
            checks: vec![json!({"check": "review"})],
            approve: json!("bay approve c7k2m4qa"),
            reject: Value::Null,
            lands_by: json!("executor"),
            diff: None,
        }
    }

    #[test]
    fn an_approval_names_its_diff_once_measured() {
        let mut approval = approval();
        let before = json!({
            "change": "c7k2m4qa", "intent": "greet", "actor": "ann", "candidate": "c7k2m4qa.1.1",
            "commit": "a".repeat(40), "tree": "b".repeat(40), "paths": ["src/"],
            "checks": [{"check": "review"}], "approve": "bay approve c7k2m4qa",
            "reject": null, "lands_by": "executor",
        });
        assert_eq!(approval.to_json(), before);
        approval.diff = Some(Diff {
            summary: Summary::Unread(Unread {
                unread: "no disk".into(),
            }),
        });
        let mut after = before;
        after["diff"] = json!({"summary": {"unread": "no disk"}});
        assert_eq!(approval.to_json(), after);
    }

    #[test]
    fn a_waiver_lists_its_one_check() {
        let waiver = Waiver {
            change: change(),
            intent: "greet".into(),
            actor: "ann".into(),
            candidate: candidate(),
            commit: oid('a'),
            waivable: [Waivable {
                check: "lint".into(),
                environment: "linux".into(),
                verdict: Verdict::ProductFailure,
                waive: "bay approve c7k2m4qa --waive lint --why <text>".into(),
            }],
        };
        assert_eq!(
            waiver.to_json(),
            json!({
                "change": "c7k2m4qa", "intent": "greet", "actor": "ann", "candidate": "c7k2m4qa.1.1",
                "commit": "a".repeat(40),
                "waivable": [{"check": "lint", "environment": "linux", "verdict": "product_failure",
                              "waive": "bay approve c7k2m4qa --waive lint --why <text>"}],
            })
        );
        let approval = approval();
        let listed = Listed {
            approver: None,
            waiting: vec![Item::Approval(&approval), Item::Waiver(&waiver)],
        };
        assert_eq!(
            listed.to_json(),
            json!({"approver": null, "waiting": [approval.to_json(), waiver.to_json()]})
        );
    }

    #[test]
    fn a_summary_counts_each_path_once_even_when_a_driver_says_the_impossible() {
        let stat = PathStat::new;
        let stats = [
            stat("new.txt", Some(4), true, Some((2, 0))),
            stat("edited.txt", Some(9), false, Some((1, 3))),
            stat("gone.txt", None, false, Some((0, 5))),
            stat("image.png", Some(7), false, None),
            // New and gone at once: no diff says so, but a driver might.
            stat("odd.txt", None, true, Some((0, 0))),
        ];
        assert_eq!(
            Summary::of(&stats).to_json(),
            json!({
                "files": 5, "added": 1, "changed": 2, "removed": 2,
                "lines_added": 3, "lines_removed": 8,
            })
        );
    }
}
