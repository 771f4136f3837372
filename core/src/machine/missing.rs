//! `bay evidence missing --kind <kind> --producer <producer> [--since <rev>]`: main's
//! first-parent commits, oldest first, that no record of that kind from that producer covers.
//!
//! A record covers a commit when it names the commit, or both the commit's tree and its first
//! parent's tree; a tree alone never does (`review::ReviewRecord::covers`). With a key registry
//! that signs everything, only a record that verifies against the class file its kind names
//! counts (`trust::record`). Commits an outside merge brought in off the first-parent line are
//! not listed, only counted (`off_first_parent`). The answer is `ok` whatever it lists: a
//! release gate reads `detail.missing`.

use serde::Serialize;

use super::keys_read::{KeysRead, KeysStep};
use super::{Action, Completion, FetchSpec, HistoryQuery, MainCommit, Outbox, Refs};
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::policy::Signing;
use crate::reason::ReasonCode;
use crate::report;
use crate::result::BayResult;
use crate::review::ReviewRecord;
use crate::time::Timestamp;
use crate::trust::record::{Keys, Trust};
use crate::trust::registry::{REF as REGISTRY, Version};

/// The most main commits one call lists; past it, `detail.more` is `true`.
pub const MISSING_READ: u32 = 2000;

#[derive(Clone, Debug)]
pub struct MissingInput {
    pub main: String,
    pub kind: String,
    pub producer: String,
    /// `--since`, resolved: only the commits after it.
    pub since: Option<Oid>,
}

/// What `bay evidence missing` answers: the commits it read and each no record covers.
#[derive(Debug, Serialize)]
struct Listed<'a> {
    kind: &'a str,
    producer: &'a str,
    since: Option<&'a Oid>,
    read: usize,
    missing: Vec<Uncovered<'a>>,
    /// Commits an outside merge brought in off the first-parent line: counted, not listed.
    off_first_parent: u64,
    more: bool,
    trust: Trust,
}

/// A commit no counted record covers, and its subject line.
#[derive(Debug, Serialize)]
struct Uncovered<'a> {
    commit: &'a Oid,
    subject: &'a str,
}

impl Detail for Listed<'_> {}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    History,
    Trees,
    Notes,
    Keys(KeysRead),
}

/// The `bay evidence missing` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Missing {
    input: MissingInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    remote: Refs,
    /// Main's first-parent commits read, oldest first, and whether more follow.
    commits: Vec<MainCommit>,
    more: bool,
    /// The tree of each commit, and of the first one's first parent (none for a root).
    trees: Vec<Oid>,
    base_tree: Option<Oid>,
    lines: Vec<String>,
    outcome: Option<BayResult>,
}

impl Missing {
    pub fn new(input: MissingInput, now: Timestamp) -> Missing {
        let mut machine = Missing {
            input,
            out: Outbox::default(),
            now,
            remote: Refs::new(),
            commits: Vec::new(),
            more: false,
            trees: Vec::new(),
            base_tree: None,
            lines: Vec::new(),
            outcome: None,
        };
        if !super::evidence::producer_name_ok(&machine.input.producer) {
            let why = format!(
                "--producer {:?} cannot name a notes ref; give letters, digits, `-` and `_`",
                machine.input.producer
            );
            machine.fail(why);
            return machine;
        }
        // `*`: a producer with no record yet, and a remote with no registry, are no fault.
        let spec = FetchSpec::new([
            refs::main(&machine.input.main),
            format!("{}*", refs::evidence(&machine.input.producer)),
            crate::trust::registry::fetch_pattern(),
        ]);
        machine.out.send(Action::Fetch(spec), Purpose::Fetch);
        machine
    }

    fn main(&self) -> Option<Oid> {
        self.remote.get(&refs::main(&self.input.main)).cloned()
    }

    fn finish(&mut self, result: BayResult) {
        let main = self.main();
        self.outcome = Some(report::with_main(result, main.as_ref()));
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.finish(report::failed(why, None));
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        let Some(main) = self.main() else {
            return self.fail(format!("the remote has no {}", self.input.main));
        };
        let read = Action::ReadHistory(HistoryQuery {
            from: self.input.since.clone(),
            to: main,
            limit: MISSING_READ + 1,
            newest: false,
            since: None,
        });
        self.out.send(read, Purpose::History);
    }

    /// The commits, then their trees and the first one's first parent's.
    fn on_history(&mut self, mut commits: Vec<MainCommit>) {
        self.more = commits.len() > MISSING_READ as usize;
        commits.truncate(MISSING_READ as usize);
        self.commits = commits;
        if self.commits.is_empty() {
            return self.judge(None);
        }
        let parent = self.commits[0].parents.first().cloned();
        let read = Action::ReadTrees {
            commits: parent
                .into_iter()
                .chain(self.commits.iter().map(|c| c.oid.clone()))
                .collect(),
        };
        self.out.send(read, Purpose::Trees);
    }

