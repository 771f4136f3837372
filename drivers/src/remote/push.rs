//! `Action::Push`: write the plan's commits, then one `git push --porcelain` with a lease on
//! every ref, and read what became of each ref.
//!
//! What the outcome means, ref by ref, from the porcelain lines (`<flag>\t<src>:<dst>\t<summary>`):
//! - every ref up to date, fast-forwarded, forced or created → `Accepted`;
//! - any `!` → `Rejected`, naming the refs the remote (or the client's own lease check,
//!   which runs before anything is sent) refused. Refs refused only because another ref of
//!   the atomic push failed are named only when nothing else is;
//! - killed by the time bound, ended by a signal, or ended without a status for every ref →
//!   `Unknown`: once the commands are sent, nothing short of reading the remote tells whether
//!   they applied;
//! - ended before the remote was reached (no such remote, cannot connect, the remote cannot
//!   do an atomic push) → `NotSent`. Only failures whose message proves it count; any other
//!   failure is `Unknown`, which is always safe.

use std::collections::BTreeMap;

use bay_core::git::{Oid, refs};
use bay_core::machine::{Append, Expect, Fault, NewValue, PushOutcome, PushPlan, PushReport};

use super::{Repo, fetch::keeping_reflog, fetch::mirror_prefix, fetch::strip};
use crate::git::{GitError, Output, tail};

/// Messages of a push that failed before it sent anything (Git runs with `LC_ALL=C`).
const NOT_SENT: [&str; 13] = [
    "does not appear to be a git repository",
    "Could not read from remote repository",
    "unable to access '",
    "Could not resolve host",
    "Connection refused",
    "No route to host",
    "Host key verification failed",
    "Permission denied (publickey",
    "Authentication failed",
    "fatal: repository '",
    "the receiving end does not support",
    "invalid refspec",
    "No such remote",
];

/// Summaries of refs refused only because another ref of an atomic push failed.
const COLLATERAL: [&str; 2] = ["(atomic push failed)", "(atomic push failure)"];

/// One ref the push moves.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Update {
    name: String,
    expect: Expect,
    /// `None` deletes the ref.
    new: Option<Oid>,
}

impl Repo {
    /// Writes the plan's commits and pushes every ref in one `git push`.
    pub fn push(&self, plan: &PushPlan) -> PushReport {
        let mut report = PushReport {
            steps: Vec::new(),
            notes: Vec::new(),
            log: None,
            presence: None,
            indexes: Vec::new(),
            outcome: PushOutcome::Accepted,
        };
        let updates = match self.write(plan, &mut report) {
            Ok(updates) => updates,
            Err(fault) => {
                report.outcome = PushOutcome::NotSent(fault);
                return report;
            }
        };
        if updates.is_empty() {
            return report;
        }
        let net = self.net();
        let mut call = net.cmd(["push", "--porcelain"]);
        if plan.atomic {
            call = call.arg("--atomic");
        }
        // Pinned against the user's config: no client hooks, tags, signing or submodules.
        call = call.args([
            "--no-verify",
            "--no-follow-tags",
            "--no-signed",
            "--recurse-submodules=no",
        ]);
        let mut refspecs = Vec::with_capacity(updates.len());
        for update in &updates {
            let source = update.new.as_ref().map(Oid::to_string).unwrap_or_default();
            match &update.expect {
                Expect::Is(old) => {
                    call = call.arg(format!("--force-with-lease={}:{old}", update.name));
                    refspecs.push(format!("{source}:{}", update.name));
                }
                Expect::Absent => {
                    call = call.arg(format!("--force-with-lease={}:", update.name));
                    refspecs.push(format!("{source}:{}", update.name));
                }
                Expect::Any => refspecs.push(format!("+{source}:{}", update.name)),
            }
        }
        let names: Vec<String> = updates.iter().map(|u| u.name.clone()).collect();
        let result = call.arg(&self.remote).args(refspecs).output();
        report.outcome = classify(result, &names);
        if report.outcome == PushOutcome::Accepted {
            self.mirror_pushed(plan, &updates);
        }
        report
    }

