//! `bay`: the command line. Thin over the core: each command builds its machine's input,
//! pumps it with the real driver, and prints the result.

// A command that cannot go on returns the result it prints as its error: large, and printed
// once, so boxing it would buy nothing.
#![allow(clippy::result_large_err)]

mod commands;
mod context;
mod local;
mod output;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

/// The merge layer for fleets of coding agents in one Git repository.
#[derive(Parser, Debug)]
#[command(
    name = "bay",
    version,
    disable_help_subcommand = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Run as if bay started in <PATH>, like `git -C`.
    #[arg(short = 'C', value_name = "PATH", global = true)]
    pub dir: Option<PathBuf>,
    /// Print only the bay.result/1 document, also at a terminal, with no text on stderr.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: commands::Command,
}

/// Exits with a usage error (exit 2, nothing on stdout): `message` and the usage of
/// `bay <command>` on stderr, as clap prints its own.
pub fn usage_error(command: &str, message: &str) -> ! {
    let mut cli = Cli::command();
    let mut usage = match cli.find_subcommand_mut(command) {
        Some(sub) => sub.clone().bin_name(format!("bay {command}")),
        None => cli,
    };
    usage
        .error(ErrorKind::MissingRequiredArgument, message)
        .exit()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match commands::run(&cli) {
        commands::Answer::Result(result) => *result,
        // A hook speaks its agent product's protocol, never a bay.result/1.
        commands::Answer::Product(code) => return code,
    };
    // Help at a terminal is a page for a person; everywhere else it is the document.
    if matches!(cli.command, commands::Command::Help(_))
        && !cli.json
        && std::io::stdout().is_terminal()
    {
        print!("{}", commands::help_page(&result));
        return ExitCode::SUCCESS;
    }
    output::emit(&result, cli.json)
}
