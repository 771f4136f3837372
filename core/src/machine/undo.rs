//! `bay undo <change>`: open a change that takes one merged change's edits back out of main.
//!
//! The merged marker `refs/bay/landed/<change>` names the merge commit on main; its record
//! names the main commit it was made on. The reverse is that merge taken back onto current
//! main: a three-way merge whose base is the merge commit and whose other side is the commit
//! it was made on (`RefreshDraft`, which keeps conflict markers in the files). When the reverse
//! leaves main as it is, the effect is already gone and nothing opens. Otherwise the undo
//! opens the next generation of the intent `undo of <change>` (the change it supersedes named,
//! an earlier undo still open refused), on the paths the merge touched, with the reverse as its
//! first draft and `reverts` in its start, so that its merge carries `Reverts: <change>`. The
//! merge itself is `bay merge`'s, run by the caller with the change this returns.

mod detail;

use self::detail::{Gathered, Refusal};
use super::agent::{self, MAX_RACES, Nonces, NotMerged};
use super::{
    Action, Append, ChainRead, Completion, Expect, FetchSpec, NewValue, Outbox, PushOutcome,
    PushPlan, PushReport, RawStep, RefUpdate, Refreshed, Refs,
};
use crate::conflict::Labels;
use crate::detail::Detail;
use crate::disk::DiskSpace;
use crate::git::{Oid, refs};
use crate::id::{ChangeId, intent_digest};
use crate::limits::PathStat;
use crate::record::{Step, StepBody};
use crate::report;
use crate::result::BayResult;
use crate::time::Timestamp;

#[derive(Clone, Debug)]
pub struct UndoInput {
    /// The merged change to take back out.
    pub target: ChangeId,
    pub actor: String,
    pub main: String,
    /// Entropy for the undo change's id and step nonces.
    pub entropy: u64,
    /// Free space where the view would go, when this machine sets a floor (`bay.minFreeMiB`).
    pub disk: Option<DiskSpace>,
}

/// The intent every undo of `target` shares, generation after generation.
pub fn undo_intent(target: &ChangeId) -> String {
    format!("undo of {target}")
}

/// What each action is for, with what the undo found before it: main as the last fetch
/// found it, the merge to take back, and then the reverse built onto that main.
#[derive(Clone, Debug)]
enum Purpose {
    Fetch,
    /// Whether main still holds the undone change's merge.
    OnMain {
        main: Oid,
        merge: Oid,
    },
    /// The undone change's record, which names the commit its merge was made on.
    ReadTarget {
        main: Oid,
        merge: Oid,
    },
    /// The undone change's record, from the index it was compacted into.
    CompactedTarget {
        main: Oid,
    },
    /// The paths the merge touched.
    Touched {
        main: Oid,
        merged: Merged,
    },
    /// The merge taken back onto main.
    Reverse {
        main: Oid,
    },
    /// Whether the reverse leaves main as it is.
    Same(Box<Reversed>),
    ReadIntent(Box<Reversed>),
    /// The index's record of the undo intent's latest compacted generation.
    CompactedIntent(Box<Reversed>),
    /// The chain of the earlier undo the next generation supersedes.
    FetchUndo {
        earlier: ChangeId,
        reversed: Box<Reversed>,
    },
    ReadUndo(Box<Reversed>),
    /// The push that opens the undo change, whose first draft is this reverse.
    Create(Box<Refreshed>),
    /// The undo change's view, which shows this reverse.
    View(Box<Refreshed>),
}

/// What the undo found of the merge it takes back.
#[derive(Clone, Debug)]
struct Merged {
    /// The merge commit on main.
    commit: Oid,
    /// The main commit it was made on, its parent.
    parent: Oid,
}

/// The reverse, and the main commit it was built onto.
#[derive(Clone, Debug)]
struct Reversed {
    main: Oid,
    reverse: Refreshed,
}

