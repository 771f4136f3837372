//! SSHSIG with ssh-keygen as the oracle: a signature bay makes verifies with `ssh-keygen -Y
//! verify`, one ssh-keygen makes verifies in bay, and for ed25519, whose signatures are
//! deterministic, bay's bytes are ssh-keygen's. Every way a signature can fail to count
//! fails by name, in bay and in ssh-keygen alike.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bay_core::trust::{AllowedSigners, PublicKey, Verdict, verify, verify_by_key};
use bay_drivers::sign::SigningKey;

const NS: &str = "bay-verdict";
const MESSAGE: &[u8] = b"candidate c7k2m4qa.1 passed\n";

/// The key types ssh-keygen makes that bay signs with, and their `-t`/`-b` arguments.
const TYPES: [(&str, &[&str]); 3] = [
    ("ssh-ed25519", &["-t", "ed25519"]),
    ("ecdsa-sha2-nistp256", &["-t", "ecdsa", "-b", "256"]),
    ("ssh-rsa", &["-t", "rsa", "-b", "3072"]),
];

fn keygen(args: &[&str], stdin: &[u8]) -> (bool, Vec<u8>, String) {
    let mut child = Command::new("ssh-keygen")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ssh-keygen runs (CI installs openssh-client)");
    // ssh-keygen may exit without reading its input (a verify that fails on the signature
    // file first): the write then meets a closed pipe, which says nothing of the outcome.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

struct Key {
    private: PathBuf,
    public: PublicKey,
    line: String,
}

fn make_key(dir: &Path, name: &str, args: &[&str]) -> Key {
    let private = dir.join(name);
    let mut all = args.to_vec();
    let path = private.to_str().unwrap();
    all.extend(["-q", "-N", "", "-C", name, "-f", path]);
    let (ok, _, err) = keygen(&all, b"");
    assert!(ok, "ssh-keygen made no key: {err}");
    let line = std::fs::read_to_string(dir.join(format!("{name}.pub"))).unwrap();
    Key {
        private,
        public: PublicKey::from_pub_file(&line).unwrap(),
        line,
    }
}

fn signers_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("allowed_signers");
    std::fs::write(&path, text).unwrap();
    path
}

fn keygen_verify(signers: &Path, principal: &str, ns: &str, sig: &[u8], message: &[u8]) -> bool {
    let sig_path = signers.with_file_name("msg.sig");
    std::fs::write(&sig_path, sig).unwrap();
    let (ok, _, _) = keygen(
        &[
            "-Y",
            "verify",
            "-f",
            signers.to_str().unwrap(),
            "-I",
            principal,
            "-n",
            ns,
            "-s",
            sig_path.to_str().unwrap(),
        ],
        message,
    );
    ok
}

fn keygen_sign(key: &Key, ns: &str, message: &[u8]) -> Vec<u8> {
    let (ok, sig, err) = keygen(
        &["-Y", "sign", "-n", ns, "-f", key.private.to_str().unwrap()],
        message,
    );
    assert!(ok, "ssh-keygen did not sign: {err}");
    sig
}

#[test]
fn each_key_type_signs_for_ssh_keygen_and_verifies_its_signatures() {
    let dir = tempfile::tempdir().unwrap();
    for (algorithm, args) in TYPES {
        let key = make_key(dir.path(), &algorithm.replace('-', "_"), args);
        assert_eq!(key.public.algorithm(), algorithm);
        let fields: Vec<&str> = key.line.split_whitespace().collect();
        let file = format!("agent-7@bay {} {}\n", fields[0], fields[1]);
        let path = signers_file(dir.path(), &file);
        let signers = AllowedSigners::parse(&file).unwrap();

        let signing = SigningKey::load(&key.private).unwrap();
        assert_eq!(signing.public(), &key.public);
        let ours = signing.sign(NS, MESSAGE).expect(algorithm);
        assert!(
            keygen_verify(&path, "agent-7@bay", NS, ours.as_bytes(), MESSAGE),
            "{algorithm}: ssh-keygen refused bay's signature"
        );
        let theirs = keygen_sign(&key, NS, MESSAGE);
        let verdict = verify(&signers, "agent-7@bay", NS, MESSAGE, &theirs);
        assert!(
            matches!(&verdict, Verdict::Good { principal, line: 1, algorithm: a, .. }
                if principal == "agent-7@bay" && a == algorithm),
            "{algorithm}: {verdict:?}"
        );
        assert!(verify_by_key(&signers, NS, MESSAGE, ours.as_bytes()).is_good());
        if algorithm == "ssh-ed25519" {
            assert_eq!(
                ours.as_bytes(),
                theirs.as_slice(),
                "ed25519 is deterministic"
            );
        }
    }
}

