//! The vocabulary between a machine and its driver: actions out, completions in.
//!
//! Actions are plain data. A driver executes each one and answers with exactly one
//! [`Completion`] carrying the action's [`ActionId`]; a completion for an id the machine is not
//! waiting for is refused as a [`Misuse`]. The same vocabulary serves the real Git driver and
//! the simulator, so that neither can decide anything the other does not.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::check::{CheckExit, CheckRequest};
use crate::git::Oid;
use crate::id::{CandidateId, ChangeId, OpId};
use crate::limits::PathStat;
use crate::policy::CheckSpec;
use crate::record::{Step, StepBody};
use crate::time::Timestamp;

/// Names one action; its completion must carry the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ActionId(pub u64);

/// Something a machine needs done.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Action {
    /// Fetch the refs the spec names from the remote, and report the value of each that
    /// exists there (a ref the remote no longer has is absent from the answer). A pattern
    /// without `*` names a ref that must exist: Git fails the whole fetch when it does not.
    Fetch(FetchSpec),
    /// Read single step commits (for example the request a queue place points at).
    ReadSteps { oids: Vec<Oid> },
    /// Read chains: for each, the step commits from `tip` back along first parents, stopping
    /// before `known` when the walk meets it. A chain whose walk meets an object that is not a
    /// commit is answered `unreadable`, alone: one broken record never fails the others.
    ReadChains { chains: Vec<ChainQuery> },
    /// Fetch the index shard that holds each of `changes` (`crate::git::refs::index_of_change`)
    /// and read its compacted chain at the tip fetched (`crate::compact`), answered as
    /// [`Action::ReadChains`] is: each file decoded with [`crate::compact::read_back`], so a
    /// change the index lacks, or whose shard the remote lacks, is unreadable, by name. Only
    /// the shards asked for are fetched, and only when a command needs a compacted change.
    ReadCompacted { changes: Vec<ChangeId> },
    /// Read one file of a commit's tree; absent is not an error.
    ReadFile { commit: Oid, path: String },
    /// Measure, for `[limits]`, each path whose content, mode or presence differs between the
    /// trees of `base` and `commit`: its size in `commit` (none when deleted) and the lines it
    /// adds (none for a binary file). Asked only of a policy that sets a cap.
    ReadStats { base: Oid, commit: Oid },
    /// Read the tree of each of `commits`, in order, from local objects; a commit this clone
    /// lacks is a fault. A bisect's check request names a merge's exact tree and its first
    /// parent's.
    ReadTrees { commits: Vec<Oid> },
    /// List, for each of `commits` in order, every file of its tree (blob, symlink or
    /// submodule, never a directory) whose path starts with one of `under`, with its mode and
    /// id, from local objects; a commit this clone lacks, or a listed path that is not UTF-8,
    /// is a fault. A footprint's stamp reads them (`crate::check::footprint`).
    ReadFiles {
        commits: Vec<Oid>,
        under: Vec<String>,
    },
    /// Read the evidence records noted on each of `objects` in each notes commit of `notes`
    /// (tips of `refs/notes/bay/evidence/*` as fetched): every line of every such note.
    ReadNotes { notes: Vec<Oid>, objects: Vec<Oid> },
    /// Test-merge `draft` (made on main at `base`) onto `onto`, writing nothing anyone reads:
    /// the paths that conflict, none when it merges cleanly.
    TestMerge { onto: Oid, draft: Oid, base: Oid },
    /// The best common ancestor of two commits, as `git merge-base` names it; none when they
    /// share no history. `bay start --from` takes a branch's net change on main with it.
    MergeBase { one: Oid, two: Oid },
    /// Read the commits of a first-parent range from local refs only, never fetching: `range`
    /// as Git takes it (`<from>..<to>`), or `None` for main as this clone last fetched it.
    /// Newest first, at most `limit`, and with `since` none older than that moment: the walk
    /// stops at the first commit whose committer time is older (a read bound; readers judge
    /// by the times their records carry, and a model without times leaves nothing out).
    ReadLog {
        range: Option<String>,
        limit: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<Timestamp>,
    },
    /// Read a stretch of main's first-parent line from local objects, never fetching (see
    /// [`HistoryQuery`]).
    ReadHistory(HistoryQuery),
    /// Find, among the newest `within` commits of `commit`'s first-parent line in local
    /// objects, the newest that added `path` (holds it where its first parent does not); none
    /// when none of them did. Bounded, so that its cost does not grow with main's history.
    ReadAdded {
        commit: Oid,
        path: String,
        within: u32,
    },
    /// List the refs this clone holds from its earlier fetches whose names on the remote start
    /// with `prefix` (such as `refs/bay/changes/`), never fetching: at most `limit`, those
    /// whose tips were committed last, named as on the remote. What a reader that must not
    /// reach the network (the flow of `bay status`) knows of the remote.
    ReadHeld { prefix: String, limit: u32 },
    /// For each remote ref name, when (on this machine's clock) this clone's copy of the ref
    /// first held the value it holds now, as recorded when the fetch or push that moved it
    /// there did so; a ref with no such record is left out. Never fetches. It ages a runner's
    /// presence on the reader's clock alone (`crate::presence`).
    ReadSeen { names: Vec<String> },
    /// Write the step commits of `append` into this clone's object store as a push would
    /// (each on the one before, the carried commit on the carrier), and push nothing: their
    /// ids, in order. `merge --wait` writes its request so, and its runner pushes it with the
    /// merge.
    WriteSteps(Append),
    /// Write the commits a push needs and push them, as one atomic push when `atomic`.
    Push(PushPlan),
    /// Merge `draft` (made on main at `merge_base`) onto main at `base`, and write the
    /// candidate commit: tree of the merge, sole parent `base`, message `message`. A draft or
    /// merge base that is not a commit here is answered [`BuildResult::Missing`].
    BuildCandidate(CandidateSpec),
    /// Run one check on a candidate, in the sandbox, with the request on stdin.
    RunCheck(Box<CheckRun>),
    /// Run a plugin's program, taken from a commit's tree, and report how it ended and what
    /// it printed (see [`PluginRun`]). No sandbox: a plugin is the repository's own program.
    RunPlugin(PluginRun),
    /// Save the work in the change's view as a draft commit: parent `parent`, made on main
    /// at `base`. A view that grew from another draft than `parent` (one saved on another
    /// machine) has its work carried over onto `parent` as a merge; where that conflicts, the
    /// draft holds both sides between marker lines named by `labels`, and the view is left
    /// as it was, to be made from that draft once a record names its markers.
    FreezeDraft {
        change: ChangeId,
        parent: Oid,
        base: Oid,
        labels: crate::conflict::Labels,
    },
    /// Bring a draft up to main at `onto`: merge it (made on `base`) onto `onto`, keeping any
    /// conflict in the files for the agent to resolve, its sides named by `labels`.
    RefreshDraft {
        change: ChangeId,
        draft: Oid,
        base: Oid,
        onto: Oid,
        labels: crate::conflict::Labels,
    },
    /// Make (or refresh) the change's view: a sparse worktree of `paths` at `draft`.
    MakeView {
        change: ChangeId,
        paths: Vec<String>,
        draft: Oid,
    },
    /// What this machine's views of `changes` hold: for each that is a valid view, its `HEAD`,
    /// whether it has edits or untracked files (ignored ones are not work), and whether it is
    /// locked. A change with no valid view is left out.
    InspectViews { changes: Vec<ChangeId> },
    /// Remove the view of `change` as `git worktree remove` does, never forcing: `false` when
    /// Git refuses.
    ReleaseView { change: ChangeId },
    /// Read the key registry's chain from `tip` back along first parents to its first commit
    /// (at most `trust::registry::MAX_VERSIONS`, else a fault): each commit raw, with its
    /// tree's files, tip first. Judging it is core's (`trust::registry::judge_chain`).
    ReadRegistry { tip: Oid },
    /// Read each of `commits` raw, as Git stores it (`git cat-file commit`), in order, from
    /// local objects; one this clone lacks is a fault. Core judges a merge's `gpgsig`
    /// (`trust::record`) on it.
    ReadCommits { commits: Vec<Oid> },
    /// Write one registry version into this clone's objects, pushing nothing: `files` as its
    /// tree, `parent` as its only parent, `message`, `at` as author and committer time, and
    /// signed as Git signs commits (namespace `git`) with the private key at `key`. Answered
    /// with the commit as [`Action::ReadRegistry`] would read it, for core to judge.
    WriteRegistry(RegistryWrite),
}

