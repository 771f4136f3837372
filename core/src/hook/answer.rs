//! The hook's answer in the product's own protocol: an exit code, stdout and stderr.
//!
//! Both products deny a tool call the same way: exit [`DENY_EXIT_CODE`] with the reason on
//! stderr (platform facts A3, A4; Codex treats exit 2 with an empty stderr as a failure, so
//! the reason is never empty). Everything else exits 0: a hook event that does not block must
//! never stop the session, and Claude Code reads stdout as JSON only then. Context for the
//! agent goes where each product shows it to the model: Claude Code's `additionalContext`
//! on the events that take it, and for Codex the same JSON at session start and stderr after
//! it (the spec's Codex note).

use serde::Serialize;

use crate::adapter::{DENY_EXIT_CODE, Product};
use crate::detail::Detail;
use crate::lock::Locked;
use crate::reason::ReasonCode;
use crate::shell::Denial;

/// What `bay hook` prints and how it exits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    pub exit: u8,
    pub stdout: String,
    pub stderr: String,
}

/// A denied tool call: its code, why, and what to do, with what the record may keep.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub code: ReasonCode,
    pub why: String,
    pub detail: Said,
    /// The next step, when this refusal knows one more exact than its code's (a denied shell
    /// shape names its own); else the code's.
    pub next: Option<&'static str>,
}

/// What a denial's `detail` names: one shape for each way `bay hook` refuses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Said {
    /// The payload could not be read (`HOOK_INPUT_INVALID`); `misnamed` when it names an
    /// event the adapter does not know by that name.
    Unreadable { why: String, misnamed: bool },
    /// A shell command on the deny list: its shape and the wrappers it hid behind.
    Shell(Denial),
    /// Another live session wrote the path in this tree (`PATH_HELD`).
    PathHeld {
        path: String,
        holder: WroteIt,
        age_s: u64,
    },
    /// Another session holds a live lock on the path.
    Locked(Locked),
    /// The remote did not answer the fetch of the locks; `lock` is always `true`.
    NoAnswer { why: String, lock: bool },
}

/// The session that wrote a held path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WroteIt {
    pub session: String,
    pub actor: String,
}

impl Detail for Said {}

/// Claude Code's answer that puts `text` in the model's context at `event`.
#[derive(Serialize)]
struct Context<'a> {
    #[serde(rename = "hookSpecificOutput")]
    output: ContextOutput<'a>,
}

#[derive(Serialize)]
struct ContextOutput<'a> {
    #[serde(rename = "hookEventName")]
    event: &'a str,
    #[serde(rename = "additionalContext")]
    text: &'a str,
}

/// Claude Code's Stop answer that asks the agent to go on, for `reason`.
#[derive(Serialize)]
struct Block<'a> {
    decision: &'static str,
    reason: &'a str,
}

impl Detail for Context<'_> {}
impl Detail for Block<'_> {}

/// The events on which Claude Code adds `hookSpecificOutput.additionalContext` to the
/// model's context.
const CLAUDE_CONTEXT_EVENTS: [&str; 4] = [
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolBatch",
];

impl Answer {
    /// Nothing to say: the product goes on.
    pub fn quiet() -> Answer {
        Answer::default()
    }

    /// Denies the tool call: exit 2, the code, why, the next step and the detail on stderr.
    /// It holds even under Claude Code's `bypassPermissions`, which only skips prompts.
    pub fn deny(refusal: &Refusal) -> Answer {
        Answer {
            exit: DENY_EXIT_CODE,
            stdout: String::new(),
            stderr: format!(
                "bay refused this tool call: {}\nwhy: {}\nnext: {}\ndetail: {}\n",
                refusal.code,
                refusal.why,
                refusal.next.unwrap_or(refusal.code.info().next_step),
                refusal.detail.to_json()
            ),
        }
    }

