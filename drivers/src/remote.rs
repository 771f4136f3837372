//! The remote-facing actions, executed with real Git in one clone: fetch, read steps, chains,
//! files and a change's stats, push, and build a candidate. The in-memory model of the same semantics is
//! `bay_sim::remote` and `bay_sim::world`; this driver must answer as they do.
//!
//! Every action answers with its [`Completion`]; Git trouble becomes a [`Fault`] with a plain
//! message, never a panic.
//!
//! Needs Git 2.44 or later: `merge-file --diff-algorithm` (2.44) and `--object-id` (2.43), which
//! name a conflict's sides for people (`markers.rs`), `fetch --porcelain` (2.41),
//! `merge-tree --write-tree` (2.38) with
//! `--merge-base` (2.40), `cat-file --batch-command` (2.36), `fetch --atomic` (2.31),
//! `fetch --no-write-fetch-head` and `--[no-]auto-maintenance` (2.29). `docs/architecture.md`
//! has the same list as a table.

mod candidate;
mod fetch;
mod notes;
mod push;
mod read;
mod registry;
mod stats;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bay_core::git::Oid;
use bay_core::machine::{Action, Completion, Fault};

use crate::git::{Git, GitError, Location};
use crate::local_refs::LocalRefs;
use crate::objects::Objects;
use crate::reader::Reader;

pub use candidate::{MergeTree, Stage, merge_tree};
pub use fetch::mirror_prefix;

pub use crate::objects::Identity;

/// Time bounds on Git calls: local plumbing is quick, while a fetch or push waits on a network
/// and a server's hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub local: Duration,
    pub network: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            local: Duration::from_secs(60),
            network: Duration::from_secs(300),
        }
    }
}

/// One clone of the shared repository, and how to reach the remote from it.
#[derive(Debug)]
pub struct Repo {
    dir: PathBuf,
    remote: String,
    main: String,
    identity: Identity,
    bounds: Bounds,
    /// Where the commits and blobs bay writes go.
    objects: Objects,
    /// The empty tree's id, the tree of every step commit; written once per clone.
    empty_tree: OnceLock<Oid>,
    /// Where local refs are written in-process, looked for at the first write.
    local_refs: OnceLock<Option<LocalRefs>>,
    /// Every object read, through one process; shared with the clone's views.
    reader: Arc<Reader>,
    /// Held by each `git fetch` this process runs in the clone: two at once fail on Git's own
    /// locks (the commit-graph a fetch writes under `fetch.writeCommitGraph`, which `bay
    /// install` sets), and the pump runs a machine's actions on threads of their own.
    fetching: std::sync::Mutex<()>,
}

impl Repo {
    /// The clone at `dir` (a worktree or a bare repository), its configured remote `remote`
    /// (a name such as `origin`, not a URL) and main's branch name `main`.
    ///
    /// The remote's name becomes part of local ref names (see [`mirror_prefix`]), so it must
    /// be one ref-name component: no `/`, which would let one remote's mirror hold another's.
    pub fn new(
        dir: impl Into<PathBuf>,
        remote: impl Into<String>,
        main: impl Into<String>,
    ) -> Result<Repo, String> {
        let (remote, main) = (remote.into(), main.into());
        if !is_component(&remote) {
            return Err(format!(
                "remote name {remote:?} cannot name refs: use a plain name such as origin"
            ));
        }
        if !main.split('/').all(is_component) {
            return Err(format!("{main:?} is not a branch name"));
        }
        let dir = dir.into();
        Ok(Repo {
            objects: Objects::new(Location::Dir(dir.clone())),
            remote,
            main,
            identity: Identity::default(),
            bounds: Bounds::default(),
            empty_tree: OnceLock::new(),
            fetching: std::sync::Mutex::new(()),
            local_refs: OnceLock::new(),
            reader: Arc::new(Reader::new(
                Git::in_dir(&dir).with_timeout(Bounds::default().local),
            )),
            dir,
        })
    }

