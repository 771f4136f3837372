//! `detail.flow` of `bay status`: the flow of work, measured from the change records and the
//! runner logs' ends a clone holds. Nothing here is stored: every figure is computed again
//! from the steps' own times (each the `at` of the step or event that recorded it, on its
//! writer's clock) and the reader's `now`, so no figure can disagree with the records.

mod figures;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use self::figures::{
    ActorLive, Flaky, Flow, FromLog, Measured, OldestLive, Percentiles, WaitingApproval,
};
use crate::detail::{Detail, Unread};
use crate::event::{BayEvent, EventKind};
use crate::id::ChangeId;
use crate::record::{ChangeRecord, OpOutcome};
use crate::report::check_runs;
use crate::time::Timestamp;

/// How many change chains, the most recently written first, `bay status` reads for the flow:
/// the cost of a status stays bounded however many changes the clone ever fetched. Older
/// chains rarely hold a live change or a merge of the last 30 days.
pub const FLOW_CHAINS: u32 = 200;

/// How many runner logs this clone holds, the most recently written first, the flow reads,
/// and how many of the newest events of each: bounded as the chains are.
pub const FLOW_LOGS: u32 = 50;
pub const FLOW_EVENTS: u32 = 500;

/// `merged` counts the merges of this window.
pub const MERGED_WINDOW_MS: u64 = 7 * 24 * 3600 * 1000;

/// `cycle_time_s`, `queue_wait_s` and `check_time_s` time the merges of this window.
pub const TIMED_WINDOW_MS: u64 = 30 * 24 * 3600 * 1000;

/// The 50th and 90th percentiles of `values` by nearest rank (the smallest value with at
/// least that share of the values at or below it), so each is one of the values: `None`
/// when there are none.
pub fn p50_p90(values: &[u64]) -> Option<(u64, u64)> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let rank = |percent: usize| {
        let n = sorted.len();
        // ceil(percent * n / 100), at least 1: the index is that rank less one.
        let rank = (percent * n).div_ceil(100).max(1);
        sorted[rank - 1]
    };
    (!sorted.is_empty()).then(|| (rank(50), rank(90)))
}

/// The percentiles of `values`, with how many there are as `of` names them; `None` when
/// nothing was measured.
fn percentiles(values: &[u64], of: fn(usize) -> Measured) -> Option<Percentiles> {
    let (p50, p90) = p50_p90(values)?;
    Some(Percentiles {
        p50,
        p90,
        of: of(values.len()),
    })
}

/// Whether a change is live: it has not merged, ended `no_effect` or been abandoned, and no
/// change the reader holds supersedes it.
fn live(record: &ChangeRecord, superseded: &BTreeSet<&ChangeId>) -> bool {
    !record.ended() && !superseded.contains(&record.change)
}

/// The live changes `actor` holds among the chains `reads` (read from what this clone holds),
/// as `flow` counts them for `by_actor`: not ended, and not superseded by another read. A chain
/// that does not fold is left out, as the flow leaves it out.
pub fn live_changes(reads: &[crate::machine::ChainRead], actor: &str) -> Vec<ChangeId> {
    let records: Vec<ChangeRecord> = reads
        .iter()
        .filter_map(|read| crate::machine::agent::fold_chain(read).ok())
        .map(|(record, _)| record)
        .collect();
    let superseded: BTreeSet<&ChangeId> = records
        .iter()
        .filter_map(|record| record.supersedes.as_ref())
        .collect();
    let mut live: Vec<ChangeId> = records
        .iter()
        .filter(|record| record.actor == actor && live(record, &superseded))
        .map(|record| record.change.clone())
        .collect();
    live.sort();
    live.dedup();
    live
}

/// Folds the ends the runner logs report into the records: a chain this clone read before
/// its operation ended (another machine merged it since) ends as its log says, at the event's
/// time, on the runner's clock like the outcome step it stands for. Only the latest operation,
/// and only while the chain has not ended it itself, so a log never rewrites what a chain says.
fn with_ends(records: &[ChangeRecord], ends: &[BayEvent]) -> Vec<ChangeRecord> {
    let mut records = records.to_vec();
    for record in &mut records {
        let Some(op) = record.ops.last_mut().filter(|op| !op.state.is_terminal()) else {
            continue;
        };
        let end = ends.iter().find_map(|event| {
            let state = event.kind.end_state()?;
            (event.op.as_ref() == Some(&op.id)).then_some((state, event))
        });
        if let Some((state, event)) = end {
            op.owner = None;
            op.state = state;
            op.outcome = Some(OpOutcome {
                state,
                reason: event.code,
                detail: FromLog {
                    from_log: event.runner.as_deref(),
                }
                .to_json(),
                by: event.runner.clone().unwrap_or_default(),
                at: event.at,
            });
        }
    }
    records
}

