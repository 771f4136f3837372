//! A red main: post checks (`stage = "post"`) run after merging, by a producer outside bay,
//! which writes a `check` record on the merged commit (`bay evidence record`). The newest
//! answer of a post check in the window of first-parent main commits decides it: a failure
//! turns main red on the check's paths (its `when_paths`, or every path), a pass clears it, and
//! no answer leaves it pending, never green.
//!
//! Red is worked out from the window and the records on every read and never stored, so there
//! is nothing to clean up when a record arrives or main moves. A change that touches red paths
//! is refused `MAIN_RED` unless it fixes, undoes or supersedes the change that owns the red.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::check::EvidenceSchema;
use crate::check::Verdict;
use crate::git::Oid;
use crate::id::ChangeId;
use crate::lineage;
use crate::machine::RawStep;
use crate::policy::{CheckSpec, Policy, Stage};
use crate::time::Timestamp;

pub mod detail;

pub use detail::{PendingShown, RedShown};

/// The most main commits a red judgement reads by default (`[red] window`).
pub const DEFAULT_WINDOW: u32 = 50;

/// The largest record `bay evidence record` writes, in bytes of JSON.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;

/// What `trust` says of every record and result while bay has no key registry.
pub const TRUST: &str = "unsigned";

/// One record a producer outside bay writes about one merged commit: the answer of a post
/// check. Serialized field order is the declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostRecord {
    pub schema: EvidenceSchema,
    /// `check`: the only kind this bay writes.
    pub kind: String,
    /// The producer, the kind, the commit, and a digest of the inputs and version: the same
    /// content under one id is a rerun, different content under it a conflict.
    pub id: String,
    pub producer: String,
    pub check: String,
    pub environment: String,
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
    /// The merged commit, its tree, and its first parent's tree.
    pub commit: Oid,
    pub tree: Oid,
    pub base_tree: Option<Oid>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<(String, String)>,
    pub trust: String,
    /// The writer's clock; not part of the content a rerun compares.
    pub at: Timestamp,
}

/// What one answer of a post check says, apart from the merge it answers on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub producer: String,
    pub check: String,
    pub environment: String,
    pub verdict: Verdict,
    pub why: String,
    pub version: Option<String>,
    pub inputs: Vec<(String, String)>,
}

impl PostRecord {
    /// The record of `answer` on the merged `commit` (its tree, and its first parent's tree),
    /// written at `at`: unsigned, under the id what names it gives.
    pub fn of(
        answer: &Answer,
        commit: &Oid,
        tree: &Oid,
        base_tree: Option<&Oid>,
        at: Timestamp,
    ) -> PostRecord {
        PostRecord {
            schema: EvidenceSchema,
            kind: "check".into(),
            id: PostRecord::id_of(
                &answer.producer,
                commit,
                &answer.inputs,
                answer.version.as_deref(),
            ),
            producer: answer.producer.clone(),
            check: answer.check.clone(),
            environment: answer.environment.clone(),
            verdict: answer.verdict,
            why: answer.why.clone(),
            commit: commit.clone(),
            tree: tree.clone(),
            base_tree: base_tree.cloned(),
            version: answer.version.clone(),
            inputs: answer.inputs.clone(),
            trust: TRUST.into(),
            at,
        }
    }

    /// The record's id, from what names it.
    pub fn id_of(
        producer: &str,
        commit: &Oid,
        inputs: &[(String, String)],
        version: Option<&str>,
    ) -> String {
        record_id(producer, "check", commit, inputs, version)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a record is plain data with string keys")
    }

    /// A post check record, or `None` for any other line a notes ref holds.
    pub fn from_json(line: &str) -> Option<PostRecord> {
        serde_json::from_str::<PostRecord>(line)
            .ok()
            .filter(|record| record.kind == "check")
    }

    /// Whether `other` says the same as this one, whenever it was written.
    pub fn same_content(&self, other: &PostRecord) -> bool {
        PostRecord {
            at: other.at,
            ..self.clone()
        } == *other
    }
}

