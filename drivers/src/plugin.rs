//! Running a plugin's program: core's [`Action::RunPlugin`], answered with the
//! [`PluginExit`] of [`Completion::PluginExited`].
//!
//! The program is the file at `<commit>:<program>`, never a working tree's copy, so that a
//! change cannot edit the plugin that judges it before it merges. The driver writes that file,
//! executable, into a fresh temporary directory, and runs it there with only `PATH` and `HOME`
//! of its own environment, so that a runner's secrets never reach a repository's script. No
//! sandbox: a plugin is trusted as the repository's own code, as the spec says. The run ends,
//! with its whole process group, at `timeout_s`. The driver reports what happened; core judges
//! it.
//!
//! [`Action::RunPlugin`]: bay_core::machine::Action::RunPlugin
//! [`Completion::PluginExited`]: bay_core::machine::Completion::PluginExited

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bay_core::machine::{PluginExit, PluginRun};
use bay_core::plugin::{PLUGIN_ENV, STDOUT_CAP};

use crate::check::process;
use crate::remote::Repo;

/// Runs `run`'s program from `repo`, with `env` as the driver's environment.
pub fn run(repo: &Repo, run: &PluginRun, env: &dyn Fn(&str) -> Option<String>) -> PluginExit {
    match try_run(repo, run, env) {
        Ok(exit) => exit,
        Err(why) => PluginExit::NotStarted(why),
    }
}

fn try_run(
    repo: &Repo,
    run: &PluginRun,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<PluginExit, String> {
    let relative = repository_path(&run.program)?;
    let body = repo
        .read_file(&run.commit, &relative)
        .map_err(|fault| format!("could not read {relative} at {}: {fault}", run.commit))?
        .ok_or_else(|| {
            format!(
                "main's tip {} has no file {relative}; commit the program there, or fix the \
                 plugin's command in .bay/config.toml",
                run.commit
            )
        })?;
    let dir = tempfile::Builder::new()
        .prefix("bay-plugin-")
        .tempdir()
        .map_err(|e| format!("could not make a directory to run the plugin in: {e}"))?;
    let program = write_program(dir.path(), &relative, &body)?;
    let work = dir.path().join("work");
    std::fs::create_dir(&work).map_err(|e| format!("could not make {}: {e}", work.display()))?;

    let mut command = Command::new(&program);
    command
        .args(&run.args)
        .current_dir(&work)
        .env_clear()
        .envs(
            PLUGIN_ENV
                .iter()
                .filter_map(|name| Some((name, env(name)?))),
        )
        .stderr(Stdio::null());
    let timeout = Duration::from_secs(run.timeout_s);
    let ran = process::run(command, run.stdin.clone(), timeout, STDOUT_CAP)?;
    Ok(if ran.timed_out {
        PluginExit::TimedOut
    } else {
        PluginExit::Exited {
            code: ran.exit_code,
            stdout: ran.stdout,
        }
    })
}

/// `program` as a path inside the repository. The config parser already refuses any other;
/// the driver does not rely on that alone, since it writes the file under its own directory.
fn repository_path(program: &str) -> Result<String, String> {
    let relative = bay_core::paths::normalize(program);
    if program.starts_with('/') || relative.is_empty() || relative.split('/').any(|p| p == "..") {
        return Err(format!(
            "the plugin's program {program:?} is not a path inside the repository"
        ));
    }
    Ok(relative)
}

/// Writes the program's bytes under `dir` at its repository path, executable by its owner.
fn write_program(dir: &Path, relative: &str, body: &[u8]) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("program").join(relative);
    let cannot = |e: std::io::Error| format!("could not write {}: {e}", path.display());
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(cannot)?;
    }
    std::fs::write(&path, body).map_err(cannot)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).map_err(cannot)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_stays_inside_the_repository() {
        assert_eq!(
            repository_path("./scripts//bay-hold"),
            Ok("scripts/bay-hold".to_owned())
        );
        for outside in ["/bin/sh", "../hold", "scripts/../../hold", ""] {
            assert!(repository_path(outside).is_err(), "{outside:?}");
        }
    }
}
