//! Tests of `policy.rs`.

use super::*;
use proptest::prelude::*;

#[test]
fn agent_rules_hold_nothing_without_a_readable_policy() {
    assert!(Policy::agent_side(None).is_none());
    assert!(Policy::agent_side(Some("revision = \"x\"\n")).is_none());
    let rules = Policy::agent_side(Some(
        "revision = 1\nunchecked = true\n\n[agent]\nmax_live_changes = 2\n",
    ));
    assert_eq!(rules.map(|p| p.agent.max_live_changes), Some(Some(2)));
}

#[test]
fn require_actor_proof_is_read_and_off_by_default() {
    let read = |agent: &str| {
        Policy::parse(&format!(
            "revision = 1\nunchecked = true\n\n[agent]\n{agent}"
        ))
        .expect("a policy")
        .agent
        .require_actor_proof
    };
    assert!(!read(""));
    assert!(!read("require_actor_proof = false\n"));
    assert!(read("require_actor_proof = true\n"));
    let unset = Policy::parse("revision = 1\nunchecked = true\n").expect("a policy");
    let off =
        Policy::parse("revision = 1\nunchecked = true\n[agent]\nrequire_actor_proof = false\n")
            .expect("a policy");
    assert_eq!(
        unset.digest(),
        off.digest(),
        "the default spelt out changes nothing"
    );
    let on = Policy::parse("revision = 1\nunchecked = true\n[agent]\nrequire_actor_proof = true\n")
        .expect("a policy");
    assert_ne!(unset.digest(), on.digest());
}

/// The policy example of the Configuration page, whole.
const SPEC_EXAMPLE: &str = r#"# .bay/policy.toml (on main)
revision = 5                       # an integer; every policy change raises it

[[check]]
id = "tests"
environment = "linux-x86_64"
command = "scripts/bay-check tests"
adapter = ["scripts/bay-check", "scripts/bay-check.d/", "pytest.ini"]
inputs = []                        # inputs beyond the tree; "commit" or "history" keys evidence by commit
expected_minimum = 400             # required, no default
timeout_s = 1800
path = ["/usr/local/bin", "/usr/bin", "/bin"]   # absolute directories; the check's PATH
env = ["DATABASE_URL"]             # the only variables passed from the runner
retry_on_failure = 1               # rerun a failure on the same tree, up to 5 times
allow_flaky = false                # a failure then a pass is flaky: CHECK_FLAKY

[[check]]
id = "e2e"
environment = "linux-x86_64"
command = "scripts/bay-check e2e"
adapter = ["scripts/bay-check", "scripts/bay-check.d/"]
expected_minimum = 20

[[quarantine]]                     # optional: one check set aside for a stated time
id = "e2e"                         # a required check with expected_minimum above zero must remain
environment = "linux-x86_64"
reason = "red on main since change k3m9p1; fix in progress"
end = "2026-10-25"                 # a date or a Change-Id
owner = "platform-team"            # optional: who answers for it
since = "2026-10-18"               # optional: when it was set aside; bay status shows its age

[limits]                           # optional; each key a positive integer
max_file_mib = 10                  # any one file the change adds or changes, in MiB
max_files = 200                    # the files it touches
max_added_lines = 5000             # the lines it adds; a binary file adds none
max_waiting_approvals = 5          # changes that may wait for a yes at once

[locks]                            # optional: files that never merge
paths = ["art/", "**/*.psd"]       # globs; one session at a time edits each, across machines
"#;

/// The `[[check]]` examples elsewhere on the page that use only keys this bay acts on.
const SPEC_CHECK_EXAMPLES: [&str; 5] = [
    r#"[[check]]
id = "web"
environment = "linux-x86_64"
command = "scripts/bay-check web"
adapter = ["scripts/bay-check"]
expected_minimum = 50
when_paths = ["web/", "package.json"]   # required only when the diff touches these
producers = ["ci-1", "ci-2"]            # only these producers' records count
"#,
    r#"[[check]]
id = "tests"
environment = "linux-x86_64"
command = "scripts/bay-check tests"
adapter = ["scripts/bay-check"]
expected_minimum = 400
retry_on_failure = 2               # rerun a product_failure up to twice
allow_flaky = false                # true: merge a flaky check, named in coverage_gaps
"#,
    r#"[[check]]
id = "tests"
environment = "linux-x86_64"
command = "scripts/bay-check tests"
adapter = ["scripts/bay-check"]
expected_minimum = 400
baseline = "base"                  # fail a change only on failures main does not share
"#,
    r#"[[check]]
id = "commit-rules"
environment = "linux-x86_64"
command = "scripts/bay-check commit-rules"
adapter = ["scripts/bay-check"]
expected_minimum = 1
inputs = ["history"]               # the request's git reads history; evidence keyed by commit
"#,
    r#"[[check]]
id = "lint"
environment = "linux-x86_64"
command = "scripts/bay-check lint"
adapter = ["scripts/bay-check"]
expected_minimum = 1
materialize = "changed"            # only the changed files, plus paths
paths = [".lint.toml"]             # always given to the check
"#,
];

/// The approval check examples of "Require a person's approval"; an approval check cannot
/// stand alone, since every policy needs a check bay runs, so each sits beside [`RUN_CHECK`].
const SPEC_APPROVAL_EXAMPLES: [&str; 2] = [
    r#"[[check]]
id = "billing-approval"
environment = "people"
kind = "approval"                  # a person answers; bay runs nothing
when_paths = ["billing/"]          # the paths that need a yes
producers = ["alice"]              # optional: only these approvers count
"#,
    r#"[[check]]
id = "billing-approval"
environment = "people"
kind = "approval"
when_paths = ["billing/"]
carry = false                      # ask again on every candidate
"#,
];

/// The policy examples of the specification that hold a key this bay does not act on yet,
/// each with that key (its first in the text). Each sits beside [`RUN_CHECK`].
const SPEC_LATER_EXAMPLES: [(&str, &str); 1] = [(
    r#"[[input]]
name = "contract:api.orders"
provider = "scripts/contract-version api.orders"
adapter = ["scripts/contract-version"]
path = ["/usr/bin", "/bin"]
phase = "expand"                   # expand, migrate or contract
timeout_s = 30
"#,
    "input",
)];

/// The page's check that declares its read set.
const SPEC_FOOTPRINT_EXAMPLE: &str = r#"[[check]]
id = "api"
environment = "linux-x86_64"
command = "scripts/bay-check api"
adapter = ["scripts/bay-check"]
expected_minimum = 50
when_paths = ["api/"]
footprint = true                   # the verdict reads only api/
"#;

/// A check bay runs that expects tests, for examples that cannot stand alone.
const RUN_CHECK: &str = "[[check]]\nid = \"unit\"\nenvironment = \"linux\"\n\
        command = \"scripts/check\"\nadapter = [\"scripts/check\"]\nexpected_minimum = 1\n";

/// The size caps example of the page.
const SPEC_LIMITS_EXAMPLE: &str = r#"# .bay/policy.toml on main
[limits]                           # each key optional; leave one out for no cap
max_file_mib = 10
max_files = 200
max_added_lines = 5000
"#;

/// A policy that sets every key the specification defines, the later ones too, each to a
/// valid value: the text the mutation tests start from. The profile names a dimension the
/// text declares only after it.
const EVERY_KEY: &str = r#"revision = 9
unchecked = false

[[check]]
id = "tests"
environment = "linux"
kind = "check"
command = "scripts/bay-check tests"
adapter = ["scripts/bay-check", "scripts/bay-check.d/"]
inputs = ["commit", "history"]
fixtures = ["db@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"]
expected_minimum = 400
timeout_s = 900
path = ["/usr/bin", "/bin"]
env = ["DATABASE_URL"]
network = true
paths = ["src/", "Cargo.toml"]
materialize_timeout_s = 120
stage = "pre"
when_paths = ["src/**", "*.toml"]
producers = ["ci-1"]
retry_on_failure = 2
allow_flaky = true
baseline = "base"
footprint = true
waivable = true

[[check]]
id = "smoke"
environment = "linux"
command = "scripts/bay-check smoke"
adapter = ["scripts/bay-check"]
expected_minimum = 1
stage = "post"
materialize = "changed"

[[check]]
id = "billing"
environment = "people"
kind = "approval"
when_paths = ["billing/"]
producers = ["alice"]
carry = false

[[quarantine]]
id = "smoke"
environment = "linux"
reason = "flaky since the cache moved"
end = "c7k2m4qa"
owner = "platform"
since = "2026-01-31"

[limits]
max_file_mib = 10
max_files = 200
max_added_lines = 5000
max_waiting_approvals = 5

[locks]
paths = ["art/", "**/*.psd"]

[[input]]
name = "contract:api.orders"
provider = "scripts/contract-version api.orders"
adapter = ["scripts/contract-version"]
path = ["/usr/bin"]
phase = "migrate"
timeout_s = 300

[profile.default]
require = ["merged", "checked", "reviewed"]
require_signed = true

[[dimension]]
name = "reviewed"
kind = "review"
producers = ["review-bot"]

[agent]
require_actor = true
require_actor_proof = true
max_live_changes = 3

[policy]
signing = "approvals"
reuse_unsigned = true
"#;

/// Every key and table this bay validates and then refuses.
fn later_keys() -> Vec<&'static str> {
    TOP_NOT_YET.to_vec()
}

