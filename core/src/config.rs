//! `.bay/config.toml`: the repository's settings for plugins, the runner's timings, retention,
//! promotion targets, holds and lanes.
//!
//! bay reads the file only from main, so a change never sets the rules it runs under. An
//! unknown key is refused, naming the key, its table and its line.
//!
//! bay acts on the keys `docs/keys.md` marks so (`main`, `remote`, `[trailers]`, the hold and
//! notify plugins, most `[runner]` timings, `[red]`, `[retention]`, holds of main). Every other
//! key the specification defines is checked here as fully as those, so a wrong value gets
//! its own error, and then refused by name (see [`NotYet`]) until bay acts on it: a hold that
//! does not hold, or a lane whose changes merge, would be worse than a clear refusal. `[runner]
//! sandbox` is refused for good.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::adapter::Product;
use crate::git::refs;
use crate::time::Timestamp;
use crate::toml_doc::{Document, Located, NotYet, Table, TomlError, show_value};

/// The parts of the config that bay acts on, with every default filled in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// The branch bay serves; it must match the clone's own setting, so bay never follows it.
    pub main: Option<String>,
    /// The remote bay serves; it must match the clone's own setting.
    pub remote: Option<String>,
    pub trailers: Trailers,
    pub runner: RunnerSettings,
    /// `[policy] evidence_reuse = "exact-inputs"`: a pass recorded on exactly these inputs is
    /// reused instead of run again (when the policy allows unsigned reuse).
    pub evidence_reuse: bool,
    /// `[[hold]]` tables without a `target`: windows in which main takes only fixes and undos.
    pub holds: Vec<Hold>,
    /// `[red] window`, when set: how many first-parent main commits a red judgement reads.
    pub red_window: Option<u32>,
    /// `[retention] window_s`: how long an ended change keeps its clean view.
    pub retention_window_s: u64,
    /// `[retention] ref_budget`: the bay refs the remote may hold. Runners compact merged
    /// changes long before it (see [`crate::compact::COMPACT_AT`]); a budget below that
    /// compacts sooner.
    #[serde(default = "default_ref_budget")]
    pub ref_budget: u64,
    /// `[plugin.hold]` with a `command`: a program that says whether main is held now.
    pub hold_plugin: Option<PluginCommand>,
    /// `[plugin.notify]` with a `command`: a program the runner hands each event it writes.
    pub notify_plugin: Option<PluginCommand>,
    /// `[agent]`: the agent product whose hooks bay installs; `None` for no agent hooks.
    #[serde(default)]
    pub agent: Option<Agent>,
    /// `[hooks]`: what `bay hook` allows a session.
    #[serde(default)]
    pub hooks: HookSettings,
    /// `[policy] profile`: the `[profile.<name>]` of the policy `bay status` judges
    /// completion by; `None` for `default`.
    #[serde(default)]
    pub profile: Option<String>,
}

/// The `[hooks]` table: how much a session hears, and how often its work is checkpointed.
/// `cache_max_age_s` is checked and then refused by name: it bounds the age of the
/// coordination cache behind named inputs, which bay does not have yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookSettings {
    /// `notice_budget_bytes`: the notice bytes one session gets per hour.
    pub notice_budget_bytes: u64,
    /// `checkpoint_idle_s`: how long after its last checkpoint a session's next hook event
    /// saves a draft checkpoint.
    pub checkpoint_idle_s: u64,
}

/// `[hooks] notice_budget_bytes` when the config leaves it out.
pub const NOTICE_BUDGET_BYTES: u64 = 2048;

/// `[hooks] checkpoint_idle_s` when the config leaves it out.
pub const CHECKPOINT_IDLE_S: u64 = 600;

impl Default for HookSettings {
    fn default() -> HookSettings {
        HookSettings {
            notice_budget_bytes: NOTICE_BUDGET_BYTES,
            checkpoint_idle_s: CHECKPOINT_IDLE_S,
        }
    }
}

/// The `[agent]` table: which agent product's hooks the project runs, and the instruction
/// files bay compares with main when a session starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub product: Product,
    /// Paths in the repository; `AGENTS.md` and `CLAUDE.md` unless the table names others.
    pub instructions: Vec<String>,
}

/// The instruction files of an `[agent]` table that names none.
pub const DEFAULT_INSTRUCTIONS: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

impl Config {
    /// The instruction files a session start compares with main: the `[agent]` table's, or
    /// the default ones without a table.
    pub fn instructions(&self) -> Vec<String> {
        match &self.agent {
            Some(agent) => agent.instructions.clone(),
            None => DEFAULT_INSTRUCTIONS.map(str::to_owned).to_vec(),
        }
    }
}

impl Default for Config {
    /// What an empty config says.
    fn default() -> Config {
        Config {
            main: None,
            remote: None,
            trailers: Trailers::default(),
            runner: RunnerSettings::default(),
            evidence_reuse: false,
            holds: Vec::new(),
            red_window: None,
            retention_window_s: DEFAULT_RETENTION_WINDOW_S,
            ref_budget: DEFAULT_REF_BUDGET,
            hold_plugin: None,
            notify_plugin: None,
            agent: None,
            hooks: HookSettings::default(),
            profile: None,
        }
    }
}

