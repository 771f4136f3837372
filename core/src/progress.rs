//! What a person at a terminal reads while a long command works: one line per step that takes
//! a while, so that `bay merge --wait` and `bay runner run` are never silent for the minutes a
//! check can take. The lines are decided here, from the actions a machine issues and the
//! completions that answer them, and from nothing else; the CLI only prints them, on stderr and
//! only at a terminal, never into the `bay.result/1` document.
//!
//! Each line is a plain line in the words of the plain sentence (none from
//! [`crate::words::WORDS`]), naming what it works on by its id, as Cargo's `Compiling` lines
//! name a crate: building a candidate, running a check on it, adding it to main, and, for a
//! runner, each operation it ended.

use std::collections::BTreeMap;

use crate::event::{BayEvent, EventKind};
use crate::git::Oid;
use crate::id::CandidateId;
use crate::machine::{Action, ActionId, BuildResult, Completion, PushOutcome, PushPlan};

/// The progress of one command's machine: which steps it tells, and the ends it waits to tell
/// until their push is known to have gone through.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Whether each operation the machine ends gets a line (a runner's), or only the steps
    /// (`merge --wait`, whose own result says how its one operation ended).
    ends: bool,
    /// The line of each push in flight that ends an operation, told once it is accepted.
    ending: BTreeMap<ActionId, String>,
    /// Each batch member being built (a candidate with a `Bay-Batch` trailer): its candidate
    /// and its place in the batch, until it is built.
    building: BTreeMap<ActionId, Member>,
    /// Each member of the last batch chain built, by its commit: a check of that commit checks
    /// the batch's changes up to it together.
    members: BTreeMap<Oid, Member>,
}

/// A member of a batch as its lines name it: its candidate, its index (from 1) and the
/// batch's size.
#[derive(Clone, Debug)]
struct Member {
    candidate: CandidateId,
    index: usize,
    size: usize,
}

impl Progress {
    /// The steps of `merge --wait` (and of the undo and save that run it).
    pub fn steps() -> Progress {
        Progress::default()
    }

    /// A runner's: the steps, and a line for each operation it ends.
    pub fn runner() -> Progress {
        Progress {
            ends: true,
            ..Progress::default()
        }
    }

    /// The line for an action as it is handed out, when it starts a step that takes a while.
    pub fn action(&mut self, id: ActionId, action: &Action) -> Option<String> {
        match action {
            Action::BuildCandidate(spec) => {
                let Some((_, index, size)) = crate::batch::read_trailer(&spec.message) else {
                    return Some(format!(
                        "Building {} on main {}",
                        spec.candidate,
                        spec.base.short()
                    ));
                };
                let member = Member {
                    candidate: spec.candidate.clone(),
                    index,
                    size,
                };
                if index == 1 {
                    // A new chain: the members of the last one are checked no more.
                    self.members.clear();
                }
                self.building.insert(id, member);
                let on = match index {
                    1 => format!("main {}", spec.base.short()),
                    _ => format!("the change before it ({})", spec.base.short()),
                };
                Some(format!(
                    "Building {} on {on}, change {index} of {size} checked together",
                    spec.candidate
                ))
            }
            Action::RunCheck(run) => {
                let on = match (&run.request.change, self.members.get(&run.candidate)) {
                    (Some(change), _) => change.id.to_string(),
                    (None, Some(member)) => format!(
                        "changes 1 to {} of {} together (up to {})",
                        member.index, member.size, member.candidate
                    ),
                    (None, None) => format!("main at {}", run.candidate.short()),
                };
                Some(format!(
                    "Checking {on} with {} ({}), for at most {} s",
                    run.check.id, run.check.environment, run.check.timeout_s
                ))
            }
            Action::Push(plan) => {
                // One line per operation the push ends: a batch's push ends each member.
                let lines: Vec<String> = match (&plan.log, self.ends) {
                    (Some(log), true) => log.messages().filter_map(|m| ended(m)).collect(),
                    _ => Vec::new(),
                };
                if !lines.is_empty() {
                    self.ending.insert(id, lines.join("\n"));
                }
                moves_main(plan).then(|| match named_ops(plan) {
                    ops if ops.is_empty() => "Adding to main".to_owned(),
                    ops => format!("Adding {ops} to main"),
                })
            }
            _ => None,
        }
    }

    /// The line for a completion: an operation's end, once the push that writes it went
    /// through. A push refused or lost tells nothing; the machine writes that end again.
    pub fn done(&mut self, id: ActionId, completion: &Completion) -> Option<String> {
        if let Some(member) = self.building.remove(&id)
            && let Completion::CandidateBuilt(Ok(BuildResult::Clean { commit, .. })) = completion
        {
            self.members.insert(commit.clone(), member);
        }
        let line = self.ending.remove(&id)?;
        match completion {
            Completion::Pushed(report) if report.outcome == PushOutcome::Accepted => Some(line),
            _ => None,
        }
    }
}

