//! Which files of the candidate a check is given: the whole tree, its `paths`, or (with
//! `materialize = "changed"`) the files the candidate changes plus its `paths`.
//!
//! The rule is decided here once, so the driver that copies the files and a test that reads
//! what a check saw agree on it; the driver only asks [`Shown::shows`] of each file Git lists.

use std::collections::BTreeSet;

use crate::paths::{covers, normalize};
use crate::policy::{CheckSpec, Materialize};

/// The part of the candidate's tree one check sees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shown {
    /// Every file of the tree.
    Whole,
    /// Only these files, and what the `paths` entries cover. A file the candidate does not
    /// hold (one it deleted, a `paths` entry it lacks) is simply absent: the check sees the
    /// candidate as it is, never a file of the base.
    Part {
        /// Exact file paths: the changed paths, with `materialize = "changed"`.
        files: BTreeSet<String>,
        /// The check's `paths`, normalized: each a file or a whole directory.
        paths: Vec<String>,
    },
}

impl Shown {
    /// What `check` sees of a candidate that changes `changed_paths` against its base.
    pub fn of(check: &CheckSpec, changed_paths: &[String]) -> Shown {
        let paths: Vec<String> = check
            .paths
            .iter()
            .flatten()
            .map(|entry| normalize(entry))
            .collect();
        match check.materialize {
            Materialize::Tree if check.paths.is_none() => Shown::Whole,
            Materialize::Tree => Shown::Part {
                files: BTreeSet::new(),
                paths,
            },
            Materialize::Changed => Shown::Part {
                files: changed_paths.iter().map(|path| normalize(path)).collect(),
                paths,
            },
        }
    }

    /// Whether the check sees the file at `path` (as Git lists it, `/`-separated).
    pub fn shows(&self, path: &str) -> bool {
        match self {
            Shown::Whole => true,
            Shown::Part { files, paths } => {
                files.contains(path) || paths.iter().any(|entry| covers(entry, path))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn check(extra: &str) -> CheckSpec {
        let text = format!(
            "revision = 1\n[[check]]\nid = \"t\"\nenvironment = \"e\"\ncommand = \"c\"\n\
             adapter = [\"c\"]\nexpected_minimum = 1\n{extra}"
        );
        Policy::parse(&text)
            .expect("a valid policy")
            .checks
            .remove(0)
    }

    fn changed() -> Vec<String> {
        vec!["src/a.rs".into(), "docs/new.md".into()]
    }

    #[test]
    fn without_paths_or_materialize_the_check_sees_the_whole_tree() {
        let shown = Shown::of(&check(""), &changed());
        assert_eq!(shown, Shown::Whole);
        assert!(shown.shows("anything/at/all"));
    }

    #[test]
    fn paths_are_files_or_whole_directories() {
        let shown = Shown::of(&check("paths = [\"./src/\", \"Cargo.toml\"]"), &changed());
        assert!(shown.shows("src/a.rs"));
        assert!(shown.shows("src/deep/b.rs"));
        assert!(shown.shows("Cargo.toml"));
        assert!(!shown.shows("srcs/a.rs"));
        assert!(!shown.shows("docs/new.md"), "a changed file outside paths");
        assert!(!shown.shows("Cargo.toml.orig"));
    }

    #[test]
    fn changed_gives_the_changed_files_plus_paths() {
        let shown = Shown::of(
            &check("materialize = \"changed\"\npaths = [\".lint.toml\"]"),
            &changed(),
        );
        assert!(shown.shows("src/a.rs"));
        assert!(shown.shows("docs/new.md"));
        assert!(shown.shows(".lint.toml"));
        assert!(!shown.shows("src/b.rs"));
        assert!(!shown.shows("src"), "a changed file is not a directory");

        let alone = Shown::of(&check("materialize = \"changed\""), &[]);
        assert!(!alone.shows("README"), "no change, no paths: nothing");
    }
}
