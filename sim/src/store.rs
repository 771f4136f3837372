//! Git objects in memory: blobs, trees (flat maps of path to blob) and commits, each named by a
//! hash of its content, so equal trees have equal ids as in Git. One store serves every machine
//! of a run: objects are immutable, so sharing them changes nothing a machine could observe
//! except that a fetch never has to copy them.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use bay_core::git::Oid;
use bay_core::limits::PathStat;
use bay_core::policy::{Policy, PolicyError};
use bay_core::record::{ChangeRecord, RecordError, STEP_SCHEMA, Step};
use sha2::{Digest, Sha256};

/// A tree: path to blob id. Paths are files; directories are implied by `/`.
pub type Tree = BTreeMap<String, Oid>;

/// A map keyed by object id, hashed with foldhash's fixed seed: ids are hex digits of a
/// digest, already spread evenly, so a fast hash does as well as SipHash at a fraction of its
/// cost; nothing iterates these maps, so their order is never observed.
type ById<V> = HashMap<Oid, V, foldhash::fast::FixedState>;

#[derive(Clone, Debug)]
pub struct Commit {
    pub tree: Oid,
    pub parents: Vec<Oid>,
    pub message: Arc<str>,
    /// The `gpgsig` header's value (lines after the first indented by one space), for a
    /// commit signed as Git signs commits.
    pub gpgsig: Option<Arc<str>>,
}

#[derive(Debug, Default)]
pub struct Store {
    /// Objects written before this store, shared and never written again: a seed's history,
    /// built once for every seed that starts from it (`crate::history`). Every read looks
    /// here after this store's own objects; every write goes into this store.
    below: Option<Arc<Store>>,
    blobs: ById<Arc<str>>,
    trees: ById<Arc<Tree>>,
    commits: ById<Commit>,
    /// Each step commit's step, parsed once when the commit is made: the checkers and the
    /// agents read chains far more often than anyone writes them.
    steps: ById<Arc<Step>>,
    /// The fold of the chain ending at each step commit a reader asked about, made from its
    /// parent's fold and its own step (`ChangeRecord::append`, which is `fold` one step at a
    /// time). Exact: a commit's id names its whole first-parent line, and objects never
    /// change. Behind a lock only so a shared history store stays `Sync`; no two threads
    /// write one store.
    folds: Mutex<ById<Folded>>,
    /// The empty tree's id once this store holds it: every step, log and presence commit
    /// has that tree, and hashing it again for each was a fiftieth of a run.
    empty_tree: Option<Oid>,
}

/// A policy text, parsed.
type Parsed = Result<Arc<Policy>, PolicyError>;

/// How many policy texts a thread keeps parsed; past that it forgets them all.
const POLICIES_KEPT: usize = 1_024;

thread_local! {
    /// `Policy::parse` of each text a checker or the world read as a policy, on this thread,
    /// for every seed it runs: a pure function of the text, and most seeds start from one of
    /// a few policies, which each parsed again cost a seed more than its first merge's checks.
    static POLICIES: RefCell<BTreeMap<Box<str>, Parsed>> = const { RefCell::new(BTreeMap::new()) };
}

/// The fold of one chain: `None` when a commit on it is no step.
type Folded = Option<Result<Arc<ChangeRecord>, RecordError>>;

/// What a three-way merge of trees gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Merged {
    Clean(Tree),
    /// The paths both sides changed differently; `tree` takes `ours` for each of them.
    Conflict {
        paths: Vec<String>,
        tree: Tree,
    },
}

fn hash(kind: &str, parts: &[&[u8]]) -> Oid {
    let mut hasher = Sha256::new();
    hasher.update(kind.as_bytes());
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    let digest = hasher.finalize();
    // Written digit by digit into a buffer of its own: a `format!` per byte cost a tenth of
    // building a long history, and a string grown a character at a time cost more than the
    // digest.
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = [0u8; 40];
    for (pair, b) in hex.chunks_exact_mut(2).zip(&digest[..20]) {
        pair[0] = DIGITS[usize::from(b >> 4)];
        pair[1] = DIGITS[usize::from(b & 15)];
    }
    let hex = std::str::from_utf8(&hex).expect("hex digits are ASCII");
    Oid::parse(hex).expect("40 hex digits make an object id")
}

impl Store {
    /// An empty store over the objects of `below`.
    pub fn over(below: Arc<Store>) -> Store {
        Store {
            below: Some(below),
            ..Store::default()
        }
    }

