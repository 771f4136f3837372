//! Compaction (`crate::compact`): when a pass finds the remote holding `compact_at` merged
//! markers or more, the runner moves up to [`BATCH`] merged changes into the index in one
//! atomic push before it decides what to work. It reads what it moves first: each change's whole chain (which
//! must fold to a merged record at the tip the marker sits beside), its intent's generation ref,
//! and the index's entries for those intents; every ref the push deletes is leased on the value
//! read, so a change that moved meanwhile refuses the whole push, which the next pass tries
//! again. A compaction never holds up work: any fault, and the pass goes on.

use std::collections::BTreeMap;

use super::{Purpose as RunnerPurpose, RunMode, Runner};
use crate::compact::{self, BATCH, Generation, Item};
use crate::git::{Oid, refs};
use crate::id::{ChangeId, intent_digest};
use crate::machine::agent::fold_chain;
use crate::machine::{Action, ChainQuery, ChainRead, Completion, FetchSpec, Misuse, PushOutcome};

/// What each action of a compaction is for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    /// The batch's chains, their markers and the index.
    Fetch(FetchSpec),
    Chains,
    /// The generation refs of the batch's intents.
    Intents(Vec<Item>, FetchSpec),
    /// The index's entry for one intent (by digest), while `awaiting` more.
    Known(String),
    /// The compaction of these changes.
    Push(Vec<Item>),
}

/// A batch whose index entries are being read.
#[derive(Clone, Debug)]
pub(super) struct Reading {
    items: Vec<Item>,
    index: Option<Oid>,
    known: BTreeMap<String, Generation>,
    awaiting: usize,
}

impl Runner {
    /// Whether this pass compacts first: once a pass, when enough merged markers wait, never
    /// for `merge --wait`. A busy queue does not put it off, so the markers stay few.
    pub(super) fn compaction_due(&self) -> bool {
        !self.compacted
            && !matches!(self.cfg.mode, RunMode::Only(_))
            && self
                .refs
                .keys()
                .filter(|name| refs::parse_landed(name).is_some())
                .count()
                >= self.cfg.compact_at.max(1)
    }

    /// Compacts a batch, then decides the pass again.
    pub(super) fn compact(&mut self) {
        self.compacted = true;
        let batch: Vec<ChangeId> = self
            .refs
            .keys()
            .filter_map(|name| refs::parse_landed(name))
            .collect();
        let mut spec = FetchSpec::new(
            batch
                .iter()
                .take(BATCH)
                .flat_map(|c| [refs::change_pattern(c), refs::landed_pattern(c)]),
        );
        spec.patterns.push(refs::INDEX_PATTERN.to_owned());
        self.send_compaction(Action::Fetch(spec.clone()), Purpose::Fetch(spec));
    }

    fn send_compaction(&mut self, action: Action, purpose: Purpose) {
        self.out.send(action, RunnerPurpose::Compact(purpose));
    }

    /// Ends the compaction, done or given up for this pass (the next pass looks again), and
    /// goes on with the pass.
    fn compaction_over(&mut self) {
        self.reading = None;
        self.decide();
    }

