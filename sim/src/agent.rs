//! Simulated agents: each takes tasks, starts a change, edits its view, asks to merge, and
//! repairs what comes back refused. They use bay's own command machines; only the editing and
//! the waiting are the agent's.

use std::collections::BTreeMap;

use bay_core::id::{ChangeId, OpId};
use bay_core::machine::Machine;
use bay_core::machine::abandon::{Abandon, AbandonInput};
use bay_core::machine::merge::{Merge, MergeInput};
use bay_core::machine::merge_wait::MergeWait;
use bay_core::machine::runner::RunMode;
use bay_core::machine::start::{Start, StartInput, StartTarget};
use bay_core::machine::undo::{Undo, UndoInput};
use bay_core::reason::ReasonCode;
use bay_core::record::{ChangeRecord, StepBody};
use bay_core::result::{BayResult, Decision, OpState};
use bay_core::time::Timestamp;

use crate::git_model::View;
use crate::rng::Rng;
use crate::world::{MAIN, Millis, PATHS, Role, World};
use bay_core::check::plan::POLICY_PATH;

/// A file under every simulated check's `adapter` directory.
const ADAPTER_PATH: &str = "checks/run";
use bay_core::git::refs;

/// The command an agent is running (each machine boxed: their sizes differ by hundreds of bytes).
#[derive(Debug)]
pub enum Cmd {
    Start(Box<Start>),
    Merge(Box<Merge>),
    Abandon(Box<Abandon>),
    Undo(Box<Undo>),
    /// `bay merge --wait`: the request, then the operation's own run, here.
    Wait(Box<MergeWait>),
}

impl Cmd {
    pub fn machine(&mut self) -> &mut dyn Machine {
        match self {
            Cmd::Start(m) => m.as_mut(),
            Cmd::Merge(m) => m.as_mut(),
            Cmd::Abandon(m) => m.as_mut(),
            Cmd::Undo(m) => m.as_mut(),
            Cmd::Wait(m) => m.as_mut(),
        }
    }

    pub fn machine_ref(&self) -> &dyn Machine {
        match self {
            Cmd::Start(m) => m.as_ref(),
            Cmd::Merge(m) => m.as_ref(),
            Cmd::Abandon(m) => m.as_ref(),
            Cmd::Undo(m) => m.as_ref(),
            Cmd::Wait(m) => m.as_ref(),
        }
    }
}

/// One piece of work an agent took.
#[derive(Clone, Debug)]
struct Task {
    intent: String,
    paths: Vec<String>,
    change: Option<ChangeId>,
    op: Option<OpId>,
    repairs: u32,
    faults: u32,
    edits: u32,
    /// The view needs the agent's edit before the next merge.
    edit_pending: bool,
    /// Ask to merge twice in a row, as an agent that retries would.
    retry_merge: bool,
    /// The change was too large: from now on each edit is one line per path, as an agent that
    /// split its work would make.
    small: bool,
    /// An undo of this merged change: `bay undo` opens the change, which merges unedited.
    undo: Option<ChangeId>,
    /// A fix of this merged change (`bay start --fixes`), which a held main still takes.
    fixes: Option<ChangeId>,
    /// Changes that must merge first (`bay start --after`).
    after: Vec<ChangeId>,
    /// Ask to merge with `bay merge --wait`: run the operation here, as its runner.
    wait: bool,
}

#[derive(Debug)]
pub struct Agent {
    pub actor: String,
    pub cmd: Option<Cmd>,
    /// The files of each change's view, as this agent edits them.
    pub views: BTreeMap<ChangeId, View>,
    rng: Rng,
    task: Option<Task>,
    done: bool,
}

impl Agent {
    pub fn new(actor: String, rng: Rng) -> Agent {
        Agent {
            actor,
            cmd: None,
            views: BTreeMap::new(),
            rng,
            task: None,
            done: false,
        }
    }

    pub fn is_done(&self) -> bool {
        self.done && self.cmd.is_none()
    }
}

/// How many of a history's newest compacted changes a task may undo, fix or take up again.
const HISTORY_TARGETS: usize = 16;
/// How long an agent waits between looks at its operation.
const POLL_MS: Millis = 5_000;
/// How long an agent works on an edit, shortest and longest.
const EDIT_MS: (Millis, Millis) = (5_000, 90_000);
/// Repairs an agent attempts on one task before it gives the task up.
const MAX_REPAIRS: u32 = 2;
/// Faults an agent's commands may meet on one task before it gives the task up.
const MAX_FAULTS: u32 = 5;

