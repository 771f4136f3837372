//! The plain sentence: every result, said once for a person who has never used Git.
//!
//! `say` builds the sentence from the decision, the reason, the state, the change and a few
//! named fields of `detail`, and from nothing else, so it can never state a fact the document
//! does not hold. It is one sentence, ending in one full stop, on one line: what happened, then
//! the next step. It uses none of the words in [`crate::words::WORDS`]; a name it quotes from
//! `detail` (a path, a check id, a change id) is shown exactly as it is, in parentheses,
//! because the person may need to find that very file or check. A command to run next is
//! quoted in backticks, as Cargo quotes its hints (`` `bay start c7k2m4qa` ``), and is always
//! one this bay has (`cli/tests/named_commands.rs` holds it so).
//!
//! A `failed` result without a reason starts "Nothing changed:" and then gives `detail.why`.
//! That text is bay's own, but it may mention a file the way Git names it: a file at a saved
//! version (`a1b2c3d:.bay/config.toml`) reads as its path alone, and a path holding a listed
//! word, which in a fault is nearly always one of bay's own records (`refs/bay/changes/...`),
//! reads "bay's records". A `why` that still holds a listed word, or more than one sentence, is
//! left out of the sentence for a fixed fallback; `detail.why` keeps it whole.

use serde_json::{Map, Value};

use crate::id::ChangeId;
use crate::reason::ReasonCode;
use crate::result::{Decision, OpState};
use crate::words::forbidden_word;

/// How many names a sentence quotes before it only counts the rest: one sentence has to stay
/// readable, and `detail` keeps the full list.
const MAX_NAMES: usize = 3;

/// The plain sentence for a result about `change`, when it names one.
pub fn say(
    decision: Decision,
    reason: Option<ReasonCode>,
    state: Option<OpState>,
    change: Option<&ChangeId>,
    detail: &Map<String, Value>,
) -> String {
    if let Some(line) = doctor(decision, detail) {
        return line;
    }
    match reason {
        Some(code) => say_reason(code, change, detail),
        None => match decision {
            Decision::Failed => say_fault(detail),
            Decision::Merged => merged(detail),
            Decision::Blocked => stopped(change),
            Decision::Queued | Decision::Ok => say_state(decision, state, change, detail),
        },
    }
}

/// A result with a reason: the code decides the words, whatever the decision.
fn say_reason(code: ReasonCode, change: Option<&ChangeId>, detail: &Map<String, Value>) -> String {
    match code {
        ReasonCode::MergeConflict if detail.get("markers_remain") == Some(&Value::Bool(true)) => {
            format!(
                "The conflict markers bay left in this change are still there{}; settle those \
                 lines in its folder and remove the markers, then submit it again.",
                quoted(names(detail, "paths"))
            )
        }
        ReasonCode::MergeConflict if detail.get("carried_over") == Some(&Value::Bool(true)) => {
            format!(
                "A draft of this change saved elsewhere changed the same lines as this \
                 folder{}; settle them in {}, where bay left both sides between conflict \
                 markers, then submit it again.",
                quoted(names(detail, "conflicts")),
                names(detail, "view")
                    .pop()
                    .unwrap_or_else(|| "the change's folder".to_owned())
            )
        }
        ReasonCode::MergeConflict => format!(
            "Main changed the same lines as this change{}; run `bay start {}` to update it, \
             settle those lines in its folder, then submit it again.",
            quoted(first_names(detail, &["paths", "conflicts"])),
            change_id(change)
        ),
        ReasonCode::MainMoved => "Main changed while this change was being added, so bay is \
                                  trying again on its own and there is nothing to do for now."
            .to_owned(),
        ReasonCode::MergeRetryExhausted => "Adding this change to main failed several times \
                                            for reasons outside the change; tell the person in \
                                            charge, then submit it again once the cause is \
                                            fixed."
            .to_owned(),
        ReasonCode::MergeOutcomeUnknown => "It is not yet known whether this change reached \
                                            main, because main could not be read afterwards; \
                                            wait while bay looks again, and do not count it as \
                                            added yet."
            .to_owned(),
        ReasonCode::Queued => format!(
            "This change is waiting its turn to be checked and added to main{}; keep working, \
             as nothing else is needed.",
            place_in_line(detail)
        ),
        ReasonCode::PolicyMissing => "Nothing can be added to main yet, because main has no \
                                      list of required checks (.bay/policy.toml); tell the \
                                      person in charge, and set one up only if they ask."
            .to_owned(),
        ReasonCode::PolicyInvalid => "The list of required checks (.bay/policy.toml) breaks one \
                                      of its rules, so this change cannot be added; tell the \
                                      person in charge what the details say."
            .to_owned(),
        ReasonCode::CheckFailed => format!(
            "A required check did not pass{}; {}fix the change in its folder, then submit it \
             again.",
            failed_units(detail),
            read_log(detail)
        ),
        ReasonCode::CheckUnknown => format!(
            "A check gave no answer{}, so this change does not count as passing; {}wait for it \
             to run again, or fix the change if the check cannot answer it.",
            quoted(check_names(detail)),
            read_log(detail)
        ),
        ReasonCode::CheckFlaky => format!(
            "A check gave two different answers for the same files{}, so this change waits; \
             tell the person in charge, and submit it again once the check is fixed.",
            quoted(check_names(detail))
        ),
        ReasonCode::CheckUnavailable => format!(
            "No machine can run the checks for this change right now{}; it waits, and bay tries \
             again once a machine can.",
            quoted(names(detail, "environment"))
        ),
        ReasonCode::ChangeAlreadyMerged => "This change is already part of main in another \
                                            form, so do not send it again; start a new change \
                                            for any more edits."
            .to_owned(),
        ReasonCode::ChangeSuperseded => format!(
            "Another change has taken over this work{}; go on in that one, or start again once \
             it is finished or dropped.",
            quoted(names(detail, "superseded_by"))
        ),
        ReasonCode::AbandonRefused => "Only whoever is working on this change can give it up; \
                                       ask them, or leave it as it is."
            .to_owned(),
        ReasonCode::ConfigMissing => "This project is not set up for bay yet \
                                      (.bay/config.toml); tell the person in charge, and set it \
                                      up only if they ask."
            .to_owned(),
        ReasonCode::ToolBelowFloor => format!(
            "A program on this machine is too old{}; update it, then run the command again.",
            tool_and_floor(detail)
        ),
        ReasonCode::WorkspaceIncomplete => format!(
            "Setting up the folder for this change stopped partway; run `bay start {}` to finish \
             it, then carry on.",
            change_id(change)
        ),
        ReasonCode::SandboxAbsent => format!(
            "This machine runs checks but has no closed-off place to run them in{}; ask the \
             person in charge to install one.",
            quoted(names(detail, "sandbox"))
        ),
        ReasonCode::CheckEnvUnset => format!(
            "A check needs settings that this machine does not have{}; ask the person in \
             charge to set them for the runner, then start the runner again.",
            quoted(first_names(detail, &["variables", "variable", "env"]))
        ),
        ReasonCode::QueueDeadlineExceeded => "The checks for this change took too long three \
                                              times, so it stopped waiting its turn; make the \
                                              change smaller or split it, then submit it again."
            .to_owned(),
        ReasonCode::DiskLow => format!(
            "This machine is short of disk space{}, so nothing was made; free some space, or \
             ask the person in charge to lower the floor, then run the command again.",
            space_and_floor(detail)
        ),
        ReasonCode::ChangeTooLarge => too_large(detail),
        ReasonCode::MainHeld => format!(
            "Main takes only fixes and undos for now{}; this change waits its turn and goes in \
             once that ends, so there is nothing to do.",
            quoted(hold_reason(detail))
        ),
        ReasonCode::DependencyPending => format!(
            "This change waits for the changes it needs first{}; it goes in after them, so \
             there is nothing to do.",
            quoted(names(detail, "pending"))
        ),
        ReasonCode::DependencyAbandoned => format!(
            "A change this one needs first was dropped{}, so this one can never go in as it \
             is; give it up and start again without it, or bring that change back.",
            quoted(names(detail, "ended"))
        ),
        ReasonCode::ChangeNotMerged if detail.contains_key("merge") => format!(
            "The change{} was added to main once, but main was set back to before it, so it is \
             not part of main now; to bring that work back, start it again as a new change.",
            quoted(names(detail, "target"))
        ),
        ReasonCode::ChangeNotMerged => format!(
            "The change this names{} is not part of main, so there is nothing to undo or fix \
             yet; wait until it is added, then run the command again.",
            quoted(names(detail, "target"))
        ),
        ReasonCode::PathsUndeclared => format!(
            "The work touches files this change does not list{}, so nothing was made; list \
             them too, then run the command again.",
            quoted(names(detail, "uncovered"))
        ),
        ReasonCode::MainRed => format!(
            "A check that runs after changes go in found a problem on main, in files this change touches{}; \
             wait for that to be fixed and send this change again, or fix it yourself.",
            quoted(names(detail, "owners"))
        ),
        ReasonCode::ShellDenied => "That command could throw away work or change main \
                                    around bay, so it was stopped; do not run it again, and \
                                    ask the person in charge if the work truly needs it."
            .to_owned(),
        ReasonCode::HookInputInvalid => "The hook could not tell what the agent was about \
                                         to do, so it stopped it; reinstall the hooks with \
                                         `bay install`, or update bay."
            .to_owned(),
        ReasonCode::PathHeld => "Another session working in this same folder is editing that \
                                 file; wait until it stops, or edit other files."
            .to_owned(),
        ReasonCode::ToolAbsent => format!(
            "A program bay needs is not installed on this machine{}; install it, then run \
             `bay doctor` again.",
            quoted(names(detail, "tool"))
        ),
        ReasonCode::RemoteUnreachable => "The shared copy of the project did not answer this \
                                          machine; check the network and the access to it, \
                                          then run `bay doctor` again."
            .to_owned(),
        ReasonCode::HooksMissing => "The agents here do not run the hooks of bay; do what the \
                                     details say to turn them on, then run `bay doctor` again."
            .to_owned(),
        ReasonCode::SkillMismatch => format!(
            "The instructions bay gives the agent are missing or from another version{}; run \
             `bay install`, then `bay doctor` again.",
            quoted(names(detail, "mismatched"))
        ),
        ReasonCode::ActorUnnamed => "The project asks every agent to give its name, and this \
                                     one came from a default; set BAY_ACTOR to the agent's \
                                     name, then run the command again."
            .to_owned(),
        ReasonCode::WipLimit if detail.contains_key("review") => format!(
            "As many changes as the project allows already wait for a person to say yes{}; \
             wait until one of them is approved or ended, then submit this one again.",
            quoted(
                detail
                    .get("review")
                    .and_then(|review| review.get("oldest"))
                    .and_then(|oldest| oldest.get("change"))
                    .and_then(Value::as_str)
                    .map(|change| vec![change.to_owned()])
                    .unwrap_or_default()
            )
        ),
        ReasonCode::WipLimit => format!(
            "This agent already has as many unfinished changes as the project allows{}; \
             finish or give up one of them, then run the command again.",
            quoted(names(detail, "live_changes"))
        ),
        ReasonCode::ChangeHeld => "Another session of this agent is still working on this \
                                   change on this machine; wait until it ends, or work on \
                                   another change."
            .to_owned(),
        ReasonCode::RegistryUnreadable => format!(
            "The list of keys allowed to sign breaks one of its rules{}, so nothing signed can \
             be trusted; tell the person who keeps the registry key what the details say.",
            quoted(names(detail, "file"))
        ),
        ReasonCode::RegistryChanged => "The key that signed this change was withdrawn after it \
                                        signed, so another runner signs it again; nothing to \
                                        do but wait."
            .to_owned(),
        ReasonCode::RunnerKeyMissing => "This runner cannot sign what it writes: its executor \
                                         or producer key is not set or not enrolled in the key \
                                         registry, so it claimed nothing; tell the user to set \
                                         and enrol both keys."
            .to_owned(),
        ReasonCode::KeyExposed => format!(
            "A signing key{} is readable by the account agent sessions run as; tell the user \
             to move it onto hardware or out of that account.",
            quoted(names(detail, "key"))
        ),
        ReasonCode::ActorUnproven => format!(
            "The project asks for proof of which agent signs, and the agent key here cannot \
             give it{}; tell the user to use a hardware agent key, or one account per agent.",
            quoted(names(detail, "actors"))
        ),
        ReasonCode::ApprovalPending => format!(
            "Nothing failed, and this change now waits for a person to say yes{}; tell the \
             user who can approve it, and then {}.",
            quoted(approvers(detail)),
            match detail.get("lands_by").and_then(Value::as_str) {
                Some("author") => "run `bay merge --wait` again once they have",
                _ => "bay adds it to main by itself",
            }
        ),
    }
}

