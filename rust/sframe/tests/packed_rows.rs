// SPDX-License-Identifier: GPL-2.0

//! Packed rows (`PackedRow`, `Visitor::row`): the rows a validation pass
//! hands out, packed and looked up by `PackedRow::find`, give the row
//! `Section::find_row` reads, for every PC of every function of the real
//! toolchains' corpus and of synthetic sections with rules at the edges of
//! what packs; a row that does not fit packs as not decoded, never as
//! another row.

mod common;
use common::*;
use sframe::{
    Abi, Base, CfaRule, Fde, FreMark, Header, PackedRow, PcType, RegRule, Row, Section, Version,
    Visitor,
};
use sframe_encode::{FdeSpec, FreSpec, SectionSpec};

/// What a consumer keeps: every FDE and, per FDE, its rows packed.
struct Keep {
    hdr: Header,
    fdes: Vec<Fde>,
    rows: Vec<Vec<PackedRow>>,
}

impl Visitor for Keep {
    type Error = ();

    fn fde(&mut self, _: u32, fde: &Fde) -> Result<(), ()> {
        self.fdes.push(*fde);
        self.rows.push(Vec::new());
        Ok(())
    }

    fn mark(&mut self, _: u32, _: FreMark) -> Result<(), ()> {
        Ok(())
    }

    fn row(&mut self, i: u32, start: u32, row: &Row) -> Result<(), ()> {
        assert_eq!(i as usize + 1, self.fdes.len(), "rows in FDE order");
        let p = PackedRow::pack(&self.hdr, start, row);
        assert_eq!(p.start(), start);
        assert_eq!(p.is_decoded(), fits(&self.hdr, row), "{row:?}");
        if let Some(back) = p.unpack(&self.hdr, self.fdes.last().unwrap()) {
            assert_eq!(&back, row, "a decoded row is the row");
        }
        self.rows.last_mut().unwrap().push(p);
        Ok(())
    }
}

/// What a consumer keeps of `sec`; `None` if it is not valid (the corpus
/// has ld.lld's unsorted FDEs, which no consumer here takes).
/// Whether a row is one `PackedRow` keeps decoded, as its documentation
/// says.
fn fits(hdr: &Header, row: &Row) -> bool {
    let off = row.cfa.offset;
    let cfa = matches!(row.cfa.base, Base::Sp | Base::Fp)
        && !row.cfa.deref
        && (i16::try_from(off).is_ok() || (off % 8 == 0 && i16::try_from(off / 8).is_ok()));
    let ra = match (row.ra, hdr.fixed_ra_offset()) {
        (RegRule::CfaOffset(off), Some(fixed)) => off == fixed,
        // AArch64: at CFA - 8, or above the saved FP (a frame record).
        (RegRule::CfaOffset(off), None) => {
            off == -8 || matches!(row.fp, RegRule::CfaOffset(fp) if fp + 8 == off)
        }
        (RegRule::SameValue | RegRule::Undefined, _) => true,
        (RegRule::Reg { .. }, _) => false,
    };
    let fp = match row.fp {
        RegRule::CfaOffset(off) => i8::try_from(off).is_ok(),
        RegRule::SameValue => true,
        _ => false,
    };
    cfa && ra && fp
}

fn keep(sec: &mut Section<&[u8]>) -> Option<Keep> {
    let mut k = Keep {
        hdr: *sec.header(),
        fdes: Vec::new(),
        rows: Vec::new(),
    };
    sec.validate_with(&mut k).ok().map(|()| k)
}

/// Every PC of every function, and the PCs just outside: the packed
/// lookup agrees with the section's. Returns (PCs, PCs whose row is not
/// decoded); `None` if the section is not valid.
fn compare(sec: &mut Section<&[u8]>) -> Option<(u64, u64)> {
    let k = keep(sec)?;
    let (mut pcs, mut undecoded) = (0, 0);
    for (fde, rows) in k.fdes.iter().zip(&k.rows) {
        assert_eq!(rows.len() as u32, fde.num_fres);
        let lo = fde.func_start.saturating_sub(1);
        // Packed relative to the first PC tried, as a consumer packs FDEs
        // relative to the start of their text.
        let packed = fde
            .pack(lo)
            .expect("a function packs relative to its start");
        for pc in lo..=fde.func_end() {
            let want = sec.find_row(fde, pc);
            match PackedRow::find(rows, &packed, pc - lo) {
                Ok(p) => match p.unpack(&k.hdr, fde) {
                    Some(row) => assert_eq!(Ok(row), want, "pc {pc:#x}"),
                    None => {
                        assert!(want.is_ok(), "pc {pc:#x}: {want:?}");
                        undecoded += 1;
                    }
                },
                Err(e) => assert_eq!(Err(e), want, "pc {pc:#x}"),
            }
            pcs += 1;
        }
    }
    Some((pcs, undecoded))
}

