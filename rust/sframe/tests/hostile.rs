// SPDX-License-Identifier: GPL-2.0

//! Hand-made sections: one test per rejection, plus the lookup rules that
//! real binaries rely on (PLT masks, PR 33131, function ends, outermost and
//! signal frames, flexible FDEs, AArch64), on sections built in the test.

use sframe::Version::{self, V1, V2, V3};
use sframe::{Abi, Base, CfaRule, Error, FdeType, PcType, Reader, RegRule, Section};
use sframe_encode::{
    flex_ctl, fre_info, FdeSpec, FreSpec, SectionSpec, FDE_PC_MASK, FDE_SIGNAL_FRAME,
};

/// Where the sections are decoded: above their functions, whose starts
/// are then stored as negative offsets.
const ADDR: u64 = 0x10000;

/// An AMD64 section of `version` at [`ADDR`] with `fdes`.
fn amd64(version: Version, fdes: Vec<FdeSpec>) -> SectionSpec {
    SectionSpec {
        addr: ADDR,
        fdes,
        ..SectionSpec::new(version, Abi::Amd64)
    }
}

/// An AArch64 section of `version` at [`ADDR`] with `fdes`.
fn aarch64(version: Version, fdes: Vec<FdeSpec>) -> SectionSpec {
    SectionSpec {
        abi: Abi::Aarch64LittleEndian,
        cfa_fixed_ra_offset: 0,
        ..amd64(version, fdes)
    }
}

fn sec(b: &[u8], addr: u64) -> Result<Section<&[u8]>, Error> {
    Section::new(b, b.len() as u32, addr)
}

fn validate(b: &SectionSpec) -> Result<(), Error> {
    let bytes = b.encode().unwrap();
    sec(&bytes, b.addr)?.validate()
}

fn find(b: &SectionSpec, pc: u64) -> Result<sframe::Row, Error> {
    let bytes = b.encode().unwrap();
    sec(&bytes, b.addr)?.find(pc)
}

/// A good AMD64 section: two functions, FP saved in the second.
fn good(version: Version) -> SectionSpec {
    amd64(
        version,
        vec![
            FdeSpec::new(
                0x1000,
                0x20,
                vec![FreSpec::new(0, true, &[8]), FreSpec::new(1, true, &[16])],
            ),
            FdeSpec::new(
                0x1020,
                0x30,
                vec![
                    FreSpec::new(0, true, &[8]),
                    FreSpec::new(1, true, &[16, -16]),
                    FreSpec::new(4, false, &[16, -16]),
                    FreSpec::new(0x2f, true, &[8, -16]),
                ],
            ),
        ],
    )
}

#[test]
fn good_sections_all_versions() {
    for v in [V1, V2, V3] {
        let b = good(v);
        validate(&b).unwrap();
        let r = find(&b, 0x1025).unwrap();
        assert_eq!(
            r.cfa,
            CfaRule {
                base: Base::Fp,
                offset: 16,
                deref: false
            }
        );
        assert_eq!(r.fp, RegRule::CfaOffset(-16));
        assert_eq!(r.ra, RegRule::CfaOffset(-8));
        assert_eq!((r.func_start, r.func_size, r.fre_start), (0x1020, 0x30, 4));
        assert_eq!(find(&b, 0x1000).unwrap().cfa.offset, 8);
        assert_eq!(find(&b, 0x101f).unwrap().cfa.offset, 16);
        assert_eq!(find(&b, 0x104f).unwrap().cfa.offset, 8);
        assert_eq!(find(&b, 0x1050), Err(Error::NotCovered), "function end");
        assert_eq!(find(&b, 0xfff), Err(Error::NotCovered));
        assert_eq!(find(&b, 0), Err(Error::NotCovered));
        assert_eq!(find(&b, u64::MAX), Err(Error::NotCovered));
    }
}

#[test]
fn pcrel_and_section_relative_starts() {
    for flags in [1u8, 5] {
        let mut b = good(V2);
        b.flags = flags;
        validate(&b).unwrap();
        assert_eq!(find(&b, 0x1020).unwrap().func_start, 0x1020);
    }
}