    /// The best common ancestor of `one` and `two` that `git merge-base` names: of several
    /// (a criss-cross), the first Git's walk finds; none when they share no history. A
    /// contract case holds the two together.
    pub fn merge_base(&self, one: &Oid, two: &Oid) -> Option<Oid> {
        const ONE: u8 = 1;
        const TWO: u8 = 2;
        const STALE: u8 = 4;
        const RESULT: u8 = 8;
        if one == two {
            return Some(one.clone());
        }
        // Git's walk (`paint_down_to_common`): commits in date order, and the model's
        // commits have no date, so in the order met. A commit both sides reach is a
        // candidate, and what lies behind it is stale.
        let mut flags: HashMap<Oid, u8> = HashMap::from([(one.clone(), ONE), (two.clone(), TWO)]);
        let mut queue = std::collections::VecDeque::from([one.clone(), two.clone()]);
        let mut found = Vec::new();
        while queue.iter().any(|oid| flags[oid] & STALE == 0) {
            let Some(oid) = queue.pop_front() else { break };
            let mut spread = flags[&oid] & (ONE | TWO | STALE);
            if spread == ONE | TWO {
                if flags[&oid] & RESULT == 0 {
                    flags.insert(oid.clone(), flags[&oid] | RESULT);
                    found.push(oid.clone());
                }
                spread |= STALE;
            }
            for parent in self
                .get(&oid)
                .map(|c| c.parents.clone())
                .unwrap_or_default()
            {
                let now = flags.get(&parent).copied().unwrap_or(0);
                if now & spread != spread {
                    flags.insert(parent.clone(), now | spread);
                    queue.push_back(parent);
                }
            }
        }
        // The candidates not behind another, in the order found; Git names the first.
        let bases: Vec<Oid> = found
            .into_iter()
            .filter(|oid| flags[oid] & STALE == 0)
            .collect();
        bases
            .iter()
            .find(|base| {
                !bases
                    .iter()
                    .any(|other| other != *base && self.ancestors(other).contains(*base))
            })
            .cloned()
    }

    /// `oid` and every commit behind it.
    fn ancestors(&self, oid: &Oid) -> BTreeSet<Oid> {
        let mut seen = BTreeSet::new();
        let mut next = vec![oid.clone()];
        while let Some(oid) = next.pop() {
            if let Some(commit) = self.get(&oid).filter(|_| seen.insert(oid.clone())) {
                next.extend(commit.parents.iter().cloned());
            }
        }
        seen
    }

    pub fn blob(&mut self, content: &str) -> Oid {
        let oid = hash("blob", &[content.as_bytes()]);
        self.blobs
            .entry(oid.clone())
            .or_insert_with(|| Arc::from(content));
        oid
    }

    pub fn blob_text(&self, oid: &Oid) -> Option<&str> {
        match self.blobs.get(oid) {
            Some(text) => Some(text),
            None => self.below.as_ref()?.blob_text(oid),
        }
    }

