//! Reason codes: the fixed names of every refusal bay makes, with what each one lets you do.
//!
//! A refusal is an outcome, not an error: the result carries one code from this table, and the
//! table alone decides the result's `decision`, `allowed`, `retry_when` and `next_step`. Keeping
//! those facts here, once, means `bay help --json`, the plain sentence and every command agree,
//! and an agent can act on the code without parsing prose.
//!
//! `allowed` follows one rule. An empty list means bay resolves the refusal on its own and there
//! is nothing to do (its `next_step` starts "Nothing to do"). `wait` means the refusal clears
//! when something outside the change happens: a queue turn, a worker, a person. `read`,
//! `refresh` and `repair` are steps the agent takes itself. Every `blocked` code lists at least
//! one step, because a blocked change never moves on by itself.
//!
//! `retry_when` is a snake_case condition; `never` means no retry can succeed.

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::result::Decision;

/// One thing a refused agent can still do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "lowercase")]
pub enum Allowed {
    /// Read what `detail` names.
    Read,
    /// Bring the change up to date with `bay start <change>`.
    Refresh,
    /// Edit the change in its view, then `bay merge` again.
    Repair,
    /// Let time pass: something outside the change has to happen first.
    Wait,
}

/// A reason code bay emits. Serialized as the exact code, such as `MERGE_CONFLICT`.
///
/// The declaration order is the order of [`ReasonCode::ALL`] and of the table behind
/// [`ReasonCode::info`]; a test holds the three together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReasonCode {
    MergeConflict,
    MainMoved,
    MergeRetryExhausted,
    MergeOutcomeUnknown,
    Queued,
    PolicyMissing,
    PolicyInvalid,
    CheckFailed,
    CheckUnknown,
    CheckFlaky,
    CheckUnavailable,
    ChangeAlreadyMerged,
    ChangeSuperseded,
    AbandonRefused,
    ConfigMissing,
    ToolBelowFloor,
    WorkspaceIncomplete,
    SandboxAbsent,
    CheckEnvUnset,
    DiskLow,
    QueueDeadlineExceeded,
    ChangeTooLarge,
    ChangeNotMerged,
    MainHeld,
    DependencyPending,
    DependencyAbandoned,
    PathsUndeclared,
    MainRed,
    ShellDenied,
    HookInputInvalid,
    PathHeld,
    ToolAbsent,
    RemoteUnreachable,
    HooksMissing,
    SkillMismatch,
    ActorUnnamed,
    WipLimit,
    ChangeHeld,
    RegistryUnreadable,
    RegistryChanged,
    RunnerKeyMissing,
    KeyExposed,
    ActorUnproven,
    ApprovalPending,
}

/// What one code means and what a result carrying it lets you do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReasonInfo {
    pub code: ReasonCode,
    /// What happened, for the reader of `bay help --json`.
    pub meaning: &'static str,
    /// The decision of every result that carries this code.
    pub decision: Decision,
    /// What the agent can still do; empty when bay acts on its own.
    pub allowed: &'static [Allowed],
    /// The condition under which a retry can succeed.
    pub retry_when: &'static str,
    /// The one step to take next.
    pub next_step: &'static str,
    /// bay retries it by itself, within a bound.
    pub transient: bool,
}

impl ReasonCode {
    /// Every code, in declaration order.
    pub const ALL: [ReasonCode; 44] = [
        ReasonCode::MergeConflict,
        ReasonCode::MainMoved,
        ReasonCode::MergeRetryExhausted,
        ReasonCode::MergeOutcomeUnknown,
        ReasonCode::Queued,
        ReasonCode::PolicyMissing,
        ReasonCode::PolicyInvalid,
        ReasonCode::CheckFailed,
        ReasonCode::CheckUnknown,
        ReasonCode::CheckFlaky,
        ReasonCode::CheckUnavailable,
        ReasonCode::ChangeAlreadyMerged,
        ReasonCode::ChangeSuperseded,
        ReasonCode::AbandonRefused,
        ReasonCode::ConfigMissing,
        ReasonCode::ToolBelowFloor,
        ReasonCode::WorkspaceIncomplete,
        ReasonCode::SandboxAbsent,
        ReasonCode::CheckEnvUnset,
        ReasonCode::DiskLow,
        ReasonCode::QueueDeadlineExceeded,
        ReasonCode::ChangeTooLarge,
        ReasonCode::ChangeNotMerged,
        ReasonCode::MainHeld,
        ReasonCode::DependencyPending,
        ReasonCode::DependencyAbandoned,
        ReasonCode::PathsUndeclared,
        ReasonCode::MainRed,
        ReasonCode::ShellDenied,
        ReasonCode::HookInputInvalid,
        ReasonCode::PathHeld,
        ReasonCode::ToolAbsent,
        ReasonCode::RemoteUnreachable,
        ReasonCode::HooksMissing,
        ReasonCode::SkillMismatch,
        ReasonCode::ActorUnnamed,
        ReasonCode::WipLimit,
        ReasonCode::ChangeHeld,
        ReasonCode::RegistryUnreadable,
        ReasonCode::RegistryChanged,
        ReasonCode::RunnerKeyMissing,
        ReasonCode::KeyExposed,
        ReasonCode::ActorUnproven,
        ReasonCode::ApprovalPending,
    ];

