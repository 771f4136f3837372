//! `Action::Fetch`: bring the refs a machine names from the remote into a local mirror, and
//! report them by their names on the remote.
//!
//! The mirror lives under `refs/bay-mirror/<remote>/`, not under `refs/remotes/<remote>/`:
//! a user's branch `bay/x` is fetched to `refs/remotes/<remote>/bay/x` by a plain `git fetch`,
//! so a mirror there would report it as `refs/bay/x`, prune it, and have its own refs pruned
//! by the user's `git fetch --prune`. The mirror never touches local `refs/bay/*` either, where
//! local-only refs (`refs/bay/inflight/*`) live.

use std::collections::BTreeMap;

use bay_core::git::{Oid, refs};
use bay_core::machine::{Fault, FetchSpec, Refs};
use bay_core::time::Timestamp;

use super::{Repo, oid};
use crate::git::Location;
use crate::local_refs::LocalRefs;

/// Where one remote's refs are mirrored in a clone: remote `refs/<rest>` is local
/// `<mirror_prefix><rest>`.
pub fn mirror_prefix(remote: &str) -> String {
    format!("refs/bay-mirror/{remote}/")
}

impl Repo {
    /// One `git fetch` of the spec's refs (pruned within them, atomic), whose porcelain output
    /// says what the mirror holds for them (Git 2.41).
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
        // A fetch of runners' presences or of chains keeps Git's reflog of each ref it moves:
        // the record, on this clone's clock, of when the fetch first brought each tip
        // (`read_seen`).
        let reflog = spec.patterns.iter().any(|p| refs::keeps_first_seen(p));
        // One fetch at a time in this clone; a poisoned lock guards nothing of its own.
        let _one = self
            .fetching
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let out = self
            .net()
            .cmd(keeping_reflog(reflog))
            .args([
                "fetch",
                "--prune",
                "--atomic",
                "--no-tags",
                "--no-write-fetch-head",
                if spec.maintain {
                    "--auto-maintenance"
                } else {
                    "--no-auto-maintenance"
                },
                "--no-recurse-submodules",
                "--no-show-forced-updates",
                // No opportunistic update of `refs/remotes/<remote>/*`: those are the user's.
                "--refmap=",
                // One line per ref the refspecs match, up to date or not: what the mirror
                // holds for them once the fetch is done, with no second process to list it.
                "--porcelain",
                "--verbose",
                &self.remote,
            ])
            .args(&refspecs)
            .run()?;
        let mut held = Refs::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((name, value)) = self.porcelain_line(line)?
                && spec.covers(&name)
            {
                held.insert(name, value);
            }
        }
        Ok(held)
    }

    /// `Action::ReadHeld`: the mirror's refs under `prefix` (a remote ref name ending in `/`),
    /// newest committed tip first, at most `limit`, listed in-process or by one `git
    /// for-each-ref`. It never fetches: it
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
        // In-process where the refs are files; Git where gix cannot list them.
        if let Ok(Some(newest)) = self.reader.newest_refs_under(&pattern, limit) {
            return Ok(self.held_refs(newest, |name| name.starts_with(prefix)));
        }
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
        let mut pairs = Vec::new();
        for line in listed.lines() {
            let (value, local) = line
                .split_once(' ')
                .ok_or_else(|| Fault(format!("git for-each-ref printed {line:?}")))?;
            pairs.push((local.to_owned(), oid(value)?));
        }
        Ok(self.held_refs(pairs, |name| name.starts_with(prefix)))
    }

    /// `Action::ReadSeen`: for each remote ref, the newest entry of its mirror's reflog, when
    /// that entry set the value the mirror holds now: the moment, on this clone's clock, the
    /// fetch or push that brought that value wrote it. A ref with no reflog, or whose newest
    /// entry is not its value, is left out. Git records whole seconds.
    ///
    /// Both are read from their files where the refs are files ([`LocalRefs::readable`]), and
    /// with two `git` calls per ref otherwise.
    pub fn read_seen(&self, names: &[String]) -> Result<BTreeMap<String, Timestamp>, Fault> {
        let mirror = mirror_prefix(&self.remote);
        if let Some(files) = LocalRefs::readable(&Location::Dir(self.dir().to_path_buf())) {
            let mut seen = BTreeMap::new();
            for name in names {
                let local = format!("{mirror}{}", strip(name));
                let value = files.value(&local)?;
                let newest = files.newest_log(&local)?;
                if let (Some(value), Some((set, secs))) = (value, newest)
                    && set == value
                {
                    seen.insert(name.clone(), Timestamp::from_secs(secs));
                }
            }
            return Ok(seen);
        }
        let mut seen = BTreeMap::new();
        for name in names {
            let local = format!("{mirror}{}", strip(name));
            let value = self
                .git()
                .cmd(["rev-parse", "--verify", "--quiet", &local])
                .output()?;
            if !value.success() {
                continue;
            }
            let value = value.text();
            let newest = self
                .git()
                .cmd([
                    "reflog",
                    "show",
                    "-n",
                    "1",
                    "--date=unix",
                    "--format=%H %gd",
                    &local,
                ])
                .output()?;
            if !newest.success() {
                continue;
            }
            let newest = newest.text();
            // `<oid> <ref>@{<unix seconds>}`
            let at = newest
                .split_once(' ')
                .filter(|(oid, _)| *oid == value.trim())
                .and_then(|(_, selector)| selector.rsplit_once("@{"))
                .and_then(|(_, secs)| secs.strip_suffix('}'))
                .and_then(|secs| secs.parse::<u64>().ok());
            if let Some(secs) = at {
                seen.insert(name.clone(), Timestamp::from_secs(secs));
            }
        }
        Ok(seen)
    }

    /// One line of `git fetch --porcelain`, `<flag> <old> <new> <local ref>`, as the remote ref
    /// name and the value the mirror now holds; `None` for a ref the fetch pruned or one
    /// outside the mirror. A rejected update is a fault (an atomic fetch fails as a whole
    /// before this is read, so it is not expected).
    fn porcelain_line(&self, line: &str) -> Result<Option<(String, Oid)>, Fault> {
        let bad = || Fault(format!("git fetch --porcelain printed {line:?}"));
        let mut chars = line.chars();
        let flag = chars.next().ok_or_else(bad)?;
        let fields: Vec<&str> = chars.as_str().split(' ').collect();
        let ["", _old, new, local] = fields.as_slice() else {
            return Err(bad());
        };
        let rest = local.strip_prefix(&mirror_prefix(&self.remote));
        match (flag, rest) {
            ('-', _) | (_, None) => Ok(None),
            ('!', _) => Err(bad()),
            (_, Some(rest)) => Ok(Some((format!("refs/{rest}"), oid(new)?))),
        }
    }

    /// The remote refs the mirror's `(local name, value)` pairs stand for, those `keep` takes.
    fn held_refs(
        &self,
        listed: impl IntoIterator<Item = (String, Oid)>,
        keep: impl Fn(&str) -> bool,
    ) -> Refs {
        let mirror = mirror_prefix(&self.remote);
        listed
            .into_iter()
            .filter_map(|(local, value)| {
                let name = format!("refs/{}", local.strip_prefix(&mirror)?);
                keep(&name).then_some((name, value))
            })
            .collect()
    }
}

