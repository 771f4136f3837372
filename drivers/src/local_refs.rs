//! Local refs bay moves without a `git update-ref` process: the candidate's
//! `refs/bay/inflight/<op>`, the mirror's copy of what a push moved, a view's detached HEAD.
//! Each `git` costs about 2 ms, and a merge ran two `update-ref`s that only set refs no one
//! else writes.
//!
//! gitoxide's ref transactions do what Git's files backend does: every ref locked first, each
//! checked against the value it must have (compare-and-swap), loose files renamed into place,
//! `packed-refs` rewritten for a deletion, and a reflog entry written where Git would write
//! one (`core.logAllRefUpdates` as Git resolves it, `always` included, or a reflog the ref
//! already has), signed by the committer gix reads from the same config. What gix does not
//! do, the [`Gate`] leaves to `git`: a `reference-transaction` hook, reftable, fsync, shared
//! permissions, or a committer Git would find or write otherwise.

use std::sync::Mutex;

use bay_core::git::Oid;
use bay_core::machine::Fault;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::{FullName, Target};

use crate::git::Location;
use crate::gitoxide::{Gate, from_gix, gix_id};

/// The refs of one repository, opened in-process.
#[derive(Debug)]
pub struct LocalRefs {
    repo: Mutex<gix::Repository>,
}

impl LocalRefs {
    /// The refs of the repository `location` names, to write; `None` when `git` must write
    /// them (see [`Gate`]).
    pub fn find(location: &Location) -> Option<LocalRefs> {
        let repo = crate::gitoxide::open(location)?;
        Gate::of(&repo).refs.then(|| LocalRefs {
            repo: Mutex::new(repo),
        })
    }

    /// The refs of the repository `location` names, for reading only: `None` when they are
    /// not files Git's files backend keeps (reftable).
    pub fn readable(location: &Location) -> Option<LocalRefs> {
        let repo = crate::gitoxide::open(location)?;
        let reftable = repo
            .config_snapshot()
            .string("extensions.refStorage")
            .is_some_and(|storage| storage != "files");
        (!reftable).then(|| LocalRefs {
            repo: Mutex::new(repo),
        })
    }

    fn repo(&self) -> std::sync::MutexGuard<'_, gix::Repository> {
        self.repo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of the ref `name`; `Ok(None)` when there is none. A symbolic ref is an
    /// error: Git must resolve it.
    pub fn value(&self, name: &str) -> Result<Option<Oid>, Fault> {
        let repo = self.repo();
        let odd = |e: &dyn std::fmt::Display| Fault(format!("cannot read {name}: {e}"));
        let Some(reference) = repo.try_find_reference(name).map_err(|e| odd(&e))? else {
            return Ok(None);
        };
        match reference.target() {
            gix::refs::TargetRef::Object(id) => from_gix(id).map(Some),
            gix::refs::TargetRef::Symbolic(_) => Err(odd(&"a symbolic ref")),
        }
    }

    /// The newest entry of the ref's reflog: the value it set and when, in seconds since the
    /// epoch; `Ok(None)` when the ref has no reflog or an empty one.
    pub fn newest_log(&self, name: &str) -> Result<Option<(Oid, u64)>, Fault> {
        let repo = self.repo();
        let odd = |e: &dyn std::fmt::Display| Fault(format!("cannot read {name}'s reflog: {e}"));
        let Some(reference) = repo.try_find_reference(name).map_err(|e| odd(&e))? else {
            return Ok(None);
        };
        let mut platform = reference.log_iter();
        let Some(mut lines) = platform.rev().map_err(|e| odd(&e))? else {
            return Ok(None);
        };
        let Some(line) = lines.next() else {
            return Ok(None);
        };
        let line = line.map_err(|e| odd(&e))?;
        let secs = u64::try_from(line.signature.time.seconds).map_err(|e| odd(&e))?;
        Ok(Some((from_gix(&line.new_oid)?, secs)))
    }