/// The id of a record a producer outside bay writes: the producer, the kind, the commit, and a
/// digest of the inputs and version.
pub fn record_id(
    producer: &str,
    kind: &str,
    commit: &Oid,
    inputs: &[(String, String)],
    version: Option<&str>,
) -> String {
    let mut hasher = Sha256::new();
    for (key, value) in inputs {
        hasher.update(format!("{}\0{}\0", key, value).as_bytes());
    }
    hasher.update(version.unwrap_or("").as_bytes());
    let digest = crate::id::hex(&hasher.finalize()[..6]);
    format!("{producer}/{kind}/{commit}/{digest}")
}

/// One post check the policy on main names and does not quarantine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostCheck {
    pub id: String,
    pub environment: String,
    /// Its `when_paths`; `None` covers every path.
    pub paths: Option<Vec<String>>,
    pub producers: Option<Vec<String>>,
}

impl PostCheck {
    /// The post checks of `policy` that judge main.
    pub fn of(policy: &Policy) -> Vec<PostCheck> {
        policy
            .checks
            .iter()
            .filter(|check| check.stage == Stage::Post && policy.quarantine_of(check).is_none())
            .map(PostCheck::from_spec)
            .collect()
    }

    fn from_spec(spec: &CheckSpec) -> PostCheck {
        PostCheck {
            id: spec.id.clone(),
            environment: spec.environment.clone(),
            paths: spec.when_paths.clone(),
            producers: spec.producers.clone(),
        }
    }

    /// Whether a change to `path` touches this check's red.
    pub fn covers(&self, path: &str) -> bool {
        self.paths
            .as_ref()
            .is_none_or(|globs| crate::glob::any_path_matches(globs, path))
    }

    fn answers(&self, record: &PostRecord) -> bool {
        record.check == self.id
            && record.environment == self.environment
            && self
                .producers
                .as_ref()
                .is_none_or(|producers| producers.contains(&record.producer))
    }
}

/// One main commit of the window, as the judgement reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Merge {
    commit: Oid,
    change: Option<ChangeId>,
}

/// The records of `check` on `commit`.
fn records_on<'r>(
    check: &'r PostCheck,
    commit: &'r Oid,
    records: &'r [PostRecord],
) -> impl Iterator<Item = &'r PostRecord> {
    records
        .iter()
        .filter(move |record| &record.commit == commit && check.answers(record))
}

fn verdicts_on(check: &PostCheck, commit: &Oid, records: &[PostRecord]) -> Vec<Verdict> {
    records_on(check, commit, records)
        .map(|record| record.verdict)
        .collect()
}

/// A post check's answer on one merge: a failure wins over a pass on the same commit; a run
/// without a verdict (`unknown`, `infra_failure`) answers nothing.
fn answer(check: &PostCheck, commit: &Oid, records: &[PostRecord]) -> Option<Verdict> {
    let verdicts = verdicts_on(check, commit, records);
    if verdicts.contains(&Verdict::ProductFailure) {
        Some(Verdict::ProductFailure)
    } else if verdicts.contains(&Verdict::Pass) {
        Some(Verdict::Pass)
    } else {
        None
    }
}

/// The input a runner's bisect puts on each record it writes (`[runner] bisect_post`), so
/// that its runs are told apart from other answers, and the rerun from the midpoint runs.
pub const BISECT_INPUT: &str = "bay.bisect";

/// Which run of a bisect a record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BisectRun {
    /// A run on a midpoint of the suspect range.
    Midpoint,
    /// The run on the one merge left, again, to rule out a flake.
    Rerun,
}

impl BisectRun {
    pub fn as_str(self) -> &'static str {
        match self {
            BisectRun::Midpoint => "run",
            BisectRun::Rerun => "rerun",
        }
    }

    /// The inputs of a record this run writes.
    pub fn inputs(self) -> Vec<(String, String)> {
        vec![(BISECT_INPUT.to_owned(), self.as_str().to_owned())]
    }

    /// Which bisect run wrote `record`, if one did.
    pub fn of(record: &PostRecord) -> Option<BisectRun> {
        record
            .inputs
            .iter()
            .find(|(key, _)| key == BISECT_INPUT)
            .and_then(|(_, value)| {
                [BisectRun::Midpoint, BisectRun::Rerun]
                    .into_iter()
                    .find(|run| run.as_str() == value)
            })
    }
}

