//! What `bay doctor` decides: one row per concern of this machine (bay itself, Git, the agent
//! product, the check sandbox, the hooks, the skill, the remote, the check variables, the
//! object store, key custody), each green or red with its floor and its fix (or `advice`, `off`
//! or `degraded`, which never turn doctor red), and the result they make.
//!
//! The CLI gathers the facts ([`Facts`]: version texts, file contents, probe outcomes) and
//! prints what [`judge`] returns; every verdict is made here, so the rows can be tested from
//! facts alone. `bay runner run` asks the same rows before it claims anything
//! ([`runner_refusal`]), so a runner and doctor can never disagree about this machine.

use serde::Serialize;

pub use row::{Row, RowFacts, State};

use crate::adapter::{Adapter, Product};
use crate::detail::Detail;
use crate::hook_settings;
use crate::install::{GitVersion, LAND_COMMAND};
use crate::policy::{Policy, Signing};
use crate::reason::ReasonCode;
use crate::result::BayResult;
use crate::skill::{self, SkillState};
use row::{Hooks, Mode, Network, Sandbox, SkillDir, Switch, Unset};

/// The oldest Git this bay works with, in every role: the newest Git feature the driver uses
/// (`merge-file --diff-algorithm`, 2.44; `docs/architecture.md`, "Git floors"). The spec's own
/// floors (2.40 for an agent, 2.50 for a runner) are below and above it; the runner's 2.50 is
/// for features this bay does not use yet, so holding runners to it would refuse machines on
/// which every part of this bay works.
pub const GIT_FLOOR: GitVersion = GitVersion(2, 44);

/// What doctor judges this machine as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// It runs agents: the sandbox and the check variables are shown, never required.
    Agent,
    /// It runs checks (`--role executor`): the sandbox and every check's variables are required.
    Executor,
}

/// How checks would run here, as the driver's probe found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SandboxFact {
    /// `bwrap` started a program with every namespace a check gets, the network's included.
    Works,
    /// The machine's owner turned the sandbox off (`bay.executorSandbox none`).
    Waived,
    /// No sandbox works here; the driver's reason, which names the fix.
    Unavailable(String),
}

/// Everything doctor looks at, gathered by the CLI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    pub role: Role,
    pub bay_version: String,
    /// What `git version` printed; `None` when no Git could be started.
    pub git: Option<String>,
    pub sandbox: SandboxFact,
    /// Each Claude config directory (`install::claude_config_dirs`) and its skill file's bytes.
    pub skills: Vec<(String, Option<Vec<u8>>)>,
    /// The clone's part; `None` outside a repository.
    pub clone: Option<CloneFacts>,
    /// The signing keys Git config names, for the `key-custody` row.
    pub custody: custody::Custody,
}

/// What doctor looks at in a clone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CloneFacts {
    pub remote: String,
    /// Whether the remote answered, or what Git said when it did not.
    pub reached: Result<(), String>,
    /// `[agent] product` on main, and what `<product> --version` printed (`None`: the
    /// program is not on `PATH`).
    pub product: Option<(Product, Option<String>)>,
    /// The product's settings file on main and in this clone's work tree.
    pub settings_on_main: Option<String>,
    pub settings_here: Option<String>,
    /// Settings files that can turn hooks off (`.claude/settings.local.json`, each config
    /// directory's `settings.json`), as shown to a person, with their text.
    pub switches: Vec<(String, String)>,
    /// The check variables main's policy names, and whether each is set here; `Err` when the
    /// policy cannot be read.
    pub variables: Result<Vec<(Variable, bool)>, String>,
    /// Whether the commit-graph holds changed-path filters, and this clone's
    /// `fetch.writeCommitGraph` (whether Git writes one on fetch), as the config holds it.
    pub graph_filters: bool,
    pub graph_on_fetch: Option<String>,
    /// For the `signing` row: whether the remote holds a key registry (`None`: not known,
    /// the remote did not answer), and `[policy] signing` on main as last fetched (`Err`:
    /// the policy cannot be read).
    pub registry: Option<bool>,
    pub signing: Result<Signing, String>,
}

