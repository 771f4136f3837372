//! Compaction (`crate::compact`): when a pass finds the remote holding `compact_at` changes
//! ready to compact or more (merged, or ended short of a merge, abandoned or `no_effect`,
//! longer ago than the retention window, by their markers' names), the runner moves up to
//! [`BATCH`](compact::BATCH) of them, from at most [`SHARDS`](compact::SHARDS) change shards
//! and as many intent shards (`compact::within_shards`), into the index in one atomic push
//! before it decides what to work on; the others wait for a later pass.
//! It reads what it moves first: each change's whole chain (which must fold to an ended
//! record, a merged one with its merged marker, any other with the marker of that end), its
//! intent's generation ref, and the index's entries for those intents (from their shards);
//! every ref the push deletes, and every shard it adds to, is leased on the value read, so a
//! change that moved meanwhile refuses the whole push, which the next pass tries again. An
//! abandoned change a start took up again is not compacted; its old marker is deleted
//! instead. A compaction never holds up work: any fault, and the pass goes on.

use std::collections::BTreeMap;

use super::{Purpose as RunnerPurpose, RunMode, Runner};
use crate::compact::{self, Generation, Item};
use crate::git::{Oid, refs};
use crate::id::{ChangeId, intent_digest};
use crate::machine::agent::{ReadSteps, fold_chain};
use crate::machine::{
    Action, ChainQuery, ChainRead, Completion, FetchSpec, Misuse, PushOutcome, Refs,
};
use crate::record::{ChangeRecord, StepBody};
use crate::result::OpState;

/// What each action of a compaction is for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    /// The batch's chains, their markers and their index shards, with the batch.
    Fetch(FetchSpec, Vec<ChangeId>),
    Chains,
    /// The generation refs of the batch's intents, with the stale markers found.
    Intents(Vec<Item>, Vec<(String, Oid)>, FetchSpec),
    /// The index's entry for one intent (by digest), while `awaiting` more.
    Known(String),
    /// The tips of the shards the plan adds to, for each one's place in its line of versions
    /// (`compact::in_lines`); then the push.
    Places(Vec<Item>, Vec<(String, Oid)>, Box<crate::machine::PushPlan>),
    /// The compaction of these changes, the deletion of these stale markers, and the index
    /// shards it adds to, in the plan's order.
    Push(Vec<Item>, Vec<(String, Oid)>, Vec<String>),
}

/// Where a pass stands with compacting.
#[derive(Debug, Default)]
pub(super) enum Compacting {
    /// It has not looked for changes to compact.
    #[default]
    Unlooked,
    /// It has looked, and reads no index entries.
    Looked,
    /// It reads the index's entries for a batch.
    Reading(Reading),
}

/// A batch whose index entries are being read.
#[derive(Clone, Debug)]
pub(super) struct Reading {
    items: Vec<Item>,
    stale: Vec<(String, Oid)>,
    known: BTreeMap<String, Generation>,
    awaiting: usize,
}

impl Runner {
    /// Whether this pass compacts first: once a pass, when enough changes are ready, never
    /// for `merge --wait`. A busy queue does not put it off, so the markers stay few.
    pub(super) fn compaction_due(&self) -> bool {
        self.pass()
            .is_some_and(|pass| matches!(pass.compaction, Compacting::Unlooked))
            && !matches!(self.cfg.mode, RunMode::Only(_))
            && self.ready().len() >= self.cfg.compact_at.max(1)
    }

    /// The changes ready to compact, by their markers' names alone: every merged one, and
    /// each abandoned or `no_effect` one whose retention window has passed by this runner's
    /// clock.
    fn ready(&self) -> Vec<ChangeId> {
        let mut ready: Vec<ChangeId> = self
            .refs
            .keys()
            .filter_map(|name| match refs::parse_ended(name) {
                Some((change, at)) => {
                    let due = at.0.saturating_add(self.cfg.retention_ms) <= self.now.0;
                    due.then_some(change)
                }
                None => refs::parse_landed(name),
            })
            .collect();
        ready.sort();
        ready.dedup();
        ready
    }

