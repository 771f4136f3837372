//! `bay evidence record --kind check --verdict <verdict> --commit <commit>... --check <check>
//! --environment <environment> [--input <key>=<value>] [--version <version>] [--why <text>]`:
//! a post check's answer on merged commits, written by a producer outside bay.

use bay_core::machine::evidence::{Merged, RecordEvidence, RecordInput, flags};
use bay_core::result::BayResult;
use bay_drivers::clock;

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
    /// Write one record per merged commit, as an outside producer, and push it.
    Record(RecordArgs),
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    /// What the record is: `check` (a post check's answer). Reviews, approvals and waivers
    /// need keys, which this bay does not have yet.
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
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let EvidenceCommand::Record(args) = &args.command;
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
    let input = RecordInput {
        main: context.main.clone(),
        producer,
        kind: args.kind.clone(),
        verdict: args.verdict.clone(),
        check: args.check.clone().unwrap_or_default(),
        environment: args.environment.clone().unwrap_or_default(),
        why: args.why.clone().unwrap_or_default(),
        version: args.version.clone(),
        inputs: args.inputs.clone(),
        commits: Vec::new(),
    };
    flags(&input)?;
    Ok(input)
}

/// A commit this clone holds, with its tree and its first parent's.
fn resolve(context: &Context, name: &str) -> Result<Merged, String> {
    let missing = || format!("no commit {name} in this clone; fetch it, then record again");
    let commit = context
        .local_commit(name)
        .or_else(|| {
            context.local_commit(&format!("refs/bay-mirror/{}/heads/{name}", context.remote))
        })
        .ok_or_else(missing)?;
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
