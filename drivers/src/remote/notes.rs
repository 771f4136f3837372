//! Writing one evidence record into a notes ref's history, as `git notes append` would, with
//! plumbing and a temporary index: no notes ref is touched until the push.
//!
//! A notes tree holds each note at the annotated object's id, either flat (`<oid>`) or fanned
//! out into directories of two hex digits (`ab/cdef...`, `ab/cd/ef...`). Git reads any of these
//! layouts, mixed too. An existing note is rewritten where it is; a new note takes the layout
//! of the notes already there, and a flat tree that has grown large fans out from then on.

use bay_core::git::Oid;
use bay_core::machine::Fault;

use super::Repo;
use crate::reader::Object;

/// The message of every notes commit bay writes, as `git notes append` writes it.
pub const NOTES_MESSAGE: &str = "Notes added by 'git notes append'\n";

/// How many notes a flat notes tree holds before new notes go one directory level deeper, as
/// Git's own notes code fans a tree out once it grows: each note written edits only the trees
/// along its path, so a level that held every note would make each write cost the history.
const FLAT_MAX: usize = 256;

impl Repo {
    /// Writes a notes commit on `parent` (the notes ref's current commit, if any) whose note
    /// on `object` is the old note with `record` appended as one line. Only the note's own
    /// path and the trees along it are read and written.
    pub(super) fn write_note(
        &self,
        parent: Option<&Oid>,
        object: &Oid,
        record: &str,
    ) -> Result<Oid, Fault> {
        let existing = match parent {
            Some(parent) => self.note_at(parent, object)?,
            None => None,
        };
        let (path, mut text) = match existing {
            Some(found) => found,
            None => (fanned(object, self.notes_fanout(parent)?), Vec::new()),
        };
        if !text.is_empty() && !text.ends_with(b"\n") {
            text.push(b'\n');
        }
        text.extend_from_slice(record.trim_end().as_bytes());
        text.push(b'\n');
        let blob = self.objects.blob(&self.git(), text)?;
        let edit = [("100644".to_owned(), blob, path)];
        let tree = crate::trees::edited(&self.reader, &self.objects, &self.git(), parent, &edit)?;
        let parents: Vec<&Oid> = parent.into_iter().collect();
        self.commit_tree(&tree, &parents, NOTES_MESSAGE)
    }

    /// The note on `object` in notes commit `commit`, wherever it lies (flat, or fanned one or
    /// two levels deep): its path and its text.
    fn note_at(&self, commit: &Oid, object: &Oid) -> Result<Option<(String, Vec<u8>)>, Fault> {
        let paths: Vec<String> = (0..3).map(|depth| fanned(object, depth)).collect();
        let names: Vec<String> = paths
            .iter()
            .map(|path| format!("{commit}:{path}"))
            .collect();
        let found = self.reader.read(&names)?;
        Ok(paths
            .into_iter()
            .zip(found)
            .find_map(|(path, object)| match object {
                Object::Found { kind, body } if kind == "blob" => Some((path, body)),
                _ => None,
            }))
    }

    /// How deep a new note goes in notes commit `commit`'s tree: as deep as the notes there
    /// already go, read from the first fan-out directory; flat in a small flat tree, and one
    /// level deep once the flat tree holds [`FLAT_MAX`] entries.
    fn notes_fanout(&self, commit: Option<&Oid>) -> Result<usize, Fault> {
        let Some(commit) = commit else {
            return Ok(0);
        };
        let root = crate::trees::entries(&self.reader, commit)?;
        let Some(dir) = root
            .iter()
            .find(|(name, entry)| entry.is_tree() && is_fan(name))
            .map(|(_, entry)| entry.id.clone())
        else {
            return Ok(usize::from(root.len() >= FLAT_MAX));
        };
        let inner = crate::trees::entries(&self.reader, &dir)?;
        let deeper = inner
            .iter()
            .any(|(name, entry)| entry.is_tree() && is_fan(name));
        Ok(1 + usize::from(deeper))
    }
}

/// A fan-out directory's name: two hex digits.
fn is_fan(name: &[u8]) -> bool {
    name.len() == 2 && name.iter().all(u8::is_ascii_hexdigit)
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

    #[test]
    fn a_note_path_fans_out_by_two_hex_digits_a_level() {
        let object = Oid::parse(&format!("abcd{}", "e".repeat(36))).expect("an id");
        assert_eq!(fanned(&object, 0), object.as_str());
        assert_eq!(fanned(&object, 1), format!("ab/cd{}", "e".repeat(36)));
        assert_eq!(fanned(&object, 2), format!("ab/cd/{}", "e".repeat(36)));
        assert!(is_fan(b"0f") && !is_fan(b"0g") && !is_fan(b"abc"));
    }
}
