//! Test keys are signed with here by `ssh-key` itself (ed25519 signs deterministically): the
//! private halves below are test fixtures only; bay's own signing is the drivers'.

use ssh_key::{HashAlg, LineEnding, PrivateKey};

use super::*;
use crate::trust::registry::RegistryFile;

const REGISTRY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";

const EXECUTOR: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACBB2TJjouqsZZpejWZY7qUqKCLNF5xCP42yC2oArm7DfAAAAIh2broidm66
IgAAAAtzc2gtZWQyNTUxOQAAACBB2TJjouqsZZpejWZY7qUqKCLNF5xCP42yC2oArm7DfA
AAAECKgKIUQXtxdVWxq/OqkcoawvtXqgRF87Lawpg3Ee9ikEHZMmOi6qxlml6NZljupSoo
Is0XnEI/jbILagCubsN8AAAAAAECAwQF
-----END OPENSSH PRIVATE KEY-----
";
const EXECUTOR_PUB: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEHZMmOi6qxlml6NZljupSooIs0XnEI/jbILagCubsN8";

const PRODUCER: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACAZcJAjbRDiLiPUrj3OMbgZgikA8HvPmH53mf55nq9S/QAAAIi0L1sJtC9b
CQAAAAtzc2gtZWQyNTUxOQAAACAZcJAjbRDiLiPUrj3OMbgZgikA8HvPmH53mf55nq9S/Q
AAAEDBsGdeadDRZAmTpC4EeMWG+WUmaPacuHuV6eUpKM/YUhlwkCNtEOIuI9SuPc4xuBmC
KQDwe8+YfneZ/nmer1L9AAAAAAECAwQF
-----END OPENSSH PRIVATE KEY-----
";
const PRODUCER_PUB: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBlwkCNtEOIuI9SuPc4xuBmCKQDwe8+YfneZ/nmer1L9";

fn sign(private: &str, namespace: &str, message: &[u8]) -> String {
    let key = PrivateKey::from_openssh(private).expect("a test key");
    let sig = key
        .sign(namespace, HashAlg::Sha512, message)
        .expect("ed25519 signs");
    sig.to_pem(LineEnding::LF).expect("armours")
}

fn version(list: &[(&str, String)]) -> Version {
    let mut files: Vec<RegistryFile> = list
        .iter()
        .map(|(name, text)| RegistryFile {
            name: (*name).to_owned(),
            text: Some(text.clone()),
        })
        .collect();
    files.push(RegistryFile {
        name: "registry".into(),
        text: Some(format!("admin {REGISTRY}\n")),
    });
    Version::read(&files).expect("a registry in bay's shape")
}

/// `executor` holds the executor key as `r1`, `producer` the producer key as `r1`.
fn enrolled() -> Version {
    version(&[
        ("executor", format!("r1 {EXECUTOR_PUB}\n")),
        ("producer", format!("r1 {PRODUCER_PUB}\n")),
    ])
}

fn all(registry: &Version) -> Keys<'_> {
    Keys {
        registry: Some(registry),
        signing: Signing::All,
    }
}

const HEADERS: &str = "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\
                       parent 1111111111111111111111111111111111111111\n\
                       author bay <bay@localhost> 1700000000 +0000\n\
                       committer bay <bay@localhost> 1700000000 +0000\n";

/// A commit signed as Git signs one, by `private`.
fn signed_commit(private: &str, message: &str) -> String {
    let payload = format!("{HEADERS}\n{message}");
    let signature = sign(private, COMMIT_NAMESPACE, payload.as_bytes());
    let signature = signature.trim_end().replace('\n', "\n ");
    format!("{HEADERS}gpgsig {signature}\n\n{message}")
}

const RECORD: &str = r#"{"schema":"bay.evidence/1","producer":"r1","check":"unit","verdict":"pass","at":1700000000123,"trust":"signed"}"#;

fn signed_record(private: &str, record: &str) -> String {
    let bytes = canonical(record).expect("a record");
    with_signature(record, &sign(private, EVIDENCE_NAMESPACE, &bytes)).expect("a record")
}