    /// What kind of object `oid` is, as a sentence names it: `a blob`, `a tree`, `a commit`,
    /// or `no object` this store holds.
    pub fn kind(&self, oid: &Oid) -> &'static str {
        if self.blobs.contains_key(oid) {
            "a blob"
        } else if self.trees.contains_key(oid) {
            "a tree"
        } else if self.commits.contains_key(oid) {
            "a commit"
        } else {
            self.below
                .as_ref()
                .map_or("no object", |below| below.kind(oid))
        }
    }

    pub fn tree(&mut self, tree: Tree) -> Oid {
        let mut bytes = Vec::new();
        for (path, blob) in &tree {
            bytes.extend_from_slice(path.as_bytes());
            bytes.push(0);
            bytes.extend_from_slice(blob.as_str().as_bytes());
            bytes.push(0);
        }
        let oid = hash("tree", &[&bytes]);
        self.trees
            .entry(oid.clone())
            .or_insert_with(|| Arc::new(tree));
        oid
    }

    /// The empty tree, as [`Store::tree`] of no files makes it.
    pub fn empty_tree(&mut self) -> Oid {
        if let Some(empty) = &self.empty_tree {
            return empty.clone();
        }
        let empty = self.tree(Tree::new());
        self.empty_tree = Some(empty.clone());
        empty
    }

    pub fn tree_of(&self, oid: &Oid) -> Option<Arc<Tree>> {
        match self.trees.get(oid) {
            Some(tree) => Some(tree.clone()),
            None => self.below.as_ref()?.tree_of(oid),
        }
    }

    pub fn commit(&mut self, tree: Oid, parents: Vec<Oid>, message: &str) -> Oid {
        self.signed_commit(tree, parents, message, None)
    }

    /// A commit with a `gpgsig` header (see [`Commit::gpgsig`]), or none.
    pub fn signed_commit(
        &mut self,
        tree: Oid,
        parents: Vec<Oid>,
        message: &str,
        gpgsig: Option<&str>,
    ) -> Oid {
        // Most commits have one parent or none, whose text needs no string of its own.
        let parent_text = match parents.as_slice() {
            [] => std::borrow::Cow::Borrowed(""),
            [one] => std::borrow::Cow::Borrowed(one.as_str()),
            more => {
                std::borrow::Cow::Owned(more.iter().map(Oid::as_str).collect::<Vec<_>>().join(" "))
            }
        };
        let (tree_text, message_text) = (tree.as_str().as_bytes(), message.as_bytes());
        let oid = match gpgsig {
            None => hash("commit", &[tree_text, parent_text.as_bytes(), message_text]),
            Some(gpgsig) => hash(
                "commit",
                &[
                    tree_text,
                    parent_text.as_bytes(),
                    message_text,
                    gpgsig.as_bytes(),
                ],
            ),
        };
        // A commit already held was parsed when it was made: same id, same message.
        if message.starts_with("bay: ")
            && may_be_step(message)
            && self.get(&oid).is_none()
            && let Ok(step) = Step::from_message(message)
        {
            self.steps.insert(oid.clone(), Arc::new(step));
        }
        self.commits.entry(oid.clone()).or_insert_with(|| Commit {
            tree,
            parents,
            message: Arc::from(message),
            gpgsig: gpgsig.map(Arc::from),
        });
        oid
    }

    /// The step a step commit carries.
    pub fn step(&self, oid: &Oid) -> Option<Arc<Step>> {
        match self.steps.get(oid) {
            Some(step) => Some(step.clone()),
            None => self.below.as_ref()?.step(oid),
        }
    }

    /// The steps of the chain ending at `tip`, oldest first; `None` if one is not a step.
    pub fn chain(&self, tip: &Oid) -> Option<Vec<Step>> {
        let (oids, _) = self.first_parents(tip, None);
        oids.iter()
            .rev()
            .map(|oid| self.step(oid).map(|step| (*step).clone()))
            .collect()
    }

    /// `ChangeRecord::fold` of [`Store::chain`] at `tip`, as that gives it, each chain commit
    /// folded once: a fold from the nearest commit below `tip` already folded, step by step.
    pub fn fold(&self, tip: &Oid) -> Folded {
        let mut folds = self.folds.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(folded) = folds.get(tip) {
            return folded.clone();
        }
        // Walk down the first parents to a commit already folded, or the chain's root.
        let mut above = Vec::new();
        let mut at = tip.clone();
        let mut below: Folded = loop {
            if let Some(folded) = folds.get(&at) {
                break folded.clone();
            }
            let Some(step) = self.step(&at) else {
                break None;
            };
            let parent = self.get(&at).and_then(|c| c.parents.first().cloned());
            above.push((at, step));
            match parent {
                Some(parent) => at = parent,
                None => {
                    let (root, step) = above.pop().expect("just pushed");
                    let folded =
                        Some(ChangeRecord::fold(std::slice::from_ref(&*step)).map(Arc::new));
                    folds.insert(root, folded.clone());
                    break folded;
                }
            }
        };
        // Fold each commit above onto the one below it, oldest first.
        while let Some((oid, step)) = above.pop() {
            below = match below {
                Some(Ok(record)) => {
                    let mut record = (*record).clone();
                    Some(record.append(&step).map(|()| Arc::new(record)))
                }
                other => other,
            };
            folds.insert(oid, below.clone());
        }
        below
    }

    pub fn get(&self, oid: &Oid) -> Option<&Commit> {
        match self.commits.get(oid) {
            Some(commit) => Some(commit),
            None => self.below.as_ref()?.get(oid),
        }
    }

    /// The tree of a commit, as a map.
    pub fn files(&self, commit: &Oid) -> Option<Arc<Tree>> {
        self.tree_of(&self.get(commit)?.tree)
    }

    /// `Policy::parse` of the file at `path` in `commit`, each text parsed once on a thread.
    pub fn policy(&self, commit: &Oid, path: &str) -> Option<Parsed> {
        let text = self.read(commit, path)?;
        if let Some(parsed) = POLICIES.with(|policies| policies.borrow().get(text).cloned()) {
            return Some(parsed);
        }
        let parsed = Policy::parse(text).map(Arc::new);
        POLICIES.with(|policies| {
            let mut policies = policies.borrow_mut();
            if policies.len() >= POLICIES_KEPT {
                policies.clear();
            }
            policies.insert(text.into(), parsed.clone());
        });
        Some(parsed)
    }

    /// The content of `path` at `commit`.
    pub fn read(&self, commit: &Oid, path: &str) -> Option<&str> {
        let files = self.files(commit)?;
        let blob = files.get(path)?;
        self.blob_text(blob)
    }

    /// What each path `commit` changes against `base` weighs, as the driver reads it from
    /// `git diff-tree --raw --numstat`: every path whose blob differs, sorted, with its size in
    /// `commit` (none when deleted), whether `base` lacks it, and the lines it adds and removes
    /// (none when either side is binary, as Git takes a text with a NUL byte in its first 8,000
    /// bytes). `None` if a commit is missing.
    pub fn stats(&self, base: &Oid, commit: &Oid) -> Option<Vec<PathStat>> {
        let (before, after) = (self.files(base)?, self.files(commit)?);
        let paths: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
        let text = |tree: &Tree, path: &str| tree.get(path).and_then(|b| self.blob_text(b));
        Some(
            paths
                .into_iter()
                .filter(|path| before.get(*path) != after.get(*path))
                .map(|path| {
                    let (old, new) = (text(&before, path), text(&after, path));
                    let binary = old.is_some_and(is_binary) || new.is_some_and(is_binary);
                    let lines =
                        (!binary).then(|| line_counts(old.unwrap_or(""), new.unwrap_or("")));
                    PathStat::new(
                        path,
                        new.map(|new| new.len() as u64),
                        !before.contains_key(path.as_str()),
                        lines,
                    )
                })
                .collect(),
        )
    }

    /// Whether `ancestor` is reachable from `descendant` (itself included).
    pub fn is_ancestor(&self, ancestor: &Oid, descendant: &Oid) -> bool {
        let mut seen = BTreeSet::new();
        let mut stack = vec![descendant.clone()];
        while let Some(oid) = stack.pop() {
            if &oid == ancestor {
                return true;
            }
            if !seen.insert(oid.clone()) {
                continue;
            }
            // First parents last, so they are walked first: a chain's old tip lies on its
            // first-parent line, and a carried draft's parents reach all of main's history.
            if let Some(commit) = self.get(&oid) {
                stack.extend(commit.parents.iter().rev().cloned());
            }
        }
        false
    }

    /// Walks first parents from `tip`, newest first, stopping before `stop` if it meets it.
    pub fn first_parents(&self, tip: &Oid, stop: Option<&Oid>) -> (Vec<Oid>, bool) {
        let mut out = Vec::new();
        let mut at = Some(tip.clone());
        while let Some(oid) = at {
            if Some(&oid) == stop {
                return (out, true);
            }
            at = self.get(&oid).and_then(|c| c.parents.first().cloned());
            out.push(oid);
        }
        (out, false)
    }

    /// A three-way merge path by path, as `git merge-tree` does for whole files: a path
    /// changed on one side only takes that side; changed the same way on both, either; changed
    /// differently on both, a conflict. A file where the other side made a directory is a
    /// conflict on the file's path, as Git's file/directory conflict is.
    pub fn merge(base: &Tree, ours: &Tree, theirs: &Tree) -> Merged {
        let paths: BTreeSet<&String> = base
            .keys()
            .chain(ours.keys())
            .chain(theirs.keys())
            .collect();
        let mut tree = Tree::new();
        let mut conflicts = Vec::new();
        for path in paths {
            let (b, o, t) = (base.get(path), ours.get(path), theirs.get(path));
            let pick = if o == t || t == b {
                o
            } else if o == b {
                t
            } else {
                conflicts.push(path.clone());
                o
            };
            if let Some(oid) = pick {
                tree.insert(path.clone(), oid.clone());
            }
        }
        // A file whose path is also a directory of another file: Git cannot write that tree.
        // (One buffer for every path's `path/`, not a new string or two for each.)
        let mut dir = String::new();
        for path in tree.keys() {
            dir.clear();
            dir.push_str(path);
            dir.push('/');
            if tree
                .range::<str, _>((
                    std::ops::Bound::Included(dir.as_str()),
                    std::ops::Bound::Unbounded,
                ))
                .next()
                .is_some_and(|(next, _)| next.starts_with(&dir))
            {
                conflicts.push(path.clone());
            }
        }
        conflicts.sort();
        conflicts.dedup();
        if conflicts.is_empty() {
            Merged::Clean(tree)
        } else {
            Merged::Conflict {
                paths: conflicts,
                tree,
            }
        }
    }
}

