//! Running one check on one candidate: core's [`Action::RunCheck`], answered with the
//! [`CheckExit`] of [`Completion::CheckExited`].
//!
//! The driver only runs and reports. It lays out, under the common Git directory, what core
//! says the check sees of the candidate's tree, the base's `adapter` paths and, for a check
//! that reads history, a Git directory to read it from; it starts the check in the sandbox with
//! a fixed environment and the request on stdin, and hands back exactly what it saw; core
//! judges it.
//! Whenever the driver cannot run the check as the policy says (no sandbox, a missing `env`
//! variable, a read path it must refuse, a copy that failed or ran past its
//! `materialize_timeout_s`), nothing runs and the exit carries `infra` with the reason.
//!
//! [`Action::RunCheck`]: bay_core::machine::Action::RunCheck
//! [`Completion::CheckExited`]: bay_core::machine::Completion::CheckExited

mod layout;
mod materialize;
pub(crate) mod process;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use bay_core::check::read_path::{self, SETTING as READ_PATH};
use bay_core::check::{CheckExit, Shown};
use bay_core::machine::CheckRun;

use crate::sandbox::{Confinement, Sandbox};
use materialize::Copier;
use process::Tail;

pub use layout::{CheckDirs, stderr_log, stderr_log_name};
pub use process::{STDERR_TAIL, STDOUT_CAP};

/// What the machine running checks brings to each: its sandbox, its environment (read only
/// for the variables a check's `env` names, and for `HOME`, which a read path under `~/` lies
/// under), its free-space floor (`bay.minFreeMiB`) and the directories it lets checks read.
pub struct Host<'a> {
    pub sandbox: &'a Sandbox,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    pub min_free_mib: Option<u64>,
    pub read: &'a ReadPaths,
}

impl std::fmt::Debug for Host<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("sandbox", &self.sandbox)
            .field("min_free_mib", &self.min_free_mib)
            .field("read", &self.read)
            .finish()
    }
}

/// The directories this machine lets every check read (`bay.checkReadPath`), and the places
/// no read path may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadPaths {
    /// Each value of `bay.checkReadPath`, as Git config gives it.
    pub values: Vec<String>,
    /// Besides the common Git directory, which holds the objects, the views and every check's
    /// own folders: the repository's work trees and bay's key files. A read path over one would
    /// hand a check what the sandbox is there to keep from it.
    pub kept_out: Vec<PathBuf>,
}

/// The checks of one machine on one repository: its common Git directory, its free-space
/// floor and its read paths. It runs each check with this process's environment and the
/// sandbox the machine has.
#[derive(Clone, Debug)]
pub struct MachineChecks {
    pub git_dir: PathBuf,
    pub min_free_mib: Option<u64>,
    pub read_paths: ReadPaths,
}

impl MachineChecks {
    pub fn run(&self, run: &CheckRun) -> CheckExit {
        let env = |name: &str| std::env::var(name).ok();
        let host = Host {
            sandbox: &Sandbox::probe(),
            env: &env,
            min_free_mib: self.min_free_mib,
            read: &self.read_paths,
        };
        run_check(&self.git_dir, run, &host)
    }
}

/// Runs `run.check` on `run.candidate` and reports what happened.
///
/// `git_dir` is the common Git directory (the one linked worktrees share); the check's files
/// go under its `bay/check/<candidate>/`, fresh for each run and removed after it, and the
/// tail of its stderr to [`stderr_log`].
pub fn run_check(git_dir: &Path, run: &CheckRun, host: &Host<'_>) -> CheckExit {
    match try_run(git_dir, run, host) {
        Ok(exit) => exit,
        Err(reason) => CheckExit {
            infra: Some(reason),
            ..CheckExit::default()
        },
    }
}

