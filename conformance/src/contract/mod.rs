//! The driver contract: cases written once, run against any [`Arm`], each observed in symbols
//! and compared with what real Git answered when the golden file was recorded.
//!
//! Git is the oracle: `golden/contract.json` is written from the real-Git arm
//! (`BAY_BLESS=1 cargo test -p bay-conformance --test contract`), and every arm, the
//! simulator's model included, must see exactly the same.

mod candidate;
mod fetch;
mod index;
mod notes;
mod presence;
mod push;
mod read;
mod signing;
mod view;

use std::collections::BTreeMap;

use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::{Action, Completion, FetchSpec, PushPlan, PushReport};
use bay_core::record::{Step, StepBody};
use bay_core::time::Timestamp;

use crate::arm::Arm;
use crate::seen::{self, Seen, Symbols};

/// The golden observations, as recorded from real Git.
pub const GOLDEN: &str = include_str!("../../golden/contract.json");

/// One case of the contract.
#[derive(Clone)]
pub struct Case {
    pub name: &'static str,
    pub run: std::sync::Arc<dyn Fn(&mut Bench<'_>) + Send + Sync>,
}

impl Case {
    pub fn new(name: &'static str, run: impl Fn(&mut Bench<'_>) + Send + Sync + 'static) -> Case {
        Case {
            name,
            run: std::sync::Arc::new(run),
        }
    }
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Every case, in a stable order.
pub fn cases() -> Vec<Case> {
    [
        push::cases(),
        fetch::cases(),
        index::cases(),
        read::cases(),
        candidate::cases(),
        notes::cases(),
        presence::cases(),
        view::cases(),
        signing::cases(),
    ]
    .concat()
}

/// One case's result on one arm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseReport {
    pub name: String,
    /// What real Git saw (empty when the golden file lacks the case).
    pub expected: Seen,
    pub seen: Seen,
}

impl CaseReport {
    pub fn matches(&self) -> bool {
        !self.expected.is_empty() && self.expected == self.seen
    }

    /// Each fact that differs, as `fact: expected <x>, saw <y>`.
    pub fn differences(&self) -> Vec<String> {
        let mut facts: Vec<&String> = self.expected.keys().chain(self.seen.keys()).collect();
        facts.sort();
        facts.dedup();
        facts
            .into_iter()
            .filter(|fact| self.expected.get(*fact) != self.seen.get(*fact))
            .map(|fact| {
                let show = |v: Option<&String>| v.map_or("nothing".to_owned(), |v| v.clone());
                format!(
                    "{fact}: expected {}, saw {}",
                    show(self.expected.get(fact)),
                    show(self.seen.get(fact))
                )
            })
            .collect()
    }
}

/// A whole run of the contract on one arm.
#[derive(Debug, Clone)]
pub struct Report {
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// How many cases saw what Git saw.
    pub fn matching(&self) -> usize {
        self.cases.iter().filter(|c| c.matches()).count()
    }

    /// Every case that did not, with its differences, one paragraph each.
    pub fn failures(&self) -> Vec<String> {
        self.cases
            .iter()
            .filter(|c| !c.matches())
            .map(|c| {
                let mut lines = vec![format!("case {:?}:", c.name)];
                if c.expected.is_empty() {
                    lines.push("  not in the golden file: bless it from real Git".to_owned());
                }
                lines.extend(c.differences().into_iter().map(|d| format!("  {d}")));
                lines.join("\n")
            })
            .collect()
    }

    /// Panics with every difference unless every case matched.
    pub fn assert_conforms(&self) {
        let failures = self.failures();
        assert!(
            failures.is_empty(),
            "{} of {} contract cases differ from Git:\n{}",
            failures.len(),
            self.cases.len(),
            failures.join("\n")
        );
    }

    /// The observations, keyed by case, as the golden file holds them.
    pub fn observed(&self) -> BTreeMap<String, Seen> {
        self.cases
            .iter()
            .map(|c| (c.name.clone(), c.seen.clone()))
            .collect()
    }
}

/// The golden observations, keyed by case.
pub fn golden() -> BTreeMap<String, Seen> {
    serde_json::from_str(GOLDEN).expect("the golden file is the JSON this crate writes")
}

