//! The read actions: step messages, chains and files, through the clone's [`Reader`] (one
//! process for every object read) and `git log` (one process for many chains).
//!
//! [`Reader`]: crate::reader::Reader

use std::collections::{BTreeMap, BTreeSet};

use bay_core::git::{Oid, refs};
use bay_core::machine::{
    ChainQuery, ChainRead, Fault, FetchSpec, HistoryQuery, MainCommit, RawStep,
};
use bay_core::time::Timestamp;

use super::{Repo, mirror_prefix, oid};
use crate::reader::Object;

/// What a chain walk needs of a commit.
#[derive(Debug)]
struct CommitInfo {
    first_parent: Option<Oid>,
    message: String,
}

/// How many commits deep the reader walks chains before one `git log` reads the rest.
const READER_STEPS: usize = 32;

/// What `git log` prints of each commit a history read names: ids and parents, committer
/// time, committer, message.
const COMMIT_FORMAT: &str = "--format=%H %P%n%ct%n%cn <%ce>%n%B";

/// The most commits read behind one merge that brought commits in off the first-parent line.
pub const BROUGHT_READ: usize = bay_core::machine::BROUGHT_READ;

/// Commits as `git log -z` prints them in [`COMMIT_FORMAT`].
fn parse_commits(stdout: &[u8]) -> Result<Vec<MainCommit>, Fault> {
    let mut commits = Vec::new();
    for entry in stdout.split(|byte| *byte == 0).filter(|e| !e.is_empty()) {
        let text = String::from_utf8_lossy(entry);
        let mut lines = text.splitn(4, '\n');
        let (Some(ids), Some(time), Some(committer)) = (lines.next(), lines.next(), lines.next())
        else {
            return Err(Fault(format!(
                "git log printed a commit bay cannot read: {text:?}"
            )));
        };
        let mut ids = ids
            .split_whitespace()
            .map(|id| Oid::parse(id).map_err(Fault));
        let oid = ids
            .next()
            .ok_or_else(|| Fault("git log printed no commit id".into()))??;
        let parents = ids.collect::<Result<Vec<Oid>, Fault>>()?;
        let secs: u64 = time
            .trim()
            .parse()
            .map_err(|_| Fault(format!("git log printed no commit time: {time:?}")))?;
        commits.push(MainCommit {
            oid,
            parents,
            at: Timestamp::from_secs(secs),
            committer: committer.to_string(),
            message: lines.next().unwrap_or("").to_string(),
            off_first_parent: 0,
            brought: Vec::new(),
        });
    }
    Ok(commits)
}

impl Repo {
    /// The objects named by `names` (each from an object id), in order.
    fn cat_batch(&self, names: &[String]) -> Result<Vec<Object>, Fault> {
        self.reader.read(names)
    }

