//! The real driver for one clone: the remote and candidates through `git`, views as
//! worktrees, checks in the sandbox, plugins from main's tip. It answers each action and decides nothing.

use std::sync::Arc;

use bay_core::git::Oid;
use bay_core::machine::{Action, Completion, FetchSpec, Refs};
use bay_drivers::check::MachineChecks;
use bay_drivers::pump::{Driver, Execute};
use bay_drivers::remote::Repo;
use bay_drivers::views::Views;

use crate::context::Context;

/// Executes every action for one clone.
#[derive(Debug)]
pub struct Local {
    repo: Repo,
    views: Views,
    /// Checks on this clone, with this machine's floor (`bay.minFreeMiB`) and read paths
    /// (`bay.checkReadPath`).
    checks: MachineChecks,
}

impl Local {
    pub fn new(context: &Context, min_free_mib: Option<u64>) -> Result<Local, String> {
        let repo = Repo::new(&context.top, &context.remote, &context.main)?;
        // Every command reads objects after its fetch: the clone is opened before it.
        repo.warm();
        let views = Views::new(&context.top, &context.common_dir).with_reader(repo.reader());
        Ok(Local {
            repo,
            views,
            checks: MachineChecks {
                git_dir: context.common_dir.clone(),
                min_free_mib,
                read_paths: context.read_paths(),
            },
        })
    }

    /// Fetches `spec` now, outside any machine (the command reads the config with it).
    pub fn fetch(&self, spec: &FetchSpec) -> Result<Refs, String> {
        self.repo.fetch(spec).map_err(|fault| fault.to_string())
    }

    /// Begins taking the work in the view of `change` as a tree, while the command fetches
    /// (see [`Views::stage`]).
    pub fn stage_view(&self, change: &bay_core::id::ChangeId) {
        self.views.stage(change);
    }

    /// The clone's one reader of objects, for a command that reads trees itself.
    pub fn reader(&self) -> Arc<bay_drivers::reader::Reader> {
        self.repo.reader()
    }

    /// A file at `commit`, `None` when the commit has no such file.
    pub fn read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, String> {
        self.repo
            .read_file(commit, path)
            .map_err(|fault| fault.to_string())
    }

    pub fn driver(self) -> Driver<Local> {
        Driver::new(Arc::new(self))
    }
}

impl Execute for Local {
    fn execute(&self, action: Action) -> Completion {
        match action {
            Action::RunCheck(run) => Completion::CheckExited(self.checks.run(&run)),
            Action::RunPlugin(run) => {
                let env = |name: &str| std::env::var(name).ok();
                Completion::PluginExited(bay_drivers::plugin::run(&self.repo, &run, &env))
            }
            Action::FreezeDraft {
                change,
                parent,
                labels,
                ..
            } => Completion::DraftFrozen(self.views.freeze(&change, &parent, &labels)),
            Action::RefreshDraft {
                change,
                draft,
                base,
                onto,
                labels,
            } => Completion::DraftRefreshed(
                self.views.refresh(&change, &draft, &base, &onto, &labels),
            ),
            Action::MakeView {
                change,
                paths,
                draft,
            } => Completion::ViewMade(self.views.make(&change, &paths, &draft)),
            Action::InspectViews { changes } => {
                Completion::ViewsInspected(self.views.inspect(&changes))
            }
            Action::ReleaseView { change } => Completion::ViewReleased(self.views.release(&change)),
            other => self
                .repo
                .execute(&other)
                .expect("the repository answers every action not matched above"),
        }
    }
}
