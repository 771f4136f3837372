//! A worktree's detached HEAD moved as `git update-ref --no-deref HEAD <id>` moves it, by
//! this process: saving a view's draft moved it with one more `git`, about 2 ms.
//!
//! Git's files backend takes `HEAD.lock` in the worktree's own Git directory (created
//! exclusively), writes the new id into it, appends the reflog entry to `logs/HEAD`
//! (`<old> <new> <committer> <seconds> <zone>`, no message) and renames the lock over `HEAD`.
//! [`move_head`] does the same for the plain case only, and declines before writing anything
//! otherwise, so that `git` does it: a HEAD that is not a detached id, a held lock, a config
//! that changes what Git writes (another ref store, hooks, fsync, shared permissions, an
//! include, `logAllRefUpdates` other than `true`, a bare repository), a
//! `reference-transaction` hook, a committer this process cannot name as Git would (or a
//! worktree config that names its own), or a local time zone other than UTC (Git signs the
//! entry in local time).

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::path::Path;

use bay_core::git::Oid;

use crate::git::Location;
use crate::loose_refs::Lock;
use crate::objects::{Dirs, Identity};

/// Config words after which Git might move HEAD otherwise.
const UNUSUAL: [&str; 6] = [
    "refstorage",
    "hookspath",
    "fsync",
    "sharedrepository",
    "include",
    "bare=true",
];

/// Moves the detached HEAD of the worktree at `worktree` to `new`, its reflog entry signed
/// `committer` (`Name <email>`, see [`committer`]) at `secs` past the epoch. `Ok(false)` when
/// it declined, having written nothing.
pub fn move_head(worktree: &Path, new: &Oid, committer: &str, secs: u64) -> std::io::Result<bool> {
    let Some(dirs) = Dirs::find(&Location::Dir(worktree.to_path_buf())) else {
        return Ok(false);
    };
    let plain_config = dirs.config_texts().is_some_and(|texts| {
        texts.iter().all(|text| {
            !UNUSUAL.iter().any(|word| text.contains(word))
                && text
                    .match_indices("logallrefupdates=")
                    .all(|(at, _)| text[at..].starts_with("logallrefupdates=true"))
        })
    });
    // The committer was named from the config where the command runs; a worktree config of
    // the view's own could name another.
    let own_identity = std::fs::read_to_string(dirs.git_dir.join("config.worktree"))
        .map(|text| text.to_lowercase().replace(char::is_whitespace, ""))
        .is_ok_and(|text| text.contains("[user") || text.contains("[committer"));
    if !plain_config || own_identity || dirs.has_transaction_hook() || !local_time_is_utc() {
        return Ok(false);
    }
    let head = dirs.git_dir.join("HEAD");
    let Some(old) = detached_head(&dirs.git_dir) else {
        return Ok(false);
    };
    let Some(mut lock) = Lock::take(&head) else {
        return Ok(false);
    };
    // The lock goes on any failure below (its drop removes it); the reflog entry, as Git's,
    // is written before the rename that moves HEAD.
    OpenOptions::new()
        .write(true)
        .open(&lock.path)?
        .write_all(format!("{new}\n").as_bytes())?;
    let logs = dirs.git_dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    OpenOptions::new()
        .append(true)
        .create(true)
        .open(logs.join("HEAD"))?
        .write_all(format!("{old} {new} {committer} {secs} +0000\n").as_bytes())?;
    std::fs::rename(&lock.path, &lock.target)?;
    lock.done = true;
    Ok(true)
}

/// The commit a worktree's HEAD holds when it is detached: its file in the worktree's own Git
/// directory `git_dir` holds the id. `None` for a HEAD on a branch, or one that cannot be read.
pub fn detached_head(git_dir: &Path) -> Option<Oid> {
    let text = std::fs::read_to_string(git_dir.join("HEAD")).ok()?;
    Oid::parse(text.trim_end_matches('\n')).ok()
}

