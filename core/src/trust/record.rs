//! Trust levels on records: what bay says a merge or an evidence record really is, from the
//! registry as read now, never from what the record claims.
//!
//! - `signed`: the registry signs everything and the record's signature verifies against the
//!   class file that may sign it (a merge: `executor`; a runner's or producer's evidence:
//!   `producer`, under the record's `producer`).
//! - `approvals`: the registry signs only approvals (`[policy] signing = "approvals"`), so
//!   everything else runs unsigned and says so.
//! - `unsigned`: no registry, or a signature that is absent or does not verify, whatever the
//!   record says of itself.
//!
//! A key taken out of its class still vouches for what it signed before its removal when the
//! removal says `rotated` (by the time the record gives), and for nothing when it says
//! `revoked`.
//!
//! The runner's own keys are judged here too ([`runner_keys`]): with a registry that signs
//! everything, a runner signs every merge with its `executor` key and every record with its
//! `producer` key, so one without both enrolled refuses `RUNNER_KEY_MISSING` before it claims.

use serde::Serialize;
use serde_json::Value;

use super::key::PublicKey;
use super::registry::{COMMIT_NAMESPACE, Class, Reason, Version, split_signed};
use super::sshsig::{self, Verdict};
use crate::policy::Signing;
use crate::time::Timestamp;

/// The namespace an evidence record's signature is made under.
pub const EVIDENCE_NAMESPACE: &str = "bay-evidence";
/// The field of an evidence record that holds its signature, left out of what is signed.
pub const SIGNATURE: &str = "signature";

/// How far a record is trusted: `detail.trust`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    Signed,
    Approvals,
    Unsigned,
}

impl Trust {
    pub fn as_str(self) -> &'static str {
        match self {
            Trust::Signed => "signed",
            Trust::Approvals => "approvals",
            Trust::Unsigned => "unsigned",
        }
    }
}

/// What a reader knows of the keys: the registry as it read it (none when the remote holds
/// none) and the mode the policy at the base sets.
#[derive(Clone, Copy, Debug)]
pub struct Keys<'a> {
    pub registry: Option<&'a Version>,
    pub signing: Signing,
}

impl Keys<'_> {
    /// Whether records must be signed to count as signed: a registry that signs everything.
    pub fn signs_everything(&self) -> bool {
        self.registry.is_some() && self.signing == Signing::All
    }

    /// The trust of a record that needs no signature under these keys, if it needs none.
    fn unsigned_level(&self) -> Option<Trust> {
        match (self.registry, self.signing) {
            (None, _) => Some(Trust::Unsigned),
            (Some(_), Signing::Approvals) => Some(Trust::Approvals),
            (Some(_), Signing::All) => None,
        }
    }

    /// The trust of a merge commit, raw as Git stores it: signed as Git signs commits by a
    /// key of the `executor` file.
    pub fn commit(&self, raw: &str) -> Trust {
        if let Some(level) = self.unsigned_level() {
            return level;
        }
        let Some(registry) = self.registry else {
            return Trust::Unsigned;
        };
        let Some((payload, signature)) = split_signed(raw) else {
            return Trust::Unsigned;
        };
        let verdict = sshsig::verify_by_key(
            &registry.signers(Class::Executor),
            COMMIT_NAMESPACE,
            payload.as_bytes(),
            signature.as_bytes(),
        );
        let signed_at = committer_time(raw);
        level(registry, Class::Executor, None, verdict, signed_at, || {
            sshsig::signer(signature.as_bytes()).ok().and_then(|key| {
                good_key(&key, COMMIT_NAMESPACE, payload.as_bytes(), &signature).then_some(key)
            })
        })
    }

    /// The trust of one evidence record line: signed over [`canonical`] bytes under
    /// [`EVIDENCE_NAMESPACE`] by a key of the class file its kind names ([`signer_class`]),
    /// enrolled under the record's `producer`. An approval or a waiver needs its signature
    /// under `signing = "approvals"` too.
    pub fn record(&self, line: &str) -> Trust {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
            return self.unsigned_level().unwrap_or(Trust::Unsigned);
        };
        let class = signer_class(map.get("kind").and_then(Value::as_str).unwrap_or_default());
        if let Some(level) = self.unsigned_level()
            && !(class == Class::Approver && self.registry.is_some())
        {
            return level;
        }
        let Some(registry) = self.registry else {
            return Trust::Unsigned;
        };
        let (Some(Value::String(signature)), Some(Value::String(producer))) =
            (map.get(SIGNATURE), map.get("producer"))
        else {
            return Trust::Unsigned;
        };
        let Ok(bytes) = canonical(line) else {
            return Trust::Unsigned;
        };
        let verdict = sshsig::verify(
            &registry.signers(class),
            producer,
            EVIDENCE_NAMESPACE,
            &bytes,
            signature.as_bytes(),
        );
        let signed_at = map.get("at").and_then(Value::as_u64).map(Timestamp);
        level(registry, class, Some(producer), verdict, signed_at, || {
            sshsig::signer(signature.as_bytes()).ok().and_then(|key| {
                good_key(&key, EVIDENCE_NAMESPACE, &bytes, signature).then_some(key)
            })
        })
    }
}

