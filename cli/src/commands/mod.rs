//! One file per command. Each holds the command's arguments and one `run` that returns the
//! result to print.

mod abandon;
mod approve;
mod demo;
mod doctor;
mod enrol;
mod evidence;
mod help;
mod hook;
mod install;
mod live;
mod merge;
mod plugin;
mod runner;
mod save;
mod start;
mod status;
mod undo;
mod waiting;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bay_core::actor::{self, ActorFacts};
use bay_core::config::Config;
use bay_core::doctor::custody::KeyFile;
use bay_core::git::refs;
use bay_core::id::ChangeId;
use bay_core::machine::start::Start;
use bay_core::machine::status::Status;
use bay_core::machine::{Action, ActionId, Completion, Event, FetchSpec, Machine, Refs};
use bay_core::progress::Progress;
use bay_core::result::BayResult;
use bay_core::time::Timestamp;
use bay_drivers::pump::{Driver, Execute, Stopped};
use bay_drivers::{clock, custody};
use clap::Subcommand;

use crate::context::{Context, failed};
use crate::local::Local;
use crate::{Cli, output};

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Open a change for an intent and make its view; or pick up a change by its id.
    Start(start::Args),
    /// Freeze the draft and ask for it to be merged; with --wait, merge it here.
    Merge(merge::Args),
    /// Give a change up.
    Abandon(abandon::Args),
    /// Take one merged change back out of main, with a new checked change.
    Undo(undo::Args),
    /// Merge the main checkout's edits as one change, then move the checkout to the merge.
    Save(save::Args),
    /// What a change's operation is doing, or what the queue holds.
    Status(status::Args),
    /// Drive queued operations to an outcome on this machine.
    Runner(runner::Args),
    /// Test a check command or a hold plugin as a runner runs it; it changes nothing.
    Plugin(plugin::Args),
    /// Record evidence as a producer or reviewer outside bay, or list what has none.
    Evidence(evidence::Args),
    /// Every command, flag and reason code; with --json, the whole contract.
    Help(help::Args),
    /// Put bay and its skill on this machine; in a clone, also its Git config and hook entries.
    Install(install::Args),
    /// Answer one agent hook event in the product's protocol: its JSON payload on stdin.
    Hook(hook::Args),
    /// Run bay on a throwaway remote: two agents, one runner, a real check.
    Demo(demo::Args),
    /// Check this machine and clone: Git, the agent product, the sandbox, hooks, skill, remote.
    Doctor(doctor::Args),
    /// Add one public key to the key registry, or with --remove take a name's keys out.
    Enrol(enrol::Args),
    /// The changes that wait for an approval you can give, with candidate, paths and diff.
    Waiting(waiting::Args),
    /// Sign and push your approval of the exact candidate a change waits on.
    Approve(approve::Args),
    /// Sign and push your no for the exact candidate a change waits on: it is blocked.
    Reject(approve::Args),
    /// Push this machine's live summary for the fleet map; the hook runs it in the background.
    #[command(hide = true)]
    Live(live::Args),
}

