//! Compaction: the records of ended changes, moved from refs of their own into one index.
//!
//! Every ref on the remote costs every push, since Git's push hears the remote's whole ref
//! advertisement: with 30,000 refs a one-ref push takes five times as long as with 30. An ended
//! change would leave three refs for good (its chain, its intent's generation and its merged or
//! abandoned marker), so a runner moves them into the index in batches: merged changes
//! at once, abandoned ones once `[retention] window_s` has passed (their drafts, which a start
//! may pick up again until then, go with their chains). One atomic push writes a new commit of
//! each index shard the batch touches, holding each change's chain, verbatim, and deletes the
//! change's refs, each leased on the value the runner read. A reader that finds no chain ref
//! reads the change's shard (`changes/<xx>/<change>` in `refs/bay/compacted/changes/<x>`), and gets
//! the very steps, with their commit ids, that the chain held; a start that finds no generation
//! of its intent reads the latest compacted one (`intents/<xx>/<digest>` in
//! `refs/bay/compacted/intents/<x>`). Nothing a command reports changes.
//!
//! The index is sharded so that what a command fetches stays small however long the history:
//! a start fetches the one intent shard of its intent (a sixteenth of the intents), a status
//! of a compacted change the one change shard of its id (a thirty-second of the changes), and a
//! command about live changes none. 48 shard refs at most, so every push's ref advertisement
//! stays short. Each version of a shard is a child of the one before, so that a push of it,
//! and a fetch by a clone that holds the one before, moves only what it added: Git leaves
//! out of a pack what the tree of a parent holds, never what a replaced tree held.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::machine::{ChainRead, Expect, IndexAdd, NewValue, PushPlan, RawStep, RefUpdate};

/// The schema name of a compacted change.
pub const COMPACTED_SCHEMA: &str = "bay.compacted/1";

/// How many ended changes' markers a runner lets pile up on the remote before it compacts
/// them, far below any `[retention] ref_budget`: a push's cost grows with every ref.
pub const COMPACT_AT: usize = 32;

/// The most changes one compaction moves: one push, leased on each of their refs.
pub const BATCH: usize = 128;

/// The most change shards, and the most intent shards, one compaction adds to. A compaction
/// fetches each shard it adds to, whole, so a runner's new clone would fetch nearly all of the
/// index on its first pass if a batch took every ready change (they spread over all the
/// shards); with a few shards a pass, it fetches those, and the next passes the others.
pub const SHARDS: usize = 4;

/// The most versions of a shard in one line: each version is a child of the one before, so
/// that a push, and a fetch by a clone holding the one before, moves only what it adds; but a
/// new clone's first fetch of a shard brings every version's trees (measured, a 6,250-file
/// shard: one version, 6,269 objects, 0.5 MB, 62 ms; a line of 4,000, 24,359 objects, 2.8 MB,
/// 410 ms). Every `LINE`th version starts a new line, with no parent: its push sends the
/// shard whole once, and a first fetch brings at most `LINE` versions.
pub const LINE: u32 = 32;

/// The trailer that says a shard version's place in its line, from 0.
const PLACE: &str = "Bay-Shard-Line: ";

/// Each shard version of `plan` placed in its line: after its base, whose place `places` holds
/// (by the base's commit; one not there, written before places were, counts as 0), or first
/// in a new line, with no parent, once the line is [`LINE`] long. The place goes in the
/// version's message.
pub fn in_lines(plan: &mut PushPlan, places: &BTreeMap<Oid, u32>) {
    for add in &mut plan.indexes {
        let place = match &add.base {
            Some(base) => places.get(base).copied().unwrap_or(0).saturating_add(1),
            None => 0,
        };
        let place = if place >= LINE { 0 } else { place };
        add.parent = add.base.clone().filter(|_| place > 0);
        add.message = format!("{}\n{PLACE}{place}\n", add.message.trim_end());
    }
}

