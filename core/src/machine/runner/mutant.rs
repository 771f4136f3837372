//! Deliberately broken runners, compiled only for the simulator's tests.
//!
//! Each mutant removes one guard the design relies on. The simulator must catch every one of
//! them (see `sim/tests/mutants.rs`): an invariant checker that cannot fail is a defect.

use super::Runner;
use super::work::Work;
use crate::check::CheckExit;
use crate::check::CheckRequest;
use crate::check::UnitReason;
use crate::git::Oid;
use crate::id::{ChangeId, OpId};
use crate::machine::{Expect, PushPlan};

/// One broken guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mutant {
    /// S1: pushes main with no lease, so a merge can overwrite what main gained meanwhile.
    MainWithoutLease,
    /// S2: pushes main, the marker and the outcome without the atomic flag, so one can land
    /// without the others.
    MergeNotAtomic,
    /// S3: after main moved, builds the new candidate but merges it on the old one's checks.
    ReuseChecksAfterMainMoved,
    /// S3: never measures a candidate, so a change over a cap that main's policy gained after
    /// the request merges.
    IgnoreLimits,
    /// S4: when a write is refused because the chain moved, takes the new tip and writes
    /// again, so a replaced runner still writes (and merges) after its claim was taken over.
    SkipFencing,
    /// S5: takes a check result for another tree as if it were for the candidate.
    AcceptAnyTree,
    /// S6: squashes heartbeats by replacing the previous one instead of appending.
    RewriteHeartbeat,
    /// S7: when the head is claimed by someone else, works the next place instead.
    SkipClaimedHead,
    /// Liveness: never takes over a silent claim.
    NeverTakeOver,
    /// S5: takes every failure of a `baseline = "base"` check as one the base shares, without
    /// running the check on the base.
    BaselineWithoutBase,
    /// S9: never sees a hold, so a held main takes any change.
    IgnoreHolds,
    /// S9: never asks the hold plugin, as a runner that predates it.
    IgnoreHoldPlugin,
    /// S10: takes every change named by `--after` as merged.
    IgnoreDependencies,
    /// S11: never judges red, so a change on a red post check's paths merges.
    IgnoreRed,
    /// S8: builds the candidate with current main as the merge base, so the draft's tree is
    /// taken whole and whatever main gained since the draft's base is lost (for an undo: its
    /// merge changes more than the undone merge touched).
    WholeDraft,
    /// S12: the merge event in the runner's log names the base, not the commit main moved to.
    LogWrongCommit,
    /// S12: ends operations without an event in its log.
    LogNothing,
    /// S13: bisects by walking up from the oldest suspect, one merge a run, instead of
    /// halving the range.
    BisectLinear,
    /// S15: `bay merge --wait` requests a draft without looking for the conflict markers bay
    /// left in it (the runner's config carries the mutant to the request it runs).
    IgnoreConflictMarkers,
    /// S14: writes its presence every pass, whatever the heartbeat.
    PresenceEveryPass,
    /// Liveness: a queue place it cannot read, or a change whose chain it cannot read, holds
    /// up the queue: the runner looks no further, so nothing behind it ever merges.
    StopAtUnreadable,
    /// S16: compacts onto an empty index, with no lease on the index, so each compaction
    /// drops what the ones before it held.
    CompactFromNothing,
    /// S16: takes every abandoned change's marker for a stale one and deletes it, leaving the
    /// change's refs and compacting nothing.
    AbandonedMarkersStale,
    /// S16: takes a change a start took up again after it ended short of a merge for an
    /// ended one, and compacts it while it is live.
    CompactLive,
    /// S18: takes a candidate's signature as verified whatever core's verdict, so a
    /// signature over other bytes, or by a key the registry never enrolled, lands on main.
    AcceptAnySignature,
    /// S19: reads the registry before the merge push but merges whatever it says, so a key
    /// taken out after it signed the candidate still lands on main.
    IgnoreKeyRemoval,
    /// S20: judges the approvals on a candidate by the commit the first approval record
    /// names, so a yes signed for another candidate counts for this one.
    ApprovalOfAnyCommit,
    /// S3: keys an early run (`[runner] ahead`) by its change rather than its inputs: the
    /// record hangs on the change's draft, and the head takes any pass of its operation
    /// found there, so a run on a prediction main then missed counts.
    PrecheckByChange,
    /// S5: under a registry that signs everything, reuses every record as if none needed a
    /// signature, so a pass anyone wrote in a producer's name answers a run.
    ReuseUnsigned,
    /// S5: carries a footprint pass of the operation whatever its stamp, so a record made
    /// before the files its verdict reads changed answers for the new ones.
    CarryAcrossReadSets,
    /// S7: takes a batch's members in reverse queue order, so each merges on main before the
    /// ones ahead of it.
    BatchOutOfOrder,
    /// S11: takes into a batch a member on the paths of a red post check.
    BatchIgnoresRed,
    /// S20: takes into a batch a member that owes a person's yes, which no approval answers
    /// on the batch's tree.
    BatchIgnoresApprovals,
}

