//! The shared Git remote of a run: refs over the shared object store, with Git's push rules.
//!
//! A push writes its commits, then checks each ref's lease: `Absent` (create-only), `Is(old)`
//! (compare-and-swap) or `Any` (forced). An atomic push applies every ref or none; a
//! non-atomic one applies each ref whose lease holds. This is what `git push --atomic
//! --porcelain --force-with-lease=<ref>:<expect>` does against a bare repository, and the
//! conformance suite holds the two to the same cases.

use std::collections::BTreeMap;

use bay_core::git::{Oid, refs};
use bay_core::machine::{Append, Expect, NewValue, PushOutcome, PushPlan, PushReport};

use crate::store::{Store, Tree};

/// One ref's change, as a push applied it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefMove {
    pub name: String,
    pub old: Option<Oid>,
    pub new: Option<Oid>,
}

/// The answer to a push of which nothing reached the remote, for `why`.
pub fn not_sent(why: String) -> bay_core::machine::PushReport {
    bay_core::machine::PushReport {
        steps: Vec::new(),
        notes: Vec::new(),
        log: None,
        presence: None,
        indexes: Vec::new(),
        outcome: bay_core::machine::PushOutcome::NotSent(bay_core::machine::Fault(why)),
    }
}

/// What one accepted push changed.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    pub moves: Vec<RefMove>,
}

#[derive(Debug, Default)]
pub struct Remote {
    pub refs: BTreeMap<String, Oid>,
    /// A deliberate break from Git's rules, for the test that shows the conformance suite
    /// catches a model that drifts from Git.
    #[cfg(feature = "flaws")]
    pub flaw: Option<Flaw>,
}

/// Ways the model can be broken on purpose (feature `flaws`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flaw {
    /// An atomic push applies the refs whose leases hold and refuses the others.
    NonAtomicPush,
    /// A create-only update overwrites a ref that exists.
    CreateOverwrites,
}

/// The commits a plan writes, before any ref moves: what a client writes into its own object
/// database before it pushes.
pub fn write_objects(store: &mut Store, plan: &PushPlan) -> Vec<Vec<Oid>> {
    plan.appends
        .iter()
        .map(|append| write_steps(store, append))
        .collect()
}

/// The step commits of one append, each on the one before (or on the append's parent), the
/// carried commit on the carrier step: what a push writes, and `Action::WriteSteps`.
pub fn write_steps(store: &mut Store, append: &Append) -> Vec<Oid> {
    let empty = store.empty_tree();
    let mut written = Vec::with_capacity(append.steps.len());
    let mut parent = append.parent.clone();
    for (index, step) in append.steps.iter().enumerate() {
        let mut parents: Vec<Oid> = parent.iter().cloned().collect();
        if index == append.carrier() {
            parents.extend(append.carry.iter().cloned());
        }
        let oid = store.commit(empty.clone(), parents, &step.to_message());
        written.push(oid.clone());
        parent = Some(oid);
    }
    written
}