/// A plugin's command: bay runs `program` (a file in the repository, taken from main's tip)
/// with `args`. The hold plugin is then asked `status` and says whether main is held; the
/// notify plugin gets one `bay.event/1` on stdin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginCommand {
    /// The command's first word: a path in the repository.
    pub program: String,
    /// The command's other words.
    pub args: Vec<String>,
    /// How long the program may run before it is killed: then main counts as held, or the
    /// notice as lost.
    pub timeout_s: u64,
}

/// `[plugin.hold] timeout_s` when the config leaves it out.
pub const HOLD_PLUGIN_TIMEOUT_S: u64 = 10;

/// `[plugin.notify] timeout_s` when the config leaves it out.
pub const NOTIFY_PLUGIN_TIMEOUT_S: u64 = 5;

/// Where main keeps its config.
pub const CONFIG_PATH: &str = ".bay/config.toml";

/// One `[[hold]]` of main: until `end`, only a change that carries `Fixes:` or `Reverts:`
/// merges.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    pub end: Timestamp,
    /// `end` as the config writes it.
    pub end_text: String,
    pub reason: String,
}

impl Config {
    /// How many first-parent main commits a red judgement reads: `[red] window`, 50 unless set.
    pub fn red_window(&self) -> u32 {
        self.red_window.unwrap_or(crate::red::DEFAULT_WINDOW)
    }

    /// The hold of main in force at `now` (by the reader's own clock): the one that ends last.
    pub fn hold_at(&self, now: Timestamp) -> Option<&Hold> {
        self.holds
            .iter()
            .filter(|hold| hold.end > now)
            .max_by_key(|hold| hold.end)
    }

    /// Main's config as read at one main commit: its bytes, or `None` when there is none (no
    /// config holds nothing); text that does not parse is kept as why.
    pub fn at_main(bytes: Option<&[u8]>) -> Result<Config, String> {
        let Some(bytes) = bytes else {
            return Ok(Config::default());
        };
        // Every pass of a runner reads main's config again; where the caller remembers, the
        // same bytes are parsed once.
        crate::memo::recall(&[bytes], || {
            let text =
                std::str::from_utf8(bytes).map_err(|e| format!("{CONFIG_PATH} at main: {e}"))?;
            Config::parse(text).map_err(|e| format!("{CONFIG_PATH} at main: {e}"))
        })
    }
}

/// What holds main for a change, as `detail.hold` names it, by its `source`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "lowercase")]
pub enum MainHold {
    /// A `[[hold]]` window in force, with its `end` as the config writes it.
    Window { reason: String, end: String },
    /// Main's config cannot be read, which holds main.
    Config { reason: String },
    /// The hold plugin answered "held"; it names no end (`end` is `null`).
    Plugin { reason: String, end: Option<String> },
}

impl MainHold {
    /// A hold the plugin says is on, for `reason`: a plugin's hold has no end bay knows.
    pub fn plugin(reason: &str) -> MainHold {
        MainHold::Plugin {
            reason: reason.to_owned(),
            end: None,
        }
    }
}

/// Written as its JSON, as a release's `why` quotes it.
impl std::fmt::Display for MainHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let json = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&json)
    }
}

/// The `detail` of `MAIN_HELD`: what holds main.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Held {
    pub hold: MainHold,
}

impl crate::detail::Detail for Held {}

/// What holds main for a change read against main's config (`Config::at_main`) at `now`: the
/// hold window in force, or a config that cannot be read, unless the change fixes or undoes
/// another; `None` when nothing holds it.
pub fn hold_on(
    config: &Result<Config, String>,
    now: Timestamp,
    fixes_or_reverts: bool,
) -> Option<MainHold> {
    if fixes_or_reverts {
        return None;
    }
    match config {
        Ok(config) => config.hold_at(now).map(|hold| MainHold::Window {
            reason: hold.reason.clone(),
            end: hold.end_text.clone(),
        }),
        Err(why) => Some(MainHold::Config {
            reason: why.clone(),
        }),
    }
}

/// The repository's own trailer keys for Intent and Actor. The other bay trailers have fixed
/// names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trailers {
    pub intent: String,
    pub actor: String,
}

impl Default for Trailers {
    fn default() -> Self {
        Trailers {
            intent: "Intent".to_owned(),
            actor: "Actor".to_owned(),
        }
    }
}

