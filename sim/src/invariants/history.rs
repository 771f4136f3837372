//! The history a seed starts from (`crate::history`), taken as legitimate: what bay did before
//! the seed is the premise, not what the seed tests. The checker learns it as if it had
//! watched it happen, so that every promise about what comes after holds the seed's machines
//! to it: a history change merges no second time (S2), its marker goes only with its
//! compaction and its index file only keeps it (S16), its intent's generation opens once
//! (S16), and an undo of it reverses its merge (S8).

use bay_core::compact;
use bay_core::git::refs;

use super::{ChainSeen, Checker};
use crate::git_model::GitModel;
use crate::history::History;

impl Checker {
    /// Learns `history`, which `git` holds now, before any machine of the seed ran.
    pub fn history(&mut self, git: &GitModel, history: &History) {
        for ended in history.changes() {
            self.generation_opened(0, &ended.intent, 1, &ended.change);
            if let Some((merge, _)) = &ended.merge {
                self.merged_on_main
                    .insert(ended.change.clone(), merge.clone());
                self.merged_at.insert(ended.change.clone(), 0);
            }
            if !history.compacted(ended) && ended.merge.is_some() {
                self.marked.insert(ended.change.clone());
            }
            if history.compacted(ended) {
                // Judged as kept: S16 judges it again once a push changes its file.
                let blob = git
                    .remote
                    .get(&refs::index_of_change(&ended.change))
                    .and_then(|shard| git.store.files(shard))
                    .and_then(|files| files.get(&compact::change_path(&ended.change)).cloned());
                self.compaction
                    .keep(ended.change.clone(), ended.tip.clone(), blob);
                continue;
            }
            let record = git
                .store
                .chain(&ended.tip)
                .and_then(|steps| bay_core::record::ChangeRecord::fold(&steps).ok())
                .map(std::sync::Arc::new);
            for op in record.iter().flat_map(|record| &record.ops) {
                let reason = op.outcome.as_ref().and_then(|o| o.reason);
                self.ended.insert(op.id.clone(), (0, op.state, reason));
            }
            self.chains
                .insert(ended.change.clone(), ChainSeen { record });
        }
        self.compaction.shards = git.remote.index_shards();
    }
}