/// The committer Git signs a reflog entry with, `Name <email>`, from the environment
/// (`GIT_COMMITTER_NAME`, `GIT_COMMITTER_EMAIL`) and the config (`committer.*`, then `user.*`;
/// `config` lists keys lower-cased, as `git config` gives them, the last value winning);
/// `None` when Git would look further (`EMAIL`, the system's user and host names), when
/// `GIT_COMMITTER_DATE` sets another moment, or when Git would write the name or email
/// otherwise than as given.
pub fn committer(
    config: &[(String, String)],
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    if env("GIT_COMMITTER_DATE").is_some() {
        return None;
    }
    let set = |key: &str| {
        config
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let name = env("GIT_COMMITTER_NAME")
        .or_else(|| set("committer.name"))
        .or_else(|| set("user.name"))?;
    let email = env("GIT_COMMITTER_EMAIL")
        .or_else(|| set("committer.email"))
        .or_else(|| set("user.email"))?;
    let identity = Identity { name, email };
    identity
        .is_plain()
        .then(|| format!("{} <{}>", identity.name, identity.email))
}

/// Whether this process's local time is UTC, as the C library decides it: `TZ` naming UTC
/// (or empty), or, with no `TZ`, no `/etc/localtime` or one that links to a UTC zone.
fn local_time_is_utc() -> bool {
    const UTC: [&str; 9] = [
        "",
        "UTC",
        "UTC0",
        "Etc/UTC",
        "GMT",
        "GMT0",
        "Etc/GMT",
        "Universal",
        "Zulu",
    ];
    match std::env::var("TZ") {
        Ok(zone) => UTC.contains(&zone.trim_start_matches(':')),
        Err(std::env::VarError::NotUnicode(_)) => false,
        Err(std::env::VarError::NotPresent) => match std::fs::read_link("/etc/localtime") {
            Ok(target) => {
                let target = target.to_string_lossy();
                UTC.iter()
                    .filter(|zone| !zone.is_empty())
                    .any(|zone| target.ends_with(&format!("zoneinfo/{zone}")))
            }
            Err(e) => e.kind() == ErrorKind::NotFound && !Path::new("/etc/localtime").exists(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::Git;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn config(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_committer_is_the_one_git_would_sign_with() {
        let users = config(&[("user.name", "Ann"), ("user.email", "ann@x")]);
        assert_eq!(
            committer(&users, &env_of(&[])).as_deref(),
            Some("Ann <ann@x>")
        );
        let both = config(&[
            ("user.name", "Ann"),
            ("user.email", "ann@x"),
            ("committer.name", "Bot"),
            ("user.email", "ann@y"),
        ]);
        assert_eq!(
            committer(&both, &env_of(&[])).as_deref(),
            Some("Bot <ann@y>"),
            "committer.* before user.*, the last value winning"
        );
        let env = env_of(&[
            ("GIT_COMMITTER_NAME", "Env"),
            ("GIT_COMMITTER_EMAIL", "e@e"),
        ]);
        assert_eq!(committer(&users, &env).as_deref(), Some("Env <e@e>"));
        // Where Git would look further, or write something else: left to Git.
        assert_eq!(
            committer(&config(&[("user.name", "Ann")]), &env_of(&[])),
            None
        );
        assert_eq!(committer(&config(&[]), &env_of(&[("EMAIL", "a@b")])), None);
        assert_eq!(
            committer(&users, &env_of(&[("GIT_COMMITTER_DATE", "1 +0100")])),
            None
        );
        let crud = config(&[("user.name", " Ann."), ("user.email", "ann@x")]);
        assert_eq!(committer(&crud, &env_of(&[])), None);
    }

    #[test]
    fn head_and_its_reflog_are_what_git_update_ref_writes() {
        if !local_time_is_utc() {
            // Git would sign in another zone; the plain case cannot be shown here.
            let repo = tempfile::tempdir().expect("a temp dir");
            crate::testing::repository_with_a_commit(repo.path());
            let id = Oid::parse(&"1".repeat(40)).expect("an id");
            assert!(!move_head(repo.path(), &id, "A <a@a>", 1).expect("declined"));
            return;
        }
        let repo = tempfile::tempdir().expect("a temp dir");
        let main = repo.path().join("main");
        let git = crate::testing::repository_with_a_commit(&main);
        git.cmd(["worktree", "add", "-q", "--detach", "../view"])
            .run()
            .expect("a worktree");
        let view = repo.path().join("view");
        let one = Oid::parse(&crate::testing::empty_commit(&git, "one")).expect("an id");
        let two = Oid::parse(&crate::testing::empty_commit(&git, "two")).expect("an id");
        let admin = |file: &str| {
            std::fs::read_to_string(main.join(".git/worktrees/view").join(file)).expect(file)
        };
        // Git's own moves, signed at a given moment: to one, to two (its line kept), back.
        let git_moves = |to: &Oid| {
            Git::in_dir(&view)
                .cmd(["update-ref", "--no-deref", "HEAD", to.as_str()])
                .env("GIT_COMMITTER_NAME", "Ann")
                .env("GIT_COMMITTER_EMAIL", "ann@x")
                .env("GIT_COMMITTER_DATE", "1700000000 +0000")
                .run()
                .expect("update-ref");
        };
        git_moves(&one);
        git_moves(&two);
        let by_git = admin("logs/HEAD")
            .lines()
            .last()
            .expect("an entry")
            .to_string();
        git_moves(&one);
        // The same move, from one to two, by this process.
        assert!(move_head(&view, &two, "Ann <ann@x>", 1_700_000_000).expect("moved"));
        let log = admin("logs/HEAD");
        assert_eq!(log.lines().last(), Some(by_git.as_str()));
        assert_eq!(admin("HEAD"), format!("{two}\n"));
        let resolved = Git::in_dir(&view)
            .cmd(["rev-parse", "HEAD", "HEAD@{1}"])
            .text()
            .expect("rev-parse");
        assert_eq!(resolved, format!("{two}\n{one}"));
        // A held lock, or a HEAD on a branch: nothing is written.
        std::fs::write(main.join(".git/worktrees/view/HEAD.lock"), "").expect("a lock");
        assert!(!move_head(&view, &one, "Ann <ann@x>", 1).expect("declined"));
        std::fs::remove_file(main.join(".git/worktrees/view/HEAD.lock")).expect("unlock");
        // A view whose own config names another committer.
        let own = main.join(".git/worktrees/view/config.worktree");
        std::fs::write(&own, "[user]\n\tname = Other\n").expect("a worktree config");
        assert!(!move_head(&view, &one, "Ann <ann@x>", 1).expect("declined"));
        std::fs::remove_file(&own).expect("no worktree config");
        assert!(!move_head(&main, &one, "Ann <ann@x>", 1).expect("declined"));
        assert_eq!(admin("HEAD"), format!("{two}\n"));
    }
}