impl Runner {
    fn mutant_is(&self, mutant: Mutant) -> bool {
        self.cfg.mutant == Some(mutant)
    }

    /// The members of a batch in the order a mutant builds them.
    pub(super) fn mutant_batch_order<T>(&self, mut members: Vec<T>) -> Vec<T> {
        if self.mutant_is(Mutant::BatchOutOfOrder) {
            members.reverse();
        }
        members
    }

    /// Whether a mutant reuses records whatever their signature.
    pub(super) fn mutant_reuses_unsigned(&self) -> bool {
        self.mutant_is(Mutant::ReuseUnsigned)
    }

    /// The records a mutant that carries across read sets reads: every stamped record of the
    /// operation restamped as if its read set were the candidate's.
    pub(super) fn mutant_restamp(
        &self,
        records: Vec<String>,
        checking: &super::work::Checking,
    ) -> Vec<String> {
        if !self.mutant_is(Mutant::CarryAcrossReadSets) {
            return records;
        }
        records
            .into_iter()
            .map(|line| {
                let Ok(mut record) = crate::check::EvidenceRecord::from_json(&line) else {
                    return line;
                };
                let stamp = checking.plan.runs.iter().zip(0..).find_map(|(run, index)| {
                    (run.spec.id == record.check && run.spec.environment == record.environment)
                        .then(|| checking.stamps.get(&index).cloned())
                        .flatten()
                });
                match (&record.footprint, stamp) {
                    (Some(_), Some(stamp)) => {
                        record.footprint = Some(stamp);
                        record.to_json()
                    }
                    _ => line,
                }
            })
            .collect()
    }

    /// Whether a mutant keys early runs by their change.
    pub(super) fn mutant_prechecks_by_change(&self) -> bool {
        self.mutant_is(Mutant::PrecheckByChange)
    }

    /// The passes a mutant that keys early runs by their change takes for `op`'s run of
    /// `spec`: any of its operation's, on whatever tree and base.
    pub(super) fn mutant_pass_of_op(
        &self,
        records: &[String],
        op: &crate::id::OpId,
        spec: &crate::policy::CheckSpec,
    ) -> Option<String> {
        if !self.mutant_prechecks_by_change() {
            return None;
        }
        records
            .iter()
            .filter_map(|line| crate::check::EvidenceRecord::from_json(line).ok())
            .find(|record| {
                record.op == op.to_string()
                    && record.check == spec.id
                    && record.environment == spec.environment
                    && record.verdict == crate::check::Verdict::Pass
            })
            .map(|record| record.producer)
    }

    /// The index shards a compaction builds on: none for a mutant that starts them afresh
    /// each time.
    pub(super) fn mutant_shards(&self, shards: crate::machine::Refs) -> crate::machine::Refs {
        if self.mutant_is(Mutant::CompactFromNothing) {
            return crate::machine::Refs::new();
        }
        shards
    }

    /// Whether a mutant takes an ended change's abandoned markers for stale ones.
    pub(super) fn mutant_abandoned_stale(&self, abandoned: bool) -> bool {
        abandoned && self.mutant_is(Mutant::AbandonedMarkersStale)
    }

