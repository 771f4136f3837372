//! A runner's presence, `refs/bay/executor/<runner>`: what each pass says of the runner (its
//! version, machine, environments, last pass, held operation and queue depth, and its latest
//! early runs on queued entries), written at most once per heartbeat as one commit with no
//! parent, and how a reader judges it.
//!
//! The early runs are how `bay status` lists an operation's `prechecks` without reading any
//! evidence: their records lie in the runner's notes on predicted trees no reader can name
//! from the operation, and a note hung on the change instead would let a run on one base count
//! for another. A presence is no evidence: what it lists is shown, never trusted.
//!
//! A reader never compares the runner's clock with its own. A presence's age is how long ago,
//! on the reader's clock, this clone first held that presence's commit (`Action::ReadSeen`),
//! plus its age inside the presence by the writer's clock, which is none: the pass that
//! writes it is the pass it names. A clone that never recorded when it first held a presence
//! cannot age it, and takes it as stale: a wrong clock or a lost record can only make a runner
//! look older, never fresher.

use serde::{Deserialize, Serialize};

use crate::check::{CommitTree, Verdict};
use crate::detail::Detail;
use crate::id::{ChangeId, OpId};
use crate::time::Timestamp;

pub const PRESENCE_SCHEMA: &str = "bay.presence/1";

/// The most presences a status reads: the first by runner name that the fetch brought.
pub const PRESENCES_READ: usize = 50;

/// The most early runs a presence lists: as many as one pass may look ahead (`ahead` 16).
pub const EARLY_RUNS_LISTED: usize = 16;

/// One early run of a queued entry's check (`[runner] ahead`, `footprint_lanes`), as a
/// `--once` run's `detail.prechecks`, a presence and `bay status` list it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlyRun {
    pub change: ChangeId,
    pub op: OpId,
    pub check: String,
    pub environment: String,
    pub verdict: Verdict,
    /// The base the entries ahead predict (with lanes: main as it was).
    pub base: CommitTree,
    /// The candidate built on it, whose tree the run checked.
    pub candidate: CommitTree,
    /// Whether it ran beside the head, on the current main (`footprint_lanes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub beside_head: bool,
}

/// What one pass of a runner says of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Presence {
    pub schema: String,
    pub runner: String,
    /// The host the runner runs on.
    pub machine: String,
    /// The runner's bay version.
    pub bay: String,
    /// The environments it serves; `None` serves every one.
    pub environments: Option<Vec<String>>,
    /// When the pass ran, on the runner's own clock (informational only).
    pub last_pass: Timestamp,
    /// The operation the runner took on in that pass (the head it claims, or holds already),
    /// if any: it may work it long after, writing nothing meanwhile.
    pub holding: Option<OpId>,
    /// How many queue places the pass found live.
    pub queue_depth: u64,
    /// The runner's own pass interval, lease and progress deadline: what its staleness is
    /// judged by.
    pub interval_ms: u64,
    pub lease_ms: u64,
    pub progress_ms: u64,
    /// The runner's latest early runs whose records went up, oldest first, at most
    /// [`EARLY_RUNS_LISTED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prechecks: Vec<EarlyRun>,
}

impl Presence {
    /// The commit message: a subject that reads well in `git log`, then the document.
    pub fn to_message(&self) -> String {
        let body = serde_json::to_string(self).expect("a presence serializes: plain data");
        format!("bay: presence {}\n\n{body}\n", self.runner)
    }

    pub fn from_message(message: &str) -> Result<Presence, String> {
        let (_, body) = message
            .split_once("\n\n")
            .ok_or_else(|| "no body after the subject".to_string())?;
        let presence: Presence = serde_json::from_str(body.trim()).map_err(|e| e.to_string())?;
        if presence.schema != PRESENCE_SCHEMA {
            return Err(format!(
                "schema {:?}, not {PRESENCE_SCHEMA}",
                presence.schema
            ));
        }
        Ok(presence)
    }

