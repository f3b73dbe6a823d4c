// SPDX-License-Identifier: GPL-2.0

//! The usual rows of a file's table, flattened for the cold step.
//!
//! A walk through a process the profiler samples a few times in its life
//! meets most of its PCs for the first time, and pays for each the
//! registry's lookup: the function's binary search, then its rows'. The
//! rows nearly all code has (CFA on SP or FP, the return address where
//! the rule cache keeps it, the caller's FP saved or not), as the step's [`rule`] reads
//! them, are kept here a second time, as the ORC unwinder keeps its table: one
//! array of text offsets, ascending, where a rule starts, the rule as the
//! rule cache's slot holds it, and an index by text block into the array,
//! so that a PC's rule is a search of the few offsets of its block. A PC
//! no row describes (code between functions, before a function's first
//! row) has there what the full lookup would find for it: the walk ends,
//! or takes the frame-pointer rule if the section says its code keeps
//! frame pointers; unless the signal trampoline starts there or at the
//! next byte, as the file's code says when the table is built (or that
//! code could not be read). Such a PC, and any other (of
//! another row, a PLT's repeated rows, a signal frame's), has a 0 word
//! here and takes the full lookup, which reads the process's code.
//!
//! A file's table is shared by every address space that maps the file, and
//! the PCs their walks meet are much the same: the return addresses of
//! the calls on the file's hot paths. What the search found for a PC is
//! kept with the rows, in a small direct-mapped cache that every address
//! space reads and fills ([`UsualRows::word`]), so that a process walked
//! for the first time finds the answers of the processes walked before it
//! there, at the cost of a probe rather than a search. An answer depends
//! only on the rows, which never change: the cache needs no generation,
//! no lock and no barrier, and a slot a racing walk overwrote only costs
//! a search.

use crate::{
    memory::gfp,
    rule_cache::{rule, Cached, CachedRule, Rule},
    sigframe::RT_SIGRETURN,
    word::{read_once, write_once, Bits},
};
use kernel::{
    alloc::KVVec,
    error::code::{E2BIG, EINTR},
    prelude::*,
    sync::atomic::Atomic,
};

/// Smallest text block of the index: 128 bytes.
const MIN_BLOCK_SHIFT: u32 = 7;
/// Most entries of a block that a lookup scans rather than searches.
const SCAN_MAX: usize = 8;
/// Most bytes of code where no row describes the text that
/// [`UsualRows::build`] looks at, and most bytes of the text it reads to
/// (in windows of [`CODE_WINDOW`] that the gaps between functions share).
/// A file has a few KiB there (padding, code the linker added); a program
/// linked with a static library built without SFrame, or a file whose
/// section describes little, may have more: past either, each such PC
/// takes the full lookup, which reads the process's code.
const MAX_NO_ROW_CODE: u64 = 4 << 20;
const MAX_CODE_READ: u64 = 64 << 20;
/// The bytes of the text read at once.
const CODE_WINDOW: usize = 16 << 10;
/// Fewest and most slots of a table's cache of answers: 512 bytes to
/// 32 KiB, about one a usual row in between. A process's hot return
/// addresses in one file are a few hundred, a machine's a few thousand.
const HOT_MIN_SHIFT: u32 = 6;
const HOT_MAX_SHIFT: u32 = 12;

/// The code of the text a section describes, which [`UsualRows::build`]
/// reads: `len` bytes, which `read(buf, off)` fills from offset `off`.
pub(crate) struct TextCode<R: FnMut(&mut [u8], u64) -> Result> {
    pub(crate) len: u64,
    pub(crate) read: R,
}

#[cfg(CONFIG_KUNIT = "y")]
impl TextCode<fn(&mut [u8], u64) -> Result> {
    /// `len` bytes of 0: no trampoline anywhere.
    pub(crate) fn zeros(len: u64) -> Self {
        TextCode {
            len,
            read: |buf, _| {
                buf.fill(0);
                Ok(())
            },
        }
    }
}

/// Is `w` what the usual rows give a PC no row describes?
fn no_row(w: u16) -> bool {
    w == Cached::END || w == Cached::FRAME_POINTER_IN_CODE
}

