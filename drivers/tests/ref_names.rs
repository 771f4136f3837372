//! core's ref-name check against its oracle: `git check-ref-format` itself. core may not start
//! a process, so the agreement is shown here, name by name, for plain names, refspec patterns
//! and branches.

use std::process::Command;

use bay_core::ref_name;

/// Whether `git check-ref-format <flags> <name>` takes `name`.
fn git_takes(flags: &[&str], name: &str) -> bool {
    Command::new("git")
        .arg("check-ref-format")
        .args(flags)
        .arg(name)
        .output()
        .expect("git runs")
        .status
        .success()
}

/// Names near every rule of `git check-ref-format`, each on both of its sides.
fn names() -> Vec<String> {
    let mut names: Vec<String> = [
        "",
        "@",
        "a",
        "refs",
        "refs/",
        "refs/heads",
        "refs/heads/main",
        "refs/heads/v1.2",
        "refs/heads/-a",
        "refs/heads/@",
        "refs/heads/a@b",
        "refs/heads/a@{b",
        "refs/heads/a@{",
        "refs/heads/a.",
        "refs/heads/.a",
        "refs/heads/a/.b",
        "refs/heads/.",
        "refs/heads/..",
        "refs/heads/a..b",
        "refs/heads/a.b.c",
        "refs/heads/a.lock",
        "refs/heads/a.lock/b",
        "refs/heads/.lock",
        "refs/heads/lock",
        "refs/heads/x.lock.y",
        "refs/heads//a",
        "refs/heads/a/",
        "/refs/heads/a",
        "refs/heads/a b",
        "refs/heads/a~",
        "refs/heads/a^",
        "refs/heads/a:",
        "refs/heads/a?",
        "refs/heads/a*",
        "refs/heads/*",
        "refs/heads/a*b",
        "refs/heads/*/*",
        "refs/heads/a*b*",
        "refs/*/x",
        "refs/heads/a[",
        "refs/heads/a]",
        "refs/heads/a\\b",
        "refs/heads/a{b}",
        "refs/heads/a!",
        "refs/heads/é",
        "refs/heads/a\u{a0}b",
        "refs/heads/a\u{85}b",
        "refs/heads/a\u{2028}b",
        "refs/heads/#x",
        "refs/heads/a,b",
        "refs/heads/a=b",
        "refs/heads/a'b",
        "refs/heads/a\"b",
        "refs/heads/a|b",
        "refs/heads/a<b>",
        "refs/heads/a%b",
        "refs/heads/a$b",
        "refs/heads/a&b",
        "refs/tags/v1",
    ]
    .map(str::to_owned)
    .to_vec();
    // Every ASCII character, in the middle of a part and at its ends.
    for byte in 1u8..=127 {
        let c = char::from(byte);
        names.push(format!("refs/heads/a{c}b"));
        names.push(format!("refs/heads/{c}b"));
        names.push(format!("refs/heads/a{c}"));
    }
    names
}

#[test]
fn core_takes_and_refuses_ref_names_as_git_does() {
    for name in names() {
        assert_eq!(
            ref_name::problem(&name).is_none(),
            git_takes(&[], &name),
            "{name:?}: core says {:?}",
            ref_name::problem(&name)
        );
        assert_eq!(
            ref_name::pattern_problem(&name).is_none(),
            git_takes(&["--refspec-pattern"], &name),
            "{name:?} as a pattern: core says {:?}",
            ref_name::pattern_problem(&name)
        );
    }
}

#[test]
fn core_takes_and_refuses_branch_names_as_git_does() {
    for name in names() {
        // A branch name with no `refs/` in front, as `--from` and `bay install --main` name it;
        // `--branch` puts it under refs/heads/ itself.
        let Some(short) = name.strip_prefix("refs/heads/") else {
            continue;
        };
        assert_eq!(
            ref_name::branch_problem(short).is_none(),
            git_takes(&["--branch"], short),
            "{short:?}: core says {:?}",
            ref_name::branch_problem(short)
        );
    }
}
