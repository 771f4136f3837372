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
//!
//! The agent key (`bay.agentKey`) belongs to the account agent sessions run as, so it is never
//! exposed; the row lists it, with what its signature proves about who signed
//! (`actor::actor_proof`, from the facts `bay merge` gathers): several actors who can all read
//! one file agent key (`account`) make the row `degraded`, unless an exposed key made it red.
//! Under main's `require_actor_proof`, `actor_refusal` names the code `bay merge` refuses with
//! here (`actor::unproven`, the same judgement).

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Row, RowFacts, State};
use crate::actor::{self, ActorFacts, ActorProof};
use crate::policy::AgentRules;
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
    /// The agent key and the actors, gathered as `bay merge` gathers them.
    pub actor: ActorFacts,
    /// Main's `[agent]` rules as this clone last fetched them; none outside a clone.
    pub agent: AgentRules,
}

/// One exposed key: `detail.keys` of `KEY_EXPOSED`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exposed {
    pub setting: String,
    pub path: String,
    pub why: String,
}

/// What the `key-custody` row shows: each key, what was judged of them, and the actors.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shown {
    pub keys: Vec<Listed>,
    /// None off Unix, where bay does not judge key files.
    #[serde(flatten)]
    pub judged: Option<Judged>,
    #[serde(flatten)]
    pub actors: Actors,
}

/// One key a setting names, in `keys`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Listed {
    pub setting: String,
    #[serde(flatten)]
    pub key: KeyShown,
}

/// A key file as the row shows it: never its contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyShown {
    pub path: String,
    /// Whether its `.pub` names a hardware key.
    pub hardware: bool,
    /// Whether a file is there.
    pub found: bool,
}

/// What the row judged of the keys, on Unix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Judged {
    pub sessions_here: bool,
    /// The exposed keys, if any is: what makes the row red.
    #[serde(flatten)]
    pub exposure: Option<Exposure>,
}

/// The keys an agent session could read: `key` names the first, whose fix the row gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exposure {
    pub key: String,
    pub exposed: Vec<Exposed>,
}

/// The agent key and what its signature proves about who signed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Actors {
    /// `bay.agentKey`'s file; `null` when it is unset.
    pub agent_key: Option<KeyShown>,
    pub actors: BTreeSet<String>,
    pub actor_proof: ActorProof,
    pub require_actor_proof: bool,
    /// What to do when the agent key cannot tell the actors apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_note: Option<String>,
    /// The code `bay merge` refuses with here, under `require_actor_proof`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_refusal: Option<ReasonCode>,
}