/// The registry file whose keys may sign an evidence record of `kind`: a `review` only the
/// `reviewer` file, an `approval` or a `waiver` only the `approver` file, any other kind the
/// `producer` file. So a reviewer key never counts toward a check.
pub fn signer_class(kind: &str) -> Class {
    match kind {
        crate::review::REVIEW => Class::Reviewer,
        "approval" | "waiver" => Class::Approver,
        _ => Class::Producer,
    }
}

/// The level a verdict gives: good is signed; a key no longer in its class still vouches
/// when a `rotated` removal of it, under the same name, came after the record was signed.
fn level(
    registry: &Version,
    class: Class,
    name: Option<&str>,
    verdict: Verdict,
    signed_at: Option<Timestamp>,
    removed_signer: impl FnOnce() -> Option<PublicKey>,
) -> Trust {
    match verdict {
        Verdict::Good { .. } => Trust::Signed,
        Verdict::KeyNotAllowed { .. } | Verdict::PrincipalUnknown { .. } => {
            let (Some(at), Some(key)) = (signed_at, removed_signer()) else {
                return Trust::Unsigned;
            };
            let rotated_after = registry.removed.iter().any(|removal| {
                removal.class == class
                    && removal.key == key
                    && name.is_none_or(|name| removal.name == name)
                    && removal.reason == Reason::Rotated
                    && at < removal.at
            });
            let revoked = registry
                .removed
                .iter()
                .any(|removal| removal.key == key && removal.reason == Reason::Revoked);
            if rotated_after && !revoked {
                Trust::Signed
            } else {
                Trust::Unsigned
            }
        }
        _ => Trust::Unsigned,
    }
}

/// Whether `key` made `signature` over `message` under `namespace`, whoever enrolled it.
fn good_key(key: &PublicKey, namespace: &str, message: &[u8], signature: &str) -> bool {
    let line = format!("any {}\n", key.openssh());
    let Ok(signers) = super::AllowedSigners::parse(&line) else {
        return false;
    };
    sshsig::verify_by_key(&signers, namespace, message, signature.as_bytes()).is_good()
}

/// The committer time of a raw commit, to the second.
fn committer_time(raw: &str) -> Option<Timestamp> {
    let headers = raw.split_once("\n\n").map_or(raw, |(headers, _)| headers);
    let line = headers.lines().find_map(|l| l.strip_prefix("committer "))?;
    let mut fields = line.rsplit(' ');
    let _zone = fields.next()?;
    let secs: u64 = fields.next()?.parse().ok()?;
    Some(Timestamp::from_secs(secs))
}

/// The bytes an evidence record's signature covers: the record as a JSON object without its
/// [`SIGNATURE`], its keys sorted, with no spaces. Whoever writes the line, and in whatever
/// key order, the same record gives the same bytes.
pub fn canonical(line: &str) -> Result<Vec<u8>, String> {
    let mut value: Value =
        serde_json::from_str(line).map_err(|e| format!("the record is not JSON ({e})"))?;
    let Value::Object(map) = &mut value else {
        return Err("the record is not a JSON object".into());
    };
    map.remove(SIGNATURE);
    Ok(serde_json::to_vec(&value).expect("a JSON value always serializes"))
}

