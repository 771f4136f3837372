//! Finding the clone a directory is in, as `git rev-parse --path-format=absolute
//! --show-toplevel --git-common-dir` does, by reading files: every bay command starts here, and
//! a process costs about 2 ms.
//!
//! Only the plain case is answered: walking up from the directory, the first `.git` found is a
//! directory or a `gitdir:` file naming a valid Git directory, owned by this user, on the same
//! file system, with no `core.worktree` or `core.bare = true` in its config and no Git
//! directory passed on the way. Anything else (a bare repository, a start inside `.git`, a
//! ceiling or cross-file-system setting, another owner whom `safe.directory` may trust) gives
//! `None`, and the caller asks Git ([`ask_git`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::git::Git;
use crate::objects::Dirs;

/// Config words after which the worktree could be elsewhere or the repository bare
/// (`core.worktree`, `core.bare = true`, or an include that could say so). They are looked
/// for anywhere, which can only send more cases to Git.
const MOVES_THE_WORKTREE: [&str; 6] = [
    "worktree=",
    "bare=true",
    "bare=yes",
    "bare=on",
    "bare=1",
    "include",
];

/// Where a worktree is and the Git directory all the clone's worktrees share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub top: PathBuf,
    pub common_dir: PathBuf,
}

/// The clone `start` is in, when that is plain to see; `None` to ask Git.
pub fn find(start: &Path) -> Option<Found> {
    if ["GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"]
        .iter()
        .any(|name| std::env::var_os(name).is_some())
    {
        return None;
    }
    // This process's user: `/proc/self` belongs to it.
    let me = std::fs::metadata("/proc/self").ok()?.uid();
    let start = start.canonicalize().ok()?;
    let device = std::fs::metadata(&start).ok()?.dev();
    for dir in start.ancestors() {
        if std::fs::metadata(dir).ok()?.dev() != device {
            return None;
        }
        let dot = dir.join(".git");
        let Ok(kind) = std::fs::symlink_metadata(&dot) else {
            if looks_like_git_dir(dir) {
                return None;
            }
            continue;
        };
        let git_dir = if kind.is_dir() {
            dot
        } else if kind.is_file() {
            let text = std::fs::read_to_string(&dot).ok()?;
            dir.join(
                text.strip_prefix("gitdir: ")?
                    .trim_end_matches(['\n', '\r']),
            )
        } else {
            return None;
        };
        if !looks_like_git_dir(&git_dir) {
            return None;
        }
        let dirs = Dirs::of_git_dir(git_dir)?;
        if dirs.config_mentions(&MOVES_THE_WORKTREE) {
            return None;
        }
        let common_dir = dirs.common.canonicalize().ok()?;
        for owned in [dir, dirs.git_dir.as_path()] {
            if std::fs::metadata(owned).ok()?.uid() != me {
                return None;
            }
        }
        return Some(Found {
            top: dir.to_path_buf(),
            common_dir,
        });
    }
    None
}

/// Whether `dir` has what a Git directory has: `HEAD`, `objects` (or a `commondir` that
/// holds it) and `refs`.
fn looks_like_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file()
        && (dir.join("objects").is_dir() || dir.join("commondir").is_file())
        && (dir.join("refs").is_dir() || dir.join("commondir").is_file())
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
        // Left to Git: a bare repository, the inside of `.git`, a moved worktree.
        for dir in [bare, clone.join(".git"), clone.join(".git/refs"), moved] {
            assert_eq!(find(&dir), None, "{}", dir.display());
        }
        // No repository at all: nothing is found, as Git finds nothing.
        let outside = tempfile::tempdir().expect("a temp dir");
        if git_says(outside.path()).is_none() {
            assert_eq!(find(outside.path()), None);
        }
    }
}