    /// After an accepted push, the mirror takes each ref's new value, as `git push` moves a
    /// remote-tracking branch: the remote held exactly these values then, so what a clone
    /// holds includes its own writes (an abandon, a merge) without a fetch to learn them
    /// (`Action::ReadHeld` reads the mirror and never fetches). An operation whose outcome the
    /// push wrote has ended, and its candidate's `refs/bay/inflight/<op>` goes with it. A
    /// failure here is left alone: the mirror is a cache, the next fetch of those refs sets it
    /// right, and an inflight ref left over keeps only a candidate alive.
    ///
    /// The refs are written in-process where that is what Git would do ([`LocalRefs`]), else
    /// with one `git update-ref --stdin`.
    ///
    /// [`LocalRefs`]: crate::local_refs::LocalRefs
    fn mirror_pushed(&self, plan: &PushPlan, updates: &[Update]) {
        let mirror = mirror_prefix(&self.remote);
        let mut changes: Vec<(String, Option<Oid>)> = updates
            .iter()
            .map(|update| {
                (
                    format!("{mirror}{}", strip(&update.name)),
                    update.new.clone(),
                )
            })
            .collect();
        for op in plan.ended_ops() {
            changes.push((refs::inflight(&op), None));
        }
        // A presence's mirror keeps its reflog, as a fetch of it does (`read_seen`).
        let reflog = updates.iter().any(|u| u.name.starts_with(refs::EXECUTOR));
        if self.set_local(&changes, reflog) {
            return;
        }
        let mut script = String::new();
        for (name, value) in &changes {
            match value {
                Some(value) => script.push_str(&format!("update {name} {value}\n")),
                None => script.push_str(&format!("delete {name}\n")),
            }
        }
        let _ = self
            .git()
            .cmd(keeping_reflog(reflog))
            .args(["update-ref", "--stdin"])
            .stdin(script.into_bytes())
            .run();
    }

    /// `Action::WriteSteps`, and the steps of each append a push writes: each step commit on
    /// the one before, or on the append's parent, and (on the carrier step only) the carried
    /// commit, as the simulator writes them.
    pub fn write_steps(&self, append: &Append) -> Result<Vec<Oid>, Fault> {
        let empty = self.empty_tree()?;
        let mut written: Vec<Oid> = Vec::with_capacity(append.steps.len());
        for (index, step) in append.steps.iter().enumerate() {
            let mut parents: Vec<&Oid> = written
                .last()
                .or(append.parent.as_ref())
                .into_iter()
                .collect();
            if index == append.carrier() {
                parents.extend(append.carry.as_ref());
            }
            written.push(self.commit_tree(&empty, &parents, &step.to_message())?);
        }
        Ok(written)
    }

