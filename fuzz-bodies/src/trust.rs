//! The trust readers' bodies: SSHSIG signatures, public keys and allowed-signers files, and
//! versions of the key registry. Their promises: no panic; what is accepted reads back the
//! same where the reader has a writer; a signature over other bytes never verifies; a refusal
//! is one short line with no control characters that says what is wrong; the same input is
//! judged the same twice; a removed key enrolled again is refused by name.

use bay_core::time::Timestamp;
use bay_core::trust::registry::{
    self, Class, Enrolment, Reading, Reason, RegistryFile, Version, next_version,
};
use bay_core::trust::sshsig::{self, Verdict};
use bay_core::trust::{AllowedSigners, PublicKey, verify, verify_by_key};

/// The namespaces bay signs under: Git's for registry commits, and evidence records'.
const NAMESPACES: [&str; 2] = [
    registry::COMMIT_NAMESPACE,
    bay_core::trust::record::EVIDENCE_NAMESPACE,
];

/// The longest refusal a reader may give, in characters.
const MAX_REFUSAL_CHARS: usize = 400;

/// A refusal is one short line with no control characters, and says something.
fn assert_refusal(why: &str) {
    assert!(!why.trim().is_empty(), "an empty refusal");
    assert!(
        !why.chars().any(char::is_control),
        "a refusal with a control character: {why:?}"
    );
    assert!(
        why.chars().count() <= MAX_REFUSAL_CHARS,
        "a refusal of {} characters: {why:?}",
        why.chars().count()
    );
}

fn assert_verdict_words(verdict: &Verdict) {
    match verdict {
        Verdict::Malformed { why } => assert_refusal(why),
        Verdict::WrongNamespace { signed, .. } => {
            assert!(
                signed.len() <= 4 * 1024,
                "a namespace of {} bytes",
                signed.len()
            )
        }
        Verdict::PrincipalUnknown { principal } => assert_refusal(principal),
        Verdict::KeyNotAllowed { fingerprint } => assert!(fingerprint.starts_with("SHA256:")),
        Verdict::Unsupported { algorithm } => assert_refusal(algorithm),
        Verdict::Good { .. } | Verdict::OtherBytes => {}
    }
}

/// `sshsig`: `<message> NUL <armoured signature>` (no NUL: all of it is the signature, over
/// an empty message). The signature is judged against a file that allows the key it names;
/// a good one must fail over any other message, under another principal or namespace, and
/// keep its verdict when armoured again.
pub fn sshsig(data: &[u8]) {
    let (message, armoured) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (&[][..], data),
    };
    let key = match sshsig::signer(armoured) {
        Ok(key) => key,
        Err(why) => {
            assert_refusal(&why);
            let empty = AllowedSigners::default();
            let verdict = verify_by_key(&empty, "git", message, armoured);
            assert!(!verdict.is_good(), "{verdict:?}");
            assert_verdict_words(&verdict);
            return;
        }
    };
    assert_eq!(sshsig::signer(armoured).as_ref(), Ok(&key), "read twice");
    assert_key_reads_back(&key);
    let line = format!("fuzz@bay {}\n", key.openssh());
    let signers = AllowedSigners::parse(&line).expect("a key's own line reads");
    let rearmoured = rearmour(armoured);
    for namespace in NAMESPACES {
        let verdict = verify_by_key(&signers, namespace, message, armoured);
        assert_verdict_words(&verdict);
        assert_eq!(
            verify_by_key(&signers, namespace, message, armoured),
            verdict,
            "judged twice"
        );
        if let Some(again) = &rearmoured {
            assert_eq!(
                verify_by_key(&signers, namespace, message, again.as_bytes()),
                verdict,
                "armoured again: {again}"
            );
        }
        // A line that allows only the other namespace never lets a signature count.
        let narrow = format!(
            "fuzz@bay namespaces=\"not-{namespace}\" {}\n",
            key.openssh()
        );
        let narrow = AllowedSigners::parse(&narrow).expect("a narrowed line reads");
        assert!(!verify_by_key(&narrow, namespace, message, armoured).is_good());
        let Verdict::Good {
            principal,
            fingerprint,
            ..
        } = &verdict
        else {
            continue;
        };
        assert_eq!(principal, "fuzz@bay");
        assert_eq!(fingerprint, &key.fingerprint());
        assert!(verify(&signers, "fuzz@bay", namespace, message, armoured).is_good());
        assert_eq!(
            verify(&signers, "someone-else", namespace, message, armoured),
            Verdict::PrincipalUnknown {
                principal: "someone-else".into()
            }
        );
        for other in NAMESPACES.into_iter().filter(|ns| *ns != namespace) {
            assert!(!verify_by_key(&signers, other, message, armoured).is_good());
        }
        for other in other_messages(message) {
            let verdict = verify_by_key(&signers, namespace, &other, armoured);
            assert!(
                !verdict.is_good(),
                "a signature over {message:?} verified over {other:?}"
            );
        }
    }
}