// ---- header checks ----

#[test]
fn truncated_header() {
    let b = good(V3).encode().unwrap();
    for n in 0..28 {
        assert_eq!(sec(&b[..n], 0).err(), Some(Error::TruncatedHeader));
    }
    // A length larger than what the reader holds: reads fail.
    assert_eq!(Section::new(&b[..10], 28, 0).err(), Some(Error::Read));
}

#[test]
fn bad_magic_and_foreign_endian() {
    let mut b = good(V3).encode().unwrap();
    b[0] = 0x12;
    assert_eq!(sec(&b, 0).err(), Some(Error::BadMagic));
    b[0] = 0xde;
    b[1] = 0xe2;
    assert_eq!(sec(&b, 0).err(), Some(Error::ForeignEndian));
}

#[test]
fn unsupported_version() {
    for v in [0u8, 4, 255] {
        let mut b = good(V3).encode().unwrap();
        b[2] = v;
        assert_eq!(sec(&b, 0).err(), Some(Error::UnsupportedVersion(v)));
    }
}

#[test]
fn unsupported_abi_and_big_endian_abi() {
    let mut b = good(V3).encode().unwrap();
    b[4] = 9;
    assert_eq!(sec(&b, 0).err(), Some(Error::UnsupportedAbi(9)));
    b[4] = 0;
    assert_eq!(sec(&b, 0).err(), Some(Error::UnsupportedAbi(0)));
    for be in [1u8, 4] {
        b[4] = be;
        assert_eq!(sec(&b, 0).err(), Some(Error::AbiEndianMismatch(be)));
    }
}

#[test]
fn unknown_flags() {
    let mut b = good(V3);
    b.flags = 5 | 2; // FRAME_POINTER is gone in V3
    assert_eq!(validate(&b), Err(Error::UnknownFlags(7)));
    let mut b = good(V1);
    b.flags = 1 | 4; // PCREL did not exist in V1
    assert_eq!(validate(&b), Err(Error::UnknownFlags(5)));
    let mut b = good(V2);
    b.flags = 0x81;
    assert_eq!(validate(&b), Err(Error::UnknownFlags(0x81)));
}

#[test]
fn aux_header_past_end() {
    let mut b = good(V3).encode().unwrap();
    b.truncate(28);
    b[7] = 1;
    assert_eq!(sec(&b, 0).err(), Some(Error::AuxHeaderPastEnd));
    // An auxiliary header that fits is skipped.
    let mut g = good(V3);
    g.aux = vec![0xaa; 7];
    validate(&g).unwrap();
    assert_eq!(find(&g, 0x1001).unwrap().cfa.offset, 16);
}

#[test]
fn fde_area_past_end() {
    let mut b = good(V3);
    b.num_fdes = Some(1000);
    assert_eq!(validate(&b), Err(Error::FdeAreaPastEnd));
    let mut b = good(V3).encode().unwrap();
    b[20..24].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    assert_eq!(sec(&b, 0).err(), Some(Error::FdeAreaPastEnd));
}

#[test]
fn fre_area_past_end() {
    let mut b = good(V3);
    b.fre_len = Some(10_000);
    assert_eq!(validate(&b), Err(Error::FreAreaPastEnd));
    let mut b = good(V2).encode().unwrap();
    b[24..28].copy_from_slice(&(u32::MAX - 3).to_le_bytes());
    assert_eq!(sec(&b, 0).err(), Some(Error::FreAreaPastEnd));
}

#[test]
fn areas_overlap() {
    let mut b = good(V3);
    b.fre_off = Some(8); // inside the FDE array
    assert_eq!(validate(&b), Err(Error::AreasOverlap));
}

#[test]
fn count_too_large() {
    // More FREs than 2-byte minimum records can fit.
    let mut b = good(V3);
    b.num_fres = Some(10_000);
    assert_eq!(validate(&b), Err(Error::CountTooLarge));
    // num_fdes * 16 overflowing u32.
    let mut b = good(V3);
    b.num_fdes = Some(u32::MAX / 8);
    assert_eq!(validate(&b), Err(Error::CountTooLarge));
}

