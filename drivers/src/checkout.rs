//! The main checkout, for `bay save`: what is under way in it, its edits as a commit, and the
//! move to the merge afterwards.
//!
//! The edits are read through a temporary index (a copy of the checkout's own, with its time,
//! so Git's stat cache still serves and still doubts what it should), never the checkout's
//! index: a save that is refused, or that fails, has changed no file, no index and no ref of
//! the checkout.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bay_core::git::Oid;
use bay_core::machine::Fault;
use bay_core::save::{After, Before};

use crate::git::{Git, Location};
use crate::objects::{Identity, Objects};
use crate::reader::Reader;
use crate::trees::{self, Entry};

/// The checkout's edits, committed on `HEAD` and on no branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub head: Oid,
    /// Every changed, new and deleted file that Git does not ignore, over `HEAD`'s tree.
    pub tree: Oid,
    /// `tree` differs from `HEAD`'s.
    pub changed: bool,
}

/// One checkout: its folder and the Git directory every worktree of the clone shares.
#[derive(Clone, Debug)]
pub struct Checkout {
    top: PathBuf,
    common_dir: PathBuf,
    /// Where the saved edits' commit is written.
    objects: Objects,
    /// How trees are read: the clone's one reader, which the command shares.
    reader: Arc<Reader>,
}

