//! Checking the head and the entries behind it as one tree (`[runner] batch`).
//!
//! The head's runner takes the head and the live entries behind it, in queue order, and
//! builds their chain on main: each member's candidate on the one before, each its own commit
//! with its own `Change-Id` and trailers plus `Bay-Batch: <id> <i>/<k>` (`crate::batch`). It
//! claims the head, checks the last commit's tree once, and on a pass pushes every member's
//! claim, candidate and merged outcome, marker and place with main `base -> last member`, in
//! one atomic push leased on main and on every member's chain. Nothing of a batch is written
//! before that push but the head's claim and heartbeats, so a crash loses nothing and a retry
//! merges nothing twice: a member whose chain moved meanwhile refuses the whole push.
//!
//! On a failure it bisects over prefixes on the same main: prefix `i` is the chain's `i`-th
//! commit, so no prefix is built or run twice. When the longest passing prefix has two members
//! or more it merges, built again with its own size in the trailers (the same trees); the
//! culprit takes its own turn at the head and is never batched again: by this runner, which
//! remembers it, nor by any other, which reads the `Culprit` step this runner writes on its
//! chain (a push of its own, leased on the tip the pass read; lost, only this runner knows).
//! Otherwise, and whenever the batch cannot go on (a check with no verdict, a lost
//! heartbeat, a hold, the head's progress deadline passed while checking), the records it made
//! go up and the head takes its usual path
//! ([`Runner::read_policy`]), where exact-inputs reuse finds the head's own pass.
//!
//! Under a registry that signs everything each member's candidate is signed with the executor
//! key and its signature judged as the head's own would be, and the registry is read again
//! right before the merge push: one that no longer enrols a key that signed a member sends
//! the head alone, to sign again.
//!
//! A batch forms only where the spec lets it and where this runner can judge it whole: evidence
//! reuse that counts (a registry that signs everything, or `reuse_unsigned`), a failure rate
//! within `max_failure_rate`, a main no `[[hold]]` or hold plugin can hold, a policy that is
//! checked and keys no check run before the merge by commit, and members that change no check,
//! conflict with nothing, owe no person's yes (no approval carries onto a batch's tree), change
//! no path of a post check main is red on (main's red is read once, as the batch forms), are
//! within main's `[limits]` (each measured against the link before it; one over a cap, on red
//! paths or owing a yes is refused or waits at its own turn), name with `--after` no change
//! that is still to merge or ended unmerged, and are no known culprit. With `footprint_lanes`
//! the chain takes only entries whose footprint overlaps the head's: a disjoint one is checked
//! beside the head instead. The chain stops before the first member it may not take, so the
//! members are always the head and the entries right behind it, in queue order.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::hold::HoldAnswer;
use super::merged::{BatchOf, Merged};
use super::work::{Work, last_written};
use super::{Purpose as RunnerPurpose, RunMode, Runner, Stage};
use crate::approval;
use crate::batch::{Bisect, Outcome, Window, trailer};
use crate::check::footprint;
use crate::check::plan::{self, POLICY_PATH, Plan, parse_policy};
use crate::check::{
    CheckRequest, CheckTarget, CommitTree, EvidenceExtras, EvidenceRecord, Judgement, RequestInput,
    Verdict, judge,
};
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::id::{CandidateId, OpId};
use crate::machine::agent::give_up_place;
use crate::machine::red_read::{RedRead, RedStep};
use crate::machine::{
    Action, Append, BuildResult, CandidateSpec, CheckRun, Completion, Deadline, Expect, FetchSpec,
    LogAdd, Misuse, NewValue, PushOutcome, PushPlan, PushReport, RefUpdate, Wake,
};
use crate::policy::{CheckSpec, Policy, Stage as CheckStage};
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Operation, Step, StepBody};
use crate::red::{PostCheck, Red};
use crate::result::OpState;
use crate::time::Timestamp;
use crate::trust::registry::{judge_chain, split_signed};
use crate::trust::sshsig;

/// How many culprits a runner remembers: enough for any queue a batch reaches.
const CULPRITS: usize = 256;

/// What a batch action was for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    MainTree,
    /// Main's policy, with main's tree.
    Policy(Oid),
    /// A step of reading main's red, under a policy that names post checks.
    Red(Box<RedAt>),
    /// Member `index` of the chain being built.
    Build(usize),
    /// The measures of member `index`, built as this link, judged by main's `[limits]`.
    Stats(usize, Box<Link>),
    /// The chain's commits read raw, their signatures judged (a runner that signs).
    Signatures,
    /// The registry fetched, then read, right before the merge push (a runner that signs).
    KeysFetch(FetchSpec),
    KeysRead(Oid),
    /// The claim on the head, or a heartbeat, with the step it appends.
    Claim(Box<Step>),
    Heartbeat(Box<Step>),
    /// Run `index` of the prefix's plan.
    Run(usize, Box<CheckSpec>, Box<CheckRequest>),
    /// The records the batch made, going up before the head goes alone.
    Records,
    Merge,
}

/// Main's tree and policy, read while main's red is.
#[derive(Clone, Debug)]
pub(super) struct RedAt {
    tree: Oid,
    policy: Policy,
    reader: RedRead,
}

/// One member: a live operation in queue order, its change's record, and its chain's tip as
/// the pass read it.
#[derive(Clone, Debug)]
pub(super) struct Member {
    record: ChangeRecord,
    operation: Operation,
    tip: Oid,
}

impl Member {
    /// The candidate the member's record numbers next.
    fn candidate(&self) -> CandidateId {
        self.operation.next_candidate()
    }
}

/// One built member of the chain.
#[derive(Clone, Debug)]
pub(super) struct Link {
    candidate: CandidateId,
    commit: Oid,
    tree: Oid,
    /// Its first parent: main, or the member before.
    base: CommitTree,
    changed_paths: Vec<String>,
    /// The key whose signature on the commit verified against the registry's `executor`
    /// file, when this runner signs.
    signed_by: Option<Box<crate::trust::PublicKey>>,
}

/// What the chain is built for.
#[derive(Clone, Debug)]
enum Then {
    /// Its last tree is checked next.
    Check,
    /// It merges: its last tree is `checked`, which passed `plan`.
    Merge { checked: Oid, plan: Box<Plan> },
}

/// A prefix of the chain being checked.
#[derive(Clone, Debug)]
struct Checking {
    chain: Vec<Link>,
    /// How many members the prefix holds.
    prefix: usize,
    plan: Plan,
    /// The plan's runs not started yet, each with its index in the plan.
    left: VecDeque<(usize, CheckSpec)>,
    /// The runs in flight (up to `[runner] parallel_checks`), by index in the plan, each with
    /// the time it is given up as `unknown`.
    running: BTreeMap<usize, Timestamp>,
    /// Once the whole batch failed.
    bisect: Option<Bisect>,
}

