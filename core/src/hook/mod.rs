//! `bay hook <moment>`: what bay decides at each hook event of an agent product.
//!
//! The CLI reads the payload ([`Payload::parse`]) and the local facts the moment needs
//! ([`Facts`]); [`decide`] says what to answer in the product's protocol ([`Answer`]), the row
//! to add to the session's work record, the session's new state, and whether to save a draft
//! checkpoint. Nothing here reads a file or a clock.
//!
//! `tool.before` runs on every tool call, so it reads only what the CLI has without a network
//! or a config read: main's name for the shell deny list ([`crate::shell`]), and the states of
//! the other sessions in this clone for [`ReasonCode::PathHeld`]. Only an edit of a path
//! `[locks] paths` names ([`lockable`]) costs more: the CLI fetches that path's lock and
//! hands it over as [`LockFacts`], and [`crate::lock`] decides; the lock writes to push come
//! back in [`Outcome::locks`]. `step.end` renews the session's locks once half the takeover
//! window passed ([`Session::renewal_due`]); `turn.end` and `session.end` end them.
//!
//! A hook that cannot judge never lets a write through: a payload bay cannot read, an
//! unknown moment, or a `tool.before` payload under another moment's name is denied
//! [`ReasonCode::HookInputInvalid`] whenever the call may be a tool call. Other events never
//! block; a problem there is only noted in the record.

pub mod answer;
pub mod notice;
pub mod payload;
pub mod session;

use crate::actor::ActorSource;
use crate::adapter::{Adapter, Moment, Product};
use crate::config::HookSettings;
use crate::id::ChangeId;
use crate::lock::{self, Editor, Take, Write};
pub use crate::machine::checkpoint::Saved;
use crate::reason::ReasonCode;
use crate::shell::{self, DenyRules, Verdict};
use crate::time::Timestamp;

pub use answer::{Answer, Refusal, Said, WroteIt};
pub use notice::NoticeFacts;
pub use payload::{Payload, Tool};
pub use session::{Row, Session};

/// What the CLI read for one event.
#[derive(Clone, Debug)]
pub struct Facts {
    pub now: Timestamp,
    pub product: Product,
    pub actor: String,
    pub actor_source: ActorSource,
    /// Main's branch name; `None` when bay cannot tell which branch is main.
    pub main: Option<String>,
    /// The worktree the session works in, absolute, without a trailing `/`.
    pub tree: String,
    /// The change whose view `tree` is, if it is one.
    pub view: Option<ChangeId>,
    /// This session's state as the last event left it; `None` before its first event.
    pub session: Option<Session>,
    /// The other sessions of this clone (read for an edit's holds).
    pub others: Vec<Session>,
    pub hooks: HookSettings,
    /// `turn.end`: the files with edits in the view that no draft holds.
    pub unsaved: Vec<String>,
    /// `session.start`: what it tells the agent.
    pub start: Option<StartFacts>,
    /// The locks this event judges (`tool.before` of a lockable path) or ends (`turn.end`,
    /// `session.end` of a session that holds any); `None` when the CLI read none.
    pub locks: Option<LockFacts>,
    /// What the notices read (at the moments [`notice::heard_at`] names), from this clone's
    /// refs as its last fetch left them; `None` when the CLI read nothing for them.
    pub notices: Option<NoticeFacts>,
}

/// The locks one event reads, as the CLI fetched them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockFacts {
    /// This machine's name, for a lock it takes.
    pub machine: String,
    /// `[runner] takeover_s`, in milliseconds.
    pub takeover_ms: u64,
    /// Each path's lock as one fetch read it, or why the remote did not answer.
    pub read: Result<Vec<(String, lock::Read)>, String>,
}

/// The paths of an edit that `[locks] paths` (`globs`) names, as the tree names them: the
/// only ones whose locks `tool.before` fetches.
pub fn lockable(payload: &Payload, tree: &str, globs: &[String]) -> Vec<String> {
    if payload.tool != Some(Tool::Edit) || globs.is_empty() {
        return Vec::new();
    }
    in_tree(tree, &payload.written, payload.cwd.as_deref())
        .into_iter()
        .filter(|path| crate::glob::any_path_matches(globs, path))
        .collect()
}

/// What `session.start` tells the agent, read by the CLI from this clone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartFacts {
    /// The view's declared paths.
    pub declared: Vec<String>,
    /// Other views of this clone whose declared paths overlap, with the paths they declare.
    pub overlapping: Vec<(ChangeId, Vec<String>)>,
    /// Main's commit as this clone last fetched it, if it knows one.
    pub main_commit: Option<String>,
    /// The instruction files main changed since the commit the view is based on.
    pub instructions_changed: Vec<String>,
}

