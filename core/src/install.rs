//! What `bay install` decides: whether the program's folder is on `PATH`, which Claude config
//! directories get the skill, which local Git settings a clone gets, and the result that says
//! what was done. The CLI gathers the facts (environment, files, Git config) and writes what
//! these functions choose; nothing here reads or writes anything.
//!
//! Two scopes: the machine's part (the program and the skill) and, in a clone without
//! `--machine`, the clone's (local Git config and, when main names an agent product, bay's hook
//! entries in the project's settings file). Neither ever writes main, global Git config or a
//! user-global Claude settings file.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::detail::Detail;
use crate::result::BayResult;
use crate::skill::SkillState;

/// Where the program goes, under the home folder.
pub const BIN_DIR: &str = ".local/bin";

/// A `~/.claude-*` folder is a Claude config directory when it holds one of these.
pub const CONFIG_DIR_MARKERS: [&str; 4] = ["settings.json", ".claude.json", "projects", "skills"];

/// The Git config key that names more Claude config directories, one value each.
pub const CONFIG_DIRS_KEY: &str = "bay.claudeConfigDirs";

/// The local Git config key that holds the digest of other tools' hook entries
/// (`hook_settings::Merged::foreign_digest`).
pub const FOREIGN_HOOKS_KEY: &str = "bay.unrelated-hooks-digest";

/// Whether `dir` is one of the folders of `path` (a `PATH` value), a trailing `/` aside.
pub fn on_path(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path.split(':')
        .any(|entry| !entry.is_empty() && entry.trim_end_matches('/') == dir)
}

/// The refusal when the program's folder `dir` is not on `PATH`: agents and hook entries call
/// plain `bay`, so an install there would leave a program nothing runs. Nothing is written.
pub fn not_on_path(dir: &str) -> BayResult {
    let mut result = BayResult::failed(&format!(
        "{dir} is not on PATH, so nothing would find the bay installed there; add it to PATH in \
         your shell's startup file"
    ));
    result.detail.insert("bin_dir".into(), Value::from(dir));
    result.detail.insert(
        "fix".into(),
        Value::from(format!(
            "add the line export PATH=\"{dir}:$PATH\" to ~/.profile (or your shell's startup \
             file), open a new shell, then run bay install again"
        )),
    );
    result
}

/// What the machine shows about where Claude Code keeps its config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaudeDirsSeen {
    /// `$CLAUDE_CONFIG_DIR`, when set and not empty.
    pub env: Option<String>,
    /// The home folder, without a trailing `/`.
    pub home: String,
    /// Each folder in the home folder whose name starts with `.claude-`, and whether it holds
    /// one of [`CONFIG_DIR_MARKERS`].
    pub home_dirs: Vec<(String, bool)>,
    /// The values of [`CONFIG_DIRS_KEY`] in global Git config.
    pub named: Vec<String>,
    /// The config directory of each running `claude` session of this user under this home.
    pub sessions: Vec<String>,
}

/// Every Claude config directory the skill goes into, each once, in the spec's order: your
/// own (`$CLAUDE_CONFIG_DIR`, else `~/.claude`), `~/.claude`, each `~/.claude-*` that holds a
/// config, the running sessions' directories, then the ones Git config names. A named value
/// that is neither absolute nor under `~/` is left out: it could mean any folder.
pub fn claude_config_dirs(seen: &ClaudeDirsSeen) -> Vec<String> {
    let home = seen.home.trim_end_matches('/');
    let default = format!("{home}/.claude");
    let mut home_dirs: Vec<&String> = seen
        .home_dirs
        .iter()
        .filter(|(name, holds)| *holds && name.starts_with(".claude-"))
        .map(|(name, _)| name)
        .collect();
    home_dirs.sort();
    let named = seen.named.iter().filter_map(|value| {
        if value.starts_with('/') {
            Some(value.clone())
        } else {
            value
                .strip_prefix("~/")
                .map(|rest| format!("{home}/{rest}"))
        }
    });
    let all = seen
        .env
        .iter()
        .cloned()
        .chain([default.clone(), default])
        .chain(home_dirs.into_iter().map(|name| format!("{home}/{name}")))
        .chain(seen.sessions.iter().cloned())
        .chain(named);
    let mut dirs: Vec<String> = Vec::new();
    for dir in all {
        let dir = dir.trim_end_matches('/').to_owned();
        if !dir.is_empty() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// A name for this machine in bay's records, from its host name: lower-case letters, digits
/// and `-`, since it becomes part of a ref name.
pub fn machine_name(host: &str) -> String {
    let mapped: String = host
        .trim()
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-') => c,
            _ => '-',
        })
        .collect();
    let name = mapped.trim_matches('-');
    if name.is_empty() {
        "machine".to_owned()
    } else {
        name.to_owned()
    }
}

