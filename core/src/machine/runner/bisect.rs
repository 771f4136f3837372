//! Bisecting a red post check (`[runner] bisect_post`). When a pass finds nothing this runner
//! can merge now, it reads main's red with the reader `bay status` uses, and runs a post check
//! on the merge its suspect range needs next ([`RedCheck::bisect_next`]): the midpoint, or the
//! one merge left, once more. Each run is ordinary post evidence, noted by this runner as its
//! producer, with the input `bay.bisect`.
//!
//! Nothing of a bisect is kept in memory between runs: the next pass reads the red again and
//! goes on from what the records say. A runner that stops halfway loses nothing, and a run
//! whose record did not go up is simply run again.

use super::{Purpose as RunnerPurpose, RunMode, Runner};
use crate::check::{CheckRequest, CheckTarget, CommitTree, Judgement, RequestInput, judge};
use crate::git::Oid;
use crate::machine::red_read::{RedRead, RedStep};
use crate::machine::{Action, CheckRun, Completion, Misuse, PushOutcome, PushPlan};
use crate::policy::{CheckSpec, Policy};
use crate::red::{Answer, BisectRun, PostRecord, RedCheck};

/// One bisect run: the check, the merge it runs on, and that merge's first parent.
#[derive(Clone, Debug)]
pub(super) struct Target {
    spec: CheckSpec,
    policy_revision: String,
    /// Main as the red was read: the check's adapter comes from there, as the policy does.
    main: Oid,
    commit: Oid,
    parent: Oid,
    run: BisectRun,
}

/// A target with the exact trees of its merge and of the merge's first parent.
#[derive(Clone, Debug)]
pub(super) struct Exact {
    target: Target,
    tree: Oid,
    parent_tree: Oid,
}

/// Where a pass stands with bisecting.
#[derive(Debug, Default)]
pub(super) enum Bisecting {
    /// It has not looked for a red post check to bisect.
    #[default]
    Unlooked,
    /// It has looked, and no bisect run is in flight.
    Looked,
    /// A bisect run is in flight, given up at this moment.
    Running(crate::time::Timestamp),
}

/// What each action of a bisect is for.
#[derive(Clone, Debug)]
pub(super) enum Purpose {
    Red(Box<RedRead>),
    Trees(Box<Target>),
    Paths(Box<Exact>),
    Run(Box<Exact>, Box<CheckRequest>),
    Record,
}

impl Runner {
    /// With nothing to merge now: one bisect run when `bisect_post` is on (once a pass, never
    /// for `merge --wait`), else rest until the next pass.
    pub(super) fn bisect_or_rest(&mut self) {
        let main = self.refs.get(&self.main_ref()).cloned();
        let bisect = self.cfg.bisect_post && !matches!(self.cfg.mode, RunMode::Only(_));
        let pass = self
            .pass_mut()
            .filter(|pass| bisect && matches!(pass.bisect, Bisecting::Unlooked));
        match (main, pass) {
            (Some(main), Some(pass)) => {
                pass.bisect = Bisecting::Looked;
                let (reader, read) = RedRead::start(main);
                self.send_bisect(read, Purpose::Red(Box::new(reader)));
            }
            _ => self.idle_or_done(),
        }
    }

    /// The bisect run in flight answered, or was given up.
    fn bisect_run_over(&mut self) {
        if let Some(pass) = self.pass_mut()
            && let Bisecting::Running(_) = pass.bisect
        {
            pass.bisect = Bisecting::Looked;
        }
    }

    fn send_bisect(&mut self, action: Action, purpose: Purpose) {
        self.out.send(action, RunnerPurpose::Bisect(purpose));
    }

    pub(super) fn on_bisect(
        &mut self,
        purpose: Purpose,
        completion: Completion,
    ) -> Result<(), Misuse> {
        match (purpose, completion) {
            (Purpose::Red(mut reader), completion) => match reader.on(completion, &mut self.refs) {
                Err(other) => return Err(Misuse(format!("a red read answered with {other:?}"))),
                Ok(RedStep::Ask(action)) => self.send_bisect(*action, Purpose::Red(reader)),
                Ok(RedStep::Unread(_)) | Ok(RedStep::Done(None)) => self.idle_or_done(),
                Ok(RedStep::Done(Some(red))) => {
                    let target = reader
                        .policy()
                        .and_then(|policy| self.next_target(policy, &red.red));
                    match target {
                        Some(target) => {
                            let read = Action::ReadTrees {
                                commits: vec![target.commit.clone(), target.parent.clone()],
                            };
                            self.send_bisect(read, Purpose::Trees(Box::new(target)));
                        }
                        None => self.idle_or_done(),
                    }
                }
            },
            (Purpose::Trees(target), Completion::TreesRead(read)) => match read.as_deref() {
                Ok([tree, parent_tree]) => {
                    let stats = Action::ReadStats {
                        base: target.parent.clone(),
                        commit: target.commit.clone(),
                    };
                    let exact = Exact {
                        target: *target,
                        tree: tree.clone(),
                        parent_tree: parent_tree.clone(),
                    };
                    self.send_bisect(stats, Purpose::Paths(Box::new(exact)));
                }
                _ => self.pass_failed(),
            },
            (Purpose::Paths(exact), Completion::StatsRead(read)) => match read {
                Ok(stats) => {
                    let changed = stats.into_iter().map(|stat| stat.path).collect();
                    self.run_on(*exact, changed);
                }
                Err(_) => self.pass_failed(),
            },
            (Purpose::Run(exact, request), Completion::CheckExited(exit)) => {
                self.bisect_run_over();
                match judge(&request, exact.target.spec.expected_minimum, &exit) {
                    // No machine here can run it: nothing is recorded, and the bisect waits.
                    Judgement::Unavailable { .. } => self.idle_or_done(),
                    Judgement::Judged(judged) => self.note_run(*exact, judged.verdict, judged.why),
                }
            }
            (Purpose::Record, Completion::Pushed(report)) => match report.outcome {
                // The next pass reads the red again, with this run in it.
                PushOutcome::Accepted => self.rest(0),
                PushOutcome::Rejected { .. }
                | PushOutcome::Unknown { .. }
                | PushOutcome::NotSent(_) => self.pass_failed(),
            },
            (purpose, completion) => {
                return Err(Misuse(format!(
                    "a bisect's {purpose:?} answered with {completion:?}"
                )));
            }
        }
        Ok(())
    }