fn agent(world: &mut World, host: usize) -> &mut Agent {
    match &mut world.hosts[host].role {
        Role::Agent(agent) => agent,
        Role::Runner { .. } => unreachable!("agent steps run only on agent hosts"),
    }
}

/// The agent's next move when it runs no command. Returns when to look again, if ever.
pub fn next(world: &mut World, host: usize, now: Timestamp) -> Option<Millis> {
    let entropy = world.rng.next_u64();
    let healed = world.healed;
    let Some(task) = agent(world, host).task.clone() else {
        return take_task(world, host);
    };
    let actor = agent(world, host).actor.clone();
    if let (Some(target), None) = (&task.undo, &task.change) {
        let input = UndoInput {
            target: target.clone(),
            actor,
            main: MAIN.into(),
            entropy,
            disk: None,
        };
        agent(world, host).cmd = Some(Cmd::Undo(Box::new(Undo::new(input, now))));
        return None;
    }
    let Some(change) = task.change.clone() else {
        let target = StartTarget::Intent {
            intent: task.intent.clone(),
            paths: task.paths.clone(),
        };
        let input = StartInput {
            target,
            actor,
            main: MAIN.into(),
            new: false,
            fixes: task.fixes.clone(),
            after: task.after.clone(),
            entropy,
            disk: None,
            import: None,
        };
        agent(world, host).cmd = Some(Cmd::Start(Box::new(Start::new(input, now))));
        return None;
    };
    let Some(op) = task.op.clone() else {
        if task.edit_pending {
            edit(world, host, &change);
        }
        let input = MergeInput {
            change,
            actor,
            main: MAIN.into(),
            entropy,
        };
        // `merge --wait` runs the operation here, as a runner named for this host; an agent
        // about to ask again for the same draft asks plainly first.
        let cmd = match task.wait && !task.retry_merge {
            true => {
                let name = world.hosts[host].name.clone();
                let cfg = world.runner_config(&name, RunMode::Loop);
                Cmd::Wait(Box::new(MergeWait::new(input, now, cfg)))
            }
            false => Cmd::Merge(Box::new(Merge::new(input, now))),
        };
        agent(world, host).cmd = Some(cmd);
        return None;
    };
    // Waiting on the operation: look at the remote's record, as `bay status` would.
    let Some(record) = read_record(world, &change) else {
        if world.git.remote.get(&refs::change(&change)).is_some() {
            // A record bay cannot read: `bay status` names it and what a person does about
            // it, so the agent hands the task back.
            finish_task(world, host);
            return Some(0);
        }
        return Some(POLL_MS);
    };
    let Some(operation) = record.op(&op) else {
        return Some(POLL_MS);
    };
    if !operation.state.is_terminal() && place_lost(world, &change, operation) {
        // `bay status` says no runner will take it up from its broken place: ask again.
        let me = agent(world, host);
        if let Some(task) = me.task.as_mut() {
            task.op = None;
            task.retry_merge = false;
        }
        return Some(0);
    }
    if !operation.state.is_terminal() {
        if !healed && agent(world, host).rng.chance(10) && record.actor == agent(world, host).actor
        {
            let input = AbandonInput {
                change,
                actor,
                entropy,
            };
            agent(world, host).cmd = Some(Cmd::Abandon(Box::new(Abandon::new(input, now))));
            return None;
        }
        return Some(POLL_MS);
    }
    let reason = operation.outcome.as_ref().and_then(|o| o.reason);
    let repairable = matches!(
        reason,
        Some(
            ReasonCode::MergeConflict
                | ReasonCode::CheckFailed
                | ReasonCode::CheckUnknown
                | ReasonCode::ChangeTooLarge
        )
    );
    let me = agent(world, host);
    let task = me.task.as_mut().expect("a task is in hand");
    if operation.state == OpState::Blocked && repairable && task.repairs < MAX_REPAIRS {
        // Repair: pick the change up again (bringing in newer main), edit, merge again.
        task.repairs += 1;
        task.small |= reason == Some(ReasonCode::ChangeTooLarge);
        task.op = None;
        let target = StartTarget::Change(change);
        let input = StartInput {
            target,
            actor,
            main: MAIN.into(),
            new: false,
            fixes: None,
            after: Vec::new(),
            entropy,
            disk: None,
            import: None,
        };
        me.cmd = Some(Cmd::Start(Box::new(Start::new(input, now))));
        return None;
    }
    finish_task(world, host);
    Some(0)
}

