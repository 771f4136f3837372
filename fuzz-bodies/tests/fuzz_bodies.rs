//! The fuzz bodies of `bay_fuzz_bodies`, run without cargo-fuzz: on the committed seeds
//! (`fuzz/seeds/<target>/`), on every minimized crash (`fuzz/regressions/<target>/`), and on a
//! fixed budget of generated inputs (random bytes and mutated seeds from a fixed xorshift
//! seed), so that CI exercises every target on every run.
//!
//! A regression whose file name starts with `open-` is a bug reported and not fixed yet: the
//! test requires that it still fails, so that the fix is noticed and the file renamed (drop the
//! prefix) to guard it from then on. Every other regression must pass.
//!
//! Run with `cargo test -p bay-fuzz-bodies --test fuzz_bodies` (the README's
//! `cargo test --workspace` runs it too). Set `BAY_FUZZ_BUDGET` to a number of generated
//! inputs per target to run more (or fewer).
// The test reads its inputs from the repository; core's ban on IO is for core itself.
#![allow(clippy::disallowed_methods)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use bay_fuzz_bodies as fuzzing;

/// Generated inputs per target when `BAY_FUZZ_BUDGET` is not set.
const DEFAULT_BUDGET: usize = 2_000;

/// The longest generated input.
const MAX_LEN: usize = 2_048;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits inside the workspace")
        .join("fuzz")
}

/// Every file under `fuzz/<kind>/<target>/`, sorted by name; none when the folder is absent.
fn files(kind: &str, target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = fuzz_dir().join(kind).join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|entry| entry.expect("a readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path).expect("a readable input file");
            (path, bytes)
        })
        .collect()
}

fn budget() -> usize {
    std::env::var("BAY_FUZZ_BUDGET")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(DEFAULT_BUDGET)
}

/// xorshift64*: a fixed stream, so that every run tries the same inputs.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// A seed with a few bytes flipped, inserted, removed, or cut off.
fn mutate(rng: &mut XorShift, seed: &[u8]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        match rng.below(4) {
            0 if !out.is_empty() => {
                let at = rng.below(out.len());
                out[at] = rng.next() as u8;
            }
            1 => {
                let at = rng.below(out.len() + 1);
                out.insert(at, rng.next() as u8);
            }
            2 if !out.is_empty() => {
                let at = rng.below(out.len());
                out.remove(at);
            }
            _ => {
                let at = rng.below(out.len() + 1);
                out.truncate(at);
            }
        }
    }
    out
}

/// Runs `body` on one input, and on a panic names the input so it can be replayed.
fn run_one(target: &str, origin: &str, body: fn(&[u8]), input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| body(input))).is_err() {
        let hex: String = input.iter().map(|b| format!("{b:02x}")).collect();
        panic!(
            "fuzz body {target} failed on {origin} ({} bytes): {hex}\n\
             replay: printf '{hex}' | xxd -r -p > crash && \
             (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run {target} ../crash)",
            input.len()
        );
    }
}

/// Whether a regression is a bug still open.
fn is_open(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name.starts_with("open-"))
}

fn exercise(target: &str, body: fn(&[u8]), stream: u64) {
    let seeds = files("seeds", target);
    for (path, bytes) in &seeds {
        run_one(target, &path.display().to_string(), body, bytes);
    }
    for (path, bytes) in files("regressions", target) {
        if is_open(&path) {
            assert!(
                catch_unwind(AssertUnwindSafe(|| body(&bytes))).is_err(),
                "{} no longer fails: the bug is fixed, so drop the open- prefix from its name",
                path.display()
            );
        } else {
            run_one(target, &path.display().to_string(), body, &bytes);
        }
    }
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15 ^ stream);
    for n in 0..budget() {
        let input = if !seeds.is_empty() && n % 2 == 0 {
            let (_, seed) = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, seed)
        } else {
            let len = rng.below(MAX_LEN + 1);
            rng.bytes(len)
        };
        run_one(target, &format!("generated input {n}"), body, &input);
    }
}

