//! Completion of a merged change: the dimensions a profile requires, judged for `bay status
//! <change>` (`detail.completion`). A site dimension (`[[dimension]]`, such as `reviewed`) is
//! met by the records of its kind from its producers that name the merge commit.
//!
//! Completion is reported, never enforced: no merge reads it, so a missing or rejected review
//! never blocks or delays one.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::check::Verdict;
use crate::detail::Detail;
use crate::git::Oid;
use crate::policy::{Dimension, Policy, Profile};
use crate::review::ReviewRecord;
use crate::trust::record::{Keys, Trust};
use crate::trust::registry::Broken;

/// Where one dimension stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Every counted record says `pass`.
    Met,
    /// A counted record says anything but `pass`, `unknown` included.
    Rejected,
    /// Rejected, and a later merge that fixes, undoes or supersedes the change answered it.
    Answered,
    /// No counted record yet.
    Missing,
    /// bay cannot tell: it rests only on unsigned records where the profile requires signed
    /// ones, or it needs runtime records this bay does not read.
    Unknown,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Met => "met",
            State::Rejected => "rejected",
            State::Answered => "answered",
            State::Missing => "missing",
            State::Unknown => "unknown",
        }
    }
}

/// What the judgement reads about one merged change.
#[derive(Debug)]
pub struct Merge<'a> {
    pub commit: &'a Oid,
    /// Every record line the dimensions' producers' notes hold on the merge.
    pub lines: &'a [String],
    /// The registry as read now and the mode at the base.
    pub keys: Keys<'a>,
    /// Whether a later merge on main fixes, undoes or supersedes the change.
    pub answered: bool,
}

/// `detail.completion`: the profile's verdict and where each dimension stands, or why bay
/// cannot tell.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Report {
    /// The profile judged: `met` when every required dimension is met or answered, `unmet`
    /// naming each that is not (`reviewed missing`), `unknown` when one cannot be told.
    Judged {
        profile: String,
        require: Vec<String>,
        verdict: ProfileVerdict,
        unmet: Vec<String>,
        dimensions: BTreeMap<String, Shown>,
    },
    /// The policy at the merge's base has no such profile.
    NoProfile {
        profile: String,
        verdict: Unknown,
        why: String,
        dimensions: BTreeMap<String, Shown>,
    },
    /// The key registry breaks a rule, so nothing signed can be judged.
    Broken {
        verdict: Unknown,
        why: &'static str,
        registry: Broken,
    },
    /// What completion needs could not be read: never `met`.
    Unread { verdict: Unknown, why: String },
}

/// A profile's verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileVerdict {
    Met,
    Unmet,
    Unknown,
}

/// The one verdict a completion bay could not judge has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unknown {
    Unknown,
}

/// Where one dimension stands in `dimensions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Shown {
    /// A site dimension (`[[dimension]]`): its kind, its producers and the records it counted.
    Site {
        state: State,
        kind: String,
        producers: Vec<String>,
        records: Vec<Counted>,
    },
    /// `merged` and `checked`, always met on main, and a required one bay does not read
    /// (`running`, `effective`), unknown.
    Plain { state: State },
}

/// One record a site dimension counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Counted {
    pub producer: String,
    pub verdict: Verdict,
    pub trust: Trust,
}

impl Detail for Report {}

impl Shown {
    pub fn state(&self) -> State {
        match self {
            Shown::Site { state, .. } | Shown::Plain { state } => *state,
        }
    }
}

impl Report {
    pub fn unread(why: &str) -> Report {
        Report::Unread {
            verdict: Unknown::Unknown,
            why: why.to_owned(),
        }
    }

    pub fn broken(registry: Broken) -> Report {
        Report::Broken {
            verdict: Unknown::Unknown,
            why: "the key registry breaks a rule",
            registry,
        }
    }
}

