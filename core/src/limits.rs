//! `[limits]`: how big one change may be. A driver measures each path a change touches against
//! the change's base ([`PathStat`]); the rule that judges the measures is here, once, so that
//! `bay merge` and the runner refuse the same change in the same words (`CHANGE_TOO_LARGE`).
//!
//! The specification leaves the units of `detail.exceeded` open. Here `max` is the policy's
//! number as written, and `value` is in the same unit: MiB to one decimal for `max_file_mib`
//! (rounded up, so a file just over the cap never reads as equal to it), a count for the
//! others. `paths` are the five largest by what the cap measures: the files over
//! `max_file_mib` by size, the files that add the most lines for `max_added_lines`, and for
//! `max_files` the largest files the change leaves (a deleted file weighs nothing).

use serde::{Deserialize, Serialize};

use crate::policy::Limits;

/// One MiB, the unit of `max_file_mib`.
pub const MIB: u64 = 1024 * 1024;

/// How many paths a refusal names for each cap: enough to find what to move or split, while
/// `detail` stays small.
pub const MAX_PATHS: usize = 5;

/// One path a change touches, measured against the change's base.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct PathStat {
    pub path: String,
    /// The file's size as the change leaves it; `None` when the change deletes it, since a
    /// deleted file is not one it adds or changes.
    pub bytes: Option<u64>,
    /// Whether the base lacks it: a file the change adds, not one it changes.
    #[serde(default)]
    pub created: bool,
    /// The lines the change adds to it; `None` for a binary file, whose lines do not count.
    pub added_lines: Option<u64>,
    /// The lines the change removes from it; `None` for a binary file.
    #[serde(default)]
    pub removed_lines: Option<u64>,
}

impl PathStat {
    /// One path's measures: `lines` are the lines the change adds and removes, `None` for a
    /// binary file.
    pub fn new(path: &str, bytes: Option<u64>, created: bool, lines: Option<(u64, u64)>) -> Self {
        PathStat {
            path: path.to_owned(),
            bytes,
            created,
            added_lines: lines.map(|(added, _)| added),
            removed_lines: lines.map(|(_, removed)| removed),
        }
    }
}

/// One cap of `[limits]`, named as the policy names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cap {
    MaxFileMib,
    MaxFiles,
    MaxAddedLines,
}

/// A measure in its cap's unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Measure {
    /// Files, or lines.
    Count(u64),
    /// MiB, rounded up to a tenth.
    Mib(f64),
}

/// One cap a change is over.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Exceeded {
    pub cap: Cap,
    /// The cap, as the policy at the base sets it.
    pub max: u64,
    pub value: Measure,
    /// Up to [`MAX_PATHS`] of the largest paths, largest first.
    pub paths: Vec<String>,
}

/// Why a change is refused `CHANGE_TOO_LARGE`: every cap it is over, in the order the policy
/// table lists them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TooLarge {
    pub exceeded: Vec<Exceeded>,
}

/// The refusal's `detail`: every cap it is over.
impl crate::detail::Detail for TooLarge {}

impl Limits {
    /// Judges a change by the paths it touches, each measured against its base: `None` when
    /// it is within every cap. Caps a policy leaves out judge nothing.
    pub fn judge(&self, stats: &[PathStat]) -> Option<TooLarge> {
        let exceeded: Vec<Exceeded> = [
            self.max_file_mib.and_then(|max| over_file_size(max, stats)),
            self.max_files.and_then(|max| over_files(max, stats)),
            self.max_added_lines.and_then(|max| over_lines(max, stats)),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!exceeded.is_empty()).then_some(TooLarge { exceeded })
    }
}

fn over_file_size(max: u64, stats: &[PathStat]) -> Option<Exceeded> {
    let cap = max.saturating_mul(MIB);
    let over = largest(stats, |stat| stat.bytes.filter(|bytes| *bytes > cap));
    let (_, biggest) = over.first()?;
    let tenths = biggest.saturating_mul(10).div_ceil(MIB);
    Some(Exceeded {
        cap: Cap::MaxFileMib,
        max,
        value: Measure::Mib(tenths as f64 / 10.0),
        paths: names(&over),
    })
}