/// Gives the full lookup (a 0 word) each PC no row describes, in `starts`
/// and `words`, at which the signal trampoline starts in `code`, or one
/// byte before (a return address into it, minus one): the step then reads
/// the process's code there, and steps over the signal frame. A process
/// that wrote a trampoline into its copy of the file's text elsewhere gets
/// the walk ended there, or the frame-pointer rule, as the file's code
/// says; no process changes what another's walk finds. Every PC no row
/// describes if the code cannot be read, or is larger than
/// [`MAX_NO_ROW_CODE`]; `ENOMEM` and `EINTR` (a fatal signal) are the
/// caller's, as for the rest of the table. True if it changed anything.
fn leave_trampolines_to_lookup(
    starts: &mut KVVec<u32>,
    words: &mut KVVec<u16>,
    code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
) -> Result<bool> {
    let split = find_trampolines(starts, words, code)
        .and_then(|found| split_at_trampolines(starts, words, &found));
    match split {
        Ok(Some((new_starts, new_words))) => {
            *starts = new_starts;
            *words = new_words;
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) if e == ENOMEM || e == EINTR => Err(e),
        Err(_) => {
            for w in words.iter_mut().filter(|w| no_row(**w)) {
                *w = 0;
            }
            Ok(true)
        }
    }
}

/// `starts` and `words` with a 0 word at each trampoline `found` and the
/// byte before, in the entry's range it was found from (see
/// [`find_trampolines`]); `None` if none was found.
fn split_at_trampolines(
    starts: &[u32],
    words: &[u16],
    found: &[(usize, u64)],
) -> Result<Option<(KVVec<u32>, KVVec<u16>)>> {
    if found.is_empty() {
        return Ok(None);
    }
    let cap = starts.len() + 2 * found.len();
    let mut new_starts = KVVec::with_capacity(cap, gfp())?;
    let mut new_words = KVVec::with_capacity(cap, gfp())?;
    let mut found = found.iter().peekable();
    for (k, (&at, &w)) in starts.iter().zip(words).enumerate() {
        new_starts.push(at, gfp())?;
        new_words.push(w, gfp())?;
        // The entry's range ends where the next one starts.
        let end = starts.get(k + 1).map_or(u64::MAX, |&s| u64::from(s));
        while let Some(&(_, p)) = found.next_if(|&&(i, _)| i == k) {
            let lo = u32::try_from(p.saturating_sub(1).max(u64::from(at)))?;
            new_starts.push(lo, gfp())?;
            new_words.push(0, gfp())?;
            // The next trampoline starts at least 9 bytes on.
            if p + 1 < end {
                new_starts.push(u32::try_from(p + 1)?, gfp())?;
                new_words.push(w, gfp())?;
            }
        }
    }
    Ok(Some((new_starts, new_words)))
}

/// [`leave_trampolines_to_lookup`]'s reads: for each trampoline that
/// starts from an entry of a PC no row describes up to the next entry
/// included, that entry's index and where it starts; `E2BIG` past the
/// most it looks at or reads.
fn find_trampolines(
    starts: &[u32],
    words: &[u16],
    code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
) -> Result<KVVec<(usize, u64)>> {
    const T: usize = RT_SIGRETURN.len();
    let mut found = KVVec::new();
    let mut window = KVVec::from_elem(0u8, CODE_WINDOW, gfp())?;
    // The window holds the text's bytes from `win_at`, `win_len` of them.
    let (mut win_at, mut win_len) = (0u64, 0usize);
    let (mut looked_at, mut read) = (0u64, 0u64);
    // Where the last trampoline that fits in the text may start.
    let Some(in_text) = code.len.checked_sub(T as u64) else {
        return Ok(found);
    };
    for (k, &at) in starts.iter().enumerate() {
        if !words.get(k).is_some_and(|&w| no_row(w)) {
            continue;
        }
        // From `at` up to the next entry, included.
        let last = starts
            .get(k + 1)
            .map_or(in_text, |&s| u64::from(s).min(in_text));
        let mut from = u64::from(at);
        while from <= last {
            let in_window = from >= win_at && from - win_at + T as u64 <= win_len as u64;
            if !in_window {
                // `from` is at most `in_text`: the window holds `T` bytes
                // or more.
                let len = (code.len - from).min(CODE_WINDOW as u64) as usize;
                read = read.saturating_add(len as u64);
                if read > MAX_CODE_READ {
                    return Err(E2BIG);
                }
                (code.read)(window.get_mut(..len).ok_or(EINVAL)?, from)?;
                (win_at, win_len) = (from, len);
            }
            // The starts from `from` whose bytes the window holds.
            let to = last.min(win_at + (win_len.saturating_sub(T)) as u64);
            looked_at = looked_at.saturating_add(to - from + 1);
            if looked_at > MAX_NO_ROW_CODE {
                return Err(E2BIG);
            }
            let (lo, hi) = ((from - win_at) as usize, (to - win_at) as usize + T);
            let bytes = window.get(lo..hi).ok_or(EINVAL)?;
            // Its first byte first: a compare of the nine is a call.
            for (i, b) in bytes.windows(T).enumerate() {
                if b.first() == RT_SIGRETURN.first() && b == RT_SIGRETURN {
                    found.push((k, from + i as u64), gfp())?;
                }
            }
            from = to + 1;
        }
    }
    Ok(found)
}

