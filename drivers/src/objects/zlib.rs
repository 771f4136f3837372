//! The zlib stream (RFC 1950) Git reads a loose object from, holding DEFLATE (RFC 1951) *stored*
//! blocks: the bytes as they are, uncompressed.
//!
//! No compression library is available offline, and none is needed: any zlib reader inflates
//! stored blocks, and the objects bay writes (step commits, notes, a draft's commit) are a few
//! hundred bytes, where compression saves little. `git gc` compresses them when it packs.

/// The most bytes one stored block holds: its length is a 16-bit field.
const BLOCK: usize = 65_535;

/// The largest prime below 2^16, Adler-32's modulus.
const ADLER_MOD: u32 = 65_521;

/// The most bytes Adler-32 can sum before its sums must be reduced, lest they overflow 32 bits.
const ADLER_RUN: usize = 5_552;

/// `bytes` as a zlib stream of stored blocks.
pub fn stored(bytes: &[u8]) -> Vec<u8> {
    let blocks = bytes.len().div_ceil(BLOCK).max(1);
    let mut out = Vec::with_capacity(2 + bytes.len() + blocks * 5 + 4);
    // CMF: deflate with a 32 KiB window; FLG: the fastest level, no dictionary, and check
    // bits that make 0x7801 a multiple of 31.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut chunks = bytes.chunks(BLOCK).peekable();
    if chunks.peek().is_none() {
        // An empty stream is one final, empty block.
        out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        // BFINAL, then BTYPE 00 (stored); the rest of the byte pads to the boundary.
        out.push(u8::from(last));
        let len = u16::try_from(chunk.len()).expect("a chunk holds at most BLOCK bytes");
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&adler32(bytes).to_be_bytes());
    out
}

/// Adler-32 of `bytes`, the checksum that ends a zlib stream.
fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for run in bytes.chunks(ADLER_RUN) {
        for &byte in run {
            a += u32::from(byte);
            b += a;
        }
        a %= ADLER_MOD;
        b %= ADLER_MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adler32_known_values() {
        assert_eq!(adler32(b""), 1);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
        // Long enough that unreduced sums would overflow.
        assert_eq!(adler32(&[0xff; 100_000]), 0x149a_302c);
    }

    #[test]
    fn blocks_split_at_their_largest_size() {
        assert_eq!(
            stored(b""),
            [0x78, 0x01, 0x01, 0x00, 0x00, 0xff, 0xff, 0, 0, 0, 1]
        );
        let two = stored(&vec![7u8; BLOCK + 1]);
        assert_eq!(two.len(), 2 + 5 + BLOCK + 5 + 1 + 4);
        assert_eq!(&two[2..7], &[0x00, 0xff, 0xff, 0x00, 0x00]);
        assert_eq!(&two[7 + BLOCK..12 + BLOCK], &[0x01, 0x01, 0x00, 0xfe, 0xff]);
    }
}
