//! `[locks]` against real Git: two clones, two Claude Code sessions, one lockable file, fed
//! through the entries `bay install` wrote, run by `sh -c` as the product runs them.

mod support;

use std::path::PathBuf;
use std::process::Output;

use serde_json::{Value, json};
use support::home::*;
use support::*;

const LOGO: &str = "art/logo.png";

/// One clone with bay's hooks installed, and the session an agent runs in it.
struct Agent {
    clone: PathBuf,
    actor: &'static str,
    session: &'static str,
    settings: Value,
}

impl Agent {
    fn new(world: &World, home: &Home, actor: &'static str, session: &'static str) -> Agent {
        let clone = world.clone_as(actor);
        Agent {
            settings: home.installed(&clone, ".claude/settings.json"),
            clone,
            actor,
            session,
        }
    }

    /// Runs the entry for `event` with `payload` (plus this session and tree) on stdin.
    fn hook(&self, home: &Home, event: &str, mut payload: Value) -> Output {
        let command = commands(&self.settings, event)
            .pop()
            .unwrap_or_else(|| panic!("no entry for {event}"));
        payload["session_id"] = json!(self.session);
        payload["cwd"] = json!(self.clone.display().to_string());
        payload["hook_event_name"] = json!(event);
        home.run_entry(&command, &self.clone, self.actor, &payload.to_string())
    }

    fn edit(&self, home: &Home, path: &str) -> Output {
        let file = self.clone.join(path).display().to_string();
        let payload = json!({
            "permission_mode": "acceptEdits",
            "tool_name": "Edit",
            "tool_input": {"file_path": file, "old_string": "x", "new_string": "y"},
        });
        self.hook(home, "PreToolUse", payload)
    }

