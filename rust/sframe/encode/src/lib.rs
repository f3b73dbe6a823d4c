// SPDX-License-Identifier: GPL-2.0

//! SFrame section encoder: the one writer of `.sframe` bytes in the Rust
//! code of this project. `sframe-synth` writes its sections with it, the
//! decoder's tests and benchmark their hand-made ones.
//!
//! A [`SectionSpec`] gives a section field by field, as stored: version,
//! flags, ABI, fixed offsets, auxiliary header and functions
//! ([`FdeSpec`]: start, size, info bytes and frame row entries, each a
//! [`FreSpec`]: start offset, info byte, data words). [`SectionSpec::encode`]
//! lays it out as GNU as does (header, auxiliary header, FDE array, FRE
//! sub-section) and derives the counts, lengths and offsets.
//!
//! The encoder does not judge what the fields mean: it writes the FDEs in
//! the order given (unsorted or overlapping if so), info bytes as given
//! (reserved codes included) and FREs wherever they start; a derived
//! header or FDE field can be overridden to write one that lies. That is
//! how the decoder's tests build hostile sections. A producer of real
//! sections checks its input itself and takes the info bytes GNU as would
//! write from [`FdeSpec::new`] and [`FreSpec::new`]. What the encoder
//! refuses ([`Error`]) is what it cannot write as told: a value wider than
//! its field, data words other than the ones an info byte counts.
//!
//! Function starts are absolute addresses: each is stored relative to what
//! the decoder adds it to, the FDE's own start field under
//! [`F_FDE_FUNC_START_PCREL`], else the section, given the section's
//! address ([`SectionSpec::addr`]).

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::as_conversions
    )
)]

use std::fmt;

use sframe::{Abi, FreType, Version, F_FDE_FUNC_START_PCREL, F_FDE_SORTED, HEADER_SIZE, MAGIC};

/// FDE info bit 4 (`SFRAME_FDE_PCTYPE_MASK`): a PC-mask FDE, whose FREs
/// start at offsets within a block of [`FdeSpec::rep_size`] bytes that
/// repeats over the function.
pub const FDE_PC_MASK: u8 = 0x10;
/// FDE info bit 7 (V3, `SFRAME_V3_FDE_SIGNAL_P`): the function is a signal
/// trampoline.
pub const FDE_SIGNAL_FRAME: u8 = 0x80;
/// The return address is just below the CFA on AMD64, always: the fixed RA
/// offset GNU as writes in the header of every AMD64 section.
pub const AMD64_FIXED_RA_OFFSET: i8 = -8;

/// Why [`SectionSpec::encode`] refused a section. FDEs and FREs are
/// named by their index in [`SectionSpec::fdes`] and [`FdeSpec::fres`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The section would exceed 4 GiB, or the auxiliary header 255 bytes.
    TooLarge,
    /// The start of FDE `.0` is not within the 32-bit offset a V1 or V2 FDE
    /// stores it as.
    StartOutOfRange(usize),
    /// FDE `.0` counts more FREs than the 16-bit count of V3.
    TooManyFres(usize),
    /// FRE `.1` of FDE `.0` starts past what the FDE's FRE type can hold.
    FreStartTooWide(usize, usize),
    /// FRE `.1` of FDE `.0` has another number of data words than its info
    /// byte says, or a word wider than the info byte's word size.
    BadWords(usize, usize),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooLarge => write!(f, "the section would exceed 4 GiB"),
            Error::StartOutOfRange(i) => write!(f, "FDE {i}: start out of 32-bit range"),
            Error::TooManyFres(i) => write!(f, "FDE {i}: more than {} FREs", u16::MAX),
            Error::FreStartTooWide(i, j) => {
                write!(f, "FDE {i}, FRE {j}: start too wide for the FRE type")
            }
            Error::BadWords(i, j) => {
                write!(
                    f,
                    "FDE {i}, FRE {j}: data words disagree with the info byte"
                )
            }
        }
    }
}

impl std::error::Error for Error {}

/// FRE info bit: AArch64, the return address is signed (mangled) in this
/// row.
pub const FRE_RA_MANGLED: u8 = 0x80;

