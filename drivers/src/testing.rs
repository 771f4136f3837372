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

/// A commit of the empty tree with `message` and no parent, by `t <t@t>`; its id.
pub fn empty_commit(git: &Git, message: &str) -> String {
    git.cmd([
        "commit-tree",
        "-m",
        message,
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    ])
    .env("GIT_AUTHOR_NAME", "t")
    .env("GIT_AUTHOR_EMAIL", "t@t")
    .env("GIT_COMMITTER_NAME", "t")
    .env("GIT_COMMITTER_EMAIL", "t@t")
    .text()
    .expect("commit-tree")
}
