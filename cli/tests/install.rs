//! `bay install` against real Git, with a home folder of its own: HOME, the XDG folders and
//! PATH all point into the test's temporary folder, so no test reads or writes the real home.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use bay_core::adapter::{Adapter, Product};
use bay_core::skill::SKILL;
use serde_json::Value;
use support::home::*;
use support::*;

/// A remote whose main names `product` in `[agent]` (none for no table).
fn world(product: Option<&str>) -> World {
    let agent = product
        .map(|p| format!("\n[agent]\nproduct = \"{p}\"\n"))
        .unwrap_or_default();
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", &format!("{CONFIG}{agent}"), false),
        (".bay/policy.toml", &policy(""), false),
        (".bay/check", CHECK, true),
    ])
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).expect("the settings file is JSON")
}

#[test]
fn install_writes_the_program_the_skill_and_the_hook_entries_and_again_changes_nothing() {
    let world = world(Some("claude"));
    let home = Home::new();
    let ann = world.clone_as("ann");
    std::fs::create_dir_all(home.path().join(".claude-work/projects")).expect("mkdir");
    std::fs::create_dir_all(home.path().join(".claude-empty")).expect("mkdir");
    let own = home.path().join("own-claude");
    let own_dir = own.to_str().expect("a UTF-8 path");
    let first = home.install(&ann, &[], &[("CLAUDE_CONFIG_DIR", own_dir)]);
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(first.doc["decision"], "ok");

    let program = home.bin().join("bay");
    assert_eq!(
        std::fs::read(&program).expect("the program"),
        std::fs::read(BAY).expect("this bay")
    );
    assert!(sh_finds_bay(&home.on_path()), "runnable from PATH");
    let dirs: Vec<&str> = first.doc["detail"]["skill"]
        .as_array()
        .expect("skill rows")
        .iter()
        .map(|row| row["dir"].as_str().expect("a dir"))
        .collect();
    let expected: Vec<String> = [own.clone(), home.path().join(".claude")]
        .into_iter()
        .chain([home.path().join(".claude-work")])
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        dirs, expected,
        "own first, then ~/.claude, then ~/.claude-* with a config"
    );
    for dir in ["own-claude", ".claude", ".claude-work"] {
        assert_eq!(home.skill_at(dir).as_deref(), Some(SKILL), "{dir}");
    }
    assert_eq!(home.skill_at(".claude-empty"), None, "no config there");

    let settings = json(&ann.join(".claude/settings.json"));
    let adapter = Product::Claude.adapter();
    for event in adapter.events {
        assert_eq!(
            commands(&settings, event.event),
            [adapter.command(event.moment)],
            "{}",
            event.event
        );
    }
    let pre = &settings["hooks"]["PreToolUse"][0];
    assert_eq!(pre["hooks"][0]["timeout"], 30);
    assert_eq!(pre["hooks"][0]["onFailure"], "block");

    let local = |key: &str| {
        git(&ann, &["config", "--local", "--get", key])
            .trim()
            .to_owned()
    };
    assert_eq!(local("bay.main"), "main");
    assert_eq!(local("bay.remote"), "origin");
    assert!(!local("bay.machine").is_empty());
    assert_eq!(local("fetch.writeCommitGraph"), "true");
    assert!(
        !home.path().join(".gitconfig").exists() && !home.path().join(".config/git").exists(),
        "global Git config untouched"
    );
    assert!(
        !home.path().join(".claude/settings.json").exists(),
        "user-global Claude settings untouched"
    );
    assert_eq!(
        world.remote_ref("refs/heads/main"),
        Some(git(&ann, &["rev-parse", "origin/main"]).trim().to_owned()),
        "main unmoved"
    );

    let text = read(&ann.join(".claude/settings.json"));
    let second = home.install(&ann, &[], &[("CLAUDE_CONFIG_DIR", own_dir)]);
    assert_eq!(second.code, 0, "{second:?}");
    let detail = &second.doc["detail"];
    assert_eq!(detail["program"]["written"], false);
    assert!(
        detail["skill"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|row| row["written"] == false && row["was"] == "matches"),
        "{detail}"
    );
    assert_eq!(detail["git_config_set"], serde_json::json!({}));
    assert_eq!(detail["hooks"]["written"], false);
    assert_eq!(
        detail["commit_graph"]["written"], false,
        "filters are there"
    );
    assert_eq!(read(&ann.join(".claude/settings.json")), text);
}

