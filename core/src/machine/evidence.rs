//! `bay evidence record --kind check`: a producer outside bay records a post check's answer on
//! merged commits, one record per commit, in its own notes ref
//! `refs/notes/bay/evidence/<producer>`.
//!
//! Records are added, never changed: the same content under one id again is a rerun that
//! writes nothing (`unchanged`), and different content under it is refused, for every commit
//! of the call (all or nothing). Without a key registry the records are unsigned, and say so.

use super::agent::MAX_RACES;
use super::{Action, Completion, Expect, FetchSpec, NoteAdd, Outbox, PushOutcome, PushPlan, Refs};
use crate::check::Verdict;
use crate::git::{Oid, refs};
use crate::red::{Answer, MAX_RECORD_BYTES, PostRecord, TRUST};
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

/// One merged commit to record on, as the driver resolved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    pub commit: Oid,
    pub tree: Oid,
    /// The tree of its first parent; none for a root commit.
    pub base_tree: Option<Oid>,
}

/// The call as given: the words of its flags are judged here, not by the command line.
#[derive(Clone, Debug)]
pub struct RecordInput {
    pub main: String,
    pub producer: String,
    /// `--kind`: only `check` is written without keys.
    pub kind: String,
    /// `--verdict`, one of the four words exactly.
    pub verdict: String,
    pub check: String,
    pub environment: String,
    pub why: String,
    pub version: Option<String>,
    /// `--input`, each `<key>=<value>`.
    pub inputs: Vec<String>,
    pub commits: Vec<Merged>,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    Read,
    Push,
}

/// The `bay evidence record` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct RecordEvidence {
    input: RecordInput,
    /// The verdict and inputs, once the flags are read.
    verdict: Verdict,
    inputs: Vec<(String, String)>,
    out: Outbox<Purpose>,
    now: Timestamp,
    races: u32,
    /// The producer's notes tip as last fetched.
    tip: Option<Oid>,
    /// The ids a push in flight adds, and those it found already held.
    pending: Vec<String>,
    unchanged: Vec<String>,
    outcome: Option<BayResult>,
}

impl RecordEvidence {
    pub fn new(input: RecordInput, now: Timestamp) -> RecordEvidence {
        let mut machine = RecordEvidence {
            input,
            verdict: Verdict::Unknown,
            inputs: Vec::new(),
            out: Outbox::default(),
            now,
            races: 0,
            tip: None,
            pending: Vec::new(),
            unchanged: Vec::new(),
            outcome: None,
        };
        let read = flags(&machine.input).and_then(|(verdict, inputs)| {
            machine.verdict = verdict;
            machine.inputs = inputs;
            machine.refusal().map_or(Ok(()), Err)
        });
        if let Err(why) = read {
            machine.fail(why);
            return machine;
        }
        machine.fetch();
        machine
    }

    /// What makes the call unwritable, judged before anything is read.
    fn refusal(&self) -> Option<String> {
        let input = &self.input;
        if !producer_name_ok(&input.producer) {
            return Some(format!(
                "the producer name {:?} cannot name a notes ref; set bay.producerName to letters, \
                 digits, `-` and `_`",
                input.producer
            ));
        }
        if input.commits.is_empty() {
            return Some("name at least one merged commit with --commit".into());
        }
        if input.check.is_empty() || input.environment.is_empty() {
            return Some(
                "a check record names its post check with --check and --environment".into(),
            );
        }
        self.records()
            .iter()
            .map(PostRecord::to_json)
            .find(|json| json.len() > MAX_RECORD_BYTES)
            .map(|json| {
                format!(
                    "a record of {} bytes is over the limit of {MAX_RECORD_BYTES}; bay never cuts \
                     one, so shorten --why",
                    json.len()
                )
            })
    }

    /// One record per commit.
    fn records(&self) -> Vec<PostRecord> {
        let input = &self.input;
        let answer = Answer {
            producer: input.producer.clone(),
            check: input.check.clone(),
            environment: input.environment.clone(),
            verdict: self.verdict,
            why: input.why.clone(),
            version: input.version.clone(),
            inputs: self.inputs.clone(),
        };
        input
            .commits
            .iter()
            .map(|merged| {
                let base_tree = merged.base_tree.as_ref();
                PostRecord::of(&answer, &merged.commit, &merged.tree, base_tree, self.now)
            })
            .collect()
    }

    fn notes_ref(&self) -> String {
        refs::evidence(&self.input.producer)
    }

    fn fetch(&mut self) {
        // A trailing `*`: a producer's first record finds no notes ref, which is no fault.
        let spec = FetchSpec::new([
            refs::main(&self.input.main),
            format!("{}*", self.notes_ref()),
        ]);
        self.out.send(Action::Fetch(spec), Purpose::Fetch);
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.finish(report::failed(why, None));
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.tip = remote.get(&self.notes_ref()).cloned();
        match self.tip.clone() {
            None => self.write(Vec::new()),
            Some(tip) => {
                let objects = self
                    .input
                    .commits
                    .iter()
                    .map(|m| m.commit.clone())
                    .collect();
                let read = Action::ReadNotes {
                    notes: vec![tip],
                    objects,
                };
                self.out.send(read, Purpose::Read);
            }
        }
    }

