//! `bay help [--json]`: every command and flag, what each writes and never writes, every reason
//! code with its advice, the words a person never reads, each agent product's hooks (from the
//! table `bay install` writes entries from), and the schema of `bay.result/1`.

use bay_core::adapter::Adapter;
use bay_core::reason::ReasonCode;
use bay_core::result::{BayResult, Decision};
use bay_core::words::WORDS;
use clap::CommandFactory;
use serde_json::{Map, Value, json};

use super::WRITES;
use crate::Cli;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Commands to show; all when none is named.
    #[arg(value_parser = command_name)]
    pub commands: Vec<String>,
}

/// A command `bay help` can show. Any other name is a usage error (exit 2, no document) that
/// lists the commands bay has, read from the same definition the page is built from.
fn command_name(name: &str) -> Result<String, String> {
    let root = Cli::command();
    let names: Vec<&str> = root.get_subcommands().map(|sub| sub.get_name()).collect();
    if names.contains(&name) {
        Ok(name.to_string())
    } else {
        Err(format!(
            "bay has no command named {name:?}; its commands are {}",
            names.join(", ")
        ))
    }
}

pub fn run(args: &Args) -> BayResult {
    let mut commands = Vec::new();
    let root = Cli::command();
    for sub in root.get_subcommands() {
        let name = sub.get_name();
        if !args.commands.is_empty() && !args.commands.iter().any(|c| c == name) {
            continue;
        }
        commands.push(describe(sub, name));
    }
    let mut detail = Map::new();
    detail.insert("version".into(), Value::from(env!("CARGO_PKG_VERSION")));
    detail.insert("commands".into(), Value::Array(commands));
    detail.insert(
        "global_flags".into(),
        Value::Array(
            root.get_arguments()
                .filter(|a| a.is_global_set())
                .map(flag)
                .collect(),
        ),
    );
    detail.insert(
        "decisions".into(),
        Value::Array(
            Decision::ALL
                .iter()
                .map(|d| json!({ "decision": d.as_str(), "exit_code": d.exit_code() }))
                .collect(),
        ),
    );
    detail.insert(
        "usage_exit_code".into(),
        Value::from(bay_core::result::USAGE_EXIT_CODE),
    );
    detail.insert(
        "reasons".into(),
        Value::Array(
            ReasonCode::ALL
                .iter()
                .map(|code| json!(code.info()))
                .collect(),
        ),
    );
    detail.insert(
        "words".into(),
        Value::Array(
            WORDS
                .iter()
                .map(|w| json!({ "word": w.never, "instead": w.instead, "means": w.meaning, "avoid": w.forms }))
                .collect(),
        ),
    );
    detail.insert("adapters".into(), json!(Adapter::all()));
    let schema: Value =
        serde_json::from_str(bay_core::schema::RESULT).expect("the published schema is JSON");
    detail.insert("schema".into(), schema);
    BayResult::ok(None, detail)
}

/// One command as `bay help --json` lists it, `path` being its words after `bay` (`runner run`
/// for a subcommand), so that every usage names the command as a person types it.
fn describe(command: &clap::Command, path: &str) -> Value {
    // A subcommand writes what its command says it writes (`run: ...`).
    let top = path.split(' ').next().unwrap_or(path);
    let (writes, never) = WRITES
        .iter()
        .find(|(n, _, _)| *n == top)
        .map(|(_, writes, never)| (*writes, *never))
        .unwrap_or(("nothing", "anything"));
    let mut usage = command.clone().bin_name(format!("bay {path}"));
    let subcommands: Vec<Value> = command
        .get_subcommands()
        .map(|sub| describe(sub, &format!("{path} {}", sub.get_name())))
        .collect();
    json!({
        "name": command.get_name(),
        "about": command.get_about().map(|a| a.to_string()),
        "usage": usage.render_usage().to_string().trim_start_matches("Usage: ").to_string(),
        "arguments": command.get_arguments().filter(|a| !a.is_global_set() && !is_builtin(a)).map(flag).collect::<Vec<_>>(),
        "subcommands": subcommands,
        "writes": writes,
        "never": never,
    })
}

fn is_builtin(arg: &clap::Arg) -> bool {
    matches!(arg.get_id().as_str(), "help" | "version")
}

fn flag(arg: &clap::Arg) -> Value {
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    let value_name = arg
        .get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let name = match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => format!("<{value_name}>"),
    };
    json!({
        "name": name,
        "short": arg.get_short().map(|s| format!("-{s}")),
        "positional": arg.is_positional(),
        "value": takes_value.then_some(value_name),
        "value_optional": takes_value && arg.get_num_args().is_some_and(|n| n.min_values() == 0),
        "required": arg.is_required_set(),
        "help": arg.get_help().map(|h| h.to_string()),
    })
}

/// `bay help` at a terminal: the same contract, as a page for a person.
pub fn page(result: &BayResult) -> String {
    let mut out =
        String::from("bay: the merge layer for fleets of coding agents in one Git repository.\n\n");
    let commands = result.detail.get("commands").and_then(Value::as_array);
    for command in commands.into_iter().flatten() {
        out.push_str(&format!(
            "  {}\n",
            command["usage"].as_str().unwrap_or_default()
        ));
        if let Some(about) = command["about"].as_str() {
            out.push_str(&format!("      {about}\n"));
        }
        argument_lines(command, "      ", &mut out);
        subcommand_lines(command, &mut out);
        out.push_str(&format!(
            "      writes: {}\n      never writes: {}\n\n",
            command["writes"].as_str().unwrap_or_default(),
            command["never"].as_str().unwrap_or_default()
        ));
    }
    out.push_str("Global: -C <PATH> runs as if bay started there; --json prints only the bay.result/1 document.\n");
    out.push_str("Exit codes: 0 ok, merged or queued; 10 blocked; 20 failed; 2 usage error.\n");
    out.push_str("bay help --json lists every reason code with its advice, the words results never use, and the schema.\n");
    out
}

/// Each subcommand a person can run under `command` (`bay plugin test check`, not `bay plugin
/// test`), with its usage and what it does.
fn subcommand_lines(command: &Value, out: &mut String) {
    for sub in command["subcommands"].as_array().into_iter().flatten() {
        let deeper = sub["subcommands"]
            .as_array()
            .is_some_and(|subs| !subs.is_empty());
        if deeper {
            subcommand_lines(sub, out);
            continue;
        }
        out.push_str(&format!(
            "      {}\n          {}\n",
            sub["usage"].as_str().unwrap_or_default(),
            sub["about"].as_str().unwrap_or_default()
        ));
        argument_lines(sub, "          ", out);
    }
}

/// Each argument of `command` with its help, one a line.
fn argument_lines(command: &Value, indent: &str, out: &mut String) {
    for arg in command["arguments"].as_array().into_iter().flatten() {
        let name = arg["name"].as_str().unwrap_or_default();
        let help = arg["help"].as_str().unwrap_or_default();
        out.push_str(&format!("{indent}{name:<22} {help}\n"));
    }
}
