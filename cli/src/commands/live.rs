//! `bay live push`: this machine's live summary (`bay_core::live`) to
//! `refs/bay/live/<machine>`, and what reads it back: the rows of other machines' summaries as
//! this clone's last `bay status` fetched them (`bay start`, for `CHANGE_HELD`).
//!
//! A hook event starts `bay live push` in the background when `bay_core::live::push_due` says
//! so: a detached child the hook never waits on. The spec does not list the command in its
//! CLI reference, so it is hidden from `bay help` at a terminal.
//!
//! The summary is one commit with no parent whose tree holds `live.json`, pushed leased on the
//! tip this clone's mirror holds (its last push or fetch of that ref); a push that meets
//! another tip fetches that one ref and is tried once more. Where this machine keeps the moment
//! of its last push: `<common Git dir>/bay/live/pushed`, milliseconds on its own clock.

use std::path::{Path, PathBuf};

use bay_core::adapter::Moment;
use bay_core::detail::Detail;
use bay_core::git::{Oid, refs};
use bay_core::hook::Session;
use bay_core::id::ChangeId;
use bay_core::live::{self, Held, LIVE_FILE, LIVE_READ, Remote, Summary};
use bay_core::machine::{Expect, FetchSpec, NewValue, PushPlan, RefUpdate};
use bay_core::result::BayResult;
use bay_core::time::Timestamp;
use bay_drivers::clock;
use bay_drivers::remote::Repo;

use crate::Cli;
use crate::context::{Context, failed, view_of};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

#[derive(clap::Subcommand, Debug)]
pub enum Action {
    /// Push this machine's live summary to refs/bay/live/<machine>, one row per live session.
    Push,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let Action::Push = args.action;
    let context = match Context::discover(cli.dir.as_deref()) {
        Ok(context) => context,
        Err(result) => return result,
    };
    match push(&context) {
        Ok(detail) => BayResult::ok(None, detail),
        Err(why) => failed(why),
    }
}

/// This clone's hook sessions, each with the change whose view it works in.
pub(super) fn local_sessions(context: &Context) -> Vec<(Option<ChangeId>, Session)> {
    super::hook::all_sessions(&context.sessions_dir())
        .into_iter()
        .map(|session| {
            let view = view_of(Path::new(&session.tree), &context.common_dir);
            (view, session)
        })
        .collect()
}

/// Where this machine keeps the moment of its last summary push.
fn pushed_file(context: &Context) -> PathBuf {
    context.common_dir.join("bay").join("live").join("pushed")
}

fn last_push(context: &Context) -> Option<Timestamp> {
    let text = std::fs::read_to_string(pushed_file(context)).ok()?;
    text.trim().parse::<u64>().ok().map(Timestamp)
}

fn record_push(context: &Context, now: Timestamp) -> std::io::Result<()> {
    let file = pushed_file(context);
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let partial = file.with_extension(format!("{}", std::process::id()));
    std::fs::write(&partial, now.millis().to_string())?;
    std::fs::rename(partial, file)
}

/// Writes the summary and pushes it; the detail names the machine, the commit and the rows.
fn push(context: &Context) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let now = clock::now();
    let config = super::hook::main_config(context).unwrap_or_default();
    let window_ms = config.runner.takeover_s.saturating_mul(1000);
    let machine = context.machine();
    let summary = Summary::of(&machine, &local_sessions(context), now, window_ms);
    record_push(context, now).map_err(|e| format!("cannot record the push: {e}"))?;
    let repo = Repo::new(&context.top, &context.remote, &context.main)?;
    let commit = repo
        .write_file_record(LIVE_FILE, summary.to_json().as_bytes(), &summary.message())
        .map_err(|fault| fault.to_string())?;
    let name = refs::live(&machine);
    // One push leased on the tip this clone knows; refused, once more on the tip a fetch of
    // that one ref finds (another tip than the one this clone knew: a lost mirror).
    let push = |known: Option<Oid>| -> Result<(), String> {
        let plan = PushPlan {
            updates: vec![RefUpdate {
                name: name.clone(),
                expect: known.map_or(Expect::Absent, Expect::Is),
                new: NewValue::Oid(commit.clone()),
            }],
            atomic: true,
            ..PushPlan::default()
        };
        repo.push(&plan).outcome.landed()
    };
    if let Err(why) = push(held(&repo, &name)) {
        let fetched = repo
            .fetch(&FetchSpec::new([format!("{name}*")]))
            .map_err(|fault| format!("{why}; then the fetch failed: {fault}"))?;
        push(fetched.get(&name).cloned())?;
    }
    let mut detail = serde_json::Map::new();
    detail.insert("machine".into(), machine.into());
    detail.insert("ref".into(), name.into());
    detail.insert("commit".into(), commit.to_string().into());
    detail.insert("sessions".into(), summary.sessions.len().into());
    Ok(detail)
}

