//! What a judgement of approvals names in its `detail`: each counted answer, each yes still
//! owed and why a yes that might have carried was set aside, and the `detail` of a candidate
//! rejected or still waiting.

use serde::Serialize;

use crate::detail::Detail;
use crate::git::Oid;
use crate::id::ChangeId;

/// One approver's counted answer on one check, as its record says it. A yes carried from an
/// earlier candidate also names where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counted {
    pub check: String,
    pub environment: String,
    pub approver: String,
    /// The record's word: `pass` is a yes, any other a no.
    pub verdict: String,
    pub why: String,
    /// The record's id.
    pub record: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub carried: Option<CarriedFrom>,
}

/// Where a carried yes was said: its record, on the earlier candidate's commit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CarriedFrom {
    pub carried_from: String,
    pub from_commit: Oid,
}

/// Why a yes on an earlier candidate does not hold for this one, with its record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SetAside {
    /// The files could not be compared, so none is known to be the same.
    Uncompared { record: String, why: String },
    /// These files under the check's `when_paths` (or the policy) changed since.
    Changed { record: String, paths: Vec<String> },
    /// A no was said on the same files as this candidate's.
    Stopped {
        record: String,
        /// The no's record.
        stopped_by: String,
        why: &'static str,
    },
}

/// An approval check still owed a yes, and who may give it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Owed {
    pub check: String,
    pub environment: String,
    /// The approvers the registry enrols whom the check allows.
    pub approvers: Vec<String>,
    /// The check's own `producers`, when it names them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producers: Option<Vec<String>>,
    /// A yes on an earlier candidate that did not carry, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub set_aside: Option<SetAside>,
    /// Why no yes can come yet: no registry, or no approver enrolled that it allows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'static str>,
}

/// A candidate a counted no rejects: who said no, on which checks; its author repairs it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejected {
    pub candidate: String,
    pub commit: Oid,
    pub why: String,
    pub checks: Vec<Counted>,
    /// Always `author_repairs`.
    pub lands_by: &'static str,
}

impl Detail for Rejected {}

/// A candidate still owed a yes: the checks and from whom, and the commands that answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pending {
    pub candidate: String,
    pub commit: Oid,
    pub tree: Oid,
    pub checks: Vec<Owed>,
    pub approve: String,
    pub reject: String,
    /// The `bay evidence record` command that records a yes by hand.
    pub record: String,
}

/// The live change that has waited longest for an approval, and for how long.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OldestWaiting {
    pub change: ChangeId,
    pub intent: String,
    pub actor: String,
    /// Seconds since its wait began, on its writer's clock.
    pub age_s: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Only the tests read these alone: the runner writes them inside other details.
    impl Detail for Counted {}
    impl Detail for SetAside {}
    impl Detail for Pending {}
    impl Detail for OldestWaiting {}

    fn oid(hex: char) -> Oid {
        Oid::parse(&hex.to_string().repeat(40)).expect("an oid")
    }

    fn yes() -> Counted {
        Counted {
            check: "billing-approval".into(),
            environment: "people".into(),
            approver: "alice".into(),
            verdict: "pass".into(),
            why: "fine".into(),
            record: "alice/yes".into(),
            carried: None,
        }
    }

    fn said() -> serde_json::Value {
        json!({"check": "billing-approval", "environment": "people", "approver": "alice",
               "verdict": "pass", "why": "fine", "record": "alice/yes"})
    }

    #[test]
    fn a_counted_answer_names_where_it_was_carried_from_only_when_carried() {
        let rejected = Rejected {
            candidate: "c7k2m4qa.1.1".into(),
            commit: oid('a'),
            why: "rejected by alice".into(),
            checks: vec![yes()],
            lands_by: "author_repairs",
        };
        assert_eq!(
            rejected.to_json(),
            json!({"candidate": "c7k2m4qa.1.1", "commit": "a".repeat(40),
                   "why": "rejected by alice", "checks": [said()],
                   "lands_by": "author_repairs"})
        );
        let carried = Counted {
            carried: Some(CarriedFrom {
                carried_from: "alice/yes".into(),
                from_commit: oid('d'),
            }),
            ..yes()
        };
        let mut expected = said();
        expected["carried_from"] = json!("alice/yes");
        expected["from_commit"] = json!("d".repeat(40));
        let rejected = Rejected {
            checks: vec![carried],
            ..rejected
        };
        assert_eq!(rejected.to_json()["checks"], json!([expected]));
    }

    #[test]
    fn the_oldest_waiting_change_names_itself_and_its_age() {
        let oldest = OldestWaiting {
            change: ChangeId::parse("c7k2m4qa").expect("a change id"),
            intent: "greet".into(),
            actor: "ann".into(),
            age_s: 60,
        };
        assert_eq!(
            oldest.to_json(),
            json!({"change": "c7k2m4qa", "intent": "greet", "actor": "ann", "age_s": 60})
        );
    }

    #[test]
    fn a_set_aside_yes_names_its_record_and_why() {
        let record = || "alice/yes".to_owned();
        let asides = [
            SetAside::Uncompared {
                record: record(),
                why: "could not compare the files: gone".into(),
            },
            SetAside::Changed {
                record: record(),
                paths: vec!["billing/rates.txt".into()],
            },
            SetAside::Stopped {
                record: record(),
                stopped_by: "bob/no".into(),
                why: "a no",
            },
        ];
        let json = asides.map(|aside| aside.to_json());
        assert_eq!(
            json,
            [
                json!({"record": "alice/yes", "why": "could not compare the files: gone"}),
                json!({"record": "alice/yes", "paths": ["billing/rates.txt"]}),
                json!({"record": "alice/yes", "stopped_by": "bob/no", "why": "a no"}),
            ]
        );
    }

    #[test]
    fn a_pending_candidate_names_each_owed_check_and_only_what_it_has() {
        let bare = Owed {
            check: "billing-approval".into(),
            environment: "people".into(),
            approvers: vec!["alice".into()],
            producers: None,
            set_aside: None,
            why: None,
        };
        let full = Owed {
            producers: Some(vec!["bob".into()]),
            set_aside: Some(SetAside::Changed {
                record: "alice/yes".into(),
                paths: Vec::new(),
            }),
            why: Some("no approver"),
            approvers: Vec::new(),
            ..bare.clone()
        };
        let pending = Pending {
            candidate: "c7k2m4qa.1.1".into(),
            commit: oid('a'),
            tree: oid('b'),
            checks: vec![bare, full],
            approve: "bay approve c7k2m4qa".into(),
            reject: "bay reject c7k2m4qa".into(),
            record: "bay evidence record".into(),
        };
        assert_eq!(
            pending.to_json(),
            json!({
                "candidate": "c7k2m4qa.1.1", "commit": "a".repeat(40), "tree": "b".repeat(40),
                "checks": [
                    {"check": "billing-approval", "environment": "people",
                     "approvers": ["alice"]},
                    {"check": "billing-approval", "environment": "people", "approvers": [],
                     "producers": ["bob"], "set_aside": {"record": "alice/yes", "paths": []},
                     "why": "no approver"},
                ],
                "approve": "bay approve c7k2m4qa", "reject": "bay reject c7k2m4qa",
                "record": "bay evidence record",
            })
        );
    }
}
