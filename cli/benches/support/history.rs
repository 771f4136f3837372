//! A remote with a long history of ended changes, built in seconds with one `git fast-import`.
//!
//! Ending ten thousand changes through bay itself would take hours; plumbing writes the same
//! records bay leaves, made with bay's own types (`Step`, `BayEvent`, `EvidenceRecord`, the
//! ref names of `refs`), so every reader of bay reads them as its own:
//!
//! - main's first-parent history holds one merge per merged change: the candidate commit, on
//!   the main before it, with the trailers the runner writes (`Change-Id:`, `Intent:`,
//!   `Actor:`, `Bay-Op:`, `Bay-Candidate:`);
//! - each change's chain: a merged or blocked one `start`, `request` (its draft as second
//!   parent), `claim`, `candidate` (its candidate as second parent), `check` and `outcome`
//!   (and a blocked one then `abandon`); an abandoned one `start`, `checkpoint` (its draft as
//!   second parent) and `abandon`;
//! - the runner's log ([`super::RUNNER`]'s): one event per operation it ended, in order;
//! - its evidence notes: one record per check run, on the candidate's tree, laid out as bay's
//!   writer lays them out (the first 256 flat, the rest fanned out one level; one notes commit,
//!   where bay made one per record);
//! - `refs/bay/queue/last` on the last request (ended operations hold no queue place).
//!
//! Where the ended changes are named is the [`Layout`]: one function writes the records, and
//! each layout only names them: every change by refs of its own, as bay kept them before
//! compaction, or as a runner's compactions leave them (ended changes in the index's shards).
//!
//! A tenth of the changes are blocked (`CHECK_FAILED`) and then abandoned by their agent, a
//! tenth abandoned before they asked to merge; the rest merge.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;

use bay_core::check::{
    CommitTree, EvidenceKey, EvidenceRecord, EvidenceSchema, UnitReason, Verdict,
};
use bay_core::compact;
use bay_core::event::{BayEvent, Ended};
use bay_core::git::{Oid, refs};
use bay_core::id::{ChangeId, OpId, intent_digest};
use bay_core::machine::{ChainRead, RawStep};
use bay_core::reason::ReasonCode;
use bay_core::record::{Step, StepBody};
use bay_core::result::OpState;
use bay_core::time::Timestamp;

use super::RUNNER;

/// How the remote names the records of ended changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// As bay keeps them today: every change keeps its chain (`refs/bay/changes/<id>`), its
    /// intent's generation (`refs/bay/intents/<digest>/<n>`) and, once merged, its marker
    /// (`refs/bay/landed/<id>`), for good: how bay kept them before compaction.
    PerChange,
    /// As runners' compactions leave them (`bay_core::compact`): the merged changes, all but
    /// the last few that wait for the next compaction, and the abandoned ones (all abandoned
    /// longer ago than the retention window) are files of the index's shards, with their
    /// intents' latest generations: one commit per shard, as if one compaction had written
    /// each (runners' compactions leave a line of versions, each a child of the one before).
    Compacted,
}

/// How many of the newest merged changes a compacted history leaves waiting, as a runner
/// leaves fewer than [`compact::COMPACT_AT`] between its compactions.
const WAITING: usize = 16;

impl Layout {
    /// Names the written records of every ended change; returns the merged changes the index
    /// holds.
    fn name(self, stream: &mut Stream, written: &[Written]) -> Vec<ChangeId> {
        let by_refs = |stream: &mut Stream, change: &Written| {
            stream.name(refs::change(&change.change), change.tip);
            stream.name(refs::intent(&change.digest, 1), change.start);
            if let Some(merge) = change.merge {
                stream.name(refs::landed(&change.change), merge);
            }
        };
        match self {
            Layout::PerChange => {
                written.iter().for_each(|change| by_refs(stream, change));
                Vec::new()
            }
            Layout::Compacted => {
                let merged = written.iter().filter(|c| c.merge.is_some()).count();
                let mut left = merged.saturating_sub(WAITING);
                let mut compacted = Vec::with_capacity(written.len());
                for change in written {
                    if change.merge.is_some() && left > 0 {
                        left -= 1;
                        compacted.push(change);
                    } else if change.abandoned {
                        compacted.push(change);
                    } else {
                        by_refs(stream, change);
                    }
                }
                write_index(stream, &compacted);
                compacted
                    .iter()
                    .filter(|c| c.merge.is_some())
                    .map(|c| c.change.clone())
                    .collect()
            }
        }
    }
}

