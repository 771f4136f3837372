//! Working one claimed operation: policy, candidate, checks, and the merge push.
//!
//! The work goes through phases ([`Phase`]), each holding only what it needs: no candidate
//! (the policy is read, then a candidate built under it), a candidate in hand (its plan made
//! next, or main moved under it), then its checks ([`Checking`]). What a step in flight needs
//! next travels with its action ([`Purpose`]): the policy a candidate is built under, and the
//! candidate being judged. What a chain write pushes travels with the write ([`Write`]).

use std::collections::{BTreeMap, BTreeSet};

use super::merged::Merged;
use super::reuse_keys::ReuseBy;
use super::unmerged::Unmerged;
use super::{Purpose as RunnerPurpose, Runner, Stage};
use crate::check::plan::{self, AdapterFrom, Plan, parse_policy};
use crate::check::reuse::reusable_pass;
use crate::check::{ChangeContext, CheckRequest, CommitTree, UnitReason, Verdict};
use crate::detail::Detail;
use crate::event::{BayEvent, Ended};
use crate::git::{Oid, refs};
use crate::id::{CandidateId, OpId};
use crate::limits::PathStat;
use crate::machine::agent::give_up_place;
use crate::machine::{
    Action, ActionId, Append, BuildResult, CandidateSpec, Completion, Deadline, Expect, FetchSpec,
    LogAdd, Misuse, NewValue, PushOutcome, PushPlan, PushReport, RefUpdate, Wake,
};
use crate::policy::Policy;
use crate::reason::ReasonCode;
use crate::record::{ChangeRecord, Operation, StepBody};
use crate::result::OpState;
use crate::time::Timestamp;

pub use crate::check::plan::POLICY_PATH;

/// How many times the progress deadline gives an operation's claim back before it is blocked.
const QUEUE_DEADLINE_RELEASES: u32 = 3;

/// What a work action was for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    ReadPolicy,
    /// A candidate built under the policy at the base.
    Build(Box<Policy>),
    /// The measures of a built candidate, judged by the base's `[limits]` before the
    /// candidate becomes the work's.
    Stats(Built, Box<Policy>),
    /// A signed candidate read back raw, its signature judged before anything else.
    Signature(Built, Box<Policy>),
    /// A step of judging the base's red, for a built candidate.
    Red(Built, Box<Policy>, Box<crate::machine::red_read::RedRead>),
    /// The candidate's own policy, for a change that alters the checks.
    ReadOwnPolicy(Built, Box<Policy>),
    /// The evidence on the candidate, for passes to reuse.
    ReadNotes,
    Check {
        index: usize,
    },
    /// The base run of a `baseline = "base"` check whose run on the candidate failed.
    Baseline {
        index: usize,
        run: Judged,
    },
    /// The evidence on the base, for its own record of a `baseline = "base"` check.
    BaseRecords {
        index: usize,
        run: Judged,
    },
    Heartbeat {
        parent: Oid,
    },
    /// A chain write, the steps it appends, and the log message of the event it appends, if
    /// it appends one.
    Write(Write, Vec<crate::record::Step>, Option<String>),
    /// A fetch to learn why a write was refused.
    Verify(Write, FetchSpec),
    /// The recorded candidate's changed paths, to take it up again under the policy.
    Resume(Box<crate::record::CandidateRec>, Box<Policy>),
    /// The evidence on a candidate taken up again, whose passes stand only while it holds
    /// them.
    ResumeNotes(Box<Checking>),
    /// A step of reading the approvals the candidate owes: the evidence and registry fetch,
    /// the registry, then the records on the candidate.
    ApprovalFetch(FetchSpec),
    ApprovalKeys(Box<crate::machine::keys_read::KeysRead>),
    ApprovalNotes(Option<Box<crate::trust::registry::Version>>),
    /// One comparison of a carried yes's files: slot `2 * carry + side`.
    CarryStats(usize),
    /// A step of reading the waivers on the candidate (whether passes are reused after).
    WaiverFetch(FetchSpec, bool),
    WaiverKeys(Box<crate::machine::keys_read::KeysRead>, bool),
    WaiverNotes(Option<Box<crate::trust::registry::Version>>, bool),
    /// The evidence notes fetched, then read on the candidate, for passes that landed while
    /// runs are in flight (`late`).
    LateFetch(FetchSpec),
    LateNotes,
    /// The registry fetched, then read, before the passes to reuse are read.
    ReuseKeys(super::reuse_keys::Purpose),
    /// The files the footprint checks' stamps rest on (`carry`).
    Stamps,
    /// The registry fetched, then read, right before the push that moves main (`write`).
    KeysFetch(Box<Write>, FetchSpec),
    KeysRead(Box<Write>, Oid),
}

/// A chain write the work wants, built into a push only when no other chain write is in
/// flight, so that each one leases on the tip the previous one made. Every write also carries
/// what is not recorded yet: the claim, and the candidate. So a runner claims with its first
/// write, once it knows what the operation needs, and an operation that needs no check merges
/// in one push.
#[derive(Clone, Debug)]
pub(super) enum Write {
    /// Only the claim and the candidate; the checks come next.
    Record,
    /// A judged check, then what follows it.
    Check {
        /// The check step: the candidate the check ran on, the check and its environment.
        candidate: CandidateId,
        check: String,
        environment: String,
        verdict: Verdict,
        why: String,
        /// The evidence records it keeps, each with the object it hangs on: the record of the
        /// check's run on the base first, if there is one, then the run's own.
        notes: Vec<(Oid, String)>,
        then: Then,
    },
    Merge(Box<Merge>),
    End(Ending),
    Release {
        reason: Option<ReasonCode>,
        why: String,
        /// Past the progress deadline, the place the operation now queues behind.
        behind: Option<u64>,
        /// What the wait is for (`APPROVAL_PENDING`'s `approval` and `lands_by`).
        detail: Option<serde_json::Value>,
    },
}

/// What a recorded check leads to, in the same push.
#[derive(Clone, Debug)]
pub(super) enum Then {
    /// The same check again on the same tree (`retry_on_failure`).
    Again,
    /// The next check.
    Continue,
    /// The operation ends short of a merge.
    End(Ending),
    /// That was the last check: merge.
    Merge(Box<Merge>),
    /// That was the last check, but the merge may not go out: the claim goes back, the
    /// check's pass recorded (`REGISTRY_CHANGED`: another runner signs the candidate again).
    Release(ReasonCode, String),
}

/// A merge: main moves to the candidate's commit, and the outcome names what it merged.
#[derive(Clone, Debug)]
pub(super) struct Merge {
    pub commit: Oid,
    pub detail: Merged,
}

impl Write {
    /// Whether this push ends the operation, and so appends its event to the log.
    fn ends(&self) -> bool {
        matches!(
            self,
            Write::Merge(_)
                | Write::End(_)
                | Write::Check {
                    then: Then::Merge(_) | Then::End(_),
                    ..
                }
        )
    }

    /// Whether this push appends to the runner's evidence notes.
    fn notes(&self) -> bool {
        matches!(self, Write::Check { notes, .. } if !notes.is_empty())
    }

    /// Whether this push moves main.
    fn merges(&self) -> bool {
        matches!(
            self,
            Write::Merge(_)
                | Write::Check {
                    then: Then::Merge(_),
                    ..
                }
        )
    }
}

/// One judged run of a check on the candidate.
#[derive(Clone, Debug)]
pub(super) struct Judged {
    pub verdict: Verdict,
    pub why: String,
    /// The evidence record, as JSON; empty when none is kept.
    pub record: String,
    /// The units that failed with `product_failure`, with the check's reasons.
    pub failed: Vec<UnitReason>,
    /// Where the driver kept the end of the run's stderr (`CheckExit::stderr_log`).
    pub stderr_log: Option<String>,
}

impl Judged {
    /// A check answered with no run of its own, so with no record, units or log kept.
    pub fn unrun(verdict: Verdict, why: String) -> Judged {
        Judged {
            verdict,
            why,
            record: String::new(),
            failed: Vec::new(),
            stderr_log: None,
        }
    }
}

/// One check run in flight.
#[derive(Clone, Debug)]
pub(super) struct Running {
    pub id: ActionId,
    /// Its time limit plus the grace; past it, the run is `unknown`.
    pub deadline: Timestamp,
    /// The request it was sent, which its answer is judged against.
    pub request: CheckRequest,
}

/// The base runs of one base tree: per (check, environment), the units that failed there, or
/// `None` when the run gave no verdict to compare with.
pub(super) type Baselines = BTreeMap<(String, String), Option<BTreeSet<String>>>;

/// How an operation ends short of a merge.
#[derive(Clone, Debug)]
pub(super) struct Ending {
    pub state: OpState,
    pub reason: Option<ReasonCode>,
    pub detail: serde_json::Value,
}