    /// Every marker of `change` this runner knows, with its value.
    fn markers(&self, change: &ChangeId) -> Vec<(String, Oid)> {
        self.refs
            .iter()
            .filter(|(name, _)| {
                refs::parse_landed(name).as_ref() == Some(change)
                    || refs::parse_ended(name).is_some_and(|(c, _)| &c == change)
            })
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect()
    }

    /// Compacts a batch, then decides the pass again.
    pub(super) fn compact(&mut self) {
        if let Some(pass) = self.pass_mut() {
            pass.compaction = Compacting::Looked;
        }
        let batch = compact::batch(&self.ready());
        let mut patterns = Vec::with_capacity(batch.len() * 3);
        for change in &batch {
            patterns.push(refs::change_pattern(change));
            patterns.push(refs::index_pattern(&refs::index_of_change(change)));
            patterns.extend(self.markers(change).into_iter().map(|(name, _)| name));
        }
        patterns.sort();
        patterns.dedup();
        let spec = FetchSpec::new(patterns);
        self.send_compaction(Action::Fetch(spec.clone()), Purpose::Fetch(spec, batch));
    }

    fn send_compaction(&mut self, action: Action, purpose: Purpose) {
        self.out.send(action, RunnerPurpose::Compact(purpose));
    }

    /// Ends the compaction, done or given up for this pass (the next pass looks again), and
    /// goes on with the pass.
    fn compaction_over(&mut self) {
        if let Some(pass) = self.pass_mut()
            && let Compacting::Reading(_) = pass.compaction
        {
            pass.compaction = Compacting::Looked;
        }
        self.decide();
    }