/// One variable one check of the policy passes from the runner (`[[check]] env`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variable {
    pub check: String,
    pub environment: String,
    pub name: String,
}

/// The variables the checks of the policy text `policy` need, each pair once, in the
/// policy's order: what the CLI looks up in its environment.
pub fn variables(policy: &str) -> Result<Vec<Variable>, String> {
    let policy = Policy::parse(policy).map_err(|e| e.to_string())?;
    Ok(policy
        .checks
        .iter()
        .flat_map(|check| {
            check.env.iter().map(|name| Variable {
                check: check.id.clone(),
                environment: check.environment.clone(),
                name: name.clone(),
            })
        })
        .collect())
}

/// The version a product's `--version` prints: the first word of dotted numbers, such as
/// `2.1.302` in `2.1.302 (Claude Code)` or `0.153.2` in `codex-cli 0.153.2`.
pub fn product_version(text: &str) -> Option<Vec<u32>> {
    text.split_whitespace().find_map(|word| {
        let word = word.strip_prefix('v').unwrap_or(word);
        let parts: Option<Vec<u32>> = word.split('.').map(|part| part.parse().ok()).collect();
        parts.filter(|parts| parts.len() >= 2)
    })
}

/// The `git` row: Git must start, and be [`GIT_FLOOR`] or newer.
pub fn git_row(git: Option<&str>) -> Row {
    let floor = format!("{}.{}", GIT_FLOOR.0, GIT_FLOOR.1);
    let Some(text) = git else {
        return Row::red(
            "git",
            true,
            ReasonCode::ToolAbsent,
            format!("install Git {floor} or newer and put it on PATH"),
        )
        .floor(floor)
        .with(RowFacts::Tool { tool: "git" });
    };
    let found = GitVersion::number(text).map(str::to_owned);
    match GitVersion::parse(text) {
        Some(version) if version >= GIT_FLOOR => Row::green("git", found).floor(floor),
        _ => Row::red(
            "git",
            true,
            ReasonCode::ToolBelowFloor,
            format!("update Git to {floor} or newer"),
        )
        .found(found.or_else(|| Some(text.trim().to_owned())))
        .floor(floor)
        .with(RowFacts::Tool { tool: "git" }),
    }
}

/// Whether version `found` is at or above `floor`. Every adapter's floor is a version, as a
/// test holds the table to; a floor that were not could judge no version above it, so the
/// row would be red, never green.
fn meets_floor(found: &[u32], floor: &str) -> bool {
    product_version(floor).is_some_and(|floor| found >= floor.as_slice())
}

/// The `agent` row: the product main names must be installed, at its adapter's floor or newer.
fn product_row(product: Option<&(Product, Option<String>)>) -> Row {
    let Some((product, version)) = product else {
        return Row {
            state: State::Off,
            ..Row::green("agent", None)
        }
        .with(RowFacts::Why {
            why: "main names no [agent] product".into(),
        });
    };
    let adapter: &Adapter = product.adapter();
    let tool = product.as_str();
    let Some(text) = version else {
        return Row::red(
            "agent",
            true,
            ReasonCode::ToolAbsent,
            format!(
                "install {} {} or newer, or remove [agent] product from .bay/config.toml on main",
                adapter.name, adapter.floor
            ),
        )
        .floor(adapter.floor)
        .with(RowFacts::Tool { tool });
    };
    match product_version(text) {
        Some(found) if meets_floor(&found, adapter.floor) => {
            Row::green("agent", Some(dotted(&found)))
                .floor(adapter.floor)
                .with(RowFacts::Tool { tool })
        }
        found => Row::red(
            "agent",
            true,
            ReasonCode::ToolBelowFloor,
            format!("update {} to {} or newer", adapter.name, adapter.floor),
        )
        .found(Some(
            found.map_or_else(|| text.trim().to_owned(), |f| dotted(&f)),
        ))
        .floor(adapter.floor)
        .with(RowFacts::Tool { tool }),
    }
}