/// The approvers an `APPROVAL_PENDING` wait names, each once.
fn approvers(detail: &Map<String, Value>) -> Vec<String> {
    let mut names: Vec<String> = detail
        .get("approval")
        .and_then(|a| a.get("checks"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|check| check.get("approvers").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// An `ok` or `queued` result without a reason: say where the operation is.
fn say_state(
    decision: Decision,
    state: Option<OpState>,
    change: Option<&ChangeId>,
    detail: &Map<String, Value>,
) -> String {
    match state {
        None | Some(OpState::Submitted) if decision == Decision::Queued => format!(
            "Saved; bay checks this change and adds it to main next{}.",
            unless_no_runner(detail, ", so you can keep working")
        ),
        None if detail.contains_key("view") => match names(detail, "conflicts") {
            conflicts if conflicts.is_empty() => format!(
                "The change is ready; edit its files in the folder{}, then submit it from there.",
                quoted(names(detail, "view"))
            ),
            conflicts => format!(
                "The change now starts from main's newest files, but main changed the same \
                 lines{}; settle them in the folder{} and remove the conflict markers bay left \
                 there, then submit it again.",
                quoted(conflicts),
                quoted(names(detail, "view"))
            ),
        },
        // A change asked nothing of a runner yet (`report::status` of a record with no
        // operation).
        None if detail.get("open") == Some(&Value::Bool(true)) => format!(
            "Change {} is open and nothing of it is submitted yet; edit its files in its \
             folder, then submit it from there.",
            change_id(change)
        ),
        None if detail.get("open") == Some(&Value::Bool(false)) => format!(
            "Change {} ended before anything of it was submitted; there is nothing to do.",
            change_id(change)
        ),
        None if detail.get("undo").and_then(Value::as_str) == Some("nothing to undo") => {
            format!(
                "The edits of the change{} are already gone from main, so there is nothing to \
                 undo.",
                quoted(names(detail, "reverts"))
            )
        }
        None if detail.contains_key("lineage") => lineage(detail),
        None if detail.contains_key("waived") => format!(
            "Your waiver{} is signed and sent; it is no pass, and the merge will name the check \
             as a gap. {}",
            quoted(names(detail, "waived")),
            match detail.get("lands_by").and_then(Value::as_str) {
                Some("here") =>
                    "Run `bay merge --wait` in the change's view in this clone to \
                                 merge that same candidate.",
                _ => "The change's author runs `bay merge --wait` to merge that same candidate.",
            }
        ),
        None if detail.contains_key("lands_by") => match detail
            .get("lands_by")
            .and_then(Value::as_str)
        {
            Some("author_repairs") => "Your no is signed and sent, so this change is stopped; \
                                       its author repairs it and submits it again."
                .to_owned(),
            Some("author") => "Your yes is signed and sent; the change's author adds it to main \
                               with `bay merge --wait`, as no runner picks it up."
                .to_owned(),
            Some("here") => "Your yes is signed and sent; no runner picks it up, so run `bay \
                             merge --wait` in the change's view in this clone to add it to main."
                .to_owned(),
            _ => "Your yes is signed and sent; the runner's next pass adds this change to main, \
                  with nothing more to do."
                .to_owned(),
        },
        None if detail.contains_key("installed") => installed(detail),
        None if detail.contains_key("waiting") => waiting(detail),
        None if detail.get("abandoned") == Some(&Value::Bool(true)) => {
            "This change is given up; another agent may take it over, or you can start it again \
             later."
                .to_owned()
        }
        None if detail.contains_key("queue_depth") => queue(detail),
        None if detail.contains_key("enrolled") => format!(
            "The key is enrolled{}, so what it signs counts from now on.",
            quoted(registry_entry(detail, "enrolled"))
        ),
        None if detail.contains_key("removed") => format!(
            "Every key of that name is taken out of the registry{}, so nothing it signs from \
             now on counts.",
            quoted(registry_entry(detail, "removed"))
        ),
        None if detail.contains_key("cases") => format!(
            "The check met bay's contract in all {} cases; name it in .bay/policy.toml on main \
             to require it.",
            listed_values(detail, "cases").count()
        ),
        None if detail.get("held") == Some(&Value::Bool(true)) => format!(
            "The hold plugin says main is held{}, so only fixes and undos would go in now.",
            quoted(hold_reason(detail))
        ),
        None if detail.get("held") == Some(&Value::Bool(false)) => {
            "The hold plugin says main is not held, so changes go in as usual.".to_owned()
        }
        None if detail.contains_key("skipped") => {
            let skipped = detail
                .get("skipped")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let entries = match skipped {
                1 => "one entry in line that cannot be read".to_owned(),
                n => format!("{n} entries in line that cannot be read"),
            };
            format!("Done, passing over {entries}; tell the person in charge, as the details say.")
        }
        None => {
            let merged = match detail.get("merged").and_then(Value::as_u64) {
                Some(1) => ": one change went into main".to_owned(),
                Some(n) => format!(": {n} changes went into main"),
                None => String::new(),
            };
            let early = match detail
                .get("prechecks")
                .and_then(Value::as_array)
                .map(Vec::len)
            {
                None | Some(0) => String::new(),
                Some(1) => ", and one check run early on a queued change".to_owned(),
                Some(n) => format!(", and {n} checks run early on queued changes"),
            };
            format!("Done{merged}{early}; there is nothing more to do.")
        }
        Some(OpState::Submitted) => format!(
            "This change is waiting for a runner to pick it up{}.",
            unless_no_runner(detail, "; nothing to do for now")
        ),
        Some(OpState::Admitted) => format!(
            "This change is accepted and in line to be checked{}.",
            unless_no_runner(detail, "; nothing to do for now")
        ),
        Some(OpState::Running) => {
            "This change is being checked right now; nothing to do but wait.".to_owned()
        }
        Some(OpState::Checked) => "This change passed its checks and is being added to main; \
                                   nothing to do for now."
            .to_owned(),
        Some(OpState::Merged) => merged(detail),
        Some(OpState::Blocked) => stopped(change),
        Some(OpState::Failed) => "This change stopped on a fault and nothing was added to main; \
                                  submit it again."
            .to_owned(),
        Some(OpState::Superseded) => format!(
            "Another change took over this work{}; go on in that one.",
            quoted(names(detail, "superseded_by"))
        ),
        Some(OpState::NoEffect) => format!(
            "Main already has these edits{}, so nothing new was added and there is nothing \
             more to do.",
            quoted(names(detail, "main_commit"))
        ),
    }
}

/// `bay doctor`'s status line, for a result with its `rows`: the versions it found, and
/// whether the machine is ready or which rows to fix. `None` for any other result.
fn doctor(decision: Decision, detail: &Map<String, Value>) -> Option<String> {
    if !(detail.contains_key("rows") && detail.contains_key("role")) {
        return None;
    }
    let versions: Vec<String> = detail
        .get("versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            Some(format!(
                "{} {}",
                v.get("tool")?.as_str()?,
                v.get("version")?.as_str()?
            ))
        })
        .filter(|text| fits(text))
        .collect();
    let shown = match versions.is_empty() {
        true => String::new(),
        false => format!(" ({})", versions.join(", ")),
    };
    Some(match decision {
        Decision::Ok => format!("This machine is ready for bay{shown}."),
        _ => format!(
            "This machine is not ready for bay{shown}; fix {} as the details say, then run \
             `bay doctor` again.",
            listed(&names(detail, "red"))
        ),
    })
}

