//! Every `bay` command that bay's own words name is a command this bay has, with flags it
//! takes: the reason codes' meanings and next steps, the plain sentences and progress lines,
//! `bay help` at a terminal, and the README. Advice naming a command that does not exist yet
//! sends a person nowhere, so adding such advice fails here.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;
use support::*;

/// The commands `bay help --json` lists (clap's own tree), by their words after `bay`, each
/// with the flags it takes; and the global flags.
struct Tree {
    commands: BTreeMap<String, Listed>,
    global: BTreeSet<String>,
}

struct Listed {
    flags: BTreeSet<String>,
    has_subcommands: bool,
}

fn tree() -> Tree {
    let nowhere = tempfile::tempdir().expect("a folder");
    let help = bay(nowhere.path(), "ann", &["help"]);
    fn walk(command: &Value, path: &str, out: &mut BTreeMap<String, Listed>) {
        let path = match path {
            "" => command["name"].as_str().expect("a name").to_owned(),
            path => format!("{path} {}", command["name"].as_str().expect("a name")),
        };
        let subcommands = command["subcommands"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let flags = command["arguments"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|arg| arg["name"].as_str())
            .filter(|name| name.starts_with('-'))
            .map(str::to_owned)
            .collect();
        for sub in &subcommands {
            walk(sub, &path, out);
        }
        out.insert(
            path,
            Listed {
                flags,
                has_subcommands: !subcommands.is_empty(),
            },
        );
    }
    let mut commands = BTreeMap::new();
    for command in help.doc["detail"]["commands"].as_array().expect("commands") {
        walk(command, "", &mut commands);
    }
    // clap's own `--help` and `--version` are left out of the listed flags.
    let global = help.doc["detail"]["global_flags"]
        .as_array()
        .expect("global flags")
        .iter()
        .filter_map(|flag| flag["name"].as_str().map(str::to_owned))
        .chain(["--help".to_owned(), "--version".to_owned()])
        .collect();
    Tree { commands, global }
}

impl Tree {
    /// Whether `command` (`bay ...`) names a command of this bay, and flags it takes. A word
    /// in `<...>`, `[...]` or `{...}` is a placeholder, and after the first argument the rest
    /// are arguments too.
    fn check(&self, command: &str) -> Result<(), String> {
        let words: Vec<&str> = command.split_whitespace().collect();
        if words.first() != Some(&"bay") {
            return Err(format!("{command:?} does not start with bay"));
        }
        let mut path = String::new();
        let mut arguments = false;
        for word in &words[1..] {
            if *word == "--" {
                break;
            }
            if let Some(flag) = word.strip_prefix("--") {
                let flag = format!("--{}", flag.split('=').next().unwrap_or(flag));
                let takes = self
                    .commands
                    .get(&path)
                    .is_some_and(|listed| listed.flags.contains(&flag))
                    || self.global.contains(&flag);
                if !takes {
                    return Err(format!("{command:?}: bay {path} has no {flag}"));
                }
                continue;
            }
            let placeholder = word.starts_with(['<', '[', '{', '-']) || word.contains('…');
            if arguments || placeholder {
                arguments = true;
                continue;
            }
            let deeper = match path.as_str() {
                "" => word.to_string(),
                path => format!("{path} {word}"),
            };
            if self.commands.contains_key(&deeper) {
                path = deeper;
            } else if path.is_empty() || self.commands[&path].has_subcommands {
                return Err(format!("{command:?}: bay has no command `bay {deeper}`"));
            } else {
                arguments = true;
            }
        }
        match self.commands.get(&path) {
            None if words[1..] == ["--version"] => Ok(()),
            None => Err(format!("{command:?} names no command")),
            Some(listed) if listed.has_subcommands => Err(format!(
                "{command:?}: bay {path} needs one of its subcommands"
            )),
            Some(_) => Ok(()),
        }
    }

    /// Checks every command quoted in `text` (in backticks), naming `source` in a failure.
    fn check_quoted(&self, source: &str, text: &str) -> usize {
        let named = quoted_commands(text);
        for command in &named {
            if let Err(why) = self.check(command) {
                panic!("{source}: {why}");
            }
        }
        named.len()
    }
}

/// Each `` `bay ...` `` in `text`.
fn quoted_commands(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|quoted| quoted.starts_with("bay "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_checker_finds_commands_that_do_not_exist() {
    let tree = tree();
    for real in [
        "bay start <intent> --fixes <owner>",
        "bay merge --wait",
        "bay runner run",
        "bay plugin test check --expected-minimum 1 -- .bay/check",
        "bay evidence record --kind check",
        "bay evidence record --kind review --body review.json",
        "bay evidence missing --kind review --producer review-bot --since v1.4.0",
        "bay status c7k2m4qa",
        "bay --json status",
        "bay doctor --role executor",
        "bay status --fleet",
    ] {
        assert_eq!(tree.check(real), Ok(()), "{real}");
    }
    for missing in [
        "bay doctor --fleet",
        "bay status --everything",
        "bay run",
        "bay test",
        "bay record",
        "bay runner",
        "bay runner start",
    ] {
        assert!(tree.check(missing).is_err(), "{missing} passed");
    }
}

#[test]
fn every_reason_code_names_only_commands_bay_has() {
    let tree = tree();
    let mut named = 0;
    for code in bay_core::reason::ReasonCode::ALL {
        let info = code.info();
        named += tree.check_quoted(&format!("{code} next_step"), info.next_step);
        named += tree.check_quoted(&format!("{code} meaning"), info.meaning);
    }
    assert!(named > 10, "the next steps name commands: {named}");
}

#[test]
fn every_plain_sentence_progress_line_and_the_skill_name_only_commands_bay_has() {
    let tree = tree();
    // Every text these modules can print is in their source, each command whole; a
    // placeholder such as `{}` stands for an argument.
    for (source, text) in [
        ("core/src/say.rs", include_str!("../../core/src/say.rs")),
        (
            "core/src/progress.rs",
            include_str!("../../core/src/progress.rs"),
        ),
        (
            "skills/bay/SKILL.md",
            include_str!("../../skills/bay/SKILL.md"),
        ),
    ] {
        let joined = text.replace("\\\n", " ");
        let named = tree.check_quoted(source, &joined);
        assert!(named > 0, "{source} names commands");
    }
}

#[test]
fn help_at_a_terminal_names_commands_bay_has() {
    let tree = tree();
    let out = Command::new("script")
        .args(["-qec", &format!("{BAY} help"), "/dev/null"])
        .output()
        .expect("script runs");
    let page = String::from_utf8_lossy(&out.stdout);
    let usages: Vec<&str> = page
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("bay "))
        .collect();
    for usage in &usages {
        let words: String = usage
            .split_whitespace()
            .take_while(|word| !word.starts_with(['[', '<', '-']))
            .collect::<Vec<_>>()
            .join(" ");
        let listed = tree
            .commands
            .get(words.trim_start_matches("bay "))
            .unwrap_or_else(|| panic!("the help page names {usage:?}, which bay lacks"));
        assert!(
            !listed.has_subcommands || usage.ends_with("<COMMAND>"),
            "{usage}"
        );
    }
    for leaf in [
        "bay runner run",
        "bay plugin test check",
        "bay evidence record",
        "bay evidence missing",
    ] {
        assert!(
            usages.iter().any(|usage| usage.starts_with(leaf)),
            "{leaf} missing from the help page:\n{page}"
        );
    }
}

#[test]
fn the_readme_names_commands_bay_has_and_ci_ends_with_its_test_command() {
    let tree = tree();
    let readme = include_str!("../../README.md");
    let mut named = tree.check_quoted("README.md", readme);
    let mut in_code = false;
    for line in readme.lines().map(str::trim) {
        if line.starts_with("```") {
            in_code = !in_code;
        } else if in_code && line.starts_with("bay ") {
            let command = line.split('#').next().unwrap_or(line);
            if let Err(why) = tree.check(command) {
                panic!("README.md: {why}");
            }
            named += 1;
        }
    }
    assert!(named > 10, "the README names its commands: {named}");

    let test_command = readme
        .lines()
        .find(|line| line.starts_with("cargo test --workspace"))
        .expect("the README's test command");
    assert!(test_command.contains("--no-fail-fast"), "{test_command}");
    let ci = include_str!("../../.ci/run");
    assert_eq!(
        ci.lines().rev().find(|line| !line.trim().is_empty()),
        Some(test_command),
        "the last line of .ci/run is the README's test command"
    );
}
