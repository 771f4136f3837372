//! The agent products bay plugs into, as one table: for Claude Code and Codex, the project
//! settings file that holds hook entries, the oldest version whose hooks bay relies on, and each
//! product event with the `bay hook` moment it calls.
//!
//! Everything that speaks a product's hook protocol reads this table and nothing else: `bay
//! install` writes one entry per [`Event`], `bay hook <moment>` looks its moment and the
//! payload's `hook_event_name` up here to know whether it may block and how, and `bay help
//! --json` prints it under `detail.adapters`. So the entries a person commits, what the hook
//! does with them and what the docs say cannot drift apart.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An agent product whose hooks bay installs, as `[agent] product` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Product {
    Claude,
    Codex,
}

impl Product {
    pub const ALL: [Product; 2] = [Product::Claude, Product::Codex];

    /// The product of a hook event when no readable `[agent]` table names one: Claude Code
    /// sets `CLAUDE_PROJECT_DIR` for its hooks; anything else is taken as Codex.
    pub fn guess(claude_project_dir_set: bool) -> Product {
        match claude_project_dir_set {
            true => Product::Claude,
            false => Product::Codex,
        }
    }

    /// The name `[agent] product` takes.
    pub const fn as_str(self) -> &'static str {
        match self {
            Product::Claude => "claude",
            Product::Codex => "codex",
        }
    }

    /// This product's row of the table.
    pub fn adapter(self) -> &'static Adapter {
        match self {
            Product::Claude => &CLAUDE,
            Product::Codex => &CODEX,
        }
    }
}

impl FromStr for Product {
    type Err = String;

    fn from_str(text: &str) -> Result<Product, String> {
        Product::ALL
            .into_iter()
            .find(|product| product.as_str() == text)
            .ok_or_else(|| format!("not an agent product bay has hooks for: {text:?}"))
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What just happened in a session, in bay's own words: the argument of `bay hook`. One moment
/// can stand for several events of a product, and a product may have no event for one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Moment {
    #[serde(rename = "session.start")]
    SessionStart,
    #[serde(rename = "turn.start")]
    TurnStart,
    #[serde(rename = "tool.before")]
    ToolBefore,
    #[serde(rename = "step.end")]
    StepEnd,
    #[serde(rename = "file.change")]
    FileChange,
    #[serde(rename = "session.wait")]
    SessionWait,
    #[serde(rename = "turn.end")]
    TurnEnd,
    #[serde(rename = "subagent.start")]
    SubagentStart,
    #[serde(rename = "subagent.end")]
    SubagentEnd,
    #[serde(rename = "session.end")]
    SessionEnd,
    #[serde(rename = "compact.before")]
    CompactBefore,
}

impl Moment {
    /// Every moment, in the order of a session.
    pub const ALL: [Moment; 11] = [
        Moment::SessionStart,
        Moment::TurnStart,
        Moment::ToolBefore,
        Moment::StepEnd,
        Moment::FileChange,
        Moment::SessionWait,
        Moment::TurnEnd,
        Moment::SubagentStart,
        Moment::SubagentEnd,
        Moment::SessionEnd,
        Moment::CompactBefore,
    ];

    /// The moment as `bay hook` takes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Moment::SessionStart => "session.start",
            Moment::TurnStart => "turn.start",
            Moment::ToolBefore => "tool.before",
            Moment::StepEnd => "step.end",
            Moment::FileChange => "file.change",
            Moment::SessionWait => "session.wait",
            Moment::TurnEnd => "turn.end",
            Moment::SubagentStart => "subagent.start",
            Moment::SubagentEnd => "subagent.end",
            Moment::SessionEnd => "session.end",
            Moment::CompactBefore => "compact.before",
        }
    }
}

impl FromStr for Moment {
    type Err = String;

    /// The exact name; anything else is a moment bay does not know, which `bay hook` answers
    /// as a misnamed entry.
    fn from_str(text: &str) -> Result<Moment, String> {
        Moment::ALL
            .into_iter()
            .find(|moment| moment.as_str() == text)
            .ok_or_else(|| format!("not a moment bay hook knows: {text:?}"))
    }
}

impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the product does with the tool call or stop when the hook fails: cannot start, times
/// out, or exits with a code other than 0 and [`DENY_EXIT_CODE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// The product refuses what the hook guarded: a hook that cannot judge lets nothing through.
    Block,
    /// The product goes on as if the hook had said nothing.
    Allow,
}

/// The exit code with which a hook refuses, the reason on stderr, in both products. Any other
/// non-zero code is a failure, which [`OnFailure`] describes.
pub const DENY_EXIT_CODE: u8 = 2;

/// How long the product waits for `tool.before` before it counts the hook as failed. Agents
/// call it on every tool call, so it must answer well within this.
pub const TOOL_BEFORE_TIMEOUT_S: u64 = 30;

