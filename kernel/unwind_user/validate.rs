// SPDX-License-Identifier: GPL-2.0

//! Validation: a section is validated in full, once, and what unwinds use
//! of it (the header, the FDEs, marks of large functions' rows) is kept in
//! kernel memory, as its table ([`SectionTable`]), for the registrations
//! that use it. Sections come from `prctl(PR_UNWIND_USER)`, from files
//! (`file_table.rs`) and from the vDSO (`vdso.rs`).

use crate::{
    memory,
    registry::MAX_FDE_BYTES,
    section::{FreMark, Section, SectionTable, FRE_MARK_EVERY},
    uapi::eopnotsupp,
    usermem,
    usual::TextCode,
};
use kernel::{
    alloc::{AllocError, KVVec},
    bindings,
    error::code::{EFAULT, EINTR, ENOSPC, ERANGE},
    ffi::c_int,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};
use sframe::Stopped;

/// Maps a decoder error found while validating a section to an errno:
/// `EFAULT` (unreadable), `EOPNOTSUPP` (a version, ABI or byte order this
/// kernel does not decode) or `EBADMSG` (malformed).
fn validation_errno(e: &sframe::Error) -> Error {
    match e {
        sframe::Error::Read => EFAULT,
        sframe::Error::UnsupportedVersion(_)
        | sframe::Error::UnsupportedAbi(_)
        | sframe::Error::AbiEndianMismatch(_)
        | sframe::Error::ForeignEndian => eopnotsupp(),
        // `kernel::error::code` has no EBADMSG.
        _ => Error::from_errno(-(bindings::EBADMSG as c_int)),
    }
}

/// Says why a registration was refused. User space can make that happen at
/// will, so at most one line every 5 seconds, from a budget of its own:
/// `printk_ratelimit()`'s is shared with the rest of the kernel, which a
/// process must not be able to silence.
pub(crate) fn refuse(why: &str, s: &Section, err: Error) -> Error {
    const INTERVAL_NS: u64 = 5 * bindings::NSEC_PER_SEC as u64;
    static NEXT_NS: Atomic<u64> = Atomic::new(0);

    // `pr_debug!` prints only with debug assertions; skip the clock too.
    if cfg!(debug_assertions) {
        // SAFETY: `ktime_get_mono_fast_ns()` only reads the clock.
        let now = unsafe { bindings::ktime_get_mono_fast_ns() };
        let next = NEXT_NS.load(Relaxed);
        if now >= next && NEXT_NS.cmpxchg(next, now + INTERVAL_NS, Relaxed).is_ok() {
            pr_debug!(
                "refused section {:#x}+{:#x} for text {:#x}-{:#x}: {} ({})\n",
                s.sframe_start,
                s.sframe_len,
                s.text_start,
                s.text_end,
                why,
                err.to_errno()
            );
        }
    }
    err
}

/// Opens `s` for validation through `reader`. Only sections for this
/// architecture's ABI, with the return address where its ABI puts it, are
/// unwound with.
fn open<R: sframe::Reader>(
    s: &Section,
    reader: R,
) -> core::result::Result<sframe::Section<R>, sframe::Error> {
    let sec = sframe::Section::new(reader, s.sframe_len, s.sframe_addr as u64)?;
    let hdr = sec.header();
    match hdr.abi {
        // x86-64 `call` pushes the return address just below the CFA; a
        // section that says otherwise is not for this ABI.
        #[cfg(target_arch = "x86_64")]
        sframe::Abi::Amd64 if hdr.fixed_ra_offset() == Some(-8) => Ok(sec),
        // AArch64's `bl` leaves it in x30, which each row says where the
        // function saved, if it did: there is no fixed offset.
        #[cfg(target_arch = "aarch64")]
        sframe::Abi::Aarch64LittleEndian if hdr.fixed_ra_offset().is_none() => Ok(sec),
        abi => Err(sframe::Error::UnsupportedAbi(abi.raw())),
    }
}

/// What registration keeps of a section while validation checks it: its
/// FDEs, packed relative to the text, and the marks of large functions'
/// rows; for a section in kernel memory, its rows too, decoded (see
/// [`Rows`]). Every function must lie in the text: a section built for
/// other code, or copied away from its text (its addresses are
/// PC-relative), would otherwise be accepted and describe nothing there.
struct Keep {
    header: sframe::Header,
    text_start: u64,
    text_len: u64,
    packed: KVVec<sframe::PackedFde>,
    marks: KVVec<FreMark>,
    rows: Option<Rows>,
    /// A function lies outside the text: refused once the section is
    /// known to be valid, so that a malformed one gets the errno it always
    /// got.
    outside: bool,
}

/// Every how many FDEs a validation lets other tasks run and stops for a
/// fatal signal: a 64 MiB section holds millions.
const PAUSE_EVERY: u32 = 4096;

/// Lets other tasks run; `EINTR` if the current task is being killed.
/// Validation runs in task context, with no lock held.
fn pause() -> Result {
    // SAFETY: Task context with no lock held (validation's callers: the
    // prctl operations, a walk that may sleep building a file's table,
    // the vDSO's initcall).
    unsafe { bindings::unwind_user_cond_resched() };
    if usermem::killed() {
        return Err(EINTR);
    }
    Ok(())
}

