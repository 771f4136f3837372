//! Trust: OpenSSH public keys, allowed-signers files, SSHSIG verdicts and the key registry.
//!
//! Everything here is pure: it reads text and bytes it is given and judges them, with no IO
//! and no entropy. Private keys never reach core; signing happens in the drivers
//! (`bay_drivers::sign`), and core verifies what they made before anything is pushed.

pub mod key;
pub mod record;
pub mod registry;
pub mod signers;
pub mod sshsig;

pub use key::PublicKey;
pub use record::{Keys, Trust};
pub use signers::{AllowedSigners, Entry, LineError};
pub use sshsig::{Verdict, verify, verify_by_key};
