//! Views: a change's sparse view shows exactly its declared paths, with the blobs' bytes; a
//! saved draft holds the view's work over the files the view does not show, even after a
//! draft that was saved and never recorded; saving twice with nothing new names the same
//! draft. A refresh writes a draft and leaves the view alone: only making the view again
//! shows what it brought, so a view never holds markers its change's record does not name;
//! and a view left on its old draft, when the record moved on to a refreshed one or to one
//! saved on another machine, carries its work over onto that draft, markers and all, and
//! then shows it; where that carrying conflicts, the draft is marked and the view is left
//! as it was, for bay to make once a record names the markers. A recorded draft the clone
//! lacks (a request written by hand) is a fault, to save onto or to make a view of, and the
//! view stays as it was.

use bay_core::conflict::Labels;
use bay_core::git::Oid;
use bay_core::machine::{Action, Completion};

use super::{Bench, Case, change};

const TREE: &[(&str, &str)] = &[
    ("README", "top\n"),
    ("docs/guide", "guide\n"),
    ("src/a", "a\n"),
    ("src/b", "b\r\n"),
    ("src/deep/c", "c\n"),
    ("srcx/d", "d\n"),
];

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new("view: shows exactly the declared paths", |b| {
            b.commit("O", &[], TREE);
            make(b, &["src/", "README"], "O");
            let files = b.view_files(&change());
            b.see("view", files);
        }),
        Case::new(
            "view: a saved draft keeps what the view does not show",
            |b| {
                b.commit("O", &[], TREE);
                make(b, &["src/"], "O");
                let k = change();
                b.edit_view(&k, "src/a", Some("a, edited\n"));
                b.edit_view(&k, "src/b", None);
                b.edit_view(&k, "src/new", Some("new\n"));
                let draft = freeze(b, "draft", "O");
                if let Some(draft) = draft {
                    b.see_commit("draft", &draft);
                    // The record now names the draft: saving again with nothing new is the same.
                    freeze(b, "second save", "draft");
                }
            },
        ),
        Case::new(
            "view: a draft saved and never recorded is still the view's own work",
            |b| {
                b.commit("O", &[], TREE);
                make(b, &["src/"], "O");
                let k = change();
                b.edit_view(&k, "src/a", Some("a, first\n"));
                freeze(b, "first", "O");
                // The record still names O (the request was refused, say); the view moves on.
                b.edit_view(&k, "src/a", Some("a, second\n"));
                b.edit_view(&k, "src/new", Some("new\n"));
                if let Some(second) = freeze(b, "second", "O") {
                    b.see_files("second", &second);
                }
            },
        ),
        Case::new("view: saving with nothing edited keeps the draft", |b| {
            b.commit("O", &[], TREE);
            make(b, &["src/"], "O");
            freeze(b, "save", "O");
        }),
        Case::new(
            "view: a refresh leaves the view alone; making the view shows the refreshed draft",
            |b| {
                refreshed_behind_the_view(b);
                let k = change();
                let files = b.view_files(&k);
                b.see("view after the refresh", files);
                make(b, &["src/"], "refreshed");
                let files = b.view_files(&k);
                b.see("view made from the refreshed draft", files);
            },
        ),
        Case::new(
            "view: a view behind a refreshed draft it never showed carries its work onto it",
            |b| {
                // The checkpoint of the refresh landed, and its reply was lost: the record
                // names the refreshed draft, and this view still shows the one before it.
                refreshed_behind_the_view(b);
                let k = change();
                b.edit_view(&k, "src/b", Some("b, later\n"));
                if let Some(saved) = freeze(b, "saved", "refreshed") {
                    b.see_files("saved", &saved);
                }
            },
        ),
        Case::new(
            "view: work carried over onto a draft saved elsewhere is what the view shows next",
            |b| {
                saved_elsewhere(b, ("src/b", "b, elsewhere\n"));
                let k = change();
                b.edit_view(&k, "src/a", Some("a, here\n"));
                if let Some(carried) = freeze(b, "carried", "elsewhere") {
                    b.see_files("carried", &carried);
                }
                let files = b.view_files(&k);
                b.see("view after carrying", files);
                // The next save keeps what the draft saved elsewhere brought.
                b.edit_view(&k, "src/a", Some("a, here again\n"));
                if let Some(next) = freeze(b, "next", "carried") {
                    b.see_files("next", &next);
                }
            },
        ),
        Case::new(
            "view: work carried over with a conflict marks the draft and leaves the view alone",
            |b| {
                saved_elsewhere(b, ("src/a", "a, elsewhere\n"));
                let k = change();
                b.edit_view(&k, "src/a", Some("a, here\n"));
                b.edit_view(&k, "src/b", Some("b, here\n"));
                if let Some(carried) = freeze(b, "carried", "elsewhere") {
                    b.see_files("carried", &carried);
                }
                let files = b.view_files(&k);
                b.see("view after carrying", files);
            },
        ),
        Case::new(
            "view: work carried over with a conflict the record already holds is that draft",
            |b| {
                // The record took the carried draft and its markers; the view was never made
                // from it (the command stopped). Saving again names that draft, no new one.
                saved_elsewhere(b, ("src/a", "a, elsewhere\n"));
                b.edit_view(&change(), "src/a", Some("a, here\n"));
                freeze(b, "carried", "elsewhere");
                freeze(b, "again", "carried");
            },
        ),
        Case::new(
            "view: saving onto a recorded draft this clone lacks is a fault",
            |b| {
                // A request named a draft nobody holds (a record written by hand): there is
                // nothing to save the view's work onto, and the view stays as it was.
                b.commit("O", &[], TREE);
                make(b, &["src/"], "O");
                let k = change();
                b.edit_view(&k, "src/a", Some("a, edited\n"));
                let nowhere =
                    Oid::parse("0123456789abcdef0123456789abcdef01234567").expect("an object id");
                let action = Action::FreezeDraft {
                    change: k.clone(),
                    parent: nowhere.clone(),
                    base: b.oid("O"),
                    labels: Labels::carried(&k),
                };
                let saved = match b.execute(&action) {
                    Completion::DraftFrozen(Ok(_)) => "saved",
                    Completion::DraftFrozen(Err(_)) => "fault",
                    other => panic!("saving a draft answered {other:?}"),
                };
                b.see("save", saved);
                let files = b.view_files(&k);
                b.see("view after the fault", files);
                // Nor is there a view to make of it.
                let action = Action::MakeView {
                    change: k.clone(),
                    paths: vec!["src/".into()],
                    draft: nowhere,
                };
                let made = match b.execute(&action) {
                    Completion::ViewMade(Ok(_)) => "made",
                    Completion::ViewMade(Err(_)) => "fault",
                    other => panic!("making a view answered {other:?}"),
                };
                b.see("make a view of it", made);
                let files = b.view_files(&k);
                b.see("view after that fault", files);
            },
        ),
        Case::new(
            "view: a refresh marks a conflicting text file under the labels, a binary one not",
            |b| {
                let base = [
                    ("src/a", "a\n"),
                    ("src/bin", "\0base\n"),
                    ("src/c", "c\n"),
                    ("src/gone", "g\n"),
                    ("src/kept", "k\n"),
                ];
                b.commit("O", &[], &base);
                // Main deletes src/gone and edits src/kept; the draft does the reverse.
                let main = [
                    ("src/a", "main\n"),
                    ("src/bin", "\0main\n"),
                    ("src/c", "c\n"),
                    ("src/kept", "k, main\n"),
                ];
                b.commit("M", &["O"], &main);
                let draft = [
                    ("src/a", "draft\n"),
                    ("src/bin", "\0draft\n"),
                    ("src/c", "c2\n"),
                    ("src/gone", "g, draft\n"),
                ];
                b.commit("D", &["O"], &draft);
                let action = Action::RefreshDraft {
                    change: change(),
                    draft: b.oid("D"),
                    base: b.oid("O"),
                    onto: b.oid("M"),
                    labels: Labels::draft("main", &change()),
                };
                match b.execute(&action) {
                    Completion::DraftRefreshed(Ok(refreshed)) => {
                        b.see("conflicts", refreshed.conflicts.join(" "));
                        b.see("marked", refreshed.marked.join(" "));
                        b.named(&refreshed.draft, "refreshed");
                        b.see_commit("refreshed", &refreshed.draft);
                    }
                    Completion::DraftRefreshed(Err(_)) => b.see("refresh", "fault"),
                    other => panic!("a refresh answered {other:?}"),
                }
            },
        ),
    ]
}

