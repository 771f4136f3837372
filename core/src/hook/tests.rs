//! `decide` on the payloads both products send (`cli/tests/fixtures/hooks/`).

use super::*;
use crate::config::HookSettings;
use serde_json::json;

const TREE: &str = "/work/repo/.git/bay/views/c7k2m4qa";

/// A fixture with the tree put in.
fn fixture(name: &str) -> Vec<u8> {
    let text = match name {
        "claude/SessionStart" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/SessionStart.json")
        }
        "claude/PreToolUse-Bash" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/PreToolUse-Bash.json")
        }
        "claude/PreToolUse-Bash-allowed" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/PreToolUse-Bash-allowed.json")
        }
        "claude/PreToolUse-Edit" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/PreToolUse-Edit.json")
        }
        "claude/PreToolUse-Write" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/PreToolUse-Write.json")
        }
        "claude/PostToolBatch" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/PostToolBatch.json")
        }
        "claude/Stop" => include_str!("../../../cli/tests/fixtures/hooks/claude/Stop.json"),
        "claude/Stop-active" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/Stop-active.json")
        }
        "claude/UserPromptSubmit" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/UserPromptSubmit.json")
        }
        "codex/UserPromptSubmit" => {
            include_str!("../../../cli/tests/fixtures/hooks/codex/UserPromptSubmit.json")
        }
        "claude/SessionEnd" => {
            include_str!("../../../cli/tests/fixtures/hooks/claude/SessionEnd.json")
        }
        "codex/PreToolUse-Bash" => {
            include_str!("../../../cli/tests/fixtures/hooks/codex/PreToolUse-Bash.json")
        }
        "codex/PreToolUse-apply_patch" => {
            include_str!("../../../cli/tests/fixtures/hooks/codex/PreToolUse-apply_patch.json")
        }
        "codex/PostToolUse" => {
            include_str!("../../../cli/tests/fixtures/hooks/codex/PostToolUse.json")
        }
        "codex/Stop" => include_str!("../../../cli/tests/fixtures/hooks/codex/Stop.json"),
        other => panic!("no fixture {other}"),
    };
    text.replace("$TREE", TREE).into_bytes()
}

fn facts(product: Product) -> Facts {
    Facts {
        now: Timestamp::from_secs(10_000),
        product,
        actor: "ada".into(),
        actor_source: ActorSource::Env,
        main: Some("main".into()),
        tree: TREE.into(),
        view: Some(ChangeId::parse("c7k2m4qa").expect("an id")),
        session: None,
        others: Vec::new(),
        hooks: HookSettings::default(),
        unsaved: Vec::new(),
        start: None,
        locks: None,
        notices: None,
    }
}

fn run(moment: &str, name: &str, facts: &Facts) -> Outcome {
    decide(moment, Payload::parse(&fixture(name)), facts)
}

fn detail(answer: &Answer) -> serde_json::Value {
    let line = answer
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("detail: "))
        .expect("a detail line");
    serde_json::from_str(line).expect("JSON")
}

#[test]
fn a_force_push_is_denied_in_both_products_and_recorded_by_shape_alone() {
    for (product, name) in [
        (Product::Claude, "claude/PreToolUse-Bash"),
        (Product::Codex, "codex/PreToolUse-Bash"),
    ] {
        let outcome = run("tool.before", name, &facts(product));
        assert_eq!(outcome.answer.exit, 2, "{name}");
        assert!(outcome.answer.stderr.contains("SHELL_DENIED"), "{name}");
        // The shape's own next step, said once, on the `next:` line.
        let next = crate::shell::Shape::PushForce.next_step();
        assert_eq!(outcome.answer.stderr.matches(next).count(), 1, "{name}");
        assert!(
            outcome.answer.stderr.contains(&format!("next: {next}")),
            "{}",
            outcome.answer.stderr
        );
        assert_eq!(outcome.row.verdict, "blocked(SHELL_DENIED)");
        let row = serde_json::to_string(&outcome.row).expect("a row");
        assert!(!row.contains("git "), "no command text: {row}");
        assert!(outcome.row.shape.is_some());
        assert!(!outcome.checkpoint, "tool.before never checkpoints");
    }
    let bypass = run(
        "tool.before",
        "claude/PreToolUse-Bash",
        &facts(Product::Claude),
    );
    assert_eq!(
        bypass.row.permission_mode.as_deref(),
        Some("bypassPermissions")
    );
    assert_eq!(bypass.row.actor_source, ActorSource::Env);
}

