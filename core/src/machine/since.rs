//! `bay status --since [<cursor>] [--merged]`: what changed after a cursor. It fetches main and
//! every runner's log, then lists the merges into main after the cursor's main commit
//! (first-parent, a commit without exactly one `Change-Id:` marked `outside_bay`) and the
//! `bay.event/1` events each log gained after the cursor's tip of it. It writes nothing.
//!
//! The cursor is opaque to its reader: bay's own encoding of main's commit and each log's tip,
//! with a checksum, so a cursor bay did not return is refused before anything is read. It also
//! keeps the post checks that were red then: red is judged anew on each read (never stored on
//! the remote), and a check red now and not then is a `main_red` event, one red then and not
//! now a `main_red_cleared`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::agent::{fold_one, read_chain};
use super::red_read::{RedRead, RedStep};
use super::{Action, Completion, FetchSpec, HistoryQuery, MainCommit, Outbox, Refs};
use crate::detail::Detail;
use crate::event::BayEvent;
use crate::event::EventKind;
use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::lineage::bay_merge;
use crate::red::Red;
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

/// The most merges, and the most events, one answer lists; `more` says when more follow.
pub const MAX_LISTED: usize = 500;

/// How much older than its change's start a runner log's commit may be stamped and still be
/// read by a view's first `--since`: room for a runner's clock behind the agent's. Older
/// commits cannot be about the change, so the walk stops there instead of reading each log
/// from its beginning.
pub const LOG_SKEW_MS: u64 = 3600 * 1000;

/// What the cursor's text starts with: the version of its encoding.
const CURSOR_PREFIX: &str = "c1";

/// Where a `--since` answer stopped: main's commit, each runner log's tip, and the post checks
/// red then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub main: Oid,
    pub logs: BTreeMap<String, Oid>,
    pub reds: BTreeSet<RedMark>,
}

/// One red post check, by the merge of its first failure: the same check red again at
/// another merge is another turn.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RedMark {
    pub check: String,
    pub environment: String,
    pub merge: Oid,
}

/// What a red line of the cursor's payload starts with; a runner's name never does.
const RED_LINE: &str = "!red\t";

impl Cursor {
    /// The cursor as text: `c1`, the hex of its lines, `-`, and 16 hex digits of their SHA-256.
    pub fn encode(&self) -> String {
        let payload = self.payload();
        format!(
            "{CURSOR_PREFIX}{}-{}",
            crate::id::hex(payload.as_bytes()),
            checksum(&payload)
        )
    }

    fn payload(&self) -> String {
        let mut payload = format!("{}\n", self.main);
        for (runner, tip) in &self.logs {
            payload.push_str(&format!("{runner} {tip}\n"));
        }
        for red in &self.reds {
            payload.push_str(&format!(
                "{RED_LINE}{}\t{}\t{}\n",
                red.check, red.environment, red.merge
            ));
        }
        payload
    }

    /// Reads a cursor bay returned; anything else is refused, saying what to do.
    pub fn decode(text: &str) -> Result<Cursor, String> {
        let refuse = |why: &str| {
            format!(
                "{text:?} is not a cursor bay returned ({why}); pass detail.cursor as \
                 `bay status --since` printed it, or run it without a cursor to start over"
            )
        };
        let body = text
            .strip_prefix(CURSOR_PREFIX)
            .ok_or_else(|| refuse("it does not start as one"))?;
        let (data, sum) = body
            .split_once('-')
            .ok_or_else(|| refuse("it has no checksum"))?;
        let bytes = unhex(data).ok_or_else(|| refuse("it is not hex"))?;
        let payload = String::from_utf8(bytes).map_err(|_| refuse("it is not text"))?;
        if checksum(&payload) != sum {
            return Err(refuse("its checksum does not match"));
        }
        let mut lines = payload.lines();
        let main = lines
            .next()
            .and_then(|line| Oid::parse(line).ok())
            .ok_or_else(|| refuse("it names no main commit"))?;
        let mut logs = BTreeMap::new();
        let mut reds = BTreeSet::new();
        for line in lines {
            if let Some(red) = line.strip_prefix(RED_LINE) {
                let mut fields = red.split('\t');
                let (Some(check), Some(environment), Some(merge), None) =
                    (fields.next(), fields.next(), fields.next(), fields.next())
                else {
                    return Err(refuse("a red line is broken"));
                };
                let merge = Oid::parse(merge).map_err(|_| refuse("a red merge is no commit"))?;
                reds.insert(RedMark {
                    check: check.into(),
                    environment: environment.into(),
                    merge,
                });
                continue;
            }
            let (runner, tip) = line
                .split_once(' ')
                .ok_or_else(|| refuse("a log line is broken"))?;
            let tip = Oid::parse(tip).map_err(|_| refuse("a log tip is not a commit id"))?;
            logs.insert(runner.to_string(), tip);
        }
        Ok(Cursor { main, logs, reds })
    }
}

