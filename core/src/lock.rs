//! Locks of the paths `[locks] paths` names: one session at a time edits each such file,
//! across machines, because Git cannot combine two edits of a binary file.
//!
//! A lock is `refs/bay/locks/<digest of the path>` on the remote ([`refs::lock`]), pointing at
//! one commit with no parent whose message is the `bay.lock/1` document ([`Lock`]). Every
//! write is a compare-and-swap on the value one fetch read, so of two machines that race for
//! one path exactly one push lands:
//! - taking a free lock is create-only ([`Expect::Absent`]);
//! - renewing one's own lock, taking over a lock no step renewed within the takeover window
//!   (`[runner] takeover_s`), and ending one's own lock are leased on the value read.
//!
//! The hook renews a lock once half the window has passed since its last renewal, so a
//! session that keeps editing never loses it. The lock's age is read from the holder's
//! `renewed_at` against the reader's clock: the one place bay lets two clocks meet, because a
//! lock must be judged by one fetch with no history of its own. A holder's clock that runs
//! ahead only keeps its lock longer; one that runs behind can lose it early, never two holders
//! at once, since every write is leased.
//!
//! [`refs::lock`]: crate::git::refs::lock

use serde::{Deserialize, Serialize};

use crate::git::Oid;
use crate::machine::Expect;
use crate::time::Timestamp;

pub const LOCK_SCHEMA: &str = "bay.lock/1";

/// What a lock says of its holder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    pub schema: String,
    /// The path locked, relative to the top of the repository.
    pub path: String,
    /// The agent product's session id.
    pub session: String,
    /// The holder's agent (its actor name).
    pub actor: String,
    pub machine: String,
    /// When the session took the lock, on the holder's clock.
    pub taken_at: Timestamp,
    /// The last renewal (or the taking), on the holder's clock.
    pub renewed_at: Timestamp,
}

impl Lock {
    /// The commit message: a subject that reads well in `git log`, then the document.
    pub fn to_message(&self) -> String {
        let body = serde_json::to_string(self).expect("a lock serializes: plain data");
        format!("bay: lock {}\n\n{body}\n", self.path)
    }

    pub fn from_message(message: &str) -> Result<Lock, String> {
        let (_, body) = message
            .split_once("\n\n")
            .ok_or_else(|| "no body after the subject".to_string())?;
        let lock: Lock = serde_json::from_str(body.trim()).map_err(|e| e.to_string())?;
        if lock.schema != LOCK_SCHEMA {
            return Err(format!("schema {:?}, not {LOCK_SCHEMA}", lock.schema));
        }
        Ok(lock)
    }
}

/// The session that edits: who a lock it takes names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Editor {
    pub session: String,
    pub actor: String,
    pub machine: String,
}

/// One lock ref as one fetch read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Read {
    Absent,
    /// The ref's commit, and its document or why it cannot be read.
    Present {
        oid: Oid,
        lock: Result<Lock, String>,
    },
}

/// A write of one lock ref: `lock` as a new commit, or `None` to delete the ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    pub path: String,
    pub expect: Expect,
    pub lock: Option<Lock>,
}

/// What an edit of a lockable path does about its lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Take {
    /// Write the lock (take, renew or take over), then edit.
    Write(Write),
    /// The session holds it, renewed recently: edit with no write.
    Kept,
    /// Another session holds it: the edit is refused `PATH_HELD`.
    Held(Held),
}

/// Another session's live lock, as `PATH_HELD` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub lock: Lock,
    /// Since it was taken, and since its last renewal, by the reader's clock.
    pub age_ms: u64,
    pub idle_ms: u64,
}

impl Held {
    /// What a refused edit's `detail` names: the path, its holder, and how old the lock is.
    pub fn detail(&self) -> Locked {
        Locked {
            path: self.lock.path.clone(),
            lock: true,
            holder: Holder {
                session: self.lock.session.clone(),
                actor: self.lock.actor.clone(),
                machine: self.lock.machine.clone(),
            },
            age_s: self.age_ms / 1000,
            idle_s: self.idle_ms / 1000,
        }
    }
}

/// A refused edit's `detail`: a live lock another session holds on the path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Locked {
    pub path: String,
    /// Always `true`: the refusal came from a lock, not from a write in this tree.
    pub lock: bool,
    pub holder: Holder,
    /// Since it was taken, and since its last renewal, by the reader's clock.
    pub age_s: u64,
    pub idle_s: u64,
}

/// The session that holds a lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub session: String,
    pub actor: String,
    pub machine: String,
}

