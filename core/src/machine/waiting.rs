//! `bay waiting`: the changes that wait for an approval, as the remote holds them. With
//! `bay.approverName` set, only the checks that approver may answer (and only the changes that
//! owe one of them); without it, every waiting change with who may approve each.
//!
//! It reads the queue's places, the chains of their changes (which bring each waiting
//! candidate, the release step's second parent) and measures each candidate against its base
//! for `diff.summary`. With a key registry it also reads every change record, and lists a
//! change blocked `CHECK_FAILED`, `CHECK_FLAKY` or `CHECK_UNKNOWN` on a check the policy at its
//! candidate's base marks `waivable`, with the check's real `verdict` and `waive`, the command
//! that waives it, to an approver the registry's `approver` file enrols under
//! `bay.approverName`, or to anyone without one. It writes nothing; with nothing waiting it is
//! `ok` with an empty list.

mod item;

use std::collections::BTreeSet;

use serde_json::Value;

use self::item::{Approval, Diff, Item, Listed, Summary, Waivable, Waiver};
use super::agent::fold_chain;
use super::keys_read::{KeysRead, KeysStep};
use super::{
    Action, ChainQuery, ChainRead, Completion, FetchSpec, Outbox, RawStep, Refs, unreadable,
};
use crate::detail::{Detail, Unread};
use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::limits::PathStat;
use crate::record::ChangeRecord;
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

#[derive(Clone, Debug)]
pub struct WaitingInput {
    pub main: String,
    /// `bay.approverName`, if set.
    pub approver: Option<String>,
}

/// A waiting item found: its operation's queue key, the item, the candidate and its base.
type Found = ((u64, bool, u64), Approval, Oid, Oid);

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    Places(Vec<(u64, Oid)>),
    Chains(FetchSpec),
    ReadChains,
    /// The measures of the candidate of item `index`.
    Stats(usize),
    /// Every change record, for the blocked ones a waiver could let through.
    Blocked(FetchSpec),
    ReadBlocked,
    /// The policy at the base of blocked candidate `index` of `blocked`.
    BlockedPolicy(usize),
    /// The key registry, for whether this machine's approver is enrolled to waive.
    Keys(KeysRead),
}

/// A change blocked on a failed check, and the check: a waiver may let it through if the
/// policy at its candidate's base marks the check waivable.
#[derive(Clone, Debug)]
struct Blocked {
    item: Waiver,
    base: Oid,
}

/// The machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Waiting {
    input: WaitingInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    remote: Refs,
    /// The items so far, in queue order, each with the candidate and base it measures.
    items: Vec<(Approval, Oid, Oid)>,
    /// How many measures are still out.
    measuring: usize,
    /// Blocked changes whose check may be waivable, and how many policy reads are out.
    blocked: Vec<Blocked>,
    blocked_read: bool,
    waivable: Vec<Waiver>,
    reading: usize,
    outcome: Option<BayResult>,
}

super::agent::command_machine!(Waiting, "waiting");

impl Waiting {
    pub fn new(input: WaitingInput, now: Timestamp) -> Waiting {
        let mut machine = Waiting {
            input,
            out: Outbox::default(),
            now,
            remote: Refs::new(),
            items: Vec::new(),
            measuring: 0,
            blocked: Vec::new(),
            blocked_read: false,
            waivable: Vec::new(),
            reading: 0,
            outcome: None,
        };
        let spec = FetchSpec::new([
            refs::main(&machine.input.main),
            refs::QUEUE_PATTERN.to_string(),
            format!("{}*", crate::trust::registry::REF),
        ]);
        machine.out.send(Action::Fetch(spec), Purpose::Fetch);
        machine
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.finish(report::failed(why, None));
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        let places: Vec<(u64, Oid)> = self
            .remote
            .iter()
            .filter_map(|(name, oid)| Some((refs::parse_queue(name)?, oid.clone())))
            .collect();
        if places.is_empty() {
            return self.done();
        }
        let oids = places.iter().map(|(_, oid)| oid.clone()).collect();
        self.out
            .send(Action::ReadSteps { oids }, Purpose::Places(places));
    }

