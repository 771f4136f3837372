//! Where a command's time went, from Git's own trace: run the command with
//! `GIT_TRACE2_EVENT=<file>` (bay passes `GIT_TRACE*` on to the `git` it starts) and read the
//! file back as the `git` processes bay started, each with its arguments and how long it ran.
//! The trace slows every `git` a little.

use std::path::Path;

/// One `git` process that bay started (not the processes that one started in turn, such as
/// the `upload-pack` a local fetch runs).
#[derive(Clone, Debug)]
pub struct Process {
    /// The subcommand: `fetch`, `push`, `cat-file`, ...
    pub command: String,
    /// Every argument after `git`.
    pub args: Vec<String>,
    pub seconds: f64,
}

impl Process {
    /// The arguments that are not options, after the subcommand: for a fetch or a push, the
    /// remote and then the refspecs.
    pub fn operands(&self) -> Vec<&str> {
        let at = self
            .args
            .iter()
            .position(|a| *a == self.command)
            .map_or(0, |at| at + 1);
        self.args[at..]
            .iter()
            .map(String::as_str)
            .filter(|a| !a.starts_with('-'))
            .collect()
    }
}

/// The processes in a trace file, in the order they started.
pub fn processes(events: &Path) -> Vec<Process> {
    let text = std::fs::read_to_string(events).unwrap_or_default();
    let mut started: Vec<(String, Process)> = Vec::new();
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let sid = event["sid"].as_str().unwrap_or_default();
        // A process bay started has a session id of its own; its children add `/...`.
        if sid.contains('/') {
            continue;
        }
        match event["event"].as_str() {
            Some("start") => {
                let argv: Vec<String> = event["argv"]
                    .as_array()
                    .map(|argv| {
                        argv.iter()
                            .skip(1)
                            .filter_map(|a| a.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                started.push((
                    sid.to_string(),
                    Process {
                        command: String::new(),
                        args: argv,
                        seconds: 0.0,
                    },
                ));
            }
            // The subcommand as Git resolved it, past `-C <dir>`, `-c <key=value>` and the like.
            Some("cmd_name") => {
                if let Some((_, process)) = started.iter_mut().rev().find(|(s, _)| s == sid) {
                    process.command = event["name"].as_str().unwrap_or_default().to_string();
                }
            }
            Some("exit") => {
                if let Some((_, process)) = started.iter_mut().rev().find(|(s, _)| s == sid) {
                    process.seconds = event["t_abs"].as_f64().unwrap_or_default();
                }
            }
            _ => {}
        }
    }
    started.into_iter().map(|(_, process)| process).collect()
}
