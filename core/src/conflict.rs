//! The conflict markers bay writes into a draft, and the judgement that they are gone.
//!
//! When `bay start <change>` (or `bay undo`) brings a draft up to main and Git cannot merge a
//! file, the file is left with Git's markers for the agent to settle, and the draft that holds
//! them is saved. bay records which files it marked and the exact opening and closing marker
//! lines it wrote, named for people (`<<<<<<< main`, `>>>>>>> change c7k2m4qa`), so that a
//! request to merge that draft while any of those lines remains is refused: an unresolved
//! conflict never reaches main. The `=======` line between the sides is not judged, since a
//! file may hold one for its own reasons.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::id::ChangeId;

/// How wide Git's markers are by default: `<<<<<<<`, `=======`, `>>>>>>>`.
const MARKER: usize = 7;

/// The names the two sides of a conflict are given, as Git prints them after the markers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Labels {
    /// Main's side (Git's "ours").
    pub ours: String,
    /// The side brought onto main (Git's "theirs").
    pub theirs: String,
}

impl Labels {
    /// A change's draft brought up to main (named `main`).
    pub fn draft(main: &str, change: &ChangeId) -> Labels {
        Labels {
            ours: main.to_owned(),
            theirs: format!("change {change}"),
        }
    }

    /// The reverse of `target`'s merge laid onto main, for its undo.
    pub fn undo(main: &str, target: &ChangeId) -> Labels {
        Labels {
            ours: main.to_owned(),
            theirs: format!("undo of {target}"),
        }
    }

    /// A view's work carried over onto a draft of `change` it never showed (one saved on
    /// another machine): the recorded draft is Git's "ours", the view's work "theirs".
    pub fn carried(change: &ChangeId) -> Labels {
        Labels {
            ours: format!("saved draft of {change}"),
            theirs: "this view".to_owned(),
        }
    }

    /// The lines that open and close each conflicted region.
    pub fn lines(&self) -> Vec<String> {
        vec![
            format!("{} {}", "<".repeat(MARKER), self.ours),
            format!("{} {}", ">".repeat(MARKER), self.theirs),
        ]
    }

    /// What a draft holds when the driver marked `paths` under these labels; nothing when it
    /// marked none.
    pub fn marked(&self, paths: &[String]) -> Option<Marked> {
        (!paths.is_empty()).then(|| Marked {
            paths: paths.to_vec(),
            lines: self.lines(),
        })
    }
}

/// Files bay left with conflict markers, and the marker lines it wrote into them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Marked {
    pub paths: Vec<String>,
    pub lines: Vec<String>,
}

impl Marked {
    /// Whether `content` still holds one of the marker lines, whole (a line ending in `\r\n`
    /// counts: Git writes the markers with the file's own line ends).
    pub fn remains_in(&self, content: &[u8]) -> bool {
        content.split(|&b| b == b'\n').any(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            self.lines.iter().any(|marker| marker.as_bytes() == line)
        })
    }
}

/// What a draft holds after two merges each marked some of its files (a view's work carried
/// over, then brought up to main): every path either marked, each judged by the lines of
/// both, since a file either merge marked may hold either's lines.
pub fn joined(first: Option<Marked>, second: Option<Marked>) -> Option<Marked> {
    match (first, second) {
        (Some(mut first), Some(second)) => {
            for (all, more) in [
                (&mut first.paths, second.paths),
                (&mut first.lines, second.lines),
            ] {
                all.extend(more);
                all.sort();
                all.dedup();
            }
            Some(first)
        }
        (first, second) => first.or(second),
    }
}

/// Every path any of `marked` names, once each, sorted: what must be read to judge a draft.
pub fn paths(marked: &[Marked]) -> Vec<String> {
    let mut paths: Vec<String> = marked.iter().flat_map(|m| m.paths.clone()).collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The paths whose content in the draft (`read`: path to content, `None` when the draft has
/// no such file) still holds a marker line bay wrote there. A path left unread counts as
/// unresolved: unknown is never clean.
pub fn unresolved(marked: &[Marked], read: &BTreeMap<String, Option<Vec<u8>>>) -> Vec<String> {
    paths(marked)
        .into_iter()
        .filter(|path| match read.get(path) {
            None => true,
            Some(None) => false,
            Some(Some(content)) => marked
                .iter()
                .filter(|m| m.paths.contains(path))
                .any(|m| m.remains_in(content)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change() -> ChangeId {
        ChangeId::parse("c7k2m4qa").expect("an id")
    }

    #[test]
    fn the_sides_are_named_for_people() {
        let labels = Labels::draft("main", &change());
        assert_eq!(
            labels.lines(),
            vec!["<<<<<<< main", ">>>>>>> change c7k2m4qa"]
        );
        assert_eq!(
            Labels::undo("trunk", &change()).lines()[1],
            ">>>>>>> undo of c7k2m4qa"
        );
        assert_eq!(labels.marked(&[]), None);
    }

    #[test]
    fn two_merges_marks_join_into_one_set_judged_by_both_merges_lines() {
        let carried = Labels::carried(&change()).marked(&["a".into()]);
        let refreshed = Labels::draft("main", &change()).marked(&["a".into(), "b".into()]);
        let both = joined(carried.clone(), refreshed.clone()).expect("marks");
        assert_eq!(both.paths, ["a", "b"]);
        assert_eq!(both.lines.len(), 4);
        assert!(both.remains_in(b"x\n>>>>>>> this view\n"));
        assert!(both.remains_in(b"<<<<<<< main\n"));
        assert_eq!(joined(carried.clone(), None), carried);
        assert_eq!(joined(None, refreshed.clone()), refreshed);
        assert_eq!(joined(None, None), None);
    }

    #[test]
    fn a_marker_line_left_anywhere_is_unresolved_and_a_settled_file_is_not() {
        let marked = vec![Labels::draft("main", &change()).marked(&["a".into(), "b".into()])]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        let conflicted = b"x\n<<<<<<< main\none\n=======\ntwo\n>>>>>>> change c7k2m4qa\n".to_vec();
        let closing_only = b"one\r\n>>>>>>> change c7k2m4qa\r\n".to_vec();
        let settled = b"one\n=======\ntwo\n<<<<<<< mainly\n".to_vec();
        let read = |a: &Vec<u8>, b: Option<&Vec<u8>>| {
            BTreeMap::from([("a".into(), Some(a.clone())), ("b".into(), b.cloned())])
        };
        assert_eq!(unresolved(&marked, &read(&conflicted, None)), vec!["a"]);
        assert_eq!(unresolved(&marked, &read(&closing_only, None)), vec!["a"]);
        assert!(unresolved(&marked, &read(&settled, None)).is_empty());
        assert_eq!(
            unresolved(&marked, &read(&settled, Some(&conflicted))),
            vec!["b"]
        );
        // A file not read is not known to be settled.
        let partial = BTreeMap::from([("a".to_string(), Some(settled))]);
        assert_eq!(unresolved(&marked, &partial), vec!["b"]);
    }
}
