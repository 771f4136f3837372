//! Writing a check's files out of Git within the check's `materialize_timeout_s`: the part of
//! the candidate's tree it sees, the `adapter` paths of the base, and, for a check that reads
//! history, a Git directory of its own that reads the repository's objects.
//!
//! Files go through a temporary index (`read-tree`, then `checkout-index`) instead of `git
//! archive`, so no archive of the whole tree is packed and unpacked, only the files the check
//! sees are written, and the repository's own index and work tree are never touched.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bay_core::check::Shown;
use bay_core::git::Oid;
use bay_core::paths::normalize;

use super::layout::CheckDirs;
use crate::git::{Git, GitError};

/// Copies one check's files, in the time the copy may take.
pub(super) struct Copier<'a> {
    /// The repository, by its common Git directory.
    repo: Git,
    git_dir: &'a Path,
    dirs: &'a CheckDirs,
    /// When the copy must be done; `None` for a limit too far off to be a moment.
    until: Option<Instant>,
    limit_s: u64,
}

impl<'a> Copier<'a> {
    /// A copy into `dirs` from the repository at `git_dir`, which must end within `limit_s`
    /// seconds from now.
    pub(super) fn new(git_dir: &'a Path, dirs: &'a CheckDirs, limit_s: u64) -> Copier<'a> {
        Copier {
            repo: Git::git_dir(git_dir),
            git_dir,
            dirs,
            until: Instant::now().checked_add(Duration::from_secs(limit_s)),
            limit_s,
        }
    }

    /// Writes what the check sees of `candidate`'s tree into `dirs.tree`.
    pub(super) fn candidate_tree(&self, candidate: &Oid, shown: &Shown) -> Result<(), String> {
        let index = self.dirs.tree_index();
        let doing = |what: &str| format!("could not {what} the tree of the candidate {candidate}");
        self.git(
            &self.repo,
            Some(&index),
            ["read-tree".into(), candidate.as_str().into()],
            None,
        )
        .map_err(|e| format!("{}: {e}", doing("read")))?;
        let written = match shown {
            Shown::Whole => self.check_out(&index, &self.dirs.tree, None),
            Shown::Part { .. } => {
                let listed = self
                    .list(&index, &[])
                    .map_err(|e| format!("{}: {e}", doing("list")))?;
                let files = staged_files(&listed)
                    .into_iter()
                    .filter(|file| std::str::from_utf8(file).is_ok_and(|path| shown.shows(path)))
                    .collect();
                self.check_out(&index, &self.dirs.tree, Some(files))
            }
        };
        written.map_err(|e| format!("{}: {e}", doing("write")))
    }

    /// Writes the `adapter` paths of `base` into `dirs.adapter`: an entry ending in `/` is a
    /// whole directory, any other entry one file.
    ///
    /// They come from the base and never from the candidate, so a change cannot rewrite the
    /// check that judges it. An entry the base does not hold is an error, named: a check run
    /// without one of the files that decide it would judge by other rules than the policy says.
    /// Lays the `adapter` paths of `base` out in the check's adapter directory, and returns
    /// each file written with its blob id, `(path, blob)`, for the check's definition.
    pub(super) fn adapter_paths(
        &self,
        base: &Oid,
        adapter: &[String],
    ) -> Result<Vec<(String, String)>, String> {
        let index = self.dirs.adapter_index();
        self.git(
            &self.repo,
            Some(&index),
            ["read-tree".into(), base.as_str().into()],
            None,
        )
        .map_err(|e| format!("could not read the tree of the base {base}: {e}"))?;

        let entries: Vec<(String, bool)> = adapter
            .iter()
            .map(|entry| (normalize(entry), entry.ends_with('/')))
            .collect();
        let pathspecs: Vec<&str> = entries.iter().map(|(path, _)| path.as_str()).collect();
        let listed = self
            .list(&index, &pathspecs)
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
        let blobs = staged_blobs(&listed)
            .into_iter()
            .filter(|(path, _)| chosen.contains(path))
            .map(|(path, blob)| (String::from_utf8_lossy(path).into_owned(), blob))
            .collect();
        self.check_out(&index, &self.dirs.adapter, Some(chosen))
            .map_err(|e| format!("could not write the adapter paths of the base {base}: {e}"))?;
        Ok(blobs)
    }

    /// Makes `dirs.git`, an empty Git directory of the repository's object format that reads
    /// every object of the repository through `objects/info/alternates`, and returns the object
    /// store it reads, which the sandbox binds read-only beside it.
    ///
    /// The check reads history there and nothing else of the repository: no config, no hooks,
    /// no refs, no index.
    pub(super) fn history(&self) -> Result<PathBuf, String> {
        let cannot = |e: &dyn std::fmt::Display| {
            format!("could not make the Git directory that reads history: {e}")
        };
        let format = self
            .git(
                &self.repo,
                None,
                ["rev-parse".into(), "--show-object-format".into()],
                None,
            )
            .map_err(|e| cannot(&e))?;
        let format = String::from_utf8_lossy(&format).trim().to_owned();
        self.git(
            &Git::git_dir(&self.dirs.git),
            None,
            [
                "init".into(),
                "--bare".into(),
                "--quiet".into(),
                "--template=".into(),
                format!("--object-format={format}").into(),
            ],
            None,
        )
        .map_err(|e| cannot(&e))?;
        let objects = self.git_dir.join("objects");
        let info = self.dirs.git.join("objects").join("info");
        std::fs::create_dir_all(&info).map_err(|e| cannot(&e))?;
        let mut alternates = objects.as_os_str().as_encoded_bytes().to_vec();
        alternates.push(b'\n');
        std::fs::write(info.join("alternates"), alternates).map_err(|e| cannot(&e))?;
        Ok(objects)
    }

    /// `ls-files -z --stage` of `index`, limited to the literal `pathspecs` when there are any.
    fn list(&self, index: &Path, pathspecs: &[&str]) -> Result<Vec<u8>, String> {
        let mut args: Vec<OsString> = ["--literal-pathspecs", "ls-files", "-z", "--stage", "--"]
            .into_iter()
            .map(OsString::from)
            .collect();
        args.extend(pathspecs.iter().map(OsString::from));
        self.git(&self.repo, Some(index), args, None)
    }

    /// Writes `files` of `index` (every file, for `None`) under `dir`.
    fn check_out(&self, index: &Path, dir: &Path, files: Option<Vec<&[u8]>>) -> Result<(), String> {
        let mut work_tree = OsString::from("--work-tree=");
        work_tree.push(dir);
        let mut args = vec![work_tree, "checkout-index".into(), "--force".into()];
        let stdin = match files {
            None => {
                args.push("--all".into());
                None
            }
            Some(files) => {
                args.extend(["-z".into(), "--stdin".into()]);
                let mut stdin = Vec::new();
                for file in files {
                    stdin.extend_from_slice(file);
                    stdin.push(0);
                }
                Some(stdin)
            }
        };
        self.git(&self.repo, Some(index), args, stdin).map(drop)
    }

    /// Runs one Git call, with `index` as its index if given, in the time the copy has left, and returns
    /// its stdout. Running out of time is named by the policy key that set the limit.
    fn git(
        &self,
        git: &Git,
        index: Option<&Path>,
        args: impl IntoIterator<Item = OsString>,
        stdin: Option<Vec<u8>>,
    ) -> Result<Vec<u8>, String> {
        let over = || {
            format!(
                "copying the candidate for the check ran past its materialize_timeout_s of {} s \
                 and was stopped; raise materialize_timeout_s, or give the check less of the \
                 tree with paths or materialize = \"changed\"",
                self.limit_s
            )
        };
        let left = match self.until {
            Some(until) => until
                .checked_duration_since(Instant::now())
                .filter(|left| !left.is_zero())
                .ok_or_else(over)?,
            None => Duration::MAX,
        };
        let mut call = git.cmd(args).timeout(left);
        if let Some(index) = index {
            call = call.env("GIT_INDEX_FILE", index);
        }
        if let Some(stdin) = stdin {
            call = call.stdin(stdin);
        }
        match call.run() {
            Ok(out) => Ok(out.stdout),
            Err(GitError::TimedOut { .. }) => Err(over()),
            Err(error) => Err(error.to_string()),
        }
    }
}

/// The paths of `ls-files -z --stage` output, as bytes (a file name need not be UTF-8),
/// without submodules, which have no files to copy.
/// Each file of an `ls-files -z --stage` listing with its blob id.
fn staged_blobs(listed: &[u8]) -> Vec<(&[u8], String)> {
    listed
        .split(|b| *b == 0)
        .filter_map(|record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            let meta = String::from_utf8_lossy(&record[..tab]);
            let blob = meta.split(' ').nth(1)?.to_owned();
            Some((&record[tab + 1..], blob))
        })
        .collect()
}

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
