//! Which hook session of this clone holds a change, for `bay start` (`CHANGE_HELD`).
//!
//! Two live sessions with one actor name cannot share a change: a start that would pick up a
//! change whose view another live session of the caller's name works in is refused, naming
//! that session. The hook keeps each session's state on this machine; the driver reads them
//! and hands them here as [`Sessions`], and this module decides.
//!
//! Sessions of other machines come from their live summaries as this clone last fetched them
//! (`crate::live`): a row of the caller's name on the change, younger than the takeover window
//! on this clone's clock, holds it as a local session does.
//!
//! A start tells its own session apart by the id the product passes it ([`SESSION_ENV`]).
//! Without one it cannot tell itself from the others in its own view, so a start run inside
//! the change's view counts as that view's session: it is the holder itself.

use serde::Serialize;

use crate::hook::session::Session;
use crate::id::ChangeId;
use crate::live::Remote;
use crate::time::Timestamp;

/// A `CHANGE_HELD` refusal's detail: the session that holds the change, how long it has been
/// quiet, and how long until it stops holding if it stays so.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeldBy {
    pub holder: SessionHolder,
    pub idle_s: u64,
    pub takeover_s: u64,
    pub retry_after_s: u64,
    pub why: String,
}

/// The session, its actor and machine, and its view (none for another machine's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionHolder {
    pub session: String,
    pub actor: String,
    pub machine: String,
    pub view: Option<String>,
}

impl crate::detail::Detail for HeldBy {}

/// The environment variable that names the session a command runs in: `bay hook
/// session.start` exports it for the session's shell commands where the product lets a hook
/// do so (Claude Code's `CLAUDE_ENV_FILE`).
pub const SESSION_ENV: &str = "BAY_SESSION";

/// The line that exports `session` as [`SESSION_ENV`] to a product's environment file, for
/// the session's later shell commands: `None` for an id a shell would read as more than a
/// word (ids are UUIDs in both products).
pub fn export_line(session: &str) -> Option<String> {
    let plain = !session.is_empty()
        && session.len() <= 200
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain.then(|| format!("export {SESSION_ENV}={session}\n"))
}

/// The hook sessions of this clone, as a start weighs them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sessions {
    /// Each session whose tree is a view of this clone, with that view's change.
    pub in_views: Vec<(ChangeId, Session)>,
    /// The session this start runs in, when the product named it ([`SESSION_ENV`]).
    pub own: Option<String>,
    /// The change whose view this start runs in, if any.
    pub here: Option<ChangeId>,
    /// This machine's name, which the refusal names.
    pub machine: String,
    /// The rows of other machines' live summaries this clone holds.
    pub remote: Vec<Remote>,
}

