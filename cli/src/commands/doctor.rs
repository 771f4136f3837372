//! `bay doctor [--role executor]`: check this machine and, in a clone, this clone.
//!
//! Every verdict is `bay_core::doctor`'s; this file gathers the facts it judges: versions
//! programs print, the files that hold the skill and the hook entries, whether the remote
//! answers, the check sandbox's probe and the environment. It writes nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bay_core::adapter::Product;
use bay_core::check::plan::POLICY_PATH;
use bay_core::config::{CONFIG_PATH, Config};
use bay_core::doctor::custody::{Custody, KEY_SETTINGS, KeyFile};
use bay_core::doctor::{self, CloneFacts, Facts, Role, SandboxFact, Variable};
use bay_core::policy::{AgentRules, Policy};
use bay_core::result::BayResult;
use bay_core::skill::SKILL_PATH;
use bay_core::trust::registry::REF as REGISTRY;
use bay_drivers::custody;
use bay_drivers::discover::Found;
use bay_drivers::git::Git;
use bay_drivers::sandbox::Sandbox;

use super::enrol::expand_home;
use super::install::{claude_config_dirs, find_clone, has_filters, held_config};
use crate::Cli;
use crate::context::{fetched_main_file, git_config, remote_and_main, sessions_dir};

/// The role doctor judges this machine as.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default)]
pub enum RoleArg {
    /// A machine that runs agents.
    #[default]
    Agent,
    /// A machine that runs checks, as `bay runner run` does.
    Executor,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Judge this machine as a runner: Git's runner floor, the check sandbox and every
    /// variable a check of main's policy names.
    #[arg(long, value_enum, default_value_t)]
    pub role: RoleArg,
}

/// Where the settings that turn every Claude Code hook off may sit in a clone.
const LOCAL_SETTINGS: &str = ".claude/settings.local.json";

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let role = match args.role {
        RoleArg::Agent => Role::Agent,
        RoleArg::Executor => Role::Executor,
    };
    let home = std::env::var("HOME").unwrap_or_default();
    let home = home.trim_end_matches('/');
    let config_dirs = claude_config_dirs(home);
    let skills = config_dirs
        .iter()
        .map(|dir| {
            (
                dir.clone(),
                std::fs::read(Path::new(dir).join(SKILL_PATH)).ok(),
            )
        })
        .collect();
    let found = match find_clone(cli) {
        Ok(found) => found,
        Err(result) => return result,
    };
    let (clone, agent) = match &found {
        Some(found) => {
            let (clone, agent) = clone_facts(found, role, &config_dirs);
            (Some(clone), agent)
        }
        None => (None, AgentRules::default()),
    };
    let custody = custody_facts(found.as_ref(), home, agent);
    doctor::judge(&Facts {
        role,
        bay_version: env!("CARGO_PKG_VERSION").to_owned(),
        git: git_version(),
        sandbox: sandbox(),
        skills,
        clone,
        custody,
    })
}

/// The `key-custody` row's facts: each key a `bay.*Key` setting names (the clone's config,
/// else the user's), whether agent sessions run under this account (hook sessions in this
/// clone), and the agent key and actors as `bay merge` gathers them
/// ([`super::actor_facts`]), with main's `[agent]` rules `agent`. Paths, modes and public
/// halves only.
fn custody_facts(found: Option<&Found>, home: &str, agent: AgentRules) -> Custody {
    let git = match found {
        Some(found) => Git::in_dir(&found.top),
        None => Git::in_dir(home),
    };
    let held = git_config(&git, &["bay"]);
    let inside: Vec<PathBuf> = found
        .map(|found| vec![found.top.clone(), found.common_dir.clone()])
        .unwrap_or_default();
    let keys: Vec<KeyFile> = KEY_SETTINGS
        .iter()
        .filter_map(|setting| {
            let value = held
                .iter()
                .rev()
                .find(|(key, _)| key.eq_ignore_ascii_case(setting))?
                .1
                .clone();
            let path = expand_home(&value);
            Some(KeyFile {
                setting: (*setting).to_owned(),
                found: custody::key_facts(Path::new(&path), &inside),
                path,
            })
        })
        .collect();
    let sessions_here = found.is_some_and(|found| {
        std::fs::read_dir(sessions_dir(&found.common_dir))
            .is_ok_and(|mut entries| entries.next().is_some())
    });
    let passwordless_sudo = sessions_here && !keys.is_empty() && custody::passwordless_sudo();
    let actor = super::actor_facts(
        &held,
        found.map(|found| (found.top.as_path(), found.common_dir.as_path())),
    );
    Custody {
        unix: cfg!(unix),
        keys,
        sessions_here,
        passwordless_sudo,
        actor,
        agent,
    }
}