    /// The code as it appears in a result.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReasonCode::MergeConflict => "MERGE_CONFLICT",
            ReasonCode::MainMoved => "MAIN_MOVED",
            ReasonCode::MergeRetryExhausted => "MERGE_RETRY_EXHAUSTED",
            ReasonCode::MergeOutcomeUnknown => "MERGE_OUTCOME_UNKNOWN",
            ReasonCode::Queued => "QUEUED",
            ReasonCode::PolicyMissing => "POLICY_MISSING",
            ReasonCode::PolicyInvalid => "POLICY_INVALID",
            ReasonCode::CheckFailed => "CHECK_FAILED",
            ReasonCode::CheckUnknown => "CHECK_UNKNOWN",
            ReasonCode::CheckFlaky => "CHECK_FLAKY",
            ReasonCode::CheckUnavailable => "CHECK_UNAVAILABLE",
            ReasonCode::ChangeAlreadyMerged => "CHANGE_ALREADY_MERGED",
            ReasonCode::ChangeSuperseded => "CHANGE_SUPERSEDED",
            ReasonCode::AbandonRefused => "ABANDON_REFUSED",
            ReasonCode::ConfigMissing => "CONFIG_MISSING",
            ReasonCode::ToolBelowFloor => "TOOL_BELOW_FLOOR",
            ReasonCode::WorkspaceIncomplete => "WORKSPACE_INCOMPLETE",
            ReasonCode::SandboxAbsent => "SANDBOX_ABSENT",
            ReasonCode::CheckEnvUnset => "CHECK_ENV_UNSET",
            ReasonCode::DiskLow => "DISK_LOW",
            ReasonCode::QueueDeadlineExceeded => "QUEUE_DEADLINE_EXCEEDED",
            ReasonCode::ChangeTooLarge => "CHANGE_TOO_LARGE",
            ReasonCode::ChangeNotMerged => "CHANGE_NOT_MERGED",
            ReasonCode::MainHeld => "MAIN_HELD",
            ReasonCode::DependencyPending => "DEPENDENCY_PENDING",
            ReasonCode::DependencyAbandoned => "DEPENDENCY_ABANDONED",
            ReasonCode::PathsUndeclared => "PATHS_UNDECLARED",
            ReasonCode::MainRed => "MAIN_RED",
            ReasonCode::ShellDenied => "SHELL_DENIED",
            ReasonCode::HookInputInvalid => "HOOK_INPUT_INVALID",
            ReasonCode::PathHeld => "PATH_HELD",
            ReasonCode::ToolAbsent => "TOOL_ABSENT",
            ReasonCode::RemoteUnreachable => "REMOTE_UNREACHABLE",
            ReasonCode::HooksMissing => "HOOKS_MISSING",
            ReasonCode::SkillMismatch => "SKILL_MISMATCH",
            ReasonCode::ActorUnnamed => "ACTOR_UNNAMED",
            ReasonCode::WipLimit => "WIP_LIMIT",
            ReasonCode::ChangeHeld => "CHANGE_HELD",
            ReasonCode::RegistryUnreadable => "REGISTRY_UNREADABLE",
            ReasonCode::RegistryChanged => "REGISTRY_CHANGED",
            ReasonCode::RunnerKeyMissing => "RUNNER_KEY_MISSING",
            ReasonCode::KeyExposed => "KEY_EXPOSED",
            ReasonCode::ActorUnproven => "ACTOR_UNPROVEN",
            ReasonCode::ApprovalPending => "APPROVAL_PENDING",
        }
    }

    /// This code's row of the table.
    pub fn info(self) -> &'static ReasonInfo {
        // The enum has no explicit discriminants, so `self as usize` is its declaration index,
        // which is also its row: `table_rows_follow_the_declaration_order` holds them together.
        &TABLE[self as usize]
    }

    /// The decision of a result that carries this code.
    pub fn decision(self) -> Decision {
        self.info().decision
    }

    /// bay retries it by itself, within a bound.
    pub fn is_transient(self) -> bool {
        self.info().transient
    }
}

