//! What the judgement of a runner's keys names in its `detail`: what the runner signs, or why
//! it is refused `RUNNER_KEY_MISSING` and claims nothing.

use serde::Serialize;

use crate::detail::Detail;
use crate::policy::Signing;
use crate::trust::record::KeyProblem;
use crate::trust::registry::Broken;

/// Whether the runner signs what it writes: judged against the registry under the policy's
/// `signing`, or not at all, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(super) struct Signs {
    signs: bool,
    /// `[policy] signing` at main, once the registry was judged under it.
    #[serde(skip_serializing_if = "Option::is_none")]
    signing: Option<Signing>,
    /// Why it signs nothing without judging its keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'static str>,
}

impl Signs {
    pub fn judged(signing: Signing, signs: bool) -> Signs {
        Signs {
            signs,
            signing: Some(signing),
            why: None,
        }
    }

    pub fn nothing(why: &'static str) -> Signs {
        Signs {
            signs: false,
            signing: None,
            why: Some(why),
        }
    }
}

impl Detail for Signs {}

/// Each way the runner is refused `RUNNER_KEY_MISSING`, with what its `detail` names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub(super) enum Refusal<'a> {
    /// The registry cannot be read, so no key can be judged enrolled.
    Registry { registry: Broken },
    /// The runner's keys are missing or not enrolled under its name.
    Keys {
        runner: &'a str,
        keys: Vec<KeyProblem>,
    },
}

impl Detail for Refusal<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::registry::Class;
    use serde_json::json;

    #[test]
    fn what_the_runner_signs_names_the_policy_or_why_not() {
        assert_eq!(
            Signs::judged(Signing::All, true).to_json(),
            json!({"signing": "all", "signs": true})
        );
        assert_eq!(
            Signs::nothing("no registry").to_json(),
            json!({"signs": false, "why": "no registry"})
        );
    }

    #[test]
    fn a_refusal_names_the_broken_registry_or_the_runner_and_its_keys() {
        let broken = Broken {
            commit: None,
            file: Some("executor".into()),
            line: Some(3),
            why: "not a key".into(),
        };
        assert_eq!(
            Refusal::Registry { registry: broken }.to_json(),
            json!({"registry": {"file": "executor", "line": 3, "why": "not a key"}})
        );
        let keys = vec![KeyProblem {
            setting: "bay.producerKey",
            class: Class::Producer,
            why: "not set".into(),
        }];
        assert_eq!(
            Refusal::Keys { runner: "r1", keys }.to_json(),
            json!({"runner": "r1", "keys": [
                {"setting": "bay.producerKey", "class": "producer", "why": "not set"}
            ]})
        );
    }
}
