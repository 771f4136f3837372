//! `Action::ReadStats` read in-process against what `git diff-tree --raw --numstat` says,
//! over repositories built with the real `git` in a working tree: every kind of change a tree
//! can hold, and line edits chosen to stress the line diff.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use bay_core::git::Oid;
use bay_core::limits::PathStat;
use bay_drivers::remote::Repo;
use support::remote::git_bytes as git;

/// A working tree with its repository, `main` checked out.
fn worktree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temp dir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    dir
}

/// Commits everything in the working tree, returning the commit.
fn commit_all(dir: &Path, message: &str) -> Oid {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
    let head = git(dir, &["rev-parse", "HEAD"]);
    Oid::parse(String::from_utf8_lossy(&head).trim()).expect("an id")
}

fn write(dir: &Path, path: &str, content: &[u8]) {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("a directory");
    std::fs::write(path, content).expect("written");
}

fn remove(dir: &Path, path: &str) {
    std::fs::remove_file(dir.join(path)).expect("removed");
}

/// Git's answer, read from `diff-tree -z --raw --numstat` here and not by the driver's code:
/// sizes from `cat-file -s`, `created` where the old mode is all zeros.
fn by_git(dir: &Path, base: &Oid, commit: &Oid) -> Vec<PathStat> {
    let out = git(
        dir,
        &[
            "diff-tree",
            "-r",
            "-z",
            "--raw",
            "--numstat",
            "--no-renames",
            base.as_str(),
            commit.as_str(),
        ],
    );
    let text = String::from_utf8(out).expect("the test's paths are UTF-8");
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    let mut raw: BTreeMap<String, (bool, Option<u64>)> = BTreeMap::new();
    let mut lines: BTreeMap<String, Option<(u64, u64)>> = BTreeMap::new();
    while let Some(field) = fields.next() {
        if let Some(meta) = field.strip_prefix(':') {
            let path = fields.next().expect("a path").to_string();
            let parts: Vec<&str> = meta.split(' ').collect();
            let (old_mode, new_mode, blob) = (parts[0], parts[1], parts[3]);
            let bytes = match new_mode {
                "000000" => None,
                "160000" => Some(0),
                _ => {
                    let size = git(dir, &["cat-file", "-s", blob]);
                    Some(
                        String::from_utf8_lossy(&size)
                            .trim()
                            .parse()
                            .expect("a size"),
                    )
                }
            };
            raw.insert(path, (old_mode == "000000", bytes));
        } else {
            let parts: Vec<&str> = field.splitn(3, '\t').collect();
            let counted = match (parts[0], parts[1]) {
                ("-", "-") => None,
                (added, removed) => Some((
                    added.parse().expect("a count"),
                    removed.parse().expect("a count"),
                )),
            };
            lines.insert(parts[2].to_string(), counted);
        }
    }
    raw.into_iter()
        .map(|(path, (created, bytes))| PathStat::new(&path, bytes, created, lines[&path]))
        .collect()
}

fn in_process(dir: &Path, base: &Oid, commit: &Oid) -> Vec<PathStat> {
    let repo = Repo::new(dir, "origin", "main").expect("a repo");
    repo.read_stats(base, commit).expect("stats read")
}

/// Lines drawn from a few repeated ones, as a deterministic generator picks them: the inputs
/// where two Myers diffs could choose different, equally short or not, edit scripts.
fn repetitive(seed: &mut u64, lines: usize) -> Vec<u8> {
    let pool = ["}\n", "\n", "a\n", "b\n", "return;\n", "    x += 1;\n", "b"];
    let mut out = Vec::new();
    for _ in 0..lines {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let line = pool[(*seed >> 33) as usize % (pool.len() - 1)];
        out.extend_from_slice(line.as_bytes());
    }
    out
}

/// Edits `text` line by line: drops, duplicates and replaces some lines.
fn edited(seed: &mut u64, text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        match (*seed >> 33) % 10 {
            0 => {}
            1 => {
                out.extend_from_slice(line);
                out.extend_from_slice(line);
            }
            2 => out.extend_from_slice(b"changed\n"),
            3 => out.extend_from_slice(b"}\n"),
            _ => out.extend_from_slice(line),
        }
    }
    out
}

