//! Ref names as a command spells them, read the way Git completes them: `main`, `heads/main`
//! and `refs/heads/main` all name `refs/heads/main`, and `origin/research/x` names the
//! remote-tracking copy of `refs/heads/research/x`.

use crate::glob::ref_matches;

/// The full names Git tries for `name`, in the order of its rules (`git help revisions`): the
/// name itself under `refs/`, then under `refs/`, `refs/tags/`, `refs/heads/` and
/// `refs/remotes/`.
fn completions(name: &str) -> impl Iterator<Item = String> + '_ {
    let full = name.starts_with("refs/").then(|| name.to_owned());
    let short = ["refs/", "refs/tags/", "refs/heads/", "refs/remotes/"]
        .into_iter()
        .map(move |prefix| format!("{prefix}{name}"));
    full.into_iter().chain(short)
}

/// Whether `spelt`, a ref as a command spells it (perhaps a refspec pattern with `*`), names
/// the full ref `full`.
pub fn names(spelt: &str, full: &str) -> bool {
    completions(spelt).any(|candidate| ref_matches(&candidate, full))
}

/// Whether `spelt` names a ref that one of the full ref `patterns` matches, directly or as a
/// remote-tracking copy of a branch (`refs/remotes/origin/research/x` for
/// `refs/heads/research/*`).
pub fn names_any(spelt: &str, patterns: &[String]) -> bool {
    completions(spelt).any(|full| {
        let tracked = full
            .strip_prefix("refs/remotes/")
            .and_then(|rest| rest.split_once('/'))
            .map(|(_remote, branch)| format!("refs/heads/{branch}"));
        patterns.iter().any(|pattern| {
            ref_matches(pattern, &full)
                || tracked.as_deref().is_some_and(|b| ref_matches(pattern, b))
        })
    })
}

/// The ref names a revision expression reads: `main..research/x` reads `main` and
/// `research/x`; `^a`, `a~2`, `a^2`, `a@{1}` and `a:path` read `a`.
pub fn in_revision(revision: &str) -> impl Iterator<Item = &str> {
    revision.split("..").filter_map(|side| {
        let side = side.trim_start_matches('.').trim_start_matches('^');
        let end = side.find(['~', '^', ':']).unwrap_or(side.len());
        let end = side[..end].find("@{").unwrap_or(end);
        let name = &side[..end];
        (!name.is_empty()).then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_complete_as_git_completes_them() {
        for spelt in [
            "main",
            "heads/main",
            "refs/heads/main",
            "refs/heads/*",
            "ma*",
        ] {
            assert!(names(spelt, "refs/heads/main"), "{spelt}");
        }
        for spelt in ["origin/main", "mainline", "refs/bay/main", "tags/main"] {
            assert!(!names(spelt, "refs/heads/main"), "{spelt}");
        }
        assert!(names("staging", "refs/heads/staging"));
        assert!(names("deploy/prod", "refs/deploy/prod"));
    }

    #[test]
    fn a_lane_is_read_by_its_full_short_and_remote_tracking_names() {
        let lanes = vec!["refs/heads/research/*".to_owned()];
        for spelt in [
            "research/x",
            "heads/research/x",
            "refs/heads/research/x",
            "origin/research/x",
            "refs/remotes/upstream/research/y/z",
        ] {
            assert!(names_any(spelt, &lanes), "{spelt}");
        }
        for spelt in ["research", "main", "origin/main", "research-x/y"] {
            assert!(!names_any(spelt, &lanes), "{spelt}");
        }
    }

    #[test]
    fn a_revision_reads_the_refs_it_names() {
        let read = |rev| in_revision(rev).collect::<Vec<_>>();
        assert_eq!(read("main..research/x"), ["main", "research/x"]);
        assert_eq!(read("a...b"), ["a", "b"]);
        assert_eq!(read("^a~2"), ["a"]);
        assert_eq!(read("a^2"), ["a"]);
        assert_eq!(read("a@{1}"), ["a"]);
        assert_eq!(read("a:src/x.rs"), ["a"]);
        assert_eq!(read("..b"), ["b"]);
    }
}
