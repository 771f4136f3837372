//! Which checks a candidate must pass, decided once from the policy at its base and the paths
//! it changes: the runner runs exactly this plan, and the simulator's checker judges every
//! merge by it.
//!
//! - A `post` check never blocks a merge; the result lists it under `post_checks`.
//! - A check with `when_paths` is required only when the candidate changes a matching path;
//!   otherwise it is listed under `not_required` with the reason.
//! - A quarantined check is set aside, in force until a policy change removes it, and named
//!   in `coverage_gaps` (with `overdue` once a dated end has passed).
//! - A candidate that changes the policy or an `adapter` path requires every check, must raise
//!   `revision`, and runs each check twice: with the base's `adapter` paths and with its own
//!   (the checks of its own policy). Both runs must pass. The change's own run takes from the
//!   change only what the check runs and reads of the tree; what it may reach on the machine
//!   is main's ([`within_base_reach`]).

use serde::Serialize;

use crate::glob;
use crate::paths;
use crate::policy::{
    CheckSpec, DEFAULT_MATERIALIZE_TIMEOUT_S, DEFAULT_PATH, DEFAULT_TIMEOUT_S, Policy,
    QuarantineEnd,
};

/// Where the policy lives in a tree.
pub const POLICY_PATH: &str = ".bay/policy.toml";

/// A policy file's bytes, read: every reader of the policy at a base (the runner, and
/// `bay merge` for `[limits]`) refuses the same files in the same words.
/// Parsed once per distinct file while the caller remembers ([`crate::memo`]).
pub fn parse_policy(bytes: &[u8]) -> Result<Policy, String> {
    crate::memo::recall(&[bytes], || {
        std::str::from_utf8(bytes)
            .map_err(|_| format!("{POLICY_PATH} is not UTF-8 text"))
            .and_then(|text| Policy::parse(text).map_err(|e| e.to_string()))
    })
}

/// Which commit a run takes its `adapter` paths from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AdapterFrom {
    /// The base: the check as main defines it.
    Base,
    /// The candidate: the check as the change redefines it.
    Candidate,
}

/// One run the candidate must pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRun {
    pub spec: CheckSpec,
    pub adapter_from: AdapterFrom,
}

/// What a candidate must pass, and what it is spared and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// In the order they run: the base policy's checks, then (for a policy change) the
    /// candidate's own.
    pub runs: Vec<PlannedRun>,
    /// Checks not required here, and why.
    pub not_required: Vec<NotRequired>,
    /// `post` checks: they judge main after the merge, never this candidate.
    pub post_checks: Vec<PostCheck>,
    /// Quarantined checks, as coverage gaps.
    pub quarantined: Vec<Quarantined>,
}

/// A check the plan leaves out for this candidate: its `when_paths` miss every changed path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotRequired {
    pub check: String,
    pub environment: String,
    pub reason: String,
}

/// A `post` check, named in a merge's `post_checks`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PostCheck {
    pub check: String,
    pub environment: String,
}

/// A quarantined check, as a merge's `coverage_gaps` names it: the quarantine's reason, end,
/// owner and start as the policy gives them, and whether a dated end is past.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Quarantined {
    pub check: String,
    pub environment: String,
    /// Always `true`.
    pub quarantined: bool,
    pub reason: String,
    pub end: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Only for an end that is a date.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overdue: Option<bool>,
}

/// Whether a candidate changing `changed_paths` changes the policy or an `adapter` path of
/// `policy`: then it must be judged by both its base's checks and its own.
pub fn changes_checks(policy: &Policy, changed_paths: &[String]) -> bool {
    changed_paths.iter().any(|path| {
        path == POLICY_PATH
            || policy
                .checks
                .iter()
                .flat_map(|check| &check.adapter)
                .any(|adapter| paths::covers(adapter, path))
    })
}