/// One registry version to write and sign (see [`Action::WriteRegistry`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RegistryWrite {
    pub parent: Option<Oid>,
    pub files: Vec<(String, String)>,
    pub message: String,
    pub at: Timestamp,
    /// The path of the signing key's private half, as `bay.registryKey` names it.
    pub key: String,
}

impl Action {
    /// A short name for traces.
    pub fn name(&self) -> &'static str {
        match self {
            Action::Fetch(_) => "fetch",
            Action::ReadSteps { .. } => "read-steps",
            Action::ReadChains { .. } => "read-chains",
            Action::ReadCompacted { .. } => "read-compacted",
            Action::ReadFile { .. } => "read-file",
            Action::ReadStats { .. } => "read-stats",
            Action::ReadTrees { .. } => "read-trees",
            Action::ReadFiles { .. } => "read-files",
            Action::ReadNotes { .. } => "read-notes",
            Action::ReadLog { .. } => "read-log",
            Action::ReadHistory(_) => "read-history",
            Action::ReadAdded { .. } => "read-added",
            Action::ReadHeld { .. } => "read-held",
            Action::ReadSeen { .. } => "read-seen",
            Action::TestMerge { .. } => "test-merge",
            Action::MergeBase { .. } => "merge-base",
            Action::WriteSteps(_) => "write-steps",
            Action::Push(_) => "push",
            Action::BuildCandidate(_) => "build-candidate",
            Action::RunCheck(_) => "run-check",
            Action::RunPlugin(_) => "run-plugin",
            Action::FreezeDraft { .. } => "freeze-draft",
            Action::RefreshDraft { .. } => "refresh-draft",
            Action::MakeView { .. } => "make-view",
            Action::InspectViews { .. } => "inspect-views",
            Action::ReleaseView { .. } => "release-view",
            Action::ReadRegistry { .. } => "read-registry",
            Action::ReadCommits { .. } => "read-commits",
            Action::WriteRegistry(_) => "write-registry",
        }
    }

    /// The completion that says this action failed for `why` without the driver knowing how
    /// far it got (the driver's thread for it panicked, say). Each kind answers as it does
    /// for its own failures: a fault; a push that may or may not have applied (`Unknown`, so
    /// that the machine reads the remote before it writes again); a check that could not be
    /// run (`infra`); a plugin that gave no answer.
    pub fn fault(&self, why: String) -> Completion {
        let fault = Fault(why);
        match self {
            Action::Fetch(_) => Completion::Fetched(Err(fault)),
            Action::ReadSteps { .. } => Completion::StepsRead(Err(fault)),
            Action::ReadChains { .. } | Action::ReadCompacted { .. } => {
                Completion::ChainsRead(Err(fault))
            }
            Action::ReadFile { .. } => Completion::FileRead(Err(fault)),
            Action::ReadStats { .. } => Completion::StatsRead(Err(fault)),
            Action::ReadTrees { .. } => Completion::TreesRead(Err(fault)),
            Action::ReadFiles { .. } => Completion::FilesRead(Err(fault)),
            Action::ReadNotes { .. } => Completion::NotesRead(Err(fault)),
            Action::ReadLog { .. } => Completion::LogRead(Err(fault)),
            Action::ReadHistory(_) => Completion::HistoryRead(Err(fault)),
            Action::ReadAdded { .. } => Completion::AddedRead(Err(fault)),
            Action::ReadHeld { .. } => Completion::HeldRead(Err(fault)),
            Action::ReadSeen { .. } => Completion::SeenRead(Err(fault)),
            Action::TestMerge { .. } => Completion::MergeTested(Err(fault)),
            Action::MergeBase { .. } => Completion::MergeBaseFound(Err(fault)),
            Action::WriteSteps(_) => Completion::StepsWritten(Err(fault)),
            Action::Push(_) => Completion::Pushed(PushReport {
                steps: Vec::new(),
                notes: Vec::new(),
                log: None,
                presence: None,
                indexes: Vec::new(),
                outcome: PushOutcome::Unknown { why: fault.0 },
            }),
            Action::BuildCandidate(_) => Completion::CandidateBuilt(Err(fault)),
            Action::RunCheck(_) => Completion::CheckExited(CheckExit {
                infra: Some(fault.0),
                ..CheckExit::default()
            }),
            Action::RunPlugin(_) => Completion::PluginExited(PluginExit::NotStarted(fault.0)),
            Action::FreezeDraft { .. } => Completion::DraftFrozen(Err(fault)),
            Action::RefreshDraft { .. } => Completion::DraftRefreshed(Err(fault)),
            Action::MakeView { .. } => Completion::ViewMade(Err(fault)),
            Action::InspectViews { .. } => Completion::ViewsInspected(Err(fault)),
            Action::ReleaseView { .. } => Completion::ViewReleased(Err(fault)),
            Action::ReadRegistry { .. } => Completion::RegistryRead(Err(fault)),
            Action::ReadCommits { .. } => Completion::CommitsRead(Err(fault)),
            Action::WriteRegistry(_) => Completion::RegistryWritten(Err(fault)),
        }
    }
}