    /// Sets each ref to its value, or deletes it (`None`), as `git update-ref --stdin` with no
    /// old values would, in one transaction; with `keep_reflog`, each set ref gets a reflog
    /// entry, as under `core.logAllRefUpdates=always`.
    pub fn apply(&self, changes: &[(String, Option<Oid>)], keep_reflog: bool) -> Result<(), Fault> {
        let mut edits = Vec::with_capacity(changes.len());
        for (name, value) in changes {
            let change = match value {
                Some(value) => Change::Update {
                    log: LogChange {
                        mode: RefLog::AndReference,
                        force_create_reflog: keep_reflog,
                        message: Default::default(),
                    },
                    expected: PreviousValue::Any,
                    new: Target::Object(gix_id(value)?),
                },
                None => Change::Delete {
                    expected: PreviousValue::Any,
                    log: RefLog::AndReference,
                },
            };
            edits.push(RefEdit::new(full_name(name)?, change));
        }
        self.edit(edits)
    }

    /// Moves the detached `HEAD` of this worktree from `old` to `new`, as `git update-ref
    /// --no-deref HEAD <new> <old>` does: a HEAD that no longer holds `old` is left alone and
    /// the move is a fault.
    pub fn move_head(&self, old: &Oid, new: &Oid) -> Result<(), Fault> {
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange::default(),
                expected: PreviousValue::MustExistAndMatch(Target::Object(gix_id(old)?)),
                new: Target::Object(gix_id(new)?),
            },
            name: full_name("HEAD")?,
            deref: false,
        };
        self.edit(vec![edit])
    }

    fn edit(&self, edits: Vec<RefEdit>) -> Result<(), Fault> {
        if edits.is_empty() {
            return Ok(());
        }
        self.repo()
            .edit_references(edits)
            .map(|_| ())
            .map_err(|e| Fault(format!("cannot move local refs: {e}")))
    }
}

