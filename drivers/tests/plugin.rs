//! `plugin::run` against a real repository: the program comes from the commit, never the work
//! tree; it gets only `PATH` and `HOME`, its words and an empty directory; what it prints is
//! kept up to the cap; a missing program or a timeout is reported as such.

mod support;

use bay_core::machine::{PluginExit, PluginRun};
use bay_core::plugin::STDOUT_CAP;
use bay_drivers::remote::Repo as Clone;
use support::checks::{Repo, write};

/// Runs `program` from `commit` of `repo` with `args`, as the driver's environment `env`.
fn run(repo: &Repo, commit: &bay_core::git::Oid, program: &str, timeout_s: u64) -> PluginExit {
    let clone = Clone::new(&repo.work, "origin", "main").expect("a clone");
    let env = |name: &str| match name {
        "PATH" => Some("/usr/bin:/bin".to_owned()),
        "HOME" => Some("/home/runner".to_owned()),
        _ => Some("a secret".to_owned()),
    };
    let call = PluginRun {
        commit: commit.clone(),
        program: program.into(),
        args: vec!["--team".into(), "status".into()],
        stdin: Vec::new(),
        timeout_s,
    };
    bay_drivers::plugin::run(&clone, &call, &env)
}

fn stdout(exit: &PluginExit) -> String {
    match exit {
        PluginExit::Exited {
            code: Some(0),
            stdout,
        } => String::from_utf8_lossy(stdout).into_owned(),
        other => panic!("the plugin did not exit 0: {other:?}"),
    }
}

const SHOW: &str = "#!/bin/sh\necho \"committed $# $1 $2 $HOME $PATH $(ls -A | wc -l)\"\nenv | cut -d= -f1 | sort\n";

#[test]
fn the_program_runs_from_the_commit_with_its_words_and_only_path_and_home() {
    let repo = Repo::with(&[("scripts/bay-hold", SHOW)]);
    // The work tree's copy says otherwise; only the commit's counts.
    write(
        &repo.work,
        &[("scripts/bay-hold", "#!/bin/sh\necho work tree\n")],
    );
    let out = stdout(&run(&repo, &repo.base, "scripts/bay-hold", 10));
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("committed 2 --team status /home/runner /usr/bin:/bin 0"),
        "{out}"
    );
    let names: Vec<&str> = lines.collect();
    assert!(names.contains(&"PATH") && names.contains(&"HOME"), "{out}");
    for name in &names {
        // What the shell sets for itself is all that may come besides PATH and HOME.
        assert!(
            ["PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_"].contains(name),
            "the plugin saw {name} of the driver's environment: {out}"
        );
    }
}

#[test]
fn a_program_missing_from_the_commit_never_starts_and_is_named() {
    let repo = Repo::with(&[]);
    match run(&repo, &repo.base, "scripts/bay-hold", 10) {
        PluginExit::NotStarted(why) => {
            assert!(why.contains("no file scripts/bay-hold"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    match run(&repo, &repo.base, "../outside", 10) {
        PluginExit::NotStarted(why) => assert!(why.contains("not a path inside"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn stdout_is_kept_up_to_the_cap_and_a_timeout_is_reported() {
    let repo = Repo::with(&[
        ("scripts/loud", "#!/bin/sh\nhead -c 100000 /dev/zero\n"),
        ("scripts/slow", "#!/bin/sh\nsleep 30\n"),
    ]);
    match run(&repo, &repo.base, "scripts/loud", 10) {
        PluginExit::Exited { code, stdout } => {
            assert_eq!((code, stdout.len()), (Some(0), STDOUT_CAP));
        }
        other => panic!("{other:?}"),
    }
    let started = std::time::Instant::now();
    assert_eq!(
        run(&repo, &repo.base, "scripts/slow", 1),
        PluginExit::TimedOut
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
