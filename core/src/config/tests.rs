//! Tests of `config.rs`.

use super::*;
use crate::toml_doc::NOT_YET;
use proptest::prelude::*;

/// The config example of the Configuration page, whole.
const SPEC_EXAMPLE: &str = r#"# .bay/config.toml, read from main
main = "main"                      # optional; must match bay install --main
remote = "origin"                  # optional; must match bay install --remote

[trailers]                         # map Intent and Actor to your own trailer keys
intent = "Intent"
actor = "Actor"

[plugin.notify]
command = "scripts/bay-notify"     # the notify plugin

[plugin.wake]
command = "scripts/bay-wake"       # the wake plugin: an accepted talk, or an outcome to act on

[plugin.runtime]
command = "scripts/bay-runtime"    # optional: running and effective records for bay status

[policy]
profile = "default"                # the [profile.<name>] that bay status judges completion by
evidence_reuse = "exact-inputs"    # optional: reuse a pass on matching inputs; a throughput key turns it on

[hooks]
cache_max_age_s = 30               # older coordination cache: COVERAGE_UNKNOWN
checkpoint_idle_s = 600            # a draft checkpoint after this much idle time

[view]
warm_history = false               # true: bay start also fetches the declared paths' history

[red]
window = 50                        # main's commits a red judgement reads, 1 to 10000

[agent]
product = "claude"                 # or "codex"; leave this table out with no agent hooks
instructions = ["AGENTS.md", "CLAUDE.md"]   # compared with main at SessionStart

[runner]
# command = "scripts/bay-runner"   # optional: an external runner; it must exist, or bay merge fails
submission_timeout_s = 120
execution_budget_s = 1800          # no default; the queue deadline assumes 30 minutes
lease_s = 60                       # an owner silent this long may be replaced
heartbeat_s = 10
takeover_s = 120                   # default: twice the lease
publish_window_s = 60
bisect_post = false                # true: find the commit that turned a post check red
ahead = 0                          # throughput; turns evidence reuse on
footprint_lanes = false            # throughput; turns evidence reuse on
parallel_checks = 1                # 1 to 16 of a candidate's checks at once; 1 by default

[retention]
window_s = 604800                  # one week
ref_budget = 100000                # bay refs on the remote before markers are compacted

[plugin.prune]
command = "scripts/bay-on-prune"   # optional: runs after each branch bay prune deletes
timeout_s = 30                     # 1 to 600 seconds; 30 by default

[[target]]                         # optional: a promotion target
name = "staging"
ref = "refs/heads/staging"         # default: refs/heads/<name>
from = "main"                      # main, or another target's name
requires = ["e2e"]                 # checks that must pass on the promoted commit
soak_s = 3600                      # the commit's least age before promotion
advance = false                    # true: the runner moves it to its newest promotable commit

[[hold]]                           # optional: hold main, or one target, until end
target = "staging"                 # optional: with no target, the hold is on main
end = "2026-12-24T00:00:00Z"       # RFC 3339 UTC, to the second
reason = "release week"

[[lane]]                           # optional: sandbox refs whose changes never merge
name = "research"
refs = ["refs/heads/research/*"]
window_s = 86400                   # shorter than [retention] window_s
"#;

/// The config examples on other pages of the specification.
const SPEC_FRAGMENTS: [&str; 9] = [
    "[runner]\nbisect_post = true                 # bisect a red post check's suspect range\n",
    r#"[[hold]]                           # no target: the hold is on main
end = "2026-11-02T06:00:00Z"       # RFC 3339 UTC, to the second
reason = "database migration"

[plugin.hold]
command = "scripts/bay-hold"       # answers {"held": true|false, "reason": "..."} to "status"
timeout_s = 10                     # 1 to 120 seconds; 10 by default
"#,
    r#"[runner]
ahead = 4                          # check up to 4 queued entries early; at most 16
footprint_lanes = true             # check an entry beside the head when paths are disjoint
batch = { min = 2, max = 8, max_failure_rate = 0.3 }
"#,
    "[runner]\nparallel_checks = 4                # up to 4 of a candidate's checks at once; 1 to 16\n",
    r#"[plugin.prune]
command = "scripts/bay-on-prune"   # runs as: scripts/bay-on-prune pruned <branch> <sha> <archive ref>
timeout_s = 30                     # 1 to 600 seconds; 30 by default
"#,
    r#"[[target]]
name = "staging"
requires = ["integration"]         # check ids from .bay/policy.toml

[[target]]
name = "production"
from = "staging"                   # promoted from staging, not from main
requires = ["integration"]
soak_s = 86400                     # the commit is at least one day old
"#,
    r#"main = "dev"                       # the branch bay serves; must match bay install --main

[[target]]
name = "staging"
requires = ["integration"]

[[target]]
name = "production"
from = "staging"
soak_s = 3600
"#,
    r#"[[lane]]
name = "research"
refs = ["refs/heads/research/*"]
window_s = 3600                    # keep an ended lane change's view for one hour
"#,
    "[agent]\nproduct = \"claude\"\n",
];

/// A config with every key bay acts on.
const ACTED_ON: &str = "main = \"main\"\nremote = \"origin\"\n\n[trailers]\nintent = \"Why\"\n\
        actor = \"Who\"\n\n[runner]\nlease_s = 30\nheartbeat_s = 5\n";

fn refuse(text: &str) -> TomlError {
    Config::parse(text)
        .expect_err("the config must be refused")
        .0
}

fn accept(text: &str) -> Config {
    match Config::parse(text) {
        Ok(config) => config,
        Err(error) => panic!("the config must be accepted: {error}\n{text}"),
    }
}

/// Refuses `text` only because it holds a key bay does not act on yet: every value in it
/// is valid.
fn validated(text: &str) -> TomlError {
    let error = refuse(text);
    assert!(
        error.message == NOT_YET,
        "refused for another reason than a later key: {error}\n{text}"
    );
    error
}

