//! Which hook session of this clone holds a change, for `bay start` (`CHANGE_HELD`).
//!
//! Two live sessions with one actor name cannot share a change: a start that would pick up a
//! change whose view another live session of the caller's name works in is refused, naming
//! that session. The hook keeps each session's state on this machine; the driver reads them
//! and hands them here as [`Sessions`], and this module decides.
//!
//! A start tells its own session apart by the id the product passes it ([`SESSION_ENV`]).
//! Without one it cannot tell itself from the others in its own view, so a start run inside
//! the change's view counts as that view's session: it is the holder itself.

use crate::hook::session::Session;
use crate::id::ChangeId;
use crate::time::Timestamp;

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
}

impl Sessions {
    /// The live session, other than the caller's own, that `actor` already has in the view of
    /// `change` at `now`: not ended, and heard from within `takeover_ms`. The one heard from
    /// last when there are several.
    pub fn holder(
        &self,
        change: &ChangeId,
        actor: &str,
        now: Timestamp,
        takeover_ms: u64,
    ) -> Option<&Session> {
        // Without a session id, a start inside the view cannot tell itself from the view's
        // session: it is that session.
        if self.own.is_none() && self.here.as_ref() == Some(change) {
            return None;
        }
        self.in_views
            .iter()
            .filter(|(view, _)| view == change)
            .map(|(_, session)| session)
            .filter(|session| session.actor == actor && session.live_within(now, takeover_ms))
            .filter(|session| self.own.as_deref() != Some(session.session.as_str()))
            .max_by_key(|session| session.last_at)
    }

    /// The refusal's detail for `holder`: the session, its actor, machine and view, how long
    /// it has been quiet, and how long until it stops holding if it stays so.
    pub fn detail(
        &self,
        change: &ChangeId,
        holder: &Session,
        now: Timestamp,
        takeover_ms: u64,
    ) -> serde_json::Value {
        let idle_ms = now.millis_since(holder.last_at);
        serde_json::json!({
            "holder": {
                "session": holder.session,
                "actor": holder.actor,
                "machine": self.machine,
                "view": holder.tree,
            },
            "idle_s": idle_ms / 1000,
            "takeover_s": takeover_ms / 1000,
            "retry_after_s": takeover_ms.saturating_sub(idle_ms).div_ceil(1000),
            "why": format!(
                "another live session named {} works in the view of {change}",
                holder.actor
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }

    #[test]
    fn a_live_session_of_the_same_name_in_the_view_holds_it() {
        let now = Timestamp::from_secs(1_030);
        let held = change("c7k2m4qa");
        let all = sessions(Some("s9"), None);
        let holder = all.holder(&held, "ann", now, WINDOW).expect("held");
        assert_eq!(holder.session, "s1");
        let detail = all.detail(&held, holder, now, WINDOW);
        assert_eq!(detail["holder"]["session"], "s1");
        assert_eq!(detail["holder"]["machine"], "box");
        assert_eq!(
            (detail["idle_s"].clone(), detail["retry_after_s"].clone()),
            (30.into(), 90.into())
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
}
