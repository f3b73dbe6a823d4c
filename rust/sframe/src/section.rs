// SPDX-License-Identifier: GPL-2.0

//! An SFrame section behind a [`Reader`]: header checks, FDE access, FRE
//! walks, lookups and whole-section validation.

use crate::reader::{i32_at, i64_at, u16_at, u32_at, u8_at, Window};
use crate::types::{
    decode_row, Abi, Fde, Header, PcType, RawFre, Row, Version, HEADER_SIZE, MAGIC,
    MAX_FRES_PER_FDE,
};
use crate::{Error, Reader};

/// Size of a V3 function attribute record.
const V3_ATTR_SIZE: u32 = 5;
/// Smallest possible FRE: a 1-byte start offset and the info byte.
const MIN_FRE_SIZE: u32 = 2;

/// An SFrame section read through `R`.
///
/// `new` checks the header and that every sub-section lies inside the
/// section; nothing else is trusted. Every later read is bounds-checked again,
/// so [`Section::find`] is safe (returns an error rather than misbehaving)
/// even if [`Section::validate`] was never called or the bytes changed since.
///
/// # Invariants
///
/// `fde_start + num_fdes * fde_size <= fre_start <= fre_end <= len`, all
/// computed without overflow in [`Section::new`].
pub struct Section<R: Reader> {
    reader: R,
    len: u32,
    addr: u64,
    header: Header,
    fde_start: u32,
    fde_size: u32,
    fre_start: u32,
    fre_end: u32,
}

impl<R: Reader> core::fmt::Debug for Section<R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Section")
            .field("len", &self.len)
            .field("addr", &self.addr)
            .field("header", &self.header)
            .finish_non_exhaustive()
    }
}

/// A place in a function's FREs where a walk may start: FRE `index`, which
/// lies `offset` bytes after the function's first FRE and applies from
/// `start` (an offset in the function) on. Made by [`Section::fre_marks`]
/// when a section is known to be valid, kept by the caller, and checked
/// against the bytes again when used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreMark {
    /// Index of the FRE in its function.
    pub index: u32,
    /// Its byte offset from the function's first FRE.
    pub offset: u32,
    /// Its start offset within the function.
    pub start: u32,
}

/// What a section walk may be asked to stop at.
enum Stop {
    /// Walk all FREs (validation, dumps).
    Never,
    /// Stop at the first FRE starting past this offset (lookups).
    After(u32),
    /// Stop after the FRE of this index.
    Index(u32),
}

impl<R: Reader> Section<R> {
    /// Parse and check the preamble and header.
    ///
    /// `len` is the section size in bytes; `section_addr` is the virtual
    /// address at which the section is loaded (function start addresses are
    /// stored relative to the section or to their own field).
    pub fn new(mut reader: R, len: u32, section_addr: u64) -> Result<Self, Error> {
        if len < HEADER_SIZE {
            return Err(Error::TruncatedHeader);
        }
        let mut b = [0u8; 28];
        reader.read(0, &mut b)?;
        let h = |o| u32_at(&b, o).ok_or(Error::TruncatedHeader);
        let byte = |o| u8_at(&b, o).ok_or(Error::TruncatedHeader);
        let magic = u16_at(&b, 0).ok_or(Error::TruncatedHeader)?;
        if magic != MAGIC {
            return Err(if magic == MAGIC.swap_bytes() {
                Error::ForeignEndian
            } else {
                Error::BadMagic
            });
        }
        let version = match byte(2)? {
            1 => Version::V1,
            2 => Version::V2,
            3 => Version::V3,
            v => return Err(Error::UnsupportedVersion(v)),
        };
        let flags = byte(3)?;
        if flags & !version.known_flags() != 0 {
            return Err(Error::UnknownFlags(flags));
        }
        let abi = Abi::from_raw(byte(4)?)?;
        let header = Header {
            version,
            flags,
            abi,
            cfa_fixed_fp_offset: i8::from_le_bytes([byte(5)?]),
            cfa_fixed_ra_offset: i8::from_le_bytes([byte(6)?]),
            auxhdr_len: byte(7)?,
            num_fdes: h(8)?,
            num_fres: h(12)?,
            fre_len: h(16)?,
            fde_off: h(20)?,
            fre_off: h(24)?,
        };
        Self::with_header(reader, len, section_addr, header)
    }