/// What each command writes, and what it never writes, in bay's own words.
pub const WRITES: [(&str, &str, &str); 19] = [
    (
        "start",
        "the change's record and the claim of its intent on the remote; its view, a folder under .git/bay/views",
        "your checkout's files; main",
    ),
    (
        "merge",
        "a request on the change's record and a queue place; with --wait, the checks' evidence, the merge into main and its event on refs/bay/log/<runner>",
        "your checkout's files",
    ),
    (
        "abandon",
        "an abandon step on the change's record",
        "the view's files; main",
    ),
    (
        "undo",
        "a new change on the remote that takes the merge back out, its view, and what merge writes for it",
        "your checkout's files; main's history before it",
    ),
    (
        "save",
        "a new change on the remote holding your checkout's edits, and what merge --wait writes for it; after the merge, your checkout's branch, index and files moved to it",
        "a commit on your branch; any file while a save is refused",
    ),
    (
        "status",
        "only fetched copies of the remote's refs",
        "your files; your branches; main",
    ),
    (
        "runner",
        "run: the merges of queued changes into main, with their evidence, and one bay.event/1 per operation it ends on refs/bay/log/<runner>",
        "your checkout's files",
    ),
    (
        "plugin",
        "test: a scratch repository in a temporary folder, removed when it ends",
        "your files; anything bay keeps in the project's history",
    ),
    (
        "evidence",
        "record: one record per named commit in this producer's or reviewer's notes ref on the remote, refs/notes/bay/evidence/<producer>; missing: only fetched copies of the remote's refs",
        "your files; main; any record already written",
    ),
    ("help", "nothing", "anything"),
    (
        "install",
        "the program at ~/.local/bin/bay and the skill in each Claude config directory; in a clone, without --machine: bay's hook entries in the project's agent settings file, and this clone's bay.* and commit-graph Git config",
        "main: you commit and merge the settings file; global Git config; user-global Claude settings; with --machine: hook entries, a project's settings or its Git config",
    ),
    (
        "hook",
        "the session's work record under .git/bay/sessions/<session>; a draft checkpoint of the view, as a checkpoint step on the change's record and at the local ref refs/bay/checkpoints/<change>; the locks of [locks] paths under refs/bay/locks/; at session start, the line naming the session in the file Claude Code's CLAUDE_ENV_FILE names; through a background bay live push, this machine's live summary at refs/bay/live/<machine>",
        "the view's files, HEAD and index; main",
    ),
    (
        "demo",
        "a throwaway remote and clones in a temporary folder, or in --dir",
        "the repository it runs in",
    ),
    (
        "doctor",
        "nothing",
        "your files; main; Git config; settings files; the skill",
    ),
    (
        "enrol",
        "one key in the key registry, refs/bay/registry, signed with this machine's registry key and pushed; with --remove, the name's keys out of its class and into the registry's removed file",
        "your files; main",
    ),
    (
        "waiting",
        "only fetched copies of the remote's refs",
        "your files; your branches; main",
    ),
    (
        "approve",
        "your signed approval, or with --waive a signed waiver, pushed to your notes ref refs/notes/bay/evidence/<approver>",
        "the change itself; main",
    ),
    (
        "reject",
        "your signed no, pushed to your notes ref refs/notes/bay/evidence/<approver>: the change is blocked",
        "the change itself; main",
    ),
    (
        "live",
        "push: this machine's live summary, one commit holding live.json at refs/bay/live/<machine>, and the moment of that push under .git/bay/live",
        "your files; main; another machine's summary",
    ),
];

/// `bay help` as a page for a person.
pub fn help_page(result: &BayResult) -> String {
    help::page(result)
}

/// What a command answers with: a `bay.result/1` to print, or, for `bay hook`, the exit code
/// of an answer already given in the agent product's protocol.
pub enum Answer {
    Result(Box<BayResult>),
    Product(std::process::ExitCode),
}

pub fn run(cli: &Cli) -> Answer {
    let result = match &cli.command {
        Command::Start(args) => start::run(cli, args),
        Command::Merge(args) => merge::run(cli, args),
        Command::Abandon(args) => abandon::run(cli, args),
        Command::Undo(args) => undo::run(cli, args),
        Command::Save(args) => save::run(cli, args),
        Command::Status(args) => status::run(cli, args),
        Command::Runner(args) => runner::run(cli, args),
        Command::Plugin(args) => plugin::run(cli, args),
        Command::Evidence(args) => evidence::run(cli, args),
        Command::Help(args) => help::run(args),
        Command::Install(args) => install::run(cli, args),
        Command::Demo(args) => demo::run(cli, args),
        Command::Hook(args) => return Answer::Product(hook::run(cli, args)),
        Command::Doctor(args) => doctor::run(cli, args),
        Command::Enrol(args) => enrol::run(cli, args),
        Command::Waiting(args) => waiting::run(cli, args),
        Command::Approve(args) => approve::approve(cli, args),
        Command::Reject(args) => approve::reject(cli, args),
        Command::Live(args) => live::run(cli, args),
    };
    Answer::Result(Box::new(result))
}

/// Finds the clone and makes the driver that runs its machines; at a terminal the driver
/// tells each long step as it starts (building, checking, adding to main).
pub fn prepare(cli: &Cli) -> Result<(Context, Driver<Local>), BayResult> {
    let context = Context::discover(cli.dir.as_deref())?;
    let local = Local::new(&context, context.min_free_mib()?).map_err(failed)?;
    let mut driver = local.driver();
    watch(cli, &mut driver, Progress::steps());
    Ok((context, driver))
}

/// Tells a person at a terminal what `driver` does, in `progress`'s lines; through a pipe or
/// with `--json`, nothing.
pub fn watch(cli: &Cli, driver: &mut Driver<Local>, progress: Progress) {
    if output::shows_progress(cli.json) {
        driver.watch(Box::new(output::Terminal(progress)));
    }
}

/// Reads the config committed on main, with a fetch of main alone.
pub fn config(context: &Context, driver: &Driver<Local>) -> Result<(Config, Timestamp), BayResult> {
    let (config, fetched_at, _) = config_with(context, driver, &[])?;
    Ok((config, fetched_at))
}