    pub fn with_identity(mut self, identity: Identity) -> Repo {
        self.identity = identity;
        self
    }

    pub fn with_bounds(mut self, bounds: Bounds) -> Repo {
        self.bounds = bounds;
        self.reader = Arc::new(Reader::new(self.git()));
        self
    }

    /// Opens the clone in-process now for every part that reads or writes it (objects read
    /// and written, local refs), so that the first read or write does not wait for it.
    pub fn warm(&self) {
        self.reader.warm();
        self.objects.in_process();
        self.local_refs
            .get_or_init(|| LocalRefs::find(&Location::Dir(self.dir.clone())));
    }

    /// The reader of this clone's objects, for the other parts of the driver to share.
    pub fn reader(&self) -> Arc<Reader> {
        Arc::clone(&self.reader)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn remote(&self) -> &str {
        &self.remote
    }

    pub fn main(&self) -> &str {
        &self.main
    }

    /// Executes `action` if it is one this driver does: the remote, reads and candidates.
    /// `None` for the others (checks, plugins, drafts, views), which other parts of the driver
    /// run.
    pub fn execute(&self, action: &Action) -> Option<Completion> {
        Some(match action {
            Action::Fetch(spec) => Completion::Fetched(self.fetch(spec)),
            Action::ReadSteps { oids } => Completion::StepsRead(self.read_steps(oids)),
            Action::ReadChains { chains } => Completion::ChainsRead(self.read_chains(chains)),
            Action::ReadCompacted { changes } => {
                Completion::ChainsRead(self.read_compacted(changes))
            }
            Action::ReadFile { commit, path } => Completion::FileRead(self.read_file(commit, path)),
            Action::ReadStats { base, commit } => {
                Completion::StatsRead(self.read_stats(base, commit))
            }
            Action::ReadTrees { commits } => Completion::TreesRead(self.read_trees(commits)),
            Action::ReadFiles { commits, under } => {
                Completion::FilesRead(crate::trees::files_under(&self.reader, commits, under))
            }
            Action::ReadNotes { notes, objects } => {
                Completion::NotesRead(self.read_notes(notes, objects))
            }
            Action::ReadLog {
                range,
                limit,
                since,
            } => Completion::LogRead(self.read_log(range.as_deref(), *limit, *since)),
            Action::ReadHistory(query) => Completion::HistoryRead(self.read_history(query)),
            Action::ReadAdded {
                commit,
                path,
                within,
            } => Completion::AddedRead(self.read_added(commit, path, *within)),
            Action::ReadHeld { prefix, limit } => {
                Completion::HeldRead(self.read_held(prefix, *limit))
            }
            Action::ReadSeen { names } => Completion::SeenRead(self.read_seen(names)),
            Action::TestMerge { onto, draft, base } => Completion::MergeTested(
                candidate::merge_tree(&self.git(), base, onto, draft).map(|m| m.conflicts),
            ),
            Action::MergeBase { one, two } => {
                Completion::MergeBaseFound(self.reader.merge_base(one, two))
            }
            Action::WriteSteps(append) => Completion::StepsWritten(self.write_steps(append)),
            Action::Push(plan) => Completion::Pushed(self.push(plan)),
            Action::BuildCandidate(spec) => Completion::CandidateBuilt(self.build_candidate(spec)),
            Action::ReadRegistry { tip } => Completion::RegistryRead(self.read_registry(tip)),
            Action::ReadCommits { commits } => Completion::CommitsRead(self.read_commits(commits)),
            Action::WriteRegistry(write) => Completion::RegistryWritten(self.write_registry(write)),
            Action::RunCheck(_)
            | Action::RunPlugin(_)
            | Action::FreezeDraft { .. }
            | Action::RefreshDraft { .. }
            | Action::MakeView { .. }
            | Action::InspectViews { .. }
            | Action::ReleaseView { .. } => return None,
        })
    }

    /// Git on this clone, bounded for local work.
    fn git(&self) -> Git {
        Git::in_dir(&self.dir).with_timeout(self.bounds.local)
    }

    /// Git on this clone, bounded for talking to the remote.
    fn net(&self) -> Git {
        Git::in_dir(&self.dir).with_timeout(self.bounds.network)
    }

    /// A record that replaces its ref whole (a lock, `bay_core::lock`): `message` on the
    /// empty tree with no parent, as bay's identity, ready for a push's `RefUpdate`.
    pub fn write_record(&self, message: &str) -> Result<Oid, Fault> {
        let empty = self.empty_tree()?;
        self.commit_tree(&empty, &[], message)
    }

    /// A record that replaces its ref whole and holds one file (a live summary,
    /// `bay_core::live`): a tree of `file` alone holding `bytes`, committed with `message`
    /// and no parent, as bay's identity.
    pub fn write_file_record(&self, file: &str, bytes: &[u8], message: &str) -> Result<Oid, Fault> {
        let git = self.git();
        let blob = self.objects.blob(&git, bytes.to_vec())?;
        let entry = crate::trees::Entry {
            mode: "100644".into(),
            id: blob,
        };
        let entries = std::collections::BTreeMap::from([(file.as_bytes().to_vec(), entry)]);
        let tree = self.objects.tree(&git, &entries)?;
        self.commit_tree(&tree, &[], message)
    }

    /// The commit of `tree` on `parents` with `message`, as bay's identity.
    fn commit_tree(&self, tree: &Oid, parents: &[&Oid], message: &str) -> Result<Oid, Fault> {
        self.objects
            .commit(&self.git(), &self.identity, tree, parents, message)
    }

    /// Sets or deletes local refs in-process, as `git update-ref` would (with `keep_reflog`,
    /// as under `core.logAllRefUpdates=always`); `false` when it wrote nothing and `git` must
    /// (see [`LocalRefs`]).
    fn set_local(&self, changes: &[(String, Option<Oid>)], keep_reflog: bool) -> bool {
        let refs = self
            .local_refs
            .get_or_init(|| LocalRefs::find(&Location::Dir(self.dir.clone())));
        refs.as_ref()
            .is_some_and(|refs| refs.apply(changes, keep_reflog).is_ok())
    }

    /// The empty tree, written into this clone's object store once.
    fn empty_tree(&self) -> Result<Oid, Fault> {
        if let Some(tree) = self.empty_tree.get() {
            return Ok(tree.clone());
        }
        let tree = self.objects.empty_tree(&self.git())?;
        Ok(self.empty_tree.get_or_init(|| tree).clone())
    }
}

impl From<GitError> for Fault {
    fn from(error: GitError) -> Fault {
        Fault(error.to_string())
    }
}

/// An object id Git printed.
fn oid(text: &str) -> Result<Oid, Fault> {
    Oid::parse(text.trim()).map_err(|e| Fault(format!("git printed {e}")))
}

/// One ref-name component that needs no quoting anywhere bay puts it.
pub(crate) fn is_component(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(['.', '-'])
        && !text.ends_with(".lock")
        && !text.ends_with('.')
        && !text.contains("..")
        && !text.contains("@{")
        && text
            .chars()
            .all(|c| !c.is_control() && !" ~^:?*[\\/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_and_main_names_are_checked() {
        assert!(Repo::new("/x", "origin", "main").is_ok());
        assert!(Repo::new("/x", "origin", "release/v1").is_ok());
        assert!(Repo::new("/x", "a/b", "main").is_err());
        assert!(Repo::new("/x", "/srv/x.git", "main").is_err());
        assert!(Repo::new("/x", "origin", "ma:in").is_err());
        assert!(Repo::new("/x", "origin", "-main").is_err());
        assert!(Repo::new("/x", "", "main").is_err());
    }
}
