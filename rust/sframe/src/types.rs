// SPDX-License-Identifier: GPL-2.0

//! The decoded view of an SFrame section: header, function descriptors,
//! frame row entries and the recovery rules they describe.

use crate::reader::le_i32;
use crate::Error;

/// SFrame magic number, as read in the section's own (little) endianness.
pub const MAGIC: u16 = 0xdee2;
/// Size in bytes of the fixed SFrame header (all versions).
pub const HEADER_SIZE: u32 = 28;
/// Upper bound on the FREs of one function. V3 stores the count in 16 bits;
/// V1/V2 sections are held to the same bound so that one lookup scans at
/// most this many FREs whatever the version.
pub const MAX_FRES_PER_FDE: u32 = 0xffff;
/// Most data words one FRE may carry (a flexible FRE: CFA, RA and FP as
/// control word + offset pairs).
pub const MAX_DATA_WORDS: usize = 6;

/// Header flag: function descriptors are sorted by start address.
pub const F_FDE_SORTED: u8 = 0x1;
/// Header flag (V1/V2 only): all functions keep a frame pointer.
pub const F_FRAME_POINTER: u8 = 0x2;
/// Header flag: function start offsets are relative to the start-offset
/// field itself rather than to the start of the section.
pub const F_FDE_FUNC_START_PCREL: u8 = 0x4;

/// SFrame format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// Version 1 (binutils 2.40): 17-byte FDEs, no repetition block size.
    V1,
    /// Version 2 (binutils 2.41 to 2.45): 20-byte FDEs.
    V2,
    /// Version 3 (binutils 2.46 and later): 16-byte FDE index entries and a
    /// 5-byte attribute record ahead of each function's FREs.
    V3,
}

impl Version {
    /// The version number as stored in the preamble.
    pub fn number(self) -> u8 {
        match self {
            Version::V1 => 1,
            Version::V2 => 2,
            Version::V3 => 3,
        }
    }

    /// Size in bytes of one entry of the FDE array.
    pub fn fde_size(self) -> u32 {
        match self {
            Version::V1 => 17,
            Version::V2 => 20,
            Version::V3 => 16,
        }
    }

    /// Flags this version defines.
    pub fn known_flags(self) -> u8 {
        match self {
            Version::V1 => F_FDE_SORTED | F_FRAME_POINTER,
            Version::V2 => F_FDE_SORTED | F_FRAME_POINTER | F_FDE_FUNC_START_PCREL,
            Version::V3 => F_FDE_SORTED | F_FDE_FUNC_START_PCREL,
        }
    }
}

/// ABI/arch of the section. The ABI is data: it supplies the DWARF numbers of
/// the stack and frame pointer registers; fixed CFA offsets come from the
/// header, not from code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    /// `SFRAME_ABI_AARCH64_ENDIAN_LITTLE` (2).
    Aarch64LittleEndian,
    /// `SFRAME_ABI_AMD64_ENDIAN_LITTLE` (3).
    Amd64,
}

impl Abi {
    /// Decode the ABI/arch byte of the header.
    pub fn from_raw(raw: u8) -> Result<Abi, Error> {
        match raw {
            2 => Ok(Abi::Aarch64LittleEndian),
            3 => Ok(Abi::Amd64),
            1 | 4 => Err(Error::AbiEndianMismatch(raw)),
            _ => Err(Error::UnsupportedAbi(raw)),
        }
    }

    /// The ABI/arch byte as stored in the header.
    pub fn raw(self) -> u8 {
        match self {
            Abi::Aarch64LittleEndian => 2,
            Abi::Amd64 => 3,
        }
    }

    /// DWARF register number of the stack pointer (rsp = 7, sp = 31).
    pub fn sp_regnum(self) -> u16 {
        match self {
            Abi::Aarch64LittleEndian => 31,
            Abi::Amd64 => 7,
        }
    }

    /// DWARF register number of the frame pointer (rbp = 6, x29 = 29).
    pub fn fp_regnum(self) -> u16 {
        match self {
            Abi::Aarch64LittleEndian => 29,
            Abi::Amd64 => 6,
        }
    }

