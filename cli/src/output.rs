//! Printing a result: one `bay.result/1` document through a pipe or with `--json`, one plain
//! sentence at a terminal. The exit code follows the decision. While a long command works, a
//! person at a terminal reads core's progress lines on stderr; a pipe or `--json` gets none.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use bay_core::machine::{Action, ActionId, Completion};
use bay_core::progress::Progress;
use bay_core::result::BayResult;
use bay_drivers::pump::Watch;

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

/// Whether a person reads progress: stderr is a terminal and `--json` was not given.
pub fn shows_progress(json: bool) -> bool {
    !json && std::io::stderr().is_terminal()
}

/// One progress line on stderr.
pub fn progress_line(line: &str) {
    // A closed stderr leaves nobody to tell.
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Prints the lines `progress` decides as the pump hands out actions and takes completions.
pub struct Terminal(pub Progress);

impl Watch for Terminal {
    fn action(&mut self, id: ActionId, action: &Action) {
        if let Some(line) = self.0.action(id, action) {
            progress_line(&line);
        }
    }

    fn done(&mut self, id: ActionId, completion: &Completion) {
        if let Some(line) = self.0.done(id, completion) {
            progress_line(&line);
        }
    }
}