/// The plan for a candidate on a base whose policy is `base`, changing `changed_paths`, on the
/// UTC date `today`. `own` is the candidate's own policy, read when [`changes_checks`] says the
/// candidate changes the checks: `None` when it has none, `Some(Err(why))` when it does not
/// parse. `Err` is a `POLICY_INVALID` refusal, saying why.
pub fn plan(
    base: &Policy,
    own: Option<Result<Policy, String>>,
    changed_paths: &[String],
    today: &str,
) -> Result<Plan, String> {
    let mut plan = Plan::default();
    let redefines = changes_checks(base, changed_paths);
    for check in &base.checks {
        if !check.stage.is_pre() {
            plan.post_checks.push(PostCheck {
                check: check.id.clone(),
                environment: check.environment.clone(),
            });
            continue;
        }
        if let Some(quarantine) = base
            .quarantine
            .iter()
            .find(|q| q.id == check.id && q.environment == check.environment)
        {
            plan.quarantined.push(Quarantined {
                check: check.id.clone(),
                environment: check.environment.clone(),
                quarantined: true,
                reason: quarantine.reason.clone(),
                end: quarantine.end.to_string(),
                owner: quarantine.owner.clone(),
                since: quarantine.since.clone(),
                overdue: match &quarantine.end {
                    // Dates written YYYY-MM-DD order as text.
                    QuarantineEnd::Date(end) => Some(today > end.as_str()),
                    QuarantineEnd::Change(_) => None,
                },
            });
            continue;
        }
        if !redefines
            && let Some(globs) = &check.when_paths
            && !changed_paths
                .iter()
                .any(|path| glob::any_path_matches(globs, path))
        {
            plan.not_required.push(NotRequired {
                check: check.id.clone(),
                environment: check.environment.clone(),
                reason: format!(
                    "the change touches no path of its when_paths ({})",
                    globs.join(", ")
                ),
            });
            continue;
        }
        plan.runs.push(PlannedRun {
            spec: check.clone(),
            adapter_from: AdapterFrom::Base,
        });
    }
    if redefines {
        let own = match own {
            None => {
                return Err(format!(
                    "the change removes {POLICY_PATH}; a repository without a policy merges nothing"
                ));
            }
            Some(Err(why)) => return Err(format!("the change's own {POLICY_PATH}: {why}")),
            Some(Ok(own)) => own,
        };
        if own.revision <= base.revision {
            return Err(format!(
                "the change alters the checks (the policy or an adapter path) but its revision is {}, not above main's {}; raise revision",
                own.revision, base.revision
            ));
        }
        plan.runs.extend(
            own.checks
                .iter()
                .filter(|check| check.stage.is_pre())
                .map(|check| PlannedRun {
                    spec: within_base_reach(check, base),
                    adapter_from: AdapterFrom::Candidate,
                }),
        );
    }
    Ok(plan)
}