/// The line a runner prints as it starts: its name, the main it works on, and how it stops.
pub fn runner_started(runner: &str, main: &str, once: bool) -> String {
    if once {
        format!("Runner {runner} works the queue of {main} once, until nothing is left to do")
    } else {
        format!("Runner {runner} works the queue of {main} until it is stopped (Ctrl-C)")
    }
}

/// Whether `plan` moves a branch: bay pushes to `refs/heads/` only to add to main.
fn moves_main(plan: &PushPlan) -> bool {
    plan.updates
        .iter()
        .any(|update| update.name.starts_with("refs/heads/"))
}

/// The operations `plan` ends, by id.
fn named_ops(plan: &PushPlan) -> String {
    let ops: Vec<String> = plan.ended_ops().iter().map(ToString::to_string).collect();
    ops.join(", ")
}

/// The line for an operation's end, from the `bay.event/1` its push appends to the log.
fn ended(message: &str) -> Option<String> {
    let event = BayEvent::from_message(message).ok()?;
    let op = event.op?;
    Some(match event.kind {
        EventKind::Merged => match &event.commit {
            Some(commit) => format!("{op} is now part of main ({})", commit.short()),
            None => format!("{op} is now part of main"),
        },
        EventKind::Refused => format!(
            "{op} is stopped until something is fixed; `bay status {}` says what",
            op.change
        ),
        EventKind::Failed => format!("{op} stopped on a fault; nothing was added to main"),
        EventKind::Superseded => format!("{op} was replaced by a newer request"),
        EventKind::NoEffect => format!("{op} added nothing: main already had its edits"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{CandidateSpec, Expect, LogAdd, NewValue, PushReport, RefUpdate};
    use crate::words::forbidden_word;

    fn oid(digit: char) -> Oid {
        Oid::parse(&digit.to_string().repeat(40)).expect("an id")
    }

    /// The push that ends `c7k2m4qa.1` as `kind`, with its event in the log; to main when it
    /// merged.
    fn ending(kind: &str) -> Action {
        let event = format!(
            r#"{{"schema":"bay.event/1","id":"c7k2m4qa.1.{kind}","kind":"{kind}","change":"c7k2m4qa","op":"c7k2m4qa.1","at":1,"commit":"{}"}}"#,
            oid('2')
        );
        let message = format!("bay: c7k2m4qa.1 {kind}\n\n{event}\n");
        let updates = match kind {
            "merged" => vec![RefUpdate {
                name: "refs/heads/main".into(),
                expect: Expect::Is(oid('1')),
                new: NewValue::Oid(oid('2')),
            }],
            _ => Vec::new(),
        };
        Action::Push(PushPlan {
            log: Some(LogAdd::on("r1", None, message)),
            updates,
            atomic: true,
            ..PushPlan::default()
        })
    }

    fn pushed(outcome: PushOutcome) -> Completion {
        Completion::Pushed(PushReport {
            steps: Vec::new(),
            notes: Vec::new(),
            log: None,
            presence: None,
            indexes: Vec::new(),
            outcome,
        })
    }

    #[test]
    fn a_runner_tells_an_end_once_its_push_went_through() {
        let mut runner = Progress::runner();
        assert_eq!(
            runner.action(ActionId(1), &ending("merged")),
            Some("Adding to main".to_owned())
        );
        assert_eq!(
            runner.done(ActionId(1), &pushed(PushOutcome::Accepted)),
            Some("c7k2m4qa.1 is now part of main (2222222)".to_owned())
        );
        assert_eq!(
            runner.done(ActionId(1), &pushed(PushOutcome::Accepted)),
            None
        );

        assert_eq!(runner.action(ActionId(2), &ending("refused")), None);
        let refused = PushOutcome::Rejected { refs: Vec::new() };
        assert_eq!(runner.done(ActionId(2), &pushed(refused)), None);
        runner.action(ActionId(3), &ending("refused"));
        assert_eq!(
            runner.done(ActionId(3), &pushed(PushOutcome::Accepted)),
            Some(
                "c7k2m4qa.1 is stopped until something is fixed; `bay status c7k2m4qa` says what"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_batch_push_tells_each_member_s_end() {
        let mut runner = Progress::runner();
        let Action::Push(mut plan) = ending("merged") else {
            unreachable!("ending gives a push")
        };
        let log = plan.log.as_mut().expect("a log append");
        log.more = vec![log.message.replace("c7k2m4qa", "d7m3n5rb")];
        runner.action(ActionId(1), &Action::Push(plan));
        assert_eq!(
            runner.done(ActionId(1), &pushed(PushOutcome::Accepted)),
            Some(
                "c7k2m4qa.1 is now part of main (2222222)\nd7m3n5rb.1 is now part of main (2222222)"
                    .to_owned()
            )
        );
    }

    #[test]
    fn merge_wait_tells_its_steps_and_leaves_the_end_to_its_result() {
        let mut steps = Progress::steps();
        let build = Action::BuildCandidate(CandidateSpec {
            candidate: CandidateId::parse("c7k2m4qa.1.1").expect("an id"),
            base: oid('1'),
            draft: oid('3'),
            merge_base: oid('1'),
            message: String::new(),
            sign: None,
        });
        assert_eq!(
            steps.action(ActionId(1), &build),
            Some("Building c7k2m4qa.1.1 on main 1111111".to_owned())
        );
        steps.action(ActionId(2), &ending("merged"));
        assert_eq!(
            steps.done(ActionId(2), &pushed(PushOutcome::Accepted)),
            None
        );
    }

    #[test]
    fn a_batch_s_lines_say_which_member_builds_and_what_its_check_covers() {
        let mut runner = Progress::runner();
        let build = |index: usize, base: char| {
            Action::BuildCandidate(CandidateSpec {
                candidate: CandidateId::parse(["c7k2m4qa.1.1", "d7m3n5rb.1.1"][index - 1])
                    .expect("an id"),
                base: oid(base),
                draft: oid('3'),
                merge_base: oid('1'),
                message: format!(
                    "intent\n\n{}",
                    crate::batch::trailer("c7k2m4qa.1.1", index, 2)
                ),
                sign: None,
            })
        };
        assert_eq!(
            runner.action(ActionId(1), &build(1, '1')),
            Some("Building c7k2m4qa.1.1 on main 1111111, change 1 of 2 checked together".into())
        );
        let built = |commit: char| {
            Completion::CandidateBuilt(Ok(BuildResult::Clean {
                commit: oid(commit),
                tree: oid('9'),
                base_tree: oid('8'),
                changed_paths: Vec::new(),
            }))
        };
        assert_eq!(runner.done(ActionId(1), &built('4')), None);
        assert_eq!(
            runner.action(ActionId(2), &build(2, '4')),
            Some(
                "Building d7m3n5rb.1.1 on the change before it (4444444), change 2 of 2 checked \
                 together"
                    .into()
            )
        );
        runner.done(ActionId(2), &built('5'));
        let check = |candidate: char| {
            let spec = crate::policy::Policy::parse(
                "revision = 1\n[[check]]\nid = \"unit\"\nenvironment = \"linux\"\ncommand = \"ci/run\"\nadapter = [\"ci/\"]\nexpected_minimum = 1\n",
            )
            .expect("a policy")
            .checks
            .remove(0);
            let request = crate::check::CheckRequest::build(crate::check::RequestInput {
                target: crate::check::CheckTarget::of(&spec),
                policy_revision: "1".into(),
                candidate: crate::check::CommitTree {
                    commit: oid(candidate),
                    tree: oid('9'),
                },
                base: crate::check::CommitTree {
                    commit: oid('1'),
                    tree: oid('8'),
                },
                changed_paths: Vec::new(),
                change: None,
            });
            Action::RunCheck(Box::new(crate::machine::CheckRun {
                check: spec,
                request,
                adapter_from: oid('1'),
                candidate: oid(candidate),
                slot: 0,
            }))
        };
        let line = runner.action(ActionId(3), &check('5')).expect("a line");
        assert!(
            line.starts_with(
                "Checking changes 1 to 2 of 2 together (up to d7m3n5rb.1.1) with unit"
            ),
            "{line}"
        );
        assert_eq!(forbidden_word(&line), None, "{line}");
        let line = runner.action(ActionId(4), &check('6')).expect("a line");
        assert!(
            line.starts_with("Checking main at 6666666 with unit"),
            "{line}"
        );
        for index in [1, 2] {
            let line = runner
                .action(ActionId(5), &build(index, '4'))
                .expect("a line");
            assert_eq!(forbidden_word(&line), None, "{line}");
        }
    }

    #[test]
    fn every_line_keeps_to_the_plain_words() {
        let mut runner = Progress::runner();
        let mut lines = vec![
            runner_started("r1", "main", true),
            runner_started("r1", "main", false),
        ];
        for (n, kind) in ["merged", "refused", "failed", "superseded", "no_effect"]
            .into_iter()
            .enumerate()
        {
            let id = ActionId(n as u64);
            lines.extend(runner.action(id, &ending(kind)));
            lines.extend(runner.done(id, &pushed(PushOutcome::Accepted)));
        }
        assert_eq!(lines.len(), 8, "{lines:?}");
        for line in lines {
            assert_eq!(forbidden_word(&line), None, "{line}");
        }
    }
}