/// The refs one fetch brings: each pattern an exact ref name or a prefix ending in `*`.
/// Machines fetch only what they read, so a fetch costs the same however much history the
/// remote holds. An exact name is for a ref that must exist (main): when the remote lacks it
/// the fetch is a fault, as in Git. A ref that may be absent is named with a trailing `*`
/// (see `refs::change_pattern`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct FetchSpec {
    pub patterns: Vec<String>,
    /// Let Git's own auto maintenance follow this fetch (`git maintenance run --auto`, which
    /// does nothing until Git's thresholds of loose objects and packs say so). Set on the
    /// fetch of a clone's steady loop, a runner's pass and an agent's start, so that the
    /// objects thousands of fetches leave in a long-lived clone stay packed; every other fetch
    /// goes without, for its latency. A model without objects has nothing to maintain.
    #[serde(default)]
    pub maintain: bool,
}

impl FetchSpec {
    pub fn new(patterns: impl IntoIterator<Item = String>) -> FetchSpec {
        FetchSpec {
            patterns: patterns.into_iter().collect(),
            maintain: false,
        }
    }

    /// This fetch, followed by Git's auto maintenance.
    pub fn maintained(mut self) -> FetchSpec {
        self.maintain = true;
        self
    }

    /// Whether this fetch speaks for `name`: its answer says whether the ref exists.
    pub fn covers(&self, name: &str) -> bool {
        self.patterns
            .iter()
            .any(|pattern| crate::glob::ref_matches(pattern, name))
    }

