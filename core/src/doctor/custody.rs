//! The `key-custody` row: whether an agent session could read a signing key this machine
//! holds (`KEY_EXPOSED`). The CLI reads paths, modes and public halves only, never a private
//! key; the verdict is made here from those facts.
//!
//! A file key is exposed when:
//! - agent sessions run under this account and this account can read it;
//! - its mode lets its group or others read it, so an agent under another account may;
//! - it lies inside the repository, where every agent session reads;
//! - agent sessions run under this account, which has passwordless `sudo`.
//!
//! A hardware key (an `sk-` type in its `.pub`) signs only with a touch, and stays green.
//! Off Unix the row says `not checked`.

use serde::Serialize;
use serde_json::json;

use super::{Row, State};
use crate::reason::ReasonCode;

/// The Git config settings that name a signing key the row judges.
pub const KEY_SETTINGS: [&str; 6] = [
    "bay.executorKey",
    "bay.producerKey",
    "bay.reviewerKey",
    "bay.approverKey",
    "bay.registryKey",
    "bay.releaseKey",
];

/// One key a setting names, as the CLI found its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFile {
    /// The setting, as [`KEY_SETTINGS`] spells it.
    pub setting: String,
    pub path: String,
    /// `None` when no file is there.
    pub found: Option<KeyFacts>,
}

/// What the CLI read of a key file, without opening it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFacts {
    /// The permission bits (`0o777`).
    pub mode: u32,
    /// Whether this account may read it (its owner, or through group or other bits).
    pub readable: bool,
    /// The `.pub` beside it, if any: its text.
    pub public: Option<String>,
    /// Whether it lies inside the repository's work tree or Git directory.
    pub in_repository: bool,
}

/// Everything the row looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Custody {
    /// Whether bay can judge key files here (Unix).
    pub unix: bool,
    pub keys: Vec<KeyFile>,
    /// Whether agent sessions run under this account (hook sessions of this clone).
    pub sessions_here: bool,
    /// Whether this account has passwordless `sudo`.
    pub passwordless_sudo: bool,
}

/// One exposed key: `detail.keys` of `KEY_EXPOSED`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exposed {
    pub setting: String,
    pub path: String,
    pub why: String,
}

/// Whether a `.pub` names a hardware key (`sk-ssh-ed25519@openssh.com`, `sk-ecdsa-...`).
pub(crate) fn hardware(public: Option<&str>) -> bool {
    public
        .and_then(|text| text.split_whitespace().next())
        .is_some_and(|keytype| keytype.starts_with("sk-"))
}

/// Why `key` is exposed, if it is.
fn exposure(custody: &Custody, key: &KeyFacts) -> Option<String> {
    if hardware(key.public.as_deref()) {
        return None;
    }
    if key.in_repository {
        return Some("it lies inside the repository, where every agent session reads".into());
    }
    if key.mode & 0o044 != 0 {
        return Some(format!(
            "its mode {:o} lets its group or others read it, so an agent under another account may",
            key.mode & 0o777
        ));
    }
    if custody.sessions_here && key.readable {
        return Some("agent sessions run under this account, which can read it".into());
    }
    if custody.sessions_here && custody.passwordless_sudo {
        return Some("agent sessions run under this account, which has passwordless sudo".into());
    }
    None
}

/// The exposed keys among `custody`'s.
pub fn exposed(custody: &Custody) -> Vec<Exposed> {
    if !custody.unix {
        return Vec::new();
    }
    custody
        .keys
        .iter()
        .filter_map(|key| {
            let why = exposure(custody, key.found.as_ref()?)?;
            Some(Exposed {
                setting: key.setting.clone(),
                path: key.path.clone(),
                why,
            })
        })
        .collect()
}

