//! A long history of ended changes on the remote before a seed's agents start
//! (`bay-sim run --history N`), so that every promise is checked with compaction in play: a
//! runner's first pass meets thousands of merged changes in the index and a few waiting for it.
//!
//! Ending thousands of changes through the machines would cost each seed minutes; instead the
//! records are written straight into the Git model, made with bay's own types and functions,
//! so that every machine reads them as its own. The content follows the bench's history
//! (`cli/benches/support/history.rs`), which builds the same thing for the real driver:
//!
//! - main's first-parent history gains one commit per merged change: the candidate, built on
//!   the main before it by the model's `BuildCandidate` with the runner's own message
//!   (`candidate_message`), trailers and all;
//! - each change's chain, written as pushes write steps (`remote::write_steps`): a merged or
//!   blocked one `start`, `request` (its draft as second parent), `claim`, `candidate` (its
//!   candidate as second parent), `check` and `outcome`; an abandoned one `start`, `checkpoint`
//!   (its draft as second parent) and `abandon`;
//! - `refs/bay/queue/last` on the last request (ended operations hold no queue place);
//! - the layout runners' compactions leave: every merged change but the newest `waiting`, and
//!   every abandoned one (abandoned long past the retention window), moved into the index's
//!   shards (`refs/bay/compacted/...`) by `compact::plan`, pushed through the model as a
//!   runner's compaction is; the newest merged ones, and every blocked one (live still), keep
//!   their chain, intent generation and (merged) marker refs.
//!
//! A tenth of the changes end blocked (`CHECK_FAILED`) and a tenth abandoned; the rest merge.
//! The runner logs and evidence notes the bench also writes are left out: no simulated
//! machine reads an old change's, and no checker judges them.
//!
//! A history is the same for every seed, so it is built once per length and shared: each
//! seed's store lies over it (`Store::over`), its refs a copy. The history starts from a main
//! of its own (a policy that requires `unit`, which its changes passed); each seed then puts
//! its own files and policy on top, as a person would. What differs between seeds is how many
//! merged changes still wait for a compaction (fewer than the seed's `compact_at`): those
//! beyond the shared layout's [`MOST_WAITING`] the seed compacts itself, on top.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use bay_core::check::Verdict;
use bay_core::compact::{self, Item};
use bay_core::config::Trailers;
use bay_core::git::{Oid, refs};
use bay_core::id::{ChangeId, intent_digest};
use bay_core::machine::runner::candidate_message;
use bay_core::machine::{Append, BuildResult, CandidateSpec, ChainQuery, PushOutcome};
use bay_core::reason::ReasonCode;
use bay_core::record::{ChangeRecord, Step, StepBody};
use bay_core::result::OpState;
use bay_core::time::Timestamp;

use crate::git_model::GitModel;
use crate::remote::write_steps;
use crate::rng::Rng;
use crate::store::Store;
use crate::world::MAIN;
use bay_core::check::plan::POLICY_PATH;

/// The runner that ended the history's operations: none of the world's, so that no runner of
/// the seed finds its own log or presence already written.
const RUNNER: &str = "runner-of-old";
/// When the history begins, in milliseconds: well before any simulated clock starts
/// (`world::Clock`, from 1,800,000,000,000), so that every old step is older than every new.
const EPOCH_MS: u64 = 1_700_000_000_000;

/// The most merged changes a history leaves waiting for a compaction: one fewer than the
/// largest `compact_at` of a seed (`World`).
pub const MOST_WAITING: usize = 7;

/// One ended change of the history.
#[derive(Clone, Debug)]
pub struct Ended {
    pub change: ChangeId,
    pub intent: String,
    /// Its chain's tip, as its ref held it (and the index holds it, once compacted).
    pub tip: Oid,
    /// Its chain's first step, which its intent's generation ref names.
    pub start: Oid,
    /// Its merge on main, and how many of the history's merged changes merged before it.
    pub merge: Option<(Oid, usize)>,
    /// Whether its agent abandoned it (long ago: past any retention window).
    pub abandoned: bool,
}

