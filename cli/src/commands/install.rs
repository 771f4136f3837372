//! `bay install [--main <name>] [--remote <name>] [--machine]`: the program at
//! `~/.local/bin/bay` and the skill in every Claude config directory; in a clone, also this
//! clone's Git config and, when main names an agent product, bay's hook entries in the
//! project's settings file.
//!
//! Every choice is `bay_core::install`'s and `bay_core::hook_settings`'s; this file gathers the
//! facts they need and writes what they choose. Everything that can refuse is judged before
//! anything is written. It never writes main, global Git config or a user-global Claude
//! settings file.

use std::path::{Path, PathBuf};

use bay_core::adapter::Adapter;
use bay_core::config::{CONFIG_PATH, Config};
use bay_core::hook_settings::{self, Merged};
use bay_core::install::{
    self, BIN_DIR, CONFIG_DIR_MARKERS, CONFIG_DIRS_KEY, ClaudeDirsSeen, CloneDone, ClonePlan, Done,
    GitVersion, GraphDone, Held, HooksDone,
};
use bay_core::result::BayResult;
use bay_core::skill::{self, SKILL, SKILL_PATH, SkillState};
use bay_drivers::discover::{self, Found};
use bay_drivers::git::Git;

use crate::Cli;
use crate::context::{
    Missing, failed, fetched_main_file, git_config, host, missing, remote_and_main,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The branch bay serves in this clone; else what bay.main holds, else the remote's default.
    #[arg(long, value_name = "NAME")]
    pub main: Option<String>,
    /// The remote that holds main; else what bay.remote holds, else origin.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Only this machine's part: the program and the skill, in no repository.
    #[arg(long)]
    pub machine: bool,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    install(cli, args).unwrap_or_else(|refused| refused)
}

fn install(cli: &Cli, args: &Args) -> Result<BayResult, BayResult> {
    let home = std::env::var("HOME")
        .ok()
        .filter(|home| !home.is_empty())
        .ok_or_else(|| failed("HOME is not set, so bay cannot tell where to install".into()))?;
    let home = home.trim_end_matches('/').to_owned();
    let bin = format!("{home}/{BIN_DIR}");
    if !install::on_path(&std::env::var("PATH").unwrap_or_default(), &bin) {
        return Err(install::not_on_path(&bin));
    }
    let clone = match args.machine {
        true => None,
        false => find_clone(cli)?
            .map(|found| CloneWork::plan(found, args))
            .transpose()?,
    };
    let (program, program_written) = install_program(&bin)?;
    let skills = install_skills(&home)?;
    let clone = clone.map(CloneWork::apply).transpose()?;
    Ok(install::outcome(&Done {
        program,
        program_written,
        skills,
        clone,
    }))
}

/// The clone bay runs in, if it runs in one.
pub(crate) fn find_clone(cli: &Cli) -> Result<Option<Found>, BayResult> {
    let start = match &cli.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()
            .map_err(|e| failed(format!("the current folder cannot be read: {e}")))?,
    };
    Ok(discover::find(&start).or_else(|| discover::ask_git(&start).ok()))
}

/// Copies the running program to `bin/bay` unless it is there already; a new copy goes in
/// under another name first and is renamed over the old, so no one ever runs half a program.
fn install_program(bin: &str) -> Result<(String, bool), BayResult> {
    let target = PathBuf::from(bin).join("bay");
    let shown = target.display().to_string();
    let fault =
        |e: std::io::Error| failed(format!("could not install the program at {shown}: {e}"));
    let running = std::env::current_exe().map_err(fault)?;
    let same_file = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    if same_file(&running, &target) {
        return Ok((shown, false));
    }
    let ours = std::fs::read(&running).map_err(fault)?;
    if std::fs::read(&target).is_ok_and(|theirs| theirs == ours) {
        return Ok((shown, false));
    }
    std::fs::create_dir_all(bin).map_err(fault)?;
    let partial = target.with_file_name(format!(".bay.install-{}", std::process::id()));
    let written = write_program(&partial, &ours).and_then(|()| std::fs::rename(&partial, &target));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(fault(e));
    }
    Ok((shown, true))
}

