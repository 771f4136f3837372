use super::*;
use crate::policy::Policy;

/// The first check of a policy whose one `[[check]]` has `extra` keys.
fn spec(extra: &str) -> CheckSpec {
    Policy::parse(&format!(
        "revision = 1\n[[check]]\nid = \"api\"\nenvironment = \"linux\"\ncommand = \"ci/run\"\nadapter = [\"ci/\"]\nexpected_minimum = 1\n{extra}"
    ))
    .expect("a policy")
    .checks
    .remove(0)
}

fn file(path: &str, id: char) -> TreeFile {
    TreeFile {
        path: path.into(),
        mode: "100644".into(),
        oid: Oid::parse(&id.to_string().repeat(40)).expect("an id"),
    }
}

#[test]
fn a_read_set_is_declared_paths_else_when_paths_and_never_for_a_commit() {
    assert_eq!(read_set(&spec("when_paths = [\"api/\"]\n")), None);
    let both = spec("paths = [\"lib/\"]\nwhen_paths = [\"api/\"]\nfootprint = true\n");
    assert_eq!(read_set(&both), Some(&["lib/".to_owned()][..]));
    let when = spec("when_paths = [\"api/\"]\nfootprint = true\n");
    assert_eq!(read_set(&when), Some(&["api/".to_owned()][..]));
    let commit = spec("when_paths = [\"api/\"]\nfootprint = true\ninputs = [\"commit\"]\n");
    assert_eq!(
        read_set(&commit),
        None,
        "a record for one commit never carries"
    );
}

#[test]
fn the_stamp_moves_with_the_read_set_and_nothing_else() {
    let spec = spec("when_paths = [\"api/\"]\nfootprint = true\n");
    let base = vec![
        file("api/a.rs", 'a'),
        file("ci/run", 'c'),
        file(".bay/policy.toml", 'd'),
        file("web/x", '1'),
    ];
    let candidate = [base.clone(), vec![file("api/b.rs", 'b')]].concat();
    let stamp = stamp(&spec, &candidate, &base).expect("a stamp");
    let again = |candidate: &[TreeFile], base: &[TreeFile]| {
        super::stamp(&spec, candidate, base).expect("a stamp")
    };
    // Outside the read set, the adapter and the policy: the same stamp.
    let mut elsewhere = candidate.clone();
    elsewhere.push(file("web/y", '2'));
    let mut base_elsewhere = base.clone();
    base_elsewhere[3] = file("web/x", '3');
    assert_eq!(again(&elsewhere, &base_elsewhere), stamp);
    // An order the driver chose changes nothing.
    let reversed: Vec<TreeFile> = candidate.iter().rev().cloned().collect();
    assert_eq!(again(&reversed, &base), stamp);
    // Inside: another stamp, in the candidate or in the base.
    let mut inside = candidate.clone();
    inside[0] = file("api/a.rs", 'e');
    assert_ne!(again(&inside, &base).candidate, stamp.candidate);
    let mut mode = candidate.clone();
    mode[0].mode = "100755".into();
    assert_ne!(again(&mode, &base).candidate, stamp.candidate);
    for (index, what) in [(0, "the read set"), (1, "the adapter"), (2, "the policy")] {
        let mut changed = base.clone();
        changed[index].oid = Oid::parse(&"f".repeat(40)).expect("an id");
        assert_ne!(again(&candidate, &changed).base, stamp.base, "{what}");
    }
}

#[test]
fn prefixes_cover_every_file_a_stamp_reads() {
    let spec = spec("when_paths = [\"api/**/*.rs\", \"docs/api.md\"]\nfootprint = true\n");
    assert_eq!(
        prefixes([&spec]),
        [".bay/policy.toml", "api/", "ci/", "docs/api.md"]
    );
    assert!(prefixes([&self::spec("")]).is_empty());
}

#[test]
fn literal_prefixes_stop_before_the_first_star() {
    assert_eq!(literal_prefix("api/"), "api/");
    assert_eq!(literal_prefix("/api/x.rs"), "api/x.rs");
    assert_eq!(literal_prefix("api/**"), "api/");
    assert_eq!(literal_prefix("api/v*/x"), "api/");
    assert_eq!(literal_prefix("a*"), "");
    assert_eq!(literal_prefix("**/*.rs"), "");
}

#[test]
fn footprints_are_disjoint_only_where_their_prefixes_show_it() {
    let checks = |when: &[&str]| -> Vec<CheckSpec> {
        when.iter()
            .map(|w| spec(&format!("when_paths = [{w}]\n")))
            .collect()
    };
    let api = of_entry(&checks(&["\"api/\""]));
    let web = of_entry(&checks(&["\"web/**/*.js\""]));
    assert_eq!(api, ["api/"]);
    assert!(disjoint(&api, &web));
    let api_v2 = of_entry(&checks(&["\"api/v2/\""]));
    assert!(!disjoint(&api, &api_v2), "one inside the other");
    let anywhere = of_entry(&checks(&["\"**/*.rs\""]));
    assert!(!disjoint(&anywhere, &web));
    let whole = of_entry(&[spec("")]);
    assert_eq!(
        whole,
        [""],
        "a check with no when_paths reads the whole tree"
    );
    assert!(!disjoint(&whole, &api));
    assert!(
        disjoint(&of_entry(&[]), &whole),
        "no required check shares nothing"
    );
}