/// The candidate the work built.
#[derive(Clone, Debug)]
pub(super) struct Built {
    pub id: CandidateId,
    pub commit: Oid,
    pub tree: Oid,
    pub base_tree: Oid,
    pub changed_paths: Vec<String>,
    /// Its signature verified against the registry's `executor` file (`RunnerConfig::signer`)
    /// once it was built: the merge's `detail.trust` is then `signed`.
    pub signed: bool,
    /// The key whose signature verified: the registry is read again right before the merge
    /// push, and a merge whose key it no longer enrols is never pushed (`REGISTRY_CHANGED`).
    pub signed_by: Option<Box<crate::trust::PublicKey>>,
    /// The recorded candidate of the same tree on the same parent whose passes stand for
    /// this one: a candidate signed again after `REGISTRY_CHANGED` runs no check again.
    pub stands_for: Option<CandidateId>,
    /// The candidate the record already holds, taken up again once an approval it waited
    /// for may have come: it is not built, nor recorded again, and its passed checks stand.
    pub resumed: bool,
}

/// A candidate in hand, and whether its step is recorded: until it is, every chain write
/// carries it.
#[derive(Clone, Debug)]
pub(super) struct Candidate {
    pub built: Built,
    pub recorded: bool,
}

/// Where the work's candidate stands.
#[derive(Clone, Debug)]
pub(super) enum Phase {
    /// No candidate in hand: main's holds and the policy at the base are read, then a
    /// candidate is built under that policy, measured and judged against main's red (what it
    /// is built under and what was built travel with those actions).
    Unbuilt,
    /// A candidate in hand, its checks not planned yet: its own policy is read to plan them;
    /// or main moved under it, and it stays in hand while the policy at the new main is read,
    /// until the next one is built.
    Built(Candidate),
    /// The candidate's checks planned: the candidate is recorded, then its checks run and are
    /// recorded in the plan's order.
    Checking(Box<Checking>),
}

impl Phase {
    /// The candidate in hand, if there is one.
    pub(super) fn candidate(&self) -> Option<&Candidate> {
        match self {
            Phase::Unbuilt => None,
            Phase::Built(candidate) => Some(candidate),
            Phase::Checking(checking) => Some(&checking.candidate),
        }
    }

    /// The phase once a write recorded the candidate in hand.
    fn recorded(&mut self) {
        match self {
            Phase::Unbuilt => {}
            Phase::Built(candidate) => candidate.recorded = true,
            Phase::Checking(checking) => checking.candidate.recorded = true,
        }
    }

    /// The phase once main moved under the candidate in hand: only the candidate stays.
    fn main_moved(self) -> Phase {
        match self {
            Phase::Checking(checking) => Phase::Built(checking.candidate),
            phase => phase,
        }
    }
}

/// A candidate whose checks are planned, and how far they are.
#[derive(Clone, Debug)]
pub(super) struct Checking {
    /// The policy at the base, which the checks' requests name.
    pub policy: Policy,
    /// The change, as each check's request tells it.
    pub change: ChangeContext,
    pub candidate: Candidate,
    /// Main's commit the candidate is built on, and its tree.
    pub base: CommitTree,
    /// What the candidate must pass.
    pub plan: Plan,
    /// How many of the plan's runs the candidate has passed.
    pub done: usize,
    /// The runs of the current check so far on this candidate (`retry_on_failure`).
    pub attempts: Vec<super::gap::Attempt>,
    /// What the merge's `coverage_gaps` must name besides the plan's: checks that passed only
    /// after failing (`allow_flaky`), with every run, and failures the base shares
    /// (`baseline_failures`).
    pub gaps: Vec<super::gap::Gap>,
    /// Check runs in flight, by the plan index they answer (a baseline run answers the index
    /// whose failure it judges).
    pub running: BTreeMap<usize, Running>,
    /// Runs that answered before their turn to be recorded.
    pub answered: BTreeMap<usize, Judged>,
    /// The next plan index to start.
    pub next_start: usize,
    /// Runs a pass recorded on exactly these inputs answers, by plan index: the producer.
    pub reused: BTreeMap<usize, String>,
    /// The stamps of the runs that declare their read set, by plan index, once read (`carry`).
    pub stamps: BTreeMap<usize, crate::check::footprint::Stamp>,
    /// Runs a pass of the same operation with the same stamp answers, by plan index: the
    /// carried record to keep (`carry`).
    pub carry_from: BTreeMap<usize, String>,
    /// The approval checks the candidate owes a yes for (`approval::required`), asked once
    /// every run passed.
    pub approvals: Vec<crate::policy::ApprovalCheck>,
    /// The approval records are being read and judged.
    pub judging: bool,
    /// Yeses on earlier candidates whose files are being compared.
    pub carrying: Option<Box<super::approval::Carrying>>,
    /// Runs a signed waiver answers, by plan index: the coverage gap it adds.
    pub waived: BTreeMap<usize, crate::approval::Waived>,
    /// Whether the runner looks for passes that land while runs are in flight.
    pub late: super::late::Late,
}

/// What an operation's request asks: fixed for the operation's life.
#[derive(Clone, Debug)]
pub(super) struct Requested {
    /// The draft it asks to merge.
    pub draft: Oid,
    /// Main's commit the draft was made on: the candidate's merge base.
    pub base: Oid,
    /// Who asked.
    pub by: String,
}

/// One operation in hand.
#[derive(Clone, Debug)]
pub(super) struct Work {
    pub record: ChangeRecord,
    pub op: OpId,
    /// What the operation's request asks, as the record holds it.
    pub requested: Requested,
    /// The chain's tip as this runner last read or wrote it: every write leases on it.
    pub tip: Oid,
    /// The claim is recorded (at `tip` or before it).
    pub claimed: bool,
    /// Main as the candidate is built on it.
    pub base: Oid,
    /// The hold plugin's answer: the pass's that began this work, then the last one asked
    /// before a push that moves main.
    pub hold: super::hold::HoldAnswer,
    /// Where the candidate stands.
    pub phase: Phase,
    /// Times main moved under a merge push in this work.
    pub main_moved: u32,
    pub heartbeat_at: Timestamp,
    /// A chain write (heartbeat included) is in flight.
    pub writing: bool,
    /// A write waiting for the one in flight.
    pub deferred: Option<Write>,
    /// The progress deadline, set when the first check starts: the wait before it (for a
    /// machine that can run the check, say) never counts. It holds for every candidate the
    /// work builds.
    pub progress_until: Option<Timestamp>,
    /// The hold plugin's run asked before the push that moves main, while it is out.
    pub asking: Option<ActionId>,
    /// The hold plugin answered "not held" for the push that moves main, which goes out next.
    pub cleared: bool,
    /// The registry, read right before the push that moves main, still enrols the key that
    /// signed the candidate: the push goes out next.
    pub keys_cleared: bool,
    /// The candidate that waited for an approval no longer verifies against the executor
    /// file (its key was taken out meanwhile): it is signed again, not taken up as it is.
    pub resign: bool,
    /// The last heartbeat this work wrote and the parent it was given (for a mutant).
    #[cfg(feature = "mutants")]
    pub last_heartbeat_parent: Option<(Oid, Oid)>,
}

impl Work {
    /// Work on `operation` of `record`, whose chain's tip is `tip`; `claimed` when this runner holds
    /// the claim there already; its first heartbeat is due at `heartbeat_at`.
    pub fn new(
        record: ChangeRecord,
        operation: &Operation,
        tip: Oid,
        claimed: bool,
        base: Oid,
        hold: super::hold::HoldAnswer,
        heartbeat_at: Timestamp,
    ) -> Work {
        Work {
            record,
            op: operation.id.clone(),
            requested: Requested {
                draft: operation.draft.clone(),
                base: operation.base.clone(),
                by: operation.requested_by.clone(),
            },
            tip,
            claimed,
            base,
            hold,
            phase: Phase::Unbuilt,
            main_moved: 0,
            heartbeat_at,
            writing: false,
            deferred: None,
            progress_until: None,
            asking: None,
            cleared: false,
            keys_cleared: false,
            resign: false,
            #[cfg(feature = "mutants")]
            last_heartbeat_parent: None,
        }
    }

    pub fn deadline(&self) -> Option<Deadline> {
        let heartbeat = (self.claimed && !self.writing).then_some(Deadline {
            at: self.heartbeat_at,
            why: Wake::Heartbeat,
        });
        let running = match &self.phase {
            Phase::Checking(checking) => Some(&checking.running),
            Phase::Unbuilt | Phase::Built(_) => None,
        };
        let check = running
            .into_iter()
            .flat_map(BTreeMap::values)
            .map(|running| Deadline {
                at: running.deadline,
                why: Wake::CheckDeadline,
            })
            .min_by_key(|deadline| deadline.at);
        let progress = self
            .progress_until
            .filter(|_| !self.writing)
            .map(|at| Deadline {
                at,
                why: Wake::ProgressDeadline,
            });
        [heartbeat, check, progress]
            .into_iter()
            .flatten()
            .min_by_key(|deadline| deadline.at)
    }
}

