//! A runner's presence: one commit with no parent that replaces `refs/bay/executor/<runner>`
//! under a lease on the tip it replaces, and `ReadSeen`, which says when the clone first held
//! the value a ref holds now. Times differ between worlds, so a case sees how they compare:
//! held or not, the same as before, not earlier than before.

use std::collections::BTreeMap;

use bay_core::git::refs;
use bay_core::machine::{Action, Completion, Expect, PresenceAdd, PushPlan};
use bay_core::time::Timestamp;

use super::{Bench, Case};

const RUNNER: &str = "runner-1";

pub(super) fn cases() -> Vec<Case> {
    vec![
        Case::new(
            "presence: replaced with no history, leased on its tip",
            replaced,
        ),
        Case::new(
            "presence: when the clone first held it, by its own clock",
            first_seen,
        ),
    ]
}

fn presence(expect: Expect, n: u32) -> PushPlan {
    PushPlan {
        presence: Some(PresenceAdd {
            runner: RUNNER.into(),
            expect,
            message: format!("bay: presence {RUNNER}\n\n{{\"n\":{n}}}\n"),
        }),
        atomic: true,
        ..PushPlan::default()
    }
}

fn replaced(b: &mut Bench<'_>) {
    let name = refs::executor(RUNNER);
    let first = b.push("create", "first ", presence(Expect::Absent, 1));
    let first = first.presence.expect("a presence push writes its commit");
    b.see_commit("first presence", &first);
    let again = b.push("create again", "again ", presence(Expect::Absent, 2));
    b.see(
        "create again wrote a commit",
        again.presence.is_some().to_string(),
    );
    let second = b.push("replace", "second ", presence(Expect::Is(first.clone()), 3));
    let second = second.presence.expect("a presence push writes its commit");
    b.see_commit("second presence", &second);
    b.push("stale lease", "stale ", presence(Expect::Is(first), 4));
    b.see_refs(&[&name]);
}

/// The clone's record of a ref, through `ReadSeen`.
fn seen(b: &mut Bench<'_>, names: &[String]) -> Option<BTreeMap<String, Timestamp>> {
    match b.execute(&Action::ReadSeen {
        names: names.to_vec(),
    }) {
        Completion::SeenRead(Ok(seen)) => Some(seen),
        Completion::SeenRead(Err(_)) => None,
        other => panic!("a seen read answered {other:?}"),
    }
}

fn first_seen(b: &mut Bench<'_>) {
    let name = refs::executor(RUNNER);
    let other = refs::executor("runner-2");
    let names = [name.clone(), other.clone()];
    let before = seen(b, &names);
    b.see("before any fetch", format!("{:?}", before.map(|s| s.len())));
    b.push("first", "first ", presence(Expect::Absent, 1));
    b.see_fetch("fetch", &[refs::EXECUTOR_PATTERN]);
    let one = seen(b, &names).unwrap_or_default();
    b.see("held", format!("{:?}", one.keys().collect::<Vec<_>>()));
    b.see_fetch("fetch again", &[refs::EXECUTOR_PATTERN]);
    let two = seen(b, &names).unwrap_or_default();
    b.see(
        "unmoved: the same",
        (one.get(&name) == two.get(&name)).to_string(),
    );
    let tip = b.oid("first presence");
    b.push("second", "second ", presence(Expect::Is(tip), 2));
    b.see_fetch("fetch after a new presence", &[refs::EXECUTOR_PATTERN]);
    let three = seen(b, &names).unwrap_or_default();
    b.see(
        "moved: not earlier",
        (three.contains_key(&name) && three.get(&name) >= two.get(&name)).to_string(),
    );
}
