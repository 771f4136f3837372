//! The tree of a worktree's index, written as `git write-tree` writes it, without its process.
//!
//! Saving a view's draft ran `git add` and then `git write-tree`; the second checks that every
//! blob the index names exists (a `stat` per file), writes the trees and rewrites the index.
//! The index file holds, after a 12-byte header (`DIRC`, its version, the entry count), one
//! entry per path in path order (stat data, mode, id, flags, the path) and then extensions;
//! the `TREE` extension (the cache tree) holds the id of each directory whose entries have not
//! changed since a tree was last written for it. [`tree_of_index`] builds the trees from the
//! entries, takes each still valid directory's id from the cache tree as Git does, and writes
//! the trees it builds through the object [`Store`].
//!
//! Only the plain index is read: versions 2 and 3, SHA-1, every entry at stage 0, no
//! intent-to-add entry, no directory entry of a sparse index, no split index and no other
//! extension Git requires a reader to understand, and a checksum that holds. Anything else
//! gives `None`, and `git write-tree` does it (and says why it cannot, for a conflict).

use std::collections::BTreeMap;
use std::path::Path;

use bay_core::git::Oid;

use crate::objects::{Kind, Store, sha1::Sha1};

/// Bytes in an index header and in an id.
const HEADER: usize = 12;
const ID: usize = 20;

/// Entry flags: an extended entry carries two more flag bytes; its stage is two bits.
const EXTENDED: u16 = 0x4000;
const STAGE: u16 = 0x3000;
/// Extended flags: an entry added with `git add -N`, which `write-tree` leaves out.
const INTENT_TO_ADD: u16 = 0x2000;

/// The mode of a directory entry in a sparse index, and of a subtree.
const DIR_MODE: u32 = 0o040000;

/// One file of the index: its mode and blob (or commit, for a submodule).
struct File {
    mode: u32,
    id: Oid,
}

/// A directory being built: its files and subdirectories by name.
#[derive(Default)]
struct Dir {
    files: BTreeMap<Vec<u8>, File>,
    dirs: BTreeMap<Vec<u8>, Dir>,
}

/// The tree `git write-tree` would write for the index at `index`, written into `store`;
/// `Ok(None)` when the index is not one read here (see the module's notes).
pub fn tree_of_index(index: &Path, store: &Store) -> std::io::Result<Option<Oid>> {
    let bytes = match std::fs::read(index) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let Some((root, cache)) = parse(&bytes) else {
        return Ok(None);
    };
    write(&root, &[], &cache, store).map(Some)
}

/// The index's files as a directory tree, and its cache tree's valid ids by directory path
/// (`""` for the root); `None` when the index is not one read here.
fn parse(bytes: &[u8]) -> Option<(Dir, BTreeMap<Vec<u8>, Oid>)> {
    if bytes.len() < HEADER + ID {
        return None;
    }
    let (content, checksum) = bytes.split_at(bytes.len() - ID);
    let mut sha = Sha1::default();
    sha.update(content);
    if sha.finish()[..] != checksum[..] || &content[..4] != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes(content[4..8].try_into().ok()?);
    if !(2..=3).contains(&version) {
        return None;
    }
    let count = u32::from_be_bytes(content[8..12].try_into().ok()?);
    let mut root = Dir::default();
    let mut at = HEADER;
    for _ in 0..count {
        let fixed = content.get(at..at + 62)?;
        let mode = u32::from_be_bytes(fixed[24..28].try_into().ok()?);
        let id = Oid::from_raw(&fixed[40..60]).ok()?;
        let flags = u16::from_be_bytes(fixed[60..62].try_into().ok()?);
        let mut name_at = at + 62;
        if flags & STAGE != 0 || mode == DIR_MODE {
            return None;
        }
        if flags & EXTENDED != 0 {
            let extended = u16::from_be_bytes(content.get(name_at..name_at + 2)?.try_into().ok()?);
            if extended & INTENT_TO_ADD != 0 {
                return None;
            }
            name_at += 2;
        }
        let length = content.get(name_at..)?.iter().position(|&b| b == 0)?;
        let path = &content[name_at..name_at + length];
        // The entry is padded with one to eight NULs to a multiple of eight bytes.
        let entry = name_at - at + length;
        at += (entry + 8) / 8 * 8;
        insert(&mut root, path, File { mode, id })?;
    }
    let cache = extensions(content.get(at..)?)?;
    Some((root, cache))
}

