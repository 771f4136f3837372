//! Pushes: atomic multi-ref pushes with a lease per ref, create-only refs, deletions, chain
//! appends and notes, and a push whose reply is lost.
//!
//! Each case starts from refs holding the commits `A`..`D` (made beforehand, each with one
//! file) and pushes one plan; it sees the outcome, what the push wrote, and every ref it names.

use bay_core::git::refs;
use bay_core::machine::{Append, Expect, LogAdd, NewValue, NoteAdd, PushPlan, RefUpdate};

use super::{Bench, Case, change, heartbeat};

#[derive(Clone, Copy, Debug)]
enum Lease {
    Absent,
    Is(&'static str),
    Any,
}

#[derive(Clone, Copy, Debug)]
enum New {
    Sym(&'static str),
    Step(usize, usize),
    Delete,
}

/// One push, as data.
#[derive(Clone, Debug)]
struct Plan {
    /// Refs and the symbol each holds before the push.
    initial: Vec<(String, &'static str)>,
    /// One append to the case's change: its parent, how many steps, its carry.
    append: Option<(Option<&'static str>, usize, Option<&'static str>)>,
    /// Notes by producer `runner-1` on object `A`, each with its lease.
    notes: Vec<Lease>,
    updates: Vec<(String, Lease, New)>,
    /// An event on runner `runner-1`'s log, on the tip its lease names (`Absent`: a new log).
    log: Option<Lease>,
    atomic: bool,
}

const X: &str = "refs/bay/x";
const Y: &str = "refs/bay/y";
const PLACE: &str = "refs/bay/queue/0000000001";
const MAIN: &str = "refs/heads/main";

fn chain() -> String {
    refs::change(&change())
}

fn notes_ref() -> String {
    refs::evidence("runner-1")
}

fn log_ref() -> String {
    refs::log("runner-1")
}

fn update(name: &str, lease: Lease, new: New) -> (String, Lease, New) {
    (name.to_owned(), lease, new)
}

fn refs_only(
    initial: &[(&str, &'static str)],
    updates: Vec<(String, Lease, New)>,
    atomic: bool,
) -> Plan {
    Plan {
        initial: initial.iter().map(|(n, s)| (n.to_string(), *s)).collect(),
        append: None,
        notes: vec![],
        updates,
        log: None,
        atomic,
    }
}

pub(super) fn cases() -> Vec<Case> {
    use Lease::{Absent, Any, Is};
    use New::{Delete, Step, Sym};
    let table: Vec<(&'static str, Plan)> = vec![
        (
            "push: two leases that hold",
            refs_only(
                &[(X, "A"), (Y, "B")],
                vec![update(X, Is("A"), Sym("C")), update(Y, Is("B"), Sym("D"))],
                true,
            ),
        ),
        (
            "push: one stale lease fails the whole atomic push",
            refs_only(
                &[(X, "A"), (Y, "B")],
                vec![update(X, Is("A"), Sym("C")), update(Y, Is("A"), Sym("D"))],
                true,
            ),
        ),
        (
            "push: one stale lease, not atomic, moves the other ref",
            refs_only(
                &[(X, "A"), (Y, "B")],
                vec![update(X, Is("A"), Sym("C")), update(Y, Is("A"), Sym("D"))],
                false,
            ),
        ),
        (
            "push: create-only on a free name",
            refs_only(&[], vec![update(X, Absent, Sym("C"))], true),
        ),
        (
            "push: create-only on a taken name",
            refs_only(&[(X, "A")], vec![update(X, Absent, Sym("C"))], true),
        ),
        (
            "push: a lease on a ref that does not exist",
            refs_only(&[], vec![update(X, Is("A"), Sym("C"))], true),
        ),
        (
            "push: forced, with no lease",
            refs_only(&[(X, "A")], vec![update(X, Any, Sym("C"))], true),
        ),
        (
            "push: a deleted ref, with its lease",
            refs_only(
                &[(PLACE, "A"), (X, "B")],
                vec![update(PLACE, Is("A"), Delete), update(X, Is("B"), Sym("C"))],
                true,
            ),
        ),
        (
            "push: a deletion whose lease is stale",
            refs_only(
                &[(PLACE, "A"), (X, "B")],
                vec![update(PLACE, Is("B"), Delete), update(X, Is("B"), Sym("C"))],
                true,
            ),
        ),
        (
            "push: a new chain and its queue place",
            Plan {
                initial: vec![],
                append: Some((None, 2, Some("A"))),
                notes: vec![],
                updates: vec![update(PLACE, Absent, Step(0, 1))],
                log: None,
                atomic: true,
            },
        ),
        (
            "push: a chain whose tip moved",
            Plan {
                initial: vec![(chain(), "A")],
                append: Some((Some("B"), 1, None)),
                notes: vec![],
                updates: vec![update(PLACE, Absent, Step(0, 0))],
                log: None,
                atomic: true,
            },
        ),
        (
            "push: a chain that extends its tip, with main and a marker",
            Plan {
                initial: vec![(chain(), "A"), (MAIN.to_owned(), "B")],
                append: Some((Some("A"), 2, Some("C"))),
                notes: vec![],
                updates: vec![
                    update(MAIN, Is("B"), Sym("C")),
                    update("refs/bay/landed/c7k2m4qa", Absent, Step(0, 1)),
                ],
                log: None,
                atomic: true,
            },
        ),
        (
            "push: a first log event, with a merge beside it",
            Plan {
                initial: vec![(MAIN.to_owned(), "B")],
                append: None,
                notes: vec![],
                updates: vec![update(MAIN, Is("B"), Sym("C"))],
                log: Some(Absent),
                atomic: true,
            },
        ),
        (
            "push: a log event on a stale tip fails the merge beside it",
            Plan {
                initial: vec![(MAIN.to_owned(), "B"), (log_ref(), "A")],
                append: None,
                notes: vec![],
                updates: vec![update(MAIN, Is("B"), Sym("C"))],
                log: Some(Is("B")),
                atomic: true,
            },
        ),
        (
            "push: a first note",
            Plan {
                initial: vec![],
                append: None,
                notes: vec![Absent],
                updates: vec![],
                log: None,
                atomic: true,
            },
        ),
        (
            "push: a note with a stale lease fails the ref beside it",
            Plan {
                initial: vec![(notes_ref(), "A")],
                append: None,
                notes: vec![Is("B")],
                updates: vec![update(X, Absent, Sym("C"))],
                log: None,
                atomic: true,
            },
        ),
    ];
    let mut cases: Vec<Case> = table
        .into_iter()
        .map(|(name, plan)| Case::new(name, move |bench| push_once(bench, &plan)))
        .collect();
    cases.push(Case::new(
        "push: a reply lost after the remote applied it",
        reply_lost,
    ));
    cases.push(Case::new(
        "push: an event on a log whose tip is no commit fails the whole push",
        on_no_commit,
    ));
    cases
}

/// A log pointed at a tree by hand: the event commit on it has a parent that is no commit,
/// which the remote cannot take, so nothing of the push moves, the merge beside it included.
fn on_no_commit(bench: &mut Bench<'_>) {
    for symbol in ["A", "B", "C"] {
        bench.commit(symbol, &[], &[("file", symbol)]);
    }
    let a = bench.oid("A");
    let tree = bench.tree(&a).expect("A's tree");
    bench.named(&tree, "A's tree");
    bench.set(&log_ref(), "A's tree");
    bench.set(MAIN, "B");
    let plan = PushPlan {
        log: Some(LogAdd::on(
            "runner-1",
            Some(tree),
            "bay: c7k2m4qa.1 merged\n\n{}\n".into(),
        )),
        updates: vec![RefUpdate {
            name: MAIN.to_owned(),
            expect: Expect::Is(bench.oid("B")),
            new: NewValue::Oid(bench.oid("C")),
        }],
        atomic: true,
        ..PushPlan::default()
    };
    bench.push("push", "", plan);
    bench.see_refs(&[&log_ref(), MAIN]);
}

/// Makes `A`..`D`, sets the initial refs, pushes, and sees the refs.
fn push_once(bench: &mut Bench<'_>, plan: &Plan) {
    for symbol in ["A", "B", "C", "D"] {
        bench.commit(symbol, &[], &[("file", symbol)]);
    }
    for (name, symbol) in &plan.initial {
        bench.set(name, symbol);
    }
    let built = build(bench, plan);
    let report = bench.push("push", "", built);
    // Each step's parents: the chain's first parents are its steps alone, and a carried
    // commit rides as the second parent of one step.
    for (a, written) in report.steps.iter().enumerate() {
        for (i, step) in written.iter().enumerate() {
            bench.see_commit(&format!("step {a}.{i}"), step);
        }
    }
    if let Some(event) = &report.log {
        bench.see_commit("log", event);
    }
    let names = names(plan);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    bench.see_refs(&names);
}

fn build(bench: &Bench<'_>, plan: &Plan) -> PushPlan {
    let lease = |lease: &Lease| match lease {
        Lease::Absent => Expect::Absent,
        Lease::Is(s) => Expect::Is(bench.oid(s)),
        Lease::Any => Expect::Any,
    };
    PushPlan {
        appends: plan
            .append
            .iter()
            .map(|(parent, count, carry)| {
                let steps = (1..=*count as u64).map(heartbeat).collect();
                Append::on(
                    change(),
                    parent.map(|p| bench.oid(p)),
                    steps,
                    carry.map(|c| bench.oid(c)),
                )
            })
            .collect(),
        notes: plan
            .notes
            .iter()
            .enumerate()
            .map(|(i, l)| NoteAdd {
                producer: "runner-1".into(),
                expect: lease(l),
                object: bench.oid("A"),
                record: format!("{{\"n\":{i}}}"),
                key: None,
            })
            .collect(),
        log: plan.log.as_ref().map(|l| {
            let parent = match l {
                Lease::Is(s) => Some(bench.oid(s)),
                Lease::Absent | Lease::Any => None,
            };
            LogAdd {
                runner: "runner-1".into(),
                parent,
                expect: lease(l),
                message: "bay: c7k2m4qa.1 merged\n\n{}\n".into(),
                more: Vec::new(),
            }
        }),
        presence: None,
        indexes: Vec::new(),
        updates: plan
            .updates
            .iter()
            .map(|(name, l, new)| RefUpdate {
                name: name.clone(),
                expect: lease(l),
                new: match new {
                    New::Sym(s) => NewValue::Oid(bench.oid(s)),
                    New::Step(a, s) => NewValue::Step {
                        append: *a,
                        step: *s,
                    },
                    New::Delete => NewValue::Delete,
                },
            })
            .collect(),
        atomic: plan.atomic,
    }
}

/// Every ref a plan names.
fn names(plan: &Plan) -> Vec<String> {
    let mut names: Vec<String> = plan.initial.iter().map(|(n, _)| n.clone()).collect();
    names.extend(plan.updates.iter().map(|(n, _, _)| n.clone()));
    if plan.append.is_some() {
        names.push(chain());
    }
    if !plan.notes.is_empty() {
        names.push(notes_ref());
    }
    if plan.log.is_some() {
        names.push(log_ref());
    }
    names.sort();
    names.dedup();
    names
}

/// A merge-like push (a chain append, main, a queue place deleted) whose reply is lost: the
/// driver must not claim to know, and a fetch afterwards shows that it applied, commit for
/// commit.
fn reply_lost(bench: &mut Bench<'_>) {
    bench.commit("A", &[], &[("file", "A")]);
    bench.commit("B", &["A"], &[("file", "B")]);
    bench.set(MAIN, "A");
    bench.set(PLACE, "A");
    let plan = PushPlan {
        appends: vec![Append::on(change(), None, vec![heartbeat(1)], None)],
        notes: vec![],
        log: None,
        presence: None,
        indexes: Vec::new(),
        updates: vec![
            RefUpdate {
                name: MAIN.to_owned(),
                expect: Expect::Is(bench.oid("A")),
                new: NewValue::Oid(bench.oid("B")),
            },
            RefUpdate {
                name: PLACE.to_owned(),
                expect: Expect::Is(bench.oid("A")),
                new: NewValue::Delete,
            },
        ],
        atomic: true,
    };
    bench.push_reply_lost("push", plan);
    bench.see_fetch("fetch afterwards", &[MAIN, "refs/bay/*"]);
}
