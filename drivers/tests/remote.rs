//! The remote driver against real Git: a bare server and a clone in a temporary directory.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use bay_core::git::{Oid, refs};
use bay_core::id::ChangeId;
use bay_core::limits::PathStat;
use bay_core::machine::{
    Action, Append, BuildResult, CandidateSpec, ChainQuery, Completion, Expect, FetchSpec,
    HistoryQuery, MainCommit, NewValue, NoteAdd, PushOutcome, PushPlan, RefUpdate,
};
use bay_core::record::Step;
use bay_core::time::Timestamp;
use bay_drivers::remote::{Bounds, Repo};
use support::remote::*;

fn update(name: &str, expect: Expect, new: &Oid) -> RefUpdate {
    RefUpdate {
        name: name.into(),
        expect,
        new: NewValue::Oid(new.clone()),
    }
}

/// Main and every ref of bay's.
fn everything(main: &str) -> FetchSpec {
    FetchSpec::new([
        format!("refs/heads/{main}"),
        "refs/bay/*".to_string(),
        "refs/notes/bay/*".to_string(),
    ])
}

fn plan(updates: Vec<RefUpdate>, atomic: bool) -> PushPlan {
    PushPlan {
        updates,
        atomic,
        ..PushPlan::default()
    }
}

#[test]
fn fetch_reports_remote_names_and_drops_pruned_refs() {
    let fx = Fixture::new();
    let a = fx.seed("refs/bay/queue/0000000001", &[("a", "1")], "a");
    let b = fx.seed("refs/bay/changes/c7k2m4qa", &[("b", "1")], "b");
    let n = fx.seed("refs/notes/bay/evidence/runner-1", &[], "notes");
    // Not bay's: a plain branch, and a branch whose name starts with bay/.
    fx.seed("refs/heads/topic", &[("t", "1")], "t");
    fx.seed("refs/heads/bay/x", &[("x", "1")], "x");
    // A local-only ref that no fetch may touch.
    set_ref(&fx.clone, "refs/bay/inflight/c7k2m4qa.1", &a);

    let Some(Completion::Fetched(Ok(seen))) = fx.repo.execute(&Action::Fetch(everything("main")))
    else {
        panic!("the fetch failed");
    };
    let expected = [
        ("refs/bay/changes/c7k2m4qa", &b),
        ("refs/bay/queue/0000000001", &a),
        ("refs/heads/main", &fx.main0),
        ("refs/notes/bay/evidence/runner-1", &n),
    ];
    let expected: Vec<(String, Oid)> = expected
        .iter()
        .map(|(k, v)| (k.to_string(), (*v).clone()))
        .collect();
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), expected);

    git(
        &fx.server,
        &["update-ref", "-d", "refs/bay/queue/0000000001"],
    );
    let seen = fx
        .repo
        .fetch(&everything("main"))
        .expect("the second fetch works");
    assert!(!seen.contains_key("refs/bay/queue/0000000001"));
    assert_eq!(seen.len(), 3);
    assert_eq!(
        ref_value(&fx.clone, "refs/bay/inflight/c7k2m4qa.1"),
        Some(a),
        "a fetch leaves local refs/bay/* alone"
    );
    assert_eq!(ref_value(&fx.clone, "refs/bay/queue/0000000001"), None);
}

#[test]
fn a_maintained_fetch_lets_git_repack_the_clone_and_another_leaves_it() {
    let fx = Fixture::new();
    // Two packs are one too many, and maintenance runs in the foreground, so that the
    // fetch's own run is what the test sees.
    for (key, value) in [
        ("gc.autoPackLimit", "1"),
        ("gc.autoDetach", "false"),
        ("maintenance.autoDetach", "false"),
        // fast-import keeps even two objects as a pack.
        ("fastimport.unpackLimit", "1"),
    ] {
        git(&fx.clone, &["config", key, value]);
    }
    for n in 1..=2 {
        let stream = format!(
            "blob\nmark :1\ndata 2\n{n}\n\ncommit refs/heads/pack{n}\nmark :2\n\
             committer t <t> 1700000000 +0000\ndata 1\n\nM 100644 :1 f\n\n"
        );
        git_in(&fx.clone, &["fast-import", "--quiet"], Some(&stream));
    }
    let packs = || {
        std::fs::read_dir(fx.clone.join("objects/pack"))
            .expect("a pack folder")
            .filter(|entry| {
                entry
                    .as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "pack"))
            })
            .count()
    };
    assert_eq!(packs(), 2);
    let main = FetchSpec::new([refs::main("main")]);
    fx.repo.fetch(&main).expect("a fetch");
    assert_eq!(packs(), 2, "a fetch without maintenance leaves the packs");
    fx.repo
        .fetch(&main.maintained())
        .expect("a maintained fetch");
    assert_eq!(packs(), 1, "Git's auto maintenance followed the fetch");
}

#[test]
fn fetch_without_main_on_the_remote_is_a_fault() {
    let fx = Fixture::new();
    let repo = Repo::new(&fx.clone, "origin", "trunk").expect("valid names");
    let fault = repo
        .fetch(&everything("trunk"))
        .expect_err("no trunk on the remote");
    assert!(fault.0.contains("trunk"), "{fault}");
}

#[test]
fn a_narrow_fetch_reports_only_what_it_names_and_a_missing_named_ref_is_no_fault() {
    let fx = Fixture::new();
    let a = fx.seed("refs/bay/changes/aaaaaaaa", &[("a", "1")], "a");
    fx.seed("refs/bay/changes/bbbbbbbb", &[("b", "1")], "b");
    fx.seed("refs/bay/queue/0000000001", &[("q", "1")], "q");
    let spec = FetchSpec::new([
        "refs/bay/changes/aaaaaaaa*".to_string(),
        "refs/bay/changes/cccccccc*".to_string(),
    ]);
    let seen = fx
        .repo
        .fetch(&spec)
        .expect("a missing named ref is simply absent");
    let expected: Vec<(String, Oid)> = vec![("refs/bay/changes/aaaaaaaa".to_string(), a)];
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), expected);
}