/// Writes the index shards holding `compacted` as one compaction would leave them, one commit
/// each: each change's chain as `compact::encode`
/// keeps it, in its id's shard, and its intent's generation, in its digest's.
fn write_index(stream: &mut Stream, compacted: &[&Written]) {
    let asked: Vec<Vec<usize>> = compacted
        .iter()
        .map(|change| {
            change
                .steps
                .iter()
                .map(|(mark, _)| stream.ask_id(*mark))
                .collect()
        })
        .collect();
    let answers = stream.answers();
    let mut shards: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (change, asked) in compacted.iter().zip(&asked) {
        let steps: Vec<RawStep> = change
            .steps
            .iter()
            .zip(asked)
            .rev()
            .map(|((_, message), answer)| RawStep {
                oid: answers[*answer].clone(),
                message: message.clone(),
            })
            .collect();
        let read = ChainRead {
            change: change.change.clone(),
            tip: steps[0].oid.clone(),
            steps,
            reached_known: false,
            unreadable: None,
        };
        shards
            .entry(refs::index_of_change(&change.change))
            .or_default()
            .push((compact::change_path(&change.change), compact::encode(&read)));
        let generation = compact::Generation {
            generation: 1,
            change: change.change.clone(),
        };
        shards
            .entry(refs::index_of_intent(&change.digest))
            .or_default()
            .push((compact::intent_path(&change.digest), generation.encode()));
    }
    let when = seconds(compacted.len(), 9);
    for (shard, files) in &shards {
        let message = format!("bay: compacted {} records\n", files.len());
        let mark = stream.mark();
        stream.commit(
            shard,
            mark,
            when,
            &message,
            &Parent::None,
            None,
            &Files::Many(files),
        );
    }
}

/// What a built history holds, for a bench to act on.
#[derive(Debug, Default)]
pub struct History {
    /// The merged changes, in the order they merged.
    pub merged: Vec<ChangeId>,
    pub blocked: Vec<ChangeId>,
    pub abandoned: Vec<ChangeId>,
    /// The merged changes the layout moved into the index.
    pub compacted: Vec<ChangeId>,
}

/// Writes `count` ended changes into `remote` (a bare repository whose main exists), laid out
/// as `layout` says, with one `git fast-import` (and one `git mktree` for the notes tree).
pub fn build(remote: &Path, count: usize, layout: Layout) -> History {
    let first = Main::first(remote);
    let mut stream = Stream::open(remote);
    let payloads = write_payloads(&mut stream, &first, count);
    let answers = stream.answers();
    let ended: Vec<Change> = payloads
        .into_iter()
        .map(|payload| payload.resolve(&answers))
        .collect();
    let mut history = History::default();
    let mut written = Vec::with_capacity(ended.len());
    let mut notes = Vec::new();
    let mut last_request = None;
    for change in &ended {
        let (chain, request) = write_chain(&mut stream, change);
        last_request = request.or(last_request);
        written.push(chain);
        write_event(&mut stream, change);
        if let Some(note) = write_note(&mut stream, change) {
            notes.push(note);
        }
        match change.end {
            End::Merged => history.merged.push(change.change.clone()),
            End::Blocked => history.blocked.push(change.change.clone()),
            End::Abandoned => history.abandoned.push(change.change.clone()),
        }
    }
    history.compacted = layout.name(&mut stream, &written);
    if let Some(request) = last_request {
        stream.name(refs::QUEUE_LAST.to_string(), request);
    }
    stream.drop_scratch();
    let answers = stream.answers();
    write_notes_tree(&mut stream, remote, &notes, &answers, seconds(count, 0));
    stream.finish(remote);
    history
}

