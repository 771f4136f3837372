//! Judging what a check printed.
//!
//! A check is someone else's program, so its output is read as hostile: any bytes at all give
//! a verdict and never a panic. The rules lean one way: whenever bay cannot be sure the
//! candidate passed, the verdict is something other than `pass`. An exit code alone is never
//! evidence, a result about another commit or tree is thrown away whole, and a check that
//! collected too little, finished too little, or errored cannot vouch for a pass.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CheckRequest, Verdict, quote};

/// The `schema` a check's result must carry.
pub const RESULT_SCHEMA: &str = "bay.check.result/1";

/// The most stdout bay reads as a result. A result is a summary, not a log; anything larger
/// is a check writing its log to the wrong stream, and bay will not parse it.
pub const MAX_STDOUT_BYTES: usize = 4 * 1024 * 1024;

/// The longest unit `reason` bay accepts. bay writes reasons into Git and never cuts one (a
/// cut could drop the line that matters or keep a secret's head), so a longer reason makes the
/// run `infra_failure` instead.
pub const MAX_REASON_BYTES: usize = 2048;

/// What a driver observed when it ran one check.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CheckExit {
    /// Everything the check printed on stdout. stderr is for people, and bay never judges it.
    pub stdout: Vec<u8>,
    /// The exit code, or `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    /// The driver stopped the check at its timeout.
    pub timed_out: bool,
    /// How long the check ran, by the driver's clock.
    pub millis: u64,
    /// Set when the driver could not run the check at all (it could not spawn it, an `env`
    /// variable was missing, there was no sandbox, the copy failed); the text says which.
    pub infra: Option<String>,
    /// The machine's directories (`bay.checkReadPath`) the sandbox let the check read, each
    /// bound read-only. Empty without a sandbox, where nothing is read-only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_read: Vec<String>,
    /// The `adapter` files the check ran with, each `(path, blob id)` as the driver laid them
    /// out from the commit the policy names: what they held enters the check's definition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapter: Vec<(String, String)>,
    /// Where the driver kept the end of the check's stderr for people, relative to the common
    /// Git directory of the machine that ran it (`bay/logs/...`); bay never reads it back.
    /// `None` when the check never ran, or the driver keeps no log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_log: Option<String>,
}

/// The outcome of judging one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Judgement {
    /// The check said no worker here can run it. bay keeps no record and records no attempt;
    /// the change waits for a machine that can.
    Unavailable { reason: String },
    /// A verdict bay records as evidence.
    Judged(JudgedCheck),
}

impl Judgement {
    /// The judged check, unless the check answered `unavailable`.
    pub fn judged(&self) -> Option<&JudgedCheck> {
        match self {
            Judgement::Judged(judged) => Some(judged),
            Judgement::Unavailable { .. } => None,
        }
    }

    /// The verdict, unless the check answered `unavailable`.
    pub fn verdict(&self) -> Option<Verdict> {
        self.judged().map(|judged| judged.verdict)
    }
}

/// A verdict on one run, with what it rests on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgedCheck {
    pub verdict: Verdict,
    /// One plain sentence saying why, for the author and the record.
    pub why: String,
    /// How many distinct units (by id) the result reported; zero when no result could be read.
    /// One id listed five times is one unit, so it never meets an `expected_minimum` of five.
    pub units: u64,
    /// The result's `plan.selected`, when the result was well formed.
    pub selected: Option<u64>,
    /// The result's `plan.completed`, when the result was well formed.
    pub completed: Option<u64>,
    /// Every unit that did not pass, in the order the check reported them.
    pub failed: Vec<UnitReason>,
}

/// One unit that did not pass, and the check's reason when it gave one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnitReason {
    pub id: String,
    pub verdict: Verdict,
    /// The check's reason. Left out when the check gave none, or when it was over
    /// [`MAX_REASON_BYTES`]: bay neither cuts such a reason nor writes it whole into Git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One unit as the result reported it.
struct Unit {
    id: String,
    verdict: Verdict,
    reason: Option<String>,
}

/// A result that passed every structural rule.
struct Report {
    selected: u64,
    completed: u64,
    units: Vec<Unit>,
}

