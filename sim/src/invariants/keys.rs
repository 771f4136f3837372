//! S18 and S19: what a merge's signature must be when it lands on a main whose remote keeps a
//! key registry that signs everything. Both are judged from the model's own objects with
//! core's verifier, never from what a runner says of its merge.
//!
//! - S18, a forged signature never counts: the merge commit carries a signature that verifies
//!   (SSHSIG, namespace `git`, over the commit as Git signs it) against a key some version of
//!   the registry enrolled in its `executor` file. A signature over other bytes, or by a key
//!   no version enrolled, fails it.
//! - S19, a removed key never lands: the pushing machine read the registry after the candidate
//!   was built and signed, and the version it read still enrols the key that signed it. A key
//!   taken out (`revoked` or `rotated`) before that read lands nothing it signed.
//! - S20, an approval counts only for the candidate it signed: a merge whose base's policy
//!   owes a person's yes for the paths it changes (`approval::required`) carries, in some
//!   producer's evidence notes on its very commit, an `approval` of each such check with a
//!   `pass` verdict that names that commit, by an approver the check allows, whose signature
//!   core finds good against the registry's `approver` file. (The world's approval checks set
//!   `carry = false`, so no yes of an earlier candidate may stand in.)

use std::collections::BTreeMap;

use bay_core::approval;
use bay_core::check::plan::POLICY_PATH;
use bay_core::git::{Oid, refs};
use bay_core::policy::ApprovalCheck;
use bay_core::trust::registry::{self, COMMIT_NAMESPACE, Class, REF, Version, split_signed};
use bay_core::trust::{AllowedSigners, sshsig, verify_by_key};
use bay_core::trust::{Keys, Trust};

use super::{Invariant, Violation};
use crate::git_model::GitModel;

/// When the pushing machine last read the registry (virtual time, and the tip it read).
pub type Read = (u64, Option<Oid>);

/// Each registry tip as S18 and S19 read it, judged once: the registry changes rarely, and a
/// judgement verifies every version's signature.
#[derive(Debug, Default)]
pub struct Memo {
    /// The tip's version, judged whole (none when it breaks a rule).
    versions: BTreeMap<Oid, Option<Version>>,
    /// Every key any version up to the tip enrolled as an executor.
    ever: BTreeMap<Oid, AllowedSigners>,
}

impl Memo {
    /// Judges the merge `commit` that just landed on main, pushed by a machine whose last read
    /// of the registry was `read`, built at `built`.
    pub fn judge_merge(
        &mut self,
        git: &GitModel,
        at: u64,
        commit: &Oid,
        read: Option<&Read>,
        built: Option<u64>,
    ) -> Vec<Violation> {
        let Some(tip) = git.remote.get(REF) else {
            return Vec::new();
        };
        let violation = |invariant, what: String| Violation {
            invariant,
            at,
            what: format!("merge {}: {what}", commit.short()),
        };
        let raw = git.raw_commit(commit).unwrap_or_default();
        let Some((payload, signature)) = split_signed(&raw) else {
            return vec![violation(
                Invariant::ForgedNeverCounts,
                "lands with no signature on a main whose registry signs everything".into(),
            )];
        };
        let mut found = Vec::new();
        let ever = self
            .ever
            .entry(tip.clone())
            .or_insert_with(|| every_executor(git, tip));
        if !verify_by_key(
            ever,
            COMMIT_NAMESPACE,
            payload.as_bytes(),
            signature.as_bytes(),
        )
        .is_good()
        {
            found.push(violation(
                Invariant::ForgedNeverCounts,
                "its signature verifies against no executor key the registry ever enrolled".into(),
            ));
        }
        let key = sshsig::signer(signature.as_bytes()).ok();
        let fresh = match (read, built) {
            (Some((read_at, _)), Some(built)) => *read_at >= built,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let enrolled = read
            .and_then(|(_, tip)| tip.as_ref())
            .and_then(|tip| {
                self.versions
                    .entry(tip.clone())
                    .or_insert_with(|| version_at(git, tip))
                    .as_ref()
            })
            .zip(key.as_ref())
            .is_some_and(|(version, key)| version.enrols(Class::Executor, key));
        if !fresh {
            found.push(violation(
                Invariant::RemovedKeyNeverLands,
                "its pusher did not read the registry after the candidate was signed".into(),
            ));
        } else if !enrolled {
            found.push(violation(
                Invariant::RemovedKeyNeverLands,
                "the registry its pusher read last no longer enrols the key that signed it".into(),
            ));
        }
        found
    }
}

impl Memo {
    /// S20 on the merge `commit` that just landed: how many yeses it owed, and what it broke.
    pub fn judge_approvals(
        &mut self,
        git: &GitModel,
        at: u64,
        commit: &Oid,
    ) -> (usize, Vec<Violation>) {
        let Some(tip) = git.remote.get(REF) else {
            return (0, Vec::new());
        };
        let Some(base) = git
            .store
            .get(commit)
            .and_then(|c| c.parents.first().cloned())
        else {
            return (0, Vec::new());
        };
        let Some(Ok(policy)) = git.store.policy(&base, POLICY_PATH) else {
            return (0, Vec::new());
        };
        let paths: Vec<String> = git
            .store
            .stats(&base, commit)
            .unwrap_or_default()
            .into_iter()
            .map(|stat| stat.path)
            .collect();
        let owed = approval::required(&policy, &paths);
        if owed.is_empty() {
            return (0, Vec::new());
        }
        let version = self
            .versions
            .entry(tip.clone())
            .or_insert_with(|| version_at(git, tip))
            .as_ref();
        let keys = Keys {
            registry: version,
            signing: policy.signing,
        };
        let lines: Vec<&str> = git
            .remote
            .refs
            .iter()
            .filter(|(name, _)| name.starts_with(refs::EVIDENCE))
            .flat_map(|(_, notes)| git.notes.records(notes, commit))
            .collect();
        let found = owed
            .iter()
            .filter(|check| !lines.iter().any(|line| counts(check, line, keys, commit)))
            .map(|check| Violation {
                invariant: Invariant::ApprovalForItsCandidate,
                at,
                what: format!(
                    "merge {} owed a yes for {} and no yes signed for that very commit counts",
                    commit.short(),
                    check.id
                ),
            })
            .collect();
        (owed.len(), found)
    }
}

/// Whether `line` is a counted yes of `check` for `commit`, read here, not by core's judge.
fn counts(check: &ApprovalCheck, line: &str, keys: Keys<'_>, commit: &Oid) -> bool {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str(line) else {
        return false;
    };
    let text = |key: &str| {
        map.get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    };
    text("kind") == "approval"
        && text("check") == check.id
        && text("environment") == check.environment
        && text("verdict") == "pass"
        && text("commit") == commit.as_str()
        && check.allows(text("producer"))
        && keys.record(line) == Trust::Signed
}

/// The registry at `tip`, judged whole.
fn version_at(git: &GitModel, tip: &Oid) -> Option<Version> {
    registry::judge_chain(&git.read_registry(tip).ok()?).ok()
}

/// Every key any version of the registry up to `tip` enrolled in its `executor` file.
fn every_executor(git: &GitModel, tip: &Oid) -> AllowedSigners {
    let text: String = git
        .read_registry(tip)
        .unwrap_or_default()
        .iter()
        .filter_map(|commit| Version::read(&commit.files).ok())
        .map(|version| version.signers_text(Class::Executor))
        .collect();
    AllowedSigners::parse(&text).unwrap_or_default()
}
