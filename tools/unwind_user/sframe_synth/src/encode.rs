// SPDX-License-Identifier: GPL-2.0

//! SFrame version 3 sections for AMD64 and AArch64 (little-endian) from
//! unwind rows: default FDE type only, PC-increment FDEs and PC-mask FDEs
//! (repeated stubs such as PLT entries). [`encode`] checks the functions
//! and has `sframe_encode` lay them out as binutils 2.46+ does and
//! `rust/sframe` reads them:
//!
//! ```text
//! header (28 bytes)   magic 0xdee2, version 3, flags SORTED|FUNC_START_PCREL,
//!                     ABI 3 (AMD64 LE) or 2 (AArch64 LE), fixed FP offset 0,
//!                     fixed RA offset -8 (AMD64) or 0 (AArch64: none),
//!                     no auxiliary header, FDE and FRE counts, FRE bytes,
//!                     FDE offset 0, FRE offset = 16 * FDEs
//! FDE index           16 bytes a function, sorted by start:
//!                     i64 start (from the field itself), u32 size,
//!                     u32 offset of its attribute record in the FRE area
//! FRE area            per function: attribute record (u16 FRE count, info,
//!                     info2 = 0 (default FDE), rep_size: 0, or the block
//!                     size of a PC-mask FDE), then its FREs:
//!                     start offset (1, 2 or 4 bytes: the narrowest that
//!                     holds the last one), info byte (AArch64: bit 7 set
//!                     where the return address is signed), data words (1,
//!                     2 or 4 bytes: the narrowest that holds them): the
//!                     CFA offset; on AArch64 the RA offset where it is
//!                     saved (0 where it is not but the FP is); the FP
//!                     offset where it is saved
//! ```
//!
//! The section is encoded as if it were at address 0: decoded with
//! `section_addr = 0`, the function starts are the addresses given to
//! [`encode`]. A consumer that maps it elsewhere decodes it as if it sat at
//! the object's load bias.

use std::fmt;

use sframe::{Version, MAX_FRES_PER_FDE};
use sframe_encode::{FdeSpec, FreSpec, SectionSpec, FDE_PC_MASK, FDE_SIGNAL_FRAME, FRE_RA_MANGLED};

use crate::arch::Arch;

/// Register the CFA is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CfaBase {
    /// The stack pointer (`%rsp`, `sp`).
    Sp,
    /// The frame pointer (`%rbp`, `x29`).
    Fp,
}

/// The unwind rule of one row, as an SFrame default FDE can say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// CFA = base + `cfa_offset`; the return address at CFA + `ra_offset`
    /// if saved, else still in the link register (AArch64); the caller's
    /// frame pointer at CFA + `fp_offset` if saved, else still in the
    /// register.
    Frame {
        /// Register the CFA is computed from.
        cfa_base: CfaBase,
        /// Offset added to it.
        cfa_offset: i32,
        /// Where the return address is saved, relative to the CFA; `None`
        /// if the link register still holds it. On AMD64 always -8.
        ra_offset: Option<i32>,
        /// The return address is signed (AArch64 pointer authentication).
        ra_signed: bool,
        /// Where the caller's frame pointer is saved, relative to the CFA;
        /// `None` if the register still holds it (or it is unknown).
        fp_offset: Option<i32>,
    },
    /// No caller (the return address is undefined, e.g. `_start`): an FRE
    /// without data words.
    Outermost,
}

/// A frame row entry: the rule applying from `start` (an offset from the
/// function start) up to the next row or the function end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fre {
    /// Offset of the first byte the rule applies to, from the function start.
    pub start: u32,
    /// The rule.
    pub rule: Rule,
}

/// One function to describe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// Link-time virtual address of the first byte.
    pub start: u64,
    /// Size in bytes.
    pub size: u32,
    /// The function is a signal trampoline (CIE augmentation `S`).
    pub signal_frame: bool,
    /// `Some(n)`: a PC-mask FDE (`SFRAME_V3_FDE_PCTYPE_MASK`): the code is
    /// a run of `n`-byte blocks with the same rows, whose starts are
    /// offsets within a block (the row for `pc` is the last one starting at
    /// or below `(pc - start) % n`). `None`: rows start at offsets from
    /// `start` (PC-increment).
    pub rep_size: Option<u8>,
    /// Rows in increasing `start` order, all below `size` (below the
    /// block size of a PC-mask FDE).
    pub fres: Vec<Fre>,
}