    /// Whether a mutant takes a live change with an old marker for an ended one.
    pub(super) fn mutant_compact_live(&self, live: bool) -> bool {
        live && self.mutant_is(Mutant::CompactLive)
    }

    /// A compaction's plan, its index unleased for a mutant that starts it afresh.
    pub(super) fn mutant_compaction(&self, mut plan: PushPlan) -> PushPlan {
        if self.mutant_is(Mutant::CompactFromNothing) {
            for index in &mut plan.indexes {
                index.expect = Expect::Any;
            }
        }
        plan
    }

    /// Whether the presence goes up however recently the last one did.
    pub(super) fn mutant_presence_every_pass(&self) -> bool {
        self.mutant_is(Mutant::PresenceEveryPass)
    }

    /// The event a mutant writes to its log instead of the true one.
    pub(super) fn mutant_event(&self, mut event: crate::event::BayEvent) -> crate::event::BayEvent {
        if self.mutant_is(Mutant::LogWrongCommit) && event.base.is_some() {
            event.commit = event.base.clone();
        }
        event
    }

    /// Removes the leases and flags a mutant does without.
    pub(super) fn mutant_plan(&self, work: &Work, mut plan: PushPlan) -> PushPlan {
        if self.mutant_is(Mutant::MergeNotAtomic) {
            plan.atomic = false;
        }
        if self.mutant_is(Mutant::LogNothing) {
            plan.log = None;
        }
        if self.mutant_is(Mutant::MainWithoutLease) {
            let main = self.main_ref();
            for update in plan.updates.iter_mut().filter(|u| u.name == main) {
                update.expect = Expect::Any;
            }
        }
        if self.mutant_is(Mutant::RewriteHeartbeat) {
            // The lease stays on the real tip; the parent skips the previous heartbeat.
            for append in &mut plan.appends {
                append.expect = Expect::Is(work.tip.clone());
            }
        }
        plan
    }

    pub(super) fn heartbeat_parent(&mut self, work: &Work) -> Oid {
        let tip = work.tip.clone();
        if !self.mutant_is(Mutant::RewriteHeartbeat) {
            return tip;
        }
        // Replace the previous heartbeat of this work, if the tip is one.
        match work.last_heartbeat_parent.clone() {
            Some((heartbeat, parent)) if heartbeat == tip => parent,
            _ => tip,
        }
    }

    /// What the base failed, as the mutant that never runs the base pretends: everything.
    pub(super) fn mutant_baseline(&self, failed: &[UnitReason]) -> Option<Vec<String>> {
        self.mutant_is(Mutant::BaselineWithoutBase)
            .then(|| failed.iter().map(|unit| unit.id.clone()).collect())
    }

    /// The merge base a candidate is built on: the draft's own base, or for the mutant that
    /// takes the draft whole, current main.
    pub(super) fn mutant_merge_base(&self, work: &Work, merge_base: Oid) -> Oid {
        if self.mutant_is(Mutant::WholeDraft) {
            work.base.clone()
        } else {
            merge_base
        }
    }

    pub(super) fn mutant_ignores_dependencies(&self) -> bool {
        self.mutant_is(Mutant::IgnoreDependencies)
    }

    /// The oldest suspect instead of the midpoint, for [`Mutant::BisectLinear`].
    pub(super) fn mutant_bisect_linear(
        &self,
        check: &crate::red::RedCheck,
        next: (Oid, crate::red::BisectRun),
    ) -> (Oid, crate::red::BisectRun) {
        match (self.mutant_is(Mutant::BisectLinear), check.suspects.last()) {
            (true, Some((oldest, _))) if next.1 == crate::red::BisectRun::Midpoint => {
                (oldest.clone(), next.1)
            }
            _ => next,
        }
    }

    pub(super) fn mutant_batch_ignores_red(&self) -> bool {
        self.mutant_is(Mutant::BatchIgnoresRed)
    }

    pub(super) fn mutant_batch_ignores_approvals(&self) -> bool {
        self.mutant_is(Mutant::BatchIgnoresApprovals)
    }

