// SPDX-License-Identifier: GPL-2.0

//! Host benchmark: ns per `find()` on synthetic sections with 1k, 10k and
//! 100k functions (V3 and V1), and ns per FDE for `validate()`.
//!
//! Usage: cargo run --release --example bench [-- --write-v1 DIR]
//!
//! With `--write-v1 DIR` the V1 sections and the PCs looked up are also
//! written to DIR, for benches/libsframe.sh to time libsframe 2.40's
//! `sframe_find_fre` on the same input.

use sframe::{Abi, Error, Reader, Section, Version};
use sframe_encode::{FdeSpec, FreSpec, SectionSpec};
use std::hint::black_box;
use std::time::Instant;

const FUNC_SIZE: u32 = 64;
const TEXT: u64 = 0x40_0000;
const SECTION_ADDR: u64 = 0x20_0000;

/// Four FREs per function, as gcc -O2 emits for a function that sets up a
/// frame pointer: push, mov, body, ret.
const FRES: [(u32, bool, &[i32]); 4] = [
    (0, true, &[8]),
    (1, true, &[16, -16]),
    (4, false, &[16, -16]),
    (60, true, &[8, -16]),
];

/// `n` such functions one after the other from `TEXT`, in a section of
/// `version` at `SECTION_ADDR`.
fn encode(version: Version, n: u32) -> Vec<u8> {
    let fres: Vec<FreSpec> = FRES
        .iter()
        .map(|&(start, sp, words)| FreSpec::new(start, sp, words))
        .collect();
    SectionSpec {
        addr: SECTION_ADDR,
        fdes: (0..n)
            .map(|i| FdeSpec::new(TEXT + u64::from(i * FUNC_SIZE), FUNC_SIZE, fres.clone()))
            .collect(),
        ..SectionSpec::new(version, Abi::Amd64)
    }
    .encode()
    .expect("encode")
}

fn pcs(n: u32, count: usize) -> Vec<u64> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            TEXT + x % u64::from(n * FUNC_SIZE)
        })
        .collect()
}

fn time_find<R: Reader>(sec: &mut Section<R>, pcs: &[u64]) -> f64 {
    // Warm up, then run for at least 0.3 s.
    for &pc in pcs {
        black_box(sec.find(pc).expect("find"));
    }
    let mut rounds = 0u64;
    let t = Instant::now();
    while t.elapsed().as_secs_f64() < 0.3 {
        for &pc in pcs {
            black_box(sec.find(black_box(pc)).expect("find"));
        }
        rounds += 1;
    }
    t.elapsed().as_nanos() as f64 / (rounds as f64 * pcs.len() as f64)
}

/// Counts reader calls and bytes, to report the cost a user-copy reader
/// would pay per lookup.
struct Counting<'a> {
    bytes: &'a [u8],
    calls: u64,
    copied: u64,
}

impl Reader for Counting<'_> {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.calls += 1;
        self.copied += buf.len() as u64;
        let mut s = self.bytes;
        s.read(offset, buf)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let write_dir = match args.get(1).map(String::as_str) {
        Some("--write-v1") => Some(args.get(2).expect("--write-v1 DIR").clone()),
        Some(a) if a != "--bench" => panic!("usage: bench [--write-v1 DIR]"),
        _ => None,
    };
    println!(
        "{:>8} {:>4} {:>10} {:>10} {:>14} {:>12} {:>12}",
        "FDEs", "ver", "bytes", "ns/find", "ns/FDE valid.", "reads/find", "bytes/find"
    );
    for n in [1_000u32, 10_000, 100_000] {
        let lookups = pcs(n, 4096);
        for version in [Version::V3, Version::V1] {
            let bytes = encode(version, n);
            let mut sec = Section::new(bytes.as_slice(), bytes.len() as u32, SECTION_ADDR).unwrap();
            let t = Instant::now();
            sec.validate().expect("validate");
            let val = t.elapsed().as_nanos() as f64 / f64::from(n);
            let ns = time_find(&mut sec, &lookups);
            let mut counting = Counting {
                bytes: &bytes,
                calls: 0,
                copied: 0,
            };
            {
                let mut csec =
                    Section::new(&mut counting, bytes.len() as u32, SECTION_ADDR).unwrap();
                for &pc in &lookups {
                    csec.find(pc).expect("find");
                }
            }
            let k = lookups.len() as f64;
            println!(
                "{n:>8} {:>4} {:>10} {ns:>10.1} {val:>14.1} {:>12.1} {:>12.1}",
                format!("V{}", version.number()),
                bytes.len(),
                (counting.calls - 1) as f64 / k,
                (counting.copied - 28) as f64 / k
            );
            if version == Version::V1 {
                if let Some(dir) = &write_dir {
                    std::fs::create_dir_all(dir).unwrap();
                    std::fs::write(format!("{dir}/v1-{n}.sframe"), &bytes).unwrap();
                    let list: String = lookups
                        .iter()
                        .map(|pc| format!("{:#x}\n", pc - SECTION_ADDR))
                        .collect();
                    std::fs::write(format!("{dir}/v1-{n}.pcs"), list).unwrap();
                }
            }
        }
    }
}