/// The tip of `name` this clone's mirror holds.
fn held(repo: &Repo, name: &str) -> Option<bay_core::git::Oid> {
    let held = repo.read_held(refs::LIVE, LIVE_READ as u32).ok()?;
    held.get(name).cloned()
}

/// Starts `bay live push` in the background for a hook event when one is due: never at
/// `tool.before`, which must stay fast, and otherwise at most once per `[runner]
/// heartbeat_s` on this machine's clock, or at a session's end. The child is detached and
/// never waited on; a failure to start it is said on stderr and blocks nothing.
pub(super) fn after_event(context: &Context, moment: &str) {
    let Ok(moment) = moment.parse::<Moment>() else {
        return;
    };
    if !live::pushes_at(moment) {
        return;
    }
    let now = clock::now();
    let config = super::hook::main_config(context).unwrap_or_default();
    let heartbeat_ms = config.runner.heartbeat_s.saturating_mul(1000);
    let ends = moment == Moment::SessionEnd;
    if !live::push_due(last_push(context), now, heartbeat_ms, ends) {
        return;
    }
    // Recorded before the child starts, so the events meanwhile start no other.
    if record_push(context, now).is_err() {
        return;
    }
    let Ok(bay) = std::env::current_exe() else {
        return;
    };
    let mut command = std::process::Command::new(bay);
    command
        .arg("-C")
        .arg(&context.top)
        .args(["--json", "live", "push"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a product that ends the hook's group leaves it running.
        command.process_group(0);
    }
    if let Err(e) = command.spawn() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "bay: the live summary was not pushed: {e}"
        );
    }
}

/// The live summaries this clone's last fetch brought into its mirror, at most
/// [`LIVE_READ`], each read (or why not) with when this clone first held it. It never
/// fetches.
pub(super) fn held_summaries(context: &Context) -> Vec<Held> {
    let Ok(repo) = Repo::new(&context.top, &context.remote, &context.main) else {
        return Vec::new();
    };
    let Ok(held) = repo.read_held(refs::LIVE, LIVE_READ as u32) else {
        return Vec::new();
    };
    let names: Vec<String> = held.keys().cloned().collect();
    let seen = repo.read_seen(&names).unwrap_or_default();
    held.iter()
        .filter_map(|(name, oid)| {
            let machine = refs::parse_live(name)?.to_owned();
            let read = match repo.read_file(oid, LIVE_FILE) {
                Ok(Some(bytes)) => Summary::from_json(&bytes),
                Ok(None) => Err(format!("its commit holds no {LIVE_FILE}")),
                Err(fault) => Err(fault.to_string()),
            }
            // A summary speaks only for the machine its ref names.
            .and_then(|summary| match summary.machine == machine {
                true => Ok(summary),
                false => Err(format!("it names machine {:?}", summary.machine)),
            });
            Some(Held {
                machine,
                read,
                first_seen: seen.get(name).copied(),
            })
        })
        .collect()
}

/// The rows of other machines' live summaries this clone's last fetch brought, each with
/// when this clone first held its summary; a summary that cannot be read adds none.
pub(super) fn remote_rows(context: &Context) -> Vec<Remote> {
    let summaries = held_summaries(context)
        .into_iter()
        .filter_map(|held| Some((held.read.ok()?, held.first_seen)))
        .collect();
    live::remote_rows(&context.machine(), summaries)
}

/// `bay status --fleet`: the fleet map from this clone's mirror and its own sessions, with no
/// fetch.
pub(super) fn fleet(context: &Context) -> BayResult {
    let config = super::hook::main_config(context).unwrap_or_default();
    let window_ms = config.runner.takeover_s.saturating_mul(1000);
    let detail = live::fleet_map(
        &context.machine(),
        &local_sessions(context),
        held_summaries(context),
        clock::now(),
        window_ms,
    )
    .to_map();
    BayResult::ok(None, detail)
}
