//! The Git objects bay writes (step, log, presence and notes commits, candidates, drafts, note
//! blobs, trees, the empty tree), written by this process through gitoxide's object database.
//!
//! Each `git commit-tree`, `git mktree` or `git hash-object -w` costs a process, about 2.5 ms,
//! and one `bay merge --wait` wrote eight objects that way. gix hashes with collision
//! detection (SHA-1 as Git's own `sha1dc`, or SHA-256) and writes loose objects as Git does.
//!
//! Only where the result is what Git would write: [`crate::gitoxide::Gate`] decides once, from
//! the config Git resolves for the repository (every level, includes), before anything is
//! written. Where it does not allow it, `git` writes the object, as it did before; and a
//! commit whose identity Git would rewrite is left to `git` too. Like every Git call bay makes
//! (see [`crate::git`]), the objects go into the repository's own store, never one that
//! `GIT_OBJECT_DIRECTORY` names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use bay_core::git::Oid;
use bay_core::machine::Fault;
use gix::bstr::BString;

use crate::git::{Git, Location};
use crate::gitoxide::{Gate, from_gix, to_gix};

/// Who bay's commits (steps, notes, candidates, drafts) are by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            name: "bay".into(),
            email: "bay@localhost".into(),
        }
    }
}

impl Identity {
    /// Whether Git writes this name and email as they are. Git's `ident.c` strips "crud"
    /// (control characters, spaces and `.,:;<>"\'`) from both ends, drops `<`, `>` and newlines
    /// inside, and refuses an empty name.
    pub(crate) fn is_plain(&self) -> bool {
        let crud = |c: char| c <= ' ' || ".,:;<>\"\\'".contains(c);
        [&self.name, &self.email].iter().all(|text| {
            !text.is_empty()
                && !text.starts_with(crud)
                && !text.ends_with(crud)
                && !text.contains(['<', '>', '\n', '\0'])
        })
    }
}

/// A repository opened for writing objects in-process, with what its gate allows.
#[derive(Debug)]
pub(crate) struct Store {
    repo: Mutex<gix::Repository>,
    gate: Gate,
    objects_dir: PathBuf,
}

impl Store {
    /// The repository `location` names, when this process may write objects into it.
    fn open(location: &Location) -> Option<Store> {
        let repo = crate::gitoxide::open(location)?;
        let gate = Gate::of(&repo);
        if !gate.objects {
            return None;
        }
        let objects_dir = repo.common_dir().join("objects");
        Some(Store {
            repo: Mutex::new(repo),
            gate,
            objects_dir,
        })
    }

    /// The kind of id the repository's objects have.
    pub(crate) fn object_hash(&self) -> gix::hash::Kind {
        self.repo().object_hash()
    }

    /// The repository, for one write.
    fn repo(&self) -> std::sync::MutexGuard<'_, gix::Repository> {
        self.repo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes one object (unless it is there already) and gives its id, naming what failed.
    ///
    /// An object already there as a loose file gets a fresh modification time, as Git gives
    /// it, which keeps a concurrent `git gc` from pruning it just as a ref comes to name it.
    pub(crate) fn write(&self, object: impl gix::objs::WriteTo) -> Result<Oid, Fault> {
        let kind = object.kind();
        let id = self
            .repo()
            .write_object(object)
            .map(|id| id.detach())
            .map_err(|e| {
                Fault(format!(
                    "cannot write a {kind} into {}: {e}",
                    self.objects_dir.display()
                ))
            })?;
        let hex = id.to_hex().to_string();
        if let Ok(file) = std::fs::File::open(self.objects_dir.join(&hex[..2]).join(&hex[2..])) {
            let _ = file.set_modified(std::time::SystemTime::now());
        }
        from_gix(&id)
    }
}

/// A tree of `entries` (by name), as gix writes it: in Git's order, where a subtree's name
/// sorts as if it ended in `/`.
pub(crate) fn tree_object(
    entries: impl IntoIterator<Item = (Vec<u8>, String, Oid)>,
) -> Result<gix::objs::Tree, Fault> {
    let mut tree = gix::objs::Tree::empty();
    for (name, mode, id) in entries {
        let bad = || Fault(format!("a tree entry bay cannot write: {mode} {id}"));
        let mode = gix::objs::tree::EntryMode::from_bytes(mode.as_bytes()).ok_or_else(bad)?;
        tree.entries.push(gix::objs::tree::Entry {
            mode,
            filename: BString::from(name),
            oid: to_gix(&id).ok_or_else(bad)?,
        });
    }
    tree.entries.sort();
    Ok(tree)
}

/// Where one repository's objects get written: by this process when its gate allows it, else
/// by `git` as before. The repository is opened once, at the first write.
#[derive(Clone, Debug)]
pub struct Objects {
    location: Location,
    store: std::sync::Arc<OnceLock<Option<Store>>>,
}

impl Objects {
    pub fn new(location: Location) -> Objects {
        Objects {
            location,
            store: Default::default(),
        }
    }

