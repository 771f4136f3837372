//! Where one check's files live: `<common git dir>/bay/check/<candidate>/<slot>/`, beside the
//! repository's objects (each run at once on one candidate has its own slot), so that every linked worktree's runner shares one place and a
//! large candidate is written on the same disk as the objects it comes from.

use std::io;
use std::path::{Path, PathBuf};

use bay_core::git::Oid;

/// The directories of one check run on one candidate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckDirs {
    /// `bay/check/<candidate>/<slot>`: everything below, and the temporary indexes Git fills.
    pub root: PathBuf,
    /// What the check sees of the candidate's tree; the check starts here and may write here.
    pub tree: PathBuf,
    /// The `adapter` paths, from the base; read-only in the sandbox.
    pub adapter: PathBuf,
    /// The check's `HOME`, empty at the start of each run.
    pub home: PathBuf,
    /// The check's `TMPDIR`, empty at the start of each run.
    pub tmp: PathBuf,
    /// The Git directory a history-reading check reads history from, made only for one;
    /// read-only in the sandbox.
    pub git: PathBuf,
}

impl CheckDirs {
    /// The directories for run `slot` on `candidate` under the common Git directory `git_dir`.
    pub fn of(git_dir: &Path, candidate: &Oid, slot: u32) -> CheckDirs {
        let root = git_dir
            .join("bay")
            .join("check")
            .join(candidate.as_str())
            .join(slot.to_string());
        CheckDirs {
            tree: root.join("tree"),
            adapter: root.join("adapter"),
            home: root.join("home"),
            tmp: root.join("tmp"),
            git: root.join("git"),
            root,
        }
    }

    /// The temporary index that the candidate's tree is read into.
    pub(crate) fn tree_index(&self) -> PathBuf {
        self.root.join("tree.index")
    }

    /// The temporary index that the base's tree is read into, to pick the adapter paths.
    pub(crate) fn adapter_index(&self) -> PathBuf {
        self.root.join("adapter.index")
    }

    /// Removes whatever an earlier run left and makes the four directories empty, so that
    /// nothing a previous check wrote (in its tree, `HOME` or `TMPDIR`) can reach this one.
    /// They last as long as what this returns.
    pub(crate) fn make_fresh(&self) -> io::Result<Laid<'_>> {
        remove_all(&self.root)?;
        let laid = Laid(self);
        for dir in [&self.tree, &self.adapter, &self.home, &self.tmp] {
            std::fs::create_dir_all(dir)?;
        }
        Ok(laid)
    }

    /// Hands every directory and file of the run to the user and group `owner`, so that a
    /// check that runs as another user than the runner can write its tree, `HOME` and
    /// `TMPDIR`, and read what the driver laid out for it.
    pub(crate) fn hand_over(&self, (user, group): (u32, u32)) -> io::Result<()> {
        hand_over(&self.root, user, group)
    }
}

fn hand_over(path: &Path, user: u32, group: u32) -> io::Result<()> {
    std::os::unix::fs::lchown(path, Some(user), Some(group))?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            hand_over(&entry?.path(), user, group)?;
        }
    }
    Ok(())
}

/// The directories of one run while it needs them. Dropped, they go with all the check left
/// in them (large files, a setuid copy of a program), and its candidate's folder with them
/// when no other run holds it: nothing of a run stays on the machine but its stderr log.
#[derive(Debug)]
pub(crate) struct Laid<'a>(&'a CheckDirs);

impl Drop for Laid<'_> {
    fn drop(&mut self) {
        // A removal that fails leaves the folders to the next run's `make_fresh`.
        let _ = remove_all(&self.0.root);
        if let Some(candidate) = self.0.root.parent() {
            // Fails, and leaves it, while another run on the candidate has its slot there.
            let _ = std::fs::remove_dir(candidate);
        }
    }
}

/// The file that keeps the stderr of run `slot` of check `check_id` on `candidate`, for people
/// to read: its last [`super::process::STDERR_TAIL`] bytes. It stays when the run's folders go.
pub fn stderr_log(git_dir: &Path, candidate: &Oid, check_id: &str, slot: u32) -> PathBuf {
    git_dir.join(stderr_log_name(candidate, check_id, slot))
}

/// [`stderr_log`] relative to the common Git directory, as the check's exit names it:
/// `bay/logs/check-<candidate>-<slot>-<check>.stderr`.
///
/// The check id comes from the policy and may hold any character, so everything but letters,
/// digits, `.`, `_` and `-` becomes `_` in the file name.
pub fn stderr_log_name(candidate: &Oid, check_id: &str, slot: u32) -> String {
    let id: String = check_id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    format!("bay/logs/check-{candidate}-{slot}-{id}.stderr")
}

/// Removes `path` and everything below it, if it exists.
///
/// A check may leave directories it made read-only, which the removal cannot empty; those are
/// made writable and the removal is tried once more.
fn remove_all(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) => {
            make_writable(path);
            std::fs::remove_dir_all(path)
        }
    }
}

fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700));
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}
