//! `bay save <intent> [--message <text>]` with real Git: the main checkout's edits (changed,
//! new and deleted files, never ignored ones) merge as one checked change with no view, and the
//! checkout moves to the merge. Every refusal leaves the checkout byte for byte as it was.

mod support;

use std::collections::BTreeMap;
use std::path::Path;

use support::*;

/// Every file of `dir` with its bytes, the Git directory's index, `HEAD` and local refs among
/// them: what "the checkout as it was" means.
fn everything(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("a readable folder") {
            let path = entry.expect("an entry").path();
            let name = path
                .strip_prefix(root)
                .expect("under root")
                .display()
                .to_string();
            // bay's own folder (views, scratch space) and its mirror of the remote are bay's
            // cache, not the checkout; objects only ever grow.
            if name.starts_with(".git/bay")
                || name.starts_with(".git/objects")
                || name.contains("bay-mirror")
                || name.contains("refs/bay/")
            {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(name, std::fs::read(&path).expect("a readable file"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    let refs: String = git(dir, &["show-ref", "--head"])
        .lines()
        .filter(|line| !line.contains("refs/bay-mirror/") && !line.contains("refs/bay/"))
        .map(|line| format!("{line}\n"))
        .collect();
    out.insert("refs".into(), refs.into_bytes());
    out
}

/// Fails naming every file that differs between two readings of [`everything`].
fn assert_same(before: &BTreeMap<String, Vec<u8>>, after: &BTreeMap<String, Vec<u8>>) {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let differ: Vec<&String> = names
        .into_iter()
        .filter(|name| before.get(*name) != after.get(*name))
        .collect();
    assert!(differ.is_empty(), "the checkout changed: {differ:?}");
}

fn bay_refs(world: &World) -> String {
    git_dir(&world.remote, &["for-each-ref", "refs/bay/"])
}

fn main_file(world: &World, path: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(&world.remote)
        .args(["show", &format!("main:{path}")])
        .output()
        .expect("git runs");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_save_merges_every_edit_but_ignored_files_and_moves_the_checkout_to_the_merge() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    write(&ann, "src/greeting.txt", "Hi\n");
    write(&ann, "src/new.txt", "New\n");
    std::fs::remove_file(ann.join("src/other.txt")).expect("rm");
    write(&ann, ".git/info/exclude", "*.log\n");
    write(&ann, "debug.log", "noise\n");

    let saved = bay(
        &ann,
        "ann",
        &["save", "tidy the greeting", "--message", "Greeting fits"],
    );
    assert_eq!(saved.doc["decision"], "merged", "{saved:?}");
    assert_eq!(saved.code, 0);
    let change = saved.doc["change"].as_str().expect("a change").to_owned();
    assert_eq!(world.merges_of(&change), 1);
    assert_eq!(
        main_file(&world, "src/greeting.txt").as_deref(),
        Some("Hi\n")
    );
    assert_eq!(main_file(&world, "src/new.txt").as_deref(), Some("New\n"));
    assert_eq!(
        main_file(&world, "src/other.txt"),
        None,
        "the deletion merged"
    );
    assert_eq!(
        main_file(&world, "debug.log"),
        None,
        "ignored files stay out"
    );
    // The change declares exactly what the save touched, and its first draft is the message.
    let chain = world.chain(&change);
    assert_eq!(
        chain[0]["paths"],
        serde_json::json!(["src/greeting.txt", "src/new.txt", "src/other.txt"]),
        "{chain:?}"
    );
    let draft = chain[1]["draft"].as_str().expect("a first draft");
    assert_eq!(
        git_dir(&world.remote, &["log", "-1", "--format=%s", draft]).trim(),
        "Greeting fits"
    );
    // No view was made, and the checkout now stands on the merge with nothing left over.
    assert!(saved.doc["detail"]["view"].is_null(), "{saved:?}");
    let main = world.remote_ref("refs/heads/main").expect("main");
    assert_eq!(saved.doc["detail"]["checkout"]["moved"], true, "{saved:?}");
    assert_eq!(git(&ann, &["rev-parse", "HEAD"]).trim(), main);
    assert_eq!(git(&ann, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(ann.join("debug.log")).expect("kept"),
        "noise\n"
    );

    let again = bay(&ann, "ann", &["save", "nothing new"]);
    assert_eq!(again.doc["decision"], "ok", "{again:?}");
    assert_eq!(again.doc["detail"]["nothing"], "nothing to save");
    assert!(again.doc["change"].is_null(), "{again:?}");
}

#[test]
fn a_save_refused_for_a_conflict_leaves_the_checkout_byte_identical() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    write(&ann, "src/greeting.txt", "Mine\n");
    write(&ann, "src/new.txt", "New\n");
    git(&ann, &["add", "src/new.txt"]);
    // Main changes the same line meanwhile.
    world.merged("bob", "greet", "src/greeting.txt", "Hey\n");
    let before = everything(&ann);
    let refs_before = bay_refs(&world);

    let saved = bay(&ann, "ann", &["save", "my greeting"]);
    assert_eq!(saved.doc["reason"], "MERGE_CONFLICT", "{saved:?}");
    assert_eq!(
        saved.doc["detail"]["conflicts"],
        serde_json::json!(["src/greeting.txt"])
    );
    assert!(saved.doc["change"].is_null(), "no change opened: {saved:?}");
    assert_eq!(bay_refs(&world), refs_before, "nothing was written");
    assert_same(&before, &everything(&ann));
}

#[test]
fn each_thing_in_the_way_fails_before_anything_changes() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    let refs_before = bay_refs(&world);

    // A merge under way, with a conflict in a file.
    git(&ann, &["checkout", "--quiet", "-b", "side"]);
    write(&ann, "src/greeting.txt", "Side\n");
    git(&ann, &["commit", "--quiet", "-am", "side"]);
    git(&ann, &["checkout", "--quiet", "main"]);
    write(&ann, "src/greeting.txt", "Here\n");
    git(&ann, &["commit", "--quiet", "-am", "here"]);
    let merging = std::process::Command::new("git")
        .arg("-C")
        .arg(&ann)
        .args(["merge", "--quiet", "side"])
        .output()
        .expect("git runs");
    assert!(!merging.status.success(), "the merge stops on its conflict");
    let before = everything(&ann);
    let saved = bay(&ann, "ann", &["save", "mid merge"]);
    assert_eq!(saved.doc["decision"], "failed", "{saved:?}");
    assert_eq!(saved.code, 20);
    assert!(
        saved.doc["detail"]["why"]
            .as_str()
            .unwrap_or("")
            .contains("merge is under way"),
        "{saved:?}"
    );
    assert_same(&before, &everything(&ann));
    git(&ann, &["merge", "--abort"]);

    // HEAD holds a commit main lacks.
    write(&ann, "src/other.txt", "Edited\n");
    let before = everything(&ann);
    let saved = bay(&ann, "ann", &["save", "ahead"]);
    assert_eq!(saved.doc["decision"], "failed", "{saved:?}");
    assert!(
        saved.doc["detail"]["why"]
            .as_str()
            .unwrap_or("")
            .contains("HEAD holds commits"),
        "{saved:?}"
    );
    assert_same(&before, &everything(&ann));

    // In a change's view.
    let start = bay(&ann, "ann", &["start", "viewed", "--paths", "src/"]);
    let view = Path::new(start.doc["detail"]["view"].as_str().expect("a view")).to_owned();
    write(&view, "src/greeting.txt", "In a view\n");
    let saved = bay(&view, "ann", &["save", "viewed"]);
    assert_eq!(saved.doc["decision"], "failed", "{saved:?}");
    assert!(
        saved.doc["detail"]["why"]
            .as_str()
            .unwrap_or("")
            .contains("bay merge"),
        "{saved:?}"
    );

    let after_start = bay_refs(&world);
    assert_ne!(after_start, refs_before, "only the start wrote");
    assert_eq!(world.main_log().len(), 1, "main never moved");
}

#[test]
fn a_refused_merge_keeps_its_change_open_and_the_same_words_go_on_with_it() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    // An empty file fails the check.
    write(&ann, "src/greeting.txt", "");
    let before = everything(&ann);
    let refused = bay(&ann, "ann", &["save", "shorter greeting"]);
    assert_eq!(refused.doc["reason"], "CHECK_FAILED", "{refused:?}");
    let change = refused.doc["change"]
        .as_str()
        .expect("the change stays named")
        .to_owned();
    assert_same(&before, &everything(&ann));

    write(&ann, "src/greeting.txt", "Yo\n");
    let saved = bay(&ann, "ann", &["save", "shorter greeting"]);
    assert_eq!(saved.doc["decision"], "merged", "{saved:?}");
    assert_eq!(
        saved.doc["change"],
        change.as_str(),
        "the same change went on"
    );
    assert_eq!(
        main_file(&world, "src/greeting.txt").as_deref(),
        Some("Yo\n")
    );
}

#[test]
fn a_checkout_off_the_main_branch_stays_where_it_was_and_says_why() {
    let world = World::standard();
    let ann = world.clone_as("ann");
    git(&ann, &["checkout", "--quiet", "-b", "topic"]);
    write(&ann, "src/greeting.txt", "Topic\n");
    let head = git(&ann, &["rev-parse", "HEAD"]);
    let saved = bay(&ann, "ann", &["save", "from a topic branch"]);
    assert_eq!(saved.doc["decision"], "merged", "{saved:?}");
    assert_eq!(
        saved.doc["detail"]["checkout"],
        serde_json::json!({ "moved": false, "why": "off_main" })
    );
    assert_eq!(
        git(&ann, &["rev-parse", "HEAD"]),
        head,
        "the checkout stayed"
    );
    assert_eq!(
        main_file(&world, "src/greeting.txt").as_deref(),
        Some("Topic\n")
    );
}
