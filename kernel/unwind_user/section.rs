// SPDX-License-Identifier: GPL-2.0

//! A section and its table: the text a section describes and where it
//! lives ([`Section`]), and what validation kept of it in kernel memory
//! ([`SectionTable`]), which every registration of the section shares and every
//! lookup searches.

use crate::{
    elf::Placed,
    memory::{gfp, Account, Charge},
    usual::{TextCode, UsualRows},
};
use kernel::{alloc::KVVec, prelude::*, sync::Arc};

/// One registered section: the text it describes and where it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Section {
    /// First byte of the code the section describes.
    pub(crate) text_start: usize,
    /// One past the last byte of that code.
    pub(crate) text_end: usize,
    /// User address of the `.sframe` section.
    pub(crate) sframe_start: usize,
    /// Address the section's own addresses are relative to: where it
    /// would sit if loaded with its object. `sframe_start`, except for a
    /// section kept outside the object (`UNWIND_USER_SFRAME_F_ADDR`).
    pub(crate) sframe_addr: usize,
    /// Its size in bytes, at most
    /// [`MAX_SECTION_SIZE`](crate::registry::MAX_SECTION_SIZE).
    pub(crate) sframe_len: u32,
    /// The section's bytes are in kernel memory (a file's table,
    /// `file_table.rs`, or the vDSO's), not in the address space:
    /// `sframe_start` is 0 and unmapping no range of the address space but
    /// the text's drops the registration.
    pub(crate) in_kernel: bool,
}

impl Section {
    /// Is `pc` in the text?
    #[inline(always)]
    pub(crate) fn contains(&self, pc: usize) -> bool {
        self.text_start <= pc && pc < self.text_end
    }

    pub(crate) fn overlaps(&self, start: usize, end: usize) -> bool {
        self.text_start < end && start < self.text_end
    }

    /// The registration of a section in kernel memory (a file's table, the
    /// vDSO's), `sframe_len` bytes relative to `sframe_addr` at link time,
    /// for its text placed at `text`.
    pub(crate) fn in_kernel_memory(
        text: &Placed,
        sframe_addr: u64,
        sframe_len: u32,
    ) -> Option<Section> {
        Some(Section {
            text_start: text.start,
            text_end: text.end,
            sframe_start: 0,
            sframe_addr: usize::try_from(sframe_addr.wrapping_add(text.bias)).ok()?,
            sframe_len,
            in_kernel: true,
        })
    }

    /// Does unmapping `[start, end)` take away the text or the section?
    pub(crate) fn unmapped_by(&self, start: usize, end: usize) -> bool {
        let sframe_end = self.sframe_start.saturating_add(self.sframe_len as usize);
        self.overlaps(start, end)
            || (!self.in_kernel && self.sframe_start < end && start < sframe_end)
    }
}

/// Every how many rows of a function registration keeps a mark
/// ([`sframe::FreMark`]) where a lookup may start: a lookup then reads at
/// most this many rows, however many the function has (up to 65535).
pub(crate) const FRE_MARK_EVERY: u32 = 16;

/// A mark of the rows of function `fde` of a section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FreMark {
    /// Index of the function in the section.
    pub(crate) fde: u32,
    /// Where its rows may be walked from.
    pub(crate) mark: sframe::FreMark,
}

/// What registration validated, kept in kernel memory so that no unwind
/// reads it again: the section's header, its FDEs, packed and sorted by
/// start, and marks of the rows of its largest functions. A lookup
/// binary-searches them here; only the function's FRE bytes are read from
/// the section, at most [`FRE_MARK_EVERY`] rows of them, and checked as
/// they are read: from the address space, or for a section in kernel
/// memory (a file's table, the vDSO's) from the copy kept here. Such a
/// section's rows are kept decoded too: a lookup then takes its row as it
/// is, by binary search, and reads the section only for a row that did not
/// fit ([`sframe::PackedRow`]), if any.
pub(crate) struct SectionTable {
    header: sframe::Header,
    packed: KVVec<sframe::PackedFde>,
    /// Sorted by function, then by start.
    marks: KVVec<FreMark>,
    /// Every row, by function, then by start; empty for a registration,
    /// whose rows stay in user memory.
    rows: KVVec<sframe::PackedRow>,
    /// Index in `rows` of the first row of each function of `packed`.
    row_first: KVVec<u32>,
    /// The section itself, for a section in kernel memory some of whose
    /// rows are not decoded.
    section: Option<KVVec<u8>>,
    /// Its usual rows again, flattened for the cold step; empty for a
    /// registration.
    usual: UsualRows,
    /// A file's table's bytes, counted against the machine's budget of
    /// file tables while the table lives, wherever it is shared.
    charge: Option<Charge>,
    /// The table of the kernel's own code (the vDSO's), registered in every
    /// registry: not counted as the process's.
    kernel_code: bool,
}