/// The runner's timings and limits, in seconds unless named otherwise.
///
/// The parser refuses the keys bay does not act on yet, so their fields hold the defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunnerSettings {
    /// An external runner; without it, `bay runner run` serves the queue.
    pub command: Option<String>,
    /// How long the runner's `submit` may take before the submission times out.
    pub submission_timeout_s: u64,
    /// The time budget for a candidate's checks; without it only each check's limit applies.
    pub execution_budget_s: Option<u64>,
    /// An owner whose chain does not move for this long may be replaced.
    pub lease_s: u64,
    /// How often an owner renews its lease; always less than `lease_s`.
    pub heartbeat_s: u64,
    /// How long a change stays idle before another agent may adopt it; more than `lease_s`.
    pub takeover_s: u64,
    /// Time added to the execution budget for the head of the queue.
    pub publish_window_s: u64,
    /// How many of a candidate's checks one runner runs at once, 1 to 16.
    pub parallel_checks: u32,
    /// Whether a runner narrows a red post check's suspect range to one merge by running the
    /// check on its midpoints (`bisect_post`).
    pub bisect_post: bool,
    /// How many queued entries behind the head a runner that does not hold the head checks
    /// early, on the base the entries ahead of each predict (`ahead`, 0 to 16).
    #[serde(default)]
    pub ahead: u32,
    /// Whether a runner checks a queued entry beside the head when their footprints are
    /// disjoint, and carries `footprint = true` records (`footprint_lanes`).
    #[serde(default)]
    pub footprint_lanes: bool,
    /// How the head's runner checks the head and the entries behind it as one tree (`batch`);
    /// absent, it never does.
    #[serde(default)]
    pub batch: Option<BatchSettings>,
}

/// `[runner] batch = { min, max, max_failure_rate }`, as a runner acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchSettings {
    /// The fewest members a batch forms with: `min`, and never fewer than two.
    pub min: u32,
    /// The most members a batch takes, 2 to 64.
    pub max: u32,
    /// `max_failure_rate` in millionths: no batch forms while the failure rate over the last
    /// 20 check outcomes is above it.
    pub max_failure_ppm: u32,
}

impl Default for RunnerSettings {
    fn default() -> Self {
        RunnerSettings {
            command: None,
            submission_timeout_s: 30,
            execution_budget_s: None,
            lease_s: DEFAULT_LEASE_S,
            heartbeat_s: 10,
            takeover_s: 2 * DEFAULT_LEASE_S,
            publish_window_s: 60,
            parallel_checks: 1,
            bisect_post: false,
            ahead: 0,
            footprint_lanes: false,
            batch: None,
        }
    }
}

impl RunnerSettings {
    /// The head's progress deadline in seconds: the execution budget (30 minutes when unset)
    /// plus the publish window. Work on one operation past it gives the claim back.
    pub fn progress_s(&self) -> u64 {
        self.execution_budget_s
            .unwrap_or(DEFAULT_BUDGET_S)
            .saturating_add(self.publish_window_s)
    }
}

/// What the queue deadline assumes when `[runner] execution_budget_s` is unset.
const DEFAULT_BUDGET_S: u64 = 1800;

/// Why a config was refused. Every bay command then fails with exit 20 and shows this, so it
/// names the key, its table and its line whenever one is at fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigError(pub TomlError);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ConfigError {}

impl From<TomlError> for ConfigError {
    fn from(error: TomlError) -> Self {
        ConfigError(error)
    }
}

const DEFAULT_LEASE_S: u64 = 60;
const DEFAULT_RETENTION_WINDOW_S: u64 = 604_800;
const DEFAULT_REF_BUDGET: u64 = 100_000;

fn default_ref_budget() -> u64 {
    DEFAULT_REF_BUDGET
}
const ANY: u64 = u64::MAX;

const TOP_KEYS: &[&str] = &[
    "main",
    "remote",
    "trailers",
    "plugin",
    "policy",
    "hooks",
    "view",
    "red",
    "agent",
    "runner",
    "retention",
    "target",
    "hold",
    "lane",
];

const HOOK_KEYS: [&str; 3] = [
    "notice_budget_bytes",
    "cache_max_age_s",
    "checkpoint_idle_s",
];

/// Each plugin with the range of its `timeout_s`, in seconds.
/// The plugins bay runs; the others are checked, then refused by name.
const ACTED_ON_PLUGINS: [&str; 2] = ["hold", "notify"];

const PLUGINS: &[(&str, u64, u64)] = &[
    ("notify", 1, ANY),
    ("wake", 1, ANY),
    ("runtime", 1, ANY),
    ("hold", 1, 120),
    ("prune", 1, 600),
];

const RUNNER_KEYS: &[&str] = &[
    "command",
    "submission_timeout_s",
    "execution_budget_s",
    "lease_s",
    "heartbeat_s",
    "takeover_s",
    "publish_window_s",
    "bisect_post",
    "ahead",
    "footprint_lanes",
    "batch",
    "parallel_checks",
    "sandbox",
];

/// The `[runner]` keys bay acts on; it refuses the others until it acts on them too.
const RUNNER_ACTED_ON: [&str; 10] = [
    "ahead",
    "footprint_lanes",
    "batch",
    "lease_s",
    "takeover_s",
    "bisect_post",
    "heartbeat_s",
    "execution_budget_s",
    "publish_window_s",
    "parallel_checks",
];