    /// Repetition block size assumed for SFrame V1 PC-mask FDEs, which have
    /// no such field. The only V1 producer (GNU ld 2.40) emits PC-mask FDEs
    /// only for AMD64 `.plt`/`.plt.sec` entries, which are 16 bytes long.
    /// `None` where V1 never had PC-mask FDEs.
    pub fn v1_rep_size(self) -> Option<u8> {
        match self {
            Abi::Aarch64LittleEndian => None,
            Abi::Amd64 => Some(16),
        }
    }

    /// Name a DWARF register as a [`Base`]: the stack and frame pointers get
    /// their own variants so that callers need no register table for them.
    pub fn base_of(self, regnum: u16) -> Base {
        if regnum == self.sp_regnum() {
            Base::Sp
        } else if regnum == self.fp_regnum() {
            Base::Fp
        } else {
            Base::Reg(regnum)
        }
    }
}

/// The decoded SFrame header (preamble included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version.
    pub version: Version,
    /// Raw flag byte (`F_*` constants).
    pub flags: u8,
    /// ABI/arch.
    pub abi: Abi,
    /// Fixed FP offset from the CFA, 0 if FREs track FP themselves.
    pub cfa_fixed_fp_offset: i8,
    /// Fixed RA offset from the CFA (-8 on AMD64), 0 if FREs track RA.
    pub cfa_fixed_ra_offset: i8,
    /// Size of the auxiliary header that follows the fixed header.
    pub auxhdr_len: u8,
    /// Number of function descriptor entries.
    pub num_fdes: u32,
    /// Number of frame row entries in the section.
    pub num_fres: u32,
    /// Length in bytes of the FRE sub-section.
    pub fre_len: u32,
    /// Offset of the FDE array from the end of the (auxiliary) header.
    pub fde_off: u32,
    /// Offset of the FRE sub-section from the end of the (auxiliary) header.
    pub fre_off: u32,
}

impl Header {
    /// Whether the FDEs are flagged as sorted (required for lookups).
    pub fn fde_sorted(&self) -> bool {
        self.flags & F_FDE_SORTED != 0
    }

    /// Whether the section says all of its code keeps a frame pointer
    /// (`SFRAME_F_FRAME_POINTER`, versions 1 and 2 only): then code in its
    /// text that no FDE describes can be unwound with frame pointers too.
    pub fn keeps_frame_pointers(&self) -> bool {
        self.flags & F_FRAME_POINTER != 0
    }

    /// Whether function start offsets are relative to their own field.
    pub fn func_start_pcrel(&self) -> bool {
        self.flags & F_FDE_FUNC_START_PCREL != 0
    }

    /// The fixed FP offset from the CFA, if the header gives one.
    pub fn fixed_fp_offset(&self) -> Option<i32> {
        (self.cfa_fixed_fp_offset != 0).then_some(i32::from(self.cfa_fixed_fp_offset))
    }

    /// The fixed RA offset from the CFA, if the header gives one.
    #[inline]
    pub fn fixed_ra_offset(&self) -> Option<i32> {
        (self.cfa_fixed_ra_offset != 0).then_some(i32::from(self.cfa_fixed_ra_offset))
    }

    /// Size of the header including the auxiliary header.
    pub fn size(&self) -> u32 {
        // At most 28 + 255: cannot overflow.
        HEADER_SIZE.saturating_add(u32::from(self.auxhdr_len))
    }
}

/// Width of the FRE start offsets of one function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreType {
    /// 1-byte start offsets.
    Addr1,
    /// 2-byte start offsets.
    Addr2,
    /// 4-byte start offsets.
    Addr4,
}

impl FreType {
    /// Decode the low 4 bits of an FDE info byte.
    pub fn from_raw(raw: u8) -> Result<FreType, Error> {
        match raw {
            0 => Ok(FreType::Addr1),
            1 => Ok(FreType::Addr2),
            2 => Ok(FreType::Addr4),
            _ => Err(Error::BadFreType(raw)),
        }
    }

    /// Width in bytes of the start offset.
    pub fn addr_size(self) -> usize {
        match self {
            FreType::Addr1 => 1,
            FreType::Addr2 => 2,
            FreType::Addr4 => 4,
        }
    }
}

/// How FRE start offsets are matched against a PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcType {
    /// The FRE applies from `func_start + start` on (most code).
    Inc,
    /// The FRE applies where `(pc - func_start) % rep_size >= start`
    /// (repeated stubs such as PLT entries).
    Mask,
}