/// Where a step of the work leaves the runner: still working, or past the work. Only
/// [`Runner::keep`], [`Runner::drop_work`], [`Runner::let_go`] and [`Runner::finished`] make
/// one, and each takes the work: every path of a step says what becomes of the work, and none
/// can touch it after.
#[must_use]
pub(super) struct Placed(());

impl Runner {
    /// Takes the work out of the stage for one step of it, which places the runner again.
    pub(super) fn take_work(&mut self) -> Option<Box<Work>> {
        let placeholder = Stage::Idle {
            next_pass: self.now,
        };
        match std::mem::replace(&mut self.stage, placeholder) {
            Stage::Working(work) => Some(work),
            stage => {
                self.stage = stage;
                None
            }
        }
    }

    /// Goes on working.
    pub(super) fn keep(&mut self, work: Box<Work>) -> Placed {
        self.stage = Stage::Working(work);
        Placed(())
    }

    /// Drops the work in memory (its answers in flight are ignored) and rests. What the
    /// remote holds is the truth; the next pass reads it.
    pub(super) fn drop_work(&mut self, work: Box<Work>, after_ms: u64) -> Placed {
        drop(work);
        self.forget_all_but_notices();
        self.rest(after_ms);
        Placed(())
    }

    pub(super) fn send_work(&mut self, action: Action, purpose: Purpose) -> ActionId {
        self.out.send(action, RunnerPurpose::Work(purpose))
    }

    /// Reads the policy at the base the candidate is built on, once main there is known not
    /// to be held for this change; held, the claim goes back (`MAIN_HELD`).
    pub(super) fn read_policy(&mut self, work: Box<Work>) -> Placed {
        let commit = work.base.clone();
        if !self.holds_known(&commit, super::hold::Then::Work) {
            return self.keep(work);
        }
        if let Some(hold) = self.held_under(&work.record, Some(&work.hold)) {
            let why = format!("main is held: {hold}");
            return self.release(work, Some(ReasonCode::MainHeld), why);
        }
        // The policy the seed brought, read at this very commit, is the policy there.
        if let Some((_, bytes)) = self.seed_policy.take().filter(|(at, _)| *at == commit) {
            return self.on_policy(work, Ok(bytes));
        }
        self.send_work(
            Action::ReadFile {
                commit,
                path: POLICY_PATH.into(),
            },
            Purpose::ReadPolicy,
        );
        self.keep(work)
    }

    pub(super) fn work_tick(&mut self) {
        let now = self.now;
        let Some(mut work) = self.take_work() else {
            return;
        };
        if let Phase::Checking(checking) = &mut work.phase {
            let late: Vec<(usize, ActionId)> = checking
                .running
                .iter()
                .filter(|(_, running)| now >= running.deadline)
                .map(|(index, running)| (*index, running.id))
                .collect();
            if !late.is_empty() {
                // The driver should have killed each at its time limit; none answered, so
                // each is unknown, never a pass. A late answer is ignored.
                for (index, id) in late {
                    self.out.forget(id);
                    checking.running.remove(&index);
                    let why = "The check ran past its time limit and never answered.";
                    checking
                        .answered
                        .insert(index, Judged::unrun(Verdict::Unknown, why.into()));
                }
                let _placed = self.advance(work);
                return;
            }
        }
        let _placed = if !work.writing && work.progress_until.is_some_and(|until| now >= until) {
            self.past_deadline(work)
        } else if work.claimed && !work.writing && now >= work.heartbeat_at {
            self.heartbeat(work)
        } else {
            self.keep(work)
        };
    }

    /// The head ran past its progress deadline: whatever is in flight is dropped, the claim
    /// goes back and the operation loses its place at the head, so the queue moves; the third
    /// time the operation is blocked.
    fn past_deadline(&mut self, mut work: Box<Work>) -> Placed {
        work.progress_until = None;
        let mut ids: Vec<ActionId> = Vec::new();
        if let Phase::Checking(checking) = &mut work.phase {
            ids.extend(checking.running.values().map(|r| r.id));
            checking.running.clear();
            checking.answered.clear();
        }
        ids.extend(work.asking.take());
        for id in ids {
            self.out.forget(id);
        }
        let releases = work
            .record
            .op(&work.op)
            .map_or(0, |op| op.deadline_releases);
        let seconds = self.cfg.progress_ms / 1000;
        if releases + 1 >= QUEUE_DEADLINE_RELEASES {
            let end = Unmerged::DeadlineExceeded {
                progress_deadline_s: seconds,
                releases: releases + 1,
            };
            return self.end(work, end);
        }
        let why = format!("the checks ran past the head's progress deadline of {seconds} s");
        if !work.claimed {
            return self.let_go(work, Some(ReasonCode::QueueDeadlineExceeded), why);
        }
        // It loses its place at the head: it queues behind every place taken so far, so the
        // operations waiting behind it go first.
        let behind = self
            .refs
            .keys()
            .filter_map(|name| refs::parse_queue(name))
            .chain(work.record.op(&work.op).map(|op| op.queue_key().0))
            .max();
        self.write(
            work,
            Write::Release {
                reason: Some(ReasonCode::QueueDeadlineExceeded),
                why,
                behind,
                detail: None,
            },
        )
    }

    fn heartbeat(&mut self, mut work: Box<Work>) -> Placed {
        let (change, op) = (work.record.change.clone(), work.op.clone());
        let step = self.step(&change, StepBody::Heartbeat { op });
        let parent = self.heartbeat_parent(&work);
        let parent_sent = parent.clone();
        let plan = PushPlan::of(Append::on(change, Some(parent), vec![step], None));
        #[cfg(feature = "mutants")]
        let plan = self.mutant_plan(&work, plan);
        work.writing = true;
        self.send_work(
            Action::Push(plan),
            Purpose::Heartbeat {
                parent: parent_sent,
            },
        );
        self.keep(work)
    }

    #[cfg(not(feature = "mutants"))]
    fn heartbeat_parent(&mut self, work: &Work) -> Oid {
        work.tip.clone()
    }

    /// Sends `write` now, or after the chain write in flight.
    pub(super) fn write(&mut self, mut work: Box<Work>, write: Write) -> Placed {
        if work.writing {
            work.deferred = Some(write);
            return self.keep(work);
        }
        // Each push that moves main goes out only on the hold plugin's "not held", asked anew.
        if write.merges() {
            if self.asking_before_push(&mut work, &write) {
                return self.keep(work);
            }
            if self.reading_keys_before_push(&mut work, &write) {
                return self.keep(work);
            }
            work.cleared = false;
            work.keys_cleared = false;
        }
        work.writing = true;
        let plan = self.plan(&work, &write);
        let plan = self.with_request(plan);
        #[cfg(feature = "mutants")]
        let plan = self.mutant_plan(&work, plan);
        // The event this push appends to the log, for the notify plugin once it is accepted.
        let event = plan.log.as_ref().map(|log| log.message.clone());
        let steps: Vec<crate::record::Step> =
            plan.appends.iter().flat_map(|a| a.steps.clone()).collect();
        // Never push a step the record would refuse: a chain no reader can fold would hold its
        // operation for good.
        let mut check = work.record.clone();
        if let Err(error) = steps.iter().try_for_each(|step| check.append(step)) {
            work.writing = false;
            let why = format!(
                "bay would have written a step its record refuses ({error}); please report it"
            );
            let claimed = work.claimed;
            return match write {
                Write::Release { .. } => self.drop_work(work, self.cfg.backoff_ms),
                _ if claimed => self.write(
                    work,
                    Write::Release {
                        reason: None,
                        why,
                        behind: None,
                        detail: None,
                    },
                ),
                _ => self.drop_work(work, self.cfg.backoff_ms),
            };
        }
        self.send_work(Action::Push(plan), Purpose::Write(write, steps, event));
        self.keep(work)
    }