    fn stop(&self, home: &Home) -> Output {
        self.hook(home, "Stop", json!({"stop_hook_active": false}))
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A world whose agents use Claude Code and whose policy locks `art/`, holding `files` too.
fn world(files: &[(&str, &str, bool)]) -> World {
    let config = format!("{CONFIG}\n[agent]\nproduct = \"claude\"\n");
    let policy = policy("\n[locks]\npaths = [\"art/\"]\n");
    let mut all = vec![
        ("src/greeting.txt", "Hello\n", false),
        (".bay/config.toml", config.as_str(), false),
        (".bay/policy.toml", policy.as_str(), false),
        (".bay/check", CHECK, true),
    ];
    all.extend_from_slice(files);
    World::new(&all)
}

/// The remote's lock refs, by name, with the session each names.
fn locks(world: &World) -> Vec<(String, String)> {
    git_dir(
        &world.remote,
        &["for-each-ref", "--format=%(refname)", "refs/bay/locks/"],
    )
    .lines()
    .map(|name| {
        let message = git_dir(&world.remote, &["log", "-1", "--format=%B", name]);
        let (_, body) = message.split_once("\n\n").expect("a body");
        let lock: Value = serde_json::from_str(body.trim()).expect("a lock");
        (
            name.to_owned(),
            lock["session"].as_str().unwrap_or_default().to_owned(),
        )
    })
    .collect()
}

/// Writes, straight into the remote, a lock of `name` held by a session of another machine,
/// last renewed at `renewed_at` (milliseconds, on that machine's clock).
fn plant_lock(world: &World, name: &str, renewed_at: u64) {
    let lock = json!({
        "schema": "bay.lock/1", "path": LOGO, "session": "ghost", "actor": "gone",
        "machine": "far", "taken_at": renewed_at, "renewed_at": renewed_at,
    });
    let commit = world.record_commit(&[], &format!("bay: lock {LOGO}\n\n{lock}"));
    git_dir(&world.remote, &["update-ref", name, &commit]);
}

fn code(out: &Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn of_two_clones_exactly_one_edits_a_locked_file_until_its_turn_ends() {
    let world = world(&[(LOGO, "png\n", false)]);
    let home = Home::new();
    let ann = Agent::new(&world, &home, "ann", "ann-session-1");
    let bob = Agent::new(&world, &home, "bob", "bob-session-1");

    let taken = ann.edit(&home, LOGO);
    assert_eq!(code(&taken), Some(0), "{taken:?}");
    let held = locks(&world);
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0].1, ann.session);
    let name = held[0].0.clone();

    let refused = bob.edit(&home, LOGO);
    assert_eq!(code(&refused), Some(2), "{refused:?}");
    let why = stderr(&refused);
    assert!(why.contains("PATH_HELD"), "{why}");
    assert!(
        why.contains(ann.session) && why.contains(r#""actor":"ann""#) && why.contains("age_s"),
        "the refusal names the holder's agent, session and age: {why}"
    );
    let own = ann.edit(&home, LOGO);
    assert_eq!(code(&own), Some(0), "the holder's own edit: {own:?}");
    let free = bob.edit(&home, "src/greeting.txt");
    assert_eq!(code(&free), Some(0), "a path no lock names: {free:?}");

    let stopped = ann.stop(&home);
    assert_eq!(code(&stopped), Some(0), "{stopped:?}");
    assert!(locks(&world).is_empty(), "the turn's end ends the lock");
    let next = bob.edit(&home, LOGO);
    assert_eq!(code(&next), Some(0), "{next:?}");
    assert_eq!(locks(&world), [(name.clone(), bob.session.to_owned())]);

    // A lock renewed just now, by another machine's clock, holds.
    plant_lock(&world, &name, u64::MAX / 2);
    let live = ann.edit(&home, LOGO);
    assert_eq!(code(&live), Some(2), "{live:?}");
    assert!(stderr(&live).contains("ghost"), "{live:?}");
    // One no step renewed within the takeover window goes to the next edit.
    plant_lock(&world, &name, 1_000_000);
    let over = ann.edit(&home, LOGO);
    assert_eq!(code(&over), Some(0), "{over:?}");
    assert_eq!(locks(&world), [(name, ann.session.to_owned())]);

    // Both at once on a free lock: exactly one edits, the other meets its lock.
    assert_eq!(code(&ann.stop(&home)), Some(0));
    for _ in 0..3 {
        let (a, b) = std::thread::scope(|scope| {
            let a = scope.spawn(|| ann.edit(&home, LOGO));
            let b = scope.spawn(|| bob.edit(&home, LOGO));
            (a.join().expect("ann"), b.join().expect("bob"))
        });
        let mut codes = [code(&a), code(&b)];
        codes.sort();
        assert_eq!(codes, [Some(0), Some(2)], "{a:?} {b:?}");
        let loser = if code(&a) == Some(2) { &a } else { &b };
        assert!(stderr(loser).contains("PATH_HELD"), "{loser:?}");
        let winner = if code(&a) == Some(0) { &ann } else { &bob };
        assert_eq!(code(&winner.stop(&home)), Some(0));
        assert!(locks(&world).is_empty());
    }
}

#[test]
fn without_an_answer_from_the_remote_only_a_lockable_edit_is_refused() {
    let world = world(&[]);
    let home = Home::new();
    let ann = Agent::new(&world, &home, "ann", "ann-session-1");
    let gone = world.root.path().join("gone.git");
    git(
        &ann.clone,
        &["remote", "set-url", "origin", &gone.display().to_string()],
    );
    let refused = ann.edit(&home, LOGO);
    assert_eq!(code(&refused), Some(2), "{refused:?}");
    assert!(
        stderr(&refused).contains("REMOTE_UNREACHABLE"),
        "{refused:?}"
    );
    let free = ann.edit(&home, "src/greeting.txt");
    assert_eq!(code(&free), Some(0), "{free:?}");
}

#[test]
fn the_hook_reads_locks_from_main_as_bay_last_fetched_it() {
    // Main locks nothing when ann's clone is made and installed.
    let config = format!("{CONFIG}\n[agent]\nproduct = \"claude\"\n");
    let world = World::new(&[
        ("src/greeting.txt", "Hello\n", false),
        (LOGO, "png\n", false),
        (".bay/config.toml", config.as_str(), false),
        (".bay/policy.toml", policy("").as_str(), false),
        (".bay/check", CHECK, true),
    ]);
    let home = Home::new();
    let ann = Agent::new(&world, &home, "ann", "ann-session-1");
    // A maintainer locks `art/` on main.
    let admin = world.clone_as("maintainer");
    write(
        &admin,
        ".bay/policy.toml",
        &policy("\n[locks]\npaths = [\"art/\"]\n"),
    );
    git(&admin, &["commit", "-qam", "lock art/"]);
    git(&admin, &["push", "-q", "origin", "HEAD:main"]);
    // ann's clone hears of it through bay's own fetch, which leaves `refs/remotes` alone.
    let before = git(&ann.clone, &["rev-parse", "refs/remotes/origin/main"]);
    let status = bay(&ann.clone, "ann", &["status"]);
    assert_eq!(status.code, 0, "{status:?}");
    assert_eq!(
        git(&ann.clone, &["rev-parse", "refs/remotes/origin/main"]),
        before,
        "bay's fetch moved only its mirror"
    );
    let edited = ann.edit(&home, LOGO);
    assert_eq!(code(&edited), Some(0), "{}", stderr(&edited));
    assert_eq!(
        locks(&world).len(),
        1,
        "the edit took the lock main now asks for"
    );
}
