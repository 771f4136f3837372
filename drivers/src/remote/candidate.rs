//! `Action::BuildCandidate`: merge a draft onto main with `git merge-tree --write-tree` (or,
//! for a draft made on main as it stands, take the draft's tree), and write the candidate
//! commit with main as its only parent.
//!
//! `merge-tree` exits 0 for a clean merge and 1 for conflicts, but it also exits 1, with
//! nothing on stdout, when it cannot read an argument; so a conflict is believed only when
//! the output names conflicted paths. Anything else is a fault, never a conflict: a conflict
//! sends the change back to its agent, a fault is retried. A draft or merge base that is no
//! commit here is neither: the request names what the remote does not hold (`Missing`).

use bay_core::git::{Oid, refs};
use bay_core::machine::{BuildResult, CandidateSpec, Fault};

use std::path::Path;

use super::{Repo, oid};
use crate::git::Git;
use crate::reader::Object;
use crate::sign::{self, SigningKey};

impl Repo {
    pub fn build_candidate(&self, spec: &CandidateSpec) -> Result<BuildResult, Fault> {
        // What the request names must be commits here: the fetched chain keeps both
        // reachable, so one that is not is a record no retry can build.
        let named = [spec.draft.clone(), spec.merge_base.clone()];
        let names: Vec<String> = named.iter().map(Oid::to_string).collect();
        let missing: Vec<Oid> = named
            .into_iter()
            .zip(self.reader.read(&names)?)
            .filter(|(_, object)| !matches!(object, Object::Found { kind, .. } if kind == "commit"))
            .map(|(oid, _)| oid)
            .collect();
        if !missing.is_empty() {
            return Ok(BuildResult::Missing { commits: missing });
        }
        let trees = self.read_trees(&[spec.base.clone(), spec.draft.clone()])?;
        let [base_tree, draft_tree] = <[Oid; 2]>::try_from(trees)
            .map_err(|_| Fault("reading two trees did not give two".into()))?;
        // A draft made on main as it stands merges to its own tree, with nothing to conflict:
        // a three-way merge whose one side is the base takes the other side whole. Git is
        // asked only when main has moved since.
        let tree = if spec.merge_base == spec.base {
            draft_tree
        } else {
            let merged = merge_tree(&self.git(), &spec.merge_base, &spec.base, &spec.draft)?;
            if !merged.conflicts.is_empty() {
                return Ok(BuildResult::Conflict {
                    paths: merged.conflicts,
                });
            }
            merged.tree
        };
        let changed_paths = crate::trees::changed_paths(&self.reader, &base_tree, &tree)?;
        let mut commit = self.commit_tree(&tree, &[&spec.base], &spec.message)?;
        if let Some(key) = &spec.sign {
            commit = self.sign_commit(&commit, key)?;
        }
        // Local only: keeps the candidate from garbage collection while its operation runs.
        let inflight = refs::inflight(&spec.candidate.op);
        if !self.set_local(&[(inflight.clone(), Some(commit.clone()))], false) {
            self.git()
                .cmd([
                    "update-ref",
                    "-m",
                    "bay: candidate",
                    &inflight,
                    commit.as_str(),
                ])
                .run()?;
        }
        Ok(BuildResult::Clean {
            commit,
            tree,
            base_tree,
            changed_paths,
        })
    }
}

impl Repo {
    /// The commit `oid` signed as Git signs commits with the private key at `key`: a new
    /// commit, the same but for its `gpgsig` header.
    fn sign_commit(&self, commit: &Oid, key: &str) -> Result<Oid, Fault> {
        let key = SigningKey::load(Path::new(key))
            .map_err(|why| Fault(format!("bay.executorKey: {why}")))?;
        let raw = self
            .read_commits(std::slice::from_ref(commit))?
            .pop()
            .ok_or_else(|| Fault(format!("no commit {commit} to sign")))?;
        let signed = sign::signed_commit(&key, &raw).map_err(Fault)?;
        let signed = self
            .git()
            .cmd(["hash-object", "-t", "commit", "-w", "--stdin"])
            .stdin(signed.into_bytes())
            .text()?;
        oid(&signed)
    }
}

