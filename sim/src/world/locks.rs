//! Locks in the main world: each agent host also runs a hook session that edits one lockable
//! path (`[locks] paths`) as `bay hook` does, beside its commands, under the world's faults,
//! and S17 is checked at every edit the hook lets through.
//!
//! As in the CLI, an edit's `tool.before` makes one fetch of the lock ref and a decision
//! ([`Decide`]: `lock::take`, or a mutant of it); a write goes up as one atomic push against
//! the remote's compare-and-swap, on the world's wire (latency, `push-fail`, `lost-reply`,
//! `partition`), and a push that does not land gets one more fetch and decision. A step's end
//! renews the session's lock once half the takeover window passed (`lock::renew`); a turn's or
//! session's end deletes it (`lock::end`); a session may die holding it (with `crash` on).
//! Each host decides on its own clock, which drifts and jumps with `clock`. Draws come from a
//! stream of their own, so that every other draw of a seed stays as it was.
//!
//! S17, judged as the protocol judges a lock: when the hook lets a session edit, no other
//! session that was let through and has not ended may hold a lock whose last renewal that
//! landed (as the remote took it, whatever reply its writer got) is younger than the takeover
//! window by the clock the editing session decided on. The world's clocks start up to an hour
//! apart, so this is the form that holds with any skew; `crate::locks` checks the global-time
//! form under a bounded skew.

use std::collections::BTreeMap;

use bay_core::git::refs;
use bay_core::lock::{self, Editor, Lock, Read, Take, Write};
use bay_core::machine::{Fault, PushOutcome};
use bay_core::time::Timestamp;

use super::{Ev, Fate, Millis, Role, World};
use crate::faults::FaultClass;
use crate::invariants::{Invariant, Violation};
use crate::locks::{Decide, PATH, TAKEOVER_MS};
use crate::rng::Rng;

/// What a lock push was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An edit's take or takeover, decided at `decided` on the session's clock; `again` when it
    /// may be decided once more.
    Take {
        decided: Timestamp,
        again: bool,
    },
    Renew,
    End,
}

/// One host's hook session.
#[derive(Clone, Debug, Default)]
struct Session {
    /// Bumped when a session ends for good or dies: a new one starts.
    n: u32,
    /// The session took the lock (its state's `locks`), and when it last renewed it.
    holds: bool,
    locks_at: Timestamp,
    /// A push of this session is on the wire: the hook runs one event at a time.
    busy: bool,
}

/// The lock sessions of one world.
#[derive(Debug)]
pub struct LockSessions {
    rng: Rng,
    decide: Decide,
    sessions: BTreeMap<usize, Session>,
    /// S17's view: the sessions let through and not ended since, by name, each with the
    /// `renewed_at` of its last write that landed.
    holders: BTreeMap<String, Timestamp>,
    /// What the sessions did, for the report.
    pub counts: BTreeMap<&'static str, u64>,
}

impl LockSessions {
    pub fn new(rng: Rng, decide: Decide) -> LockSessions {
        LockSessions {
            rng,
            decide,
            sessions: BTreeMap::new(),
            holders: BTreeMap::new(),
            counts: BTreeMap::new(),
        }
    }

    fn count(&mut self, what: &'static str) {
        *self.counts.entry(what).or_insert(0) += 1;
    }

    /// When host `host`'s session first acts.
    pub fn first(&mut self) -> Millis {
        self.rng.range(0, 10_000)
    }
}

impl World {
    fn lock_session(&self, host: usize) -> String {
        let n = self.locks.sessions.get(&host).map_or(0, |s| s.n);
        format!("{}-s{n}", self.hosts[host].name)
    }

    fn lock_editor(&self, host: usize) -> Editor {
        Editor {
            session: self.lock_session(host),
            actor: self.hosts[host].name.clone(),
            machine: self.hosts[host].name.clone(),
        }
    }

    /// One fetch of the lock ref; `None` when the remote does not answer.
    fn lock_fetch(&mut self, host: usize) -> Option<Read> {
        let fails = self
            .locks
            .rng
            .chance(self.mix.rate(FaultClass::FetchFail, 30));
        if fails || self.cut_off(host) {
            self.locks.count("unreachable");
            return None;
        }
        Some(crate::locks::read(&self.git.store, &self.git.remote))
    }

