//! A red main with real Git: a post check runs after merging, outside bay, and its producer
//! records the answer with `bay evidence record --kind check`. A failure turns main red on the
//! check's paths: a change on those paths is refused `MAIN_RED`, naming the owner, while a
//! change elsewhere and the owner's fix merge; a later pass clears the red.

mod support;

use std::path::Path;

use support::*;

/// The standard check before merging, and `smoke` after merging on `src/`.
fn world() -> World {
    let post = "\n[[check]]\nid = \"smoke\"\nenvironment = \"any\"\ncommand = \".bay/check\"\n\
                adapter = [\".bay/check\"]\nexpected_minimum = 1\ntimeout_s = 60\n\
                path = [\"/usr/bin\", \"/bin\"]\nstage = \"post\"\nwhen_paths = [\"src/**\"]\n";
    World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        ("src/other.txt", "Other\n", false),
        ("docs/readme.md", "Read me\n", false),
        (".bay/config.toml", CONFIG, false),
        (".bay/policy.toml", &policy(post), false),
        (".bay/check", CHECK, true),
    ])
}

/// [`smoke_answer`], which must be taken.
fn record(clone: &Path, commit: &str, verdict: &str) -> Ran {
    let ran = smoke_answer(clone, commit, verdict);
    assert_eq!(ran.doc["decision"], "ok", "{ran:?}");
    ran
}

/// The owner's fix on the red paths, which merges through the red.
fn fix_of(world: &World, owner: &str) {
    let (_, fix) = merge_here(
        world,
        "dan",
        "fix the greeting",
        "src/greeting.txt",
        &["--fixes", owner],
    );
    assert_eq!(fix.doc["decision"], "merged", "{fix:?}");
}

fn main_tip(world: &World) -> String {
    world.remote_ref("refs/heads/main").expect("main")
}

/// Starts a change on `path` in a fresh clone, edits it and merges it here.
fn merge_here(
    world: &World,
    actor: &str,
    intent: &str,
    path: &str,
    extra: &[&str],
) -> (String, Ran) {
    let clone = world.clone_as(actor);
    let (change, view) = world.edited(&clone, actor, intent, path, &format!("{intent}\n"), extra);
    (change, bay(&view, actor, &["merge", "--wait"]))
}