/// How the data words of a function's FREs are interpreted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdeType {
    /// Offsets: CFA = SP/FP + off; RA and FP saved at CFA + off.
    Default,
    /// V3 flexible FDE: (control word, offset) pairs for CFA, RA and FP.
    Flex,
}

/// A function descriptor entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fde {
    /// Index of the FDE in the section.
    pub index: u32,
    /// Absolute start address of the function.
    pub func_start: u64,
    /// Size of the function in bytes.
    pub func_size: u32,
    /// Offset of the function's first FRE from the start of the FRE
    /// sub-section (in V3, just past the attribute record).
    pub fres_off: u32,
    /// Number of FREs of the function.
    pub num_fres: u32,
    /// Width of FRE start offsets.
    pub fre_type: FreType,
    /// PC matching rule.
    pub pc_type: PcType,
    /// Data word interpretation.
    pub fde_type: FdeType,
    /// Repetition block size of a [`PcType::Mask`] FDE. V1 FDEs have no such
    /// field: [`Abi::v1_rep_size`] is used (0 if the ABI has none).
    pub rep_size: u8,
    /// V3: the function is a signal trampoline (its caller's frame is a
    /// signal frame, so its RA must not be decremented for lookups).
    pub signal_frame: bool,
    /// AArch64: return addresses are signed with the B key (else A key).
    pub pauth_key_b: bool,
    /// Raw info byte.
    pub info: u8,
    /// Raw V3 info2 byte (0 before V3).
    pub info2: u8,
}

impl Fde {
    /// An FDE from its fields as stored (`info`, `info2` and `rep_size`
    /// raw); checks the types they name and that the function's end does
    /// not overflow.
    pub(crate) fn from_fields(
        version: Version,
        index: u32,
        func_start: u64,
        func_size: u32,
        fres_off: u32,
        num_fres: u32,
        [info, info2, rep_size]: [u8; 3],
    ) -> Result<Fde, Error> {
        let fre_type = FreType::from_raw(info & 0xf)?;
        let pc_type = PcType::from_info(info);
        let fde_type = match info2 & 0x1f {
            0 => FdeType::Default,
            1 => FdeType::Flex,
            t => return Err(Error::BadFdeType(t)),
        };
        func_start
            .checked_add(u64::from(func_size))
            .ok_or(Error::AddressOverflow)?;
        Ok(Fde {
            index,
            func_start,
            func_size,
            fres_off,
            num_fres,
            fre_type,
            pc_type,
            fde_type,
            rep_size,
            signal_frame: signal_frame(version, info),
            pauth_key_b: info & 0x20 != 0,
            info,
            info2,
        })
    }

    /// The FDE in the compact form a consumer keeps in its own memory
    /// (see [`PackedFde`]), its start relative to `base`; `None` if the
    /// function does not start within 4 GiB above `base`.
    pub fn pack(&self, base: u64) -> Option<PackedFde> {
        Some(PackedFde {
            start: u32::try_from(self.func_start.checked_sub(base)?).ok()?,
            size: self.func_size,
            fres_off: self.fres_off,
            num_fres: u16::try_from(self.num_fres).ok()?,
            info: [self.info, self.info2, self.rep_size],
        })
    }

    /// Absolute end address (exclusive). Checked when the FDE was decoded.
    pub fn func_end(&self) -> u64 {
        self.func_start.saturating_add(u64::from(self.func_size))
    }

    /// Whether `pc` lies inside the function.
    pub fn contains(&self, pc: u64) -> bool {
        pc >= self.func_start && pc < self.func_end()
    }

    /// Where `pc` is in the function's rows: its offset from the function's
    /// start, within the repetition block for a [`PcType::Mask`] FDE, as FRE
    /// start offsets count. [`Error::NotCovered`] if `pc` is not in the
    /// function.
    pub fn row_offset(&self, pc: u64) -> Result<u32, Error> {
        if !self.contains(pc) {
            return Err(Error::NotCovered);
        }
        let off =
            u32::try_from(pc.saturating_sub(self.func_start)).map_err(|_| Error::NotCovered)?;
        self.pc_type.row_offset(off, self.rep_size)
    }
}

/// Whether an FDE with info byte `info` in a section of `version` is a
/// signal trampoline's.
#[inline]
fn signal_frame(version: Version, info: u8) -> bool {
    version == Version::V3 && info & 0x80 != 0
}

