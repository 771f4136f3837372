//! A red main, judged on each candidate before its checks: when the policy at the base names
//! post checks, the runner reads the base's red with the same reader `bay status` uses
//! (`machine::red_read`: the evidence notes fetched afresh, the newest `[red] window`
//! first-parent commits of the base and the notes on them), and `red::Red` says which post
//! checks are red. A candidate that
//! changes paths of a red check ends `MAIN_RED`, unless its change fixes, undoes or supersedes
//! the change that owns the red. Nothing of it is stored: the next candidate reads it again.

use super::Runner;
use super::unmerged::Unmerged;
use super::work::{Built, Placed, Purpose, Work};
use crate::machine::red_read::{RedRead, RedStep};
use crate::machine::{Completion, Misuse};
use crate::policy::Policy;
use crate::red::{self, PostCheck};

impl Runner {
    /// Judges the red of the base before `built` is taken as the work's candidate; a policy
    /// without post checks reads nothing.
    pub(super) fn judge_red(&mut self, work: Box<Work>, built: Built, policy: Policy) -> Placed {
        let unjudged = PostCheck::of(&policy).is_empty();
        #[cfg(feature = "mutants")]
        let unjudged = unjudged || self.mutant_ignores_red();
        if unjudged {
            return self.accept(work, built, policy);
        }
        // Records arrive at any time, and a runner seeded by `merge --wait` has fetched none:
        // the reader fetches the evidence afresh.
        let (reader, fetch) = RedRead::with_checks(
            work.base.clone(),
            PostCheck::of(&policy),
            self.cfg.red_window,
        );
        self.send_work(
            fetch,
            Purpose::Red(built, Box::new(policy), Box::new(reader)),
        );
        self.keep(work)
    }

    /// One step of the red read; once judged, a candidate on a red check's paths ends
    /// `MAIN_RED` unless its change fixes, undoes or supersedes the owner.
    pub(super) fn on_red(
        &mut self,
        work: Box<Work>,
        built: Built,
        policy: Policy,
        mut reader: RedRead,
        completion: Completion,
    ) -> Result<Placed, Misuse> {
        let red = match reader.on(completion, &mut self.refs) {
            Err(other) => {
                let _placed = self.keep(work);
                return Err(Misuse(format!("a red read answered with {other:?}")));
            }
            Ok(RedStep::Ask(action)) => {
                let purpose = Purpose::Red(built, Box::new(policy), Box::new(reader));
                self.send_work(*action, purpose);
                return Ok(self.keep(work));
            }
            Ok(RedStep::Unread(why)) => {
                let why = format!("could not judge whether main is red: {why}");
                return Ok(self.release(work, None, why));
            }
            Ok(RedStep::Done(red)) => red.unwrap_or_default(),
        };
        let blocking = red.blocking(&built.changed_paths, &work.record.answers_for());
        Ok(if blocking.is_empty() {
            self.accept(work, built, policy)
        } else {
            self.end(work, Unmerged::MainRed(red::detail::Refusal::of(&blocking)))
        })
    }
}