    /// Every line of the note on each of `objects` in each notes commit of `notes`. A notes
    /// tree may fan its notes out into directories of two hex digits, so each object is looked
    /// up flat and fanned one and two levels deep, all in one read.
    pub fn read_notes(&self, notes: &[Oid], objects: &[Oid]) -> Result<Vec<String>, Fault> {
        let mut names = Vec::new();
        for tip in notes {
            for object in objects {
                let hex = object.as_str();
                names.push(format!("{tip}:{hex}"));
                names.push(format!("{tip}:{}/{}", &hex[..2], &hex[2..]));
                names.push(format!("{tip}:{}/{}/{}", &hex[..2], &hex[2..4], &hex[4..]));
            }
        }
        let found = self.cat_batch(&names)?;
        Ok(found
            .into_iter()
            .filter_map(|object| match object {
                Object::Found { kind, body } if kind == "blob" => Some(body),
                _ => None,
            })
            .flat_map(|body| {
                String::from_utf8_lossy(&body)
                    .lines()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .collect())
    }

    /// Each commit's message; ids that are not commits here are left out, as the simulator
    /// leaves them out.
    pub fn read_steps(&self, oids: &[Oid]) -> Result<Vec<RawStep>, Fault> {
        let names: Vec<String> = oids.iter().map(|o| o.to_string()).collect();
        let objects = self.cat_batch(&names)?;
        let mut steps = Vec::with_capacity(oids.len());
        for (oid, object) in oids.iter().zip(objects) {
            if let Object::Found { kind, body } = object
                && kind == "commit"
            {
                steps.push(RawStep {
                    oid: oid.clone(),
                    message: parse_commit(&body)?.message,
                });
            }
        }
        Ok(steps)
    }

    /// Walks every chain's first parents from its tip, stopping before its `known`.
    ///
    /// The reader walks all chains together, one exchange per step back, for up to
    /// [`READER_STEPS`] steps: a change's chain is a handful of steps, and this costs no
    /// process. The chains still unfinished then (a long log read for the first time) are
    /// read by one `git log`, excluding what each `known` already
    /// covers. A chain whose walk was cut by an exclusion
    /// other than meeting its own `known` (another chain's `known`, or a `known` off the
    /// first-parent line) is walked again without exclusions, so the answer is exactly the
    /// first-parent walk.
    ///
    /// A chain whose walk meets an object that is not a commit (a ref pointed at a blob by
    /// hand) is answered unreadable, and the others are read as ever.
    pub fn read_chains(&self, chains: &[ChainQuery]) -> Result<Vec<ChainRead>, Fault> {
        let mut commits: BTreeMap<Oid, CommitInfo> = BTreeMap::new();
        let (unfinished, broken) = self.walk_by_reader(chains, &mut commits)?;
        let tips: Vec<String> = unfinished.iter().map(|c| c.tip.to_string()).collect();
        let known: BTreeSet<String> = unfinished
            .iter()
            .filter_map(|c| c.known.as_ref().map(|k| format!("^{k}")))
            .collect();
        self.load_walk(&tips, &known, &mut commits)?;
        let mut reads = Vec::with_capacity(chains.len());
        let mut cut = Vec::new();
        for (index, query) in chains.iter().enumerate() {
            if let Some(why) = &broken[index] {
                reads.push(Some(ChainRead::unreadable(query, why.clone())));
                continue;
            }
            match walk(query, &commits) {
                Some(read) => reads.push(Some(read)),
                None => {
                    cut.push(index);
                    reads.push(None);
                }
            }
        }
        if !cut.is_empty() {
            let tips: Vec<String> = cut.iter().map(|&i| chains[i].tip.to_string()).collect();
            self.load_walk(&tips, &BTreeSet::new(), &mut commits)?;
            for index in cut {
                let read = walk(&chains[index], &commits).ok_or_else(|| {
                    Fault(format!(
                        "the chain at {} could not be walked",
                        chains[index].tip
                    ))
                })?;
                reads[index] = Some(read);
            }
        }
        Ok(reads.into_iter().flatten().collect())
    }

    /// Reads into `commits` each chain's first-parent line from its tip down to its `known`
    /// (or its root), all chains at once, at most [`READER_STEPS`] commits deep; gives the
    /// chains it did not finish, and for each chain why it cannot be read, when its walk met
    /// an object that is not a commit.
    #[allow(clippy::type_complexity)]
    fn walk_by_reader<'q>(
        &self,
        chains: &'q [ChainQuery],
        commits: &mut BTreeMap<Oid, CommitInfo>,
    ) -> Result<(Vec<&'q ChainQuery>, Vec<Option<String>>), Fault> {
        // Where each chain's walk stands: the next commit to read, `None` once it is done.
        let mut at: Vec<Option<Oid>> = chains.iter().map(|c| Some(c.tip.clone())).collect();
        let mut broken: Vec<Option<String>> = vec![None; chains.len()];
        let mut not_commits: BTreeMap<Oid, String> = BTreeMap::new();
        // One more round than reads, so that what the last read found is followed too.
        for round in 0..=READER_STEPS {
            // Follow what is loaded already; stop at `known`, the root, or what is no commit.
            for ((place, query), broken) in at.iter_mut().zip(chains).zip(&mut broken) {
                while let Some(id) = place.clone() {
                    if Some(&id) == query.known.as_ref() {
                        *place = None;
                    } else if let Some(why) = not_commits.get(&id) {
                        *broken = Some(why.clone());
                        *place = None;
                    } else if let Some(info) = commits.get(&id) {
                        *place = info.first_parent.clone();
                    } else {
                        break;
                    }
                }
            }
            let wanted: BTreeSet<Oid> = at.iter().flatten().cloned().collect();
            if wanted.is_empty() || round == READER_STEPS {
                break;
            }
            let wanted: Vec<Oid> = wanted.into_iter().collect();
            let names: Vec<String> = wanted.iter().map(Oid::to_string).collect();
            for (id, object) in wanted.into_iter().zip(self.cat_batch(&names)?) {
                match object {
                    Object::Found { kind, body } if kind == "commit" => {
                        commits.insert(id, parse_commit(&body)?);
                    }
                    Object::Found { kind, .. } => {
                        not_commits.insert(id.clone(), format!("{id} is a {kind}, not a commit"));
                    }
                    Object::Missing => {
                        not_commits.insert(id.clone(), format!("this clone has no object {id}"));
                    }
                }
            }
        }
        let unfinished = chains
            .iter()
            .zip(&at)
            .zip(&broken)
            .filter(|((query, place), broken)| {
                broken.is_none() && place.is_some() && walk(query, commits).is_none()
            })
            .map(|((query, _), _)| query)
            .collect();
        Ok((unfinished, broken))
    }

    /// Adds to `commits` every commit on the first-parent lines from `tips`, less `exclude`.
    fn load_walk(
        &self,
        tips: &[String],
        exclude: &BTreeSet<String>,
        commits: &mut BTreeMap<Oid, CommitInfo>,
    ) -> Result<(), Fault> {
        if tips.is_empty() {
            return Ok(());
        }
        // One `git log` lists and reads the commits at once: each as its id, its parents
        // and its message, NUL-separated.
        let out = self
            .git()
            .cmd([
                "log",
                "--no-show-signature",
                "--first-parent",
                "-z",
                "--format=%H %P%n%B",
            ])
            .args(tips)
            .args(exclude)
            .arg("--")
            .run()?;
        for entry in out.stdout.split(|byte| *byte == 0) {
            if entry.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(entry);
            let (ids, message) = text.split_once('\n').unwrap_or((&text, ""));
            let mut ids = ids.split(' ').filter(|id| !id.is_empty());
            let id = oid(ids.next().unwrap_or_default())?;
            let first_parent = ids.next().map(oid).transpose()?;
            commits.entry(id).or_insert_with(|| CommitInfo {
                first_parent,
                message: message.to_owned(),
            });
        }
        Ok(())
    }

    /// The commits of a first-parent range, newest first, at most `limit`, from local refs
    /// only: `range` as Git takes it, or main's mirror as the last fetch left it. The line
    /// from one commit id (a runner log's tip, main's commit) is walked in-process; a range or
    /// a name goes to `git log`, which resolves it.
    pub fn read_log(
        &self,
        range: Option<&str>,
        limit: u32,
        since: Option<Timestamp>,
    ) -> Result<Vec<RawStep>, Fault> {
        if let Some(tip) = range.and_then(|range| Oid::parse(range).ok()) {
            let line = self.reader.first_parents(&tip, limit, since)?;
            return Ok(line
                .into_iter()
                .map(|(oid, message)| RawStep {
                    oid,
                    message: String::from_utf8_lossy(&message).into_owned(),
                })
                .collect());
        }
        let rev = match range {
            Some(range) => range.to_owned(),
            None => format!("{}heads/{}", mirror_prefix(&self.remote), self.main),
        };
        let out = self
            .git()
            .cmd([
                "log",
                "--no-show-signature",
                "--first-parent",
                "-z",
                "--format=%H%n%B",
            ])
            .arg(format!("--max-count={limit}"))
            // Git stops a first-parent walk at the first commit older than this.
            .args(since.map(|since| format!("--max-age={}", since.secs())))
            .arg("--end-of-options")
            .arg(&rev)
            .arg("--")
            .run()?;
        out.stdout
            .split(|byte| *byte == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let text = String::from_utf8_lossy(entry);
                let (oid, message) = text.split_once('\n').unwrap_or((&text, ""));
                Ok(RawStep {
                    oid: Oid::parse(oid.trim()).map_err(Fault)?,
                    message: message.to_owned(),
                })
            })
            .collect()
    }