/// The usual rows of one section, as described above.
///
/// # Invariants
///
/// `starts` is strictly ascending, starts with 0 and is as long as
/// `words`; `blocks[b]` is how many of `starts` are at or below
/// `b << shift`, for each block `b` from 0 to the one of the last of
/// `starts`, and then `starts.len()`. All three are empty, or none.
/// `hot` is empty, or `1 << (32 - hot_shift)` slots long, each 0 or the
/// word `word(off)` gives for an `off` below 2^32 (never 0), 16 bits to the
/// left of which it holds `off + 1` (never 0: an empty slot holds no
/// offset).
pub(crate) struct UsualRows {
    /// Text offsets where a rule starts, ascending (see the invariants).
    starts: KVVec<u32>,
    /// The answer from there on, as the rule cache's slot holds it
    /// ([`Cached::word`]): a usual row's rule, or, where no row describes
    /// the PC, [`Cached::End`] or [`Cached::FramePointerInCode`]; 0: the
    /// full lookup's to give (never [`Cached::FramePointer`], which is 0
    /// too: code in a section's text is code).
    words: KVVec<u16>,
    /// The index by block (see the invariants).
    blocks: KVVec<u32>,
    shift: u32,
    /// Answers found before, by text offset (see the invariants): read
    /// and written whole, without a lock, from any context.
    hot: KVVec<Atomic<u64>>,
    /// 32 less the log2 of the number of slots in `hot`.
    hot_shift: u32,
}

/// The word of `row`, a row of function `f` (unpacked: `fde`) of a section
/// with `header`: the frame rule the step takes from the row ([`rule`]),
/// as the rule cache holds it; 0 (the full lookup's) for a signal frame,
/// a row the step does not take whole, and a rule the cache cannot hold.
pub(crate) fn word_of(
    header: &sframe::Header,
    f: &sframe::PackedFde,
    fde: &sframe::Fde,
    row: &sframe::PackedRow,
) -> u16 {
    if f.signal_frame(header.version) {
        return 0;
    }
    match row.unpack(header, fde).as_ref().and_then(rule) {
        Some(Rule::Frame(frame)) => CachedRule::of_frame(&frame)
            .and_then(CachedRule::word)
            .unwrap_or(0),
        _ => 0,
    }
}

/// Drops the entries a lookup never lands on or need not: of entries at
/// one offset all but the last (which wins), and any with the word of the
/// entry kept before it.
fn compact(starts: &mut KVVec<u32>, words: &mut KVVec<u16>) {
    let mut kept: usize = 0;
    // `words` is as long as `starts`; `kept` never passes `i`.
    for i in 0..starts.len() {
        let (Some(&at), Some(&w)) = (starts.get(i), words.get(i)) else {
            break;
        };
        let later_here = starts.get(i + 1) == Some(&at);
        let repeats = kept.checked_sub(1).and_then(|k| words.get(k)) == Some(&w);
        if later_here || repeats {
            continue;
        }
        if let (Some(s), Some(d)) = (starts.get_mut(kept), words.get_mut(kept)) {
            (*s, *d) = (at, w);
        }
        kept += 1;
    }
    starts.truncate(kept);
    words.truncate(kept);
}

const _: () = assert!(Bits::disjoint(&[UsualRows::HOT_WORD, UsualRows::HOT_KEY]));

impl UsualRows {
    /// The fields of a slot of `hot` (see the invariants): the answer's
    /// word, and `off + 1` for its text offset `off`.
    const HOT_WORD: Bits = Bits::new(0, 16);
    const HOT_KEY: Bits = Bits::new(16, 48);

    /// No usual rows: every lookup is left to the full one.
    pub(crate) fn new() -> UsualRows {
        UsualRows {
            starts: KVVec::new(),
            words: KVVec::new(),
            blocks: KVVec::new(),
            shift: 0,
            hot: KVVec::new(),
            hot_shift: 0,
        }
    }