#[test]
fn empty_section_covers_nothing() {
    let b = amd64(V3, vec![]);
    validate(&b).unwrap();
    assert_eq!(find(&b, 0x1000), Err(Error::NotCovered));
}

// ---- FDE checks ----

#[test]
fn fde_index_out_of_range() {
    let bytes = good(V3).encode().unwrap();
    let mut s = sec(&bytes, 0x10000).unwrap();
    assert_eq!(s.fde(2).err(), Some(Error::FdeIndexOutOfRange));
    let f = s.fde(0).unwrap();
    assert_eq!(s.fre(&f, 2).err(), Some(Error::FdeIndexOutOfRange));
}

#[test]
fn fde_attr_past_end() {
    let mut b = good(V3);
    b.fdes[1].fre_off = Some(b.encode().unwrap().len() as u32); // far past the FRE area
    assert_eq!(validate(&b), Err(Error::FdeAttrPastEnd));
}

#[test]
fn bad_fre_type() {
    for v in [V1, V2, V3] {
        let mut b = good(v);
        b.fdes[0].info = 3;
        assert_eq!(validate(&b), Err(Error::BadFreType(3)), "{v:?}");
    }
}

#[test]
fn bad_fde_type() {
    let mut b = good(V3);
    b.fdes[0].info2 = 2;
    assert_eq!(validate(&b), Err(Error::BadFdeType(2)));
    assert_eq!(find(&b, 0x1000), Err(Error::BadFdeType(2)));
}

#[test]
fn fde_fre_count_too_large() {
    let mut b = good(V2);
    b.fdes[0].num_fres = Some(100);
    assert_eq!(validate(&b), Err(Error::FdeFreCountTooLarge));
    let mut b = good(V2);
    b.fdes[0].num_fres = Some(0x1_0000);
    b.num_fres = Some(0x1_0000);
    b.fre_len = None;
    // The header count alone cannot fit either.
    assert!(validate(&b).unwrap_err().is_malformed());
}

#[test]
fn address_overflow() {
    let mut b = good(V3);
    b.addr = u64::MAX - 0x100;
    b.fdes[1].start = 0x10; // wraps: stored offset is huge and positive
    b.fdes[0].start = u64::MAX - 0x80;
    assert_eq!(validate(&b), Err(Error::AddressOverflow));
}

#[test]
fn fdes_unsorted() {
    let mut b = good(V3);
    b.fdes.swap(0, 1);
    assert_eq!(validate(&b), Err(Error::FdesUnsorted));
    // Without the sorted flag the order is still checked.
    b.flags = 4;
    assert_eq!(validate(&b), Err(Error::FdesUnsorted));
}

#[test]
fn unsorted_is_noticed_by_find() {
    // A start below one already passed by the search is noticed.
    let fdes = [0x1000u64, 0x5000, 0x3000, 0x4000, 0x2000]
        .map(|s| FdeSpec::new(s, 0x10, vec![FreSpec::new(0, true, &[8])]));
    let b = amd64(V3, fdes.to_vec());
    assert_eq!(find(&b, 0x3008), Err(Error::FdesUnsorted));
    assert_eq!(find(&b, 0x2008), Err(Error::FdesUnsorted));
    // Otherwise an unsorted array may hide a function (NotCovered), but
    // never gives another function's row.
    for pc in (0xff0..0x5020).step_by(4) {
        match find(&b, pc) {
            Ok(r) => assert!(r.func_start <= pc && pc < r.func_start + 0x10),
            Err(e) => assert!(matches!(e, Error::NotCovered | Error::FdesUnsorted)),
        }
    }
}

#[test]
fn fdes_overlap() {
    let mut b = good(V3);
    b.fdes[0].size = 0x21;
    assert_eq!(validate(&b), Err(Error::FdesOverlap));
    let mut b = good(V3);
    b.fdes[1].start = 0x1000; // same start
    assert_eq!(validate(&b), Err(Error::FdesOverlap));
}