    fn on_places(&mut self, places: Vec<(u64, Oid)>, steps: Vec<RawStep>) {
        // A place bay cannot read holds nothing to approve.
        let changes: BTreeSet<ChangeId> = places
            .iter()
            .filter_map(|(seq, oid)| {
                let message = steps.iter().find(|raw| &raw.oid == oid)?;
                unreadable::request_at(*seq, Some(&message.message)).ok()
            })
            .map(|op| op.change)
            .collect();
        if changes.is_empty() {
            return self.done();
        }
        let spec = FetchSpec::new(changes.iter().map(refs::change_pattern));
        self.out
            .send(Action::Fetch(spec.clone()), Purpose::Chains(spec));
    }

    fn on_chains_fetched(&mut self, spec: FetchSpec, fetched: Refs) {
        spec.apply(&mut self.remote, fetched);
        let chains = ChainQuery::every_whole(&self.remote);
        if chains.is_empty() {
            return self.done();
        }
        self.out
            .send(Action::ReadChains { chains }, Purpose::ReadChains);
    }

    fn on_chains(&mut self, reads: Vec<ChainRead>) {
        let mut found: Vec<Found> = reads
            .iter()
            .filter_map(|read| fold_chain(read).ok())
            .filter_map(|(record, _)| self.item(&record))
            .collect();
        found.sort_by_key(|found| found.0);
        self.items = found
            .into_iter()
            .map(|(_, item, commit, base)| (item, commit, base))
            .collect();
        for (index, (_, commit, base)) in self.items.iter().enumerate() {
            let read = Action::ReadStats {
                base: base.clone(),
                commit: commit.clone(),
            };
            self.out.send(read, Purpose::Stats(index));
        }
        self.measuring = self.items.len();
        if self.measuring == 0 {
            self.done();
        }
    }

    /// The item of `record` when its live operation waits for an approval this machine's
    /// approver may give (any, without one): its queue key, the item, the candidate commit
    /// and its base.
    fn item(&self, record: &ChangeRecord) -> Option<Found> {
        let op = record.live_op().filter(|op| report::awaits_approval(op))?;
        let detail = op.released_detail.as_ref()?;
        let approval = detail.get("approval")?;
        let commit = approval.get("commit")?.as_str()?;
        let candidate = op.candidates.iter().find(|c| c.commit.as_str() == commit)?;
        let checks: Vec<Value> = approval
            .get("checks")?
            .as_array()?
            .iter()
            .filter(|check| match &self.input.approver {
                None => true,
                Some(name) => check
                    .get("producers")
                    .and_then(Value::as_array)
                    .is_none_or(|names| names.iter().any(|n| n.as_str() == Some(name))),
            })
            .cloned()
            .collect();
        if checks.is_empty() {
            return None;
        }
        let item = Approval {
            change: record.change.clone(),
            intent: record.intent.clone(),
            actor: record.actor.clone(),
            candidate: candidate.id.clone(),
            commit: candidate.commit.clone(),
            tree: candidate.tree.clone(),
            paths: approval
                .get("paths")
                .cloned()
                .unwrap_or(Value::Array(Vec::new())),
            checks,
            approve: approval.get("approve").cloned().unwrap_or(Value::Null),
            reject: approval.get("reject").cloned().unwrap_or(Value::Null),
            lands_by: detail.get("lands_by").cloned().unwrap_or(Value::Null),
            diff: None,
        };
        Some((
            op.queue_key(),
            item,
            candidate.commit.clone(),
            candidate.base.clone(),
        ))
    }

