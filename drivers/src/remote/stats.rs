//! `Action::ReadStats`: what each path a change touches weighs, for `[limits]`.
//!
//! One `git diff-tree -r -z --raw --numstat --no-renames` lists every path whose content, mode
//! or presence differs, with its new blob and mode (`--raw`) and the lines it adds
//! (`--numstat`, where Git prints `-` for a file it takes as binary); one
//! `git cat-file --batch-check` gives the new blobs' sizes. Two processes however many paths.
//!
//! A submodule (mode `160000`) names a commit of another repository: it weighs nothing here,
//! and the line Git counts for it is not a line of the change.

use std::collections::{BTreeMap, BTreeSet};

use bay_core::git::Oid;
use bay_core::limits::PathStat;
use bay_core::machine::Fault;

use super::{Repo, oid};

/// The mode of a submodule entry.
const GITLINK: &str = "160000";

/// What `diff-tree --raw` says of one path's new side.
#[derive(Debug, PartialEq, Eq)]
enum After {
    Deleted,
    Submodule,
    Blob(Oid),
}

impl Repo {
    /// The stats of each path `commit` changes against `base`, sorted by path.
    pub fn read_stats(&self, base: &Oid, commit: &Oid) -> Result<Vec<PathStat>, Fault> {
        let out = self
            .git()
            .cmd([
                "diff-tree",
                "-r",
                "-z",
                "--raw",
                "--numstat",
                "--no-renames",
                base.as_str(),
                commit.as_str(),
            ])
            .run()?;
        let Diff {
            after,
            created,
            lines,
        } = parse_diff(&out.stdout)?;
        let blobs: Vec<&Oid> = after
            .values()
            .filter_map(|after| match after {
                After::Blob(blob) => Some(blob),
                After::Deleted | After::Submodule => None,
            })
            .collect();
        let sizes = self.sizes(&blobs)?;
        after
            .into_iter()
            .map(|(path, after)| {
                let counted = lines
                    .get(&path)
                    .copied()
                    .ok_or_else(|| Fault(format!("git diff-tree counted no lines for {path:?}")))?;
                let (bytes, counted) = match after {
                    After::Deleted => (None, counted),
                    After::Submodule => (Some(0), None),
                    After::Blob(blob) => {
                        let size = sizes.get(&blob).copied().ok_or_else(|| {
                            Fault(format!("git cat-file gave no size for {blob}"))
                        })?;
                        (Some(size), counted)
                    }
                };
                Ok(PathStat::new(
                    &path,
                    bytes,
                    created.contains(&path),
                    counted,
                ))
            })
            .collect()
    }

    /// The size of each blob, from one `git cat-file --batch-check`.
    fn sizes(&self, blobs: &[&Oid]) -> Result<BTreeMap<Oid, u64>, Fault> {
        if blobs.is_empty() {
            return Ok(BTreeMap::new());
        }
        let input: String = blobs.iter().map(|blob| format!("{blob}\n")).collect();
        let out = self
            .git()
            .cmd([
                "cat-file",
                "--batch-check=%(objectname) %(objecttype) %(objectsize)",
            ])
            .stdin(input)
            .text()?;
        let mut sizes = BTreeMap::new();
        for line in out.lines() {
            match line.split(' ').collect::<Vec<_>>().as_slice() {
                [name, "blob", size] => {
                    let size = size
                        .parse()
                        .map_err(|_| Fault(format!("git cat-file printed the size {size:?}")))?;
                    sizes.insert(oid(name)?, size);
                }
                _ => return Err(Fault(format!("git cat-file cannot size {line:?}"))),
            }
        }
        Ok(sizes)
    }
}

/// What `diff-tree --raw --numstat` says of each path.
#[derive(Debug, Default)]
struct Diff {
    /// Its new side, from `--raw`.
    after: BTreeMap<String, After>,
    /// The paths the base lacks, from `--raw`.
    created: BTreeSet<String>,
    /// The lines it adds and removes, from `--numstat`: `None` for a binary file.
    lines: BTreeMap<String, Option<(u64, u64)>>,
}