fn dotted(version: &[u32]) -> String {
    version
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The `sandbox` row: required on a machine that runs checks. The driver's probe cuts the
/// network off as every check's sandbox does, so a green row means the cut-off works.
pub fn sandbox_row(role: Role, sandbox: &SandboxFact) -> Row {
    let floor = "bwrap that can cut off the network";
    match sandbox {
        SandboxFact::Works => Row::green("sandbox", Some("bwrap".into()))
            .floor(floor)
            .with(RowFacts::Network {
                network: Network::Cut,
            }),
        SandboxFact::Waived => Row {
            state: State::Off,
            ..Row::green("sandbox", None)
        }
        .with(RowFacts::Why {
            why: "this machine's owner runs checks without a sandbox (bay.executorSandbox none)"
                .into(),
        }),
        SandboxFact::Unavailable(why) => Row::red(
            "sandbox",
            role == Role::Executor,
            ReasonCode::SandboxAbsent,
            why.clone(),
        )
        .floor(floor)
        .with(RowFacts::Sandbox {
            sandbox: Sandbox::Bwrap,
        }),
    }
}

/// The settings keys with which a person turns every project hook off.
pub const HOOK_SWITCHES: [&str; 2] = ["disableAllHooks", "allowManagedHooksOnly"];

/// The `hooks` row: with an agent product on main, bay's entries must be current in the
/// settings file on main (every view takes it from there), hold no moment name bay does not
/// know, and no settings file may turn hooks off. Without a product the row is `off`.
fn hooks_row(clone: &CloneFacts) -> Row {
    let Some((product, _)) = &clone.product else {
        return Row {
            state: State::Off,
            ..Row::green("hooks", None)
        }
        .with(RowFacts::Why {
            why: "main names no [agent] product".into(),
        });
    };
    let adapter = product.adapter();
    let current =
        |text: &Option<String>| text.is_some() && !hook_settings::to_land(adapter, text.as_deref());
    let old_names: Vec<String> = [&clone.settings_on_main, &clone.settings_here]
        .into_iter()
        .flatten()
        .flat_map(|text| hook_settings::old_names(text))
        .fold(Vec::new(), |mut all, name| {
            if !all.contains(&name) {
                all.push(name);
            }
            all
        });
    let switched: Vec<Switch> = clone
        .switches
        .iter()
        .flat_map(|(file, text)| {
            let json = crate::ordered_json::Json::parse(text).ok();
            HOOK_SWITCHES
                .into_iter()
                .filter(move |key| {
                    json.as_ref()
                        .and_then(|json| json.get(key))
                        .is_some_and(|value| *value == crate::ordered_json::Json::Bool(true))
                })
                .map(move |key| Switch {
                    file: file.clone(),
                    key,
                })
        })
        .collect();
    let file = adapter.settings_file;
    let fix = if let Some(first) = switched.first() {
        Some(format!(
            "remove {} from {}; it turns off every hook, bay's included",
            first.key, first.file
        ))
    } else if current(&clone.settings_on_main) && old_names.is_empty() {
        None
    } else if current(&clone.settings_here) {
        Some(format!(
            "merge {file} into main, for example with `{LAND_COMMAND}`; this clone's copy \
             already holds bay's entries"
        ))
    } else {
        Some(format!(
            "run `bay install` here, then merge {file} into main, for example with \
             `{LAND_COMMAND}`"
        ))
    };
    let row = match fix {
        None => Row::green("hooks", Some("on".into())),
        Some(fix) => {
            Row::red("hooks", true, ReasonCode::HooksMissing, fix).found(Some("missing".into()))
        }
    };
    row.with(RowFacts::Hooks(Hooks {
        product: *product,
        file,
        old_names,
        turned_off_by: switched,
    }))
}

/// The `skill` row: every Claude config directory holds this bay's skill.
fn skill_row(skills: &[(String, Option<Vec<u8>>)]) -> Row {
    let states: Vec<(&str, SkillState)> = skills
        .iter()
        .map(|(dir, bytes)| (dir.as_str(), skill::compare(bytes.as_deref())))
        .collect();
    let dirs: Vec<SkillDir> = states
        .iter()
        .map(|(dir, state)| SkillDir {
            dir: (*dir).to_owned(),
            state: *state,
        })
        .collect();
    let mismatched: Vec<String> = states
        .iter()
        .filter(|(_, state)| *state != SkillState::Matches)
        .map(|(dir, _)| (*dir).to_owned())
        .collect();
    let row = if mismatched.is_empty() {
        Row::green("skill", None)
    } else {
        Row::red(
            "skill",
            true,
            ReasonCode::SkillMismatch,
            "run `bay install` to copy this bay's skill into each directory".into(),
        )
    };
    row.with(RowFacts::Skill { mismatched, dirs })
}

/// The `remote` row: the remote answered.
fn remote_row(clone: &CloneFacts) -> Row {
    match &clone.reached {
        Ok(()) => Row::green("remote", Some(clone.remote.clone())),
        Err(why) => Row::red(
            "remote",
            true,
            ReasonCode::RemoteUnreachable,
            format!(
                "check the network and this machine's access to {}, then run `bay doctor` again",
                clone.remote
            ),
        )
        .found(Some(clone.remote.clone()))
        .with(RowFacts::Why { why: why.clone() }),
    }
}

/// The `check-env` row of a runner: every variable a check names is set here.
fn check_env_row(clone: &CloneFacts) -> Row {
    let variables = match &clone.variables {
        Ok(variables) => variables,
        Err(why) => {
            return Row {
                state: State::Advice {
                    code: None,
                    fix: Some("mend .bay/policy.toml on main; until then no check runs".into()),
                },
                required: false,
                ..Row::green("check-env", None)
            }
            .with(RowFacts::Why { why: why.clone() });
        }
    };
    let unset: Vec<Unset> = variables
        .iter()
        .filter(|(_, set)| !set)
        .map(|(v, _)| Unset {
            check: v.check.clone(),
            environment: v.environment.clone(),
            variable: v.name.clone(),
        })
        .collect();
    if unset.is_empty() {
        return Row::green("check-env", Some(format!("{} set", variables.len())));
    }
    let mut names: Vec<String> = unset.iter().map(|u| u.variable.clone()).collect();
    names.sort_unstable();
    names.dedup();
    Row::red(
        "check-env",
        true,
        ReasonCode::CheckEnvUnset,
        format!(
            "set {} in the runner's environment, then start it again",
            names.join(", ")
        ),
    )
    .with(RowFacts::Unset {
        variables: names,
        unset,
    })
}

/// The `store` row: advice on the commit-graph, which makes reading history fast; never red.
fn store_row(clone: &CloneFacts) -> Row {
    let on_fetch = clone
        .graph_on_fetch
        .as_deref()
        .and_then(crate::install::git_bool)
        .unwrap_or(false);
    if clone.graph_filters && on_fetch {
        return Row::green(
            "store",
            Some("commit-graph with changed-path filters".into()),
        );
    }
    Row {
        state: State::Advice {
            code: None,
            fix: Some("run `bay install` here: it writes the commit-graph and its settings".into()),
        },
        required: false,
        ..Row::green("store", None)
    }
    .with(RowFacts::Store {
        changed_path_filters: clone.graph_filters,
        written_on_fetch: on_fetch,
    })
}

/// Every row for `facts`, in the order doctor prints them.
pub fn rows(facts: &Facts) -> Vec<Row> {
    let mut rows = vec![
        Row::green("bay", Some(facts.bay_version.clone())),
        git_row(facts.git.as_deref()),
    ];
    if let Some(clone) = &facts.clone {
        rows.push(product_row(clone.product.as_ref()));
    }
    rows.push(sandbox_row(facts.role, &facts.sandbox));
    if let Some(clone) = &facts.clone {
        rows.push(hooks_row(clone));
    }
    rows.push(skill_row(&facts.skills));
    if let Some(clone) = &facts.clone {
        rows.push(remote_row(clone));
        if facts.role == Role::Executor {
            rows.push(check_env_row(clone));
        }
        rows.push(store_row(clone));
        rows.push(signing_row(clone));
    }
    rows.push(custody::custody_row(&facts.custody));
    rows
}

/// The `signing` row: what the key registry signs here. Never red: without a registry bay
/// runs unsigned, which is a choice, not a fault.
fn signing_row(clone: &CloneFacts) -> Row {
    let (found, state) = match (clone.registry, &clone.signing) {
        (Some(false), _) => (
            "unsigned: the remote holds no key registry".to_owned(),
            State::Off,
        ),
        (None, _) => (
            "not known: the remote did not answer".to_owned(),
            State::Advice {
                code: None,
                fix: None,
            },
        ),
        (Some(true), Ok(mode)) => (mode.as_str().to_owned(), State::Green),
        (Some(true), Err(_)) => (
            "all: the policy on main cannot be read, so the default".to_owned(),
            State::Green,
        ),
    };
    let mode = match &clone.signing {
        Ok(mode) => Mode::Read { mode: *mode },
        Err(why) => Mode::Unread {
            policy: why.clone(),
        },
    };
    Row {
        state,
        ..Row::green("signing", Some(found))
    }
    .with(RowFacts::Signing {
        mode,
        registry: clone.registry,
    })
}

/// Doctor's `detail`: the role, the versions the status line shows, the red rows' names and
/// every row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub role: Role,
    pub versions: Vec<Version>,
    pub red: Vec<&'static str>,
    pub rows: Vec<Row>,
}