    /// Folds a fetch's answer into what a machine knows of the remote: every ref the spec
    /// covers takes the answer's value, or goes when the answer lacks it; others stay.
    ///
    /// One walk of both maps in name order: a ref known and fetched takes its new value in
    /// place, so a pass that finds most refs where it left them moves no entry of the map.
    pub fn apply(&self, known: &mut Refs, fetched: Refs) {
        // Each pattern split at its `*` once, not once for every ref it is held to.
        let patterns: Vec<crate::glob::RefPattern<'_>> = self
            .patterns
            .iter()
            .map(|pattern| crate::glob::RefPattern::new(pattern))
            .collect();
        let covers = |name: &str| patterns.iter().any(|pattern| pattern.matches(name));
        let mut incoming = fetched
            .into_iter()
            .filter(|(name, _)| covers(name))
            .peekable();
        let mut new = Vec::new();
        known.retain(|name, oid| {
            while let Some(below) = incoming.next_if(|(next, _)| next < name) {
                new.push(below);
            }
            if !covers(name) {
                return true;
            }
            match incoming.next_if(|(next, _)| next == name) {
                Some((_, fetched)) => {
                    *oid = fetched;
                    true
                }
                None => false,
            }
        });
        known.extend(new);
        known.extend(incoming);
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ChainQuery {
    pub change: ChangeId,
    pub tip: Oid,
    pub known: Option<Oid>,
}

impl ChainQuery {
    /// The whole chain of `change` from its tip on `remote`, when a ref of its own names it.
    pub fn whole(remote: &Refs, change: &ChangeId) -> Option<ChainQuery> {
        Some(ChainQuery {
            change: change.clone(),
            tip: remote.get(&crate::git::refs::change(change))?.clone(),
            known: None,
        })
    }

    /// The whole chain of every change `remote` holds a chain ref of.
    pub fn every_whole(remote: &Refs) -> Vec<ChainQuery> {
        remote
            .iter()
            .filter_map(|(name, tip)| ChainQuery::of_ref(name, tip))
            .collect()
    }

    /// The whole chain the ref `name` holds at `tip`, when `name` is a chain's ref.
    pub fn of_ref(name: &str, tip: &Oid) -> Option<ChainQuery> {
        Some(ChainQuery {
            change: crate::git::refs::parse_change(name)?,
            tip: tip.clone(),
            known: None,
        })
    }
}

/// What one push writes and what it expects. The driver writes one commit per step (first
/// parent: the previous step, or `expect` for the first; `carry`, which keeps a draft or
/// candidate reachable, as the second parent of the step `Append::carrier` names), one notes
/// commit per note, then pushes every ref with a lease on its expected value.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PushPlan {
    pub appends: Vec<Append>,
    pub notes: Vec<NoteAdd>,
    /// An event appended to a runner's log, with the push that ends its operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogAdd>,
    /// A runner's presence, replacing `refs/bay/executor/<runner>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence: Option<PresenceAdd>,
    /// A new commit of each index shard a compaction adds to (`crate::compact`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexAdd>,
    pub updates: Vec<RefUpdate>,
    /// All refs or none. bay's own pushes are always atomic.
    pub atomic: bool,
}

impl PushPlan {
    /// An atomic push of `append` alone: steps on one chain, nothing else.
    pub fn of(append: Append) -> PushPlan {
        PushPlan {
            appends: vec![append],
            atomic: true,
            ..PushPlan::default()
        }
    }

    /// The operations whose outcome this push writes: once it lands, they have ended, and a
    /// driver lets go of what it kept for them (a candidate's local ref).
    pub fn ended_ops(&self) -> Vec<OpId> {
        self.appends
            .iter()
            .flat_map(|append| &append.steps)
            .filter_map(|step| match &step.body {
                StepBody::Outcome { op, .. } => Some(op.clone()),
                _ => None,
            })
            .collect()
    }
}

/// Steps appended to one change's chain, by compare-and-swap on its tip.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Append {
    pub change: ChangeId,
    /// The tip the steps extend (`None` for a new chain).
    pub parent: Option<Oid>,
    /// The lease on the chain ref: always exactly `parent` (or `Absent` for a new chain), so
    /// that a writer whose tip moved, such as a runner whose claim was taken over, is refused.
    pub expect: Expect,
    pub steps: Vec<Step>,
    pub carry: Option<Oid>,
}

