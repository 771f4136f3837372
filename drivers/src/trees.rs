//! Tree objects, read through the clone's [`Reader`]: their entries, and the paths two trees
//! differ in, as `git diff-tree -r --name-only --no-renames` lists them, without its process;
//! and a tree edited along the paths an edit touches ([`edited`]).
//!
//! A tree object is a sequence of entries `<mode in octal> <name>\0<id as raw bytes>`, the id
//! as long as the repository's ids (20 bytes for SHA-1, 32 for SHA-256). Two trees are
//! compared level by level: entries with the same mode and id are the same whole subtree and
//! are not read, so a change costs one exchange per directory level it touches.

use std::collections::BTreeMap;

use bay_core::check::footprint::TreeFile;
use bay_core::git::Oid;
use bay_core::machine::Fault;

use crate::git::Git;
use crate::objects::Objects;
use crate::reader::{Object, Reader};

/// The mode of a subtree entry.
const TREE_MODE: &str = "40000";

/// One entry of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub mode: String,
    pub id: Oid,
}

impl Entry {
    pub fn is_tree(&self) -> bool {
        self.mode == TREE_MODE
    }

    /// A submodule: the entry names a commit of another repository.
    pub fn is_submodule(&self) -> bool {
        self.kind() == "commit"
    }

    /// The kind of object the entry names, as `git ls-tree` prints it.
    pub fn kind(&self) -> &'static str {
        match self.mode.as_str() {
            TREE_MODE => "tree",
            "160000" => "commit",
            _ => "blob",
        }
    }
}

/// The entries of a tree object's body, by name, as gix decodes it. `id_len` is the length
/// of an id in bytes (20 for SHA-1, 32 for SHA-256).
pub fn parse(body: &[u8], id_len: usize) -> Result<BTreeMap<Vec<u8>, Entry>, Fault> {
    let bad = || Fault("a tree object bay cannot read".to_string());
    let kind = match id_len {
        20 => gix::hash::Kind::Sha1,
        32 => gix::hash::Kind::Sha256,
        _ => return Err(bad()),
    };
    let mut entries = BTreeMap::new();
    for entry in gix::objs::TreeRefIter::from_bytes(body, kind) {
        let entry = entry.map_err(|_| bad())?;
        let mut mode = [0; 6];
        entries.insert(
            entry.filename.to_vec(),
            Entry {
                mode: entry.mode.as_bytes(&mut mode).to_string(),
                id: Oid::from_raw(entry.oid.as_bytes()).map_err(|_| bad())?,
            },
        );
    }
    Ok(entries)
}

/// The trees `ids` name, in order; an id that is not a tree here is a fault.
fn read_trees(reader: &Reader, ids: &[Oid]) -> Result<Vec<BTreeMap<Vec<u8>, Entry>>, Fault> {
    let names: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    let objects = reader.read(&names)?;
    ids.iter()
        .zip(objects)
        .map(|(id, object)| match object {
            Object::Found { kind, body } if kind == "tree" => parse(&body, id.as_str().len() / 2),
            _ => Err(Fault(format!("{id} is not a tree in this clone"))),
        })
        .collect()
}

/// The tree of each of `commits`, in order; a commit missing here is a fault.
pub fn of_commits(reader: &Reader, commits: &[Oid]) -> Result<Vec<Oid>, Fault> {
    let names: Vec<String> = commits.iter().map(|c| format!("{c}^{{commit}}")).collect();
    let objects = reader.read(&names)?;
    commits
        .iter()
        .zip(objects)
        .map(|(commit, object)| match object {
            Object::Found { body, .. } => String::from_utf8_lossy(&body)
                .lines()
                .next()
                .and_then(|line| line.strip_prefix("tree "))
                .and_then(|id| Oid::parse(id).ok())
                .ok_or_else(|| Fault(format!("commit {commit} names no tree"))),
            Object::Missing => Err(Fault(format!("no commit {commit}"))),
        })
        .collect()
}

/// One file whose entry differs between two trees: its path (bytes, as Git keeps it), and its
/// entry on each side, `None` where that side has no file there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: Vec<u8>,
    pub old: Option<Entry>,
    pub new: Option<Entry>,
}