#[test]
fn corpus_packed_lookups_match() {
    let (mut pcs, mut undecoded, mut invalid) = (0, 0, 0);
    for f in corpus() {
        let s = sframe_of(&f);
        match compare(&mut open(&s)) {
            Some((p, u)) => {
                if u != 0 {
                    println!("{}: {u} of {p} PCs with a row not decoded", f.name);
                }
                pcs += p;
                undecoded += u;
            }
            None => invalid += 1,
        }
    }
    println!("{pcs} PCs, {undecoded} with a row not decoded; {invalid} sections not valid");
    assert!(pcs > 100_000, "{pcs} PCs");
    // Most rows real toolchains emit pack (the others: AArch64's with the
    // return address saved apart from the frame pointer, stack
    // realignment's, hand-written assembly's).
    assert!(undecoded * 50 < pcs, "{undecoded} of {pcs}");
}

/// A V3 section whose one function's rows have the given words (CFA on SP
/// unless `fp`), 4 bytes apart; and a PC-mask function after it.
fn edges(rows: &[(bool, &[i32])]) -> SectionSpec {
    let fres = rows
        .iter()
        .enumerate()
        .map(|(i, (sp, words))| FreSpec::new(i as u32 * 4, *sp, words))
        .collect();
    let mut mask = FdeSpec::new(
        0x2000,
        0x40,
        vec![FreSpec::new(0, true, &[8]), FreSpec::new(4, true, &[16])],
    );
    mask.info |= 0x10;
    mask.rep_size = 8;
    SectionSpec {
        fdes: vec![FdeSpec::new(0x1000, 0x100, fres), mask],
        ..SectionSpec::new(Version::V3, Abi::Amd64)
    }
}

#[test]
fn edge_rules_pack_or_say_so() {
    let spec = edges(&[
        (true, &[8]),
        (true, &[i16::MAX as i32]),
        // Past 16 bits: in words if whole words.
        (true, &[i16::MAX as i32 + 1]),
        (true, &[i16::MAX as i32 + 4]),
        (false, &[i16::MIN as i32, -16]),
        (false, &[i16::MIN as i32 - 1, -16]),
        (false, &[16, -128]),
        (false, &[16, -129]),
        (false, &[16, 127]),
        (true, &[i16::MIN as i32 * 8]),
        (true, &[(i16::MAX as i32 + 1) * 8]),
        (true, &[]),
    ]);
    let bytes = spec.encode().unwrap();
    let mut sec = Section::new(&bytes[..], bytes.len() as u32, spec.addr).unwrap();
    let (pcs, undecoded) = compare(&mut sec).unwrap();
    // Rows 3, 5, 7 and 10 do not fit (a CFA offset past 16 bits of bytes
    // or of words, an FP offset past 8 bits): 4 PCs each.
    assert_eq!(undecoded, 16, "of {pcs}");
    let k = keep(&mut sec).unwrap();
    assert_eq!(k.fdes[1].pc_type, PcType::Mask);
    let outermost = k.rows[0][11].unpack(&k.hdr, &k.fdes[0]).unwrap();
    assert!(outermost.outermost);
    assert_eq!(outermost.ra, RegRule::Undefined);
}

