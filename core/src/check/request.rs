//! The `bay.check.request/1` document: everything a check is told about the candidate.
//!
//! bay writes one request to the check's stdin. The field names are the contract that check
//! authors program against, so they are spelled here once and pinned by a golden test.

use serde::{Deserialize, Serialize};

use super::{CommitTree, schema_tag};
use crate::git::Oid;
use crate::id::ChangeId;
use crate::policy::{self, CheckSpec, Materialize};

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
    /// What the check reads beyond the tree: [`CheckInput::Commit`] or
    /// [`CheckInput::History`], each at most once. The tree is always read, and not listed.
    pub inputs: Vec<CheckInput>,
    /// `Some` when the check gets only the changed files (`materialize = "changed"`).
    pub materialized: Option<Materialized>,
}

impl CheckTarget {
    /// Whether this check's evidence counts only for the exact commit (see
    /// [`CheckRequest::keyed_by_commit`]): its note then hangs on the commit, not the tree.
    pub fn keyed_by_commit(&self) -> bool {
        keyed_by_commit(&self.inputs, self.materialized)
    }

    /// The slice of a `[[check]]` entry that the request is built from.
    pub fn of(check: &CheckSpec) -> CheckTarget {
        CheckTarget {
            id: check.id.clone(),
            environment: check.environment.clone(),
            timeout_s: check.timeout_s,
            expected_minimum: check.expected_minimum,
            fixtures: check.fixtures.iter().map(ToString::to_string).collect(),
            inputs: check.inputs.iter().copied().map(CheckInput::from).collect(),
            materialized: match check.materialize {
                Materialize::Tree => None,
                Materialize::Changed => Some(Materialized::Changed),
            },
        }
    }
}

/// Reading the commit or history, or seeing only what changed against the base, ties what a
/// check saw to one commit.
fn keyed_by_commit(inputs: &[CheckInput], materialized: Option<Materialized>) -> bool {
    materialized.is_some()
        || inputs
            .iter()
            .any(|input| matches!(input, CheckInput::Commit | CheckInput::History))
}

/// The change a request is about, when it is about exactly one change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ChangeContext {
    pub id: ChangeId,
    pub intent: String,
    pub actor: String,
    /// The change's own last commit (its draft), which a history-reading check lists the
    /// change's commits up to.
    pub revision: Oid,
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

/// What a check may read: the tree always, and the commit or history when its policy says so.
/// Reading either of the last two keys the check's evidence by commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum CheckInput {
    Tree,
    /// The request's `base`, `change` and `messages`.
    Commit,
    /// The commit, and the repository's history through the request's `git`.
    History,
}

impl From<policy::CheckInput> for CheckInput {
    fn from(input: policy::CheckInput) -> CheckInput {
        match input {
            policy::CheckInput::Commit => CheckInput::Commit,
            policy::CheckInput::History => CheckInput::History,
        }
    }
}

/// How the candidate was copied for the check, when it is not the whole tree of its `paths`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum Materialized {
    /// Only the files the candidate changes against its base, plus the check's `paths`: the
    /// check must not read a missing file as deleted.
    Changed,
}

/// Where a history-reading check reads the repository's history, read-only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct GitHistory {
    /// The temporary Git directory, an absolute path on the machine that runs the check. Only
    /// the driver that makes it knows where that is, so the request core builds leaves it
    /// empty and the driver names it with [`CheckRequest::with_git_dir`].
    pub dir: String,
    pub refs: HistoryRefs,
}

