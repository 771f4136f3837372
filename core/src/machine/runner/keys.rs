//! The key registry, read again right before each push that moves main, when the runner
//! signs: bay's own checks read the current registry, so a key the registry took out of its
//! `executor` file since the candidate was signed never lands on main with that signature.
//!
//! - The registry still enrols the key (under any name): the push goes out.
//! - It does not, and the candidate was taken up again after an approval, signed by another
//!   runner: this runner signs the same tree on the same parent again itself.
//! - It does not (removed, `rotated` or `revoked`): the claim goes back `REGISTRY_CHANGED`,
//!   and the operation keeps its place. A runner whose own key is out claims nothing more
//!   until it starts again with an enrolled key. A runner with a valid key takes the
//!   operation up and signs the same tree on the same parent again (a new candidate), with
//!   no check run again: the passes of the candidate it stands for stand. A check keyed to
//!   the commit (an approval) is owed again, since it names the old commit.
//! - A registry that cannot be read, or breaks a rule, gives the claim back: nothing is
//!   merged unjudged.
//!
//! The tip judged last is remembered: a fetch that finds it again reads nothing more.

use super::Runner;
use super::work::{Phase, Placed, Purpose, Then, Work, Write};
use crate::git::Oid;
use crate::id::CandidateId;
use crate::machine::{Action, Fault, FetchSpec, Refs};
use crate::policy::Policy;
use crate::reason::ReasonCode;
use crate::trust::PublicKey;
use crate::trust::registry::{Class, REF as REGISTRY, RegistryCommit, Version, judge_chain};

