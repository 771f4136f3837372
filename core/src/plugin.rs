//! The hold plugin's answer, judged.
//!
//! A `[plugin.hold] command` is asked `status` and answers `{"held": true|false, "reason":
//! "..."}`. bay lets main take ordinary changes only on a readable "not held": an answer it
//! cannot read (the program did not start, exited non-zero, ran past its timeout, printed too
//! much or anything but that one object) holds main, so a broken plugin fails closed, never
//! open. The driver only runs the program and reports; this judge is pure, so the simulator
//! and the fuzzer judge exactly as a runner does.

use serde::Deserialize;

use crate::config::PluginCommand;
use crate::git::Oid;
use crate::machine::{PluginExit, PluginRun};

/// The only variables of the runner's environment a plugin gets, the hold plugin and the
/// notify plugin alike: what a plugin sees is decided here, and the driver passes just these.
pub const PLUGIN_ENV: [&str; 2] = ["PATH", "HOME"];

/// The word bay asks the hold plugin with.
pub const HOLD_STATUS: &str = "status";

/// The longest answer read. An answer is one small object; more is no answer.
pub const MAX_ANSWER_BYTES: usize = 4096;

/// The most stdout a driver keeps: one byte over the limit, so that the judge sees an answer
/// that is too long as too long without the driver holding all of it.
pub const STDOUT_CAP: usize = MAX_ANSWER_BYTES + 1;

/// The longest reason kept, in characters: it is shown in `detail.hold` and in the release
/// step's why, one line each.
pub const MAX_REASON_CHARS: usize = 200;

/// The run that asks `plugin` whether main is held, with its program from main's tip `main`.
pub fn hold_call(plugin: &PluginCommand, main: &Oid) -> PluginRun {
    let mut args = plugin.args.clone();
    args.push(HOLD_STATUS.to_owned());
    PluginRun {
        commit: main.clone(),
        program: plugin.program.clone(),
        args,
        stdin: Vec::new(),
        timeout_s: plugin.timeout_s,
    }
}

/// The run that hands the notify plugin one event (`bay.event/1`, as JSON) on stdin, with its
/// program from main's tip `main`. Its exit says delivered (0) or lost; bay never retries.
pub fn notify_call(plugin: &PluginCommand, main: &Oid, event: &str) -> PluginRun {
    PluginRun {
        commit: main.clone(),
        program: plugin.program.clone(),
        args: plugin.args.clone(),
        stdin: event.as_bytes().to_vec(),
        timeout_s: plugin.timeout_s,
    }
}

/// The one answer bay reads. Any other key, or a value of another type, makes it unreadable.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    held: bool,
    #[serde(default)]
    reason: Option<String>,
}

/// Judges one run of the hold plugin: `None` when it answered, readably, that main is not
/// held; else why main is held, bounded to one line of at most [`MAX_REASON_CHARS`].
pub fn judge_hold(exit: &PluginExit) -> Option<String> {
    let stdout = match exit {
        PluginExit::NotStarted(why) => {
            return Some(bounded(&format!(
                "the hold plugin could not start ({why}), so main counts as held"
            )));
        }
        PluginExit::TimedOut => {
            return Some(
                "the hold plugin ran past its timeout_s, so main counts as held".to_owned(),
            );
        }
        PluginExit::Exited {
            code: Some(0),
            stdout,
        } => stdout,
        PluginExit::Exited {
            code: Some(code), ..
        } => {
            return Some(format!(
                "the hold plugin exited with {code}, so main counts as held"
            ));
        }
        PluginExit::Exited { code: None, .. } => {
            return Some("a signal ended the hold plugin, so main counts as held".to_owned());
        }
    };
    if stdout.len() > MAX_ANSWER_BYTES {
        return Some(format!(
            "the hold plugin printed more than {MAX_ANSWER_BYTES} bytes, so main counts as held"
        ));
    }
    match serde_json::from_slice::<Answer>(stdout) {
        Ok(Answer { held: false, .. }) => None,
        Ok(Answer {
            held: true,
            reason: Some(reason),
        }) if !reason.trim().is_empty() => Some(bounded(&reason)),
        Ok(Answer { held: true, .. }) => {
            Some("the hold plugin answers held and gives no reason".to_owned())
        }
        Err(error) => Some(bounded(&format!(
            "the hold plugin's answer is not {{\"held\": true|false, \"reason\": \"...\"}} \
             ({error}), so main counts as held"
        ))),
    }
}