    /// Says `text` to the agent at `event`, without blocking anything; `None` says nothing.
    pub fn tell(product: Product, event: &str, text: Option<&str>) -> Answer {
        let Some(text) = text else {
            return Answer::quiet();
        };
        let as_context = match product {
            Product::Claude => CLAUDE_CONTEXT_EVENTS.contains(&event),
            Product::Codex => event == "SessionStart",
        };
        if as_context {
            let output = Context {
                output: ContextOutput { event, text },
            }
            .to_json();
            Answer {
                stdout: format!("{output}\n"),
                ..Answer::quiet()
            }
        } else {
            Answer {
                stderr: format!("{text}\n"),
                ..Answer::quiet()
            }
        }
    }

    /// Asks the agent not to stop yet, for `reason`. Claude Code's Stop takes
    /// `{"decision":"block"}` on exit 0 and goes on with `reason` as its next instruction;
    /// Codex's Stop is a sensor in bay's table, so it only hears `reason` on stderr.
    pub fn keep_going(product: Product, reason: &str) -> Answer {
        match product {
            Product::Claude => Answer {
                stdout: format!(
                    "{}\n",
                    Block {
                        decision: "block",
                        reason
                    }
                    .to_json()
                ),
                ..Answer::quiet()
            },
            Product::Codex => Answer {
                stderr: format!("{reason}\n"),
                ..Answer::quiet()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_denial_exits_two_with_the_code_why_and_next_step_on_stderr() {
        let answer = Answer::deny(&Refusal {
            code: ReasonCode::ShellDenied,
            why: "A force push can overwrite work.".into(),
            detail: Said::Shell(Denial {
                shape: crate::shell::Shape::PushForce,
                wrappers: Vec::new(),
            }),
            next: None,
        });
        assert_eq!(answer.exit, 2);
        assert!(answer.stdout.is_empty());
        assert!(answer.stderr.contains("SHELL_DENIED"), "{}", answer.stderr);
        assert!(answer.stderr.contains("never allowed"), "{}", answer.stderr);
        assert!(answer.stderr.contains(r#""shape":"push_force""#));
    }

    #[test]
    fn context_goes_where_each_product_shows_it() {
        let claude = Answer::tell(Product::Claude, "SessionStart", Some("hi"));
        let parsed: Value = serde_json::from_str(&claude.stdout).expect("JSON");
        assert_eq!(parsed["hookSpecificOutput"]["additionalContext"], "hi");
        assert_eq!((claude.exit, claude.stderr.as_str()), (0, ""));
        let codex = Answer::tell(Product::Codex, "PostToolUse", Some("hi"));
        assert_eq!((codex.stdout.as_str(), codex.stderr.as_str()), ("", "hi\n"));
        assert_eq!(Answer::tell(Product::Claude, "Stop", None), Answer::quiet());
    }

    #[test]
    fn keeping_a_session_going_blocks_only_claude_s_stop() {
        let claude = Answer::keep_going(Product::Claude, "save first");
        let parsed: Value = serde_json::from_str(&claude.stdout).expect("JSON");
        assert_eq!(parsed, json!({"decision": "block", "reason": "save first"}));
        assert_eq!(claude.exit, 0);
        let codex = Answer::keep_going(Product::Codex, "save first");
        assert_eq!((codex.exit, codex.stdout.as_str()), (0, ""));
    }

    #[test]
    fn each_refusal_detail_names_its_own_fields() {
        let cases = [
            (
                Said::Unreadable {
                    why: "not JSON".into(),
                    misnamed: false,
                },
                json!({"why": "not JSON", "misnamed": false}),
            ),
            (
                Said::PathHeld {
                    path: "src/a".into(),
                    holder: WroteIt {
                        session: "s2".into(),
                        actor: "bob".into(),
                    },
                    age_s: 30,
                },
                json!({"path": "src/a", "holder": {"session": "s2", "actor": "bob"}, "age_s": 30}),
            ),
            (
                Said::NoAnswer {
                    why: "timed out".into(),
                    lock: true,
                },
                json!({"why": "timed out", "lock": true}),
            ),
            (
                Said::Shell(Denial {
                    shape: crate::shell::Shape::PushForce,
                    wrappers: Vec::new(),
                }),
                json!({"shape": "push_force", "wrappers": []}),
            ),
        ];
        for (said, json) in cases {
            assert_eq!(said.to_json(), json);
        }
    }
}
