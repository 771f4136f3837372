//! The free-space floor a machine sets with `bay.minFreeMiB`: below it, `bay start` makes
//! nothing (`DISK_LOW`) and a check copies nothing and does not run (`infra_failure` naming
//! `DISK_LOW`). The driver measures; the rule is here.

use serde::{Deserialize, Serialize};

/// What a driver measured where a view or a check's copy would go, and the machine's floor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct DiskSpace {
    pub free_mib: u64,
    pub floor_mib: u64,
    pub path: String,
}

/// The facts a `DISK_LOW` result names: the space itself.
impl crate::detail::Detail for DiskSpace {}

impl DiskSpace {
    /// Under the floor: nothing may be made there.
    pub fn is_low(&self) -> bool {
        self.free_mib < self.floor_mib
    }

    /// Why a check did not run, for its `infra_failure`.
    pub fn why_no_check(&self) -> String {
        format!(
            "DISK_LOW: {} has {} MiB free, under this machine's bay.minFreeMiB of {} MiB, so the \
             check copied nothing and did not run",
            self.path, self.free_mib, self.floor_mib
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_itself_is_enough() {
        let at = |free| DiskSpace {
            free_mib: free,
            floor_mib: 100,
            path: "/x".into(),
        };
        assert!(at(99).is_low());
        assert!(!at(100).is_low());
        assert!(at(0).why_no_check().starts_with("DISK_LOW"));
    }
}
