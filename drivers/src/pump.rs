//! The loop that drives one core machine with real programs: hand out its actions, each on
//! its own thread (a check may run for half an hour while heartbeats go on), feed back each
//! completion, and tick when the machine's deadline comes.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use bay_core::machine::{Action, ActionId, Completion, Event, Machine, Misuse};
use bay_core::result::BayResult;

use crate::clock;

/// Something that can answer one action, from any thread.
pub trait Execute: Send + Sync + 'static {
    fn execute(&self, action: Action) -> Completion;
}

/// Runs actions on threads and collects their completions.
pub struct Driver<E: Execute> {
    executor: std::sync::Arc<E>,
    done_tx: Sender<(ActionId, Completion)>,
    done_rx: Receiver<(ActionId, Completion)>,
    in_flight: usize,
}

impl<E: Execute> std::fmt::Debug for Driver<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

/// Why `pump` stopped before the machine had an outcome.
#[derive(Debug)]
pub enum Stopped {
    /// The driver broke the protocol (a bug in bay).
    Misuse(Misuse),
    /// `until` said so.
    Asked,
}

impl<E: Execute> Driver<E> {
    pub fn new(executor: std::sync::Arc<E>) -> Driver<E> {
        let (done_tx, done_rx) = channel();
        Driver {
            executor,
            done_tx,
            done_rx,
            in_flight: 0,
        }
    }

    pub fn executor(&self) -> &E {
        &self.executor
    }

    fn start(&mut self, id: ActionId, action: Action) {
        let executor = std::sync::Arc::clone(&self.executor);
        let done = self.done_tx.clone();
        self.in_flight += 1;
        std::thread::spawn(move || {
            let completion = executor.execute(action);
            // The pump may have stopped listening; then the answer is not needed.
            let _ = done.send((id, completion));
        });
    }

    /// Drives `machine` until it has an outcome, or until `until` returns true (checked after
    /// every input). Returns the outcome.
    pub fn pump(
        &mut self,
        machine: &mut dyn Machine,
        until: &mut dyn FnMut(&dyn Machine) -> bool,
    ) -> Result<BayResult, Stopped> {
        loop {
            while let Some((id, action)) = machine.poll_action() {
                self.start(id, action);
            }
            if let Some(outcome) = machine.outcome() {
                return Ok(outcome.clone());
            }
            if until(machine) {
                return Err(Stopped::Asked);
            }
            let wait = machine.poll_timeout().map(|deadline| {
                let ahead = deadline.at.millis_since(clock::now());
                Instant::now() + Duration::from_millis(ahead)
            });
            if wait.is_none() && self.in_flight == 0 {
                let why = "the machine has no outcome, no action in flight and no deadline";
                return Err(Stopped::Misuse(Misuse(why.into())));
            }
            let event = match self.next(wait) {
                Some((id, completion)) => Event::Done(id, completion),
                None => Event::Tick,
            };
            machine
                .handle(clock::now(), event)
                .map_err(Stopped::Misuse)?;
        }
    }

    /// The next completion, or `None` when `until` passes first (or nothing is in flight and
    /// nothing is awaited).
    fn next(&mut self, until: Option<Instant>) -> Option<(ActionId, Completion)> {
        let received = match until {
            Some(until) => {
                let timeout = until.saturating_duration_since(Instant::now());
                self.done_rx.recv_timeout(timeout).ok()
            }
            None if self.in_flight > 0 => self.done_rx.recv().ok(),
            None => None,
        };
        if received.is_some() {
            self.in_flight -= 1;
        }
        received
    }
}
