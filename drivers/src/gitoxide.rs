//! The clone opened in-process with gitoxide (`gix`): discovery, the config Git resolves, and
//! the gates that decide, from that resolved config, what this process may write itself and
//! what it leaves to the `git` program.
//!
//! A repository is opened with every config level Git reads (system, the user's XDG and
//! global files or `GIT_CONFIG_GLOBAL`, the repository's, the worktree's, `GIT_CONFIG_COUNT`
//! and its pairs, includes and conditional includes), and without ever running `git`: gix
//! would otherwise start it once to find the installation's own config, which on this
//! platform is the system file it reads anyway. Config given on Git's command line
//! (`GIT_CONFIG_PARAMETERS`, which a parent `git -c` sets) is not read by gix and reaches
//! every `git` bay runs: with it present nothing is opened here, and callers ask `git`.

use std::path::Path;

use gix::bstr::ByteSlice;

use crate::git::Location;

/// A repository opened as bay opens it; `None` when it cannot be opened so, or when config
/// from Git's command line could say anything (see the module's notes).
pub fn open(location: &Location) -> Option<gix::Repository> {
    if !plain_environment() {
        return None;
    }
    let path = match location {
        Location::Dir(dir) | Location::GitDir(dir) => dir.clone(),
    };
    options()
        .open_path_as_is(matches!(location, Location::GitDir(_)))
        .open(path)
        .ok()
}

/// Whether gix reads the config this environment gives Git: no config from Git's command line,
/// and no `XDG_CONFIG_HOME` set empty (which Git takes as unset).
fn plain_environment() -> bool {
    std::env::var_os("GIT_CONFIG_PARAMETERS").is_none()
        && std::env::var_os("XDG_CONFIG_HOME").is_none_or(|dir| !dir.is_empty())
}

/// The options bay opens every repository with: every config source, never the `git` program.
fn options() -> gix::open::Options {
    let mut permissions = gix::open::Permissions::default_for_level(gix::sec::Trust::Full);
    permissions.config = gix::open::permissions::Config::all();
    permissions.config.git_binary = false;
    gix::open::Options::default().permissions(permissions)
}

/// The repository the directory `start` is in, found by walking up as Git does; `None` where
/// Git must say (see [`crate::discover`]).
pub fn discover(start: &Path) -> Option<gix::Repository> {
    if !plain_environment() {
        return None;
    }
    let repo: gix::Repository =
        gix::ThreadSafeRepository::discover_opts(start, Default::default(), |_, _| options())
            .ok()?
            .into();
    (repo.git_dir_trust() == gix::sec::Trust::Full).then_some(repo)
}

/// Every key of the config sections `sections` the repository sees and its value, in Git's
/// order, as `git config --get-regexp '^(<sections>)\.'` lists them: keys lower-cased but for
/// a subsection's name, a key with no value at all as `true`. `None` where a key's values
/// cannot be told apart from gix's reading (a key given both with and without a value in one
/// section, or several values of one key in one section of which one is empty): the caller
/// asks `git`.
pub fn config_values(repo: &gix::Repository, sections: &[&str]) -> Option<Vec<(String, String)>> {
    let snapshot = repo.config_snapshot();
    let file = snapshot.plumbing();
    let mut values = Vec::new();
    for section in file.sections() {
        let header = section.header();
        let name = header.name().to_str_lossy().to_ascii_lowercase();
        if !sections
            .iter()
            .any(|wanted| wanted.eq_ignore_ascii_case(&name))
        {
            continue;
        }
        let prefix = match header.subsection_name() {
            Some(sub) => format!("{name}.{}", sub.to_str_lossy()),
            None => name,
        };
        let body = section.body();
        let names: Vec<String> = body.value_names().collect();
        let mut taken: Vec<(String, usize)> = Vec::new();
        for key in &names {
            let lower = key.to_ascii_lowercase();
            let nth = match taken.iter_mut().find(|(k, _)| *k == lower) {
                Some((_, n)) => {
                    *n += 1;
                    *n - 1
                }
                None => {
                    taken.push((lower.clone(), 1));
                    0
                }
            };
            let count = names
                .iter()
                .filter(|k| k.eq_ignore_ascii_case(&lower))
                .count();
            // A key with no `=` reads as an empty value among several, like `key =`: only a
            // key given once can be told to be one.
            let value = if count == 1 {
                match body.value_implicit(&lower)? {
                    None => "true".to_owned(),
                    Some(value) => value.to_str_lossy().into_owned(),
                }
            } else {
                let given = body.values(&lower);
                if given.len() != count || given.iter().any(|value| value.is_empty()) {
                    return None;
                }
                given.get(nth)?.to_str_lossy().into_owned()
            };
            values.push((format!("{prefix}.{lower}"), value));
        }
    }
    Some(values)
}