impl Checking {
    /// When the first run in flight is given up as `unknown`.
    fn first_deadline(&self) -> Option<Timestamp> {
        self.running.values().min().copied()
    }
}

/// Where a batch stands.
#[derive(Clone, Debug)]
enum Phase {
    /// The phase is in a step's hands, which always places the next one: never seen between
    /// two events.
    Taken,
    /// The chain is built, member by member.
    Building {
        chain: Vec<Link>,
        size: usize,
        then: Then,
    },
    /// The chain's signatures are judged; it goes on as `then` says.
    Verifying {
        chain: Vec<Link>,
        then: Then,
    },
    /// The registry is read before the merge push, which goes out when it still enrols every
    /// key that signed a member.
    Judging {
        chain: Vec<Link>,
        plan: Box<Plan>,
    },
    /// The head's claim is going up; the chain is checked next.
    Claiming {
        chain: Vec<Link>,
    },
    Checking(Box<Checking>),
    /// The merge waits for the heartbeat in flight, then goes out; a runner that signs reads
    /// the registry first, and `cleared` says it still enrols every key that signed a member.
    Ready {
        chain: Vec<Link>,
        plan: Box<Plan>,
        cleared: bool,
    },
    /// The merge push is out, with the events it appends to the log.
    Merging {
        size: usize,
        events: Vec<String>,
    },
    /// The batch is over short of a merge: once no heartbeat is in flight the records it
    /// made go up, then the head takes its usual path.
    Leaving,
}

/// A batch about to form: main's tree, then its policy, are read first.
#[derive(Debug)]
pub(super) struct Forming {
    members: Vec<Member>,
    main: Oid,
    hold: HoldAnswer,
}

impl Forming {
    /// The operation the batch would be for, as `Runner::working_on` names it.
    pub(super) fn op(&self) -> &OpId {
        &self.members[0].operation.id
    }
}

/// A batch in hand.
#[derive(Debug)]
pub(super) struct Batch {
    members: Vec<Member>,
    main: CommitTree,
    /// The policy at main, which every member's checks and caps are judged by.
    policy: Box<Policy>,
    /// Main's red, read once as the batch formed (empty when the policy names no post check):
    /// a member on a red check's paths is refused at its own turn.
    red: Red,
    /// The hold plugin's answer the pass began with, for the head's usual path.
    hold: HoldAnswer,
    /// The head's chain tip, as read and then as this runner wrote it.
    tip: Oid,
    claimed: bool,
    heartbeat_at: Timestamp,
    /// A heartbeat is in flight.
    beating: bool,
    /// The head's progress deadline, from the batch's first run: past it while checking, the
    /// batch is given up and the head goes alone, so a long bisection cannot hold the queue.
    progress_until: Option<Timestamp>,
    /// Every record made, on the tree it is about, in the order they ran: they go up with the
    /// merge, or before the head goes alone.
    made: Vec<(Oid, String)>,
    phase: Phase,
}

impl Batch {
    fn head(&self) -> &Member {
        &self.members[0]
    }

    /// The batch's id in its trailers: the head's candidate, unique to this attempt.
    fn id(&self) -> String {
        self.head().candidate().to_string()
    }

    fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether the head's claim is renewed now: claimed, with no heartbeat in flight, and no
    /// other push on the head's chain (the merge) or ending (the records) out.
    fn beats(&self) -> bool {
        self.claimed
            && !self.beating
            && matches!(
                self.phase,
                Phase::Building { .. } | Phase::Checking(_) | Phase::Ready { .. }
            )
    }

    /// When the runner must act next: the heartbeat, or the first deadline of a run in
    /// flight.
    pub(super) fn deadline(&self) -> Option<Deadline> {
        let heartbeat = self.beats().then_some(Deadline {
            at: self.heartbeat_at,
            why: Wake::Heartbeat,
        });
        let (run, progress) = match &self.phase {
            Phase::Checking(checking) => (
                checking.first_deadline().map(|at| Deadline {
                    at,
                    why: Wake::CheckDeadline,
                }),
                self.progress_until.map(|at| Deadline {
                    at,
                    why: Wake::ProgressDeadline,
                }),
            ),
            _ => (None, None),
        };
        [heartbeat, run, progress]
            .into_iter()
            .flatten()
            .min_by_key(|d| d.at)
    }

    /// The operation the batch is for, as `Runner::working_on` names it.
    pub(super) fn op(&self) -> &OpId {
        &self.head().operation.id
    }
}

/// What this runner learnt that decides whether a batch forms: the recent failure rate and
/// the culprits its bisections found.
#[derive(Clone, Debug, Default)]
pub(super) struct Memory {
    /// The last check outcomes of the queue places this runner saw finish, whoever ended them.
    pub window: Window,
    /// Places gone from the queue since the last pass, by number, with the operation each
    /// held: the pass reads their chains, and [`Runner::read_finished`] their outcomes.
    pub finishing: BTreeMap<u64, OpId>,
    /// Operations a bisection found at fault, newest last: known here at once, whether or not
    /// their `Culprit` step lands.
    pub culprits: VecDeque<OpId>,
}

impl Memory {
    fn culprit(&mut self, op: OpId) {
        if self.culprits.len() == CULPRITS {
            self.culprits.pop_front();
        }
        self.culprits.push_back(op);
    }
}

impl Runner {
    /// Notes that queue place `seq`, which held `op`, is gone: its operation ended. Only a
    /// runner that may batch (never `merge --wait`) reads why, for its failure rate.
    pub(super) fn place_gone(&mut self, seq: u64, op: OpId) {
        if self.cfg.batch.is_some() && !matches!(self.cfg.mode, RunMode::Only(_)) {
            self.memory.finishing.insert(seq, op);
        }
    }

    /// Notes the check outcome of each place gone since the last pass, in queue order, from
    /// its chain as this pass read it: a merge passed, a `CHECK_FAILED` or `CHECK_FLAKY` end
    /// failed; any other end (a conflict, a supersession, an abandon) is no check outcome,
    /// and a chain this pass could not read counts for nothing.
    pub(super) fn read_finished(&mut self) {
        for (_, op) in std::mem::take(&mut self.memory.finishing) {
            let operation = self
                .chains
                .get(&op.change)
                .and_then(|chain| chain.record.as_ref().ok())
                .and_then(|record| record.op(&op));
            let Some(operation) = operation else {
                continue;
            };
            let failed = match &operation.outcome {
                Some(outcome) if outcome.state == OpState::Merged => false,
                Some(outcome)
                    if matches!(
                        outcome.reason,
                        Some(ReasonCode::CheckFailed | ReasonCode::CheckFlaky)
                    ) =>
                {
                    true
                }
                _ => continue,
            };
            let checks = operation
                .checks
                .iter()
                .map(|rec| rec.check.clone())
                .collect();
            self.memory.window.note(Outcome { failed, checks });
        }
    }

