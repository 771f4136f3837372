//! A view's detached HEAD, read and moved in-process with gitoxide: saving a view's draft moved
//! it with one more `git`, about 2 ms.
//!
//! The move is `git update-ref --no-deref HEAD <new> <old>`: a compare-and-swap in gix's ref
//! transaction, with the reflog entry Git would write, signed by the committer gix reads from
//! the view's own config. Where the [`crate::gitoxide::Gate`] leaves refs to Git (a
//! `reference-transaction` hook, reftable, fsync, shared permissions, a committer Git would
//! find or write otherwise), [`move_head`] declines before it writes anything and `git` moves
//! HEAD.

use std::path::Path;

use bay_core::git::Oid;
use bay_core::machine::Fault;

use crate::git::Location;
use crate::local_refs::LocalRefs;

/// Moves the detached HEAD of the worktree at `worktree` from `old` to `new`. `Ok(false)` when
/// it declined, having written nothing; a fault when HEAD no longer holds `old`, or the move
/// failed.
pub fn move_head(worktree: &Path, old: &Oid, new: &Oid) -> Result<bool, Fault> {
    let Some(refs) = LocalRefs::find(&Location::Dir(worktree.to_path_buf())) else {
        return Ok(false);
    };
    refs.move_head(old, new)?;
    Ok(true)
}

/// The commit the worktree at `worktree` has checked out when its HEAD is detached; `None` for
/// a HEAD on a branch, or one that cannot be read here.
pub fn detached_head(worktree: &Path) -> Option<Oid> {
    let repo = crate::gitoxide::open(&Location::Dir(worktree.to_path_buf()))?;
    let reference = repo.try_find_reference("HEAD").ok()??;
    match reference.target() {
        gix::refs::TargetRef::Object(id) => crate::gitoxide::from_gix(id).ok(),
        gix::refs::TargetRef::Symbolic(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Git;

    /// The newest entry of a reflog, without its time: `<old> <new> <committer>`, and its
    /// message.
    fn newest(log: &str) -> (String, String) {
        let line = log.lines().last().expect("an entry");
        let (head, message) = line.split_once('\t').unwrap_or((line, ""));
        let fields: Vec<&str> = head.split(' ').collect();
        (fields[..fields.len() - 2].join(" "), message.to_string())
    }

    #[test]
    fn head_and_its_reflog_are_what_git_update_ref_writes() {
        let repo = tempfile::tempdir().expect("a temp dir");
        let main = repo.path().join("main");
        let git = crate::testing::repository_with_a_commit(&main);
        for (key, value) in [("user.name", "Ann"), ("user.email", "ann@x")] {
            git.cmd(["config", key, value]).run().expect("config");
        }
        git.cmd(["worktree", "add", "-q", "--detach", "../view"])
            .run()
            .expect("a worktree");
        let view = repo.path().join("view");
        let one = Oid::parse(&crate::testing::empty_commit(&git, "one")).expect("an id");
        let two = Oid::parse(&crate::testing::empty_commit(&git, "two")).expect("an id");
        let admin = |file: &str| {
            std::fs::read_to_string(main.join(".git/worktrees/view").join(file)).expect(file)
        };
        let git_moves = |to: &Oid| {
            Git::in_dir(&view)
                .cmd(["update-ref", "--no-deref", "HEAD", to.as_str()])
                .run()
                .expect("update-ref");
        };
        git_moves(&one);
        git_moves(&two);
        let by_git = newest(&admin("logs/HEAD"));
        git_moves(&one);
        assert_eq!(detached_head(&view), Some(one.clone()));
        // The same move, from one to two, by this process.
        assert!(move_head(&view, &one, &two).expect("moved"));
        assert_eq!(newest(&admin("logs/HEAD")), by_git);
        assert_eq!(admin("HEAD"), format!("{two}\n"));
        let resolved = Git::in_dir(&view)
            .cmd(["rev-parse", "HEAD", "HEAD@{1}"])
            .text()
            .expect("rev-parse");
        assert_eq!(resolved, format!("{two}\n{one}"));
        // A HEAD that no longer holds the old value is left alone.
        assert!(move_head(&view, &one, &two).is_err());
        // A held lock: nothing is written.
        std::fs::write(main.join(".git/worktrees/view/HEAD.lock"), "").expect("a lock");
        assert!(move_head(&view, &two, &one).is_err());
        std::fs::remove_file(main.join(".git/worktrees/view/HEAD.lock")).expect("unlock");
        assert_eq!(admin("HEAD"), format!("{two}\n"));
        // The main worktree's HEAD is on a branch.
        assert_eq!(detached_head(&main), None);
    }
}
