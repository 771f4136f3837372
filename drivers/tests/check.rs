//! `run_check` against a real repository: what the check receives, where its programs come
//! from, what makes it `infra`, and how its time limit ends it.

mod support;

use std::time::{Duration, Instant};

use bay_core::check::{Verdict, judge};
use bay_drivers::check::{STDERR_TAIL, STDOUT_CAP, stderr_log, stderr_log_name};
use bay_drivers::sandbox::Sandbox;
use serde_json::Value;
use support::checks::{Repo, both, bwrap, check, marker, sleeps, text, vars};

/// Saves its request in `$HOME`, prints it and its environment to stderr, and reports one
/// passing unit about the candidate the request names.
const PASSING: &str = r#"#!/bin/sh
cat > "$HOME/request.json"
printf 'request:%s\n' "$(cat "$HOME/request.json")" >&2
env | sort >&2
candidate=$(sed -n 's/^{"schema":"bay.check.request\/1","candidate":\({[^}]*}\).*/\1/p' "$HOME/request.json")
printf '{"schema":"bay.check.result/1","exercised":%s,"plan":{"selected":1,"completed":1},"checks":[{"id":"%s","verdict":"pass"}]}' "$candidate" "$1"
"#;

#[test]
fn a_passing_check_gets_the_request_and_its_stdout_is_reported() {
    let repo = Repo::with(&[(".bay/check.sh", PASSING)]);
    let candidate = repo.candidate(&[("src/new.txt", "new\n")]);
    for sandbox in both() {
        let mut spec = check(".bay/check.sh t1", &[".bay/check.sh"]);
        spec.env = vec!["TOKEN".into()];
        let run = repo.run_of(spec.clone(), &candidate);
        let exit = repo.run(
            spec,
            &candidate,
            &sandbox,
            &vars(&[("TOKEN", "s3"), ("OTHER", "x")]),
        );
        assert_eq!(exit.infra, None, "{sandbox:?}");
        assert_eq!(exit.exit_code, Some(0), "{sandbox:?}");
        assert!(!exit.timed_out);

        // stderr went to the log, never to stdout, and shows the request and the fixed
        // environment.
        let log = stderr_log(
            &std::fs::canonicalize(&repo.git_dir).expect("exists"),
            &candidate,
            "unit",
            0,
        );
        let log = std::fs::read_to_string(log).expect("the stderr log exists");
        let received = log
            .lines()
            .find_map(|line| line.strip_prefix("request:"))
            .expect("the check printed its request");
        let received: Value = serde_json::from_str(received).expect("the request is JSON");
        let sent: Value = serde_json::from_str(&run.request.to_json()).expect("JSON");
        assert_eq!(received, sent);
        let schema: Value = serde_json::from_str(bay_core::schema::CHECK_REQUEST).expect("JSON");
        if let Err(errors) = jsonschema::validate(&schema, &received) {
            panic!("the check got a request outside bay.check.request/1: {errors:?}");
        }

        let printed: Value = serde_json::from_slice(&exit.stdout).expect("the check printed JSON");
        let schema: Value = serde_json::from_str(bay_core::schema::CHECK_RESULT).expect("JSON");
        assert!(jsonschema::is_valid(&schema, &printed), "{printed}");
        let expected = serde_json::json!({
            "schema": "bay.check.result/1",
            "exercised": sent["candidate"],
            "plan": {"selected": 1, "completed": 1},
            "checks": [{"id": "t1", "verdict": "pass"}],
        });
        assert_eq!(printed, expected);
        assert_eq!(judge(&run.request, 1, &exit).verdict(), Some(Verdict::Pass));

        let dirs = repo.dirs(&candidate);
        let mut names: Vec<&str> = log
            .lines()
            .filter(|line| !line.starts_with("request:"))
            .filter_map(|line| line.split_once('=').map(|(name, _)| name))
            .filter(|name| !["PWD", "SHLVL", "_", "OLDPWD"].contains(name))
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["BAY_ADAPTER_DIR", "HOME", "LANG", "PATH", "TMPDIR", "TOKEN"],
            "{log}"
        );
        for line in [
            "PATH=/usr/local/bin:/usr/bin:/bin".to_owned(),
            "LANG=C.UTF-8".to_owned(),
            "TOKEN=s3".to_owned(),
            format!("HOME={}", dirs.home.display()),
            format!("TMPDIR={}", dirs.tmp.display()),
            format!("BAY_ADAPTER_DIR={}", dirs.adapter.display()),
        ] {
            assert!(log.lines().any(|l| l == line), "{line} in {log}");
        }
    }
}

