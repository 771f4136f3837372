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
    /// Read once per distinct pair while the caller remembers ([`crate::memo`]).
    pub fn from_fields(keytype: &str, base64: &str) -> Result<PublicKey, String> {
        crate::memo::recall(&[keytype.as_bytes(), base64.as_bytes()], || {
            PublicKey::read_fields(keytype, base64)
        })
    }

    fn read_fields(keytype: &str, base64: &str) -> Result<PublicKey, String> {
        let parsed =
            ssh_key::PublicKey::from_openssh(&format!("{keytype} {base64}")).map_err(|e| {
                format!(
                    "`{}` is not an OpenSSH public key ({})",
                    clip(keytype),
                    reader_said(&e)
                )
            })?;
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

/// What the SSH reader said about bad input, on one short line: it quotes what it read, and
/// that may hold control characters (shown escaped) or be long (cut off).
pub(crate) fn reader_said(error: &dyn fmt::Display) -> String {
    let text = error.to_string();
    let mut shown = String::new();
    for c in text.chars() {
        match c.is_control() {
            true => shown.extend(c.escape_default()),
            false => shown.push(c),
        }
        if shown.chars().count() >= 120 {
            shown.push('…');
            break;
        }
    }
    shown
}

/// Input quoted back in a refusal stays short and on one line.
pub(crate) fn clip(text: &str) -> String {
    let one_line: String = text.chars().filter(|c| !c.is_control()).take(40).collect();
    match one_line.len() < text.len() {
        true => format!("{one_line}…"),
        false => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_whose_data_names_a_type_with_a_control_character_is_refused_on_one_line() {
        // A fuzzed `ed25519.pub`: one base64 letter changed, so the data's type field reads
        // `ssh-eg\u{2}5519`, which the SSH reader quoted raw.
        let why = PublicKey::from_pub_file(
            "ssh-ed25519 AAAAC3NzaC1lZwI1NTE5AAAAICGEIBb7Ju7Bcni6IMfSOwjfCsQpWSjQD6ALih7bWb1G\n",
        )
        .expect_err("a broken key");
        assert!(!why.chars().any(char::is_control), "{why:?}");
        assert!(why.contains("is not an OpenSSH public key"), "{why}");
        assert!(why.contains("\\u{2}"), "{why}");
    }

    #[test]
    fn a_remembered_key_is_the_read_of_those_very_fields() {
        let good = "AAAAC3NzaC1lZDI1NTE5AAAAICGEIBb7Ju7Bcni6IMfSOwjfCsQpWSjQD6ALih7bWb1G";
        // One base64 letter changed: the data's type field no longer reads.
        let bad = good.replace("ZDI1", "ZwI1");
        let read = || {
            [
                PublicKey::from_fields("ssh-ed25519", good),
                PublicKey::from_fields("ssh-ed25519", &bad),
                PublicKey::from_fields("ssh-rsa", good),
            ]
        };
        let fresh = read();
        assert!(fresh[0].is_ok() && fresh[1].is_err() && fresh[2].is_err());
        let remembered = crate::memo::remembering(|| {
            let first = read();
            assert_eq!(
                crate::memo::remembered::<Result<PublicKey, String>>(),
                Some(3)
            );
            assert_eq!(read(), first);
            assert_eq!(
                crate::memo::remembered::<Result<PublicKey, String>>(),
                Some(3)
            );
            first
        });
        assert_eq!(remembered, fresh);
    }

    #[test]
    fn what_the_reader_said_is_clipped_to_one_short_line() {
        let long = format!("first\nsecond\t{}", "x".repeat(500));
        let said = reader_said(&long);
        assert!(!said.chars().any(char::is_control), "{said:?}");
        assert!(said.starts_with("first\\nsecond\\t"), "{said}");
        assert!(said.chars().count() <= 121 && said.ends_with('…'), "{said}");
    }
}
