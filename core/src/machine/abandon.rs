//! `bay abandon`: give a change up. Only the actor who holds the change may; a live operation
//! ends with it, and another agent can then adopt the intent. The same push creates the
//! change's abandoned marker, from which a runner compacts it once `[retention] window_s` has
//! passed.

use serde::Serialize;

use super::agent::{Nonces, Races, fold_one, give_up_place, read_chain};
use super::{
    Action, Append, ChainRead, Completion, Expect, FetchSpec, NewValue, Outbox, PushOutcome,
    PushPlan, PushReport, RefUpdate, Refs,
};
use crate::detail::Detail;
use crate::git::refs;
use crate::id::ChangeId;
use crate::reason::ReasonCode;
use crate::record::StepBody;
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

/// Each way `bay abandon` refuses, with what its `detail` names; the variant fixes the code.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Refusal {
    /// `CHANGE_ALREADY_MERGED`: nothing to abandon; the detail is empty.
    Merged {},
    /// `ABANDON_REFUSED`: another actor's change, named by who holds it.
    NotYours { holder: String },
    /// `MERGE_RETRY_EXHAUSTED`: other writers kept moving the change.
    RacesLost { why: &'static str },
}

impl Detail for Refusal {}

impl Refusal {
    fn code(&self) -> ReasonCode {
        match self {
            Refusal::Merged {} => ReasonCode::ChangeAlreadyMerged,
            Refusal::NotYours { .. } => ReasonCode::AbandonRefused,
            Refusal::RacesLost { .. } => ReasonCode::MergeRetryExhausted,
        }
    }
}

#[derive(Clone, Debug)]
pub struct AbandonInput {
    pub change: ChangeId,
    pub actor: String,
    /// Entropy for step nonces.
    pub entropy: u64,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    ReadChain,
    Write,
}

/// The `bay abandon` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Abandon {
    input: AbandonInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    nonces: Nonces,
    races: Races,
    remote: Refs,
    outcome: Option<BayResult>,
}

impl Abandon {
    pub fn new(input: AbandonInput, now: Timestamp) -> Abandon {
        let nonces = Nonces::new(input.entropy);
        let mut abandon = Abandon {
            input,
            out: Outbox::default(),
            now,
            nonces,
            races: Races::default(),
            remote: Refs::new(),
            outcome: None,
        };
        let fetch = abandon.fetch();
        abandon.out.send(fetch, Purpose::Fetch);
        abandon
    }

    /// The change's chain and the queue, whose place a live operation gives up.
    fn fetch(&self) -> Action {
        Action::Fetch(FetchSpec::new([
            refs::change_pattern(&self.input.change),
            refs::QUEUE_PATTERN.to_string(),
        ]))
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn refuse(&mut self, refusal: Refusal) {
        let code = refusal.code();
        let result = report::refused(code, Some(&self.input.change), None, refusal.to_json());
        self.finish(result);
    }

    fn fail(&mut self, why: String) {
        let result = report::failed(why, Some(&self.input.change));
        self.finish(result);
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        self.out.send(
            read_chain(&self.remote, &self.input.change),
            Purpose::ReadChain,
        );
    }

    fn on_chain(&mut self, reads: Vec<ChainRead>) {
        let (record, tip, chain) = match fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        if self.races.landed(&chain) || record.abandoned {
            return self.finish(report::abandoned(&record.change));
        }
        if record.merged().is_some() {
            return self.refuse(Refusal::Merged {});
        }
        if record.actor != self.input.actor {
            return self.refuse(Refusal::NotYours {
                holder: record.actor,
            });
        }
        let step = self.nonces.step(
            &record.change,
            self.now,
            &self.input.actor,
            StepBody::Abandon,
        );
        let plan = PushPlan {
            appends: vec![Append::on(
                record.change.clone(),
                Some(tip),
                vec![step],
                None,
            )],
            // The marker tells runners, by its name alone, when the retention window of the
            // change's drafts ends and it may be compacted.
            updates: record
                .live_op()
                .and_then(|op| give_up_place(&self.remote, op.seq))
                .into_iter()
                .chain([RefUpdate {
                    name: refs::abandoned(&record.change, self.now),
                    expect: Expect::Absent,
                    new: NewValue::Step { append: 0, step: 0 },
                }])
                .collect(),
            atomic: true,
            ..PushPlan::default()
        };
        self.out.send(Action::Push(plan), Purpose::Write);
    }

    fn on_pushed(&mut self, report: PushReport) {
        match report.outcome {
            PushOutcome::Accepted => self.finish(report::abandoned(&self.input.change)),
            PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => {
                if !self.races.lost(&report) {
                    return self.refuse(Refusal::RacesLost {
                        why: "other writers kept moving the change",
                    });
                }
                let fetch = self.fetch();
                self.out.send(fetch, Purpose::Fetch);
            }
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::ReadChain, Completion::ChainsRead(Ok(reads))) => self.on_chain(reads),
            (Purpose::Write, Completion::Pushed(report)) => self.on_pushed(report),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Abandon, "abandon");

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_refusal_names_its_code_and_fields() {
        let cases = [
            (
                Refusal::Merged {},
                ReasonCode::ChangeAlreadyMerged,
                json!({}),
            ),
            (
                Refusal::NotYours {
                    holder: "bob".into(),
                },
                ReasonCode::AbandonRefused,
                json!({"holder": "bob"}),
            ),
            (
                Refusal::RacesLost {
                    why: "other writers kept moving the change",
                },
                ReasonCode::MergeRetryExhausted,
                json!({"why": "other writers kept moving the change"}),
            ),
        ];
        for (refusal, code, detail) in cases {
            assert_eq!((refusal.code(), refusal.to_json()), (code, detail));
        }
    }
}