    fn plan(&mut self, work: &Work, write: &Write) -> PushPlan {
        let change = work.record.change.clone();
        let op = work.op.clone();
        let mut plan = PushPlan {
            atomic: true,
            ..PushPlan::default()
        };
        let mut steps = Vec::new();
        let mut carry = None;
        if !work.claimed {
            steps.push(self.step(&change, StepBody::Claim { op: op.clone() }));
        }
        let unrecorded = work
            .phase
            .candidate()
            .filter(|candidate| !candidate.recorded);
        if let Some(built) = unrecorded.map(|candidate| candidate.built.clone()) {
            steps.push(self.step(
                &change,
                StepBody::Candidate {
                    op: op.clone(),
                    candidate: built.id,
                    base: work.base.clone(),
                    base_tree: built.base_tree,
                    commit: built.commit.clone(),
                    tree: built.tree,
                },
            ));
            // The candidate's step keeps the candidate commit reachable as its second parent.
            if steps.len() == 1 {
                carry = Some(built.commit);
            }
        }
        match write {
            Write::Record => {}
            Write::Check {
                candidate,
                check,
                environment,
                verdict,
                why,
                notes,
                then,
            } => {
                steps.push(self.step(
                    &change,
                    StepBody::Check {
                        op: op.clone(),
                        candidate: candidate.clone(),
                        check: check.clone(),
                        environment: environment.clone(),
                        verdict: *verdict,
                        why: why.clone(),
                    },
                ));
                plan.notes = self.own_notes(notes.iter().cloned());
                match then {
                    Then::Again | Then::Continue => {}
                    Then::End(end) => self.push_ending(work, &mut plan, &mut steps, end),
                    Then::Merge(merge) => self.push_merge(work, &mut plan, &mut steps, merge),
                    Then::Release(reason, why) => steps.push(self.step(
                        &change,
                        StepBody::Release {
                            op: op.clone(),
                            reason: Some(*reason),
                            why: why.clone(),
                            behind: None,
                            detail: None,
                        },
                    )),
                }
            }
            Write::Merge(merge) => self.push_merge(work, &mut plan, &mut steps, merge),
            Write::End(end) => self.push_ending(work, &mut plan, &mut steps, end),
            Write::Release {
                reason,
                why,
                behind,
                detail,
            } => {
                // A wait for an approval names the candidate, so it keeps it on the remote,
                // where an approver fetches it with the change's record.
                if detail.is_some() && steps.is_empty() {
                    carry = work.phase.candidate().map(|c| c.built.commit.clone());
                }
                steps.push(self.step(
                    &change,
                    StepBody::Release {
                        op: op.clone(),
                        reason: *reason,
                        why: why.clone(),
                        behind: *behind,
                        detail: detail.clone(),
                    },
                ));
            }
        }
        plan.appends
            .push(Append::on(change, Some(work.tip.clone()), steps, carry));
        plan
    }

    /// The outcome step of an ending short of a merge, and the queue place it gives up.
    fn push_ending(
        &mut self,
        work: &Work,
        plan: &mut PushPlan,
        steps: &mut Vec<crate::record::Step>,
        end: &Ending,
    ) {
        plan.updates.extend(self.give_up_place(work));
        steps.push(self.step(
            &work.record.change,
            StepBody::Outcome {
                op: work.op.clone(),
                state: end.state,
                reason: end.reason,
                detail: with_trust(end.detail.clone(), end.reason, self.cfg.unsigned_trust()),
            },
        ));
        // A change whose work is already on main may be taken up again, as an abandoned one,
        // until the retention window passes: its marker says when, by its name alone.
        if end.state == OpState::NoEffect {
            plan.updates.push(RefUpdate {
                name: refs::no_effect(&work.record.change, self.now),
                expect: Expect::Absent,
                new: NewValue::Step {
                    append: plan.appends.len(),
                    step: steps.len() - 1,
                },
            });
        }
        plan.log = self.log_event(work, end.state, end.reason, None);
    }

    /// The event of an operation's end, for this runner's log, leased on the log's tip as
    /// this runner knows it: appended in the push that ends the operation, so the event exists
    /// exactly when the outcome does.
    fn log_event(
        &self,
        work: &Work,
        state: OpState,
        code: Option<ReasonCode>,
        merge: Option<(&Oid, &Oid)>,
    ) -> Option<LogAdd> {
        let message = self.end_message(&work.record, &work.op, state, code, merge);
        self.log_append(message.into_iter().collect())
    }

    /// The `bay.event/1` message of `op`'s end as `state`, or none for a state that is not an
    /// end.
    pub(super) fn end_message(
        &self,
        record: &ChangeRecord,
        op: &OpId,
        state: OpState,
        code: Option<ReasonCode>,
        merge: Option<(&Oid, &Oid)>,
    ) -> Option<String> {
        let event = BayEvent::ended(Ended {
            runner: &self.cfg.runner,
            change: &record.change,
            op,
            actor: &record.actor,
            at: self.now,
            state,
            code,
            merge,
        })?;
        #[cfg(feature = "mutants")]
        let event = self.mutant_event(event);
        Some(event.to_message())
    }

    /// `messages` appended to this runner's log, each on the one before, the first leased on
    /// the log's tip as this runner knows it; none for no message.
    pub(super) fn log_append(&self, messages: Vec<String>) -> Option<LogAdd> {
        let mut messages = messages.into_iter();
        let first = messages.next()?;
        let tip = self.refs.get(&refs::log(&self.cfg.runner)).cloned();
        let mut log = LogAdd::on(&self.cfg.runner, tip, first);
        log.more = messages.collect();
        Some(log)
    }

    /// The merge: the merged outcome, main `base -> candidate` leased on `base`, the merged
    /// marker (create-only), and the queue place given up, all in one atomic push.
    fn push_merge(
        &mut self,
        work: &Work,
        plan: &mut PushPlan,
        steps: &mut Vec<crate::record::Step>,
        merge: &Merge,
    ) {
        let change = work.record.change.clone();
        steps.push(self.step(
            &change,
            StepBody::Outcome {
                op: work.op.clone(),
                state: OpState::Merged,
                reason: None,
                detail: merge.detail.to_json(),
            },
        ));
        plan.updates.push(RefUpdate {
            name: self.main_ref(),
            expect: Expect::Is(work.base.clone()),
            new: NewValue::Oid(merge.commit.clone()),
        });
        plan.updates.push(RefUpdate {
            name: refs::landed(&change),
            expect: Expect::Absent,
            new: NewValue::Oid(merge.commit.clone()),
        });
        plan.updates.extend(self.give_up_place(work));
        plan.log = self.log_event(
            work,
            OpState::Merged,
            None,
            Some((&merge.commit, &work.base)),
        );
    }

    /// An ending operation gives its queue place up in the same push, so that the queue holds
    /// only places whose operations have not ended.
    fn give_up_place(&self, work: &Work) -> Option<RefUpdate> {
        let seq = work.record.op(&work.op)?.seq;
        give_up_place(&self.refs, seq)
    }

    /// Ends the operation short of a merge.
    pub(super) fn end(&mut self, work: Box<Work>, end: Unmerged) -> Placed {
        self.write(work, Write::End(end.ending()))
    }

    /// Gives the claim back after a fault, so another runner may claim at once. Before the
    /// claim is recorded there is nothing to give back: the work is dropped.
    pub(super) fn release(
        &mut self,
        work: Box<Work>,
        reason: Option<ReasonCode>,
        why: String,
    ) -> Placed {
        if !work.claimed {
            return self.let_go(work, reason, why);
        }
        self.write(
            work,
            Write::Release {
                reason,
                why,
                behind: None,
                detail: None,
            },
        )
    }

    /// Lets go of the work after a release: try again after a while; but a `--once` run that
    /// cannot run the head's check here has nothing more it can do now, and ends.
    fn let_go(&mut self, work: Box<Work>, reason: Option<ReasonCode>, why: String) -> Placed {
        if reason != Some(ReasonCode::CheckUnavailable) {
            let backoff = self.cfg.backoff_ms;
            return self.drop_work(work, backoff);
        }
        if self.cfg.mode == super::RunMode::Once {
            drop(work);
            let mut detail = serde_json::Map::new();
            detail.insert("unavailable".into(), serde_json::Value::from(why));
            self.finish(crate::result::BayResult::ok(None, detail));
            return Placed(());
        }
        let interval = self.cfg.interval_ms;
        self.drop_work(work, interval)
    }

