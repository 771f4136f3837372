//! The check contract: what bay sends a check, how it judges what the check prints, and the
//! evidence it keeps of that judgement.
//!
//! A check is an outside program, so everything it prints is untrusted input. This module is
//! the one place that turns a check's stdout into a verdict, so every driver (real or
//! simulated) judges the same bytes the same way. It never reads the bytes itself: the driver
//! runs the check and hands over a [`CheckExit`].
//!
//! The flow is: [`CheckRequest::build`] makes the document the check reads on stdin, the driver
//! runs the check, [`judge`] turns what it observed into a [`Judgement`], and
//! [`EvidenceRecord::new`] makes the record bay keeps as a Git note on the candidate's tree.

use serde::{Deserialize, Serialize};

use crate::git::Oid;

pub mod definition;
mod evidence;
pub mod footprint;
mod judge;
pub mod plan;
pub mod read_path;
mod request;
pub mod reuse;
mod shown;

pub use evidence::{EvidenceExtras, EvidenceKey, EvidenceRecord, EvidenceSchema};
pub use judge::{
    CheckExit, JudgedCheck, Judgement, MAX_REASON_BYTES, MAX_STDOUT_BYTES, RESULT_SCHEMA,
    UnitReason, judge,
};
pub use request::{
    ChangeContext, ChangeInfo, CheckInput, CheckRequest, CheckTarget, GitHistory, HistoryRefs,
    MAX_MESSAGES, MAX_MESSAGES_BYTES, Materialized, RequestInput, RequestPlan, RequestSchema,
    Requires,
};
pub use shown::Shown;

/// One exact state of the repository: a commit and its tree.
///
/// Both travel together because a check's evidence counts only for the exact tree it ran on,
/// or the exact commit when the check reads more than the tree; naming both lets either rule
/// be applied later without asking Git again.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct CommitTree {
    pub commit: Oid,
    pub tree: Oid,
}

/// What one check, or one unit of it, says about the candidate.
///
/// The four words are the whole vocabulary of the contract. Only `Pass` ever lets a change
/// merge; the other three say whom to blame: the change, the machine, or nobody yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Everything the check selected ran on the candidate and passed.
    Pass,
    /// The change is at fault; it does not merge.
    ProductFailure,
    /// The machine or a tool is at fault, not the change.
    InfraFailure,
    /// Nothing trustworthy was learned; never a pass.
    Unknown,
}

impl Verdict {
    /// The word the contract uses, as a check prints it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::ProductFailure => "product_failure",
            Verdict::InfraFailure => "infra_failure",
            Verdict::Unknown => "unknown",
        }
    }

    /// Whether it says anything of the change: a pass or a product failure.
    pub const fn is_decided(self) -> bool {
        matches!(self, Verdict::Pass | Verdict::ProductFailure)
    }

    /// Reads one of the four words exactly; anything else (other case, padding, synonyms) is
    /// not a verdict, because a check that misspells one has not said what it meant.
    pub fn parse(text: &str) -> Option<Verdict> {
        match text {
            "pass" => Some(Verdict::Pass),
            "product_failure" => Some(Verdict::ProductFailure),
            "infra_failure" => Some(Verdict::InfraFailure),
            "unknown" => Some(Verdict::Unknown),
            _ => None,
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Defines a zero-sized type for a document's `schema` field. It serializes as the one
/// accepted string and refuses any other on reading, so a document of another version can
/// never be mistaken for this one.
macro_rules! schema_tag {
    ($(#[$doc:meta])* $name:ident = $text:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        pub struct $name;

        impl $name {
            pub const TEXT: &'static str = $text;

            pub const fn as_str(self) -> &'static str {
                $text
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str($text)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                if text == $text {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(format!(
                        "schema {text:?} is not {:?}",
                        $text
                    )))
                }
            }
        }
    };
}
pub(crate) use schema_tag;

/// Shows untrusted text inside one sentence: quoted, escaped, and at most 80 characters, so a
/// check cannot stretch or break the line bay writes about it.
pub(crate) fn quote(text: &str) -> String {
    const SHOWN: usize = 80;
    match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_words_round_trip() {
        for verdict in [
            Verdict::Pass,
            Verdict::ProductFailure,
            Verdict::InfraFailure,
            Verdict::Unknown,
        ] {
            assert_eq!(Verdict::parse(verdict.as_str()), Some(verdict));
            let json = serde_json::to_string(&verdict).expect("a verdict serializes");
            assert_eq!(json, format!("\"{verdict}\""));
        }
        assert_eq!(Verdict::parse("Pass"), None);
        assert_eq!(Verdict::parse("passed"), None);
        assert_eq!(Verdict::parse(" pass"), None);
    }

    #[test]
    fn quote_bounds_and_escapes_untrusted_text() {
        assert_eq!(quote("a\nb"), "\"a\\nb\"");
        let long = "é".repeat(200);
        let shown = quote(&long);
        assert!(shown.ends_with("..."));
        assert_eq!(shown.chars().filter(|&c| c == 'é').count(), 80);
    }
}