    /// The commits `query` names, oldest first, and for each commit with more than one parent
    /// what it brought in, walked in-process (`Reader::brought_in`). The newest of a range are walked no
    /// further than asked, so a window of main costs the same however long main's history is;
    /// the oldest of a range need the whole range's ids first, then what the picked ones say.
    /// Both are walked in-process where the walk meets `from` (or there is none); else one
    /// `log`, or one `rev-list` and one `log --no-walk`, answer. A `from` this clone lacks
    /// fails either walk.
    pub fn read_history(&self, query: &HistoryQuery) -> Result<Vec<MainCommit>, Fault> {
        // Git stops a first-parent walk at the first commit older than this.
        let since = query
            .since
            .map(|since| format!("--max-age={}", since.secs()));
        let mut commits = if let Some(walked) = self.newest_walked(query)? {
            walked
        } else if let Some(walked) = self.oldest_walked(query)? {
            walked
        } else if query.newest {
            let out = self
                .git()
                .cmd(["log", "--first-parent", "-z", COMMIT_FORMAT])
                .arg(format!("--max-count={}", query.limit))
                .args(since)
                .arg("--end-of-options")
                .arg(query.range())
                .arg("--")
                .run()?;
            let mut newest_first = parse_commits(&out.stdout)?;
            newest_first.reverse();
            newest_first
        } else {
            let ids = self
                .git()
                .cmd(["rev-list", "--first-parent"])
                .args(since)
                .arg("--end-of-options")
                .arg(query.range())
                .arg("--")
                .run()?
                .text();
            let ids = query.pick(ids.split_whitespace().collect());
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let out = self
                .git()
                .cmd(["log", "--no-walk=unsorted", "-z", COMMIT_FORMAT])
                .arg("--end-of-options")
                .args(&ids)
                .arg("--")
                .run()?;
            parse_commits(&out.stdout)?
        };
        for commit in &mut commits {
            if let Some(first) = commit.parents.first().cloned()
                && commit.parents.len() > 1
            {
                (commit.off_first_parent, commit.brought) =
                    self.reader.brought_in(&commit.oid, &first, BROUGHT_READ)?;
            }
        }
        Ok(commits)
    }

