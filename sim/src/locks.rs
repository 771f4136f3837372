//! Locks across machines (`bay_core::lock`) under faults, and S17: at most one live holder of
//! a lock at any time.
//!
//! Sessions on several machines edit one lockable path as `bay hook` does: one fetch of the
//! lock ref, a decision, one push against the simulated remote's compare-and-swap, and on a
//! push that does not land one more fetch and decision. The fetch and the push are separate
//! steps of the schedule, so other machines act in between. Faults: a fetch without an answer,
//! a push never sent, a push applied whose answer is lost, a session that dies holding its
//! lock, and each machine's clock off by up to [`MAX_SKEW_MS`].
//!
//! A session is a live holder from an edit the hook let through until its turn or session
//! ends, or until its lock, as last renewed, is past the takeover window less twice the
//! largest skew (the earliest another machine may take it over). S17 holds when no edit is let
//! through while another session is a live holder. The skew bound is the assumption the lock
//! rests on: two clocks further apart than the window can each believe the lock is theirs.

use std::collections::BTreeMap;

use bay_core::git::refs;
use bay_core::lock::{self, Editor, Lock, Read, Take, Write};
use bay_core::machine::{NewValue, PushOutcome, PushPlan, RefUpdate};
use bay_core::time::Timestamp;

use crate::invariants::{Invariant, Violation};
use crate::remote::{NotesLog, Remote};
use crate::rng::Rng;
use crate::store::Store;

pub const PATH: &str = "art/logo.png";
pub const TAKEOVER_MS: u64 = 120_000;
pub const MAX_SKEW_MS: u64 = 20_000;
const MACHINES: usize = 3;
const STEPS: usize = 400;

/// The lock of [`PATH`] as one fetch of `remote` reads it.
pub fn read(store: &Store, remote: &Remote) -> Read {
    match remote.get(&refs::lock(PATH)) {
        None => Read::Absent,
        Some(oid) => {
            let message = store
                .get(oid)
                .map(|c| c.message.to_string())
                .unwrap_or_default();
            Read::Present {
                oid: oid.clone(),
                lock: Lock::from_message(&message),
            }
        }
    }
}

/// Lock writes as the CLI pushes them: one atomic push, each lock a parentless commit of its
/// document on the empty tree, written into `store`.
pub fn plan(store: &mut Store, writes: &[Write]) -> PushPlan {
    let empty = store.empty_tree();
    let updates = writes
        .iter()
        .map(|write| RefUpdate {
            name: refs::lock(&write.path),
            expect: write.expect.clone(),
            new: match &write.lock {
                Some(lock) => {
                    NewValue::Oid(store.commit(empty.clone(), vec![], &lock.to_message()))
                }
                None => NewValue::Delete,
            },
        })
        .collect();
    PushPlan {
        updates,
        atomic: true,
        ..PushPlan::default()
    }
}

/// How a hook decides an edit: `lock::take`, or a mutant of it.
pub type Decide = fn(&str, &Read, &Editor, Timestamp, u64) -> Take;

/// One machine and the session that runs on it.
struct Machine {
    skew_ms: u64,
    /// Added or taken away: `true` runs the clock ahead by `skew_ms`.
    ahead: bool,
    session: u32,
    /// An edit between its fetch and its push: the writes decided, and whether it may try once
    /// more.
    pending: Option<(Vec<Write>, bool)>,
}

impl Machine {
    fn clock(&self, now: u64) -> Timestamp {
        let at = if self.ahead {
            now.saturating_add(self.skew_ms)
        } else {
            now.saturating_sub(self.skew_ms)
        };
        Timestamp(at)
    }
}

struct Run {
    rng: Rng,
    decide: Decide,
    store: Store,
    remote: Remote,
    notes: NotesLog,
    machines: Vec<Machine>,
    now: u64,
    /// Each live holder, by session name: until when (global time) it holds.
    holders: BTreeMap<String, u64>,
    violations: Vec<Violation>,
}

/// Runs one seed of sessions editing one locked path; the S17 violations it found.
pub fn run(seed: u64, decide: Decide) -> Vec<Violation> {
    let mut rng = Rng::new(seed);
    let machines = (0..MACHINES)
        .map(|_| Machine {
            skew_ms: rng.range(0, MAX_SKEW_MS),
            ahead: rng.chance(500),
            session: 0,
            pending: None,
        })
        .collect();
    let mut run = Run {
        rng,
        decide,
        store: Store::default(),
        remote: Remote::default(),
        notes: NotesLog::default(),
        machines,
        now: 1_000_000,
        holders: BTreeMap::new(),
        violations: Vec::new(),
    };
    for _ in 0..STEPS {
        run.now += run.rng.range(0, TAKEOVER_MS / 3);
        let m = run.rng.range(0, MACHINES as u64 - 1) as usize;
        match run.rng.range(0, 9) {
            _ if run.machines[m].pending.is_some() => run.push(m),
            0..=5 => run.edit(m, true),
            6 | 7 => run.end(m),
            8 => run.crash(m),
            _ => {}
        }
    }
    run.violations
}

