//! `bay evidence record --kind check|review --verdict <verdict> --commit <commit>... [--check
//! <check>] [--environment <environment>] [--input <key>=<value>] [--body <file>] [--version
//! <version>] [--why <text>]`: a post check's answer or a review on merged commits, written by
//! a producer or reviewer outside bay; and `bay evidence missing --kind <kind> --producer
//! <producer> [--since <rev>]`: main's commits no such record covers.

use std::path::{Path, PathBuf};

use bay_core::git::Oid;
use bay_core::machine::evidence::{Merged, RecordEvidence, RecordInput, flags};
use bay_core::machine::missing::{Missing, MissingInput};
use bay_core::result::BayResult;
use bay_core::trust::record::KeySetting;
use bay_drivers::clock;
use bay_drivers::sign::SigningKey;

use super::enrol::expand_home;
use super::{config, prepare, run_agent, with_actor};
use crate::Cli;
use crate::context::{Context, failed};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: EvidenceCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum EvidenceCommand {
    /// Write one record per merged commit, as an outside producer or reviewer, and push it.
    Record(RecordArgs),
    /// List main's commits that no record of a kind from a producer covers.
    Missing(MissingArgs),
}

#[derive(clap::Args, Debug)]
pub struct MissingArgs {
    /// The record kind, such as `review`.
    #[arg(long, value_name = "KIND")]
    kind: String,
    /// The producer or reviewer whose records count.
    #[arg(long, value_name = "PRODUCER")]
    producer: String,
    /// Only the commits after this one.
    #[arg(long, value_name = "REV")]
    since: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// What the record is: `check` (a post check's answer, signed by bay.producerKey when
    /// set), `review` (signed by bay.reviewerKey) or `approval` (an approval check's answer
    /// on a candidate, signed by bay.approverKey). Waivers are not built yet.
    #[arg(long, value_name = "KIND")]
    kind: String,
    /// `pass`, `product_failure`, `infra_failure` or `unknown`; no default.
    #[arg(long, value_name = "VERDICT")]
    verdict: String,
    /// A merged commit the record is about (repeat it: one record each).
    #[arg(long = "commit", value_name = "COMMIT", required = true)]
    commits: Vec<String>,
    /// The post check, as the policy names it.
    #[arg(long, value_name = "CHECK")]
    check: Option<String>,
    /// The post check's environment, as the policy names it.
    #[arg(long, value_name = "ENVIRONMENT")]
    environment: Option<String>,
    /// An input the run read, as `<key>=<value>` (repeat it); part of the record's id.
    #[arg(long = "input", value_name = "KEY=VALUE")]
    inputs: Vec<String>,
    /// The producer's version; a new one writes a second record beside the first.
    #[arg(long, value_name = "VERSION")]
    version: Option<String>,
    /// The writer's reason, kept in the record.
    #[arg(long, value_name = "TEXT")]
    why: Option<String>,
    /// A file holding one JSON object, such as a review's findings, carried in the record.
    #[arg(long, value_name = "FILE")]
    body: Option<PathBuf>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    match &args.command {
        EvidenceCommand::Record(args) => record(cli, args),
        EvidenceCommand::Missing(args) => missing(cli, args),
    }
}

fn missing(cli: &Cli, args: &MissingArgs) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    // Main first, so that a `--since` on it resolves.
    if let Err(result) = config(&context, &driver) {
        return result;
    }
    let since = match &args.since {
        None => None,
        Some(name) => match resolve_commit(&context, name) {
            Ok(commit) => Some(commit),
            Err(why) => return with_actor(failed(why), &context),
        },
    };
    let input = MissingInput {
        main: context.main.clone(),
        kind: args.kind.clone(),
        producer: args.producer.clone(),
        since,
    };
    let mut machine = Missing::new(input, clock::now());
    match run_agent(&context, &mut driver, &mut machine) {
        Ok((result, _)) => with_actor(result, &context),
        Err(result) => result,
    }
}

fn record(cli: &Cli, args: &RecordArgs) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let input = match record_input(&context, args) {
        Ok(input) => input,
        Err(why) => return with_actor(failed(why), &context),
    };
    // Main first, so that a merge this clone has not seen yet resolves.
    if let Err(result) = config(&context, &driver) {
        return result;
    }
    let commits = match args
        .commits
        .iter()
        .map(|name| resolve(&context, name))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(commits) => commits,
        Err(why) => return with_actor(failed(why), &context),
    };
    let mut machine = RecordEvidence::new(RecordInput { commits, ..input }, clock::now());
    match run_agent(&context, &mut driver, &mut machine) {
        Ok((result, _)) => with_actor(result, &context),
        Err(result) => result,
    }
}

/// Everything of the record but its commits; core judges the flags before any commit is
/// resolved.
fn record_input(context: &Context, args: &RecordArgs) -> Result<RecordInput, String> {
    let producer = context
        .setting_values("bay.producername")
        .pop()
        .unwrap_or_else(|| context.actor.clone());
    let body = match &args.body {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read --body {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let key = |setting: &str| {
        let path = expand_home(&context.setting_values(setting).pop()?);
        let public = SigningKey::load(Path::new(&path)).map(|key| key.public().clone());
        Some(KeySetting { path, public })
    };
    let input = RecordInput {
        main: context.main.clone(),
        producer,
        producer_key: key("bay.producerkey"),
        reviewer: context.setting_values("bay.reviewername").pop(),
        reviewer_key: key("bay.reviewerkey"),
        approver: context.setting_values("bay.approvername").pop(),
        approver_key: key("bay.approverkey"),
        kind: args.kind.clone(),
        verdict: args.verdict.clone(),
        check: args.check.clone().unwrap_or_default(),
        environment: args.environment.clone().unwrap_or_default(),
        why: args.why.clone().unwrap_or_default(),
        version: args.version.clone(),
        inputs: args.inputs.clone(),
        body,
        commits: Vec::new(),
    };
    flags(&input)?;
    Ok(input)
}

/// A commit this clone holds, by any name Git reads, or main's mirror branch of that name.
fn resolve_commit(context: &Context, name: &str) -> Result<Oid, String> {
    context
        .local_commit(name)
        .or_else(|| {
            context.local_commit(&format!("refs/bay-mirror/{}/heads/{name}", context.remote))
        })
        .ok_or_else(|| format!("no commit {name} in this clone; fetch it, then run this again"))
}

/// A commit this clone holds, with its tree and its first parent's.
fn resolve(context: &Context, name: &str) -> Result<Merged, String> {
    let commit = resolve_commit(context, name)?;
    let missing = || format!("no commit {name} in this clone; fetch it, then record again");
    let tree = context
        .local_object(&format!("{commit}^{{tree}}"))
        .ok_or_else(missing)?;
    let base_tree = context.local_object(&format!("{commit}^1^{{tree}}"));
    Ok(Merged {
        commit,
        tree,
        base_tree,
    })
}