/// What bisect runs say of one red check's range (its last pass, its first failure and the
/// merges between): read from the records, like the red itself, never stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bisect {
    /// Bisect runs recorded on the range.
    pub runs: u32,
    /// Whether the one merge left was run again.
    pub reran: bool,
    /// A bisect run gave no verdict: the bisect stops there.
    pub undecided: bool,
}

/// One red post check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedCheck {
    pub check: PostCheck,
    /// The oldest failure above the newest pass.
    pub first_failure: Oid,
    /// The newest pass below it, when the window holds one.
    pub last_pass: Option<Oid>,
    /// The merges from just above the last pass up to the first failure, newest first.
    pub suspects: Vec<(Oid, Option<ChangeId>)>,
    /// The one merge the evidence leaves, when the last pass sits right below the first
    /// failure.
    pub culprit: Option<(Oid, Option<ChangeId>)>,
    /// Each answered merge from the pass up to the newest failure, oldest first.
    pub verdicts: Vec<(Oid, Verdict)>,
    /// The one merge left, when it both passed and failed: a flake, which names no culprit.
    pub flaky: Option<Oid>,
    pub bisect: Bisect,
}

impl RedCheck {
    /// The merge that owns the red: the first failure, which is also the culprit when the
    /// evidence leaves one merge.
    pub fn owner(&self) -> (Oid, Option<ChangeId>) {
        self.suspects
            .first()
            .cloned()
            .unwrap_or((self.first_failure.clone(), None))
    }

    /// The next run a bisect makes, if any: the midpoint of a range of two merges or more with
    /// a pass below it, or, once one merge is left by a bisect, that merge again. Nothing after
    /// a run without a verdict, after the rerun, or on a flake. Each midpoint halves the range,
    /// so a range of n merges costs at most log2(n), rounded up, runs and the rerun.
    pub fn bisect_next(&self) -> Option<(Oid, BisectRun)> {
        if self.bisect.undecided || self.last_pass.is_none() || self.flaky.is_some() {
            return None;
        }
        match self.suspects.len() {
            0 => None,
            1 if self.bisect.runs > 0 && !self.bisect.reran => {
                Some((self.suspects[0].0.clone(), BisectRun::Rerun))
            }
            1 => None,
            // Newest first: the first failure is at 0, so the midpoint is never it.
            n => Some((self.suspects[n / 2].0.clone(), BisectRun::Midpoint)),
        }
    }

    /// Whether a change of `paths` touches this red.
    pub fn touches(&self, paths: &[String]) -> bool {
        paths.iter().any(|path| self.check.covers(path))
    }
}

/// A post check no merge of the window answers yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub check: PostCheck,
    /// The window is full, so its last answer, if any, is older than the window.
    pub beyond_window: bool,
}

/// What the window says of main's post checks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Red {
    pub red: Vec<RedCheck>,
    pub pending: Vec<Pending>,
}

impl Red {
    /// Judges `checks` over `window` (first-parent main commits, newest first, at most
    /// `limit`) and every line of the notes on them.
    pub fn judge(checks: &[PostCheck], window: &[RawStep], lines: &[String], limit: u32) -> Red {
        let records: Vec<PostRecord> = lines
            .iter()
            .filter_map(|line| PostRecord::from_json(line))
            .collect();
        let merges: Vec<Merge> = window
            .iter()
            .map(|raw| Merge {
                commit: raw.oid.clone(),
                change: lineage::change_of(&raw.message),
            })
            .collect();
        let full = u32::try_from(window.len()).unwrap_or(u32::MAX) >= limit;
        let mut red = Red::default();
        for check in checks {
            let answered: Vec<(usize, Verdict)> = merges
                .iter()
                .enumerate()
                .filter_map(|(at, merge)| Some((at, answer(check, &merge.commit, &records)?)))
                .collect();
            match answered.first() {
                None => red.pending.push(Pending {
                    check: check.clone(),
                    beyond_window: full,
                }),
                Some((_, Verdict::Pass)) => {}
                Some(_) => red
                    .red
                    .extend(red_check(check, &merges, &answered, &records)),
            }
        }
        red
    }

