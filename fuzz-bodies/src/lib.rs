//! Fuzz bodies: one function per fuzz target, each taking the fuzzer's bytes and asserting
//! bay's promises with `assert!`, so that a broken promise is a crash the fuzzer reports.
//!
//! The same bodies run three ways: under cargo-fuzz (`fuzz/fuzz_targets/*.rs`, each a
//! one-liner), under `cargo test -p bay-fuzz-bodies` on the committed seeds, regressions and a
//! fixed budget of generated inputs (`tests/fuzz_bodies.rs`), and from anything else that wants
//! to throw bytes at core. They live outside core's source and see only core's public API;
//! they build core with its `arbitrary` feature, which derives `Arbitrary` for core's inputs.
//!
//! The promises checked:
//!
//! - parsers: bad input never panics, and what they accept they keep whole: the parsed value
//!   written back out parses to the same value, and agrees with a plain TOML reading;
//! - judge: never `pass` for a result about another commit or tree, with fewer units than
//!   `expected_minimum`, with a unit that did not pass, with fewer units completed than
//!   selected, or for a run that errored, timed out or could not start;
//! - evidence: a note line read as a record writes back the same, and the readers of other
//!   producers' notes (reuse, baselines, footprint carry) count it exactly where its own
//!   inputs, key and producer say;
//! - record: a step read from a message writes back to a message that reads the same, and
//!   folding a chain whole or step by step gives the same record (or the same refusal);
//! - machines: any sequence of events (completions of every kind, for ids the machine issued,
//!   never issued, or already heard back from; ticks; a clock that jumps either way) never
//!   panics; a completion for an id the machine never issued, or one already answered, is
//!   `Err(Misuse)`; every chain append is leased (`Expect::Is` on its parent, or `Absent` for
//!   a new chain) and no ref update or note goes out without a lease; an outcome once given
//!   stays;
//! - results: a `bay.result/1` built the way commands build it, from hostile text, never
//!   panics; its `say` repeats the document, stays on one line and says no listed word that
//!   `detail` does not hand it; a reason brings its advice from the table; the JSON reads back
//!   equal and meets the published schema;
//! - trust: SSHSIG signatures, public keys, allowed-signers files and registry versions never
//!   panic; what they accept reads back the same; a signature over other bytes never verifies;
//!   a refusal is one short line; a removed key enrolled again is refused by name
//!   (`trust.rs`);
//! - shell: judging any command never panics, gives the same verdict twice and reads within
//!   its work budget; a command after `git reset --hard;` never unsets that denial; and bay
//!   knowing less (main unread, targets and lanes set) never allows what knowing more denies.
//!
//! Worlds are tiny on purpose: four change ids, eight object ids, two actors, two intents,
//! two runners and three queue places, so that fuzzed ids collide with the ones a machine
//! asked about.

mod trust;

pub use trust::{key, registry, sshsig};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{Map, Value, json};

use bay_core::check::{
    CheckExit, CheckRequest, CommitTree, EvidenceExtras, EvidenceRecord, Judgement,
    MAX_REASON_BYTES, MAX_STDOUT_BYTES, RESULT_SCHEMA, Verdict, judge as judge_run,
};
use bay_core::config::{Config, RunnerSettings};
use bay_core::git::{Oid, refs};
use bay_core::id::{CandidateId, ChangeId, OpId, intent_digest};
use bay_core::limits::PathStat;
use bay_core::machine::abandon::{Abandon, AbandonInput};
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::merge_wait::MergeWait;
use bay_core::machine::runner::{RunMode, Runner, RunnerConfig};
use bay_core::machine::start::{Import, Start, StartInput, StartTarget};
use bay_core::machine::undo::{Undo, UndoInput};
use bay_core::machine::{
    Action, ActionId, BuildResult, ChainQuery, ChainRead, CheckRun, Completion, Event, Expect,
    Fault, Machine, PluginExit, PushOutcome, PushPlan, PushReport, RawStep, Refreshed, Refs,
};
use bay_core::policy::{Materialize, Policy, QuarantineEnd, Stage, TOP_NOT_YET};
use bay_core::reason::ReasonCode;
use bay_core::record::{ChangeRecord, Step, StepBody};
use bay_core::report;
use bay_core::result::{BayResult, Decision, OpState, WaitingFor};
use bay_core::say::say;
use bay_core::schema;
use bay_core::time::Timestamp;
use bay_core::time::is_calendar_date;
use bay_core::words::{WORDS, forbidden_word};

// ---------------------------------------------------------------------------------------------
// The tiny world.

/// The runner under test, and another one whose claims it may meet.
const RUNNER: &str = "runner-a";
const OTHER_RUNNER: &str = "runner-b";
const ACTORS: [&str; 2] = ["alice", "bob"];
const WRITERS: [&str; 4] = ["alice", "bob", RUNNER, OTHER_RUNNER];
const INTENTS: [&str; 2] = ["fix the login", "add a test"];
const MAIN: &str = "main";
const QUEUE_PLACES: u64 = 3;
/// Where every machine's clock starts.
const EPOCH: Timestamp = Timestamp(1_700_000_000_000);
/// At most this many events per input, so that one input stays fast.
const MAX_EVENTS: usize = 200;

/// Policies a runner may read at a base: valid ones of each shape, and broken ones.
const POLICIES: [&str; 6] = [
    "revision = 3\n\n[[check]]\nid = \"unit\"\nenvironment = \"linux\"\n\
     command = \"scripts/check unit\"\nadapter = [\"scripts/check\"]\nexpected_minimum = 1\n\
     timeout_s = 5\n",
    "revision = 4\n\n[[check]]\nid = \"unit\"\nenvironment = \"linux\"\n\
     command = \"scripts/check unit\"\nadapter = [\"scripts/\"]\nexpected_minimum = 2\n\
     timeout_s = 5\n\n[[check]]\nid = \"e2e\"\nenvironment = \"mac\"\n\
     command = \"scripts/check e2e\"\nadapter = [\"scripts/\"]\nexpected_minimum = 0\n\
     timeout_s = 60\n",
    "revision = 1\nunchecked = true\n",
    "revision = 5\nunchecked = true\n\n[limits]\nmax_files = 1\nmax_added_lines = 40\n",
    "revision = \"five\"\n",
    "revision = 2\n[[check]]\nid = \"unit\"\n",
];

fn oid(u: &mut Unstructured<'_>) -> Result<Oid> {
    Oid::arbitrary(u)
}

/// A draft a driver made by a merge (a refresh, or a view's work carried over): now and
/// then with a conflict, marked or not.
fn merged_draft(u: &mut Unstructured<'_>) -> Result<Refreshed> {
    let conflicts = if u.ratio(1, 4)? {
        vec![word(u, &["src/a.rs"])?]
    } else {
        Vec::new()
    };
    Ok(Refreshed {
        draft: oid(u)?,
        marked: if u.arbitrary()? {
            conflicts.clone()
        } else {
            Vec::new()
        },
        conflicts,
    })
}

fn change_id(u: &mut Unstructured<'_>) -> Result<ChangeId> {
    ChangeId::arbitrary(u)
}

fn every_change() -> Vec<ChangeId> {
    (0..=3)
        .map(|n| ChangeId::from_entropy([0, 0, 0, 0, n]))
        .collect()
}

fn op_id(u: &mut Unstructured<'_>, change: &ChangeId) -> Result<OpId> {
    Ok(change.op(u.int_in_range(1..=3)?))
}

fn candidate_id(u: &mut Unstructured<'_>, op: &OpId) -> Result<CandidateId> {
    Ok(op.candidate(u.int_in_range(1..=3)?))
}

fn pick<'a>(u: &mut Unstructured<'_>, items: &[&'a str]) -> Result<&'a str> {
    Ok(*u.choose(items)?)
}

/// A short string: usually one of a few words, so that values collide, sometimes anything.
fn word(u: &mut Unstructured<'_>, words: &[&str]) -> Result<String> {
    if u.ratio(7, 8)? {
        Ok(pick(u, words)?.to_owned())
    } else {
        String::arbitrary(u)
    }
}

fn fault(u: &mut Unstructured<'_>) -> Result<Fault> {
    Ok(Fault(word(u, &["network down", "git exited 128", ""])?))
}

/// `Err(fault)` one time in `one_in`.
fn maybe_fault<T>(
    u: &mut Unstructured<'_>,
    one_in: u32,
    ok: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
) -> Result<std::result::Result<T, Fault>> {
    if u.ratio(1, one_in)? {
        Ok(Err(fault(u)?))
    } else {
        Ok(Ok(ok(u)?))
    }
}

fn is_valid_id(op: &OpId) -> bool {
    op.n >= 1
}

/// Whether every id in a step is one bay can write and read back (the derived `Arbitrary`
/// of an id also makes counter 0, which no writer makes and no reader accepts).
fn step_ids_are_valid(step: &Step) -> bool {
    let op_ok = step.op().is_none_or(is_valid_id);
    let candidate_ok = match &step.body {
        StepBody::Candidate { candidate, .. } | StepBody::Check { candidate, .. } => {
            candidate.attempt >= 1 && is_valid_id(&candidate.op)
        }
        _ => true,
    };
    op_ok && candidate_ok
}

// ---------------------------------------------------------------------------------------------
// Steps and chains.

/// What a chain generator remembers of the chain so far, to make its next step likely to fit.
#[derive(Debug)]
struct ChainState {
    change: ChangeId,
    actor: String,
    ops: u32,
    live: bool,
    owner: Option<String>,
    candidates: u32,
    merged: bool,
    abandoned: bool,
    at: u64,
}

/// The kinds of step a chain generator can add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    Adopt,
    Checkpoint,
    Request,
    Claim,
    Heartbeat,
    Release,
    Candidate,
    Check,
    Outcome,
    Abandon,
    Start,
    Junk,
}

const EVERY_MOVE: [Move; 12] = [
    Move::Adopt,
    Move::Checkpoint,
    Move::Request,
    Move::Claim,
    Move::Heartbeat,
    Move::Release,
    Move::Candidate,
    Move::Check,
    Move::Outcome,
    Move::Abandon,
    Move::Start,
    Move::Junk,
];

impl ChainState {
    fn new(change: ChangeId) -> ChainState {
        ChainState {
            change,
            actor: ACTORS[0].to_owned(),
            ops: 0,
            live: false,
            owner: None,
            candidates: 0,
            merged: false,
            abandoned: false,
            at: EPOCH.millis(),
        }
    }

    /// A chain that already holds a start and one live request, to continue from.
    fn midway(change: ChangeId) -> ChainState {
        ChainState {
            ops: 1,
            live: true,
            ..ChainState::new(change)
        }
    }

    fn step(&mut self, u: &mut Unstructured<'_>, by: &str, body: StepBody) -> Result<Step> {
        self.at += u.int_in_range(0..=5_000)?;
        Ok(Step {
            change: self.change.clone(),
            at: Timestamp(self.at),
            by: by.to_owned(),
            nonce: u.arbitrary()?,
            body,
        })
    }

    fn start(&mut self, u: &mut Unstructured<'_>) -> Result<Step> {
        let actor = pick(u, &ACTORS)?;
        self.actor = actor.to_owned();
        let body = StepBody::Start {
            intent: word(u, &INTENTS)?,
            actor: actor.to_owned(),
            paths: vec![word(u, &["src/", "docs/", "README.md"])?],
            base: oid(u)?,
            generation: u.int_in_range(1..=2)?,
            supersedes: if u.ratio(1, 4)? {
                Some(change_id(u)?)
            } else {
                None
            },
            fixes: if u.ratio(1, 8)? {
                Some(change_id(u)?)
            } else {
                None
            },
            reverts: if u.ratio(1, 8)? {
                Some(change_id(u)?)
            } else {
                None
            },
            after: if u.ratio(1, 8)? {
                vec![change_id(u)?]
            } else {
                Vec::new()
            },
        };
        self.step(u, actor, body)
    }

    /// The moves the record's rules allow next.
    fn legal(&self) -> Vec<Move> {
        if self.merged {
            return Vec::new();
        }
        let mut moves = vec![Move::Adopt, Move::Checkpoint];
        if !self.abandoned {
            moves.extend([Move::Request, Move::Request, Move::Abandon]);
        }
        if self.live {
            match self.owner {
                None => moves.extend([Move::Claim, Move::Claim, Move::Claim]),
                Some(_) => {
                    moves.extend([Move::Heartbeat, Move::Release, Move::Candidate]);
                    moves.extend([Move::Candidate, Move::Outcome, Move::Outcome]);
                    if self.candidates > 0 {
                        moves.extend([Move::Check, Move::Check]);
                    }
                }
            }
        }
        moves
    }

    /// A step the record's rules allow most of the time, and anything some of the time.
    /// `places` are the queue places the remote holds, with the operation each names.
    fn next(&mut self, u: &mut Unstructured<'_>, places: &[(u64, OpId)]) -> Result<Step> {
        let legal = self.legal();
        let chosen = if !legal.is_empty() && u.ratio(7, 8)? {
            *u.choose(&legal)?
        } else {
            *u.choose(&EVERY_MOVE)?
        };
        let owner = self.owner.clone();
        let op = self.change.op(self.ops.max(1));
        let writer = |u: &mut Unstructured<'_>| -> Result<String> {
            match &owner {
                Some(owner) if u.ratio(15, 16)? => Ok(owner.clone()),
                _ => Ok(pick(u, &WRITERS)?.to_owned()),
            }
        };
        let step = match chosen {
            Move::Adopt => {
                let actor = pick(u, &ACTORS)?;
                self.actor = actor.to_owned();
                self.abandoned = false;
                let body = StepBody::Adopt {
                    actor: actor.to_owned(),
                };
                self.step(u, actor, body)?
            }
            Move::Checkpoint => {
                let body = StepBody::Checkpoint {
                    draft: oid(u)?,
                    base: oid(u)?,
                    marked: u.arbitrary()?,
                };
                let actor = self.actor.clone();
                self.step(u, &actor, body)?
            }
            Move::Request => {
                self.ops += 1;
                self.live = true;
                self.owner = None;
                self.candidates = 0;
                let op = self.change.op(self.ops);
                let named = places.iter().find(|(_, named)| named == &op);
                let seq = match named {
                    Some((seq, _)) if u.ratio(15, 16)? => *seq,
                    _ => match u.choose(places) {
                        Ok((seq, _)) if u.ratio(3, 4)? => *seq,
                        _ => u.int_in_range(1..=QUEUE_PLACES)?,
                    },
                };
                let body = StepBody::Request {
                    op,
                    draft: oid(u)?,
                    base: oid(u)?,
                    seq,
                };
                let actor = self.actor.clone();
                self.step(u, &actor, body)?
            }
            Move::Claim => {
                let runner = pick(u, &[RUNNER, OTHER_RUNNER])?;
                self.owner = Some(runner.to_owned());
                self.step(u, runner, StepBody::Claim { op })?
            }
            Move::Heartbeat => {
                let by = writer(u)?;
                self.step(u, &by, StepBody::Heartbeat { op })?
            }
            Move::Release => {
                let by = writer(u)?;
                self.owner = None;
                let body = StepBody::Release {
                    op,
                    reason: Option::<ReasonCode>::arbitrary(u)?,
                    why: word(u, &["could not build the candidate"])?,
                    behind: Option::<u64>::arbitrary(u)?,
                    detail: None,
                };
                self.step(u, &by, body)?
            }
            Move::Candidate => {
                let by = writer(u)?;
                self.candidates += 1;
                let body = StepBody::Candidate {
                    candidate: op.candidate(self.candidates),
                    op,
                    base: oid(u)?,
                    base_tree: oid(u)?,
                    commit: oid(u)?,
                    tree: oid(u)?,
                };
                self.step(u, &by, body)?
            }
            Move::Check => {
                let by = writer(u)?;
                let candidate = if u.ratio(7, 8)? {
                    op.candidate(self.candidates.max(1))
                } else {
                    candidate_id(u, &op)?
                };
                let body = StepBody::Check {
                    candidate,
                    op,
                    check: word(u, &["unit", "e2e"])?,
                    environment: word(u, &["linux", "mac"])?,
                    verdict: Verdict::arbitrary(u)?,
                    why: word(u, &["All 3 units passed on the candidate."])?,
                };
                self.step(u, &by, body)?
            }
            Move::Outcome => {
                let by = writer(u)?;
                self.owner = None;
                self.live = false;
                let state = if u.ratio(7, 8)? {
                    let ending: &[OpState] = if self.candidates > 0 {
                        &[
                            OpState::Merged,
                            OpState::Blocked,
                            OpState::Failed,
                            OpState::NoEffect,
                        ]
                    } else {
                        &[OpState::Blocked, OpState::Failed, OpState::NoEffect]
                    };
                    *u.choose(ending)?
                } else {
                    *u.choose(&OpState::ALL)?
                };
                self.merged = state == OpState::Merged;
                let body = StepBody::Outcome {
                    op,
                    state,
                    reason: Option::<ReasonCode>::arbitrary(u)?,
                    detail: json!({ "note": word(u, &["done"])? }),
                };
                self.step(u, &by, body)?
            }
            Move::Abandon => {
                let actor = if u.ratio(7, 8)? {
                    self.actor.clone()
                } else {
                    pick(u, &ACTORS)?.to_owned()
                };
                self.live = false;
                self.owner = None;
                self.abandoned = true;
                self.step(u, &actor, StepBody::Abandon)?
            }
            Move::Start => self.start(u)?,
            Move::Junk => {
                // Anything at all, on this chain's change most of the time.
                let mut step = Step::arbitrary(u)?;
                if u.ratio(3, 4)? {
                    step.change = self.change.clone();
                }
                step
            }
        };
        Ok(step)
    }

    /// A chain of `len` steps after a start (most of the time), oldest first.
    fn chain(
        &mut self,
        u: &mut Unstructured<'_>,
        len: usize,
        places: &[(u64, OpId)],
    ) -> Result<Vec<Step>> {
        let mut steps = Vec::with_capacity(len + 1);
        if u.ratio(15, 16)? {
            steps.push(self.start(u)?);
        }
        for _ in 0..len {
            steps.push(self.next(u, places)?);
        }
        Ok(steps)
    }
}