fn write_program(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, bytes)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

/// Every Claude config directory this machine shows, as `install::claude_config_dirs` chooses
/// them; `bay doctor` compares the skill in the same ones.
pub(crate) fn claude_config_dirs(home: &str) -> Vec<String> {
    let seen = ClaudeDirsSeen {
        env: std::env::var("CLAUDE_CONFIG_DIR")
            .ok()
            .filter(|d| !d.is_empty()),
        home: home.to_owned(),
        home_dirs: home_config_dirs(home),
        named: global_values(home, CONFIG_DIRS_KEY),
        sessions: claude_sessions(home),
    };
    install::claude_config_dirs(&seen)
}

/// Writes this bay's skill into every Claude config directory that lacks it or holds another.
fn install_skills(home: &str) -> Result<Vec<(String, SkillState)>, BayResult> {
    let mut states = Vec::new();
    for dir in claude_config_dirs(home) {
        let file = Path::new(&dir).join(SKILL_PATH);
        let was = skill::compare(std::fs::read(&file).ok().as_deref());
        if was != SkillState::Matches {
            let parent = file.parent().expect("the skill's path has a folder");
            std::fs::create_dir_all(parent)
                .and_then(|()| std::fs::write(&file, SKILL))
                .map_err(|e| {
                    failed(format!(
                        "could not write the skill to {}: {e}",
                        file.display()
                    ))
                })?;
        }
        states.push((dir, was));
    }
    Ok(states)
}

/// The home folder's `.claude-*` folders, and whether each holds a Claude config.
fn home_config_dirs(home: &str) -> Vec<(String, bool)> {
    let Ok(entries) = std::fs::read_dir(home) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let holds = CONFIG_DIR_MARKERS
                .iter()
                .any(|marker| entry.path().join(marker).exists());
            name.starts_with(".claude-").then_some((name, holds))
        })
        .collect()
}

/// Every value of `key` in the global Git config (`~/.gitconfig` or the XDG one).
fn global_values(home: &str, key: &str) -> Vec<String> {
    Git::in_dir(home)
        .cmd(["config", "--global", "--get-all", key])
        .output()
        .map(|out| out.text().lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// On Linux, the config directory of each running `claude` process of this user whose `HOME`
/// is this home: `CLAUDE_CONFIG_DIR` from its environment, else its `~/.claude`.
fn claude_sessions(home: &str) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(me) = std::fs::metadata("/proc/self") else {
        return Vec::new();
    };
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    processes
        .filter_map(Result::ok)
        .filter(|p| p.metadata().is_ok_and(|m| m.uid() == me.uid()))
        .filter(|p| {
            std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim() == "claude")
        })
        .filter_map(|p| std::fs::read(p.path().join("environ")).ok())
        .filter_map(|environ| {
            let var = |name: &str| {
                environ
                    .split(|b| *b == 0)
                    .find_map(|entry| entry.strip_prefix(format!("{name}=").as_bytes()))
                    .map(|value| String::from_utf8_lossy(value).into_owned())
            };
            let theirs = var("HOME")?;
            (theirs.trim_end_matches('/') == home)
                .then(|| var("CLAUDE_CONFIG_DIR").unwrap_or_else(|| format!("{home}/.claude")))
        })
        .collect()
}