    /// Writes the step and notes commits into `report`, and lists every ref update.
    fn write(&self, plan: &PushPlan, report: &mut PushReport) -> Result<Vec<Update>, Fault> {
        let empty = self.empty_tree()?;
        let steps = plan
            .appends
            .iter()
            .map(|append| self.write_steps(append))
            .collect::<Result<Vec<_>, Fault>>()?;

        let mut updates = Vec::new();
        for (append, written) in plan.appends.iter().zip(&steps) {
            if let Some(tip) = written.last().or(append.parent.as_ref()) {
                updates.push(Update {
                    name: refs::change(&append.change),
                    expect: append.expect.clone(),
                    new: Some(tip.clone()),
                });
            }
        }

        // Notes for one producer in one plan build on each other and move its ref once,
        // under the first note's lease.
        let mut notes = Vec::with_capacity(plan.notes.len());
        let mut note_refs: BTreeMap<String, usize> = BTreeMap::new();
        for note in &plan.notes {
            let name = refs::evidence(&note.producer);
            let parent = match note_refs.get(&name) {
                Some(&at) => updates[at].new.clone(),
                None => match &note.expect {
                    Expect::Is(old) => Some(old.clone()),
                    Expect::Absent => None,
                    Expect::Any => self.mirrored(&name)?,
                },
            };
            let record = match &note.key {
                Some(key) => crate::sign::signed_record(std::path::Path::new(key), &note.record)
                    .map_err(|why| Fault(format!("bay.producerKey: {why}")))?,
                None => note.record.clone(),
            };
            let commit = self.write_note(parent.as_ref(), &note.object, &record)?;
            notes.push(commit.clone());
            match note_refs.get(&name) {
                Some(&at) => updates[at].new = Some(commit),
                None => {
                    note_refs.insert(name.clone(), updates.len());
                    updates.push(Update {
                        name,
                        expect: note.expect.clone(),
                        new: Some(commit),
                    });
                }
            }
        }
        report.steps = steps;
        report.notes = notes;

        // The event on the runner's log: one commit on the log's tip, leased on it.
        if let Some(log) = &plan.log {
            let parents: Vec<&Oid> = log.parent.iter().collect();
            let mut commit = self.commit_tree(&empty, &parents, &log.message)?;
            // A batch's further events, each on the one before.
            for message in &log.more {
                commit = self.commit_tree(&empty, &[&commit], message)?;
            }
            report.log = Some(commit.clone());
            updates.push(Update {
                name: refs::log(&log.runner),
                expect: log.expect.clone(),
                new: Some(commit),
            });
        }

        // A presence: one commit with no parent, replacing the runner's, leased on the tip.
        if let Some(presence) = &plan.presence {
            let commit = self.commit_tree(&empty, &[], &presence.message)?;
            report.presence = Some(commit.clone());
            updates.push(Update {
                name: refs::executor(&presence.runner),
                expect: presence.expect.clone(),
                new: Some(commit),
            });
        }

        // A commit of each index shard of compacted records: its base's tree with the files put
        // in, a child of its parent (the base, or none), leased on the base.
        for index in &plan.indexes {
            let git = self.git();
            let mut edits = Vec::with_capacity(index.files.len());
            for (path, content) in &index.files {
                let blob = self.objects.blob(&git, content.as_bytes().to_vec())?;
                edits.push(("100644".to_owned(), blob, path.clone()));
            }
            let base = index.base.as_ref();
            let tree = crate::trees::edited(&self.reader, &self.objects, &git, base, &edits)?;
            let parents: Vec<&Oid> = index.parent.iter().collect();
            let commit = self.commit_tree(&tree, &parents, &index.message)?;
            report.indexes.push(commit.clone());
            updates.push(Update {
                name: index.shard.clone(),
                expect: index.expect.clone(),
                new: Some(commit),
            });
        }

        for update in &plan.updates {
            let new = match &update.new {
                NewValue::Oid(oid) => Some(oid.clone()),
                NewValue::Delete => None,
                NewValue::Step { append, step } => report
                    .steps
                    .get(*append)
                    .and_then(|s| s.get(*step))
                    .cloned()
                    .ok_or_else(|| {
                        Fault(format!(
                            "the plan moves {} to step {step} of append {append}, which it does not write",
                            update.name
                        ))
                    })
                    .map(Some)?,
            };
            updates.push(Update {
                name: update.name.clone(),
                expect: update.expect.clone(),
                new,
            });
        }
        let mut seen = std::collections::BTreeSet::new();
        for update in &updates {
            if !seen.insert(update.name.as_str()) {
                return Err(Fault(format!(
                    "the plan moves {} twice in one push",
                    update.name
                )));
            }
        }
        Ok(updates)
    }

    /// The value the last fetch saw for remote ref `name`, if it saw one.
    fn mirrored(&self, name: &str) -> Result<Option<Oid>, Fault> {
        let local = format!("{}{}", mirror_prefix(&self.remote), strip(name));
        let out = self
            .git()
            .cmd(["rev-parse", "--verify", "--quiet", &local])
            .output()?;
        if out.success() {
            Ok(Some(super::oid(&out.text())?))
        } else {
            Ok(None)
        }
    }
}

/// One porcelain status line: the flag and the summary, by destination ref.
fn statuses(stdout: &[u8]) -> BTreeMap<String, (char, String)> {
    let text = String::from_utf8_lossy(stdout);
    let mut found = BTreeMap::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, '\t');
        let (Some(flag), Some(spec), summary) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let mut chars = flag.chars();
        let (Some(flag), None) = (chars.next(), chars.next()) else {
            continue;
        };
        let Some((_, dst)) = spec.split_once(':') else {
            continue;
        };
        found.insert(dst.to_string(), (flag, summary.unwrap_or("").to_string()));
    }
    found
}

