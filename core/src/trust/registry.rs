//! The key registry, `refs/bay/registry`: a chain of commits, each holding up to six OpenSSH
//! allowed-signers files, one per class of key, and `removed`, each key taken out with its
//! reason and time.
//!
//! A version is readable only in bay's shape: known file names, each a blob; each class line
//! exactly `<name> <keytype> <base64>` with a name of `a-z`, `0-9` and `-`; every key in one
//! line of one file; no enrolled key that `removed` lists; no reviewer or approver name in
//! another of the classes agent, producer, reviewer and approver; at least one `registry`
//! key. The chain is readable when each version is, each commit has at most its predecessor
//! as parent, the first is signed (as Git signs commits, namespace `git`) by a key in its own
//! `registry` file and each later one by a key in the previous version's, and no version
//! drops a line of `removed`. Anything else is [`Broken`], named by commit, file and line:
//! `REGISTRY_UNREADABLE`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::key::{PublicKey, clip};
use super::signers::{AllowedSigners, Entry};
use super::sshsig::{Verdict, verify_by_key};
use crate::git::Oid;
use crate::time::Timestamp;

/// The registry's ref.
pub const REF: &str = "refs/bay/registry";

/// The pattern a fetch of the registry names: with `*`, a registry that is gone is no fault of
/// the fetch, only a registry that is not there.
pub fn fetch_pattern() -> String {
    format!("{REF}*")
}
/// The namespace Git signs commits under.
pub const COMMIT_NAMESPACE: &str = "git";
/// The file of removed keys.
pub const REMOVED: &str = "removed";
/// The most commits a registry chain may hold: one per enrolment or removal.
pub const MAX_VERSIONS: usize = 10_000;

/// The registry's chain from `tip` back along first parents, tip first, each commit read by
/// `read` (the driver's reading: objects are not core's); a chain over [`MAX_VERSIONS`] is a
/// fault. Each commit's first parent is taken from its raw headers, as Git wrote them.
pub fn read_chain(
    tip: &Oid,
    mut read: impl FnMut(&Oid) -> Result<RegistryCommit, crate::machine::Fault>,
) -> Result<Vec<RegistryCommit>, crate::machine::Fault> {
    let mut chain = Vec::new();
    let mut next = Some(tip.clone());
    while let Some(oid) = next.take() {
        if chain.len() >= MAX_VERSIONS {
            return Err(crate::machine::Fault(format!(
                "the key registry holds over {MAX_VERSIONS} versions"
            )));
        }
        let commit = read(&oid)?;
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

/// A class of key, and the file that lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Agent,
    Executor,
    Producer,
    Reviewer,
    Approver,
    Registry,
}

impl Class {
    pub const ALL: [Class; 6] = [
        Class::Agent,
        Class::Executor,
        Class::Producer,
        Class::Reviewer,
        Class::Approver,
        Class::Registry,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::Agent => "agent",
            Class::Executor => "executor",
            Class::Producer => "producer",
            Class::Reviewer => "reviewer",
            Class::Approver => "approver",
            Class::Registry => "registry",
        }
    }

    pub fn parse(text: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|class| class.as_str() == text)
    }

    /// The classes a name in this class may not also hold: a reviewer or approver name is
    /// never also a producer, agent, reviewer or approver name (an agent and a producer may
    /// share one).
    fn exclusive_of(self) -> &'static [Class] {
        match self {
            Class::Reviewer => &[Class::Agent, Class::Producer, Class::Approver],
            Class::Approver => &[Class::Agent, Class::Producer, Class::Reviewer],
            _ => &[],
        }
    }
}

/// Why a key was taken out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Reason {
    /// Replaced in the ordinary course: records it signed before the removal still count.
    Rotated,
    /// It may be in other hands: no record it signed counts.
    Revoked,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Rotated => "rotated",
            Reason::Revoked => "revoked",
        }
    }

    pub fn parse(text: &str) -> Option<Reason> {
        [Reason::Rotated, Reason::Revoked]
            .into_iter()
            .find(|reason| reason.as_str() == text)
    }
}

