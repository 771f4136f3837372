//! `bay hook <moment>`: one agent hook event. It reads the product's payload on stdin and the
//! local facts the moment needs, lets `bay_core::hook::decide` judge, keeps the session's
//! work record, and answers in the product's protocol rather than with a `bay.result/1`:
//! stdout and the exit code belong to the product, so `--json` changes nothing here.
//!
//! What it reads, by moment, all from this machine and never the network:
//! - every moment: the clone (by reading files) and its `bay.*` Git config (one process),
//!   and this session's state;
//! - `tool.before` of an edit: the other sessions' states, for their holds, and the policy at
//!   main as this clone last fetched it, for `[locks] paths`. It reads no config unless the
//!   edit names a lockable path, so it answers as both products deny alike (exit 2, reason
//!   on stderr);
//! - the network only for locks and checkpoints: a `tool.before` of a lockable path, and a
//!   `turn.end` or `session.end` of a session that holds locks, fetch those lock refs (one
//!   fetch) and push what `bay_core::lock` decides (one push, create-only or leased). A push
//!   that does not land is decided once more on a new fetch, so the loser of a race meets the
//!   winner's lock. A draft checkpoint (at `session.end`, and when the session sat idle) runs
//!   `bay_core::machine::checkpoint`: one fetch of the change's chain, one leased append;
//! - every other moment: `.bay/config.toml` at main as this clone last fetched it, for
//!   `[agent]` (the product, the instruction files) and `[hooks]`;
//! - `session.start`: the view's declared paths and the other views', and which instruction
//!   files main changed since the view's base; `turn.end`: the view's unsaved files;
//! - `session.start` and `turn.start`, for the notices: what this clone's last fetch left in
//!   its mirror of the remote's refs (`refs/bay-mirror/<remote>/`): the view's chain, the
//!   queue places, the runners' presences and when this clone first held each, main's
//!   commits on the view's declared paths since its base, and a test merge of its queued
//!   draft, all local.
//!
//! The work record lives under `<common Git dir>/bay/sessions/<session>/`: `record.jsonl`,
//! one row per event, and `state.json`, what the next event reads. At `session.start` it
//! also names the session to the product's environment file, when the product gives one.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bay_core::adapter::{Moment, Product};
use bay_core::check::plan::POLICY_PATH;
use bay_core::config::{CONFIG_PATH, Config, HookSettings};
use bay_core::git::Oid;
use bay_core::git::refs;
use bay_core::hook::notice::{self, MERGED_ON_READ, MainCommit, PresenceRead};
use bay_core::hook::session::folder_name;
use bay_core::hook::{
    self, Facts, LockFacts, NoticeFacts, Outcome, Payload, Saved, Session, StartFacts, Tool,
};
use bay_core::id::ChangeId;
use bay_core::lock::{self, Lock};
use bay_core::machine::checkpoint::{Checkpoint, CheckpointInput};
use bay_core::machine::{ChainQuery, Completion, FetchSpec, NewValue, PushPlan, RefUpdate};
use bay_core::policy::Policy;
use bay_core::presence::PRESENCES_READ;
use bay_drivers::clock;
use bay_drivers::git::Git;
use bay_drivers::remote::{Repo, mirror_prefix};
use bay_drivers::views::{Taken, Views};

use crate::Cli;
use crate::context::Context;
use crate::local::Local;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// What just happened, such as tool.before or session.start; `bay help --json` lists
    /// each product's events under `detail.adapters`.
    pub moment: String,
}

pub fn run(cli: &Cli, args: &Args) -> ExitCode {
    let mut stdin = Vec::new();
    let payload = match std::io::stdin().read_to_end(&mut stdin) {
        Ok(_) => Payload::parse(&stdin),
        Err(e) => Err(format!("stdin cannot be read: {e}")),
    };
    let start = payload
        .as_ref()
        .ok()
        .and_then(|p| p.cwd.as_deref())
        .map(PathBuf::from)
        .filter(|dir| dir.is_dir())
        .or_else(|| cli.dir.clone())
        .unwrap_or_else(|| PathBuf::from("."));
    let context = Context::discover(Some(&start)).ok();
    let here = Here::new(context, &start);
    let mut facts = here.facts(&args.moment, payload.as_ref().ok());
    let locks = here.locks(&args.moment, payload.as_ref().ok(), &mut facts);
    let mut outcome = match locks {
        Some(locks) => locks.settle(&args.moment, payload, facts),
        None => hook::decide(&args.moment, payload, &facts),
    };
    here.checkpoint(&mut outcome);
    here.keep(&outcome);
    if let Some(context) = &here.context {
        super::live::after_event(context, &args.moment);
    }
    if args.moment.parse::<Moment>() == Ok(Moment::SessionStart) {
        export_session(&outcome.session.session);
    }
    answer(&outcome)
}