    /// [`Section::new`] with a header decoded before (by `new` on the same
    /// section, when it was registered, say): nothing is read, the layout
    /// checks are made again against `len`.
    pub fn with_header(
        reader: R,
        len: u32,
        section_addr: u64,
        header: Header,
    ) -> Result<Self, Error> {
        if len < HEADER_SIZE {
            return Err(Error::TruncatedHeader);
        }
        let version = header.version;
        let hdr_size = header.size();
        if hdr_size > len {
            return Err(Error::AuxHeaderPastEnd);
        }
        let fde_size = version.fde_size();
        let fde_start = hdr_size
            .checked_add(header.fde_off)
            .ok_or(Error::FdeAreaPastEnd)?;
        let fde_bytes = header
            .num_fdes
            .checked_mul(fde_size)
            .ok_or(Error::CountTooLarge)?;
        let fde_end = fde_start
            .checked_add(fde_bytes)
            .filter(|&e| e <= len)
            .ok_or(Error::FdeAreaPastEnd)?;
        let fre_start = hdr_size
            .checked_add(header.fre_off)
            .ok_or(Error::FreAreaPastEnd)?;
        let fre_end = fre_start
            .checked_add(header.fre_len)
            .filter(|&e| e <= len)
            .ok_or(Error::FreAreaPastEnd)?;
        // The FDE array comes first and must not run into the FREs.
        if fde_end > fre_start && header.num_fdes != 0 {
            return Err(Error::AreasOverlap);
        }
        // Every FRE takes at least 2 bytes, every V3 function 5 more.
        let attr_bytes = if version == Version::V3 {
            u64::from(header.num_fdes).saturating_mul(u64::from(V3_ATTR_SIZE))
        } else {
            0
        };
        let fre_min = u64::from(header.num_fres)
            .saturating_mul(u64::from(MIN_FRE_SIZE))
            .saturating_add(attr_bytes);
        if fre_min > u64::from(header.fre_len)
            || u64::from(header.num_fres)
                > u64::from(header.num_fdes).saturating_mul(u64::from(MAX_FRES_PER_FDE))
        {
            return Err(Error::CountTooLarge);
        }
        Ok(Section {
            reader,
            len,
            addr: section_addr,
            header,
            fde_start,
            fde_size,
            fre_start,
            fre_end,
        })
    }

    /// The decoded header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Number of function descriptor entries.
    pub fn num_fdes(&self) -> u32 {
        self.header.num_fdes
    }

    /// Section size in bytes, as given to [`Section::new`].
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Whether the section has no function descriptors.
    pub fn is_empty(&self) -> bool {
        self.header.num_fdes == 0
    }

    /// Virtual address of the section, as given to [`Section::new`].
    pub fn section_addr(&self) -> u64 {
        self.addr
    }

    /// Give back the reader.
    pub fn into_reader(self) -> R {
        self.reader
    }

    /// Section offset of FDE `i`. `i < num_fdes` must have been checked.
    fn fde_offset(&self, i: u32) -> Result<u32, Error> {
        i.checked_mul(self.fde_size)
            .and_then(|o| o.checked_add(self.fde_start))
            .ok_or(Error::FdeAreaPastEnd)
    }

    /// Turn a stored function start offset into an absolute address.
    fn func_start(&self, fde_off: u32, stored: i64) -> Result<u64, Error> {
        let base = if self.header.func_start_pcrel() {
            // The start field is the first field of every FDE layout.
            self.addr.checked_add(u64::from(fde_off))
        } else {
            Some(self.addr)
        };
        base.and_then(|b| b.checked_add_signed(stored))
            .ok_or(Error::AddressOverflow)
    }

    /// Absolute start address of FDE `i`, reading only the start field.
    fn fde_start_addr(&mut self, i: u32) -> Result<u64, Error> {
        let off = self.fde_offset(i)?;
        let stored = if self.header.version == Version::V3 {
            let mut b = [0u8; 8];
            self.reader.read(off, &mut b)?;
            i64::from_le_bytes(b)
        } else {
            let mut b = [0u8; 4];
            self.reader.read(off, &mut b)?;
            i64::from(i32::from_le_bytes(b))
        };
        self.func_start(off, stored)
    }