/// One line of `removed`: `<class> <name> <reason> <time> <keytype> <base64>`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Removal {
    pub class: Class,
    pub name: String,
    pub reason: Reason,
    /// When, to the second, in UTC.
    pub at: Timestamp,
    pub key: PublicKey,
}

impl Removal {
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.class.as_str(),
            self.name,
            self.reason.as_str(),
            utc_second(self.at),
            self.key.openssh()
        )
    }
}

/// One enrolled key.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Enrolled {
    pub name: String,
    pub key: PublicKey,
}

/// One readable version of the registry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Version {
    /// Each class's keys, in file order; a class without a file is absent.
    pub classes: BTreeMap<Class, Vec<Enrolled>>,
    pub removed: Vec<Removal>,
}

/// One file of a registry commit's tree, as the driver found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RegistryFile {
    pub name: String,
    /// The blob's text; `None` for an entry that is no blob, or no UTF-8.
    pub text: Option<String>,
}

/// One registry commit: its id, the raw commit object, and its tree's files.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct RegistryCommit {
    pub oid: Oid,
    pub raw: String,
    pub files: Vec<RegistryFile>,
}

/// Why the registry cannot be read: `REGISTRY_UNREADABLE`'s detail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Broken {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<Oid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub why: String,
}

impl crate::detail::Detail for Broken {}

impl Broken {
    fn new(why: impl Into<String>) -> Broken {
        Broken {
            commit: None,
            file: None,
            line: None,
            why: why.into(),
        }
    }

    fn in_file(file: &str, line: usize, why: impl Into<String>) -> Broken {
        Broken {
            file: Some(file.to_owned()),
            line: Some(line),
            ..Broken::new(why)
        }
    }

    fn at(mut self, commit: &Oid) -> Broken {
        self.commit.get_or_insert_with(|| commit.clone());
        self
    }
}

/// Whether `name` is a short lower-case word: 1 to 64 of `a-z`, `0-9` and `-`.
pub fn is_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_second(at: Timestamp) -> String {
    let secs = at.secs() % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        at.date(),
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

fn read_class(class: Class, text: &str) -> Result<Vec<Enrolled>, Broken> {
    let file = class.as_str();
    let mut keys = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let n = index + 1;
        let signers = AllowedSigners::parse(line).map_err(|e| Broken::in_file(file, n, e.why))?;
        let [entry]: [Entry; 1] = signers.entries.try_into().map_err(|_| {
            Broken::in_file(
                file,
                n,
                "each line holds one key; this one is blank or a comment",
            )
        })?;
        let [name] = entry.principals.as_slice() else {
            return Err(Broken::in_file(
                file,
                n,
                "a line names exactly one principal",
            ));
        };
        if !entry.options.is_empty() {
            return Err(Broken::in_file(
                file,
                n,
                "a line carries no options and no cert-authority",
            ));
        }
        if entry.comment.is_some() {
            return Err(Broken::in_file(
                file,
                n,
                "a line holds only `<name> <keytype> <base64>`",
            ));
        }
        if !is_name(name) {
            return Err(Broken::in_file(
                file,
                n,
                format!(
                    "`{}` is not a short lower-case word of a-z, 0-9 and -",
                    clip(name)
                ),
            ));
        }
        keys.push(Enrolled {
            name: name.clone(),
            key: entry.key,
        });
    }
    Ok(keys)
}

fn read_removed(text: &str) -> Result<Vec<Removal>, Broken> {
    let mut removed = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let n = index + 1;
        let bad = |why: &str| Broken::in_file(REMOVED, n, why);
        let fields: Vec<&str> = line.split(' ').collect();
        let [class, name, reason, at, keytype, base64] = fields.as_slice() else {
            return Err(bad(
                "a line is `<class> <name> <reason> <time> <keytype> <base64>`",
            ));
        };
        let removal = Removal {
            class: Class::parse(class).ok_or_else(|| bad("the class is not one of bay's six"))?,
            name: Some(*name)
                .filter(|name| is_name(name))
                .ok_or_else(|| bad("the name is not a short lower-case word"))?
                .to_string(),
            reason: Reason::parse(reason)
                .ok_or_else(|| bad("the reason is not rotated or revoked"))?,
            at: crate::time::parse_utc_second(at)
                .ok_or_else(|| bad("the time is not a UTC time to the second"))?,
            key: PublicKey::from_fields(keytype, base64)
                .map_err(|why| Broken::in_file(REMOVED, n, why))?,
        };
        removed.push(removal);
    }
    Ok(removed)
}

