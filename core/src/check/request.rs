//! The `bay.check.request/1` document: everything a check is told about the candidate.
//!
//! bay writes one request to the check's stdin. The field names are the contract that check
//! authors program against, so they are spelled here once and pinned by a golden test.

use serde::{Deserialize, Serialize};

use super::{CommitTree, schema_tag};
use crate::id::ChangeId;

/// At most this many of the change's own commit messages go to a check.
pub const MAX_MESSAGES: usize = 50;

/// At most this many bytes of commit messages, summed over the kept messages, go to a check.
pub const MAX_MESSAGES_BYTES: usize = 64 * 1024;

schema_tag! {
    /// The `schema` of a check request: always `bay.check.request/1`.
    RequestSchema = "bay.check.request/1"
}

/// The check fields a request is built from, as the policy at the base names them.
///
/// core's policy module owns the full `[[check]]` entry; this is the slice the contract needs,
/// so that building and judging a request does not wait on the rest of the policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CheckTarget {
    /// The check's `id` in the policy.
    pub id: String,
    /// The environment a runner must serve to run it.
    pub environment: String,
    /// How long the check may run, in seconds.
    pub timeout_s: u64,
    /// The least units the check must report for a pass. Not sent to the check: a check that
    /// knew the bar could aim for it instead of reporting what it ran.
    pub expected_minimum: u64,
    /// Pinned fixtures, each `<name>@sha256:<hex>`, passed through as the policy gives them.
    pub fixtures: Vec<String>,
}

/// The change a request is about, when it is about exactly one change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ChangeContext {
    pub id: ChangeId,
    pub intent: String,
    pub actor: String,
    /// The change's own commit messages, oldest first. The request keeps only the newest that
    /// fit its bounds.
    pub messages: Vec<String>,
}

/// Everything [`CheckRequest::build`] needs, as plain data from the caller.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RequestInput {
    pub target: CheckTarget,
    /// The revision of the policy the check is judged by, sent as `plan.version`.
    pub policy_revision: String,
    /// The exact commit and tree to judge.
    pub candidate: CommitTree,
    /// The main commit the candidate was merged onto.
    pub base: CommitTree,
    /// The paths the candidate changes against `base`.
    pub changed_paths: Vec<String>,
    /// The change, or `None` for a batch or a bisect, which check no single change.
    pub change: Option<ChangeContext>,
}

/// The `plan` of a request: which check this is, under which policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RequestPlan {
    pub id: String,
    /// The policy's revision.
    pub version: String,
}

/// What the check needs from the machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Requires {
    pub environment: String,
    pub fixtures: Vec<String>,
}

/// What a check may read besides what every check gets.
///
/// Only the tree for now: reading the commit or history keys evidence by commit and needs a
/// read-only Git directory in the request, which the drivers do not give yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum CheckInput {
    Tree,
}

/// The change's id, intent and actor, as the request names them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ChangeInfo {
    pub id: ChangeId,
    pub intent: String,
    pub actor: String,
}

/// The `bay.check.request/1` document. Serialized field order is the declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CheckRequest {
    pub schema: RequestSchema,
    pub candidate: CommitTree,
    pub changed_paths: Vec<String>,
    pub plan: RequestPlan,
    pub requires: Requires,
    pub timeout_s: u64,
    pub inputs: Vec<CheckInput>,
    pub base: CommitTree,
    /// Absent for a batch or a bisect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeInfo>,
    /// The change's own commit messages, oldest first; absent when `change` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<String>>,
    /// Set when bay dropped older messages to stay within [`MAX_MESSAGES`] and
    /// [`MAX_MESSAGES_BYTES`]; absent otherwise.
    #[serde(default, skip_serializing_if = "is_false")]
    pub messages_truncated: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl CheckRequest {
    /// Builds the request for one check on one candidate.
    ///
    /// `changed_paths` is sorted and deduplicated, so the same change always gives the same
    /// bytes whatever order the driver listed them in.
    pub fn build(input: RequestInput) -> CheckRequest {
        let RequestInput {
            target,
            policy_revision,
            candidate,
            base,
            mut changed_paths,
            change,
        } = input;
        changed_paths.sort();
        changed_paths.dedup();
        let (change, messages, messages_truncated) = match change {
            Some(ChangeContext {
                id,
                intent,
                actor,
                messages,
            }) => {
                let (kept, truncated) = newest_messages(messages);
                (
                    Some(ChangeInfo { id, intent, actor }),
                    Some(kept),
                    truncated,
                )
            }
            None => (None, None, false),
        };
        CheckRequest {
            schema: RequestSchema,
            candidate,
            changed_paths,
            plan: RequestPlan {
                id: target.id,
                version: policy_revision,
            },
            requires: Requires {
                environment: target.environment,
                fixtures: target.fixtures,
            },
            timeout_s: target.timeout_s,
            inputs: vec![CheckInput::Tree],
            base,
            change,
            messages,
            messages_truncated,
        }
    }

    /// The compact JSON the check reads on stdin.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .expect("a request is plain data with string keys, which always serializes")
    }

    /// Reads a request back, refusing one of another schema.
    pub fn from_json(text: &str) -> Result<CheckRequest, String> {
        serde_json::from_str(text).map_err(|e| format!("not a bay.check.request/1 document: {e}"))
    }
}