#[test]
fn an_allowed_command_and_a_free_edit_say_nothing() {
    for name in [
        "claude/PreToolUse-Bash-allowed",
        "claude/PreToolUse-Edit",
        "codex/PreToolUse-apply_patch",
    ] {
        let outcome = run("tool.before", name, &facts(Product::Claude));
        assert_eq!(outcome.answer, Answer::quiet(), "{name}");
        assert_eq!(outcome.row.verdict, "ok");
    }
}

#[test]
fn an_edit_of_a_path_another_live_session_of_the_tree_wrote_is_held() {
    let mut other = Session::begin("other", TREE, "grace", Timestamp::from_secs(9_990));
    other.written.insert("src/a.txt".into());
    let mut held = facts(Product::Claude);
    held.others = vec![other.clone()];
    for name in ["claude/PreToolUse-Write", "codex/PreToolUse-apply_patch"] {
        let outcome = run("tool.before", name, &held);
        assert_eq!(outcome.row.verdict, "blocked(PATH_HELD)", "{name}");
        let detail = detail(&outcome.answer);
        assert_eq!(detail["holder"]["actor"], "grace");
        assert_eq!(detail["path"], "src/a.txt");
    }
    let mut elsewhere = held.clone();
    elsewhere.others[0].tree = "/work/repo".into();
    assert_eq!(
        run("tool.before", "claude/PreToolUse-Write", &elsewhere)
            .answer
            .exit,
        0,
        "another tree"
    );
    let mut ended = held.clone();
    ended.others[0].ended = true;
    assert_eq!(
        run("tool.before", "claude/PreToolUse-Write", &ended)
            .answer
            .exit,
        0,
        "ended"
    );
    let mut quiet = held;
    quiet.now = Timestamp::from_secs(9_990).plus_millis(session::HOLD_WINDOW_MS);
    assert_eq!(
        run("tool.before", "claude/PreToolUse-Write", &quiet)
            .answer
            .exit,
        0,
        "gone quiet"
    );
}

