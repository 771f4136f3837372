//! Reading objects in-process, through gitoxide's object database: one repository opened per
//! clone at its first read, and asked everything after.
//!
//! A `git` process costs about 2 ms to start, and one `bay merge --wait` read objects in six of
//! them (the config, the policy, step messages, the view's tree, main's tree); a long-lived
//! `git cat-file --batch-command` then cost two threads and a bound on every exchange.
//!
//! Only objects named from an object id are read here (`<oid>`, `<oid>:<path>`,
//! `<oid>^{tree}`, `<oid>^{commit}`): an id names the same object in every worktree of the
//! clone and at every moment, so one opened repository serves every worktree and never
//! answers from a stale ref. gix looks again at the object store for an object it does not
//! find (a fetch may have added a pack), so objects written after it opened are read too.

use std::sync::Mutex;

use bay_core::machine::Fault;

use crate::git::{Git, Location};

/// What Git answered for one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    Found {
        kind: String,
        body: Vec<u8>,
    },
    /// No such object, or a name that does not resolve to one.
    Missing,
}

/// Reads objects of one clone, opened at the first read.
#[derive(Debug)]
pub struct Reader {
    location: Location,
    repo: Mutex<Option<gix::Repository>>,
}

impl Reader {
    /// A reader of the repository `git` names.
    pub fn new(git: Git) -> Reader {
        Reader {
            location: git.location().clone(),
            repo: Mutex::new(None),
        }
    }