/// The `bay undo` machine. Drive it as [`Machine`](crate::machine::Machine) says.
#[derive(Debug)]
pub struct Undo {
    input: UndoInput,
    out: Outbox<Purpose>,
    now: Timestamp,
    nonces: Nonces,
    races: u32,
    remote: Refs,
    /// The paths the merge touched: the undo change's paths.
    paths: Vec<String>,
    /// The reverse the undo change was last pushed with: its view shows it when the push's
    /// reply was lost and the next fetch finds the change up.
    pushed: Option<Refreshed>,
    /// The undo change, once its id is drawn.
    change: ChangeId,
    /// The generation it takes, and the earlier undo it supersedes.
    generation: u32,
    supersedes: Option<ChangeId>,
    detail: Gathered,
    outcome: Option<BayResult>,
}

impl Undo {
    pub fn new(input: UndoInput, now: Timestamp) -> Undo {
        let mut nonces = Nonces::new(input.entropy);
        let entropy = nonces.next().to_be_bytes();
        let change =
            ChangeId::from_entropy([entropy[0], entropy[1], entropy[2], entropy[3], entropy[4]]);
        let reverts = input.target.clone();
        let mut undo = Undo {
            input,
            out: Outbox::default(),
            now,
            nonces,
            races: 0,
            remote: Refs::new(),
            paths: Vec::new(),
            pushed: None,
            change,
            generation: 1,
            supersedes: None,
            detail: Gathered::new(reverts),
            outcome: None,
        };
        // Below the machine's floor nothing is made, not even the change's record.
        if let Some(disk) = undo.input.disk.clone().filter(DiskSpace::is_low) {
            undo.refuse(Refusal::DiskLow(disk.clone()), None);
            return undo;
        }
        undo.fetch();
        undo
    }

    fn finish(&mut self, result: BayResult) {
        self.outcome = Some(result);
        self.out.forget_all();
    }

    fn fail(&mut self, why: String) {
        let result = report::failed(why, None);
        self.finish(result);
    }

    fn refuse(&mut self, refusal: Refusal, change: Option<ChangeId>) {
        let detail = refusal.detail(&self.detail);
        let result = report::refused(refusal.code(), change.as_ref(), None, detail);
        self.finish(report::with_main(result, self.main().as_ref()));
    }

    fn main(&self) -> Option<Oid> {
        self.remote.get(&refs::main(&self.input.main)).cloned()
    }

    /// Main, the undone change's marker and record, the undo intent's generations, and this
    /// undo's own change (for a push whose reply was lost).
    fn fetch(&mut self) {
        let target = &self.input.target;
        let spec = FetchSpec::new([
            refs::main(&self.input.main),
            refs::landed_pattern(target),
            refs::change_pattern(target),
            refs::intents_pattern(&intent_digest(&undo_intent(target))),
            refs::change_pattern(&self.change),
            agent::compacted_intent_pattern(&undo_intent(target)),
        ]);
        self.out.send(Action::Fetch(spec), Purpose::Fetch);
    }

    fn on_fetched(&mut self, remote: Refs) {
        self.remote = remote;
        let Some(main) = self.main() else {
            return self.fail(format!(
                "the remote has no {}",
                refs::main(&self.input.main)
            ));
        };
        if self.remote.contains_key(&refs::change(&self.change)) {
            // The undo change this machine pushed went up, though its reply was lost.
            let Some(reverse) = self.pushed.clone() else {
                return self.fail("the undo change went up, but its reverse was not kept".into());
            };
            return self.make_view(reverse);
        }
        let target = self.input.target.clone();
        if let Some(merge) = self.remote.get(&refs::landed(&target)).cloned() {
            return self.ask_on_main(main, merge);
        }
        // A change compacted into the index has no marker: its record there names its merge.
        if !self.remote.contains_key(&refs::change(&target))
            && let Some(read) = agent::read_compacted(vec![target.clone()])
        {
            self.out.send(read, Purpose::CompactedTarget { main });
            return;
        }
        let not_merged = NotMerged {
            target,
            main,
            merge: None,
        };
        self.refuse(Refusal::NotMerged(not_merged), None);
    }

