//! Keys and the registry in a run: half the seeds keep a key registry that signs everything,
//! written by core's own `bay enrol` machine against the model, with a `registry` key and an
//! `executor` and a `producer` key for every host (a runner, or an agent's `merge --wait`).
//! Each runner judges its keys with core's `runner_keys` machine when it starts, and signs
//! its candidates and evidence through the model's keys (`crate::keys`).
//!
//! The `keys` fault, on a seed with a registry: a person takes a runner's executor key out
//! (`bay enrol --remove executor <runner> --reason revoked|rotated`) while it works, and a while
//! later enrols a new key for it and starts it again; or a runner's key file is replaced by a
//! key the registry never enrolled, or its signer signs other bytes, for a while. And, on its
//! own stream, someone with plain Git writes a pass for the very inputs a head's check is
//! running on, unsigned, in a producer's name (`forge_evidence`): reuse under a registry
//! that signs everything must never take it (S5 holds the merge to an honest pass).
//!
//! What S18 and S19 judge a landed merge by is kept here: when each host last read the
//! registry (a fetch that named it, answered from the remote then), and when each candidate
//! was built and signed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use bay_core::approval::{About, Answer};
use bay_core::git::refs;
use bay_core::id::ChangeId;
use bay_core::machine::approve::{Approve, ApproveInput};
use bay_core::machine::{Expect, NoteAdd, PushPlan};
use bay_core::reason::ReasonCode;
use bay_core::record::CandidateRec;

use bay_core::git::Oid;
use bay_core::machine::enrol::{Enrol, EnrolInput};
use bay_core::machine::runner_keys::{RunnerKeys, RunnerKeysInput};
use bay_core::machine::{Action, Completion, FetchSpec, Machine, RegistryWrite};
use bay_core::result::Decision;
use bay_core::time::Timestamp;
use bay_core::trust::record::{KeySetting, RunnerSigner};
use bay_core::trust::registry::{Class, Enrolment, REF, Reason, next_version};

use super::{Ev, MAIN, Millis, Role, World};
use crate::faults::FaultClass;
use crate::keys::{self, Forgery};
use crate::rng::Rng;

/// The registry key's name, and the name of the key a thief swaps in.
const ADMIN: &str = "registry.admin";
const THIEF: &str = "thief";

/// A registry version's files: name and text.
type Files = Vec<(String, String)>;

thread_local! {
    /// The first registry's files, by the hosts it enrols and whether it has an approver, for
    /// every seed this thread runs: the same for every seed with the same hosts, and deciding
    /// them a key at a time cost a seed a tenth of its setup.
    static FIRST_REGISTRY: RefCell<BTreeMap<(Vec<String>, bool), Files>> =
        const { RefCell::new(BTreeMap::new()) };
}

#[derive(Debug)]
pub(super) struct KeyWorld {
    /// Its own stream, so that a seed without a registry draws as it did before keys.
    rng: Rng,
    /// This seed keeps a registry.
    pub on: bool,
    /// Main's policy asks a person's approval, which the approver `alice` gives.
    pub approvals: bool,
    /// Each host's executor key generation: a new key after each removal.
    generation: BTreeMap<String, u32>,
    /// Runner hosts whose executor key is out of the registry now.
    removed: BTreeSet<usize>,
    /// Per host, when it last read the registry and the tip it read.
    pub read: BTreeMap<usize, (Millis, Option<Oid>)>,
    /// Per candidate commit, when it was built.
    pub built: BTreeMap<Oid, Millis>,
    /// What the fault did: `revoked`, `rotated`, `enrolled`, `forged-key`, `forged-bytes`,
    /// `forged-passes`.
    pub counts: BTreeMap<&'static str, u64>,
    /// Which head runs get a forged pass: a stream of its own, so no other draw moved.
    forge_rng: Rng,
    /// S18 and S19's reading of each registry tip, judged once.
    memo: crate::invariants::keys::Memo,
}

impl KeyWorld {
    pub(super) fn new(seed: u64) -> KeyWorld {
        let mut rng = Rng::new(seed ^ 0x6b65_7973_5f72_6567);
        let on = rng.chance(500);
        KeyWorld {
            rng,
            on,
            approvals: false,
            generation: BTreeMap::new(),
            removed: BTreeSet::new(),
            read: BTreeMap::new(),
            built: BTreeMap::new(),
            counts: BTreeMap::new(),
            memo: Default::default(),
            forge_rng: Rng::new(seed ^ 0x666f_7267_6564_2121),
        }
    }