impl PcType {
    /// The PC type an FDE's info byte says.
    #[inline]
    fn from_info(info: u8) -> PcType {
        if info & 0x10 != 0 {
            PcType::Mask
        } else {
            PcType::Inc
        }
    }

    /// Where a PC `off` bytes into a function is among its rows, as FRE
    /// start offsets count: within its repetition block of `rep_size`
    /// bytes for a [`PcType::Mask`] FDE.
    #[inline]
    fn row_offset(self, off: u32, rep_size: u8) -> Result<u32, Error> {
        match self {
            PcType::Mask => off
                .checked_rem(u32::from(rep_size))
                .ok_or(Error::ZeroRepSize),
            PcType::Inc => Ok(off),
        }
    }
}

/// A frame row entry as stored: its start offset, info byte and data words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFre {
    /// Start offset within the function (or within the repetition block of a
    /// [`PcType::Mask`] FDE).
    pub start: u32,
    /// Raw FRE info byte.
    pub info: u8,
    /// Size in bytes of this FRE in the section.
    pub size: u8,
    count: u8,
    word_size: u8,
    /// Sign-extended as read: offsets are most of them, and are read as such.
    words: [i32; MAX_DATA_WORDS],
}

impl RawFre {
    /// Decode the info byte and data words of an FRE. `bytes` holds the data
    /// words only.
    #[inline]
    pub(crate) fn new(start: u32, info: u8, size: u8, bytes: &[u8]) -> Result<RawFre, Error> {
        let word_size = Self::word_size_of(info)?;
        let count = Self::count_of(info);
        let mut words = [0i32; MAX_DATA_WORDS];
        let n = usize::from(count).min(MAX_DATA_WORDS);
        let data = bytes
            .get(..n.saturating_mul(usize::from(word_size)))
            .ok_or(Error::FreDataPastEnd)?;
        for (w, c) in words
            .iter_mut()
            .zip(data.chunks_exact(usize::from(word_size)))
        {
            *w = le_i32(c).ok_or(Error::FreDataPastEnd)?;
        }
        Ok(RawFre {
            start,
            info,
            size,
            count,
            word_size,
            words,
        })
    }

    /// Bytes taken by the data words of an FRE with this info byte.
    pub(crate) fn data_len(info: u8) -> Result<usize, Error> {
        let count = usize::from(Self::count_of(info));
        if count > MAX_DATA_WORDS {
            return Err(Error::BadDataWordCount);
        }
        count
            .checked_mul(usize::from(Self::word_size_of(info)?))
            .ok_or(Error::BadDataWordCount)
    }

    fn count_of(info: u8) -> u8 {
        (info & 0x1e) / 2
    }

    fn word_size_of(info: u8) -> Result<u8, Error> {
        match (info & 0x60) / 0x20 {
            0 => Ok(1),
            1 => Ok(2),
            2 => Ok(4),
            _ => Err(Error::BadDataWordSize),
        }
    }

    /// CFA base bit of a default FRE: true for SP, false for FP.
    pub fn cfa_base_is_sp(&self) -> bool {
        self.info & 1 != 0
    }

    /// AArch64: the return address is signed (mangled) in this row.
    pub fn ra_mangled(&self) -> bool {
        self.info & 0x80 != 0
    }

    /// Number of data words.
    pub fn count(&self) -> usize {
        usize::from(self.count)
    }

    /// Size in bytes of each data word (1, 2 or 4).
    pub fn word_size(&self) -> u8 {
        self.word_size
    }

    /// Data word `i` as an unsigned value (control words).
    pub fn uword(&self, i: usize) -> Option<u32> {
        let w = u32::from_ne_bytes(self.word(i)?.to_ne_bytes());
        Some(match self.word_size {
            1 => w & 0xff,
            2 => w & 0xffff,
            _ => w,
        })
    }

    /// Data word `i` sign-extended (offsets).
    pub fn word(&self, i: usize) -> Option<i32> {
        if i >= self.count() {
            return None;
        }
        self.words.get(i).copied()
    }
}

/// A register the unwinder reads: the stack pointer, the frame pointer, or
/// another register by DWARF number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The stack pointer.
    Sp,
    /// The frame pointer.
    Fp,
    /// Another register, by DWARF number (flexible FDEs only).
    Reg(u16),
}