    pub(super) fn mutant_ignores_red(&self) -> bool {
        self.mutant_is(Mutant::IgnoreRed)
    }

    pub(super) fn mutant_ignores_holds(&self) -> bool {
        self.mutant_is(Mutant::IgnoreHolds)
    }

    pub(super) fn mutant_ignores_hold_plugin(&self) -> bool {
        self.mutant_is(Mutant::IgnoreHoldPlugin)
    }

    pub(super) fn mutant_reuses_checks(&self, main_moved: u32) -> bool {
        self.mutant_is(Mutant::ReuseChecksAfterMainMoved) && main_moved > 0
    }

    pub(super) fn mutant_ignores_limits(&self) -> bool {
        self.mutant_is(Mutant::IgnoreLimits)
    }

    /// Judges against the tree the result claims instead of the candidate's.
    pub(super) fn mutant_request(
        &self,
        mut request: CheckRequest,
        exit: &CheckExit,
    ) -> CheckRequest {
        if self.mutant_is(Mutant::AcceptAnyTree) {
            let claimed: Option<(Oid, Oid)> =
                serde_json::from_slice::<serde_json::Value>(&exit.stdout)
                    .ok()
                    .and_then(|doc| {
                        let commit = Oid::parse(doc["exercised"]["commit"].as_str()?).ok()?;
                        let tree = Oid::parse(doc["exercised"]["tree"].as_str()?).ok()?;
                        Some((commit, tree))
                    });
            if let Some((commit, tree)) = claimed {
                request.candidate.commit = commit;
                request.candidate.tree = tree;
            }
        }
        request
    }

    pub(super) fn mutant_skips_claimed_head(&self, change: &ChangeId, op: &OpId) -> bool {
        if !self.mutant_is(Mutant::SkipClaimedHead) {
            return false;
        }
        self.record(change)
            .and_then(|record| record.op(op))
            .and_then(|operation| operation.owner.as_ref())
            .is_some_and(|owner| owner != &self.cfg.runner)
    }

    /// Whether a mutant writes again on the chain's new tip, `tip`, instead of letting go:
    /// then the work takes that tip, and a claim it holds there.
    pub(super) fn mutant_ignores_fence(&self, work: &mut Work, tip: Option<Oid>) -> bool {
        if !self.mutant_is(Mutant::SkipFencing) {
            return false;
        }
        let Some(tip) = tip else {
            return false;
        };
        work.tip = tip;
        work.claimed = true;
        true
    }

    /// Whether the mutant that lets an unreadable record hold up the queue stops at `place`.
    pub(super) fn mutant_stops_at(&self, place: &super::pass::Place) -> bool {
        self.mutant_is(Mutant::StopAtUnreadable)
            && match &place.op {
                Err(_) => true,
                Ok(op) => self.unreadable_at_tip(&op.change).is_some(),
            }
    }

    pub(super) fn mutant_never_takes_over(&self) -> bool {
        self.mutant_is(Mutant::NeverTakeOver)
    }
}

impl Runner {
    /// Whether the candidate's signature is taken as verified whatever the verdict (S18).
    pub(super) fn mutant_accepts_any_signature(&self) -> bool {
        self.cfg.mutant == Some(Mutant::AcceptAnySignature)
    }

    /// Whether the registry read before the merge push is ignored (S19).
    pub(super) fn mutant_ignores_removal(&self) -> bool {
        self.cfg.mutant == Some(Mutant::IgnoreKeyRemoval)
    }

    /// The candidate the approvals are judged for: with the S20 mutant, the commit the first
    /// approval record names, whatever candidate it hangs on.
    pub(super) fn mutant_about(
        &self,
        mut about: crate::approval::About,
        lines: &[String],
    ) -> crate::approval::About {
        if self.cfg.mutant != Some(Mutant::ApprovalOfAnyCommit) {
            return about;
        }
        let named = lines.iter().find_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            (value["kind"] == "approval")
                .then(|| Oid::parse(value["commit"].as_str()?).ok())
                .flatten()
        });
        if let Some(commit) = named {
            about.commit = commit;
        }
        about
    }
}