/// A step's commit message: what bay writes most of the time, else something broken.
fn message(u: &mut Unstructured<'_>, step: &Step) -> Result<String> {
    Ok(match u.int_in_range(0..=31)? {
        0 => String::arbitrary(u)?,
        1 => {
            let text = step.to_message();
            let cut = u.int_in_range(0..=text.len())?;
            text.get(..cut).unwrap_or_default().to_owned()
        }
        _ => step.to_message(),
    })
}

// ---------------------------------------------------------------------------------------------
// Check results.

/// A `bay.check.result/1` document about `request`'s candidate most of the time, with every
/// field sometimes wrong, missing or of the wrong type.
fn result_document(u: &mut Unstructured<'_>, request: &CheckRequest) -> Result<Vec<u8>> {
    let mut doc = Map::new();
    match u.int_in_range(0..=15)? {
        0 => {}
        1 => {
            doc.insert("schema".into(), json!("bay.check.result/2"));
        }
        2 => {
            doc.insert("schema".into(), json!(7));
        }
        _ => {
            doc.insert("schema".into(), json!(RESULT_SCHEMA));
        }
    }
    let candidate = &request.candidate;
    let exercised = match u.int_in_range(0..=15)? {
        0 => None,
        1 => Some(json!("not an object")),
        2 => Some(json!({ "commit": candidate.tree, "tree": candidate.commit })),
        3 => Some(json!({ "commit": candidate.commit })),
        4 => Some(json!({ "commit": oid(u)?, "tree": oid(u)? })),
        5 => Some(json!({
            "commit": candidate.commit.as_str().to_uppercase(),
            "tree": candidate.tree,
        })),
        6 => Some(json!({ "commit": candidate.commit, "tree": oid(u)? })),
        7 => Some(json!({ "commit": candidate.commit, "tree": [candidate.tree] })),
        _ => Some(json!({ "commit": candidate.commit, "tree": candidate.tree })),
    };
    if let Some(exercised) = exercised {
        doc.insert("exercised".into(), exercised);
    }
    if u.ratio(1, 16)? {
        let reason = if u.ratio(3, 4)? {
            json!(word(u, &["no GPU here"])?)
        } else {
            json!(null)
        };
        doc.insert("unavailable".into(), reason);
    }
    let count = |u: &mut Unstructured<'_>| -> Result<Value> {
        Ok(match u.int_in_range(0..=15)? {
            0 => json!(-1),
            1 => json!(1.5),
            2 => json!("3"),
            3 => json!(u64::MAX),
            _ => json!(u.int_in_range(0..=4u64)?),
        })
    };
    if u.ratio(15, 16)? {
        let mut plan = Map::new();
        if u.ratio(31, 32)? {
            plan.insert("selected".into(), count(u)?);
        }
        if u.ratio(31, 32)? {
            plan.insert("completed".into(), count(u)?);
        }
        doc.insert("plan".into(), Value::Object(plan));
    }
    if u.ratio(15, 16)? {
        let units = u.int_in_range(0..=4)?;
        let mut list = Vec::with_capacity(units);
        for index in 0..units {
            if u.ratio(1, 32)? {
                list.push(json!(index));
                continue;
            }
            let mut unit = Map::new();
            if u.ratio(31, 32)? {
                unit.insert("id".into(), json!(word(u, &["t1", "t2", "t3"])?));
            }
            let verdict = match u.int_in_range(0..=11)? {
                0 => json!("Pass"),
                1 => json!("product_failure"),
                2 => json!("infra_failure"),
                3 => json!("unknown"),
                4 => json!(null),
                5 => json!(String::arbitrary(u)?),
                _ => json!("pass"),
            };
            unit.insert("verdict".into(), verdict);
            match u.int_in_range(0..=7)? {
                0 => {
                    unit.insert("reason".into(), json!(String::arbitrary(u)?));
                }
                1 => {
                    let len = MAX_REASON_BYTES + u.int_in_range(0..=1)?;
                    unit.insert("reason".into(), json!("r".repeat(len)));
                }
                2 => {
                    unit.insert("reason".into(), json!(12));
                }
                _ => {}
            }
            list.push(Value::Object(unit));
        }
        doc.insert("checks".into(), Value::Array(list));
    }
    if u.ratio(1, 16)? {
        doc.insert(String::arbitrary(u)?, json!(String::arbitrary(u)?));
    }
    let mut bytes =
        serde_json::to_vec(&Value::Object(doc)).expect("a JSON value always serializes");
    if u.ratio(1, 32)? {
        let cut = u.int_in_range(0..=bytes.len())?;
        bytes.truncate(cut);
    }
    Ok(bytes)
}

/// What a driver saw when it ran a check: a clean run most of the time.
/// A hold plugin's run: mostly a plain answer either way, sometimes a failure or garbage.
fn plugin_exit(u: &mut Unstructured<'_>) -> Result<PluginExit> {
    Ok(match u.int_in_range(0..=7)? {
        0 => PluginExit::TimedOut,
        1 => PluginExit::NotStarted("no such program".into()),
        2 => PluginExit::arbitrary(u)?,
        n => PluginExit::Exited {
            code: Some(0),
            stdout: if n % 2 == 0 {
                br#"{"held": false}"#.to_vec()
            } else {
                br#"{"held": true, "reason": "incident"}"#.to_vec()
            },
        },
    })
}

/// The hold plugin's judge: never panics; "not held" only for a clean exit whose bounded
/// stdout is one JSON object with `held` false; a reason stays on one bounded line.
pub fn hold(data: &[u8]) {
    let exit = match data {
        [0, rest @ ..] => PluginExit::Exited {
            code: Some(0),
            stdout: rest.to_vec(),
        },
        _ => match PluginExit::arbitrary(&mut Unstructured::new(data)) {
            Ok(exit) => exit,
            Err(_) => return,
        },
    };
    match bay_core::plugin::judge_hold(&exit) {
        None => {
            let PluginExit::Exited {
                code: Some(0),
                stdout,
            } = &exit
            else {
                panic!("a run that failed cleared the hold: {exit:?}");
            };
            assert!(stdout.len() <= bay_core::plugin::MAX_ANSWER_BYTES);
            let value: Value = serde_json::from_slice(stdout).expect("not held only on JSON");
            assert_eq!(value["held"], Value::Bool(false), "{value}");
        }
        Some(reason) => {
            assert!(reason.chars().count() <= bay_core::plugin::MAX_REASON_CHARS);
            assert!(!reason.chars().any(char::is_control), "{reason:?}");
        }
    }
}

fn check_exit(u: &mut Unstructured<'_>, stdout: Vec<u8>) -> Result<CheckExit> {
    Ok(CheckExit {
        stdout,
        exit_code: match u.int_in_range(0..=15)? {
            0 => None,
            1 => Some(1),
            2 => Some(i32::arbitrary(u)?),
            _ => Some(0),
        },
        timed_out: u.ratio(1, 32)?,
        millis: u.int_in_range(0..=10_000)?,
        infra: if u.ratio(1, 32)? {
            Some(word(u, &["no sandbox", "the copy failed.\nretry"])?)
        } else {
            None
        },
        sandbox_read: if u.ratio(1, 16)? {
            vec![word(u, &["/opt/cache", "/home/ci/.cache/pnpm"])?]
        } else {
            Vec::new()
        },
        adapter: if u.ratio(1, 4)? {
            vec![("checks/run".to_owned(), word(u, &["5a", "6b"])?.repeat(20))]
        } else {
            Vec::new()
        },
        stderr_log: None,
    })
}

/// Checks one judgement against the promises, reading the run's output independently of the
/// judge.
fn assert_judgement(
    request: &CheckRequest,
    expected_minimum: u64,
    exit: &CheckExit,
    judgement: &Judgement,
) {
    let doc = match serde_json::from_slice::<Value>(&exit.stdout) {
        Ok(Value::Object(doc)) if exit.stdout.len() <= MAX_STDOUT_BYTES => Some(doc),
        _ => None,
    };
    let clean_run = exit.infra.is_none() && !exit.timed_out;
    match judgement {
        Judgement::Unavailable { reason } => {
            let doc = doc.expect("unavailable comes only from a readable result");
            assert!(clean_run, "unavailable from a run that did not finish");
            assert_eq!(doc.get("schema"), Some(&json!(RESULT_SCHEMA)));
            assert_eq!(doc.get("unavailable"), Some(&json!(reason)));
            assert!(
                !doc.contains_key("checks"),
                "unavailable beside reported units"
            );
        }
        Judgement::Judged(judged) => {
            assert!(!judged.why.is_empty(), "a verdict without a why");
            assert!(
                !judged.why.contains('\n'),
                "a why that is not one line: {:?}",
                judged.why
            );
            assert!(
                distinct_ids(judged.failed.iter().map(|unit| json!(unit.id))) <= judged.units,
                "more failed units than units"
            );
            assert!(
                judged
                    .failed
                    .iter()
                    .all(|unit| unit.verdict != Verdict::Pass),
                "a passing unit listed as failed"
            );
            if judged.verdict != Verdict::Pass {
                return;
            }
            if let Err(why) = pass_warranted(request, expected_minimum, exit) {
                panic!("the judge passed a run it must not: {why}");
            }
            assert_eq!(Some(judged.units), reported_units(exit), "units miscounted");
            assert!(judged.failed.is_empty());
        }
    }
}

/// How many distinct units (by id) a run's result lists, when it lists them.
fn reported_units(exit: &CheckExit) -> Option<u64> {
    let doc: Value = serde_json::from_slice(&exit.stdout).ok()?;
    let units = doc.get("checks")?.as_array()?;
    Some(distinct_ids(
        units
            .iter()
            .map(|unit| unit.get("id").cloned().unwrap_or_default()),
    ))
}

/// How many distinct ids `ids` holds.
fn distinct_ids(ids: impl Iterator<Item = Value>) -> u64 {
    ids.map(|id| id.to_string()).collect::<BTreeSet<_>>().len() as u64
}