/// The info byte of an FRE: CFA base (SP if `cfa_base_is_sp`, else FP),
/// `count` data words (below 16) of the width `word_size_code` names (0: 1
/// byte, 1: 2 bytes, 2: 4 bytes; 3 is reserved). [`FRE_RA_MANGLED`] is
/// left clear.
pub fn fre_info(cfa_base_is_sp: bool, count: u8, word_size_code: u8) -> u8 {
    ((word_size_code & 3) << 5) | ((count & 0xf) << 1) | u8::from(cfa_base_is_sp)
}

/// A control word of a flexible FDE's FRE: register `regnum` (DWARF), or
/// the CFA if `reg_p` is clear, and whether the value is loaded from it
/// (`deref`). Returned as the data word that holds it.
pub fn flex_ctl(regnum: u32, deref: bool, reg_p: bool) -> i32 {
    let w = (regnum << 3) | (u32::from(deref) << 1) | u32::from(reg_p);
    // The same 32 bits: a word is written as its low bytes either way.
    i32::from_le_bytes(w.to_le_bytes())
}

/// Bytes of a data word of width code `code` (of an FRE info byte). The
/// reserved code 3 is written as 4 bytes, the widest defined, so that a
/// section can carry it and a decoder be seen to reject it.
fn word_size(code: u8) -> usize {
    match code {
        0 => 1,
        1 => 2,
        _ => 4,
    }
}

/// Bytes of an FRE start offset under the FRE type of FDE info byte
/// `info`; a reserved type is written as 4 bytes, as [`word_size`] does.
fn start_size(info: u8) -> usize {
    FreType::from_raw(info & 0xf).map_or(4, FreType::addr_size)
}

/// Whether `v` fits `size` bytes, unsigned.
fn fits_unsigned(v: u64, size: usize) -> bool {
    size >= 8 || v >> (8 * size) == 0
}

/// Whether `v` fits `size` bytes, signed.
fn fits_signed(v: i64, size: usize) -> bool {
    size >= 8 || matches!(v >> (8 * size - 1), 0 | -1)
}

/// Append the `size` low bytes of `bytes` (a little-endian value).
fn push_low<const N: usize>(out: &mut Vec<u8>, bytes: [u8; N], size: usize) {
    out.extend(bytes.into_iter().take(size));
}

/// One frame row entry, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreSpec {
    /// Start offset, from the function start (from the block start in a
    /// PC-mask FDE), written in the width of its FDE's FRE type.
    pub start: u32,
    /// Info byte (see [`fre_info`]).
    pub info: u8,
    /// Data words, as many as `info` counts, each written in the width it
    /// names: an offset, signed, or a control word ([`flex_ctl`]),
    /// unsigned.
    pub words: Vec<i32>,
}

impl FreSpec {
    /// An FRE of offsets `words` (CFA, then RA and FP as the ABI and FDE
    /// type want them; none for an outermost frame), in the narrowest word
    /// size that holds them all, as GNU as writes it. (Control words are
    /// taken as offsets too: one that fits a width only unsigned gets the
    /// next.)
    pub fn new(start: u32, cfa_base_is_sp: bool, words: &[i32]) -> FreSpec {
        // 1- or 2-byte words if they hold them all, else 4 (code 2).
        let code = (0..2)
            .find(|&c| {
                words
                    .iter()
                    .all(|&w| fits_signed(i64::from(w), word_size(c)))
            })
            .unwrap_or(2);
        // More than 15 words do not fit the count: encode() refuses them.
        let count = u8::try_from(words.len()).unwrap_or(u8::MAX);
        FreSpec {
            start,
            info: fre_info(cfa_base_is_sp, count, code),
            words: words.to_vec(),
        }
    }
}

