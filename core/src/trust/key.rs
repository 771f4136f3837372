//! One OpenSSH public key, as an allowed-signers line or a `.pub` file writes it.

use std::fmt;

use ssh_key::HashAlg;
use ssh_key::public::KeyData;

/// A public key bay can judge signatures with. Two keys are equal when their key data is,
/// whatever comment each came with.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    data: KeyData,
    /// `<keytype> <base64>`, exactly as the key encodes, with no comment.
    text: String,
}

impl PublicKey {
    /// Reads `<keytype> <base64>`: the two fields must name the same algorithm, and the
    /// base64 must decode to a key of it. Anything else is refused with what is wrong.
    pub fn from_fields(keytype: &str, base64: &str) -> Result<PublicKey, String> {
        let parsed = ssh_key::PublicKey::from_openssh(&format!("{keytype} {base64}"))
            .map_err(|e| format!("`{}` is not an OpenSSH public key ({e})", clip(keytype)))?;
        if parsed.algorithm().as_str() != keytype {
            return Err(format!(
                "the key's type says `{}` but its data holds a {} key",
                clip(keytype),
                parsed.algorithm().as_str()
            ));
        }
        Ok(PublicKey::from_data(parsed.key_data().clone()))
    }

    /// Reads a `.pub` file: one line `<keytype> <base64> [comment]`, blank lines around it
    /// allowed. A private key, an empty file or a second key is refused.
    pub fn from_pub_file(text: &str) -> Result<PublicKey, String> {
        if text.contains("PRIVATE KEY") {
            return Err("this is a private key; give bay the public half, the `.pub` file".into());
        }
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let [line] = lines.as_slice() else {
            return Err(match lines.len() {
                0 => "the file is empty, not a public key".into(),
                n => format!("the file holds {n} lines; a public key file holds one"),
            });
        };
        let mut fields = line.split_ascii_whitespace();
        match (fields.next(), fields.next()) {
            (Some(keytype), Some(base64)) => PublicKey::from_fields(keytype, base64),
            _ => Err("the file is not a public key (`<type> <base64> [comment]`)".into()),
        }
    }

    pub(crate) fn from_data(data: KeyData) -> PublicKey {
        let text = ssh_key::PublicKey::new(data.clone(), "")
            .to_openssh()
            .unwrap_or_default()
            .trim_end()
            .to_owned();
        PublicKey { data, text }
    }

    pub(crate) fn data(&self) -> &KeyData {
        &self.data
    }

    /// The key type, such as `ssh-ed25519`.
    pub fn algorithm(&self) -> String {
        self.data.algorithm().as_str().to_owned()
    }

    /// `<keytype> <base64>`, as an allowed-signers line holds it.
    pub fn openssh(&self) -> &str {
        &self.text
    }

    /// `SHA256:<base64>`, as ssh-keygen prints it.
    pub fn fingerprint(&self) -> String {
        self.data.fingerprint(HashAlg::Sha256).to_string()
    }

    /// A hardware key (`sk-` type), which signs only with a touch.
    pub fn is_hardware(&self) -> bool {
        self.algorithm().starts_with("sk-")
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

impl PartialOrd for PublicKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PublicKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.text.cmp(&other.text)
    }
}

/// Input quoted back in a refusal stays short and on one line.
pub(crate) fn clip(text: &str) -> String {
    let one_line: String = text.chars().filter(|c| !c.is_control()).take(40).collect();
    match one_line.len() < text.len() {
        true => format!("{one_line}…"),
        false => one_line,
    }
}
