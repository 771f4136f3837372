//! Bookkeeping every machine shares: action ids, the queue of actions to hand out, and what
//! each in-flight action was for.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::{Action, ActionId, Misuse};

/// Actions waiting to be polled, and the purpose `P` of each one in flight.
#[derive(Debug)]
pub struct Outbox<P> {
    next: u64,
    queue: VecDeque<(ActionId, Action)>,
    in_flight: BTreeMap<ActionId, P>,
    /// Actions given up on; their late completions are dropped, not refused.
    forgotten: BTreeSet<ActionId>,
}

impl<P> Default for Outbox<P> {
    fn default() -> Self {
        Outbox {
            next: 1,
            queue: VecDeque::new(),
            in_flight: BTreeMap::new(),
            forgotten: BTreeSet::new(),
        }
    }
}

impl<P> Outbox<P> {
    /// Queues `action`, remembering `purpose` until its completion comes back.
    pub fn send(&mut self, action: Action, purpose: P) -> ActionId {
        let id = ActionId(self.next);
        self.next += 1;
        self.queue.push_back((id, action));
        self.in_flight.insert(id, purpose);
        id
    }

    pub fn poll(&mut self) -> Option<(ActionId, Action)> {
        self.queue.pop_front()
    }

    /// Takes the purpose of a finished action: `None` for one given up on (drop its answer),
    /// `Err` for an id this machine never issued or already heard back from.
    pub fn complete(&mut self, id: ActionId) -> Result<Option<P>, Misuse> {
        if let Some(purpose) = self.in_flight.remove(&id) {
            return Ok(Some(purpose));
        }
        if self.forgotten.remove(&id) {
            return Ok(None);
        }
        Err(Misuse(format!("no action {} is in flight", id.0)))
    }

    /// Gives up on an action whose answer no longer matters.
    pub fn forget(&mut self, id: ActionId) {
        if self.in_flight.remove(&id).is_some() {
            self.forgotten.insert(id);
        }
        self.queue.retain(|(queued, _)| *queued != id);
    }

    /// Gives up on every action in flight.
    pub fn forget_all(&mut self) {
        self.forget_all_but(|_| false);
    }

    /// Gives up on every action in flight whose purpose `keep` does not keep.
    pub fn forget_all_but(&mut self, keep: impl Fn(&P) -> bool) {
        let ids: Vec<ActionId> = self
            .in_flight
            .iter()
            .filter(|(_, purpose)| !keep(purpose))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.forget(id);
        }
    }

    pub fn is_idle(&self) -> bool {
        self.in_flight.is_empty()
    }

    pub fn in_flight(&self) -> impl Iterator<Item = &P> {
        self.in_flight.values()
    }
}