    /// Opens the repository now, if it is not open, so that the first read does not wait for
    /// it. A failure here is left for that read to meet and report.
    pub fn warm(&self) {
        let mut slot = self.repo.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = crate::gitoxide::open(&self.location).or_else(|| open_plainly(&self.location));
        }
    }

    /// The repository slot, opened first if it was not.
    fn opened(&self) -> std::sync::MutexGuard<'_, Option<gix::Repository>> {
        self.warm();
        self.repo.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The repository an opened slot holds, or a fault saying it could not be opened to read
    /// `what`.
    fn repository<'a>(
        &self,
        slot: &'a Option<gix::Repository>,
        what: &str,
    ) -> Result<&'a gix::Repository, Fault> {
        slot.as_ref().ok_or_else(|| {
            Fault(format!(
                "cannot open the repository at {:?} to read {what}",
                self.location
            ))
        })
    }

    /// What `read` makes of the repository, opened first if it was not; `what` names the read
    /// in the fault when it cannot be opened.
    pub fn with_repository<T>(
        &self,
        what: &str,
        read: impl FnOnce(&gix::Repository) -> Result<T, Fault>,
    ) -> Result<T, Fault> {
        let slot = self.opened();
        read(self.repository(&slot, what)?)
    }

    /// The objects `names` name, in order. A name must start with an object id.
    pub fn read(&self, names: &[String]) -> Result<Vec<Object>, Fault> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut parsed = Vec::with_capacity(names.len());
        for name in names {
            parsed.push(Name::parse(name).ok_or_else(|| {
                Fault(format!(
                    "cannot look up {name:?}: bay reads objects by id alone"
                ))
            })?);
        }
        self.with_repository("objects", |repo| {
            parsed.into_iter().map(|name| name.look_up(repo)).collect()
        })
    }

    /// The refs under the folder `dir` (a ref name, without the trailing `/`), the newest
    /// committed first, at most `limit`: as `git for-each-ref --sort=-committerdate
    /// --count=<limit>` lists them, ties by name. A ref to no commit sorts as Git sorts it,
    /// oldest; a symbolic ref is an error, for Git to resolve.
    ///
    /// `Ok(None)` where the refs are not files Git's files backend keeps (reftable), or the
    /// repository cannot be opened: the caller asks Git.
    pub fn newest_refs_under(
        &self,
        dir: &str,
        limit: u32,
    ) -> Result<Option<Vec<(String, bay_core::git::Oid)>>, Fault> {
        let slot = self.opened();
        let Some(repo) = slot.as_ref() else {
            return Ok(None);
        };
        let reftable = repo
            .config_snapshot()
            .string("extensions.refStorage")
            .is_some_and(|storage| storage != "files");
        if reftable {
            return Ok(None);
        }
        let odd = |e: &dyn std::fmt::Display| Fault(format!("cannot list {dir}/: {e}"));
        let platform = repo.references().map_err(|e| odd(&e))?;
        let prefix = format!("{dir}/");
        let mut listed = Vec::new();
        for reference in platform.prefixed(prefix.as_str()).map_err(|e| odd(&e))? {
            let reference = reference.map_err(|e| odd(&e))?;
            let name = reference.name().as_bstr().to_string();
            let gix::refs::TargetRef::Object(id) = reference.target() else {
                return Err(odd(&format!("{name} is a symbolic ref")));
            };
            let time = repo
                .find_commit(id)
                .ok()
                .and_then(|commit| commit.time().ok())
                .map_or(0, |time| time.seconds);
            listed.push((
                std::cmp::Reverse(time),
                name,
                crate::gitoxide::from_gix(id)?,
            ));
        }
        listed.sort();
        Ok(Some(
            listed
                .into_iter()
                .take(limit as usize)
                .map(|(_, name, oid)| (name, oid))
                .collect(),
        ))
    }

    /// The best common ancestor of two commits, as `git merge-base` names it (of several, the
    /// first its walk finds; a contract case holds gix and Git together); `None` when they
    /// share no history. A name that is not a commit here is a fault, as it is to Git.
    pub fn merge_base(
        &self,
        one: &bay_core::git::Oid,
        two: &bay_core::git::Oid,
    ) -> Result<Option<bay_core::git::Oid>, Fault> {
        self.with_repository("commits", |repo| {
            let commit = |oid: &bay_core::git::Oid| {
                let id = crate::gitoxide::gix_id(oid)?;
                repo.find_commit(id)
                    .map(|_| id)
                    .map_err(|e| Fault(format!("no commit {oid} to take a merge base of: {e}")))
            };
            let (a, b) = (commit(one)?, commit(two)?);
            let base = repo
                .merge_base(a, b)
                .map_err(|e| Fault(format!("the merge base of {one} and {two}: {e}")))?;
            base.map(|id| crate::gitoxide::from_gix(&id)).transpose()
        })
    }

    /// The first-parent line from the commit `tip`, newest first: at most `limit` commits, and
    /// with `since` none from the first whose committer time is older, as Git's `--max-age`
    /// stops a first-parent walk. Each commit with its message as stored. A commit missing on
    /// the way is a fault, as it is to `git log`.
    pub fn first_parents(
        &self,
        tip: &bay_core::git::Oid,
        limit: u32,
        since: Option<bay_core::time::Timestamp>,
    ) -> Result<Vec<(bay_core::git::Oid, Vec<u8>)>, Fault> {
        self.walk(tip, limit, since, |id, commit| {
            Ok((id, commit.message_raw_sloppy().to_vec()))
        })
    }

    /// The same line as [`Reader::first_parents`], each commit as `git log` in bay's format
    /// shows it: id, parents, committer time and `Name <email>`, and its message.
    pub fn main_commits(
        &self,
        tip: &bay_core::git::Oid,
        limit: u32,
        since: Option<bay_core::time::Timestamp>,
    ) -> Result<Vec<bay_core::machine::MainCommit>, Fault> {
        self.walk(tip, limit, since, main_commit)
    }

    /// What the merge `merge` brought in that its first parent `first` lacks, as Git's
    /// `rev-list <merge> ^<first>` walks it (newest by commit time first), the merge itself
    /// left out: how many commits, and the newest `keep` of them read whole. The walk is the
    /// range's, however long the history below `first`.
    pub fn brought_in(
        &self,
        merge: &bay_core::git::Oid,
        first: &bay_core::git::Oid,
        keep: usize,
    ) -> Result<(u64, Vec<bay_core::machine::MainCommit>), Fault> {
        self.with_repository("commits", |repo| {
            let (merge_id, first_id) = (
                crate::gitoxide::gix_id(merge)?,
                crate::gitoxide::gix_id(first)?,
            );
            let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot walk {merge}: {e}"));
            let walk = repo
                .rev_walk([merge_id])
                .with_hidden([first_id])
                .sorting(gix::revision::walk::Sorting::ByCommitTime(
                    Default::default(),
                ))
                .all()
                .map_err(|e| broken(&e))?;
            let (mut count, mut newest) = (0, Vec::new());
            for info in walk {
                let info = info.map_err(|e| broken(&e))?;
                if info.id == merge_id {
                    continue;
                }
                count += 1;
                if newest.len() < keep {
                    let commit = repo.find_commit(info.id).map_err(|e| broken(&e))?;
                    newest.push(main_commit(crate::gitoxide::from_gix(&info.id)?, &commit)?);
                }
            }
            Ok((count, newest))
        })
    }

    /// The ids of the first-parent line from `tip` down to `until`, which is left out, newest
    /// first; with `since` the walk stops at the first commit older than that, as
    /// [`Reader::first_parents`] does. `None` when the walk ends (a root, or `since`) without
    /// meeting `until`: a `from..to` off the line is Git's to answer. Only the range is read,
    /// and no message, so the cost is the range's, however long the line below it.
    pub fn first_parent_ids_until(
        &self,
        tip: &bay_core::git::Oid,
        until: Option<&bay_core::git::Oid>,
        since: Option<bay_core::time::Timestamp>,
    ) -> Result<Option<Vec<bay_core::git::Oid>>, Fault> {
        let (line, met) = self.walk_until(tip, u32::MAX, since, until, |oid, _| Ok(oid))?;
        Ok((until.is_none() || met).then_some(line))
    }

    /// Walks the first-parent line from `tip` as [`Reader::first_parents`] says, taking what
    /// `each` makes of every commit.
    fn walk<T>(
        &self,
        tip: &bay_core::git::Oid,
        limit: u32,
        since: Option<bay_core::time::Timestamp>,
        each: impl FnMut(bay_core::git::Oid, &gix::Commit<'_>) -> Result<T, Fault>,
    ) -> Result<Vec<T>, Fault> {
        Ok(self.walk_until(tip, limit, since, None, each)?.0)
    }

    /// [`Reader::walk`], stopping before `until` too; whether it met `until`.
    fn walk_until<T>(
        &self,
        tip: &bay_core::git::Oid,
        limit: u32,
        since: Option<bay_core::time::Timestamp>,
        until: Option<&bay_core::git::Oid>,
        mut each: impl FnMut(bay_core::git::Oid, &gix::Commit<'_>) -> Result<T, Fault>,
    ) -> Result<(Vec<T>, bool), Fault> {
        self.with_repository("commits", |repo| {
            let mut line = Vec::new();
            let mut at = crate::gitoxide::to_gix(tip);
            while let Some(id) = at.filter(|_| line.len() < limit as usize) {
                let oid = crate::gitoxide::from_gix(&id)?;
                if Some(&oid) == until {
                    return Ok((line, true));
                }
                let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read {id}: {e}"));
                let commit = repo.find_commit(id).map_err(|e| broken(&e))?;
                let time = commit.time().map_err(|e| broken(&e))?;
                let before_since = since.is_some_and(|since| {
                    time.seconds < i64::try_from(since.secs()).unwrap_or(i64::MAX)
                });
                if before_since {
                    break;
                }
                line.push(each(oid, &commit)?);
                at = commit.parent_ids().next().map(|parent| parent.detach());
            }
            Ok((line, false))
        })
    }

    /// The newest of the newest `within` commits on `tip`'s first-parent line that holds `path`
    /// where its first parent does not (a root commit holding it added it), as Git's
    /// `log --first-parent --diff-filter=A -- <path>` over that stretch finds it. Each commit's
    /// tree is looked up once along the walk, so the cost is bounded by `within`, not by how
    /// long the line is.
    pub fn newest_adding(
        &self,
        tip: &bay_core::git::Oid,
        path: &str,
        within: u32,
    ) -> Result<Option<bay_core::git::Oid>, Fault> {
        self.with_repository("commits", |repo| {
            // Whether a commit holds `path`, and its first parent.
            let read = |id: gix::ObjectId| -> Result<(bool, Option<gix::ObjectId>), Fault> {
                let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read {id}: {e}"));
                let commit = repo.find_commit(id).map_err(|e| broken(&e))?;
                let tree = commit.tree().map_err(|e| broken(&e))?;
                let holds = tree
                    .lookup_entry_by_path(path)
                    .map_err(|e| broken(&e))?
                    .is_some();
                Ok((holds, commit.parent_ids().next().map(|p| p.detach())))
            };
            let start = crate::gitoxide::gix_id(tip)?;
            let (mut holds, mut parent) = read(start)?;
            let mut at = start;
            for _ in 0..within {
                let (parent_holds, grandparent) = match parent {
                    Some(parent) => read(parent)?,
                    None => (false, None),
                };
                if holds && !parent_holds {
                    return crate::gitoxide::from_gix(&at).map(Some);
                }
                let Some(next) = parent else {
                    return Ok(None);
                };
                (at, holds, parent) = (next, parent_holds, grandparent);
            }
            Ok(None)
        })
    }
}

/// `commit`, whose id is `oid`, as a history read answers it.
fn main_commit(
    oid: bay_core::git::Oid,
    commit: &gix::Commit<'_>,
) -> Result<bay_core::machine::MainCommit, Fault> {
    let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read {oid}: {e}"));
    let parents = commit
        .parent_ids()
        .map(|parent| crate::gitoxide::from_gix(&parent))
        .collect::<Result<Vec<_>, Fault>>()?;
    let committer = commit.committer().map_err(|e| broken(&e))?;
    let seconds = committer.time().map_err(|e| broken(&e))?.seconds;
    Ok(bay_core::machine::MainCommit {
        at: bay_core::time::Timestamp::from_secs(u64::try_from(seconds).unwrap_or(0)),
        committer: format!("{} <{}>", committer.name, committer.email),
        message: String::from_utf8_lossy(commit.message_raw_sloppy()).into_owned(),
        off_first_parent: 0,
        brought: Vec::new(),
        oid,
        parents,
    })
}

/// The repository at `location` opened with its own config alone: reads do not depend on
/// config beyond the repository's, so a clone whose user config gix cannot take is still read.
fn open_plainly(location: &Location) -> Option<gix::Repository> {
    let path = match location {
        Location::Dir(dir) | Location::GitDir(dir) => dir.clone(),
    };
    gix::open::Options::isolated()
        .open_path_as_is(matches!(location, Location::GitDir(_)))
        .open(path)
        .ok()
}

/// A name read here: an object id, and what to take from its object.
struct Name<'a> {
    id: gix::ObjectId,
    then: Then<'a>,
}