/// How to compute the Canonical Frame Address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfaRule {
    /// Register the CFA is computed from.
    pub base: Base,
    /// Offset added to the register.
    pub offset: i32,
    /// If set, CFA = *(base + offset) (a realigned stack / DRAP); otherwise
    /// CFA = base + offset.
    pub deref: bool,
}

/// How to recover the caller's value of a register (RA or FP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegRule {
    /// Not saved: the register still holds the caller's value (e.g. FP not
    /// yet pushed, or AArch64 RA still in the link register).
    SameValue,
    /// Saved on the stack: value = *(CFA + offset).
    CfaOffset(i32),
    /// No caller: this is the outermost frame.
    Undefined,
    /// Flexible FDE rule: value = base + offset, or *(base + offset) if
    /// `deref` is set.
    Reg {
        /// Register the value is computed from.
        base: Base,
        /// Offset added to the register.
        offset: i32,
        /// Whether to load from the computed address.
        deref: bool,
    },
}

/// The unwind rule for one PC: what [`Section::find`](crate::Section::find)
/// returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// How to compute the CFA. Meaningless when `outermost` is set.
    pub cfa: CfaRule,
    /// How to recover the return address.
    pub ra: RegRule,
    /// How to recover the caller's frame pointer.
    pub fp: RegRule,
    /// The function is a signal trampoline (V3 FDE attribute).
    pub signal_frame: bool,
    /// This is the outermost frame: there is no caller (RA undefined).
    pub outermost: bool,
    /// AArch64: the return address is signed in this row.
    pub ra_mangled: bool,
    /// Absolute start address of the function.
    pub func_start: u64,
    /// Size of the function in bytes.
    pub func_size: u32,
    /// Start offset of the matching FRE (within the function, or within the
    /// repetition block of a PC-mask FDE).
    pub fre_start: u32,
}

/// Control word of a flexible FRE.
struct Ctrl {
    reg_p: bool,
    deref: bool,
    regnum: u16,
}

impl Ctrl {
    fn decode(w: u32) -> Result<Ctrl, Error> {
        if w & 0x4 != 0 {
            return Err(Error::BadControlWord);
        }
        let regnum = u16::try_from(w / 8).map_err(|_| Error::RegisterTooLarge)?;
        Ok(Ctrl {
            reg_p: w & 1 != 0,
            deref: w & 2 != 0,
            regnum,
        })
    }

    fn rule(&self, abi: Abi, offset: i32) -> Result<RegRule, Error> {
        if self.reg_p {
            Ok(RegRule::Reg {
                base: abi.base_of(self.regnum),
                offset,
                deref: self.deref,
            })
        } else if self.deref && self.regnum == 0 {
            // CFA based: the value is saved at *(CFA + offset). (GNU as
            // 2.46+ encodes it so; reg_p = 0 with deref_p = 0 is the padding
            // word, and a register number without reg_p means nothing.)
            Ok(RegRule::CfaOffset(offset))
        } else {
            Err(Error::BadControlWord)
        }
    }
}

/// Rule for a register the FRE does not describe: the header's fixed offset
/// if there is one, else "not saved".
fn untracked(fixed: Option<i32>) -> RegRule {
    match fixed {
        Some(off) => RegRule::CfaOffset(off),
        None => RegRule::SameValue,
    }
}