/// A version doctor found, as the status line names it (`git 2.47.3`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Version {
    pub tool: &'static str,
    pub version: String,
}

impl Detail for Report {}

impl Report {
    fn of(role: Role, rows: Vec<Row>) -> Report {
        let versions = rows
            .iter()
            .filter(|row| matches!(row.name, "bay" | "git" | "agent"))
            .filter_map(|row| {
                Some(Version {
                    tool: row.facts.tool().unwrap_or(row.name),
                    version: row.found.clone()?,
                })
            })
            .collect();
        Report {
            role,
            versions,
            red: rows.iter().filter(|r| r.is_red()).map(|r| r.name).collect(),
            rows,
        }
    }
}

/// Doctor's result: `ok` when no required row is red, else `blocked` with the first red row's
/// code, its facts beside the [`Report`].
pub fn judge(facts: &Facts) -> BayResult {
    let report = Report::of(facts.role, rows(facts));
    report
        .rows
        .iter()
        .find_map(|row| row.refusal(Some(&report)))
        .unwrap_or_else(|| BayResult::ok(None, report.to_map()))
}

/// Why `bay runner run` must not start on this machine, if it must not: the `git` and
/// `sandbox` rows of a runner, the same doctor shows, the first red one as a refusal.
pub fn runner_refusal(git: Option<&str>, sandbox: &SandboxFact) -> Option<BayResult> {
    [git_row(git), sandbox_row(Role::Executor, sandbox)]
        .iter()
        .find_map(|row| row.refusal(None))
}

/// Why this machine cannot run checks (`SANDBOX_ABSENT`), if it cannot: the `sandbox` row of
/// a runner, the same doctor shows, as a refusal. `bay merge --wait` runs the checks itself,
/// so it hands this to its machine, which refuses with it before it writes anything, when
/// the policy has checks to run ([`crate::machine::merge_wait::MergeWait::without_sandbox`]).
pub fn sandbox_refusal(sandbox: &SandboxFact) -> Option<BayResult> {
    sandbox_row(Role::Executor, sandbox).refusal(None)
}

pub mod custody;
pub mod row;

#[cfg(test)]
mod tests;