/// [`config`], with `extra` patterns fetched in the same round trip; what the fetch brought.
pub fn config_with(
    context: &Context,
    driver: &Driver<Local>,
    extra: &[String],
) -> Result<(Config, Timestamp, Refs), BayResult> {
    let fetched_at = clock::now();
    let mut spec = FetchSpec::new([refs::main(&context.main)]);
    spec.patterns.extend(extra.iter().cloned());
    let remote = driver
        .executor()
        .fetch(&spec)
        .map_err(|why| fetch_failed(context, why))?;
    Ok((
        context.config(&remote, driver.executor())?,
        fetched_at,
        remote,
    ))
}

/// Runs an agent command's machine to its outcome (see [`begin_agent`]), with the config
/// committed on main.
pub fn run_agent(
    context: &Context,
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
) -> Result<(BayResult, Config), BayResult> {
    let (config, fetched_at) = begin_agent(context, driver, machine)?;
    Ok((drive(driver, machine, fetched_at), config))
}

/// Runs `bay start`'s machine to its outcome, as [`run_agent`] does, with the settings of the
/// config the first fetch reads handed to it.
pub fn run_start(
    context: &Context,
    driver: &mut Driver<Local>,
    start: &mut Start,
) -> Result<(BayResult, Config), BayResult> {
    let first = fetch_first(context, driver, start)?;
    let (config, fetched_at) = (first.config.clone(), first.fetched_at);
    // Main's rules are the machine's before it sees the fetch, which may open a change at once.
    start.configured(&config);
    let rules = context.agent_rules(&first.remote, driver.executor())?;
    start.policed(&rules, context.actor_source);
    if let Some(refused) = start.outcome() {
        return Ok((refused.clone(), config));
    }
    answer_first(start, first)?;
    Ok((drive(driver, start, fetched_at), config))
}

/// Runs `bay status`'s machine to its outcome, as [`run_agent`] does, with the live changes
/// limit of main's policy handed to it for `detail.flow`.
pub fn run_status(
    context: &Context,
    driver: &mut Driver<Local>,
    status: &mut Status,
) -> Result<BayResult, BayResult> {
    let first = fetch_first(context, driver, status)?;
    let fetched_at = first.fetched_at;
    let rules = context.agent_rules(&first.remote, driver.executor())?;
    status.limited(rules.max_live_changes);
    answer_first(status, first)?;
    Ok(drive(driver, status, fetched_at))
}

/// Answers an agent command's first action, a fetch; that one fetch also brings main, and the
/// config committed there is checked before the machine goes on, so a command makes one
/// fetch, not two. The config, and when main was fetched.
pub fn begin_agent(
    context: &Context,
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
) -> Result<(Config, Timestamp), BayResult> {
    let first = fetch_first(context, driver, machine)?;
    begin_with(machine, first)
}

/// Hands the first fetch to `machine`: the config and time it read.
fn begin_with(machine: &mut dyn Machine, first: First) -> Result<(Config, Timestamp), BayResult> {
    let begun = (first.config.clone(), first.fetched_at);
    answer_first(machine, first)?;
    Ok(begun)
}

/// Begins a merge's machine as [`begin_agent`] does, but first holds the actor to main's
/// `[agent] require_actor_proof` with `facts` (core's [`actor::unproven`] decides): a refusal
/// comes back before the machine sees the fetch, so nothing is signed or pushed.
pub fn begin_merge(
    context: &Context,
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
    facts: &ActorFacts,
    change: &ChangeId,
) -> Result<(Config, Timestamp), BayResult> {
    let first = fetch_merge(context, driver, machine, facts, change, &[])?;
    begin_with(machine, first)
}

/// A merge's first fetch, widened by `extra` patterns, once the actor is held to main's
/// `[agent] require_actor_proof`; the machine has not seen it yet.
fn fetch_merge(
    context: &Context,
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
    facts: &ActorFacts,
    change: &ChangeId,
    extra: &[String],
) -> Result<First, BayResult> {
    let first = fetch_first_with(context, driver, machine, extra)?;
    let rules = context.agent_rules(&first.remote, driver.executor())?;
    if let Some(refused) = actor::unproven(&rules, facts, Some(change)) {
        return Err(with_actor(refused, context));
    }
    Ok(first)
}

