//! A person's approval: the `approval` records an enrolled approver signs for one exact
//! candidate, and how bay judges them for the approval checks (`kind = "approval"`) a
//! candidate owes.
//!
//! An approval is an evidence record like a review (`crate::review`): JSON in the approver's
//! notes ref `refs/notes/bay/evidence/<approver>`, noted on the candidate commit, signed whole
//! by `bay.approverKey`. It counts only when it verifies against the registry's `approver`
//! file under its `producer` (`trust::record::Keys::record`): without a registry, unsigned,
//! signed by another class or by a name the check's `producers` leave out, it never counts,
//! for a yes or a no. Unknown is never a pass.
//!
//! This bay asks for a yes on every candidate: a record counts only for the candidate commit
//! it names (carrying a yes to a later candidate with the same files is not built yet).

use serde_json::{Map, Value, json};

use crate::check::Verdict;
use crate::git::Oid;
use crate::glob;
use crate::policy::{ApprovalCheck, Policy};
use crate::red::record_id;
use crate::time::Timestamp;
use crate::trust::Trust;
use crate::trust::record::Keys;
use crate::trust::registry::{Class, Version};

/// The kind an approval record has.
pub const APPROVAL: &str = "approval";

/// The approval checks of `policy` a candidate changing `changed_paths` owes a yes for: each
/// whose `when_paths` match a changed path and that no quarantine sets aside.
pub fn required<'a>(policy: &'a Policy, changed_paths: &[String]) -> Vec<&'a ApprovalCheck> {
    policy
        .approvals
        .iter()
        .filter(|check| {
            !policy
                .quarantine
                .iter()
                .any(|q| q.id == check.id && q.environment == check.environment)
        })
        .filter(|check| {
            changed_paths
                .iter()
                .any(|path| glob::any_path_matches(&check.when_paths, path))
        })
        .collect()
}

/// What one approver says about one candidate for one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// `bay.approverName`: the record's `producer`.
    pub approver: String,
    pub check: String,
    pub environment: String,
    /// `pass` for a yes, `product_failure` for a no.
    pub verdict: Verdict,
    pub why: String,
}

/// The candidate an answer is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct About {
    pub change: String,
    pub candidate: String,
    pub commit: Oid,
    pub tree: Oid,
    pub base_tree: Option<Oid>,
}

/// The record of `answer` about `about`, written at `at`, unsigned: the driver signs it
/// before it is written. Its id names the approver, the candidate commit, the check and the
/// verdict, so a yes and a later no of one approver stand side by side (and the no wins).
pub fn record(answer: &Answer, about: &About, at: Timestamp) -> String {
    let inputs = vec![
        ("check".to_owned(), answer.check.clone()),
        ("environment".to_owned(), answer.environment.clone()),
        ("verdict".to_owned(), answer.verdict.as_str().to_owned()),
    ];
    let id = record_id(&answer.approver, APPROVAL, &about.commit, &inputs, None);
    let mut map = Map::new();
    map.insert("schema".into(), Value::from("bay.evidence/1"));
    map.insert("kind".into(), Value::from(APPROVAL));
    map.insert("id".into(), Value::from(id));
    map.insert("producer".into(), Value::from(answer.approver.as_str()));
    map.insert("check".into(), Value::from(answer.check.as_str()));
    map.insert(
        "environment".into(),
        Value::from(answer.environment.as_str()),
    );
    map.insert("verdict".into(), Value::from(answer.verdict.as_str()));
    if !answer.why.is_empty() {
        map.insert("why".into(), Value::from(answer.why.as_str()));
    }
    // A record by hand (`bay evidence record --kind approval`) names the commit alone.
    if !about.change.is_empty() {
        map.insert("change".into(), Value::from(about.change.as_str()));
    }
    if !about.candidate.is_empty() {
        map.insert("candidate".into(), Value::from(about.candidate.as_str()));
    }
    map.insert("commit".into(), Value::from(about.commit.as_str()));
    map.insert("tree".into(), Value::from(about.tree.as_str()));
    map.insert(
        "base_tree".into(),
        about
            .base_tree
            .as_ref()
            .map_or(Value::Null, |t| Value::from(t.as_str())),
    );
    map.insert("at".into(), Value::from(at.0));
    serde_json::to_string(&Value::Object(map)).expect("a JSON object always serializes")
}

/// The id of an approval record line, if it is one.
pub fn record_id_of(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    (value.get("kind")? == APPROVAL)
        .then(|| value.get("id")?.as_str().map(str::to_owned))
        .flatten()
}

