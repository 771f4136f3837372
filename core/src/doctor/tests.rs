use super::*;
use crate::actor::ActorFacts;
use crate::policy::AgentRules;
use crate::result::Decision;
use crate::skill::SKILL;
use custody::{Custody, KeyFacts, KeyFile};
use serde_json::{Value, json};

impl Row {
    /// The code this row names: a red row's, or that of advice that is red where required.
    pub(super) fn code(&self) -> Option<ReasonCode> {
        match &self.state {
            State::Red { code, .. } => Some(*code),
            State::Advice { code, .. } => *code,
            State::Green | State::Off | State::Degraded { .. } => None,
        }
    }

    /// What this row says to do.
    pub(super) fn fix(&self) -> Option<&str> {
        match &self.state {
            State::Red { fix, .. } | State::Degraded { fix } => Some(fix),
            State::Advice { fix, .. } => fix.as_deref(),
            State::Green | State::Off => None,
        }
    }
}

/// A row's JSON, as `detail.rows` holds it.
pub(super) fn shown(row: &Row) -> Value {
    serde_json::to_value(row).expect("a row serialises")
}

fn clone_facts() -> CloneFacts {
    let entries = hook_settings::merge(Product::Claude.adapter(), None)
        .expect("a new file")
        .text;
    CloneFacts {
        remote: "origin".into(),
        reached: Ok(()),
        product: Some((Product::Claude, Some("2.1.302 (Claude Code)".into()))),
        settings_on_main: Some(entries.clone()),
        settings_here: Some(entries),
        switches: Vec::new(),
        variables: Ok(Vec::new()),
        graph_filters: true,
        graph_on_fetch: Some("yes".into()),
        registry: Some(false),
        signing: Ok(Signing::All),
    }
}

fn green() -> Facts {
    Facts {
        role: Role::Agent,
        bay_version: "0.1.0".into(),
        git: Some("git version 2.47.3\n".into()),
        sandbox: SandboxFact::Works,
        skills: vec![("/h/.claude".into(), Some(SKILL.as_bytes().to_vec()))],
        clone: Some(clone_facts()),
        custody: Custody {
            unix: true,
            keys: Vec::new(),
            sessions_here: false,
            passwordless_sudo: false,
            actor: ActorFacts {
                unix: true,
                agent_key: None,
                actors: ["ann".to_owned()].into(),
            },
            agent: AgentRules::default(),
        },
    }
}

fn row(facts: &Facts, name: &str) -> Row {
    rows(facts)
        .into_iter()
        .find(|row| row.name == name)
        .unwrap_or_else(|| panic!("no {name} row"))
}

fn with_clone(change: impl FnOnce(&mut CloneFacts)) -> Facts {
    let mut facts = green();
    if let Some(clone) = facts.clone.as_mut() {
        change(clone);
    }
    facts
}

#[test]
fn a_machine_with_every_fact_green_is_ready_and_says_its_versions() {
    let facts = green();
    let names: Vec<&str> = rows(&facts).iter().map(|r| r.name).collect();
    assert_eq!(
        names,
        [
            "bay",
            "git",
            "agent",
            "sandbox",
            "hooks",
            "skill",
            "remote",
            "store",
            "signing",
            "key-custody"
        ]
    );
    let result = judge(&facts);
    assert_eq!(result.decision, Decision::Ok);
    assert_eq!(result.exit_code(), 0);
    assert_eq!(
        result.say,
        "This machine is ready for bay (bay 0.1.0, git 2.47.3, claude 2.1.302)."
    );
    assert_eq!(result.detail["red"], json!([]));
    assert_eq!(row(&facts, "hooks").found.as_deref(), Some("on"));
    assert_eq!(shown(&row(&facts, "sandbox"))["network"], "cut");
}

#[test]
fn outside_a_clone_only_the_machine_s_rows_show() {
    let mut facts = green();
    facts.clone = None;
    let names: Vec<&str> = rows(&facts).iter().map(|r| r.name).collect();
    assert_eq!(names, ["bay", "git", "sandbox", "skill", "key-custody"]);
}

