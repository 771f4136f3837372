//! The Git every simulated machine talks to: the shared object store, the remote's refs and
//! the evidence notes, and the answer to each of core's actions, with no faults. The world
//! wraps these answers in latency and faults; the scripted tests use them directly.

use bay_core::check::footprint::TreeFile;
use bay_core::conflict::Labels;
use bay_core::git::{Oid, refs};
use bay_core::id::ChangeId;
use bay_core::limits::PathStat;
use bay_core::paths;
use std::collections::BTreeMap;
use std::sync::Arc;

use bay_core::machine::{
    Action, BuildResult, CandidateSpec, ChainQuery, ChainRead, Completion, Event, Fault, FetchSpec,
    HistoryQuery, Machine, MainCommit, PushPlan, PushReport, RawStep, Refreshed, Refs,
};
use bay_core::time::Timestamp;
use bay_core::trust::registry::{self, RegistryCommit, RegistryFile};

use crate::keys::Keys;
use crate::remote::{Applied, NotesLog, Remote};
use crate::store::{Merged, Store, Tree};

#[derive(Debug, Default)]
pub struct GitModel {
    pub store: Store,
    pub remote: Remote,
    pub notes: NotesLog,
    /// The model's clock, which its owner sets: when the remote took each ref's value, by
    /// it, is what `ReadSeen` answers.
    pub clock: Timestamp,
    /// Each ref's value and when the remote took it (see [`GitModel::read_seen`]).
    took: BTreeMap<String, (Oid, Timestamp)>,
    /// Every conflict marker line a refresh wrote into a draft: the ground truth the checker
    /// holds main's files to (S15).
    pub markers_written: std::collections::BTreeSet<String>,
    /// The private keys machines sign with (see `crate::keys`).
    pub keys: Keys,
}

impl GitModel {
    /// The record of `change` as `bay status` reads it: its chain on the remote, or, once
    /// compacted, its file in the index. `None` when neither holds it, or it does not fold.
    pub fn record(&self, change: &ChangeId) -> Option<Arc<bay_core::record::ChangeRecord>> {
        if let Some(tip) = self.remote.get(&refs::change(change)) {
            return self.store.fold(tip)?.ok();
        }
        let shard = self.remote.get(&refs::index_of_change(change))?;
        let file = self
            .store
            .read(shard, &bay_core::compact::change_path(change))?;
        let read = bay_core::compact::read_back(change, shard, Some(file.as_bytes()));
        bay_core::compact::fold(&read).ok().map(Arc::new)
    }

    /// Makes main's first commit from `files` (path, content).
    pub fn init_main(&mut self, main: &str, files: &[(&str, &str)]) -> Oid {
        let mut tree = Tree::new();
        for (path, content) in files {
            let blob = self.store.blob(content);
            tree.insert(path.to_string(), blob);
        }
        let tree = self.store.tree(tree);
        let root = self.store.commit(tree, Vec::new(), "The first version\n");
        self.remote
            .refs
            .insert(bay_core::git::refs::main(main), root.clone());
        root
    }

    /// The refs a fetch names, as the remote holds them; a fault, as in Git, when an exact
    /// name (no `*`) names a ref the remote lacks.
    pub fn fetch(&self, spec: &FetchSpec) -> Result<Refs, Fault> {
        if let Some(missing) = spec
            .patterns
            .iter()
            .find(|p| !p.ends_with('*') && !self.remote.refs.contains_key(*p))
        {
            return Err(Fault(format!("couldn't find remote ref {missing}")));
        }
        // Each pattern is a name or a prefix: the refs it names lie together, in name order.
        let mut fetched = Refs::new();
        for pattern in &spec.patterns {
            let prefix = pattern.strip_suffix('*').unwrap_or(pattern);
            // Split at its `*` once, not once for every ref it is held to.
            let glob = bay_core::glob::RefPattern::new(pattern);
            let named = self
                .remote
                .refs
                .range::<str, _>((
                    std::ops::Bound::Included(prefix),
                    std::ops::Bound::Unbounded,
                ))
                .take_while(|(name, _)| name.starts_with(prefix))
                .filter(|(name, _)| glob.matches(name));
            fetched.extend(named.map(|(n, o)| (n.clone(), o.clone())));
        }
        Ok(fetched)
    }