/// A Git version, as `git version` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GitVersion(pub u32, pub u32);

impl GitVersion {
    /// Reads `git version 2.47.3` (and vendor suffixes such as `(Apple Git-146)`).
    pub fn parse(text: &str) -> Option<GitVersion> {
        let mut parts = GitVersion::number(text)?.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(GitVersion(major, minor))
    }

    /// The number in `git version 2.47.3 (Apple Git-146)`: `2.47.3`.
    pub fn number(text: &str) -> Option<&str> {
        text.trim()
            .strip_prefix("git version ")?
            .split_whitespace()
            .next()
    }
}

/// A Git config value read as Git reads a boolean: `true`, `yes`, `on` or a non-zero number
/// is true; `false`, `no`, `off`, `0` or an empty value is false (the words in any case).
/// `None` for anything else, which Git refuses. (A key with no value at all is true: the
/// CLI's reader of the config gives it as `true`.)
pub fn git_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" | "" => Some(false),
        number => number.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// What a clone's Git config holds of the keys install sets, by lower-cased name, with the
/// value that wins.
pub type Held = std::collections::BTreeMap<String, String>;

/// The local Git settings a clone gets, and whether to write the first commit-graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClonePlan {
    /// `(key, value)` to set in the local config, in order.
    pub set: Vec<(String, String)>,
    /// Write a commit-graph with changed-path filters: the clone has none and Git may keep one.
    pub write_graph: bool,
}

/// What the clone needs: `bay.main` and `bay.remote` as chosen, `bay.machine` when unset, the
/// digest of other tools' hook entries when bay writes entries (for `bay doctor` to see them
/// change), and the commit-graph settings the config does not set already (`fetch.writeCommitGraph`; with
/// Git 2.46 and no filters yet, `commitGraph.changedPathsVersion = 2`; with Git 2.52,
/// `commitGraph.changedPaths`). A key already holding the value is not set again, so a second
/// install sets nothing.
pub fn clone_plan(
    held: &Held,
    main: &str,
    remote: &str,
    machine: &str,
    foreign_hooks: Option<&str>,
    git: GitVersion,
    has_filters: bool,
) -> ClonePlan {
    let mut set = Vec::new();
    let mut want = |key: &str, value: &str, only_when_unset: bool| {
        let current = held.get(&key.to_ascii_lowercase());
        let needed = match current {
            None => true,
            Some(current) => !only_when_unset && current != value,
        };
        if needed {
            set.push((key.to_owned(), value.to_owned()));
        }
    };
    want("bay.main", main, false);
    want("bay.remote", remote, false);
    want("bay.machine", machine, true);
    if let Some(digest) = foreign_hooks {
        want(FOREIGN_HOOKS_KEY, digest, false);
    }
    want("fetch.writeCommitGraph", "true", true);
    if git >= GitVersion(2, 46) && !has_filters {
        want("commitGraph.changedPathsVersion", "2", true);
    }
    if git >= GitVersion(2, 52) {
        want("commitGraph.changedPaths", "true", true);
    }
    let graphs_off = held
        .get("core.commitgraph")
        .is_some_and(|v| git_bool(v) == Some(false));
    ClonePlan {
        set,
        write_graph: !has_filters && !graphs_off,
    }
}

/// Whether a commit-graph file holds changed-path Bloom filters: its chunk table lists `BDAT`.
/// A file too short or with another signature holds none.
pub fn has_bloom_filters(graph: &[u8]) -> bool {
    const HEADER: usize = 8;
    const ENTRY: usize = 12;
    if graph.len() < HEADER || &graph[..4] != b"CGPH" {
        return false;
    }
    let chunks = usize::from(graph[6]);
    (0..chunks).any(|i| {
        let at = HEADER + i * ENTRY;
        graph.get(at..at + 4) == Some(b"BDAT".as_slice())
    })
}

/// What one install did, gathered by the CLI for the result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// Where the program is, and whether this install wrote it.
    pub program: String,
    pub program_written: bool,
    /// Each Claude config directory, with the state its skill was in before this install.
    pub skills: Vec<(String, SkillState)>,
    /// The clone's part, unless the install was for the machine alone.
    pub clone: Option<CloneDone>,
}

