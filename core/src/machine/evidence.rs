//! `bay evidence record --kind check|review`: a producer outside bay records a post check's
//! answer, or a reviewer its review, on merged commits, one record per commit, in its own
//! notes ref `refs/notes/bay/evidence/<producer>`.
//!
//! Records are added, never changed: the same content under one id again is a rerun that
//! writes nothing (`unchanged`), and different content under it is refused, for every commit
//! of the call (all or nothing). A check record sits on the merged commit, signed by
//! `bay.producerKey` when it is set. A review needs `bay.reviewerName` and `bay.reviewerKey`
//! even where no registry is, is signed whole by that key, and sits on the merge's tree. With
//! a registry that signs everything, the signing key must be enrolled in the file its kind
//! names under the writer's name, or nothing is written. An approval (`--kind approval`, with
//! `--check` and `--environment` naming the approval check and `--commit` the candidate)
//! needs `bay.approverName`, `bay.approverKey` and a registry that enrols that key in its
//! `approver` file, under either signing mode, and sits on the candidate commit. Waivers are
//! not built yet, and refused.

use serde::Serialize;

use super::agent::AfterNotesPush;
use super::keys_read::{KeysRead, KeysStep};
use super::{Action, Completion, Expect, FetchSpec, NoteAdd, Outbox, PushOutcome, PushPlan, Refs};
use crate::approval::APPROVAL;
use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::policy::Signing;
use crate::reason::ReasonCode;
use crate::red::{Answer, MAX_RECORD_BYTES, PostRecord};
use crate::report;
use crate::result::BayResult;
use crate::review::{REVIEW, Review, ReviewRecord, parse_body};
use crate::time::Timestamp;
use crate::trust::Trust;
use crate::trust::record::{KeySetting, signer_class};
use crate::trust::registry::{REF as REGISTRY, Version, is_name};

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
    /// `bay.producerName`, else the actor: who writes a check record.
    pub producer: String,
    /// `bay.producerKey`, when set: signs a check record.
    pub producer_key: Option<KeySetting>,
    /// `bay.reviewerName`: who writes a review record; none when it is not set.
    pub reviewer: Option<String>,
    /// `bay.reviewerKey`: the only key that signs a review, with its public half or why there
    /// is none.
    pub reviewer_key: Option<KeySetting>,
    /// `bay.approverName`: who writes an approval; none when it is not set.
    pub approver: Option<String>,
    /// `bay.approverKey`: the only key that signs an approval.
    pub approver_key: Option<KeySetting>,
    /// `--kind`: `check`, `review` or `approval`.
    pub kind: String,
    /// `--verdict`, one of the four words exactly.
    pub verdict: String,
    pub check: String,
    pub environment: String,
    pub why: String,
    pub version: Option<String>,
    /// `--input`, each `<key>=<value>`.
    pub inputs: Vec<String>,
    /// `--body`: the text of the file, one JSON object whose fields a review carries.
    pub body: Option<String>,
    pub commits: Vec<Merged>,
}

/// The flags read: what every record of the call says.
#[derive(Clone, Debug)]
pub struct Flags {
    pub verdict: Verdict,
    pub inputs: Vec<(String, String)>,
    /// The `--body` object's fields; empty without one.
    pub body: serde_json::Map<String, serde_json::Value>,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    /// The keys a review is judged by: `[policy] signing` at main and the registry.
    Keys(KeysRead),
    Read,
    Push,
}

/// One record of the call, of either kind.
#[derive(Clone, Debug)]
enum Record {
    Check(Box<PostRecord>),
    Review(ReviewRecord),
    /// An approval record's line, and its id.
    Approval(String, String),
}

impl Record {
    fn id(&self) -> &str {
        match self {
            Record::Check(record) => &record.id,
            Record::Review(record) => record.id(),
            Record::Approval(id, _) => id,
        }
    }