    /// Answers every action but a check or plugin run (`None`), at once and with no fault: what a
    /// perfect network and a perfect disk would answer. `views` holds one machine's views.
    pub fn answer(
        &mut self,
        action: &Action,
        views: &mut BTreeMap<ChangeId, View>,
    ) -> Option<Completion> {
        Some(match action {
            Action::Fetch(spec) => Completion::Fetched(self.fetch(spec)),
            Action::ReadSteps { oids } => Completion::StepsRead(Ok(self.read_steps(oids))),
            Action::ReadChains { chains } => {
                Completion::ChainsRead(Ok(self.read_chains(chains.clone())))
            }
            Action::ReadFile { commit, path } => Completion::FileRead(self.read_file(commit, path)),
            // The shards as the remote holds them now, as the Git driver's fetch of them.
            Action::ReadCompacted { changes } => Completion::ChainsRead(Ok(changes
                .iter()
                .map(
                    |change| match self.remote.get(&refs::index_of_change(change)) {
                        Some(shard) => {
                            let path = bay_core::compact::change_path(change);
                            let file = self.store.read(shard, &path).map(str::as_bytes);
                            bay_core::compact::read_back(change, shard, file)
                        }
                        None => bay_core::compact::read_back_unsharded(change),
                    },
                )
                .collect())),
            Action::ReadHistory(query) => Completion::HistoryRead(self.read_history(query)),
            Action::ReadAdded {
                commit,
                path,
                within,
            } => Completion::AddedRead(Ok(self.added(commit, path, *within))),
            Action::ReadHeld { prefix, limit } => {
                Completion::HeldRead(Ok(self.read_held(prefix, *limit)))
            }
            Action::ReadSeen { names } => Completion::SeenRead(Ok(self.read_seen(names))),
            Action::ReadStats { base, commit } => {
                Completion::StatsRead(self.read_stats(base, commit))
            }
            Action::ReadTrees { commits } => Completion::TreesRead(self.read_trees(commits)),
            Action::ReadFiles { commits, under } => {
                Completion::FilesRead(self.read_files(commits, under))
            }
            Action::ReadNotes { notes, objects } => Completion::NotesRead(Ok(notes
                .iter()
                .flat_map(|tip| {
                    objects
                        .iter()
                        .flat_map(|object| self.notes.records(tip, object))
                })
                .map(str::to_owned)
                .collect())),
            // The model keeps no commit times: a `since` leaves nothing out.
            Action::ReadLog { range, limit, .. } => {
                Completion::LogRead(self.read_log(range.as_deref(), *limit))
            }
            Action::TestMerge { onto, draft, base } => {
                Completion::MergeTested(self.test_merge(onto, draft, base))
            }
            Action::MergeBase { one, two } => Completion::MergeBaseFound(
                match [one, two].iter().find(|c| self.store.get(c).is_none()) {
                    Some(missing) => Err(Fault(format!("no commit {missing}"))),
                    None => Ok(self.store.merge_base(one, two)),
                },
            ),
            Action::WriteSteps(append) => {
                Completion::StepsWritten(Ok(crate::remote::write_steps(&mut self.store, append)))
            }
            Action::Push(plan) => Completion::Pushed(self.push(plan).0),
            Action::BuildCandidate(spec) => Completion::CandidateBuilt(self.build(spec)),
            // With a view to save, Git needs the recorded draft (`merge-base --is-ancestor`,
            // then a commit on it): one this clone lacks fails, as the driver's `freeze` does.
            Action::FreezeDraft { change, parent, .. }
                if views.contains_key(change) && self.store.get(parent).is_none() =>
            {
                Completion::DraftFrozen(Err(Fault(format!("no commit {parent}"))))
            }
            Action::FreezeDraft {
                change,
                parent,
                labels,
                ..
            } => Completion::DraftFrozen(Ok(self.freeze(
                change,
                views.get_mut(change),
                parent.clone(),
                labels,
            ))),
            // The refreshed draft is a commit only: the view shows it once it is made from it,
            // after the checkpoint that names it (and its markers) has landed.
            Action::RefreshDraft {
                change,
                draft,
                base,
                onto,
                labels,
            } => Completion::DraftRefreshed(self.refresh(change, draft, base, onto, labels)),
            // As `git reset --hard <draft>` in the view: it shows exactly the draft, which Git
            // must hold.
            Action::MakeView { draft, .. } if self.store.get(draft).is_none() => {
                Completion::ViewMade(Err(Fault(format!("no commit {draft}"))))
            }
            Action::MakeView {
                change,
                paths,
                draft,
            } => {
                views.insert(change.clone(), self.view_of(draft, paths));
                Completion::ViewMade(Ok(format!("sim://{change}")))
            }
            Action::InspectViews { changes } => Completion::ViewsInspected(Ok(changes
                .iter()
                .filter(|change| views.contains_key(*change))
                .map(|change| bay_core::machine::ViewFacts {
                    change: change.clone(),
                    head: None,
                    clean: true,
                    locked: false,
                })
                .collect())),
            Action::ReleaseView { change } => {
                Completion::ViewReleased(Ok(views.remove(change).is_some()))
            }
            Action::ReadRegistry { tip } => Completion::RegistryRead(self.read_registry(tip)),
            Action::WriteRegistry(write) => Completion::RegistryWritten(self.write_registry(write)),
            Action::ReadCommits { commits } => Completion::CommitsRead(
                commits
                    .iter()
                    .map(|oid| {
                        self.raw_commit(oid)
                            .ok_or_else(|| Fault(format!("no commit {oid}")))
                    })
                    .collect(),
            ),
            Action::RunCheck(_) | Action::RunPlugin(_) => return None,
        })
    }

