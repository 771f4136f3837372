//! The Git objects bay writes (step, log, presence and notes commits, candidates, drafts, note
//! blobs, the empty tree), written by this process into the repository's loose object store.
//!
//! Each `git commit-tree`, `git mktree` or `git hash-object -w` costs a process, about 2.5 ms,
//! and one `bay merge --wait` wrote eight objects that way. A loose object is simple to write
//! as Git does: the file `objects/<2 hex>/<38 hex>` holds, zlib-wrapped, the header
//! `<type> <length>\0` and the body, and the object's id is the SHA-1 of header and body.
//!
//! Only where the result is provably what Git would write. [`Objects`] decides once, before
//! anything is written, by reading files and spawning nothing: the repository is found (a
//! worktree's `.git`, a linked worktree's `commondir`, a bare directory), its object format is
//! SHA-1, and nothing in its config changes how or what Git writes (another object format, a
//! compatibility format, shared permissions, fsync, a commit encoding, or an include that could
//! bring any of them). A commit is written here only when Git would keep its text as given.
//! Otherwise `git` writes the object, as it did before. Like every Git call bay makes (see
//! [`crate::git`]), the objects go into the repository's own store, never one that
//! `GIT_OBJECT_DIRECTORY` names.

pub(crate) mod sha1;
mod zlib;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::SystemTime;

use bay_core::git::Oid;
use bay_core::machine::Fault;

use crate::git::{Git, Location};

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

/// The kinds of object bay writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Blob,
    Tree,
    Commit,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Blob => "blob",
            Kind::Tree => "tree",
            Kind::Commit => "commit",
        }
    }
}

/// Config words that change how or what Git writes: any mention sends writing back to `git`.
/// Lower case, as Git's keys are case-insensitive. `objectformat` also matches
/// `compatobjectformat`, `fsync` every fsync key, `include` both include forms.
const UNUSUAL: [&str; 5] = [
    "objectformat",
    "sharedrepository",
    "fsync",
    "commitencoding",
    "include",
];

/// A repository's loose object directory, known to hold SHA-1 objects written as Git writes
/// them by default.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store of the repository `location` names, or `None` when this process cannot tell
    /// for sure that writing there is what Git would do.
    pub fn find(location: &Location) -> Option<Store> {
        let dirs = Dirs::find(location)?;
        let dir = dirs.common.join("objects");
        if !dir.is_dir() || dirs.config_mentions(&UNUSUAL) {
            return None;
        }
        Some(Store { dir })
    }

    /// Writes one object, unless it is there already, and gives its id.
    ///
    /// As Git does: the file is written under a temporary name in its fan-out directory, read
    /// only (0444 less the umask), then linked into place without replacing anything, so no
    /// reader ever sees half an object. An object already there gets a fresh modification time
    /// instead, which keeps a concurrent `git gc` from pruning it just as a ref comes to name
    /// it; Git goes on as well when that fails.
    pub fn write(&self, kind: Kind, body: &[u8]) -> std::io::Result<Oid> {
        let mut object = format!("{} {}\0", kind.name(), body.len()).into_bytes();
        object.extend_from_slice(body);
        let mut sha = sha1::Sha1::default();
        sha.update(&object);
        let id = Oid::from_raw(&sha.finish()).expect("a SHA-1 digest is 20 bytes");
        let hex = id.as_str();
        let fan = self.dir.join(&hex[..2]);
        let path = fan.join(&hex[2..]);
        if let Ok(file) = File::open(&path) {
            let _ = file.set_modified(SystemTime::now());
            return Ok(id);
        }
        match std::fs::create_dir(&fan) {
            Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
            _ => {}
        }
        let mut file = tempfile::Builder::new()
            .prefix("tmp_obj_")
            .permissions(std::fs::Permissions::from_mode(0o444))
            .tempfile_in(&fan)?;
        file.write_all(&zlib::stored(&object))?;
        match file.persist_noclobber(&path) {
            // Another writer put the same object there first.
            Err(e) if e.error.kind() == ErrorKind::AlreadyExists => Ok(id),
            Err(e) => Err(e.error),
            Ok(_) => Ok(id),
        }
    }
}