    fn to_json(&self) -> String {
        match self {
            Record::Check(record) => record.to_json(),
            Record::Review(record) => record.to_json(),
            Record::Approval(_, line) => line.clone(),
        }
    }

    /// Whether one of the lines held holds this record's id: `Some(true)` with the same
    /// content, `Some(false)` with other content.
    fn held_in(&self, lines: &[String]) -> Option<bool> {
        match self {
            Record::Check(record) => lines
                .iter()
                .filter_map(|line| PostRecord::from_json(line))
                .find(|held| held.id == record.id)
                .map(|held| record.same_content(&held)),
            Record::Review(record) => lines
                .iter()
                .filter_map(|line| ReviewRecord::from_json(line))
                .find(|held| held.id() == record.id())
                .map(|held| record.same_content(&held)),
            Record::Approval(id, line) => lines
                .iter()
                .find(|held| crate::approval::record_id_of(held).as_deref() == Some(id.as_str()))
                .map(|held| crate::approval::same_content(held, line)),
        }
    }
}

/// The `bay evidence record` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct RecordEvidence {
    input: RecordInput,
    /// The verdict, inputs and body, once the flags are read.
    flags: Flags,
    /// How far the records written are trusted, once the registry is read.
    trust: Trust,
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
            flags: Flags {
                verdict: Verdict::Unknown,
                inputs: Vec::new(),
                body: serde_json::Map::new(),
            },
            trust: Trust::Unsigned,
            out: Outbox::default(),
            now,
            races: 0,
            tip: None,
            pending: Vec::new(),
            unchanged: Vec::new(),
            outcome: None,
        };
        let read = flags(&machine.input).and_then(|flags| {
            machine.flags = flags;
            machine.refusal().map_or(Ok(()), Err)
        });
        if let Err(why) = read {
            machine.fail(why);
            return machine;
        }
        machine.fetch();
        machine
    }

    fn is_review(&self) -> bool {
        self.input.kind == REVIEW
    }

    fn is_approval(&self) -> bool {
        self.input.kind == APPROVAL
    }

    /// The key that signs the records, and the Git setting that names it: a review's is
    /// `bay.reviewerKey`, an approval's `bay.approverKey`; a check record's `bay.producerKey`,
    /// when set.
    fn signer(&self) -> Option<(&KeySetting, &'static str)> {
        if self.is_approval() {
            self.input
                .approver_key
                .as_ref()
                .map(|k| (k, "bay.approverKey"))
        } else if self.is_review() {
            self.input
                .reviewer_key
                .as_ref()
                .map(|k| (k, "bay.reviewerKey"))
        } else {
            self.input
                .producer_key
                .as_ref()
                .map(|k| (k, "bay.producerKey"))
        }
    }

    /// Who writes the records: the reviewer for a review, the approver for an approval, else
    /// the producer.
    fn writer(&self) -> &str {
        if self.is_approval() {
            return self.input.approver.as_deref().unwrap_or_default();
        }
        match (&self.input.reviewer, self.is_review()) {
            (Some(reviewer), true) => reviewer,
            _ => &self.input.producer,
        }
    }

    /// What makes the call unwritable, judged before anything is read.
    fn refusal(&self) -> Option<String> {
        let input = &self.input;
        if self.is_approval() {
            if let Some(why) = approval_keys(input) {
                return Some(why);
            }
        } else if self.is_review() {
            if let Some(why) = review_keys(input) {
                return Some(why);
            }
        } else if !producer_name_ok(&input.producer) {
            return Some(format!(
                "the producer name {:?} cannot name a notes ref; set bay.producerName to letters, \
                 digits, `-` and `_`",
                input.producer
            ));
        } else if let Some(KeySetting {
            path,
            public: Err(why),
        }) = &input.producer_key
        {
            return Some(format!("bay.producerKey ({path}): {why}"));
        }
        if input.commits.is_empty() {
            return Some("name at least one merged commit with --commit".into());
        }
        self.records()
            .iter()
            .map(Record::to_json)
            .find(|json| json.len() > MAX_RECORD_BYTES)
            .map(|json| {
                format!(
                    "a record of {} bytes is over the limit of {MAX_RECORD_BYTES}; bay never cuts \
                     one, so shorten --why or --body",
                    json.len()
                )
            })
    }

    /// One record per commit.
    fn records(&self) -> Vec<Record> {
        let input = &self.input;
        let flags = &self.flags;
        let review = Review {
            reviewer: self.writer().to_owned(),
            verdict: flags.verdict,
            why: input.why.clone(),
            version: input.version.clone(),
            inputs: flags.inputs.clone(),
            body: flags.body.clone(),
        };
        let answer = Answer {
            producer: input.producer.clone(),
            check: input.check.clone(),
            environment: input.environment.clone(),
            verdict: flags.verdict,
            why: input.why.clone(),
            version: input.version.clone(),
            inputs: flags.inputs.clone(),
        };
        input
            .commits
            .iter()
            .map(|merged| {
                let (commit, tree) = (&merged.commit, &merged.tree);
                let base_tree = merged.base_tree.as_ref();
                if self.is_approval() {
                    let answer = crate::approval::Answer {
                        approver: self.writer().to_owned(),
                        check: input.check.clone(),
                        environment: input.environment.clone(),
                        verdict: flags.verdict,
                        why: input.why.clone(),
                    };
                    let about = crate::approval::About {
                        change: String::new(),
                        candidate: String::new(),
                        commit: commit.clone(),
                        tree: tree.clone(),
                        base_tree: base_tree.cloned(),
                    };
                    let line = crate::approval::record(&answer, &about, self.now);
                    let id = crate::approval::record_id_of(&line).unwrap_or_default();
                    Record::Approval(id, line)
                } else if self.is_review() {
                    Record::Review(ReviewRecord::of(&review, commit, tree, base_tree, self.now))
                } else {
                    // The record says what it is: `signed` when an enrolled key signs it.
                    let mut record = PostRecord::of(&answer, commit, tree, base_tree, self.now);
                    record.trust = self.trust.as_str().into();
                    Record::Check(Box::new(record))
                }
            })
            .collect()
    }

    /// The object a record is noted on: a review on the merge's tree, where a record naming
    /// the same trees under another commit is found too; a check record on the commit.
    fn object(&self, merged: &Merged) -> Oid {
        if self.is_review() {
            merged.tree.clone()
        } else {
            merged.commit.clone()
        }
    }

    fn notes_ref(&self) -> String {
        refs::evidence(self.writer())
    }

    fn fetch(&mut self) {
        // A trailing `*`: a producer's first record finds no notes ref, and a remote may hold
        // no registry; neither is a fault.
        let mut spec = FetchSpec::new([
            refs::main(&self.input.main),
            format!("{}*", self.notes_ref()),
        ]);
        if self.signer().is_some() {
            spec.patterns.push(crate::trust::registry::fetch_pattern());
        }
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
        if self.is_approval() && !remote.contains_key(REGISTRY) {
            return self.fail(
                "the remote holds no key registry, so no approval can count; on the machine \
                 with the registry key run `bay enrol approver <name> <key.pub>`"
                    .into(),
            );
        }
        match (
            remote.get(REGISTRY),
            remote.get(&refs::main(&self.input.main)),
        ) {
            // A signed record under a registry: its key must be enrolled before anything is
            // written.
            (Some(registry), Some(main)) if self.signer().is_some() => {
                let (reader, read) = KeysRead::start(main.clone(), registry.clone());
                self.out.send(read, Purpose::Keys(reader));
            }
            _ => self.read_notes(),
        }
    }

    /// One step of reading the keys; a registry that breaks a rule refuses
    /// `REGISTRY_UNREADABLE`, since no review could be judged against it.
    fn on_keys(&mut self, mut reader: KeysRead, completion: Completion) -> Option<Completion> {
        match reader.on(completion) {
            Err(completion) => return Some(*completion),
            Ok(KeysStep::Ask(action)) => {
                self.out.send(*action, Purpose::Keys(reader));
            }
            Ok(KeysStep::Done(signing, version)) => self.on_registry(signing, &version),
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

    /// The signing key judged against the registry file its kind names (a review's the
    /// `reviewer` file, a check record's the `producer` file); the records are `signed` when
    /// it is enrolled under the writer's name and the registry signs everything. Under
    /// `signing = "approvals"` they run unsigned, as without a registry, and need no enrolment.
    fn on_registry(&mut self, signing: Signing, version: &Version) {
        // An approval needs its enrolled key under either mode.
        if signing == Signing::Approvals && !self.is_approval() {
            self.trust = Trust::Approvals;
            return self.read_notes();
        }
        let Some((key, setting)) = self.signer() else {
            return self.read_notes();
        };
        let class = signer_class(&self.input.kind);
        let writer = self.writer().to_owned();
        let enrolled = version
            .classes
            .get(&class)
            .into_iter()
            .flatten()
            .any(|e| e.name == writer && Ok(&e.key) == key.public.as_ref());
        if !enrolled {
            let why = format!(
                "{setting} is not enrolled in the registry's {class} file as {writer}, so no \
                 record it signs would count; on the machine with the registry key run `bay \
                 enrol {class} {writer} {}.pub`",
                key.path,
                class = class.as_str(),
            );
            return self.fail(why);
        }
        self.trust = Trust::Signed;
        self.read_notes();
    }

    /// Reads what the writer's notes hold on the objects the records go on.
    fn read_notes(&mut self) {
        let Some(tip) = self.tip.clone() else {
            return self.write(Vec::new());
        };
        let objects = self
            .input
            .commits
            .iter()
            .map(|merged| self.object(merged))
            .collect();
        let read = Action::ReadNotes {
            notes: vec![tip],
            objects,
        };
        self.out.send(read, Purpose::Read);
    }

    /// Adds each record its id does not hold yet; the same content again is unchanged, and
    /// other content under a held id refuses the whole call.
    fn write(&mut self, existing: Vec<String>) {
        let mut new = Vec::new();
        let mut unchanged = Vec::new();
        for (record, merged) in self.records().into_iter().zip(&self.input.commits) {
            match record.held_in(&existing) {
                Some(true) => unchanged.push(record.id().to_owned()),
                Some(false) => {
                    return self.fail(format!(
                        "{} already holds a different record; give a new --version to write \
                         another beside it",
                        record.id()
                    ));
                }
                None => new.push((record, self.object(merged))),
            }
        }
        if new.is_empty() {
            return self.done(Vec::new(), unchanged);
        }
        let expect = match &self.tip {
            Some(tip) => Expect::Is(tip.clone()),
            None => Expect::Absent,
        };
        // Signed whole by the driver, as it is written.
        let key = self.signer().map(|(key, _)| key.path.clone());
        let notes = new
            .iter()
            .map(|(record, object)| NoteAdd {
                producer: self.writer().to_owned(),
                expect: expect.clone(),
                object: object.clone(),
                record: record.to_json(),
                key: key.clone(),
            })
            .collect();
        let plan = PushPlan {
            notes,
            atomic: true,
            ..PushPlan::default()
        };
        self.out.send(Action::Push(plan), Purpose::Push);
        self.pending = new.into_iter().map(|(r, _)| r.id().to_owned()).collect();
        self.unchanged = unchanged;
    }

    fn done(&mut self, recorded: Vec<String>, unchanged: Vec<String>) {
        let detail = Recorded {
            producer: self.writer(),
            kind: &self.input.kind,
            recorded,
            unchanged: unchanged.len(),
            trust: self.trust,
        };
        let result = BayResult::ok(None, detail.to_map());
        self.finish(result);
    }

    fn on_pushed(&mut self, outcome: PushOutcome) {
        match AfterNotesPush::of(outcome, &mut self.races, "this producer's notes") {
            AfterNotesPush::Landed => {
                let recorded = std::mem::take(&mut self.pending);
                let unchanged = std::mem::take(&mut self.unchanged);
                self.done(recorded, unchanged);
            }
            AfterNotesPush::Again => self.fetch(),
            AfterNotesPush::Failed(why) => self.fail(why),
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Keys(reader), completion) => return self.on_keys(reader, completion),
            (Purpose::Read, Completion::NotesRead(Ok(lines))) => self.write(lines),
            (Purpose::Push, Completion::Pushed(report)) => self.on_pushed(report.outcome),
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(RecordEvidence, "evidence record");

/// What the flags say every record of the call holds, or why they make no record. The command
/// line asks it before it resolves any commit, so a bad flag fails first.
pub fn flags(input: &RecordInput) -> Result<Flags, String> {
    match input.kind.as_str() {
        "check" => {
            if input.check.is_empty() || input.environment.is_empty() {
                return Err(
                    "a check record names its post check with --check and --environment".into(),
                );
            }
            if input.body.is_some() {
                return Err("--body goes with --kind review; a check record carries none".into());
            }
        }
        REVIEW => {
            if !input.check.is_empty() || !input.environment.is_empty() {
                return Err(
                    "a review answers no check, so it takes no --check or --environment; \
                            leave them out"
                        .into(),
                );
            }
        }
        APPROVAL => {
            if input.check.is_empty() || input.environment.is_empty() {
                return Err("an approval names its approval check with --check and \
                            --environment, and the candidate with --commit"
                    .into());
            }
            if input.body.is_some() || !input.inputs.is_empty() || input.version.is_some() {
                return Err(
                    "an approval carries no --body, --input or --version; give --why".into(),
                );
            }
            if !matches!(input.verdict.as_str(), "pass" | "product_failure") {
                return Err(format!(
                    "--verdict {} is no answer to an approval check; give pass for a yes or \
                     product_failure for a no",
                    input.verdict
                ));
            }
        }
        "waiver" => {
            return Err(
                "--kind waiver waives a failed check, which this version of bay does \
                        not support yet; only `--kind check`, `review` and `approval` are \
                        recorded"
                    .into(),
            );
        }
        other => {
            return Err(format!(
                "--kind {other} is not a kind bay records; give check, review or approval"
            ));
        }
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
    let body = match &input.body {
        Some(text) => parse_body(text)?,
        None => serde_json::Map::new(),
    };
    Ok(Flags {
        verdict,
        inputs,
        body,
    })
}

/// Why a review cannot be written with this machine's reviewer settings, if it cannot: both
/// `bay.reviewerName` (a short lower-case word) and a readable `bay.reviewerKey` are needed,
/// registry or not.
fn review_keys(input: &RecordInput) -> Option<String> {
    let Some(name) = &input.reviewer else {
        return Some(
            "a review needs bay.reviewerName and bay.reviewerKey in Git config; set \
             bay.reviewerName to the reviewer's name (`git config bay.reviewerName review-bot`)"
                .into(),
        );
    };
    if !is_name(name) {
        return Some(format!(
            "bay.reviewerName {name:?} is not a short lower-case word (a-z, 0-9 and `-`)"
        ));
    }
    match &input.reviewer_key {
        None => Some(
            "a review is signed by bay.reviewerKey, which is not set in Git config; set it to \
             the reviewer's private key file"
                .into(),
        ),
        Some(KeySetting {
            public: Err(why),
            path,
        }) => Some(format!("bay.reviewerKey ({path}): {why}")),
        Some(_) => None,
    }
}

/// Why an approval cannot be written with this machine's approver settings, if it cannot.
fn approval_keys(input: &RecordInput) -> Option<String> {
    let Some(name) = &input.approver else {
        return Some(
            "an approval needs bay.approverName and bay.approverKey in Git config; set \
             bay.approverName to the approver's name (`git config bay.approverName alice`)"
                .into(),
        );
    };
    if !is_name(name) {
        return Some(format!(
            "bay.approverName {name:?} is not a short lower-case word (a-z, 0-9 and `-`)"
        ));
    }
    match &input.approver_key {
        None => Some(
            "an approval is signed by bay.approverKey, which is not set in Git config; set it \
             to the approver's private key file"
                .into(),
        ),
        Some(KeySetting {
            public: Err(why),
            path,
        }) => Some(format!("bay.approverKey ({path}): {why}")),
        Some(_) => None,
    }
}

/// A producer's name goes into a ref name: letters, digits, `-` and `_` only.
pub fn producer_name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// What `bay evidence record` answers once its records landed: who wrote them, of what
/// kind, those it wrote and how many were there already, and how far they are trusted.
#[derive(Serialize)]
struct Recorded<'a> {
    producer: &'a str,
    kind: &'a str,
    recorded: Vec<String>,
    unchanged: usize,
    trust: Trust,
}

impl Detail for Recorded<'_> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{Event, Machine};
    use crate::trust::PublicKey;

    const REVIEWER_PUB: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBlwkCNtEOIuI9SuPc4xuBmCKQDwe8+YfneZ/nmer1L9";

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an oid")
    }

    fn input(kind: &str, verdict: &str, inputs: &[&str]) -> RecordInput {
        RecordInput {
            main: "main".into(),
            producer: "ci".into(),
            producer_key: None,
            reviewer: None,
            reviewer_key: None,
            approver: None,
            approver_key: None,
            kind: kind.into(),
            verdict: verdict.into(),
            check: "smoke".into(),
            environment: "linux".into(),
            why: String::new(),
            version: None,
            inputs: inputs.iter().map(|s| s.to_string()).collect(),
            body: None,
            commits: Vec::new(),
        }
    }

    fn review_input() -> RecordInput {
        RecordInput {
            check: String::new(),
            environment: String::new(),
            reviewer: Some("review-bot".into()),
            reviewer_key: Some(KeySetting {
                path: "/keys/reviewer".into(),
                public: PublicKey::from_pub_file(REVIEWER_PUB),
            }),
            body: Some(r#"{"findings": ["null at line 42"]}"#.into()),
            commits: vec![Merged {
                commit: oid('a'),
                tree: oid('b'),
                base_tree: Some(oid('c')),
            }],
            ..input("review", "product_failure", &[])
        }
    }

    #[test]
    fn the_flags_make_a_record_or_say_which_one_does_not() {
        let read = flags(&input("check", "product_failure", &["os=linux", "v="])).expect("good");
        assert_eq!(read.verdict, Verdict::ProductFailure);
        assert_eq!(
            read.inputs,
            vec![("os".into(), "linux".into()), ("v".into(), String::new())]
        );
        let review = flags(&review_input()).expect("a good review");
        assert_eq!(review.body["findings"][0], "null at line 42");
        let with_check = RecordInput {
            check: "smoke".into(),
            ..review_input()
        };
        let bad_body = RecordInput {
            body: Some(r#"{"commit": "x"}"#.into()),
            ..review_input()
        };
        for (bad, said) in [
            (input("approval", "unknown", &[]), "--verdict unknown"),
            (input("waiver", "unknown", &[]), "--kind waiver"),
            (input("reviews", "pass", &[]), "--kind reviews"),
            (with_check, "--check"),
            (bad_body, "\"commit\""),
            (input("check", "Pass", &[]), "--verdict Pass"),
            (input("check", "pass", &["=x"]), "--input =x"),
            (input("check", "pass", &["nokey"]), "--input nokey"),
        ] {
            let why = flags(&bad).expect_err("refused");
            assert!(why.contains(said), "{why}");
        }
    }

    #[test]
    fn a_review_needs_the_reviewer_name_and_a_readable_key_even_without_a_registry() {
        for (bad, said) in [
            (
                RecordInput {
                    reviewer: None,
                    ..review_input()
                },
                "bay.reviewerName",
            ),
            (
                RecordInput {
                    reviewer: Some("Review Bot".into()),
                    ..review_input()
                },
                "short lower-case word",
            ),
            (
                RecordInput {
                    reviewer_key: None,
                    ..review_input()
                },
                "bay.reviewerKey",
            ),
            (
                RecordInput {
                    reviewer_key: Some(KeySetting {
                        path: "/keys/gone".into(),
                        public: Err("cannot read the key".into()),
                    }),
                    ..review_input()
                },
                "/keys/gone",
            ),
        ] {
            let mut machine = RecordEvidence::new(bad, Timestamp(1));
            assert!(machine.poll_action().is_none(), "nothing is read");
            let outcome = machine.outcome().expect("refused at once");
            let why = outcome.detail["why"].as_str().unwrap_or_default();
            assert!(why.contains(said), "{why}");
        }
    }

    #[test]
    fn a_review_under_a_registry_that_breaks_a_rule_refuses_registry_unreadable() {
        let mut machine = RecordEvidence::new(review_input(), Timestamp(7));
        let answer = |machine: &mut RecordEvidence, completion: Completion| {
            let (id, _) = machine.poll_action().expect("an action");
            machine
                .handle(Timestamp(7), Event::Done(id, completion))
                .expect("no misuse");
        };
        let remote: Refs = [
            (refs::main("main"), oid('1')),
            (REGISTRY.to_owned(), oid('2')),
        ]
        .into_iter()
        .collect();
        answer(&mut machine, Completion::Fetched(Ok(remote)));
        answer(&mut machine, Completion::FileRead(Ok(None)));
        answer(&mut machine, Completion::RegistryRead(Ok(Vec::new())));
        let outcome = machine.outcome().expect("refused");
        assert_eq!(outcome.reason, Some(ReasonCode::RegistryUnreadable));
        assert_eq!(
            serde_json::Value::from(outcome.detail.clone()),
            serde_json::json!({"why": "the registry holds no commit"}),
            "the broken rule itself, where the sentence reads its file"
        );
        assert!(machine.poll_action().is_none(), "nothing is pushed");
    }

    #[test]
    fn a_review_is_signed_by_the_reviewer_key_and_noted_on_the_merge_tree() {
        let mut machine = RecordEvidence::new(review_input(), Timestamp(7));
        let (id, fetch) = machine.poll_action().expect("a fetch");
        let Action::Fetch(spec) = fetch else {
            panic!("{fetch:?}")
        };
        assert!(
            spec.patterns
                .contains(&"refs/notes/bay/evidence/review-bot*".to_owned())
        );
        assert!(
            spec.patterns
                .contains(&crate::trust::registry::fetch_pattern())
        );
        // No registry and no notes yet: the record goes up at once.
        let remote: Refs = [(refs::main("main"), oid('1'))].into_iter().collect();
        machine
            .handle(
                Timestamp(7),
                Event::Done(id, Completion::Fetched(Ok(remote))),
            )
            .expect("no misuse");
        let (_, push) = machine.poll_action().expect("a push");
        let Action::Push(plan) = push else {
            panic!("{push:?}")
        };
        let [note] = plan.notes.as_slice() else {
            panic!("{plan:?}")
        };
        assert_eq!(note.producer, "review-bot");
        assert_eq!(note.object, oid('b'), "on the merge's tree");
        assert_eq!(note.key.as_deref(), Some("/keys/reviewer"));
        let record = ReviewRecord::from_json(&note.record).expect("a review");
        assert_eq!(record.commit(), Some(oid('a')));
        assert_eq!(record.verdict(), Verdict::ProductFailure);
        assert!(note.record.contains("null at line 42"), "{}", note.record);
    }
}