/// Why `exit` cannot be a pass for `request` with `expected_minimum`, read from the run's output
/// without the judge; `Ok` when nothing forbids a pass.
fn pass_warranted(
    request: &CheckRequest,
    expected_minimum: u64,
    exit: &CheckExit,
) -> std::result::Result<(), String> {
    let refuse = |why: &str| Err(why.to_owned());
    if exit.infra.is_some() || exit.timed_out {
        return refuse("the run did not finish");
    }
    if exit.exit_code != Some(0) {
        return refuse("the run errored");
    }
    if exit.stdout.len() > MAX_STDOUT_BYTES {
        return refuse("the output is over the limit");
    }
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(&exit.stdout) else {
        return refuse("no readable result");
    };
    if doc.get("schema") != Some(&json!(RESULT_SCHEMA)) {
        return refuse("another schema");
    }
    if !doc.get("unavailable").is_none_or(Value::is_null) {
        return refuse("the check answered unavailable");
    }
    let Some(exercised) = doc.get("exercised").and_then(Value::as_object) else {
        return refuse("no exercised");
    };
    if exercised.get("commit").and_then(Value::as_str) != Some(request.candidate.commit.as_str()) {
        return refuse("the result is for another commit");
    }
    if exercised.get("tree").and_then(Value::as_str) != Some(request.candidate.tree.as_str()) {
        return refuse("the result is for another tree");
    }
    let Some(units) = doc.get("checks").and_then(Value::as_array) else {
        return refuse("no checks list");
    };
    let ids = units
        .iter()
        .map(|unit| unit.get("id").cloned().unwrap_or_default());
    if distinct_ids(ids) < expected_minimum {
        return refuse("fewer distinct units than the expected minimum");
    }
    for unit in units {
        if unit.get("verdict") != Some(&json!("pass")) {
            return refuse("a unit did not pass");
        }
        let reason = unit.get("reason").and_then(Value::as_str);
        if reason.is_some_and(|r| r.len() > MAX_REASON_BYTES) {
            return refuse("a unit's reason is over the limit");
        }
    }
    let Some(plan) = doc.get("plan").and_then(Value::as_object) else {
        return refuse("no plan");
    };
    let selected = plan.get("selected").and_then(Value::as_u64);
    let completed = plan.get("completed").and_then(Value::as_u64);
    if selected.is_none() || completed < selected {
        return refuse("fewer units completed than selected");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// policy

/// `.bay/policy.toml` text: never a panic; an accepted policy keeps its meaning when written
/// back out, agrees with a plain TOML reading, and obeys its own rules.
pub fn policy(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = Policy::parse(&text);
    assert_eq!(parsed, Policy::parse(&text), "parsing is deterministic");
    match parsed {
        Err(error) => assert_error_line(&text, error.0.line, &error.to_string()),
        Ok(policy) => {
            assert_policy_rules(&policy);
            assert_policy_matches_toml(&policy, &text);
            let written = policy_to_toml(&policy);
            match Policy::parse(&written) {
                Ok(again) => {
                    assert_eq!(again, policy, "the policy lost data:\n{written}");
                    assert_eq!(again.digest(), policy.digest());
                }
                Err(error) => {
                    panic!("an accepted policy, written out, is refused: {error}\n{written}")
                }
            }
            let json = serde_json::to_string(&policy).expect("a policy serializes");
            let back: Policy = serde_json::from_str(&json).expect("a policy reads back");
            assert_eq!(back, policy);
        }
    }
}

fn assert_error_line(text: &str, line: u32, shown: &str) {
    let lines = text.split('\n').count();
    assert!(
        line >= 1 && line as usize <= lines,
        "an error names line {line} of a {lines}-line text: {shown}"
    );
}

fn assert_policy_rules(policy: &Policy) {
    if policy.unchecked {
        assert!(policy.checks.is_empty(), "unchecked beside a check");
    } else {
        assert!(!policy.checks.is_empty(), "no check and not unchecked");
        assert!(
            policy.checks.iter().any(|c| c.stage == Stage::Pre
                && c.expected_minimum > 0
                && policy.quarantine_of(c).is_none()),
            "no pre check that expects units stands unquarantined"
        );
    }
    let mut pairs = BTreeSet::new();
    let mut stages = BTreeMap::new();
    for check in &policy.checks {
        assert!(!check.id.is_empty() && !check.environment.is_empty());
        assert!(
            pairs.insert((check.id.clone(), check.environment.clone())),
            "a repeated id and environment"
        );
        assert_eq!(
            *stages.entry(check.id.clone()).or_insert(check.stage),
            check.stage,
            "one id in both stages"
        );
        assert!(check.timeout_s >= 1);
        assert!(check.materialize_timeout_s >= 1);
        assert!(check.retry_on_failure <= 5);
        if check.stage == Stage::Post {
            assert_eq!(check.retry_on_failure, 0, "a post check reruns");
            assert!(!check.allow_flaky, "a post check allows flakes");
            assert_eq!(check.baseline, None, "a post check has a baseline");
        }
        assert!(!check.adapter.is_empty());
        let lists = [&check.paths, &check.when_paths, &check.producers];
        for list in lists.into_iter().flatten() {
            assert!(!list.is_empty(), "an empty optional list");
            assert!(list.iter().all(|item| !item.is_empty()), "an empty entry");
        }
        for entry in check
            .adapter
            .iter()
            .chain(check.paths.iter().flatten())
            .chain(check.when_paths.iter().flatten())
        {
            assert!(!entry.starts_with('/'), "an absolute path {entry:?}");
            assert!(
                !entry.split('/').any(|part| part == ".."),
                "a path that leaves the tree {entry:?}"
            );
        }
        let inputs: BTreeSet<_> = check.inputs.iter().collect();
        assert_eq!(inputs.len(), check.inputs.len(), "a repeated input");
        let names: BTreeSet<_> = check.fixtures.iter().map(|f| &f.name).collect();
        assert_eq!(names.len(), check.fixtures.len(), "a repeated fixture");
        for fixture in &check.fixtures {
            assert!(!fixture.name.is_empty() && !fixture.name.contains('@'));
            assert!(
                fixture.sha256.len() == 64
                    && fixture
                        .sha256
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "a bad fixture digest"
            );
        }
        let program = check.command.split_whitespace().next();
        assert!(program.is_some(), "a check with no program");
        for dir in &check.path {
            assert!(
                dir.starts_with('/') && !dir.contains(':'),
                "a bad PATH entry"
            );
        }
        for name in &check.env {
            assert!(
                !bay_core::policy::RESERVED_ENV.contains(&name.as_str()),
                "a reserved variable {name}"
            );
        }
    }
    let mut set_aside = BTreeSet::new();
    for entry in &policy.quarantine {
        let pair = (entry.id.clone(), entry.environment.clone());
        assert!(pairs.contains(&pair), "a quarantine of no check");
        assert!(set_aside.insert(pair), "a check quarantined twice");
        assert!(!entry.reason.is_empty());
        assert_ne!(entry.owner.as_deref(), Some(""), "an empty owner");
        if let QuarantineEnd::Date(date) = &entry.end {
            assert!(is_calendar_date(date), "a bad end {date:?}");
        }
        if let Some(since) = &entry.since {
            assert!(is_calendar_date(since), "a bad since {since:?}");
        }
    }
    let limits = &policy.limits;
    for cap in [
        limits.max_file_mib,
        limits.max_files,
        limits.max_added_lines,
    ] {
        assert_ne!(cap, Some(0), "a zero cap");
    }
}

/// The same text read by the plain TOML parser says the same things, and holds no key this
/// bay refuses until it acts on it.
fn assert_policy_matches_toml(policy: &Policy, text: &str) {
    let table: toml::Table = match toml::from_str(text) {
        Ok(table) => table,
        Err(error) => panic!("bay accepted a policy that is not TOML: {error}"),
    };
    assert_eq!(
        table.get("revision").and_then(toml::Value::as_integer),
        Some(policy.revision),
        "revision misread"
    );
    for key in TOP_NOT_YET {
        assert!(!table.contains_key(key), "bay accepted [{key}]");
    }
    let signing = table.get("policy").and_then(toml::Value::as_table);
    assert_eq!(
        signing
            .and_then(|t| t.get("signing"))
            .map_or(Some("all"), toml::Value::as_str),
        Some(policy.signing.as_str()),
        "signing misread"
    );
    assert_eq!(
        signing
            .and_then(|t| t.get("reuse_unsigned"))
            .and_then(toml::Value::as_bool)
            .unwrap_or(false),
        policy.reuse_unsigned,
        "reuse_unsigned misread"
    );
    let (approvals, checks): (Vec<&toml::Table>, Vec<&toml::Table>) = table
        .get("check")
        .and_then(toml::Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(toml::Value::as_table)
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .partition(|raw| raw.get("kind").and_then(toml::Value::as_str) == Some("approval"));
    assert_eq!(checks.len(), policy.checks.len(), "checks miscounted");
    assert_eq!(
        approvals.len(),
        policy.approvals.len(),
        "approvals miscounted"
    );
    for (raw, check) in checks.iter().zip(&policy.checks) {
        let string = |key: &str| {
            raw.get(key)
                .and_then(toml::Value::as_str)
                .map(str::to_owned)
        };
        let strings = |key: &str| {
            raw.get(key).and_then(toml::Value::as_array).map(|list| {
                list.iter()
                    .filter_map(toml::Value::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        };
        let uint = |key: &str| {
            raw.get(key)
                .and_then(toml::Value::as_integer)
                .and_then(|n| u64::try_from(n).ok())
        };
        let flag = |key: &str| raw.get(key).and_then(toml::Value::as_bool).unwrap_or(false);
        assert_eq!(flag("footprint"), check.footprint);
        if check.footprint {
            assert!(
                check.materialize != Materialize::Changed
                    && (check.paths.is_some() || check.when_paths.is_some()),
                "a footprint with no read set, or beside materialize = \"changed\""
            );
        }
        assert_eq!(string("id").as_ref(), Some(&check.id));
        assert_eq!(string("environment").as_ref(), Some(&check.environment));
        assert_eq!(string("command").as_ref(), Some(&check.command));
        assert_eq!(strings("adapter").as_ref(), Some(&check.adapter));
        assert_eq!(uint("expected_minimum"), Some(check.expected_minimum));
        if let Some(timeout) = raw.get("timeout_s") {
            assert_eq!(
                timeout.as_integer().and_then(|n| u64::try_from(n).ok()),
                Some(check.timeout_s)
            );
        }
        if raw.contains_key("path") {
            assert_eq!(strings("path").as_ref(), Some(&check.path));
        }
        assert_eq!(strings("env").unwrap_or_default(), check.env);
        assert_eq!(flag("network"), check.network);
        let inputs: Vec<String> = check.inputs.iter().map(|i| i.as_str().to_owned()).collect();
        assert_eq!(
            strings("inputs").unwrap_or_default(),
            inputs,
            "inputs misread"
        );
        let fixtures: Vec<String> = check.fixtures.iter().map(ToString::to_string).collect();
        assert_eq!(
            strings("fixtures").unwrap_or_default(),
            fixtures,
            "fixtures misread"
        );
        assert_eq!(strings("paths"), check.paths, "paths misread");
        assert_eq!(
            strings("when_paths"),
            check.when_paths,
            "when_paths misread"
        );
        assert_eq!(strings("producers"), check.producers, "producers misread");
        assert_eq!(
            string("materialize").is_some(),
            check.materialize == Materialize::Changed,
            "materialize misread"
        );
        assert_eq!(
            uint("materialize_timeout_s")
                .unwrap_or(bay_core::policy::DEFAULT_MATERIALIZE_TIMEOUT_S),
            check.materialize_timeout_s
        );
        assert_eq!(
            string("stage").unwrap_or_else(|| "pre".to_owned()),
            check.stage.as_str(),
            "stage misread"
        );
        assert_eq!(
            uint("retry_on_failure").unwrap_or(0),
            u64::from(check.retry_on_failure)
        );
        assert_eq!(flag("allow_flaky"), check.allow_flaky);
        assert_eq!(string("baseline").is_some(), check.baseline.is_some());
    }
    let entries: Vec<&toml::Table> = table
        .get("quarantine")
        .and_then(toml::Value::as_array)
        .map(|list| list.iter().filter_map(toml::Value::as_table).collect())
        .unwrap_or_default();
    assert_eq!(
        entries.len(),
        policy.quarantine.len(),
        "quarantine miscounted"
    );
    for (raw, entry) in entries.iter().zip(&policy.quarantine) {
        let string = |key: &str| {
            raw.get(key)
                .and_then(toml::Value::as_str)
                .map(str::to_owned)
        };
        assert_eq!(string("id").as_ref(), Some(&entry.id));
        assert_eq!(string("environment").as_ref(), Some(&entry.environment));
        assert_eq!(string("reason").as_ref(), Some(&entry.reason));
        assert_eq!(string("end"), Some(entry.end.to_string()));
        assert_eq!(string("owner"), entry.owner);
        assert_eq!(string("since"), entry.since);
    }
    let limits = table.get("limits").and_then(toml::Value::as_table);
    let cap = |key: &str| {
        limits
            .and_then(|t| t.get(key))
            .and_then(toml::Value::as_integer)
            .and_then(|n| u64::try_from(n).ok())
    };
    assert_eq!(
        cap("max_waiting_approvals"),
        policy.limits.max_waiting_approvals
    );
    assert_eq!(cap("max_file_mib"), policy.limits.max_file_mib);
    assert_eq!(cap("max_files"), policy.limits.max_files);
    assert_eq!(cap("max_added_lines"), policy.limits.max_added_lines);
}

fn uint_value(n: u64) -> toml::Value {
    toml::Value::Integer(
        i64::try_from(n).expect("a TOML integer fits in i64, so a parsed one does"),
    )
}

fn strings_value(items: &[String]) -> toml::Value {
    toml::Value::Array(items.iter().cloned().map(toml::Value::String).collect())
}

fn string_value(text: &str) -> toml::Value {
    toml::Value::String(text.to_owned())
}

/// The policy as TOML, every field spelt out.
fn policy_to_toml(policy: &Policy) -> String {
    let mut root = toml::Table::new();
    root.insert("revision".into(), toml::Value::Integer(policy.revision));
    root.insert("unchecked".into(), toml::Value::Boolean(policy.unchecked));
    if !policy.checks.is_empty() {
        let checks = policy
            .checks
            .iter()
            .map(|check| {
                let mut table = toml::Table::new();
                table.insert("id".into(), string_value(&check.id));
                table.insert("environment".into(), string_value(&check.environment));
                table.insert("kind".into(), string_value("check"));
                table.insert("command".into(), string_value(&check.command));
                table.insert("adapter".into(), strings_value(&check.adapter));
                let inputs: Vec<String> =
                    check.inputs.iter().map(|i| i.as_str().to_owned()).collect();
                table.insert("inputs".into(), strings_value(&inputs));
                let fixtures: Vec<String> =
                    check.fixtures.iter().map(ToString::to_string).collect();
                table.insert("fixtures".into(), strings_value(&fixtures));
                table.insert(
                    "expected_minimum".into(),
                    uint_value(check.expected_minimum),
                );
                table.insert("timeout_s".into(), uint_value(check.timeout_s));
                table.insert("path".into(), strings_value(&check.path));
                table.insert("env".into(), strings_value(&check.env));
                table.insert("network".into(), toml::Value::Boolean(check.network));
                if let Some(paths) = &check.paths {
                    table.insert("paths".into(), strings_value(paths));
                }
                if check.materialize == Materialize::Changed {
                    table.insert("materialize".into(), string_value("changed"));
                }
                table.insert(
                    "materialize_timeout_s".into(),
                    uint_value(check.materialize_timeout_s),
                );
                table.insert("stage".into(), string_value(check.stage.as_str()));
                if let Some(globs) = &check.when_paths {
                    table.insert("when_paths".into(), strings_value(globs));
                }
                if let Some(producers) = &check.producers {
                    table.insert("producers".into(), strings_value(producers));
                }
                // A post check may not name these keys at all, not even with their defaults.
                if check.stage == Stage::Pre {
                    table.insert(
                        "retry_on_failure".into(),
                        uint_value(u64::from(check.retry_on_failure)),
                    );
                    table.insert(
                        "allow_flaky".into(),
                        toml::Value::Boolean(check.allow_flaky),
                    );
                }
                if check.baseline.is_some() {
                    table.insert("baseline".into(), string_value("base"));
                }
                if check.waivable {
                    table.insert("waivable".into(), toml::Value::Boolean(true));
                }
                if check.footprint {
                    table.insert("footprint".into(), toml::Value::Boolean(true));
                }
                toml::Value::Table(table)
            })
            .chain(policy.approvals.iter().map(|approval| {
                let mut table = toml::Table::new();
                table.insert("id".into(), string_value(&approval.id));
                table.insert("environment".into(), string_value(&approval.environment));
                table.insert("kind".into(), string_value("approval"));
                table.insert("when_paths".into(), strings_value(&approval.when_paths));
                if let Some(producers) = &approval.producers {
                    table.insert("producers".into(), strings_value(producers));
                }
                if let Some(carry) = approval.carry {
                    table.insert("carry".into(), toml::Value::Boolean(carry));
                }
                toml::Value::Table(table)
            }))
            .collect();
        root.insert("check".into(), toml::Value::Array(checks));
    } else if !policy.approvals.is_empty() {
        unreachable!("an approval check beside no check bay runs is refused");
    }
    if !policy.quarantine.is_empty() {
        let entries = policy
            .quarantine
            .iter()
            .map(|entry| {
                let mut table = toml::Table::new();
                table.insert("id".into(), string_value(&entry.id));
                table.insert("environment".into(), string_value(&entry.environment));
                table.insert("reason".into(), string_value(&entry.reason));
                table.insert("end".into(), string_value(&entry.end.to_string()));
                if let Some(owner) = &entry.owner {
                    table.insert("owner".into(), string_value(owner));
                }
                if let Some(since) = &entry.since {
                    table.insert("since".into(), string_value(since));
                }
                toml::Value::Table(table)
            })
            .collect();
        root.insert("quarantine".into(), toml::Value::Array(entries));
    }
    let limits = &policy.limits;
    let mut caps = toml::Table::new();
    for (key, cap) in [
        ("max_file_mib", limits.max_file_mib),
        ("max_files", limits.max_files),
        ("max_added_lines", limits.max_added_lines),
        ("max_waiting_approvals", limits.max_waiting_approvals),
    ] {
        if let Some(cap) = cap {
            caps.insert(key.into(), uint_value(cap));
        }
    }
    root.insert("limits".into(), toml::Value::Table(caps));
    if policy.reuse_unsigned || !policy.signing.is_all() {
        let mut table = toml::Table::new();
        if policy.reuse_unsigned {
            table.insert("reuse_unsigned".into(), toml::Value::Boolean(true));
        }
        if !policy.signing.is_all() {
            table.insert(
                "signing".into(),
                toml::Value::String(policy.signing.as_str().into()),
            );
        }
        root.insert("policy".into(), toml::Value::Table(table));
    }
    let agent = &policy.agent;
    let mut rules = toml::Table::new();
    rules.insert(
        "require_actor".into(),
        toml::Value::Boolean(agent.require_actor),
    );
    rules.insert(
        "require_actor_proof".into(),
        toml::Value::Boolean(agent.require_actor_proof),
    );
    if let Some(max) = agent.max_live_changes {
        rules.insert("max_live_changes".into(), uint_value(max));
    }
    root.insert("agent".into(), toml::Value::Table(rules));
    if !policy.locks.is_empty() {
        let mut locks = toml::Table::new();
        locks.insert("paths".into(), strings_value(&policy.locks));
        root.insert("locks".into(), toml::Value::Table(locks));
    }
    if !policy.dimensions.is_empty() {
        let dimensions = policy
            .dimensions
            .iter()
            .map(|dimension| {
                let mut table = toml::Table::new();
                table.insert("name".into(), string_value(&dimension.name));
                table.insert("kind".into(), string_value(&dimension.kind));
                table.insert("producers".into(), strings_value(&dimension.producers));
                toml::Value::Table(table)
            })
            .collect();
        root.insert("dimension".into(), toml::Value::Array(dimensions));
    }
    if !policy.profiles.is_empty() {
        let mut profiles = toml::Table::new();
        for (name, profile) in &policy.profiles {
            let mut table = toml::Table::new();
            table.insert("require".into(), strings_value(&profile.require));
            table.insert(
                "require_signed".into(),
                toml::Value::Boolean(profile.require_signed),
            );
            profiles.insert(name.clone(), toml::Value::Table(table));
        }
        root.insert("profile".into(), toml::Value::Table(profiles));
    }
    toml::to_string(&root).expect("a TOML table always serializes")
}

// ---------------------------------------------------------------------------------------------
// config

/// `.bay/config.toml` text: never a panic; an accepted config keeps its meaning when written
/// back out, agrees with a plain TOML reading, obeys its own rules, and holds only keys bay
/// acts on.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let parsed = Config::parse(&text);
    assert_eq!(parsed, Config::parse(&text), "parsing is deterministic");
    match parsed {
        Err(error) => assert_error_line(&text, error.0.line, &error.to_string()),
        Ok(config) => {
            let runner = &config.runner;
            assert!(
                runner.heartbeat_s < runner.lease_s,
                "heartbeat not under lease"
            );
            assert!(
                runner.takeover_s > runner.lease_s,
                "takeover not over lease"
            );
            assert!(
                (1..=16).contains(&runner.parallel_checks),
                "parallel_checks out of range"
            );
            assert_eq!(
                *runner,
                RunnerSettings {
                    lease_s: runner.lease_s,
                    heartbeat_s: runner.heartbeat_s,
                    takeover_s: runner.lease_s.saturating_mul(2),
                    execution_budget_s: runner.execution_budget_s,
                    publish_window_s: runner.publish_window_s,
                    parallel_checks: runner.parallel_checks,
                    bisect_post: runner.bisect_post,
                    ahead: runner.ahead,
                    footprint_lanes: runner.footprint_lanes,
                    batch: runner.batch,
                    ..RunnerSettings::default()
                },
                "a runner setting bay does not act on was read"
            );
            assert!(runner.ahead <= 16, "ahead over 16");
            assert!(
                (runner.ahead == 0 && !runner.footprint_lanes && runner.batch.is_none())
                    || config.evidence_reuse,
                "ahead, footprint_lanes or batch without evidence reuse"
            );
            if let Some(batch) = runner.batch {
                assert!(
                    2 <= batch.min && batch.min <= batch.max && batch.max <= 64,
                    "a batch of {}..{} members",
                    batch.min,
                    batch.max
                );
                assert!(batch.max_failure_ppm <= 1_000_000, "a rate above 1");
            }
            assert!(
                !config
                    .trailers
                    .intent
                    .eq_ignore_ascii_case(&config.trailers.actor),
                "one trailer for Intent and Actor"
            );
            for key in [&config.trailers.intent, &config.trailers.actor] {
                assert!(
                    !bay_core::lineage::is_own_trailer(key),
                    "bay accepted its own trailer {key} for Intent or Actor"
                );
            }
            let table: toml::Table = match toml::from_str(&text) {
                Ok(table) => table,
                Err(error) => panic!("bay accepted a config that is not TOML: {error}"),
            };
            for key in table.keys() {
                assert!(
                    [
                        "main", "remote", "trailers", "runner", "policy", "hold", "plugin", "agent"
                    ]
                    .contains(&key.as_str()),
                    "bay accepted {key}, which it does not act on"
                );
            }
            // Every [[hold]] is one of main (targets are refused), read as written.
            let holds = table.get("hold").and_then(toml::Value::as_array);
            assert_eq!(
                config.holds.len(),
                holds.map_or(0, Vec::len),
                "a hold was lost"
            );
            for (hold, written) in config.holds.iter().zip(holds.into_iter().flatten()) {
                assert_eq!(
                    bay_core::time::parse_utc_second(&hold.end_text),
                    Some(hold.end),
                    "a hold's end reads back"
                );
                assert_eq!(
                    written.get("end").and_then(toml::Value::as_str),
                    Some(hold.end_text.as_str())
                );
                assert!(!hold.reason.trim().is_empty(), "a hold says why");
            }
            // Of the plugins only the hold plugin is acted on, read as written.
            let plugin = table.get("plugin").and_then(toml::Value::as_table);
            for key in plugin.into_iter().flat_map(toml::Table::keys) {
                assert_eq!(key, "hold", "bay accepted [plugin.{key}]");
            }
            let hold = plugin
                .and_then(|plugin| plugin.get("hold"))
                .and_then(toml::Value::as_table);
            let command = hold
                .and_then(|hold| hold.get("command"))
                .and_then(toml::Value::as_str);
            match (&config.hold_plugin, command) {
                (None, None) => {}
                (Some(read), Some(command)) => {
                    let words: Vec<&str> = command.split_whitespace().collect();
                    assert_eq!(words.first(), Some(&read.program.as_str()));
                    assert_eq!(words[1..], read.args, "the hold plugin's words misread");
                    assert!(
                        (1..=120).contains(&read.timeout_s),
                        "timeout_s out of range"
                    );
                    assert!(
                        !read.program.starts_with('/')
                            && !read.program.split('/').any(|p| p == ".."),
                        "a hold plugin outside the repository"
                    );
                }
                (read, written) => panic!("the hold plugin misread: {read:?} from {written:?}"),
            }
            if let Some(policy) = table.get("policy").and_then(toml::Value::as_table) {
                for key in policy.keys() {
                    assert_eq!(key, "evidence_reuse", "bay accepted [policy] {key}");
                }
                // Left out, reuse is on only when a throughput key is set.
                let reuse = policy.get("evidence_reuse").and_then(toml::Value::as_str);
                let throughput = config.runner.ahead > 0
                    || config.runner.footprint_lanes
                    || config.runner.batch.is_some();
                assert_eq!(
                    reuse == Some("exact-inputs") || (reuse.is_none() && throughput),
                    config.evidence_reuse,
                    "evidence_reuse misread"
                );
            }
            if let Some(runner) = table.get("runner").and_then(toml::Value::as_table) {
                for key in runner.keys() {
                    assert!(
                        [
                            "lease_s",
                            "heartbeat_s",
                            "execution_budget_s",
                            "publish_window_s",
                            "parallel_checks",
                            "bisect_post",
                            "ahead",
                            "footprint_lanes",
                            "batch",
                        ]
                        .contains(&key.as_str()),
                        "bay accepted [runner] {key}, which it does not act on"
                    );
                }
            }
            let product = table
                .get("agent")
                .and_then(|agent| agent.get("product"))
                .and_then(toml::Value::as_str);
            assert_eq!(
                product,
                config.agent.as_ref().map(|agent| agent.product.as_str()),
                "[agent] product misread"
            );
            let string = |key: &str| table.get(key).and_then(toml::Value::as_str);
            assert_eq!(string("main"), config.main.as_deref(), "main misread");
            assert_eq!(string("remote"), config.remote.as_deref(), "remote misread");
            let written = config_to_toml(&config);
            match Config::parse(&written) {
                Ok(again) => assert_eq!(again, config, "the config lost data:\n{written}"),
                Err(error) => {
                    panic!("an accepted config, written out, is refused: {error}\n{written}")
                }
            }
        }
    }
}

/// The parts of the config bay acts on, as TOML.
fn config_to_toml(config: &Config) -> String {
    let mut root = toml::Table::new();
    if let Some(main) = &config.main {
        root.insert("main".into(), toml::Value::String(main.clone()));
    }
    if let Some(remote) = &config.remote {
        root.insert("remote".into(), toml::Value::String(remote.clone()));
    }
    let mut trailers = toml::Table::new();
    trailers.insert(
        "intent".into(),
        toml::Value::String(config.trailers.intent.clone()),
    );
    trailers.insert(
        "actor".into(),
        toml::Value::String(config.trailers.actor.clone()),
    );
    root.insert("trailers".into(), toml::Value::Table(trailers));
    let r = &config.runner;
    let mut runner = toml::Table::new();
    runner.insert("lease_s".into(), uint_value(r.lease_s));
    runner.insert("heartbeat_s".into(), uint_value(r.heartbeat_s));
    if let Some(budget) = r.execution_budget_s {
        runner.insert("execution_budget_s".into(), uint_value(budget));
    }
    runner.insert("publish_window_s".into(), uint_value(r.publish_window_s));
    runner.insert(
        "parallel_checks".into(),
        uint_value(u64::from(r.parallel_checks)),
    );
    runner.insert("bisect_post".into(), toml::Value::Boolean(r.bisect_post));
    if r.footprint_lanes {
        runner.insert("footprint_lanes".into(), toml::Value::Boolean(true));
    }
    if r.ahead > 0 {
        runner.insert("ahead".into(), uint_value(u64::from(r.ahead)));
    }
    if let Some(batch) = r.batch {
        let mut table = toml::Table::new();
        table.insert("min".into(), uint_value(u64::from(batch.min)));
        table.insert("max".into(), uint_value(u64::from(batch.max)));
        let rate = f64::from(batch.max_failure_ppm) / 1_000_000.0;
        table.insert("max_failure_rate".into(), toml::Value::Float(rate));
        runner.insert("batch".into(), toml::Value::Table(table));
    }
    root.insert("runner".into(), toml::Value::Table(runner));
    if config.evidence_reuse {
        let mut policy = toml::Table::new();
        policy.insert(
            "evidence_reuse".into(),
            toml::Value::String("exact-inputs".into()),
        );
        root.insert("policy".into(), toml::Value::Table(policy));
    }
    if let Some(plugin) = &config.hold_plugin {
        let mut hold = toml::Table::new();
        let words: Vec<&str> = std::iter::once(plugin.program.as_str())
            .chain(plugin.args.iter().map(String::as_str))
            .collect();
        hold.insert("command".into(), toml::Value::String(words.join(" ")));
        hold.insert("timeout_s".into(), uint_value(plugin.timeout_s));
        let mut plugins = toml::Table::new();
        plugins.insert("hold".into(), toml::Value::Table(hold));
        root.insert("plugin".into(), toml::Value::Table(plugins));
    }
    if !config.holds.is_empty() {
        let holds = config
            .holds
            .iter()
            .map(|hold| {
                let mut table = toml::Table::new();
                table.insert("end".into(), toml::Value::String(hold.end_text.clone()));
                table.insert("reason".into(), toml::Value::String(hold.reason.clone()));
                toml::Value::Table(table)
            })
            .collect();
        root.insert("hold".into(), toml::Value::Array(holds));
    }
    if let Some(agent) = &config.agent {
        let mut table = toml::Table::new();
        table.insert(
            "product".into(),
            toml::Value::String(agent.product.as_str().into()),
        );
        let files = agent.instructions.iter().cloned().map(toml::Value::String);
        table.insert("instructions".into(), toml::Value::Array(files.collect()));
        root.insert("agent".into(), toml::Value::Table(table));
    }
    toml::to_string(&root).expect("a TOML table always serializes")
}

// ---------------------------------------------------------------------------------------------
// judge

/// One check run, judged. The first byte picks the mode. Even: raw, where the next byte is
/// the expected minimum, the one after it flags (bit 0 clear: the request's candidate is the
/// one the result names, so that a real result can pass; bits 1-2: exit 0, 0, 1 or a signal;
/// bits 3+4: timed out; bits 5+6: could not run), and the rest is stdout. Odd: a result
/// document built field by field from the rest.
pub fn judge(data: &[u8]) {
    match data {
        [mode, minimum, flags, stdout @ ..] if mode % 2 == 0 => {
            judge_raw(u64::from(*minimum), *flags, stdout)
        }
        [_, rest @ ..] => {
            let _ = judge_built(&mut Unstructured::new(rest));
        }
        [] => {}
    }
}

fn judge_raw(expected_minimum: u64, flags: u8, stdout: &[u8]) {
    let mut request = CheckRequest::arbitrary(&mut Unstructured::new(&[]))
        .expect("a request builds from no data");
    if flags & 1 == 0
        && let Some(candidate) = exercised_in(stdout)
    {
        request.candidate = candidate;
    }
    let exit = CheckExit {
        stdout: stdout.to_vec(),
        exit_code: match (flags >> 1) & 3 {
            0 | 1 => Some(0),
            2 => Some(1),
            _ => None,
        },
        timed_out: flags & 0b1_1000 == 0b1_1000,
        millis: 1,
        infra: (flags & 0b110_0000 == 0b110_0000).then(|| "no sandbox".to_owned()),
        sandbox_read: Vec::new(),
        adapter: Vec::new(),
        stderr_log: None,
    };
    let extras = EvidenceExtras {
        producer: RUNNER.to_owned(),
        op: "aaaaaaaa.1".to_owned(),
        candidate_id: "aaaaaaaa.1.1".to_owned(),
        at: EPOCH,
        definition: String::new(),
    };
    judge_and_check(&request, expected_minimum, &exit, extras);
}

fn judge_built(u: &mut Unstructured<'_>) -> Result<()> {
    let expected_minimum: u64 = match u.int_in_range(0..=7u8)? {
        7 => u.arbitrary()?,
        n => u64::from(n),
    };
    let request = CheckRequest::arbitrary(u)?;
    let stdout = result_document(u, &request)?;
    let exit = check_exit(u, stdout)?;
    let extras = EvidenceExtras::arbitrary(u)?;
    judge_and_check(&request, expected_minimum, &exit, extras);
    Ok(())
}

fn judge_and_check(
    request: &CheckRequest,
    expected_minimum: u64,
    exit: &CheckExit,
    extras: EvidenceExtras,
) {
    let judgement = judge_run(request, expected_minimum, exit);
    assert_eq!(
        judgement,
        judge_run(request, expected_minimum, exit),
        "judging is deterministic"
    );
    assert_judgement(request, expected_minimum, exit, &judgement);
    if let Judgement::Judged(judged) = &judgement {
        let record = EvidenceRecord::new(request, judged, exit, extras);
        let json = record.to_json();
        assert_eq!(
            EvidenceRecord::from_json(&json).as_ref(),
            Ok(&record),
            "the evidence record lost data"
        );
    }
}

/// The commit and tree a result says it exercised, when both are object ids.
fn exercised_in(stdout: &[u8]) -> Option<CommitTree> {
    let doc: Value = serde_json::from_slice(stdout).ok()?;
    let exercised = doc.get("exercised")?;
    let read = |key: &str| Oid::parse(exercised.get(key)?.as_str()?).ok();
    Some(CommitTree {
        commit: read("commit")?,
        tree: read("tree")?,
    })
}

// ---------------------------------------------------------------------------------------------
// record

/// Step messages and chains. The first byte picks the mode: a raw commit message (the rest,
/// as text), one arbitrary step through its message, or a chain of steps folded whole and
/// step by step.
pub fn record(data: &[u8]) {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    match mode % 4 {
        0 => {
            if let Ok(step) = Step::from_message(&String::from_utf8_lossy(rest)) {
                assert_message_round_trip(&step);
            }
        }
        1 => {
            let _ = one_step(&mut u);
        }
        _ => {
            let _ = chain(&mut u);
        }
    }
}

fn one_step(u: &mut Unstructured<'_>) -> Result<()> {
    let step = Step::arbitrary(u)?;
    let read = Step::from_message(&step.to_message());
    if step_ids_are_valid(&step) {
        assert_eq!(read.as_ref(), Ok(&step), "a step lost data in its message");
    } else {
        assert!(read.is_err(), "a step with a zero counter was read back");
    }
    Ok(())
}

fn chain(u: &mut Unstructured<'_>) -> Result<()> {
    let steps = plausible_chain(u)?;
    assert_fold(&steps);
    Ok(())
}

/// A chain on one of the world's changes, as honest writers make it most of the time, with
/// every queue place naming the change's first operation.
fn plausible_chain(u: &mut Unstructured<'_>) -> Result<Vec<Step>> {
    let change = change_id(u)?;
    let len = u.int_in_range(0..=12)?;
    let places: Vec<(u64, OpId)> = (1..=QUEUE_PLACES).map(|seq| (seq, change.op(1))).collect();
    ChainState::new(change).chain(u, len, &places)
}

fn assert_message_round_trip(step: &Step) {
    let message = step.to_message();
    match Step::from_message(&message) {
        Ok(again) => assert_eq!(&again, step, "a step lost data:\n{message}"),
        Err(error) => panic!("bay wrote a step it cannot read: {error}\n{message}"),
    }
}

/// Folds `steps` whole, step by step from every prefix, and through their messages: all must
/// agree, and an accepted record must obey the record's rules.
fn assert_fold(steps: &[Step]) {
    let whole = ChangeRecord::fold(steps);
    for step in steps.iter().filter(|step| step_ids_are_valid(step)) {
        assert_message_round_trip(step);
    }
    if steps.iter().all(step_ids_are_valid) {
        let read: Vec<Step> = steps
            .iter()
            .map(|s| Step::from_message(&s.to_message()).expect("a valid step reads back"))
            .collect();
        assert_eq!(
            ChangeRecord::fold(&read),
            whole,
            "messages changed the fold"
        );
    }
    for k in 1..=steps.len() {
        let Ok(mut record) = ChangeRecord::fold(&steps[..k]) else {
            continue;
        };
        let mut incremental = Ok(());
        for step in &steps[k..] {
            incremental = record.append(step);
            if incremental.is_err() {
                break;
            }
        }
        match (&whole, incremental) {
            (Ok(whole), Ok(())) => assert_eq!(&record, whole, "append differs from fold"),
            (Err(whole), Err(error)) => assert_eq!(&error, whole, "append refused differently"),
            (whole, incremental) => {
                panic!("fold says {whole:?}, append from step {k} says {incremental:?}")
            }
        }
    }
    if let Ok(record) = &whole {
        assert_record_rules(record, steps);
    }
}

fn assert_record_rules(record: &ChangeRecord, steps: &[Step]) {
    assert_eq!(record.steps, steps.len());
    assert_eq!(Some(&record.change), steps.first().map(|s| &s.change));
    let merged = record
        .ops
        .iter()
        .filter(|op| op.state == OpState::Merged)
        .count();
    assert!(merged <= 1, "a change merged twice");
    for (index, op) in record.ops.iter().enumerate() {
        assert_eq!(op.id.change, record.change);
        assert_eq!(op.id.n as usize, index + 1, "operations out of order");
        if index + 1 < record.ops.len() {
            assert!(op.state.is_terminal(), "an older operation still live");
        }
        assert_eq!(
            op.owner.is_some(),
            op.state == OpState::Running,
            "owner and state disagree on {}",
            op.id
        );
        if op.state == OpState::Merged {
            assert!(!op.candidates.is_empty(), "merged with no candidate");
        }
        assert_eq!(op.outcome.is_some(), op.state.is_terminal());
        for (attempt, candidate) in op.candidates.iter().enumerate() {
            assert_eq!(candidate.id, op.id.candidate(attempt as u32 + 1));
        }
    }
    if record.merged().is_some() {
        assert!(record.ended());
    }
}

// ---------------------------------------------------------------------------------------------
// Driving machines.

/// What a driver has seen of one machine: the ids it handed out and heard back, the actions
/// not answered yet, and the clock.
#[derive(Debug, Default)]
struct Driver {
    issued: BTreeSet<ActionId>,
    answered: BTreeSet<ActionId>,
    outstanding: Vec<(ActionId, Action)>,
    now: Timestamp,
    /// The remote's refs as the last plausible fetch gave them.
    refs: Refs,
    /// The queue places read back so far, and the operation each names.
    places: Vec<(u64, OpId)>,
    /// The commit of each candidate the machine recorded, by id, as its pushes said.
    candidates: BTreeMap<CandidateId, Oid>,
    /// Every check run answered: the run as asked for, and what the driver said it printed.
    check_runs: Vec<(CheckRun, CheckExit)>,
    /// Steps the machine wrote into the clone's store unpushed (`WriteSteps`, as `merge
    /// --wait` writes its request), each with the tip its chain stood on: a push that carries
    /// one appends on it, leased on that tip.
    unpushed: BTreeMap<Oid, Option<Oid>>,
    outcome: Option<BayResult>,
}

/// Who is being driven, for the promises that differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Runner,
    Agent,
}

impl Driver {
    fn new() -> Driver {
        Driver {
            now: EPOCH,
            ..Driver::default()
        }
    }

    /// Drains the machine's actions, checking each, and its timeout and outcome.
    fn drain<M: Machine>(&mut self, machine: &mut M, role: Role) {
        let done = machine.outcome().is_some();
        while let Some((id, action)) = machine.poll_action() {
            assert!(
                self.issued.insert(id),
                "action id {} handed out twice",
                id.0
            );
            assert!(
                !done || role == Role::Runner,
                "an action after the outcome: {action:?}"
            );
            if let Action::Push(plan) = &action {
                assert_leased(plan, role, &self.unpushed);
                self.assert_passes_warranted(plan);
            }
            self.outstanding.push((id, action));
        }
        let _ = machine.poll_timeout();
        let outcome = machine.outcome().cloned();
        if let Some(previous) = &self.outcome {
            assert_eq!(outcome.as_ref(), Some(previous), "the outcome changed");
        }
        if let Some(result) = &outcome {
            let json = serde_json::to_string(result).expect("a result serializes");
            let back: BayResult = serde_json::from_str(&json).expect("a result reads back");
            assert_eq!(&back, result, "the result lost data");
        }
        self.outcome = outcome;
    }

    fn advance(&mut self, u: &mut Unstructured<'_>, deadline: Option<Timestamp>) -> Result<()> {
        let now = self.now.millis();
        let next = match u.int_in_range(0..=15)? {
            0..=5 => now.saturating_add(u.int_in_range(0..=1_000)?),
            6..=9 => match deadline {
                Some(at) => at.millis().saturating_add(u.int_in_range(0..=100)?),
                None => now,
            },
            10..=12 => now.saturating_add(u.int_in_range(0..=120_000)?),
            13 => now.saturating_sub(u.int_in_range(0..=120_000)?),
            14 => u.arbitrary()?,
            _ => now,
        };
        self.now = Timestamp(next);
        Ok(())
    }

    /// An id this driver was never handed.
    fn unissued(&self, u: &mut Unstructured<'_>) -> Result<ActionId> {
        let top = self.issued.iter().next_back().map_or(0, |id| id.0);
        let id = match u.int_in_range(0..=3)? {
            0 => 0,
            1 => u64::MAX,
            2 => u.arbitrary()?,
            _ => top.saturating_add(u.int_in_range(1..=3)?),
        };
        Ok(ActionId(id))
    }

    /// Feeds one event chosen from `u`, checking what the machine says back.
    fn step<M: Machine>(
        &mut self,
        u: &mut Unstructured<'_>,
        machine: &mut M,
        role: Role,
    ) -> Result<()> {
        self.advance(u, machine.poll_timeout().map(|d| d.at))?;
        let now = self.now;
        match u.int_in_range(0..=19)? {
            0..=3 => {
                let result = machine.handle(now, Event::Tick);
                assert!(result.is_ok(), "a tick refused: {result:?}");
            }
            choice @ 4..=16 if !self.outstanding.is_empty() => {
                let index = u.choose_index(self.outstanding.len())?;
                let (id, action) = self.outstanding.remove(index);
                let completion = if choice == 16 {
                    Completion::arbitrary(u)?
                } else {
                    self.answer(u, &action, role)?
                };
                if let (Action::RunCheck(run), Completion::CheckExited(exit)) =
                    (&action, &completion)
                {
                    self.check_runs.push(((**run).clone(), exit.clone()));
                }
                if let (Action::WriteSteps(append), Completion::StepsWritten(Ok(oids))) =
                    (&action, &completion)
                {
                    for oid in oids {
                        self.unpushed.insert(oid.clone(), append.parent.clone());
                    }
                }
                assert!(self.answered.insert(id));
                // Of the right kind it is taken, of the wrong kind it may be refused; either
                // way no panic, and the id is spent.
                let _ = machine.handle(now, Event::Done(id, completion));
            }
            17 if !self.answered.is_empty() => {
                let index = u.choose_index(self.answered.len())?;
                let id = *self
                    .answered
                    .iter()
                    .nth(index)
                    .expect("the index is in range");
                let completion = Completion::arbitrary(u)?;
                let result = machine.handle(now, Event::Done(id, completion));
                assert!(
                    result.is_err(),
                    "a second completion for action {} was taken",
                    id.0
                );
            }
            _ => {
                let id = self.unissued(u)?;
                if !self.issued.contains(&id) {
                    let completion = Completion::arbitrary(u)?;
                    let result = machine.handle(now, Event::Done(id, completion));
                    assert!(
                        result.is_err(),
                        "a completion for action {}, never issued, was taken",
                        id.0
                    );
                }
            }
        }
        self.drain(machine, role);
        Ok(())
    }

    /// A check step that says `pass` rests on a run the driver answered for that check, on
    /// that candidate's commit, whose output warrants a pass against the request as sent.
    fn assert_passes_warranted(&mut self, plan: &PushPlan) {
        for step in plan.appends.iter().flat_map(|append| &append.steps) {
            match &step.body {
                StepBody::Candidate {
                    candidate, commit, ..
                } => {
                    self.candidates.insert(candidate.clone(), commit.clone());
                }
                StepBody::Check {
                    candidate,
                    check,
                    verdict: Verdict::Pass,
                    ..
                } => {
                    let commit = self
                        .candidates
                        .get(candidate)
                        .unwrap_or_else(|| panic!("a pass on {candidate}, never recorded"));
                    let warranted = self.check_runs.iter().any(|(run, exit)| {
                        &run.check.id == check
                            && &run.candidate == commit
                            && run.request.candidate.commit == *commit
                            && pass_warranted(&run.request, run.check.expected_minimum, exit)
                                .is_ok()
                    });
                    assert!(
                        warranted,
                        "a pass of {check} on {candidate} that no run answered warrants"
                    );
                }
                _ => {}
            }
        }
    }

    /// Feeds events until the input or the budget runs out.
    fn run<M: Machine>(&mut self, u: &mut Unstructured<'_>, machine: &mut M, role: Role) {
        self.drain(machine, role);
        for _ in 0..MAX_EVENTS {
            if u.is_empty() || self.step(u, machine, role).is_err() {
                break;
            }
        }
    }

    /// A plausible answer to `action` from a remote of the tiny world, with faults.
    fn answer(
        &mut self,
        u: &mut Unstructured<'_>,
        action: &Action,
        role: Role,
    ) -> Result<Completion> {
        Ok(match action {
            Action::Fetch(spec) => {
                let fetched = maybe_fault(u, 16, |u| self.fetch(u, role))?;
                if let Ok(refs) = &fetched {
                    self.refs = refs.clone();
                }
                // The world's remote holds more; the answer names only what was asked.
                Completion::Fetched(fetched.map(|refs| {
                    refs.into_iter()
                        .filter(|(name, _)| spec.covers(name))
                        .collect()
                }))
            }
            Action::ReadSteps { oids } => {
                let refs = self.refs.clone();
                let read = maybe_fault(u, 16, |u| read_steps(u, oids, &refs, &mut self.places))?;
                Completion::StepsRead(read)
            }
            Action::ReadChains { chains } => {
                let places = self.places.clone();
                Completion::ChainsRead(maybe_fault(u, 16, |u| read_chains(u, chains, &places))?)
            }
            Action::ReadCompacted { changes } => Completion::ChainsRead(maybe_fault(u, 16, |u| {
                changes
                    .iter()
                    .map(|change| {
                        let file = Option::<Vec<u8>>::arbitrary(u)?;
                        let shard = oid(u)?;
                        Ok(bay_core::compact::read_back(
                            change,
                            &shard,
                            file.as_deref(),
                        ))
                    })
                    .collect()
            })?),
            // Main's config: none, a hold plugin, or a hold window, so the runner asks the plugin.
            Action::ReadFile { path, .. } if path == bay_core::config::CONFIG_PATH => {
                Completion::FileRead(maybe_fault(u, 16, |u| {
                    Ok(match u.int_in_range(0..=3)? {
                        0 => None,
                        1 => Some(Vec::<u8>::arbitrary(u)?),
                        2 => Some(
                            b"[[hold]]\nend = \"2099-01-01T00:00:00Z\"\nreason = \"r\"\n".to_vec(),
                        ),
                        _ => Some(b"[plugin.hold]\ncommand = \"scripts/bay-hold\"\n".to_vec()),
                    })
                })?)
            }
            // An intent's compacted generation: none, or a record of any generation and change.
            Action::ReadFile { path, .. } if path.starts_with("intents/") => {
                Completion::FileRead(maybe_fault(u, 16, |u| {
                    Ok(match u.int_in_range(0..=3)? {
                        0 => None,
                        1 => Some(Vec::<u8>::arbitrary(u)?),
                        _ => {
                            let change = change_id(u)?;
                            let generation = u.int_in_range(1..=3)?;
                            let text =
                                format!("{{\"generation\":{generation},\"change\":\"{change}\"}}");
                            Some(text.into_bytes())
                        }
                    })
                })?)
            }
            Action::ReadFile { .. } => Completion::FileRead(maybe_fault(u, 16, |u| {
                Ok(match u.int_in_range(0..=15)? {
                    0 => None,
                    1 => Some(Vec::<u8>::arbitrary(u)?),
                    _ => Some(pick(u, &POLICIES)?.as_bytes().to_vec()),
                })
            })?),
            Action::ReadTrees { commits } => Completion::TreesRead(maybe_fault(u, 16, |u| {
                commits.iter().map(|_| oid(u)).collect()
            })?),
            Action::ReadFiles { commits, .. } => Completion::FilesRead(maybe_fault(u, 16, |u| {
                commits.iter().map(|_| Vec::arbitrary(u)).collect()
            })?),
            Action::ReadNotes { .. } => Completion::NotesRead(maybe_fault(u, 16, |u| {
                let mut lines = Vec::new();
                for _ in 0..u.int_in_range(0..=2)? {
                    lines.push(word(u, &["{}", "not json", "{\"verdict\":\"pass\"}"])?);
                }
                Ok(lines)
            })?),
            Action::TestMerge { .. } => Completion::MergeTested(maybe_fault(u, 16, |u| {
                Ok(if u.ratio(1, 3)? {
                    vec![word(u, &["src/a.rs", "docs/b.md"])?]
                } else {
                    Vec::new()
                })
            })?),
            Action::InspectViews { changes } => {
                Completion::ViewsInspected(maybe_fault(u, 16, |u| {
                    let mut facts = Vec::new();
                    for change in changes {
                        if u.ratio(3, 4)? {
                            facts.push(bay_core::machine::ViewFacts {
                                change: change.clone(),
                                head: if u.arbitrary()? { Some(oid(u)?) } else { None },
                                clean: u.arbitrary()?,
                                locked: u.ratio(1, 8)?,
                            });
                        }
                    }
                    Ok(facts)
                })?)
            }
            Action::ReleaseView { .. } => {
                Completion::ViewReleased(maybe_fault(u, 16, |u| u.arbitrary())?)
            }
            Action::ReadRegistry { .. } => {
                Completion::RegistryRead(maybe_fault(u, 16, |u| u.arbitrary())?)
            }
            Action::WriteRegistry(_) => {
                Completion::RegistryWritten(maybe_fault(u, 16, |u| u.arbitrary())?)
            }
            Action::ReadCommits { commits } => {
                let count = commits.len();
                Completion::CommitsRead(maybe_fault(u, 16, |u| {
                    (0..count).map(|_| u.arbitrary()).collect()
                })?)
            }
            Action::MergeBase { one, two } => {
                Completion::MergeBaseFound(maybe_fault(u, 16, |u| {
                    Ok(match u.int_in_range(0..=3)? {
                        0 => None,
                        1 => Some(one.clone()),
                        2 => Some(two.clone()),
                        _ => Some(oid(u)?),
                    })
                })?)
            }
            Action::ReadLog { .. } => Completion::LogRead(maybe_fault(u, 16, |u| {
                let mut commits = Vec::new();
                for _ in 0..u.int_in_range(0..=3)? {
                    let trailer = word(
                        u,
                        &[
                            "Reverts: c7k2m4qa",
                            "Fixes: not-an-id",
                            "Supersedes: bhjokbll",
                            "",
                        ],
                    )?;
                    commits.push(RawStep {
                        oid: oid(u)?,
                        message: format!(
                            "subject\n\nChange-Id: {}\nBay-Op: x\n{trailer}\n",
                            change_id(u)?
                        ),
                    });
                }
                Ok(commits)
            })?),
            // What the clone holds is what the world's last answered fetch brought.
            Action::ReadSeen { names } => {
                let mut seen = std::collections::BTreeMap::new();
                for name in names {
                    if u.arbitrary()? {
                        seen.insert(name.clone(), bay_core::time::Timestamp(u.arbitrary()?));
                    }
                }
                Completion::SeenRead(maybe_fault(u, 16, |_| Ok(seen))?)
            }
            Action::ReadHeld { prefix, limit } => {
                let held = self
                    .refs
                    .iter()
                    .filter(|(name, _)| name.starts_with(prefix.as_str()))
                    .take(*limit as usize)
                    .map(|(name, oid)| (name.clone(), oid.clone()))
                    .collect();
                Completion::HeldRead(maybe_fault(u, 16, |_| Ok(held))?)
            }
            Action::ReadAdded { .. } => Completion::AddedRead(maybe_fault(u, 16, |u| {
                Option::<u8>::arbitrary(u)?.map(|_| oid(u)).transpose()
            })?),
            Action::ReadHistory(_) => Completion::HistoryRead(maybe_fault(u, 16, |u| {
                let mut commits = Vec::new();
                for _ in 0..u.int_in_range(0..=3)? {
                    let parents = (0..u.int_in_range(0..=2)?)
                        .map(|_| oid(u))
                        .collect::<Result<Vec<Oid>>>()?;
                    commits.push(bay_core::machine::MainCommit {
                        oid: oid(u)?,
                        off_first_parent: u64::from(parents.len() > 1),
                        parents,
                        at: Timestamp(u.arbitrary()?),
                        committer: "someone <s@example>".into(),
                        message: format!("subject\n\nChange-Id: {}\nBay-Op: x\n", change_id(u)?),
                        brought: Vec::new(),
                    });
                }
                Ok(commits)
            })?),
            Action::ReadStats { .. } => Completion::StatsRead(maybe_fault(u, 16, |u| {
                let paths = ["assets/c.bin", "docs/b.md", "src/a.rs"];
                let mut stats = Vec::new();
                for path in &paths[..u.int_in_range(0..=3)?] {
                    stats.push(PathStat {
                        path: (*path).to_owned(),
                        bytes: Option::<u16>::arbitrary(u)?.map(|kib| u64::from(kib) * 1024),
                        created: u.arbitrary()?,
                        added_lines: Option::<u8>::arbitrary(u)?.map(u64::from),
                        removed_lines: Option::<u8>::arbitrary(u)?.map(u64::from),
                    });
                }
                Ok(stats)
            })?),
            Action::WriteSteps(append) => Completion::StepsWritten(maybe_fault(u, 16, |u| {
                append.steps.iter().map(|_| oid(u)).collect()
            })?),
            Action::Push(plan) => Completion::Pushed(push_report(u, plan)?),
            Action::BuildCandidate(_) => Completion::CandidateBuilt(maybe_fault(u, 16, |u| {
                Ok(if u.ratio(1, 8)? {
                    BuildResult::Conflict {
                        paths: vec![word(u, &["src/a.rs"])?],
                    }
                } else if u.ratio(1, 32)? {
                    BuildResult::Missing {
                        commits: vec![oid(u)?],
                    }
                } else {
                    let base_tree = oid(u)?;
                    BuildResult::Clean {
                        commit: oid(u)?,
                        tree: if u.ratio(1, 8)? {
                            base_tree.clone()
                        } else {
                            oid(u)?
                        },
                        base_tree,
                        changed_paths: vec![word(u, &["src/a.rs", "docs/b.md"])?],
                    }
                })
            })?),
            Action::RunCheck(run) => {
                let stdout = result_document(u, &run.request)?;
                Completion::CheckExited(check_exit(u, stdout)?)
            }
            Action::RunPlugin(_) => Completion::PluginExited(plugin_exit(u)?),
            Action::FreezeDraft { .. } => {
                Completion::DraftFrozen(maybe_fault(u, 16, merged_draft)?)
            }
            Action::RefreshDraft { .. } => {
                Completion::DraftRefreshed(maybe_fault(u, 16, merged_draft)?)
            }
            Action::MakeView { change, .. } => {
                Completion::ViewMade(maybe_fault(u, 16, |_| Ok(format!("/views/{change}")))?)
            }
        })
    }

    /// The remote's refs: the last ones with a few changes most of the time, else fresh.
    fn fetch(&mut self, u: &mut Unstructured<'_>, role: Role) -> Result<Refs> {
        let names = ref_names(role);
        if !self.refs.is_empty() && u.ratio(2, 3)? {
            let mut remote = self.refs.clone();
            for _ in 0..u.int_in_range(0..=2)? {
                let name = u.choose(&names)?.clone();
                if u.ratio(1, 3)? {
                    remote.remove(&name);
                } else {
                    remote.insert(name, oid(u)?);
                }
            }
            return Ok(remote);
        }
        let mut remote = Refs::new();
        for name in names {
            let keep = if name == refs::main(MAIN) {
                u.ratio(15, 16)?
            } else if name.starts_with(refs::CHANGES) || name.starts_with(refs::QUEUE) {
                u.ratio(2, 3)?
            } else {
                u.ratio(1, 4)?
            };
            if keep {
                remote.insert(name, oid(u)?);
            }
        }
        if u.ratio(1, 16)? {
            remote.insert(String::arbitrary(u)?, oid(u)?);
        }
        Ok(remote)
    }
}

/// Every ref name the tiny world has.
fn ref_names(role: Role) -> Vec<String> {
    let mut names = vec![refs::main(MAIN)];
    for change in every_change() {
        names.push(refs::change(&change));
        names.push(refs::landed(&change));
    }
    for seq in 1..=QUEUE_PLACES {
        names.push(refs::queue(seq));
    }
    for intent in INTENTS {
        for generation in 1..=2 {
            names.push(refs::intent(&intent_digest(intent), generation));
        }
    }
    if role == Role::Runner {
        names.push(refs::evidence(RUNNER));
    }
    names
}

/// Queue places read back: request steps (of a first operation, mostly) whose place is the
/// one their oid sits at, mostly. Remembers which operation each place names.
fn read_steps(
    u: &mut Unstructured<'_>,
    oids: &[Oid],
    remote: &Refs,
    places: &mut Vec<(u64, OpId)>,
) -> Result<Vec<RawStep>> {
    let mut raw = Vec::with_capacity(oids.len());
    for oid in oids {
        if u.ratio(1, 16)? {
            continue;
        }
        let seq = remote
            .iter()
            .find(|(name, value)| *value == oid && refs::parse_queue(name).is_some())
            .and_then(|(name, _)| refs::parse_queue(name));
        let seq = match seq {
            Some(seq) if u.ratio(15, 16)? => seq,
            _ => u.int_in_range(1..=QUEUE_PLACES)?,
        };
        let change = change_id(u)?;
        let mut state = ChainState::new(change.clone());
        let step = if u.ratio(15, 16)? {
            let op = if u.ratio(3, 4)? {
                change.op(1)
            } else {
                op_id(u, &change)?
            };
            places.retain(|(place, _)| *place != seq);
            places.push((seq, op.clone()));
            let body = StepBody::Request {
                op,
                draft: self::oid(u)?,
                base: self::oid(u)?,
                seq,
            };
            let actor = pick(u, &ACTORS)?;
            state.step(u, actor, body)?
        } else {
            state.start(u)?
        };
        raw.push(RawStep {
            oid: oid.clone(),
            message: message(u, &step)?,
        });
    }
    Ok(raw)
}

/// Chains read back, newest step first, their newest step at the asked tip.
fn read_chains(
    u: &mut Unstructured<'_>,
    queries: &[ChainQuery],
    places: &[(u64, OpId)],
) -> Result<Vec<ChainRead>> {
    let mut reads = Vec::with_capacity(queries.len());
    for query in queries {
        if u.ratio(1, 16)? {
            continue;
        }
        if u.ratio(1, 32)? {
            reads.push(ChainRead::unreadable(query, "a blob, not a commit".into()));
            continue;
        }
        let reached_known = query.known.is_some() && u.ratio(1, 2)?;
        let change = if u.ratio(31, 32)? {
            query.change.clone()
        } else {
            change_id(u)?
        };
        let steps = if reached_known {
            let mut state = ChainState::midway(change.clone());
            let len = u.int_in_range(0..=3)?;
            (0..len)
                .map(|_| state.next(u, places))
                .collect::<Result<Vec<Step>>>()?
        } else {
            let len = u.int_in_range(0..=7)?;
            ChainState::new(change.clone()).chain(u, len, places)?
        };
        let count = steps.len();
        let mut raw = Vec::with_capacity(count);
        for (index, step) in steps.iter().enumerate().rev() {
            let oid = if index + 1 == count {
                query.tip.clone()
            } else {
                oid(u)?
            };
            raw.push(RawStep {
                oid,
                message: message(u, step)?,
            });
        }
        reads.push(ChainRead {
            change,
            tip: query.tip.clone(),
            steps: raw,
            reached_known,
            unreadable: None,
        });
    }
    Ok(reads)
}

/// What became of a push: accepted with a commit per step most of the time.
fn push_report(u: &mut Unstructured<'_>, plan: &PushPlan) -> Result<PushReport> {
    let outcome = match u.int_in_range(0..=15)? {
        0..=2 => PushOutcome::Rejected {
            refs: vec![word(u, &["refs/heads/main"])?],
        },
        3 => PushOutcome::Unknown {
            why: word(u, &["the connection dropped"])?,
        },
        4 => PushOutcome::NotSent(fault(u)?),
        _ => PushOutcome::Accepted,
    };
    let written = !matches!(outcome, PushOutcome::NotSent(_)) && u.ratio(15, 16)?;
    let mut steps = Vec::new();
    let mut notes = Vec::new();
    if written {
        for append in &plan.appends {
            steps.push(
                (0..append.steps.len())
                    .map(|_| oid(u))
                    .collect::<Result<Vec<Oid>>>()?,
            );
        }
        for _ in &plan.notes {
            notes.push(oid(u)?);
        }
    }
    let log = match (&plan.log, written) {
        (Some(_), true) => Some(oid(u)?),
        _ => None,
    };
    let presence = match (&plan.presence, written) {
        (Some(_), true) => Some(oid(u)?),
        _ => None,
    };
    let mut indexes = Vec::new();
    if written {
        for _ in &plan.indexes {
            indexes.push(oid(u)?);
        }
    }
    Ok(PushReport {
        steps,
        notes,
        log,
        presence,
        indexes,
        outcome,
    })
}

/// The leases every push must carry: an append is leased on its parent, or, on a step
/// written unpushed (a request carried by its runner), on the tip that step stood on.
fn assert_leased(plan: &PushPlan, role: Role, unpushed: &BTreeMap<Oid, Option<Oid>>) {
    assert!(plan.atomic, "a push that is not atomic: {plan:?}");
    for append in &plan.appends {
        let under = append
            .parent
            .as_ref()
            .and_then(|parent| unpushed.get(parent))
            .cloned()
            .unwrap_or_else(|| append.parent.clone());
        assert_eq!(
            append.expect,
            Expect::tip(under.as_ref()),
            "a chain append whose lease is not its parent: {append:?}"
        );
        if role == Role::Runner {
            assert!(
                append.parent.is_some(),
                "a runner started a chain: {append:?}"
            );
        }
        // One that only pushes a carried request adds no step of its own.
        let carries = append
            .parent
            .as_ref()
            .is_some_and(|p| unpushed.contains_key(p));
        assert!(
            carries || !append.steps.is_empty(),
            "an append with no step"
        );
        for step in &append.steps {
            assert_eq!(step.change, append.change, "a step on another chain");
        }
    }
    if let Some(log) = &plan.log {
        let lease = match &log.parent {
            Some(parent) => Expect::Is(parent.clone()),
            None => Expect::Absent,
        };
        assert_eq!(
            log.expect, lease,
            "a log append whose lease is not its parent: {log:?}"
        );
    }
    for update in &plan.updates {
        assert_ne!(
            update.expect,
            Expect::Any,
            "an unleased ref update: {update:?}"
        );
        if role == Role::Agent {
            // An agent creates refs, moves the queue's last request, and deletes the place of
            // an operation it ends; nothing else.
            let allowed = update.expect == Expect::Absent
                || update.name == refs::QUEUE_LAST
                || (refs::parse_queue(&update.name).is_some()
                    && update.new == bay_core::machine::NewValue::Delete);
            assert!(allowed, "an agent moved a ref it may not: {update:?}");
        }
        if update.name == refs::main(MAIN) {
            assert!(
                matches!(update.expect, Expect::Is(_)),
                "main moved without a lease on its base"
            );
        }
        if update.name.starts_with(refs::LANDED) {
            assert_eq!(update.expect, Expect::Absent, "a merged marker moved");
        }
    }
    for note in &plan.notes {
        assert_ne!(note.expect, Expect::Any, "an unleased note: {note:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// runner and agent

/// A runner fed any sequence of events: never a panic, every push leased, and completions for
/// ids it never issued (or already heard back from) refused as misuse.
pub fn runner(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let _ = runner_inner(&mut u);
}

fn runner_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let mut cfg = RunnerConfig::new(RUNNER, MAIN, u.arbitrary()?);
    cfg.mode = match u.int_in_range(0..=3)? {
        0 => RunMode::Once,
        1 => {
            let change = change_id(u)?;
            RunMode::Only(op_id(u, &change)?)
        }
        _ => RunMode::Loop,
    };
    if u.ratio(1, 4)? {
        cfg.environments = Some(vec![pick(u, &["linux", "mac"])?.to_owned()]);
    }
    let mut machine = Runner::new(cfg, EPOCH);
    let mut driver = Driver::new();
    driver.run(u, &mut machine, Role::Runner);
    Ok(())
}

/// `bay start`, `bay merge`, `bay abandon` or `bay undo` fed any sequence of events, with the runner's
/// promises, and: an agent only creates refs, and once it has an outcome it keeps it and asks
/// for nothing more.
pub fn agent(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let _ = agent_inner(&mut u);
}

fn agent_inner(u: &mut Unstructured<'_>) -> Result<()> {
    let actor = pick(u, &ACTORS)?.to_owned();
    let entropy: u64 = u.arbitrary()?;
    let mut driver = Driver::new();
    match u.int_in_range(0..=3)? {
        0 => {
            let target = if u.ratio(2, 3)? {
                StartTarget::Intent {
                    intent: word(u, &INTENTS)?,
                    paths: vec![word(u, &["src/"])?],
                }
            } else {
                StartTarget::Change(change_id(u)?)
            };
            let input = StartInput {
                target,
                actor,
                main: MAIN.to_owned(),
                new: u.ratio(1, 4)?,
                fixes: if u.ratio(1, 4)? {
                    Some(change_id(u)?)
                } else {
                    None
                },
                after: if u.ratio(1, 4)? {
                    vec![change_id(u)?]
                } else {
                    Vec::new()
                },
                entropy,
                disk: None,
                import: match u.int_in_range(0..=5)? {
                    0 => Some(Import::Branch {
                        name: word(u, &["feature", "refs/heads/x", "a..b", "*"])?,
                        local: if u.arbitrary()? { Some(oid(u)?) } else { None },
                    }),
                    1 => Some(Import::Checkout {
                        edits: oid(u)?,
                        head: oid(u)?,
                    }),
                    _ => None,
                },
            };
            let mut machine = Start::new(input, EPOCH);
            driver.run(u, &mut machine, Role::Agent);
        }
        1 => {
            let input = MergeInput {
                change: change_id(u)?,
                actor,
                main: MAIN.to_owned(),
                entropy,
            };
            // As `bay merge` does, or `merge --wait`, whose runner may carry the request; or
            // the whole of `merge --wait`, the request and its run.
            let mut machine = match u.int_in_range(0..=3u8)? {
                0 => Merge::new(input, EPOCH),
                3 => {
                    let runner = RunnerConfig::new("runner-1", MAIN, entropy);
                    let mut wait = MergeWait::new(input, EPOCH, runner);
                    driver.run(u, &mut wait, Role::Agent);
                    return Ok(());
                }
                carried => Merge::then_run_as(input, EPOCH, "runner-1", carried == 2),
            };
            driver.run(u, &mut machine, Role::Agent);
            if let Some(request) = machine.seed().and_then(|seed| seed.request) {
                let carried = machine.seed().map(|seed| seed.refs).unwrap_or_default();
                assert_eq!(
                    carried.get(&refs::change(&request.change)),
                    Some(&request.step),
                    "the runner's view holds the request it must carry"
                );
            }
        }
        2 => {
            let input = AbandonInput {
                change: change_id(u)?,
                actor,
                entropy,
            };
            let mut machine = Abandon::new(input, EPOCH);
            driver.run(u, &mut machine, Role::Agent);
        }
        _ => {
            let input = UndoInput {
                target: change_id(u)?,
                actor,
                main: MAIN.to_owned(),
                entropy,
                disk: None,
            };
            let mut machine = Undo::new(input, EPOCH);
            driver.run(u, &mut machine, Role::Agent);
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// result

/// Names and texts in the shapes bay meets them: paths, checks, folders, intents, a fault's
/// account (a file at a saved version, one of bay's own records), words that only share
/// letters with a listed word, nothing, and two sentences.
const TEXTS: [&str; 16] = [
    "src/app.rs",
    "docs/guide.md",
    "unit-tests",
    "linux-x86_64",
    "API_TOKEN",
    "2.45",
    "/repo/work/c7k2m4qa",
    "fix the login",
    "the remote did not answer",
    "cannot read a1b2c3d:.bay/config.toml",
    "cannot write (refs/bay/changes/c7k2m4qa)",
    "HEAD is detached",
    "refresh the preview, then review it",
    "",
    " ",
    "one thing. Then another",
];

/// Shapes a listed word comes in inside a name or a text; `{}` is the word.
const LISTED_SHAPES: [&str; 6] = [
    "{}",
    "src/{}.rs",
    "the {} failed",
    "refs/bay/{}/c7k2m4qa",
    "{}-tree",
    "main_{}",
];

/// Characters that break a line or a terminal, and two that only look like they do.
const BREAKERS: [char; 9] = [
    '\n', '\r', '\t', '\0', '\u{7}', '\u{1b}', '\u{85}', '\u{2028}', '\u{a0}',
];

/// The `detail` keys `say` reads, and a few that commands write and `say` must leave alone,
/// so that fuzzed details reach every sentence.
const DETAIL_KEYS: [&str; 20] = [
    "paths",
    "check",
    "checks",
    "environment",
    "superseded_by",
    "tool",
    "floor",
    "sandbox",
    "variables",
    "variable",
    "env",
    "position",
    "main_commit",
    "view",
    "abandoned",
    "queue_depth",
    "why",
    "intent",
    "actor",
    "merged_op",
];

/// The longest text a huge run makes, in bytes: far past any name, small enough to stay fast.
const HUGE_TEXT: usize = 1 << 16;

/// How deep an outcome's detail may nest: past the depth a JSON reader accepts, so that the
/// reader of step messages, not this generator, bounds what reaches a result.
const MAX_NESTING: u32 = 130;

/// One form of a listed word, in any case, in one of the shapes names take.
fn listed_text(u: &mut Unstructured<'_>) -> Result<String> {
    let entry = u.choose(&WORDS)?;
    let form = *u.choose(entry.forms)?;
    let form = if u.ratio(1, 3)? {
        form.to_uppercase()
    } else {
        form.to_owned()
    };
    Ok(pick(u, &LISTED_SHAPES)?.replace("{}", &form))
}

/// Text from outside bay (an intent, a path, an actor, a check's name, a fault's account):
/// usually a name in a shape bay meets, often one holding a listed word, and sometimes
/// anything, a control character, two names run together, or a huge run.
fn hostile_text(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=15)? {
        0..=5 => pick(u, &TEXTS)?.to_owned(),
        6..=8 => listed_text(u)?,
        9..=10 => String::arbitrary(u)?,
        11..=12 => {
            // TEXTS are ASCII, so every byte offset is a character boundary.
            let mut text = pick(u, &TEXTS)?.to_owned();
            let at = u.int_in_range(0..=text.len())?;
            text.insert(at, *u.choose(&BREAKERS)?);
            text
        }
        13 => {
            let piece = if u.ratio(1, 2)? {
                listed_text(u)?
            } else {
                pick(u, &TEXTS)?.to_owned()
            };
            piece.repeat(u.int_in_range(1..=HUGE_TEXT / piece.len().max(1))?)
        }
        _ => {
            let glue = pick(u, &[". ", "\n", ": ", "; ", "/", ""])?;
            format!("{}{glue}{}", pick(u, &TEXTS)?, listed_text(u)?)
        }
    })
}

fn hostile_texts(u: &mut Unstructured<'_>) -> Result<Vec<String>> {
    (0..u.int_in_range(0..=5)?)
        .map(|_| hostile_text(u))
        .collect()
}

/// A `detail` value: a name, a list of names, a list of objects naming themselves the way
/// checks do, a number, a flag, or (while `depth` lasts) an object of its own.
fn detail_value(u: &mut Unstructured<'_>, depth: u32) -> Result<Value> {
    Ok(match u.int_in_range(0..=9)? {
        0..=3 => Value::from(hostile_text(u)?),
        4 => json!(hostile_texts(u)?),
        5 => {
            let named = (0..u.int_in_range(0..=4)?)
                .map(|_| {
                    let field = pick(u, &["check", "id", "path", "name", "reasons"])?;
                    Ok(json!({ field: hostile_text(u)? }))
                })
                .collect::<Result<Vec<Value>>>()?;
            Value::Array(named)
        }
        6 => Value::from(u64::arbitrary(u)?),
        7 => {
            if u.ratio(1, 2)? {
                Value::from(i64::arbitrary(u)?)
            } else {
                // Not finite makes null.
                Value::from(f64::arbitrary(u)?)
            }
        }
        8 => Value::from(bool::arbitrary(u)?),
        _ if depth > 0 => Value::Object(detail_map(u, depth - 1)?),
        _ => Value::Null,
    })
}

/// A `detail` object, keyed mostly by the keys `say` reads.
fn detail_map(u: &mut Unstructured<'_>, depth: u32) -> Result<Map<String, Value>> {
    let mut map = Map::new();
    for _ in 0..u.int_in_range(0..=4)? {
        let key = if u.ratio(7, 8)? {
            pick(u, &DETAIL_KEYS)?.to_owned()
        } else {
            hostile_text(u)?
        };
        map.insert(key, detail_value(u, depth)?);
    }
    Ok(map)
}

/// An outcome's detail as any writer to the remote may leave it: an object most of the time,
/// else any value, and sometimes nested past what a reader takes.
fn outcome_detail(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut detail = if u.ratio(3, 4)? {
        Value::Object(detail_map(u, 2)?)
    } else {
        detail_value(u, 2)?
    };
    if u.ratio(1, 8)? {
        let in_lists = bool::arbitrary(u)?;
        for _ in 0..u.int_in_range(0..=MAX_NESTING)? {
            detail = if in_lists {
                Value::Array(vec![detail])
            } else {
                json!({ "detail": detail })
            };
        }
    }
    Ok(detail)
}

/// `bay.result/1` documents built the way bay's commands build them, from hostile text: never
/// a panic; `say` repeats the document, stays on one line and says no listed word that
/// `detail` does not hand it; a reason brings its advice from the table; the JSON reads back
/// equal and meets the published schema. The first byte picks the mode: even, one result from
/// the constructors; odd, the results `bay status` and `bay merge` build from a chain.
pub fn result(data: &[u8]) {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    let results = if mode % 2 == 0 {
        built_result(&mut u).map(|result| vec![result])
    } else {
        record_results(&mut u)
    };
    for result in results.iter().flatten() {
        assert_result(result);
    }
}

/// One result from a constructor or a report helper, then named, dated and given a receipt
/// the way commands do, each some of the time.
fn built_result(u: &mut Unstructured<'_>) -> Result<BayResult> {
    let change = ChangeId::from_entropy(u.arbitrary()?);
    let mut result = match u.int_in_range(0..=6)? {
        0 => {
            let code = ReasonCode::arbitrary(u)?;
            let about = u.ratio(3, 4)?.then_some(&change);
            report::refused(code, about, None, detail_value(u, 2)?)
        }
        1 => report::failed(hostile_text(u)?, u.ratio(1, 2)?.then_some(&change)),
        2 => {
            let main = if u.ratio(1, 2)? { Some(oid(u)?) } else { None };
            report::started(&change, detail_value(u, 2)?, main.as_ref())
        }
        3 => report::abandoned(&change),
        4 => BayResult::ok(Option::<OpState>::arbitrary(u)?, detail_map(u, 2)?),
        5 => BayResult::merged(detail_map(u, 2)?),
        _ => BayResult::queued(OpState::arbitrary(u)?, WaitingFor::arbitrary(u)?),
    };
    if u.ratio(1, 3)? {
        result = result.with_state(OpState::arbitrary(u)?);
    }
    let op = change.op(u.int_in_range(1..=u32::MAX)?);
    result = match u.int_in_range(0..=2)? {
        0 => result,
        1 => result.with_op(op),
        _ => result.with_candidate(op.candidate(u.int_in_range(1..=u32::MAX)?)),
    };
    if u.ratio(1, 2)? {
        result = report::with_main(result, Some(&oid(u)?));
    }
    if u.ratio(1, 4)? {
        result = result.with_freshness(&hostile_text(u)?, &hostile_text(u)?);
    }
    if u.ratio(1, 4)? {
        result = result.with_receipt(&hostile_text(u)?);
    }
    if u.ratio(1, 4)? {
        result.elapsed_s = Some(u.arbitrary()?);
    }
    if u.ratio(1, 4)? {
        result.evidence = Some(hostile_texts(u)?);
    }
    Ok(result)
}

/// The results `bay status` and `bay merge` build from a change's chain: its status, and each
/// operation's result with the main it reflects.
fn record_results(u: &mut Unstructured<'_>) -> Result<Vec<BayResult>> {
    let steps = hostile_chain(u)?;
    let Ok(record) = ChangeRecord::fold(&steps) else {
        return Ok(Vec::new());
    };
    let main = oid(u)?;
    let mut results = vec![report::status(&record)];
    for op in &record.ops {
        results.push(report::with_main(
            report::op_result(&record, op),
            Some(&main),
        ));
    }
    Ok(results)
}

/// A plausible chain with hostile text in it, read back through its messages up to the first
/// that does not read, as commands read a chain. Every actor, runner, check and environment
/// is renamed, the same way each time, so the chain keeps who owns what; intents, paths,
/// whys and outcome details are replaced outright.
fn hostile_chain(u: &mut Unstructured<'_>) -> Result<Vec<Step>> {
    let mut names = BTreeMap::new();
    let mut read = Vec::new();
    for mut step in plausible_chain(u)? {
        step.by = renamed(u, &mut names, &step.by)?;
        match &mut step.body {
            StepBody::Start {
                intent,
                actor,
                paths,
                ..
            } => {
                *intent = hostile_text(u)?;
                *actor = renamed(u, &mut names, actor)?;
                *paths = hostile_texts(u)?;
            }
            StepBody::Adopt { actor } => *actor = renamed(u, &mut names, actor)?,
            StepBody::Release { why, .. } => *why = hostile_text(u)?,
            StepBody::Check {
                check,
                environment,
                why,
                ..
            } => {
                *check = renamed(u, &mut names, check)?;
                *environment = renamed(u, &mut names, environment)?;
                *why = hostile_text(u)?;
            }
            StepBody::Outcome { detail, .. } => *detail = outcome_detail(u)?,
            _ => {}
        }
        match Step::from_message(&step.to_message()) {
            Ok(step) => read.push(step),
            Err(_) => break,
        }
    }
    Ok(read)
}

/// `name` as the chain renames it: the same hostile text every time it comes up.
fn renamed(
    u: &mut Unstructured<'_>,
    names: &mut BTreeMap<String, String>,
    name: &str,
) -> Result<String> {
    if let Some(new) = names.get(name) {
        return Ok(new.clone());
    }
    let new = hostile_text(u)?;
    names.insert(name.to_owned(), new.clone());
    Ok(new)
}

/// `bay.result/1`'s published schema, read once.
/// bay.result/1 as published, compiled once by a real validator.
fn result_schema() -> &'static jsonschema::Validator {
    static PUBLISHED: OnceLock<jsonschema::Validator> = OnceLock::new();
    PUBLISHED.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(schema::RESULT).expect("the published schema is JSON");
        jsonschema::validator_for(&schema).expect("the published schema compiles")
    })
}

/// The listed words in `text`, each once.
fn listed_words(text: &str) -> BTreeSet<&'static str> {
    text.split(|c: char| !c.is_alphabetic())
        .filter_map(forbidden_word)
        .collect()
}

/// The text `say` may quote from `detail`: every string in it, as JSON writes it. This is how
/// `say`'s own tests read a detail (a sentence must be clean when the detail's JSON is), with
/// the keys left out, since `say` quotes no key.
fn quotable(detail: &Map<String, Value>) -> String {
    fn strings<'a>(value: &'a Value, out: &mut Vec<&'a Value>) {
        match value {
            Value::String(_) => out.push(value),
            Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
            Value::Object(fields) => fields.values().for_each(|field| strings(field, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    detail.values().for_each(|value| strings(value, &mut found));
    serde_json::to_string(&found).expect("strings serialize")
}

/// Checks one result against the promises.
fn assert_result(result: &BayResult) {
    let sentence = &result.say;
    assert_eq!(
        sentence,
        &say(
            result.decision,
            result.reason,
            result.state,
            result.change.as_ref(),
            &result.detail
        ),
        "the sentence does not repeat the document"
    );
    assert!(
        sentence.starts_with(char::is_uppercase) && sentence.ends_with('.'),
        "not a sentence: {sentence:?}"
    );
    assert!(
        !sentence.contains(char::is_control),
        "a sentence that breaks the line: {sentence:?}"
    );
    let handed = listed_words(&quotable(&result.detail));
    let own: Vec<&str> = listed_words(sentence)
        .difference(&handed)
        .copied()
        .collect();
    assert!(
        own.is_empty(),
        "the sentence says {own:?} of its own: {sentence:?}"
    );
    match result.reason {
        Some(code) => {
            let info = code.info();
            assert_eq!(
                result.decision, info.decision,
                "{code} with another decision"
            );
            assert_eq!(result.allowed.as_deref(), Some(info.allowed));
            assert_eq!(result.retry_when.as_deref(), Some(info.retry_when));
            assert_eq!(result.next_step.as_deref(), Some(info.next_step));
        }
        None => {
            assert_ne!(
                result.decision,
                Decision::Blocked,
                "blocked without a reason"
            );
            assert!(
                result.allowed.is_none()
                    && result.retry_when.is_none()
                    && result.next_step.is_none(),
                "advice without a reason"
            );
        }
    }
    let json = serde_json::to_string(result).expect("a result serializes");
    match serde_json::from_str::<BayResult>(&json) {
        Ok(back) => assert_eq!(&back, result, "the result lost data:\n{json}"),
        Err(error) => panic!("bay printed a result it cannot read: {error}\n{json}"),
    }
    let doc: Value = serde_json::from_str(&json).expect("a result that reads back is JSON");
    let errors: Vec<String> = result_schema()
        .iter_errors(&doc)
        .map(|error| format!("{}: {error}", error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "a result outside bay.result/1: {errors:?}\n{json}"
    );
}

// ---------------------------------------------------------------------------------------------
// red

/// The red judgement over a window of main commits and the lines of the notes on them: a mix
/// of post check records (on commits in and out of the window, of other checks, producers and
/// kinds) and text that is no record. It must never panic, must be deterministic, and must
/// never call a check red without a failure on the merge it names, nor block a change that
/// fixes, undoes or supersedes the owner.
pub fn red(data: &[u8]) {
    let _ = red_inner(&mut Unstructured::new(data));
}

fn red_inner(u: &mut Unstructured<'_>) -> Result<()> {
    use bay_core::check::Verdict;
    use bay_core::red::{PostCheck, PostRecord, Red, TRUST};

    let commits: Vec<Oid> = (0..u.int_in_range(0..=8u8)?)
        .map(|n| Oid::parse(&format!("{n:02x}").repeat(20)).expect("hex"))
        .collect();
    let changes = every_change();
    let mut window = Vec::new();
    for commit in &commits {
        let message = match u.int_in_range(0..=3u8)? {
            0 => "outside bay\n".to_owned(),
            1 => String::arbitrary(u)?,
            _ => format!("merge\n\nChange-Id: {}\nBay-Op: x\n", u.choose(&changes)?),
        };
        window.push(RawStep {
            oid: commit.clone(),
            message,
        });
    }
    let checks: Vec<PostCheck> = (0..u.int_in_range(1..=2u8)?)
        .map(|n| PostCheck {
            id: format!("post{n}"),
            environment: "any".into(),
            paths: (n == 1).then(|| vec!["src/**".to_owned()]),
            producers: (n == 1).then(|| vec!["ci".to_owned()]),
        })
        .collect();
    let verdicts = [
        Verdict::Pass,
        Verdict::ProductFailure,
        Verdict::InfraFailure,
        Verdict::Unknown,
    ];
    let mut lines = Vec::new();
    for _ in 0..u.int_in_range(0..=12u8)? {
        if u.ratio(1, 6)? {
            lines.push(String::arbitrary(u)?);
            continue;
        }
        let commit = if commits.is_empty() || u.ratio(1, 8)? {
            oid(u)?
        } else {
            u.choose(&commits)?.clone()
        };
        let producer = word(u, &["ci", "other"])?;
        let inputs = match u.int_in_range(0..=3u8)? {
            0 => bay_core::red::BisectRun::Midpoint.inputs(),
            1 => bay_core::red::BisectRun::Rerun.inputs(),
            _ => Vec::new(),
        };
        lines.push(
            PostRecord {
                schema: bay_core::check::EvidenceSchema,
                kind: word(u, &["check", "check", "review"])?,
                id: PostRecord::id_of(&producer, &commit, &inputs, None),
                producer,
                check: word(u, &["post0", "post1", "pre"])?,
                environment: word(u, &["any", "linux"])?,
                verdict: *u.choose(&verdicts)?,
                why: String::new(),
                commit: commit.clone(),
                tree: commit,
                base_tree: None,
                version: None,
                inputs,
                trust: TRUST.into(),
                at: EPOCH,
            }
            .to_json(),
        );
    }
    let limit = u.int_in_range(1..=10u32)?;
    let judged = Red::judge(&checks, &window, &lines, limit);
    assert_eq!(
        judged,
        Red::judge(&checks, &window, &lines, limit),
        "deterministic"
    );
    let records: Vec<PostRecord> = lines
        .iter()
        .filter_map(|line| PostRecord::from_json(line))
        .collect();
    for red in &judged.red {
        assert!(
            commits.contains(&red.first_failure),
            "red names a merge of the window"
        );
        assert!(
            records.iter().any(|r| r.commit == red.first_failure
                && r.check == red.check.id
                && r.verdict == Verdict::ProductFailure),
            "red rests on a failure recorded on the merge it names"
        );
        assert!(
            !judged.pending.iter().any(|p| p.check == red.check),
            "a check is red or pending, never both"
        );
        let (_, owner) = red.owner();
        if let Some(owner) = owner {
            let every = vec![String::from("src/a.rs"), String::from("docs/b.md")];
            assert!(
                !judged
                    .blocking(&every, std::slice::from_ref(&owner))
                    .iter()
                    .any(|blocking| blocking.check == red.check),
                "the owner's fix is never blocked by its own red"
            );
        }
        if let Some((commit, run)) = red.bisect_next() {
            let at = red.suspects.iter().position(|(c, _)| *c == commit);
            assert!(at.is_some(), "a bisect runs only a suspect merge");
            assert!(
                red.last_pass.is_some(),
                "a bisect needs a pass below its range"
            );
            match run {
                bay_core::red::BisectRun::Midpoint => assert!(
                    at != Some(0) && red.suspects.len() >= 2,
                    "a midpoint is never the first failure"
                ),
                bay_core::red::BisectRun::Rerun => assert!(
                    red.suspects.len() == 1 && !red.bisect.reran,
                    "the rerun is of the one merge left, once"
                ),
            }
        }
        if red.flaky.is_some() {
            assert!(red.culprit.is_none(), "a flake names no culprit");
        }
    }
    Ok(())
}

/// A runner's presence, as `bay status` reads it from any runner's ref, and its judgement:
/// never a panic; a presence that reads writes back the same; a runner is fresh only when
/// the presence reads, this clone saw it first, and it is younger than its staleness on this
/// clone's clock; and `no_live_runner` is said exactly when the one runner is not fresh.
pub fn presence(data: &[u8]) {
    use bay_core::presence::{Presence, judge, no_live_runner};
    let (head, rest) = data.split_at(data.len().min(17));
    let read = Presence::from_message(&String::from_utf8_lossy(rest));
    if let Ok(presence) = &read {
        assert_eq!(
            Presence::from_message(&presence.to_message()).as_ref(),
            Ok(presence),
            "a presence reads back as written"
        );
    }
    let mut u = Unstructured::new(head);
    let first_seen = Option::<Timestamp>::arbitrary(&mut u).unwrap_or(None);
    let now = Timestamp::arbitrary(&mut u).unwrap_or(Timestamp(0));
    let judged = judge("r1", &read, first_seen, now);
    let row = serde_json::to_value(&judged.row).unwrap_or_default();
    assert_eq!(row["stale"], Value::Bool(!judged.fresh));
    match (&read, first_seen) {
        (Ok(presence), Some(seen)) => assert_eq!(
            judged.fresh,
            now.millis_since(seen) < presence.stale_after_ms(),
            "fresh only within its staleness, on this clone's clock"
        ),
        _ => assert!(!judged.fresh, "unread or never seen is never fresh"),
    }
    let warning = no_live_runner(1, std::slice::from_ref(&judged));
    assert_eq!(warning.is_some(), !judged.fresh);
    assert!(
        no_live_runner(0, &[judged]).is_none(),
        "nothing waits: no warning"
    );
}

/// The shell deny list on any command. The first byte picks the rules (main read or not,
/// targets and lanes set or not); the rest is the command, read as UTF-8 with bad bytes
/// replaced, as the hook reads its JSON.
pub fn shell(data: &[u8]) {
    use bay_core::shell::{DenyRules, Shape, Verdict, WORK_PER_BYTE, judge, judge_counting};

    let (pick, command) = data.split_first().map_or((0, &[][..]), |(p, c)| (*p, c));
    let command = String::from_utf8_lossy(command);
    let strict = DenyRules {
        main: None,
        targets: vec!["refs/heads/staging".into()],
        lanes: vec!["refs/heads/research/*".into()],
    };
    let lenient = DenyRules {
        main: Some(MAIN.into()),
        targets: Vec::new(),
        lanes: Vec::new(),
    };
    let rules = DenyRules {
        main: (pick & 1 == 0).then(|| MAIN.into()),
        targets: if pick & 2 == 0 {
            Vec::new()
        } else {
            strict.targets.clone()
        },
        lanes: if pick & 4 == 0 {
            Vec::new()
        } else {
            strict.lanes.clone()
        },
    };

    let (verdict, spent) = judge_counting(&command, &rules);
    assert_eq!(verdict, judge(&command, &rules), "judged the same twice");
    assert!(
        spent <= WORK_PER_BYTE * command.len().max(1024),
        "read {spent} bytes for a command of {}",
        command.len()
    );

    let after = format!("git reset --hard; {command}");
    match judge(&after, &rules) {
        Verdict::Denied(denial) => assert!(
            matches!(denial.shape, Shape::ResetHard | Shape::Unjudged),
            "{denial:?}"
        ),
        Verdict::Allowed => panic!("what follows a denied command let it through"),
    }

    if judge(&command, &strict) == Verdict::Allowed {
        assert_eq!(
            judge(&command, &lenient),
            Verdict::Allowed,
            "knowing main, and no targets or lanes, denied what knowing less allowed"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// evidence

/// Evidence note lines, as every reader of another producer's notes takes them (one record a
/// line, from anyone who can push a note): never a panic; a record that reads writes back to
/// the same record; and the readers agree with the reading. A record counts as recorded for
/// its own check on its own inputs (by tree, or by commit for a check keyed by commit); a pass
/// there is reusable; a pass or failure tells what fails on that base; a stamped one is its
/// own operation's, where a lane and a carry look. A check whose `producers` leave the
/// record's producer out counts it for none of them.
pub fn evidence(data: &[u8]) {
    use bay_core::check::EvidenceKey;
    use bay_core::check::footprint::of_operation;
    use bay_core::check::reuse::{failing_on_base, product_failures, recorded, reusable_pass};

    let text = String::from_utf8_lossy(data);
    let lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    for line in &lines {
        let Ok(record) = EvidenceRecord::from_json(line) else {
            continue;
        };
        assert_eq!(
            EvidenceRecord::from_json(&record.to_json()).as_ref(),
            Ok(&record),
            "an evidence record reads back as written"
        );
        let one = std::slice::from_ref(line);
        let by_commit = record.key == EvidenceKey::Commit;
        let spec = evidence_spec(&record, by_commit, None);
        let (candidate, base) = (&record.candidate, &record.base);
        assert!(
            recorded(one, &spec, candidate, &base.tree),
            "a record is recorded on its own inputs"
        );
        assert!(recorded(&lines, &spec, candidate, &base.tree));
        if record.verdict == Verdict::Pass {
            assert_eq!(
                reusable_pass(one, &spec, candidate, &base.tree).as_deref(),
                Some(record.producer.as_str()),
                "a pass is reusable on its own inputs"
            );
        }
        if matches!(record.verdict, Verdict::Pass | Verdict::ProductFailure) {
            assert_eq!(
                failing_on_base(one, &spec, candidate, &record.definition),
                Some(product_failures(&record.failed)),
                "a base's own record says what fails there"
            );
        }
        if let Some(stamp) = &record.footprint {
            assert_eq!(
                of_operation(&record, &spec, &record.op, stamp),
                !by_commit,
                "a stamped record of a tree is its operation's"
            );
        }
        // Keyed the other way, or with its producer left out, it counts for nothing.
        let other_key = evidence_spec(&record, !by_commit, None);
        let same_target = candidate.commit == candidate.tree;
        if !same_target {
            assert!(!recorded(one, &other_key, candidate, &base.tree));
        }
        let others = evidence_spec(&record, by_commit, Some(format!("{}-not", record.producer)));
        assert!(!recorded(one, &others, candidate, &base.tree));
        assert!(reusable_pass(one, &others, candidate, &base.tree).is_none());
        assert!(failing_on_base(one, &others, candidate, &record.definition).is_none());
        if let Some(stamp) = &record.footprint {
            assert!(!of_operation(&record, &others, &record.op, stamp));
        }
    }
}

/// A check of `record`'s id and environment, keyed by commit or by tree, that allows only
/// `producer` when one is named.
fn evidence_spec(
    record: &EvidenceRecord,
    by_commit: bool,
    producer: Option<String>,
) -> bay_core::policy::CheckSpec {
    serde_json::from_value(json!({
        "id": record.check,
        "environment": record.environment,
        "command": "scripts/check",
        "adapter": [],
        "expected_minimum": 1,
        "timeout_s": 60,
        "path": [],
        "env": [],
        "network": false,
        "inputs": if by_commit { vec!["commit"] } else { Vec::new() },
        "producers": producer.map(|p| vec![p]),
    }))
    .expect("a check spec of plain fields reads")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_is_tiny() {
        assert_eq!(every_change().len(), 4);
        assert!(POLICIES[..4].iter().all(|text| Policy::parse(text).is_ok()));
        assert!(
            POLICIES[4..]
                .iter()
                .all(|text| Policy::parse(text).is_err())
        );
    }

    #[test]
    fn empty_input_does_nothing_wrong() {
        for body in [policy, config, judge, record, runner, agent, result] {
            body(&[]);
            body(&[0]);
            body(&[0xff; 64]);
        }
    }
}