/// Removes every line that sets one of `keys`, and every table whose header names one. A
/// `[[dimension]]`'s `kind` is no check's `kind`, and stays.
fn trim(text: &str, keys: &[&str]) -> String {
    let mut out = String::new();
    let mut skipping = false;
    let mut in_dimension = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('[') {
            let name = trimmed.trim_start_matches('[');
            let name = name.split([']', '.']).next().unwrap_or_default();
            skipping = keys.contains(&name);
            in_dimension = name == "dimension";
        }
        let key = trimmed.split([' ', '=']).next().unwrap_or_default();
        if skipping || (keys.contains(&key) && !in_dimension) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn refuse(text: &str) -> TomlError {
    Policy::parse(text)
        .expect_err("the policy must be refused")
        .0
}

fn accept(text: &str) -> Policy {
    match Policy::parse(text) {
        Ok(policy) => policy,
        Err(error) => panic!("the policy must be accepted: {error}\n{text}"),
    }
}

/// Refuses `text` as valid but for a key this bay does not act on yet.
fn not_yet(text: &str) -> TomlError {
    let error = refuse(text);
    assert!(
        error.message.contains("does not support") && error.message.contains("yet"),
        "refused for another reason than a later key: {error}\n{text}"
    );
    error
}

/// The key, table and line of a refusal.
fn place(error: &TomlError) -> (Option<&str>, &str, u32) {
    (error.key.as_deref(), error.table.as_str(), error.line)
}

fn line_of(text: &str, needle: &str) -> u32 {
    let index = text.find(needle).expect("the needle is in the text");
    crate::toml_doc::Lines::new(text).line(index)
}

/// A valid one-check policy with `extra` added to the check.
fn one_check(extra: &str) -> String {
    format!(
        "revision = 1\n\n[[check]]\nid = \"unit\"\nenvironment = \"linux\"\n\
             command = \"scripts/check unit\"\nadapter = [\"scripts/check\"]\n{extra}"
    )
}

fn with_minimum(extra: &str) -> String {
    one_check(&format!("expected_minimum = 5\n{extra}"))
}

/// `with_minimum("")` and then `more`: other checks or tables.
fn beside(more: &str) -> String {
    format!("{}\n{more}", with_minimum(""))
}

/// Removes what a not-yet refusal names: the approval check, the top-level table, or the
/// key's line.
fn remove_refused(text: &str, error: &TomlError) -> String {
    let key = error.key.as_deref().expect("a later key is named");
    if error.table == "top level" {
        return trim(text, &[key]);
    }
    let lines: Vec<&str> = text.lines().collect();
    let at = error.line as usize - 1;
    if key == "kind" {
        let start = (0..=at)
            .rev()
            .find(|&i| lines[i].starts_with("[[check]]"))
            .expect("a header");
        let end = (at + 1..lines.len())
            .find(|&i| lines[i].starts_with('['))
            .unwrap_or(lines.len());
        return lines[..start]
            .iter()
            .chain(&lines[end..])
            .map(|line| format!("{line}\n"))
            .collect();
    }
    lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, line)| format!("{line}\n"))
        .collect()
}

#[test]
fn the_spec_example_is_accepted_whole() {
    let policy = accept(SPEC_EXAMPLE);
    assert_eq!(policy.locks, ["art/", "**/*.psd"]);
    assert_eq!(policy.limits.max_waiting_approvals, Some(5));
    assert!(!policy.limits.sizes_unset());
}

#[test]
fn the_spec_example_without_its_later_keys_reads_whole() {
    let policy = accept(&trim(SPEC_EXAMPLE, &later_keys()));
    assert_eq!(policy.revision, 5);
    assert!(!policy.unchecked);
    assert_eq!(policy.checks.len(), 2);
    let tests = &policy.checks[0];
    assert_eq!(tests.id, "tests");
    assert_eq!(tests.environment, "linux-x86_64");
    assert_eq!(tests.command, "scripts/bay-check tests");
    assert_eq!(
        tests.adapter,
        ["scripts/bay-check", "scripts/bay-check.d/", "pytest.ini"]
    );
    assert!(tests.inputs.is_empty());
    assert_eq!(tests.expected_minimum, 400);
    assert_eq!(tests.timeout_s, 1800);
    assert_eq!(tests.path, ["/usr/local/bin", "/usr/bin", "/bin"]);
    assert_eq!(tests.env, ["DATABASE_URL"]);
    assert_eq!((tests.retry_on_failure, tests.allow_flaky), (1, false));
    assert!(!tests.network);
    let e2e = &policy.checks[1];
    assert_eq!((e2e.id.as_str(), e2e.expected_minimum), ("e2e", 20));
    assert_eq!(e2e.timeout_s, DEFAULT_TIMEOUT_S);
    assert_eq!(e2e.path, DEFAULT_PATH);
    assert!(e2e.env.is_empty());
    for check in &policy.checks {
        assert_eq!(check.stage, Stage::Pre);
        assert_eq!(check.materialize, Materialize::Tree);
        assert_eq!(check.materialize_timeout_s, DEFAULT_MATERIALIZE_TIMEOUT_S);
        assert_eq!(
            (&check.paths, &check.when_paths, &check.producers),
            (&None, &None, &None)
        );
        assert!(check.fixtures.is_empty() && check.baseline.is_none());
    }
    assert_eq!(
        policy.quarantine,
        [Quarantine {
            id: "e2e".into(),
            environment: "linux-x86_64".into(),
            reason: "red on main since change k3m9p1; fix in progress".into(),
            end: QuarantineEnd::Date("2026-10-25".into()),
            owner: Some("platform-team".into()),
            since: Some("2026-10-18".into()),
        }]
    );
    assert_eq!(policy.quarantine_of(e2e), Some(&policy.quarantine[0]));
    assert_eq!(policy.quarantine_of(tests), None);
    assert_eq!(
        policy.limits,
        Limits {
            max_file_mib: Some(10),
            max_files: Some(200),
            max_added_lines: Some(5000),
            max_waiting_approvals: Some(5),
        }
    );
}

#[test]
fn the_spec_check_examples_parse() {
    for example in SPEC_CHECK_EXAMPLES {
        let policy = accept(&format!("revision = 1\n{example}"));
        assert_eq!(policy.checks.len(), 1);
    }
    let web = &accept(&format!("revision = 1\n{}", SPEC_CHECK_EXAMPLES[0])).checks[0];
    assert_eq!(
        web.when_paths.as_deref(),
        Some(&["web/".to_owned(), "package.json".to_owned()][..])
    );
    assert_eq!(
        web.producers.as_deref(),
        Some(&["ci-1".to_owned(), "ci-2".to_owned()][..])
    );
    let flaky = &accept(&format!("revision = 1\n{}", SPEC_CHECK_EXAMPLES[1])).checks[0];
    assert_eq!((flaky.retry_on_failure, flaky.allow_flaky), (2, false));
    let baseline = &accept(&format!("revision = 1\n{}", SPEC_CHECK_EXAMPLES[2])).checks[0];
    assert_eq!(baseline.baseline, Some(Baseline::Base));
    let history = &accept(&format!("revision = 1\n{}", SPEC_CHECK_EXAMPLES[3])).checks[0];
    assert_eq!(history.inputs, [CheckInput::History]);
    let lint = &accept(&format!("revision = 1\n{}", SPEC_CHECK_EXAMPLES[4])).checks[0];
    assert_eq!(lint.materialize, Materialize::Changed);
    assert_eq!(lint.paths.as_deref(), Some(&[".lint.toml".to_owned()][..]));
    let limits = accept(&format!("revision = 1\n{RUN_CHECK}\n{SPEC_LIMITS_EXAMPLE}")).limits;
    assert_eq!(
        (
            limits.max_file_mib,
            limits.max_files,
            limits.max_added_lines
        ),
        (Some(10), Some(200), Some(5000))
    );
}

#[test]
fn the_spec_examples_of_later_features_are_refused_by_name() {
    for (example, key) in SPEC_LATER_EXAMPLES {
        let text = format!("revision = 1\n{RUN_CHECK}\n{example}");
        let error = not_yet(&text);
        assert_eq!(error.key.as_deref(), Some(key), "{error}");
        let needle = if TOP_NOT_YET.contains(&key) {
            format!("[{key}")
        } else {
            format!("{key} =")
        };
        assert_eq!(error.line, line_of(&text, &needle), "{error}");
        accept(&trim(&text, &later_keys()));
    }
}

#[test]
fn the_spec_footprint_example_declares_its_read_set() {
    let policy = accept(&format!(
        "revision = 1\n{RUN_CHECK}\n{SPEC_FOOTPRINT_EXAMPLE}"
    ));
    let api = &policy.checks[1];
    assert!(api.footprint);
    assert_eq!(
        crate::check::footprint::read_set(api),
        Some(&["api/".to_owned()][..])
    );
}

#[test]
fn the_spec_approval_examples_parse_as_approval_checks() {
    for example in SPEC_APPROVAL_EXAMPLES {
        let policy = accept(&format!("revision = 1\n{RUN_CHECK}\n{example}"));
        assert_eq!(policy.checks.len(), 1, "an approval check runs nothing");
        let approval = &policy.approvals[0];
        assert_eq!(approval.id, "billing-approval");
        assert_eq!(approval.environment, "people");
        assert_eq!(approval.when_paths, ["billing/"]);
    }
    let named = accept(&format!(
        "revision = 1\n{RUN_CHECK}\n{}",
        SPEC_APPROVAL_EXAMPLES[0]
    ));
    assert_eq!(
        named.approvals[0].producers.as_deref(),
        Some(&["alice".to_owned()][..])
    );
    assert_eq!(named.approvals[0].carry, None);
    let every = accept(&format!(
        "revision = 1\n{RUN_CHECK}\n{}",
        SPEC_APPROVAL_EXAMPLES[1]
    ));
    assert_eq!(every.approvals[0].carry, Some(false));
    // An approval check enters the digest; a policy without one keeps the digest it had.
    let plain = accept(&format!("revision = 1\n{RUN_CHECK}"));
    assert_ne!(named.digest(), plain.digest());
    assert!(
        !serde_json::to_string(&plain)
            .expect("json")
            .contains("approvals")
    );
}

