//! `Action::Fetch`: bring main, `refs/bay/*` and `refs/notes/bay/*` from the remote into a
//! local mirror, and report them by their names on the remote.
//!
//! The mirror lives under `refs/bay-mirror/<remote>/`, not under `refs/remotes/<remote>/`:
//! a user's branch `bay/x` is fetched to `refs/remotes/<remote>/bay/x` by a plain `git fetch`,
//! so a mirror there would report it as `refs/bay/x`, prune it, and have its own refs pruned
//! by the user's `git fetch --prune`. The mirror never touches local `refs/bay/*` either, where
//! local-only refs (`refs/bay/inflight/*`) live.

use bay_core::git::refs;
use bay_core::machine::{Fault, Refs};

use super::{Repo, oid};

/// Where one remote's refs are mirrored in a clone: remote `refs/<rest>` is local
/// `<mirror_prefix><rest>`.
pub fn mirror_prefix(remote: &str) -> String {
    format!("refs/bay-mirror/{remote}/")
}

impl Repo {
    /// One `git fetch` (pruned, atomic) and one `git for-each-ref`.
    pub fn fetch(&self) -> Result<Refs, Fault> {
        let mirror = mirror_prefix(&self.remote);
        let main = refs::main(&self.main);
        let mut refspecs = vec![format!("+{main}:{mirror}{}", strip(&main))];
        for pattern in refs::FETCH_PATTERNS {
            refspecs.push(format!("+{pattern}:{mirror}{}", strip(pattern)));
        }
        self.net()
            .cmd([
                "fetch",
                "--prune",
                "--atomic",
                "--no-tags",
                "--no-write-fetch-head",
                "--no-auto-maintenance",
                "--no-recurse-submodules",
                "--no-show-forced-updates",
                "--quiet",
                &self.remote,
            ])
            .args(&refspecs)
            .run()?;
        let listed = self
            .git()
            .cmd(["for-each-ref", "--format=%(objectname) %(refname)", &mirror])
            .text()?;
        let wanted: Vec<String> = std::iter::once(main)
            .chain(
                refs::FETCH_PATTERNS
                    .iter()
                    .map(|p| p.trim_end_matches('*').to_string()),
            )
            .collect();
        let mut seen = Refs::new();
        for line in listed.lines() {
            let (value, local) = line
                .split_once(' ')
                .ok_or_else(|| Fault(format!("git for-each-ref printed {line:?}")))?;
            let Some(rest) = local.strip_prefix(&mirror) else {
                continue;
            };
            let name = format!("refs/{rest}");
            // Only what this fetch mirrors: a stray ref under the mirror is no remote's.
            let mirrored = wanted.iter().any(|w| {
                if w.ends_with('/') {
                    name.starts_with(w)
                } else {
                    &name == w
                }
            });
            if mirrored {
                seen.insert(name, oid(value)?);
            }
        }
        Ok(seen)
    }
}

/// A ref name or pattern without its leading `refs/`.
fn strip(name: &str) -> &str {
    name.strip_prefix("refs/").unwrap_or(name)
}
