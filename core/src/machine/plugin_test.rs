//! `bay plugin test check`: bay's contract cases, run against a check command through the same
//! request, the same driver and the same judge as a runner, on candidates of a scratch
//! repository. It writes nothing anywhere bay keeps records.
//!
//! Three runs answer seven cases:
//!
//! 1. the candidate itself: *an honest result* (a real verdict, `pass` or `product_failure`),
//!    *too few units* (the same output judged against one unit more than it reported must be
//!    `unknown`), *a late answer* (it answered within its limit), *noisy stderr* (stdout held
//!    the result alone; stderr goes to a log bay never reads), *an `unavailable` answer* (the
//!    check can run on this machine; if it says it cannot, bay keeps no record and waits);
//! 2. another candidate whose tree differs by one file: *a result for another tree* (the check
//!    names the tree it was given, not one it remembers);
//! 3. the candidate again, with one more `env` variable that this machine lacks: *a missing
//!    variable* (bay refuses to start the check at all, as `infra_failure`).
//!
//! The result is `ok` when every case passes and `failed` otherwise; `detail.cases` says, for
//! each, what bay sent, what came back, the result and why; `detail.bay_records` holds the
//! evidence record bay would write for the first request.

use serde::Serialize;
use serde_json::Value;

use super::{Action, ActionId, CheckRun, Completion, Deadline, Event, Machine, Misuse, Outbox};
use crate::check::{
    CheckExit, CheckRequest, CheckTarget, CommitTree, EvidenceExtras, EvidenceRecord, Judgement,
    RequestInput, Verdict, judge,
};
use crate::detail::Detail;
use crate::policy::CheckSpec;
use crate::result::BayResult;
use crate::time::Timestamp;

/// The variable the *missing variable* case declares; a machine that sets it cannot run
/// that case.
pub const MISSING_VARIABLE: &str = "BAY_PLUGIN_TEST_UNSET";

/// What the test needs: the check as flags describe it, and the scratch repository's commits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginTestInput {
    pub check: CheckSpec,
    /// The scratch base, whose `adapter` paths run.
    pub base: CommitTree,
    /// A candidate on the base holding the files as they are.
    pub candidate: CommitTree,
    /// A candidate whose tree differs from `candidate` by `other_path`.
    pub other: CommitTree,
    pub other_path: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    Candidate,
    Other,
    Missing,
}

/// One finished run: what bay sent, and what came back.
#[derive(Debug)]
struct Ran {
    request: CheckRequest,
    exit: CheckExit,
}

/// The run in flight, with the runs finished before it.
#[derive(Debug)]
enum Purpose {
    Candidate,
    Other {
        candidate: Box<Ran>,
    },
    Missing {
        candidate: Box<Ran>,
        other: Box<Ran>,
    },
}

impl Purpose {
    fn run(&self) -> Run {
        match self {
            Purpose::Candidate => Run::Candidate,
            Purpose::Other { .. } => Run::Other,
            Purpose::Missing { .. } => Run::Missing,
        }
    }
}

/// The plugin test, as a machine: it asks for three check runs, one after another.
#[derive(Debug)]
pub struct PluginTest {
    input: PluginTestInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    outcome: Option<BayResult>,
}

impl PluginTest {
    pub fn new(input: PluginTestInput, now: Timestamp) -> PluginTest {
        let mut test = PluginTest {
            input,
            out: Outbox::default(),
            now,
            outcome: None,
        };
        test.send(Purpose::Candidate);
        test
    }

    fn request(&self, run: Run) -> CheckRequest {
        let (candidate, changed) = match run {
            Run::Other => (
                self.input.other.clone(),
                vec![self.input.other_path.clone()],
            ),
            Run::Candidate | Run::Missing => (self.input.candidate.clone(), Vec::new()),
        };
        let check = &self.input.check;
        CheckRequest::build(RequestInput {
            target: CheckTarget::of(check),
            policy_revision: "plugin-test".into(),
            candidate,
            base: self.input.base.clone(),
            changed_paths: changed,
            change: None,
        })
    }

    fn send(&mut self, purpose: Purpose) {
        let run = purpose.run();
        let mut check = self.input.check.clone();
        if run == Run::Missing {
            check.env.push(MISSING_VARIABLE.into());
        }
        let request = self.request(run);
        let candidate = request.candidate.commit.clone();
        let action = Action::RunCheck(Box::new(CheckRun {
            check,
            request,
            adapter_from: self.input.base.commit.clone(),
            candidate,
            slot: run as u32,
        }));
        self.out.send(action, purpose);
    }