fn take_task(world: &mut World, host: usize) -> Option<Millis> {
    if world.tasks_left == 0 || world.healed {
        agent(world, host).done = true;
        world.maybe_heal();
        return None;
    }
    world.tasks_left -= 1;
    world.next_task += 1;
    let n = world.next_task;
    // Now and then a task takes a merged change back out of main: an undo, merged unedited
    // and never repaired, so that its merge is exactly the reverse (S8).
    // With a history, the newest of its compacted changes may be undone or fixed too: their
    // markers are gone, and bay reads their merges from the index.
    let history = world.history.clone();
    let compacted: Vec<&crate::history::Ended> = history
        .changes()
        .iter()
        .rev()
        .filter(|ended| history.compacted(ended))
        .take(HISTORY_TARGETS)
        .collect();
    let landed: Vec<ChangeId> = world
        .git
        .remote
        .refs
        .keys()
        .filter_map(|name| name.strip_prefix(refs::LANDED))
        .filter_map(|change| ChangeId::parse(change).ok())
        .chain(compacted.iter().map(|ended| ended.change.clone()))
        .collect();
    if !landed.is_empty() && agent(world, host).rng.chance(15) {
        let me = agent(world, host);
        let target = me.rng.pick(&landed).clone();
        me.task = Some(Task {
            intent: format!("undo of {target}"),
            paths: Vec::new(),
            change: None,
            op: None,
            repairs: MAX_REPAIRS,
            faults: 0,
            edits: 0,
            edit_pending: false,
            retry_merge: false,
            small: false,
            undo: Some(target),
            fixes: None,
            after: Vec::new(),
            wait: false,
        });
        return Some(0);
    }
    let shared = !world.intents.is_empty() && agent(world, host).rng.chance(250);
    let (intent, paths) = if shared {
        let last = world.intents.len() as u64 - 1;
        let index = agent(world, host).rng.range(0, last) as usize;
        world.intents[index].clone()
    } else if !compacted.is_empty() && agent(world, host).rng.chance(100) {
        // The work of a compacted history change, taken up again: its start finds no
        // generation ref and must open the one after the index's.
        let me = agent(world, host);
        let old = me.rng.pick(&compacted).intent.clone();
        (old, vec![me.rng.pick(&PATHS).to_string()])
    } else if agent(world, host).rng.chance(40) {
        // Now and then a task tunes the checks themselves: the policy, with an adapter path.
        let me = agent(world, host);
        let mut paths = vec![POLICY_PATH.to_string()];
        if me.rng.chance(500) {
            paths.push(ADAPTER_PATH.to_string());
        }
        (format!("task {n}: tune the checks"), paths)
    } else {
        let me = agent(world, host);
        let first = me.rng.pick(&PATHS).to_string();
        let mut paths = vec![first];
        if me.rng.chance(400) {
            let second = me.rng.pick(&PATHS).to_string();
            if !paths.contains(&second) {
                paths.push(second);
            }
        }
        (format!("task {n}"), paths)
    };
    world.intents.push((intent.clone(), paths.clone()));
    let retry_merge = agent(world, host).rng.chance(150);
    // Now and then the work fixes a merged change.
    let fixes = match landed.is_empty() {
        false if agent(world, host).rng.chance(3) => {
            let me = agent(world, host);
            Some(me.rng.pick(&landed).clone())
        }
        _ => None,
    };
    // Now and then it needs another agent's open change on main first.
    let open: Vec<ChangeId> = world
        .hosts
        .iter()
        .filter_map(|host| match &host.role {
            Role::Agent(other) => other.task.as_ref().and_then(|t| t.change.clone()),
            Role::Runner { .. } => None,
        })
        .collect();
    let after = match open.is_empty() {
        false if agent(world, host).rng.chance(6) => {
            let me = agent(world, host);
            vec![me.rng.pick(&open).clone()]
        }
        _ => Vec::new(),
    };
    agent(world, host).task = Some(Task {
        intent,
        paths,
        change: None,
        op: None,
        repairs: 0,
        faults: 0,
        edits: 0,
        edit_pending: false,
        retry_merge,
        small: false,
        undo: None,
        fixes,
        after,
        wait: world.wait_rng.chance(250),
    });
    Some(0)
}

fn finish_task(world: &mut World, host: usize) {
    if let Some(task) = agent(world, host).task.take() {
        world.intents.retain(|(intent, _)| intent != &task.intent);
    }
}

