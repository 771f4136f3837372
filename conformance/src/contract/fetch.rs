//! Fetches: the refs a pattern names and nothing else, a ref the remote deleted gone from the
//! next answer, a ref forced backwards seen at its new value.

use super::{Bench, Case};

const MAIN: &str = "refs/heads/main";

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new("fetch: main, refs/bay and the notes, nothing else", |b| {
            made(b);
            for (name, symbol) in [
                (MAIN, "A"),
                ("refs/heads/other", "B"),
                ("refs/tags/v1", "B"),
                ("refs/bay/changes/c7k2m4qa", "B"),
                ("refs/bay/queue/0000000001", "C"),
                ("refs/bay/queue/last", "C"),
                ("refs/notes/bay/evidence/runner-1", "D"),
                ("refs/notes/commits", "D"),
            ] {
                b.set(name, symbol);
            }
            b.see_fetch("fetch", &[MAIN, "refs/bay/*", "refs/notes/bay/evidence/*"]);
            b.see_fetch("fetch of the queue alone", &["refs/bay/queue/*"]);
        }),
        Case::new(
            "fetch: a ref the remote deleted is gone from the next answer",
            |b| {
                made(b);
                b.set(MAIN, "A");
                b.set("refs/bay/queue/0000000001", "B");
                b.set("refs/bay/queue/0000000002", "C");
                b.see_fetch("first fetch", &[MAIN, "refs/bay/queue/*"]);
                b.delete("refs/bay/queue/0000000001");
                b.see_fetch("second fetch", &[MAIN, "refs/bay/queue/*"]);
            },
        ),
        Case::new(
            "fetch: an exact name the remote lacks fails the fetch",
            |b| {
                made(b);
                b.set(MAIN, "A");
                b.see_fetch("fetch", &[MAIN, "refs/bay/queue/last"]);
            },
        ),
        Case::new(
            "fetch: a name ending in * the remote lacks is absent",
            |b| {
                made(b);
                b.set(MAIN, "A");
                b.see_fetch("fetch", &[MAIN, "refs/bay/queue/last*"]);
            },
        ),
        Case::new("fetch: a ref forced backwards", |b| {
            made(b);
            b.set(MAIN, "B");
            b.see_fetch("first fetch", &[MAIN]);
            b.set(MAIN, "A");
            b.see_fetch("second fetch", &[MAIN]);
        }),
    ]
}

/// `A` and its child `B`, and two more roots `C` and `D`.
fn made(b: &mut Bench<'_>) {
    b.commit("A", &[], &[("file", "A")]);
    b.commit("B", &["A"], &[("file", "B")]);
    b.commit("C", &[], &[("file", "C")]);
    b.commit("D", &[], &[("file", "D")]);
}
