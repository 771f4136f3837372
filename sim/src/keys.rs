//! The simulator's private keys: real ed25519 keys, each made from a hash of its name, so a
//! run needs no entropy and no key file. A machine names a key as the driver would name a file
//! (`bay.executorKey`, `bay.producerKey`, `bay.registryKey`): here the path is
//! `sim-key:<name>`. The model signs with it exactly as the real driver does (SSHSIG, namespace
//! `git` in a `gpgsig` header for a commit, `bay-evidence` over a record's canonical bytes), so
//! core verifies the model's signatures on the same path as Git's, with no seam.
//!
//! A path can be pointed at another key for a while (a key file replaced on a runner's disk)
//! or made to sign other bytes (a signer that lies): the forgeries the `keys` fault makes,
//! which core's verification must refuse.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use bay_core::trust::PublicKey;
use bay_core::trust::record;
use bay_core::trust::registry::COMMIT_NAMESPACE;
use ed25519_dalek::Signer;
use sha2::{Digest, Sha256};
use ssh_key::private::{Ed25519Keypair, KeypairData};
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey, Signature, SshSig};

/// How a key file names the key it holds.
pub const PREFIX: &str = "sim-key:";

/// The path of the key called `name`.
pub fn path(name: &str) -> String {
    format!("{PREFIX}{name}")
}

/// A forgery the model makes when a machine signs with a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forgery {
    /// The file holds the key called this instead (not the one enrolled).
    OtherKey(String),
    /// The key signs bytes other than those asked.
    OtherBytes,
}

/// One key the model holds.
#[derive(Debug)]
struct Made {
    private: PrivateKey,
    /// An ed25519 key's signing half, made once: ssh-key makes it again from the seed (a
    /// scalar multiplication as long as the signature's own) every time it signs.
    ed25519: Option<ed25519_dalek::SigningKey>,
    public: PublicKey,
}

impl Made {
    fn new(private: PrivateKey, public: PublicKey) -> Made {
        let ed25519 = match private.key_data() {
            KeypairData::Ed25519(pair) => Some(ed25519_dalek::SigningKey::from(&pair.private)),
            _ => None,
        };
        Made {
            private,
            ed25519,
            public,
        }
    }

    /// The SSHSIG signature of `message` under `namespace`, SHA-512 as `ssh-keygen` hashes:
    /// what `PrivateKey::sign` makes (ed25519 signatures are deterministic), byte for byte.
    fn sign(&self, namespace: &str, message: &[u8]) -> ssh_key::Result<SshSig> {
        let Some(signing) = &self.ed25519 else {
            return self.private.sign(namespace, HashAlg::Sha512, message);
        };
        let data = SshSig::signed_data(namespace, HashAlg::Sha512, message)?;
        let signature = Signature::new(Algorithm::Ed25519, signing.sign(&data).to_bytes())?;
        SshSig::new(
            self.private.public_key().key_data().clone(),
            namespace,
            HashAlg::Sha512,
            signature,
        )
    }
}

thread_local! {
    /// The keys made from their names on this thread, for every seed it runs: a key is a
    /// function of its name, and making one costs as much as a signature.
    static NAMED: RefCell<BTreeMap<String, Arc<Made>>> = const { RefCell::new(BTreeMap::new()) };
}

#[derive(Debug, Default)]
pub struct Keys {
    made: BTreeMap<String, Arc<Made>>,
    /// Paths that sign falsely for now.
    pub forged: BTreeMap<String, Forgery>,
}

impl Keys {
    fn key(&mut self, name: &str) -> &Made {
        self.made.entry(name.to_owned()).or_insert_with(|| {
            NAMED.with(|named| {
                named
                    .borrow_mut()
                    .entry(name.to_owned())
                    .or_insert_with(|| {
                        let seed: [u8; 32] = Sha256::digest(format!("bay-sim key {name}")).into();
                        let private = PrivateKey::from(Ed25519Keypair::from_seed(&seed));
                        let line = private
                            .public_key()
                            .to_openssh()
                            .expect("an ed25519 public key writes");
                        let public =
                            PublicKey::from_pub_file(&line).expect("bay reads an ed25519 key");
                        Arc::new(Made::new(private, public))
                    })
                    .clone()
            })
        })
    }

    /// Keeps the OpenSSH private key `openssh` (unencrypted) under a name of its own, as a key
    /// file would hold it, and gives its path; `Err` says why it cannot sign.
    pub fn import(&mut self, openssh: &str) -> Result<String, String> {
        let private = PrivateKey::from_openssh(openssh)
            .map_err(|e| format!("is not an OpenSSH private key ({e})"))?;
        if private.is_encrypted() {
            return Err("has a passphrase".into());
        }
        let line = private
            .public_key()
            .to_openssh()
            .map_err(|e| format!("has a public half bay cannot write ({e})"))?;
        let public = PublicKey::from_pub_file(&line)?;
        let name = format!("imported-{}", self.made.len());
        self.made
            .insert(name.clone(), Arc::new(Made::new(private, public)));
        Ok(path(&name))
    }