/// What a finished (or killed) `git push --porcelain` of `refs` means. See the module doc.
pub fn classify(result: Result<Output, GitError>, refs: &[String]) -> PushOutcome {
    let out = match result {
        Ok(out) => out,
        Err(GitError::TimedOut { after, .. }) => {
            return PushOutcome::Unknown {
                why: format!(
                    "the push ran past its time bound of {:.1}s and was killed; it may have applied",
                    after.as_secs_f64()
                ),
            };
        }
        Err(error @ GitError::Io { .. }) => return PushOutcome::NotSent(Fault(error.to_string())),
        Err(error @ GitError::Failed { .. }) => {
            return PushOutcome::Unknown {
                why: error.to_string(),
            };
        }
    };
    let found = statuses(&out.stdout);
    let refused: Vec<&String> = refs
        .iter()
        .filter(|name| found.get(*name).is_some_and(|(flag, _)| *flag == '!'))
        .collect();
    if !refused.is_empty() {
        let blamed: Vec<String> = refused
            .iter()
            .filter(|name| {
                found
                    .get(**name)
                    .is_none_or(|(_, summary)| !COLLATERAL.iter().any(|c| summary.contains(c)))
            })
            .map(|name| name.to_string())
            .collect();
        let refs = if blamed.is_empty() {
            refused.into_iter().cloned().collect()
        } else {
            blamed
        };
        return PushOutcome::Rejected { refs };
    }
    let missing: Vec<&String> = refs.iter().filter(|n| !found.contains_key(*n)).collect();
    if missing.is_empty() {
        return PushOutcome::Accepted;
    }
    let stderr = tail(out.stderr.as_bytes());
    if found.is_empty() && out.code.is_some() && NOT_SENT.iter().any(|m| stderr.contains(m)) {
        return PushOutcome::NotSent(Fault(format!("the push reached no remote: {stderr}")));
    }
    let ended = match out.code {
        Some(code) => format!("exit {code}"),
        None => "a signal".to_string(),
    };
    PushOutcome::Unknown {
        why: format!(
            "the push ended ({ended}) without a status for {}: {stderr}",
            missing
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(code: Option<i32>, stdout: &str, stderr: &str) -> Result<Output, GitError> {
        Ok(Output {
            code,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.to_string(),
        })
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn every_ref_ok_is_accepted() {
        let out = "To srv\n \tN:refs/heads/a\tX..Y\n*\tN:refs/bay/b\t[new reference]\n=\tN:refs/bay/c\t[up to date]\nDone\n";
        let refs = names(&["refs/heads/a", "refs/bay/b", "refs/bay/c"]);
        assert_eq!(
            classify(ended(Some(0), out, ""), &refs),
            PushOutcome::Accepted
        );
    }

    #[test]
    fn a_stale_lease_is_blamed_and_its_atomic_partner_is_not() {
        let out = "To srv\n!\tN:refs/heads/a\t[rejected] (atomic push failed)\n!\tN:refs/heads/b\t[rejected] (stale info)\nDone\n";
        let refs = names(&["refs/heads/a", "refs/heads/b"]);
        assert_eq!(
            classify(ended(Some(1), out, ""), &refs),
            PushOutcome::Rejected {
                refs: names(&["refs/heads/b"])
            }
        );
        let server = "To srv\n!\tN:refs/heads/a\t[remote rejected] (atomic transaction failed)\n!\tN:refs/heads/b\t[remote rejected] (atomic transaction failed)\nDone\n";
        assert_eq!(
            classify(ended(Some(1), server, ""), &refs),
            PushOutcome::Rejected { refs }
        );
    }

    #[test]
    fn failing_before_contact_is_not_sent_and_anything_else_unknown() {
        let refs = names(&["refs/heads/a"]);
        let gone = "fatal: '../x.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n";
        assert!(matches!(
            classify(ended(Some(128), "", gone), &refs),
            PushOutcome::NotSent(_)
        ));
        let hung = "fatal: the remote end hung up unexpectedly\n";
        assert!(matches!(
            classify(ended(Some(128), "", hung), &refs),
            PushOutcome::Unknown { .. }
        ));
        assert!(matches!(
            classify(ended(None, "", gone), &refs),
            PushOutcome::Unknown { .. }
        ));
        let timed_out = Err(GitError::TimedOut {
            command: "git push".into(),
            after: std::time::Duration::from_secs(1),
            stderr: String::new(),
        });
        assert!(matches!(
            classify(timed_out, &refs),
            PushOutcome::Unknown { .. }
        ));
    }
}
