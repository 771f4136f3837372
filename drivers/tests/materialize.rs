//! What of the candidate and the machine a check is given, against a real repository, in bwrap
//! and without it: its `paths`, only the changed files, a copy bounded by
//! `materialize_timeout_s`, a Git directory to read history from, and the machine's
//! `bay.checkReadPath` directories, read-only.

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bay_core::policy::{CheckInput, Materialize};
use bay_drivers::check::ReadPaths;
use bay_drivers::sandbox::Sandbox;
use support::checks::{Repo, both, bwrap, check, git, lines, text, vars};

/// Lists the files of its tree and says what the request told it about the copy.
const LIST: &str = r#"#!/bin/sh
request=$(cat)
echo "tree:$(find . -type f | sort | tr '\n' ' ')"
echo "materialized:$(printf '%s' "$request" | sed -n 's/.*"materialized":"\([a-z]*\)".*/\1/p')"
echo "changed:$(printf '%s' "$request" | sed -n 's/.*"changed_paths":\(\[[^]]*\]\).*/\1/p')"
echo "a:$(cat src/a.rs 2>/dev/null)"
if echo x > written; then echo "write_tree:yes"; else echo "write_tree:no"; fi
"#;

fn base_files() -> Vec<(&'static str, &'static str)> {
    vec![
        (".bay/check.sh", LIST),
        ("Cargo.toml", "[package]\n"),
        ("src/a.rs", "a\n"),
        ("src/deep/b.rs", "b\n"),
        ("docs/x.md", "x\n"),
        (".lint.toml", "lint\n"),
    ]
}

#[test]
fn paths_give_the_check_only_those_files_and_directories() {
    let repo = Repo::with(&base_files());
    let candidate = repo.candidate(&[("docs/x.md", "changed\n"), ("srcs/c.rs", "c\n")]);
    for sandbox in both() {
        let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
        spec.paths = Some(vec!["./src/".into(), "Cargo.toml".into(), "gone/".into()]);
        let exit = repo.run(spec, &candidate, &sandbox, &vars(&[]));
        assert_eq!(exit.infra, None, "{sandbox:?}");
        let seen = lines(&exit);
        // Not `srcs/`, which only shares a prefix; a path the candidate lacks is just absent.
        assert_eq!(
            seen["tree"],
            "./Cargo.toml ./src/a.rs ./src/deep/b.rs ",
            "{sandbox:?}: {}",
            text(&exit)
        );
        assert_eq!(
            seen["materialized"], "",
            "the tree of its paths is not partial"
        );
        assert_eq!(seen["write_tree"], "yes");
    }
}

