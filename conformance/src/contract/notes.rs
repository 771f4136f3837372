//! Evidence notes: records appended push after push, each leased on the notes ref's last
//! commit, and read back in order from the remote; a note on a tree as on a commit; and the
//! driver's own read of the notes on some objects, over several producers' notes commits.

use bay_core::git::{Oid, refs};
use bay_core::machine::{Action, Completion, Expect, NoteAdd, PushPlan};

use super::read::nowhere;
use super::{Bench, Case};

const PRODUCER: &str = "runner-1";

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new("notes: records appended one push after another", |b| {
            b.commit("A", &[], &[("file", "A")]);
            b.commit("B", &[], &[("file", "B")]);
            let (a, bb) = (b.oid("A"), b.oid("B"));
            note(b, "1: ", Expect::Absent, &a, r#"{"run":1}"#);
            let first = b.oid("1: note 0");
            note(b, "2: ", Expect::Is(first), &a, r#"{"run":2}"#);
            let second = b.oid("2: note 0");
            note(b, "3: ", Expect::Is(second), &bb, r#"{"run":3}"#);
            see_notes(b, "A", &a);
            see_notes(b, "B", &bb);
            b.see_refs(&[&refs::evidence(PRODUCER)]);
        }),
        Case::new("notes: a note on a tree", |b| {
            b.commit("A", &[], &[("file", "A")]);
            let a = b.oid("A");
            let tree = b.tree(&a).expect("the arm holds the commit it made");
            b.named(&tree, "tree of A");
            note(b, "", Expect::Absent, &tree, r#"{"verdict":"pass"}"#);
            see_notes(b, "tree of A", &tree);
            see_notes(b, "A", &a);
        }),
        Case::new("notes: a stale lease writes nothing", |b| {
            b.commit("A", &[], &[("file", "A")]);
            let a = b.oid("A");
            note(b, "1: ", Expect::Absent, &a, r#"{"run":1}"#);
            note(b, "2: ", Expect::Absent, &a, r#"{"run":2}"#);
            see_notes(b, "A", &a);
        }),
        Case::new("notes: two records of one producer in one push", |b| {
            b.commit("A", &[], &[("file", "A")]);
            b.commit("B", &[], &[("file", "B")]);
            let (a, bb) = (b.oid("A"), b.oid("B"));
            note(b, "1: ", Expect::Absent, &a, r#"{"run":1}"#);
            let first = b.oid("1: note 0");
            let add = |object: &Oid, record: &str| NoteAdd {
                producer: PRODUCER.to_owned(),
                expect: Expect::Is(first.clone()),
                object: object.clone(),
                record: record.to_owned(),
                key: None,
            };
            let plan = PushPlan {
                notes: vec![add(&bb, r#"{"run":2}"#), add(&a, r#"{"run":3}"#)],
                atomic: true,
                ..PushPlan::default()
            };
            b.push("2: push", "2: ", plan);
            see_notes(b, "A", &a);
            see_notes(b, "B", &bb);
            b.see_refs(&[&refs::evidence(PRODUCER)]);
        }),
        Case::new(
            "notes: read on a tree and a commit, from two producers",
            |b| {
                b.commit("A", &[], &[("file", "A")]);
                b.commit("B", &[], &[("file", "B")]);
                let (a, bb) = (b.oid("A"), b.oid("B"));
                let tree = b.tree(&a).expect("the arm holds the commit it made");
                note_by(b, PRODUCER, "1: ", Expect::Absent, &tree, r#"{"run":1}"#);
                let first = b.oid("1: note 0");
                note_by(b, PRODUCER, "2: ", Expect::Is(first), &a, r#"{"run":2}"#);
                note_by(b, "runner-2", "3: ", Expect::Absent, &tree, r#"{"run":3}"#);
                note_by(
                    b,
                    "runner-2",
                    "4: ",
                    Expect::Is(b.oid("3: note 0")),
                    &bb,
                    r#"{"run":4}"#,
                );
                let notes = vec![b.oid("2: note 0"), b.oid("4: note 0")];
                let objects = vec![tree, a, bb.clone()];
                let read = read_notes(b, Action::ReadNotes { notes, objects });
                b.see("tree, A and B", read);
                let notes = vec![b.oid("1: note 0"), nowhere()];
                let read = read_notes(
                    b,
                    Action::ReadNotes {
                        notes,
                        objects: vec![bb],
                    },
                );
                b.see("an older tip and one nobody holds", read);
            },
        ),
    ]
}

fn read_notes(b: &mut Bench<'_>, action: Action) -> String {
    match b.execute(&action) {
        Completion::NotesRead(Ok(lines)) => lines.join(" | "),
        Completion::NotesRead(Err(_)) => "fault".to_owned(),
        other => panic!("a notes read answered {other:?}"),
    }
}

fn note(b: &mut Bench<'_>, prefix: &str, expect: Expect, object: &Oid, record: &str) {
    note_by(b, PRODUCER, prefix, expect, object, record);
}

fn note_by(
    b: &mut Bench<'_>,
    producer: &str,
    prefix: &str,
    expect: Expect,
    object: &Oid,
    record: &str,
) {
    let plan = PushPlan {
        notes: vec![NoteAdd {
            producer: producer.to_owned(),
            expect,
            object: object.clone(),
            record: record.to_owned(),
            key: None,
        }],
        atomic: true,
        ..PushPlan::default()
    };
    b.push(&format!("{prefix}push"), prefix, plan);
}

fn see_notes(b: &mut Bench<'_>, label: &str, object: &Oid) {
    let lines = b.notes(&refs::evidence(PRODUCER), object);
    b.see(format!("notes on {label}"), lines.join(" | "));
}
