//! What the agent-side commands (`start`, `merge`, `abandon`) share: reading one change's
//! record, writing steps with fresh nonces, and the bound on retries after a lost race.

use super::{Action, ChainQuery, ChainRead, Expect, NewValue, PushOutcome, RefUpdate, Refs};
use crate::git::{Oid, refs};
use crate::id::ChangeId;
use crate::record::{ChangeRecord, Step, StepBody};
use crate::time::Timestamp;

/// How many times a command starts over after the remote refused its push because someone
/// else wrote first. Each refusal means progress elsewhere, so a small bound suffices.
pub const MAX_RACES: u32 = 8;

/// What a command that pushes records onto its notes does after the push: finish, read the
/// notes again and write what is missing (another writer moved them, or the reply was lost:
/// a record that went up is then found unchanged), or fail, once `races` pushes lost.
pub enum AfterNotesPush {
    Landed,
    Again,
    Failed(String),
}

impl AfterNotesPush {
    /// Judges `outcome`, counting a lost race in `races`; `notes` names whose notes they are.
    pub fn of(outcome: PushOutcome, races: &mut u32, notes: &str) -> AfterNotesPush {
        match outcome {
            PushOutcome::Accepted => AfterNotesPush::Landed,
            PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => {
                *races += 1;
                if *races > MAX_RACES {
                    AfterNotesPush::Failed(format!("other writers kept moving {notes}"))
                } else {
                    AfterNotesPush::Again
                }
            }
            PushOutcome::NotSent(fault) => {
                AfterNotesPush::Failed(format!("the remote could not be reached: {fault}"))
            }
        }
    }
}

/// One chain append racing other writers: how often its push lost, and the step a push that
/// did not land (or whose fate is unknown) wrote, so that the next read of the chain tells
/// whether it landed after all.
#[derive(Debug, Default)]
pub(crate) struct Races {
    lost: u32,
    written: Option<Oid>,
}

impl Races {
    /// A push that did not land: keeps the step it wrote; `false` once it lost more than
    /// [`MAX_RACES`] times, when the command gives up.
    pub(crate) fn lost(&mut self, report: &super::PushReport) -> bool {
        self.written = report.steps.first().and_then(|s| s.last()).cloned();
        self.lost += 1;
        self.lost <= MAX_RACES
    }

    /// Whether `chain`, read again, holds the step a lost push wrote (asked once a read).
    pub(crate) fn landed(&mut self, chain: &[(Oid, Step)]) -> bool {
        self.written
            .take()
            .is_some_and(|written| chain.iter().any(|(oid, _)| *oid == written))
    }
}

/// A chain's steps as read, oldest first, each with its commit.
pub type ReadSteps = Vec<(Oid, Step)>;

/// Asks whether main at `main` holds `merge`, a change's merge as its marker or record names
/// it: their merge base is `merge` exactly when it is on main's history. A record and a marker
/// say a change merged once; main moved back past the merge (someone forced it) holds it no
/// more, and then the change is not on main, whatever they say. Git answers from the commits'
/// ancestry, walking main only down to where the two meet.
pub fn on_main(merge: &Oid, main: &Oid) -> Action {
    Action::MergeBase {
        one: merge.clone(),
        two: main.clone(),
    }
}

/// The `detail` of `CHANGE_NOT_MERGED` for a command about a merged change (`bay start
/// --fixes`, `bay undo`): the change it names, main, and, when the change merged once and main
/// moved back past it, that merge.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NotMerged {
    pub target: ChangeId,
    pub main: Oid,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merge: Option<Oid>,
}

/// What the answer to [`on_main`] says: whether main holds `merge`.
pub fn holds(merge: &Oid, base: Option<&Oid>) -> bool {
    base == Some(merge)
}

/// Folds a whole chain read (newest step first) into its record, with every step's id.
pub fn fold_chain(read: &ChainRead) -> Result<(ChangeRecord, ReadSteps), String> {
    match read.unreadable.as_deref() {
        Some(crate::compact::ABSENT) => {
            return Err(format!("no change {} on the remote", read.change));
        }
        Some(why) => return Err(unreadable_chain(&read.change, why)),
        None => {}
    }
    let mut chain = Vec::with_capacity(read.steps.len());
    for raw in read.steps.iter().rev() {
        chain.push((
            raw.oid.clone(),
            Step::from_message(&raw.message).map_err(|e| e.to_string())?,
        ));
    }
    let steps: Vec<Step> = chain.iter().map(|(_, step)| step.clone()).collect();
    let record = ChangeRecord::fold(&steps).map_err(|e| e.to_string())?;
    Ok((record, chain))
}

/// Why the chain of `change` cannot be read, naming its ref: the walk met `why`.
pub fn unreadable_chain(change: &ChangeId, why: &str) -> String {
    format!(
        "{} on the remote is not a change record bay can read ({why})",
        refs::change(change)
    )
}

/// The action that reads the whole chain of `change` at its tip on `remote`, or, when its chain
/// ref is gone, its compacted chain in the index ([`read_compacted`]).
pub fn read_chain(remote: &Refs, change: &ChangeId) -> Action {
    match ChainQuery::whole(remote, change) {
        Some(chain) => Action::ReadChains {
            chains: vec![chain],
        },
        None => Action::ReadCompacted {
            changes: vec![change.clone()],
        },
    }
}

/// The merge commit of the one change `reads` holds, when it reads and merged.
pub fn merge_of(reads: &[ChainRead]) -> Option<Oid> {
    fold_one(reads)
        .ok()
        .and_then(|(record, _, _)| record.merge_commit().cloned())
}