    /// `oid` raw as Git stores a commit, but for the headers the model keeps none of (author,
    /// committer): its tree, its parents, its `gpgsig` when signed, a blank line and its
    /// message.
    pub fn raw_commit(&self, oid: &Oid) -> Option<String> {
        let commit = self.store.get(oid)?;
        let unsigned = unsigned_raw(&commit.tree, &commit.parents, &commit.message);
        Some(match &commit.gpgsig {
            None => unsigned,
            Some(gpgsig) => {
                let (headers, message) = unsigned.split_once("\n\n").unwrap_or((&unsigned, ""));
                format!("{headers}\ngpgsig {gpgsig}\n\n{message}")
            }
        })
    }

    /// A commit signed with the key at `key` as Git signs commits (`gpgsig`), or unsigned.
    fn commit_signed(
        &mut self,
        tree: Oid,
        parents: Vec<Oid>,
        message: &str,
        key: Option<&str>,
    ) -> Result<Oid, String> {
        let gpgsig = match key {
            Some(key) => Some(
                self.keys
                    .commit_signature(key, &unsigned_raw(&tree, &parents, message))?,
            ),
            None => None,
        };
        Ok(self
            .store
            .signed_commit(tree, parents, message, gpgsig.as_deref()))
    }

    /// Writes and signs one registry version, as the driver's `write_registry` does, and
    /// reads it back.
    fn write_registry(
        &mut self,
        write: &bay_core::machine::RegistryWrite,
    ) -> Result<RegistryCommit, Fault> {
        let mut tree = Tree::new();
        for (name, text) in &write.files {
            tree.insert(name.clone(), self.store.blob(text));
        }
        let tree = self.store.tree(tree);
        let mut message = write.message.clone();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        let parents = write.parent.iter().cloned().collect();
        let oid = self
            .commit_signed(tree, parents, &message, Some(&write.key))
            .map_err(Fault)?;
        self.read_registry(&oid)?
            .into_iter()
            .next()
            .ok_or_else(|| Fault(format!("no registry commit {oid}")))
    }

    /// The registry's chain from `tip` back along first parents, tip first, each commit with
    /// its tree's top-level entries: a file with its text, a folder with none.
    pub fn read_registry(&self, tip: &Oid) -> Result<Vec<RegistryCommit>, Fault> {
        registry::read_chain(tip, |oid| {
            let raw = self
                .raw_commit(oid)
                .ok_or_else(|| Fault(format!("no registry commit {oid}")))?;
            let tree = self.store.files(oid).unwrap_or_default();
            let mut files: BTreeMap<String, Option<String>> = BTreeMap::new();
            for (path, blob) in tree.iter() {
                match path.split_once('/') {
                    Some((folder, _)) => files.insert(folder.to_owned(), None),
                    None => {
                        files.insert(path.clone(), self.store.blob_text(blob).map(str::to_owned))
                    }
                };
            }
            Ok(RegistryCommit {
                oid: oid.clone(),
                raw,
                files: files
                    .into_iter()
                    .map(|(name, text)| RegistryFile { name, text })
                    .collect(),
            })
        })
    }

