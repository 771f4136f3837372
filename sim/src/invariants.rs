//! The safety invariants S1 to S20, checked after every change to the remote, and liveness.
//!
//! The checker keeps its own reading of the remote, independent of any machine's memory: what
//! main held, who held each claim, which queue places exist. It reads the record with core's
//! fold, but judges merges against the simulator's ground truth of check runs, never against
//! what a runner claims.

mod bisect;
mod compaction;
mod history;
pub mod keys;
mod markers;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bay_core::check::plan;
use bay_core::config::{CONFIG_PATH, Config, hold_on};
use bay_core::git::{Oid, refs};
use bay_core::id::{ChangeId, OpId};
use bay_core::machine::RawStep;
use bay_core::reason::ReasonCode;
use bay_core::record::{ChangeRecord, Operation, Step, StepBody};
use bay_core::red::{DEFAULT_WINDOW, PostCheck, Red};
use bay_core::result::OpState;
use bay_core::time::Timestamp;

use crate::checks::Truth;
use crate::git_model::GitModel;
use crate::remote::{Applied, NotesLog, Remote};
use crate::store::Store;

/// One broken promise.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub invariant: Invariant,
    pub at: u64,
    pub what: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// S1: each new main tip has the old tip as its first parent.
    AppendOnlyMain,
    /// S2: each change merges at most once; its marker exists iff its one merge is on main.
    Once,
    /// S3: every bay merge has passing evidence for every check its base's policy requires,
    /// and is within that policy's `[limits]`.
    MergedIsChecked,
    /// S4: no push by a runner after its claim was taken over is accepted.
    Fencing,
    /// S5: no merge rests on `unknown`, `infra_failure` or missing evidence.
    UnknownNeverPasses,
    /// S6: a recorded step is never rewritten or dropped.
    NothingLost,
    /// S7: merges follow queue order.
    Order,
    /// S8: an undo's merge reverses exactly its target: every path it changes is one the undone
    /// merge touched, set back to what it held before that merge.
    UndoReverses,
    /// S9: a held main takes only fixes and undos: no bay merge of a change that carries
    /// neither `Fixes:` nor `Reverts:` lands on a main whose config holds it, or whose hold
    /// plugin answered "held" (or nothing readable) all the time from the operation's request
    /// to its merge, in which any runner must have asked it.
    HeldTakesFixes,
    /// S10: a dependent never merges before what it names: each change named by `--after`
    /// has merged, or ended `no_effect`, when the dependent lands.
    AfterItsDependencies,
    /// S11: a red main takes no change on its red paths but the owner's fixes, undos and
    /// supersedes: no bay merge changes a path of a post check that the records on its base's
    /// window call red, unless its change names the owner.
    RedTakesOwnersFixes,
    /// S12: a runner's log only grows, one event per push, and holds exactly one event per
    /// operation it ended, written with the end: the operation ended as the event says, and a
    /// merge event names the commit the merged marker names.
    LogMatches,
    /// S13: a bisect halves a red post check's suspect range with each midpoint run, and reruns
    /// only the one failed merge left right above a pass (see `invariants::bisect`).
    BisectHalves,
    /// S14: a runner's presence names it, reads back, and goes up at most once per heartbeat
    /// on its own clock (within one incarnation: a restarted runner remembers nothing).
    PresencePerHeartbeat,
    /// S15: no bay merge puts on main a conflict marker line bay wrote into a draft.
    NoConflictMarkers,
    /// S16: a chain leaves the refs only into the index, verbatim; the index keeps every
    /// compacted change and each ended operation's outcome; no intent generation opens twice.
    CompactionKeeps,
    /// S17: at most one live holder of a lock at any time, across machines
    /// (`crate::locks`, and the main world's hook sessions, `world::locks`): no edit of a
    /// locked path is let through while another session holds its lock.
    OneLockHolder,
    /// S18: a forged signature never counts: with a registry that signs everything, every bay
    /// merge on main is signed over its own bytes by a key the registry enrolled as an
    /// executor (`invariants::keys`).
    ForgedNeverCounts,
    /// S19: a key the registry took out before the merge push never lands what it signed: the
    /// pusher read the registry after the candidate was signed, and it still enrolled the key.
    RemovedKeyNeverLands,
    /// S20: an approval counts only for the candidate it signed: a merge that owes a person's
    /// yes has one signed for its very commit.
    ApprovalForItsCandidate,
    /// Every submitted operation ends within the stated bound after the faults stop.
    Liveness,
}

impl Invariant {
    pub fn code(self) -> &'static str {
        match self {
            Invariant::AppendOnlyMain => "S1",
            Invariant::Once => "S2",
            Invariant::MergedIsChecked => "S3",
            Invariant::Fencing => "S4",
            Invariant::UnknownNeverPasses => "S5",
            Invariant::NothingLost => "S6",
            Invariant::Order => "S7",
            Invariant::UndoReverses => "S8",
            Invariant::HeldTakesFixes => "S9",
            Invariant::AfterItsDependencies => "S10",
            Invariant::RedTakesOwnersFixes => "S11",
            Invariant::LogMatches => "S12",
            Invariant::BisectHalves => "S13",
            Invariant::PresencePerHeartbeat => "S14",
            Invariant::NoConflictMarkers => "S15",
            Invariant::CompactionKeeps => "S16",
            Invariant::OneLockHolder => "S17",
            Invariant::ForgedNeverCounts => "S18",
            Invariant::RemovedKeyNeverLands => "S19",
            Invariant::ApprovalForItsCandidate => "S20",
            Invariant::Liveness => "L",
        }
    }

    pub fn is_safety(self) -> bool {
        self != Invariant::Liveness
    }
}

/// What the checker knows of one chain.
#[derive(Clone, Debug)]
struct ChainSeen {
    /// Shared with the store's fold of the chain's tip: a push reads the chain it moved, and a
    /// copy of its record at each read cost more than the checks on it.
    record: Option<Arc<ChangeRecord>>,
}