impl KeyShown {
    fn of(key: &KeyFile) -> KeyShown {
        KeyShown {
            path: key.path.clone(),
            hardware: key
                .found
                .as_ref()
                .is_some_and(|f| hardware(f.public.as_deref())),
            found: key.found.is_some(),
        }
    }
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

/// What to do when the agent key cannot tell the actors apart: `actor_note`.
fn actor_note(facts: &ActorFacts, proof: ActorProof) -> Option<String> {
    const HARDWARE: &str = "a hardware agent key (ssh-keygen -t ed25519-sk)";
    let path = facts.agent_key.as_ref().map_or("", |key| key.path.as_str());
    match proof {
        ActorProof::None | ActorProof::Key => None,
        ActorProof::Account => Some(format!(
            "{} run under this OS account, which can read the file agent key {path}, so any \
             of them can sign as another: give each actor its own OS account, or use {HARDWARE}",
            facts.actors.iter().cloned().collect::<Vec<_>>().join(", ")
        )),
        ActorProof::Unjudged if facts.agent_key.as_ref().is_some_and(|k| k.found.is_none()) => {
            Some(format!(
                "no file is at {path}, where bay.agentKey points, so bay cannot judge it: \
                 point bay.agentKey at the key's file, or use {HARDWARE}"
            ))
        }
        ActorProof::Unjudged => Some(format!(
            "bay cannot judge the file agent key {path} off Unix: use {HARDWARE}"
        )),
    }
}

/// The actor fields: the agent key, the actors, what a signature proves about who signed, and
/// the note and refusal where they apply.
fn actors(custody: &Custody) -> Actors {
    let facts = &custody.actor;
    let proof = actor::actor_proof(facts);
    Actors {
        agent_key: facts.agent_key.as_ref().map(KeyShown::of),
        actors: facts.actors.clone(),
        actor_proof: proof,
        require_actor_proof: custody.agent.require_actor_proof,
        actor_note: actor_note(facts, proof),
        actor_refusal: actor::unproven(&custody.agent, facts, None)
            .and_then(|refused| refused.reason),
    }
}

/// The `key-custody` row: red for an exposed key; else `degraded` when several actors can
/// read one file agent key (`account`).
pub fn custody_row(custody: &Custody) -> Row {
    let actors = actors(custody);
    let keys: Vec<Listed> = custody
        .keys
        .iter()
        .map(|key| Listed {
            setting: key.setting.clone(),
            key: KeyShown::of(key),
        })
        .collect();
    if !custody.unix {
        return Row {
            state: State::Off,
            found: Some("not checked".into()),
            ..Row::green("key-custody", None)
        }
        .with(RowFacts::KeyCustody(Shown {
            keys,
            judged: None,
            actors,
        }));
    }
    let exposed = exposed(custody);
    let mut row = match exposed.first() {
        None => Row::green(
            "key-custody",
            Some(format!(
                "{} signing key(s) out of agent reach",
                custody.keys.len()
            )),
        ),
        Some(first) => Row {
            state: State::Red {
                code: ReasonCode::KeyExposed,
                fix: format!(
                    "move the key {} names ({}) onto hardware, or out of the account agent \
                     sessions run as",
                    first.setting, first.path
                ),
            },
            ..Row::green("key-custody", Some(format!("{} exposed", exposed.len())))
        },
    };
    if let (State::Green, ActorProof::Account, Some(note)) =
        (&row.state, actors.actor_proof, &actors.actor_note)
    {
        row.state = State::Degraded { fix: note.clone() };
    }
    let exposure = exposed
        .first()
        .map(|first| first.setting.clone())
        .map(|key| Exposure { key, exposed });
    row.with(RowFacts::KeyCustody(Shown {
        keys,
        judged: Some(Judged {
            sessions_here: custody.sessions_here,
            exposure,
        }),
        actors,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::doctor::tests::shown;

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
            actor: ActorFacts {
                unix: true,
                agent_key: None,
                actors: BTreeSet::from(["ann".to_owned()]),
            },
            agent: AgentRules::default(),
        }
    }

    /// `custody` with an agent key of type `keytype` (`None`: no file at its path) this
    /// account can read, `actors` among the session records, and `require_actor_proof`.
    fn with_agent(
        mut facts: Custody,
        keytype: Option<&str>,
        actors: &[&str],
        require_actor_proof: bool,
    ) -> Custody {
        let mut agent = key("bay.agentKey", 0o600, true, None);
        let readable = agent.found.take().expect("a key file");
        agent.found = keytype.map(|keytype| KeyFacts {
            public: Some(format!("{keytype} AAAA agent")),
            ..readable
        });
        facts.actor = ActorFacts {
            unix: facts.unix,
            agent_key: Some(agent),
            actors: actors.iter().map(|a| (*a).to_owned()).collect(),
        };
        facts.agent.require_actor_proof = require_actor_proof;
        facts
    }

    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl r";
    const SK_TYPE: &str = "sk-ssh-ed25519@openssh.com";
    const SK: &str = "sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29tAAAAI r";

    #[test]
    fn a_private_key_on_an_account_without_agent_sessions_is_green() {
        let row = custody_row(&custody(
            vec![key("bay.executorKey", 0o600, true, Some(ED25519))],
            false,
        ));
        assert_eq!(row.state, State::Green, "{row:?}");
        assert_eq!(row.code(), None);
    }

    #[test]
    fn a_file_key_agent_sessions_can_read_is_red_key_exposed() {
        let row = custody_row(&custody(
            vec![key("bay.producerKey", 0o600, true, Some(ED25519))],
            true,
        ));
        assert!(row.is_red(), "{row:?}");
        assert_eq!(row.code(), Some(ReasonCode::KeyExposed));
        assert_eq!(shown(&row)["key"], "bay.producerKey");
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

    #[test]
    fn each_actor_proof_shows_on_the_row_and_only_account_degrades_it() {
        let both = ["ann", "bot-7"];
        // (agent key type, actors, unix, proof, state, a note)
        let cases = [
            (None, &both[..], true, "none", "green", false),
            (
                Some(Some("ssh-ed25519")),
                &both[..1],
                true,
                "key",
                "green",
                false,
            ),
            (Some(Some(SK_TYPE)), &both[..], true, "key", "green", false),
            (
                Some(Some("ssh-ed25519")),
                &both[..],
                true,
                "account",
                "degraded",
                true,
            ),
            (Some(None), &both[..1], true, "unjudged", "green", true),
            (
                Some(Some("ssh-ed25519")),
                &both[..1],
                false,
                "unjudged",
                "off",
                true,
            ),
        ];
        for (agent, actors, unix, proof, state, noted) in cases {
            let mut facts = custody(Vec::new(), true);
            facts.unix = unix;
            facts.actor.unix = unix;
            if let Some(keytype) = agent {
                facts = with_agent(facts, keytype, actors, false);
            } else {
                facts.actor.actors = actors.iter().map(|a| (*a).to_owned()).collect();
            }
            let row = custody_row(&facts);
            let case = format!("{proof} {unix}: {row:?}");
            assert_eq!(shown(&row)["actor_proof"], proof, "{case}");
            assert_eq!(shown(&row)["state"], state, "{case}");
            assert_eq!(shown(&row)["actors"], json!(actors), "{case}");
            assert_eq!(shown(&row)["require_actor_proof"], false, "{case}");
            assert_eq!(shown(&row).get("actor_note").is_some(), noted, "{case}");
            assert!(shown(&row).get("actor_refusal").is_none(), "{case}");
            assert!(!row.is_red(), "{case}");
            assert_eq!(
                shown(&row)["agent_key"].is_null(),
                agent.is_none(),
                "{case}"
            );
        }
    }

    #[test]
    fn a_shared_file_agent_key_is_degraded_and_names_the_fix() {
        let row = custody_row(&with_agent(
            custody(Vec::new(), true),
            Some("ssh-ed25519"),
            &["ann", "bot-7"],
            false,
        ));
        assert!(matches!(row.state, State::Degraded { .. }), "{row:?}");
        assert_eq!(row.code(), None);
        let shown = shown(&row);
        let note = shown["actor_note"].as_str().expect("a note");
        assert!(
            note.contains("ann, bot-7")
                && note.contains("its own OS account")
                && note.contains("hardware agent key"),
            "{note}"
        );
        assert_eq!(row.fix(), Some(note));
        assert_eq!(
            serde_json::to_value(&row).expect("a row")["state"],
            "degraded"
        );
    }

    #[test]
    fn require_actor_proof_names_the_refusal_for_account_and_unjudged_only() {
        let both = ["ann", "bot-7"];
        for (keytype, actors, refused) in [
            (Some(Some("ssh-ed25519")), &both[..], true),
            (Some(None), &both[..1], true),
            (Some(Some("ssh-ed25519")), &both[..1], false),
            (Some(Some(SK_TYPE)), &both[..], false),
            (None, &both[..], false),
        ] {
            let mut facts = custody(Vec::new(), true);
            match keytype {
                Some(keytype) => facts = with_agent(facts, keytype, actors, true),
                None => facts.agent.require_actor_proof = true,
            }
            let row = custody_row(&facts);
            assert_eq!(shown(&row)["require_actor_proof"], true, "{row:?}");
            match refused {
                true => assert_eq!(shown(&row)["actor_refusal"], "ACTOR_UNPROVEN", "{row:?}"),
                false => assert!(shown(&row).get("actor_refusal").is_none(), "{row:?}"),
            }
            // The row and `bay merge` judge alike.
            let merge = actor::unproven(&facts.agent, &facts.actor, None);
            assert_eq!(merge.is_some(), refused, "{row:?}");
        }
        // The same shared key with the setting off: degraded, and no refusal.
        let off = with_agent(custody(Vec::new(), true), Some("ssh-ed25519"), &both, false);
        let row = custody_row(&off);
        assert!(matches!(row.state, State::Degraded { .. }), "{row:?}");
        assert!(shown(&row).get("actor_refusal").is_none(), "{row:?}");
    }

    #[test]
    fn an_exposed_key_keeps_the_row_red_beside_a_shared_agent_key() {
        let facts = with_agent(
            custody(
                vec![key("bay.executorKey", 0o600, true, Some(ED25519))],
                true,
            ),
            Some("ssh-ed25519"),
            &["ann", "bot-7"],
            true,
        );
        let row = custody_row(&facts);
        assert!(row.is_red(), "{row:?}");
        assert_eq!(row.code(), Some(ReasonCode::KeyExposed));
        assert!(row.fix().is_some_and(|fix| fix.contains("bay.executorKey")));
        assert_eq!(shown(&row)["actor_proof"], "account");
        assert_eq!(shown(&row)["actor_refusal"], "ACTOR_UNPROVEN");
        assert!(shown(&row)["actor_note"].is_string(), "{row:?}");
    }

    #[test]
    fn the_row_shows_exactly_its_keys_what_was_judged_and_the_actors() {
        let mut off = custody(
            vec![key("bay.executorKey", 0o644, true, Some(ED25519))],
            true,
        );
        off.unix = false;
        let listed = json!([{
            "setting": "bay.executorKey", "path": "/home/r/.ssh/bay.executorKey",
            "hardware": false, "found": true,
        }]);
        assert_eq!(
            shown(&custody_row(&off)),
            json!({
                "name": "key-custody", "state": "off", "required": true,
                "found": "not checked", "keys": listed,
                "agent_key": null, "actors": ["ann"], "actor_proof": "none",
                "require_actor_proof": false,
            })
        );
        let note = "ann, bot-7 run under this OS account, which can read the file agent key \
                    /home/r/.ssh/bay.agentKey, so any of them can sign as another: give each \
                    actor its own OS account, or use a hardware agent key (ssh-keygen -t \
                    ed25519-sk)";
        let actors = json!({
            "agent_key": {"path": "/home/r/.ssh/bay.agentKey", "hardware": false, "found": true},
            "actors": ["ann", "bot-7"], "actor_proof": "account", "require_actor_proof": true,
            "actor_note": note, "actor_refusal": "ACTOR_UNPROVEN",
        });
        let with_actors = |mut row: serde_json::Value| {
            if let (Some(row), Some(actors)) = (row.as_object_mut(), actors.as_object()) {
                row.extend(actors.clone());
            }
            row
        };
        let shared = |keys| {
            with_agent(
                custody(keys, true),
                Some("ssh-ed25519"),
                &["ann", "bot-7"],
                true,
            )
        };
        assert_eq!(
            shown(&custody_row(&shared(Vec::new()))),
            with_actors(json!({
                "name": "key-custody", "state": "degraded", "required": true,
                "found": "0 signing key(s) out of agent reach", "fix": note,
                "keys": [], "sessions_here": true,
            }))
        );
        let red = shared(vec![key("bay.executorKey", 0o600, true, Some(ED25519))]);
        assert_eq!(
            shown(&custody_row(&red)),
            with_actors(json!({
                "name": "key-custody", "state": "red", "required": true, "found": "1 exposed",
                "code": "KEY_EXPOSED",
                "fix": "move the key bay.executorKey names (/home/r/.ssh/bay.executorKey) onto \
                        hardware, or out of the account agent sessions run as",
                "keys": listed, "sessions_here": true, "key": "bay.executorKey",
                "exposed": [{
                    "setting": "bay.executorKey", "path": "/home/r/.ssh/bay.executorKey",
                    "why": "agent sessions run under this account, which can read it",
                }],
            }))
        );
    }
}