impl Append {
    /// Steps that extend `parent`, leased on it.
    pub fn on(
        change: ChangeId,
        parent: Option<Oid>,
        steps: Vec<Step>,
        carry: Option<Oid>,
    ) -> Append {
        let expect = Expect::tip(parent.as_ref());
        Append {
            change,
            parent,
            expect,
            steps,
            carry,
        }
    }

    /// The index of the step whose second parent is `carry`: the first step that extends a
    /// parent, so that a chain's first parents are its steps alone. That is the first step,
    /// or for a new chain the second (a new chain that carries a commit has two steps).
    pub fn carrier(&self) -> usize {
        usize::from(self.parent.is_none())
    }
}

/// One `bay.event/1` commit appended to `refs/bay/log/<runner>`: an empty tree, `parent` (the
/// log's tip, none for a new log) as its only parent, and `message` (`BayEvent::to_message`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct LogAdd {
    pub runner: String,
    pub parent: Option<Oid>,
    /// Always exactly `parent` (or `Absent`), so that an event never overwrites another.
    pub expect: Expect,
    pub message: String,
    /// The events of a push that ends more than one operation (a batch), each a commit on the
    /// one before: `message` first, then these in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub more: Vec<String>,
}

impl LogAdd {
    /// An event for `runner`'s log, on the tip `parent`, leased on it.
    pub fn on(runner: &str, parent: Option<Oid>, message: String) -> LogAdd {
        let expect = Expect::tip(parent.as_ref());
        LogAdd {
            runner: runner.to_string(),
            parent,
            expect,
            message,
            more: Vec::new(),
        }
    }

    /// Every event this append writes, the first on `parent`, each later one on the one
    /// before.
    pub fn messages(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.message).chain(&self.more)
    }
}

/// One commit of the index shard `shard` (`refs/bay/compacted/...`): the tree of `base`, the
/// shard's tip (none: empty), with each of `files` (path, content) put in it, and `message`;
/// leased on `base`, and a child of `parent`. Git sends a new version's objects less the ones
/// its parent's tree holds, but never less those of a tree it merely replaces: a version with
/// no parent sends the whole shard again, on its push and to every clone's next fetch. A long
/// line of versions costs a new clone's first fetch instead (every version's trees), so a
/// shard starts a new line now and then (`crate::compact::LINE`): `parent` is `base`, or
/// none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct IndexAdd {
    pub shard: String,
    pub base: Option<Oid>,
    /// Always exactly `base` (or `Absent`), so that a compaction never loses another's.
    pub expect: Expect,
    /// `base`, or none to start a new line of versions.
    pub parent: Option<Oid>,
    pub files: Vec<(String, String)>,
    pub message: String,
}

impl IndexAdd {
    /// Files added to the shard `shard` at its tip `base`, leased on it, a child of it.
    pub fn on(
        shard: String,
        base: Option<Oid>,
        files: Vec<(String, String)>,
        message: String,
    ) -> IndexAdd {
        let expect = Expect::tip(base.as_ref());
        IndexAdd {
            shard,
            parent: base.clone(),
            base,
            expect,
            files,
            message,
        }
    }
}

/// One `bay.presence/1` commit that replaces `refs/bay/executor/<runner>`: an empty tree, no
/// parent (a presence keeps no history), and `message` (`Presence::to_message`), leased on
/// the tip the runner knows (or `Absent` when it knows none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PresenceAdd {
    pub runner: String,
    pub expect: Expect,
    pub message: String,
}

/// One evidence record, as a note on `object` under `refs/notes/bay/evidence/<producer>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct NoteAdd {
    pub producer: String,
    pub expect: Expect,
    pub object: Oid,
    pub record: String,
    /// The private key (`bay.producerKey`) that signs the record before it is written: the
    /// driver adds its SSHSIG (`trust::record`) as the record's `signature`. None writes it
    /// as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RefUpdate {
    pub name: String,
    pub expect: Expect,
    pub new: NewValue,
}

/// The lease a ref update carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Expect {
    /// The ref must not exist: create-only.
    Absent,
    /// The ref must hold exactly this value.
    Is(Oid),
    /// No lease at all. bay never writes this; only the test-only mutants do, to show that
    /// the simulator catches what a missing lease lets through.
    Any,
}

impl Expect {
    /// The lease of an append on `tip`: that exact tip, or none yet (create-only).
    pub fn tip(tip: Option<&Oid>) -> Expect {
        match tip {
            Some(tip) => Expect::Is(tip.clone()),
            None => Expect::Absent,
        }
    }
}