fn checksum(payload: &str) -> String {
    crate::id::hex(&Sha256::digest(payload.as_bytes())[..8])
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[derive(Clone, Debug)]
pub struct SinceInput {
    pub main: String,
    /// The cursor a previous answer returned; `None` starts: outside a view from now, in a
    /// view from the change's base.
    pub cursor: Option<Cursor>,
    /// `--merged`: merges only, no events.
    pub merged_only: bool,
    /// The change of the view it runs in: only events about it are listed.
    pub change: Option<ChangeId>,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    /// A read after the fetch, which found main at `main`: the commit the answer lists up to.
    After {
        main: Oid,
        read: Read,
    },
}

/// What a read after the fetch is for.
#[derive(Clone, Debug)]
enum Read {
    /// The view's change, for its base and its declared paths.
    Change,
    History,
    Log(String),
    /// Main's red, judged now.
    Red(Box<RedRead>),
}

/// What the read of main's red gave.
#[derive(Clone, Debug)]
enum RedNow {
    /// Not read: `--merged`, or still in flight.
    Unasked,
    /// Main's policy names no post check.
    NoPostChecks,
    Judged(Red),
    Unread(String),
}

/// The `bay status --since` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Since {
    input: SinceInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    remote: Refs,
    /// Reads still in flight.
    pending: usize,
    history: Vec<MainCommit>,
    /// Each log's new commits, oldest first, by runner.
    logs: BTreeMap<String, Vec<MainCommit>>,
    /// Where each log on the remote is read from: the next cursor's tip of it when none of
    /// its new events is listed.
    starts: BTreeMap<String, Oid>,
    red: RedNow,
    /// The view's change's declared paths, once read: only red on them is its news.
    paths: Option<Vec<String>>,
    /// When the view's change started, once read: a first `--since` reads the runner logs
    /// back to then (less [`LOG_SKEW_MS`]), not from their beginnings.
    started_at: Option<Timestamp>,
    outcome: Option<BayResult>,
}

impl Since {
    pub fn new(input: SinceInput, now: Timestamp) -> Since {
        let mut patterns = vec![refs::main(&input.main)];
        if !input.merged_only {
            patterns.push(refs::LOG_PATTERN.to_string());
        }
        if let Some(change) = &input.change {
            patterns.push(refs::change_pattern(change));
        }
        let mut since = Since {
            input,
            out: Outbox::default(),
            now,
            remote: Refs::new(),
            pending: 0,
            history: Vec::new(),
            logs: BTreeMap::new(),
            starts: BTreeMap::new(),
            red: RedNow::Unasked,
            paths: None,
            started_at: None,
            outcome: None,
        };
        since
            .out
            .send(Action::Fetch(FetchSpec::new(patterns)), Purpose::Fetch);
        since
    }

    fn main_tip(&self) -> Option<Oid> {
        self.remote.get(&refs::main(&self.input.main)).cloned()
    }