/// The checker's own reading of the remote.
#[derive(Debug)]
pub struct Checker {
    main_ref: String,
    chains: BTreeMap<ChangeId, ChainSeen>,
    /// Changes with a bay merge on main, and the commit.
    merged_on_main: BTreeMap<ChangeId, Oid>,
    /// Those of them not compacted into the index, which must each keep a merged marker (S2):
    /// kept apart so that S2 costs each push the markers, not every merge of a long history.
    marked: BTreeSet<ChangeId>,
    /// Every queue place ever made: seq to request step.
    /// The queue places on the remote now, and the operation each holds.
    places: BTreeMap<u64, OpId>,
    /// Every operation ever requested, with the time its request landed.
    pub submitted: BTreeMap<OpId, u64>,
    /// Requests `merge --wait` wrote for its runner to carry, and when: its runner reads the
    /// remote from then on, before the request lands with its first write.
    written_requests: BTreeMap<OpId, u64>,
    /// When each operation ended, by the remote's record.
    pub ended: BTreeMap<OpId, (u64, OpState, Option<ReasonCode>)>,
    pub violations: Vec<Violation>,
    pub merges: u64,
    /// Batches merged (main moved by more than one merge at once), and their members.
    pub batches: u64,
    pub batch_members: u64,
    /// Undo merges S8 checked.
    pub undo_merges: u64,
    /// Merges S9 saw land on a held main.
    pub held_merges: u64,
    /// When each operation was last claimed: what its runner knew then decides S7.
    claimed_at: BTreeMap<OpId, u64>,
    /// When each operation waited for a person's yes (released `APPROVAL_PENDING`, held by no
    /// one): from, and until (none while it still waits).
    approval_waits: BTreeMap<OpId, Vec<(u64, Option<u64>)>>,
    /// When each change merged.
    merged_at: BTreeMap<ChangeId, u64>,
    /// From when main was held, and from when it was not, as main moved.
    held_since: Vec<(u64, bool)>,
    /// When each post check record went up, in order.
    post_records: Vec<u64>,
    /// Merges S11 judged onto a main with red post checks, and those it could not judge
    /// because a record arrived while their operation was in flight.
    pub red_merges: u64,
    pub red_unjudged: u64,
    /// Every operation some runner's log has an event for, and that runner.
    logged: BTreeMap<OpId, String>,
    /// Operations a runner's outcome step ended in the push being checked: each must have its
    /// event by the end of that push.
    ended_by_runner: Vec<OpId>,
    /// Log events S12 checked.
    pub events: u64,
    /// From when the hold plugin (when main's config sets one) holds main, and from when not.
    plugin_held_since: Vec<(u64, bool)>,
    /// What S13 keeps.
    pub bisect: bisect::BisectWatch,
    /// Per runner incarnation, the `last_pass` (its own clock) of its last presence.
    presences: BTreeMap<(String, u64), Timestamp>,
    /// Presences S14 checked.
    pub presences_checked: u64,
    /// Changes whose chain someone pointed where bay cannot read (the `corrupt` fault): their
    /// operations can never end and are passed over by every runner, so liveness and S7 leave
    /// them out, and what waits on them with `--after`.
    unreadable_changes: BTreeSet<ChangeId>,
    /// Evidence notes refs someone pointed at a blob (the `corrupt` fault), with when and the
    /// tip each held before, until the heal mends them: what a runner read there just before
    /// still stands for what it merged on, and one that read after read nothing there.
    notes_replaced: BTreeMap<String, (u64, Option<Oid>)>,
    /// The tip main held when someone deleted it (the `corrupt` fault), until it is back.
    main_deleted: Option<Oid>,
    /// Operations whose queue place someone pointed where bay cannot read: passed over until
    /// their agent asks again, which ends them.
    lost_places: BTreeSet<OpId>,
    /// Merged markers someone made by hand for changes that never merged: S2 leaves them out
    /// (the runner ends such a change's operation `CHANGE_ALREADY_MERGED`).
    forged_markers: BTreeSet<ChangeId>,
    /// What S16 keeps.
    pub compaction: compaction::CompactionWatch,
}

impl Checker {
    pub fn new(main: &str) -> Checker {
        Checker {
            main_ref: refs::main(main),
            chains: BTreeMap::new(),
            merged_on_main: BTreeMap::new(),
            marked: BTreeSet::new(),
            places: BTreeMap::new(),
            submitted: BTreeMap::new(),
            written_requests: BTreeMap::new(),
            ended: BTreeMap::new(),
            violations: Vec::new(),
            merges: 0,
            batches: 0,
            batch_members: 0,
            undo_merges: 0,
            held_merges: 0,
            claimed_at: BTreeMap::new(),
            approval_waits: BTreeMap::new(),
            merged_at: BTreeMap::new(),
            post_records: Vec::new(),
            red_merges: 0,
            red_unjudged: 0,
            held_since: Vec::new(),
            logged: BTreeMap::new(),
            ended_by_runner: Vec::new(),
            events: 0,
            plugin_held_since: Vec::new(),
            bisect: bisect::BisectWatch::default(),
            presences: BTreeMap::new(),
            presences_checked: 0,
            unreadable_changes: BTreeSet::new(),
            notes_replaced: BTreeMap::new(),
            main_deleted: None,
            lost_places: BTreeSet::new(),
            forged_markers: BTreeSet::new(),
            compaction: compaction::CompactionWatch::default(),
        }
    }

    /// Someone pointed the evidence notes ref `name` at a blob at `at`; it held `before`. What
    /// a runner reads there changes as a push would change it (S13).
    pub fn notes_replaced(&mut self, at: u64, name: String, before: Option<Oid>) {
        self.notes_moved_by_hand(at, &name);
        self.notes_replaced.insert(name, (at, before));
    }

    /// The evidence notes ref `name` holds its own tip again, from `at`.
    pub fn notes_mended(&mut self, at: u64, name: &str) {
        self.notes_moved_by_hand(at, name);
        self.notes_replaced.remove(name);
    }

    /// Someone moved the evidence notes ref `name` outside bay at `at`: S13 leaves unjudged a
    /// run whose read it may have changed, as it does for another producer's push.
    fn notes_moved_by_hand(&mut self, at: u64, name: &str) {
        if let Some(producer) = name.strip_prefix(refs::EVIDENCE) {
            self.evidence_pushed(at, producer);
        }
    }

    /// Each producer's evidence notes tip as runners could last have read it: one someone
    /// pointed at a blob counts as the tip it replaced. A runner that read a record there a
    /// moment before merges on it, and no push can lease a ref it does not move.
    fn evidence_tips(&self, remote: &Remote) -> Vec<Oid> {
        remote
            .refs
            .iter()
            .filter(|(name, _)| name.starts_with(refs::EVIDENCE))
            .filter_map(|(name, tip)| self.evidence_as_read(name, tip))
            .collect()
    }

    /// The evidence notes ref `name`, which holds `tip`, as runners could last have read it
    /// (see [`Checker::evidence_tips`]).
    fn evidence_as_read(&self, name: &str, tip: &Oid) -> Option<Oid> {
        match self.notes_replaced.get(name) {
            Some((_, before)) => before.clone(),
            None => Some(tip.clone()),
        }
    }

    /// Whether someone pointed the evidence notes ref `name` at a blob well before `read`, and
    /// it still points there: a runner that read it then read no records.
    fn notes_replaced_before(&self, name: &str, read: u64) -> bool {
        self.notes_replaced
            .get(name)
            .is_some_and(|(at, _)| at + bisect::READ_MARGIN_MS < read)
    }

    /// Someone deleted main, which held `tip`; `None`: it is back.
    pub fn main_deleted(&mut self, tip: Option<Oid>) {
        self.main_deleted = tip;
    }

    /// Someone pointed the chain of `change` where bay cannot read it.
    pub fn chain_corrupted(&mut self, change: ChangeId) {
        self.unreadable_changes.insert(change);
    }

    /// Someone pointed queue place `seq` where bay cannot read it: the place holds no
    /// operation from now on, and its operation waits for its agent to ask again.
    pub fn place_corrupted(&mut self, seq: u64) {
        if let Some(op) = self.places.remove(&seq) {
            self.lost_places.insert(op);
        }
    }

