//! The refs a runner appends to: its log (`refs/bay/log/<runner>`), with the push that ends
//! each operation, and its evidence notes (`refs/notes/bay/evidence/<runner>`), with each
//! recorded check. Each append is a commit on the ref's tip, leased on it. A tip that is no
//! commit (a ref pointed at a blob by hand) can carry none, so every end and every check this
//! runner pushed would fail, and the runner would build, check and push again for ever, its
//! claim holding the queue.
//!
//! So a runner reads each of those tips once before it works from it (a tip it wrote itself
//! is a commit already), and one that is no commit stops the runner before it claims
//! anything, naming the ref and what to do. That is this runner's problem alone: others, with
//! their own log and notes, go on with the queue. A seeded runner (`merge --wait`) reads
//! nothing more in its first pass: its first push that appends there fails, and the pass
//! after it reads the tip.

use std::collections::BTreeMap;

use super::{Purpose, Runner};
use crate::git::{Oid, refs};
use crate::machine::{Action, Completion, Misuse};

/// The tips of a runner's own refs known to be commits, by ref name.
pub(super) type Known = BTreeMap<String, Oid>;

impl Runner {
    /// The runner's own refs whose tips, as fetched, are not known to be commits.
    fn own_unread(&self) -> Vec<(String, Oid)> {
        [
            refs::log(&self.cfg.runner),
            refs::evidence(&self.cfg.runner),
        ]
        .into_iter()
        .filter_map(|name| {
            let tip = self.refs.get(&name)?;
            (self.own_commits.get(&name) != Some(tip)).then(|| (name, tip.clone()))
        })
        .collect()
    }

    /// Reads the tips of this runner's own refs it does not know to be commits. Whether a
    /// read went out.
    pub(super) fn read_own_tips(&mut self) -> bool {
        let unread = self.own_unread();
        if unread.is_empty() {
            return false;
        }
        let oids = unread.into_iter().map(|(_, tip)| tip).collect();
        self.out.send(Action::ReadSteps { oids }, Purpose::OwnTips);
        true
    }

    /// `records`, each `(object, record)`, as notes of this runner's evidence. Notes of one
    /// producer in one push build on each other, under the first one's lease: each is leased
    /// on the tip as this runner knows it, and signed with its producer key when it has one.
    pub(super) fn own_notes(
        &self,
        records: impl IntoIterator<Item = (Oid, String)>,
    ) -> Vec<crate::machine::NoteAdd> {
        let producer = self.cfg.runner.clone();
        let expect = crate::machine::Expect::tip(self.refs.get(&refs::evidence(&producer)));
        let key = self.cfg.signer.as_ref().map(|s| s.producer_key.clone());
        records
            .into_iter()
            .map(|(object, record)| crate::machine::NoteAdd {
                producer: producer.clone(),
                expect: expect.clone(),
                object,
                record,
                key: key.clone(),
            })
            .collect()
    }

    /// A tip this runner wrote on its own ref, a commit, as the remote took it.
    pub(super) fn wrote_own(&mut self, name: String, tip: Oid) {
        self.own_commits.insert(name.clone(), tip.clone());
        self.refs.insert(name, tip);
    }

    /// The own tips read: a read leaves out what is no commit. One that is stops the runner;
    /// otherwise the pass goes on. A read that failed tries the pass again later.
    pub(super) fn on_own_tips(&mut self, completion: Completion) -> Result<(), Misuse> {
        let Completion::StepsRead(read) = completion else {
            return Err(Misuse(
                "a read of the runner's own refs answered with another completion".into(),
            ));
        };
        let Ok(read) = read else {
            self.pass_failed();
            return Ok(());
        };
        for (name, tip) in self.own_unread() {
            if read.iter().any(|raw| raw.oid == tip) {
                self.own_commits.insert(name, tip);
                continue;
            }
            let why = format!(
                "{name} on the remote is no commit ({tip}), so this runner cannot add to it and \
                 stops before it claims anything"
            );
            let mut result = crate::report::failed(why, None);
            result
                .detail
                .insert("ref".into(), serde_json::Value::from(name.clone()));
            result.detail.insert(
                "hint".into(),
                serde_json::Value::from(format!(
                    "set {name} on the remote back to its last commit, or remove it (`git push \
                     <remote> :{name}`) so that it starts again; or run this runner under \
                     another name (`git config bay.runnerName <name>`)"
                )),
            );
            self.finish(result);
            return Ok(());
        }
        if !self.read_earlier_presence() {
            self.read_places();
        }
        Ok(())
    }
}