    /// `diff.summary` of item `index` ([`Summary::of`]), or why it could not be read.
    fn on_stats(&mut self, index: usize, stats: Result<Vec<PathStat>, super::Fault>) {
        let summary = match stats {
            Ok(stats) => Summary::of(&stats),
            Err(fault) => Summary::Unread(Unread { unread: fault.0 }),
        };
        if let Some((item, _, _)) = self.items.get_mut(index) {
            item.diff = Some(Diff { summary });
        }
        self.measuring = self.measuring.saturating_sub(1);
        if self.measuring == 0 {
            self.done();
        }
    }

    /// The waits for a yes are read: with a registry, the blocked changes a waiver could let
    /// through come next.
    fn done(&mut self) {
        if self.remote.contains_key(crate::trust::registry::REF)
            && self.blocked.is_empty()
            && self.reading == 0
            && !self.blocked_read
        {
            self.blocked_read = true;
            let spec = FetchSpec::new([format!("{}*", refs::CHANGES)]);
            self.out
                .send(Action::Fetch(spec.clone()), Purpose::Blocked(spec));
            return;
        }
        self.report();
    }

    fn on_blocked_fetched(&mut self, spec: FetchSpec, fetched: Refs) {
        spec.apply(&mut self.remote, fetched);
        let chains = ChainQuery::every_whole(&self.remote);
        if chains.is_empty() {
            return self.report();
        }
        self.out
            .send(Action::ReadChains { chains }, Purpose::ReadBlocked);
    }

    /// Each change whose last operation ended blocked on a failed check, on its last
    /// candidate; the policy at that candidate's base says whether the check is waivable.
    fn on_blocked(&mut self, reads: Vec<ChainRead>) {
        use crate::reason::ReasonCode;
        for (record, _) in reads.iter().filter_map(|read| fold_chain(read).ok()) {
            let Some(op) = record.ops.last() else {
                continue;
            };
            let blocked = op.state == crate::result::OpState::Blocked
                && matches!(
                    op.outcome.as_ref().and_then(|o| o.reason),
                    Some(
                        ReasonCode::CheckFailed | ReasonCode::CheckFlaky | ReasonCode::CheckUnknown
                    )
                );
            let Some(candidate) = op.candidates.last().filter(|_| blocked) else {
                continue;
            };
            let Some(run) =
                op.checks.iter().rev().find(|c| {
                    c.candidate == candidate.id && c.verdict != crate::check::Verdict::Pass
                })
            else {
                continue;
            };
            self.blocked.push(Blocked {
                item: Waiver {
                    change: record.change.clone(),
                    intent: record.intent.clone(),
                    actor: record.actor.clone(),
                    candidate: candidate.id.clone(),
                    commit: candidate.commit.clone(),
                    waivable: [Waivable {
                        check: run.check.clone(),
                        environment: run.environment.clone(),
                        verdict: run.verdict,
                        waive: format!(
                            "bay approve {} --waive {} --why <text>",
                            record.change, run.check
                        ),
                    }],
                },
                base: candidate.base.clone(),
            });
        }
        for (index, blocked) in self.blocked.iter().enumerate() {
            let read = Action::ReadFile {
                commit: blocked.base.clone(),
                path: crate::check::plan::POLICY_PATH.into(),
            };
            self.out.send(read, Purpose::BlockedPolicy(index));
        }
        self.reading = self.blocked.len();
        if self.reading == 0 {
            self.report();
        }
    }

    fn on_blocked_policy(&mut self, index: usize, bytes: Option<Vec<u8>>) {
        if let Some(blocked) = self.blocked.get(index) {
            let [wanted] = &blocked.item.waivable;
            let waivable = bytes
                .and_then(|bytes| crate::check::plan::parse_policy(&bytes).ok())
                .is_some_and(|policy| {
                    policy.checks.iter().any(|c| {
                        c.id == wanted.check && c.environment == wanted.environment && c.waivable
                    })
                });
            if waivable {
                self.waivable.push(blocked.item.clone());
            }
        }
        self.reading = self.reading.saturating_sub(1);
        if self.reading == 0 {
            self.enrolled();
        }
    }

