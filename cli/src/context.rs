//! Where a command runs: the clone, its main and remote, the view it runs in, the actor, and
//! the configuration committed on main.
//!
//! Configuration is read only from main as this command's fetch saw it, so a change can never
//! set the rules it runs under. The one fetch a command makes serves both this reading and the
//! command's machine (see `local::Local::prefetched`).

use std::path::{Path, PathBuf};

use bay_core::actor::{self, ActorSource};
use bay_core::check::plan::POLICY_PATH;
use bay_core::check::read_path;
use bay_core::config::Config;
use bay_core::detail::Detail;
use bay_core::git::{Oid, refs};
use bay_core::id::{self, ChangeId};
use bay_core::machine::Refs;
use bay_core::policy::AgentRules;
use bay_core::reason::ReasonCode;
use bay_core::report;
use bay_core::result::BayResult;
use bay_drivers::check::ReadPaths;
use bay_drivers::discover::{self, Found};
use bay_drivers::git::Git;

use crate::local::Local;

/// Where the configuration and the policy live in main's tree.
pub use bay_core::config::CONFIG_PATH;

#[derive(Debug, Clone)]
pub struct Context {
    /// The worktree top the command runs in (a view's folder, or the main checkout).
    pub top: PathBuf,
    /// The Git directory every worktree of this clone shares.
    pub common_dir: PathBuf,
    pub remote: String,
    pub main: String,
    pub actor: String,
    pub actor_source: ActorSource,
    /// The change whose view the command runs in, if it runs in one.
    pub view: Option<ChangeId>,
    /// Every `bay.*` key of the Git config this clone sees, in order, read once.
    pub settings: Vec<(String, String)>,
}

