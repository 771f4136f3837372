//! bay's entries in an agent product's settings file (`.claude/settings.json`,
//! `.codex/hooks.json`), merged into whatever the file already holds.
//!
//! Both products nest hooks as event → list of matcher groups → list of handlers. bay owns
//! exactly one group per event its [`Adapter`] lists, holding one handler that runs `bay hook
//! <moment>`, and nothing else in the file: every key, group and handler another tool wrote
//! stays where it was. A merge of a file that already holds bay's entries as this bay writes
//! them changes nothing, so installing twice writes once. An entry of an older bay (another
//! moment name, another event) is rewritten or removed, which is how `bay install` repairs a
//! misnamed one.

use sha2::{Digest, Sha256};

use crate::adapter::{Adapter, Event, OnFailure};
use crate::ordered_json::Json;

/// What merging bay's entries into a settings file gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// The file's new text.
    pub text: String,
    /// Whether the text says anything the old file did not: when false, there is nothing to
    /// write.
    pub changed: bool,
    /// A digest of the hook entries other tools wrote, so that `bay doctor` can tell when they
    /// change.
    pub foreign_digest: String,
}

/// Merges `adapter`'s entries into the settings text `old` (`None` for no file). A file that is
/// not a JSON object with `hooks` an object of lists is refused with why: bay never rewrites a
/// file it cannot read whole.
pub fn merge(adapter: &Adapter, old: Option<&str>) -> Result<Merged, String> {
    let before = match old {
        Some(text) if !text.trim().is_empty() => Json::parse(text)?,
        _ => Json::Object(Vec::new()),
    };
    let Json::Object(mut root) = before.clone() else {
        return Err("it is not a JSON object".into());
    };
    let Json::Object(events) = Json::entry(&mut root, "hooks", Json::Object(Vec::new())) else {
        return Err("its \"hooks\" is not a JSON object".into());
    };
    // An event that held only an older bay's entries goes with them.
    let mut emptied = Vec::new();
    for (name, groups) in events.iter_mut() {
        let Json::Array(groups) = groups else {
            return Err(format!("its hooks for {name:?} are not a list"));
        };
        let wanted = adapter.event(name).map(|event| group(adapter, event));
        let had_bay = groups.iter().any(holds_bay);
        place(groups, wanted.as_ref());
        if had_bay && groups.is_empty() {
            emptied.push(name.clone());
        }
    }
    events.retain(|(name, _)| !emptied.contains(name));
    // Events the file has not met yet, in the table's order, after the file's own.
    for event in adapter.events {
        if events.iter().all(|(name, _)| name != event.event) {
            events.push((
                event.event.to_owned(),
                Json::Array(vec![group(adapter, event)]),
            ));
        }
    }
    let foreign_digest = digest_of_foreign(events);
    let after = Json::Object(root);
    Ok(Merged {
        changed: after != before,
        text: after.pretty(),
        foreign_digest,
    })
}

/// Whether main still lacks bay's entries: its copy of the settings file (`None` when main has
/// none) would change under [`merge`], or cannot be read.
pub fn to_land(adapter: &Adapter, on_main: Option<&str>) -> bool {
    on_main.is_none() || merge(adapter, on_main).is_ok_and(|merged| merged.changed)
}

/// Leaves `groups` holding bay's group `wanted` (or none) once: in place when the first group
/// holding a bay handler already is exactly it, else at the end. Every other bay handler goes,
/// and so does a group it leaves empty; other handlers stay in their groups, in order.
fn place(groups: &mut Vec<Json>, wanted: Option<&Json>) {
    let keep = groups
        .iter()
        .position(holds_bay)
        .filter(|at| Some(&groups[*at]) == wanted);
    let mut index = 0;
    groups.retain_mut(|group| {
        let at = index;
        index += 1;
        if Some(at) == keep || !holds_bay(group) {
            return true;
        }
        if let Some(Json::Array(handlers)) = handlers_mut(group) {
            handlers.retain(|handler| !is_bay(handler));
            !handlers.is_empty()
        } else {
            true
        }
    });
    if let (None, Some(wanted)) = (keep, wanted) {
        groups.push(wanted.clone());
    }
}