#[test]
fn every_entry_another_tool_wrote_is_kept_in_place() {
    let world = world(Some("claude"));
    let home = Home::new();
    let ann = world.clone_as("ann");
    let theirs = r#"{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}]}],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "prettier --write ."}]}]
  },
  "env": {"FOO": "1"}
}
"#;
    write(&ann, ".claude/settings.json", theirs);
    let ran = home.install(&ann, &[], &[]);
    assert_eq!(ran.code, 0, "{ran:?}");
    let text = read(&ann.join(".claude/settings.json"));
    let settings: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        commands(&settings, "PreToolUse"),
        [
            "./guard.sh".to_owned(),
            Product::Claude
                .adapter()
                .command(bay_core::adapter::Moment::ToolBefore)
        ]
    );
    assert_eq!(commands(&settings, "PostToolUse"), ["prettier --write ."]);
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls:*)");
    let keys: Vec<usize> = ["\"permissions\"", "\"hooks\"", "\"env\""]
        .iter()
        .map(|key| text.find(key).expect("kept"))
        .collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "order kept: {text}");
    let again = home.install(&ann, &[], &[]);
    assert_eq!(again.doc["detail"]["hooks"]["written"], false);
    assert_eq!(read(&ann.join(".claude/settings.json")), text);
}

/// What Claude Code sends a `PreToolUse` hook for a shell command, as platform-facts A2 shows.
const PRE_TOOL_USE: &str = r#"{"session_id":"abc123","transcript_path":"/tmp/t.jsonl","cwd":"/repo","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push origin HEAD"},"tool_use_id":"toolu_01"}"#;

#[test]
fn each_claude_entry_exits_0_on_a_machine_without_bay() {
    let world = world(Some("claude"));
    let home = Home::new();
    let ann = world.clone_as("ann");
    assert_eq!(home.install(&ann, &[], &[]).code, 0);
    let settings = json(&ann.join(".claude/settings.json"));
    assert!(!sh_finds_bay(SYSTEM_PATH));
    for event in Product::Claude.adapter().events {
        for command in commands(&settings, event.event) {
            let mut child = Command::new("sh")
                .args(["-c", &command])
                .current_dir(&ann)
                .env_clear()
                .env("PATH", SYSTEM_PATH)
                .env("HOME", home.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sh runs");
            use std::io::Write;
            // The entry may end, without bay, before it reads the payload: a closed pipe is
            // what the product meets then too, and no failure of the entry.
            let written = child
                .stdin
                .take()
                .expect("stdin")
                .write_all(PRE_TOOL_USE.as_bytes());
            if let Err(e) = written {
                assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
            }
            let out = child.wait_with_output().expect("sh ends");
            assert_eq!(out.status.code(), Some(0), "{command}: {out:?}");
            assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
        }
    }
}

#[test]
fn hooks_to_land_is_named_until_main_holds_the_settings_file() {
    let world = world(Some("claude"));
    let home = Home::new();
    let ann = world.clone_as("ann");
    let first = home.install(&ann, &[], &[]);
    assert_eq!(
        first.doc["detail"]["hooks_to_land"], ".claude/settings.json",
        "{first:?}"
    );
    assert!(
        first.doc["detail"]["next"]
            .as_str()
            .is_some_and(|next| next.contains("bay save enable-hooks"))
    );
    // Committed here is not on main yet.
    git(&ann, &["add", ".claude/settings.json"]);
    git(&ann, &["commit", "--quiet", "-m", "bay's hooks"]);
    let committed = home.install(&ann, &[], &[]);
    assert_eq!(
        committed.doc["detail"]["hooks_to_land"],
        ".claude/settings.json"
    );
    git(&ann, &["reset", "--quiet", "--soft", "HEAD~1"]);
    // The step the result names lands it.
    let saved = bay(&ann, "ann", &["save", "enable-hooks"]);
    assert_eq!(saved.doc["decision"], "merged", "{saved:?}");
    let landed = home.install(&ann, &[], &[]);
    assert_eq!(landed.code, 0, "{landed:?}");
    assert!(
        landed.doc["detail"].get("hooks_to_land").is_none(),
        "{landed:?}"
    );
    // Another clone takes the entries from main, and an install there writes nothing.
    let bob = world.clone_as("bob");
    let there = home.install(&bob, &[], &[]);
    assert_eq!(there.doc["detail"]["hooks"]["written"], false, "{there:?}");
    assert!(there.doc["detail"].get("hooks_to_land").is_none());
}

#[test]
fn outside_path_install_stops_and_names_the_fix_writing_nothing() {
    let world = world(Some("claude"));
    let home = Home::new();
    let ann = world.clone_as("ann");
    let mut command = Command::new(BAY);
    command
        .env_clear()
        .current_dir(&ann)
        .args(["--json", "install"])
        .env("HOME", home.path())
        .env("PATH", SYSTEM_PATH);
    let ran = held(&mut command, &["install"]);
    assert_eq!(ran.code, 20, "{ran:?}");
    assert_eq!(ran.doc["decision"], "failed");
    let bin = home.bin().display().to_string();
    assert_eq!(ran.doc["detail"]["bin_dir"], bin.as_str());
    let fix = ran.doc["detail"]["fix"].as_str().expect("a fix");
    assert!(
        fix.contains(&format!("export PATH=\"{bin}:$PATH\"")),
        "{fix}"
    );
    assert!(
        ran.doc["say"]
            .as_str()
            .expect("say")
            .contains("not on PATH")
    );
    assert!(!home.bin().exists(), "no program");
    assert!(!home.path().join(".claude").exists(), "no skill");
    assert!(!ann.join(".claude").exists(), "no hook entries");
    assert!(
        git(&ann, &["config", "--local", "--get-regexp", "^bay\\."])
            .lines()
            .all(|line| line.starts_with("bay.runnername")),
        "no clone config"
    );
}

#[test]
fn codex_entries_go_to_codex_hooks_json_without_a_presence_check() {
    let world = world(Some("codex"));
    let home = Home::new();
    let ann = world.clone_as("ann");
    let ran = home.install(&ann, &[], &[]);
    assert_eq!(ran.doc["detail"]["hooks_to_land"], ".codex/hooks.json");
    assert!(!ann.join(".claude").exists());
    let settings = json(&ann.join(".codex/hooks.json"));
    assert_eq!(commands(&settings, "PreToolUse"), ["bay hook tool.before"]);
    assert_eq!(commands(&settings, "PostToolUse"), ["bay hook step.end"]);
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["hooks"][0]["timeout"],
        30
    );
    assert!(settings["hooks"]["PreToolUse"][0]["hooks"][0]["onFailure"].is_null());
}

