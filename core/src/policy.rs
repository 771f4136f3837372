//! `.bay/policy.toml`: the checks a change must pass before it merges.
//!
//! bay reads the policy from main, at a candidate's base, so a change never sets the rules it
//! is judged by. The parser is strict on purpose. A key it does not know is refused rather than
//! skipped: skipping it would quietly change what a merge must pass, and the person who wrote
//! it would believe it was enforced.
//!
//! One table the specification defines brings behaviour this bay does not have yet:
//! `[[input]]`. It is validated as fully as any other, so a wrong value gets its own error,
//! and then refused by name (see [`NotYet`]) once the rest of the file is valid.

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
    /// The approval checks (`kind = "approval"`), in the order the policy lists them: a
    /// person's signed yes answers each, and bay runs nothing for them. Left out of the digest
    /// when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<ApprovalCheck>,
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
    /// `require_actor_proof`: `bay merge` refuses `ACTOR_UNPROVEN` while the agent key cannot
    /// show which agent signs (`actor::unproven`). Off by default.
    #[serde(default, skip_serializing_if = "is_false")]
    pub require_actor_proof: bool,
}

impl AgentRules {
    fn is_unset(&self) -> bool {
        *self == AgentRules::default()
    }

    /// The `[agent]` rules of main's policy text ([`Policy::agent_side`]): none without a
    /// policy that parses. `bay merge` reads them after its fetch; `bay doctor` from main as
    /// this clone last fetched it, so both hold a machine to the same rules.
    pub fn at_main(text: Option<&str>) -> AgentRules {
        Policy::agent_side(text)
            .map(|policy| policy.agent)
            .unwrap_or_default()
    }
}

/// One `[[check]]` with `kind = "approval"`: an enrolled approver's signed record answers it,
/// for a candidate whose own diff touches `when_paths`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalCheck {
    pub id: String,
    pub environment: String,
    /// Globs: a yes is owed only when the candidate changes a matching path. Never empty.
    pub when_paths: Vec<String>,
    /// The only approvers whose records answer it; `None` is any enrolled approver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub producers: Option<Vec<String>>,
    /// `carry = false`: ask on every candidate. Left out (or `true`), a yes holds for later
    /// candidates of the same change while the files under `when_paths` stay the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carry: Option<bool>,
}

impl ApprovalCheck {
    /// Whether `approver` may answer this check.
    pub fn allows(&self, approver: &str) -> bool {
        self.producers
            .as_ref()
            .is_none_or(|names| names.iter().any(|name| name == approver))
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
    /// `waivable = true`: an enrolled approver may waive a failure of it on one candidate,
    /// never as a pass.
    #[serde(default, skip_serializing_if = "is_false")]
    pub waivable: bool,
    /// `footprint = true`: the verdict reads only the check's `paths`, else its `when_paths`,
    /// so its pass may carry to a later candidate whose read set is the same
    /// (`check::footprint`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub footprint: bool,
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
    /// `max_waiting_approvals`: the most live changes that may wait for an approval at once;
    /// `bay merge` refuses `WIP_LIMIT` for a change that needs one more. Left out of the
    /// digest when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waiting_approvals: Option<u64>,
}

impl Limits {
    /// Whether no cap is set.
    pub fn is_unset(&self) -> bool {
        *self == Limits::default()
    }

    /// Whether no cap on the size of one change is set (`max_waiting_approvals` caps the
    /// queue of waits, not a change).
    pub fn sizes_unset(&self) -> bool {
        self.max_file_mib.is_none() && self.max_files.is_none() && self.max_added_lines.is_none()
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
    /// `None` for an approval check, which `approval` holds.
    spec: Option<CheckSpec>,
    approval: Option<ApprovalCheck>,
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
    // make the policy valid. An approval check runs nothing, so it goes with either.
    let first_run = tables
        .iter()
        .find(|table| table.peek_string("kind") != Some("approval"));
    if let (true, Some(first)) = (unchecked, first_run) {
        return Err(root.error(
            "unchecked",
            format!(
                "is true, but {} on line {} names a check bay runs; a policy either merges \
                 with no run checks or lists the checks a merge must pass, never both (an \
                 approval check goes with either)",
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
        let check = parse_check(table)?;
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
        Some(mut table) => parse_agent(&mut table)?,
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
        approvals: parsed
            .iter()
            .filter_map(|check| check.approval.clone())
            .collect(),
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
    // The quarantine table that sets each such check aside: none for a check that stands.
    let set_aside: Option<Vec<(&CheckSpec, &Table<'_, '_>)>> = expecting
        .iter()
        .map(|spec| {
            quarantine
                .iter()
                .zip(quarantine_tables)
                .find(|(q, _)| q.id == spec.id && q.environment == spec.environment)
                .map(|(_, table)| (*spec, table))
        })
        .collect();
    let Some(&(last, table)) = set_aside.as_deref().and_then(<[_]>::last) else {
        return Ok(());
    };
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

fn parse_check(table: &mut Table<'_, '_>) -> Result<Parsed, TomlError> {
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
    let (spec, approval) = if approval {
        let approval = parse_approval(table, id.clone(), environment.clone(), stage)?;
        (None, Some(approval))
    } else {
        let spec = parse_run(table, id.clone(), environment.clone(), stage)?;
        (Some(spec), None)
    };
    Ok(Parsed {
        spec,
        approval,
        id,
        environment,
        stage,
    })
}

/// Reads an approval check: `when_paths` required, never post, no run setting.
fn parse_approval(
    table: &mut Table<'_, '_>,
    id: String,
    environment: String,
    stage: Stage,
) -> Result<ApprovalCheck, TomlError> {
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
    let Some(when_paths) = globs(table, "when_paths")? else {
        return Err(table.error(
            "when_paths",
            format!(
                "is required on an approval check (kind = \"approval\" on line {kind_line}): it \
                 names the paths that need a yes; use [\"**\"] to ask on every change"
            ),
        ));
    };
    let producers = names(table, "producers")?;
    let carry = table.bool("carry")?;
    // An approval carries by its own rule (`carry`); `footprint` is read, and changes nothing.
    table.bool("footprint")?;
    table.finish()?;
    Ok(ApprovalCheck {
        id,
        environment,
        when_paths: values(when_paths),
        producers: producers.map(values),
        carry,
    })
}

fn parse_run(
    table: &mut Table<'_, '_>,
    id: String,
    environment: String,
    stage: Stage,
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
    let footprint = table.bool("footprint")?.unwrap_or(false);
    let waivable = table.bool("waivable")?.unwrap_or(false);
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
    if footprint {
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
        waivable,
        footprint,
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
    let max_waiting_approvals = table.uint("max_waiting_approvals", 1..=u64::MAX)?;
    table.finish()?;
    let _ = later;
    let [max_file_mib, max_files, max_added_lines] = caps;
    Ok(Limits {
        max_waiting_approvals,
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

/// `[agent]` of the policy file.
fn parse_agent(table: &mut Table<'_, '_>) -> Result<AgentRules, TomlError> {
    table.check_keys(
        &["require_actor", "require_actor_proof", "max_live_changes"],
        &[],
    )?;
    let require_actor = table.bool("require_actor")?.unwrap_or(false);
    let require_actor_proof = table.bool("require_actor_proof")?.unwrap_or(false);
    let max_live_changes = table.uint("max_live_changes", 1..=u64::MAX)?;
    table.finish()?;
    Ok(AgentRules {
        require_actor,
        max_live_changes,
        require_actor_proof,
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
mod tests;