    /// The members a batch would take, the head (`op`) first, when a batch may form now;
    /// `None` when it may not (then the head takes its usual path). Entries that wait (held,
    /// for their dependencies, for an approval) are passed over, as the queue passes them.
    pub(super) fn batch_members(&self, op: &Operation) -> Option<Vec<Member>> {
        let settings = self.cfg.batch?;
        let forms = self.cfg.evidence_reuse
            && !matches!(self.cfg.mode, RunMode::Only(_))
            // With lanes the rate reads only the places overlapping the head, once the head
            // is built (`Runner::link`).
            && (self.cfg.footprint_lanes
                || self.memory.window.allows(settings.max_failure_ppm, |_| true))
            && !self.main_may_hold();
        if !forms {
            return None;
        }
        let mut members = Vec::new();
        for (record, operation) in self.in_queue_order() {
            if members.is_empty() && operation.id != op.id {
                return None; // the pass's head is not first in line
            }
            let tip = self.chains.get(&record.change)?.tip.clone();
            // A change whose `--after` names one that ended unmerged never merges: it ends
            // `DEPENDENCY_ABANDONED` at its own turn, so the chain stops before it.
            let eligible = (members.is_empty() || operation.owner.is_none())
                && !operation.culprit
                && !self.memory.culprits.contains(&operation.id)
                && self.marked_merged(&record.change).is_none()
                && self.waiting_on(&record).is_none();
            if !eligible || members.len() == settings.max as usize {
                break;
            }
            members.push(Member {
                record,
                operation,
                tip,
            });
        }
        (members.len() >= settings.min as usize).then_some(members)
    }

    /// Starts a batch of `members` on `main`: main's tree and policy are read first.
    pub(super) fn begin_batch(&mut self, members: Vec<Member>, main: Oid, hold: HoldAnswer) {
        #[cfg(feature = "mutants")]
        let members = self.mutant_batch_order(members);
        let read = Action::ReadTrees {
            commits: vec![main.clone()],
        };
        let forming = Forming {
            members,
            main,
            hold,
        };
        self.stage = Stage::Forming(Box::new(forming));
        self.send_batch(read, Purpose::MainTree);
    }

    /// Main's policy read, with its tree: under post checks main's red is read next; the
    /// batch forms, or (`None`: the policy could not be read or allows no batch) the head goes
    /// alone.
    fn on_main_policy(&mut self, forming: Box<Forming>, tree: Oid, policy: Option<Policy>) {
        let policy = policy.filter(|policy| self.batches_under(policy));
        match policy {
            Some(policy) if !PostCheck::of(&policy).is_empty() => {
                let checks = PostCheck::of(&policy);
                let (reader, read) =
                    RedRead::with_checks(forming.main.clone(), checks, self.cfg.red_window);
                self.stage = Stage::Forming(forming);
                let at = RedAt {
                    tree,
                    policy,
                    reader,
                };
                self.send_batch(read, Purpose::Red(Box::new(at)));
            }
            policy => self.on_forming(*forming, policy.map(|p| (tree, p, Red::default()))),
        }
    }

    /// One step of reading main's red: once judged the batch forms; one that cannot be read
    /// leaves the head to its usual path, which reads it again.
    fn on_red_read(
        &mut self,
        forming: Box<Forming>,
        mut at: Box<RedAt>,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match at.reader.on(completion, &mut self.refs) {
            Err(other) => {
                self.stage = Stage::Forming(forming);
                Err(Misuse(format!(
                    "a batch's red read answered with {other:?}"
                )))
            }
            Ok(RedStep::Ask(action)) => {
                self.stage = Stage::Forming(forming);
                self.send_batch(*action, Purpose::Red(at));
                Ok(())
            }
            Ok(RedStep::Unread(_)) => {
                self.on_forming(*forming, None);
                Ok(())
            }
            Ok(RedStep::Done(red)) => {
                let RedAt { tree, policy, .. } = *at;
                self.on_forming(*forming, Some((tree, policy, red.unwrap_or_default())));
                Ok(())
            }
        }
    }

    /// Main's tree, policy and red read (`None`: they could not be, or allow no batch): the
    /// batch forms, or the head goes alone.
    fn on_forming(&mut self, forming: Forming, read: Option<(Oid, Policy, Red)>) {
        let Forming {
            members,
            main,
            hold,
        } = forming;
        let tip = members[0].tip.clone();
        let Some((tree, policy, red)) = read else {
            let head = members.into_iter().next();
            return self.go_alone(head, tip, false, main, hold, self.now);
        };
        let size = members.len();
        let batch = Batch {
            members,
            main: CommitTree { commit: main, tree },
            policy: Box::new(policy),
            red,
            hold,
            tip,
            claimed: false,
            heartbeat_at: self.now,
            beating: false,
            progress_until: None,
            made: Vec::new(),
            phase: Phase::Building {
                chain: Vec::new(),
                size,
                then: Then::Check,
            },
        };
        self.build_next(Box::new(batch));
    }

    fn send_batch(&mut self, action: Action, purpose: Purpose) {
        self.out.send(action, RunnerPurpose::Batch(purpose));
    }

    fn take_batch(&mut self) -> Option<Box<Batch>> {
        let placeholder = Stage::Idle {
            next_pass: self.now,
        };
        match std::mem::replace(&mut self.stage, placeholder) {
            Stage::Batching(batch) => Some(batch),
            stage => {
                self.stage = stage;
                None
            }
        }
    }

    fn keep_batch(&mut self, batch: Box<Batch>) {
        self.stage = Stage::Batching(batch);
    }