    /// Waivable checks are listed to an approver the registry enrols, or to anyone with no
    /// `bay.approverName`: the registry is read only to say whether this one is enrolled.
    fn enrolled(&mut self) {
        let registry = self.remote.get(crate::trust::registry::REF).cloned();
        let main = self.remote.get(&refs::main(&self.input.main)).cloned();
        match (&self.input.approver, registry, main) {
            (Some(_), Some(registry), Some(main)) if !self.waivable.is_empty() => {
                let (reader, read) = KeysRead::start(main, registry);
                self.out.send(read, Purpose::Keys(reader));
            }
            _ => self.report(),
        }
    }

    fn on_keys(&mut self, mut reader: KeysRead, completion: Completion) -> Option<Completion> {
        match reader.on(completion) {
            Err(completion) => return Some(*completion),
            Ok(KeysStep::Ask(action)) => {
                self.out.send(*action, Purpose::Keys(reader));
            }
            Ok(KeysStep::Done(_, version)) => {
                let name = self.input.approver.as_deref();
                let enrolled = version
                    .classes
                    .get(&crate::trust::registry::Class::Approver)
                    .into_iter()
                    .flatten()
                    .any(|entry| Some(entry.name.as_str()) == name);
                if !enrolled {
                    self.waivable.clear();
                }
                self.report();
            }
            // A registry bay cannot judge counts no waiver: nothing to offer.
            Ok(KeysStep::Broken(_) | KeysStep::Unread(_)) => {
                self.waivable.clear();
                self.report();
            }
        }
        None
    }

    fn report(&mut self) {
        let approvals = self.items.iter().map(|(item, _, _)| Item::Approval(item));
        let detail = Listed {
            approver: self.input.approver.as_deref(),
            waiting: approvals
                .chain(self.waivable.iter().map(Item::Waiver))
                .collect(),
        };
        let result = BayResult::ok(None, detail.to_map());
        self.finish(report::with_main(
            result,
            self.remote.get(&refs::main(&self.input.main)),
        ));
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Places(places), Completion::StepsRead(Ok(steps))) => {
                self.on_places(places, steps)
            }
            (Purpose::Chains(spec), Completion::Fetched(Ok(fetched))) => {
                self.on_chains_fetched(spec, fetched)
            }
            (Purpose::ReadChains, Completion::ChainsRead(Ok(reads))) => self.on_chains(reads),
            (Purpose::Stats(index), Completion::StatsRead(stats)) => self.on_stats(index, stats),
            (Purpose::Blocked(spec), Completion::Fetched(Ok(fetched))) => {
                self.on_blocked_fetched(spec, fetched)
            }
            (Purpose::ReadBlocked, Completion::ChainsRead(Ok(reads))) => self.on_blocked(reads),
            (Purpose::BlockedPolicy(index), Completion::FileRead(Ok(bytes))) => {
                self.on_blocked_policy(index, bytes)
            }
            (Purpose::Keys(reader), completion) => return self.on_keys(reader, completion),
            (_, completion) => return Some(completion),
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use serde_json::json;

    #[test]
    fn with_an_empty_queue_nothing_waits_and_it_is_ok() {
        let input = WaitingInput {
            main: "main".into(),
            approver: Some("alice".into()),
        };
        let mut machine = Waiting::new(input, Timestamp(1));
        let (id, action) = machine.poll_action().expect("a fetch");
        assert!(matches!(action, Action::Fetch(_)));
        machine
            .handle(
                Timestamp(2),
                crate::machine::Event::Done(id, Completion::Fetched(Ok(Refs::new()))),
            )
            .expect("handled");
        let outcome = machine.outcome().expect("done");
        assert_eq!(outcome.detail["waiting"], json!([]));
        assert_eq!(outcome.detail["approver"], "alice");
    }
}