/// A history as built once for every seed: the objects, the refs, and the changes, oldest
/// first, all merged ones but the newest [`MOST_WAITING`] in the index.
#[derive(Debug)]
struct Built {
    store: Arc<Store>,
    refs: BTreeMap<String, Oid>,
    changes: Vec<Ended>,
    merged: usize,
}

/// The history a seed starts from.
#[derive(Clone, Debug, Default)]
pub struct History {
    built: Option<Arc<Built>>,
    /// How many of the newest merged changes keep their refs.
    waiting: usize,
}

impl History {
    /// Every ended change, oldest first.
    pub fn changes(&self) -> &[Ended] {
        self.built.as_ref().map_or(&[], |built| &built.changes)
    }

    /// Whether `ended` lies in the index, its refs gone.
    pub fn compacted(&self, ended: &Ended) -> bool {
        let merged = self.built.as_ref().map_or(0, |built| built.merged);
        in_index(ended, merged, self.waiting)
    }
}

/// Whether `ended`, of a history of `merged` merged changes, lies in the index when the newest
/// `waiting` of them wait for a compaction: an abandoned change does, its window long past.
fn in_index(ended: &Ended, merged: usize, waiting: usize) -> bool {
    ended.abandoned
        || ended
            .merge
            .as_ref()
            .is_some_and(|(_, before)| before + waiting < merged)
}

/// Puts the history of `count` ended changes on `git`, which holds nothing yet, with the
/// newest `waiting` merged ones (at most [`MOST_WAITING`]) still out of the index.
pub fn start(git: &mut GitModel, count: usize, waiting: usize) -> History {
    let built = shared(count);
    git.store = Store::over(built.store.clone());
    git.remote.refs = built.refs.clone();
    let history = History {
        built: Some(built.clone()),
        waiting: waiting.min(MOST_WAITING),
    };
    let more: Vec<&Ended> = built
        .changes
        .iter()
        .filter(|ended| history.compacted(ended) && !in_index(ended, built.merged, MOST_WAITING))
        .collect();
    compact(git, &more);
    history
}

/// The history of `count` changes, built by the first seed that asks for it.
fn shared(count: usize) -> Arc<Built> {
    type Cache = Mutex<BTreeMap<usize, Arc<OnceLock<Arc<Built>>>>>;
    static BUILT: OnceLock<Cache> = OnceLock::new();
    let slot = BUILT
        .get_or_init(Cache::default)
        .lock()
        .expect("no seed panics while holding the cache")
        .entry(count)
        .or_default()
        .clone();
    slot.get_or_init(|| Arc::new(build(count))).clone()
}

/// How change `n` of the history ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Merged,
    Blocked,
    Abandoned,
}

impl End {
    fn of(n: usize) -> End {
        match n % 10 {
            3 => End::Abandoned,
            7 => End::Blocked,
            _ => End::Merged,
        }
    }
}

/// Writes `count` ended changes on a main of their own, all merged ones but the newest
/// [`MOST_WAITING`] compacted into the index. Ids and nonces come from a stream of its own,
/// the same for every seed.
fn build(count: usize) -> Built {
    let mut git = GitModel::default();
    let policy = format!("revision = 1\n\n{}", crate::world::check("unit", ""));
    git.init_main(MAIN, &[(POLICY_PATH, &policy)]);
    let mut rng = Rng::new(0x6869_7374_6f72_7921);
    let main_ref = refs::main(MAIN);
    let mut changes = Vec::with_capacity(count);
    let mut merged = 0;
    let mut last_request = None;
    for n in 0..count {
        let base = git.remote.get(&main_ref).cloned().expect("main exists");
        let (mut ended, request) = write_change(&mut git, n, &base, &mut rng);
        last_request = request.or(last_request);
        if let Some((merge, before)) = &mut ended.merge {
            *before = merged;
            merged += 1;
            git.remote.refs.insert(main_ref.clone(), merge.clone());
            git.remote
                .refs
                .insert(refs::landed(&ended.change), merge.clone());
        }
        git.remote
            .refs
            .insert(refs::change(&ended.change), ended.tip.clone());
        let digest = intent_digest(&ended.intent);
        git.remote
            .refs
            .insert(refs::intent(&digest, 1), ended.start.clone());
        changes.push(ended);
    }
    if let Some(last) = last_request {
        git.remote.refs.insert(refs::QUEUE_LAST.to_owned(), last);
    }
    let compacted: Vec<&Ended> = changes
        .iter()
        .filter(|ended| in_index(ended, merged, MOST_WAITING))
        .collect();
    compact(&mut git, &compacted);
    Built {
        store: Arc::new(git.store),
        refs: git.remote.refs,
        changes,
        merged,
    }
}