/// Messages that differ from `message`: one byte more, one less, and one flipped.
fn other_messages(message: &[u8]) -> Vec<Vec<u8>> {
    let mut longer = message.to_vec();
    longer.push(b'\n');
    let mut others = vec![longer];
    if let Some((_, shorter)) = message.split_last() {
        others.push(shorter.to_vec());
    }
    for at in [0, message.len() / 2, message.len().saturating_sub(1)] {
        let mut flipped = message.to_vec();
        if let Some(byte) = flipped.get_mut(at) {
            *byte ^= 0x01;
            others.push(flipped);
        }
    }
    others
}

/// The signature armoured again by the crate that reads it, when it reads.
fn rearmour(armoured: &[u8]) -> Option<String> {
    let sig = ssh_key::SshSig::from_pem(armoured).ok()?;
    assert_eq!(
        sig.version(),
        1,
        "bay took a signature of another SSHSIG version"
    );
    let pem = sig
        .to_pem(ssh_key::LineEnding::LF)
        .expect("a signature that reads writes");
    let again = ssh_key::SshSig::from_pem(&pem).expect("a written signature reads");
    assert_eq!(again, sig, "armoured again: {pem}");
    Some(pem)
}

/// A key written as its line reads back as the same key, with the same fingerprint.
fn assert_key_reads_back(key: &PublicKey) {
    let text = key.openssh();
    assert!(!text.contains(['\n', '\r']), "{text:?}");
    let again = PublicKey::from_pub_file(text).expect("a key's own text reads");
    assert_eq!(&again, key);
    assert_eq!(again.openssh(), text);
    assert_eq!(again.fingerprint(), key.fingerprint());
    assert!(key.fingerprint().starts_with("SHA256:"));
    let (keytype, base64) = text.split_once(' ').expect("`<type> <base64>`");
    assert_eq!(keytype, key.algorithm());
    assert_eq!(PublicKey::from_fields(keytype, base64).as_ref(), Ok(key));
}

/// `key`: the text as a `.pub` file and as an allowed-signers file. A key read writes back as
/// itself; an allowed-signers file's lines each hold a key that does, with at least one
/// principal; a refusal is one short line (and a file's names a line it has).
pub fn key(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let read = PublicKey::from_pub_file(&text);
    assert_eq!(PublicKey::from_pub_file(&text), read, "read twice");
    match &read {
        Ok(key) => assert_key_reads_back(key),
        Err(why) => assert_refusal(why),
    }
    let parsed = AllowedSigners::parse(&text);
    assert_eq!(AllowedSigners::parse(&text), parsed, "read twice");
    match parsed {
        Ok(signers) => {
            let mut last = 0;
            for entry in &signers.entries {
                assert!(entry.line > last, "lines out of order");
                last = entry.line;
                assert!(!entry.principals.is_empty());
                assert_key_reads_back(&entry.key);
                assert!(signers.for_key(&entry.key).count() >= 1);
            }
        }
        Err(error) => {
            assert_refusal(&error.why);
            let lines = text.lines().count();
            assert!(error.line <= lines.max(1), "line {} of {lines}", error.line);
        }
    }
}

/// A registry version from `== <file>` lines, each followed by its text; `==! <file>` is an
/// entry that is no blob; `==@ commit` is followed by the raw commit that holds the version.
/// Text before the first header is ignored.
fn registry_files(text: &str) -> (Vec<RegistryFile>, Option<String>) {
    let mut files: Vec<RegistryFile> = Vec::new();
    let mut commit: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let header = line.trim_end_matches('\n');
        if let Some(raw) = &mut commit {
            raw.push_str(line);
        } else if header == "==@ commit" {
            commit = Some(String::new());
        } else if let Some(name) = header.strip_prefix("==! ") {
            files.push(RegistryFile {
                name: name.to_owned(),
                text: None,
            });
        } else if let Some(name) = header.strip_prefix("== ") {
            files.push(RegistryFile {
                name: name.to_owned(),
                text: Some(String::new()),
            });
        } else if let Some(RegistryFile {
            text: Some(body), ..
        }) = files.last_mut()
        {
            body.push_str(line);
        }
    }
    (files, commit)
}

/// `registry`: a registry version's files. Read twice, the same verdict; a whole version is
/// also a repairable one, and its files written out read back as it; a refusal is one short
/// line naming a file the version has and a line that file has; and each enrolled key,
/// removed, is refused when enrolled again, by name and by the registry's own reading.
pub fn registry(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let (files, commit) = registry_files(&text);
    let whole = Version::read(&files);
    assert_eq!(Version::read(&files), whole, "judged twice");
    let repairable = Version::read_as(&files, Reading::Repairable);
    match &whole {
        Ok(version) => {
            assert_eq!(repairable.as_ref(), Ok(version), "whole but not repairable");
            assert_reads_back(version);
            assert_removed_stays_out(version);
        }
        Err(broken) => {
            assert_refusal(&broken.why);
            if let Some(file) = &broken.file {
                let named = files.iter().find(|f| &f.name == file);
                let named = named.unwrap_or_else(|| panic!("no file `{file}`: {broken:?}"));
                let lines = named.text.as_deref().map_or(0, |t| t.lines().count());
                let line = broken.line.expect("a file's refusal names its line");
                assert!((1..=lines).contains(&line), "line {line} of {lines}");
            }
        }
    }
    if let Ok(version) = &repairable {
        assert_reads_back_as(version, Reading::Repairable);
    }
    if let Some(raw) = commit {
        assert_chain(files, raw, whole.as_ref().ok());
    }
}