/// What `git merge-tree --write-tree` gives: the merged tree (with conflict markers in the
/// files that conflict) and the conflicted paths, empty for a clean merge.
#[derive(Debug)]
pub struct MergeTree {
    pub tree: Oid,
    pub conflicts: Vec<String>,
    /// The conflicted entries, each side of each path as Git lists it.
    pub stages: Vec<Stage>,
}

/// One side of a conflicted path: `<mode> <oid> <stage>\t<path>`, stage 1 the merge base, 2
/// ours, 3 theirs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    pub mode: String,
    pub blob: Oid,
    pub stage: u8,
    pub path: String,
}

/// `git merge-tree --write-tree -z --merge-base=<base> <ours> <theirs>`.
///
/// `merge-tree` exits 1 for conflicts, and also, with nothing on stdout, when it cannot read
/// an argument; so a conflict is believed only when the output names conflicted paths.
/// Anything else is a fault, never a conflict: a conflict sends the change back to its
/// agent, a fault is retried.
pub fn merge_tree(git: &Git, base: &Oid, ours: &Oid, theirs: &Oid) -> Result<MergeTree, Fault> {
    let out = git
        .cmd([
            "merge-tree",
            "--write-tree",
            "-z",
            &format!("--merge-base={base}"),
            ours.as_str(),
            theirs.as_str(),
        ])
        .output()?;
    let failed = |why: &str| {
        Fault(format!(
            "git merge-tree of {theirs} onto {ours} {why}: {}",
            crate::git::tail(out.stderr.as_bytes())
        ))
    };
    let first = out.stdout.split(|&b| b == 0).next().unwrap_or_default();
    let tree = Oid::parse(&String::from_utf8_lossy(first));
    match (out.code, tree) {
        (Some(0), Ok(tree)) => Ok(MergeTree {
            tree,
            conflicts: Vec::new(),
            stages: Vec::new(),
        }),
        (Some(1), Ok(tree)) => {
            let conflicts = conflicted_paths(&out.stdout, &[ours, theirs])?;
            if conflicts.is_empty() {
                Err(failed("failed without naming a conflict"))
            } else {
                let stages = conflicted_stages(&out.stdout);
                Ok(MergeTree {
                    tree,
                    conflicts,
                    stages,
                })
            }
        }
        (Some(0 | 1), Err(_)) => Err(failed("printed no tree")),
        (Some(code), _) => Err(failed(&format!("failed (exit {code})"))),
        (None, _) => Err(failed("was ended by a signal")),
    }
}

/// The conflicted entries of `merge-tree --write-tree -z` output, up to the empty field that
/// starts the messages; an entry that does not parse is left out.
fn conflicted_stages(stdout: &[u8]) -> Vec<Stage> {
    stdout
        .split(|&b| b == 0)
        .skip(1)
        .take_while(|field| !field.is_empty())
        .filter_map(|field| {
            let field = std::str::from_utf8(field).ok()?;
            let (head, path) = field.split_once('\t')?;
            let mut words = head.split(' ');
            let (mode, blob, stage) = (words.next()?, words.next()?, words.next()?);
            Some(Stage {
                mode: mode.to_string(),
                blob: Oid::parse(blob).ok()?,
                stage: stage.parse().ok()?,
                path: path.to_string(),
            })
        })
        .collect()
}

