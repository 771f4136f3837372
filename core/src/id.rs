//! Identifiers. A change id is eight lower-case base32 characters made from entropy the caller
//! passes in; an operation id is `<change>.<n>`; a candidate id is `<op>.<attempt>`.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// RFC 4648 base32, lower-cased: the alphabet of change ids.
const BASE32: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// The stable id of one intended outcome.
///
/// Its eight characters are kept in place, not on the heap: ids are cloned far more often
/// than made (every step, operation id and ref map holds one). Equality and order are the
/// text's (the same length, byte by byte), and `Hash` and `Debug` are written below as a
/// `String`'s were.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ChangeId([u8; 8]);

impl ChangeId {
    /// Makes an id from five bytes of entropy (40 bits, eight base32 characters).
    pub fn from_entropy(bytes: [u8; 5]) -> ChangeId {
        let mut bits: u64 = 0;
        for byte in bytes {
            bits = (bits << 8) | u64::from(byte);
        }
        let mut text = [0u8; 8];
        for (at, i) in (0..8).rev().enumerate() {
            text[at] = BASE32[((bits >> (i * 5)) & 31) as usize];
        }
        ChangeId(text)
    }

    pub fn parse(text: &str) -> Result<ChangeId, String> {
        if let Ok(bytes) = <[u8; 8]>::try_from(text.as_bytes())
            && bytes.iter().all(|b| BASE32.contains(b))
        {
            Ok(ChangeId(bytes))
        } else {
            Err(format!(
                "not a change id (eight lower-case base32 characters): {text:?}"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        // Only base32 letters and digits are ever put in: ASCII.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The id of this change's `n`th operation (from 1).
    pub fn op(&self, n: u32) -> OpId {
        OpId {
            change: self.clone(),
            n,
        }
    }
}

/// What a command that acts on one change (`merge`, `abandon`) says when it is run with none
/// named and outside any change's folder: a usage error, since the person only has to say which
/// change, in one of two ways.
pub fn no_change_named(command: &str) -> String {
    format!(
        "bay {command} needs a change: name it, as in `bay {command} <change>`, or run it in \
         the change's folder (the one `bay start` printed)"
    )
}

impl TryFrom<String> for ChangeId {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        ChangeId::parse(&text)
    }
}

impl From<ChangeId> for String {
    fn from(id: ChangeId) -> String {
        id.as_str().to_owned()
    }
}

impl std::fmt::Display for ChangeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for ChangeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ChangeId").field(&self.as_str()).finish()
    }
}

impl std::hash::Hash for ChangeId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for ChangeId {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(ChangeId::from_entropy([0, 0, 0, 0, u.int_in_range(0..=3)?]))
    }
}

/// One operation of a change: one request to merge it. `<change>.<n>`, `n` from 1.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(try_from = "String", into = "String")]
pub struct OpId {
    pub change: ChangeId,
    pub n: u32,
}

impl OpId {
    pub fn parse(text: &str) -> Result<OpId, String> {
        let bad = || format!("not an operation id (<change>.<n>): {text:?}");
        let (change, n) = text.split_once('.').ok_or_else(bad)?;
        let n = parse_counter(n).ok_or_else(bad)?;
        Ok(OpId {
            change: ChangeId::parse(change).map_err(|_| bad())?,
            n,
        })
    }

    /// The id of this operation's `attempt`th candidate (from 1).
    pub fn candidate(&self, attempt: u32) -> CandidateId {
        CandidateId {
            op: self.clone(),
            attempt,
        }
    }
}

impl TryFrom<String> for OpId {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        OpId::parse(&text)
    }
}

impl From<OpId> for String {
    fn from(id: OpId) -> String {
        id.to_string()
    }
}

impl std::fmt::Display for OpId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.change, self.n)
    }
}

/// One candidate of an operation: `<op>.<attempt>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(try_from = "String", into = "String")]
pub struct CandidateId {
    pub op: OpId,
    pub attempt: u32,
}

impl CandidateId {
    pub fn parse(text: &str) -> Result<CandidateId, String> {
        let bad = || format!("not a candidate id (<change>.<n>.<attempt>): {text:?}");
        let (op, attempt) = text.rsplit_once('.').ok_or_else(bad)?;
        Ok(CandidateId {
            op: OpId::parse(op).map_err(|_| bad())?,
            attempt: parse_counter(attempt).ok_or_else(bad)?,
        })
    }
}