/// Writes new content into the task's paths of the change's view; now and then a bug.
fn edit(world: &mut World, host: usize, change: &ChangeId) {
    let me = agent(world, host);
    let Some(task) = me.task.as_mut() else { return };
    task.edits += 1;
    task.edit_pending = false;
    let bug = task.repairs == 0 && me.rng.chance(60);
    // A policy edit raises its revision, but now and then forgets to.
    let raise = !me.rng.chance(150);
    let marker = if bug { " BUG" } else { "" };
    let line = format!(
        "{} by {} edit {}{marker}",
        task.intent, me.actor, task.edits
    );
    // Most edits are a line per path; some are long, and a few write a binary file, now and
    // then one over a MiB: what `[limits]` caps.
    let text = match me.rng.range(0, 99) {
        _ if task.small => format!("{line}\n"),
        0..=2 if me.rng.chance(300) => format!("\0{line}\n{}", "x".repeat(1_100_000)),
        0..=2 => format!("\0{line}\n"),
        3..=12 => (0..me.rng.range(5, 30))
            .map(|n| format!("{line}, line {n}\n"))
            .collect(),
        _ => format!("{line}\n"),
    };
    let mut contents: Vec<(String, String)> = task
        .paths
        .iter()
        .map(|path| (path.clone(), text.clone()))
        .collect();
    // Now and then the edit only restores what main already holds: nothing new to merge.
    let same_as_main = me.rng.chance(50);
    let main = world.git.remote.get(&refs::main(MAIN)).cloned();
    let policy = main
        .as_ref()
        .and_then(|main| world.git.store.read(main, POLICY_PATH))
        .map(|text| tuned(text, raise));
    for (path, text) in &mut contents {
        if path == POLICY_PATH {
            match &policy {
                Some(policy) => *text = policy.clone(),
                None => *text = "revision = 1\nunchecked = true\n".into(),
            }
        }
    }
    let main_files = main.and_then(|main| world.git.store.files(&main));
    // Every path but the policy gets the same text: its blob (a hash of the text, up to a
    // MiB) is made once.
    let mut made: Option<(String, bay_core::git::Oid)> = None;
    let blobs: Vec<(String, bay_core::git::Oid)> = contents
        .into_iter()
        .filter_map(|(path, text)| match &main_files {
            Some(files) if same_as_main => Some((path.clone(), files.get(&path)?.clone())),
            _ => {
                let blob = match &made {
                    Some((made, blob)) if *made == text => blob.clone(),
                    _ => {
                        let blob = world.git.store.blob(&text);
                        made = Some((text, blob.clone()));
                        blob
                    }
                };
                Some((path, blob))
            }
        })
        .collect();
    let me = agent(world, host);
    let view = me.views.entry(change.clone()).or_default();
    for (path, blob) in blobs {
        view.files.insert(path, blob);
    }
}

