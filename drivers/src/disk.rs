//! Free disk space, as `df` reports what this account may use where a view or a check's copy
//! would go (`statvfs`'s blocks free to an unprivileged user), by one system call. The floor
//! and what to do below it are core's (`bay_core::disk`).

use std::path::Path;

use bay_core::disk::DiskSpace;

/// The space free at `path` (or its nearest existing parent), measured against `floor_mib`.
pub fn measure(path: &Path, floor_mib: u64) -> Result<DiskSpace, String> {
    let mut at = path;
    while !at.exists() {
        at = at
            .parent()
            .ok_or_else(|| format!("no folder of {} exists", path.display()))?;
    }
    let stats = rustix::fs::statvfs(at)
        .map_err(|e| format!("the free space of {} cannot be read: {e}", at.display()))?;
    let available = stats.f_bavail.saturating_mul(stats.f_frsize);
    Ok(DiskSpace {
        free_mib: available / (1024 * 1024),
        floor_mib,
        path: path.to_string_lossy().into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_yet_to_be_made_is_measured_where_it_would_go() {
        let dir = tempfile::tempdir().expect("a folder");
        let space = measure(&dir.path().join("bay/views/x"), 1).expect("statvfs answers");
        assert!(space.free_mib > 0, "{space:?}");
        assert!(!space.is_low());
        let above = measure(dir.path(), u64::MAX).expect("statvfs answers");
        assert!(above.is_low());
    }

    #[test]
    fn the_free_space_is_what_df_says_this_account_may_use() {
        let dir = tempfile::tempdir().expect("a folder");
        let ours = measure(dir.path(), 1).expect("statvfs answers").free_mib;
        let out = std::process::Command::new("df")
            .args(["-P", "-k"])
            .arg(dir.path())
            .env("LC_ALL", "C")
            .output()
            .expect("df runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let kib: u64 = text
            .lines()
            .nth(1)
            .and_then(|line| line.split_whitespace().nth(3))
            .and_then(|kib| kib.parse().ok())
            .expect("df prints the space available");
        // Other writers on the machine move it between the two reads, by a little.
        assert!(
            ours.abs_diff(kib / 1024) <= 64,
            "statvfs {ours} MiB, df {kib} KiB"
        );
    }
}