fn try_run(git_dir: &Path, run: &CheckRun, host: &Host<'_>) -> Result<CheckExit, String> {
    let check = &run.check;
    // Nothing is written, and nothing runs, before the driver knows it can run the check.
    let sandbox = host.sandbox;
    if let Sandbox::Unavailable(reason) = sandbox {
        return Err(reason.clone());
    }
    let passed = passed_variables(&check.env, host.env)?;
    if let Some(floor) = host.min_free_mib {
        let space = crate::disk::measure(&git_dir.join("bay").join("check"), floor)?;
        if space.is_low() {
            return Err(space.why_no_check());
        }
    }
    let (program, args) = split_command(&check.command)?;

    // The sandbox binds by absolute path, and the paths a check is told must not depend on
    // where the runner started.
    let git_dir = std::fs::canonicalize(git_dir).map_err(|e| {
        format!(
            "the Git directory {} cannot be read: {e}",
            git_dir.display()
        )
    })?;
    let read_paths = read_binds(host.read, &git_dir, (host.env)("HOME").as_deref())?;
    let dirs = CheckDirs::of(&git_dir, &run.candidate, run.slot);
    let _laid = dirs.make_fresh().map_err(|e| {
        format!(
            "could not make the check's directories under {}: {e}",
            dirs.root.display()
        )
    })?;
    let copy = Copier::new(&git_dir, &dirs, check.materialize_timeout_s);
    copy.candidate_tree(
        &run.candidate,
        &Shown::of(check, &run.request.changed_paths),
    )?;
    let adapter = copy.adapter_paths(&run.adapter_from, &check.adapter)?;
    let mut read = read_paths.clone();
    let request = match &run.request.git {
        None => run.request.clone(),
        Some(_) => {
            read.push(copy.history()?);
            read.push(dirs.git.clone());
            let dir = dirs.git.to_str().ok_or_else(|| {
                format!(
                    "the Git directory {} is not UTF-8, so a check request cannot name it",
                    dirs.git.display()
                )
            })?;
            run.request.with_git_dir(dir)
        }
    };
    let program = adapter_program(&dirs, &program)?;
    if let Some(owner) = sandbox.check_owner() {
        dirs.hand_over(owner).map_err(|e| {
            format!(
                "could not hand the check's directories under {} to the user it runs as: {e}",
                dirs.root.display()
            )
        })?;
    }

    let log_name = stderr_log_name(&run.candidate, &check.id, run.slot);
    let log = open_log(&git_dir.join(&log_name))?;
    let place = Confinement {
        tree: &dirs.tree,
        adapter: &dirs.adapter,
        home: &dirs.home,
        tmp: &dirs.tmp,
        read: &read,
        network: check.network,
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = sandbox.command(&place, &program, &args)?;
    command
        .env_clear()
        .envs(fixed_environment(&dirs, &check.path, passed))
        .stderr(Stdio::piped());

    let timeout = Duration::from_secs(check.timeout_s);
    let ran = process::run(command, request.to_json().into_bytes(), timeout, STDOUT_CAP)?;
    // The log is for people; one that cannot be written costs the run nothing.
    let _ = keep_stderr(log, &ran.stderr);
    // Without a sandbox nothing is read-only, so the record names no read path.
    let sandbox_read = match sandbox {
        Sandbox::Bwrap(_) => read_paths
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
        Sandbox::Off | Sandbox::Unavailable(_) => Vec::new(),
    };
    Ok(CheckExit {
        stdout: ran.stdout,
        exit_code: ran.exit_code,
        timed_out: ran.timed_out,
        millis: ran.millis,
        infra: None,
        sandbox_read,
        adapter,
        stderr_log: Some(log_name),
    })
}

/// The machine's read paths that exist, each as the absolute path it names, or the reason no
/// check can run here: a value that is neither absolute nor under `~/`, or one that overlaps
/// the common Git directory `git_dir` or a place of `read.kept_out`, named.
///
/// A path missing on the machine is not bound, so a check cannot read it. Both the path as
/// named and where its links lead are held against each place, as named and as resolved.
fn read_binds(
    read: &ReadPaths,
    git_dir: &Path,
    home: Option<&str>,
) -> Result<Vec<PathBuf>, String> {
    let mut places: Vec<PathBuf> = Vec::new();
    for place in std::iter::once(git_dir).chain(read.kept_out.iter().map(PathBuf::as_path)) {
        places.push(place.to_path_buf());
        places.extend(std::fs::canonicalize(place));
    }
    let overlap = |value: &str, path: &str| match places
        .iter()
        .find(|place| read_path::overlaps(path, &place.to_string_lossy()))
    {
        Some(place) => Err(format!(
            "{READ_PATH} {value:?} overlaps {}; a check never sees the repository, its views \
             or bay's keys, so no check runs on this machine until the value names a \
             directory outside them",
            place.display()
        )),
        None => Ok(()),
    };
    let mut bound = Vec::new();
    for value in &read.values {
        // A missing path over a kept place is refused all the same: it may appear there later.
        let named = read_path::expand(value, home)?;
        overlap(value, &named)?;
        let Ok(real) = std::fs::canonicalize(&named) else {
            continue;
        };
        overlap(value, &real.to_string_lossy())?;
        bound.push(PathBuf::from(named));
    }
    Ok(bound)
}

/// The value of each variable the check's `env` names, from the runner's environment.
///
/// A variable the runner lacks stops the run: the check would otherwise run with less than
/// its policy promised it, and could fail in a way that blames the change.
fn passed_variables(
    names: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    names
        .iter()
        .map(|name| match env(name) {
            Some(value) => Ok((name.clone(), value)),
            None => Err(format!(
                "the check needs {name}, which this runner does not set; set it in the \
                 runner's environment, or remove it from the check's `env`"
            )),
        })
        .collect()
}

/// The check's whole environment: `PATH` from the policy's `path`, the fresh `HOME` and
/// `TMPDIR`, `LANG=C.UTF-8`, `BAY_ADAPTER_DIR`, and the variables its `env` names. Nothing
/// else of the runner's environment reaches the check.
///
/// bay's own variables are set last, so that they win even over a named variable that the
/// policy should have refused.
fn fixed_environment(
    dirs: &CheckDirs,
    path: &[String],
    passed: Vec<(String, String)>,
) -> BTreeMap<String, OsString> {
    let mut vars: BTreeMap<String, OsString> = passed
        .into_iter()
        .map(|(name, value)| (name, OsString::from(value)))
        .collect();
    vars.insert("PATH".into(), path.join(":").into());
    vars.insert("HOME".into(), dirs.home.clone().into());
    vars.insert("TMPDIR".into(), dirs.tmp.clone().into());
    vars.insert("LANG".into(), "C.UTF-8".into());
    vars.insert("BAY_ADAPTER_DIR".into(), dirs.adapter.clone().into());
    vars
}

/// The command's program (its first word, a repository path) and its arguments (the other
/// words).
fn split_command(command: &str) -> Result<(String, Vec<String>), String> {
    let mut words = command.split_whitespace().map(str::to_owned);
    let program = words
        .next()
        .ok_or_else(|| "the check's command is empty, so there is no program to run".to_owned())?;
    Ok((program, words.collect()))
}

/// Where the program lies in the adapter directory, once it is there and executable.
///
/// The program must be a relative path that stays inside the adapter directory: the policy
/// already refuses any other, and the driver does not rely on that alone.
fn adapter_program(dirs: &CheckDirs, program: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let relative = bay_core::paths::normalize(program);
    if program.starts_with('/') || relative.is_empty() || relative.split('/').any(|p| p == "..") {
        return Err(format!(
            "the check's program {program:?} is not a path inside the repository"
        ));
    }
    let path = dirs.adapter.join(&relative);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => Ok(path),
        Ok(meta) if meta.is_file() => Err(format!(
            "the check's program {program:?} is not executable in the base; commit it with \
             mode 100755 (`git update-index --chmod=+x {relative}`)"
        )),
        _ => Err(format!(
            "the check's program {program:?} is not among the adapter files copied from the \
             base"
        )),
    }
}

