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

use std::collections::BTreeMap;

use bay_core::git::Oid;
use bay_core::trust::registry::{self, COMMIT_NAMESPACE, Class, REF, Version, split_signed};
use bay_core::trust::{AllowedSigners, sshsig, verify_by_key};

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
            .is_some_and(|(version, key)| {
                version
                    .classes
                    .get(&Class::Executor)
                    .into_iter()
                    .flatten()
                    .any(|enrolled| enrolled.key == *key)
            });
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