/// The commits a history-reading check starts from: `git log <base>..<revision>` lists the
/// change's own commits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HistoryRefs {
    pub base: Oid,
    pub candidate: Oid,
    /// The change's draft; absent for a batch or a bisect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<Oid>,
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
    /// `changed` when the check sees only the changed files; absent for the whole tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub materialized: Option<Materialized>,
    /// Only with `inputs = ["history"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitHistory>,
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
        let git = target
            .inputs
            .contains(&CheckInput::History)
            .then(|| GitHistory {
                dir: String::new(),
                refs: HistoryRefs {
                    base: base.commit.clone(),
                    candidate: candidate.commit.clone(),
                    revision: change.as_ref().map(|c| c.revision.clone()),
                },
            });
        let (change, messages, messages_truncated) = match change {
            Some(ChangeContext {
                id,
                intent,
                actor,
                revision: _,
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
        let mut inputs = vec![CheckInput::Tree];
        inputs.extend(target.inputs);
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
            inputs,
            base,
            change,
            messages,
            messages_truncated,
            materialized: target.materialized,
            git,
        }
    }

    /// This request with the history directory named `dir`, as the driver made it; a request
    /// that gives no history is returned as it is.
    pub fn with_git_dir(&self, dir: &str) -> CheckRequest {
        let mut request = self.clone();
        if let Some(git) = &mut request.git {
            git.dir = dir.to_owned();
        }
        request
    }

    /// Whether the check's evidence counts only for the exact commit, never for another commit
    /// with the same tree: it reads the commit or history, or what it saw depends on the base.
    pub fn keyed_by_commit(&self) -> bool {
        keyed_by_commit(&self.inputs, self.materialized)
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
                inputs: vec![],
                materialized: None,
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
            revision: oid('e'),
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
    fn history_lists_its_inputs_and_names_the_commits_to_read() {
        let mut built = input(Some(change(vec![])));
        built.target.inputs = vec![CheckInput::History];
        let request = CheckRequest::build(built);
        assert_eq!(request.inputs, [CheckInput::Tree, CheckInput::History]);
        assert!(request.keyed_by_commit());
        let json = request.with_git_dir("/g/bay/check/a/git").to_json();
        let e = "e".repeat(40);
        let a = "a".repeat(40);
        let c = "c".repeat(40);
        assert!(json.contains(r#""inputs":["tree","history"]"#), "{json}");
        assert!(
            json.ends_with(&format!(
                r#""git":{{"dir":"/g/bay/check/a/git","refs":{{"base":"{c}","candidate":"{a}","revision":"{e}"}}}}}}"#
            )),
            "{json}"
        );

        // Only history gives a Git directory; commit keys by commit all the same.
        let mut built = input(None);
        built.target.inputs = vec![CheckInput::Commit];
        let request = CheckRequest::build(built);
        assert_eq!(request.git, None);
        assert!(request.keyed_by_commit());
        assert_eq!(request.with_git_dir("/x"), request);
        assert!(request.to_json().contains(r#""inputs":["tree","commit"]"#));
        assert!(!CheckRequest::build(input(None)).keyed_by_commit());
    }

    #[test]
    fn a_changed_only_check_is_told_so_and_keyed_by_commit() {
        let mut built = input(None);
        built.target.materialized = Some(Materialized::Changed);
        let request = CheckRequest::build(built);
        assert!(request.keyed_by_commit());
        assert!(request.to_json().ends_with(r#""materialized":"changed"}"#));
        assert!(
            !CheckRequest::build(input(None))
                .to_json()
                .contains("materialized")
        );
    }

    #[test]
    fn a_target_is_the_checks_own_slice_of_the_policy() {
        let policy = crate::policy::Policy::parse(
            "revision = 1\n[[check]]\nid = \"t\"\nenvironment = \"e\"\ncommand = \"c\"\n\
             adapter = [\"c\"]\nexpected_minimum = 2\ntimeout_s = 9\ninputs = [\"history\", \"commit\"]\n\
             materialize = \"changed\"\nfixtures = [\"f@sha256:{}\"]\n"
                .replace("{}", &"0".repeat(64))
                .as_str(),
        )
        .expect("a valid policy");
        let target = CheckTarget::of(&policy.checks[0]);
        assert_eq!(target.inputs, [CheckInput::History, CheckInput::Commit]);
        assert_eq!(target.materialized, Some(Materialized::Changed));
        assert_eq!((target.timeout_s, target.expected_minimum), (9, 2));
        assert_eq!(target.fixtures, [format!("f@sha256:{}", "0".repeat(64))]);
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