    /// Decode function descriptor `i` (and, in V3, its attribute record).
    pub fn fde(&mut self, i: u32) -> Result<Fde, Error> {
        if i >= self.header.num_fdes {
            return Err(Error::FdeIndexOutOfRange);
        }
        let off = self.fde_offset(i)?;
        let mut b = [0u8; 20];
        let n = usize::try_from(self.fde_size).map_err(|_| Error::FdeAreaPastEnd)?;
        let dst = b.get_mut(..n).ok_or(Error::FdeAreaPastEnd)?;
        self.reader.read(off, dst)?;
        let bad = Error::FdeAreaPastEnd;
        let (stored, func_size, fre_off) = if self.header.version == Version::V3 {
            (
                i64_at(&b, 0).ok_or(bad)?,
                u32_at(&b, 8).ok_or(bad)?,
                u32_at(&b, 12).ok_or(bad)?,
            )
        } else {
            (
                i64::from(i32_at(&b, 0).ok_or(bad)?),
                u32_at(&b, 4).ok_or(bad)?,
                u32_at(&b, 8).ok_or(bad)?,
            )
        };
        let (num_fres, info, info2, rep_size, fres_off) = match self.header.version {
            Version::V1 => {
                let info = u8_at(&b, 16).ok_or(bad)?;
                let rep = if info & 0x10 != 0 {
                    self.header.abi.v1_rep_size().unwrap_or(0)
                } else {
                    0
                };
                (u32_at(&b, 12).ok_or(bad)?, info, 0, rep, fre_off)
            }
            Version::V2 => (
                u32_at(&b, 12).ok_or(bad)?,
                u8_at(&b, 16).ok_or(bad)?,
                0,
                u8_at(&b, 17).ok_or(bad)?,
                fre_off,
            ),
            Version::V3 => {
                let attr_end = fre_off
                    .checked_add(V3_ATTR_SIZE)
                    .filter(|&e| e <= self.header.fre_len)
                    .ok_or(Error::FdeAttrPastEnd)?;
                let at = self
                    .fre_start
                    .checked_add(fre_off)
                    .ok_or(Error::FdeAttrPastEnd)?;
                let mut a = [0u8; 5];
                self.reader.read(at, &mut a)?;
                let [n0, n1, info, info2, rep] = a;
                (
                    u32::from(u16::from_le_bytes([n0, n1])),
                    info,
                    info2,
                    rep,
                    attr_end,
                )
            }
        };
        if num_fres > MAX_FRES_PER_FDE || num_fres > self.header.num_fres {
            return Err(Error::FdeFreCountTooLarge);
        }
        let func_start = self.func_start(off, stored)?;
        Fde::from_fields(
            self.header.version,
            i,
            func_start,
            func_size,
            fres_off,
            num_fres,
            [info, info2, rep_size],
        )
    }

