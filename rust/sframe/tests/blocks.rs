// SPDX-License-Identifier: GPL-2.0

//! `Blocks` reads what the reader under it holds, whatever the offsets and
//! sizes; validation through it agrees with validation of the slice, on
//! every corpus section and on mutated ones, with far fewer inner reads.

mod common;
use common::*;
use sframe::{Blocks, Error, Reader, Section};

/// Counts the reads of a slice.
struct Counting<'a> {
    bytes: &'a [u8],
    calls: u32,
}

impl Reader for Counting<'_> {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.calls += 1;
        let mut s = self.bytes;
        s.read(offset, buf)
    }
}

#[test]
fn reads_agree_with_the_slice() {
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let len = bytes.len() as u32;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for block_buf in [2usize, 16, 64, 4096, 20000] {
        let mut buf = vec![0u8; block_buf];
        let mut b = Blocks::new(bytes.as_slice(), &mut buf, len);
        for _ in 0..20000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let off = (x % (len as u64 + 8)) as u32;
            let n = ((x >> 32) % 70) as usize;
            let mut got = vec![0u8; n];
            let mut want = vec![0u8; n];
            let r = b.read(off, &mut got);
            let mut s = bytes.as_slice();
            match s.read(off, &mut want) {
                Ok(()) => {
                    assert_eq!(r, Ok(()), "off {off} n {n} buf {block_buf}");
                    assert_eq!(got, want, "off {off} n {n} buf {block_buf}");
                }
                Err(_) => assert!(r.is_err(), "off {off} n {n} buf {block_buf}"),
            }
        }
    }
}

#[test]
fn validation_agrees_and_reads_less() {
    let (mut direct, mut blocked) = (0u64, 0u64);
    for f in corpus() {
        let s = sframe_of(&f);
        let len = s.bytes.len() as u32;
        let mut plain = Counting {
            bytes: s.bytes,
            calls: 0,
        };
        let want = Section::new(&mut plain, len, s.addr).and_then(|mut sec| sec.validate());
        let mut buf = vec![0u8; 8192];
        let mut counted = Counting {
            bytes: s.bytes,
            calls: 0,
        };
        let got = Section::new(Blocks::new(&mut counted, &mut buf, len), len, s.addr)
            .and_then(|mut sec| sec.validate());
        assert_eq!(got, want, "{}", f.name);
        direct += u64::from(plain.calls);
        blocked += u64::from(counted.calls);
        // Mutated copies: the same verdict, however the bytes went wrong.
        for k in 0..s.bytes.len().min(64) {
            let mut m = s.bytes.to_vec();
            let i = (k * 7919) % m.len();
            m[i] ^= 1 << (k % 8);
            let want = Section::new(m.as_slice(), len, s.addr).and_then(|mut sec| sec.validate());
            let mut buf = vec![0u8; 256];
            let got = Section::new(Blocks::new(m.as_slice(), &mut buf, len), len, s.addr)
                .and_then(|mut sec| sec.validate());
            assert_eq!(got, want, "{} byte {i}", f.name);
        }
    }
    println!("validation of the corpus: {direct} reads of the slice, {blocked} through Blocks");
    assert!(
        blocked * 4 < direct,
        "{blocked} reads through Blocks, {direct} without"
    );
}
