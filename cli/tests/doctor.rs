//! `bay doctor` and the runner's own floor against real Git, with a home folder and a PATH of
//! their own: fake `claude` programs print versions below and at the adapter table's floor,
//! settings files turn hooks off, a skill copy differs, the remote goes away, a check
//! variable is unset, and a PATH without `bwrap` leaves no sandbox.

mod support;

use std::path::Path;
use std::process::Command;

use bay_core::adapter::Product;
use bay_core::hook_settings;
use bay_core::skill::SKILL;
use support::home::*;
use support::*;

/// A remote whose main names Claude Code, holds bay's hook entries, and has a check that
/// passes `CHECK_TOKEN` from the runner.
fn world() -> World {
    let settings = hook_settings::merge(Product::Claude.adapter(), None)
        .expect("a new settings file")
        .text;
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}\n[agent]\nproduct = \"claude\"\n"),
            false,
        ),
        (
            ".bay/policy.toml",
            &policy("env = [\"CHECK_TOKEN\"]\n"),
            false,
        ),
        (".bay/check", CHECK, true),
        (".claude/settings.json", &settings, false),
    ])
}

/// A home folder of the test's own with this bay's skill.
fn home() -> Home {
    let home = Home::new();
    write(home.path(), ".claude/skills/bay/SKILL.md", SKILL);
    home
}

/// A `claude` on `home`'s PATH that prints `version` as Claude Code does.
fn claude(home: &Home, version: &str) {
    write_program(
        &home.bin(),
        "claude",
        &format!("#!/bin/sh\necho '{version} (Claude Code)'\n"),
    );
}

/// Runs `bay --json doctor <args>` in `dir` with `home`, its PATH and `env`.
fn doctor(home: &Home, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut all = vec!["doctor"];
    all.extend(args);
    home.bay(dir, &home.on_path(), &all, env)
}

fn row<'a>(ran: &'a Ran, name: &str) -> &'a serde_json::Value {
    ran.doc["detail"]["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == name))
        .unwrap_or_else(|| panic!("no {name} row: {}", ran.doc))
}

fn refused(ran: &Ran, code: &str) {
    assert_eq!(ran.code, 10, "{}", ran.doc);
    assert_eq!(ran.doc["decision"], "blocked");
    assert_eq!(ran.doc["reason"], code, "{}", ran.doc);
}

#[test]
fn doctor_is_green_at_every_floor_and_names_each_red_row_with_its_fix() {
    let world = world();
    let clone = world.clone_as("ann");
    let home = home();
    claude(&home, "2.1.302");

    let ready = doctor(&home, &clone, &[], &[]);
    assert_eq!(ready.code, 0, "{}", ready.doc);
    assert_eq!(ready.doc["decision"], "ok");
    let say = ready.doc["say"].as_str().unwrap_or_default();
    assert!(
        say.starts_with("This machine is ready for bay (bay ") && say.contains("claude 2.1.302"),
        "{say}"
    );
    assert_eq!(row(&ready, "hooks")["state"], "green");
    assert_eq!(row(&ready, "agent")["found"], "2.1.302");

    // Claude Code below the adapter table's floor, then not installed at all.
    claude(&home, "2.1.99");
    let old = doctor(&home, &clone, &[], &[]);
    refused(&old, "TOOL_BELOW_FLOOR");
    assert_eq!(old.doc["detail"]["tool"], "claude");
    assert_eq!(old.doc["detail"]["floor"], "2.1.302");
    std::fs::remove_file(home.bin().join("claude")).expect("the fake is there");
    let absent = doctor(&home, &clone, &[], &[]);
    refused(&absent, "TOOL_ABSENT");
    assert_eq!(absent.doc["detail"]["tool"], "claude");
    claude(&home, "2.2.0");

    // A local settings file that turns every hook off.
    write(
        &clone,
        ".claude/settings.local.json",
        "{\"disableAllHooks\": true}\n",
    );
    let off = doctor(&home, &clone, &[], &[]);
    refused(&off, "HOOKS_MISSING");
    assert_eq!(
        row(&off, "hooks")["turned_off_by"][0]["key"],
        "disableAllHooks"
    );
    assert!(
        row(&off, "hooks")["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("disableAllHooks")),
        "{}",
        off.doc
    );
    std::fs::remove_file(clone.join(".claude/settings.local.json")).expect("written above");

    // A skill copy another bay wrote.
    write(
        home.path(),
        ".claude/skills/bay/SKILL.md",
        "an older skill\n",
    );
    let skill = doctor(&home, &clone, &[], &[]);
    refused(&skill, "SKILL_MISMATCH");
    assert_eq!(row(&skill, "skill")["dirs"][0]["state"], "differs");
    write(home.path(), ".claude/skills/bay/SKILL.md", SKILL);

    // A remote that does not answer.
    git(
        &clone,
        &["remote", "set-url", "origin", "/nowhere/remote.git"],
    );
    let gone = doctor(&home, &clone, &[], &[]);
    refused(&gone, "REMOTE_UNREACHABLE");
    assert_eq!(gone.doc["detail"]["red"], serde_json::json!(["remote"]));
    let remote = world.remote.display().to_string();
    git(&clone, &["remote", "set-url", "origin", &remote]);
    assert_eq!(doctor(&home, &clone, &[], &[]).code, 0);
}

#[test]
fn hooks_are_red_until_main_holds_bay_s_entries_and_old_names_are_listed() {
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}\n[agent]\nproduct = \"claude\"\n"),
            false,
        ),
        (
            ".claude/settings.json",
            r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"bay hook tool_before"}]}]}}"#,
            false,
        ),
    ]);
    let clone = world.clone_as("ann");
    let home = home();
    claude(&home, "2.1.302");
    let ran = doctor(&home, &clone, &[], &[]);
    refused(&ran, "HOOKS_MISSING");
    let hooks = row(&ran, "hooks");
    assert_eq!(hooks["old_names"], serde_json::json!(["tool_before"]));
    assert!(
        hooks["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("bay install")),
        "{hooks}"
    );
}