    /// Adds each record its id does not hold yet; the same content again is unchanged, and
    /// other content under a held id refuses the whole call.
    fn write(&mut self, existing: Vec<String>) {
        let held: Vec<PostRecord> = existing
            .iter()
            .filter_map(|line| PostRecord::from_json(line))
            .collect();
        let mut new = Vec::new();
        let mut unchanged = Vec::new();
        for record in self.records() {
            match held.iter().find(|h| h.id == record.id) {
                Some(h) if record.same_content(h) => unchanged.push(record.id),
                Some(_) => {
                    return self.fail(format!(
                        "{} already holds a different record; give a new --version to write \
                         another beside it",
                        record.id
                    ));
                }
                None => new.push(record),
            }
        }
        if new.is_empty() {
            return self.done(Vec::new(), unchanged);
        }
        let expect = match &self.tip {
            Some(tip) => Expect::Is(tip.clone()),
            None => Expect::Absent,
        };
        let notes = new
            .iter()
            .map(|record| NoteAdd {
                producer: self.input.producer.clone(),
                expect: expect.clone(),
                object: record.commit.clone(),
                record: record.to_json(),
                key: None,
            })
            .collect();
        let plan = PushPlan {
            notes,
            atomic: true,
            ..PushPlan::default()
        };
        self.out.send(Action::Push(plan), Purpose::Push);
        self.pending = new.into_iter().map(|r| r.id).collect();
        self.unchanged = unchanged;
    }

    fn done(&mut self, recorded: Vec<String>, unchanged: Vec<String>) {
        let detail = serde_json::json!({
            "producer": self.input.producer,
            "recorded": recorded,
            "unchanged": unchanged.len(),
            "trust": TRUST,
        });
        let result = BayResult::ok(None, detail.as_object().cloned().unwrap_or_default());
        self.finish(result);
    }

    fn on_pushed(&mut self, outcome: PushOutcome) {
        match outcome {
            PushOutcome::Accepted => {
                let recorded = std::mem::take(&mut self.pending);
                let unchanged = std::mem::take(&mut self.unchanged);
                self.done(recorded, unchanged);
            }
            // The notes moved, or the reply was lost: read again; a record that went up is
            // found as unchanged.
            PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => {
                self.races += 1;
                if self.races > MAX_RACES {
                    return self.fail("other writers kept moving this producer's notes".into());
                }
                self.fetch();
            }
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Read, Completion::NotesRead(Ok(lines))) => self.write(lines),
            (Purpose::Push, Completion::Pushed(report)) => self.on_pushed(report.outcome),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(RecordEvidence, "evidence record");

/// The verdict and the inputs the flags give, or why they do not make a check record. The
/// command line asks it before it resolves any commit, so a bad flag fails first.
pub fn flags(input: &RecordInput) -> Result<(Verdict, Vec<(String, String)>), String> {
    if input.kind != "check" {
        return Err(format!(
            "--kind {} needs a key registry, which this bay does not have yet; only \
             `--kind check` records a post check's answer",
            input.kind
        ));
    }
    let verdict = Verdict::parse(&input.verdict).ok_or_else(|| {
        format!(
            "--verdict {} is not one of pass, product_failure, infra_failure, unknown",
            input.verdict
        )
    })?;
    let inputs = input
        .inputs
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .filter(|(key, _)| !key.is_empty())
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .ok_or_else(|| format!("--input {pair} is not <key>=<value>"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((verdict, inputs))
}

/// A producer's name goes into a ref name: letters, digits, `-` and `_` only.
pub fn producer_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(kind: &str, verdict: &str, inputs: &[&str]) -> RecordInput {
        RecordInput {
            main: "main".into(),
            producer: "ci".into(),
            kind: kind.into(),
            verdict: verdict.into(),
            check: "smoke".into(),
            environment: "linux".into(),
            why: String::new(),
            version: None,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            commits: Vec::new(),
        }
    }

    #[test]
    fn the_flags_make_a_check_record_or_say_which_one_does_not() {
        let (verdict, inputs) =
            flags(&input("check", "product_failure", &["os=linux", "v="])).expect("good flags");
        assert_eq!(verdict, Verdict::ProductFailure);
        assert_eq!(
            inputs,
            vec![("os".into(), "linux".into()), ("v".into(), String::new())]
        );
        for (bad, said) in [
            (input("review", "pass", &[]), "--kind review"),
            (input("check", "Pass", &[]), "--verdict Pass"),
            (input("check", "pass", &["=x"]), "--input =x"),
            (input("check", "pass", &["nokey"]), "--input nokey"),
        ] {
            let why = flags(&bad).expect_err("refused");
            assert!(why.contains(said), "{why}");
        }
    }
}
