//! The README's setup, as a new user copies it: its `.bay/config.toml`, `.bay/policy.toml` and
//! `.bay/check` on a project whose tests are `make test`. The check keeps bay's contract, a
//! change that passes merges, and one that fails is refused naming the unit.

mod support;

use support::*;

/// The code blocks of the README's section on using bay, with their language.
fn blocks() -> Vec<(&'static str, &'static str)> {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("## Use it on your own repository")
        .expect("the section");
    let section = &readme[start..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    section
        .split("```")
        .skip(1)
        .step_by(2)
        .map(|block| block.split_once('\n').expect("a language line"))
        .collect()
}

/// The README's files, by the order it shows them.
fn setup() -> (&'static str, &'static str, &'static str) {
    let blocks = blocks();
    let tomls: Vec<&str> = blocks
        .iter()
        .filter(|(lang, _)| *lang == "toml")
        .map(|(_, text)| *text)
        .collect();
    let check = blocks
        .iter()
        .find(|(lang, text)| *lang == "sh" && text.starts_with("#!/bin/sh"))
        .map(|(_, text)| *text)
        .expect("the check");
    (tomls[0], tomls[1], check)
}

#[test]
fn the_readme_setup_checks_a_change_and_merges_it_or_names_what_failed() {
    let (config, policy, check) = setup();
    bay_core::config::Config::parse(config).expect("the README's config parses");
    bay_core::policy::Policy::parse(policy).expect("the README's policy parses");
    let world = World::new(&[
        ("Makefile", "test:\n\t@test -s src/app.txt\n", false),
        ("src/app.txt", "hello\n", false),
        (".bay/config.toml", config, false),
        (".bay/policy.toml", policy, false),
        (".bay/check", check, true),
    ]);
    let ann = world.clone_as("ann");
    let tested = bay(
        &ann,
        "ann",
        &[
            "plugin",
            "test",
            "check",
            "--",
            ".bay/check",
            "make",
            "test",
        ],
    );
    assert_eq!(tested.code, 0, "{tested:?}");

    let (_, view) = world.edited(&ann, "ann", "say hello", "src/app.txt", "hello, bay\n", &[]);
    let merged = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(merged.doc["decision"], "merged", "{merged:?}");

    let (_, view) = world.edited(&ann, "ann", "empty it", "src/app.txt", "", &[]);
    let refused = bay(&view, "ann", &["merge", "--wait"]);
    assert_eq!(refused.doc["reason"], "CHECK_FAILED", "{refused:?}");
    let said = refused.doc["say"].as_str().unwrap_or_default();
    assert!(said.contains("(tests: make test)"), "{said}");
}
