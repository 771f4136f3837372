//! `.bay/policy.toml`: the checks a change must pass before it merges.
//!
//! bay reads the policy from main, at a candidate's base, so a change never sets the rules it
//! is judged by. The parser is strict on purpose. A key it does not know is refused rather than
//! skipped: skipping it would quietly change what a merge must pass, and the person who wrote
//! it would believe it was enforced.
//!
//! Some keys the specification defines bring behaviour this bay does not have yet: approval
//! checks (`kind = "approval"`, `carry`, `[limits] max_waiting_approvals`), waivers
//! (`waivable`), `footprint`, `[[input]]` and `[agent] require_actor_proof`. Each is validated
//! as fully as any other key, so a wrong value gets its own error, and then refused by name
//! (see [`NotYet`]) once the rest of the file is valid.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::id::ChangeId;
use crate::time::is_calendar_date;
use crate::toml_doc::{Document, Located, NotYet, Table, TomlError, show_value};

/// The accepted policy, with every default filled in.
///
/// Fields added after the first release are left out of the JSON while they hold their
/// defaults, so a policy that does not use them keeps the digest it always had.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Raised by every policy change, so records can say which policy judged them.
    pub revision: i64,
    /// `true` merges changes with no check at all; never beside a check.
    pub unchecked: bool,
    /// The checks, in the order the policy lists them.
    pub checks: Vec<CheckSpec>,
    /// The checks set aside for a stated time, in the order the policy lists them. Each names
    /// one `(id, environment)` of `checks`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quarantine: Vec<Quarantine>,
    /// Caps on the size of one change.
    #[serde(default, skip_serializing_if = "Limits::is_unset")]
    pub limits: Limits,
    /// `[policy] reuse_unsigned`: evidence may be reused though no key registry signs it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub reuse_unsigned: bool,
    /// `[policy] signing`: what a key registry signs. Left out of the digest at its default,
    /// so a policy that does not set it keeps the digest it had before the key existed.
    #[serde(default, skip_serializing_if = "Signing::is_all")]
    pub signing: Signing,
    /// `[agent]`: what `bay start` asks of an actor.
    #[serde(default, skip_serializing_if = "AgentRules::is_unset")]
    pub agent: AgentRules,
    /// `[locks] paths`: globs of the files one session at a time edits, across machines
    /// (`crate::lock`); empty locks nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locks: Vec<String>,
    /// `[[dimension]]`: the site's own completion dimensions, in the order the policy lists
    /// them. `bay status` reports them; no merge ever reads them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dimensions: Vec<Dimension>,
    /// `[profile.<name>]`: what completion each profile requires, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profiles: BTreeMap<String, Profile>,
}

/// One `[[dimension]]`: records of `kind` from one of `producers`, naming the merge commit,
/// meet it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    pub name: String,
    pub kind: String,
    pub producers: Vec<String>,
}

/// One `[profile.<name>]`: the dimensions a change must meet to be complete.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Dimensions bay defines ([`BUILTIN_DIMENSIONS`]) or `[[dimension]]` names.
    pub require: Vec<String>,
    /// `require_signed`: a dimension that rests only on unsigned records is `unknown`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub require_signed: bool,
}

/// The profile bay judges by when the config names none, and the policy has no
/// `[profile.default]`.
pub const DEFAULT_PROFILE: &str = "default";

impl Policy {
    /// The profile named `name`: the policy's own, or for `default` with no such table, one
    /// requiring `merged` and `checked`. `None` for any other name with no table.
    pub fn profile(&self, name: &str) -> Option<Profile> {
        match self.profiles.get(name) {
            Some(profile) => Some(profile.clone()),
            None if name == DEFAULT_PROFILE => Some(Profile {
                require: vec!["merged".into(), "checked".into()],
                require_signed: false,
            }),
            None => None,
        }
    }
}

/// `[policy] signing`: what a key registry signs (read at the base, so a change never sets
/// the mode bay judges it by). Without a registry nothing is signed, whatever it says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Signing {
    /// Every request, merge and record: the default.
    #[default]
    All,
    /// Only `approval` and `waiver` records; everything else runs unsigned.
    Approvals,
}

impl Signing {
    pub fn is_all(&self) -> bool {
        *self == Signing::All
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Signing::All => "all",
            Signing::Approvals => "approvals",
        }
    }
}

/// `[agent]` of the policy: the rules `bay start` holds each actor to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRules {
    /// `require_actor`: refuse `ACTOR_UNNAMED` while the name comes from a default.
    #[serde(default, skip_serializing_if = "is_false")]
    pub require_actor: bool,
    /// `max_live_changes`: the most live changes one actor may hold; `None` is no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_live_changes: Option<u64>,
}

impl AgentRules {
    fn is_unset(&self) -> bool {
        *self == AgentRules::default()
    }
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
    /// Inputs beyond the tree. Either keys the check's evidence by commit; `History` also
    /// gives the check read-only access to the repository's history. Each at most once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<CheckInput>,
    /// Content-addressed files the check reads; each name once. bay passes them to the check
    /// and never reads the files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fixtures: Vec<Fixture>,
    /// The only files and directories of the candidate the check sees; `None` is the whole
    /// tree. Never an empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// How much of the candidate the check gets.
    #[serde(default, skip_serializing_if = "Materialize::is_tree")]
    pub materialize: Materialize,
    /// The time limit, in seconds, for copying the candidate for the check.
    #[serde(
        default = "default_materialize_timeout_s",
        skip_serializing_if = "is_default_materialize_timeout_s"
    )]
    pub materialize_timeout_s: u64,
    /// Before merging (`Pre`, required) or after (`Post`, never blocks the merge).
    #[serde(default, skip_serializing_if = "Stage::is_pre")]
    pub stage: Stage,
    /// Globs: the check is required only when the candidate's own diff touches a matching
    /// path. `None` is always; never an empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_paths: Option<Vec<String>>,
    /// The only producers whose records answer the check; `None` is any. Never empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producers: Option<Vec<String>>,
    /// How many times a `product_failure` reruns on the same tree, 0 to 5; only on a `Pre`
    /// check.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_on_failure: u32,
    /// Whether a flaky check (a failure, then a pass) may merge; only on a `Pre` check.
    #[serde(default, skip_serializing_if = "is_false")]
    pub allow_flaky: bool,
    /// What failures are judged against; `None` fails on every failure. Only on a `Pre` check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<Baseline>,
}

