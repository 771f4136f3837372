//! Dependencies (`bay start --after`): an operation whose change names changes that must merge
//! first waits, passed over at the head, until each has merged (or ended `no_effect`, which
//! counts as merged); one that ended otherwise (abandoned, or left behind by its intent) ends
//! the operation `DEPENDENCY_ABANDONED`. A pass reads the named changes' merged markers and
//! records once per pass, only when some live operation names any.

use std::collections::BTreeSet;

use serde::Serialize;

use super::Runner;
use crate::detail::Detail;
use crate::git::refs;
use crate::id::ChangeId;
use crate::machine::FetchSpec;
use crate::reason::ReasonCode;
use crate::record::ChangeRecord;
use crate::result::OpState;

impl Runner {
    /// The changes named by `--after` in the records of the queue's live places.
    pub(super) fn dependencies(&self) -> BTreeSet<ChangeId> {
        self.places
            .range(self.floor + 1..)
            .filter_map(|(_, place)| place.op.as_ref().ok())
            .filter_map(|op| self.record(&op.change))
            .filter(|record| record.live_op().is_some())
            .flat_map(|record| record.after.iter().cloned())
            .collect()
    }

    /// What a pass fetches for the named changes: each one's merged marker and chain. One with
    /// neither was compacted (or never was), and is read from the index after.
    pub(super) fn dependencies_spec(&self) -> Option<FetchSpec> {
        let named = self.dependencies();
        (!named.is_empty()).then(|| {
            FetchSpec::new(
                named
                    .iter()
                    .flat_map(|c| [refs::landed_pattern(c), refs::change_pattern(c)]),
            )
        })
    }

    /// The named changes with neither chain nor marker on the remote whose record was not
    /// read from the index yet: compacted, or gone. Read once a pass.
    pub(super) fn compacted_dependencies(&self) -> Vec<ChangeId> {
        if !self
            .pass()
            .is_some_and(|pass| pass.dependencies_read && !pass.compacted_read)
        {
            return Vec::new();
        }
        self.dependencies()
            .into_iter()
            .filter(|change| {
                !self.refs.contains_key(&refs::change(change))
                    && !self.refs.contains_key(&refs::landed(change))
                    && self.compacted_record(change).is_none()
            })
            .collect()
    }

    /// The record of `change` read from the index: a merged one, which is final.
    fn compacted_record(&self, change: &ChangeId) -> Option<&ChangeRecord> {
        self.record(change)
            .filter(|record| record.merged().is_some())
    }

    /// What `change` is, as this runner last read it: from its chain at the remote's tip, or,
    /// with its refs gone, from the index it was compacted into.
    fn dependency(&self, change: &ChangeId) -> Dependency {
        let tip = self.refs.get(&refs::change(change));
        let record = match tip {
            Some(tip) => self
                .chains
                .get(change)
                .filter(|chain| &chain.tip == tip)
                .and_then(|chain| chain.record.as_ref().ok()),
            None => self.compacted_record(change),
        };
        dependency(
            self.refs.contains_key(&refs::landed(change)),
            tip.is_some() || record.is_some(),
            record,
        )
    }

    /// Why `record` may not merge yet for what it names with `--after` (see [`waiting`]).
    pub(super) fn waiting_on(&self, record: &ChangeRecord) -> Option<Waiting> {
        #[cfg(feature = "mutants")]
        if self.mutant_ignores_dependencies() {
            return None;
        }
        waiting(record, |change| self.dependency(change))
    }
}

/// What one named change is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dependency {
    /// Merged, or ended `no_effect`.
    Met,
    /// Not ended yet, or not read yet.
    Pending,
    /// Ended without merging, or gone: it never will merge.
    Ended,
}

/// What a named change is: its merged marker is on the remote (`landed`), its chain is
/// (`exists`), and its record as read at the remote's tip (`None` when not read).
pub fn dependency(landed: bool, exists: bool, record: Option<&ChangeRecord>) -> Dependency {
    match record {
        _ if landed => Dependency::Met,
        _ if !exists => Dependency::Ended,
        None => Dependency::Pending,
        Some(record) if record.merged().is_some() => Dependency::Met,
        Some(record)
            if record
                .ops
                .last()
                .is_some_and(|op| op.state == OpState::NoEffect) =>
        {
            Dependency::Met
        }
        Some(record) if record.ended() => Dependency::Ended,
        Some(_) => Dependency::Pending,
    }
}

/// Why an operation may not merge yet for what its change names with `--after`, with the
/// changes its `detail` names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Waiting {
    /// `DEPENDENCY_ABANDONED`: these ended without merging, so it never will.
    Abandoned { ended: Vec<ChangeId> },
    /// `DEPENDENCY_PENDING`: these have not merged yet.
    Pending { pending: Vec<ChangeId> },
}

impl Waiting {
    pub fn code(&self) -> ReasonCode {
        match self {
            Waiting::Abandoned { .. } => ReasonCode::DependencyAbandoned,
            Waiting::Pending { .. } => ReasonCode::DependencyPending,
        }
    }
}

impl Detail for Waiting {}

/// Why `record` may not merge yet for what it names with `--after`, each judged by `of`:
/// abandoned when one ended, else pending while one has not merged; `None` when every one is
/// met.
pub fn waiting(record: &ChangeRecord, of: impl Fn(&ChangeId) -> Dependency) -> Option<Waiting> {
    let named = |wanted: Dependency| -> Vec<ChangeId> {
        record
            .after
            .iter()
            .filter(|change| of(change) == wanted)
            .cloned()
            .collect()
    };
    let (ended, pending) = (named(Dependency::Ended), named(Dependency::Pending));
    if !ended.is_empty() {
        return Some(Waiting::Abandoned { ended });
    }
    (!pending.is_empty()).then_some(Waiting::Pending { pending })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn one_ended_change_abandons_and_otherwise_the_unmerged_are_pending() {
        let id = |text: &str| ChangeId::parse(text).expect("a change id");
        let start = crate::record::Step {
            change: id("c7k2m4qa"),
            at: crate::time::Timestamp(0),
            by: "ann".into(),
            nonce: 1,
            body: crate::record::StepBody::Start {
                intent: "greet".into(),
                actor: "ann".into(),
                paths: vec!["src/".into()],
                base: crate::git::Oid::parse(&"a".repeat(40)).expect("an oid"),
                generation: 1,
                supersedes: None,
                fixes: None,
                reverts: None,
                after: vec![id("k2m4qa7c"), id("m4qa7ck2"), id("qa7ck2m4")],
            },
        };
        let record = ChangeRecord::fold(&[start]).expect("a start folds");
        let of = |ended: &'static str| {
            move |change: &ChangeId| match change.as_str() {
                "k2m4qa7c" => Dependency::Met,
                text if text == ended => Dependency::Ended,
                _ => Dependency::Pending,
            }
        };
        let abandoned = waiting(&record, of("m4qa7ck2")).expect("it waits");
        assert_eq!(abandoned.code(), ReasonCode::DependencyAbandoned);
        assert_eq!(abandoned.to_json(), json!({"ended": ["m4qa7ck2"]}));
        let pending = waiting(&record, of("none")).expect("it waits");
        assert_eq!(pending.code(), ReasonCode::DependencyPending);
        assert_eq!(
            pending.to_json(),
            json!({"pending": ["m4qa7ck2", "qa7ck2m4"]})
        );
        assert_eq!(waiting(&record, |_| Dependency::Met), None);
    }
}