#[test]
fn every_target_has_seeds() {
    for target in [
        "policy", "config", "judge", "evidence", "record", "runner", "agent", "result", "red",
        "hold", "presence", "shell", "sshsig", "key", "registry",
    ] {
        assert!(
            !files("seeds", target).is_empty(),
            "fuzz/seeds/{target}/ holds no seed"
        );
    }
}

#[test]
fn policy() {
    exercise("policy", fuzzing::policy, 1);
}

#[test]
fn config() {
    exercise("config", fuzzing::config, 2);
}

#[test]
fn judge() {
    exercise("judge", fuzzing::judge, 3);
}

#[test]
fn record() {
    exercise("record", fuzzing::record, 4);
}

#[test]
fn runner() {
    exercise("runner", fuzzing::runner, 5);
}

#[test]
fn agent() {
    exercise("agent", fuzzing::agent, 6);
}

#[test]
fn result() {
    exercise("result", fuzzing::result, 7);
}

#[test]
fn shell() {
    exercise("shell", fuzzing::shell, 11);
}

/// The scenario of `fuzz/regressions/agent/merge-queued-without-an-operation.bin`, spelt
/// out as events, so that it does not depend on how the fuzz body reads its bytes. `bay merge`
/// pushes a request; the push's fate is unknown and its report names the written step
/// commit X. The chain read back then holds X but no request (X is the start step). An honest
/// Git remote cannot give this answer (commit ids name their content), but a driver that
/// misreports what it wrote can: the command fails, saying the answers disagree, and never
/// panics (it once did, in `Merge::queued`).
#[test]
fn merge_queued_without_an_operation_fails_without_a_panic() {
    use bay_core::git::{Oid, refs};
    use bay_core::id::ChangeId;
    use bay_core::machine::merge::{Merge, MergeInput};
    use bay_core::machine::{
        ChainRead, Completion, Event, Machine, PushOutcome, PushReport, RawStep, Refs,
    };
    use bay_core::record::{Step, StepBody};
    use bay_core::time::Timestamp;

    let oid = |n: u8| Oid::parse(&format!("{n:040x}")).expect("forty hex digits");
    let change = ChangeId::from_entropy([0, 0, 0, 0, 1]);
    let start = Step {
        change: change.clone(),
        at: Timestamp(1),
        by: "alice".into(),
        nonce: 7,
        body: StepBody::Start {
            intent: "fix the login".into(),
            actor: "alice".into(),
            paths: vec!["src/".into()],
            base: oid(0),
            generation: 1,
            supersedes: None,
            fixes: None,
            reverts: None,
            after: Vec::new(),
        },
    };
    let mut remote = Refs::new();
    remote.insert(refs::main("main"), oid(0));
    remote.insert(refs::change(&change), oid(1));
    let chain = ChainRead {
        change: change.clone(),
        tip: oid(1),
        steps: vec![RawStep {
            oid: oid(1),
            message: start.to_message(),
        }],
        reached_known: false,
        unreadable: None,
    };
    let input = MergeInput {
        change,
        actor: "alice".into(),
        main: "main".into(),
        entropy: 1,
    };
    let now = Timestamp(10);
    let mut merge = Merge::new(input, now);
    let answer = |merge: &mut Merge, completion: Completion| {
        let (id, _) = merge.poll_action().expect("an action to answer");
        assert!(merge.poll_action().is_none());
        merge
            .handle(now, Event::Done(id, completion))
            .expect("an answer of the right kind");
    };
    answer(&mut merge, Completion::Fetched(Ok(remote.clone())));
    answer(&mut merge, Completion::ChainsRead(Ok(vec![chain.clone()])));
    answer(
        &mut merge,
        Completion::DraftFrozen(Ok(bay_core::machine::Refreshed::clean(oid(2)))),
    );
    // The base holds no policy, so no cap: nothing to measure.
    answer(&mut merge, Completion::FileRead(Ok(None)));
    let unknown = PushReport {
        steps: vec![vec![oid(1)]],
        notes: Vec::new(),
        log: None,
        presence: None,
        indexes: Vec::new(),
        outcome: PushOutcome::Unknown {
            why: "the connection dropped".into(),
        },
    };
    answer(&mut merge, Completion::Pushed(unknown));
    answer(&mut merge, Completion::Fetched(Ok(remote)));
    answer(&mut merge, Completion::ChainsRead(Ok(vec![chain])));
    let outcome = merge.outcome().expect("the command ended");
    assert_eq!(
        outcome.decision,
        bay_core::result::Decision::Failed,
        "{outcome:?}"
    );
}