/// Decides an edit of `path` by `editor` at `now`, the lock read as `read`. A lock that no
/// step renewed within `takeover_ms`, names no session, or cannot be read goes to this edit.
pub fn take(path: &str, read: &Read, editor: &Editor, now: Timestamp, takeover_ms: u64) -> Take {
    let fresh = |taken_at| Lock {
        schema: LOCK_SCHEMA.into(),
        path: path.to_owned(),
        session: editor.session.clone(),
        actor: editor.actor.clone(),
        machine: editor.machine.clone(),
        taken_at,
        renewed_at: now,
    };
    let (oid, lock) = match read {
        Read::Absent => {
            return Take::Write(Write {
                path: path.to_owned(),
                expect: Expect::Absent,
                lock: Some(fresh(now)),
            });
        }
        Read::Present { oid, lock } => (oid, lock),
    };
    let replace = |taken_at| {
        Take::Write(Write {
            path: path.to_owned(),
            expect: Expect::Is(oid.clone()),
            lock: Some(fresh(taken_at)),
        })
    };
    let lock = match lock {
        Ok(lock) if !lock.session.is_empty() => lock,
        _ => return replace(now),
    };
    let idle_ms = now.millis_since(lock.renewed_at);
    if lock.session == editor.session {
        return match renew(path, read, editor, now) {
            Some(write) if idle_ms >= takeover_ms / 2 => Take::Write(write),
            _ => Take::Kept,
        };
    }
    if idle_ms >= takeover_ms {
        return replace(now);
    }
    Take::Held(Held {
        lock: lock.clone(),
        age_ms: now.millis_since(lock.taken_at),
        idle_ms,
    })
}

/// Renews `editor`'s own lock of `path` as read, now: a replace leased on the value read
/// that keeps `taken_at`. `None` when the lock is gone or another session's (taken over).
pub fn renew(path: &str, read: &Read, editor: &Editor, now: Timestamp) -> Option<Write> {
    match read {
        Read::Present {
            oid,
            lock: Ok(lock),
        } if lock.session == editor.session => Some(Write {
            path: path.to_owned(),
            expect: Expect::Is(oid.clone()),
            lock: Some(Lock {
                actor: editor.actor.clone(),
                machine: editor.machine.clone(),
                renewed_at: now,
                ..lock.clone()
            }),
        }),
        _ => None,
    }
}

/// Ends `session`'s lock of `path` as read: a delete leased on the value read, or nothing
/// when the lock is gone or another session's (taken over meanwhile).
pub fn end(path: &str, read: &Read, session: &str) -> Option<Write> {
    match read {
        Read::Present {
            oid,
            lock: Ok(lock),
        } if lock.session == session => Some(Write {
            path: path.to_owned(),
            expect: Expect::Is(oid.clone()),
            lock: None,
        }),
        _ => None,
    }
}

/// Broken variants of [`take`], compiled only for the simulator's tests, to prove that its
/// lock invariant (S17) can fail.
#[cfg(feature = "mutants")]
pub mod mutant {
    use super::*;