    fn finish(&mut self, result: BayResult) {
        let main = self.main_tip();
        self.outcome = Some(report::with_main(result, main.as_ref()));
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        let failed = report::failed(why, self.input.change.as_ref());
        self.finish(failed);
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        let Some(main) = self.main_tip() else {
            return self.fail(format!(
                "main ({}) is not on the remote; check bay.main and the remote",
                self.input.main
            ));
        };
        if !self.input.merged_only {
            let (reader, read) = RedRead::start(main.clone());
            self.send(read, &main, Read::Red(Box::new(reader)));
        }
        match (&self.input.cursor, &self.input.change) {
            (_, Some(change)) => self.send(read_chain(&self.remote, change), &main, Read::Change),
            (Some(cursor), None) => {
                let from = cursor.main.clone();
                self.read(main, Some(from));
            }
            // A first call outside a view lists nothing and returns a starting cursor.
            (None, None) => self.read(main.clone(), Some(main)),
        }
    }

    /// Sends `action`, a read after the fetch that found main at `main`.
    fn send(&mut self, action: Action, main: &Oid, read: Read) {
        let main = main.clone();
        self.out.send(action, Purpose::After { main, read });
        self.pending += 1;
    }

    /// Reads main after `from` up to `main`, and each log after the cursor's tip of it.
    fn read(&mut self, main: Oid, from: Option<Oid>) {
        if from.as_ref() != Some(&main) {
            let read = Action::ReadHistory(HistoryQuery {
                from,
                to: main.clone(),
                limit: MAX_LISTED as u32 + 1,
                newest: false,
                since: None,
            });
            self.send(read, &main, Read::History);
        }
        if !self.input.merged_only {
            let tips: Vec<(String, Oid)> = self
                .remote
                .iter()
                .filter_map(|(name, tip)| Some((refs::parse_log(name)?.to_string(), tip.clone())))
                .collect();
            for (runner, tip) in tips {
                let start = match (&self.input.cursor, &self.input.change) {
                    (Some(cursor), _) => cursor.logs.get(&runner).cloned(),
                    // A view with no cursor reads each log back to its change's start.
                    (None, Some(_)) => None,
                    (None, None) => Some(tip.clone()),
                };
                if let Some(start) = &start {
                    self.starts.insert(runner.clone(), start.clone());
                }
                if start.as_ref() == Some(&tip) {
                    continue;
                }
                // The oldest events after the cursor, one more than an answer lists, so that
                // `more` is known: a log is one first-parent line, as main is.
                let since = match &start {
                    None => self
                        .started_at
                        .map(|at| Timestamp(at.millis().saturating_sub(LOG_SKEW_MS))),
                    Some(_) => None,
                };
                let read = Action::ReadHistory(HistoryQuery {
                    from: start,
                    to: tip,
                    limit: MAX_LISTED as u32 + 1,
                    newest: false,
                    since,
                });
                self.send(read, &main, Read::Log(runner));
            }
        }
        self.maybe_done(&main);
    }

    /// Once no read is in flight, the answer, listed up to `main`.
    fn maybe_done(&mut self, main: &Oid) {
        if self.pending > 0 {
            return;
        }
        let then = self.input.cursor.as_ref().map(|cursor| cursor.reds.clone());
        let (reds, red_events) = self.red_news(then.as_ref());
        let Listing {
            detail: mut listing,
            outside,
        } = list(
            &self.history,
            &self.logs,
            main,
            self.starts.clone(),
            reds,
            &self.input,
        );
        if let Some(Value::Array(events)) = listing.get_mut("events") {
            events.extend(red_events);
        }
        match &self.red {
            RedNow::Judged(red) => {
                listing.insert("red_pending".into(), red.shown().1.to_json());
            }
            RedNow::Unread(why) => {
                listing.insert("red_unread".into(), Value::from(why.as_str()));
            }
            RedNow::Unasked | RedNow::NoPostChecks => {}
        }
        let mut result = BayResult::ok(None, listing);
        result.say = sentence(&result.detail, outside);
        self.finish(result);
    }

