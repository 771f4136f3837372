//! bay-sim: an in-memory world that runs bay's core machines against a model of Git, under
//! seeded faults, and checks bay's safety invariants after every step.
//!
//! One seed fixes everything in a run: the fault mix, the schedule, every latency and every
//! check's behaviour. [`run_seed`] runs one; the `bay-sim` binary runs many and reports.

pub mod agent;
pub mod bench;
pub mod checks;
pub mod faults;
pub mod git_model;
pub mod history;
pub mod invariants;
pub mod keys;
pub mod locks;
pub mod plan;
pub mod remote;
pub mod rng;
pub mod store;
pub mod trace;
pub mod world;

pub use world::{RunReport, Scenario};

/// Runs one seed of a scenario to its end. A seed judges the same signatures many times (each
/// command that reads the key registry judges its whole chain, the checkers judge every record
/// again, each runner parses main's policy at every work item): core remembers its pure
/// judgements for the seed's length (`bay_core::memo`), so the same signature over the same
/// bytes is verified once, a chain judged once, a policy parsed once. The answers are the ones
/// core gives without the memo.
pub fn run_seed(seed: u64, scenario: &Scenario) -> RunReport {
    bay_core::memo::remembering(|| world::World::new(seed, scenario.clone()).run(seed))
}