    /// Host `host`'s session acts: an edit, a step's end, a turn's or session's end, or its
    /// death; then it acts again a while later, until the faults stop.
    pub(super) fn lock_step(&mut self, host: usize) {
        if self.healed || !matches!(self.hosts[host].role, Role::Agent(_)) {
            return;
        }
        let delay = self.locks.rng.range(0, TAKEOVER_MS / 3);
        self.after(delay, Ev::LockStep { host });
        let session = self.locks.sessions.entry(host).or_default().clone();
        if session.busy || self.hosts[host].paused_until > self.t {
            return;
        }
        let crash = self.mix.has(FaultClass::Crash);
        match self.locks.rng.range(0, 19) {
            0..=10 => self.lock_edit(host, true),
            11..=14 => self.lock_renew(host),
            15..=17 => self.lock_end(host),
            _ if crash => self.lock_die(host),
            _ => {}
        }
    }

    /// `tool.before` of an edit of the lockable path: fetch and decide.
    fn lock_edit(&mut self, host: usize, again: bool) {
        let Some(read) = self.lock_fetch(host) else {
            return;
        };
        let now = self.hosts[host].clock.local(self.t);
        let editor = self.lock_editor(host);
        match (self.locks.decide)(PATH, &read, &editor, now, TAKEOVER_MS) {
            Take::Write(write) => {
                let over = matches!(&read, Read::Present { lock: Ok(held), .. } if held.session != editor.session);
                self.locks.count(if over { "takeovers" } else { "takes" });
                let kind = Kind::Take {
                    decided: now,
                    again,
                };
                self.lock_push(host, vec![write], kind);
            }
            Take::Kept => self.let_through(host, now),
            Take::Held(_) => self.locks.count("held"),
        }
    }

    /// `step.end`: renews the session's lock once half the window passed since it last did.
    fn lock_renew(&mut self, host: usize) {
        let now = self.hosts[host].clock.local(self.t);
        let session = self.locks.sessions.entry(host).or_default().clone();
        if !session.holds || now.millis_since(session.locks_at) < TAKEOVER_MS / 2 {
            return;
        }
        let Some(read) = self.lock_fetch(host) else {
            return;
        };
        let editor = self.lock_editor(host);
        match lock::renew(PATH, &read, &editor, now) {
            Some(write) => self.lock_push(host, vec![write], Kind::Renew),
            // Taken over meanwhile: no longer the session's.
            None => self.locks.sessions.entry(host).or_default().holds = false,
        }
    }

    /// `turn.end` or `session.end`: the session stops editing, and deletes its lock, leased,
    /// when the fetch finds it still its own; sometimes a new session starts.
    fn lock_end(&mut self, host: usize) {
        let name = self.lock_session(host);
        self.locks.holders.remove(&name);
        let holds = std::mem::take(&mut self.locks.sessions.entry(host).or_default().holds);
        if holds
            && let Some(read) = self.lock_fetch(host)
            && let Some(write) = lock::end(PATH, &read, &name)
        {
            self.lock_push(host, vec![write], Kind::End);
        }
        if self.locks.rng.chance(300) {
            self.locks.sessions.entry(host).or_default().n += 1;
        }
    }

    /// The session dies with its lock: no end ever comes, and a new session starts.
    fn lock_die(&mut self, host: usize) {
        let name = self.lock_session(host);
        self.locks.holders.remove(&name);
        self.locks.count("died");
        let session = self.locks.sessions.entry(host).or_default();
        session.n += 1;
        session.holds = false;
        self.trace.note(self.t, host, "lock-session-died", 0);
    }

    /// Sends `writes` as one atomic push; it arrives after half a latency.
    fn lock_push(&mut self, host: usize, writes: Vec<Write>, kind: Kind) {
        let n = self.locks.sessions.entry(host).or_default().n;
        self.locks.sessions.entry(host).or_default().busy = true;
        let fate = if self
            .locks
            .rng
            .chance(self.mix.rate(FaultClass::LostReply, 40))
        {
            match self.locks.rng.chance(700) {
                true => Fate::AppliedNoReply,
                false => Fate::LostBeforeApply,
            }
        } else {
            Fate::Normal
        };
        let delay = self.locks.rng.range(3, 40);
        self.after(
            delay,
            Ev::LockPush {
                host,
                session: n,
                writes,
                kind,
                fate,
            },
        );
    }

