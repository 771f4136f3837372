//! The key registry's commits (`bay_core::trust::registry`): read a chain whole, and write
//! one signed version. Plain `git` plumbing, one call per object: a registry holds one commit
//! per enrolment, so there is nothing to batch.

use std::path::Path;

use bay_core::git::Oid;
use bay_core::machine::{Fault, RegistryWrite};
use bay_core::trust::registry::{MAX_VERSIONS, RegistryCommit, RegistryFile};

use super::Repo;
use crate::sign::SigningKey;

fn fault(e: impl std::fmt::Display) -> Fault {
    Fault(e.to_string())
}

impl Repo {
    /// The chain from `tip` back along first parents, tip first.
    pub(super) fn read_registry(&self, tip: &Oid) -> Result<Vec<RegistryCommit>, Fault> {
        let mut chain = Vec::new();
        let mut next = Some(tip.clone());
        while let Some(oid) = next.take() {
            if chain.len() >= MAX_VERSIONS {
                return Err(Fault(format!(
                    "the key registry holds over {MAX_VERSIONS} versions"
                )));
            }
            let commit = self.read_registry_commit(&oid)?;
            next = commit
                .raw
                .split_once("\n\n")
                .map_or(commit.raw.as_str(), |(headers, _)| headers)
                .lines()
                .find_map(|line| line.strip_prefix("parent "))
                .and_then(|parent| Oid::parse(parent).ok());
            chain.push(commit);
        }
        Ok(chain)
    }

    /// Each of `commits` raw, as `git cat-file commit` gives it.
    pub(super) fn read_commits(&self, commits: &[Oid]) -> Result<Vec<String>, Fault> {
        let git = self.git();
        commits
            .iter()
            .map(|oid| {
                let raw = git
                    .cmd(["cat-file", "commit", oid.as_str()])
                    .run()
                    .map_err(fault)?;
                String::from_utf8(raw.stdout)
                    .map_err(|_| Fault(format!("the commit {oid} is not UTF-8")))
            })
            .collect()
    }

    fn read_registry_commit(&self, oid: &Oid) -> Result<RegistryCommit, Fault> {
        let git = self.git();
        let raw = git
            .cmd(["cat-file", "commit", oid.as_str()])
            .run()
            .map_err(fault)?;
        let raw = String::from_utf8(raw.stdout)
            .map_err(|_| Fault(format!("the registry commit {oid} is not UTF-8")))?;
        let listing = git
            .cmd(["ls-tree", "-z", oid.as_str()])
            .run()
            .map_err(fault)?;
        let mut files = Vec::new();
        for entry in listing.stdout.split(|&b| b == 0).filter(|e| !e.is_empty()) {
            let entry = String::from_utf8_lossy(entry);
            let Some((meta, name)) = entry.split_once('\t') else {
                return Err(Fault(format!("git ls-tree gave {entry:?}")));
            };
            let mut fields = meta.split(' ');
            let (kind, object) = (fields.nth(1), fields.next());
            let text = match (kind, object) {
                (Some("blob"), Some(object)) => {
                    let blob = git.cmd(["cat-file", "blob", object]).run().map_err(fault)?;
                    String::from_utf8(blob.stdout).ok()
                }
                _ => None,
            };
            files.push(RegistryFile {
                name: name.to_owned(),
                text,
            });
        }
        Ok(RegistryCommit {
            oid: oid.clone(),
            raw,
            files,
        })
    }

    /// Writes and signs one registry version; pushes nothing.
    pub(super) fn write_registry(&self, write: &RegistryWrite) -> Result<RegistryCommit, Fault> {
        let key = SigningKey::load(Path::new(&write.key)).map_err(Fault)?;
        let git = self.git();
        let mut tree = String::new();
        for (name, text) in &write.files {
            let blob = git
                .cmd(["hash-object", "-w", "--stdin"])
                .stdin(text.as_bytes().to_vec())
                .text()
                .map_err(fault)?;
            tree.push_str(&format!("100644 blob {blob}\t{name}\n"));
        }
        let tree = git.cmd(["mktree"]).stdin(tree).text().map_err(fault)?;
        let ident = format!(
            "{} <{}> {} +0000",
            self.identity.name,
            self.identity.email,
            write.at.secs()
        );
        let mut headers = format!("tree {tree}\n");
        if let Some(parent) = &write.parent {
            headers.push_str(&format!("parent {parent}\n"));
        }
        headers.push_str(&format!("author {ident}\ncommitter {ident}\n"));
        let mut message = write.message.clone();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        let raw =
            crate::sign::signed_commit(&key, &format!("{headers}\n{message}")).map_err(Fault)?;
        let oid = git
            .cmd(["hash-object", "-t", "commit", "-w", "--stdin"])
            .stdin(raw.as_bytes().to_vec())
            .text()
            .map_err(fault)?;
        let oid =
            Oid::parse(&oid).map_err(|e| Fault(format!("git hash-object gave {oid:?}: {e}")))?;
        self.read_registry_commit(&oid)
    }
}