/// Every key of the config sections `sections` and its value, as one `git config --null
/// --get-regexp` call in the repository `git` names lists them: for the cases
/// [`config_values`] leaves to Git. Nothing when Git cannot be asked.
pub fn ask_git_config(git: &crate::git::Git, sections: &[&str]) -> Vec<(String, String)> {
    let pattern = format!("^({})\\.", sections.join("|"));
    let Ok(out) = git
        .cmd(["config", "--null", "--get-regexp", &pattern])
        .output()
    else {
        return Vec::new();
    };
    out.stdout
        .split(|b| *b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (key, value) = text.split_once('\n').unwrap_or((&text, "true"));
            (key.to_string(), value.to_string())
        })
        .collect()
}

/// What this process writes into a repository itself, decided once from the config Git
/// resolves for it; what it does not, the `git` program writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gate {
    /// Blobs and trees: gix writes loose objects as Git does, unless the config asks Git to
    /// flush them to disk (`core.fsync*`, which gix does not do) or to give them a group's
    /// permissions (`core.sharedRepository`), or keeps a second object format beside the
    /// first (`extensions.compatObjectFormat`).
    pub objects: bool,
    /// Commits too: no `i18n.commitEncoding`, after which Git writes an `encoding` header.
    pub commits: bool,
    /// Refs and their reflogs: the files backend (not reftable), no `reference-transaction`
    /// hook where Git would look for one (`core.hooksPath`, else the common directory's
    /// `hooks/`), no fsync, no shared permissions, and a committer Git would sign a reflog
    /// entry with as gix does (see [`Gate::of`]).
    pub refs: bool,
}

impl Gate {
    /// The gate of `repo`, from its resolved config.
    pub fn of(repo: &gix::Repository) -> Gate {
        let config = repo.config_snapshot();
        let file = config.plumbing();
        let set = |key: &str| file.raw_value(key).is_ok();
        let fsync = file.sections().any(|section| {
            section.header().name().eq_ignore_ascii_case(b"core")
                && section
                    .body()
                    .value_names()
                    .any(|name| name.to_ascii_lowercase().starts_with("fsync"))
        });
        let objects =
            !fsync && !set("core.sharedRepository") && !set("extensions.compatObjectFormat");
        let commits = objects && !set("i18n.commitEncoding");
        let reftable = file
            .string("extensions.refStorage")
            .is_some_and(|storage| storage.as_bytes() != b"files");
        let refs = objects && !reftable && !has_transaction_hook(repo) && committer_is_plain(repo);
        Gate {
            objects,
            commits,
            refs,
        }
    }
}

/// Whether Git would run a `reference-transaction` hook on every ref it moves in `repo`: one
/// in the hooks directory `core.hooksPath` names (any level, `~` expanded), else in the common
/// directory's `hooks/`. A relative hooks path, which Git takes from where each command runs,
/// counts as one.
fn has_transaction_hook(repo: &gix::Repository) -> bool {
    let config = repo.config_snapshot();
    let dir = match config.plumbing().raw_value("core.hooksPath") {
        Err(_) => repo.common_dir().join("hooks"),
        Ok(value) => {
            let text = value.to_str_lossy().into_owned();
            let dir = match text.strip_prefix("~/") {
                Some(rest) => match std::env::var_os("HOME") {
                    Some(home) => Path::new(&home).join(rest),
                    None => return true,
                },
                None => text.into(),
            };
            if dir.is_relative() {
                return true;
            }
            dir
        }
    };
    dir.join("reference-transaction").exists()
}

/// Whether gix signs a reflog entry as Git would here: a committer is configured (or given in
/// the environment) and Git keeps its name and email as they are
/// ([`crate::objects::Identity::is_plain`]). Git would look further for one that is not
/// configured (`EMAIL`, the user and host names), which gix does not.
fn committer_is_plain(repo: &gix::Repository) -> bool {
    match repo.committer() {
        Some(Ok(who)) => crate::objects::Identity {
            name: who.name.to_str_lossy().into_owned(),
            email: who.email.to_str_lossy().into_owned(),
        }
        .is_plain(),
        _ => false,
    }
}

/// An id of bay's core as gix's.
pub(crate) fn to_gix(id: &bay_core::git::Oid) -> Option<gix::ObjectId> {
    gix::ObjectId::from_hex(id.as_str().as_bytes()).ok()
}

/// An id of bay's core as gix's, or a fault naming an id this repository cannot hold (one of
/// another hash's length).
pub(crate) fn gix_id(id: &bay_core::git::Oid) -> Result<gix::ObjectId, bay_core::machine::Fault> {
    to_gix(id).ok_or_else(|| bay_core::machine::Fault(format!("{id} is not an object id")))
}

