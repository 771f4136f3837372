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
use gix::objs::tree::EntryMode;

use super::Repo;

/// How far Git looks for a NUL to call a file binary (`FIRST_FEW_BYTES`).
const FIRST_FEW_BYTES: usize = 8000;

/// Git's default `core.bigFileThreshold`: a larger file is binary without being read.
const BIG_FILE_THRESHOLD: u64 = 512 * 1024 * 1024;

/// A file entry of a tree: its mode and object.
type Leaf = (EntryMode, gix::ObjectId);

/// One side of a changed path, read for counting.
enum Side {
    /// Text, or nothing (an absent side is empty).
    Text(Vec<u8>),
    Binary,
}

impl Repo {
    /// The stats of each path `commit` changes against `base`, sorted by path.
    pub fn read_stats(&self, base: &Oid, commit: &Oid) -> Result<Vec<PathStat>, Fault> {
        self.reader
            .with_repository("stats", |repo| read_stats(repo, base, commit))
    }
}

fn read_stats(repo: &gix::Repository, base: &Oid, commit: &Oid) -> Result<Vec<PathStat>, Fault> {
    let mut changes = Vec::new();
    compare(
        repo,
        Vec::new(),
        Some(tree_of(repo, base)?),
        Some(tree_of(repo, commit)?),
        &mut changes,
    )?;
    let threshold = repo
        .config_snapshot()
        .integer("core.bigFileThreshold")
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(BIG_FILE_THRESHOLD);
    let mut stats = BTreeMap::new();
    for (raw, old, new) in changes {
        // A name that is not UTF-8 is refused by name: read lossily, two could become one.
        let path = bay_core::paths::from_git(&raw).map_err(Fault)?;
        let size = |id: gix::ObjectId| {
            repo.find_header(id)
                .map(|header| header.size())
                .map_err(|e| Fault(format!("cannot size {id} at {path}: {e}")))
        };
        let bytes = match new {
            None => None,
            Some((mode, _)) if mode.is_commit() => Some(0),
            Some((_, id)) => Some(size(id)?),
        };
        let lines = if new.is_some_and(|(mode, _)| mode.is_commit()) {
            None
        } else if old.map(|(_, id)| id) == new.map(|(_, id)| id) {
            // Only the mode changed: Git counts nothing, or `-` for a binary file.
            match side(repo, new, threshold, path)? {
                Side::Binary => None,
                Side::Text(_) => Some((0, 0)),
            }
        } else {
            match (
                side(repo, old, threshold, path)?,
                side(repo, new, threshold, path)?,
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
    leaf: Option<Leaf>,
    threshold: u64,
    path: &str,
) -> Result<Side, Fault> {
    let Some((mode, id)) = leaf else {
        return Ok(Side::Text(Vec::new()));
    };
    if mode.is_commit() {
        return Ok(Side::Text(
            format!("Subproject commit {}\n", id.to_hex()).into_bytes(),
        ));
    }
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
fn tree_of(repo: &gix::Repository, treeish: &Oid) -> Result<gix::ObjectId, Fault> {
    let id = crate::gitoxide::to_gix(treeish)
        .ok_or_else(|| Fault(format!("{treeish} is not an object id of this repository")))?;
    let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read the tree of {id}: {e}"));
    let object = repo.find_object(id).map_err(|e| broken(&e))?;
    Ok(object.peel_to_tree().map_err(|e| broken(&e))?.id)
}

/// The entries of the tree `id`, by name; none for an absent side.
fn entries(
    repo: &gix::Repository,
    id: Option<gix::ObjectId>,
) -> Result<BTreeMap<Vec<u8>, Leaf>, Fault> {
    let mut entries = BTreeMap::new();
    let Some(id) = id else {
        return Ok(entries);
    };
    let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read the tree {id}: {e}"));
    let tree = repo.find_tree(id).map_err(|e| broken(&e))?;
    for entry in gix::objs::TreeRefIter::from_bytes(&tree.data, repo.object_hash()) {
        let entry = entry.map_err(|e| broken(&e))?;
        entries.insert(entry.filename.to_vec(), (entry.mode, entry.oid.to_owned()));
    }
    Ok(entries)
}

/// Adds to `changes` each file path under `prefix` whose entry differs between the trees
/// `old` and `new`, with its entry on each side (`None` where the side has no file there).
/// A file that became a directory is a deleted file and the files under the directory.
fn compare(
    repo: &gix::Repository,
    prefix: Vec<u8>,
    old: Option<gix::ObjectId>,
    new: Option<gix::ObjectId>,
    changes: &mut Vec<(Vec<u8>, Option<Leaf>, Option<Leaf>)>,
) -> Result<(), Fault> {
    let (old, new) = (entries(repo, old)?, entries(repo, new)?);
    let names: std::collections::BTreeSet<&Vec<u8>> = old.keys().chain(new.keys()).collect();
    for name in names {
        let (a, b) = (old.get(name).copied(), new.get(name).copied());
        if a == b {
            continue;
        }
        let mut path = prefix.clone();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(name);
        let file = |leaf: Option<Leaf>| leaf.filter(|(mode, _)| !mode.is_tree());
        let tree = |leaf: Option<Leaf>| leaf.filter(|(mode, _)| mode.is_tree()).map(|l| l.1);
        if file(a).is_some() || file(b).is_some() {
            changes.push((path.clone(), file(a), file(b)));
        }
        if tree(a).is_some() || tree(b).is_some() {
            compare(repo, path, tree(a), tree(b), changes)?;
        }
    }
    Ok(())
}