#[test]
fn an_atomic_push_with_one_stale_lease_moves_nothing() {
    let fx = Fixture::new();
    let a = fx.seed("refs/bay/x", &[("a", "1")], "a");
    let b = fx.seed("refs/bay/y", &[("b", "1")], "b");
    let c = commit(&fx.clone, &[&fx.main0], &[("c", "1")], "c");
    let report = fx.repo.push(&plan(
        vec![
            update("refs/bay/x", Expect::Is(a.clone()), &c),
            update("refs/bay/y", Expect::Is(a.clone()), &c),
        ],
        true,
    ));
    assert_eq!(
        report.outcome,
        PushOutcome::Rejected {
            refs: vec!["refs/bay/y".into()]
        }
    );
    assert_eq!(fx.on_server("refs/bay/x"), Some(a.clone()));
    assert_eq!(fx.on_server("refs/bay/y"), Some(b.clone()));

    let report = fx.repo.push(&plan(
        vec![
            update("refs/bay/x", Expect::Is(a), &c),
            update("refs/bay/y", Expect::Is(b), &c),
        ],
        true,
    ));
    assert_eq!(report.outcome, PushOutcome::Accepted);
    assert_eq!(fx.on_server("refs/bay/x"), Some(c.clone()));
    assert_eq!(fx.on_server("refs/bay/y"), Some(c));
}

#[test]
fn create_only_succeeds_once() {
    let fx = Fixture::new();
    let c = commit(&fx.clone, &[&fx.main0], &[("c", "1")], "c");
    let d = commit(&fx.clone, &[&fx.main0], &[("d", "1")], "d");
    let name = refs::intent("abcd", 1);
    let first = fx
        .repo
        .push(&plan(vec![update(&name, Expect::Absent, &c)], true));
    assert_eq!(first.outcome, PushOutcome::Accepted);
    let second = fx
        .repo
        .push(&plan(vec![update(&name, Expect::Absent, &d)], true));
    assert_eq!(
        second.outcome,
        PushOutcome::Rejected {
            refs: vec![name.clone()]
        }
    );
    assert_eq!(fx.on_server(&name), Some(c));
}

#[test]
fn a_push_that_is_not_atomic_applies_the_good_ref_only() {
    let fx = Fixture::new();
    let a = fx.seed("refs/bay/x", &[("a", "1")], "a");
    let b = fx.seed("refs/bay/y", &[("b", "1")], "b");
    let c = commit(&fx.clone, &[&fx.main0], &[("c", "1")], "c");
    let report = fx.repo.push(&plan(
        vec![
            update("refs/bay/x", Expect::Is(a), &c),
            update("refs/bay/y", Expect::Is(c.clone()), &c),
        ],
        false,
    ));
    assert_eq!(
        report.outcome,
        PushOutcome::Rejected {
            refs: vec!["refs/bay/y".into()]
        }
    );
    assert_eq!(fx.on_server("refs/bay/x"), Some(c));
    assert_eq!(fx.on_server("refs/bay/y"), Some(b));
}

#[test]
fn appended_steps_read_back_as_chains_and_known_stops_the_walk() {
    let fx = Fixture::new();
    let k = change("c7k2m4qa");
    let first: Vec<Step> = (1..=3).map(|n| heartbeat(&k, n)).collect();
    let push = PushPlan {
        appends: vec![Append::on(
            k.clone(),
            None,
            first.clone(),
            Some(fx.main0.clone()),
        )],
        updates: vec![RefUpdate {
            name: refs::queue(1),
            expect: Expect::Absent,
            new: NewValue::Step { append: 0, step: 0 },
        }],
        atomic: true,
        ..PushPlan::default()
    };
    let report = fx.repo.push(&push);
    assert_eq!(report.outcome, PushOutcome::Accepted);
    let written = report.steps[0].clone();
    assert_eq!(written.len(), 3);
    assert_eq!(fx.on_server(&refs::change(&k)), written.last().cloned());
    assert_eq!(fx.on_server(&refs::queue(1)), Some(written[0].clone()));
    // The chain is new: its first step has no parent, and main0 rides on the second as its
    // second parent, so that the chain's first parents are its steps alone.
    let parents = |step: &Oid| git(&fx.clone, &["rev-list", "--parents", "-n1", step.as_str()]);
    assert_eq!(parents(&written[0]), written[0].to_string());
    assert_eq!(
        parents(&written[1]),
        format!("{} {} {}", written[1], written[0], fx.main0)
    );
    let tree = git(
        &fx.clone,
        &["rev-parse", &format!("{}^{{tree}}", written[2])],
    );
    assert_eq!(tree, "4b825dc642cb6eb9a060e54bf8d69288fbee4904");

    let tip = written[2].clone();
    let reads = fx
        .repo
        .read_chains(&[ChainQuery {
            change: k.clone(),
            tip: tip.clone(),
            known: None,
        }])
        .expect("the chain reads");
    // Without `known` the walk runs to the chain's root, and never into the carried commit.
    let oids: Vec<&Oid> = reads[0].steps.iter().map(|s| &s.oid).collect();
    assert_eq!(oids, vec![&written[2], &written[1], &written[0]]);
    assert!(!reads[0].reached_known);
    let steps: Vec<Step> = reads[0].steps[..3]
        .iter()
        .map(|raw| Step::from_message(&raw.message).expect("a step message"))
        .collect();
    assert_eq!(steps, first.iter().rev().cloned().collect::<Vec<_>>());

    let more: Vec<Step> = (4..=5).map(|n| heartbeat(&k, n)).collect();
    let report = fx.repo.push(&PushPlan {
        appends: vec![Append::on(k.clone(), Some(tip.clone()), more.clone(), None)],
        atomic: true,
        ..PushPlan::default()
    });
    assert_eq!(report.outcome, PushOutcome::Accepted);
    let new_tip = report.steps[0][1].clone();
    let reads = fx
        .repo
        .read_chains(&[
            ChainQuery {
                change: k.clone(),
                tip: new_tip.clone(),
                known: Some(tip.clone()),
            },
            // The same chain from an older reader: the first query's exclusion cuts this walk
            // short, and the driver must walk it again.
            ChainQuery {
                change: k.clone(),
                tip: new_tip.clone(),
                known: Some(written[0].clone()),
            },
            // A `known` the walk never meets.
            ChainQuery {
                change: k.clone(),
                tip: tip.clone(),
                known: Some(new_tip.clone()),
            },
        ])
        .expect("the chains read");
    let newer: Vec<Step> = reads[0]
        .steps
        .iter()
        .map(|raw| Step::from_message(&raw.message).expect("a step message"))
        .collect();
    assert_eq!(newer, more.iter().rev().cloned().collect::<Vec<_>>());
    assert!(reads[0].reached_known);
    assert_eq!(reads[1].steps.len(), 4);
    assert!(reads[1].reached_known);
    assert_eq!(reads[2].steps.len(), 3, "the whole chain, to its root");
    assert!(!reads[2].reached_known);

    // ReadSteps: the exact message; an id the clone does not have is left out.
    let absent = Oid::parse(&"1".repeat(40)).expect("an id");
    let raws = fx
        .repo
        .read_steps(&[new_tip.clone(), absent])
        .expect("steps read");
    assert_eq!(raws.len(), 1);
    assert_eq!(raws[0].message, more[1].to_message());
}