/// The `[runner]` keys that check entries early or together. They rest on evidence reuse.
const THROUGHPUT_KEYS: [&str; 3] = ["ahead", "footprint_lanes", "batch"];

impl Config {
    /// Parses and validates the text of `.bay/config.toml`.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        Ok(parse(text)?)
    }
}

fn parse(text: &str) -> Result<Config, TomlError> {
    let doc = Document::parse(text)?;
    let mut root = doc.root();
    root.check_keys(TOP_KEYS, &[])?;
    let mut later = NotYet::default();

    let main = optional_text(&mut root, "main")?;
    if let Some(name) = &main
        && let Some(problem) = ref_problem(&refs::main(name), false)
    {
        return Err(root.error(
            "main",
            format!(
                "is {}, which is not a branch name Git accepts: it {problem}",
                show_value(name)
            ),
        ));
    }
    let remote = optional_text(&mut root, "remote")?;
    if let Some(name) = &remote
        && name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(root.error(
            "remote",
            "holds a space or a control character; name the remote as Git does",
        ));
    }

    let trailers = match root.table("trailers")? {
        Some(mut table) => parse_trailers(&mut table)?,
        None => Trailers::default(),
    };
    let (mut hold_plugin, mut notify_plugin) = (None, None);
    if let Some(mut table) = root.table("plugin")? {
        (hold_plugin, notify_plugin) = parse_plugins(&mut table)?;
        // The hold and notify plugins are acted on; every other plugin is refused until bay
        // runs it.
        if table.keys().is_empty() {
            later.key(&root, "plugin");
        }
        for (name, _, _) in PLUGINS
            .iter()
            .filter(|(name, _, _)| !ACTED_ON_PLUGINS.contains(name))
        {
            later.key(&table, name);
        }
    }
    let (reuse, reuse_off_line, profile) = match root.table("policy")? {
        Some(mut table) => parse_policy(&mut table)?,
        None => (false, None, None),
    };
    let hooks = match root.table("hooks")? {
        Some(mut table) => {
            table.check_keys(&HOOK_KEYS, &[])?;
            let budget = table.uint("notice_budget_bytes", 0..=ANY)?;
            table.uint("cache_max_age_s", 0..=ANY)?;
            let idle = table.uint("checkpoint_idle_s", 0..=ANY)?;
            table.finish()?;
            later.key(&table, "cache_max_age_s");
            HookSettings {
                notice_budget_bytes: budget.unwrap_or(NOTICE_BUDGET_BYTES),
                checkpoint_idle_s: idle.unwrap_or(CHECKPOINT_IDLE_S),
            }
        }
        None => HookSettings::default(),
    };
    if let Some(mut table) = root.table("view")? {
        table.check_keys(&["warm_history"], &[])?;
        table.bool("warm_history")?;
        table.finish()?;
        later.key(&root, "view");
    }
    let red_window = match root.table("red")? {
        Some(mut table) => {
            table.check_keys(&["window"], &[])?;
            let window = table.uint("window", 1..=10_000)?;
            table.finish()?;
            window.and_then(|w| u32::try_from(w).ok())
        }
        None => None,
    };
    let agent = match root.table("agent")? {
        Some(mut table) => Some(parse_agent(&mut table)?),
        None => None,
    };
    let runner = match root.table("runner")? {
        Some(mut table) => parse_runner(&mut table, reuse_off_line, &mut later)?,
        None => RunnerSettings::default(),
    };
    let retention_window = match root.table("retention")? {
        Some(mut table) => parse_retention(&mut table)?,
        None => RetentionWindow {
            seconds: DEFAULT_RETENTION_WINDOW_S,
            line: None,
            ref_budget: DEFAULT_REF_BUDGET,
        },
    };
    let mut targets = root.tables("target")?;
    let target_names = parse_targets(&mut targets, main.as_deref())?;
    let mut holds = Vec::new();
    for hold in &mut root.tables("hold")? {
        holds.extend(parse_hold(hold, &target_names)?);
    }
    let mut lane_names = BTreeMap::new();
    for lane in &mut root.tables("lane")? {
        parse_lane(lane, &retention_window, main.as_deref(), &mut lane_names)?;
    }
    for key in ["target", "lane"] {
        later.key(&root, key);
    }
    root.finish()?;
    later.finish()?;

    let throughput = runner.ahead > 0 || runner.footprint_lanes || runner.batch.is_some();
    Ok(Config {
        main,
        remote,
        trailers,
        runner,
        // A throughput key turns exact-inputs reuse on by itself; "off" beside one was
        // refused above.
        evidence_reuse: reuse || throughput,
        holds,
        red_window,
        retention_window_s: retention_window.seconds,
        ref_budget: retention_window.ref_budget,
        hold_plugin,
        notify_plugin,
        agent,
        hooks,
        profile,
    })
}