/// Judges one run of the check that `request` asked for.
///
/// `expected_minimum` is the least units the check must report; with zero, a check that
/// selected nothing passes. The rules apply in a fixed order, and the first that speaks
/// decides.
pub fn judge(request: &CheckRequest, expected_minimum: u64, exit: &CheckExit) -> Judgement {
    if let Some(infra) = &exit.infra {
        return bare(
            Verdict::InfraFailure,
            format!("The driver could not run the check: {}.", one_line(infra)),
        );
    }
    if exit.timed_out {
        return bare(
            Verdict::Unknown,
            format!(
                "The check ran past its {} s timeout, so its result is not evidence.",
                request.timeout_s
            ),
        );
    }
    if exit.stdout.len() > MAX_STDOUT_BYTES {
        return bare(
            Verdict::Unknown,
            format!(
                "The check printed {} bytes on stdout, over the {MAX_STDOUT_BYTES}-byte limit \
                 for a result.",
                exit.stdout.len()
            ),
        );
    }
    let doc = match serde_json::from_slice::<Value>(&exit.stdout) {
        Ok(Value::Object(doc)) => doc,
        _ => return bare(Verdict::Unknown, no_result(exit)),
    };
    match doc.get("schema") {
        Some(Value::String(schema)) if schema == RESULT_SCHEMA => {}
        Some(Value::String(schema)) => {
            return bare(
                Verdict::Unknown,
                format!(
                    "The check printed a {} result, and bay reads only {RESULT_SCHEMA}.",
                    quote(schema)
                ),
            );
        }
        _ => return bare(Verdict::Unknown, no_result(exit)),
    }
    match doc.get("unavailable") {
        None | Some(Value::Null) => {}
        Some(Value::String(reason)) => {
            if doc.contains_key("checks") {
                return bare(
                    Verdict::Unknown,
                    "The check answered unavailable and also reported units, so it said two \
                     things at once."
                        .to_owned(),
                );
            }
            return Judgement::Unavailable {
                reason: reason.clone(),
            };
        }
        Some(_) => {
            return bare(
                Verdict::Unknown,
                "The result's unavailable is not a string.".to_owned(),
            );
        }
    }
    if let Err(why) = exercised_is_candidate(&doc, request) {
        return bare(Verdict::Unknown, why);
    }
    let report = match read_report(&doc) {
        Ok(report) => report,
        Err(why) => return bare(Verdict::Unknown, why),
    };
    Judgement::Judged(weigh(report, expected_minimum, exit))
}

/// Applies the rules that read the units and counts of a well-formed result.
fn weigh(report: Report, expected_minimum: u64, exit: &CheckExit) -> JudgedCheck {
    let Report {
        selected,
        completed,
        units,
    } = report;
    let count = distinct(units.iter().map(|unit| unit.id.as_str()));
    let oversized = units
        .iter()
        .find(|unit| {
            unit.reason
                .as_ref()
                .is_some_and(|r| r.len() > MAX_REASON_BYTES)
        })
        .map(|unit| (quote(&unit.id), unit.reason.as_ref().map_or(0, String::len)));
    let failed: Vec<UnitReason> = units
        .into_iter()
        .filter(|unit| unit.verdict != Verdict::Pass)
        .map(|unit| UnitReason {
            id: unit.id,
            verdict: unit.verdict,
            reason: unit.reason.filter(|r| r.len() <= MAX_REASON_BYTES),
        })
        .collect();
    let judged = |verdict, why| JudgedCheck {
        verdict,
        why,
        units: count,
        selected: Some(selected),
        completed: Some(completed),
        failed: failed.clone(),
    };

    if let Some((id, len)) = oversized {
        return judged(
            Verdict::InfraFailure,
            format!(
                "Unit {id} gave a {len}-byte reason, over the {MAX_REASON_BYTES}-byte limit, \
                 and bay never cuts one."
            ),
        );
    }
    for (verdict, what) in [
        (Verdict::ProductFailure, "failed on the candidate"),
        (
            Verdict::InfraFailure,
            "failed for reasons of the machine or a tool",
        ),
        (Verdict::Unknown, "gave no answer"),
    ] {
        let hits: Vec<&UnitReason> = failed.iter().filter(|u| u.verdict == verdict).collect();
        if let Some(first) = hits.first() {
            return judged(
                verdict,
                format!(
                    "{} of {count} units {what}, the first being {}.",
                    distinct(hits.iter().map(|unit| unit.id.as_str())),
                    quote(&first.id)
                ),
            );
        }
    }
    if completed < selected {
        return judged(
            Verdict::Unknown,
            format!("The check completed {completed} of the {selected} units it selected."),
        );
    }
    if count < expected_minimum {
        return judged(
            Verdict::Unknown,
            format!(
                "The check reported {count} units, fewer than its expected minimum of \
                 {expected_minimum}."
            ),
        );
    }
    match exit.exit_code {
        Some(0) => {}
        Some(code) => {
            return judged(
                Verdict::Unknown,
                format!(
                    "The check exited with code {code} although its result says pass, and a \
                     check that errors cannot vouch for a pass."
                ),
            );
        }
        None => {
            return judged(
                Verdict::Unknown,
                "A signal ended the check although its result says pass, and a check that \
                 errors cannot vouch for a pass."
                    .to_owned(),
            );
        }
    }
    if count == 0 {
        judged(
            Verdict::Pass,
            "The check selected no units, which an expected minimum of 0 allows as a coverage \
             gap."
                .to_owned(),
        )
    } else {
        judged(
            Verdict::Pass,
            format!("All {count} units passed on the candidate."),
        )
    }
}

