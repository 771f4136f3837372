//! `cargo bench -p bay --bench hook`: what `bay hook tool.before` costs, against a bare `git
//! rev-parse --git-dir` process on the same repository. Agents call this hook on every tool
//! call, so it must cost about one small Git process: the goal is at most 2. Ratios, measured
//! in one run on one machine; nothing fails on them.
//!
//! Two calls, each with Claude Code's payload on stdin, in a change's view: a Bash command
//! the deny list allows (the whole command line is judged), and an `Edit` of an unlocked path
//! (the other sessions' states are read for their holds).

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{BAY, bay, ms, paired, ratio, repository};

/// One run of `program args` in `dir` with `stdin`, timed; it must exit `code`.
fn timed(dir: &Path, program: &str, args: &[&str], stdin: &str, code: i32) -> Duration {
    let began = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the program starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin is written");
    let out = child.wait_with_output().expect("the program ends");
    let took = began.elapsed();
    assert_eq!(out.status.code(), Some(code), "{program} {args:?}: {out:?}");
    took
}

fn main() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let (_, clone) = repository(root.path(), "hook");
    let start = bay(&clone, &["start", "bench hook", "--paths", "src/"], &[]);
    let view = PathBuf::from(start["detail"]["view"].as_str().expect("a view"));
    let tree = view.display().to_string();
    let bash = format!(
        r#"{{"session_id":"bench","cwd":"{tree}","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"git status --short && cargo test -p bay 2>&1 | tail -n 20"}},"tool_use_id":"toolu_1"}}"#
    );
    let edit = format!(
        r#"{{"session_id":"bench","cwd":"{tree}","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{{"file_path":"{tree}/src/a.txt","old_string":"x","new_string":"y"}},"tool_use_id":"toolu_2"}}"#
    );
    // A few sessions of this clone, for the edit to read.
    for session in ["one", "two", "three"] {
        let step = format!(
            r#"{{"session_id":"{session}","cwd":"{tree}","hook_event_name":"PostToolBatch","tool_calls":[{{"tool_name":"Edit","tool_input":{{"file_path":"{tree}/src/{session}.txt"}}}}]}}"#
        );
        timed(&view, BAY, &["hook", "step.end"], &step, 0);
    }
    let floor = |dir: &Path| timed(dir, "git", &["rev-parse", "--git-dir"], "", 0);
    for _ in 0..3 {
        floor(&view);
        timed(&view, BAY, &["hook", "tool.before"], &bash, 0);
    }
    println!(
        "bay hook tool.before, median of {} paired runs:",
        support::RUNS
    );
    for (what, payload) in [
        ("a Bash command", &bash),
        ("an Edit of an unlocked path", &edit),
    ] {
        let (hook, git_floor) = paired(|_| {
            let hook = timed(&view, BAY, &["hook", "tool.before"], payload, 0);
            (hook, floor(&view))
        });
        println!(
            "  {what}: {:.2} ms; git rev-parse --git-dir {:.2} ms; ratio {:.2} (goal: at most 2)",
            ms(hook),
            ms(git_floor),
            ratio(hook, git_floor)
        );
    }
}