    /// Walk the FREs of `fde` in order, checking each and passing it to
    /// `each`, and return the last one allowed by `stop` (the last FRE
    /// starting at or below the offset for [`Stop::After`]).
    ///
    /// Checks: every FRE lies inside the FRE sub-section, start offsets
    /// strictly increase and do not pass the function end.
    ///
    /// From `from`, the walk starts at that FRE instead of the first one,
    /// which must start where the mark says ([`Error::FreMarkMismatch`]
    /// otherwise: the bytes changed since the mark was made).
    fn walk<E: From<Error>>(
        &mut self,
        fde: &Fde,
        from: Option<&FreMark>,
        stop: Stop,
        mut each: impl FnMut(FreMark, &RawFre) -> Result<(), E>,
    ) -> Result<Option<RawFre>, E> {
        let mut win = Window::new();
        let first = self
            .fre_start
            .checked_add(fde.fres_off)
            .ok_or(Error::FreDataPastEnd)?;
        let (j0, mut off) = match from {
            None => (0, first),
            Some(m) if m.index < fde.num_fres => (
                m.index,
                first.checked_add(m.offset).ok_or(Error::FreDataPastEnd)?,
            ),
            Some(_) => return Err(Error::FreMarkMismatch.into()),
        };
        let limit = self.fre_end;
        let asz = fde.fre_type.addr_size();
        let mut last: Option<RawFre> = None;
        for j in j0..fde.num_fres {
            let head = win.get(
                &mut self.reader,
                off,
                asz.saturating_add(1),
                limit,
                Error::FreDataPastEnd,
            )?;
            let (start_bytes, info_bytes) = head.split_at(asz);
            let start = crate::reader::le_u32(start_bytes).ok_or(Error::FreDataPastEnd)?;
            let info = info_bytes.first().copied().ok_or(Error::FreDataPastEnd)?;
            let dlen = RawFre::data_len(info)?;
            let size = asz.saturating_add(1).saturating_add(dlen);
            let all = win.get(&mut self.reader, off, size, limit, Error::FreDataPastEnd)?;
            let data = all
                .get(asz.saturating_add(1)..)
                .ok_or(Error::FreDataPastEnd)?;
            let size8 = u8::try_from(size).map_err(|_| Error::FreDataPastEnd)?;
            let fre = RawFre::new(start, info, size8, data)?;
            match (&last, from) {
                (Some(prev), _) if fre.start <= prev.start => {
                    return Err(Error::FreOutOfOrder.into())
                }
                (None, Some(m)) if fre.start != m.start => {
                    return Err(Error::FreMarkMismatch.into())
                }
                _ => {}
            }
            // PR 33131: a start equal to the function size occurs in real
            // binaries (it can never match a PC inside the function).
            if fre.start > fde.func_size {
                return Err(Error::FrePastFunction.into());
            }
            match stop {
                Stop::After(ip_off) if fre.start > ip_off => return Ok(last),
                _ => {}
            }
            let mark = FreMark {
                index: j,
                offset: off.saturating_sub(first),
                start: fre.start,
            };
            each(mark, &fre)?;
            last = Some(fre);
            if let Stop::Index(k) = stop {
                if j == k {
                    return Ok(last);
                }
            }
            off = off
                .checked_add(u32::from(size8))
                .ok_or(Error::FreDataPastEnd)?;
        }
        if let Stop::Index(_) = stop {
            return Err(Error::FdeIndexOutOfRange.into());
        }
        Ok(last)
    }

    /// FRE `j` of `fde` as stored (O(j): FREs have variable sizes).
    pub fn fre_raw(&mut self, fde: &Fde, j: u32) -> Result<RawFre, Error> {
        if j >= fde.num_fres {
            return Err(Error::FdeIndexOutOfRange);
        }
        self.walk(fde, None, Stop::Index(j), |_, _| Ok(()))?
            .ok_or(Error::FdeIndexOutOfRange)
    }

    /// FRE `j` of `fde`: its start offset (within the function, or within
    /// the repetition block of a PC-mask FDE) and the row it describes.
    pub fn fre(&mut self, fde: &Fde, j: u32) -> Result<(u32, Row), Error> {
        let raw = self.fre_raw(fde, j)?;
        let row = decode_row(&self.header, fde, &raw)?;
        Ok((raw.start, row))
    }

    /// Call `f` with every FRE of `fde` and its row, in order, without
    /// allocating (one pass, O(number of FREs)).
    pub fn for_each_fre(
        &mut self,
        fde: &Fde,
        mut f: impl FnMut(&RawFre, &Row),
    ) -> Result<(), Error> {
        let hdr = self.header;
        self.walk(fde, None, Stop::Never, |_, raw| {
            let row = decode_row(&hdr, fde, raw)?;
            f(raw, &row);
            Ok(())
        })?;
        Ok(())
    }

    /// Index of the last FDE whose start is at or below `pc`, by binary
    /// search. Start addresses met during the search must be consistent with
    /// a sorted array, else [`Error::FdesUnsorted`].
    fn search(&mut self, pc: u64) -> Result<u32, Error> {
        let mut hi = self.header.num_fdes;
        let mut lo = 0;
        let mut lo_start = 0u64;
        let mut hi_start = u64::MAX;
        // At most 32 iterations: hi - lo halves every time.
        while lo < hi {
            let mid = lo.saturating_add(hi.saturating_sub(lo) / 2);
            let s = self.fde_start_addr(mid)?;
            if s < lo_start || s > hi_start {
                return Err(Error::FdesUnsorted);
            }
            if s <= pc {
                lo = mid.saturating_add(1);
                lo_start = s;
            } else {
                hi = mid;
                hi_start = s;
            }
        }
        lo.checked_sub(1).ok_or(Error::NotCovered)
    }