/// The session that holds a change: one of this clone's, or a row of another machine's live
/// summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder<'s> {
    Here(&'s Session),
    Remote(&'s Remote),
}

impl Sessions {
    /// The live session, other than the caller's own, that `actor` already has on `change`
    /// at `now`: one of this clone's in the change's view, not ended and heard from within
    /// `takeover_ms` (the one heard from last when there are several), else a fresh row of
    /// another machine's summary (the youngest).
    pub fn holder(
        &self,
        change: &ChangeId,
        actor: &str,
        now: Timestamp,
        takeover_ms: u64,
    ) -> Option<Holder<'_>> {
        // Without a session id, a start inside the view cannot tell itself from the view's
        // session: it is that session.
        if self.own.is_none() && self.here.as_ref() == Some(change) {
            return None;
        }
        let not_own = |session: &str| self.own.as_deref() != Some(session);
        let here = self
            .in_views
            .iter()
            .filter(|(view, _)| view == change)
            .map(|(_, session)| session)
            .filter(|session| session.actor == actor && session.live_within(now, takeover_ms))
            .filter(|session| not_own(&session.session))
            .max_by_key(|session| session.last_at);
        if let Some(session) = here {
            return Some(Holder::Here(session));
        }
        self.remote
            .iter()
            .filter(|remote| remote.row.change.as_ref() == Some(change))
            .filter(|remote| remote.row.actor == actor && remote.fresh(now, takeover_ms))
            .filter(|remote| not_own(&remote.row.session))
            .min_by_key(|remote| remote.age_ms(now))
            .map(Holder::Remote)
    }

    /// The refusal's detail for `holder`: the session, its actor, machine and view (none for
    /// another machine's), how long it has been quiet, and how long until it stops holding
    /// if it stays so.
    pub fn detail(
        &self,
        change: &ChangeId,
        holder: Holder<'_>,
        now: Timestamp,
        takeover_ms: u64,
    ) -> HeldBy {
        let (session, actor, machine, view, idle_ms) = match holder {
            Holder::Here(session) => (
                &session.session,
                &session.actor,
                &self.machine,
                Some(&session.tree),
                now.millis_since(session.last_at),
            ),
            Holder::Remote(remote) => (
                &remote.row.session,
                &remote.row.actor,
                &remote.machine,
                None,
                remote.age_ms(now).unwrap_or(takeover_ms),
            ),
        };
        HeldBy {
            why: format!("another live session named {actor} on {machine} works on {change}"),
            holder: SessionHolder {
                session: session.clone(),
                actor: actor.clone(),
                machine: machine.clone(),
                view: view.cloned(),
            },
            idle_s: idle_ms / 1000,
            takeover_s: takeover_ms / 1000,
            retry_after_s: takeover_ms.saturating_sub(idle_ms).div_ceil(1000),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detail::Detail;

    const WINDOW: u64 = 120_000;

    fn change(text: &str) -> ChangeId {
        ChangeId::parse(text).expect("an id")
    }

    fn sessions(own: Option<&str>, here: Option<&str>) -> Sessions {
        let at = Timestamp::from_secs(1_000);
        let view =
            |id: &str, actor: &str, tree: &str| (change(tree), Session::begin(id, tree, actor, at));
        Sessions {
            in_views: vec![view("s1", "ann", "c7k2m4qa"), view("s2", "bob", "c7k2m4qb")],
            own: own.map(str::to_owned),
            here: here.map(change),
            machine: "box".into(),
            remote: Vec::new(),
        }
    }

    #[test]
    fn a_live_session_of_the_same_name_in_the_view_holds_it() {
        let now = Timestamp::from_secs(1_030);
        let held = change("c7k2m4qa");
        let all = sessions(Some("s9"), None);
        let holder = all.holder(&held, "ann", now, WINDOW).expect("held");
        assert!(matches!(holder, Holder::Here(session) if session.session == "s1"));
        let detail = all.detail(&held, holder, now, WINDOW).to_json();
        assert_eq!(detail["holder"]["session"], "s1");
        assert_eq!(detail["holder"]["machine"], "box");
        assert_eq!(
            (detail["idle_s"].clone(), detail["retry_after_s"].clone()),
            (30.into(), 90.into())
        );
        assert_eq!(
            detail,
            serde_json::json!({
                "holder": {"session": "s1", "actor": "ann", "machine": "box",
                           "view": detail["holder"]["view"].clone()},
                "idle_s": 30,
                "takeover_s": 120,
                "retry_after_s": 90,
                "why": "another live session named ann on box works on c7k2m4qa",
            })
        );
        assert!(
            detail["holder"]["view"].is_string(),
            "a local session names its view"
        );
        // Another name, another view, or no session id at all from outside: as named.
        assert!(
            all.holder(&held, "bob", now, WINDOW).is_none(),
            "another name"
        );
        assert!(
            all.holder(&change("c7k2m4qc"), "ann", now, WINDOW)
                .is_none(),
            "no session there"
        );
        assert!(
            sessions(None, None)
                .holder(&held, "ann", now, WINDOW)
                .is_some(),
            "from the main checkout"
        );
    }

    #[test]
    fn a_session_stops_holding_when_it_ends_or_is_quiet_for_the_window() {
        let held = change("c7k2m4qa");
        let mut all = sessions(None, None);
        let quiet = Timestamp::from_secs(1_000).plus_millis(WINDOW);
        assert!(
            all.holder(&held, "ann", quiet, WINDOW).is_none(),
            "quiet a whole window"
        );
        assert!(
            all.holder(&held, "ann", quiet, WINDOW + 1).is_some(),
            "a longer window"
        );
        all.in_views[0].1.ended = true;
        let now = Timestamp::from_secs(1_001);
        assert!(all.holder(&held, "ann", now, WINDOW).is_none(), "ended");
    }

    #[test]
    fn only_a_plain_session_id_is_exported() {
        assert_eq!(
            export_line("8c35adc1-aa_1").as_deref(),
            Some("export BAY_SESSION=8c35adc1-aa_1\n")
        );
        for odd in ["", "a b", "a;rm -rf /", "$(x)", "a\nb", "'a'"] {
            assert_eq!(export_line(odd), None, "{odd:?}");
        }
    }

    #[test]
    fn the_caller_s_own_session_never_holds_against_it() {
        let now = Timestamp::from_secs(1_001);
        let held = change("c7k2m4qa");
        assert!(
            sessions(Some("s1"), None)
                .holder(&held, "ann", now, WINDOW)
                .is_none(),
            "by its id"
        );
        assert!(
            sessions(None, Some("c7k2m4qa"))
                .holder(&held, "ann", now, WINDOW)
                .is_none(),
            "inside the view, with no id to tell the sessions apart"
        );
        assert!(
            sessions(Some("s9"), Some("c7k2m4qa"))
                .holder(&held, "ann", now, WINDOW)
                .is_some(),
            "inside the view, but another session by id"
        );
    }

    fn remote(session: &str, actor: &str, tree: &str, age_s: u64) -> Remote {
        Remote {
            machine: "far".into(),
            row: crate::live::Row {
                session: session.into(),
                actor: actor.into(),
                agent: Some("claude".into()),
                change: Some(change(tree)),
                state: "working".into(),
                last_event: Some("step.end".into()),
                age_s,
                session_age_s: age_s,
                permission_mode: None,
            },
            // When this clone first held the summary, on its own clock.
            first_seen: Some(Timestamp::from_secs(2_000)),
        }
    }

    #[test]
    fn a_fresh_row_of_another_machine_holds_the_change() {
        let held = change("c7k2m4qc");
        let mut all = sessions(Some("s9"), None);
        all.remote = vec![
            remote("r1", "ann", "c7k2m4qc", 20),
            remote("r2", "bob", "c7k2m4qc", 0),
        ];
        // Seen 30 s ago on this clone's clock, 20 s old inside the summary: 50 s quiet.
        let now = Timestamp::from_secs(2_030);
        let holder = all.holder(&held, "ann", now, WINDOW).expect("held");
        assert!(matches!(holder, Holder::Remote(r) if r.row.session == "r1"));
        let detail = all.detail(&held, holder, now, WINDOW).to_json();
        assert_eq!(detail["holder"]["machine"], "far");
        assert_eq!(detail["holder"]["session"], "r1");
        assert_eq!(detail["holder"]["view"], serde_json::Value::Null);
        assert_eq!(
            (detail["idle_s"].clone(), detail["retry_after_s"].clone()),
            (50.into(), 70.into())
        );
        assert!(
            all.holder(&held, "cy", now, WINDOW).is_none(),
            "another name"
        );
        // Stale: a whole window old, on this clone's clock plus the row's own age.
        let stale = Timestamp::from_secs(2_100);
        assert!(all.holder(&held, "ann", stale, WINDOW).is_none(), "stale");
        // Never recorded when this clone first held it: it cannot be aged, so it holds
        // nothing.
        all.remote[0].first_seen = None;
        assert!(all.holder(&held, "ann", now, WINDOW).is_none(), "unaged");
        // The caller's own session, by id, never holds against it.
        all.remote[0].first_seen = Some(Timestamp::from_secs(2_000));
        all.own = Some("r1".into());
        assert!(all.holder(&held, "ann", now, WINDOW).is_none(), "its own");
    }
}