    pub(super) fn on_compaction(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match (purpose, completion) {
            (Purpose::Fetch(spec, batch), Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.refs, fetched);
                self.read_batch(batch);
            }
            (Purpose::Chains, Completion::ChainsRead(Ok(reads))) => self.on_batch(reads),
            (Purpose::Intents(items, stale, spec), Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.refs, fetched);
                self.on_intents(items, stale);
            }
            (Purpose::Known(digest), Completion::FileRead(Ok(bytes))) => {
                self.on_known(digest, bytes.as_deref());
            }
            (Purpose::Places(items, stale, plan), Completion::StepsRead(Ok(tips))) => {
                let places = tips
                    .iter()
                    .map(|tip| {
                        (
                            tip.oid.clone(),
                            compact::place_in_line(&tip.message).unwrap_or(0),
                        )
                    })
                    .collect();
                self.send_placed(items, stale, *plan, &places);
            }
            (Purpose::Push(items, stale, added), Completion::Pushed(report)) => {
                if report.outcome == PushOutcome::Accepted {
                    let shards = added.into_iter().zip(report.indexes).collect();
                    self.compacted_refs(&items, &stale, shards);
                }
                self.compaction_over();
            }
            (Purpose::Fetch(..) | Purpose::Intents(..), Completion::Fetched(Err(_)))
            | (Purpose::Chains, Completion::ChainsRead(Err(_)))
            | (Purpose::Known(_), Completion::FileRead(Err(_)))
            | (Purpose::Places(..), Completion::StepsRead(Err(_))) => self.compaction_over(),
            (purpose, other) => {
                return Err(Misuse(format!(
                    "a compaction's {purpose:?} answered with {other:?}"
                )));
            }
        }
        Ok(())
    }

    /// Reads the whole chain of each change of the batch whose chain the fetch found. Only
    /// the batch's: the fetch refreshed its chains and markers alone, and a change that came
    /// due while the fetch was out may be held at a tip older than its marker (read live, its
    /// abandoned marker would look stale); the next pass takes it.
    fn read_batch(&mut self, batch: Vec<ChangeId>) {
        let chains: Vec<ChainQuery> = batch
            .into_iter()
            .filter_map(|change| ChainQuery::whole(&self.refs, &change))
            .collect();
        if chains.is_empty() {
            return self.compaction_over();
        }
        self.send_compaction(Action::ReadChains { chains }, Purpose::Chains);
    }

    /// Keeps each chain that folds to a merged record with its merged marker, or to one that
    /// ended short of a merge (abandoned, `no_effect`) with the marker of that end, then reads
    /// its intent's generation.
    /// The abandoned and no-effect markers of a change that is live again are stale.
    fn on_batch(&mut self, reads: Vec<ChainRead>) {
        let mut items = Vec::new();
        let mut stale = Vec::new();
        for read in reads {
            let Ok((record, steps)) = fold_chain(&read) else {
                continue;
            };
            let markers = self.markers(&read.change);
            let landed = markers
                .iter()
                .any(|(name, _)| refs::parse_landed(name).is_some());
            #[allow(unused_mut)]
            let (mut ended, mut live) = (
                if record.merged().is_some() {
                    landed
                } else {
                    record.ended()
                },
                !record.ended(),
            );
            // A change ended again since the pass's fetch (taken up and abandoned once more)
            // has a marker this runner never read: compacted now, it would stay behind for
            // good. The next pass reads it.
            if ended && record.merged().is_none() && !end_marker_read(&record, &steps, &markers) {
                continue;
            }
            #[cfg(feature = "mutants")]
            if self.mutant_abandoned_stale(record.abandoned) {
                (ended, live) = (false, true);
            }
            #[cfg(feature = "mutants")]
            if self.mutant_compact_live(live) {
                (ended, live) = (true, false);
            }
            if !ended {
                if live {
                    stale.extend(
                        markers
                            .into_iter()
                            .filter(|(name, _)| refs::parse_ended(name).is_some()),
                    );
                }
                continue;
            }
            let digest = intent_digest(&record.intent);
            let name = refs::intent(&digest, record.generation);
            // The generation ref names the chain's first step, its start.
            let start = read.steps.last().map(|raw| raw.oid.clone());
            items.push((
                digest,
                Item {
                    intent: start.map(|start| (name, start)),
                    chain: read,
                    markers,
                },
            ));
        }
        // Those of a few intent shards, as of a few change shards: the rest wait a pass.
        let items = compact::within_shards(items, |(digest, _)| refs::index_of_intent(digest));
        if items.is_empty() && stale.is_empty() {
            return self.compaction_over();
        }
        let mut intents = Vec::with_capacity(items.len() * 2);
        for (digest, _) in &items {
            intents.push(refs::intents_pattern(digest));
            intents.push(refs::index_pattern(&refs::index_of_intent(digest)));
        }
        let items: Vec<Item> = items.into_iter().map(|(_, item)| item).collect();
        intents.sort();
        intents.dedup();
        let spec = FetchSpec::new(intents);
        let purpose = Purpose::Intents(items, stale, spec.clone());
        self.send_compaction(Action::Fetch(spec), purpose);
    }

    /// Keeps the generation refs that still name their change's start, then reads what the
    /// index's shards say of those intents.
    fn on_intents(&mut self, mut items: Vec<Item>, stale: Vec<(String, Oid)>) {
        for item in &mut items {
            item.intent = item
                .intent
                .take()
                .filter(|(name, start)| self.refs.get(name) == Some(start));
        }
        let digests: Vec<String> = {
            let mut digests: Vec<String> = items
                .iter()
                .filter_map(|item| item.intent.as_ref())
                .filter_map(|(name, _)| refs::parse_intent(name))
                .map(|(digest, _)| digest.to_owned())
                .collect();
            digests.sort();
            digests.dedup();
            digests
        };
        // Only an intent whose shard exists can have a compacted generation.
        let reads: Vec<(String, Oid)> = digests
            .into_iter()
            .filter_map(|digest| {
                let shard = self.refs.get(&refs::index_of_intent(&digest))?.clone();
                Some((digest, shard))
            })
            .collect();
        if let Some(pass) = self.pass_mut() {
            pass.compaction = Compacting::Reading(Reading {
                items,
                stale,
                known: BTreeMap::new(),
                awaiting: reads.len(),
            });
        }
        if reads.is_empty() {
            return self.push_compaction();
        }
        for (digest, shard) in reads {
            let read = Action::ReadFile {
                commit: shard,
                path: compact::intent_path(&digest),
            };
            self.send_compaction(read, Purpose::Known(digest));
        }
    }

    fn on_known(&mut self, digest: String, bytes: Option<&[u8]>) {
        let Some(Compacting::Reading(reading)) = self.pass_mut().map(|pass| &mut pass.compaction)
        else {
            return;
        };
        if let Some(known) = bytes.and_then(|bytes| Generation::decode(bytes).ok()) {
            reading.known.insert(digest, known);
        }
        reading.awaiting = reading.awaiting.saturating_sub(1);
        if reading.awaiting == 0 {
            self.push_compaction();
        }
    }

    fn push_compaction(&mut self) {
        let reading = match self.pass_mut() {
            Some(pass) => match std::mem::replace(&mut pass.compaction, Compacting::Looked) {
                Compacting::Reading(reading) => Some(reading),
                other => {
                    pass.compaction = other;
                    None
                }
            },
            None => None,
        };
        let Some(reading) = reading else {
            return self.compaction_over();
        };
        let shards: Refs = self
            .refs
            .iter()
            .filter(|(name, _)| refs::is_index(name))
            .map(|(name, tip)| (name.clone(), tip.clone()))
            .collect();
        #[cfg(feature = "mutants")]
        let shards = self.mutant_shards(shards);
        let plan = compact::plan(&shards, &reading.items, &reading.known, &reading.stale);
        let oids: Vec<Oid> = plan
            .indexes
            .iter()
            .filter_map(|add| add.base.clone())
            .collect();
        if oids.is_empty() {
            return self.send_placed(reading.items, reading.stale, plan, &BTreeMap::new());
        }
        let purpose = Purpose::Places(reading.items, reading.stale, Box::new(plan));
        self.send_compaction(Action::ReadSteps { oids }, purpose);
    }

    /// Pushes `plan` with each shard version placed in its line, after its base's `places`.
    fn send_placed(
        &mut self,
        items: Vec<Item>,
        stale: Vec<(String, Oid)>,
        mut plan: crate::machine::PushPlan,
        places: &BTreeMap<Oid, u32>,
    ) {
        compact::in_lines(&mut plan, places);
        #[cfg(feature = "mutants")]
        let plan = self.mutant_compaction(plan);
        let added = plan.indexes.iter().map(|add| add.shard.clone()).collect();
        let purpose = Purpose::Push(items, stale, added);
        self.send_compaction(Action::Push(plan), purpose);
    }

    /// What this runner knows of the remote after its compaction landed: the batch's refs
    /// gone, each shard it added to at its new commit.
    fn compacted_refs(
        &mut self,
        items: &[Item],
        stale: &[(String, Oid)],
        shards: Vec<(String, Oid)>,
    ) {
        self.refs.extend(shards);
        for (name, _) in stale {
            self.refs.remove(name);
        }
        for item in items {
            let change = &item.chain.change;
            self.refs.remove(&refs::change(change));
            for (name, _) in &item.markers {
                self.refs.remove(name);
            }
            if let Some((name, _)) = &item.intent {
                self.refs.remove(name);
            }
            self.chains.remove(change);
        }
    }
}

/// Whether `markers` holds the marker of the end `record` holds short of a merge: the
/// abandoned or no-effect marker whose value is that end's step (`steps`, oldest first).
fn end_marker_read(record: &ChangeRecord, steps: &ReadSteps, markers: &[(String, Oid)]) -> bool {
    let end = steps.iter().rev().find(|(_, step)| match &step.body {
        StepBody::Abandon => record.abandoned,
        StepBody::Outcome { state, .. } => !record.abandoned && *state == OpState::NoEffect,
        _ => false,
    });
    end.is_some_and(|(oid, _)| {
        markers
            .iter()
            .any(|(name, value)| value == oid && refs::parse_ended(name).is_some())
    })
}
