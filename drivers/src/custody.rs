//! The facts of the `key-custody` row (`bay_core::doctor::custody`): for each key file a
//! setting names, its mode, whether this account may read it (`access(2)`, which opens
//! nothing), its `.pub` beside it, and whether it lies inside the repository. A private key
//! is never opened here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bay_core::doctor::custody::KeyFacts;

/// What this machine shows of the key file at `path`; `None` when no file is there.
/// `inside` lists the repository's folders (work tree, common Git directory).
pub fn key_facts(path: &Path, inside: &[PathBuf]) -> Option<KeyFacts> {
    let meta = std::fs::metadata(path).ok()?;
    let mode = mode_of(&meta);
    let readable = rustix::fs::access(path, rustix::fs::Access::READ_OK).is_ok();
    let mut public = path.as_os_str().to_owned();
    public.push(".pub");
    let public = std::fs::read_to_string(PathBuf::from(public)).ok();
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let in_repository = inside.iter().any(|dir| {
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        real.starts_with(dir)
    });
    Some(KeyFacts {
        mode,
        readable,
        public,
        in_repository,
    })
}

#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o777
}

#[cfg(not(unix))]
fn mode_of(_: &std::fs::Metadata) -> u32 {
    0
}

/// Whether this account runs `sudo` with no password: `sudo -n true` succeeds.
pub fn passwordless_sudo() -> bool {
    Command::new("sudo")
        .args(["-n", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
