//! `bay save <intent> [--message <text>]`: merge the main checkout's edits as one change,
//! with no view, then move the checkout to the merge when nothing is in the way.

use bay_core::detail::Detail;
use bay_core::git::{Oid, refs};
use bay_core::machine::FetchSpec;
use bay_core::machine::start::{Import, Start, StartInput, StartTarget};
use bay_core::result::{BayResult, Decision};
use bay_core::save;
use bay_drivers::checkout::{Checkout, Snapshot};
use bay_drivers::clock;

use super::merge::merge_change;
use super::{prepare, run_start, with_actor};
use crate::Cli;
use crate::context::{Context, failed};
use crate::local::Local;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// What the work is, in a few words (or a card id). The same words again go on with the
    /// change a refused save left open.
    pub intent: String,
    /// The first draft's message; the commit on main keeps bay's own.
    #[arg(long, value_name = "TEXT")]
    pub message: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let reader = driver.executor().reader();
    let checkout = Checkout::new(&context.top, &context.common_dir, reader);
    // Every refusal is judged before anything is written.
    let (snapshot, edits) = match snapshot(&context, &checkout, args) {
        Ok(Some(taken)) => taken,
        Ok(None) => {
            let mut result = BayResult::ok(None, Default::default());
            result
                .detail
                .insert("nothing".into(), save::NOTHING_TO_SAVE.into());
            return with_actor(result, &context);
        }
        Err(result) => return with_actor(result, &context),
    };
    let disk = match context.disk_space() {
        Ok(disk) => disk,
        Err(result) => return result,
    };
    let input = StartInput {
        target: StartTarget::Intent {
            intent: args.intent.clone(),
            paths: Vec::new(),
        },
        actor: context.actor.clone(),
        main: context.main.clone(),
        new: false,
        fixes: None,
        after: Vec::new(),
        entropy: clock::entropy(),
        disk,
        import: Some(Import::Checkout {
            edits,
            head: snapshot.head.clone(),
        }),
    };
    let mut start = Start::new(input, clock::now());
    // Edits onto a change another live session of this actor works in would share it.
    start.in_sessions(super::start::sessions(&context));
    let opened = match run_start(&context, &mut driver, &mut start) {
        Ok((result, _)) => with_actor(result, &context),
        Err(result) => return result,
    };
    let (Decision::Ok, Some(change)) = (opened.decision, opened.change.clone()) else {
        return opened;
    };
    let mut merged = merge_change(&context, &mut driver, change.clone(), Some(0));
    if let Some(generation) = opened.detail.get("generation") {
        merged
            .detail
            .insert("generation".into(), generation.clone());
    }
    if merged.decision == Decision::Merged {
        let moved = move_checkout(&context, &checkout, &snapshot, &change, driver.executor());
        merged.detail.insert(
            "checkout".into(),
            save::Checkout::of(moved.as_deref().map_err(String::as_str)).to_json(),
        );
    }
    merged
}

/// The checkout's edits as a commit on `HEAD`, or `None` with nothing to save; a refusal when
/// something is in the way.
fn snapshot(
    context: &Context,
    checkout: &Checkout,
    args: &Args,
) -> Result<Option<(Snapshot, Oid)>, BayResult> {
    let fault = |why: bay_core::machine::Fault| failed(format!("cannot read the checkout: {why}"));
    let mut before = checkout.before(context.view.is_some()).map_err(fault)?;
    if let Some(why) = save::refuse(&before) {
        return Err(failed(why));
    }
    let (snapshot, submodules) = checkout.snapshot().map_err(fault)?;
    before.submodules = submodules;
    if let Some(why) = save::refuse(&before) {
        return Err(failed(why));
    }
    if !snapshot.changed {
        return Ok(None);
    }
    let message = args.message.as_deref().unwrap_or(&args.intent);
    let edits = checkout.commit(&snapshot, message).map_err(fault)?;
    Ok(Some((snapshot, edits)))
}

/// Moves the checkout to the merge of `change` when nothing is in the way; else says why it
/// stays where it was.
fn move_checkout(
    context: &Context,
    checkout: &Checkout,
    saved: &Snapshot,
    change: &bay_core::id::ChangeId,
    local: &Local,
) -> Result<String, String> {
    let after = checkout
        .after(saved)
        .map_err(|_| "checkout_unreadable".to_owned())?;
    if let Some(why) = save::stays(&context.main, &after) {
        return Err(why.to_owned());
    }
    let spec = FetchSpec::new([refs::landed_pattern(change)]);
    let merge = local
        .fetch(&spec)
        .ok()
        .and_then(|remote| remote.get(&refs::landed(change)).cloned())
        .ok_or_else(|| "merge_unread".to_owned())?;
    checkout
        .fast_forward(&context.main, &saved.head, &merge)
        .map_err(|_| "move_failed".to_owned())?;
    Ok(merge.as_str().to_owned())
}