/// Every file (blob, symlink or submodule, never a directory) whose content, mode or presence
/// differs between the trees `from` and `to`, in the order the walk meets them. A file that
/// became a directory is a file gone and every file under the directory.
pub fn changed_files(reader: &Reader, from: &Oid, to: &Oid) -> Result<Vec<FileChange>, Fault> {
    let mut changed = Vec::new();
    // Pairs of subtrees still to compare, with the path that leads to them; `None` is a side
    // without a tree there.
    let mut level: Vec<(Vec<u8>, Option<Oid>, Option<Oid>)> =
        vec![(Vec::new(), Some(from.clone()), Some(to.clone()))];
    while !level.is_empty() {
        let ids: Vec<Oid> = level
            .iter()
            .flat_map(|(_, a, b)| [a.clone(), b.clone()])
            .flatten()
            .collect();
        let mut read = read_trees(reader, &ids)?.into_iter();
        let mut next = Vec::new();
        for (prefix, a, b) in level {
            let a = match a {
                Some(_) => read.next().unwrap_or_default(),
                None => BTreeMap::new(),
            };
            let b = match b {
                Some(_) => read.next().unwrap_or_default(),
                None => BTreeMap::new(),
            };
            let names: std::collections::BTreeSet<&Vec<u8>> = a.keys().chain(b.keys()).collect();
            for name in names {
                let (old, new) = (a.get(name), b.get(name));
                if old == new {
                    continue;
                }
                let mut path = prefix.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(name);
                let subtree =
                    |entry: Option<&Entry>| entry.filter(|e| e.is_tree()).map(|e| e.id.clone());
                let file = |entry: Option<&Entry>| entry.filter(|e| !e.is_tree()).cloned();
                if file(old).is_some() || file(new).is_some() {
                    changed.push(FileChange {
                        path: path.clone(),
                        old: file(old),
                        new: file(new),
                    });
                }
                let (old_tree, new_tree) = (subtree(old), subtree(new));
                if old_tree.is_some() || new_tree.is_some() {
                    next.push((path, old_tree, new_tree));
                }
            }
        }
        level = next;
    }
    Ok(changed)
}

/// Every file (blob, symlink or submodule) of the tree of each of `commits` whose path starts
/// with one of `under`, sorted by path (`Action::ReadFiles`). The walk reads a subtree only
/// when a path under it could start with a prefix, one exchange per level for all commits; a
/// path it lists that is not UTF-8 is refused by name, since read lossily two could be one.
pub fn files_under(
    reader: &Reader,
    commits: &[Oid],
    under: &[String],
) -> Result<Vec<Vec<TreeFile>>, Fault> {
    let wanted = |path: &[u8]| under.iter().any(|p| path.starts_with(p.as_bytes()));
    // A directory is walked when some prefix lies below it or it lies below a prefix.
    let walked = |dir: &[u8]| {
        under.iter().any(|p| {
            let p = p.as_bytes();
            p.starts_with(dir) || dir.starts_with(p)
        })
    };
    let mut files: Vec<Vec<TreeFile>> = vec![Vec::new(); commits.len()];
    // Subtrees still to read: which commit's, the path that leads to them, and their id.
    let mut level: Vec<(usize, Vec<u8>, Oid)> = of_commits(reader, commits)?
        .into_iter()
        .enumerate()
        .map(|(index, tree)| (index, Vec::new(), tree))
        .collect();
    while !level.is_empty() {
        let ids: Vec<Oid> = level.iter().map(|(_, _, id)| id.clone()).collect();
        let mut next = Vec::new();
        for ((index, dir, _), entries) in level.into_iter().zip(read_trees(reader, &ids)?) {
            for (name, entry) in entries {
                let mut path = dir.clone();
                path.extend_from_slice(&name);
                if entry.is_tree() {
                    path.push(b'/');
                    if walked(&path) {
                        next.push((index, path, entry.id));
                    }
                } else if wanted(&path) {
                    let path = bay_core::paths::from_git(&path)
                        .map(str::to_owned)
                        .map_err(Fault)?;
                    files[index].push(TreeFile {
                        path,
                        mode: entry.mode,
                        oid: entry.id,
                    });
                }
            }
        }
        level = next;
    }
    for list in &mut files {
        list.sort();
    }
    Ok(files)
}

