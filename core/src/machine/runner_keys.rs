//! Before a runner claims anything: does it have to sign, and can it? It fetches main and the
//! key registry, reads `[policy] signing` from the policy at main's tip (the base every
//! candidate it builds next starts from), reads and judges the registry, and judges the
//! runner's keys (`trust::record::runner_keys`). With no registry, or under `signing =
//! "approvals"`, the runner signs nothing; with a registry that signs everything it signs
//! with both keys, or refuses `RUNNER_KEY_MISSING` and claims nothing. An unreadable
//! registry refuses it too, naming why.
//!
//! A policy at main that cannot be read counts as `signing = "all"`: the stricter reading,
//! and the runner's own first operation refuses the policy by name.

mod detail;

use self::detail::{Refusal, Signs};
use super::{Action, Completion, FetchSpec, Outbox, Refs};
use crate::check::plan::{POLICY_PATH, parse_policy};
use crate::detail::Detail;
use crate::git::{Oid, refs};
use crate::policy::Signing;
use crate::reason::ReasonCode;
use crate::result::BayResult;
use crate::time::Timestamp;
use crate::trust::record::{KeySetting, RunnerSigner, runner_keys};
use crate::trust::registry::{REF, RegistryCommit, judge_chain};

#[derive(Clone, Debug)]
pub struct RunnerKeysInput {
    /// The runner's name: the producer its records name.
    pub runner: String,
    /// Main's branch name.
    pub main: String,
    /// `bay.executorKey`, if set, with its public half or why there is none.
    pub executor: Option<KeySetting>,
    /// `bay.producerKey`, likewise.
    pub producer: Option<KeySetting>,
}

#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    Policy,
    Registry,
}

/// The machine. Drive it as [`Machine`](crate::machine::Machine) says; once it is done,
/// [`RunnerKeys::signer`] says what the runner signs with.
#[derive(Debug)]
pub struct RunnerKeys {
    input: RunnerKeysInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    registry: Option<Oid>,
    signing: Signing,
    signer: Option<RunnerSigner>,
    outcome: Option<BayResult>,
}

impl RunnerKeys {
    pub fn new(input: RunnerKeysInput, now: Timestamp) -> RunnerKeys {
        let mut machine = RunnerKeys::unread(input, now);
        let spec = FetchSpec::new(RunnerKeys::patterns(&machine.input.main));
        machine.out.send(Action::Fetch(spec), Purpose::Fetch);
        machine
    }

    /// The judgement on refs a command fetched itself, with [`RunnerKeys::patterns`] among
    /// what it fetched: no fetch of its own, so `merge --wait` judges its keys on its first
    /// fetch and makes one round trip, not two.
    pub fn fetched(input: RunnerKeysInput, now: Timestamp, remote: &Refs) -> RunnerKeys {
        let mut machine = RunnerKeys::unread(input, now);
        let judged: Refs = remote
            .iter()
            .filter(|(name, _)| {
                FetchSpec::new(RunnerKeys::patterns(&machine.input.main)).covers(name)
            })
            .map(|(name, oid)| (name.clone(), oid.clone()))
            .collect();
        machine.on_fetched(judged);
        machine
    }

    /// What the judgement reads of the remote: main, and the registry (`*`: it may not
    /// exist, and that is no fault).
    pub fn patterns(main: &str) -> [String; 2] {
        [refs::main(main), format!("{REF}*")]
    }

    fn unread(input: RunnerKeysInput, now: Timestamp) -> RunnerKeys {
        RunnerKeys {
            input,
            out: Outbox::default(),
            now,
            registry: None,
            signing: Signing::All,
            signer: None,
            outcome: None,
        }
    }

    /// What the runner signs with: `None` when it signs nothing (or was refused).
    pub fn signer(&self) -> Option<&RunnerSigner> {
        self.signer.as_ref()
    }

    /// Whether the remote holds a registry that signs only approvals.
    pub fn approvals_only(&self) -> bool {
        self.registry.is_some() && self.signing == Signing::Approvals
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        self.finish(BayResult::failed(&why));
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.registry = remote.get(REF).cloned();
        if self.registry.is_none() {
            return self.finish(signs_nothing("the remote holds no key registry"));
        }
        let Some(main) = remote.get(&refs::main(&self.input.main)).cloned() else {
            return self.fail(format!("the remote has no {}", self.input.main));
        };
        let read = Action::ReadFile {
            commit: main,
            path: POLICY_PATH.into(),
        };
        self.out.send(read, Purpose::Policy);
    }

    fn on_policy(&mut self, bytes: Option<Vec<u8>>) {
        self.signing = bytes
            .and_then(|bytes| parse_policy(&bytes).ok())
            .map_or(Signing::All, |policy| policy.signing);
        if self.signing == Signing::Approvals {
            return self.finish(signs_nothing(
                "the policy on main signs only approvals (`[policy] signing = \"approvals\"`)",
            ));
        }
        let Some(tip) = self.registry.clone() else {
            return self.finish(signs_nothing("the remote holds no key registry"));
        };
        self.out
            .send(Action::ReadRegistry { tip }, Purpose::Registry);
    }

