//! Golden traces: what runner machines were fed, and everything they answered, for bay's main
//! scenarios. A core that reproduces a trace entry for entry decides what bay's core decides.
//!
//! A trace (`bay.trace/1`, JSON) is a list of entries, each for one named runner:
//!
//! - `runner`: the runner was made with `config` at `now`;
//! - `input`: `event` was fed at `now` (the runner's own clock);
//! - `action`: `poll_action` answered `action` (`[id, action]`, or `null` once drained).
//!
//! After a `runner` or `input` entry, `after` holds `poll_timeout` and `outcome` as they were
//! then. [`Recorder`] writes traces while a scenario drives runners; [`replay`] feeds a trace's
//! inputs to fresh runners, polls where the trace polled, and stops at the first difference.

use std::collections::BTreeMap;

use bay_core::machine::runner::{Runner, RunnerConfig};
use bay_core::machine::{Action, ActionId, Event, Machine, Misuse};
use bay_core::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format name every trace carries.
pub const FORMAT: &str = "bay.trace/1";

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trace {
    pub format: String,
    pub scenario: String,
    /// What the scenario shows, in one sentence.
    pub about: String,
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    Runner {
        machine: String,
        config: Box<RunnerConfig>,
        now: Timestamp,
        after: After,
    },
    Input {
        machine: String,
        now: Timestamp,
        event: Event,
        after: After,
    },
    Action {
        machine: String,
        action: Option<Value>,
    },
}

/// A machine's deadline and outcome after an input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct After {
    pub timeout: Option<Value>,
    pub outcome: Option<Value>,
}

impl After {
    fn of(machine: &dyn Machine) -> After {
        After {
            timeout: machine.poll_timeout().map(|d| json(&d)),
            outcome: machine.outcome().map(json),
        }
    }
}

fn json(value: &impl Serialize) -> Value {
    serde_json::to_value(value).expect("core's data serializes")
}

/// Runners driven by a scenario, and the trace of everything they were fed and answered.
#[derive(Debug, Default)]
pub struct Recorder {
    runners: BTreeMap<String, Runner>,
    entries: Vec<Entry>,
}

impl Recorder {
    /// Makes a runner named `machine`.
    pub fn runner(&mut self, machine: &str, config: RunnerConfig, now: Timestamp) {
        let runner = Runner::new(config.clone(), now);
        self.entries.push(Entry::Runner {
            machine: machine.to_owned(),
            config: Box::new(config),
            now,
            after: After::of(&runner),
        });
        self.runners.insert(machine.to_owned(), runner);
    }

    pub fn handle(&mut self, machine: &str, now: Timestamp, event: Event) -> Result<(), Misuse> {
        let runner = self
            .runners
            .get_mut(machine)
            .unwrap_or_else(|| panic!("no runner {machine:?} was made"));
        let handled = runner.handle(now, event.clone());
        self.entries.push(Entry::Input {
            machine: machine.to_owned(),
            now,
            event,
            after: After::of(&*runner),
        });
        handled
    }

    pub fn poll_action(&mut self, machine: &str) -> Option<(ActionId, Action)> {
        let polled = self
            .runners
            .get_mut(machine)
            .unwrap_or_else(|| panic!("no runner {machine:?} was made"))
            .poll_action();
        self.entries.push(Entry::Action {
            machine: machine.to_owned(),
            action: polled.as_ref().map(json),
        });
        polled
    }

    /// A runner, to look at (its deadline, its outcome) without recording anything.
    pub fn runner_ref(&self, machine: &str) -> &Runner {
        self.runners
            .get(machine)
            .unwrap_or_else(|| panic!("no runner {machine:?} was made"))
    }

    pub fn finish(self, scenario: &str, about: &str) -> Trace {
        Trace {
            format: FORMAT.to_owned(),
            scenario: scenario.to_owned(),
            about: about.to_owned(),
            entries: self.entries,
        }
    }
}

/// The traces bay records (see `tests/traces.rs`): `clean-merge`, `conflict`, `main-moved`,
/// `takeover`, `lost-reply` and `lying-check`.
pub fn golden() -> Vec<Trace> {
    [
        include_str!("../golden/traces/clean-merge.json"),
        include_str!("../golden/traces/conflict.json"),
        include_str!("../golden/traces/main-moved.json"),
        include_str!("../golden/traces/takeover.json"),
        include_str!("../golden/traces/lost-reply.json"),
        include_str!("../golden/traces/lying-check.json"),
        include_str!("../golden/traces/footprint-carried.json"),
    ]
    .iter()
    .map(|text| serde_json::from_str(text).expect("a bundled trace is a trace"))
    .collect()
}

/// Where a replay first differed from its trace.
#[derive(Clone, Debug, PartialEq)]
pub struct Divergence {
    /// The entry's index in the trace.
    pub entry: usize,
    pub machine: String,
    pub what: String,
    pub expected: Value,
    pub got: Value,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "entry {} ({} of {}): expected {}, got {}",
            self.entry, self.what, self.machine, self.expected, self.got
        )
    }
}

/// Feeds `trace` to fresh runners and checks every answer. `Err` names the first entry whose
/// answer differs.
pub fn replay(trace: &Trace) -> Result<(), Divergence> {
    if trace.format != FORMAT {
        return Err(Divergence {
            entry: 0,
            machine: String::new(),
            what: "format".into(),
            expected: Value::from(FORMAT),
            got: Value::from(trace.format.clone()),
        });
    }
    let mut runners: BTreeMap<&str, Runner> = BTreeMap::new();
    for (index, entry) in trace.entries.iter().enumerate() {
        let differs = |machine: &str, what: &str, expected: Value, got: Value| {
            (expected != got).then(|| Divergence {
                entry: index,
                machine: machine.to_owned(),
                what: what.to_owned(),
                expected,
                got,
            })
        };
        let found = match entry {
            Entry::Runner {
                machine,
                config,
                now,
                after,
            } => {
                let runner = Runner::new(RunnerConfig::clone(config), *now);
                let found = differs(machine, "state", json(after), json(&After::of(&runner)));
                runners.insert(machine, runner);
                found
            }
            Entry::Input {
                machine,
                now,
                event,
                after,
            } => match runners.get_mut(machine.as_str()) {
                None => differs(machine, "runner", json(&"made"), Value::Null),
                Some(runner) => match runner.handle(*now, event.clone()) {
                    Err(misuse) => differs(
                        machine,
                        "input",
                        json(&"accepted"),
                        Value::from(misuse.to_string()),
                    ),
                    Ok(()) => differs(machine, "state", json(after), json(&After::of(&*runner))),
                },
            },
            Entry::Action { machine, action } => match runners.get_mut(machine.as_str()) {
                None => differs(machine, "runner", json(&"made"), Value::Null),
                Some(runner) => {
                    let polled = runner.poll_action().map(|a| json(&a));
                    differs(machine, "action", json(action), json(&polled))
                }
            },
        };
        if let Some(divergence) = found {
            return Err(divergence);
        }
    }
    Ok(())
}