/// bay's matcher group for `adapter`'s `event`.
fn group(adapter: &Adapter, event: &Event) -> Json {
    let mut handler = vec![
        ("type".to_owned(), Json::text("command")),
        (
            "command".to_owned(),
            Json::String(adapter.command(event.moment)),
        ),
    ];
    if let Some(seconds) = event.timeout_s {
        handler.push(("timeout".to_owned(), Json::Number(seconds.into())));
    }
    // Only Claude Code reads `onFailure`; Codex runs the tool whatever the entry says.
    if event.on_failure == OnFailure::Block {
        handler.push(("onFailure".to_owned(), Json::text("block")));
    }
    let mut group = Vec::new();
    if let Some(matcher) = event.matcher {
        group.push(("matcher".to_owned(), Json::text(matcher)));
    }
    group.push(("hooks".to_owned(), Json::Array(vec![Json::Object(handler)])));
    Json::Object(group)
}

fn handlers_mut(group: &mut Json) -> Option<&mut Json> {
    match group {
        Json::Object(entries) => entries
            .iter_mut()
            .find(|(key, _)| key == "hooks")
            .map(|(_, v)| v),
        _ => None,
    }
}

fn holds_bay(group: &Json) -> bool {
    matches!(group.get("hooks"), Some(Json::Array(handlers)) if handlers.iter().any(is_bay))
}

/// Whether a handler is one bay wrote: its command's last part runs `bay hook <moment>`, with
/// or without a check that bay is there. `bay hook talk-wait` is not: a person adds it to an
/// asynchronous hook of their own, and bay never writes or removes it.
pub fn is_bay(handler: &Json) -> bool {
    bay_moment(handler).is_some()
}

/// The moment a handler bay wrote calls, as its command spells it (an older bay's name
/// included); `None` for a handler bay did not write.
pub fn bay_moment(handler: &Json) -> Option<&str> {
    let command = handler.get("command").and_then(Json::as_str)?;
    let last = command.rsplit(';').next().unwrap_or(command).trim();
    let last = last.strip_prefix("exec ").unwrap_or(last);
    let mut words = last.split_whitespace();
    (words.next() == Some("bay") && words.next() == Some("hook"))
        .then(|| words.next())
        .flatten()
        .filter(|moment| *moment != "talk-wait")
}

/// The moment names of bay's handlers in the settings text `text` that this bay does not know:
/// entries an older bay wrote, which `bay hook` would refuse. A file that is no JSON has none.
pub fn old_names(text: &str) -> Vec<String> {
    let Ok(json) = Json::parse(text) else {
        return Vec::new();
    };
    let Some(Json::Object(events)) = json.get("hooks") else {
        return Vec::new();
    };
    let mut old: Vec<String> = events
        .iter()
        .filter_map(|(_, groups)| match groups {
            Json::Array(groups) => Some(groups),
            _ => None,
        })
        .flatten()
        .filter_map(|group| match group.get("hooks") {
            Some(Json::Array(handlers)) => Some(handlers),
            _ => None,
        })
        .flatten()
        .filter_map(bay_moment)
        .filter(|moment| moment.parse::<crate::adapter::Moment>().is_err())
        .map(str::to_owned)
        .collect();
    old.dedup();
    old
}

