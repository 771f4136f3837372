//! `bay merge [<change>] [--wait[=<seconds>]]`.

use std::time::{Duration, Instant};

use bay_core::actor::ActorFacts;
use bay_core::id::ChangeId;
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::merge_wait::MergeWait;
use bay_core::machine::runner::RunMode;
use bay_core::machine::runner_keys::RunnerKeys;
use bay_core::machine::status::{Status, StatusInput};
use bay_core::result::{BayResult, Decision, OpState};
use bay_drivers::clock;
use bay_drivers::pump::Driver;

use super::doctor::sandbox;
use super::runner::{runner_config, with_keys};
use super::{begin_merge, begin_with, drive, fetch_merge, prepare, with_actor};
use crate::Cli;
use crate::context::Context;
use crate::local::Local;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The change to merge; without one, the change of the view this runs in.
    pub change: Option<String>,
    #[command(flatten)]
    pub wait: Wait,
}

/// `--wait[=<seconds>]`, as `bay merge` and `bay undo` take it.
#[derive(clap::Args, Debug)]
pub struct Wait {
    /// Merge it here and return the outcome. With seconds, watch it instead, for at most that
    /// long, while it waits for a runner; return as soon as one works it.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, require_equals = true, default_missing_value = "0")]
    pub wait: Option<u64>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let change = match context.change(args.change.as_deref(), "merge") {
        Ok(change) => change,
        Err(result) => return result,
    };
    merge_change(&context, &mut driver, change, args.wait.wait)
}

/// Asks for `change` to be merged; with `wait` 0 merges it here, with more watches it, for at
/// most that many seconds, while it waits for a runner. `bay undo` merges its change the same
/// way.
pub fn merge_change(
    context: &Context,
    driver: &mut Driver<Local>,
    change: ChangeId,
    wait: Option<u64>,
) -> BayResult {
    // The request saves the view's work: it is taken now, while the command fetches.
    driver.executor().stage_view(&change);
    if wait == Some(0) {
        return merge_here(context, driver, &change);
    }
    let mut merge = Merge::new(merge_input(context, &change), clock::now());
    let queued = match begin_merge(context, driver, &mut merge, &actor_facts(context), &change) {
        Ok((_, fetched_at)) => with_actor(drive(driver, &mut merge, fetched_at), context),
        Err(result) => return result,
    };
    let (Some(wait), Decision::Queued) = (wait, queued.decision) else {
        return queued;
    };
    // Watch, for at most `wait` seconds, only while the change waits in the queue for a
    // runner; once one works it (or it ended), say so at once: the run goes on.
    let until = Instant::now() + Duration::from_secs(wait);
    loop {
        let fetched_at = clock::now();
        let mut status = Status::new(
            StatusInput {
                change: Some(change.clone()),
                main: context.main.clone(),
                flow: false,
            },
            fetched_at,
        );
        let result = drive(driver, &mut status, fetched_at);
        let waiting = result.decision == Decision::Queued
            && result.state.is_some_and(OpState::waits_for_runner);
        if !waiting || Instant::now() >= until {
            return with_actor(result, context);
        }
        std::thread::sleep(
            Duration::from_secs(1).min(until.saturating_duration_since(Instant::now())),
        );
    }
}

/// What `actor::unproven` judges, gathered by [`super::actor_facts`], as `bay doctor`'s
/// `key-custody` row gathers it.
fn actor_facts(context: &Context) -> ActorFacts {
    super::actor_facts(
        &context.settings,
        Some((context.top.as_path(), context.common_dir.as_path())),
    )
}

fn merge_input(context: &Context, change: &ChangeId) -> MergeInput {
    MergeInput {
        change: change.clone(),
        actor: context.actor.clone(),
        main: context.main.clone(),
        entropy: clock::entropy(),
    }
}

/// `merge --wait`: asks for `change` to be merged and runs its operation here, as its runner
/// (core's [`MergeWait`] decides each step). The config the request's fetch reads on main
/// sets the runner's timings.
fn merge_here(context: &Context, driver: &mut Driver<Local>, change: &ChangeId) -> BayResult {
    let runner = runner_config(context, RunMode::Loop, 10);
    let mut machine = MergeWait::new(merge_input(context, change), clock::now(), runner.clone());
    // The checks run here: a machine with no sandbox refuses as a runner does, before the
    // request goes up, when the policy has checks to run.
    if let Some(refusal) = bay_core::doctor::sandbox_refusal(&sandbox()) {
        machine.without_sandbox(refusal);
    }
    let facts = actor_facts(context);
    let patterns = RunnerKeys::patterns(&context.main);
    let first = match fetch_merge(context, driver, &mut machine, &facts, change, &patterns) {
        Ok(first) => first,
        Err(result) => return result,
    };
    // A merge here signs as a runner does: refused `RUNNER_KEY_MISSING` before the request
    // goes up when the registry signs everything and this machine's keys cannot. The keys are
    // judged on the request's own first fetch, which brought the registry too; the run takes
    // what they sign with before the machine sees the fetch, which may hand it the request.
    let signing = match with_keys(context, driver, runner, &first.remote) {
        Ok(signing) => signing,
        Err(refused) => return with_actor(refused, context),
    };
    machine.signs(signing.signer, signing.approvals_only);
    let (config, fetched_at) = match begin_with(&mut machine, first) {
        Ok(begun) => begun,
        Err(result) => return result,
    };
    machine.configured(config);
    with_actor(drive(driver, &mut machine, fetched_at), context)
}