/// The value a ref update writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum NewValue {
    Oid(Oid),
    /// Delete the ref (a queue place whose operation ends in the same push).
    Delete,
    /// The commit of step `step` of append `append` of the same plan.
    Step {
        append: usize,
        step: usize,
    },
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CandidateSpec {
    pub candidate: CandidateId,
    pub base: Oid,
    pub draft: Oid,
    pub merge_base: Oid,
    pub message: String,
    /// The private key (`bay.executorKey`) that signs the candidate as Git signs commits
    /// (a `gpgsig` header, namespace `git`), when the registry signs everything; none leaves
    /// it unsigned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sign: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckRun {
    pub check: CheckSpec,
    pub request: CheckRequest,
    /// The commit whose `adapter` paths run: the base, never the candidate.
    pub adapter_from: Oid,
    pub candidate: Oid,
    /// Which of the candidate's runs this is: runs at once on one candidate each get their own
    /// directory.
    pub slot: u32,
}

/// One run of a plugin: the file `program` of `commit`'s tree (never a working tree, so a
/// change cannot rewrite the plugin that judges it), written out executable and run as
/// `<program> <args...>` with `stdin`, in an empty directory, with only `PATH` and `HOME` of
/// the driver's environment. At `timeout_s` the driver kills its whole process group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PluginRun {
    pub commit: Oid,
    /// A path in the repository.
    pub program: String,
    pub args: Vec<String>,
    pub stdin: Vec<u8>,
    pub timeout_s: u64,
}

/// How a plugin's run ended. The driver reports; core judges (for the hold plugin,
/// `crate::plugin::judge_hold`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum PluginExit {
    /// The program ended by itself: its exit code (`None` when a signal ended it) and its
    /// stdout, of which the driver keeps at most `crate::plugin::STDOUT_CAP` bytes.
    Exited { code: Option<i32>, stdout: Vec<u8> },
    /// It ran past `timeout_s` and was killed.
    TimedOut,
    /// It never ran: the program is not in the commit, or could not be written or started.
    NotStarted(String),
}

/// A driver-side fault: the action could not be done (a network error, a Git error, a
/// missing program). Never a refusal: faults become outcomes only through the machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Fault(pub String);

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The remote's refs, as one fetch saw them.
pub type Refs = BTreeMap<String, Oid>;

/// Main's first-parent line after `from` up to `to` (all of it when `from` is `None`): at most
/// `limit` commits, the oldest of the range (or the newest, when `newest`), listed oldest
/// first. A `from` the clone lacks is a fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct HistoryQuery {
    pub from: Option<Oid>,
    pub to: Oid,
    pub limit: u32,
    pub newest: bool,
    /// A bound on the read, never a decision: a reader may stop the walk at the first commit
    /// committed before this moment (on its writer's clock) and leave out the rest. Set only
    /// where every commit wanted is newer by a margin wider than any clock skew, so that a
    /// line's length, not its age, never sets the cost. The simulator's model keeps no time
    /// and leaves nothing out.
    pub since: Option<Timestamp>,
}

impl HistoryQuery {
    /// The range as Git takes it: `<from>..<to>`, or `<to>` alone.
    pub fn range(&self) -> String {
        match &self.from {
            Some(from) => format!("{from}..{}", self.to),
            None => self.to.to_string(),
        }
    }

    /// The query's commits out of the whole range read newest first, as Git's first-parent
    /// walk gives them: oldest first.
    pub fn pick<T>(&self, mut newest_first: Vec<T>) -> Vec<T> {
        let limit = self.limit as usize;
        if self.newest {
            newest_first.truncate(limit);
            newest_first.reverse();
        } else {
            newest_first.reverse();
            newest_first.truncate(limit);
        }
        newest_first
    }
}

/// One commit of main's first-parent line, as `ReadHistory` reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct MainCommit {
    pub oid: Oid,
    pub parents: Vec<Oid>,
    /// The committer time, as Git records it (the committer's clock).
    pub at: Timestamp,
    /// The committer, `Name <email>`.
    pub committer: String,
    pub message: String,
    /// For a commit with more than one parent: how many commits it brought in that its first
    /// parent lacks (the commits off the first-parent line). Zero otherwise.
    pub off_first_parent: u64,
    /// The newest of those commits, at most [`BROUGHT_READ`], newest first (each with nothing
    /// brought in of its own): where a bay merge that the merge put off the line is found.
    #[serde(default)]
    pub brought: Vec<MainCommit>,
}

/// The most commits a history read reads behind one merge; `capped` says when it stopped.
pub const BROUGHT_READ: usize = 500;

/// One step commit as read: its id and message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RawStep {
    pub oid: Oid,
    pub message: String,
}

/// One chain as read, newest step first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ChainRead {
    pub change: ChangeId,
    pub tip: Oid,
    /// From the tip back, stopping before `known` if the walk met it.
    pub steps: Vec<RawStep>,
    /// The walk stopped at `known`: `steps` extend what the reader already has.
    pub reached_known: bool,
    /// The walk met an object that is not a commit (a ref pointed at a blob by hand, say): why,
    /// with `steps` empty. Only this chain is unreadable; the others of the same read stand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
}