    /// How old the presence may grow before its runner is stale: three of its own intervals
    /// or one lease, whichever is longer, and while it holds an operation the progress
    /// deadline on top, since a runner writes nothing mid-operation.
    pub fn stale_after_ms(&self) -> u64 {
        let idle = self.interval_ms.saturating_mul(3).max(self.lease_ms);
        match self.holding {
            Some(_) => idle.saturating_add(self.progress_ms),
            None => idle,
        }
    }
}

/// One presence as a reader judged it: its row, and whether its runner is fresh.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub row: RunnerRow,
    pub fresh: bool,
}

/// A runner as a reader lists it from its presence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RunnerRow {
    /// Its presence, read: what its last pass said, how long ago this clone first held it
    /// (`null` when it never recorded that), and whether that is past its staleness.
    Read {
        runner: String,
        machine: String,
        bay: String,
        environments: Option<Vec<String>>,
        /// Seconds on the runner's own clock: shown, never compared with the reader's.
        last_pass: u64,
        holding: Option<OpId>,
        queue_depth: u64,
        age_s: Option<u64>,
        stale: bool,
    },
    /// A presence that cannot be read: always stale.
    Unread {
        runner: String,
        readable: bool,
        why: String,
        stale: bool,
    },
}

/// The `no_live_runner` warning: operations wait and no runner is fresh.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoLiveRunner {
    pub warning: &'static str,
    pub waiting: u64,
    pub runners: Vec<RunnerRow>,
    pub hint: &'static str,
}

impl Detail for NoLiveRunner {}

/// Judges the presence of `runner` as read (`Err` with why it cannot be read), first held by
/// this clone at `first_seen` on the reader's clock, at the reader's `now`. A clock that went
/// back since counts as now, never as a negative age.
pub fn judge(
    runner: &str,
    read: &Result<Presence, String>,
    first_seen: Option<Timestamp>,
    now: Timestamp,
) -> Judged {
    let presence = match read {
        Ok(presence) => presence,
        Err(why) => {
            return Judged {
                row: RunnerRow::Unread {
                    runner: runner.to_owned(),
                    readable: false,
                    why: why.clone(),
                    stale: true,
                },
                fresh: false,
            };
        }
    };
    let age_ms = first_seen.map(|seen| now.millis_since(seen));
    let fresh = age_ms.is_some_and(|age| age < presence.stale_after_ms());
    Judged {
        row: RunnerRow::Read {
            runner: runner.to_owned(),
            machine: presence.machine.clone(),
            bay: presence.bay.clone(),
            environments: presence.environments.clone(),
            last_pass: presence.last_pass.secs(),
            holding: presence.holding.clone(),
            queue_depth: presence.queue_depth,
            age_s: age_ms.map(|age| age / 1000),
            stale: !fresh,
        },
        fresh,
    }
}

