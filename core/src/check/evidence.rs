//! The evidence record: what bay keeps, as a Git note on the candidate's tree, about one run of
//! one check.
//!
//! A record is read later, by other machines and other versions of bay, to decide whether a
//! candidate may merge without running the check again. So it names everything the verdict
//! rests on (the exact candidate and base, the policy revision, the counts) and serializes in
//! one stable field order, so the same run always gives the same bytes to sign and compare.

use serde::{Deserialize, Serialize};

use super::footprint::{Carried, Stamp};
use super::{CheckExit, CheckRequest, CommitTree, JudgedCheck, UnitReason, Verdict, schema_tag};
use crate::time::Timestamp;

schema_tag! {
    /// The `schema` of an evidence record: always `bay.evidence/1`.
    EvidenceSchema = "bay.evidence/1"
}

/// What a record needs beyond the request, the run and its judgement: who wrote it, for which
/// operation and candidate, and when by the writer's own clock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct EvidenceExtras {
    pub producer: String,
    pub op: String,
    pub candidate_id: String,
    pub at: Timestamp,
    /// The check's definition digest (`check::definition::digest`).
    pub definition: String,
}

/// One `bay.evidence/1` record. Serialized field order is the declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    pub schema: EvidenceSchema,
    /// The producer that ran the check and writes the record.
    pub producer: String,
    /// The check's id in the policy.
    pub check: String,
    pub environment: String,
    pub candidate: CommitTree,
    pub base: CommitTree,
    /// The policy revision the check was judged by.
    pub policy_revision: String,
    pub verdict: Verdict,
    pub why: String,
    pub units: u64,
    pub selected: Option<u64>,
    pub completed: Option<u64>,
    pub failed: Vec<UnitReason>,
    pub millis: u64,
    /// `None` when a signal ended the check, or when it never ran.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub op: String,
    pub candidate_id: String,
    /// The producer's clock when it wrote the record; informational, never compared across
    /// machines.
    pub at: Timestamp,
    /// What the record counts for: the exact tree, or (`commit`) only the exact commit. Left
    /// out for a tree, so a record of a check that reads only its tree keeps its bytes.
    #[serde(default, skip_serializing_if = "EvidenceKey::is_tree")]
    pub key: EvidenceKey,
    /// The machine's directories the sandbox let the check read, read-only; left out when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandbox_read: Vec<String>,
    /// The check's definition digest: its keys that shape a run, and what its `adapter` files
    /// held (`check::definition`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub definition: String,
    /// For a check that declares its read set (`footprint = true`), under `footprint_lanes`:
    /// the digests of what its verdict rests on (`check::footprint::Stamp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footprint: Option<Stamp>,
    /// A pass carried from another candidate of the same operation with the same stamp: the
    /// record it came from. The check did not run on this candidate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<Carried>,
}

/// What one record counts for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvidenceKey {
    /// Any commit with the candidate's tree.
    #[default]
    Tree,
    /// Only the candidate's commit: the check read the commit or history, or saw only the
    /// files the commit changes against its base.
    Commit,
}

impl EvidenceKey {
    fn is_tree(&self) -> bool {
        *self == EvidenceKey::Tree
    }
}

impl EvidenceRecord {
    /// The record of one judged run.
    ///
    /// It takes a [`JudgedCheck`], not a `Judgement`, because an `unavailable` answer keeps no
    /// record at all.
    pub fn new(
        request: &CheckRequest,
        judged: &JudgedCheck,
        exit: &CheckExit,
        extras: EvidenceExtras,
    ) -> EvidenceRecord {
        let EvidenceExtras {
            producer,
            op,
            candidate_id,
            at,
            definition,
        } = extras;
        EvidenceRecord {
            schema: EvidenceSchema,
            producer,
            check: request.plan.id.clone(),
            environment: request.requires.environment.clone(),
            candidate: request.candidate.clone(),
            base: request.base.clone(),
            policy_revision: request.plan.version.clone(),
            verdict: judged.verdict,
            why: judged.why.clone(),
            units: judged.units,
            selected: judged.selected,
            completed: judged.completed,
            failed: judged.failed.clone(),
            millis: exit.millis,
            exit_code: exit.exit_code,
            timed_out: exit.timed_out,
            op,
            candidate_id,
            at,
            key: if request.keyed_by_commit() {
                EvidenceKey::Commit
            } else {
                EvidenceKey::Tree
            },
            sandbox_read: exit.sandbox_read.clone(),
            definition,
            footprint: None,
            carried: None,
        }
    }