    /// The usual rows of a section with `header`, functions `packed`
    /// (sorted by start, relative to the text), whose rows are `rows`,
    /// the first of function `i` at `row_first[i]`, and whose text is
    /// `code`. None if the section puts every return address anywhere but
    /// at CFA - 8, or if its text is 4 GiB or larger. (A section with no
    /// fixed place, AArch64's, says where in each row: a row with it
    /// elsewhere than the rule cache keeps it takes the full lookup.)
    pub(crate) fn build(
        header: &sframe::Header,
        packed: &[sframe::PackedFde],
        row_first: &[u32],
        rows: &[sframe::PackedRow],
        code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
    ) -> Result<UsualRows> {
        if !matches!(header.fixed_ra_offset(), Some(-8) | None)
            || row_first.len() != packed.len()
            || code.len > u64::from(u32::MAX)
        {
            return Ok(UsualRows::new());
        }
        let Some(no_row) = Cached::no_row(header).word() else {
            return Ok(UsualRows::new());
        };
        // The text before the first function, then per function its rows
        // and at most one entry before them and one after.
        let cap = 1 + rows.len() + 2 * packed.len();
        let mut starts = KVVec::with_capacity(cap, gfp())?;
        let mut words = KVVec::with_capacity(cap, gfp())?;
        starts.push(0, gfp())?;
        words.push(no_row, gfp())?;
        for (i, f) in packed.iter().enumerate() {
            let start = u64::from(f.start());
            // A lookup takes the last function starting at or below a PC,
            // if the PC is within it: this one up to the next one's start.
            let next = packed.get(i + 1).map(|g| u64::from(g.start()));
            let end = f.end().min(next.unwrap_or(u64::MAX));
            if end <= start {
                continue;
            }
            let lo = row_first.get(i).map_or(rows.len(), |&r| r as usize);
            let hi = row_first.get(i + 1).map_or(rows.len(), |&r| r as usize);
            let fn_rows = rows.get(lo..hi).unwrap_or(&[]);
            // A PLT's rows repeat in blocks: none of its PCs is usual here.
            let inc = f.pc_type() == sframe::PcType::Inc;
            let mut push = |at: u64, w: u16| -> Result<bool> {
                let Ok(at) = u32::try_from(at) else {
                    return Ok(false);
                };
                starts.push(at, gfp())?;
                words.push(w, gfp())?;
                Ok(true)
            };
            let mut fits = true;
            if !inc {
                // A PLT's PCs are all the full lookup's.
                fits &= push(start, 0)?;
            } else {
                // Before the first row, if it does not start the function.
                if fn_rows.first().is_none_or(|r| r.start() > 0) {
                    fits &= push(start, no_row)?;
                }
                // The rows of a function that does not unpack (none, in a
                // validated section) are the full lookup's.
                let fde = u32::try_from(i)
                    .ok()
                    .and_then(|i| f.unpack(header.version, 0, i).ok());
                for r in fn_rows {
                    let at = start + u64::from(r.start());
                    if at >= end {
                        break;
                    }
                    let w = fde.as_ref().map_or(0, |fde| word_of(header, f, fde, r));
                    fits &= push(at, w)?;
                }
            }
            // Past the function: no function, up to the next one that has
            // code (an entry of the next at the same offset comes after
            // this one, and wins; a function of size 0 pushes nothing).
            fits &= push(end, no_row)?;
            if !fits {
                return Ok(UsualRows::new());
            }
        }
        compact(&mut starts, &mut words);
        if leave_trampolines_to_lookup(&mut starts, &mut words, code)? {
            compact(&mut starts, &mut words);
        }
        // The entry at 0 stays first (the last of those at 0).
        let Some(&last) = starts.last() else {
            return Ok(UsualRows::new());
        };
        // Blocks of at least 128 bytes, fewer than one for two entries,
        // from the text's start (where the first function is, or near).
        let most = (starts.len() / 2).max(1) as u64;
        let mut shift = MIN_BLOCK_SHIFT;
        while u64::from(last) >> shift >= most {
            shift += 1;
        }
        let nblocks = (u64::from(last) >> shift) as usize + 1;
        let mut blocks = KVVec::with_capacity(nblocks + 1, gfp())?;
        let mut k = 0;
        for b in 0..nblocks {
            let block_start = (b as u64) << shift;
            while starts.get(k).is_some_and(|&s| u64::from(s) <= block_start) {
                k += 1;
            }
            // At most `cap`, which the section's counts bound (u32).
            blocks.push(k as u32, gfp())?;
        }
        // The end of the last block's entries: no bound to check apart.
        blocks.push(starts.len() as u32, gfp())?;
        let bits =
            (starts.len().next_power_of_two().trailing_zeros()).clamp(HOT_MIN_SHIFT, HOT_MAX_SHIFT);
        let mut hot = KVVec::with_capacity(1 << bits, gfp())?;
        for _ in 0..1 << bits {
            hot.push(Atomic::new(0), gfp())?;
        }
        // INVARIANT: The offsets were pushed in ascending order, from 0:
        // functions come sorted by start, a validated function's rows
        // strictly ascending, and each function's entries lie between its
        // start and the next one's. `compact()` kept the last of equal
        // offsets (so the one at 0 stays first) and `words` as long as
        // `starts`. `blocks` is counted from `starts` just above; `hot` has
        // `1 << bits` slots, all 0, with `bits` from `HOT_MIN_SHIFT` to
        // `HOT_MAX_SHIFT`, so `hot_shift` is below 32.
        Ok(UsualRows {
            starts,
            words,
            blocks,
            shift,
            hot,
            hot_shift: 32 - bits,
        })
    }

