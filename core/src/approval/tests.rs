use super::*;
use crate::detail::Detail;
use crate::policy::Signing;
use serde_json::json;

fn oid(c: char) -> Oid {
    Oid::parse(&c.to_string().repeat(40)).expect("an oid")
}

fn about() -> About {
    About {
        change: "c7k2m4qa".into(),
        candidate: "c7k2m4qa.1.1".into(),
        commit: oid('a'),
        tree: oid('b'),
        base_tree: Some(oid('c')),
    }
}

fn billing(producers: Option<&[&str]>) -> ApprovalCheck {
    ApprovalCheck {
        id: "billing-approval".into(),
        environment: "people".into(),
        when_paths: vec!["billing/".into()],
        producers: producers.map(|names| names.iter().map(|n| (*n).to_owned()).collect()),
        carry: None,
    }
}

fn yes(approver: &str, commit: &Oid) -> String {
    let answer = Answer {
        approver: approver.into(),
        check: "billing-approval".into(),
        environment: "people".into(),
        verdict: Verdict::Pass,
        why: String::new(),
    };
    let about = About {
        commit: commit.clone(),
        ..about()
    };
    record(&answer, &about, Timestamp(5))
}

/// A counted answer on billing-approval whose record is `record`.
fn said(record: &str) -> Counted {
    Counted {
        check: "billing-approval".into(),
        environment: "people".into(),
        approver: "alice".into(),
        verdict: "pass".into(),
        why: String::new(),
        record: record.into(),
        carried: None,
    }
}

#[test]
fn only_checks_whose_paths_the_candidate_changes_are_owed_and_a_quarantine_sets_one_aside() {
    let text = "revision = 1\n[[check]]\nid = \"t\"\nenvironment = \"e\"\ncommand = \"x\"\n\
                adapter = [\"x\"]\nexpected_minimum = 1\n[[check]]\nid = \"billing-approval\"\n\
                environment = \"people\"\nkind = \"approval\"\nwhen_paths = [\"billing/\"]\n";
    let policy = Policy::parse(text).expect("a policy with an approval check");
    assert_eq!(policy.approvals, vec![billing(None)]);
    assert_eq!(
        policy.checks.len(),
        1,
        "an approval check is never a run check"
    );
    let owed = |paths: &[&str]| {
        let paths: Vec<String> = paths.iter().map(|p| (*p).to_owned()).collect();
        required(&policy, &paths).len()
    };
    assert_eq!(owed(&["src/a.rs"]), 0);
    assert_eq!(owed(&["src/a.rs", "billing/refund.rs"]), 1);
    let quarantined = format!(
        "{text}[[quarantine]]\nid = \"billing-approval\"\nenvironment = \"people\"\n\
         reason = \"r\"\nend = \"2099-01-01\"\n"
    );
    let policy = Policy::parse(&quarantined).expect("a quarantined approval check");
    let paths = vec!["billing/refund.rs".to_owned()];
    assert!(required(&policy, &paths).is_empty());
}

#[test]
fn without_a_registry_nothing_counts_and_the_wait_says_why() {
    let keys = Keys {
        registry: None,
        signing: Signing::All,
    };
    let judged = judge(
        &[billing(None)],
        &[yes("alice", &oid('a'))],
        keys,
        &about(),
        &Default::default(),
    );
    let Judgement::Pending(pending) = judged else {
        panic!("an unsigned yes never counts: {judged:?}");
    };
    let detail = pending.to_json();
    assert_eq!(detail["commit"], oid('a').as_str());
    assert_eq!(detail["tree"], oid('b').as_str());
    assert_eq!(detail["approve"], "bay approve c7k2m4qa");
    assert_eq!(detail["checks"][0]["check"], "billing-approval");
    assert!(
        detail["checks"][0]["why"]
            .as_str()
            .is_some_and(|why| why.contains("no key registry")),
        "{detail}"
    );
    assert!(
        detail["record"]
            .as_str()
            .is_some_and(|cmd| cmd.contains("--kind approval") && cmd.contains(oid('a').as_str())),
        "{detail}"
    );
}