    /// The store this process writes into, when writing there is what Git would do.
    pub(crate) fn store(&self) -> Option<&Store> {
        self.store
            .get_or_init(|| Store::open(&self.location))
            .as_ref()
    }

    /// Whether this process writes the objects itself.
    pub fn in_process(&self) -> bool {
        self.store().is_some()
    }

    /// The commit of `tree` on `parents` with `message` (kept as given), by `identity`, now;
    /// never signed (a signing prompt would hang). `git` is the repository, for the fallback.
    pub fn commit(
        &self,
        git: &Git,
        identity: &Identity,
        tree: &Oid,
        parents: &[&Oid],
        message: &str,
    ) -> Result<Oid, Fault> {
        if let Some(store) = self.store().filter(|store| store.gate.commits)
            && let Some(commit) = commit_object(tree, parents, identity, message)
        {
            return store.write(commit);
        }
        let mut call = git.cmd(["commit-tree", "--no-gpg-sign", tree.as_str()]);
        for parent in parents {
            call = call.arg("-p").arg(parent.as_str());
        }
        let call = call
            .env("GIT_AUTHOR_NAME", &identity.name)
            .env("GIT_AUTHOR_EMAIL", &identity.email)
            .env("GIT_COMMITTER_NAME", &identity.name)
            .env("GIT_COMMITTER_EMAIL", &identity.email)
            .args(["-F", "-"])
            .stdin(message.as_bytes());
        printed(&call.text()?)
    }

    /// The blob of `bytes`, as `git hash-object -w --stdin` writes it (no filters: the bytes
    /// are the blob).
    pub fn blob(&self, git: &Git, bytes: Vec<u8>) -> Result<Oid, Fault> {
        match self.store() {
            Some(store) => store.write(gix::objs::Blob { data: bytes }),
            None => printed(
                &git.cmd(["hash-object", "-w", "--stdin"])
                    .stdin(bytes)
                    .text()?,
            ),
        }
    }

    /// The tree of `entries` (by name), as `git mktree` writes it.
    pub fn tree(
        &self,
        git: &Git,
        entries: &BTreeMap<Vec<u8>, crate::trees::Entry>,
    ) -> Result<Oid, Fault> {
        let Some(store) = self.store() else {
            let mut listing = Vec::new();
            for (name, entry) in entries {
                listing.extend_from_slice(
                    format!("{} {} {}\t", entry.mode, entry.kind(), entry.id).as_bytes(),
                );
                listing.extend_from_slice(name);
                listing.push(0);
            }
            return printed(&git.cmd(["mktree", "-z"]).stdin(listing).text()?);
        };
        store.write(tree_object(entries.iter().map(|(name, entry)| {
            (name.clone(), entry.mode.clone(), entry.id.clone())
        }))?)
    }

    /// The empty tree. Git knows its id without having it, but a push carries only objects
    /// that are in the store, so it is written.
    pub fn empty_tree(&self, git: &Git) -> Result<Oid, Fault> {
        match self.store() {
            Some(store) => store.write(gix::objs::Tree::empty()),
            None => printed(&git.cmd(["mktree"]).stdin(Vec::new()).text()?),
        }
    }
}

/// The commit `git commit-tree <tree> -p <parent>... -F -` writes for `message`, by and for
/// `identity`, now in UTC; `None` when Git would write other bytes than these.
///
/// Git keeps the message exactly as given (no newline added, nothing stripped), except that
/// it refuses a NUL and, taking any text that is not UTF-8 for Latin-1, rewrites the
/// noncharacters its UTF-8 check rejects (`utf8.c`: U+FDD0 to U+FDEF, and any ending in FFFE
/// or FFFF).
fn commit_object(
    tree: &Oid,
    parents: &[&Oid],
    identity: &Identity,
    message: &str,
) -> Option<gix::objs::Commit> {
    let rewritten = |c: char| {
        let code = u32::from(c);
        c == '\0' || (0xfdd0..=0xfdef).contains(&code) || code & 0xfffe == 0xfffe
    };
    if !identity.is_plain() || message.contains(rewritten) {
        return None;
    }
    let secs = crate::clock::now().secs();
    let who = gix::actor::Signature {
        name: identity.name.as_str().into(),
        email: identity.email.as_str().into(),
        time: gix::date::Time::new(i64::try_from(secs).ok()?, 0),
    };
    Some(gix::objs::Commit {
        tree: to_gix(tree)?,
        parents: parents
            .iter()
            .map(|parent| to_gix(parent))
            .collect::<Option<_>>()?,
        author: who.clone(),
        committer: who,
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    })
}

/// The Git directory a linked worktree's `.git` file names, made absolute.
pub(crate) fn linked_git_dir(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join(".git")).ok()?;
    Some(dir.join(text.trim().strip_prefix("gitdir: ")?))
}

/// An object id Git printed.
fn printed(text: &str) -> Result<Oid, Fault> {
    Oid::parse(text.trim()).map_err(|e| Fault(format!("git printed {e}")))
}