    /// Whether the `keys` fault is on for a seed that allows it: half the seeds with a
    /// registry, drawn from this stream alone.
    pub(super) fn fault_on(&mut self, allowed: bool) -> bool {
        allowed && self.on && self.rng.chance(500)
    }

    pub(super) fn report(&self) -> BTreeMap<&'static str, u64> {
        let mut counts = self.counts.clone();
        if self.on {
            counts.insert("registry", 1);
        }
        counts
    }

    fn executor_key(&self, host: &str) -> String {
        let generation = self.generation.get(host).copied().unwrap_or(1);
        format!("{host}.executor.{generation}")
    }
}

impl World {
    /// The registry this seed starts with, when it keeps one: a `registry` key, and keys for
    /// each of `names`. A person creates the first registry themselves (as the spec says a
    /// host's owner does): one version, decided by core's `next_version` one key at a time
    /// and signed by its own `registry` key, so that a seed pays for one signature, not for a
    /// chain judged again at each key. Later changes go through `bay enrol`.
    pub(super) fn enrol_all(&mut self, names: &[String]) {
        if !self.keys.on {
            return;
        }
        let admin = self.git.keys.public(ADMIN);
        let asked = (names.to_vec(), self.keys.approvals);
        let known = FIRST_REGISTRY.with(|first| first.borrow().get(&asked).cloned());
        let files = known.unwrap_or_else(|| self.first_registry(names, &admin));
        FIRST_REGISTRY.with(|first| first.borrow_mut().insert(asked, files.clone()));
        let now = Timestamp(1_800_000_000_000);
        let write = RegistryWrite {
            parent: None,
            files,
            message: "bay: the first registry\n".into(),
            at: now,
            key: keys::path(ADMIN),
        };
        let no_views = &mut BTreeMap::new();
        let Some(Completion::RegistryWritten(Ok(first))) =
            self.git.answer(&Action::WriteRegistry(write), no_views)
        else {
            panic!("the model writes a registry version");
        };
        self.git.remote.refs.insert(REF.to_owned(), first.oid);
    }

    /// The files of the first registry, for the hosts `names`: core's `next_version` decides
    /// it one key at a time, each key's a function of its name.
    fn first_registry(&mut self, names: &[String], admin: &bay_core::trust::PublicKey) -> Files {
        let mut requests = vec![Enrolment::Add {
            class: Class::Registry,
            name: "admin".into(),
            key: admin.clone(),
        }];
        for name in names {
            for (class, key) in [
                (Class::Executor, self.keys.executor_key(name)),
                (Class::Producer, format!("{name}.producer")),
            ] {
                requests.push(Enrolment::Add {
                    class,
                    name: name.clone(),
                    key: self.git.keys.public(&key),
                });
            }
        }
        if self.keys.approvals {
            requests.push(Enrolment::Add {
                class: Class::Approver,
                name: APPROVER.into(),
                key: self.git.keys.public(&format!("{APPROVER}.approver")),
            });
        }
        let now = Timestamp(1_800_000_000_000);
        let version = requests.iter().fold(None, |version, request| {
            let next = next_version(version.as_ref(), request, admin, now);
            Some(next.expect("the world's first registry keeps the rules"))
        });
        version.map(|v| v.files()).unwrap_or_default()
    }

    /// Runs `bay enrol` against the model, signed by the registry key, as a person at another
    /// machine would.
    fn enrol(&mut self, request: Enrolment) {
        let input = EnrolInput {
            request,
            signer: self.git.keys.public(ADMIN),
            key_path: keys::path(ADMIN),
        };
        let now = Timestamp(1_800_000_000_000 + self.t);
        let mut enrol = Enrol::new(input, now);
        self.git.run_command(&mut enrol, &mut BTreeMap::new(), now);
        let result = enrol.outcome().expect("an enrol run to its end");
        assert!(
            result.decision == Decision::Ok,
            "the world's enrolment was refused: {result:?}"
        );
    }

    /// What the runner `name` signs with, as `bay runner run` judges its keys when it starts:
    /// `Err` when the registry refuses them (`RUNNER_KEY_MISSING`), and it does not start.
    pub(super) fn signer_for(&mut self, name: &str) -> Result<Option<RunnerSigner>, ()> {
        if !self.keys.on {
            return Ok(None);
        }
        let setting = |world: &mut World, key: String| KeySetting {
            path: keys::path(&key),
            public: Ok(world.git.keys.public(&key)),
        };
        let input = RunnerKeysInput {
            runner: name.to_owned(),
            main: MAIN.into(),
            executor: Some(setting(self, self.keys.executor_key(name))),
            producer: Some(setting(self, format!("{name}.producer"))),
        };
        let now = Timestamp(1_800_000_000_000 + self.t);
        let mut machine = RunnerKeys::new(input, now);
        self.git
            .run_command(&mut machine, &mut BTreeMap::new(), now);
        match machine.outcome().map(|result| result.decision) {
            Some(Decision::Ok) => Ok(machine.signer().cloned()),
            _ => Err(()),
        }
    }