impl sframe::Visitor for Keep {
    /// Not the section's fault: an allocation failed (`ENOMEM`), or the
    /// task is being killed (`EINTR`).
    type Error = Error;
    const MARK_EVERY: u32 = FRE_MARK_EVERY;

    fn fde(&mut self, index: u32, fde: &sframe::Fde) -> Result {
        if index % PAUSE_EVERY == PAUSE_EVERY - 1 {
            pause()?;
        }
        match fde.pack(self.text_start) {
            Some(p) if p.end() <= self.text_len => self.packed.push(p, memory::gfp())?,
            _ => self.outside = true,
        }
        if let Some(rows) = &mut self.rows {
            // At most `num_fres` rows, which the section's size bounds.
            let first = u32::try_from(rows.rows.len()).map_err(|_| AllocError)?;
            rows.first.push(first, memory::gfp())?;
        }
        Ok(())
    }

    fn mark(&mut self, fde: u32, mark: sframe::FreMark) -> Result {
        Ok(self.marks.push(FreMark { fde, mark }, memory::gfp())?)
    }

    fn row(&mut self, _: u32, start: u32, row: &sframe::Row) -> Result {
        if let Some(rows) = &mut self.rows {
            let p = sframe::PackedRow::pack(&self.header, start, row);
            rows.undecoded |= !p.is_decoded();
            // Reserved for the header's count, which validation holds the
            // rows it hands out to.
            rows.rows.push_within_capacity(p).map_err(|_| AllocError)?;
        }
        Ok(())
    }
}

/// Validates `s` in full through `reader` and returns what unwinds will use
/// instead of reading it again (see [`Keep`]).
pub(crate) fn validate(s: &Section, reader: impl sframe::Reader) -> Result<SectionTable> {
    validate_keeping(s, reader, false).map(|(fdes, _)| fdes)
}

/// Validates `bytes`, the section `s` in kernel memory (a file's or the
/// vDSO's), and returns what unwinds use of it: its rows decoded (and its
/// usual rows flattened, [`crate::usual`]), so that a lookup neither reads
/// nor decodes them, and the bytes themselves only
/// if a row did not fit ([`sframe::PackedRow`]) and must be read from
/// there. `code` is the text's.
pub(crate) fn validate_in_kernel(
    s: &Section,
    bytes: KVVec<u8>,
    code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
) -> Result<SectionTable> {
    let (fdes, rows) = validate_keeping(s, &bytes[..], true)?;
    Ok(match rows {
        Some(rows) if !rows.undecoded => fdes.with_rows(rows.first, rows.rows, code)?,
        Some(rows) => fdes
            .with_rows(rows.first, rows.rows, code)?
            .with_section(bytes),
        None => fdes.with_section(bytes),
    })
}

/// Most bytes of decoded rows a section in kernel memory keeps (8 a row):
/// a section with more keeps none, and its rows are read from its bytes,
/// as a registration's are from user memory.
const MAX_ROW_BYTES: usize = 32 << 20;

/// The bytes of decoded rows a section with `header` takes, if
/// [`validate_in_kernel`] keeps them (at most [`MAX_ROW_BYTES`]).
fn row_bytes(header: &sframe::Header) -> Option<usize> {
    Some((header.num_fres as usize).saturating_mul(size_of::<sframe::PackedRow>()))
        .filter(|&n| n <= MAX_ROW_BYTES)
}

/// The least kernel memory [`validate_in_kernel`] keeps of `bytes`, the
/// section `s`, as its header counts it (its FDEs and its decoded rows):
/// what a budget can refuse before anything is allocated; 0 for a section
/// it refuses at once.
pub(crate) fn in_kernel_bytes(s: &Section, bytes: &[u8]) -> usize {
    let Ok(sec) = open(s, bytes) else {
        return 0;
    };
    let header = sec.header();
    let fdes = (header.num_fdes as usize).saturating_mul(size_of::<sframe::PackedFde>());
    let rows = row_bytes(header).map_or(0, |n| {
        n.saturating_add((header.num_fdes as usize).saturating_mul(size_of::<u32>()))
    });
    fdes.saturating_add(rows)
}

/// The rows of a section as [`validate_in_kernel`] keeps them.
struct Rows {
    /// Every row, by function, then by start.
    rows: KVVec<sframe::PackedRow>,
    /// Index in `rows` of each function's first row.
    first: KVVec<u32>,
    /// A row is not decoded (it needs more than a packed row says).
    undecoded: bool,
}