/// Names the session to its later shell commands, so a `bay start` there knows its own
/// session (`CHANGE_HELD`): Claude Code runs the lines a `SessionStart` hook appends to the
/// file `CLAUDE_ENV_FILE` names before each shell command. Other products set no such file.
fn export_session(session: &str) {
    let (Some(file), Some(line)) = (
        std::env::var_os("CLAUDE_ENV_FILE"),
        bay_core::machine::start::export_line(session),
    ) else {
        return;
    };
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut env| env.write_all(line.as_bytes()));
    if let Err(e) = appended {
        let _ = writeln!(
            std::io::stderr(),
            "bay: the session was not named to its shell: {e}"
        );
    }
}

/// The lock refs one event reads and writes on the remote.
struct Locks {
    repo: Repo,
    paths: Vec<String>,
}

impl Locks {
    /// Each path's lock, by one fetch of those refs alone.
    fn read(&self) -> Result<Vec<(String, lock::Read)>, String> {
        let patterns = self
            .paths
            .iter()
            .map(|path| format!("{}*", refs::lock(path)));
        let held = self
            .repo
            .fetch(&FetchSpec::new(patterns))
            .map_err(|fault| fault.to_string())?;
        self.paths
            .iter()
            .map(|path| {
                let read = match held.get(&refs::lock(path)) {
                    None => lock::Read::Absent,
                    Some(oid) => {
                        let message = self
                            .repo
                            .read_steps(std::slice::from_ref(oid))
                            .map_err(|fault| fault.to_string())?
                            .pop()
                            .map(|raw| raw.message)
                            .unwrap_or_default();
                        lock::Read::Present {
                            oid: oid.clone(),
                            lock: Lock::from_message(&message),
                        }
                    }
                };
                Ok((path.clone(), read))
            })
            .collect()
    }

