//! `bay plugin test check [--timeout-s] [--expected-minimum] [--path] [--env] [--with] --
//! <command>...`: bay's contract cases against a check command, run as a runner runs it, on a
//! scratch repository made from the files here. It changes nothing.
//!
//! `bay plugin test hold [--timeout-s] -- <command>...`: asks a hold plugin `status` as a
//! runner asks it (its program from a commit of the files here, committed or not, with only
//! `PATH` and `HOME`), and says whether bay reads its answer as holding main.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bay_core::machine::plugin_test::{PluginTest, PluginTestInput};
use bay_core::machine::{Action, Completion};
use bay_core::policy::{CheckSpec, Policy};
use bay_core::result::BayResult;
use bay_drivers::check::MachineChecks;
use bay_drivers::clock;
use bay_drivers::git::Git;
use bay_drivers::pump::{Driver, Execute, Stopped};
use bay_drivers::scratch::{OTHER_PATH, Scratch};

use crate::Cli;
use crate::context::{bay_settings, failed, min_free_mib, read_paths};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: PluginCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum PluginCommand {
    /// Run a check command or a hold plugin as a runner would, and judge what it answers.
    Test {
        #[command(subcommand)]
        kind: TestKind,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum TestKind {
    /// Run bay's contract cases against a check command, as a runner runs it.
    Check(CheckArgs),
    /// Ask a hold plugin `status`, as a runner asks it, and say whether main reads as held.
    Hold(HoldArgs),
}

#[derive(clap::Args, Debug)]
pub struct HoldArgs {
    /// How long the plugin may take, as `[plugin.hold] timeout_s` (1 to 120).
    #[arg(long, value_name = "SECONDS", default_value_t = bay_core::config::HOLD_PLUGIN_TIMEOUT_S)]
    timeout_s: u64,
    /// The plugin's command: its program is a path in this repository.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The check's time limit in seconds, as its `timeout_s`.
    #[arg(long, value_name = "SECONDS", default_value_t = bay_core::policy::DEFAULT_TIMEOUT_S)]
    timeout_s: u64,
    /// The least units the check must report, as its `expected_minimum`.
    #[arg(long, value_name = "N", default_value_t = 1)]
    expected_minimum: u64,
    /// A directory of the check's PATH, as its `path` (repeat it; absolute).
    #[arg(long = "path", value_name = "DIR")]
    path: Vec<String>,
    /// A variable the check gets from this machine, as its `env` (repeat it).
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,
    /// Another `adapter` path that the check reads (repeat it).
    #[arg(long = "with", value_name = "PATH")]
    with: Vec<String>,
    /// The check's command: its program is a path in this repository.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let PluginCommand::Test { kind } = &args.command;
    let check = match kind {
        TestKind::Check(check) => check,
        TestKind::Hold(hold) => return test_hold(cli, hold),
    };
    let spec = match check_spec(check) {
        Ok(spec) => spec,
        Err(result) => return result,
    };
    let here = cli.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let folder = top(&here);
    let floor = Git::in_dir(&here)
        .cmd(["config", "--get", "bay.minFreeMiB"])
        .text()
        .ok();
    let min_free_mib = match min_free_mib(floor.as_deref()) {
        Ok(floor) => floor,
        Err(result) => return result,
    };
    let read_paths = read_paths(&bay_settings(&Git::in_dir(&here)), vec![folder.clone()]);
    let scratch = match Scratch::of(&folder) {
        Ok(scratch) => scratch,
        Err(why) => return failed(why),
    };
    let input = PluginTestInput {
        check: spec,
        base: scratch.base.clone(),
        candidate: scratch.candidate.clone(),
        other: scratch.other.clone(),
        other_path: OTHER_PATH.into(),
    };
    let mut machine = PluginTest::new(input, clock::now());
    let mut driver = Driver::new(Arc::new(ScratchChecks(MachineChecks {
        git_dir: scratch.git_dir.clone(),
        min_free_mib,
        read_paths,
    })));
    match driver.pump(&mut machine, &mut |_| false) {
        Ok(result) => result,
        Err(Stopped::Misuse(misuse)) => super::broke(misuse),
        Err(Stopped::Asked) => failed("the test was stopped before it finished".into()),
    }
}

/// The check as a `[[check]]` entry would give it, read by the policy's own parser so that a
/// flag is held to the rules of the key it stands for.
fn check_spec(args: &CheckArgs) -> Result<CheckSpec, BayResult> {
    plain_words(&args.command)?;
    let program = &args.command[0];
    let mut adapter = vec![program.clone()];
    adapter.extend(args.with.iter().cloned());
    let quoted = |items: &[String]| {
        let items: Vec<String> = items.iter().map(|i| quote(i)).collect();
        format!("[{}]", items.join(", "))
    };
    let mut text = format!(
        "revision = 1\n\n[[check]]\nid = \"plugin-test\"\nenvironment = \"here\"\ncommand = {}\nadapter = {}\nexpected_minimum = {}\ntimeout_s = {}\n",
        quote(&args.command.join(" ")),
        quoted(&adapter),
        args.expected_minimum,
        args.timeout_s,
    );
    if !args.path.is_empty() {
        text.push_str(&format!("path = {}\n", quoted(&args.path)));
    }
    if !args.env.is_empty() {
        text.push_str(&format!("env = {}\n", quoted(&args.env)));
    }
    let policy = Policy::parse(&text)
        .map_err(|e| failed(format!("the flags do not make a valid check: {e}")))?;
    policy
        .checks
        .into_iter()
        .next()
        .ok_or_else(|| failed("the flags made no check".into()))
}

/// Runs the hold plugin once, as a runner would before it takes on an ordinary change, on a
/// scratch commit of the files here; `detail` says whether bay reads the answer as held, why,
/// and what `detail.hold` would then name.
fn test_hold(cli: &Cli, args: &HoldArgs) -> BayResult {
    if let Err(result) = plain_words(&args.command) {
        return result;
    }
    // The flags make the config a repository would commit, read by the config's own parser.
    let text = format!(
        "[plugin.hold]\ncommand = {}\ntimeout_s = {}\n",
        quote(&args.command.join(" ")),
        args.timeout_s
    );
    let plugin = match bay_core::config::Config::parse(&text) {
        Ok(config) => config.hold_plugin,
        Err(error) => {
            return failed(format!(
                "the flags do not make a valid [plugin.hold]: {error}"
            ));
        }
    };
    let Some(plugin) = plugin else {
        return failed("the command is empty; give the plugin's program after --".into());
    };
    let here = cli.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let scratch = match Scratch::of(&top(&here)) {
        Ok(scratch) => scratch,
        Err(why) => return failed(why),
    };
    let repo = match bay_drivers::remote::Repo::new(&scratch.git_dir, "origin", "main") {
        Ok(repo) => repo,
        Err(why) => return failed(why),
    };
    let call = bay_core::plugin::hold_call(&plugin, &scratch.base.commit);
    let env = |name: &str| std::env::var(name).ok();
    let exit = bay_drivers::plugin::run(&repo, &call, &env);
    let held = bay_core::plugin::judge_hold(&exit);
    let mut detail = serde_json::Map::new();
    detail.insert("held".into(), serde_json::Value::Bool(held.is_some()));
    if let Some(reason) = &held {
        let hold = bay_core::config::MainHold::plugin(reason);
        let hold = serde_json::to_value(hold).unwrap_or_default();
        detail.insert("hold".into(), hold);
    }
    BayResult::ok(None, detail)
}

/// Refuses a command word that is empty or holds a space: a plugin's command is split at
/// spaces, so each word must come on its own.
fn plain_words(command: &[String]) -> Result<(), BayResult> {
    match command
        .iter()
        .find(|w| w.is_empty() || w.contains(char::is_whitespace))
    {
        Some(word) => Err(failed(format!(
            "the command word {word:?} is empty or holds a space; a plugin's command is split at spaces, so give each word on its own"
        ))),
        None => Ok(()),
    }
}

/// A TOML basic string: JSON's escapes are TOML's.
fn quote(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

/// The top of the repository `here` is in, or `here` itself outside one.
fn top(here: &Path) -> PathBuf {
    Git::in_dir(here)
        .cmd(["rev-parse", "--show-toplevel"])
        .text()
        .map(|top| PathBuf::from(top.trim()))
        .unwrap_or_else(|_| here.to_path_buf())
}

/// Runs the test's checks on the scratch repository, and nothing else.
#[derive(Debug)]
struct ScratchChecks(MachineChecks);

impl Execute for ScratchChecks {
    fn execute(&self, action: Action) -> Completion {
        match action {
            Action::RunCheck(run) => Completion::CheckExited(self.0.run(&run)),
            other => panic!(
                "bay plugin test asked for {}, which it never does",
                other.name()
            ),
        }
    }
}
