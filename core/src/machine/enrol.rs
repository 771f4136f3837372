//! `bay enrol`: add a key to the key registry, or take a name's keys out of a class. It reads
//! the remote's registry whole and judges it (`trust::registry::judge_chain`), decides the
//! next version (`trust::registry::next_version`), has the driver write and sign it with
//! `bay.registryKey`, judges the chain again with the new commit on top before anything
//! leaves the machine, pushes it as a fast-forward leased on the tip it read, and reads it
//! back from the remote.

use serde::Serialize;

use super::agent::MAX_RACES;
use super::{
    Action, Completion, Expect, FetchSpec, NewValue, Outbox, PushOutcome, PushPlan, PushReport,
    RefUpdate, Refs, RegistryWrite,
};
use crate::detail::Detail;
use crate::git::Oid;
use crate::reason::ReasonCode;
use crate::result::BayResult;
use crate::time::Timestamp;
use crate::trust::PublicKey;
use crate::trust::registry::{
    Class, Enrolment, REF, Reason, RegistryCommit, Version, judge_chain, judge_for_repair,
    next_version,
};

/// What `bay enrol` answers: the key it enrolled or took out, and the registry's new tip.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Done<'a> {
    Enrolled {
        enrolled: Enrolled<'a>,
        registry: &'a Oid,
    },
    Removed {
        removed: Removed<'a>,
        registry: &'a Oid,
    },
}

#[derive(Debug, Serialize)]
struct Enrolled<'a> {
    class: Class,
    name: &'a str,
    fingerprint: String,
}

#[derive(Debug, Serialize)]
struct Removed<'a> {
    class: Class,
    name: &'a str,
    reason: Reason,
}

impl Detail for Done<'_> {}

#[derive(Clone, Debug)]
pub struct EnrolInput {
    pub request: Enrolment,
    /// The public half of `bay.registryKey`, which signs the next version.
    pub signer: PublicKey,
    /// The path `bay.registryKey` names, for the driver to sign with.
    pub key_path: String,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    Read,
    Write,
    Push,
}

/// The `bay enrol` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Enrol {
    input: EnrolInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    races: u32,
    /// The registry as read: its tip, and its chain tip first.
    tip: Option<Oid>,
    chain: Vec<RegistryCommit>,
    /// The version this machine wrote and pushed, until the remote is seen to hold it.
    written: Option<RegistryCommit>,
    outcome: Option<BayResult>,
}

impl Enrol {
    pub fn new(input: EnrolInput, now: Timestamp) -> Enrol {
        let mut enrol = Enrol {
            input,
            out: Outbox::default(),
            now,
            races: 0,
            tip: None,
            chain: Vec::new(),
            written: None,
            outcome: None,
        };
        enrol.fetch();
        enrol
    }

    fn fetch(&mut self) {
        // `*`: the registry may not exist yet, and that is no fault.
        let spec = FetchSpec::new([format!("{REF}*")]);
        self.out.send(Action::Fetch(spec), Purpose::Fetch);
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.finish(BayResult::failed(&why));
    }

    fn on_fetched(&mut self, remote: Refs) {
        let tip = remote.get(REF).cloned();
        if let Some(written) = self.written.take() {
            if tip.as_ref() == Some(&written.oid) {
                return self.finish(self.done(&written.oid));
            }
            self.races += 1;
            if self.races > MAX_RACES {
                return self.fail("others kept changing the key registry; nothing changed".into());
            }
        }
        self.tip = tip;
        self.chain.clear();
        match &self.tip {
            Some(tip) => {
                let read = Action::ReadRegistry { tip: tip.clone() };
                self.out.send(read, Purpose::Read);
            }
            None => self.decide(None),
        }
    }

