//! The real driver for one clone: the remote and candidates through `git`, views as
//! worktrees, checks in the sandbox. It answers each action and decides nothing.

use std::sync::{Arc, Mutex};

use bay_core::machine::{Action, Completion, Refs};
use bay_drivers::check::run_check;
use bay_drivers::pump::{Driver, Execute};
use bay_drivers::remote::Repo;
use bay_drivers::sandbox::Sandbox;
use bay_drivers::views::Views;

use crate::context::Context;

/// Executes every action for one clone.
#[derive(Debug)]
pub struct Local {
    repo: Repo,
    views: Views,
    common_dir: std::path::PathBuf,
    /// A fetch this command already made, handed to the first `Fetch` its machine asks for, so
    /// that reading the config and running the machine cost one fetch.
    prefetched: Mutex<Option<Refs>>,
}

impl Local {
    pub fn new(context: &Context) -> Result<Local, String> {
        let repo = Repo::new(&context.top, &context.remote, &context.main)?;
        let views = Views::new(&context.top, &context.common_dir);
        Ok(Local {
            repo,
            views,
            common_dir: context.common_dir.clone(),
            prefetched: Mutex::new(None),
        })
    }

    /// Fetches now, and keeps the answer for the machine's first fetch.
    pub fn prefetch(&self) -> Result<Refs, String> {
        let refs = self.repo.fetch().map_err(|fault| fault.to_string())?;
        *self
            .prefetched
            .lock()
            .expect("the lock is never poisoned: nothing panics holding it") = Some(refs.clone());
        Ok(refs)
    }

    pub fn driver(self) -> Driver<Local> {
        Driver::new(Arc::new(self))
    }
}

impl Execute for Local {
    fn execute(&self, action: Action) -> Completion {
        if matches!(action, Action::Fetch) {
            let kept = self
                .prefetched
                .lock()
                .expect("the lock is never poisoned")
                .take();
            if let Some(refs) = kept {
                return Completion::Fetched(Ok(refs));
            }
        }
        match action {
            Action::RunCheck(run) => {
                let env = |name: &str| std::env::var(name).ok();
                Completion::CheckExited(run_check(&self.common_dir, &run, &Sandbox::probe(), &env))
            }
            Action::FreezeDraft { change, parent, .. } => {
                Completion::DraftFrozen(self.views.freeze(&change, &parent))
            }
            Action::RefreshDraft {
                change,
                draft,
                base,
                onto,
            } => Completion::DraftRefreshed(self.views.refresh(&change, &draft, &base, &onto)),
            Action::MakeView {
                change,
                paths,
                draft,
            } => Completion::ViewMade(self.views.make(&change, &paths, &draft)),
            other => self
                .repo
                .execute(&other)
                .expect("the repository answers every action not matched above"),
        }
    }
}
