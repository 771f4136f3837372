//! `bay hook` against real Git: the payloads both products send (`fixtures/hooks/`), fed to
//! the very command line `bay install` wrote into the settings file, run by `sh -c` as the
//! product runs it, with bay on the PATH of a home folder of the test's own.

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::home::*;
use support::*;

/// A remote whose main names `product` in `[agent]`, a clone of it with bay installed, and a
/// change started there whose view edits `src/greeting.txt`.
struct Setup {
    world: World,
    home: Home,
    settings: Value,
    change: String,
    view: std::path::PathBuf,
}

fn setup(product: &str, settings_file: &str) -> Setup {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}\n[agent]\nproduct = \"{product}\"\n"),
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ]);
    let home = Home::new();
    let ann = world.clone_as("ann");
    let settings = home.installed(&ann, settings_file);
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    Setup {
        world,
        home,
        settings,
        change,
        view,
    }
}

impl Setup {
    /// Runs the entry `bay install` wrote for `event` with `fixture` on stdin, in the view.
    fn entry(&self, event: &str, fixture: &str) -> Output {
        let command = commands(&self.settings, event)
            .pop()
            .unwrap_or_else(|| panic!("no entry for {event}"));
        self.run(&command, fixture)
    }

    fn run(&self, command: &str, fixture: &str) -> Output {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hooks")
            .join(fixture);
        let payload = std::fs::read_to_string(&path)
            .expect("a fixture")
            .replace("$TREE", &self.view.display().to_string());
        self.home.run_entry(command, &self.view, "ann", &payload)
    }

