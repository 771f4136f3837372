//! A home folder of a test's own for `bay install` and the hook entries it writes: HOME, the
//! XDG folders and PATH all point into the test's temporary folder.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use super::{BAY, Ran, held};

/// A home folder for one test, and the PATH bay runs with: `~/.local/bin` first, then the
/// system's folders, where Git is and bay is not.
pub struct Home {
    dir: tempfile::TempDir,
}

pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("bay-home-")
            .tempdir()
            .expect("a temporary folder");
        assert!(
            !sh_finds_bay(SYSTEM_PATH),
            "bay is installed on this machine's own PATH; these tests need it absent there"
        );
        Home { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn bin(&self) -> PathBuf {
        self.path().join(".local/bin")
    }

    pub fn on_path(&self) -> String {
        format!("{}:{SYSTEM_PATH}", self.bin().display())
    }

    /// Runs `bay --json install <args>` in `dir` with this home, PATH and `env`.
    pub fn install(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
        let mut all = vec!["install"];
        all.extend(args);
        self.bay(dir, &self.on_path(), &all, env)
    }

    /// Installs bay in the clone `dir`, which must succeed, and gives back the settings file
    /// `settings_file` it wrote there, as JSON.
    pub fn installed(&self, dir: &Path, settings_file: &str) -> Value {
        let installed = self.install(dir, &[], &[]);
        assert_eq!(installed.code, 0, "{installed:?}");
        let text = std::fs::read_to_string(dir.join(settings_file)).expect("the settings file");
        serde_json::from_str(&text).expect("JSON")
    }

    /// Runs `bay --json <args>` in `dir` with this home, `path` for PATH, and `env` alone.
    pub fn bay(&self, dir: &Path, path: &str, args: &[&str], env: &[(&str, &str)]) -> Ran {
        let mut command = Command::new(BAY);
        command
            .env_clear()
            .current_dir(dir)
            .arg("--json")
            .args(args)
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join(".config"))
            .env("XDG_DATA_HOME", self.path().join(".local/share"))
            .env("XDG_STATE_HOME", self.path().join(".local/state"))
            .env("PATH", path);
        for (name, value) in env {
            command.env(name, value);
        }
        held(&mut command, args)
    }

    /// Runs a hook entry's `command` as the agent product does, `sh -c` in `dir` with this home
    /// and PATH, as `actor` (`BAY_ACTOR`) in a Claude project at `dir`, `payload` on stdin.
    pub fn run_entry(&self, command: &str, dir: &Path, actor: &str, payload: &str) -> Output {
        let mut child = Command::new("sh")
            .args(["-c", command])
            .current_dir(dir)
            .env_clear()
            .env("PATH", self.on_path())
            .env("HOME", self.path())
            .env("CLAUDE_PROJECT_DIR", dir)
            .env("BAY_ACTOR", actor)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sh runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(payload.as_bytes())
            .expect("the payload is written");
        child.wait_with_output().expect("sh ends")
    }

    pub fn skill_at(&self, dir: &str) -> Option<String> {
        std::fs::read_to_string(self.path().join(dir).join("skills/bay/SKILL.md")).ok()
    }
}

/// Whether `sh` finds a `bay` on `path`.
pub fn sh_finds_bay(path: &str) -> bool {
    Command::new("sh")
        .args(["-c", "command -v bay"])
        .env_clear()
        .env("PATH", path)
        .stdout(Stdio::null())
        .status()
        .expect("sh runs")
        .success()
}

/// The commands of every handler under `event` of a settings document, in order.
pub fn commands(settings: &Value, event: &str) -> Vec<String> {
    settings["hooks"][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|group| group["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|handler| handler["command"].as_str().map(str::to_owned))
        .collect()
}
