//! The names of things in Git that core reasons about: object ids and bay's ref layout.
//!
//! core never reads Git. Drivers hand it object ids and ref values; core hands back ref names
//! and expected values for compare-and-swap pushes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::id::{ChangeId, OpId};

/// A Git object id: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
// Shared, not owned: ids are cloned far more often than made (every ref map, every plan and
// record holds them), and a clone of an `Arc<str>` copies no bytes. Equality, order and hash
// are the text's, as they were for a `String`.
pub struct Oid(Arc<str>);

impl Oid {
    /// Parses an object id, refusing anything that is not 40 or 64 lower-case hex digits.
    pub fn parse(text: &str) -> Result<Oid, String> {
        let ok_len = text.len() == 40 || text.len() == 64;
        let ok_chars = text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok_len && ok_chars {
            Ok(Oid(Arc::from(text)))
        } else {
            Err(format!("not a Git object id: {text:?}"))
        }
    }

    /// Git's null id, forty zeros: no object at all.
    pub fn null() -> Oid {
        Oid(Arc::from("0".repeat(40)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id whose raw bytes (as Git stores ids in trees and indexes: 20 for SHA-1, 32 for
    /// SHA-256) are `raw`.
    pub fn from_raw(raw: &[u8]) -> Result<Oid, String> {
        Oid::parse(&crate::id::hex(raw))
    }

    /// The id's raw bytes, as Git stores them in trees and indexes.
    pub fn to_raw(&self) -> Vec<u8> {
        let digit = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
        self.0
            .as_bytes()
            .chunks(2)
            .map(|pair| (digit(pair[0]) << 4) | digit(pair[1]))
            .collect()
    }

    /// The first seven digits, as people see an id.
    pub fn short(&self) -> &str {
        &self.0[..7]
    }
}

impl TryFrom<String> for Oid {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Oid::parse(&text)
    }
}

impl From<Oid> for String {
    fn from(oid: Oid) -> String {
        oid.0.to_string()
    }
}

impl std::fmt::Display for Oid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(feature = "arbitrary")]
impl<'a> arbitrary::Arbitrary<'a> for Oid {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        // A tiny id space, so that fuzzed events collide with the ids a machine asked about.
        let n: u8 = u.int_in_range(0..=7)?;
        Ok(Oid(Arc::from(format!("{:040x}", n))))
    }
}

/// Where bay keeps each kind of record on the remote. One place defines the layout, so the
/// drivers, the simulator and the invariant checkers cannot disagree about it.
pub mod refs {
    use super::*;
    use crate::time::Timestamp;
    use sha2::{Digest, Sha256};

    pub const CHANGES: &str = "refs/bay/changes/";
    pub const INTENTS: &str = "refs/bay/intents/";
    pub const QUEUE: &str = "refs/bay/queue/";
    pub const LANDED: &str = "refs/bay/landed/";
    pub const ABANDONED: &str = "refs/bay/abandoned/";
    pub const NO_EFFECT: &str = "refs/bay/no-effect/";
    pub const EVIDENCE: &str = "refs/notes/bay/evidence/";
    pub const INFLIGHT: &str = "refs/bay/inflight/";
    pub const LOG: &str = "refs/bay/log/";
    pub const EXECUTOR: &str = "refs/bay/executor/";
    pub const LOCKS: &str = "refs/bay/locks/";
    pub const LIVE: &str = "refs/bay/live/";

    /// The index of compacted records (`crate::compact`), in shards: each a ref of its own, so
    /// that a command fetches the one shard it reads and never the whole history. (Not under
    /// `refs/bay/index`, the one ref the index was before it was sharded: a remote that still
    /// holds that ref keeps it, readable with Git, and the two names never collide.)
    pub const INDEX: &str = "refs/bay/compacted/";

    /// Every namespace bay keeps its own records in; nothing else may write there.
    pub const BAY_NAMESPACES: [&str; 2] = ["refs/bay/", "refs/notes/bay/"];

    pub fn main(name: &str) -> String {
        ["refs/heads/", name].concat()
    }

    /// The change's chain of steps.
    pub fn change(change: &ChangeId) -> String {
        [CHANGES, change.as_str()].concat()
    }