/// Whether two approval record lines say the same, whenever and however signed.
pub fn same_content(one: &str, two: &str) -> bool {
    let strip = |line: &str| {
        let mut value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("at");
            map.remove(crate::trust::record::SIGNATURE);
        }
        value
    };
    strip(one) == strip(two)
}

/// How the approval checks a candidate owes stand.
#[derive(Clone, Debug, PartialEq)]
pub enum Judgement {
    /// Every check has a counted yes and none a counted no: each counted yes, per check.
    Approved(Vec<Value>),
    /// A counted no: `detail.checks` names each check and approver who said no.
    Rejected(Value),
    /// A yes is still owed: `detail.approval` says for which checks and from whom.
    Pending(Value),
}

/// The approvers enrolled in `registry`'s `approver` file who may answer `check`.
pub fn approvers(registry: Option<&Version>, check: &ApprovalCheck) -> Vec<String> {
    let mut names: Vec<String> = registry
        .and_then(|version| version.classes.get(&Class::Approver))
        .into_iter()
        .flatten()
        .map(|enrolled| enrolled.name.clone())
        .filter(|name| check.allows(name))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Judges the approval records `lines` (every evidence line noted on the candidate; other
/// kinds are skipped) for the checks `owed` of the candidate `about`, under `keys`. A record
/// counts only when it names this candidate commit and check, comes from an approver the
/// check allows, and verifies as `signed` against the registry's `approver` file.
pub fn judge(owed: &[ApprovalCheck], lines: &[String], keys: Keys<'_>, about: &About) -> Judgement {
    let mut yes: Vec<Value> = Vec::new();
    let mut no: Vec<Value> = Vec::new();
    let mut pending: Vec<Value> = Vec::new();
    for check in owed {
        let mut said_yes: Vec<Value> = Vec::new();
        let mut said_no: Vec<Value> = Vec::new();
        for line in lines {
            let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default();
            if text("kind") != APPROVAL
                || text("check") != check.id
                || text("environment") != check.environment
                || text("commit") != about.commit.as_str()
                || !check.allows(text("producer"))
                || keys.record(line) != Trust::Signed
            {
                continue;
            }
            let answer = json!({
                "check": check.id,
                "environment": check.environment,
                "approver": text("producer"),
                "verdict": text("verdict"),
                "why": text("why"),
                "record": text("id"),
            });
            match Verdict::parse(text("verdict")) {
                Some(Verdict::Pass) => said_yes.push(answer),
                // A signed word that is not a yes is never one.
                _ => said_no.push(answer),
            }
        }
        if !said_no.is_empty() {
            no.extend(said_no);
        } else if let Some(first) = said_yes.into_iter().next() {
            yes.push(first);
        } else {
            let approvers = approvers(keys.registry, check);
            let mut entry = json!({
                "check": check.id,
                "environment": check.environment,
                "approvers": approvers,
            });
            if let Some(producers) = &check.producers {
                entry["producers"] = json!(producers);
            }
            if keys.registry.is_none() {
                entry["why"] = Value::from(
                    "the remote holds no key registry, so no approval can count; enrol an \
                     approver with `bay enrol approver <name> <key.pub>`",
                );
            } else if approvers.is_empty() {
                entry["why"] = Value::from(
                    "no approver this check allows is enrolled in the registry's approver file",
                );
            }
            pending.push(entry);
        }
    }
    if !no.is_empty() {
        let names: Vec<&str> = no.iter().filter_map(|a| a["approver"].as_str()).collect();
        return Judgement::Rejected(json!({
            "candidate": about.candidate,
            "commit": about.commit,
            "why": format!("rejected by {}", names.join(", ")),
            "checks": no,
        }));
    }
    if pending.is_empty() {
        return Judgement::Approved(yes);
    }
    Judgement::Pending(json!({
        "candidate": about.candidate,
        "commit": about.commit,
        "tree": about.tree,
        "checks": pending,
        "approve": format!("bay approve {}", about.change),
        "reject": format!("bay reject {}", about.change),
        "record": record_command(about, owed),
    }))
}

/// The `bay evidence record` command that records a yes by hand for the first owed check.
pub fn record_command(about: &About, owed: &[ApprovalCheck]) -> String {
    let check = owed.first();
    format!(
        "bay evidence record --kind approval --verdict pass --commit {} --check {} \
         --environment {}",
        about.commit,
        check.map_or("<check>", |c| c.id.as_str()),
        check.map_or("<environment>", |c| c.environment.as_str()),
    )
}

#[cfg(test)]
mod tests;