/// Which rules a version is read under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Every rule: the version that loads, the registry's tip.
    Whole,
    /// Every rule but that a removed key is never enrolled again: a version a later one
    /// repairs (an earlier version of the chain, or the tip that `bay enrol --remove` repairs).
    /// Nothing signed counts under such a version: records are judged by the tip's.
    Repairable,
}

impl Version {
    /// Whether this version enrols `key` in `class`'s file, under any name.
    pub fn enrols(&self, class: Class, key: &crate::trust::PublicKey) -> bool {
        self.classes
            .get(&class)
            .into_iter()
            .flatten()
            .any(|enrolled| enrolled.key == *key)
    }

    /// Reads one version from its tree's files, in bay's shape, under every rule.
    pub fn read(files: &[RegistryFile]) -> Result<Version, Broken> {
        Version::read_as(files, Reading::Whole)
    }

    /// Reads one version from its tree's files under the rules `reading` names.
    pub fn read_as(files: &[RegistryFile], reading: Reading) -> Result<Version, Broken> {
        let mut version = Version::default();
        let mut seen = BTreeSet::new();
        for file in files {
            if !seen.insert(file.name.as_str()) {
                return Err(Broken::new(format!(
                    "the file `{}` appears twice",
                    clip(&file.name)
                )));
            }
            let Some(text) = &file.text else {
                return Err(Broken::new(format!(
                    "`{}` is not a text file",
                    clip(&file.name)
                )));
            };
            match (Class::parse(&file.name), file.name.as_str()) {
                (Some(class), _) => {
                    version.classes.insert(class, read_class(class, text)?);
                }
                (None, REMOVED) => version.removed = read_removed(text)?,
                (None, other) => {
                    return Err(Broken::new(format!(
                        "`{}` is not a class bay knows (agent, executor, producer, reviewer, \
                         approver, registry) nor `removed`",
                        clip(other)
                    )));
                }
            }
        }
        version.check(reading)?;
        Ok(version)
    }

    /// The rules across files.
    fn check(&self, reading: Reading) -> Result<(), Broken> {
        let mut holders: BTreeMap<&PublicKey, (Class, usize)> = BTreeMap::new();
        for (class, keys) in &self.classes {
            for (index, enrolled) in keys.iter().enumerate() {
                let line = index + 1;
                if let Some((other, other_line)) = holders.insert(&enrolled.key, (*class, line)) {
                    return Err(Broken::in_file(
                        class.as_str(),
                        line,
                        format!(
                            "the key {} is also in `{}` line {other_line}; a key is in one line of one file",
                            enrolled.key.fingerprint(),
                            other.as_str()
                        ),
                    ));
                }
                if let Some(removal) = self
                    .removed
                    .iter()
                    .find(|r| r.key == enrolled.key)
                    .filter(|_| reading == Reading::Whole)
                {
                    return Err(Broken::in_file(
                        class.as_str(),
                        line,
                        format!(
                            "the key of `{}` was removed ({} {}, {}) and is never enrolled again; \
                             repair with `bay enrol --remove {} {} --reason revoked`",
                            enrolled.name,
                            removal.class.as_str(),
                            removal.name,
                            removal.reason.as_str(),
                            class.as_str(),
                            enrolled.name
                        ),
                    ));
                }
                for other in class.exclusive_of() {
                    if self.names(*other).any(|name| name == enrolled.name) {
                        return Err(Broken::in_file(
                            class.as_str(),
                            line,
                            format!(
                                "`{}` is a name in both `{}` and `{}`, which never share one",
                                enrolled.name,
                                class.as_str(),
                                other.as_str()
                            ),
                        ));
                    }
                }
            }
        }
        if self.keys(Class::Registry).next().is_none() {
            return Err(Broken::new(
                "the `registry` file holds no key, so nobody could sign the registry",
            ));
        }
        Ok(())
    }