/// An input of a check beyond the candidate's tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckInput {
    /// The commit and its change: the evidence counts only for that exact commit.
    Commit,
    /// The commit, and read-only access to the repository's history.
    History,
}

impl CheckInput {
    /// The word the policy writes.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckInput::Commit => "commit",
            CheckInput::History => "history",
        }
    }
}

/// A content-addressed file a check reads: `<name>@sha256:<hex>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fixture {
    pub name: String,
    /// 64 lower-case hex digits.
    pub sha256: String,
}

impl fmt::Display for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@sha256:{}", self.name, self.sha256)
    }
}

/// How much of the candidate a check gets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Materialize {
    /// The whole tree, or its `paths`.
    #[default]
    Tree,
    /// Only the files the candidate changes against its base, plus the check's `paths`. The
    /// evidence is then keyed by commit.
    Changed,
}

impl Materialize {
    pub fn is_tree(&self) -> bool {
        *self == Materialize::Tree
    }
}

/// When a check is answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Required before merging.
    #[default]
    Pre,
    /// Answered after merging by a producer; never blocks the merge it judges.
    Post,
}

impl Stage {
    pub fn is_pre(&self) -> bool {
        *self == Stage::Pre
    }

    /// The word the policy writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Pre => "pre",
            Stage::Post => "post",
        }
    }
}

/// What a check's failures are judged against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Baseline {
    /// A failing unit that also failed on the change's base is pre-existing, not new.
    Base,
}

/// One `[[quarantine]]`: a check set aside for a stated time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quarantine {
    pub id: String,
    pub environment: String,
    pub reason: String,
    pub end: QuarantineEnd,
    /// Who answers for it; never empty.
    pub owner: Option<String>,
    /// The date, `YYYY-MM-DD`, the check was set aside.
    pub since: Option<String>,
}

/// When a quarantine ends. Past its end it stays in force until a policy change removes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuarantineEnd {
    /// A calendar date, `YYYY-MM-DD`.
    Date(String),
    /// The change whose merge ends it.
    Change(ChangeId),
}

impl fmt::Display for QuarantineEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            QuarantineEnd::Date(date) => f.write_str(date),
            QuarantineEnd::Change(change) => change.fmt(f),
        }
    }
}

/// `[limits]`: caps on one change; `None` is no cap. Each cap is at least 1.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// The size of any one file the change adds or changes, in MiB.
    pub max_file_mib: Option<u64>,
    /// The files the change touches.
    pub max_files: Option<u64>,
    /// The lines the change adds; a binary file adds none.
    pub max_added_lines: Option<u64>,
}