    /// Someone made the merged marker of `change`, which never merged.
    pub fn marker_forged(&mut self, change: ChangeId) {
        self.forged_markers.insert(change);
    }

    /// Whether `op` can never end by what bay does: its chain or its place was corrupted.
    fn unreadable(&self, op: &OpId) -> bool {
        self.unreadable_changes.contains(&op.change) || self.lost_places.contains(op)
    }

    /// The world's hold plugin answers from `at` on: holding main, or not.
    pub fn plugin_answers(&mut self, at: u64, held: bool) {
        self.plugin_held_since.push((at, held));
    }

    /// Whether the hold plugin answered "held" at `at`.
    fn plugin_held_at(&self, at: u64) -> bool {
        self.plugin_held_since
            .iter()
            .rev()
            .find(|(since, _)| *since <= at)
            .is_some_and(|(_, held)| *held)
    }

    /// Whether the hold plugin answered "held" at some moment from `from` to `to`.
    fn plugin_held_within(&self, from: u64, to: u64) -> bool {
        self.plugin_held_at(from)
            || self
                .plugin_held_since
                .iter()
                .any(|(at, held)| *held && (from..=to).contains(at))
    }

    /// Whether the hold plugin answered "held" at every moment from `from` to `to`.
    fn plugin_held_throughout(&self, from: u64, to: u64) -> bool {
        self.plugin_held_at(from)
            && !self
                .plugin_held_since
                .iter()
                .any(|(at, held)| !*held && (from..=to).contains(at))
    }

    fn violate(&mut self, invariant: Invariant, at: u64, what: String) {
        self.violations.push(Violation {
            invariant,
            at,
            what,
        });
    }

    /// S14, for a push by runner `pusher` in its `incarnation` whose heartbeat is
    /// `heartbeat_ms`: each presence it moved names it, reads back, and comes a heartbeat or
    /// more after the last one this incarnation wrote, by its own clock.
    pub fn presence_pushed(
        &mut self,
        at: u64,
        store: &Store,
        applied: &Applied,
        pusher: &str,
        incarnation: u64,
        heartbeat_ms: u64,
    ) {
        for moved in &applied.moves {
            let Some(runner) = refs::parse_executor(&moved.name) else {
                continue;
            };
            self.presences_checked += 1;
            let read = moved
                .new
                .as_ref()
                .and_then(|oid| store.get(oid))
                .ok_or_else(|| "gone".to_string())
                .and_then(|commit| bay_core::presence::Presence::from_message(&commit.message));
            let presence = match read {
                Ok(presence) if presence.runner == runner && runner == pusher => presence,
                other => {
                    self.violate(
                        Invariant::PresencePerHeartbeat,
                        at,
                        format!("{pusher} wrote {} as {other:?}", moved.name),
                    );
                    continue;
                }
            };
            let key = (pusher.to_string(), incarnation);
            if let Some(last) = self.presences.insert(key, presence.last_pass)
                && presence.last_pass.millis_since(last) < heartbeat_ms
            {
                self.violate(
                    Invariant::PresencePerHeartbeat,
                    at,
                    format!(
                        "{pusher} wrote its presence at {} on its clock, less than a heartbeat after {}",
                        presence.last_pass.millis(),
                        last.millis()
                    ),
                );
            }
        }
    }

    /// Checks every invariant a push (or an outside push) could break. `pusher` is the runner
    /// that pushed, if a runner did.
    pub fn after_push(
        &mut self,
        at: u64,
        git: &GitModel,
        truth: &Truth,
        applied: &Applied,
        pusher: Option<&str>,
    ) {
        let (store, remote, notes) = (&git.store, &git.remote, &git.notes);
        for moved in &applied.moves {
            if moved.name == self.main_ref {
                if let (Some(old), Some(new)) = (&moved.old, &moved.new)
                    && store
                        .get(new)
                        .is_some_and(|c| bay_trailers(&c.message).is_some())
                {
                    self.check_conflict_markers(at, git, old, new);
                }
                self.check_main_move(
                    at,
                    store,
                    remote,
                    notes,
                    truth,
                    moved.old.as_ref(),
                    moved.new.as_ref(),
                );
            } else if let Some(change) = refs::parse_change(&moved.name) {
                self.check_chain_move(
                    at,
                    store,
                    &change,
                    moved.old.as_ref(),
                    moved.new.as_ref(),
                    pusher,
                );
            } else if let Some(seq) = refs::parse_queue(&moved.name) {
                match (&moved.old, &moved.new) {
                    (None, Some(new)) => match store.step(new).as_deref().and_then(Step::op) {
                        Some(op) => {
                            self.places.insert(seq, op.clone());
                        }
                        None => self.violate(
                            Invariant::NothingLost,
                            at,
                            format!("queue place {seq} holds no request"),
                        ),
                    },
                    // A place goes only with its operation's end, in the same push.
                    (Some(_), None) => {
                        let live = self
                            .places
                            .remove(&seq)
                            .and_then(|op| self.state_of(&op))
                            .filter(|s| !s.is_terminal());
                        if let Some(state) = live {
                            self.violate(
                                Invariant::NothingLost,
                                at,
                                format!(
                                    "queue place {seq} was removed while its operation was {}",
                                    state.as_str()
                                ),
                            );
                        }
                    }
                    _ => self.violate(
                        Invariant::NothingLost,
                        at,
                        format!("queue place {seq} was moved"),
                    ),
                }
            } else if let Some(runner) = refs::parse_log(&moved.name) {
                self.check_log_move(
                    at,
                    store,
                    remote,
                    runner,
                    moved.old.as_ref(),
                    moved.new.as_ref(),
                );
            } else if let Some(producer) = moved.name.strip_prefix(refs::EVIDENCE) {
                self.check_bisect(
                    at,
                    store,
                    remote,
                    notes,
                    producer,
                    moved.old.as_ref(),
                    moved.new.as_ref(),
                );
            } else if let Some((change, ended_at)) = refs::parse_ended(&moved.name)
                && moved.old.is_some()
                && moved.new.is_none()
            {
                // Deleted: by a compaction, or as stale once its change was taken up again (S16).
                self.compaction.ended_deleted.push((change, ended_at));
            } else if let Some(change) = moved.name.strip_prefix(refs::LANDED)
                && moved.old.is_some()
            {
                match (refs::parse_landed(&moved.name), &moved.new) {
                    // Deleted: only by the compaction of its change (S16), judged below.
                    (Some(change), None) => self.compaction.markers_deleted.push(change),
                    _ => self.violate(
                        Invariant::Once,
                        at,
                        format!("the merged marker of {change} was rewritten"),
                    ),
                }
            }
        }
        self.check_compaction(at, git);
        self.check_markers(at, remote);
        // S12: the event of an end a runner wrote rides in the same push.
        for op in std::mem::take(&mut self.ended_by_runner) {
            if !self.logged.contains_key(&op) {
                let runner = pusher.unwrap_or_default();
                self.violate(
                    Invariant::LogMatches,
                    at,
                    format!("{runner} ended {op} and its log has no event of it"),
                );
            }
        }
    }

