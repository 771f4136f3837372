//! Whose passes reuse takes: with a key registry that signs everything, only records signed by
//! a `producer` key the registry enrols now under the record's producer
//! (`check::reuse::signed_only`); without one, every record, where the policy at the base sets
//! `reuse_unsigned = true`; else none, and reuse is off.
//!
//! The registry is fetched right before each read of the passes to reuse (the work's, and a
//! prediction's when checking ahead), so a key taken out since stops counting at once. The
//! tip judged last is remembered: the same tip fetched again is not read again. A registry
//! that cannot be fetched, read or judged vouches for no one, so every check runs.

use super::{Purpose as RunnerPurpose, Runner, ahead, work};
use crate::check::reuse::signed_only;
use crate::git::Oid;
use crate::machine::{Action, Completion, FetchSpec, Misuse};
use crate::policy::{Policy, Signing};
use crate::trust::registry::{Version, judge_chain};

/// How reuse judges the records it may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReuseBy {
    /// Every record: no registry signs everything, and the policy sets `reuse_unsigned`.
    Unsigned,
    /// Only records the registry vouches for, as it is read before each reuse.
    Registry,
}

/// What goes on once the registry is read.
#[derive(Clone, Debug)]
pub(super) enum Then {
    /// The work reads the passes on its candidate.
    Work,
    /// A prediction of the entries ahead builds its next entry.
    Ahead(Box<ahead::Predict>),
}

/// What an action of reading the registry is for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    Fetch(FetchSpec, Then),
    Read(Oid, Then),
}

impl Runner {
    /// How reuse judges records under `policy` (the policy at the base), or `None` when it
    /// takes none. A runner that signs does so because the registry signs everything, and
    /// then `reuse_unsigned` changes nothing.
    pub(super) fn reuse_by(&self, policy: &Policy) -> Option<ReuseBy> {
        if !self.cfg.evidence_reuse {
            return None;
        }
        if self.cfg.signer.is_some() && policy.signing == Signing::All {
            return Some(ReuseBy::Registry);
        }
        policy.reuse_unsigned.then_some(ReuseBy::Unsigned)
    }

    /// The records among `records` that reuse under `policy` may take.
    pub(super) fn counted(&self, policy: &Policy, records: Vec<String>) -> Vec<String> {
        #[cfg(feature = "mutants")]
        if self.mutant_reuses_unsigned() && self.reuse_by(policy).is_some() {
            return records;
        }
        match self.reuse_by(policy) {
            Some(ReuseBy::Unsigned) => records,
            Some(ReuseBy::Registry) => match &self.reuse_keys {
                Some((_, version)) => signed_only(records, version),
                None => Vec::new(),
            },
            None => Vec::new(),
        }
    }

    /// Fetches the registry, judges it when its tip moved, then goes on with `then`.
    pub(super) fn read_reuse_keys(&mut self, then: Then) {
        // A registry that is gone vouches for no one.
        let spec = FetchSpec::new([crate::trust::registry::fetch_pattern()]);
        self.send_reuse_keys(Action::Fetch(spec.clone()), Purpose::Fetch(spec, then));
    }

    /// Sends a read as a step of what it is for (the work's, or checking ahead's), so that
    /// whatever forgets that forgets the read too.
    fn send_reuse_keys(&mut self, action: Action, purpose: Purpose) {
        let then = match &purpose {
            Purpose::Fetch(_, then) | Purpose::Read(_, then) => then,
        };
        let purpose = match then {
            Then::Work => RunnerPurpose::Work(work::Purpose::ReuseKeys(purpose)),
            Then::Ahead(_) => RunnerPurpose::Ahead(ahead::Purpose::ReuseKeys(purpose)),
        };
        self.out.send(action, purpose);
    }

    pub(super) fn on_reuse_keys(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match (purpose, completion) {
            (Purpose::Fetch(spec, then), Completion::Fetched(result)) => {
                let Ok(fetched) = result else {
                    self.reuse_keys = None;
                    self.reuse_keys_read(then);
                    return Ok(());
                };
                match self.registry_tip(spec, fetched) {
                    Some(tip) if self.reuse_keys.as_ref().is_some_and(|(at, _)| *at == tip) => {
                        self.reuse_keys_read(then);
                    }
                    Some(tip) => {
                        let read = Action::ReadRegistry { tip: tip.clone() };
                        self.send_reuse_keys(read, Purpose::Read(tip, then));
                    }
                    None => {
                        self.reuse_keys = None;
                        self.reuse_keys_read(then);
                    }
                }
            }
            (Purpose::Read(tip, then), Completion::RegistryRead(result)) => {
                self.reuse_keys = result
                    .ok()
                    .and_then(|chain| judge_chain(&chain).ok())
                    .map(|version| (tip, Box::new(version)));
                self.reuse_keys_read(then);
            }
            (purpose, completion) => {
                return Err(Misuse(format!(
                    "the reuse registry read {purpose:?} answered with {completion:?}"
                )));
            }
        }
        Ok(())
    }

    fn reuse_keys_read(&mut self, then: Then) {
        match then {
            Then::Work => {
                if let Some(work) = self.take_work() {
                    let _placed = self.read_reused(work);
                }
            }
            Then::Ahead(predict) => self.predict_next(*predict),
        }
    }
}

/// The registry judged last for reuse, with its tip.
pub(super) type Judged = Option<(Oid, Box<Version>)>;