    fn on_registry(&mut self, chain: Vec<RegistryCommit>) {
        let version = match judge_chain(&chain) {
            Ok(version) => version,
            Err(broken) => {
                return self.finish(refused(Refusal::Registry { registry: broken }));
            }
        };
        let judged = runner_keys(
            Some(&version),
            self.signing,
            &self.input.runner,
            self.input.executor.as_ref(),
            self.input.producer.as_ref(),
        );
        match judged {
            Ok(signer) => {
                self.signer = signer;
                let signs = Signs::judged(self.signing, self.signer.is_some());
                self.finish(BayResult::ok(None, signs.to_map()));
            }
            Err(keys) => self.finish(refused(Refusal::Keys {
                runner: &self.input.runner,
                keys,
            })),
        }
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::Policy, Completion::FileRead(Ok(bytes))) => self.on_policy(bytes),
            (Purpose::Registry, Completion::RegistryRead(Ok(chain))) => self.on_registry(chain),
            (_, completion) => return Some(completion),
        }
        None
    }
}

fn refused(refusal: Refusal<'_>) -> BayResult {
    crate::report::refused(ReasonCode::RunnerKeyMissing, None, None, refusal.to_json())
}

fn signs_nothing(why: &'static str) -> BayResult {
    BayResult::ok(None, Signs::nothing(why).to_map())
}

super::agent::command_machine!(RunnerKeys, "runner-keys");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::{ActionId, Event, Machine};

    struct Run {
        machine: RunnerKeys,
        pending: Option<(ActionId, Action)>,
    }

    impl Run {
        fn new() -> Run {
            let input = RunnerKeysInput {
                runner: "r1".into(),
                main: "main".into(),
                executor: None,
                producer: None,
            };
            let mut machine = RunnerKeys::new(input, Timestamp(0));
            let pending = machine.poll_action();
            Run { machine, pending }
        }

        /// Answers the pending action; the next one the machine asks, if any.
        fn answer(&mut self, completion: Completion) -> Option<&Action> {
            let (id, _) = self.pending.take().expect("an action");
            self.machine
                .handle(Timestamp(1), Event::Done(id, completion))
                .expect("no misuse");
            self.pending = self.machine.poll_action();
            self.pending.as_ref().map(|(_, action)| action)
        }

        fn reason(&self) -> Option<ReasonCode> {
            self.machine.outcome.as_ref().expect("an outcome").reason
        }
    }

    fn oid(digit: char) -> Oid {
        Oid::parse(&digit.to_string().repeat(40)).expect("an oid")
    }

    fn with_registry() -> Refs {
        [(refs::main("main"), oid('1')), (REF.to_owned(), oid('2'))]
            .into_iter()
            .collect()
    }

    #[test]
    fn without_a_registry_the_runner_signs_nothing_and_reads_no_more() {
        let mut run = Run::new();
        let remote: Refs = [(refs::main("main"), oid('1'))].into_iter().collect();
        assert_eq!(run.answer(Completion::Fetched(Ok(remote))), None);
        assert_eq!(run.reason(), None);
        assert_eq!(run.machine.signer(), None);
    }

    #[test]
    fn under_signing_approvals_the_runner_needs_no_key() {
        let mut run = Run::new();
        let next = run.answer(Completion::Fetched(Ok(with_registry())));
        assert!(matches!(next, Some(Action::ReadFile { .. })), "{next:?}");
        let policy = b"revision = 1\nunchecked = true\n\n[policy]\nsigning = \"approvals\"\n";
        let next = run.answer(Completion::FileRead(Ok(Some(policy.to_vec()))));
        assert_eq!(next, None);
        assert_eq!(run.reason(), None);
        assert_eq!(run.machine.signer(), None);
        assert!(run.machine.approvals_only());
    }

    #[test]
    fn a_registry_that_signs_all_and_no_keys_refuses_runner_key_missing() {
        let mut run = Run::new();
        run.answer(Completion::Fetched(Ok(with_registry())));
        // No policy at main: the default, which signs everything.
        let next = run.answer(Completion::FileRead(Ok(None)));
        assert!(
            matches!(next, Some(Action::ReadRegistry { .. })),
            "{next:?}"
        );
        // A registry that reads nothing is unreadable, and refuses as a missing key does.
        run.answer(Completion::RegistryRead(Ok(Vec::new())));
        assert_eq!(run.reason(), Some(ReasonCode::RunnerKeyMissing));
        assert_eq!(run.machine.signer(), None);
    }

    #[test]
    fn judged_on_a_command_s_own_fetch_it_fetches_nothing_more() {
        let input = RunnerKeysInput {
            runner: "r1".into(),
            main: "main".into(),
            executor: None,
            producer: None,
        };
        // Refs the command fetched for itself too: only main and the registry are read.
        let mut remote = with_registry();
        remote.insert("refs/bay/queue/1".into(), oid('3'));
        let mut judged = RunnerKeys::fetched(input.clone(), Timestamp(0), &remote);
        let next = judged.poll_action().map(|(_, action)| action);
        assert!(
            matches!(&next, Some(Action::ReadFile { commit, .. }) if *commit == oid('1')),
            "the policy at the fetched main, no fetch: {next:?}"
        );
        let bare: Refs = [(refs::main("main"), oid('1'))].into_iter().collect();
        let judged = RunnerKeys::fetched(input, Timestamp(0), &bare);
        assert_eq!(judged.outcome.as_ref().and_then(|r| r.reason), None);
        assert!(judged.outcome.is_some(), "no registry: judged at once");
        assert_eq!(judged.signer(), None);
    }
}