/// Main's policy with its revision raised (or, when `raise` is false, kept: a change the
/// runner must refuse) and a comment that makes the edit new.
fn tuned(policy: &str, raise: bool) -> String {
    let mut out = String::new();
    for line in policy.lines() {
        match line
            .strip_prefix("revision = ")
            .and_then(|n| n.parse::<i64>().ok())
        {
            Some(revision) if raise => out.push_str(&format!("revision = {}\n", revision + 1)),
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out.push_str("# tuned\n");
    out
}

/// Whether the queue place of `op`, a live operation of `change`, is gone or holds something
/// other than its request, as `bay status` judges it.
fn place_lost(world: &World, change: &ChangeId, op: &bay_core::record::Operation) -> bool {
    let Some(tip) = world.git.remote.get(&refs::change(change)) else {
        return false;
    };
    // `lost_place` reads only the newest request of `op` among the steps, so only that one is
    // handed over: an agent asks this at every look at a live operation, and a copy of every
    // step of its chain cost more than the rest of the look.
    let (oids, _) = world.git.store.first_parents(tip, None);
    let steps: Vec<_> = oids
        .into_iter()
        .filter_map(|oid| {
            let step = world.git.store.step(&oid)?;
            let asked =
                matches!(&step.body, StepBody::Request { op: asked, .. } if *asked == op.id);
            asked.then(|| (oid, (*step).clone()))
        })
        .take(1)
        .collect();
    bay_core::machine::unreadable::lost_place(&world.git.remote.refs, &steps, op).is_some()
}

fn read_record(world: &World, change: &ChangeId) -> Option<std::sync::Arc<ChangeRecord>> {
    world.git.record(change)
}

/// The agent's command ended: act on its result. Returns when to step next.
pub fn finished(world: &mut World, host: usize) -> Millis {
    let me = agent(world, host);
    let Some(cmd) = me.cmd.take() else { return 0 };
    let result: BayResult = cmd
        .machine_ref()
        .outcome()
        .cloned()
        .expect("finished commands have an outcome");
    // `merge --wait` that ended before any run ended as its request did: as `bay merge`.
    let asked = match &cmd {
        Cmd::Merge(_) => true,
        Cmd::Wait(waited) => !waited.running(),
        _ => false,
    };
    if let (true, Decision::Blocked, Some(reason)) = (asked, result.decision, result.reason) {
        *world.submit_refusals.entry(reason.as_str()).or_insert(0) += 1;
    }
    if let Cmd::Undo(_) = &cmd {
        let what = match (result.decision, &result.change, result.reason) {
            (Decision::Ok, Some(_), _) => "opened",
            (Decision::Ok, None, _) => "nothing to undo",
            (_, _, Some(reason)) => reason.as_str(),
            _ => "failed",
        };
        *world.undos.entry(what).or_insert(0) += 1;
    }
    let me = agent(world, host);
    let Some(task) = me.task.as_mut() else {
        return 0;
    };
    match (&cmd, result.decision) {
        (Cmd::Undo(_), Decision::Ok) if result.change.is_some() => {
            // The undo change is open with the reverse as its draft: merge it as it is.
            task.change = result.change.clone();
            task.op = None;
            task.edit_pending = false;
            0
        }
        (Cmd::Start(_), Decision::Ok) => {
            task.change = result.change.clone();
            task.op = None;
            // Now and then an agent asks to merge a repaired change before it settles the
            // conflict markers bay left in its files, which bay must refuse.
            let conflicted = result
                .detail
                .get("conflicts")
                .and_then(serde_json::Value::as_array)
                .is_some_and(|paths| !paths.is_empty());
            task.edit_pending = !(conflicted && me.rng.chance(300));
            // The agent takes a while to do its edit.
            me.rng.range(EDIT_MS.0, EDIT_MS.1)
        }
        (Cmd::Merge(_) | Cmd::Wait(_), Decision::Blocked)
            if asked && result.reason == Some(ReasonCode::MergeConflict) =>
        {
            // The markers bay left are still there: settle them (the edit rewrites every file
            // of the task), then ask again.
            task.edit_pending = true;
            me.rng.range(EDIT_MS.0, EDIT_MS.1)
        }
        (Cmd::Merge(_) | Cmd::Wait(_), Decision::Blocked)
            if asked
                && result.reason == Some(ReasonCode::ChangeTooLarge)
                && task.repairs < MAX_REPAIRS =>
        {
            // Split the work: a smaller edit, then ask again.
            task.repairs += 1;
            task.small = true;
            task.edit_pending = true;
            me.rng.range(EDIT_MS.0, EDIT_MS.1)
        }
        (Cmd::Merge(_), Decision::Queued) => {
            if task.retry_merge {
                // Ask again at once: the same draft must give back the same operation.
                task.retry_merge = false;
                return 0;
            }
            task.op = result.op_id.clone();
            POLL_MS
        }
        (Cmd::Wait(waited), decision) if waited.running() => {
            // The operation ended, or waits on what it cannot merge before (a held main, a
            // change it names): the agent looks at it as it does after `bay merge`. Replies
            // still on their way to the run are its own, never the next command's.
            task.op = waited.op().cloned();
            let runs = waited.generation().div_ceil(2);
            *world.waits.entry("ran").or_insert(0) += u64::from(runs);
            if waited.carried_request() {
                *world.waits.entry("carrying the request").or_insert(0) += 1;
            }
            if runs > 1 {
                *world.waits.entry("request not carried").or_insert(0) += 1;
            }
            *world.waits.entry(decision.as_str()).or_insert(0) += 1;
            world.hosts[host].incarnation += 1;
            0
        }
        (Cmd::Abandon(_), _) => {
            finish_task(world, host);
            0
        }
        (_, Decision::Failed) if task.faults < MAX_FAULTS => {
            task.faults += 1;
            POLL_MS
        }
        _ => {
            finish_task(world, host);
            0
        }
    }
}