/// A check of a change's own policy as the change's own run may have it.
///
/// The change decides what the check runs (`command`, `adapter`) and what it reads of the
/// candidate's tree (`paths`, `materialize`, `fixtures`), and how its answer is judged; both
/// runs must pass, so none of that can let a change through that main's checks would stop.
/// What the check may reach on the machine is main's: `network`, `env`, `path`, `timeout_s`,
/// `materialize_timeout_s` and `inputs` come from main's entry for the same check (the
/// specification reads them at the base, "so a candidate cannot grant itself the network"),
/// and a check main does not have gets the least: no network, no variables, the default
/// `PATH` and time limits, nothing beyond the tree.
pub fn within_base_reach(own: &CheckSpec, base: &Policy) -> CheckSpec {
    let main = base
        .checks
        .iter()
        .find(|check| check.id == own.id && check.environment == own.environment);
    let mut spec = own.clone();
    match main {
        Some(main) => {
            spec.network = main.network;
            spec.env = main.env.clone();
            spec.path = main.path.clone();
            spec.timeout_s = main.timeout_s;
            spec.materialize_timeout_s = main.materialize_timeout_s;
            spec.inputs = main.inputs.clone();
        }
        None => {
            spec.network = false;
            spec.env = Vec::new();
            spec.path = DEFAULT_PATH.iter().map(|dir| (*dir).to_owned()).collect();
            spec.timeout_s = DEFAULT_TIMEOUT_S;
            spec.materialize_timeout_s = DEFAULT_MATERIALIZE_TIMEOUT_S;
            spec.inputs = Vec::new();
        }
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(id: &str, extra: &str) -> String {
        format!(
            "[[check]]\nid = \"{id}\"\nenvironment = \"linux\"\ncommand = \"ci/{id}\"\nadapter = [\"ci/\"]\nexpected_minimum = 1\n{extra}"
        )
    }

    #[test]
    fn a_remembered_policy_is_the_parse_of_those_very_bytes() {
        let good = format!("revision = 1\n{}", check("unit", ""));
        let bad = good.replace("expected_minimum = 1", "expected_minimum = \"one\"");
        let parsed = || {
            (
                parse_policy(good.as_bytes()),
                parse_policy(bad.as_bytes()),
                parse_policy(b"\xff"),
            )
        };
        let fresh = parsed();
        assert!(fresh.0.is_ok() && fresh.1.is_err(), "{fresh:?}");
        assert_eq!(fresh.2, Err(format!("{POLICY_PATH} is not UTF-8 text")));
        let remembered = crate::memo::remembering(|| {
            let first = parsed();
            assert_eq!(crate::memo::remembered::<Result<Policy, String>>(), Some(3));
            assert_eq!(parsed(), first);
            assert_eq!(crate::memo::remembered::<Result<Policy, String>>(), Some(3));
            first
        });
        assert_eq!(remembered, fresh);
    }

    fn policy(revision: i64, body: &str) -> Policy {
        Policy::parse(&format!("revision = {revision}\n{body}")).expect("a valid policy")
    }

    fn ids(plan: &Plan) -> Vec<(String, AdapterFrom)> {
        plan.runs
            .iter()
            .map(|r| (r.spec.id.clone(), r.adapter_from))
            .collect()
    }

    fn changed(paths: &[&str]) -> Vec<String> {
        paths.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn a_check_with_when_paths_runs_only_for_a_matching_change() {
        let base = policy(
            1,
            &format!(
                "{}{}",
                check("unit", ""),
                check("web", "when_paths = [\"web/\", \"package.json\"]\n")
            ),
        );
        let plan = plan(&base, None, &changed(&["src/a.rs"]), "2026-01-01").expect("a plan");
        assert_eq!(ids(&plan), vec![("unit".into(), AdapterFrom::Base)]);
        assert_eq!(plan.not_required.len(), 1);
        assert_eq!(
            serde_json::to_value(&plan.not_required[0]).expect("plain data"),
            serde_json::json!({
                "check": "web",
                "environment": "linux",
                "reason": "the change touches no path of its when_paths (web/, package.json)",
            })
        );
        let plan = plan_of(&base, &["web/app.ts"]);
        assert_eq!(ids(&plan).len(), 2);
        assert!(plan.not_required.is_empty());
    }

    fn plan_of(base: &Policy, paths: &[&str]) -> Plan {
        plan(base, None, &changed(paths), "2026-01-01").expect("a plan")
    }

    #[test]
    fn a_post_check_never_runs_before_the_merge_and_is_listed() {
        let base = policy(
            1,
            &format!(
                "{}{}",
                check("unit", ""),
                check("deploy", "stage = \"post\"\n")
            ),
        );
        let plan = plan_of(&base, &["src/a.rs"]);
        assert_eq!(ids(&plan), vec![("unit".into(), AdapterFrom::Base)]);
        assert_eq!(
            serde_json::to_value(&plan.post_checks).expect("plain data"),
            serde_json::json!([{"check": "deploy", "environment": "linux"}])
        );
    }

    #[test]
    fn a_quarantined_check_is_set_aside_as_a_gap_overdue_after_its_end() {
        let base = policy(
            1,
            &format!(
                "{}{}[[quarantine]]\nid = \"e2e\"\nenvironment = \"linux\"\nreason = \"red on main\"\nend = \"2026-10-25\"\nowner = \"platform\"\nsince = \"2026-10-18\"\n",
                check("unit", ""),
                check("e2e", "")
            ),
        );
        let before = plan(&base, None, &changed(&["src/a.rs"]), "2026-10-25").expect("a plan");
        assert_eq!(ids(&before), vec![("unit".into(), AdapterFrom::Base)]);
        assert_eq!(
            serde_json::to_value(&before.quarantined[0]).expect("plain data"),
            serde_json::json!({
                "check": "e2e",
                "environment": "linux",
                "quarantined": true,
                "reason": "red on main",
                "end": "2026-10-25",
                "owner": "platform",
                "since": "2026-10-18",
                "overdue": false,
            })
        );
        let after = plan(&base, None, &changed(&["src/a.rs"]), "2026-10-26").expect("a plan");
        assert_eq!(
            ids(&after),
            vec![("unit".into(), AdapterFrom::Base)],
            "still in force"
        );
        assert_eq!(after.quarantined[0].overdue, Some(true));
    }

    #[test]
    fn a_change_to_the_checks_runs_every_check_twice_under_a_raised_revision() {
        let base = policy(
            1,
            &format!(
                "{}{}",
                check("unit", ""),
                check("web", "when_paths = [\"web/\"]\n")
            ),
        );
        for touched in [POLICY_PATH, "ci/unit", "ci/deep/helper"] {
            assert!(changes_checks(&base, &changed(&[touched])), "{touched}");
            let own = policy(2, &format!("{}{}", check("unit", ""), check("web", "")));
            let plan =
                plan(&base, Some(Ok(own)), &changed(&[touched]), "2026-01-01").expect("a plan");
            assert_eq!(
                ids(&plan),
                vec![
                    ("unit".into(), AdapterFrom::Base),
                    ("web".into(), AdapterFrom::Base),
                    ("unit".into(), AdapterFrom::Candidate),
                    ("web".into(), AdapterFrom::Candidate),
                ],
                "every check, when_paths or not, with both adapters"
            );
        }
        assert!(!changes_checks(&base, &changed(&["cis/x", "src/ci/unit"])));
    }

    #[test]
    fn a_change_s_own_run_reaches_only_what_main_gives_the_check() {
        let base = policy(
            1,
            &check(
                "unit",
                "env = [\"CI\"]\npath = [\"/opt/tools\"]\ntimeout_s = 60\nmaterialize_timeout_s = 30\n",
            ),
        );
        let grab = "network = true\nenv = [\"SECRET_TOKEN\"]\npath = [\"/home/runner/bin\"]\n\
                    timeout_s = 86400\nmaterialize_timeout_s = 86400\ninputs = [\"history\"]\n";
        let own = policy(
            2,
            &format!(
                "{}{}",
                check("unit", &format!("{grab}paths = [\"src/\"]\n")),
                check("new", grab)
            ),
        );
        let plan = plan(
            &base,
            Some(Ok(own.clone())),
            &changed(&[POLICY_PATH]),
            "2026-01-01",
        )
        .expect("a plan");
        let reach = |spec: &CheckSpec| {
            (
                spec.network,
                spec.env.clone(),
                spec.path.clone(),
                spec.timeout_s,
                spec.materialize_timeout_s,
                spec.inputs.clone(),
            )
        };
        let [main_run, own_unit, own_new] = plan.runs.as_slice() else {
            panic!("three runs: {:?}", ids(&plan));
        };
        assert_eq!(main_run.spec, base.checks[0]);
        // A check main has: main's reach, the change's command, adapter and tree.
        assert_eq!(reach(&own_unit.spec), reach(&base.checks[0]));
        assert_eq!(own_unit.spec.paths, Some(vec!["src/".to_owned()]));
        assert_eq!(own_unit.spec.command, own.checks[0].command);
        assert_eq!(own_unit.adapter_from, AdapterFrom::Candidate);
        // A check main lacks: the least reach there is.
        assert_eq!(
            reach(&own_new.spec),
            (
                false,
                vec![],
                vec!["/usr/bin".to_owned(), "/bin".to_owned()],
                DEFAULT_TIMEOUT_S,
                DEFAULT_MATERIALIZE_TIMEOUT_S,
                vec![]
            )
        );
        assert_eq!(own_new.spec.id, "new");
    }

    #[test]
    fn a_change_to_the_checks_is_refused_without_a_higher_revision_or_a_valid_policy() {
        let base = policy(3, &check("unit", ""));
        let touched = changed(&[POLICY_PATH]);
        let same = plan(
            &base,
            Some(Ok(policy(3, &check("unit", "")))),
            &touched,
            "2026-01-01",
        );
        assert!(
            same.expect_err("refused")
                .contains("revision is 3, not above main's 3")
        );
        let broken = plan(&base, Some(Err("bad key".into())), &touched, "2026-01-01");
        assert!(broken.expect_err("refused").contains("bad key"));
        let gone = plan(&base, None, &touched, "2026-01-01");
        assert!(gone.expect_err("refused").contains("removes"));
    }
}