fn over_files(max: u64, stats: &[PathStat]) -> Option<Exceeded> {
    let count = u64::try_from(stats.len()).unwrap_or(u64::MAX);
    (count > max).then(|| Exceeded {
        cap: Cap::MaxFiles,
        max,
        value: Measure::Count(count),
        paths: names(&largest(stats, |stat| Some(stat.bytes.unwrap_or(0)))),
    })
}

fn over_lines(max: u64, stats: &[PathStat]) -> Option<Exceeded> {
    let added = stats
        .iter()
        .filter_map(|stat| stat.added_lines)
        .fold(0u64, u64::saturating_add);
    (added > max).then(|| Exceeded {
        cap: Cap::MaxAddedLines,
        max,
        value: Measure::Count(added),
        paths: names(&largest(stats, |stat| {
            stat.added_lines.filter(|lines| *lines > 0)
        })),
    })
}

/// The paths `measure` weighs, heaviest first (ties by path, so the answer does not depend on
/// the order the driver listed them in), at most [`MAX_PATHS`].
fn largest(stats: &[PathStat], measure: impl Fn(&PathStat) -> Option<u64>) -> Vec<(&str, u64)> {
    let mut weighed: Vec<(&str, u64)> = stats
        .iter()
        .filter_map(|stat| Some((stat.path.as_str(), measure(stat)?)))
        .collect();
    weighed.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    weighed.truncate(MAX_PATHS);
    weighed
}