impl TryFrom<String> for CandidateId {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        CandidateId::parse(&text)
    }
}

impl From<CandidateId> for String {
    fn from(id: CandidateId) -> String {
        id.to_string()
    }
}

impl std::fmt::Display for CandidateId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.op, self.attempt)
    }
}

/// A counter from 1, in plain decimal with no leading zero or sign.
fn parse_counter(text: &str) -> Option<u32> {
    if text.is_empty() || text.starts_with('0') || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// The name under which an intent is claimed. Only the same words, in the same case and
/// spacing, name the same intent, so the digest is over the exact bytes.
pub fn intent_digest(intent: &str) -> String {
    hex(&Sha256::digest(intent.as_bytes())[..8])
}

/// `bytes` as lower-case hex, two digits a byte: how bay names digests and ids.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hex_writes_two_lower_case_digits_a_byte() {
        let bytes: Vec<u8> = (0..=255).collect();
        let slow: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&bytes), slow);
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn a_change_id_prints_and_hashes_as_its_text() {
        use std::hash::{BuildHasher, Hash, Hasher};
        let id = ChangeId::parse("c7k2m4qa").expect("an id");
        assert_eq!(format!("{id:?}"), r#"ChangeId("c7k2m4qa")"#);
        assert_eq!(id.to_string(), "c7k2m4qa");
        assert_eq!(String::from(id.clone()), "c7k2m4qa");
        let state = std::collections::hash_map::RandomState::new();
        let hash = |value: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
            let mut hasher = state.build_hasher();
            value(&mut hasher);
            hasher.finish()
        };
        assert_eq!(
            hash(&|h| id.hash(h)),
            hash(&|h| "c7k2m4qa".to_string().hash(h))
        );
        assert!(ChangeId::parse("c7k2m4q").is_err() && ChangeId::parse("c7k2m4qa1").is_err());
        assert!(ChangeId::parse("c7k2m4q1").is_err() && ChangeId::parse("c7k2m4qé").is_err());
    }

    #[test]
    fn change_ids_are_eight_base32_characters() {
        assert_eq!(ChangeId::from_entropy([0; 5]).as_str(), "aaaaaaaa");
        assert_eq!(ChangeId::from_entropy([0xff; 5]).as_str(), "77777777");
        assert!(ChangeId::parse("c7k2m4qa").is_ok());
        assert!(ChangeId::parse("C7K2M4QA").is_err());
        assert!(ChangeId::parse("c7k2m4q").is_err());
        assert!(
            ChangeId::parse("c7k2m4q1").is_err(),
            "1 is not in the alphabet"
        );
    }

    #[test]
    fn op_and_candidate_ids_nest() {
        let change = ChangeId::parse("c7k2m4qa").expect("valid");
        let candidate = change.op(1).candidate(2);
        assert_eq!(candidate.to_string(), "c7k2m4qa.1.2");
        assert_eq!(CandidateId::parse("c7k2m4qa.1.2"), Ok(candidate));
        assert!(OpId::parse("c7k2m4qa.0").is_err());
        assert!(OpId::parse("c7k2m4qa.01").is_err());
        assert!(OpId::parse("c7k2m4qa").is_err());
        assert!(CandidateId::parse("c7k2m4qa.1").is_err());
    }

    #[test]
    fn intents_differ_by_case_and_spacing() {
        assert_ne!(
            intent_digest("fix the login"),
            intent_digest("Fix the login")
        );
        assert_ne!(
            intent_digest("fix the login"),
            intent_digest("fix  the login")
        );
        assert_eq!(intent_digest("fix the login").len(), 16);
    }

    proptest! {
        #[test]
        fn every_entropy_makes_a_valid_distinct_id(a: [u8; 5], b: [u8; 5]) {
            let (x, y) = (ChangeId::from_entropy(a), ChangeId::from_entropy(b));
            prop_assert!(ChangeId::parse(x.as_str()).is_ok());
            prop_assert_eq!(a == b, x == y);
        }

        #[test]
        fn ids_round_trip_through_text(e: [u8; 5], n in 1u32.., attempt in 1u32..) {
            let op = ChangeId::from_entropy(e).op(n);
            prop_assert_eq!(OpId::parse(&op.to_string()), Ok(op.clone()));
            let candidate = op.candidate(attempt);
            prop_assert_eq!(CandidateId::parse(&candidate.to_string()), Ok(candidate));
        }
    }
}