/// A view of `src/` made on `O` whose edit of `src/a` is saved as `draft`, then brought up
/// to `M`, which changed `src/a` too: `refreshed` holds markers, and the view is not made
/// from it.
fn refreshed_behind_the_view(b: &mut Bench<'_>) {
    b.commit("O", &[], &[("src/a", "a\n"), ("src/b", "b\n")]);
    b.commit("M", &["O"], &[("src/a", "main\n"), ("src/b", "b\n")]);
    make(b, &["src/"], "O");
    b.edit_view(&change(), "src/a", Some("draft\n"));
    freeze(b, "draft", "O");
    refresh(b, "draft", "M");
}

/// A view of `src/` made on `O`, and a draft `elsewhere` of the same change on `O` that
/// another machine saved, with `edit`: the record names it, and this view never showed it.
fn saved_elsewhere(b: &mut Bench<'_>, edit: (&str, &str)) {
    let base = [("src/a", "a\n"), ("src/b", "b\n")];
    b.commit("O", &[], &base);
    let mut elsewhere = base.to_vec();
    elsewhere.retain(|(path, _)| *path != edit.0);
    elsewhere.push(edit);
    b.commit("elsewhere", &["O"], &elsewhere);
    make(b, &["src/"], "O");
}

/// Makes the view of the change show `draft`, declaring `paths`.
fn make(b: &mut Bench<'_>, paths: &[&str], draft: &str) {
    let action = Action::MakeView {
        change: change(),
        paths: paths.iter().map(|p| p.to_string()).collect(),
        draft: b.oid(draft),
    };
    let made = match b.execute(&action) {
        Completion::ViewMade(Ok(_)) => "made",
        Completion::ViewMade(Err(_)) => "fault",
        other => panic!("making a view answered {other:?}"),
    };
    b.see("make view", made);
}

