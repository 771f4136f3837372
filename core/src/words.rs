//! The Git words a person never reads in bay's plain sentence, and the check that keeps them out.
//!
//! `say` is written for someone who has never used Git, so it talks about saved versions and
//! folders, not commits and views. This table is the one list of those words: `say` is tested
//! against it, and `bay help --json` prints it under `words`, so the program and its docs cannot
//! drift apart.
//!
//! The check matches whole words, never letters inside another word. Each entry lists the forms
//! it stands for; a form is caught in any letter case, alone or as part of a hyphenated or
//! snake_case name (`merge-tree`, `main_commit`). Words that only share letters with an entry
//! are different words and pass: `refresh`, `refer`, `review`, `preview`, `overview`,
//! `committee`, `commitment`, `merganser`, `viewpoint`. `commitment` is the one close call: it
//! grows from "commit", but it means a promise, not a saved version, and bay's talks use it in
//! that sense (`--commitment`).

use serde::Serialize;

/// One word bay never says in a plain sentence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Word {
    /// The Git word, as the table lists it.
    pub never: &'static str,
    /// The word `say` uses in its place.
    pub instead: &'static str,
    /// What the word means, for a person who has not met it.
    pub meaning: &'static str,
    /// Every form the check catches, lower-case, the listed word first. An explicit list rather
    /// than a stemmer: it says exactly what is caught, and `review` never looks like `view`.
    pub forms: &'static [&'static str],
}

/// The words a person never sees, in the order the docs list them.
pub static WORDS: [Word; 7] = [
    Word {
        never: "branch",
        instead: "copy",
        meaning: "A line of the project's history that grows apart from main. bay gives each \
                  change its own, so nobody has to make one.",
        forms: &["branch", "branches", "branched", "branching"],
    },
    Word {
        never: "commit",
        instead: "saved version",
        meaning: "A snapshot of every file at one moment, kept for good in the project's \
                  history.",
        forms: &[
            "commit",
            "commits",
            "committed",
            "committing",
            "committer",
            "committers",
            "uncommitted",
            "recommit",
            "recommits",
            "recommitted",
        ],
    },
    Word {
        never: "merge",
        instead: "combine",
        meaning: "Joining two sets of edits to the same files into one.",
        forms: &[
            "merge",
            "merges",
            "merged",
            "merging",
            "merger",
            "mergers",
            "mergeable",
            "unmerged",
            "unmergeable",
            "remerge",
            "remerged",
        ],
    },
    Word {
        never: "trunk",
        instead: "main",
        meaning: "The shared version of the project that every finished change is added to.",
        forms: &["trunk", "trunks"],
    },
    Word {
        never: "rebase",
        instead: "update",
        meaning: "Moving a change onto main's newest files, so that it builds on the latest \
                  work.",
        forms: &["rebase", "rebases", "rebased", "rebasing", "unrebased"],
    },
    Word {
        never: "ref",
        instead: "name",
        meaning: "A label in the project's history that points at one of bay's records.",
        forms: &[
            "ref",
            "refs",
            "reference",
            "references",
            "referenced",
            "referencing",
            "refname",
            "refnames",
            "refspec",
            "refspecs",
        ],
    },
    Word {
        never: "view",
        instead: "folder",
        meaning: "The folder bay sets up for one change, with only the files that change works \
                  on.",
        forms: &["view", "views", "viewed", "viewing", "viewer", "viewers"],
    },
];

/// The listed word (`merge`, `ref`, ...) of the first form of any entry in `sentence`, if any.
///
/// Words are runs of letters: digits, spaces, punctuation, `-` and `_` all end a word, so
/// `merge-tree` and `main_commit` are caught while `refresh` is not.
pub fn forbidden_word(sentence: &str) -> Option<&'static str> {
    sentence
        .split(|c: char| !c.is_alphabetic())
        .filter(|word| !word.is_empty())
        .find_map(|word| listed(&word.to_lowercase()))
}

/// The listed word that `word` (lower-case, letters only) is a form of.
fn listed(word: &str) -> Option<&'static str> {
    WORDS
        .iter()
        .find(|entry| entry.forms.contains(&word))
        .map(|entry| entry.never)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catches_every_listed_form_in_any_case_and_context() {
        for entry in &WORDS {
            assert_eq!(
                entry.forms.first(),
                Some(&entry.never),
                "the listed word comes first"
            );
            for form in entry.forms {
                assert_eq!(forbidden_word(form), Some(entry.never), "{form}");
                let upper = form.to_uppercase();
                assert_eq!(forbidden_word(&upper), Some(entry.never), "{upper}");
                let in_sentence = format!("Then it was {form}, sadly.");
                assert_eq!(
                    forbidden_word(&in_sentence),
                    Some(entry.never),
                    "{in_sentence}"
                );
            }
        }
    }

    #[test]
    fn catches_the_inflections_people_write() {
        for (text, word) in [
            ("Merged into main.", "merge"),
            ("It is merging now.", "merge"),
            ("Two commits.", "commit"),
            ("All branches.", "branch"),
            ("Some refs moved.", "ref"),
            ("Two views.", "view"),
            ("It rebased.", "rebase"),
            ("Still unmerged.", "merge"),
            ("A reference.", "ref"),
            ("Uncommitted edits.", "commit"),
            ("Ran merge-tree.", "merge"),
            ("Read main_commit.", "commit"),
            ("The main's trunk.", "trunk"),
            ("A branch's tip.", "branch"),
        ] {
            assert_eq!(forbidden_word(text), Some(word), "{text}");
        }
    }

    #[test]
    fn leaves_words_that_only_share_letters() {
        for text in [
            "Refresh the folder, then review and preview it.",
            "The committee made a commitment.",
            "An overview from my viewpoint; I refer to it.",
            "A merganser swam by the trunkless tree.",
            "Refuse, reflect, refund, prefix, emerge, submerged.",
            "Save again once it is combined into main.",
            "",
        ] {
            assert_eq!(forbidden_word(text), None, "{text}");
        }
    }

    #[test]
    fn reports_the_first_word_in_the_sentence() {
        assert_eq!(forbidden_word("A view of a commit."), Some("view"));
    }

    #[test]
    fn forms_are_lower_case_letters_and_unique() {
        let mut seen = std::collections::BTreeSet::new();
        for entry in &WORDS {
            assert!(!entry.instead.is_empty() && !entry.meaning.is_empty());
            for form in entry.forms {
                assert!(form.chars().all(|c| c.is_ascii_lowercase()), "{form}");
                assert!(seen.insert(*form), "{form} is listed twice");
            }
        }
    }
}
