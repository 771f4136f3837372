//! Running the `git` program: one place that fixes the environment, the repository, the time
//! bound and how output comes back, so that every caller gets the same guarantees.
//!
//! Every call:
//! - runs with `LC_ALL=C` and `LANG=C`, because callers read Git's messages (porcelain push
//!   output, "does not appear to be a git repository") and a translated message would not match;
//! - runs with `GIT_TERMINAL_PROMPT=0`, because nobody is there to type a password: a remote
//!   that asks fails at once instead of waiting for the time bound;
//! - keeps the system and the user's global config. bay reads its own `bay.*` keys from the
//!   user's config, and the system config may hold what reaching a remote needs (credential
//!   helpers, CA bundles, `safe.directory`). Where a config key could change what a command
//!   writes, the caller passes the command-line option that pins it instead;
//! - drops the variables that would point Git at another repository or index than the one
//!   named here (`GIT_DIR`, `GIT_INDEX_FILE`, ...), which a parent Git process (a hook, an
//!   alias) may have set;
//! - has a time bound. A call that runs past it is killed and reported as
//!   [`GitError::TimedOut`], distinct from a failure: for a push that difference is "it may
//!   have applied" against "it did not".
//!
//! Output goes to unnamed temporary files rather than pipes. A process Git starts may outlive
//! a killed Git and hold its output open (a local `receive-pack` waiting for a slow hook does),
//! and a pipe reader would then wait for that process; a file lets the caller return as soon
//! as Git itself is gone. Only Git is killed, never its children: a server that is already
//! applying a push must be left to finish, as it would be over a network.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::bounded::{self, Waited};

/// The default bound on one Git call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of stderr an error keeps: the end, where Git puts the reason.
const STDERR_TAIL: usize = 2000;

/// Variables that would make Git use another repository, index or object store than the one
/// a call names.
const LOCATING_VARS: [&str; 10] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_NOTES_REF",
    "GIT_QUARANTINE_PATH",
    "GIT_PREFIX",
];

/// Where the repository is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A directory inside a worktree, or a bare repository's directory: `git -C <dir>`.
    Dir(PathBuf),
    /// The repository itself, found no other way: `git --git-dir=<dir>`.
    GitDir(PathBuf),
}

/// One repository, and the bound every call on it gets unless the call sets its own.
#[derive(Clone, Debug)]
pub struct Git {
    location: Location,
    timeout: Duration,
}

/// What a finished Git call gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    /// Git's messages, decoded leniently: they are for people and for matching known phrases.
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// stdout as text, without the final newline(s).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout)
            .trim_end_matches('\n')
            .to_string()
    }
}

