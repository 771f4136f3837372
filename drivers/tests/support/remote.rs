//! A real bare "server" repository and a clone of it in a temporary directory, and small
//! helpers to make commits and read refs with real Git.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::record::{Step, StepBody};
use bay_core::time::Timestamp;
use bay_drivers::git::{Call, Git};
use bay_drivers::remote::Repo;
use tempfile::TempDir;

pub struct Fixture {
    pub dir: TempDir,
    pub server: PathBuf,
    pub clone: PathBuf,
    pub repo: Repo,
    /// Main's first commit: `README` holding "hello\n".
    pub main0: Oid,
}

/// `git <args>` in `dir`, as a fixed test identity; panics with Git's message on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_in(dir, args, None)
}

pub fn git_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let g = Git::in_dir(dir);
    let mut call = as_tester(&g, args);
    if let Some(input) = stdin {
        call = call.stdin(input.as_bytes());
    }
    match call.text() {
        Ok(text) => text,
        Err(error) => panic!("{error}"),
    }
}

/// A call of `git <args>` on `g` as the fixed test identity, not run yet.
pub fn as_tester<'g>(g: &'g Git, args: &[&str]) -> Call<'g> {
    g.cmd(args)
        .env("GIT_AUTHOR_NAME", "tester")
        .env("GIT_AUTHOR_EMAIL", "tester@localhost")
        .env("GIT_COMMITTER_NAME", "tester")
        .env("GIT_COMMITTER_EMAIL", "tester@localhost")
}

/// `git <args>` in `dir` as the fixed test identity and with no system or global config, its
/// stdout as bytes (paths Git prints need not be UTF-8); panics with Git's message on failure.
pub fn git_bytes(dir: &Path, args: &[&str]) -> Vec<u8> {
    let g = Git::in_dir(dir);
    let call = as_tester(&g, args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    match call.run() {
        Ok(out) => out.stdout,
        Err(error) => panic!("{error}"),
    }
}

pub fn oid(text: &str) -> Oid {
    Oid::parse(text.trim()).expect("git printed an object id")
}

/// A commit in `dir` whose tree holds exactly `files` (paths may have directories).
pub fn commit(dir: &Path, parents: &[&Oid], files: &[(&str, &str)], message: &str) -> Oid {
    let scratch = tempfile::tempdir().expect("a temp dir");
    let index = scratch.path().join("index");
    let g = Git::in_dir(dir);
    for (path, content) in files {
        let blob = g
            .cmd(["hash-object", "-w", "--stdin"])
            .stdin(content.as_bytes())
            .text()
            .expect("hash-object works");
        g.cmd([
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{blob},{path}"),
        ])
        .env("GIT_INDEX_FILE", &index)
        .run()
        .expect("update-index works");
    }
    let tree = if files.is_empty() {
        git_in(dir, &["mktree"], Some(""))
    } else {
        g.cmd(["write-tree"])
            .env("GIT_INDEX_FILE", &index)
            .text()
            .expect("write-tree works")
    };
    let mut args = vec!["commit-tree".to_string(), tree];
    for parent in parents {
        args.push("-p".into());
        args.push(parent.to_string());
    }
    args.push("-m".into());
    args.push(message.into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    oid(&git(dir, &args))
}

/// The value of `name` in the repository at `dir`, if it exists.
pub fn ref_value(dir: &Path, name: &str) -> Option<Oid> {
    let out = Git::in_dir(dir)
        .cmd(["rev-parse", "--verify", "--quiet", name])
        .output()
        .expect("git runs");
    out.success().then(|| oid(&out.text()))
}

pub fn set_ref(dir: &Path, name: &str, value: &Oid) {
    git(dir, &["update-ref", name, value.as_str()]);
}

pub fn change(text: &str) -> ChangeId {
    ChangeId::parse(text).expect("a valid change id")
}

/// A step of `change` that differs from every other by `nonce`.
pub fn heartbeat(change: &ChangeId, nonce: u64) -> Step {
    Step {
        change: change.clone(),
        at: Timestamp(1_700_000_000_000 + nonce),
        by: "runner-1".into(),
        nonce,
        body: StepBody::Heartbeat { op: change.op(1) },
    }
}

impl Fixture {
    /// A bare server with `main` at one commit, and a bare clone whose `origin` is the server.
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("a temp dir");
        let server = dir.path().join("server.git");
        let clone = dir.path().join("clone.git");
        for repo in [&server, &clone] {
            git(
                dir.path(),
                &[
                    "init",
                    "-q",
                    "--bare",
                    "-b",
                    "main",
                    &repo.to_string_lossy(),
                ],
            );
        }
        git(
            &clone,
            &["remote", "add", "origin", &server.to_string_lossy()],
        );
        let main0 = commit(&clone, &[], &[("README", "hello\n")], "first");
        git(
            &clone,
            &["push", "-q", "origin", &format!("{main0}:refs/heads/main")],
        );
        let repo = Repo::new(&clone, "origin", "main").expect("valid names");
        Fixture {
            dir,
            server,
            clone,
            repo,
            main0,
        }
    }

    /// Makes a commit in the clone and puts it on the server at `name`.
    pub fn seed(&self, name: &str, files: &[(&str, &str)], message: &str) -> Oid {
        let commit = commit(&self.clone, &[&self.main0], files, message);
        git(
            &self.clone,
            &["push", "-q", "origin", &format!("+{commit}:{name}")],
        );
        commit
    }

    /// Points `name` on the server at `value`, a commit of the clone.
    pub fn seed_ref(&self, name: &str, value: &Oid) {
        git(
            &self.clone,
            &["push", "-q", "origin", &format!("+{value}:{name}")],
        );
    }

    pub fn on_server(&self, name: &str) -> Option<Oid> {
        ref_value(&self.server, name)
    }
}
