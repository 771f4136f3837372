//! `bay start <intent> --paths <path>...` and `bay start <change>`.

use bay_core::config::Config;
use bay_core::id::ChangeId;
use bay_core::machine::release::{Release, ReleaseInput};
use bay_core::machine::start::{Import, SESSION_ENV, Sessions, Start, StartInput, StartTarget};
use bay_core::result::{BayResult, Decision};
use bay_drivers::clock;
use bay_drivers::pump::Driver;
use bay_drivers::views::Views;

use super::{drive, prepare, run_start, with_actor};
use crate::Cli;
use crate::context::{Context, view_of};
use crate::local::Local;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// What the work is, in a few words (or a card id); or the id of a change to pick up.
    #[arg(value_name = "INTENT_OR_CHANGE")]
    pub target: String,
    /// The paths this change needs: its view holds only these.
    #[arg(long, num_args = 1.., value_name = "PATH", value_parser = bay_core::paths::declared)]
    pub paths: Vec<String>,
    /// Open the intent's next change instead of adopting its ended one.
    #[arg(long)]
    pub new: bool,
    /// The merged change this one fixes: its merge names it in a `Fixes:` trailer.
    #[arg(long, value_name = "CHANGE")]
    pub fixes: Option<String>,
    /// A change that must merge first (repeat it for each): until then this one waits with
    /// `DEPENDENCY_PENDING`, and its merge names each in a `Bay-After:` trailer.
    #[arg(long, value_name = "CHANGE")]
    pub after: Vec<String>,
    /// Take in a branch made outside bay (a name or a full ref): its net change on main is the
    /// first draft. The remote's branch wins over this clone's; `--paths` must cover it.
    #[arg(long, value_name = "BRANCH")]
    pub from: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    // Core reads the words as a change id when the remote has that change.
    let target = StartTarget::Intent {
        intent: args.target.clone(),
        paths: args.paths.clone(),
    };
    let fixes = match args.fixes.as_deref().map(ChangeId::parse).transpose() {
        Ok(fixes) => fixes,
        Err(why) => return BayResult::failed(&format!("--fixes names no change: {why}")),
    };
    let after = match args
        .after
        .iter()
        .map(|text| ChangeId::parse(text))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(after) => after,
        Err(why) => return BayResult::failed(&format!("--after names no change: {why}")),
    };
    let disk = match context.disk_space() {
        Ok(disk) => disk,
        Err(result) => return result,
    };
    let import = args.from.as_ref().map(|name| Import::Branch {
        name: name.clone(),
        local: context.local_commit(&Import::branch_ref(name)),
    });
    let input = StartInput {
        target,
        actor: context.actor.clone(),
        main: context.main.clone(),
        new: args.new,
        fixes,
        after,
        entropy: clock::entropy(),
        disk,
        import,
    };
    let mut machine = Start::new(input, clock::now());
    machine.in_sessions(sessions(&context));
    match run_start(&context, &mut driver, &mut machine) {
        Ok((mut result, config)) => {
            if result.decision == Decision::Ok && result.change.is_some() {
                let released = release_views(&context, &mut driver, &config, &result);
                result.detail.insert("released_views".into(), released);
            }
            with_actor(result, &context)
        }
        Err(result) => result,
    }
}

/// The hook sessions of this clone that work in its views, and which session this start runs
/// in: the one the product names in `BAY_SESSION`, and the view it runs in.
pub(super) fn sessions(context: &Context) -> Sessions {
    let in_views = super::hook::all_sessions(&context.sessions_dir())
        .into_iter()
        .filter_map(|session| {
            let view = view_of(std::path::Path::new(&session.tree), &context.common_dir)?;
            Some((view, session))
        })
        .collect();
    Sessions {
        in_views,
        own: std::env::var(SESSION_ENV)
            .ok()
            .filter(|own| !own.trim().is_empty()),
        here: context.view.clone(),
        machine: context.machine(),
        // Other machines' sessions, from the live summaries the last `bay status` fetched.
        remote: super::live::remote_rows(context),
    }
}

/// Releases this machine's clean views of changes that ended `[retention] window_s` ago or
/// more, keeping the view this runs in and the one the start made; names each released.
fn release_views(
    context: &Context,
    driver: &mut Driver<Local>,
    config: &Config,
    started: &BayResult,
) -> serde_json::Value {
    let views = Views::new(&context.top, &context.common_dir).listed();
    let input = ReleaseInput {
        views,
        keep: started
            .change
            .iter()
            .chain(&context.view)
            .cloned()
            .collect(),
        retention_ms: config.retention_window_s.saturating_mul(1000),
    };
    let mut release = Release::new(input, clock::now());
    let result = drive(driver, &mut release, clock::now());
    result
        .detail
        .get("released_views")
        .cloned()
        .unwrap_or_else(|| serde_json::Value::Array(Vec::new()))
}