/// `detail.flow` from `records` (one per change; a change read twice counts once) and the
/// `ends` the runner logs report, at the reader's `now`. A merge a log reports for a change
/// whose chain is not read counts in `merged`, but is not timed: its start is unknown. `limit`
/// is `[agent] max_live_changes`, or `None` where no policy sets one.
pub fn flow(
    records: &[ChangeRecord],
    ends: &[BayEvent],
    now: Timestamp,
    limit: Option<u64>,
) -> Value {
    let records = with_ends(records, ends);
    let mut seen = BTreeSet::new();
    let records: Vec<&ChangeRecord> = records
        .iter()
        .filter(|record| seen.insert(&record.change))
        .collect();
    // Merges in the logs alone, once per change, with how long ago each was.
    let mut logged: BTreeMap<&ChangeId, u64> = BTreeMap::new();
    for event in ends.iter().filter(|event| event.kind == EventKind::Merged) {
        if let Some(change) = event
            .change
            .as_ref()
            .filter(|change| !seen.contains(change))
        {
            logged.insert(change, now.millis_since(event.at));
        }
    }
    let superseded: BTreeSet<&ChangeId> = records
        .iter()
        .filter_map(|record| record.supersedes.as_ref())
        .collect();
    let live: Vec<&ChangeRecord> = records
        .iter()
        .copied()
        .filter(|record| live(record, &superseded))
        .collect();
    let mut by_actor: BTreeMap<&str, usize> = BTreeMap::new();
    for record in &live {
        *by_actor.entry(record.actor.as_str()).or_default() += 1;
    }
    // The merges, each with when it merged (a clock ahead of the reader's counts as now).
    let merges: Vec<(&ChangeRecord, &crate::record::Operation, u64)> = records
        .iter()
        .filter_map(|record| {
            let op = record.merged()?;
            let at = op.outcome.as_ref()?.at;
            Some((*record, op, now.millis_since(at)))
        })
        .collect();
    let merged_7d = merges
        .iter()
        .map(|(_, _, ago)| ago)
        .chain(logged.values())
        .filter(|ago| **ago <= MERGED_WINDOW_MS)
        .count();
    let timed: Vec<_> = merges
        .iter()
        .filter(|(_, _, ago)| *ago <= TIMED_WINDOW_MS)
        .collect();
    let cycle: Vec<u64> = timed
        .iter()
        .filter_map(|(record, op, _)| {
            let merged_at = op.outcome.as_ref()?.at;
            Some(merged_at.millis_since(record.started_at) / 1000)
        })
        .collect();
    let waits: Vec<u64> = timed
        .iter()
        .filter_map(|(_, op, _)| Some(op.first_claim_at?.millis_since(op.requested_at) / 1000))
        .collect();
    // Every check run of a timed change, in any of its operations: an unchecked merge has none.
    let checks: Vec<u64> = timed
        .iter()
        .flat_map(|(record, _, _)| record.ops.iter())
        .flat_map(check_runs)
        .map(|(check, started)| check.at.millis_since(started) / 1000)
        .collect();
    let oldest_live = live
        .iter()
        .min_by_key(|record| (record.started_at, &record.change))
        .map(|record| OldestLive {
            change: &record.change,
            intent: &record.intent,
            actor: &record.actor,
            started_at: record.started_at.secs(),
            age_s: now.millis_since(record.started_at) / 1000,
        });
    Flow {
        live: live.len(),
        by_actor: by_actor
            .into_iter()
            .map(|(actor, live)| ActorLive { actor, live, limit })
            .collect(),
        merged: merged_7d,
        cycle_time_s: percentiles(&cycle, Measured::Merged),
        queue_wait_s: percentiles(&waits, Measured::Merged),
        check_time_s: percentiles(&checks, Measured::Runs),
        oldest_live,
        waiting_approval: waiting_approval(&records, now),
    }
    .to_json()
}

/// The changes that wait for an approval: how many, the oldest and its age.
fn waiting_approval(records: &[&ChangeRecord], now: Timestamp) -> WaitingApproval {
    let (count, oldest) = crate::approval::waiting_queue(records.iter().copied(), None, now);
    WaitingApproval {
        count,
        age_s: oldest.as_ref().map(|oldest| oldest.age_s),
        oldest,
    }
}

/// `detail.flakes`: for each check, how many of `records`' merges within the red window
/// (`window`, main's commits there, a merge hidden behind an outside merge included) merged
/// with that check flaky (`allow_flaky`: a failure, then a pass, named in `coverage_gaps`).
/// It makes a check that flakes visible before anyone quarantines it.
pub fn flakes(records: &[ChangeRecord], window: &BTreeSet<crate::git::Oid>) -> Value {
    let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
    for outcome in records
        .iter()
        .filter_map(|record| record.merged())
        .filter_map(|op| op.outcome.as_ref())
    {
        let in_window = outcome.detail["commit"]
            .as_str()
            .and_then(|commit| crate::git::Oid::parse(commit).ok())
            .is_some_and(|commit| window.contains(&commit));
        if !in_window {
            continue;
        }
        let gaps = outcome.detail["coverage_gaps"].as_array();
        for gap in gaps
            .into_iter()
            .flatten()
            .filter(|gap| gap["flaky"] == true)
        {
            let (Some(check), Some(environment)) =
                (gap["check"].as_str(), gap["environment"].as_str())
            else {
                continue;
            };
            *counts
                .entry((check.to_owned(), environment.to_owned()))
                .or_default() += 1;
        }
    }
    Value::Array(
        counts
            .into_iter()
            .map(|((check, environment), merges)| {
                Flaky {
                    check,
                    environment,
                    merges,
                }
                .to_json()
            })
            .collect(),
    )
}

/// `detail.flow` when the records could not be read: the reason, and no figure that would
/// look like an empty flow.
pub fn unread(why: &str) -> Value {
    let unread = format!("bay could not read the change records this clone holds: {why}");
    Unread { unread }.to_json()
}

#[cfg(test)]
mod tests;