/// Writes the tail of the check's stderr into its log, after a line that says how much came
/// before it, when some did.
fn keep_stderr(mut log: File, tail: &Tail) -> std::io::Result<()> {
    use std::io::Write;
    if tail.dropped > 0 {
        writeln!(
            log,
            "[bay kept the last {} bytes of the check's stderr; the {} before them are gone]",
            tail.bytes.len(),
            tail.dropped
        )?;
    }
    log.write_all(&tail.bytes)
}

/// Opens (and empties) the stderr log, making its directory when needed.
fn open_log(log: &Path) -> Result<File, String> {
    let cannot = |e: std::io::Error| format!("could not open the log {}: {e}", log.display());
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(cannot)?;
    }
    File::create(log).map_err(cannot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_split_on_whitespace() {
        assert_eq!(
            split_command("  scripts/check  unit\tfast "),
            Ok((
                "scripts/check".to_owned(),
                vec!["unit".to_owned(), "fast".to_owned()]
            ))
        );
        assert!(split_command(" \t").is_err());
    }

    #[test]
    fn a_missing_variable_names_itself() {
        let env = |name: &str| (name == "SET").then(|| "1".to_owned());
        assert_eq!(
            passed_variables(&["SET".into()], &env),
            Ok(vec![("SET".to_owned(), "1".to_owned())])
        );
        let error =
            passed_variables(&["SET".into(), "FOO".into()], &env).expect_err("FOO is not set");
        assert!(error.starts_with("the check needs FOO, which this runner does not set"));
    }

    #[test]
    fn bays_own_variables_win() {
        let dirs = CheckDirs::of(
            Path::new("/g"),
            &bay_core::git::Oid::parse(&"a".repeat(40)).expect("an oid"),
            0,
        );
        let vars = fixed_environment(
            &dirs,
            &["/usr/bin".into(), "/bin".into()],
            vec![
                ("HOME".into(), "/root".into()),
                ("TOKEN".into(), "t".into()),
            ],
        );
        assert_eq!(vars["PATH"], OsString::from("/usr/bin:/bin"));
        assert_eq!(vars["HOME"], OsString::from(dirs.home.clone()));
        assert_eq!(vars["TOKEN"], OsString::from("t"));
        assert_eq!(vars["LANG"], OsString::from("C.UTF-8"));
        assert_eq!(vars.len(), 6);
    }
}
