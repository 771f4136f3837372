//! `bay.event/1`: what a runner's log says about each operation it ended, and what
//! `bay status --since` lists besides merges.
//!
//! A runner appends one event commit to `refs/bay/log/<runner>` in the same atomic push that
//! ends the operation (see `machine::runner::work`), so an event exists exactly when its
//! operation's outcome step does: a crash cannot lose one, and a retried push cannot write a
//! second. The commit's message is a subject that reads in `git log --oneline` and the event
//! as JSON, like a step commit's.

use serde::{Deserialize, Serialize};

use crate::git::Oid;
use crate::id::{ChangeId, OpId};
use crate::reason::ReasonCode;
use crate::result::OpState;
use crate::time::Timestamp;

/// The schema name of an event document.
pub const EVENT_SCHEMA: &str = "bay.event/1";

/// What an event reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Merged,
    /// Blocked with a reason code: the agent has to act.
    Refused,
    Failed,
    Superseded,
    NoEffect,
    /// A main commit that did not merge through bay (listed by `status --since`, never
    /// written to a log).
    OutsideMerge,
    /// A merge outside bay that put bay merges off main's first-parent line (listed by
    /// `status --since`, never written to a log).
    MainNotLinear,
    /// A post check turned main red (listed by `status --since`, never written to a log).
    MainRed,
    /// A post check that was red is no longer (listed by `status --since`).
    MainRedCleared,
}

impl EventKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Merged => "merged",
            EventKind::Refused => "refused",
            EventKind::Failed => "failed",
            EventKind::Superseded => "superseded",
            EventKind::NoEffect => "no_effect",
            EventKind::OutsideMerge => "outside_merge",
            EventKind::MainNotLinear => "main_not_linear",
            EventKind::MainRed => "main_red",
            EventKind::MainRedCleared => "main_red_cleared",
        }
    }

    /// The state an operation ended in, by the event that reports its end; none for a kind
    /// that reports no operation's end.
    pub const fn end_state(self) -> Option<OpState> {
        match self {
            EventKind::Merged => Some(OpState::Merged),
            EventKind::Refused => Some(OpState::Blocked),
            EventKind::Failed => Some(OpState::Failed),
            EventKind::Superseded => Some(OpState::Superseded),
            EventKind::NoEffect => Some(OpState::NoEffect),
            EventKind::OutsideMerge
            | EventKind::MainNotLinear
            | EventKind::MainRed
            | EventKind::MainRedCleared => None,
        }
    }

    /// The kind of event that reports an operation ending in `state`; none for a state that
    /// is not an end.
    pub const fn of_end(state: OpState) -> Option<EventKind> {
        match state {
            OpState::Merged => Some(EventKind::Merged),
            OpState::Blocked => Some(EventKind::Refused),
            OpState::Failed => Some(EventKind::Failed),
            OpState::Superseded => Some(EventKind::Superseded),
            OpState::NoEffect => Some(EventKind::NoEffect),
            OpState::Submitted | OpState::Admitted | OpState::Running | OpState::Checked => None,
        }
    }
}

/// One event. Fields a kind does not use are left out of the JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BayEvent {
    pub schema: String,
    /// Stable and unique: a notify plugin drops an event whose id it has seen. An operation
    /// ends once, so its op id and kind name its event; an outside merge is named by its
    /// commit.
    pub id: String,
    pub kind: EventKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub op: Option<OpId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<String>,
    /// The writer's clock, in milliseconds (a runner's own clock, or a commit's committer
    /// time): informational, never compared across machines.
    pub at: Timestamp,
    /// The change's actor, for whom a refusal is news.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// The main commit a merge made, or the commit an outside merge names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
    /// The main commit the merge was made on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<Oid>,
    /// The reason code of a refusal or a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<ReasonCode>,
    /// An outside merge: `merge` (more than one parent) or `outside`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_as: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// A merge that put bay merges off the line: its parents, how many bay merges, and
    /// whether bay stopped reading behind it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parents: Vec<Oid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merges_off_first_parent: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capped: Option<bool>,
    /// A red post check: its id and environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

