//! Splitting early runs between runners. Runners say nothing of the runs they start, so two
//! idle runners predicting the same queue pick the same first entry worth a run, and a third
//! runner adds almost nothing. What a pass does see is every producer's evidence notes tip:
//! a runner checking early, or holding a head, writes a record at the end of each run. So each
//! runner notes, on its own clock, when it first saw each producer's tip; the producers whose
//! tip moved within the progress deadline are taken as the runners at work, and each runner
//! other than the head's owner leaves to those before it, by name, as many entries worth a run
//! as there are of them.
//!
//! Only where a run goes hangs on this: what a record answers is decided as before, and a
//! runner that guessed wrong runs an entry twice or leaves one to its owner.

use std::collections::BTreeMap;

use crate::git::{Oid, refs};
use crate::machine::Refs;
use crate::time::Timestamp;

/// Each producer's evidence notes tip, and when this runner first saw it.
#[derive(Debug, Default)]
pub(in crate::machine::runner) struct Peers(BTreeMap<String, (Oid, Timestamp)>);

impl Peers {
    /// Notes the producers' tips in `refs`, fetched at `now`.
    pub(in crate::machine::runner) fn saw(&mut self, refs: &Refs, now: Timestamp) {
        for (name, tip) in refs.range(refs::EVIDENCE.to_string()..) {
            let Some(producer) = name.strip_prefix(refs::EVIDENCE) else {
                break;
            };
            match self.0.get(producer) {
                Some((seen, _)) if seen == tip => {}
                _ => {
                    self.0.insert(producer.to_string(), (tip.clone(), now));
                }
            }
        }
    }

    /// How many entries worth a run `me` leaves to the others: the runners whose notes moved
    /// within `window_ms` of `now` before it by name, `me` always counted and `owner` (the
    /// head's) never.
    pub(in crate::machine::runner) fn before(
        &self,
        me: &str,
        owner: Option<&str>,
        now: Timestamp,
        window_ms: u64,
    ) -> usize {
        self.0
            .iter()
            .filter(|(producer, (_, seen))| {
                producer.as_str() < me
                    && Some(producer.as_str()) != owner
                    && now.millis_since(*seen) < window_ms
            })
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oid(n: u8) -> Oid {
        Oid::parse(&format!("{n:040x}")).expect("an object id")
    }

    fn notes(tips: &[(&str, u8)]) -> Refs {
        tips.iter()
            .map(|(producer, n)| (refs::evidence(producer), oid(*n)))
            .chain([("refs/heads/main".to_string(), oid(99))])
            .collect()
    }

    #[test]
    fn each_runner_leaves_entries_to_the_runners_before_it_at_work() {
        let mut peers = Peers::default();
        peers.saw(&notes(&[("r1", 1), ("r2", 2), ("r3", 3)]), Timestamp(0));
        // r1 holds the head: r2 leaves nothing, r3 one entry (to r2).
        assert_eq!(peers.before("r2", Some("r1"), Timestamp(10), 100), 0);
        assert_eq!(peers.before("r3", Some("r1"), Timestamp(10), 100), 1);
        assert_eq!(peers.before("r3", None, Timestamp(10), 100), 2);
        // Past the window, a producer whose tip did not move counts no more.
        assert_eq!(peers.before("r3", Some("r1"), Timestamp(100), 100), 0);
        // A tip that moves counts again from when it was first seen; one seen again does not.
        peers.saw(&notes(&[("r1", 1), ("r2", 4), ("r3", 3)]), Timestamp(150));
        peers.saw(&notes(&[("r1", 1), ("r2", 4), ("r3", 3)]), Timestamp(240));
        assert_eq!(peers.before("r3", Some("r1"), Timestamp(245), 100), 1);
        assert_eq!(peers.before("r3", Some("r1"), Timestamp(250), 100), 0);
    }
}