/// What `bay hook` does for one event.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub answer: Answer,
    pub row: Row,
    /// The session's state to keep.
    pub session: Session,
    /// Save a draft checkpoint of the view now: take its work as a draft, then run
    /// [`crate::machine::checkpoint::Checkpoint`] to put it on the change's chain, and tell
    /// [`Outcome::checkpointed`] where it went.
    pub checkpoint: bool,
    /// The session's last checkpoint before this event, kept should this one save nothing.
    pub checkpoint_before: Timestamp,
    /// The lock writes to push, in one push, before the answer counts: a push that does not
    /// land means another session moved a lock first, and the event is decided again on a
    /// new read.
    pub locks: Vec<lock::Write>,
}

impl Outcome {
    /// Notes where the checkpoint this outcome asked for went, in its row. A draft kept
    /// anywhere (the chain, or the local ref alone when the remote did not answer) counts as
    /// the session's checkpoint, so the next comes an interval later; one that saved nothing
    /// leaves the session's last checkpoint as it was, and the next event tries again.
    pub fn checkpointed(&mut self, saved: Saved) {
        if let Saved::Failed { .. } = saved {
            self.session.checkpoint_at = self.checkpoint_before;
        }
        self.row.saved = Some(saved);
    }
}

/// Decides one event: `moment` as `bay hook` was called, the payload as read.
pub fn decide(moment: &str, payload: Result<Payload, String>, facts: &Facts) -> Outcome {
    let known = moment.parse::<Moment>().ok();
    let adapter = facts.product.adapter();
    let payload = match payload {
        Ok(payload) => payload,
        Err(why) => {
            // Nothing says what the call is, so it may be a tool call unless the moment is
            // a known one that is not.
            let blocks = known.is_none_or(|m| m == Moment::ToolBefore);
            let problem = Problem::new(why, false);
            return Event::new(moment, None, facts).problem(problem, blocks);
        }
    };
    let mut event = Event::new(moment, Some(&payload), facts);
    let sent = payload
        .event
        .as_deref()
        .and_then(|name| adapter.event(name))
        .map(|e| e.moment);
    let is_tool_before =
        sent == Some(Moment::ToolBefore) || (sent.is_none() && known == Some(Moment::ToolBefore));
    let Some(moment) = known.filter(|m| sent.is_none_or(|s| s == *m)) else {
        let why = match known {
            None => format!(
                "bay hook has no moment {moment:?}; bay install writes the names this bay knows"
            ),
            Some(_) => format!(
                "a {} payload reached bay hook {moment}; bay install writes each event's entry under its own moment",
                payload.event.as_deref().unwrap_or("tool")
            ),
        };
        let blocks = is_tool_before || (known.is_none() && payload.tool.is_some());
        return event.problem(Problem::new(why, true), blocks);
    };
    if notice::heard_at(moment) {
        event.hear_notices();
    }
    match moment {
        Moment::ToolBefore => event.tool_before(&payload),
        Moment::SessionStart => event.session_start(adapter),
        Moment::StepEnd => event.step_end(&payload),
        Moment::TurnEnd => event.turn_end(&payload),
        Moment::SessionEnd => event.session_end(),
        _ => event.ok(),
    }
}

/// Why the hook could not read a call.
struct Problem {
    why: String,
    misnamed: bool,
}

impl Problem {
    fn new(why: String, misnamed: bool) -> Problem {
        Problem { why, misnamed }
    }
}

/// One event being decided: its row and the session's state so far.
struct Event<'f> {
    facts: &'f Facts,
    event_name: String,
    row: Row,
    session: Session,
    locks: Vec<lock::Write>,
    /// The notices this event tells, each taken from the session's budget.
    told: Vec<String>,
}