fn plt(version: Version, rep: u8) -> SectionSpec {
    let mut f = FdeSpec::new(
        0x1030,
        0x40,
        vec![FreSpec::new(0, true, &[8]), FreSpec::new(11, true, &[16])],
    );
    f.info = FDE_PC_MASK;
    f.rep_size = rep;
    amd64(version, vec![f])
}

#[test]
fn plt_mask_lookup() {
    for v in [V2, V3] {
        let b = plt(v, 16);
        validate(&b).unwrap();
        for entry in 0..4u64 {
            let base = 0x1030 + 16 * entry;
            assert_eq!(find(&b, base).unwrap().cfa.offset, 8);
            assert_eq!(find(&b, base + 10).unwrap().cfa.offset, 8);
            assert_eq!(find(&b, base + 11).unwrap().cfa.offset, 16);
            assert_eq!(find(&b, base + 15).unwrap().cfa.offset, 16);
        }
        assert_eq!(find(&b, 0x1070), Err(Error::NotCovered));
    }
}

#[test]
fn v1_plt_mask_uses_16_byte_entries() {
    let b = plt(V1, 0);
    validate(&b).unwrap();
    let bytes = b.encode().unwrap();
    let mut s = sec(&bytes, b.addr).unwrap();
    let f = s.fde(0).unwrap();
    assert_eq!((f.pc_type, f.rep_size), (PcType::Mask, 16));
    assert_eq!(find(&b, 0x1040).unwrap().cfa.offset, 8);
    assert_eq!(find(&b, 0x104b).unwrap().cfa.offset, 16);
}

#[test]
fn zero_rep_size() {
    let b = plt(V3, 0);
    assert_eq!(validate(&b), Err(Error::ZeroRepSize));
    assert_eq!(find(&b, 0x1031), Err(Error::ZeroRepSize));
    // V1 on AArch64 has no PLT entry size to assume.
    let mut b = plt(V1, 0);
    b.abi = Abi::Aarch64LittleEndian;
    b.cfa_fixed_ra_offset = 0;
    assert_eq!(validate(&b), Err(Error::ZeroRepSize));
}

#[test]
fn bad_rep_size() {
    assert_eq!(validate(&plt(V3, 0x41)), Err(Error::BadRepSize));
    assert_eq!(validate(&plt(V2, 0xff)), Err(Error::BadRepSize));
}

#[test]
fn fre_past_rep_block() {
    assert_eq!(validate(&plt(V3, 8)), Err(Error::FrePastRepBlock));
}

#[test]
fn fre_count_mismatch() {
    let mut b = good(V3);
    b.num_fres = Some(5);
    assert_eq!(validate(&b), Err(Error::FreCountMismatch));
}

// ---- FRE checks ----

#[test]
fn fre_data_past_end() {
    let mut b = good(V3);
    b.fre_len = Some(b.encode().unwrap().len() as u32 - 28 - 32 - 3);
    assert_eq!(validate(&b), Err(Error::FreDataPastEnd));
    // find() walks only the FREs it needs: the first function is fine.
    assert!(find(&b, 0x1000).is_ok());
    assert_eq!(find(&b, 0x104f), Err(Error::FreDataPastEnd));
    let mut b = good(V2);
    b.fdes[1].fre_off = Some(b.encode().unwrap().len() as u32);
    assert_eq!(validate(&b), Err(Error::FreDataPastEnd));
}

#[test]
fn fre_out_of_order() {
    let mut b = good(V3);
    b.fdes[1].fres[2].start = 1; // equal to the previous start
    assert_eq!(validate(&b), Err(Error::FreOutOfOrder));
    b.fdes[1].fres[2].start = 0;
    assert_eq!(validate(&b), Err(Error::FreOutOfOrder));
    assert_eq!(find(&b, 0x1040), Err(Error::FreOutOfOrder));
}

#[test]
fn fre_past_function() {
    let mut b = good(V3);
    b.fdes[1].fres[3].start = 0x31;
    assert_eq!(validate(&b), Err(Error::FrePastFunction));
}

