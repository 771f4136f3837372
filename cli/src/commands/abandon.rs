//! `bay abandon [<change>]`.

use bay_core::machine::abandon::{Abandon, AbandonInput};
use bay_core::result::BayResult;
use bay_drivers::clock;

use super::{prepare, run_agent, with_actor};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The change to give up; without one, the change of the view this runs in.
    pub change: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let change = match context.change(args.change.as_deref(), "abandon") {
        Ok(change) => change,
        Err(result) => return result,
    };
    let input = AbandonInput {
        change,
        actor: context.actor.clone(),
        entropy: clock::entropy(),
    };
    let mut machine = Abandon::new(input, clock::now());
    match run_agent(&context, &mut driver, &mut machine) {
        Ok((result, _)) => with_actor(result, &context),
        Err(result) => result,
    }
}
