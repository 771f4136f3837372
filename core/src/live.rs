//! A machine's live summary, `refs/bay/live/<machine>`: one commit with no parent whose tree
//! holds `live.json` (`bay.live/1`), one row per live hook session of that machine, written
//! by a background `bay live push` at most once per heartbeat. Other clones fetch it into
//! their mirror with `bay status`, and `bay start` weighs its rows (`CHANGE_HELD`).
//!
//! This module says what a summary holds, when a push is due, and how a reader ages a row.
//! A reader never compares the writer's clock with its own: a row's age is how long ago, on
//! the reader's clock, this clone first held the summary's commit (`Action::ReadSeen`), plus
//! the row's age inside the summary, by the writer's clock alone (its `age_s`). A clone that
//! never recorded when it first held a summary cannot age it, and takes its rows as stale.

use serde::{Deserialize, Serialize};

use crate::adapter::Moment;
use crate::hook::session::Session;
use crate::id::ChangeId;
use crate::time::Timestamp;

pub const LIVE_SCHEMA: &str = "bay.live/1";

/// The file of a summary commit's tree that holds the summary.
pub const LIVE_FILE: &str = "live.json";

/// The most rows a summary keeps: the sessions heard from last.
pub const LIVE_ROWS: usize = 64;

/// The most bytes `live.json` holds; rows go, oldest first, until it fits.
pub const LIVE_BYTES: usize = 32_768;

/// The most summaries a reader reads: one per machine.
pub const LIVE_READ: usize = 256;

/// One machine's summary of its live sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub schema: String,
    pub machine: String,
    /// When it was written, on the writer's clock (informational only: readers age rows by
    /// `age_s`).
    pub at: Timestamp,
    pub sessions: Vec<Row>,
}

/// One live session, as a summary names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Row {
    pub session: String,
    pub actor: String,
    /// The agent product (`claude`, `codex`), when the session's events named it.
    pub agent: Option<String>,
    /// The change whose view the session works in; `None` outside a view.
    pub change: Option<ChangeId>,
    /// `working` while a turn runs, `waiting` once a turn ended (the agent waits for its
    /// user).
    pub state: String,
    /// The moment of the session's last event (`step.end`, `turn.end`...).
    pub last_event: Option<String>,
    /// Seconds since that event when the summary was written, by the writer's clock.
    pub age_s: u64,
    /// Seconds since the session's first event, by the writer's clock.
    pub session_age_s: u64,
    pub permission_mode: Option<String>,
}

impl Summary {
    /// The summary of this machine's sessions at `now`: one row per session live within
    /// `window_ms` (not ended, heard from within the takeover window), each with the change
    /// whose view it works in; the newest [`LIVE_ROWS`] that fit in [`LIVE_BYTES`].
    pub fn of(
        machine: &str,
        sessions: &[(Option<ChangeId>, Session)],
        now: Timestamp,
        window_ms: u64,
    ) -> Summary {
        let mut live: Vec<&(Option<ChangeId>, Session)> = sessions
            .iter()
            .filter(|(_, session)| session.live_within(now, window_ms))
            .collect();
        live.sort_by(|(_, a), (_, b)| {
            b.last_at
                .cmp(&a.last_at)
                .then_with(|| a.session.cmp(&b.session))
        });
        live.truncate(LIVE_ROWS);
        let rows = live
            .into_iter()
            .map(|(change, session)| Row {
                session: session.session.clone(),
                actor: session.actor.clone(),
                agent: session.agent.clone(),
                change: change.clone(),
                state: match session.last_event.as_deref() {
                    Some("turn.end") => "waiting",
                    _ => "working",
                }
                .into(),
                last_event: session.last_event.clone(),
                age_s: now.millis_since(session.last_at) / 1000,
                session_age_s: now.millis_since(session.first_at) / 1000,
                permission_mode: session.permission_mode.clone(),
            })
            .collect();
        let mut summary = Summary {
            schema: LIVE_SCHEMA.into(),
            machine: machine.to_owned(),
            at: now,
            sessions: rows,
        };
        while summary.to_json().len() > LIVE_BYTES && summary.sessions.pop().is_some() {}
        summary
    }

    /// `live.json`'s bytes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a summary serializes: plain data")
    }

    /// Reads `live.json`: `Err` says why it cannot be read.
    pub fn from_json(bytes: &[u8]) -> Result<Summary, String> {
        if bytes.len() > LIVE_BYTES {
            return Err(format!("{} bytes, over {LIVE_BYTES}", bytes.len()));
        }
        let summary: Summary = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if summary.schema != LIVE_SCHEMA {
            return Err(format!("schema {:?}, not {LIVE_SCHEMA}", summary.schema));
        }
        Ok(summary)
    }

    /// The commit message of a summary commit.
    pub fn message(&self) -> String {
        format!(
            "bay: live {}\n\n{} live session(s)\n",
            self.machine,
            self.sessions.len()
        )
    }
}