impl Limits {
    /// Whether no cap is set.
    pub fn is_unset(&self) -> bool {
        *self == Limits::default()
    }
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

/// The time limit for copying a candidate for a check when the policy gives none.
pub const DEFAULT_MATERIALIZE_TIMEOUT_S: u64 = 600;

/// The most reruns of a failed check.
pub const MAX_RETRY_ON_FAILURE: u64 = 5;

/// A check's `PATH` when the policy gives none.
pub const DEFAULT_PATH: [&str; 2] = ["/usr/bin", "/bin"];

/// Variables bay sets itself for every check. Passing the runner's own values would undo the
/// fixed environment that makes two runs of a check comparable.
pub const RESERVED_ENV: [&str; 5] = ["PATH", "HOME", "TMPDIR", "LANG", "BAY_ADAPTER_DIR"];

/// The completion dimensions bay defines; a `[[dimension]]` cannot reuse their names.
pub const BUILTIN_DIMENSIONS: [&str; 4] = ["merged", "checked", "running", "effective"];

fn default_materialize_timeout_s() -> u64 {
    DEFAULT_MATERIALIZE_TIMEOUT_S
}

fn is_default_materialize_timeout_s(value: &u64) -> bool {
    *value == DEFAULT_MATERIALIZE_TIMEOUT_S
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn is_false(value: &bool) -> bool {
    !*value
}

const TOP_KEYS: &[&str] = &[
    "revision",
    "unchecked",
    "check",
    "quarantine",
    "limits",
    "locks",
    "input",
    "dimension",
    "profile",
    "agent",
    "policy",
];

/// Top-level tables this bay validates and then refuses, because it does not act on them yet.
pub const TOP_NOT_YET: [&str; 1] = ["input"];

const CHECK_KEYS: &[&str] = &[
    "id",
    "environment",
    "kind",
    "command",
    "adapter",
    "inputs",
    "fixtures",
    "expected_minimum",
    "timeout_s",
    "path",
    "env",
    "network",
    "paths",
    "materialize",
    "materialize_timeout_s",
    "stage",
    "when_paths",
    "producers",
    "carry",
    "footprint",
    "retry_on_failure",
    "allow_flaky",
    "baseline",
    "waivable",
];

/// `[[check]]` keys this bay validates and then refuses, because it does not act on them yet.
/// `kind` is refused too, but only as `kind = "approval"`.
pub const CHECK_NOT_YET: [&str; 3] = ["carry", "footprint", "waivable"];

/// The keys that make a check run; an approval check runs nothing, so it takes none of them.
const RUN_SETTINGS: &[&str] = &[
    "command",
    "adapter",
    "expected_minimum",
    "inputs",
    "fixtures",
    "timeout_s",
    "path",
    "env",
    "network",
    "paths",
    "materialize",
    "materialize_timeout_s",
    "retry_on_failure",
    "allow_flaky",
    "baseline",
    "waivable",
];

const LIMIT_KEYS: [&str; 3] = ["max_file_mib", "max_files", "max_added_lines"];

impl Policy {
    /// Main's policy for the rules an agent's own commands and hooks follow (`[agent]`,
    /// `[locks]`), from its text at main: none when main has no policy or one that does not
    /// parse, so those rules hold nothing then. A merge refuses such a policy with its own
    /// code, so nothing it does not check can land.
    pub fn agent_side(text: Option<&str>) -> Option<Policy> {
        Policy::parse(text?).ok()
    }
}

impl Policy {
    /// Parses and validates the text of `.bay/policy.toml`.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        Ok(parse(text)?)
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
        crate::id::hex(&hasher.finalize())
    }

    /// Whether a merge under this policy runs a check before it merges, and so needs a check
    /// sandbox on the machine that merges: any pre check, unless `unchecked = true`.
    pub fn runs_checks(&self) -> bool {
        !self.unchecked && self.checks.iter().any(|check| check.stage.is_pre())
    }

    /// The quarantine entry that sets `check` aside, if any.
    pub fn quarantine_of(&self, check: &CheckSpec) -> Option<&Quarantine> {
        self.quarantine
            .iter()
            .find(|q| q.id == check.id && q.environment == check.environment)
    }
}

/// One `[[check]]` as the policy-wide rules need it.
struct Parsed {
    /// `None` for an approval check, which this bay refuses once the rest is valid.
    spec: Option<CheckSpec>,
    id: String,
    environment: String,
    stage: Stage,
}

fn parse(text: &str) -> Result<Policy, TomlError> {
    let doc = Document::parse(text)?;
    let mut root = doc.root();
    root.check_keys(TOP_KEYS, &[])?;
    let revision = root.required_integer("revision")?;
    let unchecked = root.bool("unchecked")?.unwrap_or(false);
    let mut tables = root.tables("check")?;

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

    let mut later = NotYet::default();
    let mut parsed: Vec<Parsed> = Vec::with_capacity(tables.len());
    let mut pairs: BTreeMap<(String, String), String> = BTreeMap::new();
    let mut stages: BTreeMap<String, (Stage, String)> = BTreeMap::new();
    for table in &mut tables {
        let check = parse_check(table, &mut later)?;
        let here = format!("{} on line {}", table.name(), table.line());
        let pair = (check.id.clone(), check.environment.clone());
        if let Some(first) = pairs.get(&pair) {
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
        pairs.insert(pair, here.clone());
        match stages.get(&check.id) {
            Some((stage, first)) if *stage != check.stage => {
                let key = if table.has("stage") { "stage" } else { "id" };
                return Err(table.error(
                    key,
                    format!(
                        "puts the check {} in the {} stage, but {first} has it in the {} stage; \
                         one check id belongs to one stage, so give the {} check its own id",
                        show_value(&check.id),
                        check.stage.as_str(),
                        stage.as_str(),
                        Stage::Post.as_str(),
                    ),
                ));
            }
            Some(_) => {}
            None => {
                stages.insert(check.id.clone(), (check.stage, here));
            }
        }
        parsed.push(check);
    }

    let mut quarantine_tables = root.tables("quarantine")?;
    let mut quarantine = Vec::with_capacity(quarantine_tables.len());
    let mut set_aside: BTreeMap<(String, String), String> = BTreeMap::new();
    for table in &mut quarantine_tables {
        let entry = parse_quarantine(table, &pairs)?;
        let pair = (entry.id.clone(), entry.environment.clone());
        let here = format!("{} on line {}", table.name(), table.line());
        if let Some(first) = set_aside.insert(pair, here) {
            return Err(table.error(
                "id",
                format!(
                    "sets aside the check {} on environment {} again, which {first} already \
                     does; each check has at most one quarantine entry",
                    show_value(&entry.id),
                    show_value(&entry.environment),
                ),
            ));
        }
        quarantine.push(entry);
    }

    let limits = match root.table("limits")? {
        Some(mut table) => parse_limits(&mut table, &mut later)?,
        None => Limits::default(),
    };
    let locks = match root.table("locks")? {
        Some(mut table) => parse_locks(&mut table)?,
        None => Vec::new(),
    };
    let mut dimension_names = BTreeSet::new();
    let mut dimensions = Vec::new();
    for table in &mut root.tables("dimension")? {
        dimensions.push(parse_dimension(table, &mut dimension_names)?);
    }
    let profiles = match root.table("profile")? {
        Some(mut table) => parse_profiles(&mut table, &dimension_names)?,
        None => BTreeMap::new(),
    };
    let mut input_names = BTreeMap::new();
    for table in &mut root.tables("input")? {
        parse_input(table, &mut input_names)?;
    }
    let agent = match root.table("agent")? {
        Some(mut table) => parse_agent(&mut table, &mut later)?,
        None => AgentRules::default(),
    };
    let (signing, reuse_unsigned) = match root.table("policy")? {
        Some(mut table) => parse_signing(&mut table)?,
        None => (Signing::All, false),
    };
    for key in TOP_NOT_YET {
        later.key(&root, key);
    }
    root.finish()?;

    if !unchecked {
        if tables.is_empty() {
            return Err(root.table_error(
                "lists no [[check]] and does not set `unchecked = true`; add a check, or set \
                 `unchecked = true` to merge with no checks",
            ));
        }
        expects_tests(&parsed, &tables, &quarantine, &quarantine_tables)?;
    }

    later.finish()?;
    Ok(Policy {
        revision,
        unchecked,
        checks: parsed.into_iter().filter_map(|check| check.spec).collect(),
        quarantine,
        limits,
        reuse_unsigned,
        signing,
        agent,
        locks,
        dimensions,
        profiles,
    })
}

/// Unless the policy is unchecked, some check bay runs before merging must expect more than
/// zero tests and must not be set aside, or a check that ran nothing would pass every merge.
fn expects_tests(
    parsed: &[Parsed],
    tables: &[Table<'_, '_>],
    quarantine: &[Quarantine],
    quarantine_tables: &[Table<'_, '_>],
) -> Result<(), TomlError> {
    let pre_runs: Vec<(&CheckSpec, &Table<'_, '_>)> = parsed
        .iter()
        .zip(tables)
        .filter_map(|(check, table)| check.spec.as_ref().map(|spec| (spec, table)))
        .filter(|(spec, _)| spec.stage == Stage::Pre)
        .collect();
    let Some((_, first)) = pre_runs.first() else {
        return Err(tables[0].table_error(
            "is not a check bay runs before merging, and neither is any other [[check]]: each \
             is a post or an approval check; unless `unchecked = true`, at least one pre check \
             bay runs must expect more than zero tests",
        ));
    };
    let expecting: Vec<&CheckSpec> = pre_runs
        .iter()
        .map(|(spec, _)| *spec)
        .filter(|spec| spec.expected_minimum > 0)
        .collect();
    if expecting.is_empty() {
        return Err(first.error(
            "expected_minimum",
            "is 0, as in every pre check bay runs; unless `unchecked = true`, at least one such \
             check must expect more than zero tests, or a check that ran nothing would pass \
             every merge",
        ));
    }
    let standing = expecting.iter().any(|spec| {
        !quarantine
            .iter()
            .any(|q| q.id == spec.id && q.environment == spec.environment)
    });
    if standing {
        return Ok(());
    }
    let last = expecting[expecting.len() - 1];
    let (_, table) = quarantine
        .iter()
        .zip(quarantine_tables)
        .find(|(q, _)| q.id == last.id && q.environment == last.environment)
        .expect("every check that expects tests is set aside, this one too");
    Err(table.error(
        "id",
        format!(
            "sets aside the check {} on environment {}, and with it the last pre check that \
             expects more than zero tests; a required check with expected_minimum above zero \
             must remain, or a change could merge with no test run at all",
            show_value(&last.id),
            show_value(&last.environment),
        ),
    ))
}

fn parse_check(table: &mut Table<'_, '_>, later: &mut NotYet) -> Result<Parsed, TomlError> {
    table.check_keys(CHECK_KEYS, &[])?;
    let id = non_empty_string(table, "id")?;
    let environment = non_empty_string(table, "environment")?;
    let approval = match table.string("kind")?.as_deref() {
        None | Some("check") => false,
        Some("approval") => true,
        Some(other) => {
            return Err(table.error(
                "kind",
                format!(
                    "is {}; it must be \"check\", a check bay runs (the default), or \
                     \"approval\", answered by an approver's signed record",
                    show_value(other)
                ),
            ));
        }
    };
    let stage = match table.string("stage")?.as_deref() {
        None | Some("pre") => Stage::Pre,
        Some("post") => Stage::Post,
        Some(other) => {
            return Err(table.error(
                "stage",
                format!(
                    "is {}; it must be \"pre\", required before merging (the default), or \
                     \"post\", answered after merging",
                    show_value(other)
                ),
            ));
        }
    };
    let spec = if approval {
        parse_approval(table, stage, later)?;
        None
    } else {
        Some(parse_run(
            table,
            id.clone(),
            environment.clone(),
            stage,
            later,
        )?)
    };
    Ok(Parsed {
        spec,
        id,
        environment,
        stage,
    })
}

/// Validates an approval check. This bay does not ask for approvals yet, so it notes the
/// check for refusal.
fn parse_approval(
    table: &mut Table<'_, '_>,
    stage: Stage,
    later: &mut NotYet,
) -> Result<(), TomlError> {
    let kind_line = table.line_of("kind");
    if stage == Stage::Post {
        return Err(table.error(
            "stage",
            format!(
                "is \"post\" on an approval check (kind = \"approval\" on line {kind_line}); an \
                 approval is asked for before merging, never after"
            ),
        ));
    }
    if let Some(key) = table
        .keys()
        .into_iter()
        .find(|key| RUN_SETTINGS.contains(&key.value))
    {
        let why = if key.value == "waivable" {
            "a person's yes answers an approval check, never a waiver"
        } else {
            "an approval check runs nothing, so it takes no command, adapter, expected_minimum \
             or other run setting"
        };
        return Err(table.error(
            key.value,
            format!("is set on an approval check (kind = \"approval\" on line {kind_line}); {why}"),
        ));
    }
    let when_paths = globs(table, "when_paths")?;
    if when_paths.is_none() {
        return Err(table.error(
            "when_paths",
            format!(
                "is required on an approval check (kind = \"approval\" on line {kind_line}): it \
                 names the paths that need a yes; use [\"**\"] to ask on every change"
            ),
        ));
    }
    names(table, "producers")?;
    table.bool("carry")?;
    // With `when_paths` always present, `footprint = true` has its read set.
    table.bool("footprint")?;
    table.finish()?;
    later.note(table.error(
        "kind",
        "is \"approval\": approval checks are part of bay, but this version of bay does not \
         support them yet; remove this [[check]] for now: bay refuses it rather than ignore it, \
         because ignoring it would change what bay enforces",
    ));
    for key in CHECK_NOT_YET {
        later.key(table, key);
    }
    Ok(())
}

fn parse_run(
    table: &mut Table<'_, '_>,
    id: String,
    environment: String,
    stage: Stage,
    later: &mut NotYet,
) -> Result<CheckSpec, TomlError> {
    if table.has("carry") {
        return Err(table.error(
            "carry",
            "is set on a check bay runs; it belongs only on an approval check \
             (kind = \"approval\"), whose yes it carries to later candidates",
        ));
    }
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
        check_repo_path(table, "adapter", entry)?;
    }

    let inputs = parse_inputs(table)?;
    let fixtures = parse_fixtures(table)?;
    let expected_minimum = table.required_uint("expected_minimum", 0..=u64::MAX)?;
    let timeout_s = table
        .uint("timeout_s", 1..=u64::MAX)?
        .unwrap_or(DEFAULT_TIMEOUT_S);

    let path = match table.strings("path")? {
        None => DEFAULT_PATH.iter().map(|dir| (*dir).to_owned()).collect(),
        Some(dirs) => {
            for dir in &dirs {
                check_path_dir(table, "path", dir)?;
            }
            values(dirs)
        }
    };

    let env = table.strings("env")?.unwrap_or_default();
    for name in &env {
        check_env_name(table, name)?;
    }

    let network = table.bool("network")?.unwrap_or(false);

    let paths = non_empty_list(
        table,
        "paths",
        "leave it out to give the check the whole tree",
    )?;
    if let Some(paths) = &paths {
        for entry in paths {
            check_repo_path(table, "paths", entry)?;
        }
    }
    let materialize = match table.string("materialize")?.as_deref() {
        None => Materialize::Tree,
        Some("changed") => Materialize::Changed,
        Some(other) => {
            return Err(table.error(
                "materialize",
                format!(
                    "is {}; its one value is \"changed\", the files the candidate changes plus \
                     `paths`; leave it out to give the check the whole tree",
                    show_value(other)
                ),
            ));
        }
    };
    let materialize_timeout_s = table
        .uint("materialize_timeout_s", 1..=u64::MAX)?
        .unwrap_or(DEFAULT_MATERIALIZE_TIMEOUT_S);
    let when_paths = globs(table, "when_paths")?;
    let producers = names(table, "producers")?;
    let retry_on_failure = table
        .uint("retry_on_failure", 0..=MAX_RETRY_ON_FAILURE)?
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX));
    let allow_flaky = table.bool("allow_flaky")?.unwrap_or(false);
    let baseline = match table.string("baseline")?.as_deref() {
        None => None,
        Some("base") => Some(Baseline::Base),
        Some(other) => {
            return Err(table.error(
                "baseline",
                format!(
                    "is {}; its one value is \"base\", which fails a change only on failures \
                     its base does not share",
                    show_value(other)
                ),
            ));
        }
    };
    let footprint = table.bool("footprint")?;
    table.bool("waivable")?;
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

    if stage == Stage::Post
        && let Some(key) = ["retry_on_failure", "allow_flaky", "baseline"]
            .into_iter()
            .filter(|key| table.has(key))
            .min_by_key(|key| table.line_of(key))
    {
        return Err(table.error(
            key,
            format!(
                "is set on a post check (stage = \"post\" on line {}); reruns, flaky merges and \
                 baselines apply only to a check that runs before merging, since a post check \
                 never blocks one",
                table.line_of("stage")
            ),
        ));
    }
    if footprint == Some(true) {
        if materialize == Materialize::Changed {
            return Err(table.error(
                "materialize",
                format!(
                    "is \"changed\" beside footprint = true (line {}); a footprint record \
                     carries by the files it read, and a check given only the changed files \
                     reads something else on every candidate",
                    table.line_of("footprint")
                ),
            ));
        }
        if paths.is_none() && when_paths.is_none() {
            return Err(table.error(
                "footprint",
                "is true, but the check sets neither `paths` nor `when_paths`, so nothing names \
                 the files its verdict reads",
            ));
        }
    }
    for key in CHECK_NOT_YET {
        later.key(table, key);
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
        inputs,
        fixtures,
        paths: paths.map(values),
        materialize,
        materialize_timeout_s,
        stage,
        when_paths: when_paths.map(values),
        producers: producers.map(values),
        retry_on_failure,
        allow_flaky,
        baseline,
    })
}