impl FromStr for ReasonCode {
    type Err = String;

    /// Parses the exact code; `merge_conflict` or an unknown code is refused, since a code is a
    /// fixed name, not a phrase.
    fn from_str(text: &str) -> Result<Self, String> {
        ReasonCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
            .ok_or_else(|| format!("not a reason code bay emits: {text:?}"))
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

use Allowed::{Read, Refresh, Repair, Wait};

/// One row per code, in declaration order. The meanings and steps are bay's own words.
static TABLE: [ReasonInfo; ReasonCode::ALL.len()] = [
    ReasonInfo {
        code: ReasonCode::MergeConflict,
        meaning: "The draft and main changed the same lines, so the draft cannot be laid onto \
                  main; `detail.paths` lists the files. While the change waits in the queue, \
                  `bay status` can show this early under `operation.conflict`. A merge Git \
                  cannot compute at all is a `failed` fault, not this code.",
        decision: Decision::Blocked,
        allowed: &[Read, Refresh, Repair],
        retry_when: "conflicts_resolved",
        next_step: "Run `bay start <change>` to bring in main, settle the conflicting paths in \
                    the view, then `bay merge` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::MainMoved,
        meaning: "Main moved between building the candidate and pushing it, so the push was \
                  turned down.",
        decision: Decision::Queued,
        allowed: &[],
        retry_when: "main_settles",
        next_step: "Nothing to do: bay tries once more, then puts the change in the queue; \
                    `bay merge --wait` reports how it ends.",
        transient: true,
    },
    ReasonInfo {
        code: ReasonCode::MergeRetryExhausted,
        meaning: "The push to main kept failing for causes that are not the change's fault (the \
                  host's hook ran out of time, a ref lock was held on the remote, or a deadline \
                  release came mid-push) until the four spare tries were used up.",
        decision: Decision::Failed,
        allowed: &[Read],
        retry_when: "cause_fixed",
        next_step: "Read the cause in `detail` and tell the user; once it is fixed, run \
                    `bay merge` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::MergeOutcomeUnknown,
        meaning: "The push to main failed and main could not be read afterwards, so nobody can \
                  yet say whether the merge happened.",
        decision: Decision::Failed,
        allowed: &[],
        retry_when: "runner_reads_main",
        next_step: "Nothing to do yet: bay reads main again by itself. Never report the change \
                    as merged; `bay status <change>` shows how it ended.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::Queued,
        meaning: "The operation is accepted and waits for its turn, with `waiting_for` \
                  `queue`; `detail` gives its `position`, its `seq` and the `head` operation.",
        decision: Decision::Queued,
        allowed: &[Wait],
        retry_when: "reaches_queue_head",
        next_step: "Go on with other work: the change is checked and merged when its turn \
                    comes; `bay merge --wait` or `bay status <change>` reports the outcome.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::PolicyMissing,
        meaning: "Main at the base has no `.bay/policy.toml`, so there is no list of the checks \
                  a merge must pass. A policy that exists but cannot be read is a `failed` \
                  fault naming the file, not this code.",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "policy_added_on_main",
        next_step: "Tell the user that main has no `.bay/policy.toml`, so nothing can merge; \
                    write one only if they ask you to.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::PolicyInvalid,
        meaning: "The policy at the base, or the candidate's own policy, breaks one of its \
                  rules, such as having no required check that expects any units; `detail` \
                  says which, and names an unknown key with its table and line. A broken policy \
                  on main stops every merge, its own repair included, unless the registry key \
                  signs that repair.",
        decision: Decision::Blocked,
        allowed: &[Read, Repair, Wait],
        retry_when: "policy_fixed",
        next_step: "Tell the user that `.bay/policy.toml` is invalid, as `detail` says; a repair \
                    of main's policy merges once the registry key signs it, and a broken policy \
                    in the change is repaired in the view.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::CheckFailed,
        meaning: "A required check failed on the candidate; `detail.checks` names each failed \
                  check with the reasons its units gave. Under `baseline = \"base\"` only \
                  failures the change brought in count, and `baseline_failures` lists the \
                  older ones.",
        decision: Decision::Blocked,
        allowed: &[Read, Refresh, Repair],
        retry_when: "draft_changed",
        next_step: "Read the failed check in `detail`, fix the change in its view, then \
                    `bay merge` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::CheckUnknown,
        meaning: "A check gave no verdict: it crashed, ran out of time, collected no units, or \
                  sent a unit reason over 2 KB. An unknown result is never a pass.",
        decision: Decision::Blocked,
        allowed: &[Read, Repair, Wait],
        retry_when: "check_gives_verdict",
        next_step: "Wait for a verdict with `bay merge --wait` and never count this as a pass; \
                    if the check cannot answer for this change, repair the change.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::CheckFlaky,
        meaning: "One tree has both a `pass` and a `product_failure` for one check, and its \
                  `[[check]]` does not set `allow_flaky`. `detail.checks` lists every run.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "check_fixed",
        next_step: "Tell the user the check gives two answers for one tree; once it is fixed, \
                    `bay merge` again. Never quarantine it yourself.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::CheckUnavailable,
        meaning: "No machine serves the environment the check needs, or the check said no \
                  worker could run it. The wait never counts against a queue deadline.",
        decision: Decision::Queued,
        allowed: &[Wait],
        retry_when: "worker_serves_environment",
        next_step: "Wait: bay tries again once a machine can run the check. If `bay status` \
                    warns `no_live_runner`, tell the user.",
        transient: true,
    },
    ReasonInfo {
        code: ReasonCode::ChangeAlreadyMerged,
        meaning: "This change is already on main, with a different revision from the one sent \
                  now.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "never",
        next_step: "Do not retry: the change is already merged. For further edits, \
                    `bay start <intent>` opens the next change.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ChangeSuperseded,
        meaning: "Another change holds or delivered this intent: the change was taken over, \
                  `bay start <change>` named an ended change whose intent moved on \
                  (`detail.superseded_by`), or another process on this machine ended the \
                  operation during `bay merge --wait` (`detail.merged` is `false`).",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "successor_ended",
        next_step: "Read which change took over in `detail`; go on in that change, or run \
                    `bay start` again after it merges or is abandoned.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::AbandonRefused,
        meaning: "An actor that does not hold the change asked to abandon it.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "holder_requests",
        next_step: "Only the actor holding the change can abandon it: ask that actor, or leave \
                    the change alone.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ConfigMissing,
        meaning: "bay cannot tell which branch is main, or main has no `.bay/config.toml`; \
                  `detail` says where it looked.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "config_on_main",
        next_step: "Tell the user this repository is not set up for bay; commit \
                    `.bay/config.toml` to main only if they ask.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ToolBelowFloor,
        meaning: "A tool is older than this bay needs: `detail.tool` names it (`git`, `claude` \
                  or `codex`) and `detail.floor` the oldest version that works. Git's floor \
                  depends on the machine's role.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "tool_updated",
        next_step: "Update the tool in `detail.tool` to `detail.floor` or newer, or remove its \
                    `[agent]` product, then run the command again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::WorkspaceIncomplete,
        meaning: "The change's view is not `ready`: a step that builds or updates it stopped \
                  partway.",
        decision: Decision::Blocked,
        allowed: &[Refresh],
        retry_when: "view_ready",
        next_step: "Run `bay start <change>` to finish the interrupted step, then carry on.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::SandboxAbsent,
        meaning: "This machine runs checks but has no check sandbox to run them in.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "sandbox_installed",
        next_step: "Tell the user to install the sandbox `detail` names, or to run checks \
                    without one on this machine with `git config --global \
                    bay.executorSandbox none`.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::CheckEnvUnset,
        meaning: "A check in the policy needs an environment variable this machine does not \
                  set.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "env_set",
        next_step: "Tell the user to set the variables `detail` names in the runner's \
                    environment, then start `bay runner run` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::DiskLow,
        meaning: "This machine has less free disk space than its `bay.minFreeMiB` floor, so \
                  `bay start` made no change and no view. `detail` names `free_mib`, \
                  `floor_mib` and the `path`.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "disk_space_freed",
        next_step: "Tell the user to free disk space on this machine, or lower \
                    `bay.minFreeMiB`, then run the command again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::QueueDeadlineExceeded,
        meaning: "The progress deadline of the head (`[runner] execution_budget_s`, 30 minutes \
                  when unset, plus `publish_window_s`) released this operation three times. A \
                  wait for a machine that can run a check never counts.",
        decision: Decision::Blocked,
        allowed: &[Read, Repair],
        retry_when: "change_shrunk_or_budget_raised",
        next_step: "Read `detail`, shrink or split the change in the view, then `bay merge` \
                    again; or ask the user to raise the budget.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ChangeTooLarge,
        meaning: "The change is over a `[limits]` cap of the policy at its base: a file it adds \
                  or changes is over `max_file_mib`, it touches more than `max_files` files, or \
                  it adds more than `max_added_lines` lines (a binary file adds none). \
                  `detail.exceeded` names each cap, its `max`, the `value` and up to five of \
                  the largest `paths`. `bay merge` refuses it before it submits anything, and \
                  the runner at the candidate build, before any check runs.",
        decision: Decision::Blocked,
        allowed: &[Read, Repair],
        retry_when: "change_within_limits",
        next_step: "Keep large files elsewhere or split the change, then `bay merge` again; \
                    never raise the limits to get it through.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ChangeNotMerged,
        meaning: "`bay undo` or `bay start --fixes` named a change that is not on main, or \
                  `bay status` found that main no longer holds a change's merge (main was \
                  moved back past it).",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "named_change_merged",
        next_step: "Wait until the named change merges (`bay status <change>` shows its state), \
                    then run the command again; a change whose merge main no longer holds \
                    merges again only as a new change.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::MainHeld,
        meaning: "Main is held, by a `[[hold]]` of main in its `.bay/config.toml`, by the hold \
                  plugin (it answers held, or nothing bay can read), or by a config bay cannot \
                  read at main's tip, and this change carries neither `Fixes:` nor `Reverts:`. The operation stays queued without holding up the changes behind \
                  it; `detail.hold` names the hold.",
        decision: Decision::Queued,
        allowed: &[Wait],
        retry_when: "hold_cleared",
        next_step: "Wait: the change stays queued and merges once the hold clears; `bay status` \
                    shows the hold. Only fixes and undos merge now.",
        transient: true,
    },
    ReasonInfo {
        code: ReasonCode::DependencyPending,
        meaning: "The change was started with `--after`, and a change it names has not merged \
                  yet. The operation stays queued without holding up the changes behind it; \
                  `detail.pending` names each one.",
        decision: Decision::Queued,
        allowed: &[Wait],
        retry_when: "dependencies_merged",
        next_step: "Wait: the change merges after each change it names with `--after` merges; \
                    `bay status <change>` shows them.",
        transient: true,
    },
    ReasonInfo {
        code: ReasonCode::DependencyAbandoned,
        meaning: "A change named by `--after` was abandoned or superseded, so this change can \
                  never merge as it is; `detail.ended` names it. One that ends `no_effect` \
                  counts as merged.",
        decision: Decision::Blocked,
        allowed: &[Read, Repair],
        retry_when: "never",
        next_step: "Run `bay abandon`, then `bay start <intent> --new` without that `--after`; \
                    or restart the dropped change.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::PathsUndeclared,
        meaning: "The work to take in (a branch named by `bay start --from`, or the edits of \
                  `bay save` into an open change) changes paths the change does not declare. \
                  Nothing was created or written; `detail.uncovered` names those paths.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "paths_declared",
        next_step: "Run `bay start <intent> --from <branch>` again with `--paths` covering every \
                    path in `detail.uncovered`; for a save, `bay abandon` the open change first.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::MainRed,
        meaning: "A post check failed on main, on paths this change touches. `detail.red` names \
                  each red check and the merge that owns it, and `detail.owners` those changes. \
                  A fix, an undo or a supersede of the owner is never refused this.",
        decision: Decision::Blocked,
        allowed: &[Read, Repair, Wait],
        retry_when: "main_green",
        next_step: "Wait for the owner's fix to the red paths and then `bay merge` again, or \
                    fix it yourself with `bay start <intent> --fixes <owner>`.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ShellDenied,
        meaning: "The `tool.before` hook denied a shell command on bay's deny list, such as \
                  `git reset --hard`, a force push or a push of main. The agent reads the \
                  shape it matched, why, and the next step on stderr; the session's record \
                  names the shape and its wrapper, never the command's text.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "never",
        next_step: "Do not run that command again; it is never allowed. Ask the user if the \
                    work truly needs it.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::HookInputInvalid,
        meaning: "The `tool.before` hook could not read the agent product's payload, so it \
                  denied the tool call. Or a tool call reached `bay hook` under a moment name \
                  bay does not know, or a `tool.before` call under another moment's name. \
                  `detail.why` says which, and `detail.misnamed` is `true` for a wrong name.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "hooks_reinstalled_or_bay_updated",
        next_step: "Read `detail.why`: a hook entry under a wrong name needs `bay install`; a \
                    payload this bay cannot read needs a newer bay.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::PathHeld,
        meaning: "Another live session in this same tree holds the path you tried to write: \
                  it wrote that path and has not ended. Other views never meet that hold. \
                  Or another session, on any machine, holds the lock of a path `[locks] \
                  paths` names (`detail.lock`). `detail.holder` names the holder's session \
                  and actor, and `detail.age_s` how long it has held it.",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "holder_ended",
        next_step: "Another session holds the path: wait until it stops, or edit other paths.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ToolAbsent,
        meaning: "A tool bay needs here is not installed: `detail.tool` names it (`git`, or the \
                  agent product `[agent] product` names, `claude` or `codex`). From `bay \
                  doctor`.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "tool_installed",
        next_step: "Tell the user to install the tool `detail.tool` names, or to remove its \
                    `[agent] product`, then run `bay doctor` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::RemoteUnreachable,
        meaning: "The remote did not answer this machine, or no remote is set. From `bay \
                  doctor`, whose `remote` row says what Git said; or from `bay hook`, which \
                  cannot tell who holds the lock of a path `[locks] paths` names without it \
                  (`detail.lock`), and lets other edits through.",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "remote_answers",
        next_step: "Check the network and this machine's access to the remote, then run \
                    `bay doctor` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::HooksMissing,
        meaning: "Main names an agent product, but its hooks do not run here: bay's entries are \
                  missing or out of date in the settings file (on main or in this clone), carry \
                  a moment name bay no longer knows (`old_names`), or a settings file turns \
                  hooks off (`disableAllHooks`, `allowManagedHooksOnly`). From `bay doctor`.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "hooks_installed",
        next_step: "Do what the `hooks` row's `fix` says: `bay install`, then merge the \
                    settings file into main, or remove the setting that turns hooks off.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::SkillMismatch,
        meaning: "The bay skill is missing from a Claude config directory, or does not match \
                  this bay's; the `skill` row of `bay doctor` lists each directory.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "skill_installed",
        next_step: "Run `bay install` to copy this version's skill, then `bay doctor` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ActorUnnamed,
        meaning: "Main's policy sets `[agent] require_actor = true`, and the actor's name came \
                  from a default (`actor_source` is not `env`), not from `BAY_ACTOR`.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "actor_named",
        next_step: "Set `BAY_ACTOR` to your actor name, then run the command again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::WipLimit,
        meaning: "From `bay start`: main's policy sets `[agent] max_live_changes`, and the \
                  actor already holds that many live changes among the change records this \
                  clone holds; `detail.live_changes` names them and `detail.limit` the cap. \
                  Picking up one's own change is never refused this. From `bay merge`: the \
                  policy sets `[limits] max_waiting_approvals`, this change needs an \
                  approval, and that many live changes already wait for one; \
                  `detail.review` names how many wait, the `max`, the `oldest` and its \
                  `age_s`.",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "live_change_ended",
        next_step: "Merge or abandon one of the changes `detail` names (`live_changes`, or \
                    `review.oldest`), then run the command again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ChangeHeld,
        meaning: "Another live session with your actor name works on this change, in its \
                  view on this clone or on another machine as that machine's live summary \
                  says (as the last `bay status` fetched it), so `bay start` does not adopt \
                  the change under it: a session is live until its `session.end`, or until \
                  its last hook event is `[runner] takeover_s` old. `detail.holder` names \
                  that session, its actor, machine and view (`null` on another machine); \
                  `detail.idle_s` says how long it has been quiet, and \
                  `detail.retry_after_s` when it stops holding if it stays quiet.",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "holder_ended",
        next_step: "Another live session holds this change: wait until it ends, or work on \
                    another change. `detail.holder` names the holder; `bay status --fleet` shows \
                    every session.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::RegistryUnreadable,
        meaning: "The key registry (`refs/bay/registry`) breaks one of its rules, such as a \
                  removed key enrolled again, a line of another shape, a file of no known \
                  class or a version not signed by a `registry` key of the one before, so bay \
                  cannot judge anything signed. `detail` names the commit, file and line, and \
                  why.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "registry_repaired",
        next_step: "Tell the user the key registry breaks a rule (`detail`); a registry key \
                    repairs it, for a removed key enrolled again with `bay enrol --remove`.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::RegistryChanged,
        meaning: "The key of the merging runner was revoked after it signed the candidate, so \
                  the merge waits for a runner whose key is valid to sign it again.",
        decision: Decision::Queued,
        allowed: &[],
        retry_when: "valid_runner_signed",
        next_step: "Nothing to do: a runner with a valid key signs it again; `bay status \
                    <change>` shows the outcome.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::RunnerKeyMissing,
        meaning: "The remote holds a key registry that signs everything, and this runner's \
                  `executor` key (`bay.executorKey`) or `producer` key (`bay.producerKey`) \
                  is not set, cannot be read, or is not enrolled (the producer key under the \
                  runner's name); an unreadable registry also returns it. The runner claims \
                  nothing. `detail.keys` names each key and what is wrong with it.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "runner_keys_enrolled",
        next_step: "Tell the user to set and enrol the runner's `executor` and `producer` \
                    keys, then run `bay doctor --role executor` again.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::KeyExposed,
        meaning: "A signing key file, or a token beside it, is readable by the account that \
                  runs agent sessions, so an agent could sign as the key's holder. `detail` \
                  names the key.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "key_moved",
        next_step: "Tell the user to move the key `detail` names onto hardware, or out of the \
                    account agent sessions run as.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ActorUnproven,
        meaning: "Main's policy sets `[agent] require_actor_proof = true`, and the agent key \
                  (`bay.agentKey`) cannot show which agent signs: several actors share this \
                  OS account and it can read their file key (`actor_proof` is `account`), or \
                  bay cannot judge the key here (`unjudged`: a file key off Unix, or no file \
                  where the setting points). `bay merge` refuses before it signs anything. \
                  `detail` names `actor_proof`, the `actors` and the key.",
        decision: Decision::Blocked,
        allowed: &[Read],
        retry_when: "actor_provable",
        next_step: "Tell the user the policy needs proof of the actor: a hardware agent key, \
                    or one OS account per actor.",
        transient: false,
    },
    ReasonInfo {
        code: ReasonCode::ApprovalPending,
        meaning: "Every other check passed, and an approval check on the paths this change \
                  touches has no counted yes yet. `detail.approval` names the candidate \
                  `commit` and `tree`, each check owed with the `approvers` who may answer it, \
                  and `approve`, the command an approver runs; without a key registry its \
                  `why` says that no approval can count. `detail.lands_by` says who merges it \
                  once approved.",
        decision: Decision::Blocked,
        allowed: &[Read, Wait],
        retry_when: "approval_recorded",
        next_step: "Tell the user who can approve (`detail.approval`); the approver runs `bay \
                    approve <change>`. Then the runner merges it, or `bay merge --wait`.",
        transient: false,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The compiler keeps this match exhaustive, so a new variant cannot be added without an
    /// index here; the test below then fails until `ALL` and the table hold it at that index.
    fn declared_index(code: ReasonCode) -> usize {
        match code {
            ReasonCode::MergeConflict => 0,
            ReasonCode::MainMoved => 1,
            ReasonCode::MergeRetryExhausted => 2,
            ReasonCode::MergeOutcomeUnknown => 3,
            ReasonCode::Queued => 4,
            ReasonCode::PolicyMissing => 5,
            ReasonCode::PolicyInvalid => 6,
            ReasonCode::CheckFailed => 7,
            ReasonCode::CheckUnknown => 8,
            ReasonCode::CheckFlaky => 9,
            ReasonCode::CheckUnavailable => 10,
            ReasonCode::ChangeAlreadyMerged => 11,
            ReasonCode::ChangeSuperseded => 12,
            ReasonCode::AbandonRefused => 13,
            ReasonCode::ConfigMissing => 14,
            ReasonCode::ToolBelowFloor => 15,
            ReasonCode::WorkspaceIncomplete => 16,
            ReasonCode::SandboxAbsent => 17,
            ReasonCode::CheckEnvUnset => 18,
            ReasonCode::DiskLow => 19,
            ReasonCode::QueueDeadlineExceeded => 20,
            ReasonCode::ChangeTooLarge => 21,
            ReasonCode::ChangeNotMerged => 22,
            ReasonCode::MainHeld => 23,
            ReasonCode::DependencyPending => 24,
            ReasonCode::DependencyAbandoned => 25,
            ReasonCode::PathsUndeclared => 26,
            ReasonCode::MainRed => 27,
            ReasonCode::ShellDenied => 28,
            ReasonCode::HookInputInvalid => 29,
            ReasonCode::PathHeld => 30,
            ReasonCode::ToolAbsent => 31,
            ReasonCode::RemoteUnreachable => 32,
            ReasonCode::HooksMissing => 33,
            ReasonCode::SkillMismatch => 34,
            ReasonCode::ActorUnnamed => 35,
            ReasonCode::WipLimit => 36,
            ReasonCode::ChangeHeld => 37,
            ReasonCode::RegistryUnreadable => 38,
            ReasonCode::RegistryChanged => 39,
            ReasonCode::RunnerKeyMissing => 40,
            ReasonCode::KeyExposed => 41,
            ReasonCode::ActorUnproven => 42,
            ReasonCode::ApprovalPending => 43,
        }
    }

    #[test]
    fn all_covers_every_variant_once() {
        let indices: Vec<usize> = ReasonCode::ALL.iter().map(|c| declared_index(*c)).collect();
        let expected: Vec<usize> = (0..ReasonCode::ALL.len()).collect();
        assert_eq!(
            indices, expected,
            "ALL lists every variant once, in declaration order"
        );
    }

    #[test]
    fn table_rows_follow_the_declaration_order() {
        for (row, code) in ReasonCode::ALL.into_iter().enumerate() {
            assert_eq!(code as usize, row);
            assert_eq!(TABLE[row].code, code);
            assert_eq!(code.info().code, code);
        }
    }

    #[test]
    fn codes_round_trip_through_text_and_serde() {
        for code in ReasonCode::ALL {
            assert_eq!(code.as_str().parse::<ReasonCode>(), Ok(code));
            assert_eq!(code.to_string(), code.as_str());
            let json = serde_json::to_string(&code).expect("a code serializes");
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            let back: ReasonCode = serde_json::from_str(&json).expect("and reads back");
            assert_eq!(back, code);
            let screaming = code
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_');
            assert!(screaming, "{code}");
        }
        assert!("merge_conflict".parse::<ReasonCode>().is_err());
        assert!(
            "INPUT_CHANGED".parse::<ReasonCode>().is_err(),
            "not emitted yet"
        );
        assert!("".parse::<ReasonCode>().is_err());
    }

    #[test]
    fn only_the_waits_bay_ends_on_its_own_are_transient() {
        let transient: Vec<ReasonCode> = ReasonCode::ALL
            .into_iter()
            .filter(|c| c.is_transient())
            .collect();
        assert_eq!(
            transient,
            [
                ReasonCode::MainMoved,
                ReasonCode::CheckUnavailable,
                ReasonCode::MainHeld,
                ReasonCode::DependencyPending
            ]
        );
    }

    #[test]
    fn every_blocked_code_leaves_a_step_and_empty_means_bay_acts() {
        for code in ReasonCode::ALL {
            let info = code.info();
            if info.decision == Decision::Blocked {
                assert!(
                    !info.allowed.is_empty(),
                    "{code} is blocked and lists no step"
                );
            }
            if info.allowed.is_empty() {
                // The module's rule: an empty list is only for codes bay resolves itself.
                assert!(info.next_step.starts_with("Nothing to do"), "{code}");
                assert_ne!(info.decision, Decision::Blocked, "{code}");
            }
        }
    }

    #[test]
    fn decisions_are_blocked_queued_or_failed() {
        for code in ReasonCode::ALL {
            let decision = code.decision();
            assert!(
                matches!(
                    decision,
                    Decision::Blocked | Decision::Queued | Decision::Failed
                ),
                "{code} has {decision:?}"
            );
        }
        assert_eq!(ReasonCode::Queued.decision(), Decision::Queued);
        assert_eq!(ReasonCode::MergeConflict.decision(), Decision::Blocked);
        assert_eq!(ReasonCode::MergeOutcomeUnknown.decision(), Decision::Failed);
    }

    #[test]
    fn every_row_is_filled_in() {
        for code in ReasonCode::ALL {
            let info = code.info();
            assert!(!info.meaning.is_empty(), "{code}");
            assert!(info.next_step.ends_with('.'), "{code}");
            let snake = info
                .retry_when
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_');
            assert!(
                snake && !info.retry_when.is_empty(),
                "{code}: {}",
                info.retry_when
            );
            let mut sorted = info.allowed.to_vec();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted, info.allowed, "{code}: allowed is sorted and unique");
        }
    }

    #[test]
    fn allowed_serializes_lower_case() {
        let json = serde_json::to_string(&[Read, Refresh, Repair, Wait]).expect("serializes");
        assert_eq!(json, r#"["read","refresh","repair","wait"]"#);
    }
}