/// Turn an FRE of `fde` into a row, applying the header's fixed offsets and
/// the ABI's register numbers.
#[inline]
pub(crate) fn decode_row(hdr: &Header, fde: &Fde, fre: &RawFre) -> Result<Row, Error> {
    let mut row = Row {
        cfa: CfaRule {
            base: Base::Sp,
            offset: 0,
            deref: false,
        },
        ra: RegRule::Undefined,
        fp: RegRule::SameValue,
        signal_frame: fde.signal_frame,
        outermost: false,
        ra_mangled: fre.ra_mangled(),
        func_start: fde.func_start,
        func_size: fde.func_size,
        fre_start: fre.start,
    };
    let count = fre.count();
    if count == 0 {
        // V2 and V3: an FRE without data words marks the outermost frame.
        if hdr.version == Version::V1 {
            return Err(Error::BadDataWordCount);
        }
        row.outermost = true;
        return Ok(row);
    }
    let w = |i: usize| fre.word(i).ok_or(Error::BadDataWordCount);
    let uw = |i: usize| fre.uword(i).ok_or(Error::BadDataWordCount);
    let used = match fde.fde_type {
        FdeType::Default => {
            row.cfa = CfaRule {
                base: if fre.cfa_base_is_sp() {
                    Base::Sp
                } else {
                    Base::Fp
                },
                offset: w(0)?,
                deref: false,
            };
            let mut i = 1;
            row.ra = match hdr.fixed_ra_offset() {
                Some(off) => RegRule::CfaOffset(off),
                None if count > i => {
                    let off = w(i)?;
                    i = 2;
                    // An RA offset of 0 is padding: FP saved, RA not.
                    if off == 0 {
                        RegRule::SameValue
                    } else {
                        RegRule::CfaOffset(off)
                    }
                }
                None => RegRule::SameValue,
            };
            row.fp = match hdr.fixed_fp_offset() {
                Some(off) => RegRule::CfaOffset(off),
                None if count > i => {
                    let off = w(i)?;
                    i = i.saturating_add(1);
                    RegRule::CfaOffset(off)
                }
                None => RegRule::SameValue,
            };
            i
        }
        FdeType::Flex => {
            let cfa = Ctrl::decode(uw(0)?)?;
            if !cfa.reg_p {
                return Err(Error::BadCfaBase);
            }
            row.cfa = CfaRule {
                base: hdr.abi.base_of(cfa.regnum),
                offset: w(1)?,
                deref: cfa.deref,
            };
            let mut i = 2;
            row.ra = untracked(hdr.fixed_ra_offset());
            let mut padded = false;
            if count > 2 {
                let ctl = uw(2)?;
                if ctl == 0 {
                    // Padding: RA not described, FP follows.
                    padded = true;
                    i = 3;
                } else {
                    row.ra = Ctrl::decode(ctl)?.rule(hdr.abi, w(3)?)?;
                    i = 4;
                }
            }
            row.fp = untracked(hdr.fixed_fp_offset());
            if count > i {
                let ctl = Ctrl::decode(uw(i)?)?;
                row.fp = ctl.rule(hdr.abi, w(i.saturating_add(1))?)?;
                i = i.saturating_add(2);
            } else if padded {
                // Trailing padding is not a defined encoding.
                return Err(Error::BadDataWordCount);
            }
            i
        }
    };
    if used != count {
        return Err(Error::BadDataWordCount);
    }
    Ok(row)
}

/// An [`Fde`] as a consumer keeps it in its own memory once the section is
/// validated, so that a lookup searches the functions without reading the
/// section again: 20 bytes, the start relative to a base address (the
/// start of the text the section describes), the rest as decoded. Built
/// only by [`Fde::pack`] from a decoded FDE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedFde {
    start: u32,
    size: u32,
    fres_off: u32,
    num_fres: u16,
    /// `info`, `info2` and `rep_size`, raw.
    info: [u8; 3],
}

impl PackedFde {
    /// Start of the function, relative to the base it was packed with.
    #[inline]
    pub fn start(&self) -> u32 {
        self.start
    }

    /// End of the function (exclusive), relative to the same base.
    #[inline]
    pub fn end(&self) -> u64 {
        u64::from(self.start).saturating_add(u64::from(self.size))
    }

    /// Whether the function is a signal trampoline (see
    /// [`Fde::signal_frame`]), in a section of `version`.
    #[inline]
    pub fn signal_frame(&self, version: Version) -> bool {
        signal_frame(version, self.info[0])
    }

    /// How its rows' start offsets are matched against a PC.
    #[inline]
    pub fn pc_type(&self) -> PcType {
        PcType::from_info(self.info[0])
    }

    /// [`Fde::row_offset`] for a PC `off` bytes above the base the FDE was
    /// packed with: where it is among the function's rows.
    #[inline]
    pub fn row_offset(&self, off: u64) -> Result<u32, Error> {
        let off = off
            .checked_sub(u64::from(self.start))
            .and_then(|off| u32::try_from(off).ok())
            .filter(|&off| off < self.size)
            .ok_or(Error::NotCovered)?;
        let [info, _, rep_size] = self.info;
        PcType::from_info(info).row_offset(off, rep_size)
    }