/// The options that make Git keep a reflog of every ref a command moves, when `keep`.
pub(super) fn keeping_reflog(keep: bool) -> &'static [&'static str] {
    if keep {
        &["-c", "core.logAllRefUpdates=always"]
    } else {
        &[]
    }
}

/// A remote ref name without its leading `refs/`.
pub(super) fn strip(name: &str) -> &str {
    name.strip_prefix("refs/").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_lines_give_what_the_mirror_holds() {
        let repo = Repo::new("/x", "origin", "main").expect("a repo");
        let (a, b, zero) = ("a".repeat(40), "b".repeat(40), "0".repeat(40));
        let line = |flag: char, local: &str| format!("{flag} {a} {b} {local}");
        let held = |flag, local| repo.porcelain_line(&line(flag, local));
        let main = "refs/bay-mirror/origin/heads/main";
        for flag in ['=', ' ', '+', '*', 't'] {
            assert_eq!(
                held(flag, main).expect("a line"),
                Some((
                    "refs/heads/main".to_string(),
                    Oid::parse(&b).expect("an id")
                ))
            );
        }
        let pruned = format!("- {a} {zero} {main}");
        assert_eq!(repo.porcelain_line(&pruned).expect("a line"), None);
        assert_eq!(held('*', "refs/remotes/origin/main").expect("a line"), None);
        assert!(held('!', main).is_err());
        assert!(repo.porcelain_line("= only two").is_err());
        assert!(repo.porcelain_line("").is_err());
    }
}

#[cfg(test)]
mod seen_tests {
    use super::*;
    use crate::git::Git;

    /// `read_seen` in a clone whose refs are files (read in-process) and in one whose refs are
    /// a reftable (read by `git`) gives the same answer: the newest reflog entry's time.
    #[test]
    fn seen_reads_the_same_from_files_and_from_git() {
        for format in ["files", "reftable"] {
            let dir = tempfile::tempdir().expect("a temp dir");
            let git = Git::in_dir(dir.path());
            git.cmd(["init", "-q", &format!("--ref-format={format}")])
                .run()
                .expect("git init");
            let commit = |message| crate::testing::empty_commit(&git, message);
            let (one, two) = (commit("one"), commit("two"));
            let mirror = "refs/bay-mirror/origin/bay/executor";
            let update = |name: &str, value: &str, secs: u64| {
                git.cmd(["update-ref", "--create-reflog", "-m", "fetch"])
                    .args([&format!("{mirror}/{name}"), value])
                    .env("GIT_COMMITTER_DATE", format!("{secs} +0000"))
                    .run()
                    .expect("update-ref");
            };
            update("fresh", &one, 1_700_000_000);
            update("fresh", &two, 1_700_000_100);
            update("other", &one, 1_700_000_200);
            let repo = Repo::new(dir.path(), "origin", "main").expect("a repo");
            let names: Vec<String> = ["fresh", "other", "absent"]
                .iter()
                .map(|n| format!("refs/bay/executor/{n}"))
                .collect();
            let seen = repo.read_seen(&names).expect("read");
            assert_eq!(
                seen.get("refs/bay/executor/fresh"),
                Some(&Timestamp::from_secs(1_700_000_100)),
                "{format}"
            );
            assert_eq!(
                seen.get("refs/bay/executor/other"),
                Some(&Timestamp::from_secs(1_700_000_200)),
                "{format}"
            );
            assert!(!seen.contains_key("refs/bay/executor/absent"), "{format}");
        }
    }
}