    pub(super) fn on_work(
        &mut self,
        id: ActionId,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        let Some(work) = self.take_work() else {
            return Ok(());
        };
        let _placed = match (purpose, completion) {
            (Purpose::ReadPolicy, Completion::FileRead(result)) => self.on_policy(work, result),
            (Purpose::Build(policy), Completion::CandidateBuilt(result)) => {
                self.on_built(work, *policy, result)
            }
            (Purpose::Stats(built, policy), Completion::StatsRead(result)) => {
                self.on_stats(work, built, *policy, result)
            }
            (Purpose::Signature(built, policy), Completion::CommitsRead(result)) => {
                self.on_signature(work, built, *policy, result)
            }
            (Purpose::Red(built, policy, reader), completion) => {
                self.on_red(work, built, *policy, *reader, completion)?
            }
            (Purpose::ReadOwnPolicy(built, policy), Completion::FileRead(result)) => {
                self.on_own_policy(work, built, *policy, result)
            }
            (Purpose::ReadNotes, Completion::NotesRead(result)) => self.on_notes(work, result),
            (Purpose::LateFetch(spec), Completion::Fetched(result)) => {
                self.on_late_fetch(work, spec, result)
            }
            (Purpose::LateNotes, Completion::NotesRead(result)) => self.on_late_notes(work, result),
            (Purpose::Check { index }, Completion::CheckExited(exit)) => {
                self.on_check(work, id, index, exit)
            }
            (Purpose::Baseline { index, run }, Completion::CheckExited(exit)) => {
                self.on_baseline(work, id, index, run, exit)
            }
            (Purpose::BaseRecords { index, run }, Completion::NotesRead(records)) => {
                self.on_base_records(work, index, run, records)
            }
            (Purpose::Heartbeat { parent }, Completion::Pushed(report)) => {
                self.on_heartbeat(work, report, parent)
            }
            (Purpose::Write(write, steps, event), Completion::Pushed(report)) => {
                self.on_written(work, write, steps, event, report)
            }
            (Purpose::Verify(write, spec), Completion::Fetched(result)) => {
                self.on_verified(work, write, spec, result)
            }
            (Purpose::Resume(candidate, policy), Completion::StatsRead(result)) => {
                self.on_resume(work, *candidate, *policy, result)
            }
            (Purpose::ResumeNotes(checking), Completion::NotesRead(result)) => {
                self.on_resume_notes(work, *checking, result)
            }
            (Purpose::ApprovalFetch(spec), Completion::Fetched(result)) => {
                self.on_approval_fetch(work, spec, result)
            }
            (Purpose::ApprovalKeys(reader), completion) => {
                self.on_approval_keys(work, *reader, completion)?
            }
            (Purpose::ApprovalNotes(version), Completion::NotesRead(result)) => {
                self.on_approval_notes(work, version, result)
            }
            (Purpose::CarryStats(index), Completion::StatsRead(result)) => {
                self.on_carry_stats(work, index, result)
            }
            (Purpose::WaiverFetch(spec, reuse), Completion::Fetched(result)) => {
                self.on_waiver_fetch(work, spec, reuse, result)
            }
            (Purpose::WaiverKeys(reader, reuse), completion) => {
                self.on_waiver_keys(work, *reader, reuse, completion)?
            }
            (Purpose::WaiverNotes(version, reuse), Completion::NotesRead(result)) => {
                self.on_waiver_notes(work, version, reuse, result)
            }
            (Purpose::KeysFetch(write, spec), Completion::Fetched(result)) => {
                self.on_keys_fetched(work, *write, spec, result)
            }
            (Purpose::KeysRead(write, tip), Completion::RegistryRead(result)) => {
                self.on_keys_read(work, *write, tip, result)
            }
            (Purpose::ReuseKeys(purpose), completion) => {
                let placed = self.keep(work);
                self.on_reuse_keys(purpose, completion)?;
                placed
            }
            (Purpose::Stamps, Completion::FilesRead(read)) => self.on_stamp_files(work, read),
            (purpose, completion) => {
                let _placed = self.keep(work);
                return Err(Misuse(format!("{purpose:?} answered with {completion:?}")));
            }
        };
        Ok(())
    }

    fn on_policy(
        &mut self,
        work: Box<Work>,
        result: Result<Option<Vec<u8>>, crate::machine::Fault>,
    ) -> Placed {
        match result {
            Err(fault) => {
                self.release(work, None, format!("could not read {POLICY_PATH}: {fault}"))
            }
            Ok(None) => {
                let end = Unmerged::policy_missing(work.base.clone());
                self.end(work, end)
            }
            Ok(Some(bytes)) => match parse_policy(&bytes) {
                Ok(policy) => self.build(work, policy),
                Err(why) => self.end(work, Unmerged::policy_invalid(why)),
            },
        }
    }

    /// Builds a candidate on the base under `policy`, the policy there; the candidate in hand,
    /// if there is one, is let go.
    pub(super) fn build(&mut self, mut work: Box<Work>, policy: Policy) -> Placed {
        if let Some(candidate) = self.resumable(&work, &policy).filter(|_| !work.resign) {
            // The candidate waited for an approval on this very main: take it up again.
            let read = Action::ReadStats {
                base: work.base.clone(),
                commit: candidate.commit.clone(),
            };
            self.send_work(read, Purpose::Resume(Box::new(candidate), Box::new(policy)));
            return self.keep(work);
        }
        let trailers = self.cfg.trailers.clone();
        work.phase = Phase::Unbuilt;
        // Candidates are numbered as the record holds them: one built and never recorded
        // (main moved before it went up) leaves no gap.
        let recorded = work.record.op(&work.op).map_or(0, |o| o.candidates.len());
        let attempt = u32::try_from(recorded + 1).unwrap_or(u32::MAX);
        let candidate = work.op.candidate(attempt);
        let message = candidate_message(
            &work.record,
            &work.op,
            &work.requested.by,
            &candidate,
            &trailers,
        );
        let spec = CandidateSpec {
            candidate,
            base: work.base.clone(),
            draft: work.requested.draft.clone(),
            merge_base: work.requested.base.clone(),
            message,
            sign: self.cfg.signer.as_ref().map(|s| s.executor_key.clone()),
        };
        #[cfg(feature = "mutants")]
        let spec = CandidateSpec {
            merge_base: self.mutant_merge_base(&work, spec.merge_base),
            ..spec
        };
        self.send_work(
            Action::BuildCandidate(spec),
            Purpose::Build(Box::new(policy)),
        );
        self.keep(work)
    }

    fn on_built(
        &mut self,
        work: Box<Work>,
        policy: Policy,
        result: Result<BuildResult, crate::machine::Fault>,
    ) -> Placed {
        match result {
            Err(fault) => self.release(
                work,
                None,
                format!("could not build the candidate: {fault}"),
            ),
            Ok(BuildResult::Conflict { paths }) => {
                self.end(work, Unmerged::MergeConflict { paths })
            }
            Ok(BuildResult::Missing { commits }) => {
                // The request names a draft the remote does not hold: no retry can build it,
                // so the operation ends, by name, and the queue goes on. A draft Git cannot
                // read is a fault no reason code names (as for a merge Git cannot read).
                let end = Unmerged::draft_missing(work.requested.draft.clone(), commits);
                self.end(work, end)
            }
            Ok(BuildResult::Clean {
                commit,
                tree,
                base_tree,
                changed_paths,
            }) => {
                let base = work.base.clone();
                if tree == base_tree {
                    let end = Unmerged::NoEffect {
                        main_commit: base,
                        tree,
                    };
                    return self.end(work, end);
                }
                let attempt = work.record.op(&work.op).map_or(1, |o| {
                    u32::try_from(o.candidates.len() + 1).unwrap_or(u32::MAX)
                });
                let stands_for = self.signed_again(&work, &tree, &policy);
                let built = Built {
                    id: work.op.candidate(attempt),
                    commit,
                    tree,
                    base_tree,
                    changed_paths,
                    signed: false,
                    signed_by: None,
                    stands_for,
                    resumed: false,
                };
                self.sign_or_measure(work, built, policy)
            }
        }
    }

    /// A candidate built, or taken up again: when this runner signs, read back and its
    /// signature judged before anything else (a merge whose signature does not verify is never
    /// pushed); then measured against `[limits]`.
    pub(super) fn sign_or_measure(
        &mut self,
        work: Box<Work>,
        built: Built,
        policy: Policy,
    ) -> Placed {
        if self.cfg.signer.is_some() {
            let read = Action::ReadCommits {
                commits: vec![built.commit.clone()],
            };
            self.send_work(read, Purpose::Signature(built, Box::new(policy)));
            return self.keep(work);
        }
        self.measure(work, built, policy)
    }

    /// Whether `raw`, the candidate as Git stores it, is signed by a key of the registry's
    /// `executor` file as this runner read it when it started.
    fn on_signature(
        &mut self,
        mut work: Box<Work>,
        mut built: Built,
        policy: Policy,
        result: Result<Vec<String>, crate::machine::Fault>,
    ) -> Placed {
        let raw = match result {
            Ok(raw) => raw.into_iter().next().unwrap_or_default(),
            Err(fault) => {
                return self.release(work, None, format!("could not read the candidate: {fault}"));
            }
        };
        let verdict = self.candidate_signature(&raw);
        match verdict {
            Ok(Some(verdict)) if verdict.is_good() => {
                built.signed = true;
                built.signed_by =
                    crate::trust::registry::split_signed(&raw).and_then(|(_, signature)| {
                        crate::trust::sshsig::signer(signature.as_bytes())
                            .ok()
                            .map(Box::new)
                    });
                self.measure(work, built, policy)
            }
            other => {
                if built.resumed {
                    // Taken up again after an approval, by a key the registry no longer
                    // enrols: the same tree on the same parent is signed again.
                    work.resign = true;
                    return self.build(work, policy);
                }
                let why = match other {
                    Ok(Some(verdict)) => verdict.name().to_owned(),
                    Ok(None) => "it carries no SSH signature".to_owned(),
                    Err(why) => why,
                };
                self.release(
                    work,
                    None,
                    format!(
                        "the candidate's signature does not verify against the registry's \
                         executor file ({why})"
                    ),
                )
            }
        }
    }

