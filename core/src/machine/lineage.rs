//! `bay status --lineage [<range>]`: the `Reverts:`, `Supersedes:` and `Fixes:` pairs on a
//! first-parent range of main, read from local refs only (no fetch: run `bay status` first).

use serde::Serialize;

use super::{Action, Completion, Outbox, RawStep};
use crate::detail::Detail;
use crate::lineage::{Pair, pairs};
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

/// The most commits one call reads; past it the result says `more`.
pub const MAX_COMMITS: u32 = 10_000;

#[derive(Clone, Debug)]
pub struct LineageInput {
    /// A range as Git takes it (`<from>..<to>`); `None` for main as last fetched.
    pub range: Option<String>,
}

/// What `bay status --lineage` answers: the range it read, how many commits, the pairs they
/// name, and whether more commits lay past the limit.
#[derive(Debug, Serialize)]
struct Listed<'a> {
    range: &'a str,
    commits: usize,
    lineage: Vec<Pair>,
    more: bool,
}

impl Detail for Listed<'_> {}

#[derive(Clone, Debug)]
enum Purpose {
    Log,
}

/// The `bay status --lineage` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Lineage {
    input: LineageInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    outcome: Option<BayResult>,
}

impl Lineage {
    pub fn new(input: LineageInput, now: Timestamp) -> Lineage {
        let mut lineage = Lineage {
            input,
            out: Outbox::default(),
            now,
            outcome: None,
        };
        // A range that reads like an option is refused before Git sees it.
        if let Some(range) = lineage.input.range.clone().filter(|r| r.starts_with('-')) {
            lineage.fail(format!("{range:?} is not a range of commits"));
            return lineage;
        }
        let read = Action::ReadLog {
            range: lineage.input.range.clone(),
            limit: MAX_COMMITS + 1,
            since: None,
        };
        lineage.out.send(read, Purpose::Log);
        lineage
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.finish(report::failed(why, None));
    }

    fn on_log(&mut self, mut commits: Vec<RawStep>) {
        let more = commits.len() > MAX_COMMITS as usize;
        commits.truncate(MAX_COMMITS as usize);
        let listed = Listed {
            range: self.input.range.as_deref().unwrap_or("main"),
            commits: commits.len(),
            lineage: commits
                .iter()
                .flat_map(|commit| pairs(&commit.oid, &commit.message))
                .collect(),
            more,
        };
        let detail = listed.to_map();
        self.finish(BayResult::ok(None, detail));
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Log, Completion::LogRead(Ok(commits))) => self.on_log(commits),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Lineage, "lineage");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Oid;
    use crate::machine::{Event, Machine};
    use serde_json::{Value, json};

    #[test]
    fn the_listing_names_the_range_the_commits_read_and_each_pair() {
        let mut machine = Lineage::new(LineageInput { range: None }, Timestamp(1));
        let (id, action) = machine.poll_action().expect("a log read");
        assert!(matches!(action, Action::ReadLog { .. }), "{action:?}");
        let oid = |c: char| Oid::parse(&c.to_string().repeat(40)).expect("an id");
        let commits = vec![
            RawStep {
                oid: oid('a'),
                message: "undo b\n\nChange-Id: c7k2m4qa\nBay-Op: c7k2m4qa.1\nReverts: cbaaaaaa\n"
                    .into(),
            },
            RawStep {
                oid: oid('b'),
                message: "by hand\n".into(),
            },
        ];
        machine
            .handle(
                Timestamp(2),
                Event::Done(id, Completion::LogRead(Ok(commits))),
            )
            .expect("no misuse");
        let outcome = machine.outcome().expect("done");
        assert_eq!(
            Value::from(outcome.detail.clone()),
            json!({
                "range": "main",
                "commits": 2,
                "lineage": [{
                    "commit": oid('a'),
                    "change": "c7k2m4qa",
                    "relation": "reverts",
                    "target": "cbaaaaaa",
                    "publication": true,
                    "by_bay": true,
                }],
                "more": false,
            })
        );
    }
}