    fn on_read(&mut self, chain: Vec<RegistryCommit>) {
        match judge_chain(&chain) {
            Ok(version) => {
                self.chain = chain;
                self.decide(Some(&version));
            }
            // A removal may mend a tip that enrols a removed key again; the version it
            // writes is judged under every rule before it is pushed.
            Err(_)
                if matches!(self.input.request, Enrolment::Remove { .. })
                    && let Ok(version) = judge_for_repair(&chain) =>
            {
                self.chain = chain;
                self.decide(Some(&version));
            }
            Err(broken) => {
                let detail = broken.to_json();
                let result =
                    crate::report::refused(ReasonCode::RegistryUnreadable, None, None, detail);
                self.finish(result);
            }
        }
    }

    fn decide(&mut self, current: Option<&Version>) {
        let next = match next_version(current, &self.input.request, &self.input.signer, self.now) {
            Ok(next) => next,
            Err(why) => return self.fail(why),
        };
        let message = match &self.input.request {
            Enrolment::Add { class, name, .. } => format!("bay: enrol {} {name}", class.as_str()),
            Enrolment::Remove {
                class,
                name,
                reason,
            } => {
                format!(
                    "bay: remove {} {name} ({})",
                    class.as_str(),
                    reason.as_str()
                )
            }
        };
        let write = RegistryWrite {
            parent: self.tip.clone(),
            files: next.files(),
            message,
            at: self.now,
            key: self.input.key_path.clone(),
        };
        self.out.send(Action::WriteRegistry(write), Purpose::Write);
    }

    fn on_written(&mut self, commit: RegistryCommit) {
        // The new version is judged as every reader will judge it, before it leaves.
        let chain: Vec<RegistryCommit> = std::iter::once(commit.clone())
            .chain(self.chain.iter().cloned())
            .collect();
        if let Err(broken) = judge_chain(&chain) {
            return self.fail(format!(
                "the version this machine signed does not read back: {}",
                broken.why
            ));
        }
        let plan = PushPlan {
            updates: vec![RefUpdate {
                name: REF.to_owned(),
                expect: Expect::tip(self.tip.as_ref()),
                new: NewValue::Oid(commit.oid.clone()),
            }],
            atomic: true,
            ..PushPlan::default()
        };
        self.written = Some(commit);
        self.out.send(Action::Push(plan), Purpose::Push);
    }

    fn on_pushed(&mut self, report: PushReport) {
        match report.outcome {
            // Read it back from the remote; a refusal or a lost reply reads it too, and a
            // registry that moved meanwhile is read and decided again.
            PushOutcome::Accepted | PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => {
                self.fetch()
            }
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    fn done(&self, oid: &Oid) -> BayResult {
        let done = match &self.input.request {
            Enrolment::Add { class, name, key } => Done::Enrolled {
                enrolled: Enrolled {
                    class: *class,
                    name,
                    fingerprint: key.fingerprint(),
                },
                registry: oid,
            },
            Enrolment::Remove {
                class,
                name,
                reason,
            } => Done::Removed {
                removed: Removed {
                    class: *class,
                    name,
                    reason: *reason,
                },
                registry: oid,
            },
        };
        BayResult::ok(None, done.to_map())
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Read, Completion::RegistryRead(Ok(chain))) => self.on_read(chain),
            (Purpose::Write, Completion::RegistryWritten(Ok(commit))) => self.on_written(commit),
            (Purpose::Push, Completion::Pushed(report)) => self.on_pushed(report),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Enrol, "enrol");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_answer_names_the_key_enrolled_or_removed_and_the_registry() {
        let tip = Oid::parse(&"a".repeat(40)).expect("an id");
        let enrolled = Done::Enrolled {
            enrolled: Enrolled {
                class: Class::Executor,
                name: "r1",
                fingerprint: "SHA256:x".into(),
            },
            registry: &tip,
        };
        assert_eq!(
            enrolled.to_json(),
            json!({"enrolled": {"class": "executor", "name": "r1", "fingerprint": "SHA256:x"},
                   "registry": tip})
        );
        let removed = Done::Removed {
            removed: Removed {
                class: Class::Executor,
                name: "r1",
                reason: Reason::Revoked,
            },
            registry: &tip,
        };
        assert_eq!(
            removed.to_json(),
            json!({"removed": {"class": "executor", "name": "r1", "reason": "revoked"},
                   "registry": tip})
        );
    }
}