/// An optional string that, when present, must say something.
fn optional_text(table: &mut Table<'_, '_>, key: &str) -> Result<Option<String>, TomlError> {
    match table.string(key)? {
        Some(value) if value.is_empty() => {
            Err(table.error(key, "is empty; leave the key out to use the default"))
        }
        value => Ok(value),
    }
}

fn required_text(table: &mut Table<'_, '_>, key: &str) -> Result<String, TomlError> {
    let value = table.required_string(key)?;
    if value.is_empty() {
        return Err(table.error(key, "is empty; it must name something"));
    }
    Ok(value)
}

fn parse_trailers(table: &mut Table<'_, '_>) -> Result<Trailers, TomlError> {
    table.check_keys(&["intent", "actor"], &[])?;
    let defaults = Trailers::default();
    let mut keys = Vec::new();
    for key in ["intent", "actor"] {
        let value = optional_text(table, key)?;
        if let Some(value) = &value
            && !value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(table.error(
                key,
                format!(
                    "is {}, which is not a trailer key; Git trailer keys hold only letters, \
                     digits and `-`",
                    show_value(value)
                ),
            ));
        }
        if let Some(value) = &value
            && crate::lineage::is_own_trailer(value)
        {
            return Err(table.error(
                key,
                format!(
                    "is {}, a trailer bay writes on its merges itself; bay would misread its \
                     own merges, so give {key} a key of your own",
                    show_value(value)
                ),
            ));
        }
        keys.push(value);
    }
    table.finish()?;
    let mut keys = keys.into_iter();
    let intent = keys.next().flatten().unwrap_or(defaults.intent);
    let actor = keys.next().flatten().unwrap_or(defaults.actor);
    // Git compares trailer keys without regard to case, so these would read as one trailer.
    if intent.eq_ignore_ascii_case(&actor) {
        let key = if table.has("actor") {
            "actor"
        } else {
            "intent"
        };
        return Err(table.error(
            key,
            format!(
                "makes Intent and Actor both the trailer {}; bay could not tell them apart",
                show_value(&intent)
            ),
        ));
    }
    Ok(Trailers { intent, actor })
}

/// `[plugin]`: every plugin table is checked; only `[plugin.hold]` is returned, as the one
/// bay runs.
/// The hold plugin and the notify plugin, each when its table names a command.
type ActedOn = (Option<PluginCommand>, Option<PluginCommand>);

fn parse_plugins(table: &mut Table<'_, '_>) -> Result<ActedOn, TomlError> {
    let names: Vec<&str> = PLUGINS.iter().map(|(name, _, _)| *name).collect();
    table.check_keys(&names, &[])?;
    let (mut hold, mut notify) = (None, None);
    for (name, low, high) in PLUGINS {
        let Some(mut plugin) = table.table(name)? else {
            continue;
        };
        plugin.check_keys(&["command", "timeout_s"], &[])?;
        let command = optional_text(&mut plugin, "command")?;
        let timeout_s = plugin.uint("timeout_s", *low..=*high)?;
        if ACTED_ON_PLUGINS.contains(name)
            && let Some(command) = command
        {
            let mut words = command.split_whitespace().map(str::to_owned);
            let program = words.next().unwrap_or_default();
            if let Some(problem) = crate::paths::repo_path_problem(&program) {
                return Err(plugin.error(
                    "command",
                    format!(
                        "names the program {}, which {problem}; its first word is a path in \
                         the repository, run from main's tip",
                        show_value(&program)
                    ),
                ));
            }
            let (slot, default_timeout_s) = match *name {
                "hold" => (&mut hold, HOLD_PLUGIN_TIMEOUT_S),
                _ => (&mut notify, NOTIFY_PLUGIN_TIMEOUT_S),
            };
            *slot = Some(PluginCommand {
                program,
                args: words.collect(),
                timeout_s: timeout_s.unwrap_or(default_timeout_s),
            });
        }
        plugin.finish()?;
    }
    table.finish()?;
    Ok((hold, notify))
}

/// `[policy]` of the config: whether evidence is reused (`evidence_reuse = "exact-inputs"`),
/// the line of `evidence_reuse = "off"`, when the config turns reuse off, and the completion
/// `profile` `bay status` judges by. A profile the policy lacks is no error here: the policy
/// is another file, and `bay status` says `unknown` for it.
fn parse_policy(
    table: &mut Table<'_, '_>,
) -> Result<(bool, Option<u32>, Option<String>), TomlError> {
    table.check_keys(&["profile", "evidence_reuse"], &[])?;
    let profile = optional_text(table, "profile")?;
    let reuse = table.string("evidence_reuse")?;
    table.finish()?;
    match reuse.as_deref() {
        None => Ok((false, None, profile)),
        Some("exact-inputs") => Ok((true, None, profile)),
        Some("off") => Ok((false, Some(table.line_of("evidence_reuse")), profile)),
        Some(other) => Err(table.error(
            "evidence_reuse",
            format!(
                "is {}; it must be \"exact-inputs\" or \"off\"",
                show_value(other)
            ),
        )),
    }
}