/// The conflicted paths in `merge-tree --write-tree -z` output: the paths of the conflicted
/// entries (`<mode> <oid> <stage>\t<path>`), and the paths of the messages whose type is a
/// conflict (a conflict can be reported without an entry). Each once, sorted.
///
/// In a file/directory conflict Git moves the file aside to `<path>~<side>`, naming the side
/// by the id it was given: that name is no path of either side, so it is reported as `<path>`.
///
/// A path that is not UTF-8 is refused by name ([`bay_core::paths::from_git`]): read lossily,
/// two conflicted names could be reported as one.
fn conflicted_paths(stdout: &[u8], sides: &[&Oid]) -> Result<Vec<String>, Fault> {
    let path = |raw: &[u8]| {
        bay_core::paths::from_git(raw)
            .map(str::to_owned)
            .map_err(Fault)
    };
    let mut fields = stdout.split(|&b| b == 0);
    let mut paths = Vec::new();
    let tree = fields.next().map(String::from_utf8_lossy);
    if tree.is_none_or(|tree| Oid::parse(&tree).is_err()) {
        return Ok(paths);
    }
    // Conflicted entries, up to the empty field that starts the messages.
    for field in fields.by_ref() {
        if field.is_empty() {
            break;
        }
        if let Some(at) = field.iter().position(|&b| b == b'\t') {
            paths.push(path(&field[at + 1..])?);
        }
    }
    // Messages: `<count>`, that many paths, the type, the text.
    while let Some(count) = fields.next() {
        let Some(count) = std::str::from_utf8(count)
            .ok()
            .and_then(|count| count.parse::<usize>().ok())
        else {
            break;
        };
        let named: Vec<&[u8]> = fields.by_ref().take(count).collect();
        let kind = fields.next().unwrap_or_default();
        let _text = fields.next();
        if kind.starts_with(b"CONFLICT") {
            for raw in named {
                paths.push(path(raw)?);
            }
        }
    }
    for path in &mut paths {
        for side in sides {
            if let Some(moved) = path.strip_suffix(&format!("~{side}")) {
                *path = moved.to_string();
            }
        }
    }
    paths.sort();
    paths.dedup();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_are_read_from_entries_and_messages() {
        let tree = "5".repeat(40);
        let out = format!(
            "{tree}\0100644 de98 1\tf\0100644 4f21 2\tf\0100644 bdfb 3\tf\0\0\
             1\0f\0Auto-merging\0Auto-merging f\n\0\
             2\0a\0b\0CONFLICT (rename/rename)\0CONFLICT: ...\n\0"
        );
        assert_eq!(
            conflicted_paths(out.as_bytes(), &[]).expect("paths"),
            vec!["a", "b", "f"]
        );
        let (one, two) = ("1".repeat(40), "2".repeat(40));
        let out = format!("{tree}\0100644 {one} 1\tf\0100755 {two} 3\tg h\0120000 zz 2\tf\0\0");
        let stages = conflicted_stages(out.as_bytes());
        let seen: Vec<(&str, u8, &str)> = stages
            .iter()
            .map(|s| (s.mode.as_str(), s.stage, s.path.as_str()))
            .collect();
        assert_eq!(seen, vec![("100644", 1, "f"), ("100755", 3, "g h")]);
        assert!(conflicted_paths(b"", &[]).expect("none").is_empty());
        assert!(
            conflicted_paths(format!("{tree}\0").as_bytes(), &[])
                .expect("none")
                .is_empty()
        );
    }

    #[test]
    fn a_file_moved_aside_for_a_directory_is_named_by_its_own_path() {
        let tree = "5".repeat(40);
        let ours = Oid::parse(&"7".repeat(40)).expect("an id");
        let moved = format!("d~{ours}");
        let out = format!(
            "{tree}\0100644 f73f 2\t{moved}\0\0\
             2\0{moved}\0d\0CONFLICT (file/directory)\0CONFLICT (file/directory): ...\n\0"
        );
        assert_eq!(
            conflicted_paths(out.as_bytes(), &[&ours]).expect("paths"),
            vec!["d"]
        );
    }

    #[test]
    fn a_conflicted_path_that_is_not_utf8_is_refused_by_name() {
        // Two names a lossy reading would make one, `caf\u{fffd}.rs`.
        let mut entries = format!("{}\0", "5".repeat(40)).into_bytes();
        for name in [&b"caf\xe9.rs"[..], &b"caf\xe8.rs"[..]] {
            entries.extend(b"100644 de98 2\t");
            entries.extend(name);
            entries.push(0);
        }
        let Fault(why) = conflicted_paths(&entries, &[]).expect_err("not UTF-8");
        assert!(
            why.contains("caf\\xe9.rs") && why.contains("not UTF-8"),
            "{why}"
        );
        // In a message's paths too.
        let mut message = format!("{}\0\0", "5".repeat(40)).into_bytes();
        message.extend(b"1\0caf\xe9.rs\0CONFLICT (content)\0text\0");
        assert!(conflicted_paths(&message, &[]).is_err());
    }
}