impl Run {
    fn session(&self, m: usize) -> String {
        format!("m{m}-s{}", self.machines[m].session)
    }

    fn editor(&self, m: usize) -> Editor {
        Editor {
            session: self.session(m),
            actor: format!("agent{m}"),
            machine: format!("m{m}"),
        }
    }

    /// One fetch of the lock ref; `None` when the remote does not answer.
    fn fetch(&mut self) -> Option<Read> {
        if self.rng.chance(100) {
            return None;
        }
        Some(read(&self.store, &self.remote))
    }

    /// `tool.before` of an edit of the path: fetch and decide; a write waits for its push.
    fn edit(&mut self, m: usize, again: bool) {
        let Some(read) = self.fetch() else {
            return;
        };
        let now = self.machines[m].clock(self.now);
        match (self.decide)(PATH, &read, &self.editor(m), now, TAKEOVER_MS) {
            Take::Write(write) => self.machines[m].pending = Some((vec![write], again)),
            Take::Kept => self.let_through(m),
            Take::Held(_) => {}
        }
    }

    /// The push of a pending edit or end: on no answer or a refusal, one more fetch and
    /// decision for an edit, as the CLI does.
    fn push(&mut self, m: usize) {
        let Some((writes, again)) = self.machines[m].pending.take() else {
            return;
        };
        let lost_answer = self.rng.chance(100);
        let outcome = if self.rng.chance(100) {
            PushOutcome::NotSent(bay_core::machine::Fault("no route".into()))
        } else {
            let plan = plan(&mut self.store, &writes);
            let (report, _) = self.remote.push(&mut self.store, &plan, &mut self.notes);
            match report.outcome {
                PushOutcome::Accepted if lost_answer => PushOutcome::Unknown {
                    why: "the answer was lost".into(),
                },
                outcome => outcome,
            }
        };
        let ends = writes.iter().all(|write| write.lock.is_none());
        match outcome {
            PushOutcome::Accepted if !ends => self.let_through(m),
            PushOutcome::Accepted => {}
            _ if ends || !again => {}
            _ => self.edit(m, false),
        }
    }

    /// The hook let session `m` edit: S17 if another session is a live holder now, and this
    /// one holds until its lock, as the remote holds it, may be taken over.
    fn let_through(&mut self, m: usize) {
        let me = self.session(m);
        let now = self.now;
        self.holders.retain(|_, until| *until > now);
        for (other, until) in &self.holders {
            if *other != me {
                self.violations.push(Violation {
                    invariant: Invariant::OneLockHolder,
                    at: now,
                    what: format!("{me} edits {PATH} while {other} holds it until {until}"),
                });
            }
        }
        let renewed = self.remote.get(&refs::lock(PATH)).and_then(|oid| {
            let commit = self.store.get(oid)?;
            Lock::from_message(&commit.message).ok()
        });
        if let Some(lock) = renewed.filter(|lock| lock.session == me) {
            let machine = &self.machines[m];
            let renewed_global = if machine.ahead {
                lock.renewed_at.0.saturating_sub(machine.skew_ms)
            } else {
                lock.renewed_at.0.saturating_add(machine.skew_ms)
            };
            let until = renewed_global + TAKEOVER_MS - 2 * MAX_SKEW_MS;
            self.holders.insert(me, until);
        }
    }

    /// `turn.end` or `session.end`: the session stops editing, and deletes its lock if the
    /// fetch finds it still its own.
    fn end(&mut self, m: usize) {
        self.holders.remove(&self.session(m));
        if let Some(read) = self.fetch()
            && let Some(write) = lock::end(PATH, &read, &self.session(m))
        {
            self.machines[m].pending = Some((vec![write], false));
        }
        if self.rng.chance(300) {
            self.machines[m].session += 1;
        }
    }

    /// The session dies holding its lock: no end ever comes, and a new session starts.
    fn crash(&mut self, m: usize) {
        self.holders.remove(&self.session(m));
        self.machines[m].pending = None;
        self.machines[m].session += 1;
    }
}