    /// The public half of the key called `name`.
    pub fn public(&mut self, name: &str) -> PublicKey {
        self.key(name).public.clone()
    }

    /// Signs `message` under `namespace` with the key at `path`, as `sign::SigningKey::sign`
    /// does: the armoured signature, ending in a newline.
    pub fn sign(&mut self, path: &str, namespace: &str, message: &[u8]) -> Result<String, String> {
        let name = path
            .strip_prefix(PREFIX)
            .ok_or_else(|| format!("cannot read the key {path}: no such file"))?;
        let (name, message) = match self.forged.get(path) {
            Some(Forgery::OtherKey(other)) => (other.clone(), message.to_vec()),
            Some(Forgery::OtherBytes) => (name.to_owned(), [message, b"!"].concat()),
            None => (name.to_owned(), message.to_vec()),
        };
        let signature = self
            .key(&name)
            .sign(namespace, &message)
            .and_then(|sig| sig.to_pem(LineEnding::LF))
            .map_err(|e| format!("signing failed ({e})"))?;
        Ok(if signature.ends_with('\n') {
            signature
        } else {
            signature + "\n"
        })
    }

    /// The `gpgsig` header's value for the raw commit `raw`, signed as Git signs commits: the
    /// armoured signature with its lines after the first indented by one space.
    pub fn commit_signature(&mut self, path: &str, raw: &str) -> Result<String, String> {
        let signature = self.sign(path, COMMIT_NAMESPACE, raw.as_bytes())?;
        Ok(signature.trim_end().replace('\n', "\n "))
    }

    /// An evidence record line with its `signature` added, as `sign::signed_record` makes it.
    pub fn signed_record(&mut self, path: &str, line: &str) -> Result<String, String> {
        let bytes = record::canonical(line)?;
        let signature = self.sign(path, record::EVIDENCE_NAMESPACE, &bytes)?;
        record::with_signature(line, &signature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bay_core::trust::registry::split_signed;
    use bay_core::trust::{AllowedSigners, verify_by_key};

    fn verdict(keys: &mut Keys, enrolled: &str, path: &str) -> bool {
        let raw = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nbay: a candidate\n";
        let header = keys.commit_signature(path, raw).expect("signs");
        let (headers, message) = raw.split_once("\n\n").expect("a commit");
        let signed = format!("{headers}\ngpgsig {header}\n\n{message}");
        let (payload, signature) = split_signed(&signed).expect("signed as Git signs");
        assert_eq!(payload, raw);
        let public = keys.public(enrolled);
        let signers =
            AllowedSigners::parse(&format!("runner {}\n", public.openssh())).expect("a file");
        verify_by_key(
            &signers,
            COMMIT_NAMESPACE,
            payload.as_bytes(),
            signature.as_bytes(),
        )
        .is_good()
    }

    #[test]
    fn a_signature_is_the_one_ssh_key_makes_byte_for_byte() {
        let mut keys = Keys::default();
        for (name, namespace, message) in [
            (
                "runner-0",
                "git",
                b"tree t\n\nbay: a candidate\n".as_slice(),
            ),
            ("admin", "bay-evidence", b"{}"),
            ("runner-0", "git", b""),
        ] {
            let made = keys.key(name);
            let slow = made
                .private
                .sign(namespace, HashAlg::Sha512, message)
                .and_then(|sig| sig.to_pem(LineEnding::LF))
                .expect("ssh-key signs");
            let fast = made
                .sign(namespace, message)
                .and_then(|sig| sig.to_pem(LineEnding::LF))
                .expect("the model signs");
            assert!(made.ed25519.is_some());
            assert_eq!(fast, slow);
        }
    }

    #[test]
    fn a_signature_verifies_by_core_only_for_its_own_key_and_bytes() {
        let mut keys = Keys::default();
        assert!(verdict(&mut keys, "runner-0", &path("runner-0")));
        assert!(!verdict(&mut keys, "runner-1", &path("runner-0")));
        keys.forged
            .insert(path("runner-0"), Forgery::OtherKey("thief".into()));
        assert!(!verdict(&mut keys, "runner-0", &path("runner-0")));
        keys.forged.insert(path("runner-0"), Forgery::OtherBytes);
        assert!(!verdict(&mut keys, "runner-0", &path("runner-0")));
        assert!(keys.sign("/home/runner/.ssh/key", "git", b"x").is_err());
    }
}