impl Context {
    /// Finds the clone from `dir` (or the current directory).
    pub fn discover(dir: Option<&Path>) -> Result<Context, BayResult> {
        let start = match dir {
            Some(dir) => dir.to_path_buf(),
            None => std::env::current_dir()
                .map_err(|e| failed(format!("the current folder cannot be read: {e}")))?,
        };
        let git = Git::in_dir(&start);
        // Found and read in-process where gix answers as Git would; else by `git`.
        let (Found { top, common_dir }, settings) = match discover::open(&start) {
            Some(opened) => {
                let settings = opened.config_values(&["bay"]);
                (opened.found, settings)
            }
            None => {
                let found = discover::ask_git(&start).map_err(|_| {
                    failed(format!(
                        "{} is not inside a Git repository with a work tree",
                        start.display()
                    ))
                })?;
                (found, None)
            }
        };
        let view = view_of(&top, &common_dir);
        let settings = settings.unwrap_or_else(|| bay_settings(&git));
        let setting = |key: &str| {
            settings
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let (remote, main) = remote_and_main(&git, setting("bay.remote"), setting("bay.main"));
        let main = main.ok_or_else(|| {
            missing(Missing::main_unnamed(
                &remote,
                "bay cannot tell which branch is main",
            ))
        })?;
        let (actor, actor_source) = actor_from_env();
        Ok(Context {
            top,
            common_dir,
            remote,
            main,
            actor,
            actor_source,
            view,
            settings,
        })
    }

    /// This machine's name in bay's records: `bay.machine`, which `bay install` sets, else
    /// one made from the host's name.
    pub fn machine(&self) -> String {
        match self.setting_values("bay.machine").pop() {
            Some(named) if !named.trim().is_empty() => named.trim().to_owned(),
            _ => bay_core::install::machine_name(&host().unwrap_or_default()),
        }
    }

    /// Where the hook keeps each session's work record and state.
    pub fn sessions_dir(&self) -> PathBuf {
        sessions_dir(&self.common_dir)
    }

    /// Every value of a `bay.*` key, in the order Git lists them.
    pub fn setting_values(&self, key: &str) -> Vec<String> {
        self.settings
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// This machine's free-space floor in MiB (`bay.minFreeMiB`), if it sets one; the last
    /// value wins, as Git's own settings do.
    pub fn min_free_mib(&self) -> Result<Option<u64>, BayResult> {
        match self.setting_values("bay.minfreemib").last() {
            None => Ok(None),
            Some(text) => text.trim().parse::<u64>().map(Some).map_err(|_| {
                failed(format!(
                    "bay.minFreeMiB is {text:?} in Git config; set it to a whole number of MiB,                      such as 2048, or unset it"
                ))
            }),
        }
    }

    /// The directories this machine lets checks read (`bay.checkReadPath`), kept out of this
    /// clone's work trees (the one here, and the main one beside the common Git directory) and
    /// of bay's key files.
    pub fn read_paths(&self) -> ReadPaths {
        let mut trees = vec![self.top.clone()];
        if self.common_dir.file_name() == Some(".git".as_ref())
            && let Some(main) = self.common_dir.parent()
        {
            trees.push(main.to_path_buf());
        }
        read_paths(&self.settings, trees)
    }

    /// The free space where a view would go, measured against this machine's floor; `None`
    /// when it sets none.
    pub fn disk_space(&self) -> Result<Option<bay_core::disk::DiskSpace>, BayResult> {
        let Some(floor) = self.min_free_mib()? else {
            return Ok(None);
        };
        let views = self.common_dir.join("bay").join("views");
        bay_drivers::disk::measure(&views, floor)
            .map(Some)
            .map_err(|why| failed(format!("cannot tell how much disk space is free: {why}")))
    }

    pub fn git(&self) -> Git {
        Git::in_dir(&self.top)
    }

    /// The commit a name (a ref, or an id) names in this clone, if it names one.
    pub fn local_commit(&self, name: &str) -> Option<Oid> {
        self.local_object(&format!("{name}^{{commit}}"))
    }

    /// The object a revision names in this clone, if it names one.
    pub fn local_object(&self, revision: &str) -> Option<Oid> {
        let text = self
            .git()
            .cmd(["rev-parse", "--verify", "--quiet", revision])
            .text()
            .ok()?;
        Oid::parse(text.trim()).ok()
    }

    /// The change `bay <command>` acts on: the one named, else the view's. With neither it
    /// exits with a usage error saying how to give one.
    pub fn change(&self, named: Option<&str>, command: &str) -> Result<ChangeId, BayResult> {
        match (named, &self.view) {
            (Some(text), _) => ChangeId::parse(text).map_err(failed),
            (None, Some(change)) => Ok(change.clone()),
            (None, None) => crate::usage_error(command, &id::no_change_named(command)),
        }
    }

    /// The `[agent]` rules of the policy committed on main at the fetch `remote`
    /// ([`AgentRules::at_main`] says which).
    pub fn agent_rules(&self, remote: &Refs, local: &Local) -> Result<AgentRules, BayResult> {
        let Some(main) = remote.get(&refs::main(&self.main)) else {
            return Ok(AgentRules::default());
        };
        let text = read_text(local, main, POLICY_PATH)?;
        Ok(AgentRules::at_main(text.as_deref()))
    }

    /// Reads and checks `.bay/config.toml` at main as `remote` (a fetch's refs) holds it, read
    /// through `local`'s reader.
    pub fn config(&self, remote: &Refs, local: &Local) -> Result<Config, BayResult> {
        let main_ref = refs::main(&self.main);
        let Some(main) = remote.get(&main_ref) else {
            return Err(missing(Missing {
                looked_at: vec![format!("{}/{}", self.remote, self.main)],
                why: "the remote has no main",
            }));
        };
        let Some(text) = read_text(local, main, CONFIG_PATH)? else {
            return Err(missing(Missing {
                looked_at: vec![format!("{}/{}:{CONFIG_PATH}", self.remote, self.main)],
                why: "main has no .bay/config.toml",
            }));
        };
        let config = Config::parse(&text)
            .map_err(|e| failed(format!("{CONFIG_PATH} on main is invalid: {e}")))?;
        let named = |key: &str, value: &Option<String>, here: &str| match value {
            Some(value) if value != here => Err(failed(format!(
                "{CONFIG_PATH} on main says {key} = {value:?}, but this clone uses {here:?}; run bay install --{key} {value} here"
            ))),
            _ => Ok(()),
        };
        named("main", &config.main, &self.main)?;
        named("remote", &config.remote, &self.remote)?;
        Ok(config)
    }
}

/// Where the hook keeps each session's work record and state in the clone whose common Git
/// directory is `common_dir`.
pub fn sessions_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("bay").join("sessions")
}

/// The change whose view the worktree at `top` is, when it is one of this clone's views
/// (`<common Git dir>/bay/views/<change>`).
pub fn view_of(top: &Path, common_dir: &Path) -> Option<ChangeId> {
    top.parent()
        .filter(|parent| *parent == common_dir.join("bay").join("views"))
        .and_then(|_| top.file_name())
        .and_then(|name| ChangeId::parse(&name.to_string_lossy()).ok())
}

/// This host's name, if it can be read.
pub fn host() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
}

/// Who runs bay, from the environment: `BAY_ACTOR`, else the user name (`USER`, then
/// `LOGNAME`), as `actor::resolve` decides; the same for every command and hook.
pub fn actor_from_env() -> (String, ActorSource) {
    let bay_actor = std::env::var("BAY_ACTOR").ok();
    let user = std::env::var("USER")
        .ok()
        .or_else(|| std::env::var("LOGNAME").ok());
    actor::resolve(bay_actor.as_deref(), user.as_deref())
}

/// A file at a commit, as text; `None` when absent.
fn read_text(local: &Local, commit: &Oid, path: &str) -> Result<Option<String>, BayResult> {
    let Some(bytes) = local
        .read_file(commit, path)
        .map_err(|e| failed(format!("could not read {path}: {e}")))?
    else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| failed(format!("{path} on main is not UTF-8 text")))
}

