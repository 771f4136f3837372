//! The tree `git write-tree` writes for an index, built in-process: gitoxide reads the index
//! (versions 2 to 4, its checksum, its extensions) and its cache tree, and this module writes
//! the trees the cache tree does not already hold, through [`Store`]. Saving a view's draft
//! ran one `git write-tree`, about 2 ms.
//!
//! Only the indexes `write-tree` would write as they are: no conflict stage, no entry added
//! with `git add -N` (which `write-tree` leaves out), not a sparse index (whose directory
//! entries stand for trees), a split index only once gix has merged its shared part. Anything
//! else gives `None`, and `git write-tree` does it (and says why it cannot, for a conflict).

use std::collections::BTreeMap;
use std::path::Path;

use bay_core::git::Oid;
use bay_core::machine::Fault;
use gix::index::entry::{Flags, Stage};

use crate::gitoxide::gix_id;
use crate::objects::Store;

/// One directory being built: its files and subdirectories by name.
#[derive(Default)]
struct Dir {
    files: BTreeMap<Vec<u8>, (gix::objs::tree::EntryMode, gix::ObjectId)>,
    dirs: BTreeMap<Vec<u8>, Dir>,
}

/// The tree `git write-tree` would write for the index at `index`, written into `store`;
/// `Ok(None)` when the index is not one written here (see the module's notes).
pub(crate) fn tree_of_index(index: &Path, store: &Store) -> Result<Option<Oid>, Fault> {
    let Some((root, cache)) = read(index, store.object_hash()) else {
        return Ok(None);
    };
    write(&root, &[], &cache, store).map(Some)
}

/// The index's files as a directory tree, and its cache tree's valid ids by directory path
/// (`""` for the root); `None` when the index is not one written here, or cannot be read.
fn read(index: &Path, hash: gix::hash::Kind) -> Option<(Dir, BTreeMap<Vec<u8>, gix::ObjectId>)> {
    let file = gix::index::File::at(index, hash, false, Default::default()).ok()?;
    if file.is_sparse() || file.link().is_some() {
        return None;
    }
    let mut root = Dir::default();
    for entry in file.entries() {
        if entry.stage() != Stage::Unconflicted || entry.flags.contains(Flags::INTENT_TO_ADD) {
            return None;
        }
        let mode = entry.mode.to_tree_entry_mode()?;
        insert(&mut root, entry.path(&file), (mode, entry.id))?;
    }
    let mut cache = BTreeMap::new();
    if let Some(tree) = file.tree() {
        valid(tree, Vec::new(), &mut cache);
    }
    Some((root, cache))
}

/// Puts a file at `path` into `root`; `None` for a path Git would not have written.
fn insert(
    root: &mut Dir,
    path: &[u8],
    file: (gix::objs::tree::EntryMode, gix::ObjectId),
) -> Option<()> {
    let mut parts = path.split(|&b| b == b'/').peekable();
    let mut dir = root;
    while let Some(part) = parts.next() {
        if part.is_empty() {
            return None;
        }
        // A name cannot be both a file and a directory, and no path comes twice.
        if parts.peek().is_none() {
            if dir.dirs.contains_key(part) || dir.files.contains_key(part) {
                return None;
            }
            dir.files.insert(part.to_vec(), file);
            return Some(());
        }
        if dir.files.contains_key(part) {
            return None;
        }
        dir = dir.dirs.entry(part.to_vec()).or_default();
    }
    None
}

/// The valid nodes of the cache tree under `node` (at `path`), by directory path.
fn valid(
    node: &gix::index::extension::Tree,
    path: Vec<u8>,
    cache: &mut BTreeMap<Vec<u8>, gix::ObjectId>,
) {
    if node.num_entries.is_some() {
        cache.insert(path.clone(), node.id);
    }
    for child in &node.children {
        let mut below = path.clone();
        if !below.is_empty() {
            below.push(b'/');
        }
        below.extend_from_slice(&child.name);
        valid(child, below, cache);
    }
}