/// The sha256 of the hook entries other tools wrote: every event's groups with bay's handlers
/// taken out, in file order.
fn digest_of_foreign(events: &[(String, Json)]) -> String {
    let foreign: Vec<(String, Json)> = events
        .iter()
        .map(|(name, groups)| {
            let mut groups = groups.clone();
            if let Json::Array(groups) = &mut groups {
                place(groups, None);
            }
            (name.clone(), groups)
        })
        .filter(|(_, groups)| !matches!(groups, Json::Array(g) if g.is_empty()))
        .collect();
    let text = serde_json::to_string(&Json::Object(foreign)).expect("JSON serializes");
    crate::id::hex(&Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::{Moment, Product};

    fn claude() -> &'static Adapter {
        Product::Claude.adapter()
    }

    fn merged(adapter: &Adapter, old: Option<&str>) -> Merged {
        merge(adapter, old).expect("a readable settings file")
    }

    /// Each event's handlers' commands, in file order.
    fn commands(text: &str, event: &str) -> Vec<String> {
        let json = Json::parse(text).expect("JSON");
        let Some(Json::Array(groups)) = json.get("hooks").and_then(|h| h.get(event)) else {
            return Vec::new();
        };
        groups
            .iter()
            .filter_map(|g| match g.get("hooks") {
                Some(Json::Array(handlers)) => Some(handlers.clone()),
                _ => None,
            })
            .flatten()
            .filter_map(|h| h.get("command").and_then(Json::as_str).map(str::to_owned))
            .collect()
    }

    #[test]
    fn a_new_file_gets_one_entry_per_event_of_the_table() {
        for adapter in Adapter::all() {
            let first = merged(adapter, None);
            assert!(first.changed);
            let json = Json::parse(&first.text).expect("JSON");
            let Some(Json::Object(events)) = json.get("hooks") else {
                panic!("hooks written");
            };
            let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
            let table: Vec<&str> = adapter.events.iter().map(|e| e.event).collect();
            assert_eq!(names, table);
            for event in adapter.events {
                assert_eq!(
                    commands(&first.text, event.event),
                    [adapter.command(event.moment)]
                );
            }
        }
    }

    #[test]
    fn tool_before_waits_30_seconds_and_fails_closed_only_in_claude() {
        let text = merged(claude(), None).text;
        let json = Json::parse(&text).expect("JSON");
        let pre = &json.get("hooks").and_then(|h| h.get("PreToolUse")).cloned();
        let expected = Json::parse(
            r#"[{"matcher":"Bash|Edit|Write|MultiEdit|NotebookEdit","hooks":[{"type":"command",
            "command":"command -v bay >/dev/null 2>&1 || exit 0; exec bay hook tool.before",
            "timeout":30,"onFailure":"block"}]}]"#,
        )
        .expect("JSON");
        assert_eq!(pre.as_ref(), Some(&expected));
        let codex = merged(Product::Codex.adapter(), None).text;
        assert!(codex.contains("\"timeout\": 30"));
        assert!(!codex.contains("onFailure"), "{codex}");
    }

    #[test]
    fn merging_twice_changes_nothing() {
        for adapter in Adapter::all() {
            let first = merged(adapter, None);
            let second = merged(adapter, Some(&first.text));
            assert!(!second.changed);
            assert_eq!(second.text, first.text);
            assert_eq!(second.foreign_digest, first.foreign_digest);
        }
    }

    const FOREIGN: &str = r#"{
  "permissions": {"allow": ["Bash(ls)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}
    ],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "prettier --write"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "bay hook talk-wait", "async": true}]}]
  },
  "model": "opus"
}"#;

    #[test]
    fn every_key_and_entry_another_tool_wrote_stays_where_it_was() {
        let out = merged(claude(), Some(FOREIGN));
        assert!(out.changed);
        let json = Json::parse(&out.text).expect("JSON");
        let Json::Object(root) = &json else {
            panic!("an object")
        };
        let keys: Vec<&str> = root.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["permissions", "hooks", "model"]);
        assert_eq!(
            commands(&out.text, "PreToolUse"),
            ["guard.sh", &claude().command(Moment::ToolBefore)]
        );
        assert_eq!(commands(&out.text, "PostToolUse"), ["prettier --write"]);
        assert_eq!(
            commands(&out.text, "Stop"),
            ["bay hook talk-wait", &claude().command(Moment::TurnEnd)]
        );
        let Some(Json::Object(events)) = json.get("hooks") else {
            panic!("hooks")
        };
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(&names[..3], ["PreToolUse", "PostToolUse", "Stop"]);
        let again = merged(claude(), Some(&out.text));
        assert!(
            !again.changed,
            "a foreign entry after bay's is no reason to move"
        );
    }

    #[test]
    fn an_entry_added_after_bay_s_keeps_its_place_and_changes_the_digest() {
        let first = merged(claude(), None);
        let mut json = Json::parse(&first.text).expect("JSON");
        if let Json::Object(root) = &mut json
            && let Json::Object(events) = Json::entry(root, "hooks", Json::Null)
            && let Json::Array(groups) = Json::entry(events, "Stop", Json::Null)
        {
            groups.push(
                Json::parse(r#"{"hooks":[{"type":"command","command":"notify-send done"}]}"#)
                    .expect("JSON"),
            );
        }
        let edited = json.pretty();
        let again = merged(claude(), Some(&edited));
        assert!(!again.changed);
        assert_eq!(again.text, edited);
        assert_ne!(again.foreign_digest, first.foreign_digest);
    }

    #[test]
    fn an_older_bay_s_entries_are_rewritten_and_a_foreign_handler_in_bay_s_group_stays() {
        let old = r#"{"hooks":{
          "PreToolUse":[{"matcher":"Bash","hooks":[
            {"type":"command","command":"lint.sh"},
            {"type":"command","command":"bay hook step.end"}]}],
          "PostToolUse":[{"hooks":[{"type":"command","command":"bay hook step.end"}]}]}}"#;
        let out = merged(claude(), Some(old));
        assert_eq!(
            commands(&out.text, "PreToolUse"),
            ["lint.sh", &claude().command(Moment::ToolBefore)]
        );
        assert!(
            !out.text.contains("PostToolUse"),
            "an event that held only bay's old entry is gone: {}",
            out.text
        );
        assert!(!merged(claude(), Some(&out.text)).changed);
    }

    #[test]
    fn a_file_bay_cannot_read_whole_is_refused() {
        for bad in ["[1]", "{\"hooks\": 3}", "{\"hooks\": {\"Stop\": {}}}", "{"] {
            assert!(merge(claude(), Some(bad)).is_err(), "{bad}");
        }
        assert!(
            merge(claude(), Some("  \n")).is_ok(),
            "an empty file is no file"
        );
    }

    #[test]
    fn main_lacks_the_entries_until_its_copy_holds_them() {
        let written = merged(claude(), Some(FOREIGN)).text;
        assert!(to_land(claude(), None));
        assert!(to_land(claude(), Some(FOREIGN)));
        assert!(!to_land(claude(), Some(&written)));
        assert!(to_land(Product::Codex.adapter(), Some(&written)));
    }

    #[test]
    fn bay_s_handlers_are_told_apart_from_others() {
        let handler = |command: &str| Json::Object(vec![("command".into(), Json::text(command))]);
        assert!(is_bay(&handler("bay hook tool.before")));
        assert!(is_bay(&handler(&claude().command(Moment::SessionEnd))));
        assert!(is_bay(&handler("bay hook tool_before")), "an older name");
        assert!(!is_bay(&handler("bay hook talk-wait")));
        assert!(!is_bay(&handler("bay status")));
        assert!(!is_bay(&handler("ebay hook x")));
        assert!(!is_bay(&Json::Null));
    }

    #[test]
    fn old_moment_names_are_found_among_bay_s_handlers_only() {
        let old = r#"{"hooks":{"PreToolUse":[{"hooks":[
            {"type":"command","command":"bay hook tool_before"},
            {"type":"command","command":"guard hook x"},
            {"type":"command","command":"bay hook tool.before"}]}],
          "Stop":[{"hooks":[{"type":"command","command":"bay hook talk-wait"}]}]}}"#;
        assert_eq!(old_names(old), ["tool_before"]);
        assert_eq!(
            old_names(&merged(claude(), None).text),
            Vec::<String>::new()
        );
        assert_eq!(old_names("not json"), Vec::<String>::new());
    }
}
