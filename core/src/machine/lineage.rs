//! `bay status --lineage [<range>]`: the `Reverts:`, `Supersedes:` and `Fixes:` pairs on a
//! first-parent range of main, read from local refs only (no fetch: run `bay status` first).

use super::{Action, Completion, Outbox, RawStep};
use crate::lineage::pairs;
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
        let lineage: Vec<_> = commits
            .iter()
            .flat_map(|commit| pairs(&commit.oid, &commit.message))
            .collect();
        let mut detail = serde_json::Map::new();
        detail.insert(
            "range".into(),
            serde_json::json!(self.input.range.as_deref().unwrap_or("main")),
        );
        detail.insert("commits".into(), serde_json::json!(commits.len()));
        detail.insert("lineage".into(), serde_json::json!(lineage));
        detail.insert("more".into(), serde_json::json!(more));
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