impl SectionTable {
    /// The table of a section with `header`, its FDEs `packed` (in address
    /// order, relative to the text start) and the `marks` of their rows (by
    /// function, then start).
    pub(crate) fn from_parts(
        header: sframe::Header,
        packed: KVVec<sframe::PackedFde>,
        marks: KVVec<FreMark>,
    ) -> SectionTable {
        SectionTable {
            header,
            packed,
            marks,
            rows: KVVec::new(),
            row_first: KVVec::new(),
            section: None,
            usual: UsualRows::new(),
            charge: None,
            kernel_code: false,
        }
    }

    /// [`SectionTable::from_parts`], shared (for the KUnit tests).
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn new(
        header: sframe::Header,
        packed: KVVec<sframe::PackedFde>,
        marks: KVVec<FreMark>,
    ) -> Result<Arc<SectionTable>> {
        SectionTable::from_parts(header, packed, marks).shared()
    }

    /// The table, keeping the section's `rows`, the first of each function
    /// at its index in `row_first`, and its usual rows flattened, for the
    /// text whose code is `code`.
    pub(crate) fn with_rows(
        mut self,
        row_first: KVVec<u32>,
        rows: KVVec<sframe::PackedRow>,
        code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
    ) -> Result<SectionTable> {
        self.usual = UsualRows::build(&self.header, &self.packed, &row_first, &rows, code)?;
        self.row_first = row_first;
        self.rows = rows;
        Ok(self)
    }

    /// The table, keeping `section`, the bytes it was validated from.
    pub(crate) fn with_section(mut self, section: KVVec<u8>) -> SectionTable {
        self.section = Some(section);
        self
    }

    /// The table, its bytes counted against the machine's budget of file
    /// tables until it is freed, and if `user` against the part of it for
    /// files root does not own and `payer`'s share of that; `ENOSPC` past
    /// any.
    pub(crate) fn charge_files(
        mut self,
        user: bool,
        payer: Option<Arc<Account>>,
    ) -> Result<SectionTable> {
        self.charge = Some(Charge::new(self.bytes(), user, payer)?);
        Ok(self)
    }

    /// The table, of the kernel's own code.
    pub(crate) fn for_kernel_code(mut self) -> SectionTable {
        self.kernel_code = true;
        self
    }

    /// Is it the table of the kernel's own code?
    pub(crate) fn is_kernel_code(&self) -> bool {
        self.kernel_code
    }

    /// The section's header, as validation checked it.
    pub(crate) fn header(&self) -> sframe::Header {
        self.header
    }

    /// Its usual rows, flattened for the cold step.
    pub(crate) fn usual(&self) -> &UsualRows {
        &self.usual
    }

    /// The section's bytes, if kept in kernel memory for rows that were
    /// not decoded.
    pub(crate) fn section(&self) -> Option<&KVVec<u8>> {
        self.section.as_ref()
    }

    /// The table, to be shared by registrations.
    pub(crate) fn shared(self) -> Result<Arc<SectionTable>> {
        Ok(Arc::new(self, gfp())?)
    }

    /// Kernel memory the table takes, as counted against
    /// [`MAX_FDE_BYTES`](crate::registry::MAX_FDE_BYTES)
    /// (and a file's table against the machine's budget).
    pub(crate) fn bytes(&self) -> usize {
        self.packed.len() * core::mem::size_of::<sframe::PackedFde>()
            + self.marks.len() * core::mem::size_of::<FreMark>()
            + self.rows.len() * core::mem::size_of::<sframe::PackedRow>()
            + self.row_first.len() * core::mem::size_of::<u32>()
            + self.section.as_ref().map_or(0, |s| s.len())
            + self.usual.bytes()
    }