    fn on_exit(&mut self, purpose: Purpose, exit: CheckExit) {
        let request = self.request(purpose.run());
        let ran = Ran { request, exit };
        match purpose {
            Purpose::Candidate => self.send(Purpose::Other {
                candidate: Box::new(ran),
            }),
            Purpose::Other { candidate } => self.send(Purpose::Missing {
                candidate,
                other: Box::new(ran),
            }),
            Purpose::Missing { candidate, other } => self.finish(&candidate, &other, &ran),
        }
    }

    /// Judges the cases from the three runs.
    fn finish(&mut self, candidate: &Ran, other: &Ran, missing: &Ran) {
        let minimum = self.input.check.expected_minimum;
        let Ran { request, exit } = candidate;
        let first = judge(request, minimum, exit);
        let other_request = &other.request;
        let other = judge(other_request, minimum, &other.exit);
        let missing_exit = &missing.exit;
        let missing = judge(&missing.request, minimum, missing_exit);

        let cases = [
            honest(&first),
            another_tree(other_request, &other),
            too_few_units(request, exit, &first),
            late_answer(&self.input.check, exit),
            noisy_stderr(exit),
            unavailable(&first),
            missing_variable(missing_exit, &missing),
        ];
        let records: Vec<EvidenceRecord> = first
            .judged()
            .map(|judged| {
                let extras = EvidenceExtras {
                    producer: "plugin-test".into(),
                    op: String::new(),
                    candidate_id: String::new(),
                    at: self.now,
                    definition: crate::check::definition::digest(&self.input.check, &exit.adapter),
                };
                EvidenceRecord::new(request, judged, exit, extras)
            })
            .into_iter()
            .collect();
        let failing: Vec<String> = cases
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.to_owned())
            .collect();
        let detail = Tested {
            check: &self.input.check.id,
            cases: &cases,
            bay_records: records,
            failing: &failing,
        }
        .to_map();
        self.outcome = Some(if failing.is_empty() {
            BayResult::ok(None, detail)
        } else {
            let mut result = BayResult::failed(&format!(
                "the check did not meet bay's contract in {} of {} cases: {}",
                failing.len(),
                cases.len(),
                failing.join(", ")
            ));
            result.detail.extend(detail);
            result
        });
    }
}

/// What `bay check test` answers: each contract case, the records bay would write of the
/// check's run, and the cases that failed.
#[derive(Serialize)]
struct Tested<'a> {
    check: &'a str,
    cases: &'a [Case],
    bay_records: Vec<EvidenceRecord>,
    failing: &'a [String],
}

impl Detail for Tested<'_> {}

/// One contract case: what bay sent, what came back, the result, why, and whether it passed.
#[derive(Debug, Serialize)]
struct Case {
    #[serde(rename = "case")]
    name: &'static str,
    sent: String,
    came_back: String,
    result: String,
    why: String,
    passed: bool,
}

fn verdict_of(judgement: &Judgement) -> String {
    match judgement {
        Judgement::Unavailable { .. } => "unavailable".into(),
        Judgement::Judged(judged) => judged.verdict.as_str().into(),
    }
}

fn why_of(judgement: &Judgement) -> String {
    match judgement {
        Judgement::Unavailable { reason } => format!("the check answered unavailable: {reason}"),
        Judgement::Judged(judged) => judged.why.clone(),
    }
}

fn real_verdict(judgement: &Judgement) -> bool {
    matches!(
        judgement.verdict(),
        Some(Verdict::Pass | Verdict::ProductFailure)
    )
}

fn honest(first: &Judgement) -> Case {
    Case {
        name: "an honest result",
        sent: "a request for the candidate: the files as they are".into(),
        came_back: verdict_of(first),
        result: verdict_of(first),
        why: why_of(first),
        passed: real_verdict(first),
    }
}

fn another_tree(request: &CheckRequest, other: &Judgement) -> Case {
    Case {
        name: "a result for another tree",
        sent: format!(
            "a request for a second candidate, tree {}, one file apart from the first",
            request.candidate.tree
        ),
        came_back: verdict_of(other),
        result: verdict_of(other),
        why: if real_verdict(other) {
            "the result named the tree it was sent".into()
        } else {
            why_of(other)
        },
        passed: real_verdict(other),
    }
}

