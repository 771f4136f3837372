//! Who is acting: the name bay records for an agent, and where it came from; the rules of the
//! policy's `[agent]` table that `bay start` holds the actor to; and what a signature by this
//! machine's agent key proves about which agent made it, which `bay merge` holds the actor to
//! under `require_actor_proof`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::detail::Detail;
use crate::doctor::custody::{KeyFile, hardware};

use crate::id::ChangeId;
use crate::policy::AgentRules;
use crate::reason::ReasonCode;
use crate::result::BayResult;

/// Where the actor's name came from, as results report it in `actor_source`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ActorSource {
    /// `BAY_ACTOR`.
    Env,
    /// The account's user name.
    UserDefault,
    /// Neither was there.
    Default,
}

impl ActorSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ActorSource::Env => "env",
            ActorSource::UserDefault => "user-default",
            ActorSource::Default => "default",
        }
    }
}

/// The actor from `BAY_ACTOR`, else the user name, else `agent`. Blank values count as unset;
/// a name is kept to one line, since it goes into trailers and step documents.
pub fn resolve(bay_actor: Option<&str>, user: Option<&str>) -> (String, ActorSource) {
    let clean = |name: Option<&str>| {
        name.map(|n| n.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|n| !n.is_empty())
    };
    if let Some(name) = clean(bay_actor) {
        return (name, ActorSource::Env);
    }
    if let Some(name) = clean(user) {
        return (name, ActorSource::UserDefault);
    }
    ("agent".to_string(), ActorSource::Default)
}

/// What a refusal of who the agent is names, one shape per reason.
#[derive(Serialize)]
#[serde(untagged)]
enum Refusal<'a> {
    /// `ACTOR_UNNAMED`: where the defaulted name came from.
    Unnamed { actor_source: ActorSource },
    /// `WIP_LIMIT`: the live changes the actor holds, and the policy's limit.
    OverLimit {
        live_changes: &'a [ChangeId],
        limit: u64,
    },
    /// `ACTOR_UNPROVEN`: what the agent key proves, who could sign, and the key's path.
    Unproven {
        actor_proof: ActorProof,
        actors: &'a BTreeSet<String>,
        key: Option<&'a str>,
    },
}

impl Detail for Refusal<'_> {}

/// `ACTOR_UNNAMED` when the policy requires a name and this one came from a default: without
/// `BAY_ACTOR`, every session of one account has the same name, and bay cannot tell them apart.
pub fn unnamed(rules: &AgentRules, source: ActorSource) -> Option<BayResult> {
    (rules.require_actor && source != ActorSource::Env).then(|| {
        crate::report::refused(
            ReasonCode::ActorUnnamed,
            None,
            None,
            Refusal::Unnamed {
                actor_source: source,
            }
            .to_json(),
        )
    })
}

/// `WIP_LIMIT` when a new change would take the actor past `max_live_changes`: `live` is every
/// live change it already holds, which the refusal names.
pub fn over_limit(rules: &AgentRules, live: &[ChangeId]) -> Option<BayResult> {
    let limit = rules.max_live_changes?;
    (live.len() as u64 >= limit).then(|| {
        crate::report::refused(
            ReasonCode::WipLimit,
            None,
            None,
            Refusal::OverLimit {
                live_changes: live,
                limit,
            }
            .to_json(),
        )
    })
}

/// What a signature by this machine's agent key tells about which agent made it:
/// `actor_proof`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActorProof {
    /// No agent key is set: nothing is signed as an agent, and nothing is refused for it.
    None,
    /// The key tells the agent: a hardware key, or a file key one actor alone uses here.
    Key,
    /// Several actors share this OS account, which can read their file agent key: any of
    /// them can sign as another.
    Account,
    /// bay cannot judge the key here: a file key off Unix, or no file where the setting
    /// points.
    Unjudged,
}

/// The facts the CLI gathers for [`actor_proof`]: paths, modes and public halves only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActorFacts {
    /// Whether bay can judge key files here (Unix).
    pub unix: bool,
    /// The key `bay.agentKey` names, as the CLI found its file; `None` when it is unset.
    pub agent_key: Option<KeyFile>,
    /// The actors named in this clone's session records (which this account wrote): the agents
    /// whose sessions run here, not whoever runs the command.
    pub actors: BTreeSet<String>,
}

/// Judges what the agent key proves: see [`ActorProof`].
pub fn actor_proof(facts: &ActorFacts) -> ActorProof {
    let Some(key) = &facts.agent_key else {
        return ActorProof::None;
    };
    let Some(found) = &key.found else {
        return ActorProof::Unjudged;
    };
    if hardware(found.public.as_deref()) {
        return ActorProof::Key;
    }
    if !facts.unix {
        return ActorProof::Unjudged;
    }
    match facts.actors.len() > 1 && found.readable {
        true => ActorProof::Account,
        false => ActorProof::Key,
    }
}

