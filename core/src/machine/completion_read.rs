//! Reading a merged change's completion, for `bay status <change>` (`detail.completion`): the
//! merge commit (its tree and base), the policy and config at the base (`[[dimension]]`,
//! `[profile.<name>]`, `[policy] profile`: a change cannot relax its own profile), the notes
//! of the dimensions' producers on the merge, the key registry when the remote holds one, and,
//! when a record rejects the merge, main after it, for a merge that fixes, undoes or
//! supersedes the change. Judged by [`completion::judge`](crate::completion::judge).
//!
//! The reader is a part of its command's machine: the command sends each action it asks for,
//! with a purpose of its own, and hands each completion back.

use std::collections::BTreeSet;

use super::keys_read::{KeysRead, KeysStep};
use super::{Action, Completion, FetchSpec, HistoryQuery, MainCommit, Refs};
use crate::check::Verdict;
use crate::check::plan::{POLICY_PATH, parse_policy};
use crate::completion::{Merge, Report, judge};
use crate::config::{CONFIG_PATH, Config};
use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::policy::{DEFAULT_PROFILE, Policy, Signing};
use crate::review::ReviewRecord;
use crate::trust::record::Keys;
use crate::trust::registry::Version;

/// The most main commits after the merge read for one that answers it.
pub const ANSWERS_READ: u32 = 500;

/// What the reader does next.
#[derive(Debug)]
pub enum CompletionStep {
    /// Send this action and hand its completion back.
    Ask(Box<Action>),
    /// Done: `detail.completion`.
    Done(Report),
}

#[derive(Clone, Debug)]
enum Stage {
    Commit,
    /// The merge commit read: its tree, and its first parent, the base.
    Policy {
        tree: Option<Oid>,
        base: Oid,
    },
    Config(Box<AtBase>),
    Notes(Box<AtBase>, FetchSpec),
    Lines(Box<AtBase>),
    Keys(Box<AtBase>, KeysRead),
    Answers(Box<AtBase>),
    /// The read gave its answer, or a completion it cannot take.
    Over,
}

/// What the read knows once it read the policy at the merge's base, and what it reads after.
#[derive(Clone, Debug)]
struct AtBase {
    tree: Option<Oid>,
    base: Oid,
    policy: Policy,
    profile: String,
    /// The dimensions' producers' notes on the merge and its tree, once read.
    lines: Vec<String>,
    /// How the registry at the base signs, and its version, when the remote holds one.
    keys: Option<(Signing, Version)>,
}

/// One read of a merged change's completion.
#[derive(Clone, Debug)]
pub struct CompletionRead {
    change: ChangeId,
    merge: Oid,
    main: Oid,
    registry: Option<Oid>,
    stage: Stage,
}

impl CompletionRead {
    /// Starts on `change`'s merge `merge`, still on main at `main`, with the registry's tip as
    /// fetched: the first action reads the merge commit.
    pub fn start(
        change: ChangeId,
        merge: Oid,
        main: Oid,
        registry: Option<Oid>,
    ) -> (CompletionRead, Action) {
        let read = Action::ReadCommits {
            commits: vec![merge.clone()],
        };
        let reader = CompletionRead {
            change,
            merge,
            main,
            registry,
            stage: Stage::Commit,
        };
        (reader, read)
    }

