//! The lineage on main: which merge reverts, supersedes or fixes which change, read from the
//! trailers bay writes on its merge commits (`Reverts:`, `Supersedes:`, `Fixes:`).
//!
//! A pair comes from one commit's message alone. A commit bay merged carries `Change-Id:` and
//! `Bay-Op:`; a trailer on any other commit is only someone's claim, and is marked so.

use serde::Serialize;

use crate::git::Oid;
use crate::id::ChangeId;

/// How a merge names an earlier change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Relation {
    Reverts,
    Supersedes,
    Fixes,
}

impl Relation {
    const ALL: [(Relation, &'static str); 3] = [
        (Relation::Reverts, "Reverts"),
        (Relation::Supersedes, "Supersedes"),
        (Relation::Fixes, "Fixes"),
    ];
}

/// The trailer keys bay writes on its merges itself, beside the repository's own keys for
/// Intent and Actor. `Change-Id:` and `Bay-Op:` are what make a commit a bay merge, so a
/// repository that named Intent or Actor after any of these would have bay misread its own
/// merges; [`is_own_trailer`] refuses them.
pub const OWN_TRAILERS: [&str; 7] = [
    "Change-Id",
    "Bay-Op",
    "Bay-Candidate",
    "Bay-After",
    "Reverts",
    "Supersedes",
    "Fixes",
];

/// Whether `key` is one of bay's own trailers, as Git compares keys (ignoring case), or starts
/// with `Bay-`, which bay keeps for the trailers it will write (`Bay-Batch:`).
pub fn is_own_trailer(key: &str) -> bool {
    OWN_TRAILERS.iter().any(|own| own.eq_ignore_ascii_case(key))
        || key
            .get(..4)
            .is_some_and(|head| head.eq_ignore_ascii_case("Bay-"))
}

/// One pair: `commit` (the merge of `change`, when bay made it) names `target` by `relation`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pair {
    pub commit: Oid,
    /// The change the commit merged, by its `Change-Id:`; `None` on a commit outside bay.
    pub change: Option<ChangeId>,
    pub relation: Relation,
    pub target: ChangeId,
    /// Whether bay merged the naming commit. Without a key registry bay cannot prove it, so
    /// it is always `true`, as the specification says; `by_bay` tells the two apart.
    pub publication: bool,
    /// The commit carries bay's merge trailers; otherwise the pair is only a claim.
    pub by_bay: bool,
}

/// The pairs one commit's message names, in the order its trailers come. A trailer whose value
/// is not a change id names nothing.
pub fn pairs(commit: &Oid, message: &str) -> Vec<Pair> {
    let trailers: Vec<(&str, &str)> = trailer_block(message)
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| (key.trim(), value.trim()))
        .collect();
    let value = |key: &str| trailers.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let change = value("Change-Id").and_then(|id| ChangeId::parse(id).ok());
    let by_bay = change.is_some() && value("Bay-Op").is_some();
    trailers
        .iter()
        .filter_map(|(key, value)| {
            let relation = Relation::ALL
                .iter()
                .find(|(_, name)| name == key)
                .map(|(relation, _)| *relation)?;
            Some(Pair {
                commit: commit.clone(),
                change: change.clone(),
                relation,
                target: ChangeId::parse(value).ok()?,
                publication: true,
                by_bay,
            })
        })
        .collect()
}

/// The change a commit merged, by its one `Change-Id:` trailer; `None` for a commit outside
/// bay (none, or more than one).
pub fn change_of(message: &str) -> Option<ChangeId> {
    bay_merge(message).map(|(change, _)| change)
}

/// What a main commit's trailers say of the merge that made it: its change, when it carries
/// exactly one `Change-Id:` (any other commit did not merge through bay), and its actor: the
/// trailer the runner writes just before `Bay-Op:`, whatever key the repository names it by.
pub fn bay_merge(message: &str) -> Option<(ChangeId, Option<String>)> {
    let lines: Vec<&str> = trailer_block(message).collect();
    let ids: Vec<&str> = lines
        .iter()
        .filter_map(|line| line.split_once(':'))
        .filter(|(key, _)| key.trim() == "Change-Id")
        .map(|(_, value)| value.trim())
        .collect();
    let [id] = ids.as_slice() else {
        return None;
    };
    let change = ChangeId::parse(id).ok()?;
    let actor = lines
        .iter()
        .position(|line| line.starts_with("Bay-Op:"))
        .and_then(|at| at.checked_sub(1))
        .and_then(|at| lines[at].split_once(':'))
        .map(|(_, value)| value.trim().to_string());
    Some((change, actor))
}

/// The last paragraph of a message, where Git keeps trailers; nothing for a one-paragraph
/// message, whose only paragraph is its subject.
fn trailer_block(message: &str) -> impl Iterator<Item = &str> {
    let paragraphs: Vec<&str> = message
        .trim_end()
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .collect();
    let last = if paragraphs.len() > 1 {
        paragraphs.last().copied()
    } else {
        None
    };
    last.into_iter().flat_map(str::lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid() -> Oid {
        Oid::parse(&"a".repeat(40)).expect("an id")
    }

    #[test]
    fn a_bay_merge_names_each_change_it_reverts_supersedes_or_fixes() {
        let message = "undo of c7k2m4qa\n\nChange-Id: bhjokbll\nBay-Op: bhjokbll.1\nSupersedes: wtjl3ocw\nReverts: c7k2m4qa\n";
        let found = pairs(&oid(), message);
        let shown: Vec<(Relation, &str, bool)> = found
            .iter()
            .map(|p| (p.relation, p.target.as_str(), p.by_bay))
            .collect();
        assert_eq!(
            shown,
            vec![
                (Relation::Supersedes, "wtjl3ocw", true),
                (Relation::Reverts, "c7k2m4qa", true)
            ]
        );
        assert!(found.iter().all(|p| p.publication));
        assert_eq!(
            found[0].change.as_ref().map(ChangeId::as_str),
            Some("bhjokbll")
        );
    }

    #[test]
    fn a_trailer_outside_bay_is_a_claim_and_prose_names_nothing() {
        let outside = pairs(&oid(), "hand fix\n\nFixes: c7k2m4qa\n");
        assert_eq!(outside.len(), 1);
        assert!(!outside[0].by_bay && outside[0].change.is_none());
        // A subject alone, a body line that only looks like a trailer, a value that is no id.
        assert!(pairs(&oid(), "Fixes: c7k2m4qa").is_empty());
        assert!(pairs(&oid(), "s\n\nFixes: c7k2m4qa\n\nthanks all").is_empty());
        assert!(pairs(&oid(), "s\n\nFixes: the login page\n").is_empty());
    }
}