    /// Notes what S18 and S19 judge by, for an action `host` sends now.
    pub(super) fn keys_note(&mut self, host: usize, action: &bay_core::machine::Action) {
        if !self.keys.on {
            return;
        }
        match action {
            bay_core::machine::Action::Fetch(spec) if names_registry(spec) => {
                let tip = self.git.remote.get(REF).cloned();
                self.keys.read.insert(host, (self.t, tip));
            }
            _ => {}
        }
    }

    /// Notes a candidate the model built now.
    pub(super) fn keys_built(&mut self, completion: &bay_core::machine::Completion) {
        if let bay_core::machine::Completion::CandidateBuilt(Ok(
            bay_core::machine::BuildResult::Clean { commit, .. },
        )) = completion
        {
            self.keys.built.entry(commit.clone()).or_insert(self.t);
        }
    }

    /// S18 and S19 on what an accepted push by `host` just put on main; and the claims it
    /// gave back `REGISTRY_CHANGED`, counted.
    pub(super) fn keys_pushed(
        &mut self,
        host: usize,
        plan: &bay_core::machine::PushPlan,
        applied: &crate::remote::Applied,
    ) {
        if !self.keys.on {
            return;
        }
        let changed = plan
            .appends
            .iter()
            .flat_map(|append| &append.steps)
            .filter(|step| {
                matches!(
                    step.body,
                    bay_core::record::StepBody::Release {
                        reason: Some(bay_core::reason::ReasonCode::RegistryChanged),
                        ..
                    }
                )
            })
            .count() as u64;
        if changed > 0 {
            *self.keys.counts.entry("registry-changed").or_insert(0) += changed;
        }
        let main = bay_core::git::refs::main(MAIN);
        // Every commit main gained: one merge, or each member of a batch.
        let landed: Vec<_> = applied
            .moves
            .iter()
            .filter(|moved| moved.name == main)
            .filter_map(|moved| {
                let (old, new) = (moved.old.as_ref()?, moved.new.as_ref()?);
                crate::invariants::gained(&self.git.store, old, new)
            })
            .flatten()
            .collect();
        for commit in landed {
            let built = self.keys.built.get(&commit).copied();
            let found = self.keys.memo.judge_merge(
                &self.git,
                self.t,
                &commit,
                self.keys.read.get(&host),
                built,
            );
            self.checker.violations.extend(found);
            if self.keys.approvals {
                let (owed, found) = self.keys.memo.judge_approvals(&self.git, self.t, &commit);
                *self.keys.counts.entry("approved-merges").or_insert(0) += u64::from(owed > 0);
                self.checker.violations.extend(found);
            }
        }
    }

    pub(super) fn schedule_keys(&mut self) {
        if self.mix.has(FaultClass::Keys) {
            let at = self.keys.rng.range(10_000, 120_000) / self.mix.intensity;
            self.at(at, Ev::Keys);
        }
    }

    fn runner_hosts(&self) -> Vec<usize> {
        (0..self.hosts.len())
            .filter(|host| matches!(self.hosts[*host].role, Role::Runner { .. }))
            .collect()
    }

    /// Under the `keys` fault, now and then: a pass for exactly the inputs of the head's run
    /// `run`, as honest as a record can look but signed by no one, in the notes of a producer
    /// named `thief` that claims to be one of the runners. Only a reuse that skips the
    /// signature could take it, and a merge on it rests on no honest pass (S5).
    pub(super) fn forge_evidence(&mut self, run: &bay_core::machine::CheckRun) {
        if !self.mix.has(FaultClass::Keys) || self.healed || !self.keys.forge_rng.chance(300) {
            return;
        }
        let action = Action::RunCheck(Box::new(run.clone()));
        let exit = crate::bench::passing_exit(&action);
        let bay_core::check::Judgement::Judged(judged) =
            bay_core::check::judge(&run.request, run.check.expected_minimum, &exit)
        else {
            return;
        };
        let runners = self.runner_hosts();
        let named = runners[self.keys.forge_rng.range(0, runners.len() as u64 - 1) as usize];
        let extras = bay_core::check::EvidenceExtras {
            producer: self.hosts[named].name.clone(),
            op: String::new(),
            candidate_id: String::new(),
            at: Timestamp(self.t),
            definition: bay_core::check::definition::digest(&run.check, &exit.adapter),
        };
        let record = bay_core::check::EvidenceRecord::new(&run.request, &judged, &exit, extras);
        let plan = PushPlan {
            notes: vec![NoteAdd {
                producer: THIEF.into(),
                expect: Expect::tip(self.git.remote.get(&refs::evidence(THIEF))),
                object: run.request.candidate.tree.clone(),
                record: record.to_json(),
                key: None,
            }],
            atomic: true,
            ..PushPlan::default()
        };
        let (report, _) = self.git.push(&plan);
        if report.outcome == bay_core::machine::PushOutcome::Accepted {
            *self.keys.counts.entry("forged-passes").or_insert(0) += 1;
        }
    }

