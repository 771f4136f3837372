//! `Action::ReadStats`: what each path a change touches weighs, for `[limits]`.
//!
//! Read in-process through the clone's [`crate::reader::Reader`], as
//! `git diff-tree -r --raw --numstat --no-renames <base> <commit>` answers, without its
//! process or the `git cat-file` that sized the new blobs: the two trees are compared level by
//! level (a subtree with the same id on both sides is not read), and each path whose content,
//! mode or presence differs is measured:
//!
//! - `bytes`: the new blob's size; `None` for a deleted path, `0` for a submodule.
//! - `created`: the base has no file at the path (a file that replaced a directory too).
//! - lines: what `--numstat` counts, a Myers line diff (gix's, imara-diff's port of xdiff's,
//!   lines with their terminators so a missing final newline is a change; on long files of
//!   few distinct lines its script can be a little longer than Git's, see `tests/stats.rs`);
//!   `None` where Git prints `-` for a binary file: a NUL in the first 8000 bytes of either
//!   side, or a side over `core.bigFileThreshold` (512 MiB by default). A submodule side reads as Git shows it,
//!   `Subproject commit <id>\n`; the new side a submodule counts no lines, as before.
//!
//! Not followed: `.gitattributes` (`binary`, `-diff`, `diff=<driver>`). `diff-tree` reads them
//! from the working tree of whatever directory it runs in, not from the trees compared, so its
//! answer there depended on a checkout; here a file is binary by its bytes alone.

use std::collections::BTreeMap;

use bay_core::git::Oid;
use bay_core::limits::PathStat;
use bay_core::machine::Fault;
use gix::diff::blob::{Algorithm, Diff, InternedInput, sources::byte_lines};

use super::Repo;
use crate::gitoxide::{from_gix, gix_id};
use crate::trees::{Entry, FileChange, changed_files};

/// How far Git looks for a NUL to call a file binary (`FIRST_FEW_BYTES`).
const FIRST_FEW_BYTES: usize = 8000;

/// Git's default `core.bigFileThreshold`: a larger file is binary without being read.
const BIG_FILE_THRESHOLD: u64 = 512 * 1024 * 1024;

/// One side of a changed path, read for counting.
enum Side {
    /// Text, or nothing (an absent side is empty).
    Text(Vec<u8>),
    Binary,
}

impl Repo {
    /// The stats of each path `commit` changes against `base`, sorted by path. The files that
    /// differ are the ones `trees::changed_files` walks to, as for a candidate's changed paths.
    pub fn read_stats(&self, base: &Oid, commit: &Oid) -> Result<Vec<PathStat>, Fault> {
        let (from, to, threshold) = self.reader.with_repository("stats", |repo| {
            Ok((
                tree_of(repo, base)?,
                tree_of(repo, commit)?,
                threshold(repo),
            ))
        })?;
        let changes = changed_files(&self.reader, &from, &to)?;
        self.reader
            .with_repository("stats", |repo| measure(repo, &changes, threshold))
    }
}

/// `core.bigFileThreshold`, or Git's default.
fn threshold(repo: &gix::Repository) -> u64 {
    repo.config_snapshot()
        .integer("core.bigFileThreshold")
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(BIG_FILE_THRESHOLD)
}

/// The stats of each changed file, sorted by path.
fn measure(
    repo: &gix::Repository,
    changes: &[FileChange],
    threshold: u64,
) -> Result<Vec<PathStat>, Fault> {
    let mut stats = BTreeMap::new();
    for FileChange {
        path: raw,
        old,
        new,
    } in changes
    {
        // A name that is not UTF-8 is refused by name: read lossily, two could become one.
        let path = bay_core::paths::from_git(raw).map_err(Fault)?;
        let submodule = new.as_ref().is_some_and(Entry::is_submodule);
        let bytes = match new {
            None => None,
            Some(_) if submodule => Some(0),
            Some(entry) => {
                let id = gix_id(&entry.id)?;
                let header = repo
                    .find_header(id)
                    .map_err(|e| Fault(format!("cannot size {id} at {path}: {e}")))?;
                Some(header.size())
            }
        };
        let lines = if submodule {
            None
        } else if old.as_ref().map(|e| &e.id) == new.as_ref().map(|e| &e.id) {
            // Only the mode changed: Git counts nothing, or `-` for a binary file.
            match side(repo, new.as_ref(), threshold, path)? {
                Side::Binary => None,
                Side::Text(_) => Some((0, 0)),
            }
        } else {
            match (
                side(repo, old.as_ref(), threshold, path)?,
                side(repo, new.as_ref(), threshold, path)?,
            ) {
                (Side::Text(old), Side::Text(new)) => Some(count_lines(&old, &new)),
                _ => None,
            }
        };
        stats.insert(
            path.to_owned(),
            PathStat::new(path, bytes, old.is_none(), lines),
        );
    }
    Ok(stats.into_values().collect())
}

/// The lines `new` adds to `old` and removes from it, as Git's `--numstat` counts them.
pub(crate) fn count_lines(old: &[u8], new: &[u8]) -> (u64, u64) {
    let input = InternedInput::new(byte_lines(old), byte_lines(new));
    let diff = Diff::compute(Algorithm::Myers, &input);
    (
        u64::from(diff.count_additions()),
        u64::from(diff.count_removals()),
    )
}

/// One side of a path as Git's diff reads it.
fn side(
    repo: &gix::Repository,
    entry: Option<&Entry>,
    threshold: u64,
    path: &str,
) -> Result<Side, Fault> {
    let Some(entry) = entry else {
        return Ok(Side::Text(Vec::new()));
    };
    if entry.is_submodule() {
        return Ok(Side::Text(
            format!("Subproject commit {}\n", entry.id).into_bytes(),
        ));
    }
    let id = gix_id(&entry.id)?;
    let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read {id} at {path}: {e}"));
    let size = repo.find_header(id).map_err(|e| broken(&e))?.size();
    if size > threshold {
        return Ok(Side::Binary);
    }
    let data = repo.find_blob(id).map_err(|e| broken(&e))?.detach().data;
    if data[..data.len().min(FIRST_FEW_BYTES)].contains(&0) {
        return Ok(Side::Binary);
    }
    Ok(Side::Text(data))
}

/// The tree `treeish` (a commit or a tree) names.
fn tree_of(repo: &gix::Repository, treeish: &Oid) -> Result<Oid, Fault> {
    let id = gix_id(treeish)?;
    let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read the tree of {id}: {e}"));
    let object = repo.find_object(id).map_err(|e| broken(&e))?;
    from_gix(&object.peel_to_tree().map_err(|e| broken(&e))?.id)
}
