//! Signing: what a driver signs with a private key the action names, as Git signs commits
//! (a `gpgsig` header, SSHSIG under the namespace `git`) and as bay signs an evidence record
//! (its canonical bytes, `bay-evidence`). Both arms sign with the same test key; core's own
//! verifier judges what they wrote, so a model that signs other bytes than Git would, or
//! puts the signature where Git does not, differs from the golden file.

use bay_core::id::OpId;
use bay_core::machine::{
    Action, BuildResult, CandidateSpec, Completion, Expect, NoteAdd, PushPlan, RegistryWrite,
};
use bay_core::time::Timestamp;
use bay_core::trust::record::{EVIDENCE_NAMESPACE, canonical};
use bay_core::trust::registry::{COMMIT_NAMESPACE, judge_chain, split_signed};
use bay_core::trust::{AllowedSigners, verify, verify_by_key};

use super::Case;

/// A test key, made with `ssh-keygen -t ed25519 -N ""`: it signs nothing but these cases.
const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACC7ugyZwgiyHxZX/Y9GoDgnPG/d/NzB/bYfXvU81UmJdgAAAJjZ6CwK2egs
CgAAAAtzc2gtZWQyNTUxOQAAACC7ugyZwgiyHxZX/Y9GoDgnPG/d/NzB/bYfXvU81UmJdg
AAAEBvUbzjtszcssFHu+MYhYkMOmj5QYD5gbU31U7G3KI+kru6DJnCCLIfFlf9j0agOCc8
b9383MH9th9e9TzVSYl2AAAAD2JheS1jb25mb3JtYW5jZQECAwQFBg==
-----END OPENSSH PRIVATE KEY-----
";
const PUBLIC: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILu6DJnCCLIfFlf9j0agOCc8b9383MH9th9e9TzVSYl2";

fn signers(principal: &str) -> AllowedSigners {
    AllowedSigners::parse(&format!("{principal} {PUBLIC}\n")).expect("an allowed-signers line")
}

pub(super) fn cases() -> Vec<Case> {
    vec![Case::new(
        "signing: a candidate and a registry version signed as Git signs commits, and a record",
        |b| {
            b.commit("O", &[], &[("a", "a1\n")]);
            b.commit("D", &["O"], &[("a", "a2\n")]);
            let key = b.signing_key(KEY);
            let op = OpId::parse("c7k2m4qa.1").expect("an op id");
            let spec = CandidateSpec {
                candidate: op.candidate(1),
                base: b.oid("O"),
                draft: b.oid("D"),
                merge_base: b.oid("O"),
                message: "candidate c7k2m4qa.1.1\n".to_owned(),
                sign: Some(key.clone()),
            };
            let shown = match b.execute(&Action::BuildCandidate(spec)) {
                Completion::CandidateBuilt(Ok(BuildResult::Clean { commit, .. })) => {
                    let read = Action::ReadCommits {
                        commits: vec![commit],
                    };
                    match b.execute(&read) {
                        Completion::CommitsRead(Ok(raws)) => raws
                            .first()
                            .and_then(|raw| split_signed(raw))
                            .map_or("no signature".to_owned(), |(payload, signature)| {
                                verify_by_key(
                                    &signers("runner"),
                                    COMMIT_NAMESPACE,
                                    payload.as_bytes(),
                                    signature.as_bytes(),
                                )
                                .name()
                                .to_owned()
                            }),
                        other => format!("read {other:?}"),
                    }
                }
                other => format!("built {other:?}"),
            };
            b.see("candidate signature", shown);
            let write = RegistryWrite {
                parent: None,
                files: vec![("registry".to_owned(), format!("admin {PUBLIC}\n"))],
                message: "bay: enrol registry admin\n".to_owned(),
                at: Timestamp::from_secs(1_800_000_000),
                key: key.clone(),
            };
            let shown = match b.execute(&Action::WriteRegistry(write)) {
                Completion::RegistryWritten(Ok(first)) => {
                    match b.execute(&Action::ReadRegistry { tip: first.oid }) {
                        Completion::RegistryRead(Ok(chain)) => match judge_chain(&chain) {
                            Ok(version) => format!("judged, {} file", version.files().len()),
                            Err(broken) => format!("broken: {}", broken.why),
                        },
                        other => format!("read {other:?}"),
                    }
                }
                other => format!("written {other:?}"),
            };
            b.see("registry version", shown);
            let record =
                r#"{"schema":"bay.evidence/1","kind":"check","producer":"p","check":"unit"}"#;
            let plan = PushPlan {
                notes: vec![NoteAdd {
                    producer: "p".to_owned(),
                    expect: Expect::Absent,
                    object: b.oid("O"),
                    record: record.to_owned(),
                    key: Some(key),
                }],
                atomic: true,
                ..PushPlan::default()
            };
            b.push("signed record", "", plan);
            let object = b.oid("O");
            let lines = b.notes("refs/notes/bay/evidence/p", &object);
            let shown: Vec<String> = lines
                .iter()
                .map(|line| {
                    let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                    let signature = value["signature"].as_str().unwrap_or_default();
                    let bytes = canonical(line).unwrap_or_default();
                    verify(
                        &signers("p"),
                        "p",
                        EVIDENCE_NAMESPACE,
                        &bytes,
                        signature.as_bytes(),
                    )
                    .name()
                    .to_owned()
                })
                .collect();
            b.see("record signature", shown.join(", "));
        },
    )]
}
