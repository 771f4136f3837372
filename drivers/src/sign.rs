//! Signing with an OpenSSH private key file (SSHSIG), the only place bay holds a private
//! key. Core verifies what this makes (`bay_core::trust`); this file only loads and signs.
//!
//! ed25519, ecdsa and rsa keys sign deterministically, so no entropy is asked for. A key
//! with a passphrase, or a hardware (`sk-`) key, needs `ssh-agent`, which bay does not speak
//! yet: both are refused by name, never prompted for.

use std::path::Path;

use bay_core::trust::PublicKey;
use bay_core::trust::record;
use bay_core::trust::registry::COMMIT_NAMESPACE;
use ssh_key::private::{KeypairData, RsaKeypair};
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey, Signature, SshSig};

/// A private key loaded from its file, ready to sign.
pub struct SigningKey {
    key: PrivateKey,
    public: PublicKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.public.fingerprint())
    }
}

impl SigningKey {
    /// Loads the private key at `path`, as `git config bay.registryKey` names it.
    pub fn load(path: &Path) -> Result<SigningKey, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the key {}: {e}", path.display()))?;
        SigningKey::from_openssh(&text).map_err(|why| format!("the key {}: {why}", path.display()))
    }

    /// Reads an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`).
    pub fn from_openssh(text: &str) -> Result<SigningKey, String> {
        let key = PrivateKey::from_openssh(text)
            .map_err(|e| format!("is not an OpenSSH private key ({e})"))?;
        if key.is_encrypted() {
            return Err("has a passphrase, and bay cannot ask ssh-agent yet".into());
        }
        let line = key
            .public_key()
            .to_openssh()
            .map_err(|e| format!("has a public half bay cannot write ({e})"))?;
        let public = PublicKey::from_pub_file(&line)?;
        if public.is_hardware() {
            return Err("is a hardware key, which signs only through ssh-agent".into());
        }
        Ok(SigningKey { key, public })
    }

    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// Signs `message` under `namespace`, with SHA-512 as ssh-keygen does by default: the
    /// armoured signature, in 70 columns, ending in a newline.
    pub fn sign(&self, namespace: &str, message: &[u8]) -> Result<String, String> {
        let sig = match self.key.key_data() {
            KeypairData::Rsa(keypair) => sign_rsa(keypair, namespace, message),
            _ => self.key.sign(namespace, HashAlg::Sha512, message),
        }
        .map_err(|e| format!("signing failed ({e})"))?;
        let mut pem = sig
            .to_pem(LineEnding::LF)
            .map_err(|e| format!("signing failed ({e})"))?;
        if !pem.ends_with('\n') {
            pem.push('\n');
        }
        Ok(pem)
    }
}

/// The commit `raw` (as `git cat-file commit` gives one, unsigned) signed as Git signs
/// commits: a `gpgsig` header, after the others, holding the SSHSIG (namespace `git`) over the
/// commit as it was. `git verify-commit` verifies it against an allowed-signers file.
pub fn signed_commit(key: &SigningKey, raw: &str) -> Result<String, String> {
    let (headers, message) = raw
        .split_once("\n\n")
        .ok_or_else(|| "the commit has no message separator".to_string())?;
    if headers.lines().any(|line| line.starts_with("gpgsig")) {
        return Err("the commit is signed already".into());
    }
    let signature = key.sign(COMMIT_NAMESPACE, raw.as_bytes())?;
    let signature = signature.trim_end().replace('\n', "\n ");
    Ok(format!("{headers}\ngpgsig {signature}\n\n{message}"))
}

/// An evidence record line with its `signature` added: the SSHSIG of the key at `path` over
/// the record's canonical bytes (`bay_core::trust::record`).
pub fn signed_record(path: &Path, record: &str) -> Result<String, String> {
    let key = SigningKey::load(path)?;
    let bytes = record::canonical(record)?;
    let signature = key.sign(record::EVIDENCE_NAMESPACE, &bytes)?;
    record::with_signature(record, &signature)
}

/// SSHSIG with an RSA key as `rsa-sha2-512`, built from all of the key's parts (see the note
/// on the `rsa` dependency for why not through ssh-key).
fn sign_rsa(keypair: &RsaKeypair, namespace: &str, message: &[u8]) -> ssh_key::Result<SshSig> {
    use rsa::signature::Signer;
    let int = |mpint: &ssh_key::Mpint| {
        mpint
            .as_positive_bytes()
            .map(rsa::BigUint::from_bytes_be)
            .ok_or(ssh_key::Error::Crypto)
    };
    let private = rsa::RsaPrivateKey::from_components(
        int(&keypair.public.n)?,
        int(&keypair.public.e)?,
        int(&keypair.private.d)?,
        vec![int(&keypair.private.p)?, int(&keypair.private.q)?],
    )
    .map_err(|_| ssh_key::Error::Crypto)?;
    let signing = rsa::pkcs1v15::SigningKey::<rsa::sha2::Sha512>::new(private);
    let data = SshSig::signed_data(namespace, HashAlg::Sha512, message)?;
    let signature = signing
        .try_sign(&data)
        .map_err(|_| ssh_key::Error::Crypto)?;
    let algorithm = Algorithm::Rsa {
        hash: Some(HashAlg::Sha512),
    };
    let signature = Signature::new(
        algorithm,
        rsa::signature::SignatureEncoding::to_vec(&signature),
    )?;
    SshSig::new(
        ssh_key::public::KeyData::Rsa(keypair.public.clone()),
        namespace,
        HashAlg::Sha512,
        signature,
    )
}
