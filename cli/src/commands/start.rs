//! `bay start <intent> --paths <path>...` and `bay start <change>`.

use bay_core::git::refs;
use bay_core::id::ChangeId;
use bay_core::machine::start::{Start, StartInput, StartTarget};
use bay_core::result::BayResult;
use bay_drivers::clock;

use super::{drive, prepare, with_actor};
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// What the work is, in a few words (or a card id); or the id of a change to pick up.
    #[arg(value_name = "INTENT_OR_CHANGE")]
    pub target: String,
    /// The paths this change needs: its view holds only these.
    #[arg(long, num_args = 1.., value_name = "PATH")]
    pub paths: Vec<String>,
    /// Open the intent's next change instead of adopting its ended one.
    #[arg(long)]
    pub new: bool,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let prepared = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    // A change id whose record is on the remote names that change; anything else is an intent.
    let target = match ChangeId::parse(&args.target) {
        Ok(change) if !args.new && prepared.remote.contains_key(&refs::change(&change)) => {
            StartTarget::Change(change)
        }
        _ => StartTarget::Intent {
            intent: args.target.clone(),
            paths: args.paths.clone(),
        },
    };
    let context = prepared.context.clone();
    let input = StartInput {
        target,
        actor: context.actor.clone(),
        main: context.main.clone(),
        new: args.new,
        entropy: clock::entropy(),
    };
    let mut machine = Start::new(input, clock::now());
    with_actor(
        drive(
            &mut prepared.local.driver(),
            &mut machine,
            prepared.fetched_at,
        ),
        &context,
    )
}