    fn names(&self, class: Class) -> impl Iterator<Item = &str> {
        self.classes
            .get(&class)
            .into_iter()
            .flatten()
            .map(|enrolled| enrolled.name.as_str())
    }

    fn keys(&self, class: Class) -> impl Iterator<Item = &Enrolled> {
        self.classes.get(&class).into_iter().flatten()
    }

    /// A class's file, as allowed signers.
    pub fn signers(&self, class: Class) -> AllowedSigners {
        let text = self.render_class(class).unwrap_or_default();
        AllowedSigners::parse(&text).unwrap_or_default()
    }

    /// A class's file as text, empty when the version has none.
    pub fn signers_text(&self, class: Class) -> String {
        self.render_class(class).unwrap_or_default()
    }

    fn render_class(&self, class: Class) -> Option<String> {
        let keys = self.classes.get(&class)?;
        Some(
            keys.iter()
                .map(|enrolled| format!("{} {}\n", enrolled.name, enrolled.key.openssh()))
                .collect(),
        )
    }

    /// The version's files, as a commit's tree holds them: each class that has a file, and
    /// `removed` once anything was.
    pub fn files(&self) -> Vec<(String, String)> {
        let mut files: Vec<(String, String)> = Class::ALL
            .into_iter()
            .filter_map(|class| Some((class.as_str().to_owned(), self.render_class(class)?)))
            .collect();
        if !self.removed.is_empty() {
            let text = self.removed.iter().map(|r| r.line() + "\n").collect();
            files.push((REMOVED.to_owned(), text));
        }
        files
    }

    /// Where `key` is enrolled, if anywhere.
    pub fn holder(&self, key: &PublicKey) -> Option<(Class, &str)> {
        self.classes.iter().find_map(|(class, keys)| {
            keys.iter()
                .find(|enrolled| enrolled.key == *key)
                .map(|enrolled| (*class, enrolled.name.as_str()))
        })
    }

    /// Whether `key` may sign the next version.
    pub fn may_sign(&self, key: &PublicKey) -> bool {
        self.keys(Class::Registry)
            .any(|enrolled| enrolled.key == *key)
    }
}

/// The signed commit split: the payload Git signs (the commit without its `gpgsig` header)
/// and the armoured signature. `None` when the commit carries no SSH signature.
pub fn split_signed(raw: &str) -> Option<(String, String)> {
    let (headers, message) = raw.split_once("\n\n").unwrap_or((raw, ""));
    let mut payload = String::new();
    let mut signature = String::new();
    let mut in_sig = false;
    for line in headers.split('\n') {
        if let Some(first) = line.strip_prefix("gpgsig ") {
            if !signature.is_empty() {
                return None;
            }
            in_sig = true;
            signature.push_str(first);
            signature.push('\n');
        } else if let (true, Some(more)) = (in_sig, line.strip_prefix(' ')) {
            signature.push_str(more);
            signature.push('\n');
        } else {
            in_sig = false;
            payload.push_str(line);
            payload.push('\n');
        }
    }
    if !signature.starts_with("-----BEGIN SSH SIGNATURE-----") {
        return None;
    }
    payload.push('\n');
    payload.push_str(message);
    Some((payload, signature))
}

/// The parents a raw commit names.
fn parents(raw: &str) -> Vec<&str> {
    let headers = raw.split_once("\n\n").map_or(raw, |(headers, _)| headers);
    headers
        .lines()
        .filter_map(|line| line.strip_prefix("parent "))
        .collect()
}

