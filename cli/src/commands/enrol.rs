//! `bay enrol <class> <name> <key.pub>` and `bay enrol --remove <class> <name> --reason
//! rotated|revoked`: one key into the key registry, or a name's keys out of it, signed with
//! this machine's `bay.registryKey` and pushed.

use std::path::{Path, PathBuf};

use bay_core::machine::enrol::{Enrol, EnrolInput};
use bay_core::result::BayResult;
use bay_core::trust::PublicKey;
use bay_core::trust::registry::{Class, Enrolment, Reason};
use bay_drivers::clock;
use bay_drivers::sign::SigningKey;

use super::{drive, prepare};
use crate::Cli;
use crate::context::failed;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The class of key: agent, executor, producer, reviewer, approver or registry.
    #[arg(value_parser = ["agent", "executor", "producer", "reviewer", "approver", "registry"])]
    pub class: String,
    /// The name the key is enrolled under: a short lower-case word (a-z, 0-9 and -).
    pub name: String,
    /// The public key file, the `.pub`; not with --remove.
    #[arg(required_unless_present = "remove", conflicts_with = "remove")]
    pub key: Option<PathBuf>,
    /// Take every key of the name out of its class, into the registry's removed file.
    #[arg(long, requires = "reason")]
    pub remove: bool,
    /// Why the keys go: rotated (their earlier records still count) or revoked (none does).
    #[arg(long, value_parser = ["rotated", "revoked"], requires = "remove")]
    pub reason: Option<String>,
}

pub fn run(cli: &Cli, args: &Args) -> BayResult {
    let (context, mut driver) = match prepare(cli) {
        Ok(prepared) => prepared,
        Err(result) => return result,
    };
    let Some(class) = Class::parse(&args.class) else {
        return failed(format!("{} is not a class of key", args.class));
    };
    let request = match (&args.key, args.reason.as_deref().and_then(Reason::parse)) {
        (Some(path), None) => match read_public(path) {
            Ok(key) => Enrolment::Add {
                class,
                name: args.name.clone(),
                key,
            },
            Err(why) => return failed(why),
        },
        (None, Some(reason)) => Enrolment::Remove {
            class,
            name: args.name.clone(),
            reason,
        },
        _ => return failed("give a key file to enrol, or --remove with --reason".into()),
    };
    let Some(key_path) = context.setting_values("bay.registrykey").pop() else {
        return failed(
            "bay.registryKey is not set in Git config; set it to the private half of the \
             registry key on the machine that keeps it"
                .into(),
        );
    };
    let key_path = expand_home(&key_path);
    let signer = match SigningKey::load(Path::new(&key_path)) {
        Ok(key) => key.public().clone(),
        Err(why) => return failed(format!("bay.registryKey: {why}")),
    };
    let input = EnrolInput {
        request,
        signer,
        key_path,
    };
    let now = clock::now();
    let mut machine = Enrol::new(input, now);
    drive(&mut driver, &mut machine, now)
}

/// A `.pub` file, refused with what is wrong when it is not one public key.
fn read_public(path: &Path) -> Result<PublicKey, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the key file {}: {e}", path.display()))?;
    PublicKey::from_pub_file(&text).map_err(|why| format!("{}: {why}", path.display()))
}

/// `~/…` as Git reads `user.signingKey`: under `HOME`.
pub fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => path.to_owned(),
    }
}