/// The paths whose content, mode or presence differs between the trees `from` and `to`,
/// as `git diff-tree -r --name-only --no-renames` lists them: sorted and each once.
pub fn changed_paths(reader: &Reader, from: &Oid, to: &Oid) -> Result<Vec<String>, Fault> {
    // A name that is not UTF-8 is refused by name: read lossily, two could become one.
    let mut paths: Vec<String> = changed_files(reader, from, to)?
        .iter()
        .map(|change| {
            bay_core::paths::from_git(&change.path)
                .map(str::to_owned)
                .map_err(Fault)
        })
        .collect::<Result<_, _>>()?;
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// The tree of `tree` (a tree or a commit; none for the empty tree) with each
/// `(mode, blob, path)` of `edits` put at its path. Only the trees along the edited paths are
/// read and written, so an edit costs the same however many entries the rest of the tree
/// holds: a notes tree or the index of compacted records grows with the history, and each
/// record added to it must not read it whole.
pub fn edited(
    reader: &Reader,
    objects: &Objects,
    git: &Git,
    tree: Option<&Oid>,
    edits: &[(String, Oid, String)],
) -> Result<Oid, Fault> {
    let mut root = BTreeMap::new();
    for (mode, blob, path) in edits {
        let mut names = path.split('/').filter(|name| !name.is_empty()).peekable();
        let mut level = &mut root;
        while let Some(name) = names.next() {
            let name = name.as_bytes().to_vec();
            if names.peek().is_none() {
                let entry = Entry {
                    mode: mode.clone(),
                    id: blob.clone(),
                };
                level.insert(name, Edit::Put(entry));
                break;
            }
            let next = level
                .entry(name)
                .and_modify(|edit| {
                    if matches!(edit, Edit::Put(_)) {
                        *edit = Edit::Into(BTreeMap::new());
                    }
                })
                .or_insert_with(|| Edit::Into(BTreeMap::new()));
            let Edit::Into(next) = next else {
                unreachable!("a file on the path was made a directory just above")
            };
            level = next;
        }
    }
    let base = match tree {
        Some(tree) => Some(tree_of(reader, tree)?),
        None => None,
    };
    apply(reader, objects, git, base.as_ref(), &root)
}

/// What an edit does at one name of a tree: put an entry there, or edit the subtree there.
enum Edit {
    Put(Entry),
    Into(BTreeMap<Vec<u8>, Edit>),
}

/// Writes the tree `base` (none: empty) with `edits` applied, depth first.
fn apply(
    reader: &Reader,
    objects: &Objects,
    git: &Git,
    base: Option<&Oid>,
    edits: &BTreeMap<Vec<u8>, Edit>,
) -> Result<Oid, Fault> {
    let mut entries = match base {
        Some(base) => read_trees(reader, std::slice::from_ref(base))?
            .pop()
            .unwrap_or_default(),
        None => BTreeMap::new(),
    };
    for (name, edit) in edits {
        let entry = match edit {
            Edit::Put(entry) => entry.clone(),
            Edit::Into(inner) => {
                let below = entries
                    .get(name)
                    .filter(|entry| entry.is_tree())
                    .map(|entry| entry.id.clone());
                Entry {
                    mode: TREE_MODE.to_owned(),
                    id: apply(reader, objects, git, below.as_ref(), inner)?,
                }
            }
        };
        entries.insert(name.clone(), entry);
    }
    objects.tree(git, &entries)
}

/// The entries of the tree a tree-ish names (a tree, or a commit's tree).
pub fn entries(reader: &Reader, treeish: &Oid) -> Result<BTreeMap<Vec<u8>, Entry>, Fault> {
    let tree = tree_of(reader, treeish)?;
    Ok(read_trees(reader, &[tree])?.pop().unwrap_or_default())
}

/// The tree a tree-ish names: a tree's own id, or a commit's tree.
fn tree_of(reader: &Reader, treeish: &Oid) -> Result<Oid, Fault> {
    match reader.read(&[treeish.to_string()])?.pop() {
        Some(Object::Found { kind, .. }) if kind == "tree" => Ok(treeish.clone()),
        Some(Object::Found { kind, .. }) if kind == "commit" => {
            of_commits(reader, std::slice::from_ref(treeish))?
                .pop()
                .ok_or_else(|| Fault(format!("commit {treeish} names no tree")))
        }
        _ => Err(Fault(format!("{treeish} names no tree in this clone"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Git;

    /// A tree made with Git from `files` (path, mode, content; a `160000` content is the
    /// submodule's commit id).
    fn tree(git: &Git, files: &[(&str, &str, &str)]) -> Oid {
        let index = tempfile::NamedTempFile::new().expect("an index file");
        std::fs::remove_file(index.path()).expect("an empty place");
        for (path, mode, content) in files {
            let id = if *mode == "160000" {
                content.to_string()
            } else {
                git.cmd(["hash-object", "-w", "--stdin"])
                    .stdin(content.as_bytes().to_vec())
                    .text()
                    .expect("hash-object")
            };
            git.cmd(["update-index", "--add", "--cacheinfo"])
                .arg(format!("{mode},{id},{path}"))
                .env("GIT_INDEX_FILE", index.path())
                .run()
                .expect("update-index");
        }
        let text = git
            .cmd(["write-tree"])
            .env("GIT_INDEX_FILE", index.path())
            .text()
            .expect("write-tree");
        Oid::parse(&text).expect("an id")
    }

    fn diff_tree(git: &Git, from: &Oid, to: &Oid) -> Vec<String> {
        let out = git
            .cmd(["diff-tree", "-r", "-z", "--name-only", "--no-renames"])
            .args([from.as_str(), to.as_str()])
            .run()
            .expect("diff-tree");
        let mut paths: Vec<String> = out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    }

    #[test]
    fn the_paths_are_the_ones_git_diff_tree_lists() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = Git::in_dir(dir.path());
        git.cmd(["init", "-q", "--bare"]).run().expect("git init");
        let module = "1".repeat(40);
        let before = tree(
            &git,
            &[
                ("a.txt", "100644", "a\n"),
                ("same/deep/x", "100644", "x\n"),
                ("tool", "100644", "#!/bin/sh\n"),
                ("becomes/dir", "100644", "file, then dir\n"),
                ("dir-then-file/inner", "100644", "in\n"),
                ("dir-then-file/other", "100644", "in\n"),
                ("gone/one", "100644", "1\n"),
                ("link", "120000", "a.txt"),
                ("module", "160000", &module),
                ("spaced name/z", "100644", "z\n"),
            ],
        );
        let after = tree(
            &git,
            &[
                ("a.txt", "100644", "a, changed\n"),
                ("same/deep/x", "100644", "x\n"),
                ("tool", "100755", "#!/bin/sh\n"),
                ("becomes/dir/now", "100644", "inside\n"),
                ("dir-then-file", "100644", "a file now\n"),
                ("link", "120000", "b.txt"),
                ("module", "160000", &"2".repeat(40)),
                ("new/deep/file", "100644", "new\n"),
                ("spaced name/z", "100644", "z, changed\n"),
            ],
        );
        let reader = Reader::new(git.clone());
        for (from, to) in [(&before, &after), (&after, &before), (&before, &before)] {
            assert_eq!(
                changed_paths(&reader, from, to).expect("a diff"),
                diff_tree(&git, from, to),
                "{from} -> {to}"
            );
        }
        assert!(
            changed_paths(&reader, &before, &before)
                .expect("a diff")
                .is_empty()
        );
    }

    /// The tree Git's own index gives for `edits` on `base`: read-tree, update-index,
    /// write-tree.
    fn edited_by_git(git: &Git, base: &Oid, edits: &[(String, Oid, String)]) -> Oid {
        let index = tempfile::NamedTempFile::new().expect("an index file");
        std::fs::remove_file(index.path()).expect("an empty place");
        let indexed = |args: &[&str]| {
            git.cmd(args.iter().copied())
                .env("GIT_INDEX_FILE", index.path())
        };
        indexed(&["read-tree", base.as_str()])
            .run()
            .expect("read-tree");
        let mut info = Vec::new();
        for (mode, blob, path) in edits {
            info.extend_from_slice(format!("{mode} {blob}\t{path}").as_bytes());
            info.push(0);
        }
        indexed(&["update-index", "-z", "--index-info"])
            .stdin(info)
            .run()
            .expect("update-index");
        let text = indexed(&["write-tree"]).text().expect("write-tree");
        Oid::parse(text.trim()).expect("an id")
    }

    #[test]
    fn an_edit_gives_the_tree_gits_index_gives() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = Git::in_dir(dir.path());
        git.cmd(["init", "-q", "--bare"]).run().expect("git init");
        let base = tree(
            &git,
            &[
                ("a.txt", "100644", "a\n"),
                ("a/inner", "100644", "in\n"),
                ("a-b", "100644", "ab\n"),
                ("dir/x", "100644", "x\n"),
                ("dir/sub/y", "100644", "y\n"),
                ("file-then-dir", "100644", "f\n"),
                ("module", "160000", &"1".repeat(40)),
            ],
        );
        let blob = |text: &str| {
            let id = git
                .cmd(["hash-object", "-w", "--stdin"])
                .stdin(text.as_bytes().to_vec())
                .text()
                .expect("hash-object");
            Oid::parse(id.trim()).expect("an id")
        };
        let edits = vec![
            (
                "100644".to_owned(),
                blob("a, changed\n"),
                "a.txt".to_owned(),
            ),
            (
                "100755".to_owned(),
                blob("#!/bin/sh\n"),
                "a/tool".to_owned(),
            ),
            ("100644".to_owned(), blob("new\n"), "dir/sub/new".to_owned()),
            (
                "100644".to_owned(),
                blob("deep\n"),
                "new/deep/file".to_owned(),
            ),
            (
                "100644".to_owned(),
                blob("in a dir\n"),
                "file-then-dir/now".to_owned(),
            ),
            ("100644".to_owned(), blob("a.c\n"), "a.c".to_owned()),
        ];
        let expected = edited_by_git(&git, &base, &edits);
        let reader = Reader::new(git.clone());
        let objects = Objects::new(git.location().clone());
        assert_eq!(
            edited(&reader, &objects, &git, Some(&base), &edits).expect("an edit"),
            expected
        );
        // From a commit of the tree, and from nothing.
        let commit = git
            .cmd(["commit-tree", base.as_str(), "-m", "base"])
            .text()
            .expect("commit-tree");
        let commit = Oid::parse(commit.trim()).expect("an id");
        assert_eq!(
            edited(&reader, &objects, &git, Some(&commit), &edits).expect("an edit"),
            expected
        );
        let empty = tree(&git, &[]);
        assert_eq!(
            edited(&reader, &objects, &git, None, &edits).expect("an edit"),
            edited_by_git(&git, &empty, &edits)
        );
        // Where this process does not write objects itself, `git mktree` does, alike.
        git.cmd(["config", "core.fsync", "loose-object"])
            .run()
            .expect("git config");
        let by_git = Objects::new(git.location().clone());
        assert!(by_git.store().is_none());
        assert_eq!(
            edited(&reader, &by_git, &git, Some(&base), &edits).expect("an edit"),
            expected
        );
    }

    /// A bare repository with the empty tree and one blob written: the folder (kept while the
    /// test runs), its Git, the tree's id and the blob's.
    fn bare_with_a_blob() -> (tempfile::TempDir, Git, Oid, String) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = Git::in_dir(dir.path());
        git.cmd(["init", "-q", "--bare"]).run().expect("git init");
        let empty = tree(&git, &[]);
        let blob = git
            .cmd(["hash-object", "-w", "--stdin"])
            .stdin(b"x".to_vec())
            .text()
            .expect("hash-object");
        (dir, git, empty, blob)
    }

    #[test]
    fn an_id_that_is_not_a_tree_is_a_fault() {
        let (_dir, git, empty, blob) = bare_with_a_blob();
        let reader = Reader::new(git);
        let blob = Oid::parse(&blob).expect("an id");
        assert!(changed_paths(&reader, &empty, &blob).is_err());
        let absent = Oid::parse(&"3".repeat(40)).expect("an id");
        assert!(changed_paths(&reader, &empty, &absent).is_err());
    }

    /// A tree holding `blob` under each of `names`, raw bytes as Git keeps them.
    fn tree_named(git: &Git, blob: &str, names: &[&[u8]]) -> String {
        let mut listing = Vec::new();
        for name in names {
            listing.extend(format!("100644 blob {blob}\t").bytes());
            listing.extend(*name);
            listing.push(0);
        }
        git.cmd(["mktree", "-z"])
            .stdin(listing)
            .text()
            .expect("mktree")
    }

    #[test]
    fn a_changed_path_that_is_not_utf8_is_refused_by_name() {
        let (_dir, git, empty, blob) = bare_with_a_blob();
        // Two names a lossy reading would make one, `caf\u{fffd}.rs`.
        let odd = tree_named(&git, &blob, &[b"caf\xe8.rs", b"caf\xe9.rs"]);
        let reader = Reader::new(git);
        let odd = Oid::parse(&odd).expect("an id");
        let Fault(why) = changed_paths(&reader, &empty, &odd).expect_err("not UTF-8");
        assert!(
            why.contains("caf\\xe8.rs") && why.contains("not UTF-8"),
            "{why}"
        );
    }

    #[test]
    fn a_listed_path_that_is_not_utf8_is_refused_by_name_and_one_outside_is_not_read() {
        let (_dir, git, _, blob) = bare_with_a_blob();
        let tree = tree_named(&git, &blob, &[b"caf\xe8.rs", b"ok.txt"]);
        let commit = git
            .cmd(["commit-tree", "-m", "odd", &tree])
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .text()
            .expect("commit-tree");
        let reader = Reader::new(git);
        let commit = Oid::parse(&commit).expect("an id");
        let listed = files_under(&reader, std::slice::from_ref(&commit), &["ok".to_owned()])
            .expect("the odd name lies outside the prefix");
        let paths: Vec<&str> = listed[0].iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["ok.txt"]);
        let Fault(why) = files_under(&reader, &[commit], &[String::new()]).expect_err("not UTF-8");
        assert!(
            why.contains("caf\\xe8.rs") && why.contains("not UTF-8"),
            "{why}"
        );
    }

    proptest::proptest! {
        /// Any bytes give entries or a refusal, never a panic; entries written as Git writes
        /// them read back as they were.
        #[test]
        fn any_body_parses_or_is_refused(body in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = parse(&body, 20);
        }

        #[test]
        fn written_entries_read_back(entries in proptest::collection::btree_map(
            "[a-z0-9._-]{1,12}", (proptest::bool::ANY, proptest::array::uniform20(proptest::num::u8::ANY)), 0..8)
        ) {
            let mut body = Vec::new();
            for (name, (tree, id)) in &entries {
                body.extend_from_slice(if *tree { b"40000 " } else { b"100644 " });
                body.extend_from_slice(name.as_bytes());
                body.push(0);
                body.extend_from_slice(id);
            }
            let parsed = parse(&body, 20).expect("well-formed");
            proptest::prop_assert_eq!(parsed.len(), entries.len());
            for (name, (tree, id)) in &entries {
                let entry = &parsed[name.as_bytes()];
                let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
                proptest::prop_assert_eq!(entry.is_tree(), *tree);
                proptest::prop_assert_eq!(entry.id.as_str(), hex.as_str());
            }
        }
    }

    #[test]
    fn a_tree_body_that_is_cut_short_is_refused() {
        assert!(parse(b"100644 a\0short", 20).is_err());
        assert!(parse(b"100644 a", 20).is_err());
        assert!(parse(b"", 20).expect("empty").is_empty());
    }
}