    fn on_trees(&mut self, mut trees: Vec<Oid>) {
        if trees.len() > self.commits.len() {
            self.base_tree = Some(trees.remove(0));
        }
        if trees.len() != self.commits.len() {
            return self.fail("reading main's trees gave a tree too few or too many".into());
        }
        self.trees = trees;
        let notes = self
            .remote
            .get(&refs::evidence(&self.input.producer))
            .cloned();
        let Some(tip) = notes else {
            return self.judge(None);
        };
        // A record may sit on the commit's tree (a review) or on the commit (a post check).
        let objects = self
            .trees
            .iter()
            .chain(self.commits.iter().map(|c| &c.oid))
            .cloned()
            .collect();
        let read = Action::ReadNotes {
            notes: vec![tip],
            objects,
        };
        self.out.send(read, Purpose::Notes);
    }

    fn on_notes(&mut self, lines: Vec<String>) {
        self.lines = lines;
        match (self.remote.get(REGISTRY).cloned(), self.main()) {
            (Some(registry), Some(main)) if !self.lines.is_empty() => {
                let (reader, read) = KeysRead::start(main, registry);
                self.out.send(read, Purpose::Keys(reader));
            }
            _ => self.judge(None),
        }
    }

    fn on_keys(&mut self, mut reader: KeysRead, completion: Completion) -> Option<Completion> {
        match reader.on(completion) {
            Err(completion) => return Some(*completion),
            Ok(KeysStep::Ask(action)) => {
                self.out.send(*action, Purpose::Keys(reader));
            }
            Ok(KeysStep::Done(signing, version)) => self.judge(Some((signing, *version))),
            Ok(KeysStep::Broken(broken)) => self.finish(report::refused(
                ReasonCode::RegistryUnreadable,
                None,
                None,
                broken.to_json(),
            )),
            Ok(KeysStep::Unread(fault)) => self.fail(fault.0),
        }
        None
    }