/// Whether a hook event at `moment` may start a summary push: every moment but `tool.before`,
/// which must stay fast.
pub fn pushes_at(moment: Moment) -> bool {
    moment != Moment::ToolBefore
}

/// Whether this machine's hook should start a summary push at `now`: the last push it
/// recorded is at least `heartbeat_ms` old on this machine's clock (or none was recorded),
/// or the event ends a session, since an ending frees its change for another machine. A
/// clock that went back counts as no time passed.
pub fn push_due(
    last_push: Option<Timestamp>,
    now: Timestamp,
    heartbeat_ms: u64,
    ends_session: bool,
) -> bool {
    ends_session || last_push.is_none_or(|last| now.millis_since(last) >= heartbeat_ms)
}

/// One row of another machine's summary, as this clone holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    pub machine: String,
    pub row: Row,
    /// When this clone first held the summary's commit, on its own clock.
    pub first_seen: Option<Timestamp>,
}

impl Remote {
    /// The row's age at `now` on this clone's clock: since this clone first held the
    /// summary, plus the row's age inside it. `None` when that first moment is unknown.
    pub fn age_ms(&self, now: Timestamp) -> Option<u64> {
        let seen = self.first_seen?;
        Some(
            now.millis_since(seen)
                .saturating_add(self.row.age_s.saturating_mul(1000)),
        )
    }

    /// Whether the row's session is fresh at `now`: younger than `window_ms`.
    pub fn fresh(&self, now: Timestamp, window_ms: u64) -> bool {
        self.age_ms(now).is_some_and(|age| age < window_ms)
    }
}

/// The rows of the summaries a clone holds, other than `own` machine's (its sessions come
/// from its local records): each summary read, first held at its moment.
pub fn remote_rows(own: &str, summaries: Vec<(Summary, Option<Timestamp>)>) -> Vec<Remote> {
    summaries
        .into_iter()
        .filter(|(summary, _)| summary.machine != own)
        .take(LIVE_READ)
        .flat_map(|(summary, first_seen)| {
            let machine = summary.machine;
            summary.sessions.into_iter().map(move |row| Remote {
                machine: machine.clone(),
                row,
                first_seen,
            })
        })
        .collect()
}

/// One machine's summary as this clone holds it: read, or why not, and when this clone first
/// held it on its own clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub machine: String,
    pub read: Result<Summary, String>,
    pub first_seen: Option<Timestamp>,
}

/// The fleet map `bay status --fleet` prints: `machines`, each with its age and fresh
/// sessions (or `readable: false` and why), and `sessions`, one per fresh session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FleetMap {
    pub machines: Vec<MachineRow>,
    /// More summaries were held than a reader reads ([`LIVE_READ`]).
    pub machines_truncated: bool,
    pub sessions: Vec<SessionRow>,
}

/// One machine of the fleet map.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MachineRow {
    /// This machine: its sessions from its own records, so always readable and of age 0.
    This {
        machine: String,
        this: bool,
        readable: bool,
        age_s: u64,
        sessions: usize,
    },
    /// Another machine's summary, read: its age is `null` when this clone never recorded
    /// when it first held it.
    Read {
        machine: String,
        readable: bool,
        age_s: Option<u64>,
        sessions: usize,
    },
    /// A summary this clone holds and cannot read, and why.
    Unread {
        machine: String,
        readable: bool,
        why: String,
    },
}

/// One fresh session of the fleet map: the machine it runs on, and its row with its age on
/// this clone's clock in place of the writer's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SessionRow {
    pub machine: String,
    #[serde(flatten)]
    pub row: Row,
}

impl crate::detail::Detail for FleetMap {}

impl SessionRow {
    fn of(machine: &str, row: Row, age_s: u64) -> SessionRow {
        SessionRow {
            machine: machine.to_owned(),
            row: Row { age_s, ..row },
        }
    }
}