/// How change `n` ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Merged,
    Blocked,
    Abandoned,
}

impl End {
    fn of(n: usize) -> End {
        match n % 10 {
            3 => End::Abandoned,
            7 => End::Blocked,
            _ => End::Merged,
        }
    }
}

/// Change `n`'s id: spread over the id space as bay's entropy spreads them (a multiplication
/// by an odd number is one-to-one on 40 bits).
fn change_id(n: usize) -> ChangeId {
    let bits = (n as u64).wrapping_mul(0x9e37_79b9_7f4b) & ((1 << 40) - 1);
    let bytes = bits.to_be_bytes();
    ChangeId::from_entropy([bytes[3], bytes[4], bytes[5], bytes[6], bytes[7]])
}

/// Change `n`'s moments: a minute apart, its steps a second apart.
fn seconds(n: usize, step: usize) -> u64 {
    1_700_000_000 + n as u64 * 60 + step as u64
}

/// The file a change edits: merged changes take turns over a few files, so that main's trees
/// stay small and every merge changes one.
fn work_file(n: usize, end: End) -> (String, String) {
    match end {
        End::Merged => (format!("work/{}.txt", n % 64), format!("merge {n}\n")),
        End::Blocked => ("work/blocked.txt".into(), format!("blocked {n}\n")),
        End::Abandoned => ("work/abandoned.txt".into(), format!("abandoned {n}\n")),
    }
}

/// An object id known now, or the index of the fast-import answer that will tell it.
#[derive(Clone, Debug)]
enum Known {
    Oid(Oid),
    Answer(usize),
}

impl Known {
    fn resolve(&self, answers: &[Oid]) -> Oid {
        match self {
            Known::Oid(oid) => oid.clone(),
            Known::Answer(at) => answers[*at].clone(),
        }
    }
}

/// Main as a change found it: its commit (as fast-import names it and as its id) and tree.
#[derive(Clone, Debug)]
struct Main {
    parent: Parent,
    commit: Known,
    tree: Known,
}

impl Main {
    fn first(remote: &Path) -> Main {
        let read = |what: &str| {
            Oid::parse(&super::git(remote, &["rev-parse", what])).expect("an object id")
        };
        let commit = read("refs/heads/main");
        Main {
            parent: Parent::Commit(commit.clone()),
            tree: Known::Oid(read("refs/heads/main^{tree}")),
            commit: Known::Oid(commit),
        }
    }
}

/// The commits a change's records name, written before its chain: its draft and candidate
/// (for a merge, the main commit).
struct Payload {
    n: usize,
    end: End,
    base: Main,
    draft: (usize, Known),
    /// Mark, commit and tree.
    candidate: Option<(usize, Known, Known)>,
}

/// A change with every id its records name.
struct Change {
    n: usize,
    end: End,
    change: ChangeId,
    intent: String,
    actor: String,
    base: Oid,
    base_tree: Oid,
    draft: (usize, Oid),
    candidate: Option<(usize, CommitTree)>,
}

impl Payload {
    fn resolve(self, answers: &[Oid]) -> Change {
        Change {
            n: self.n,
            end: self.end,
            change: change_id(self.n),
            intent: format!("old change {}", self.n),
            actor: format!("agent{}", self.n % 8),
            base: self.base.commit.resolve(answers),
            base_tree: self.base.tree.resolve(answers),
            draft: (self.draft.0, self.draft.1.resolve(answers)),
            candidate: self.candidate.map(|(mark, commit, tree)| {
                (
                    mark,
                    CommitTree {
                        commit: commit.resolve(answers),
                        tree: tree.resolve(answers),
                    },
                )
            }),
        }
    }
}

