//! The simulator's arm: `bay_sim::git_model::GitModel`, the model every seeded run trusts.

use std::collections::BTreeMap;

use bay_conformance::{Arm, Files};
use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::{Action, Completion, PushOutcome, PushPlan, PushReport};
use bay_sim::git_model::{GitModel, View};
use bay_sim::remote::Flaw;
use bay_sim::store::Tree;

#[derive(Debug, Default)]
pub struct SimArm {
    git: GitModel,
    views: BTreeMap<ChangeId, View>,
}

impl SimArm {
    /// A model broken on purpose.
    pub fn flawed(flaw: Flaw) -> SimArm {
        let mut arm = SimArm::default();
        arm.git.remote.flaw = Some(flaw);
        arm
    }

    fn texts(&self, tree: &Tree) -> Files {
        tree.iter()
            .map(|(path, blob)| {
                let text = self.git.store.blob_text(blob).unwrap_or_default();
                (path.clone(), text.to_owned())
            })
            .collect()
    }
}

impl Arm for SimArm {
    fn commit(&mut self, parents: &[Oid], files: &[(&str, &str)], message: &str) -> Oid {
        let tree: Tree = files
            .iter()
            .map(|(path, content)| (path.to_string(), self.git.store.blob(content)))
            .collect();
        let tree = self.git.store.tree(tree);
        self.git.store.commit(tree, parents.to_vec(), message)
    }

    fn set_remote_ref(&mut self, name: &str, value: Option<&Oid>) {
        match value {
            Some(oid) => self.git.remote.refs.insert(name.to_owned(), oid.clone()),
            None => self.git.remote.refs.remove(name),
        };
    }

    fn remote_ref(&mut self, name: &str) -> Option<Oid> {
        self.git.remote.get(name).cloned()
    }

    fn files(&mut self, commit: &Oid) -> Option<Files> {
        let tree = self.git.store.files(commit)?;
        Some(self.texts(&tree))
    }

    fn shape(&mut self, commit: &Oid) -> Option<(Oid, Vec<Oid>)> {
        let commit = self.git.store.get(commit)?;
        Some((commit.tree.clone(), commit.parents.clone()))
    }

    fn notes(&mut self, notes_ref: &str, object: &Oid) -> Vec<String> {
        let Some(tip) = self.git.remote.get(notes_ref) else {
            return Vec::new();
        };
        self.git
            .notes
            .records(tip, object)
            .map(str::to_owned)
            .collect()
    }

    fn execute(&mut self, action: &Action) -> Completion {
        self.git
            .answer(action, &mut self.views)
            .expect("the suite runs no checks")
    }

    /// As the world's `Fate::AppliedNoReply`: the remote applies the push, the reply is lost.
    fn push_reply_lost(&mut self, plan: &PushPlan) -> PushReport {
        let (mut report, _) = self.git.push(plan);
        report.outcome = PushOutcome::Unknown {
            why: "no reply".into(),
        };
        report
    }

    fn view_files(&mut self, change: &ChangeId) -> Files {
        let files = self
            .views
            .get(change)
            .map(|v| v.files.clone())
            .unwrap_or_default();
        self.texts(&files)
    }

    fn signing_key(&mut self, openssh: &str) -> String {
        self.git
            .keys
            .import(openssh)
            .expect("a key the model can sign with")
    }

    fn edit_view(&mut self, change: &ChangeId, path: &str, content: Option<&str>) {
        let blob = content.map(|c| self.git.store.blob(c));
        let view = self.views.entry(change.clone()).or_default();
        match blob {
            Some(blob) => view.files.insert(path.to_owned(), blob),
            None => view.files.remove(path),
        };
    }
}
