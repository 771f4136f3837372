//! `bay status [<change>]` and `bay status --lineage [<range>]`.

use bay_core::machine::lineage::{Lineage, LineageInput};
use bay_core::machine::status::{Status, StatusInput};
use bay_core::result::BayResult;
use bay_drivers::clock;

use super::{drive, prepare, run_agent};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The change to report on; without one, the view's change, else the queue.
    pub change: Option<String>,
    /// List the `Reverts:`, `Supersedes:` and `Fixes:` pairs on a first-parent range
    /// (`<from>..<to>`), main by default. Reads local refs only; it never fetches.
    #[arg(long, value_name = "RANGE", num_args = 0..=1, default_missing_value = "", conflicts_with = "change")]
    pub lineage: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    if let Some(range) = &args.lineage {
        let input = LineageInput {
            range: Some(range.clone()).filter(|range| !range.is_empty()),
        };
        let mut machine = Lineage::new(input, clock::now());
        return drive(&mut driver, &mut machine, clock::now());
    }
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
