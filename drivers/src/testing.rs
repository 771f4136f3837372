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

/// Runs the test `name` (its path in this crate, `module::tests::name`) again in a child
/// process of this test binary with `env` set, and checks that it passed there: how a test
/// gives the code under test environment variables (a home folder, `GIT_CONFIG_GLOBAL`)
/// without setting them in this process, where other tests run at the same time. `true` in
/// the child, whose test goes on to its checks; `false` in the parent, whose test is done.
pub fn in_child(name: &str, env: &[(&str, std::ffi::OsString)]) -> bool {
    const CHILD: &str = "BAY_TEST_IN_CHILD";
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env_remove("XDG_CONFIG_HOME")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("the test binary runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success() && said.contains("1 passed"), "{said}");
    false
}