    /// Takes the completion of the last action asked; `remote` gains the notes tips fetched.
    /// A completion of another kind is given back: a driver bug, for the command to refuse.
    pub fn on(
        &mut self,
        completion: Completion,
        remote: &mut Refs,
    ) -> Result<CompletionStep, Box<Completion>> {
        Ok(
            match (std::mem::replace(&mut self.stage, Stage::Over), completion) {
                (Stage::Commit, Completion::CommitsRead(Ok(raw))) => {
                    let raw = raw.into_iter().next().unwrap_or_default();
                    let headers = raw.split_once("\n\n").map_or(raw.as_str(), |(h, _)| h);
                    let header = |key: &str| {
                        headers
                            .lines()
                            .find_map(|line| line.strip_prefix(key))
                            .and_then(|oid| Oid::parse(oid).ok())
                    };
                    let tree = header("tree ");
                    let Some(base) = header("parent ") else {
                        return Ok(unread("the merge commit has no parent"));
                    };
                    let read = read_file(base.clone(), POLICY_PATH);
                    self.ask(Stage::Policy { tree, base }, read)
                }
                (Stage::Policy { tree, base }, Completion::FileRead(Ok(bytes))) => {
                    let Some(policy) = bytes.and_then(|bytes| parse_policy(&bytes).ok()) else {
                        return Ok(unread("the policy at the merge's base cannot be read"));
                    };
                    let read = read_file(base.clone(), CONFIG_PATH);
                    let at = AtBase {
                        tree,
                        base,
                        policy,
                        profile: DEFAULT_PROFILE.into(),
                        lines: Vec::new(),
                        keys: None,
                    };
                    self.ask(Stage::Config(Box::new(at)), read)
                }
                (Stage::Config(mut at), Completion::FileRead(Ok(bytes))) => {
                    if let Some(profile) = Config::at_main(bytes.as_deref())
                        .ok()
                        .and_then(|config| config.profile)
                    {
                        at.profile = profile;
                    }
                    let producers = producers(&at.policy);
                    if producers.is_empty() {
                        return Ok(self.judge(&at, false));
                    }
                    let spec =
                        FetchSpec::new(producers.iter().map(|p| format!("{}*", refs::evidence(p))));
                    self.ask(Stage::Notes(at, spec.clone()), Action::Fetch(spec))
                }
                (Stage::Notes(at, spec), Completion::Fetched(Ok(fetched))) => {
                    spec.apply(remote, fetched);
                    let notes: Vec<Oid> = producers(&at.policy)
                        .into_iter()
                        .filter_map(|p| remote.get(&refs::evidence(p)).cloned())
                        .collect();
                    if notes.is_empty() {
                        return Ok(self.judge(&at, false));
                    }
                    let objects = at.tree.iter().chain([&self.merge]).cloned().collect();
                    self.ask(Stage::Lines(at), Action::ReadNotes { notes, objects })
                }
                (Stage::Lines(mut at), Completion::NotesRead(Ok(lines))) => {
                    at.lines = lines;
                    match self.registry.clone() {
                        Some(registry) => {
                            let (reader, read) = KeysRead::start(at.base.clone(), registry);
                            self.ask(Stage::Keys(at, reader), read)
                        }
                        None => self.answers(at),
                    }
                }
                (Stage::Keys(mut at, mut reader), completion) => match reader.on(completion)? {
                    KeysStep::Ask(action) => self.ask(Stage::Keys(at, reader), *action),
                    KeysStep::Done(signing, version) => {
                        at.keys = Some((signing, *version));
                        self.answers(at)
                    }
                    // Nothing signed can be judged: every signed dimension is unknown.
                    KeysStep::Broken(broken) => CompletionStep::Done(Report::broken(*broken)),
                    KeysStep::Unread(fault) => unread(&fault.0),
                },
                (Stage::Answers(at), Completion::HistoryRead(Ok(after))) => {
                    let answered = answers(&after, &self.change);
                    self.judge(&at, answered)
                }
                (_, completion) => match super::start::fault_of(&completion) {
                    Some(fault) => unread(&fault),
                    None => return Err(Box::new(completion)),
                },
            },
        )
    }

    fn ask(&mut self, stage: Stage, action: Action) -> CompletionStep {
        self.stage = stage;
        CompletionStep::Ask(Box::new(action))
    }

