//! `bay waiting`: the changes that wait for an approval this machine's approver
//! (`bay.approverName`) may give, or every one without it. Core's `machine::waiting` reads
//! them; this reads the setting.

use bay_core::machine::waiting::{Waiting, WaitingInput};
use bay_core::result::BayResult;
use bay_drivers::clock;

use super::{prepare, run_agent, with_actor};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(cli: &Cli, _args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let input = WaitingInput {
        main: context.main.clone(),
        approver: context.setting_values("bay.approvername").pop(),
    };
    let mut machine = Waiting::new(input, clock::now());
    match run_agent(&context, &mut driver, &mut machine) {
        Ok((result, _)) => with_actor(result, &context),
        Err(result) => result,
    }
}
