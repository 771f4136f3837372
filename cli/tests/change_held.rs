//! `CHANGE_HELD` with real Git: two live sessions with one actor name cannot share a change.
//! A session becomes live in a view through `bay hook` (the product's `SessionStart` payload
//! on stdin), and a second `bay start` of that change by the same name is refused, naming the
//! session and the machine, until the session ends. The caller's own session, named by
//! `BAY_SESSION` or, without one, by running inside the view, is never refused.

mod support;

use std::path::Path;
use std::process::Command;

use support::*;

/// Feeds `bay hook <moment>` the Claude Code payload of `event` for `session` in `tree`, with
/// the session's environment file, as Claude Code runs its hooks.
fn hook(tree: &Path, moment: &str, event: &str, session: &str, env_file: &Path) {
    claude_hook(
        tree,
        moment,
        event,
        session,
        &[("CLAUDE_ENV_FILE", env_file)],
    );
}

fn start(dir: &Path, actor: &str, words: &str, session: Option<&str>) -> Ran {
    let env: Vec<(&str, &str)> = session.map(|s| ("BAY_SESSION", s)).into_iter().collect();
    bay_with(dir, actor, &["start", words, "--paths", "src/"], &env)
}

#[test]
fn a_second_live_session_of_one_name_cannot_pick_up_the_change() {
    let world = World::with_runner("takeover_s = 600\n");
    let ann = world.clone_as("ann");
    let first = start(&ann, "ann", "greet", None);
    assert_eq!(first.code, 0, "{}", first.doc);
    let change = first.doc["change"].as_str().expect("a change").to_owned();
    let view = std::path::PathBuf::from(first.doc["detail"]["view"].as_str().expect("a view"));
    let env_file = world.root.path().join("claude-env");
    hook(&view, "session.start", "SessionStart", "s1", &env_file);
    assert_eq!(
        std::fs::read_to_string(&env_file).expect("the session's environment file"),
        "export BAY_SESSION=s1\n",
        "the session is named to its shell commands"
    );
    let tip = world.remote_ref(&format!("refs/bay/changes/{change}"));

    // From the main checkout, with no session or another one: the view's session holds it.
    for own in [None, Some("s2")] {
        let second = start(&ann, "ann", "greet", own);
        assert_eq!(second.code, 10, "{}", second.doc);
        assert_eq!(second.doc["reason"], "CHANGE_HELD", "{}", second.doc);
        assert_eq!(second.doc["change"], change.as_str());
        let holder = &second.doc["detail"]["holder"];
        assert_eq!(holder["session"], "s1", "{}", second.doc);
        assert_eq!(holder["actor"], "ann");
        assert!(!holder["machine"].as_str().unwrap_or_default().is_empty());
        assert_eq!(second.doc["detail"]["takeover_s"], 600);
    }
    // Inside the view, with another session's id, too.
    let inside = start(&view, "ann", &change, Some("s2"));
    assert_eq!(inside.doc["reason"], "CHANGE_HELD", "{}", inside.doc);
    assert_eq!(
        world.remote_ref(&format!("refs/bay/changes/{change}")),
        tip,
        "a refused start writes nothing"
    );

    // The holder itself: by its id, as its shell commands get it from the environment file
    // Claude Code runs before each, or inside its view with no id to tell it apart.
    let mut sourced = Command::new("sh");
    sourced
        .current_dir(&ann)
        .arg("-c")
        .arg(format!(
            ". \"$1\" && exec {BAY} --json start greet --paths src/"
        ))
        .arg("sh")
        .arg(&env_file)
        .env("BAY_ACTOR", "ann")
        .env_remove("BAY_SESSION");
    let own = held(&mut sourced, &["start"]);
    assert_eq!(
        (own.code, own.doc["change"].clone()),
        (0, change.as_str().into()),
        "{}",
        own.doc
    );
    let here = start(&view, "ann", &change, None);
    assert_eq!(here.code, 0, "{}", here.doc);

    // Another name meets the change's actor, not the session.
    let bob = start(&ann, "bob", "greet", None);
    assert_eq!(bob.doc["reason"], "CHANGE_SUPERSEDED", "{}", bob.doc);

    // Once the session ends, the same name picks the change up from anywhere.
    hook(&view, "session.end", "SessionEnd", "s1", &env_file);
    let after = start(&ann, "ann", "greet", Some("s2"));
    assert_eq!(after.code, 0, "{}", after.doc);
    assert_eq!(after.doc["change"], change.as_str());
}
