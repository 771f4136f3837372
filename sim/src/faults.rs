//! The faults a run may inject, and the mix a seed picks from them. Only faults that real Git
//! and real machines produce, and that bay promises to survive.

use std::collections::BTreeSet;

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FaultClass {
    /// A runner dies and restarts with its memory lost.
    Crash,
    /// A runner stops for longer than a lease, then goes on as if nothing happened.
    Pause,
    /// A push reaches the remote (or not) and its reply never comes back.
    LostReply,
    /// A push fails before anything reaches the remote.
    PushFail,
    /// A fetch fails.
    FetchFail,
    /// A machine cannot reach the remote for a while.
    Partition,
    /// A machine's clock drifts and jumps.
    Clock,
    /// A check takes longer than a lease.
    SlowCheck,
    /// A check never finishes (or its driver never answers).
    HungCheck,
    /// A check fails a tree it should pass.
    FlakyCheck,
    /// A check reports another tree, too few units, an oversized reason, a pass with a failing
    /// exit, or garbage.
    LyingCheck,
    /// A check says no worker can run it.
    UnavailableCheck,
    /// Someone pushes to main around bay.
    OutsidePush,
    /// Someone writes bay's records by hand, wrongly: a chain, a queue place, a runner's log
    /// or evidence notes pointed at a blob, a merged marker for a change that never merged, a
    /// request naming a draft nobody holds, or main deleted for a while. What bay cannot read
    /// is that change's (or that runner's) problem alone; the healthy changes still merge.
    Corrupt,
    /// On a seed with a key registry: a runner's executor key is taken out (revoked or
    /// rotated) while it works, then replaced; or its key file holds a key the registry never
    /// enrolled, or its signer signs other bytes, for a while (`world::keys`).
    Keys,
}

impl FaultClass {
    pub const ALL: [FaultClass; 15] = [
        FaultClass::Crash,
        FaultClass::Pause,
        FaultClass::LostReply,
        FaultClass::PushFail,
        FaultClass::FetchFail,
        FaultClass::Partition,
        FaultClass::Clock,
        FaultClass::SlowCheck,
        FaultClass::HungCheck,
        FaultClass::FlakyCheck,
        FaultClass::LyingCheck,
        FaultClass::UnavailableCheck,
        FaultClass::OutsidePush,
        FaultClass::Corrupt,
        FaultClass::Keys,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultClass::Crash => "crash",
            FaultClass::Pause => "pause",
            FaultClass::LostReply => "lost-reply",
            FaultClass::PushFail => "push-fail",
            FaultClass::FetchFail => "fetch-fail",
            FaultClass::Partition => "partition",
            FaultClass::Clock => "clock",
            FaultClass::SlowCheck => "slow-check",
            FaultClass::HungCheck => "hung-check",
            FaultClass::FlakyCheck => "flaky-check",
            FaultClass::LyingCheck => "lying-check",
            FaultClass::UnavailableCheck => "unavailable-check",
            FaultClass::OutsidePush => "outside-push",
            FaultClass::Corrupt => "corrupt",
            FaultClass::Keys => "keys",
        }
    }

    pub fn parse(name: &str) -> Option<FaultClass> {
        FaultClass::ALL
            .into_iter()
            .find(|class| class.name() == name)
    }

    /// Parses `all`, `none` or a comma-separated list of class names.
    pub fn parse_set(text: &str) -> Result<BTreeSet<FaultClass>, String> {
        match text {
            "all" => Ok(FaultClass::ALL.into_iter().collect()),
            "none" => Ok(BTreeSet::new()),
            list => list
                .split(',')
                .map(|name| {
                    FaultClass::parse(name.trim()).ok_or_else(|| {
                        let known: Vec<&str> = FaultClass::ALL.iter().map(|c| c.name()).collect();
                        format!(
                            "unknown fault class {name:?}; known: all, none, {}",
                            known.join(", ")
                        )
                    })
                })
                .collect(),
        }
    }
}

/// The faults one seed injects, and how hard: each allowed class is on with probability one
/// half, at an intensity of 1 to 3.
#[derive(Clone, Debug, Default)]
pub struct FaultMix {
    pub on: BTreeSet<FaultClass>,
    pub intensity: u64,
}

impl FaultMix {
    /// The mix of `allowed`: `corrupt` is drawn from `corrupt` (a stream of its own), so that
    /// adding it moved no other draw of any seed, and a seed without it runs as it did before.
    /// `keys` is the world's to add, on a seed with a registry (`world::keys`).
    pub fn pick(rng: &mut Rng, corrupt: &mut Rng, allowed: &BTreeSet<FaultClass>) -> FaultMix {
        let mut on: BTreeSet<FaultClass> = allowed
            .iter()
            .copied()
            .filter(|class| *class != FaultClass::Corrupt && *class != FaultClass::Keys)
            .filter(|_| rng.chance(500))
            .collect();
        let intensity = rng.range(1, 3);
        if allowed.contains(&FaultClass::Corrupt) && corrupt.chance(500) {
            on.insert(FaultClass::Corrupt);
        }
        FaultMix { on, intensity }
    }

    pub fn has(&self, class: FaultClass) -> bool {
        self.on.contains(&class)
    }

    /// A per-mille chance scaled by intensity, zero when the class is off.
    pub fn rate(&self, class: FaultClass, per_mille: u64) -> u64 {
        if self.has(class) {
            per_mille * self.intensity
        } else {
            0
        }
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.on.iter().map(|class| class.name()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_parse_and_refuse_unknown_names() {
        assert_eq!(
            FaultClass::parse_set("all").map(|s| s.len()),
            Ok(FaultClass::ALL.len())
        );
        assert_eq!(FaultClass::parse_set("none").map(|s| s.len()), Ok(0));
        assert_eq!(
            FaultClass::parse_set("crash,pause"),
            Ok([FaultClass::Crash, FaultClass::Pause].into_iter().collect())
        );
        assert!(FaultClass::parse_set("crash,meteor").is_err());
    }
}