/// What `git version` prints, or `None` when Git does not start.
pub fn git_version() -> Option<String> {
    Git::in_dir("/").cmd(["version"]).text().ok()
}

/// The driver's probe of the check sandbox, as doctor names it.
pub fn sandbox() -> SandboxFact {
    match Sandbox::probe() {
        Sandbox::Bwrap(_) => SandboxFact::Works,
        Sandbox::Off => SandboxFact::Waived,
        Sandbox::Unavailable(why) => SandboxFact::Unavailable(why),
    }
}

/// The clone's facts, and main's `[agent]` rules as this clone last fetched them (read as
/// `bay merge` reads them after its fetch, [`AgentRules::at_main`]).
fn clone_facts(found: &Found, role: Role, config_dirs: &[String]) -> (CloneFacts, AgentRules) {
    let git = Git::in_dir(&found.top);
    let held = held_config(&git);
    let (remote, main) = remote_and_main(
        &git,
        held.get("bay.remote").cloned(),
        held.get("bay.main").cloned(),
    );
    let main = main.unwrap_or_else(|| "main".to_owned());
    let reached = git
        .cmd(["ls-remote", "--heads", &remote, &main])
        .run()
        .map(|_| ())
        .map_err(|e| e.to_string());
    // Main as this clone last fetched it, as `bay install` reads it: doctor fetches nothing.
    let fetched = (remote.clone(), main.clone());
    let text = |path: &str| {
        fetched_main_file(&git, &fetched.0, &fetched.1, path)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    let product = Config::at_main(text(CONFIG_PATH).as_deref().map(str::as_bytes))
        .ok()
        .and_then(|config| config.agent)
        .map(|agent| (agent.product, product_version(agent.product)));
    let settings = product
        .as_ref()
        .map(|(product, _)| product.adapter().settings_file);
    let mut switches: Vec<(String, String)> = Vec::new();
    let local = found.top.join(LOCAL_SETTINGS);
    let user = config_dirs
        .iter()
        .map(|dir| Path::new(dir).join("settings.json"));
    for file in std::iter::once(local).chain(user) {
        if let Ok(contents) = std::fs::read_to_string(&file) {
            switches.push((file.display().to_string(), contents));
        }
    }
    let policy = text(POLICY_PATH);
    let variables = match role {
        Role::Agent => Ok(Vec::new()),
        Role::Executor => set_variables(policy.clone()),
    };
    let registry = reached.is_ok().then(|| {
        git.cmd(["ls-remote", &remote, REGISTRY])
            .text()
            .is_ok_and(|out| !out.trim().is_empty())
    });
    let signing = match &policy {
        Some(policy) => Policy::parse(policy)
            .map(|policy| policy.signing)
            .map_err(|e| e.to_string()),
        None => Err(format!("{POLICY_PATH} is not on main")),
    };
    let clone = CloneFacts {
        registry,
        signing,
        remote,
        reached,
        product,
        settings_on_main: settings.and_then(text),
        settings_here: settings.and_then(|file| std::fs::read_to_string(found.top.join(file)).ok()),
        switches,
        variables,
        graph_filters: has_filters(&found.common_dir),
        graph_on_fetch: held.get("fetch.writecommitgraph").cloned(),
    };
    (clone, AgentRules::at_main(policy.as_deref()))
}

/// What `<product> --version` prints, or `None` when the program does not start.
fn product_version(product: Product) -> Option<String> {
    let out = Command::new(product.as_str())
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    Some(format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// Each variable main's policy passes to a check, and whether this process has it.
fn set_variables(policy: Option<String>) -> Result<Vec<(Variable, bool)>, String> {
    let policy = policy.ok_or("main has no .bay/policy.toml")?;
    Ok(doctor::variables(&policy)?
        .into_iter()
        .map(|variable| {
            let set = std::env::var_os(&variable.name).is_some();
            (variable, set)
        })
        .collect())
}
