//! `bay approve <change> [--why <text>]` and `bay reject <change> [--why <text>]`: sign and
//! push this machine's approver's yes (or no) for the exact candidate the change waits on.
//! Core's `machine::approve` decides everything; this reads the approver's Git settings.

use std::path::Path;

use bay_core::machine::approve::{Approve, ApproveInput};
use bay_core::result::BayResult;
use bay_core::trust::record::KeySetting;
use bay_drivers::clock;
use bay_drivers::sign::SigningKey;

use super::enrol::expand_home;
use super::{prepare, run_agent, with_actor};
use crate::Cli;
use crate::context::Context;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The change that waits for an approval.
    pub change: String,
    /// Your reason, kept in the signed record.
    #[arg(long, value_name = "TEXT")]
    pub why: Option<String>,
    /// Sign a waiver of this failed check, marked `waivable`, instead: never a pass.
    #[arg(long, value_name = "CHECK")]
    pub waive: Option<String>,
}

/// `bay approve`: a signed yes.
pub fn approve(cli: &Cli, args: &Args) -> BayResult {
    answer(cli, args, true)
}

/// `bay reject`: a signed no.
pub fn reject(cli: &Cli, args: &Args) -> BayResult {
    answer(cli, args, false)
}

/// `bay.approverKey`, with its public half or why there is none.
pub fn approver_key(context: &Context) -> Option<KeySetting> {
    let path = expand_home(&context.setting_values("bay.approverkey").pop()?);
    let public = SigningKey::load(Path::new(&path)).map(|key| key.public().clone());
    Some(KeySetting { path, public })
}

fn answer(cli: &Cli, args: &Args, yes: bool) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let verb = if yes { "approve" } else { "reject" };
    if !yes && args.waive.is_some() {
        crate::usage_error(
            verb,
            "--waive goes with `bay approve`; a waiver is never a no",
        );
    }
    let change = match context.change(Some(&args.change), verb) {
        Ok(change) => change,
        Err(result) => return result,
    };
    let input = ApproveInput {
        main: context.main.clone(),
        change,
        approver: context.setting_values("bay.approvername").pop(),
        key: approver_key(&context),
        yes,
        why: args.why.clone().unwrap_or_default(),
        waive: if yes { args.waive.clone() } else { None },
    };
    let mut machine = Approve::new(input, clock::now());
    match run_agent(&context, &mut driver, &mut machine) {
        Ok((result, _)) => with_actor(result, &context),
        Err(result) => result,
    }
}
