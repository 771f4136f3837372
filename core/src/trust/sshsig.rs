//! SSHSIG verdicts (OpenSSH PROTOCOL.sshsig): whether an armoured signature is a good one by
//! an allowed signer, as `ssh-keygen -Y verify` judges it, and if not, why, by name.

use std::sync::Arc;

use serde::Serialize;
use ssh_key::SshSig;

use super::key::{PublicKey, reader_said};
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
#[derive(Debug)]
pub(crate) struct Decoded {
    sig: SshSig,
    key: PublicKey,
}

/// [`read`] of `armoured`, or the answer it gave for the same bytes if the caller remembers
/// ([`crate::memo`]): every judgement of a signature decodes it first, to find the line that
/// holds its key, before the check itself (remembered too) is asked.
fn decode(armoured: &[u8]) -> Result<Arc<Decoded>, Verdict> {
    crate::memo::recall(&[armoured], || read(armoured).map(Arc::new))
}

fn read(armoured: &[u8]) -> Result<Decoded, Verdict> {
    let sig = SshSig::from_pem(armoured).map_err(|e| Verdict::Malformed {
        why: format!("the signature does not read ({})", reader_said(&e)),
    })?;
    // PROTOCOL.sshsig knows version 1 only; the crate refuses a later one but reads an
    // earlier, which no signer makes.
    if sig.version() != SshSig::VERSION {
        return Err(Verdict::Malformed {
            why: format!(
                "the signature says version {}; bay reads SSHSIG version {}",
                sig.version(),
                SshSig::VERSION
            ),
        });
    }
    let key = PublicKey::from_data(sig.public_key().clone());
    Ok(Decoded { sig, key })
}

/// Judges `message` against `armoured` under `namespace` by the entry that allows its key.
fn judge(
    decoded: &Decoded,
    entry: &Entry,
    namespace: &str,
    message: &[u8],
    armoured: &[u8],
) -> Verdict {
    let Decoded { sig, key } = decoded;
    if sig.namespace() != namespace {
        return Verdict::WrongNamespace {
            signed: sig.namespace().to_owned(),
            wanted: namespace.to_owned(),
        };
    }
    match checked(namespace, message, armoured, sig, key) {
        Checked::Good => Verdict::Good {
            principal: entry.principals.first().cloned().unwrap_or_default(),
            line: entry.line,
            fingerprint: key.fingerprint(),
            algorithm: key.algorithm(),
        },
        Checked::Unsupported(algorithm) => Verdict::Unsupported { algorithm },
        Checked::Bad => Verdict::OtherBytes,
    }
}

/// What the cryptographic check of one signature over one message said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Checked {
    Good,
    Unsupported(String),
    Bad,
}

