// SPDX-License-Identifier: GPL-2.0

//! Where section bytes come from, and a small read-ahead window over them.

use crate::Error;

/// Where section bytes come from: a host slice, a kernel buffer, or
/// fault-safe copies from user memory.
///
/// The decoder never keeps a reference into the section: it copies the bytes
/// it needs into small stack buffers and checks them after the copy. A reader
/// over user memory may therefore return different bytes on two reads of the
/// same offset (another thread may rewrite the mapping); the decoder never
/// relies on two reads agreeing, it only checks what it has copied.
pub trait Reader {
    /// Copy `buf.len()` bytes starting at byte `offset` of the section into
    /// `buf`.
    ///
    /// Returns `Err(Error::Read)` if the bytes cannot be read (e.g. a user page
    /// fault, or a range outside the underlying buffer). The decoder only asks
    /// for ranges inside the section length given to
    /// [`Section::new`](crate::Section::new).
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error>;
}

/// A section held in memory (host tools, tests, or a kernel copy).
impl Reader for &[u8] {
    #[inline]
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        let start = usize::try_from(offset).map_err(|_| Error::Read)?;
        let end = start.checked_add(buf.len()).ok_or(Error::Read)?;
        let src = self.get(start..end).ok_or(Error::Read)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// Lets a caller keep ownership of its reader (e.g. to count reads).
impl<R: Reader + ?Sized> Reader for &mut R {
    #[inline]
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> Result<(), Error> {
        (**self).read(offset, buf)
    }
}

/// A reader that reads through another in blocks kept in a caller's buffer:
/// for a pass over a whole section (validation at registration), which
/// otherwise makes several small reads a function, each a user copy with
/// its fixed cost.
///
/// The buffer is split in two blocks, replaced in turn on a miss: a pass
/// reads the FDE table and the FREs as two streams, and each keeps a block.
/// A read no block holds, no larger than a block, refills one from its
/// offset; a larger read goes to the inner reader. Blocks never extend past
/// the section length given, so they read nothing the decoder would not.
pub struct Blocks<'a, R> {
    inner: R,
    buf: &'a mut [u8],
    /// Section length: where blocks stop.
    len: u32,
    /// Offset and length of each block's bytes (length 0: empty).
    held: [(u32, u32); 2],
    /// The block a miss replaces: the one not used last.
    next: usize,
}

impl<R> core::fmt::Debug for Blocks<'_, R> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Blocks")
            .field("len", &self.len)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl<'a, R: Reader> Blocks<'a, R> {
    /// Reads the `len` bytes of a section through `inner`, in blocks of
    /// half of `buf`.
    pub fn new(inner: R, buf: &'a mut [u8], len: u32) -> Self {
        Blocks {
            inner,
            buf,
            len,
            held: [(0, 0); 2],
            next: 0,
        }
    }

    fn block_size(&self) -> usize {
        (self.buf.len() / 2).min(usize::try_from(u32::MAX).unwrap_or(usize::MAX))
    }

    /// Where in `buf` block `k`'s bytes `rel..rel + n` are.
    fn span(&self, k: usize, rel: u32, n: u32) -> Option<core::ops::Range<usize>> {
        let from = k
            .checked_mul(self.block_size())?
            .checked_add(usize::try_from(rel).ok()?)?;
        Some(from..from.checked_add(usize::try_from(n).ok()?)?)
    }

    /// Block `k`'s bytes from section offset `off` for `n` bytes, if it
    /// holds them.
    fn held(&self, k: usize, off: u32, n: u32) -> Option<&[u8]> {
        let (start, len) = *self.held.get(k)?;
        let rel = off.checked_sub(start)?;
        if rel.checked_add(n)? > len {
            return None;
        }
        self.buf.get(self.span(k, rel, n)?)
    }
}

impl<R: Reader> Reader for Blocks<'_, R> {
    fn read(&mut self, offset: u32, out: &mut [u8]) -> Result<(), Error> {
        let n = u32::try_from(out.len()).map_err(|_| Error::Read)?;
        for k in 0..self.held.len() {
            if let Some(b) = self.held(k, offset, n) {
                out.copy_from_slice(b);
                self.next = k ^ 1;
                return Ok(());
            }
        }
        let size = u32::try_from(self.block_size()).map_err(|_| Error::Read)?;
        if n > size {
            return self.inner.read(offset, out);
        }
        let left = self
            .len
            .checked_sub(offset)
            .filter(|&left| left >= n)
            .ok_or(Error::Read)?;
        let k = self.next;
        let fill = size.min(left);
        let span = self.span(k, 0, fill).ok_or(Error::Read)?;
        // Empty until the read succeeds: a failed one leaves nothing held.
        *self.held.get_mut(k).ok_or(Error::Read)? = (0, 0);
        self.inner
            .read(offset, self.buf.get_mut(span).ok_or(Error::Read)?)?;
        *self.held.get_mut(k).ok_or(Error::Read)? = (offset, fill);
        out.copy_from_slice(self.held(k, offset, n).ok_or(Error::Read)?);
        self.next = k ^ 1;
        Ok(())
    }
}