/// The scenario of `fuzz/regressions/result/float-in-detail.bin`, spelt out. `bay start`
/// reports a detail that is a bare number near the smallest normal double (so it is kept under
/// `detail.value`); the document it prints must read back with the same number. serde_json's
/// default parser read such numbers back one unit in the last place off, so core turns on its
/// `float_roundtrip`. The other two numbers are ones the generated inputs met the same way.
#[test]
fn a_number_in_a_detail_reads_back_exactly() {
    use bay_core::id::ChangeId;
    use bay_core::report;
    use bay_core::result::BayResult;

    let change = ChangeId::from_entropy([0; 5]);
    for number in [
        1.059930465192205e-308,
        -1.3751366309546377e135,
        9.335744933994957e-17,
    ] {
        let result = report::started(&change, serde_json::json!(number), None);
        let json = serde_json::to_string(&result).expect("a result serializes");
        let back: BayResult = serde_json::from_str(&json).expect("a result reads back");
        assert_eq!(back, result, "{json}");
    }
}

/// The scenario of `fuzz/regressions/result/deep-detail-not-an-object.bin`, spelt out. A
/// writer leaves an outcome whose detail is a list nested as deep as a step reader takes. A
/// result keeps a detail that is not an object under `detail.value`, one level deeper, so
/// `bay status` printed a result that serde_json could not read back. bay writes no such
/// outcome, and a step reader now refuses one; an object as deep still reads, and its status
/// reads back.
#[test]
fn an_outcome_whose_detail_is_not_an_object_is_not_read() {
    use bay_core::git::Oid;
    use bay_core::id::ChangeId;
    use bay_core::reason::ReasonCode;
    use bay_core::record::{ChangeRecord, Step, StepBody};
    use bay_core::report;
    use bay_core::result::{BayResult, OpState};
    use bay_core::time::Timestamp;
    use serde_json::{Value, json};

    let change = ChangeId::from_entropy([0, 0, 0, 0, 1]);
    let op = change.op(1);
    let step = |by: &str, body: StepBody| Step {
        change: change.clone(),
        at: Timestamp(1),
        by: by.into(),
        nonce: 7,
        body,
    };
    let outcome = |detail: Value| {
        step(
            "runner-a",
            StepBody::Outcome {
                op: op.clone(),
                state: OpState::Blocked,
                reason: Some(ReasonCode::ConfigMissing),
                detail,
            },
        )
    };
    // A step is one object around its detail, and a JSON reader takes 127 levels.
    let nested =
        |levels: usize, wrap: fn(Value) -> Value| (1..levels).fold(json!({}), |v, _| wrap(v));
    let deep_list = nested(126, |inner| json!([inner]));
    for detail in [deep_list, json!([1]), json!("done"), Value::Null] {
        let message = outcome(detail).to_message();
        assert!(Step::from_message(&message).is_err(), "{message}");
    }

    let oid = Oid::parse(&"a".repeat(40)).expect("forty hex digits");
    let chain = [
        step(
            "alice",
            StepBody::Start {
                intent: "fix the login".into(),
                actor: "alice".into(),
                paths: vec!["src/".into()],
                base: oid.clone(),
                generation: 1,
                supersedes: None,
                fixes: None,
                reverts: None,
                after: Vec::new(),
            },
        ),
        step(
            "alice",
            StepBody::Request {
                op: op.clone(),
                draft: oid.clone(),
                base: oid,
                seq: 1,
            },
        ),
        step("runner-a", StepBody::Claim { op: op.clone() }),
        outcome(nested(126, |inner| json!({ "detail": inner }))),
    ];
    let read: Vec<Step> = chain
        .iter()
        .map(|s| Step::from_message(&s.to_message()).expect("a step bay could write reads"))
        .collect();
    let record = ChangeRecord::fold(&read).expect("the chain folds");
    let status = report::status(&record);
    let json = serde_json::to_string(&status).expect("a result serializes");
    let back: BayResult = serde_json::from_str(&json).expect("the status reads back");
    assert_eq!(back, status);
}

