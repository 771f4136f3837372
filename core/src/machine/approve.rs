//! `bay approve <change>` and `bay reject <change>`: this machine's approver signs a yes (or a
//! no) for the exact candidate the change waits on, one `approval` record per approval check
//! it may answer, and pushes them to its notes ref `refs/notes/bay/evidence/<approver>`.
//!
//! The writer is always `bay.approverName`, signing with `bay.approverKey`; the key must be
//! enrolled under that name in the registry's `approver` file, or nothing is written, since no
//! record it signed would count. The candidate is the one the change's record says waits
//! (`APPROVAL_PENDING`), never a newer one. Every refusal is a `failed` result with
//! `detail.why` and `detail.recovery`; nothing is written then.

use serde::Serialize;
use serde_json::Value;

use super::agent::{AfterNotesPush, fold_chain, read_chain};
use super::keys_read::{KeysRead, KeysStep};
use super::{Action, Completion, Expect, FetchSpec, NoteAdd, Outbox, PushOutcome, PushPlan, Refs};
use crate::approval::{About, Answer, record, record_id_of, same_content};
use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::policy::ApprovalCheck;
use crate::record::ChangeRecord;
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;
use crate::trust::Trust;
use crate::trust::record::KeySetting;
use crate::trust::registry::{Class, REF as REGISTRY, Version, is_name};

/// The call as given.
#[derive(Clone, Debug)]
pub struct ApproveInput {
    pub main: String,
    pub change: ChangeId,
    /// `bay.approverName`, if set.
    pub approver: Option<String>,
    /// `bay.approverKey`, if set, with its public half or why there is none.
    pub key: Option<KeySetting>,
    /// `true` for `bay approve`, `false` for `bay reject`.
    pub yes: bool,
    /// `--why`.
    pub why: String,
    /// `--waive <check>`: a waiver of that failed check instead of a yes.
    pub waive: Option<String>,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    Chain,
    Keys(KeysRead),
    /// The policy at the blocked candidate's base, which must mark the check waivable.
    Policy,
    Notes,
    Push,
    /// Whether this clone holds the change's view, once the records are pushed: for an
    /// answer its author merges with `bay merge --wait`, whether that is here.
    Views(Vec<String>, Vec<String>),
}

/// A waiver asked for: the failed check, its environment and real verdict, and the base the
/// candidate was built on.
#[derive(Clone, Debug)]
struct Waive {
    check: String,
    environment: String,
    verdict: Verdict,
    base: Oid,
}

/// What `bay approve` answers once its record landed: a yes or a no on the candidate's
/// checks, or a waiver of one check; `lands_by` says who merges it next.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Answered<'a> {
    Approved {
        approver: String,
        verdict: Verdict,
        candidate: &'a str,
        commit: &'a Oid,
        tree: &'a Oid,
        checks: Vec<&'a str>,
        recorded: Vec<String>,
        unchanged: usize,
        lands_by: &'a str,
        trust: Trust,
    },
    /// A waiver: its own record says `unknown`, and the check's verdict it answers.
    Waived {
        approver: String,
        waived: &'a str,
        verdict: Verdict,
        waived_verdict: Verdict,
        candidate: &'a str,
        commit: &'a Oid,
        recorded: Vec<String>,
        unchanged: usize,
        lands_by: &'a str,
        trust: Trust,
    },
}

impl Detail for Answered<'_> {}

/// What the change waits on, as its record says.
#[derive(Clone, Debug)]
struct Waiting {
    about: About,
    /// The checks owed that this approver may answer.
    checks: Vec<ApprovalCheck>,
    /// Who merges it once approved, as the release said.
    lands_by: String,
    /// With `--waive`, the check waived.
    waive: Option<Waive>,
}

/// The machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Approve {
    input: ApproveInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    races: u32,
    remote: Refs,
    waiting: Option<Waiting>,
    /// The records the push in flight adds, and the ids found already held.
    pending: Vec<String>,
    unchanged: Vec<String>,
    outcome: Option<BayResult>,
}

super::agent::command_machine!(Approve, "approve");

impl Approve {
    pub fn new(input: ApproveInput, now: Timestamp) -> Approve {
        let mut machine = Approve {
            input,
            out: Outbox::default(),
            now,
            races: 0,
            remote: Refs::new(),
            waiting: None,
            pending: Vec::new(),
            unchanged: Vec::new(),
            outcome: None,
        };
        match machine.settings() {
            Err((why, recovery)) => machine.refuse(why, recovery),
            Ok(_) => machine.fetch(),
        }
        machine
    }

