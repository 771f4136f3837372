//! A real repository in a temporary directory, made with the real `git`, whose base commit
//! holds the check scripts; and the pieces a `CheckRun` needs.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use bay_core::check::{
    ChangeContext, CheckExit, CheckRequest, CheckTarget, CommitTree, RequestInput,
};
use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::CheckRun;
use bay_core::policy::{CheckSpec, DEFAULT_MATERIALIZE_TIMEOUT_S, Materialize, Stage};
use bay_drivers::check::{CheckDirs, Host, ReadPaths, run_check};
use bay_drivers::sandbox::Sandbox;
use tempfile::TempDir;

/// A working bwrap, or a failed test that says how to get one: the sandbox tests never skip.
pub fn bwrap() -> Sandbox {
    static PROBED: OnceLock<Sandbox> = OnceLock::new();
    let sandbox = PROBED.get_or_init(Sandbox::bwrap).clone();
    match sandbox {
        Sandbox::Bwrap(_) => sandbox,
        other => panic!(
            "the sandbox tests need a working bwrap; install bubblewrap (apt-get install \
             bubblewrap) and run them where it can make namespaces: {other:?}"
        ),
    }
}

/// The two ways a check runs: in bwrap, and with the sandbox turned off on purpose.
pub fn both() -> [Sandbox; 2] {
    [bwrap(), Sandbox::Off]
}

/// A repository with one base commit.
pub struct Repo {
    /// Keeps the directory alive; the work tree is `dir/repo`.
    _dir: TempDir,
    pub work: PathBuf,
    pub git_dir: PathBuf,
    pub base: Oid,
}

/// Runs `git` in `work` with a fixed identity and returns its trimmed stdout.
pub fn git(work: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(work)
        .args([
            "-c",
            "user.name=bay test",
            "-c",
            "user.email=test@bay.invalid",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("git prints UTF-8 here")
        .trim()
        .to_owned()
}

/// Writes `files` (path, content) into `work`; a path under `.bay/` is made executable.
pub fn write(work: &Path, files: &[(&str, &str)]) {
    for (path, content) in files {
        let path = work.join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("make the file's directory");
        std::fs::write(&path, content).expect("write the file");
        let mode = if path.starts_with(work.join(".bay")) {
            0o755
        } else {
            0o644
        };
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
            .expect("set the file's mode");
    }
}

/// Commits everything in the work tree and returns the commit.
pub fn commit(work: &Path, message: &str) -> Oid {
    git(work, &["add", "-A"]);
    git(work, &["commit", "-q", "-m", message]);
    Oid::parse(&git(work, &["rev-parse", "HEAD"])).expect("rev-parse prints an oid")
}

impl Repo {
    /// A repository whose base commit holds `files` besides a `README`.
    pub fn with(files: &[(&str, &str)]) -> Repo {
        Repo::with_in(&std::env::temp_dir(), files)
    }

    /// A repository like [`Repo::with`], in a temporary directory under `parent`.
    pub fn with_in(parent: &Path, files: &[(&str, &str)]) -> Repo {
        let dir = tempfile::tempdir_in(parent).expect("a temporary directory");
        let work = dir.path().join("repo");
        std::fs::create_dir(&work).expect("make the work tree");
        git(&work, &["init", "-q"]);
        write(&work, &[("README", "the base\n")]);
        write(&work, files);
        let base = commit(&work, "base");
        let git_dir = work.join(".git");
        Repo {
            _dir: dir,
            work,
            git_dir,
            base,
        }
    }

    /// A candidate on top of the base that writes `files`, leaving the work tree at the base.
    pub fn candidate(&self, files: &[(&str, &str)]) -> Oid {
        write(&self.work, files);
        let candidate = commit(&self.work, "candidate");
        git(&self.work, &["reset", "-q", "--hard", self.base.as_str()]);
        candidate
    }

    pub fn commit_tree(&self, commit: &Oid) -> CommitTree {
        let tree = git(&self.work, &["rev-parse", &format!("{commit}^{{tree}}")]);
        CommitTree {
            commit: commit.clone(),
            tree: Oid::parse(&tree).expect("rev-parse prints an oid"),
        }
    }

    /// The run of `check` on `candidate`, with the base's adapter, as a runner asks for it: the
    /// paths the candidate changes as Git lists them, and the change whose draft is the
    /// candidate.
    pub fn run_of(&self, check: CheckSpec, candidate: &Oid) -> CheckRun {
        let changed = git(
            &self.work,
            &[
                "diff",
                "--name-only",
                "--no-renames",
                self.base.as_str(),
                candidate.as_str(),
            ],
        );
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget::of(&check),
            policy_revision: "1".into(),
            candidate: self.commit_tree(candidate),
            base: self.commit_tree(&self.base),
            changed_paths: changed.lines().map(str::to_owned).collect(),
            change: Some(ChangeContext {
                id: ChangeId::parse("c7k2m4qa").expect("a valid id"),
                intent: "test".into(),
                actor: "agent".into(),
                revision: candidate.clone(),
                messages: vec![],
            }),
        });
        CheckRun {
            check,
            request,
            adapter_from: self.base.clone(),
            candidate: candidate.clone(),
            slot: 0,
        }
    }

    /// Runs `check` on `candidate` with the runner environment `vars`.
    pub fn run(
        &self,
        check: CheckSpec,
        candidate: &Oid,
        sandbox: &Sandbox,
        vars: &BTreeMap<String, String>,
    ) -> CheckExit {
        self.run_reading(check, candidate, sandbox, vars, &ReadPaths::default())
    }

    /// Runs `check` on `candidate` on a machine that lets checks read `read`.
    pub fn run_reading(
        &self,
        check: CheckSpec,
        candidate: &Oid,
        sandbox: &Sandbox,
        vars: &BTreeMap<String, String>,
        read: &ReadPaths,
    ) -> CheckExit {
        let run = self.run_of(check, candidate);
        let env = |name: &str| vars.get(name).cloned();
        let host = Host {
            sandbox,
            env: &env,
            min_free_mib: None,
            read,
        };
        run_check(&self.git_dir, &run, &host)
    }

    /// Where the check's files are for `candidate`.
    pub fn dirs(&self, candidate: &Oid) -> CheckDirs {
        let git_dir = std::fs::canonicalize(&self.git_dir).expect("the Git directory exists");
        CheckDirs::of(&git_dir, candidate, 0)
    }
}