    /// S1, S3, S5 and S7 for a move of main: one merge, or a whole batch of them.
    #[allow(clippy::too_many_arguments)]
    fn check_main_move(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        notes: &NotesLog,
        truth: &Truth,
        old: Option<&Oid>,
        new: Option<&Oid>,
    ) {
        let (Some(old), Some(new)) = (old, new) else {
            return self.violate(
                Invariant::AppendOnlyMain,
                at,
                "main was created or deleted".into(),
            );
        };
        // The commits main gained, oldest first: one, or a batch's members, each on the one
        // before and the first on the old tip.
        let Some(gained) = gained(store, old, new) else {
            return self.violate(
                Invariant::AppendOnlyMain,
                at,
                format!(
                    "main moved {} -> {}, which does not stand on the old tip by first parents",
                    old.short(),
                    new.short()
                ),
            );
        };
        // Every move of main says whether it is held from now on, a person's push included:
        // a hold put in outside bay is one a runner may pass operations over for (S7).
        let held = held_at(store, old, at);
        self.held_since.push((at, held_at(store, new, at)));
        let merges: Vec<(ChangeId, OpId)> = gained
            .iter()
            .filter_map(|oid| bay_trailers(&store.get(oid)?.message))
            .collect();
        if gained.len() > 1 {
            // S1: more than one commit at once only as one whole batch, in its own order; S7:
            // its members in queue order.
            let whole = merges.len() == gained.len()
                && gained.iter().enumerate().all(|(i, oid)| {
                    store
                        .get(oid)
                        .and_then(|c| bay_core::batch::read_trailer(&c.message))
                        .is_some_and(|(_, index, size)| index == i + 1 && size == gained.len())
                });
            if !whole {
                return self.violate(
                    Invariant::AppendOnlyMain,
                    at,
                    format!(
                        "main moved {} -> {} by {} commits that are not one whole batch",
                        old.short(),
                        new.short(),
                        gained.len()
                    ),
                );
            }
            self.batches += 1;
            self.batch_members += gained.len() as u64;
            let keys: Vec<_> = merges
                .iter()
                .map(|(_, op)| self.operation(op).map(Operation::queue_key))
                .collect();
            if keys.windows(2).any(|pair| pair[0] >= pair[1]) {
                let ops: Vec<String> = merges.iter().map(|(_, op)| op.to_string()).collect();
                self.violate(
                    Invariant::Order,
                    at,
                    format!("a batch merged out of queue order: {}", ops.join(", ")),
                );
            }
        }
        if merges.is_empty() {
            return; // a commit from outside bay
        }
        let mut parent = old.clone();
        for (commit, (change, op)) in gained.iter().zip(&merges) {
            let last = commit == new;
            self.check_merge(
                at,
                store,
                remote,
                notes,
                held,
                (change, op),
                (&parent, commit),
            );
            // S3, S5: a batch's members rest on the check of its last tree, on the batch's
            // base; one merge on its own tree.
            if last {
                self.check_merge_evidence(at, store, remote, notes, truth, op, new, old);
            }
            parent = commit.clone();
        }
    }

    /// What one merge of `change`'s `op`, `old -> new`, must hold besides its evidence.
    #[allow(clippy::too_many_arguments)]
    fn check_merge(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        notes: &NotesLog,
        held: bool,
        (change, op): (&ChangeId, &OpId),
        (old, new): (&Oid, &Oid),
    ) {
        self.merges += 1;
        if !self.compacted(change) {
            self.marked.insert(change.clone());
        }
        if let Some(earlier) = self.merged_on_main.insert(change.clone(), new.clone()) {
            self.violate(
                Invariant::Once,
                at,
                format!(
                    "{change} merged twice: {} and {}",
                    earlier.short(),
                    new.short()
                ),
            );
        }
        // Every push that moves main asks the plugin first, after the request landed: one that
        // held main all that time cannot have let an ordinary change through.
        let plugin = plugin_at(store, old);
        let requested = self.requested_at(op).unwrap_or(at);
        let plugin_held = plugin && self.plugin_held_throughout(requested, at);
        let held_now = held || (plugin && self.plugin_held_at(at));
        self.merged_at.insert(change.clone(), at);
        self.check_caps(at, store, op, old, new);
        self.check_order(at, op);
        self.check_undo(at, store, remote, change, old, new);
        self.check_hold(at, change, held || plugin_held, held_now);
        self.check_red(at, store, remote, notes, change, op, old, new);
        self.check_dependencies(at, remote, change);
    }

    /// Whether each change `change` names with `--after` has merged (its marker is on the
    /// remote) or ended `no_effect`, by the checker's reading. An operation of it that ended
    /// `no_effect` counts even when someone took the change up again since: its work was on
    /// main then, and the runner that read that end cannot lease the named change's chain
    /// while it merges.
    fn dependencies_met(&self, remote: &Remote, change: &ChangeId) -> bool {
        let Some(record) = self.chains.get(change).and_then(|c| c.record.as_ref()) else {
            return true;
        };
        record.after.iter().all(|first| {
            remote.refs.contains_key(&refs::landed(first))
                || self.compacted(first)
                || self
                    .chains
                    .get(first)
                    .and_then(|c| c.record.as_ref())
                    .is_some_and(|r| r.ops.iter().any(|op| op.state == OpState::NoEffect))
        })
    }

    /// S10: what the merged change named with `--after` is all on main (or ended `no_effect`).
    fn check_dependencies(&mut self, at: u64, remote: &Remote, change: &ChangeId) {
        if !self.dependencies_met(remote, change) {
            self.violate(
                Invariant::AfterItsDependencies,
                at,
                format!("{change} merged before a change it names with --after"),
            );
        }
    }

    /// Whether `change` fixes or undoes another, by its record (`None` when it is unread).
    fn fixes_or_reverts(&self, change: &ChangeId) -> Option<bool> {
        self.chains
            .get(change)
            .and_then(|chain| chain.record.as_ref())
            .map(|record| record.fixes_or_undoes())
    }

    /// A post check record went up at `at`.
    /// `merge --wait` wrote the request of `op` at `at`, for its runner to carry.
    pub fn request_written(&mut self, op: OpId, at: u64) {
        self.written_requests.entry(op).or_insert(at);
    }

    /// When `op`'s runner could first have read the remote for it: when its request landed,
    /// or was written for its runner to carry, whichever came first.
    fn requested_at(&self, op: &OpId) -> Option<u64> {
        let landed = self.submitted.get(op).copied();
        let written = self.written_requests.get(op).copied();
        landed.into_iter().chain(written).min()
    }

    pub fn post_recorded(&mut self, at: u64, producer: &str) {
        self.post_records.push(at);
        self.evidence_pushed(at, producer);
    }

