//! The wall clock and entropy, as the core takes them: plain data.

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

use bay_core::time::Timestamp;

/// This machine's clock now. A clock set before 1970 reads as the epoch.
pub fn now() -> Timestamp {
    let millis = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    Timestamp(u64::try_from(millis).unwrap_or(u64::MAX))
}

/// Eight bytes of entropy from the operating system, mixed with the clock and the process id
/// so that two processes started in the same instant still differ when no entropy source is
/// readable.
pub fn entropy() -> u64 {
    let mut bytes = [0u8; 8];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    let os = u64::from_le_bytes(bytes);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = u64::from(std::process::id()).rotate_left(32) ^ u64::from(nanos) ^ now().millis();
    if from_os.is_ok() {
        os ^ mixed.rotate_left(17)
    } else {
        mixed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// The clock as RFC 3339 UTC text, to the second, for people and for `freshness.fetched_at`.
pub fn rfc3339(at: Timestamp) -> String {
    let rest = at.secs() % 86_400;
    let (hour, minute, second) = (rest / 3600, rest % 3600 / 60, rest % 60);
    format!("{}T{hour:02}:{minute:02}:{second:02}Z", at.date())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_names_known_moments() {
        assert_eq!(rfc3339(Timestamp(0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339(Timestamp::from_secs(951_782_400)),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            rfc3339(Timestamp::from_secs(1_792_800_002)),
            "2026-10-24T00:00:02Z"
        );
    }

    #[test]
    fn entropy_differs_between_draws() {
        assert_ne!(entropy(), entropy());
    }
}