#[test]
fn what_cannot_be_judged_is_denied_when_it_may_be_a_tool_call() {
    let claude = facts(Product::Claude);
    let unread = decide("tool.before", Payload::parse(b"{not json"), &claude);
    assert_eq!(unread.answer.exit, 2);
    assert_eq!(detail(&unread.answer)["misnamed"], false);
    let unknown = decide("tool.after", Payload::parse(b"{not json"), &claude);
    assert_eq!(unknown.row.verdict, "blocked(HOOK_INPUT_INVALID)");
    let no_tool = decide(
        "tool.before",
        Payload::parse(br#"{"hook_event_name":"PreToolUse"}"#),
        &claude,
    );
    assert_eq!(no_tool.answer.exit, 2);
    let odd_tool = decide(
        "tool.before",
        Payload::parse(br#"{"hook_event_name":"PreToolUse","tool_name":5}"#),
        &claude,
    );
    assert_eq!(
        odd_tool.answer.exit, 2,
        "a tool_name that is no text is no tool"
    );
    assert_eq!(odd_tool.row.verdict, "blocked(HOOK_INPUT_INVALID)");
    let no_command = decide(
        "tool.before",
        Payload::parse(br#"{"tool_name":"Bash","tool_input":{"cmd":"ls"}}"#),
        &claude,
    );
    assert_eq!(no_command.answer.exit, 2);
    let quiet_event = decide("step.end", Payload::parse(b"[]"), &claude);
    assert_eq!(quiet_event.answer.exit, 0, "a step never blocks");
    assert_eq!(quiet_event.row.verdict, "noted(HOOK_INPUT_INVALID)");
}

#[test]
fn a_tool_call_under_another_or_an_unknown_moment_is_denied_misnamed() {
    let claude = facts(Product::Claude);
    for moment in ["step.end", "tool.after", "PreToolUse"] {
        let outcome = run(moment, "claude/PreToolUse-Bash-allowed", &claude);
        assert_eq!(outcome.answer.exit, 2, "{moment}");
        assert_eq!(detail(&outcome.answer)["misnamed"], true, "{moment}");
        assert!(outcome.answer.stderr.contains("HOOK_INPUT_INVALID"));
    }
    let stop_as_step = run("step.end", "claude/Stop", &claude);
    assert_eq!(
        stop_as_step.answer.exit, 0,
        "a stop never blocks for a name"
    );
    assert_eq!(stop_as_step.row.verdict, "noted(HOOK_INPUT_INVALID)");
}

#[test]
fn a_step_records_the_files_it_wrote_and_the_session_holds_them() {
    let claude = run("step.end", "claude/PostToolBatch", &facts(Product::Claude));
    assert_eq!(claude.row.written, ["src/a.txt"], "the Read is not a write");
    assert!(claude.session.written.contains("src/a.txt"));
    let codex = run("step.end", "codex/PostToolUse", &facts(Product::Codex));
    assert_eq!(codex.row.written, ["src/a.txt"]);
}

#[test]
fn a_stop_with_unsaved_edits_asks_once_to_merge() {
    let mut unsaved = facts(Product::Claude);
    unsaved.unsaved = vec!["src/a.txt".into()];
    let asked = run("turn.end", "claude/Stop", &unsaved);
    let said: serde_json::Value = serde_json::from_str(&asked.answer.stdout).expect("JSON");
    assert_eq!(said["decision"], "block");
    assert!(
        said["reason"]
            .as_str()
            .is_some_and(|r| r.contains("bay merge"))
    );
    assert_eq!(asked.row.verdict, "asked");
    let again = run("turn.end", "claude/Stop-active", &unsaved);
    assert_eq!(again.answer, Answer::quiet(), "stop_hook_active: only once");
    assert_eq!(
        run("turn.end", "claude/Stop", &facts(Product::Claude)).answer,
        Answer::quiet()
    );
    unsaved.product = Product::Codex;
    let codex = run("turn.end", "codex/Stop", &unsaved);
    assert_eq!((codex.answer.exit, codex.answer.stdout.as_str()), (0, ""));
    assert!(codex.answer.stderr.contains("bay merge"));
}

#[test]
fn checkpoints_come_at_session_end_and_after_the_idle_interval_but_never_before_a_tool() {
    let mut idle = facts(Product::Claude);
    let mut session = Session::begin(
        "3f1c2a9e-0d4b-4c52-9a7e-1b2c3d4e5f60",
        TREE,
        "ada",
        Timestamp::from_secs(9_000),
    );
    idle.session = Some(session.clone());
    assert!(
        run("step.end", "claude/PostToolBatch", &idle).checkpoint,
        "1000 s idle"
    );
    assert!(!run("tool.before", "claude/PreToolUse-Edit", &idle).checkpoint);
    session.checkpoint_at = Timestamp::from_secs(9_500);
    idle.session = Some(session);
    assert!(
        !run("step.end", "claude/PostToolBatch", &idle).checkpoint,
        "500 s idle"
    );
    let end = run("session.end", "claude/SessionEnd", &idle);
    assert!(end.checkpoint && end.session.ended);
    let mut no_view = idle;
    no_view.view = None;
    assert!(!run("session.end", "claude/SessionEnd", &no_view).checkpoint);
}

#[test]
fn a_checkpoint_kept_anywhere_counts_and_one_that_saved_nothing_is_asked_again() {
    let mut idle = facts(Product::Claude);
    let session = Session::begin(
        "3f1c2a9e-0d4b-4c52-9a7e-1b2c3d4e5f60",
        TREE,
        "ada",
        Timestamp::from_secs(9_000),
    );
    idle.session = Some(session);
    let due = run("step.end", "claude/PostToolBatch", &idle);
    assert!(due.checkpoint);
    let local = Saved::Local {
        code: Some(ReasonCode::RemoteUnreachable),
        why: "no answer".into(),
    };
    for (saved, kept) in [(Saved::Chain, true), (local, true)] {
        let mut outcome = due.clone();
        outcome.checkpointed(saved.clone());
        assert_eq!(outcome.row.saved, Some(saved));
        assert_eq!(outcome.session.checkpoint_at == idle.now, kept);
    }
    let mut failed = due.clone();
    failed.checkpointed(Saved::Failed {
        why: "no index".into(),
    });
    assert_eq!(failed.session.checkpoint_at, Timestamp::from_secs(9_000));
    let row = serde_json::to_value(&failed.row).expect("a row");
    assert_eq!(row["saved"]["to"], "failed", "{row}");
}

#[test]
fn session_start_names_the_change_its_overlaps_and_changed_instructions_once() {
    let mut start = facts(Product::Claude);
    start.start = Some(StartFacts {
        declared: vec!["src/".into()],
        overlapping: vec![(
            ChangeId::parse("d7m3n5rq").expect("an id"),
            vec!["src/a.txt".into()],
        )],
        main_commit: Some("abc1234".into()),
        instructions_changed: vec!["AGENTS.md".into()],
    });
    let first = run("session.start", "claude/SessionStart", &start);
    let said: serde_json::Value = serde_json::from_str(&first.answer.stdout).expect("JSON");
    let context = said["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context");
    assert!(
        context.contains("c7k2m4qa") && context.contains("src/"),
        "{context}"
    );
    assert!(
        context.contains("d7m3n5rq") && context.contains("AGENTS.md"),
        "{context}"
    );
    start.session = Some(first.session);
    let second = run("session.start", "claude/SessionStart", &start);
    assert!(
        !second.answer.stdout.contains("AGENTS.md"),
        "once per main commit"
    );
}

/// Facts with `src/a.txt` lockable, its lock read as `read`.
fn locked(read: Result<Vec<(String, lock::Read)>, String>) -> Facts {
    Facts {
        locks: Some(LockFacts {
            machine: "box".into(),
            takeover_ms: 120_000,
            read,
        }),
        ..facts(Product::Claude)
    }
}

fn lock_of(session: &str) -> lock::Read {
    lock::Read::Present {
        oid: crate::git::Oid::parse(&"b".repeat(40)).expect("an id"),
        lock: Ok(lock::Lock {
            schema: lock::LOCK_SCHEMA.into(),
            path: "src/a.txt".into(),
            session: session.into(),
            actor: "grace".into(),
            machine: "other".into(),
            taken_at: Timestamp::from_secs(9_900),
            renewed_at: Timestamp::from_secs(9_990),
        }),
    }
}

#[test]
fn only_an_edit_of_a_path_the_policy_names_is_lockable() {
    let globs = vec!["src/*.txt".to_owned()];
    let edit = Payload::parse(&fixture("claude/PreToolUse-Edit")).expect("a payload");
    assert_eq!(lockable(&edit, TREE, &globs), ["src/a.txt"]);
    assert!(lockable(&edit, TREE, &["art/".to_owned()]).is_empty());
    let bash = Payload::parse(&fixture("claude/PreToolUse-Bash")).expect("a payload");
    assert!(lockable(&bash, TREE, &globs).is_empty());
}

#[test]
fn an_edit_takes_a_free_lock_and_the_session_keeps_it() {
    let free = vec![("src/a.txt".to_owned(), lock::Read::Absent)];
    let outcome = run("tool.before", "claude/PreToolUse-Edit", &locked(Ok(free)));
    assert_eq!(outcome.answer, Answer::quiet());
    assert_eq!(outcome.locks.len(), 1);
    assert_eq!(outcome.locks[0].expect, crate::machine::Expect::Absent);
    assert!(outcome.session.locks.contains("src/a.txt"));
}

#[test]
fn an_edit_of_another_session_s_lock_is_held_and_writes_nothing() {
    let read = vec![("src/a.txt".to_owned(), lock_of("other"))];
    let outcome = run("tool.before", "claude/PreToolUse-Edit", &locked(Ok(read)));
    assert_eq!(outcome.row.verdict, "blocked(PATH_HELD)");
    assert!(outcome.locks.is_empty());
    let detail = detail(&outcome.answer);
    assert_eq!(detail["holder"]["session"], "other");
    assert_eq!(detail["holder"]["actor"], "grace");
    assert_eq!(detail["age_s"], 100);
}

#[test]
fn a_lockable_edit_without_an_answer_from_the_remote_is_refused() {
    let outcome = run(
        "tool.before",
        "claude/PreToolUse-Edit",
        &locked(Err("cannot connect".into())),
    );
    assert_eq!(outcome.row.verdict, "blocked(REMOTE_UNREACHABLE)");
    assert!(outcome.locks.is_empty());
}

#[test]
fn a_stop_ends_the_session_s_locks_unless_it_is_held_to_ask_for_a_save() {
    let session_id = "3f1c2a9e-0d4b-4c52-9a7e-1b2c3d4e5f60";
    let mut held = locked(Ok(vec![("src/a.txt".to_owned(), lock_of(session_id))]));
    let mut session = Session::begin(session_id, TREE, "ada", Timestamp::from_secs(9_000));
    session.locks.insert("src/a.txt".into());
    held.session = Some(session);
    let ended = run("turn.end", "claude/Stop", &held);
    assert_eq!(ended.locks.len(), 1);
    assert_eq!(ended.locks[0].lock, None, "a delete");
    assert!(ended.session.locks.is_empty());
    held.unsaved = vec!["src/a.txt".into()];
    let asked = run("turn.end", "claude/Stop", &held);
    assert_eq!(asked.row.verdict, "asked");
    assert!(asked.locks.is_empty(), "a stop held to ask keeps its locks");
    assert!(asked.session.locks.contains("src/a.txt"));
    let gone = run("session.end", "claude/SessionEnd", &held);
    assert_eq!(gone.locks.len(), 1);
}

#[test]
fn a_step_due_renews_the_session_s_own_locks_and_lets_go_of_one_taken_over() {
    let session_id = "3f1c2a9e-0d4b-4c52-9a7e-1b2c3d4e5f60";
    let mut session = Session::begin(session_id, TREE, "ada", Timestamp::from_secs(9_000));
    session.locks.insert("src/a.txt".into());
    session.locks_at = Timestamp::from_secs(9_000);
    assert!(session.renewal_due(Timestamp::from_secs(9_060), 120_000));
    assert!(!session.renewal_due(Timestamp::from_secs(9_059), 120_000));
    let mut own = locked(Ok(vec![("src/a.txt".to_owned(), lock_of(session_id))]));
    own.session = Some(session.clone());
    let renewed = run("step.end", "claude/PostToolBatch", &own);
    assert_eq!(renewed.locks.len(), 1);
    let lock = renewed.locks[0].lock.clone().expect("a renewal");
    assert_eq!(lock.renewed_at, own.now);
    assert_eq!(renewed.session.locks_at, own.now);
    assert!(!renewed.session.renewal_due(own.now, 120_000));
    let mut lost = locked(Ok(vec![("src/a.txt".to_owned(), lock_of("other"))]));
    lost.session = Some(session);
    let gone = run("step.end", "claude/PostToolBatch", &lost);
    assert!(gone.locks.is_empty());
    assert!(
        gone.session.locks.is_empty(),
        "a lock taken over is no longer held"
    );
}

/// The `additionalContext` a Claude Code answer carries, or `""`.
fn context_of(answer: &Answer) -> String {
    if answer.stdout.is_empty() {
        return String::new();
    }
    let said: serde_json::Value = serde_json::from_str(&answer.stdout).expect("JSON");
    said["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("context")
        .to_owned()
}

/// Facts whose view's merge was refused because its check `tests` failed.
fn refused(product: Product) -> Facts {
    let chain = notice::tests::ended(
        crate::result::OpState::Blocked,
        Some(ReasonCode::CheckFailed),
        json!({"check": "tests", "verdict": "product_failure", "why": "2 units failed"}),
    );
    Facts {
        notices: Some(NoticeFacts {
            chain: Some(chain),
            ..NoticeFacts::default()
        }),
        ..facts(product)
    }
}

#[test]
fn a_refusal_is_told_once_at_the_next_prompt() {
    let mut facts = refused(Product::Claude);
    let first = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert_eq!((first.answer.exit, first.answer.stderr.as_str()), (0, ""));
    let said: serde_json::Value = serde_json::from_str(&first.answer.stdout).expect("JSON");
    assert_eq!(
        said["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    let context = context_of(&first.answer);
    assert!(
        context.contains("CHECK_FAILED") && context.contains("tests"),
        "{context}"
    );
    assert_eq!(first.row.verdict, "ok");
    facts.session = Some(first.session);
    let again = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert_eq!(again.answer, Answer::quiet(), "once");
    facts.session = Some(again.session);
    let start = run("session.start", "claude/SessionStart", &facts);
    assert!(
        !context_of(&start.answer).contains("CHECK_FAILED"),
        "once across moments"
    );
}

#[test]
fn a_session_start_tells_its_notices_beside_the_view() {
    let facts = Facts {
        start: Some(StartFacts {
            declared: vec!["src/".into()],
            ..StartFacts::default()
        }),
        ..refused(Product::Claude)
    };
    let started = run("session.start", "claude/SessionStart", &facts);
    let context = context_of(&started.answer);
    assert!(context.contains("works in the view"), "{context}");
    assert!(context.contains("CHECK_FAILED"), "{context}");
}

#[test]
fn codex_hears_notices_as_context_at_its_start_and_on_stderr_after() {
    let facts = refused(Product::Codex);
    let prompt = run("turn.start", "codex/UserPromptSubmit", &facts);
    assert_eq!((prompt.answer.exit, prompt.answer.stdout.as_str()), (0, ""));
    assert!(prompt.answer.stderr.contains("CHECK_FAILED"), "{prompt:?}");
}

#[test]
fn no_notice_is_read_or_told_at_a_tool_call_or_a_stop() {
    let facts = refused(Product::Claude);
    let tool = run("tool.before", "claude/PreToolUse-Bash-allowed", &facts);
    assert_eq!(tool.answer, Answer::quiet());
    assert!(tool.session.said.is_empty());
    let step = run("step.end", "claude/PostToolBatch", &facts);
    assert_eq!(step.answer, Answer::quiet());
}

#[test]
fn notices_past_the_hour_s_budget_wait_for_the_next_hour() {
    let mut facts = refused(Product::Claude);
    facts.hooks.notice_budget_bytes = 100;
    let first = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert_eq!(first.answer, Answer::quiet(), "longer than the budget");
    assert!(first.session.said.is_empty(), "not said, so not spent");
    facts.hooks.notice_budget_bytes = 2048;
    facts.session = Some(first.session);
    let later = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert!(context_of(&later.answer).contains("CHECK_FAILED"));
    assert!(later.session.hour_spent > 100);
}

#[test]
fn no_runner_is_said_again_only_after_it_cleared() {
    let waiting = NoticeFacts {
        waiting: 1,
        ..NoticeFacts::default()
    };
    let mut facts = Facts {
        notices: Some(waiting.clone()),
        ..facts(Product::Claude)
    };
    let first = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert!(context_of(&first.answer).contains("no runner runs"));
    facts.session = Some(first.session);
    let still = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert_eq!(still.answer, Answer::quiet(), "once while it lasts");
    facts.session = Some(still.session);
    facts.notices = Some(NoticeFacts {
        presences: vec![notice::tests::presence_read(Some(9_999))],
        ..waiting.clone()
    });
    let fresh = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert_eq!(fresh.answer, Answer::quiet());
    assert!(!fresh.session.said.contains(notice::NO_RUNNER), "cleared");
    facts.session = Some(fresh.session);
    facts.notices = Some(waiting);
    let back = run("turn.start", "claude/UserPromptSubmit", &facts);
    assert!(
        context_of(&back.answer).contains("no runner runs"),
        "came back"
    );
}