    /// S11: no post check the records on the base's window call red covers a path the merge
    /// changes, unless the change fixes, undoes or supersedes its owner. The runner judges red
    /// after the request, so only records that went up before it count; a merge whose
    /// operation saw a record arrive in flight is left unjudged, since a later record may
    /// have cleared the red the runner then read.
    #[allow(clippy::too_many_arguments)]
    fn check_red(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        notes: &NotesLog,
        change: &ChangeId,
        op: &OpId,
        old: &Oid,
        new: &Oid,
    ) {
        let Some(policy) = store.policy(old, plan::POLICY_PATH).and_then(Result::ok) else {
            return;
        };
        let checks = PostCheck::of(&policy);
        if checks.is_empty() {
            return;
        }
        let requested = self.requested_at(op).unwrap_or(0);
        if self.post_records.iter().any(|t| *t > requested && *t <= at) {
            self.red_unjudged += 1;
            return;
        }
        let mut window = Vec::new();
        let mut next = Some(old.clone());
        while let Some(commit) = next.filter(|_| window.len() < DEFAULT_WINDOW as usize) {
            let Some(read) = store.get(&commit) else {
                break;
            };
            next = read.parents.first().cloned();
            window.push(RawStep {
                oid: commit,
                message: read.message.to_string(),
            });
        }
        let lines: Vec<String> = self
            .evidence_tips(remote)
            .iter()
            .flat_map(|tip| {
                window
                    .iter()
                    .flat_map(|raw| notes.records(tip, &raw.oid))
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        let red = Red::judge(&checks, &window, &lines, DEFAULT_WINDOW);
        if red.red.is_empty() {
            return;
        }
        self.red_merges += 1;
        let changed: Vec<String> = store
            .stats(old, new)
            .unwrap_or_default()
            .into_iter()
            .map(|stat| stat.path)
            .collect();
        let exempt: Vec<ChangeId> = self
            .chains
            .get(change)
            .and_then(|chain| chain.record.as_ref())
            .map(|r| {
                [&r.fixes, &r.reverts, &r.supersedes]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if let Some(blocking) = red.blocking(&changed, &exempt).first() {
            self.violate(
                Invariant::RedTakesOwnersFixes,
                at,
                format!(
                    "{change} merged onto a main where {} is red on paths it changes ({changed:?})",
                    blocking.check.id
                ),
            );
        }
    }

    /// S9: the config at the merge's base holds main (`held`: by a window, or by a plugin that
    /// held it all along), and the change neither fixes nor undoes another. A fix or undo that
    /// lands while main is held (`held_now`) is counted.
    fn check_hold(&mut self, at: u64, change: &ChangeId, held: bool, held_now: bool) {
        let fixes = self.fixes_or_reverts(change) == Some(true);
        self.held_merges += u64::from(held_now && fixes);
        if held && !fixes {
            self.violate(
                Invariant::HeldTakesFixes,
                at,
                format!("{change} merged onto a held main, fixing and undoing nothing"),
            );
        }
    }

    /// S8: when the merged change undoes another (`reverts` in its start), each path the merge
    /// changes is one the undone merge touched, and it now holds what that merge's parent held.
    fn check_undo(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        change: &ChangeId,
        old: &Oid,
        new: &Oid,
    ) {
        let Some(target) = self
            .chains
            .get(change)
            .and_then(|chain| chain.record.as_ref())
            .and_then(|record| record.reverts.clone())
        else {
            return;
        };
        self.undo_merges += 1;
        // Its marker, or, once compacted, the merge the checker saw land.
        let undone = remote
            .refs
            .get(&refs::landed(&target))
            .or_else(|| {
                self.merged_on_main
                    .get(&target)
                    .filter(|_| self.compacted(&target))
            })
            .cloned();
        let Some(undone) = undone else {
            return self.violate(
                Invariant::UndoReverses,
                at,
                format!("{change} undid {target}, which has no merge on main"),
            );
        };
        let before = store
            .get(&undone)
            .and_then(|commit| commit.parents.first().cloned());
        let files = |commit: Option<&Oid>| {
            commit
                .and_then(|commit| store.files(commit))
                .map(|files| (*files).clone())
                .unwrap_or_default()
        };
        let (undone, before) = (files(Some(&undone)), files(before.as_ref()));
        let (base, merged) = (files(Some(old)), files(Some(new)));
        let wrong: Vec<&String> = base
            .keys()
            .chain(merged.keys())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter(|path| base.get(*path) != merged.get(*path))
            .filter(|path| {
                undone.get(*path) == before.get(*path) || merged.get(*path) != before.get(*path)
            })
            .collect();
        if !wrong.is_empty() {
            self.violate(
                Invariant::UndoReverses,
                at,
                format!(
                    "{change} undid {target} but changed {wrong:?} other than back to before it"
                ),
            );
        }
    }

    /// S3 and S5: the merged tree passed every check the policy at its base requires, by
    /// recorded evidence on exactly its inputs, that tree on its base's tree (S3: a record
    /// made on another base, as an early run on a prediction main missed is, never counts),
    /// that rests on an honest pass (S5).
    #[allow(clippy::too_many_arguments)]
    fn check_merge_evidence(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        notes: &NotesLog,
        truth: &Truth,
        op: &OpId,
        merged: &Oid,
        base: &Oid,
    ) {
        let tree = store
            .get(merged)
            .map(|c| c.tree.clone())
            .expect("a merged commit is in the store");
        let policy = store.policy(base, ".bay/policy.toml");
        let policy = match policy {
            Some(Ok(policy)) => policy,
            Some(Err(e)) => {
                return self.violate(
                    Invariant::MergedIsChecked,
                    at,
                    format!("{op} merged under an invalid policy: {e}"),
                );
            }
            None => {
                return self.violate(
                    Invariant::MergedIsChecked,
                    at,
                    format!("{op} merged with no policy at its base"),
                );
            }
        };
        // The checks its plan required: the same plan the runner makes, from the paths the
        // merge changed and, when it changed the checks, its own policy.
        let files = |commit: &Oid| {
            store
                .files(commit)
                .map(|f| (*f).clone())
                .unwrap_or_default()
        };
        let (before, after) = (files(base), files(merged));
        let changed: Vec<String> = before
            .keys()
            .chain(after.keys())
            .filter(|path| before.get(*path) != after.get(*path))
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let own = store.policy(merged, plan::POLICY_PATH).map(|parsed| {
            parsed
                .map(|policy| (*policy).clone())
                .map_err(|e| e.to_string())
        });
        let planned = match plan::plan(&policy, own, &changed, "1970-01-01") {
            Ok(planned) => planned,
            Err(why) => {
                return self.violate(
                    Invariant::MergedIsChecked,
                    at,
                    format!("{op} merged a change its plan refuses: {why}"),
                );
            }
        };
        // The checks a baseline comparison let through, as the merge's outcome names them.
        let outcome = remote
            .get(&refs::change(&op.change))
            .and_then(|tip| store.fold(tip)?.ok())
            .and_then(|record| record.op(op).and_then(|o| o.outcome.clone()));
        let baseline_gap = |check: &str| {
            outcome.as_ref().is_some_and(|outcome| {
                outcome.detail["coverage_gaps"]
                    .as_array()
                    .is_some_and(|gaps| {
                        gaps.iter().any(|gap| {
                            gap["check"] == check && gap.get("baseline_failures").is_some()
                        })
                    })
            })
        };
        let base_tree = store.get(base).map(|c| c.tree.clone());
        let tips = self.evidence_tips(remote);
        for check in planned.runs.iter().map(|run| &run.spec) {
            let evidence = |verdict: &str| {
                tips.iter().any(|tip| {
                    notes.records(tip, &tree).any(|record| {
                        records_verdict(record, &check.id, &tree, base_tree.as_ref(), verdict)
                    })
                })
            };
            let baselined = check.baseline.is_some() && baseline_gap(&check.id);
            let recorded = evidence("pass") || (baselined && evidence("product_failure"));
            if !recorded {
                self.violate(
                    Invariant::MergedIsChecked,
                    at,
                    format!(
                        "{op} merged tree {} without a passing record of {}",
                        tree.short(),
                        check.id
                    ),
                );
            }
            // A pass rests on an honest pass; failures the base shares rest on a failure of
            // the same check on the base.
            let rests = if baselined {
                base_tree
                    .as_ref()
                    .is_some_and(|base| truth.failed_on(base, &check.id))
            } else {
                // A check that declares its read set rests as well on an honest pass of the
                // same files in another tree: a carried record's (`footprint = true`).
                truth.honestly_passed(&tree, &check.id)
                    || truth.honestly_passed_read_set(store, &tree, check)
            };
            if !rests {
                self.violate(
                    Invariant::UnknownNeverPasses,
                    at,
                    format!(
                        "{op} merged tree {}, which {} never honestly passed",
                        tree.short(),
                        check.id
                    ),
                );
            }
        }
    }

    /// S3: a merge is within its base policy's caps, by the simulator's own measure of the
    /// merge against its first parent (for a batch's member, the member before it).
    fn check_caps(&mut self, at: u64, store: &Store, op: &OpId, old: &Oid, new: &Oid) {
        let Some(Ok(policy)) = store.policy(old, ".bay/policy.toml") else {
            return; // judged with the evidence: a merge under no policy, or an invalid one
        };
        let stats = store.stats(old, new).unwrap_or_default();
        if let Some(too_large) = policy.limits.judge(&stats) {
            self.violate(
                Invariant::MergedIsChecked,
                at,
                format!(
                    "{op} merged over the caps of its base's policy: {}",
                    bay_core::detail::Detail::to_json(&too_large)
                ),
            );
        }
    }

    /// Whether `other` may have looked waiting to a runner that read the remote between
    /// `from` and `to`: main held at some time then (and it fixes and undoes nothing), or a
    /// change it names with `--after` that had not merged (nor ended `no_effect`) by `from`.
    /// A runner passes such an operation over.
    fn waiting_between(&self, other: &OpId, from: u64, to: u64) -> bool {
        let held_at_from = self
            .held_since
            .iter()
            .rev()
            .find(|(at, _)| *at <= from)
            .is_some_and(|(_, held)| *held);
        let held = held_at_from
            || self
                .held_since
                .iter()
                .any(|(at, held)| *held && (from..=to).contains(at))
            || self.plugin_held_within(from, to);
        if held && self.fixes_or_reverts(&other.change) != Some(true) {
            return true;
        }
        let Some(record) = self
            .chains
            .get(&other.change)
            .and_then(|c| c.record.as_ref())
        else {
            return false;
        };
        record.after.iter().any(|first| {
            let merged = self.merged_at.get(first).is_some_and(|at| *at <= from);
            let no_effect = self
                .chains
                .get(first)
                .and_then(|c| c.record.as_ref())
                .and_then(|r| r.ops.last())
                .and_then(|op| self.ended.get(&op.id))
                .is_some_and(|(at, state, _)| *state == OpState::NoEffect && *at <= from);
            !merged && !no_effect
        })
    }

    /// S7: every operation ahead of the merged one in queue order has ended: places in number
    /// order, where one that lost its place at the head stands behind the place it names. One
    /// that may have looked waiting (held, or for its dependencies) to the runner that claimed
    /// the merged operation, which read the remote after its request and before its claim,
    /// was passed over, and counts for nothing.
    fn check_order(&mut self, at: u64, op: &OpId) {
        let claimed = self.claimed_at.get(op).copied().unwrap_or(at);
        let requested = self.requested_at(op).unwrap_or(claimed);
        let Some(key) = self.operation(op).map(Operation::queue_key) else {
            return;
        };
        let waiting: Vec<String> = self
            .places
            .values()
            .filter(|other| {
                self.operation(other).is_some_and(|operation| {
                    !operation.state.is_terminal() && operation.queue_key() < key
                })
            })
            .filter(|other| !self.waiting_between(other, requested, claimed))
            .filter(|other| !self.unreadable_changes.contains(&other.change))
            .filter(|other| !self.awaited_approval(other, requested, claimed))
            .map(ToString::to_string)
            .collect();
        if !waiting.is_empty() {
            self.violate(
                Invariant::Order,
                at,
                format!("{op} merged ahead of {}", waiting.join(", ")),
            );
        }
    }

    /// Whether `op` waited for a person's yes at some moment between `from` and `to`: a
    /// runner that read the remote then passed it over, as it keeps its place and holds up
    /// no one.
    fn awaited_approval(&self, op: &OpId, from: u64, to: u64) -> bool {
        self.approval_waits.get(op).is_some_and(|waits| {
            waits
                .iter()
                .any(|(since, until)| *since <= to && until.is_none_or(|until| until >= from))
        })
    }

    /// An operation, as the checker last read its chain.
    fn operation(&self, op: &OpId) -> Option<&Operation> {
        self.chains.get(&op.change)?.record.as_ref()?.op(op)
    }

    /// An operation's state, as the checker last read its chain.
    fn state_of(&self, op: &OpId) -> Option<OpState> {
        let record = self.chains.get(&op.change)?.record.as_ref()?;
        Some(record.op(op)?.state)
    }

    /// S4 and S6 for a move of a chain, and bookkeeping of submissions and endings.
    fn check_chain_move(
        &mut self,
        at: u64,
        store: &Store,
        change: &ChangeId,
        old: Option<&Oid>,
        new: Option<&Oid>,
        pusher: Option<&str>,
    ) {
        self.compaction.chain_moved(change);
        let Some(new) = new else {
            // Judged once the whole push is read: only into the index (S16).
            if let Some(old) = old {
                self.chain_deleted(change, old);
            }
            return;
        };
        let before = self.chains.get(change).cloned();
        if let Some(old) = old
            && !store.is_ancestor(old, new)
        {
            self.violate(
                Invariant::NothingLost,
                at,
                format!(
                    "the chain of {change} was rewritten: {} is not in {}",
                    old.short(),
                    new.short()
                ),
            );
        }
        // S4: a runner writes to an operation only under the latest claim on it, its own. The
        // steps the push added are those past what the old and new chains share (all of the
        // new chain's own steps, when the push rewrote the chain). A culprit note is the one
        // step any runner may add, on an operation nobody holds (its lease on the tip it read
        // keeps it off a claim taken since).
        if let (Some(runner), Some(old)) = (pusher, old) {
            let (old_line, _) = store.first_parents(old, None);
            let (new_line, _) = store.first_parents(new, None);
            let shared = old_line
                .iter()
                .rev()
                .zip(new_line.iter().rev())
                .take_while(|(a, b)| a == b)
                .count();
            let held = |holder: fn(&Operation) -> Option<&String>| -> BTreeMap<OpId, String> {
                before
                    .as_ref()
                    .and_then(|b| b.record.as_ref())
                    .map(|r| {
                        r.ops
                            .iter()
                            .filter_map(|op| Some((op.id.clone(), holder(op)?.clone())))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let mut claimed = held(|op| op.claimed_by.as_ref());
            let owners = held(|op| op.owner.as_ref());
            for oid in new_line.iter().rev().skip(shared) {
                let Some(step) = store.step(oid) else {
                    continue;
                };
                let Some(op) = step.op() else { continue };
                if step.by != runner {
                    continue;
                }
                if matches!(step.body, StepBody::Outcome { .. }) {
                    self.ended_by_runner.push(op.clone());
                }
                if matches!(step.body, StepBody::Claim { .. }) {
                    claimed.insert(op.clone(), runner.to_string());
                    continue;
                }
                let holders = match step.body {
                    StepBody::Culprit { .. } => &owners,
                    _ => &claimed,
                };
                if let Some(holder) = holders.get(op).filter(|holder| *holder != runner) {
                    self.violate(
                        Invariant::Fencing,
                        at,
                        format!(
                            "{runner} wrote a {} to {op} after {holder} took its claim",
                            step.kind()
                        ),
                    );
                    break;
                }
            }
        }
        // S6: the record stays readable; a chain no reader can fold holds its operations for good.
        let record = match store.fold(new) {
            Some(Ok(record)) => Some(record),
            Some(Err(error)) => {
                self.violate(
                    Invariant::NothingLost,
                    at,
                    format!("the chain of {change} no longer folds: {error}"),
                );
                None
            }
            None => {
                self.violate(
                    Invariant::NothingLost,
                    at,
                    format!("the chain of {change} holds a commit that is no step"),
                );
                None
            }
        };
        if let (Some(record), None) = (&record, old) {
            self.generation_opened(at, &record.intent, record.generation, change);
        }
        if let Some(record) = &record {
            let claims_before = |id: &OpId| {
                before
                    .as_ref()
                    .and_then(|b| b.record.as_ref())
                    .and_then(|r| r.op(id))
                    .map_or(0, |op| op.claims)
            };
            let waited_before = |id: &OpId| {
                before
                    .as_ref()
                    .and_then(|b| b.record.as_ref())
                    .and_then(|r| r.op(id))
                    .is_some_and(awaits_approval)
            };
            for op in &record.ops {
                if op.claims > claims_before(&op.id) {
                    self.claimed_at.insert(op.id.clone(), at);
                }
                match (waited_before(&op.id), awaits_approval(op)) {
                    (false, true) => self
                        .approval_waits
                        .entry(op.id.clone())
                        .or_default()
                        .push((at, None)),
                    (true, false) => {
                        if let Some(last) = self
                            .approval_waits
                            .get_mut(&op.id)
                            .and_then(|waits| waits.last_mut())
                        {
                            last.1 = Some(at);
                        }
                    }
                    _ => {}
                }
                self.submitted.entry(op.id.clone()).or_insert(at);
                if op.state.is_terminal() {
                    let reason = op.outcome.as_ref().and_then(|o| o.reason);
                    self.ended
                        .entry(op.id.clone())
                        .or_insert((at, op.state, reason));
                }
            }
            // S6: every operation once recorded is still recorded.
            if let Some(before) = before.as_ref().and_then(|b| b.record.as_ref()) {
                for op in &before.ops {
                    if record.op(&op.id).is_none() {
                        self.violate(
                            Invariant::NothingLost,
                            at,
                            format!("{} vanished from its chain", op.id),
                        );
                    }
                }
            }
        }
        self.chains.insert(change.clone(), ChainSeen { record });
    }

    /// S12: one new event on the log's old tip, for an operation the remote's record ended
    /// just so, that no log named before; a merge's names the marker's commit.
    fn check_log_move(
        &mut self,
        at: u64,
        store: &Store,
        remote: &Remote,
        runner: &str,
        old: Option<&Oid>,
        new: Option<&Oid>,
    ) {
        let broken = |what: String| log_says(runner, what);
        let Some(new) = new else {
            return self.violate(Invariant::LogMatches, at, broken("was deleted".into()));
        };
        // The events the push appended, oldest first: one, or one per member of a batch.
        let mut appended = Vec::new();
        let mut tip = Some(new.clone());
        while tip.as_ref() != old {
            let Some(next) = &tip else {
                return self.violate(Invariant::LogMatches, at, broken("was rewritten".into()));
            };
            let Some(commit) = store.get(next) else {
                return self.violate(Invariant::LogMatches, at, broken("names no commit".into()));
            };
            if appended.len() == bay_core::batch::MAX_MEMBERS as usize {
                return self.violate(Invariant::LogMatches, at, broken("was rewritten".into()));
            }
            tip = commit.parents.first().cloned();
            appended.push(commit);
        }
        for commit in appended.into_iter().rev() {
            self.check_log_event(at, remote, runner, &commit.message);
        }
    }

    /// S12 for one event a push appended to `runner`'s log.
    fn check_log_event(&mut self, at: u64, remote: &Remote, runner: &str, message: &str) {
        let broken = |what: String| log_says(runner, what);
        let event = match bay_core::event::BayEvent::from_message(message) {
            Ok(event) => event,
            Err(why) => return self.violate(Invariant::LogMatches, at, broken(why)),
        };
        self.events += 1;
        let Some(op) = event.op.clone() else {
            return self.violate(
                Invariant::LogMatches,
                at,
                broken("an event names no op".into()),
            );
        };
        if let Some(earlier) = self.logged.insert(op.clone(), runner.to_string()) {
            return self.violate(
                Invariant::LogMatches,
                at,
                broken(format!("logs {op} again, after the log of {earlier}")),
            );
        }
        let ended = self
            .state_of(&op)
            .and_then(bay_core::event::EventKind::of_end);
        if ended != Some(event.kind) {
            return self.violate(
                Invariant::LogMatches,
                at,
                broken(format!(
                    "says {op} ended {:?}, the record says {ended:?}",
                    event.kind
                )),
            );
        }
        let marker = remote.get(&refs::landed(&op.change));
        if event.kind == bay_core::event::EventKind::Merged && event.commit.as_ref() != marker {
            self.violate(
                Invariant::LogMatches,
                at,
                broken(format!(
                    "says {op} merged as {:?}, the marker says {marker:?}",
                    event.commit
                )),
            );
        }
    }

    /// S2: the merged marker exists iff the change's merge is on main.
    fn check_markers(&mut self, at: u64, remote: &Remote) {
        let markers: BTreeSet<ChangeId> = remote
            .refs
            .range(refs::LANDED.to_string()..)
            .take_while(|(name, _)| name.starts_with(refs::LANDED))
            .filter_map(|(name, _)| ChangeId::parse(&name[refs::LANDED.len()..]).ok())
            .filter(|change| !self.forged_markers.contains(change))
            .collect();
        // A change compacted into the index keeps no marker (S16 holds the index to it).
        let on_main = &self.marked;
        let wrong: Vec<ChangeId> = markers.symmetric_difference(on_main).cloned().collect();
        for change in &wrong {
            let what = if markers.contains(change) {
                format!("{change} has a merged marker but no merge on main")
            } else {
                format!("{change} merged on main without its marker")
            };
            self.violate(Invariant::Once, at, what);
        }
    }

    /// Liveness: every operation submitted by `deadline` ended by then.
    pub fn check_liveness(&mut self, now: u64, deadline: u64) {
        let open: Vec<String> = self
            .submitted
            .keys()
            .filter(|op| !self.ended.contains_key(*op) && !self.excused(op))
            .map(ToString::to_string)
            .collect();
        if !open.is_empty() && now >= deadline {
            self.violate(
                Invariant::Liveness,
                now,
                format!("still open at the bound: {}", open.join(", ")),
            );
        }
    }

    /// Operations not ended, leaving out those that wait, as the specification says they
    /// must, on a change they name with `--after` that is still open with nothing in the queue
    /// (an agent left it blocked): none of them can end until someone acts.
    pub fn open_ops(&self) -> usize {
        self.submitted
            .keys()
            .filter(|op| !self.ended.contains_key(*op) && !self.excused(op))
            .count()
    }

    /// Whether any operation is open as [`Checker::open_ops`] counts them: the first found
    /// answers, since the world asks after every event once healed.
    pub fn any_open(&self) -> bool {
        self.submitted
            .keys()
            .any(|op| !self.ended.contains_key(op) && !self.excused(op))
    }

    /// Whether `op` may stay open for good: it waits on a stuck change it names, or it is
    /// unreadable (a record someone corrupted).
    fn excused(&self, op: &OpId) -> bool {
        self.unreadable(op) || self.waits_on_open_change(op)
    }

    /// Operations left open on a chain or a place bay cannot read.
    pub fn unreadable_open(&self) -> u64 {
        self.submitted
            .keys()
            .filter(|op| !self.ended.contains_key(*op) && self.unreadable(op))
            .count() as u64
    }

    /// The passes operations took from a record on exactly their inputs, not run again.
    pub fn reused_passes(&self) -> u64 {
        self.chains
            .values()
            .filter_map(|chain| chain.record.as_ref())
            .flat_map(|record| &record.ops)
            .flat_map(|op| &op.checks)
            .filter(|check| check.why.contains("did not run again"))
            .count() as u64
    }

    /// The passes operations carried from another candidate with the same read set.
    pub fn carried_passes(&self) -> u64 {
        self.chains
            .values()
            .filter_map(|chain| chain.record.as_ref())
            .flat_map(|record| &record.ops)
            .flat_map(|op| &op.checks)
            .filter(|check| check.why.starts_with("Carried from"))
            .count() as u64
    }

    /// Operations left waiting on a change that is open with nothing in the queue.
    pub fn dependency_waits(&self) -> u64 {
        self.submitted
            .keys()
            .filter(|op| !self.ended.contains_key(*op) && self.waits_on_open_change(op))
            .count() as u64
    }

    /// Whether `op`'s change names with `--after` a change that is stuck: not merged, not
    /// ended, and either with no live operation or waiting itself on a stuck change.
    fn waits_on_open_change(&self, op: &OpId) -> bool {
        self.stuck_behind(&op.change, &mut BTreeSet::new())
    }

    fn stuck_behind(&self, change: &ChangeId, seen: &mut BTreeSet<ChangeId>) -> bool {
        let record = |change: &ChangeId| self.chains.get(change).and_then(|c| c.record.as_ref());
        if !seen.insert(change.clone()) {
            return false;
        }
        let Some(dependent) = record(change) else {
            return false;
        };
        dependent.after.iter().any(|first| {
            // A change whose record bay cannot read may have merged or not: its dependents
            // wait, as they must, for someone to mend it; so do those of a change whose live
            // operation's place someone broke, which can never end.
            self.unreadable_changes.contains(first)
                || record(first).is_some_and(|r| {
                    !self.merged_at.contains_key(first)
                        && !r.ended()
                        && (r
                            .live_op()
                            .is_none_or(|live| self.lost_places.contains(&live.id))
                            || self.stuck_behind(first, seen))
                })
        })
    }
}

/// The change and operation a bay merge commit names in its trailers.
fn bay_trailers(message: &str) -> Option<(ChangeId, OpId)> {
    let mut change = None;
    let mut op = None;
    for line in message.lines() {
        if let Some(value) = line.strip_prefix("Change-Id: ") {
            change = ChangeId::parse(value.trim()).ok();
        } else if let Some(value) = line.strip_prefix("Bay-Op: ") {
            op = OpId::parse(value.trim()).ok();
        }
    }
    Some((change?, op?))
}

/// The commits main gained moving `old -> new`, oldest first, each the first parent of the
/// next and the first one's the old tip; `None` when `new` does not stand on `old` so within
/// the most members a batch has.
pub(crate) fn gained(store: &Store, old: &Oid, new: &Oid) -> Option<Vec<Oid>> {
    let mut gained = Vec::new();
    let mut at = new.clone();
    while &at != old {
        if gained.len() == bay_core::batch::MAX_MEMBERS as usize {
            return None;
        }
        let parent = store.get(&at)?.parents.first()?.clone();
        gained.push(at);
        at = parent;
    }
    gained.reverse();
    (!gained.is_empty()).then_some(gained)
}

/// Whether an evidence record says `verdict` for `check` on `tree`.
fn records_verdict(
    record: &str,
    check: &str,
    tree: &Oid,
    base_tree: Option<&Oid>,
    verdict: &str,
) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(record) else {
        return false;
    };
    value["check"] == check
        && value["verdict"] == verdict
        && value["candidate"]["tree"] == tree.as_str()
        && base_tree.is_some_and(|base| value["base"]["tree"] == base.as_str())
}

/// Whether main's config at `base` sets a hold plugin, which a runner asks before it merges
/// onto `base`.
fn plugin_at(store: &Store, base: &Oid) -> bool {
    Config::at_main(store.read(base, CONFIG_PATH).map(str::as_bytes))
        .is_ok_and(|config| config.hold_plugin.is_some())
}

/// Whether main's config at `base` holds main at `at` for a change that fixes and undoes
/// nothing: a hold in force, or a config that cannot be read. No config holds nothing.
fn held_at(store: &Store, base: &Oid, at: u64) -> bool {
    let config = Config::at_main(store.read(base, CONFIG_PATH).map(str::as_bytes));
    hold_on(&config, Timestamp(at), false).is_some()
}

/// Whether `op` waits for a person's yes: its claim went back `APPROVAL_PENDING` and no one
/// took it up since.
fn awaits_approval(op: &Operation) -> bool {
    op.released == Some(ReasonCode::ApprovalPending) && op.owner.is_none()
}

/// What S12 says of one runner's log.
fn log_says(runner: &str, what: String) -> String {
    format!("the log of {runner} {what}")
}