/// Says where it runs from, lists the tree, and uses a helper from an adapter directory.
const FROM_BASE: &str = r#"#!/bin/sh
. "$BAY_ADAPTER_DIR/.bay/lib/helper.sh"
echo "script:base"
echo "helper:$HELPER"
echo "tree:$(find . -type f | sort | tr '\n' ' ')"
echo "adapter:$(cd "$BAY_ADAPTER_DIR" && find . -type f | sort | tr '\n' ' ')"
echo "cwd:$(pwd)"
echo "tree_script:$(tail -n 1 .bay/check.sh)"
"#;

#[test]
fn the_adapter_runs_from_the_base_even_when_the_candidate_changes_it() {
    let repo = Repo::with(&[
        (".bay/check.sh", FROM_BASE),
        (".bay/lib/helper.sh", "HELPER=base\n"),
        (".bay/unused.sh", "#!/bin/sh\n"),
    ]);
    let candidate = repo.candidate(&[
        (".bay/check.sh", "#!/bin/sh\necho script:candidate\n"),
        (".bay/lib/helper.sh", "HELPER=candidate\n"),
        ("src/new.txt", "new\n"),
    ]);
    for sandbox in both() {
        let spec = check(".bay/check.sh", &["./.bay//check.sh", ".bay/lib/"]);
        let exit = repo.run(spec, &candidate, &sandbox, &vars(&[]));
        assert_eq!(exit.infra, None, "{sandbox:?}");
        let out = support::checks::lines(&exit);
        assert_eq!(out["script"], "base", "{}", text(&exit));
        assert_eq!(out["helper"], "base");
        // The tree is the candidate's, whole; the adapter holds only the adapter paths.
        assert_eq!(
            out["tree"],
            "./.bay/check.sh ./.bay/lib/helper.sh ./.bay/unused.sh ./README ./src/new.txt "
        );
        assert_eq!(out["adapter"], "./.bay/check.sh ./.bay/lib/helper.sh ");
        // The exit names each adapter file with the base's blob, for the check's definition.
        let blob = |path: &str| {
            let out = std::process::Command::new("git")
                .arg("--git-dir")
                .arg(&repo.git_dir)
                .args(["rev-parse", &format!("{}:{path}", repo.base)])
                .output()
                .expect("git runs");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        };
        assert_eq!(
            exit.adapter,
            vec![
                (".bay/check.sh".to_owned(), blob(".bay/check.sh")),
                (".bay/lib/helper.sh".to_owned(), blob(".bay/lib/helper.sh")),
            ]
        );
        assert_eq!(out["cwd"], repo.dirs(&candidate).tree.display().to_string());
        // The candidate's own script is in its tree.
        assert_eq!(out["tree_script"], "echo script:candidate");
    }
}

#[test]
fn an_adapter_path_missing_from_the_base_is_infra() {
    let repo = Repo::with(&[(".bay/check.sh", "#!/bin/sh\necho ran\n")]);
    let candidate = repo.candidate(&[(".bay/extra.sh", "#!/bin/sh\n")]);
    let spec = check(".bay/check.sh", &[".bay/check.sh", ".bay/extra.sh"]);
    let exit = repo.run(spec, &candidate, &Sandbox::Off, &vars(&[]));
    let infra = exit.infra.expect("a missing adapter path is infra");
    assert!(
        infra.contains("\".bay/extra.sh\" is not a file in the base"),
        "{infra}"
    );
    assert!(exit.stdout.is_empty());

    // A program committed without its executable bit cannot run: infra, with the fix.
    let repo = Repo::with(&[("scripts/check", "#!/bin/sh\necho ran\n")]);
    let exit = repo.run(
        check("scripts/check", &["scripts/"]),
        &repo.base,
        &Sandbox::Off,
        &vars(&[]),
    );
    let infra = exit
        .infra
        .expect("a program that is not executable is infra");
    assert!(infra.contains("not executable"), "{infra}");
}