    /// Takes or takes over a lock with no lease at all: of two machines that race, both pushes
    /// land, and both edit.
    pub fn take_without_lease(
        path: &str,
        read: &Read,
        editor: &Editor,
        now: Timestamp,
        takeover_ms: u64,
    ) -> Take {
        match take(path, read, editor, now, takeover_ms) {
            Take::Write(write) => Take::Write(Write {
                expect: Expect::Any,
                ..write
            }),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WINDOW: u64 = 120_000;

    fn editor(session: &str) -> Editor {
        Editor {
            session: session.into(),
            actor: format!("agent-{session}"),
            machine: "box".into(),
        }
    }

    fn oid() -> Oid {
        Oid::parse(&"a".repeat(40)).expect("an id")
    }

    fn held_by(session: &str, taken: u64, renewed: u64) -> Read {
        Read::Present {
            oid: oid(),
            lock: Ok(Lock {
                schema: LOCK_SCHEMA.into(),
                path: "art/logo.png".into(),
                session: session.into(),
                actor: format!("agent-{session}"),
                machine: "other".into(),
                taken_at: Timestamp::from_secs(taken),
                renewed_at: Timestamp::from_secs(renewed),
            }),
        }
    }

    fn decide(read: &Read, session: &str, now: u64) -> Take {
        take(
            "art/logo.png",
            read,
            &editor(session),
            Timestamp::from_secs(now),
            WINDOW,
        )
    }

    fn written(take: Take) -> Write {
        match take {
            Take::Write(write) => write,
            other => panic!("expected a write, got {other:?}"),
        }
    }

    #[test]
    fn a_free_lock_is_taken_create_only() {
        let write = written(decide(&Read::Absent, "s1", 1_000));
        assert_eq!(write.expect, Expect::Absent);
        let lock = write.lock.expect("a lock");
        assert_eq!(
            (lock.session.as_str(), lock.actor.as_str()),
            ("s1", "agent-s1")
        );
        assert_eq!(lock.taken_at, Timestamp::from_secs(1_000));
        assert_eq!(lock.renewed_at, lock.taken_at);
    }

    #[test]
    fn another_session_s_live_lock_refuses_the_edit_naming_its_holder_and_age() {
        let Take::Held(held) = decide(&held_by("s2", 900, 990), "s1", 1_000) else {
            panic!("the lock is held");
        };
        let detail = serde_json::to_value(held.detail()).expect("plain data");
        assert_eq!(
            detail,
            json!({
                "path": held.lock.path,
                "lock": true,
                "holder": {"session": "s2", "actor": "agent-s2", "machine": held.lock.machine},
                "age_s": 100,
                "idle_s": 10,
            })
        );
    }

    #[test]
    fn the_holder_renews_at_half_the_window_on_the_value_it_read() {
        assert_eq!(decide(&held_by("s1", 900, 1_000), "s1", 1_059), Take::Kept);
        let write = written(decide(&held_by("s1", 900, 1_000), "s1", 1_060));
        assert_eq!(write.expect, Expect::Is(oid()));
        let lock = write.lock.expect("a lock");
        assert_eq!(
            lock.taken_at,
            Timestamp::from_secs(900),
            "renewal keeps taken_at"
        );
        assert_eq!(lock.renewed_at, Timestamp::from_secs(1_060));
    }

    #[test]
    fn a_lock_no_step_renewed_within_the_window_is_taken_over_leased() {
        assert!(matches!(
            decide(&held_by("s2", 900, 1_000), "s1", 1_119),
            Take::Held(_)
        ));
        let write = written(decide(&held_by("s2", 900, 1_000), "s1", 1_120));
        assert_eq!(write.expect, Expect::Is(oid()));
        assert_eq!(write.lock.expect("a lock").session, "s1");
    }

    #[test]
    fn a_lock_that_names_no_session_or_cannot_be_read_goes_to_the_next_edit() {
        let unreadable = Read::Present {
            oid: oid(),
            lock: Err("no body".into()),
        };
        let nameless = held_by("", 990, 990);
        for read in [unreadable, nameless] {
            let write = written(decide(&read, "s1", 1_000));
            assert_eq!(write.expect, Expect::Is(oid()));
        }
    }

    #[test]
    fn a_step_renews_only_its_own_lock_whatever_its_age() {
        let write = renew(
            "art/logo.png",
            &held_by("s1", 900, 999),
            &editor("s1"),
            Timestamp::from_secs(1_000),
        )
        .expect("its own lock");
        assert_eq!(write.expect, Expect::Is(oid()));
        let lock = write.lock.expect("a lock");
        assert_eq!(
            (lock.taken_at, lock.renewed_at),
            (Timestamp::from_secs(900), Timestamp::from_secs(1_000))
        );
        let now = Timestamp::from_secs(1_000);
        assert_eq!(
            renew("art/logo.png", &held_by("s2", 900, 999), &editor("s1"), now),
            None
        );
        assert_eq!(
            renew("art/logo.png", &Read::Absent, &editor("s1"), now),
            None
        );
    }

    #[test]
    fn a_session_ends_only_its_own_lock_leased_on_the_value_read() {
        let ended = end("art/logo.png", &held_by("s1", 900, 990), "s1").expect("its lock");
        assert_eq!((ended.expect, ended.lock), (Expect::Is(oid()), None));
        assert_eq!(end("art/logo.png", &held_by("s2", 900, 990), "s1"), None);
        assert_eq!(end("art/logo.png", &Read::Absent, "s1"), None);
    }

    #[test]
    fn a_lock_reads_back_from_its_message() {
        let Read::Present { lock: Ok(lock), .. } = held_by("s1", 900, 990) else {
            panic!("a lock");
        };
        let message = lock.to_message();
        assert!(message.starts_with("bay: lock art/logo.png\n\n"));
        assert_eq!(Lock::from_message(&message), Ok(lock.clone()));
        assert!(Lock::from_message("bay: lock x\n\n{}").is_err());
        // Another schema's record is no lock, whatever else it holds.
        let other = Lock {
            schema: "bay.lock/2".into(),
            ..lock
        };
        let refused = Lock::from_message(&other.to_message());
        assert!(refused.is_err_and(|why| why.contains("bay.lock/2")));
    }
}
