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

/// `executor`'s answer to `action`, or, when the executor panics, the action's fault with
/// the panic's message ([`Action::fault`]: for a push, one that may have applied).
///
/// Every action in flight must be answered: the pump waits for as many answers as it started
/// actions, so a thread that ended without one would leave the command waiting for ever.
fn answer<E: Execute>(executor: &E, action: Action) -> Completion {
    let kept = action.clone();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| executor.execute(action)))
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".to_owned());
            kept.fault(format!(
                "bay's driver failed at {}: it panicked: {message}",
                kept.name()
            ))
        })
}

/// Sees each action as the pump hands it out and each completion as it comes back, to tell a
/// person what is going on. It decides nothing and changes nothing.
pub trait Watch {
    fn action(&mut self, id: ActionId, action: &Action);
    fn done(&mut self, id: ActionId, completion: &Completion);
}

/// Runs actions on threads and collects their completions.
pub struct Driver<E: Execute> {
    executor: std::sync::Arc<E>,
    done_tx: Sender<(ActionId, Completion)>,
    done_rx: Receiver<(ActionId, Completion)>,
    in_flight: usize,
    watch: Option<Box<dyn Watch>>,
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
            watch: None,
        }
    }

    /// Shows every action and completion the pump passes to `watch` from now on.
    pub fn watch(&mut self, watch: Box<dyn Watch>) {
        self.watch = Some(watch);
    }

    pub fn executor(&self) -> &E {
        &self.executor
    }

    fn start(&mut self, id: ActionId, action: Action) {
        let executor = std::sync::Arc::clone(&self.executor);
        let done = self.done_tx.clone();
        self.in_flight += 1;
        std::thread::spawn(move || {
            let completion = answer(&*executor, action);
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
                if let Some(watch) = self.watch.as_mut() {
                    watch.action(id, &action);
                }
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
                Some((id, completion)) => {
                    if let Some(watch) = self.watch.as_mut() {
                        watch.done(id, &completion);
                    }
                    Event::Done(id, completion)
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use bay_core::machine::{Fault, PushOutcome, PushPlan};
    use bay_core::time::Timestamp;

    /// Sends one action, and ends with the completion it gets, as a failed result whose `why`
    /// is that completion.
    struct One {
        action: Option<Action>,
        outcome: Option<BayResult>,
    }

    impl Machine for One {
        fn handle(&mut self, _: Timestamp, event: Event) -> Result<(), Misuse> {
            if let Event::Done(_, completion) = event {
                let got = serde_json::to_string(&completion).expect("a completion is JSON");
                self.outcome = Some(BayResult::failed(&got));
            }
            Ok(())
        }
        fn poll_action(&mut self) -> Option<(ActionId, Action)> {
            self.action.take().map(|action| (ActionId(1), action))
        }
        fn poll_timeout(&self) -> Option<bay_core::machine::Deadline> {
            None
        }
        fn outcome(&self) -> Option<&BayResult> {
            self.outcome.as_ref()
        }
    }

    struct Panics;

    impl Execute for Panics {
        fn execute(&self, action: Action) -> Completion {
            panic!("no answer to {}", action.name());
        }
    }

    /// The completion the pump fed `One` for `action`, run on a thread of its own: a pump that
    /// never returns fails the test at the bound instead of hanging it.
    fn pumped(action: Action) -> Completion {
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut machine = One {
                action: Some(action),
                outcome: None,
            };
            let outcome =
                Driver::new(std::sync::Arc::new(Panics)).pump(&mut machine, &mut |_| false);
            let _ = tx.send(outcome);
        });
        let outcome = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the pump returns when an action's thread panics")
            .expect("the machine ends");
        let got = outcome.detail["why"].as_str().expect("the completion");
        serde_json::from_str(got).expect("a completion")
    }

    #[test]
    fn a_panicking_action_is_answered_with_its_fault() {
        let read = pumped(Action::ReadTrees { commits: vec![] });
        let why = "bay's driver failed at read-trees: it panicked: no answer to read-trees";
        assert_eq!(read, Completion::TreesRead(Err(Fault(why.into()))));

        // A push that panicked may have applied: its outcome is unknown, never "not sent".
        let Completion::Pushed(report) = pumped(Action::Push(PushPlan::default())) else {
            panic!("a push is answered as a push");
        };
        let why = "bay's driver failed at push: it panicked: no answer to push".to_owned();
        assert_eq!(report.outcome, PushOutcome::Unknown { why });
    }
}