impl ChainRead {
    /// The read of a chain whose walk from `query`'s tip met something that is not a commit.
    pub fn unreadable(query: &ChainQuery, why: String) -> ChainRead {
        ChainRead {
            change: query.change.clone(),
            tip: query.tip.clone(),
            steps: Vec::new(),
            reached_known: false,
            unreadable: Some(why),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum BuildResult {
    Clean {
        commit: Oid,
        tree: Oid,
        base_tree: Oid,
        changed_paths: Vec<String>,
    },
    Conflict {
        paths: Vec<String>,
    },
    /// The draft, or the main commit it was made on, is not a commit this clone holds. The
    /// runner fetched the change's chain, which keeps both reachable, so the request names
    /// what the remote does not hold: a record no retry can build, never a fault to retry.
    /// `commits` lists those of the two that are missing (main itself is never: it was just
    /// fetched).
    Missing {
        commits: Vec<Oid>,
    },
}

/// A draft the driver made by a merge: a refresh onto main, or a view's work carried over
/// onto the recorded draft.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Refreshed {
    pub draft: Oid,
    /// Paths that conflict, for the agent to resolve.
    pub conflicts: Vec<String>,
    /// Those of them the driver wrote the labels' marker lines into (a binary file, or one
    /// deleted on one side, is left whole, with none).
    pub marked: Vec<String>,
}

impl Refreshed {
    /// A draft made with no conflict (or no merge at all).
    pub fn clean(draft: Oid) -> Refreshed {
        Refreshed {
            draft,
            conflicts: Vec::new(),
            marked: Vec::new(),
        }
    }
}

/// What became of a push.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum PushOutcome {
    /// Every ref moved.
    Accepted,
    /// The remote refused; with an atomic push nothing moved. `refs` names what the remote
    /// blamed, which can be every ref when it does not say.
    Rejected { refs: Vec<String> },
    /// The push was sent and no answer came: it may or may not have applied. Settle it by
    /// reading the remote, never by pushing blindly again.
    Unknown { why: String },
    /// Nothing reached the remote.
    NotSent(Fault),
}

impl PushOutcome {
    /// `Ok` when every ref moved, else why not, in words: for a caller whose only next step
    /// on any failure is the same (read again, or give up), such as a lock or a live summary.
    pub fn landed(self) -> Result<(), String> {
        match self {
            PushOutcome::Accepted => Ok(()),
            PushOutcome::Rejected { refs } => {
                Err(format!("the remote refused {}", refs.join(", ")))
            }
            PushOutcome::Unknown { why } => Err(why),
            PushOutcome::NotSent(fault) => Err(fault.to_string()),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PushReport {
    /// The commits written for each append, in step order (empty if nothing was written).
    pub steps: Vec<Vec<Oid>>,
    /// The notes commit written for each note (empty if nothing was written).
    pub notes: Vec<Oid>,
    /// The log commit written for the plan's event, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<Oid>,
    /// The presence commit written for the plan's presence, if it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence: Option<Oid>,
    /// The commit written for each index shard of the plan's compaction, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<Oid>,
    pub outcome: PushOutcome,
}

/// The completion of one action.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Completion {
    Fetched(Result<Refs, Fault>),
    StepsRead(Result<Vec<RawStep>, Fault>),
    ChainsRead(Result<Vec<ChainRead>, Fault>),
    FileRead(Result<Option<Vec<u8>>, Fault>),
    /// One entry per path, sorted by path.
    StatsRead(Result<Vec<PathStat>, Fault>),
    NotesRead(Result<Vec<String>, Fault>),
    TreesRead(Result<Vec<Oid>, Fault>),
    /// One list per commit asked, each sorted by path.
    FilesRead(Result<Vec<Vec<crate::check::footprint::TreeFile>>, Fault>),
    LogRead(Result<Vec<RawStep>, Fault>),
    HistoryRead(Result<Vec<MainCommit>, Fault>),
    AddedRead(Result<Option<Oid>, Fault>),
    HeldRead(Result<Refs, Fault>),
    SeenRead(Result<BTreeMap<String, Timestamp>, Fault>),
    MergeTested(Result<Vec<String>, Fault>),
    MergeBaseFound(Result<Option<Oid>, Fault>),
    StepsWritten(Result<Vec<Oid>, Fault>),
    Pushed(PushReport),
    CandidateBuilt(Result<BuildResult, Fault>),
    CheckExited(CheckExit),
    PluginExited(PluginExit),
    /// The saved draft; its conflicts are those of carrying the view's work over.
    DraftFrozen(Result<Refreshed, Fault>),
    DraftRefreshed(Result<Refreshed, Fault>),
    ViewMade(Result<String, Fault>),
    ViewsInspected(Result<Vec<ViewFacts>, Fault>),
    ViewReleased(Result<bool, Fault>),
    /// Tip first.
    RegistryRead(Result<Vec<crate::trust::registry::RegistryCommit>, Fault>),
    RegistryWritten(Result<crate::trust::registry::RegistryCommit, Fault>),
    /// Each commit raw, in the order asked.
    CommitsRead(Result<Vec<String>, Fault>),
}

/// One view as `InspectViews` finds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct ViewFacts {
    pub change: ChangeId,
    pub head: Option<Oid>,
    /// No edits and no untracked files.
    pub clean: bool,
    pub locked: bool,
}

/// An input to a machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum Event {
    /// Time passed: the deadline from `poll_timeout` may have come.
    Tick,
    /// An action finished.
    Done(ActionId, Completion),
}

/// A driver broke the protocol: a completion for an action the machine is not waiting for,
/// or of the wrong kind. Refusals of the user's request are outcomes, never this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Misuse(pub String);

impl std::fmt::Display for Misuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "driver misuse: {}", self.0)
    }
}