#[test]
fn every_key_validates_and_then_each_later_one_is_refused_in_text_order() {
    let mut text = EVERY_KEY.to_owned();
    let mut refused = Vec::new();
    loop {
        match Policy::parse(&text) {
            Ok(policy) => {
                assert_eq!(policy.checks.len(), 2);
                assert_eq!(policy.approvals.len(), 1, "an approval check is acted on");
                assert_eq!(policy.quarantine.len(), 1);
                assert!(policy.reuse_unsigned, "[policy] reuse_unsigned is acted on");
                assert_eq!(policy.signing, Signing::Approvals, "[policy] signing too");
                assert_eq!(
                    policy.agent,
                    AgentRules {
                        require_actor: true,
                        max_live_changes: Some(3),
                        require_actor_proof: true,
                    },
                    "[agent] is acted on"
                );
                assert_eq!(policy.locks, ["art/", "**/*.psd"], "[locks] is acted on");
                assert_eq!(policy.dimensions[0].name, "reviewed", "[[dimension]] too");
                assert!(policy.profiles["default"].require_signed, "[profile.*] too");
                break;
            }
            Err(error) => {
                let error = error.0;
                assert!(error.message.contains("does not support"), "{error}");
                refused.push(error.key.clone().expect("a key"));
                text = remove_refused(&text, &error);
            }
        }
    }
    let keys: Vec<&str> = refused.iter().map(String::as_str).collect();
    assert_eq!(keys, ["input"]);
}

#[test]
fn a_later_key_is_refused_only_once_everything_else_is_valid() {
    // The later table comes first in the text, the broken check after it.
    let error = refuse(&with_minimum("waivable = true\ntimeout_s = 0\n"));
    assert_eq!(place(&error), (Some("timeout_s"), "[[check]] #1", 10));
    // The later table comes first in the text, the broken check after it.
    let text = beside(
        "[locks]\npaths = [\"art/\"]\n\n[[check]]\nid = \"lint\"\nenvironment = \"linux\"\n",
    );
    let error = refuse(&text);
    assert_eq!(place(&error), (Some("command"), "[[check]] #2", 13));
    let error = refuse("revision = 1\n[agent]\nrequire_actor = true\n");
    assert!(
        error.message.contains("no [[check]]"),
        "policy-wide rules come first: {error}"
    );
    let error = refuse(&beside(
        "[[quarantine]]\nid = \"unit\"\nenvironment = \"linux\"\nreason = \"r\"\n\
             end = \"2026-10-25\"\n\n[locks]\npaths = [\"art/\"]\n",
    ));
    assert_eq!(
        error.table, "[[quarantine]] #1",
        "the last test-expecting check set aside: {error}"
    );
}

#[test]
fn later_keys_are_validated_before_they_are_refused() {
    let approval = |extra: &str| {
        beside(&format!(
            "[[check]]\nid = \"ok\"\nenvironment = \"people\"\nkind = \"approval\"\n\
                 when_paths = [\"billing/\"]\n{extra}"
        ))
    };
    let cases: Vec<(String, &str, &str)> = vec![
        (
            with_minimum("waivable = \"yes\"\n"),
            "waivable",
            "true or false",
        ),
        (
            with_minimum("footprint = 1\n"),
            "footprint",
            "true or false",
        ),
        (approval("carry = \"no\"\n"), "carry", "true or false"),
        (approval("producers = []\n"), "producers", "empty"),
        (
            beside("[limits]\nmax_waiting_approvals = 0\n"),
            "max_waiting_approvals",
            "positive",
        ),
        (beside("[locks]\npaths = []\n"), "paths", "empty"),
        (
            beside("[locks]\npaths = [\"\"]\n"),
            "paths",
            "names no file",
        ),
        (beside("[locks]\npaths = [\"/art\"]\n"), "paths", "absolute"),
        (
            beside("[locks]\npaths = [\"art/[ab].psd\"]\n"),
            "paths",
            "holds `[`",
        ),
        (
            beside("[locks]\nglobs = [\"art/\"]\n"),
            "globs",
            "not a key",
        ),
        (
            beside("[agent]\nmax_live_changes = 0\n"),
            "max_live_changes",
            "positive",
        ),
        (
            beside("[agent]\nrequire_actor = \"yes\"\n"),
            "require_actor",
            "true or false",
        ),
        (
            beside("[agent]\nrequire_actor_proof = 1\n"),
            "require_actor_proof",
            "true or false",
        ),
        (
            beside("[policy]\nsigning = \"some\"\n"),
            "signing",
            "\"all\" or \"approvals\"",
        ),
        (
            beside("[policy]\nreuse_unsigned = \"true\"\n"),
            "reuse_unsigned",
            "true or false",
        ),
        (
            beside("[policy]\nevidence_reuse = \"off\"\n"),
            "evidence_reuse",
            "not a key",
        ),
        (
            beside("[profile.fast]\nrequire = [\"reviewed\"]\n"),
            "require",
            "neither",
        ),
        (
            beside("[profile.fast]\nrequire_signed = 1\n"),
            "require_signed",
            "true or false",
        ),
        (
            beside("[profile.fast]\nrequires = []\n"),
            "requires",
            "not a key",
        ),
        (
            beside("[agent]\nmax_changes = 3\n"),
            "max_changes",
            "not a key",
        ),
        (
            beside("[[dimension]]\nname = \"r\"\nkinds = \"review\"\n"),
            "kinds",
            "not a key",
        ),
        (beside("[profile]\nfast = 1\n"), "fast", "a table"),
    ];
    for (text, key, message) in cases {
        let error = refuse(&text);
        assert_eq!(error.key.as_deref(), Some(key), "{error}\n{text}");
        assert!(error.message.contains(message), "{error}");
        assert_eq!(error.line, line_of(&text, &format!("{key} =")), "{error}");
    }
}

#[test]
fn inputs_are_commit_or_history_each_once() {
    let policy = accept(&with_minimum("inputs = [\"commit\", \"history\"]\n"));
    assert_eq!(
        policy.checks[0].inputs,
        [CheckInput::Commit, CheckInput::History]
    );
    assert!(
        accept(&with_minimum("inputs = []\n")).checks[0]
            .inputs
            .is_empty()
    );
    for (value, message) in [
        ("[\"tree\"]", "\"commit\" or \"history\""),
        ("[\"Commit\"]", "\"commit\" or \"history\""),
        ("[\"commit\", \"commit\"]", "twice"),
        ("\"commit\"", "array of strings"),
    ] {
        let error = refuse(&with_minimum(&format!("inputs = {value}\n")));
        assert_eq!(
            place(&error),
            (Some("inputs"), "[[check]] #1", 9),
            "{value}"
        );
        assert!(error.message.contains(message), "{error}");
    }
}

#[test]
fn fixtures_are_content_addresses_each_name_once() {
    let hex = "0123456789abcdef".repeat(4);
    let policy = accept(&with_minimum(&format!(
        "fixtures = [\"db.sql@sha256:{hex}\", \"model@sha256:{hex}\"]\n"
    )));
    assert_eq!(
        policy.checks[0].fixtures,
        [
            Fixture {
                name: "db.sql".into(),
                sha256: hex.clone()
            },
            Fixture {
                name: "model".into(),
                sha256: hex.clone()
            },
        ]
    );
    assert_eq!(
        policy.checks[0].fixtures[0].to_string(),
        format!("db.sql@sha256:{hex}")
    );
    let upper = hex.to_uppercase();
    let short = &hex[..63];
    for (entry, message) in [
        (format!("db@sha256:{upper}"), "64 lower-case hex"),
        (format!("db@sha256:{short}"), "64 lower-case hex"),
        (format!("db@sha256:{hex}0"), "64 lower-case hex"),
        (format!("db@sha1:{hex}"), "is not written"),
        (format!("db:{hex}"), "is not written"),
        (format!("@sha256:{hex}"), "no name"),
        (format!("a@b@sha256:{hex}"), "holding `@`"),
        (format!("a b@sha256:{hex}"), "a space"),
    ] {
        let error = refuse(&with_minimum(&format!("fixtures = [{entry:?}]\n")));
        assert_eq!(
            place(&error),
            (Some("fixtures"), "[[check]] #1", 9),
            "{entry}"
        );
        assert!(error.message.contains(message), "{entry}: {error}");
    }
    let text = with_minimum(&format!(
        "fixtures = [\n  \"db@sha256:{hex}\",\n  \"db@sha256:{}\",\n]\n",
        "f".repeat(64)
    ));
    let error = refuse(&text);
    assert_eq!(place(&error), (Some("fixtures"), "[[check]] #1", 11));
    assert!(error.message.contains("twice"), "{error}");
}