    /// Find the function descriptor whose function contains `pc` (binary
    /// search, O(log n) reads), or [`Error::NotCovered`].
    pub fn find_fde(&mut self, pc: u64) -> Result<Fde, Error> {
        let i = self.search(pc)?;
        let fde = self.fde(i)?;
        if !fde.contains(pc) {
            return Err(Error::NotCovered);
        }
        Ok(fde)
    }

    /// Find the unwind row for `pc`.
    ///
    /// The FDEs must be sorted by start address. The `SFRAME_F_FDE_SORTED`
    /// flag is not required (ld.lld 22 does not set it on sorted output);
    /// the order itself is checked instead, by [`Section::validate`] for all
    /// FDEs and by the binary search for the ones it visits.
    ///
    /// O(log n) reads to find the function (binary search over the FDEs),
    /// then a scan of at most [`MAX_FRES_PER_FDE`] FREs of that function.
    /// Returns [`Error::NotCovered`] if no function contains `pc` (`pc` at a
    /// function's end is not inside it) or `pc` lies before the function's
    /// first row. Any inconsistency met on the way is reported as a
    /// malformed-section error, whether or not [`Section::validate`] ran.
    pub fn find(&mut self, pc: u64) -> Result<Row, Error> {
        let fde = self.find_fde(pc)?;
        self.find_row(&fde, pc)
    }

    /// The row for `pc` in the function of `fde` (found by
    /// [`Section::find_fde`] or kept from it, see [`PackedFde`]): reads
    /// only the function's FREs. [`Error::NotCovered`] if `pc` is not in
    /// the function or before its first row.
    ///
    /// [`PackedFde`]: crate::PackedFde
    pub fn find_row(&mut self, fde: &Fde, pc: u64) -> Result<Row, Error> {
        self.find_row_from(fde, None, pc)
    }

    /// [`Section::find_row`], walking from `from`, a mark of the same
    /// function that [`Section::fre_marks`] made and that starts at or
    /// below `pc` (the walk then reads only the FREs from there on). A mark
    /// that no longer matches the bytes gives [`Error::FreMarkMismatch`].
    pub fn find_row_from(
        &mut self,
        fde: &Fde,
        from: Option<&FreMark>,
        pc: u64,
    ) -> Result<Row, Error> {
        let ip_off = fde.row_offset(pc)?;
        if from.is_some_and(|m| m.start > ip_off) {
            return Err(Error::FreMarkMismatch);
        }
        let fre = self
            .walk(fde, from, Stop::After(ip_off), |_, _| Ok(()))?
            .ok_or(Error::NotCovered)?;
        decode_row(&self.header, fde, &fre)
    }

