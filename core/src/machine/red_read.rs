//! Reading main's red, for a command that shows it (`bay status`, `bay status --since`): the
//! policy at main for its post checks, the config there for `[red] window`, the evidence notes
//! fetched afresh, the window of main's first-parent commits, and the notes on them, judged by
//! [`red::Red`](crate::red::Red). A policy with no post check reads nothing more.
//!
//! The reader is a part of its command's machine: the command sends each action it asks for,
//! with a purpose of its own, and hands each completion back.

use super::{Action, Completion, Fault, FetchSpec, RawStep, Refs};
use crate::check::plan::{POLICY_PATH, parse_policy};
use crate::config::{CONFIG_PATH, Config};
use crate::git::{Oid, refs};
use crate::policy::Policy;
use crate::red::{PostCheck, Red};

/// What the reader does next.
#[derive(Debug)]
pub enum RedStep {
    /// Send this action and hand its completion back.
    Ask(Box<Action>),
    /// Done: main's red, or `None` when main's policy names no post check.
    Done(Option<Red>),
    /// Done: what was needed could not be read, and why.
    Unread(String),
}

#[derive(Clone, Debug)]
enum Stage {
    Policy,
    Config,
    Evidence(FetchSpec),
    Window,
    Notes(Vec<RawStep>),
}

/// One read of main's red, at main `main`.
#[derive(Clone, Debug)]
pub struct RedRead {
    main: Oid,
    stage: Stage,
    checks: Vec<PostCheck>,
    /// Main's policy, when the reader read it: a bisect runs the post checks it names.
    policy: Option<Policy>,
    window: u32,
}

impl RedRead {
    /// Starts at main `main`: the first action reads its policy.
    pub fn start(main: Oid) -> (RedRead, Action) {
        let read = Action::ReadFile {
            commit: main.clone(),
            path: POLICY_PATH.into(),
        };
        let reader = RedRead {
            main,
            stage: Stage::Policy,
            checks: Vec::new(),
            policy: None,
            window: crate::red::DEFAULT_WINDOW,
        };
        (reader, read)
    }

    /// Starts past the policy and the config, which the caller read already (the runner reads
    /// the policy at the base it builds on, and takes `[red] window` with its config): the first
    /// action fetches the evidence notes afresh.
    pub fn with_checks(main: Oid, checks: Vec<PostCheck>, window: u32) -> (RedRead, Action) {
        let spec = FetchSpec::new([refs::EVIDENCE_PATTERN.to_string()]);
        let reader = RedRead {
            main,
            stage: Stage::Evidence(spec.clone()),
            checks,
            policy: None,
            window,
        };
        (reader, Action::Fetch(spec))
    }

    /// Takes the completion of the last action asked; `remote` gains the evidence tips fetched.
    /// A completion of another kind is given back: a driver bug, for the command to refuse.
    pub fn on(
        &mut self,
        completion: Completion,
        remote: &mut Refs,
    ) -> Result<RedStep, Box<Completion>> {
        let unread = |fault: Fault| RedStep::Unread(fault.0);
        Ok(match (self.stage.clone(), completion) {
            (Stage::Policy, Completion::FileRead(read)) => {
                // A policy that is absent or invalid names no post check it could judge.
                self.policy = match read {
                    Ok(bytes) => bytes.and_then(|bytes| parse_policy(&bytes).ok()),
                    Err(fault) => return Ok(unread(fault)),
                };
                self.checks = self.policy.as_ref().map(PostCheck::of).unwrap_or_default();
                if self.checks.is_empty() {
                    return Ok(RedStep::Done(None));
                }
                self.stage = Stage::Config;
                RedStep::Ask(Box::new(Action::ReadFile {
                    commit: self.main.clone(),
                    path: CONFIG_PATH.into(),
                }))
            }
            (Stage::Config, Completion::FileRead(read)) => {
                if let Ok(config) = Config::at_main(read.ok().flatten().as_deref()) {
                    self.window = config.red_window();
                }
                let spec = FetchSpec::new([refs::EVIDENCE_PATTERN.to_string()]);
                self.stage = Stage::Evidence(spec.clone());
                RedStep::Ask(Box::new(Action::Fetch(spec)))
            }
            (Stage::Evidence(spec), Completion::Fetched(fetched)) => match fetched {
                Ok(fetched) => {
                    spec.apply(remote, fetched);
                    self.stage = Stage::Window;
                    RedStep::Ask(Box::new(Action::ReadLog {
                        range: Some(self.main.as_str().to_owned()),
                        limit: self.window,
                        since: None,
                    }))
                }
                Err(fault) => unread(fault),
            },
            (Stage::Window, Completion::LogRead(window)) => match window {
                Ok(window) => {
                    let notes: Vec<Oid> = remote
                        .iter()
                        .filter(|(name, _)| name.starts_with(refs::EVIDENCE))
                        .map(|(_, tip)| tip.clone())
                        .collect();
                    if notes.is_empty() {
                        return Ok(RedStep::Done(Some(self.judge(&window, &[]))));
                    }
                    let objects = window.iter().map(|raw| raw.oid.clone()).collect();
                    self.stage = Stage::Notes(window);
                    RedStep::Ask(Box::new(Action::ReadNotes { notes, objects }))
                }
                Err(fault) => unread(fault),
            },
            (Stage::Notes(window), Completion::NotesRead(lines)) => match lines {
                Ok(lines) => RedStep::Done(Some(self.judge(&window, &lines))),
                Err(fault) => unread(fault),
            },
            (_, other) => return Err(Box::new(other)),
        })
    }

    /// Main's policy, once the reader has read it itself ([`RedRead::start`]).
    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }

    fn judge(&self, window: &[RawStep], lines: &[String]) -> Red {
        Red::judge(&self.checks, window, lines, self.window)
    }
}