/// A chain of one commit: judged twice the same; readable only when its version is whole and
/// its signature verifies, so a commit with other bytes (a changed message or header) is
/// refused; a refusal names the commit and is one short line.
fn assert_chain(files: Vec<RegistryFile>, raw: String, whole: Option<&Version>) {
    let oid = bay_core::git::Oid::parse("1183dd943ddbf0e5e43fb7a659359f480010c97a")
        .expect("an object id");
    let chain = [registry::RegistryCommit { oid, raw, files }];
    let judged = registry::judge_chain(&chain);
    assert_eq!(registry::judge_chain(&chain), judged, "judged twice");
    let repair = registry::judge_for_repair(&chain);
    match &judged {
        Ok(version) => {
            assert_eq!(
                Some(version),
                whole,
                "a readable chain's tip is a whole version"
            );
            assert_eq!(repair.as_ref(), Ok(version));
            let (payload, _) = registry::split_signed(&chain[0].raw).expect("signed");
            assert!(!payload.contains("gpgsig"), "{payload}");
            for other in [
                format!("{}x\n", chain[0].raw),
                chain[0].raw.replacen("bay", "bat", 1),
                chain[0].raw.replacen("\n\n", "\n\n\n", 1),
            ] {
                if other == chain[0].raw {
                    continue;
                }
                let mut changed = chain.clone();
                changed[0].raw = other;
                let broken = registry::judge_chain(&changed).expect_err("other bytes");
                assert_refusal(&broken.why);
            }
        }
        Err(broken) => {
            assert_refusal(&broken.why);
            assert!(broken.commit.is_some(), "{broken:?}");
        }
    }
}

fn written(version: &Version) -> Vec<RegistryFile> {
    version
        .files()
        .into_iter()
        .map(|(name, text)| RegistryFile {
            name,
            text: Some(text),
        })
        .collect()
}

fn assert_reads_back(version: &Version) {
    assert_reads_back_as(version, Reading::Whole);
}

fn assert_reads_back_as(version: &Version, reading: Reading) {
    let again = Version::read_as(&written(version), reading).expect("a version's files read");
    assert_eq!(&again, version, "written and read back");
}

/// Each enrolled key of a whole version, removed, is refused when enrolled again: by
/// `next_version` under any class and name, and by the reading of a version that lists it.
fn assert_removed_stays_out(version: &Version) {
    let Some(signer) = version
        .classes
        .get(&Class::Registry)
        .and_then(|keys| keys.first())
        .map(|enrolled| enrolled.key.clone())
    else {
        return;
    };
    let now = Timestamp::from_secs(1_800_000_000);
    for (class, keys) in &version.classes {
        for enrolled in keys.iter().take(2) {
            let remove = Enrolment::Remove {
                class: *class,
                name: enrolled.name.clone(),
                reason: Reason::Revoked,
            };
            let after = match next_version(Some(version), &remove, &signer, now) {
                Ok(after) => after,
                Err(why) => {
                    assert_refusal(&why);
                    continue;
                }
            };
            assert_reads_back(&after);
            assert!(after.holder(&enrolled.key).is_none(), "removed but held");
            if !after.may_sign(&signer) {
                continue;
            }
            for back in [Class::Agent, *class] {
                let add = Enrolment::Add {
                    class: back,
                    name: "again".into(),
                    key: enrolled.key.clone(),
                };
                let why = next_version(Some(&after), &add, &signer, now)
                    .expect_err("a removed key enrolled again");
                assert_refusal(&why);
                assert!(why.contains(&enrolled.key.fingerprint()), "{why}");
                assert!(why.contains("never enrolled again"), "{why}");
            }
            // A version that lists the removed key again is refused by the file and line.
            let mut relisted = after.clone();
            relisted
                .classes
                .entry(Class::Agent)
                .or_default()
                .push(registry::Enrolled {
                    name: "again".into(),
                    key: enrolled.key.clone(),
                });
            let files = written(&relisted);
            let broken = Version::read(&files).expect_err("a removed key listed again");
            assert_refusal(&broken.why);
            assert!(broken.why.contains("was removed"), "{broken:?}");
            assert!(broken.file.is_some() && broken.line.is_some(), "{broken:?}");
            assert!(Version::read_as(&files, Reading::Repairable).is_ok());
        }
    }
}
