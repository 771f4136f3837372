//! One row of `bay doctor`: a concern, its verdict, and the facts it shows. Every key a row
//! names is a field here, so a row's JSON is made by its types alone.

use serde::Serialize;

use super::{Report, custody};
use crate::adapter::Product;
use crate::detail::Detail;
use crate::policy::Signing;
use crate::reason::ReasonCode;
use crate::result::BayResult;
use crate::skill::SkillState;

/// A row's verdict, with what to do where there is something: a red row always has its code
/// and its fix, a green or an off row neither. Flattened into the row as `state`, `code` and
/// `fix`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum State {
    Green,
    /// Red: a required row turns doctor red, and its refusal names `code`.
    Red {
        code: ReasonCode,
        fix: String,
    },
    /// Not in use here, and nothing to fix (no agent product, a waived sandbox).
    Off,
    /// Worth fixing, but never required: doctor stays green. The code the row would be red
    /// with where it is required elsewhere (the sandbox of an agent), and the fix where bay
    /// knows one.
    Advice {
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<ReasonCode>,
        #[serde(skip_serializing_if = "Option::is_none")]
        fix: Option<String>,
    },
    /// It works, with less than bay can give here: the spec's `degraded`, such as several
    /// actors who can sign as one another (`key-custody`). Never red, so doctor stays `ok`
    /// (exit 0) and the row is not among `detail.red`; its `fix` says how to mend it.
    Degraded {
        fix: String,
    },
}

/// One concern and its verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub name: &'static str,
    #[serde(flatten)]
    pub state: State,
    /// Whether a red here turns doctor red.
    pub required: bool,
    /// What was found, such as a version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// The oldest version or the state that is green.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<String>,
    /// The row's own facts, beside its verdict.
    #[serde(flatten)]
    pub facts: RowFacts,
}

/// What a row shows besides its verdict, one variant for each kind of row. Untagged and
/// flattened: the fields sit in the row's JSON beside `name` and `state`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RowFacts {
    /// Nothing more: bay's own row, a green `git`, `remote`, `check-env` or `store`.
    Nothing {},
    /// The program a version row judged (`git`, `agent`), as `detail.versions` names it.
    Tool { tool: &'static str },
    /// Why the row is off or cannot be judged, or what Git said when the remote did not answer.
    Why { why: String },
    /// A working sandbox: it cuts the network off.
    Network { network: Network },
    /// The sandbox a check needs and does not have here.
    Sandbox { sandbox: Sandbox },
    /// The hooks' product, its settings file, and what keeps bay's entries from working.
    Hooks(Hooks),
    /// Each config directory's skill, and those that do not match (a red row's only).
    Skill {
        #[serde(skip_serializing_if = "Vec::is_empty")]
        mismatched: Vec<String>,
        dirs: Vec<SkillDir>,
    },
    /// The variables a runner lacks: each name once, and each check that names one.
    Unset {
        variables: Vec<String>,
        unset: Vec<Unset>,
    },
    /// Why the commit-graph does not help yet.
    Store {
        changed_path_filters: bool,
        written_on_fetch: bool,
    },
    /// What main's policy says is signed, and whether the remote holds a key registry
    /// (`null`: not known).
    Signing {
        #[serde(flatten)]
        mode: Mode,
        registry: Option<bool>,
    },
    /// The keys, what was judged of them, and the actors (`custody`).
    KeyCustody(custody::Shown),
}

/// What a working sandbox does to a check's network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    Cut,
}

/// The one sandbox bay runs checks in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Sandbox {
    Bwrap,
}

/// The `hooks` row's facts, with a product on main.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Hooks {
    pub product: Product,
    /// The product's settings file.
    pub file: &'static str,
    /// Moment names bay does not know, in a settings file on main or here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub old_names: Vec<String>,
    /// Each setting that turns every hook off.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub turned_off_by: Vec<Switch>,
}

/// A settings key, set `true` in a file, that turns every hook off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Switch {
    pub file: String,
    pub key: &'static str,
}

/// One config directory's copy of the skill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkillDir {
    pub dir: String,
    pub state: SkillState,
}

/// A variable a check names that the runner's environment lacks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unset {
    pub check: String,
    pub environment: String,
    pub variable: String,
}

/// `[policy] signing` on main, or why it cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Mode {
    Read { mode: Signing },
    Unread { policy: String },
}

/// The detail of a red row's refusal: doctor's [`Report`] when doctor refuses, and the row's
/// facts (`tool`, `floor`, `found`, `fix`, `variables`...) beside it at the top, where the
/// code's reader looks.
#[derive(Serialize)]
struct Refused<'a> {
    #[serde(flatten)]
    doctor: Option<&'a Report>,
    #[serde(flatten)]
    facts: &'a RowFacts,
    #[serde(skip_serializing_if = "Option::is_none")]
    floor: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    found: Option<&'a str>,
    fix: &'a str,
}

impl Detail for Refused<'_> {}

impl RowFacts {
    /// The program this row judged, if it is a version row's.
    pub fn tool(&self) -> Option<&'static str> {
        match self {
            RowFacts::Tool { tool } => Some(tool),
            _ => None,
        }
    }
}

impl Row {
    pub(super) fn green(name: &'static str, found: Option<String>) -> Row {
        Row {
            name,
            state: State::Green,
            required: true,
            found,
            floor: None,
            facts: RowFacts::Nothing {},
        }
    }

    /// Red with `code` and `fix`; when `required` is false, only advice.
    pub(super) fn red(name: &'static str, required: bool, code: ReasonCode, fix: String) -> Row {
        Row {
            state: if required {
                State::Red { code, fix }
            } else {
                State::Advice {
                    code: Some(code),
                    fix: Some(fix),
                }
            },
            required,
            ..Row::green(name, None)
        }
    }

    pub(super) fn found(mut self, found: Option<String>) -> Row {
        self.found = found;
        self
    }

    pub(super) fn floor(mut self, floor: impl Into<String>) -> Row {
        self.floor = Some(floor.into());
        self
    }

    pub(super) fn with(mut self, facts: RowFacts) -> Row {
        self.facts = facts;
        self
    }

    /// Whether this row turns doctor red.
    pub fn is_red(&self) -> bool {
        matches!(self.state, State::Red { .. })
    }

    /// The refusal this row makes if it is red: its code, with [`Refused`] as its detail.
    pub(super) fn refusal(&self, doctor: Option<&Report>) -> Option<BayResult> {
        let State::Red { code, fix } = &self.state else {
            return None;
        };
        let detail = Refused {
            doctor,
            facts: &self.facts,
            floor: self.floor.as_deref(),
            found: self.found.as_deref(),
            fix,
        };
        Some(BayResult::refusal(*code, detail.to_map()))
    }
}