    pub(super) fn on_batching(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        if let Purpose::MainTree | Purpose::Policy(_) | Purpose::Red(_) = &purpose {
            let placeholder = Stage::Idle {
                next_pass: self.now,
            };
            let forming = match std::mem::replace(&mut self.stage, placeholder) {
                Stage::Forming(forming) => forming,
                stage => {
                    self.stage = stage;
                    return Ok(());
                }
            };
            match (purpose, completion) {
                (Purpose::MainTree, Completion::TreesRead(read)) => match read.as_deref() {
                    Ok([tree]) => {
                        let read = Action::ReadFile {
                            commit: forming.main.clone(),
                            path: POLICY_PATH.into(),
                        };
                        self.stage = Stage::Forming(forming);
                        self.send_batch(read, Purpose::Policy(tree.clone()));
                    }
                    _ => self.on_forming(*forming, None),
                },
                (Purpose::Policy(tree), Completion::FileRead(read)) => {
                    let policy = read
                        .ok()
                        .flatten()
                        .and_then(|bytes| parse_policy(&bytes).ok());
                    self.on_main_policy(forming, tree, policy);
                }
                (Purpose::Red(at), completion) => return self.on_red_read(forming, at, completion),
                (purpose, completion) => {
                    self.stage = Stage::Forming(forming);
                    return Err(Misuse(format!(
                        "a forming batch's {purpose:?} answered with {completion:?}"
                    )));
                }
            }
            return Ok(());
        }
        let Some(mut batch) = self.take_batch() else {
            return Ok(());
        };
        match (purpose, completion) {
            (Purpose::Build(index), Completion::CandidateBuilt(built)) => {
                self.on_link(batch, index, built.ok());
            }
            (Purpose::Stats(index, link), Completion::StatsRead(stats)) => {
                // A member over a cap, or one that cannot be measured, is refused at its own
                // turn: the chain stops before it.
                let within = stats.is_ok_and(|stats| batch.policy().limits.judge(&stats).is_none());
                match within {
                    true => self.link(batch, *link),
                    false => self.chain_stops(batch, index),
                }
            }
            (Purpose::Signatures, Completion::CommitsRead(read)) => {
                let Phase::Verifying { mut chain, then } =
                    std::mem::replace(&mut batch.phase, Phase::Taken)
                else {
                    self.keep_batch(batch);
                    return Err(Misuse(
                        "a batch's signatures answered while not verifying".into(),
                    ));
                };
                let raws = read.unwrap_or_default();
                let verified = raws.len() == chain.len()
                    && chain.iter_mut().zip(&raws).all(|(link, raw)| {
                        let good =
                            matches!(self.candidate_signature(raw), Ok(Some(v)) if v.is_good());
                        link.signed_by = split_signed(raw).and_then(|(_, signature)| {
                            sshsig::signer(signature.as_bytes()).ok().map(Box::new)
                        });
                        good && link.signed_by.is_some()
                    });
                match verified {
                    true => self.chain_verified(batch, chain, then),
                    false => self.leave(batch),
                }
            }
            (Purpose::KeysFetch(spec), Completion::Fetched(fetched)) => {
                let Ok(fetched) = fetched else {
                    self.leave(batch);
                    return Ok(());
                };
                match self.registry_tip(spec, fetched) {
                    Some(tip) if self.keys_seen.as_ref() == Some(&tip) => {
                        self.keys_judged(batch, None)
                    }
                    Some(tip) => {
                        self.keep_batch(batch);
                        self.send_batch(
                            Action::ReadRegistry { tip: tip.clone() },
                            Purpose::KeysRead(tip),
                        );
                    }
                    None => self.leave(batch),
                }
            }
            (Purpose::KeysRead(tip), Completion::RegistryRead(read)) => {
                match read.ok().and_then(|chain| judge_chain(&chain).ok()) {
                    Some(version) => self.keys_judged(batch, Some((tip, version))),
                    None => self.leave(batch),
                }
            }
            (Purpose::Claim(step), Completion::Pushed(report)) => {
                self.on_claimed(batch, &step, report);
            }
            (Purpose::Heartbeat(step), Completion::Pushed(report)) => {
                self.on_batch_heartbeat(batch, &step, report);
            }
            (Purpose::Run(index, spec, request), Completion::CheckExited(exit)) => {
                let Phase::Checking(checking) = &mut batch.phase else {
                    self.keep_batch(batch);
                    return Err(Misuse("a batch run answered while not checking".into()));
                };
                checking.running.remove(&index);
                // Unavailable here: the head's usual path gives its claim back so.
                let Judgement::Judged(judged) = judge(&request, spec.expected_minimum, &exit)
                else {
                    self.leave(batch);
                    return Ok(());
                };
                let link = &checking.chain[checking.prefix - 1];
                let member = &batch.members[checking.prefix - 1];
                let extras = EvidenceExtras {
                    producer: self.cfg.runner.clone(),
                    op: member.operation.id.to_string(),
                    candidate_id: link.candidate.to_string(),
                    at: self.now,
                    definition: crate::check::definition::digest(&spec, &exit.adapter),
                };
                let record = EvidenceRecord::new(&request, &judged, &exit, extras).to_json();
                batch.made.push((link.tree.clone(), record));
                self.on_run(batch, judged.verdict);
            }
            (Purpose::Records, Completion::Pushed(report)) => {
                if let (PushOutcome::Accepted, Some(note)) = (&report.outcome, report.notes.last())
                {
                    self.wrote_own(refs::evidence(&self.cfg.runner), note.clone());
                }
                batch.made.clear();
                self.alone(*batch);
            }
            (Purpose::Merge, Completion::Pushed(report)) => self.on_merged(batch, report),
            (purpose, completion) => {
                self.keep_batch(batch);
                return Err(Misuse(format!(
                    "a batch's {purpose:?} answered with {completion:?}"
                )));
            }
        }
        Ok(())
    }

    /// Whether a batch may form under `policy`, the policy at main: reuse counts unsigned
    /// records there, and every check run before the merge is keyed by tree and can run here.
    /// Post checks run after the merge and are no part of a batch's run; a red one stops the
    /// chain before a member on its paths ([`Runner::on_link`]), as an approval owed does.
    fn batches_under(&self, policy: &Policy) -> bool {
        self.reuse_by(policy).is_some()
            && !policy.unchecked
            && policy.checks.iter().all(|check| {
                check.stage == CheckStage::Post
                    || (!CheckTarget::of(check).keyed_by_commit()
                        && self.cannot_run(check).is_none())
            })
    }

    /// Builds the next member of the chain on the one before, or goes on once the chain is
    /// as long as it is meant to be.
    fn build_next(&mut self, batch: Box<Batch>) {
        let Phase::Building { chain, size, .. } = &batch.phase else {
            return self.keep_batch(batch);
        };
        let index = chain.len();
        if index == *size {
            return self.chain_built(batch);
        }
        let base = chain
            .last()
            .map_or(batch.main.commit.clone(), |link| link.commit.clone());
        let member = &batch.members[index];
        let candidate = member.candidate();
        let mut message = super::candidate_message(
            &member.record,
            &member.operation.id,
            &member.operation.requested_by,
            &candidate,
            &self.cfg.trailers,
        );
        message.push_str(&trailer(&batch.id(), index + 1, *size));
        let spec = CandidateSpec {
            candidate,
            base,
            draft: member.operation.draft.clone(),
            merge_base: member.operation.base.clone(),
            message,
            sign: self.cfg.signer.as_ref().map(|s| s.executor_key.clone()),
        };
        self.keep_batch(batch);
        self.send_batch(Action::BuildCandidate(spec), Purpose::Build(index));
    }

