//! Objects written in-process (gitoxide) against real Git as the oracle: the same ids as `git
//! hash-object`, `git mktree` and `git commit-tree`, files Git reads back and `git fsck
//! --strict` accepts, and `git` writing instead wherever the config asks for what gix does not
//! do.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bay_core::git::Oid;
use bay_drivers::git::{Git, Location};
use bay_drivers::objects::{Identity, Objects};
use proptest::prelude::*;

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

/// The objects of `repo`, known to be written in-process.
fn objects(repo: &Path) -> Objects {
    let objects = Objects::new(Location::Dir(repo.to_path_buf()));
    assert!(
        objects.in_process(),
        "{} is written in-process",
        repo.display()
    );
    objects
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

/// What `git commit-tree` writes for these, at `secs`.
fn git_commit(
    repo: &Path,
    who: &Identity,
    tree: &Oid,
    parents: &[&Oid],
    message: &str,
    secs: &str,
) -> Oid {
    let git = git(repo);
    let mut call = git.cmd(["commit-tree", "--no-gpg-sign", tree.as_str()]);
    for parent in parents {
        call = call.arg("-p").arg(parent.as_str());
    }
    let date = format!("{secs} +0000");
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

/// A commit written through `objects`, and the one Git writes for the same at the moment the
/// first holds.
fn both_commits(
    objects: &Objects,
    repo: &Path,
    who: &Identity,
    tree: &Oid,
    parents: &[&Oid],
    message: &str,
) -> (Oid, Oid) {
    let ours = objects
        .commit(&git(repo), who, tree, parents, message)
        .expect("written");
    let raw = git(repo)
        .cmd(["cat-file", "commit", ours.as_str()])
        .run()
        .expect("git reads it")
        .stdout;
    let text = String::from_utf8_lossy(&raw);
    let committer = text
        .lines()
        .find(|line| line.starts_with("committer "))
        .expect("a committer");
    let secs = committer.rsplit(' ').nth(1).expect("a time");
    let theirs = git_commit(repo, who, tree, parents, message, secs);
    (ours, theirs)
}

/// Blobs of many lengths, a large one: the ids `git hash-object` gives, and the bytes `git
/// cat-file` reads back.
#[test]
fn blobs_match_git() {
    let (_dir, repo) = init(true, &[]);
    let objects = objects(&repo);
    let files = tempfile::tempdir().expect("a temp dir");
    let mut bodies: Vec<Vec<u8>> = (0..=70)
        .map(|n| (0..n).map(|i| (i * 31 + n) as u8).collect())
        .collect();
    for n in [65_536, 1_000_000] {
        bodies.push((0..n).map(|i| (i % 251) as u8).collect());
    }
    let mut paths = Vec::new();
    let mut ours = Vec::new();
    for (n, body) in bodies.iter().enumerate() {
        let path = files.path().join(n.to_string());
        std::fs::write(&path, body).expect("a file");
        paths.push(path.to_string_lossy().into_owned());
        let id = objects.blob(&git(&repo), body.clone()).expect("written");
        ours.push(id.to_string());
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
/// newline, empty, blank lines kept, non-ASCII, and text Git would change (left to Git); none,
/// one and several parents.
#[test]
fn commits_match_git() {
    let (_dir, repo) = init(false, &[]);
    let objects = objects(&repo);
    let who = Identity::default();
    let tree = objects.empty_tree(&git(&repo)).expect("the empty tree");
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
        "x\u{fffe}",
        "x\u{fdd0}",
    ];
    for (n, message) in messages.iter().enumerate() {
        let parents_here: Vec<&Oid> = parents.iter().rev().take(n.min(3)).collect();
        let (ours, theirs) = both_commits(&objects, &repo, &who, &tree, &parents_here, message);
        assert_eq!(ours, theirs, "message {message:?}");
        parents.push(ours);
    }
    for (name, email) in [
        ("Jöns Ågren", "jons@example.org"),
        (" bay", "b@x"),
        ("bay.", "b@x"),
    ] {
        let who = Identity {
            name: name.into(),
            email: email.into(),
        };
        let (ours, theirs) = both_commits(&objects, &repo, &who, &tree, &[], "x\n");
        assert_eq!(ours, theirs, "{who:?}");
    }
    fsck(&repo);
}

/// Trees as `git mktree` writes them: Git's order, where a subtree sorts as if its name ended
/// in `/`, and every mode.
#[test]
fn trees_match_git() {
    let (_dir, repo) = init(true, &[]);
    let objects = objects(&repo);
    let blob = objects.blob(&git(&repo), b"x\n".to_vec()).expect("a blob");
    let empty = objects.empty_tree(&git(&repo)).expect("the empty tree");
    let module = Oid::parse(&"1".repeat(40)).expect("an id");
    let entries: std::collections::BTreeMap<Vec<u8>, bay_drivers::trees::Entry> = [
        ("a.b", "100644", &blob),
        ("a", "40000", &empty),
        ("a-b", "100755", &blob),
        ("link", "120000", &blob),
        ("module", "160000", &module),
    ]
    .into_iter()
    .map(|(name, mode, id)| {
        (
            name.as_bytes().to_vec(),
            bay_drivers::trees::Entry {
                mode: mode.into(),
                id: id.clone(),
            },
        )
    })
    .collect();
    let ours = objects.tree(&git(&repo), &entries).expect("written");
    let mut listing = String::new();
    for (name, entry) in &entries {
        let name = String::from_utf8_lossy(name);
        listing.push_str(&format!(
            "{} {} {}\t{name}\n",
            entry.mode,
            entry.kind(),
            entry.id
        ));
    }
    let theirs = run(&repo, &["mktree", "--missing"], listing.as_bytes());
    assert_eq!(ours.as_str(), theirs);
}

/// Loose objects as Git leaves them: read-only files in their fan-out directory, written
/// once; a second write of the same object changes nothing and is no error.
#[test]
fn objects_are_read_only_and_written_once() {
    let (_dir, repo) = init(true, &[]);
    let objects = objects(&repo);
    let write = || {
        objects
            .blob(&git(&repo), b"hello\n".to_vec())
            .expect("written")
    };
    let id = write();
    assert_eq!(id.as_str(), "ce013625030ba8dba906f756967f9e9ca394464a");
    let path = repo.join("objects/ce/013625030ba8dba906f756967f9e9ca394464a");
    let mode = std::fs::metadata(&path)
        .expect("the file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o222, 0, "read-only: {mode:o}");
    assert_eq!(write(), id);
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
    let id = objects(&linked)
        .blob(&git(&linked), b"shared\n".to_vec())
        .expect("written");
    run(&repo, &["cat-file", "-e", id.as_str()], b"");
    let from_common = Objects::new(Location::GitDir(repo.join(".git")));
    assert!(from_common.in_process());
    assert_eq!(
        from_common
            .blob(&git(&repo), b"shared\n".to_vec())
            .expect("again"),
        id
    );
}

/// A SHA-256 repository is written in-process too; where the config asks for what gix does
/// not do (fsync, shared permissions), `git` writes.
#[test]
fn an_unusual_store_is_left_to_git() {
    let (_dir, sha256) = init(true, &["--object-format=sha256"]);
    let objects = Objects::new(Location::Dir(sha256.clone()));
    let tree = objects.empty_tree(&git(&sha256)).expect("written");
    assert_eq!(tree.as_str().len(), 64);
    let (ours, theirs) = both_commits(&objects, &sha256, &Identity::default(), &tree, &[], "m\n");
    assert_eq!(ours, theirs);
    assert_eq!(ours.as_str().len(), 64);
    fsck(&sha256);

    let (_dir, shared) = init(true, &["--shared=group"]);
    assert!(!Objects::new(Location::Dir(shared)).in_process());
    let (_dir, repo) = init(false, &[]);
    run(&repo, &["config", "core.fsync", "loose-object"], b"");
    let by_git = Objects::new(Location::Dir(repo.clone()));
    assert!(!by_git.in_process());
    let blob = by_git
        .blob(&git(&repo), b"x".to_vec())
        .expect("git writes it");
    run(&repo, &["cat-file", "-e", blob.as_str()], b"");
    let nowhere = tempfile::tempdir().expect("a temp dir");
    assert!(!Objects::new(Location::Dir(nowhere.path().to_path_buf())).in_process());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any bytes: the id `git hash-object` gives.
    #[test]
    fn any_blob_matches_git(body in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let (_dir, repo) = init(true, &[]);
        let ours = objects(&repo).blob(&git(&repo), body.clone()).expect("written");
        let theirs = git(&repo)
            .cmd(["hash-object", "--stdin"])
            .stdin(body)
            .text()
            .expect("git hashes it");
        prop_assert_eq!(ours.as_str(), theirs);
    }

    /// Any message without a NUL (which Git refuses): the commit Git writes.
    #[test]
    fn any_commit_matches_git(message in "[^\u{0}]*") {
        let (_dir, repo) = init(true, &[]);
        let tree = Oid::parse("4b825dc642cb6eb9a060e54bf8d69288fbee4904").expect("an id");
        let (ours, theirs) =
            both_commits(&objects(&repo), &repo, &Identity::default(), &tree, &[], &message);
        prop_assert_eq!(ours, theirs);
    }
}