/// One product event and what bay does at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// The product's name for the event: the key in its settings file, and the payload's
    /// `hook_event_name`.
    pub event: &'static str,
    /// What `bay hook` is told happened.
    pub moment: Moment,
    /// Whether bay's hook may refuse at this event (exit [`DENY_EXIT_CODE`]).
    pub blocks: bool,
    pub on_failure: OnFailure,
    /// The tools whose calls reach the hook, as the product's matcher regex; `None` matches
    /// every call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matcher: Option<&'static str>,
    /// The entry's time limit in seconds; `None` leaves the product's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<u64>,
}

/// One agent product's hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Adapter {
    pub product: Product,
    /// The product as people call it.
    pub name: &'static str,
    /// The project settings file, relative to the work tree, that holds bay's entries; it
    /// reaches every clone once it is on main.
    pub settings_file: &'static str,
    /// The oldest version of the product whose hooks do what this table says.
    pub floor: &'static str,
    /// Whether each entry first checks that `bay` is on the machine, so that a committed
    /// settings file blocks nothing where bay is not installed.
    pub presence_check: bool,
    pub events: &'static [Event],
    /// What the hook never judges with this product.
    pub cannot_see: &'static [&'static str],
}

impl Adapter {
    /// Every adapter, in the order `bay help --json` lists them.
    pub fn all() -> [&'static Adapter; 2] {
        [&CLAUDE, &CODEX]
    }

    /// The event the product calls `event` (a payload's `hook_event_name`), if bay hooks it.
    pub fn event(&self, event: &str) -> Option<&'static Event> {
        self.events.iter().find(|e| e.event == event)
    }

    /// The events that call `moment`; none when the product has no such event.
    pub fn events_of(&self, moment: Moment) -> impl Iterator<Item = &'static Event> {
        self.events.iter().filter(move |e| e.moment == moment)
    }

    /// The command line of the entry that calls `moment`, as the product runs it with `sh -c`.
    /// With a presence check it exits 0 where `bay` is not on `PATH`, which neither product
    /// counts as a failure.
    pub fn command(&self, moment: Moment) -> String {
        if self.presence_check {
            format!("command -v bay >/dev/null 2>&1 || exit 0; exec bay hook {moment}")
        } else {
            format!("bay hook {moment}")
        }
    }
}

/// The tool names Claude Code sends `tool.before` for: the shell and the edit tools, whose
/// calls bay judges. Reads and searches never reach the hook, which keeps them fast.
const CLAUDE_TOOLS: &str = "Bash|Edit|Write|MultiEdit|NotebookEdit";

/// An event that never blocks, so its failure lets the session go on.
const fn sensor(event: &'static str, moment: Moment) -> Event {
    Event {
        event,
        moment,
        blocks: false,
        on_failure: OnFailure::Allow,
        matcher: None,
        timeout_s: None,
    }
}

static CLAUDE: Adapter = Adapter {
    product: Product::Claude,
    name: "Claude Code",
    settings_file: ".claude/settings.json",
    // 2.1.295 brought `onFailure: "block"`, which the `tool.before` entry needs.
    floor: "2.1.302",
    presence_check: true,
    events: &[
        sensor("SessionStart", Moment::SessionStart),
        sensor("UserPromptSubmit", Moment::TurnStart),
        Event {
            event: "PreToolUse",
            moment: Moment::ToolBefore,
            blocks: true,
            on_failure: OnFailure::Block,
            matcher: Some(CLAUDE_TOOLS),
            timeout_s: Some(TOOL_BEFORE_TIMEOUT_S),
        },
        sensor("PostToolBatch", Moment::StepEnd),
        sensor("FileChanged", Moment::FileChange),
        sensor("Notification", Moment::SessionWait),
        sensor("TeammateIdle", Moment::SessionWait),
        Event {
            event: "Stop",
            moment: Moment::TurnEnd,
            blocks: true,
            on_failure: OnFailure::Allow,
            matcher: None,
            timeout_s: None,
        },
        sensor("SubagentStart", Moment::SubagentStart),
        sensor("SubagentStop", Moment::SubagentEnd),
        sensor("SessionEnd", Moment::SessionEnd),
        sensor("PreCompact", Moment::CompactBefore),
    ],
    cannot_see: &[
        "a file a shell command writes: it takes no lock and meets none",
        "a dangerous Git command spelled in a shape the deny list does not know",
        "a session that turns hooks off (disableAllHooks or allowManagedHooksOnly)",
        "a tool call on a machine without bay, which the entry lets through",
    ],
};