/// One site dimension on `merge`: its state and the records it counted.
pub fn judge_dimension(dimension: &Dimension, merge: &Merge<'_>, require_signed: bool) -> Shown {
    let counted: Vec<(ReviewRecord, Trust)> = merge
        .lines
        .iter()
        .filter_map(|line| {
            let record = ReviewRecord::of_kind(line, &dimension.kind)?;
            let named = record.commit().as_ref() == Some(merge.commit)
                && dimension.producers.iter().any(|p| p == record.producer());
            let trust = merge.keys.record(line);
            // With a registry that signs everything, a record counts only when it verifies.
            let verified = !merge.keys.signs_everything() || trust == Trust::Signed;
            (named && verified).then_some((record, trust))
        })
        .collect();
    let signed: Vec<&(ReviewRecord, Trust)> = counted
        .iter()
        .filter(|(_, trust)| *trust == Trust::Signed)
        .collect();
    let judged: Vec<&(ReviewRecord, Trust)> = if require_signed {
        signed
    } else {
        counted.iter().collect()
    };
    let state = if judged.is_empty() && !counted.is_empty() {
        State::Unknown
    } else if judged.is_empty() {
        State::Missing
    } else if judged.iter().all(|(r, _)| r.verdict() == Verdict::Pass) {
        State::Met
    } else if merge.answered {
        State::Answered
    } else {
        State::Rejected
    };
    Shown::Site {
        state,
        kind: dimension.kind.clone(),
        producers: dimension.producers.clone(),
        records: counted
            .iter()
            .map(|(record, trust)| Counted {
                producer: record.producer().to_owned(),
                verdict: record.verdict(),
                trust: *trust,
            })
            .collect(),
    }
}