    /// What the table knows of the row of the PC `off` bytes into the text,
    /// without reading the section: the one question a lookup asks it.
    pub(crate) fn answer(&self, off: u64) -> Answer {
        let fde = self.find(off);
        let known = fde.map_or(KnownRow::Read, |(i, f)| self.known_row(i, &f, off));
        let mark = match known {
            KnownRow::Read => fde.and_then(|(i, f)| self.mark(i, &f, off)),
            KnownRow::Row(_) | KnownRow::Uncovered => None,
        };
        Answer { fde, mark, known }
    }

    /// The FDE whose function contains `off` (from the text start), and its
    /// index.
    fn find(&self, off: u64) -> Option<(u32, sframe::PackedFde)> {
        let i = self
            .packed
            .partition_point(|f| u64::from(f.start()) <= off)
            .checked_sub(1)?;
        let f = *self.packed.get(i)?;
        (off < f.end()).then_some((u32::try_from(i).ok()?, f))
    }

    /// The last mark of the rows of function `i` (`f`) at or below `off`,
    /// where a read of its rows may start.
    fn mark(&self, i: u32, f: &sframe::PackedFde, off: u64) -> Option<sframe::FreMark> {
        // In the function, so within 4 GiB of its start.
        let ip_off = u32::try_from(off.checked_sub(u64::from(f.start()))?).ok()?;
        self.marks
            .partition_point(|m| (m.fde, m.mark.start) <= (i, ip_off))
            .checked_sub(1)
            .and_then(|k| self.marks.get(k))
            .filter(|m| m.fde == i)
            .map(|m| m.mark)
    }

    /// The row of a PC `off` bytes into the text, in function `i` (`f`),
    /// as the rows kept decoded say.
    fn known_row(&self, i: u32, f: &sframe::PackedFde, off: u64) -> KnownRow {
        let first = |k: usize| self.row_first.get(k).map(|&r| r as usize);
        let Some(lo) = first(i as usize) else {
            return KnownRow::Read;
        };
        let hi = first(i as usize + 1).unwrap_or(self.rows.len());
        let Some(rows) = self.rows.get(lo..hi) else {
            return KnownRow::Read;
        };
        match sframe::PackedRow::find(rows, f, off) {
            Ok(row) if row.is_decoded() => KnownRow::Row(row),
            Err(sframe::Error::NotCovered) => KnownRow::Uncovered,
            Ok(_) | Err(_) => KnownRow::Read,
        }
    }
}

/// What a table knows of the row of one PC without reading the section
/// ([`SectionTable::answer`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Answer {
    /// The function containing the PC, if any: (its index, its FDE).
    pub(crate) fde: Option<(u32, sframe::PackedFde)>,
    /// Where a read of that function's rows may start for the PC.
    pub(crate) mark: Option<sframe::FreMark>,
    /// The PC's row, if the table keeps it decoded.
    pub(crate) known: KnownRow,
}

/// What a lookup knows of the row of a PC in a function without reading
/// the section.
#[derive(Clone, Copy, Debug)]
pub(crate) enum KnownRow {
    /// Its row, as validation packed it (decoded: [`Found::known_row`]).
    Row(sframe::PackedRow),
    /// No row describes the PC: it lies before its function's first row.
    Uncovered,
    /// To be read from the section: a registration's rows, or a row that
    /// did not fit.
    Read,
}

/// What the unwinder's KUnit tests share: a section and registrations.
#[cfg(CONFIG_KUNIT = "y")]
pub(crate) mod fixtures {
    use super::*;
    use kernel::{alloc::KVVec, error::code::EINVAL};

    /// A V2 section at 0x10000 (`sframe_addr`) for one function at
    /// 0x11000, 0x20 bytes: entry, after `push %rbp`, after
    /// `mov %rsp,%rbp`, at `ret`. Written by `rust/sframe/encode`, as are
    /// the others.
    #[cfg(target_arch = "x86_64")]
    #[rustfmt::skip]
    pub(crate) const TEST_SECTION: [u8; 62] = [
        0xe2, 0xde, 2, 1,
        3, 0, 0xf8, 0,
        1, 0, 0, 0, 4, 0, 0, 0, 14, 0, 0, 0,
        0, 0, 0, 0, 20, 0, 0, 0,
        0x00, 0x10, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
        0x00, 0x03, 0x08,
        0x01, 0x05, 0x10, 0xf0,
        0x04, 0x04, 0x10, 0xf0,
        0x1f, 0x03, 0x08,
    ];