    /// Main after the merge, read only when a record of a dimension says anything but
    /// `pass`: only then can a later merge answer it.
    fn answers(&mut self, at: Box<AtBase>) -> CompletionStep {
        let rejects = at.policy.dimensions.iter().any(|dimension| {
            at.lines.iter().any(|line| {
                ReviewRecord::of_kind(line, &dimension.kind)
                    .is_some_and(|record| record.verdict() != Verdict::Pass)
            })
        });
        if !rejects || self.main == self.merge {
            return self.judge(&at, false);
        }
        let read = Action::ReadHistory(HistoryQuery {
            from: Some(self.merge.clone()),
            to: self.main.clone(),
            limit: ANSWERS_READ,
            newest: false,
            since: None,
        });
        self.ask(Stage::Answers(at), read)
    }

    fn judge(&self, at: &AtBase, answered: bool) -> CompletionStep {
        let keys = match &at.keys {
            Some((signing, version)) => Keys {
                registry: Some(version),
                signing: *signing,
            },
            None => Keys {
                registry: None,
                signing: Signing::All,
            },
        };
        let merge = Merge {
            commit: &self.merge,
            lines: &at.lines,
            keys,
            answered,
        };
        CompletionStep::Done(judge(&at.policy, &at.profile, &merge))
    }
}

/// The producers the policy's dimensions name, each once.
fn producers(policy: &Policy) -> BTreeSet<&String> {
    policy
        .dimensions
        .iter()
        .flat_map(|d| &d.producers)
        .collect()
}

fn read_file(commit: Oid, path: &str) -> Action {
    Action::ReadFile {
        commit,
        path: path.into(),
    }
}

/// Completion bay could not read, and why: never `met`.
fn unread(why: &str) -> CompletionStep {
    CompletionStep::Done(Report::unread(why))
}

/// Whether a bay merge among `after` fixes, undoes or supersedes `change`.
fn answers(after: &[MainCommit], change: &ChangeId) -> bool {
    after.iter().any(|commit| {
        crate::lineage::pairs(&commit.oid, &commit.message)
            .iter()
            .any(|pair| pair.by_bay && &pair.target == change)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detail::Detail;
    use serde_json::Value;

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an oid")
    }

    fn started() -> CompletionRead {
        let change = ChangeId::parse("c7k2m4qa").expect("an id");
        let (reader, first) = CompletionRead::start(change, oid('a'), oid('a'), None);
        assert!(matches!(first, Action::ReadCommits { .. }), "{first:?}");
        reader
    }

    fn raw() -> String {
        format!("tree {}\nparent {}\n\nMerge\n", oid('b'), oid('c'))
    }

    fn done(step: Result<CompletionStep, Box<Completion>>) -> Value {
        match step {
            Ok(CompletionStep::Done(report)) => report.to_json(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_profile_is_read_at_the_merge_s_base_and_an_unreadable_policy_is_unknown() {
        let mut remote = Refs::new();
        let mut reader = started();
        let next = reader.on(Completion::CommitsRead(Ok(vec![raw()])), &mut remote);
        match next {
            Ok(CompletionStep::Ask(action)) => assert_eq!(
                *action,
                Action::ReadFile {
                    commit: oid('c'),
                    path: POLICY_PATH.into()
                }
            ),
            other => panic!("{other:?}"),
        }
        let value = done(reader.on(Completion::FileRead(Ok(None)), &mut remote));
        assert_eq!(value["verdict"], "unknown", "{value}");

        // A policy with no dimension reads no notes: the default profile is met.
        let mut reader = started();
        reader
            .on(Completion::CommitsRead(Ok(vec![raw()])), &mut remote)
            .expect("a read");
        let policy = b"revision = 1\nunchecked = true\n".to_vec();
        reader
            .on(Completion::FileRead(Ok(Some(policy))), &mut remote)
            .expect("a read");
        let value = done(reader.on(Completion::FileRead(Ok(None)), &mut remote));
        assert_eq!(value["profile"], "default");
        assert_eq!(value["verdict"], "met", "{value}");
    }
}