#[test]
fn a_merge_signed_by_an_executor_key_is_signed_only_under_a_registry_that_signs_all() {
    let registry = enrolled();
    let raw = signed_commit(EXECUTOR, "Merge c7k2m4qa\n");
    assert_eq!(all(&registry).commit(&raw), Trust::Signed);
    let approvals = Keys {
        registry: Some(&registry),
        signing: Signing::Approvals,
    };
    assert_eq!(approvals.commit(&raw), Trust::Approvals);
    let none = Keys {
        registry: None,
        signing: Signing::All,
    };
    assert_eq!(none.commit(&raw), Trust::Unsigned);
}

#[test]
fn a_forged_or_missing_merge_signature_is_unsigned() {
    let registry = enrolled();
    let keys = all(&registry);
    // A producer key is enrolled, but not to sign merges.
    assert_eq!(
        keys.commit(&signed_commit(PRODUCER, "Merge\n")),
        Trust::Unsigned
    );
    // Other bytes than those signed: the message changed after signing.
    let tampered = signed_commit(EXECUTOR, "Merge\n").replace("Merge\n", "Merged\n");
    assert_eq!(keys.commit(&tampered), Trust::Unsigned);
    // No signature at all.
    assert_eq!(keys.commit(&format!("{HEADERS}\nMerge\n")), Trust::Unsigned);
}

#[test]
fn a_record_counts_as_signed_only_when_its_signature_verifies_whatever_it_says() {
    let registry = enrolled();
    let keys = all(&registry);
    let signed = signed_record(PRODUCER, RECORD);
    assert_eq!(keys.record(&signed), Trust::Signed);
    // Key order and spacing are not what is signed.
    let value: serde_json::Value = serde_json::from_str(&signed).expect("json");
    let pretty = serde_json::to_string_pretty(&value).expect("json");
    assert_eq!(keys.record(&pretty), Trust::Signed);
    // It says `trust: signed`, but carries no signature.
    assert_eq!(keys.record(RECORD), Trust::Unsigned);
    // A verdict changed after signing.
    let changed = signed.replace("\"pass\"", "\"fail\"");
    assert_eq!(keys.record(&changed), Trust::Unsigned);
    // Signed by the executor key, which signs no records.
    assert_eq!(
        keys.record(&signed_record(EXECUTOR, RECORD)),
        Trust::Unsigned
    );
    // Signed by r1's key, but claiming another producer.
    let other = RECORD.replace("\"r1\"", "\"r2\"");
    assert_eq!(
        keys.record(&signed_record(PRODUCER, &other)),
        Trust::Unsigned
    );
    // Signed under another namespace.
    let bytes = canonical(RECORD).expect("a record");
    let git = with_signature(RECORD, &sign(PRODUCER, "git", &bytes)).expect("a record");
    assert_eq!(keys.record(&git), Trust::Unsigned);
    // Not a record at all.
    assert_eq!(keys.record("not json"), Trust::Unsigned);
}

#[test]
fn reuse_under_a_registry_that_signs_everything_takes_only_signed_records() {
    let registry = enrolled();
    let signed = signed_record(PRODUCER, RECORD);
    let records = vec![
        RECORD.to_owned(),
        signed.clone(),
        signed_record(EXECUTOR, RECORD),
        signed.replace("1700000000123", "1700000000124"),
    ];
    assert_eq!(
        crate::check::reuse::signed_only(records, &registry),
        vec![signed],
        "the unsigned, the executor-signed and the changed-after-signing records are dropped"
    );
}

#[test]
fn a_review_verifies_only_against_the_reviewer_file_and_never_as_a_producer() {
    let review = RECORD.replace("\"check\":\"unit\",", "\"kind\":\"review\",");
    // The same key, enrolled as producer r1: a review it signs does not count.
    let as_producer = enrolled();
    assert_eq!(
        all(&as_producer).record(&signed_record(PRODUCER, &review)),
        Trust::Unsigned
    );
    // Enrolled as reviewer r1, it signs the review, and no check record.
    let as_reviewer = version(&[("reviewer", format!("r1 {PRODUCER_PUB}\n"))]);
    let keys = all(&as_reviewer);
    assert_eq!(
        keys.record(&signed_record(PRODUCER, &review)),
        Trust::Signed
    );
    assert_eq!(
        keys.record(&signed_record(PRODUCER, RECORD)),
        Trust::Unsigned
    );
    assert_eq!(signer_class("review"), Class::Reviewer);
    assert_eq!(signer_class("waiver"), Class::Approver);
    assert_eq!(signer_class("check"), Class::Producer);
}

