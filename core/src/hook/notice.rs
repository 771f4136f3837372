//! The notices a session hears at its start or its next prompt: a refusal of its change's
//! merge, a failed or unknown check, an early merge conflict with its paths, another change
//! merged on its declared paths, and no runner running.
//!
//! The CLI reads [`NoticeFacts`] from this clone's refs as its last fetch left them (`bay
//! status`, `bay merge` and `bay start` fetch; the hook never does), and [`notices`] says what
//! to tell, each notice under a key: [`Session::notice`](super::Session::notice) says each key
//! once, within `[hooks] notice_budget_bytes` an hour. The same pure readers as `bay status`
//! decide: [`ChangeRecord::fold`] for the change's state, [`presence::judge`] and
//! [`presence::no_live_runner`] for the runners.

use crate::adapter::Moment;
use crate::check::Verdict;
use crate::git::Oid;
use crate::id::ChangeId;
use crate::machine::agent::fold_chain;
use crate::machine::{Action, ChainRead};
use crate::presence::{self, Presence};
use crate::reason::ReasonCode;
use crate::record::ChangeRecord;
use crate::result::OpState;
use crate::time::Timestamp;

/// The key of the no-runner notice: said once, and again only after a read that found a
/// runner fresh (or nothing waiting) cleared it.
pub const NO_RUNNER: &str = "no-runner";

/// The most main commits on its paths one read names; older ones wait for the next read
/// after a refresh.
pub const MERGED_ON_READ: u32 = 10;

/// The longest `why` a notice quotes from a refusal, in bytes.
const WHY_MAX: usize = 240;

/// What the notices read, as the CLI found it in this clone: never the network.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NoticeFacts {
    /// The view's change chain as this clone last fetched it (`None` when it holds none).
    pub chain: Option<ChainRead>,
    /// The paths where the change's queued draft conflicts with main as last fetched, from the
    /// test merge [`early_test`] asked for; empty when it merges cleanly or was not tested.
    pub conflicts: Vec<String>,
    /// Main's first-parent commits after the view's base that touch the paths it declares,
    /// newest first, at most [`MERGED_ON_READ`].
    pub merged_on: Vec<MainCommit>,
    /// The queue places this clone last fetched: operations that wait.
    pub waiting: u64,
    /// The runners' presences this clone last fetched.
    pub presences: Vec<PresenceRead>,
}

/// One main commit on the view's declared paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MainCommit {
    pub commit: Oid,
    /// Its message, whose `Change-Id:` trailer names the change that merged it.
    pub message: String,
    /// The declared paths it changed.
    pub paths: Vec<String>,
}

/// One runner's presence as this clone holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresenceRead {
    pub runner: String,
    /// The presence commit's message, or why it could not be read.
    pub message: Result<String, String>,
    /// When this clone first held that commit, on its own clock (`ReadSeen`).
    pub first_seen: Option<Timestamp>,
}

/// One thing to tell, under the key that says it once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub key: String,
    pub text: String,
}

/// Whether `moment` tells notices: a session's start and each prompt, where both products
/// hear the hook (Claude Code as `additionalContext`, Codex on stderr after its start, which
/// the spec's Codex note says a recorded session never showed). Never `tool.before`, which
/// must stay fast, nor a step: that Claude Code adds a `PostToolBatch` hook's words to the
/// model's context is not in the products' recorded facts, and a notice said where nobody
/// hears it would never come again.
pub fn heard_at(moment: Moment) -> bool {
    matches!(moment, Moment::SessionStart | Moment::TurnStart)
}

/// The test merge the early-conflict notice needs, as `bay status` runs it: the change's live
/// operation, while no runner holds it, onto main as last fetched. `None` when there is none
/// to test.
pub fn early_test(chain: &ChainRead, main: &Oid) -> Option<Action> {
    let (record, _) = fold_chain(chain).ok()?;
    let op = record.live_op().filter(|op| op.owner.is_none())?;
    Some(Action::TestMerge {
        onto: main.clone(),
        draft: op.draft.clone(),
        base: op.base.clone(),
    })
}