    /// The FDE again, as [`Section::fde`](crate::Section::fde) of a
    /// section of `version` gave it for index `index`, the start made
    /// absolute with `base`. Fails only if `base` is not the one it was
    /// packed with and the function end overflows.
    pub fn unpack(&self, version: Version, base: u64, index: u32) -> Result<Fde, Error> {
        let func_start = base
            .checked_add(u64::from(self.start))
            .ok_or(Error::AddressOverflow)?;
        Fde::from_fields(
            version,
            index,
            func_start,
            self.size,
            self.fres_off,
            u32::from(self.num_fres),
            self.info,
        )
    }
}

/// A row as a consumer keeps it decoded in its own memory once the section
/// is validated, so that a lookup takes it as it is, with neither a read
/// nor a decode of the FRE: 8 bytes, the FRE's start offset and the rules
/// of the rows real code has (the CFA at an offset from SP or FP that fits
/// 16 bits, in bytes or in 8-byte words (a stack frame of up to 256 KiB);
/// the return address where the header's fixed offset puts it (AArch64,
/// which has none: at CFA - 8, or in the word above the saved frame
/// pointer, as a frame record `{x29, x30}` keeps it), not saved, or
/// undefined, signed or not; the frame pointer not saved or saved within
/// 128 bytes of the CFA). A row that needs more packs as not decoded
/// ([`PackedRow::is_decoded`]): its FRE must be read again. Built only by
/// [`PackedRow::pack`]; [`PackedRow::find`] looks a PC up among a
/// function's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedRow {
    start: u32,
    cfa_off: i16,
    fp_off: i8,
    /// `ROW_*`.
    flags: u8,
}

/// The row is decoded; else only its start is kept.
const ROW_DECODED: u8 = 1 << 0;
/// The CFA is based on FP (else on SP).
const ROW_CFA_FP: u8 = 1 << 1;
/// The caller's FP is saved at CFA + `fp_off` (else not saved).
const ROW_FP_SAVED: u8 = 1 << 2;
/// Where the return address is, bits 3-4: one of the four below.
const ROW_RA: u8 = 3 << 3;
/// At the header's fixed offset from the CFA, or at CFA - 8 in a section
/// that has none ([`default_ra_offset`]).
const ROW_RA_DEFAULT: u8 = 0;
/// Undefined: the outermost frame.
const ROW_RA_UNDEFINED: u8 = 1 << 3;
/// Not saved.
const ROW_RA_SAME: u8 = 2 << 3;
/// In the word above the saved frame pointer, at CFA + `fp_off` + 8.
const ROW_RA_ABOVE_FP: u8 = 3 << 3;
/// The row marks the outermost frame.
const ROW_OUTERMOST: u8 = 1 << 5;
/// `cfa_off` counts 8-byte words (else bytes).
const ROW_CFA_WORDS: u8 = 1 << 6;
/// The return address is signed (AArch64's mangled RA).
const ROW_RA_MANGLED: u8 = 1 << 7;

/// Where [`ROW_RA_DEFAULT`] puts the return address, from the CFA.
fn default_ra_offset(hdr: &Header) -> i32 {
    hdr.fixed_ra_offset().unwrap_or(-8)
}