/// A merged change: part of main, unless later changes took it back out
/// (`detail.undone_by`).
fn merged(detail: &Map<String, Value>) -> String {
    let waived: Vec<&Value> = detail
        .get("coverage_gaps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|gap| gap.get("waived_by").is_some())
        .collect();
    if !waived.is_empty() {
        let checks: Vec<String> = waived
            .iter()
            .filter_map(|gap| gap.get("check").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let by: Vec<String> = waived
            .iter()
            .filter_map(|gap| gap.get("waived_by").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        return format!(
            "This change is now part of main, though a check did not pass{}: a person waived \
             it{}, so it counts as a gap, never as a pass.",
            quoted(checks),
            quoted(by)
        );
    }
    let undone = names(detail, "undone_by");
    let batch = detail.get("batch").and_then(Value::as_object);
    let place = |key: &str| batch.and_then(|b| b.get(key)).and_then(Value::as_u64);
    if let (true, Some(index), Some(size)) = (undone.is_empty(), place("index"), place("size")) {
        return format!(
            "This change is now part of main{}, as change {index} of {size} checked together \
             as one tree; there is nothing more to do.",
            quoted(names(detail, "main_commit"))
        );
    }
    if undone.is_empty() {
        return format!(
            "This change is now part of main{}; there is nothing more to do.",
            quoted(names(detail, "main_commit"))
        );
    }
    format!(
        "This change was added to main and later taken back out by another change{}; start a \
         new change if its edits are still wanted.",
        quoted(undone)
    )
}

/// `detail.<field>`'s class and name, such as `agent agent-7`.
fn registry_entry(detail: &Map<String, Value>, field: &str) -> Vec<String> {
    let entry = detail.get(field).and_then(Value::as_object);
    let text = |key: &str| entry.and_then(|e| e.get(key)).and_then(Value::as_str);
    match (text("class"), text("name")) {
        (Some(class), Some(name)) => vec![format!("{class} {name}")],
        _ => Vec::new(),
    }
}

/// Why main is held: `detail.hold.reason`.
fn hold_reason(detail: &Map<String, Value>) -> Vec<String> {
    detail
        .get("hold")
        .and_then(Value::as_object)
        .map(|hold| names(hold, "reason"))
        .unwrap_or_default()
}

/// A blocked operation with no reason to name.
fn stopped(change: Option<&ChangeId>) -> String {
    format!(
        "This change is stopped until something is fixed; run `bay status {}` to see what to \
         do next.",
        change_id(change)
    )
}

/// The queue: how many changes wait, the first few by id, intent and where each is, and
/// whether a runner was heard from to take them.
fn queue(detail: &Map<String, Value>) -> String {
    let waiting = detail
        .get("queue_depth")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // Entries in line bay cannot read are passed over, and someone has to mend them.
    let unreadable = listed_values(detail, "operations")
        .filter(|row| row.get("readable") == Some(&Value::Bool(false)))
        .count();
    let mend = match unreadable {
        0 => None,
        1 => Some("one entry in line cannot be read, so runners pass it over".to_owned()),
        n => Some(format!(
            "{n} entries in line cannot be read, so runners pass them over"
        )),
    }
    .map(|what| format!(", and {what}; tell the person in charge, as the details say"));
    let head = match waiting {
        0 if mend.is_none() => {
            return "No change is waiting to be added to main; nothing to do.".to_owned();
        }
        0 => "No change is waiting to be added to main".to_owned(),
        1 => "One change is waiting to be added to main".to_owned(),
        n => format!("There are {n} changes waiting to be added to main"),
    };
    let rows: Vec<String> = listed_values(detail, "operations")
        .filter_map(waiting_row)
        .collect();
    let then = mend.unwrap_or_else(|| unless_no_runner(detail, "; nothing to do"));
    format!("{head}{}{then}.", quoted(rows))
}

/// `c7k2m4qa "fix the login page": being checked`, for an operation that has not ended.
fn waiting_row(row: &Value) -> Option<String> {
    let state = match row.get("state")?.as_str()? {
        "submitted" => "waiting for a runner",
        "admitted" => "in line",
        "running" => "being checked",
        "checked" => "being added",
        _ => return None,
    };
    let change = row.get("change")?.as_str().filter(|id| fits(id))?;
    Some(match row.get("intent").and_then(Value::as_str) {
        Some(intent) if fits(intent) => format!("{change} \"{intent}\": {state}"),
        _ => format!("{change}: {state}"),
    })
}

/// `, but no runner was heard from ...` when `detail.warnings` holds `no_live_runner`, since
/// then nothing moves until one runs; else `otherwise`.
fn unless_no_runner(detail: &Map<String, Value>, otherwise: &str) -> String {
    let no_runner = listed_values(detail, "warnings")
        .any(|warning| warning.get("warning").and_then(Value::as_str) == Some("no_live_runner"));
    if no_runner {
        ", but no runner has been heard from lately; start one with `bay runner run`".to_owned()
    } else {
        otherwise.to_owned()
    }
}

/// `bay waiting`: how many changes wait for this approver, and the command for the first.
fn waiting(detail: &Map<String, Value>) -> String {
    let items: Vec<&Value> = detail
        .get("waiting")
        .and_then(Value::as_array)
        .map(|items| items.iter().collect())
        .unwrap_or_default();
    let first = items.first().and_then(|item| {
        let command = item
            .get("approve")
            .or_else(|| item.get("waive"))?
            .as_str()?;
        let change = item.get("change")?.as_str()?;
        Some((change, command))
    });
    match (items.len(), first) {
        (0, _) | (_, None) => "Nothing waits for an approval you can give.".to_owned(),
        (1, Some((change, command))) => format!(
            "One change waits for your approval ({change}); review its candidate, then run \
             `{command}` or reject it."
        ),
        (n, Some((change, command))) => format!(
            "There are {n} changes waiting for your approval; review each candidate, then run \
             `{command}` for {change}, and likewise for the others."
        ),
    }
}

/// `bay status --lineage`: how many pairs, the first few named.
fn lineage(detail: &Map<String, Value>) -> String {
    let pairs: Vec<String> = listed_values(detail, "lineage").filter_map(pair).collect();
    match listed_values(detail, "lineage").count() {
        0 => {
            "Nothing on main in this range undoes, replaces or fixes an earlier change.".to_owned()
        }
        1 => format!(
            "One change on main in this range undoes, replaces or fixes an earlier one{}.",
            quoted(pairs)
        ),
        n => format!(
            "Main names {n} pairs in this range where one change undoes, replaces or fixes an \
             earlier one{}.",
            quoted(pairs)
        ),
    }
}

/// `k2m4qa7c undoes c7k2m4qa`, from one lineage pair; a commit outside bay is named by the
/// first seven characters of its id.
fn pair(value: &Value) -> Option<String> {
    let verb = match value.get("relation")?.as_str()? {
        "reverts" => "undoes",
        "supersedes" => "replaces",
        "fixes" => "fixes",
        _ => return None,
    };
    let target = value.get("target")?.as_str().filter(|id| fits(id))?;
    let by = match value.get("change").and_then(Value::as_str) {
        Some(change) => change.to_owned(),
        None => value.get("commit")?.as_str()?.chars().take(7).collect(),
    };
    fits(&by).then(|| format!("{by} {verb} {target}"))
}

/// ` (files: src/a.txt, src/b.txt)`: each failed check of `detail.checks`, with the units its
/// `reasons` name; the checks' names alone when no unit is named.
fn failed_units(detail: &Map<String, Value>) -> String {
    let mut with_units = false;
    let checks: Vec<String> = listed_values(detail, "checks")
        .filter_map(|entry| {
            let check = name_of(entry)?;
            let units = entry.as_object().map(|entry| names(entry, "reasons"));
            match units.filter(|units| !units.is_empty()) {
                Some(units) => {
                    with_units = true;
                    Some(format!("{check}: {}", listed(&units)))
                }
                None => Some(check),
            }
        })
        .take(MAX_NAMES)
        .collect();
    match (checks.is_empty(), with_units) {
        (true, _) => quoted(check_names(detail)),
        (false, false) => quoted(checks),
        (false, true) => format!(" ({})", checks.join("; ")),
    }
}

/// `read the end of its stderr in (.git/<path>) where it ran, ` when a check of
/// `detail.checks` names where the runner kept it (`stderr_log`, under the Git directory of
/// the runner's clone), or nothing.
fn read_log(detail: &Map<String, Value>) -> String {
    listed_values(detail, "checks")
        .filter_map(Value::as_object)
        .find_map(|entry| names(entry, "stderr_log").into_iter().next())
        .map(|log| format!("read the end of its stderr in (.git/{log}) where it ran, "))
        .unwrap_or_default()
}

/// The change as a command to run next names it, or `<change>` in its place when the result
/// names none.
fn change_id(change: Option<&ChangeId>) -> String {
    change.map_or_else(|| "<change>".to_owned(), ChangeId::to_string)
}

/// A `failed` result without a reason: nothing changed, then why.
fn say_fault(detail: &Map<String, Value>) -> String {
    let why = detail
        .get("why")
        .and_then(Value::as_str)
        .and_then(plain_why);
    match why {
        Some(why) => format!("Nothing changed: {why}; run the command again once that is fixed."),
        None => "Nothing changed: bay ran into a fault it could not get past; run the command \
                 again, and tell the person in charge if it keeps happening."
            .to_owned(),
    }
}

/// `bay install`: what is in place, and the one step left when main lacks the hook entries.
fn installed(detail: &Map<String, Value>) -> String {
    if let Some(file) = detail.get("hooks_to_land").and_then(Value::as_str) {
        return format!(
            "bay is installed here and its hooks are written to {file}; add that file to main \
             with `bay save enable-hooks` so that every agent's sessions run them."
        );
    }
    match detail.get("hooks") {
        Some(Value::String(off)) if off == "off" => "bay is installed on this machine and set \
             up in this project; main names no agent product, so no hooks were added."
            .to_owned(),
        Some(_) => "bay is installed on this machine and set up in this project, hooks \
                    included; nothing else is needed."
            .to_owned(),
        None => "bay is installed on this machine, with its skill for Claude Code; nothing else \
                 is needed."
            .to_owned(),
    }
}

/// `why` made fit for the sentence, or `None` when it cannot be: text that is empty, runs to
/// more than one sentence, or still holds a listed word after its paths were made plain. The
/// full text stays in `detail.why` either way.
fn plain_why(why: &str) -> Option<String> {
    let words: Vec<String> = why.split_whitespace().map(plain_token).collect();
    let mut text = words.join(" ");
    while text.ends_with(['.', '!', '?', ',', ';', ':']) {
        text.pop();
    }
    let mut chars = text.chars();
    if let (Some(first), Some(second)) = (chars.next(), chars.clone().next()) {
        // "The remote ..." goes on the sentence as "the remote ...", but "HEAD" stays.
        if first.is_uppercase() && !second.is_uppercase() {
            let lowered: String = first.to_lowercase().chain(chars).collect();
            text = lowered;
        }
    }
    let ok = !text.is_empty()
        && !text.chars().any(char::is_control)
        && forbidden_word(&text).is_none()
        && !ends_a_sentence_inside(&text);
    ok.then_some(text)
}

/// One word of `why`, with a file at a saved version cut to its path and one of bay's own
/// records named as such. Quotes and punctuation around the word stay.
fn plain_token(token: &str) -> String {
    const OPEN: &[char] = &['(', '"', '\'', '`'];
    const CLOSE: &[char] = &[')', '"', '\'', '`', ',', ';', ':', '.'];
    let core = token.trim_start_matches(OPEN).trim_end_matches(CLOSE);
    if core.is_empty() {
        return token.to_owned();
    }
    let start = token.len() - token.trim_start_matches(OPEN).len();
    let (before, after) = (&token[..start], &token[start + core.len()..]);
    let path = path_at_version(core).unwrap_or(core);
    let looks_like_path = path.contains('/') || path.contains('.');
    let path = if looks_like_path && forbidden_word(path).is_some() {
        "bay's records"
    } else {
        path
    };
    format!("{before}{path}{after}")
}

/// The path of `<version>:<path>`, where the version is a hex id, `HEAD` or a full ref name.
fn path_at_version(text: &str) -> Option<&str> {
    let (version, path) = text.split_once(':')?;
    let hex = (4..=64).contains(&version.len()) && version.bytes().all(|b| b.is_ascii_hexdigit());
    let named = version == "HEAD" || version.starts_with("refs/");
    let is_path = !path.is_empty() && !path.starts_with("//");
    ((hex || named) && is_path).then_some(path)
}

/// A full stop, `!` or `?` followed by a space: the text holds a second sentence.
fn ends_a_sentence_inside(text: &str) -> bool {
    text.char_indices().any(|(i, c)| {
        matches!(c, '.' | '!' | '?') && text[i + 1..].starts_with(char::is_whitespace)
    })
}

/// The names under `key`: a string, or a list of strings, or a list of objects each naming
/// itself (see [`name_of`]).
fn names(detail: &Map<String, Value>, key: &str) -> Vec<String> {
    match detail.get(key) {
        Some(Value::Array(items)) => items.iter().filter_map(name_of).collect(),
        Some(value) => name_of(value).into_iter().collect(),
        None => Vec::new(),
    }
}

/// A string, or an object's `check`, `id`, `path` or `name`, when it [`fits`].
fn name_of(value: &Value) -> Option<String> {
    let text = match value {
        Value::String(text) => Some(text.as_str()),
        Value::Object(fields) => ["check", "id", "path", "name"]
            .iter()
            .find_map(|field| fields.get(*field).and_then(Value::as_str)),
        _ => None,
    }?;
    fits(text).then(|| text.to_owned())
}

/// Whether a name can be quoted: not empty, and with no control character, since the sentence
/// must stay on one line.
fn fits(text: &str) -> bool {
    !text.is_empty() && !text.chars().any(char::is_control)
}

/// The items of the list under `key`; none when it is absent or not a list.
fn listed_values<'a>(
    detail: &'a Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a Value> + use<'a> {
    detail
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The names under the first of `keys` that has any.
fn first_names(detail: &Map<String, Value>, keys: &[&str]) -> Vec<String> {
    keys.iter()
        .map(|key| names(detail, key))
        .find(|found| !found.is_empty())
        .unwrap_or_default()
}

/// The failed checks: `detail.check`, else `detail.checks`.
fn check_names(detail: &Map<String, Value>) -> Vec<String> {
    first_names(detail, &["check", "checks"])
}

/// ` (a, b, c and 2 more)`, or nothing when there is no name.
fn quoted(names: Vec<String>) -> String {
    if names.is_empty() {
        return String::new();
    }
    format!(" ({})", listed(&names))
}

/// `a, b, c and 2 more`: the first [`MAX_NAMES`] names, then how many more.
fn listed(names: &[String]) -> String {
    let (first, rest) = names.split_at(names.len().min(MAX_NAMES));
    match rest.len() {
        0 => first.join(", "),
        more => format!("{} and {more} more", first.join(", ")),
    }
}

/// ` (place 3 in line)` from `detail.position`, or nothing.
fn place_in_line(detail: &Map<String, Value>) -> String {
    match detail.get("position").and_then(Value::as_u64) {
        Some(position) => format!(" (place {position} in line)"),
        None => String::new(),
    }
}

/// ` (git, needs 2.45 or newer)` from `detail.tool` and `detail.floor`, or what there is.
/// ` (120 MiB free, 2048 MiB needed)` from `free_mib` and `floor_mib`, when both are numbers.
fn space_and_floor(detail: &Map<String, Value>) -> String {
    let number = |key: &str| detail.get(key).and_then(Value::as_u64);
    match (number("free_mib"), number("floor_mib")) {
        (Some(free), Some(floor)) => format!(" ({free} MiB free, {floor} MiB needed)"),
        _ => String::new(),
    }
}

/// The first cap `detail.exceeded` names, in the words of the specification's example: the
/// largest file and its size for `max_file_mib`, the count for the others; then the step that
/// fits it. Without a cap it can read, the sentence names both steps.
fn too_large(detail: &Map<String, Value>) -> String {
    let first = detail
        .get("exceeded")
        .and_then(Value::as_array)
        .and_then(|caps| caps.first())
        .and_then(Value::as_object);
    let field = |key: &str| first.and_then(|cap| cap.get(key));
    let cap = field("cap").and_then(Value::as_str);
    let max = field("max").and_then(Value::as_u64);
    let (mib, count) = (
        field("value").and_then(Value::as_f64),
        field("value").and_then(Value::as_u64),
    );
    let split = "split it into smaller changes, then submit each one";
    match (cap, max, mib, count) {
        (Some("max_file_mib"), Some(max), Some(mib), _) => {
            let file = first
                .and_then(|cap| names(cap, "paths").into_iter().next())
                .unwrap_or_else(|| "a file".to_owned());
            format!(
                "This change is too big to save here ({file} is {mib:.1} MiB, over {max} MiB); \
                 keep large files elsewhere, such as a shared drive."
            )
        }
        (Some("max_files"), Some(max), _, Some(files)) => format!(
            "This change is too big to save here (it touches {files} files, over {max}); {split}."
        ),
        (Some("max_added_lines"), Some(max), _, Some(lines)) => format!(
            "This change is too big to save here (it adds {lines} lines, over {max}); {split}."
        ),
        _ => "This change is too big to save here; keep large files elsewhere or split it into \
              smaller changes, then submit each one."
            .to_owned(),
    }
}

fn tool_and_floor(detail: &Map<String, Value>) -> String {
    let tool = names(detail, "tool").into_iter().next();
    let floor = names(detail, "floor").into_iter().next();
    match (tool, floor) {
        (Some(tool), Some(floor)) => format!(" ({tool}, needs {floor} or newer)"),
        (Some(tool), None) => format!(" ({tool})"),
        (None, Some(floor)) => format!(" (needs {floor} or newer)"),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// One sentence: not empty, one line, no padding, a capital first, a single full stop last,
    /// and no `.`, `!` or `?` followed by a space before it (dots inside a quoted name such as
    /// `src/app.rs` are part of the name).
    fn assert_one_sentence(sentence: &str) {
        assert!(!sentence.is_empty());
        assert!(!sentence.contains(['\n', '\r']), "{sentence:?}");
        assert_eq!(sentence.trim(), sentence, "{sentence:?}");
        assert!(sentence.starts_with(char::is_uppercase), "{sentence:?}");
        assert!(
            sentence.ends_with('.') && !sentence.ends_with(".."),
            "{sentence:?}"
        );
        for stop in [". ", "! ", "? ", ".\t"] {
            assert!(!sentence.contains(stop), "two sentences: {sentence:?}");
        }
    }

    fn assert_clean(sentence: &str) {
        assert_one_sentence(sentence);
        assert_eq!(forbidden_word(sentence), None, "{sentence:?}");
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn waiting_names_how_many_wait_and_the_command_for_the_first() {
        let said = |waiting: Value| {
            let sentence = say(
                Decision::Ok,
                None,
                None,
                None,
                &object(json!({"waiting": waiting})),
            );
            assert_clean(&sentence);
            sentence
        };
        assert_eq!(
            said(json!([])),
            "Nothing waits for an approval you can give."
        );
        let one = json!([{"change": "c7k2m4qa", "approve": "bay approve c7k2m4qa"}]);
        let sentence = said(one);
        assert!(sentence.starts_with("One change waits"), "{sentence}");
        assert!(sentence.contains("`bay approve c7k2m4qa`"), "{sentence}");
        let two = json!([
            {"change": "c7k2m4qa", "approve": "bay approve c7k2m4qa"},
            {"change": "d7k2m4qa", "waive": "bay approve d7k2m4qa --waive tests --why \"...\""},
        ]);
        assert!(said(two).starts_with("There are 2 changes waiting"));
    }

    /// Every field `say` reads, with names that hold no listed word.
    fn full_detail() -> Map<String, Value> {
        object(json!({
            "paths": ["src/app.rs", "docs/guide.md"],
            "check": "unit-tests",
            "checks": [
                {"check": "unit-tests", "reasons": [{"id": "tests::login", "reason": "no"}],
                 "stderr_log": "bay/logs/check-1a2b3c-0-unit-tests.stderr"},
                {"check": "lint", "reasons": [{"id": "src/app.rs", "reason": "too long"}]},
            ],
            "environment": "linux-x86_64",
            "superseded_by": "c7k2m4qb",
            "tool": "git",
            "floor": "2.45",
            "sandbox": "bwrap",
            "variables": ["API_TOKEN"],
            "position": 3,
            "main_commit": "a1b2c3d",
            "why": "the remote did not answer",
            "exceeded": [{"cap": "max_file_mib", "max": 10, "value": 48.0, "paths": ["assets/intro.mp4"]}],
        }))
    }

    /// The details of the sentences that read more than names: each a list a status or
    /// `--lineage` gives, and an undone merge.
    fn list_details() -> Vec<Map<String, Value>> {
        let no_runner = json!([{"warning": "no_live_runner", "waiting": 2}]);
        [
            json!({"queue_depth": 2, "operations": [
                {"change": "c7k2m4qa", "intent": "fix the login page", "state": "submitted"},
                {"change": "k2m4qa7c", "intent": "docs", "state": "running"},
                {"change": "m4qa7ck2", "intent": "old", "state": "blocked"},
            ]}),
            json!({"queue_depth": 1, "operations": [], "warnings": no_runner}),
            json!({"lineage": [
                {"commit": "a1b2c3d4e5", "change": "k2m4qa7c", "relation": "reverts", "target": "c7k2m4qa"},
                {"commit": "b1b2c3d4e5", "change": null, "relation": "fixes", "target": "c7k2m4qa"},
            ]}),
            json!({"main_commit": "a1b2c3d", "undone_by": ["k2m4qa7c"]}),
            json!({"warnings": no_runner}),
        ]
        .into_iter()
        .map(object)
        .chain([Map::new(), full_detail()])
        .collect()
    }

    fn states() -> Vec<Option<OpState>> {
        std::iter::once(None)
            .chain(OpState::ALL.map(Some))
            .collect()
    }

    fn change() -> ChangeId {
        ChangeId::parse("c7k2m4qa").expect("a change id")
    }

    #[test]
    fn a_broken_registry_names_its_file_from_the_refusals_detail() {
        use crate::detail::Detail;
        let broken = crate::trust::registry::Broken {
            commit: None,
            file: Some("agent".into()),
            line: Some(1),
            why: "a removed key is enrolled again".into(),
        };
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::RegistryUnreadable),
            None,
            None,
            &broken.to_map(),
        );
        assert_clean(&sentence);
        assert!(sentence.contains("(agent)"), "{sentence}");
    }

    #[test]
    fn a_change_with_nothing_submitted_says_so_not_done() {
        let said = |open: bool| {
            let detail = object(json!({"open": open, "intent": "x", "actor": "ann"}));
            let sentence = say(Decision::Ok, None, None, Some(&change()), &detail);
            assert_clean(&sentence);
            sentence
        };
        assert_eq!(
            said(true),
            "Change c7k2m4qa is open and nothing of it is submitted yet; edit its files in its \
             folder, then submit it from there."
        );
        assert_eq!(
            said(false),
            "Change c7k2m4qa ended before anything of it was submitted; there is nothing to do."
        );
    }

    #[test]
    fn a_once_run_says_what_it_merged_and_checked_early() {
        let said = |detail: Value| {
            let sentence = say(Decision::Ok, None, None, None, &object(detail));
            assert_clean(&sentence);
            sentence
        };
        assert_eq!(said(json!({})), "Done; there is nothing more to do.");
        assert_eq!(
            said(json!({"merged": 2})),
            "Done: 2 changes went into main; there is nothing more to do."
        );
        assert_eq!(
            said(json!({"merged": 1, "prechecks": [{}, {}]})),
            "Done: one change went into main, and 2 checks run early on queued changes; \
             there is nothing more to do."
        );
        assert_eq!(
            said(json!({"prechecks": [{}]})),
            "Done, and one check run early on a queued change; there is nothing more to do."
        );
    }

    #[test]
    fn every_code_says_one_clean_sentence() {
        for detail in list_details() {
            for code in ReasonCode::ALL {
                for state in states() {
                    for change in [None, Some(&change())] {
                        let sentence = say(code.decision(), Some(code), state, change, &detail);
                        assert_clean(&sentence);
                    }
                }
            }
        }
    }

    #[test]
    fn every_decision_and_state_says_one_clean_sentence() {
        for detail in list_details() {
            for decision in Decision::ALL {
                for state in states() {
                    for change in [None, Some(&change())] {
                        let sentence = say(decision, None, state, change, &detail);
                        assert_clean(&sentence);
                    }
                }
            }
        }
    }

    #[test]
    fn a_conflict_with_a_draft_saved_elsewhere_names_the_folder_that_shows_it() {
        let detail = object(json!({"conflicts": ["src/a.rs"], "view": "/v",
                                   "markers": ["<<<<<<< saved draft of c7k2m4qa"],
                                   "carried_over": true}));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            Some(&change()),
            &detail,
        );
        assert_eq!(
            sentence,
            "A draft of this change saved elsewhere changed the same lines as this folder \
             (src/a.rs); settle them in /v, where bay left both sides between conflict \
             markers, then submit it again."
        );
        // A folder whose name would break the sentence's one line is not quoted.
        let mut odd = detail.clone();
        odd.insert("view".into(), json!("/v\nx"));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            Some(&change()),
            &odd,
        );
        assert!(
            !sentence.contains('\n') && sentence.contains("in the change's folder,"),
            "{sentence}"
        );
    }

    #[test]
    fn a_conflict_names_its_paths_and_the_command_that_updates_the_change() {
        let detail = object(json!({"paths": ["src/app.rs"]}));
        let conflict = |change: Option<&ChangeId>| {
            say(
                Decision::Blocked,
                Some(ReasonCode::MergeConflict),
                Some(OpState::Blocked),
                change,
                &detail,
            )
        };
        assert_eq!(
            conflict(Some(&change())),
            "Main changed the same lines as this change (src/app.rs); run `bay start c7k2m4qa` \
             to update it, settle those lines in its folder, then submit it again."
        );
        assert!(conflict(None).contains("`bay start <change>`"));
        // An undo's conflict names its paths as `conflicts`.
        let undo = object(json!({"conflicts": ["src/b.rs"], "view": "/v"}));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            None,
            &undo,
        );
        assert!(sentence.contains("(src/b.rs)"), "{sentence}");
    }

    #[test]
    fn a_check_failure_names_the_failed_units_and_where_its_output_is_kept() {
        let failed = |detail: Value| {
            let sentence = say(
                Decision::Blocked,
                Some(ReasonCode::CheckFailed),
                Some(OpState::Blocked),
                Some(&change()),
                &object(detail),
            );
            assert_clean(&sentence);
            sentence
        };
        assert_eq!(
            failed(json!({"check": "unit-tests", "checks": full_detail()["checks"]})),
            "A required check did not pass (unit-tests: tests::login; lint: src/app.rs); read \
             the end of its stderr in (.git/bay/logs/check-1a2b3c-0-unit-tests.stderr) where it \
             ran, fix the change in its folder, then submit it again."
        );
        let units: Vec<Value> = (1..=5).map(|n| json!({"id": format!("t{n}")})).collect();
        assert_eq!(
            failed(json!({"check": "unit", "checks": [{"check": "unit", "reasons": units}]})),
            "A required check did not pass (unit: t1, t2, t3 and 2 more); fix the change in its \
             folder, then submit it again."
        );
        assert!(
            failed(json!({"check": "unit"})).starts_with("A required check did not pass (unit);")
        );
    }

    #[test]
    fn a_status_lists_the_changes_waiting_and_says_when_no_runner_was_heard_from() {
        let details = list_details();
        let listed = say(Decision::Ok, None, None, None, &details[0]);
        assert_eq!(
            listed,
            "There are 2 changes waiting to be added to main (c7k2m4qa \"fix the login page\": \
             waiting for a runner, k2m4qa7c \"docs\": being checked); nothing to do."
        );
        let alone = say(Decision::Ok, None, None, None, &details[1]);
        assert_eq!(
            alone,
            "One change is waiting to be added to main, but no runner has been heard from \
             lately; start one with `bay runner run`."
        );
        let one = say(
            Decision::Queued,
            None,
            Some(OpState::Submitted),
            Some(&change()),
            &details[4],
        );
        assert!(one.contains("start one with `bay runner run`"), "{one}");
        let heard = say(
            Decision::Queued,
            None,
            Some(OpState::Submitted),
            None,
            &Map::new(),
        );
        assert!(heard.ends_with(", so you can keep working."), "{heard}");
    }

    #[test]
    fn a_start_that_brings_in_a_conflict_names_the_lines_to_settle() {
        let detail = object(json!({"view": "/repo/v", "conflicts": ["src/app.rs"]}));
        let said = say(Decision::Ok, None, None, Some(&change()), &detail);
        assert_eq!(
            said,
            "The change now starts from main's newest files, but main changed the same lines \
             (src/app.rs); settle them in the folder (/repo/v) and remove the conflict markers \
             bay left there, then submit it again."
        );
        assert_clean(&said);
    }

    #[test]
    fn a_plugin_test_says_what_it_found() {
        let cases = object(json!({"cases": [{"case": "a"}, {"case": "b"}], "failing": []}));
        let said = say(Decision::Ok, None, None, None, &cases);
        assert_eq!(
            said,
            "The check met bay's contract in all 2 cases; name it in .bay/policy.toml on main to \
             require it."
        );
        let held = object(json!({"held": true, "hold": {"reason": "release week"}}));
        let said = say(Decision::Ok, None, None, None, &held);
        assert!(said.contains("is held (release week)"), "{said}");
        let clear = say(
            Decision::Ok,
            None,
            None,
            None,
            &object(json!({"held": false})),
        );
        assert!(clear.contains("is not held"), "{clear}");
        for said in [said, clear] {
            assert_clean(&said);
        }
    }

    #[test]
    fn lineage_names_the_pairs_it_found() {
        let said = say(Decision::Ok, None, None, None, &list_details()[2]);
        assert_eq!(
            said,
            "Main names 2 pairs in this range where one change undoes, replaces or fixes an \
             earlier one (k2m4qa7c undoes c7k2m4qa, b1b2c3d fixes c7k2m4qa)."
        );
    }

    #[test]
    fn an_undone_change_says_it_was_taken_back_out_and_by_what() {
        let undone = list_details()[3].clone();
        for (decision, state) in [
            (Decision::Merged, Some(OpState::Merged)),
            (Decision::Ok, Some(OpState::Merged)),
        ] {
            let said = say(decision, None, state, Some(&change()), &undone);
            assert_eq!(
                said,
                "This change was added to main and later taken back out by another change \
                 (k2m4qa7c); start a new change if its edits are still wanted."
            );
        }
    }

    #[test]
    fn a_batch_member_says_it_was_checked_with_others_as_one_tree() {
        let detail = json!({"batch": {"id": "c7k2m4qa.1.1", "index": 2, "size": 3}})
            .as_object()
            .cloned()
            .expect("an object");
        let said = say(
            Decision::Merged,
            None,
            Some(OpState::Merged),
            Some(&change()),
            &detail,
        );
        assert_one_sentence(&said);
        assert_eq!(
            said,
            "This change is now part of main, as change 2 of 3 checked together as one tree; \
             there is nothing more to do."
        );
    }

    #[test]
    fn a_start_an_abandon_and_a_queue_each_say_what_happened() {
        let start = say(
            Decision::Ok,
            None,
            None,
            None,
            &object(json!({"view": "/repo/work/c7k2m4qa"})),
        );
        assert!(
            start.contains("/repo/work/c7k2m4qa") && start.contains("submit"),
            "{start}"
        );
        assert_clean(&start);
        let abandoned = say(
            Decision::Ok,
            None,
            None,
            None,
            &object(json!({"abandoned": true})),
        );
        assert!(abandoned.contains("given up"), "{abandoned}");
        assert_clean(&abandoned);
        for (pairs, words) in [(0, "Nothing"), (1, "One change"), (3, "Main names 3")] {
            let lineage: Vec<Value> = (0..pairs).map(|_| json!({})).collect();
            let said = say(
                Decision::Ok,
                None,
                None,
                None,
                &object(json!({ "lineage": lineage })),
            );
            assert!(said.starts_with(words), "{said}");
            assert_clean(&said);
        }
        let nothing = say(
            Decision::Ok,
            None,
            None,
            None,
            &object(json!({"undo": "nothing to undo", "reverts": "c7k2m4qa"})),
        );
        assert!(
            nothing.contains("c7k2m4qa") && nothing.contains("nothing to undo"),
            "{nothing}"
        );
        assert_clean(&nothing);
        let not_merged = say(
            Decision::Blocked,
            Some(ReasonCode::ChangeNotMerged),
            None,
            None,
            &object(json!({"target": "c7k2m4qa"})),
        );
        assert!(not_merged.contains("c7k2m4qa"), "{not_merged}");
        assert_clean(&not_merged);
        let set_back = say(
            Decision::Blocked,
            Some(ReasonCode::ChangeNotMerged),
            None,
            None,
            &object(json!({"target": "c7k2m4qa", "merge": "1".repeat(40)})),
        );
        assert!(
            set_back.contains("c7k2m4qa") && set_back.contains("set back"),
            "{set_back}"
        );
        assert_clean(&set_back);
        for (depth, words) in [
            (0, "No change"),
            (1, "One change"),
            (3, "There are 3 changes"),
        ] {
            let queue = say(
                Decision::Ok,
                None,
                None,
                None,
                &object(json!({"queue_depth": depth})),
            );
            assert!(queue.starts_with(words), "{queue}");
            assert_clean(&queue);
        }
    }

    #[test]
    fn the_reason_decides_the_words() {
        let detail = full_detail();
        let conflict = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            None,
            &detail,
        );
        assert!(
            conflict.contains("(src/app.rs, docs/guide.md)"),
            "{conflict}"
        );
        let failed = say(
            Decision::Blocked,
            Some(ReasonCode::CheckFailed),
            None,
            None,
            &detail,
        );
        assert!(
            failed.contains("(unit-tests: tests::login; lint: src/app.rs)"),
            "{failed}"
        );
        let queued = say(
            Decision::Queued,
            Some(ReasonCode::Queued),
            None,
            None,
            &detail,
        );
        assert!(queued.contains("(place 3 in line)"), "{queued}");
        let tool = say(
            Decision::Blocked,
            Some(ReasonCode::ToolBelowFloor),
            None,
            None,
            &detail,
        );
        assert!(tool.contains("(git, needs 2.45 or newer)"), "{tool}");
        let env = say(
            Decision::Blocked,
            Some(ReasonCode::CheckEnvUnset),
            None,
            None,
            &detail,
        );
        assert!(env.contains("(API_TOKEN)"), "{env}");
    }

    #[test]
    fn a_change_too_large_names_its_first_cap_as_the_specification_does() {
        let too_large = |exceeded: Value| {
            let sentence = say(
                Decision::Blocked,
                Some(ReasonCode::ChangeTooLarge),
                None,
                None,
                &object(json!({ "exceeded": exceeded })),
            );
            assert_clean(&sentence);
            sentence
        };
        assert_eq!(
            too_large(json!([
                {"cap": "max_file_mib", "max": 10, "value": 48.0, "paths": ["assets/intro.mp4", "b.bin"]},
                {"cap": "max_files", "max": 1, "value": 2, "paths": ["assets/intro.mp4", "b.bin"]},
            ])),
            "This change is too big to save here (assets/intro.mp4 is 48.0 MiB, over 10 MiB); \
             keep large files elsewhere, such as a shared drive."
        );
        assert_eq!(
            too_large(json!([{"cap": "max_files", "max": 200, "value": 250, "paths": []}])),
            "This change is too big to save here (it touches 250 files, over 200); split it \
             into smaller changes, then submit each one."
        );
        assert_eq!(
            too_large(
                json!([{"cap": "max_added_lines", "max": 5000, "value": 6001, "paths": ["a.rs"]}])
            ),
            "This change is too big to save here (it adds 6001 lines, over 5000); split it into \
             smaller changes, then submit each one."
        );
        let unread = too_large(json!([{"cap": "max_files", "value": "many"}]));
        assert!(
            unread.contains("keep large files elsewhere or split it"),
            "{unread}"
        );
    }

    #[test]
    fn checks_are_read_from_a_list_of_objects() {
        let detail = object(json!({"checks": [{"check": "lint"}, {"id": "e2e"}, 7]}));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::CheckFailed),
            None,
            None,
            &detail,
        );
        assert!(sentence.contains("(lint, e2e)"), "{sentence}");
        assert_clean(&sentence);
    }

    #[test]
    fn long_lists_name_three_and_count_the_rest() {
        let detail = object(json!({"paths": ["a", "b", "c", "d", "e"]}));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            None,
            &detail,
        );
        assert!(sentence.contains("(a, b, c and 2 more)"), "{sentence}");
    }

    #[test]
    fn a_quoted_name_stays_as_it_is() {
        // A path may hold a listed word; it is the file's name, so it is shown unchanged.
        let detail = object(json!({"paths": ["src/merge.rs"]}));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            None,
            &detail,
        );
        assert!(sentence.contains("(src/merge.rs)"), "{sentence}");
        assert_one_sentence(&sentence);
    }

    #[test]
    fn a_name_that_would_break_the_line_is_left_out() {
        let detail = object(json!({"paths": ["ok.txt", "bad\nname", ""]}));
        let sentence = say(
            Decision::Blocked,
            Some(ReasonCode::MergeConflict),
            None,
            None,
            &detail,
        );
        assert!(sentence.contains("(ok.txt)"), "{sentence}");
        assert_clean(&sentence);
    }

    #[test]
    fn no_effect_names_the_main_version_that_has_the_work() {
        let detail = object(json!({"main_commit": "a1b2c3d", "tree": "9f8e7d6"}));
        let sentence = say(Decision::Ok, None, Some(OpState::NoEffect), None, &detail);
        assert!(sentence.contains("(a1b2c3d)"), "{sentence}");
        assert_clean(&sentence);
    }

    #[test]
    fn a_fault_says_nothing_changed_then_why() {
        let detail = object(json!({"why": "The remote did not answer."}));
        let sentence = say(Decision::Failed, None, None, None, &detail);
        assert_eq!(
            sentence,
            "Nothing changed: the remote did not answer; run the command again once that is \
             fixed."
        );
        let bare = say(
            Decision::Failed,
            None,
            Some(OpState::Running),
            None,
            &Map::new(),
        );
        assert!(bare.starts_with("Nothing changed: "), "{bare}");
        assert_clean(&bare);
    }

    #[test]
    fn a_fault_names_files_plainly() {
        let at_version = object(json!({"why": "cannot read a1b2c3d:.bay/config.toml"}));
        let sentence = say(Decision::Failed, None, None, None, &at_version);
        assert!(
            sentence.starts_with("Nothing changed: cannot read .bay/config.toml;"),
            "{sentence}"
        );

        let record = object(json!({"why": "cannot write (refs/bay/changes/c7k2m4qa)"}));
        let sentence = say(Decision::Failed, None, None, None, &record);
        assert!(
            sentence.starts_with("Nothing changed: cannot write (bay's records);"),
            "{sentence}"
        );
        assert_clean(&sentence);

        let acronym = object(json!({"why": "HEAD is detached"}));
        let sentence = say(Decision::Failed, None, None, None, &acronym);
        assert!(
            sentence.starts_with("Nothing changed: HEAD is detached;"),
            "{sentence}"
        );
    }

    #[test]
    fn a_fault_whose_why_does_not_fit_falls_back() {
        for why in [
            "the merge failed",
            "one thing. Then another",
            "",
            "   ",
            "...",
            "a\u{7}b",
        ] {
            let detail = object(json!({"why": why}));
            let sentence = say(Decision::Failed, None, None, None, &detail);
            assert!(
                sentence.starts_with("Nothing changed: bay ran into a fault"),
                "{why:?}"
            );
            assert_clean(&sentence);
        }
    }

    #[test]
    fn a_version_prefix_is_cut_only_from_a_version() {
        assert_eq!(
            path_at_version("a1b2c3d:.bay/config.toml"),
            Some(".bay/config.toml")
        );
        assert_eq!(path_at_version("HEAD:src/app.rs"), Some("src/app.rs"));
        assert_eq!(path_at_version("refs/heads/main:a.txt"), Some("a.txt"));
        assert_eq!(path_at_version("https://example.com/x"), None);
        assert_eq!(path_at_version("localhost:8080"), None);
        assert_eq!(path_at_version("a1b2c3d:"), None);
    }

    /// Paths as people name them: a folder or two, a file, maybe an extension.
    const PLAIN_PATH: &str = "[a-z0-9_-]{1,12}(/[a-z0-9_-]{1,12})?(\\.[a-z]{1,4})?";

    proptest! {
        #[test]
        fn any_plain_names_keep_one_clean_sentence(
            paths in proptest::collection::vec(PLAIN_PATH, 0..6),
            check in "[a-z][a-z0-9:_-]{0,20}",
            position in 0u64..1000,
        ) {
            let detail = object(json!({"paths": paths, "check": check, "position": position}));
            let clean = forbidden_word(&Value::Object(detail.clone()).to_string()).is_none();
            for code in ReasonCode::ALL {
                let sentence = say(code.decision(), Some(code), None, None, &detail);
                assert_one_sentence(&sentence);
                if clean {
                    prop_assert_eq!(forbidden_word(&sentence), None);
                }
            }
        }

        #[test]
        fn any_why_keeps_one_sentence(why in "\\PC{0,60}") {
            let detail = object(json!({"why": why}));
            let sentence = say(Decision::Failed, None, None, None, &detail);
            prop_assert!(sentence.starts_with("Nothing changed: "));
            assert_clean(&sentence);
        }
    }
}