/// A shard version's place in its line, from its commit message; `None` when it names none.
pub fn place_in_line(message: &str) -> Option<u32> {
    message
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix(PLACE))
        .and_then(|place| place.trim().parse().ok())
}

/// The changes one compaction moves, of those `ready`: the ones in the [`SHARDS`] change
/// shards that hold the most of them, at most [`BATCH`], in `ready`'s order.
pub fn batch(ready: &[ChangeId]) -> Vec<ChangeId> {
    let mut batch = within_shards(ready.to_vec(), refs::index_of_change);
    batch.truncate(BATCH);
    batch
}

/// Those of `items` in the [`SHARDS`] shards (as `shard_of` names each item's) that hold the
/// most of them, of shards holding as many the first by name; in `items`' order.
pub fn within_shards<T>(items: Vec<T>, shard_of: impl Fn(&T) -> String) -> Vec<T> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for item in &items {
        *counts.entry(shard_of(item)).or_default() += 1;
    }
    let mut shards: Vec<(String, usize)> = counts.into_iter().collect();
    shards.sort_by(|(a, m), (b, n)| n.cmp(m).then_with(|| a.cmp(b)));
    shards.truncate(SHARDS);
    items
        .into_iter()
        .filter(|item| {
            let shard = shard_of(item);
            shards.iter().any(|(name, _)| *name == shard)
        })
        .collect()
}

/// Where `change`'s compacted chain lies in the index's tree, fanned out by its first two
/// characters as Git's notes are.
pub fn change_path(change: &ChangeId) -> String {
    let id = change.as_str();
    format!("changes/{}/{id}", &id[..2])
}

/// Where the latest compacted generation of the intent with `digest` lies in the index.
pub fn intent_path(digest: &str) -> String {
    let fan = digest.get(..2).unwrap_or(digest);
    format!("intents/{fan}/{digest}")
}

/// An ended change's chain as the index keeps it: its tip and every step, newest first, each
/// with its commit id, as the chain held them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Compacted {
    schema: String,
    change: ChangeId,
    tip: Oid,
    steps: Vec<RawStep>,
}

/// The file the index keeps for the chain `read`.
pub fn encode(read: &ChainRead) -> String {
    let compacted = Compacted {
        schema: COMPACTED_SCHEMA.to_owned(),
        change: read.change.clone(),
        tip: read.tip.clone(),
        steps: read.steps.clone(),
    };
    let mut text = serde_json::to_string(&compacted).unwrap_or_default();
    text.push('\n');
    text
}

/// The chain of `change` from its file in the index, as a reader of the chain ref would have
/// read it; a file that is not `change`'s compacted chain is refused, by what is wrong.
pub fn decode(change: &ChangeId, bytes: &[u8]) -> Result<ChainRead, String> {
    let compacted: Compacted = serde_json::from_slice(bytes)
        .map_err(|e| format!("the index's record of {change} is not a compacted chain: {e}"))?;
    if compacted.schema != COMPACTED_SCHEMA {
        return Err(format!(
            "the index's record of {change} is {}, not {COMPACTED_SCHEMA}",
            compacted.schema
        ));
    }
    if &compacted.change != change {
        return Err(format!(
            "the index's record at {change}'s place is {}'s",
            compacted.change
        ));
    }
    if compacted.steps.first().map(|s| &s.oid) != Some(&compacted.tip) {
        return Err(format!(
            "the index's record of {change} does not begin at its tip"
        ));
    }
    Ok(ChainRead {
        change: compacted.change,
        tip: compacted.tip,
        steps: compacted.steps,
        reached_known: false,
        unreadable: None,
    })
}

/// Why a change is no record at all: neither its chain ref nor the index holds it.
pub const ABSENT: &str = "no such change on the remote, in its refs or in its index";