/// `text` on one line (control characters become spaces), cut to [`MAX_REASON_CHARS`].
fn bounded(text: &str) -> String {
    let line: String = text
        .trim()
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.chars().count() <= MAX_REASON_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_REASON_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32, stdout: &str) -> PluginExit {
        PluginExit::Exited {
            code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
        }
    }

    #[test]
    fn only_a_readable_not_held_lets_main_take_changes() {
        assert_eq!(judge_hold(&exited(0, r#"{"held": false}"#)), None);
        assert_eq!(
            judge_hold(&exited(0, "{\"held\":false,\"reason\":\"all clear\"}\n")),
            None
        );
        assert_eq!(
            judge_hold(&exited(0, r#"{"held": true, "reason": "incident 42"}"#)).as_deref(),
            Some("incident 42")
        );
        let silent = judge_hold(&exited(0, r#"{"held": true}"#)).expect("held");
        assert!(silent.contains("no reason"), "{silent}");
    }

    #[test]
    fn an_answer_bay_cannot_read_holds_main() {
        for garbage in [
            "",
            "no",
            "false",
            "{}",
            r#"{"held": "false"}"#,
            r#"{"held": 0}"#,
            r#"{"held": null}"#,
            r#"{"held": false, "until": "tomorrow"}"#,
            r#"{"held": false, "reason": 3}"#,
            r#"{"held": false, "held": false}"#,
            r#"{"held": false} {"held": false}"#,
            r#"[{"held": false}]"#,
        ] {
            let why = judge_hold(&exited(0, garbage)).unwrap_or_else(|| panic!("{garbage:?}"));
            assert!(why.contains("counts as held"), "{garbage:?}: {why}");
        }
        let invalid_utf8 = PluginExit::Exited {
            code: Some(0),
            stdout: b"{\"held\": false, \"reason\": \"\xff\"}".to_vec(),
        };
        assert!(judge_hold(&invalid_utf8).is_some());
    }

    #[test]
    fn a_failed_run_holds_main_and_says_how_it_failed() {
        let nonzero = judge_hold(&exited(3, r#"{"held": false}"#)).expect("held");
        assert!(nonzero.contains("exited with 3"), "{nonzero}");
        let signal = PluginExit::Exited {
            code: None,
            stdout: br#"{"held": false}"#.to_vec(),
        };
        assert!(judge_hold(&signal).expect("held").contains("signal"));
        let late = judge_hold(&PluginExit::TimedOut).expect("held");
        assert!(late.contains("timeout_s"), "{late}");
        let missing = PluginExit::NotStarted("no scripts/bay-hold at main".into());
        let why = judge_hold(&missing).expect("held");
        assert!(why.contains("no scripts/bay-hold at main"), "{why}");
    }

    #[test]
    fn answers_and_reasons_are_bounded() {
        let padded = format!("{{\"held\": false}}{}", " ".repeat(MAX_ANSWER_BYTES));
        let why = judge_hold(&exited(0, &padded)).expect("too long is no answer");
        assert!(why.contains("more than 4096 bytes"), "{why}");
        let fits = format!("{{\"held\": false}}{}", " ".repeat(MAX_ANSWER_BYTES - 15));
        assert_eq!(fits.len(), MAX_ANSWER_BYTES);
        assert_eq!(judge_hold(&exited(0, &fits)), None);

        let long = format!(
            "{{\"held\": true, \"reason\": \"line one\\nline two {}\"}}",
            "é".repeat(500)
        );
        let reason = judge_hold(&exited(0, &long)).expect("held");
        assert_eq!(reason.chars().count(), MAX_REASON_CHARS);
        assert!(reason.starts_with("line one line two é"), "{reason}");
        assert!(reason.ends_with('…'));
    }

    #[test]
    fn the_plugin_is_asked_status_after_its_own_words() {
        let plugin = PluginCommand {
            program: "scripts/bay-hold".into(),
            args: vec!["--team".into(), "infra".into()],
            timeout_s: 7,
        };
        let main = Oid::parse(&"c".repeat(40)).expect("an oid");
        let run = hold_call(&plugin, &main);
        assert_eq!(run.args, ["--team", "infra", "status"]);
        assert_eq!(
            (run.commit, run.program.as_str(), run.timeout_s),
            (main, "scripts/bay-hold", 7)
        );
        let detail =
            serde_json::to_value(crate::config::MainHold::plugin("incident")).expect("plain data");
        assert_eq!(
            detail,
            serde_json::json!({"source": "plugin", "reason": "incident", "end": null})
        );
    }
}
