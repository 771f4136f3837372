//! How long `Policy::parse` takes as the policy grows: 2,000, 8,000 and 32,000 checks, and the
//! ratio of each time to the one before. Linear parsing gives ratios near 4.
//!
//! `cargo run --release -p bay-core --example policy_parse`

// A program beside the library, not part of it: reading the clock is what it is for.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::time::{Duration, Instant};

use bay_core::policy::Policy;

/// A valid policy of `checks` checks, each with the keys a real one tends to set.
fn policy(checks: usize) -> String {
    let mut text = String::from("revision = 1\n");
    for i in 0..checks {
        text.push_str(&format!(
            "\n[[check]]\nid = \"c{i}\"\nenvironment = \"linux\"\ncommand = \"scripts/check unit\"\n\
             adapter = [\"scripts/check\", \"scripts/lib\"]\nexpected_minimum = 5\ntimeout_s = 60\n\
             path = [\"/usr/bin\", \"/bin\"]\nwhen_paths = [\"src/{i}/**\"]\n"
        ));
    }
    text
}

fn main() {
    let mut before: Option<Duration> = None;
    for checks in [2_000, 8_000, 32_000] {
        let text = policy(checks);
        let started = Instant::now();
        let parsed = Policy::parse(&text).expect("the policy is valid");
        let took = started.elapsed();
        assert_eq!(parsed.checks.len(), checks);
        let ratio = before.map_or(String::new(), |b| {
            format!(", {:.1}x the last", took.as_secs_f64() / b.as_secs_f64())
        });
        println!("{checks} checks, {} bytes: {took:.2?}{ratio}", text.len());
        before = Some(took);
    }
}