    /// The merged marker: created only in the atomic push that puts the change on main.
    pub fn landed(change: &ChangeId) -> String {
        [LANDED, change.as_str()].concat()
    }

    /// The abandoned marker of `change`, abandoned at `at`: the abandon step, named by the
    /// second it was written, so that a runner knows which are past the retention window from
    /// the names alone (and `git for-each-ref` lists them oldest first).
    pub fn abandoned(change: &ChangeId, at: Timestamp) -> String {
        format!("{ABANDONED}{:010}/{change}", at.0 / 1000)
    }

    /// The marker of `change` whose operation ended `no_effect` at `at` (its work was already
    /// on main), named as the abandoned marker is: such a change may be taken up again until
    /// the retention window passes, as an abandoned one, and is compacted after it.
    pub fn no_effect(change: &ChangeId, at: Timestamp) -> String {
        format!("{NO_EFFECT}{:010}/{change}", at.0 / 1000)
    }

    /// The last request that took a queue place. Every request moves it by compare-and-swap,
    /// so places are handed out in increasing order even though ended places are deleted: a
    /// request made from a stale view of the queue is refused, never placed below a newer one.
    pub const QUEUE_LAST: &str = "refs/bay/queue/last";

    /// One queue place. Fixed width, so that the names sort in queue order.
    pub fn queue(seq: u64) -> String {
        format!("{QUEUE}{seq:010}")
    }

    /// The claim of one generation of one intent. Create-only, so of racing starts one wins.
    pub fn intent(digest: &str, generation: u32) -> String {
        format!("{INTENTS}{digest}/{generation:04}")
    }

    /// Evidence notes written by one producer.
    pub fn evidence(producer: &str) -> String {
        [EVIDENCE, producer].concat()
    }

    /// One runner's log: one `bay.event/1` commit per operation it ended, appended in the
    /// push that ends it.
    pub fn log(runner: &str) -> String {
        [LOG, runner].concat()
    }

    /// The fetch pattern of one runner's log. A runner may not have written one yet, so the
    /// pattern ends in `*` and a missing log is simply absent; other runners' logs whose names
    /// it prefixes are left for the reader to ignore by exact name.
    pub fn log_pattern(runner: &str) -> String {
        [LOG, runner, "*"].concat()
    }

    /// The fetch pattern of one producer's evidence notes, absent until it writes one (see
    /// [`log_pattern`]).
    pub fn evidence_pattern(producer: &str) -> String {
        [EVIDENCE, producer, "*"].concat()
    }

    /// The patterns of the refs a runner appends to as it records checks and ends operations:
    /// its log and its evidence notes. Each push leases them on the tips the runner knows, so
    /// a runner that starts from what another command fetched needs both tips from that fetch.
    pub fn runner_patterns(runner: &str) -> [String; 2] {
        [log_pattern(runner), evidence_pattern(runner)]
    }

    /// The fetch pattern of every runner's log.
    pub const LOG_PATTERN: &str = "refs/bay/log/*";

    /// The runner whose log `name` is, if it is one.
    pub fn parse_log(name: &str) -> Option<&str> {
        name.strip_prefix(LOG).filter(|runner| !runner.is_empty())
    }

    /// One runner's presence: a single commit, replaced at most once per heartbeat, whose
    /// message is the `bay.presence/1` document (`crate::presence`).
    pub fn executor(runner: &str) -> String {
        [EXECUTOR, runner].concat()
    }

    /// The fetch pattern of one runner's presence, absent or not; as for a log, other
    /// runners' presences whose names it prefixes are left for the reader to ignore.
    pub fn executor_pattern(runner: &str) -> String {
        [EXECUTOR, runner, "*"].concat()
    }

    /// The lock of `path` (`crate::lock`): named by a digest, since a path may hold what a ref
    /// name cannot. A digest has a fixed length, so the name is also its own fetch pattern's
    /// prefix (`{name}*`) and no other lock's.
    pub fn lock(path: &str) -> String {
        let hex = crate::id::hex(&Sha256::digest(path.as_bytes()));
        [LOCKS, &hex].concat()
    }

    /// One machine's live summary (`crate::live`): a single commit holding `live.json`,
    /// replaced at most once per heartbeat.
    pub fn live(machine: &str) -> String {
        [LIVE, machine].concat()
    }