fn parse_inputs(table: &mut Table<'_, '_>) -> Result<Vec<CheckInput>, TomlError> {
    let mut inputs = Vec::new();
    for entry in table.strings("inputs")?.unwrap_or_default() {
        let input = match entry.value.as_str() {
            "commit" => CheckInput::Commit,
            "history" => CheckInput::History,
            other => {
                return Err(table.error_at(
                    "inputs",
                    entry.line,
                    format!(
                        "has the entry {}; an input is \"commit\" or \"history\"",
                        show_value(other)
                    ),
                ));
            }
        };
        if inputs.contains(&input) {
            return Err(table.error_at(
                "inputs",
                entry.line,
                format!("names {} twice", show_value(input.as_str())),
            ));
        }
        inputs.push(input);
    }
    Ok(inputs)
}

fn parse_fixtures(table: &mut Table<'_, '_>) -> Result<Vec<Fixture>, TomlError> {
    let mut fixtures: Vec<Fixture> = Vec::new();
    for entry in table.strings("fixtures")?.unwrap_or_default() {
        let text = entry.value.as_str();
        let is_hex = |hex: &str| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        let problem = match text.split_once("@sha256:") {
            None => "is not written `<name>@sha256:<64 lower-case hex digits>`",
            Some(("", _)) => "has no name before `@sha256:`",
            Some((name, _))
                if name
                    .chars()
                    .any(|c| c == '@' || c.is_whitespace() || c.is_control()) =>
            {
                "has a name holding `@`, a space or a control character"
            }
            Some((_, hex)) if !is_hex(hex) => {
                "does not end in 64 lower-case hex digits after `@sha256:`"
            }
            Some((name, hex)) => {
                if let Some(first) = fixtures.iter().find(|f| f.name == name) {
                    return Err(table.error_at(
                        "fixtures",
                        entry.line,
                        format!(
                            "names the fixture {} twice (the first is {}); each name appears once",
                            show_value(name),
                            show_value(&first.to_string())
                        ),
                    ));
                }
                fixtures.push(Fixture {
                    name: name.to_owned(),
                    sha256: hex.to_owned(),
                });
                continue;
            }
        };
        return Err(table.error_at(
            "fixtures",
            entry.line,
            format!("has the entry {}, which {problem}", show_value(text)),
        ));
    }
    Ok(fixtures)
}