enum Then<'a> {
    Itself,
    Peel(gix::object::Kind),
    Path(&'a str),
}

impl<'a> Name<'a> {
    /// `<oid>`, `<oid>^{tree}`, `<oid>^{commit}` or `<oid>:<path>`; `None` for anything else.
    fn parse(name: &'a str) -> Option<Name<'a>> {
        let hex = name.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex != 40 && hex != 64 {
            return None;
        }
        let id = gix::ObjectId::from_hex(&name.as_bytes()[..hex]).ok()?;
        let then = match &name[hex..] {
            "" => Then::Itself,
            "^{tree}" => Then::Peel(gix::object::Kind::Tree),
            "^{commit}" => Then::Peel(gix::object::Kind::Commit),
            rest => Then::Path(rest.strip_prefix(':')?),
        };
        Some(Name { id, then })
    }

    fn look_up(self, repo: &gix::Repository) -> Result<Object, Fault> {
        let broken = |e: &dyn std::fmt::Display| Fault(format!("cannot read {}: {e}", self.id));
        let Some(object) = repo.try_find_object(self.id).map_err(|e| broken(&e))? else {
            return Ok(Object::Missing);
        };
        let object = match self.then {
            Then::Itself => object,
            Then::Peel(kind) => match object.peel_to_kind(kind) {
                Ok(object) => object,
                Err(_) => return Ok(Object::Missing),
            },
            Then::Path(path) => {
                let Ok(tree) = object.peel_to_tree() else {
                    return Ok(Object::Missing);
                };
                if path.is_empty() {
                    return Ok(found(tree.detach()));
                }
                let Some(entry) = tree.lookup_entry_by_path(path).map_err(|e| broken(&e))? else {
                    return Ok(Object::Missing);
                };
                match entry.object() {
                    Ok(object) => object,
                    Err(_) => return Ok(Object::Missing),
                }
            }
        };
        Ok(found(object.detach()))
    }
}

fn found(object: gix::ObjectDetached) -> Object {
    Object::Found {
        kind: object.kind.to_string(),
        body: object.data,
    }
}

/// The file at `path` in the commit the first existing ref of `refs` names, read in-process
/// (one repository opened, no `git`): `Ok(None)` when no ref of them exists or the commit holds
/// no such file. `Err` when gix cannot answer (a repository it cannot open, refs it cannot
/// read such as a reftable), for the caller to ask `git`.
pub fn file_at_ref(
    location: &Location,
    refs: &[String],
    path: &str,
) -> Result<Option<Vec<u8>>, String> {
    let repo = crate::gitoxide::open(location).ok_or("gix cannot open the repository")?;
    let mut commit = None;
    for name in refs {
        let found = repo
            .try_find_reference(name.as_str())
            .map_err(|e| format!("cannot read {name}: {e}"))?;
        if let Some(mut reference) = found {
            let id = reference
                .peel_to_id()
                .map_err(|e| format!("cannot peel {name}: {e}"))?;
            commit = Some(id.detach());
            break;
        }
    }
    let Some(commit) = commit else {
        return Ok(None);
    };
    let odd = |e: &dyn std::fmt::Display| format!("cannot read the tree of {commit}: {e}");
    let tree = repo
        .find_commit(commit)
        .map_err(|e| odd(&e))?
        .tree()
        .map_err(|e| odd(&e))?;
    let Some(entry) = tree
        .lookup_entry_by_path(path)
        .map_err(|e| format!("cannot look up {path}: {e}"))?
    else {
        return Ok(None);
    };
    if !entry.mode().is_blob() {
        return Ok(None);
    }
    let object = entry
        .object()
        .map_err(|e| format!("cannot read {path}: {e}"))?;
    Ok(Some(object.data.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob's answer.
    fn blob_of(body: &[u8]) -> Object {
        Object::Found {
            kind: "blob".into(),
            body: body.to_vec(),
        }
    }

    fn repository() -> (tempfile::TempDir, Git) {
        let dir = tempfile::tempdir().expect("a temp dir");
        let git = Git::in_dir(dir.path());
        git.cmd(["init", "-q", "--bare"]).run().expect("git init");
        (dir, git)
    }

    fn blob(git: &Git, bytes: &[u8]) -> String {
        git.cmd(["hash-object", "-w", "--stdin"])
            .stdin(bytes.to_vec())
            .text()
            .expect("hash-object")
    }

    /// What `git cat-file` answers for `name`, as this reader answers.
    fn cat_file(git: &Git, name: &str) -> Object {
        let kind = git
            .cmd(["cat-file", "-t", name])
            .output()
            .expect("cat-file");
        if !kind.success() {
            return Object::Missing;
        }
        let kind = kind.text();
        let body = git
            .cmd(["cat-file", &kind, name])
            .run()
            .expect("cat-file")
            .stdout;
        Object::Found { kind, body }
    }

    #[test]
    fn objects_come_back_in_order_with_their_exact_bytes() {
        let (_dir, git) = repository();
        let one = blob(&git, b"one\n");
        let binary = blob(&git, b"\0\n\xff no end");
        let reader = Reader::new(git.clone());
        let absent = "0".repeat(40);
        let objects = reader
            .read(&[binary.clone(), absent, one.clone()])
            .expect("a read");
        assert_eq!(
            objects,
            vec![
                blob_of(b"\0\n\xff no end"),
                Object::Missing,
                blob_of(b"one\n"),
            ]
        );
    }

    #[test]
    fn one_reader_sees_objects_written_after_it_opened() {
        let (_dir, git) = repository();
        let reader = Reader::new(git.clone());
        let first = blob(&git, b"first\n");
        assert!(matches!(
            reader.read(std::slice::from_ref(&first)).expect("a read")[0],
            Object::Found { .. }
        ));
        let later = blob(&git, b"written later\n");
        let objects = reader.read(&[later]).expect("a read");
        assert_eq!(objects[0], blob_of(b"written later\n"));
        // An object that arrives in a new pack, as a fetch brings them.
        let (_other_dir, other) = repository();
        let packed = blob(&other, b"arrived in a pack\n");
        let pack = other
            .cmd(["pack-objects", "--stdout", "-q"])
            .stdin(format!("{packed}\n").into_bytes())
            .run()
            .expect("pack-objects")
            .stdout;
        git.cmd(["index-pack", "--stdin"])
            .stdin(pack)
            .run()
            .expect("index-pack");
        let objects = reader.read(&[packed]).expect("a read");
        assert_eq!(objects[0], blob_of(b"arrived in a pack\n"));
    }

    #[test]
    fn every_name_reads_as_git_cat_file_reads_it() {
        let (dir, git) = repository();
        let content = blob(&git, b"spaced\n");
        let inner = git
            .cmd(["mktree"])
            .stdin(format!("100644 blob {content}\tdeep.txt\n").into_bytes())
            .text()
            .expect("mktree");
        let tree = git
            .cmd(["mktree"])
            .stdin(
                format!("100644 blob {content}\ta b.txt\n040000 tree {inner}\tdir\n").into_bytes(),
            )
            .text()
            .expect("mktree");
        let commit = git
            .cmd(["commit-tree", &tree, "-m", "c"])
            .env("GIT_AUTHOR_NAME", "a")
            .env("GIT_AUTHOR_EMAIL", "a@a")
            .env("GIT_COMMITTER_NAME", "a")
            .env("GIT_COMMITTER_EMAIL", "a@a")
            .text()
            .expect("commit-tree");
        let reader = Reader::new(git.clone());
        let names = [
            format!("{tree}:a b.txt"),
            format!("{tree}:no such missing"),
            format!("{commit}:dir/deep.txt"),
            format!("{commit}:dir"),
            format!("{commit}^{{tree}}"),
            format!("{commit}^{{commit}}"),
            format!("{tree}^{{commit}}"),
            format!("{content}:x"),
            commit.clone(),
        ];
        let objects = reader.read(&names).expect("a read");
        for (name, object) in names.iter().zip(objects) {
            assert_eq!(object, cat_file(&git, name), "{name}");
        }
        drop(dir);
    }

    #[test]
    fn names_that_are_not_ids_are_refused() {
        let (_dir, git) = repository();
        let reader = Reader::new(git);
        for name in [
            "HEAD",
            "refs/heads/main",
            &format!("{}\nHEAD", "a".repeat(40)),
            &format!("{}~1", "a".repeat(40)),
        ] {
            let error = reader.read(&[name.to_string()]).expect_err(name);
            assert!(error.0.contains("by id alone"), "{error:?}");
        }
    }

    /// Git's answer to "the newest of the newest `within` commits that added `path`": a
    /// first-parent `log --diff-filter=A` over that stretch.
    fn git_adding(git: &Git, tip: &str, path: &str, within: u32) -> Option<String> {
        let line = git
            .cmd(["rev-list", "--first-parent"])
            .arg(format!("--max-count={}", within + 1))
            .arg(tip)
            .text()
            .expect("rev-list");
        let range = match line.split_whitespace().nth(within as usize) {
            Some(past) => format!("{past}..{tip}"),
            None => tip.to_owned(),
        };
        let out = git
            .cmd([
                "log",
                "--first-parent",
                "--diff-filter=A",
                "--format=%H",
                "-n1",
            ])
            .arg(range)
            .arg("--")
            .arg(path)
            .text()
            .expect("log");
        (!out.is_empty()).then_some(out)
    }

    #[test]
    fn the_commit_that_added_a_path_is_the_one_git_log_finds() {
        let (_dir, git) = repository();
        let config = blob(&git, b"[red]\n");
        let other = blob(&git, b"[red]\nwindow = 3\n");
        let file = blob(&git, b"a file\n");
        let tree = |config: Option<&str>| {
            let mut listing = format!("100644 blob {file}\tfile.txt\n");
            if let Some(config) = config {
                let inner = git
                    .cmd(["mktree"])
                    .stdin(format!("100644 blob {config}\tconfig.toml\n").into_bytes())
                    .text()
                    .expect("mktree");
                listing.push_str(&format!("040000 tree {inner}\t.bay\n"));
            }
            git.cmd(["mktree"])
                .stdin(listing.into_bytes())
                .text()
                .expect("mktree")
        };
        // Oldest first: held from the root, changed, removed, two without it, added again,
        // changed, then another file's commit.
        let states = [
            Some(&config),
            Some(&other),
            None,
            None,
            Some(&config),
            Some(&other),
            Some(&other),
        ];
        let mut line: Vec<String> = Vec::new();
        for (n, state) in states.iter().enumerate() {
            let mut args = vec!["commit-tree".to_string(), tree(state.map(String::as_str))];
            if let Some(parent) = line.last() {
                args.extend(["-p".into(), parent.clone()]);
            }
            args.extend(["-m".into(), format!("commit {n}")]);
            let commit = git
                .cmd(args)
                .env("GIT_AUTHOR_NAME", "a")
                .env("GIT_AUTHOR_EMAIL", "a@a")
                .env("GIT_COMMITTER_NAME", "a")
                .env("GIT_COMMITTER_EMAIL", "a@a")
                .text()
                .expect("commit-tree");
            line.push(commit);
        }
        let reader = Reader::new(git.clone());
        let mut found = Vec::new();
        for tip in &line {
            let tip_oid = bay_core::git::Oid::parse(tip).expect("an id");
            for path in [".bay/config.toml", "file.txt", ".bay", "absent.toml"] {
                for within in 0..=states.len() as u32 + 1 {
                    let ours = reader
                        .newest_adding(&tip_oid, path, within)
                        .expect("a walk")
                        .map(|oid| oid.to_string());
                    assert_eq!(
                        ours,
                        git_adding(&git, tip, path, within),
                        "{tip} {path} {within}"
                    );
                    found.extend(ours);
                }
            }
        }
        // The walk found both additions of the config, and the root's.
        for added in [&line[0], &line[4]] {
            assert!(found.contains(added), "{added} never found");
        }
    }

    proptest::proptest! {
        /// Any name gives objects, a refusal or a fault, never a panic.
        #[test]
        fn any_name_reads_without_a_panic(tail in ".{0,20}") {
            let (_dir, git) = repository();
            let reader = Reader::new(git);
            let _ = reader.read(&[format!("{}{tail}", "a".repeat(40))]);
        }
    }
}
