//! `bay hook`'s notices against real Git: a session in a change's view hears, once each and
//! only from what this clone last fetched, that its merge was refused for a failed check,
//! that another change merged on its paths, that its queued merge conflicts early, and that
//! no runner runs. The entries are the ones `bay install` wrote, run by `sh -c` as the
//! product runs them.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use support::home::*;
use support::*;

struct Session {
    home: Home,
    settings: Value,
    view: PathBuf,
}

impl Session {
    /// Runs the entry `bay install` wrote for `event` with `fixture` on stdin, in the view.
    fn entry(&self, event: &str, fixture: &str) -> Output {
        let command = commands(&self.settings, event)
            .pop()
            .unwrap_or_else(|| panic!("no entry for {event}"));
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hooks")
            .join(fixture);
        let payload = std::fs::read_to_string(&path)
            .expect("a fixture")
            .replace("$TREE", &self.view.display().to_string());
        let out = self.home.run_entry(&command, &self.view, "ann", &payload);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        out
    }

    /// What a Claude Code entry added to the model's context; `""` for nothing.
    fn context(&self, event: &str, fixture: &str) -> String {
        let out = self.entry(event, fixture);
        if out.stdout.is_empty() {
            return String::new();
        }
        let said: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(said["hookSpecificOutput"]["hookEventName"], event);
        said["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .expect("context")
            .to_owned()
    }

    fn prompt(&self) -> String {
        self.context("UserPromptSubmit", "claude/UserPromptSubmit.json")
    }
}

fn world(product: &str) -> World {
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}\n[agent]\nproduct = \"{product}\"\n"),
            false,
        ),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ])
}

/// ann's clone with bay's entries installed, and her change's view, whose merge of an empty
/// `src/greeting.txt` the check refused.
fn refused(world: &World, settings_file: &str) -> (Session, String) {
    let home = Home::new();
    let ann = world.clone_as("ann");
    let settings = home.installed(&ann, settings_file);
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "", &[]);
    let merge = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merge.doc["reason"], "CHECK_FAILED", "{merge:?}");
    let session = Session {
        home,
        settings,
        view,
    };
    (session, change)
}

#[test]
fn claude_hears_each_notice_once_from_what_the_clone_last_fetched() {
    let world = world("claude");
    let (s, change) = refused(&world, ".claude/settings.json");

    // The refusal, at the next prompt, once.
    let told = s.prompt();
    assert_eq!(told.matches("CHECK_FAILED").count(), 1, "{told}");
    assert!(
        told.contains(&change) && told.contains("check files failed"),
        "{told}"
    );
    assert!(told.contains(&format!("bay status {change}")), "{told}");
    assert_eq!(s.prompt(), "", "said once");
    let started = s.context("SessionStart", "claude/SessionStart.json");
    assert!(started.contains("works in the view"), "{started}");
    assert!(
        !started.contains("CHECK_FAILED"),
        "once across moments: {started}"
    );

    // bob merges on ann's declared path: nothing until ann's clone fetches main.
    let bob = world.merged("bob", "greet too", "src/greeting.txt", "Hey\n");
    assert_eq!(s.prompt(), "", "the hook never fetches");
    bay(&s.view, "ann", &["status"]);
    let told = s.prompt();
    assert!(
        told.contains(&format!("change {bob} merged")) && told.contains("src/greeting.txt"),
        "{told}"
    );
    assert!(told.contains(&format!("bay start {change}")), "{told}");
    assert_eq!(s.prompt(), "", "said once");

    // ann asks again without refreshing: her queued draft conflicts with bob's merge.
    write(&s.view, "src/greeting.txt", "Hi\n");
    let merge = bay(&s.view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    bay(&s.view, "ann", &["status"]);
    let told = s.prompt();
    assert!(
        told.contains("conflicts with main") && told.contains("src/greeting.txt"),
        "{told}"
    );
    // The runner that merged bob's change wrote its presence holding an operation, so it
    // counts as fresh for its progress deadline, as `bay status` judges it.
    assert!(!told.contains("no runner"), "{told}");
    assert_eq!(s.prompt(), "", "said once");
}

#[test]
fn codex_hears_a_refusal_and_no_runner_on_stderr_after_its_start() {
    let world = world("codex");
    let (s, change) = refused(&world, ".codex/hooks.json");
    let told = s.entry("UserPromptSubmit", "codex/UserPromptSubmit.json");
    assert!(told.stdout.is_empty(), "{told:?}");
    let stderr = String::from_utf8_lossy(&told.stderr);
    assert!(
        stderr.contains("CHECK_FAILED") && stderr.contains(&change),
        "{stderr}"
    );
    let again = s.entry("UserPromptSubmit", "codex/UserPromptSubmit.json");
    assert!(
        again.stdout.is_empty() && again.stderr.is_empty(),
        "{again:?}"
    );

    // Asked again with no runner anywhere: once `bay status` fetched the queue, the session
    // hears that no runner runs, once.
    write(&s.view, "src/greeting.txt", "Hi\n");
    let merge = bay(&s.view, "ann", &["merge"]);
    assert_eq!(merge.doc["decision"], "queued", "{merge:?}");
    bay(&s.view, "ann", &["status"]);
    let told = s.entry("UserPromptSubmit", "codex/UserPromptSubmit.json");
    let stderr = String::from_utf8_lossy(&told.stderr);
    assert!(
        stderr.contains("no runner runs") && stderr.contains("1 operation(s) wait"),
        "{stderr}"
    );
    assert!(stderr.contains("bay runner run"), "{stderr}");
    let again = s.entry("UserPromptSubmit", "codex/UserPromptSubmit.json");
    assert!(again.stderr.is_empty(), "said once: {again:?}");
}
