//! Reading the keys a command judges signed records by: `[policy] signing` from the policy at
//! a commit (a policy that cannot be read signs everything: the stricter reading), then the
//! key registry at the tip the command fetched, judged whole (`trust::registry::judge_chain`).
//!
//! The reader is a part of its command's machine: the command sends each action it asks for,
//! with a purpose of its own, and hands each completion back.

use super::{Action, Completion, Fault};
use crate::check::plan::{POLICY_PATH, parse_policy};
use crate::git::Oid;
use crate::policy::Signing;
use crate::trust::registry::{Broken, Version, judge_chain};

/// What the reader does next.
#[derive(Debug)]
pub enum KeysStep {
    /// Send this action and hand its completion back.
    Ask(Box<Action>),
    /// Done: the mode and the registry's version.
    Done(Signing, Box<Version>),
    /// The registry breaks a rule, so nothing signed can be judged (`REGISTRY_UNREADABLE`).
    Broken(Box<Broken>),
    /// A read failed.
    Unread(Fault),
}

/// One read of the keys, started at the policy of `at` with the registry at `registry`.
#[derive(Clone, Debug)]
pub struct KeysRead {
    registry: Oid,
    /// The mode, once the policy is read.
    signing: Option<Signing>,
}

impl KeysRead {
    /// Starts: the first action reads the policy at `at`.
    pub fn start(at: Oid, registry: Oid) -> (KeysRead, Action) {
        let read = Action::ReadFile {
            commit: at,
            path: POLICY_PATH.into(),
        };
        (
            KeysRead {
                registry,
                signing: None,
            },
            read,
        )
    }

    /// Takes the completion of the last action asked; a completion of another kind is given
    /// back: a driver bug, for the command to refuse.
    pub fn on(&mut self, completion: Completion) -> Result<KeysStep, Box<Completion>> {
        Ok(match (self.signing, completion) {
            (None, Completion::FileRead(read)) => match read {
                Ok(bytes) => {
                    let signing = bytes
                        .and_then(|bytes| parse_policy(&bytes).ok())
                        .map_or(Signing::All, |policy| policy.signing);
                    self.signing = Some(signing);
                    KeysStep::Ask(Box::new(Action::ReadRegistry {
                        tip: self.registry.clone(),
                    }))
                }
                Err(fault) => KeysStep::Unread(fault),
            },
            (Some(signing), Completion::RegistryRead(read)) => match read {
                Ok(chain) => match judge_chain(&chain) {
                    Ok(version) => KeysStep::Done(signing, Box::new(version)),
                    Err(broken) => KeysStep::Broken(Box::new(broken)),
                },
                Err(fault) => KeysStep::Unread(fault),
            },
            (_, other) => return Err(Box::new(other)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an oid")
    }

    #[test]
    fn the_mode_comes_from_the_policy_and_an_empty_registry_is_broken() {
        let (mut reader, first) = KeysRead::start(oid('1'), oid('2'));
        assert!(matches!(first, Action::ReadFile { .. }), "{first:?}");
        let policy = b"revision = 1\nunchecked = true\n\n[policy]\nsigning = \"approvals\"\n";
        let next = reader.on(Completion::FileRead(Ok(Some(policy.to_vec()))));
        assert!(
            matches!(next, Ok(KeysStep::Ask(ref action)) if matches!(**action, Action::ReadRegistry { .. })),
            "{next:?}"
        );
        assert_eq!(reader.signing, Some(Signing::Approvals));
        let done = reader.on(Completion::RegistryRead(Ok(Vec::new())));
        assert!(matches!(done, Ok(KeysStep::Broken(_))), "{done:?}");
        // A policy that cannot be read signs everything.
        let (mut reader, _) = KeysRead::start(oid('1'), oid('2'));
        reader
            .on(Completion::FileRead(Ok(Some(b"not toml [".to_vec()))))
            .expect("a read");
        assert_eq!(reader.signing, Some(Signing::All));
    }
}