    /// Calls `f` with a mark of every `every`-th FRE of `fde` (FREs
    /// `every`, `2 * every`, ...), in order: where a lookup may start
    /// ([`Section::find_row_from`]) so that it reads at most `every` FREs
    /// however many the function has. FREs have variable sizes, so a
    /// function's rows can be searched only from such marks. One pass,
    /// O(number of FREs); PC-mask functions (one repetition block, a few
    /// rows) get none, nor does `every` 0.
    pub fn fre_marks(
        &mut self,
        fde: &Fde,
        every: u32,
        mut f: impl FnMut(FreMark) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if !Self::marked(fde, every) {
            return Ok(());
        }
        self.walk(fde, None, Stop::Never, |m, _| {
            if Self::is_mark(&m, every) {
                f(m)?;
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Whether [`Section::fre_marks`] gives `fde` any mark.
    fn marked(fde: &Fde, every: u32) -> bool {
        every != 0 && fde.pc_type != PcType::Mask && fde.num_fres > every
    }

    /// Whether the FRE at `m` is one [`Section::fre_marks`] gives.
    fn is_mark(m: &FreMark, every: u32) -> bool {
        m.index != 0 && m.index.checked_rem(every) == Some(0)
    }

    /// Check the whole section once (O(FDEs + FREs) reads), e.g. when it is
    /// registered: everything [`Section::find`] checks on its path, for every
    /// path, plus ordering and overlap of all functions and the FRE count.
    ///
    /// A section that passes gives `Ok` or [`Error::NotCovered`] from
    /// [`Section::find`] for every PC, as long as its bytes do not change.
    pub fn validate(&mut self) -> Result<(), Error> {
        match self.validate_with(&mut CheckOnly) {
            Ok(()) => Ok(()),
            Err(Stopped::Invalid(e)) => Err(e),
            Err(Stopped::Visitor(never)) => match never {},
        }
    }

    /// [`Section::validate`], and in the same pass what `visitor` keeps of
    /// a valid section: every FDE with its index, in order, before its FREs
    /// are checked, and the marks [`Section::fre_marks`] gives with
    /// [`Visitor::MARK_EVERY`]. The visitor may stop the pass with an error
    /// of its own; what it was given before the pass stopped is not known
    /// to be valid.
    pub fn validate_with<V: Visitor>(&mut self, visitor: &mut V) -> Result<(), Stopped<V::Error>> {
        let every = V::MARK_EVERY;
        let hdr = self.header;
        let mut prev: Option<Fde> = None;
        let mut total: u64 = 0;
        for i in 0..hdr.num_fdes {
            let fde = self.fde(i)?;
            if let Some(p) = &prev {
                if fde.func_start < p.func_start {
                    return Err(Error::FdesUnsorted.into());
                }
                if fde.func_start < p.func_end() {
                    return Err(Error::FdesOverlap.into());
                }
            }
            let rep = u32::from(fde.rep_size);
            if fde.pc_type == PcType::Mask {
                if rep == 0 {
                    return Err(Error::ZeroRepSize.into());
                }
                if rep > fde.func_size {
                    return Err(Error::BadRepSize.into());
                }
            }
            // The header's count bounds the rows handed out, and the work,
            // before they are walked: FDEs may share their FREs.
            total = total.saturating_add(u64::from(fde.num_fres));
            if total > u64::from(hdr.num_fres) {
                return Err(Error::FreCountMismatch.into());
            }
            visitor.fde(i, &fde).map_err(Stopped::Visitor)?;
            let marked = Self::marked(&fde, every);
            self.walk(
                &fde,
                None,
                Stop::Never,
                |m, fre| -> Result<(), Stopped<V::Error>> {
                    if fde.pc_type == PcType::Mask && fre.start >= rep {
                        return Err(Error::FrePastRepBlock.into());
                    }
                    let row = decode_row(&hdr, &fde, fre)?;
                    visitor.row(i, fre.start, &row).map_err(Stopped::Visitor)?;
                    if marked && Self::is_mark(&m, every) {
                        visitor.mark(i, m).map_err(Stopped::Visitor)?;
                    }
                    Ok(())
                },
            )?;
            prev = Some(fde);
        }
        if total != u64::from(hdr.num_fres) {
            return Err(Error::FreCountMismatch.into());
        }
        Ok(())
    }
}

/// What a caller keeps of a section while [`Section::validate_with`] checks
/// it, in the same pass: the FDEs, and marks of the rows of functions with
/// more than [`Visitor::MARK_EVERY`] of them.
pub trait Visitor {
    /// Why the visitor stops the pass (an allocation that failed, say).
    type Error;

    /// Every how many rows of a function a mark is given; 0: none.
    const MARK_EVERY: u32 = 0;

    /// FDE `index`, before its rows are checked.
    fn fde(&mut self, index: u32, fde: &Fde) -> Result<(), Self::Error>;

    /// A mark of the rows of FDE `fde`, in order.
    fn mark(&mut self, fde: u32, mark: FreMark) -> Result<(), Self::Error>;

    /// The row of the FRE of FDE `fde` starting at `start`, decoded and
    /// checked, in order (after the FDE, before its next FRE is read).
    fn row(&mut self, fde: u32, start: u32, row: &Row) -> Result<(), Self::Error> {
        let _ = (fde, start, row);
        Ok(())
    }
}

/// Why [`Section::validate_with`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped<E> {
    /// The section is not valid: the check that failed.
    Invalid(Error),
    /// The visitor stopped the pass.
    Visitor(E),
}

impl<E> From<Error> for Stopped<E> {
    fn from(e: Error) -> Self {
        Stopped::Invalid(e)
    }
}

/// The visitor of [`Section::validate`], which keeps nothing.
struct CheckOnly;

impl Visitor for CheckOnly {
    type Error = core::convert::Infallible;

    fn fde(&mut self, _: u32, _: &Fde) -> Result<(), Self::Error> {
        Ok(())
    }

    fn mark(&mut self, _: u32, _: FreMark) -> Result<(), Self::Error> {
        Ok(())
    }
}
