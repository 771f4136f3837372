//! Who is acting: the name bay records for an agent, and where it came from; and the rules
//! of the policy's `[agent]` table that `bay start` holds the actor to.

use serde::{Deserialize, Serialize};
use serde_json::json;

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

/// `ACTOR_UNNAMED` when the policy requires a name and this one came from a default: without
/// `BAY_ACTOR`, every session of one account has the same name, and bay cannot tell them apart.
pub fn unnamed(rules: &AgentRules, source: ActorSource) -> Option<BayResult> {
    (rules.require_actor && source != ActorSource::Env).then(|| {
        crate::report::refused(
            ReasonCode::ActorUnnamed,
            None,
            None,
            json!({ "actor_source": source.as_str() }),
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
            json!({ "live_changes": live, "limit": limit }),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_required_name_must_come_from_bay_actor() {
        let rules = AgentRules {
            require_actor: true,
            max_live_changes: None,
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
            require_actor: false,
            max_live_changes: Some(2),
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