/// Size of the read-ahead window used when walking FREs. One window holds the
/// V3 attribute record and the first few FREs of a typical function, so a
/// lookup usually costs one read for the FREs.
pub(crate) const WINDOW: usize = 64;

/// A read-ahead copy of up to [`WINDOW`] bytes of the section.
///
/// Bytes are only ever served from the copy, so each byte handed to the
/// decoder was read exactly once per refill and is checked after copying.
pub(crate) struct Window {
    base: u32,
    len: usize,
    buf: [u8; WINDOW],
}

impl Window {
    pub(crate) const fn new() -> Self {
        Window {
            base: 0,
            len: 0,
            buf: [0; WINDOW],
        }
    }

    /// Return `n` (at most [`WINDOW`]) bytes at section offset `off`,
    /// refilling the window from `reader` if needed. The range must end at
    /// or before `limit`, else `past_end` is returned.
    #[inline]
    pub(crate) fn get<R: Reader + ?Sized>(
        &mut self,
        reader: &mut R,
        off: u32,
        n: usize,
        limit: u32,
        past_end: Error,
    ) -> Result<&[u8], Error> {
        let n32 = u32::try_from(n).map_err(|_| past_end)?;
        let end = off.checked_add(n32).ok_or(past_end)?;
        if end > limit {
            return Err(past_end);
        }
        let cached_end = usize::try_from(self.base)
            .ok()
            .and_then(|b| b.checked_add(self.len));
        let end_usize = usize::try_from(end).map_err(|_| past_end)?;
        let hit = off >= self.base && cached_end.is_some_and(|ce| end_usize <= ce);
        if !hit {
            // limit >= end > off here, so the subtraction cannot wrap.
            let avail = usize::try_from(limit.saturating_sub(off)).unwrap_or(WINDOW);
            let want = avail.min(WINDOW);
            self.len = 0;
            let dst = self.buf.get_mut(..want).ok_or(past_end)?;
            reader.read(off, dst)?;
            self.base = off;
            self.len = want;
        }
        let rel = usize::try_from(off.saturating_sub(self.base)).map_err(|_| past_end)?;
        let rel_end = rel.checked_add(n).ok_or(past_end)?;
        self.buf
            .get(rel..rel_end)
            .filter(|_| rel_end <= self.len)
            .ok_or(past_end)
    }
}

/// Read a little-endian unsigned integer of 1, 2 or 4 bytes.
#[inline]
pub(crate) fn le_u32(b: &[u8]) -> Option<u32> {
    match *b {
        [a] => Some(u32::from(a)),
        [a, c] => Some(u32::from(u16::from_le_bytes([a, c]))),
        [a, c, d, e] => Some(u32::from_le_bytes([a, c, d, e])),
        _ => None,
    }
}

/// Read a little-endian signed integer of 1, 2 or 4 bytes, sign-extended.
#[inline]
pub(crate) fn le_i32(b: &[u8]) -> Option<i32> {
    match *b {
        [a] => Some(i32::from(i8::from_le_bytes([a]))),
        [a, c] => Some(i32::from(i16::from_le_bytes([a, c]))),
        [a, c, d, e] => Some(i32::from_le_bytes([a, c, d, e])),
        _ => None,
    }
}

/// Little-endian u32 at byte `off` of `b`.
#[inline]
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let s = b.get(off..off.checked_add(4)?)?;
    le_u32(s)
}

/// Little-endian u16 at byte `off` of `b`.
#[inline]
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    match *b.get(off..off.checked_add(2)?)? {
        [a, c] => Some(u16::from_le_bytes([a, c])),
        _ => None,
    }
}

/// Little-endian i32 at byte `off` of `b`.
#[inline]
pub(crate) fn i32_at(b: &[u8], off: usize) -> Option<i32> {
    let s = b.get(off..off.checked_add(4)?)?;
    le_i32(s)
}

/// Little-endian i64 at byte `off` of `b`.
#[inline]
pub(crate) fn i64_at(b: &[u8], off: usize) -> Option<i64> {
    match *b.get(off..off.checked_add(8)?)? {
        [a, c, d, e, f, g, h, i] => Some(i64::from_le_bytes([a, c, d, e, f, g, h, i])),
        _ => None,
    }
}

/// Byte at `off` of `b`.
#[inline]
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}