#[test]
fn a_red_post_check_blocks_a_change_on_its_paths_and_lets_the_owners_fix_through() {
    let world = world();
    let ci = world.clone_as("ci");
    let first = main_tip(&world);
    record(&ci, &first, "pass");
    let (owner, merged) = merge_here(&world, "ann", "new greeting", "src/greeting.txt", &[]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    assert_eq!(merged.doc["detail"]["trust"], "unsigned", "{merged:?}");
    let broken = main_tip(&world);
    let recorded = record(&ci, &broken, "product_failure");
    assert_eq!(recorded.doc["detail"]["trust"], "unsigned");
    assert_eq!(
        recorded.doc["detail"]["recorded"].as_array().map(Vec::len),
        Some(1)
    );
    // The same answer again writes nothing.
    let again = record(&ci, &broken, "product_failure");
    assert_eq!(again.doc["detail"]["unchanged"], 1, "{again:?}");

    // Status says so, worked out from the window and the records.
    let status = bay(&ci, "ci", &["status"]);
    assert_eq!(
        status.doc["detail"]["red"][0]["check"], "smoke",
        "{status:?}"
    );
    assert_eq!(status.doc["detail"]["red"][0]["change"], owner.as_str());
    assert_eq!(status.doc["detail"]["red_pending"], serde_json::json!([]));
    assert_eq!(status.doc["detail"]["trust"], "unsigned");

    // An unrelated change on the red paths is refused, naming the owner and the culprit.
    let (_, refused) = merge_here(&world, "bob", "other words", "src/other.txt", &[]);
    assert_eq!(refused.doc["reason"], "MAIN_RED", "{refused:?}");
    assert_eq!(refused.code, 10);
    assert_eq!(refused.doc["detail"]["owners"], serde_json::json!([owner]));
    let red = &refused.doc["detail"]["red"][0];
    assert_eq!(red["check"], "smoke");
    assert_eq!(red["merge"], broken.as_str());
    assert_eq!(red["culprit"]["commit"], broken.as_str(), "{red}");
    assert_eq!(red["suspect"]["last_pass"], first.as_str());
    assert_eq!(main_tip(&world), broken, "nothing merged");

    // A change off the red paths merges.
    let (_, docs) = merge_here(&world, "carol", "docs words", "docs/readme.md", &[]);
    assert_eq!(docs.doc["decision"], "merged", "{docs:?}");

    // The owner's fix merges through the red.
    fix_of(&world, &owner);

    // A pass on a newer merge turns main green, and the refused change goes in.
    record(&ci, &main_tip(&world), "pass");
    let (_, later) = merge_here(&world, "erin", "more words", "src/other.txt", &[]);
    assert_eq!(later.doc["decision"], "merged", "{later:?}");
}

#[test]
fn an_unanswered_post_check_refuses_nothing_and_a_record_without_a_verdict_answers_nothing() {
    let world = world();
    let ci = world.clone_as("ci");
    let (_, merged) = merge_here(&world, "ann", "new greeting", "src/greeting.txt", &[]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    record(&ci, &main_tip(&world), "unknown");
    let status = bay(&ci, "ci", &["status"]);
    assert_eq!(
        status.doc["detail"]["red"],
        serde_json::json!([]),
        "{status:?}"
    );
    assert_eq!(
        status.doc["detail"]["red_pending"][0],
        serde_json::json!({ "check": "smoke", "environment": "any", "state": "pending" })
    );
    let (_, next) = merge_here(&world, "bob", "other words", "src/other.txt", &[]);
    assert_eq!(
        next.doc["decision"], "merged",
        "pending is never red: {next:?}"
    );
}

#[test]
fn a_record_that_differs_under_one_id_is_refused_and_other_kinds_need_keys() {
    let world = world();
    let ci = world.clone_as("ci");
    let tip = main_tip(&world);
    record(&ci, &tip, "pass");
    let differs = smoke_answer(&ci, &tip, "product_failure");
    assert_eq!(differs.doc["decision"], "failed", "{differs:?}");
    assert!(
        differs.doc["detail"]["why"]
            .as_str()
            .unwrap_or("")
            .contains("--version")
    );
    let review = bay(
        &ci,
        "ci",
        &[
            "evidence",
            "record",
            "--kind",
            "review",
            "--verdict",
            "pass",
            "--commit",
            &tip,
        ],
    );
    assert_eq!(review.doc["decision"], "failed", "{review:?}");
    assert_eq!(review.code, 20);
}

/// `bay status --since` lists `main_red` when a post check turns main red after the cursor,
/// and `main_red_cleared` once it clears; each event is a `bay.event/1`.
#[test]
fn status_since_lists_main_red_and_main_red_cleared_after_the_cursor() {
    let world = world();
    let ci = world.clone_as("ci");
    let since = |cursor: Option<&str>| {
        let mut args = vec!["status", "--since"];
        args.extend(cursor);
        let ran = bay(&ci, "ci", &args);
        assert_eq!(ran.code, 0, "{ran:?}");
        ran
    };
    let start = since(None);
    let cursor = start.doc["detail"]["cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    assert_eq!(
        start.doc["detail"]["red_pending"][0]["check"], "smoke",
        "{start:?}"
    );

    let (owner, merged) = merge_here(&world, "ann", "new greeting", "src/greeting.txt", &[]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");
    record(&ci, &main_tip(&world), "product_failure");
    let turned = since(Some(&cursor));
    let red_events = |ran: &Ran, kind: &str| -> Vec<serde_json::Value> {
        ran.doc["detail"]["events"]
            .as_array()
            .expect("events")
            .iter()
            .filter(|event| event["kind"] == kind)
            .cloned()
            .collect()
    };
    let red = red_events(&turned, "main_red");
    assert_eq!(red.len(), 1, "{turned:?}");
    assert_eq!(red[0]["check"], "smoke");
    assert_eq!(red[0]["change"], owner.as_str());
    let schema: serde_json::Value =
        serde_json::from_str(bay_core::schema::EVENT).expect("the schema is JSON");
    schema_errors(&schema, &red[0]).expect("a bay.event/1");
    // The same red again is no news.
    let cursor = turned.doc["detail"]["cursor"]
        .as_str()
        .expect("a cursor")
        .to_owned();
    let quiet = since(Some(&cursor));
    assert!(red_events(&quiet, "main_red").is_empty(), "{quiet:?}");

    fix_of(&world, &owner);
    record(&ci, &main_tip(&world), "pass");
    let cleared = since(Some(&cursor));
    let gone = red_events(&cleared, "main_red_cleared");
    assert_eq!(gone.len(), 1, "{cleared:?}");
    assert_eq!(gone[0]["check"], "smoke");
    schema_errors(&schema, &gone[0]).expect("a bay.event/1");
}
