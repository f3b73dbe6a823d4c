// SPDX-License-Identifier: GPL-2.0

//! Section::new + validate + find (and the dump accessors) on arbitrary bytes.
//!
//! The input is the section itself. Lookups go to PCs around every FDE the
//! decoder reports (start, inside, end, before) and to PCs taken from the
//! input's first bytes. Invariant checked: if validate() accepts the
//! section, find() never reports a malformed section.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sframe::{Error, Section};

const ADDR: u64 = 0x40_0000;

fuzz_target!(|data: &[u8]| {
    let Ok(len) = u32::try_from(data.len()) else { return };
    let Ok(mut sec) = Section::new(data, len, ADDR) else { return };
    let valid = sec.validate().is_ok();
    let check = |sec: &mut Section<&[u8]>, pc: u64| {
        let r = sec.find(pc);
        if valid {
            assert!(
                matches!(r, Ok(_) | Err(Error::NotCovered)),
                "validated section gave {r:?} for {pc:#x}"
            );
        }
    };
    for k in 0..4usize {
        let b = data.get(k * 8..k * 8 + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap()));
        if let Some(pc) = b {
            check(&mut sec, pc);
            check(&mut sec, ADDR.wrapping_add(pc & 0xffff));
        }
    }
    let n = sec.num_fdes().min(64);
    for i in 0..n {
        let Ok(fde) = sec.fde(i) else { continue };
        let s = fde.func_start;
        let z = u64::from(fde.func_size);
        for pc in [s, s.wrapping_sub(1), s + z / 2, s + z.saturating_sub(1), s + z] {
            check(&mut sec, pc);
        }
        let _ = sec.fre(&fde, 0);
        let _ = sec.fre(&fde, fde.num_fres.saturating_sub(1));
        let _ = sec.for_each_fre(&fde, |_, _| {});
    }
});
