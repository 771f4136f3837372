//! Writing a check's files out of Git: the candidate's whole tree, and the `adapter` paths of
//! the base.
//!
//! Both go through a temporary index (`read-tree`, then `checkout-index`) instead of `git
//! archive`, so no archive of the whole tree is packed and unpacked, and the repository's own
//! index and work tree are never touched.

use std::ffi::OsString;
use std::path::Path;

use bay_core::git::Oid;

use super::layout::CheckDirs;

/// Writes the tree of `candidate` into `dirs.tree`.
pub(super) fn candidate_tree(
    git_dir: &Path,
    dirs: &CheckDirs,
    candidate: &Oid,
) -> Result<(), String> {
    let index = dirs.tree_index();
    git(
        git_dir,
        &index,
        None,
        &[OsString::from("read-tree"), candidate.as_str().into()],
        None,
    )
    .map_err(|e| format!("could not read the tree of the candidate {candidate}: {e}"))?;
    git(
        git_dir,
        &index,
        Some(&dirs.tree),
        &["checkout-index".into(), "--all".into(), "--force".into()],
        None,
    )
    .map_err(|e| format!("could not write the tree of the candidate {candidate}: {e}"))?;
    Ok(())
}

/// Writes the `adapter` paths of `base` into `dirs.adapter`: an entry ending in `/` is a whole
/// directory, any other entry one file.
///
/// They come from the base and never from the candidate, so a change cannot rewrite the check
/// that judges it. An entry the base does not hold is an error, named: a check run without one
/// of the files that decide it would judge by other rules than the policy says.
pub(super) fn adapter_paths(
    git_dir: &Path,
    dirs: &CheckDirs,
    base: &Oid,
    adapter: &[String],
) -> Result<(), String> {
    let index = dirs.adapter_index();
    git(
        git_dir,
        &index,
        None,
        &["read-tree".into(), base.as_str().into()],
        None,
    )
    .map_err(|e| format!("could not read the tree of the base {base}: {e}"))?;

    let mut list: Vec<OsString> = ["--literal-pathspecs", "ls-files", "-z", "--stage", "--"]
        .into_iter()
        .map(OsString::from)
        .collect();
    let entries: Vec<(String, bool)> = adapter
        .iter()
        .map(|entry| (normalize(entry), entry.ends_with('/')))
        .collect();
    list.extend(entries.iter().map(|(path, _)| OsString::from(path)));
    let listed = git(git_dir, &index, None, &list, None)
        .map_err(|e| format!("could not list the adapter paths of the base {base}: {e}"))?;

    let files = staged_files(&listed);
    let mut chosen: Vec<&[u8]> = Vec::new();
    for (entry, (path, is_dir)) in adapter.iter().zip(&entries) {
        let before = chosen.len();
        for file in &files {
            let wanted = if *is_dir {
                file.strip_prefix(path.as_bytes())
                    .is_some_and(|rest| rest.first() == Some(&b'/'))
            } else {
                *file == path.as_bytes()
            };
            if wanted {
                chosen.push(file);
            }
        }
        if chosen.len() == before {
            let kind = if *is_dir { "directory" } else { "file" };
            return Err(format!(
                "the adapter path {entry:?} is not a {kind} in the base {base}, so the check \
                 cannot run as the policy says"
            ));
        }
    }
    chosen.sort_unstable();
    chosen.dedup();

    let mut stdin = Vec::new();
    for file in chosen {
        stdin.extend_from_slice(file);
        stdin.push(0);
    }
    git(
        git_dir,
        &index,
        Some(&dirs.adapter),
        &[
            "checkout-index".into(),
            "--force".into(),
            "-z".into(),
            "--stdin".into(),
        ],
        Some(stdin),
    )
    .map_err(|e| format!("could not write the adapter paths of the base {base}: {e}"))?;
    Ok(())
}

/// The paths of `ls-files -z --stage` output, as bytes (a file name need not be UTF-8),
/// without submodules, which have no files to copy.
fn staged_files(listed: &[u8]) -> Vec<&[u8]> {
    listed
        .split(|b| *b == 0)
        .filter_map(|record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            let (meta, path) = (&record[..tab], &record[tab + 1..]);
            (!meta.starts_with(b"160000 ")).then_some(path)
        })
        .collect()
}

/// A repository path without empty and `.` parts, as the policy compares them: `./a//b/` is
/// `a/b`.
pub(super) fn normalize(path: &str) -> String {
    path.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/")
}

/// Variables a parent Git process (a hook, an alias) may have set, which would point Git at
/// another repository or object store than the one named here.
const LOCATING_VARS: [&str; 7] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// Runs `git --git-dir=<git_dir> [--work-tree=<work_tree>] <args>` with `index` as its index
/// and returns its stdout; the error holds its stderr.
fn git(
    git_dir: &Path,
    index: &Path,
    work_tree: Option<&Path>,
    args: &[OsString],
    stdin: Option<Vec<u8>>,
) -> Result<Vec<u8>, String> {
    let mut git_dir_flag = OsString::from("--git-dir=");
    git_dir_flag.push(git_dir);
    let mut full: Vec<OsString> = vec![git_dir_flag];
    if let Some(work_tree) = work_tree {
        let mut flag = OsString::from("--work-tree=");
        flag.push(work_tree);
        full.push(flag);
    }
    full.extend(args.iter().cloned());
    let mut command = duct::cmd("git", full)
        .env("LC_ALL", "C")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_INDEX_FILE", index);
    for var in LOCATING_VARS {
        command = command.env_remove(var);
    }
    command = command.stdout_capture().stderr_capture().unchecked();
    command = match stdin {
        Some(bytes) => command.stdin_bytes(bytes),
        None => command.stdin_null(),
    };
    let out = command
        .run()
        .map_err(|e| format!("git could not be started: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        Err(format!("git ended with {}: {}", out.status, said.trim()))
    }
}
