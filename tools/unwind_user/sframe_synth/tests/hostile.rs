// SPDX-License-Identifier: GPL-2.0

//! Untrusted objects: truncated and mutated copies of a real library never
//! make the synthesizer panic, and whatever it writes is a valid section.
//! Without section headers, `.eh_frame` is found through `PT_GNU_EH_FRAME`.

use sframe::Section;
use sframe_synth::{elf, synthesize};

const LIBZ: &str = "/lib/x86_64-linux-gnu/libz.so.1";

fn libz() -> Option<Vec<u8>> {
    let d = std::fs::read(LIBZ).ok();
    if d.is_none() {
        println!("note: {LIBZ} does not exist, skipped");
    }
    d
}

/// Synthesize; if that works, the section must validate and answer for
/// the start of every function it holds.
fn check(data: &[u8]) -> bool {
    let Ok(obj) = elf::read_elf(data) else {
        return false;
    };
    let Ok(syn) = synthesize(&obj) else {
        return false;
    };
    let mut sec = Section::new(&syn.section[..], syn.section.len() as u32, 0).unwrap();
    sec.validate().unwrap();
    for f in &syn.functions {
        assert_eq!(sec.find(f.start).unwrap().func_start, f.start);
    }
    true
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn truncated_objects() {
    let Some(data) = libz() else { return };
    assert!(check(&data));
    let mut ok = 0;
    for n in (0..data.len()).step_by(61) {
        ok += usize::from(check(&data[..n]));
    }
    println!("truncations that still synthesize: {ok}");
}

#[test]
fn mutated_objects() {
    let Some(data) = libz() else { return };
    let obj = elf::read_elf(&data).unwrap();
    // Aim at what is parsed: headers, .eh_frame(_hdr), section headers.
    let eh = &obj.eh_frame;
    let eh_off = data.windows(16).position(|w| w == &eh.data[..16]).unwrap();
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    let regions = [
        (0, 0x40 + 56 * 12),
        (eh_off, eh.data.len()),
        (eh_off - 0x1000.min(eh_off), 0x1000),
        (shoff, data.len() - shoff),
    ];
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let (mut ok, mut total) = (0, 0);
    for _ in 0..20000 {
        let mut m = data.clone();
        for _ in 0..1 + rng.below(6) {
            let (start, len) = regions[rng.below(regions.len())];
            let at = start + rng.below(len);
            m[at] = match rng.below(4) {
                0 => rng.next() as u8,
                1 => m[at] ^ (1 << rng.below(8)),
                2 => 0xff,
                _ => 0,
            };
        }
        total += 1;
        ok += usize::from(check(&m));
    }
    println!("mutants: {total}, synthesized {ok}, refused {}", total - ok);
}

#[test]
fn without_section_headers_through_pt_gnu_eh_frame() {
    let Some(mut data) = libz() else { return };
    let expected = synthesize(&elf::read_elf(&data).unwrap()).unwrap();
    // e_shoff, e_shnum, e_shstrndx = 0: as after `sstrip`.
    data[0x28..0x30].fill(0);
    data[0x3c..0x40].fill(0);
    let obj = elf::read_elf(&data).unwrap();
    assert_eq!(obj.eh_frame_size, None);
    assert!(obj.build_id.is_some());
    let syn = synthesize(&obj).unwrap();
    assert_eq!(syn.section, expected.section);
    assert_eq!(syn.stats.encoded, expected.stats.encoded);
}