    /// Runs an agent command to its end against the model at `now`, answering each action at
    /// once.
    pub fn run_command(
        &mut self,
        machine: &mut dyn Machine,
        views: &mut BTreeMap<ChangeId, View>,
        now: Timestamp,
    ) {
        while machine.outcome().is_none() {
            let (id, action) = machine
                .poll_action()
                .expect("an agent command without an outcome waits on an action");
            let completion = self
                .answer(&action, views)
                .expect("agent commands run no checks");
            machine
                .handle(now, Event::Done(id, completion))
                .expect("the model answers each action once, in kind");
        }
    }

    /// Pushes `plan`, each note with a key signed first as the driver signs it; a key that
    /// cannot sign sends nothing.
    pub fn push(&mut self, plan: &PushPlan) -> (PushReport, Applied) {
        if plan.notes.iter().all(|note| note.key.is_none()) {
            return self.remote.push(&mut self.store, plan, &mut self.notes);
        }
        let mut signed = plan.clone();
        for note in &mut signed.notes {
            if let Some(key) = note.key.take() {
                match self.keys.signed_record(&key, &note.record) {
                    Ok(record) => note.record = record,
                    Err(why) => {
                        let report = crate::remote::not_sent(format!("bay.producerKey: {why}"));
                        return (report, Applied::default());
                    }
                }
            }
        }
        self.remote.push(&mut self.store, &signed, &mut self.notes)
    }

    /// `ReadSeen`: the model keeps no clone's mirror apart from the remote (as for
    /// `read_held`), so a ref's value was first seen when the remote took it, which the model
    /// learns the first time it is asked about that value, at its clock then. A ref the remote
    /// lacks is left out.
    pub fn read_seen(&mut self, names: &[String]) -> BTreeMap<String, Timestamp> {
        let mut seen = BTreeMap::new();
        for name in names {
            let Some(value) = self.remote.refs.get(name) else {
                continue;
            };
            let clock = self.clock;
            let took = self
                .took
                .entry(name.clone())
                .or_insert_with(|| (value.clone(), clock));
            if &took.0 != value {
                *took = (value.clone(), clock);
            }
            seen.insert(name.clone(), took.1);
        }
        seen
    }

    /// The remote's refs under `prefix`, the newest tips first (by the `at` of the step a tip
    /// records, for want of commit times in the model's store), at most `limit`. The model
    /// keeps no clone's mirror apart from the remote, as its `ReadLog` of main does not: every
    /// machine reads what the remote holds, as if it had just fetched it.
    pub fn read_held(&self, prefix: &str, limit: u32) -> Refs {
        let mut held: Vec<(u64, &String, &Oid)> = self
            .remote
            .refs
            .iter()
            .filter(|(name, _)| name.starts_with(prefix))
            .map(|(name, oid)| {
                let at = self
                    .store
                    .get(oid)
                    .and_then(|commit| bay_core::record::Step::from_message(&commit.message).ok())
                    .map_or(0, |step| step.at.millis());
                (at, name, oid)
            })
            .collect();
        held.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        held.into_iter()
            .take(limit as usize)
            .map(|(_, name, oid)| (name.clone(), oid.clone()))
            .collect()
    }

    pub fn read_steps(&self, oids: &[Oid]) -> Vec<RawStep> {
        oids.iter()
            .filter_map(|oid| {
                let commit = self.store.get(oid)?;
                Some(RawStep {
                    oid: oid.clone(),
                    message: commit.message.to_string(),
                })
            })
            .collect()
    }