#[test]
fn every_kind_of_change_is_measured_as_git_diff_tree_measures_it() {
    let dir = worktree();
    let d = dir.path();
    let large: String = (0..200_000).map(|n| format!("line {n}\n")).collect();
    write(d, "removed.txt", b"gone\nfor good\n");
    write(d, "modified.txt", b"a\nb\nc\n");
    write(d, "binary.dat", b"x\0y");
    write(d, "to-binary.txt", b"text\n");
    write(d, "empty.txt", b"");
    write(d, "emptied.txt", b"one\ntwo\n");
    write(d, "sub/dir/deep.txt", b"deep\n");
    write(d, "mode.sh", b"#!/bin/sh\n");
    write(d, "mode.bin", b"\0\0");
    write(d, "file-then-dir", b"a file\n");
    write(d, "file-then-link", b"a file\n");
    write(d, "no-newline.txt", b"one\ntwo\n");
    write(d, "large.txt", large.as_bytes());
    std::os::unix::fs::symlink("modified.txt", d.join("link")).expect("a symlink");
    let base = commit_all(d, "base");

    write(d, "added.txt", b"new\nlines\n");
    write(d, "added-empty.txt", b"");
    remove(d, "removed.txt");
    write(d, "modified.txt", b"a\nB\nc\nd\n");
    write(d, "binary.dat", b"x\0zz");
    write(d, "to-binary.txt", b"now\0binary");
    write(d, "empty.txt", b"filled\n");
    write(d, "emptied.txt", b"");
    write(d, "sub/dir/deep.txt", b"deeper\n");
    write(d, "sub/new/x.txt", b"x\n");
    for file in ["mode.sh", "mode.bin"] {
        std::fs::set_permissions(d.join(file), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    remove(d, "file-then-dir");
    write(d, "file-then-dir/inside.txt", b"inside\n");
    remove(d, "file-then-link");
    std::os::unix::fs::symlink("added.txt", d.join("file-then-link")).expect("a symlink");
    write(d, "no-newline.txt", b"one\ntwo");
    let mut lines: Vec<&str> = large.split_inclusive('\n').collect();
    for n in (0..lines.len()).step_by(997) {
        lines[n] = "edited\n";
    }
    lines.insert(5_000, "inserted\n");
    write(d, "large.txt", lines.concat().as_bytes());
    remove(d, "link");
    std::os::unix::fs::symlink("sub/dir/deep.txt", d.join("link")).expect("a symlink");
    let change = commit_all(d, "change");

    let git_says = by_git(d, &base, &change);
    let paths: Vec<&str> = git_says.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "added-empty.txt",
            "added.txt",
            "binary.dat",
            "emptied.txt",
            "empty.txt",
            "file-then-dir",
            "file-then-dir/inside.txt",
            "file-then-link",
            "large.txt",
            "link",
            "mode.bin",
            "mode.sh",
            "modified.txt",
            "no-newline.txt",
            "removed.txt",
            "sub/dir/deep.txt",
            "sub/new/x.txt",
            "to-binary.txt",
        ],
        "the repository holds every kind of change"
    );
    assert_eq!(in_process(d, &base, &change), git_says);
    assert_eq!(in_process(d, &change, &base), by_git(d, &change, &base));
    assert_eq!(in_process(d, &base, &base), []);
}