    /// A bisect run that never answered by its deadline: forgotten, and nothing recorded.
    pub(super) fn bisect_tick(&mut self) {
        let now = self.now;
        if let Some(pass) = self.pass()
            && let Bisecting::Running(at) = pass.bisect
            && now >= at
        {
            self.bisect_run_over();
            self.out
                .forget_all_but(|purpose| !matches!(purpose, RunnerPurpose::Bisect(_)));
            self.pass_failed();
        }
    }

    /// The first red check this runner may bisect, and its next run: only a check this runner
    /// may run (`cannot_run`: an environment it serves, `producers` that name it).
    fn next_target(&self, policy: &Policy, red: &[RedCheck]) -> Option<Target> {
        red.iter().find_map(|check| {
            let next = check.bisect_next()?;
            #[cfg(feature = "mutants")]
            let next = self.mutant_bisect_linear(check, next);
            let (commit, run) = next;
            let post = &check.check;
            let spec = policy
                .checks
                .iter()
                .find(|spec| spec.id == post.id && spec.environment == post.environment)
                .filter(|spec| self.cannot_run(spec).is_none())?;
            Some(Target {
                spec: spec.clone(),
                policy_revision: policy.revision.to_string(),
                main: self.refs.get(&self.main_ref())?.clone(),
                parent: parent_of(check, &commit)?,
                commit,
                run,
            })
        })
    }

    /// Runs the check on the merge, as a request that checks no single change.
    fn run_on(&mut self, exact: Exact, changed_paths: Vec<String>) {
        let target = &exact.target;
        let request = CheckRequest::build(RequestInput {
            target: CheckTarget::of(&target.spec),
            policy_revision: target.policy_revision.clone(),
            candidate: CommitTree {
                commit: target.commit.clone(),
                tree: exact.tree.clone(),
            },
            base: CommitTree {
                commit: target.parent.clone(),
                tree: exact.parent_tree.clone(),
            },
            changed_paths,
            change: None,
        });
        // Only for a driver that never answers, as for a candidate's checks.
        let deadline = self.check_deadline(&target.spec);
        if let Some(pass) = self.pass_mut() {
            pass.bisect = Bisecting::Running(deadline);
        }
        let run = CheckRun {
            check: target.spec.clone(),
            request: request.clone(),
            adapter_from: target.main.clone(),
            candidate: target.commit.clone(),
            slot: 0,
        };
        self.send_bisect(
            Action::RunCheck(Box::new(run)),
            Purpose::Run(Box::new(exact), Box::new(request)),
        );
    }

    /// Notes the run's answer on the merge, in this runner's evidence notes, leased on the tip
    /// the red read fetched.
    fn note_run(&mut self, exact: Exact, verdict: crate::check::Verdict, why: String) {
        let Exact {
            target,
            tree,
            parent_tree,
        } = exact;
        let producer = self.cfg.runner.clone();
        let answer = Answer {
            producer: producer.clone(),
            check: target.spec.id,
            environment: target.spec.environment,
            verdict,
            why,
            version: None,
            inputs: target.run.inputs(),
        };
        let record = PostRecord::of(&answer, &target.commit, &tree, Some(&parent_tree), self.now);
        let plan = PushPlan {
            notes: self.own_notes([(target.commit, record.to_json())]),
            atomic: true,
            ..PushPlan::default()
        };
        self.send_bisect(Action::Push(plan), Purpose::Record);
    }
}

/// The first parent of a suspect merge: the next older suspect, or the last pass below them.
fn parent_of(check: &RedCheck, commit: &Oid) -> Option<Oid> {
    let at = check.suspects.iter().position(|(c, _)| c == commit)?;
    match check.suspects.get(at + 1) {
        Some((older, _)) => Some(older.clone()),
        None => check.last_pass.clone(),
    }
}
