//! `bay status [<change>]`, `bay status --lineage [<range>]` and `bay status --since
//! [<cursor>] [--merged]`.

use bay_core::machine::lineage::{Lineage, LineageInput};
use bay_core::machine::since::{Cursor, Since, SinceInput};
use bay_core::machine::status::{Status, StatusInput};
use bay_core::result::BayResult;
use bay_drivers::clock;

use super::{drive, prepare, run_agent, run_status};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The change to report on; without one, the view's change, else the queue.
    pub change: Option<String>,
    /// List the `Reverts:`, `Supersedes:` and `Fixes:` pairs on a first-parent range
    /// (`<from>..<to>`), main by default. Reads local refs only; it never fetches.
    #[arg(long, value_name = "RANGE", num_args = 0..=1, default_missing_value = "", conflicts_with = "change")]
    pub lineage: Option<String>,
    /// List the merges into main and the runner logs' events after <CURSOR>; each answer
    /// names the next cursor in `detail.cursor`. Without one: outside a view it lists nothing
    /// and returns a starting cursor; in a view, from the change's base. A cursor bay did not
    /// return is a usage error.
    #[arg(long, value_name = "CURSOR", num_args = 0..=1, default_missing_value = "", value_parser = cursor, conflicts_with_all = ["change", "lineage"])]
    pub since: Option<SinceCursor>,
    /// The fleet map: each machine's live summary as the last plain `bay status` fetched it,
    /// and each fresh session, with this machine's own from its records. It never fetches.
    #[arg(long, conflicts_with_all = ["change", "lineage", "since"])]
    pub fleet: bool,
    /// With `--since`: only the merges, no events.
    #[arg(long, requires = "since")]
    pub merged: bool,
}

/// The value of `--since`: a cursor, or none to start.
#[derive(Clone, Debug)]
pub struct SinceCursor(Option<Cursor>);

/// A cursor as `--since` takes it: empty starts over; anything else must be a cursor bay
/// returned, or clap refuses it as a usage error (exit 2).
fn cursor(text: &str) -> Result<SinceCursor, String> {
    if text.is_empty() {
        return Ok(SinceCursor(None));
    }
    Cursor::decode(text).map(|cursor| SinceCursor(Some(cursor)))
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    if args.fleet {
        return match crate::context::Context::discover(cli.dir.as_deref()) {
            Ok(context) => super::live::fleet(&context),
            Err(result) => result,
        };
    }
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
    if let Some(SinceCursor(cursor)) = &args.since {
        let change = match &context.view {
            Some(_) => match context.change(None, "status") {
                Ok(change) => Some(change),
                Err(result) => return result,
            },
            None => None,
        };
        let input = SinceInput {
            main: context.main.clone(),
            cursor: cursor.clone(),
            merged_only: args.merged,
            change,
        };
        let mut machine = Since::new(input, clock::now());
        return match run_agent(&context, &mut driver, &mut machine) {
            Ok((result, _)) => result,
            Err(result) => result,
        };
    }
    let change = match (&args.change, &context.view) {
        (None, None) => None,
        (named, _) => match context.change(named.as_deref(), "status") {
            Ok(change) => Some(change),
            Err(result) => return result,
        },
    };
    let input = StatusInput {
        change,
        main: context.main.clone(),
        flow: true,
    };
    let mut machine = Status::new(input, clock::now());
    match run_status(&context, &mut driver, &mut machine) {
        Ok(result) | Err(result) => result,
    }
}
