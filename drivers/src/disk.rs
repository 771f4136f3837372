//! Free disk space, as `df` reports what this account may use where a view or a check's copy
//! would go. The floor and what to do below it are core's (`bay_core::disk`).

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
    let args: [std::ffi::OsString; 3] = ["-P".into(), "-k".into(), at.into()];
    let out = duct::cmd("df", args)
        .env("LC_ALL", "C")
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .map_err(|e| format!("df could not run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "df {} failed: {}",
            at.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let available = text
        .lines()
        .nth(1)
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|kib| kib.parse::<u64>().ok())
        .ok_or_else(|| format!("df printed no free space for {}: {text:?}", at.display()))?;
    Ok(DiskSpace {
        free_mib: available / 1024,
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
        let space = measure(&dir.path().join("bay/views/x"), 1).expect("df runs");
        assert!(space.free_mib > 0, "{space:?}");
        assert!(!space.is_low());
        let above = measure(dir.path(), u64::MAX).expect("df runs");
        assert!(above.is_low());
    }
}
