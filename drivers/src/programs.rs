//! Finding the programs bay starts (`git`, `bwrap`, `setpriv`) on this process's `PATH`: one
//! search, so that every program is found by the same rules.

use std::path::{Path, PathBuf};

/// The first executable file `name` in an absolute directory of `PATH`, as an absolute path.
/// Relative entries are skipped: they would name a different program from each working
/// directory bay runs in.
pub(crate) fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}