/// What to tell a session in the view of `view` (`None` outside any view) at `now`, oldest
/// news first: how its latest merge ended, an early conflict, main's commits on its paths,
/// then no runner. The second item says whether no runner runs, so the caller can forget the
/// [`NO_RUNNER`] key once that cleared.
pub fn notices(
    view: Option<&ChangeId>,
    facts: &NoticeFacts,
    now: Timestamp,
) -> (Vec<Notice>, bool) {
    let mut out = Vec::new();
    let record = facts
        .chain
        .as_ref()
        .and_then(|chain| fold_chain(chain).ok())
        .map(|(record, _)| record);
    if let (Some(change), Some(record)) = (view, &record)
        && record.change == *change
    {
        out.extend(ended(record));
        out.extend(conflict(record, &facts.conflicts));
    }
    if let Some(change) = view {
        out.extend(merged_on(change, &facts.merged_on));
    }
    let no_runner = no_runner(facts, now);
    out.extend(no_runner.clone());
    (out, no_runner.is_some())
}

/// The change's latest operation, when it ended refused or failed.
fn ended(record: &ChangeRecord) -> Option<Notice> {
    let op = record.ops.last()?;
    let outcome = op.outcome.as_ref()?;
    let change = &record.change;
    let see = format!("`bay status {change}` has the detail.");
    let detail = &outcome.detail;
    let text_of = |key: &str| detail.get(key).and_then(|v| v.as_str()).map(clip);
    match (outcome.state, outcome.reason) {
        (OpState::Blocked, Some(code @ (ReasonCode::CheckFailed | ReasonCode::CheckUnknown))) => {
            let check = text_of("check").unwrap_or_else(|| "a required check".into());
            let verdict = detail
                .get("verdict")
                .and_then(|v| serde_json::from_value::<Verdict>(v.clone()).ok());
            let said = match (code, verdict) {
                (ReasonCode::CheckFailed, _) => "failed".to_owned(),
                (_, Some(Verdict::InfraFailure)) => {
                    "gave no verdict (the machine or a tool failed), which is never a pass"
                        .to_owned()
                }
                _ => "gave no verdict, which is never a pass".to_owned(),
            };
            let why = text_of("why")
                .map(|why| format!(": {why}"))
                .unwrap_or_default();
            Some(Notice {
                key: format!("check:{}:{check}", op.id),
                text: format!(
                    "bay: the merge of change {change} ({}) was refused {code}: check {check} {said}{why}. {} {see}",
                    op.id,
                    code.info().next_step
                ),
            })
        }
        (OpState::Blocked, reason) => {
            let code = reason.map_or_else(|| "with no code".to_owned(), |c| c.to_string());
            let why = text_of("why")
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            let next = reason.map(|c| c.info().next_step).unwrap_or_default();
            Some(Notice {
                key: format!("refused:{}", op.id),
                text: format!(
                    "bay: the merge of change {change} ({}) was refused {code}{why}. {next} {see}",
                    op.id
                ),
            })
        }
        (OpState::Failed, reason) => {
            let code = reason.map(|c| format!(" {c}")).unwrap_or_default();
            Some(Notice {
                key: format!("failed:{}", op.id),
                text: format!(
                    "bay: the merge of change {change} ({}) ended failed{code}; nothing merged. {see} Then run `bay merge` again.",
                    op.id
                ),
            })
        }
        _ => None,
    }
}

/// The change's queued operation conflicts with main: once per operation and set of paths.
fn conflict(record: &ChangeRecord, paths: &[String]) -> Option<Notice> {
    let op = record.live_op().filter(|op| op.owner.is_none())?;
    if paths.is_empty() {
        return None;
    }
    let change = &record.change;
    let paths = paths.join(", ");
    Some(Notice {
        key: format!("conflict:{}:{paths}", op.id),
        text: format!(
            "bay: the queued merge of change {change} ({}) conflicts with main as this clone last fetched it, in {paths}. It keeps its place, and its own merge still decides. Refresh with `bay start {change}`, settle those paths in the view, then `bay merge` again.",
            op.id
        ),
    })
}