    /// Core's verdict on `raw`, a candidate as Git stores it, against the registry's
    /// `executor` file as this runner knows it: `None` when it carries no SSH signature.
    // The verdict is let so that a mutant may replace it before it is returned.
    #[allow(clippy::let_and_return)]
    pub(super) fn candidate_signature(
        &self,
        raw: &str,
    ) -> Result<Option<crate::trust::Verdict>, String> {
        let signers = self
            .cfg
            .signer
            .as_ref()
            .map(|signer| signer.executor_signers.as_str())
            .unwrap_or_default();
        let verdict = crate::trust::AllowedSigners::parse(signers)
            .map_err(|e| e.to_string())
            .map(|signers| {
                crate::trust::registry::split_signed(raw).map(|(payload, signature)| {
                    crate::trust::verify_by_key(
                        &signers,
                        crate::trust::registry::COMMIT_NAMESPACE,
                        payload.as_bytes(),
                        signature.as_bytes(),
                    )
                })
            });
        #[cfg(feature = "mutants")]
        let verdict = match verdict {
            Ok(Some(_)) if self.mutant_accepts_any_signature() => {
                Ok(Some(crate::trust::Verdict::Good {
                    principal: String::new(),
                    line: 0,
                    fingerprint: String::new(),
                    algorithm: String::new(),
                }))
            }
            verdict => verdict,
        };
        verdict
    }

    /// Measures a built candidate against the base's `[limits]`, then judges the base's red.
    pub(super) fn measure(&mut self, work: Box<Work>, built: Built, policy: Policy) -> Placed {
        let unmeasured = policy.limits.sizes_unset();
        let base = work.base.clone();
        #[cfg(feature = "mutants")]
        let unmeasured = unmeasured || self.mutant_ignores_limits();
        if unmeasured {
            return self.judge_red(work, built, policy);
        }
        // The caps of the policy at the base judge the candidate against that base,
        // before any check runs; a policy without caps costs no measuring.
        let read = Action::ReadStats {
            base,
            commit: built.commit.clone(),
        };
        self.send_work(read, Purpose::Stats(built, Box::new(policy)));
        self.keep(work)
    }

    fn on_stats(
        &mut self,
        work: Box<Work>,
        built: Built,
        policy: Policy,
        result: Result<Vec<PathStat>, crate::machine::Fault>,
    ) -> Placed {
        let stats = match result {
            Ok(stats) => stats,
            Err(fault) => {
                return self.release(
                    work,
                    None,
                    format!("could not measure the candidate: {fault}"),
                );
            }
        };
        match policy.limits.judge(&stats) {
            Some(too_large) => self.end(work, Unmerged::TooLarge(too_large)),
            None => self.judge_red(work, built, policy),
        }
    }

    /// Takes a candidate within the caps as the work's, then reads its own policy when it
    /// changes the checks, or plans at once.
    pub(super) fn accept(&mut self, mut work: Box<Work>, built: Built, policy: Policy) -> Placed {
        let own_policy =
            plan::changes_checks(&policy, &built.changed_paths).then(|| Action::ReadFile {
                commit: built.commit.clone(),
                path: POLICY_PATH.into(),
            });
        work.phase = Phase::Built(Candidate {
            recorded: built.resumed,
            built: built.clone(),
        });
        match own_policy {
            Some(read) => {
                self.send_work(read, Purpose::ReadOwnPolicy(built, Box::new(policy)));
                self.keep(work)
            }
            None => self.planned(work, built, policy, None),
        }
    }

    fn on_own_policy(
        &mut self,
        work: Box<Work>,
        built: Built,
        policy: Policy,
        result: Result<Option<Vec<u8>>, crate::machine::Fault>,
    ) -> Placed {
        match result {
            Err(fault) => self.release(
                work,
                None,
                format!("could not read the change's own {POLICY_PATH}: {fault}"),
            ),
            Ok(bytes) => self.planned(work, built, policy, bytes.map(|bytes| parse_policy(&bytes))),
        }
    }

    /// Decides what the candidate `built` must pass (`own` is the change's own policy, as
    /// [`plan::plan`] takes it), then records the claim and the candidate; with nothing to
    /// run, they go up with the merge in one push.
    fn planned(
        &mut self,
        mut work: Box<Work>,
        built: Built,
        policy: Policy,
        own: Option<Result<Policy, String>>,
    ) -> Placed {
        // A change to the policy owes a yes under both policies: its own approval checks
        // count too (one of the same id and environment is owed once).
        let own_approvals: Vec<crate::policy::ApprovalCheck> = match &own {
            Some(Ok(own)) => crate::approval::required(own, &built.changed_paths)
                .into_iter()
                .cloned()
                .collect(),
            _ => Vec::new(),
        };
        let planned = plan::plan(&policy, own, &built.changed_paths, &self.now.date());
        let plan = match planned {
            Err(why) => {
                return self.end(work, Unmerged::policy_invalid(why));
            }
            Ok(plan) => plan,
        };
        // A run this machine may not do means the operation cannot end here: leave it,
        // unclaimed, to a machine that can.
        if let Some(why) = plan.runs.iter().find_map(|run| self.cannot_run(&run.spec)) {
            return self.unavailable(work, why);
        }
        let reuse = self.reuse_by(&policy).is_some()
            && !plan.runs.is_empty()
            && plan
                .runs
                .iter()
                .all(|run| run.adapter_from == AdapterFrom::Base);
        let change = ChangeContext {
            id: work.record.change.clone(),
            intent: work.record.intent.clone(),
            actor: work.record.actor.clone(),
            revision: work.requested.draft.clone(),
            messages: Vec::new(),
        };
        let mut approvals: Vec<crate::policy::ApprovalCheck> =
            crate::approval::required(&policy, &built.changed_paths)
                .into_iter()
                .cloned()
                .collect();
        for check in own_approvals {
            if !approvals
                .iter()
                .any(|c| c.id == check.id && c.environment == check.environment)
            {
                approvals.push(check);
            }
        }
        let resumed = built.resumed;
        let stands = built.stands_for.is_some();
        let checking = Checking {
            policy,
            change,
            base: CommitTree {
                commit: work.base.clone(),
                tree: built.base_tree.clone(),
            },
            candidate: Candidate {
                built,
                recorded: resumed,
            },
            plan,
            done: 0,
            attempts: Vec::new(),
            gaps: Vec::new(),
            running: BTreeMap::new(),
            answered: BTreeMap::new(),
            next_start: 0,
            reused: BTreeMap::new(),
            stamps: BTreeMap::new(),
            carry_from: BTreeMap::new(),
            approvals,
            judging: false,
            carrying: None,
            waived: BTreeMap::new(),
            late: if reuse && (self.cfg.ahead > 0 || self.cfg.footprint_lanes) {
                super::late::Late::Idle
            } else {
                super::late::Late::Off
            },
        };
        if resumed || stands {
            return self.resume_checks(work, checking);
        }
        if checking.plan.runs.iter().any(|run| run.spec.waivable) {
            // A waiver signed for this very candidate answers a waivable check, never as a
            // pass: read them before any check runs.
            work.phase = Phase::Checking(Box::new(checking));
            return self.read_waivers(work, reuse);
        }
        self.checks_planned(work, checking, reuse)
    }

    /// The checks are planned (and any waiver read): stamp the footprint checks (`carry`),
    /// then read the passes to reuse, or record the claim and the candidate.
    pub(super) fn checks_planned(
        &mut self,
        mut work: Box<Work>,
        checking: Checking,
        reuse: bool,
    ) -> Placed {
        work.phase = Phase::Checking(Box::new(checking));
        self.stamp_checks(work, reuse)
    }

    /// Reads the passes to reuse (under a registry, once it is read), or records the claim
    /// and the candidate.
    pub(super) fn reuse_or_record(&mut self, work: Box<Work>, reuse: bool) -> Placed {
        let Phase::Checking(checking) = &work.phase else {
            return self.keep(work);
        };
        match self.reuse_by(&checking.policy) {
            Some(ReuseBy::Registry) if reuse => {
                self.read_reuse_keys(super::reuse_keys::Then::Work);
                self.keep(work)
            }
            Some(ReuseBy::Unsigned) if reuse => self.read_reused(work),
            _ => self.record_checks(work),
        }
    }