/// A repository's own Git directory and the common one its worktrees share, found by reading
/// files, for the parts of the driver that write into them without `git`.
#[derive(Clone, Debug)]
pub(crate) struct Dirs {
    pub git_dir: PathBuf,
    pub common: PathBuf,
}

impl Dirs {
    /// The directories of the repository `location` names; `None` when config given on Git's
    /// command line could say anything (it reaches every `git` bay runs and is not read
    /// here), or the repository cannot be found by reading files.
    pub fn find(location: &Location) -> Option<Dirs> {
        if ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"]
            .iter()
            .any(|name| std::env::var_os(name).is_some())
        {
            return None;
        }
        let git_dir = match location {
            Location::GitDir(dir) => dir.clone(),
            Location::Dir(dir) => repository_dir(dir)?,
        };
        Dirs::of_git_dir(git_dir)
    }

    /// The directories of the repository whose own Git directory is `git_dir`: the common
    /// one is what its `commondir` names, else itself.
    pub fn of_git_dir(git_dir: PathBuf) -> Option<Dirs> {
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(text) => git_dir.join(text.trim_end_matches(['\n', '\r'])),
            Err(e) if e.kind() == ErrorKind::NotFound => git_dir.clone(),
            Err(_) => return None,
        };
        Some(Dirs { git_dir, common })
    }

    /// The repository's config file and the worktree's, lower-cased and without spaces; `None`
    /// when one cannot be read. An absent file is empty.
    pub fn config_texts(&self) -> Option<Vec<String>> {
        let mut texts = Vec::new();
        for config in [
            self.common.join("config"),
            self.git_dir.join("config.worktree"),
        ] {
            match std::fs::read(&config) {
                Ok(bytes) => texts.push(
                    String::from_utf8_lossy(&bytes)
                        .to_lowercase()
                        .replace(char::is_whitespace, ""),
                ),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(_) => return None,
            }
        }
        Some(texts)
    }

    /// Whether Git would run a `reference-transaction` hook on every ref it moves here (a
    /// hooks path set in config is looked for by the callers' config words).
    pub fn has_transaction_hook(&self) -> bool {
        self.common
            .join("hooks")
            .join("reference-transaction")
            .exists()
    }

    /// Whether the repository's config file or the worktree's mentions any of `words` (lower
    /// case, no spaces: the config is read lower-cased and without its spaces, so that
    /// `logallrefupdates=always` matches however it is written), or cannot be read.
    /// Extensions are read from the repository's own config file alone, as Git reads them;
    /// the worktree's config is read for the other words.
    pub fn config_mentions(&self, words: &[&str]) -> bool {
        self.config_texts().is_none_or(|texts| {
            texts
                .iter()
                .any(|text| words.iter().any(|word| text.contains(word)))
        })
    }
}

/// The repository whose worktree (or bare directory) is `dir`, as Git finds it from there
/// without looking further up.
fn repository_dir(dir: &Path) -> Option<PathBuf> {
    let dot = dir.join(".git");
    if dot.is_dir() {
        return Some(dot);
    }
    if dot.is_file() {
        return linked_git_dir(dir);
    }
    (dir.join("HEAD").is_file() && dir.join("objects").is_dir()).then(|| dir.to_path_buf())
}

/// The Git directory a linked worktree's `.git` file names, made absolute.
pub(crate) fn linked_git_dir(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join(".git")).ok()?;
    Some(dir.join(text.trim().strip_prefix("gitdir: ")?))
}