/// Runs every case, each on a fresh arm from `arm`, and compares with the golden file.
pub fn run<A: Arm>(mut arm: impl FnMut() -> A) -> Report {
    let golden = golden();
    let cases = cases()
        .into_iter()
        .map(|case| {
            let mut fresh = arm();
            let mut bench = Bench::new(&mut fresh);
            (case.run)(&mut bench);
            CaseReport {
                name: case.name.to_owned(),
                expected: golden.get(case.name).cloned().unwrap_or_default(),
                seen: bench.seen,
            }
        })
        .collect();
    Report { cases }
}

/// The change every case's chains belong to.
pub const CHANGE: &str = "c7k2m4qa";

/// A case's hands and eyes: the arm, the symbols of the ids it met, and what it saw.
pub struct Bench<'a> {
    arm: &'a mut dyn Arm,
    symbols: Symbols,
    by_name: BTreeMap<String, Oid>,
    seen: Seen,
}

impl std::fmt::Debug for Bench<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bench").field("seen", &self.seen).finish()
    }
}

impl<'a> Bench<'a> {
    fn new(arm: &'a mut dyn Arm) -> Bench<'a> {
        Bench {
            arm,
            symbols: Symbols::default(),
            by_name: BTreeMap::new(),
            seen: Seen::new(),
        }
    }

    /// Makes a commit named `name`, its parents named by symbol.
    pub fn commit(&mut self, name: &str, parents: &[&str], files: &[(&str, &str)]) -> Oid {
        let parents: Vec<Oid> = parents.iter().map(|p| self.oid(p)).collect();
        let oid = self.arm.commit(&parents, files, name);
        self.named(&oid, name);
        oid
    }

    /// Gives `oid` a symbol, so that observations can name it.
    pub fn named(&mut self, oid: &Oid, name: &str) {
        self.symbols.name(oid, name);
        self.by_name
            .entry(name.to_owned())
            .or_insert_with(|| oid.clone());
    }

    /// The id behind a symbol the case gave.
    pub fn oid(&self, name: &str) -> Oid {
        self.by_name
            .get(name)
            .cloned()
            .unwrap_or_else(|| panic!("the case named no {name:?}"))
    }

    pub fn show(&self, oid: &Oid) -> String {
        self.symbols.show(oid)
    }

    /// Sets a ref on the remote to a named commit, outside bay.
    pub fn set(&mut self, name: &str, symbol: &str) {
        let oid = self.oid(symbol);
        self.arm.set_remote_ref(name, Some(&oid));
    }

    pub fn delete(&mut self, name: &str) {
        self.arm.set_remote_ref(name, None);
    }

    /// Records a fact.
    pub fn see(&mut self, fact: impl Into<String>, value: impl Into<String>) {
        self.seen.insert(fact.into(), value.into());
    }

    /// Records the remote's value of each ref, in symbols.
    pub fn see_refs(&mut self, names: &[&str]) {
        for name in names {
            let value = self.arm.remote_ref(name);
            let shown = self.symbols.show_opt(value.as_ref());
            self.see(format!("remote {name}"), shown);
        }
    }

    pub fn execute(&mut self, action: &Action) -> Completion {
        self.arm.execute(action)
    }

    /// The path the driver's actions name the private key `openssh` by.
    pub fn signing_key(&mut self, openssh: &str) -> String {
        self.arm.signing_key(openssh)
    }

    /// Fetches `patterns` and records the answer under `label`, in symbols.
    pub fn see_fetch(&mut self, label: &str, patterns: &[&str]) {
        let spec = FetchSpec::new(patterns.iter().map(|p| p.to_string()));
        let shown = match self.execute(&Action::Fetch(spec)) {
            Completion::Fetched(Ok(refs)) => refs
                .iter()
                .map(|(name, oid)| format!("{name}={}", self.show(oid)))
                .collect::<Vec<_>>()
                .join(" "),
            Completion::Fetched(Err(_)) => "fault".to_owned(),
            other => panic!("a fetch answered {other:?}"),
        };
        self.see(label, shown);
    }

    /// Pushes `plan`, names what it wrote (after `prefix`), and records its outcome and how
    /// many commits it wrote under `label`.
    pub fn push(&mut self, label: &str, prefix: &str, plan: PushPlan) -> PushReport {
        let report = match self.arm.execute(&Action::Push(plan)) {
            Completion::Pushed(report) => report,
            other => panic!("a push answered {other:?}"),
        };
        self.see_push(label, prefix, &report);
        report
    }

    /// Pushes `plan` with its reply lost.
    pub fn push_reply_lost(&mut self, label: &str, plan: PushPlan) -> PushReport {
        let report = self.arm.push_reply_lost(&plan);
        self.see_push(label, "", &report);
        report
    }

    /// Names the commits a push wrote (`<prefix>step <append>.<step>`, `<prefix>note <i>`,
    /// `<prefix>event`) and records its outcome.
    fn see_push(&mut self, label: &str, prefix: &str, report: &PushReport) {
        for (a, written) in report.steps.iter().enumerate() {
            for (i, oid) in written.iter().enumerate() {
                self.named(oid, &format!("{prefix}step {a}.{i}"));
            }
        }
        for (i, oid) in report.notes.iter().enumerate() {
            self.named(oid, &format!("{prefix}note {i}"));
        }
        if let Some(oid) = &report.log {
            self.named(oid, &format!("{prefix}event"));
        }
        if let Some(oid) = &report.presence {
            self.named(oid, &format!("{prefix}presence"));
        }
        for (i, oid) in report.indexes.iter().enumerate() {
            self.named(oid, &format!("{prefix}index {i}"));
        }
        self.see(format!("{label} outcome"), seen::outcome(&report.outcome));
        let counts: Vec<String> = report.steps.iter().map(|s| s.len().to_string()).collect();
        self.see(
            format!("{label} wrote"),
            format!("steps [{}], notes {}", counts.join(","), report.notes.len()),
        );
    }

    /// Records a commit's files, tree and parents, in symbols.
    pub fn see_commit(&mut self, fact: &str, commit: &Oid) {
        self.see_files(fact, commit);
        if let Some((_, parents)) = self.arm.shape(commit) {
            let parents: Vec<String> = parents.iter().map(|p| self.show(p)).collect();
            self.see(format!("{fact} parents"), parents.join(" "));
        }
    }

    /// Records the paths of a commit's files and its parents, where the files hold ids that
    /// differ between worlds.
    pub fn see_paths(&mut self, fact: &str, commit: &Oid) {
        let paths = self.arm.files(commit).map_or("absent".to_owned(), |files| {
            files.keys().cloned().collect::<Vec<_>>().join(" ")
        });
        self.see(format!("{fact} paths"), paths);
        if let Some((_, parents)) = self.arm.shape(commit) {
            let parents: Vec<String> = parents.iter().map(|p| self.show(p)).collect();
            self.see(format!("{fact} parents"), parents.join(" "));
        }
    }

    /// Records a commit's files alone, where its parents are the driver's own business.
    pub fn see_files(&mut self, fact: &str, commit: &Oid) {
        let files = self.arm.files(commit);
        let value = files.map_or("absent".to_owned(), |f| seen::files(&f));
        self.see(format!("{fact} files"), value);
    }

    /// The tree of a commit, if the arm has the commit.
    pub fn tree(&mut self, commit: &Oid) -> Option<Oid> {
        self.arm.shape(commit).map(|(tree, _)| tree)
    }

    pub fn notes(&mut self, notes_ref: &str, object: &Oid) -> Vec<String> {
        self.arm.notes(notes_ref, object)
    }

    pub fn view_files(&mut self, change: &ChangeId) -> String {
        seen::files(&self.arm.view_files(change))
    }

    pub fn edit_view(&mut self, change: &ChangeId, path: &str, content: Option<&str>) {
        self.arm.edit_view(change, path, content);
    }
}

/// The change of every case.
pub fn change() -> ChangeId {
    ChangeId::parse(CHANGE).expect("CHANGE is a valid change id")
}

/// A step of the case's change that differs from every other by `nonce`.
pub fn heartbeat(nonce: u64) -> Step {
    let change = change();
    Step {
        at: Timestamp(1_700_000_000_000 + nonce),
        by: "runner-1".into(),
        nonce,
        body: StepBody::Heartbeat { op: change.op(1) },
        change,
    }
}