impl Remote {
    /// The index's shards (`refs/bay/compacted/...`) as the remote holds them now, by name.
    /// The checker asks after every push: the shards lie together in name order, so only
    /// they are walked, not every ref.
    pub fn index_shards(&self) -> BTreeMap<String, Oid> {
        self.refs
            .range::<str, _>((
                std::ops::Bound::Included(refs::INDEX),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(name, _)| refs::is_index(name))
            .map(|(name, tip)| (name.clone(), tip.clone()))
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<&Oid> {
        self.refs.get(name)
    }

    #[cfg(feature = "flaws")]
    fn flawed(&self, flaw: Flaw) -> bool {
        self.flaw == Some(flaw)
    }

    #[cfg(not(feature = "flaws"))]
    fn flawed(&self, _: Flaw) -> bool {
        false
    }

    fn lease_holds(&self, name: &str, expect: &Expect) -> bool {
        match expect {
            Expect::Absent => !self.refs.contains_key(name) || self.flawed(Flaw::CreateOverwrites),
            Expect::Is(oid) => self.refs.get(name) == Some(oid),
            Expect::Any => true,
        }
    }

    /// Writes the plan's objects and applies its ref updates. Returns the report a client
    /// would get, and what moved.
    pub fn push(
        &mut self,
        store: &mut Store,
        plan: &PushPlan,
        notes_tips: &mut NotesLog,
    ) -> (PushReport, Applied) {
        let steps = write_objects(store, plan);
        let mut notes = Vec::with_capacity(plan.notes.len());
        // (name, expect, new) for every ref the push moves; `None` deletes it.
        let mut updates: Vec<(String, Expect, Option<Oid>)> = Vec::new();
        for (append, written) in plan.appends.iter().zip(&steps) {
            let tip = written.last().cloned().or_else(|| append.parent.clone());
            if let Some(tip) = tip {
                updates.push((
                    refs::change(&append.change),
                    append.expect.clone(),
                    Some(tip),
                ));
            }
        }
        // Notes for one producer in one plan build on each other and move its ref once, under
        // the first note's lease, as the Git driver writes them.
        for note in &plan.notes {
            let name = refs::evidence(&note.producer);
            let earlier = updates.iter().position(|(moved, ..)| *moved == name);
            let parent = match (earlier, &note.expect) {
                (Some(at), _) => updates[at].2.clone(),
                (None, Expect::Is(oid)) => Some(oid.clone()),
                (None, _) => self.refs.get(&name).cloned(),
            };
            let oid = notes_tips.write(store, parent, &note.object, &note.record);
            notes.push(oid.clone());
            match earlier {
                Some(at) => updates[at].2 = Some(oid),
                None => updates.push((name, note.expect.clone(), Some(oid))),
            }
        }
        // The event on the runner's log, as the Git driver writes it.
        let log = plan.log.as_ref().map(|log| {
            let empty = store.empty_tree();
            let parents = log.parent.iter().cloned().collect();
            let mut oid = store.commit(empty.clone(), parents, &log.message);
            // A batch's further events, each on the one before.
            for message in &log.more {
                oid = store.commit(empty.clone(), vec![oid], message);
            }
            updates.push((
                refs::log(&log.runner),
                log.expect.clone(),
                Some(oid.clone()),
            ));
            oid
        });
        // A runner's presence, as the Git driver writes it: one commit with no parent.
        let presence = plan.presence.as_ref().map(|presence| {
            let empty = store.empty_tree();
            let oid = store.commit(empty, Vec::new(), &presence.message);
            updates.push((
                refs::executor(&presence.runner),
                presence.expect.clone(),
                Some(oid.clone()),
            ));
            oid
        });
        // A commit of each index shard, as the Git driver writes it: the base's files with the
        // plan's put in, a child of its parent (the base, or none).
        let mut indexes = Vec::with_capacity(plan.indexes.len());
        for index in &plan.indexes {
            let mut files: Tree = index
                .base
                .as_ref()
                .and_then(|base| store.files(base))
                .map(|files| (*files).clone())
                .unwrap_or_default();
            for (path, content) in &index.files {
                files.insert(path.clone(), store.blob(content));
            }
            let tree = store.tree(files);
            let parents = index.parent.iter().cloned().collect();
            let oid = store.commit(tree, parents, &index.message);
            updates.push((index.shard.clone(), index.expect.clone(), Some(oid.clone())));
            indexes.push(oid);
        }
        for update in &plan.updates {
            let new = match &update.new {
                NewValue::Oid(oid) => Some(Some(oid.clone())),
                NewValue::Delete => Some(None),
                NewValue::Step { append, step } => steps
                    .get(*append)
                    .and_then(|s| s.get(*step))
                    .cloned()
                    .map(Some),
            };
            if let Some(new) = new {
                updates.push((update.name.clone(), update.expect.clone(), new));
            }
        }
        let stale: Vec<String> = updates
            .iter()
            .filter(|(name, expect, _)| !self.lease_holds(name, expect))
            .map(|(name, _, _)| name.clone())
            .collect();
        // Git cannot send a commit whose parent is no commit (a tip pointed at a blob, a draft
        // the client never held): the remote's unpacker fails, and no ref of the push moves.
        let written = steps
            .iter()
            .flatten()
            .chain(&notes)
            .chain(log.iter())
            .chain(presence.iter())
            .chain(&indexes);
        let unsendable = written
            .filter_map(|commit| store.get(commit))
            .any(|commit| commit.parents.iter().any(|p| store.get(p).is_none()));
        let mut applied = Applied::default();
        let atomic = plan.atomic && !self.flawed(Flaw::NonAtomicPush);
        let outcome = if unsendable {
            PushOutcome::Rejected {
                refs: updates.iter().map(|(name, ..)| name.clone()).collect(),
            }
        } else if atomic && !stale.is_empty() {
            PushOutcome::Rejected { refs: stale }
        } else {
            for (name, expect, new) in &updates {
                if self.lease_holds(name, expect) {
                    let old = match new {
                        Some(new) => self.refs.insert(name.clone(), new.clone()),
                        None => self.refs.remove(name),
                    };
                    applied.moves.push(RefMove {
                        name: name.clone(),
                        old,
                        new: new.clone(),
                    });
                }
            }
            if stale.is_empty() {
                PushOutcome::Accepted
            } else {
                PushOutcome::Rejected { refs: stale }
            }
        };
        (
            PushReport {
                steps,
                notes,
                log,
                presence,
                indexes,
                outcome,
            },
            applied,
        )
    }

    /// A push made outside bay: main moved forward by someone's own commit.
    pub fn outside_push(
        &mut self,
        store: &mut Store,
        main: &str,
        path: &str,
        content: &str,
    ) -> Applied {
        let name = refs::main(main);
        let Some(old) = self.refs.get(&name).cloned() else {
            return Applied::default();
        };
        let mut files = (*store.files(&old).unwrap_or_default()).clone();
        let blob = store.blob(content);
        files.insert(path.to_string(), blob);
        let tree = store.tree(files);
        let commit = store.commit(tree, vec![old.clone()], &format!("outside: {content}\n"));
        self.refs.insert(name.clone(), commit.clone());
        Applied {
            moves: vec![RefMove {
                name,
                old: Some(old),
                new: Some(commit),
            }],
        }
    }
}

/// Evidence notes, kept as Git keeps them: each producer's notes ref is a chain of commits,
/// and each note is a blob of JSON lines under the annotated object's id (appended to, like
/// `git notes append`).
#[derive(Debug, Default)]
pub struct NotesLog {
    /// For each notes commit, the note text per annotated object.
    pub trees: BTreeMap<Oid, BTreeMap<Oid, String>>,
}

impl NotesLog {
    fn write(&mut self, store: &mut Store, parent: Option<Oid>, object: &Oid, record: &str) -> Oid {
        let mut notes = parent
            .as_ref()
            .and_then(|p| self.trees.get(p))
            .cloned()
            .unwrap_or_default();
        let text = notes.entry(object.clone()).or_default();
        text.push_str(record.trim_end());
        text.push('\n');
        let mut tree = Tree::new();
        for (annotated, text) in &notes {
            tree.insert(annotated.to_string(), store.blob(text));
        }
        let tree = store.tree(tree);
        let oid = store.commit(
            tree,
            parent.into_iter().collect(),
            "Notes added by 'git notes append'\n",
        );
        self.trees.insert(oid.clone(), notes);
        oid
    }

    /// The records under `object` in the notes commit `tip`.
    pub fn records(&self, tip: &Oid, object: &Oid) -> impl Iterator<Item = &str> {
        self.trees
            .get(tip)
            .and_then(|notes| notes.get(object))
            .into_iter()
            .flat_map(|text| text.lines())
    }
}