/// Keeps the newest messages that fit both bounds, oldest first, and says whether any were
/// dropped.
///
/// Whole messages only: a message cut in the middle could lose the trailers a check reads at
/// its end, so a message that does not fit is dropped together with every older one. Were
/// older ones kept past a gap, a check could not tell which commits are missing.
fn newest_messages(messages: Vec<String>) -> (Vec<String>, bool) {
    let mut bytes = 0usize;
    let mut keep = 0usize;
    for message in messages.iter().rev() {
        let total = bytes.saturating_add(message.len());
        if keep == MAX_MESSAGES || total > MAX_MESSAGES_BYTES {
            break;
        }
        bytes = total;
        keep += 1;
    }
    let drop = messages.len() - keep;
    (messages.into_iter().skip(drop).collect(), drop > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Oid;

    fn oid(digit: char) -> Oid {
        Oid::parse(&digit.to_string().repeat(40)).expect("forty hex digits")
    }

    fn input(change: Option<ChangeContext>) -> RequestInput {
        RequestInput {
            target: CheckTarget {
                id: "unit".into(),
                environment: "linux-x86_64".into(),
                timeout_s: 600,
                expected_minimum: 1,
                fixtures: vec![],
            },
            policy_revision: "p7".into(),
            candidate: CommitTree {
                commit: oid('a'),
                tree: oid('b'),
            },
            base: CommitTree {
                commit: oid('c'),
                tree: oid('d'),
            },
            changed_paths: vec!["src/b.rs".into(), "src/a.rs".into(), "src/b.rs".into()],
            change,
        }
    }

    fn change(messages: Vec<String>) -> ChangeContext {
        ChangeContext {
            id: ChangeId::parse("c7k2m4qa").expect("a valid id"),
            intent: "fix the login".into(),
            actor: "agent-1".into(),
            messages,
        }
    }

    #[test]
    fn request_json_matches_the_contract_field_names() {
        let request = CheckRequest::build(input(Some(change(vec!["first".into()]))));
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let c = "c".repeat(40);
        let d = "d".repeat(40);
        let golden = format!(
            concat!(
                r#"{{"schema":"bay.check.request/1","#,
                r#""candidate":{{"commit":"{a}","tree":"{b}"}},"#,
                r#""changed_paths":["src/a.rs","src/b.rs"],"#,
                r#""plan":{{"id":"unit","version":"p7"}},"#,
                r#""requires":{{"environment":"linux-x86_64","fixtures":[]}},"#,
                r#""timeout_s":600,"#,
                r#""inputs":["tree"],"#,
                r#""base":{{"commit":"{c}","tree":"{d}"}},"#,
                r#""change":{{"id":"c7k2m4qa","intent":"fix the login","actor":"agent-1"}},"#,
                r#""messages":["first"]}}"#,
            ),
            a = a,
            b = b,
            c = c,
            d = d,
        );
        assert_eq!(request.to_json(), golden);
        assert_eq!(CheckRequest::from_json(&golden), Ok(request));
    }

    #[test]
    fn a_batch_request_has_no_change_or_messages() {
        let json = CheckRequest::build(input(None)).to_json();
        assert!(!json.contains("\"change\""));
        assert!(!json.contains("\"messages"));
    }

    #[test]
    fn another_request_schema_is_refused() {
        let json = CheckRequest::build(input(None))
            .to_json()
            .replace("bay.check.request/1", "bay.check.request/2");
        assert!(CheckRequest::from_json(&json).is_err());
    }

    #[test]
    fn messages_keep_the_newest_fifty() {
        let messages: Vec<String> = (0..60).map(|n| format!("m{n}")).collect();
        let request = CheckRequest::build(input(Some(change(messages))));
        let kept = request.messages.expect("a change has messages");
        assert_eq!(kept.len(), MAX_MESSAGES);
        assert_eq!(kept.first().map(String::as_str), Some("m10"));
        assert_eq!(kept.last().map(String::as_str), Some("m59"));
        assert!(request.messages_truncated);
        let json = CheckRequest::build(input(Some(change(vec!["x".into(); 60])))).to_json();
        assert!(json.ends_with(r#""messages_truncated":true}"#));
    }

    #[test]
    fn messages_keep_the_newest_64_kib() {
        // Exactly 64 KiB fits and is not truncated.
        let half = "x".repeat(MAX_MESSAGES_BYTES / 2);
        let request = CheckRequest::build(input(Some(change(vec![half.clone(), half.clone()]))));
        assert_eq!(request.messages.as_ref().map(Vec::len), Some(2));
        assert!(!request.messages_truncated);

        // One byte more drops the oldest whole message.
        let older = format!("{half}!");
        let request =
            CheckRequest::build(input(Some(change(vec![older, half.clone(), "new".into()]))));
        assert_eq!(request.messages, Some(vec![half, "new".into()]));
        assert!(request.messages_truncated);
    }

    #[test]
    fn an_oversized_newest_message_leaves_none() {
        let huge = "y".repeat(MAX_MESSAGES_BYTES + 1);
        let request = CheckRequest::build(input(Some(change(vec!["old".into(), huge]))));
        assert_eq!(request.messages, Some(vec![]));
        assert!(request.messages_truncated);
    }

    #[test]
    fn few_messages_are_kept_whole_and_not_flagged() {
        let request = CheckRequest::build(input(Some(change(vec!["a".into(), "b".into()]))));
        assert_eq!(request.messages, Some(vec!["a".into(), "b".into()]));
        assert!(!request.messages_truncated);
        assert!(!request.to_json().contains("messages_truncated"));
    }
}
