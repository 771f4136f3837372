//! Seeds that start from a long history (`Scenario::history`): every promise holds with
//! compaction in play, the agents' changes merge, runners compact the history's waiting
//! changes with their own, and a task that takes up the intent of a compacted change opens its
//! next generation. A runner broken in its compaction is caught sooner with a history: its
//! first compaction already loses what the history had in the index.

use bay_core::compact;
use bay_core::git::refs;
use bay_core::id::ChangeId;
use bay_core::machine::runner::{Mutant, RunnerConfig};
use bay_core::record::ChangeRecord;
use bay_sim::invariants::Invariant;
use bay_sim::world::World;
use bay_sim::{Scenario, run_seed};

const HISTORY: usize = 500;

/// Every change record the remote holds at the end, by its chain ref or in the index.
fn records(world: &World) -> Vec<ChangeRecord> {
    let git = &world.git;
    let in_refs = git
        .remote
        .refs
        .keys()
        .filter_map(|name| refs::parse_change(name));
    let in_index: Vec<ChangeId> = git
        .remote
        .index_shards()
        .values()
        .filter_map(|shard| git.store.files(shard))
        .flat_map(|files| {
            files
                .keys()
                .filter(|path| path.starts_with("changes/"))
                .filter_map(|path| ChangeId::parse(path.rsplit('/').next()?).ok())
                .collect::<Vec<_>>()
        })
        .collect();
    in_refs
        .chain(in_index)
        .filter_map(|change| git.record(&change).map(|record| (*record).clone()))
        .collect()
}

#[test]
fn twenty_seeds_from_a_history_keep_every_promise_and_merge() {
    let scenario = Scenario {
        history: HISTORY,
        ..Scenario::default()
    };
    let (mut merged, mut compacted, mut generations) = (0, 0, 0);
    for seed in 0..20 {
        let world = World::new(seed, scenario.clone()).run_keep();
        assert_eq!(
            world.checker.violations,
            Vec::new(),
            "seed {seed} broke a promise"
        );
        assert_eq!(world.history.changes().len(), HISTORY);
        merged += world.checker.merges;
        compacted += world.checker.compaction.compacted;
        let records = records(&world);
        // Every history change is still there to read, from its refs or the index.
        for ended in world.history.changes() {
            assert!(
                records.iter().any(|r| r.change == ended.change),
                "seed {seed} lost {}",
                ended.change
            );
        }
        generations += records
            .iter()
            .filter(|r| r.intent.starts_with("old change ") && r.generation > 1)
            .count();
    }
    assert!(merged > 20, "the agents' changes merged ({merged})");
    assert!(compacted > 20, "runners compacted ({compacted})");
    assert!(
        generations > 0,
        "some task took up a compacted change's intent and opened its next generation"
    );
}

#[test]
fn the_history_is_written_as_a_runners_compactions_leave_it() {
    let world = World::new(
        3,
        Scenario {
            history: HISTORY,
            runners: 0,
            agents: 0,
            ..Scenario::default()
        },
    );
    let (git, history) = (&world.git, &world.history);
    let (mut in_index, mut waiting) = (0, 0);
    for ended in history.changes() {
        let record = git.record(&ended.change).expect("every change reads back");
        assert_eq!(record.intent, ended.intent);
        let chain_ref = git.remote.get(&refs::change(&ended.change));
        let marker = git.remote.get(&refs::landed(&ended.change));
        if history.compacted(ended) {
            in_index += 1;
            assert!(record.merged().is_some() || record.abandoned);
            assert_eq!(record.abandoned, ended.abandoned);
            assert_eq!((chain_ref, marker), (None, None));
            let shard = git
                .remote
                .get(&refs::index_of_change(&ended.change))
                .expect("the change's index shard");
            let file = git.store.read(shard, &compact::change_path(&ended.change));
            let read = compact::read_back(&ended.change, shard, file.map(str::as_bytes));
            assert_eq!(read.tip, ended.tip, "the index holds the chain verbatim");
        } else {
            assert_eq!(chain_ref, Some(&ended.tip));
            assert_eq!(marker, ended.merge.as_ref().map(|(merge, _)| merge));
            waiting += usize::from(ended.merge.is_some());
        }
    }
    assert!(in_index > HISTORY / 2);
    // Seed 3's runners compact at five markers: four wait.
    assert_eq!(waiting, 4);
}

#[test]
fn a_compaction_from_nothing_is_caught_at_once_with_a_history() {
    fn tweak(cfg: &mut RunnerConfig) {
        cfg.mutant = Some(Mutant::CompactFromNothing);
    }
    let scenario = Scenario {
        history: HISTORY,
        tweak: Some(tweak),
        ..Scenario::default()
    };
    let caught = (0..20).find(|seed| {
        run_seed(*seed, &scenario)
            .violations
            .iter()
            .any(|v| v.invariant == Invariant::CompactionKeeps)
    });
    assert!(
        caught.is_some(),
        "CompactFromNothing went unseen for 20 seeds"
    );
}
