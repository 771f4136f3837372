//! `bay runner run [--once] [--interval-s <n>]`: drive queued operations to an outcome here.

use std::path::Path;

use bay_core::machine::Refs;
use bay_core::machine::runner::{RunMode, Runner, RunnerConfig};
use bay_core::machine::runner_keys::{RunnerKeys, RunnerKeysInput};
use bay_core::progress::{self, Progress};
use bay_core::result::{BayResult, Decision};
use bay_core::trust::record::KeySetting;
use bay_drivers::clock;
use bay_drivers::pump::Driver;
use bay_drivers::sign::SigningKey;

use super::doctor::{git_version, sandbox};
use super::enrol::expand_home;
use super::{config_with, drive, prepare, watch};
use crate::context::Context;
use crate::local::Local;
use crate::{Cli, output};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: RunnerCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum RunnerCommand {
    /// Drive queued operations: a pass every --interval-s seconds, or one with --once.
    Run {
        /// Make passes until nothing is left that this runner can do now, then exit.
        #[arg(long)]
        once: bool,
        /// Seconds between passes when there is nothing to do.
        #[arg(long, value_name = "SECONDS", default_value_t = 10)]
        interval_s: u64,
    },
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let RunnerCommand::Run { once, interval_s } = &args.command;
    // Before it fetches or claims anything: a runner below Git's floor, or with no sandbox to
    // run checks in, would only fail each operation it took.
    if let Some(refused) = bay_core::doctor::runner_refusal(git_version().as_deref(), &sandbox()) {
        return refused;
    }
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    // Main's config and the registry in one fetch: the keys are judged on what it brought.
    let patterns = RunnerKeys::patterns(&context.main);
    let (config, fetched_at, remote) = match config_with(&context, &driver, &patterns) {
        Ok(read) => read,
        Err(result) => return result,
    };
    let mode = if *once { RunMode::Once } else { RunMode::Loop };
    let cfg = runner_config(&context, mode, *interval_s).configured(&config);
    let cfg = match with_keys(&context, &mut driver, cfg, &remote) {
        Ok(cfg) => cfg,
        Err(refused) => return refused,
    };
    if output::shows_progress(cli.json) {
        output::progress_line(&progress::runner_started(&cfg.runner, &context.main, *once));
    }
    watch(cli, &mut driver, Progress::runner());
    let mut machine = Runner::new(cfg, clock::now());
    drive(&mut driver, &mut machine, fetched_at)
}

/// What this machine says of its runner: the name and the environments it serves, from its
/// Git config, its host and bay's version. The config on main sets the rest
/// ([`RunnerConfig::configured`]).
pub fn runner_config(context: &Context, mode: RunMode, interval_s: u64) -> RunnerConfig {
    let mut cfg = RunnerConfig::new(runner_name(context), context.main.clone(), clock::entropy());
    cfg.interval_ms = interval_s.max(1).saturating_mul(1000);
    cfg.environments = served_environments(context);
    cfg.mode = mode;
    cfg.machine = context.machine();
    cfg.version = env!("CARGO_PKG_VERSION").to_string();
    cfg
}

/// The runner's keys judged against the remote's registry before it claims anything
/// (`machine::runner_keys`), on `remote` as a fetch of [`RunnerKeys::patterns`] brought it:
/// the same config with what it signs with, or `RUNNER_KEY_MISSING` when the registry signs
/// everything and a key is not set or not enrolled.
pub fn with_keys(
    context: &Context,
    driver: &mut Driver<Local>,
    mut cfg: RunnerConfig,
    remote: &Refs,
) -> Result<RunnerConfig, BayResult> {
    let input = keys_input(context, &cfg);
    let now = clock::now();
    let mut machine = RunnerKeys::fetched(input, now, remote);
    let result = drive(driver, &mut machine, now);
    if result.decision != Decision::Ok {
        return Err(result);
    }
    cfg.signer = machine.signer().cloned();
    cfg.approvals_only = machine.approvals_only();
    Ok(cfg)
}

/// What judging the keys of `cfg`'s runner starts from: its name, main, and the keys this
/// clone's `bay.executorKey` and `bay.producerKey` name, each loaded to its public half.
fn keys_input(context: &Context, cfg: &RunnerConfig) -> RunnerKeysInput {
    let setting = |name: &str| {
        let path = expand_home(&context.setting_values(name).pop()?);
        let public = SigningKey::load(Path::new(&path)).map(|key| key.public().clone());
        Some(KeySetting { path, public })
    };
    RunnerKeysInput {
        runner: cfg.runner.clone(),
        main: cfg.main.clone(),
        executor: setting("bay.executorkey"),
        producer: setting("bay.producerkey"),
    }
}

/// `bay.runnerName`, else the host's name, made safe to use in a ref name.
pub fn runner_name(context: &Context) -> String {
    let named = context.setting_values("bay.runnername").pop();
    let raw = named
        .or_else(crate::context::host)
        .unwrap_or_else(|| "runner".to_string());
    let safe: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if safe.trim_matches('-').is_empty() {
        "runner".to_string()
    } else {
        safe
    }
}

/// `bay.checkEnvironment`: absent serves every environment; one empty value serves none.
fn served_environments(context: &Context) -> Option<Vec<String>> {
    let values = context.setting_values("bay.checkenvironment");
    if values.is_empty() {
        return None;
    }
    Some(values.into_iter().filter(|v| !v.is_empty()).collect())
}
