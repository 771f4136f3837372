//! One file per command. Each holds the command's arguments and one `run` that returns the
//! result to print.

mod abandon;
mod demo;
mod help;
mod merge;
mod runner;
mod start;
mod status;

use bay_core::result::BayResult;
use clap::Subcommand;

use crate::Cli;

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Open a change for an intent and make its view; or pick up a change by its id.
    Start(start::Args),
    /// Freeze the draft and ask for it to be merged; with --wait, merge it here.
    Merge(merge::Args),
    /// Give a change up.
    Abandon(abandon::Args),
    /// What a change's operation is doing, or what the queue holds.
    Status(status::Args),
    /// Drive queued operations to an outcome on this machine.
    Runner(runner::Args),
    /// Every command, flag and reason code; with --json, the whole contract.
    Help(help::Args),
    /// Run bay on a throwaway remote: two agents, one runner, a real check.
    Demo(demo::Args),
}

/// What each command writes, and what it never writes, in bay's own words.
pub const WRITES: [(&str, &str, &str); 7] = [
    (
        "start",
        "the change's record and the claim of its intent on the remote; its view, a folder under .git/bay/views",
        "your checkout's files; main",
    ),
    (
        "merge",
        "a request on the change's record and a queue place; with --wait, the checks' evidence and the merge into main",
        "your checkout's files",
    ),
    ("abandon", "an abandon step on the change's record", "the view's files; main"),
    ("status", "only fetched copies of the remote's refs", "your files; your branches; main"),
    (
        "runner",
        "run: the merges of queued changes into main, with their evidence",
        "your checkout's files",
    ),
    ("help", "nothing", "anything"),
    (
        "demo",
        "a throwaway remote and clones in a temporary folder, or in --dir",
        "the repository it runs in",
    ),
];

pub fn run(cli: &Cli) -> BayResult {
    match &cli.command {
        Command::Start(args) => start::run(cli, args),
        Command::Merge(args) => merge::run(cli, args),
        Command::Abandon(args) => abandon::run(cli, args),
        Command::Status(args) => status::run(cli, args),
        Command::Runner(args) => runner::run(cli, args),
        Command::Help(args) => help::run(args),
        Command::Demo(args) => demo::run(cli, args),
    }
}
