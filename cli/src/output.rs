//! Printing a result: one `bay.result/1` document through a pipe or with `--json`, one plain
//! sentence at a terminal. The exit code follows the decision.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use bay_core::result::BayResult;

/// Prints `result` as the CLI reference says, and returns the exit code it implies.
pub fn emit(result: &BayResult, json: bool) -> ExitCode {
    let document =
        serde_json::to_string(result).expect("a result is plain data and always serializes");
    let to_terminal = std::io::stdout().is_terminal();
    let mut stdout = std::io::stdout().lock();
    // A closed pipe is the reader's choice; nothing useful can be done about it here.
    if json || !to_terminal {
        let _ = writeln!(stdout, "{document}");
        if !json {
            let _ = writeln!(std::io::stderr(), "{}", result.say);
        }
    } else {
        let _ = writeln!(stdout, "{}", result.say);
    }
    ExitCode::from(result.exit_code())
}
