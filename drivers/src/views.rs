//! Views: a change's sparse worktree under `<common Git dir>/bay/views/<change>`, and the
//! drafts saved from it.
//!
//! A view is a linked worktree with a detached HEAD at the change's draft and a non-cone
//! sparse checkout of the change's declared paths. Its files hold the blobs' exact bytes: the
//! worktree's own config sets `core.autocrlf=false`, whatever the machine's says. After the
//! start the view works offline; saving a draft reads only local objects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bay_core::conflict::Labels;
use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::{Fault, Refreshed, ViewFacts};

use crate::git::{Git, Location};
use crate::objects::{Identity, Objects, linked_git_dir};
use crate::reader::Reader;
use crate::remote::merge_tree;
use crate::trees;

/// The views of one clone.
#[derive(Debug, Clone)]
pub struct Views {
    /// The clone's main worktree (or any directory Git resolves to the clone).
    clone: PathBuf,
    /// The Git directory every worktree shares.
    common_dir: PathBuf,
    /// Where drafts are written.
    objects: Objects,
    /// How objects are read; the clone's one reader when [`Views::with_reader`] gives it.
    reader: Arc<Reader>,
    /// Views whose work [`Views::stage`] is taking as a tree, by change: the next
    /// [`Views::freeze`] of that change saves that tree.
    staged: Arc<Staged>,
}

/// Work being taken as trees, by change. Dropped with the last [`Views`], it waits for any
/// still being taken, so that a command never ends with its process halfway through writing a
/// tree object.
#[derive(Debug, Default)]
struct Staged(Mutex<BTreeMap<ChangeId, JoinHandle<Result<Oid, Fault>>>>);

impl Drop for Staged {
    fn drop(&mut self) {
        if let Ok(staged) = self.0.get_mut() {
            for (_, taking) in std::mem::take(staged) {
                let _ = taking.join();
            }
        }
    }
}

/// A draft checkpoint [`Views::checkpoint`] took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    pub draft: Oid,
    /// The commits whose work the draft carries on: the view's HEAD, then the last
    /// checkpoint the draft was made on, when it was.
    pub grew_from: Vec<Oid>,
}

/// The local ref that keeps a view's last draft checkpoint.
fn checkpoint_ref(change: &ChangeId) -> String {
    format!("refs/bay/checkpoints/{change}")
}

fn checkpoint_message(change: &ChangeId) -> String {
    format!("bay: checkpoint of {change}\n")
}

/// The work in the view at `dir` as a tree: every file under its sparse paths added to an
/// index, as `git add --all` adds them, and the index written as a tree. The index is `index`
/// when given (the view's own, or a copy of it), else the one Git finds. The tree is built and
/// written by this process where it can read that index and write objects as Git would
/// ([`crate::index`]), else by `git write-tree`.
fn tree_of_work(dir: &Path, index: Option<&Path>, objects: &Objects) -> Result<Oid, Fault> {
    let view = Git::in_dir(dir);
    let with_index = |args: &[&str]| {
        let call = view.cmd(args.iter().copied());
        match index {
            Some(index) => call.env("GIT_INDEX_FILE", index).run(),
            None => call.run(),
        }
    };
    with_index(&["add", "--all", "--sparse", "--", "."])?;
    if let (Some(index), Some(store)) = (index, objects.store()) {
        let built = crate::index::tree_of_index(index, store)
            .map_err(|e| Fault(format!("cannot write the view's tree: {}", e.0)))?;
        if let Some(tree) = built {
            return Ok(tree);
        }
    }
    oid(&with_index(&["write-tree"])?.stdout)
}

/// A view's own index, in its Git directory `admin`.
fn own_index(admin: Option<PathBuf>) -> Option<PathBuf> {
    admin.map(|admin| admin.join("index"))
}

impl Views {
    pub fn new(clone: impl Into<PathBuf>, common_dir: impl Into<PathBuf>) -> Views {
        let common_dir = common_dir.into();
        Views {
            clone: clone.into(),
            objects: Objects::new(Location::GitDir(common_dir.clone())),
            reader: Arc::new(Reader::new(Git::git_dir(common_dir.clone()))),
            staged: Arc::default(),
            common_dir,
        }
    }

    /// The same views, reading objects through `reader` (any reader of this clone: objects are
    /// read by id, the same in every worktree).
    pub fn with_reader(mut self, reader: Arc<Reader>) -> Views {
        self.reader = reader;
        self
    }