/// Puts a file at `path` into `root`; `None` for a path Git would not have written.
fn insert(root: &mut Dir, path: &[u8], file: File) -> Option<()> {
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

/// The valid ids of the cache tree, by directory path; `None` for an extension Git requires a
/// reader to understand (its name starts with a lower-case letter: a split index's `link`, a
/// sparse index's `sdir`) or extensions that do not add up.
fn extensions(mut rest: &[u8]) -> Option<BTreeMap<Vec<u8>, Oid>> {
    let mut cache = BTreeMap::new();
    while !rest.is_empty() {
        let name = rest.get(..4)?;
        let size = u32::from_be_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
        let body = rest.get(8..8usize.checked_add(size)?)?;
        if name == b"TREE" {
            cache_tree(body, &mut cache)?;
        } else if name[0].is_ascii_lowercase() {
            return None;
        }
        rest = &rest[8 + size..];
    }
    Some(cache)
}

/// Reads the cache tree: each node is `<name>\0<entry count> <subtree count>\n`, then its id
/// when the count is not negative (valid), then its subtrees, depth first.
fn cache_tree(body: &[u8], cache: &mut BTreeMap<Vec<u8>, Oid>) -> Option<()> {
    let mut rest = body;
    node(&mut rest, Vec::new(), cache, 0)?;
    rest.is_empty().then_some(())
}

/// Directories deeper than this in a cache tree are not read (a path Git writes is far
/// shorter): the walk recurses once per level.
const DEEPEST: usize = 4096;

fn node(
    rest: &mut &[u8],
    path: Vec<u8>,
    cache: &mut BTreeMap<Vec<u8>, Oid>,
    depth: usize,
) -> Option<()> {
    if depth > DEEPEST {
        return None;
    }
    let nul = rest.iter().position(|&b| b == 0)?;
    let name = rest[..nul].to_vec();
    *rest = &rest[nul + 1..];
    let newline = rest.iter().position(|&b| b == b'\n')?;
    let counts = std::str::from_utf8(&rest[..newline]).ok()?;
    *rest = &rest[newline + 1..];
    let (entries, subtrees) = counts.split_once(' ')?;
    let entries: i64 = entries.parse().ok()?;
    let subtrees: usize = subtrees.parse().ok()?;
    let mut here = path;
    if !name.is_empty() {
        if !here.is_empty() {
            here.push(b'/');
        }
        here.extend_from_slice(&name);
    }
    if entries >= 0 {
        let id = rest.get(..ID)?;
        cache.insert(here.clone(), Oid::from_raw(id).ok()?);
        *rest = &rest[ID..];
    }
    for _ in 0..subtrees {
        node(rest, here.clone(), cache, depth + 1)?;
    }
    Some(())
}

/// Writes the tree of `dir` (at `path`) and every subtree the cache tree does not hold.
fn write(
    dir: &Dir,
    path: &[u8],
    cache: &BTreeMap<Vec<u8>, Oid>,
    store: &Store,
) -> std::io::Result<Oid> {
    if let Some(id) = cache.get(path) {
        return Ok(id.clone());
    }
    // Git sorts a tree's entries by name, a directory's name compared as if it ended in `/`.
    let mut entries: Vec<(Vec<u8>, String, Oid)> = Vec::new();
    for (name, file) in &dir.files {
        entries.push((name.clone(), format!("{:o}", file.mode), file.id.clone()));
    }
    for (name, sub) in &dir.dirs {
        let mut sub_path = path.to_vec();
        if !sub_path.is_empty() {
            sub_path.push(b'/');
        }
        sub_path.extend_from_slice(name);
        let id = write(sub, &sub_path, cache, store)?;
        let mut key = name.clone();
        key.push(b'/');
        entries.push((key, format!("{DIR_MODE:o}"), id));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut body = Vec::new();
    for (key, mode, id) in entries {
        let name = key.strip_suffix(b"/").unwrap_or(&key);
        body.extend_from_slice(mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(name);
        body.push(0);
        body.extend_from_slice(&id.to_raw());
    }
    store.write(Kind::Tree, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{Git, Location};

    fn git(dir: &Path, args: &[&str]) -> String {
        Git::in_dir(dir).cmd(args).text().expect("git runs")
    }

    /// What `tree_of_index` gives for the repository at `dir`, and what `git write-tree` gives.
    fn both(dir: &Path) -> (Option<String>, String) {
        let store = Store::find(&Location::Dir(dir.to_path_buf())).expect("a plain store");
        let ours = tree_of_index(&dir.join(".git/index"), &store)
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
    fn indexes_it_does_not_read_are_left_to_git() {
        let cases: [(&str, &[&[&str]]); 4] = [
            ("intent to add", &[&["add", "-N", "later.txt"]]),
            ("version 4", &[&["update-index", "--index-version", "4"]]),
            ("split index", &[&["update-index", "--split-index"]]),
            (
                "sparse index",
                &[&["sparse-checkout", "set", "--cone", "--sparse-index", "kept"]],
            ),
        ];
        for (what, commands) in cases {
            let repo = committed(&[("kept/file", "k\n"), ("other/file", "o\n")]);
            let dir = repo.path();
            write(dir, "later.txt", "later\n");
            let store = Store::find(&Location::Dir(dir.to_path_buf())).expect("a plain store");
            let index = dir.join(".git/index");
            assert!(
                tree_of_index(&index, &store).expect("read").is_some(),
                "before {what}"
            );
            for args in commands {
                git(dir, args);
            }
            assert_eq!(tree_of_index(&index, &store).expect("read"), None, "{what}");
        }
    }

    proptest::proptest! {
        /// Any content under a checksum that holds gives trees or a refusal, never a panic.
        #[test]
        fn any_index_reads_or_is_refused(
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
            entries in 0u32..4,
        ) {
            let mut content = b"DIRC\0\0\0\x02".to_vec();
            content.extend_from_slice(&entries.to_be_bytes());
            content.extend_from_slice(&body);
            let mut sha = Sha1::default();
            sha.update(&content);
            content.extend_from_slice(&sha.finish());
            let _ = parse(&content);
        }
    }

    #[test]
    fn a_conflict_or_a_broken_index_is_left_to_git() {
        assert!(parse(b"").is_none());
        assert!(parse(&[0; 40]).is_none());
        let repo = tempfile::tempdir().expect("a temp dir");
        let dir = repo.path();
        crate::testing::repository_with_a_commit(dir);
        write(dir, "f", "one\n");
        git(dir, &["add", "f"]);
        let blob = git(dir, &["hash-object", "-w", "f"]);
        let clean = std::fs::read(dir.join(".git/index")).expect("the index");
        assert!(
            parse(&clean).is_some(),
            "the index before the conflict reads"
        );
        git(dir, &["update-index", "--index-info"]);
        let info = format!("100644 {blob} 2\tf\n100644 {blob} 3\tf\n");
        Git::in_dir(dir)
            .cmd(["update-index", "--index-info"])
            .stdin(info.into_bytes())
            .run()
            .expect("conflict stages");
        let bytes = std::fs::read(dir.join(".git/index")).expect("the index");
        assert!(parse(&bytes).is_none(), "stages 2 and 3");
        let mut broken = bytes.clone();
        broken[20] ^= 1;
        assert!(parse(&broken).is_none(), "a checksum that does not hold");
    }
}