impl PackedRow {
    /// `row`, the row of the FRE starting at `start` of a function of a
    /// section with header `hdr`, packed: decoded if its rules fit.
    pub fn pack(hdr: &Header, start: u32, row: &Row) -> PackedRow {
        let undecoded = PackedRow {
            start,
            cfa_off: 0,
            fp_off: 0,
            flags: 0,
        };
        let mut flags = ROW_DECODED;
        match row.cfa.base {
            Base::Sp => {}
            Base::Fp => flags |= ROW_CFA_FP,
            Base::Reg(_) => return undecoded,
        }
        let cfa_off = match i16::try_from(row.cfa.offset) {
            Ok(off) => off,
            // A large frame's CFA offset: in words, if it is whole words.
            Err(_) if row.cfa.offset % 8 == 0 => match i16::try_from(row.cfa.offset / 8) {
                Ok(words) => {
                    flags |= ROW_CFA_WORDS;
                    words
                }
                Err(_) => return undecoded,
            },
            Err(_) => return undecoded,
        };
        let fp_off = match row.fp {
            RegRule::SameValue => None,
            RegRule::CfaOffset(off) => match i8::try_from(off) {
                Ok(off) => {
                    flags |= ROW_FP_SAVED;
                    Some(off)
                }
                Err(_) => return undecoded,
            },
            _ => return undecoded,
        };
        let above_fp = fp_off.and_then(|off| i32::from(off).checked_add(8));
        flags |= match row.ra {
            RegRule::CfaOffset(off) if off == default_ra_offset(hdr) => ROW_RA_DEFAULT,
            RegRule::CfaOffset(off) if hdr.fixed_ra_offset().is_none() && above_fp == Some(off) => {
                ROW_RA_ABOVE_FP
            }
            RegRule::Undefined => ROW_RA_UNDEFINED,
            RegRule::SameValue => ROW_RA_SAME,
            _ => return undecoded,
        };
        if row.outermost {
            flags |= ROW_OUTERMOST;
        }
        if row.ra_mangled {
            flags |= ROW_RA_MANGLED;
        }
        if row.cfa.deref {
            return undecoded;
        }
        PackedRow {
            start,
            cfa_off,
            fp_off: fp_off.unwrap_or(0),
            flags,
        }
    }

    /// Start offset of the FRE (within the function, or within the
    /// repetition block of a [`PcType::Mask`] FDE).
    #[inline]
    pub fn start(&self) -> u32 {
        self.start
    }

    /// Whether the row is kept decoded, not only its start.
    #[inline]
    pub fn is_decoded(&self) -> bool {
        self.flags & ROW_DECODED != 0
    }

    /// The row again, as [`Section::find_row`](crate::Section::find_row)
    /// gives it for a PC of `fde` in a section with header `hdr`; `None`
    /// if it is not decoded.
    pub fn unpack(&self, hdr: &Header, fde: &Fde) -> Option<Row> {
        if !self.is_decoded() {
            return None;
        }
        let f = self.flags;
        let ra = match f & ROW_RA {
            ROW_RA_UNDEFINED => RegRule::Undefined,
            ROW_RA_SAME => RegRule::SameValue,
            ROW_RA_ABOVE_FP => RegRule::CfaOffset(self.fp_offset()?.checked_add(8)?),
            _ => RegRule::CfaOffset(default_ra_offset(hdr)),
        };
        Some(Row {
            cfa: CfaRule {
                base: if f & ROW_CFA_FP != 0 {
                    Base::Fp
                } else {
                    Base::Sp
                },
                offset: self.cfa_offset(),
                deref: false,
            },
            ra,
            fp: self
                .fp_offset()
                .map_or(RegRule::SameValue, RegRule::CfaOffset),
            signal_frame: fde.signal_frame,
            outermost: f & ROW_OUTERMOST != 0,
            ra_mangled: f & ROW_RA_MANGLED != 0,
            func_start: fde.func_start,
            func_size: fde.func_size,
            fre_start: self.start,
        })
    }

    /// The CFA's offset from its base register, in bytes.
    #[inline]
    fn cfa_offset(&self) -> i32 {
        if self.flags & ROW_CFA_WORDS != 0 {
            i32::from(self.cfa_off).saturating_mul(8)
        } else {
            i32::from(self.cfa_off)
        }
    }

    /// Where the caller's FP is saved, from the CFA; `None`: not saved.
    #[inline]
    fn fp_offset(&self) -> Option<i32> {
        (self.flags & ROW_FP_SAVED != 0).then_some(i32::from(self.fp_off))
    }

    /// The row of a PC `off` bytes above the base `fde` was packed with,
    /// among `rows`, the function's rows packed in order, by binary
    /// search; [`Error::NotCovered`] if the PC is not in the function or
    /// lies before its first row, as in
    /// [`Section::find_row`](crate::Section::find_row). The row may not be
    /// decoded ([`PackedRow::is_decoded`]): its FRE must then be read.
    #[inline]
    pub fn find(rows: &[PackedRow], fde: &PackedFde, off: u64) -> Result<PackedRow, Error> {
        let ip_off = fde.row_offset(off)?;
        let i = rows
            .partition_point(|r| r.start <= ip_off)
            .checked_sub(1)
            .ok_or(Error::NotCovered)?;
        rows.get(i).copied().ok_or(Error::NotCovered)
    }
}