/// The answer to `Action::ReadCompacted` for `change`, from its file at the commit `index` of
/// its shard (`None`: the shard has no file there): its chain, or the read of a chain that
/// cannot be read, saying why ([`ABSENT`] when the file is missing).
pub fn read_back(change: &ChangeId, index: &Oid, file: Option<&[u8]>) -> ChainRead {
    let unreadable = |why: String| ChainRead {
        change: change.clone(),
        tip: index.clone(),
        steps: Vec::new(),
        reached_known: false,
        unreadable: Some(why),
    };
    match file.map(|bytes| decode(change, bytes)) {
        Some(Ok(read)) => read,
        Some(Err(why)) => unreadable(why),
        None => unreadable(ABSENT.to_owned()),
    }
}

/// The answer to `Action::ReadCompacted` for `change` when the remote has no shard for it:
/// absent, by name, at Git's null id (no commit holds it).
pub fn read_back_unsharded(change: &ChangeId) -> ChainRead {
    read_back(change, &Oid::null(), None)
}

/// The record a chain read (from its ref or from the index) folds to, as every reader folds it.
pub fn fold(read: &ChainRead) -> Result<crate::record::ChangeRecord, String> {
    crate::machine::agent::fold_chain(read).map(|(record, _)| record)
}

/// The latest compacted generation of an intent, and its change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Generation {
    pub generation: u32,
    pub change: ChangeId,
}

impl Generation {
    pub fn encode(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_default();
        text.push('\n');
        text
    }

    pub fn decode(bytes: &[u8]) -> Result<Generation, String> {
        serde_json::from_slice(bytes)
            .map_err(|e| format!("the index's record of an intent cannot be read: {e}"))
    }
}

/// One ended change to compact: its whole chain as read, its markers (merged or abandoned)
/// with their values, and the ref of its intent's generation with the start step it names
/// (absent when already gone).
#[derive(Clone, Debug)]
pub struct Item {
    pub chain: ChainRead,
    pub markers: Vec<(String, Oid)>,
    pub intent: Option<(String, Oid)>,
}

/// The one atomic push that compacts `items` onto the index shards whose tips `shards` holds
/// (a shard it lacks is none yet): a new commit of each shard the batch touches, holding each
/// chain, and for each intent the highest generation between what the index holds (`known`,
/// by digest) and what the batch brings; each change's refs deleted, leased on the values
/// read; and the `stale` markers (of abandoned changes a start took up again) deleted too. Any
/// ref that moved since refuses the whole push.
pub fn plan(
    shards: &crate::machine::Refs,
    items: &[Item],
    known: &BTreeMap<String, Generation>,
    stale: &[(String, Oid)],
) -> PushPlan {
    // By shard, then by path.
    let mut files: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut intents: BTreeMap<String, Generation> = BTreeMap::new();
    let mut updates = Vec::new();
    for item in items {
        let change = &item.chain.change;
        files
            .entry(refs::index_of_change(change))
            .or_default()
            .push((change_path(change), encode(&item.chain)));
        updates.push(delete(refs::change(change), &item.chain.tip));
        for (name, value) in &item.markers {
            updates.push(delete(name.clone(), value));
        }
        if let Some((name, start)) = &item.intent {
            if let Some((digest, generation)) = refs::parse_intent(name) {
                let digest = digest.to_owned();
                let newer = intents
                    .get(&digest)
                    .or(known.get(&digest))
                    .is_none_or(|have| have.generation < generation);
                if newer {
                    let entry = Generation {
                        generation,
                        change: change.clone(),
                    };
                    intents.insert(digest, entry);
                }
            }
            updates.push(delete(name.clone(), start));
        }
    }
    for (digest, entry) in &intents {
        files
            .entry(refs::index_of_intent(digest))
            .or_default()
            .push((intent_path(digest), entry.encode()));
    }
    for (name, value) in stale {
        updates.push(delete(name.clone(), value));
    }
    let names: Vec<&str> = items.iter().map(|i| i.chain.change.as_str()).collect();
    let message = format!(
        "bay: compacted {} ended change{}\n\n{}\n",
        items.len(),
        if items.len() == 1 { "" } else { "s" },
        names.join("\n")
    );
    let indexes = files
        .into_iter()
        .map(|(shard, files)| {
            let base = shards.get(&shard).cloned();
            IndexAdd::on(shard, base, files, message.clone())
        })
        .collect();
    PushPlan {
        indexes,
        updates,
        atomic: true,
        ..PushPlan::default()
    }
}

