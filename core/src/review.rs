//! A reviewer's record: what `bay evidence record --kind review` writes about one merge, in the
//! reviewer's notes ref `refs/notes/bay/evidence/<reviewer>`, on the merge's tree.
//!
//! A review is evidence from outside the merge path: bay reads it for `bay evidence missing`
//! and a site dimension of `bay status`, and never folds it into a check's verdict, so a
//! review can neither block nor delay a merge. Its writer signs it whole with
//! `bay.reviewerKey`, findings included, so a changed finding no longer verifies.

use serde_json::{Map, Value};

use crate::check::Verdict;
use crate::git::Oid;
use crate::red::record_id;
use crate::time::Timestamp;
use crate::trust::record::SIGNATURE;

/// The kind a review record has.
pub const REVIEW: &str = "review";

/// The fields a review record holds itself. A `--body` field may name none of them, so that a
/// finding can never pass for the verdict, the commit or the signature.
pub const RECORD_FIELDS: [&str; 15] = [
    "schema",
    "kind",
    "id",
    "producer",
    "check",
    "environment",
    "verdict",
    "why",
    "commit",
    "tree",
    "base_tree",
    "version",
    "inputs",
    "at",
    SIGNATURE,
];

/// What one review says, apart from the merge it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    /// The reviewer's name (`bay.reviewerName`): the producer its records name.
    pub reviewer: String,
    pub verdict: Verdict,
    pub why: String,
    pub version: Option<String>,
    pub inputs: Vec<(String, String)>,
    /// The `--body` object's fields, carried beside the record's own.
    pub body: Map<String, Value>,
}

/// One review record, as a JSON object: its own fields and the body's.
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewRecord(Map<String, Value>);

impl ReviewRecord {
    /// The record of `review` on the merged `commit` (its tree, and its first parent's tree),
    /// written at `at`, unsigned: the driver signs it before it is written.
    pub fn of(
        review: &Review,
        commit: &Oid,
        tree: &Oid,
        base_tree: Option<&Oid>,
        at: Timestamp,
    ) -> ReviewRecord {
        let id = record_id(
            &review.reviewer,
            REVIEW,
            commit,
            &review.inputs,
            review.version.as_deref(),
        );
        let mut map = Map::new();
        let mut put = |key: &str, value: Value| {
            map.insert(key.to_owned(), value);
        };
        put("schema", Value::from("bay.evidence/1"));
        put("kind", Value::from(REVIEW));
        put("id", Value::from(id));
        put("producer", Value::from(review.reviewer.as_str()));
        put("verdict", Value::from(review.verdict.as_str()));
        if !review.why.is_empty() {
            put("why", Value::from(review.why.as_str()));
        }
        put("commit", Value::from(commit.as_str()));
        put("tree", Value::from(tree.as_str()));
        put(
            "base_tree",
            base_tree.map_or(Value::Null, |t| t.as_str().into()),
        );
        if let Some(version) = &review.version {
            put("version", Value::from(version.as_str()));
        }
        if !review.inputs.is_empty() {
            let pairs = review
                .inputs
                .iter()
                .map(|(k, v)| Value::from(vec![k.as_str(), v.as_str()]))
                .collect::<Vec<_>>();
            put("inputs", Value::from(pairs));
        }
        put("at", Value::from(at.0));
        for (key, value) in &review.body {
            map.insert(key.clone(), value.clone());
        }
        ReviewRecord(map)
    }

    /// A review record, or `None` for any other line a notes ref holds.
    pub fn from_json(line: &str) -> Option<ReviewRecord> {
        ReviewRecord::of_kind(line, REVIEW)
    }