#[test]
fn changed_gives_the_changed_files_plus_paths_and_says_so() {
    let repo = Repo::with(&base_files());
    git(&repo.work, &["rm", "-q", "docs/x.md"]);
    let candidate = repo.candidate(&[("src/a.rs", "a2\n"), ("new/n.txt", "n\n")]);
    for sandbox in both() {
        let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
        spec.materialize = Materialize::Changed;
        spec.paths = Some(vec![".lint.toml".into()]);
        let exit = repo.run(spec.clone(), &candidate, &sandbox, &vars(&[]));
        assert_eq!(exit.infra, None, "{sandbox:?}");
        let seen = lines(&exit);
        // The deleted file is absent; the adapter is not in the tree, it comes from the base.
        assert_eq!(
            seen["tree"], "./.lint.toml ./new/n.txt ./src/a.rs ",
            "{sandbox:?}"
        );
        assert_eq!(seen["materialized"], "changed");
        assert_eq!(seen["changed"], r#"["docs/x.md","new/n.txt","src/a.rs"]"#);
        assert_eq!(seen["a"], "a2", "the changed file is the candidate's");

        // Without paths, only the changed files.
        spec.paths = None;
        let exit = repo.run(spec, &candidate, &sandbox, &vars(&[]));
        assert_eq!(lines(&exit)["tree"], "./new/n.txt ./src/a.rs ");
    }
}

#[test]
fn a_copy_past_materialize_timeout_s_is_infra_and_names_it() {
    let repo = Repo::with(&[(".bay/check.sh", "#!/bin/sh\necho ran\n")]);
    // A smudge filter that takes far longer than the limit: Git runs it while it writes the
    // candidate's files, so the copy itself is slow, whatever the machine's speed.
    git(
        &repo.work,
        &["config", "filter.slow.smudge", "sleep 20; cat"],
    );
    let candidate = repo.candidate(&[
        (".gitattributes", "*.slow filter=slow\n"),
        ("big.slow", "slow\n"),
    ]);
    let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
    spec.materialize_timeout_s = 1;
    for sandbox in both() {
        let started = Instant::now();
        let exit = repo.run(spec.clone(), &candidate, &sandbox, &vars(&[]));
        let infra = exit.infra.expect("a copy past its limit is infra");
        assert!(
            infra.contains("ran past its materialize_timeout_s of 1 s"),
            "{infra}"
        );
        assert!(exit.stdout.is_empty(), "the check never ran");
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    // The same limit holds for a check whose paths leave the slow file out.
    spec.paths = Some(vec![".gitattributes".into()]);
    let exit = repo.run(spec, &candidate, &Sandbox::Off, &vars(&[]));
    assert_eq!(exit.infra, None);
    assert_eq!(text(&exit), "ran\n");
}

/// Reads the change's log through the request's `git`, then tries to write there and into the
/// repository's own Git directory.
const HISTORY: &str = r#"#!/bin/sh
request=$(cat)
dir=$(printf '%s' "$request" | sed -n 's/.*"git":{"dir":"\([^"]*\)".*/\1/p')
base=$(printf '%s' "$request" | sed -n 's/.*"refs":{"base":"\([0-9a-f]*\)".*/\1/p')
revision=$(printf '%s' "$request" | sed -n 's/.*"revision":"\([0-9a-f]*\)".*/\1/p')
echo "inputs:$(printf '%s' "$request" | sed -n 's/.*"inputs":\(\[[^]]*\]\).*/\1/p')"
echo "dir:$dir"
echo "log:$(GIT_DIR="$dir" git log --format=%s "$base..$revision" 2>&1 | tr '\n' ' ')"
try() { if eval "$2" >/dev/null 2>&1; then echo "$1:yes"; else echo "$1:no"; fi; }
try write_store 'echo x | GIT_DIR="$dir" git hash-object -w --stdin'
try write_objects 'touch "$REPO_GIT/objects/escaped"'
try write_dir 'touch "$dir/escaped"'
try read_config 'cat "$REPO_GIT/config"'
try read_head 'cat "$REPO_GIT/HEAD"'
try git_made 'test -d "$HOME/../git"'
"#;

#[test]
fn history_gives_a_read_only_git_directory_named_in_the_request() {
    let repo = Repo::with(&[(".bay/check.sh", HISTORY)]);
    let candidate = repo.candidate(&[("src/new.txt", "new\n")]);
    let repo_git = std::fs::canonicalize(&repo.git_dir).expect("the Git directory exists");
    let env = vars(&[("REPO_GIT", &repo_git.display().to_string())]);
    let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
    spec.env = vec!["REPO_GIT".into()];
    spec.inputs = vec![CheckInput::History];

    let exit = repo.run(spec.clone(), &candidate, &bwrap(), &env);
    assert_eq!(exit.infra, None);
    let seen = lines(&exit);
    let out = text(&exit);
    assert_eq!(seen["inputs"], r#"["tree","history"]"#, "{out}");
    let dirs = repo.dirs(&candidate);
    assert_eq!(seen["dir"], dirs.git.display().to_string());
    assert_eq!(seen["log"], "candidate ", "{out}");
    for denied in [
        "write_store",
        "write_objects",
        "write_dir",
        "read_config",
        "read_head",
    ] {
        assert_eq!(seen[denied], "no", "{denied} in the sandbox:\n{out}");
    }
    assert!(!repo_git.join("objects/escaped").exists());

    // Without the sandbox the same check reads the same history, and nothing stops its writes:
    // each "no" above is the sandbox's.
    let exit = repo.run(spec.clone(), &candidate, &Sandbox::Off, &env);
    let open = lines(&exit);
    assert_eq!(open["log"], "candidate ", "{}", text(&exit));
    assert_eq!(open["write_objects"], "yes");
    std::fs::remove_file(repo_git.join("objects/escaped")).expect("remove the probe's file");

    assert_eq!(open["git_made"], "yes");

    // `commit` alone is listed, and gives no Git directory (looked for without the sandbox,
    // which would hide one).
    spec.inputs = vec![CheckInput::Commit];
    let exit = repo.run(spec, &candidate, &Sandbox::Off, &env);
    let seen = lines(&exit);
    assert_eq!(seen["inputs"], r#"["tree","commit"]"#);
    assert_eq!(seen["dir"], "");
    assert_eq!(
        seen["git_made"], "no",
        "no Git directory is made without history"
    );
}

/// Reads and tries to write each directory named in `$READ`.
const READ: &str = r#"#!/bin/sh
try() { if eval "$2" >/dev/null 2>&1; then echo "$1:yes"; else echo "$1:no"; fi; }
try read_cache 'cat "$CACHE/tool.txt"'
try read_home 'cat "$MACHINE_HOME/.cache/pnpm/store.txt"'
try write_cache 'echo x > "$CACHE/written"'
try write_home 'echo x > "$MACHINE_HOME/.cache/pnpm/written"'
try read_missing 'ls "$CACHE-missing"'
"#;

#[test]
fn read_paths_are_readable_never_writable_and_listed() {
    let repo = Repo::with_in(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &[(".bay/check.sh", READ)],
    );
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary dir");
    let cache = outside.path().join("cache");
    let home = outside.path().join("home");
    let store = home.join(".cache/pnpm");
    std::fs::create_dir_all(&cache).expect("make the cache");
    std::fs::create_dir_all(&store).expect("make the store");
    std::fs::write(cache.join("tool.txt"), "tool\n").expect("write the cache");
    std::fs::write(store.join("store.txt"), "store\n").expect("write the store");
    let missing = format!("{}-missing", cache.display());
    let read = ReadPaths {
        values: vec![
            cache.display().to_string(),
            "~/.cache/pnpm".into(),
            missing.clone(),
        ],
        kept_out: vec![repo.work.clone()],
    };
    let env = vars(&[
        ("CACHE", &cache.display().to_string()),
        ("MACHINE_HOME", &home.display().to_string()),
        ("HOME", &home.display().to_string()),
    ]);
    let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
    spec.env = vec!["CACHE".into(), "MACHINE_HOME".into()];

    let exit = repo.run_reading(spec.clone(), &repo.base, &bwrap(), &env, &read);
    assert_eq!(exit.infra, None);
    let seen = lines(&exit);
    let out = text(&exit);
    for (probe, answer) in [
        ("read_cache", "yes"),
        ("read_home", "yes"),
        ("write_cache", "no"),
        ("write_home", "no"),
        ("read_missing", "no"),
    ] {
        assert_eq!(seen[probe], answer, "{probe} in the sandbox:\n{out}");
    }
    assert!(!cache.join("written").exists() && !store.join("written").exists());
    assert_eq!(
        exit.sandbox_read,
        [cache.display().to_string(), store.display().to_string()],
        "the missing path is not bound, nor listed"
    );

    // Without the sandbox nothing is read-only, and the record lists nothing.
    let exit = repo.run_reading(spec, &repo.base, &Sandbox::Off, &env, &read);
    assert_eq!(lines(&exit)["write_cache"], "yes");
    assert!(exit.sandbox_read.is_empty());
}

#[test]
fn a_read_path_over_the_repository_a_view_or_a_key_or_not_absolute_is_infra() {
    let repo = Repo::with(&[(".bay/check.sh", "#!/bin/sh\necho ran\n")]);
    let outside = tempfile::tempdir().expect("a temporary dir");
    let key = outside.path().join("keys/agent");
    std::fs::create_dir_all(key.parent().expect("a parent")).expect("make the key's folder");
    std::fs::write(&key, "secret key\n").expect("write the key");
    let view = repo.git_dir.join("bay/views/c7k2m4qa");
    std::fs::create_dir_all(&view).expect("make a view's folder");
    let link = outside.path().join("link");
    std::os::unix::fs::symlink(&repo.work, &link).expect("link to the repository");
    let home = outside.path().display().to_string();

    let refused = |value: &str, why: &str| {
        let read = ReadPaths {
            values: vec![value.to_owned()],
            kept_out: vec![repo.work.clone(), key.clone()],
        };
        for sandbox in both() {
            let spec = check(".bay/check.sh", &[".bay/check.sh"]);
            let exit =
                repo.run_reading(spec, &repo.base, &sandbox, &vars(&[("HOME", &home)]), &read);
            let infra = exit
                .infra
                .unwrap_or_else(|| panic!("{value} must be refused"));
            assert!(infra.contains(&format!("{value:?}")), "{infra}");
            assert!(infra.contains(why), "{infra}");
            assert!(exit.stdout.is_empty());
            assert!(!repo.dirs(&repo.base).root.exists(), "nothing was laid out");
        }
    };
    let overlaps = "overlaps";
    refused(&repo.work.display().to_string(), overlaps);
    refused(&repo.work.join("src").display().to_string(), overlaps);
    refused(&view.display().to_string(), overlaps);
    refused("/", overlaps);
    refused("~/keys", overlaps);
    refused(&link.display().to_string(), overlaps);
    refused("cache", "neither an absolute path nor under ~/");

    // A value beside the repository, not over it, is fine.
    let sibling: PathBuf = outside.path().join("cache");
    std::fs::create_dir_all(&sibling).expect("make a cache");
    let read = ReadPaths {
        values: vec![sibling.display().to_string()],
        kept_out: vec![repo.work.clone(), key],
    };
    let spec = check(".bay/check.sh", &[".bay/check.sh"]);
    let exit = repo.run_reading(spec, &repo.base, &bwrap(), &vars(&[]), &read);
    assert_eq!(exit.infra, None);
    assert_eq!(text(&exit), "ran\n");
}
