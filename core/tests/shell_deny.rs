//! The deny list's corpus: `tests/fixtures/shell-deny.txt` holds one command per line with the
//! verdict bay's `tool.before` hook must give it, so that a reviewer reads the list's whole
//! behaviour in one file. Every line is judged, every mismatch reported at once with its line
//! number, and every shape and wrapper must appear in the file.

// The test reads its fixture from the repository; core's ban on IO is for core itself.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;

use bay_core::shell::{DenyRules, Shape, Verdict, Wrapper, judge};

const FIXTURE: &str = include_str!("fixtures/shell-deny.txt");

/// The rules of an `@rules` line: `main=<name>` (`-` for unknown), `target=<ref>`,
/// `lane=<pattern>`, each repeatable but main.
fn rules(line: &str) -> DenyRules {
    let mut rules = DenyRules::default();
    for setting in line.split_whitespace().skip(1) {
        let (key, value) = setting.split_once('=').expect("key=value");
        match key {
            "main" => rules.main = (value != "-").then(|| value.to_owned()),
            "target" => rules.targets.push(value.to_owned()),
            "lane" => rules.lanes.push(value.to_owned()),
            _ => panic!("unknown rule {key}"),
        }
    }
    rules
}

/// A verdict as the fixture writes it.
fn written(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Allowed => "allow".to_owned(),
        Verdict::Denied(denial) => {
            let wrappers: Vec<&str> = denial.wrappers.iter().map(|w| w.as_str()).collect();
            format!("deny {} {}", denial.shape.as_str(), wrappers.join(","))
                .trim_end()
                .to_owned()
        }
    }
}

#[test]
fn every_command_of_the_corpus_gets_its_verdict() {
    let mut current = DenyRules::default();
    let mut wrong = Vec::new();
    let mut judged = 0;
    let mut shapes = BTreeSet::new();
    let mut wrappers = BTreeSet::new();
    for (n, line) in FIXTURE.lines().enumerate() {
        if line.starts_with("@rules") {
            current = rules(line);
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (expected, command) = line
            .split_once(" | ")
            .unwrap_or_else(|| panic!("line {}: no ` | `", n + 1));
        let expected = expected.split_whitespace().collect::<Vec<_>>().join(" ");
        let command = command.replace('⏎', "\n");
        let verdict = judge(&command, &current);
        assert_eq!(verdict, judge(&command, &current), "judged the same twice");
        if let Verdict::Denied(denial) = &verdict {
            shapes.insert(denial.shape);
            wrappers.extend(denial.wrappers.iter().copied());
        }
        let got = written(&verdict);
        if got != expected {
            wrong.push(format!(
                "line {}: {command:?}\n  want {expected}\n  got  {got}",
                n + 1
            ));
        }
        judged += 1;
    }
    assert!(judged > 200, "the corpus holds {judged} commands");
    assert!(
        wrong.is_empty(),
        "{} of {judged} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    let missing: Vec<_> = Shape::ALL.iter().filter(|s| !shapes.contains(s)).collect();
    assert!(missing.is_empty(), "no line denies {missing:?}");
    let missing: Vec<_> = Wrapper::ALL
        .iter()
        .filter(|w| !wrappers.contains(w))
        .collect();
    assert!(missing.is_empty(), "no denial is behind {missing:?}");
}

mod composed {
    //! Denied commands stay denied, with the same shape, however a generated command dresses
    //! them: words quoted or escaped, assignments and wrappers in front, other commands around
    //! them, subshells and substitutions, and up to two shells' `-c` scripts.

    use bay_core::shell::{DenyRules, Shape, Verdict, judge};
    use proptest::prelude::*;

    /// Denied commands as words, with the shape each is denied as.
    const DENIED: [(&[&str], Shape); 12] = [
        (&["git", "reset", "--hard"], Shape::ResetHard),
        (&["git", "clean", "-fdx"], Shape::CleanForce),
        (&["git", "branch", "-D", "x"], Shape::BranchForceDelete),
        (&["git", "checkout", "--", "."], Shape::CheckoutDot),
        (&["git", "restore", "."], Shape::RestoreDot),
        (&["git", "push", "-uf", "origin", "x"], Shape::PushForce),
        (&["git", "push", "origin", "+x"], Shape::PushForceRefspec),
        (&["git", "push", "--mirror", "origin"], Shape::PushAll),
        (
            &["git", "push", "origin", "HEAD:refs/heads/main"],
            Shape::PushMain,
        ),
        (&["git", "push", "origin", "x:staging"], Shape::PushTarget),
        (&["git", "merge", "origin/research/x"], Shape::LaneMerge),
        (
            &["git", "restore", "--source=research/x", "a"],
            Shape::LaneRestore,
        ),
    ];

    fn rules() -> DenyRules {
        DenyRules {
            main: Some("main".into()),
            targets: vec!["refs/heads/staging".into()],
            lanes: vec!["refs/heads/research/*".into()],
        }
    }

    /// One word as the shell reads it back to itself: plain, in single or double quotes,
    /// or with its first character escaped.
    fn spell(word: &str, how: u8) -> String {
        match how % 4 {
            0 => word.to_owned(),
            1 => format!("'{word}'"),
            2 => format!("\"{word}\""),
            _ => format!("\\{word}"),
        }
    }

    /// A script quoted for a single-quoted `-c` argument.
    fn single_quoted(script: &str) -> String {
        format!("'{}'", script.replace('\'', r"'\''"))
    }

    /// Dresses `command` one way.
    fn dress(command: String, how: u8) -> String {
        match how % 12 {
            0 => format!("GIT_TRACE=1 {command}"),
            1 => format!("env -u HOME A=1 {command}"),
            2 => format!("sudo -u bob -- {command}"),
            3 => format!("command {command}"),
            4 => format!("ls && {command} || true"),
            5 => format!("echo hi | {command}; ls"),
            6 => format!("( {command} )"),
            7 => format!("{{ {command}; }}"),
            8 => format!("echo \"$({command})\""),
            9 => format!("cd /repo\n{command} 2>&1 >/dev/null"),
            10 => format!("exec {command}"),
            _ => format!("time {command}"),
        }
    }

    proptest! {
        #[test]
        fn a_denied_command_stays_denied_however_it_is_dressed(
            pick in 0..DENIED.len(),
            spellings in proptest::collection::vec(any::<u8>(), 6),
            dressings in proptest::collection::vec(any::<u8>(), 0..4),
            shells in 0..=2usize,
        ) {
            let (words, shape) = DENIED[pick];
            let mut command = words
                .iter()
                .zip(spellings.iter().cycle())
                .map(|(word, how)| spell(word, *how))
                .collect::<Vec<_>>()
                .join(" ");
            for how in &dressings {
                command = dress(command, *how);
            }
            for shell in ["bash -c", "sh -c"].iter().take(shells) {
                command = format!("{shell} {}", single_quoted(&command));
            }
            match judge(&command, &rules()) {
                Verdict::Denied(denial) => prop_assert_eq!(denial.shape, shape, "{}", command),
                Verdict::Allowed => prop_assert!(false, "allowed: {}", command),
            }
        }

        #[test]
        fn any_text_is_judged_without_a_panic_and_the_same_twice(
            command in "[ -~\n⏎é]{0,200}|(git|push|-f|main|'|\"|\\$\\(|\\)|`|;|&&|\\||<<|EOF|\n| )*"
        ) {
            prop_assert_eq!(judge(&command, &rules()), judge(&command, &rules()));
        }
    }
}