fn parse_agent(table: &mut Table<'_, '_>) -> Result<Agent, TomlError> {
    table.check_keys(&["product", "instructions"], &[])?;
    // The table's presence turns agent hooks on, so it must say for which product.
    let name = table.required_string("product")?;
    let Ok(product) = name.parse::<Product>() else {
        return Err(table.error(
            "product",
            format!(
                "is {}; it must be \"claude\" or \"codex\", or leave [agent] out to use no \
                 agent hooks",
                show_value(&name)
            ),
        ));
    };
    let instructions = match table.strings("instructions")? {
        Some(files) => {
            for file in &files {
                if let Some(problem) = crate::paths::repo_path_problem(&file.value) {
                    return Err(table.error_at(
                        "instructions",
                        file.line,
                        format!("names {}, which {problem}", show_value(&file.value)),
                    ));
                }
            }
            files.into_iter().map(|file| file.value).collect()
        }
        None => DEFAULT_INSTRUCTIONS.map(str::to_owned).to_vec(),
    };
    table.finish()?;
    Ok(Agent {
        product,
        instructions,
    })
}

fn parse_runner(
    table: &mut Table<'_, '_>,
    reuse_off_line: Option<u32>,
    later: &mut NotYet,
) -> Result<RunnerSettings, TomlError> {
    table.check_keys(RUNNER_KEYS, &[])?;
    if table.has("sandbox") {
        return Err(table.error(
            "sandbox",
            "is not allowed: a repository can never turn off the check sandbox; only a machine \
             can, with `git config --global bay.executorSandbox none`",
        ));
    }
    if let Some(off_line) = reuse_off_line
        && let Some(key) = THROUGHPUT_KEYS.iter().find(|key| table.has(key))
    {
        return Err(table.error(
            key,
            format!(
                "cannot be set while [policy] evidence_reuse is \"off\" (line {off_line}): it \
                 checks entries early or together, which works only by reusing evidence"
            ),
        ));
    }

    // The lease, the heartbeat and the head's progress deadline are read into the settings;
    // every other key is checked and then refused below, until bay acts on it.
    let defaults = RunnerSettings::default();
    optional_text(table, "command")?;
    table.uint("submission_timeout_s", 1..=ANY)?;
    let execution_budget_s = table.uint("execution_budget_s", 1..=ANY)?;
    let lease_s = table.uint("lease_s", 1..=ANY)?.unwrap_or(defaults.lease_s);
    let heartbeat_s = table
        .uint("heartbeat_s", 1..=ANY)?
        .unwrap_or(defaults.heartbeat_s);
    let takeover_s = table
        .uint("takeover_s", 1..=ANY)?
        .unwrap_or(lease_s.saturating_mul(2));
    let publish_window_s = table
        .uint("publish_window_s", 0..=ANY)?
        .unwrap_or(defaults.publish_window_s);
    let bisect_post = table.bool("bisect_post")?.unwrap_or(defaults.bisect_post);
    let ahead = table.uint("ahead", 0..=16)?.map_or(0, |n| n as u32);
    let footprint_lanes = table.bool("footprint_lanes")?.unwrap_or(false);
    let batch = match table.table("batch")? {
        Some(mut batch) => Some(parse_batch(&mut batch)?),
        None => None,
    };
    let parallel_checks = table
        .uint("parallel_checks", 1..=16)?
        .map_or(defaults.parallel_checks, |n| n as u32);
    table.finish()?;

    if heartbeat_s >= lease_s {
        let key = if table.has("heartbeat_s") {
            "heartbeat_s"
        } else {
            "lease_s"
        };
        return Err(table.error(
            key,
            format!(
                "makes heartbeat_s ({heartbeat_s}) not less than lease_s ({lease_s}): a lease \
                 that expires before its first renewal lets another runner take over every claim"
            ),
        ));
    }
    if takeover_s <= lease_s {
        return Err(table.error(
            "takeover_s",
            format!(
                "is {takeover_s}, which must be more than lease_s ({lease_s}): a change must \
                 outlast its owner's lease before another agent adopts it"
            ),
        ));
    }

    for key in RUNNER_KEYS {
        if !RUNNER_ACTED_ON.contains(key) {
            later.key(table, key);
        }
    }
    Ok(RunnerSettings {
        lease_s,
        heartbeat_s,
        takeover_s,
        execution_budget_s,
        publish_window_s,
        parallel_checks,
        bisect_post,
        ahead,
        footprint_lanes,
        batch,
        ..defaults
    })
}

