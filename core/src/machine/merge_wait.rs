//! `bay merge --wait`: the request, then its operation run here, by this machine as its
//! runner, from what the request saw. Decided here once, for the CLI and the simulator alike:
//!
//! - the request goes up with the runner's first write when nothing is queued ahead
//!   ([`Merge::then_run_as`] with the request carried);
//! - a request that is queued is worked at once by a runner that runs only its operation,
//!   seeded with the refs, chain, policy and config the request read ([`Merge::seed`]);
//! - a runner that ended without the request it carried ever going up
//!   ([`Runner::request_dropped`]) is followed by one more request, on its own, and its run.
//!
//! Each phase is a machine of its own. Their action ids are renumbered here, so that a reply
//! still on its way to a phase that ended is dropped, never taken by the next one.

use std::collections::BTreeMap;

use super::merge::{Merge, MergeInput};
use super::runner::{RunMode, Runner, RunnerConfig, Seed};
use super::{Action, ActionId, Deadline, Event, Machine, Misuse};
use crate::config::Config;
use crate::id::OpId;
use crate::result::BayResult;
use crate::time::Timestamp;
use crate::trust::record::RunnerSigner;

/// Mixed into the entropy of a phase that runs again, so that its nonces are new.
const AGAIN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The `bay merge --wait` machine. Drive it as [`Machine`] says.
#[derive(Debug)]
pub struct MergeWait {
    input: MergeInput,
    /// The runner this machine works the operation as; its mode is set to the operation.
    runner: RunnerConfig,
    /// Main's config as the request's fetch read it, when the caller read it.
    config: Option<Config>,
    /// The refusal each request gives when the policy has checks and this machine no sandbox.
    no_sandbox: Option<BayResult>,
    phase: Phase,
    /// Whether the current request is carried by the runner's first write.
    carried: bool,
    /// Which phase this is: 0 for the first request, one more for each phase after.
    generation: u32,
    /// Whether a run was handed the request to carry in its first write.
    carried_request: bool,
    /// The operation the latest request queued, once one did.
    op: Option<OpId>,
    /// Every action handed out and not answered: its phase and its id there.
    ids: BTreeMap<ActionId, (u32, ActionId)>,
    next: u64,
    outcome: Option<BayResult>,
}

#[derive(Debug)]
enum Phase {
    Asking(Box<Merge>),
    Running(Box<Runner>),
}

/// The request of `merge --wait`, for the runner `runner` to work next.
fn asking(input: MergeInput, now: Timestamp, runner: &RunnerConfig, carried: bool) -> Merge {
    let merge = Merge::then_run_as(input, now, &runner.runner, carried);
    #[cfg(feature = "mutants")]
    let merge = {
        let mut merge = merge;
        merge.mutate(runner.mutant);
        merge
    };
    merge
}

impl MergeWait {
    /// Asks for `input.change` to be merged and runs its operation here as `runner` (whose
    /// name is the log the request's fetch brings along).
    pub fn new(input: MergeInput, now: Timestamp, runner: RunnerConfig) -> MergeWait {
        let merge = asking(input.clone(), now, &runner, true);
        MergeWait {
            input,
            runner,
            config: None,
            no_sandbox: None,
            phase: Phase::Asking(Box::new(merge)),
            carried: true,
            generation: 0,
            carried_request: false,
            op: None,
            ids: BTreeMap::new(),
            next: 1,
            outcome: None,
        }
    }

    /// This machine has no check sandbox: every request refuses with `refusal` before it
    /// writes anything, when the policy has checks to run ([`Merge::without_sandbox`]).
    pub fn without_sandbox(&mut self, refusal: BayResult) {
        if let Phase::Asking(merge) = &mut self.phase {
            merge.without_sandbox(refusal.clone());
        }
        self.no_sandbox = Some(refusal);
    }

    /// Main's config, as the caller read it with the request's first fetch: the runner takes
    /// its settings from it ([`RunnerConfig::configured`]) and knows main's holds without a
    /// second read.
    pub fn configured(&mut self, config: Config) {
        self.runner = self.runner.clone().configured(&config);
        self.config = Some(config);
    }