/// The check itself: `sig` over `message` under `namespace` by `key`, the key it names; one a
/// caller made before for the same namespace, message and armoured signature if it remembers
/// ([`crate::memo`]): `sig` is `armoured` decoded and `key` the key it names, so those three
/// are all the check reads.
fn checked(
    namespace: &str,
    message: &[u8],
    armoured: &[u8],
    sig: &SshSig,
    key: &PublicKey,
) -> Checked {
    crate::memo::recall(&[namespace.as_bytes(), message, armoured], || {
        let public = ssh_key::PublicKey::new(key.data().clone(), "");
        match public.verify(namespace, message, sig) {
            Ok(()) => Checked::Good,
            Err(ssh_key::Error::AlgorithmUnsupported { algorithm }) => {
                Checked::Unsupported(algorithm.as_str().to_owned())
            }
            Err(ssh_key::Error::AlgorithmUnknown) => Checked::Unsupported(key.algorithm()),
            Err(_) => Checked::Bad,
        }
    })
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
    match (
        judge(&decoded, entry, namespace, message, armoured),
        principal,
    ) {
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
        Ok(decoded) => Ok(decoded.key.clone()),
        Err(Verdict::Malformed { why }) => Err(why),
        Err(other) => Err(other.name().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed `fuzz/seeds/sshsig/ed25519-git`: a good signature by `ssh-keygen -Y sign`.
    const MESSAGE: &[u8] =
        "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nbay: a git seed for ed25519\n".as_bytes();
    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICGEIBb7Ju7Bcni6IMfSOwjfCsQpWSjQD6ALih7bWb1G";

    const GOOD: &str = "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgIYQgFvsm7sFyeLogx9I7CN8KxC\nlZKNAPoAuKHttZvUYAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\nAAAAQHpnW5TTeDafBDUyuqUHIDoOxZbVKLjtVz1d4Qscl+vb4jhY2z49IWZ2ZwRGw/q8yD\n72buM23lnHXGZ4TWuuMAU=\n-----END SSH SIGNATURE-----\n";

    fn signers() -> AllowedSigners {
        AllowedSigners::parse(&format!("admin {KEY}\n")).expect("a line")
    }

    fn malformed(armoured: &str) -> String {
        match verify_by_key(&signers(), "git", MESSAGE, armoured.as_bytes()) {
            Verdict::Malformed { why } => why,
            other => panic!("read: {other:?}"),
        }
    }

    #[test]
    fn a_signature_of_version_0_is_refused_though_its_bytes_verify() {
        // The seed with its version field set to 0: the signed data leaves the version out,
        // so only the version check refuses it.
        assert!(verify_by_key(&signers(), "git", MESSAGE, GOOD.as_bytes()).is_good());
        let why = malformed(
            "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAAAAADMAAAALc3NoLWVkMjU1MTkAAAAgIYQgFvsm7sFyeLogx9I7CN8KxC\nlZKNAPoAuKHttZvUYAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\nAAAAQHpnW5TTeDafBDUyuqUHIDoOxZbVKLjtVz1d4Qscl+vb4jhY2z49IWZ2ZwRGw/q8yD\n72buM23lnHXGZ4TWuuMAU=\n-----END SSH SIGNATURE-----\n",
        );
        assert!(
            why.contains("version 0") && why.contains("version 1"),
            "{why}"
        );
        assert!(signer("-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAAAAADMAAAALc3NoLWVkMjU1MTkAAAAgIYQgFvsm7sFyeLogx9I7CN8KxC\nlZKNAPoAuKHttZvUYAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\nAAAAQHpnW5TTeDafBDUyuqUHIDoOxZbVKLjtVz1d4Qscl+vb4jhY2z49IWZ2ZwRGw/q8yD\n72buM23lnHXGZ4TWuuMAU=\n-----END SSH SIGNATURE-----\n".as_bytes()).is_err());
    }

    #[test]
    fn a_remembered_check_answers_as_the_check_does_for_each_message_and_signature() {
        let other = [MESSAGE, b"!"].concat();
        let verdicts = |message: &[u8]| {
            (
                verify_by_key(&signers(), "git", message, GOOD.as_bytes()),
                verify(&signers(), "admin", "git", message, GOOD.as_bytes()),
            )
        };
        let fresh = (verdicts(MESSAGE), verdicts(&other));
        assert!(fresh.0.0.is_good() && fresh.0.1.is_good());
        assert_eq!(fresh.1.0, Verdict::OtherBytes);
        let remembered = crate::memo::remembering(|| {
            let first = (verdicts(MESSAGE), verdicts(&other));
            assert_eq!(crate::memo::remembered::<Checked>(), Some(2));
            // Asked again, from the memo: the same verdicts, and nothing new kept.
            let again = (verdicts(MESSAGE), verdicts(&other));
            assert_eq!(crate::memo::remembered::<Checked>(), Some(2));
            assert_eq!(first, again);
            // Another namespace is refused before any check, as without the memo.
            assert_eq!(
                verify_by_key(&signers(), "bay-evidence", MESSAGE, GOOD.as_bytes()).name(),
                "wrong_namespace"
            );
            first
        });
        assert_eq!(remembered, fresh);
        assert_eq!(
            crate::memo::remembered::<Checked>(),
            None,
            "dropped when the call ends"
        );
    }

    #[test]
    fn a_length_prefix_past_the_end_is_refused_on_one_line() {
        for armoured in [
            "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAX///wAAAAALc3NoLWVkMjU1MTkAAAAgIYQgFvsm7sFyeLogx9I7CN8KxC\nlZKNAPoAuKHttZvUYAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\nAAAAQHpnW5TTeDafBDUyuqUHIDoOxZbVKLjtVz1d4Qscl+vb4jhY2z49IWZ2ZwRGw/q8yD\n72buM23lnHXGZ4TWuuMAU=\n-----END SSH SIGNATURE-----\n",
            "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAQAAADMAAACtc3NoLWVkMjU1MTkAAAAgIYQgFvsm7sFyeLogx9I7CN8KxC\nlZKNAPoAuKHttZvUYAAAADZ2l0AAAAAAAAAAZzaGE1MTIAAABTAAAAC3NzaC1lZDI1NTE5\nAAAAQHpnW5TTeDafBDUyuqUHIDoOxZbVKLjtVz1d4Qscl+vb4jhY2z49IWZ2ZwRGw/q8yD\n72buM23lnHXGZ4TWuuMAU=\n-----END SSH SIGNATURE-----\n",
        ] {
            let why = malformed(armoured);
            assert!(why.starts_with("the signature does not read"), "{why}");
            assert!(!why.chars().any(char::is_control), "{why:?}");
        }
    }
}