/// Writes the tree of `dir` (at `path`) and every subtree the cache tree does not hold.
fn write(
    dir: &Dir,
    path: &[u8],
    cache: &BTreeMap<Vec<u8>, gix::ObjectId>,
    store: &Store,
) -> Result<Oid, Fault> {
    if let Some(id) = cache.get(path) {
        return crate::gitoxide::from_gix(id);
    }
    let mut tree = gix::objs::Tree::empty();
    for (name, (mode, id)) in &dir.files {
        tree.entries.push(gix::objs::tree::Entry {
            mode: *mode,
            filename: name.clone().into(),
            oid: *id,
        });
    }
    for (name, sub) in &dir.dirs {
        let mut sub_path = path.to_vec();
        if !sub_path.is_empty() {
            sub_path.push(b'/');
        }
        sub_path.extend_from_slice(name);
        let id = write(sub, &sub_path, cache, store)?;
        tree.entries.push(gix::objs::tree::Entry {
            mode: gix::objs::tree::EntryKind::Tree.into(),
            filename: name.clone().into(),
            oid: gix_id(&id)?,
        });
    }
    tree.entries.sort();
    store.write(tree)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{Git, Location};
    use crate::objects::Objects;

    fn git(dir: &Path, args: &[&str]) -> String {
        Git::in_dir(dir).cmd(args).text().expect("git runs")
    }

    /// What `tree_of_index` gives for the repository at `dir`, and what `git write-tree` gives.
    fn both(dir: &Path) -> (Option<String>, String) {
        let objects = Objects::new(Location::Dir(dir.to_path_buf()));
        let store = objects.store().expect("a plain store");
        let ours = tree_of_index(&dir.join(".git/index"), store)
            .expect("the index reads")
            .map(String::from);
        (ours, git(dir, &["write-tree"]))
    }

    fn write(dir: &Path, path: &str, content: &str) {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    /// A repository whose second commit holds `files`.
    fn committed(files: &[(&str, &str)]) -> tempfile::TempDir {
        let repo = tempfile::tempdir().expect("a temp dir");
        let git = crate::testing::repository_with_a_commit(repo.path());
        for (path, content) in files {
            write(repo.path(), path, content);
        }
        git.cmd(["add", "--all"]).run().expect("add");
        git.cmd(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "-m", "two"])
            .run()
            .expect("commit");
        repo
    }

    #[test]
    fn the_tree_is_the_one_git_writes() {
        let repo = tempfile::tempdir().expect("a temp dir");
        let dir = repo.path();
        crate::testing::repository_with_a_commit(dir);
        for (path, content) in [
            ("a.txt", "a\n"),
            ("a-b/x", "x\n"),
            ("a/b/c/deep.txt", "deep\n"),
            ("a/b.txt", "b\n"),
            ("a.b", "dot\n"),
            ("spaced name/z", "z\n"),
        ] {
            write(dir, path, content);
        }
        std::os::unix::fs::symlink("a.txt", dir.join("link")).expect("symlink");
        write(dir, "tool.sh", "#!/bin/sh\n");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("tool.sh"), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        git(dir, &["add", "--all"]);
        let module = "1".repeat(40);
        git(
            dir,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{module},module"),
            ],
        );
        // No cache tree yet: every tree is built here.
        let (ours, theirs) = both(dir);
        assert_eq!(ours.as_deref(), Some(theirs.as_str()));
        // `write-tree` filled the cache tree; a change invalidates one line of it.
        write(dir, "a/b/c/deep.txt", "deeper\n");
        write(dir, "a/new.txt", "new\n");
        git(dir, &["add", "--all"]);
        let (ours, theirs) = both(dir);
        assert_eq!(ours.as_deref(), Some(theirs.as_str()));
        // A file that becomes a directory.
        std::fs::remove_file(dir.join("a.b")).expect("rm");
        write(dir, "a.b/inside", "in\n");
        git(dir, &["add", "--all"]);
        let (ours, theirs) = both(dir);
        assert_eq!(ours.as_deref(), Some(theirs.as_str()));
        let fsck = Git::in_dir(dir)
            .cmd(["fsck", "--no-progress"])
            .output()
            .expect("fsck");
        assert!(fsck.success(), "{}", fsck.stderr);
    }

    #[test]
    fn a_sparse_checkout_keeps_the_files_outside_it() {
        let repo = committed(&[("in/file", "in\n"), ("out/file", "out\n")]);
        let dir = repo.path();
        git(dir, &["sparse-checkout", "set", "--no-cone", "/in/"]);
        write(dir, "in/file", "changed\n");
        git(dir, &["add", "--all", "--sparse", "--", "."]);
        let (ours, theirs) = both(dir);
        assert_eq!(ours.as_deref(), Some(theirs.as_str()));
        assert!(git(dir, &["ls-tree", "-r", "--name-only", &theirs]).contains("out/file"));
    }

    #[test]
    fn indexes_it_does_not_write_are_left_to_git() {
        let cases: [(&str, &[&[&str]]); 2] = [
            ("intent to add", &[&["add", "-N", "later.txt"]]),
            (
                "sparse index",
                &[&["sparse-checkout", "set", "--cone", "--sparse-index", "kept"]],
            ),
        ];
        for (what, commands) in cases {
            let repo = committed(&[("kept/file", "k\n"), ("other/file", "o\n")]);
            let dir = repo.path();
            write(dir, "later.txt", "later\n");
            let objects = Objects::new(Location::Dir(dir.to_path_buf()));
            let store = objects.store().expect("a plain store");
            let index = dir.join(".git/index");
            assert!(
                tree_of_index(&index, store).expect("read").is_some(),
                "before {what}"
            );
            for args in commands {
                git(dir, args);
            }
            assert_eq!(tree_of_index(&index, store).expect("read"), None, "{what}");
        }
        // Version 4, whose paths are compressed, and a split index are read as any other.
        for args in [
            ["update-index", "--index-version", "4"],
            ["update-index", "--split-index", "-q"],
        ] {
            let repo = committed(&[("kept/file", "k\n"), ("other/file", "o\n")]);
            git(repo.path(), &args);
            write(repo.path(), "kept/new", "n\n");
            git(repo.path(), &["add", "--all"]);
            let (ours, theirs) = both(repo.path());
            assert_eq!(ours.as_deref(), Some(theirs.as_str()), "{args:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Any content under a checksum that holds gives trees or a refusal, never a panic.
        #[test]
        fn any_index_reads_or_is_refused(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            entries in 0u32..4,
        ) {
            let mut content = b"DIRC\0\0\0\x02".to_vec();
            content.extend_from_slice(&entries.to_be_bytes());
            content.extend_from_slice(&body);
            let mut hasher = gix::hash::hasher(gix::hash::Kind::Sha1);
            hasher.update(&content);
            if let Ok(sum) = hasher.try_finalize() {
                content.extend_from_slice(sum.as_bytes());
            }
            let file = tempfile::NamedTempFile::new().expect("a file");
            std::fs::write(file.path(), &content).expect("written");
            let _ = read(file.path(), gix::hash::Kind::Sha1);
        }
    }

    #[test]
    fn a_conflict_or_a_broken_index_is_left_to_git() {
        let sha1 = gix::hash::Kind::Sha1;
        let repo = tempfile::tempdir().expect("a temp dir");
        let dir = repo.path();
        crate::testing::repository_with_a_commit(dir);
        write(dir, "f", "one\n");
        git(dir, &["add", "f"]);
        let blob = git(dir, &["hash-object", "-w", "f"]);
        let index = dir.join(".git/index");
        assert!(
            read(&index, sha1).is_some(),
            "the index before the conflict reads"
        );
        let info = format!("100644 {blob} 2\tf\n100644 {blob} 3\tf\n");
        Git::in_dir(dir)
            .cmd(["update-index", "--index-info"])
            .stdin(info.into_bytes())
            .run()
            .expect("conflict stages");
        assert!(read(&index, sha1).is_none(), "stages 2 and 3");
        let mut broken = std::fs::read(&index).expect("the index");
        broken[20] ^= 1;
        std::fs::write(&index, broken).expect("written");
        assert!(
            read(&index, sha1).is_none(),
            "a checksum that does not hold"
        );
        std::fs::write(&index, b"").expect("written");
        assert!(read(&index, sha1).is_none(), "an empty file");
    }
}