    /// The approver's name, once the settings are known to be sound.
    fn settings(&self) -> Result<(&str, &KeySetting), (String, String)> {
        let Some(name) = &self.input.approver else {
            return Err((
                "this machine has no approver: bay.approverName is not set".into(),
                "set bay.approverName and bay.approverKey in Git config (`git config \
                 bay.approverName alice`)"
                    .into(),
            ));
        };
        if !is_name(name) {
            return Err((
                format!("bay.approverName {name:?} is not a short lower-case word"),
                "set bay.approverName to a-z, 0-9 and `-` only".into(),
            ));
        }
        match &self.input.key {
            None => Err((
                "an approval is signed by bay.approverKey, which is not set".into(),
                "set bay.approverKey to the approver's private key file".into(),
            )),
            Some(KeySetting {
                public: Err(why),
                path,
            }) => Err((
                format!("bay.approverKey ({path}): {why}"),
                "point bay.approverKey at a readable private key with its .pub beside it".into(),
            )),
            Some(_) if self.input.waive.is_some() && self.input.why.trim().is_empty() => Err((
                "a waiver needs a reason, and --why gives none".into(),
                "give the reason with --why, such as `--why \"Runner out of disk; tracked in \
                 OPS-12\"`"
                    .into(),
            )),
            Some(key) => Ok((name, key)),
        }
    }

    fn name(&self) -> String {
        self.input.approver.clone().unwrap_or_default()
    }

    fn notes_ref(&self) -> String {
        refs::evidence(&self.name())
    }

    fn fetch(&mut self) {
        let spec = FetchSpec::new([
            refs::main(&self.input.main),
            refs::change_pattern(&self.input.change),
            format!("{}*", self.notes_ref()),
            crate::trust::registry::fetch_pattern(),
        ]);
        self.out.send(Action::Fetch(spec), Purpose::Fetch);
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.refuse(why, "run the command again".into());
    }

    /// A `failed` result naming why and what to do.
    fn refuse(&mut self, why: String, recovery: String) {
        let mut result = report::failed(why, Some(&self.input.change));
        result
            .detail
            .insert("recovery".into(), Value::from(recovery));
        self.finish(result);
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        if !self.remote.contains_key(REGISTRY) {
            return self.refuse(
                "the remote holds no key registry, so no approval can count".into(),
                "on the machine with the registry key run `bay enrol registry <name> <key.pub>`, \
                 then `bay enrol approver <name> <key.pub>`"
                    .into(),
            );
        }
        let read = read_chain(&self.remote, &self.input.change);
        self.out.send(read, Purpose::Chain);
    }

    fn on_chain(&mut self, reads: Vec<crate::machine::ChainRead>) {
        let record = match reads.first().map(fold_chain) {
            Some(Ok((record, _))) => record,
            Some(Err(why)) => return self.fail(why),
            None => return self.fail(format!("no change {} on the remote", self.input.change)),
        };
        let waiting = match &self.input.waive {
            Some(check) => self.waivable_of(&record, check),
            None => self.waiting_of(&record),
        };
        match waiting {
            Ok(waiting) => self.waiting = Some(waiting),
            Err(why) => {
                let recovery = format!(
                    "run `bay status {}` to see what it waits on, or `bay waiting` for the \
                     changes that wait for you",
                    self.input.change
                );
                return self.refuse(why, recovery);
            }
        }
        if let Some(waive) = self.waiting.as_ref().and_then(|w| w.waive.clone()) {
            let read = Action::ReadFile {
                commit: waive.base,
                path: crate::check::plan::POLICY_PATH.into(),
            };
            self.out.send(read, Purpose::Policy);
            return;
        }
        self.read_keys();
    }

    /// The policy at the candidate's base marks the check waivable, or nothing is written.
    fn on_policy(&mut self, bytes: Option<Vec<u8>>) {
        let Some(waive) = self.waiting.as_ref().and_then(|w| w.waive.clone()) else {
            return;
        };
        let waivable = bytes
            .and_then(|bytes| crate::check::plan::parse_policy(&bytes).ok())
            .is_some_and(|policy| {
                policy.checks.iter().any(|c| {
                    c.id == waive.check && c.environment == waive.environment && c.waivable
                })
            });
        if !waivable {
            return self.refuse(
                format!(
                    "the check {} is not marked `waivable = true` in the policy at the \
                     candidate's base, so no waiver of it counts",
                    waive.check
                ),
                "mark the check `waivable = true` in .bay/policy.toml on main, then run the \
                 change again"
                    .into(),
            );
        }
        self.read_keys();
    }