    /// The marker, or the compacted record, says it merged once; main as it is now must still
    /// hold the merge.
    fn ask_on_main(&mut self, main: Oid, merge: Oid) {
        let ask = agent::on_main(&merge, &main);
        self.out.send(ask, Purpose::OnMain { main, merge });
    }

    /// The undone change's record as the index holds it: merged, or no change at all.
    fn on_compacted_target(&mut self, main: Oid, reads: Vec<ChainRead>) {
        let merge = agent::merge_of(&reads);
        match merge {
            Some(merge) => self.ask_on_main(main, merge),
            None => {
                let not_merged = NotMerged {
                    target: self.input.target.clone(),
                    main,
                    merge: None,
                };
                self.refuse(Refusal::NotMerged(not_merged), None)
            }
        }
    }

    /// Main holds the undone change's merge, or main moved back past it.
    fn on_still_merged(&mut self, main: Oid, merge: Oid, base: Option<Oid>) {
        let target = self.input.target.clone();
        if !agent::holds(&merge, base.as_ref()) {
            let not_merged = NotMerged {
                target,
                main,
                merge: Some(merge),
            };
            return self.refuse(Refusal::NotMerged(not_merged), None);
        }
        let read = agent::read_chain(&self.remote, &target);
        self.out.send(read, Purpose::ReadTarget { main, merge });
    }

    /// The undone change's record names the commit its merge was made on.
    fn on_target(&mut self, main: Oid, landed: Oid, reads: Vec<ChainRead>) {
        let (record, _, _) = match agent::fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        let Some(candidate) = record
            .merged()
            .and_then(|op| op.candidates.iter().find(|c| c.commit == landed))
        else {
            return self.fail(format!(
                "the record of {} does not name the merge its marker points at ({})",
                self.input.target,
                landed.short()
            ));
        };
        let merged = Merged {
            commit: landed.clone(),
            parent: candidate.base.clone(),
        };
        let read = Action::ReadStats {
            base: merged.parent.clone(),
            commit: merged.commit.clone(),
        };
        self.out.send(read, Purpose::Touched { main, merged });
    }

    /// The paths the merge touched; then the reverse, onto current main.
    fn on_touched(&mut self, main: Oid, merged: Merged, stats: Vec<PathStat>) {
        self.paths = stats.into_iter().map(|stat| stat.path).collect();
        let reverse = Action::RefreshDraft {
            labels: Labels::undo(&self.input.main, &self.input.target),
            change: self.change.clone(),
            draft: merged.parent,
            base: merged.commit,
            onto: main.clone(),
        };
        self.out.send(reverse, Purpose::Reverse { main });
    }

    fn on_reverse(&mut self, main: Oid, reverse: Refreshed) {
        let clean = reverse.conflicts.is_empty();
        let draft = reverse.draft.clone();
        let reversed = Box::new(Reversed { main, reverse });
        if clean {
            // Is anything left to take out? The reverse of an effect already gone is main.
            let read = Action::ReadStats {
                base: reversed.main.clone(),
                commit: draft,
            };
            self.out.send(read, Purpose::Same(reversed));
            return;
        }
        self.generation_then_create(reversed);
    }

    fn on_same(&mut self, reversed: Box<Reversed>, stats: Vec<PathStat>) {
        if stats.is_empty() {
            let mut gathered = self.detail.clone();
            gathered.undo = Some("nothing to undo");
            let result = BayResult::ok(None, gathered.to_map());
            return self.finish(report::with_main(result, self.main().as_ref()));
        }
        self.generation_then_create(reversed);
    }