/// Each main commit on the change's declared paths that another change (or a push outside
/// bay) made, once.
fn merged_on(change: &ChangeId, commits: &[MainCommit]) -> Vec<Notice> {
    let mut out: Vec<Notice> = commits
        .iter()
        .filter(|commit| !commit.paths.is_empty())
        .filter_map(|commit| {
            let by = crate::lineage::change_of(&commit.message);
            if by.as_ref() == Some(change) {
                return None;
            }
            let who = match by {
                Some(other) => format!("change {other} merged"),
                None => "a commit outside bay landed".to_owned(),
            };
            Some(Notice {
                key: format!("merged-on:{}", commit.commit),
                text: format!(
                    "bay: {who} on paths change {change} declared (main {}: {}). Refresh with `bay start {change}`, then re-read those paths.",
                    commit.commit.short(),
                    commit.paths.join(", ")
                ),
            })
        })
        .collect();
    // Oldest first, as they landed.
    out.reverse();
    out
}

/// `no_live_runner`, as `bay status` judges it, from what this clone last fetched.
fn no_runner(facts: &NoticeFacts, now: Timestamp) -> Option<Notice> {
    let judged: Vec<presence::Judged> = facts
        .presences
        .iter()
        .map(|read| {
            let presence = read
                .message
                .clone()
                .and_then(|message| Presence::from_message(&message));
            presence::judge(&read.runner, &presence, read.first_seen, now)
        })
        .collect();
    let warning = presence::no_live_runner(facts.waiting, &judged)?;
    let waiting = warning.waiting;
    let heard = match judged.len() {
        0 => "no runner has written a presence".to_owned(),
        n => format!("none of the {n} runners it knows is fresh"),
    };
    Some(Notice {
        key: NO_RUNNER.into(),
        text: format!(
            "bay: no runner runs: {waiting} operation(s) wait in the queue and {heard}, as this clone last fetched. Queued merges wait until one runs: start one with `bay runner run`, or run yours here with `bay merge --wait`; `bay status` looks again."
        ),
    })
}