#[test]
fn a_runner_s_check_variables_and_sandbox_are_required() {
    let world = world();
    let clone = world.clone_as("ann");
    let home = home();
    claude(&home, "2.1.302");

    assert_eq!(
        doctor(&home, &clone, &[], &[]).code,
        0,
        "an agent is not asked"
    );
    let unset = doctor(&home, &clone, &["--role", "executor"], &[]);
    refused(&unset, "CHECK_ENV_UNSET");
    assert_eq!(
        unset.doc["detail"]["variables"],
        serde_json::json!(["CHECK_TOKEN"])
    );
    assert_eq!(unset.doc["detail"]["role"], "executor");
    let set = doctor(
        &home,
        &clone,
        &["--role", "executor"],
        &[("CHECK_TOKEN", "t")],
    );
    assert_eq!(set.code, 0, "{}", set.doc);

    // A PATH with Git and Claude Code but no bwrap: no sandbox.
    let git_program = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh runs");
    let git_program = String::from_utf8_lossy(&git_program.stdout)
        .trim()
        .to_owned();
    std::os::unix::fs::symlink(&git_program, home.bin().join("git")).expect("a link to Git");
    let bare = home.bin().display().to_string();
    let no_sandbox = home.bay(
        &clone,
        &bare,
        &["doctor", "--role", "executor"],
        &[("CHECK_TOKEN", "t")],
    );
    refused(&no_sandbox, "SANDBOX_ABSENT");
    assert!(
        row(&no_sandbox, "sandbox")["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("bwrap")),
        "{}",
        no_sandbox.doc
    );
    let agent = home.bay(&clone, &bare, &["doctor"], &[]);
    assert_eq!(agent.code, 0, "an agent needs no sandbox: {}", agent.doc);
    assert_eq!(row(&agent, "sandbox")["state"], "advice");

    // The runner refuses the same, before it fetches or claims anything.
    let runner = home.bay(&clone, &bare, &["runner", "run", "--once"], &[]);
    refused(&runner, "SANDBOX_ABSENT");
}

#[test]
fn a_runner_below_git_s_floor_refuses_before_it_reads_anything() {
    let world = world();
    let clone = world.clone_as("ann");
    let home = home();
    let real = Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh runs");
    let real = String::from_utf8_lossy(&real.stdout).trim().to_owned();
    write_program(
        &home.bin(),
        "git",
        &format!(
            "#!/bin/sh\n# bay calls `git -C <dir> version`\n\
             if [ \"$3\" = version ]; then echo 'git version 2.39.5'; exit 0; fi\n\
             exec {real} \"$@\"\n"
        ),
    );
    let path = home.on_path();
    let runner = home.bay(&clone, &path, &["runner", "run", "--once"], &[]);
    refused(&runner, "TOOL_BELOW_FLOOR");
    assert_eq!(runner.doc["detail"]["tool"], "git");
    assert_eq!(runner.doc["detail"]["found"], "2.39.5");
    assert!(
        world.remote_ref("refs/bay/executors/ann").is_none(),
        "nothing claimed"
    );
    let doctor = doctor(&home, &clone, &["--role", "executor"], &[]);
    refused(&doctor, "TOOL_BELOW_FLOOR");
}