impl<'f> Event<'f> {
    fn new(moment: &str, payload: Option<&Payload>, facts: &'f Facts) -> Event<'f> {
        let name = payload
            .and_then(|p| p.session_id.clone())
            .unwrap_or_default();
        let mut session = facts
            .session
            .clone()
            .unwrap_or_else(|| Session::begin(&name, &facts.tree, &facts.actor, facts.now));
        session.last_at = facts.now;
        session.last_event = Some(moment.to_owned());
        session.agent = Some(facts.product.as_str().to_owned());
        if let Some(mode) = payload.and_then(|p| p.permission_mode.clone()) {
            session.permission_mode = Some(mode);
        }
        let tool = payload.and_then(|p| match &p.tool {
            Some(Tool::Shell(_)) => Some("shell".to_owned()),
            Some(Tool::Edit) => Some("edit".to_owned()),
            Some(Tool::Other(name)) => Some(name.clone()),
            None => None,
        });
        Event {
            facts,
            event_name: payload.and_then(|p| p.event.clone()).unwrap_or_default(),
            row: Row {
                at: facts.now,
                moment: moment.to_owned(),
                event: payload.and_then(|p| p.event.clone()),
                verdict: "ok".into(),
                tool,
                shape: None,
                written: Vec::new(),
                permission_mode: payload.and_then(|p| p.permission_mode.clone()),
                actor_source: facts.actor_source,
                checkpoint: false,
                saved: None,
            },
            session,
            locks: Vec::new(),
            told: Vec::new(),
        }
    }

    /// Takes the notices the facts give from the session: each key once, within the hour's
    /// budget. A no-runner state that cleared is forgotten, so it is said again should it
    /// come back.
    fn hear_notices(&mut self) {
        let facts = self.facts;
        let Some(read) = &facts.notices else {
            return;
        };
        let (notices, no_runner) = notice::notices(facts.view.as_ref(), read, facts.now);
        if !no_runner {
            self.session.said.remove(notice::NO_RUNNER);
        }
        let budget = facts.hooks.notice_budget_bytes;
        for notice in notices {
            let said = self
                .session
                .notice(&notice.key, notice.text, budget, facts.now);
            self.told.extend(said);
        }
    }

    /// The outcome with `answer`, checkpointing when due: at `session.end`, and at any other
    /// event but `tool.before` (which must stay fast) once `[hooks] checkpoint_idle_s` passed
    /// since the last one.
    fn answer(mut self, mut answer: Answer) -> Outcome {
        if !self.told.is_empty() {
            // Notices ride on an answer that says nothing on stdout; beside one that does (a
            // JSON document of its own), they go to stderr.
            let text = self.told.join("\n");
            let told = Answer::tell(self.facts.product, &self.event_name, Some(&text));
            match answer.stdout.is_empty() && answer.exit == 0 {
                true => {
                    answer.stdout = told.stdout;
                    answer.stderr.push_str(&told.stderr);
                }
                false => answer.stderr.push_str(&format!("{text}\n")),
            }
        }
        let moment = self.row.moment.as_str();
        let idle_ms = self.facts.hooks.checkpoint_idle_s.saturating_mul(1000);
        let due = self.facts.view.is_some()
            && moment != Moment::ToolBefore.as_str()
            && (moment == Moment::SessionEnd.as_str()
                || self.facts.now.millis_since(self.session.checkpoint_at) >= idle_ms);
        let checkpoint_before = self.session.checkpoint_at;
        if due {
            self.session.checkpoint_at = self.facts.now;
            self.row.checkpoint = true;
        }
        Outcome {
            answer,
            row: self.row,
            session: self.session,
            checkpoint: due,
            checkpoint_before,
            locks: self.locks,
        }
    }

    fn ok(self) -> Outcome {
        self.answer(Answer::quiet())
    }

    /// Denies the call with `refusal` when it may block, else notes it in the record.
    fn refuse(mut self, refusal: Refusal, blocks: bool) -> Outcome {
        if blocks {
            self.row.verdict = format!("blocked({})", refusal.code);
            self.answer(Answer::deny(&refusal))
        } else {
            self.row.verdict = format!("noted({})", refusal.code);
            let answer = Answer {
                stderr: Answer::deny(&refusal).stderr,
                ..Answer::quiet()
            };
            self.answer(answer)
        }
    }

    fn problem(self, problem: Problem, blocks: bool) -> Outcome {
        let refusal = Refusal {
            code: ReasonCode::HookInputInvalid,
            why: problem.why.clone(),
            detail: Said::Unreadable {
                why: problem.why,
                misnamed: problem.misnamed,
            },
            next: None,
        };
        self.refuse(refusal, blocks)
    }

    fn tool_before(self, payload: &Payload) -> Outcome {
        let unreadable = |why: &str| Problem::new(why.to_owned(), false);
        match &payload.tool {
            None => self.problem(
                unreadable("the tool.before payload names no tool_name"),
                true,
            ),
            Some(Tool::Other(_)) => self.ok(),
            Some(Tool::Shell(None)) => {
                self.problem(unreadable("the shell tool's input holds no command"), true)
            }
            Some(Tool::Shell(Some(command))) => self.judge_shell(command),
            Some(Tool::Edit) if payload.written.is_empty() => {
                self.problem(unreadable("the edit tool's input names no file"), true)
            }
            Some(Tool::Edit) => {
                let paths = self.in_tree(&payload.written, payload.cwd.as_deref());
                self.judge_edit(&paths)
            }
        }
    }

    fn judge_shell(mut self, command: &str) -> Outcome {
        let rules = DenyRules {
            main: self.facts.main.clone(),
            ..DenyRules::default()
        };
        match shell::judge(command, &rules) {
            Verdict::Allowed => self.ok(),
            Verdict::Denied(denial) => {
                self.row.shape = Some(serde_json::to_value(&denial).unwrap_or_default());
                let refusal = Refusal {
                    code: shell::Denial::CODE,
                    why: denial.why().to_owned(),
                    next: Some(denial.next_step()),
                    detail: Said::Shell(denial),
                };
                self.refuse(refusal, true)
            }
        }
    }

    /// An edit of `paths` (relative to the tree): refused when another live session of this
    /// tree wrote one of them. Other trees never meet the hold.
    fn judge_edit(self, paths: &[String]) -> Outcome {
        let me = &self.session.session;
        let held = paths.iter().find_map(|path| {
            self.facts
                .others
                .iter()
                .filter(|other| other.session != *me && other.tree == self.facts.tree)
                .find(|other| other.live(self.facts.now) && other.written.contains(path))
                .map(|holder| (path, holder))
        });
        let Some((path, holder)) = held else {
            return self.judge_locks();
        };
        let refusal = Refusal {
            code: ReasonCode::PathHeld,
            why: format!(
                "session {} of {} wrote {path} in this tree and has not ended",
                holder.session, holder.actor
            ),
            detail: Said::PathHeld {
                path: path.clone(),
                holder: WroteIt {
                    session: holder.session.clone(),
                    actor: holder.actor.clone(),
                },
                age_s: self.facts.now.millis_since(holder.last_at) / 1000,
            },
            next: None,
        };
        self.refuse(refusal, true)
    }

    /// The edit's lockable paths, as the CLI read their locks: each is taken, renewed or
    /// kept, or the edit is refused `PATH_HELD` for the first another session holds, or
    /// `REMOTE_UNREACHABLE` when the remote did not answer (bay cannot tell who holds them).
    fn judge_locks(mut self) -> Outcome {
        let Some(facts) = &self.facts.locks else {
            return self.ok();
        };
        let read = match &facts.read {
            Ok(read) => read,
            Err(why) => return self.unreachable(why, true),
        };
        let editor = self.editor(facts);
        if self.session.locks.is_empty() {
            self.session.locks_at = self.facts.now;
        }
        for (path, read) in read {
            match lock::take(path, read, &editor, self.facts.now, facts.takeover_ms) {
                Take::Write(write) => self.locks.push(write),
                Take::Kept => {}
                Take::Held(held) => {
                    let refusal = Refusal {
                        code: ReasonCode::PathHeld,
                        why: format!(
                            "{path} is locked by session {} of {} on {}, taken {}s ago",
                            held.lock.session,
                            held.lock.actor,
                            held.lock.machine,
                            held.age_ms / 1000
                        ),
                        detail: Said::Locked(held.detail()),
                        next: None,
                    };
                    self.locks.clear();
                    return self.refuse(refusal, true);
                }
            }
            self.session.locks.insert(path.clone());
        }
        self.ok()
    }

    fn editor(&self, facts: &LockFacts) -> Editor {
        Editor {
            session: self.session.session.clone(),
            actor: self.facts.actor.clone(),
            machine: facts.machine.clone(),
        }
    }

    /// Renews every lock the session holds, as read; a lock another session took over
    /// meanwhile is no longer the session's, and an edit of its path meets it. A remote that
    /// does not answer is noted, and the next step tries again.
    fn renew_locks(mut self) -> Outcome {
        let Some(facts) = &self.facts.locks else {
            return self.ok();
        };
        let read = match &facts.read {
            Ok(read) => read,
            Err(why) => return self.unreachable(why, false),
        };
        let editor = self.editor(facts);
        let renewed: Vec<Write> = read
            .iter()
            .filter_map(|(path, read)| lock::renew(path, read, &editor, self.facts.now))
            .collect();
        self.session
            .locks
            .retain(|path| renewed.iter().any(|write| write.path == *path));
        self.session.locks_at = self.facts.now;
        self.locks = renewed;
        self.ok()
    }

    /// The remote did not answer the fetch of the locks: denied when `blocks`, else noted.
    fn unreachable(self, why: &str, blocks: bool) -> Outcome {
        let refusal = Refusal {
            code: ReasonCode::RemoteUnreachable,
            why: format!("the remote did not answer for the lock: {why}"),
            detail: Said::NoAnswer {
                why: why.to_owned(),
                lock: true,
            },
            next: None,
        };
        self.refuse(refusal, blocks)
    }

    /// Ends the session's locks as read: each one still its own is deleted, leased. A remote
    /// that does not answer leaves them held (a later end tries again) until the takeover
    /// window lets the next edit have them.
    fn end_locks(mut self) -> Outcome {
        let Some(facts) = &self.facts.locks else {
            return self.ok();
        };
        let read = match &facts.read {
            Ok(read) => read,
            Err(why) => return self.unreachable(why, false),
        };
        for (path, read) in read {
            self.locks
                .extend(lock::end(path, read, &self.session.session));
            self.session.locks.remove(path);
        }
        self.ok()
    }

    fn in_tree(&self, paths: &[String], cwd: Option<&str>) -> Vec<String> {
        in_tree(&self.facts.tree, paths, cwd)
    }

    fn session_start(mut self, adapter: &Adapter) -> Outcome {
        let mut lines: Vec<String> = self.start_text().into_iter().collect();
        lines.append(&mut self.told);
        let text = (!lines.is_empty()).then(|| lines.join("\n"));
        let answer = Answer::tell(adapter.product, &self.event_name, text.as_deref());
        self.answer(answer)
    }

    /// The active change, its overlaps and the instruction files main changed, as one text;
    /// the instruction notice once per session for each main commit, within the budget.
    fn start_text(&mut self) -> Option<String> {
        let facts = self.facts;
        let start = facts.start.as_ref()?;
        let mut lines = Vec::new();
        match &facts.view {
            Some(change) => lines.push(format!(
                "bay: this session works in the view of change {change}, which declares {}. Save with `bay merge` when the work is done.",
                start.declared.join(", ")
            )),
            None => lines.push(
                "bay: this session works outside any bay view; start work with `bay start <intent> --paths <paths>`.".to_owned(),
            ),
        }
        for (change, paths) in &start.overlapping {
            lines.push(format!(
                "bay: change {change} is live in this clone on overlapping paths ({}); an overlap refuses nothing.",
                paths.join(", ")
            ));
        }
        if !start.instructions_changed.is_empty() {
            let commit = start.main_commit.as_deref().unwrap_or("main");
            let notice = format!(
                "bay: main changed {} since this view's base (main at {commit}); re-read them.",
                start.instructions_changed.join(", ")
            );
            let key = format!("instructions:{commit}");
            let budget = facts.hooks.notice_budget_bytes;
            lines.extend(self.session.notice(&key, notice, budget, facts.now));
        }
        Some(lines.join("\n"))
    }

    fn step_end(mut self, payload: &Payload) -> Outcome {
        let written = self.in_tree(&payload.written, payload.cwd.as_deref());
        self.session.written.extend(written.iter().cloned());
        self.row.written = written;
        self.renew_locks()
    }

    /// Asks once to save a view with unsaved edits: never when a stop hook already held this
    /// stop (`stop_hook_active`), or the session would never end. A stop not held ends the
    /// session's locks; one held to ask keeps them for the save.
    fn turn_end(mut self, payload: &Payload) -> Outcome {
        let Some(change) = &self.facts.view else {
            return self.end_locks();
        };
        if payload.stop_hook_active || self.facts.unsaved.is_empty() {
            return self.end_locks();
        }
        let reason = format!(
            "bay: the view of change {change} has unsaved edits ({}). Run `bay merge` to save and submit them before you stop, or say why they should stay unsaved.",
            self.facts.unsaved.join(", ")
        );
        self.row.verdict = "asked".into();
        let answer = Answer::keep_going(self.facts.product, &reason);
        self.answer(answer)
    }

    fn session_end(mut self) -> Outcome {
        self.session.ended = true;
        self.end_locks()
    }
}

/// `paths` as the tree names them: an absolute path under the tree loses the tree's prefix, a
/// relative one is taken from `cwd` when that is in the tree; a path outside the tree stays as
/// given (no session of this tree can hold it, and no lock names it).
fn in_tree(tree: &str, paths: &[String], cwd: Option<&str>) -> Vec<String> {
    let under = |path: &str| -> Option<String> {
        path.strip_prefix(tree)?
            .strip_prefix('/')
            .map(|rest| rest.to_owned())
    };
    let base = cwd.and_then(under).filter(|b| !b.is_empty());
    paths
        .iter()
        .map(|path| match (path.starts_with('/'), &base) {
            (true, _) => under(path).unwrap_or_else(|| path.clone()),
            (false, Some(base)) => format!("{base}/{path}"),
            (false, None) => path.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