#[test]
fn paths_is_a_non_empty_list_inside_the_repository() {
    let policy = accept(&with_minimum("paths = [\"src/\", \"./Cargo.toml\"]\n"));
    assert_eq!(
        policy.checks[0].paths.as_deref(),
        Some(&["src/".to_owned(), "./Cargo.toml".to_owned()][..])
    );
    for (value, message) in [
        ("[]", "empty"),
        ("[\"/etc\"]", "absolute"),
        ("[\"../x\"]", "`..`"),
        ("[\"\"]", "names no file"),
        ("[\".\"]", "names no file"),
        ("[1]", "array of strings"),
    ] {
        let error = refuse(&with_minimum(&format!("paths = {value}\n")));
        assert_eq!(place(&error), (Some("paths"), "[[check]] #1", 9), "{value}");
        assert!(error.message.contains(message), "{value}: {error}");
    }
}

#[test]
fn materialize_is_only_changed_with_a_positive_time_limit() {
    let check = &accept(&with_minimum("")).checks[0];
    assert_eq!(
        (check.materialize, check.materialize_timeout_s),
        (Materialize::Tree, 600)
    );
    let check = &accept(&with_minimum(
        "materialize = \"changed\"\nmaterialize_timeout_s = 1\n",
    ))
    .checks[0];
    assert_eq!(
        (check.materialize, check.materialize_timeout_s),
        (Materialize::Changed, 1)
    );
    for value in ["\"tree\"", "\"Changed\"", "\"\"", "true"] {
        let error = refuse(&with_minimum(&format!("materialize = {value}\n")));
        assert_eq!(
            place(&error),
            (Some("materialize"), "[[check]] #1", 9),
            "{value}"
        );
    }
    for value in ["0", "-1", "\"600\""] {
        let error = refuse(&with_minimum(&format!("materialize_timeout_s = {value}\n")));
        assert_eq!(
            place(&error),
            (Some("materialize_timeout_s"), "[[check]] #1", 9)
        );
        assert!(error.message.contains("positive integer"), "{error}");
    }
}

#[test]
fn stage_is_pre_or_post() {
    assert_eq!(
        accept(&with_minimum("stage = \"pre\"\n")).checks[0].stage,
        Stage::Pre
    );
    let policy = accept(&beside(
        "[[check]]\nid = \"smoke\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minimum = 3\nstage = \"post\"\n",
    ));
    assert_eq!(policy.checks[1].stage, Stage::Post);
    for value in ["\"Post\"", "\"after\"", "1"] {
        let error = refuse(&with_minimum(&format!("stage = {value}\n")));
        assert_eq!(place(&error), (Some("stage"), "[[check]] #1", 9), "{value}");
    }
}

#[test]
fn one_check_id_belongs_to_one_stage() {
    let text = beside(
        "[[check]]\nid = \"unit\"\nenvironment = \"mac\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minimum = 3\nstage = \"post\"\n",
    );
    let error = refuse(&text);
    assert_eq!(
        place(&error),
        (Some("stage"), "[[check]] #2", line_of(&text, "stage ="))
    );
    assert!(error.message.contains("[[check]] #1 on line 3"), "{error}");
    assert!(error.message.contains("one stage"), "{error}");
    // The pre check second, with its stage left to the default: `id` is named.
    let text = format!(
        "revision = 1\n[[check]]\nid = \"unit\"\nenvironment = \"mac\"\ncommand = \"s/c\"\n\
             adapter = [\"s/c\"]\nexpected_minimum = 3\nstage = \"post\"\n{}",
        with_minimum("").replace("revision = 1\n", "")
    );
    let error = refuse(&text);
    assert_eq!(error.key.as_deref(), Some("id"), "{error}");
    assert_eq!(error.table, "[[check]] #2");
    accept(&text.replacen("id = \"unit\"", "id = \"smoke\"", 1));
}

#[test]
fn when_paths_and_producers_list_something() {
    let check = &accept(&with_minimum(
        "when_paths = [\"web/**\", \"*.json\"]\nproducers = [\"ci\"]\n",
    ))
    .checks[0];
    assert_eq!(check.when_paths.as_ref().map(Vec::len), Some(2));
    assert_eq!(check.producers.as_deref(), Some(&["ci".to_owned()][..]));
    for (line, key, message) in [
        ("when_paths = []", "when_paths", "empty"),
        ("when_paths = [\"\"]", "when_paths", "names no file"),
        ("when_paths = [\"/web\"]", "when_paths", "absolute"),
        ("when_paths = [\"web/../..\"]", "when_paths", "`..`"),
        ("when_paths = [\"src/[ab].rs\"]", "when_paths", "holds `[`"),
        (
            "when_paths = [\"web/\", \"src/?.rs\"]",
            "when_paths",
            "holds `?`",
        ),
        ("when_paths = [\"{a,b}/\"]", "when_paths", "holds `{`"),
        ("when_paths = [\"!web/\"]", "when_paths", "starts with `!`"),
        ("when_paths = [\"web\\\\*.ts\"]", "when_paths", "holds `\\`"),
        ("producers = []", "producers", "empty"),
        ("producers = [\"ci\", \"\"]", "producers", "empty entry"),
    ] {
        let error = refuse(&with_minimum(&format!("{line}\n")));
        assert_eq!(place(&error), (Some(key), "[[check]] #1", 9), "{line}");
        assert!(error.message.contains(message), "{line}: {error}");
    }
}

#[test]
fn retry_on_failure_is_from_0_to_5() {
    assert_eq!(accept(&with_minimum("")).checks[0].retry_on_failure, 0);
    assert_eq!(
        accept(&with_minimum("retry_on_failure = 5\n")).checks[0].retry_on_failure,
        5
    );
    for value in ["6", "-1", "1.5"] {
        let error = refuse(&with_minimum(&format!("retry_on_failure = {value}\n")));
        assert_eq!(place(&error), (Some("retry_on_failure"), "[[check]] #1", 9));
    }
    assert!(
        refuse(&with_minimum("retry_on_failure = 6\n"))
            .message
            .contains("from 0 to 5")
    );
    let error = refuse(&with_minimum("allow_flaky = 1\n"));
    assert_eq!(error.key.as_deref(), Some("allow_flaky"));
    assert!(accept(&with_minimum("allow_flaky = true\n")).checks[0].allow_flaky);
}