    /// Member `index` built (or not): the chain grows (once measured, under `[limits]`), or
    /// stops before a member that conflicts, has no effect, changes a check, owes a person's
    /// yes (no approval carries onto a batch's tree), changes paths main is red on or, with
    /// `footprint_lanes`, does not overlap the head.
    fn on_link(&mut self, batch: Box<Batch>, index: usize, built: Option<BuildResult>) {
        let chain: &[Link] = match &batch.phase {
            Phase::Building { chain, .. } => chain,
            _ => &[],
        };
        let answers_for = batch.members[index].record.answers_for();
        let owes_yes = |paths: &[String]| !approval::required(batch.policy(), paths).is_empty();
        let on_red = |paths: &[String]| !batch.red.blocking(paths, &answers_for).is_empty();
        #[cfg(feature = "mutants")]
        let owes_yes = |paths: &[String]| !self.mutant_batch_ignores_approvals() && owes_yes(paths);
        #[cfg(feature = "mutants")]
        let on_red = |paths: &[String]| !self.mutant_batch_ignores_red() && on_red(paths);
        let joins = |paths: &[String]| {
            !plan::changes_checks(batch.policy(), paths)
                && !owes_yes(paths)
                && !on_red(paths)
                && self.overlaps_head(&batch, chain, paths)
        };
        let clean = match built {
            Some(BuildResult::Clean {
                commit,
                tree,
                base_tree,
                changed_paths,
            }) if tree != base_tree && joins(&changed_paths) => Some(Link {
                candidate: batch.members[index].candidate(),
                commit,
                tree,
                base: CommitTree {
                    commit: chain
                        .last()
                        .map_or(batch.main.commit.clone(), |link| link.commit.clone()),
                    tree: base_tree,
                },
                changed_paths,
                signed_by: None,
            }),
            _ => None,
        };
        match clean {
            // Under `[limits]` each member is measured against the link before it.
            Some(link) if !batch.policy().limits.sizes_unset() => {
                let read = Action::ReadStats {
                    base: link.base.commit.clone(),
                    commit: link.commit.clone(),
                };
                self.keep_batch(batch);
                self.send_batch(read, Purpose::Stats(index, Box::new(link)));
            }
            Some(link) => self.link(batch, link),
            None => self.chain_stops(batch, index),
        }
    }

    /// The chain grows by `link`, and the next member builds. With `footprint_lanes` the
    /// head's link decides whether the batch goes on: the failure rate reads only the places
    /// whose footprint overlaps the head's.
    fn link(&mut self, mut batch: Box<Batch>, link: Link) {
        let head = matches!(&batch.phase, Phase::Building { chain, .. } if chain.is_empty());
        if head && self.cfg.footprint_lanes && !self.rate_beside_allows(&batch, &link) {
            return self.leave(batch);
        }
        if let Phase::Building { chain, .. } = &mut batch.phase {
            chain.push(link);
        }
        self.build_next(batch);
    }

    /// Whether the failure rate over the finished places whose footprint, by the checks each
    /// recorded, overlaps that of `head` lets the batch go on.
    fn rate_beside_allows(&self, batch: &Batch, head: &Link) -> bool {
        let (Some(settings), Some(own)) = (
            self.cfg.batch,
            self.entry_footprint(batch.policy(), &head.changed_paths),
        ) else {
            return false;
        };
        self.memory
            .window
            .allows(settings.max_failure_ppm, |outcome| {
                let checks = batch.policy().checks.iter();
                let recorded = checks.filter(|spec| outcome.checks.contains(&spec.id));
                !footprint::disjoint(&own, &footprint::of_entry(recorded))
            })
    }

    /// The footprint of an entry that changes `paths`, under `policy`: `None` when its plan
    /// cannot be made.
    fn entry_footprint(&self, policy: &Policy, paths: &[String]) -> Option<Vec<String>> {
        plan::plan(policy, None, paths, &self.now.date())
            .ok()
            .map(|plan| footprint::of_entry(plan.runs.iter().map(|run| &run.spec)))
    }

    /// The chain stops before member `index`: built again without it and the ones behind,
    /// when two members or more are left.
    fn chain_stops(&mut self, mut batch: Box<Batch>, index: usize) {
        let Phase::Building { chain, size, then } = &mut batch.phase else {
            return self.keep_batch(batch);
        };
        // Built for a merge, the trees must be the ones checked, so nothing may stop it: that
        // batch is over.
        if matches!(then, Then::Merge { .. }) || index < 2 {
            return self.leave(batch);
        }
        batch.members.truncate(index);
        *size = index;
        chain.clear();
        self.build_next(batch);
    }

    /// The chain is built: checked next, under a claim on the head; or, built again for a
    /// merge, merged.
    fn chain_built(&mut self, mut batch: Box<Batch>) {
        let Phase::Building { chain, then, .. } = std::mem::replace(&mut batch.phase, Phase::Taken)
        else {
            return self.keep_batch(batch);
        };
        if self.cfg.signer.is_some() {
            // Each member's signature is judged as the head's usual path judges its own.
            let commits = chain.iter().map(|link| link.commit.clone()).collect();
            batch.phase = Phase::Verifying { chain, then };
            self.keep_batch(batch);
            return self.send_batch(Action::ReadCommits { commits }, Purpose::Signatures);
        }
        self.chain_verified(batch, chain, then);
    }

    /// The chain's signatures verified (or nothing is signed): checked next, under a claim on
    /// the head; or, built again for a merge, merged.
    fn chain_verified(&mut self, mut batch: Box<Batch>, chain: Vec<Link>, then: Then) {
        match then {
            Then::Check => {
                batch.phase = Phase::Claiming { chain };
                self.claim(batch);
            }
            Then::Merge { checked, plan } => {
                // The same trees, only the trailers differ: anything else is not what passed.
                if chain.last().map(|link| &link.tree) != Some(&checked) {
                    return self.leave(batch);
                }
                batch.phase = Phase::Ready {
                    chain,
                    plan,
                    cleared: false,
                };
                self.merge_when_ready(batch);
            }
        }
    }

    /// Claims the head, leased on the tip the pass read.
    fn claim(&mut self, batch: Box<Batch>) {
        let (step, plan) = self.on_head(&batch, |op| StepBody::Claim { op });
        self.keep_batch(batch);
        self.send_batch(Action::Push(plan), Purpose::Claim(Box::new(step)));
    }

    /// A step on the head's chain, and the push that appends it, leased on the head's tip.
    fn on_head(&mut self, batch: &Batch, body: fn(OpId) -> StepBody) -> (Step, PushPlan) {
        let head = batch.head();
        let change = head.record.change.clone();
        let step = self.step(&change, body(head.operation.id.clone()));
        let tip = Some(batch.tip.clone());
        let plan = PushPlan::of(Append::on(change, tip, vec![step.clone()], None));
        (step, plan)
    }