/// The clone's part of an install.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CloneDone {
    pub main: String,
    pub remote: String,
    /// The local settings this install set.
    pub set: Vec<(String, String)>,
    pub graph: GraphDone,
    /// bay's hook entries: `None` when main names no agent product.
    pub hooks: Option<HooksDone>,
}

/// The first commit-graph: not needed, written, or not written and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum GraphDone {
    #[default]
    NotNeeded,
    Written,
    Failed(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HooksDone {
    pub product: crate::adapter::Product,
    /// The settings file, relative to the work tree.
    pub file: String,
    /// Whether this install changed the file.
    pub written: bool,
    /// Whether main's copy still lacks the entries (`hook_settings::to_land`).
    pub to_land: bool,
}

/// The command a person runs to land the settings file on main.
pub const LAND_COMMAND: &str = "bay save enable-hooks";

/// The result of an install: `ok`, with what each part holds now in `detail`.
pub fn outcome(done: &Done) -> BayResult {
    let installed = Installed {
        installed: if done.clone.is_some() {
            "clone"
        } else {
            "machine"
        },
        program: Program {
            path: &done.program,
            written: done.program_written,
        },
        skill: done
            .skills
            .iter()
            .map(|(dir, was)| Skill {
                dir,
                was: *was,
                written: *was != SkillState::Matches,
            })
            .collect(),
        clone: done.clone.as_ref().map(CloneShown::of),
    };
    BayResult::ok(None, installed.to_map())
}

/// What an install's `detail` says it did.
#[derive(Serialize)]
struct Installed<'a> {
    /// `machine`, or `clone` for an install that set this clone up too.
    installed: &'static str,
    program: Program<'a>,
    skill: Vec<Skill<'a>>,
    #[serde(flatten)]
    clone: Option<CloneShown<'a>>,
}

#[derive(Serialize)]
struct Program<'a> {
    path: &'a str,
    written: bool,
}

/// A Claude config directory's skill: the state it was in, and whether this install wrote it.
#[derive(Serialize)]
struct Skill<'a> {
    dir: &'a str,
    was: SkillState,
    written: bool,
}

/// The clone's part of an install's `detail`.
#[derive(Serialize)]
struct CloneShown<'a> {
    main: &'a str,
    remote: &'a str,
    git_config_set: BTreeMap<&'a str, &'a str>,
    commit_graph: Graph<'a>,
    hooks: Hooks<'a>,
    /// The settings file main's copy still lacks, and what lands it.
    #[serde(skip_serializing_if = "Option::is_none")]
    hooks_to_land: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

#[derive(Serialize)]
struct Graph<'a> {
    written: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    write_failed: Option<&'a str>,
}

/// bay's hook entries: `"off"` when main names no agent product.
#[derive(Serialize)]
#[serde(untagged)]
enum Hooks<'a> {
    Off(&'static str),
    On {
        product: crate::adapter::Product,
        file: &'a str,
        written: bool,
    },
}

impl Detail for Installed<'_> {}