fn too_few_units(request: &CheckRequest, exit: &CheckExit, first: &Judgement) -> Case {
    let Some(judged) = first.judged().filter(|_| real_verdict(first)) else {
        return Case {
            name: "too few units",
            sent: "nothing: it judges the first answer again".into(),
            came_back: verdict_of(first),
            result: "not judged".into(),
            why: "the first answer gave no real verdict to judge again".into(),
            passed: false,
        };
    };
    let bar = judged.units.saturating_add(1);
    let again = judge(request, bar, exit);
    let refused = again.verdict() == Some(Verdict::Unknown);
    Case {
        name: "too few units",
        sent: format!("the first answer, judged against an expected_minimum of {bar}"),
        came_back: format!("{} units", judged.units),
        result: verdict_of(&again),
        why: if refused {
            format!(
                "fewer units than expected_minimum is unknown, never a pass: {}",
                why_of(&again)
            )
        } else {
            "bay did not refuse a result with too few units".into()
        },
        passed: refused,
    }
}

fn late_answer(check: &CheckSpec, exit: &CheckExit) -> Case {
    let seconds = exit.millis as f64 / 1000.0;
    Case {
        name: "a late answer",
        sent: format!("the first request, with a limit of {} s", check.timeout_s),
        came_back: if exit.timed_out {
            "no answer in time".into()
        } else {
            format!("an answer after {seconds:.1} s")
        },
        result: if exit.timed_out {
            "unknown".into()
        } else {
            "in time".into()
        },
        why: if exit.timed_out {
            "the check ran past its limit and was stopped, with every process it started; a late answer is never a pass".into()
        } else {
            "the check answered within its limit".into()
        },
        passed: !exit.timed_out,
    }
}

fn noisy_stderr(exit: &CheckExit) -> Case {
    let clean = serde_json::from_slice::<Value>(&exit.stdout)
        .ok()
        .and_then(|value| value.get("schema").cloned())
        .is_some_and(|schema| schema == crate::check::RESULT_SCHEMA);
    Case {
        name: "noisy stderr",
        sent: "the first request; stderr goes to a log that bay never reads".into(),
        came_back: format!("{} bytes on stdout", exit.stdout.len()),
        result: if clean {
            "one result document".into()
        } else {
            "not one result document".into()
        },
        why: if clean {
            "stdout held the result alone".into()
        } else {
            "stdout must hold only the bay.check.result/1 document; print logs to stderr".into()
        },
        passed: clean,
    }
}

fn unavailable(first: &Judgement) -> Case {
    let said = matches!(first, Judgement::Unavailable { .. });
    Case {
        name: "an unavailable answer",
        sent: "the first request".into(),
        came_back: verdict_of(first),
        result: if said {
            "no record; the change would wait with CHECK_UNAVAILABLE".into()
        } else {
            "runs here".into()
        },
        why: if said {
            why_of(first)
        } else {
            "the check can run on this machine; when one cannot, it answers unavailable and bay keeps no record".into()
        },
        passed: !said,
    }
}

fn missing_variable(exit: &CheckExit, missing: &Judgement) -> Case {
    let refused = exit.infra.is_some() && missing.verdict() == Some(Verdict::InfraFailure);
    Case {
        name: "a missing variable",
        sent: format!("the first request, with {MISSING_VARIABLE} in env, unset on this machine"),
        came_back: exit.infra.clone().unwrap_or_else(|| "the check ran".into()),
        result: verdict_of(missing),
        why: if refused {
            "bay does not start a check without every variable its env names".into()
        } else {
            format!("{MISSING_VARIABLE} is set on this machine, or bay ran the check anyway")
        },
        passed: refused,
    }
}

impl Machine for PluginTest {
    fn handle(&mut self, now: Timestamp, event: Event) -> Result<(), Misuse> {
        self.now = now;
        let Event::Done(id, completion) = event else {
            return Ok(());
        };
        let Some(purpose) = self.out.complete(id)? else {
            return Ok(());
        };
        match completion {
            Completion::CheckExited(exit) => {
                self.on_exit(purpose, exit);
                Ok(())
            }
            other => Err(Misuse(format!("plugin test got {other:?} for a check run"))),
        }
    }

    fn poll_action(&mut self) -> Option<(ActionId, Action)> {
        self.out.poll()
    }

    fn poll_timeout(&self) -> Option<Deadline> {
        None
    }

