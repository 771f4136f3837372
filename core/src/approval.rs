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
//! A yes holds for later candidates of the same change while every file under the check's
//! `when_paths` is byte for byte the same, in the candidate and in its base, and the policy
//! too ([`carries`], [`changed_under`]); `carry = false` asks on every candidate. A no never
//! carries, and one on the same files stops a yes from carrying ([`Carry::outcome`]).

mod detail;

use serde_json::{Map, Value};

pub use self::detail::{CarriedFrom, Counted, OldestWaiting, Owed, Pending, Rejected, SetAside};
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
/// The kind a waiver record has: never a pass, its verdict is always `unknown`.
pub const WAIVER: &str = "waiver";

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

impl About {
    /// The candidate `candidate` of `change`, as its record holds it.
    pub fn candidate(
        change: &crate::id::ChangeId,
        candidate: &crate::record::CandidateRec,
    ) -> About {
        About {
            change: change.to_string(),
            candidate: candidate.id.to_string(),
            commit: candidate.commit.clone(),
            tree: candidate.tree.clone(),
            base_tree: Some(candidate.base_tree.clone()),
        }
    }
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

/// The waiver by `answer.approver` of the failed check `answer.check` on the candidate
/// `about`, whose real verdict was `waived`: a record of kind `waiver` whose own verdict is
/// always `unknown`, written at `at`, unsigned until the driver signs it.
pub fn waiver(answer: &Answer, waived: Verdict, about: &About, at: Timestamp) -> String {
    let line = record(answer, about, at);
    let mut value: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let inputs = vec![
        ("check".to_owned(), answer.check.clone()),
        ("environment".to_owned(), answer.environment.clone()),
    ];
    value["kind"] = Value::from(WAIVER);
    value["id"] = Value::from(record_id(
        &answer.approver,
        WAIVER,
        &about.commit,
        &inputs,
        None,
    ));
    value["verdict"] = Value::from(Verdict::Unknown.as_str());
    value["waived_verdict"] = Value::from(waived.as_str());
    serde_json::to_string(&value).expect("a JSON object always serializes")
}

/// A counted waiver of one check on one candidate: the coverage gap a merge names for it,
/// with the verdict the check really had.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Waived {
    pub check: String,
    pub environment: String,
    /// The check's own verdict, which the waiver does not turn into a pass.
    pub verdict: String,
    pub waived_by: String,
    pub why: String,
    /// The waiver record's id.
    pub record: String,
}

/// The coverage gap of a counted waiver of `check` among `lines` for a candidate of `tree`
/// on a base of `base_tree`: one candidate's content, never carried to another. It counts
/// only signed by a key of the registry's `approver` file under its `producer`.
pub fn waived(
    check: &crate::policy::CheckSpec,
    lines: &[String],
    keys: Keys<'_>,
    tree: &Oid,
    base_tree: &Oid,
) -> Option<Waived> {
    lines.iter().find_map(|line| {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
            return None;
        };
        let text = |key: &str| {
            map.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let counts = text("kind") == WAIVER
            && text("check") == check.id
            && text("environment") == check.environment
            && text("tree") == tree.as_str()
            && text("base_tree") == base_tree.as_str()
            && keys.record(line) == Trust::Signed;
        counts.then(|| Waived {
            check: check.id.clone(),
            environment: check.environment.clone(),
            verdict: text("waived_verdict"),
            waived_by: text("producer"),
            why: text("why"),
            record: text("id"),
        })
    })
}

/// The id of an approval or waiver record line, if it is one.
pub fn record_id_of(line: &str) -> Option<String> {
    let value: Value = serde_json::from_str(line).ok()?;
    matches!(value.get("kind")?.as_str()?, APPROVAL | WAIVER)
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
    Approved(Vec<Counted>),
    /// A counted no: `detail.checks` names each check and approver who said no.
    Rejected(Rejected),
    /// A yes is still owed: `detail.approval` says for which checks and from whom.
    Pending(Pending),
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

/// The counted answers among `lines` for `check` on the candidate `commit`: the yeses and the
/// noes. A record counts only when it names this commit and check,
/// comes from an approver the check allows, and verifies as `signed` against the registry's
/// `approver` file; a signed word that is not a yes is a no.
fn counted(
    check: &ApprovalCheck,
    lines: &[String],
    keys: Keys<'_>,
    commit: &Oid,
) -> (Vec<Counted>, Vec<Counted>) {
    let mut yes = Vec::new();
    let mut no = Vec::new();
    for line in lines {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default();
        if text("kind") != APPROVAL
            || text("check") != check.id
            || text("environment") != check.environment
            || text("commit") != commit.as_str()
            || !check.allows(text("producer"))
            || keys.record(line) != Trust::Signed
        {
            continue;
        }
        let answer = Counted {
            check: check.id.clone(),
            environment: check.environment.clone(),
            approver: text("producer").to_owned(),
            verdict: text("verdict").to_owned(),
            why: text("why").to_owned(),
            record: text("id").to_owned(),
            carried: None,
        };
        match Verdict::parse(text("verdict")) {
            Some(Verdict::Pass) => yes.push(answer),
            _ => no.push(answer),
        }
    }
    (yes, no)
}

/// An earlier candidate of the same change: its commit and the main commit it was built on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Earlier {
    pub commit: Oid,
    pub base: Oid,
}

