//! `.bay/policy.toml`: the checks a change must pass before it merges.
//!
//! bay reads the policy from main, at a candidate's base, so a change never sets the rules it
//! is judged by. The parser is strict on purpose. A key it does not know, or knows but does not
//! implement yet, is refused rather than skipped: skipping it would quietly change what a merge
//! must pass, and the person who wrote it would believe it was enforced.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::toml_doc::{Document, Located, Table, TomlError, show_value};

/// The accepted policy, with every default filled in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Raised by every policy change, so records can say which policy judged them.
    pub revision: i64,
    /// `true` merges changes with no check at all; never beside a check.
    pub unchecked: bool,
    /// The checks, in the order the policy lists them.
    pub checks: Vec<CheckSpec>,
}

/// One `[[check]]`: a command that bay runs on a candidate, and what its result must show.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSpec {
    pub id: String,
    /// The environment the check runs in; one id may be required on several.
    pub environment: String,
    /// The command line; its first word is the program, which must be an `adapter` path.
    pub command: String,
    /// Every path that computes the verdict. bay runs them from the base, so a change cannot
    /// alter the check that judges it.
    pub adapter: Vec<String>,
    /// The fewest tests the check must collect; fewer is `unknown`, never a pass.
    pub expected_minimum: u64,
    /// The check's time limit in seconds; queue wait does not count.
    pub timeout_s: u64,
    /// Absolute directories that make the check's `PATH`.
    pub path: Vec<String>,
    /// The only variables the check gets from the runner, by name.
    pub env: Vec<String>,
    /// Whether the check may use the network.
    pub network: bool,
}

/// Why a policy was refused. bay blocks every merge with `POLICY_INVALID` until it is fixed, so
/// the error names the key, its table and its line whenever one is at fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyError(pub TomlError);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for PolicyError {}

impl From<TomlError> for PolicyError {
    fn from(error: TomlError) -> Self {
        PolicyError(error)
    }
}

/// A check's time limit when the policy gives none: half an hour.
pub const DEFAULT_TIMEOUT_S: u64 = 1800;

/// A check's `PATH` when the policy gives none.
pub const DEFAULT_PATH: [&str; 2] = ["/usr/bin", "/bin"];

/// Variables bay sets itself for every check. Passing the runner's own values would undo the
/// fixed environment that makes two runs of a check comparable.
pub const RESERVED_ENV: [&str; 5] = ["PATH", "HOME", "TMPDIR", "LANG", "BAY_ADAPTER_DIR"];

const TOP_KEYS: &[&str] = &["revision", "unchecked", "check"];

/// Top-level tables the specification defines that this bay does not implement yet.
const TOP_UNSUPPORTED: &[&str] = &[
    "quarantine",
    "limits",
    "locks",
    "input",
    "dimension",
    "profile",
    "agent",
    "policy",
];

const CHECK_KEYS: &[&str] = &[
    "id",
    "environment",
    "command",
    "adapter",
    "expected_minimum",
    "timeout_s",
    "path",
    "env",
    "network",
];

/// `[[check]]` keys the specification defines that this bay does not implement yet.
const CHECK_UNSUPPORTED: &[&str] = &[
    "inputs",
    "fixtures",
    "paths",
    "materialize",
    "materialize_timeout_s",
    "stage",
    "when_paths",
    "producers",
    "kind",
    "carry",
    "footprint",
    "retry_on_failure",
    "allow_flaky",
    "baseline",
    "waivable",
];