#[test]
fn a_post_check_takes_no_retry_flaky_or_baseline() {
    let post = |extra: &str| {
        beside(&format!(
            "[[check]]\nid = \"smoke\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
                 adapter = [\"scripts/check\"]\nexpected_minimum = 0\nstage = \"post\"\n{extra}"
        ))
    };
    accept(&post(""));
    for line in [
        "retry_on_failure = 0",
        "retry_on_failure = 2",
        "allow_flaky = false",
        "baseline = \"base\"",
    ] {
        let text = post(&format!("{line}\n"));
        let error = refuse(&text);
        let key = line.split(' ').next().expect("a key");
        assert_eq!(
            place(&error),
            (Some(key), "[[check]] #2", line_of(&text, line))
        );
        assert!(
            error.message.contains(&format!(
                "stage = \"post\" on line {}",
                line_of(&text, "stage =")
            )),
            "{error}"
        );
    }
}

#[test]
fn baseline_is_only_base() {
    assert_eq!(accept(&with_minimum("")).checks[0].baseline, None);
    for value in ["\"main\"", "\"Base\"", "true"] {
        let error = refuse(&with_minimum(&format!("baseline = {value}\n")));
        assert_eq!(
            place(&error),
            (Some("baseline"), "[[check]] #1", 9),
            "{value}"
        );
    }
}

#[test]
fn footprint_needs_a_read_set_and_no_changed_materialize() {
    let error = refuse(&with_minimum("footprint = true\n"));
    assert_eq!(place(&error), (Some("footprint"), "[[check]] #1", 9));
    assert!(
        error.message.contains("neither `paths` nor `when_paths`"),
        "{error}"
    );
    let error = refuse(&with_minimum(
        "paths = [\"api/\"]\nmaterialize = \"changed\"\nfootprint = true\n",
    ));
    assert_eq!(place(&error), (Some("materialize"), "[[check]] #1", 10));
    assert!(
        error.message.contains("footprint = true (line 11)"),
        "{error}"
    );
    for read_set in ["paths = [\"api/\"]", "when_paths = [\"api/\"]"] {
        let policy = Policy::parse(&with_minimum(&format!("{read_set}\nfootprint = true\n")))
            .expect("a check that names its read set");
        assert!(policy.checks[0].footprint);
    }
    let policy = Policy::parse(&with_minimum(
        "footprint = false\nmaterialize = \"changed\"\n",
    ))
    .expect("no footprint, so any materialize");
    assert!(!policy.checks[0].footprint);
}

#[test]
fn an_approval_check_needs_when_paths_is_never_post_and_runs_nothing() {
    let approval = |extra: &str| {
        beside(&format!(
            "[[check]]\nid = \"billing\"\nenvironment = \"people\"\nkind = \"approval\"\n{extra}"
        ))
    };
    let policy = accept(&approval("when_paths = [\"**\"]\nstage = \"pre\"\n"));
    assert_eq!(policy.approvals[0].when_paths, ["**"]);
    let error = refuse(&approval(""));
    assert_eq!(place(&error), (Some("when_paths"), "[[check]] #2", 10));
    assert!(
        error.message.contains("required on an approval check"),
        "{error}"
    );
    let error = refuse(&approval("when_paths = [\"**\"]\nstage = \"post\"\n"));
    assert_eq!(place(&error), (Some("stage"), "[[check]] #2", 15));
    assert!(error.message.contains("never after"), "{error}");
    for line in [
        "command = \"scripts/check\"",
        "adapter = [\"scripts/check\"]",
        "expected_minimum = 1",
        "timeout_s = 5",
        "path = [\"/bin\"]",
        "env = [\"X\"]",
        "network = false",
        "inputs = []",
        "fixtures = []",
        "paths = [\"billing/\"]",
        "materialize = \"changed\"",
        "materialize_timeout_s = 5",
        "retry_on_failure = 1",
        "allow_flaky = true",
        "baseline = \"base\"",
    ] {
        let text = approval(&format!("when_paths = [\"**\"]\n{line}\n"));
        let error = refuse(&text);
        let key = line.split(' ').next().expect("a key");
        assert_eq!(place(&error), (Some(key), "[[check]] #2", 15), "{line}");
        assert!(error.message.contains("runs nothing"), "{error}");
        assert!(
            error.message.contains("kind = \"approval\" on line 13"),
            "{error}"
        );
    }
}

#[test]
fn waivable_is_never_on_an_approval_check() {
    let error = refuse(&beside(
        "[[check]]\nid = \"billing\"\nenvironment = \"people\"\nkind = \"approval\"\n\
             when_paths = [\"**\"]\nwaivable = false\n",
    ));
    assert_eq!(place(&error), (Some("waivable"), "[[check]] #2", 15));
    assert!(error.message.contains("never a waiver"), "{error}");
    let waivable = accept(&with_minimum("waivable = true\n"));
    assert!(waivable.checks[0].waivable, "a check bay runs takes it");
    assert!(!accept(&with_minimum("")).checks[0].waivable);
    // The spec's example.
    let example = "revision = 1\n[[check]]\nid = \"tests\"\nenvironment = \"local\"\n\
                   command = \"scripts/bay-check\"\nadapter = [\"scripts/bay-check\"]\n\
                   expected_minimum = 1\nwaivable = true\n";
    assert!(accept(example).checks[0].waivable);
}

#[test]
fn carry_is_only_on_an_approval_check() {
    let error = refuse(&with_minimum("carry = false\n"));
    assert_eq!(place(&error), (Some("carry"), "[[check]] #1", 9));
    assert!(
        error.message.contains("only on an approval check"),
        "{error}"
    );
    let text = beside(
        "[[check]]\nid = \"billing\"\nenvironment = \"people\"\ncarry = true\n\
             kind = \"approval\"\nwhen_paths = [\"**\"]\n",
    );
    assert_eq!(accept(&text).approvals[0].carry, Some(true));
}

#[test]
fn kind_is_check_or_approval() {
    let plain = accept(&with_minimum(""));
    let spelt_out = accept(&with_minimum("kind = \"check\"\n"));
    assert_eq!(plain, spelt_out, "kind = \"check\" is the default");
    for value in ["\"Approval\"", "\"review\"", "\"\"", "1"] {
        let error = refuse(&with_minimum(&format!("kind = {value}\n")));
        assert_eq!(place(&error), (Some("kind"), "[[check]] #1", 9), "{value}");
    }
}

fn quarantine(body: &str) -> String {
    beside(&format!("[[quarantine]]\n{body}"))
}

const QUARANTINE: &str =
    "id = \"unit\"\nenvironment = \"linux\"\nreason = \"red\"\nend = \"2026-10-25\"\n";

#[test]
fn a_quarantine_needs_id_environment_reason_and_end() {
    let with_second = |body: &str| {
        format!(
            "{}[[check]]\nid = \"e2e\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
                 adapter = [\"scripts/check\"]\nexpected_minimum = 1\n\n[[quarantine]]\n{body}",
            with_minimum("")
        )
    };
    let body = QUARANTINE.replace("\"unit\"", "\"e2e\"");
    let policy = accept(&with_second(&body));
    assert_eq!(policy.quarantine[0].id, "e2e");
    assert_eq!(policy.quarantine[0].owner, None);
    for key in ["id", "environment", "reason", "end"] {
        let without: String = body
            .lines()
            .filter(|l| !l.starts_with(key))
            .map(|l| format!("{l}\n"))
            .collect();
        let text = with_second(&without);
        let error = refuse(&text);
        assert_eq!(
            place(&error),
            (
                Some(key),
                "[[quarantine]] #1",
                line_of(&text, "[[quarantine]]")
            ),
            "{error}"
        );
        assert!(error.message.contains("required"), "{error}");
    }
    for (key, value) in [("id", "e2e"), ("environment", "linux"), ("reason", "red")] {
        let empty = body.replace(&format!("{key} = \"{value}\""), &format!("{key} = \"\""));
        let error = refuse(&with_second(&empty));
        assert_eq!(error.key.as_deref(), Some(key), "{error}");
        assert!(error.message.contains("empty"), "{error}");
    }
    let error = refuse(&with_second(&format!("{body}until = \"2026-10-25\"\n")));
    assert_eq!(error.key.as_deref(), Some("until"));
    assert!(error.message.contains("not a key"), "{error}");
}

#[test]
fn a_quarantine_ends_on_a_date_or_a_change() {
    let two = |end: &str| {
        format!(
            "{}[[check]]\nid = \"e2e\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
                 adapter = [\"scripts/check\"]\nexpected_minimum = 1\n\n[[quarantine]]\nid = \"e2e\"\n\
                 environment = \"linux\"\nreason = \"red\"\nend = {end}\n",
            with_minimum("")
        )
    };
    assert_eq!(
        accept(&two("\"2028-02-29\"")).quarantine[0].end,
        QuarantineEnd::Date("2028-02-29".into())
    );
    let change = ChangeId::parse("c7k2m4qa").expect("an id");
    assert_eq!(
        accept(&two("\"c7k2m4qa\"")).quarantine[0].end,
        QuarantineEnd::Change(change)
    );
    for end in [
        "\"2026-02-29\"",
        "\"2026-10-25T00:00:00Z\"",
        "\"26-10-25\"",
        "\"C7K2M4QA\"",
        "\"c7k2m4q\"",
        "\"c7k2m4q1\"",
        "\"k3m9p1\"",
        "\"\"",
        "2026-10-25",
    ] {
        let text = two(end);
        let error = refuse(&text);
        assert_eq!(
            place(&error),
            (Some("end"), "[[quarantine]] #1", line_of(&text, "end =")),
            "{end}"
        );
    }
    assert!(
        refuse(&two("2026-10-25"))
            .message
            .contains("a date or time")
    );
}

#[test]
fn a_quarantine_owner_is_named_and_since_is_a_date() {
    let two = |extra: &str| {
        format!(
            "{}[[check]]\nid = \"e2e\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
                 adapter = [\"scripts/check\"]\nexpected_minimum = 1\n\n[[quarantine]]\nid = \"e2e\"\n\
                 environment = \"linux\"\nreason = \"red\"\nend = \"2026-10-25\"\n{extra}",
            with_minimum("")
        )
    };
    let policy = accept(&two("owner = \"platform\"\nsince = \"2026-10-18\"\n"));
    assert_eq!(policy.quarantine[0].owner.as_deref(), Some("platform"));
    assert_eq!(policy.quarantine[0].since.as_deref(), Some("2026-10-18"));
    let text = two("owner = \"\"\n");
    let error = refuse(&text);
    assert_eq!(
        place(&error),
        (
            Some("owner"),
            "[[quarantine]] #1",
            line_of(&text, "owner =")
        )
    );
    assert!(error.message.contains("empty"), "{error}");
    for since in [
        "\"2026-10-32\"",
        "\"yesterday\"",
        "\"c7k2m4qa\"",
        "2026-10-18",
    ] {
        let text = two(&format!("since = {since}\n"));
        let error = refuse(&text);
        assert_eq!(
            place(&error),
            (
                Some("since"),
                "[[quarantine]] #1",
                line_of(&text, "since =")
            ),
            "{since}"
        );
    }
}

#[test]
fn a_quarantine_names_a_check_of_the_policy_once() {
    let text = quarantine(&QUARANTINE.replace("\"unit\"", "\"e2e\""));
    let error = refuse(&text);
    assert_eq!(
        place(&error),
        (
            Some("id"),
            "[[quarantine]] #1",
            line_of(&text, "id = \"e2e\"")
        )
    );
    assert!(
        error.message.contains("no [[check]] has that id"),
        "{error}"
    );
    let text = quarantine(&QUARANTINE.replace("\"linux\"", "\"mac\""));
    let error = refuse(&text);
    assert_eq!(error.key.as_deref(), Some("id"));
    assert!(
        error.message.contains("only on environment \"linux\""),
        "{error}"
    );
    let text = format!(
        "{}[[check]]\nid = \"e2e\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minimum = 1\n\n[[quarantine]]\n{e2e}\n[[quarantine]]\n{e2e}",
        with_minimum(""),
        e2e = QUARANTINE.replace("\"unit\"", "\"e2e\"")
    );
    let error = refuse(&text);
    assert_eq!(error.table, "[[quarantine]] #2");
    assert_eq!(error.key.as_deref(), Some("id"));
    assert!(
        error.message.contains("[[quarantine]] #1 on line"),
        "{error}"
    );
}

#[test]
fn a_quarantined_check_does_not_count_as_expecting_tests() {
    let text = quarantine(QUARANTINE);
    let error = refuse(&text);
    assert_eq!(
        place(&error),
        (
            Some("id"),
            "[[quarantine]] #1",
            line_of(&text, "[[quarantine]]") + 1
        )
    );
    assert!(error.message.contains("must remain"), "{error}");
    // A second check that expects tests, and is not set aside, keeps the policy valid.
    let text = format!(
        "{text}\n[[check]]\nid = \"e2e\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minimum = 1\n"
    );
    let policy = accept(&text);
    assert_eq!(
        policy
            .quarantine_of(&policy.checks[0])
            .map(|q| q.reason.as_str()),
        Some("red")
    );
    // A check that expects no tests may be set aside freely.
    let text = format!(
        "{}[[check]]\nid = \"lint\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minimum = 0\n\n[[quarantine]]\n{}",
        with_minimum(""),
        QUARANTINE.replace("\"unit\"", "\"lint\"")
    );
    accept(&text);
}

#[test]
fn post_and_approval_checks_do_not_count_as_expecting_tests() {
    let post = "revision = 1\n[[check]]\nid = \"smoke\"\nenvironment = \"linux\"\n\
                    command = \"scripts/check\"\nadapter = [\"scripts/check\"]\nexpected_minimum = 9\n\
                    stage = \"post\"\n";
    let error = refuse(post);
    assert_eq!(place(&error), (None, "[[check]] #1", 2));
    assert!(
        error.message.contains("post or an approval check"),
        "{error}"
    );
    let approval = "revision = 1\n[[check]]\nid = \"billing\"\nenvironment = \"people\"\n\
                        kind = \"approval\"\nwhen_paths = [\"**\"]\n";
    let error = refuse(approval);
    assert!(
        error.message.contains("post or an approval check"),
        "{error}"
    );
    let text = format!(
        "{post}{}",
        with_minimum("")
            .replace("revision = 1\n", "")
            .replace("expected_minimum = 5", "expected_minimum = 0")
    );
    let error = refuse(&text);
    assert_eq!(
        place(&error),
        (
            Some("expected_minimum"),
            "[[check]] #2",
            line_of(&text, "expected_minimum = 0")
        )
    );
    // A check with `when_paths` is still a pre check that bay runs, and counts.
    accept(&with_minimum("when_paths = [\"web/\"]\n"));
}

#[test]
fn reuse_unsigned_is_a_bool_and_off_by_default() {
    assert!(!accept(&with_minimum("")).reuse_unsigned);
    assert!(!accept(&beside("[policy]\n")).reuse_unsigned);
    assert!(accept(&beside("[policy]\nreuse_unsigned = true\n")).reuse_unsigned);
    for value in ["1", "\"true\"", "[]"] {
        let text = beside(&format!("[policy]\nreuse_unsigned = {value}\n"));
        let error = refuse(&text);
        assert_eq!(
            place(&error),
            (
                Some("reuse_unsigned"),
                "[policy]",
                line_of(&text, "reuse_unsigned")
            ),
            "{value}"
        );
    }
    let policy = accept(&beside(
        "[policy]\nsigning = \"all\"\nreuse_unsigned = true\n",
    ));
    assert!(policy.reuse_unsigned);
}

#[test]
fn signing_is_all_or_approvals_and_all_by_default() {
    assert_eq!(accept(&with_minimum("")).signing, Signing::All);
    assert_eq!(accept(&beside("[policy]\n")).signing, Signing::All);
    let all = accept(&beside("[policy]\nsigning = \"all\"\n"));
    assert_eq!(all.signing, Signing::All);
    // Spelt out, the default leaves the digest alone.
    assert_eq!(all.digest(), accept(&with_minimum("")).digest());
    let approvals = accept(&beside("[policy]\nsigning = \"approvals\"\n"));
    assert_eq!(approvals.signing, Signing::Approvals);
    assert_ne!(approvals.digest(), all.digest());
    for value in ["\"some\"", "\"All\"", "\"\"", "true", "1", "[\"all\"]"] {
        let text = beside(&format!("[policy]\nsigning = {value}\n"));
        let error = refuse(&text);
        assert_eq!(
            place(&error),
            (Some("signing"), "[policy]", line_of(&text, "signing")),
            "{value}"
        );
    }
}

#[test]
fn limits_are_positive_integers() {
    assert_eq!(accept(&with_minimum("")).limits, Limits::default());
    let policy = accept(&beside("[limits]\nmax_files = 1\n"));
    assert_eq!(
        policy.limits,
        Limits {
            max_files: Some(1),
            ..Limits::default()
        }
    );
    for key in ["max_file_mib", "max_files", "max_added_lines"] {
        for value in ["0", "-3", "1.5", "\"10\""] {
            let text = beside(&format!("[limits]\n{key} = {value}\n"));
            let error = refuse(&text);
            assert_eq!(
                place(&error),
                (Some(key), "[limits]", line_of(&text, key)),
                "{value}"
            );
            assert!(error.message.contains("positive integer"), "{error}");
        }
    }
    let error = refuse(&beside("[limits]\nmax_lines = 5\n"));
    assert_eq!(error.key.as_deref(), Some("max_lines"));
    assert!(error.message.contains("not a key"), "{error}");
    assert_eq!(
        refuse(&beside("limits = 5\n")).key.as_deref(),
        Some("limits")
    );
}

#[test]
fn an_input_names_its_provider_and_the_paths_it_reads() {
    let input = |body: &str| beside(&format!("[[input]]\n{body}"));
    let good = "name = \"contract:api\"\nprovider = \"scripts/v api\"\nadapter = [\"scripts/v\"]\n";
    let error = not_yet(&input(good));
    assert_eq!(error.key.as_deref(), Some("input"));
    let cases = [
        (
            good.replace("contract:api", "api"),
            "name",
            "`<kind>:<name>`",
        ),
        (
            good.replace("contract:api", ":api"),
            "name",
            "`<kind>:<name>`",
        ),
        (
            good.replace("contract:api", "contract:"),
            "name",
            "`<kind>:<name>`",
        ),
        (
            good.replace("contract:api", "contract:a b"),
            "name",
            "`<kind>:<name>`",
        ),
        (
            good.replace("scripts/v api", "other/v"),
            "provider",
            "not inside `adapter`",
        ),
        (good.replace("scripts/v api", " "), "provider", "blank"),
        (good.replace("[\"scripts/v\"]", "[]"), "adapter", "empty"),
        (
            good.replace("[\"scripts/v\"]", "[\"/usr/bin/v\"]"),
            "adapter",
            "absolute",
        ),
        (format!("{good}path = [\"bin\"]\n"), "path", "not absolute"),
        (
            format!("{good}phase = \"shrink\"\n"),
            "phase",
            "\"expand\", \"migrate\" or \"contract\"",
        ),
        (
            format!("{good}timeout_s = 301\n"),
            "timeout_s",
            "from 1 to 300",
        ),
        (
            format!("{good}timeout_s = 0\n"),
            "timeout_s",
            "from 1 to 300",
        ),
        (format!("{good}version = 1\n"), "version", "not a key"),
    ];
    for (body, key, message) in cases {
        let error = refuse(&input(&body));
        assert_eq!(
            (error.key.as_deref(), error.table.as_str()),
            (Some(key), "[[input]] #1"),
            "{error}"
        );
        assert!(error.message.contains(message), "{error}");
    }
    let error = refuse(&input(&good.replace("adapter", "# adapter")));
    assert_eq!(error.key.as_deref(), Some("adapter"));
    let error = refuse(&input(&format!("{good}\n[[input]]\n{good}")));
    assert_eq!(
        (error.key.as_deref(), error.table.as_str()),
        (Some("name"), "[[input]] #2")
    );
    assert!(error.message.contains("repeats"), "{error}");
}

#[test]
fn a_dimension_has_a_new_name_a_kind_and_producers() {
    let dimension = |body: &str| beside(&format!("[[dimension]]\n{body}"));
    let good = "name = \"reviewed\"\nkind = \"review\"\nproducers = [\"bot\"]\n";
    assert_eq!(
        accept(&dimension(good)).dimensions,
        [Dimension {
            name: "reviewed".into(),
            kind: "review".into(),
            producers: vec!["bot".into()],
        }]
    );
    for builtin in BUILTIN_DIMENSIONS {
        let error = refuse(&dimension(&good.replace("reviewed", builtin)));
        assert_eq!(error.key.as_deref(), Some("name"));
        assert!(error.message.contains("bay defines itself"), "{error}");
    }
    for (body, key, message) in [
        (
            good.replace("producers = [\"bot\"]\n", ""),
            "producers",
            "required",
        ),
        (good.replace("[\"bot\"]", "[]"), "producers", "empty"),
        (good.replace("kind = \"review\"\n", ""), "kind", "required"),
        (good.replace("\"review\"", "\"\""), "kind", "empty"),
    ] {
        let error = refuse(&dimension(&body));
        assert_eq!(
            (error.key.as_deref(), error.table.as_str()),
            (Some(key), "[[dimension]] #1")
        );
        assert!(error.message.contains(message), "{error}");
    }
    let error = refuse(&dimension(&format!("{good}\n[[dimension]]\n{good}")));
    assert_eq!(
        (error.key.as_deref(), error.table.as_str()),
        (Some("name"), "[[dimension]] #2")
    );
    let text = dimension(&format!(
        "{good}\n[profile.strict]\nrequire = [\"merged\", \"reviewed\"]\n"
    ));
    let policy = accept(&text);
    assert_eq!(policy.profiles["strict"].require, ["merged", "reviewed"]);
    assert!(!policy.profiles["strict"].require_signed);
    // With no `[profile.default]`, the default requires merged and checked; any other
    // name the policy lacks is no profile.
    assert_eq!(
        policy.profile("default").map(|p| p.require),
        Some(vec!["merged".to_owned(), "checked".to_owned()])
    );
    assert_eq!(policy.profile("nightly"), None);
}

#[test]
fn the_new_keys_leave_old_digests_alone() {
    // A policy that uses none of the new keys serializes as it did before they existed,
    // so its digest, which records carry, does not change.
    let policy = accept(&with_minimum(""));
    let json = serde_json::to_string(&policy).expect("plain data");
    assert_eq!(
        json,
        "{\"revision\":1,\"unchecked\":false,\"checks\":[{\"id\":\"unit\",\"environment\":\"linux\",\
             \"command\":\"scripts/check unit\",\"adapter\":[\"scripts/check\"],\"expected_minimum\":5,\
             \"timeout_s\":1800,\"path\":[\"/usr/bin\",\"/bin\"],\"env\":[],\"network\":false}]}"
    );
    let spelt_out = accept(&with_minimum(
        "kind = \"check\"\ninputs = []\nfixtures = []\nmaterialize_timeout_s = 600\nstage = \"pre\"\n\
             retry_on_failure = 0\nallow_flaky = false\n",
    ));
    assert_eq!(spelt_out.digest(), policy.digest());
    for extra in [
        "inputs = [\"commit\"]\n",
        "paths = [\"src/\"]\n",
        "materialize = \"changed\"\n",
        "materialize_timeout_s = 601\n",
        "when_paths = [\"src/\"]\n",
        "producers = [\"ci\"]\n",
        "retry_on_failure = 1\n",
        "allow_flaky = true\n",
        "baseline = \"base\"\n",
    ] {
        assert_ne!(
            accept(&with_minimum(extra)).digest(),
            policy.digest(),
            "{extra}"
        );
    }
    let limited = accept(&beside("[limits]\nmax_files = 3\n"));
    assert_ne!(limited.digest(), policy.digest());
}

#[test]
fn the_fuzz_seeds_mean_what_their_names_say() {
    let every = include_str!("../../../fuzz/seeds/policy/every-acted-on-key.toml");
    let policy = accept(every);
    assert_eq!((policy.checks.len(), policy.quarantine.len()), (2, 1));
    let later = include_str!("../../../fuzz/seeds/policy/later-keys.toml");
    assert_eq!(not_yet(later).key.as_deref(), Some("input"));
}

#[test]
fn every_field_round_trips_through_json() {
    let text = trim(EVERY_KEY, &later_keys()).replace(
            "[[check]]\nid = \"billing\"\nenvironment = \"people\"\nwhen_paths = [\"billing/\"]\nproducers = [\"alice\"]\n",
            "",
        );
    let policy = accept(&text);
    assert_eq!(
        policy.checks[0].inputs,
        [CheckInput::Commit, CheckInput::History]
    );
    assert_eq!(policy.checks[1].stage, Stage::Post);
    let json = serde_json::to_value(&policy).expect("plain data");
    assert_eq!(
        json["checks"][0]["inputs"],
        serde_json::json!(["commit", "history"])
    );
    assert_eq!(json["checks"][1]["stage"], "post");
    assert_eq!(json["checks"][1]["materialize"], "changed");
    assert_eq!(json["checks"][0]["baseline"], "base");
    assert_eq!(
        json["quarantine"][0]["end"],
        serde_json::json!({ "change": "c7k2m4qa" })
    );
    let back: Policy = serde_json::from_value(json).expect("round trip");
    assert_eq!(back, policy);
}

#[test]
fn unknown_keys_name_key_table_and_line() {
    let error = refuse(&format!("colour = \"blue\"\n{}", with_minimum("")));
    assert_eq!(
        (error.key.as_deref(), error.table.as_str(), error.line),
        (Some("colour"), "top level", 1)
    );
    assert!(error.message.contains("not a key"), "{error}");

    let text = format!(
        "{}\n[[check]]\nid = \"lint\"\nenvironment = \"linux\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minmum = 1\n",
        with_minimum("")
    );
    let error = refuse(&text);
    assert_eq!(error.key.as_deref(), Some("expected_minmum"));
    assert_eq!(error.table, "[[check]] #2");
    assert_eq!(error.line, 15);
    assert_eq!(
        error.to_string(),
        format!(
            "`expected_minmum` in [[check]] #2 on line 15 {}",
            error.message
        )
    );
}

#[test]
fn a_misspelt_key_is_named_before_the_missing_key_it_causes() {
    let error = refuse(&one_check("expected_minimun = 5\n"));
    assert_eq!(error.key.as_deref(), Some("expected_minimun"));
}

#[test]
fn syntax_errors_give_a_line() {
    let error = refuse("revision = 1\n\n[[check]\nid = \"x\"\n");
    assert_eq!((error.key, error.line), (None, 3));
    let error = refuse("revision = 1\nunchecked = tru\n");
    assert_eq!(error.line, 2);
    let error = refuse("revision = 1\nunchecked = true\nunchecked = false\n");
    assert_eq!(error.line, 3);
}

#[test]
fn revision_is_a_required_integer() {
    let error = refuse("unchecked = true\n");
    assert_eq!((error.key.as_deref(), error.line), (Some("revision"), 1));
    let error = refuse("revision = \"5\"\nunchecked = true\n");
    assert_eq!(error.key.as_deref(), Some("revision"));
    assert!(error.message.contains("an integer"), "{error}");
    assert_eq!(
        Policy::parse("revision = -2\nunchecked = true\n").map(|p| p.revision),
        Ok(-2)
    );
}

#[test]
fn unchecked_alone_merges_with_no_checks() {
    let policy = Policy::parse("revision = 3\nunchecked = true\n").expect("valid");
    assert!(policy.unchecked);
    assert!(policy.checks.is_empty());
    let error = refuse("revision = 3\nunchecked = 1\n");
    assert!(error.message.contains("true or false"), "{error}");
}

#[test]
fn unchecked_cannot_sit_beside_a_check() {
    let text = with_minimum("").replace("revision = 1\n", "revision = 1\nunchecked = true\n");
    let error = refuse(&text);
    assert_eq!((error.key.as_deref(), error.line), (Some("unchecked"), 2));
    assert!(error.message.contains("[[check]] #1 on line 4"), "{error}");
    let error = refuse("revision = 1\nunchecked = true\n[[check]]\nid = \"half\"\n");
    assert_eq!(
        error.key.as_deref(),
        Some("unchecked"),
        "named before the check's gaps"
    );
    let text = with_minimum("").replace("revision = 1\n", "revision = 1\nunchecked = false\n");
    assert!(Policy::parse(&text).is_ok());
}

/// An approval check runs nothing, so it sits beside `unchecked = true`: the spec asks a run
/// check of every policy "unless it declares unchecked = true". A run check after it is still
/// named.
#[test]
fn unchecked_takes_an_approval_check_and_no_run_check() {
    let approval = "[[check]]\nid = \"billing-approval\"\nenvironment = \"people\"\n\
                    kind = \"approval\"\nwhen_paths = [\"billing/\"]\n";
    let policy = accept(&format!("revision = 1\nunchecked = true\n{approval}"));
    assert!(policy.unchecked);
    assert!(policy.checks.is_empty());
    assert_eq!(policy.approvals.len(), 1);
    let run = "[[check]]\nid = \"half\"\n";
    let error = refuse(&format!("revision = 1\nunchecked = true\n{approval}{run}"));
    assert_eq!(error.key.as_deref(), Some("unchecked"));
    assert!(error.message.contains("[[check]] #2 on line 8"), "{error}");
}

#[test]
fn a_policy_with_no_checks_must_say_unchecked() {
    let error = refuse("revision = 1\n");
    assert_eq!(
        (error.key.as_deref(), error.table.as_str(), error.line),
        (None, "top level", 1)
    );
    assert!(error.message.contains("unchecked = true"), "{error}");
    assert!(
        refuse("revision = 1\nunchecked = false\ncheck = []\n")
            .message
            .contains("no [[check]]")
    );
}

#[test]
fn some_check_must_expect_tests() {
    let zero = one_check("expected_minimum = 0\n");
    let error = refuse(&zero);
    assert_eq!(error.key.as_deref(), Some("expected_minimum"));
    assert_eq!((error.table.as_str(), error.line), ("[[check]] #1", 8));
    let text = format!(
        "{zero}\n[[check]]\nid = \"unit\"\nenvironment = \"mac\"\ncommand = \"scripts/check\"\n\
             adapter = [\"scripts/check\"]\nexpected_minimum = 1\n"
    );
    let policy = Policy::parse(&text).expect("one check expects tests");
    assert_eq!(
        policy.checks[0].expected_minimum, 0,
        "zero is allowed beside a nonzero"
    );
}

#[test]
fn a_check_needs_each_of_its_keys() {
    for key in [
        "id",
        "environment",
        "command",
        "adapter",
        "expected_minimum",
    ] {
        let text = with_minimum("");
        let without: String = text
            .lines()
            .filter(|line| !line.starts_with(key))
            .map(|l| format!("{l}\n"))
            .collect();
        let error = refuse(&without);
        assert_eq!(error.key.as_deref(), Some(key));
        assert_eq!((error.table.as_str(), error.line), ("[[check]] #1", 3));
        assert!(error.message.contains("required"), "{error}");
    }
    for key in ["id", "environment", "command"] {
        let text = with_minimum("");
        let start = text.find(&format!("{key} = \"")).expect("the key is there") + key.len() + 4;
        let end = start + text[start..].find('"').expect("closing quote");
        let error = refuse(&format!("{}{}", &text[..start], &text[end..]));
        assert_eq!(error.key.as_deref(), Some(key), "{error}");
        assert!(error.message.contains("empty"), "{error}");
    }
    let error = refuse(&with_minimum("").replace("\"scripts/check unit\"", "\"   \""));
    assert_eq!(error.key.as_deref(), Some("command"));
}

#[test]
fn expected_minimum_is_a_non_negative_integer() {
    let error = refuse(&one_check("expected_minimum = -1\n"));
    assert_eq!(
        error.to_string(),
        "`expected_minimum` in [[check]] #1 on line 8 must be a non-negative integer, but it is -1"
    );
    let error = refuse(&one_check("expected_minimum = \"5\"\n"));
    assert!(
        error.message.contains("but it is the string \"5\""),
        "{error}"
    );
    let error = refuse(&one_check("expected_minimum = 2.5\n"));
    assert_eq!(error.key.as_deref(), Some("expected_minimum"));
}

#[test]
fn adapter_is_a_non_empty_list_of_relative_paths() {
    let cases = [
        ("adapter = []", "empty"),
        ("adapter = [\"/opt/check\"]", "absolute"),
        ("adapter = [\"scripts/../../check\"]", "`..`"),
        ("adapter = [\"..\"]", "`..`"),
        ("adapter = [\"./\"]", "names no file"),
        ("adapter = [\"\"]", "names no file"),
        ("adapter = \"scripts/check\"", "array of strings"),
        ("adapter = [\"scripts/check\", 3]", "array of strings"),
    ];
    for (line, message) in cases {
        let text = with_minimum("").replace("adapter = [\"scripts/check\"]", line);
        let error = refuse(&text);
        assert_eq!(
            (error.key.as_deref(), error.line),
            (Some("adapter"), 7),
            "{line}"
        );
        assert!(error.message.contains(message), "{line}: {error}");
    }
    let text = with_minimum("").replace(
        "adapter = [\"scripts/check\"]",
        "adapter = [\n  \"scripts/check\",\n  \"/etc/passwd\",\n]",
    );
    assert_eq!(refuse(&text).line, 9, "the line of the bad entry");
}

#[test]
fn the_program_must_be_inside_adapter() {
    let set = |command: &str, adapter: &str| {
        with_minimum("")
            .replace("\"scripts/check unit\"", &format!("{command:?}"))
            .replace("[\"scripts/check\"]", adapter)
    };
    let good = [
        ("scripts/check unit", "[\"scripts/check\"]"),
        ("scripts/check", "[\"scripts/check\"]"),
        ("scripts/check.d/run --fast", "[\"scripts/check.d/\"]"),
        (
            "scripts/check.d/deep/run",
            "[\"pytest.ini\", \"scripts/check.d/\"]",
        ),
        ("./scripts/check unit", "[\"scripts/check\"]"),
        ("scripts/check\tunit", "[\"scripts//check\"]"),
    ];
    for (command, adapter) in good {
        assert!(
            Policy::parse(&set(command, adapter)).is_ok(),
            "{command} in {adapter}"
        );
    }
    let bad = [
        ("scripts/other", "[\"scripts/check\"]"),
        ("scripts/check", "[\"scripts/check-extra\"]"),
        ("scripts/check-extra", "[\"scripts/check\"]"),
        ("scripts/check/run", "[\"scripts/check\"]"),
        ("scripts/check.d/run", "[\"scripts/check.d\"]"),
        ("scripts/check.d", "[\"scripts/check.d/\"]"),
        ("/usr/bin/python3 check.py", "[\"check.py\"]"),
        ("python3 check.py", "[\"check.py\"]"),
        ("scripts/check.d/../../evil", "[\"scripts/check.d/\"]"),
    ];
    for (command, adapter) in bad {
        let error = refuse(&set(command, adapter));
        assert_eq!(
            (error.key.as_deref(), error.line),
            (Some("command"), 6),
            "{command}"
        );
        assert!(error.message.contains("not inside `adapter`"), "{error}");
    }
}

#[test]
fn timeout_is_positive_and_defaults_to_half_an_hour() {
    let policy = Policy::parse(&with_minimum("")).expect("valid");
    assert_eq!(policy.checks[0].timeout_s, 1800);
    let policy = Policy::parse(&with_minimum("timeout_s = 60\n")).expect("valid");
    assert_eq!(policy.checks[0].timeout_s, 60);
    let error = refuse(&with_minimum("timeout_s = 0\n"));
    assert_eq!((error.key.as_deref(), error.line), (Some("timeout_s"), 9));
    assert!(error.message.contains("positive"), "{error}");
}

#[test]
fn path_holds_absolute_directories_only() {
    let policy = Policy::parse(&with_minimum("path = [\"/opt/tools/bin\"]\n")).expect("valid");
    assert_eq!(policy.checks[0].path, ["/opt/tools/bin"]);
    for entry in ["bin", "./bin", "", "~/bin", "/usr/bin:/tmp/evil"] {
        let error = refuse(&with_minimum(&format!("path = [{entry:?}]\n")));
        assert_eq!(
            (error.key.as_deref(), error.line),
            (Some("path"), 9),
            "{entry}"
        );
    }
}

#[test]
fn env_names_are_variable_names_bay_does_not_set_itself() {
    let policy = Policy::parse(&with_minimum("env = [\"DATABASE_URL\", \"_x1\"]\n")).expect("ok");
    assert_eq!(policy.checks[0].env, ["DATABASE_URL", "_x1"]);
    for name in RESERVED_ENV {
        let error = refuse(&with_minimum(&format!("env = [\"A\", {name:?}]\n")));
        assert_eq!(
            (error.key.as_deref(), error.line),
            (Some("env"), 9),
            "{name}"
        );
        assert!(error.message.contains("bay sets itself"), "{error}");
    }
    for name in ["", "1ABC", "A-B", "A=B", "A B", "Ä"] {
        let error = refuse(&with_minimum(&format!("env = [{name:?}]\n")));
        assert_eq!(error.key.as_deref(), Some("env"), "{name}");
        assert!(error.message.contains("not a variable name"), "{error}");
    }
}

#[test]
fn network_is_a_bool_and_off_by_default() {
    assert!(!Policy::parse(&with_minimum("")).expect("valid").checks[0].network);
    assert!(
        Policy::parse(&with_minimum("network = true\n"))
            .expect("valid")
            .checks[0]
            .network
    );
    let error = refuse(&with_minimum("network = \"yes\"\n"));
    assert_eq!(error.key.as_deref(), Some("network"));
}

#[test]
fn each_id_and_environment_pair_appears_once() {
    let second = |environment: &str| {
        format!(
            "{}\n[[check]]\nid = \"unit\"\nenvironment = {environment:?}\n\
                 command = \"scripts/check\"\nadapter = [\"scripts/check\"]\nexpected_minimum = 1\n",
            with_minimum("")
        )
    };
    let policy = Policy::parse(&second("mac")).expect("same id, another environment");
    assert_eq!(policy.checks.len(), 2);
    let error = refuse(&second("linux"));
    assert_eq!(error.key.as_deref(), Some("id"));
    assert_eq!((error.table.as_str(), error.line), ("[[check]] #2", 11));
    assert!(error.message.contains("[[check]] #1 on line 3"), "{error}");
}

#[test]
fn the_digest_follows_meaning_not_spelling() {
    let plain = Policy::parse(&with_minimum("")).expect("valid");
    let spelt_out = Policy::parse(
            "# the same policy\nrevision = 1\n[[check]]\nnetwork = false\nexpected_minimum = 5\n\
             timeout_s = 1800\npath = [\"/usr/bin\", \"/bin\"]\nenv = []\nid = \"unit\"\n\
             environment = \"linux\"\ncommand = \"scripts/check unit\"\nadapter = [\"scripts/check\"]\n",
        )
        .expect("valid");
    assert_eq!(plain, spelt_out);
    assert_eq!(plain.digest(), spelt_out.digest());
    assert_eq!(plain.digest().len(), 64);
    assert!(
        plain
            .digest()
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    let raised =
        Policy::parse(&with_minimum("").replace("revision = 1", "revision = 2")).expect("valid");
    assert_ne!(plain.digest(), raised.digest());
    let longer = Policy::parse(&with_minimum("timeout_s = 1801\n")).expect("valid");
    assert_ne!(plain.digest(), longer.digest());
}

#[test]
fn a_policy_round_trips_through_json() {
    let policy = Policy::parse(&with_minimum("env = [\"TOKEN\"]\n")).expect("valid");
    let json = serde_json::to_string(&policy).expect("plain data");
    assert_eq!(
        serde_json::from_str::<Policy>(&json).expect("round trip"),
        policy
    );
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
        let _ = Policy::parse(&text);
    }

    #[test]
    fn parse_never_panics_on_a_mutated_policy(
        source in prop::sample::select(vec![SPEC_EXAMPLE, EVERY_KEY]),
        edits in proptest::collection::vec(
            (0usize..4000, 0u8..3, prop::sample::select(
                vec!['"', '[', ']', '=', '\n', '#', '/', '.', ' ', '0', '-', 'x', '{', '}', ',', 'é'],
            )),
            1..8,
        )
    ) {
        let text = mutate(source, &edits);
        if let Err(error) = Policy::parse(&text) {
            let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
            prop_assert!(error.0.line >= 1 && error.0.line <= lines.max(1) + 1);
            prop_assert!(!error.to_string().contains('\n'));
        }
    }

    #[test]
    fn parse_never_panics_on_a_policy_with_a_line_cut(
        source in prop::sample::select(vec![SPEC_EXAMPLE, EVERY_KEY]),
        cut in 0usize..100,
    ) {
        let kept: String = source
            .lines()
            .enumerate()
            .filter(|(i, _)| *i != cut)
            .map(|(_, line)| format!("{line}\n"))
            .collect();
        let _ = Policy::parse(&kept);
    }
}
