//! Carrying a footprint pass (`[runner] footprint_lanes`, `check::footprint`).
//!
//! Once a candidate's checks are planned, and reuse applies to them, the runner reads the
//! files of the read sets of its `footprint = true` checks in the candidate and its base, and
//! stamps each such check ([`crate::check::footprint::stamp`]). A run's record carries its
//! stamp, and hangs on the operation's draft as well as on the candidate's tree, so that a
//! later candidate of the same operation (main moved under it, or an early run on another
//! main) finds it by the one object every candidate of the operation shares.
//!
//! Before the checks run, a pass recorded for the same operation with the same stamp, by a
//! producer the check allows (and, under a registry, signed by its key), answers the check:
//! the runner writes a new record on this candidate that names the one it came from
//! (`carried`), and the check does not run. A read that fails stamps nothing, and every check
//! runs.

use std::collections::BTreeMap;

use super::Runner;
use super::work::{Checking, Judged, Phase, Placed, Purpose, Work};
use crate::check::footprint::{self, Carried, TreeFile};
use crate::check::{EvidenceRecord, Verdict};
use crate::id::OpId;
use crate::machine::{Action, Fault};
use crate::policy::CheckSpec;

impl Runner {
    /// Reads the files the stamps of the plan's footprint checks rest on, when carrying is
    /// on and reuse applies (`reuse`); else goes on to the passes to reuse.
    pub(super) fn stamp_checks(&mut self, work: Box<Work>, reuse: bool) -> Placed {
        let Phase::Checking(checking) = &work.phase else {
            return self.keep(work);
        };
        let prefixes = if reuse && self.cfg.footprint_lanes {
            footprint::prefixes(checking.plan.runs.iter().map(|run| &run.spec))
        } else {
            Vec::new()
        };
        if prefixes.is_empty() {
            return self.reuse_or_record(work, reuse);
        }
        let read = Action::ReadFiles {
            commits: vec![
                checking.candidate.built.commit.clone(),
                checking.base.commit.clone(),
            ],
            under: prefixes,
        };
        self.send_work(read, Purpose::Stamps);
        self.keep(work)
    }

    /// The files read: each footprint check's stamp. A read that failed stamps nothing.
    pub(super) fn on_stamp_files(
        &mut self,
        mut work: Box<Work>,
        read: Result<Vec<Vec<TreeFile>>, Fault>,
    ) -> Placed {
        let Phase::Checking(checking) = &mut work.phase else {
            return self.keep(work);
        };
        if let Ok([candidate, base]) = <[Vec<TreeFile>; 2]>::try_from(read.unwrap_or_default()) {
            checking.stamps = checking
                .plan
                .runs
                .iter()
                .enumerate()
                .filter_map(|(index, run)| {
                    footprint::stamp(&run.spec, &candidate, &base).map(|stamp| (index, stamp))
                })
                .collect();
        }
        self.reuse_or_record(work, true)
    }
}

impl Checking {
    /// The passes among `records` that carry to this candidate for `op`, by plan index: only
    /// for a stamped run no exact pass answers, each the carried record to keep.
    pub(super) fn carried(
        &self,
        records: &[String],
        op: &OpId,
        producer: &str,
        at: crate::time::Timestamp,
    ) -> BTreeMap<usize, String> {
        let op = op.to_string();
        self.stamps
            .iter()
            .filter(|(index, _)| !self.reused.contains_key(index))
            .filter_map(|(index, stamp)| {
                let spec = &self.plan.runs[*index].spec;
                let source = records
                    .iter()
                    .filter_map(|line| EvidenceRecord::from_json(line).ok())
                    .find(|record| {
                        record.verdict == Verdict::Pass
                            && footprint::of_operation(record, spec, &op, stamp)
                    })?;
                Some((*index, self.carry(source, producer, at).to_json()))
            })
            .collect()
    }

    /// `source` carried to this candidate: written by `producer` at `at`, naming its source.
    fn carry(
        &self,
        source: EvidenceRecord,
        producer: &str,
        at: crate::time::Timestamp,
    ) -> EvidenceRecord {
        let built = &self.candidate.built;
        let from = Carried {
            producer: source.producer.clone(),
            candidate: source.candidate.clone(),
            base: source.base.clone(),
            at: source.at,
        };
        EvidenceRecord {
            producer: producer.to_owned(),
            candidate: crate::check::CommitTree {
                commit: built.commit.clone(),
                tree: built.tree.clone(),
            },
            base: self.base.clone(),
            candidate_id: built.id.to_string(),
            at,
            millis: 0,
            why: format!(
                "Carried from {}'s pass on tree {}: the files its verdict reads are the same.",
                source.producer, source.candidate.tree
            ),
            carried: Some(from),
            ..source
        }
    }

    /// Whether the record of run `index` keeps a stamp, and so hangs on the draft too.
    pub(super) fn stamped(&self, spec: &CheckSpec) -> bool {
        self.plan
            .runs
            .iter()
            .position(|run| run.spec.id == spec.id && run.spec.environment == spec.environment)
            .is_some_and(|index| self.stamps.contains_key(&index))
    }

    /// A carried pass answers without a run, and keeps the record that names its source.
    pub(super) fn carried_run(&self, index: usize) -> Option<Judged> {
        self.carry_from.get(&index).cloned().map(carried_judged)
    }

    /// The checks a merge's outcome names under `detail.carried`: each carried pass, with the
    /// record it came from, since its own tree was not checked by that run.
    pub(super) fn carried_checks(&self) -> Vec<CarriedCheck> {
        self.carry_from
            .values()
            .filter_map(|record| EvidenceRecord::from_json(record).ok())
            .filter_map(|record| {
                Some(CarriedCheck {
                    check: record.check,
                    environment: record.environment,
                    from: record.carried?,
                })
            })
            .collect()
    }
}

/// One check a merge carried (`detail.carried`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub(super) struct CarriedCheck {
    check: String,
    environment: String,
    from: Carried,
}

/// A pass carried as `record` (its JSON): answered without a run, keeping the record.
pub(super) fn carried_judged(record: String) -> Judged {
    let why = EvidenceRecord::from_json(&record)
        .map(|record| record.why)
        .unwrap_or_default();
    Judged {
        record,
        ..Judged::unrun(Verdict::Pass, why)
    }
}