    /// Where the view of `change` lives.
    pub fn dir(&self, change: &ChangeId) -> PathBuf {
        self.common_dir
            .join("bay")
            .join("views")
            .join(change.as_str())
    }

    fn clone_git(&self) -> Git {
        Git::in_dir(&self.clone)
    }

    /// A draft commit, by bay.
    fn commit(&self, git: &Git, tree: &Oid, parents: &[&Oid], message: &str) -> Result<Oid, Fault> {
        self.objects
            .commit(git, &Identity::default(), tree, parents, message)
    }

    /// Whether `dir` is a worktree Git knows for this clone.
    ///
    /// A linked worktree's `.git` is a file naming its Git directory, which lies under the
    /// common directory's `worktrees/`: reading it costs no process.
    fn is_view(&self, dir: &Path) -> bool {
        self.admin_dir(dir).is_some()
    }

    /// The worktree's own Git directory under the common directory's `worktrees/`, when
    /// `dir` is a worktree of this clone.
    fn admin_dir(&self, dir: &Path) -> Option<PathBuf> {
        let gitdir = linked_git_dir(dir)?;
        (gitdir.parent() == Some(self.common_dir.join("worktrees").as_path())).then_some(gitdir)
    }

    /// The commit the view at `dir` (`git` in it) has checked out. A view's HEAD is detached,
    /// and reading it in-process costs no process; anything else there is left to Git to
    /// resolve.
    fn head(&self, dir: &Path, git: &Git) -> Result<Oid, Fault> {
        let detached = self
            .admin_dir(dir)
            .and_then(|_| crate::head::detached_head(dir));
        match detached {
            Some(head) => Ok(head),
            None => oid(&git.cmd(["rev-parse", "--verify", "HEAD"]).run()?.stdout),
        }
    }

    /// Moves the view's detached HEAD from `from` to `to`: in-process where that is what Git
    /// would write ([`crate::head`]), else with `git update-ref --no-deref` (`git` in the
    /// view); either way only while HEAD still holds `from`.
    fn move_head(&self, dir: &Path, git: &Git, from: &Oid, to: &Oid) -> Result<(), Fault> {
        if crate::head::move_head(dir, from, to)
            .map_err(|e| Fault(format!("cannot move the view's HEAD: {}", e.0)))?
        {
            return Ok(());
        }
        git.cmd([
            "update-ref",
            "--no-deref",
            "HEAD",
            to.as_str(),
            from.as_str(),
        ])
        .run()?;
        Ok(())
    }

    /// Makes the view of `change` show `draft` (creating it with `paths` if it does not
    /// exist), and returns its folder.
    pub fn make(&self, change: &ChangeId, paths: &[String], draft: &Oid) -> Result<String, Fault> {
        let dir = self.dir(change);
        if !self.is_view(&dir) {
            if dir.exists() {
                return Err(Fault(format!(
                    "{} exists but is not a view of this clone; move it away and start again",
                    dir.display()
                )));
            }
            let parent = dir.parent().expect("a view's folder has a parent");
            std::fs::create_dir_all(parent)
                .map_err(|e| Fault(format!("cannot make {}: {e}", parent.display())))?;
            self.clone_git()
                .cmd(["worktree", "add", "--no-checkout", "--detach"])
                .arg(&dir)
                .arg(draft.as_str())
                .run()?;
            let view = Git::in_dir(&dir);
            let patterns: Vec<String> = paths.iter().map(|p| pattern(p)).collect();
            view.cmd(["sparse-checkout", "set", "--no-cone", "--"])
                .args(&patterns)
                .run()?;
            view.cmd(["config", "--worktree", "core.autocrlf", "false"])
                .run()?;
            view.cmd(["config", "--worktree", "core.eol", "lf"]).run()?;
        } else if !holds_paths(&self.declared(change), paths) {
            // A change picked up again with paths its view lacks: the view holds them now.
            let patterns: Vec<String> = paths.iter().map(|p| pattern(p)).collect();
            Git::in_dir(&dir)
                .cmd(["sparse-checkout", "set", "--no-cone", "--"])
                .args(&patterns)
                .run()?;
        }
        // The view shows exactly the draft; its work was saved into that draft first.
        Git::in_dir(&dir)
            .cmd(["reset", "--quiet", "--hard", draft.as_str()])
            .run()?;
        Ok(dir.to_string_lossy().into_owned())
    }

