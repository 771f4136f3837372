//! SHA-1 (FIPS 180-4), the hash that names Git objects in a repository of the default object
//! format.
//!
//! Written here because the offline registry this workspace builds from has no SHA-1 crate,
//! and `sha2` does not cover it. SHA-1 is broken for collision resistance; it is used here only
//! because Git names its objects with it, never to decide trust. Git itself hashes with
//! SHA-1DC, which gives the same digest for every input except crafted collision attacks, which
//! bay never writes.

/// Hashes `bytes` given in any number of pieces, as one message.
#[derive(Clone, Debug)]
pub struct Sha1 {
    state: [u32; 5],
    /// Bytes of the current block not yet compressed.
    block: [u8; 64],
    filled: usize,
    /// The message length so far, in bytes.
    length: u64,
}

impl Default for Sha1 {
    fn default() -> Sha1 {
        Sha1 {
            state: [
                0x6745_2301,
                0xefcd_ab89,
                0x98ba_dcfe,
                0x1032_5476,
                0xc3d2_e1f0,
            ],
            block: [0; 64],
            filled: 0,
            length: 0,
        }
    }
}

impl Sha1 {
    pub fn update(&mut self, mut bytes: &[u8]) {
        self.length = self.length.wrapping_add(bytes.len() as u64);
        while !bytes.is_empty() {
            let take = (64 - self.filled).min(bytes.len());
            self.block[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == 64 {
                compress(&mut self.state, &self.block);
                self.filled = 0;
            }
        }
    }

    /// The digest: the message, a 1 bit, zeros to 56 bytes mod 64, and the length in bits.
    pub fn finish(mut self) -> [u8; 20] {
        let bits = self.length.wrapping_mul(8);
        self.update(&[0x80]);
        while self.filled != 56 {
            self.update(&[0]);
        }
        self.update(&bits.to_be_bytes());
        let mut digest = [0u8; 20];
        for (out, word) in digest.chunks_exact_mut(4).zip(self.state) {
            out.copy_from_slice(&word.to_be_bytes());
        }
        digest
    }
}

/// One 64-byte block into the state.
fn compress(state: &mut [u32; 5], block: &[u8; 64]) {
    let mut w = [0u32; 80];
    for (word, bytes) in w.iter_mut().zip(block.chunks_exact(4)) {
        *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    }
    for t in 16..80 {
        w[t] = (w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]).rotate_left(1);
    }
    let [mut a, mut b, mut c, mut d, mut e] = *state;
    for (t, word) in w.iter().enumerate() {
        let (f, k) = match t {
            0..20 => ((b & c) | (!b & d), 0x5a82_7999),
            20..40 => (b ^ c ^ d, 0x6ed9_eba1),
            40..60 => ((b & c) | (b & d) | (c & d), 0x8f1b_bcdc),
            _ => (b ^ c ^ d, 0xca62_c1d6),
        };
        let next = a
            .rotate_left(5)
            .wrapping_add(f)
            .wrapping_add(e)
            .wrapping_add(k)
            .wrapping_add(*word);
        e = d;
        d = c;
        c = b.rotate_left(30);
        b = a;
        a = next;
    }
    for (s, v) in state.iter_mut().zip([a, b, c, d, e]) {
        *s = s.wrapping_add(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(bytes: &[u8]) -> String {
        let mut sha = Sha1::default();
        sha.update(bytes);
        sha.finish().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The FIPS 180 examples, and lengths on each side of the 56- and 64-byte padding edges.
    #[test]
    fn known_digests() {
        assert_eq!(hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        assert_eq!(
            hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(
            hex(&[b'a'; 1_000_000]),
            "34aa973cd4c4daa4f61eeb2bdbad27316534016f"
        );
        assert_eq!(hex(&[b'a'; 55]), "c1c8bbdc22796e28c0e15163d20899b65621d65a");
        assert_eq!(hex(&[b'a'; 56]), "c2db330f6083854c99d4b5bfb6e8f29f201be699");
        assert_eq!(hex(&[b'a'; 64]), "0098ba824b5c16427bd7a1122a5a442a25ec644d");
    }

    #[test]
    fn pieces_hash_as_one_message() {
        let message: Vec<u8> = (0..300u16).map(|n| (n * 7) as u8).collect();
        for cut in [0, 1, 55, 56, 63, 64, 65, 128, 299, 300] {
            let mut sha = Sha1::default();
            sha.update(&message[..cut]);
            sha.update(&message[cut..]);
            assert_eq!(
                sha.finish()
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>(),
                hex(&message),
                "cut at {cut}"
            );
        }
    }
}
