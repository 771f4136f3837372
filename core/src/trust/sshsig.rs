//! SSHSIG verdicts (OpenSSH PROTOCOL.sshsig): whether an armoured signature is a good one by
//! an allowed signer, as `ssh-keygen -Y verify` judges it, and if not, why, by name.

use serde::Serialize;
use ssh_key::SshSig;

use super::key::PublicKey;
use super::signers::{AllowedSigners, Entry};

/// What a signature proves. Only `Good` counts; every other verdict names why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// A good signature by `principal`'s key (the line that allowed it is `line`).
    Good {
        principal: String,
        line: usize,
        fingerprint: String,
        algorithm: String,
    },
    /// The text is no SSHSIG signature this reader can decode.
    Malformed { why: String },
    /// The signature was made under another namespace.
    WrongNamespace { signed: String, wanted: String },
    /// The signature is not over these bytes (they were changed), or not by the key it names.
    OtherBytes,
    /// No line of the file names the principal.
    PrincipalUnknown { principal: String },
    /// The principal's lines hold other keys, or restrict the key (a namespace it may not
    /// sign under, a certificate authority, a validity window bay does not judge).
    KeyNotAllowed { fingerprint: String },
    /// The key type is one bay cannot verify.
    Unsupported { algorithm: String },
}

impl Verdict {
    pub fn is_good(&self) -> bool {
        matches!(self, Verdict::Good { .. })
    }

    /// The verdict's name, as it serializes: `good`, `other_bytes`, ...
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Good { .. } => "good",
            Verdict::Malformed { .. } => "malformed",
            Verdict::WrongNamespace { .. } => "wrong_namespace",
            Verdict::OtherBytes => "other_bytes",
            Verdict::PrincipalUnknown { .. } => "principal_unknown",
            Verdict::KeyNotAllowed { .. } => "key_not_allowed",
            Verdict::Unsupported { .. } => "unsupported",
        }
    }
}

/// A signature decoded, with the key it names.
struct Decoded {
    sig: SshSig,
    key: PublicKey,
}

fn decode(armoured: &[u8]) -> Result<Decoded, Verdict> {
    let sig = SshSig::from_pem(armoured).map_err(|e| Verdict::Malformed { why: e.to_string() })?;
    let key = PublicKey::from_data(sig.public_key().clone());
    Ok(Decoded { sig, key })
}

/// Judges `message` against `armoured` under `namespace` by the entry that allows its key.
fn judge(decoded: &Decoded, entry: &Entry, namespace: &str, message: &[u8]) -> Verdict {
    let Decoded { sig, key } = decoded;
    if sig.namespace() != namespace {
        return Verdict::WrongNamespace {
            signed: sig.namespace().to_owned(),
            wanted: namespace.to_owned(),
        };
    }
    let public = ssh_key::PublicKey::new(key.data().clone(), "");
    match public.verify(namespace, message, sig) {
        Ok(()) => Verdict::Good {
            principal: entry.principals.first().cloned().unwrap_or_default(),
            line: entry.line,
            fingerprint: key.fingerprint(),
            algorithm: key.algorithm(),
        },
        Err(ssh_key::Error::AlgorithmUnsupported { algorithm }) => Verdict::Unsupported {
            algorithm: algorithm.as_str().to_owned(),
        },
        Err(ssh_key::Error::AlgorithmUnknown) => Verdict::Unsupported {
            algorithm: key.algorithm(),
        },
        Err(_) => Verdict::OtherBytes,
    }
}

/// Whether a line lets its key sign plain signatures under `namespace`. A validity window is
/// not judged: such a line never allows.
fn usable(entry: &Entry, namespace: &str) -> bool {
    !entry.options.cert_authority
        && entry.options.valid_after.is_none()
        && entry.options.valid_before.is_none()
        && entry.allows_namespace(namespace)
}

/// `ssh-keygen -Y verify -f <signers> -I <principal> -n <namespace> -s <sig> < message`.
pub fn verify(
    signers: &AllowedSigners,
    principal: &str,
    namespace: &str,
    message: &[u8],
    armoured: &[u8],
) -> Verdict {
    judge_by(signers, Some(principal), namespace, message, armoured)
}

/// Judges a signature by whichever line holds its key, for a signer bay does not name in
/// advance (a registry commit may be signed by any `registry` key): the principal in a good
/// verdict is that line's first.
pub fn verify_by_key(
    signers: &AllowedSigners,
    namespace: &str,
    message: &[u8],
    armoured: &[u8],
) -> Verdict {
    judge_by(signers, None, namespace, message, armoured)
}

/// The one judgement behind both: the lines `principal` names (or all), the first that holds
/// the signature's key and lets it sign under `namespace`, then the signature itself.
fn judge_by(
    signers: &AllowedSigners,
    principal: Option<&str>,
    namespace: &str,
    message: &[u8],
    armoured: &[u8],
) -> Verdict {
    let decoded = match decode(armoured) {
        Ok(decoded) => decoded,
        Err(verdict) => return verdict,
    };
    let mut lines = signers
        .entries
        .iter()
        .filter(|entry| principal.is_none_or(|p| entry.matches_principal(p)))
        .peekable();
    if let (Some(principal), None) = (principal, lines.peek()) {
        return Verdict::PrincipalUnknown {
            principal: principal.to_owned(),
        };
    }
    let Some(entry) = lines.find(|entry| entry.key == decoded.key && usable(entry, namespace))
    else {
        return Verdict::KeyNotAllowed {
            fingerprint: decoded.key.fingerprint(),
        };
    };
    match (judge(&decoded, entry, namespace, message), principal) {
        (
            Verdict::Good {
                line,
                fingerprint,
                algorithm,
                ..
            },
            Some(principal),
        ) => Verdict::Good {
            principal: principal.to_owned(),
            line,
            fingerprint,
            algorithm,
        },
        (verdict, _) => verdict,
    }
}

/// The key an armoured signature names, without judging it.
pub fn signer(armoured: &[u8]) -> Result<PublicKey, String> {
    match decode(armoured) {
        Ok(decoded) => Ok(decoded.key),
        Err(Verdict::Malformed { why }) => Err(why),
        Err(other) => Err(other.name().to_owned()),
    }
}