#[test]
fn the_signing_row_shows_the_mode_only_with_a_registry() {
    let r = row(&green(), "signing");
    assert_eq!(r.state, State::Off);
    assert!(
        r.found
            .as_deref()
            .is_some_and(|f| f.starts_with("unsigned"))
    );
    let facts = with_clone(|clone| {
        clone.registry = Some(true);
        clone.signing = Ok(Signing::Approvals);
    });
    let r = row(&facts, "signing");
    assert_eq!(r.state, State::Green);
    assert_eq!(r.found.as_deref(), Some("approvals"));
    assert_eq!(judge(&facts).decision, Decision::Ok);
}

#[test]
fn an_exposed_key_turns_doctor_red_with_key_exposed() {
    let mut facts = green();
    facts.custody.sessions_here = true;
    facts.custody.keys.push(KeyFile {
        setting: "bay.executorKey".into(),
        path: "/h/.ssh/runner".into(),
        found: Some(KeyFacts {
            mode: 0o600,
            readable: true,
            public: None,
            in_repository: false,
        }),
    });
    let result = judge(&facts);
    assert_eq!(result.reason, Some(ReasonCode::KeyExposed), "{result:?}");
    assert_eq!(result.detail["key"], "bay.executorKey");
}

#[test]
fn a_degraded_row_leaves_doctor_ok_with_exit_0() {
    let mut facts = green();
    facts.custody.sessions_here = true;
    facts.custody.agent.require_actor_proof = true;
    facts.custody.actor.actors = ["ann".to_owned(), "bot-7".to_owned()].into();
    facts.custody.actor.agent_key = Some(KeyFile {
        setting: "bay.agentKey".into(),
        path: "/h/.ssh/agent".into(),
        found: Some(KeyFacts {
            mode: 0o600,
            readable: true,
            public: None,
            in_repository: false,
        }),
    });
    let custody = row(&facts, "key-custody");
    assert!(
        matches!(custody.state, State::Degraded { .. }),
        "{custody:?}"
    );
    assert_eq!(shown(&custody)["actor_refusal"], "ACTOR_UNPROVEN");
    let result = judge(&facts);
    assert_eq!(result.decision, Decision::Ok, "{result:?}");
    assert_eq!(result.exit_code(), 0);
    assert_eq!(result.reason, None);
    assert_eq!(result.detail["red"], json!([]));
}

#[test]
fn git_is_judged_against_its_floor_and_an_absent_git_is_named() {
    assert_eq!(git_row(Some("git version 2.44.0")).state, State::Green);
    let old = git_row(Some("git version 2.39.5 (Apple Git-154)"));
    assert_eq!(
        (
            old.is_red(),
            old.code(),
            old.found.as_deref(),
            old.floor.as_deref()
        ),
        (
            true,
            Some(ReasonCode::ToolBelowFloor),
            Some("2.39.5"),
            Some("2.44")
        )
    );
    assert!(old.fix().is_some_and(|f| f.contains("2.44")));
    let none = git_row(None);
    assert_eq!(none.code(), Some(ReasonCode::ToolAbsent));
    assert_eq!(shown(&none)["tool"], "git");
    assert_eq!(
        git_row(Some("garbage")).code(),
        Some(ReasonCode::ToolBelowFloor)
    );
}

#[test]
fn the_agent_product_is_absent_below_or_at_its_floor() {
    let absent = with_clone(|c| c.product = Some((Product::Codex, None)));
    let r = row(&absent, "agent");
    assert_eq!((r.is_red(), r.code()), (true, Some(ReasonCode::ToolAbsent)));
    assert_eq!(shown(&r)["tool"], "codex");
    assert_eq!(r.floor.as_deref(), Some("0.153.2"));
    let below =
        with_clone(|c| c.product = Some((Product::Claude, Some("2.1.99 (Claude Code)".into()))));
    let r = row(&below, "agent");
    assert_eq!(r.code(), Some(ReasonCode::ToolBelowFloor));
    assert_eq!(
        (r.found.as_deref(), r.floor.as_deref()),
        (Some("2.1.99"), Some("2.1.302"))
    );
    let result = judge(&below);
    assert_eq!(result.reason, Some(ReasonCode::ToolBelowFloor));
    assert_eq!(
        (
            result.detail["tool"].clone(),
            result.detail["floor"].clone()
        ),
        (json!("claude"), json!("2.1.302"))
    );
    assert_eq!(result.exit_code(), 10);
    let newer =
        with_clone(|c| c.product = Some((Product::Codex, Some("codex-cli 0.160.0".into()))));
    assert_eq!(row(&newer, "agent").state, State::Green);
    let off = with_clone(|c| c.product = None);
    assert_eq!(row(&off, "agent").state, State::Off);
    assert_eq!(row(&off, "hooks").state, State::Off);
    assert_eq!(judge(&off).decision, Decision::Ok);
}

