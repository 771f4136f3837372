//! The key registry's commits (`bay_core::trust::registry`): read a chain whole, in-process
//! through the clone's reader, and write one signed version with `git` plumbing.

use std::path::Path;

use bay_core::git::Oid;
use bay_core::machine::{Fault, RegistryWrite};
use bay_core::trust::registry::{self, RegistryCommit, RegistryFile};

use super::Repo;
use crate::reader::Object;
use crate::sign::SigningKey;

fn fault(e: impl std::fmt::Display) -> Fault {
    Fault(e.to_string())
}

impl Repo {
    /// The chain from `tip` back along first parents, tip first.
    pub(super) fn read_registry(&self, tip: &Oid) -> Result<Vec<RegistryCommit>, Fault> {
        registry::read_chain(tip, |oid| self.read_registry_commit(oid))
    }

    /// Each of `commits` raw, as `git cat-file commit` gives it, read in-process; one that is
    /// no commit in this clone, or not UTF-8, is a fault.
    pub(super) fn read_commits(&self, commits: &[Oid]) -> Result<Vec<String>, Fault> {
        let names: Vec<String> = commits.iter().map(Oid::to_string).collect();
        let objects = self.reader.read(&names)?;
        commits
            .iter()
            .zip(objects)
            .map(|(oid, object)| match object {
                Object::Found { kind, body } if kind == "commit" => String::from_utf8(body)
                    .map_err(|_| Fault(format!("the commit {oid} is not UTF-8"))),
                _ => Err(Fault(format!("no commit {oid} in this clone"))),
            })
            .collect()
    }

    /// One registry commit: the commit raw and each file of its tree, read in-process. A name
    /// that is not UTF-8 is kept escaped, so that it reads as the unknown file it is.
    fn read_registry_commit(&self, oid: &Oid) -> Result<RegistryCommit, Fault> {
        let raw = self
            .read_commits(std::slice::from_ref(oid))
            .map_err(|Fault(why)| Fault(format!("the key registry: {why}")))?
            .pop()
            .ok_or_else(|| Fault(format!("no registry commit {oid}")))?;
        let entries = crate::trees::entries(&self.reader, oid)?;
        let blobs: Vec<String> = entries
            .values()
            .filter(|entry| entry.kind() == "blob")
            .map(|entry| entry.id.to_string())
            .collect();
        let mut texts = self.reader.read(&blobs)?.into_iter();
        let mut files = Vec::with_capacity(entries.len());
        for (name, entry) in entries {
            let text = match entry.kind() {
                "blob" => match texts.next() {
                    Some(Object::Found { body, .. }) => String::from_utf8(body).ok(),
                    _ => return Err(Fault(format!("no blob {} in this clone", entry.id))),
                },
                _ => None,
            };
            let name = match String::from_utf8(name) {
                Ok(name) => name,
                Err(raw) => format!("{:?}", gix::bstr::BStr::new(raw.as_bytes())),
            };
            files.push(RegistryFile { name, text });
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