    fn record(&self, session: &str) -> Vec<Value> {
        let git_dir = git(&self.view, &["rev-parse", "--git-common-dir"]);
        let dir = self
            .view
            .join(git_dir.trim())
            .join("bay/sessions")
            .join(session);
        std::fs::read_to_string(dir.join("record.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).expect("a row"))
            .collect()
    }
}

const CLAUDE_SESSION: &str = "3f1c2a9e-0d4b-4c52-9a7e-1b2c3d4e5f60";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn claude_s_entries_deny_judge_record_ask_and_checkpoint() {
    let s = setup("claude", ".claude/settings.json");

    let denied = s.entry("PreToolUse", "claude/PreToolUse-Bash.json");
    assert_eq!(denied.status.code(), Some(2), "{denied:?}");
    assert!(text(&denied.stderr).contains("SHELL_DENIED"), "{denied:?}");
    let allowed = s.entry("PreToolUse", "claude/PreToolUse-Bash-allowed.json");
    assert_eq!(allowed.status.code(), Some(0), "{allowed:?}");
    assert!(allowed.stdout.is_empty() && allowed.stderr.is_empty());

    let started = s.entry("SessionStart", "claude/SessionStart.json");
    assert_eq!(started.status.code(), Some(0), "{started:?}");
    let said: Value = serde_json::from_slice(&started.stdout).expect("JSON context");
    let context = said["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default();
    assert!(
        context.contains(&s.change) && context.contains("src"),
        "{context}"
    );

    let step = s.entry("PostToolBatch", "claude/PostToolBatch.json");
    assert_eq!(step.status.code(), Some(0), "{step:?}");
    let held = s.entry("PreToolUse", "claude/PreToolUse-Write.json");
    assert_eq!(
        held.status.code(),
        Some(2),
        "another session wrote it: {held:?}"
    );
    assert!(text(&held.stderr).contains("PATH_HELD"), "{held:?}");
    let own = s.entry("PreToolUse", "claude/PreToolUse-Edit.json");
    assert_eq!(own.status.code(), Some(0), "the holder's own edit: {own:?}");

    let misnamed = s.entry("PostToolBatch", "claude/PreToolUse-Bash-allowed.json");
    assert_eq!(misnamed.status.code(), Some(2), "{misnamed:?}");
    assert!(
        text(&misnamed.stderr).contains(r#""misnamed":true"#),
        "{misnamed:?}"
    );
    let unknown = s.run(
        "exec bay hook tool.after",
        "claude/PreToolUse-Bash-allowed.json",
    );
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");

    let stop = s.entry("Stop", "claude/Stop.json");
    let asked: Value = serde_json::from_slice(&stop.stdout).expect("JSON");
    assert_eq!(asked["decision"], "block", "{stop:?}");
    assert!(
        asked["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("bay merge")
    );
    let again = s.entry("Stop", "claude/Stop-active.json");
    assert!(
        again.stdout.is_empty() && again.status.code() == Some(0),
        "{again:?}"
    );

    let ended = s.entry("SessionEnd", "claude/SessionEnd.json");
    assert_eq!(ended.status.code(), Some(0), "{ended:?}");
    let checkpoint = format!("refs/bay/checkpoints/{}", s.change);
    let commit = git(&s.view, &["rev-parse", "--verify", &checkpoint]);
    let saved = git(
        &s.view,
        &["show", &format!("{}:src/greeting.txt", commit.trim())],
    );
    assert_eq!(saved, "Hi\n");
    let status = git(&s.view, &["status", "--porcelain"]);
    assert!(!status.is_empty(), "the edits stay unsaved for bay merge");

    let rows = s.record(CLAUDE_SESSION);
    let verdicts: Vec<&str> = rows.iter().filter_map(|r| r["verdict"].as_str()).collect();
    assert!(verdicts.contains(&"blocked(SHELL_DENIED)"), "{verdicts:?}");
    assert!(
        verdicts.contains(&"blocked(HOOK_INPUT_INVALID)"),
        "{verdicts:?}"
    );
    assert!(verdicts.contains(&"asked"), "{verdicts:?}");
    let record = serde_json::to_string(&rows).expect("rows");
    assert!(
        !record.contains("push --force"),
        "never the command's text: {record}"
    );
    assert_eq!(rows[0]["permission_mode"], "bypassPermissions");
    assert_eq!(rows[0]["actor_source"], "env");
    assert!(
        rows.iter()
            .any(|r| r["written"] == serde_json::json!(["src/a.txt"]))
    );
    let _ = &s.world;
}

#[test]
fn codex_s_entries_deny_a_wrapped_reset_and_let_a_patch_through() {
    let s = setup("codex", ".codex/hooks.json");
    let denied = s.entry("PreToolUse", "codex/PreToolUse-Bash.json");
    assert_eq!(denied.status.code(), Some(2), "{denied:?}");
    assert!(text(&denied.stderr).contains("SHELL_DENIED"), "{denied:?}");
    let patch = s.entry("PreToolUse", "codex/PreToolUse-apply_patch.json");
    assert_eq!(patch.status.code(), Some(0), "{patch:?}");
    let step = s.entry("PostToolUse", "codex/PostToolUse.json");
    assert_eq!(step.status.code(), Some(0), "{step:?}");
    let stop = s.entry("Stop", "codex/Stop.json");
    assert_eq!(
        stop.status.code(),
        Some(0),
        "a Codex stop never blocks: {stop:?}"
    );
    assert!(
        stop.stdout.is_empty() && text(&stop.stderr).contains("bay merge"),
        "{stop:?}"
    );
}

#[test]
fn the_ask_to_save_names_a_renamed_file_by_its_paths() {
    let s = setup("claude", ".claude/settings.json");
    git(
        &s.view,
        &["mv", "--sparse", "src/greeting.txt", "src/hello.txt"],
    );
    let stop = s.entry("Stop", "claude/Stop.json");
    let asked: Value = serde_json::from_slice(&stop.stdout).expect("JSON");
    let reason = asked["reason"].as_str().unwrap_or_default();
    // A rename is the old path gone and the new one added, each whole.
    assert!(
        reason.contains("src/greeting.txt") && reason.contains("src/hello.txt"),
        "{reason}"
    );
}
