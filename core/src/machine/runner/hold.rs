//! Holds of main: while a `[[hold]]` of main in main's `.bay/config.toml` is in force (by this
//! runner's own clock), or that config cannot be read, only a change that carries `Fixes:` or
//! `Reverts:` merges. A held operation is passed over at the head, keeping no one waiting, and
//! a claimed one gives its claim back (`MAIN_HELD`) when the main it would merge onto is held.
//!
//! Holds are read from main's tip only, once per main commit: a hold removed there ends at
//! once, and an idle pass reads nothing more.
//!
//! The hold plugin (`[plugin.hold]` in that config) answers for now, not for a commit, so it
//! is asked again: at most once a pass, and only when the pass would pick an operation that
//! neither fixes nor undoes (an idle pass, or one with only fixes to merge, runs nothing); and
//! again right before each push that moves main, since the answer may have changed while the
//! checks ran. An answer that cannot be read holds main (see [`crate::plugin::judge_hold`]).

use super::{
    Purpose, Runner,
    work::{Work, Write},
};
use crate::config::MainHold;
use crate::config::{CONFIG_PATH, Config, PluginCommand, hold_on};
use crate::git::Oid;
use crate::machine::{Action, ActionId, Completion, Fault, Misuse};
use crate::plugin::{hold_call, judge_hold};
use crate::reason::ReasonCode;
use crate::record::ChangeRecord;

/// The hold plugin's answer for now, for one pass and the work it begins.
#[derive(Clone, Debug, Default)]
pub(super) enum HoldAnswer {
    /// Not asked yet.
    #[default]
    Unasked,
    /// Main is not held.
    Clear,
    /// Main is held, for this reason.
    Held(String),
}

impl HoldAnswer {
    fn of(held: Option<String>) -> HoldAnswer {
        held.map_or(HoldAnswer::Clear, HoldAnswer::Held)
    }
}

/// What to go on with once the config at a main commit is read.
#[derive(Clone, Copy, Debug)]
pub(super) enum Then {
    /// The pass's decision at the head.
    Decide,
    /// The claimed work's policy read, on the main it builds on.
    Work,
}