#[test]
fn evidence() {
    exercise("evidence", fuzzing::evidence, 17);
}

#[test]
fn red() {
    exercise("red", fuzzing::red, 8);
}

#[test]
fn hold() {
    exercise("hold", fuzzing::hold, 9);
}

#[test]
fn presence() {
    exercise("presence", fuzzing::presence, 10);
}

#[test]
fn sshsig() {
    exercise("sshsig", fuzzing::sshsig, 14);
}

#[test]
fn key() {
    exercise("key", fuzzing::key, 15);
}

#[test]
fn registry() {
    exercise("registry", fuzzing::registry, 16);
}

/// The `sshsig` seeds are what `make-trust-seeds.sh` says: good signatures by ssh-keygen, so
/// the body's promises about a good signature are exercised on every run.
#[test]
fn every_sshsig_seed_is_a_good_signature_by_ssh_keygen() {
    use bay_core::trust::{AllowedSigners, sshsig};
    let seeds = files("seeds", "sshsig");
    assert!(seeds.len() >= 6, "{} seeds", seeds.len());
    for (path, bytes) in seeds {
        let (message, armoured) = match bytes.iter().position(|&b| b == 0) {
            Some(at) => (&bytes[..at], &bytes[at + 1..]),
            None => (&[][..], &bytes[..]),
        };
        let key = sshsig::signer(armoured).expect("a seed names its key");
        let signers = AllowedSigners::parse(&format!("seed {}\n", key.openssh())).expect("line");
        let good = ["git", "bay-evidence"]
            .iter()
            .filter(|ns| sshsig::verify_by_key(&signers, ns, message, armoured).is_good())
            .count();
        assert_eq!(
            good,
            1,
            "{} verifies under {good} namespaces",
            path.display()
        );
    }
}

/// The `registry` seed with a commit is a first registry commit Git signed with its own
/// `registry` key, which bay reads: the body's promises about a readable chain always run.
#[test]
fn the_signed_registry_seed_is_a_readable_chain() {
    let (_, bytes) = files("seeds", "registry")
        .into_iter()
        .find(|(path, _)| path.ends_with("signed-first-commit"))
        .expect("the seed");
    let text = String::from_utf8(bytes).expect("text");
    let (version, raw) = text.split_once("==@ commit\n").expect("a commit");
    let key = version
        .strip_prefix("== registry\n")
        .expect("the registry file");
    let chain = [bay_core::trust::registry::RegistryCommit {
        oid: bay_core::git::Oid::parse("1183dd943ddbf0e5e43fb7a659359f480010c97a").expect("oid"),
        raw: raw.to_owned(),
        files: vec![bay_core::trust::registry::RegistryFile {
            name: "registry".into(),
            text: Some(key.to_owned()),
        }],
    }];
    let read = bay_core::trust::registry::judge_chain(&chain).expect("a readable chain");
    assert_eq!(read.files(), [("registry".to_owned(), key.to_owned())]);
}
