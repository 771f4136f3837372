//! Objects written in-process against real Git as the oracle: the same ids as `git hash-object`
//! and `git commit-tree`, files Git reads back and `git fsck --strict` accepts, and `git`
//! writing instead wherever the store is not a plain SHA-1 one.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bay_core::git::Oid;
use bay_drivers::git::{Git, Location};
use bay_drivers::objects::{Identity, Kind, Objects, Store, commit_body};
use proptest::prelude::*;

/// A fixed moment, given to Git as its dates and to [`commit_body`] as its clock.
const SECS: u64 = 1_700_000_000;

fn git(dir: &Path) -> Git {
    Git::in_dir(dir)
}

fn run(dir: &Path, args: &[&str], stdin: &[u8]) -> String {
    git(dir)
        .cmd(args)
        .stdin(stdin)
        .text()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A new repository in a temporary directory; `bare` or with a worktree, with `init` options.
fn init(bare: bool, options: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let mut args = vec!["init", "--quiet"];
    if bare {
        args.push("--bare");
    }
    args.extend(options);
    args.push("repo");
    run(dir.path(), &args, b"");
    let repo = dir.path().join("repo");
    (dir, repo)
}

fn store(repo: &Path) -> Store {
    Store::find(&Location::Dir(repo.to_path_buf())).expect("a plain SHA-1 store")
}

/// `git fsck --strict` reads and checks every loose object, reachable or not; its notices
/// about a repository without branches are no fault.
fn fsck(repo: &Path) {
    let out = git(repo)
        .cmd(["fsck", "--strict", "--no-dangling"])
        .output()
        .expect("git runs");
    let complaints: Vec<&str> = out
        .stderr
        .lines()
        .filter(|line| !line.starts_with("notice:"))
        .collect();
    assert!(out.success() && complaints.is_empty(), "fsck: {out:?}");
}

/// What `git commit-tree` writes for these, at [`SECS`].
fn git_commit(repo: &Path, who: &Identity, tree: &Oid, parents: &[&Oid], message: &str) -> Oid {
    let git = git(repo);
    let mut call = git.cmd(["commit-tree", "--no-gpg-sign", tree.as_str()]);
    for parent in parents {
        call = call.arg("-p").arg(parent.as_str());
    }
    let date = format!("{SECS} +0000");
    let text = call
        .env("GIT_AUTHOR_NAME", &who.name)
        .env("GIT_AUTHOR_EMAIL", &who.email)
        .env("GIT_COMMITTER_NAME", &who.name)
        .env("GIT_COMMITTER_EMAIL", &who.email)
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .args(["-F", "-"])
        .stdin(message.as_bytes())
        .text()
        .unwrap_or_else(|e| panic!("{e}"));
    Oid::parse(&text).expect("an id")
}

/// Blobs of every length across SHA-1's padding edges (the header adds 7 to 10 bytes), a
/// large one, and ones over one and two stored blocks: the ids `git hash-object` gives, and
/// the bytes `git cat-file` reads back.
#[test]
fn blobs_match_git() {
    let (_dir, repo) = init(true, &[]);
    let store = store(&repo);
    let files = tempfile::tempdir().expect("a temp dir");
    let mut bodies: Vec<Vec<u8>> = (0..=200)
        .map(|n| (0..n).map(|i| (i * 31 + n) as u8).collect())
        .collect();
    for n in [65_534, 65_535, 65_536, 131_071, 131_072, 1_000_000] {
        bodies.push((0..n).map(|i| (i % 251) as u8).collect());
    }
    let mut paths = Vec::new();
    let mut ours = Vec::new();
    for (n, body) in bodies.iter().enumerate() {
        let path = files.path().join(n.to_string());
        std::fs::write(&path, body).expect("a file");
        paths.push(path.to_string_lossy().into_owned());
        ours.push(store.write(Kind::Blob, body).expect("written").to_string());
    }
    let mut args = vec!["hash-object", "--no-filters"];
    args.extend(paths.iter().map(String::as_str));
    let theirs = run(&repo, &args, b"");
    assert_eq!(theirs.lines().collect::<Vec<_>>(), ours);
    for (body, id) in bodies.iter().zip(&ours) {
        let back = git(&repo)
            .cmd(["cat-file", "blob", id])
            .run()
            .expect("git reads it");
        assert!(back.stdout == *body, "blob {id} reads back as written");
    }
    fsck(&repo);
}

/// The commits `git commit-tree` writes, byte for byte: messages with and without a final
/// newline, empty, blank lines kept, non-ASCII; none, one and several parents.
#[test]
fn commits_match_git() {
    let (_dir, repo) = init(false, &[]);
    let store = store(&repo);
    let who = Identity::default();
    let tree = Objects::new(Location::Dir(repo.clone()))
        .empty_tree(&git(&repo))
        .expect("the empty tree");
    assert_eq!(tree.as_str(), "4b825dc642cb6eb9a060e54bf8d69288fbee4904");
    let mut parents: Vec<Oid> = Vec::new();
    let messages = [
        "one line",
        "one line\n",
        "",
        "\n\nlead and trail\n\n\n",
        "  spaces kept  \n# not a comment\n",
        "bay: draft of ch-1\n\nTrailer: value\n",
        "Grüße, 日本語, emoji 😀\r\n",
    ];
    for (n, message) in messages.iter().enumerate() {
        let parents_here: Vec<&Oid> = parents.iter().rev().take(n.min(3)).collect();
        let body = commit_body(&tree, &parents_here, &who, SECS, message).expect("plain");
        let ours = store.write(Kind::Commit, &body).expect("written");
        let theirs = git_commit(&repo, &who, &tree, &parents_here, message);
        assert_eq!(ours, theirs, "message {message:?}");
        let printed = run(&repo, &["cat-file", "-p", ours.as_str()], b"");
        assert!(printed.contains("author bay <bay@localhost> 1700000000 +0000"));
        parents.push(ours);
    }
    let identity = Identity {
        name: "Jöns Ågren".into(),
        email: "jons@example.org".into(),
    };
    let body = commit_body(&tree, &[], &identity, SECS, "x\n").expect("plain");
    let ours = store.write(Kind::Commit, &body).expect("written");
    assert_eq!(ours, git_commit(&repo, &identity, &tree, &[], "x\n"));
    fsck(&repo);
}

/// Where Git would write other bytes than given, the text is not written here.
#[test]
fn text_git_would_change_is_left_to_git() {
    let tree = Oid::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904").expect("an id");
    let who = Identity::default();
    for message in [
        "a\0b",
        "x\u{fffe}",
        "x\u{fdd0}",
        "x\u{1ffff}",
        "x\u{10fffe}",
    ] {
        assert_eq!(commit_body(&tree, &[], &who, SECS, message), None);
    }
    for (name, email) in [
        (" bay", "b@x"),
        ("bay.", "b@x"),
        ("b<a>y", "b@x"),
        ("", "b@x"),
    ] {
        let who = Identity {
            name: name.into(),
            email: email.into(),
        };
        assert_eq!(commit_body(&tree, &[], &who, SECS, "m"), None, "{who:?}");
    }
}

/// Loose objects as Git leaves them: read-only files in their fan-out directory, written
/// once; a second write of the same object changes nothing and is no error.
#[test]
fn objects_are_read_only_and_written_once() {
    let (_dir, repo) = init(true, &[]);
    let store = store(&repo);
    let id = store.write(Kind::Blob, b"hello\n").expect("written");
    assert_eq!(id.as_str(), "ce013625030ba8dba906f756967f9e9ca394464a");
    let path = repo.join("objects/ce/013625030ba8dba906f756967f9e9ca394464a");
    let mode = std::fs::metadata(&path)
        .expect("the file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o222, 0, "read-only: {mode:o}");
    assert_eq!(store.write(Kind::Blob, b"hello\n").expect("again"), id);
    let left: Vec<_> = std::fs::read_dir(repo.join("objects/ce"))
        .expect("the fan-out directory")
        .collect();
    assert_eq!(left.len(), 1, "no temporary file left behind");
}

/// A linked worktree writes into the common store, as Git does.
#[test]
fn a_linked_worktree_writes_into_the_common_store() {
    let (dir, repo) = init(false, &[]);
    run(
        &repo,
        &["commit", "--quiet", "--allow-empty", "-m", "first"],
        b"",
    );
    let linked = dir.path().join("linked");
    run(
        &repo,
        &[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            linked.to_str().expect("utf-8"),
        ],
        b"",
    );
    let id = store(&linked)
        .write(Kind::Blob, b"shared\n")
        .expect("written");
    run(&repo, &["cat-file", "-e", id.as_str()], b"");
    let from_common = Store::find(&Location::GitDir(repo.join(".git"))).expect("a store");
    assert_eq!(
        from_common.write(Kind::Blob, b"shared\n").expect("again"),
        id
    );
}

/// Where the store is not a plain SHA-1 one, nothing is written here and `git` writes.
#[test]
fn an_unusual_store_is_left_to_git() {
    let (_dir, sha256) = init(true, &["--object-format=sha256"]);
    assert!(Store::find(&Location::Dir(sha256.clone())).is_none());
    let objects = Objects::new(Location::Dir(sha256.clone()));
    let tree = objects.empty_tree(&git(&sha256)).expect("git writes it");
    assert_eq!(tree.as_str().len(), 64);
    let commit = objects
        .commit(&git(&sha256), &Identity::default(), &tree, &[], "m\n")
        .expect("git writes it");
    assert_eq!(commit.as_str().len(), 64);
    fsck(&sha256);

    let (_dir, shared) = init(true, &["--shared=group"]);
    assert!(Store::find(&Location::Dir(shared)).is_none());
    let (_dir, repo) = init(false, &[]);
    run(&repo, &["config", "core.fsync", "loose-object"], b"");
    assert!(Store::find(&Location::Dir(repo)).is_none());
    let nowhere = tempfile::tempdir().expect("a temp dir");
    assert!(Store::find(&Location::Dir(nowhere.path().to_path_buf())).is_none());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any bytes: the id `git hash-object` gives.
    #[test]
    fn any_blob_matches_git(body in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let (_dir, repo) = init(true, &[]);
        let ours = store(&repo).write(Kind::Blob, &body).expect("written");
        let theirs = git(&repo)
            .cmd(["hash-object", "--stdin"])
            .stdin(body)
            .text()
            .expect("git hashes it");
        prop_assert_eq!(ours.as_str(), theirs);
    }

    /// Any message: written here, it is the commit Git writes; left to Git, it is one whose
    /// text Git would change.
    #[test]
    fn any_commit_matches_git(message in any::<String>()) {
        let (_dir, repo) = init(true, &[]);
        let tree = Oid::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904").expect("an id");
        let who = Identity::default();
        if let Some(body) = commit_body(&tree, &[], &who, SECS, &message) {
            let ours = store(&repo).write(Kind::Commit, &body).expect("written");
            let theirs = git_commit(&repo, &who, &tree, &[], &message);
            prop_assert_eq!(ours, theirs);
        }
    }
}