/// What a signature by this machine's agent key proves (core's [`actor::actor_proof`]
/// judges it): the key `bay.agentKey` names among `settings` (its path, mode and public half;
/// never the private key), whether this is Unix, and the actors of the session records of
/// `clone` (its work tree top and common Git directory; `None` outside a clone), which this
/// account wrote: the agents, as the spec's `actors` are, and never whoever runs the command
/// (a person's `bay doctor` would count as a second actor). `bay merge` holds the actor to
/// `require_actor_proof` with these facts, and `bay doctor`'s `key-custody` row shows them:
/// one gathering, so the two never judge a machine apart.
pub fn actor_facts(settings: &[(String, String)], clone: Option<(&Path, &Path)>) -> ActorFacts {
    let inside: Vec<PathBuf> = clone
        .map(|(top, common_dir)| vec![top.to_path_buf(), common_dir.to_path_buf()])
        .unwrap_or_default();
    let agent_key = settings
        .iter()
        .rev()
        .find(|(key, _)| key.eq_ignore_ascii_case("bay.agentKey"))
        .map(|(_, value)| {
            let path = enrol::expand_home(value);
            KeyFile {
                setting: "bay.agentKey".into(),
                found: custody::key_facts(Path::new(&path), &inside),
                path,
            }
        });
    let actors: BTreeSet<String> = clone
        .map(|(_, common_dir)| hook::all_sessions(&crate::context::sessions_dir(common_dir)))
        .unwrap_or_default()
        .into_iter()
        .map(|session| session.actor)
        .collect();
    ActorFacts {
        unix: cfg!(unix),
        agent_key,
        actors,
    }
}

/// An agent command's first fetch, made and not yet handed to its machine.
struct First {
    id: ActionId,
    spec: FetchSpec,
    remote: Refs,
    config: Config,
    fetched_at: Timestamp,
}

/// Makes the machine's first action, a fetch widened to main, and reads main's config.
fn fetch_first(
    context: &Context,
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
) -> Result<First, BayResult> {
    fetch_first_with(context, driver, machine, &[])
}

/// [`fetch_first`], with `extra` patterns fetched in the same round trip for the command
/// itself.
fn fetch_first_with(
    context: &Context,
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
    extra: &[String],
) -> Result<First, BayResult> {
    // A machine may refuse before it reads anything (a start below the disk floor).
    if let Some(result) = machine.outcome() {
        return Err(result.clone());
    }
    // It may first ask what this clone holds, which never reaches the network and shapes
    // what the fetch names.
    let (id, spec) = loop {
        match machine.poll_action() {
            Some((id, Action::Fetch(spec))) => break (id, spec),
            Some((id, action @ Action::ReadHeld { .. })) => {
                let held = driver.executor().execute(action);
                machine
                    .handle(clock::now(), Event::Done(id, held))
                    .map_err(broke)?;
            }
            _ => {
                return Err(failed(
                    "a command's machine did not begin with a fetch; please report it".into(),
                ));
            }
        }
    };
    let mut wide = spec.clone();
    wide.patterns.push(refs::main(&context.main));
    wide.patterns.extend(extra.iter().cloned());
    let fetched_at = clock::now();
    let remote = driver
        .executor()
        .fetch(&wide)
        .map_err(|why| fetch_failed(context, why))?;
    let config = context.config(&remote, driver.executor())?;
    Ok(First {
        id,
        spec,
        remote,
        config,
        fetched_at,
    })
}

/// Hands the machine what its first fetch brought of what it asked for.
fn answer_first(machine: &mut dyn Machine, first: First) -> Result<(), BayResult> {
    let answer: Refs = first
        .remote
        .into_iter()
        .filter(|(name, _)| first.spec.covers(name))
        .collect();
    machine
        .handle(
            clock::now(),
            Event::Done(first.id, Completion::Fetched(Ok(answer))),
        )
        .map_err(broke)
}

/// A machine handed what it did not ask for: bay's own defect.
pub(crate) fn broke(misuse: impl std::fmt::Display) -> BayResult {
    failed(format!(
        "bay broke its own protocol ({misuse}); please report it"
    ))
}

fn fetch_failed(context: &Context, why: String) -> BayResult {
    failed(format!("could not fetch from {}: {why}", context.remote))
}

/// Drives `machine` to its outcome with the real driver, and names when main was fetched.
pub fn drive(
    driver: &mut Driver<Local>,
    machine: &mut dyn Machine,
    fetched_at: Timestamp,
) -> BayResult {
    let result = match driver.pump(machine, &mut |_| false) {
        Ok(result) => result,
        Err(Stopped::Misuse(misuse)) => broke(misuse),
        Err(Stopped::Asked) => failed("the command was stopped before it finished".into()),
    };
    with_fetch_time(result, fetched_at)
}

/// Fills in when this command fetched the main its result reflects.
pub fn with_fetch_time(mut result: BayResult, fetched_at: Timestamp) -> BayResult {
    if let Some(freshness) = result.freshness.as_mut() {
        freshness.fetched_at = clock::rfc3339(fetched_at);
    }
    result
}

/// Adds who acted, and where the name came from, to a result.
pub fn with_actor(mut result: BayResult, context: &Context) -> BayResult {
    result.detail.insert(
        "actor".into(),
        serde_json::Value::from(context.actor.clone()),
    );
    result.detail.insert(
        "actor_source".into(),
        serde_json::Value::from(context.actor_source.as_str()),
    );
    result
}