/// Moves `compacted` into the index in one push of `compact::plan`, onto the index there is,
/// as a runner's compaction moves a batch. Runners move at most `compact::BATCH` a push; the
/// model keeps every index commit's whole tree, so a history of ten thousand in batches would
/// cost a hundred trees of thousands of files that no one reads: readers read the index only
/// at its tip, which is the same either way.
fn compact(git: &mut GitModel, compacted: &[&Ended]) {
    if compacted.is_empty() {
        return;
    }
    let queries = compacted
        .iter()
        .map(|ended| ChainQuery {
            change: ended.change.clone(),
            tip: ended.tip.clone(),
            known: None,
        })
        .collect();
    let items: Vec<Item> = git
        .read_chains(queries)
        .into_iter()
        .zip(compacted)
        .map(|(chain, ended)| Item {
            chain,
            markers: ended
                .merge
                .iter()
                .map(|(merge, _)| (refs::landed(&ended.change), merge.clone()))
                .collect(),
            intent: Some((
                refs::intent(&intent_digest(&ended.intent), 1),
                ended.start.clone(),
            )),
        })
        .collect();
    let plan = compact::plan(&git.remote.refs, &items, &BTreeMap::new(), &[]);
    let (report, _) = git.push(&plan);
    assert_eq!(
        report.outcome,
        PushOutcome::Accepted,
        "the history's compaction leases on the refs just written"
    );
}

