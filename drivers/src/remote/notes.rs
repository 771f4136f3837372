//! Writing one evidence record into a notes ref's history, as `git notes append` would, with
//! plumbing and a temporary index: no notes ref is touched until the push.
//!
//! A notes tree holds each note at the annotated object's id, either flat (`<oid>`) or fanned
//! out into directories of two hex digits (`ab/cdef...`, `ab/cd/ef...`). Git reads any of these
//! layouts. An existing note is rewritten where it is; a new note takes the layout of the
//! notes already there, so the tree stays as Git would lay it out.

use bay_core::git::Oid;
use bay_core::machine::Fault;

use super::{Repo, oid};
use crate::reader::Object;

/// The message of every notes commit bay writes, as `git notes append` writes it.
pub const NOTES_MESSAGE: &str = "Notes added by 'git notes append'\n";

/// One blob entry of a notes tree.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    mode: String,
    blob: Oid,
    path: String,
}

impl Repo {
    /// Writes a notes commit on `parent` (the notes ref's current commit, if any) whose note
    /// on `object` is the old note with `record` appended as one line.
    pub(super) fn write_note(
        &self,
        parent: Option<&Oid>,
        object: &Oid,
        record: &str,
    ) -> Result<Oid, Fault> {
        let entries = match parent {
            Some(parent) => self.note_entries(parent)?,
            None => Vec::new(),
        };
        let existing = entries
            .iter()
            .find(|e| e.path.replace('/', "") == object.as_str());
        let mut text = match existing {
            Some(entry) => match self.reader.read(&[entry.blob.to_string()])?.pop() {
                Some(Object::Found { body, .. }) => body,
                _ => return Err(Fault(format!("the note blob {} is missing", entry.blob))),
            },
            None => Vec::new(),
        };
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        text.extend_from_slice(record.trim_end().as_bytes());
        text.push(b'\n');
        let blob = self.objects.blob(&self.git(), text)?;
        let (mode, path) = match existing {
            Some(entry) => (entry.mode.clone(), entry.path.clone()),
            None => ("100644".to_string(), fanned(object, fanout(&entries))),
        };

        let tree = crate::trees::edited(&self.git(), parent, &[(mode, blob, path)])?;
        let parents: Vec<&Oid> = parent.into_iter().collect();
        self.commit_tree(&tree, &parents, NOTES_MESSAGE)
    }

    /// The note blobs in the tree of notes commit `commit`.
    fn note_entries(&self, commit: &Oid) -> Result<Vec<Entry>, Fault> {
        let out = self
            .git()
            .cmd(["ls-tree", "-r", "-z", commit.as_str()])
            .run()?;
        let mut entries = Vec::new();
        for record in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let record = String::from_utf8_lossy(record);
            let bad = || Fault(format!("git ls-tree printed {record:?}"));
            let (info, path) = record.split_once('\t').ok_or_else(bad)?;
            let fields: Vec<&str> = info.split(' ').collect();
            if let [mode, "blob", blob] = fields.as_slice() {
                entries.push(Entry {
                    mode: mode.to_string(),
                    blob: oid(blob)?,
                    path: path.to_string(),
                });
            }
        }
        Ok(entries)
    }
}

/// The fan-out depth the notes in a tree use: how many two-digit directories lead to a note.
/// Entries that are not notes (other files in the tree) do not count.
fn fanout(entries: &[Entry]) -> usize {
    entries
        .iter()
        .find(|e| Oid::parse(&e.path.replace('/', "")).is_ok())
        .map_or(0, |e| e.path.matches('/').count())
}

/// `object`'s path at fan-out depth `depth`: `ab/cd/ef...` for depth 2.
fn fanned(object: &Oid, depth: usize) -> String {
    let hex = object.as_str();
    let depth = depth.min(hex.len() / 2 - 1);
    let mut path = String::with_capacity(hex.len() + depth);
    for level in 0..depth {
        path.push_str(&hex[level * 2..level * 2 + 2]);
        path.push('/');
    }
    path.push_str(&hex[depth * 2..]);
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> Entry {
        Entry {
            mode: "100644".into(),
            blob: Oid::parse(&"0".repeat(40)).expect("an id"),
            path: path.into(),
        }
    }

    #[test]
    fn new_notes_follow_the_layout_already_there() {
        let object = Oid::parse(&format!("abcd{}", "e".repeat(36))).expect("an id");
        assert_eq!(fanned(&object, 0), object.as_str());
        assert_eq!(fanned(&object, 2), format!("ab/cd/{}", "e".repeat(36)));
        let flat = "1".repeat(40);
        let deep = format!("12/{}", "3".repeat(38));
        assert_eq!(fanout(&[]), 0);
        assert_eq!(fanout(&[entry(&flat)]), 0);
        assert_eq!(fanout(&[entry("README"), entry(&deep)]), 1);
    }
}