    /// Reads the passes on the candidate that answer its runs; with no notes to read,
    /// records the claim and the candidate.
    pub(super) fn read_reused(&mut self, work: Box<Work>) -> Placed {
        let notes = self.evidence_tips();
        let Phase::Checking(checking) = &work.phase else {
            return self.keep(work);
        };
        if notes.is_empty() {
            return self.record_checks(work);
        }
        let built = &checking.candidate.built;
        #[allow(unused_mut)]
        let mut objects = vec![built.tree.clone(), built.commit.clone()];
        if !checking.stamps.is_empty() {
            // Where a pass of this operation on another candidate hangs (`carry`).
            objects.push(checking.change.revision.clone());
        }
        #[cfg(feature = "mutants")]
        if self.mutant_prechecks_by_change() {
            objects.push(work.requested.draft.clone());
        }
        let read = Action::ReadNotes { notes, objects };
        self.send_work(read, Purpose::ReadNotes);
        self.keep(work)
    }

    /// Records the claim and the candidate, so that the checks can run.
    fn record_checks(&mut self, work: Box<Work>) -> Placed {
        let Phase::Checking(checking) = &work.phase else {
            return self.keep(work);
        };
        let write = self.record_plan(checking, work.main_moved);
        self.write(work, write)
    }

    /// The tip of every producer's evidence notes, as the pass fetched them.
    pub(super) fn evidence_tips(&self) -> Vec<Oid> {
        self.refs
            .iter()
            .filter(|(name, _)| name.starts_with(refs::EVIDENCE))
            .map(|(_, tip)| tip.clone())
            .collect()
    }

    /// The passes already recorded on exactly these inputs: each run they cover is taken as
    /// answered, and not run again. A read that failed reuses nothing.
    fn on_notes(
        &mut self,
        mut work: Box<Work>,
        result: Result<Vec<String>, crate::machine::Fault>,
    ) -> Placed {
        let main_moved = work.main_moved;
        // The evidence is read only once the checks are planned.
        let Phase::Checking(checking) = &mut work.phase else {
            return self.keep(work);
        };
        let records = self.counted(&checking.policy, result.unwrap_or_default());
        let built = &checking.candidate.built;
        let candidate = crate::check::CommitTree {
            commit: built.commit.clone(),
            tree: built.tree.clone(),
        };
        let reused: BTreeMap<usize, String> = checking
            .plan
            .runs
            .iter()
            .enumerate()
            .filter_map(|(index, run)| {
                let reused = reusable_pass(&records, &run.spec, &candidate, &built.base_tree);
                #[cfg(feature = "mutants")]
                let reused =
                    reused.or_else(|| self.mutant_pass_of_op(&records, &work.op, &run.spec));
                reused.map(|producer| (index, producer))
            })
            .collect();
        checking.reused = reused;
        #[cfg(feature = "mutants")]
        let records = self.mutant_restamp(records, checking);
        checking.carry_from = checking.carried(&records, &work.op, &self.cfg.runner, self.now);
        let write = self.record_plan(checking, main_moved);
        self.write(work, write)
    }

    /// The write that records the claim and the candidate, so that the checks can run; with
    /// nothing to run, they go up with the merge in one push.
    fn record_plan(&self, checking: &Checking, main_moved: u32) -> Write {
        let nothing_to_run = checking.plan.runs.is_empty();
        #[cfg(feature = "mutants")]
        let nothing_to_run = nothing_to_run || self.mutant_reuses_checks(main_moved);
        #[cfg(not(feature = "mutants"))]
        let _ = main_moved;
        if nothing_to_run && checking.approvals.is_empty() {
            Write::Merge(Box::new(checking.merge(self.cfg.unsigned_trust())))
        } else {
            Write::Record
        }
    }

    fn on_heartbeat(&mut self, mut work: Box<Work>, report: PushReport, parent: Oid) -> Placed {
        let written = last_written(&report);
        let heartbeat_ms = self.cfg.heartbeat_ms;
        let backoff = self.cfg.backoff_ms;
        let now = self.now;
        work.writing = false;
        match (report.outcome, written) {
            (PushOutcome::Accepted, Some(tip)) => {
                work.tip = tip.clone();
                work.heartbeat_at = now.plus_millis(heartbeat_ms);
                #[cfg(feature = "mutants")]
                {
                    work.last_heartbeat_parent = Some((tip.clone(), parent));
                }
                #[cfg(not(feature = "mutants"))]
                let _ = parent;
                self.remember(tip);
                self.look_for_late_passes(work)
            }
            (PushOutcome::NotSent(_), _) => {
                work.heartbeat_at = now.plus_millis(backoff);
                self.advance(work)
            }
            // A mutant shrugs the refusal off and goes on working.
            #[cfg(feature = "mutants")]
            (PushOutcome::Rejected { .. }, _)
                if self.cfg.mutant == Some(super::Mutant::SkipFencing) =>
            {
                work.heartbeat_at = now.plus_millis(heartbeat_ms);
                self.advance(work)
            }
            // Refused: the claim was taken over, or the change moved under it. Write nothing more.
            (PushOutcome::Rejected { .. }, _) => {
                self.mine = None;
                self.drop_work(work, 0)
            }
            (_, written) => self.in_doubt(work, written),
        }
    }

    pub(super) fn send_deferred(&mut self, mut work: Box<Work>) -> Placed {
        match work.deferred.take() {
            Some(write) => self.write(work, write),
            None => self.keep(work),
        }
    }

    /// Adds a tip this runner wrote to the tips that prove its claim.
    pub(super) fn remember(&mut self, tip: Oid) {
        if let Some((_, tips)) = self.mine.as_mut() {
            tips.clear();
            tips.insert(tip);
        }
    }

    /// A write's fate is unknown: drop the work; the next pass reads which tip won and takes the
    /// work up again if either is this runner's.
    fn in_doubt(&mut self, work: Box<Work>, written: Option<Oid>) -> Placed {
        // The push may have appended to the log: read its tip again before the next end.
        self.tips_known = false;
        let (claimed, change) = (work.claimed, work.record.change.clone());
        if let Some(written) = written {
            match self.mine.as_mut() {
                Some((_, tips)) if claimed => {
                    tips.insert(written);
                }
                // The claim itself may have landed: only the tip it wrote would prove it.
                _ => self.mine = Some((change, std::collections::BTreeSet::from([written]))),
            }
        }
        self.drop_work(work, 0)
    }

    fn on_written(
        &mut self,
        mut work: Box<Work>,
        write: Write,
        steps: Vec<crate::record::Step>,
        event: Option<String>,
        report: PushReport,
    ) -> Placed {
        let written = last_written(&report);
        work.writing = false;
        match (report.outcome, written) {
            (PushOutcome::Accepted, Some(tip)) => {
                // A request this write carried is up with it.
                self.request = super::request::Handover::None;
                let change = work.record.change.clone();
                work.tip = tip.clone();
                work.phase.recorded();
                // What this runner wrote, folded in, keeps the record it holds true.
                let folded = steps.iter().try_for_each(|step| work.record.append(step));
                if !work.claimed {
                    work.claimed = true;
                    self.mine = Some((change, std::collections::BTreeSet::new()));
                }
                self.remember(tip);
                if folded.is_err() {
                    // The record refuses what was just written: never build on it.
                    return self.drop_work(work, self.cfg.backoff_ms);
                }
                if let Some(note) = report.notes.first() {
                    self.wrote_own(refs::evidence(&self.cfg.runner), note.clone());
                }
                if let Some(tip) = report.log {
                    self.wrote_own(refs::log(&self.cfg.runner), tip);
                    self.notify(event);
                }
                self.after_write(work, write)
            }
            (PushOutcome::Rejected { .. }, _) => {
                work.writing = true;
                let change = work.record.change.clone();
                // Main by a pattern: a refusal because main is gone must be learnt too.
                let spec = FetchSpec::new([
                    self.main_pattern(true),
                    refs::change_pattern(&change),
                    refs::landed_pattern(&change),
                    refs::EVIDENCE_PATTERN.to_string(),
                    refs::log_pattern(&self.cfg.runner),
                ]);
                self.send_work(Action::Fetch(spec.clone()), Purpose::Verify(write, spec));
                self.keep(work)
            }
            (PushOutcome::NotSent(_), _) => {
                // Nothing reached the remote; the claim still stands. Try the pass again later.
                let backoff = self.cfg.backoff_ms;
                self.drop_work(work, backoff)
            }
            (_, written) => self.in_doubt(work, written),
        }
    }