/// Why [`encode`] refused its input. The synthesizer never gives such input;
/// these are checks of the encoder's contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    /// The function at this address has no row.
    NoRows(u64),
    /// The PC-mask function at this address has a block size of 0 or
    /// larger than itself.
    BadRepSize(u64),
    /// The function at this address has more rows than V3 can count.
    TooManyRows(u64),
    /// Rows of the function at this address are not strictly increasing or
    /// start at or past its end.
    BadRowStart(u64),
    /// The functions at these addresses overlap (or are duplicates).
    Overlap(u64, u64),
    /// The function at this address does not start below 2^63 (the
    /// widest start an i64 field relative to address 0 holds) or ends past
    /// 2^64.
    AddressOverflow(u64),
    /// A row of the function at this address has a return address rule
    /// the architecture's section cannot say: on AMD64 anywhere but at
    /// CFA - 8, or signed; on AArch64 at the CFA itself (an RA offset of 0
    /// is the padding word).
    RaRule(u64),
    /// The section encoder refused the section (it would exceed 4 GiB).
    Section(sframe_encode::Error),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::NoRows(a) => write!(f, "function {a:#x} has no rows"),
            EncodeError::BadRepSize(a) => {
                write!(f, "function {a:#x}: block size 0 or past its end")
            }
            EncodeError::TooManyRows(a) => {
                write!(f, "function {a:#x} has more than {MAX_FRES_PER_FDE} rows")
            }
            EncodeError::BadRowStart(a) => {
                write!(
                    f,
                    "function {a:#x}: row starts out of order or past its end"
                )
            }
            EncodeError::Overlap(a, b) => write!(f, "functions {a:#x} and {b:#x} overlap"),
            EncodeError::AddressOverflow(a) => write!(f, "function {a:#x}: address out of range"),
            EncodeError::RaRule(a) => {
                write!(
                    f,
                    "function {a:#x}: a return address rule the ABI cannot say"
                )
            }
            EncodeError::Section(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// The FRE of `fre` in a section for `arch`. On AMD64 the RA has no data
/// word: the header fixes it at CFA - 8. On AArch64 an RA that is not
/// saved has none either, unless the FP is saved: then its word is 0
/// (padding), before the FP's.
fn fre_spec(arch: Arch, fre: &Fre) -> FreSpec {
    match fre.rule {
        Rule::Frame {
            cfa_base,
            cfa_offset,
            ra_offset,
            ra_signed,
            fp_offset,
        } => {
            let sp = cfa_base == CfaBase::Sp;
            let ra = match arch.fixed_ra_offset() {
                Some(_) => None,
                None => ra_offset.or(fp_offset.map(|_| 0)),
            };
            let words: Vec<i32> = [Some(cfa_offset), ra, fp_offset]
                .into_iter()
                .flatten()
                .collect();
            let mut spec = FreSpec::new(fre.start, sp, &words);
            if ra_signed {
                spec.info |= FRE_RA_MANGLED;
            }
            spec
        }
        // GNU as writes the outermost FRE as info 0, no words.
        Rule::Outermost => FreSpec::new(fre.start, false, &[]),
    }
}

/// Can a section for `arch` say a return address at CFA + `ra_offset`
/// (`None`: in the link register), signed or not? AMD64's is at CFA - 8,
/// unsigned, in every row; an AArch64 RA offset of 0 would read as the
/// padding word.
pub fn ra_expressible(arch: Arch, ra_offset: Option<i32>, ra_signed: bool) -> bool {
    match arch.fixed_ra_offset() {
        Some(fixed) => ra_offset == Some(fixed) && !ra_signed,
        None => ra_offset != Some(0),
    }
}

/// Check one function's rows, for a section for `arch`.
fn check(arch: Arch, f: &Function) -> Result<(), EncodeError> {
    if f.fres.is_empty() {
        return Err(EncodeError::NoRows(f.start));
    }
    if u32::try_from(f.fres.len()).map_or(true, |n| n > MAX_FRES_PER_FDE) {
        return Err(EncodeError::TooManyRows(f.start));
    }
    // Rows must start inside the function, or inside the first block.
    let limit = match f.rep_size {
        None => f.size,
        Some(n) if n == 0 || u32::from(n) > f.size => return Err(EncodeError::BadRepSize(f.start)),
        Some(n) => u32::from(n),
    };
    let mut prev: Option<u32> = None;
    for fre in &f.fres {
        if fre.start >= limit || prev.is_some_and(|p| fre.start <= p) {
            return Err(EncodeError::BadRowStart(f.start));
        }
        prev = Some(fre.start);
        if let Rule::Frame {
            ra_offset,
            ra_signed,
            ..
        } = fre.rule
        {
            if !ra_expressible(arch, ra_offset, ra_signed) {
                return Err(EncodeError::RaRule(f.start));
            }
        }
    }
    // The decoder adds the start, stored relative to its field, to the
    // field's address: from a section at 0, that is the start if below 2^63.
    i64::try_from(f.start).map_err(|_| EncodeError::AddressOverflow(f.start))?;
    f.start
        .checked_add(u64::from(f.size))
        .ok_or(EncodeError::AddressOverflow(f.start))?;
    Ok(())
}

/// Encode `functions` (in any order) as an SFrame V3 section for `arch`
/// located at address 0 (see the module documentation).
pub fn encode(arch: Arch, functions: &[Function]) -> Result<Vec<u8>, EncodeError> {
    let mut order: Vec<&Function> = functions.iter().collect();
    order.sort_by_key(|f| f.start);
    let mut prev: Option<&Function> = None;
    for f in &order {
        check(arch, f)?;
        if let Some(p) = prev {
            // Checked by `check`: no overflow.
            if f.start < p.start.saturating_add(u64::from(p.size)) {
                return Err(EncodeError::Overlap(p.start, f.start));
            }
        }
        prev = Some(f);
    }

    let fdes = order
        .iter()
        .map(|f| {
            let fres = f.fres.iter().map(|r| fre_spec(arch, r)).collect();
            let mut fde = FdeSpec::new(f.start, f.size, fres);
            if let Some(n) = f.rep_size {
                fde.info |= FDE_PC_MASK;
                fde.rep_size = n;
            }
            if f.signal_frame {
                fde.info |= FDE_SIGNAL_FRAME;
            }
            fde
        })
        .collect();
    SectionSpec {
        fdes,
        ..SectionSpec::new(Version::V3, arch.abi())
    }
    .encode()
    .map_err(EncodeError::Section)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sframe::{Base, Error, FreType, PcType, RegRule, Section};

    fn frame(cfa_base: CfaBase, cfa_offset: i32, fp_offset: Option<i32>) -> Rule {
        Rule::Frame {
            cfa_base,
            cfa_offset,
            ra_offset: Some(-8),
            ra_signed: false,
            fp_offset,
        }
    }

    fn func(start: u64, size: u32, fres: &[(u32, Rule)]) -> Function {
        Function {
            start,
            size,
            signal_frame: false,
            rep_size: None,
            fres: fres
                .iter()
                .map(|&(start, rule)| Fre { start, rule })
                .collect(),
        }
    }

    /// Check a decoded row against the rule it was encoded from.
    fn check_row(row: &sframe::Row, f: &Function, fre: &Fre) {
        let pc = row.func_start + u64::from(row.fre_start);
        assert_eq!(row.func_start, f.start);
        assert_eq!(row.func_size, f.size);
        assert_eq!(row.fre_start, fre.start);
        assert_eq!(row.signal_frame, f.signal_frame);
        match fre.rule {
            Rule::Outermost => assert!(row.outermost, "{pc:#x}"),
            Rule::Frame {
                cfa_base,
                cfa_offset,
                ra_offset,
                ra_signed,
                fp_offset,
            } => {
                assert!(!row.outermost);
                let base = match cfa_base {
                    CfaBase::Sp => Base::Sp,
                    CfaBase::Fp => Base::Fp,
                };
                assert_eq!((row.cfa.base, row.cfa.offset), (base, cfa_offset));
                assert!(!row.cfa.deref);
                let ra = ra_offset.map_or(RegRule::SameValue, RegRule::CfaOffset);
                assert_eq!((row.ra, row.ra_mangled), (ra, ra_signed), "{pc:#x}");
                let fp = fp_offset.map_or(RegRule::SameValue, RegRule::CfaOffset);
                assert_eq!(row.fp, fp, "{pc:#x}");
            }
        }
    }

    /// Decode `bytes` at address 0, validate, check every FRE, and look up
    /// every byte of every function of up to 1000 rows (a lookup scans the
    /// rows: more would take quadratic time), else the first and last byte
    /// of every 1000th row.
    fn round_trip<'a>(arch: Arch, functions: &[Function], bytes: &'a [u8]) -> Section<&'a [u8]> {
        let mut sec = Section::new(bytes, bytes.len() as u32, 0).unwrap();
        sec.validate().unwrap();
        let h = *sec.header();
        assert_eq!(h.version, Version::V3);
        assert_eq!(h.flags, 0x5);
        assert_eq!(
            (h.abi, h.fixed_ra_offset()),
            (arch.abi(), arch.fixed_ra_offset())
        );
        assert_eq!(h.num_fdes as usize, functions.len());
        for f in functions {
            let fde = sec.find_fde(f.start).unwrap();
            match f.rep_size {
                None => assert_eq!(fde.pc_type, PcType::Inc),
                Some(n) => assert_eq!((fde.pc_type, fde.rep_size), (PcType::Mask, n)),
            }
            let mut j = 0;
            sec.for_each_fre(&fde, |_, row| {
                check_row(row, f, &f.fres[j]);
                j += 1;
            })
            .unwrap();
            assert_eq!(j, f.fres.len());
            let end = f.start + u64::from(f.size);
            let pcs: Vec<u64> = if f.fres.len() <= 1000 {
                (f.start..end).collect()
            } else {
                f.fres
                    .iter()
                    .enumerate()
                    .step_by(1000)
                    .flat_map(|(i, r)| {
                        let next = f
                            .fres
                            .get(i + 1)
                            .map_or(end, |n| f.start + u64::from(n.start));
                        [f.start + u64::from(r.start), next - 1]
                    })
                    .collect()
            };
            for pc in pcs {
                let mut off = (pc - f.start) as u32;
                if let Some(n) = f.rep_size {
                    off %= u32::from(n);
                }
                let fre = f.fres.iter().rev().find(|r| r.start <= off).unwrap();
                check_row(&sec.find(pc).unwrap(), f, fre);
            }
            // The byte at its end is not its own.
            if let Ok(row) = sec.find(end) {
                assert_ne!(row.func_start, f.start);
            }
        }
        sec
    }

    /// The width of the data words of FRE `j` of FDE `i`.
    fn word_size(sec: &mut Section<&[u8]>, i: u32, j: u32) -> u8 {
        let fde = sec.fde(i).unwrap();
        sec.fre_raw(&fde, j).unwrap().word_size()
    }

    #[test]
    fn one_row() {
        let f = [func(0x1000, 16, &[(0, frame(CfaBase::Sp, 8, None))])];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        // Header, one FDE, attribute record, FRE of 1 + 1 + 1 bytes.
        assert_eq!(bytes.len(), 28 + 16 + 5 + 3);
        let mut sec = round_trip(Arch::X86_64, &f, &bytes);
        assert_eq!(sec.find(0xfff), Err(Error::NotCovered));
        assert_eq!(sec.find(0x1010), Err(Error::NotCovered));
        let fde = sec.fde(0).unwrap();
        assert_eq!(fde.fre_type, FreType::Addr1);
        assert_eq!(fde.num_fres, 1);
    }

    #[test]
    fn many_rows_and_functions() {
        let prologue = [
            (0, frame(CfaBase::Sp, 8, None)),
            (1, frame(CfaBase::Sp, 16, Some(-16))),
            (4, frame(CfaBase::Fp, 16, Some(-16))),
            (40, frame(CfaBase::Sp, 8, None)),
            (41, frame(CfaBase::Fp, 16, Some(-16))),
        ];
        let mut sig = func(0x3000, 8, &[(0, frame(CfaBase::Sp, 160, None))]);
        sig.signal_frame = true;
        // Given out of order: the encoder sorts.
        let f = [
            func(0x2000, 64, &prologue),
            func(0x1000, 49, &[(0, Rule::Outermost)]),
            sig,
            func(
                0x2040,
                30,
                &[
                    (0, frame(CfaBase::Sp, 8, None)),
                    (2, Rule::Outermost),
                    (9, frame(CfaBase::Sp, 24, Some(-24))),
                ],
            ),
        ];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        let mut sec = round_trip(Arch::X86_64, &f, &bytes);
        let starts: Vec<u64> = (0..4).map(|i| sec.fde(i).unwrap().func_start).collect();
        assert_eq!(starts, [0x1000, 0x2000, 0x2040, 0x3000]);
        assert!(sec.fde(3).unwrap().signal_frame);
        assert_eq!(sec.header().num_fres, 10);
    }

    #[test]
    fn fre_start_width_follows_the_last_row() {
        // 300 bytes, rows all below 256: 1-byte starts are enough.
        let small = func(
            0x1000,
            300,
            &[
                (0, frame(CfaBase::Sp, 8, None)),
                (255, frame(CfaBase::Sp, 16, None)),
            ],
        );
        // A row at 256 needs 2 bytes.
        let wide = func(
            0x2000,
            300,
            &[
                (0, frame(CfaBase::Sp, 8, None)),
                (256, frame(CfaBase::Sp, 16, None)),
            ],
        );
        // A row at 65535 still fits 2 bytes; 65536 needs 4.
        let big = func(
            0x10000,
            70000,
            &[
                (0, frame(CfaBase::Sp, 8, None)),
                (65535, frame(CfaBase::Sp, 16, None)),
            ],
        );
        let huge = func(
            0x100000,
            0x30000,
            &[
                (0, frame(CfaBase::Sp, 8, None)),
                (1, frame(CfaBase::Sp, 16, Some(-16))),
                (0x10000, frame(CfaBase::Fp, 16, Some(-16))),
                (0x2ffff, frame(CfaBase::Sp, 8, None)),
            ],
        );
        let f = [small, wide, big, huge];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        let mut sec = round_trip(Arch::X86_64, &f, &bytes);
        let types: Vec<FreType> = (0..4).map(|i| sec.fde(i).unwrap().fre_type).collect();
        assert_eq!(
            types,
            [
                FreType::Addr1,
                FreType::Addr2,
                FreType::Addr2,
                FreType::Addr4
            ]
        );
    }

    #[test]
    fn data_word_width_follows_the_largest_offset() {
        let rows = [
            (0, frame(CfaBase::Sp, 127, Some(-128))), // 1 byte
            (1, frame(CfaBase::Sp, 128, Some(-16))),  // 2 bytes (CFA)
            (2, frame(CfaBase::Sp, 16, Some(-129))),  // 2 bytes (FP)
            (3, frame(CfaBase::Fp, -32768, None)),    // 2 bytes
            (4, frame(CfaBase::Sp, 32768, None)),     // 4 bytes
            (5, frame(CfaBase::Sp, 8, Some(-70000))), // 4 bytes (FP)
            (6, frame(CfaBase::Sp, i32::MAX, Some(i32::MIN))),
            (7, Rule::Outermost), // no words
        ];
        let f = [func(0x1000, 8, &rows)];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        let mut sec = round_trip(Arch::X86_64, &f, &bytes);
        let sizes: Vec<u8> = (0..7).map(|j| word_size(&mut sec, 0, j)).collect();
        assert_eq!(sizes, [1, 2, 2, 2, 4, 4, 4]);
        let fde = sec.fde(0).unwrap();
        assert_eq!(sec.fre_raw(&fde, 7).unwrap().count(), 0);
    }

    #[test]
    fn most_rows_v3_can_count() {
        let rows: Vec<(u32, Rule)> = (0..MAX_FRES_PER_FDE)
            .map(|i| (i, frame(CfaBase::Sp, 8 + 8 * (i as i32 % 2), None)))
            .collect();
        let f = [func(0x400000, MAX_FRES_PER_FDE + 1, &rows)];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        round_trip(Arch::X86_64, &f, &bytes);
        let mut too_many = f[0].clone();
        too_many.size += 1;
        too_many.fres.push(Fre {
            start: MAX_FRES_PER_FDE,
            rule: Rule::Outermost,
        });
        assert_eq!(
            encode(Arch::X86_64, &[too_many]),
            Err(EncodeError::TooManyRows(0x400000))
        );
    }

    #[test]
    fn pc_mask_functions() {
        // A lazy PLT as GNU ld describes it: PLT0 by increment, then
        // 16-byte entries whose push moves the CFA at offset 11.
        let plt0 = func(
            0x1000,
            16,
            &[
                (0, frame(CfaBase::Sp, 16, None)),
                (6, frame(CfaBase::Sp, 24, None)),
            ],
        );
        let mut pltn = func(
            0x1010,
            0xc0,
            &[
                (0, frame(CfaBase::Sp, 8, None)),
                (11, frame(CfaBase::Sp, 16, None)),
            ],
        );
        pltn.rep_size = Some(16);
        // Blocks need not fill the function; one row is enough.
        let mut odd = func(0x2000, 40, &[(0, frame(CfaBase::Sp, 8, None))]);
        odd.rep_size = Some(16);
        let f = [plt0, pltn, odd];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        // round_trip looks up every byte with `(pc - start) % 16`.
        let mut sec = round_trip(Arch::X86_64, &f, &bytes);
        assert_eq!(sec.find(0x10cb).unwrap().cfa.offset, 16);
        assert_eq!(sec.find(0x10ca).unwrap().cfa.offset, 8);
        assert_eq!(sec.find(0x10d0), Err(Error::NotCovered));
        assert_eq!(sec.find(0x2027).unwrap().cfa.offset, 8);
        // The attribute record: PC-mask bit and the block size.
        let fde = sec.fde(1).unwrap();
        assert_eq!((fde.info & 0x10, fde.rep_size), (0x10, 16));
        assert_eq!(sec.fde(0).unwrap().info & 0x10, 0);
    }

    #[test]
    fn section_at_zero_is_link_time_addresses() {
        // Near the top of user space, as a PIE's text would never be, and a
        // function at 0.
        let f = [
            func(0, 4, &[(0, frame(CfaBase::Sp, 8, None))]),
            func(0x7fff_ffff_f000, 4, &[(0, frame(CfaBase::Sp, 8, None))]),
        ];
        let bytes = encode(Arch::X86_64, &f).unwrap();
        round_trip(Arch::X86_64, &f, &bytes);
        // Decoded as if at a load bias, everything moves by the bias.
        let bias = 0x5555_5555_4000u64;
        let mut sec = Section::new(&bytes[..], bytes.len() as u32, bias).unwrap();
        sec.validate().unwrap();
        assert_eq!(sec.find(bias + 2).unwrap().func_start, bias);
        assert_eq!(sec.find(2), Err(Error::NotCovered));
    }

    #[test]
    fn empty_section() {
        let bytes = encode(Arch::X86_64, &[]).unwrap();
        assert_eq!(bytes.len(), 28);
        let mut sec = Section::new(&bytes[..], 28, 0).unwrap();
        sec.validate().unwrap();
        assert_eq!(sec.find(0x1000), Err(Error::NotCovered));
    }

    #[test]
    fn contract_violations_are_errors() {
        let ok = frame(CfaBase::Sp, 8, None);
        assert_eq!(
            encode(Arch::X86_64, &[func(0x10, 4, &[])]),
            Err(EncodeError::NoRows(0x10))
        );
        assert_eq!(
            encode(Arch::X86_64, &[func(0x10, 4, &[(0, ok), (0, ok)])]),
            Err(EncodeError::BadRowStart(0x10))
        );
        assert_eq!(
            encode(Arch::X86_64, &[func(0x10, 4, &[(4, ok)])]),
            Err(EncodeError::BadRowStart(0x10))
        );
        assert_eq!(
            encode(
                Arch::X86_64,
                &[func(0x10, 4, &[(0, ok)]), func(0x13, 4, &[(0, ok)])]
            ),
            Err(EncodeError::Overlap(0x10, 0x13))
        );
        assert_eq!(
            encode(Arch::X86_64, &[func(u64::MAX - 1, 4, &[(0, ok)])]),
            Err(EncodeError::AddressOverflow(u64::MAX - 1))
        );
        assert_eq!(
            encode(Arch::X86_64, &[func(1 << 63, 4, &[(0, ok)])]),
            Err(EncodeError::AddressOverflow(1 << 63))
        );
        let masked = |rep, rows: &[(u32, Rule)]| {
            let mut f = func(0x10, 32, rows);
            f.rep_size = Some(rep);
            encode(Arch::X86_64, &[f])
        };
        assert_eq!(masked(0, &[(0, ok)]), Err(EncodeError::BadRepSize(0x10)));
        assert_eq!(masked(33, &[(0, ok)]), Err(EncodeError::BadRepSize(0x10)));
        assert_eq!(
            masked(16, &[(0, ok), (16, ok)]),
            Err(EncodeError::BadRowStart(0x10))
        );
        assert!(masked(32, &[(0, ok), (31, ok)]).is_ok());
        // AMD64's RA is at CFA - 8, unsigned, in every row.
        let elsewhere = Rule::Frame {
            cfa_base: CfaBase::Sp,
            cfa_offset: 16,
            ra_offset: Some(-16),
            ra_signed: false,
            fp_offset: None,
        };
        assert_eq!(
            encode(Arch::X86_64, &[func(0x10, 4, &[(0, elsewhere)])]),
            Err(EncodeError::RaRule(0x10))
        );
        assert!(encode(Arch::Aarch64, &[func(0x10, 4, &[(0, elsewhere)])]).is_ok());
        // An AArch64 RA offset of 0 would read as the padding word.
        let at_cfa = Rule::Frame {
            cfa_base: CfaBase::Sp,
            cfa_offset: 16,
            ra_offset: Some(0),
            ra_signed: false,
            fp_offset: None,
        };
        assert_eq!(
            encode(Arch::Aarch64, &[func(0x10, 4, &[(0, at_cfa)])]),
            Err(EncodeError::RaRule(0x10))
        );
    }

    /// An AArch64 function as GCC builds it with
    /// `-mbranch-protection=standard`: `paciasp`, `stp x29, x30, [sp,
    /// #-32]!`, `mov x29, sp`, body, `ldp x29, x30, [sp], #32`,
    /// `autiasp`, `ret`; and a leaf whose RA stays in x30, and a row with
    /// the FP saved and the RA not (the padding word).
    #[test]
    fn aarch64_rows_round_trip() {
        let at = |cfa_base, cfa_offset, ra_offset, ra_signed, fp_offset| Rule::Frame {
            cfa_base,
            cfa_offset,
            ra_offset,
            ra_signed,
            fp_offset,
        };
        let f = vec![
            func(
                0x1000,
                0x40,
                &[
                    (0, at(CfaBase::Sp, 0, None, false, None)),
                    (4, at(CfaBase::Sp, 0, None, true, None)),
                    (8, at(CfaBase::Sp, 32, Some(-24), true, Some(-32))),
                    (12, at(CfaBase::Fp, 32, Some(-24), true, Some(-32))),
                    (0x34, at(CfaBase::Sp, 0, None, true, None)),
                    (0x38, at(CfaBase::Sp, 0, None, false, None)),
                ],
            ),
            func(0x1040, 0x10, &[(0, at(CfaBase::Sp, 0, None, false, None))]),
            func(
                0x1050,
                0x10,
                &[(0, at(CfaBase::Sp, 16, None, false, Some(-16)))],
            ),
        ];
        let bytes = encode(Arch::Aarch64, &f).unwrap();
        let mut sec = round_trip(Arch::Aarch64, &f, &bytes);
        // The padding word: RA not saved, FP saved.
        let row = sec.find(0x1054).unwrap();
        assert_eq!(
            (row.ra, row.fp),
            (RegRule::SameValue, RegRule::CfaOffset(-16))
        );
        let row = sec.find(0x1010).unwrap();
        assert!(row.ra_mangled);
        assert_eq!(row.ra, RegRule::CfaOffset(-24));
    }
}