/// A yes on an earlier candidate that may hold for this one, once the files under the
/// check's `when_paths` are compared: in the two candidates and in their bases.
#[derive(Clone, Debug, PartialEq)]
pub struct Carry {
    pub check: String,
    pub from: Earlier,
    /// The counted yes.
    pub answer: Counted,
    /// The counted noes of the check on earlier candidates, each with its candidate: one on
    /// the same files as this candidate's stops the yes from carrying.
    pub noes: Vec<(Earlier, Counted)>,
}

/// A comparison of an earlier candidate with this one: the paths that differ between the two
/// candidates and between their bases, or why they could not be compared.
pub type Compared = Result<(Vec<String>, Vec<String>), String>;

impl Carry {
    /// The candidates whose files are compared with this one: the yes's, then each no's.
    pub fn compared(&self) -> impl Iterator<Item = &Earlier> {
        std::iter::once(&self.from).chain(self.noes.iter().map(|(earlier, _)| earlier))
    }

    /// What became of the yes under `check`, given for each of [`Carry::compared`], in order,
    /// the paths that differ between the two candidates and between their bases, or why they
    /// could not be compared. It holds while no covered file changed since the yes, and no no
    /// was said on files that are the same as this candidate's; a comparison that could not be
    /// made keeps nothing the same for a yes, and everything the same for a no (the stricter
    /// reading each way: a yes it cannot vouch for is set aside, a no it cannot tell apart
    /// stops it).
    pub fn outcome(&self, check: &ApprovalCheck, diffs: &[Compared]) -> Carried {
        let record = self.answer.record.clone();
        let changed = |index: usize| match diffs.get(index) {
            Some(Ok((candidates, bases))) => Ok(changed_under(check, candidates, bases)),
            Some(Err(why)) => Err(why.clone()),
            None => Err("no comparison was made".to_owned()),
        };
        match changed(0) {
            Err(why) => {
                return Carried::SetAside(SetAside::Uncompared {
                    record,
                    why: format!("could not compare the files: {why}"),
                });
            }
            Ok(paths) if !paths.is_empty() => {
                return Carried::SetAside(SetAside::Changed { record, paths });
            }
            Ok(_) => {}
        }
        let same_as_a_no = self
            .noes
            .iter()
            .enumerate()
            .find(|(index, _)| changed(index + 1).map_or(true, |paths| paths.is_empty()));
        if let Some((_, (_, no))) = same_as_a_no {
            return Carried::SetAside(SetAside::Stopped {
                record,
                stopped_by: no.record.clone(),
                why: "a no on the same files stops this yes from carrying",
            });
        }
        Carried::Holds(Counted {
            carried: Some(CarriedFrom {
                carried_from: record,
                from_commit: self.from.commit.clone(),
            }),
            ..self.answer.clone()
        })
    }
}

/// The yeses that may carry to the candidate `about`: for each owed check that has no counted
/// answer on it and does not set `carry = false`, the counted yes on the latest of `earlier`
/// (oldest first) that has one, with the check's counted noes on the others: a no never
/// carries, and one on the same files stops the yes ([`Carry::outcome`]).
pub fn carries(
    owed: &[ApprovalCheck],
    lines: &[String],
    keys: Keys<'_>,
    about: &About,
    earlier: &[Earlier],
) -> Vec<Carry> {
    let mut found = Vec::new();
    for check in owed.iter().filter(|check| check.carry != Some(false)) {
        let (yes, no) = counted(check, lines, keys, &about.commit);
        if !yes.is_empty() || !no.is_empty() {
            continue;
        }
        let answers: Vec<(&Earlier, Vec<Counted>, Vec<Counted>)> = earlier
            .iter()
            .filter(|e| e.commit != about.commit)
            .map(|e| {
                let (yes, no) = counted(check, lines, keys, &e.commit);
                (e, yes, no)
            })
            .collect();
        let noes: Vec<(Earlier, Counted)> = answers
            .iter()
            .flat_map(|(earlier, _, no)| no.iter().map(|no| ((*earlier).clone(), no.clone())))
            .collect();
        let latest_yes = answers
            .into_iter()
            .rev()
            .find_map(|(from, yes, _)| Some((from, yes.into_iter().next()?)));
        if let Some((from, answer)) = latest_yes {
            found.push(Carry {
                check: check.id.clone(),
                from: from.clone(),
                answer,
                noes,
            });
        }
    }
    found
}