    /// Every write in one atomic push; `Err` says why it did not land.
    fn write(&self, writes: &[lock::Write]) -> Result<(), String> {
        let updates = writes
            .iter()
            .map(|write| {
                let new = match &write.lock {
                    Some(lock) => NewValue::Oid(
                        self.repo
                            .write_record(&lock.to_message())
                            .map_err(|fault| fault.to_string())?,
                    ),
                    None => NewValue::Delete,
                };
                Ok(RefUpdate {
                    name: refs::lock(&write.path),
                    expect: write.expect.clone(),
                    new,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let plan = PushPlan {
            updates,
            atomic: true,
            ..PushPlan::default()
        };
        self.repo.push(&plan).outcome.landed()
    }

    /// Decides the event and pushes the lock writes it asks for. A push that does not land
    /// (another session moved a lock first, or no answer) gets one more fetch and decision;
    /// if that push fails too, the event is decided as with no answer from the remote.
    fn settle(&self, moment: &str, payload: Result<Payload, String>, mut facts: Facts) -> Outcome {
        for again in [true, false] {
            let outcome = hook::decide(moment, payload.clone(), &facts);
            if outcome.locks.is_empty() {
                return outcome;
            }
            let Err(why) = self.write(&outcome.locks) else {
                return outcome;
            };
            let read = if again { self.read() } else { Err(why) };
            if let Some(locks) = facts.locks.as_mut() {
                locks.read = read;
            }
        }
        hook::decide(moment, payload, &facts)
    }
}

/// Prints the answer; a closed pipe is the product's choice.
fn answer(outcome: &Outcome) -> ExitCode {
    let _ = std::io::stdout().write_all(outcome.answer.stdout.as_bytes());
    let _ = std::io::stderr().write_all(outcome.answer.stderr.as_bytes());
    ExitCode::from(outcome.answer.exit)
}

/// Where the event happened: the clone and view, when it is in one.
struct Here {
    context: Option<Context>,
    tree: String,
}

impl Here {
    fn new(context: Option<Context>, start: &Path) -> Here {
        let tree = match &context {
            Some(context) => context.top.display().to_string(),
            None => start
                .canonicalize()
                .unwrap_or_else(|_| start.to_path_buf())
                .display()
                .to_string(),
        };
        Here { context, tree }
    }

    fn sessions(&self) -> Option<PathBuf> {
        Some(self.context.as_ref()?.sessions_dir())
    }

    fn facts(&self, moment: &str, payload: Option<&Payload>) -> Facts {
        let moment = moment.parse::<Moment>().ok();
        let context = self.context.as_ref();
        let (actor, actor_source) = match context {
            Some(context) => (context.actor.clone(), context.actor_source),
            None => crate::context::actor_from_env(),
        };
        let session_id = payload
            .and_then(|p| p.session_id.as_deref())
            .unwrap_or_default();
        let sessions = self.sessions();
        let session = sessions
            .as_ref()
            .and_then(|dir| read_session(&dir.join(folder_name(session_id))));
        let editing = payload.is_some_and(|p| p.tool == Some(Tool::Edit));
        let others = match (&sessions, editing) {
            (Some(dir), true) => all_sessions(dir),
            _ => Vec::new(),
        };
        let config = match moment {
            Some(Moment::ToolBefore) => None,
            _ => context.and_then(main_config),
        };
        let agent = config.as_ref().and_then(|c| c.agent.clone());
        let view = context.and_then(|c| c.view.clone());
        let mut facts = Facts {
            now: clock::now(),
            product: agent.as_ref().map_or_else(
                || Product::guess(std::env::var_os("CLAUDE_PROJECT_DIR").is_some()),
                |a| a.product,
            ),
            actor,
            actor_source,
            main: context.map(|c| c.main.clone()),
            tree: self.tree.clone(),
            view: view.clone(),
            session,
            others,
            hooks: config
                .as_ref()
                .map_or_else(HookSettings::default, |c| c.hooks),
            unsaved: Vec::new(),
            start: None,
            locks: None,
            notices: None,
        };
        if let (Some(context), Some(change)) = (context, &view) {
            match moment {
                Some(Moment::TurnEnd) => facts.unsaved = unsaved(&context.top),
                Some(Moment::SessionStart) => {
                    let instructions = config.clone().unwrap_or_default().instructions();
                    facts.start = Some(start_facts(context, change, &instructions));
                }
                _ => {}
            }
        } else if moment == Some(Moment::SessionStart) {
            facts.start = Some(StartFacts::default());
        }
        if let Some(context) = context
            && moment.is_some_and(notice::heard_at)
        {
            facts.notices = Some(notice_facts(context, view.as_ref()));
        }
        facts
    }

    /// The locks this event judges, renews or ends, read into `facts`: an edit's paths that
    /// `[locks] paths` names at `tool.before`, the session's locks at a `step.end` due to
    /// renew them, and at `turn.end` and `session.end`. `None`, with no network, otherwise.
    fn locks(&self, moment: &str, payload: Option<&Payload>, facts: &mut Facts) -> Option<Locks> {
        let context = self.context.as_ref()?;
        let moment = moment.parse::<Moment>().ok()?;
        let held = || -> Vec<String> {
            let session = facts.session.as_ref();
            session
                .map(|s| s.locks.iter().cloned().collect())
                .unwrap_or_default()
        };
        let paths = match moment {
            Moment::ToolBefore => {
                // Only an edit can take a lock: any other tool reads no policy.
                let edit = payload.filter(|p| p.tool == Some(Tool::Edit))?;
                let globs = main_policy(context)?.locks;
                hook::lockable(edit, &self.tree, &globs)
            }
            Moment::StepEnd | Moment::TurnEnd | Moment::SessionEnd => held(),
            _ => return None,
        };
        if paths.is_empty() {
            return None;
        }
        let takeover_s = main_config(context).unwrap_or_default().runner.takeover_s;
        let takeover_ms = takeover_s.saturating_mul(1000);
        let due = |s: &Session| s.renewal_due(facts.now, takeover_ms);
        if moment == Moment::StepEnd && !facts.session.as_ref().is_some_and(due) {
            return None;
        }
        let machine = context.machine();
        let (locks, read) = match Repo::new(&context.top, &context.remote, &context.main) {
            Ok(repo) => {
                let locks = Locks { repo, paths };
                let read = locks.read();
                (Some(locks), read)
            }
            Err(why) => (None, Err(why)),
        };
        facts.locks = Some(LockFacts {
            machine,
            takeover_ms,
            read,
        });
        locks
    }

    /// Saves the draft checkpoint the outcome asks for: the view's work as a draft at the
    /// local ref, then, by the checkpoint machine, a `checkpoint` step on the change's chain on
    /// the remote. Where it went goes into the outcome's row; nothing here fails the event.
    fn checkpoint(&self, outcome: &mut Outcome) {
        if !outcome.checkpoint {
            return;
        }
        let (Some(context), Some(change)) = (
            &self.context,
            self.context.as_ref().and_then(|c| c.view.as_ref()),
        ) else {
            return;
        };
        let views = Views::new(&context.top, &context.common_dir);
        let saved = match views.checkpoint(change) {
            Err(fault) => Saved::Failed {
                why: fault.to_string(),
            },
            Ok(None) => Saved::Unchanged,
            Ok(Some(taken)) => to_chain(context, change, taken),
        };
        match &saved {
            Saved::Failed { why } => {
                let _ = writeln!(std::io::stderr(), "bay: no draft checkpoint: {why}");
            }
            Saved::Local { why, .. } => {
                let _ = writeln!(
                    std::io::stderr(),
                    "bay: the draft checkpoint stays on this machine, at refs/bay/checkpoints/{change}: {why}"
                );
            }
            Saved::Chain | Saved::Unchanged => {}
        }
        outcome.checkpointed(saved);
    }

    /// Keeps the row and the session's state. Nothing here may fail the event: a record that
    /// cannot be written is said on stderr.
    fn keep(&self, outcome: &Outcome) {
        let Some(dir) = self.sessions() else {
            return;
        };
        let folder = dir.join(folder_name(&outcome.session.session));
        let mut kept = std::fs::create_dir_all(&folder).and_then(|()| {
            let row = serde_json::to_string(&outcome.row).expect("a row is plain data");
            let mut record = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(folder.join("record.jsonl"))?;
            writeln!(record, "{row}")
        });
        let state = serde_json::to_vec(&outcome.session).expect("a session is plain data");
        let partial = folder.join(format!("state.json.{}", std::process::id()));
        kept = kept
            .and_then(|()| std::fs::write(&partial, state))
            .and_then(|()| std::fs::rename(&partial, folder.join("state.json")));
        if let Err(e) = kept {
            let _ = writeln!(std::io::stderr(), "bay: the work record was not kept: {e}");
        }
    }
}

/// Runs the checkpoint machine on `taken`, the view's work as a draft, with the real driver:
/// where the draft went.
fn to_chain(context: &Context, change: &ChangeId, taken: Taken) -> Saved {
    let local = match Local::new(context, None) {
        Ok(local) => local,
        Err(why) => return Saved::Local { code: None, why },
    };
    let input = CheckpointInput {
        change: change.clone(),
        actor: context.actor.clone(),
        draft: taken.draft,
        grew_from: taken.grew_from,
        entropy: clock::entropy(),
    };
    let mut machine = Checkpoint::new(input, clock::now());
    let ran = local.driver().pump(&mut machine, &mut |_| false);
    match (machine.saved(), ran) {
        (Some(saved), _) => saved.clone(),
        (None, Err(stopped)) => Saved::Local {
            code: None,
            why: format!("the checkpoint stopped: {stopped:?}"),
        },
        (None, Ok(_)) => Saved::Local {
            code: None,
            why: "the checkpoint ended without saying where the draft went".into(),
        },
    }
}

pub(crate) fn read_session(folder: &Path) -> Option<Session> {
    let bytes = std::fs::read(folder.join("state.json")).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Every session's state under `dir`, the sessions folder of a clone.
pub(crate) fn all_sessions(dir: &Path) -> Vec<Session> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| read_session(&entry.path()))
        .collect()
}

/// The config at main as this clone last fetched it; `None` when there is none to read.
pub(super) fn main_config(context: &Context) -> Option<Config> {
    Config::at_main(Some(&main_file(context, CONFIG_PATH)?)).ok()
}

/// The policy at main as this clone last fetched it, so a change never lifts a lock for
/// itself; `None` when there is none to read.
fn main_policy(context: &Context) -> Option<Policy> {
    let text = main_file(context, POLICY_PATH).and_then(|bytes| String::from_utf8(bytes).ok());
    Policy::agent_side(text.as_deref())
}

/// A file of main as this clone last fetched it.
fn main_file(context: &Context, path: &str) -> Option<Vec<u8>> {
    crate::context::fetched_main_file(&context.git(), &context.remote, &context.main, path)
}

/// The view's files with edits no commit holds, as `git status` names them; a name that is
/// not UTF-8 with its bytes escaped (`caf\xe9.rs`), so that two such names stay two. They are
/// only named to the agent, never matched against a path. With `-z`, a rename would print its old path as an entry of its own, with no status to
/// cut off: `--no-renames` keeps one `XY path` entry per path.
fn unsaved(top: &Path) -> Vec<String> {
    let Ok(out) = Git::in_dir(top)
        .cmd([
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--no-renames",
            "-z",
        ])
        .output()
    else {
        return Vec::new();
    };
    out.stdout
        .split(|b| *b == 0)
        .filter(|entry| entry.len() > 3)
        .map(|entry| {
            let raw = &entry[3..];
            bay_core::paths::from_git(raw)
                .map_or_else(|_| raw.escape_ascii().to_string(), str::to_owned)
        })
        .collect()
}

/// What `session.start` says: the view's paths, the other views of this clone that declare
/// overlapping paths, and the instruction files main changed since the view's base.
fn start_facts(context: &Context, change: &ChangeId, instructions: &[String]) -> StartFacts {
    let views = Views::new(&context.top, &context.common_dir);
    let mine = views.declared(change);
    let overlapping = views
        .listed()
        .into_iter()
        .filter(|other| other != change)
        .map(|other| {
            let paths = views.declared(&other);
            (other, paths)
        })
        .filter(|(_, paths)| bay_core::paths::overlap(paths, &mine))
        .collect();
    let main = format!("refs/remotes/{}/{}", context.remote, context.main);
    let git = context.git();
    let main_commit = git
        .cmd(["rev-parse", "--verify", "--quiet", "--short", &main])
        .text()
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty());
    let base = git.cmd(["merge-base", "HEAD", &main]).text().ok();
    let instructions_changed = match (&main_commit, base) {
        (Some(_), Some(base)) => git
            .cmd(["diff", "--name-only", base.trim(), &main, "--"])
            .args(instructions)
            .text()
            .map(|text| text.lines().map(str::to_owned).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    StartFacts {
        declared: mine,
        overlapping,
        main_commit,
        instructions_changed,
    }
}

/// What the notices read, from this clone's mirror of the remote as its last fetch left it:
/// one `for-each-ref` of the view's chain, the queue, the presences and main; the chain and
/// the presences through the clone's object reader; a test merge of a queued draft; and one
/// `git log` of main on the view's declared paths. A read that fails leaves its part empty.
fn notice_facts(context: &Context, view: Option<&ChangeId>) -> NoticeFacts {
    let mut facts = NoticeFacts::default();
    let Ok(repo) = Repo::new(&context.top, &context.remote, &context.main) else {
        return facts;
    };
    let mirror = mirror_prefix(&context.remote);
    let mut patterns = vec![
        format!("{mirror}bay/queue/"),
        format!("{mirror}bay/executor/"),
        format!("{mirror}heads/{}", context.main),
    ];
    if let Some(change) = view {
        patterns.push(format!("{mirror}bay/changes/{change}"));
    }
    let listed = context
        .git()
        .cmd(["for-each-ref", "--format=%(objectname) %(refname)"])
        .args(&patterns)
        .text()
        .unwrap_or_default();
    let held: Vec<(String, Oid)> = listed
        .lines()
        .filter_map(|line| {
            let (oid, name) = line.split_once(' ')?;
            let rest = name.strip_prefix(&mirror)?;
            Some((format!("refs/{rest}"), Oid::parse(oid).ok()?))
        })
        .collect();
    facts.waiting = held
        .iter()
        .filter(|(name, _)| refs::parse_queue(name).is_some())
        .count() as u64;
    let main = held
        .iter()
        .find(|(name, _)| *name == refs::main(&context.main))
        .map(|(_, oid)| oid.clone());
    if let Some(change) = view {
        let tip = held
            .iter()
            .find(|(name, _)| *name == refs::change(change))
            .map(|(_, oid)| oid.clone());
        let query = tip.map(|tip| ChainQuery {
            change: change.clone(),
            tip,
            known: None,
        });
        facts.chain = query
            .and_then(|query| repo.read_chains(&[query]).ok())
            .and_then(|mut reads| reads.pop());
        if let Some(main) = &main {
            let test = facts
                .chain
                .as_ref()
                .and_then(|chain| notice::early_test(chain, main));
            if let Some(Completion::MergeTested(Ok(paths))) =
                test.and_then(|action| repo.execute(&action))
            {
                facts.conflicts = paths;
            }
            facts.merged_on = merged_on(context, change, main);
        }
    }
    if facts.waiting > 0 {
        // As `bay status` does, the presences are read only when operations wait.
        facts.presences = presences(&repo, &held);
    }
    facts
}

/// The runners' presences the mirror holds, at most [`PRESENCES_READ`], with when this clone
/// first held each.
fn presences(repo: &Repo, held: &[(String, Oid)]) -> Vec<PresenceRead> {
    let runners: Vec<(&str, &String, &Oid)> = held
        .iter()
        .filter_map(|(name, oid)| Some((refs::parse_executor(name)?, name, oid)))
        .take(PRESENCES_READ)
        .collect();
    if runners.is_empty() {
        return Vec::new();
    }
    let oids: Vec<Oid> = runners.iter().map(|(_, _, oid)| (*oid).clone()).collect();
    let read = repo.read_steps(&oids).map_err(|fault| fault.to_string());
    let names: Vec<String> = runners.iter().map(|(_, name, _)| (*name).clone()).collect();
    let seen = repo.read_seen(&names).unwrap_or_default();
    runners
        .into_iter()
        .map(|(runner, name, oid)| PresenceRead {
            runner: runner.to_owned(),
            message: match &read {
                Ok(raws) => raws
                    .iter()
                    .find(|raw| raw.oid == *oid)
                    .map(|raw| raw.message.clone())
                    .ok_or_else(|| "its commit could not be read".to_owned()),
                Err(why) => Err(why.clone()),
            },
            first_seen: seen.get(name).copied(),
        })
        .collect()
}

/// Main's first-parent commits since the view's base (its merge-base with `main`) that
/// touch the view's declared paths, newest first, at most [`MERGED_ON_READ`], each with the
/// declared paths it changed.
fn merged_on(context: &Context, change: &ChangeId, main: &Oid) -> Vec<MainCommit> {
    let git = context.git();
    let Ok(base) = git.cmd(["merge-base", "HEAD", main.as_str()]).text() else {
        return Vec::new();
    };
    let paths: Vec<String> = Views::new(&context.top, &context.common_dir)
        .declared(change)
        .into_iter()
        .map(|path| if path.is_empty() { ".".into() } else { path })
        .collect();
    if paths.is_empty() {
        return Vec::new();
    }
    let Ok(log) = git
        .cmd([
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "--name-only",
            "--no-renames",
            "--format=%x1e%H%x1f%B%x1f",
        ])
        .arg(format!("--max-count={MERGED_ON_READ}"))
        .arg(format!("{}..{main}", base.trim()))
        .arg("--")
        .args(&paths)
        .text()
    else {
        return Vec::new();
    };
    log.split('\x1e')
        .filter_map(|entry| {
            let mut parts = entry.splitn(3, '\x1f');
            let commit = Oid::parse(parts.next()?.trim()).ok()?;
            let message = parts.next()?.to_owned();
            let paths = parts
                .next()
                .unwrap_or_default()
                .lines()
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .map(str::to_owned)
                .collect();
            Some(MainCommit {
                commit,
                message,
                paths,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn unsaved_names_that_are_not_utf8_stay_apart() {
        let dir = tempfile::tempdir().expect("a folder");
        Git::in_dir(dir.path())
            .cmd(["init", "-q"])
            .run()
            .expect("git init");
        for name in [&b"caf\xe8.rs"[..], &b"caf\xe9.rs"[..], &b"plain.rs"[..]] {
            let path = dir.path().join(std::ffi::OsStr::from_bytes(name));
            std::fs::write(path, "x").expect("a file");
        }
        let mut names = unsaved(dir.path());
        names.sort();
        assert_eq!(names, ["caf\\xe8.rs", "caf\\xe9.rs", "plain.rs"]);
    }
}
