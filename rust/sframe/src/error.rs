// SPDX-License-Identifier: GPL-2.0

//! The decoder's error type: one variant per failed check.

use core::fmt;

/// Why a lookup or a check failed.
///
/// Every check the decoder makes has its own variant, so that a fuzzer, a test
/// or a kernel log line can say exactly which rule the section broke.
/// [`Error::NotCovered`] and [`Error::Read`] are not faults of the section
/// (see [`Error::is_malformed`]); every other variant is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// No function descriptor covers the address, or the address lies before
    /// the first row of its function. Not an error of the section: the
    /// caller may fall back to another unwinder.
    NotCovered,
    /// The [`Reader`](crate::Reader) could not supply the bytes (e.g. a user
    /// page fault). Not an error of the section.
    Read,

    /// The section is shorter than the fixed 28-byte header.
    TruncatedHeader,
    /// The magic number is neither 0xdee2 nor its byte-swapped form.
    BadMagic,
    /// The magic number is byte-swapped: the section was written for a target
    /// of the other endianness. Only little-endian sections are decoded.
    ForeignEndian,
    /// The version byte is not 1, 2 or 3.
    UnsupportedVersion(u8),
    /// The ABI/arch byte names no ABI this decoder knows (AMD64 and AArch64
    /// little-endian are decoded).
    UnsupportedAbi(u8),
    /// The ABI/arch byte names a big-endian ABI (AArch64 BE, s390x) although
    /// the magic number reads little-endian.
    AbiEndianMismatch(u8),
    /// A flag bit is set that the section's version does not define.
    UnknownFlags(u8),
    /// The auxiliary header runs past the end of the section.
    AuxHeaderPastEnd,
    /// The function descriptor array runs past the end of the section.
    FdeAreaPastEnd,
    /// The frame row entry sub-section runs past the end of the section.
    FreAreaPastEnd,
    /// The function descriptor array and the FRE sub-section overlap.
    AreasOverlap,
    /// A header count cannot fit in the bytes the section gives it (more FREs
    /// than the FRE sub-section can hold, more FDEs than the FDE area, or
    /// more than [`MAX_FRES_PER_FDE`](crate::MAX_FRES_PER_FDE) times the FDEs).
    CountTooLarge,

    /// An FDE index at or past the number of FDEs was asked for.
    FdeIndexOutOfRange,
    /// A V3 function attribute record lies (partly) outside the FRE sub-section.
    FdeAttrPastEnd,
    /// The FDE's FRE type (start address width) is not 0, 1 or 2.
    BadFreType(u8),
    /// The V3 FDE type is neither default (0) nor flexible (1).
    BadFdeType(u8),
    /// An FDE has more FREs than the header has in all, or more than
    /// [`MAX_FRES_PER_FDE`](crate::MAX_FRES_PER_FDE).
    FdeFreCountTooLarge,
    /// A function start address or end address does not fit in 64 bits.
    AddressOverflow,
    /// Function start addresses are not in ascending order.
    FdesUnsorted,
    /// A function starts before the previous one ends.
    FdesOverlap,
    /// A PC-mask FDE has a repetition block size of zero.
    ZeroRepSize,
    /// A PC-mask FDE's repetition block is larger than the function.
    BadRepSize,
    /// The FDEs' FRE counts do not add up to the header's FRE count.
    FreCountMismatch,

    /// An FRE lies (partly) outside the FRE sub-section.
    FreDataPastEnd,
    /// FRE start offsets in a function are not strictly increasing.
    FreOutOfOrder,
    /// A walk started from an [`FreMark`](crate::FreMark) that does not
    /// match the bytes (they changed since it was made), or that is past
    /// the PC looked up.
    FreMarkMismatch,
    /// An FRE starts past the end of its function.
    FrePastFunction,
    /// An FRE of a PC-mask FDE starts at or past the repetition block size,
    /// so it could never match.
    FrePastRepBlock,
    /// An FRE's data word size field is 3 (undefined).
    BadDataWordSize,
    /// An FRE has a number of data words its FDE type and ABI cannot use.
    BadDataWordCount,
    /// A flexible FRE's CFA rule is not register based.
    BadCfaBase,
    /// A flexible FRE's control word has reserved bits set, or describes a
    /// CFA-based rule other than "saved at CFA + offset".
    BadControlWord,
    /// A flexible FRE names a DWARF register number above 65535.
    RegisterTooLarge,
}

impl Error {
    /// Whether the error says the section's contents are wrong or unusable
    /// (true for every variant except [`Error::NotCovered`] and
    /// [`Error::Read`]). A kernel would drop such a section.
    pub fn is_malformed(&self) -> bool {
        !matches!(self, Error::NotCovered | Error::Read)
    }

    /// A short, stable, lower-case name of the failed check, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Error::NotCovered => "not_covered",
            Error::Read => "read",
            Error::TruncatedHeader => "truncated_header",
            Error::BadMagic => "bad_magic",
            Error::ForeignEndian => "foreign_endian",
            Error::UnsupportedVersion(_) => "unsupported_version",
            Error::UnsupportedAbi(_) => "unsupported_abi",
            Error::AbiEndianMismatch(_) => "abi_endian_mismatch",
            Error::UnknownFlags(_) => "unknown_flags",
            Error::AuxHeaderPastEnd => "aux_header_past_end",
            Error::FdeAreaPastEnd => "fde_area_past_end",
            Error::FreAreaPastEnd => "fre_area_past_end",
            Error::AreasOverlap => "areas_overlap",
            Error::CountTooLarge => "count_too_large",
            Error::FdeIndexOutOfRange => "fde_index_out_of_range",
            Error::FdeAttrPastEnd => "fde_attr_past_end",
            Error::BadFreType(_) => "bad_fre_type",
            Error::BadFdeType(_) => "bad_fde_type",
            Error::FdeFreCountTooLarge => "fde_fre_count_too_large",
            Error::AddressOverflow => "address_overflow",
            Error::FdesUnsorted => "fdes_unsorted",
            Error::FdesOverlap => "fdes_overlap",
            Error::ZeroRepSize => "zero_rep_size",
            Error::BadRepSize => "bad_rep_size",
            Error::FreCountMismatch => "fre_count_mismatch",
            Error::FreDataPastEnd => "fre_data_past_end",
            Error::FreOutOfOrder => "fre_out_of_order",
            Error::FreMarkMismatch => "fre_mark_mismatch",
            Error::FrePastFunction => "fre_past_function",
            Error::FrePastRepBlock => "fre_past_rep_block",
            Error::BadDataWordSize => "bad_data_word_size",
            Error::BadDataWordCount => "bad_data_word_count",
            Error::BadCfaBase => "bad_cfa_base",
            Error::BadControlWord => "bad_control_word",
            Error::RegisterTooLarge => "register_too_large",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnsupportedVersion(v)
            | Error::UnsupportedAbi(v)
            | Error::AbiEndianMismatch(v)
            | Error::UnknownFlags(v)
            | Error::BadFreType(v)
            | Error::BadFdeType(v) => write!(f, "sframe: {} ({})", self.name(), v),
            _ => write!(f, "sframe: {}", self.name()),
        }
    }
}