fn full_name(name: &str) -> Result<FullName, Fault> {
    FullName::try_from(name).map_err(|e| Fault(format!("{name:?} is not a ref name: {e}")))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::Path;

    use super::*;
    use crate::git::Git;

    fn head(git: &Git) -> Oid {
        Oid::parse(&git.cmd(["rev-parse", "HEAD"]).text().expect("HEAD")).expect("an id")
    }

    /// Every ref under `refs/bay`, as Git lists them.
    fn listed(git: &Git) -> String {
        git.cmd([
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/bay",
        ])
        .text()
        .expect("for-each-ref")
    }

    fn refs_of(dir: &Path) -> Option<LocalRefs> {
        LocalRefs::find(&Location::Dir(dir.to_path_buf()))
    }

    /// A repository with a committer, whose refs this process writes.
    fn repository() -> (tempfile::TempDir, Git, LocalRefs) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = crate::testing::repository_with_a_commit(dir.path());
        for (key, value) in [("user.name", "Ann"), ("user.email", "ann@x")] {
            git.cmd(["config", key, value]).run().expect("config");
        }
        let refs = refs_of(dir.path()).expect("written in-process");
        (dir, git, refs)
    }

    #[test]
    fn git_reads_what_is_set_and_no_longer_sees_what_is_deleted() {
        let (dir, git, refs) = repository();
        let one = head(&git);
        let a = "refs/bay/inflight/abc.1".to_string();
        let b = "refs/bay-mirror/origin/bay/changes/abc".to_string();
        let packed = "refs/bay/packed".to_string();
        git.cmd(["update-ref", &packed, one.as_str()])
            .run()
            .expect("update-ref");
        git.cmd(["pack-refs", "--all"]).run().expect("pack-refs");
        refs.apply(
            &[
                (a.clone(), Some(one.clone())),
                (b.clone(), Some(one.clone())),
            ],
            false,
        )
        .expect("written");
        assert_eq!(
            listed(&git),
            format!("{one} refs/bay/inflight/abc.1\n{one} {packed}")
        );
        let mirrored = git.cmd(["rev-parse", "--verify", &b]).text().expect("set");
        assert_eq!(mirrored, one.as_str());
        refs.apply(&[(a.clone(), None), (packed.clone(), None)], false)
            .expect("deleted");
        assert_eq!(listed(&git), "");
        assert!(
            !dir.path().join(".git/refs/bay/inflight").exists(),
            "empty directories go, as Git removes them"
        );
        let fsck = git.cmd(["fsck", "--no-progress"]).output().expect("fsck");
        assert!(fsck.success(), "{}", fsck.stderr);
        // Deleting what is not there is no error, as with `git update-ref -d`.
        refs.apply(&[(a, None)], false).expect("nothing to delete");
        // A held lock fails the whole transaction: nothing is written.
        let held = dir.path().join(".git/refs/bay/held.lock");
        std::fs::create_dir_all(held.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&held, "").expect("a lock");
        let set = |name: &str| (name.to_string(), Some(one.clone()));
        assert!(
            refs.apply(&[set("refs/bay/free"), set("refs/bay/held")], false)
                .is_err()
        );
        assert_eq!(listed(&git), "");
        assert!(held.exists(), "someone else's lock stays");
        for name in ["refs/bay/a..b", "refs/bay/sp ace", "refs/bay/x.lock"] {
            assert!(refs.apply(&[set(name)], false).is_err(), "{name}");
        }
    }

    #[test]
    fn values_and_newest_reflog_entries_read_as_git_reads_them() {
        let (_dir, git, refs) = repository();
        let one = head(&git);
        let loose = "refs/bay-mirror/origin/bay/executor/r1";
        let packed = "refs/bay-mirror/origin/bay/executor/r2";
        for name in [loose, packed] {
            git.cmd(["update-ref", "--create-reflog", "-m", "fetch"])
                .args([name, one.as_str()])
                .run()
                .expect("update-ref");
        }
        git.cmd(["pack-refs", "--all", "--prune"])
            .run()
            .expect("pack-refs");
        let two = Oid::parse(&crate::testing::empty_commit(&git, "two")).expect("an id");
        git.cmd(["update-ref", "-m", "fetch", loose, two.as_str()])
            .env("GIT_COMMITTER_DATE", "1700000123 +0100")
            .run()
            .expect("update-ref");
        assert_eq!(refs.value(loose).expect("read"), Some(two.clone()));
        assert_eq!(refs.value(packed).expect("read"), Some(one.clone()));
        let none = "refs/bay-mirror/origin/none";
        assert_eq!(refs.value(none).expect("read"), None);
        assert_eq!(
            refs.newest_log(loose).expect("read"),
            Some((two, 1_700_000_123))
        );
        let (id, _) = refs.newest_log(packed).expect("read").expect("an entry");
        assert_eq!(id, one);
        assert_eq!(refs.newest_log(none).expect("read"), None);
    }

    /// Which of `names` have a reflog in the repository at `dir`.
    fn logged(dir: &Path, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .filter(|name| dir.join(".git/logs").join(name).exists())
            .map(|name| name.to_string())
            .collect()
    }

    /// The reflogs Git writes, under each `core.logAllRefUpdates` Git reads, quoted or not,
    /// are the ones written here: two twin repositories, one moved by `git update-ref`, the
    /// other by this process.
    #[test]
    fn reflogs_are_written_where_git_writes_them() {
        let names = [
            "refs/bay/inflight/x",
            "refs/heads/topic",
            "refs/notes/bay/x",
            "refs/remotes/origin/x",
        ];
        for setting in ["true", "false", "always", "\"always\"", "\"true\""] {
            let (by_git, by_us) = (
                tempfile::tempdir().expect("dir"),
                tempfile::tempdir().expect("dir"),
            );
            let mut ids = Vec::new();
            for dir in [by_git.path(), by_us.path()] {
                let git = crate::testing::repository_with_a_commit(dir);
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(dir.join(".git/config"))
                    .and_then(|mut config| {
                        use std::io::Write;
                        write!(
                            config,
                            "[user]\n\tname = Ann\n\temail = ann@x\n[core]\n\tlogAllRefUpdates = {setting}\n"
                        )
                    })
                    .expect("config");
                ids.push(head(&git));
            }
            for name in names {
                Git::in_dir(by_git.path())
                    .cmd(["update-ref", name, ids[0].as_str()])
                    .run()
                    .expect("update-ref");
            }
            let changes: Vec<(String, Option<Oid>)> = names
                .iter()
                .map(|name| (name.to_string(), Some(ids[1].clone())))
                .collect();
            refs_of(by_us.path())
                .expect("in-process")
                .apply(&changes, false)
                .expect("written");
            assert_eq!(
                logged(by_us.path(), &names),
                logged(by_git.path(), &names),
                "logAllRefUpdates = {setting}"
            );
        }
    }

    /// A `reference-transaction` hook in the hooks folder that a global `core.hooksPath`
    /// names: Git runs it on every ref it moves, so refs are left to Git.
    #[test]
    fn a_global_hooks_path_with_a_transaction_hook_leaves_refs_to_git() {
        let root = tempfile::tempdir().expect("a temp dir");
        let env: Vec<(&str, OsString)> = if std::env::var_os("BAY_TEST_ROOT").is_some() {
            Vec::new()
        } else {
            let home = root.path().join("home");
            let hooks = root.path().join("hooks");
            std::fs::create_dir_all(&hooks).expect("mkdir");
            std::fs::create_dir_all(&home).expect("mkdir");
            let hook = hooks.join("reference-transaction");
            std::fs::write(
                &hook,
                "#!/bin/sh\necho \"$1\" >> \"$(dirname \"$0\")/ran\"\n",
            )
            .expect("a hook");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
            std::fs::write(
                home.join(".gitconfig"),
                format!(
                    "[user]\n\tname = Ann\n\temail = ann@x\n[core]\n\thooksPath = {}\n",
                    hooks.display()
                ),
            )
            .expect("a global config");
            crate::testing::repository_with_a_commit(&root.path().join("repo"));
            vec![("HOME", home.into()), ("BAY_TEST_ROOT", root.path().into())]
        };
        let here =
            "local_refs::tests::a_global_hooks_path_with_a_transaction_hook_leaves_refs_to_git";
        if !crate::testing::in_child(here, &env) {
            return;
        }
        let root = std::path::PathBuf::from(std::env::var_os("BAY_TEST_ROOT").expect("set"));
        let repo = root.join("repo");
        assert!(refs_of(&repo).is_none(), "left to Git");
        // Git, the oracle, runs the hook.
        let git = Git::in_dir(&repo);
        git.cmd(["update-ref", "refs/bay/x", head(&git).as_str()])
            .run()
            .expect("update-ref");
        assert!(root.join("hooks/ran").exists(), "Git ran the hook");
        // Without the hook, refs are written here again.
        std::fs::remove_file(root.join("hooks/reference-transaction")).expect("no hook");
        assert!(refs_of(&repo).is_some());
        // A hook in the repository's own hooks folder is not run under a hooks path.
        std::fs::write(repo.join(".git/hooks/reference-transaction"), "#!/bin/sh\n")
            .expect("a hook");
        assert!(refs_of(&repo).is_some());
    }

    #[test]
    fn repositories_git_must_write_are_left_to_git() {
        let (dir, git, _) = repository();
        let hook = dir.path().join(".git/hooks/reference-transaction");
        std::fs::write(&hook, "#!/bin/sh\n").expect("a hook");
        assert!(refs_of(dir.path()).is_none());
        std::fs::remove_file(&hook).expect("no hook");
        assert!(refs_of(dir.path()).is_some());
        git.cmd(["config", "core.fsync", "reference"])
            .run()
            .expect("config");
        assert!(refs_of(dir.path()).is_none());
        git.cmd(["config", "--unset", "core.fsync"])
            .run()
            .expect("config");
        git.cmd(["config", "extensions.refStorage", "reftable"])
            .run()
            .expect("config");
        assert!(refs_of(dir.path()).is_none());
    }
}