    /// The fetch pattern of every machine's live summary.
    pub const LIVE_PATTERN: &str = "refs/bay/live/*";

    /// The machine whose live summary `name` is, if it is one.
    pub fn parse_live(name: &str) -> Option<&str> {
        name.strip_prefix(LIVE)
            .filter(|machine| !machine.is_empty())
    }

    /// The fetch pattern of every runner's presence.
    pub const EXECUTOR_PATTERN: &str = "refs/bay/executor/*";

    /// The runner whose presence `name` is, if it is one.
    pub fn parse_executor(name: &str) -> Option<&str> {
        name.strip_prefix(EXECUTOR)
            .filter(|runner| !runner.is_empty())
    }

    /// Whether a fetch of `pattern` keeps the moment this clone first held each value it
    /// brings (`Action::ReadSeen`): a reader judges how long a ref has stood still on its own
    /// clock, never the writer's. A runner's presence (its age, for `bay status`) and a
    /// change's chain (how long it has been idle, before another actor adopts it). A
    /// machine's live summary (how old its sessions' rows are, for `CHANGE_HELD`).
    pub fn keeps_first_seen(pattern: &str) -> bool {
        pattern.starts_with(EXECUTOR) || pattern.starts_with(CHANGES) || pattern.starts_with(LIVE)
    }

    /// A local-only ref that keeps an operation's candidate safe from garbage collection.
    pub fn inflight(op: &OpId) -> String {
        format!("{INFLIGHT}{op}")
    }

    /// The fetch pattern of one change's chain. Change ids have a fixed length, so the prefix
    /// names that one ref, and a missing ref is simply absent from the answer.
    pub fn change_pattern(change: &ChangeId) -> String {
        [CHANGES, change.as_str(), "*"].concat()
    }

    /// The fetch pattern of one change's merged marker.
    pub fn landed_pattern(change: &ChangeId) -> String {
        [LANDED, change.as_str(), "*"].concat()
    }

    /// The fetch pattern of every queue place.
    pub const QUEUE_PATTERN: &str = "refs/bay/queue/*";

    /// The fetch pattern of every merged marker: few, since a runner compacts them.
    pub const LANDED_PATTERN: &str = "refs/bay/landed/*";

    /// The change whose merged marker `name` is, if it is one.
    pub fn parse_landed(name: &str) -> Option<ChangeId> {
        ChangeId::parse(name.strip_prefix(LANDED)?).ok()
    }

    /// The fetch patterns of every abandoned and no-effect marker: few, since a runner
    /// compacts them once the retention window is past.
    pub const ABANDONED_PATTERN: &str = "refs/bay/abandoned/*";
    pub const NO_EFFECT_PATTERN: &str = "refs/bay/no-effect/*";

    /// The change whose abandoned or no-effect marker `name` is, and when it ended (to the
    /// second): a change that ended short of a merge, which the retention window keeps
    /// adoptable.
    pub fn parse_ended(name: &str) -> Option<(ChangeId, Timestamp)> {
        let rest = name
            .strip_prefix(ABANDONED)
            .or_else(|| name.strip_prefix(NO_EFFECT))?;
        let (seconds, change) = rest.split_once('/')?;
        if seconds.len() != 10 || !seconds.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let at = Timestamp(seconds.parse::<u64>().ok()?.checked_mul(1000)?);
        Some((ChangeId::parse(change).ok()?, at))
    }

    /// The fetch pattern of every evidence producer's notes.
    pub const EVIDENCE_PATTERN: &str = "refs/notes/bay/evidence/*";

    /// The fetch pattern of every generation of one intent.
    pub fn intents_pattern(digest: &str) -> String {
        format!("{INTENTS}{digest}/*")
    }

    /// How many index shards there can be: 32 of changes and 16 of intents.
    pub const INDEX_SHARDS: u32 = 32 + 16;

    /// The index shard that holds `change`'s compacted chain: one of 32, by the first
    /// character of its id (`refs/bay/compacted/changes/c` holds `c7k2m4qa`).
    pub fn index_of_change(change: &ChangeId) -> String {
        let fan = change.as_str().get(..1).unwrap_or_default();
        format!("{INDEX}changes/{fan}")
    }

