//! A red main, judged on each candidate before its checks: when the policy at the base names
//! post checks, the runner fetches the evidence notes afresh, reads the newest `[red] window`
//! first-parent commits of the base and the notes on them, and `red::Red` says which post checks are red. A candidate that
//! changes paths of a red check ends `MAIN_RED`, unless its change fixes, undoes or supersedes
//! the change that owns the red. Nothing of it is stored: the next candidate reads it again.

use super::Runner;
use super::work::{Built, Purpose};
use crate::git::refs;
use crate::machine::{Action, Fault, FetchSpec, RawStep, Refs};
use crate::reason::ReasonCode;
use crate::red::{self, PostCheck, Red};
use crate::result::OpState;

impl Runner {
    /// Judges the red of the base before `built` is taken as the work's candidate; a policy
    /// without post checks reads nothing.
    pub(super) fn judge_red(&mut self, built: Built) {
        let work = self.work.as_ref().expect("judging red while working");
        let policy = work
            .policy
            .as_ref()
            .expect("a candidate is built under a policy");
        let unjudged = PostCheck::of(policy).is_empty();
        #[cfg(feature = "mutants")]
        let unjudged = unjudged || self.mutant_ignores_red();
        if unjudged {
            return self.accept(built);
        }
        // Records arrive at any time, and a runner seeded by `merge --wait` has fetched none.
        let spec = FetchSpec::new([refs::EVIDENCE_PATTERN.to_string()]);
        self.send_work(
            Action::Fetch(spec.clone()),
            Purpose::RedEvidence(built, spec),
        );
    }

    pub(super) fn on_red_evidence(
        &mut self,
        built: Built,
        spec: FetchSpec,
        fetched: Result<Refs, Fault>,
    ) {
        match fetched {
            Ok(fetched) => spec.apply(&mut self.refs, fetched),
            Err(fault) => return self.red_unread(fault),
        }
        let base = self
            .work
            .as_ref()
            .expect("judging red while working")
            .base
            .clone();
        let read = Action::ReadLog {
            range: Some(base.as_str().to_owned()),
            limit: self.cfg.red_window,
        };
        self.send_work(read, Purpose::RedWindow(built));
    }

    pub(super) fn on_red_window(&mut self, built: Built, window: Result<Vec<RawStep>, Fault>) {
        let window = match window {
            Ok(window) => window,
            Err(fault) => return self.red_unread(fault),
        };
        let notes = self.evidence_tips();
        if notes.is_empty() {
            return self.on_red_notes(built, window, Ok(Vec::new()));
        }
        let objects = window.iter().map(|raw| raw.oid.clone()).collect();
        self.send_work(
            Action::ReadNotes { notes, objects },
            Purpose::RedNotes(built, window),
        );
    }

    pub(super) fn on_red_notes(
        &mut self,
        built: Built,
        window: Vec<RawStep>,
        lines: Result<Vec<String>, Fault>,
    ) {
        let lines = match lines {
            Ok(lines) => lines,
            Err(fault) => return self.red_unread(fault),
        };
        let work = self.work.as_ref().expect("judging red while working");
        let policy = work
            .policy
            .as_ref()
            .expect("a candidate is built under a policy");
        let red = Red::judge(&PostCheck::of(policy), &window, &lines, self.cfg.red_window);
        let record = &work.record;
        let exempt: Vec<_> = [&record.fixes, &record.reverts, &record.supersedes]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        let blocking = red.blocking(&built.changed_paths, &exempt);
        if blocking.is_empty() {
            return self.accept(built);
        }
        let detail = red::refusal_detail(&blocking);
        self.end(OpState::Blocked, Some(ReasonCode::MainRed), detail);
    }

    /// Red that cannot be judged is never read as green: the claim goes back, to try again.
    fn red_unread(&mut self, fault: Fault) {
        self.release(
            None,
            format!("could not judge whether main is red: {fault}"),
        );
    }
}
