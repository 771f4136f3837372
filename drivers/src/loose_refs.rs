//! Local refs bay moves without a `git update-ref` process: the candidate's
//! `refs/bay/inflight/<op>` and the mirror's copy of what a push moved. Each `git` costs about
//! 2 ms, and a merge ran two `update-ref`s that only set refs no one else writes.
//!
//! Git's files backend keeps a ref as the file `<common dir>/<name>` holding `<id>\n`, or as a
//! line of `packed-refs`. `git update-ref` takes the lock `<name>.lock` (created exclusively),
//! writes the new value into it and renames it over the ref; a deletion removes the file and,
//! when the ref is also packed, rewrites `packed-refs`. [`LooseRefs::apply`] does that, all
//! locks first, for the plain cases only, and declines before it writes anything otherwise, so
//! that `git` does it: another ref store (reftable), a `reference-transaction` hook or a hooks
//! path (Git runs the hook on every ref change), a reflog Git would write (the ref has one,
//! it is a branch, remote-tracking branch or notes ref, or the config says
//! `logAllRefUpdates = always`), `fsync`, shared permissions or an include in the config, a
//! deletion of a packed ref, a lock someone holds (Git waits for it a moment), or a ref whose
//! directories cannot be made (a ref in the way).

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use bay_core::git::Oid;

use crate::git::Location;
use crate::objects::Dirs;
use crate::remote::is_component;

/// Config words after which Git might write refs otherwise: lower case, matched anywhere.
/// `logAllRefUpdates = true`, which `git init` writes, logs only branches, remote-tracking
/// branches, notes and HEAD, which are never written here.
const UNUSUAL: [&str; 6] = [
    "refstorage",
    "logallrefupdates=always",
    "hookspath",
    "fsync",
    "sharedrepository",
    "include",
];

/// The loose refs of one repository, known to be written by Git as this module writes them.
#[derive(Clone, Debug)]
pub struct LooseRefs {
    common: PathBuf,
}

impl LooseRefs {
    /// The refs of the repository `location` names; `None` when `git` must write them.
    pub fn find(location: &Location) -> Option<LooseRefs> {
        let dirs = Dirs::find(location)?;
        if dirs.config_mentions(&UNUSUAL)
            || dirs.has_transaction_hook()
            || !dirs.common.join("refs").is_dir()
        {
            return None;
        }
        Some(LooseRefs {
            common: dirs.common,
        })
    }

    /// The refs of the repository `location` names, for reading only: `None` when they are
    /// not files Git's files backend keeps (reftable), or an include could say so.
    pub fn readable(location: &Location) -> Option<LooseRefs> {
        let dirs = Dirs::find(location)?;
        if dirs.config_mentions(&["refstorage", "include"]) || !dirs.common.join("refs").is_dir() {
            return None;
        }
        Some(LooseRefs {
            common: dirs.common,
        })
    }

    /// The value of the shared ref `name` (its loose file, else its line in `packed-refs`);
    /// `Ok(None)` when there is none. A symbolic ref is an error: Git must resolve it.
    pub fn value(&self, name: &str) -> std::io::Result<Option<Oid>> {
        let odd = |why: String| std::io::Error::new(ErrorKind::InvalidData, why);
        if !is_plain_name(name) {
            return Err(odd(format!("{name} is not a ref bay reads from its file")));
        }
        match std::fs::read_to_string(self.common.join(name)) {
            Ok(text) => {
                return Oid::parse(text.trim_end_matches('\n'))
                    .map(Some)
                    .map_err(|_| odd(format!("{name} holds {text:?}")));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) if e.kind() == ErrorKind::IsADirectory => return Ok(None),
            Err(e) => return Err(e),
        }
        let packed = match std::fs::read_to_string(self.common.join("packed-refs")) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        packed_entries(&packed)
            .find(|(_, packed)| *packed == name)
            .map(|(id, _)| {
                Oid::parse(id).map_err(|_| odd(format!("packed-refs gives {name} {id:?}")))
            })
            .transpose()
    }

    /// The newest entry of the ref's reflog: the value it set and when, in seconds since the
    /// epoch; `Ok(None)` when the ref has no reflog or an empty one.
    pub fn newest_log(&self, name: &str) -> std::io::Result<Option<(Oid, u64)>> {
        let text = match std::fs::read_to_string(self.common.join("logs").join(name)) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(line) = text.lines().rev().find(|line| !line.is_empty()) else {
            return Ok(None);
        };
        // `<old> <new> <name> <<email>> <seconds> <zone>\t<message>`
        let head = line.split_once('\t').map_or(line, |(head, _)| head);
        let fields: Vec<&str> = head.split(' ').collect();
        let odd = || std::io::Error::new(ErrorKind::InvalidData, format!("a reflog line {line:?}"));
        let (Some(new), Some(secs)) = (fields.get(1), fields.len().checked_sub(2)) else {
            return Err(odd());
        };
        let new = Oid::parse(new).map_err(|_| odd())?;
        let secs = fields[secs].parse::<u64>().map_err(|_| odd())?;
        Ok(Some((new, secs)))
    }

