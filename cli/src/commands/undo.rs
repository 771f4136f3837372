//! `bay undo <change> [--wait[=<seconds>]]`.

use bay_core::machine::undo::{Undo, UndoInput};
use bay_core::result::{BayResult, Decision};
use bay_drivers::clock;

use super::merge::{Wait, merge_change};
use super::{prepare, run_agent, with_actor};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The merged change to take back out of main.
    pub change: String,
    #[command(flatten)]
    pub wait: Wait,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let target = match context.change(Some(&args.change), "undo") {
        Ok(change) => change,
        Err(result) => return result,
    };
    let disk = match context.disk_space() {
        Ok(disk) => disk,
        Err(result) => return result,
    };
    let input = UndoInput {
        target,
        actor: context.actor.clone(),
        main: context.main.clone(),
        entropy: clock::entropy(),
        disk,
    };
    let mut undo = Undo::new(input, clock::now());
    let opened = match run_agent(&context, &mut driver, &mut undo) {
        Ok((result, _)) => result,
        Err(result) => return result,
    };
    // Only an undo change that opened cleanly goes on to merge, as `bay merge` would.
    let (Decision::Ok, Some(change)) = (opened.decision, opened.change.clone()) else {
        return with_actor(opened, &context);
    };
    let mut merged = merge_change(&context, &mut driver, change, args.wait.wait);
    for key in ["reverts", "view", "generation", "supersedes"] {
        if let Some(value) = opened.detail.get(key) {
            merged.detail.insert(key.into(), value.clone());
        }
    }
    merged
}