#[test]
fn an_unsigned_record_under_a_registry_counts_for_nothing_yes_or_no() {
    let registry = Version::default();
    let keys = Keys {
        registry: Some(&registry),
        signing: Signing::Approvals,
    };
    let no = yes("alice", &oid('a')).replace("\"pass\"", "\"product_failure\"");
    let judged = judge(
        &[billing(None)],
        &[yes("alice", &oid('a')), no],
        keys,
        &about(),
        &Default::default(),
    );
    assert!(matches!(judged, Judgement::Pending(_)), "{judged:?}");
}

#[test]
fn with_nothing_owed_the_candidate_is_approved_at_once() {
    let keys = Keys {
        registry: None,
        signing: Signing::All,
    };
    assert_eq!(
        judge(&[], &[], keys, &about(), &Default::default()),
        Judgement::Approved(Vec::new())
    );
}

#[test]
fn a_record_names_its_approver_check_verdict_and_candidate_and_ids_differ_by_verdict() {
    let line = yes("alice", &oid('a'));
    let value: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(value["kind"], "approval");
    assert_eq!(value["producer"], "alice");
    assert_eq!(value["check"], "billing-approval");
    assert_eq!(value["candidate"], "c7k2m4qa.1.1");
    assert_eq!(value["verdict"], "pass");
    let no = Answer {
        approver: "alice".into(),
        check: "billing-approval".into(),
        environment: "people".into(),
        verdict: Verdict::ProductFailure,
        why: "wrong".into(),
    };
    let no = record(&no, &about(), Timestamp(5));
    assert_ne!(record_id_of(&line), record_id_of(&no));
    assert!(same_content(&line, &yes("alice", &oid('a'))));
    assert!(!same_content(&line, &no));
    assert!(billing(Some(&["bob"])).allows("bob"));
    assert!(!billing(Some(&["bob"])).allows("alice"));
}

#[test]
fn a_carried_yes_holds_only_while_no_covered_file_or_the_policy_changed() {
    let check = billing(None);
    let none: Vec<String> = Vec::new();
    assert!(changed_under(&check, &["src/a.rs".into()], &["src/b.rs".into()]).is_empty());
    assert_eq!(
        changed_under(&check, &none, &["billing/rates.txt".into()]),
        ["billing/rates.txt"],
        "a covered file changed on main under it"
    );
    assert_eq!(
        changed_under(&check, &none, &[".bay/policy.toml".into()]),
        [".bay/policy.toml"],
        "only under the same policy"
    );
    let keys = Keys {
        registry: None,
        signing: Signing::All,
    };
    let carried = std::collections::BTreeMap::from([(
        "billing-approval".to_owned(),
        Carried::Holds(Counted {
            carried: Some(CarriedFrom {
                carried_from: "r".into(),
                from_commit: oid('d'),
            }),
            ..said("r")
        }),
    )]);
    let judged = judge(std::slice::from_ref(&check), &[], keys, &about(), &carried);
    assert!(
        matches!(judged, Judgement::Approved(ref yes) if yes.len() == 1),
        "{judged:?}"
    );
    let set_aside = std::collections::BTreeMap::from([(
        "billing-approval".to_owned(),
        Carried::SetAside(SetAside::Changed {
            record: "r".into(),
            paths: vec!["billing/rates.txt".into()],
        }),
    )]);
    let Judgement::Pending(pending) = judge(&[check], &[], keys, &about(), &set_aside) else {
        panic!("a set-aside yes owes a fresh one");
    };
    let detail = pending.to_json();
    assert_eq!(
        detail["checks"][0]["set_aside"]["paths"][0],
        "billing/rates.txt"
    );
}