    /// Sets each ref to its value, or deletes it (`None`), as `git update-ref --stdin` with no
    /// old values would. `Ok(false)` when it declined, having written nothing: `git` must do
    /// it. An error after the locks were taken names what failed; refs already renamed into
    /// place stay (Git's own files backend is no more atomic to a reader).
    pub fn apply(&self, changes: &[(String, Option<Oid>)]) -> std::io::Result<bool> {
        if changes.is_empty() {
            return Ok(true);
        }
        let packed = match std::fs::read_to_string(self.common.join("packed-refs")) {
            Ok(text) => text,
            Err(e) if e.kind() == ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        for (name, value) in changes {
            let plain = is_plain_name(name)
                && !self.common.join("logs").join(name).exists()
                && match value {
                    Some(_) => !in_the_way(&packed, name),
                    None => !is_packed(&packed, name),
                };
            if !plain {
                return Ok(false);
            }
        }
        let mut locks: Vec<Lock> = Vec::with_capacity(changes.len());
        for (name, _) in changes {
            match Lock::take(&self.common.join(name)) {
                Some(lock) => locks.push(lock),
                // Dropping the locks taken removes them: nothing was written.
                None => return Ok(false),
            }
        }
        for (lock, (_, value)) in locks.iter_mut().zip(changes) {
            if let Some(value) = value {
                let mut file = OpenOptions::new().write(true).open(&lock.path)?;
                file.write_all(format!("{value}\n").as_bytes())?;
            }
        }
        for (lock, (_, value)) in locks.iter_mut().zip(changes) {
            match value {
                Some(_) => std::fs::rename(&lock.path, &lock.target)?,
                None => {
                    match std::fs::remove_file(&lock.target) {
                        Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
                        _ => {}
                    }
                    std::fs::remove_file(&lock.path)?;
                    self.remove_empty_parents(&lock.target);
                }
            }
            lock.done = true;
        }
        Ok(true)
    }

    /// Removes the directories a deleted ref leaves empty, up to `refs/`, as Git does.
    fn remove_empty_parents(&self, target: &Path) {
        let stop = self.common.join("refs");
        let mut dir = target.parent();
        while let Some(here) = dir {
            if here == stop || !here.starts_with(&stop) || std::fs::remove_dir(here).is_err() {
                break;
            }
            dir = here.parent();
        }
    }
}

/// A taken `<ref>.lock`; removed on drop unless its change was done.
pub(crate) struct Lock {
    pub(crate) path: PathBuf,
    pub(crate) target: PathBuf,
    pub(crate) done: bool,
}

impl Lock {
    /// Takes the lock of the ref file `target`, making its directories; `None` when it is held
    /// or cannot be made.
    pub(crate) fn take(target: &Path) -> Option<Lock> {
        let mut path = target.as_os_str().to_owned();
        path.push(".lock");
        let path = PathBuf::from(path);
        std::fs::create_dir_all(target.parent()?).ok()?;
        if target.is_dir() {
            return None;
        }
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        Some(Lock {
            path,
            target: target.to_path_buf(),
            done: false,
        })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Whether `name` is a ref name under `refs/` whose every part needs no quoting, and not
/// one whose reflog Git keeps by default (a branch, remote-tracking branch or notes ref).
fn is_plain_name(name: &str) -> bool {
    name.starts_with("refs/")
        && !["refs/heads/", "refs/remotes/", "refs/notes/"]
            .iter()
            .any(|logged| name.starts_with(logged))
        && name.split('/').all(is_component)
}

/// The id and name of each ref `packed-refs` (its text) holds.
fn packed_entries(packed: &str) -> impl Iterator<Item = (&str, &str)> {
    packed
        .lines()
        .filter(|line| !line.starts_with(['#', '^']))
        .filter_map(|line| line.split_once(' '))
}

/// The ref names `packed-refs` (its text) holds.
fn packed_names(packed: &str) -> impl Iterator<Item = &str> {
    packed_entries(packed).map(|(_, name)| name)
}

/// Whether `packed-refs` (its text) holds `name`.
fn is_packed(packed: &str, name: &str) -> bool {
    packed_names(packed).any(|packed| packed == name)
}

/// Whether a packed ref is a directory of `name` or has `name` as one: Git refuses to make
/// such a ref.
fn in_the_way(packed: &str, name: &str) -> bool {
    packed_names(packed).any(|packed| {
        name.strip_prefix(packed)
            .is_some_and(|rest| rest.starts_with('/'))
            || packed
                .strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Git;

    fn repository() -> (tempfile::TempDir, Git, LooseRefs) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = crate::testing::repository_with_a_commit(dir.path());
        let refs = LooseRefs::find(&Location::Dir(dir.path().to_path_buf())).expect("plain");
        (dir, git, refs)
    }

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

    #[test]
    fn git_reads_what_is_set_and_no_longer_sees_what_is_deleted() {
        let (dir, git, refs) = repository();
        let one = head(&git);
        let a = "refs/bay/inflight/abc.1".to_string();
        let b = "refs/bay-mirror/origin/bay/changes/abc".to_string();
        assert!(
            refs.apply(&[
                (a.clone(), Some(one.clone())),
                (b.clone(), Some(one.clone()))
            ])
            .expect("written")
        );
        assert_eq!(listed(&git), format!("{one} refs/bay/inflight/abc.1"));
        let mirrored = git.cmd(["rev-parse", "--verify", &b]).text().expect("set");
        assert_eq!(mirrored, one.as_str());
        assert!(refs.apply(&[(a.clone(), None)]).expect("deleted"));
        assert_eq!(listed(&git), "");
        assert!(
            !dir.path().join(".git/refs/bay/inflight").exists(),
            "empty directories go, as Git removes them"
        );
        let fsck = git.cmd(["fsck", "--no-progress"]).output().expect("fsck");
        assert!(fsck.success(), "{}", fsck.stderr);
        // Deleting what is not there is no error, as with `git update-ref -d`.
        assert!(refs.apply(&[(a, None)]).expect("nothing to delete"));
    }

    #[test]
    fn it_declines_before_writing_anything_where_git_would_do_more() {
        let (dir, git, refs) = repository();
        let one = head(&git);
        let set = |name: &str| (name.to_string(), Some(one.clone()));
        // A held lock: nothing is written, not even the other ref.
        let held = dir.path().join(".git/refs/bay/held.lock");
        std::fs::create_dir_all(held.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&held, "").expect("a lock");
        assert!(
            !refs
                .apply(&[set("refs/bay/free"), set("refs/bay/held")])
                .expect("declined")
        );
        assert_eq!(listed(&git), "");
        assert!(held.exists(), "someone else's lock stays");
        assert!(!dir.path().join(".git/refs/bay/free.lock").exists());
        // A ref with a reflog, and a packed ref to delete.
        git.cmd([
            "update-ref",
            "--create-reflog",
            "refs/bay/logged",
            one.as_str(),
        ])
        .run()
        .expect("update-ref");
        assert!(!refs.apply(&[set("refs/bay/logged")]).expect("declined"));
        git.cmd(["update-ref", "refs/bay/packed", one.as_str()])
            .run()
            .expect("update-ref");
        git.cmd(["pack-refs", "--all"]).run().expect("pack-refs");
        assert!(
            !refs
                .apply(&[("refs/bay/packed".into(), None)])
                .expect("declined")
        );
        assert!(
            !refs
                .apply(&[set("refs/bay/packed/under")])
                .expect("declined")
        );
        // Names that are not plain refs.
        for name in [
            "HEAD",
            "refs/bay/x.lock",
            "refs/bay/a..b",
            "refs/bay/sp ace",
            "refs/heads/logged-by-default",
            "refs/notes/bay/evidence/x",
        ] {
            assert!(!refs.apply(&[set(name)]).expect("declined"), "{name}");
        }
        // A ref in the way of a directory.
        assert!(
            !refs
                .apply(&[set("refs/bay/logged/under")])
                .expect("declined")
        );
    }

    #[test]
    fn values_and_newest_reflog_entries_read_as_git_reads_them() {
        let (_dir, git, refs) = repository();
        let one = head(&git);
        let loose = "refs/bay-mirror/origin/bay/executor/r1";
        let packed = "refs/bay-mirror/origin/bay/executor/r2";
        for name in [loose, packed] {
            git.cmd([
                "update-ref",
                "--create-reflog",
                "-m",
                "fetch",
                name,
                one.as_str(),
            ])
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
        assert_eq!(
            refs.value("refs/bay-mirror/origin/none").expect("read"),
            None
        );
        assert_eq!(
            refs.newest_log(loose).expect("read"),
            Some((two, 1_700_000_123))
        );
        // A packed ref keeps its reflog file.
        let (id, _) = refs.newest_log(packed).expect("read").expect("an entry");
        assert_eq!(id, one);
        assert_eq!(
            refs.newest_log("refs/bay-mirror/origin/none")
                .expect("read"),
            None
        );
    }

    #[test]
    fn repositories_git_must_write_are_not_written() {
        let (dir, git, _) = repository();
        let location = Location::Dir(dir.path().to_path_buf());
        // `git init` wrote `logallrefupdates = true`.
        assert!(LooseRefs::find(&location).is_some());
        git.cmd(["config", "core.logAllRefUpdates", "always"])
            .run()
            .expect("config");
        assert!(LooseRefs::find(&location).is_none());
        git.cmd(["config", "core.logAllRefUpdates", "true"])
            .run()
            .expect("config");
        assert!(LooseRefs::find(&location).is_some());
        let hook = dir.path().join(".git/hooks/reference-transaction");
        std::fs::write(&hook, "#!/bin/sh\n").expect("a hook");
        assert!(LooseRefs::find(&location).is_none());
        std::fs::remove_file(&hook).expect("no hook");
        assert!(LooseRefs::find(&location).is_some());
        git.cmd(["config", "extensions.refStorage", "reftable"])
            .run()
            .expect("config");
        assert!(LooseRefs::find(&location).is_none());
    }
}
