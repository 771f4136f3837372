//! Reads: step commits by id, a chain walked back along first parents (stopping at a step
//! already known), one file of a commit, and what each path of a change weighs against its
//! base.

use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::{Action, Append, ChainQuery, Completion, Expect, PushPlan, RawStep};
use bay_core::record::Step;

use super::{Bench, Case, change, heartbeat};

/// An id no arm holds.
const NOWHERE: &str = "0123456789abcdef0123456789abcdef01234567";

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new("read: steps by id", |b| {
            chain(b);
            let oids = vec![b.oid("then step 0.1"), b.oid("step 0.0")];
            let shown = steps(b, Action::ReadSteps { oids });
            b.see("read", shown);
        }),
        Case::new("read: a step id no store holds", |b| {
            chain(b);
            let oids = vec![b.oid("then step 0.0"), nowhere()];
            let shown = steps(b, Action::ReadSteps { oids });
            b.see("read", shown);
        }),
        Case::new("read: a chain from its tip, walking first parents", |b| {
            chain(b);
            let read = chains(b, None);
            b.see("whole chain", read);
            let known = Some(b.oid("step 0.0"));
            let read = chains(b, known);
            b.see("from a known step", read);
            let known = Some(b.oid("A"));
            let read = chains(b, known);
            b.see("known not in the chain", read);
        }),
        Case::new(
            "read: chains whose tips are a tree or missing, beside one that reads",
            |b| {
                chain(b);
                let a = b.oid("A");
                let tree = b.tree(&a).expect("A's tree");
                b.named(&tree, "A's tree");
                let other = |n: &str| ChangeId::parse(n).expect("a change id");
                let queries = vec![
                    ChainQuery {
                        change: change(),
                        tip: b.oid("then step 0.1"),
                        known: None,
                    },
                    ChainQuery {
                        change: other("d7k2m4qa"),
                        tip: tree,
                        known: None,
                    },
                    ChainQuery {
                        change: other("e7k2m4qa"),
                        tip: nowhere(),
                        known: None,
                    },
                ];
                let shown = read_chains(b, queries);
                b.see("chains", shown);
            },
        ),
        Case::new(
            "read: a file, a missing file, a directory, a missing commit",
            |b| {
                b.commit("A", &[], &[("file", "A\n"), ("dir/inner", "in\n")]);
                let a = b.oid("A");
                for (label, commit, path) in [
                    ("file", a.clone(), "file"),
                    ("missing file", a.clone(), "nope"),
                    ("directory", a.clone(), "dir"),
                    ("file in a directory", a, "dir/inner"),
                    ("missing commit", nowhere(), "file"),
                ] {
                    let shown = match b.execute(&Action::ReadFile {
                        commit,
                        path: path.to_owned(),
                    }) {
                        Completion::FileRead(Ok(Some(bytes))) => {
                            format!("{:?}", String::from_utf8_lossy(&bytes))
                        }
                        Completion::FileRead(Ok(None)) => "absent".to_owned(),
                        Completion::FileRead(Err(_)) => "fault".to_owned(),
                        other => panic!("a file read answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "read: a first-parent log of main, of a range, cut at a limit",
            |b| {
                b.commit("A", &[], &[("file", "A")]);
                b.commit("X", &[], &[("side", "X")]);
                b.commit("B", &["A"], &[("file", "B")]);
                b.commit("C", &["B", "X"], &[("file", "C"), ("side", "X")]);
                b.set("refs/heads/main", "C");
                b.see_fetch("fetch", &["refs/heads/main"]);
                let range = |from: &str, to: &str| Some(format!("{}..{}", b.oid(from), b.oid(to)));
                let ranges = [
                    ("main", None, 10),
                    ("main, at most 2", None, 2),
                    ("A..C", range("A", "C"), 10),
                    ("X..C", range("X", "C"), 10),
                    ("one commit", Some(b.oid("B").to_string()), 10),
                    (
                        "from a merge, its first parents",
                        Some(b.oid("C").to_string()),
                        10,
                    ),
                    ("from a merge, at most 2", Some(b.oid("C").to_string()), 2),
                    ("a missing commit", Some(NOWHERE.to_owned()), 10),
                ];
                for (label, range, limit) in ranges {
                    let shown = match b.execute(&Action::ReadLog {
                        range,
                        limit,
                        since: None,
                    }) {
                        Completion::LogRead(Ok(log)) => log
                            .iter()
                            .map(|commit| b.show(&commit.oid))
                            .collect::<Vec<_>>()
                            .join(" "),
                        Completion::LogRead(Err(_)) => "fault".to_owned(),
                        other => panic!("a log read answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "read: a test merge, clean, conflicting, and of a missing commit",
            |b| {
                b.commit("A", &[], &[("file", "a\n"), ("other", "o\n")]);
                b.commit("B", &["A"], &[("file", "b\n"), ("other", "o\n")]);
                b.commit("C", &["A"], &[("file", "c\n"), ("other", "o\n")]);
                b.commit("D", &["A"], &[("file", "a\n"), ("other", "d\n")]);
                let (a, bb) = (b.oid("A"), b.oid("B"));
                for (label, draft) in [
                    ("same lines", b.oid("C")),
                    ("other lines", b.oid("D")),
                    ("a missing commit", nowhere()),
                ] {
                    let test = Action::TestMerge {
                        onto: bb.clone(),
                        draft,
                        base: a.clone(),
                    };
                    let shown = match b.execute(&test) {
                        Completion::MergeTested(Ok(paths)) => paths.join(" "),
                        Completion::MergeTested(Err(_)) => "fault".to_owned(),
                        other => panic!("a test merge answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "write: steps written without a push, then pushed under a later append's lease",
            |b| {
                chain(b);
                let tip = b.oid("then step 0.1");
                let carry = b.oid("A");
                let append =
                    Append::on(change(), Some(tip.clone()), vec![heartbeat(4)], Some(carry));
                let written = match b.execute(&Action::WriteSteps(append)) {
                    Completion::StepsWritten(Ok(written)) => written,
                    other => panic!("a step write answered {other:?}"),
                };
                b.see("written", written.len().to_string());
                b.named(&written[0], "written 0");
                b.see_fetch("remote before the push", &["refs/bay/changes/*"]);
                // The written step is no tip yet: a later append builds on it, leased on the
                // tip the remote holds, and one push carries both.
                let mut later =
                    Append::on(change(), Some(written[0].clone()), vec![heartbeat(5)], None);
                later.expect = Expect::Is(tip);
                let plan = PushPlan {
                    appends: vec![later],
                    atomic: true,
                    ..PushPlan::default()
                };
                b.push("carrying push", "carried ", plan);
                b.see_refs(&[&bay_core::git::refs::change(&change())]);
                let read = chains_from(b, b.oid("carried step 0.0"), None);
                b.see("chain", read);
            },
        ),
        Case::new(
            "read: the trees of commits, in order, and a missing commit",
            |b| {
                b.commit("A", &[], &[("file", "a\n")]);
                b.commit("B", &["A"], &[("file", "b\n")]);
                b.commit("C", &["B"], &[("file", "a\n")]);
                let (a, bb, c) = (b.oid("A"), b.oid("B"), b.oid("C"));
                for (label, commits) in [
                    ("three commits", vec![a.clone(), bb.clone(), c.clone()]),
                    ("one missing", vec![a, nowhere()]),
                ] {
                    let shown = match b.execute(&Action::ReadTrees { commits }) {
                        // Tree ids are each arm's own; which commits share one is not.
                        Completion::TreesRead(Ok(trees)) => trees
                            .iter()
                            .map(|tree| {
                                let first = trees.iter().position(|t| t == tree).unwrap_or(0);
                                format!("tree#{first}")
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                        Completion::TreesRead(Err(_)) => "fault".to_owned(),
                        other => panic!("a tree read answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "read: the files of trees under prefixes, and a missing commit",
            |b| {
                let files = [
                    ("api/a.rs", "one\n"),
                    ("api/v2/b.rs", "two\n"),
                    ("apix", "three\n"),
                    ("docs/api.md", "two\n"),
                    ("web/c.js", "one\n"),
                ];
                b.commit("A", &[], &files);
                b.commit("B", &["A"], &[("api/a.rs", "four\n")]);
                let (a, bb) = (b.oid("A"), b.oid("B"));
                for (label, commits, under) in [
                    (
                        "a read set",
                        vec![a.clone(), bb],
                        vec!["api/", "docs/api.md"],
                    ),
                    ("the whole tree", vec![a.clone()], vec![""]),
                    ("nothing there", vec![a.clone()], vec!["lib/"]),
                    ("one missing", vec![a, nowhere()], vec!["api/"]),
                ] {
                    let under = under.into_iter().map(str::to_owned).collect();
                    let shown = match b.execute(&Action::ReadFiles { commits, under }) {
                        // Blob ids are each arm's own; which files share one is not.
                        Completion::FilesRead(Ok(lists)) => {
                            let mut blobs = Vec::new();
                            lists
                                .iter()
                                .map(|files| {
                                    let shown: Vec<String> = files
                                        .iter()
                                        .map(|file| {
                                            if !blobs.contains(&file.oid) {
                                                blobs.push(file.oid.clone());
                                            }
                                            let blob = blobs.iter().position(|o| o == &file.oid);
                                            let blob = blob.unwrap_or(0);
                                            format!("{} {} blob#{blob}", file.path, file.mode)
                                        })
                                        .collect();
                                    format!("[{}]", shown.join(", "))
                                })
                                .collect::<Vec<_>>()
                                .join(" ")
                        }
                        Completion::FilesRead(Err(_)) => "fault".to_owned(),
                        other => panic!("a files read answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "read: commits raw, and the key registry's chain with its files",
            |b| {
                b.commit("R1", &[], &[("agent", "key one\n"), ("removed", "")]);
                b.commit(
                    "R2",
                    &["R1"],
                    &[("agent", "key one\nkey two\n"), ("keys/x", "x\n")],
                );
                // A commit raw: what core judges a signature on; its ids differ by world.
                let commits = vec![b.oid("R2"), b.oid("R1")];
                let shown = match b.execute(&Action::ReadCommits { commits }) {
                    Completion::CommitsRead(Ok(raws)) => raws
                        .iter()
                        .map(|raw| shown_raw(b, raw))
                        .collect::<Vec<_>>()
                        .join("; "),
                    Completion::CommitsRead(Err(_)) => "fault".to_owned(),
                    other => panic!("a commits read answered {other:?}"),
                };
                b.see("commits", shown);
                let commits = vec![b.oid("R1"), nowhere()];
                let shown = match b.execute(&Action::ReadCommits { commits }) {
                    Completion::CommitsRead(Ok(_)) => "read",
                    Completion::CommitsRead(Err(_)) => "fault",
                    other => panic!("a commits read answered {other:?}"),
                };
                b.see("a commit no store holds", shown);
                for (label, tip) in [("registry", b.oid("R2")), ("no registry", nowhere())] {
                    let shown = match b.execute(&Action::ReadRegistry { tip }) {
                        Completion::RegistryRead(Ok(chain)) => chain
                            .iter()
                            .map(|commit| {
                                let files: Vec<String> = commit
                                    .files
                                    .iter()
                                    .map(|f| format!("{}={:?}", f.name, f.text))
                                    .collect();
                                format!(
                                    "{} ({}) {}",
                                    b.show(&commit.oid),
                                    shown_raw(b, &commit.raw),
                                    files.join(" ")
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; "),
                        Completion::RegistryRead(Err(_)) => "fault".to_owned(),
                        other => panic!("a registry read answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "read: the merge base of a branch and main, of unrelated and of missing commits",
            |b| {
                b.commit("A", &[], &[("file", "a\n")]);
                b.commit("B", &["A"], &[("file", "b\n")]);
                b.commit("C", &["B"], &[("file", "c\n")]);
                b.commit("F", &["B"], &[("side", "f\n")]);
                b.commit("G", &["F", "C"], &[("side", "g\n")]);
                b.commit("X", &[], &[("other", "x\n")]);
                // A criss-cross: P and Q each merge M and N, so both are best common
                // ancestors, and `git merge-base` names one of them.
                b.commit("M", &["B"], &[("m", "m\n")]);
                b.commit("N", &["B"], &[("n", "n\n")]);
                b.commit("P", &["M", "N"], &[("p", "p\n")]);
                b.commit("Q", &["N", "M"], &[("q", "q\n")]);
                let pairs = [
                    ("a branch off main", b.oid("F"), b.oid("C")),
                    ("an ancestor", b.oid("A"), b.oid("C")),
                    ("the same commit", b.oid("C"), b.oid("C")),
                    ("a branch that merged main", b.oid("G"), b.oid("C")),
                    ("no shared history", b.oid("X"), b.oid("C")),
                    ("a criss-cross", b.oid("P"), b.oid("Q")),
                    ("a criss-cross, the other way", b.oid("Q"), b.oid("P")),
                    ("a missing commit", nowhere(), b.oid("C")),
                ];
                for (label, one, two) in pairs {
                    let shown = match b.execute(&Action::MergeBase { one, two }) {
                        Completion::MergeBaseFound(Ok(Some(base))) => b.show(&base),
                        Completion::MergeBaseFound(Ok(None)) => "none".to_owned(),
                        Completion::MergeBaseFound(Err(_)) => "fault".to_owned(),
                        other => panic!("a merge base answered {other:?}"),
                    };
                    b.see(label, shown);
                }
            },
        ),
        Case::new(
            "read: the chains a clone holds from its fetches, under a prefix",
            |b| {
                chain(b);
                // An accepted push leaves its refs held, as a fetch would.
                let pushed = held(b, "refs/bay/changes/", 10);
                b.see("held after its own pushes", pushed);
                b.set("refs/heads/main", "A");
                b.see_fetch("fetch", &["refs/heads/main", "refs/bay/changes/*"]);
                for (label, prefix, limit) in [
                    ("changes", "refs/bay/changes/", 10),
                    ("none held", "refs/bay/log/", 10),
                    ("at most none", "refs/bay/changes/", 0),
                ] {
                    let shown = held(b, prefix, limit);
                    b.see(label, shown);
                }
            },
        ),
        Case::new("read: the stats of a change against its base", |b| {
            b.commit(
                "A",
                &[],
                &[
                    ("edited", "one\ntwo\nthree\n"),
                    ("moved lines", "a\nb\nc\nd\n"),
                    ("kept", "kept\n"),
                    ("deleted", "gone\n"),
                    ("deleted binary", "x\0y"),
                    ("binary", "x\0y"),
                    ("loses its newline", "end\n"),
                ],
            );
            b.commit(
                "B",
                &["A"],
                &[
                    ("edited", "one\n2\nthree\nfour\n"),
                    ("moved lines", "d\na\nb\nc\nx\n"),
                    ("kept", "kept\n"),
                    ("binary", "x\0zz"),
                    ("now binary", "a\0"),
                    ("loses its newline", "end"),
                    ("dir/added", "new\nlines\n"),
                ],
            );
            let (a, bb) = (b.oid("A"), b.oid("B"));
            let shown = stats(b, a.clone(), bb.clone());
            b.see("A to B", shown);
            let shown = stats(b, bb, a.clone());
            b.see("B to A", shown);
            let shown = stats(b, a.clone(), a.clone());
            b.see("A to A", shown);
            let shown = stats(b, a, nowhere());
            b.see("to a missing commit", shown);
        }),
    ]
}

/// The refs the arm's clone holds under `prefix`, as `<name>=<symbol>`.
fn held(b: &mut Bench<'_>, prefix: &str, limit: u32) -> String {
    let read = Action::ReadHeld {
        prefix: prefix.to_owned(),
        limit,
    };
    match b.execute(&read) {
        Completion::HeldRead(Ok(refs)) => refs
            .iter()
            .map(|(name, oid)| format!("{name}={}", b.show(oid)))
            .collect::<Vec<_>>()
            .join(" "),
        Completion::HeldRead(Err(_)) => "fault".to_owned(),
        other => panic!("a held read answered {other:?}"),
    }
}

/// Each path as `<path>:<bytes>/+<added lines>-<removed lines>`, `-` for what is not there,
/// and ` new` after a path the base lacks.
fn stats(b: &mut Bench<'_>, base: Oid, commit: Oid) -> String {
    let show = |n: Option<u64>| n.map_or("-".to_owned(), |n| n.to_string());
    match b.execute(&Action::ReadStats { base, commit }) {
        Completion::StatsRead(Ok(stats)) => stats
            .iter()
            .map(|s| {
                format!(
                    "{}:{}/+{}-{}{}",
                    s.path,
                    show(s.bytes),
                    show(s.added_lines),
                    show(s.removed_lines),
                    if s.created { " new" } else { "" }
                )
            })
            .collect::<Vec<_>>()
            .join(" "),
        Completion::StatsRead(Err(_)) => "fault".to_owned(),
        other => panic!("a stats read answered {other:?}"),
    }
}

pub(super) fn nowhere() -> Oid {
    Oid::parse(NOWHERE).expect("NOWHERE is an object id")
}

/// A chain of three steps on the remote, as bay writes one: a first step of its own, then two
/// appended on it, the first of them carrying `A` (a draft, say) as its second parent.
fn chain(b: &mut Bench<'_>) {
    b.commit("A", &[], &[("file", "A")]);
    let first = PushPlan {
        appends: vec![Append::on(change(), None, vec![heartbeat(1)], None)],
        atomic: true,
        ..PushPlan::default()
    };
    b.push("first push", "", first);
    let (tip, carry) = (b.oid("step 0.0"), b.oid("A"));
    let more = PushPlan {
        appends: vec![Append::on(
            change(),
            Some(tip),
            vec![heartbeat(2), heartbeat(3)],
            Some(carry),
        )],
        atomic: true,
        ..PushPlan::default()
    };
    b.push("second push", "then ", more);
}

/// Each step read, as `<symbol>:<nonce>` when its message reads back as the step written.
fn show_steps(b: &Bench<'_>, steps: &[RawStep]) -> String {
    steps
        .iter()
        .map(|raw| {
            let nonce = Step::from_message(&raw.message)
                .map_or_else(|e| format!("unreadable ({e})"), |s| s.nonce.to_string());
            format!("{}:{nonce}", b.show(&raw.oid))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn steps(b: &mut Bench<'_>, action: Action) -> String {
    match b.execute(&action) {
        Completion::StepsRead(Ok(steps)) => show_steps(b, &steps),
        Completion::StepsRead(Err(_)) => "fault".to_owned(),
        other => panic!("a step read answered {other:?}"),
    }
}

fn chains(b: &mut Bench<'_>, known: Option<Oid>) -> String {
    let tip = b.oid("then step 0.1");
    chains_from(b, tip, known)
}

/// The change's chain read from `tip`, stopping before `known`.
fn chains_from(b: &mut Bench<'_>, tip: Oid, known: Option<Oid>) -> String {
    let query = ChainQuery {
        change: change(),
        tip,
        known,
    };
    read_chains(b, vec![query])
}

/// Each chain of one read, in symbols; one the driver could not read says so (its reason is
/// each arm's own words).
fn read_chains(b: &mut Bench<'_>, chains: Vec<ChainQuery>) -> String {
    match b.execute(&Action::ReadChains { chains }) {
        Completion::ChainsRead(Ok(reads)) => reads
            .iter()
            .map(|read| {
                let unreadable = if read.unreadable.is_some() {
                    " unreadable"
                } else {
                    ""
                };
                format!(
                    "{} tip {} [{}] reached known {}{unreadable}",
                    read.change,
                    b.show(&read.tip),
                    show_steps(b, &read.steps),
                    read.reached_known
                )
            })
            .collect::<Vec<_>>()
            .join("; "),
        Completion::ChainsRead(Err(_)) => "fault".to_owned(),
        other => panic!("a chain read answered {other:?}"),
    }
}

/// A raw commit as the contract compares it: its parents by symbol and its message; the
/// tree's id and the author and committer lines differ between worlds.
fn shown_raw(b: &Bench<'_>, raw: &str) -> String {
    let (headers, message) = raw.split_once("\n\n").unwrap_or((raw, ""));
    let parents: Vec<String> = headers
        .lines()
        .filter_map(|line| line.strip_prefix("parent "))
        .map(|parent| Oid::parse(parent).map_or("unreadable".to_owned(), |p| b.show(&p)))
        .collect();
    format!(
        "parents [{}] message {:?}",
        parents.join(" "),
        message.trim_end()
    )
}
