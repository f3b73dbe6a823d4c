// SPDX-License-Identifier: GPL-2.0

//! An object's own SFrame section with its gaps filled from `.eh_frame`.
//!
//! A program built with `--gsframe` and linked statically carries the
//! SFrame of its own code only: the C library's objects were assembled
//! without it, so a stack through `qsort()` or `printf()` ends there (or
//! gets a caller the frame-pointer rule invents). Its `.eh_frame` has
//! those functions. [`fill_gaps`] keeps every function of the object's own
//! section as it is and adds the synthesized ones that lie where none of
//! them does, in one section the agent attaches in place of the file's own.

use sframe::{Base, Fde, FreMark, PcType, RegRule, Row, Section, Stopped, Visitor};

use crate::arch::Arch;
use crate::encode::{self, CfaBase, Fre, Function, Rule};
use crate::Error;

/// What [`fill_gaps`] made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filled {
    /// The section, encoded as if located at address 0 (as
    /// [`synthesize`](crate::synthesize)'s).
    pub section: Vec<u8>,
    /// Functions of the object's own section (those with rows).
    pub own: usize,
    /// Functions added from `.eh_frame`.
    pub added: usize,
    /// Bytes of code the added functions cover.
    pub added_bytes: u64,
}

/// The encoder's rule for a row of a section for `arch`, if it has one:
/// the CFA on SP or FP, the return address undefined or where the ABI's
/// section can say it (AMD64: at CFA - 8; AArch64: saved at an offset from
/// the CFA or not saved, signed or not), FP saved at an offset from the
/// CFA or not saved.
fn rule_of(arch: Arch, row: &Row) -> Option<Rule> {
    if row.outermost || row.ra == RegRule::Undefined {
        return Some(Rule::Outermost);
    }
    if row.cfa.deref {
        return None;
    }
    let ra_offset = match row.ra {
        RegRule::SameValue => None,
        RegRule::CfaOffset(off) => Some(off),
        _ => return None,
    };
    let cfa_base = match row.cfa.base {
        Base::Sp => CfaBase::Sp,
        Base::Fp => CfaBase::Fp,
        Base::Reg(_) => return None,
    };
    let fp_offset = match row.fp {
        RegRule::SameValue => None,
        RegRule::CfaOffset(off) => Some(off),
        _ => return None,
    };
    encode::ra_expressible(arch, ra_offset, row.ra_mangled).then_some(Rule::Frame {
        cfa_base,
        cfa_offset: row.cfa.offset,
        ra_offset,
        ra_signed: row.ra_mangled,
        fp_offset,
    })
}

/// Collects a section's functions and rows in the encoder's terms, for
/// `.0`'s architecture; stops at the first row it cannot say.
struct Collect(Arch, Vec<Function>);

impl Visitor for Collect {
    type Error = ();

    fn fde(&mut self, _index: u32, fde: &Fde) -> Result<(), ()> {
        self.1.push(Function {
            start: fde.func_start,
            size: fde.func_size,
            signal_frame: fde.signal_frame,
            rep_size: match fde.pc_type {
                PcType::Mask => Some(fde.rep_size),
                PcType::Inc => None,
            },
            fres: Vec::new(),
        });
        Ok(())
    }

    fn mark(&mut self, _fde: u32, _mark: FreMark) -> Result<(), ()> {
        Ok(())
    }

    fn row(&mut self, _fde: u32, start: u32, row: &Row) -> Result<(), ()> {
        let rule = rule_of(self.0, row).ok_or(())?;
        self.1.last_mut().ok_or(())?.fres.push(Fre { start, rule });
        Ok(())
    }
}

