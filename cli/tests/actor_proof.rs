//! `[agent] require_actor_proof` with real Git and real keys: `bay merge` refuses
//! `ACTOR_UNPROVEN` while several actors run sessions under this account and it can read
//! their file agent key (`bay.agentKey`), before anything goes up; a hardware agent key (an
//! `sk-` type in its `.pub`) proves the actor, and the same merge goes on.

mod support;

use std::path::Path;

use support::*;

#[test]
fn a_file_agent_key_shared_by_two_actors_is_refused_and_a_hardware_one_merges() {
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
    // bob runs a session in ann's clone, under the same OS account.
    let env_file = world.root.path().join("claude-env");
    claude_hook(
        &view,
        "session.start",
        "SessionStart",
        "s-bob",
        &[
            ("CLAUDE_ENV_FILE", &env_file),
            ("BAY_ACTOR", Path::new("bob")),
        ],
    );
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

    // The fix the refusal names: a hardware agent key (bay reads only its public half).
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("the .pub");
    let data = public.split_whitespace().nth(1).expect("the key's data");
    write(
        &keys,
        "agent.pub",
        &format!("sk-ssh-ed25519@openssh.com {data} agent\n"),
    );
    let queued = bay(&view, "ann", &["merge"]);
    assert_eq!(queued.doc["decision"], "queued", "{}", queued.doc);
    assert_ne!(requests(), before, "the request went up");
}
