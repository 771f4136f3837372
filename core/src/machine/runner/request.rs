//! A request that rides with its runner's first push (`bay merge --wait`).
//!
//! `merge --wait` runs the operation it requests itself, so when the queue holds nothing ahead
//! of it, the request need not go up in a push of its own: `merge` writes the request step into
//! the clone's store and hands it over unpushed, and this runner carries it in its first write
//! (the claim, or the whole merge when no check is required). That write is leased on what the
//! remote held under the request: the chain's tip, no place at the request's sequence number,
//! the queue's last request. So either the request and the runner's write land together, or
//! neither does, and the remote never holds a request its runner did not see through.
//!
//! Until then this runner works from a view with the request in it. A write that does not land
//! sends the runner back to the remote, which then holds no request: the runner ends, says so
//! ([`Runner::request_dropped`]), and `merge --wait` asks again with a request of its own.

use super::{RunMode, Runner};
use crate::git::Oid;
use crate::id::{ChangeId, OpId};
use crate::machine::{Append, Expect, NewValue, PushPlan, RefUpdate};

/// A request step written in the clone's store and not pushed.
#[derive(Clone, Debug, PartialEq)]
pub struct UnpushedRequest {
    pub change: ChangeId,
    pub op: OpId,
    /// The request step's commit.
    pub step: Oid,
    /// The chain's tip on the remote under the request (`None` for a new chain).
    pub under: Option<Oid>,
    /// What the request does to the queue, leased on what the remote holds: its new place, the
    /// queue's last request, and the place of an operation it replaces.
    pub updates: Vec<RefUpdate>,
}

impl UnpushedRequest {
    /// The request's `updates` with the step's commit for the step they name.
    pub fn new(
        change: ChangeId,
        op: OpId,
        step: Oid,
        under: Option<Oid>,
        updates: Vec<RefUpdate>,
    ) -> UnpushedRequest {
        let updates = updates
            .into_iter()
            .map(|update| RefUpdate {
                new: match update.new {
                    NewValue::Step { .. } => NewValue::Oid(step.clone()),
                    other => other,
                },
                ..update
            })
            .collect();
        UnpushedRequest {
            change,
            op,
            step,
            under,
            updates,
        }
    }

    /// `plan` with the request in it: the append on the request's step leased on the tip
    /// under it, and the queue's updates. A place the request takes and the plan gives up in
    /// the same push never exists.
    pub fn carried_by(&self, mut plan: PushPlan) -> PushPlan {
        let lease = Expect::tip(self.under.as_ref());
        match plan
            .appends
            .iter_mut()
            .find(|a| a.change == self.change && a.parent.as_ref() == Some(&self.step))
        {
            Some(append) => append.expect = lease,
            None => plan.appends.push(Append {
                expect: lease,
                ..Append::on(
                    self.change.clone(),
                    Some(self.step.clone()),
                    Vec::new(),
                    None,
                )
            }),
        }
        for update in &self.updates {
            match plan.updates.iter().position(|u| u.name == update.name) {
                Some(at) if plan.updates[at].new == NewValue::Delete => {
                    plan.updates.remove(at);
                }
                Some(at) => plan.updates[at].expect = update.expect.clone(),
                None => plan.updates.push(update.clone()),
            }
        }
        plan
    }
}

/// Where the request a runner was handed over unpushed stands.
#[derive(Clone, Debug, Default)]
pub(super) enum Handover {
    /// None was handed over, or the one handed over is up.
    #[default]
    None,
    /// Handed over, and no pass has read the remote since: every write carries it.
    Handed(UnpushedRequest),
    /// Handed over, and a pass read the remote since: every write still carries it, and what
    /// the remote holds says whether it landed.
    Read(UnpushedRequest),
    /// The runner ended with it never up.
    Dropped,
}

impl Handover {
    /// A request handed over with a seed, if any.
    pub fn of(request: Option<UnpushedRequest>) -> Handover {
        request.map_or(Handover::None, Handover::Handed)
    }

    /// The request still to go up, if any.
    fn request(&self) -> Option<&UnpushedRequest> {
        match self {
            Handover::Handed(request) | Handover::Read(request) => Some(request),
            Handover::None | Handover::Dropped => None,
        }
    }

