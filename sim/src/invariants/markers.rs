//! S15: no merge on main holds a conflict region bay wrote.
//!
//! When bay brings a draft up to main and a file conflicts, it writes marker lines into the
//! file for the agent to settle (the Git model keeps each line it ever wrote, in
//! `GitModel::markers_written`). A bay merge must never carry one of those lines onto main:
//! judged on the files the merge changed, against what the model wrote, not what any machine
//! recorded.

use bay_core::git::Oid;

use super::{Checker, Invariant};
use crate::git_model::GitModel;

impl Checker {
    /// S15 for a bay merge moving main `old -> new`.
    pub(super) fn check_conflict_markers(&mut self, at: u64, git: &GitModel, old: &Oid, new: &Oid) {
        if git.markers_written.is_empty() {
            return;
        }
        let (Some(before), Some(after)) = (git.store.files(old), git.store.files(new)) else {
            return;
        };
        for (path, blob) in after.iter() {
            if before.get(path) == Some(blob) {
                continue;
            }
            let Some(text) = git.store.blob_text(blob) else {
                continue;
            };
            if let Some(line) = text.lines().find(|l| git.markers_written.contains(*l)) {
                self.violate(
                    Invariant::NoConflictMarkers,
                    at,
                    format!(
                        "main {} holds the conflict marker {line:?} bay wrote, in {path}",
                        new.short()
                    ),
                );
            }
        }
    }
}
