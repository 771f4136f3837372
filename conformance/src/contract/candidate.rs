//! Candidates: a draft merged onto main with `merge-tree` semantics, clean or conflicting
//! (content, modify/delete, add/add, file/directory), and missing when the draft or its merge
//! base is no commit the store holds.
//!
//! Every case starts from `O` (the draft's merge base) holding `a`, `b` and `keep`; `M` is
//! main (a child of `O`) and `D` the draft (another child of `O`).

use bay_core::git::Oid;
use bay_core::id::OpId;
use bay_core::machine::{Action, BuildResult, CandidateSpec, Completion};

use super::{Bench, Case};

/// A tree's files, as a case writes them.
type Files = Vec<(&'static str, &'static str)>;

const ORIGIN: &[(&str, &str)] = &[("a", "a1\n"), ("b", "b1\n"), ("keep", "k\n")];

pub(super) fn cases() -> Vec<Case> {
    let table: Vec<(&'static str, Files, Files)> = vec![
        (
            "candidate: edits to different files merge",
            vec![("a", "a2\n"), ("b", "b1\n"), ("keep", "k\n")],
            vec![("a", "a1\n"), ("b", "b2\n"), ("keep", "k\n")],
        ),
        (
            "candidate: a draft that deletes a file",
            vec![("a", "a2\n"), ("b", "b1\n"), ("keep", "k\n")],
            vec![("a", "a1\n"), ("keep", "k\n")],
        ),
        (
            "candidate: a draft with nothing new",
            vec![("a", "a2\n"), ("b", "b1\n"), ("keep", "k\n")],
            ORIGIN.to_vec(),
        ),
        (
            "candidate: both sides make the same edit",
            vec![("a", "a2\n"), ("b", "b1\n"), ("keep", "k\n")],
            vec![("a", "a2\n"), ("b", "b1\n"), ("keep", "k\n")],
        ),
        (
            "candidate: both edit one file",
            vec![("a", "a2\n"), ("b", "b1\n"), ("keep", "k\n")],
            vec![("a", "a3\n"), ("b", "b1\n"), ("keep", "k\n")],
        ),
        (
            "candidate: main deletes what the draft edits",
            vec![("b", "b1\n"), ("keep", "k\n")],
            vec![("a", "a3\n"), ("b", "b1\n"), ("keep", "k\n")],
        ),
        (
            "candidate: both add one path with different content",
            vec![
                ("a", "a1\n"),
                ("b", "b1\n"),
                ("c", "main\n"),
                ("keep", "k\n"),
            ],
            vec![
                ("a", "a1\n"),
                ("b", "b1\n"),
                ("c", "draft\n"),
                ("keep", "k\n"),
            ],
        ),
        (
            "candidate: both add one path with the same content",
            vec![
                ("a", "a1\n"),
                ("b", "b1\n"),
                ("c", "same\n"),
                ("keep", "k\n"),
            ],
            vec![
                ("a", "a1\n"),
                ("b", "b1\n"),
                ("c", "same\n"),
                ("keep", "k\n"),
            ],
        ),
        (
            "candidate: main adds a file where the draft adds a directory",
            vec![
                ("a", "a1\n"),
                ("b", "b1\n"),
                ("d", "file\n"),
                ("keep", "k\n"),
            ],
            vec![
                ("a", "a1\n"),
                ("b", "b1\n"),
                ("d/x", "inside\n"),
                ("keep", "k\n"),
            ],
        ),
    ];
    let mut cases: Vec<Case> = table
        .into_iter()
        .map(|(name, main, draft)| {
            Case::new(name, move |b| {
                b.commit("O", &[], ORIGIN);
                b.commit("M", &["O"], &main);
                b.commit("D", &["O"], &draft);
                let (m, d, o) = (b.oid("M"), b.oid("D"), b.oid("O"));
                build(b, m, d, o);
            })
        })
        .collect();
    cases.push(Case::new("candidate: a draft no store holds", |b| {
        b.commit("O", &[], ORIGIN);
        let o = b.oid("O");
        let missing = Oid::parse("0123456789abcdef0123456789abcdef01234567").expect("an object id");
        build(b, o.clone(), missing, o);
    }));
    cases.push(Case::new(
        "candidate: a draft and a merge base that are no commits",
        |b| {
            b.commit("O", &[], ORIGIN);
            let o = b.oid("O");
            let tree = b.tree(&o).expect("O's tree");
            b.named(&tree, "O's tree");
            build(b, o.clone(), tree.clone(), tree);
        },
    ));
    cases
}

fn build(b: &mut Bench<'_>, base: Oid, draft: Oid, merge_base: Oid) {
    let op = OpId::parse("c7k2m4qa.1").expect("an op id");
    let spec = CandidateSpec {
        candidate: op.candidate(1),
        base: base.clone(),
        draft,
        merge_base,
        message: "candidate c7k2m4qa.1.1\n".to_owned(),
        sign: None,
    };
    match b.execute(&Action::BuildCandidate(spec)) {
        Completion::CandidateBuilt(Ok(BuildResult::Clean {
            commit,
            tree,
            base_tree,
            changed_paths,
        })) => {
            b.named(&commit, "candidate");
            b.see("result", "clean");
            b.see_commit("candidate", &commit);
            let shape = b.tree(&commit);
            b.see(
                "tree is the candidate's",
                (shape == Some(tree.clone())).to_string(),
            );
            let main_tree = b.tree(&base);
            b.see(
                "base tree is main's",
                (main_tree == Some(base_tree)).to_string(),
            );
            b.see("tree equals main's", (main_tree == Some(tree)).to_string());
            let mut changed = changed_paths;
            changed.sort();
            b.see("changed paths", changed.join(" "));
        }
        Completion::CandidateBuilt(Ok(BuildResult::Conflict { paths })) => {
            let mut paths = paths;
            paths.sort();
            b.see("result", format!("conflict {}", paths.join(" ")));
        }
        Completion::CandidateBuilt(Ok(BuildResult::Missing { commits })) => {
            let shown: Vec<String> = commits.iter().map(|c| b.show(c)).collect();
            b.see("result", format!("missing {}", shown.join(" ")));
        }
        Completion::CandidateBuilt(Err(_)) => b.see("result", "fault"),
        other => panic!("a candidate build answered {other:?}"),
    }
}