impl Policy {
    /// Parses and validates the text of `.bay/policy.toml`.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        Ok(parse(text)?)
    }

    /// The checks that must pass before a merge, in policy order. Every check this bay accepts
    /// runs before merging, because `stage` and `when_paths` are not supported yet.
    pub fn required(&self) -> &[CheckSpec] {
        &self.checks
    }

    /// The SHA-256 of the normalized policy, in lower-case hex, for records.
    ///
    /// It digests the parsed policy with its defaults filled in, never the text, so comments,
    /// spacing, key order and a default spelt out leave it unchanged, and only a change in
    /// what bay enforces changes it.
    pub fn digest(&self) -> String {
        let json = serde_json::to_vec(self)
            .expect("a policy holds only strings, integers and booleans, which JSON encodes");
        let mut hasher = Sha256::new();
        hasher.update(b"bay policy v1\n");
        hasher.update(&json);
        hasher
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

fn parse(text: &str) -> Result<Policy, TomlError> {
    let doc = Document::parse(text)?;
    let mut root = doc.root();
    root.check_keys(TOP_KEYS, TOP_UNSUPPORTED)?;
    let revision = root.required_integer("revision")?;
    let unchecked = root.bool("unchecked")?.unwrap_or(false);
    let mut tables = root.tables("check")?;
    root.finish()?;

    // Named before any check's own problems: with `unchecked = true`, fixing a check would not
    // make the policy valid.
    if let (true, Some(first)) = (unchecked, tables.first()) {
        return Err(root.error(
            "unchecked",
            format!(
                "is true, but {} on line {} names a check; a policy either merges with no \
                 checks or lists the checks a merge must pass, never both",
                first.name(),
                first.line()
            ),
        ));
    }

    let mut checks = Vec::with_capacity(tables.len());
    let mut seen: BTreeMap<(String, String), String> = BTreeMap::new();
    for table in &mut tables {
        let check = parse_check(table)?;
        let pair = (check.id.clone(), check.environment.clone());
        if let Some(first) = seen.get(&pair) {
            return Err(table.error(
                "id",
                format!(
                    "repeats the check {} on environment {}, which {first} already defines; \
                     each pair of id and environment may appear only once",
                    show_value(&check.id),
                    show_value(&check.environment),
                ),
            ));
        }
        seen.insert(pair, format!("{} on line {}", table.name(), table.line()));
        checks.push(check);
    }

    if !unchecked {
        match tables.first() {
            None => {
                return Err(root.table_error(
                    "lists no [[check]] and does not set `unchecked = true`; add a check, or set \
                     `unchecked = true` to merge with no checks",
                ));
            }
            Some(first) if checks.iter().all(|check| check.expected_minimum == 0) => {
                return Err(first.error(
                    "expected_minimum",
                    "is 0, as in every check; unless `unchecked = true`, at least one check must \
                     expect more than zero tests, or a check that ran nothing would pass every \
                     merge",
                ));
            }
            Some(_) => {}
        }
    }

    Ok(Policy {
        revision,
        unchecked,
        checks,
    })
}

fn parse_check(table: &mut Table<'_, '_>) -> Result<CheckSpec, TomlError> {
    table.check_keys(CHECK_KEYS, CHECK_UNSUPPORTED)?;
    let id = non_empty_string(table, "id")?;
    let environment = non_empty_string(table, "environment")?;
    let command = table.required_string("command")?;
    let program = command
        .split_whitespace()
        .next()
        .map(str::to_owned)
        .ok_or_else(|| {
            table.error(
                "command",
                "is empty; it must name the program that runs the check",
            )
        })?;

    let adapter = table
        .strings("adapter")?
        .ok_or_else(|| table.missing("adapter"))?;
    if adapter.is_empty() {
        return Err(table.error(
            "adapter",
            "is empty; it must list every path that computes the verdict, the command's \
             program among them",
        ));
    }
    for entry in &adapter {
        check_adapter_path(table, entry)?;
    }

    let expected_minimum = table.required_uint("expected_minimum", 0..=u64::MAX)?;
    let timeout_s = table
        .uint("timeout_s", 1..=u64::MAX)?
        .unwrap_or(DEFAULT_TIMEOUT_S);

    let path = match table.strings("path")? {
        None => DEFAULT_PATH.iter().map(|dir| (*dir).to_owned()).collect(),
        Some(dirs) => {
            for dir in &dirs {
                check_path_dir(table, dir)?;
            }
            values(dirs)
        }
    };

    let env = table.strings("env")?.unwrap_or_default();
    for name in &env {
        check_env_name(table, name)?;
    }

    let network = table.bool("network")?.unwrap_or(false);
    table.finish()?;

    let adapter = values(adapter);
    if !program_in_adapter(&program, &adapter) {
        return Err(table.error(
            "command",
            format!(
                "runs the program {}, which is not inside `adapter`; list it there, or a \
                 directory above it that ends in `/`, because bay runs the check's programs from \
                 the base so that a change cannot rewrite the check that judges it",
                show_value(&program)
            ),
        ));
    }

    Ok(CheckSpec {
        id,
        environment,
        command,
        adapter,
        expected_minimum,
        timeout_s,
        path,
        env: values(env),
        network,
    })
}

fn non_empty_string(table: &mut Table<'_, '_>, key: &str) -> Result<String, TomlError> {
    let value = table.required_string(key)?;
    if value.is_empty() {
        return Err(table.error(key, "is empty; it must name something"));
    }
    Ok(value)
}

fn values(items: Vec<Located<String>>) -> Vec<String> {
    items.into_iter().map(|item| item.value).collect()
}

/// An adapter path is relative to the repository and stays inside it: bay copies it from the
/// base into the check's sandbox, and a path that left the tree would read the machine instead.
fn check_adapter_path(table: &Table<'_, '_>, entry: &Located<String>) -> Result<(), TomlError> {
    let path = entry.value.as_str();
    let problem = if path.starts_with('/') {
        Some("is absolute; adapter paths are relative to the repository")
    } else if path.split('/').any(|part| part == "..") {
        Some("has a `..` part; adapter paths must stay inside the repository")
    } else if components(path).is_empty() {
        Some("names no file or directory")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(table.error_at(
            "adapter",
            entry.line,
            format!("has the entry {}, which {problem}", show_value(path)),
        )),
        None => Ok(()),
    }
}

/// A `path` entry becomes one part of `PATH`. A relative one would resolve against wherever
/// the check starts, and a `:` would smuggle in more directories than the policy lists.
fn check_path_dir(table: &Table<'_, '_>, entry: &Located<String>) -> Result<(), TomlError> {
    let dir = entry.value.as_str();
    let problem = if !dir.starts_with('/') {
        Some("is not absolute; each directory of a check's PATH must start with `/`")
    } else if dir.contains(':') {
        Some("holds a `:`, which would split it into several PATH directories")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(table.error_at(
            "path",
            entry.line,
            format!("has the entry {}, which {problem}", show_value(dir)),
        )),
        None => Ok(()),
    }
}

fn check_env_name(table: &Table<'_, '_>, entry: &Located<String>) -> Result<(), TomlError> {
    let name = entry.value.as_str();
    let well_formed = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let problem = if !well_formed {
        "is not a variable name; use letters, digits and `_`, not starting with a digit"
    } else if RESERVED_ENV.contains(&name) {
        "is one that bay sets itself for every check, like PATH, HOME, TMPDIR, LANG and \
         BAY_ADAPTER_DIR, so that every run starts from the same environment"
    } else {
        return Ok(());
    };
    Err(table.error_at(
        "env",
        entry.line,
        format!("names {}, which {problem}", show_value(name)),
    ))
}

/// The parts of a relative path, without empty and `.` parts, so that `./scripts//check` and
/// `scripts/check` name the same file.
fn components(path: &str) -> Vec<&str> {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect()
}

/// Whether `program` is one of the adapter paths, or lies under an entry that ends in `/`.
fn program_in_adapter(program: &str, adapter: &[String]) -> bool {
    if program.starts_with('/') || program.split('/').any(|part| part == "..") {
        return false;
    }
    let program = components(program);
    adapter.iter().any(|entry| {
        let entry_parts = components(entry);
        if entry.ends_with('/') {
            program.len() > entry_parts.len() && program.starts_with(&entry_parts)
        } else {
            program == entry_parts
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    /// The `[[check]]` examples elsewhere on the page. Each uses one key this bay does not
    /// support yet, named second in the tuple.
    const SPEC_CHECK_EXAMPLES: [(&str, &str); 5] = [
        (
            r#"[[check]]
id = "tests"
environment = "linux-x86_64"
command = "scripts/bay-check tests"
adapter = ["scripts/bay-check"]
expected_minimum = 400
retry_on_failure = 2               # rerun a product_failure up to twice
allow_flaky = false                # true: merge a flaky check, named in coverage_gaps
"#,
            "retry_on_failure",
        ),
        (
            r#"[[check]]
id = "tests"
environment = "linux-x86_64"
command = "scripts/bay-check tests"
adapter = ["scripts/bay-check"]
expected_minimum = 400
baseline = "base"                  # fail a change only on failures main does not share
"#,
            "baseline",
        ),
        (
            r#"[[check]]
id = "commit-rules"
environment = "linux-x86_64"
command = "scripts/bay-check commit-rules"
adapter = ["scripts/bay-check"]
expected_minimum = 1
inputs = ["history"]               # the request's git reads history; evidence keyed by commit
"#,
            "inputs",
        ),
        (
            r#"[[check]]
id = "lint"
environment = "linux-x86_64"
command = "scripts/bay-check lint"
adapter = ["scripts/bay-check"]
expected_minimum = 1
materialize = "changed"            # only the changed files, plus paths
paths = [".lint.toml"]             # always given to the check
"#,
            "materialize",
        ),
        (
            r#"[[check]]
id = "web"
environment = "linux-x86_64"
command = "scripts/bay-check web"
adapter = ["scripts/bay-check"]
expected_minimum = 50
when_paths = ["web/", "package.json"]   # required only when the diff touches these
producers = ["ci-1", "ci-2"]            # only these producers' records count
"#,
            "when_paths",
        ),
    ];

    /// Removes every line that sets one of `keys`, and every table whose header names one.
    fn trim(text: &str, keys: &[&str]) -> String {
        let mut out = String::new();
        let mut skipping = false;
        for line in text.lines() {
            let trimmed = line.trim_start();
            if trimmed.starts_with('[') {
                let name = trimmed.trim_start_matches('[');
                let name = name.split([']', '.']).next().unwrap_or_default();
                skipping = keys.contains(&name);
            }
            let key = trimmed.split([' ', '=']).next().unwrap_or_default();
            if skipping || keys.contains(&key) {
                continue;
            }
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    fn all_unsupported() -> Vec<&'static str> {
        TOP_UNSUPPORTED
            .iter()
            .chain(CHECK_UNSUPPORTED)
            .copied()
            .collect()
    }

    fn refuse(text: &str) -> TomlError {
        Policy::parse(text)
            .expect_err("the policy must be refused")
            .0
    }

    fn line_of(text: &str, needle: &str) -> u32 {
        let index = text.find(needle).expect("the needle is in the text");
        crate::toml_doc::line_at(text, index)
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

    #[test]
    fn the_spec_example_trimmed_to_supported_keys_parses() {
        let policy = Policy::parse(&trim(SPEC_EXAMPLE, &all_unsupported())).expect("valid");
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
        assert_eq!(tests.expected_minimum, 400);
        assert_eq!(tests.timeout_s, 1800);
        assert_eq!(tests.path, ["/usr/local/bin", "/usr/bin", "/bin"]);
        assert_eq!(tests.env, ["DATABASE_URL"]);
        assert!(!tests.network);
        let e2e = &policy.checks[1];
        assert_eq!((e2e.id.as_str(), e2e.expected_minimum), ("e2e", 20));
        assert_eq!(e2e.timeout_s, DEFAULT_TIMEOUT_S);
        assert_eq!(e2e.path, DEFAULT_PATH);
        assert!(e2e.env.is_empty());
        assert_eq!(policy.required(), policy.checks.as_slice());
    }

    #[test]
    fn the_whole_spec_example_is_refused_on_its_first_unsupported_table() {
        let error = refuse(SPEC_EXAMPLE);
        assert_eq!(error.key.as_deref(), Some("quarantine"));
        assert_eq!(error.table, "top level");
        assert_eq!(error.line, line_of(SPEC_EXAMPLE, "[[quarantine]]"));
        assert!(error.message.contains("does not support"), "{error}");

        let only_checks = trim(SPEC_EXAMPLE, TOP_UNSUPPORTED);
        let error = refuse(&only_checks);
        assert_eq!(error.key.as_deref(), Some("inputs"));
        assert_eq!(error.table, "[[check]] #1");
        assert_eq!(error.line, line_of(&only_checks, "inputs = []"));
    }

    #[test]
    fn the_spec_check_examples_parse_once_trimmed() {
        for (example, unsupported) in SPEC_CHECK_EXAMPLES {
            let text = format!("revision = 1\n{example}");
            let error = refuse(&text);
            assert_eq!(error.key.as_deref(), Some(unsupported), "{error}");
            assert_eq!(error.table, "[[check]] #1");
            assert_eq!(error.line, line_of(&text, &format!("{unsupported} =")));
            let policy = Policy::parse(&trim(&text, CHECK_UNSUPPORTED)).expect("trimmed is valid");
            assert_eq!(policy.checks.len(), 1);
        }
    }

    #[test]
    fn every_unsupported_key_is_refused_as_known_but_unsupported() {
        for key in CHECK_UNSUPPORTED {
            let text = with_minimum(&format!("{key} = 1\n"));
            let error = refuse(&text);
            assert_eq!(error.key.as_deref(), Some(*key));
            assert_eq!(error.table, "[[check]] #1");
            assert_eq!(error.line, 9);
            assert!(error.message.contains("does not support"), "{error}");
        }
        for key in TOP_UNSUPPORTED {
            let text = format!("{}\n[{key}]\nx = 1\n", with_minimum(""));
            let error = refuse(&text);
            assert_eq!(
                (error.key.as_deref(), error.table.as_str()),
                (Some(*key), "top level")
            );
            assert_eq!(error.line, 10);
            assert!(error.message.contains("does not support"), "{error}");
        }
        let error = refuse(&format!(
            "{}\n[profile.fast]\nrequire = []\n",
            with_minimum("")
        ));
        assert_eq!(error.key.as_deref(), Some("profile"));
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
        assert!(policy.required().is_empty());
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
            let start =
                text.find(&format!("{key} = \"")).expect("the key is there") + key.len() + 4;
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
        let policy =
            Policy::parse(&with_minimum("env = [\"DATABASE_URL\", \"_x1\"]\n")).expect("ok");
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
        let raised = Policy::parse(&with_minimum("").replace("revision = 1", "revision = 2"))
            .expect("valid");
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
            edits in proptest::collection::vec(
                (0usize..4000, 0u8..3, prop::sample::select(
                    vec!['"', '[', ']', '=', '\n', '#', '/', '.', ' ', '0', '-', 'x', '{', '}', ',', 'é'],
                )),
                1..8,
            )
        ) {
            let text = mutate(&trim(SPEC_EXAMPLE, &all_unsupported()), &edits);
            if let Err(error) = Policy::parse(&text) {
                let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
                prop_assert!(error.0.line >= 1 && error.0.line <= lines.max(1) + 1);
                prop_assert!(!error.to_string().contains('\n'));
            }
        }

        #[test]
        fn parse_never_panics_on_a_policy_with_a_line_cut(cut in 0usize..40) {
            let text = trim(SPEC_EXAMPLE, &all_unsupported());
            let kept: String = text
                .lines()
                .enumerate()
                .filter(|(i, _)| *i != cut)
                .map(|(_, line)| format!("{line}\n"))
                .collect();
            let _ = Policy::parse(&kept);
        }
    }
}