    /// The undo intent's latest generation decides this one's: none is the first; an ended
    /// one is superseded by the next; an open one is still to merge, and refuses this.
    fn generation_then_create(&mut self, reversed: Box<Reversed>) {
        let intent = undo_intent(&self.input.target);
        match agent::latest_generation(&self.remote, &intent) {
            None => match agent::read_compacted_generation(&self.remote, &intent) {
                Some(read) => {
                    self.out.send(read, Purpose::CompactedIntent(reversed));
                }
                None => {
                    self.generation = 1;
                    self.create(*reversed);
                }
            },
            Some((generation, oid)) => {
                self.generation = generation + 1;
                let read = Action::ReadSteps { oids: vec![oid] };
                self.out.send(read, Purpose::ReadIntent(reversed));
            }
        }
    }

    /// Undos of this change all compacted: the latest merged, and this one supersedes it.
    fn on_compacted_intent(&mut self, reversed: Reversed, file: Option<Vec<u8>>) {
        match agent::compacted_generation(file.as_deref()) {
            Ok(latest) => {
                self.generation = latest.as_ref().map_or(1, |l| l.generation + 1);
                self.supersedes = latest.map(|l| l.change);
                self.create(reversed);
            }
            Err(why) => self.fail(why),
        }
    }

    fn on_intent(&mut self, reversed: Box<Reversed>, steps: Vec<RawStep>) {
        match steps.first().map(|raw| Step::from_message(&raw.message)) {
            Some(Ok(step)) => {
                let earlier = step.change;
                self.supersedes = Some(earlier.clone());
                let spec = FetchSpec::new([refs::change_pattern(&earlier)]);
                self.out.send(
                    Action::Fetch(spec),
                    Purpose::FetchUndo { earlier, reversed },
                );
            }
            _ => self.fail("the record of the earlier undo cannot be read".into()),
        }
    }

    fn on_undo_fetched(&mut self, earlier: ChangeId, reversed: Box<Reversed>, fetched: Refs) {
        FetchSpec::new([refs::change_pattern(&earlier)]).apply(&mut self.remote, fetched);
        self.out.send(
            agent::read_chain(&self.remote, &earlier),
            Purpose::ReadUndo(reversed),
        );
    }

    fn on_undo(&mut self, reversed: Reversed, reads: Vec<ChainRead>) {
        let (record, _, _) = match agent::fold_one(&reads) {
            Ok(folded) => folded,
            Err(why) => return self.fail(why),
        };
        if !record.ended() {
            let earlier = Refusal::EarlierUndo {
                superseded_by: record.change.clone(),
                why: "an earlier undo of this change has not merged yet",
            };
            return self.refuse(earlier, Some(record.change.clone()));
        }
        self.create(reversed);
    }

    /// Opens the undo change: its start and the reverse as its first draft, and the intent's
    /// generation, in one atomic push.
    fn create(&mut self, reversed: Reversed) {
        let Reversed { main, reverse } = reversed;
        let actor = self.input.actor.clone();
        let intent = undo_intent(&self.input.target);
        let start = StepBody::Start {
            intent: intent.clone(),
            actor: actor.clone(),
            paths: self.paths.clone(),
            base: main.clone(),
            generation: self.generation,
            supersedes: self.supersedes.clone(),
            fixes: None,
            reverts: Some(self.input.target.clone()),
            after: Vec::new(),
        };
        let checkpoint = StepBody::Checkpoint {
            draft: reverse.draft.clone(),
            base: main,
            marked: Labels::undo(&self.input.main, &self.input.target).marked(&reverse.marked),
        };
        let steps = vec![
            self.nonces.step(&self.change, self.now, &actor, start),
            self.nonces.step(&self.change, self.now, &actor, checkpoint),
        ];
        let plan = PushPlan {
            appends: vec![Append::on(
                self.change.clone(),
                None,
                steps,
                Some(reverse.draft.clone()),
            )],
            updates: vec![RefUpdate {
                name: refs::intent(&intent_digest(&intent), self.generation),
                expect: Expect::Absent,
                new: NewValue::Step { append: 0, step: 0 },
            }],
            atomic: true,
            ..PushPlan::default()
        };
        self.pushed = Some(reverse.clone());
        self.out
            .send(Action::Push(plan), Purpose::Create(Box::new(reverse)));
    }

