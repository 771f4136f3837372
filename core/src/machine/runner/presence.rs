//! The runner's presence: each pass says, at most once per heartbeat on the runner's own clock,
//! what the runner is and does, by replacing `refs/bay/executor/<runner>` with one commit.
//!
//! The write is best effort: it rides beside the pass, never in a push that moves anything
//! else, and what becomes of it changes nothing the runner does but the tip it leases the next
//! one on. A push that does not go through makes the next pass fetch the tip again (with the
//! fetch it makes anyway). `merge --wait` runs one operation and says nothing: it is no runner
//! the queue can count on.

use super::{Purpose, RunMode, Runner};
use crate::git::refs;
use crate::id::OpId;
use crate::machine::{Action, Completion, Expect, Misuse, PresenceAdd, PushOutcome, PushPlan};
use crate::presence::{PRESENCE_SCHEMA, Presence};
use crate::time::Timestamp;

/// When this runner last said its presence.
#[derive(Clone, Copy, Debug)]
pub(super) enum Last {
    /// Not known yet: the presence an earlier run of this runner left is not read.
    Unread,
    /// Never, as far as it counts: no earlier presence, or one that does not count.
    Never,
    /// At this moment, on this runner's clock.
    At(Timestamp),
}

impl Runner {
    /// Whether this runner writes a presence at all.
    pub(super) fn says_presence(&self) -> bool {
        !matches!(self.cfg.mode, RunMode::Only(_))
    }

    /// Writes the presence of the pass that found `queue_depth` live places and took on
    /// `holding`, unless it wrote one less than a heartbeat ago, one is on its way, or it does
    /// not know the tip to lease on.
    pub(super) fn present(&mut self, holding: Option<OpId>, queue_depth: u64) {
        if !self.says_presence() || !self.presence_known || self.presence_due().is_none() {
            return;
        }
        let in_flight = self
            .out
            .in_flight()
            .any(|purpose| matches!(purpose, Purpose::Presence));
        if in_flight {
            return;
        }
        let presence = Presence {
            schema: PRESENCE_SCHEMA.into(),
            runner: self.cfg.runner.clone(),
            machine: self.cfg.machine.clone(),
            bay: self.cfg.version.clone(),
            environments: self.cfg.environments.clone(),
            last_pass: self.now,
            holding,
            queue_depth,
            interval_ms: self.cfg.interval_ms,
            lease_ms: self.cfg.lease_ms,
            progress_ms: self.cfg.progress_ms,
            prechecks: self.prechecks.iter().cloned().collect(),
        };
        let tip = self.refs.get(&refs::executor(&self.cfg.runner));
        let plan = PushPlan {
            presence: Some(PresenceAdd {
                runner: self.cfg.runner.clone(),
                expect: Expect::tip(tip),
                message: presence.to_message(),
            }),
            atomic: true,
            ..PushPlan::default()
        };
        self.last_presence = Last::At(self.now);
        self.out.send(Action::Push(plan), Purpose::Presence);
    }

    /// `Some(())` when a heartbeat has passed on this runner's clock since its last presence
    /// (a clock that went back waits until it passes that moment again).
    fn presence_due(&self) -> Option<()> {
        match self.last_presence {
            Last::At(at) if self.now < at || self.now.millis_since(at) < self.cfg.heartbeat_ms => {
                #[cfg(feature = "mutants")]
                if self.mutant_presence_every_pass() {
                    return Some(());
                }
                None
            }
            _ => Some(()),
        }
    }

    /// Reads, once, the presence the remote holds under this runner's name when this runner
    /// wrote none yet: one written by an earlier run of this runner (a `--once` run a moment
    /// ago) counts towards the heartbeat, so that a runner run again and again writes at most
    /// once per heartbeat too. Whether a read went out.
    pub(super) fn read_earlier_presence(&mut self) -> bool {
        if !self.says_presence() || !matches!(self.last_presence, Last::Unread) {
            return false;
        }
        self.last_presence = Last::Never;
        let Some(tip) = self.refs.get(&refs::executor(&self.cfg.runner)).cloned() else {
            return false;
        };
        self.out
            .send(Action::ReadSteps { oids: vec![tip] }, Purpose::PresenceRead);
        true
    }

    /// The earlier presence read: its `last_pass`, by this runner's clock, starts the
    /// heartbeat, unless it lies ahead of now (a clock that went back, or another machine
    /// under the same name), which starts none. Then the pass goes on.
    pub(super) fn on_earlier_presence(&mut self, completion: Completion) -> Result<(), Misuse> {
        let Completion::StepsRead(read) = completion else {
            return Err(Misuse(
                "a presence read answered with another completion".into(),
            ));
        };
        let earlier = read
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|raw| Presence::from_message(&raw.message).ok())
            .find(|presence| presence.runner == self.cfg.runner && presence.last_pass <= self.now);
        self.last_presence = earlier.map_or(Last::Never, |presence| Last::At(presence.last_pass));
        self.read_places();
        Ok(())
    }

    /// An accepted presence is the tip the next one leases on; any other answer leaves the
    /// tip unknown, for the next pass to fetch.
    pub(super) fn on_presence(&mut self, completion: Completion) -> Result<(), Misuse> {
        let Completion::Pushed(report) = completion else {
            return Err(Misuse(
                "a presence push answered with another completion".into(),
            ));
        };
        match (report.outcome, report.presence) {
            (PushOutcome::Accepted, Some(tip)) => {
                self.refs.insert(refs::executor(&self.cfg.runner), tip);
            }
            _ => self.presence_known = false,
        }
        self.end_if_finishing();
        Ok(())
    }
}