#[test]
fn without_a_registry_nothing_carries_and_carry_false_never_asks() {
    let keys = Keys {
        registry: None,
        signing: Signing::All,
    };
    let earlier = [Earlier {
        commit: oid('d'),
        base: oid('e'),
    }];
    let lines = [yes("alice", &oid('d'))];
    assert!(carries(&[billing(None)], &lines, keys, &about(), &earlier).is_empty());
    let mut never = billing(None);
    never.carry = Some(false);
    assert!(carries(&[never], &lines, keys, &about(), &earlier).is_empty());
}

#[test]
fn a_waiver_is_never_a_pass_and_counts_only_signed_for_that_content() {
    let answer = Answer {
        approver: "alice".into(),
        check: "files".into(),
        environment: "any".into(),
        verdict: Verdict::Pass,
        why: "known".into(),
    };
    let line = waiver(&answer, Verdict::ProductFailure, &about(), Timestamp(5));
    let value: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(value["kind"], WAIVER);
    assert_eq!(value["verdict"], "unknown", "whatever the answer said");
    assert_eq!(value["waived_verdict"], "product_failure");
    assert!(record_id_of(&line).is_some_and(|id| id.starts_with("alice/waiver/")));
    let spec = Policy::parse(
        "revision = 1\n[[check]]\nid = \"files\"\nenvironment = \"any\"\ncommand = \"x\"\n\
         adapter = [\"x\"]\nexpected_minimum = 1\nwaivable = true\n",
    )
    .expect("a policy")
    .checks
    .remove(0);
    let registry = Version::default();
    for keys in [
        Keys {
            registry: None,
            signing: Signing::All,
        },
        Keys {
            registry: Some(&registry),
            signing: Signing::Approvals,
        },
    ] {
        assert_eq!(
            waived(
                &spec,
                std::slice::from_ref(&line),
                keys,
                &oid('b'),
                &oid('c')
            ),
            None,
            "unsigned, or without a registry, a waiver never counts"
        );
    }
}

/// A yes carries while its files stay the same, unless a no was said on files that are the
/// same as this candidate's; a no whose files differ (the author repaired them) stops nothing.
#[test]
fn a_no_stops_a_yes_from_carrying_only_on_the_same_files() {
    let check = billing(None);
    let earlier = |c: char| Earlier {
        commit: oid(c),
        base: oid('e'),
    };
    let carry = Carry {
        check: check.id.clone(),
        from: earlier('d'),
        answer: said("alice/yes"),
        noes: vec![(earlier('f'), said("bob/no"))],
    };
    assert_eq!(carry.compared().count(), 2);
    let same: Compared = Ok((vec!["src/a.rs".into()], Vec::new()));
    let repaired: Compared = Ok((vec!["billing/rates.txt".into()], Vec::new()));
    let Carried::Holds(held) = carry.outcome(&check, &[same.clone(), repaired.clone()]) else {
        panic!("a no on other files stops nothing");
    };
    let held = held.to_json();
    assert_eq!(held["carried_from"], "alice/yes");
    assert_eq!(held["from_commit"], json!(oid('d')));
    let Carried::SetAside(stopped) = carry.outcome(&check, &[same.clone(), same.clone()]) else {
        panic!("a no on the same files stops the yes");
    };
    let stopped = stopped.to_json();
    assert_eq!(stopped["stopped_by"], "bob/no");
    let unknown: Compared = Err("the disk is gone".into());
    assert!(
        matches!(
            carry.outcome(&check, &[same.clone(), unknown.clone()]),
            Carried::SetAside(_)
        ),
        "a no it cannot tell apart stops the yes"
    );
    let Carried::SetAside(aside) = carry.outcome(&check, &[repaired, same.clone()]) else {
        panic!("a yes whose files changed is set aside");
    };
    let aside = aside.to_json();
    assert_eq!(aside["paths"], json!(["billing/rates.txt"]));
    assert!(matches!(
        carry.outcome(&check, &[unknown, same]),
        Carried::SetAside(_)
    ));
}
