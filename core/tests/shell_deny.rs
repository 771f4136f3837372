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
