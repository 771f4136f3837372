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
use crate::say::say;

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

    /// The operation is in the queue and no runner works it yet: what `--wait=<seconds>`
    /// watches, and nothing else.
    pub const fn waits_for_runner(self) -> bool {
        matches!(self, OpState::Submitted | OpState::Admitted)
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
    /// A result with every optional field absent, and `say` built from the rest. Every
    /// constructor goes through here, so no result is made without its sentence.
    fn bare(
        decision: Decision,
        reason: Option<ReasonCode>,
        state: Option<OpState>,
        detail: Map<String, Value>,
    ) -> BayResult {
        BayResult {
            schema: Schema,
            op_id: None,
            decision,
            reason,
            say: String::new(),
            change: None,
            candidate: None,
            state,
            waiting_for: None,
            elapsed_s: None,
            evidence: None,
            detail,
            allowed: None,
            retry_when: None,
            next_step: None,
            receipt: None,
            freshness: None,
        }
        .said()
    }

    /// Says the result again from what it holds now. The constructors end here, and so does
    /// every setter of a field the sentence reads (the change, the state); a machine that adds
    /// to `detail` after it built the result calls it once the result is whole.
    pub fn said(mut self) -> BayResult {
        self.say = say(
            self.decision,
            self.reason,
            self.state,
            self.change.as_ref(),
            &self.detail,
        );
        self
    }

    /// Done, with nothing merged by this command: a status read, or `no_effect` when main
    /// already held the work (then `detail.main_commit` names where).
    pub fn ok(state: Option<OpState>, detail: Map<String, Value>) -> BayResult {
        BayResult::bare(Decision::Ok, None, state, detail)
    }

    /// The change is on main.
    pub fn merged(detail: Map<String, Value>) -> BayResult {
        BayResult::bare(Decision::Merged, None, Some(OpState::Merged), detail)
    }

    /// Accepted: the operation is in `state` and waits for `waiting_for`.
    pub fn queued(state: OpState, waiting_for: WaitingFor) -> BayResult {
        let mut result = BayResult::bare(Decision::Queued, None, Some(state), Map::new());
        result.waiting_for = Some(waiting_for);
        result
    }

    /// A result carrying `code`. Its decision, `allowed`, `retry_when` and `next_step` come
    /// from the reason table, so no caller can pair a code with the wrong advice.
    pub fn refusal(code: ReasonCode, detail: Map<String, Value>) -> BayResult {
        let info = code.info();
        let mut result = BayResult::bare(info.decision, Some(code), None, detail);
        result.allowed = Some(info.allowed.to_vec());
        result.retry_when = Some(info.retry_when.to_owned());
        result.next_step = Some(info.next_step.to_owned());
        match code {
            // The code is the queue's own answer, so the wait is for the queue by definition.
            ReasonCode::Queued => result.waiting_for = Some(WaitingFor::Queue),
            ReasonCode::MainHeld => result.waiting_for = Some(WaitingFor::Hold),
            ReasonCode::DependencyPending => result.waiting_for = Some(WaitingFor::Dependencies),
            _ => {}
        }
        result
    }

    /// The same operation's result, waiting for what `code` names (a hold of main, changes
    /// named by `--after`), with `more` added to its detail.
    pub fn waiting_on(self, code: ReasonCode, more: Value) -> BayResult {
        let mut detail = self.detail;
        if let Value::Object(more) = more {
            detail.extend(more);
        }
        let mut result = BayResult::refusal(code, detail);
        result.op_id = self.op_id;
        result.change = self.change;
        result.candidate = self.candidate;
        result.state = self.state;
        result.elapsed_s = self.elapsed_s;
        result.evidence = self.evidence;
        result.freshness = self.freshness;
        result.said()
    }

    /// A fault no reason code names. `why` is bay's short account of it, without a final full
    /// stop, such as "the remote did not answer"; it is kept whole in `detail.why`, and `say`
    /// repeats it after "Nothing changed:" when it fits a plain sentence.
    pub fn failed(why: &str) -> BayResult {
        let mut detail = Map::new();
        detail.insert("why".to_owned(), Value::from(why));
        BayResult::bare(Decision::Failed, None, None, detail)
    }

    /// Names the operation, and with it the change.
    pub fn with_op(mut self, op: OpId) -> BayResult {
        self.op_id = Some(op.clone());
        self.with_change(Some(op.change))
    }

    /// Names the change the result is about, or none.
    pub fn with_change(mut self, change: Option<ChangeId>) -> BayResult {
        self.change = change;
        self.said()
    }

    /// Names the candidate, and with it the operation and the change.
    pub fn with_candidate(self, candidate: CandidateId) -> BayResult {
        let mut result = self.with_op(candidate.op.clone());
        result.candidate = Some(candidate);
        result
    }

    /// Sets the operation's state, and says it again, since the sentence may tell the state.
    pub fn with_state(mut self, state: OpState) -> BayResult {
        self.state = Some(state);
        self.said()
    }

    pub fn with_freshness(mut self, main: &str, fetched_at: &str) -> BayResult {
        self.freshness = Some(Freshness {
            main: main.to_owned(),
            fetched_at: fetched_at.to_owned(),
        });
        self
    }

    pub fn with_receipt(mut self, receipt: &str) -> BayResult {
        self.receipt = Some(receipt.to_owned());
        self
    }

    /// The exit code of the command that prints this result.
    pub fn exit_code(&self) -> u8 {
        self.decision.exit_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::forbidden_word;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    fn candidate() -> CandidateId {
        CandidateId::parse("c7k2m4qa.1.2").expect("a valid candidate id")
    }

    #[test]
    fn a_refusal_takes_its_advice_from_the_table() {
        for code in ReasonCode::ALL {
            let result = BayResult::refusal(code, Map::new());
            let info = code.info();
            assert_eq!(result.reason, Some(code));
            assert_eq!(result.decision, info.decision);
            assert_eq!(result.allowed.as_deref(), Some(info.allowed));
            assert_eq!(result.retry_when.as_deref(), Some(info.retry_when));
            assert_eq!(result.next_step.as_deref(), Some(info.next_step));
            assert_eq!(
                result.say,
                say(info.decision, Some(code), None, None, &Map::new())
            );
            assert_eq!(result.exit_code(), info.decision.exit_code());
            assert_eq!(forbidden_word(&result.say), None, "{code}");
        }
        let queued = BayResult::refusal(ReasonCode::Queued, Map::new());
        assert_eq!(queued.waiting_for, Some(WaitingFor::Queue));
        assert_eq!(queued.exit_code(), 0);
    }

    #[test]
    fn a_refusal_serializes_with_the_exact_field_names() {
        let result = BayResult::refusal(
            ReasonCode::MergeConflict,
            object(json!({"paths": ["src/app.rs"]})),
        )
        .with_candidate(candidate())
        .with_receipt("r-q4n8x2")
        .with_freshness("a1b2c3d", "2026-10-17T19:30:02Z");
        let json = serde_json::to_string(&result).expect("serializes");
        let expected = concat!(
            r#"{"schema":"bay.result/1","op_id":"c7k2m4qa.1","decision":"blocked","#,
            r#""reason":"MERGE_CONFLICT","say":"Main changed the same lines as this change "#,
            r#"(src/app.rs); run `bay start c7k2m4qa` to update it, settle those lines in its "#,
            r#"folder, then submit it again.","change":"c7k2m4qa","candidate":"c7k2m4qa.1.2","#,
            r#""detail":{"paths":["src/app.rs"]},"allowed":["read","refresh","repair"],"#,
            r#""retry_when":"conflicts_resolved","next_step":"Run `bay start <change>` to "#,
            r#"bring in main, settle the conflicting paths in the view, then `bay merge` "#,
            r#"again.","receipt":"r-q4n8x2","#,
            r#""freshness":{"main":"a1b2c3d","fetched_at":"2026-10-17T19:30:02Z"}}"#,
        );
        assert_eq!(json, expected);
    }

    #[test]
    fn bay_acting_on_its_own_prints_an_empty_allowed_list() {
        let result = BayResult::refusal(ReasonCode::MainMoved, Map::new());
        let json = serde_json::to_value(&result).expect("serializes");
        assert_eq!(json["allowed"], json!([]));
        assert_eq!(json["decision"], json!("queued"));
        assert!(json.get("detail").is_none(), "an empty detail is left out");
    }

    #[test]
    fn a_fault_keeps_why_and_says_nothing_changed() {
        let result = BayResult::failed("the remote did not answer");
        assert_eq!(result.decision, Decision::Failed);
        assert_eq!(result.exit_code(), 20);
        assert_eq!(result.reason, None);
        assert_eq!(
            result.detail.get("why"),
            Some(&json!("the remote did not answer"))
        );
        assert!(
            result
                .say
                .starts_with("Nothing changed: the remote did not answer;")
        );
        assert_eq!(result.allowed, None);
    }

    #[test]
    fn constructors_say_what_they_hold() {
        let done = BayResult::ok(
            Some(OpState::NoEffect),
            object(json!({"main_commit": "a1b2c3d"})),
        );
        assert_eq!(done.exit_code(), 0);
        assert!(done.say.contains("(a1b2c3d)"), "{}", done.say);

        let merged = BayResult::merged(Map::new()).with_op(candidate().op);
        assert_eq!(merged.state, Some(OpState::Merged));
        assert_eq!(
            merged.change.as_ref().map(ChangeId::as_str),
            Some("c7k2m4qa")
        );

        let queued = BayResult::queued(OpState::Submitted, WaitingFor::Runner);
        let running = queued.clone().with_state(OpState::Running);
        assert_ne!(queued.say, running.say, "the sentence follows the state");
        assert_eq!(
            running.say,
            say(
                Decision::Queued,
                None,
                Some(OpState::Running),
                None,
                &Map::new()
            )
        );
    }

    #[test]
    fn every_field_round_trips_through_json() {
        let mut full = BayResult::refusal(
            ReasonCode::CheckFailed,
            object(json!({"checks": [{"check": "lint", "reasons": ["too long"]}]})),
        )
        .with_candidate(candidate())
        .with_state(OpState::Blocked)
        .with_receipt("r-q4n8x2")
        .with_freshness("a1b2c3d", "cache");
        full.waiting_for = Some(WaitingFor::Dependencies);
        full.elapsed_s = Some(42);
        full.evidence = Some(vec!["ci-linux/ev901".to_owned()]);
        let mut results = vec![
            full,
            BayResult::failed("x"),
            BayResult::ok(None, Map::new()),
        ];
        results.extend(ReasonCode::ALL.map(|code| BayResult::refusal(code, Map::new())));
        for result in results {
            let json = serde_json::to_string(&result).expect("serializes");
            let back: BayResult = serde_json::from_str(&json).expect("reads back");
            assert_eq!(back, result, "{json}");
        }
    }

    #[test]
    fn the_documented_shapes_parse_and_print_unchanged() {
        for text in [
            concat!(
                r#"{"schema":"bay.result/1","op_id":"c7k2m4qa.1","decision":"queued","#,
                r#""state":"submitted","say":"Saved.","change":"c7k2m4qa","#,
                r#""waiting_for":"runner","elapsed_s":0,"evidence":[],"#,
                r#""freshness":{"main":"a1b2c3d","fetched_at":"2026-10-17T19:30:02Z"}}"#,
            ),
            concat!(
                r#"{"schema":"bay.result/1","op_id":"c7k2m4qa.1","decision":"ok","#,
                r#""say":"Done.","change":"c7k2m4qa","state":"no_effect","#,
                r#""detail":{"main_commit":"a1b2c3d","tree":"9f8e7d6"},"#,
                r#""freshness":{"main":"a1b2c3d","fetched_at":"2026-10-17T19:30:02Z"}}"#,
            ),
        ] {
            let parsed: BayResult = serde_json::from_str(text).expect("a documented shape parses");
            let printed = serde_json::to_value(&parsed).expect("serializes");
            let original: Value = serde_json::from_str(text).expect("valid JSON");
            assert_eq!(printed, original);
        }
    }

    #[test]
    fn a_reader_refuses_another_schema() {
        let text = r#"{"schema":"bay.result/2","decision":"ok","say":"Done."}"#;
        assert!(serde_json::from_str::<BayResult>(text).is_err());
        let text = r#"{"decision":"ok","say":"Done."}"#;
        assert!(
            serde_json::from_str::<BayResult>(text).is_err(),
            "schema is required"
        );
    }

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
