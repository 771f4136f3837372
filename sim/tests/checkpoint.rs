//! The hook's draft checkpoint machine (`bay_core::machine::checkpoint`) against the
//! simulator's Git model: when a draft becomes a checkpoint step on the change's chain, and
//! when it stays at the local ref alone.

use bay_core::conflict::Labels;
use bay_core::git::Oid;
use bay_core::id::ChangeId;
use bay_core::machine::abandon::{Abandon, AbandonInput};
use bay_core::machine::checkpoint::{Checkpoint, CheckpointInput, Saved};
use bay_core::reason::ReasonCode;
use bay_core::record::StepBody;
use bay_core::time::Timestamp;
use bay_sim::bench::Bench;

/// A started change whose view edited `src/a.txt`, and that work as a draft on the view's
/// HEAD (the change's draft), as the CLI takes it.
fn edited() -> (Bench, ChangeId, Oid, Oid) {
    let mut bench = Bench::new(None);
    let change = bench.start("greet", 7);
    bench.edit(&change, "src/a.txt", "checkpointed\n");
    let head = bench.record(&change).current_draft().clone();
    // A copy of the view: taking a checkpoint leaves the view's HEAD where it was.
    let mut view = bench.views.get(&change).cloned();
    let labels = Labels::carried(&change);
    let draft = bench
        .git
        .freeze(&change, view.as_mut(), head.clone(), &labels);
    (bench, change, head, draft.draft)
}

fn checkpoint(
    bench: &mut Bench,
    change: &ChangeId,
    actor: &str,
    draft: &Oid,
    grew_from: &[Oid],
) -> Saved {
    let input = CheckpointInput {
        change: change.clone(),
        actor: actor.into(),
        draft: draft.clone(),
        grew_from: grew_from.to_vec(),
        entropy: 5,
    };
    let mut machine = Checkpoint::new(input, Timestamp(3));
    bench.run(&mut machine);
    machine
        .saved()
        .cloned()
        .expect("the machine says where the draft went")
}

fn steps(bench: &Bench, change: &ChangeId) -> usize {
    let tip = bench
        .git
        .remote
        .get(&bay_core::git::refs::change(change))
        .expect("a chain");
    bench.git.store.chain(tip).expect("a chain").len()
}

fn code(saved: &Saved) -> Option<ReasonCode> {
    match saved {
        Saved::Local { code, .. } => *code,
        _ => None,
    }
}

#[test]
fn a_draft_grown_from_the_chain_s_draft_becomes_its_checkpoint_once() {
    let (mut bench, change, head, draft) = edited();
    let before = steps(&bench, &change);
    assert_eq!(
        checkpoint(
            &mut bench,
            &change,
            "ann",
            &draft,
            std::slice::from_ref(&head)
        ),
        Saved::Chain
    );
    assert_eq!(bench.record(&change).current_draft(), &draft);
    assert_eq!(steps(&bench, &change), before + 1);
    let tip = bench
        .git
        .remote
        .get(&bay_core::git::refs::change(&change))
        .cloned();
    let last = bench
        .git
        .store
        .chain(&tip.expect("a tip"))
        .expect("a chain")
        .pop();
    assert!(
        matches!(last.map(|s| s.body), Some(StepBody::Checkpoint { draft: d, .. }) if d == draft)
    );
    // The same draft again writes nothing.
    assert_eq!(
        checkpoint(&mut bench, &change, "ann", &draft, &[head]),
        Saved::Chain
    );
    assert_eq!(steps(&bench, &change), before + 1);
}

#[test]
fn a_draft_the_chain_moved_past_or_another_actor_s_change_stays_local() {
    let (mut bench, change, head, draft) = edited();
    let before = steps(&bench, &change);
    // A view that did not grow from the chain's draft (another machine saved a newer one).
    let saved = checkpoint(
        &mut bench,
        &change,
        "ann",
        &draft,
        std::slice::from_ref(&draft),
    );
    assert_eq!(
        code(&saved),
        Some(ReasonCode::ChangeSuperseded),
        "{saved:?}"
    );
    // Someone else's change.
    let saved = checkpoint(
        &mut bench,
        &change,
        "bob",
        &draft,
        std::slice::from_ref(&head),
    );
    assert_eq!(
        code(&saved),
        Some(ReasonCode::ChangeSuperseded),
        "{saved:?}"
    );
    assert_eq!(steps(&bench, &change), before, "nothing written");

    // An abandoned change takes no checkpoint.
    let mut abandon = Abandon::new(
        AbandonInput {
            change: change.clone(),
            actor: "ann".into(),
            entropy: 9,
        },
        Timestamp(2),
    );
    bench.run(&mut abandon);
    let abandoned = steps(&bench, &change);
    let saved = checkpoint(&mut bench, &change, "ann", &draft, &[head]);
    assert_eq!(
        code(&saved),
        Some(ReasonCode::ChangeSuperseded),
        "{saved:?}"
    );
    assert_eq!(steps(&bench, &change), abandoned);
}

#[test]
fn a_change_the_remote_does_not_hold_stays_local() {
    let (mut bench, _, head, draft) = edited();
    let unknown = ChangeId::parse("d7k2m4qa").expect("an id");
    let saved = checkpoint(&mut bench, &unknown, "ann", &draft, &[head]);
    assert!(matches!(saved, Saved::Local { .. }), "{saved:?}");
}