#[test]
fn fre_at_function_end_pr33131() {
    let mut b = good(V3);
    b.fdes[1].fres[3].start = 0x30; // == func_size: accepted, never matches
    validate(&b).unwrap();
    assert_eq!(find(&b, 0x104f).unwrap().fre_start, 4);
    assert_eq!(find(&b, 0x1050), Err(Error::NotCovered));
}

#[test]
fn pc_before_first_fre() {
    let mut b = good(V3);
    b.fdes[0].fres[0].start = 1;
    b.fdes[0].fres[1].start = 2;
    validate(&b).unwrap();
    assert_eq!(find(&b, 0x1000), Err(Error::NotCovered));
    assert_eq!(find(&b, 0x1001).unwrap().cfa.offset, 8);
    assert_eq!(find(&b, 0x1002).unwrap().cfa.offset, 16);
}

#[test]
fn bad_data_word_size() {
    let mut b = good(V3);
    b.fdes[0].fres[0].info = fre_info(true, 1, 3);
    assert_eq!(validate(&b), Err(Error::BadDataWordSize));
}

#[test]
fn bad_data_word_count() {
    // AMD64 default FDE: at most CFA and FP.
    let mut b = good(V3);
    b.fdes[0].fres[0] = FreSpec::new(0, true, &[8, -16, -24]);
    assert_eq!(validate(&b), Err(Error::BadDataWordCount));
    // More than six words: never valid.
    let mut b = good(V3);
    b.fdes[0].fres[0].info = fre_info(true, 7, 0);
    b.fdes[0].fres[0].words = vec![1; 7];
    assert_eq!(validate(&b), Err(Error::BadDataWordCount));
    // V1 had no outermost-frame FRE.
    let mut b = good(V1);
    b.fdes[0].fres[0] = FreSpec::new(0, true, &[]);
    assert_eq!(validate(&b), Err(Error::BadDataWordCount));
}

fn flex(fres: Vec<FreSpec>) -> SectionSpec {
    let mut f = FdeSpec::new(0x1000, 0x40, fres);
    f.info2 = 1;
    amd64(V3, vec![f])
}

#[test]
fn flex_drap_rules() {
    // DRAP as GCC emits it: CFA = r10 + 0; CFA = *(rbp - 24); FP = *(rbp);
    // FP saved at CFA - 16 (reg_p = 0, deref_p = 1).
    let b = flex(vec![
        FreSpec::new(0, true, &[flex_ctl(7, false, true), 8]),
        FreSpec::new(4, true, &[flex_ctl(10, false, true), 0]),
        FreSpec::new(
            8,
            true,
            &[flex_ctl(10, false, true), 0, 0, flex_ctl(6, true, true), 0],
        ),
        FreSpec::new(
            12,
            true,
            &[flex_ctl(6, true, true), -24, 0, flex_ctl(6, true, true), 0],
        ),
        FreSpec::new(
            16,
            true,
            &[
                flex_ctl(7, false, true),
                16,
                0,
                flex_ctl(0, true, false),
                -16,
            ],
        ),
        FreSpec::new(
            20,
            true,
            &[flex_ctl(7, false, true), 0, flex_ctl(11, false, true), 0],
        ),
    ]);
    validate(&b).unwrap();
    let r = find(&b, 0x1000).unwrap();
    assert_eq!(
        r.cfa,
        CfaRule {
            base: Base::Sp,
            offset: 8,
            deref: false
        }
    );
    assert_eq!(r.ra, RegRule::CfaOffset(-8));
    let r = find(&b, 0x1005).unwrap();
    assert_eq!(
        r.cfa,
        CfaRule {
            base: Base::Reg(10),
            offset: 0,
            deref: false
        }
    );
    let r = find(&b, 0x1009).unwrap();
    assert_eq!(
        r.fp,
        RegRule::Reg {
            base: Base::Fp,
            offset: 0,
            deref: true
        }
    );
    assert_eq!(r.ra, RegRule::CfaOffset(-8), "padding: RA from the header");
    let r = find(&b, 0x100c).unwrap();
    assert_eq!(
        r.cfa,
        CfaRule {
            base: Base::Fp,
            offset: -24,
            deref: true
        }
    );
    let r = find(&b, 0x1010).unwrap();
    assert_eq!(r.fp, RegRule::CfaOffset(-16));
    let r = find(&b, 0x1014).unwrap();
    assert_eq!(
        r.ra,
        RegRule::Reg {
            base: Base::Reg(11),
            offset: 0,
            deref: false
        }
    );
    assert_eq!(r.fp, RegRule::SameValue);
}