/// The record `line` with `signature` added under [`SIGNATURE`] (replacing any), as one
/// line.
pub fn with_signature(line: &str, signature: &str) -> Result<String, String> {
    let mut value: Value =
        serde_json::from_str(line).map_err(|e| format!("the record is not JSON ({e})"))?;
    let Value::Object(map) = &mut value else {
        return Err("the record is not a JSON object".into());
    };
    map.insert(SIGNATURE.into(), Value::String(signature.to_owned()));
    Ok(serde_json::to_string(&value).expect("a JSON value always serializes"))
}

/// What the runner signs with, once its keys are judged: the paths of the private halves
/// (for the driver) and their public halves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RunnerSigner {
    /// `bay.executorKey`: signs candidates and merges.
    pub executor_key: String,
    /// `bay.producerKey`: signs the runner's evidence records.
    pub producer_key: String,
    /// The registry's `executor` file as judged: each candidate's signature is verified
    /// against it before the candidate goes further.
    #[serde(default)]
    pub executor_signers: String,
    /// The executor key's public half (`<keytype> <base64>`): the runner stops signing once
    /// the registry no longer enrols it (`REGISTRY_CHANGED`).
    #[serde(default)]
    pub executor_public: String,
}

/// One of the runner's keys as this machine found it: the path Git config names, and its
/// public half or why there is none (a file bay cannot read or sign with).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySetting {
    pub path: String,
    pub public: Result<PublicKey, String>,
}

/// Why a runner's key cannot sign: one entry of `RUNNER_KEY_MISSING`'s `detail.keys`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeyProblem {
    /// `bay.executorKey` or `bay.producerKey`.
    pub setting: &'static str,
    pub class: Class,
    pub why: String,
}

/// Judges the runner's keys against what the remote holds: `Ok(None)` when it signs nothing
/// (no registry, or `signing = "approvals"`), `Ok(Some)` with what it signs with, and the
/// problems when a key is missing or not enrolled. The producer key must be enrolled under
/// the runner's name, which its records name as their producer.
pub fn runner_keys(
    registry: Option<&Version>,
    signing: Signing,
    runner: &str,
    executor: Option<&KeySetting>,
    producer: Option<&KeySetting>,
) -> Result<Option<RunnerSigner>, Vec<KeyProblem>> {
    let Some(registry) = registry else {
        return Ok(None);
    };
    if signing == Signing::Approvals {
        return Ok(None);
    }
    let mut problems = Vec::new();
    let mut judge = |setting: &'static str, class: Class, key: Option<&KeySetting>| {
        let problem = |why: String| KeyProblem {
            setting,
            class,
            why,
        };
        let Some(key) = key else {
            problems.push(problem(format!("{setting} is not set in Git config")));
            return None;
        };
        let public = match &key.public {
            Ok(public) => public,
            Err(why) => {
                problems.push(problem(format!("{setting} ({}): {why}", key.path)));
                return None;
            }
        };
        let enrolled = registry
            .classes
            .get(&class)
            .into_iter()
            .flatten()
            .find(|enrolled| enrolled.key == *public);
        match enrolled {
            None => {
                problems.push(problem(format!(
                    "the key {} is not enrolled in the registry's `{}` file",
                    public.fingerprint(),
                    class.as_str()
                )));
                None
            }
            Some(enrolled) if class == Class::Producer && enrolled.name != runner => {
                problems.push(problem(format!(
                    "the key {} is enrolled as producer {}, not under this runner's name {runner}",
                    public.fingerprint(),
                    enrolled.name
                )));
                None
            }
            Some(_) => Some(key.path.clone()),
        }
    };
    let executor_key = judge("bay.executorKey", Class::Executor, executor);
    let executor_public = executor
        .and_then(|key| key.public.as_ref().ok())
        .map(|key| key.openssh().to_owned())
        .unwrap_or_default();
    let producer_key = judge("bay.producerKey", Class::Producer, producer);
    match (executor_key, producer_key) {
        (Some(executor_key), Some(producer_key)) => Ok(Some(RunnerSigner {
            executor_key,
            producer_key,
            executor_signers: registry.signers_text(Class::Executor),
            executor_public,
        })),
        _ => Err(problems),
    }
}

#[cfg(test)]
mod tests;