/// `text` cut to [`WHY_MAX`] bytes at a character boundary, on one line.
fn clip(text: &str) -> String {
    let line = text.replace('\n', " ");
    if line.len() <= WHY_MAX {
        return line;
    }
    let mut end = WHY_MAX;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &line[..end])
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::machine::RawStep;
    use crate::presence::PRESENCE_SCHEMA;
    use crate::record::{Step, StepBody};
    use serde_json::json;

    pub fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:040x}")).expect("forty hex digits")
    }

    pub fn change() -> ChangeId {
        ChangeId::parse("c7k2m4qa").expect("an id")
    }

    fn step(by: &str, body: StepBody) -> Step {
        Step {
            change: change(),
            at: Timestamp(1),
            by: by.into(),
            nonce: 7,
            body,
        }
    }

    /// The chain of `change()`, started and requested once, with `more` after the request.
    pub fn chain(more: Vec<StepBody>) -> ChainRead {
        let op = change().op(1);
        let mut steps = vec![
            step(
                "ann",
                StepBody::first_start("greet", "ann", &["src/"], oid(1)),
            ),
            step(
                "ann",
                StepBody::Request {
                    op,
                    draft: oid(2),
                    base: oid(1),
                    seq: 1,
                },
            ),
        ];
        steps.extend(more.into_iter().map(|body| step("r1", body)));
        let raw: Vec<RawStep> = steps
            .iter()
            .enumerate()
            .rev()
            .map(|(n, step)| RawStep {
                oid: oid(100 + n as u8),
                message: step.to_message(),
            })
            .collect();
        ChainRead {
            change: change(),
            tip: raw[0].oid.clone(),
            steps: raw,
            reached_known: false,
            unreadable: None,
        }
    }

    /// The chain of a request that a runner claimed and ended `state` with `reason`.
    pub fn ended(
        state: OpState,
        reason: Option<ReasonCode>,
        detail: serde_json::Value,
    ) -> ChainRead {
        let op = change().op(1);
        chain(vec![
            StepBody::Claim { op: op.clone() },
            StepBody::Outcome {
                op,
                state,
                reason,
                detail,
            },
        ])
    }

    fn facts(chain: ChainRead) -> NoticeFacts {
        NoticeFacts {
            chain: Some(chain),
            ..NoticeFacts::default()
        }
    }

    fn told(facts: &NoticeFacts) -> Vec<Notice> {
        notices(Some(&change()), facts, Timestamp::from_secs(1_000)).0
    }

    #[test]
    fn a_failed_check_names_the_check_its_why_and_the_next_step() {
        let chain = ended(
            OpState::Blocked,
            Some(ReasonCode::CheckFailed),
            json!({"check": "tests", "verdict": "product_failure", "why": "2 units failed"}),
        );
        let said = told(&facts(chain));
        assert_eq!(said.len(), 1, "{said:?}");
        assert_eq!(said[0].key, "check:c7k2m4qa.1:tests");
        let text = &said[0].text;
        for part in [
            "CHECK_FAILED",
            "check tests failed",
            "2 units failed",
            "bay status c7k2m4qa",
            "bay merge",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[test]
    fn an_unknown_check_is_never_a_pass() {
        let chain = ended(
            OpState::Blocked,
            Some(ReasonCode::CheckUnknown),
            json!({"check": "tests", "verdict": "infra_failure", "why": "timed out"}),
        );
        let said = told(&facts(chain));
        assert_eq!(said[0].key, "check:c7k2m4qa.1:tests");
        assert!(said[0].text.contains("CHECK_UNKNOWN"), "{}", said[0].text);
        assert!(said[0].text.contains("never a pass"), "{}", said[0].text);
    }

    #[test]
    fn another_refusal_and_a_failure_each_have_their_key() {
        let refused = ended(
            OpState::Blocked,
            Some(ReasonCode::MergeConflict),
            json!({"paths": ["src/a"]}),
        );
        let said = told(&facts(refused));
        assert_eq!(said[0].key, "refused:c7k2m4qa.1");
        assert!(said[0].text.contains("MERGE_CONFLICT"), "{}", said[0].text);
        let failed = ended(OpState::Failed, None, json!({}));
        let said = told(&facts(failed));
        assert_eq!(said[0].key, "failed:c7k2m4qa.1");
        assert!(said[0].text.contains("ended failed"), "{}", said[0].text);
    }

    #[test]
    fn a_merge_or_a_live_operation_tells_nothing_of_its_end() {
        let merged = ended(OpState::Merged, None, json!({}));
        assert!(told(&facts(merged)).is_empty());
        assert!(told(&facts(chain(Vec::new()))).is_empty());
        // Another change's chain is not the view's.
        let mut other = facts(ended(OpState::Failed, None, json!({})));
        assert!(
            notices(
                Some(&ChangeId::parse("d7k2m4qa").expect("an id")),
                &other,
                Timestamp::from_secs(1)
            )
            .0
            .is_empty()
        );
        other.chain = None;
        assert!(told(&other).is_empty());
    }

    #[test]
    fn an_early_conflict_is_tested_while_queued_and_named_with_its_paths() {
        let queued = chain(Vec::new());
        let test = early_test(&queued, &oid(9));
        assert_eq!(
            test,
            Some(Action::TestMerge {
                onto: oid(9),
                draft: oid(2),
                base: oid(1)
            })
        );
        let claimed = chain(vec![StepBody::Claim { op: change().op(1) }]);
        assert_eq!(early_test(&claimed, &oid(9)), None, "a runner holds it");
        let mut read = facts(queued);
        assert!(told(&read).is_empty(), "a clean test says nothing");
        read.conflicts = vec!["src/a.txt".into(), "src/b.txt".into()];
        let said = told(&read);
        assert_eq!(said[0].key, "conflict:c7k2m4qa.1:src/a.txt, src/b.txt");
        assert!(
            said[0].text.contains("src/a.txt, src/b.txt"),
            "{}",
            said[0].text
        );
        assert!(
            said[0].text.contains("bay start c7k2m4qa"),
            "{}",
            said[0].text
        );
    }

    #[test]
    fn a_merge_on_its_paths_names_the_change_but_never_its_own() {
        let commit = |n: u8, message: &str| MainCommit {
            commit: oid(n),
            message: message.into(),
            paths: vec!["src/a.txt".into()],
        };
        let read = NoticeFacts {
            merged_on: vec![
                commit(3, "fix b\n\nChange-Id: d7k2m4qa\nBay-Op: d7k2m4qa.1\n"),
                commit(2, "greet\n\nChange-Id: c7k2m4qa\nBay-Op: c7k2m4qa.1\n"),
                commit(1, "pushed by hand\n"),
            ],
            ..NoticeFacts::default()
        };
        let said = told(&read);
        let keys: Vec<&str> = said.iter().map(|n| n.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                format!("merged-on:{}", oid(1)),
                format!("merged-on:{}", oid(3))
            ]
        );
        assert!(said[0].text.contains("outside bay"), "{}", said[0].text);
        assert!(
            said[1].text.contains("change d7k2m4qa merged"),
            "{}",
            said[1].text
        );
        assert!(said[1].text.contains("src/a.txt"), "{}", said[1].text);
        assert!(said[1].text.contains("re-read"), "{}", said[1].text);
        // Outside a view, nothing is on its paths.
        assert!(notices(None, &read, Timestamp::from_secs(1)).0.is_empty());
    }

    pub fn presence_read(first_seen: Option<u64>) -> PresenceRead {
        let presence = Presence {
            schema: PRESENCE_SCHEMA.into(),
            runner: "r1".into(),
            machine: "box".into(),
            bay: "0.1.0".into(),
            environments: None,
            last_pass: Timestamp::from_secs(1),
            holding: None,
            queue_depth: 1,
            interval_ms: 10_000,
            lease_ms: 60_000,
            progress_ms: 600_000,
            prechecks: Vec::new(),
        };
        PresenceRead {
            runner: "r1".into(),
            message: Ok(presence.to_message()),
            first_seen: first_seen.map(Timestamp::from_secs),
        }
    }

    #[test]
    fn no_runner_is_said_when_operations_wait_and_none_is_fresh() {
        let now = Timestamp::from_secs(1_000);
        let mut read = NoticeFacts {
            waiting: 2,
            ..NoticeFacts::default()
        };
        let (said, none) = notices(None, &read, now);
        assert!(none);
        assert_eq!(said[0].key, NO_RUNNER);
        assert!(
            said[0].text.contains("2 operation(s) wait"),
            "{}",
            said[0].text
        );
        assert!(said[0].text.contains("bay runner run"), "{}", said[0].text);
        read.presences = vec![presence_read(Some(990))];
        assert_eq!(notices(None, &read, now), (Vec::new(), false), "fresh");
        read.presences = vec![presence_read(Some(900))];
        assert!(notices(None, &read, now).1, "stale after a lease");
        read.presences = vec![PresenceRead {
            message: Err("no commit".into()),
            ..presence_read(Some(999))
        }];
        assert!(notices(None, &read, now).1, "unreadable is stale");
        read.waiting = 0;
        assert_eq!(notices(None, &read, now), (Vec::new(), false), "none waits");
    }

    #[test]
    fn notices_are_heard_at_a_start_and_a_prompt_only() {
        let heard: Vec<Moment> = Moment::ALL.into_iter().filter(|m| heard_at(*m)).collect();
        assert_eq!(heard, [Moment::SessionStart, Moment::TurnStart]);
    }

    #[test]
    fn a_long_why_is_clipped_at_a_character() {
        let why = "é".repeat(300);
        let clipped = clip(&why);
        assert!(clipped.len() <= WHY_MAX + 3 && clipped.ends_with("..."));
        assert_eq!(clip("a\nb"), "a b");
    }
}