    /// The paths the view of `change` declares: its sparse-checkout patterns, as
    /// [`Views::make`] wrote them, read from the view's own Git directory (empty without one).
    pub fn declared(&self, change: &ChangeId) -> Vec<String> {
        let Some(admin) = self.admin_dir(&self.dir(change)) else {
            return Vec::new();
        };
        std::fs::read_to_string(admin.join("info").join("sparse-checkout"))
            .unwrap_or_default()
            .lines()
            .map(declared_path)
            .collect()
    }

    /// The changes with a folder under this clone's views, by name; the folder may be no
    /// valid view (`inspect` leaves those out).
    pub fn listed(&self) -> Vec<ChangeId> {
        let Ok(entries) = std::fs::read_dir(self.common_dir.join("bay").join("views")) else {
            return Vec::new();
        };
        let mut changes: Vec<ChangeId> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| ChangeId::parse(&entry.file_name().to_string_lossy()).ok())
            .collect();
        changes.sort();
        changes
    }

    /// What each valid view of `changes` holds: its `HEAD`, whether `git status` sees edits or
    /// untracked files (ignored files are not work), and whether its worktree is locked.
    pub fn inspect(&self, changes: &[ChangeId]) -> Result<Vec<ViewFacts>, Fault> {
        let mut facts = Vec::new();
        for change in changes {
            let dir = self.dir(change);
            let Some(admin) = self.admin_dir(&dir) else {
                continue;
            };
            let view = Git::in_dir(&dir);
            let head = view
                .cmd(["rev-parse", "--verify", "--quiet", "HEAD"])
                .output()?;
            let head = head.success().then(|| oid(&head.stdout)).transpose()?;
            let status = view
                .cmd(["status", "--porcelain", "--untracked-files=all", "-z"])
                .run()?;
            facts.push(ViewFacts {
                change: change.clone(),
                head,
                clean: status.stdout.is_empty(),
                locked: admin.join("locked").exists(),
            });
        }
        Ok(facts)
    }

    /// Removes the view of `change`, never forcing: Git refuses a view with work in it or a
    /// lock, and then the view stays.
    pub fn release(&self, change: &ChangeId) -> Result<bool, Fault> {
        let dir = self.dir(change);
        if self.admin_dir(&dir).is_none() {
            return Ok(false);
        }
        let out = self
            .clone_git()
            .cmd(["worktree", "remove"])
            .arg(&dir)
            .output()?;
        Ok(out.success())
    }

    /// Begins taking the work in the view of `change` as a tree, on a thread of its own, for
    /// the next [`Views::freeze`] of that change to save. `bay merge` calls it first thing, so
    /// that `git add` runs while the command fetches: the draft is the view's work as it was
    /// when the command began. Does nothing when this machine has no view of `change`, or
    /// when its work is being taken already (two `git add`s in one view would race for its
    /// index).
    pub fn stage(&self, change: &ChangeId) {
        let dir = self.dir(change);
        if !self.is_view(&dir) {
            return;
        }
        let Ok(mut staged) = self.staged.0.lock() else {
            return;
        };
        if staged.contains_key(change) {
            return;
        }
        let (index, objects) = (own_index(self.admin_dir(&dir)), self.objects.clone());
        let taking = std::thread::spawn(move || tree_of_work(&dir, index.as_deref(), &objects));
        staged.insert(change.clone(), taking);
    }

    /// Saves the view's work as a draft on `parent`: the work [`Views::stage`] took, else the
    /// work as it is now. With no view on this machine, or nothing new in it, the draft stays
    /// `parent`. When the view grew from another draft than `parent` (one saved on another
    /// machine), its work is carried over onto `parent` as a merge, and the answer names the
    /// files that conflicted and those given marker lines under `labels`.
    pub fn freeze(
        &self,
        change: &ChangeId,
        parent: &Oid,
        labels: &Labels,
    ) -> Result<Refreshed, Fault> {
        let dir = self.dir(change);
        if !self.is_view(&dir) {
            return Ok(Refreshed::clean(parent.clone()));
        }
        let view = Git::in_dir(&dir);
        let staged = self
            .staged
            .0
            .lock()
            .ok()
            .and_then(|mut staged| staged.remove(change));
        let tree = match staged.map(JoinHandle::join) {
            Some(Ok(taken)) => taken?,
            Some(Err(_)) => return Err(Fault("taking the view's work as a tree panicked".into())),
            None => tree_of_work(
                &dir,
                own_index(self.admin_dir(&dir)).as_deref(),
                &self.objects,
            )?,
        };
        let head = self.head(&dir, &view)?;
        let head_tree = trees::of_commits(&self.reader, std::slice::from_ref(&head))?
            .pop()
            .ok_or_else(|| Fault(format!("no tree for the view's HEAD {head}")))?;
        let draft = if tree == head_tree {
            head.clone()
        } else {
            self.commit(&view, &tree, &[&head], &format!("bay: draft of {change}\n"))?
        };
        if draft == *parent || head == *parent || is_ancestor(&view, parent, &head)? {
            // The view grew from the recorded draft (or has nothing new): it is the draft. It
            // may have grown through drafts saved and never recorded, such as one a `bay merge`
            // refused before it wrote anything; the view's files are still all its work.
            if draft != head {
                self.move_head(&dir, &view, &head, &draft)?;
            }
            return Ok(Refreshed::clean(draft));
        }
        if self.own_checkpoint(&view, change)?.as_ref() == Some(parent)
            && is_ancestor(&view, &head, parent)?
        {
            // The recorded draft is a checkpoint this view's hook saved from its own files (see
            // [`Views::checkpoint`]): those files are still all its work, now on that draft.
            let parent_tree = trees::of_commits(&self.reader, std::slice::from_ref(parent))?
                .pop()
                .ok_or_else(|| Fault(format!("no tree for the draft {parent}")))?;
            let onto = match parent_tree == tree {
                true => parent.clone(),
                false => self.commit(
                    &view,
                    &tree,
                    &[parent],
                    &format!("bay: draft of {change}\n"),
                )?,
            };
            self.move_head(&dir, &view, &head, &onto)?;
            return Ok(Refreshed::clean(onto));
        }
        // The view grew from another draft than the record's latest (a draft saved on another
        // machine): carry its work over onto the recorded one, as a merge would.
        if let Some(recorded) = self.carried_already(&view, &head, parent, &draft, labels)? {
            return Ok(recorded);
        }
        let merged = merge_tree(&view, &head, parent, &draft)?;
        let (tree, marked) =
            crate::markers::relabel(&self.reader, &view, &self.objects, &merged, labels)?;
        let onto = self.commit(
            &view,
            &tree,
            &[parent],
            &format!("bay: draft of {change}\n"),
        )?;
        if !merged.conflicts.is_empty() {
            // Markers no record names yet: the view stays as it is until bay has recorded them
            // and makes the view from this draft, so a view never shows markers bay would not
            // refuse to merge.
            return Ok(Refreshed {
                draft: onto,
                conflicts: merged.conflicts,
                marked,
            });
        }
        // The view shows what it saved: its files as they were, plus what the recorded draft
        // brought. Otherwise the next save would take those files back to the view's old side.
        view.cmd(["reset", "--quiet", "--mixed", draft.as_str()])
            .run()?;
        view.cmd(["checkout", "--quiet", "--detach", onto.as_str()])
            .run()?;
        Ok(Refreshed::clean(onto))
    }

    /// The recorded draft `parent`, when it is already this view's work (`draft`, on the
    /// view's `head`) carried over with conflicts onto the draft before it: the record took
    /// that draft and its markers, and the command stopped before it made the view from it.
    /// Carrying the work over again would wrap those markers in new ones.
    fn carried_already(
        &self,
        view: &Git,
        head: &Oid,
        parent: &Oid,
        draft: &Oid,
        labels: &Labels,
    ) -> Result<Option<Refreshed>, Fault> {
        let line = self.reader.first_parents(parent, 2, None)?;
        let Some((before, _)) = line.get(1) else {
            return Ok(None);
        };
        let merged = merge_tree(view, head, before, draft)?;
        if merged.conflicts.is_empty() {
            return Ok(None);
        }
        let (tree, marked) =
            crate::markers::relabel(&self.reader, view, &self.objects, &merged, labels)?;
        let recorded = trees::of_commits(&self.reader, std::slice::from_ref(parent))?;
        Ok((recorded == [tree]).then(|| Refreshed {
            draft: parent.clone(),
            conflicts: merged.conflicts,
            marked,
        }))
    }

    /// Saves the work in the view of `change` as a draft checkpoint, kept at the local ref
    /// `refs/bay/checkpoints/<change>`, without touching the view's HEAD, index or files, so
    /// the session's edits stay unsaved for `bay merge` to take. The draft is a commit on the
    /// view's last checkpoint when that one grew from the view's HEAD (checkpoints of one view
    /// form a line), else on the HEAD; work the same as that last checkpoint's is that
    /// checkpoint again. The work is added through a copy of the view's index, under a name
    /// of its own, so two checkpoints of one view at once never share it. `None` when there
    /// is no view or the view holds nothing beyond its HEAD.
    pub fn checkpoint(&self, change: &ChangeId) -> Result<Option<Taken>, Fault> {
        let dir = self.dir(change);
        let Some(admin) = self.admin_dir(&dir) else {
            return Ok(None);
        };
        let view = Git::in_dir(&dir);
        // Removed when dropped, whatever happens.
        let copy = tempfile::Builder::new()
            .prefix("index.bay-checkpoint.")
            .tempfile_in(&admin)
            .map_err(|e| Fault(format!("cannot copy the view's index: {e}")))?;
        match std::fs::copy(admin.join("index"), copy.path()) {
            Ok(_) => {}
            // A view with no index yet: Git starts an empty one, which an empty file is not.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::remove_file(copy.path())
                    .map_err(|e| Fault(format!("cannot copy the view's index: {e}")))?;
            }
            Err(e) => return Err(Fault(format!("cannot copy the view's index: {e}"))),
        }
        let tree = tree_of_work(&dir, Some(copy.path()), &self.objects)?;
        let head = self.head(&dir, &view)?;
        let last = match self.own_checkpoint(&view, change)? {
            Some(last) if last != head && is_ancestor(&view, &head, &last)? => Some(last),
            _ => None,
        };
        let commits: Vec<Oid> = [Some(head.clone()), last.clone()]
            .into_iter()
            .flatten()
            .collect();
        let trees = trees::of_commits(&self.reader, &commits)?;
        if trees.first() == Some(&tree) {
            return Ok(None);
        }
        let draft = match &last {
            Some(last) if trees.get(1) == Some(&tree) => last.clone(),
            Some(last) => self.commit(&view, &tree, &[last], &checkpoint_message(change))?,
            None => self.commit(&view, &tree, &[&head], &checkpoint_message(change))?,
        };
        view.cmd(["update-ref", &checkpoint_ref(change), draft.as_str()])
            .run()?;
        Ok(Some(Taken {
            draft,
            grew_from: commits,
        }))
    }

    /// This clone's last checkpoint of `change`, at its local ref (`git` in the view).
    fn own_checkpoint(&self, git: &Git, change: &ChangeId) -> Result<Option<Oid>, Fault> {
        let out = git
            .cmd(["rev-parse", "--verify", "--quiet", &checkpoint_ref(change)])
            .output()?;
        out.success().then(|| oid(&out.stdout)).transpose()
    }

    /// Brings `draft` (made on `base`) up to main at `onto`. Conflicting files keep conflict
    /// markers for the agent to resolve, their sides named by `labels`; they are named in
    /// the result, and those given markers apart.
    pub fn refresh(
        &self,
        change: &ChangeId,
        draft: &Oid,
        base: &Oid,
        onto: &Oid,
        labels: &Labels,
    ) -> Result<Refreshed, Fault> {
        let git = self.clone_git();
        if draft == base {
            return Ok(Refreshed::clean(onto.clone()));
        }
        let merged = merge_tree(&git, base, onto, draft)?;
        let (tree, marked) =
            crate::markers::relabel(&self.reader, &git, &self.objects, &merged, labels)?;
        let refreshed = self.commit(
            &git,
            &tree,
            &[onto],
            &format!("bay: draft of {change}, brought up to main\n"),
        )?;
        Ok(Refreshed {
            draft: refreshed,
            conflicts: merged.conflicts,
            marked,
        })
    }
}