#[test]
fn bad_cfa_base() {
    let b = flex(vec![FreSpec::new(0, true, &[flex_ctl(0, true, false), 8])]);
    assert_eq!(validate(&b), Err(Error::BadCfaBase));
}

#[test]
fn bad_control_word() {
    // Reserved bit 2.
    let b = flex(vec![FreSpec::new(
        0,
        true,
        &[flex_ctl(7, false, true) | 4, 8],
    )]);
    assert_eq!(validate(&b), Err(Error::BadControlWord));
    // CFA-based without deref, with a register number: undefined.
    let b = flex(vec![FreSpec::new(
        0,
        true,
        &[flex_ctl(7, false, true), 8, flex_ctl(3, false, false), 0],
    )]);
    assert_eq!(validate(&b), Err(Error::BadControlWord));
    // Trailing padding: undefined.
    let b = flex(vec![FreSpec::new(
        0,
        true,
        &[flex_ctl(7, false, true), 8, 0],
    )]);
    assert_eq!(validate(&b), Err(Error::BadDataWordCount));
    // Odd pair count.
    let b = flex(vec![FreSpec::new(
        0,
        true,
        &[flex_ctl(7, false, true), 8, flex_ctl(6, true, true)],
    )]);
    assert_eq!(validate(&b), Err(Error::BadDataWordCount));
}

#[test]
fn register_too_large() {
    // In 4-byte words: FreSpec::new takes the narrowest that holds it.
    let b = flex(vec![FreSpec::new(
        0,
        true,
        &[flex_ctl(70_000, false, true), 8],
    )]);
    assert_eq!(validate(&b), Err(Error::RegisterTooLarge));
}

#[test]
fn wide_words_and_addresses() {
    // 2- and 4-byte words, 2- and 4-byte FRE start offsets.
    let mut big = FdeSpec::new(0x1000, 0x2_0000, vec![]);
    big.info = 2;
    big.fres = vec![
        FreSpec {
            start: 0,
            info: fre_info(true, 1, 0),
            words: vec![8],
        },
        FreSpec {
            start: 1,
            info: fre_info(true, 1, 1),
            words: vec![0x1010],
        },
        FreSpec {
            start: 0x1_0000,
            info: fre_info(true, 2, 2),
            words: vec![0x30010, -0x810],
        },
    ];
    let mut mid = FdeSpec::new(0x21000, 0x300, vec![FreSpec::new(0, true, &[8])]);
    mid.info = 1;
    mid.fres.push(FreSpec {
        start: 0x2ff,
        info: fre_info(false, 2, 1),
        words: vec![-300, -16],
    });
    let b = amd64(V3, vec![big, mid]);
    validate(&b).unwrap();
    assert_eq!(find(&b, 0x1001).unwrap().cfa.offset, 0x1010);
    let r = find(&b, 0x1_1000).unwrap();
    assert_eq!((r.cfa.offset, r.fp), (0x30010, RegRule::CfaOffset(-0x810)));
    let r = find(&b, 0x212ff).unwrap();
    assert_eq!(
        r.cfa,
        CfaRule {
            base: Base::Fp,
            offset: -300,
            deref: false
        }
    );
}

