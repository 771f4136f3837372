//! S16: compaction keeps every outcome. A runner may delete an ended change's chain, marker and
//! intent generation only in the push that moves the change's index shard
//! (`refs/bay/compacted/changes/<x>`) to a commit whose file for that change holds, step for step,
//! the chain it deleted; an abandoned marker otherwise only once a start took its change up
//! again. From then on every commit of that shard must keep that file, and the record it folds to must keep every ended operation's outcome as the
//! checker saw it end; and no intent's generation is ever opened twice, compacted or not.
//!
//! Judged on the checker's own reading of the Git model, decoding the index with core's reader.

use std::collections::BTreeMap;

use bay_core::compact;
use bay_core::git::{Oid, refs};
use bay_core::id::{ChangeId, intent_digest};
use bay_core::record::ChangeRecord;

use super::{Checker, Invariant};
use crate::git_model::GitModel;

/// What S16 keeps between pushes.
#[derive(Debug, Default)]
pub struct CompactionWatch {
    /// Each change the index holds, with the tip of the chain it held when compacted.
    held: BTreeMap<ChangeId, Oid>,
    /// Chains deleted by the push being checked, with the tip each had.
    deleted: Vec<(ChangeId, Oid)>,
    /// Merged markers deleted by the push being checked.
    pub(super) markers_deleted: Vec<ChangeId>,
    /// Abandoned and no-effect markers deleted by the push being checked, with the end each
    /// names.
    pub(super) ended_deleted: Vec<(ChangeId, bay_core::time::Timestamp)>,
    /// The index shards as last judged, by name.
    pub(super) shards: BTreeMap<String, Oid>,
    /// The blob of each held change's file in the index when it was last judged kept: a file
    /// unchanged since reads the same, so only the files a push changed are read again, and a
    /// history of thousands costs each index move little.
    judged: BTreeMap<ChangeId, Oid>,
    /// Every intent generation a start step opened, and its change.
    generations: BTreeMap<(String, u32), ChangeId>,
    /// Changes compacted, and of those the abandoned and the `no_effect` ones, for reports.
    pub compacted: u64,
    pub compacted_abandoned: u64,
    pub compacted_no_effect: u64,
}

impl CompactionWatch {
    /// `change` is held at `tip`, judged kept with the index's file `blob`.
    pub(super) fn keep(&mut self, change: ChangeId, tip: Oid, blob: Option<Oid>) {
        if let Some(blob) = blob {
            self.judged.insert(change.clone(), blob);
        }
        self.held.insert(change, tip);
    }

    /// `change`'s chain moved: the outcomes the index must keep of it may be more now, so its
    /// file is judged again at the next index move.
    pub(super) fn chain_moved(&mut self, change: &ChangeId) {
        self.judged.remove(change);
    }
}

impl Checker {
    /// A chain deleted by a push, to be judged once the whole push is read.
    pub(super) fn chain_deleted(&mut self, change: &ChangeId, old: &Oid) {
        self.compaction.deleted.push((change.clone(), old.clone()));
    }

    /// A start step opened `generation` of `intent` for `change`: once only, ever.
    pub(super) fn generation_opened(
        &mut self,
        at: u64,
        intent: &str,
        generation: u32,
        change: &ChangeId,
    ) {
        let key = (intent_digest(intent), generation);
        match self.compaction.generations.get(&key) {
            Some(holder) if holder != change => self.violate(
                Invariant::CompactionKeeps,
                at,
                format!(
                    "{change} opened generation {generation} of {intent:?}, which {holder} holds"
                ),
            ),
            Some(_) => {}
            None => {
                self.compaction.generations.insert(key, change.clone());
            }
        }
    }

