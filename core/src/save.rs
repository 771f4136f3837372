//! `bay save`: what decides whether the main checkout's edits may be saved, and whether the
//! checkout moves to the merge afterwards. The driver reads the facts of the checkout; the
//! judgments are here, so every refusal is decided once and before anything changes.
//!
//! The save itself is a start that takes the checkout's edits in (`start::Import::Checkout`)
//! and then `bay merge --wait`.

use serde::Serialize;

/// What `detail.nothing` says of a save whose checkout holds nothing main lacks.
pub const NOTHING_TO_SAVE: &str = "nothing to save";

/// What the driver read of the checkout before a save.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Before {
    /// The change whose view the command runs in, if it runs in one.
    pub in_view: bool,
    /// It runs in the clone's main worktree, the folder that was cloned.
    pub main_worktree: bool,
    /// A merge, rebase, cherry-pick or revert under way, by name.
    pub under_way: Option<String>,
    /// Paths with an unresolved conflict.
    pub unmerged: Vec<String>,
    /// Submodules among the edits.
    pub submodules: Vec<String>,
}

/// Why the checkout cannot be saved, if it cannot. Each of these fails before a change opens.
pub fn refuse(before: &Before) -> Option<String> {
    if before.in_view {
        return Some(
            "bay save runs only in the main checkout; in a change's view, run bay merge".into(),
        );
    }
    if !before.main_worktree {
        return Some(
            "bay save runs only in the main checkout, not in another worktree; run it in the \
             folder you cloned"
                .into(),
        );
    }
    if let Some(what) = &before.under_way {
        return Some(format!(
            "a {what} is under way in this checkout; finish or abort it, then save again"
        ));
    }
    if !before.unmerged.is_empty() {
        return Some(format!(
            "these files have an unresolved conflict: {}; resolve them, then save again",
            before.unmerged.join(", ")
        ));
    }
    if !before.submodules.is_empty() {
        return Some(format!(
            "bay save does not take submodules: {}; leave them as they are, then save again",
            before.submodules.join(", ")
        ));
    }
    None
}

/// What the driver read of the checkout after the merge.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct After {
    /// The branch `HEAD` is on; none when detached.
    pub branch: Option<String>,
    /// `HEAD` is still the commit the save was made on.
    pub head_unchanged: bool,
    /// The files hold exactly the edits that were saved.
    pub files_unchanged: bool,
}

/// Whether the checkout moves to the merge: `Ok` when nothing is in the way, else why it stays
/// where it was, as `detail.checkout` says.
pub fn stays(main: &str, after: &After) -> Option<&'static str> {
    if after.branch.as_deref() != Some(main) {
        return Some("off_main");
    }
    if !after.head_unchanged {
        return Some("head_moved");
    }
    if !after.files_unchanged {
        return Some("files_changed");
    }
    None
}

/// `detail.checkout`: the commit the checkout moved to, or why it stayed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Checkout<'a> {
    /// `moved` is always `true`.
    Moved { moved: bool, commit: &'a str },
    /// `moved` is always `false`.
    Stayed { moved: bool, why: &'a str },
}

impl crate::detail::Detail for Checkout<'_> {}

impl Checkout<'_> {
    pub fn of<'a>(moved_to: Result<&'a str, &'a str>) -> Checkout<'a> {
        match moved_to {
            Ok(commit) => Checkout::Moved {
                moved: true,
                commit,
            },
            Err(why) => Checkout::Stayed { moved: false, why },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> Before {
        Before {
            main_worktree: true,
            ..Before::default()
        }
    }

    #[test]
    fn a_clean_main_checkout_may_save() {
        assert_eq!(refuse(&clean()), None);
    }

    #[test]
    fn each_thing_in_the_way_refuses_and_says_what_to_do() {
        let cases = [
            (
                Before {
                    in_view: true,
                    ..clean()
                },
                "bay merge",
            ),
            (
                Before {
                    main_worktree: false,
                    ..clean()
                },
                "another worktree",
            ),
            (
                Before {
                    under_way: Some("rebase".into()),
                    ..clean()
                },
                "rebase is under way",
            ),
            (
                Before {
                    unmerged: vec!["a.txt".into()],
                    ..clean()
                },
                "a.txt",
            ),
            (
                Before {
                    submodules: vec!["vendor/x".into()],
                    ..clean()
                },
                "vendor/x",
            ),
        ];
        for (before, said) in cases {
            let why = refuse(&before).expect("refused");
            assert!(why.contains(said), "{why}");
        }
    }

    #[test]
    fn the_checkout_moves_only_when_nothing_is_in_the_way() {
        let fine = After {
            branch: Some("main".into()),
            head_unchanged: true,
            files_unchanged: true,
        };
        assert_eq!(stays("main", &fine), None);
        let off = After {
            branch: None,
            ..fine.clone()
        };
        assert_eq!(stays("main", &off), Some("off_main"));
        let other = After {
            branch: Some("topic".into()),
            ..fine.clone()
        };
        assert_eq!(stays("main", &other), Some("off_main"));
        let moved = After {
            head_unchanged: false,
            ..fine.clone()
        };
        assert_eq!(stays("main", &moved), Some("head_moved"));
        let edited = After {
            files_unchanged: false,
            ..fine
        };
        assert_eq!(stays("main", &edited), Some("files_changed"));
    }

    #[test]
    fn the_checkout_detail_says_where_it_moved_or_why_it_stayed() {
        use crate::detail::Detail;
        assert_eq!(
            Checkout::of(Ok("abc")).to_json(),
            serde_json::json!({"moved": true, "commit": "abc"})
        );
        assert_eq!(
            Checkout::of(Err("files changed")).to_json(),
            serde_json::json!({"moved": false, "why": "files changed"})
        );
    }
}
