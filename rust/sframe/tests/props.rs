// SPDX-License-Identifier: GPL-2.0

//! Property test without crates: mutate corpus sections with a xorshift
//! PRNG. Whatever the bytes, nothing panics; whenever validate() accepts a
//! mutated section, find() at many PCs returns a row or NotCovered (never a
//! malformed-section error) within a bounded number of reader calls.

mod common;
use common::*;
use sframe::{Error, Reader, Section};
use std::cell::Cell;

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Counts reader calls.
struct Counting<'a> {
    bytes: &'a [u8],
    calls: &'a Cell<u32>,
}

impl Reader for Counting<'_> {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.calls.set(self.calls.get() + 1);
        let mut s = self.bytes;
        s.read(offset, buf)
    }
}

fn mutate(rng: &mut XorShift, b: &mut Vec<u8>) {
    match rng.below(8) {
        // Nudge one byte (often keeps the section valid: offsets, starts).
        6 | 7 => {
            let i = rng.below(b.len());
            b[i] = if rng.below(2) == 0 {
                b[i].wrapping_add(1)
            } else {
                b[i].wrapping_sub(1)
            };
        }
        // Flip a few bits.
        0 | 1 => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        // Random bytes somewhere.
        2 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(b.len());
                b[i] = rng.next() as u8;
            }
        }
        // A random 32-bit value at a 4-aligned offset (counts, offsets,
        // function starts and sizes).
        3 if b.len() >= 4 => {
            let i = rng.below(b.len() / 4) * 4;
            let v = match rng.below(4) {
                0 => rng.next() as u32,
                1 => (rng.next() % 64) as u32,
                2 => u32::MAX - (rng.next() % 4) as u32,
                _ => u32::from_le_bytes(b[i..i + 4].try_into().unwrap()).wrapping_add(1),
            };
            b[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        // Truncate.
        4 => {
            let n = rng.below(b.len());
            b.truncate(n.max(1));
        }
        // Swap two 16-byte blocks (reorders FDEs/FREs).
        _ => {
            if b.len() > 64 {
                let i = rng.below(b.len() - 16);
                let j = rng.below(b.len() - 16);
                for k in 0..16 {
                    b.swap(i + k, j + k);
                }
            }
        }
    }
}

#[test]
fn mutated_corpus_sections() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let (mut tried, mut validated, mut lookups, mut max_calls) = (0u32, 0u32, 0u64, 0u32);
    for f in corpus() {
        let s = sframe_of(&f);
        let addr = s.addr;
        for _ in 0..1000 {
            let mut b = s.bytes.to_vec();
            for _ in 0..1 + rng.below(3) / 2 {
                mutate(&mut rng, &mut b);
            }
            tried += 1;
            let len = b.len() as u32;
            let Ok(mut sec) = Section::new(b.as_slice(), len, addr) else {
                continue;
            };
            let valid = sec.validate().is_ok();
            // PCs: every FDE's start, middle, last byte and end, and random
            // ones around the section's functions.
            let mut pcs = vec![0, u64::MAX, addr];
            let mut max_fres = 0;
            let (mut lo, mut hi) = (u64::MAX, 0);
            for i in 0..sec.num_fdes().min(200) {
                if let Ok(fde) = sec.fde(i) {
                    let (s, z) = (fde.func_start, u64::from(fde.func_size));
                    pcs.extend([
                        s,
                        s.wrapping_sub(1),
                        s + z / 2,
                        (s + z).saturating_sub(1),
                        s + z,
                    ]);
                    max_fres = max_fres.max(fde.num_fres);
                    lo = lo.min(s);
                    hi = hi.max(s + z);
                }
            }
            if lo < hi {
                for _ in 0..32 {
                    pcs.push(lo + rng.next() % (hi - lo + 1));
                }
            }
            // Bound per lookup: 33 binary search probes, the FDE (and V3
            // attribute) reads, one window refill per FRE scanned.
            let bound = 36 + max_fres.max(1);
            let calls = Cell::new(0);
            let mut csec = Section::new(
                Counting {
                    bytes: &b,
                    calls: &calls,
                },
                len,
                addr,
            )
            .unwrap();
            for pc in pcs {
                let before = calls.get();
                let r = csec.find(pc);
                let n = calls.get() - before;
                lookups += 1;
                if valid {
                    assert!(
                        matches!(r, Ok(_) | Err(Error::NotCovered)),
                        "{}: validated mutant gave {r:?} at {pc:#x}",
                        f.name
                    );
                    assert!(
                        n <= bound,
                        "{}: {n} reader calls for one lookup (bound {bound})",
                        f.name
                    );
                    max_calls = max_calls.max(n);
                }
            }
            validated += u32::from(valid);
        }
    }
    eprintln!(
        "props: {tried} mutants, {validated} validated, {lookups} lookups, max {max_calls} reader calls per lookup"
    );
    assert!(validated > 3000, "too few mutants validated: {validated}");
}