fn names(weighed: &[(&str, u64)]) -> Vec<String> {
    weighed.iter().map(|(path, _)| (*path).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: u64, lines: u64) -> PathStat {
        PathStat {
            path: path.into(),
            bytes: Some(bytes),
            created: false,
            added_lines: Some(lines),
            removed_lines: Some(0),
        }
    }

    fn binary(path: &str, bytes: u64) -> PathStat {
        PathStat {
            path: path.into(),
            bytes: Some(bytes),
            created: false,
            added_lines: None,
            removed_lines: None,
        }
    }

    fn deleted(path: &str) -> PathStat {
        PathStat {
            path: path.into(),
            bytes: None,
            created: false,
            added_lines: Some(0),
            removed_lines: Some(1),
        }
    }

    fn caps(max_file_mib: Option<u64>, max_files: Option<u64>, lines: Option<u64>) -> Limits {
        Limits {
            max_file_mib,
            max_files,
            max_added_lines: lines,
            max_waiting_approvals: None,
        }
    }

    #[test]
    fn no_cap_judges_nothing() {
        let huge = [file("a", u64::MAX, u64::MAX), binary("b", u64::MAX)];
        assert_eq!(Limits::default().judge(&huge), None);
    }

    #[test]
    fn a_file_over_max_file_mib_is_named_with_its_size_rounded_up() {
        let limits = caps(Some(10), None, None);
        let at_cap = [file("a.txt", 10 * MIB, 1)];
        assert_eq!(limits.judge(&at_cap), None, "the cap itself is allowed");
        let stats = [
            file("small.txt", 100, 3),
            binary("assets/intro.mp4", 48 * MIB),
            file("just-over.txt", 10 * MIB + 1, 2),
        ];
        let over = limits.judge(&stats).expect("two files are over 10 MiB");
        assert_eq!(
            over.exceeded,
            vec![Exceeded {
                cap: Cap::MaxFileMib,
                max: 10,
                value: Measure::Mib(48.0),
                paths: vec!["assets/intro.mp4".into(), "just-over.txt".into()],
            }]
        );
        let just = limits.judge(&[file("x", 10 * MIB + 1, 0)]).expect("over");
        assert_eq!(
            just.exceeded[0].value,
            Measure::Mib(10.1),
            "never 10.0, which would read as equal to the cap"
        );
    }

    #[test]
    fn max_files_counts_every_path_touched_deleted_ones_too() {
        let limits = caps(None, Some(2), None);
        let stats = [file("a", 1, 1), deleted("gone"), binary("b", 50)];
        let over = limits.judge(&stats).expect("three paths, over 2");
        assert_eq!(
            over.exceeded,
            vec![Exceeded {
                cap: Cap::MaxFiles,
                max: 2,
                value: Measure::Count(3),
                paths: vec!["b".into(), "a".into(), "gone".into()],
            }]
        );
        assert_eq!(limits.judge(&stats[..2]), None);
    }

    #[test]
    fn max_added_lines_sums_the_lines_and_a_binary_file_adds_none() {
        let limits = caps(None, None, Some(10));
        let stats = [
            file("a.rs", 100, 6),
            file("b.rs", 100, 5),
            binary("c.png", 10_000),
        ];
        let over = limits.judge(&stats).expect("11 lines, over 10");
        assert_eq!(
            over.exceeded,
            vec![Exceeded {
                cap: Cap::MaxAddedLines,
                max: 10,
                value: Measure::Count(11),
                paths: vec!["a.rs".into(), "b.rs".into()],
            }]
        );
        let images = [binary("a.png", 5 * MIB), binary("b.png", 5 * MIB)];
        assert_eq!(limits.judge(&images), None, "binary files add no lines");
    }

    #[test]
    fn a_binary_file_is_judged_only_by_its_size() {
        let limits = caps(Some(1), None, Some(1));
        assert_eq!(limits.judge(&[binary("small.bin", MIB)]), None);
        let over = limits.judge(&[binary("big.bin", 2 * MIB)]).expect("over");
        assert_eq!(over.exceeded.len(), 1);
        assert_eq!(over.exceeded[0].cap, Cap::MaxFileMib);
    }

    #[test]
    fn a_deleted_file_is_not_judged_by_size() {
        let limits = caps(Some(1), None, None);
        assert_eq!(limits.judge(&[deleted("huge.bin")]), None);
    }

    #[test]
    fn at_most_five_of_the_largest_paths_are_named_largest_first() {
        let limits = caps(Some(1), Some(1), Some(1));
        let stats: Vec<PathStat> = (1..=8u64)
            .map(|n| file(&format!("f{n}"), n * MIB + 1, n))
            .collect();
        let over = limits.judge(&stats).expect("over every cap");
        let caps: Vec<Cap> = over.exceeded.iter().map(|e| e.cap).collect();
        assert_eq!(caps, [Cap::MaxFileMib, Cap::MaxFiles, Cap::MaxAddedLines]);
        for exceeded in &over.exceeded {
            assert_eq!(
                exceeded.paths,
                ["f8", "f7", "f6", "f5", "f4"],
                "{exceeded:?}"
            );
        }
        assert_eq!(over.exceeded[0].value, Measure::Mib(8.1));
        assert_eq!(over.exceeded[1].value, Measure::Count(8));
        assert_eq!(over.exceeded[2].value, Measure::Count(36));
    }

    #[test]
    fn equal_paths_are_named_in_path_order_whatever_the_input_order() {
        let limits = caps(None, Some(1), None);
        let forward = [file("b", 5, 0), file("a", 5, 0)];
        let backward = [file("a", 5, 0), file("b", 5, 0)];
        assert_eq!(limits.judge(&forward), limits.judge(&backward));
        assert_eq!(
            limits.judge(&forward).expect("over").exceeded[0].paths,
            ["a", "b"]
        );
    }

    #[test]
    fn the_detail_names_each_cap_its_max_the_value_and_the_paths() {
        let limits = caps(Some(10), None, Some(1));
        let stats = [binary("assets/intro.mp4", 48 * MIB), file("a.rs", 9, 3)];
        let detail = crate::detail::Detail::to_json(&limits.judge(&stats).expect("over"));
        assert_eq!(
            detail,
            serde_json::json!({"exceeded": [
                {"cap": "max_file_mib", "max": 10, "value": 48.0, "paths": ["assets/intro.mp4"]},
                {"cap": "max_added_lines", "max": 1, "value": 3, "paths": ["a.rs"]},
            ]})
        );
    }
}