const SCRATCH: &str = "refs/bench/scratch";

/// Main's history, and every change's draft and candidate, asking fast-import for the ids the
/// records name.
fn write_payloads(stream: &mut Stream, first: &Main, count: usize) -> Vec<Payload> {
    let main_ref = refs::main("main");
    let mut main = first.clone();
    let mut payloads = Vec::with_capacity(count);
    for n in 0..count {
        let end = End::of(n);
        let (path, content) = work_file(n, end);
        let file = Files::One(&path, &content);
        let at = seconds(n, 0);
        let draft_mark = stream.mark();
        stream.commit(SCRATCH, draft_mark, at, "draft", &main.parent, None, &file);
        let draft = (draft_mark, Known::Answer(stream.ask_id(draft_mark)));
        let candidate = (end != End::Abandoned).then(|| {
            let mark = stream.mark();
            let message = candidate_message(n);
            if end == End::Merged {
                let parent = match &main.parent {
                    Parent::Commit(_) => main.parent.clone(),
                    _ => Parent::Branch,
                };
                stream.commit(&main_ref, mark, at + 3, &message, &parent, None, &file);
            } else {
                stream.commit(SCRATCH, mark, at + 3, &message, &main.parent, None, &file);
            }
            let commit = Known::Answer(stream.ask_id(mark));
            (mark, commit, Known::Answer(stream.ask_tree(mark)))
        });
        payloads.push(Payload {
            n,
            end,
            base: main.clone(),
            draft,
            candidate: candidate.clone(),
        });
        if let (End::Merged, Some((mark, commit, tree))) = (end, candidate) {
            main = Main {
                parent: Parent::Mark(mark),
                commit,
                tree,
            };
        }
    }
    payloads
}

/// The candidate's message as the runner writes it (`machine::runner::work`), with the
/// default trailer keys.
fn candidate_message(n: usize) -> String {
    let change = change_id(n);
    let op = change.op(1);
    format!(
        "old change {n}\n\nChange-Id: {change}\nIntent: old change {n}\nActor: agent{}\nBay-Op: {op}\nBay-Candidate: {}\n",
        n % 8,
        op.candidate(1),
    )
}

/// What the layout names of one change's written chain.
struct Written {
    change: ChangeId,
    digest: String,
    /// Its steps, oldest first: each one's mark and message.
    steps: Vec<(usize, String)>,
    /// The marks of its start step, its tip, and its merge on main.
    start: usize,
    tip: usize,
    merge: Option<usize>,
    abandoned: bool,
}

/// The change's chain, each step a commit of the empty tree on the one before; returns what
/// the layout names and the mark of its request step, if it has one.
fn write_chain(stream: &mut Stream, change: &Change) -> (Written, Option<usize>) {
    let steps = steps(change);
    let mut previous: Option<usize> = None;
    let mut request = None;
    let mut start = 0;
    let mut written_steps = Vec::with_capacity(steps.len());
    for (i, (step, carry)) in steps.iter().enumerate() {
        let mark = stream.mark();
        let parent = previous.map_or(Parent::None, Parent::Mark);
        let message = step.to_message();
        let at = seconds(change.n, i);
        stream.commit(SCRATCH, mark, at, &message, &parent, *carry, &Files::Empty);
        written_steps.push((mark, message));
        match step.body {
            StepBody::Start { .. } => start = mark,
            StepBody::Request { .. } => request = Some(mark),
            _ => {}
        }
        previous = Some(mark);
    }
    let written = Written {
        change: change.change.clone(),
        digest: intent_digest(&change.intent),
        steps: written_steps,
        start,
        tip: previous.expect("a chain has steps"),
        merge: match change.end {
            End::Merged => change.candidate.as_ref().map(|(mark, _)| *mark),
            _ => None,
        },
        abandoned: matches!(change.end, End::Abandoned | End::Blocked),
    };
    (written, request)
}