    /// What the run signs with, as [`crate::machine::runner_keys::RunnerKeys`] judged this
    /// machine's keys on the request's first fetch, before the request goes up.
    pub fn signs(&mut self, signer: Option<RunnerSigner>, approvals_only: bool) {
        self.runner.signer = signer;
        self.runner.approvals_only = approvals_only;
    }

    /// Which phase runs: 0 for the first request; each later phase (its run, a request
    /// asked again, that one's run) counts one more. A driver that tells runs apart (as the
    /// simulator tells a runner's incarnations) reads it after each input.
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// Whether a run was handed the request to carry in its first write.
    pub fn carried_request(&self) -> bool {
        self.carried_request
    }

    /// The operation the latest request queued, once one did.
    pub fn op(&self) -> Option<&OpId> {
        self.op.as_ref()
    }

    /// Whether a run works the operation now (the latest request queued it).
    pub fn running(&self) -> bool {
        matches!(self.phase, Phase::Running(_))
    }

    fn machine(&mut self) -> &mut dyn Machine {
        match &mut self.phase {
            Phase::Asking(merge) => merge.as_mut(),
            Phase::Running(runner) => runner.as_mut(),
        }
    }

    /// Moves on from a phase that has its outcome: to the run, to a request asked again, or to
    /// the end.
    fn advance(&mut self, now: Timestamp) {
        while self.outcome.is_none() {
            let next = match &self.phase {
                Phase::Asking(merge) => {
                    let Some(result) = merge.outcome() else {
                        return;
                    };
                    // A seed is there exactly when the request is queued.
                    match (merge.seed(), result.op_id.clone()) {
                        (Some(seed), Some(op)) => {
                            let mut cfg = self.runner.clone();
                            cfg.mode = RunMode::Only(op.clone());
                            self.op = Some(op);
                            self.carried_request |= seed.request.is_some();
                            let seed = Seed {
                                config: self.config.clone(),
                                ..seed
                            };
                            Phase::Running(Box::new(Runner::seeded(cfg, now, seed)))
                        }
                        _ => {
                            self.outcome = Some(result.clone());
                            return;
                        }
                    }
                }
                Phase::Running(runner) => {
                    let Some(result) = runner.outcome() else {
                        return;
                    };
                    if !(runner.request_dropped() && self.carried) {
                        self.outcome = Some(result.clone());
                        return;
                    }
                    // The runner could not carry the request: ask again, on its own.
                    self.carried = false;
                    self.input.entropy ^= AGAIN;
                    self.runner.nonce_seed ^= AGAIN;
                    let mut merge = asking(self.input.clone(), now, &self.runner, false);
                    if let Some(refusal) = &self.no_sandbox {
                        merge.without_sandbox(refusal.clone());
                    }
                    Phase::Asking(Box::new(merge))
                }
            };
            self.phase = next;
            self.generation += 1;
        }
    }
}

impl Machine for MergeWait {
    fn handle(&mut self, now: Timestamp, event: Event) -> Result<(), Misuse> {
        let event = match event {
            Event::Done(id, completion) => {
                let Some((generation, inner)) = self.ids.remove(&id) else {
                    return Err(Misuse(format!("no action {} is in flight", id.0)));
                };
                // A reply to a phase that ended is its own: dropped.
                if generation != self.generation || self.outcome.is_some() {
                    return Ok(());
                }
                Event::Done(inner, completion)
            }
            Event::Tick => Event::Tick,
        };
        if self.outcome.is_none() {
            self.machine().handle(now, event)?;
            self.advance(now);
        }
        Ok(())
    }

    fn poll_action(&mut self) -> Option<(ActionId, Action)> {
        if self.outcome.is_some() {
            return None;
        }
        let (inner, action) = self.machine().poll_action()?;
        let id = ActionId(self.next);
        self.next += 1;
        self.ids.insert(id, (self.generation, inner));
        Some((id, action))
    }

    fn poll_timeout(&self) -> Option<Deadline> {
        match (&self.outcome, &self.phase) {
            (Some(_), _) => None,
            (None, Phase::Asking(merge)) => merge.poll_timeout(),
            (None, Phase::Running(runner)) => runner.poll_timeout(),
        }
    }

    fn outcome(&self) -> Option<&BayResult> {
        self.outcome.as_ref()
    }
}