#[test]
fn versions_are_read_from_what_products_print() {
    assert_eq!(
        product_version("2.1.302 (Claude Code)"),
        Some(vec![2, 1, 302])
    );
    assert_eq!(
        product_version("codex-cli 0.153.2\n"),
        Some(vec![0, 153, 2])
    );
    assert_eq!(product_version("v1.2"), Some(vec![1, 2]));
    assert_eq!(product_version("Claude Code"), None);
    assert!(vec![2, 1, 302] > vec![2, 1, 99]);
}

#[test]
fn the_sandbox_is_required_only_of_a_runner() {
    let gone = SandboxFact::Unavailable(
        "no check sandbox works on this machine: bwrap is not installed".into(),
    );
    let agent = sandbox_row(Role::Agent, &gone);
    assert!(
        matches!(agent.state, State::Advice { .. }) && !agent.required,
        "{agent:?}"
    );
    let runner = sandbox_row(Role::Executor, &gone);
    assert_eq!(
        (runner.is_red(), runner.code()),
        (true, Some(ReasonCode::SandboxAbsent))
    );
    assert!(runner.fix().is_some_and(|f| f.contains("bwrap")));
    assert_eq!(
        sandbox_row(Role::Executor, &SandboxFact::Waived).state,
        State::Off
    );
    let mut facts = green();
    facts.sandbox = gone;
    assert_eq!(judge(&facts).decision, Decision::Ok);
    facts.role = Role::Executor;
    assert_eq!(judge(&facts).reason, Some(ReasonCode::SandboxAbsent));
}