#[test]
fn notes_appended_twice_on_one_object_hold_both_records() {
    let fx = Fixture::new();
    let object = git(&fx.clone, &["rev-parse", &format!("{}^{{tree}}", fx.main0)]);
    let object = oid(&object);
    let name = refs::evidence("runner-1");
    let note = |expect: Expect, record: &str| PushPlan {
        notes: vec![NoteAdd {
            producer: "runner-1".into(),
            expect,
            object: object.clone(),
            record: record.into(),
            key: None,
        }],
        atomic: true,
        ..PushPlan::default()
    };
    let first = fx.repo.push(&note(Expect::Absent, r#"{"n":1}"#));
    assert_eq!(first.outcome, PushOutcome::Accepted);
    let tip = first.notes[0].clone();
    let second = fx.repo.push(&note(Expect::Is(tip), r#"{"n":2}"#));
    assert_eq!(second.outcome, PushOutcome::Accepted);
    let shown = git(
        &fx.server,
        &["notes", &format!("--ref={name}"), "show", object.as_str()],
    );
    assert_eq!(shown, "{\"n\":1}\n{\"n\":2}");
    let stale = fx.repo.push(&note(Expect::Absent, r#"{"n":3}"#));
    assert_eq!(
        stale.outcome,
        PushOutcome::Rejected {
            refs: vec![name.clone()]
        }
    );
    assert_eq!(stale.notes.len(), 1, "the notes commit is reported anyway");
}

/// Pushes the notes commit `notes` as runner-1's evidence notes with plain Git, then a record
/// "new record" on `object` on top through bay; the notes commit bay wrote.
fn note_on_seeded(fx: &Fixture, notes: &Oid, object: &Oid) -> Oid {
    let name = refs::evidence("runner-1");
    git(
        &fx.clone,
        &["push", "-q", "origin", &format!("{notes}:{name}")],
    );
    let report = fx.repo.push(&PushPlan {
        notes: vec![NoteAdd {
            producer: "runner-1".into(),
            expect: Expect::Is(notes.clone()),
            object: object.clone(),
            record: "new record".into(),
            key: None,
        }],
        atomic: true,
        ..PushPlan::default()
    });
    assert_eq!(report.outcome, PushOutcome::Accepted);
    report.notes[0].clone()
}

#[test]
fn a_note_in_a_fanned_out_tree_is_appended_where_it_is() {
    let fx = Fixture::new();
    let object = fx.main0.clone();
    let hex = object.as_str();
    let fanned = format!("{}/{}", &hex[..2], &hex[2..]);
    let other = "ab".repeat(20);
    let other_path = format!("{}/{}", &other[..2], &other[2..]);
    let notes = commit(
        &fx.clone,
        &[],
        &[(&fanned, "old record\n"), (&other_path, "other\n")],
        "notes",
    );
    let name = refs::evidence("runner-1");
    let tip = note_on_seeded(&fx, &notes, &object);
    let listed = git(&fx.clone, &["ls-tree", "-r", "--name-only", tip.as_str()]);
    let mut expected = vec![other_path, fanned];
    expected.sort();
    assert_eq!(listed.lines().collect::<Vec<_>>(), expected);
    let shown = git(
        &fx.server,
        &["notes", &format!("--ref={name}"), "show", object.as_str()],
    );
    assert_eq!(shown, "old record\nnew record");

    // A new object's note takes the same layout.
    let later = fx.repo.push(&PushPlan {
        notes: vec![NoteAdd {
            producer: "runner-1".into(),
            expect: Expect::Is(tip),
            object: Oid::parse(&"cd".repeat(20)).expect("an id"),
            record: "third".into(),
            key: None,
        }],
        atomic: true,
        ..PushPlan::default()
    });
    assert_eq!(later.outcome, PushOutcome::Accepted);
    let listed = git(
        &fx.clone,
        &["ls-tree", "-r", "--name-only", later.notes[0].as_str()],
    );
    assert!(
        listed.contains(&format!("cd/{}", "cd".repeat(19))),
        "{listed}"
    );
}

#[test]
fn a_large_flat_notes_tree_takes_new_notes_one_level_deeper() {
    let fx = Fixture::new();
    let flat: Vec<(String, String)> = (0..256)
        .map(|n| (format!("{n:040x}"), format!("record {n}\n")))
        .collect();
    let files: Vec<(&str, &str)> = flat
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect();
    let notes = commit(&fx.clone, &[], &files, "notes");
    let name = refs::evidence("runner-1");
    let object = fx.main0.clone();
    let tip = note_on_seeded(&fx, &notes, &object);
    let hex = object.as_str();
    let listed = git(&fx.clone, &["ls-tree", "-r", "--name-only", tip.as_str()]);
    assert!(
        listed
            .lines()
            .any(|l| l == format!("{}/{}", &hex[..2], &hex[2..])),
        "the new note is fanned out"
    );
    assert_eq!(
        listed.lines().count(),
        257,
        "the flat notes stay where they are"
    );
    // Git reads both layouts in one tree.
    let show = |object: &str| {
        git(
            &fx.server,
            &["notes", &format!("--ref={name}"), "show", object],
        )
    };
    assert_eq!(show(hex), "new record");
    assert_eq!(show(&format!("{:040x}", 7)), "record 7");
    // And bay reads the new note back.
    let read = fx.repo.read_notes(&[tip], &[object]).expect("notes read");
    assert_eq!(read, vec!["new record".to_owned()]);
}

fn spec(base: &Oid, draft: &Oid, merge_base: &Oid) -> CandidateSpec {
    CandidateSpec {
        candidate: change("c7k2m4qa").op(1).candidate(1),
        base: base.clone(),
        draft: draft.clone(),
        merge_base: merge_base.clone(),
        message: "bay: candidate c7k2m4qa.1.1\n".into(),
        sign: None,
    }
}

#[test]
fn merge_tree_clean_conflict_and_fault() {
    let fx = Fixture::new();
    let root = commit(
        &fx.clone,
        &[],
        &[("f", "a\nb\nc\n"), ("g", "x\n"), ("dir/h", "h\n")],
        "root",
    );
    let ours = commit(
        &fx.clone,
        &[&root],
        &[("f", "A\nb\nc\n"), ("g", "x\n"), ("dir/h", "h\n")],
        "ours",
    );
    let theirs = commit(
        &fx.clone,
        &[&root],
        &[("f", "a\nb\nC\n"), ("dir/h", "h\n"), ("dir/new", "n\n")],
        "theirs",
    );
    let Some(Completion::CandidateBuilt(Ok(built))) = fx
        .repo
        .execute(&Action::BuildCandidate(spec(&ours, &theirs, &root)))
    else {
        panic!("the clean merge failed");
    };
    let BuildResult::Clean {
        commit: made,
        tree,
        base_tree,
        changed_paths,
    } = built
    else {
        panic!("a clean merge: {built:?}");
    };
    assert_eq!(changed_paths, vec!["dir/new", "f", "g"]);
    assert_eq!(
        base_tree.as_str(),
        git(&fx.clone, &["rev-parse", &format!("{ours}^{{tree}}")])
    );
    assert_eq!(
        git(&fx.clone, &["cat-file", "-p", &format!("{made}:f")]),
        "A\nb\nC"
    );
    let parents = git(&fx.clone, &["rev-list", "--parents", "-n1", made.as_str()]);
    assert_eq!(parents, format!("{made} {ours}"));
    assert_eq!(
        git(&fx.clone, &["rev-parse", &format!("{made}^{{tree}}")]),
        tree.as_str()
    );
    assert_eq!(
        ref_value(&fx.clone, "refs/bay/inflight/c7k2m4qa.1"),
        Some(made)
    );

    // A draft made on main as it stands: its own tree, as git merge-tree gives it.
    let Ok(BuildResult::Clean {
        tree: on_main,
        changed_paths,
        ..
    }) = fx.repo.build_candidate(&spec(&root, &theirs, &root))
    else {
        panic!("a draft on main merges cleanly");
    };
    let by_git = git(
        &fx.clone,
        &[
            "merge-tree",
            "--write-tree",
            &format!("--merge-base={root}"),
            root.as_str(),
            theirs.as_str(),
        ],
    );
    assert_eq!(on_main.as_str(), by_git);
    assert_eq!(
        on_main.as_str(),
        git(&fx.clone, &["rev-parse", &format!("{theirs}^{{tree}}")])
    );
    assert_eq!(changed_paths, vec!["dir/new", "f", "g"]);

    let clash = commit(
        &fx.clone,
        &[&root],
        &[("f", "Z\nb\nc\n"), ("dir/h", "other\n")],
        "clash",
    );
    let conflict = fx
        .repo
        .build_candidate(&spec(&ours, &clash, &root))
        .expect("a conflict is no fault");
    // f conflicts by content; g is deleted on their side and untouched on ours: clean.
    assert_eq!(
        conflict,
        BuildResult::Conflict {
            paths: vec!["f".into()]
        }
    );
    let both = commit(
        &fx.clone,
        &[&root],
        &[("f", "Z\nb\nc\n"), ("g", "y\n"), ("dir/h", "h\n")],
        "both",
    );
    let deleted = commit(&fx.clone, &[&root], &[("f", "a\nb\nc\n")], "deleted");
    let conflict = fx
        .repo
        .build_candidate(&spec(&both, &deleted, &root))
        .expect("modify/delete is a conflict");
    assert_eq!(
        conflict,
        BuildResult::Conflict {
            paths: vec!["g".into()]
        }
    );

    // What the request names and the clone lacks is a record no retry can build, not a
    // fault; main itself missing is a fault.
    let nosuch = Oid::parse(&"d".repeat(40)).expect("an id");
    let missing = BuildResult::Missing {
        commits: vec![nosuch.clone()],
    };
    for (base, draft, merge_base) in [(&ours, &theirs, &nosuch), (&ours, &nosuch, &root)] {
        let built = fx.repo.build_candidate(&spec(base, draft, merge_base));
        assert_eq!(built, Ok(missing.clone()));
    }
    fx.repo
        .build_candidate(&spec(&nosuch, &theirs, &root))
        .expect_err("a missing main is a fault");
}

#[test]
fn read_file_tells_absent_from_missing() {
    let fx = Fixture::new();
    let at = commit(&fx.clone, &[], &[("a/b.txt", "bee\n")], "files");
    let read = |path: &str| fx.repo.read_file(&at, path);
    assert_eq!(read("a/b.txt"), Ok(Some(b"bee\n".to_vec())));
    assert_eq!(read("a/c.txt"), Ok(None));
    assert_eq!(read("a"), Ok(None), "a directory is not a file");
    let nosuch = Oid::parse(&"e".repeat(40)).expect("an id");
    assert!(fx.repo.read_file(&nosuch, "a/b.txt").is_err());
}

#[test]
fn a_history_or_log_read_since_a_moment_stops_at_the_first_older_commit() {
    let fx = Fixture::new();
    // A line of five commits, one a day apart, then one back in time: the walk stops at the
    // first commit older than the bound and never sees what lies beyond it.
    let day = 86_400u64;
    let mut line = Vec::new();
    let mut parent: Option<Oid> = None;
    for (n, secs) in [1, 2, 3, 4, 5, 6]
        .iter()
        .map(|d| 1_700_000_000 + d * day)
        .enumerate()
    {
        let secs = if n == 5 { 1_700_000_000 } else { secs };
        let message = format!("commit {n}");
        let parents: Vec<&Oid> = parent.iter().collect();
        let tree = git_in(&fx.clone, &["mktree"], Some(""));
        let mut args = vec!["commit-tree".to_string(), tree];
        for p in &parents {
            args.push("-p".into());
            args.push(p.to_string());
        }
        args.extend(["-m".into(), message]);
        let made = bay_drivers::git::Git::in_dir(&fx.clone)
            .cmd(args.iter().map(String::as_str))
            .env("GIT_COMMITTER_DATE", format!("@{secs} +0000"))
            .env("GIT_AUTHOR_DATE", format!("@{secs} +0000"))
            .text()
            .expect("commit-tree works");
        let made = oid(&made);
        line.push(made.clone());
        parent = Some(made);
    }
    let tip = line.last().expect("a line").clone();
    let query = |since| HistoryQuery {
        from: None,
        to: tip.clone(),
        limit: 100,
        newest: false,
        since,
    };
    let whole = fx.repo.read_history(&query(None)).expect("the whole line");
    assert_eq!(whole.len(), 6);
    // Since the third day: the tip is older than that, so nothing newer is reached.
    let bound = Timestamp::from_secs(1_700_000_000 + 3 * day);
    let read = fx
        .repo
        .read_history(&query(Some(bound)))
        .expect("a bounded read");
    assert!(
        read.is_empty(),
        "the walk stops at the tip, older than the bound: {read:?}"
    );
    // From the fifth commit, the days 3 to 5 are read, oldest first, and the older ones not.
    let from_fifth = HistoryQuery {
        to: line[4].clone(),
        ..query(Some(bound))
    };
    let read = fx.repo.read_history(&from_fifth).expect("a bounded read");
    let ids: Vec<Oid> = read.into_iter().map(|c| c.oid).collect();
    assert_eq!(ids, line[2..5].to_vec());
    // The newest two of them, oldest first, in one walk; with the bound, only days 3 to 5.
    let newest = |limit, since| HistoryQuery {
        newest: true,
        limit,
        since,
        ..from_fifth.clone()
    };
    let ids = |query: &HistoryQuery| -> Vec<Oid> {
        let read = fx.repo.read_history(query).expect("a read of the newest");
        read.into_iter().map(|c| c.oid).collect()
    };
    assert_eq!(ids(&newest(2, None)), line[3..5].to_vec());
    assert_eq!(ids(&newest(10, None)), line[..5].to_vec());
    assert_eq!(ids(&newest(10, Some(bound))), line[2..5].to_vec());

    // A log read (the flow's read of a runner log) stops alike: newest first.
    let log = |to: &Oid, since| -> Vec<Oid> {
        let read = fx.repo.read_log(Some(to.as_str()), 10, since);
        read.expect("a log read")
            .into_iter()
            .map(|s| s.oid)
            .collect()
    };
    assert!(log(&tip, Some(bound)).is_empty(), "the tip is older");
    let mut days = line[2..5].to_vec();
    days.reverse();
    assert_eq!(log(&line[4], Some(bound)), days);
    assert_eq!(log(&line[4], None).len(), 5);
}

#[test]
fn the_newest_and_oldest_of_main_read_in_process_are_what_git_reads() {
    let fx = Fixture::new();
    let tree = git_in(&fx.clone, &["mktree"], Some(""));
    // A commit from its message's exact bytes (stdin: no newline added, none stripped).
    let made = |parents: &[&Oid], message: &str, who: &str| -> Oid {
        let mut args = vec!["commit-tree".to_string(), tree.clone()];
        for parent in parents {
            args.extend(["-p".to_string(), parent.to_string()]);
        }
        let made = bay_drivers::git::Git::in_dir(&fx.clone)
            .cmd(args.iter().map(String::as_str))
            .env("GIT_COMMITTER_NAME", who)
            .env("GIT_COMMITTER_EMAIL", "who@example.com")
            .env("GIT_AUTHOR_NAME", "author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .stdin(message.as_bytes())
            .text()
            .expect("commit-tree works");
        oid(&made)
    };
    let root = made(&[], "root\n", "tester");
    let side = made(&[&root], "side\n", "tester");
    let mut line = vec![root.clone()];
    for (n, message) in [
        "subject\n\nbody with a blank line\n",
        "no newline at the end",
        "trailing blank lines\n\n\n",
        "non-ASCII: ß → ✓\n",
    ]
    .into_iter()
    .enumerate()
    {
        let parent = line.last().expect("a line").clone();
        line.push(made(&[&parent], message, &format!("Committer No {n}")));
    }
    let parent = line.last().expect("a line").clone();
    line.push(made(&[&parent, &side], "a merge\n", "tester"));
    let tip = line.last().expect("a line").clone();
    // An unrelated root as `from`: the walk never meets it, so Git's `from..to` answers,
    // and bounds nothing of the line.
    let unrelated = made(&[], "elsewhere\n", "tester");
    // The newest or the oldest of the range, each at several limits: walked in-process, or by
    // Git's `from..to` (`log`, or `rev-list` and `log --no-walk`) where the walk never meets
    // `from`.
    for newest in [true, false] {
        for limit in [1, 3, 6, 10] {
            let query = |from: Option<&Oid>| HistoryQuery {
                from: from.cloned(),
                to: tip.clone(),
                limit,
                newest,
                since: None,
            };
            // The window a read of `range` (oldest first) lists.
            let window = |range: &[Oid]| -> Vec<Oid> {
                let take = (limit as usize).min(range.len());
                match newest {
                    true => range[range.len() - take..].to_vec(),
                    false => range[..take].to_vec(),
                }
            };
            let ids =
                |read: &[MainCommit]| -> Vec<Oid> { read.iter().map(|c| c.oid.clone()).collect() };
            let walked = fx.repo.read_history(&query(None)).expect("read in-process");
            let by_git = fx
                .repo
                .read_history(&query(Some(&unrelated)))
                .expect("read by git");
            assert_eq!(walked, by_git, "newest {newest}, limit {limit}");
            assert_eq!(walked.len(), (limit as usize).min(line.len()));
            assert_eq!(
                ids(&walked),
                window(&line),
                "newest {newest}, limit {limit}"
            );
            // A `from` on the line bounds the walk as `from..to` does.
            let from = &line[2];
            let bounded = fx.repo.read_history(&query(Some(from))).expect("a read");
            assert_eq!(
                ids(&bounded),
                window(&line[3..]),
                "newest {newest}, after {from}, limit {limit}"
            );
            let at_tip = fx.repo.read_history(&query(Some(&tip))).expect("a read");
            assert!(at_tip.is_empty(), "nothing after the tip itself");
        }
    }
    let merge = fx.repo.read_history(&HistoryQuery {
        from: None,
        to: tip.clone(),
        limit: 1,
        newest: true,
        since: None,
    });
    let merge = merge.expect("a read");
    assert_eq!(merge[0].parents, vec![parent, side]);
    assert_eq!(
        merge[0].off_first_parent, 1,
        "the merge brought in the side commit"
    );
}

#[test]
fn what_a_merge_brought_in_is_what_git_walks() {
    let fx = Fixture::new();
    let tree = git_in(&fx.clone, &["mktree"], Some(""));
    // Each commit a second after the one before, so that Git's order by time is one order.
    let clock = std::cell::Cell::new(1_700_000_000u64);
    let made = |parents: &[&Oid], message: &str| -> Oid {
        let mut args = vec![
            "commit-tree".to_string(),
            tree.clone(),
            "-m".into(),
            message.into(),
        ];
        for parent in parents {
            args.extend(["-p".to_string(), parent.to_string()]);
        }
        clock.set(clock.get() + 1);
        let date = format!("{} +0000", clock.get());
        let made = bay_drivers::git::Git::in_dir(&fx.clone)
            .cmd(args.iter().map(String::as_str))
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_AUTHOR_DATE", &date)
            .text()
            .expect("commit-tree works");
        oid(&made)
    };
    // A side line with a merge of its own, brought into main by one merge.
    let root = made(&[], "root");
    let first = made(&[&root], "main 1");
    let s1 = made(&[&root], "side 1");
    let s2 = made(&[&s1], "side 2");
    let s2b = made(&[&s1], "side 2b");
    let first = made(&[&first], "main 2");
    let s3 = made(&[&s2, &s2b], "side merge");
    let tip = made(&[&first, &s3], "the merge");
    let range = [tip.to_string(), format!("^{first}")];
    let count: u64 = git_in(
        &fx.clone,
        &["rev-list", "--count", &range[0], &range[1]],
        None,
    )
    .trim()
    .parse()
    .expect("a count");
    let logged: Vec<Oid> = git_in(
        &fx.clone,
        &["log", "--format=%H", &range[0], &range[1]],
        None,
    )
    .lines()
    .map(oid)
    .filter(|id| *id != tip)
    .collect();
    let read = fx
        .repo
        .read_history(&HistoryQuery {
            from: None,
            to: tip.clone(),
            limit: 1,
            newest: true,
            since: None,
        })
        .expect("a read");
    assert_eq!(
        read[0].off_first_parent,
        count - 1,
        "the merge itself is not off the line"
    );
    assert_eq!(read[0].off_first_parent, 4);
    let brought: Vec<Oid> = read[0].brought.iter().map(|c| c.oid.clone()).collect();
    assert_eq!(brought, logged, "newest first, as git log lists them");
    assert_eq!(read[0].brought[0].message, "side merge\n");
}

#[test]
fn a_push_to_no_repository_is_not_sent() {
    let fx = Fixture::new();
    git(
        &fx.clone,
        &[
            "remote",
            "add",
            "gone",
            &fx.dir.path().join("nosuch.git").to_string_lossy(),
        ],
    );
    let repo = Repo::new(&fx.clone, "gone", "main").expect("valid names");
    let report = repo.push(&plan(
        vec![update("refs/bay/x", Expect::Absent, &fx.main0)],
        true,
    ));
    assert!(
        matches!(report.outcome, PushOutcome::NotSent(_)),
        "{:?}",
        report.outcome
    );
    assert!(repo.fetch(&everything("main")).is_err());
}

#[test]
fn a_push_killed_by_its_time_bound_is_unknown_yet_applied() {
    let fx = Fixture::new();
    let hook = fx.server.join("hooks").join("pre-receive");
    std::fs::write(&hook, "#!/bin/sh\nsleep 3\n").expect("the hook is written");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755))
        .expect("the hook is made executable");
    let repo = Repo::new(&fx.clone, "origin", "main")
        .expect("valid names")
        .with_bounds(Bounds {
            local: Duration::from_secs(30),
            network: Duration::from_secs(1),
        });
    let k = change("c7k2m4qa");
    let started = Instant::now();
    let report = repo.push(&PushPlan {
        appends: vec![Append::on(k.clone(), None, vec![heartbeat(&k, 1)], None)],
        atomic: true,
        ..PushPlan::default()
    });
    let took = started.elapsed();
    assert!(
        matches!(report.outcome, PushOutcome::Unknown { .. }),
        "{:?}",
        report.outcome
    );
    assert!(took < Duration::from_millis(2500), "took {took:?}");
    let written = report.steps[0][0].clone();
    // The server goes on and applies it: only reading the remote settles an unknown push.
    let deadline = Instant::now() + Duration::from_secs(15);
    while fx.on_server(&refs::change(&k)).is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(fx.on_server(&refs::change(&k)), Some(written));
}

#[test]
fn other_actions_are_left_to_other_drivers() {
    let fx = Fixture::new();
    let action = Action::FreezeDraft {
        change: ChangeId::parse("c7k2m4qa").expect("an id"),
        parent: fx.main0.clone(),
        base: fx.main0.clone(),
        labels: bay_core::conflict::Labels::carried(&ChangeId::parse("c7k2m4qa").expect("an id")),
    };
    assert_eq!(fx.repo.execute(&action), None);
}

#[test]
fn stats_measure_each_path_the_change_touches_against_its_base() {
    let fx = Fixture::new();
    let base = commit(
        &fx.clone,
        &[],
        &[
            ("a.txt", "a\nb\n"),
            ("same.txt", "same\n"),
            ("gone.txt", "gone\n"),
            ("image.bin", "x\0y"),
        ],
        "base",
    );
    let big = "line\n".repeat(300_000);
    let change = commit(
        &fx.clone,
        &[&base],
        &[
            ("a.txt", "a\nc\nd\n"),
            ("same.txt", "same\n"),
            ("image.bin", "x\0zz"),
            ("dir/new.txt", "new\n"),
            ("no-newline.txt", "one\ntwo"),
            ("big.txt", &big),
        ],
        "change",
    );
    let stat = PathStat::new;
    let Some(Completion::StatsRead(Ok(stats))) = fx.repo.execute(&Action::ReadStats {
        base: base.clone(),
        commit: change.clone(),
    }) else {
        panic!("the stats could not be read");
    };
    assert_eq!(
        stats,
        vec![
            stat("a.txt", Some(6), false, Some((2, 1))),
            stat("big.txt", Some(1_500_000), true, Some((300_000, 0))),
            stat("dir/new.txt", Some(4), true, Some((1, 0))),
            stat("gone.txt", None, false, Some((0, 1))),
            stat("image.bin", Some(4), false, None),
            stat("no-newline.txt", Some(7), true, Some((2, 0))),
        ]
    );
    let same = fx.repo.read_stats(&base, &base).expect("no difference");
    assert!(same.is_empty());
    let nowhere = Oid::parse(&"0123456789abcdef".repeat(3)[..40]).expect("an id");
    assert!(
        fx.repo.read_stats(&base, &nowhere).is_err(),
        "a missing commit is a fault"
    );
}

#[test]
fn chains_deeper_than_the_readers_walk_read_as_git_walks_them() {
    let fx = Fixture::new();
    let long = change("longchai");
    let short = change("shortcha");
    let steps: Vec<Step> = (1..=45).map(|n| heartbeat(&long, n)).collect();
    let few: Vec<Step> = (1..=3).map(|n| heartbeat(&short, n)).collect();
    let written = fx
        .repo
        .write_steps(&Append::on(long.clone(), None, steps, None))
        .expect("steps written");
    let others = fx
        .repo
        .write_steps(&Append::on(short.clone(), None, few, None))
        .expect("steps written");
    let tip = written.last().expect("a tip").clone();
    // Git's own first-parent walk from `tip` down to (not into) `known`.
    let by_git = |known: Option<&Oid>| -> Vec<String> {
        let mut args = vec![
            "rev-list".to_string(),
            "--first-parent".into(),
            tip.to_string(),
        ];
        args.extend(known.map(|k| format!("^{k}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        git(&fx.clone, &args).lines().map(str::to_string).collect()
    };
    let query = |known: Option<&Oid>| ChainQuery {
        change: long.clone(),
        tip: tip.clone(),
        known: known.cloned(),
    };
    for known in [None, Some(&written[2]), Some(&written[40])] {
        let reads = fx
            .repo
            .read_chains(&[
                query(known),
                ChainQuery {
                    change: short.clone(),
                    tip: others[2].clone(),
                    known: None,
                },
            ])
            .expect("the chains read");
        let oids: Vec<String> = reads[0].steps.iter().map(|s| s.oid.to_string()).collect();
        assert_eq!(oids, by_git(known), "known {known:?}");
        assert_eq!(reads[0].reached_known, known.is_some());
        assert_eq!(reads[1].steps.len(), 3);
    }
}

/// Makes every `git` process started from now on in `dir` refuse the repository, so that a
/// read or a build that still answers is shown to have started none.
fn refuse_new_git_processes(dir: &std::path::Path) {
    git(dir, &["config", "core.repositoryformatversion", "99"]);
    assert!(
        std::process::Command::new("git")
            .arg("--git-dir")
            .arg(dir)
            .args(["rev-parse", "HEAD"])
            .output()
            .expect("git runs")
            .stderr
            .starts_with(b"fatal: Expected git repo version"),
        "git refuses the repository now"
    );
}

#[test]
fn a_short_chain_and_a_candidate_on_main_as_it_stands_start_no_git_process() {
    let fx = Fixture::new();
    let k = change("shortcha");
    let long = change("longchai");
    let steps = fx
        .repo
        .write_steps(&Append::on(
            k.clone(),
            None,
            (1..=3).map(|n| heartbeat(&k, n)).collect(),
            None,
        ))
        .expect("steps written");
    let many = fx
        .repo
        .write_steps(&Append::on(
            long.clone(),
            None,
            (1..=40).map(|n| heartbeat(&long, n)).collect(),
            None,
        ))
        .expect("steps written");
    let root = commit(&fx.clone, &[], &[("f", "a\n")], "root");
    let draft = commit(
        &fx.clone,
        &[&root],
        &[("f", "b\n"), ("g", "new\n")],
        "draft",
    );
    // The clone is opened before Git refuses the repository; every `git` starts after.
    fx.repo.warm();
    refuse_new_git_processes(&fx.clone);
    let short = |tip: &Oid, change: &ChangeId| ChainQuery {
        change: change.clone(),
        tip: tip.clone(),
        known: None,
    };
    let reads = fx
        .repo
        .read_chains(&[short(&steps[2], &k)])
        .expect("a chain of three steps is walked by the reader alone");
    assert_eq!(reads[0].steps.len(), 3);
    assert!(
        fx.repo.read_chains(&[short(&many[39], &long)]).is_err(),
        "forty steps need git log, which cannot start now"
    );
    let built = fx
        .repo
        .build_candidate(&spec(&root, &draft, &root))
        .expect("a draft on main as it stands needs no git merge-tree");
    assert!(matches!(built, BuildResult::Clean { .. }), "{built:?}");
}

#[test]
fn a_log_from_one_commit_is_walked_in_process_and_a_range_by_git() {
    let fx = Fixture::new();
    let root = commit(&fx.clone, &[], &[("f", "a\n")], "root");
    let side = commit(&fx.clone, &[], &[("g", "s\n")], "side");
    let merge = commit(&fx.clone, &[&root, &side], &[("f", "b\n")], "merge\n\nbody");
    fx.repo.warm();
    refuse_new_git_processes(&fx.clone);
    let log = fx
        .repo
        .read_log(Some(merge.as_str()), 10, None)
        .expect("a line from one commit needs no git");
    let seen: Vec<(Oid, &str)> = log
        .iter()
        .map(|s| (s.oid.clone(), s.message.as_str()))
        .collect();
    assert_eq!(
        seen,
        [(merge.clone(), "merge\n\nbody\n"), (root.clone(), "root\n")]
    );
    let range = format!("{root}..{merge}");
    assert!(
        fx.repo.read_log(Some(&range), 10, None).is_err(),
        "a range needs git log, which cannot start now"
    );
}

#[test]
fn held_refs_are_listed_in_process_newest_committed_first() {
    let fx = Fixture::new();
    let tree = git_in(&fx.clone, &["mktree"], Some(""));
    // Committed on days 3, 1 and 2, under names in another order.
    for (name, day) in [("aaaaaaaa", 3u64), ("bbbbbbbb", 1), ("cccccccc", 2)] {
        let secs = 1_700_000_000 + day * 86_400;
        let made = bay_drivers::git::Git::in_dir(&fx.clone)
            .cmd(["commit-tree", tree.as_str(), "-m", name])
            .env("GIT_COMMITTER_DATE", format!("@{secs} +0000"))
            .text()
            .expect("commit-tree works");
        let local = format!("refs/bay-mirror/origin/bay/changes/{name}");
        git(&fx.clone, &["update-ref", &local, made.trim()]);
    }
    fx.repo.warm();
    refuse_new_git_processes(&fx.clone);
    let held = fx
        .repo
        .read_held("refs/bay/changes/", 2)
        .expect("listed without git");
    let names: Vec<&str> = held.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        ["refs/bay/changes/aaaaaaaa", "refs/bay/changes/cccccccc"],
        "the two newest committed"
    );
}

/// Commits and the key registry are read in-process: each commit raw as `git cat-file commit`
/// prints it, each registry file as `git ls-tree` lists it, a name that is not UTF-8 kept apart
/// (escaped) rather than made into another, and a commit the clone lacks a fault.
#[test]
fn commits_and_the_registry_read_in_process_as_git_shows_them() {
    let fx = Fixture::new();
    let g = bay_drivers::git::Git::in_dir(&fx.clone);
    let blob = git_in(
        &fx.clone,
        &["hash-object", "-w", "--stdin"],
        Some("alice key\n"),
    );
    let mut listing = format!("100644 blob {blob}\tagent\n").into_bytes();
    listing.extend(format!("100644 blob {blob}\tag").as_bytes());
    listing.extend(b"\xffent\n");
    let tree = g
        .cmd(["mktree"])
        .stdin(listing)
        .text()
        .expect("mktree works");
    let first = oid(&git(&fx.clone, &["commit-tree", tree.trim(), "-m", "v1"]));
    let second = oid(&git(
        &fx.clone,
        &["commit-tree", tree.trim(), "-p", first.as_str(), "-m", "v2"],
    ));
    let raw = |c: &Oid| format!("{}\n", git(&fx.clone, &["cat-file", "commit", c.as_str()]));
    let read = fx.repo.execute(&Action::ReadCommits {
        commits: vec![second.clone(), first.clone()],
    });
    let Some(Completion::CommitsRead(Ok(read))) = read else {
        panic!("the commits read failed: {read:?}");
    };
    assert_eq!(read, [raw(&second), raw(&first)]);
    let missing = Oid::parse(&"e".repeat(40)).expect("an id");
    assert!(matches!(
        fx.repo.execute(&Action::ReadCommits {
            commits: vec![missing]
        }),
        Some(Completion::CommitsRead(Err(_)))
    ));
    let Some(Completion::RegistryRead(Ok(chain))) = fx.repo.execute(&Action::ReadRegistry {
        tip: second.clone(),
    }) else {
        panic!("the registry read failed");
    };
    type Files = Vec<(String, Option<String>)>;
    let seen: Vec<(Oid, Files)> = chain
        .into_iter()
        .map(|commit| {
            assert_eq!(commit.raw, raw(&commit.oid));
            let files = commit.files.into_iter().map(|f| (f.name, f.text)).collect();
            (commit.oid, files)
        })
        .collect();
    let files = vec![
        ("agent".to_owned(), Some("alice key\n".to_owned())),
        ("\"ag\\xffent\"".to_owned(), Some("alice key\n".to_owned())),
    ];
    assert_eq!(seen, [(second, files.clone()), (first, files)]);
}

/// Objects the bare repository at `dir` holds, loose and packed.
fn objects_held(dir: &std::path::Path) -> u64 {
    let counts = git(dir, &["count-objects", "-v"]);
    counts
        .lines()
        .filter_map(|line| {
            let (key, value) = line.split_once(": ")?;
            matches!(key, "count" | "in-pack").then(|| value.trim().parse::<u64>().ok())?
        })
        .sum()
}

/// A shard's new version is a child of the one it replaces, so its push sends what it adds:
/// Git leaves out of a pack what a parent's tree holds, never what a replaced tree held, and a
/// version with no parent sent the whole shard again on every compaction.
#[test]
fn a_shard_version_pushes_only_what_it_adds() {
    use bay_core::machine::IndexAdd;
    let fx = Fixture::new();
    let shard = "refs/bay/compacted/changes/c".to_owned();
    let files = |from: usize, to: usize| -> Vec<(String, String)> {
        (from..to)
            .map(|i| {
                (
                    format!("changes/c{}/c{i:07}", i % 10),
                    format!("record {i}\n"),
                )
            })
            .collect()
    };
    let add = |base: Option<Oid>, files| PushPlan {
        indexes: vec![IndexAdd::on(
            shard.clone(),
            base,
            files,
            "compaction".into(),
        )],
        atomic: true,
        ..PushPlan::default()
    };
    let first = fx.repo.push(&add(None, files(0, 300)));
    assert_eq!(first.outcome, PushOutcome::Accepted, "{first:?}");
    let tip = first.indexes[0].clone();
    let before = objects_held(&fx.server);
    let second = fx.repo.push(&add(Some(tip.clone()), files(300, 301)));
    assert_eq!(second.outcome, PushOutcome::Accepted, "{second:?}");
    // The commit, the root tree, the fan-out folder `changes/`, one `c<n>` folder, one record.
    let sent = objects_held(&fx.server) - before;
    assert!(sent <= 5, "the second version sent {sent} objects");
    let shown = git(
        &fx.server,
        &["rev-parse", &format!("{}^", second.indexes[0])],
    );
    assert_eq!(oid(&shown), tip);
    let listed = git(&fx.server, &["ls-tree", "-r", "--name-only", &shard]);
    assert_eq!(listed.lines().count(), 301);
}
