//! `Action::Fetch`: bring the refs a machine names from the remote into a local mirror, and
//! report them by their names on the remote.
//!
//! The mirror lives under `refs/bay-mirror/<remote>/`, not under `refs/remotes/<remote>/`:
//! a user's branch `bay/x` is fetched to `refs/remotes/<remote>/bay/x` by a plain `git fetch`,
//! so a mirror there would report it as `refs/bay/x`, prune it, and have its own refs pruned
//! by the user's `git fetch --prune`. The mirror never touches local `refs/bay/*` either, where
//! local-only refs (`refs/bay/inflight/*`) live.

use bay_core::machine::{Fault, FetchSpec, Refs};

use super::{Repo, oid};

/// Where one remote's refs are mirrored in a clone: remote `refs/<rest>` is local
/// `<mirror_prefix><rest>`.
pub fn mirror_prefix(remote: &str) -> String {
    format!("refs/bay-mirror/{remote}/")
}

impl Repo {
    /// One `git fetch` of the spec's refs (pruned within them, atomic), then one
    /// `git for-each-ref` of what the mirror holds for them.
    ///
    /// Each pattern becomes a refspec into the mirror (`*` keeps its meaning, and a pattern
    /// that names one ref with a trailing `*` is not an error when the ref is absent), so the
    /// remote advertises only refs under the patterns' prefixes: a fetch costs what it
    /// reads, not what the remote holds.
    pub fn fetch(&self, spec: &FetchSpec) -> Result<Refs, Fault> {
        let mirror = mirror_prefix(&self.remote);
        let refspecs: Vec<String> = spec
            .patterns
            .iter()
            .map(|pattern| format!("+{pattern}:{mirror}{}", strip(pattern)))
            .collect();
        if refspecs.is_empty() {
            return Ok(Refs::new());
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
                // No opportunistic update of `refs/remotes/<remote>/*`: those are the user's.
                "--refmap=",
                "--quiet",
                &self.remote,
            ])
            .args(&refspecs)
            .run()?;
        // for-each-ref matches a pattern literally up to a slash, or as a glob whose `*` stops
        // at a slash; so `dir/*` is asked as `dir`, and `name*` as itself.
        let listed_patterns: Vec<String> = spec
            .patterns
            .iter()
            .map(|pattern| {
                let local = format!("{mirror}{}", strip(pattern));
                match local.strip_suffix("/*") {
                    Some(dir) => dir.to_string(),
                    None => local,
                }
            })
            .collect();
        let listed = self
            .git()
            .cmd(["for-each-ref", "--format=%(objectname) %(refname)"])
            .args(&listed_patterns)
            .text()?;
        // Only what this fetch names: a stray ref under the mirror is no remote's.
        self.listed_refs(&listed, |name| spec.covers(name))
    }

    /// `Action::ReadHeld`: one `git for-each-ref` of the mirror under `prefix` (a remote ref
    /// name ending in `/`), newest committed tip first, at most `limit`. It never fetches: it
    /// says what this clone's earlier fetches brought.
    pub fn read_held(&self, prefix: &str, limit: u32) -> Result<Refs, Fault> {
        let Some(dir) = prefix.strip_suffix('/') else {
            return Err(Fault(format!("{prefix:?} does not end in /")));
        };
        if limit == 0 {
            // Git takes `--count=0` as no count at all.
            return Ok(Refs::new());
        }
        let pattern = format!("{}{}", mirror_prefix(&self.remote), strip(dir));
        let listed = self
            .git()
            .cmd([
                "for-each-ref",
                "--sort=-committerdate",
                "--format=%(objectname) %(refname)",
            ])
            .arg(format!("--count={limit}"))
            .arg(pattern)
            .text()?;
        self.listed_refs(&listed, |name| name.starts_with(prefix))
    }

    /// The refs `git for-each-ref --format='%(objectname) %(refname)'` listed in the mirror,
    /// by their names on the remote, keeping those `keep` takes.
    fn listed_refs(&self, listed: &str, keep: impl Fn(&str) -> bool) -> Result<Refs, Fault> {
        let mirror = mirror_prefix(&self.remote);
        let mut seen = Refs::new();
        for line in listed.lines() {
            let (value, local) = line
                .split_once(' ')
                .ok_or_else(|| Fault(format!("git for-each-ref printed {line:?}")))?;
            let Some(rest) = local.strip_prefix(&mirror) else {
                continue;
            };
            let name = format!("refs/{rest}");
            if keep(&name) {
                seen.insert(name, oid(value)?);
            }
        }
        Ok(seen)
    }
}

/// A remote ref name without its leading `refs/`.
pub(super) fn strip(name: &str) -> &str {
    name.strip_prefix("refs/").unwrap_or(name)
}