static CODEX: Adapter = Adapter {
    product: Product::Codex,
    name: "Codex",
    settings_file: ".codex/hooks.json",
    floor: "0.153.2",
    // Codex runs the tool when its hook fails, so a check for bay would change nothing.
    presence_check: false,
    events: &[
        sensor("SessionStart", Moment::SessionStart),
        sensor("UserPromptSubmit", Moment::TurnStart),
        Event {
            event: "PreToolUse",
            moment: Moment::ToolBefore,
            blocks: true,
            on_failure: OnFailure::Allow,
            matcher: None,
            timeout_s: Some(TOOL_BEFORE_TIMEOUT_S),
        },
        sensor("PostToolUse", Moment::StepEnd),
        sensor("Stop", Moment::TurnEnd),
        sensor("SubagentStart", Moment::SubagentStart),
        sensor("SubagentStop", Moment::SubagentEnd),
        sensor("SessionEnd", Moment::SessionEnd),
    ],
    cannot_see: &[
        "a file a shell command writes: it takes no lock and meets none",
        "a dangerous Git command spelled in a shape the deny list does not know",
        "a tool call while the hook crashes, hangs or fails: Codex runs the tool",
        "a project Codex does not trust, whose hooks it skips without a message",
        "a changed file, a wait for the person, or a compaction: Codex has no such event",
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_table_claude_code_is_known_by_its_project_dir() {
        assert_eq!(Product::guess(true), Product::Claude);
        assert_eq!(Product::guess(false), Product::Codex);
    }

    /// The moment table of the spec's Agents and hooks page: each moment with its Claude Code
    /// and Codex events.
    const SPEC_MOMENTS: [(&str, &[&str], &[&str]); 11] = [
        ("session.start", &["SessionStart"], &["SessionStart"]),
        ("turn.start", &["UserPromptSubmit"], &["UserPromptSubmit"]),
        ("tool.before", &["PreToolUse"], &["PreToolUse"]),
        ("step.end", &["PostToolBatch"], &["PostToolUse"]),
        ("file.change", &["FileChanged"], &[]),
        ("session.wait", &["Notification", "TeammateIdle"], &[]),
        ("turn.end", &["Stop"], &["Stop"]),
        ("subagent.start", &["SubagentStart"], &["SubagentStart"]),
        ("subagent.end", &["SubagentStop"], &["SubagentStop"]),
        ("session.end", &["SessionEnd"], &["SessionEnd"]),
        ("compact.before", &["PreCompact"], &[]),
    ];

    fn events(product: Product, moment: Moment) -> Vec<&'static str> {
        product
            .adapter()
            .events_of(moment)
            .map(|e| e.event)
            .collect()
    }

    #[test]
    fn every_moment_of_the_spec_has_the_spec_s_events_in_each_product() {
        assert_eq!(Moment::ALL.len(), SPEC_MOMENTS.len());
        for (moment, (name, claude, codex)) in Moment::ALL.into_iter().zip(SPEC_MOMENTS) {
            assert_eq!(moment.as_str(), name);
            assert_eq!(name.parse::<Moment>(), Ok(moment));
            assert_eq!(events(Product::Claude, moment), claude, "{name}");
            assert_eq!(events(Product::Codex, moment), codex, "{name}");
        }
    }

    #[test]
    fn only_the_spec_s_events_block_and_only_claude_s_tool_before_fails_closed() {
        let blocking = |product: Product| -> Vec<(&str, OnFailure)> {
            product
                .adapter()
                .events
                .iter()
                .filter(|e| e.blocks)
                .map(|e| (e.event, e.on_failure))
                .collect()
        };
        assert_eq!(
            blocking(Product::Claude),
            [("PreToolUse", OnFailure::Block), ("Stop", OnFailure::Allow)]
        );
        assert_eq!(blocking(Product::Codex), [("PreToolUse", OnFailure::Allow)]);
        for adapter in Adapter::all() {
            for event in adapter.events.iter().filter(|e| !e.blocks) {
                assert_eq!(event.on_failure, OnFailure::Allow, "{}", event.event);
            }
        }
    }

    #[test]
    fn each_product_names_its_settings_file_floor_and_what_it_cannot_see() {
        let claude = Product::Claude.adapter();
        assert_eq!(
            (claude.settings_file, claude.floor),
            (".claude/settings.json", "2.1.302")
        );
        let codex = Product::Codex.adapter();
        assert_eq!(
            (codex.settings_file, codex.floor),
            (".codex/hooks.json", "0.153.2")
        );
        for adapter in Adapter::all() {
            assert!(!adapter.cannot_see.is_empty());
            assert_eq!(adapter.product.adapter(), adapter);
            let tool_before: Vec<_> = adapter.events_of(Moment::ToolBefore).collect();
            assert_eq!(tool_before.len(), 1);
            assert_eq!(tool_before[0].timeout_s, Some(30));
        }
    }

    #[test]
    fn a_payload_s_event_name_finds_its_moment() {
        let claude = Product::Claude.adapter();
        assert_eq!(
            claude.event("TeammateIdle").map(|e| e.moment),
            Some(Moment::SessionWait)
        );
        assert_eq!(
            claude.event("PostToolUse"),
            None,
            "Claude's step is a batch"
        );
        assert_eq!(
            Product::Codex
                .adapter()
                .event("PostToolUse")
                .map(|e| e.moment),
            Some(Moment::StepEnd)
        );
        assert!("tool.after".parse::<Moment>().is_err());
        assert_eq!("codex".parse::<Product>(), Ok(Product::Codex));
        assert!("gemini".parse::<Product>().is_err());
    }

    #[test]
    fn only_claude_s_command_checks_that_bay_is_there() {
        assert_eq!(
            Product::Claude.adapter().command(Moment::ToolBefore),
            "command -v bay >/dev/null 2>&1 || exit 0; exec bay hook tool.before"
        );
        assert_eq!(
            Product::Codex.adapter().command(Moment::TurnEnd),
            "bay hook turn.end"
        );
    }
}
