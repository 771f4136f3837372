//! Answers remembered for a caller that asks core the same pure questions again and again.
//!
//! Some of core's judgements are pure functions of bytes and cost far more than reading the
//! bytes: a signature decoded (its armoured bytes), its cryptographic check (namespace,
//! message, armoured signature), the key registry's chain judged whole (each commit's id, raw
//! object and files), a policy file parsed, main's config parsed, a public key read from its
//! fields, a step read from its commit message. Inside [`remembering`], each is made once per
//! distinct input on the caller's thread and its answer given again for the same input, found
//! by the input itself: its parts, each prefixed by its length, kept whole as the key. That is
//! exact, and cheaper to copy and compare than a SHA-256 of every input was to make. Outside it
//! nothing is kept and nothing is copied: the CLI and the drivers judge every time, as before.
//!
//! The answers are the same with or without the memo; only the time differs. The simulator
//! remembers for one seed's length, where every command that reads the registry judges its
//! whole chain again and every checker judges each record again.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::Config;
use crate::policy::Policy;
use crate::record::{Step, StepParseError};
use crate::trust::PublicKey;
use crate::trust::registry::{Broken, Version};
use crate::trust::sshsig::{Checked, Decoded, Verdict};

/// An input's parts, each prefixed by its length, after their count: two inputs have the
/// same key exactly when they have the same parts.
type Key = Box<[u8]>;

/// What this thread remembers while a caller asks it to.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    decoded: BTreeMap<Key, Result<Arc<Decoded>, Verdict>>,
    checks: BTreeMap<Key, Checked>,
    chains: BTreeMap<Key, Result<Version, Broken>>,
    policies: BTreeMap<Key, Result<Policy, String>>,
    configs: BTreeMap<Key, Result<Config, String>>,
    keys: BTreeMap<Key, Result<PublicKey, String>>,
    steps: BTreeMap<Key, Result<Step, StepParseError>>,
}

/// An answer the memo keeps, in a table of its own kind.
pub(crate) trait Kept: Clone + Sized {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self>;
}

impl Kept for Result<Arc<Decoded>, Verdict> {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.decoded
    }
}

impl Kept for Checked {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.checks
    }
}

impl Kept for Result<Version, Broken> {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.chains
    }
}

impl Kept for Result<Policy, String> {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.policies
    }
}

impl Kept for Result<Config, String> {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.configs
    }
}

impl Kept for Result<PublicKey, String> {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.keys
    }
}

impl Kept for Result<Step, StepParseError> {
    fn table(memo: &mut Memo) -> &mut BTreeMap<Key, Self> {
        &mut memo.steps
    }
}

thread_local! {
    static MEMO: RefCell<Option<Memo>> = const { RefCell::new(None) };
}

/// Runs `f` with the answers of core's pure judgements remembered on this thread, so that the
/// same input is judged once. The memo is dropped when the outermost call returns (or
/// unwinds); a call inside another shares the outer one's.
pub fn remembering<T>(f: impl FnOnce() -> T) -> T {
    /// Forgets the memo when the outermost call ends, even by a panic.
    struct Forget;
    impl Drop for Forget {
        fn drop(&mut self) {
            MEMO.with(|memo| memo.borrow_mut().take());
        }
    }
    let outermost = MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let outermost = memo.is_none();
        memo.get_or_insert_with(Memo::default);
        outermost
    });
    let _forget = outermost.then_some(Forget);
    f()
}

/// The answer `judge` gives for the input made of `parts`: remembered if this thread
/// remembers and has judged the same parts before, else judged now (and kept while it
/// remembers). `parts` must hold everything `judge` reads.
pub(crate) fn recall<V: Kept>(parts: &[&[u8]], judge: impl FnOnce() -> V) -> V {
    let remembering = MEMO.with(|memo| memo.borrow().is_some());
    if !remembering {
        return judge();
    }
    let size = 8 + parts.iter().map(|part| 8 + part.len()).sum::<usize>();
    let mut key = Vec::with_capacity(size);
    key.extend_from_slice(&(parts.len() as u64).to_be_bytes());
    for part in parts {
        key.extend_from_slice(&(part.len() as u64).to_be_bytes());
        key.extend_from_slice(part);
    }
    let known = MEMO.with(|memo| {
        memo.borrow_mut()
            .as_mut()
            .and_then(|memo| V::table(memo).get(key.as_slice()).cloned())
    });
    if let Some(known) = known {
        return known;
    }
    // Judged with no borrow held: a judgement may recall another (a chain's signatures).
    let answer = judge();
    MEMO.with(|memo| {
        if let Some(memo) = memo.borrow_mut().as_mut() {
            V::table(memo).insert(key.into_boxed_slice(), answer.clone());
        }
    });
    answer
}

/// How many answers of kind `V` this thread remembers now; `None` when it does not remember.
#[cfg(test)]
pub(crate) fn remembered<V: Kept>() -> Option<usize> {
    MEMO.with(|memo| memo.borrow_mut().as_mut().map(|memo| V::table(memo).len()))
}