impl Runner {
    /// Takes `version`, the registry read at `tip`, as this runner's `executor` file, and
    /// whether it still enrols every one of `keys`, the keys that signed what is about to merge
    /// (`None` for one that signed nothing it could read); then `tip` is the one last seen.
    pub(super) fn registry_enrols<'a>(
        &mut self,
        tip: Oid,
        version: &Version,
        keys: impl IntoIterator<Item = Option<&'a PublicKey>>,
    ) -> bool {
        if let Some(signer) = self.cfg.signer.as_mut() {
            signer.executor_signers = version.signers_text(Class::Executor);
        }
        let enrolled = keys
            .into_iter()
            .all(|key| key.is_some_and(|key| version.enrols(Class::Executor, key)));
        #[cfg(feature = "mutants")]
        let enrolled = enrolled || self.mutant_ignores_removal();
        if enrolled {
            self.keys_seen = Some(tip);
        }
        enrolled
    }

    /// Folds a fetch of the registry (`spec`, answered `fetched`) into what this runner knows:
    /// the registry's tip now, if the remote holds one.
    pub(super) fn registry_tip(&mut self, spec: FetchSpec, fetched: Refs) -> Option<Oid> {
        spec.apply(&mut self.refs, fetched);
        self.refs.get(REGISTRY).cloned()
    }

    /// Whether the push that moves main waits for the registry to be read first: when this
    /// runner signs and the candidate's signature verified, until the read clears it.
    pub(super) fn reading_keys_before_push(&mut self, work: &mut Work, write: &Write) -> bool {
        if work.keys_cleared || self.cfg.signer.is_none() {
            return false;
        }
        let signed = work
            .phase
            .candidate()
            .is_some_and(|candidate| candidate.built.signed);
        if !signed {
            return false;
        }
        // A registry that is gone is judged below.
        let spec = FetchSpec::new([crate::trust::registry::fetch_pattern()]);
        let action = Action::Fetch(spec.clone());
        self.send_work(action, Purpose::KeysFetch(Box::new(write.clone()), spec));
        true
    }

    pub(super) fn on_keys_fetched(
        &mut self,
        work: Box<Work>,
        write: Write,
        spec: FetchSpec,
        result: Result<Refs, Fault>,
    ) -> Placed {
        let fetched = match result {
            Ok(fetched) => fetched,
            Err(fault) => return self.keys_unread(work, "fetch", &fault),
        };
        let Some(tip) = self.registry_tip(spec, fetched) else {
            let why = "the remote holds no key registry now, so the candidate's signature \
                       cannot be judged"
                .to_owned();
            return self.release(work, Some(ReasonCode::RegistryChanged), why);
        };
        if self.keys_seen.as_ref() == Some(&tip) {
            return self.keys_cleared(work, write);
        }
        let read = Action::ReadRegistry { tip: tip.clone() };
        self.send_work(read, Purpose::KeysRead(Box::new(write), tip));
        self.keep(work)
    }

    pub(super) fn on_keys_read(
        &mut self,
        mut work: Box<Work>,
        write: Write,
        tip: Oid,
        result: Result<Vec<RegistryCommit>, Fault>,
    ) -> Placed {
        let chain = match result {
            Ok(chain) => chain,
            Err(fault) => return self.keys_unread(work, "read", &fault),
        };
        let version = match judge_chain(&chain) {
            Ok(version) => version,
            Err(broken) => {
                let why = format!("the key registry breaks a rule: {}", broken.why);
                return self.release(work, Some(ReasonCode::RegistryUnreadable), why);
            }
        };
        let key = work
            .phase
            .candidate()
            .and_then(|candidate| candidate.built.signed_by.clone());
        if self.registry_enrols(tip, &version, [key.as_deref()]) {
            return self.keys_cleared(work, write);
        }
        // This runner's own key out of the file: it signs nothing more.
        let own = self
            .cfg
            .signer
            .as_ref()
            .map(|signer| signer.executor_public.as_str())
            .unwrap_or_default();
        self.withdrawn = !version
            .classes
            .get(&Class::Executor)
            .into_iter()
            .flatten()
            .any(|enrolled| enrolled.key.openssh() == own);
        let why = format!(
            "the key registry no longer enrols the executor key {} that signed the candidate; \
             a runner with a valid key signs the same tree again",
            key.map_or_else(|| "?".to_owned(), |key| key.fingerprint())
        );
        // A candidate taken up again after an approval, signed by another runner's key that
        // is out now: this runner signs the same tree on the same parent again itself.
        if let Phase::Checking(checking) = &work.phase
            && checking.candidate.built.resumed
            && !self.withdrawn
        {
            let policy = checking.policy.clone();
            work.resign = true;
            return self.build(work, policy);
        }
        let mut write = write;
        // The last check's pass still goes up, so that the runner that signs the candidate
        // again finds it recorded.
        if let Write::Check { then, .. } = &mut write
            && matches!(then, Then::Merge(_))
        {
            *then = Then::Release(ReasonCode::RegistryChanged, why);
            return self.write(work, write);
        }
        self.release(work, Some(ReasonCode::RegistryChanged), why)
    }

    /// The registry could not be fetched or read: nothing merges unjudged.
    fn keys_unread(&mut self, work: Box<Work>, what: &str, fault: &Fault) -> Placed {
        let why = format!("could not {what} the key registry before the merge: {fault}");
        self.release(work, None, why)
    }

    fn keys_cleared(&mut self, mut work: Box<Work>, write: Write) -> Placed {
        work.keys_cleared = true;
        self.write(work, write)
    }

    /// Whether this runner gave up signing: the registry took its executor key out.
    pub(super) fn withdrawn(&self) -> bool {
        self.withdrawn
    }

    /// The recorded candidate a candidate of `tree` signs again: the operation's last, built
    /// on the same main, after its claim went back `REGISTRY_CHANGED` (or `APPROVAL_PENDING`,
    /// when its signature no longer verifies) with no check of it recorded short of a pass.
    pub(super) fn signed_again(
        &self,
        work: &Work,
        tree: &Oid,
        policy: &Policy,
    ) -> Option<CandidateId> {
        let released = match work.resign {
            true => ReasonCode::ApprovalPending,
            false => ReasonCode::RegistryChanged,
        };
        Runner::taken_up(work, released, policy)
            .filter(|candidate| candidate.tree == *tree)
            .map(|candidate| candidate.id.clone())
    }
}
