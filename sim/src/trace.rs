//! A run's trace: a hash of every step, for the determinism check, and the last steps in words,
//! for the report of a failing seed.

use std::collections::VecDeque;

/// How many steps a failure report shows.
const KEEP: usize = 40;

#[derive(Debug)]
pub struct Trace {
    hash: u64,
    recent: VecDeque<(u64, usize, &'static str, u64)>,
    full: Option<Vec<(u64, usize, &'static str, u64)>>,
}

impl Trace {
    pub fn new(full: bool) -> Trace {
        Trace {
            hash: 0xcbf2_9ce4_8422_2325,
            recent: VecDeque::with_capacity(KEEP),
            full: full.then(Vec::new),
        }
    }

    /// Records one step: at virtual time `t`, on `host`, a `what` with a number.
    pub fn note(&mut self, t: u64, host: usize, what: &'static str, n: u64) {
        for word in [t, host as u64, n] {
            self.mix_word(word);
        }
        self.mix(what.as_bytes());
        if self.recent.len() == KEEP {
            self.recent.pop_front();
        }
        self.recent.push_back((t, host, what, n));
        if let Some(full) = &mut self.full {
            full.push((t, host, what, n));
        }
    }

    /// FNV-1a's step over a whole word at once (then rotated, so that its high bits reach the
    /// low ones): a step's three numbers are most of what is mixed, and mixing them byte by
    /// byte took 1% of a run.
    fn mix_word(&mut self, word: u64) {
        self.hash ^= word;
        self.hash = self.hash.wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }

    /// FNV-1a: cheap, and any difference in the steps changes it.
    fn mix(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.hash ^= u64::from(*byte);
            self.hash = self.hash.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The kept steps, oldest first, one line each.
    pub fn lines(&self) -> Vec<String> {
        let steps: Vec<&(u64, usize, &str, u64)> = match &self.full {
            Some(full) => full.iter().collect(),
            None => self.recent.iter().collect(),
        };
        steps
            .into_iter()
            .map(|(t, host, what, n)| {
                let host = if *host == usize::MAX {
                    "world".to_string()
                } else {
                    format!("host {host}")
                };
                format!("{:>9.3}s {host:<8} {what} {n}", *t as f64 / 1000.0)
            })
            .collect()
    }
}