    /// The red checks the next cursor keeps, and the red events since `then` (the cursor's):
    /// `main_red` for each red now and not then, `main_red_cleared` for each red then and not
    /// now. In a view, only red on the change's declared paths; without a cursor, a view is
    /// told what is red now, and a first call outside a view nothing. Red that could not be
    /// read keeps what the cursor held, to judge it again next time.
    fn red_news(&self, then: Option<&BTreeSet<RedMark>>) -> (BTreeSet<RedMark>, Vec<Value>) {
        let held = then.cloned().unwrap_or_default();
        let red = match &self.red {
            RedNow::Judged(red) => red,
            RedNow::NoPostChecks => return (BTreeSet::new(), Vec::new()),
            RedNow::Unasked | RedNow::Unread(_) => return (held, Vec::new()),
        };
        let mut now = BTreeSet::new();
        let mut owners = BTreeMap::new();
        for check in &red.red {
            let touches = self.paths.as_ref().is_none_or(|paths| check.touches(paths));
            if !touches {
                continue;
            }
            let mark = RedMark {
                check: check.check.id.clone(),
                environment: check.check.environment.clone(),
                merge: check.first_failure.clone(),
            };
            owners.insert(mark.clone(), check.owner().1);
            now.insert(mark);
        }
        let listed = then.is_some() || self.input.change.is_some();
        if !listed {
            return (now, Vec::new());
        }
        let event = |kind: EventKind, mark: &RedMark, change: Option<&ChangeId>| {
            let event = BayEvent::red(
                kind,
                &mark.check,
                &mark.environment,
                &mark.merge,
                change,
                self.now,
            );
            serde_json::to_value(event).expect("an event serializes")
        };
        let mut events: Vec<Value> = now
            .difference(&held)
            .map(|mark| event(EventKind::MainRed, mark, owners[mark].as_ref()))
            .collect();
        events.extend(
            held.difference(&now)
                .map(|mark| event(EventKind::MainRedCleared, mark, None)),
        );
        (now, events)
    }