/// One function descriptor entry and its FREs, as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FdeSpec {
    /// Absolute start address of the function.
    pub start: u64,
    /// Size of the function in bytes.
    pub size: u32,
    /// Info byte: FRE type (width of the FRE start offsets) in bits 0-3,
    /// [`FDE_PC_MASK`], AArch64 PAuth key B in bit 5, [`FDE_SIGNAL_FRAME`].
    pub info: u8,
    /// V3 second info byte (FDE type: 0 default, 1 flexible); not stored
    /// before V3.
    pub info2: u8,
    /// Repetition block size of a PC-mask FDE; not stored in V1 (which
    /// has no such field).
    pub rep_size: u8,
    /// The FREs, in the order given.
    pub fres: Vec<FreSpec>,
    /// FRE count to store instead of the number of `fres`.
    pub num_fres: Option<u32>,
    /// Offset of the FREs (V3: of the attribute record) in the FRE
    /// sub-section to store instead of where they are.
    pub fre_off: Option<u32>,
}

impl FdeSpec {
    /// A PC-increment FDE of the default type with `fres`, of the narrowest
    /// FRE type that holds every start, as GNU as writes it.
    pub fn new(start: u64, size: u32, fres: Vec<FreSpec>) -> FdeSpec {
        let last = fres.iter().map(|r| u64::from(r.start)).max().unwrap_or(0);
        // 1- or 2-byte starts if they hold them all, else 4 (type 2).
        let fre_type = (0..2)
            .find(|&t| fits_unsigned(last, start_size(t)))
            .unwrap_or(2);
        FdeSpec {
            start,
            size,
            info: fre_type,
            info2: 0,
            rep_size: 0,
            fres,
            num_fres: None,
            fre_off: None,
        }
    }
}

/// A whole section, as stored. `num_fdes`, `num_fres`, `fre_len` and
/// `fre_off`, if set, are stored in the header instead of the true values;
/// nothing else changes (the FDE array follows the header, the FRE
/// sub-section the FDE array).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionSpec {
    /// Format version: the FDE layout follows it.
    pub version: Version,
    /// Header flags, as stored (`F_*` of the decoder).
    pub flags: u8,
    /// ABI/arch.
    pub abi: Abi,
    /// Fixed FP offset from the CFA, 0 for none.
    pub cfa_fixed_fp_offset: i8,
    /// Fixed RA offset from the CFA, 0 for none.
    pub cfa_fixed_ra_offset: i8,
    /// Auxiliary header.
    pub aux: Vec<u8>,
    /// Address the section is decoded at (the function starts are stored
    /// relative to it).
    pub addr: u64,
    /// The functions, in the order given.
    pub fdes: Vec<FdeSpec>,
    /// FDE count to store.
    pub num_fdes: Option<u32>,
    /// Total FRE count to store.
    pub num_fres: Option<u32>,
    /// FRE sub-section length to store.
    pub fre_len: Option<u32>,
    /// FRE sub-section offset to store.
    pub fre_off: Option<u32>,
}

impl SectionSpec {
    /// An empty section at address 0, as GNU as writes one of `version`
    /// for `abi`: flagged sorted, with function starts relative to their
    /// own field where the version has [`F_FDE_FUNC_START_PCREL`], and on
    /// AMD64 the fixed RA offset [`AMD64_FIXED_RA_OFFSET`].
    pub fn new(version: Version, abi: Abi) -> SectionSpec {
        SectionSpec {
            version,
            flags: version.known_flags() & (F_FDE_SORTED | F_FDE_FUNC_START_PCREL),
            abi,
            cfa_fixed_fp_offset: 0,
            cfa_fixed_ra_offset: match abi {
                Abi::Amd64 => AMD64_FIXED_RA_OFFSET,
                Abi::Aarch64LittleEndian => 0,
            },
            aux: Vec::new(),
            addr: 0,
            fdes: Vec::new(),
            num_fdes: None,
            num_fres: None,
            fre_len: None,
            fre_off: None,
        }
    }

