//! Local refs bay moves without a `git update-ref` process: the candidate's
//! `refs/bay/inflight/<op>`, the mirror's copy of what a push moved, a view's detached HEAD.
//! Each `git` costs about 2 ms, and a merge ran two `update-ref`s that only set refs no one
//! else writes.
//!
//! gitoxide's ref transactions do what Git's files backend does: every ref locked first, each
//! checked against the value it must have (compare-and-swap), loose files renamed into place,
//! `packed-refs` rewritten for a deletion, and a reflog entry written where Git would write
//! one (`core.logAllRefUpdates` as Git resolves it, `always` included, or a reflog the ref
//! already has), signed by the committer gix reads from the same config. What gix does not
//! do, the [`Gate`] leaves to `git`: a `reference-transaction` hook, reftable, fsync, shared
//! permissions, or a committer Git would find or write otherwise.

use std::sync::Mutex;

use bay_core::git::Oid;
use bay_core::machine::Fault;
use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
use gix::refs::{FullName, Target};

use crate::git::Location;
use crate::gitoxide::{Gate, from_gix, to_gix};

/// The refs of one repository, opened in-process.
#[derive(Debug)]
pub struct LocalRefs {
    repo: Mutex<gix::Repository>,
}

impl LocalRefs {
    /// The refs of the repository `location` names, to write; `None` when `git` must write
    /// them (see [`Gate`]).
    pub fn find(location: &Location) -> Option<LocalRefs> {
        let repo = crate::gitoxide::open(location)?;
        Gate::of(&repo).refs.then(|| LocalRefs {
            repo: Mutex::new(repo),
        })
    }

    /// The refs of the repository `location` names, for reading only: `None` when they are
    /// not files Git's files backend keeps (reftable).
    pub fn readable(location: &Location) -> Option<LocalRefs> {
        let repo = crate::gitoxide::open(location)?;
        let reftable = repo
            .config_snapshot()
            .string("extensions.refStorage")
            .is_some_and(|storage| storage != "files");
        (!reftable).then(|| LocalRefs {
            repo: Mutex::new(repo),
        })
    }

    fn repo(&self) -> std::sync::MutexGuard<'_, gix::Repository> {
        self.repo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of the ref `name`; `Ok(None)` when there is none. A symbolic ref is an
    /// error: Git must resolve it.
    pub fn value(&self, name: &str) -> Result<Option<Oid>, Fault> {
        let repo = self.repo();
        let odd = |e: &dyn std::fmt::Display| Fault(format!("cannot read {name}: {e}"));
        let Some(reference) = repo.try_find_reference(name).map_err(|e| odd(&e))? else {
            return Ok(None);
        };
        match reference.target() {
            gix::refs::TargetRef::Object(id) => from_gix(id).map(Some),
            gix::refs::TargetRef::Symbolic(_) => Err(odd(&"a symbolic ref")),
        }
    }

    /// The newest entry of the ref's reflog: the value it set and when, in seconds since the
    /// epoch; `Ok(None)` when the ref has no reflog or an empty one.
    pub fn newest_log(&self, name: &str) -> Result<Option<(Oid, u64)>, Fault> {
        let repo = self.repo();
        let odd = |e: &dyn std::fmt::Display| Fault(format!("cannot read {name}'s reflog: {e}"));
        let Some(reference) = repo.try_find_reference(name).map_err(|e| odd(&e))? else {
            return Ok(None);
        };
        let mut platform = reference.log_iter();
        let Some(mut lines) = platform.rev().map_err(|e| odd(&e))? else {
            return Ok(None);
        };
        let Some(line) = lines.next() else {
            return Ok(None);
        };
        let line = line.map_err(|e| odd(&e))?;
        let secs = u64::try_from(line.signature.time.seconds).map_err(|e| odd(&e))?;
        Ok(Some((from_gix(&line.new_oid)?, secs)))
    }

    /// Sets each ref to its value, or deletes it (`None`), as `git update-ref --stdin` with no
    /// old values would, in one transaction; with `keep_reflog`, each set ref gets a reflog
    /// entry, as under `core.logAllRefUpdates=always`.
    pub fn apply(&self, changes: &[(String, Option<Oid>)], keep_reflog: bool) -> Result<(), Fault> {
        let mut edits = Vec::with_capacity(changes.len());
        for (name, value) in changes {
            let change = match value {
                Some(value) => Change::Update {
                    log: LogChange {
                        mode: RefLog::AndReference,
                        force_create_reflog: keep_reflog,
                        message: Default::default(),
                    },
                    expected: PreviousValue::Any,
                    new: Target::Object(id(value)?),
                },
                None => Change::Delete {
                    expected: PreviousValue::Any,
                    log: RefLog::AndReference,
                },
            };
            edits.push(RefEdit::new(full_name(name)?, change));
        }
        self.edit(edits)
    }

    /// Moves the detached `HEAD` of this worktree from `old` to `new`, as `git update-ref
    /// --no-deref HEAD <new> <old>` does: a HEAD that no longer holds `old` is left alone and
    /// the move is a fault.
    pub fn move_head(&self, old: &Oid, new: &Oid) -> Result<(), Fault> {
        let edit = RefEdit {
            change: Change::Update {
                log: LogChange::default(),
                expected: PreviousValue::MustExistAndMatch(Target::Object(id(old)?)),
                new: Target::Object(id(new)?),
            },
            name: full_name("HEAD")?,
            deref: false,
        };
        self.edit(vec![edit])
    }

    fn edit(&self, edits: Vec<RefEdit>) -> Result<(), Fault> {
        if edits.is_empty() {
            return Ok(());
        }
        self.repo()
            .edit_references(edits)
            .map(|_| ())
            .map_err(|e| Fault(format!("cannot move local refs: {e}")))
    }
}

fn id(oid: &Oid) -> Result<gix::ObjectId, Fault> {
    to_gix(oid).ok_or_else(|| Fault(format!("{oid} is not an object id")))
}

fn full_name(name: &str) -> Result<FullName, Fault> {
    FullName::try_from(name).map_err(|e| Fault(format!("{name:?} is not a ref name: {e}")))
}
