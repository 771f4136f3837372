//! A scratch repository for `bay plugin test`: the files of a folder as they are (committed or
//! not, less what its `.gitignore` leaves out), as a base and two candidates, in a temporary
//! Git directory. The folder and its own repository are only read.

use std::path::{Path, PathBuf};

use bay_core::check::CommitTree;
use bay_core::git::Oid;
use tempfile::TempDir;

use crate::git::{Git, Location};
use crate::objects::{Identity, Objects};

/// The file the second candidate adds, so that its tree differs from the first's.
pub const OTHER_PATH: &str = ".bay-plugin-test/another-tree";

/// The scratch repository; it goes away when dropped.
#[derive(Debug)]
pub struct Scratch {
    _dir: TempDir,
    pub git_dir: PathBuf,
    /// The folder's files.
    pub base: CommitTree,
    /// A commit on the base with the same files.
    pub candidate: CommitTree,
    /// A commit on the base with [`OTHER_PATH`] added.
    pub other: CommitTree,
}

impl Scratch {
    /// Takes the files of `folder` into a new scratch repository.
    pub fn of(folder: &Path) -> Result<Scratch, String> {
        let dir = tempfile::Builder::new()
            .prefix("bay-plugin-test-")
            .tempdir()
            .map_err(|e| format!("cannot make a scratch folder: {e}"))?;
        let git_dir = dir.path().join("scratch.git");
        Git::in_dir(dir.path())
            .cmd(["init", "--quiet", "--bare"])
            .arg(&git_dir)
            .run()
            .map_err(|e| e.to_string())?;
        let git = Git::git_dir(&git_dir);
        let objects = Objects::new(Location::GitDir(git_dir.clone()));
        let commit = |tree: &Oid, parents: &[&Oid], message: &str| {
            objects
                .commit(&git, &Identity::default(), tree, parents, message)
                .map_err(|e| e.to_string())
        };
        let index = dir.path().join("index");
        git.cmd(["--work-tree"])
            .arg(folder)
            .args(["add", "--all", "--force", "--", "."])
            .env("GIT_INDEX_FILE", &index)
            .run()
            .map_err(|e| format!("cannot read the files of {}: {e}", folder.display()))?;
        let tree = text(git.cmd(["write-tree"]).env("GIT_INDEX_FILE", &index))?;
        let base = commit(&tree, &[], "bay plugin test: base\n")?;
        let candidate = commit(&tree, &[&base], "bay plugin test: candidate\n")?;
        let blob = objects
            .blob(&git, b"a second candidate's own file\n".to_vec())
            .map_err(|e| e.to_string())?;
        git.cmd(["update-index", "--add", "--cacheinfo"])
            .arg(format!("100644,{blob},{OTHER_PATH}"))
            .env("GIT_INDEX_FILE", &index)
            .run()
            .map_err(|e| e.to_string())?;
        let other_tree = text(git.cmd(["write-tree"]).env("GIT_INDEX_FILE", &index))?;
        let other = commit(&other_tree, &[&base], "bay plugin test: another tree\n")?;
        Ok(Scratch {
            _dir: dir,
            git_dir,
            base: CommitTree {
                commit: base,
                tree: tree.clone(),
            },
            candidate: CommitTree {
                commit: candidate,
                tree,
            },
            other: CommitTree {
                commit: other,
                tree: other_tree,
            },
        })
    }
}

fn text(call: crate::git::Call<'_>) -> Result<Oid, String> {
    let out = call.text().map_err(|e| e.to_string())?;
    Oid::parse(out.trim()).map_err(|e| format!("git printed {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_becomes_a_base_and_two_candidates_and_is_left_as_it_was() {
        let folder = tempfile::tempdir().expect("a folder");
        std::fs::write(folder.path().join("check.sh"), "#!/bin/sh\n").expect("a file");
        std::fs::create_dir(folder.path().join("src")).expect("a dir");
        std::fs::write(folder.path().join("src/a.txt"), "a\n").expect("a file");
        let scratch = Scratch::of(folder.path()).expect("a scratch repository");
        assert_eq!(scratch.base.tree, scratch.candidate.tree);
        assert_ne!(scratch.base.commit, scratch.candidate.commit);
        assert_ne!(scratch.other.tree, scratch.candidate.tree);
        let listed = Git::git_dir(&scratch.git_dir)
            .cmd([
                "ls-tree",
                "-r",
                "--name-only",
                scratch.other.commit.as_str(),
            ])
            .text()
            .expect("ls-tree");
        assert_eq!(
            listed.lines().collect::<Vec<_>>(),
            vec![OTHER_PATH, "check.sh", "src/a.txt"]
        );
        let mut left: Vec<_> = std::fs::read_dir(folder.path())
            .expect("the folder")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        left.sort();
        assert_eq!(left, vec!["check.sh", "src"], "the folder gained nothing");
    }
}