    fn read_keys(&mut self) {
        let (Some(registry), Some(main)) = (
            self.remote.get(REGISTRY).cloned(),
            self.remote.get(&refs::main(&self.input.main)).cloned(),
        ) else {
            return self.fail("the remote holds no main".into());
        };
        let (reader, read) = KeysRead::start(main, registry);
        self.out.send(read, Purpose::Keys(reader));
    }

    /// The candidate the change waits on and the checks this approver may answer there.
    fn waiting_of(&self, record: &ChangeRecord) -> Result<Waiting, String> {
        let change = &self.input.change;
        let Some(op) = record.live_op().filter(|op| report::awaits_approval(op)) else {
            return Err(format!("the change {change} waits for no approval"));
        };
        let detail = op.released_detail.clone().unwrap_or(Value::Null);
        let approval = &detail["approval"];
        let commit = approval["commit"]
            .as_str()
            .and_then(|c| Oid::parse(c).ok())
            .ok_or_else(|| format!("the wait of {change} names no candidate"))?;
        let candidate = op
            .candidates
            .iter()
            .find(|c| c.commit == commit)
            .ok_or_else(|| format!("the wait of {change} names a candidate its record lacks"))?;
        let name = self.name();
        let owed: Vec<ApprovalCheck> = approval["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|check| {
                Some(ApprovalCheck {
                    id: check["check"].as_str()?.to_owned(),
                    environment: check["environment"].as_str()?.to_owned(),
                    when_paths: Vec::new(),
                    producers: check["producers"].as_array().map(|names| {
                        names
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    }),
                    carry: None,
                })
            })
            .collect();
        let checks: Vec<ApprovalCheck> = owed.iter().filter(|c| c.allows(&name)).cloned().collect();
        if checks.is_empty() {
            return Err(format!(
                "{name} may answer none of the approval checks {change} waits on ({})",
                owed.iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(Waiting {
            about: About::candidate(change, candidate),
            checks,
            lands_by: detail["lands_by"].as_str().unwrap_or("executor").to_owned(),
            waive: None,
        })
    }

    /// The candidate a waiver is for: the change's last operation ended blocked on `check`
    /// (`CHECK_FAILED`, `CHECK_FLAKY` or `CHECK_UNKNOWN`), on its last candidate.
    fn waivable_of(&self, record: &ChangeRecord, check: &str) -> Result<Waiting, String> {
        use crate::reason::ReasonCode;
        let change = &self.input.change;
        let op = record
            .ops
            .last()
            .filter(|op| op.state == crate::result::OpState::Blocked)
            .filter(|op| {
                matches!(
                    op.outcome.as_ref().and_then(|o| o.reason),
                    Some(
                        ReasonCode::CheckFailed | ReasonCode::CheckFlaky | ReasonCode::CheckUnknown
                    )
                )
            })
            .ok_or_else(|| format!("the change {change} is not blocked on a failed check"))?;
        let candidate = op
            .candidates
            .last()
            .ok_or_else(|| format!("the change {change} has no candidate to waive a check on"))?;
        let run = op
            .checks
            .iter()
            .rev()
            .find(|c| c.candidate == candidate.id && c.check == check)
            .filter(|c| c.verdict != Verdict::Pass)
            .ok_or_else(|| {
                format!(
                    "the check {check} did not fail on {}, the change's candidate",
                    candidate.id
                )
            })?;
        Ok(Waiting {
            about: About::candidate(change, candidate),
            checks: Vec::new(),
            lands_by: "author".into(),
            waive: Some(Waive {
                check: run.check.clone(),
                environment: run.environment.clone(),
                verdict: run.verdict,
                base: candidate.base.clone(),
            }),
        })
    }

    fn on_keys(&mut self, mut reader: KeysRead, completion: Completion) -> Option<Completion> {
        match reader.on(completion) {
            Err(completion) => return Some(*completion),
            Ok(KeysStep::Ask(action)) => {
                self.out.send(*action, Purpose::Keys(reader));
            }
            Ok(KeysStep::Done(_, version)) => self.on_registry(&version),
            Ok(KeysStep::Broken(broken)) => self.refuse(
                format!(
                    "the key registry breaks its rules, so no approval can count: {}",
                    serde_json::to_string(&broken).unwrap_or_default()
                ),
                "tell the person who keeps the registry key; `bay doctor` names the break".into(),
            ),
            Ok(KeysStep::Unread(fault)) => self.fail(fault.0),
        }
        None
    }

    /// The key must be enrolled under this name in the `approver` file.
    fn on_registry(&mut self, version: &Version) {
        let Ok((name, key)) = self.settings() else {
            return;
        };
        let enrolled = version
            .classes
            .get(&Class::Approver)
            .into_iter()
            .flatten()
            .any(|e| e.name == name && Ok(&e.key) == key.public.as_ref());
        if !enrolled {
            let why = format!(
                "bay.approverKey is not enrolled in the registry's approver file as {name}, so \
                 no approval it signs would count"
            );
            let recovery = format!(
                "on the machine with the registry key run `bay enrol approver {name} {}.pub`",
                key.path
            );
            return self.refuse(why, recovery);
        }
        let Some(waiting) = &self.waiting else {
            return;
        };
        let objects = vec![waiting.about.commit.clone(), waiting.about.tree.clone()];
        match self.remote.get(&self.notes_ref()).cloned() {
            Some(tip) => {
                let read = Action::ReadNotes {
                    notes: vec![tip],
                    objects,
                };
                self.out.send(read, Purpose::Notes);
            }
            None => self.write(Vec::new()),
        }
    }

    fn records(&self) -> Vec<String> {
        let Some(waiting) = &self.waiting else {
            return Vec::new();
        };
        if let Some(waive) = &waiting.waive {
            let answer = Answer {
                approver: self.name(),
                check: waive.check.clone(),
                environment: waive.environment.clone(),
                verdict: Verdict::Unknown,
                why: self.input.why.clone(),
            };
            return vec![crate::approval::waiver(
                &answer,
                waive.verdict,
                &waiting.about,
                self.now,
            )];
        }
        let verdict = if self.input.yes {
            Verdict::Pass
        } else {
            Verdict::ProductFailure
        };
        waiting
            .checks
            .iter()
            .map(|check| {
                let answer = Answer {
                    approver: self.name(),
                    check: check.id.clone(),
                    environment: check.environment.clone(),
                    verdict,
                    why: self.input.why.clone(),
                };
                record(&answer, &waiting.about, self.now)
            })
            .collect()
    }

    /// Adds each record not held yet; one held with the same content is unchanged.
    fn write(&mut self, held: Vec<String>) {
        let mut new = Vec::new();
        let mut unchanged = Vec::new();
        for line in self.records() {
            let id = record_id_of(&line).unwrap_or_default();
            let same = held
                .iter()
                .find(|h| record_id_of(h).as_deref() == Some(id.as_str()));
            match same {
                Some(h) if same_content(h, &line) => unchanged.push(id),
                _ => new.push((id, line)),
            }
        }
        if new.is_empty() {
            return self.done(Vec::new(), unchanged);
        }
        let Some(waiting) = &self.waiting else {
            return;
        };
        let expect = match self.remote.get(&self.notes_ref()) {
            Some(tip) => Expect::Is(tip.clone()),
            None => Expect::Absent,
        };
        let key = self.input.key.as_ref().map(|k| k.path.clone());
        // A waiver covers the candidate's content (its tree, on its base's), which a runner
        // builds again on the same main: it hangs on the tree; an approval on the commit.
        let object = if waiting.waive.is_some() {
            waiting.about.tree.clone()
        } else {
            waiting.about.commit.clone()
        };
        let notes = new
            .iter()
            .map(|(_, line)| NoteAdd {
                producer: self.name(),
                expect: expect.clone(),
                object: object.clone(),
                record: line.clone(),
                key: key.clone(),
            })
            .collect();
        let plan = PushPlan {
            notes,
            atomic: true,
            ..PushPlan::default()
        };
        self.out.send(Action::Push(plan), Purpose::Push);
        self.pending = new.into_iter().map(|(id, _)| id).collect();
        self.unchanged = unchanged;
    }

    /// The records are pushed. An answer its author merges with `bay merge --wait` (a waiver,
    /// or a yes no runner picks up) first asks whether this clone holds the change's view.
    fn done(&mut self, recorded: Vec<String>, unchanged: Vec<String>) {
        let Some(waiting) = &self.waiting else {
            return;
        };
        let by_author = waiting.waive.is_some() || (self.input.yes && waiting.lands_by == "author");
        if by_author {
            let inspect = Action::InspectViews {
                changes: vec![self.input.change.clone()],
            };
            self.out.send(inspect, Purpose::Views(recorded, unchanged));
            return;
        }
        self.answered(recorded, unchanged, false);
    }

    /// The result: who merges the change next (`lands_by`): a runner (`executor`), its
    /// author, `here` when this clone holds its view (the author's `bay merge --wait` runs
    /// here), or its author once repaired after a no.
    fn answered(&mut self, recorded: Vec<String>, unchanged: Vec<String>, view_here: bool) {
        let Some(waiting) = self.waiting.clone() else {
            return;
        };
        let by_author = if view_here { "here" } else { "author" };
        let lands_by = if !self.input.yes {
            "author_repairs"
        } else if waiting.lands_by == "author" {
            by_author
        } else {
            waiting.lands_by.as_str()
        };
        let approver = self.name();
        let about = &waiting.about;
        let detail = match &waiting.waive {
            Some(waive) => Answered::Waived {
                approver,
                waived: &waive.check,
                verdict: Verdict::Unknown,
                waived_verdict: waive.verdict,
                candidate: &about.candidate,
                commit: &about.commit,
                recorded,
                unchanged: unchanged.len(),
                lands_by: by_author,
                trust: Trust::Signed,
            },
            None => Answered::Approved {
                approver,
                verdict: if self.input.yes {
                    Verdict::Pass
                } else {
                    Verdict::ProductFailure
                },
                candidate: &about.candidate,
                commit: &about.commit,
                tree: &about.tree,
                checks: waiting.checks.iter().map(|c| c.id.as_str()).collect(),
                recorded,
                unchanged: unchanged.len(),
                lands_by,
                trust: Trust::Signed,
            },
        };
        let result =
            BayResult::ok(None, detail.to_map()).with_change(Some(self.input.change.clone()));
        self.finish(result);
    }

    fn on_pushed(&mut self, outcome: PushOutcome) {
        match AfterNotesPush::of(outcome, &mut self.races, "this approver's notes") {
            AfterNotesPush::Landed => {
                let recorded = std::mem::take(&mut self.pending);
                let unchanged = std::mem::take(&mut self.unchanged);
                self.done(recorded, unchanged);
            }
            AfterNotesPush::Again => self.fetch(),
            AfterNotesPush::Failed(why) => self.fail(why),
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Chain, Completion::ChainsRead(Ok(reads))) => self.on_chain(reads),
            (Purpose::Keys(reader), completion) => return self.on_keys(reader, completion),
            (Purpose::Notes, Completion::NotesRead(Ok(lines))) => self.write(lines),
            (Purpose::Policy, Completion::FileRead(Ok(bytes))) => self.on_policy(bytes),
            (Purpose::Push, Completion::Pushed(report)) => self.on_pushed(report.outcome),
            // A view that cannot be inspected is not known to be here.
            (Purpose::Views(recorded, unchanged), Completion::ViewsInspected(views)) => {
                let here = views
                    .is_ok_and(|views| views.iter().any(|view| view.change == self.input.change));
                self.answered(recorded, unchanged, here);
            }
            (_, completion) => return Some(completion),
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_yes_and_a_waiver_each_name_their_own_fields() {
        let oid = |c: char| Oid::parse(&c.to_string().repeat(40)).expect("an id");
        let (commit, tree) = (oid('a'), oid('b'));
        let approved = Answered::Approved {
            approver: "alice".into(),
            verdict: Verdict::Pass,
            candidate: "c7k2m4qa.1.1",
            commit: &commit,
            tree: &tree,
            checks: vec!["review"],
            recorded: vec!["r1".into()],
            unchanged: 0,
            lands_by: "executor",
            trust: Trust::Signed,
        };
        assert_eq!(
            approved.to_json(),
            json!({"approver": "alice", "verdict": "pass", "candidate": "c7k2m4qa.1.1",
                   "commit": commit, "tree": tree, "checks": ["review"], "recorded": ["r1"],
                   "unchanged": 0, "lands_by": "executor", "trust": "signed"})
        );
        let waived = Answered::Waived {
            approver: "alice".into(),
            waived: "unit",
            verdict: Verdict::Unknown,
            waived_verdict: Verdict::ProductFailure,
            candidate: "c7k2m4qa.1.1",
            commit: &commit,
            recorded: Vec::new(),
            unchanged: 1,
            lands_by: "author",
            trust: Trust::Signed,
        };
        assert_eq!(
            waived.to_json(),
            json!({"approver": "alice", "waived": "unit", "verdict": "unknown",
                   "waived_verdict": "product_failure", "candidate": "c7k2m4qa.1.1",
                   "commit": commit, "recorded": [], "unchanged": 1, "lands_by": "author",
                   "trust": "signed"})
        );
    }
}
