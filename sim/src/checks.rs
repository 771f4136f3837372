//! Checks in the simulated world: what a check prints for a candidate, honest or not, and the
//! ground truth of every run, which the invariant checkers hold bay's evidence against.
//!
//! An honest check fails a tree holding the text `BUG` and passes any other; one that declares
//! its read set (`footprint = true`) reads only those files, so only a `BUG` there fails it. A faulty run is
//! slow, hung, flaky, or lies: it reports another tree, too few units, an oversized reason, a
//! non-zero exit with a pass, or garbage. Only honest passing runs enter the ground truth.

use std::collections::BTreeSet;

use bay_core::check::CheckExit;
use bay_core::check::footprint::{self, TreeFile};
use bay_core::git::Oid;
use bay_core::glob::any_path_matches;
use bay_core::machine::CheckRun;
use bay_core::policy::CheckSpec;
use serde_json::json;

use crate::rng::Rng;
use crate::store::Store;

/// How one run behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Behaviour {
    Honest,
    /// Honest, but takes longer than a lease.
    Slow,
    /// Never finishes: the driver kills it at its time limit.
    Hung,
    /// Never answers at all: the driver itself is stuck.
    Lost,
    /// Fails a tree it should pass.
    Flaky,
    /// Reports a pass for another tree.
    WrongTree,
    /// Reports a pass with fewer units than the policy expects.
    TooFewUnits,
    /// Reports a pass whose unit reason is over 2,048 bytes.
    HugeReason,
    /// Reports a pass but exits non-zero.
    FailingExit,
    /// Prints no valid result.
    Garbage,
    /// Says no worker here can run it.
    Unavailable,
}

impl Behaviour {
    pub const FAULTY: [Behaviour; 10] = [
        Behaviour::Slow,
        Behaviour::Hung,
        Behaviour::Lost,
        Behaviour::Flaky,
        Behaviour::WrongTree,
        Behaviour::TooFewUnits,
        Behaviour::HugeReason,
        Behaviour::FailingExit,
        Behaviour::Garbage,
        Behaviour::Unavailable,
    ];
}

/// What the driver reports, and when.
#[derive(Debug)]
pub enum Run {
    /// The exit, `millis` after the start.
    Exits { millis: u64, exit: CheckExit },
    /// No answer ever comes.
    Silent,
}

/// Every honest pass of every check on every tree, and every run that reported a failure,
/// over the whole run.
#[derive(Debug, Default)]
pub struct Truth {
    honest_passes: BTreeSet<(Oid, String)>,
    /// The honest passes of checks that declare their read set, by the digest of the files
    /// the check read: what an honest run of it on any tree with those files would say.
    honest_read_sets: BTreeSet<(String, String)>,
    failures: BTreeSet<(Oid, String)>,
    pub runs: u64,
}

impl Truth {
    pub fn honestly_passed(&self, tree: &Oid, check: &str) -> bool {
        self.honest_passes
            .contains(&(tree.clone(), check.to_string()))
    }

    /// Whether `spec`, which declares its read set, honestly passed some tree whose files in
    /// that read set are `tree`'s: an honest run of it on `tree` would read the same files.
    pub fn honestly_passed_read_set(&self, store: &Store, tree: &Oid, spec: &CheckSpec) -> bool {
        read_set_digest(store, tree, spec)
            .is_some_and(|digest| self.honest_read_sets.contains(&(digest, spec.id.clone())))
    }

    /// Whether some run of `check` on `tree` reported a `product_failure` (a real bug, or a
    /// flake): what a `baseline = "base"` comparison may rest on.
    pub fn failed_on(&self, tree: &Oid, check: &str) -> bool {
        self.failures.contains(&(tree.clone(), check.to_string()))
    }
}

/// Whether the files of `tree` that `spec` reads hold a `BUG`: all of them, or only its read
/// set when it declares one (`footprint = true`), as its verdict then says it does.
fn has_bug(store: &Store, tree: &Oid, spec: &CheckSpec) -> bool {
    let read = footprint::read_set(spec);
    store.tree_of(tree).is_some_and(|files| {
        files
            .iter()
            .filter(|(path, _)| read.is_none_or(|globs| any_path_matches(globs, path)))
            .any(|(_, blob)| store.blob_text(blob).is_some_and(|t| t.contains("BUG")))
    })
}

/// The digest of the files of `tree` in `spec`'s declared read set, by the simulator's own
/// listing; `None` for a check that declares none.
fn read_set_digest(store: &Store, tree: &Oid, spec: &CheckSpec) -> Option<String> {
    footprint::read_set(spec)?;
    let files: Vec<TreeFile> = store
        .tree_of(tree)?
        .iter()
        .map(|(path, oid)| TreeFile {
            path: path.clone(),
            mode: "100644".into(),
            oid: oid.clone(),
        })
        .collect();
    footprint::stamp(spec, &files, &[]).map(|stamp| stamp.candidate)
}