impl std::error::Error for Misuse {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::OpState;
    use crate::time::Timestamp;

    #[test]
    fn a_fetch_answer_replaces_exactly_the_refs_its_spec_covers() {
        let oid = |n: u8| Oid::parse(&format!("{n:040x}")).expect("an id");
        let refs = |pairs: &[(&str, u8)]| -> Refs {
            pairs
                .iter()
                .map(|(name, n)| (name.to_string(), oid(*n)))
                .collect()
        };
        let spec = FetchSpec::new(["refs/a/*".to_string(), "refs/c".to_string()]);
        let mut known = refs(&[
            ("refs/a/1", 1), // fetched the same: stays
            ("refs/a/2", 2), // fetched moved: takes the new value
            ("refs/a/4", 4), // not fetched: gone from the remote
            ("refs/b", 5),   // not covered: stays whatever the answer says
            ("refs/c", 6),   // covered by name, not fetched: gone
            ("refs/d/9", 9), // not covered, after every fetched ref
        ]);
        let fetched = refs(&[
            ("refs/a/0", 10), // new, before every known ref
            ("refs/a/1", 1),
            ("refs/a/2", 12),
            ("refs/a/3", 13), // new, between known refs
            ("refs/b", 15),   // not covered: ignored
            ("refs/a/9", 19), // new, after the covered ones known
            ("refs/e", 20),   // not covered, last: ignored
        ]);
        // What the fold means: every covered ref takes the answer's value or goes.
        let mut expected = known.clone();
        expected.retain(|name, _| !spec.covers(name));
        expected.extend(
            fetched
                .clone()
                .into_iter()
                .filter(|(name, _)| spec.covers(name)),
        );
        spec.apply(&mut known, fetched);
        assert_eq!(known, expected);
        assert_eq!(
            known,
            refs(&[
                ("refs/a/0", 10),
                ("refs/a/1", 1),
                ("refs/a/2", 12),
                ("refs/a/3", 13),
                ("refs/a/9", 19),
                ("refs/b", 5),
                ("refs/d/9", 9),
            ])
        );
        let mut empty = Refs::new();
        spec.apply(&mut empty, refs(&[("refs/c", 3), ("refs/z", 4)]));
        assert_eq!(empty, refs(&[("refs/c", 3)]));
    }

    #[test]
    fn a_push_ends_the_operations_whose_outcome_it_writes() {
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let step = |body: StepBody| Step {
            change: change.clone(),
            at: Timestamp(1),
            by: "r".into(),
            nonce: 1,
            body,
        };
        let plan = PushPlan {
            appends: vec![Append::on(
                change.clone(),
                None,
                vec![
                    step(StepBody::Claim { op: change.op(1) }),
                    step(StepBody::Outcome {
                        op: change.op(2),
                        state: OpState::Merged,
                        reason: None,
                        detail: serde_json::json!({}),
                    }),
                ],
                None,
            )],
            ..PushPlan::default()
        };
        assert_eq!(plan.ended_ops(), vec![change.op(2)]);
        assert!(PushPlan::default().ended_ops().is_empty());
    }

    #[test]
    fn a_failed_push_may_have_applied_and_a_failed_read_is_a_fault() {
        let why = || "it broke".to_string();
        match Action::Push(PushPlan::default()).fault(why()) {
            Completion::Pushed(report) => {
                assert_eq!(report.outcome, PushOutcome::Unknown { why: why() });
                assert!(report.steps.is_empty());
            }
            other => panic!("a push answers as a push, not {other:?}"),
        }
        let read = Action::ReadTrees { commits: vec![] };
        assert_eq!(read.fault(why()), Completion::TreesRead(Err(Fault(why()))));
        let release = Action::ReleaseView {
            change: ChangeId::parse("c7k2m4qa").expect("an id"),
        };
        assert_eq!(
            release.fault(why()),
            Completion::ViewReleased(Err(Fault(why())))
        );
    }
}