    /// The section's bytes.
    pub fn encode(&self) -> Result<Vec<u8>, Error> {
        let v3 = self.version == Version::V3;
        let len32 = |n: usize| u32::try_from(n).map_err(|_| Error::TooLarge);

        // The FRE sub-section first: the FDEs point into it.
        let mut fres = Vec::new();
        let mut fre_offs = Vec::with_capacity(self.fdes.len());
        let mut num_fres: usize = 0;
        for (i, f) in self.fdes.iter().enumerate() {
            fre_offs.push(len32(fres.len())?);
            if v3 {
                let count = f.num_fres.map_or_else(|| len32(f.fres.len()), Ok)?;
                let count = u16::try_from(count).map_err(|_| Error::TooManyFres(i))?;
                fres.extend(count.to_le_bytes());
                fres.extend([f.info, f.info2, f.rep_size]);
            }
            let start_size = start_size(f.info);
            for (j, r) in f.fres.iter().enumerate() {
                if !fits_unsigned(u64::from(r.start), start_size) {
                    return Err(Error::FreStartTooWide(i, j));
                }
                push_low(&mut fres, r.start.to_le_bytes(), start_size);
                fres.push(r.info);
                let size = word_size((r.info >> 5) & 3);
                // Words are offsets (signed) or control words (unsigned).
                let fits = |&w: &i32| {
                    fits_signed(i64::from(w), size)
                        || u32::try_from(w).is_ok_and(|u| fits_unsigned(u64::from(u), size))
                };
                if usize::from((r.info >> 1) & 0xf) != r.words.len() || !r.words.iter().all(fits) {
                    return Err(Error::BadWords(i, j));
                }
                for w in &r.words {
                    push_low(&mut fres, w.to_le_bytes(), size);
                }
            }
            num_fres = num_fres.saturating_add(f.fres.len());
        }

        let fde_size = usize::try_from(self.version.fde_size()).map_err(|_| Error::TooLarge)?;
        let fde_bytes = fde_size
            .checked_mul(self.fdes.len())
            .ok_or(Error::TooLarge)?;
        let header_size = usize::try_from(HEADER_SIZE).map_err(|_| Error::TooLarge)?;
        let total = header_size
            .checked_add(self.aux.len())
            .and_then(|n| n.checked_add(fde_bytes))
            .and_then(|n| n.checked_add(fres.len()))
            .ok_or(Error::TooLarge)?;
        len32(total)?;

        let mut out = Vec::with_capacity(total);
        out.extend(MAGIC.to_le_bytes());
        out.push(self.version.number());
        out.push(self.flags);
        out.push(self.abi.raw());
        out.extend(self.cfa_fixed_fp_offset.to_le_bytes());
        out.extend(self.cfa_fixed_ra_offset.to_le_bytes());
        out.push(u8::try_from(self.aux.len()).map_err(|_| Error::TooLarge)?);
        // An override, else the true value.
        let field = |over: Option<u32>, n: usize| over.map_or_else(|| len32(n), Ok);
        out.extend(field(self.num_fdes, self.fdes.len())?.to_le_bytes());
        out.extend(field(self.num_fres, num_fres)?.to_le_bytes());
        out.extend(field(self.fre_len, fres.len())?.to_le_bytes());
        // The FDE array right after the (auxiliary) header.
        out.extend(0u32.to_le_bytes());
        out.extend(field(self.fre_off, fde_bytes)?.to_le_bytes());
        out.extend(&self.aux);

        let pcrel = self.flags & F_FDE_FUNC_START_PCREL != 0;
        for (i, (f, &fre_off)) in self.fdes.iter().zip(&fre_offs).enumerate() {
            // Relative to the start field (the first of every layout) or
            // to the section, modulo 2^64: the decoder's `base + stored`
            // is `start` unless it overflows, which is how a hostile
            // section gets a start past the end of the address space.
            let base = if pcrel {
                self.addr
                    .wrapping_add(u64::try_from(out.len()).map_err(|_| Error::TooLarge)?)
            } else {
                self.addr
            };
            let stored = i64::from_le_bytes(f.start.wrapping_sub(base).to_le_bytes());
            if v3 {
                out.extend(stored.to_le_bytes());
            } else {
                let stored = i32::try_from(stored).map_err(|_| Error::StartOutOfRange(i))?;
                out.extend(stored.to_le_bytes());
            }
            out.extend(f.size.to_le_bytes());
            out.extend(f.fre_off.unwrap_or(fre_off).to_le_bytes());
            match self.version {
                Version::V1 | Version::V2 => {
                    out.extend(field(f.num_fres, f.fres.len())?.to_le_bytes());
                    out.push(f.info);
                    if self.version == Version::V2 {
                        // rep_size, then 2 bytes of padding.
                        out.extend([f.rep_size, 0, 0]);
                    }
                }
                // Counts and info bytes are in the attribute record.
                Version::V3 => {}
            }
        }
        out.extend(fres);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sframe::{Error as DecodeError, FdeType, FreType, PcType, RegRule, Section};

    fn decode(bytes: &[u8], addr: u64) -> Section<&[u8]> {
        let mut sec = Section::new(bytes, bytes.len() as u32, addr).unwrap();
        sec.validate().unwrap();
        sec
    }

    /// Two functions, one of them PC-mask, with 1- and 2-byte words.
    fn two(version: Version) -> SectionSpec {
        let mut plt = FdeSpec::new(
            0x2000,
            0x40,
            vec![FreSpec::new(0, true, &[8]), FreSpec::new(11, true, &[16])],
        );
        plt.info |= FDE_PC_MASK;
        plt.rep_size = 16;
        SectionSpec {
            addr: 0x1_0000,
            fdes: vec![
                FdeSpec::new(
                    0x1000,
                    0x300,
                    vec![
                        FreSpec::new(0, true, &[8]),
                        FreSpec::new(1, true, &[16, -16]),
                        FreSpec::new(0x2ff, false, &[300, -16]),
                    ],
                ),
                plt,
            ],
            ..SectionSpec::new(version, Abi::Amd64)
        }
    }

    #[test]
    fn every_version_decodes_as_written() {
        for version in [Version::V1, Version::V2, Version::V3] {
            let spec = two(version);
            let bytes = spec.encode().unwrap();
            let mut sec = decode(&bytes, spec.addr);
            let h = *sec.header();
            let fde_size = version.fde_size();
            assert_eq!(
                (h.version, h.abi, h.cfa_fixed_ra_offset),
                (version, Abi::Amd64, -8)
            );
            assert_eq!(h.flags, if version == Version::V1 { 1 } else { 5 });
            assert_eq!(
                (h.num_fdes, h.num_fres, h.fde_off, h.fre_off),
                (2, 5, 0, 2 * fde_size)
            );
            assert_eq!(h.fre_len as usize, bytes.len() - 28 - 2 * fde_size as usize);
            let f = sec.fde(0).unwrap();
            assert_eq!((f.func_start, f.func_size, f.num_fres), (0x1000, 0x300, 3));
            assert_eq!(
                (f.fre_type, f.pc_type, f.fde_type),
                (FreType::Addr2, PcType::Inc, FdeType::Default)
            );
            let raw = sec.fre_raw(&f, 2).unwrap();
            assert_eq!(
                (raw.start, raw.word_size(), raw.word(0)),
                (0x2ff, 2, Some(300))
            );
            let row = sec.find(0x1001).unwrap();
            assert_eq!((row.cfa.offset, row.fp), (16, RegRule::CfaOffset(-16)));
            let f = sec.fde(1).unwrap();
            assert_eq!(
                (f.fre_type, f.pc_type, f.rep_size),
                (FreType::Addr1, PcType::Mask, 16)
            );
            assert_eq!(sec.find(0x203b).unwrap().cfa.offset, 16);
            assert_eq!(sec.find(0x2040), Err(DecodeError::NotCovered));
        }
    }

    #[test]
    fn starts_relative_to_their_field_or_the_section() {
        for version in [Version::V2, Version::V3] {
            for flags in [F_FDE_SORTED, F_FDE_SORTED | F_FDE_FUNC_START_PCREL] {
                let spec = SectionSpec {
                    flags,
                    ..two(version)
                };
                let bytes = spec.encode().unwrap();
                let mut sec = decode(&bytes, spec.addr);
                assert_eq!(sec.fde(1).unwrap().func_start, 0x2000);
                // Decoded elsewhere, every start moves with the section.
                let mut moved = decode(&bytes, spec.addr + 0x100);
                assert_eq!(moved.fde(1).unwrap().func_start, 0x2100);
            }
        }
        // V3 stores any start modulo 2^64; V1 and V2 only within 2 GiB of
        // their base.
        let far = |version| {
            let mut spec = two(version);
            spec.fdes.truncate(1);
            spec.fdes[0].start = 0x1_0000 + (1 << 32);
            spec.encode()
        };
        let bytes = far(Version::V3).unwrap();
        assert_eq!(
            decode(&bytes, 0x1_0000).fde(0).unwrap().func_start,
            0x1_0000 + (1 << 32)
        );
        assert_eq!(far(Version::V2), Err(Error::StartOutOfRange(0)));
        assert_eq!(far(Version::V1), Err(Error::StartOutOfRange(0)));
    }

    #[test]
    fn narrowest_widths() {
        let code = |words: &[i32]| (FreSpec::new(0, true, words).info >> 5) & 3;
        assert_eq!(code(&[]), 0);
        assert_eq!(code(&[127, -128]), 0);
        assert_eq!(code(&[128]), 1);
        assert_eq!(code(&[-129]), 1);
        assert_eq!(code(&[32767, -32768]), 1);
        assert_eq!(code(&[8, 32768]), 2);
        assert_eq!(code(&[i32::MIN]), 2);
        let fre_type = |last| FdeSpec::new(0, 0, vec![FreSpec::new(last, true, &[8])]).info;
        assert_eq!(fre_type(255), 0);
        assert_eq!(fre_type(256), 1);
        assert_eq!(fre_type(65535), 1);
        assert_eq!(fre_type(65536), 2);
        assert_eq!(fre_info(false, 0, 0), 0, "outermost FRE");
        assert_eq!(flex_ctl(7, false, true), 57);
        assert_eq!(flex_ctl(0, true, false), 2);
    }

    #[test]
    fn refusals() {
        let mut spec = two(Version::V3);
        spec.fdes[1].fres[1].start = 256;
        assert_eq!(spec.encode(), Err(Error::FreStartTooWide(1, 1)));
        let mut spec = two(Version::V3);
        spec.fdes[0].fres[1].info = fre_info(true, 1, 0);
        assert_eq!(spec.encode(), Err(Error::BadWords(0, 1)));
        let mut spec = two(Version::V3);
        spec.fdes[0].fres[1].words = vec![16, -129];
        assert_eq!(spec.encode(), Err(Error::BadWords(0, 1)));
        // A control word is unsigned: 255 fits one byte, 256 does not.
        let mut spec = two(Version::V3);
        spec.fdes[0].fres[1].words = vec![16, 255];
        spec.encode().unwrap();
        spec.fdes[0].fres[1].words = vec![16, 256];
        assert_eq!(spec.encode(), Err(Error::BadWords(0, 1)));
        let mut spec = two(Version::V3);
        spec.fdes[1].num_fres = Some(0x1_0000);
        assert_eq!(spec.encode(), Err(Error::TooManyFres(1)));
        spec.version = Version::V2;
        spec.encode().unwrap();
        let spec = SectionSpec {
            aux: vec![0; 256],
            ..two(Version::V3)
        };
        assert_eq!(spec.encode(), Err(Error::TooLarge));
    }

    #[test]
    fn overrides_change_only_their_field() {
        let good = two(Version::V2).encode().unwrap();
        let mut spec = two(Version::V2);
        spec.num_fdes = Some(7);
        spec.num_fres = Some(8);
        spec.fre_len = Some(9);
        spec.fre_off = Some(10);
        spec.fdes[1].num_fres = Some(11);
        spec.fdes[1].fre_off = Some(12);
        let bytes = spec.encode().unwrap();
        let u32_at = |b: &[u8], o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let fde1 = (HEADER_SIZE + Version::V2.fde_size()) as usize;
        let changed: Vec<usize> = (0..good.len()).filter(|&i| good[i] != bytes[i]).collect();
        for (at, want) in [
            (8, 7),
            (12, 8),
            (16, 9),
            (24, 10),
            (fde1 + 8, 12),
            (fde1 + 12, 11),
        ] {
            assert_eq!(u32_at(&bytes, at), want);
        }
        assert!(changed.iter().all(|&i| (8..20).contains(&i)
            || (24..28).contains(&i)
            || (fde1 + 8..fde1 + 16).contains(&i)));
        assert_eq!(bytes.len(), good.len());
    }
}