    fn on_red(
        &mut self,
        main: Oid,
        mut reader: RedRead,
        completion: Completion,
    ) -> Option<Completion> {
        match reader.on(completion, &mut self.remote) {
            Err(completion) => return Some(*completion),
            Ok(RedStep::Ask(action)) => {
                let read = Read::Red(Box::new(reader));
                self.out.send(*action, Purpose::After { main, read });
                return None;
            }
            Ok(RedStep::Done(None)) => self.red = RedNow::NoPostChecks,
            Ok(RedStep::Done(Some(red))) => self.red = RedNow::Judged(red),
            Ok(RedStep::Unread(why)) => self.red = RedNow::Unread(why),
        }
        self.pending -= 1;
        self.maybe_done(&main);
        None
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        let (main, read) = match purpose {
            Purpose::Fetch => {
                let Completion::Fetched(Ok(remote)) = completion else {
                    return Some(completion);
                };
                self.on_fetched(remote);
                return None;
            }
            Purpose::After { main, read } => (main, read),
        };
        match (read, completion) {
            (Read::Red(reader), completion) => return self.on_red(main, *reader, completion),
            (Read::Change, Completion::ChainsRead(Ok(reads))) => match fold_one(&reads) {
                Ok((record, _, _)) => {
                    self.pending -= 1;
                    self.paths = Some(record.paths.clone());
                    self.started_at = Some(record.started_at);
                    let from = match &self.input.cursor {
                        Some(cursor) => cursor.main.clone(),
                        None => record.base,
                    };
                    self.read(main, Some(from))
                }
                Err(why) => self.fail(why),
            },
            (Read::History, Completion::HistoryRead(Ok(commits))) => {
                self.history = commits;
                self.pending -= 1;
                self.maybe_done(&main);
            }
            (Read::History | Read::Log(_), Completion::HistoryRead(Err(fault))) => {
                self.fail(format!(
                    "this repository cannot read main or a runner's log after the cursor \
                     ({fault}); run `bay status --since` again without a cursor"
                ))
            }
            (Read::Log(runner), Completion::HistoryRead(Ok(commits))) => {
                self.logs.insert(runner, commits);
                self.pending -= 1;
                self.maybe_done(&main);
            }
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Since, "status --since");

/// The `detail` of one answer: the merges after the cursor (oldest first, at most
/// [`MAX_LISTED`]), the events (at most as many, each log oldest first, logs by runner name),
/// `more` when either stopped early, `off_first_parent`, and the next cursor, which goes on
/// right after the last merge and event listed.
fn list(
    history: &[MainCommit],
    logs: &BTreeMap<String, Vec<MainCommit>>,
    main: &Oid,
    mut cursor_logs: BTreeMap<String, Oid>,
    reds: BTreeSet<RedMark>,
    input: &SinceInput,
) -> Listing {
    let listed = &history[..history.len().min(MAX_LISTED)];
    let mut more = history.len() > MAX_LISTED;
    let main_cursor = match listed.last() {
        Some(last) if more => last.oid.clone(),
        _ => main.clone(),
    };
    // A bay merge that a merge outside bay put off the line comes just before that merge,
    // with `via` naming it; it rides with that merge, outside the count of 500.
    let mut merges = Vec::new();
    for commit in listed {
        for hidden in bay_merges_off_line(commit).rev() {
            merges.push(MergeRow::of(hidden).via(&commit.oid));
        }
        merges.push(MergeRow::of(commit));
    }
    let outside = merges.iter().filter(|row| row.outside_bay()).count();
    let off_first_parent: u64 = listed.iter().map(|c| c.off_first_parent).sum();

    let mut events = Vec::new();
    if !input.merged_only {
        'logs: for (runner, commits) in logs {
            // Each log was read one past what an answer lists: past that, more follow.
            more |= commits.len() > MAX_LISTED;
            for raw in commits.iter().take(MAX_LISTED) {
                let event = BayEvent::from_message(&raw.message).ok();
                let wanted = event.as_ref().filter(|event| match &input.change {
                    Some(change) => event.names(change),
                    None => true,
                });
                if let Some(event) = wanted {
                    if events.len() == MAX_LISTED {
                        more = true;
                        break 'logs;
                    }
                    events.push(serde_json::to_value(event).expect("an event serializes"));
                }
                cursor_logs.insert(runner.clone(), raw.oid.clone());
            }
        }
        if input.change.is_none() {
            events.extend(listed.iter().filter_map(outside_event));
        }
        // Each merge that put bay merges off the line, once; in a view, when one is its change.
        events.extend(
            listed
                .iter()
                .filter(|commit| match &input.change {
                    Some(change) => bay_merges_off_line(commit).any(|hidden| {
                        bay_merge(&hidden.message).is_some_and(|(c, _)| &c == change)
                    }),
                    None => true,
                })
                .filter_map(not_linear_event),
        );
    }
    let cursor = Cursor {
        main: main_cursor,
        logs: cursor_logs,
        reds,
    };
    let detail = Listed {
        cursor: cursor.encode(),
        merges,
        events: (!input.merged_only).then_some(events),
        more,
        off_first_parent,
        change: input.change.clone(),
    };
    Listing {
        detail: detail.to_map(),
        outside,
    }
}

/// One answer's `detail`, and how many of its merges came outside bay, which its sentence
/// says.
struct Listing {
    detail: Map<String, Value>,
    outside: usize,
}

/// What `bay status --since` lists: the next cursor, the merges into main and the events
/// after the cursor (none with `--merged`), and whether more follow. Main's red joins them
/// once judged (`red_pending`, or `red_unread` with why).
#[derive(Serialize)]
struct Listed<'a> {
    cursor: String,
    merges: Vec<MergeRow<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    events: Option<Vec<Value>>,
    more: bool,
    off_first_parent: u64,
    /// In a view, its change: only what names it is listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    change: Option<ChangeId>,
}

impl Detail for Listed<'_> {}

/// The bay merges `commit` (a merge outside bay) brought in off the first-parent line, as
/// read (newest first).
fn bay_merges_off_line(commit: &MainCommit) -> impl DoubleEndedIterator<Item = &MainCommit> {
    commit
        .brought
        .iter()
        .filter(|side| bay_merge(&side.message).is_some())
}

/// Whether the read behind `commit` stopped before it read every commit it brought in.
fn capped(commit: &MainCommit) -> bool {
    (commit.brought.len() as u64) < commit.off_first_parent
}