/// `no_live_runner` when operations wait and no runner is fresh; it refuses nothing.
pub fn no_live_runner(waiting: u64, runners: &[Judged]) -> Option<NoLiveRunner> {
    if waiting == 0 || runners.iter().any(|judged| judged.fresh) {
        return None;
    }
    Some(NoLiveRunner {
        warning: "no_live_runner",
        waiting,
        runners: runners.iter().map(|judged| judged.row.clone()).collect(),
        hint: "no runner is fresh, so queued operations wait: start one with `bay runner run`, \
               or run `bay merge --wait` to run an operation here",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn presence(holding: bool) -> Presence {
        Presence {
            schema: PRESENCE_SCHEMA.into(),
            runner: "r1".into(),
            machine: "box".into(),
            bay: "0.1.0".into(),
            environments: None,
            // Far ahead of any reader's clock below: the writer's clock never counts.
            last_pass: Timestamp::from_secs(9_000_000),
            holding: holding.then(|| crate::id::ChangeId::parse("c7k2m4qa").expect("an id").op(1)),
            queue_depth: 2,
            interval_ms: 30_000,
            lease_ms: 60_000,
            progress_ms: 600_000,
            prechecks: Vec::new(),
        }
    }

    fn fresh_at(presence: &Presence, first_seen: Option<u64>, now: u64) -> bool {
        let judged = judge(
            "r1",
            &Ok(presence.clone()),
            first_seen.map(Timestamp::from_secs),
            Timestamp::from_secs(now),
        );
        let row = serde_json::to_value(&judged.row).expect("plain data");
        assert_eq!(row["stale"], !judged.fresh);
        judged.fresh
    }

    #[test]
    fn three_intervals_when_longer_than_the_lease() {
        let idle = presence(false);
        assert_eq!(idle.stale_after_ms(), 90_000);
        assert!(fresh_at(&idle, Some(1_000), 1_089));
        assert!(!fresh_at(&idle, Some(1_000), 1_090));
    }

    #[test]
    fn the_lease_when_longer_than_three_intervals() {
        let quick = Presence {
            interval_ms: 5_000,
            ..presence(false)
        };
        assert_eq!(quick.stale_after_ms(), 60_000);
        assert!(fresh_at(&quick, Some(1_000), 1_059));
        assert!(!fresh_at(&quick, Some(1_000), 1_060));
    }

    #[test]
    fn holding_an_operation_adds_the_progress_deadline() {
        let busy = presence(true);
        assert_eq!(busy.stale_after_ms(), 690_000);
        assert!(fresh_at(&busy, Some(1_000), 1_689));
        assert!(!fresh_at(&busy, Some(1_000), 1_690));
    }

    #[test]
    fn only_the_readers_clock_counts() {
        // The writer's `last_pass` is far ahead of the reader: it changes nothing.
        let idle = presence(false);
        let behind = Presence {
            last_pass: Timestamp::from_secs(1),
            ..idle.clone()
        };
        for p in [&idle, &behind] {
            assert!(fresh_at(p, Some(1_000), 1_010));
            assert!(!fresh_at(p, Some(1_000), 2_000));
        }
        // A reader's clock that went back counts as now: age 0, never negative.
        let judged = judge(
            "r1",
            &Ok(idle.clone()),
            Some(Timestamp::from_secs(1_000)),
            Timestamp::from_secs(900),
        );
        assert!(matches!(judged.row, RunnerRow::Read { age_s: Some(0), .. }));
        // Never recorded when it was first seen: it cannot be aged, and looks stale.
        assert!(!fresh_at(&idle, None, 1_000));
    }

    #[test]
    fn the_warning_needs_waiting_operations_and_no_fresh_runner() {
        let fresh = judge(
            "r1",
            &Ok(presence(false)),
            Some(Timestamp::from_secs(10)),
            Timestamp::from_secs(20),
        );
        let stale = judge("r2", &Err("no body".into()), None, Timestamp::from_secs(20));
        assert_eq!(
            serde_json::to_value(&stale.row).expect("plain data"),
            json!({"runner": "r2", "readable": false, "why": "no body", "stale": true})
        );
        assert_eq!(
            serde_json::to_value(&fresh.row).expect("plain data"),
            json!({
                "runner": "r1",
                "machine": presence(false).machine,
                "bay": presence(false).bay,
                "environments": presence(false).environments,
                "last_pass": presence(false).last_pass.secs(),
                "holding": null,
                "queue_depth": presence(false).queue_depth,
                "age_s": 10,
                "stale": false,
            })
        );
        assert!(no_live_runner(0, &[]).is_none());
        assert!(no_live_runner(3, &[fresh.clone(), stale.clone()]).is_none());
        let warning = no_live_runner(3, std::slice::from_ref(&stale)).expect("a warning");
        let warning = warning.to_json();
        assert_eq!(warning["warning"], "no_live_runner");
        assert_eq!(warning["waiting"], 3);
        assert_eq!(warning["runners"][0]["runner"], "r2");
        assert!(
            warning["hint"]
                .as_str()
                .is_some_and(|hint| hint.contains("`bay runner run`"))
        );
        let none = no_live_runner(1, &[]).expect("no runner at all");
        assert_eq!(none.to_json()["runners"], json!([]));
    }

    #[test]
    fn a_presence_reads_back_from_its_message() {
        let p = presence(true);
        let message = p.to_message();
        assert!(message.starts_with("bay: presence r1\n\n"));
        assert_eq!(Presence::from_message(&message), Ok(p));
        assert!(Presence::from_message("bay: presence r1\n\n{}").is_err());
    }
}