#[test]
fn outermost_and_signal_frames() {
    let mut f = FdeSpec::new(0x1000, 0x10, vec![FreSpec::new(0, true, &[])]);
    f.info = FDE_SIGNAL_FRAME;
    let b = amd64(V3, vec![f]);
    validate(&b).unwrap();
    let r = find(&b, 0x1004).unwrap();
    assert!(r.outermost && r.signal_frame);
    assert_eq!(r.ra, RegRule::Undefined);
    // In V2, bit 7 of the info byte means nothing.
    let mut f = FdeSpec::new(0x1000, 0x10, vec![FreSpec::new(0, true, &[8])]);
    f.info = FDE_SIGNAL_FRAME;
    let r = find(&amd64(V2, vec![f]), 0x1000).unwrap();
    assert!(!r.signal_frame && !r.outermost);
}

#[test]
fn aarch64_rules() {
    // CFA = sp + 0 (RA in LR); frame record: RA at CFA-8, FP at CFA-16,
    // RA signed.
    let mut f = FdeSpec::new(
        0x1000,
        0x20,
        vec![
            FreSpec::new(0, true, &[0]),
            FreSpec::new(4, false, &[16, -8, -16]),
        ],
    );
    f.fres[1].info |= 0x80;
    f.info = 0x20; // B key
    let b = aarch64(V3, vec![f]);
    validate(&b).unwrap();
    let r = find(&b, 0x1000).unwrap();
    assert_eq!((r.ra, r.fp), (RegRule::SameValue, RegRule::SameValue));
    let r = find(&b, 0x1004).unwrap();
    assert_eq!(
        r.cfa,
        CfaRule {
            base: Base::Fp,
            offset: 16,
            deref: false
        }
    );
    assert_eq!(
        (r.ra, r.fp, r.ra_mangled),
        (RegRule::CfaOffset(-8), RegRule::CfaOffset(-16), true)
    );
    let bytes = b.encode().unwrap();
    assert!(sec(&bytes, b.addr).unwrap().fde(0).unwrap().pauth_key_b);
    // RA offset 0 is padding (FP saved, RA not).
    let f = FdeSpec::new(0x1000, 0x20, vec![FreSpec::new(0, true, &[16, 0, -16])]);
    let r = find(&aarch64(V3, vec![f]), 0x1000).unwrap();
    assert_eq!((r.ra, r.fp), (RegRule::SameValue, RegRule::CfaOffset(-16)));
    // Flex control words name AArch64's sp (31) and fp (29).
    let mut f = FdeSpec::new(
        0x1000,
        0x20,
        vec![FreSpec::new(
            0,
            true,
            &[
                flex_ctl(31, false, true),
                0,
                flex_ctl(30, false, true),
                0,
                flex_ctl(29, true, true),
                8,
            ],
        )],
    );
    f.info2 = 1;
    let r = find(&aarch64(V3, vec![f]), 0x1000).unwrap();
    assert_eq!(r.cfa.base, Base::Sp);
    assert_eq!(
        r.ra,
        RegRule::Reg {
            base: Base::Reg(30),
            offset: 0,
            deref: false
        }
    );
    assert_eq!(
        r.fp,
        RegRule::Reg {
            base: Base::Fp,
            offset: 8,
            deref: true
        }
    );
}

#[test]
fn fixed_fp_offset_from_header() {
    let mut b = amd64(
        V2,
        vec![FdeSpec::new(
            0x1000,
            0x10,
            vec![FreSpec::new(0, false, &[16])],
        )],
    );
    b.cfa_fixed_fp_offset = -16;
    validate(&b).unwrap();
    assert_eq!(find(&b, 0x1000).unwrap().fp, RegRule::CfaOffset(-16));
}

#[test]
fn text_far_above_section_v3() {
    let b = amd64(
        V3,
        vec![FdeSpec::new(
            0x7_0000_1000,
            0x10,
            vec![FreSpec::new(0, true, &[8])],
        )],
    );
    validate(&b).unwrap();
    assert_eq!(find(&b, 0x7_0000_1008).unwrap().func_start, 0x7_0000_1000);
    assert_eq!(find(&b, 0x1008), Err(Error::NotCovered));
}

