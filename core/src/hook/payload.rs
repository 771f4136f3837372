//! The JSON an agent product writes on the hook's stdin, read into what bay judges.
//!
//! Both products send one object per event with `session_id`, `cwd`, `hook_event_name` and
//! mostly `permission_mode`; a tool event adds `tool_name` and `tool_input` (platform facts,
//! part A). Every field is read as optional and unknown fields are ignored, so a newer product
//! that adds fields keeps working; only what bay cannot judge without is required, and that
//! is decided by the moment ([`super::decide`]), not here.

use serde_json::{Map, Value};

/// One event's payload, as far as bay reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Payload {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    /// The product's name for the event, such as `PreToolUse`.
    pub event: Option<String>,
    /// `default`, `plan`, `acceptEdits`, `bypassPermissions`... as the product names it.
    pub permission_mode: Option<String>,
    pub tool: Option<Tool>,
    /// Stop: a stop hook already refused this stop, so this one must let it through.
    pub stop_hook_active: bool,
    /// Every file a tool in the payload names as written: `file_path` or `notebook_path` at
    /// any depth, and the files an `apply_patch` patch adds, updates, deletes or moves to.
    pub written: Vec<String>,
}

/// The tool a tool event is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// A shell tool, with the command it runs; `None` when the input names none bay can read.
    Shell(Option<String>),
    /// An edit tool: Claude Code's `Edit`, `Write`, `MultiEdit` and `NotebookEdit`, Codex's
    /// `apply_patch`. The files are in [`Payload::written`].
    Edit,
    /// Any other tool (a read, a search, an MCP tool), which bay does not judge.
    Other(String),
}

/// The shell tools' names: Claude Code's `Bash`; Codex sends its shell as `Bash` to hooks, and
/// names it `shell`, `local_shell` or `exec_command` in other releases.
const SHELL_TOOLS: [&str; 4] = ["Bash", "shell", "local_shell", "exec_command"];

/// The edit tools' names in both products.
const EDIT_TOOLS: [&str; 5] = ["Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"];

/// The lines of an `apply_patch` patch that name a file it writes.
const PATCH_HEADERS: [&str; 4] = [
    "*** Add File: ",
    "*** Update File: ",
    "*** Delete File: ",
    "*** Move to: ",
];

impl Payload {
    /// Reads a payload; the error says, in a few words, why it is none.
    pub fn parse(bytes: &[u8]) -> Result<Payload, String> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("the payload is not JSON: {e}"))?;
        let Value::Object(object) = value else {
            return Err("the payload is not a JSON object".into());
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        // A tool_name that is no text names no tool: tool.before then cannot judge, and denies.
        let tool = object.get("tool_name").and_then(Value::as_str).map(|name| {
            let input = object.get("tool_input");
            if SHELL_TOOLS.contains(&name) {
                Tool::Shell(input.and_then(shell_command))
            } else if EDIT_TOOLS.contains(&name) {
                Tool::Edit
            } else {
                Tool::Other(name.to_owned())
            }
        });
        let mut written = Vec::new();
        files_named(&object, &mut written);
        Ok(Payload {
            session_id: text("session_id"),
            cwd: text("cwd"),
            event: text("hook_event_name"),
            permission_mode: text("permission_mode"),
            tool,
            stop_hook_active: object.get("stop_hook_active") == Some(&Value::Bool(true)),
            written,
        })
    }
}

/// The command a shell tool runs: a string, or an argument list (Codex's `exec` form), whose
/// words are quoted back into one command line so the deny list reads them as the shell would.
fn shell_command(input: &Value) -> Option<String> {
    match input.get("command")? {
        Value::String(command) => Some(command.clone()),
        Value::Array(words) => words
            .iter()
            .map(|word| word.as_str().map(quote))
            .collect::<Option<Vec<_>>>()
            .map(|words| words.join(" ")),
        _ => None,
    }
}

/// One word, single-quoted for a POSIX shell.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Collects every file a payload's edit tools name as written, at any depth, so that a batch
/// of tool calls (Claude Code's `PostToolBatch`) names all of its files, whatever its shape.
/// An object that names another tool (a `Read`) is passed over: its path is not written.
fn files_named(object: &Map<String, Value>, into: &mut Vec<String>) {
    let names_another_tool = object
        .get("tool_name")
        .and_then(Value::as_str)
        .is_some_and(|name| !EDIT_TOOLS.contains(&name));
    if names_another_tool {
        return;
    }
    for (key, value) in object {
        match value {
            Value::String(path) if key == "file_path" || key == "notebook_path" => {
                push_once(into, path);
            }
            Value::String(text) if text.contains("*** Begin Patch") => {
                for line in text.lines() {
                    if let Some(path) = PATCH_HEADERS
                        .iter()
                        .find_map(|header| line.strip_prefix(header))
                    {
                        push_once(into, path.trim());
                    }
                }
            }
            Value::Object(inner) => files_named(inner, into),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(inner) = item {
                        files_named(inner, into);
                    }
                }
            }
            _ => {}
        }
    }
}

fn push_once(into: &mut Vec<String>, path: &str) {
    if !path.is_empty() && !into.iter().any(|known| known == path) {
        into.push(path.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shell_call_names_its_command_and_an_argument_list_is_quoted_back() {
        let bash = Payload::parse(
            br#"{"session_id":"s","cwd":"/r","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"}}"#,
        )
        .expect("a payload");
        assert_eq!(bash.tool, Some(Tool::Shell(Some("git status".into()))));
        let exec = Payload::parse(
            br#"{"tool_name":"shell","tool_input":{"command":["bash","-lc","echo 'hi'"]}}"#,
        )
        .expect("a payload");
        assert_eq!(
            exec.tool,
            Some(Tool::Shell(Some(
                r#"'bash' '-lc' 'echo '\''hi'\'''"#.into()
            )))
        );
    }

    #[test]
    fn edits_name_their_files_at_any_depth_and_through_a_patch() {
        let batch = Payload::parse(
            br#"{"tool_calls":[{"tool_name":"Edit","tool_input":{"file_path":"/r/a"}},{"tool_input":{"notebook_path":"/r/n.ipynb"}}]}"#,
        )
        .expect("a payload");
        assert_eq!(batch.written, ["/r/a", "/r/n.ipynb"]);
        let patch = Payload::parse(
            br#"{"tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: src/a.rs\n@@\n*** Add File: b.txt\n+x\n*** End Patch\n"}}"#,
        )
        .expect("a payload");
        assert_eq!(patch.tool, Some(Tool::Edit));
        assert_eq!(patch.written, ["src/a.rs", "b.txt"]);
    }

    #[test]
    fn what_is_not_an_object_is_no_payload_and_odd_fields_are_left_out() {
        assert!(Payload::parse(b"").is_err());
        assert!(Payload::parse(b"[1]").is_err());
        let odd =
            Payload::parse(br#"{"session_id":7,"stop_hook_active":"yes","tool_name":"Read"}"#)
                .expect("an object");
        assert_eq!(odd.session_id, None);
        assert!(!odd.stop_hook_active);
        assert_eq!(odd.tool, Some(Tool::Other("Read".into())));
    }
}
