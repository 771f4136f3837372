//! `bay status [<change>]`.

use bay_core::machine::status::{Status, StatusInput};
use bay_core::result::BayResult;
use bay_drivers::clock;

use super::{prepare, run_agent};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The change to report on; without one, the view's change, else the queue.
    pub change: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let change = match (&args.change, &context.view) {
        (None, None) => None,
        (named, _) => match context.change(named.as_deref()) {
            Ok(change) => Some(change),
            Err(result) => return result,
        },
    };
    let input = StatusInput {
        change,
        main: context.main.clone(),
    };
    let mut machine = Status::new(input, clock::now());
    match run_agent(&context, &mut driver, &mut machine) {
        Ok((result, _)) => result,
        Err(result) => result,
    }
}
