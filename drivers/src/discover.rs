//! Finding the clone a directory is in, as `git rev-parse --path-format=absolute
//! --show-toplevel --git-common-dir` does, in-process with gitoxide, and reading the config
//! Git resolves for it there: every bay command (and every hook an agent's tool call runs)
//! starts here, and a `git` process costs about 2 ms.
//!
//! gix walks up from the directory as Git does (a `.git` directory or `gitdir:` file, a linked
//! worktree's `commondir`, `core.worktree`, not across file systems). What it would answer
//! otherwise than Git is left to Git ([`ask_git`]): `GIT_CEILING_DIRECTORIES` or
//! `GIT_DISCOVERY_ACROSS_FILESYSTEM` set, a repository this user does not own (whom
//! `safe.directory` may trust), a bare repository, a start inside the Git directory, config
//! given on Git's command line.

use std::path::{Path, PathBuf};

use crate::git::Git;

/// Where a worktree is and the Git directory all the clone's worktrees share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub top: PathBuf,
    pub common_dir: PathBuf,
}

/// A clone found in-process, open to read its config.
#[derive(Debug)]
pub struct Opened {
    pub found: Found,
    repo: gix::Repository,
}

impl Opened {
    /// Every key of the config sections `sections` and its value, in Git's order, as `git
    /// config --get-regexp` lists them (see [`crate::gitoxide::config_values`]); `None` to ask
    /// Git.
    pub fn config_values(&self, sections: &[&str]) -> Option<Vec<(String, String)>> {
        crate::gitoxide::config_values(&self.repo, sections)
    }
}

/// The clone `start` is in, when gix finds it as Git would; `None` to ask Git.
pub fn open(start: &Path) -> Option<Opened> {
    if ["GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"]
        .iter()
        .any(|name| std::env::var_os(name).is_some())
    {
        return None;
    }
    let start = start.canonicalize().ok()?;
    let repo = crate::gitoxide::discover(&start)?;
    let git_dir = repo.git_dir().canonicalize().ok()?;
    if start.starts_with(&git_dir) {
        return None;
    }
    let top = repo.workdir()?.canonicalize().ok()?;
    let common_dir = repo.common_dir().canonicalize().ok()?;
    Some(Opened {
        found: Found { top, common_dir },
        repo,
    })
}

/// The clone `start` is in, when that is plain to see; `None` to ask Git.
pub fn find(start: &Path) -> Option<Found> {
    open(start).map(|opened| opened.found)
}

/// Where the clone `start` is in, as Git finds it: for the cases [`find`] leaves to Git.
pub fn ask_git(start: &Path) -> Result<Found, String> {
    let out = Git::in_dir(start)
        .cmd([
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ])
        .run()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let (Some(top), Some(common)) = (lines.next(), lines.next()) else {
        return Err(format!(
            "git rev-parse did not name the repository: {text:?}"
        ));
    };
    Ok(Found {
        top: PathBuf::from(top),
        common_dir: PathBuf::from(common),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Git says for `dir`, or `None` where it finds no worktree.
    fn git_says(dir: &Path) -> Option<Found> {
        ask_git(dir).ok()
    }

    fn git(dir: &Path, args: &[&str]) {
        Git::in_dir(dir).cmd(args).run().expect("git runs");
    }

    #[test]
    fn every_answer_is_the_one_git_gives() {
        let root = tempfile::tempdir().expect("a temp dir");
        let clone = root.path().join("clone");
        std::fs::create_dir_all(clone.join("src/deep")).expect("mkdir");
        crate::testing::repository_with_a_commit(&clone);
        git(&clone, &["worktree", "add", "-q", "--detach", "../linked"]);
        let linked = root.path().join("linked");
        std::fs::create_dir_all(linked.join("sub")).expect("mkdir");
        let bare = root.path().join("bare.git");
        git(root.path(), &["init", "-q", "--bare", "bare.git"]);
        std::os::unix::fs::symlink(&clone, root.path().join("through-a-link")).expect("symlink");
        let moved = root.path().join("moved");
        std::fs::create_dir_all(&moved).expect("mkdir");
        git(&moved, &["init", "-q"]);
        git(&moved, &["config", "core.worktree", "/nowhere"]);

        let plain = [
            clone.clone(),
            clone.join("src/deep"),
            linked.clone(),
            linked.join("sub"),
            root.path().join("through-a-link/src"),
        ];
        for dir in &plain {
            let found = find(dir).unwrap_or_else(|| panic!("{} is plain", dir.display()));
            assert_eq!(Some(found), git_says(dir), "{}", dir.display());
        }
        // A worktree moved by `core.worktree`: found where Git finds it, or left to Git.
        if let Some(found) = find(&moved) {
            assert_eq!(Some(found), git_says(&moved));
        }
        // Left to Git: a bare repository, the inside of `.git`.
        for dir in [bare, clone.join(".git"), clone.join(".git/refs")] {
            assert_eq!(find(&dir), None, "{}", dir.display());
        }
        // No repository at all: nothing is found, as Git finds nothing.
        let outside = tempfile::tempdir().expect("a temp dir");
        if git_says(outside.path()).is_none() {
            assert_eq!(find(outside.path()), None);
        }
    }
}