    /// A push on the head's chain (the claim or a heartbeat) answered: the new tip, or the
    /// batch is over.
    fn moved_head(&mut self, batch: &mut Batch, step: &Step, report: &PushReport) -> bool {
        let written = last_written(report);
        match (&report.outcome, written) {
            // What this runner wrote, folded in, keeps the head's record true for the merge.
            (PushOutcome::Accepted, Some(tip)) if batch.members[0].record.append(step).is_ok() => {
                batch.tip = tip.clone();
                batch.heartbeat_at = self.now.plus_millis(self.cfg.heartbeat_ms);
                if !batch.claimed {
                    batch.claimed = true;
                    self.mine = Some((batch.head().record.change.clone(), BTreeSet::new()));
                }
                self.remember(tip);
                true
            }
            (PushOutcome::Unknown { .. }, Some(written)) => {
                // The next pass reads which tip won; either may be this runner's claim.
                let change = batch.head().record.change.clone();
                let tips = BTreeSet::from([batch.tip.clone(), written]);
                self.mine = Some((change, tips));
                false
            }
            _ => false,
        }
    }

    fn on_claimed(&mut self, mut batch: Box<Batch>, step: &Step, report: PushReport) {
        if !self.moved_head(&mut batch, step, &report) {
            return self.drop_batch(batch);
        }
        let Phase::Claiming { chain } = std::mem::replace(&mut batch.phase, Phase::Taken) else {
            return self.keep_batch(batch);
        };
        let prefix = chain.len();
        self.check_prefix(batch, chain, prefix, None);
    }

    fn on_batch_heartbeat(&mut self, mut batch: Box<Batch>, step: &Step, report: PushReport) {
        batch.beating = false;
        if !self.moved_head(&mut batch, step, &report) {
            return self.drop_batch(batch);
        }
        match &batch.phase {
            Phase::Ready { .. } => self.merge_when_ready(batch),
            Phase::Leaving => self.leave(batch),
            _ => self.keep_batch(batch),
        }
    }

    /// Renews the head's claim when it is due, and gives a run past its deadline up, or the
    /// whole batch past the head's progress deadline.
    pub(super) fn batch_tick(&mut self) {
        let Some(mut batch) = self.take_batch() else {
            return;
        };
        let past_progress = batch.progress_until.is_some_and(|at| self.now >= at);
        if let Phase::Checking(checking) = &batch.phase
            && (past_progress || checking.first_deadline().is_some_and(|at| self.now >= at))
        {
            // A run with no answer by its deadline is `unknown`: no verdict to bisect by. Past
            // the progress deadline the head goes alone, with a deadline of its own.
            return self.leave(batch);
        }
        if batch.beats() && self.now >= batch.heartbeat_at {
            let (step, plan) = self.on_head(&batch, |op| StepBody::Heartbeat { op });
            batch.beating = true;
            self.keep_batch(batch);
            return self.send_batch(Action::Push(plan), Purpose::Heartbeat(Box::new(step)));
        }
        self.keep_batch(batch);
    }

    /// Checks prefix `prefix` of `chain`: its plan is that of every path its members change.
    fn check_prefix(
        &mut self,
        mut batch: Box<Batch>,
        chain: Vec<Link>,
        prefix: usize,
        bisect: Option<Bisect>,
    ) {
        let Some(plan) = self.prefix_plan(&batch, &chain, prefix) else {
            return self.leave(batch);
        };
        let left = plan
            .runs
            .iter()
            .map(|run| run.spec.clone())
            .enumerate()
            .collect();
        batch.phase = Phase::Checking(Box::new(Checking {
            chain,
            prefix,
            plan,
            left,
            running: BTreeMap::new(),
            bisect,
        }));
        self.run_more(batch);
    }

    /// Starts the prefix's next runs, while fewer than `[runner] parallel_checks` are in
    /// flight; with none left and none in flight, the prefix passed.
    fn run_more(&mut self, mut batch: Box<Batch>) {
        let limit = self.cfg.parallel_checks.max(1) as usize;
        let mut runs = Vec::new();
        let Phase::Checking(checking) = &mut batch.phase else {
            return self.keep_batch(batch);
        };
        while checking.running.len() < limit
            && let Some((index, spec)) = checking.left.pop_front()
        {
            let (run, request) = self.batch_run(&batch.main, &batch.policy, checking, index, &spec);
            checking.running.insert(index, self.check_deadline(&spec));
            runs.push((index, spec, run, request));
        }
        let progress = self.now.plus_millis(self.cfg.progress_ms);
        batch.progress_until.get_or_insert(progress);
        if checking.running.is_empty() {
            return self.prefix_judged(batch, true);
        }
        self.keep_batch(batch);
        for (index, spec, run, request) in runs {
            self.send_batch(
                Action::RunCheck(Box::new(run)),
                Purpose::Run(index, Box::new(spec), Box::new(request)),
            );
        }
    }