    /// The newest of a range walked in-process from `to`, oldest first: when the range has no
    /// `from`, or the walk meets it (a `from` on `to`'s first-parent line, as status's read of
    /// the red window's has). A `from` the walk does not meet may bound the range off the line,
    /// which only Git's walk of `from..to` answers: `None`, for `git log`.
    fn newest_walked(&self, query: &HistoryQuery) -> Result<Option<Vec<MainCommit>>, Fault> {
        if !query.newest {
            return Ok(None);
        }
        let limit = query.limit as usize;
        let mut walked =
            self.reader
                .main_commits(&query.to, query.limit.saturating_add(1), query.since)?;
        let end = match &query.from {
            None => limit,
            Some(from) => match walked.iter().position(|commit| &commit.oid == from) {
                Some(at) => at.min(limit),
                None => return Ok(None),
            },
        };
        walked.truncate(end);
        walked.reverse();
        Ok(Some(walked))
    }

    /// The oldest of a range walked in-process, oldest first: the range's ids from `to` down
    /// to `from` (or a root, or `since`), then only the picked commits read whole. `None` when
    /// the walk does not meet `from`, for Git's `from..to`.
    fn oldest_walked(&self, query: &HistoryQuery) -> Result<Option<Vec<MainCommit>>, Fault> {
        if query.newest {
            return Ok(None);
        }
        let ids =
            self.reader
                .first_parent_ids_until(&query.to, query.from.as_ref(), query.since)?;
        let Some(ids) = ids else {
            return Ok(None);
        };
        let mut commits = Vec::new();
        for id in query.pick(ids) {
            commits.extend(self.reader.main_commits(&id, 1, None)?);
        }
        Ok(Some(commits))
    }