/// What to go on with once the hold plugin answers.
#[derive(Clone, Debug)]
pub(super) enum Ask {
    /// The pass's decision at the head.
    Decide,
    /// The work's push that moves main.
    Push(Write),
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
                        if let Some(work) = self.take_work() {
                            let why = format!("could not read {CONFIG_PATH}: {why}");
                            let _placed = self.release(work, None, why);
                        }
                    }
                }
                return Ok(());
            }
            Ok(bytes) => Config::at_main(bytes.as_deref()),
        };
        self.holds = Some((main, holds));
        match then {
            Then::Decide => self.decide(),
            Then::Work => {
                if let Some(work) = self.take_work() {
                    let _placed = self.read_policy(work);
                }
            }
        }
        Ok(())
    }

    /// Whether main may be held now for a change that fixes nothing: a `[[hold]]` in force, a
    /// hold plugin to ask, or a config at main's tip that is not read or cannot be. No batch
    /// forms then (`batch`).
    pub(super) fn main_may_hold(&self) -> bool {
        let main = self.refs.get(&self.main_ref());
        match &self.holds {
            Some((at, Ok(config))) if Some(at) == main => {
                config.hold_plugin.is_some() || config.hold_at(self.now).is_some()
            }
            _ => true,
        }
    }

    /// The hold that keeps `record` from merging now, as `detail.hold` names it: `None` for a
    /// change that fixes or undoes another, or when main is not held.
    pub(super) fn held(&self, record: &ChangeRecord) -> Option<MainHold> {
        self.held_under(record, self.hold_answer())
    }

    /// The hold that keeps `record` from merging now, with `answer` the hold plugin's.
    pub(super) fn held_under(
        &self,
        record: &ChangeRecord,
        answer: Option<&HoldAnswer>,
    ) -> Option<MainHold> {
        #[cfg(feature = "mutants")]
        if self.mutant_ignores_holds() {
            return None;
        }
        let fixes_or_undoes = record.fixes_or_undoes();
        hold_on(&self.holds.as_ref()?.1, self.now, fixes_or_undoes).or_else(|| {
            let HoldAnswer::Held(reason) = answer? else {
                return None;
            };
            (!fixes_or_undoes).then(|| MainHold::plugin(reason))
        })
    }

    /// The hold plugin's answer as the pass under way, or the work it began, knows it.
    fn hold_answer(&self) -> Option<&HoldAnswer> {
        match &self.stage {
            super::Stage::Passing(pass) => Some(&pass.hold),
            super::Stage::Working(work) => Some(&work.hold),
            _ => None,
        }
    }

    /// The hold plugin main's config at `main` sets, when the holds known are of `main`.
    fn hold_plugin(&self, main: &Oid) -> Option<PluginCommand> {
        #[cfg(feature = "mutants")]
        if self.mutant_ignores_hold_plugin() {
            return None;
        }
        match &self.holds {
            Some((at, Ok(config))) if at == main => config.hold_plugin.clone(),
            _ => None,
        }
    }

    /// Whether the pass must ask the hold plugin before it decides: main's config sets one,
    /// this pass has not asked it yet, and an operation the pass would take on (the head, and
    /// for `merge --wait` its own) fixes and undoes nothing and is held by nothing else. Asks
    /// it if so.
    pub(super) fn asking_before_decide(&mut self, heads: &[ChangeRecord]) -> bool {
        let Some(main) = self.refs.get(&self.main_ref()).cloned() else {
            return false;
        };
        let ask = matches!(self.hold_answer(), None | Some(HoldAnswer::Unasked))
            && heads
                .iter()
                .any(|record| self.held(record).is_none() && !record.fixes_or_undoes());
        match self.hold_plugin(&main).filter(|_| ask) {
            Some(plugin) => {
                self.ask_plugin(&plugin, main, Ask::Decide);
                true
            }
            None => false,
        }
    }

    /// Whether `write`, a push that moves main, must wait for the hold plugin's answer first;
    /// asks it if so. A change that fixes or undoes another is never held, so nothing is asked.
    pub(super) fn asking_before_push(&mut self, work: &mut Work, write: &Write) -> bool {
        if work.cleared || work.record.fixes_or_undoes() {
            return false;
        }
        let base = work.base.clone();
        match self.hold_plugin(&base) {
            Some(plugin) => {
                let id = self.ask_plugin(&plugin, base, Ask::Push(write.clone()));
                work.asking = Some(id);
                true
            }
            None => false,
        }
    }

    fn ask_plugin(&mut self, plugin: &PluginCommand, main: Oid, then: Ask) -> ActionId {
        let run = Action::RunPlugin(hold_call(plugin, &main));
        self.out.send(run, Purpose::AskHold { then })
    }

    pub(super) fn on_hold_answer(
        &mut self,
        id: ActionId,
        then: Ask,
        completion: Completion,
    ) -> Result<(), Misuse> {
        let Completion::PluginExited(exit) = completion else {
            return Err(Misuse(
                "a hold plugin run answered with another completion".into(),
            ));
        };
        let held = judge_hold(&exit);
        let answer = HoldAnswer::of(held.clone());
        match then {
            Ask::Decide => {
                if let Some(pass) = self.pass_mut() {
                    pass.hold = answer;
                }
                self.decide();
            }
            Ask::Push(write) => {
                let Some(mut work) = self.take_work() else {
                    return Ok(());
                };
                work.hold = answer;
                if work.asking != Some(id) {
                    // The work moved on (past its deadline, say): this answer clears nothing.
                    let _placed = self.keep(work);
                    return Ok(());
                }
                work.asking = None;
                let _placed = match held {
                    Some(reason) => {
                        let why = format!("main is held: {}", MainHold::plugin(&reason));
                        self.release(work, Some(ReasonCode::MainHeld), why)
                    }
                    None => {
                        work.cleared = true;
                        self.write(work, write)
                    }
                };
            }
        }
        Ok(())
    }
}