/// The clone's part, judged before anything is written.
struct CloneWork {
    git: Git,
    top: PathBuf,
    main: String,
    remote: String,
    plan: ClonePlan,
    hooks: Option<(&'static Adapter, Merged, bool)>,
}

impl CloneWork {
    fn plan(found: Found, args: &Args) -> Result<CloneWork, BayResult> {
        let git = Git::in_dir(&found.top);
        let held = held_config(&git);
        let (remote, main) = remote_and_main(
            &git,
            args.remote
                .clone()
                .or_else(|| held.get("bay.remote").cloned()),
            args.main.clone().or_else(|| held.get("bay.main").cloned()),
        );
        let main = main.ok_or_else(|| {
            missing(Missing::main_unnamed(
                &remote,
                "bay cannot tell which branch is main; name it with bay install --main <name>",
            ))
        })?;
        if let Some(problem) = bay_core::ref_name::problem(&format!("refs/heads/{main}")) {
            return Err(failed(format!(
                "{main:?} is not a branch name Git accepts: it {problem}"
            )));
        }
        // `[agent]` as this clone last fetched main: a change never turns hooks on for itself.
        let at_main = |path: &str| fetched_main_file(&git, &remote, &main, path);
        let config = Config::at_main(at_main(CONFIG_PATH).as_deref()).map_err(|why| {
            failed(format!(
                "{why}; mend it on main, then run bay install again"
            ))
        })?;
        let hooks = match config.agent {
            None => None,
            Some(agent) => {
                let adapter = agent.product.adapter();
                let file = found.top.join(adapter.settings_file);
                let here = std::fs::read_to_string(&file).ok();
                let merged = hook_settings::merge(adapter, here.as_deref()).map_err(|why| {
                    failed(format!(
                        "{} cannot be read as settings ({why}); mend it or move it away, then run bay install again",
                        adapter.settings_file
                    ))
                })?;
                let on_main = at_main(adapter.settings_file)
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
                let to_land = hook_settings::to_land(adapter, on_main.as_deref());
                Some((adapter, merged, to_land))
            }
        };
        let version = git
            .cmd(["version"])
            .text()
            .ok()
            .and_then(|text| GitVersion::parse(&text))
            .unwrap_or(GitVersion(0, 0));
        let plan = install::clone_plan(
            &held,
            &main,
            &remote,
            &install::machine_name(&host().unwrap_or_default()),
            hooks
                .as_ref()
                .map(|(_, merged, _)| merged.foreign_digest.as_str()),
            version,
            has_filters(&found.common_dir),
        );
        Ok(CloneWork {
            git,
            top: found.top,
            main,
            remote,
            plan,
            hooks,
        })
    }

    fn apply(self) -> Result<CloneDone, BayResult> {
        for (key, value) in &self.plan.set {
            self.git
                .cmd(["config", "--local", key, value])
                .run()
                .map_err(|e| failed(format!("could not set {key} in this clone: {e}")))?;
        }
        let graph = match self.plan.write_graph {
            false => GraphDone::NotNeeded,
            true => match self
                .git
                .cmd(["commit-graph", "write", "--reachable", "--changed-paths"])
                .run()
            {
                Ok(_) => GraphDone::Written,
                Err(e) => GraphDone::Failed(e.to_string()),
            },
        };
        let hooks = match self.hooks {
            None => None,
            Some((adapter, merged, to_land)) => {
                if merged.changed {
                    let file = self.top.join(adapter.settings_file);
                    let parent = file.parent().expect("a settings file sits in a folder");
                    std::fs::create_dir_all(parent)
                        .and_then(|()| std::fs::write(&file, &merged.text))
                        .map_err(|e| {
                            failed(format!("could not write {}: {e}", adapter.settings_file))
                        })?;
                }
                Some(HooksDone {
                    product: adapter.product,
                    file: adapter.settings_file.to_owned(),
                    written: merged.changed,
                    to_land,
                })
            }
        };
        Ok(CloneDone {
            main: self.main,
            remote: self.remote,
            set: self.plan.set,
            graph,
            hooks,
        })
    }
}

/// The values this clone's Git config gives the keys install reads, lower-cased, the last
/// one winning as in Git.
pub(crate) fn held_config(git: &Git) -> Held {
    git_config(git, &["bay", "fetch", "core", "commitgraph"])
        .into_iter()
        .collect()
}

/// Whether the clone's commit-graph (one file, or a chain of them) holds Bloom filters.
pub(crate) fn has_filters(common_dir: &Path) -> bool {
    let info = common_dir.join("objects").join("info");
    let chain = std::fs::read_to_string(info.join("commit-graphs").join("commit-graph-chain"))
        .unwrap_or_default();
    let files = chain
        .lines()
        .map(|hash| {
            info.join("commit-graphs")
                .join(format!("graph-{hash}.graph"))
        })
        .chain([info.join("commit-graph")]);
    files
        .filter_map(|file| std::fs::read(file).ok())
        .any(|graph| install::has_bloom_filters(&graph))
}