    /// Lists each commit no counted record covers.
    fn judge(&mut self, keys: Option<(Signing, Version)>) {
        let keys = keys.as_ref().map_or(
            Keys {
                registry: None,
                signing: Signing::All,
            },
            |(signing, version)| Keys {
                registry: Some(version),
                signing: *signing,
            },
        );
        let records: Vec<ReviewRecord> = self
            .lines
            .iter()
            .filter(|line| !keys.signs_everything() || keys.record(line) == Trust::Signed)
            .filter_map(|line| ReviewRecord::of_kind(line, &self.input.kind))
            .filter(|record| record.producer() == self.input.producer)
            .collect();
        let mut base_tree = self.base_tree.clone();
        let mut missing = Vec::new();
        for (commit, tree) in self.commits.iter().zip(&self.trees) {
            let covered = records
                .iter()
                .any(|record| record.covers(&commit.oid, tree, base_tree.as_ref()));
            if !covered {
                let subject = commit.message.lines().next().unwrap_or_default();
                missing.push(Uncovered {
                    commit: &commit.oid,
                    subject,
                });
            }
            base_tree = Some(tree.clone());
        }
        let trust = match (keys.registry, keys.signing) {
            (None, _) => Trust::Unsigned,
            (Some(_), Signing::All) => Trust::Signed,
            (Some(_), Signing::Approvals) => Trust::Approvals,
        };
        let detail = Listed {
            kind: &self.input.kind,
            producer: &self.input.producer,
            since: self.input.since.as_ref(),
            read: self.commits.len(),
            missing,
            off_first_parent: self.commits.iter().map(|c| c.off_first_parent).sum(),
            more: self.more,
            trust,
        }
        .to_map();
        self.finish(BayResult::ok(None, detail));
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::History, Completion::HistoryRead(Ok(commits))) => self.on_history(commits),
            (Purpose::Trees, Completion::TreesRead(Ok(trees))) => self.on_trees(trees),
            (Purpose::Notes, Completion::NotesRead(Ok(lines))) => self.on_notes(lines),
            (Purpose::Keys(reader), completion) => return self.on_keys(reader, completion),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Missing, "evidence missing");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Verdict;
    use crate::machine::{ActionId, Event, Machine};
    use crate::review::{Review, ReviewRecord};
    use serde_json::Value;

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an oid")
    }

    fn commit(c: char, parent: char, off: u64) -> MainCommit {
        MainCommit {
            oid: oid(c),
            parents: vec![oid(parent)],
            at: Timestamp(0),
            committer: "bay <bay@localhost>".into(),
            message: format!("commit {c}\n\nChange-Id: x\n"),
            off_first_parent: off,
            brought: Vec::new(),
        }
    }

    fn review(commit: char, tree: char, base_tree: char, producer: &str) -> String {
        let review = Review {
            reviewer: producer.into(),
            verdict: Verdict::ProductFailure,
            why: String::new(),
            version: None,
            inputs: Vec::new(),
            body: serde_json::Map::new(),
        };
        ReviewRecord::of(
            &review,
            &oid(commit),
            &oid(tree),
            Some(&oid(base_tree)),
            Timestamp(0),
        )
        .to_json()
    }

    struct Run(Missing, Option<(ActionId, Action)>);

    impl Run {
        fn answer(&mut self, completion: Completion) -> Option<&Action> {
            let (id, _) = self.1.take().expect("an action");
            self.0
                .handle(Timestamp(1), Event::Done(id, completion))
                .expect("no misuse");
            self.1 = self.0.poll_action();
            self.1.as_ref().map(|(_, action)| action)
        }
    }

    /// Main `1 <- a <- b <- c` (trees `5`, `6`, `7`; `1`'s tree `0`), records as given.
    fn missing(lines: Vec<String>) -> Value {
        let input = MissingInput {
            main: "main".into(),
            kind: "review".into(),
            producer: "review-bot".into(),
            since: None,
        };
        let mut machine = Missing::new(input, Timestamp(1));
        let first = machine.poll_action();
        let mut run = Run(machine, first);
        let remote: Refs = [
            (refs::main("main"), oid('c')),
            (refs::evidence("review-bot"), oid('9')),
        ]
        .into_iter()
        .collect();
        let next = run.answer(Completion::Fetched(Ok(remote)));
        assert!(matches!(next, Some(Action::ReadHistory(_))), "{next:?}");
        let history = vec![
            commit('a', '1', 0),
            commit('b', 'a', 3),
            commit('c', 'b', 0),
        ];
        run.answer(Completion::HistoryRead(Ok(history)));
        let trees = ['0', '5', '6', '7'].map(oid).to_vec();
        let next = run.answer(Completion::TreesRead(Ok(trees)));
        assert!(matches!(next, Some(Action::ReadNotes { .. })), "{next:?}");
        assert_eq!(run.answer(Completion::NotesRead(Ok(lines))), None);
        let outcome = run.0.outcome().expect("done");
        assert_eq!(outcome.decision, crate::result::Decision::Ok);
        outcome.detail.clone().into()
    }

    fn listed(detail: &Value) -> Vec<String> {
        detail["missing"]
            .as_array()
            .expect("a list")
            .iter()
            .map(|m| m["commit"].as_str().expect("a commit")[..1].to_owned())
            .collect()
    }

    #[test]
    fn a_registry_that_breaks_a_rule_refuses_registry_unreadable() {
        let input = MissingInput {
            main: "main".into(),
            kind: "review".into(),
            producer: "review-bot".into(),
            since: None,
        };
        let mut machine = Missing::new(input, Timestamp(1));
        let first = machine.poll_action();
        let mut run = Run(machine, first);
        let remote: Refs = [
            (refs::main("main"), oid('c')),
            (refs::evidence("review-bot"), oid('9')),
            (REGISTRY.to_owned(), oid('8')),
        ]
        .into_iter()
        .collect();
        run.answer(Completion::Fetched(Ok(remote)));
        run.answer(Completion::HistoryRead(Ok(vec![commit('c', 'b', 0)])));
        run.answer(Completion::TreesRead(Ok(vec![oid('6'), oid('7')])));
        let lines = vec![review('c', '7', '6', "review-bot")];
        let next = run.answer(Completion::NotesRead(Ok(lines)));
        assert!(matches!(next, Some(Action::ReadFile { .. })), "{next:?}");
        let next = run.answer(Completion::FileRead(Ok(None)));
        assert!(
            matches!(next, Some(Action::ReadRegistry { .. })),
            "{next:?}"
        );
        assert_eq!(run.answer(Completion::RegistryRead(Ok(Vec::new()))), None);
        let outcome = run.0.outcome().expect("done");
        assert_eq!(outcome.reason, Some(ReasonCode::RegistryUnreadable));
        assert_eq!(
            Value::from(outcome.detail.clone()),
            serde_json::json!({"why": "the registry holds no commit"}),
        );
    }

    #[test]
    fn a_commit_is_covered_by_its_own_record_or_one_naming_both_its_trees() {
        let detail = missing(Vec::new());
        assert_eq!(listed(&detail), ["a", "b", "c"]);
        assert_eq!(detail["off_first_parent"], 3);
        assert_eq!(detail["trust"], "unsigned");
        let detail = missing(vec![
            // `a` by its commit; `c` by both trees under another commit.
            review('a', '5', '0', "review-bot"),
            review('f', '7', '6', "review-bot"),
            // `b`'s tree alone, on another base: no cover.
            review('e', '6', '0', "review-bot"),
            // Another reviewer's record on `b`: not this producer's.
            review('b', '6', '5', "other-bot"),
        ]);
        assert_eq!(listed(&detail), ["b"]);
        assert_eq!(
            detail,
            serde_json::json!({
                "kind": "review",
                "producer": "review-bot",
                "since": null,
                "read": 3,
                "missing": [{"commit": oid('b'), "subject": "commit b"}],
                "off_first_parent": 3,
                "more": false,
                "trust": "unsigned",
            })
        );
    }
}