#[test]
fn a_missing_env_variable_is_infra_and_nothing_runs() {
    let repo = Repo::with(&[(".bay/check.sh", "#!/bin/sh\ntouch ran\n")]);
    for sandbox in both() {
        let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
        spec.env = vec!["PRESENT".into(), "BAY_TEST_MISSING".into()];
        let exit = repo.run(spec, &repo.base, &sandbox, &vars(&[("PRESENT", "1")]));
        assert_eq!(
            exit.infra.as_deref().map(|i| i
                .starts_with("the check needs BAY_TEST_MISSING, which this runner does not set")),
            Some(true),
            "{exit:?}"
        );
        assert_eq!(exit.exit_code, None);
        assert!(!repo.dirs(&repo.base).root.exists(), "nothing was laid out");
    }
}

#[test]
fn without_a_sandbox_and_without_the_owners_none_nothing_runs() {
    let repo = Repo::with(&[(".bay/check.sh", "#!/bin/sh\ntouch ran\necho ran\n")]);
    let reason = "no check sandbox works on this machine: bwrap is not installed";
    let sandbox = Sandbox::Unavailable(reason.into());
    let spec = check(".bay/check.sh", &[".bay/check.sh"]);
    let run = repo.run_of(spec.clone(), &repo.base);
    let exit = repo.run(spec, &repo.base, &sandbox, &vars(&[]));
    assert_eq!(exit.infra.as_deref(), Some(reason));
    assert!(exit.stdout.is_empty());
    assert!(
        !repo.dirs(&repo.base).root.exists(),
        "nothing was laid out or run"
    );
    assert_eq!(
        judge(&run.request, 1, &exit).verdict(),
        Some(Verdict::InfraFailure)
    );

    // The owner's `none` is the only way to run without one.
    assert_eq!(Sandbox::detect(Some("none")), Sandbox::Off);
    assert_eq!(Sandbox::detect(None), bwrap());
}

/// Starts a grandchild that sleeps `$MARK` seconds, then outlasts the limit itself.
const SLOW: &str = r#"#!/bin/sh
( sleep "$MARK"; echo late ) &
echo started
sleep 30
"#;

#[test]
fn a_timeout_kills_the_whole_group_grandchildren_too() {
    let repo = Repo::with(&[(".bay/check.sh", SLOW)]);
    for sandbox in both() {
        let mark = marker();
        let mut spec = check(".bay/check.sh", &[".bay/check.sh"]);
        spec.timeout_s = 1;
        spec.env = vec!["MARK".into()];
        let started = Instant::now();
        let exit = repo.run(spec, &repo.base, &sandbox, &vars(&[("MARK", &mark)]));
        assert!(exit.timed_out, "{sandbox:?}: {exit:?}");
        assert_eq!(exit.exit_code, None, "a killed check has no exit code");
        assert_eq!(exit.infra, None);
        assert_eq!(
            text(&exit),
            "started\n",
            "what it printed before the limit is kept"
        );
        assert!((1000..3000).contains(&exit.millis), "{}", exit.millis);
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            !sleeps(&mark),
            "{sandbox:?}: the grandchild outlived the timeout"
        );
    }
}

#[test]
fn stdout_is_kept_up_to_one_byte_over_the_limit() {
    let script = "#!/bin/sh\nhead -c 6000000 /dev/zero\necho done >&2\n";
    let repo = Repo::with(&[(".bay/check.sh", script)]);
    for sandbox in both() {
        let spec = check(".bay/check.sh", &[".bay/check.sh"]);
        let run = repo.run_of(spec.clone(), &repo.base);
        let exit = repo.run(spec, &repo.base, &sandbox, &vars(&[]));
        assert_eq!(exit.stdout.len(), STDOUT_CAP);
        assert_eq!(
            exit.exit_code,
            Some(0),
            "the check was not stuck on a full pipe"
        );
        assert!(!exit.timed_out);
        assert_eq!(
            judge(&run.request, 1, &exit).verdict(),
            Some(Verdict::Unknown)
        );
    }
}

#[test]
fn each_run_starts_from_fresh_directories() {
    let script = "#!/bin/sh\necho \"home:$(ls -A \"$HOME\")|tmp:$(ls -A \"$TMPDIR\")|tree:$(ls -A)\"\ntouch \"$HOME/h\" \"$TMPDIR/t\" left\n";
    let repo = Repo::with(&[(".bay/check.sh", script)]);
    for sandbox in both() {
        for _ in 0..2 {
            let spec = check(".bay/check.sh", &[".bay/check.sh"]);
            let exit = repo.run(spec, &repo.base, &sandbox, &vars(&[]));
            assert_eq!(text(&exit), "home:|tmp:|tree:.bay\nREADME\n", "{sandbox:?}");
        }
    }
}