/// The change's steps as bay writes them, each with the commit it carries as second parent.
fn steps(change: &Change) -> Vec<(Step, Option<usize>)> {
    let op = change.change.op(1);
    let step = |j: usize, by: &str, body: StepBody| Step {
        change: change.change.clone(),
        at: Timestamp(seconds(change.n, j) * 1000),
        by: by.to_string(),
        nonce: (change.n * 8 + j) as u64,
        body,
    };
    let actor = change.actor.as_str();
    let start = step(
        0,
        actor,
        StepBody::Start {
            intent: change.intent.clone(),
            actor: actor.to_string(),
            paths: vec!["work".into()],
            base: change.base.clone(),
            generation: 1,
            supersedes: None,
            fixes: None,
            reverts: None,
            after: Vec::new(),
        },
    );
    let (draft_mark, draft) = change.draft.clone();
    let Some((candidate_mark, candidate)) = &change.candidate else {
        return vec![
            (start, None),
            (
                step(
                    1,
                    actor,
                    StepBody::Checkpoint {
                        draft,
                        base: change.base.clone(),
                        marked: None,
                    },
                ),
                Some(draft_mark),
            ),
            (step(2, actor, StepBody::Abandon), None),
        ];
    };
    let merged = change.end == End::Merged;
    let verdict = if merged {
        Verdict::Pass
    } else {
        Verdict::ProductFailure
    };
    let (state, reason, detail) = if merged {
        (
            OpState::Merged,
            None,
            serde_json::json!({
                "candidate": op.candidate(1),
                "commit": candidate.commit,
                "tree": candidate.tree,
                "base": change.base,
                "trust": bay_core::red::TRUST,
            }),
        )
    } else {
        (
            OpState::Blocked,
            Some(ReasonCode::CheckFailed),
            serde_json::json!({
                "checks": [{"id": "tests", "environment": "any", "verdict": "product_failure"}],
                "trust": bay_core::red::TRUST,
            }),
        )
    };
    let mut steps = vec![
        (start, None),
        (
            step(
                1,
                actor,
                StepBody::Request {
                    op: op.clone(),
                    draft,
                    base: change.base.clone(),
                    seq: 1 + change.n as u64,
                },
            ),
            Some(draft_mark),
        ),
        (step(2, RUNNER, StepBody::Claim { op: op.clone() }), None),
        (
            step(
                3,
                RUNNER,
                StepBody::Candidate {
                    op: op.clone(),
                    candidate: op.candidate(1),
                    base: change.base.clone(),
                    base_tree: change.base_tree.clone(),
                    commit: candidate.commit.clone(),
                    tree: candidate.tree.clone(),
                },
            ),
            Some(*candidate_mark),
        ),
        (
            step(
                4,
                RUNNER,
                StepBody::Check {
                    op: op.clone(),
                    candidate: op.candidate(1),
                    check: "tests".into(),
                    environment: "any".into(),
                    verdict,
                    why: verdict.as_str().into(),
                },
            ),
            None,
        ),
        (
            step(
                5,
                RUNNER,
                StepBody::Outcome {
                    op,
                    state,
                    reason,
                    detail,
                },
            ),
            None,
        ),
    ];
    // An agent whose change was blocked gave it up: it ended, as every change here did.
    if !merged {
        steps.push((step(6, actor, StepBody::Abandon), None));
    }
    steps
}

/// The runner's log event of the change's end, if a runner ended it.
fn write_event(stream: &mut Stream, change: &Change) {
    let Some((_, candidate)) = &change.candidate else {
        return;
    };
    let merged = change.end == End::Merged;
    let op: OpId = change.change.op(1);
    let event = BayEvent::ended(Ended {
        runner: RUNNER,
        change: &change.change,
        op: &op,
        actor: &change.actor,
        at: Timestamp(seconds(change.n, 5) * 1000),
        state: if merged {
            OpState::Merged
        } else {
            OpState::Blocked
        },
        code: (!merged).then_some(ReasonCode::CheckFailed),
        merge: merged.then_some((&candidate.commit, &change.base)),
    })
    .expect("an end has an event");
    let mark = stream.mark();
    let at = seconds(change.n, 5);
    stream.commit(
        &refs::log(RUNNER),
        mark,
        at,
        &event.to_message(),
        &Parent::Branch,
        None,
        &Files::Empty,
    );
}

