//! Who is acting: the name bay records for an agent, and where it came from.

use serde::{Deserialize, Serialize};

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

#[cfg(test)]
mod tests {
    use super::*;

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