/// Reads `diff-tree -z` output, where both formats follow each other. A path that is not
/// UTF-8 is refused by name ([`bay_core::paths::from_git`]), never read lossily: two such
/// names could read as one and share one weight.
fn parse_diff(stdout: &[u8]) -> Result<Diff, Fault> {
    let bad = |why: String| Fault(format!("git diff-tree printed {why}"));
    let path = |raw: &[u8]| {
        bay_core::paths::from_git(raw)
            .map(str::to_owned)
            .map_err(Fault)
    };
    let mut fields = stdout.split(|&b| b == 0);
    let mut diff = Diff::default();
    while let Some(field) = fields.next() {
        if field.is_empty() {
            continue;
        }
        if let Some(meta) = field.strip_prefix(b":") {
            // `:<old mode> <new mode> <old blob> <new blob> <status>`, then the path.
            let meta = String::from_utf8_lossy(meta);
            let raw = fields
                .next()
                .ok_or_else(|| bad(format!("{meta:?} without its path")))?;
            let parts: Vec<&str> = meta.split(' ').collect();
            let [old_mode, mode, _, blob, _] = parts.as_slice() else {
                return Err(bad(format!("the entry {meta:?}")));
            };
            let raw = path(raw)?;
            if old_mode.bytes().all(|b| b == b'0') {
                diff.created.insert(raw.clone());
            }
            let side = if mode.bytes().all(|b| b == b'0') {
                After::Deleted
            } else if *mode == GITLINK {
                After::Submodule
            } else {
                After::Blob(oid(blob)?)
            };
            diff.after.insert(raw, side);
        } else {
            // `<added>\t<deleted>\t<path>`, with `-` for both when Git takes the file as binary.
            let mut parts = field.splitn(3, |&b| b == b'\t');
            let unread = || bad(format!("the count {:?}", field.escape_ascii().to_string()));
            let (Some(added), Some(removed), Some(raw)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(unread());
            };
            let count = |count: &[u8]| {
                std::str::from_utf8(count)
                    .ok()
                    .and_then(|count| count.parse::<u64>().ok())
                    .ok_or_else(unread)
            };
            let lines = match (added, removed) {
                (b"-", b"-") => None,
                (added, removed) => Some((count(added)?, count(removed)?)),
            };
            diff.lines.insert(path(raw)?, lines);
        }
    }
    Ok(diff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_and_numstat_records_are_read_together() {
        let (a, b) = ("1".repeat(40), "2".repeat(40));
        let zero = "0".repeat(40);
        let fields = [
            format!(":100644 100644 {a} {b} M"),
            "src/a.rs".into(),
            format!(":100644 000000 {a} {zero} D"),
            "gone".into(),
            format!(":000000 100644 {zero} {b} A"),
            "img.png".into(),
            format!(":000000 160000 {zero} {a} A"),
            "sub".into(),
            "2\t1\tsrc/a.rs".into(),
            "0\t3\tgone".into(),
            "-\t-\timg.png".into(),
            "1\t0\tsub".into(),
        ];
        let out = fields.join("\0") + "\0";
        let Diff {
            after,
            created,
            lines,
        } = parse_diff(out.as_bytes()).expect("well-formed");
        assert_eq!(after["src/a.rs"], After::Blob(oid(&b).expect("an id")));
        assert_eq!(after["gone"], After::Deleted);
        assert_eq!(after["sub"], After::Submodule);
        assert_eq!(lines["src/a.rs"], Some((2, 1)));
        assert_eq!(lines["gone"], Some((0, 3)));
        assert_eq!(lines["img.png"], None);
        let created: Vec<&str> = created.iter().map(String::as_str).collect();
        assert_eq!(created, ["img.png", "sub"]);
        assert!(parse_diff(b":100644\0").is_err());
        assert!(parse_diff(b"x\tonly\0").is_err());
        assert!(
            parse_diff(b"1\tx\tpath\0").is_err(),
            "a count that is no number"
        );
    }

    #[test]
    fn a_path_that_is_not_utf8_is_refused_by_name() {
        let (a, b) = ("1".repeat(40), "2".repeat(40));
        // Two names a lossy reading would make one, `caf\u{fffd}.rs`.
        let mut out = Vec::new();
        for (name, blob) in [(&b"caf\xe9.rs"[..], &a), (&b"caf\xe8.rs"[..], &b)] {
            out.extend(format!(":000000 100644 {} {blob} A\0", "0".repeat(40)).bytes());
            out.extend(name);
            out.push(0);
        }
        let Fault(why) = parse_diff(&out).expect_err("a name that is not UTF-8");
        assert!(
            why.contains("caf\\xe9.rs") && why.contains("not UTF-8"),
            "{why}"
        );
        let Fault(why) = parse_diff(b"1\t0\tcaf\xe9.rs\0").expect_err("in --numstat too");
        assert!(why.contains("caf\\xe9.rs"), "{why}");
        let text = parse_diff("1\t0\tcaf\u{e9}.rs\0".as_bytes()).expect("UTF-8");
        assert_eq!(text.lines["caf\u{e9}.rs"], Some((1, 0)));
    }
}