/// Judges a registry chain, given tip first as the driver walks it, and gives the tip's
/// version: the whole chain must be readable, or the registry is. Each version is signed by a
/// registry key of the one before and keeps its removals; the tip holds every rule, and an
/// earlier version every rule but the one a later version repairs (a removed key enrolled
/// again), so that `bay enrol --remove` can mend a registry broken that way.
pub fn judge_chain(tip_first: &[RegistryCommit]) -> Result<Version, Broken> {
    judge(tip_first, Reading::Whole)
}

/// The chain judged as [`judge_chain`] does, but with its tip read [`Reading::Repairable`]:
/// what `bay enrol --remove` edits when the tip enrols a removed key again. The version it
/// writes must hold every rule.
pub fn judge_for_repair(tip_first: &[RegistryCommit]) -> Result<Version, Broken> {
    judge(tip_first, Reading::Repairable)
}

/// [`judge_whole`], or its answer for the same commits read the same way if the caller
/// remembers ([`crate::memo`]): the parts are the reading, then each commit's id, raw object and
/// files (name, whether a blob, text), all the judgement reads.
fn judge(tip_first: &[RegistryCommit], tip: Reading) -> Result<Version, Broken> {
    let counts: Vec<[u8; 8]> = tip_first
        .iter()
        .map(|commit| (commit.files.len() as u64).to_be_bytes())
        .collect();
    let mut parts: Vec<&[u8]> = vec![match tip {
        Reading::Whole => b"whole",
        Reading::Repairable => b"repairable",
    }];
    for (commit, count) in tip_first.iter().zip(&counts) {
        parts.extend([commit.oid.as_str().as_bytes(), commit.raw.as_bytes(), count]);
        for file in &commit.files {
            parts.push(file.name.as_bytes());
            match &file.text {
                Some(text) => parts.extend([b"blob".as_slice(), text.as_bytes()]),
                None => parts.push(b"none"),
            }
        }
    }
    crate::memo::recall(&parts, || judge_whole(tip_first, tip))
}

fn judge_whole(tip_first: &[RegistryCommit], tip: Reading) -> Result<Version, Broken> {
    if tip_first.is_empty() {
        return Err(Broken::new("the registry holds no commit"));
    }
    if tip_first.len() > MAX_VERSIONS {
        return Err(Broken::new(format!(
            "the registry holds over {MAX_VERSIONS} versions"
        )));
    }
    let mut previous: Option<Version> = None;
    for (index, commit) in tip_first.iter().enumerate().rev() {
        let broken = |b: Broken| b.at(&commit.oid);
        let expected = tip_first.get(index + 1).map(|parent| parent.oid.as_str());
        let named = parents(&commit.raw);
        match (named.as_slice(), expected) {
            ([], None) => {}
            ([one], Some(parent)) if *one == parent => {}
            _ => {
                return Err(broken(Broken::new(
                    "a registry commit has exactly its previous version as parent, and the first none",
                )));
            }
        }
        let reading = if index == 0 { tip } else { Reading::Repairable };
        let version = Version::read_as(&commit.files, reading).map_err(broken)?;
        let signers = previous
            .as_ref()
            .unwrap_or(&version)
            .signers(Class::Registry);
        let Some((payload, signature)) = split_signed(&commit.raw) else {
            return Err(broken(Broken::new("the commit carries no SSH signature")));
        };
        match verify_by_key(
            &signers,
            COMMIT_NAMESPACE,
            payload.as_bytes(),
            signature.as_bytes(),
        ) {
            Verdict::Good { .. } => {}
            verdict => {
                return Err(broken(Broken::new(format!(
                    "the commit is not signed by a key of the {} `registry` file ({})",
                    match previous {
                        Some(_) => "previous version's",
                        None => "first version's own",
                    },
                    verdict.name()
                ))));
            }
        }
        if let Some(before) = &previous
            && let Some(dropped) = before.removed.iter().find(|r| !version.removed.contains(r))
        {
            return Err(broken(Broken::new(format!(
                "the version drops the removal of {} {} from `removed`",
                dropped.class.as_str(),
                dropped.name
            ))));
        }
        previous = Some(version);
    }
    previous.ok_or_else(|| Broken::new("the registry holds no commit"))
}