#[test]
fn line_counts_agree_with_git_on_repetitive_edits() {
    let dir = worktree();
    let d = dir.path();
    let mut seed = 17;
    let files: Vec<Vec<u8>> = (0..40)
        .map(|n| repetitive(&mut seed, 20 + n * 40))
        .collect();
    for (n, text) in files.iter().enumerate() {
        write(d, &format!("f{n:02}.txt"), text);
    }
    let base = commit_all(d, "base");
    for (n, text) in files.iter().enumerate() {
        let mut again = edited(&mut seed, text);
        if n % 3 == 0 {
            again = edited(&mut seed, &again);
        }
        if n % 5 == 0 {
            again = repetitive(&mut seed, again.len() / 4);
        }
        write(d, &format!("f{n:02}.txt"), &again);
    }
    let change = commit_all(d, "change");
    let git_says = by_git(d, &base, &change);
    assert_eq!(git_says.len(), files.len(), "every file changed");
    let ours = in_process(d, &base, &change);
    for (ours, git) in ours.iter().zip(&git_says) {
        assert_eq!(ours, git, "{}", git.path);
    }
    assert_eq!(ours.len(), git_says.len());
}

#[test]
fn a_path_that_is_not_utf8_is_refused_by_name() {
    use std::os::unix::ffi::OsStrExt;
    let dir = worktree();
    let d = dir.path();
    let base = commit_all(d, "base");
    // Two names a lossy reading would make one, `caf\u{fffd}.rs`.
    for name in [&b"caf\xe9.rs"[..], b"caf\xe8.rs"] {
        std::fs::write(d.join(std::ffi::OsStr::from_bytes(name)), name).expect("written");
    }
    let change = commit_all(d, "change");
    let repo = Repo::new(d, "origin", "main").expect("a repo");
    let bay_core::machine::Fault(why) = repo
        .read_stats(&base, &change)
        .expect_err("a name that is not UTF-8");
    assert!(
        why.contains("caf\\xe8.rs") && why.contains("not UTF-8"),
        "{why}"
    );
}

/// Where the two Myers diffs part: on long files of two repeated lines they settle on
/// different scripts (likely where each cuts its search short past a cost bound, xdiff's
/// `mxcost` and imara-diff's own; not traced). On 40 000 lines drawn from `a`/`b`, Git counts 7586 lines each way and gix
/// 7599: both are scripts from the old text to the new one, 0.2% apart. Unique lines, half
/// replaced or shuffled, and the short two-line files agree exactly.
#[test]
fn myers_counts_agree_with_git_but_on_long_files_of_few_distinct_lines() {
    let dir = worktree();
    let d = dir.path();
    let mut seed: u64 = 5;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    };
    let mut pairs = Vec::new();
    for n in [1_000usize, 10_000, 40_000] {
        let mut two = || -> String {
            (0..n)
                .map(|_| if next() % 2 == 0 { "a\n" } else { "b\n" })
                .collect()
        };
        pairs.push((two(), two()));
    }
    for n in [10_000usize, 60_000] {
        let old: String = (0..n).map(|i| format!("l{i}\n")).collect();
        let new: String = (0..n)
            .map(|i| match next() % 2 {
                0 => format!("l{i}\n"),
                _ => format!("m{}\n", next()),
            })
            .collect();
        pairs.push((old, new));
    }
    let old: String = (0..30_000).map(|i| format!("l{i}\n")).collect();
    let new: String = (0..30_000)
        .map(|i| format!("l{}\n", (i * 7919) % 30_000))
        .collect();
    pairs.push((old, new));
    for (n, (old, _)) in pairs.iter().enumerate() {
        write(d, &format!("p{n}.txt"), old.as_bytes());
    }
    let base = commit_all(d, "base");
    for (n, (_, new)) in pairs.iter().enumerate() {
        write(d, &format!("p{n}.txt"), new.as_bytes());
    }
    let change = commit_all(d, "change");
    let git_says = by_git(d, &base, &change);
    let ours = in_process(d, &base, &change);
    assert_eq!(ours.len(), pairs.len());
    for (n, (ours, git)) in ours.iter().zip(&git_says).enumerate() {
        if n != 2 {
            assert_eq!(ours, git, "{}", git.path);
            continue;
        }
        let (added, removed) = (
            ours.added_lines.expect("text"),
            ours.removed_lines.expect("text"),
        );
        assert_eq!(
            (git.added_lines, git.removed_lines),
            (Some(7586), Some(7586))
        );
        assert_eq!(
            (added, removed),
            (7599, 7599),
            "gix's script, longer than Git's"
        );
    }
}