    /// Each chain walked back from its tip; one whose walk meets an object that is not a
    /// commit is unreadable, alone, as Git's reader answers it.
    pub fn read_chains(&self, chains: Vec<ChainQuery>) -> Vec<ChainRead> {
        chains
            .into_iter()
            .map(|query| {
                let (oids, reached_known) =
                    self.store.first_parents(&query.tip, query.known.as_ref());
                let mut steps = Vec::with_capacity(oids.len());
                for oid in oids {
                    let Some(commit) = self.store.get(&oid) else {
                        let why = format!("{oid} is {}, not a commit", self.store.kind(&oid));
                        return ChainRead::unreadable(&query, why);
                    };
                    let message = commit.message.to_string();
                    steps.push(RawStep { oid, message });
                }
                ChainRead {
                    change: query.change,
                    tip: query.tip,
                    steps,
                    reached_known,
                    unreadable: None,
                }
            })
            .collect()
    }

    pub fn read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, Fault> {
        if self.store.get(commit).is_none() {
            return Err(Fault(format!("no commit {commit}")));
        }
        Ok(self
            .store
            .read(commit, path)
            .map(|text| text.as_bytes().to_vec()))
    }

    /// Each commit's tree, in order; a missing commit is a fault.
    pub fn read_trees(&self, commits: &[Oid]) -> Result<Vec<Oid>, Fault> {
        commits
            .iter()
            .map(|commit| {
                self.store
                    .get(commit)
                    .map(|c| c.tree.clone())
                    .ok_or_else(|| Fault(format!("no commit {commit}")))
            })
            .collect()
    }

    /// Every file of each commit's tree under one of `under`, sorted by path; the model's files
    /// are all plain (`100644`).
    pub fn read_files(
        &self,
        commits: &[Oid],
        under: &[String],
    ) -> Result<Vec<Vec<TreeFile>>, Fault> {
        commits
            .iter()
            .map(|commit| {
                let files = self.files(commit)?;
                Ok(files
                    .iter()
                    .filter(|(path, _)| under.iter().any(|p| path.starts_with(p.as_str())))
                    .map(|(path, oid)| TreeFile {
                        path: path.clone(),
                        mode: "100644".into(),
                        oid: oid.clone(),
                    })
                    .collect())
            })
            .collect()
    }

    /// `git diff-tree --raw --numstat` and the new blobs' sizes (see [`Store::stats`]).
    pub fn read_stats(&self, base: &Oid, commit: &Oid) -> Result<Vec<PathStat>, Fault> {
        self.store
            .stats(base, commit)
            .ok_or_else(|| Fault(format!("no commit {base} or no commit {commit}")))
    }

    fn files(&self, commit: &Oid) -> Result<std::sync::Arc<Tree>, Fault> {
        self.store
            .files(commit)
            .ok_or_else(|| Fault(format!("no commit {commit}")))
    }