    /// A lock push reaches the remote (or does not), and its writer acts on what it hears.
    pub(super) fn lock_push_arrives(
        &mut self,
        host: usize,
        session: u32,
        writes: Vec<Write>,
        kind: Kind,
        fate: Fate,
    ) {
        let fails = self
            .locks
            .rng
            .chance(self.mix.rate(FaultClass::PushFail, 30));
        let outcome = if fails || self.cut_off(host) || fate == Fate::LostBeforeApply {
            PushOutcome::NotSent(Fault("could not reach the remote".into()))
        } else {
            let outcome = self.lock_apply(&writes, kind);
            match (outcome, fate) {
                (PushOutcome::Accepted, Fate::AppliedNoReply) => PushOutcome::Unknown {
                    why: "the answer was lost".into(),
                },
                (outcome, _) => outcome,
            }
        };
        let current = self.locks.sessions.get(&host).map_or(0, |s| s.n);
        self.locks.sessions.entry(host).or_default().busy = false;
        if current != session {
            // The session died or ended with its push on the wire: nobody hears the answer.
            return;
        }
        let accepted = outcome == PushOutcome::Accepted;
        match kind {
            Kind::Take { decided, .. } if accepted => self.let_through(host, decided),
            Kind::Take { again: true, .. } => self.lock_edit(host, false),
            Kind::Take { .. } => self.locks.count("unsettled"),
            Kind::Renew if accepted => {
                let now = self.hosts[host].clock.local(self.t);
                self.locks.sessions.entry(host).or_default().locks_at = now;
                self.locks.count("renewed");
            }
            Kind::Renew | Kind::End => {}
        }
    }

    /// Applies `writes` in one atomic push against the remote's compare-and-swap; a write that
    /// lands updates the last renewal S17 knows of its session. A take that lands is judged
    /// then, by the clock its writer decided it on, and the sessions it took the lock from hold
    /// it no more (their next edit reads the new holder): a writer that heard no answer and
    /// later finds the lock its own is judged against no one, not again with a clock read
    /// long after, which may have jumped since.
    fn lock_apply(&mut self, writes: &[Write], kind: Kind) -> PushOutcome {
        let plan = crate::locks::plan(&mut self.git.store, writes);
        let (report, _) = self.git.push(&plan);
        if report.outcome == PushOutcome::Accepted {
            for lock in writes.iter().filter_map(|write| write.lock.as_ref()) {
                if let Kind::Take { decided, .. } = kind {
                    self.one_holder(&lock.session, decided, "takes");
                    self.locks
                        .holders
                        .retain(|session, _| *session == lock.session);
                }
                if let Some(renewed) = self.locks.holders.get_mut(&lock.session) {
                    *renewed = lock.renewed_at;
                }
            }
        }
        report.outcome
    }

    /// S17: no session but `me` that was let through and has not ended holds a lock renewed
    /// within the window by `me`'s clock at `decided`, when `me` `does` the path.
    fn one_holder(&mut self, me: &str, decided: Timestamp, does: &str) {
        for (other, renewed) in &self.locks.holders {
            if other != me && decided.millis_since(*renewed) < TAKEOVER_MS {
                self.checker.violations.push(Violation {
                    invariant: Invariant::OneLockHolder,
                    at: self.t,
                    what: format!(
                        "{me} {does} {PATH} while {other} holds it, renewed {}ms before by {me}'s clock",
                        decided.millis_since(*renewed)
                    ),
                });
            }
        }
    }

    /// The hook lets host `host`'s session edit, as decided at `decided` on its clock: S17 if
    /// another session let through and not ended holds a lock renewed within the window by
    /// that clock. From now on this session is the one holder.
    fn let_through(&mut self, host: usize, decided: Timestamp) {
        let me = self.lock_session(host);
        self.locks.count("edits");
        self.one_holder(&me, decided, "edits");
        let renewed = self
            .git
            .remote
            .get(&refs::lock(PATH))
            .and_then(|oid| self.git.store.get(oid))
            .and_then(|commit| Lock::from_message(&commit.message).ok())
            .filter(|lock| lock.session == me)
            .map_or(decided, |lock| lock.renewed_at);
        self.locks.holders = BTreeMap::from([(me, renewed)]);
        let session = self.locks.sessions.entry(host).or_default();
        if !session.holds {
            session.locks_at = decided;
        }
        session.holds = true;
        self.trace.note(self.t, host, "lock-edit", 0);
    }
}
