//! bay-core: the deterministic, sans-IO heart of bay.
//!
//! Everything bay decides is decided here, once: ids, the change record, the check contract,
//! the policy, reason codes and the state machines of every command and of the runner. core
//! does no IO, reads no clock, draws no randomness and starts no thread. Time arrives as the
//! `now` argument, entropy as bytes, and every effect leaves as a plain-data action that a
//! driver (real Git, or the simulator) executes and answers with an event.

pub mod actor;
pub mod adapter;
pub mod approval;
pub mod batch;
pub mod check;
pub mod compact;
pub mod completion;
pub mod config;
pub mod conflict;
pub mod detail;
pub mod disk;
pub mod doctor;
pub mod event;
pub mod flow;
pub mod git;
pub mod glob;
pub mod hook;
pub mod hook_settings;
pub mod id;
pub mod install;
pub mod limits;
pub mod lineage;
pub mod live;
pub mod lock;
pub mod machine;
pub mod memo;
pub mod ordered_json;
pub mod paths;
pub mod plugin;
pub mod policy;
pub mod presence;
pub mod progress;
pub mod reason;
pub mod record;
pub mod red;
pub mod ref_name;
pub mod report;
pub mod result;
pub mod review;
pub mod save;
pub mod say;
pub mod schema;
pub mod shell;
pub mod skill;
pub mod time;
pub mod toml_doc;
pub mod trust;
pub mod words;