    /// One `keys` fault: a runner's executor key taken out, or its signatures forged.
    pub(super) fn keys_fault(&mut self) {
        if self.healed {
            return;
        }
        let runners = self.runner_hosts();
        let host = runners[self.keys.rng.range(0, runners.len() as u64 - 1) as usize];
        let name = self.hosts[host].name.clone();
        let roll = self.keys.rng.range(0, 99);
        if roll < 60 && !self.keys.removed.contains(&host) {
            let reason = if self.keys.rng.chance(500) {
                Reason::Revoked
            } else {
                Reason::Rotated
            };
            self.enrol(Enrolment::Remove {
                class: Class::Executor,
                name,
                reason,
            });
            self.keys.removed.insert(host);
            *self.keys.counts.entry(reason.as_str()).or_insert(0) += 1;
            self.trace.note(self.t, host, "key-removed", 0);
            let delay = self.keys.rng.range(5_000, 90_000);
            self.after(delay, Ev::Rekey { host });
        } else if roll >= 60 {
            let path = keys::path(&self.keys.executor_key(&name));
            let (forgery, what) = if self.keys.rng.chance(500) {
                (Forgery::OtherKey(THIEF.into()), "forged-key")
            } else {
                (Forgery::OtherBytes, "forged-bytes")
            };
            self.git.keys.forged.insert(path.clone(), forgery);
            *self.keys.counts.entry(what).or_insert(0) += 1;
            self.trace.note(self.t, host, what, 0);
            let delay = self.keys.rng.range(5_000, 60_000);
            self.after(delay, Ev::Unforge { path });
        }
        if !self.healed {
            let delay = self.keys.rng.range(60_000, 240_000) / self.mix.intensity;
            self.after(delay, Ev::Keys);
        }
    }

    /// A person enrols a new executor key for the runner on `host` and starts it again with it.
    pub(super) fn rekey(&mut self, host: usize) {
        if !self.keys.removed.remove(&host) {
            return;
        }
        let name = self.hosts[host].name.clone();
        *self.keys.generation.entry(name.clone()).or_insert(1) += 1;
        let key = self.git.keys.public(&self.keys.executor_key(&name));
        self.enrol(Enrolment::Add {
            class: Class::Executor,
            name,
            key,
        });
        *self.keys.counts.entry("enrolled").or_insert(0) += 1;
        if let Role::Runner {
            machine,
            down_until,
            ..
        } = &mut self.hosts[host].role
        {
            machine.take();
            *down_until = None;
        }
        self.hosts[host].incarnation += 1;
        self.hosts[host].wake = None;
        self.trace.note(self.t, host, "rekey", 0);
        self.restart(host);
    }

    pub(super) fn unforge(&mut self, path: &str) {
        self.git.keys.forged.remove(path);
    }

    /// At heal: every forgery ends and every removed key is replaced.
    pub(super) fn heal_keys(&mut self) {
        self.git.keys.forged.clear();
        let removed: Vec<usize> = self.keys.removed.iter().copied().collect();
        for host in removed {
            self.rekey(host);
        }
    }
}

fn names_registry(spec: &FetchSpec) -> bool {
    spec.patterns.iter().any(|pattern| {
        pattern
            .strip_prefix(REF)
            .is_some_and(|rest| rest.is_empty() || rest == "*")
    })
}

/// The approval check some seeds with a registry add to main's policy: a person's signed yes
/// for changes to `src/a.txt`, asked again on every candidate (`carry = false`), so that S20
/// holds each merge to a yes signed for its very commit.
const APPROVAL_CHECK: &str = "\n[[check]]\nid = \"owner-approval\"\nenvironment = \"people\"\nkind = \"approval\"\nwhen_paths = [\"src/a.txt\"]\ncarry = false\n";
/// The approver's name.
const APPROVER: &str = "alice";