    fn outcome(&self) -> Option<&BayResult> {
        self.outcome.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Oid;
    use crate::policy::Policy;
    use serde_json::json;

    fn commit_tree(n: char) -> CommitTree {
        CommitTree {
            commit: Oid::parse(&n.to_string().repeat(40)).expect("an id"),
            tree: Oid::parse(&n.to_string().repeat(40).replacen(n, "e", 1)).expect("an id"),
        }
    }

    fn test() -> PluginTest {
        let policy = Policy::parse(
            "revision = 1\n[[check]]\nid = \"t\"\nenvironment = \"here\"\ncommand = \"c\"\nadapter = [\"c\"]\nexpected_minimum = 1\n",
        )
        .expect("a policy");
        PluginTest::new(
            PluginTestInput {
                check: policy.checks[0].clone(),
                base: commit_tree('a'),
                candidate: commit_tree('b'),
                other: commit_tree('c'),
                other_path: "x".into(),
            },
            Timestamp(1),
        )
    }

    /// An honest answer to a run: one passing unit on the tree it names, or on `tree`.
    fn answer(run: &CheckRun, tree: Option<&Oid>) -> CheckExit {
        let candidate = &run.request.candidate;
        let stdout = json!({
            "schema": "bay.check.result/1",
            "exercised": {"commit": candidate.commit, "tree": tree.unwrap_or(&candidate.tree)},
            "plan": {"selected": 1, "completed": 1},
            "checks": [{"id": "u", "verdict": "pass"}],
        });
        CheckExit {
            stdout: stdout.to_string().into_bytes(),
            exit_code: Some(0),
            millis: 5,
            ..CheckExit::default()
        }
    }

    /// Runs the test, answering each run with `respond`, and returns the failing cases.
    fn failing(respond: impl Fn(usize, &CheckRun) -> CheckExit) -> Vec<String> {
        let mut test = test();
        let mut n = 0;
        while let Some((id, action)) = test.poll_action() {
            let Action::RunCheck(run) = action else {
                panic!("only check runs")
            };
            let exit = respond(n, &run);
            n += 1;
            test.handle(Timestamp(2), Event::Done(id, Completion::CheckExited(exit)))
                .expect("a faithful driver");
        }
        assert_eq!(n, 3, "three runs");
        let outcome = test.outcome().expect("an outcome");
        outcome.detail["failing"]
            .as_array()
            .expect("failing")
            .iter()
            .map(|v| v.as_str().expect("a name").to_owned())
            .collect()
    }

    fn refused() -> CheckExit {
        CheckExit {
            infra: Some("BAY_PLUGIN_TEST_UNSET is not set".into()),
            ..CheckExit::default()
        }
    }

    #[test]
    fn an_honest_check_passes_every_case() {
        let failing = failing(|n, run| if n == 2 { refused() } else { answer(run, None) });
        assert!(failing.is_empty(), "{failing:?}");
    }

    #[test]
    fn a_check_that_remembers_the_first_tree_fails_the_second() {
        let first = commit_tree('b').tree;
        let failing = failing(|n, run| match n {
            2 => refused(),
            _ => answer(run, Some(&first)),
        });
        assert_eq!(failing, vec!["a result for another tree"]);
    }

    #[test]
    fn a_driver_that_runs_a_check_without_its_variable_fails_that_case() {
        let failing = failing(|_, run| answer(run, None));
        assert_eq!(failing, vec!["a missing variable"]);
    }

    #[test]
    fn a_check_that_runs_out_of_time_fails_the_late_answer_case() {
        let failing = failing(|n, run| match n {
            0 => CheckExit {
                timed_out: true,
                exit_code: None,
                ..answer(run, None)
            },
            2 => refused(),
            _ => answer(run, None),
        });
        assert!(failing.contains(&"a late answer".to_owned()), "{failing:?}");
        assert!(
            failing.contains(&"an honest result".to_owned()),
            "{failing:?}"
        );
    }

    #[test]
    fn a_case_names_what_was_sent_what_came_back_and_whether_it_passed() {
        let case = Case {
            name: "unset_variable",
            sent: "no BAY_PLUGIN_TEST_UNSET".into(),
            came_back: "unavailable".into(),
            result: "unavailable".into(),
            why: "the check said what it lacked".into(),
            passed: true,
        };
        assert_eq!(
            serde_json::to_value(&case).expect("plain data"),
            json!({
                "case": "unset_variable",
                "sent": "no BAY_PLUGIN_TEST_UNSET",
                "came_back": "unavailable",
                "result": "unavailable",
                "why": "the check said what it lacked",
                "passed": true,
            })
        );
    }
}
