//! core is sans-IO: no filesystem, process, network, environment, clock, randomness or threads.
//! `core/clippy.toml` forbids the calls for clippy; this test forbids the names for everyone,
//! so a build without clippy cannot slip one in either.

// The test reads core's sources from disk; the lint that forbids IO is for core itself.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

/// Names that mean IO, time, entropy or threads. A comment may mention them; code may not.
const FORBIDDEN: [&str; 14] = [
    "std::fs",
    "std::process",
    "std::net",
    "std::env",
    "std::thread",
    "std::time::Instant",
    "std::time::SystemTime",
    "Instant::now",
    "SystemTime::now",
    "thread_rng",
    "OsRng",
    "getrandom",
    "HashMap",
    "HashSet",
];

fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("core's sources are readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The forbidden names in one source text, ignoring comments.
fn offences(text: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for name in FORBIDDEN {
            if code.contains(name) {
                found.push((n + 1, name));
            }
        }
    }
    found
}

#[test]
fn core_sources_reach_for_no_io_clock_randomness_or_threads() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(
        files.len() > 10,
        "the test must see core's sources, found {}",
        files.len()
    );
    let mut bad = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source file is UTF-8");
        for (line, name) in offences(&text) {
            bad.push(format!("{}:{line}: {name}", file.display()));
        }
    }
    assert!(bad.is_empty(), "core must stay pure:\n{}", bad.join("\n"));
}

#[test]
fn the_scan_sees_a_forbidden_name_in_code_but_not_in_a_comment() {
    assert_eq!(offences("let t = std::time::Instant::now();").len(), 2);
    assert!(offences("// std::fs is not used here").is_empty());
    assert_eq!(
        offences("use std::collections::HashMap;"),
        vec![(1, "HashMap")]
    );
}