    /// A record of `kind` that names a commit, read through the fields every record an
    /// outside producer writes has (`bay evidence missing` asks about any kind); `None` for
    /// any other line.
    pub fn of_kind(line: &str, kind: &str) -> Option<ReviewRecord> {
        match serde_json::from_str::<Value>(line).ok()? {
            Value::Object(map) if map.get("kind") == Some(&Value::from(kind)) => {
                let record = ReviewRecord(map);
                (record.commit().is_some() && !record.id().is_empty()).then_some(record)
            }
            _ => None,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.0).expect("a JSON object always serializes")
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn oid(&self, key: &str) -> Option<Oid> {
        self.text(key).and_then(|text| Oid::parse(text).ok())
    }

    pub fn id(&self) -> &str {
        self.text("id").unwrap_or_default()
    }

    pub fn producer(&self) -> &str {
        self.text("producer").unwrap_or_default()
    }

    /// The verdict as written; a word bay does not know reads as `unknown`, never a pass.
    pub fn verdict(&self) -> Verdict {
        self.text("verdict")
            .and_then(Verdict::parse)
            .unwrap_or(Verdict::Unknown)
    }

    pub fn commit(&self) -> Option<Oid> {
        self.oid("commit")
    }

    pub fn tree(&self) -> Option<Oid> {
        self.oid("tree")
    }

    pub fn base_tree(&self) -> Option<Oid> {
        self.oid("base_tree")
    }

    /// Whether `other` says the same as this one, whenever and however it was signed.
    pub fn same_content(&self, other: &ReviewRecord) -> bool {
        let strip = |record: &ReviewRecord| {
            let mut map = record.0.clone();
            map.remove("at");
            map.remove(SIGNATURE);
            map
        };
        strip(self) == strip(other)
    }

    /// Whether the record covers the main commit `commit` with tree `tree` on a first parent
    /// whose tree is `base_tree`: it names the commit, or both trees. A tree alone never
    /// covers a commit, so an undo of an undo needs a review of its own.
    pub fn covers(&self, commit: &Oid, tree: &Oid, base_tree: Option<&Oid>) -> bool {
        self.commit().as_ref() == Some(commit)
            || (self.tree().as_ref() == Some(tree) && self.base_tree().as_ref() == base_tree)
    }
}

/// The `--body` file's text as the fields a record carries: one JSON object, none of whose
/// fields names a field of the record itself.
pub fn parse_body(text: &str) -> Result<Map<String, Value>, String> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| format!("--body is not JSON ({e}); give a file that holds one object"))?;
    let Value::Object(map) = value else {
        return Err(
            "--body holds JSON that is not an object; give one object, such as \
                    {\"findings\": [...]}"
                .into(),
        );
    };
    if let Some(field) = map.keys().find(|key| RECORD_FIELDS.contains(&key.as_str())) {
        return Err(format!(
            "--body names the field {field:?}, which the record holds itself; keep the \
             findings under a field of their own, such as \"findings\""
        ));
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an oid")
    }

    fn review(body: &str) -> Review {
        Review {
            reviewer: "review-bot".into(),
            verdict: Verdict::ProductFailure,
            why: String::new(),
            version: Some("cli-2.3".into()),
            inputs: Vec::new(),
            body: parse_body(body).expect("a body"),
        }
    }

    #[test]
    fn a_record_carries_the_body_and_reads_back_as_written() {
        let record = ReviewRecord::of(
            &review(r#"{"findings": ["null at line 42"]}"#),
            &oid('a'),
            &oid('b'),
            Some(&oid('c')),
            Timestamp(5),
        );
        let back = ReviewRecord::from_json(&record.to_json()).expect("a review");
        assert_eq!(back, record);
        assert_eq!(back.verdict(), Verdict::ProductFailure);
        assert_eq!(back.producer(), "review-bot");
        assert!(
            back.id()
                .starts_with(&format!("review-bot/review/{}/", oid('a')))
        );
        assert_eq!(back.0["findings"][0], "null at line 42");
        // Written again later, it says the same; another finding does not.
        let later = ReviewRecord::of(
            &review(r#"{"findings": ["null at line 42"]}"#),
            &oid('a'),
            &oid('b'),
            Some(&oid('c')),
            Timestamp(9),
        );
        assert!(later.same_content(&record));
        let other = ReviewRecord::of(
            &review(r#"{"findings": []}"#),
            &oid('a'),
            &oid('b'),
            Some(&oid('c')),
            Timestamp(9),
        );
        assert!(!other.same_content(&record));
        assert_eq!(other.id(), record.id(), "the body is no part of the id");
    }

    #[test]
    fn a_record_covers_its_commit_or_both_its_trees_never_a_tree_alone() {
        let record = ReviewRecord::of(
            &review("{}"),
            &oid('a'),
            &oid('b'),
            Some(&oid('c')),
            Timestamp(0),
        );
        assert!(record.covers(&oid('a'), &oid('e'), None));
        assert!(record.covers(&oid('d'), &oid('b'), Some(&oid('c'))));
        assert!(!record.covers(&oid('d'), &oid('b'), Some(&oid('e'))));
        assert!(!record.covers(&oid('d'), &oid('b'), None));
    }

    #[test]
    fn a_body_is_one_object_that_names_no_field_of_the_record() {
        for (body, said) in [
            ("[1]", "not an object"),
            ("{", "not JSON"),
            (r#"{"verdict": "pass"}"#, "\"verdict\""),
            (r#"{"signature": "x"}"#, "\"signature\""),
        ] {
            let why = parse_body(body).expect_err(body);
            assert!(why.contains(said), "{why}");
        }
        assert!(ReviewRecord::from_json(r#"{"kind":"check"}"#).is_none());
    }
}