    /// The red checks a change of `paths` touches, unless it fixes, undoes or supersedes
    /// their owner (`exempt`).
    pub fn blocking(&self, paths: &[String], exempt: &[ChangeId]) -> Vec<&RedCheck> {
        self.red
            .iter()
            .filter(|red| red.touches(paths))
            .filter(|red| red.owner().1.is_none_or(|owner| !exempt.contains(&owner)))
            .collect()
    }

    /// `detail.red` and `detail.red_pending`, as `bay status` shows them.
    pub fn shown(&self) -> (Vec<RedShown>, Vec<PendingShown>) {
        (
            self.red.iter().map(RedShown::of).collect(),
            self.pending.iter().map(PendingShown::of).collect(),
        )
    }
}

/// A red check from its answers (window positions, newest first; the first is a failure) and
/// the records they come from.
fn red_check(
    check: &PostCheck,
    merges: &[Merge],
    answered: &[(usize, Verdict)],
    records: &[PostRecord],
) -> Option<RedCheck> {
    let pass = answered
        .iter()
        .find(|(_, verdict)| *verdict == Verdict::Pass);
    let above_pass: Vec<&(usize, Verdict)> = answered
        .iter()
        .take_while(|(_, verdict)| *verdict != Verdict::Pass)
        .collect();
    // The caller passes answers whose newest is a failure, so one lies above any pass.
    let first_at = above_pass.last()?.0;
    // Below the first failure: every merge down to the pass, or to the window's end.
    let until = pass.map_or(merges.len(), |(at, _)| *at);
    let suspects: Vec<(Oid, Option<ChangeId>)> = merges[first_at..until]
        .iter()
        .map(|merge| (merge.commit.clone(), merge.change.clone()))
        .collect();
    let flaky = (pass.is_some() && suspects.len() == 1)
        .then(|| suspects[0].0.clone())
        .filter(|commit| {
            let verdicts = verdicts_on(check, commit, records);
            verdicts.contains(&Verdict::Pass) && verdicts.contains(&Verdict::ProductFailure)
        });
    let culprit =
        (pass.is_some() && suspects.len() == 1 && flaky.is_none()).then(|| suspects[0].clone());
    // The range's records that a bisect wrote: on the pass, the first failure and between.
    let range_end = pass.map_or(merges.len(), |(at, _)| *at + 1);
    let mut bisect = Bisect::default();
    for merge in &merges[first_at..range_end] {
        for record in records_on(check, &merge.commit, records) {
            match BisectRun::of(record) {
                None => {}
                Some(run) => {
                    bisect.runs += 1;
                    bisect.reran |= run == BisectRun::Rerun;
                    bisect.undecided |= !record.verdict.is_decided();
                }
            }
        }
    }
    let mut verdicts: Vec<(Oid, Verdict)> = answered
        .iter()
        .take(above_pass.len() + usize::from(pass.is_some()))
        .map(|(at, verdict)| (merges[*at].commit.clone(), *verdict))
        .collect();
    verdicts.reverse();
    Some(RedCheck {
        check: check.clone(),
        first_failure: merges[first_at].commit.clone(),
        last_pass: pass.map(|(at, _)| merges[*at].commit.clone()),
        suspects,
        culprit,
        verdicts,
        flaky,
        bisect,
    })
}

#[cfg(test)]
mod tests {
    use super::detail::BisectState;
    use super::*;