fn parse_quarantine(
    table: &mut Table<'_, '_>,
    checks: &BTreeMap<(String, String), String>,
) -> Result<Quarantine, TomlError> {
    table.check_keys(
        &["id", "environment", "reason", "end", "owner", "since"],
        &[],
    )?;
    let id = non_empty_string(table, "id")?;
    let environment = non_empty_string(table, "environment")?;
    let reason = non_empty_string(table, "reason")?;
    let end_text = table.required_string("end")?;
    let end = if is_calendar_date(&end_text) {
        QuarantineEnd::Date(end_text)
    } else if let Ok(change) = ChangeId::parse(&end_text) {
        QuarantineEnd::Change(change)
    } else {
        return Err(table.error(
            "end",
            format!(
                "is {}; it must be a date, YYYY-MM-DD, or a change id of eight lower-case \
                 base32 characters",
                show_value(&end_text)
            ),
        ));
    };
    let owner = table.string("owner")?;
    if owner.as_deref() == Some("") {
        return Err(table.error(
            "owner",
            "is empty; name who answers for the quarantine, or leave the key out",
        ));
    }
    let since = table.string("since")?;
    if let Some(since) = &since
        && !is_calendar_date(since)
    {
        return Err(table.error(
            "since",
            format!(
                "is {}; it must be the date the check was set aside, YYYY-MM-DD",
                show_value(since)
            ),
        ));
    }
    table.finish()?;
    // A quarantine that names no check sets nothing aside: it is a typo, or a check that was
    // renamed or removed, and either way the entry does not do what its author believes.
    if !checks.contains_key(&(id.clone(), environment.clone())) {
        let same_id: Vec<String> = checks
            .keys()
            .filter(|(check, _)| *check == id)
            .map(|(_, env)| show_value(env))
            .collect();
        let hint = if same_id.is_empty() {
            "no [[check]] has that id".to_owned()
        } else {
            format!("that id runs only on environment {}", same_id.join(", "))
        };
        return Err(table.error(
            "id",
            format!(
                "names the check {} on environment {}, which this policy does not define ({hint}); \
                 a quarantine sets aside one [[check]] of the same policy",
                show_value(&id),
                show_value(&environment),
            ),
        ));
    }
    Ok(Quarantine {
        id,
        environment,
        reason,
        end,
        owner,
        since,
    })
}