/// The fleet map from the summaries this clone holds and this machine's own sessions (from
/// its local records, never the remote's copy of its summary), at `now`. A row one takeover
/// window old drops out.
pub fn fleet_map(
    own: &str,
    local: &[(Option<ChangeId>, Session)],
    held: Vec<Held>,
    now: Timestamp,
    window_ms: u64,
) -> FleetMap {
    let mine = Summary::of(own, local, now, window_ms);
    let mut machines = vec![MachineRow::This {
        machine: own.to_owned(),
        this: true,
        readable: true,
        age_s: 0,
        sessions: mine.sessions.len(),
    }];
    let mut sessions: Vec<SessionRow> = mine
        .sessions
        .into_iter()
        .map(|row| {
            let age_s = row.age_s;
            SessionRow::of(own, row, age_s)
        })
        .collect();
    let machines_truncated = held.len() > LIVE_READ;
    for one in held
        .into_iter()
        .filter(|one| one.machine != own)
        .take(LIVE_READ)
    {
        let summary = match one.read {
            Ok(summary) => summary,
            Err(why) => {
                machines.push(MachineRow::Unread {
                    machine: one.machine,
                    readable: false,
                    why,
                });
                continue;
            }
        };
        let rows: Vec<Remote> = summary
            .sessions
            .into_iter()
            .map(|row| Remote {
                machine: one.machine.clone(),
                row,
                first_seen: one.first_seen,
            })
            .filter(|remote| remote.fresh(now, window_ms))
            .collect();
        machines.push(MachineRow::Read {
            machine: one.machine,
            readable: true,
            age_s: one.first_seen.map(|seen| now.millis_since(seen) / 1000),
            sessions: rows.len(),
        });
        for remote in rows {
            let age_s = remote.age_ms(now).unwrap_or_default() / 1000;
            sessions.push(SessionRow::of(&remote.machine, remote.row, age_s));
        }
    }
    FleetMap {
        machines,
        machines_truncated,
        sessions,
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

    fn session(id: &str, actor: &str, last: u64) -> Session {
        let mut session = Session::begin(id, "/t", actor, Timestamp::from_secs(900));
        session.last_at = Timestamp::from_secs(last);
        session.last_event = Some("step.end".into());
        session.agent = Some("claude".into());
        session.permission_mode = Some("default".into());
        session
    }

    #[test]
    fn a_summary_holds_one_row_per_live_session_newest_first() {
        let now = Timestamp::from_secs(1_000);
        let mut ended = session("s3", "cy", 990);
        ended.ended = true;
        let mut waiting = session("s2", "bob", 995);
        waiting.last_event = Some("turn.end".into());
        let sessions = vec![
            (Some(change("c7k2m4qa")), session("s1", "ann", 970)),
            (None, waiting),
            (None, ended),
            (None, session("s4", "dee", 800)),
        ];
        let summary = Summary::of("box", &sessions, now, WINDOW);
        assert_eq!(summary.schema, LIVE_SCHEMA);
        let ids: Vec<&str> = summary
            .sessions
            .iter()
            .map(|r| r.session.as_str())
            .collect();
        assert_eq!(ids, ["s2", "s1"], "ended and quiet sessions are left out");
        let row = &summary.sessions[1];
        assert_eq!(row.change, Some(change("c7k2m4qa")));
        assert_eq!((row.age_s, row.session_age_s), (30, 100));
        assert_eq!(row.state, "working");
        assert_eq!(summary.sessions[0].state, "waiting");
        let json = summary.to_json();
        assert_eq!(Summary::from_json(json.as_bytes()), Ok(summary));
        assert!(Summary::from_json(br#"{"schema":"bay.live/2"}"#).is_err());
    }

    #[test]
    fn a_summary_keeps_the_newest_rows_that_fit() {
        let now = Timestamp::from_secs(10_000);
        let many: Vec<(Option<ChangeId>, Session)> = (0..100)
            .map(|i| (None, session(&format!("s{i:03}"), "ann", 9_900 + i)))
            .collect();
        let summary = Summary::of("box", &many, now, WINDOW);
        assert_eq!(summary.sessions.len(), LIVE_ROWS);
        assert_eq!(summary.sessions[0].session, "s099");
        let long = "x".repeat(1_000);
        let big: Vec<(Option<ChangeId>, Session)> = (0..60)
            .map(|i| (None, session(&format!("{long}{i:02}"), "ann", 9_900 + i)))
            .collect();
        let summary = Summary::of("box", &big, now, WINDOW);
        assert!(summary.to_json().len() <= LIVE_BYTES);
        assert!(summary.sessions.len() < 60 && !summary.sessions.is_empty());
        assert!(summary.sessions[0].session.ends_with("59"), "newest kept");
    }

    #[test]
    fn a_push_is_due_once_per_heartbeat_or_at_a_session_s_end() {
        let last = Some(Timestamp::from_secs(1_000));
        let heartbeat = 10_000;
        assert!(push_due(
            None,
            Timestamp::from_secs(1_000),
            heartbeat,
            false
        ));
        assert!(!push_due(
            last,
            Timestamp::from_secs(1_009),
            heartbeat,
            false
        ));
        assert!(push_due(
            last,
            Timestamp::from_secs(1_010),
            heartbeat,
            false
        ));
        assert!(push_due(last, Timestamp::from_secs(1_001), heartbeat, true));
        // A clock that went back: no time passed.
        assert!(!push_due(last, Timestamp::from_secs(900), heartbeat, false));
        assert!(!pushes_at(Moment::ToolBefore));
        assert!(pushes_at(Moment::StepEnd) && pushes_at(Moment::SessionEnd));
    }

    #[test]
    fn a_remote_row_ages_on_the_reader_s_clock_plus_its_own_age() {
        let summary = Summary {
            schema: LIVE_SCHEMA.into(),
            machine: "far".into(),
            // The writer's clock, far off from the reader's: it never counts.
            at: Timestamp::from_secs(9_000_000),
            sessions: vec![Row {
                session: "s1".into(),
                actor: "ann".into(),
                agent: None,
                change: None,
                state: "working".into(),
                last_event: None,
                age_s: 20,
                session_age_s: 20,
                permission_mode: None,
            }],
        };
        let mine = Summary {
            machine: "here".into(),
            ..summary.clone()
        };
        let rows = remote_rows(
            "here",
            vec![
                (summary.clone(), Some(Timestamp::from_secs(1_000))),
                (mine, Some(Timestamp::from_secs(1_000))),
            ],
        );
        assert_eq!(rows.len(), 1, "this machine's own summary is left out");
        let row = &rows[0];
        assert_eq!(row.age_ms(Timestamp::from_secs(1_030)), Some(50_000));
        assert!(row.fresh(Timestamp::from_secs(1_099), WINDOW));
        assert!(!row.fresh(Timestamp::from_secs(1_100), WINDOW));
        let unseen = Remote {
            first_seen: None,
            ..row.clone()
        };
        assert!(!unseen.fresh(Timestamp::from_secs(1_000), WINDOW));
    }

    #[test]
    fn the_fleet_map_joins_this_machine_s_sessions_with_fresh_remote_rows() {
        let now = Timestamp::from_secs(2_000);
        let local = vec![(Some(change("c7k2m4qa")), session("s1", "ann", 1_990))];
        let far = Summary::of(
            "far",
            &[
                (None, session("r1", "bob", 995)),
                (None, session("r2", "cy", 900)),
            ],
            Timestamp::from_secs(1_000),
            WINDOW,
        );
        let held = vec![
            Held {
                machine: "far".into(),
                read: Ok(far),
                first_seen: Some(Timestamp::from_secs(1_950)),
            },
            Held {
                machine: "odd".into(),
                read: Err("no live.json".into()),
                first_seen: None,
            },
        ];
        let map = fleet_map("here", &local, held, now, WINDOW).to_json();
        let machines = map["machines"].as_array().expect("machines");
        assert_eq!(machines.len(), 3);
        assert_eq!(machines[0]["machine"], "here");
        assert_eq!(
            (
                machines[1]["age_s"].clone(),
                machines[1]["sessions"].clone()
            ),
            (50.into(), 1.into())
        );
        assert_eq!(machines[2]["readable"], false);
        let sessions = map["sessions"].as_array().expect("sessions");
        let named: Vec<(&str, u64)> = sessions
            .iter()
            .map(|s| {
                (
                    s["session"].as_str().unwrap_or_default(),
                    s["age_s"].as_u64().unwrap_or_default(),
                )
            })
            .collect();
        // r2 was 100 s old in its summary, seen 50 s ago: 150 s, a whole window, so it drops.
        assert_eq!(named, [("s1", 10), ("r1", 55)]);
        assert_eq!(sessions[0]["change"], "c7k2m4qa");
        assert_eq!(
            map["machines"],
            serde_json::json!([
                {"machine": "here", "this": true, "readable": true, "age_s": 0, "sessions": 1},
                {"machine": "far", "readable": true, "age_s": 50, "sessions": 1},
                {"machine": "odd", "readable": false, "why": "no live.json"},
            ])
        );
        assert_eq!(map["machines_truncated"], false);
        assert_eq!(
            sessions[1],
            serde_json::json!({
                "machine": "far",
                "session": "r1",
                "actor": "bob",
                "agent": "claude",
                "change": null,
                "state": "working",
                "last_event": "step.end",
                "age_s": 55,
                "session_age_s": 100,
                "permission_mode": "default",
            })
        );
    }
}