    /// Compact JSON in the declaration order of the fields, the bytes bay writes as the note.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self)
            .expect("a record is plain data with string keys, which always serializes")
    }

    /// Reads a record back, refusing one of another schema.
    pub fn from_json(text: &str) -> Result<EvidenceRecord, String> {
        serde_json::from_str(text).map_err(|e| format!("not a bay.evidence/1 record: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckTarget, RequestInput, judge};
    use crate::git::Oid;

    fn oid(digit: char) -> Oid {
        Oid::parse(&digit.to_string().repeat(40)).expect("forty hex digits")
    }

    fn request() -> CheckRequest {
        CheckRequest::build(RequestInput {
            target: CheckTarget {
                id: "unit".into(),
                environment: "linux-x86_64".into(),
                timeout_s: 600,
                expected_minimum: 1,
                fixtures: vec![],
                inputs: vec![],
                materialized: None,
            },
            policy_revision: "p7".into(),
            candidate: CommitTree {
                commit: oid('a'),
                tree: oid('b'),
            },
            base: CommitTree {
                commit: oid('c'),
                tree: oid('d'),
            },
            changed_paths: vec![],
            change: None,
        })
    }

    fn extras() -> EvidenceExtras {
        EvidenceExtras {
            producer: "ci-1".into(),
            op: "c7k2m4qa.1".into(),
            candidate_id: "c7k2m4qa.1.1".into(),
            at: Timestamp(1_700_000_000_123),
            definition: "d".repeat(64),
        }
    }

    fn failing_run() -> (CheckRequest, JudgedCheck, CheckExit) {
        let request = request();
        let stdout = format!(
            r#"{{"schema":"bay.check.result/1","exercised":{{"commit":"{}","tree":"{}"}},
               "plan":{{"selected":2,"completed":2}},
               "checks":[{{"id":"t1","verdict":"pass"}},
                         {{"id":"t2","verdict":"product_failure","reason":"boom"}}]}}"#,
            "a".repeat(40),
            "b".repeat(40)
        );
        let exit = CheckExit {
            stdout: stdout.into_bytes(),
            exit_code: Some(1),
            timed_out: false,
            millis: 1234,
            infra: None,
            sandbox_read: vec![],
            adapter: vec![],
            stderr_log: None,
        };
        let judged = judge(&request, 1, &exit)
            .judged()
            .cloned()
            .expect("a judged run");
        (request, judged, exit)
    }

    #[test]
    fn a_record_has_a_stable_compact_shape() {
        let (request, judged, exit) = failing_run();
        let record = EvidenceRecord::new(&request, &judged, &exit, extras());
        let golden = format!(
            concat!(
                r#"{{"schema":"bay.evidence/1","producer":"ci-1","check":"unit","#,
                r#""environment":"linux-x86_64","#,
                r#""candidate":{{"commit":"{a}","tree":"{b}"}},"#,
                r#""base":{{"commit":"{c}","tree":"{d}"}},"#,
                r#""policy_revision":"p7","verdict":"product_failure","why":{why},"#,
                r#""units":2,"selected":2,"completed":2,"#,
                r#""failed":[{{"id":"t2","verdict":"product_failure","reason":"boom"}}],"#,
                r#""millis":1234,"exit_code":1,"timed_out":false,"#,
                r#""op":"c7k2m4qa.1","candidate_id":"c7k2m4qa.1.1","at":1700000000123,"#,
                r#""definition":"{e}"}}"#,
            ),
            a = "a".repeat(40),
            b = "b".repeat(40),
            c = "c".repeat(40),
            d = "d".repeat(40),
            e = "d".repeat(64),
            why = serde_json::to_string(&judged.why).expect("a string serializes"),
        );
        assert_eq!(record.to_json(), golden);
    }

    #[test]
    fn a_record_round_trips() {
        let (request, judged, exit) = failing_run();
        let record = EvidenceRecord::new(&request, &judged, &exit, extras());
        assert_eq!(
            EvidenceRecord::from_json(&record.to_json()),
            Ok(record.clone())
        );

        // A record with no readable result keeps its nulls through the round trip.
        let killed = CheckExit {
            exit_code: None,
            ..CheckExit::default()
        };
        let judged = judge(&request, 1, &killed)
            .judged()
            .cloned()
            .expect("a judged run");
        let record = EvidenceRecord::new(&request, &judged, &killed, extras());
        let json = record.to_json();
        assert!(json.contains(r#""selected":null,"completed":null,"failed":[]"#));
        assert!(json.contains(r#""exit_code":null"#));
        assert_eq!(EvidenceRecord::from_json(&json), Ok(record));
    }

    #[test]
    fn a_commit_keyed_sandboxed_run_says_so_and_names_what_it_read() {
        let (mut request, judged, mut exit) = failing_run();
        request.materialized = Some(crate::check::Materialized::Changed);
        exit.sandbox_read = vec!["/opt/cache".into()];
        let json = EvidenceRecord::new(&request, &judged, &exit, extras()).to_json();
        assert!(
            json.contains(r#""at":1700000000123,"key":"commit","sandbox_read":["/opt/cache"],"#),
            "{json}"
        );
        let record = EvidenceRecord::from_json(&json).expect("it reads back");
        assert_eq!(record.key, EvidenceKey::Commit);
    }

    #[test]
    fn a_record_of_another_schema_is_refused() {
        let (request, judged, exit) = failing_run();
        let json = EvidenceRecord::new(&request, &judged, &exit, extras())
            .to_json()
            .replace("bay.evidence/1", "bay.evidence/2");
        assert!(EvidenceRecord::from_json(&json).is_err());
    }
}