/// The functions of `own`, an object's SFrame section at link-time address
/// `addr`, and those of `synthesized` (sorted, not overlapping, as
/// [`synthesize`](crate::synthesize) keeps them) that overlap none of
/// them, encoded as one section; all of an object of `arch`. `Ok(None)` if
/// there is nothing to add, or if `own` is not valid, is for another ABI,
/// has a row the encoder cannot write, or says its code keeps frame
/// pointers (which V3 cannot say): the section is then best used as it
/// is.
pub fn fill_gaps(
    arch: Arch,
    own: &[u8],
    addr: u64,
    synthesized: &[Function],
) -> Result<Option<Filled>, Error> {
    let Ok(len) = u32::try_from(own.len()) else {
        return Ok(None);
    };
    let Ok(mut sec) = Section::new(own, len, addr) else {
        return Ok(None);
    };
    // The merged section is V3, which has no SFRAME_F_FRAME_POINTER: code
    // no FDE covers would lose the frame-pointer rule the flag gives it.
    if sec.header().keeps_frame_pointers() || sec.header().abi != arch.abi() {
        return Ok(None);
    }
    let mut collect = Collect(arch, Vec::new());
    match sec.validate_with(&mut collect) {
        Ok(()) => {}
        Err(Stopped::Invalid(_) | Stopped::Visitor(())) => return Ok(None),
    }
    // A function without rows describes none of its code: .eh_frame may.
    let mut functions: Vec<Function> = collect
        .1
        .into_iter()
        .filter(|f| !f.fres.is_empty())
        .collect();
    functions.sort_by_key(|f| f.start);
    let own_count = functions.len();
    let end = |f: &Function| f.start.saturating_add(u64::from(f.size));
    let mut added = Vec::new();
    for f in synthesized {
        // The last own function starting before `f` ends must end before
        // `f` starts.
        let i = functions.partition_point(|o| o.start < end(f));
        let overlaps = i
            .checked_sub(1)
            .and_then(|i| functions.get(i))
            .is_some_and(|o| end(o) > f.start);
        if !overlaps {
            added.push(f.clone());
        }
    }
    if added.is_empty() {
        return Ok(None);
    }
    let added_bytes = added
        .iter()
        .fold(0u64, |n, f| n.saturating_add(u64::from(f.size)));
    let added_count = added.len();
    functions.extend(added);
    functions.sort_by_key(|f| f.start);
    Ok(Some(Filled {
        section: encode::encode(arch, &functions)?,
        own: own_count,
        added: added_count,
        added_bytes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(start: u64, size: u32, cfa_offset: i32) -> Function {
        Function {
            start,
            size,
            signal_frame: false,
            rep_size: None,
            fres: vec![
                Fre {
                    start: 0,
                    rule: Rule::Frame {
                        cfa_base: CfaBase::Sp,
                        cfa_offset: 8,
                        ra_offset: Some(-8),
                        ra_signed: false,
                        fp_offset: None,
                    },
                },
                Fre {
                    start: 1,
                    rule: Rule::Frame {
                        cfa_base: CfaBase::Sp,
                        cfa_offset,
                        ra_offset: Some(-8),
                        ra_signed: false,
                        fp_offset: Some(-16),
                    },
                },
            ],
        }
    }

    fn cfa_at(section: &[u8], pc: u64) -> Result<i32, sframe::Error> {
        let mut sec = Section::new(section, section.len() as u32, 0)?;
        sec.find(pc).map(|r| r.cfa.offset)
    }

    #[test]
    fn gaps_are_filled_and_own_functions_kept() {
        // The object's own section: two functions, with CFA offset 16 at
        // their second byte.
        let own = encode::encode(
            Arch::X86_64,
            &[function(0x1000, 0x20, 16), function(0x1040, 0x20, 16)],
        )
        .unwrap();
        // .eh_frame: a function overlapping each, one in the gap between
        // them, one after, all with CFA offset 32 there.
        let syn = [
            function(0x1000, 0x20, 32),
            function(0x1020, 0x20, 32),
            function(0x1050, 0x20, 32),
            function(0x1080, 0x10, 32),
        ];
        let filled = fill_gaps(Arch::X86_64, &own, 0, &syn).unwrap().unwrap();
        assert_eq!((filled.own, filled.added, filled.added_bytes), (2, 2, 0x30));
        let s = &filled.section;
        // The own functions' rows, not .eh_frame's.
        assert_eq!(cfa_at(s, 0x1001), Ok(16));
        assert_eq!(cfa_at(s, 0x1041), Ok(16));
        // The gaps' functions from .eh_frame.
        assert_eq!(cfa_at(s, 0x1021), Ok(32));
        assert_eq!(cfa_at(s, 0x1081), Ok(32));
        // Where neither describes code.
        assert_eq!(cfa_at(s, 0x1060), Err(sframe::Error::NotCovered));
        // Nothing to add: the own section as it is.
        assert_eq!(fill_gaps(Arch::X86_64, &own, 0, &syn[..1]), Ok(None));
        // Not a section: nothing made.
        assert_eq!(fill_gaps(Arch::X86_64, &own[..10], 0, &syn), Ok(None));
    }

    #[test]
    fn plt_rows_and_partial_overlaps() {
        // The own section: a PLT of 16-byte blocks (a PC-mask function:
        // CFA offset 8 in the first 6 bytes of a block, 16 after) and a
        // function after a gap.
        let mut plt = function(0x1000, 0x40, 16);
        plt.rep_size = Some(16);
        plt.fres[1].start = 6;
        let own = encode::encode(Arch::X86_64, &[plt, function(0x1100, 0x20, 16)]).unwrap();
        // .eh_frame: one function across the PLT's end, one across the
        // second function's start, one spanning the gap's middle only.
        let syn = [
            function(0x1030, 0x20, 32),
            function(0x1060, 0x20, 32),
            function(0x10f0, 0x20, 32),
        ];
        let filled = fill_gaps(Arch::X86_64, &own, 0, &syn).unwrap().unwrap();
        assert_eq!((filled.own, filled.added, filled.added_bytes), (2, 1, 0x20));
        let s = &filled.section;
        // The PLT's rows, block by block, as the own section gives them.
        for block in [0x1000, 0x1010, 0x1030] {
            assert_eq!(cfa_at(s, block + 5), cfa_at(&own, block + 5));
            assert_eq!(cfa_at(s, block + 6), Ok(16));
        }
        assert_eq!(cfa_at(s, 0x1061), Ok(32));
        // Overlapping ones are left out: the gap before the second
        // function stays undescribed.
        assert_eq!(cfa_at(s, 0x10f1), Err(sframe::Error::NotCovered));
        assert_eq!(cfa_at(s, 0x1101), Ok(16));
    }

    /// A V2 section (as GNU as 2.44 writes) at 0x10000 for one function
    /// at 0x11000, 0x20 bytes, four rows; its flags (byte 3) say sorted
    /// FDEs and SFRAME_F_FRAME_POINTER.
    #[rustfmt::skip]
    const V2_FRAME_POINTER: [u8; 62] = [
        0xe2, 0xde, 2, 3,
        3, 0, 0xf8, 0,
        1, 0, 0, 0, 4, 0, 0, 0, 14, 0, 0, 0,
        0, 0, 0, 0, 20, 0, 0, 0,
        0x00, 0x10, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
        0x00, 0x03, 0x08,
        0x01, 0x05, 0x10, 0xf0,
        0x04, 0x04, 0x10, 0xf0,
        0x1f, 0x03, 0x08,
    ];

    #[test]
    fn sections_whose_code_keeps_frame_pointers_are_left_as_they_are() {
        let syn = [function(0x11040, 0x20, 32)];
        let mut own = V2_FRAME_POINTER;
        assert!(Section::new(&own[..], 62, 0x10000)
            .unwrap()
            .header()
            .keeps_frame_pointers());
        // The merged V3 section could not say it: nothing made.
        assert_eq!(fill_gaps(Arch::X86_64, &own, 0x10000, &syn), Ok(None));
        // Without the flag, the same section is merged.
        own[3] &= !2;
        let filled = fill_gaps(Arch::X86_64, &own, 0x10000, &syn)
            .unwrap()
            .unwrap();
        assert_eq!((filled.own, filled.added), (1, 1));
        assert_eq!(cfa_at(&filled.section, 0x11003), Ok(16));
        assert_eq!(cfa_at(&filled.section, 0x11041), Ok(32));
    }

    #[test]
    fn own_functions_without_rows_are_gaps() {
        // V2_FRAME_POINTER without the flag, its one function left with no
        // rows (which GNU as may write, and this encoder does not): header
        // and FDE row counts 0, no FRE bytes.
        let mut own = V2_FRAME_POINTER[..48].to_vec();
        own[3] &= !2;
        own[12] = 0;
        own[16] = 0;
        own[40] = 0;
        let mut sec = Section::new(&own[..], 48, 0x10000).unwrap();
        assert_eq!(sec.validate(), Ok(()));
        assert_eq!(sec.find(0x11000), Err(sframe::Error::NotCovered));
        // .eh_frame describes it: added.
        let syn = [function(0x11000, 0x20, 32)];
        let filled = fill_gaps(Arch::X86_64, &own, 0x10000, &syn)
            .unwrap()
            .unwrap();
        assert_eq!((filled.own, filled.added, filled.added_bytes), (0, 1, 0x20));
        assert_eq!(cfa_at(&filled.section, 0x11001), Ok(32));
    }

    #[test]
    fn rows_the_encoder_cannot_write_leave_the_section_as_it_is() {
        let row = |base, ra| Row {
            cfa: sframe::CfaRule {
                base,
                offset: 16,
                deref: false,
            },
            ra,
            fp: RegRule::SameValue,
            signal_frame: false,
            outermost: false,
            ra_mangled: false,
            func_start: 0,
            func_size: 1,
            fre_start: 0,
        };
        assert!(rule_of(Arch::X86_64, &row(Base::Sp, RegRule::CfaOffset(-8))).is_some());
        assert_eq!(
            rule_of(Arch::X86_64, &row(Base::Reg(10), RegRule::CfaOffset(-8))),
            None
        );
        assert_eq!(
            rule_of(Arch::X86_64, &row(Base::Sp, RegRule::CfaOffset(-16))),
            None
        );
        assert_eq!(
            rule_of(Arch::X86_64, &row(Base::Sp, RegRule::Undefined)),
            Some(Rule::Outermost)
        );
    }
}