/// Removes what a not-yet refusal names: the key's line; a top-level table or array of
/// tables, whole; a plugin's table, whole.
fn remove_refused(text: &str, error: &TomlError) -> String {
    let key = error.key.as_deref().expect("a later key is named");
    let lines: Vec<&str> = text.lines().collect();
    let section = |header: &dyn Fn(&str) -> bool| -> String {
        let mut out = String::new();
        let mut skipping = false;
        for line in &lines {
            if line.starts_with('[') {
                skipping = header(line);
            }
            if !skipping {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    };
    match error.table.as_str() {
        // A hold on a removed target becomes a hold on main.
        "top level" if key == "target" => section(&|line: &str| line.starts_with("[[target]]"))
            .lines()
            .filter(|line| !line.starts_with("target ="))
            .map(|line| format!("{line}\n"))
            .collect(),
        "top level" => section(&|line: &str| {
            let name = line.trim_start_matches('[');
            name.split([']', '.']).next() == Some(key)
        }),
        "[plugin]" => section(&|line: &str| line.starts_with(&format!("[plugin.{key}]"))),
        _ => lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i + 1 != error.line as usize)
            .map(|(_, line)| format!("{line}\n"))
            .collect(),
    }
}

/// Refuses each later key of `text` in turn, removing it, until the rest is accepted.
/// Returns the refusals, as (key, table), and the accepted config.
fn refuse_each_later_key(text: &str) -> (Vec<(String, String)>, Config) {
    let mut text = text.to_owned();
    let mut refused = Vec::new();
    loop {
        match Config::parse(&text) {
            Ok(config) => return (refused, config),
            Err(error) => {
                let error = error.0;
                assert_eq!(error.message, NOT_YET, "{error}\n{text}");
                refused.push((error.key.clone().expect("a key"), error.table.clone()));
                text = remove_refused(&text, &error);
            }
        }
    }
}

/// The key, table and line of a refusal.
fn place(error: &TomlError) -> (Option<&str>, &str, u32) {
    (error.key.as_deref(), error.table.as_str(), error.line)
}

#[test]
fn the_spec_example_is_refused_only_on_its_later_keys() {
    let error = validated(SPEC_EXAMPLE);
    assert_eq!(place(&error), (Some("wake"), "[plugin]", 12));
    assert_eq!(
        error.to_string(),
        format!("`wake` in [plugin] on line 12 {NOT_YET}")
    );
    let (refused, config) = refuse_each_later_key(SPEC_EXAMPLE);
    let refused: Vec<String> = refused
        .iter()
        .map(|(key, table)| format!("{key} in {table}"))
        .collect();
    assert_eq!(
        refused,
        [
            "wake in [plugin]",
            "runtime in [plugin]",
            "cache_max_age_s in [hooks]",
            "view in top level",
            "submission_timeout_s in [runner]",
            "prune in [plugin]",
            "target in top level",
            "lane in top level",
        ]
    );
    assert_eq!(config.main.as_deref(), Some("main"));
    assert_eq!(config.remote.as_deref(), Some("origin"));
    assert_eq!(config.profile.as_deref(), Some("default"));
    assert_eq!(
        config.agent,
        Some(Agent {
            product: Product::Claude,
            instructions: vec!["AGENTS.md".into(), "CLAUDE.md".into()],
        })
    );
    assert_eq!(config.trailers, Trailers::default());
    assert_eq!(
        config.runner,
        RunnerSettings {
            execution_budget_s: Some(1800),
            ..RunnerSettings::default()
        }
    );
}

#[test]
fn the_head_s_progress_deadline_is_read() {
    let config = accept(
        "[runner]
execution_budget_s = 600
publish_window_s = 0
",
    );
    assert_eq!(config.runner.execution_budget_s, Some(600));
    assert_eq!(config.runner.publish_window_s, 0);
    assert_eq!(config.runner.progress_s(), 600);
    let default = RunnerSettings::default();
    assert_eq!(
        default.progress_s(),
        1800 + 60,
        "the deadline assumes 30 minutes"
    );
    let error = refuse(
        "[runner]
execution_budget_s = 0
",
    );
    assert_eq!(place(&error), (Some("execution_budget_s"), "[runner]", 2));
}

#[test]
fn the_spec_fragments_are_refused_only_on_their_later_keys() {
    let first: Vec<(String, String)> = SPEC_FRAGMENTS
        .iter()
        .filter(|fragment| {
            !fragment.starts_with("[runner]\nparallel_checks")
                && !fragment.starts_with("[runner]\nbisect_post")
                && !fragment.contains("[plugin.hold]")
                && !fragment.contains("batch = ")
                && !fragment.starts_with("[agent]")
        })
        .map(|fragment| {
            let (refused, _) = refuse_each_later_key(fragment);
            refused
                .into_iter()
                .next()
                .expect("each fragment holds a later key")
        })
        .collect();
    let first: Vec<String> = first
        .iter()
        .map(|(key, table)| format!("{key} in {table}"))
        .collect();
    assert_eq!(
        first,
        [
            "prune in [plugin]",
            "target in top level",
            "target in top level",
            "lane in top level",
        ]
    );
    let held = accept(SPEC_FRAGMENTS[1]);
    assert_eq!(held.holds.len(), 1, "acted on, not refused");
    assert_eq!(
        held.hold_plugin
            .map(|plugin| (plugin.program, plugin.timeout_s)),
        Some(("scripts/bay-hold".to_owned(), 10))
    );
    assert!(
        accept(SPEC_FRAGMENTS[0]).runner.bisect_post,
        "acted on, not refused"
    );
    let parallel = accept(SPEC_FRAGMENTS[3]);
    assert_eq!(parallel.runner.parallel_checks, 4, "acted on, not refused");
    let (_, config) = refuse_each_later_key(SPEC_FRAGMENTS[6]);
    assert_eq!(config.main.as_deref(), Some("dev"));
    let agent = accept(SPEC_FRAGMENTS[SPEC_FRAGMENTS.len() - 1]);
    assert_eq!(
        agent.agent.map(|agent| agent.product),
        Some(Product::Claude),
        "acted on, not refused"
    );
}

#[test]
fn the_hooks_table_is_acted_on_but_for_the_cache_age() {
    assert_eq!(accept("").hooks, HookSettings::default());
    assert_eq!(accept("[hooks]\n").hooks, HookSettings::default());
    let hooks = accept("[hooks]\nnotice_budget_bytes = 100\ncheckpoint_idle_s = 5\n").hooks;
    assert_eq!(
        (hooks.notice_budget_bytes, hooks.checkpoint_idle_s),
        (100, 5)
    );
    let error = validated("[hooks]\ncache_max_age_s = 30\n");
    assert_eq!(place(&error), (Some("cache_max_age_s"), "[hooks]", 2));
}

#[test]
fn later_keys_are_refused_in_text_order_once_all_is_valid() {
    let error = refuse("[view]\nwarm_history = true\n[runner]\nlease_s = 0\n");
    assert_eq!(place(&error), (Some("lease_s"), "[runner]", 4));
    let error =
        validated("[runner]\nlease_s = 30\ncommand = \"ci/submit\"\n[view]\nwarm_history = true\n");
    assert_eq!(place(&error), (Some("command"), "[runner]", 3));
    let error = validated("[view]\nwarm_history = true\n[runner]\ncommand = \"ci/submit\"\n");
    assert_eq!(
        place(&error),
        (Some("view"), "top level", 1),
        "a whole table"
    );
    for table in ["view", "plugin"] {
        let error = validated(&format!("main = \"main\"\n\n[{table}]\n"));
        assert_eq!(
            place(&error),
            (Some(table), "top level", 3),
            "an empty table too"
        );
    }
    for table in ["target", "lane"] {
        let error = validated(&format!("main = \"main\"\n{table} = []\n"));
        assert_eq!(
            place(&error),
            (Some(table), "top level", 2),
            "an empty array too"
        );
    }
}

#[test]
fn an_empty_config_takes_every_default() {
    let config = accept("");
    assert_eq!(config, Config::default());
    assert_eq!(config.trailers.intent, "Intent");
    assert_eq!(config.trailers.actor, "Actor");
    let runner = config.runner;
    assert_eq!(
        (runner.submission_timeout_s, runner.execution_budget_s),
        (30, None)
    );
    assert_eq!(
        (runner.lease_s, runner.heartbeat_s, runner.takeover_s),
        (60, 10, 120)
    );
    assert_eq!((runner.publish_window_s, runner.parallel_checks), (60, 1));
}

#[test]
fn the_keys_bay_acts_on_are_read() {
    let config = accept(
        "main = \"dev\"\nremote = \"upstream\"\n[trailers]\nintent = \"Why\"\nactor = \"Who\"\n\
             [runner]\nlease_s = 100\nheartbeat_s = 20\n",
    );
    assert_eq!(config.main.as_deref(), Some("dev"));
    assert_eq!(config.remote.as_deref(), Some("upstream"));
    assert_eq!(
        config.trailers,
        Trailers {
            intent: "Why".into(),
            actor: "Who".into()
        }
    );
    assert_eq!(
        (config.runner.lease_s, config.runner.heartbeat_s),
        (100, 20)
    );
    assert_eq!(config.runner.takeover_s, 200, "twice the lease");
    let longer = accept("[runner]\nlease_s = 100\nheartbeat_s = 20\ntakeover_s = 150\n");
    assert_eq!(longer.runner.takeover_s, 150);
    assert_eq!(
        config.runner,
        RunnerSettings {
            lease_s: 100,
            heartbeat_s: 20,
            takeover_s: 200,
            ..RunnerSettings::default()
        }
    );
}

#[test]
fn every_other_runner_key_is_checked_then_refused() {
    for (line, key) in [
        ("command = \"ci/submit\"", "command"),
        ("submission_timeout_s = 120", "submission_timeout_s"),
    ] {
        let error = validated(&format!("[runner]\nlease_s = 60\n{line}\n"));
        assert_eq!(place(&error), (Some(key), "[runner]", 3), "{line}");
    }
}

#[test]
fn bisect_post_is_acted_on_off_by_default_and_typed() {
    assert!(!accept("[runner]\nlease_s = 60\n").runner.bisect_post);
    assert!(accept("[runner]\nbisect_post = true\n").runner.bisect_post);
    let error = refuse("[runner]\n\nbisect_post = \"yes\"\n");
    assert_eq!(place(&error), (Some("bisect_post"), "[runner]", 3));
}

#[test]
fn unknown_keys_name_key_table_and_line() {
    let error = refuse("main = \"main\"\ncolour = \"blue\"\n");
    assert_eq!(place(&error), (Some("colour"), "top level", 2));
    assert!(error.message.contains("not a key"), "{error}");

    let error = refuse("[runner]\nlease_s = 60\n\nleas_s = 30\n");
    assert_eq!(place(&error), (Some("leas_s"), "[runner]", 4));
    assert_eq!(
        error.to_string(),
        format!("`leas_s` in [runner] on line 4 {}", error.message)
    );

    let error = refuse("[plugin.notify]\ncommand = \"n\"\n[plugin.pager]\ncommand = \"p\"\n");
    assert_eq!(place(&error), (Some("pager"), "[plugin]", 3));
    let error = refuse("[plugin.hold]\ncommand = \"h\"\ntimeout = 5\n");
    assert_eq!(place(&error), (Some("timeout"), "[plugin.hold]", 3));
    let error = refuse("[[target]]\nname = \"a\"\n[[target]]\nname = \"b\"\nsoak = 1\n");
    assert_eq!(place(&error), (Some("soak"), "[[target]] #2", 5));
    let error = refuse("[runner]\nbatch = { min = 2, size = 4 }\n");
    assert_eq!(place(&error), (Some("size"), "[runner.batch]", 2));
    for table in [
        "trailers",
        "policy",
        "hooks",
        "view",
        "red",
        "agent",
        "retention",
    ] {
        let error = refuse(&format!("[{table}]\nnonsense = 1\n"));
        assert_eq!(
            place(&error),
            (Some("nonsense"), format!("[{table}]").as_str(), 2)
        );
    }
    for table in ["hold", "lane"] {
        let error = refuse(&format!("[[{table}]]\nnonsense = 1\n"));
        assert_eq!(
            place(&error),
            (Some("nonsense"), format!("[[{table}]] #1").as_str(), 2)
        );
    }
}

#[test]
fn syntax_errors_give_a_line() {
    let error = refuse("main = \"main\"\n[runner\nlease_s = 5\n");
    assert_eq!((error.key.as_deref(), error.line), (None, 2));
    let error = refuse("[runner]\n[runner]\n");
    assert_eq!(error.line, 2);
}

#[test]
fn types_are_checked() {
    let error = refuse("[runner]\nlease_s = \"60\"\n");
    assert_eq!(place(&error), (Some("lease_s"), "[runner]", 2));
    assert!(
        error
            .message
            .contains("positive integer, but it is the string \"60\""),
        "{error}"
    );
    assert_eq!(place(&refuse("main = 1\n")), (Some("main"), "top level", 1));
    assert_eq!(
        place(&refuse("runner = 1\n")),
        (Some("runner"), "top level", 1)
    );
    assert_eq!(
        place(&refuse("[view]\nwarm_history = 1\n")).0,
        Some("warm_history")
    );
    assert_eq!(
        place(&refuse("[hooks]\nnotice_budget_bytes = -1\n")).0,
        Some("notice_budget_bytes")
    );
    assert_eq!(
        place(&refuse("[runner]\nbisect_post = \"no\"\n")).0,
        Some("bisect_post")
    );
    assert_eq!(place(&refuse("[runner]\nbatch = 4\n")).0, Some("batch"));
    assert_eq!(
        place(&refuse("[[target]]\nname = \"a\"\nrequires = \"e2e\"\n")).0,
        Some("requires")
    );
    assert_eq!(
        place(&refuse("target = { name = \"a\" }\n")).0,
        Some("target")
    );
    assert_eq!(place(&refuse("main = \"\"\n")).0, Some("main"));
    assert_eq!(place(&refuse("main = \"two words\"\n")).0, Some("main"));
    assert_eq!(place(&refuse("remote = \"a b\"\n")).0, Some("remote"));
}

#[test]
fn takeover_must_outlast_the_lease() {
    let error = refuse("[runner]\nlease_s = 60\ntakeover_s = 60\n");
    assert_eq!(place(&error), (Some("takeover_s"), "[runner]", 3));
    assert_eq!(
        accept("[runner]\nlease_s = 60\ntakeover_s = 61\n")
            .runner
            .takeover_s,
        61
    );
    let error = refuse("[runner]\nlease_s = 100\ntakeover_s = 90\n");
    assert_eq!(error.key.as_deref(), Some("takeover_s"));
    assert!(error.message.contains("more than lease_s (100)"), "{error}");
    assert_eq!(accept("[runner]\nlease_s = 100\n").runner.takeover_s, 200);
}

#[test]
fn the_heartbeat_must_come_before_the_lease_expires() {
    let error = refuse("[runner]\nlease_s = 60\nheartbeat_s = 60\n");
    assert_eq!(place(&error), (Some("heartbeat_s"), "[runner]", 3));
    assert!(
        error
            .message
            .contains("lets another runner take over every claim"),
        "{error}"
    );
    let error = refuse("[runner]\nlease_s = 5\n");
    assert_eq!(
        place(&error),
        (Some("lease_s"), "[runner]", 2),
        "below the default heartbeat"
    );
    accept("[runner]\nlease_s = 5\nheartbeat_s = 4\n");
    for key in ["lease_s", "heartbeat_s"] {
        let error = refuse(&format!("[runner]\n{key} = 0\n"));
        assert_eq!(place(&error), (Some(key), "[runner]", 2));
        assert!(error.message.contains("positive"), "{error}");
    }
}

#[test]
fn runner_timings_have_their_ranges() {
    for key in ["submission_timeout_s", "execution_budget_s", "takeover_s"] {
        assert_eq!(
            refuse(&format!("[runner]\n{key} = 0\n")).key.as_deref(),
            Some(key)
        );
    }
    assert_eq!(
        refuse("[runner]\npublish_window_s = -1\n").key.as_deref(),
        Some("publish_window_s")
    );
    assert_eq!(
        refuse("[runner]\ncommand = \"\"\n").key.as_deref(),
        Some("command")
    );
}

#[test]
fn parallel_checks_is_from_1_to_16() {
    for n in [0, 17, -1] {
        let error = refuse(&format!("[runner]\nparallel_checks = {n}\n"));
        assert_eq!(place(&error), (Some("parallel_checks"), "[runner]", 2));
        assert!(error.message.contains("from 1 to 16"), "{error}");
    }
    let config = accept("[runner]\nparallel_checks = 16\n");
    assert_eq!(config.runner.parallel_checks, 16);
}

#[test]
fn ahead_is_at_most_16_and_turns_reuse_on() {
    let config = accept("[runner]\nahead = 16\n");
    assert_eq!(config.runner.ahead, 16);
    assert!(config.evidence_reuse, "a throughput key turns reuse on");
    let config = accept("[runner]\nahead = 0\n");
    assert!(!config.evidence_reuse, "ahead = 0 checks nothing early");
    assert_eq!(
        place(&refuse("[runner]\nahead = 17\n")),
        (Some("ahead"), "[runner]", 2)
    );
}

#[test]
fn batch_sizes_and_rate_are_checked() {
    let batch = |text: &str| accept(text).runner.batch.expect("batch is set");
    assert_eq!(
        batch("[runner]\nbatch = { min = 3, max = 64, max_failure_rate = 1 }\n"),
        BatchSettings {
            min: 3,
            max: 64,
            max_failure_ppm: 1_000_000
        }
    );
    // The spec's defaults: 1, 8 and 0.3; and never fewer than two members.
    assert_eq!(
        batch("[runner.batch]\n"),
        BatchSettings {
            min: 2,
            max: 8,
            max_failure_ppm: 300_000
        }
    );
    assert_eq!(
        batch("[runner.batch]\nmax_failure_rate = 0.0\n").max_failure_ppm,
        0
    );
    assert!(
        accept("[runner]\n").runner.batch.is_none(),
        "absent, it is off"
    );
    for bad in [
        "max = 65",
        "max = 1",
        "min = 0",
        "max_failure_rate = 1.5",
        "max_failure_rate = -0.1",
        "max_failure_rate = nan",
        "min = 9",
    ] {
        let error = refuse(&format!("[runner.batch]\n{bad}\n"));
        assert_eq!(error.table, "[runner.batch]", "{bad}");
        assert_eq!(error.line, 2, "{bad}");
    }
    let error = refuse("[runner.batch]\nmin = 5\nmax = 4\n");
    assert_eq!(error.key.as_deref(), Some("min"));
}

#[test]
fn sandbox_is_never_allowed() {
    for value in ["false", "true", "\"none\"", "{}"] {
        let error = refuse(&format!("[runner]\nlease_s = 60\nsandbox = {value}\n"));
        assert_eq!(place(&error), (Some("sandbox"), "[runner]", 3));
        assert!(error.message.contains("bay.executorSandbox"), "{error}");
    }
}

#[test]
fn throughput_keys_need_evidence_reuse() {
    for (key, value) in [
        ("ahead", "2"),
        ("footprint_lanes", "true"),
        ("batch", "{ max = 4 }"),
    ] {
        let text = format!("[policy]\nevidence_reuse = \"off\"\n\n[runner]\n{key} = {value}\n");
        let error = refuse(&text);
        assert_eq!(place(&error), (Some(key), "[runner]", 5));
        assert!(error.message.contains("line 2"), "{error}");
        for text in [
            text.replace("\"off\"", "\"exact-inputs\""),
            text.replace("evidence_reuse = \"off\"\n", ""),
        ] {
            assert!(accept(&text).evidence_reuse, "{text}");
        }
    }
    let config = accept("[policy]\nevidence_reuse = \"off\"\n[runner]\nparallel_checks = 4\n");
    assert!(!config.evidence_reuse);
    assert!(accept("[policy]\nevidence_reuse = \"exact-inputs\"\n").evidence_reuse);
    assert!(
        !accept("[policy]\n").evidence_reuse,
        "left out, reuse is off"
    );
    let config = accept("[policy]\nprofile = \"release\"\nevidence_reuse = \"exact-inputs\"\n");
    assert_eq!(config.profile.as_deref(), Some("release"));
    assert_eq!(accept("[policy]\n").profile, None);
    let error = refuse("[policy]\nprofile = \"\"\n");
    assert_eq!(place(&error), (Some("profile"), "[policy]", 2));
    let error = refuse("[policy]\nevidence_reuse = \"sometimes\"\n");
    assert_eq!(place(&error), (Some("evidence_reuse"), "[policy]", 2));
}

#[test]
fn plugin_timeouts_have_their_ranges() {
    let cases = [
        ("notify", 1, None),
        ("wake", 1, None),
        ("runtime", 1, None),
        ("hold", 1, Some(120)),
        ("prune", 1, Some(600)),
    ];
    for (plugin, low, high) in cases {
        let text = |n: i64| format!("[plugin.{plugin}]\ncommand = \"p\"\ntimeout_s = {n}\n");
        // The hold and notify plugins are acted on; the others are checked, then refused as
        // not yet.
        let in_range = |text: &str| {
            if ACTED_ON_PLUGINS.contains(&plugin) {
                accept(text);
            } else {
                validated(text);
            }
        };
        in_range(&text(low));
        let error = refuse(&text(low - 1));
        assert_eq!(
            place(&error),
            (Some("timeout_s"), format!("[plugin.{plugin}]").as_str(), 3)
        );
        match high {
            Some(high) => {
                in_range(&text(high));
                let error = refuse(&text(high + 1));
                assert!(
                    error.message.contains(&format!("from 1 to {high}")),
                    "{error}"
                );
            }
            None => {
                in_range(&text(1_000_000));
            }
        }
    }
    let error = refuse("[plugin.prune]\ncommand = \"\"\n");
    assert_eq!(place(&error), (Some("command"), "[plugin.prune]", 2));
    assert_eq!(
        place(&refuse("[plugin]\nnotify = \"scripts/n\"\n")).0,
        Some("notify")
    );
}

#[test]
fn the_retention_window_and_the_ref_budget_are_read() {
    assert_eq!(accept("").retention_window_s, 604_800);
    assert_eq!(accept("").ref_budget, 100_000);
    let config = accept("[retention]\nwindow_s = 60\nref_budget = 5\n");
    assert_eq!((config.retention_window_s, config.ref_budget), (60, 5));
    let error = refuse("[retention]\nref_budget = 0\n");
    assert_eq!(place(&error), (Some("ref_budget"), "[retention]", 2));
}

#[test]
fn the_red_window_is_from_1_to_10000() {
    assert_eq!(accept("[red]\nwindow = 1\n").red_window(), 1);
    assert_eq!(accept("[red]\nwindow = 10000\n").red_window(), 10_000);
    assert_eq!(accept("").red_window(), crate::red::DEFAULT_WINDOW);
    assert_eq!(accept("[red]\n").red_window(), crate::red::DEFAULT_WINDOW);
    for n in [0, 10_001] {
        assert_eq!(
            place(&refuse(&format!("[red]\nwindow = {n}\n"))),
            (Some("window"), "[red]", 2)
        );
    }
}

#[test]
fn the_agent_table_names_a_known_product() {
    let codex = accept("[agent]\nproduct = \"codex\"\ninstructions = [\"docs/AGENTS.md\"]\n");
    assert_eq!(
        codex.agent,
        Some(Agent {
            product: Product::Codex,
            instructions: vec!["docs/AGENTS.md".into()],
        })
    );
    assert_eq!(codex.instructions(), ["docs/AGENTS.md"]);
    let none = accept("[agent]\nproduct = \"claude\"\ninstructions = []\n");
    assert!(none.instructions().is_empty());
    assert_eq!(none.agent.map(|agent| agent.instructions), Some(vec![]));
    assert_eq!(accept("").agent, None, "no table, no agent hooks");
    assert_eq!(accept("").instructions(), ["AGENTS.md", "CLAUDE.md"]);
    assert_eq!(
        place(&refuse("[agent]\nproduct = \"gemini\"\n")),
        (Some("product"), "[agent]", 2)
    );
    assert_eq!(
        place(&refuse("[agent]\ninstructions = []\n")),
        (Some("product"), "[agent]", 1)
    );
    for file in ["/etc/AGENTS.md", "../AGENTS.md", "", ".", "./"] {
        let error = refuse(&format!(
            "[agent]\nproduct = \"claude\"\ninstructions = [{file:?}]\n"
        ));
        assert_eq!(
            place(&error),
            (Some("instructions"), "[agent]", 3),
            "{file}"
        );
    }
}

#[test]
fn trailer_keys_are_distinct_trailer_tokens() {
    assert_eq!(
        place(&refuse("[trailers]\nintent = \"My Intent\"\n")),
        (Some("intent"), "[trailers]", 2)
    );
    assert_eq!(
        place(&refuse("[trailers]\nactor = \"\"\n")),
        (Some("actor"), "[trailers]", 2)
    );
    assert_eq!(
        place(&refuse("[trailers]\nactor = \"intent\"\n")),
        (Some("actor"), "[trailers]", 2)
    );
    assert_eq!(
        place(&refuse("[trailers]\nintent = \"Actor\"\n")).0,
        Some("intent")
    );
}

#[test]
fn trailer_keys_are_never_the_ones_bay_writes_itself() {
    for own in [
        "Change-Id",
        "change-id",
        "Bay-Op",
        "Fixes",
        "Reverts",
        "Bay-Batch",
    ] {
        let error = refuse(&format!(
            "[trailers]\nintent = \"Why\"\nactor = \"{own}\"\n"
        ));
        assert_eq!(place(&error), (Some("actor"), "[trailers]", 3), "{own}");
        assert!(error.message.contains("bay writes"), "{error}");
        let error = refuse(&format!("[trailers]\nintent = \"{own}\"\n"));
        assert_eq!(place(&error), (Some("intent"), "[trailers]", 2), "{own}");
    }
    let config = Config::parse("[trailers]\nintent = \"Bayes\"\nactor = \"Op\"\n")
        .expect("keys of the repository's own");
    assert_eq!(config.trailers.intent, "Bayes");
}

#[test]
fn advance_needs_requires() {
    let error = refuse("[[target]]\nname = \"staging\"\nadvance = true\n");
    assert_eq!(place(&error), (Some("advance"), "[[target]] #1", 3));
    let error = refuse("[[target]]\nname = \"staging\"\nrequires = []\nadvance = true\n");
    assert_eq!(error.key.as_deref(), Some("advance"));
    validated("[[target]]\nname = \"staging\"\nrequires = [\"e2e\"]\nadvance = true\n");
    validated("[[target]]\nname = \"staging\"\nadvance = false\n");
}

#[test]
fn targets_form_a_chain_from_main() {
    let two = |from_a: &str, from_b: &str| {
        format!(
            "[[target]]\nname = \"a\"\nfrom = {from_a:?}\n\n[[target]]\nname = \"b\"\nfrom = {from_b:?}\n"
        )
    };
    validated(&two("main", "a"));
    validated(&two("b", "main"));
    let error = refuse(&two("main", "c"));
    assert_eq!(place(&error), (Some("from"), "[[target]] #2", 7));
    assert!(error.message.contains("neither main nor"), "{error}");
    let error = refuse(&two("b", "a"));
    assert_eq!(place(&error), (Some("from"), "[[target]] #1", 3));
    assert!(error.message.contains("cycle"), "{error}");
    assert!(refuse(&two("a", "main")).message.contains("cycle"));
    validated(&format!("main = \"dev\"\n{}", two("dev", "a")));
    let error = refuse("[[target]]\nname = \"main\"\n");
    assert_eq!(place(&error), (Some("name"), "[[target]] #1", 2));
}

#[test]
fn targets_have_distinct_names_and_refs_of_their_own() {
    let error = refuse("[[target]]\nname = \"a\"\n[[target]]\nname = \"a\"\n");
    assert_eq!(place(&error), (Some("name"), "[[target]] #2", 4));
    let error =
        refuse("[[target]]\nname = \"a\"\n[[target]]\nname = \"b\"\nref = \"refs/heads/a\"\n");
    assert_eq!(place(&error), (Some("ref"), "[[target]] #2", 5));
    for bad in [
        "heads/x",
        "refs/heads/a b",
        "refs/heads/x*",
        "refs/heads/x..y",
        "refs/bay/x",
        "refs/notes/bay/x",
        "refs/heads/",
    ] {
        let error = refuse(&format!("[[target]]\nname = \"a\"\nref = {bad:?}\n"));
        assert_eq!(place(&error), (Some("ref"), "[[target]] #1", 3), "{bad}");
    }
    let error = refuse("main = \"dev\"\n[[target]]\nname = \"a\"\nref = \"refs/heads/dev\"\n");
    assert_eq!(place(&error), (Some("ref"), "[[target]] #1", 4));
    let error = refuse("[[target]]\nname = \"bad name\"\n");
    assert_eq!(place(&error), (Some("name"), "[[target]] #1", 2));
    assert_eq!(
        refuse("[[target]]\nsoak_s = 5\n").key.as_deref(),
        Some("name")
    );
    assert_eq!(
        refuse("[[target]]\nname = \"a\"\nsoak_s = -5\n")
            .key
            .as_deref(),
        Some("soak_s")
    );
}

#[test]
fn holds_name_a_target_an_end_and_a_reason() {
    accept("[[hold]]\nend = \"2028-02-29T23:59:59Z\"\nreason = \"leap\"\n");
    let error =
        refuse("[[hold]]\ntarget = \"staging\"\nend = \"2026-12-24T00:00:00Z\"\nreason = \"r\"\n");
    assert_eq!(place(&error), (Some("target"), "[[hold]] #1", 2));
    for end in [
        "2026-12-24",
        "2026-12-24T00:00:00+01:00",
        "2026-12-24T00:00:00.5Z",
        "2026-02-29T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-12-24T24:00:00Z",
        "2026-12-24 00:00:00Z",
        "2026-12-24t00:00:00z",
    ] {
        let error = refuse(&format!("[[hold]]\nend = {end:?}\nreason = \"r\"\n"));
        assert_eq!(place(&error), (Some("end"), "[[hold]] #1", 2), "{end}");
    }
    let error = refuse("[[hold]]\nend = 2026-12-24T00:00:00Z\nreason = \"r\"\n");
    assert!(error.message.contains("a date or time"), "{error}");
    assert_eq!(
        refuse("[[hold]]\nend = \"2026-12-24T00:00:00Z\"\n")
            .key
            .as_deref(),
        Some("reason")
    );
    assert_eq!(
        refuse("[[hold]]\nreason = \"r\"\n").key.as_deref(),
        Some("end")
    );
}

#[test]
fn lanes_have_plain_names_and_ref_patterns() {
    validated(
        "[[lane]]\nname = \"a-1\"\nrefs = [\"refs/heads/a/*\", \"refs/remotes/origin/a/*\"]\n",
    );
    validated(&format!(
        "[[lane]]\nname = {:?}\nrefs = [\"refs/heads/x\"]\n",
        "a".repeat(64)
    ));
    for name in ["Research", "re_search", "", "a b", &"a".repeat(65)] {
        let error = refuse(&format!(
            "[[lane]]\nname = {name:?}\nrefs = [\"refs/heads/x/*\"]\n"
        ));
        assert_eq!(place(&error), (Some("name"), "[[lane]] #1", 2), "{name}");
    }
    for pattern in [
        "heads/x/*",
        "refs/heads/*/x/*",
        "refs/bay/*",
        "refs/heads/a b",
        "refs/heads/main",
    ] {
        let error = refuse(&format!(
            "main = \"main\"\n[[lane]]\nname = \"x\"\nrefs = [\"refs/heads/ok\", {pattern:?}]\n"
        ));
        assert_eq!(place(&error), (Some("refs"), "[[lane]] #1", 4), "{pattern}");
    }
    let error = refuse("main = \"main\"\n[[lane]]\nname = \"x\"\nrefs = [\"refs/heads/*\"]\n");
    assert!(error.message.contains("matches main"), "{error}");
    assert_eq!(
        refuse("[[lane]]\nname = \"x\"\nrefs = []\n").key.as_deref(),
        Some("refs")
    );
    assert_eq!(
        refuse("[[lane]]\nname = \"x\"\n").key.as_deref(),
        Some("refs")
    );
    let error = refuse(
        "[[lane]]\nname = \"x\"\nrefs = [\"refs/heads/x/*\"]\n[[lane]]\nname = \"x\"\nrefs = [\"refs/heads/y/*\"]\n",
    );
    assert_eq!(place(&error), (Some("name"), "[[lane]] #2", 5));
}

#[test]
fn a_lane_window_is_shorter_than_retention() {
    let lane = "[[lane]]\nname = \"x\"\nrefs = [\"refs/heads/x/*\"]\n";
    validated(&format!("{lane}window_s = 604799\n"));
    let error = refuse(&format!("{lane}window_s = 604800\n"));
    assert_eq!(place(&error), (Some("window_s"), "[[lane]] #1", 4));
    assert!(error.message.contains("default"), "{error}");
    let error = refuse(&format!(
        "[retention]\nwindow_s = 3600\n{lane}window_s = 3600\n"
    ));
    assert_eq!(place(&error), (Some("window_s"), "[[lane]] #1", 6));
    assert!(error.message.contains("line 2"), "{error}");
    validated(&format!(
        "[retention]\nwindow_s = 3600\n{lane}window_s = 3599\n"
    ));
    validated(&format!("[retention]\nwindow_s = 3600\n{lane}"));
    assert_eq!(
        refuse("[retention]\nwindow_s = 0\n").key.as_deref(),
        Some("window_s")
    );
    assert_eq!(
        refuse("[retention]\nref_budget = 0\n").key.as_deref(),
        Some("ref_budget")
    );
}

#[test]
fn an_unknown_key_is_named_before_what_it_breaks() {
    let error = refuse("ruuner = 1\n[runner]\nlease_s = 0\n");
    assert_eq!(error.key.as_deref(), Some("ruuner"));
    let error = refuse("[plugin.hold]\ntimeout_s = 500\ncomand = \"h\"\n");
    assert_eq!(error.key.as_deref(), Some("comand"));
    let error = refuse("[plugin.notfy]\ncommand = \"n\"\n[plugin.hold]\ntimeout_s = 500\n");
    assert_eq!(error.key.as_deref(), Some("notfy"));
    let error = refuse("[hooks]\ncache_max_age = 5\ncheckpoint_idle_s = -1\n");
    assert_eq!(error.key.as_deref(), Some("cache_max_age"));
}

#[test]
fn two_targets_never_share_a_name_even_on_distinct_refs() {
    let error = refuse(
        "[[target]]\nname = \"a\"\nref = \"refs/heads/x\"\n\
             [[target]]\nname = \"a\"\nref = \"refs/heads/y\"\n",
    );
    assert_eq!(place(&error), (Some("name"), "[[target]] #2", 5));
    assert!(error.message.contains("[[target]] #1 on line 1"), "{error}");
}

#[test]
fn a_hold_keeps_all_but_fixes_and_undos_and_an_unreadable_config_holds_too() {
    let held = Config::at_main(Some(
        b"[[hold]]\nend = \"2099-01-01T00:00:00Z\"\nreason = \"freeze\"\n",
    ));
    let now = Timestamp::from_secs(1_800_000_000);
    let hold = serde_json::to_value(hold_on(&held, now, false)).expect("plain data");
    assert_eq!(hold["source"], "window");
    assert_eq!(hold["reason"], "freeze");
    assert_eq!(hold_on(&held, now, true), None, "a fix or an undo goes in");
    let broken = Config::at_main(Some(b"[runner]\nnot_a_key = 1\n"));
    let hold = hold_on(&broken, now, false).expect("an unreadable config holds main");
    let hold = serde_json::to_value(hold).expect("plain data");
    assert_eq!(hold["source"], "config");
    assert!(
        hold["reason"]
            .as_str()
            .is_some_and(|why| why.contains("not_a_key")),
        "{hold}"
    );
    assert_eq!(
        hold_on(&Config::at_main(None), now, false),
        None,
        "no config, no hold"
    );
    assert!(Config::at_main(Some(&[0xff, 0xfe])).is_err());
}

#[test]
fn a_hold_of_main_is_read_and_in_force_until_its_end() {
    let config = accept(
        "[[hold]]\nend = \"2026-12-24T00:00:00Z\"\nreason = \"the freeze\"\n\n[[hold]]\nend = \"2026-12-01T00:00:00Z\"\nreason = \"earlier\"\n",
    );
    assert_eq!(config.holds.len(), 2);
    let end = crate::time::parse_utc_second("2026-12-24T00:00:00Z").expect("a time");
    let before = Timestamp::from_secs(end.secs() - 1);
    let hold = config.hold_at(before).expect("held until its end");
    assert_eq!(
        (hold.reason.as_str(), hold.end_text.as_str()),
        ("the freeze", "2026-12-24T00:00:00Z")
    );
    assert_eq!(config.hold_at(end), None, "a hold ends at its end");
    assert!(accept("").holds.is_empty());
    // Ends in 1900 or on no real day are refused, naming the key.
    for end in [
        "1900-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-01-10T00:00:60Z",
    ] {
        let error = refuse(&format!("[[hold]]\nend = {end:?}\nreason = \"r\"\n"));
        assert_eq!(error.key.as_deref(), Some("end"), "{end}");
    }
}

fn mutate(text: &str, edits: &[(usize, u8, char)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(at, op, c) in edits {
        let at = at % (chars.len() + 1);
        match op % 3 {
            0 => chars.insert(at, c),
            1 if at < chars.len() => {
                chars.remove(at);
            }
            _ if at < chars.len() => chars[at] = c,
            _ => chars.push(c),
        }
    }
    chars.into_iter().collect()
}

proptest! {
    #[test]
    fn parse_never_panics_on_any_text(text in ".*") {
        let _ = Config::parse(&text);
    }

    #[test]
    fn parse_never_panics_on_a_mutated_config(
        source in prop::sample::select(vec![SPEC_EXAMPLE, ACTED_ON]),
        edits in proptest::collection::vec(
            (0usize..5000, 0u8..3, prop::sample::select(
                vec!['"', '[', ']', '=', '\n', '#', '*', '.', ' ', '0', '9', '-', 'x', '{', '}', ',', 'Z'],
            )),
            1..8,
        )
    ) {
        let text = mutate(source, &edits);
        if let Err(error) = Config::parse(&text) {
            prop_assert!(error.0.line >= 1);
            prop_assert!(!error.to_string().contains('\n'));
        }
    }

    #[test]
    fn runner_timings_are_accepted_exactly_when_consistent(
        lease in 1u64..200, heartbeat in 1u64..200, takeover in 1u64..400,
    ) {
        let text = format!("[runner]\nlease_s = {lease}\nheartbeat_s = {heartbeat}\ntakeover_s = {takeover}\n");
        let consistent = heartbeat < lease && takeover > lease;
        let parsed = Config::parse(&text);
        prop_assert_eq!(parsed.is_ok(), consistent);
        if let Ok(config) = parsed {
            prop_assert_eq!(config.runner.takeover_s, takeover);
        }
        let without = format!("[runner]\nlease_s = {lease}\nheartbeat_s = {heartbeat}\n");
        prop_assert_eq!(Config::parse(&without).is_ok(), heartbeat < lease);
    }
}

#[test]
fn the_notify_plugin_is_acted_on_with_five_seconds_by_default() {
    let config = accept("[plugin.notify]\ncommand = \"scripts/notify --json\"\n");
    assert_eq!(
        config.notify_plugin,
        Some(PluginCommand {
            program: "scripts/notify".into(),
            args: vec!["--json".into()],
            timeout_s: NOTIFY_PLUGIN_TIMEOUT_S,
        })
    );
    assert_eq!(NOTIFY_PLUGIN_TIMEOUT_S, 5);
    let error = refuse("[plugin.notify]\ncommand = \"/bin/notify\"\n");
    assert_eq!(place(&error), (Some("command"), "[plugin.notify]", 2));
    // A program that names no file, as the policy's paths may not either.
    let error = refuse("[plugin.notify]\ncommand = \"./ --json\"\n");
    assert_eq!(place(&error), (Some("command"), "[plugin.notify]", 2));
    assert!(error.message.contains("names no file"), "{error}");
}

#[test]
fn the_hold_plugin_is_acted_on_and_the_other_plugins_are_still_refused() {
    let config = accept("[plugin.hold]\ncommand = \"scripts/bay-hold  --quiet\"\n");
    assert_eq!(
        config.hold_plugin,
        Some(PluginCommand {
            program: "scripts/bay-hold".into(),
            args: vec!["--quiet".into()],
            timeout_s: HOLD_PLUGIN_TIMEOUT_S,
        })
    );
    let timed = accept("[plugin.hold]\ncommand = \"h\"\ntimeout_s = 120\n");
    assert_eq!(timed.hold_plugin.map(|plugin| plugin.timeout_s), Some(120));
    assert_eq!(
        accept("[plugin.hold]\ntimeout_s = 5\n").hold_plugin,
        None,
        "no command, no plugin"
    );
    assert_eq!(accept("").hold_plugin, None);

    for (text, line) in [
        ("[plugin.hold]\ncommand = \"h\"\ntimeout_s = 0\n", 3),
        ("\n[plugin.hold]\ntimeout_s = 121\ncommand = \"h\"\n", 3),
    ] {
        let error = refuse(text);
        assert_eq!(
            place(&error),
            (Some("timeout_s"), "[plugin.hold]", line),
            "{text}"
        );
        assert!(error.message.contains("from 1 to 120"), "{error}");
    }
    for program in ["/usr/bin/hold", "../hold", "scripts/../../hold"] {
        let error = refuse(&format!("[plugin.hold]\ncommand = \"{program} x\"\n"));
        assert_eq!(place(&error), (Some("command"), "[plugin.hold]", 2));
        assert!(error.message.contains(program), "{error}");
    }
    let error = refuse("[plugin.hold]\ncommand = \"  \"\n");
    assert_eq!(place(&error), (Some("command"), "[plugin.hold]", 2));

    // Beside an acted-on hold plugin, each plugin bay does not run is refused by name, on
    // its line.
    for other in ["wake", "runtime", "prune"] {
        let error = validated(&format!(
            "[plugin.hold]\ncommand = \"h\"\n\n[plugin.{other}]\ncommand = \"p\"\n"
        ));
        assert_eq!(place(&error), (Some(other), "[plugin]", 4), "{other}");
    }
    assert_eq!(validated("[plugin]\n").key.as_deref(), Some("plugin"));
}

#[test]
fn mains_config_is_parsed_once_where_the_caller_remembers() {
    let texts: [&[u8]; 3] = [
        b"[[hold]]\nend = \"2099-01-01T00:00:00Z\"\nreason = \"freeze\"\n",
        b"[runner]\nnot_a_key = 1\n",
        &[0xff, 0xfe],
    ];
    let read = || {
        texts
            .iter()
            .map(|bytes| Config::at_main(Some(bytes)))
            .collect::<Vec<_>>()
    };
    let fresh = read();
    assert!(fresh[0].is_ok() && fresh[1].is_err() && fresh[2].is_err());
    let remembered = crate::memo::remembering(|| {
        let first = read();
        let kept = crate::memo::remembered::<Result<Config, String>>();
        assert_eq!(kept, Some(3), "an unreadable config is remembered too");
        assert_eq!(read(), first);
        assert_eq!(crate::memo::remembered::<Result<Config, String>>(), kept);
        first
    });
    assert_eq!(
        remembered, fresh,
        "the same answers with or without the memo"
    );
}