    /// `git merge-tree --write-tree --merge-base=<merge_base> <base> <draft>`, then
    /// `git commit-tree` with `base` as the only parent.
    pub fn build(&mut self, spec: &CandidateSpec) -> Result<BuildResult, Fault> {
        let missing: Vec<Oid> = [&spec.draft, &spec.merge_base]
            .into_iter()
            .filter(|commit| self.store.get(commit).is_none())
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Ok(BuildResult::Missing { commits: missing });
        }
        let (ours, theirs, ancestor) = (
            self.files(&spec.base)?,
            self.files(&spec.draft)?,
            self.files(&spec.merge_base)?,
        );
        match Store::merge(&ancestor, &ours, &theirs) {
            Merged::Conflict { paths, .. } => Ok(BuildResult::Conflict { paths }),
            Merged::Clean(tree) => {
                let changed_paths = tree
                    .iter()
                    .filter(|(path, blob)| ours.get(*path) != Some(blob))
                    .map(|(path, _)| path.clone())
                    .chain(
                        ours.keys()
                            .filter(|path| !tree.contains_key(*path))
                            .cloned(),
                    )
                    .collect();
                let tree_oid = self.store.tree(tree);
                let base_tree = self
                    .store
                    .get(&spec.base)
                    .map(|c| c.tree.clone())
                    .expect("base was read above");
                let commit = self
                    .commit_signed(
                        tree_oid.clone(),
                        vec![spec.base.clone()],
                        &spec.message,
                        spec.sign.as_deref(),
                    )
                    .map_err(|why| Fault(format!("bay.executorKey: {why}")))?;
                Ok(BuildResult::Clean {
                    commit,
                    tree: tree_oid,
                    base_tree,
                    changed_paths,
                })
            }
        }
    }

    /// The paths that conflict when `draft` (made on `base`) is merged onto `onto`.
    fn test_merge(&self, onto: &Oid, draft: &Oid, base: &Oid) -> Result<Vec<String>, Fault> {
        let (ours, theirs, ancestor) = (self.files(onto)?, self.files(draft)?, self.files(base)?);
        Ok(match Store::merge(&ancestor, &ours, &theirs) {
            Merged::Clean(_) => Vec::new(),
            Merged::Conflict { paths, .. } => paths,
        })
    }

    /// Brings a draft up to `onto`, main's side being Git's "ours", its conflicts marked as
    /// [`GitModel::merge_marked`] does.
    pub fn refresh(
        &mut self,
        change: &ChangeId,
        draft: &Oid,
        base: &Oid,
        onto: &Oid,
        labels: &Labels,
    ) -> Result<Refreshed, Fault> {
        let (ours, theirs, ancestor) = (self.files(onto)?, self.files(draft)?, self.files(base)?);
        let (tree, conflicts, marked) = self.merge_marked(&ancestor, &ours, &theirs, labels);
        let tree = self.store.tree(tree);
        let draft = self.store.commit(
            tree,
            vec![onto.clone()],
            &format!("draft of {change}, brought up to main\n"),
        );
        Ok(Refreshed {
            draft,
            conflicts,
            marked,
        })
    }

    /// Merges `theirs` onto `ours` over `ancestor`, as `git merge-tree` does. A path both
    /// changed as text holds the whole of both sides between marker lines named by `labels`,
    /// as Git's markers around a conflicting hunk; a binary file keeps `ours`, and one a side
    /// deleted the other side's, with no markers, as Git leaves them. Every marker line
    /// written is kept in [`GitModel::markers_written`]. Gives the tree, the conflicting
    /// paths, and those holding markers.
    fn merge_marked(
        &mut self,
        ancestor: &Tree,
        ours: &Tree,
        theirs: &Tree,
        labels: &Labels,
    ) -> (Tree, Vec<String>, Vec<String>) {
        let (paths, mut tree) = match Store::merge(ancestor, ours, theirs) {
            Merged::Clean(tree) => return (tree, Vec::new(), Vec::new()),
            Merged::Conflict { paths, tree } => (paths, tree),
        };
        let mut marked = Vec::new();
        for path in &paths {
            let text = |side: &Tree| {
                let blob = side.get(path)?;
                let text = self.store.blob_text(blob)?;
                (!crate::store::is_binary(text)).then(|| text.to_owned())
            };
            match (
                text(ours),
                text(theirs),
                ours.get(path).or(theirs.get(path)),
            ) {
                (Some(mine), Some(other), _) => {
                    let [open, close] = <[String; 2]>::try_from(labels.lines())
                        .expect("an opening and a closing line");
                    let both = format!(
                        "{open}\n{}=======\n{}{close}\n",
                        with_end(&mine),
                        with_end(&other)
                    );
                    self.markers_written.extend([open, close]);
                    tree.insert(path.clone(), self.store.blob(&both));
                    marked.push(path.clone());
                }
                (_, _, Some(blob)) => {
                    tree.insert(path.clone(), blob.clone());
                }
                (_, _, None) => {
                    tree.remove(path);
                }
            }
        }
        (tree, paths, marked)
    }

    /// Saves a view as a draft on `parent`, as the Git driver does. A view made from a commit
    /// (its `head`) holds that commit's files outside its paths and its own inside them (a file
    /// the agent removed is gone); its work is a draft on `head`, or `head` itself when
    /// nothing changed. When the view grew from `parent` (or is it), that draft is the answer.
    /// When the record moved on to a draft this view never showed (saved on another machine,
    /// or by a refresh whose reply was lost), the view's work is carried onto `parent` as a
    /// three-way merge over `head`, so what `parent` holds (a refresh's markers among it)
    /// stays, conflicts marked under `labels`. A clean carry-over leaves the view showing the
    /// answer; one with conflicts leaves the view as it was, for bay to make it from the
    /// answer once a record names the markers. A view made by no `MakeView` (edits alone)
    /// lays its files over `parent`. With no view on this machine, the draft stays `parent`.
    pub fn freeze(
        &mut self,
        change: &ChangeId,
        view: Option<&mut View>,
        parent: Oid,
        labels: &Labels,
    ) -> Refreshed {
        let Some(view) = view else {
            return Refreshed::clean(parent);
        };
        let Some(head) = view.head.clone() else {
            return Refreshed::clean(self.save_over(change, view, &parent));
        };
        let work = self.save_over(change, view, &head);
        if work == parent || head == parent || self.store.is_ancestor(&parent, &head) {
            view.head = Some(work.clone());
            return Refreshed::clean(work);
        }
        let side = |oid: &Oid| {
            self.store
                .files(oid)
                .map(|f| (*f).clone())
                .unwrap_or_default()
        };
        let (ancestor, ours, theirs) = (side(&head), side(&parent), side(&work));
        // The record may already hold this very carry-over, with conflicts, made by a command
        // that stopped before it made the view from it: carrying again would nest markers.
        let before = self
            .store
            .get(&parent)
            .and_then(|commit| commit.parents.first().cloned());
        if let Some(before) = before {
            let (tree, conflicts, marked) =
                self.merge_marked(&ancestor, &side(&before), &theirs, labels);
            if !conflicts.is_empty() && Some(&tree) == self.store.files(&parent).as_deref() {
                return Refreshed {
                    draft: parent,
                    conflicts,
                    marked,
                };
            }
        }
        let (tree, conflicts, marked) = self.merge_marked(&ancestor, &ours, &theirs, labels);
        let tree = self.store.tree(tree);
        let carried = self
            .store
            .commit(tree, vec![parent], &format!("draft of {change}\n"));
        if conflicts.is_empty() {
            *view = self.view_of(&carried, &view.paths);
        }
        Refreshed {
            draft: carried,
            conflicts,
            marked,
        }
    }

    /// The view's files laid over `on`'s, outside the view's paths: `on` itself when they
    /// change nothing, else a draft commit on it.
    fn save_over(&mut self, change: &ChangeId, view: &View, on: &Oid) -> Oid {
        let mut files: Tree = self
            .store
            .files(on)
            .map(|f| (*f).clone())
            .unwrap_or_default();
        files.retain(|path, _| !paths::any_covers(&view.paths, path));
        files.extend(view.files.iter().map(|(p, b)| (p.clone(), b.clone())));
        let tree = self.store.tree(files);
        if self.store.get(on).is_some_and(|c| c.tree == tree) {
            return on.clone();
        }
        self.store
            .commit(tree, vec![on.clone()], &format!("draft of {change}\n"))
    }

    /// The first-parent log of `range` (`<from>..<to>`, or one commit), or of main: newest
    /// first, at most `limit`, leaving out every ancestor of `from`, as `git log
    /// --first-parent` does. A name is a commit id or a ref the model holds.
    fn read_log(&self, range: Option<&str>, limit: u32) -> Result<Vec<RawStep>, Fault> {
        let resolve = |name: &str| {
            Oid::parse(name)
                .ok()
                .filter(|oid| self.store.get(oid).is_some())
                .or_else(|| self.remote.get(name).cloned())
                .or_else(|| self.remote.get(&format!("refs/heads/{name}")).cloned())
                .ok_or_else(|| Fault(format!("no commit {name}")))
        };
        let (from, to) = match range {
            None => (
                None,
                resolve(&bay_core::git::refs::main(crate::world::MAIN))?,
            ),
            Some(range) => match range.split_once("..") {
                Some((from, to)) => (Some(resolve(from)?), resolve(to)?),
                None => (None, resolve(range)?),
            },
        };
        let excluded = self.ancestors(from);
        let mut log = Vec::new();
        let mut at = Some(to);
        while let Some(oid) = at.filter(|oid| !excluded.contains(oid)) {
            if log.len() >= limit as usize {
                break;
            }
            let commit = self
                .store
                .get(&oid)
                .ok_or_else(|| Fault(format!("no commit {oid}")))?;
            log.push(RawStep {
                oid: oid.clone(),
                message: commit.message.to_string(),
            });
            at = commit.parents.first().cloned();
        }
        Ok(log)
    }

    /// The newest of the newest `within` commits on `commit`'s first-parent line that added
    /// `path`.
    fn added(&self, commit: &Oid, path: &str, within: u32) -> Option<Oid> {
        let (line, _) = self.store.first_parents(commit, None);
        line.into_iter().take(within as usize).find(|oid| {
            let parent = self.store.get(oid).and_then(|c| c.parents.first().cloned());
            self.store.read(oid, path).is_some()
                && parent.is_none_or(|parent| self.store.read(&parent, path).is_none())
        })
    }

    /// `commit` and every commit it reaches, none for `None`.
    fn ancestors(&self, commit: Option<Oid>) -> std::collections::BTreeSet<Oid> {
        let mut seen = std::collections::BTreeSet::new();
        let mut stack: Vec<Oid> = commit.into_iter().collect();
        while let Some(oid) = stack.pop() {
            if seen.insert(oid.clone())
                && let Some(commit) = self.store.get(&oid)
            {
                stack.extend(commit.parents.iter().cloned());
            }
        }
        seen
    }

    /// The commits `query` names, oldest first, as `ReadHistory` answers, each merge with what
    /// it brought in (in id order: the model keeps no time). The model keeps no committer or
    /// time: those read as empty, and a query's `since` leaves nothing out.
    fn read_history(&self, query: &HistoryQuery) -> Result<Vec<MainCommit>, Fault> {
        let log = query.pick(self.read_log(Some(&query.range()), u32::MAX)?);
        log.into_iter()
            .map(|raw| {
                let mut commit = self.main_commit(&raw.oid)?;
                if let Some(first) = commit.parents.first().cloned()
                    && commit.parents.len() > 1
                {
                    let line = self.ancestors(Some(first));
                    let brought: Vec<Oid> = self
                        .ancestors(Some(raw.oid.clone()))
                        .difference(&line)
                        .filter(|oid| **oid != raw.oid)
                        .cloned()
                        .collect();
                    commit.off_first_parent = brought.len() as u64;
                    commit.brought = brought
                        .iter()
                        .take(bay_core::machine::BROUGHT_READ)
                        .map(|oid| self.main_commit(oid))
                        .collect::<Result<_, _>>()?;
                }
                Ok(commit)
            })
            .collect()
    }

    /// One commit as a history read gives it, with nothing brought in.
    fn main_commit(&self, oid: &Oid) -> Result<MainCommit, Fault> {
        let commit = self
            .store
            .get(oid)
            .ok_or_else(|| Fault(format!("no commit {oid}")))?;
        Ok(MainCommit {
            oid: oid.clone(),
            parents: commit.parents.clone(),
            at: Timestamp(0),
            committer: String::new(),
            message: commit.message.to_string(),
            off_first_parent: 0,
            brought: Vec::new(),
        })
    }

    /// The view of `commit` for a change that declared `paths`: the files they cover, as Git's
    /// sparse checkout shows them.
    pub fn view_of(&self, commit: &Oid, paths: &[String]) -> View {
        let mut files: Tree = self
            .store
            .files(commit)
            .map(|f| (*f).clone())
            .unwrap_or_default();
        files.retain(|path, _| paths::any_covers(paths, path));
        View {
            paths: paths.to_vec(),
            files,
            head: Some(commit.clone()),
        }
    }
}

/// A change's view on one machine: its declared paths, the files in it as the agent left
/// them, and the commit they grew from (its `HEAD`). A view made by no `MakeView` (no paths,
/// no head) stands for edits alone, laid over the draft.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View {
    pub paths: Vec<String>,
    pub files: Tree,
    pub head: Option<Oid>,
}

/// `text` ending in a line break, as a side between conflict markers must.
fn with_end(text: &str) -> String {
    match text.ends_with('\n') || text.is_empty() {
        true => text.to_owned(),
        false => format!("{text}\n"),
    }
}

/// A commit raw as the model writes it before any signature: tree, parents, a blank line and
/// the message.
fn unsigned_raw(tree: &Oid, parents: &[Oid], message: &str) -> String {
    let parents: String = parents
        .iter()
        .map(|parent| format!("parent {parent}\n"))
        .collect();
    format!("tree {tree}\n{parents}\n{message}")
}