    /// The run of `spec` on the prefix's last tree, on main, and its request.
    fn batch_run(
        &self,
        main: &CommitTree,
        policy: &Policy,
        checking: &Checking,
        index: usize,
        spec: &CheckSpec,
    ) -> (CheckRun, CheckRequest) {
        let link = &checking.chain[checking.prefix - 1];
        let paths = changed_paths(&checking.chain[..checking.prefix]);
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget::of(spec),
            policy_revision: policy.revision.to_string(),
            candidate: CommitTree {
                commit: link.commit.clone(),
                tree: link.tree.clone(),
            },
            base: main.clone(),
            changed_paths: paths,
            // A batch checks no single change.
            change: None,
        });
        let run = CheckRun {
            check: spec.clone(),
            request: request.clone(),
            adapter_from: main.commit.clone(),
            candidate: link.commit.clone(),
            // Runs at once on one tree each get their own directory.
            slot: u32::try_from(index).unwrap_or(u32::MAX),
        };
        (run, request)
    }

    /// One run answered: a pass lets the next start; a failure judges the prefix at once, and
    /// the runs still in flight are given up (their answers no longer matter).
    fn on_run(&mut self, batch: Box<Batch>, verdict: Verdict) {
        if verdict != Verdict::Pass {
            self.out.forget_all_but(|purpose| {
                !matches!(purpose, RunnerPurpose::Batch(Purpose::Run(..)))
            });
        }
        match verdict {
            Verdict::Pass => self.run_more(batch),
            Verdict::ProductFailure => self.prefix_judged(batch, false),
            // No verdict: nothing to bisect by, and never a pass.
            Verdict::InfraFailure | Verdict::Unknown => self.leave(batch),
        }
    }

    /// The prefix passed or failed: merge it, bisect, or leave the head to its usual path.
    fn prefix_judged(&mut self, mut batch: Box<Batch>, passed: bool) {
        let Phase::Checking(checking) = std::mem::replace(&mut batch.phase, Phase::Taken) else {
            return self.keep_batch(batch);
        };
        let Checking {
            chain,
            prefix,
            plan,
            bisect,
            ..
        } = *checking;
        let size = chain.len();
        if passed && prefix == size {
            // The whole batch passed: it merges as built.
            batch.phase = Phase::Ready {
                chain,
                plan: Box::new(plan),
                cleared: false,
            };
            return self.merge_when_ready(batch);
        }
        let mut bisect = bisect.unwrap_or_else(|| Bisect::new(size));
        bisect.judged(prefix, passed);
        if let Some(found) = bisect.found() {
            return self.found(batch, chain, found);
        }
        match bisect.next() {
            Some(next) => self.check_prefix(batch, chain, next, Some(bisect)),
            None => self.leave(batch),
        }
    }

    /// The bisection found the culprit: the longest passing prefix merges when it has two
    /// members or more, built again with its own size; the culprit is not batched again.
    fn found(&mut self, mut batch: Box<Batch>, chain: Vec<Link>, found: crate::batch::Found) {
        let culprit = &batch.members[found.culprit - 1];
        self.memory.culprit(culprit.operation.id.clone());
        if let Some(append) = self.culprit_append(&batch, culprit) {
            // On its own, so that a culprit's chain moving meanwhile (its agent's checkpoint)
            // costs nothing but this note; lost, the culprit is left out by this runner alone.
            self.out
                .send(Action::Push(PushPlan::of(append)), RunnerPurpose::Culprit);
        }
        let plan = (found.passing >= 2)
            .then(|| self.prefix_plan(&batch, &chain, found.passing))
            .flatten();
        let Some(plan) = plan else {
            return self.leave(batch);
        };
        let checked = chain[found.passing - 1].tree.clone();
        batch.members.truncate(found.passing);
        batch.phase = Phase::Building {
            chain: Vec::new(),
            size: found.passing,
            then: Then::Merge {
                checked,
                plan: Box::new(plan),
            },
        };
        self.build_next(batch);
    }

    /// Whether a member that changes `paths` may join a batch whose head is `chain`'s first
    /// link: always, but with `footprint_lanes`, where only entries whose footprint overlaps
    /// the head's join (a disjoint one is checked beside the head instead).
    fn overlaps_head(&self, batch: &Batch, chain: &[Link], paths: &[String]) -> bool {
        let Some(head) = chain.first().filter(|_| self.cfg.footprint_lanes) else {
            return true;
        };
        let footprint = |paths: &[String]| self.entry_footprint(batch.policy(), paths);
        match (footprint(&head.changed_paths), footprint(paths)) {
            (Some(head), Some(member)) => !footprint::disjoint(&head, &member),
            _ => false,
        }
    }

    /// What prefix `prefix` of `chain` must pass: the plan of every path its members change,
    /// under main's policy.
    fn prefix_plan(&self, batch: &Batch, chain: &[Link], prefix: usize) -> Option<Plan> {
        let paths = changed_paths(&chain[..prefix]);
        plan::plan(batch.policy(), None, &paths, &self.now.date()).ok()
    }

    /// Pushes the merge once no heartbeat is in flight.
    fn merge_when_ready(&mut self, mut batch: Box<Batch>) {
        if batch.beating {
            return self.keep_batch(batch);
        }
        if self.main_may_hold() {
            // Main became held meanwhile: the head's usual path judges the hold.
            return self.leave(batch);
        }
        let Phase::Ready {
            chain,
            plan,
            cleared,
        } = std::mem::replace(&mut batch.phase, Phase::Taken)
        else {
            return self.keep_batch(batch);
        };
        if self.cfg.signer.is_some() && !cleared {
            // A registry that is gone clears nothing.
            let spec = FetchSpec::new([crate::trust::registry::fetch_pattern()]);
            batch.phase = Phase::Judging { chain, plan };
            self.keep_batch(batch);
            return self.send_batch(Action::Fetch(spec.clone()), Purpose::KeysFetch(spec));
        }
        // A batch has two members or more: a chain with no last link merges nothing.
        let Some(last) = chain.last() else {
            return self.leave(batch);
        };
        let push = self.merge_plan(&batch, &chain, last, &plan);
        // Never push a step a member's record would refuse.
        let folds = batch
            .members
            .iter()
            .zip(&push.appends)
            .all(|(member, append)| {
                let mut record = member.record.clone();
                append.steps.iter().all(|step| record.append(step).is_ok())
            });
        if !folds {
            return self.leave(batch);
        }
        let events = push
            .log
            .iter()
            .flat_map(LogAdd::messages)
            .cloned()
            .collect();
        batch.phase = Phase::Merging {
            size: chain.len(),
            events,
        };
        self.keep_batch(batch);
        self.send_batch(Action::Push(push), Purpose::Merge);
    }

    /// The registry as read right before the merge push (`None`: the tip judged last, again):
    /// the push goes out when it still enrols every key that signed a member; otherwise the
    /// head takes its usual path, which signs again.
    fn keys_judged(
        &mut self,
        mut batch: Box<Batch>,
        read: Option<(Oid, crate::trust::registry::Version)>,
    ) {
        let Phase::Judging { chain, plan } = std::mem::replace(&mut batch.phase, Phase::Taken)
        else {
            return self.keep_batch(batch);
        };
        if let Some((tip, version)) = read {
            let keys = chain.iter().map(|link| link.signed_by.as_deref());
            if !self.registry_enrols(tip, &version, keys) {
                return self.leave(batch);
            }
        }
        batch.phase = Phase::Ready {
            chain,
            plan,
            cleared: true,
        };
        self.merge_when_ready(batch);
    }

    /// The one push of a batch's merge: main `base -> last member`, and for each member its
    /// claim (the head's is up), candidate and merged outcome, its marker and its place given
    /// up; every record the batch made (the passing ones on the last tree); an event for each
    /// on the log.
    fn merge_plan(&mut self, batch: &Batch, chain: &[Link], last: &Link, plan: &Plan) -> PushPlan {
        let size = chain.len();
        let id = batch.id();
        let mut push = PushPlan {
            atomic: true,
            ..PushPlan::default()
        };
        let mut events = Vec::new();
        for (index, (member, link)) in batch.members.iter().zip(chain).enumerate() {
            let change = member.record.change.clone();
            let op = member.operation.id.clone();
            let mut steps = Vec::new();
            let parent = if index == 0 {
                batch.tip.clone()
            } else {
                steps.push(self.step(&change, StepBody::Claim { op: op.clone() }));
                member.tip.clone()
            };
            steps.push(self.step(
                &change,
                StepBody::Candidate {
                    op: op.clone(),
                    candidate: link.candidate.clone(),
                    base: link.base.commit.clone(),
                    base_tree: link.base.tree.clone(),
                    commit: link.commit.clone(),
                    tree: link.tree.clone(),
                },
            ));
            let trust = match link.signed_by {
                Some(_) => crate::trust::Trust::Signed.as_str(),
                None => self.cfg.unsigned_trust(),
            };
            let merged = (
                link.candidate.clone(),
                link.commit.clone(),
                link.tree.clone(),
                link.base.commit.clone(),
            );
            let mut detail = Merged::new(merged, plan, trust);
            // Its own tree was not checked alone: the batch's last tree was.
            detail.batch = Some(BatchOf {
                id: id.clone(),
                index: index + 1,
                size,
                base: batch.main.commit.clone(),
                commit: last.commit.clone(),
                tree: last.tree.clone(),
            });
            steps.push(self.step(
                &change,
                StepBody::Outcome {
                    op: op.clone(),
                    state: OpState::Merged,
                    reason: None,
                    detail: detail.to_json(),
                },
            ));
            push.appends
                .push(Append::on(change.clone(), Some(parent), steps, None));
            push.updates.push(RefUpdate {
                name: refs::landed(&change),
                expect: Expect::Absent,
                new: NewValue::Oid(link.commit.clone()),
            });
            push.updates
                .extend(give_up_place(&self.refs, member.operation.seq));
            let merge = Some((&link.commit, &link.base.commit));
            events.extend(self.end_message(&member.record, &op, OpState::Merged, None, merge));
        }
        push.updates.push(RefUpdate {
            name: self.main_ref(),
            expect: Expect::Is(batch.main.commit.clone()),
            new: NewValue::Oid(last.commit.clone()),
        });
        push.notes = self.own_notes(batch.made.iter().cloned());
        push.log = self.log_append(events);
        push
    }

    /// The `Culprit` step on the chain of `member`, whom the bisection found at fault, leased
    /// on the tip the pass read, so that every batching runner leaves it out of its batches.
    /// None for the head (judged alone now, under this runner's claim, whose chain writes are
    /// this runner's own line) or where its record would refuse the step.
    fn culprit_append(&mut self, batch: &Batch, member: &Member) -> Option<Append> {
        if member.operation.id == batch.head().operation.id {
            return None;
        }
        let change = member.record.change.clone();
        let body = StepBody::Culprit {
            op: member.operation.id.clone(),
            batch: batch.id(),
        };
        let step = self.step(&change, body);
        member.record.clone().append(&step).ok()?;
        Some(Append::on(
            change,
            Some(member.tip.clone()),
            vec![step],
            None,
        ))
    }

    fn on_merged(&mut self, batch: Box<Batch>, report: PushReport) {
        let Phase::Merging { size, events } = &batch.phase else {
            return self.keep_batch(batch);
        };
        let (size, events) = (*size, events.clone());
        match report.outcome {
            PushOutcome::Accepted => {
                self.merged += size as u64;
                if let Some(note) = report.notes.last() {
                    self.wrote_own(refs::evidence(&self.cfg.runner), note.clone());
                }
                if let Some(tip) = report.log {
                    self.wrote_own(refs::log(&self.cfg.runner), tip);
                    for event in events {
                        self.notify(Some(event));
                    }
                }
                self.mine = None;
                self.forget_all_but_notices();
                self.stage = Stage::Idle {
                    next_pass: self.now,
                };
            }
            PushOutcome::Unknown { .. } => {
                // It may have landed: the next pass reads the remote, and the log's tip again.
                self.tips_known = false;
                self.drop_batch(batch);
            }
            // Refused (a member's chain or main moved) or never sent: nothing moved. The next
            // pass reads the remote; the head's claim is still this runner's.
            PushOutcome::Rejected { .. } | PushOutcome::NotSent(_) => self.drop_batch(batch),
        }
    }

    /// The batch is over short of a merge: once no heartbeat is in flight, the records it
    /// made go up, then the head takes its usual path. A run still in flight counts for
    /// nothing now, and its answer is forgotten: with `parallel_checks`, one run unavailable
    /// leaves the batch while another runs on, and the batch waits in `Leaving` for its
    /// heartbeat or its records, where that answer once came as a driver's misuse.
    fn leave(&mut self, mut batch: Box<Batch>) {
        self.out
            .forget_all_but(|purpose| !matches!(purpose, RunnerPurpose::Batch(Purpose::Run(..))));
        batch.phase = Phase::Leaving;
        if batch.beating {
            return self.keep_batch(batch);
        }
        if batch.made.is_empty() {
            return self.alone(*batch);
        }
        let plan = PushPlan {
            notes: self.own_notes(batch.made.iter().cloned()),
            atomic: true,
            ..PushPlan::default()
        };
        self.keep_batch(batch);
        self.send_batch(Action::Push(plan), Purpose::Records);
    }

    /// The head takes its usual path, under the claim the batch holds, if it holds one.
    fn alone(&mut self, batch: Batch) {
        let head = batch.members.into_iter().next();
        let main = batch.main.commit;
        let (tip, claimed) = (batch.tip, batch.claimed);
        self.go_alone(head, tip, claimed, main, batch.hold, batch.heartbeat_at);
    }

    /// `head` takes its usual path on `main`: at `tip`, under the claim this runner holds
    /// there when `claimed`.
    fn go_alone(
        &mut self,
        head: Option<Member>,
        tip: Oid,
        claimed: bool,
        main: Oid,
        hold: HoldAnswer,
        heartbeat_at: Timestamp,
    ) {
        self.forget_all_but_notices();
        self.stage = Stage::Idle {
            next_pass: self.now,
        };
        // A batch always has a head; without one there is nothing to take up.
        let Some(head) = head else { return };
        let work = Work::new(
            head.record,
            &head.operation,
            tip,
            claimed,
            main,
            hold,
            heartbeat_at,
        );
        let _placed = self.read_policy(Box::new(work));
    }

    /// Drops the batch (what the remote holds is the truth) and rests until the next pass.
    fn drop_batch(&mut self, batch: Box<Batch>) {
        drop(batch);
        self.forget_all_but_notices();
        let backoff = self.cfg.backoff_ms;
        self.rest(backoff);
    }
}

/// Every path the members of `links` change, each once.
fn changed_paths(links: &[Link]) -> Vec<String> {
    let paths: BTreeSet<&String> = links.iter().flat_map(|link| &link.changed_paths).collect();
    paths.into_iter().cloned().collect()
}