impl World {
    /// Main's policy, with the approval check when this seed asks for one: half the seeds
    /// with a registry whose policy runs checks.
    pub(super) fn with_approval(&mut self, policy: String) -> String {
        let runs = policy.contains("[[check]]");
        if !(self.keys.on && runs && self.keys.rng.chance(500)) {
            return policy;
        }
        self.keys.approvals = true;
        let first = self.keys.rng.range(5_000, 20_000);
        self.after(first, Ev::Approve);
        policy + APPROVAL_CHECK
    }

    fn approver_key(&mut self) -> KeySetting {
        let key = format!("{APPROVER}.approver");
        KeySetting {
            path: keys::path(&key),
            public: Ok(self.git.keys.public(&key)),
        }
    }

    /// The approver answers every operation that waits for a yes: `bay approve` (now and then
    /// `bay reject`), with core's approve machine; with the `keys` fault, sometimes a yes
    /// signed for another commit hung on the candidate instead, which must never count.
    pub(super) fn approve_waiting(&mut self) {
        let waiting: Vec<(ChangeId, CandidateRec)> = self
            .git
            .remote
            .refs
            .range::<str, _>((Bound::Included(refs::CHANGES), Bound::Unbounded))
            .take_while(|(name, _)| name.starts_with(refs::CHANGES))
            .filter_map(|(name, _)| ChangeId::parse(&name[refs::CHANGES.len()..]).ok())
            .collect::<Vec<_>>()
            .into_iter()
            .filter_map(|change| {
                let record = self.git.record(&change)?;
                let candidate = record.ops.iter().find_map(|op| {
                    let waits = op.released == Some(ReasonCode::ApprovalPending)
                        && op.owner.is_none()
                        && !op.state.is_terminal();
                    waits.then(|| op.candidates.last().cloned()).flatten()
                })?;
                Some((change, candidate))
            })
            .collect();
        for (change, candidate) in waiting {
            if self.mix.has(FaultClass::Keys) && self.keys.rng.chance(300) {
                let forged = self.keys.rng.chance(500);
                self.false_approval(&change, &candidate, forged);
                continue;
            }
            let input = ApproveInput {
                main: MAIN.into(),
                change,
                approver: Some(APPROVER.into()),
                key: Some(self.approver_key()),
                yes: !self.keys.rng.chance(100),
                why: "looked at it".into(),
                waive: None,
            };
            let now = Timestamp(1_800_000_000_000 + self.t);
            let mut approve = Approve::new(input, now);
            self.git
                .run_command(&mut approve, &mut BTreeMap::new(), now);
            *self.keys.counts.entry("approvals").or_insert(0) += 1;
        }
        let delay = self.keys.rng.range(5_000, 30_000);
        self.after(delay, Ev::Approve);
    }

    /// A yes hung on the candidate that must not count: one the approver signed for the
    /// candidate's base, or (`forged`) one for the candidate signed by a key the registry
    /// never enrolled.
    fn false_approval(&mut self, change: &ChangeId, candidate: &CandidateRec, forged: bool) {
        let answer = Answer {
            approver: APPROVER.into(),
            check: "owner-approval".into(),
            environment: "people".into(),
            verdict: bay_core::check::Verdict::Pass,
            why: "said of another candidate".into(),
        };
        let mut about = About::candidate(change, candidate);
        if !forged {
            about.commit = candidate.base.clone();
        }
        let at = Timestamp(1_800_000_000_000 + self.t);
        let line = bay_core::approval::record(&answer, &about, at);
        let key = match forged {
            true => keys::path(THIEF),
            false => self.approver_key().path,
        };
        let Ok(record) = self.git.keys.signed_record(&key, &line) else {
            return;
        };
        let expect = match self.git.remote.get(&refs::evidence(APPROVER)) {
            Some(tip) => Expect::Is(tip.clone()),
            None => Expect::Absent,
        };
        let plan = PushPlan {
            notes: vec![NoteAdd {
                producer: APPROVER.into(),
                expect,
                object: candidate.commit.clone(),
                record,
                key: None,
            }],
            atomic: true,
            ..PushPlan::default()
        };
        self.git.push(&plan);
        let what = if forged {
            "forged-approvals"
        } else {
            "stale-approvals"
        };
        *self.keys.counts.entry(what).or_insert(0) += 1;
    }
}