    /// A V3 section at 0x10000: [`TEST_SECTION`]'s function at 0x11000,
    /// then a signal trampoline at 0x11020, 0x10 bytes (the FDE's
    /// signal-frame bit), whose one row (CFA = SP + 8) would be a usual
    /// one in any other function (`FdeSpec::new()`, `FDE_SIGNAL_FRAME`).
    #[cfg(target_arch = "x86_64")]
    #[rustfmt::skip]
    pub(crate) const TEST_SECTION_V3_SIGNAL: [u8; 87] = [
        0xe2, 0xde, 3, 5,
        3, 0, 0xf8, 0,
        2, 0, 0, 0, 5, 0, 0, 0, 0x1b, 0, 0, 0,
        0, 0, 0, 0, 32, 0, 0, 0,
        0xe4, 0x0f, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0,
        0xf4, 0x0f, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x13, 0, 0, 0,
        4, 0, 0x00, 0, 0,
        0x00, 0x03, 0x08,
        0x01, 0x05, 0x10, 0xf0,
        0x04, 0x04, 0x10, 0xf0,
        0x1f, 0x03, 0x08,
        1, 0, 0x80, 0, 0,
        0x00, 0x03, 0x08,
    ];

    /// [`TEST_SECTION`] in the AArch64 ABI: the same rows, each saying
    /// that the return address is at CFA - 8 (AArch64 has no fixed
    /// place for it), so that the tests expect the same frames.
    #[cfg(target_arch = "aarch64")]
    #[rustfmt::skip]
    pub(crate) const TEST_SECTION: [u8; 66] = [
        0xe2, 0xde, 2, 1,
        2, 0, 0, 0,
        1, 0, 0, 0, 4, 0, 0, 0, 18, 0, 0, 0,
        0, 0, 0, 0, 20, 0, 0, 0,
        0x00, 0x10, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
        0x00, 0x05, 0x08, 0xf8,
        0x01, 0x07, 0x10, 0xf8, 0xf0,
        0x04, 0x06, 0x10, 0xf8, 0xf0,
        0x1f, 0x05, 0x08, 0xf8,
    ];

    /// [`TEST_SECTION_V3_SIGNAL`] in the AArch64 ABI, as above.
    #[cfg(target_arch = "aarch64")]
    #[rustfmt::skip]
    pub(crate) const TEST_SECTION_V3_SIGNAL: [u8; 92] = [
        0xe2, 0xde, 3, 5,
        2, 0, 0, 0,
        2, 0, 0, 0, 5, 0, 0, 0, 0x20, 0, 0, 0,
        0, 0, 0, 0, 32, 0, 0, 0,
        0xe4, 0x0f, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0,
        0xf4, 0x0f, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x17, 0, 0, 0,
        4, 0, 0x00, 0, 0,
        0x00, 0x05, 0x08, 0xf8,
        0x01, 0x07, 0x10, 0xf8, 0xf0,
        0x04, 0x06, 0x10, 0xf8, 0xf0,
        0x1f, 0x05, 0x08, 0xf8,
        1, 0, 0x80, 0, 0,
        0x00, 0x05, 0x08, 0xf8,
    ];

    /// The header of [`TEST_SECTION`].
    pub(crate) fn header() -> Result<sframe::Header> {
        let s = sframe::Section::new(&TEST_SECTION[..], TEST_SECTION.len() as u32, 0x10000);
        s.map(|s| *s.header()).map_err(|_| EINVAL)
    }

    /// A row with these rules, of no signal trampoline, not outermost.
    pub(crate) fn row(
        cfa: sframe::CfaRule,
        ra: sframe::RegRule,
        fp: sframe::RegRule,
    ) -> sframe::Row {
        sframe::Row {
            cfa,
            ra,
            fp,
            signal_frame: false,
            outermost: false,
            ra_mangled: false,
            func_start: 0x1000,
            func_size: 0x20,
            fre_start: 0,
        }
    }

    /// A table without functions, for registry tests.
    pub(crate) fn none() -> Result<Arc<SectionTable>> {
        SectionTable::new(header()?, KVVec::new(), KVVec::new())
    }

    /// A registration of `len` bytes of text at `text_start`.
    pub(crate) fn sec(text_start: usize, len: usize) -> Section {
        Section {
            text_start,
            text_end: text_start + len,
            sframe_start: 0x7000_0000 + text_start,
            sframe_addr: 0x7000_0000 + text_start,
            sframe_len: 64,
            in_kernel: false,
        }
    }
}