fn parse_limits(table: &mut Table<'_, '_>, later: &mut NotYet) -> Result<Limits, TomlError> {
    let mut keys = LIMIT_KEYS.to_vec();
    keys.push("max_waiting_approvals");
    table.check_keys(&keys, &[])?;
    let mut caps = [None; 3];
    for (cap, key) in caps.iter_mut().zip(LIMIT_KEYS) {
        *cap = table.uint(key, 1..=u64::MAX)?;
    }
    table.uint("max_waiting_approvals", 1..=u64::MAX)?;
    table.finish()?;
    later.key(table, "max_waiting_approvals");
    let [max_file_mib, max_files, max_added_lines] = caps;
    Ok(Limits {
        max_file_mib,
        max_files,
        max_added_lines,
    })
}

fn parse_locks(table: &mut Table<'_, '_>) -> Result<Vec<String>, TomlError> {
    table.check_keys(&["paths"], &[])?;
    let paths = non_empty_list(table, "paths", "leave it out to lock nothing")?.unwrap_or_default();
    for entry in &paths {
        check_glob(table, "paths", entry)?;
    }
    table.finish()?;
    Ok(paths.into_iter().map(|entry| entry.value).collect())
}

fn parse_dimension(
    table: &mut Table<'_, '_>,
    seen: &mut BTreeSet<String>,
) -> Result<Dimension, TomlError> {
    table.check_keys(&["name", "kind", "producers"], &[])?;
    let name = non_empty_string(table, "name")?;
    if BUILTIN_DIMENSIONS.contains(&name.as_str()) {
        return Err(table.error(
            "name",
            format!(
                "is {}, a dimension bay defines itself ({}); give yours another name",
                show_value(&name),
                BUILTIN_DIMENSIONS.join(", ")
            ),
        ));
    }
    if !seen.insert(name.clone()) {
        return Err(table.error(
            "name",
            format!("repeats the dimension {}", show_value(&name)),
        ));
    }
    let kind = non_empty_string(table, "kind")?;
    let Some(producers) = names(table, "producers")? else {
        return Err(table.missing("producers"));
    };
    table.finish()?;
    Ok(Dimension {
        name,
        kind,
        producers: values(producers),
    })
}

fn parse_profiles(
    table: &mut Table<'_, '_>,
    dimensions: &BTreeSet<String>,
) -> Result<BTreeMap<String, Profile>, TomlError> {
    let mut profiles = BTreeMap::new();
    for key in table.keys() {
        let Some(mut profile) = table.table(key.value)? else {
            continue;
        };
        profile.check_keys(&["require", "require_signed"], &[])?;
        let require = profile.strings("require")?.unwrap_or_default();
        for entry in &require {
            let known = BUILTIN_DIMENSIONS.contains(&entry.value.as_str())
                || dimensions.contains(&entry.value);
            if !known {
                return Err(profile.error_at(
                    "require",
                    entry.line,
                    format!(
                        "names {}, which is neither a dimension bay defines ({}) nor a \
                         [[dimension]] of this policy",
                        show_value(&entry.value),
                        BUILTIN_DIMENSIONS.join(", ")
                    ),
                ));
            }
        }
        let require_signed = profile.bool("require_signed")?.unwrap_or(false);
        profile.finish()?;
        profiles.insert(
            key.value.to_owned(),
            Profile {
                require: values(require),
                require_signed,
            },
        );
    }
    table.finish()?;
    Ok(profiles)
}

fn parse_input(
    table: &mut Table<'_, '_>,
    seen: &mut BTreeMap<String, String>,
) -> Result<(), TomlError> {
    table.check_keys(
        &["name", "provider", "adapter", "path", "phase", "timeout_s"],
        &[],
    )?;
    let name = non_empty_string(table, "name")?;
    let well_formed = name
        .split_once(':')
        .is_some_and(|(kind, rest)| !kind.is_empty() && !rest.is_empty())
        && !name.chars().any(|c| c.is_whitespace() || c.is_control());
    if !well_formed {
        return Err(table.error(
            "name",
            format!(
                "is {}; an input is named `<kind>:<name>`, such as \"contract:api.orders\"",
                show_value(&name)
            ),
        ));
    }
    let provider = non_empty_string(table, "provider")?;
    let program = provider
        .split_whitespace()
        .next()
        .map(str::to_owned)
        .ok_or_else(|| {
            table.error(
                "provider",
                "is blank; it must name the program that prints the input's version",
            )
        })?;
    let adapter = non_empty_list(
        table,
        "adapter",
        "it must list every path the provider's answer depends on",
    )?
    .ok_or_else(|| table.missing("adapter"))?;
    for entry in &adapter {
        check_repo_path(table, "adapter", entry)?;
    }
    for dir in table.strings("path")?.unwrap_or_default() {
        check_path_dir(table, "path", &dir)?;
    }
    if let Some(phase) = table.string("phase")?
        && !["expand", "migrate", "contract"].contains(&phase.as_str())
    {
        return Err(table.error(
            "phase",
            format!(
                "is {}; it must be \"expand\", \"migrate\" or \"contract\"",
                show_value(&phase)
            ),
        ));
    }
    table.uint("timeout_s", 1..=300)?;
    table.finish()?;
    if !program_in_adapter(&program, &values(adapter)) {
        return Err(table.error(
            "provider",
            format!(
                "runs the program {}, which is not inside `adapter`; bay runs a provider's \
                 programs from the base, like a check's",
                show_value(&program)
            ),
        ));
    }
    let here = format!("{} on line {}", table.name(), table.line());
    if let Some(first) = seen.insert(name.clone(), here) {
        return Err(table.error(
            "name",
            format!(
                "repeats the input {}, which {first} already names",
                show_value(&name)
            ),
        ));
    }
    Ok(())
}