/// The `main_not_linear` event of a merge outside bay that put bay merges off the line.
fn not_linear_event(commit: &MainCommit) -> Option<Value> {
    let hidden = bay_merges_off_line(commit).count() as u64;
    if hidden == 0 || bay_merge(&commit.message).is_some() {
        return None;
    }
    let event = BayEvent::not_linear(commit, hidden, capped(commit));
    Some(serde_json::to_value(event).expect("an event serializes"))
}

/// The plain sentence of an answer: how many versions reached main (`outside` of them outside
/// bay) and how many events, and where to go on from.
fn sentence(detail: &Map<String, Value>, outside: usize) -> String {
    let count = |key: &str| {
        detail
            .get(key)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    let many = |n: usize, one: &str, more: &str| format!("{n} {}", if n == 1 { one } else { more });
    let mut text = format!(
        "{} main",
        many(
            count("merges"),
            "saved version reached",
            "saved versions reached"
        )
    );
    if outside > 0 {
        text.push_str(&format!(" ({outside} of them outside bay)"));
    }
    if detail.contains_key("events") {
        let events = many(count("events"), "event was", "events were");
        text.push_str(&format!(" and {events} listed"));
    }
    text.push_str(" since the cursor; ");
    if detail.get("more") == Some(&Value::Bool(true)) {
        text.push_str("more follow: run it again with detail.cursor now.");
    } else {
        text.push_str("pass detail.cursor to --since next time.");
    }
    text
}

/// How a commit outside bay reached main: `merge` with more than one parent, else `outside`.
fn merged_as(commit: &MainCommit) -> &'static str {
    if commit.parents.len() > 1 {
        "merge"
    } else {
        "outside"
    }
}

fn subject(commit: &MainCommit) -> &str {
    commit.message.lines().next().unwrap_or("")
}

/// One merge as `detail.merges` lists it: a bay merge names its change and actor (and, when
/// a merge outside bay put it off the line, that merge as `via`); any other commit is
/// `outside_bay`, with how it got there.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum MergeRow<'a> {
    Bay {
        commit: &'a Oid,
        base: Option<&'a Oid>,
        change: ChangeId,
        actor: Option<String>,
        at: Timestamp,
        /// Always `false`.
        outside_bay: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        via: Option<&'a Oid>,
    },
    Outside {
        commit: &'a Oid,
        base: Option<&'a Oid>,
        at: Timestamp,
        subject: &'a str,
        /// Always `true`.
        outside_bay: bool,
        merged_as: &'static str,
        committer: &'a str,
    },
}