#[test]
fn a_signal_leaves_no_exit_code_without_the_sandbox() {
    let repo = Repo::with(&[(".bay/check.sh", "#!/bin/sh\nkill -KILL $$\n")]);
    let spec = check(".bay/check.sh", &[".bay/check.sh"]);
    let exit = repo.run(spec.clone(), &repo.base, &Sandbox::Off, &vars(&[]));
    assert_eq!(exit.exit_code, None);
    assert!(!exit.timed_out);
    // bwrap reports a check ended by signal n as exit code 128 + n, as a shell would; the
    // driver passes on what it was told.
    let exit = repo.run(spec, &repo.base, &bwrap(), &vars(&[]));
    assert_eq!(exit.exit_code, Some(137));
}

#[test]
fn a_process_that_escaped_the_group_does_not_hold_the_run_without_the_sandbox() {
    // Without the sandbox, a process that makes its own session leaves the check's group and
    // keeps stdout open; the driver takes what the check printed once the check has ended.
    let script = "#!/bin/sh\nsetsid sleep 6 &\necho answer\n";
    let repo = Repo::with(&[(".bay/check.sh", script)]);
    let started = Instant::now();
    let spec = check(".bay/check.sh", &[".bay/check.sh"]);
    let exit = repo.run(spec, &repo.base, &Sandbox::Off, &vars(&[]));
    assert_eq!(text(&exit), "answer\n");
    assert_eq!(exit.exit_code, Some(0));
    assert!(!exit.timed_out);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// Leaves a large file and setuid and setgid copies of a program in each folder it may write,
/// and prints more to stderr than bay keeps, ending with a line of its own.
const LITTERING: &str = r#"#!/bin/sh
head -c 20000000 /dev/zero > big
for dir in . "$HOME" "$TMPDIR"; do
    cp /usr/bin/id "$dir/id" && chmod u+s,g+s "$dir/id" && echo "setuid:$dir" >&2
done
head -c 1000000 /dev/zero | tr '\0' 'x' >&2
echo >&2
echo "the last line" >&2
echo done
"#;

/// Every file under `dir` whose mode has the setuid or setgid bit.
fn setuid_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            found.extend(setuid_files(&path));
        } else if meta.permissions().mode() & 0o6000 != 0 {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_check_leaves_nothing_behind_but_the_tail_of_its_stderr() {
    let repo = Repo::with(&[(".bay/check.sh", LITTERING)]);
    let git_dir = std::fs::canonicalize(&repo.git_dir).expect("the Git directory exists");
    for sandbox in both() {
        let spec = check(".bay/check.sh", &[".bay/check.sh"]);
        let exit = repo.run(spec, &repo.base, &sandbox, &vars(&[]));
        assert_eq!(exit.infra, None, "{sandbox:?}");
        assert_eq!(text(&exit), "done\n", "{sandbox:?}");

        let dirs = repo.dirs(&repo.base);
        assert!(!dirs.root.exists(), "{sandbox:?}: the run's folders stayed");
        assert!(
            !dirs.root.parent().expect("the candidate's folder").exists(),
            "{sandbox:?}: the candidate's folder stayed"
        );
        let setuid = setuid_files(&git_dir.join("bay"));
        assert!(setuid.is_empty(), "{sandbox:?}: {setuid:?} stayed");

        // The log keeps the end of stderr, bounded, and says that the rest is gone; the exit
        // names it, in the Git directory.
        let name = stderr_log_name(&repo.base, "unit", 0);
        assert_eq!(exit.stderr_log.as_ref(), Some(&name));
        assert_eq!(
            git_dir.join(&name),
            stderr_log(&git_dir, &repo.base, "unit", 0)
        );
        let log = std::fs::read_to_string(git_dir.join(&name)).expect("the stderr log stays");
        let header = log.lines().next().expect("a first line");
        assert!(
            header.starts_with(&format!("[bay kept the last {STDERR_TAIL} bytes")),
            "{header}"
        );
        assert_eq!(log.len(), header.len() + 1 + STDERR_TAIL, "{sandbox:?}");
        assert!(log.ends_with("\nthe last line\n"), "{sandbox:?}");
    }
}