impl<'a> CloneShown<'a> {
    fn of(clone: &'a CloneDone) -> CloneShown<'a> {
        let to_land = clone.hooks.as_ref().filter(|hooks| hooks.to_land);
        CloneShown {
            main: &clone.main,
            remote: &clone.remote,
            git_config_set: clone
                .set
                .iter()
                .map(|(key, value)| (key.as_str(), value.as_str()))
                .collect(),
            commit_graph: match &clone.graph {
                GraphDone::NotNeeded => Graph {
                    written: false,
                    write_failed: None,
                },
                GraphDone::Written => Graph {
                    written: true,
                    write_failed: None,
                },
                GraphDone::Failed(why) => Graph {
                    written: false,
                    write_failed: Some(why),
                },
            },
            hooks: match &clone.hooks {
                None => Hooks::Off("off"),
                Some(hooks) => Hooks::On {
                    product: hooks.product,
                    file: &hooks.file,
                    written: hooks.written,
                },
            },
            hooks_to_land: to_land.map(|hooks| hooks.file.as_str()),
            next: to_land.map(|hooks| {
                format!(
                    "commit {} and merge it into main, for example with `{LAND_COMMAND}`; \
                     every clone and view then runs bay's hooks",
                    hooks.file
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::Product;

    #[test]
    fn the_folder_must_be_one_of_path_s_own() {
        assert!(on_path("/usr/bin:/h/.local/bin/:/bin", "/h/.local/bin"));
        assert!(!on_path("/usr/bin:/h/.local/bin/x", "/h/.local/bin"));
        assert!(!on_path("", "/h/.local/bin"));
        let refused = not_on_path("/h/.local/bin");
        assert_eq!(refused.decision, crate::result::Decision::Failed);
        assert!(
            refused.say.contains("/h/.local/bin is not on PATH"),
            "{}",
            refused.say
        );
        assert!(
            refused.detail["fix"]
                .as_str()
                .is_some_and(|fix| fix.contains("export PATH"))
        );
    }

    #[test]
    fn config_dirs_come_in_the_spec_s_order_each_once() {
        let seen = ClaudeDirsSeen {
            env: Some("/work/claude-a/".into()),
            home: "/h".into(),
            home_dirs: vec![
                (".claude-zed".into(), true),
                (".claude-bare".into(), false),
                (".claude-alt".into(), true),
            ],
            named: vec![
                "~/team".into(),
                "relative/dir".into(),
                "/abs".into(),
                "/h/.claude".into(),
            ],
            sessions: vec!["/work/claude-a".into(), "/s".into()],
        };
        assert_eq!(
            claude_config_dirs(&seen),
            [
                "/work/claude-a",
                "/h/.claude",
                "/h/.claude-alt",
                "/h/.claude-zed",
                "/s",
                "/h/team",
                "/abs"
            ]
        );
        let plain = ClaudeDirsSeen {
            home: "/h/".into(),
            ..ClaudeDirsSeen::default()
        };
        assert_eq!(claude_config_dirs(&plain), ["/h/.claude"]);
    }

    #[test]
    fn a_machine_name_is_safe_in_a_ref() {
        assert_eq!(machine_name("Build-Box_7.local\n"), "build-box-7-local");
        assert_eq!(machine_name("..."), "machine");
    }

    #[test]
    fn git_versions_read_with_vendor_suffixes() {
        assert_eq!(
            GitVersion::parse("git version 2.47.3\n"),
            Some(GitVersion(2, 47))
        );
        assert_eq!(
            GitVersion::parse("git version 2.39.5 (Apple Git-154)"),
            Some(GitVersion(2, 39))
        );
        assert_eq!(GitVersion::parse("hg 6"), None);
        assert_eq!(
            GitVersion::number("git version 2.39.5 (Apple Git-154)"),
            Some("2.39.5")
        );
    }

    #[test]
    fn config_booleans_read_as_git_reads_them() {
        for yes in ["true", "Yes", "ON", "1", "-2"] {
            assert_eq!(git_bool(yes), Some(true), "{yes:?}");
        }
        for no in ["false", "No", "off", "0", ""] {
            assert_eq!(git_bool(no), Some(false), "{no:?}");
        }
        assert_eq!(git_bool("maybe"), None);
    }

    #[test]
    fn a_clone_gets_what_it_lacks_and_a_second_install_sets_nothing() {
        let plan = clone_plan(
            &Held::new(),
            "main",
            "origin",
            "box",
            Some("d1"),
            GitVersion(2, 47),
            false,
        );
        let keys: Vec<&str> = plan.set.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "bay.main",
                "bay.remote",
                "bay.machine",
                FOREIGN_HOOKS_KEY,
                "fetch.writeCommitGraph",
                "commitGraph.changedPathsVersion"
            ]
        );
        assert!(plan.write_graph);
        let held: Held = plan
            .set
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
            .collect();
        let again = clone_plan(
            &held,
            "main",
            "origin",
            "other",
            Some("d1"),
            GitVersion(2, 47),
            true,
        );
        assert_eq!(again.set, []);
        assert!(!again.write_graph);
        let moved = clone_plan(
            &held,
            "dev",
            "origin",
            "other",
            Some("d2"),
            GitVersion(2, 47),
            true,
        );
        assert_eq!(
            moved.set,
            [
                ("bay.main".to_owned(), "dev".to_owned()),
                (FOREIGN_HOOKS_KEY.to_owned(), "d2".to_owned())
            ]
        );
    }

    #[test]
    fn settings_the_config_already_has_and_old_gits_are_left_alone() {
        let mut held = Held::new();
        held.insert("fetch.writecommitgraph".into(), "false".into());
        held.insert("core.commitgraph".into(), "false".into());
        let plan = clone_plan(
            &held,
            "main",
            "origin",
            "box",
            None,
            GitVersion(2, 40),
            false,
        );
        let keys: Vec<&str> = plan.set.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["bay.main", "bay.remote", "bay.machine"]);
        assert!(!plan.write_graph);
        let newest = clone_plan(&Held::new(), "m", "o", "b", None, GitVersion(2, 52), false);
        assert!(
            newest
                .set
                .iter()
                .any(|(k, _)| k == "commitGraph.changedPaths")
        );
    }

    #[test]
    fn bloom_filters_are_found_in_the_chunk_table() {
        let graph = |chunks: &[&[u8; 4]]| {
            let mut bytes = b"CGPH\x01\x01".to_vec();
            bytes.push(u8::try_from(chunks.len()).expect("few chunks"));
            bytes.push(0);
            for id in chunks {
                bytes.extend_from_slice(*id);
                bytes.extend_from_slice(&[0; 8]);
            }
            bytes.extend_from_slice(&[0; 12]);
            bytes
        };
        assert!(has_bloom_filters(&graph(&[
            b"OIDF", b"OIDL", b"CDAT", b"BIDX", b"BDAT"
        ])));
        assert!(!has_bloom_filters(&graph(&[b"OIDF", b"OIDL", b"CDAT"])));
        assert!(!has_bloom_filters(b"CGPH"));
    }

    #[test]
    fn the_result_names_the_file_to_land_until_main_holds_it() {
        let hooks = |to_land| HooksDone {
            product: Product::Claude,
            file: ".claude/settings.json".into(),
            written: true,
            to_land,
        };
        let done = |to_land| Done {
            program: "/h/.local/bin/bay".into(),
            program_written: true,
            skills: vec![("/h/.claude".into(), SkillState::Missing)],
            clone: Some(CloneDone {
                main: "main".into(),
                remote: "origin".into(),
                hooks: Some(hooks(to_land)),
                ..CloneDone::default()
            }),
        };
        let landing = outcome(&done(true));
        assert_eq!(landing.detail["hooks_to_land"], ".claude/settings.json");
        assert!(
            landing.detail["next"]
                .as_str()
                .is_some_and(|n| n.contains(LAND_COMMAND))
        );
        assert!(landing.say.contains(LAND_COMMAND), "{}", landing.say);
        let landed = outcome(&done(false));
        assert!(!landed.detail.contains_key("hooks_to_land"));
        assert_eq!(landed.detail["skill"][0]["written"], true);
        let machine = outcome(&Done::default());
        assert_eq!(machine.detail["installed"], "machine");
        assert!(!machine.detail.contains_key("hooks"));
        let mut off = done(false);
        if let Some(clone) = off.clone.as_mut() {
            clone.hooks = None;
        }
        let off = outcome(&off);
        assert_eq!(off.detail["hooks"], "off");
        let sentences = [landing.say, landed.say, machine.say, off.say];
        for say in &sentences {
            assert_eq!(crate::words::forbidden_word(say), None, "{say}");
        }
        let distinct: std::collections::BTreeSet<&String> = sentences.iter().collect();
        assert_eq!(distinct.len(), 4, "each case says its own");
    }

    #[test]
    fn the_detail_of_a_clone_install_names_each_part_as_it_is() {
        let done = Done {
            program: "/h/.local/bin/bay".into(),
            program_written: false,
            skills: vec![("/h/.claude".into(), SkillState::Matches)],
            clone: Some(CloneDone {
                main: "main".into(),
                remote: "origin".into(),
                set: vec![("bay.main".into(), "main".into())],
                graph: GraphDone::Failed("disk full".into()),
                hooks: Some(HooksDone {
                    product: Product::Codex,
                    file: ".codex/hooks.json".into(),
                    written: false,
                    to_land: false,
                }),
            }),
        };
        assert_eq!(
            Value::from(outcome(&done).detail),
            serde_json::json!({
                "installed": "clone",
                "program": {"path": "/h/.local/bin/bay", "written": false},
                "skill": [{"dir": "/h/.claude", "was": "matches", "written": false}],
                "main": "main",
                "remote": "origin",
                "git_config_set": {"bay.main": "main"},
                "commit_graph": {"written": false, "write_failed": "disk full"},
                "hooks": {"product": "codex", "file": ".codex/hooks.json", "written": false},
            })
        );
        assert_eq!(
            Value::from(outcome(&Done::default()).detail),
            serde_json::json!({
                "installed": "machine",
                "program": {"path": "", "written": false},
                "skill": [],
            })
        );
    }
}