/// What a runner knows when it ends an operation.
#[derive(Clone, Debug)]
pub struct Ended<'a> {
    pub runner: &'a str,
    pub change: &'a ChangeId,
    pub op: &'a OpId,
    pub actor: &'a str,
    pub at: Timestamp,
    pub state: OpState,
    pub code: Option<ReasonCode>,
    /// For a merge: the commit main moves to, and the base it moves from.
    pub merge: Option<(&'a Oid, &'a Oid)>,
}

impl BayEvent {
    /// The event of an operation's end, or none for a state that is not an end.
    pub fn ended(end: Ended<'_>) -> Option<BayEvent> {
        let kind = EventKind::of_end(end.state)?;
        Some(BayEvent {
            change: Some(end.change.clone()),
            op: Some(end.op.clone()),
            runner: Some(end.runner.to_string()),
            actor: Some(end.actor.to_string()),
            commit: end.merge.map(|(commit, _)| commit.clone()),
            base: end.merge.map(|(_, base)| base.clone()),
            code: end.code,
            ..BayEvent::about(format!("{}.{}", end.op, kind.as_str()), kind, end.at)
        })
    }

    /// An `outside_merge` event for a main commit that did not merge through bay.
    pub fn outside_merge(commit: &Oid, merged_as: &str, subject: &str, at: Timestamp) -> BayEvent {
        BayEvent {
            commit: Some(commit.clone()),
            merged_as: Some(merged_as.into()),
            subject: Some(subject.into()),
            ..BayEvent::about(
                format!("outside_merge.{commit}"),
                EventKind::OutsideMerge,
                at,
            )
        }
    }

    /// An event of `kind` named `id`, about nothing yet: every optional field left out.
    fn about(id: String, kind: EventKind, at: Timestamp) -> BayEvent {
        BayEvent {
            schema: EVENT_SCHEMA.into(),
            id,
            kind,
            change: None,
            op: None,
            runner: None,
            at,
            actor: None,
            commit: None,
            base: None,
            code: None,
            merged_as: None,
            subject: None,
            parents: Vec::new(),
            merges_off_first_parent: None,
            capped: None,
            check: None,
            environment: None,
        }
    }

    /// A `main_not_linear` event for `commit`, a merge outside bay that put `hidden` bay
    /// merges off the line; `capped` when bay stopped reading behind it. Named by the commit,
    /// so each such merge is one event.
    pub fn not_linear(commit: &crate::machine::MainCommit, hidden: u64, capped: bool) -> BayEvent {
        let id = format!("main_not_linear.{}", commit.oid);
        BayEvent {
            commit: Some(commit.oid.clone()),
            subject: Some(commit.message.lines().next().unwrap_or("").to_string()),
            parents: commit.parents.clone(),
            merges_off_first_parent: Some(hidden),
            capped: Some(capped),
            ..BayEvent::about(id, EventKind::MainNotLinear, commit.at)
        }
    }

    /// The event as a log commit's message: a subject that reads in `git log --oneline`
    /// (`bay: c7k2m4qa.1 merged`), a blank line, and the JSON document.
    pub fn to_message(&self) -> String {
        let name = match (&self.op, &self.commit) {
            (Some(op), _) => op.to_string(),
            (None, Some(commit)) => commit.to_string(),
            (None, None) => self.id.clone(),
        };
        let body = serde_json::to_string(self).expect("an event serializes: plain data");
        format!("bay: {name} {}\n\n{body}\n", self.kind.as_str())
    }

    /// Reads an event back from a log commit's message.
    pub fn from_message(message: &str) -> Result<BayEvent, String> {
        let (_, body) = message
            .split_once("\n\n")
            .ok_or_else(|| "no body after the subject".to_string())?;
        let event: BayEvent = serde_json::from_str(body.trim()).map_err(|e| e.to_string())?;
        if event.schema != EVENT_SCHEMA {
            return Err(format!("schema {:?}, not {EVENT_SCHEMA}", event.schema));
        }
        Ok(event)
    }

    /// A `main_red` or `main_red_cleared` event: post check `check` in `environment` turned
    /// red at merge `commit` (of `change`, when bay merged it), or is no longer. Named by the
    /// check and that merge, so each turn is one event.
    pub fn red(
        kind: EventKind,
        check: &str,
        environment: &str,
        commit: &Oid,
        change: Option<&ChangeId>,
        at: Timestamp,
    ) -> BayEvent {
        let id = format!("{}.{check}.{environment}.{commit}", kind.as_str());
        BayEvent {
            change: change.cloned(),
            commit: Some(commit.clone()),
            check: Some(check.into()),
            environment: Some(environment.into()),
            ..BayEvent::about(id, kind, at)
        }
    }