/// Whether a carried yes holds: the paths under `check`'s `when_paths` that differ between the
/// two candidates (`candidates`) or their bases (`bases`), and the policy when the bases
/// differ there, since an approval carries only under the same policy. Empty: it holds.
pub fn changed_under(
    check: &ApprovalCheck,
    candidates: &[String],
    bases: &[String],
) -> Vec<String> {
    let mut paths: Vec<String> = candidates
        .iter()
        .chain(bases)
        .filter(|path| {
            glob::any_path_matches(&check.when_paths, path)
                || path.as_str() == crate::check::plan::POLICY_PATH && bases.contains(path)
        })
        .cloned()
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// What became of a yes that may carry: it holds (its answer, naming `carried_from`), or it
/// is set aside, and why.
#[derive(Clone, Debug, PartialEq)]
pub enum Carried {
    Holds(Counted),
    SetAside(SetAside),
}

/// Judges the approval records `lines` for the checks `owed` of the candidate `about`, under
/// `keys` (see [`counted`]), with the yeses `carried` from earlier candidates by check id.
/// An answer on this candidate comes first: any counted no rejects it.
pub fn judge(
    owed: &[ApprovalCheck],
    lines: &[String],
    keys: Keys<'_>,
    about: &About,
    carried: &std::collections::BTreeMap<String, Carried>,
) -> Judgement {
    let mut yes: Vec<Counted> = Vec::new();
    let mut no: Vec<Counted> = Vec::new();
    let mut pending: Vec<Owed> = Vec::new();
    for check in owed {
        let (said_yes, said_no) = counted(check, lines, keys, &about.commit);
        if !said_no.is_empty() {
            no.extend(said_no);
            continue;
        }
        if let Some(first) = said_yes.into_iter().next() {
            yes.push(first);
            continue;
        }
        if let Some(Carried::Holds(answer)) = carried.get(&check.id) {
            yes.push(answer.clone());
            continue;
        }
        let approvers = approvers(keys.registry, check);
        let why = if keys.registry.is_none() {
            Some(
                "the remote holds no key registry, so no approval can count; enrol an \
                 approver with `bay enrol approver <name> <key.pub>`",
            )
        } else if approvers.is_empty() {
            Some("no approver this check allows is enrolled in the registry's approver file")
        } else {
            None
        };
        let set_aside = match carried.get(&check.id) {
            Some(Carried::SetAside(set_aside)) => Some(set_aside.clone()),
            _ => None,
        };
        pending.push(Owed {
            check: check.id.clone(),
            environment: check.environment.clone(),
            approvers,
            producers: check.producers.clone(),
            set_aside,
            why,
        });
    }
    if !no.is_empty() {
        let names: Vec<&str> = no.iter().map(|a| a.approver.as_str()).collect();
        return Judgement::Rejected(Rejected {
            candidate: about.candidate.clone(),
            commit: about.commit.clone(),
            why: format!("rejected by {}", names.join(", ")),
            checks: no,
            lands_by: "author_repairs",
        });
    }
    if pending.is_empty() {
        return Judgement::Approved(yes);
    }
    Judgement::Pending(Pending {
        candidate: about.candidate.clone(),
        commit: about.commit.clone(),
        tree: about.tree.clone(),
        checks: pending,
        approve: format!("bay approve {}", about.change),
        reject: format!("bay reject {}", about.change),
        record: record_command(about, owed),
    })
}

/// The live changes among `records` that wait for an approval (`APPROVAL_PENDING`): how
/// many, and the oldest (by when its wait began, on its writer's clock) with its `age_s` at
/// `now`, leaving out `except`. `detail.flow.waiting_approval` and `WIP_LIMIT`'s
/// `detail.review` both say it.
pub fn waiting_queue<'a>(
    records: impl IntoIterator<Item = &'a crate::record::ChangeRecord>,
    except: Option<&crate::id::ChangeId>,
    now: Timestamp,
) -> (usize, Option<OldestWaiting>) {
    let waiting: Vec<(&crate::record::ChangeRecord, Timestamp)> = records
        .into_iter()
        .filter(|record| Some(&record.change) != except)
        .filter_map(|record| {
            let op = record
                .live_op()
                .filter(|op| crate::report::awaits_approval(op))?;
            Some((record, op.released_at.unwrap_or(record.started_at)))
        })
        .collect();
    let oldest = waiting
        .iter()
        .min_by_key(|(record, at)| (*at, &record.change))
        .map(|(record, at)| OldestWaiting {
            change: record.change.clone(),
            intent: record.intent.clone(),
            actor: record.actor.clone(),
            age_s: now.millis_since(*at) / 1000,
        });
    (waiting.len(), oldest)
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