/// `bay.checkReadPath` as `settings` give it, to be kept out of `trees` and of every key file
/// that a `bay.*Key` setting names (`bay.agentKey`, `bay.producerKey`, ...).
///
/// A key setting that names no path (a key given inline) has no file to keep out.
pub fn read_paths(settings: &[(String, String)], trees: Vec<PathBuf>) -> ReadPaths {
    let home = std::env::var("HOME").ok();
    let keys = settings
        .iter()
        .filter(|(key, _)| key.ends_with("key"))
        .filter_map(|(_, value)| read_path::expand(value, home.as_deref()).ok())
        .map(PathBuf::from);
    let setting = read_path::SETTING.to_ascii_lowercase();
    ReadPaths {
        values: settings
            .iter()
            .filter(|(key, _)| *key == setting)
            .map(|(_, value)| value.clone())
            .collect(),
        kept_out: trees.into_iter().chain(keys).collect(),
    }
}

/// Every `bay.*` key and value of the config this clone sees (every level, includes), in
/// Git's order. Keys come lower-cased, as Git gives them.
pub fn bay_settings(git: &Git) -> Vec<(String, String)> {
    git_config(git, &["bay"])
}

/// Every key of the config sections `sections` this clone sees and its value, in Git's order;
/// keys come lower-cased, as Git gives them. A key with no value at all, which Git reads as a
/// true boolean, comes as `true`. Read in-process (`bay_drivers::gitoxide`), else with one
/// `git config` call.
pub fn git_config(git: &Git, sections: &[&str]) -> Vec<(String, String)> {
    bay_drivers::gitoxide::open(git.location())
        .and_then(|repo| bay_drivers::gitoxide::config_values(&repo, sections))
        .unwrap_or_else(|| bay_drivers::gitoxide::ask_git_config(git, sections))
}

/// The remote and main a clone works with: the ones named (`bay.remote` and `bay.main`, or
/// `bay install`'s flags), else `origin` and the remote's default branch, if it can be told.
pub fn remote_and_main(
    git: &Git,
    remote: Option<String>,
    main: Option<String>,
) -> (String, Option<String>) {
    let remote = remote.unwrap_or_else(|| "origin".to_owned());
    let main = main.or_else(|| default_branch(git, &remote));
    (remote, main)
}

/// A file of main as this clone last fetched it: bay's mirror of the remote's main (what bay's
/// own fetches saw), else the remote-tracking branch a plain `git fetch` keeps. Read
/// in-process; `git` answers only where gix cannot (a reftable, say). `None` when neither ref
/// exists or main holds no such file.
pub fn fetched_main_file(git: &Git, remote: &str, main: &str, path: &str) -> Option<Vec<u8>> {
    let refs = [
        format!("{}heads/{main}", bay_drivers::remote::mirror_prefix(remote)),
        format!("refs/remotes/{remote}/{main}"),
    ];
    if let Ok(file) = bay_drivers::reader::file_at_ref(git.location(), &refs, path) {
        return file;
    }
    let commit = refs.iter().find_map(|name| {
        let out = git
            .cmd([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{name}^{{commit}}"),
            ])
            .output()
            .ok()?;
        out.success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    })?;
    let out = git
        .cmd(["cat-file", "blob", &format!("{commit}:{path}")])
        .output()
        .ok()?;
    out.success().then_some(out.stdout)
}

/// The remote's default branch: from `refs/remotes/<remote>/HEAD`, else by asking the remote.
pub fn default_branch(git: &Git, remote: &str) -> Option<String> {
    let local = git
        .cmd([
            "symbolic-ref",
            "--quiet",
            &format!("refs/remotes/{remote}/HEAD"),
        ])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&local.stdout).trim().to_string();
    if let Some(branch) = text.strip_prefix(&format!("refs/remotes/{remote}/")) {
        return Some(branch.to_string());
    }
    let asked = git
        .cmd(["ls-remote", "--symref", remote, "HEAD"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&asked.stdout)
        .lines()
        .find_map(|line| {
            let target = line.strip_prefix("ref: refs/heads/")?;
            Some(target.split('\t').next()?.to_string())
        })
}

/// A `bay.minFreeMiB` value read: a whole number of MiB.
pub fn min_free_mib(value: Option<&str>) -> Result<Option<u64>, BayResult> {
    match value {
        None => Ok(None),
        Some(text) => text.trim().parse::<u64>().map(Some).map_err(|_| {
            failed(format!(
                "bay.minFreeMiB is {text:?} in Git config; set it to a whole number of MiB, such \
                 as 2048, or unset it"
            ))
        }),
    }
}

pub fn failed(why: String) -> BayResult {
    report::failed(why, None)
}

/// A `CONFIG_MISSING` refusal's detail: where bay looked, and what it did not find.
#[derive(serde::Serialize)]
pub(crate) struct Missing {
    looked_at: Vec<String>,
    why: &'static str,
}

impl Detail for Missing {}

impl Missing {
    /// Main's name was nowhere bay looks: the setting, and `remote`'s HEAD as fetched and as
    /// the remote says.
    pub(crate) fn main_unnamed(remote: &str, why: &'static str) -> Missing {
        Missing {
            looked_at: vec![
                "git config bay.main".into(),
                format!("refs/remotes/{remote}/HEAD"),
                format!("git ls-remote --symref {remote} HEAD"),
            ],
            why,
        }
    }
}

pub(crate) fn missing(detail: Missing) -> BayResult {
    report::refused(ReasonCode::ConfigMissing, None, None, detail.to_json())
}
