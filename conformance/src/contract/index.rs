//! Compaction: one atomic push writes a commit of each index shard it adds to (the change's and
//! its intent's), holding a merged change's chain and its intent's generation, and deletes the
//! change's own refs, each leased; a stale lease moves nothing. The shards' files read back as
//! written, and a change a shard lacks reads back absent.

use std::collections::BTreeMap;

use bay_core::compact::{self, Item};
use bay_core::git::refs;
use bay_core::machine::{Action, ChainRead, Completion, RawStep};

use super::{Bench, Case, change};

const DIGEST: &str = "0123456789abcdef";

fn intent() -> String {
    refs::intent(DIGEST, 1)
}

/// A remote where the case's change has merged: its chain at `A`, its marker at `B`, its
/// intent's first generation at `A`.
fn merged(b: &mut Bench<'_>) -> Item {
    b.commit("A", &[], &[("file", "A")]);
    b.commit("B", &["A"], &[("file", "B")]);
    b.set(&refs::change(&change()), "A");
    b.set(&refs::landed(&change()), "B");
    b.set(&intent(), "A");
    Item {
        chain: ChainRead {
            change: change(),
            tip: b.oid("A"),
            steps: vec![RawStep {
                oid: b.oid("A"),
                message: "bay: c7k2m4qa start\n\n{}\n".into(),
            }],
            reached_known: false,
            unreadable: None,
        },
        markers: vec![(refs::landed(&change()), b.oid("B"))],
        intent: Some((intent(), b.oid("A"))),
    }
}

fn see_all(b: &mut Bench<'_>) {
    b.see_refs(&[
        &refs::change(&change()),
        &refs::landed(&change()),
        &intent(),
        &refs::index_of_change(&change()),
        &refs::index_of_intent(DIGEST),
    ]);
}

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "index: a compaction moves a merged change's refs into its index shards",
            |b| {
                let item = merged(b);
                let none = BTreeMap::new();
                let plan = compact::plan(&none, std::slice::from_ref(&item), &BTreeMap::new(), &[]);
                let report = b.push("compaction", "", plan);
                see_all(b);
                if let [index, intents] = &report.indexes[..] {
                    let index = index.clone();
                    b.see_paths("changes shard", &index);
                    b.see_paths("intents shard", intents);
                    let read = Action::ReadFile {
                        commit: index.clone(),
                        path: compact::change_path(&change()),
                    };
                    let back = match b.execute(&read) {
                        Completion::FileRead(Ok(Some(bytes))) => {
                            match compact::decode(&change(), &bytes) {
                                Ok(chain) if chain == item.chain => "the chain",
                                Ok(_) => "another chain",
                                Err(_) => "unreadable",
                            }
                        }
                        Completion::FileRead(Ok(None)) => "absent",
                        _ => "fault",
                    };
                    b.see("read back", back);
                    // The same, through the action every reader of a compacted change sends (it
                    // fetches the shard); another change is absent from the shard, and one
                    // whose shard the remote lacks is absent too, by name.
                    let other = bay_core::id::ChangeId::parse("c7k2m4qb").expect("an id");
                    let elsewhere = bay_core::id::ChangeId::parse("z7k2m4qa").expect("an id");
                    let read = Action::ReadCompacted {
                        changes: vec![change(), other, elsewhere],
                    };
                    let back = match b.execute(&read) {
                        Completion::ChainsRead(Ok(reads)) => reads
                            .iter()
                            .map(|read| match &read.unreadable {
                                None if *read == item.chain => "the chain".to_owned(),
                                None => "another chain".to_owned(),
                                Some(why) => why.clone(),
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                        _ => "fault".to_owned(),
                    };
                    b.see("read compacted", back);
                    // An intent's latest compacted generation, read in its shard; an intent
                    // the shard lacks has none.
                    for (fact, digest) in [("intent", DIGEST), ("other intent", "f0123456789abcde")]
                    {
                        let read = Action::ReadFile {
                            commit: intents.clone(),
                            path: compact::intent_path(digest),
                        };
                        let back = match b.execute(&read) {
                            Completion::FileRead(Ok(Some(bytes))) => {
                                match compact::Generation::decode(&bytes) {
                                    Ok(g) => format!("generation {} of {}", g.generation, g.change),
                                    Err(_) => "unreadable".to_owned(),
                                }
                            }
                            Completion::FileRead(Ok(None)) => "absent".to_owned(),
                            _ => "fault".to_owned(),
                        };
                        b.see(format!("read compacted {fact}"), back);
                    }
                    // A second compaction builds on the first.
                    b.set(&refs::landed(&change()), "B");
                    let again = Item {
                        intent: None,
                        ..item
                    };
                    b.set(&refs::change(&change()), "A");
                    let shards = BTreeMap::from([(refs::index_of_change(&change()), index)]);
                    let plan = compact::plan(&shards, &[again], &BTreeMap::new(), &[]);
                    let second = b.push("second", "second ", plan);
                    if let Some(next) = second.indexes.first() {
                        b.see_paths("second changes shard", next);
                    }
                }
            },
        ),
        Case::new(
            "index: a compaction whose lease is stale moves nothing",
            |b| {
                let item = merged(b);
                b.set(&refs::landed(&change()), "A");
                let none = BTreeMap::new();
                let plan = compact::plan(&none, &[item], &BTreeMap::new(), &[]);
                b.push("compaction", "", plan);
                see_all(b);
            },
        ),
    ]
}
