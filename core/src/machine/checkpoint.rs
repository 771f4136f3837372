//! A hook's draft checkpoint on the change's chain (`bay hook` at `session.end`, and at the
//! first event `[hooks] checkpoint_idle_s` after the last one).
//!
//! The CLI first takes the view's work as a draft commit and keeps it at the local ref
//! `refs/bay/checkpoints/<change>` (as `bay save` commits the checkout's edits before its start
//! runs); this machine makes that draft a `checkpoint` step on the change's chain on the remote,
//! appended leased on the tip it read like every chain append, so that another machine or a
//! later session picks the work up with `bay start <change>` after this one died.
//!
//! The step is written only for a live change the session's actor still holds, and only when
//! the draft grew from the chain's current draft (the view's HEAD, or the view's last
//! checkpoint, is that draft): a checkpoint never hides a draft another machine saved, and
//! never writes into a change someone else adopted, merged or abandoned. Otherwise, and when
//! the remote does not answer, the draft stays at the local ref alone, and [`Saved::Local`]
//! says why. A lost race reads the chain again, as every agent command does.

use serde::{Deserialize, Serialize};

use super::agent::{Nonces, Races, fold_one};
use super::{
    Action, ChainQuery, ChainRead, Completion, FetchSpec, Outbox, PushOutcome, PushReport,
};
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::reason::ReasonCode;
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

/// Where the draft is kept: on the chain, or at the local ref alone and why.
#[derive(Debug, Serialize)]
struct Kept<'a> {
    checkpoint: &'a Oid,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'a str>,
}

impl Detail for Kept<'_> {}

#[derive(Clone, Debug)]
pub struct CheckpointInput {
    pub change: ChangeId,
    /// The session's actor.
    pub actor: String,
    /// The view's work as a draft commit, kept at the local ref.
    pub draft: Oid,
    /// The commits whose work the draft carries on: the view's HEAD, and the view's earlier
    /// checkpoint the draft was made on, when it was.
    pub grew_from: Vec<Oid>,
    /// Entropy for the step's nonce.
    pub entropy: u64,
}

/// Where a hook's draft checkpoint went, as the session's work record says it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum Saved {
    /// The change's chain on the remote holds the draft (and so does the local ref).
    Chain,
    /// Only the local ref holds the draft, for `why`: with `code` `REMOTE_UNREACHABLE` the
    /// remote did not answer; with none, bay met a fault.
    Local {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<ReasonCode>,
        why: String,
    },
    /// The view holds nothing its HEAD does not: there was nothing to save.
    Unchanged,
    /// The view's work could not be taken (`why`): nothing was saved, and the next event
    /// tries again.
    Failed { why: String },
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    ReadChain,
    Write,
}

/// The checkpoint machine. Drive it as [`Machine`](crate::machine::Machine) says; its
/// [`Checkpoint::saved`] is what the work record keeps.
#[derive(Debug)]
pub struct Checkpoint {
    input: CheckpointInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    nonces: Nonces,
    races: Races,
    saved: Option<Saved>,
    outcome: Option<BayResult>,
}

impl Checkpoint {
    pub fn new(input: CheckpointInput, now: Timestamp) -> Checkpoint {
        let nonces = Nonces::new(input.entropy);
        let mut machine = Checkpoint {
            input,
            out: Outbox::default(),
            now,
            nonces,
            races: Races::default(),
            saved: None,
            outcome: None,
        };
        machine.fetch();
        machine
    }

    /// Where the draft went, once the machine is done.
    pub fn saved(&self) -> Option<&Saved> {
        self.saved.as_ref()
    }

    /// The change's chain alone: a compacted change has ended, and takes no checkpoint.
    fn fetch(&mut self) {
        let spec = FetchSpec::new([refs::change_pattern(&self.input.change)]);
        self.out.send(Action::Fetch(spec), Purpose::Fetch);
    }

    fn on_chain_written(&mut self) {
        self.saved = Some(Saved::Chain);
        let detail = Kept {
            checkpoint: &self.input.draft,
            why: None,
        };
        let result = report::started(&self.input.change, detail.to_json(), None);
        self.outcome = Some(result);
        self.out.forget_all();
    }