    /// Whether this event is about `change`.
    pub fn names(&self, change: &ChangeId) -> bool {
        self.change.as_ref() == Some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("a fixed test value")
    }

    fn schema() -> serde_json::Value {
        serde_json::from_str(crate::schema::EVENT).expect("a fixed test value")
    }

    fn ended(state: OpState, code: Option<ReasonCode>) -> Option<BayEvent> {
        let change = ChangeId::parse("c7k2m4qa").expect("a fixed test value");
        let op = OpId {
            change: change.clone(),
            n: 1,
        };
        let (commit, base) = (oid('a'), oid('b'));
        BayEvent::ended(Ended {
            runner: "r1",
            change: &change,
            op: &op,
            actor: "alice",
            at: Timestamp(5_000),
            state,
            code,
            merge: (state == OpState::Merged).then_some((&commit, &base)),
        })
    }

    #[test]
    fn a_merge_event_names_its_commit_base_and_actor_and_reads_back() {
        let event = ended(OpState::Merged, None).expect("a fixed test value");
        assert_eq!(event.id, "c7k2m4qa.1.merged");
        assert_eq!(event.commit, Some(oid('a')));
        assert_eq!(event.base, Some(oid('b')));
        let message = event.to_message();
        assert_eq!(message.lines().next(), Some("bay: c7k2m4qa.1 merged"));
        assert_eq!(
            BayEvent::from_message(&message).expect("a fixed test value"),
            event
        );
        let doc = serde_json::to_value(&event).expect("a fixed test value");
        crate::schema::validate(&schema(), &doc).expect("the event fits bay.event/1");
    }

    #[test]
    fn a_refusal_carries_its_code_and_each_end_has_its_own_kind() {
        let event =
            ended(OpState::Blocked, Some(ReasonCode::CheckFailed)).expect("a fixed test value");
        assert_eq!(event.kind, EventKind::Refused);
        let doc = serde_json::to_value(&event).expect("a fixed test value");
        assert_eq!(doc["code"], "CHECK_FAILED");
        assert!(doc.get("commit").is_none());
        crate::schema::validate(&schema(), &doc).expect("the event fits bay.event/1");
        for state in OpState::ALL {
            let event = ended(state, None);
            assert_eq!(event.is_some(), state.is_terminal(), "{state:?}");
            if let Some(event) = event {
                crate::schema::validate(
                    &schema(),
                    &serde_json::to_value(&event).expect("the event fits bay.event/1"),
                )
                .expect("a fixed test value");
            }
        }
    }

    #[test]
    fn an_outside_merge_is_named_by_its_commit_and_fits_the_schema() {
        let event = BayEvent::outside_merge(&oid('c'), "outside", "fix typo", Timestamp(1));
        assert_eq!(event.id, format!("outside_merge.{}", oid('c')));
        let doc = serde_json::to_value(&event).expect("a fixed test value");
        crate::schema::validate(&schema(), &doc).expect("the event fits bay.event/1");
    }

    #[test]
    fn a_message_of_another_schema_or_without_a_body_is_refused() {
        assert!(BayEvent::from_message("bay: x merged").is_err());
        let other = ended(OpState::Merged, None)
            .expect("a fixed test value")
            .to_message()
            .replace(EVENT_SCHEMA, "bay.step/1");
        assert!(
            BayEvent::from_message(&other)
                .expect_err("refused")
                .contains("bay.step/1")
        );
    }

    #[test]
    fn the_schema_refuses_an_event_without_an_id_or_of_an_unknown_kind() {
        let mut doc =
            serde_json::to_value(ended(OpState::Merged, None).expect("a fixed test value"))
                .expect("a fixed test value");
        doc["kind"] = "exploded".into();
        assert!(crate::schema::validate(&schema(), &doc).is_err());
        doc["kind"] = "merged".into();
        doc.as_object_mut()
            .expect("a fixed test value")
            .remove("id");
        assert!(crate::schema::validate(&schema(), &doc).is_err());
    }
}