/// How many distinct ids `ids` holds: a unit is its id, however often the result lists it.
fn distinct<'a>(ids: impl Iterator<Item = &'a str>) -> u64 {
    u64::try_from(ids.collect::<BTreeSet<&str>>().len()).unwrap_or(u64::MAX)
}

/// A judgement that rests on no units, because no result could be read.
fn bare(verdict: Verdict, why: String) -> Judgement {
    Judgement::Judged(JudgedCheck {
        verdict,
        why,
        units: 0,
        selected: None,
        completed: None,
        failed: Vec::new(),
    })
}

/// The driver's own text on one line and without a closing period, to fit inside a `why`.
fn one_line(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('.')
        .to_owned()
}

fn no_result(exit: &CheckExit) -> String {
    let ended = match exit.exit_code {
        Some(code) => format!("exited with code {code}"),
        None => "was ended by a signal".to_owned(),
    };
    format!(
        "The check {ended} but printed no valid {RESULT_SCHEMA} document, and an exit code \
         alone is never evidence."
    )
}

/// Checks that the result is about exactly the candidate bay asked about.
fn exercised_is_candidate(doc: &Map<String, Value>, request: &CheckRequest) -> Result<(), String> {
    let Some(Value::Object(exercised)) = doc.get("exercised") else {
        return Err("The result does not name the commit and tree it ran on (exercised).".into());
    };
    let commit = exercised.get("commit").and_then(Value::as_str);
    let tree = exercised.get("tree").and_then(Value::as_str);
    let candidate = &request.candidate;
    if commit == Some(candidate.commit.as_str()) && tree == Some(candidate.tree.as_str()) {
        return Ok(());
    }
    let show = |text: Option<&str>| text.map_or_else(|| "none".to_owned(), quote);
    Err(format!(
        "The result is for commit {} and tree {}, not the candidate's commit {} and tree {}, so \
         bay rejects it whole.",
        show(commit),
        show(tree),
        candidate.commit.short(),
        candidate.tree.short(),
    ))
}

/// Reads `plan` and `checks`, refusing anything missing or of the wrong type.
fn read_report(doc: &Map<String, Value>) -> Result<Report, String> {
    let Some(Value::Object(plan)) = doc.get("plan") else {
        return Err("The result has no plan object.".into());
    };
    let count = |key: &str| {
        plan.get(key).and_then(Value::as_u64).ok_or_else(|| {
            format!("The result's plan.{key} is missing or not a non-negative integer.")
        })
    };
    let selected = count("selected")?;
    let completed = count("completed")?;
    let Some(Value::Array(list)) = doc.get("checks") else {
        return Err("The result has no checks list.".into());
    };
    let units = list
        .iter()
        .enumerate()
        .map(|(index, value)| read_unit(index, value))
        .collect::<Result<Vec<Unit>, String>>()?;
    Ok(Report {
        selected,
        completed,
        units,
    })
}

fn read_unit(index: usize, value: &Value) -> Result<Unit, String> {
    let bad = |what: &str| format!("Unit {index} of the result {what}.");
    let Value::Object(unit) = value else {
        return Err(bad("is not an object"));
    };
    let Some(Value::String(id)) = unit.get("id") else {
        return Err(bad("has no string id"));
    };
    let verdict = match unit.get("verdict") {
        Some(Value::String(word)) => Verdict::parse(word),
        _ => None,
    }
    .ok_or_else(|| bad("has no verdict among pass, product_failure, infra_failure and unknown"))?;
    let reason = match unit.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(_) => return Err(bad("has a reason that is not a string")),
    };
    Ok(Unit {
        id: id.clone(),
        verdict,
        reason,
    })
}

#[cfg(test)]
mod tests;
