//! Repositories for the driver's unit tests.

use std::path::Path;

use crate::git::Git;

/// A new repository at `dir` (made if missing) with one empty commit on its branch.
pub fn repository_with_a_commit(dir: &Path) -> Git {
    std::fs::create_dir_all(dir).expect("a folder");
    let git = Git::in_dir(dir);
    git.cmd(["init", "-q"]).run().expect("git init");
    git.cmd(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["commit", "-q", "--allow-empty", "-m", "one"])
        .run()
        .expect("a commit");
    git
}