/// The `key-custody` row.
pub fn custody_row(custody: &Custody) -> Row {
    let listed: Vec<_> = custody
        .keys
        .iter()
        .map(|key| {
            json!({
                "setting": key.setting,
                "path": key.path,
                "hardware": key.found.as_ref().is_some_and(|f| hardware(f.public.as_deref())),
                "found": key.found.is_some(),
            })
        })
        .collect();
    if !custody.unix {
        return Row {
            state: State::Off,
            found: Some("not checked".into()),
            ..Row::green("key-custody", None)
        }
        .with("keys", json!(listed));
    }
    let exposed = exposed(custody);
    let row = match exposed.first() {
        None => Row::green(
            "key-custody",
            Some(format!(
                "{} signing key(s) out of agent reach",
                custody.keys.len()
            )),
        ),
        Some(first) => Row {
            state: State::Red,
            code: Some(ReasonCode::KeyExposed),
            fix: Some(format!(
                "move the key {} names ({}) onto hardware, or out of the account agent \
                 sessions run as",
                first.setting, first.path
            )),
            ..Row::green("key-custody", Some(format!("{} exposed", exposed.len())))
        },
    };
    let row = row
        .with("keys", json!(listed))
        .with("sessions_here", json!(custody.sessions_here));
    match exposed.first() {
        Some(first) => row
            .with("key", json!(first.setting))
            .with("exposed", json!(exposed)),
        None => row,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(setting: &str, mode: u32, readable: bool, public: Option<&str>) -> KeyFile {
        KeyFile {
            setting: setting.into(),
            path: format!("/home/r/.ssh/{setting}"),
            found: Some(KeyFacts {
                mode,
                readable,
                public: public.map(str::to_owned),
                in_repository: false,
            }),
        }
    }

    fn custody(keys: Vec<KeyFile>, sessions_here: bool) -> Custody {
        Custody {
            unix: true,
            keys,
            sessions_here,
            passwordless_sudo: false,
        }
    }

    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl r";
    const SK: &str = "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAI r";

    #[test]
    fn a_private_key_on_an_account_without_agent_sessions_is_green() {
        let row = custody_row(&custody(
            vec![key("bay.executorKey", 0o600, true, Some(ED25519))],
            false,
        ));
        assert_eq!(row.state, State::Green, "{row:?}");
        assert_eq!(row.code, None);
    }

    #[test]
    fn a_file_key_agent_sessions_can_read_is_red_key_exposed() {
        let row = custody_row(&custody(
            vec![key("bay.producerKey", 0o600, true, Some(ED25519))],
            true,
        ));
        assert_eq!(row.state, State::Red, "{row:?}");
        assert_eq!(row.code, Some(ReasonCode::KeyExposed));
        assert_eq!(row.more["key"], "bay.producerKey");
        // A hardware key stays green on the same account.
        let row = custody_row(&custody(
            vec![key("bay.producerKey", 0o600, true, Some(SK))],
            true,
        ));
        assert_eq!(row.state, State::Green, "{row:?}");
    }

    #[test]
    fn group_or_other_read_bits_or_a_key_in_the_repository_expose_it_anywhere() {
        for mode in [0o640, 0o604, 0o644] {
            let found = exposed(&custody(
                vec![key("bay.registryKey", mode, false, Some(ED25519))],
                false,
            ));
            assert_eq!(found.len(), 1, "{mode:o}");
            assert!(found[0].why.contains("group or others"), "{found:?}");
        }
        let mut inside = key("bay.executorKey", 0o600, false, None);
        if let Some(found) = &mut inside.found {
            found.in_repository = true;
        }
        let found = exposed(&custody(vec![inside], false));
        assert!(found[0].why.contains("inside the repository"), "{found:?}");
    }

    #[test]
    fn passwordless_sudo_with_agent_sessions_exposes_a_file_key_it_cannot_read() {
        let mut facts = custody(
            vec![key("bay.executorKey", 0o600, false, Some(ED25519))],
            true,
        );
        assert!(exposed(&facts).is_empty());
        facts.passwordless_sudo = true;
        assert_eq!(exposed(&facts).len(), 1);
    }

    #[test]
    fn off_unix_and_a_missing_file_are_not_judged() {
        let mut facts = custody(
            vec![key("bay.executorKey", 0o644, true, Some(ED25519))],
            true,
        );
        facts.unix = false;
        let row = custody_row(&facts);
        assert_eq!(row.state, State::Off);
        assert_eq!(row.found.as_deref(), Some("not checked"));
        let gone = KeyFile {
            setting: "bay.executorKey".into(),
            path: "/nowhere".into(),
            found: None,
        };
        assert!(exposed(&custody(vec![gone], true)).is_empty());
    }
}