/// The action that reads `changes` from the index, each from its shard as the remote holds it
/// then; none when there is nothing to read. A command asks only for changes its fetch found
/// no chain ref of: compaction deletes a chain ref in the push that adds the chain to its
/// shard, and a shard only gains files, so a change that was compacted then is in the shard
/// read later, and one that is not there was never a change.
pub fn read_compacted(changes: Vec<ChangeId>) -> Option<Action> {
    (!changes.is_empty()).then_some(Action::ReadCompacted { changes })
}

/// The one chain a command asked for, folded, with its tip and its steps (oldest first, each
/// with its commit); the failure to say otherwise.
pub fn fold_one(reads: &[ChainRead]) -> Result<(ChangeRecord, Oid, ReadSteps), String> {
    let read = reads.first().ok_or("the change's record came back empty")?;
    let (record, oids) =
        fold_chain(read).map_err(|why| format!("the change's record cannot be read: {why}"))?;
    Ok((record, read.tip.clone(), oids))
}

/// The newest generation of `intent` on `remote`, and the start step its ref points at.
pub fn latest_generation(remote: &Refs, intent: &str) -> Option<(u32, Oid)> {
    let digest = crate::id::intent_digest(intent);
    remote
        .iter()
        .filter_map(|(name, oid)| refs::parse_intent(name).map(|(d, g)| (d, g, oid)))
        .filter(|(d, _, _)| *d == digest)
        .max_by_key(|(_, generation, _)| *generation)
        .map(|(_, generation, oid)| (generation, oid.clone()))
}

/// The fetch pattern of the index shard that holds `intent`'s latest compacted generation.
pub fn compacted_intent_pattern(intent: &str) -> String {
    refs::index_pattern(&refs::index_of_intent(&crate::id::intent_digest(intent)))
}

/// When `remote` holds no generation ref of `intent` but holds its index shard: the read of the
/// index's record of the intent's latest compacted generation (`crate::compact`), answered
/// with [`compacted_generation`].
pub fn read_compacted_generation(remote: &Refs, intent: &str) -> Option<Action> {
    let digest = crate::id::intent_digest(intent);
    let shard = remote.get(&refs::index_of_intent(&digest))?;
    Some(Action::ReadFile {
        commit: shard.clone(),
        path: crate::compact::intent_path(&digest),
    })
}

/// The latest compacted generation of an intent, from the answer to
/// [`read_compacted_generation`]: none when the index has no record of it.
pub fn compacted_generation(
    file: Option<&[u8]>,
) -> Result<Option<crate::compact::Generation>, String> {
    file.map(crate::compact::Generation::decode).transpose()
}

/// The update that removes the queue place `seq` from `remote`, when the operation holding it
/// ends in the same push; `None` if the place is already gone.
pub fn give_up_place(remote: &Refs, seq: u64) -> Option<RefUpdate> {
    let name = refs::queue(seq);
    let oid = remote.get(&name)?.clone();
    Some(RefUpdate {
        name,
        expect: Expect::Is(oid),
        new: NewValue::Delete,
    })
}

/// A source of step nonces, from entropy the caller passed in.
#[derive(Clone, Debug)]
pub struct Nonces(u64);

impl Nonces {
    pub fn new(seed: u64) -> Nonces {
        Nonces(seed)
    }

    /// The next value of a splitmix64 sequence.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn step(&mut self, change: &ChangeId, at: Timestamp, by: &str, body: StepBody) -> Step {
        Step {
            change: change.clone(),
            at,
            by: by.to_owned(),
            nonce: self.next(),
            body,
        }
    }

    /// A push of one checkpoint step by `by` on `record`'s chain at `tip`: `draft` (made on the
    /// record's base, which it carries to the remote), with the files bay `marked` in it.
    pub fn checkpoint(
        &mut self,
        record: &ChangeRecord,
        tip: Oid,
        at: Timestamp,
        by: &str,
        draft: Oid,
        marked: Option<crate::conflict::Marked>,
    ) -> super::PushPlan {
        let body = StepBody::Checkpoint {
            draft: draft.clone(),
            base: record.base.clone(),
            marked,
        };
        let step = self.step(&record.change, at, by, body);
        super::PushPlan::of(super::Append::on(
            record.change.clone(),
            Some(tip),
            vec![step],
            Some(draft),
        ))
    }
}

/// The `Machine` impl every agent command shares: take a completion only for an action in
/// flight and only while no result is out, hand it to the command's `on`, and turn a
/// completion `on` did not take into a failed result (a fault) or a `Misuse` (a completion of
/// the wrong kind). Each command holds `now`, `out`, `outcome`, `on` and `fail`.
macro_rules! command_machine {
    ($machine:ty, $name:literal) => {
        impl $crate::machine::Machine for $machine {
            fn handle(
                &mut self,
                now: $crate::time::Timestamp,
                event: $crate::machine::Event,
            ) -> Result<(), $crate::machine::Misuse> {
                self.now = now;
                let $crate::machine::Event::Done(id, completion) = event else {
                    return Ok(());
                };
                let Some(purpose) = self.out.complete(id)? else {
                    return Ok(());
                };
                if self.outcome.is_some() {
                    return Ok(());
                }
                if let Some(completion) = self.on(purpose, completion) {
                    match $crate::machine::start::fault_of(&completion) {
                        Some(fault) => self.fail(fault),
                        None => {
                            return Err($crate::machine::Misuse(format!(
                                "{} got an unexpected {completion:?}",
                                $name
                            )));
                        }
                    }
                }
                Ok(())
            }

            fn poll_action(
                &mut self,
            ) -> Option<($crate::machine::ActionId, $crate::machine::Action)> {
                self.out.poll()
            }

            fn poll_timeout(&self) -> Option<$crate::machine::Deadline> {
                None
            }

            fn outcome(&self) -> Option<&$crate::result::BayResult> {
                self.outcome.as_ref()
            }
        }
    };
}

pub(super) use command_machine;