fn delete(name: String, value: &Oid) -> RefUpdate {
    RefUpdate {
        name,
        expect: Expect::Is(value.clone()),
        new: NewValue::Delete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an id")
    }

    fn chain(change: &ChangeId) -> ChainRead {
        ChainRead {
            change: change.clone(),
            tip: oid('b'),
            steps: vec![
                RawStep {
                    oid: oid('b'),
                    message: "bay: second\n\n{}".into(),
                },
                RawStep {
                    oid: oid('a'),
                    message: "bay: first\n\n{}".into(),
                },
            ],
            reached_known: false,
            unreadable: None,
        }
    }

    #[test]
    fn a_batch_takes_the_ready_changes_of_the_fullest_few_shards() {
        let ids = [
            "aaaaaaaa", "abaaaaaa", "acaaaaaa", "baaaaaaa", "bbaaaaaa", "caaaaaaa", "daaaaaaa",
            "dbaaaaaa", "eaaaaaaa", "faaaaaaa",
        ];
        let ready: Vec<ChangeId> = ids
            .iter()
            .map(|id| ChangeId::parse(id).expect("an id"))
            .collect();
        let picked = batch(&ready);
        // Shards a (3), b (2), d (2), then c, e and f (1 each): c is first of those by name.
        let expected = [0, 1, 2, 3, 4, 5, 6, 7].map(|i| ready[i].clone());
        assert_eq!(picked, expected);
        let shards: std::collections::BTreeSet<String> =
            picked.iter().map(refs::index_of_change).collect();
        assert_eq!(shards.len(), SHARDS);
        assert!(batch(&[]).is_empty());
    }

    #[test]
    fn a_shard_version_follows_its_base_and_every_line_of_them_ends_at_line() {
        let plan_on = |base: Option<Oid>| PushPlan {
            indexes: vec![IndexAdd::on(
                "refs/bay/compacted/changes/c".into(),
                base,
                vec![("changes/c7/c7k2m4qa".into(), "{}".into())],
                "bay: compacted 1 ended change\n\nc7k2m4qa\n".into(),
            )],
            ..PushPlan::default()
        };
        let placed = |base: Option<Oid>, places: &BTreeMap<Oid, u32>| {
            let mut plan = plan_on(base);
            in_lines(&mut plan, places);
            let add = plan.indexes.remove(0);
            (add.parent, place_in_line(&add.message))
        };
        let base = oid('b');
        // A first version starts the line; the next follows its base.
        assert_eq!(placed(None, &BTreeMap::new()), (None, Some(0)));
        let places = BTreeMap::from([(base.clone(), 3)]);
        assert_eq!(
            placed(Some(base.clone()), &places),
            (Some(base.clone()), Some(4))
        );
        // A base written before places were counts as first in its line.
        assert_eq!(
            placed(Some(base.clone()), &BTreeMap::new()),
            (Some(base.clone()), Some(1))
        );
        // The version after a line's last starts a new one, with no parent, leased still.
        let places = BTreeMap::from([(base.clone(), LINE - 1)]);
        let mut plan = plan_on(Some(base.clone()));
        in_lines(&mut plan, &places);
        assert_eq!(plan.indexes[0].parent, None);
        assert_eq!(plan.indexes[0].expect, Expect::Is(base));
        assert_eq!(place_in_line(&plan.indexes[0].message), Some(0));
        assert!(
            plan.indexes[0]
                .message
                .starts_with("bay: compacted 1 ended change\n")
        );
    }

    #[test]
    fn a_chain_reads_back_from_the_index_as_it_was() {
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let read = chain(&change);
        assert_eq!(decode(&change, encode(&read).as_bytes()), Ok(read.clone()));
        assert_eq!(change_path(&change), "changes/c7/c7k2m4qa");
        let other = ChangeId::parse("c7k2m4qb").expect("an id");
        assert!(decode(&other, encode(&read).as_bytes()).is_err());
        assert!(decode(&change, b"{}").is_err());
        let mut headless = read;
        headless.steps.remove(0);
        assert!(decode(&change, encode(&headless).as_bytes()).is_err());
    }

    #[test]
    fn a_batch_deletes_every_ref_it_moves_leased_and_keeps_the_highest_generation() {
        let (one, two) = (
            ChangeId::parse("c7k2m4qa").expect("an id"),
            ChangeId::parse("d7k2m4qa").expect("an id"),
        );
        let digest = "0123456789abcdef";
        let items = vec![
            Item {
                chain: chain(&one),
                markers: vec![(refs::landed(&one), oid('1'))],
                intent: Some((refs::intent(digest, 2), oid('a'))),
            },
            Item {
                chain: chain(&two),
                markers: vec![
                    (refs::landed(&two), oid('2')),
                    (refs::abandoned(&two, crate::time::Timestamp(0)), oid('3')),
                ],
                intent: None,
            },
        ];
        let known = BTreeMap::from([(
            digest.to_owned(),
            Generation {
                generation: 1,
                change: two.clone(),
            },
        )]);
        let stale = [(refs::abandoned(&one, crate::time::Timestamp(0)), oid('4'))];
        let one_shard = refs::index_of_change(&one);
        assert_eq!(one_shard, "refs/bay/compacted/changes/c");
        let shards = crate::machine::Refs::from([(one_shard.clone(), oid('9'))]);
        let plan = plan(&shards, &items, &known, &stale);
        assert!(plan.atomic);
        // One commit for each shard the batch touches, each leased on the tip it builds on.
        let touched: Vec<(&str, &Expect, Vec<&str>)> = plan
            .indexes
            .iter()
            .map(|add| {
                let paths = add.files.iter().map(|(p, _)| p.as_str()).collect();
                (add.shard.as_str(), &add.expect, paths)
            })
            .collect();
        assert_eq!(
            touched,
            vec![
                (
                    "refs/bay/compacted/changes/c",
                    &Expect::Is(oid('9')),
                    vec!["changes/c7/c7k2m4qa"]
                ),
                (
                    "refs/bay/compacted/changes/d",
                    &Expect::Absent,
                    vec!["changes/d7/d7k2m4qa"]
                ),
                (
                    "refs/bay/compacted/intents/0",
                    &Expect::Absent,
                    vec!["intents/01/0123456789abcdef"]
                ),
            ]
        );
        assert_eq!(
            Generation::decode(plan.indexes[2].files[0].1.as_bytes()),
            Ok(Generation {
                generation: 2,
                change: one.clone()
            })
        );
        assert_eq!(plan.updates.len(), 7);
        assert!(plan.updates.iter().all(|u| u.new == NewValue::Delete));
        assert!(
            plan.updates
                .iter()
                .all(|u| matches!(u.expect, Expect::Is(_)))
        );
        // A lower generation than the index holds leaves its entry alone.
        let known = BTreeMap::from([(
            digest.to_owned(),
            Generation {
                generation: 3,
                change: two,
            },
        )]);
        let plan = super::plan(&crate::machine::Refs::new(), &items, &known, &[]);
        let shards: Vec<&str> = plan.indexes.iter().map(|a| a.shard.as_str()).collect();
        assert_eq!(
            shards,
            vec![
                "refs/bay/compacted/changes/c",
                "refs/bay/compacted/changes/d"
            ]
        );
    }
}