    fn on_pushed(&mut self, reverse: Refreshed, report: PushReport) {
        match report.outcome {
            PushOutcome::Accepted => self.make_view(reverse),
            // Someone else wrote first, or the reply was lost: read again and decide anew
            // (a push that did go up is found by its change).
            PushOutcome::Rejected { .. } | PushOutcome::Unknown { .. } => {
                self.races += 1;
                if self.races > MAX_RACES {
                    let why = "other undos kept winning the race";
                    return self.refuse(Refusal::RacesLost { why }, None);
                }
                self.supersedes = None;
                self.fetch();
            }
            PushOutcome::NotSent(fault) => {
                self.fail(format!("the remote could not be reached: {fault}"))
            }
        }
    }

    fn make_view(&mut self, reverse: Refreshed) {
        let action = Action::MakeView {
            change: self.change.clone(),
            paths: self.paths.clone(),
            draft: reverse.draft.clone(),
        };
        self.out.send(action, Purpose::View(Box::new(reverse)));
    }

    fn on_view(&mut self, reverse: Refreshed, view: String) {
        self.detail.view = Some(view);
        self.detail.generation = Some(self.generation);
        self.detail.supersedes = self.supersedes.clone();
        let change = Some(self.change.clone());
        if !reverse.conflicts.is_empty() {
            let conflicts = reverse.conflicts;
            return self.refuse(Refusal::Conflict { conflicts }, change);
        }
        let detail = self.detail.to_json();
        let result = report::started(&self.change, detail, self.main().as_ref());
        self.finish(result);
    }

    /// Acts on one completion; gives back a completion of the wrong kind, or a fault.
    fn on(&mut self, purpose: Purpose, completion: Completion) -> Option<Completion> {
        match (purpose, completion) {
            (Purpose::Fetch, Completion::Fetched(Ok(remote))) => self.on_fetched(remote),
            (Purpose::OnMain { main, merge }, Completion::MergeBaseFound(Ok(base))) => {
                self.on_still_merged(main, merge, base)
            }
            (Purpose::ReadTarget { main, merge }, Completion::ChainsRead(Ok(reads))) => {
                self.on_target(main, merge, reads)
            }
            (Purpose::Touched { main, merged }, Completion::StatsRead(Ok(stats))) => {
                self.on_touched(main, merged, stats)
            }
            (Purpose::Reverse { main }, Completion::DraftRefreshed(Ok(reverse))) => {
                self.on_reverse(main, reverse)
            }
            (Purpose::Same(reversed), Completion::StatsRead(Ok(stats))) => {
                self.on_same(reversed, stats)
            }
            (Purpose::ReadIntent(reversed), Completion::StepsRead(Ok(steps))) => {
                self.on_intent(reversed, steps)
            }
            (Purpose::CompactedTarget { main }, Completion::ChainsRead(Ok(reads))) => {
                self.on_compacted_target(main, reads)
            }
            (Purpose::CompactedIntent(reversed), Completion::FileRead(Ok(file))) => {
                self.on_compacted_intent(*reversed, file)
            }
            (Purpose::FetchUndo { earlier, reversed }, Completion::Fetched(Ok(fetched))) => {
                self.on_undo_fetched(earlier, reversed, fetched)
            }
            (Purpose::ReadUndo(reversed), Completion::ChainsRead(Ok(reads))) => {
                self.on_undo(*reversed, reads)
            }
            (Purpose::Create(reverse), Completion::Pushed(report)) => {
                self.on_pushed(*reverse, report)
            }
            (Purpose::View(reverse), Completion::ViewMade(Ok(view))) => {
                self.on_view(*reverse, view)
            }
            (_, completion) => return Some(completion),
        }
        None
    }
}

super::agent::command_machine!(Undo, "undo");