#[test]
fn a_removed_key_vouches_only_for_what_it_signed_before_a_rotation() {
    let signed = signed_record(PRODUCER, RECORD);
    let removed = |reason: &str, at: &str| {
        version(&[
            ("executor", format!("r1 {EXECUTOR_PUB}\n")),
            ("producer", String::new()),
            (
                "removed",
                format!("producer r1 {reason} {at} {PRODUCER_PUB}\n"),
            ),
        ])
    };
    // The record's `at` is 2023-11-14T22:13:20Z.
    let later = removed("rotated", "2026-10-17T19:30:02Z");
    assert_eq!(all(&later).record(&signed), Trust::Signed);
    let earlier = removed("rotated", "2020-01-01T00:00:00Z");
    assert_eq!(all(&earlier).record(&signed), Trust::Unsigned);
    let revoked = removed("revoked", "2026-10-17T19:30:02Z");
    assert_eq!(all(&revoked).record(&signed), Trust::Unsigned);
    // The same for a merge: the committer time is 2023-11-14T22:13:20Z.
    let raw = signed_commit(EXECUTOR, "Merge\n");
    let gone = |reason: &str| {
        version(&[
            ("executor", String::new()),
            (
                "removed",
                format!("executor r1 {reason} 2026-10-17T19:30:02Z {EXECUTOR_PUB}\n"),
            ),
        ])
    };
    assert_eq!(all(&gone("rotated")).commit(&raw), Trust::Signed);
    assert_eq!(all(&gone("revoked")).commit(&raw), Trust::Unsigned);
}

fn setting(public: &str) -> KeySetting {
    KeySetting {
        path: format!("/keys/{}", &public[public.len() - 6..]),
        public: PublicKey::from_pub_file(public),
    }
}

#[test]
fn a_runner_signs_only_with_both_keys_enrolled_under_a_registry_that_signs_all() {
    let registry = enrolled();
    let executor = setting(EXECUTOR_PUB);
    let producer = setting(PRODUCER_PUB);
    // No registry, or approvals only: the runner signs nothing and needs no key.
    assert_eq!(runner_keys(None, Signing::All, "r1", None, None), Ok(None));
    assert_eq!(
        runner_keys(Some(&registry), Signing::Approvals, "r1", None, None),
        Ok(None)
    );
    assert_eq!(
        runner_keys(
            Some(&registry),
            Signing::All,
            "r1",
            Some(&executor),
            Some(&producer)
        ),
        Ok(Some(RunnerSigner {
            executor_key: executor.path.clone(),
            producer_key: producer.path.clone(),
            executor_signers: format!("r1 {EXECUTOR_PUB}\n"),
            executor_public: EXECUTOR_PUB.to_owned(),
        }))
    );
    let refused = |executor: Option<&KeySetting>, producer: Option<&KeySetting>, runner: &str| {
        runner_keys(Some(&registry), Signing::All, runner, executor, producer)
            .expect_err("refused")
            .into_iter()
            .map(|problem| (problem.setting, problem.why))
            .collect::<Vec<_>>()
    };
    let problems = refused(None, Some(&producer), "r1");
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].0, "bay.executorKey");
    assert!(problems[0].1.contains("not set"), "{problems:?}");
    // Each key in the other's file: neither is enrolled where it signs.
    let problems = refused(Some(&producer), Some(&executor), "r1");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|(_, why)| why.contains("not enrolled")));
    // The producer key is enrolled under another runner's name.
    let problems = refused(Some(&executor), Some(&producer), "r2");
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].0, "bay.producerKey");
    assert!(problems[0].1.contains("not under this runner's name r2"));
    // A key file bay cannot read.
    let unreadable = KeySetting {
        path: "/keys/gone".into(),
        public: Err("cannot read the key".into()),
    };
    let problems = refused(Some(&unreadable), Some(&producer), "r1");
    assert!(problems[0].1.contains("/keys/gone"), "{problems:?}");
}