#[test]
fn every_way_a_signature_fails_is_named_and_ssh_keygen_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let key = make_key(dir.path(), "signer", &["-t", "ed25519"]);
    let other = make_key(dir.path(), "other", &["-t", "ed25519"]);
    let file = format!("agent-7@bay {}", key.public.openssh());
    let path = signers_file(dir.path(), &file);
    let signers = AllowedSigners::parse(&file).unwrap();
    let sig = SigningKey::load(&key.private)
        .unwrap()
        .sign(NS, MESSAGE)
        .unwrap();
    let sig = sig.as_bytes();
    let by_other = SigningKey::load(&other.private)
        .unwrap()
        .sign(NS, MESSAGE)
        .unwrap();

    // (the verdict's name, principal, namespace, message, signature)
    type Case<'a> = (&'a str, &'a str, &'a str, &'a [u8], &'a [u8]);
    let cases: [Case; 5] = [
        (
            "other_bytes",
            "agent-7@bay",
            NS,
            b"candidate c7k2m4qa.1 failed\n",
            sig,
        ),
        ("wrong_namespace", "agent-7@bay", "git", MESSAGE, sig),
        ("principal_unknown", "agent-8@bay", NS, MESSAGE, sig),
        (
            "key_not_allowed",
            "agent-7@bay",
            NS,
            MESSAGE,
            by_other.as_bytes(),
        ),
        (
            "malformed",
            "agent-7@bay",
            NS,
            MESSAGE,
            b"-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
        ),
    ];
    for (name, principal, ns, message, sig) in cases {
        let verdict = verify(&signers, principal, ns, message, sig);
        assert_eq!(verdict.name(), name, "{verdict:?}");
        assert!(
            !keygen_verify(&path, principal, ns, sig, message),
            "ssh-keygen took the {name} case"
        );
    }
    // The good case, for contrast, passes both.
    assert!(verify(&signers, "agent-7@bay", NS, MESSAGE, sig).is_good());
    assert!(keygen_verify(&path, "agent-7@bay", NS, sig, MESSAGE));
}

#[test]
fn options_restrict_a_line_as_ssh_keygen_does() {
    let dir = tempfile::tempdir().unwrap();
    let key = make_key(dir.path(), "signer", &["-t", "ed25519"]);
    let sig = SigningKey::load(&key.private)
        .unwrap()
        .sign(NS, MESSAGE)
        .unwrap();
    for (options, counts) in [
        ("namespaces=\"bay-*\"", true),
        ("namespaces=\"git\"", false),
        ("cert-authority", false),
    ] {
        let file = format!("\"*@bay\" {options} {}\n", key.public.openssh());
        let path = signers_file(dir.path(), &file);
        let signers = AllowedSigners::parse(&file).unwrap();
        let verdict = verify(&signers, "agent-7@bay", NS, MESSAGE, sig.as_bytes());
        assert_eq!(verdict.is_good(), counts, "{options}: {verdict:?}");
        assert_eq!(
            keygen_verify(&path, "agent-7@bay", NS, sig.as_bytes(), MESSAGE),
            counts,
            "ssh-keygen on {options}"
        );
    }
}

#[test]
fn keys_bay_cannot_sign_with_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("locked");
    let (ok, _, err) = keygen(
        &[
            "-t",
            "ed25519",
            "-q",
            "-N",
            "secret",
            "-f",
            private.to_str().unwrap(),
        ],
        b"",
    );
    assert!(ok, "{err}");
    let err = SigningKey::load(&private).unwrap_err();
    assert!(err.contains("passphrase"), "{err}");
    let public = std::fs::read_to_string(dir.path().join("locked.pub")).unwrap();
    let err = SigningKey::from_openssh(&public).unwrap_err();
    assert!(err.contains("not an OpenSSH private key"), "{err}");
    let err = PublicKey::from_pub_file(&std::fs::read_to_string(&private).unwrap()).unwrap_err();
    assert!(err.contains("private key"), "{err}");
}