    /// Goes on after a write the remote accepted.
    fn after_write(&mut self, mut work: Box<Work>, write: Write) -> Placed {
        match write {
            Write::Record => self.advance(work),
            Write::Check {
                then: Then::Again, ..
            } => {
                let Work {
                    phase,
                    progress_until,
                    ..
                } = &mut *work;
                if let Phase::Checking(checking) = phase {
                    let done = checking.done;
                    self.start_run(checking, progress_until, done);
                }
                self.advance(work)
            }
            Write::Check {
                then: Then::Continue,
                ..
            } => {
                if let Phase::Checking(checking) = &mut work.phase {
                    checking.done += 1;
                    checking.attempts.clear();
                }
                self.advance(work)
            }
            Write::Merge(_)
            | Write::Check {
                then: Then::Merge(_),
                ..
            } => {
                self.merged += 1;
                self.finished(work)
            }
            Write::Check {
                then: Then::End(_), ..
            }
            | Write::End(_) => self.finished(work),
            Write::Check {
                then: Then::Release(reason, why),
                ..
            } => {
                self.mine = None;
                self.let_go(work, Some(reason), why)
            }
            Write::Release { reason, why, .. } => {
                self.mine = None;
                if reason == Some(ReasonCode::ApprovalPending) {
                    return self.awaits_approval(work);
                }
                self.let_go(work, reason, why)
            }
        }
    }

    /// The work is over with `result`, the run's own (`merge --wait`).
    pub(super) fn end_with(&mut self, work: Box<Work>, result: crate::result::BayResult) -> Placed {
        drop(work);
        self.mine = None;
        self.forget_all_but_notices();
        self.finish(result);
        Placed(())
    }

    /// The operation ended by this runner's push.
    fn finished(&mut self, work: Box<Work>) -> Placed {
        self.mine = None;
        self.forget_all_but_notices();
        if self.cfg.mode == super::RunMode::Only(work.op.clone()) {
            // `merge --wait`: the result comes from the record, with this runner's own steps
            // folded in, as every reader's does.
            if let Some(op) = work.record.op(&work.op) {
                self.finish(crate::report::op_result(&work.record, op));
                return Placed(());
            }
        }
        self.stage = Stage::Idle {
            next_pass: self.now,
        };
        Placed(())
    }

    /// Learns why a write was refused and goes on.
    fn on_verified(
        &mut self,
        mut work: Box<Work>,
        write: Write,
        spec: FetchSpec,
        result: Result<crate::machine::Refs, crate::machine::Fault>,
    ) -> Placed {
        work.writing = false;
        let Ok(fetched) = result else {
            self.main_in_doubt = true;
            let backoff = self.cfg.backoff_ms;
            return self.drop_work(work, backoff);
        };
        let (log, notes) = (
            refs::log(&self.cfg.runner),
            refs::evidence(&self.cfg.runner),
        );
        let before = (self.refs.get(&log).cloned(), self.refs.get(&notes).cloned());
        spec.apply(&mut self.refs, fetched);
        self.saw_main(&spec);
        self.tips_known = true;
        let log_moved = self.refs.get(&log) != before.0.as_ref();
        let notes_moved = self.refs.get(&notes) != before.1.as_ref();
        let change = work.record.change.clone();
        let chain_moved = self.refs.get(&refs::change(&change)) != Some(&work.tip);
        let landed = self.refs.contains_key(&refs::landed(&change));
        if let Some(end) = self.marked_merged(&change).filter(|_| !chain_moved) {
            // No writer moved the chain, yet the change is marked merged: never merge it twice.
            return self.end(work, end);
        }
        if chain_moved || landed {
            #[cfg(feature = "mutants")]
            if !landed
                && self
                    .mutant_ignores_fence(&mut work, self.refs.get(&refs::change(&change)).cloned())
            {
                return self.write(work, write);
            }
            // Fenced: another writer moved the change. This runner writes nothing more to it.
            self.mine = None;
            return self.drop_work(work, 0);
        }
        let main_now = self.refs.get(&self.main_ref()).cloned();
        match write {
            write if write.merges() && main_now.as_ref() != Some(&work.base) => {
                let Some(main_now) = main_now else {
                    return self.release(work, None, "main is gone from the remote".into());
                };
                work.main_moved += 1;
                work.base = main_now;
                work.phase = std::mem::replace(&mut work.phase, Phase::Unbuilt).main_moved();
                if work.main_moved <= 1 {
                    // Main moved: build again on the new main, under the policy there, once.
                    self.read_policy(work)
                } else {
                    self.release(
                        work,
                        Some(ReasonCode::MainMoved),
                        "main moved twice during the push".into(),
                    )
                }
            }
            // Only this runner's log or notes moved (another process under the same name, or a
            // tip this runner had not read): write the same again on the new tips. The chain
            // and main are as they were, so nothing else changes, and the candidate stands.
            write if (log_moved && write.ends()) || (notes_moved && write.notes()) => {
                self.write(work, write)
            }
            // The chain did not move, so the refusal came from elsewhere (our evidence notes were
            // behind, or the remote refused for its own reasons): drop and let the pass retry.
            _ => {
                let backoff = self.cfg.backoff_ms;
                self.drop_work(work, backoff)
            }
        }
    }
}

impl Checking {
    /// What follows the recorded pass of run `index`: the next run, or once it was the last
    /// one the merge, unless an approval is owed, which is asked next.
    pub fn after_pass(&self, index: usize, unsigned: &'static str) -> Then {
        if index + 1 >= self.plan.runs.len() && self.approvals.is_empty() {
            Then::Merge(Box::new(self.merge(unsigned)))
        } else {
            Then::Continue
        }
    }

    /// The check of run `index` of the plan.
    pub fn spec(&self, index: usize) -> crate::policy::CheckSpec {
        self.plan.runs[index].spec.clone()
    }

    /// The merge of the candidate, once its checks are recorded: what its outcome names is
    /// the candidate, and what the plan spared or could not cover (`not_required`,
    /// `post_checks`, `coverage_gaps` with quarantines and flaky checks).
    pub fn merge(&self, unsigned: &'static str) -> Merge {
        let built = &self.candidate.built;
        let trust = if built.signed {
            crate::trust::Trust::Signed.as_str()
        } else {
            unsigned
        };
        let merged = (
            built.id.clone(),
            built.commit.clone(),
            built.tree.clone(),
            self.base.commit.clone(),
        );
        let mut detail = Merged::new(merged, &self.plan, trust);
        detail.carried = self.carried_checks();
        detail.coverage_gaps.extend(self.gaps.iter().cloned());
        Merge {
            commit: built.commit.clone(),
            detail,
        }
    }
}

/// A check refusal says how far its evidence is trusted, as a merge does: `unsigned` (or
/// `approvals` under a registry that signs only approvals) until bay judges its evidence's
/// signatures.
fn with_trust(
    mut detail: serde_json::Value,
    reason: Option<ReasonCode>,
    unsigned: &str,
) -> serde_json::Value {
    let check = matches!(
        reason,
        Some(ReasonCode::CheckFailed | ReasonCode::CheckUnknown | ReasonCode::CheckFlaky)
    );
    if let (true, serde_json::Value::Object(map)) = (check, &mut detail) {
        map.insert("trust".into(), serde_json::Value::from(unsigned));
    }
    detail
}

/// The last step commit a push wrote, if it wrote any.
pub(super) fn last_written(report: &PushReport) -> Option<Oid> {
    report.steps.first().and_then(|steps| steps.last()).cloned()
}

/// Text that goes into a single trailer or subject line.
/// The message of candidate `candidate` of `op`, an operation of the change `record` that
/// `requested_by` asked to merge: its intent, then the trailers every reader of main finds a
/// merge's change by (`Change-Id:`, the intent and actor keys of `trailers`, `Bay-Op:`,
/// `Bay-Candidate:`) and its lineage (`bay status --lineage`). Public so that a history built
/// outside a runner (the simulator's) writes main's merges exactly as a runner does.
pub fn candidate_message(
    record: &ChangeRecord,
    op: &OpId,
    requested_by: &str,
    candidate: &CandidateId,
    trailers: &crate::config::Trailers,
) -> String {
    let intent = one_line(&record.intent);
    let mut message = format!(
        "{intent}\n\nChange-Id: {change}\n{ik}: {intent}\n{ak}: {actor}\nBay-Op: {op}\nBay-Candidate: {candidate}\n",
        change = record.change,
        ik = trailers.intent,
        ak = trailers.actor,
        actor = one_line(requested_by),
    );
    // The lineage: what this change takes over, fixes or undoes (`bay status --lineage`).
    for (key, named) in [
        ("Supersedes", &record.supersedes),
        ("Fixes", &record.fixes),
        ("Reverts", &record.reverts),
    ] {
        if let Some(named) = named {
            message.push_str(&format!("{key}: {named}\n"));
        }
    }
    for first in &record.after {
        message.push_str(&format!("Bay-After: {first}\n"));
    }
    message
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
