//! Compaction: one atomic push writes a commit of `refs/bay/index` holding a merged change's
//! chain and deletes the change's own refs, each leased; a stale lease moves nothing. The
//! index's files read back as written.

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
        refs::INDEX,
    ]);
}

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "index: a compaction moves a merged change's refs into one index commit",
            |b| {
                let item = merged(b);
                let plan = compact::plan(None, std::slice::from_ref(&item), &BTreeMap::new(), &[]);
                let report = b.push("compaction", "", plan);
                see_all(b);
                if let Some(index) = report.index {
                    b.see_paths("index", &index);
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
                    // A second compaction builds on the first.
                    b.set(&refs::landed(&change()), "B");
                    let again = Item {
                        intent: None,
                        ..item
                    };
                    b.set(&refs::change(&change()), "A");
                    let plan = compact::plan(Some(&index), &[again], &BTreeMap::new(), &[]);
                    let second = b.push("second", "second ", plan);
                    if let Some(next) = second.index {
                        b.see_paths("second index", &next);
                    }
                }
            },
        ),
        Case::new(
            "index: a compaction whose lease is stale moves nothing",
            |b| {
                let item = merged(b);
                b.set(&refs::landed(&change()), "A");
                let plan = compact::plan(None, &[item], &BTreeMap::new(), &[]);
                b.push("compaction", "", plan);
                see_all(b);
            },
        ),
    ]
}