/// `detail.completion` of a merged change under `profile_name`: each dimension the profile
/// requires, and each site dimension besides, and the profile's verdict; `unknown` when the
/// policy has no such profile or a required dimension cannot be told.
pub fn judge(policy: &Policy, profile_name: &str, merge: &Merge<'_>) -> Report {
    let profile = policy.profile(profile_name);
    let require_signed = profile.as_ref().is_some_and(|p| p.require_signed);
    // A merged change on main is merged, and merged only once its required checks passed.
    let mut dimensions: BTreeMap<String, Shown> = ["merged", "checked"]
        .into_iter()
        .map(|builtin| (builtin.to_owned(), Shown::Plain { state: State::Met }))
        .collect();
    for dimension in &policy.dimensions {
        dimensions.insert(
            dimension.name.clone(),
            judge_dimension(dimension, merge, require_signed),
        );
    }
    let Some(Profile { require, .. }) = profile else {
        return Report::NoProfile {
            profile: profile_name.to_owned(),
            verdict: Unknown::Unknown,
            why: format!("the policy at the base has no [profile.{profile_name}]"),
            dimensions,
        };
    };
    let mut unmet = Vec::new();
    let mut unknown = false;
    for name in &require {
        // `running` and `effective` come from runtime records, which this bay does not read.
        let state = dimensions
            .entry(name.clone())
            .or_insert(Shown::Plain {
                state: State::Unknown,
            })
            .state();
        match state {
            State::Met | State::Answered => {}
            State::Unknown => unknown = true,
            State::Rejected | State::Missing => unmet.push(format!("{name} {}", state.as_str())),
        }
    }
    let verdict = if !unmet.is_empty() {
        ProfileVerdict::Unmet
    } else if unknown {
        ProfileVerdict::Unknown
    } else {
        ProfileVerdict::Met
    };
    Report::Judged {
        profile: profile_name.to_owned(),
        require,
        verdict,
        unmet,
        dimensions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Signing;
    use crate::review::Review;
    use crate::time::Timestamp;
    use serde_json::{Value, json};

    fn oid(c: char) -> Oid {
        Oid::parse(&c.to_string().repeat(40)).expect("an oid")
    }

    fn policy(extra: &str) -> Policy {
        let text = format!(
            "revision = 1\nunchecked = true\n\n[[dimension]]\nname = \"reviewed\"\n\
             kind = \"review\"\nproducers = [\"review-bot\"]\n{extra}"
        );
        crate::check::plan::parse_policy(text.as_bytes()).expect("a policy")
    }

    fn review(commit: char, verdict: Verdict, producer: &str) -> String {
        let review = Review {
            reviewer: producer.into(),
            verdict,
            why: String::new(),
            version: Some(format!("{verdict}")),
            inputs: Vec::new(),
            body: serde_json::Map::new(),
        };
        ReviewRecord::of(&review, &oid(commit), &oid('b'), None, Timestamp(0)).to_json()
    }

    fn judged(policy: &Policy, profile: &str, lines: &[String], answered: bool) -> Value {
        let merge = Merge {
            commit: &oid('a'),
            lines,
            keys: Keys {
                registry: None,
                signing: Signing::All,
            },
            answered,
        };
        judge(policy, profile, &merge).to_json()
    }

    const RELEASE: &str =
        "\n[profile.release]\nrequire = [\"merged\", \"checked\", \"reviewed\"]\n";

    #[test]
    fn a_dimension_is_met_rejected_answered_or_missing_by_the_records_naming_the_merge() {
        let policy = policy(RELEASE);
        let state = |lines: &[String], answered: bool| {
            let value = judged(&policy, "release", lines, answered);
            (
                value["dimensions"]["reviewed"]["state"].clone(),
                value["verdict"].clone(),
                value["unmet"].clone(),
            )
        };
        let (dim, verdict, unmet) = state(&[], false);
        assert_eq!((dim, verdict), (json!("missing"), json!("unmet")));
        assert_eq!(unmet, json!(["reviewed missing"]));
        // Another commit's review, or another producer's, counts for nothing.
        let others = [
            review('c', Verdict::Pass, "review-bot"),
            review('a', Verdict::Pass, "other-bot"),
        ];
        assert_eq!(state(&others, false).0, json!("missing"));
        let pass = review('a', Verdict::Pass, "review-bot");
        assert_eq!(state(std::slice::from_ref(&pass), false).1, json!("met"));
        // `unknown` is no pass, and a later pass never answers a rejection.
        let unknown = review('a', Verdict::Unknown, "review-bot");
        let (dim, verdict, _) = state(&[unknown.clone(), pass.clone()], false);
        assert_eq!((dim, verdict), (json!("rejected"), json!("unmet")));
        // A merge that fixes, undoes or supersedes the change answers it.
        let (dim, verdict, _) = state(&[unknown, pass], true);
        assert_eq!((dim, verdict), (json!("answered"), json!("met")));
    }

    #[test]
    fn a_profile_the_policy_lacks_is_unknown_and_default_needs_merged_and_checked() {
        let release = policy(RELEASE);
        let value = judged(&release, "nightly", &[], false);
        assert_eq!(value["verdict"], "unknown");
        let value = judged(&release, "default", &[], false);
        assert_eq!(value["verdict"], "met", "{value}");
        assert_eq!(value["dimensions"]["reviewed"]["state"], "missing");
        let runtime = policy("\n[profile.live]\nrequire = [\"merged\", \"running\"]\n");
        let value = judged(&runtime, "live", &[], false);
        assert_eq!(value["verdict"], "unknown");
        assert_eq!(value["dimensions"]["running"]["state"], "unknown");
    }

    #[test]
    fn require_signed_makes_a_dimension_on_unsigned_records_unknown() {
        let policy =
            policy("\n[profile.strict]\nrequire = [\"reviewed\"]\nrequire_signed = true\n");
        let pass = review('a', Verdict::Pass, "review-bot");
        let value = judged(&policy, "strict", &[pass], false);
        assert_eq!(value["dimensions"]["reviewed"]["state"], "unknown");
        assert_eq!(value["verdict"], "unknown");
        let value = judged(&policy, "strict", &[], false);
        assert_eq!(value["dimensions"]["reviewed"]["state"], "missing");
    }

    #[test]
    fn each_report_serialises_to_the_documented_json() {
        let policy = policy(RELEASE);
        let lines = [review('a', Verdict::ProductFailure, "review-bot")];
        assert_eq!(
            judged(&policy, "release", &lines, false),
            json!({
                "profile": "release",
                "require": ["merged", "checked", "reviewed"],
                "verdict": "unmet",
                "unmet": ["reviewed rejected"],
                "dimensions": {
                    "merged": {"state": "met"},
                    "checked": {"state": "met"},
                    "reviewed": {
                        "state": "rejected",
                        "kind": "review",
                        "producers": ["review-bot"],
                        "records": [
                            {"producer": "review-bot", "verdict": "product_failure", "trust": "unsigned"},
                        ],
                    },
                },
            })
        );
        assert_eq!(
            judged(&policy, "nightly", &[], false),
            json!({
                "profile": "nightly",
                "verdict": "unknown",
                "why": "the policy at the base has no [profile.nightly]",
                "dimensions": {
                    "merged": {"state": "met"},
                    "checked": {"state": "met"},
                    "reviewed": {"state": "missing", "kind": "review", "producers": ["review-bot"], "records": []},
                },
            })
        );
        assert_eq!(
            Report::unread("the remote did not answer").to_json(),
            json!({"verdict": "unknown", "why": "the remote did not answer"})
        );
    }
}