/// `ACTOR_UNPROVEN` when main's policy requires proof of the actor and the agent key cannot
/// give it ([`ActorProof::Account`] or [`ActorProof::Unjudged`]); `none` refuses nothing.
/// `change` is the change the merge was asked for.
pub fn unproven(
    rules: &AgentRules,
    facts: &ActorFacts,
    change: Option<&ChangeId>,
) -> Option<BayResult> {
    if !rules.require_actor_proof {
        return None;
    }
    let proof = actor_proof(facts);
    matches!(proof, ActorProof::Account | ActorProof::Unjudged).then(|| {
        crate::report::refused(
            ReasonCode::ActorUnproven,
            change,
            None,
            Refusal::Unproven {
                actor_proof: proof,
                actors: &facts.actors,
                key: facts.agent_key.as_ref().map(|key| key.path.as_str()),
            }
            .to_json(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::custody::KeyFacts;
    use serde_json::json;

    fn facts(unix: bool, key: Option<(bool, &str)>, actors: &[&str]) -> ActorFacts {
        ActorFacts {
            unix,
            agent_key: key.map(|(readable, keytype)| KeyFile {
                setting: "bay.agentKey".into(),
                path: "/home/a/.ssh/agent".into(),
                found: Some(KeyFacts {
                    mode: 0o600,
                    readable,
                    public: Some(format!("{keytype} AAAA agent")),
                    in_repository: false,
                }),
            }),
            actors: actors.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    const REQUIRED: AgentRules = AgentRules {
        require_actor: false,
        max_live_changes: None,
        require_actor_proof: true,
    };

    #[test]
    fn a_file_agent_key_several_actors_here_can_read_proves_only_the_account() {
        let shared = facts(true, Some((true, "ssh-ed25519")), &["ann", "bot-7"]);
        assert_eq!(actor_proof(&shared), ActorProof::Account);
        let refused = unproven(&REQUIRED, &shared, None).expect("refused");
        assert_eq!(refused.reason, Some(ReasonCode::ActorUnproven));
        assert_eq!(refused.detail["actor_proof"], "account");
        assert_eq!(refused.detail["actors"], json!(["ann", "bot-7"]));
        assert_eq!(refused.detail["key"], "/home/a/.ssh/agent");
        // Off by default: the same machine, and nothing refused.
        assert_eq!(unproven(&AgentRules::default(), &shared, None), None);
    }

    #[test]
    fn one_actor_a_hardware_key_or_an_unreadable_file_proves_the_actor() {
        for proven in [
            facts(true, Some((true, "ssh-ed25519")), &["ann"]),
            facts(true, Some((false, "ssh-ed25519")), &["ann", "bot-7"]),
            facts(
                true,
                Some((true, "sk-ssh-ed25519@openssh.com")),
                &["ann", "bot-7"],
            ),
            facts(
                false,
                Some((true, "sk-ecdsa-sha2-nistp256@openssh.com")),
                &["a", "b"],
            ),
        ] {
            assert_eq!(actor_proof(&proven), ActorProof::Key, "{proven:?}");
            assert_eq!(unproven(&REQUIRED, &proven, None), None);
        }
    }

    #[test]
    fn no_agent_key_refuses_nothing() {
        let none = facts(true, None, &["ann", "bot-7"]);
        assert_eq!(actor_proof(&none), ActorProof::None);
        assert_eq!(unproven(&REQUIRED, &none, None), None);
    }

    #[test]
    fn a_key_bay_cannot_judge_is_refused() {
        let windows = facts(false, Some((true, "ssh-ed25519")), &["ann"]);
        assert_eq!(actor_proof(&windows), ActorProof::Unjudged);
        let mut missing = facts(true, Some((true, "ssh-ed25519")), &["ann"]);
        if let Some(key) = &mut missing.agent_key {
            key.found = None;
        }
        assert_eq!(actor_proof(&missing), ActorProof::Unjudged);
        for machine in [windows, missing] {
            let refused = unproven(&REQUIRED, &machine, None).expect("refused");
            assert_eq!(refused.detail["actor_proof"], "unjudged");
        }
    }

    #[test]
    fn a_required_name_must_come_from_bay_actor() {
        let rules = AgentRules {
            require_actor: true,
            ..AgentRules::default()
        };
        assert_eq!(unnamed(&rules, ActorSource::Env), None);
        for source in [ActorSource::UserDefault, ActorSource::Default] {
            let refused = unnamed(&rules, source).expect("refused");
            assert_eq!(refused.reason, Some(ReasonCode::ActorUnnamed));
            assert_eq!(refused.detail["actor_source"], source.as_str());
        }
        assert_eq!(unnamed(&AgentRules::default(), ActorSource::Default), None);
    }

    #[test]
    fn the_limit_counts_the_live_changes_held() {
        let rules = AgentRules {
            max_live_changes: Some(2),
            ..AgentRules::default()
        };
        let one = ChangeId::parse("c7k2m4qa").expect("an id");
        let two = ChangeId::parse("k2m4qa7c").expect("an id");
        assert_eq!(over_limit(&rules, std::slice::from_ref(&one)), None);
        let refused = over_limit(&rules, &[one, two]).expect("refused");
        assert_eq!(refused.reason, Some(ReasonCode::WipLimit));
        assert_eq!(
            refused.detail["live_changes"],
            json!(["c7k2m4qa", "k2m4qa7c"])
        );
        assert_eq!(refused.detail["limit"], 2);
        assert_eq!(over_limit(&AgentRules::default(), &[]), None);
    }

    #[test]
    fn bay_actor_wins_then_the_user_then_agent() {
        assert_eq!(
            resolve(Some("bot-7"), Some("ann")),
            ("bot-7".into(), ActorSource::Env)
        );
        assert_eq!(
            resolve(None, Some("ann")),
            ("ann".into(), ActorSource::UserDefault)
        );
        assert_eq!(
            resolve(Some("  "), Some("ann")),
            ("ann".into(), ActorSource::UserDefault)
        );
        assert_eq!(resolve(None, None), ("agent".into(), ActorSource::Default));
        assert_eq!(
            resolve(Some("a\nb"), None),
            ("a b".into(), ActorSource::Env)
        );
    }
}