fn parse_batch(table: &mut Table<'_, '_>) -> Result<BatchSettings, TomlError> {
    table.check_keys(&["min", "max", "max_failure_rate"], &[])?;
    // A batch has two members or more and at most 64, so `max` below 2 could never form one.
    let min = table.uint("min", 1..=64)?.unwrap_or(1);
    let max = table.uint("max", 2..=64)?.unwrap_or(8);
    let rate = table.number("max_failure_rate", 0.0..=1.0)?.unwrap_or(0.3);
    table.finish()?;
    if min > max {
        let key = if table.has("min") { "min" } else { "max" };
        return Err(table.error(key, format!("makes min ({min}) more than max ({max})")));
    }
    Ok(BatchSettings {
        // Never fewer than two, whatever `min` says: one member is no batch.
        min: (min as u32).max(2),
        max: max as u32,
        // In millionths, so that the settings compare exactly; 0 to 1 in, 0 to 10^6 out.
        max_failure_ppm: (rate * 1_000_000.0).round() as u32,
    })
}

struct RetentionWindow {
    seconds: u64,
    /// Where the config sets it; `None` when it is the default.
    line: Option<u32>,
    ref_budget: u64,
}

fn parse_retention(table: &mut Table<'_, '_>) -> Result<RetentionWindow, TomlError> {
    table.check_keys(&["window_s", "ref_budget"], &[])?;
    let window = table.uint("window_s", 1..=ANY)?;
    let ref_budget = table.uint("ref_budget", 1..=ANY)?;
    table.finish()?;
    Ok(RetentionWindow {
        seconds: window.unwrap_or(DEFAULT_RETENTION_WINDOW_S),
        line: window.map(|_| table.line_of("window_s")),
        ref_budget: ref_budget.unwrap_or(DEFAULT_REF_BUDGET),
    })
}

/// One `[[target]]` as far as the cross-target rules need it.
struct Target {
    name: String,
    from: String,
}

/// Parses the targets and returns their names.
fn parse_targets(
    tables: &mut [Table<'_, '_>],
    main: Option<&str>,
) -> Result<BTreeSet<String>, TomlError> {
    let main_ref = main.map(refs::main);
    let mut targets = Vec::with_capacity(tables.len());
    let mut by_name: BTreeMap<String, String> = BTreeMap::new();
    let mut by_ref: BTreeMap<String, String> = BTreeMap::new();
    for table in tables.iter_mut() {
        table.check_keys(
            &["name", "ref", "from", "requires", "soak_s", "advance"],
            &[],
        )?;
        let name = required_text(table, "name")?;
        if name == "main" || Some(name.as_str()) == main {
            return Err(table.error(
                "name",
                format!(
                    "is {}, the name `from` uses for main itself; give the target another name",
                    show_value(&name)
                ),
            ));
        }
        let written_ref = optional_text(table, "ref")?;
        let ref_key = if written_ref.is_some() { "ref" } else { "name" };
        let target_ref = written_ref.unwrap_or_else(|| refs::main(&name));
        if let Some(problem) = ref_problem(&target_ref, false) {
            return Err(table.error(
                ref_key,
                format!(
                    "gives the target the ref {}, which {problem}",
                    show_value(&target_ref)
                ),
            ));
        }
        if is_bay_ref(&target_ref) || Some(&target_ref) == main_ref.as_ref() {
            return Err(table.error(
                ref_key,
                format!(
                    "gives the target the ref {}, which is main's or one of bay's own; bay never \
                     promotes onto those",
                    show_value(&target_ref)
                ),
            ));
        }
        let from = optional_text(table, "from")?.unwrap_or_else(|| "main".to_owned());
        let requires = table.strings("requires")?.unwrap_or_default();
        if let Some(empty) = requires.iter().find(|id| id.value.is_empty()) {
            return Err(table.error_at("requires", empty.line, "names an empty check id"));
        }
        table.uint("soak_s", 0..=ANY)?;
        if table.bool("advance")? == Some(true) && requires.is_empty() {
            return Err(table.error(
                "advance",
                "is true, but `requires` names no check; the runner would move the target to \
                 commits nothing has checked",
            ));
        }
        table.finish()?;

        let here = format!("{} on line {}", table.name(), table.line());
        if let Some(first) = by_name.insert(name.clone(), here.clone()) {
            return Err(table.error(
                "name",
                format!(
                    "repeats the target {}, which {first} declares",
                    show_value(&name)
                ),
            ));
        }
        if let Some(first) = by_ref.insert(target_ref.clone(), here) {
            return Err(table.error(
                ref_key,
                format!(
                    "gives the ref {}, which {first} already uses",
                    show_value(&target_ref)
                ),
            ));
        }
        targets.push(Target { name, from });
    }

    let names: BTreeSet<String> = targets.iter().map(|target| target.name.clone()).collect();
    let is_main = |from: &str| from == "main" || Some(from) == main;
    for (target, table) in targets.iter().zip(tables.iter()) {
        if !is_main(&target.from) && !names.contains(&target.from) {
            return Err(table.error(
                "from",
                format!(
                    "is {}, which is neither main nor a declared [[target]]",
                    show_value(&target.from)
                ),
            ));
        }
    }
    // Every chain of `from` must reach main; one that does not within as many steps as there
    // are targets goes round a cycle.
    let from_of: BTreeMap<&str, &str> = targets
        .iter()
        .map(|target| (target.name.as_str(), target.from.as_str()))
        .collect();
    for (target, table) in targets.iter().zip(tables.iter()) {
        let mut at = target.from.as_str();
        let mut steps = 0;
        while !is_main(at) && steps <= targets.len() {
            at = from_of.get(at).copied().unwrap_or("main");
            steps += 1;
        }
        if !is_main(at) {
            return Err(table.error(
                "from",
                format!(
                    "is {}, which leads round a cycle of targets that never reaches main",
                    show_value(&target.from)
                ),
            ));
        }
    }
    Ok(names)
}