/// [`validate`], keeping the rows too if `keep_rows` and there are not
/// more than [`MAX_ROW_BYTES`] of them.
fn validate_keeping(
    s: &Section,
    reader: impl sframe::Reader,
    keep_rows: bool,
) -> Result<(SectionTable, Option<Rows>)> {
    let mut sec = open(s, reader).map_err(|e| refuse(e.name(), s, validation_errno(&e)))?;
    let header = *sec.header();
    // The header's count is checked against the section's size only: a
    // 64 MiB section could ask for a 64 MiB table before the registry's
    // budget refused it.
    let table_bytes = (header.num_fdes as usize).saturating_mul(size_of::<sframe::PackedFde>());
    if table_bytes > MAX_FDE_BYTES {
        return Err(refuse("FDE table over budget", s, ENOSPC));
    }
    let rows = if keep_rows && row_bytes(&header).is_some() {
        // The header's counts, checked against the section's size by
        // `open()` (at least 2 bytes a row).
        Some(Rows {
            rows: KVVec::with_capacity(header.num_fres as usize, memory::gfp())?,
            first: KVVec::with_capacity(header.num_fdes as usize, memory::gfp())?,
            undecoded: false,
        })
    } else {
        None
    };
    let mut keep = Keep {
        header,
        text_start: s.text_start as u64,
        text_len: (s.text_end - s.text_start) as u64,
        packed: KVVec::with_capacity(header.num_fdes as usize, memory::gfp())?,
        marks: KVVec::new(),
        rows,
        outside: false,
    };
    match sec.validate_with(&mut keep) {
        Ok(()) => {}
        Err(Stopped::Visitor(e)) => return Err(e),
        Err(Stopped::Invalid(e)) => {
            // FDEs out of address order in a section that does not claim to
            // be sorted (ld.lld with several text sections) are valid SFrame
            // that this unwinder, like libsframe, does not support; claiming
            // it is malformed would be wrong.
            let errno = match e {
                sframe::Error::FdesUnsorted if !header.fde_sorted() => eopnotsupp(),
                _ => validation_errno(&e),
            };
            return Err(refuse(e.name(), s, errno));
        }
    }
    if keep.outside {
        return Err(refuse("function outside the text", s, ERANGE));
    }
    Ok((
        SectionTable::from_parts(header, keep.packed, keep.marks),
        keep.rows,
    ))
}

#[kunit_tests(unwind_user_validate)]
mod tests {
    use super::*;
    use crate::section::fixtures::TEST_SECTION;
    use kernel::error::code::EINVAL;

    /// [`TEST_SECTION`] for a text of `len` bytes from 0x11000.
    fn test_section(len: usize) -> Section {
        Section {
            text_start: 0x11000,
            text_end: 0x11000 + len,
            sframe_start: 0x10000,
            sframe_addr: 0x10000,
            sframe_len: TEST_SECTION.len() as u32,
            in_kernel: false,
        }
    }

    #[test]
    fn validate_keeps_the_fdes() -> Result {
        // One function, no marks (4 rows).
        let fdes = validate(&test_section(0x100), &TEST_SECTION[..])?;
        assert_eq!(fdes.bytes(), size_of::<sframe::PackedFde>());
        // Its function, [0x11000, 0x11020), must lie in the text.
        assert_eq!(
            validate(&test_section(0x1f), &TEST_SECTION[..]).err(),
            Some(ERANGE)
        );
        // Malformed: EBADMSG, checked before the text is.
        let mut bad = TEST_SECTION;
        bad[8] = 2;
        let e = validate(&test_section(0x1f), &bad[..]).err();
        assert_eq!(e.map(|e| e.to_errno()), Some(-(bindings::EBADMSG as c_int)));
        Ok(())
    }

    #[test]
    fn in_kernel_rows_are_found_decoded() -> Result {
        let s = Section {
            in_kernel: true,
            ..test_section(0x100)
        };
        let mut bytes = KVVec::new();
        bytes.extend_from_slice(&TEST_SECTION, GFP_KERNEL)?;
        let fdes = validate_in_kernel(&s, bytes, &mut TextCode::zeros(0x100))?.shared()?;
        // One function of 4 rows, all decoded: the section is not kept.
        // Its usual rows flattened: room for the text before the function,
        // its 4 rows and two entries a function, 6 bytes each, the index of
        // one block and its end (4 bytes each), and the smallest cache of
        // answers (64 slots of 8 bytes).
        assert_eq!(
            fdes.bytes(),
            size_of::<sframe::PackedFde>()
                + 4 * size_of::<sframe::PackedRow>()
                + 4
                + 7 * 6
                + 2 * 4
                + 64 * 8
        );
        let mut mm = crate::registry::SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(s, fdes)?;
        let mut sec = sframe::Section::new(&TEST_SECTION[..], TEST_SECTION.len() as u32, 0x10000)
            .map_err(|_| EINVAL)?;
        // Every PC of the function: the row the section gives, no read.
        for pc in 0x11000..0x11020 {
            let f = mm.lookup(pc).found.ok_or(ENOENT)?;
            let want = sec.find(pc as u64).map_err(|_| EINVAL)?;
            assert!(matches!(f.answer.known, crate::section::KnownRow::Row(_)));
            assert_eq!(f.known_row(), Some(want));
        }
        // Past the function: no function, nothing known.
        let f = mm.lookup(0x11020).found.ok_or(ENOENT)?;
        assert!(f.answer.fde.is_none() && matches!(f.answer.known, crate::section::KnownRow::Read));
        Ok(())
    }
}
