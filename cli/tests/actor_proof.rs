//! `[agent] require_actor_proof` with real Git and real keys: `bay merge` refuses
//! `ACTOR_UNPROVEN` while several actors run sessions under this account and it can read
//! their file agent key (`bay.agentKey`), before anything goes up; a hardware agent key (an
//! `sk-` type in its `.pub`) proves the actor, and the same merge goes on. `bay doctor`'s
//! `key-custody` row shows the same judgement: `degraded` with `actor_refusal`, then green.

mod support;

use std::path::Path;

use support::*;

#[test]
fn a_file_agent_key_shared_by_two_actors_is_refused_and_a_hardware_one_merges() {
    // The `key-custody` row of `bay doctor` in the view, as ann.
    let custody_row = |view: &Path| {
        let ran = bay(view, "ann", &["doctor"]);
        let row = ran.doc["detail"]["rows"]
            .as_array()
            .and_then(|rows| rows.iter().find(|row| row["name"] == "key-custody"))
            .cloned()
            .unwrap_or_else(|| panic!("no key-custody row: {ran:?}"));
        (row, ran.doc["detail"]["red"].clone())
    };
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", CONFIG, false),
        (
            ".bay/policy.toml",
            &policy("\n[agent]\nrequire_actor_proof = true\n"),
            false,
        ),
        (".bay/check", CHECK, true),
    ]);
    let ann = world.clone_as("ann");
    let (change, view) = world.edited(&ann, "ann", "greet", "src/greeting.txt", "Hi\n", &[]);
    // ann runs a session in her clone, and bob one too, under the same OS account.
    let env_file = world.root.path().join("claude-env");
    let session = |id: &str, actor: &str| {
        claude_hook(
            &view,
            "session.start",
            "SessionStart",
            id,
            &[
                ("CLAUDE_ENV_FILE", &env_file),
                ("BAY_ACTOR", Path::new(actor)),
            ],
        )
    };
    session("s-ann", "ann");
    // With ann's sessions alone, one actor: the key proves who signed, and doctor says so
    // whoever runs it (a person running `bay doctor` is no second actor).
    let (row, _) = custody_row(&view);
    assert_eq!(row["actors"], serde_json::json!(["ann"]), "{row}");
    let ran = bay(&view, "dana", &["doctor"]);
    let row = ran.doc["detail"]["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == "key-custody"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(row["actors"], serde_json::json!(["ann"]), "{row}");
    session("s-bob", "bob");
    let keys = world.root.path().join("keys");
    std::fs::create_dir_all(&keys).expect("a key folder");
    let key = keygen(&keys, "agent");
    let key_text = key.to_str().expect("a UTF-8 path");
    git(&ann, &["config", "bay.agentKey", key_text]);

    // The refs a merge request moves: every ref but this machine's live summary, which any
    // command may refresh.
    let requests = || {
        git_dir(&world.remote, &["for-each-ref"])
            .lines()
            .filter(|line| !line.contains("\trefs/bay/live/"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let before = requests();
    let refused = bay(&view, "ann", &["merge"]);
    assert_eq!(refused.code, 10, "{}", refused.doc);
    assert_eq!(refused.doc["reason"], "ACTOR_UNPROVEN", "{}", refused.doc);
    assert_eq!(refused.doc["change"], change.as_str());
    let detail = &refused.doc["detail"];
    assert_eq!(detail["actor_proof"], "account", "{detail}");
    assert_eq!(detail["actors"], serde_json::json!(["ann", "bob"]));
    assert_eq!(detail["key"], key_text);
    assert_eq!(requests(), before, "nothing went up");

    // Doctor shows why: the row is degraded, not red, and names the refusal and the fix.
    let (row, red) = custody_row(&view);
    assert_eq!(row["state"], "degraded", "{row}");
    assert_eq!(row["actor_proof"], "account", "{row}");
    assert_eq!(row["actors"], serde_json::json!(["ann", "bob"]));
    assert_eq!(row["require_actor_proof"], true, "{row}");
    assert_eq!(row["actor_refusal"], "ACTOR_UNPROVEN", "{row}");
    assert_eq!(row["agent_key"]["path"], key_text, "{row}");
    let note = row["actor_note"].as_str().unwrap_or_default();
    assert!(
        note.contains("own OS account") && note.contains("hardware agent key"),
        "{row}"
    );
    assert_eq!(row["fix"], note, "{row}");
    assert!(
        !red.as_array()
            .is_some_and(|red| red.iter().any(|name| name == "key-custody")),
        "{red}"
    );

    // The fix the refusal names: a hardware agent key (bay reads only its public half).
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("the .pub");
    let data = public.split_whitespace().nth(1).expect("the key's data");
    write(
        &keys,
        "agent.pub",
        &format!("sk-ssh-ed25519@openssh.com {data} agent\n"),
    );
    let (row, _) = custody_row(&view);
    assert_eq!(row["state"], "green", "{row}");
    assert_eq!(row["actor_proof"], "key", "{row}");
    assert_eq!(row["agent_key"]["hardware"], true, "{row}");
    assert!(row.get("actor_refusal").is_none(), "{row}");
    assert!(row.get("actor_note").is_none(), "{row}");
    let queued = bay(&view, "ann", &["merge"]);
    assert_eq!(queued.doc["decision"], "queued", "{}", queued.doc);
    assert_ne!(requests(), before, "the request went up");
}
