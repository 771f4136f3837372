//! `bay merge [<change>] [--wait[=<seconds>]]`.

use std::time::{Duration, Instant};

use bay_core::id::ChangeId;
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::runner::{RunMode, Runner, Seed};
use bay_core::machine::status::{Status, StatusInput};
use bay_core::result::{BayResult, Decision, OpState};
use bay_drivers::clock;
use bay_drivers::pump::Driver;

use super::runner::{runner_config, runner_name};
use super::{drive, prepare, run_agent, with_actor};
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
    let change = match context.change(args.change.as_deref()) {
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
        // The runner carries the request in its first write when nothing is queued ahead; a
        // request it could not carry is asked for again, on its own.
        let (result, dropped) = merge_here(context, driver, &change, true);
        if !dropped {
            return result;
        }
        return merge_here(context, driver, &change, false).0;
    }
    let mut merge = Merge::new(merge_input(context, &change), clock::now());
    let queued = match run_agent(context, driver, &mut merge) {
        Ok((result, _)) => with_actor(result, context),
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

fn merge_input(context: &Context, change: &ChangeId) -> MergeInput {
    MergeInput {
        change: change.clone(),
        actor: context.actor.clone(),
        main: context.main.clone(),
        entropy: clock::entropy(),
    }
}

/// `merge --wait`: asks for `change` to be merged and runs its operation here, as its runner,
/// starting from what the request was made on; with `carried`, the runner's first write may
/// carry the request. The result, and whether the request never went up.
fn merge_here(
    context: &Context,
    driver: &mut Driver<Local>,
    change: &ChangeId,
    carried: bool,
) -> (BayResult, bool) {
    let input = merge_input(context, change);
    // The request's fetch brings this machine's runner's log tip too.
    let mut merge = Merge::then_run_as(input, clock::now(), &runner_name(context), carried);
    let (queued, config) = match run_agent(context, driver, &mut merge) {
        Ok((result, config)) => (with_actor(result, context), config),
        Err(result) => return (result, false),
    };
    let (Decision::Queued, Some(op)) = (queued.decision, queued.op_id.clone()) else {
        return (queued, false);
    };
    let cfg = runner_config(context, &config, RunMode::Only(op), 10);
    // The config was read at the main the request saw: its holds need no second read.
    let mut runner = match merge.seed() {
        Some(seed) => Runner::seeded(
            cfg,
            clock::now(),
            Seed {
                config: Some(config),
                ..seed
            },
        ),
        None => Runner::new(cfg, clock::now()),
    };
    let result = with_actor(drive(driver, &mut runner, clock::now()), context);
    (result, runner.request_dropped())
}