/// Writes change `n` on main at `base`: its draft, its candidate (the next main, when it
/// merged), and its chain; returns it, and its request step (if it asked to merge).
fn write_change(git: &mut GitModel, n: usize, base: &Oid, rng: &mut Rng) -> (Ended, Option<Oid>) {
    let end = End::of(n);
    let bytes = rng.next_u64().to_be_bytes();
    let change = ChangeId::from_entropy([bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]]);
    let intent = format!("old change {n}");
    let actor = format!("agent{}", n % 8);
    let draft = write_draft(git, n, end, base, &change);
    let step = |j: u64, by: &str, rng: &mut Rng, body: StepBody| Step {
        change: change.clone(),
        at: Timestamp(EPOCH_MS + n as u64 * 60_000 + j * 1_000),
        by: by.to_owned(),
        nonce: rng.next_u64(),
        body,
    };
    let start = step(
        0,
        &actor,
        rng,
        StepBody::Start {
            intent: intent.clone(),
            actor: actor.clone(),
            paths: vec!["work".into()],
            base: base.clone(),
            generation: 1,
            supersedes: None,
            fixes: None,
            reverts: None,
            after: Vec::new(),
        },
    );
    let mut ended = Ended {
        change: change.clone(),
        intent,
        tip: base.clone(),
        start: base.clone(),
        merge: None,
        abandoned: end == End::Abandoned,
    };
    if end == End::Abandoned {
        let checkpoint = StepBody::Checkpoint {
            draft: draft.clone(),
            base: base.clone(),
            marked: None,
        };
        let checkpoint = step(1, &actor, rng, checkpoint);
        let opened = append(git, &change, None, vec![start, checkpoint], Some(draft));
        let abandon = step(2, &actor, rng, StepBody::Abandon);
        ended.tip = append(git, &change, opened.last(), vec![abandon], None)[0].clone();
        ended.start = opened[0].clone();
        return (ended, None);
    }
    let op = change.op(1);
    let candidate = op.candidate(1);
    let request = StepBody::Request {
        op: op.clone(),
        draft: draft.clone(),
        base: base.clone(),
        seq: 1 + n as u64,
    };
    let request = step(1, &actor, rng, request);
    let claim = step(2, RUNNER, rng, StepBody::Claim { op: op.clone() });
    let record = ChangeRecord::fold(&[start.clone(), request.clone(), claim.clone()])
        .expect("a start, a request and a claim fold");
    let spec = CandidateSpec {
        candidate: candidate.clone(),
        base: base.clone(),
        draft: draft.clone(),
        merge_base: base.clone(),
        message: candidate_message(&record, &op, &actor, &candidate, &Trailers::default()),
        sign: None,
    };
    let Ok(BuildResult::Clean {
        commit,
        tree,
        base_tree,
        ..
    }) = git.build(&spec)
    else {
        unreachable!("a draft made on its base builds cleanly onto it");
    };
    let merged = end == End::Merged;
    let verdict = if merged {
        Verdict::Pass
    } else {
        Verdict::ProductFailure
    };
    let (state, reason, detail) = if merged {
        let detail = serde_json::json!({
            "candidate": candidate, "commit": commit, "tree": tree, "base": base,
            "trust": bay_core::red::TRUST,
        });
        (OpState::Merged, None, detail)
    } else {
        let detail = serde_json::json!({
            "checks": [{"id": "unit", "environment": "sim", "verdict": verdict.as_str()}],
            "trust": bay_core::red::TRUST,
        });
        (OpState::Blocked, Some(ReasonCode::CheckFailed), detail)
    };
    let built = StepBody::Candidate {
        op: op.clone(),
        candidate: candidate.clone(),
        base: base.clone(),
        base_tree,
        commit: commit.clone(),
        tree,
    };
    let check = StepBody::Check {
        op: op.clone(),
        candidate,
        check: "unit".into(),
        environment: "sim".into(),
        verdict,
        why: verdict.as_str().into(),
    };
    let outcome = StepBody::Outcome {
        op,
        state,
        reason,
        detail,
    };
    let opened = append(git, &change, None, vec![start, request], Some(draft));
    let claimed = append(git, &change, opened.last(), vec![claim], None);
    let steps = vec![
        step(3, RUNNER, rng, built),
        step(4, RUNNER, rng, check),
        step(5, RUNNER, rng, outcome),
    ];
    let judged = append(git, &change, claimed.last(), steps, Some(commit.clone()));
    ended.tip = judged.last().cloned().expect("three steps were written");
    ended.merge = merged.then_some((commit, 0));
    ended.start = opened[0].clone();
    (ended, Some(opened[1].clone()))
}

/// The draft of change `n`: main at `base` with its one file written. Merged changes take
/// turns over a few files, so that main's trees stay small and every merge changes one.
fn write_draft(git: &mut GitModel, n: usize, end: End, base: &Oid, change: &ChangeId) -> Oid {
    let (path, content) = match end {
        End::Merged => (format!("work/{}.txt", n % 16), format!("merge {n}\n")),
        End::Blocked => ("work/blocked.txt".into(), format!("blocked {n}\n")),
        End::Abandoned => ("work/abandoned.txt".into(), format!("abandoned {n}\n")),
    };
    let mut files = (*git.store.files(base).expect("main's tip is a commit")).clone();
    files.insert(path, git.store.blob(&content));
    let tree = git.store.tree(files);
    git.store
        .commit(tree, vec![base.clone()], &format!("draft of {change}\n"))
}

/// Writes `steps` onto the chain at `parent` as a push writes an append; returns their ids.
fn append(
    git: &mut GitModel,
    change: &ChangeId,
    parent: Option<&Oid>,
    steps: Vec<Step>,
    carry: Option<Oid>,
) -> Vec<Oid> {
    let append = Append::on(change.clone(), parent.cloned(), steps, carry);
    write_steps(&mut git.store, &append)
}