#[test]
fn fde_type_and_flags_accessors() {
    let bytes = flex(vec![FreSpec::new(0, true, &[flex_ctl(7, false, true), 8])])
        .encode()
        .unwrap();
    let mut s = sec(&bytes, 0x10000).unwrap();
    assert!(s.header().fde_sorted() && s.header().func_start_pcrel());
    assert_eq!(s.fde(0).unwrap().fde_type, FdeType::Flex);
    let f = s.fde(0).unwrap();
    let raw = s.fre_raw(&f, 0).unwrap();
    assert_eq!(
        (raw.count(), raw.word_size(), raw.uword(0)),
        (2, 1, Some(0x39))
    );
    assert_eq!(raw.uword(2), None);
}

// ---- readers that fail or lie ----

struct Faulty<'a> {
    bytes: &'a [u8],
    fail_after: usize,
    calls: usize,
}

impl Reader for Faulty<'_> {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.calls += 1;
        if self.calls > self.fail_after {
            return Err(Error::Read);
        }
        let mut s = self.bytes;
        s.read(offset, buf)
    }
}

#[test]
fn read_errors_propagate() {
    let bytes = good(V3).encode().unwrap();
    for fail_after in 0..6 {
        let r = Faulty {
            bytes: &bytes,
            fail_after,
            calls: 0,
        };
        let res = Section::new(r, bytes.len() as u32, 0x10000).and_then(|mut s| s.find(0x1040));
        if fail_after < 4 {
            assert_eq!(res.err(), Some(Error::Read), "fail after {fail_after}");
        }
    }
    assert!(!Error::Read.is_malformed() && !Error::NotCovered.is_malformed());
    assert!(Error::FdesOverlap.is_malformed());
}

/// A reader whose bytes change between reads (user memory rewritten by
/// another thread): find() must never panic and must report an error or a
/// row, whatever it sees.
struct Shifting {
    bytes: Vec<u8>,
    n: u32,
}

impl Reader for Shifting {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        self.n = self.n.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let i = (self.n as usize) % self.bytes.len();
        self.bytes[i] ^= (self.n >> 16) as u8;
        let mut s = self.bytes.as_slice();
        s.read(offset, buf)
    }
}

#[test]
fn bytes_changing_under_find() {
    let bytes = good(V3).encode().unwrap();
    for seed in 0..2000u32 {
        let r = Shifting {
            bytes: bytes.clone(),
            n: seed,
        };
        if let Ok(mut s) = Section::new(r, bytes.len() as u32, 0x10000) {
            for pc in [0x1000u64, 0x1025, 0x104f, 0x1050] {
                let _ = s.find(pc);
            }
        }
    }
}

#[test]
fn error_names_are_distinct() {
    let all = [
        Error::NotCovered,
        Error::Read,
        Error::TruncatedHeader,
        Error::BadMagic,
        Error::ForeignEndian,
        Error::UnsupportedVersion(0),
        Error::UnsupportedAbi(0),
        Error::AbiEndianMismatch(0),
        Error::UnknownFlags(0),
        Error::AuxHeaderPastEnd,
        Error::FdeAreaPastEnd,
        Error::FreAreaPastEnd,
        Error::AreasOverlap,
        Error::CountTooLarge,
        Error::FdeIndexOutOfRange,
        Error::FdeAttrPastEnd,
        Error::BadFreType(0),
        Error::BadFdeType(0),
        Error::FdeFreCountTooLarge,
        Error::AddressOverflow,
        Error::FdesUnsorted,
        Error::FdesOverlap,
        Error::ZeroRepSize,
        Error::BadRepSize,
        Error::FreCountMismatch,
        Error::FreDataPastEnd,
        Error::FreOutOfOrder,
        Error::FrePastFunction,
        Error::FrePastRepBlock,
        Error::BadDataWordSize,
        Error::BadDataWordCount,
        Error::BadCfaBase,
        Error::BadControlWord,
        Error::RegisterTooLarge,
    ];
    let mut names: Vec<&str> = all.iter().map(|e| e.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len());
    assert_eq!(
        format!("{}", Error::UnsupportedVersion(7)),
        "sframe: unsupported_version (7)"
    );
}