/// A check that runs `command` with `adapter`, a 20 s limit, the usual PATH and no network.
pub fn check(command: &str, adapter: &[&str]) -> CheckSpec {
    CheckSpec {
        id: "unit".into(),
        environment: "linux-x86_64".into(),
        command: command.into(),
        adapter: adapter.iter().map(|a| (*a).to_owned()).collect(),
        expected_minimum: 1,
        timeout_s: 20,
        path: vec!["/usr/local/bin".into(), "/usr/bin".into(), "/bin".into()],
        env: vec![],
        network: false,
        inputs: vec![],
        fixtures: vec![],
        paths: None,
        materialize: Materialize::Tree,
        materialize_timeout_s: DEFAULT_MATERIALIZE_TIMEOUT_S,
        stage: Stage::Pre,
        when_paths: None,
        producers: None,
        retry_on_failure: 0,
        allow_flaky: false,
        baseline: None,
        waivable: false,
        footprint: false,
    }
}

/// The runner environment: exactly these variables.
pub fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// stdout as text.
pub fn text(exit: &CheckExit) -> String {
    String::from_utf8_lossy(&exit.stdout).into_owned()
}

/// The `key:value` lines a probing check printed.
pub fn lines(exit: &CheckExit) -> BTreeMap<String, String> {
    text(exit)
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// A number of seconds that no other process sleeps: a check that runs `sleep <marker>`
/// starts a process the test can look for with [`sleeps`].
pub fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let next = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("30.{}{next:04}", std::process::id())
}

/// Whether a process on this machine still runs `sleep <marker>`, given 10 s to end: a killed
/// process takes a moment to go. The bound fails the test; it measures nothing.
pub fn sleeps(marker: &str) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let found = std::fs::read_dir("/proc")
            .expect("/proc lists the processes")
            .filter_map(Result::ok)
            .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
            .any(|cmdline| {
                cmdline
                    .split(|b| *b == 0)
                    .any(|arg| arg == marker.as_bytes())
            });
        if !found || std::time::Instant::now() >= until {
            return found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