/// A non-cone sparse pattern for one declared path: the file or the whole directory.
fn pattern(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        "/*".to_string()
    } else {
        format!("/{trimmed}")
    }
}

/// Whether a view that declares `declared` holds every path of `paths`, however each is
/// spelt (`src`, `src/`, `/src`).
fn holds_paths(declared: &[String], paths: &[String]) -> bool {
    let patterns: Vec<String> = declared.iter().map(|p| pattern(p)).collect();
    paths.iter().all(|path| patterns.contains(&pattern(path)))
}

/// The declared path a sparse pattern of [`pattern`] stands for: `/*` is the whole tree.
fn declared_path(pattern: &str) -> String {
    match pattern.trim_start_matches('/') {
        "*" => String::new(),
        path => path.to_owned(),
    }
}

fn oid(stdout: &[u8]) -> Result<Oid, Fault> {
    Oid::parse(String::from_utf8_lossy(stdout).trim()).map_err(Fault)
}

/// Whether `ancestor` is `descendant` or one of its ancestors: `git merge-base --is-ancestor`,
/// which exits 1 for no and anything else for a fault.
fn is_ancestor(git: &Git, ancestor: &Oid, descendant: &Oid) -> Result<bool, Fault> {
    let out = git
        .cmd([
            "merge-base",
            "--is-ancestor",
            ancestor.as_str(),
            descendant.as_str(),
        ])
        .output()?;
    match out.code {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(Fault(format!(
            "git merge-base --is-ancestor {ancestor} {descendant} failed: {}",
            crate::git::tail(out.stderr.as_bytes())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clone holding `a.txt` ("zero") and its view of `a.txt` for `change`: the views, the
    /// commit and the view's folder.
    fn view_of_a(root: &Path, change: &ChangeId) -> (Views, Oid, PathBuf) {
        let git = crate::testing::repository_with_a_commit(root);
        std::fs::write(root.join("a.txt"), "zero\n").expect("write");
        git.cmd(["add", "a.txt"]).run().expect("add");
        git.cmd(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(["commit", "-q", "-m", "a"])
            .run()
            .expect("commit");
        let head = oid(&git.cmd(["rev-parse", "HEAD"]).run().expect("HEAD").stdout).expect("id");
        let views = Views::new(root, root.join(".git"));
        let dir = views
            .make(change, &["a.txt".into()], &head)
            .expect("a view");
        (views, head, PathBuf::from(dir))
    }

    /// Saves the view's work on `parent`, carrying it over with no conflict.
    fn save(views: &Views, change: &ChangeId, parent: &Oid) -> Oid {
        let frozen = views
            .freeze(change, parent, &Labels::carried(change))
            .expect("a draft");
        assert!(frozen.conflicts.is_empty(), "{frozen:?}");
        frozen.draft
    }

    fn file_at(views: &Views, commit: &Oid) -> String {
        let out = views
            .clone_git()
            .cmd(["show", &format!("{commit}:a.txt")])
            .run()
            .expect("git show");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    #[test]
    fn a_freeze_after_a_stage_saves_the_work_the_stage_took() {
        let root = tempfile::tempdir().expect("a temp dir");
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let (views, head, dir) = view_of_a(root.path(), &change);
        std::fs::write(dir.join("a.txt"), "staged\n").expect("write");
        views.stage(&change);
        // A second stage while the first is held starts no second `git add` in the view.
        let first = |views: &Views| views.staged.0.lock().expect("lock")[&change].thread().id();
        let taking = first(&views);
        views.stage(&change);
        assert_eq!(first(&views), taking);
        // Let the stage finish, then change the work again before the freeze.
        let taking = views.staged.0.lock().expect("lock").remove(&change);
        let taken = taking.expect("the stage began").join().expect("no panic");
        let tree = taken.expect("a tree");
        let again = tree.clone();
        views
            .staged
            .0
            .lock()
            .expect("lock")
            .insert(change.clone(), std::thread::spawn(move || Ok(again)));
        std::fs::write(dir.join("a.txt"), "after\n").expect("write");

        let draft = save(&views, &change, &head);
        assert_eq!(file_at(&views, &draft), "staged\n");
        let of = trees::of_commits(&views.reader, std::slice::from_ref(&draft)).expect("tree");
        assert_eq!(of, vec![tree]);
        // The stage is spent: the next freeze takes the work as it is then.
        let next = save(&views, &change, &draft);
        assert_eq!(file_at(&views, &next), "after\n");
    }

    #[test]
    fn a_view_s_declared_paths_come_from_its_own_git_directory() {
        let root = tempfile::tempdir().expect("a temp dir");
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        // A leftover folder under that name: Git names the view's Git directory otherwise.
        let leftover = root.path().join(".git/worktrees/c7k2m4qa/info");
        std::fs::create_dir_all(&leftover).expect("a folder");
        std::fs::write(leftover.join("sparse-checkout"), "/other\n").expect("write");
        let (views, head, _) = view_of_a(root.path(), &change);
        assert_eq!(views.declared(&change), vec!["a.txt".to_owned()]);
        let whole = ChangeId::parse("d7k2m4qa").expect("an id");
        views.make(&whole, &["/".into()], &head).expect("a view");
        assert_eq!(
            views.declared(&whole),
            vec![String::new()],
            "the whole tree"
        );
        let none = ChangeId::parse("e7k2m4qa").expect("an id");
        assert!(views.declared(&none).is_empty(), "no view");
    }

    #[test]
    fn checkpoints_of_one_view_at_once_each_save_the_work_and_leave_the_view_alone() {
        let root = tempfile::tempdir().expect("a temp dir");
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let (views, head, dir) = view_of_a(root.path(), &change);
        assert_eq!(
            views.checkpoint(&change).expect("no fault"),
            None,
            "nothing new"
        );
        std::fs::write(dir.join("a.txt"), "edited\n").expect("write");
        let index = || std::fs::read(root.path().join(".git/worktrees/c7k2m4qa/index"));
        let before = index().expect("the view's index");
        let taken: Vec<Oid> = std::thread::scope(|scope| {
            let each: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        (0..5)
                            .map(|_| views.checkpoint(&change))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            each.into_iter()
                .flat_map(|one| one.join().expect("no panic"))
                .map(|taken| taken.expect("no fault").expect("a checkpoint").draft)
                .collect()
        });
        for checkpoint in &taken {
            assert_eq!(file_at(&views, checkpoint), "edited\n");
        }
        assert_eq!(views.head(&dir, &Git::in_dir(&dir)).expect("HEAD"), head);
        assert_eq!(
            index().expect("the view's index"),
            before,
            "the index is untouched"
        );
        let admin = std::fs::read_dir(root.path().join(".git/worktrees/c7k2m4qa")).expect("dir");
        let left: Vec<_> = admin
            .filter_map(Result::ok)
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("index."))
            .collect();
        assert!(left.is_empty(), "no copy is left: {left:?}");
    }

    #[test]
    fn checkpoints_form_a_line_and_a_freeze_on_the_last_one_takes_the_view_s_files() {
        let root = tempfile::tempdir().expect("a temp dir");
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let (views, head, dir) = view_of_a(root.path(), &change);
        let git = Git::in_dir(&dir);
        std::fs::write(dir.join("a.txt"), "first\n").expect("write");
        let first = views.checkpoint(&change).expect("no fault").expect("taken");
        assert_eq!(first.grew_from, vec![head.clone()]);
        let again = views.checkpoint(&change).expect("no fault").expect("taken");
        assert_eq!(
            again.draft, first.draft,
            "the same work is the same checkpoint"
        );
        // The same line edited again: the next checkpoint goes on the first.
        std::fs::write(dir.join("a.txt"), "second\n").expect("write");
        let second = views.checkpoint(&change).expect("no fault").expect("taken");
        assert_eq!(second.grew_from, vec![head.clone(), first.draft.clone()]);
        assert!(is_ancestor(&git, &first.draft, &second.draft).expect("git"));
        assert_eq!(file_at(&views, &second.draft), "second\n");
        // Recorded as the change's draft, the checkpoint is what a freeze builds on: the
        // view's files as they are, with no conflict against the line they edited.
        std::fs::write(dir.join("a.txt"), "third\n").expect("write");
        let draft = save(&views, &change, &second.draft);
        assert_eq!(file_at(&views, &draft), "third\n");
        assert_eq!(
            git.cmd(["rev-parse", &format!("{draft}^")])
                .text()
                .expect("parent")
                .trim(),
            second.draft.as_str()
        );
        assert_eq!(views.head(&dir, &git).expect("HEAD"), draft);
        // A checkpoint after the freeze grows from the new HEAD, not the older line.
        std::fs::write(dir.join("a.txt"), "fourth\n").expect("write");
        let later = views.checkpoint(&change).expect("no fault").expect("taken");
        assert_eq!(later.grew_from, vec![draft]);
    }

    #[test]
    fn a_stage_with_no_view_here_takes_nothing() {
        let root = tempfile::tempdir().expect("a temp dir");
        let (views, head, _) = view_of_a(root.path(), &ChangeId::parse("c7k2m4qa").expect("id"));
        let elsewhere = ChangeId::parse("d7k2m4qa").expect("an id");
        views.stage(&elsewhere);
        assert!(views.staged.0.lock().expect("lock").is_empty());
        assert_eq!(save(&views, &elsewhere, &head), head);
    }
}
