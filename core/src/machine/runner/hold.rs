//! Holds of main: while a `[[hold]]` of main in main's `.bay/config.toml` is in force (by this
//! runner's own clock), or that config cannot be read, only a change that carries `Fixes:` or
//! `Reverts:` merges. A held operation is passed over at the head, keeping no one waiting, and
//! a claimed one gives its claim back (`MAIN_HELD`) when the main it would merge onto is held.
//!
//! Holds are read from main's tip only, once per main commit: a hold removed there ends at
//! once, and an idle pass reads nothing more.

use super::{Purpose, Runner};
use crate::config::{CONFIG_PATH, Config, hold_on};
use crate::git::Oid;
use crate::machine::{Action, Completion, Fault, Misuse};
use crate::record::ChangeRecord;

/// What to go on with once the config at a main commit is read.
#[derive(Clone, Copy, Debug)]
pub(super) enum Then {
    /// The pass's decision at the head.
    Decide,
    /// The claimed work's policy read, on the main it builds on.
    Work,
}

impl Runner {
    /// Whether the holds of `main` are known; if not, asks for its config and goes on with
    /// `then` once it is read.
    pub(super) fn holds_known(&mut self, main: &Oid, then: Then) -> bool {
        if self.holds.as_ref().is_some_and(|(at, _)| at == main) {
            return true;
        }
        let read = Action::ReadFile {
            commit: main.clone(),
            path: CONFIG_PATH.into(),
        };
        self.out.send(
            read,
            Purpose::ReadConfig {
                main: main.clone(),
                then,
            },
        );
        false
    }

    pub(super) fn on_config(
        &mut self,
        main: Oid,
        then: Then,
        completion: Completion,
    ) -> Result<(), Misuse> {
        let Completion::FileRead(result) = completion else {
            return Err(Misuse(
                "a config read answered with another completion".into(),
            ));
        };
        let holds = match result {
            // Nothing is known of main's holds: the pass ends, or the claim goes back.
            Err(Fault(why)) => {
                match then {
                    Then::Decide => self.pass_failed(),
                    Then::Work => {
                        self.release(None, format!("could not read {CONFIG_PATH}: {why}"))
                    }
                }
                return Ok(());
            }
            Ok(bytes) => Config::at_main(bytes.as_deref()),
        };
        self.holds = Some((main, holds));
        match then {
            Then::Decide => self.decide(),
            Then::Work => self.read_policy(),
        }
        Ok(())
    }

    /// The hold that keeps `record` from merging now, as `detail.hold` names it: `None` for a
    /// change that fixes or undoes another, or when main is not held.
    pub(super) fn held(&self, record: &ChangeRecord) -> Option<serde_json::Value> {
        #[cfg(feature = "mutants")]
        if self.mutant_ignores_holds() {
            return None;
        }
        hold_on(&self.holds.as_ref()?.1, self.now, record.fixes_or_undoes())
    }
}