/// The evidence record of the change's check run, as a blob; returns the tree it notes and
/// the answer that will name the blob.
fn write_note(stream: &mut Stream, change: &Change) -> Option<(Oid, usize)> {
    let (_, candidate) = change.candidate.as_ref()?;
    let merged = change.end == End::Merged;
    let op = change.change.op(1);
    let verdict = if merged {
        Verdict::Pass
    } else {
        Verdict::ProductFailure
    };
    let record = EvidenceRecord {
        schema: EvidenceSchema,
        producer: RUNNER.into(),
        check: "tests".into(),
        environment: "any".into(),
        candidate: candidate.clone(),
        base: CommitTree {
            commit: change.base.clone(),
            tree: change.base_tree.clone(),
        },
        policy_revision: "1".into(),
        verdict,
        why: verdict.as_str().into(),
        units: 1,
        selected: Some(1),
        completed: Some(1),
        failed: if merged {
            Vec::new()
        } else {
            vec![UnitReason {
                id: "tests".into(),
                verdict,
                reason: None,
            }]
        },
        millis: 1_200,
        exit_code: Some(if merged { 0 } else { 1 }),
        timed_out: false,
        op: op.to_string(),
        candidate_id: op.candidate(1).to_string(),
        at: Timestamp(seconds(change.n, 4) * 1000),
        key: EvidenceKey::Tree,
        sandbox_read: Vec::new(),
        definition: String::new(),
        footprint: None,
        carried: None,
    };
    let mark = stream.mark();
    stream.blob(mark, &format!("{}\n", record.to_json()));
    Some((candidate.tree.clone(), stream.ask_id(mark)))
}

/// The notes tree, flat as bay's writer keeps it (`drivers::remote::notes`): fast-import adds
/// entries to a tree one at a time, searching it whole each time, which costs half a minute
/// for a hundred thousand notes, so `git mktree` makes it and one notes commit takes it.
fn write_notes_tree(
    stream: &mut Stream,
    remote: &Path,
    notes: &[(Oid, usize)],
    answers: &[Oid],
    at: u64,
) {
    if notes.is_empty() {
        return;
    }
    // As bay's writer lays them out: the first FLAT_MAX notes flat, every later one a level
    // deeper, in the directory of its first two hex digits (one `mktree --batch` for those).
    let (flat, fanned) = notes.split_at(notes.len().min(FLAT_MAX));
    let mut dirs: BTreeMap<String, String> = BTreeMap::new();
    for (tree, answer) in fanned {
        let hex = tree.as_str();
        dirs.entry(hex[..2].to_owned())
            .or_default()
            .push_str(&format!(
                "100644 blob {}\t{}\n",
                answers[*answer],
                &hex[2..]
            ));
    }
    let batch: Vec<&str> = dirs.values().map(String::as_str).collect();
    let ids = match batch.is_empty() {
        true => String::new(),
        false => super::git_with_input(
            remote,
            &["mktree", "--missing", "--batch"],
            batch.join("\n").as_bytes(),
        ),
    };
    let mut listing = String::with_capacity(notes.len() * 100);
    for (tree, answer) in flat {
        listing.push_str(&format!("100644 blob {}\t{tree}\n", answers[*answer]));
    }
    for (dir, id) in dirs.keys().zip(ids.lines()) {
        listing.push_str(&format!("040000 tree {id}\t{dir}\n"));
    }
    let tree = super::git_with_input(remote, &["mktree", "--missing"], listing.as_bytes());
    let tree = Oid::parse(&tree).expect("a tree");
    let mark = stream.mark();
    stream.commit(
        &refs::evidence(RUNNER),
        mark,
        at,
        "Notes added by 'git notes append'\n",
        &Parent::Branch,
        None,
        &Files::Root(&tree),
    );
}