/// One `[[hold]]`: a hold of main, or `None` for a hold of a promotion target (whose targets
/// are refused until bay has them).
fn parse_hold(
    table: &mut Table<'_, '_>,
    targets: &BTreeSet<String>,
) -> Result<Option<Hold>, TomlError> {
    table.check_keys(&["target", "end", "reason"], &[])?;
    let target = optional_text(table, "target")?;
    if let Some(target) = &target
        && !targets.contains(target)
    {
        return Err(table.error(
            "target",
            format!(
                "is {}, which no [[target]] declares; leave it out to hold main",
                show_value(target)
            ),
        ));
    }
    let end_text = table.required_string("end")?;
    let Some(end) = crate::time::parse_utc_second(&end_text) else {
        return Err(table.error(
            "end",
            format!(
                "is {}; it must be an RFC 3339 UTC time to the second, such as \
                 \"2026-12-24T00:00:00Z\"",
                show_value(&end_text)
            ),
        ));
    };
    let reason = required_text(table, "reason")?;
    table.finish()?;
    Ok(target.is_none().then_some(Hold {
        end,
        end_text,
        reason,
    }))
}

fn parse_lane(
    table: &mut Table<'_, '_>,
    retention: &RetentionWindow,
    main: Option<&str>,
    names: &mut BTreeMap<String, String>,
) -> Result<(), TomlError> {
    table.check_keys(&["name", "refs", "window_s"], &[])?;
    let name = required_text(table, "name")?;
    let well_formed = name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !well_formed {
        return Err(table.error(
            "name",
            format!(
                "is {}; a lane name is 1 to 64 of a-z, 0-9 and `-`",
                show_value(&name)
            ),
        ));
    }
    let patterns = table
        .strings("refs")?
        .ok_or_else(|| table.missing("refs"))?;
    if patterns.is_empty() {
        return Err(table.error(
            "refs",
            "is empty; a lane needs a ref pattern to hold its changes",
        ));
    }
    for pattern in &patterns {
        lane_ref(table, pattern, main)?;
    }
    if let Some(window) = table.uint("window_s", 1..=ANY)?
        && window >= retention.seconds
    {
        let whence = match retention.line {
            Some(line) => format!("[retention] window_s on line {line}"),
            None => "the default [retention] window_s".to_owned(),
        };
        return Err(table.error(
            "window_s",
            format!(
                "is {window}, which must be shorter than {whence} ({}), the longest bay \
                 keeps any closed change's view",
                retention.seconds
            ),
        ));
    }
    table.finish()?;
    let here = format!("{} on line {}", table.name(), table.line());
    if let Some(first) = names.insert(name.clone(), here) {
        return Err(table.error(
            "name",
            format!(
                "repeats the lane {}, which {first} declares",
                show_value(&name)
            ),
        ));
    }
    Ok(())
}

fn lane_ref(
    table: &Table<'_, '_>,
    pattern: &Located<String>,
    main: Option<&str>,
) -> Result<(), TomlError> {
    let text = pattern.value.as_str();
    let problem = if let Some(problem) = ref_problem(text, true) {
        Some(problem)
    } else if is_bay_ref(text) {
        Some("lies under bay's own refs".to_owned())
    } else {
        main.map(refs::main)
            .filter(|main_ref| crate::glob::ref_matches(text, main_ref))
            .map(|main_ref| format!("matches main's ref {main_ref}, and lane changes never merge"))
    };
    match problem {
        Some(problem) => Err(table.error_at(
            "refs",
            pattern.line,
            format!("has the pattern {}, which {problem}", show_value(text)),
        )),
        None => Ok(()),
    }
}

/// Whether `name` lies under the refs bay keeps its own records in.
fn is_bay_ref(name: &str) -> bool {
    refs::BAY_NAMESPACES
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Why `name` is not a full ref name under `refs/` that Git would accept, or `None` when it
/// is. With `pattern`, one `*` is allowed.
fn ref_problem(name: &str, pattern: bool) -> Option<String> {
    if !name.starts_with("refs/") {
        return Some("is not a full ref name under refs/".to_owned());
    }
    if pattern {
        crate::ref_name::pattern_problem(name)
    } else {
        crate::ref_name::problem(name)
    }
}

#[cfg(test)]
mod tests;
