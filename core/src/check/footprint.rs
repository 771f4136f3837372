//! Footprints: which files a check's verdict reads, and when a record carries.
//!
//! A check with `footprint = true` says its verdict reads only its `paths`, else its
//! `when_paths`: its read set. With `[runner] footprint_lanes`, each of its records is stamped
//! with the digest of that read set in the candidate, and of the read set, the check's
//! `adapter` files and the policy file in the base ([`Stamp`]). A later candidate of the same
//! operation whose stamp is the same gets the pass carried: the read set the verdict rests
//! on, the program that judged it and the policy that defined it are byte for byte those of
//! the run. A check keyed by commit never carries, since its record counts for one commit.
//!
//! An entry's footprint is the union of the `when_paths` of the checks its diff requires; a
//! required check with no `when_paths` makes it the whole tree. Two footprints are disjoint
//! only where the literal prefixes of their globs show it ([`disjoint`]).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::CheckTarget;
use crate::check::plan::POLICY_PATH;
use crate::git::Oid;
use crate::glob::any_path_matches;
use crate::policy::CheckSpec;

/// One file of a tree as a read set sees it: its path, mode (in octal as Git writes it) and
/// object id. A driver lists them under the prefixes asked ([`crate::machine::Action::ReadFiles`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct TreeFile {
    pub path: String,
    pub mode: String,
    pub oid: Oid,
}

/// A footprint record's stamp: the digests of what its verdict rests on, in the candidate and
/// in its base.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Stamp {
    /// The read set in the candidate.
    pub candidate: String,
    /// The read set, the `adapter` files and the policy file in the base.
    pub base: String,
}

/// The record a carried record came from: where its note is, and when it was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Carried {
    pub producer: String,
    pub candidate: super::CommitTree,
    pub base: super::CommitTree,
    pub at: crate::time::Timestamp,
}

/// The globs whose files `spec`'s verdict reads, when it declares them (`footprint = true`)
/// and its evidence counts for a tree: its `paths`, else its `when_paths`.
pub fn read_set(spec: &CheckSpec) -> Option<&[String]> {
    if !spec.footprint || CheckTarget::of(spec).keyed_by_commit() {
        return None;
    }
    spec.paths.as_deref().or(spec.when_paths.as_deref())
}

/// What of the base besides the read set a stamp covers: the check's `adapter` and the policy.
fn base_globs(spec: &CheckSpec, read: &[String]) -> Vec<String> {
    let mut globs = read.to_vec();
    globs.extend(spec.adapter.iter().cloned());
    globs.push(POLICY_PATH.to_owned());
    globs
}

/// The prefixes under which a driver lists the files the stamps of `specs` read, in both
/// trees; empty when none of them has a read set.
pub fn prefixes<'a>(specs: impl IntoIterator<Item = &'a CheckSpec>) -> Vec<String> {
    let mut all: Vec<String> = specs
        .into_iter()
        .filter_map(|spec| read_set(spec).map(|read| base_globs(spec, read)))
        .flatten()
        .map(|glob| literal_prefix(&glob).to_owned())
        .collect();
    all.sort();
    all.dedup();
    all
}

/// `spec`'s stamp on a candidate whose files (under [`prefixes`]) are `candidate`, made on a
/// base whose files are `base`; `None` for a check that does not declare its read set.
pub fn stamp(spec: &CheckSpec, candidate: &[TreeFile], base: &[TreeFile]) -> Option<Stamp> {
    let read = read_set(spec)?;
    Some(Stamp {
        candidate: digest(read, candidate),
        base: digest(&base_globs(spec, read), base),
    })
}

/// The SHA-256 of the files of `files` that `globs` match, sorted by path, in hex.
fn digest(globs: &[String], files: &[TreeFile]) -> String {
    let mut matched: Vec<&TreeFile> = files
        .iter()
        .filter(|file| any_path_matches(globs, &file.path))
        .collect();
    matched.sort();
    matched.dedup();
    let mut hasher = Sha256::new();
    hasher.update(b"bay read set v1\n");
    for file in matched {
        // Paths hold no NUL, so each field ends unambiguously.
        for field in [file.path.as_str(), file.mode.as_str(), file.oid.as_str()] {
            hasher.update(field.as_bytes());
            hasher.update([0]);
        }
    }
    crate::id::hex(&hasher.finalize())
}

/// Whether `record` is one of `spec`'s, with any verdict, for operation `op` (as its id
/// reads), whose stamp is `stamp`, by a producer the check allows: a pass of it carries, and
/// an early run would only repeat it.
pub fn of_operation(
    record: &super::EvidenceRecord,
    spec: &CheckSpec,
    op: &str,
    stamp: &Stamp,
) -> bool {
    record.op == op
        && record.check == spec.id
        && record.environment == spec.environment
        && record.key == super::EvidenceKey::Tree
        && record.footprint.as_ref() == Some(stamp)
        && spec
            .producers
            .as_ref()
            .is_none_or(|producers| producers.contains(&record.producer))
}

/// The literal text of `glob` before anything that matches more than itself: up to the last
/// `/` before its first `*`, or the whole glob when it has none. Every path the glob matches
/// starts with it.
pub fn literal_prefix(glob: &str) -> &str {
    let glob = glob.trim_start_matches('/');
    match glob.find('*') {
        None => glob,
        Some(star) => glob[..star].rfind('/').map_or("", |slash| &glob[..=slash]),
    }
}

/// An entry's footprint: the literal prefixes of the `when_paths` of the checks `required`;
/// the whole tree (one empty prefix) when one of them has none.
pub fn of_entry<'a>(required: impl IntoIterator<Item = &'a CheckSpec>) -> Vec<String> {
    let mut prefixes = Vec::new();
    for spec in required {
        match &spec.when_paths {
            Some(globs) => prefixes.extend(globs.iter().map(|g| literal_prefix(g).to_owned())),
            None => return vec![String::new()],
        }
    }
    prefixes.sort();
    prefixes.dedup();
    prefixes
}

/// Whether two footprints (literal prefixes each) can share no path: no prefix of one starts
/// the other's. An empty footprint (no required check) shares nothing.
pub fn disjoint(one: &[String], two: &[String]) -> bool {
    one.iter().all(|a| {
        two.iter()
            .all(|b| !a.starts_with(b.as_str()) && !b.starts_with(a.as_str()))
    })
}

#[cfg(test)]
mod tests;