#[test]
fn hooks_are_red_until_main_holds_current_entries_and_nothing_turns_them_off() {
    let nowhere = with_clone(|c| {
        c.settings_on_main = None;
        c.settings_here = None;
    });
    let r = row(&nowhere, "hooks");
    assert_eq!(
        (r.is_red(), r.code()),
        (true, Some(ReasonCode::HooksMissing))
    );
    assert!(r.fix().is_some_and(|f| f.contains("bay install")));
    let here_only = with_clone(|c| c.settings_on_main = None);
    let hooks = row(&here_only, "hooks");
    let fix = hooks.fix().unwrap_or_default();
    assert!(
        fix.contains(LAND_COMMAND) && !fix.contains("bay install"),
        "{fix}"
    );
    let old = r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"bay hook tool_before"}]}]}}"#;
    let renamed = with_clone(|c| c.settings_on_main = Some(old.into()));
    let r = row(&renamed, "hooks");
    assert!(r.is_red(), "{r:?}");
    assert_eq!(shown(&r)["old_names"], json!(["tool_before"]));
    let off = with_clone(|c| {
        c.switches = vec![(
            ".claude/settings.local.json".into(),
            r#"{"disableAllHooks": true}"#.into(),
        )]
    });
    let r = row(&off, "hooks");
    assert_eq!(r.code(), Some(ReasonCode::HooksMissing));
    assert_eq!(
        shown(&r)["turned_off_by"],
        json!([{"file": ".claude/settings.local.json", "key": "disableAllHooks"}])
    );
    assert!(r.fix().is_some_and(|f| f.contains("disableAllHooks")));
    let managed = with_clone(|c| {
        c.switches = vec![(
            "/h/.claude/settings.json".into(),
            r#"{"allowManagedHooksOnly":true,"disableAllHooks":false}"#.into(),
        )]
    });
    assert_eq!(
        shown(&row(&managed, "hooks"))["turned_off_by"][0]["key"],
        "allowManagedHooksOnly"
    );
    let harmless =
        with_clone(|c| c.switches = vec![("x".into(), r#"{"disableAllHooks": false}"#.into())]);
    assert_eq!(row(&harmless, "hooks").state, State::Green);
}

#[test]
fn each_config_directory_s_skill_is_compared() {
    let mut facts = green();
    facts.skills = vec![
        ("/h/.claude".into(), Some(SKILL.as_bytes().to_vec())),
        ("/h/.claude-work".into(), Some(b"an old skill".to_vec())),
        ("/h/team".into(), None),
    ];
    let r = row(&facts, "skill");
    assert_eq!(
        (r.is_red(), r.code()),
        (true, Some(ReasonCode::SkillMismatch))
    );
    assert_eq!(
        shown(&r)["mismatched"],
        json!(["/h/.claude-work", "/h/team"])
    );
    assert_eq!(
        shown(&r)["dirs"][1],
        json!({"dir": "/h/.claude-work", "state": "differs"})
    );
    assert_eq!(shown(&r)["dirs"][2]["state"], "missing");
    let result = judge(&facts);
    assert_eq!(result.reason, Some(ReasonCode::SkillMismatch));
    assert_eq!(
        result.say,
        "This machine is not ready for bay (bay 0.1.0, git 2.47.3, claude 2.1.302); fix skill as \
         the details say, then run `bay doctor` again."
    );
}

#[test]
fn an_unreachable_remote_is_red_with_what_git_said() {
    let facts = with_clone(|c| c.reached = Err("fatal: could not read from remote".into()));
    let r = row(&facts, "remote");
    assert_eq!(r.code(), Some(ReasonCode::RemoteUnreachable));
    assert_eq!(shown(&r)["why"], "fatal: could not read from remote");
    assert_eq!(judge(&facts).reason, Some(ReasonCode::RemoteUnreachable));
}

#[test]
fn a_runner_needs_every_check_variable_set() {
    let var = |name: &str| Variable {
        check: "unit".into(),
        environment: "linux".into(),
        name: name.into(),
    };
    let mut facts =
        with_clone(|c| c.variables = Ok(vec![(var("TOKEN"), false), (var("HOME"), true)]));
    assert!(
        rows(&facts).iter().all(|r| r.name != "check-env"),
        "an agent is not asked"
    );
    facts.role = Role::Executor;
    let r = row(&facts, "check-env");
    assert_eq!(r.code(), Some(ReasonCode::CheckEnvUnset));
    assert_eq!(shown(&r)["variables"], json!(["TOKEN"]));
    let result = judge(&facts);
    assert_eq!(result.reason, Some(ReasonCode::CheckEnvUnset));
    assert_eq!(result.detail["variables"], json!(["TOKEN"]));
    let unread = with_clone(|c| c.variables = Err("bad".into()));
    let mut unread = unread;
    unread.role = Role::Executor;
    assert!(matches!(
        row(&unread, "check-env").state,
        State::Advice { .. }
    ));
}

#[test]
fn check_variables_come_from_the_policy() {
    let policy = "revision = 1\n[[check]]\nid = \"unit\"\nenvironment = \"linux\"\ncommand = \
                  \"ci/test\"\nadapter = [\"ci/test\"]\nexpected_minimum = 1\nenv = [\"TOKEN\", \"CACHE\"]\n";
    let names: Vec<String> = variables(policy)
        .expect("a valid policy")
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(names, ["TOKEN", "CACHE"]);
    assert!(variables("revision = ").is_err());
}

#[test]
fn the_store_only_advises() {
    let facts = with_clone(|c| c.graph_filters = false);
    let r = row(&facts, "store");
    assert!(
        matches!(r.state, State::Advice { .. }) && !r.required,
        "{r:?}"
    );
    assert_eq!(judge(&facts).decision, Decision::Ok);
    // Git's booleans as Git reads them: `yes` is written on fetch, `off` and none are not.
    assert_eq!(row(&with_clone(|_| {}), "store").state, State::Green);
    for off in [Some("off"), None] {
        let facts = with_clone(|c| c.graph_on_fetch = off.map(str::to_owned));
        assert!(
            matches!(row(&facts, "store").state, State::Advice { .. }),
            "{off:?}"
        );
    }
}

#[test]
fn the_first_red_row_names_the_reason_and_every_red_row_is_listed() {
    let mut facts = with_clone(|c| c.reached = Err("down".into()));
    facts.git = Some("git version 2.30.1".into());
    let result = judge(&facts);
    assert_eq!(result.reason, Some(ReasonCode::ToolBelowFloor));
    assert_eq!(result.detail["red"], json!(["git", "remote"]));
    assert_eq!(result.detail["tool"], "git");
    assert_eq!(
        crate::words::forbidden_word(&result.say),
        None,
        "{}",
        result.say
    );
}

#[test]
fn a_runner_refuses_below_the_floor_or_without_a_sandbox() {
    assert_eq!(
        runner_refusal(Some("git version 2.47.3"), &SandboxFact::Works),
        None
    );
    assert_eq!(
        runner_refusal(Some("git version 2.47.3"), &SandboxFact::Waived),
        None
    );
    let old = runner_refusal(Some("git version 2.40.0"), &SandboxFact::Works).expect("refused");
    assert_eq!(old.reason, Some(ReasonCode::ToolBelowFloor));
    assert_eq!(
        (old.detail["tool"].clone(), old.detail["floor"].clone()),
        (json!("git"), json!("2.44"))
    );
    let bare = runner_refusal(
        Some("git version 2.47.3"),
        &SandboxFact::Unavailable("bwrap is not installed".into()),
    )
    .expect("refused");
    assert_eq!(bare.reason, Some(ReasonCode::SandboxAbsent));
    assert_eq!(bare.detail["fix"], "bwrap is not installed");
    assert_eq!(bare.exit_code(), 10);
}

#[test]
fn each_kind_of_row_shows_exactly_its_facts() {
    let var = |name: &str| Variable {
        check: "unit".into(),
        environment: "linux".into(),
        name: name.into(),
    };
    let mut unset = with_clone(|c| c.variables = Ok(vec![(var("TOKEN"), false)]));
    unset.role = Role::Executor;
    let mut skill = green();
    skill.skills = vec![("/h/team".into(), None)];
    let switched = with_clone(|c| {
        c.switches = vec![(
            ".claude/settings.local.json".into(),
            r#"{"disableAllHooks": true}"#.into(),
        )]
    });
    let unknown = with_clone(|c| {
        c.registry = None;
        c.signing = Err("no policy".into());
    });
    let signed = with_clone(|c| {
        c.registry = Some(true);
        c.signing = Ok(Signing::Approvals);
    });
    let cases = [
        (
            row(&green(), "bay"),
            json!({"name": "bay", "state": "green", "required": true, "found": "0.1.0"}),
        ),
        (
            git_row(None),
            json!({
                "name": "git", "state": "red", "required": true, "floor": "2.44",
                "code": "TOOL_ABSENT", "fix": "install Git 2.44 or newer and put it on PATH",
                "tool": "git",
            }),
        ),
        (
            row(&with_clone(|c| c.product = None), "agent"),
            json!({
                "name": "agent", "state": "off", "required": true,
                "why": "main names no [agent] product",
            }),
        ),
        (
            sandbox_row(Role::Agent, &SandboxFact::Works),
            json!({
                "name": "sandbox", "state": "green", "required": true, "found": "bwrap",
                "floor": "bwrap that can cut off the network", "network": "cut",
            }),
        ),
        (
            sandbox_row(Role::Agent, &SandboxFact::Unavailable("no bwrap".into())),
            json!({
                "name": "sandbox", "state": "advice", "required": false,
                "floor": "bwrap that can cut off the network", "code": "SANDBOX_ABSENT",
                "fix": "no bwrap", "sandbox": "bwrap",
            }),
        ),
        (
            row(&switched, "hooks"),
            json!({
                "name": "hooks", "state": "red", "required": true, "found": "missing",
                "code": "HOOKS_MISSING",
                "fix": "remove disableAllHooks from .claude/settings.local.json; it turns off \
                        every hook, bay's included",
                "product": "claude", "file": ".claude/settings.json",
                "turned_off_by": [
                    {"file": ".claude/settings.local.json", "key": "disableAllHooks"},
                ],
            }),
        ),
        (
            row(&skill, "skill"),
            json!({
                "name": "skill", "state": "red", "required": true, "code": "SKILL_MISMATCH",
                "fix": "run `bay install` to copy this bay's skill into each directory",
                "mismatched": ["/h/team"], "dirs": [{"dir": "/h/team", "state": "missing"}],
            }),
        ),
        (
            row(&unset, "check-env"),
            json!({
                "name": "check-env", "state": "red", "required": true,
                "code": "CHECK_ENV_UNSET",
                "fix": "set TOKEN in the runner's environment, then start it again",
                "variables": ["TOKEN"],
                "unset": [{"check": "unit", "environment": "linux", "variable": "TOKEN"}],
            }),
        ),
        (
            row(&with_clone(|c| c.graph_filters = false), "store"),
            json!({
                "name": "store", "state": "advice", "required": false,
                "fix": "run `bay install` here: it writes the commit-graph and its settings",
                "changed_path_filters": false, "written_on_fetch": true,
            }),
        ),
        (
            row(&unknown, "signing"),
            json!({
                "name": "signing", "state": "advice", "required": true,
                "found": "not known: the remote did not answer", "policy": "no policy",
                "registry": null,
            }),
        ),
        (
            row(&signed, "signing"),
            json!({
                "name": "signing", "state": "green", "required": true, "found": "approvals",
                "mode": "approvals", "registry": true,
            }),
        ),
    ];
    for (row, json) in cases {
        assert_eq!(shown(&row), json, "{}", row.name);
    }
}

#[test]
fn a_red_row_s_refusal_holds_exactly_its_facts_and_other_rows_refuse_nothing() {
    let git = runner_refusal(None, &SandboxFact::Works).expect("refused");
    assert_eq!(git.reason, Some(ReasonCode::ToolAbsent));
    assert_eq!(
        Value::Object(git.detail),
        json!({
            "tool": "git", "floor": "2.44",
            "fix": "install Git 2.44 or newer and put it on PATH",
        })
    );
    let sandbox = SandboxFact::Unavailable("no bwrap".into());
    let refused = sandbox_refusal(&sandbox).expect("refused");
    assert_eq!(
        Value::Object(refused.detail),
        json!({
            "floor": "bwrap that can cut off the network", "fix": "no bwrap",
            "sandbox": "bwrap",
        })
    );
    // The same row as an agent's is advice, with its code and fix, and refuses nothing.
    assert_eq!(sandbox_row(Role::Agent, &sandbox).refusal(None), None);
    assert_eq!(sandbox_refusal(&SandboxFact::Works), None);
}

#[test]
fn doctor_s_detail_is_its_report_and_a_red_row_s_facts_sit_beside_it() {
    let rows = vec![
        Row::green("bay", Some("0.1.0".into())),
        git_row(None),
        row(&green(), "agent"),
    ];
    let report = Report::of(Role::Executor, rows.clone());
    let json = json!({
        "role": "executor",
        "versions": [
            {"tool": "bay", "version": "0.1.0"},
            {"tool": "claude", "version": "2.1.302"},
        ],
        "red": ["git"],
        "rows": [shown(&rows[0]), shown(&rows[1]), shown(&rows[2])],
    });
    assert_eq!(report.to_json(), json);
    let refused = rows[1].refusal(Some(&report)).expect("refused");
    let mut beside = json;
    if let Some(detail) = beside.as_object_mut() {
        detail.extend([
            ("tool".to_owned(), json!("git")),
            ("floor".to_owned(), json!("2.44")),
            (
                "fix".to_owned(),
                json!("install Git 2.44 or newer and put it on PATH"),
            ),
        ]);
    }
    assert_eq!(Value::Object(refused.detail), beside);
    assert_eq!(rows[2].refusal(Some(&report)), None);
    let facts = green();
    assert_eq!(
        judge(&facts).detail,
        Report::of(Role::Agent, super::rows(&facts)).to_map()
    );
}

#[test]
fn a_version_meets_a_floor_at_or_below_it_and_never_one_that_is_no_version() {
    assert!(super::meets_floor(&[2, 1, 0], "2.1.0"));
    assert!(super::meets_floor(&[2, 2], "2.1.9"));
    assert!(!super::meets_floor(&[2, 0, 9], "2.1.0"));
    assert!(!super::meets_floor(&[99, 0], "not a version"));
}

#[test]
fn every_agent_product_s_floor_is_a_version() {
    for product in Product::ALL {
        let floor = product.adapter().floor;
        assert!(product_version(floor).is_some(), "{product:?}: {floor}");
    }
}
