//! Conflict markers named for people.
//!
//! `git merge-tree` names the sides of a conflict by the arguments it was given, which for bay
//! are commit ids (`<<<<<<< 99fee20...`), and takes no labels. So each conflicted text file of
//! its tree is merged again by `git merge-file --object-id` from the same three blobs (the
//! stages merge-tree lists), with core's labels and the histogram diff merge-tree itself uses,
//! and the tree is rewritten with those blobs. A side that is not a regular file on both
//! sides, or a binary file, is left as merge-tree wrote it, which puts no markers in it.

use std::collections::BTreeMap;

use bay_core::conflict::Labels;
use bay_core::git::Oid;
use bay_core::machine::Fault;

use crate::git::Git;
use crate::objects::Objects;
use crate::reader::Reader;
use crate::remote::{MergeTree, Stage};
use crate::trees;

/// The merged tree with every conflicted text file relabelled, and the paths that hold
/// markers under `labels`.
pub fn relabel(
    reader: &Reader,
    git: &Git,
    objects: &Objects,
    merged: &MergeTree,
    labels: &Labels,
) -> Result<(Oid, Vec<String>), Fault> {
    let mut sides: BTreeMap<&str, [Option<&Stage>; 3]> = BTreeMap::new();
    for stage in &merged.stages {
        if let Some(slot) = usize::from(stage.stage).checked_sub(1).filter(|i| *i < 3) {
            sides.entry(stage.path.as_str()).or_default()[slot] = Some(stage);
        }
    }
    let mut edits = Vec::new();
    let mut marked = Vec::new();
    for (path, [base, ours, theirs]) in sides {
        let (Some(ours), Some(theirs)) = (ours, theirs) else {
            continue;
        };
        if !is_file(&ours.mode) || !is_file(&theirs.mode) {
            continue;
        }
        // Added on both sides: merged as if from an empty file.
        let base_blob = match base {
            Some(base) => base.blob.clone(),
            None => objects.blob(git, Vec::new())?,
        };
        let Some(blob) = merge_file(git, labels, &ours.blob, &base_blob, &theirs.blob)? else {
            continue;
        };
        // A side that changed the mode from the base's gives it, as Git's merge does.
        let mode = match base {
            Some(base) if ours.mode == base.mode => &theirs.mode,
            _ => &ours.mode,
        };
        edits.push((mode.clone(), blob, path.to_string()));
        marked.push(path.to_string());
    }
    if edits.is_empty() {
        return Ok((merged.tree.clone(), marked));
    }
    let tree = trees::edited(reader, objects, git, Some(&merged.tree), &edits)?;
    Ok((tree, marked))
}

fn is_file(mode: &str) -> bool {
    matches!(mode, "100644" | "100755")
}

/// `git merge-file --object-id`: the blob with conflict markers under `labels`, or `None` when
/// Git merges the three cleanly or will not merge them (a binary file). It exits with the
/// number of conflicts (up to 127), and 255 when it cannot merge at all.
fn merge_file(
    git: &Git,
    labels: &Labels,
    ours: &Oid,
    base: &Oid,
    theirs: &Oid,
) -> Result<Option<Oid>, Fault> {
    let out = git
        .cmd(["merge-file", "--object-id", "--diff-algorithm=histogram"])
        .args(["-L", &labels.ours, "-L", "base", "-L", &labels.theirs])
        .args([ours.as_str(), base.as_str(), theirs.as_str()])
        .output()?;
    match out.code {
        Some(1..=127) => Oid::parse(out.text().trim()).map(Some).map_err(Fault),
        Some(0) => Ok(None),
        _ if out.stderr.contains("binary") => Ok(None),
        _ => Err(Fault(format!(
            "git merge-file of {ours} and {theirs} failed: {}",
            crate::git::tail(out.stderr.as_bytes())
        ))),
    }
}
