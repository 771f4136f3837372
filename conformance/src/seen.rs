//! What a case saw, in words that do not depend on the world: object ids differ between a
//! real repository and a model, so every id a case meets gets a symbol (`A`, `step 0.1`,
//! `candidate`) and observations name symbols only.

use std::collections::BTreeMap;

use bay_core::git::Oid;
use bay_core::machine::{Completion, PushOutcome};

use crate::arm::Files;

/// Names for the object ids of one case.
#[derive(Debug, Default)]
pub struct Symbols {
    names: BTreeMap<Oid, String>,
}

impl Symbols {
    /// Gives `oid` the name `name` (the first name given wins).
    pub fn name(&mut self, oid: &Oid, name: impl Into<String>) {
        self.names.entry(oid.clone()).or_insert_with(|| name.into());
    }

    /// The symbol of `oid`; an id the case never named shows as `unnamed`, which no golden
    /// observation holds.
    pub fn show(&self, oid: &Oid) -> String {
        self.names
            .get(oid)
            .cloned()
            .unwrap_or_else(|| "unnamed".to_owned())
    }

    pub fn show_opt(&self, oid: Option<&Oid>) -> String {
        oid.map_or_else(|| "absent".to_owned(), |oid| self.show(oid))
    }
}

/// One case's observations: fact to value, in a stable order.
pub type Seen = BTreeMap<String, String>;

/// A push's outcome in words, without the driver's own messages.
pub fn outcome(outcome: &PushOutcome) -> String {
    match outcome {
        PushOutcome::Accepted => "accepted".to_owned(),
        PushOutcome::Rejected { refs } => {
            let mut refs = refs.clone();
            refs.sort();
            format!("rejected {}", refs.join(" "))
        }
        PushOutcome::Unknown { .. } => "unknown".to_owned(),
        PushOutcome::NotSent(_) => "not sent".to_owned(),
    }
}

/// A tree's files as one line: `path=content` with newlines shown as `\n`.
pub fn files(files: &Files) -> String {
    files
        .iter()
        .map(|(path, content)| format!("{path}={}", content.replace('\n', "\\n")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The kind of a completion that failed, or `None` when it did not: a fault's wording is
/// the driver's own, so only its presence is compared.
pub fn fault(completion: &Completion) -> Option<&'static str> {
    let failed = match completion {
        Completion::Fetched(r) => r.is_err(),
        Completion::StepsRead(r) => r.is_err(),
        Completion::ChainsRead(r) => r.is_err(),
        Completion::FileRead(r) => r.is_err(),
        Completion::StatsRead(r) => r.is_err(),
        Completion::NotesRead(r) => r.is_err(),
        Completion::TreesRead(r) => r.is_err(),
        Completion::FilesRead(r) => r.is_err(),
        Completion::StepsWritten(r) => r.is_err(),
        Completion::LogRead(r) => r.is_err(),
        Completion::HistoryRead(r) => r.is_err(),
        Completion::AddedRead(r) => r.is_err(),
        Completion::HeldRead(r) => r.is_err(),
        Completion::SeenRead(r) => r.is_err(),
        Completion::MergeTested(r) => r.is_err(),
        Completion::MergeBaseFound(r) => r.is_err(),
        Completion::CandidateBuilt(r) => r.is_err(),
        Completion::DraftFrozen(r) => r.is_err(),
        Completion::DraftRefreshed(r) => r.is_err(),
        Completion::ViewMade(r) => r.is_err(),
        Completion::ViewsInspected(r) => r.is_err(),
        Completion::ViewReleased(r) => r.is_err(),
        Completion::RegistryRead(r) => r.is_err(),
        Completion::RegistryWritten(r) => r.is_err(),
        Completion::CommitsRead(r) => r.is_err(),
        Completion::Pushed(_) | Completion::CheckExited(_) | Completion::PluginExited(_) => false,
    };
    failed.then_some("fault")
}
