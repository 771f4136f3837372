//! A session's work record on this machine: one [`Row`] per hook event, and the small
//! [`Session`] state the next event reads (the paths it holds, its last checkpoint, the notices
//! it heard). The CLI keeps both under `<common Git dir>/bay/sessions/<session>/`; this module
//! only says what they hold.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::actor::ActorSource;
use crate::time::Timestamp;

/// How long a session that sends no event still holds the paths it wrote: the takeover window
/// bay uses for every hold, twice the default `[runner] lease_s`. `tool.before` reads no
/// config, so a clone that sets another lease still gets this window.
pub const HOLD_WINDOW_MS: u64 = 120_000;

/// What one session did so far, as the next event needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub session: String,
    /// The worktree the session works in: holds bind only sessions of the same tree.
    pub tree: String,
    pub actor: String,
    pub first_at: Timestamp,
    pub last_at: Timestamp,
    /// `session.end` came.
    pub ended: bool,
    /// Paths the session wrote, relative to its tree: the paths it holds while live.
    pub written: BTreeSet<String>,
    /// The `[locks]` paths whose locks it took, for `turn.end` and `session.end` to end.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub locks: BTreeSet<String>,
    /// When a step last renewed them all (or the first was taken), on this machine's clock:
    /// a step fetches them only once half the takeover window passed since
    /// ([`Session::renewal_due`]), so steps stay off the network otherwise.
    #[serde(default)]
    pub locks_at: Timestamp,
    /// The moment of the session's last event, for the live summary (`crate::live`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event: Option<String>,
    /// The agent product the session runs in (`claude`, `codex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The product's permission mode at the last event that named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// The last draft checkpoint, or the session's first event before any.
    pub checkpoint_at: Timestamp,
    /// The notices already said, each by its key, so each comes once.
    pub said: BTreeSet<String>,
    /// Notice bytes spent in the hour that began at `hour_at`.
    pub hour_at: Timestamp,
    pub hour_spent: u64,
}

impl Session {
    /// A session's state before its first event.
    pub fn begin(session: &str, tree: &str, actor: &str, now: Timestamp) -> Session {
        Session {
            session: session.to_owned(),
            tree: tree.to_owned(),
            actor: actor.to_owned(),
            first_at: now,
            last_at: now,
            checkpoint_at: now,
            hour_at: now,
            ..Session::default()
        }
    }

    /// Whether this session still holds what it wrote at `now`: not ended, and heard from
    /// within [`HOLD_WINDOW_MS`].
    pub fn live(&self, now: Timestamp) -> bool {
        self.live_within(now, HOLD_WINDOW_MS)
    }

    /// Whether this session is live at `now` for a window of `window_ms`: not ended, and
    /// heard from less than that long ago. `bay start` weighs it with `[runner] takeover_s`.
    pub fn live_within(&self, now: Timestamp, window_ms: u64) -> bool {
        !self.ended && now.millis_since(self.last_at) < window_ms
    }

    /// Whether a step should renew this session's locks at `now`: it holds some, and half
    /// of `takeover_ms` passed since they were last all renewed.
    pub fn renewal_due(&self, now: Timestamp, takeover_ms: u64) -> bool {
        !self.locks.is_empty() && now.millis_since(self.locks_at) >= takeover_ms / 2
    }

    /// Takes `notice` if it was never said and fits this hour's `budget` of bytes: then it
    /// is said and counted, and returned.
    pub fn notice(
        &mut self,
        key: &str,
        text: String,
        budget: u64,
        now: Timestamp,
    ) -> Option<String> {
        if now.millis_since(self.hour_at) >= 3_600_000 {
            (self.hour_at, self.hour_spent) = (now, 0);
        }
        let cost = text.len() as u64;
        if self.said.contains(key) || self.hour_spent + cost > budget {
            return None;
        }
        self.said.insert(key.to_owned());
        self.hour_spent += cost;
        Some(text)
    }
}

/// One row of the work record: one hook event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub at: Timestamp,
    /// The moment `bay hook` was called with, as given.
    pub moment: String,
    /// The payload's `hook_event_name`, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// `ok`, `blocked(<code>)` for a denial, `asked` for a stop held to ask for a save, or
    /// `noted(<code>)` for a problem that blocks nothing.
    pub verdict: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// A denied command's shape and the wrappers it hid behind; never the command's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<serde_json::Value>,
    /// The files the step wrote, relative to the tree.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub written: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    pub actor_source: ActorSource,
    /// A draft checkpoint was asked for at this event.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub checkpoint: bool,
    /// Where that checkpoint went: the change's chain, or the local ref alone and why.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub saved: Option<crate::machine::checkpoint::Saved>,
}

/// A session id as a folder name: ids are the product's (a UUID in both), but one that holds
/// anything else is kept to letters, digits, `-` and `_`, and to 100 characters.
pub fn folder_name(session: &str) -> String {
    let name: String = session
        .chars()
        .take(100)
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    if name.is_empty() {
        "unnamed".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notice_comes_once_and_within_the_hour_s_budget() {
        let now = Timestamp::from_secs(1_000);
        let mut session = Session::begin("s", "/t", "a", now);
        assert_eq!(
            session.notice("a", "x".repeat(8), 10, now),
            Some("x".repeat(8))
        );
        assert_eq!(session.notice("a", "y".into(), 10, now), None, "once");
        assert_eq!(
            session.notice("b", "yyy".into(), 10, now),
            None,
            "over budget"
        );
        let later = now.plus_secs(3_600);
        assert_eq!(
            session.notice("b", "yyy".into(), 10, later),
            Some("yyy".into())
        );
    }

    #[test]
    fn a_session_holds_until_it_ends_or_goes_quiet() {
        let now = Timestamp::from_secs(1_000);
        let mut session = Session::begin("s", "/t", "a", now);
        assert!(session.live(now.plus_millis(HOLD_WINDOW_MS - 1)));
        assert!(!session.live(now.plus_millis(HOLD_WINDOW_MS)));
        session.ended = true;
        assert!(!session.live(now));
    }

    #[test]
    fn a_session_id_becomes_a_plain_folder_name() {
        assert_eq!(folder_name("8c35adc1-aa"), "8c35adc1-aa");
        assert_eq!(folder_name("../x y"), "___x_y");
        assert_eq!(folder_name(""), "unnamed");
    }
}