    /// Where the bisect of `red` stands, as its detail says.
    fn state(red: &RedCheck) -> Option<BisectState> {
        RedShown::of(red).bisect.map(|bisect| bisect.state)
    }

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:02x}").repeat(20)).expect("hex")
    }

    fn change(n: u8) -> ChangeId {
        ChangeId::parse(&format!("c{}aaaaaa", (b'a' + n) as char)).expect("an id")
    }

    /// Main of `n` merges, newest first: merge `i` is commit `oid(i)` of change `change(i)`.
    fn window(n: u8) -> Vec<RawStep> {
        (0..n)
            .map(|i| RawStep {
                oid: oid(i),
                message: format!("merge {i}\n\nChange-Id: {}\nBay-Op: x\n", change(i)),
            })
            .collect()
    }

    fn smoke(paths: Option<&[&str]>) -> PostCheck {
        PostCheck {
            id: "smoke".into(),
            environment: "linux".into(),
            paths: paths.map(|p| p.iter().map(|s| s.to_string()).collect()),
            producers: None,
        }
    }

    fn record(commit: u8, verdict: Verdict) -> String {
        PostRecord {
            schema: EvidenceSchema,
            kind: "check".into(),
            id: PostRecord::id_of("ci", &oid(commit), &[], None),
            producer: "ci".into(),
            check: "smoke".into(),
            environment: "linux".into(),
            verdict,
            why: String::new(),
            commit: oid(commit),
            tree: oid(200),
            base_tree: None,
            version: None,
            inputs: Vec::new(),
            trust: TRUST.into(),
            at: Timestamp(1),
        }
        .to_json()
    }

    /// A record a runner's bisect writes.
    fn bisect_record(commit: u8, verdict: Verdict, run: BisectRun) -> String {
        let mut record = PostRecord::from_json(&record(commit, verdict)).expect("a record");
        record.producer = "runner-1".into();
        record.inputs = run.inputs();
        record.id = PostRecord::id_of("runner-1", &oid(commit), &record.inputs, None);
        record.to_json()
    }

    /// Bisects a window of `n` merges, newest first, whose merge `broken` and every newer one
    /// fail; the newest fails and the oldest passes. The red check at the end, and the runs.
    fn bisect(n: u8, broken: u8, flaky_rerun: bool) -> (RedCheck, Vec<(Oid, BisectRun)>) {
        let mut lines = vec![
            record(0, Verdict::ProductFailure),
            record(n - 1, Verdict::Pass),
        ];
        let mut runs = Vec::new();
        loop {
            let red = Red::judge(&[smoke(None)], &window(n), &lines, 50);
            let check = red.red[0].clone();
            let Some((commit, run)) = check.bisect_next() else {
                return (check, runs);
            };
            let at = (0..n)
                .find(|i| oid(*i) == commit)
                .expect("a merge of the window");
            let fails = at <= broken && !(flaky_rerun && run == BisectRun::Rerun);
            let verdict = if fails {
                Verdict::ProductFailure
            } else {
                Verdict::Pass
            };
            assert!(runs.len() < 64, "the bisect must end");
            runs.push((commit, run));
            lines.push(bisect_record(at, verdict, run));
        }
    }

    #[test]
    fn a_bisect_names_the_merge_that_broke_it_in_log2_runs_and_a_rerun() {
        for n in 3..=17u8 {
            // The suspects are every merge above the pass: n - 1 of them.
            let suspects = u32::from(n - 1);
            let bound = suspects.next_power_of_two().trailing_zeros() + 1;
            for broken in 0..n - 1 {
                let (check, runs) = bisect(n, broken, false);
                assert_eq!(
                    check.culprit.as_ref().map(|c| c.0.clone()),
                    Some(oid(broken))
                );
                assert_eq!(check.owner().1, Some(change(broken)));
                assert!(
                    runs.len() as u32 <= bound,
                    "{n} merges, broken at {broken}: {} runs, bound {bound}",
                    runs.len()
                );
                assert_eq!(runs.last().map(|r| r.1), Some(BisectRun::Rerun));
                assert!(check.bisect.runs >= 1);
                assert_eq!(state(&check), Some(BisectState::Confirmed));
                // Each midpoint is a merge no answer had yet: never the ends, never twice.
                let midpoints: Vec<&Oid> = runs
                    .iter()
                    .filter(|r| r.1 == BisectRun::Midpoint)
                    .map(|r| &r.0)
                    .collect();
                let unique: std::collections::BTreeSet<&Oid> = midpoints.iter().copied().collect();
                assert_eq!(unique.len(), midpoints.len());
                assert!(!unique.contains(&oid(0)) && !unique.contains(&oid(n - 1)));
            }
        }
    }

    #[test]
    fn a_rerun_that_passes_marks_the_merge_flaky_and_names_no_culprit() {
        let (check, runs) = bisect(6, 2, true);
        assert_eq!(check.culprit, None);
        assert_eq!(check.flaky, Some(oid(2)));
        assert_eq!(check.bisect_next(), None, "the bisect is over");
        assert_eq!(runs.iter().filter(|r| r.1 == BisectRun::Rerun).count(), 1);
        assert_eq!(state(&check), Some(BisectState::Flaky));
        assert_eq!(RedShown::of(&check).culprit, None);
    }

    #[test]
    fn a_bisect_needs_two_merges_and_a_pass_and_stops_at_a_run_without_verdict() {
        // One merge above the pass: the evidence pins it; nothing to bisect or rerun.
        let lines = [record(0, Verdict::ProductFailure), record(1, Verdict::Pass)];
        let red = Red::judge(&[smoke(None)], &window(3), &lines, 50);
        assert_eq!(red.red[0].bisect_next(), None);
        assert_eq!(RedShown::of(&red.red[0]).bisect, None);
        // No pass in the window.
        let lines = [record(0, Verdict::ProductFailure)];
        let red = Red::judge(&[smoke(None)], &window(4), &lines, 50);
        assert_eq!(red.red[0].bisect_next(), None);
        // A midpoint run that answered unknown stops it, undecided.
        let mut lines = vec![record(0, Verdict::ProductFailure), record(5, Verdict::Pass)];
        let red = Red::judge(&[smoke(None)], &window(6), &lines, 50);
        let (midpoint, run) = red.red[0].bisect_next().expect("a range to bisect");
        assert_eq!(run, BisectRun::Midpoint);
        let at = (0..6).find(|i| oid(*i) == midpoint).expect("in the window");
        lines.push(bisect_record(at, Verdict::Unknown, run));
        let red = Red::judge(&[smoke(None)], &window(6), &lines, 50);
        assert_eq!(red.red[0].bisect_next(), None);
        assert_eq!(state(&red.red[0]), Some(BisectState::Undecided));
        assert_eq!(red.red[0].culprit, None);
    }

    #[test]
    fn no_answer_is_pending_never_green() {
        let red = Red::judge(&[smoke(None)], &window(3), &[], 50);
        assert!(red.red.is_empty());
        assert_eq!(red.pending.len(), 1);
        assert!(!red.pending[0].beyond_window);
        let full = Red::judge(&[smoke(None)], &window(3), &[], 3);
        assert!(full.pending[0].beyond_window);
        // Answers without a verdict answer nothing.
        let unknown = [
            record(0, Verdict::Unknown),
            record(1, Verdict::InfraFailure),
        ];
        let red = Red::judge(&[smoke(None)], &window(3), &unknown, 50);
        assert_eq!(red.pending.len(), 1);
    }

    #[test]
    fn the_newest_answer_decides_and_a_later_pass_clears() {
        let lines = [record(2, Verdict::ProductFailure), record(0, Verdict::Pass)];
        let red = Red::judge(&[smoke(None)], &window(4), &lines, 50);
        assert!(red.red.is_empty() && red.pending.is_empty(), "{red:?}");
    }

    #[test]
    fn a_failure_right_above_a_pass_names_its_culprit() {
        // Newest first: 0 fails, 1 unanswered, 2 fails, 3 passes.
        let lines = [
            record(0, Verdict::ProductFailure),
            record(2, Verdict::ProductFailure),
            record(3, Verdict::Pass),
        ];
        let red = Red::judge(&[smoke(None)], &window(5), &lines, 50);
        let check = &red.red[0];
        assert_eq!(check.first_failure, oid(2));
        assert_eq!(check.last_pass, Some(oid(3)));
        assert_eq!(check.culprit, Some((oid(2), Some(change(2)))));
        assert_eq!(check.owner().1, Some(change(2)));
        assert_eq!(
            check.verdicts,
            vec![
                (oid(3), Verdict::Pass),
                (oid(2), Verdict::ProductFailure),
                (oid(0), Verdict::ProductFailure)
            ]
        );
    }

    #[test]
    fn a_gap_below_the_first_failure_is_a_suspect_range_without_a_culprit() {
        // 1 fails, 2 and 3 unanswered, 4 passes.
        let lines = [record(1, Verdict::ProductFailure), record(4, Verdict::Pass)];
        let red = Red::judge(&[smoke(None)], &window(6), &lines, 50);
        let check = &red.red[0];
        assert_eq!(check.culprit, None);
        let suspects: Vec<Oid> = check.suspects.iter().map(|(c, _)| c.clone()).collect();
        assert_eq!(suspects, vec![oid(1), oid(2), oid(3)]);
        assert_eq!(
            check.owner(),
            (oid(1), Some(change(1))),
            "the first failure owns it"
        );
        // Without any pass in the window the range runs to its end.
        let red = Red::judge(
            &[smoke(None)],
            &window(3),
            &[record(0, Verdict::ProductFailure)],
            50,
        );
        assert_eq!(red.red[0].suspects.len(), 3);
        assert_eq!(red.red[0].last_pass, None);
    }

    #[test]
    fn only_changes_on_red_paths_are_blocked_and_the_owners_fixes_never() {
        let lines = [record(0, Verdict::ProductFailure), record(1, Verdict::Pass)];
        let red = Red::judge(&[smoke(Some(&["src/**"]))], &window(3), &lines, 50);
        assert_eq!(red.blocking(&["docs/a.md".into()], &[]).len(), 0);
        assert_eq!(red.blocking(&["src/a.rs".into()], &[]).len(), 1);
        assert_eq!(red.blocking(&["src/a.rs".into()], &[change(0)]).len(), 0);
        assert_eq!(red.blocking(&["src/a.rs".into()], &[change(1)]).len(), 1);
        let refusal = detail::Refusal::of(&red.blocking(&["src/a.rs".into()], &[]));
        assert_eq!(refusal.owners, [change(0)]);
        assert_eq!(refusal.red[0].check, "smoke");
    }

    #[test]
    fn records_of_another_check_producer_or_kind_answer_nothing() {
        let mut other =
            PostRecord::from_json(&record(0, Verdict::ProductFailure)).expect("a record");
        other.producer = "stranger".into();
        let only_ci = PostCheck {
            producers: Some(vec!["ci".into()]),
            ..smoke(None)
        };
        let red = Red::judge(&[only_ci], &window(2), &[other.to_json()], 50);
        assert_eq!(red.pending.len(), 1);
        let garbage = ["not json".to_owned(), "{\"kind\":\"review\"}".to_owned()];
        let red = Red::judge(&[smoke(None)], &window(2), &garbage, 50);
        assert_eq!(red.pending.len(), 1);
    }

    #[test]
    fn a_rerun_is_the_same_content_whenever_it_was_written() {
        let one = PostRecord::from_json(&record(0, Verdict::Pass)).expect("a record");
        let later = PostRecord {
            at: Timestamp(99),
            ..one.clone()
        };
        assert!(one.same_content(&later));
        let changed = PostRecord {
            verdict: Verdict::ProductFailure,
            ..one.clone()
        };
        assert!(!one.same_content(&changed));
        assert_ne!(
            PostRecord::id_of("ci", &oid(0), &[], Some("2")),
            PostRecord::id_of("ci", &oid(0), &[], None)
        );
    }
}