    /// A pass reads the remote: from here on the request is judged by what it holds.
    pub fn read(&mut self) {
        *self = match std::mem::take(self) {
            Handover::Handed(request) => Handover::Read(request),
            other => other,
        };
    }

    /// The runner ends: a request not up by then never goes up.
    pub fn end(&mut self) {
        if self.request().is_some() {
            *self = Handover::Dropped;
        }
    }
}

impl Runner {
    /// Whether this runner ended without the request it was handed ever going up: `merge
    /// --wait` must then ask again, with a request of its own.
    pub fn request_dropped(&self) -> bool {
        matches!(self.request, Handover::Dropped)
    }

    /// `plan`, carrying the unpushed request while it has not landed.
    pub(super) fn with_request(&self, plan: PushPlan) -> PushPlan {
        match self.request.request() {
            Some(request) => request.carried_by(plan),
            None => plan,
        }
    }

    /// A pass read the remote, not the view the request was handed over with (a write that
    /// carried it did not land, or the work stopped short of a write): the request landed (its
    /// operation is in the record), or it did not, and the runner ends. Whether it ended.
    pub(super) fn request_settled(&mut self) -> bool {
        let (Handover::Read(request), RunMode::Only(op)) = (&self.request, &self.cfg.mode) else {
            return false;
        };
        let Some(record) = self.record(&request.change) else {
            return false;
        };
        if record.op(op).is_some() {
            self.request = Handover::None;
            return false;
        }
        let result = crate::report::failed(
            "the request did not go up with its runner's first write; ask again".into(),
            Some(&request.change),
        );
        self.finish(result);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::refs;

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:02x}").repeat(20)).expect("hex")
    }

    fn request() -> UnpushedRequest {
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        UnpushedRequest::new(
            change.clone(),
            change.op(1),
            oid(1),
            Some(oid(0)),
            vec![
                RefUpdate {
                    name: refs::queue(7),
                    expect: Expect::Absent,
                    new: NewValue::Step { append: 0, step: 0 },
                },
                RefUpdate {
                    name: refs::QUEUE_LAST.into(),
                    expect: Expect::Is(oid(9)),
                    new: NewValue::Step { append: 0, step: 0 },
                },
            ],
        )
    }

    /// A runner's write on the request's step, with `updates`.
    fn on_request(request: &UnpushedRequest, updates: Vec<RefUpdate>) -> PushPlan {
        PushPlan {
            appends: vec![Append::on(
                request.change.clone(),
                Some(request.step.clone()),
                Vec::new(),
                None,
            )],
            updates,
            atomic: true,
            ..PushPlan::default()
        }
    }

    #[test]
    fn the_first_write_is_leased_under_the_request_and_takes_its_place() {
        let request = request();
        let carried = request.carried_by(on_request(&request, Vec::new()));
        assert_eq!(carried.appends[0].expect, Expect::Is(oid(0)));
        assert_eq!(carried.appends[0].parent, Some(oid(1)));
        let names: Vec<&str> = carried.updates.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, [refs::queue(7).as_str(), refs::QUEUE_LAST]);
        assert!(
            carried
                .updates
                .iter()
                .all(|u| u.new == NewValue::Oid(oid(1)))
        );
    }

    #[test]
    fn a_place_taken_and_given_up_in_one_push_never_exists() {
        let request = request();
        let gives_up = RefUpdate {
            name: refs::queue(7),
            expect: Expect::Is(oid(1)),
            new: NewValue::Delete,
        };
        let carried = request.carried_by(on_request(&request, vec![gives_up]));
        let names: Vec<&str> = carried.updates.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, [refs::QUEUE_LAST]);
        assert_eq!(carried.updates[0].expect, Expect::Is(oid(9)));
    }

    #[test]
    fn a_plan_with_no_step_on_the_request_still_carries_it() {
        let request = request();
        let carried = request.carried_by(PushPlan::default());
        assert_eq!(carried.appends.len(), 1);
        assert_eq!(carried.appends[0].parent, Some(oid(1)));
        assert_eq!(carried.appends[0].expect, Expect::Is(oid(0)));
        assert!(carried.appends[0].steps.is_empty());
    }
}