    /// The index shard that holds the latest compacted generation of the intent with `digest`:
    /// one of 16, by the first hex digit of the digest.
    pub fn index_of_intent(digest: &str) -> String {
        let fan = digest.get(..1).unwrap_or_default();
        format!("{INDEX}intents/{fan}")
    }

    /// The fetch pattern of one index shard, which is absent until something lands in it:
    /// the trailing `*` makes its absence no fault, and matches no other shard.
    pub fn index_pattern(shard: &str) -> String {
        format!("{shard}*")
    }

    /// Whether `name` is one of the index's shards.
    pub fn is_index(name: &str) -> bool {
        name.starts_with(INDEX)
    }

    /// The change id of a chain ref, if `name` is one.
    pub fn parse_change(name: &str) -> Option<ChangeId> {
        ChangeId::parse(name.strip_prefix(CHANGES)?).ok()
    }

    /// The sequence number of a queue place, if `name` is one.
    pub fn parse_queue(name: &str) -> Option<u64> {
        let digits = name.strip_prefix(QUEUE)?;
        if digits.len() != 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    }

    /// The digest and generation of an intent ref, if `name` is one.
    pub fn parse_intent(name: &str) -> Option<(&str, u32)> {
        let (digest, generation) = name.strip_prefix(INTENTS)?.split_once('/')?;
        if generation.len() != 4 || !generation.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((digest, generation.parse().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_ids_read_back_as_the_same_id() {
        let id = Oid::parse("ce013625030ba8dba906f756967f9e9ca394464a").expect("an id");
        let raw = id.to_raw();
        assert_eq!(raw.len(), 20);
        assert_eq!(raw[0], 0xce);
        assert_eq!(Oid::from_raw(&raw), Ok(id));
        assert_eq!(Oid::from_raw(&[0xab; 32]).map(|o| o.as_str().len()), Ok(64));
        assert!(Oid::from_raw(&[0; 19]).is_err());
    }

    #[test]
    fn oid_accepts_only_full_lower_hex() {
        assert!(Oid::parse(&"a".repeat(40)).is_ok());
        assert!(Oid::parse(&"0".repeat(64)).is_ok());
        assert!(Oid::parse(&"A".repeat(40)).is_err());
        assert!(Oid::parse(&"a".repeat(39)).is_err());
        assert!(Oid::parse("").is_err());
        assert!(Oid::parse(&"g".repeat(40)).is_err());
    }

    #[test]
    fn ref_names_round_trip() {
        let change = ChangeId::parse("c7k2m4qa").expect("a valid id");
        assert_eq!(
            refs::parse_change(&refs::change(&change)),
            Some(change.clone())
        );
        assert_eq!(refs::parse_queue(&refs::queue(42)), Some(42));
        assert_eq!(refs::parse_queue("refs/bay/queue/42"), None);
        assert_eq!(
            refs::parse_intent(&refs::intent("abcd", 3)),
            Some(("abcd", 3))
        );
        // Queue names sort in queue order.
        assert!(refs::queue(9) < refs::queue(10));
        // An abandoned marker names its second; names sort by it.
        let name = refs::abandoned(&change, crate::time::Timestamp(1_700_000_000_999));
        assert_eq!(name, "refs/bay/abandoned/1700000000/c7k2m4qa");
        assert_eq!(
            refs::parse_ended(&name),
            Some((change.clone(), crate::time::Timestamp(1_700_000_000_000)))
        );
        let name = refs::no_effect(&change, crate::time::Timestamp(1_700_000_000_999));
        assert_eq!(name, "refs/bay/no-effect/1700000000/c7k2m4qa");
        assert_eq!(
            refs::parse_ended(&name),
            Some((change.clone(), crate::time::Timestamp(1_700_000_000_000)))
        );
        assert!(
            refs::abandoned(&change, crate::time::Timestamp(9_000))
                < refs::abandoned(&change, crate::time::Timestamp(10_000))
        );
        for bad in [
            "refs/bay/abandoned/17/c7k2m4qa",
            "refs/bay/abandoned/1700000000",
            "refs/bay/no-effect/17/c7k2m4qa",
            "refs/bay/landed/c7k2m4qa",
        ] {
            assert_eq!(refs::parse_ended(bad), None);
        }
    }
}