    /// The slot of `hot` that holds `off`'s answer, if `off` fits one.
    #[inline(always)]
    fn hot_slot(&self, off: u64) -> Option<&Atomic<u64>> {
        let off = u32::try_from(off).ok()?;
        // Fibonacci hashing: the top bits of the product mix every bit of
        // the offset, of which return addresses differ in the low ones.
        // `hot_shift` is below 32 (the invariants): the shift loses nothing.
        let i = off.wrapping_mul(0x9e37_79b9).wrapping_shr(self.hot_shift);
        self.hot.get(i as usize)
    }

    /// What the usual rows say of a PC `off` bytes into the text, as the
    /// rule cache's word: a usual row's rule, or what the step gives where
    /// no row describes the PC ([`Cached::no_row`]); `None` (never 0) for
    /// the full lookup. An answer other than `None` is kept in the cache of
    /// answers, where it is found the next time, by any address space.
    #[inline(always)]
    pub(crate) fn word(&self, off: u64) -> Option<u16> {
        if let Some(w) = self.kept(off) {
            return Some(w);
        }
        let w = self.search(off)?;
        if let Some(slot) = self.hot_slot(off) {
            write_once(slot, Self::hot_key(off) | Self::HOT_WORD.put(w.into()));
        }
        Some(w)
    }

    /// What a slot of `hot` holds for `off`, but the word: `off + 1`, 16
    /// bits to the left (see the invariants); `off` is below 2^32 in any
    /// slot.
    #[inline(always)]
    fn hot_key(off: u64) -> u64 {
        Self::HOT_KEY.put(off + 1)
    }

    /// The answer for `off` in the cache of answers, if it holds one.
    #[inline(always)]
    pub(crate) fn kept(&self, off: u64) -> Option<u16> {
        let v = read_once(self.hot_slot(off)?);
        // The word is bits 15-0: the cast keeps it whole.
        (Self::HOT_KEY.get(v ^ Self::hot_key(off)) == 0).then_some(Self::HOT_WORD.get(v) as u16)
    }

    /// [`word`](Self::word)'s answer from the rows, not the cache.
    #[inline]
    fn search(&self, off: u64) -> Option<u16> {
        let last = self.blocks.len().checked_sub(2)? as u64;
        let b = (off >> self.shift).min(last) as usize;
        // The offsets at or below `off` are the first `blocks[b]`, and at
        // most those up to the next block's count: only those between are
        // searched. There is one at or below any `off`: 0.
        let (&lo, &hi) = (self.blocks.get(b)?, self.blocks.get(b + 1)?);
        let (lo, hi) = (lo as usize, hi as usize);
        let starts = self.starts.get(lo..hi)?;
        let at_or_below = |&&s: &&u32| u64::from(s) <= off;
        // A block holds two entries or so: a scan is shorter than a search
        // there, but not in a block of a function with many rows.
        let k = lo
            + if starts.len() <= SCAN_MAX {
                starts.iter().take_while(at_or_below).count()
            } else {
                starts.partition_point(|s| at_or_below(&s))
            };
        let w = *self.words.get(k.checked_sub(1)?)?;
        (w != 0).then_some(w)
    }

    /// Kernel memory it takes (as allocated: room for two entries a
    /// function, and for the entries compaction dropped).
    pub(crate) fn bytes(&self) -> usize {
        self.starts.capacity() * size_of::<u32>()
            + self.words.capacity() * size_of::<u16>()
            + self.blocks.capacity() * size_of::<u32>()
            + self.hot.capacity() * size_of::<u64>()
    }
}