/// Runs one check in the simulated sandbox.
pub fn run(
    store: &Store,
    truth: &mut Truth,
    rng: &mut Rng,
    behaviour: Behaviour,
    run: &CheckRun,
    lease_ms: u64,
) -> Run {
    truth.runs += 1;
    let candidate = &run.request.candidate;
    let timeout_ms = run.check.timeout_s * 1000;
    let units = run.check.expected_minimum.max(1) + 2;
    let bug = has_bug(store, &candidate.tree, &run.check);
    let quick = rng.range(500, 5_000);
    let result = |verdict: &str, tree: &Oid, units: u64, reason: Option<String>| {
        let mut checks: Vec<serde_json::Value> = (0..units)
            .map(|i| json!({ "id": format!("unit-{i}"), "verdict": "pass" }))
            .collect();
        if let Some(first) = checks.first_mut() {
            first["verdict"] = json!(verdict);
            if let Some(reason) = reason {
                first["reason"] = json!(reason);
            }
        }
        json!({
            "schema": "bay.check.result/1",
            "exercised": { "commit": candidate.commit, "tree": tree },
            "plan": { "selected": units, "completed": units },
            "checks": checks,
        })
        .to_string()
        .into_bytes()
    };
    let exit = |stdout: Vec<u8>, code: Option<i32>, millis: u64| CheckExit {
        stdout,
        exit_code: code,
        timed_out: false,
        millis,
        infra: None,
        sandbox_read: Vec::new(),
        adapter: Vec::new(),
        stderr_log: None,
    };
    let honest = |millis: u64, truth: &mut Truth| {
        if bug {
            truth
                .failures
                .insert((candidate.tree.clone(), run.check.id.clone()));
            let stdout = result(
                "product_failure",
                &candidate.tree,
                units,
                Some("the tree holds a BUG".into()),
            );
            Run::Exits {
                millis,
                exit: exit(stdout, Some(1), millis),
            }
        } else {
            truth
                .honest_passes
                .insert((candidate.tree.clone(), run.check.id.clone()));
            if let Some(digest) = read_set_digest(store, &candidate.tree, &run.check) {
                truth
                    .honest_read_sets
                    .insert((digest, run.check.id.clone()));
            }
            Run::Exits {
                millis,
                exit: exit(
                    result("pass", &candidate.tree, units, None),
                    Some(0),
                    millis,
                ),
            }
        }
    };
    match behaviour {
        Behaviour::Honest => honest(quick, truth),
        Behaviour::Slow => {
            let millis = rng.range(
                lease_ms + 1_000,
                (lease_ms * 3).max(timeout_ms.saturating_sub(1_000)),
            );
            honest(millis.min(timeout_ms.saturating_sub(1)), truth)
        }
        Behaviour::Hung => Run::Exits {
            millis: timeout_ms,
            exit: CheckExit {
                stdout: Vec::new(),
                exit_code: None,
                timed_out: true,
                millis: timeout_ms,
                infra: None,
                sandbox_read: Vec::new(),
                adapter: Vec::new(),
                stderr_log: None,
            },
        },
        Behaviour::Lost => Run::Silent,
        Behaviour::Flaky => {
            truth
                .failures
                .insert((candidate.tree.clone(), run.check.id.clone()));
            let stdout = result(
                "product_failure",
                &candidate.tree,
                units,
                Some("flaked".into()),
            );
            Run::Exits {
                millis: quick,
                exit: exit(stdout, Some(1), quick),
            }
        }
        Behaviour::WrongTree => {
            let stdout = result("pass", &run.request.base.tree, units, None);
            Run::Exits {
                millis: quick,
                exit: exit(stdout, Some(0), quick),
            }
        }
        Behaviour::TooFewUnits => {
            let few = run.check.expected_minimum.saturating_sub(1);
            let stdout = result("pass", &candidate.tree, few, None);
            Run::Exits {
                millis: quick,
                exit: exit(stdout, Some(0), quick),
            }
        }
        Behaviour::HugeReason => {
            let stdout = result("pass", &candidate.tree, units, Some("x".repeat(3_000)));
            Run::Exits {
                millis: quick,
                exit: exit(stdout, Some(0), quick),
            }
        }
        Behaviour::FailingExit => {
            let stdout = result("pass", &candidate.tree, units, None);
            Run::Exits {
                millis: quick,
                exit: exit(stdout, Some(2), quick),
            }
        }
        Behaviour::Garbage => Run::Exits {
            millis: quick,
            exit: exit(b"all good!".to_vec(), Some(0), quick),
        },
        Behaviour::Unavailable => {
            let stdout = json!({ "schema": "bay.check.result/1", "unavailable": "no worker free" })
                .to_string();
            Run::Exits {
                millis: quick,
                exit: exit(stdout.into_bytes(), Some(0), quick),
            }
        }
    }
}