impl<'a> MergeRow<'a> {
    fn of(commit: &'a MainCommit) -> MergeRow<'a> {
        let base = commit.parents.first();
        match bay_merge(&commit.message) {
            Some((change, actor)) => MergeRow::Bay {
                commit: &commit.oid,
                base,
                change,
                actor,
                at: commit.at,
                outside_bay: false,
                via: None,
            },
            None => MergeRow::Outside {
                commit: &commit.oid,
                base,
                at: commit.at,
                subject: subject(commit),
                outside_bay: true,
                merged_as: merged_as(commit),
                committer: &commit.committer,
            },
        }
    }

    /// The same bay merge, put off the line by the merge `merge`.
    fn via(mut self, merge: &'a Oid) -> MergeRow<'a> {
        if let MergeRow::Bay { via, .. } = &mut self {
            *via = Some(merge);
        }
        self
    }

    fn outside_bay(&self) -> bool {
        matches!(self, MergeRow::Outside { .. })
    }
}

/// The `outside_merge` event of a main commit that did not merge through bay.
fn outside_event(commit: &MainCommit) -> Option<Value> {
    if bay_merge(&commit.message).is_some() {
        return None;
    }
    let event = BayEvent::outside_merge(&commit.oid, merged_as(commit), subject(commit), commit.at);
    Some(serde_json::to_value(event).expect("an event serializes"))
}

/// `detail.unattributed` of `bay status`: of `commits` (main's newest first-parent commits in
/// the window, oldest first), those that did not merge through bay, counted per committer and
/// listed newest first, beside how many did.
pub fn unattributed(window: u32, commits: &[MainCommit]) -> Unattributed<'_> {
    let outside: Vec<&MainCommit> = commits
        .iter()
        .rev()
        .filter(|commit| bay_merge(&commit.message).is_none())
        .collect();
    let mut writers: BTreeMap<&str, u64> = BTreeMap::new();
    for commit in &outside {
        *writers.entry(commit.committer.as_str()).or_default() += 1;
    }
    let mut by_writer: Vec<(&str, u64)> = writers.into_iter().collect();
    by_writer.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let merges = outside
        .iter()
        .map(|commit| OutsideMerge {
            commit: &commit.oid,
            base: commit.parents.first(),
            at: commit.at,
            subject: subject(commit),
            merged_as: merged_as(commit),
            merged: commit
                .brought
                .iter()
                .take(MERGED_LISTED)
                .map(|c| &c.oid)
                .collect(),
            merged_count: commit.off_first_parent,
            merges_off_first_parent: bay_merges_off_line(commit).count(),
        })
        .collect();
    // A bay merge put off the line still merged through bay: it counts at the merge.
    let hidden: usize = outside.iter().map(|c| bay_merges_off_line(c).count()).sum();
    Unattributed {
        window,
        count: outside.len(),
        by_writer: by_writer
            .into_iter()
            .map(|(writer, count)| WriterCount { writer, count })
            .collect(),
        through_bay: commits.len() - outside.len() + hidden,
        merges,
        off_first_parent: outside.iter().map(|c| c.off_first_parent).sum(),
        merges_off_first_parent: hidden,
        landings_off_first_parent_capped: outside.iter().any(|c| capped(c)),
    }
}

/// `detail.unattributed` of `bay status`: the window's commits that did not merge through
/// bay, counted per committer and listed, beside how many did.
#[derive(Debug, Serialize)]
pub struct Unattributed<'a> {
    window: u32,
    count: usize,
    /// Most commits first, then by name.
    by_writer: Vec<WriterCount<'a>>,
    through_bay: usize,
    /// Newest first.
    merges: Vec<OutsideMerge<'a>>,
    off_first_parent: u64,
    merges_off_first_parent: usize,
    landings_off_first_parent_capped: bool,
}

#[derive(Debug, Serialize)]
struct WriterCount<'a> {
    writer: &'a str,
    count: u64,
}

/// One main commit that did not merge through bay.
#[derive(Debug, Serialize)]
struct OutsideMerge<'a> {
    commit: &'a Oid,
    base: Option<&'a Oid>,
    at: Timestamp,
    subject: &'a str,
    merged_as: &'static str,
    /// The first [`MERGED_LISTED`] commits it brought in off the first-parent line.
    merged: Vec<&'a Oid>,
    merged_count: u64,
    merges_off_first_parent: usize,
}

/// A `main_not_linear` warning: a merge outside bay that put bay merges off main's
/// first-parent line, and what the host's owner does about it.
#[derive(Debug, Serialize)]
struct NotLinear<'a> {
    warning: &'static str,
    commit: &'a Oid,
    parents: &'a [Oid],
    merges_off_first_parent: u64,
    capped: bool,
    hint: &'static str,
}

impl Detail for Unattributed<'_> {}
impl Detail for NotLinear<'_> {}

/// `detail.warnings` of `bay status`: `main_not_linear` for each merge outside bay in the window
/// that put bay merges off main's first-parent line, newest first.
pub fn not_linear_warnings(commits: &[MainCommit]) -> Vec<Value> {
    commits
        .iter()
        .rev()
        .filter(|commit| bay_merge(&commit.message).is_none())
        .filter_map(|commit| {
            let hidden = bay_merges_off_line(commit).count() as u64;
            (hidden > 0).then(|| NotLinear {
                warning: "main_not_linear",
                commit: &commit.oid,
                parents: &commit.parents,
                merges_off_first_parent: hidden,
                capped: capped(commit),
                hint: "require linear history for main on your host, so only fast-forward pushes \
                       reach it",
            })
        })
        .map(|warning| warning.to_json())
        .collect()
}

/// The most commits a row of `unattributed` names under `merged`.
const MERGED_LISTED: usize = 20;

#[cfg(test)]
mod tests;