    /// The draft stays at the local ref alone, for `code`.
    fn local(&mut self, code: ReasonCode, why: String) {
        let detail = Kept {
            checkpoint: &self.input.draft,
            why: Some(&why),
        };
        let result = report::refused(code, Some(&self.input.change), None, detail.to_json());
        self.saved = Some(Saved::Local {
            code: Some(code),
            why,
        });
        self.outcome = Some(result);
        self.out.forget_all();
    }

    /// A fault: the draft stays at the local ref alone.
    fn fail(&mut self, why: String) {
        self.outcome = Some(report::failed(why.clone(), Some(&self.input.change)));
        self.saved = Some(Saved::Local { code: None, why });
        self.out.forget_all();
    }

    fn unreachable(&mut self, why: String) {
        let why = format!("the remote did not answer: {why}");
        self.local(ReasonCode::RemoteUnreachable, why);
    }

    fn on_fetched(&mut self, remote: super::Refs) {
        match ChainQuery::whole(&remote, &self.input.change) {
            Some(query) => {
                let read = Action::ReadChains {
                    chains: vec![query],
                };
                self.out.send(read, Purpose::ReadChain);
            }
            None => self.local(
                ReasonCode::ChangeSuperseded,
                format!(
                    "the remote holds no chain of {}: it ended, or was never pushed",
                    self.input.change
                ),
            ),
        }
    }

    fn on_chain(&mut self, reads: Vec<ChainRead>) {
        let (record, tip, chain) = match fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        let draft = self.input.draft.clone();
        if self.races.landed(&chain) || *record.current_draft() == draft {
            return self.on_chain_written();
        }
        if record.merged().is_some() {
            let why = "the change merged; its view's later work is no draft of it".to_owned();
            return self.local(ReasonCode::ChangeAlreadyMerged, why);
        }
        if record.ended() {
            let why = "the change ended; `bay start` with its id takes it up again".to_owned();
            return self.local(ReasonCode::ChangeSuperseded, why);
        }
        if record.actor != self.input.actor {
            let why = format!("{} adopted the change", record.actor);
            return self.local(ReasonCode::ChangeSuperseded, why);
        }
        if !self.input.grew_from.contains(record.current_draft()) {
            let why = format!(
                "the change's draft {} was saved elsewhere, and this view did not grow from it; \
                 `bay start {}` here brings it in",
                record.current_draft(),
                record.change
            );
            return self.local(ReasonCode::ChangeSuperseded, why);
        }
        let plan = self
            .nonces
            .checkpoint(&record, tip, self.now, &self.input.actor, draft, None);
        self.out.send(Action::Push(plan), Purpose::Write);
    }

    fn on_pushed(&mut self, report: PushReport) {
        match report.outcome {
            PushOutcome::Accepted => self.on_chain_written(),
            PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => {
                if !self.races.lost(&report) {
                    let why = "other writers kept moving the change".to_owned();
                    return self.local(ReasonCode::MergeRetryExhausted, why);
                }
                self.fetch();
            }
            PushOutcome::NotSent(fault) => self.unreachable(fault.to_string()),
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Fetch, Completion::Fetched(Err(fault))) => self.unreachable(fault.0),
            (Purpose::ReadChain, Completion::ChainsRead(Ok(reads))) => self.on_chain(reads),
            (Purpose::Write, Completion::Pushed(report)) => self.on_pushed(report),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Checkpoint, "checkpoint");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_detail_names_the_checkpoint_and_why_it_stayed_local() {
        let draft = Oid::parse(&"a".repeat(40)).expect("an id");
        let on_chain = Kept {
            checkpoint: &draft,
            why: None,
        };
        assert_eq!(on_chain.to_json(), json!({"checkpoint": draft}));
        let local = Kept {
            checkpoint: &draft,
            why: Some("the remote did not answer"),
        };
        assert_eq!(
            local.to_json(),
            json!({"checkpoint": draft, "why": "the remote did not answer"})
        );
    }
}