/// Brings `draft` (made on `O`) up to `onto` under the change's labels, names the result
/// `refreshed` and records which files it marked.
fn refresh(b: &mut Bench<'_>, draft: &str, onto: &str) {
    let action = Action::RefreshDraft {
        change: change(),
        draft: b.oid(draft),
        base: b.oid("O"),
        onto: b.oid(onto),
        labels: Labels::draft("main", &change()),
    };
    match b.execute(&action) {
        Completion::DraftRefreshed(Ok(refreshed)) => {
            b.see("marked", refreshed.marked.join(" "));
            b.named(&refreshed.draft, "refreshed");
        }
        Completion::DraftRefreshed(Err(_)) => b.see("refresh", "fault"),
        other => panic!("a refresh answered {other:?}"),
    }
}

/// Saves the view's work as a draft on `parent` (made on `O`), names it `name` (unless it
/// already has a symbol) and records which it is.
fn freeze(b: &mut Bench<'_>, name: &str, parent: &str) -> Option<Oid> {
    let action = Action::FreezeDraft {
        change: change(),
        parent: b.oid(parent),
        base: b.oid("O"),
        labels: Labels::carried(&change()),
    };
    match b.execute(&action) {
        Completion::DraftFrozen(Ok(frozen)) => {
            let draft = frozen.draft;
            b.named(&draft, name);
            let shown = b.show(&draft);
            b.see(format!("{name} is"), shown);
            if !frozen.conflicts.is_empty() {
                b.see(format!("{name} conflicts"), frozen.conflicts.join(" "));
                b.see(format!("{name} marked"), frozen.marked.join(" "));
            }
            Some(draft)
        }
        Completion::DraftFrozen(Err(_)) => {
            b.see(format!("{name} is"), "fault");
            None
        }
        other => panic!("saving a draft answered {other:?}"),
    }
}