/// Whether `message` could be a step's: `Step::from_message` takes only a body whose
/// `schema` is `bay.step/1`, and JSON can spell that string otherwise only with an escape. So
/// a runner's presence or log event, which names another schema, skips a parse bound to fail.
fn may_be_step(message: &str) -> bool {
    message.contains(STEP_SCHEMA) || message.contains('\\')
}

/// Whether Git's diff takes `text` as binary: a NUL byte in its first 8,000 bytes.
pub fn is_binary(text: &str) -> bool {
    text.bytes().take(8_000).any(|b| b == 0)
}

/// The lines of `new` that a minimal line diff from `old` adds, and those of `old` it removes:
/// every line of each outside a longest common subsequence of the two, a line's ending included (so a last line that gains
/// its newline counts as added, as in Git). Git's own diff is minimal for files as small as the
/// simulator's; for large ones its heuristics may count a few more.
fn line_counts(old: &str, new: &str) -> (u64, u64) {
    let old: Vec<&str> = old.split_inclusive('\n').collect();
    let new: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old, new) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    // The length of a longest common subsequence, one row at a time.
    let mut row = vec![0usize; new.len() + 1];
    for line in old {
        let mut diagonal = 0;
        for (j, other) in new.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if line == other {
                diagonal + 1
            } else {
                above.max(row[j])
            };
            diagonal = above;
        }
    }
    let common = row[new.len()];
    ((new.len() - common) as u64, (old.len() - common) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(store: &mut Store, files: &[(&str, &str)]) -> Tree {
        files
            .iter()
            .map(|(path, text)| (path.to_string(), store.blob(text)))
            .collect()
    }

    #[test]
    fn a_step_message_names_the_step_schema_and_others_are_not_parsed() {
        let step = Step {
            change: bay_core::id::ChangeId::parse("abcdefgh").expect("an id"),
            at: bay_core::time::Timestamp(0),
            by: "runner".into(),
            nonce: 1,
            body: bay_core::record::StepBody::Abandon,
        };
        let message = step.to_message();
        assert!(may_be_step(&message));
        let mut store = Store::default();
        let empty = store.tree(Tree::new());
        let oid = store.commit(empty, Vec::new(), &message);
        assert_eq!(store.step(&oid).as_deref(), Some(&step));
        // A body that names another schema is no step, with or without the check.
        let other = "bay: presence r\n\n{\"schema\":\"bay.presence/1\"}\n";
        assert!(!may_be_step(other) && Step::from_message(other).is_err());
        // An escape could spell the schema: such a message is parsed.
        let escaped = message.replace("bay.step/1", "bay.step\\/1");
        assert!(may_be_step(&escaped));
        assert_eq!(Step::from_message(&escaped).ok(), Some(step));
    }

    #[test]
    fn equal_content_has_equal_ids() {
        let mut store = Store::default();
        let a = tree(&mut store, &[("a", "1")]);
        let b = tree(&mut store, &[("a", "1")]);
        assert_eq!(store.tree(a), store.tree(b));
    }

    #[test]
    fn merge_takes_each_side_and_finds_conflicts() {
        let mut store = Store::default();
        let base = tree(&mut store, &[("a", "1"), ("b", "1"), ("c", "1")]);
        let ours = tree(&mut store, &[("a", "2"), ("b", "1"), ("c", "2")]);
        let theirs = tree(
            &mut store,
            &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "1")],
        );
        let Merged::Conflict {
            paths,
            tree: merged,
        } = Store::merge(&base, &ours, &theirs)
        else {
            panic!("c changed differently on both sides");
        };
        assert_eq!(paths, vec!["c".to_string()]);
        assert_eq!(merged["a"], ours["a"]);
        assert_eq!(merged["b"], theirs["b"]);
        assert_eq!(merged["d"], theirs["d"]);
    }

    #[test]
    fn lines_added_and_removed_are_those_outside_a_longest_common_run() {
        assert_eq!(line_counts("", "a\nb\n"), (2, 0));
        assert_eq!(line_counts("a\nb\n", ""), (0, 2));
        assert_eq!(line_counts("a\nb\nc\nd\n", "d\na\nb\nc\nx\n"), (2, 1));
        assert_eq!(
            line_counts("end\n", "end"),
            (1, 1),
            "a lost newline changes the line"
        );
        assert_eq!(line_counts("same\n", "same\n"), (0, 0));
        assert!(is_binary("x\0y") && !is_binary("plain\n"));
        assert!(
            !is_binary(&format!("{}\0", "x".repeat(8_000))),
            "only the first 8,000 bytes"
        );
    }

    #[test]
    fn a_deletion_on_one_side_wins_over_no_change() {
        let mut store = Store::default();
        let base = tree(&mut store, &[("a", "1")]);
        let ours = Tree::new();
        assert_eq!(
            Store::merge(&base, &ours, &base),
            Merged::Clean(Tree::new())
        );
    }
}