/// A Git call that did not give what the caller needed. Each says which command it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GitError {
    /// Git could not be started, or its output could not be read back.
    Io { command: String, error: String },
    /// Git ran and exited with a status the caller does not accept.
    Failed {
        command: String,
        code: Option<i32>,
        stderr: String,
    },
    /// Git ran past its time bound and was killed. What it was doing may have happened.
    TimedOut {
        command: String,
        after: Duration,
        stderr: String,
    },
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Io { command, error } => write!(f, "could not run {command}: {error}"),
            GitError::Failed {
                command,
                code,
                stderr,
            } => {
                match code {
                    Some(code) => write!(f, "{command} failed (exit {code})")?,
                    None => write!(f, "{command} was ended by a signal")?,
                }
                if !stderr.trim().is_empty() {
                    write!(f, ": {}", stderr.trim())?;
                }
                Ok(())
            }
            GitError::TimedOut {
                command,
                after,
                stderr,
            } => {
                write!(
                    f,
                    "{command} ran past its time bound of {:.1}s and was killed",
                    after.as_secs_f64()
                )?;
                if !stderr.trim().is_empty() {
                    write!(f, ": {}", stderr.trim())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for GitError {}

impl Git {
    /// Git run in `dir` (`git -C <dir>`): a worktree, or a bare repository's directory.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Git {
        Git {
            location: Location::Dir(dir.into()),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Git run on the repository at `dir` (`git --git-dir=<dir>`).
    pub fn git_dir(dir: impl Into<PathBuf>) -> Git {
        Git {
            location: Location::GitDir(dir.into()),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same repository with another default bound.
    pub fn with_timeout(mut self, timeout: Duration) -> Git {
        self.timeout = timeout;
        self
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A call with these arguments (after `git` and the repository option).
    pub fn cmd<I, S>(&self, args: I) -> Call<'_>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Call {
            git: self,
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            stdin: None,
            env: Vec::new(),
            timeout: self.timeout,
        }
    }
}

/// One Git call being put together; nothing runs until [`Call::output`] or [`Call::run`].
#[derive(Debug)]
pub struct Call<'g> {
    git: &'g Git,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
}

impl Call<'_> {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Bytes for Git's stdin. Without this, stdin is empty (`/dev/null`).
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(bytes.into());
        self
    }

    /// One more environment variable, set after the fixed ones (so it may override them).
    pub fn env(mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env
            .push((name.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// A bound for this call only.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// `git <args>`, as errors name the command.
    pub fn describe(&self) -> String {
        let mut text = String::from("git");
        for arg in &self.args {
            text.push(' ');
            text.push_str(&arg.to_string_lossy());
        }
        if text.len() > 200 {
            let mut cut = 200;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(" ...");
        }
        text
    }

    /// The arguments after `git`: the repository option, then the call's own.
    fn full_args(&self) -> Vec<OsString> {
        let mut full_args: Vec<OsString> = Vec::with_capacity(self.args.len() + 2);
        match &self.git.location {
            Location::Dir(dir) => {
                full_args.push("-C".into());
                full_args.push(dir.as_os_str().to_owned());
            }
            Location::GitDir(dir) => {
                let mut flag = OsString::from("--git-dir=");
                flag.push(dir.as_os_str());
                full_args.push(flag);
            }
        }
        full_args.extend(self.args.iter().cloned());
        full_args
    }

    /// The whole change to the environment, one entry per name (`None` removes it), so that no
    /// ordering of nested settings decides which wins: the call's own variables win.
    fn environment(&self) -> BTreeMap<OsString, Option<OsString>> {
        let mut changes: BTreeMap<OsString, Option<OsString>> = BTreeMap::new();
        for name in LOCATING_VARS {
            changes.insert(name.into(), None);
        }
        for (name, value) in [("LC_ALL", "C"), ("LANG", "C"), ("GIT_TERMINAL_PROMPT", "0")] {
            changes.insert(name.into(), Some(value.into()));
        }
        for (name, value) in &self.env {
            changes.insert(name.clone(), Some(value.clone()));
        }
        changes
    }

    /// Runs the call and accepts any exit status. `Err` only when Git could not run or ran past
    /// its bound.
    pub fn output(self) -> Result<Output, GitError> {
        let command = self.describe();
        let io = |error: std::io::Error| GitError::Io {
            command: command.clone(),
            error: error.to_string(),
        };
        let stdout = tempfile::tempfile().map_err(io)?;
        let stderr = tempfile::tempfile().map_err(io)?;
        let mut process = std::process::Command::new(program());
        process
            .args(self.full_args())
            .stdout(stdout.try_clone().map_err(io)?)
            .stderr(stderr.try_clone().map_err(io)?);
        for (name, value) in self.environment() {
            match value {
                Some(value) => process.env(name, value),
                None => process.env_remove(name),
            };
        }
        match &self.stdin {
            Some(bytes) => {
                let mut input = tempfile::tempfile().map_err(io)?;
                input.write_all(bytes).map_err(io)?;
                input.seek(SeekFrom::Start(0)).map_err(io)?;
                process.stdin(input)
            }
            None => process.stdin(std::process::Stdio::null()),
        };
        let started = Instant::now();
        let child = process.spawn().map_err(io)?;
        // No output pipes and no stdin thread: waiting waits for Git alone. A bound too large
        // to be a moment is no bound. Git may end between the deadline and the kill; the kill
        // then has nothing to do, and the call is still one that ran out of time.
        let deadline = started.checked_add(self.timeout);
        let status = match bounded::wait(child, deadline, |git| {
            let _ = git.kill();
        })
        .map_err(io)?
        {
            Waited::Exited(status) => status,
            Waited::TimedOut(_) => {
                let stderr = tail(&read_all(stderr).map_err(io)?);
                return Err(GitError::TimedOut {
                    command,
                    after: self.timeout,
                    stderr,
                });
            }
        };
        let stdout = read_all(stdout).map_err(io)?;
        let stderr = String::from_utf8_lossy(&read_all(stderr).map_err(io)?).into_owned();
        Ok(Output {
            code: status.code(),
            stdout,
            stderr,
        })
    }

    /// Runs the call and requires exit 0.
    pub fn run(self) -> Result<Output, GitError> {
        let command = self.describe();
        let out = self.output()?;
        if out.success() {
            Ok(out)
        } else {
            Err(GitError::Failed {
                command,
                code: out.code,
                stderr: tail(out.stderr.as_bytes()),
            })
        }
    }

    /// Runs the call, requires exit 0, and gives stdout as text without the final newline.
    pub fn text(self) -> Result<String, GitError> {
        Ok(self.run()?.text())
    }
}

/// The `git` program: the first executable `git` in a directory of `PATH`, found once per
/// process, so that each call does not search `PATH` again; plain `git` when there is none,
/// and starting it fails as it always would.
fn program() -> &'static OsStr {
    static PROGRAM: std::sync::OnceLock<OsString> = std::sync::OnceLock::new();
    PROGRAM.get_or_init(|| {
        crate::programs::find("git").map_or_else(|| OsString::from("git"), PathBuf::into_os_string)
    })
}

/// Everything Git wrote into one of its output files.
fn read_all(mut file: File) -> std::io::Result<Vec<u8>> {
    // Git wrote through a duplicate of this descriptor, which shares the file offset.
    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The last part of stderr, where Git says why, cut at a line start when it can be.
pub fn tail(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim_end();
    if text.len() <= STDERR_TAIL {
        return text.to_string();
    }
    let mut start = text.len() - STDERR_TAIL;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    match cut.find('\n') {
        Some(newline) => cut[newline + 1..].to_string(),
        None => cut.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_past_its_bound_is_killed_and_says_so() {
        let dir = tempfile::tempdir().expect("a temp dir");
        // `git -c alias...` runs a shell alias that sleeps: a Git call that takes long.
        let git = Git::in_dir(dir.path()).with_timeout(Duration::from_millis(300));
        let started = Instant::now();
        let result = git
            .cmd(["-c", "alias.nap=!sleep 5", "nap"])
            .output()
            .map(|out| out.code);
        assert!(
            matches!(result, Err(GitError::TimedOut { .. })),
            "{result:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn a_failure_names_the_command_and_its_stderr() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let err = Git::in_dir(dir.path())
            .cmd(["rev-parse", "--verify", "nosuch"])
            .run()
            .expect_err("not a repository");
        let text = err.to_string();
        assert!(text.starts_with("git rev-parse --verify nosuch failed (exit 128)"));
        assert!(text.contains("not a git repository"), "{text}");
    }

    #[test]
    fn stdin_and_env_reach_git_and_the_locale_is_c() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = Git::in_dir(dir.path());
        git.cmd(["init", "-q", "--bare"])
            .run()
            .expect("git init works");
        let oid = git
            .cmd(["hash-object", "--stdin"])
            .stdin(b"hello\n".to_vec())
            .text()
            .expect("hash-object works");
        assert_eq!(oid, "ce013625030ba8dba906f756967f9e9ca394464a");
        let value = git
            .cmd(["var", "GIT_AUTHOR_IDENT"])
            .env("GIT_AUTHOR_NAME", "Tess")
            .env("GIT_AUTHOR_EMAIL", "t@x")
            .text()
            .expect("git var works");
        assert!(value.starts_with("Tess <t@x>"), "{value}");
        let locale = git
            .cmd([
                "-c",
                "alias.locale=!echo $LC_ALL $LANG $GIT_TERMINAL_PROMPT",
                "locale",
            ])
            .text()
            .expect("a shell alias runs");
        assert_eq!(locale, "C C 0");
        let index = git
            .cmd(["-c", "alias.index=!echo $GIT_INDEX_FILE", "index"])
            .env("GIT_INDEX_FILE", "/tmp/some-index")
            .text()
            .expect("a shell alias runs");
        assert_eq!(index, "/tmp/some-index", "a call's own variable wins");
    }

    #[test]
    fn the_program_is_the_git_a_shell_finds_on_path() {
        let shell = std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("sh runs");
        let found = String::from_utf8_lossy(&shell.stdout).trim().to_string();
        assert_eq!(program(), OsStr::new(&found));
    }

    #[test]
    fn tail_keeps_the_end_from_a_line_start() {
        let long = format!("{}\nlast words\n", "x".repeat(5000));
        assert_eq!(tail(long.as_bytes()), "last words");
        assert_eq!(tail(b"short\n"), "short");
    }
}