/// An id of gix's as bay core's.
pub(crate) fn from_gix(id: &gix::oid) -> Result<bay_core::git::Oid, bay_core::machine::Fault> {
    bay_core::git::Oid::from_raw(id.as_bytes()).map_err(bay_core::machine::Fault)
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::path::Path;

    use super::*;
    use crate::git::Git;

    /// What `git config --null --get-regexp` lists for `sections` in `dir`, as pairs.
    fn git_lists(dir: &Path, sections: &[&str]) -> Vec<(String, String)> {
        ask_git_config(&Git::in_dir(dir), sections)
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(path, text).expect("written");
    }

    /// A repository and a home folder whose config uses every level Git reads: the system
    /// file, the XDG file, `~/.gitconfig` with an include and a conditional include, the
    /// repository's config, a linked worktree's own config, and `GIT_CONFIG_COUNT`.
    fn every_level(root: &Path) -> Vec<(&'static str, OsString)> {
        let home = root.join("home");
        let repo = root.join("repo");
        crate::testing::repository_with_a_commit(&repo);
        let global = format!(
            "[user]\n\tname = Global Ann\n\temail = ann@global\n[include]\n\tpath = extra.inc\n\
             [includeIf \"gitdir:{}/\"]\n\tpath = {}/only-here.inc\n[bay]\n\tflag\n",
            repo.display(),
            home.display()
        );
        let files = [
            (
                root.join("system"),
                "[bay]\n\tmachine = from-system\n\tcheckReadPath = /sys-path\n",
            ),
            (
                home.join(".config/git/config"),
                "[bay]\n\tcheckReadPath = /xdg-path\n",
            ),
            (home.join(".gitconfig"), global.as_str()),
            (
                home.join("extra.inc"),
                "[bay]\n\tmachine = \"from an include\" ; comment\n\tcheckReadPath = /inc-path\n",
            ),
            (
                home.join("only-here.inc"),
                "[bay \"Sub.Section\"]\n\tKey = conditional\n",
            ),
        ];
        for (path, text) in &files {
            write(path, text);
        }
        let git = Git::in_dir(&repo);
        for args in [
            &["config", "bay.minFreeMiB", "2048"][..],
            &["config", "--add", "bay.checkReadPath", "/local-path"],
            &["config", "extensions.worktreeConfig", "true"],
            &["config", "--worktree", "bay.agentKey", "~/worktree-key"],
            &["worktree", "add", "-q", "--detach", "../linked"],
        ] {
            git.cmd(args.iter().copied()).run().expect("git");
        }
        Git::in_dir(root.join("linked"))
            .cmd(["config", "--worktree", "user.name", "Linked Lee"])
            .run()
            .expect("git config");
        vec![
            ("HOME", home.into()),
            ("GIT_CONFIG_SYSTEM", root.join("system").into()),
            ("GIT_CONFIG_COUNT", "1".into()),
            ("GIT_CONFIG_KEY_0", "bay.fromEnv".into()),
            ("GIT_CONFIG_VALUE_0", "env value".into()),
            ("BAY_TEST_ROOT", root.into()),
        ]
    }

    /// The environment for the child of test `here` with [`every_level`] and `more`, made in
    /// the parent; in the child, whether it is one (and so goes on to its checks).
    fn in_child_with_every_level(
        here: &str,
        more: impl FnOnce(&Path) -> Vec<(&'static str, OsString)>,
    ) -> Option<std::path::PathBuf> {
        let root = tempfile::tempdir().expect("a temp dir");
        let env = if std::env::var_os("BAY_TEST_ROOT").is_some() {
            Vec::new()
        } else {
            let mut env = every_level(root.path());
            env.extend(more(root.path()));
            env
        };
        if !crate::testing::in_child(here, &env) {
            return None;
        }
        std::env::var_os("BAY_TEST_ROOT").map(std::path::PathBuf::from)
    }

    #[test]
    fn every_config_level_reads_as_git_config_lists_it() {
        let here = "gitoxide::tests::every_config_level_reads_as_git_config_lists_it";
        let Some(root) = in_child_with_every_level(here, |_| Vec::new()) else {
            return;
        };
        for dir in [root.join("repo"), root.join("linked")] {
            let repo = open(&Location::Dir(dir.clone())).expect("opened");
            for sections in [&["bay"][..], &["bay", "user", "committer"]] {
                let ours = config_values(&repo, sections).expect("read");
                assert_eq!(ours, git_lists(&dir, sections), "{}", dir.display());
            }
        }
        let listed = git_lists(&root.join("linked"), &["bay", "user"]);
        for expected in ["from an include", "conditional", "env value", "/sys-path"] {
            assert!(listed.iter().any(|(_, v)| v == expected), "{listed:?}");
        }
        assert!(listed.iter().any(|(_, v)| v == "Linked Lee"), "{listed:?}");
    }

    #[test]
    fn git_config_global_replaces_the_home_files() {
        let here = "gitoxide::tests::git_config_global_replaces_the_home_files";
        let Some(root) = in_child_with_every_level(here, |root| {
            let global = root.join("elsewhere.gitconfig");
            write(&global, "[bay]\n\tmachine = from GIT_CONFIG_GLOBAL\n");
            vec![("GIT_CONFIG_GLOBAL", global.into())]
        }) else {
            return;
        };
        let dir = root.join("repo");
        let repo = open(&Location::Dir(dir.clone())).expect("opened");
        let ours = config_values(&repo, &["bay", "user"]).expect("read");
        assert_eq!(ours, git_lists(&dir, &["bay", "user"]));
        assert!(
            ours.iter().any(|(_, v)| v == "from GIT_CONFIG_GLOBAL"),
            "{ours:?}"
        );
    }
}