/// What a state file in a worktree's Git directory says is under way.
const UNDER_WAY: [(&str, &str); 5] = [
    ("MERGE_HEAD", "merge"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
];

impl Checkout {
    /// The checkout at `top`, of the clone whose Git directory is `common_dir` and whose
    /// objects `reader` reads.
    pub fn new(
        top: impl Into<PathBuf>,
        common_dir: impl Into<PathBuf>,
        reader: Arc<Reader>,
    ) -> Checkout {
        let common_dir = common_dir.into();
        Checkout {
            top: top.into(),
            objects: Objects::new(Location::GitDir(common_dir.clone())),
            common_dir,
            reader,
        }
    }

    fn git(&self) -> Git {
        Git::in_dir(&self.top)
    }

    /// This worktree's own Git directory.
    fn git_dir(&self) -> Result<PathBuf, Fault> {
        let text = self.git().cmd(["rev-parse", "--absolute-git-dir"]).text()?;
        Ok(PathBuf::from(text.trim()))
    }

    /// The facts `bay_core::save::refuse` judges, read without changing anything. The
    /// submodules among the edits come from [`Checkout::snapshot`].
    pub fn before(&self, in_view: bool) -> Result<Before, Fault> {
        let git_dir = self.git_dir()?;
        let main_worktree = same_dir(&git_dir, &self.common_dir);
        let under_way = UNDER_WAY
            .iter()
            .find(|(file, _)| git_dir.join(file).exists())
            .map(|(_, what)| (*what).to_owned());
        let unmerged = self
            .git()
            .cmd(["diff", "--name-only", "--diff-filter=U", "-z"])
            .run()?
            .stdout;
        Ok(Before {
            in_view,
            main_worktree,
            under_way,
            unmerged: split_z(&unmerged)?,
            submodules: Vec::new(),
        })
    }

    /// The checkout's edits as a tree over `HEAD`, and the submodules among them.
    pub fn snapshot(&self) -> Result<(Snapshot, Vec<String>), Fault> {
        let head = oid(&self.git().cmd(["rev-parse", "--verify", "HEAD"]).text()?)?;
        let head_tree = oid(&self
            .git()
            .cmd(["rev-parse", "--verify", "HEAD^{tree}"])
            .text()?)?;
        let scratch = tempfile::Builder::new()
            .prefix("bay-save-")
            .tempdir_in(&self.common_dir)
            .map_err(|e| Fault(format!("cannot make a scratch index: {e}")))?;
        let index = scratch.path().join("index");
        let own = self.git_dir()?.join("index");
        if own.exists() {
            copy_index(&own, &index)?;
        } else {
            self.with_index(&index, ["read-tree", "HEAD"])?;
        }
        self.with_index(&index, ["add", "--all"])?;
        let tree = oid(&self.with_index(&index, ["write-tree"])?)?;
        let submodules = self.gitlinks(&head_tree, &tree)?;
        let changed = tree != head_tree;
        Ok((
            Snapshot {
                head,
                tree,
                changed,
            },
            submodules,
        ))
    }

    /// The paths of the submodules (gitlinks) added, removed or moved between the trees
    /// `from` and `to`, on either side, walked in-process; a name that is not UTF-8 is
    /// refused by name.
    fn gitlinks(&self, from: &Oid, to: &Oid) -> Result<Vec<String>, Fault> {
        trees::changed_files(&self.reader, from, to)?
            .into_iter()
            .filter(|change| {
                [&change.old, &change.new]
                    .into_iter()
                    .flatten()
                    .any(Entry::is_submodule)
            })
            .map(|change| {
                bay_core::paths::from_git(&change.path)
                    .map(str::to_owned)
                    .map_err(Fault)
            })
            .collect()
    }

    fn with_index<const N: usize>(&self, index: &Path, args: [&str; N]) -> Result<String, Fault> {
        Ok(self.git().cmd(args).env("GIT_INDEX_FILE", index).text()?)
    }

    /// Commits `snapshot` on its `HEAD`, on no branch, with `message`.
    pub fn commit(&self, snapshot: &Snapshot, message: &str) -> Result<Oid, Fault> {
        self.objects.commit(
            &self.git(),
            &Identity::default(),
            &snapshot.tree,
            &[&snapshot.head],
            &format!("{}\n", message.trim_end()),
        )
    }

    /// The facts `bay_core::save::stays` judges, after a merge of `saved`.
    pub fn after(&self, saved: &Snapshot) -> Result<After, Fault> {
        let branch = self
            .git()
            .cmd(["symbolic-ref", "--quiet", "--short", "HEAD"])
            .output()?;
        let branch = branch.success().then(|| branch.text());
        let (now, _) = self.snapshot()?;
        Ok(After {
            branch,
            head_unchanged: now.head == saved.head,
            files_unchanged: now.tree == saved.tree,
        })
    }

    /// Moves `branch` from `from` to `to` (leased on `from`) and makes the index and files
    /// `to`'s. Only called when the files hold exactly the saved edits, which `to` contains.
    pub fn fast_forward(&self, branch: &str, from: &Oid, to: &Oid) -> Result<(), Fault> {
        let name = format!("refs/heads/{branch}");
        self.git()
            .cmd(["update-ref", "-m", "bay save: fast-forward to the merge"])
            .args([name.as_str(), to.as_str(), from.as_str()])
            .run()?;
        self.git()
            .cmd(["read-tree", "--reset", "-u", to.as_str()])
            .run()?;
        Ok(())
    }
}

/// Copies the index at `from` to `to` with its modification time. Git trusts a file's cached
/// stat only when the file changed before the index was written; a file written in the same
/// second as the index is "racily clean" and Git reads its content instead. It tells the two
/// apart by the index file's own modification time, so a copy that took the time of the copy
/// makes a same-sized edit from just before it look unchanged.
fn copy_index(from: &Path, to: &Path) -> Result<(), Fault> {
    let fault = |e: std::io::Error| Fault(format!("cannot copy the index: {e}"));
    // Read first: an index rewritten meanwhile gets an older time, which only makes Git read
    // more files, never fewer.
    let written = std::fs::metadata(from)
        .and_then(|m| m.modified())
        .map_err(fault)?;
    std::fs::copy(from, to).map_err(fault)?;
    std::fs::File::options()
        .write(true)
        .open(to)
        .and_then(|file| file.set_modified(written))
        .map_err(fault)
}

/// Whether two paths name the same folder, however they are spelled.
fn same_dir(one: &Path, two: &Path) -> bool {
    match (one.canonicalize(), two.canonicalize()) {
        (Ok(one), Ok(two)) => one == two,
        _ => one == two,
    }
}

/// The fields of Git's `-z` output. A path that is not UTF-8 is refused by name
/// ([`bay_core::paths::from_git`]), never read lossily.
fn split_z(bytes: &[u8]) -> Result<Vec<String>, Fault> {
    bytes
        .split(|b| *b == 0)
        .filter(|part| !part.is_empty())
        .map(|part| {
            bay_core::paths::from_git(part)
                .map(str::to_owned)
                .map_err(Fault)
        })
        .collect()
}

fn oid(text: &str) -> Result<Oid, Fault> {
    Oid::parse(text.trim()).map_err(Fault)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::repository_with_a_commit;
    use std::time::{Duration, SystemTime};

    fn set_time(path: &Path, time: SystemTime) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .and_then(|file| file.set_modified(time))
            .expect("a file's time can be set");
    }

    /// A file edited in the second its index was written, to the same size: only the index's
    /// own time tells Git to read it. The times are set rather than waited for, and ctime is
    /// left out of Git's comparison, as it would match within that one second too.
    #[test]
    fn a_same_sized_edit_in_the_second_the_index_was_written_is_an_edit() {
        let dir = tempfile::tempdir().expect("a folder");
        let git = repository_with_a_commit(dir.path());
        git.cmd(["config", "core.trustctime", "false"])
            .run()
            .expect("config");
        let file = dir.path().join("greeting.txt");
        let second = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        std::fs::write(&file, "Hello\n").expect("write");
        set_time(&file, second);
        git.cmd(["add", "greeting.txt"]).run().expect("add");
        git.cmd(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "-m", "two"])
            .run()
            .expect("commit");
        set_time(&dir.path().join(".git/index"), second);
        std::fs::write(&file, "Topic\n").expect("write");
        set_time(&file, second);
        let seen = git
            .cmd(["--no-optional-locks", "status", "--porcelain"])
            .text()
            .expect("status");
        assert_eq!(seen.trim(), "M greeting.txt", "Git sees the edit");

        let checkout = Checkout::new(
            dir.path(),
            dir.path().join(".git"),
            Arc::new(Reader::new(git.clone())),
        );
        let (snapshot, _) = checkout.snapshot().expect("a snapshot");
        assert!(snapshot.changed, "the edit was missed");
    }

    /// A file edit alone names no submodule; one added beside it is named, and, once
    /// committed and taken out of the checkout, named again from the old side.
    #[test]
    fn the_snapshot_names_submodules_added_or_removed() {
        let dir = tempfile::tempdir().expect("a folder");
        let git = repository_with_a_commit(dir.path());
        let checkout = Checkout::new(
            dir.path(),
            dir.path().join(".git"),
            Arc::new(Reader::new(git.clone())),
        );
        std::fs::write(dir.path().join("greeting.txt"), "Topic\n").expect("write");
        let (snapshot, submodules) = checkout.snapshot().expect("a snapshot");
        assert!(snapshot.changed);
        assert!(submodules.is_empty(), "{submodules:?}");
        let nested = dir.path().join("vendor/x");
        repository_with_a_commit(&nested);
        let (_, submodules) = checkout.snapshot().expect("a snapshot");
        assert_eq!(submodules, vec!["vendor/x".to_owned()]);
        git.cmd(["add", "--all"]).run().expect("add");
        git.cmd(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "-m", "with a submodule"])
            .run()
            .expect("commit");
        std::fs::remove_dir_all(&nested).expect("rm");
        let (_, submodules) = checkout.snapshot().expect("a snapshot");
        assert_eq!(submodules, vec!["vendor/x".to_owned()]);
        // A submodule whose name is not UTF-8 is refused by name, never read as another.
        use std::os::unix::ffi::OsStrExt;
        let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"vendor/\xe9"));
        repository_with_a_commit(&odd);
        let Fault(why) = checkout.snapshot().expect_err("a name that is not UTF-8");
        assert!(why.contains("vendor/\\xe9"), "{why}");
    }
}
