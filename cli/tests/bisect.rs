//! `[runner] bisect_post` with real Git: a post check skipped merges, so its first failure
//! sits several merges above its last pass. A runner with nothing to merge runs the check on
//! the range's midpoints in its sandbox, notes each answer as post evidence, runs the one
//! merge left once more, and so names the merge that broke it.

mod support;

use std::path::Path;

use support::*;

/// The post check `smoke`: the standard check, whose units fail when they say BROKEN.
fn smoke() -> String {
    let verdict = r#"if [ -s "$file" ] && ! grep -q '^<<<<<<<' "$file"; then v='"pass"'; else v='"product_failure","reason":"bad file"'; fi"#;
    let broken = r#"if grep -q BROKEN "$file"; then v='"product_failure","reason":"broken"'; else v='"pass"'; fi"#;
    assert!(
        CHECK.contains(verdict),
        "the standard check judges each file so"
    );
    CHECK.replace(verdict, broken)
}

fn world() -> World {
    let post = "\n[[check]]\nid = \"smoke\"\nenvironment = \"any\"\ncommand = \".bay/smoke\"\n\
                adapter = [\".bay/smoke\"]\nexpected_minimum = 1\ntimeout_s = 60\n\
                path = [\"/usr/bin\", \"/bin\"]\nstage = \"post\"\nwhen_paths = [\"src/**\"]\n";
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (
            ".bay/config.toml",
            &format!("{CONFIG}bisect_post = true\n"),
            false,
        ),
        (".bay/policy.toml", &policy(post), false),
        (".bay/check", CHECK, true),
        (".bay/smoke", &smoke(), true),
    ])
}

fn main_tip(world: &World) -> String {
    world.remote_ref("refs/heads/main").expect("main")
}

/// `smoke`'s answer on `commit`, which must be taken.
fn record(clone: &Path, commit: &str, verdict: &str) {
    let ran = smoke_answer(clone, commit, verdict);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
}

/// How many pushes the runner `name` made to its evidence notes.
fn notes_pushed(world: &World, name: &str) -> usize {
    let notes = format!("refs/notes/bay/evidence/{name}");
    if world.remote_ref(&notes).is_none() {
        return 0;
    }
    let remote = world.remote.to_string_lossy().into_owned();
    git(
        world.root.path(),
        &["--git-dir", &remote, "rev-list", "--count", &notes],
    )
    .trim()
    .parse()
    .expect("a count")
}

#[test]
fn a_runner_bisects_a_red_post_check_to_the_merge_that_broke_it() {
    let world = world();
    let ci = world.clone_as("ci");
    record(&ci, &main_tip(&world), "pass");
    // Five merges; the third breaks `smoke`, and it stays broken.
    let mut merges = Vec::new();
    for (n, (path, content)) in [
        ("src/one.txt", "one\n"),
        ("src/two.txt", "two\n"),
        ("src/greeting.txt", "BROKEN\n"),
        ("src/four.txt", "four\n"),
        ("src/five.txt", "five\n"),
    ]
    .into_iter()
    .enumerate()
    {
        let actor = format!("agent{n}");
        let clone = world.clone_as(&actor);
        let (change, view) =
            world.edited(&clone, &actor, &format!("merge {n}"), path, content, &[]);
        let merged = bay(&view, &actor, &["merge", "--wait"]);
        assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
        merges.push((main_tip(&world), change));
    }
    let (newest, _) = merges.last().cloned().expect("five merges");
    record(&ci, &newest, "product_failure");

    let status = bay(&ci, "ci", &["status"]);
    let red = &status.doc["detail"]["red"][0];
    assert_eq!(
        red["suspect"]["merges"].as_array().map(Vec::len),
        Some(5),
        "{red}"
    );
    assert!(red["culprit"].is_null(), "{red}");
    assert!(red["bisect"].is_null(), "no bisect ran yet: {red}");

    // A runner with nothing to merge bisects, until the red names its culprit.
    let rita = world.clone_as("rita");
    let ran = bay(&rita, "rita", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    let runs = notes_pushed(&world, "rita");
    // Five merges: at most log2(5), rounded up, runs and the rerun.
    assert!((2..=4).contains(&runs), "{runs} runs");

    let status = bay(&ci, "ci", &["status"]);
    let red = &status.doc["detail"]["red"][0];
    let (broke, owner) = &merges[2];
    assert_eq!(red["culprit"]["commit"], broke.as_str(), "{red}");
    assert_eq!(red["change"], owner.as_str(), "the culprit owns the red");
    assert_eq!(red["bisect"]["state"], "confirmed", "{red}");
    assert_eq!(red["suspect"]["last_pass"], merges[1].0.as_str(), "{red}");

    // Each run is post evidence on the merge it ran on, by the runner, marked as a bisect's.
    let remote = world.remote.to_string_lossy().into_owned();
    let note = git(
        world.root.path(),
        &[
            "--git-dir",
            &remote,
            "notes",
            "--ref=refs/notes/bay/evidence/rita",
            "show",
            broke,
        ],
    );
    let lines: Vec<serde_json::Value> = note
        .lines()
        .map(|line| serde_json::from_str(line).expect("a record"))
        .collect();
    assert_eq!(lines.len(), 2, "the midpoint run and the rerun: {note}");
    for line in &lines {
        assert_eq!(line["producer"], "rita");
        assert_eq!(line["verdict"], "product_failure");
        assert_eq!(line["trust"], "unsigned");
    }
    let inputs: Vec<&serde_json::Value> = lines.iter().map(|l| &l["inputs"][0][1]).collect();
    assert_eq!(
        inputs,
        [&serde_json::json!("run"), &serde_json::json!("rerun")]
    );

    // Once the culprit is named, a runner runs nothing more.
    let again = bay(&rita, "rita", &["runner", "run", "--once"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert_eq!(notes_pushed(&world, "rita"), runs);
}

#[test]
fn without_bisect_post_a_runner_leaves_the_range_as_it_is() {
    let post = "\n[[check]]\nid = \"smoke\"\nenvironment = \"any\"\ncommand = \".bay/smoke\"\n\
                adapter = [\".bay/smoke\"]\nexpected_minimum = 1\ntimeout_s = 60\n\
                path = [\"/usr/bin\", \"/bin\"]\nstage = \"post\"\n";
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy(post), false),
        (".bay/check", CHECK, true),
        (".bay/smoke", &smoke(), true),
    ]);
    let ci = world.clone_as("ci");
    record(&ci, &main_tip(&world), "pass");
    for n in 0..2 {
        let actor = format!("agent{n}");
        let clone = world.clone_as(&actor);
        let path = format!("src/n{n}.txt");
        let (_, view) = world.edited(&clone, &actor, "words", &path, "BROKEN\n", &[]);
        let merged = bay(&view, &actor, &["merge", "--wait"]);
        assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    }
    record(&ci, &main_tip(&world), "product_failure");
    let rita = world.clone_as("rita");
    let ran = bay(&rita, "rita", &["runner", "run", "--once"]);
    assert_eq!(ran.code, 0, "{ran:?}");
    assert_eq!(notes_pushed(&world, "rita"), 0);
    let status = bay(&ci, "ci", &["status"]);
    assert!(
        status.doc["detail"]["red"][0]["culprit"].is_null(),
        "{status:?}"
    );
}