    /// S6 and S16 once a push is read: each chain it deleted is in the index it moved to,
    /// exactly; and the index keeps every change it held, with each ended outcome.
    pub(super) fn check_compaction(&mut self, at: u64, git: &GitModel) {
        let deleted = std::mem::take(&mut self.compaction.deleted);
        let shards = git.remote.index_shards();
        for (change, tip) in deleted {
            let held = shards
                .get(&refs::index_of_change(&change))
                .map(|shard| self.compacted_read(git, shard, &change));
            match held {
                Some(Ok((read_tip, record))) if read_tip == tip => {
                    self.marked.remove(&change);
                    self.compaction.held.insert(change, tip);
                    self.compaction.compacted += 1;
                    self.compaction.compacted_abandoned += u64::from(record.abandoned);
                    self.compaction.compacted_no_effect +=
                        u64::from(!record.abandoned && record.merged().is_none());
                }
                Some(Ok((read_tip, _))) => self.violate(
                    Invariant::NothingLost,
                    at,
                    format!(
                        "the chain of {change} was deleted at {}, and the index holds it at {}",
                        tip.short(),
                        read_tip.short()
                    ),
                ),
                Some(Err(why)) => self.violate(
                    Invariant::NothingLost,
                    at,
                    format!("the chain of {change} was deleted, and the index lost it: {why}"),
                ),
                None => self.violate(
                    Invariant::NothingLost,
                    at,
                    format!("the chain of {change} was deleted with no index shard for it"),
                ),
            }
        }
        for change in std::mem::take(&mut self.compaction.markers_deleted) {
            if !self.compacted(&change) {
                self.violate(
                    Invariant::Once,
                    at,
                    format!(
                        "the merged marker of {change} was deleted, and its change not compacted"
                    ),
                );
            }
        }
        for (change, ended_at) in std::mem::take(&mut self.compaction.ended_deleted) {
            // Taken up again since the end the marker names: live now, or ended again in
            // another way or at another time (a runner that read it live may push the deletion
            // after a merge of it).
            let taken_up = git.record(&change).is_some_and(|record| {
                record.ended_at().map(|end| end.0 / 1000) != Some(ended_at.0 / 1000)
            });
            if !self.compacted(&change) && !taken_up {
                self.violate(
                    Invariant::CompactionKeeps,
                    at,
                    format!(
                        "the abandoned or no-effect marker of {change} was deleted, and its \
                         change is neither compacted nor taken up again since that end"
                    ),
                );
            }
        }
        // A shard's files are judged again only when it moved, or went.
        if shards == self.compaction.shards {
            return;
        }
        let moved = |name: &String| shards.get(name) != self.compaction.shards.get(name);
        let files: BTreeMap<&String, _> = shards
            .iter()
            .filter(|(name, _)| moved(name))
            .map(|(name, tip)| (name, git.store.files(tip).unwrap_or_default()))
            .collect();
        let blob = |change: &ChangeId| {
            let files = files.get(&refs::index_of_change(change))?;
            files.get(&compact::change_path(change)).cloned()
        };
        let due: Vec<(ChangeId, Oid)> = self
            .compaction
            .held
            .iter()
            .filter(|(change, _)| {
                let blob = blob(change);
                moved(&refs::index_of_change(change))
                    && (blob.is_none() || self.compaction.judged.get(*change) != blob.as_ref())
            })
            .map(|(change, tip)| (change.clone(), tip.clone()))
            .collect();
        for (change, tip) in due {
            let Some(shard) = shards.get(&refs::index_of_change(&change)) else {
                self.violate(
                    Invariant::CompactionKeeps,
                    at,
                    format!("the index no longer holds {change}: its shard is gone"),
                );
                continue;
            };
            match self.compacted_read(git, shard, &change) {
                Ok((read_tip, record)) if read_tip == tip => {
                    let broken = self.violations.len();
                    self.outcomes_kept(at, &change, &record);
                    if !record.ended() {
                        self.violate(
                            Invariant::CompactionKeeps,
                            at,
                            format!(
                                "{change} was compacted, and it had not ended (merged, \
                                 abandoned or no_effect)"
                            ),
                        );
                    }
                    if let Some(blob) = blob(&change).filter(|_| self.violations.len() == broken) {
                        self.compaction.judged.insert(change, blob);
                    }
                }
                Ok(_) => self.violate(
                    Invariant::CompactionKeeps,
                    at,
                    format!("the index holds another chain of {change} than it compacted"),
                ),
                Err(why) => self.violate(
                    Invariant::CompactionKeeps,
                    at,
                    format!("the index no longer holds {change}: {why}"),
                ),
            }
        }
        self.compaction.shards = shards;
    }

    /// Every operation of `change` the checker saw end keeps that outcome in `record`.
    fn outcomes_kept(&mut self, at: u64, change: &ChangeId, record: &ChangeRecord) {
        let ended: Vec<_> = self
            .ended
            .iter()
            .filter(|(op, _)| &op.change == change)
            .map(|(op, (_, state, reason))| (op.clone(), *state, *reason))
            .collect();
        for (op, state, reason) in ended {
            let kept = record
                .op(&op)
                .map(|o| (o.state, o.outcome.as_ref().and_then(|out| out.reason)));
            if kept != Some((state, reason)) {
                self.violate(
                    Invariant::CompactionKeeps,
                    at,
                    format!(
                        "{op} ended {}, and the index reads {kept:?}",
                        state.as_str()
                    ),
                );
            }
        }
    }

    /// The tip and record of `change` as the index at `index` holds it.
    fn compacted_read(
        &self,
        git: &GitModel,
        index: &Oid,
        change: &ChangeId,
    ) -> Result<(Oid, ChangeRecord), String> {
        let file = git.store.read(index, &compact::change_path(change));
        let read = compact::read_back(change, index, file.map(str::as_bytes));
        let record = compact::fold(&read)?;
        Ok((read.tip, record))
    }

    /// Whether the index holds `change`, as S16 last judged it.
    pub(super) fn compacted(&self, change: &ChangeId) -> bool {
        self.compaction.held.contains_key(change)
    }
}