/// How many notes bay's writer keeps in a flat notes tree before it fans new ones out.
const FLAT_MAX: usize = 256;

/// A commit's first parent.
#[derive(Clone, Debug)]
enum Parent {
    /// The branch's tip (none for a new branch).
    Branch,
    /// No parent.
    None,
    Mark(usize),
    Commit(Oid),
}

/// A commit's tree, against its first parent's.
enum Files<'a> {
    Empty,
    /// The parent's tree with one file set.
    One(&'a str, &'a str),
    /// The parent's tree with these files set.
    Many(&'a [(String, String)]),
    /// This tree.
    Root(&'a Oid),
}

/// One `git fast-import` into the remote, asked for ids on the way (`get-mark`, `ls`), which
/// it answers on its stdout, read by a thread of its own so that neither side waits on a full
/// pipe.
struct Stream {
    child: Child,
    input: BufWriter<ChildStdin>,
    answers: mpsc::Receiver<String>,
    asked: usize,
    received: Vec<Oid>,
    marks: usize,
    /// The refs to write once the import is done, and the answers naming their values.
    named: Vec<(String, usize)>,
}

impl Stream {
    fn open(remote: &Path) -> Stream {
        let mut child = Command::new("git")
            .arg("--git-dir")
            .arg(remote)
            .args([
                "-c",
                "pack.compression=0",
                "fast-import",
                "--quiet",
                "--done",
                "--cat-blob-fd=1",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("git fast-import runs");
        let stdout = child.stdout.take().expect("stdout");
        let (send, answers) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let input = BufWriter::with_capacity(1 << 20, child.stdin.take().expect("stdin"));
        Stream {
            child,
            input,
            answers,
            asked: 0,
            received: Vec::new(),
            marks: 0,
            named: Vec::new(),
        }
    }

    fn mark(&mut self) -> usize {
        self.marks += 1;
        self.marks
    }

    fn put(&mut self, text: &str) {
        self.input
            .write_all(text.as_bytes())
            .expect("fast-import reads");
    }

    #[allow(clippy::too_many_arguments)]
    fn commit(
        &mut self,
        branch: &str,
        mark: usize,
        at: u64,
        message: &str,
        parent: &Parent,
        merge: Option<usize>,
        files: &Files<'_>,
    ) {
        let mut text = format!(
            "commit {branch}\nmark :{mark}\ncommitter bay <bay@localhost> {at} +0000\ndata {}\n{message}\n",
            message.len()
        );
        match parent {
            Parent::Branch => {}
            Parent::None => text.push_str("from 0000000000000000000000000000000000000000\n"),
            Parent::Mark(from) => text.push_str(&format!("from :{from}\n")),
            Parent::Commit(from) => text.push_str(&format!("from {from}\n")),
        }
        if let Some(merge) = merge {
            text.push_str(&format!("merge :{merge}\n"));
        }
        match files {
            Files::Empty => text.push_str("deleteall\n"),
            Files::One(path, content) => text.push_str(&format!(
                "M 100644 inline {path}\ndata {}\n{content}\n",
                content.len()
            )),
            Files::Root(tree) => text.push_str(&format!("M 040000 {tree} \"\"\n")),
            Files::Many(files) => {
                for (path, content) in *files {
                    text.push_str(&format!(
                        "M 100644 inline {path}\ndata {}\n{content}\n",
                        content.len()
                    ));
                }
            }
        }
        text.push('\n');
        self.put(&text);
    }

    fn blob(&mut self, mark: usize, content: &str) {
        self.put(&format!(
            "blob\nmark :{mark}\ndata {}\n{content}\n",
            content.len()
        ));
    }

    /// Names the commit `mark` names with the ref `name`, once fast-import is done.
    fn name(&mut self, name: String, mark: usize) {
        let answer = self.ask_id(mark);
        self.named.push((name, answer));
    }

    /// The scratch branch the commits no layout names were written on goes unwritten.
    fn drop_scratch(&mut self) {
        self.put(&format!("reset {SCRATCH}\n\n"));
    }

    /// Asks for the id of the object `mark` names; returns the index of the answer.
    fn ask_id(&mut self, mark: usize) -> usize {
        self.put(&format!("get-mark :{mark}\n"));
        self.asked += 1;
        self.asked - 1
    }

    /// Asks for the tree of the commit `mark` names; returns the index of the answer.
    fn ask_tree(&mut self, mark: usize) -> usize {
        self.put(&format!("ls :{mark} \"\"\n"));
        self.asked += 1;
        self.asked - 1
    }

    /// Every answer to what was asked so far, in order: each holds one object id.
    fn answers(&mut self) -> Vec<Oid> {
        self.input.flush().expect("fast-import reads");
        while self.received.len() < self.asked {
            let line = self.answers.recv().expect("fast-import answers");
            let oid = line
                .split_whitespace()
                .find_map(|word| Oid::parse(word).ok())
                .unwrap_or_else(|| panic!("fast-import answered {line:?}"));
            self.received.push(oid);
        }
        self.received.clone()
    }

    /// Ends the import, then writes the refs [`Stream::name`] named into the remote's
    /// `packed-refs`, as `git pack-refs` (which `git gc` runs on a remote now and then) leaves
    /// them: fast-import would write each as a file of its own, which at three hundred
    /// thousand refs costs half a minute here and gigabytes of disk blocks.
    fn finish(mut self, remote: &Path) {
        let answers = self.answers();
        self.put("done\n");
        drop(self.input);
        let status = self.child.wait().expect("fast-import ends");
        assert!(status.success(), "git fast-import failed");
        let path = remote.join("packed-refs");
        let mut packed: Vec<(String, String)> = std::fs::read_to_string(&path)
            .unwrap_or_default()
            .lines()
            .filter(|line| !line.starts_with('#') && !line.starts_with('^'))
            .filter_map(|line| line.split_once(' '))
            .map(|(oid, name)| (name.to_string(), oid.to_string()))
            .collect();
        packed.extend(
            self.named
                .into_iter()
                .map(|(name, answer)| (name, answers[answer].to_string())),
        );
        packed.sort();
        let mut text = String::from("# pack-refs with: peeled fully-peeled sorted \n");
        for (name, oid) in packed {
            text.push_str(&format!("{oid} {name}\n"));
        }
        let lock = remote.join("packed-refs.lock");
        std::fs::write(&lock, text).expect("write packed-refs");
        std::fs::rename(&lock, &path).expect("move packed-refs into place");
        write_reverse_indexes(remote);
        // And the commit-graph `git gc` writes on a long-lived remote.
        super::git(remote, &["commit-graph", "write", "--reachable"]);
    }
}

/// Writes the reverse index (`.rev`) of each pack fast-import left, as `index-pack` (every
/// fetch and clone through a transport) and `repack` write one. Without it, each
/// `pack-objects` that reads the pack (every push from a clone that shares it: `git clone`
/// of a local path links the remote's packs) builds the reverse index of all its objects in
/// memory first, 60 ms per push at 100,000 changes, a cost no gc'd remote or fetched clone
/// has.
fn write_reverse_indexes(remote: &Path) {
    let packs = std::fs::read_dir(remote.join("objects/pack")).expect("the remote's packs");
    for pack in packs {
        let pack = pack.expect("a pack").path();
        if pack.extension().is_some_and(|e| e == "pack") && !pack.with_extension("rev").exists() {
            super::git(
                remote,
                &["index-pack", "--rev-index", &pack.display().to_string()],
            );
        }
    }
}