/// AArch64 rows: the return address in the link register, at CFA - 8, in
/// a frame record above the saved FP (signed or not) pack; saved
/// anywhere else, they do not.
#[test]
fn aarch64_rows_pack_or_say_so() {
    use sframe_encode::FRE_RA_MANGLED;
    let fre = |i: u32, sp: bool, words: &[i32], mangled: bool| {
        let mut f = FreSpec::new(i * 4, sp, words);
        if mangled {
            f.info |= FRE_RA_MANGLED;
        }
        f
    };
    let fres = vec![
        // Entry: CFA = SP, x30 not saved.
        fre(0, true, &[0], false),
        // stp x29, x30, [sp, #-32]!: the record at the bottom, signed.
        fre(1, true, &[32, -24, -32], true),
        // mov x29, sp.
        fre(2, false, &[32, -24, -32], true),
        // A 16-byte frame: the record at CFA - 16, x30 at CFA - 8.
        fre(3, true, &[16, -8, -16], false),
        // x30 alone, at CFA - 16 (no frame pointer): not decoded.
        fre(4, true, &[16, -16], false),
        // x30 apart from x29: not decoded.
        fre(5, true, &[48, -16, -32], false),
    ];
    let spec = SectionSpec {
        fdes: vec![FdeSpec::new(0x1000, 0x40, fres)],
        ..SectionSpec::new(Version::V2, Abi::Aarch64LittleEndian)
    };
    let bytes = spec.encode().unwrap();
    let mut sec = Section::new(&bytes[..], bytes.len() as u32, spec.addr).unwrap();
    let (pcs, undecoded) = compare(&mut sec).unwrap();
    // Rows 4 and 5, and the function's bytes past them: 8 + 40 PCs.
    assert_eq!(undecoded, 8 + 0x40 - 24, "of {pcs}");
    let k = keep(&mut sec).unwrap();
    let signed = k.rows[0][1].unpack(&k.hdr, &k.fdes[0]).unwrap();
    assert_eq!(signed.ra, RegRule::CfaOffset(-24));
    assert!(signed.ra_mangled);
}

#[test]
fn rows_that_need_more_are_not_decoded() {
    let hdr = {
        let spec = edges(&[(true, &[8])]);
        let bytes = spec.encode().unwrap();
        *Section::new(&bytes[..], bytes.len() as u32, spec.addr)
            .unwrap()
            .header()
    };
    let plain = Row {
        cfa: CfaRule {
            base: Base::Sp,
            offset: 16,
            deref: false,
        },
        ra: RegRule::CfaOffset(-8),
        fp: RegRule::SameValue,
        signal_frame: false,
        outermost: false,
        ra_mangled: false,
        func_start: 0,
        func_size: 0,
        fre_start: 0,
    };
    assert!(PackedRow::pack(&hdr, 0, &plain).is_decoded());
    let needs_more = [
        Row {
            cfa: CfaRule {
                base: Base::Reg(3),
                ..plain.cfa
            },
            ..plain
        },
        Row {
            cfa: CfaRule {
                deref: true,
                ..plain.cfa
            },
            ..plain
        },
        Row {
            ra: RegRule::CfaOffset(-16),
            ..plain
        },
        Row {
            fp: RegRule::Reg {
                base: Base::Sp,
                offset: 8,
                deref: true,
            },
            ..plain
        },
    ];
    for row in &needs_more {
        let p = PackedRow::pack(&hdr, 4, row);
        assert!(!p.is_decoded(), "{row:?}");
        assert_eq!(p.start(), 4);
    }
}

/// Counts the rows a validation pass hands out.
struct CountRows(u32);

impl Visitor for CountRows {
    type Error = ();

    fn fde(&mut self, _: u32, _: &Fde) -> Result<(), ()> {
        Ok(())
    }

    fn mark(&mut self, _: u32, _: FreMark) -> Result<(), ()> {
        Ok(())
    }

    fn row(&mut self, _: u32, _: u32, _: &Row) -> Result<(), ()> {
        self.0 += 1;
        Ok(())
    }
}

/// FDEs that all name the same FREs: the header's count stops the pass
/// before more rows than it says are handed out (a consumer that keeps
/// them reserves that many), not after walking them all.
#[test]
fn shared_fres_stop_at_the_header_count() {
    let rows: Vec<FreSpec> = (0..4).map(|i| FreSpec::new(i * 4, true, &[8])).collect();
    let mut fdes = vec![FdeSpec::new(0x1000, 0x20, rows)];
    for k in 1..1000u64 {
        let mut f = FdeSpec::new(0x1000 + k * 0x20, 0x20, Vec::new());
        f.num_fres = Some(4);
        f.fre_off = Some(0);
        fdes.push(f);
    }
    let spec = SectionSpec {
        fdes,
        ..SectionSpec::new(Version::V2, Abi::Amd64)
    };
    let bytes = spec.encode().unwrap();
    let mut sec = Section::new(&bytes[..], bytes.len() as u32, spec.addr).unwrap();
    let mut count = CountRows(0);
    assert_eq!(
        sec.validate_with(&mut count),
        Err(sframe::Stopped::Invalid(sframe::Error::FreCountMismatch))
    );
    assert_eq!(count.0, sec.header().num_fres);
}