/// `[agent]` of the policy file. `require_actor_proof` needs agent keys, which this bay does
/// not have yet, so it is refused by name once the rest is valid.
fn parse_agent(table: &mut Table<'_, '_>, later: &mut NotYet) -> Result<AgentRules, TomlError> {
    table.check_keys(
        &["require_actor", "require_actor_proof", "max_live_changes"],
        &[],
    )?;
    let require_actor = table.bool("require_actor")?.unwrap_or(false);
    table.bool("require_actor_proof")?;
    later.key(table, "require_actor_proof");
    let max_live_changes = table.uint("max_live_changes", 1..=u64::MAX)?;
    table.finish()?;
    Ok(AgentRules {
        require_actor,
        max_live_changes,
    })
}

/// `[policy]` of the policy file: what a key registry signs, and whether evidence may be
/// reused without one.
fn parse_signing(table: &mut Table<'_, '_>) -> Result<(Signing, bool), TomlError> {
    table.check_keys(&["signing", "reuse_unsigned"], &[])?;
    let signing = match table.string("signing")?.as_deref() {
        None | Some("all") => Signing::All,
        Some("approvals") => Signing::Approvals,
        Some(other) => {
            return Err(table.error(
                "signing",
                format!(
                    "is {}; it must be \"all\" or \"approvals\"",
                    show_value(other)
                ),
            ));
        }
    };
    let reuse_unsigned = table.bool("reuse_unsigned")?.unwrap_or(false);
    table.finish()?;
    Ok((signing, reuse_unsigned))
}

fn non_empty_string(table: &mut Table<'_, '_>, key: &str) -> Result<String, TomlError> {
    let value = table.required_string(key)?;
    if value.is_empty() {
        return Err(table.error(key, "is empty; it must name something"));
    }
    Ok(value)
}

/// An optional array of strings that, when present, lists something.
fn non_empty_list(
    table: &mut Table<'_, '_>,
    key: &str,
    why: &str,
) -> Result<Option<Vec<Located<String>>>, TomlError> {
    match table.strings(key)? {
        Some(list) if list.is_empty() => Err(table.error(key, format!("is empty; {why}"))),
        list => Ok(list),
    }
}

/// An optional non-empty list of globs, each inside the repository, such as `when_paths`.
fn globs(table: &mut Table<'_, '_>, key: &str) -> Result<Option<Vec<Located<String>>>, TomlError> {
    let list = non_empty_list(table, key, "list at least one glob, or leave the key out")?;
    for entry in list.iter().flatten() {
        check_glob(table, key, entry)?;
    }
    Ok(list)
}

/// A path glob of the repository (`when_paths`, `[locks] paths`) stays inside it, as a path
/// does, and uses only the syntax of bay's glob dialect ([`crate::glob`]).
fn check_glob(table: &Table<'_, '_>, key: &str, entry: &Located<String>) -> Result<(), TomlError> {
    check_repo_path(table, key, entry)?;
    match crate::glob::path_problem(&entry.value) {
        Some(problem) => Err(table.error_at(
            key,
            entry.line,
            format!(
                "has the entry {}, which {problem}",
                show_value(&entry.value)
            ),
        )),
        None => Ok(()),
    }
}

/// An optional non-empty list of names, such as `producers`.
fn names(table: &mut Table<'_, '_>, key: &str) -> Result<Option<Vec<Located<String>>>, TomlError> {
    let list = non_empty_list(table, key, "list at least one, or leave the key out")?;
    if let Some(empty) = list.iter().flatten().find(|entry| entry.value.is_empty()) {
        return Err(table.error_at(key, empty.line, "has an empty entry; each must name one"));
    }
    Ok(list)
}

fn values(items: Vec<Located<String>>) -> Vec<String> {
    items.into_iter().map(|item| item.value).collect()
}

/// A path or glob of the repository (`adapter`, `paths`, `when_paths`, `[locks] paths`) is
/// relative to its top and stays inside it: bay reads it from the tree, and a path that left
/// the tree would name the machine instead.
fn check_repo_path(
    table: &Table<'_, '_>,
    key: &str,
    entry: &Located<String>,
) -> Result<(), TomlError> {
    let path = entry.value.as_str();
    match crate::paths::repo_path_problem(path) {
        Some(problem) => Err(table.error_at(
            key,
            entry.line,
            format!("has the entry {}, which {problem}", show_value(path)),
        )),
        None => Ok(()),
    }
}