    pub(super) fn on_compaction(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match (purpose, completion) {
            (Purpose::Fetch(spec), Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.refs, fetched);
                self.read_batch();
            }
            (Purpose::Chains, Completion::ChainsRead(Ok(reads))) => self.on_batch(reads),
            (Purpose::Intents(items, spec), Completion::Fetched(Ok(fetched))) => {
                spec.apply(&mut self.refs, fetched);
                self.on_intents(items);
            }
            (Purpose::Known(digest), Completion::FileRead(Ok(bytes))) => {
                self.on_known(digest, bytes.as_deref());
            }
            (Purpose::Push(items), Completion::Pushed(report)) => {
                if report.outcome == PushOutcome::Accepted {
                    self.compacted_refs(&items, report.index);
                }
                self.compaction_over();
            }
            (Purpose::Fetch(_) | Purpose::Intents(..), Completion::Fetched(Err(_)))
            | (Purpose::Chains, Completion::ChainsRead(Err(_)))
            | (Purpose::Known(_), Completion::FileRead(Err(_))) => self.compaction_over(),
            (purpose, other) => {
                return Err(Misuse(format!(
                    "a compaction's {purpose:?} answered with {other:?}"
                )));
            }
        }
        Ok(())
    }

    /// Reads the whole chain of each merged change whose chain and marker are there.
    fn read_batch(&mut self) {
        let chains: Vec<ChainQuery> = self
            .refs
            .keys()
            .filter_map(|name| refs::parse_landed(name))
            .take(BATCH)
            .filter_map(|change| {
                let tip = self.refs.get(&refs::change(&change))?.clone();
                Some(ChainQuery {
                    change,
                    tip,
                    known: None,
                })
            })
            .collect();
        if chains.is_empty() {
            return self.compaction_over();
        }
        self.send_compaction(Action::ReadChains { chains }, Purpose::Chains);
    }

    /// Keeps each chain that folds to a merged record, then reads its intent's generation.
    fn on_batch(&mut self, reads: Vec<ChainRead>) {
        let mut items = Vec::new();
        let mut intents = Vec::new();
        for read in reads {
            let Ok((record, _)) = fold_chain(&read) else {
                continue;
            };
            let landed = self.refs.get(&refs::landed(&read.change)).cloned();
            let (Some(landed), true) = (landed, record.merged().is_some()) else {
                continue;
            };
            let digest = intent_digest(&record.intent);
            let name = refs::intent(&digest, record.generation);
            // The generation ref names the chain's first step, its start.
            let start = read.steps.last().map(|raw| raw.oid.clone());
            intents.push(refs::intents_pattern(&digest));
            items.push(Item {
                intent: start.map(|start| (name, start)),
                chain: read,
                landed,
            });
        }
        if items.is_empty() {
            return self.compaction_over();
        }
        intents.sort();
        intents.dedup();
        let spec = FetchSpec::new(intents);
        self.send_compaction(Action::Fetch(spec.clone()), Purpose::Intents(items, spec));
    }

    /// Keeps the generation refs that still name their change's start, then reads what the
    /// index says of those intents.
    fn on_intents(&mut self, mut items: Vec<Item>) {
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
        let index = self.refs.get(refs::INDEX).cloned();
        let awaiting = if index.is_some() { digests.len() } else { 0 };
        self.reading = Some(Reading {
            items,
            index: index.clone(),
            known: BTreeMap::new(),
            awaiting,
        });
        match index {
            Some(index) if awaiting > 0 => {
                for digest in digests {
                    let read = Action::ReadFile {
                        commit: index.clone(),
                        path: compact::intent_path(&digest),
                    };
                    self.send_compaction(read, Purpose::Known(digest));
                }
            }
            _ => self.push_compaction(),
        }
    }

    fn on_known(&mut self, digest: String, bytes: Option<&[u8]>) {
        let Some(reading) = self.reading.as_mut() else {
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
        let Some(reading) = self.reading.take() else {
            return self.compaction_over();
        };
        #[cfg(feature = "mutants")]
        let reading = Reading {
            index: self.mutant_index(reading.index.clone()),
            ..reading
        };
        let plan = compact::plan(reading.index.as_ref(), &reading.items, &reading.known);
        #[cfg(feature = "mutants")]
        let plan = self.mutant_compaction(plan);
        self.send_compaction(Action::Push(plan), Purpose::Push(reading.items));
    }

    /// What this runner knows of the remote after its compaction landed: the batch's refs
    /// gone, the index at its new commit.
    fn compacted_refs(&mut self, items: &[Item], index: Option<Oid>) {
        if let Some(index) = index {
            self.refs.insert(refs::INDEX.to_owned(), index);
        }
        for item in items {
            let change = &item.chain.change;
            self.refs.remove(&refs::change(change));
            self.refs.remove(&refs::landed(change));
            if let Some((name, _)) = &item.intent {
                self.refs.remove(name);
            }
            self.chains.remove(change);
        }
    }
}