/// What `bay enrol` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enrolment {
    Add {
        class: Class,
        name: String,
        key: PublicKey,
    },
    Remove {
        class: Class,
        name: String,
        reason: Reason,
    },
}

/// Decides the next version: `current` (none when there is no registry yet) changed as
/// `request` asks, to be signed by `signer`. A refusal says why, and nothing is written.
pub fn next_version(
    current: Option<&Version>,
    request: &Enrolment,
    signer: &PublicKey,
    now: Timestamp,
) -> Result<Version, String> {
    let name = match request {
        Enrolment::Add { name, .. } | Enrolment::Remove { name, .. } => name,
    };
    let class = match request {
        Enrolment::Add { class, .. } | Enrolment::Remove { class, .. } => *class,
    };
    if !is_name(name) {
        return Err(format!(
            "The {} name is a short lower-case word: a-z, 0-9 and -, not `{}`",
            class.as_str(),
            clip(name)
        ));
    }
    let mut next = match current {
        Some(current) if !current.may_sign(signer) => {
            return Err(format!(
                "this machine's registry key ({}) is not in the registry's `registry` file, so \
                 it cannot sign the next version",
                signer.fingerprint()
            ));
        }
        Some(current) => current.clone(),
        None => match request {
            Enrolment::Add {
                class: Class::Registry,
                key,
                ..
            } if key == signer => Version::default(),
            Enrolment::Add { .. } => {
                return Err(
                    "there is no registry yet: the first key is a `registry` key, the \
                            public half of `bay.registryKey`"
                        .into(),
                );
            }
            Enrolment::Remove { .. } => {
                return Err("there is no registry yet, so no key to remove".into());
            }
        },
    };
    match request {
        Enrolment::Add { class, name, key } => {
            if let Some(removal) = next.removed.iter().find(|r| r.key == *key) {
                return Err(format!(
                    "the key {} was removed ({} {}, {}) and is never enrolled again, under any name",
                    key.fingerprint(),
                    removal.class.as_str(),
                    removal.name,
                    removal.reason.as_str()
                ));
            }
            if let Some((held, holder)) = next.holder(key) {
                return Err(format!(
                    "the key {} is already enrolled, as {} `{holder}`",
                    key.fingerprint(),
                    held.as_str()
                ));
            }
            next.classes.entry(*class).or_default().push(Enrolled {
                name: name.clone(),
                key: key.clone(),
            });
        }
        Enrolment::Remove {
            class,
            name,
            reason,
        } => {
            let keys = next.classes.entry(*class).or_default();
            let (gone, kept): (Vec<Enrolled>, Vec<Enrolled>) =
                keys.drain(..).partition(|enrolled| enrolled.name == *name);
            *keys = kept;
            if gone.is_empty() {
                return Err(format!(
                    "`{name}` has no key in the {} class",
                    class.as_str()
                ));
            }
            if *class == Class::Registry && keys.is_empty() {
                return Err(
                    "bay never removes the last `registry` key: enrol another one first".into(),
                );
            }
            let at = Timestamp::from_secs(now.secs());
            // A key enrolled again after its removal (the repair of a broken registry) keeps
            // the removal it has.
            let fresh: Vec<Enrolled> = gone
                .into_iter()
                .filter(|enrolled| !next.removed.iter().any(|r| r.key == enrolled.key))
                .collect();
            next.removed
                .extend(fresh.into_iter().map(|enrolled| Removal {
                    class: *class,
                    name: name.clone(),
                    reason: *reason,
                    at,
                    key: enrolled.key,
                }));
        }
    }
    // The new version must read back as itself under every rule.
    let files: Vec<RegistryFile> = next
        .files()
        .into_iter()
        .map(|(name, text)| RegistryFile {
            name,
            text: Some(text),
        })
        .collect();
    Version::read(&files).map_err(|broken| broken.why)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    const B: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAILM+rvN+ot98qgEN796jTiQfZfG1KaT0PtFDJ/XFSqti";

    fn key(text: &str) -> PublicKey {
        PublicKey::from_pub_file(text).expect("a key")
    }

    fn files(list: &[(&str, &str)]) -> Vec<RegistryFile> {
        list.iter()
            .map(|(name, text)| RegistryFile {
                name: (*name).to_owned(),
                text: Some((*text).to_owned()),
            })
            .collect()
    }

    #[test]
    fn a_version_in_bay_s_shape_reads_and_writes_back_the_same() {
        let reg = format!("admin {A}\n");
        let removed = format!("agent agent-7 revoked 2026-10-17T19:30:02Z {B}\n");
        let read = Version::read(&files(&[
            ("registry", &reg),
            ("agent", ""),
            ("removed", &removed),
        ]))
        .expect("reads");
        assert!(read.may_sign(&key(A)));
        assert_eq!(read.removed[0].reason, Reason::Revoked);
        let written: Vec<(String, String)> = read.files();
        assert_eq!(
            written,
            [
                ("agent".to_owned(), String::new()),
                ("registry".to_owned(), reg),
                ("removed".to_owned(), removed)
            ]
        );
    }

    #[test]
    fn each_broken_rule_is_named_by_file_and_line() {
        let reg = format!("admin {A}\n");
        for (list, file, line, says) in [
            (
                vec![("registry", format!("admin {A}\nalice,bob {B}\n"))],
                "registry",
                2,
                "one principal",
            ),
            (
                vec![("registry", format!("admin cert-authority {A}\n"))],
                "registry",
                1,
                "no options",
            ),
            (
                vec![("registry", format!("Admin {A}\n"))],
                "registry",
                1,
                "lower-case",
            ),
            (
                vec![("registry", format!("admin {A} laptop\n"))],
                "registry",
                1,
                "only",
            ),
            (
                vec![("registry", format!("\nadmin {A}\n"))],
                "registry",
                1,
                "one key",
            ),
            (
                vec![("registry", reg.clone()), ("agent", format!("a {A}\n"))],
                "registry",
                1,
                "also in",
            ),
            (
                vec![
                    ("registry", reg.clone()),
                    ("approver", format!("x {B}\n")),
                    ("reviewer", format!("x {B}\n")),
                ],
                "reviewer",
                1,
                "in both `reviewer` and `approver`",
            ),
            (
                vec![
                    ("registry", reg.clone()),
                    (
                        "removed",
                        format!("agent a rotated 2026-01-01T00:00:00Z {A}\n"),
                    ),
                ],
                "registry",
                1,
                "never enrolled again",
            ),
            (
                vec![
                    ("registry", reg.clone()),
                    ("removed", "agent a gone\n".to_owned()),
                ],
                "removed",
                1,
                "a line is",
            ),
        ] {
            let list: Vec<(&str, &str)> = list.iter().map(|(n, t)| (*n, t.as_str())).collect();
            let broken = Version::read(&files(&list)).expect_err(says);
            assert_eq!(broken.file.as_deref(), Some(file), "{broken:?}");
            assert_eq!(broken.line, Some(line), "{broken:?}");
            assert!(broken.why.contains(says), "{broken:?}");
        }
        let names = files(&[("registry", &reg), ("approver", &format!("x {B}\n"))]);
        let mut with_reviewer = names.clone();
        with_reviewer.push(RegistryFile {
            name: "reviewer".into(),
            text: Some(String::new()),
        });
        assert!(Version::read(&with_reviewer).is_ok());
        let broken =
            Version::read(&files(&[("registry", &reg), ("owners", "")])).expect_err("unknown");
        assert!(broken.why.contains("`owners`"));
        let broken = Version::read(&files(&[("agent", "")])).expect_err("no registry key");
        assert!(broken.why.contains("holds no key"));
    }

    #[test]
    fn the_next_version_follows_the_rules_and_refuses_by_name() {
        let (a, b) = (key(A), key(B));
        let now = Timestamp::from_secs(1_800_000_000);
        let add = |class, name: &str, key: &PublicKey| Enrolment::Add {
            class,
            name: name.to_owned(),
            key: key.clone(),
        };
        let first = next_version(None, &add(Class::Registry, "admin", &a), &a, now).expect("first");
        assert!(next_version(None, &add(Class::Registry, "admin", &b), &a, now).is_err());
        assert!(
            next_version(Some(&first), &add(Class::Agent, "x", &b), &b, now)
                .expect_err("a signer not in the registry file")
                .contains("cannot sign")
        );
        let agent =
            next_version(Some(&first), &add(Class::Agent, "agent-7", &b), &a, now).expect("agent");
        let remove = Enrolment::Remove {
            class: Class::Agent,
            name: "agent-7".into(),
            reason: Reason::Rotated,
        };
        let removed = next_version(Some(&agent), &remove, &a, now).expect("removed");
        assert_eq!(
            removed.removed[0].line(),
            format!("agent agent-7 rotated 2027-01-15T08:00:00Z {B}")
        );
        assert!(
            next_version(Some(&removed), &add(Class::Producer, "p", &b), &a, now)
                .expect_err("removed")
                .contains("never enrolled again")
        );
        let last = Enrolment::Remove {
            class: Class::Registry,
            name: "admin".into(),
            reason: Reason::Revoked,
        };
        assert!(
            next_version(Some(&removed), &last, &a, now)
                .expect_err("last")
                .contains("last")
        );
    }

    #[test]
    fn a_signed_commit_splits_into_payload_and_signature() {
        let raw = "tree t\nparent p\nauthor a\ncommitter c\ngpgsig -----BEGIN SSH SIGNATURE-----\n AAAA\n -----END SSH SIGNATURE-----\n\nbay: enrol\n";
        let (payload, sig) = split_signed(raw).expect("signed");
        assert_eq!(
            payload,
            "tree t\nparent p\nauthor a\ncommitter c\n\nbay: enrol\n"
        );
        assert_eq!(
            sig,
            "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n"
        );
        assert_eq!(split_signed("tree t\n\nunsigned\n"), None);
        assert_eq!(parents(raw), ["p"]);
        let broken = judge_chain(&[RegistryCommit {
            oid: Oid::parse("1183dd943ddbf0e5e43fb7a659359f480010c97a").expect("an oid"),
            raw: "tree t\n\nunsigned\n".into(),
            files: files(&[("registry", &format!("admin {A}\n"))]),
        }])
        .expect_err("unsigned");
        assert!(broken.why.contains("no SSH signature"), "{broken:?}");
        assert!(broken.commit.is_some());
    }

    #[test]
    fn a_remembered_chain_judgement_is_the_judgement_of_those_very_commits() {
        let commit = |text: &str| RegistryCommit {
            oid: Oid::parse("1183dd943ddbf0e5e43fb7a659359f480010c97a").expect("an oid"),
            raw: "tree t\n\nunsigned\n".into(),
            files: files(&[("registry", text)]),
        };
        let good = [commit(&format!("admin {A}\n"))];
        // The same id and object, one file's text changed: a line bay cannot read.
        let bad = [commit(&format!("Admin {A}\n"))];
        let judged = || {
            (
                judge_chain(&good),
                judge_chain(&bad),
                judge_for_repair(&good),
            )
        };
        let fresh = judged();
        assert!(
            fresh
                .0
                .as_ref()
                .is_err_and(|b| b.why.contains("no SSH signature"))
        );
        assert!(
            fresh.1.as_ref().is_err_and(|b| b.file.is_some()),
            "{fresh:?}"
        );
        let remembered = crate::memo::remembering(|| {
            let first = judged();
            assert_eq!(
                crate::memo::remembered::<Result<Version, Broken>>(),
                Some(3)
            );
            let again = judged();
            assert_eq!(
                crate::memo::remembered::<Result<Version, Broken>>(),
                Some(3)
            );
            assert_eq!(first, again);
            first
        });
        assert_eq!(remembered, fresh);
    }
}