/// A `path` entry becomes one part of `PATH`. A relative one would resolve against wherever
/// the check starts, and a `:` would smuggle in more directories than the policy lists.
fn check_path_dir(
    table: &Table<'_, '_>,
    key: &str,
    entry: &Located<String>,
) -> Result<(), TomlError> {
    let dir = entry.value.as_str();
    let problem = if !dir.starts_with('/') {
        Some("is not absolute; each directory of a PATH must start with `/`")
    } else if dir.contains(':') {
        Some("holds a `:`, which would split it into several PATH directories")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(table.error_at(
            key,
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

    #[test]
    fn agent_rules_hold_nothing_without_a_readable_policy() {
        assert!(Policy::agent_side(None).is_none());
        assert!(Policy::agent_side(Some("revision = \"x\"\n")).is_none());
        let rules = Policy::agent_side(Some(
            "revision = 1\nunchecked = true\n\n[agent]\nmax_live_changes = 2\n",
        ));
        assert_eq!(rules.map(|p| p.agent.max_live_changes), Some(Some(2)));
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

    /// The policy examples of the specification that hold a key this bay does not act on yet,
    /// each with that key (its first in the text). An approval check cannot stand alone, since
    /// every policy needs a check bay runs, so every example sits beside [`RUN_CHECK`].
    const SPEC_LATER_EXAMPLES: [(&str, &str); 6] = [
        (
            r#"[[check]]
id = "api"
environment = "linux-x86_64"
command = "scripts/bay-check api"
adapter = ["scripts/bay-check"]
expected_minimum = 50
when_paths = ["api/"]
footprint = true                   # the verdict reads only api/
"#,
            "footprint",
        ),
        (
            r#"[[check]]
id = "billing-approval"
environment = "people"
kind = "approval"                  # a person answers; bay runs nothing
when_paths = ["billing/"]          # the paths that need a yes
producers = ["alice"]              # optional: only these approvers count
"#,
            "kind",
        ),
        (
            r#"[[check]]
id = "billing-approval"
environment = "people"
kind = "approval"
when_paths = ["billing/"]
carry = false                      # ask again on every candidate
"#,
            "kind",
        ),
        (
            r#"[[check]]
id = "tests"
environment = "local"
command = "scripts/bay-check"
adapter = ["scripts/bay-check"]
expected_minimum = 1
waivable = true                    # an enrolled approver may waive it on one candidate
"#,
            "waivable",
        ),
        (
            r#"# .bay/policy.toml
[limits]
max_waiting_approvals = 5
"#,
            "max_waiting_approvals",
        ),
        (
            r#"[[input]]
name = "contract:api.orders"
provider = "scripts/contract-version api.orders"
adapter = ["scripts/contract-version"]
path = ["/usr/bin", "/bin"]
phase = "expand"                   # expand, migrate or contract
timeout_s = 30
"#,
            "input",
        ),
    ];

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
require_actor_proof = false
max_live_changes = 3

[policy]
signing = "approvals"
reuse_unsigned = true
"#;

    /// Every key and table this bay validates and then refuses. `kind` is refused only as
    /// `kind = "approval"`.
    fn later_keys() -> Vec<&'static str> {
        let mut keys: Vec<&str> = TOP_NOT_YET.iter().chain(&CHECK_NOT_YET).copied().collect();
        keys.extend(["kind", "max_waiting_approvals", "require_actor_proof"]);
        keys
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
    fn the_spec_example_is_refused_only_on_its_later_keys() {
        let error = not_yet(SPEC_EXAMPLE);
        assert_eq!(
            place(&error),
            (
                Some("max_waiting_approvals"),
                "[limits]",
                line_of(SPEC_EXAMPLE, "max_waiting_approvals =")
            )
        );
        assert_eq!(
            error.to_string(),
            format!(
                "`max_waiting_approvals` in [limits] on line {} {}",
                error.line,
                crate::toml_doc::NOT_YET
            )
        );
        let without = trim(SPEC_EXAMPLE, &["max_waiting_approvals"]);
        assert_eq!(accept(&without).locks, ["art/", "**/*.psd"]);
        accept(&trim(SPEC_EXAMPLE, &later_keys()));
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
            let trimmed = if key == "kind" {
                remove_refused(&text, &error)
            } else {
                trim(&text, &later_keys())
            };
            accept(&trimmed);
        }
    }

    #[test]
    fn every_key_validates_and_then_each_later_one_is_refused_in_text_order() {
        let mut text = EVERY_KEY.to_owned();
        let mut refused = Vec::new();
        loop {
            match Policy::parse(&text) {
                Ok(policy) => {
                    assert_eq!(policy.checks.len(), 2);
                    assert_eq!(policy.quarantine.len(), 1);
                    assert!(policy.reuse_unsigned, "[policy] reuse_unsigned is acted on");
                    assert_eq!(policy.signing, Signing::Approvals, "[policy] signing too");
                    assert_eq!(
                        policy.agent,
                        AgentRules {
                            require_actor: true,
                            max_live_changes: Some(3)
                        },
                        "[agent] is acted on but for require_actor_proof"
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
        assert_eq!(
            keys,
            [
                "footprint",
                "waivable",
                "kind",
                "max_waiting_approvals",
                "input",
                "require_actor_proof"
            ]
        );
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
            let error = not_yet(&with_minimum(&format!("{read_set}\nfootprint = true\n")));
            assert_eq!(place(&error), (Some("footprint"), "[[check]] #1", 10));
        }
        let error = not_yet(&with_minimum(
            "footprint = false\nmaterialize = \"changed\"\n",
        ));
        assert_eq!(error.key.as_deref(), Some("footprint"));
    }

    #[test]
    fn an_approval_check_needs_when_paths_is_never_post_and_runs_nothing() {
        let approval = |extra: &str| {
            beside(&format!(
                "[[check]]\nid = \"billing\"\nenvironment = \"people\"\nkind = \"approval\"\n{extra}"
            ))
        };
        let error = not_yet(&approval("when_paths = [\"**\"]\nstage = \"pre\"\n"));
        assert_eq!(place(&error), (Some("kind"), "[[check]] #2", 13));
        assert!(
            error.message.contains("approval checks are part of bay"),
            "{error}"
        );
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
        let error = not_yet(&with_minimum("waivable = true\n"));
        assert_eq!(place(&error), (Some("waivable"), "[[check]] #1", 9));
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
        let error = not_yet(&text);
        assert_eq!(
            place(&error),
            (Some("carry"), "[[check]] #2", 13),
            "the first in text order"
        );
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
        let good =
            "name = \"contract:api\"\nprovider = \"scripts/v api\"\nadapter = [\"scripts/v\"]\n";
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
        let every = include_str!("../../fuzz/seeds/policy/every-acted-on-key.toml");
        let policy = accept(every);
        assert_eq!((policy.checks.len(), policy.quarantine.len()), (2, 1));
        let later = include_str!("../../fuzz/seeds/policy/later-keys.toml");
        assert_eq!(not_yet(later).key.as_deref(), Some("footprint"));
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
}