    /// The newest of the newest `within` commits on `commit`'s first-parent line that added
    /// `path`, if one did: walked in-process, each commit's tree looked up once.
    pub fn read_added(&self, commit: &Oid, path: &str, within: u32) -> Result<Option<Oid>, Fault> {
        self.reader.newest_adding(commit, path, within)
    }

    /// The tree of each commit, in order, from one `cat-file --batch`; a commit this clone
    /// lacks is a fault.
    pub fn read_trees(&self, commits: &[Oid]) -> Result<Vec<Oid>, Fault> {
        crate::trees::of_commits(&self.reader, commits)
    }

    /// `Action::ReadCompacted`: one fetch of the index shards that hold the changes, then each
    /// change's file at its shard's tip, read back as its chain.
    pub fn read_compacted(
        &self,
        changes: &[bay_core::id::ChangeId],
    ) -> Result<Vec<ChainRead>, Fault> {
        let mut shards: Vec<String> = changes
            .iter()
            .map(|change| refs::index_pattern(&refs::index_of_change(change)))
            .collect();
        shards.sort();
        shards.dedup();
        let tips = self.fetch(&FetchSpec::new(shards))?;
        changes
            .iter()
            .map(|change| match tips.get(&refs::index_of_change(change)) {
                Some(shard) => {
                    let file = self.read_file(shard, &bay_core::compact::change_path(change))?;
                    Ok(bay_core::compact::read_back(change, shard, file.as_deref()))
                }
                None => Ok(bay_core::compact::read_back_unsharded(change)),
            })
            .collect()
    }

    /// The bytes of `path` at `commit`; `None` when the path is not a file there, a fault
    /// when the commit itself is missing.
    pub fn read_file(&self, commit: &Oid, path: &str) -> Result<Option<Vec<u8>>, Fault> {
        let names = [format!("{commit}^{{commit}}"), format!("{commit}:{path}")];
        let mut objects = self.cat_batch(&names)?.into_iter();
        match objects.next() {
            Some(Object::Found { .. }) => {}
            _ => return Err(Fault(format!("no commit {commit}"))),
        }
        match objects.next() {
            Some(Object::Found { kind, body }) if kind == "blob" => Ok(Some(body)),
            _ => Ok(None),
        }
    }
}

/// The chain read for `query` from the loaded commits, or `None` when the walk runs into a
/// commit that was not loaded (the listing was cut short before it).
fn walk(query: &ChainQuery, commits: &BTreeMap<Oid, CommitInfo>) -> Option<ChainRead> {
    let mut steps = Vec::new();
    let mut at = Some(query.tip.clone());
    let mut reached_known = false;
    while let Some(id) = at {
        if Some(&id) == query.known.as_ref() {
            reached_known = true;
            break;
        }
        let info = commits.get(&id)?;
        steps.push(RawStep {
            oid: id,
            message: info.message.clone(),
        });
        at = info.first_parent.clone();
    }
    Some(ChainRead {
        change: query.change.clone(),
        tip: query.tip.clone(),
        steps,
        reached_known,
        unreadable: None,
    })
}

/// A commit object's first parent and its message (everything after the headers).
fn parse_commit(body: &[u8]) -> Result<CommitInfo, Fault> {
    let text = String::from_utf8_lossy(body);
    let (headers, message) = match text.split_once("\n\n") {
        Some((headers, message)) => (headers, message),
        // A commit with an empty message has no blank line after its headers.
        None => (text.trim_end_matches('\n'), ""),
    };
    let mut first_parent = None;
    for line in headers.lines() {
        if let Some(parent) = line.strip_prefix("parent ") {
            first_parent = Some(oid(parent)?);
            break;
        }
    }
    Ok(CommitInfo {
        first_parent,
        message: message.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_gives_its_first_parent_and_exact_message() {
        let p1 = "1".repeat(40);
        let p2 = "2".repeat(40);
        let body = format!(
            "tree {}\nparent {p1}\nparent {p2}\nauthor a <a> 1 +0000\n\nsubject\n\nbody\n",
            "4".repeat(40)
        );
        let info = parse_commit(body.as_bytes()).expect("a commit");
        assert_eq!(info.first_parent.map(String::from), Some(p1));
        assert_eq!(info.message, "subject\n\nbody\n");
    }
}