#[test]
fn no_agent_product_on_main_means_no_entries_and_machine_means_no_repository() {
    let plain = world(None);
    let home = Home::new();
    let ann = plain.clone_as("ann");
    let off = home.install(&ann, &[], &[]);
    assert_eq!(off.doc["detail"]["hooks"], "off", "{off:?}");
    assert!(!ann.join(".claude").exists() && !ann.join(".codex").exists());

    let hooked = world(Some("claude"));
    let home = Home::new();
    let ann = hooked.clone_as("ann");
    let machine = home.install(&ann, &["--machine"], &[]);
    assert_eq!(machine.code, 0, "{machine:?}");
    assert_eq!(machine.doc["detail"]["installed"], "machine");
    assert!(machine.doc["detail"].get("hooks").is_none());
    assert!(!ann.join(".claude").exists(), "no hook entries");
    assert!(
        git(&ann, &["config", "--local", "--get-regexp", "^bay\\."])
            .lines()
            .all(|line| line.starts_with("bay.runnername")),
        "no clone config"
    );
    assert_eq!(home.skill_at(".claude").as_deref(), Some(SKILL));
    // Outside any clone, only the machine's part.
    let nowhere = tempfile::tempdir().expect("a folder");
    let outside = home.install(nowhere.path(), &[], &[]);
    assert_eq!(outside.code, 0, "{outside:?}");
    assert_eq!(outside.doc["detail"]["installed"], "machine");
}

#[test]
fn main_and_remote_are_recorded_from_the_flags() {
    let world = world(Some("claude"));
    let home = Home::new();
    let ann = world.clone_calling_it("ann", "upstream");
    let ran = home.install(&ann, &["--main", "main", "--remote", "upstream"], &[]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(
        git(&ann, &["config", "--get", "bay.remote"]).trim(),
        "upstream"
    );
    assert_eq!(ran.doc["detail"]["hooks_to_land"], ".claude/settings.json");
    let bad = home.install(&ann, &["--main", "no such..branch"], &[]);
    assert_eq!(bad.doc["decision"], "failed", "{bad:?}");
}

#[test]
fn help_lists_the_adapters_install_writes_entries_from() {
    let nowhere = tempfile::tempdir().expect("a folder");
    let help = bay(nowhere.path(), "ann", &["help"]);
    let adapters = help.doc["detail"]["adapters"]
        .as_array()
        .expect("detail.adapters");
    let products: Vec<&str> = adapters
        .iter()
        .map(|a| a["product"].as_str().expect("a product"))
        .collect();
    assert_eq!(products, ["claude", "codex"]);
    for (listed, adapter) in adapters.iter().zip(Adapter::all()) {
        assert_eq!(listed["settings_file"], adapter.settings_file);
        assert_eq!(listed["floor"], adapter.floor);
        assert!(!listed["cannot_see"].as_array().expect("a list").is_empty());
        let events: Vec<(&str, &str)> = listed["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| {
                (
                    e["event"].as_str().expect("an event"),
                    e["moment"].as_str().expect("a moment"),
                )
            })
            .collect();
        let table: Vec<(&str, &str)> = adapter
            .events
            .iter()
            .map(|e| (e.event, e.moment.as_str()))
            .collect();
        assert_eq!(events, table);
    }
    let moments: std::collections::BTreeSet<&str> = adapters
        .iter()
        .flat_map(|a| a["events"].as_array().expect("events").iter())
        .filter_map(|e| e["moment"].as_str())
        .collect();
    assert_eq!(moments.len(), 11, "every moment of the spec");
}