/// The bytes of the commit `git commit-tree <tree> -p <parent>... -F -` writes for `message`,
/// by and for `identity` at `secs` past the epoch in UTC; `None` when Git would write other
/// bytes than these.
///
/// Git keeps the message exactly as given (no newline added, nothing stripped), except that
/// it refuses a NUL and, taking any text that is not UTF-8 for Latin-1, rewrites the
/// noncharacters its UTF-8 check rejects (`utf8.c`: U+FDD0 to U+FDEF, and any ending in FFFE
/// or FFFF).
pub fn commit_body(
    tree: &Oid,
    parents: &[&Oid],
    identity: &Identity,
    secs: u64,
    message: &str,
) -> Option<Vec<u8>> {
    let rewritten = |c: char| {
        let code = u32::from(c);
        c == '\0' || (0xfdd0..=0xfdef).contains(&code) || code & 0xfffe == 0xfffe
    };
    if !identity.is_plain() || message.contains(rewritten) {
        return None;
    }
    let mut text = format!("tree {tree}\n");
    for parent in parents {
        text.push_str(&format!("parent {parent}\n"));
    }
    let who = format!("{} <{}> {secs} +0000", identity.name, identity.email);
    text.push_str(&format!("author {who}\ncommitter {who}\n\n{message}"));
    Some(text.into_bytes())
}

/// Where one repository's objects get written: by this process when its [`Store`] allows it,
/// else by `git` as before. The store is looked for once, at the first write.
#[derive(Clone, Debug)]
pub struct Objects {
    location: Location,
    store: OnceLock<Option<Store>>,
}

impl Objects {
    pub fn new(location: Location) -> Objects {
        Objects {
            location,
            store: OnceLock::new(),
        }
    }

    /// The store this process writes into, when writing there is what Git would do.
    pub(crate) fn store(&self) -> Option<&Store> {
        self.store
            .get_or_init(|| Store::find(&self.location))
            .as_ref()
    }

    /// Writes one object through the store, naming what failed.
    fn write(store: &Store, kind: Kind, body: &[u8]) -> Result<Oid, Fault> {
        store.write(kind, body).map_err(|e| {
            Fault(format!(
                "cannot write a {} into {}: {e}",
                kind.name(),
                store.dir.display()
            ))
        })
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
        if let Some(store) = self.store() {
            let secs = crate::clock::now().secs();
            if let Some(body) = commit_body(tree, parents, identity, secs, message) {
                return Objects::write(store, Kind::Commit, &body);
            }
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
            Some(store) => Objects::write(store, Kind::Blob, &bytes),
            None => printed(
                &git.cmd(["hash-object", "-w", "--stdin"])
                    .stdin(bytes)
                    .text()?,
            ),
        }
    }

    /// The tree of `entries` (by name), as `git mktree` writes it: in Git's order, where a
    /// subtree's name sorts as if it ended in `/`.
    pub fn tree(
        &self,
        git: &Git,
        entries: &BTreeMap<Vec<u8>, crate::trees::Entry>,
    ) -> Result<Oid, Fault> {
        let mut sorted: Vec<(Vec<u8>, &crate::trees::Entry)> = entries
            .iter()
            .map(|(name, entry)| {
                let mut key = name.clone();
                if entry.is_tree() {
                    key.push(b'/');
                }
                (key, entry)
            })
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let Some(store) = self.store() else {
            let mut listing = Vec::new();
            for (key, entry) in &sorted {
                let name = key.strip_suffix(b"/").unwrap_or(key);
                listing.extend_from_slice(
                    format!("{} {} {}\t", entry.mode, entry.kind(), entry.id).as_bytes(),
                );
                listing.extend_from_slice(name);
                listing.push(0);
            }
            return printed(&git.cmd(["mktree", "-z"]).stdin(listing).text()?);
        };
        let mut body = Vec::new();
        for (key, entry) in &sorted {
            let name = key.strip_suffix(b"/").unwrap_or(key);
            body.extend_from_slice(entry.mode.as_bytes());
            body.push(b' ');
            body.extend_from_slice(name);
            body.push(0);
            body.extend_from_slice(&entry.id.to_raw());
        }
        Objects::write(store, Kind::Tree, &body)
    }

    /// The empty tree. Git knows its id without having it, but a push carries only objects
    /// that are in the store, so it is written.
    pub fn empty_tree(&self, git: &Git) -> Result<Oid, Fault> {
        match self.store() {
            Some(store) => Objects::write(store, Kind::Tree, &[]),
            None => printed(&git.cmd(["mktree"]).stdin(Vec::new()).text()?),
        }
    }
}

/// An object id Git printed.
fn printed(text: &str) -> Result<Oid, Fault> {
    Oid::parse(text.trim()).map_err(|e| Fault(format!("git printed {e}")))
}
