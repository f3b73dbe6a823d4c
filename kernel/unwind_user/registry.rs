// SPDX-License-Identifier: GPL-2.0

//! Per-address-space registry of SFrame sections.
//!
//! Each `mm_struct` with at least one registration points (`mm->sframe`) to a
//! [`SframeMm`]: the unwinder's counters and an RCU-protected, immutable,
//! sorted [`Table`] of [`Entry`]s keyed by text range.
//!
//! Writers (exec, prctl, munmap, fork) hold the mmap write lock, build a new
//! table and publish it; the old one is freed after a grace period. Readers
//! (the unwind step, possibly in NMI later) take only `rcu_read_lock()` and
//! copy the entry they need out of the table before touching user memory,
//! since a user read may fault and sleep.
//!
//! The maple tree would serve as the index too, but its Rust abstraction only
//! loads under the tree's spinlock, which an NMI-time reader must not take;
//! a sorted array searched by binary search under RCU is NMI-safe and, with
//! at most [`MAX_SECTIONS`] entries, cheap to copy on the rare write.

use kernel::{
    alloc::{
        flags::{__GFP_NOWARN, __GFP_RETRY_MAYFAIL, GFP_KERNEL_ACCOUNT},
        Flags, KBox, KVVec,
    },
    bindings,
    error::code::{EEXIST, ENOENT, ENOSPC},
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        rcu, Arc,
    },
    types::Opaque,
};

/// Most sections one address space may register.
pub(crate) const MAX_SECTIONS: usize = 1024;

/// Largest section, in bytes, that may be registered.
pub(crate) const MAX_SECTION_SIZE: usize = 64 << 20;

/// Most bytes of FDE tables ([`Fdes`]) one address space may hold: 20
/// bytes a function (and 1 a row of functions with more than
/// [`FRE_MARK_EVERY`] rows), so about 800Ki functions. Everything the registry
/// allocates is charged to the memory cgroup of the task that registers.
pub(crate) const MAX_FDE_BYTES: usize = 16 << 20;

/// How the registry allocates: charged to the memory cgroup of the task
/// that registers (or forks), and failing with `ENOMEM` rather than
/// invoking the OOM killer when that cgroup is at its limit. Quietly: a
/// process can make these fail at will, and `ENOMEM` is its answer, not a
/// warning with a stack trace in the kernel log.
pub(crate) fn gfp() -> Flags {
    GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN
}

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
    /// Its size in bytes, at most [`MAX_SECTION_SIZE`].
    pub(crate) sframe_len: u32,
}

impl Section {
    fn overlaps(&self, start: usize, end: usize) -> bool {
        self.text_start < end && start < self.text_end
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
/// they are read.
pub(crate) struct Fdes {
    header: sframe::Header,
    packed: KVVec<sframe::PackedFde>,
    /// Sorted by function, then by start.
    marks: KVVec<FreMark>,
}

impl Fdes {
    /// The table of a section with `header`, its FDEs `packed` (in address
    /// order, relative to the text start) and the `marks` of their rows (by
    /// function, then start).
    pub(crate) fn new(
        header: sframe::Header,
        packed: KVVec<sframe::PackedFde>,
        marks: KVVec<FreMark>,
    ) -> Result<Arc<Fdes>> {
        Ok(Arc::new(
            Fdes {
                header,
                packed,
                marks,
            },
            gfp(),
        )?)
    }

    /// Kernel memory the table takes, as counted against [`MAX_FDE_BYTES`].
    pub(crate) fn bytes(&self) -> usize {
        self.packed.len() * core::mem::size_of::<sframe::PackedFde>()
            + self.marks.len() * core::mem::size_of::<FreMark>()
    }

    /// The FDE whose function contains `off` (from the text start), its
    /// index, and the last mark of its rows at or below `off`.
    fn find(&self, off: u64) -> Option<(u32, sframe::PackedFde, Option<sframe::FreMark>)> {
        let i = self
            .packed
            .partition_point(|f| u64::from(f.start()) <= off)
            .checked_sub(1)?;
        let f = *self.packed.get(i)?;
        if off >= f.end() {
            return None;
        }
        let i = u32::try_from(i).ok()?;
        // Below the function's end, so within 4 GiB of its start.
        let ip_off = u32::try_from(off - u64::from(f.start())).ok()?;
        let mark = self
            .marks
            .partition_point(|m| (m.fde, m.mark.start) <= (i, ip_off))
            .checked_sub(1)
            .and_then(|k| self.marks.get(k))
            .filter(|m| m.fde == i)
            .map(|m| m.mark);
        Some((i, f, mark))
    }
}

/// A plain frame's rule (the return address at CFA - 8) as the rule cache
/// keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CachedRule {
    /// CFA = SP (or FP, with `use_fp`) + `cfa_off`.
    pub(crate) cfa_off: i32,
    /// The caller's FP at CFA + `fp_off`; 0: FP is not saved.
    pub(crate) fp_off: i32,
    /// The CFA is based on FP.
    pub(crate) use_fp: bool,
}

/// What the rule cache knows of a PC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cached {
    /// The frame's rule.
    Rule(CachedRule),
    /// No section covers the PC, or its row leaves the frame to the frame
    /// pointer (and the PC is not the signal trampoline): the frame-pointer
    /// rule gets the frame.
    FramePointer,
    /// As [`Cached::FramePointer`], for a return address found in
    /// executable memory by a walk that may sleep: when the frame-pointer
    /// rule reads it again, it needs no VMA lookup.
    FramePointerInCode,
    /// The PC is in a section's text but no row describes it, and the
    /// section does not say its code keeps frame pointers: the walk ends.
    End,
}

/// A cache from PC to frame rule, one per address space: return addresses
/// repeat across samples, and a hit costs neither a search of the registry
/// nor a read of a section, so that the steady state of a walk reads only
/// the stack, like the frame-pointer walk.
///
/// Every registry change (a new table, an entry found malformed) advances
/// the address space's generation and empties the cache, and an entry
/// holds the generation it was computed in: a walk takes only entries of
/// the generation it started with (or last looked up in), so none outlives
/// the registration it came from, even one a racing reader stored after
/// the cache was emptied.
///
/// Four-way set-associative, 128 sets: a PC is stored in the first way of
/// its set, whose entries move one way down. Each slot is one 64-bit word,
/// read and written whole, so that readers and writers on any CPU, NMI
/// included, never see half an entry. Bits 63-16 are the key: the PC's bits
/// 46-7 (the set, picked by a hash of the PC, says the rest), the
/// generation's low 7 bits and whether the PC is a return address minus
/// one; bits 15-7 are the CFA offset in words (9 bits, signed), bits 6-1
/// the FP offset in words (6 bits, signed), bit 0 whether the CFA is based
/// on FP. A rule with a CFA offset of 0 (which the step refuses anyway)
/// means [`Cached::FramePointer`], [`Cached::End`] with bit 0 set, or
/// [`Cached::FramePointerInCode`] with bit 1 set. A rule that does not fit
/// is not cached;
/// a PC below the first page or above 2^47 is not cached. An empty slot
/// (0) reads as [`Cached::FramePointer`] for a PC below 128, which is what
/// the step gives such a PC anyway: the probe need not check for it.
pub(crate) struct RuleCache([Atomic<u64>; RuleCache::SETS * RuleCache::WAYS]);

impl RuleCache {
    const SETS: usize = 128;
    const WAYS: usize = 4;

    pub(crate) fn new() -> Result<KBox<Self>> {
        Ok(KBox::new(
            RuleCache(core::array::from_fn(|_| Atomic::new(0))),
            gfp(),
        )?)
    }

    /// The key of `pc` (`adj`: a return address minus one) in generation
    /// `gen`, in place (bits 63-16; the rule's bits clear); `None` for a PC
    /// above 2^47, which the cache does not hold.
    #[inline(always)]
    fn key(pc: usize, adj: bool, gen: u64) -> Option<u64> {
        let pc = pc as u64;
        if pc >> 47 != 0 {
            return None;
        }
        // The generation's low 7 bits are bits 7-1 of its word (bit 0
        // says whether anything is registered).
        Some(((pc & !0x7f) << 1 | gen & 0xfe | u64::from(adj)) << 16)
    }

    /// The ways of the set of `pc`, first to last.
    fn ways(&self, pc: usize) -> &[Atomic<u64>] {
        let i = Self::set(pc) * Self::WAYS;
        self.0.get(i..i + Self::WAYS).unwrap_or(&[])
    }

    /// The set of `pc`: its low 7 bits xor the next 7, which the key holds,
    /// so that the set and the key give back the whole PC. Return addresses
    /// differ in their low bits; folding in the next ones keeps those of
    /// functions 128 bytes apart out of one set.
    pub(crate) fn set(pc: usize) -> usize {
        (pc ^ pc >> 7) & 0x7f
    }

    /// Reads a slot as `READ_ONCE()` does, in line. [`Atomic::load`] calls
    /// an out-of-line C helper, `atomic64_read()`, and a probe of up to four
    /// of them is most of what a cached frame costs: each call makes the
    /// step save and restore the registers it lives in.
    #[inline(always)]
    fn read(slot: &Atomic<u64>) -> u64 {
        // SAFETY: `slot.as_ptr()` is valid and aligned for a `u64` as long
        // as `slot` lives. The unwinder builds for x86-64 only, where an
        // aligned 8-byte volatile load is one `mov`, atomic against the
        // writers, which store whole words with `Atomic::store()`
        // (`WRITE_ONCE()`): this is `READ_ONCE()`, as in `File::flags()`.
        unsafe { slot.as_ptr().read_volatile() }
    }

    #[inline(always)]
    pub(crate) fn get(&self, pc: usize, adj: bool, gen: u64) -> Option<Cached> {
        let key = Self::key(pc, adj, gen)?;
        let w = self
            .ways(pc)
            .iter()
            .map(Self::read)
            .find(|&w| w ^ key < 1 << 16)?;
        match w & 0xffff {
            0 => return Some(Cached::FramePointer),
            1 => return Some(Cached::End),
            2 => return Some(Cached::FramePointerInCode),
            _ => {}
        }
        // Sign-extend the 9- and 6-bit fields.
        let cfa_words = (((w >> 7) as i64) << 55 >> 55) as i32;
        let fp_words = (((w >> 1) as i64) << 58 >> 58) as i32;
        Some(Cached::Rule(CachedRule {
            cfa_off: cfa_words * 8,
            fp_off: fp_words * 8,
            use_fp: w & 1 != 0,
        }))
    }

    /// Stores what `pc` unwinds with, in generation `gen`, and returns the
    /// slot it went to and the word stored there.
    fn put(&self, pc: usize, adj: bool, gen: u64, c: Cached) -> Option<(&Atomic<u64>, u64)> {
        let rule = match c {
            Cached::FramePointer => 0,
            Cached::End => 1,
            Cached::FramePointerInCode => 2,
            Cached::Rule(r) => {
                let fits = r.cfa_off != 0
                    && r.cfa_off % 8 == 0
                    && (-256..256).contains(&(r.cfa_off / 8))
                    && r.fp_off % 8 == 0
                    && (-32..32).contains(&(r.fp_off / 8));
                if !fits {
                    return None;
                }
                let cfa = ((r.cfa_off / 8) as u64) & 0x1ff;
                let fp = ((r.fp_off / 8) as u64) & 0x3f;
                cfa << 7 | fp << 1 | u64::from(r.use_fp)
            }
        };
        let key = Self::key(pc, adj, gen).filter(|_| pc >= kernel::page::PAGE_SIZE)?;
        // The new entry goes first; the ones before its old place (or all
        // but the last) move one way down. Racing writers may lose an entry
        // or store one twice: either only costs a later lookup.
        let first = self.ways(pc).first()?;
        let mut carry = key | rule;
        for way in self.ways(pc) {
            let old = way.load(Relaxed);
            way.store(carry, Relaxed);
            if old ^ key < 1 << 16 {
                break;
            }
            carry = old;
        }
        Some((first, key | rule))
    }

    fn clear(&self) {
        for slot in &self.0 {
            slot.store(0, Relaxed);
        }
    }
}

/// What [`SframeMm::lookup`] copies out of the table for one PC.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    /// The registration's section and text.
    pub(crate) section: Section,
    /// Which registration it is, for [`SframeMm::mark_dead`].
    pub(crate) id: u64,
    /// The section's header, as validated at registration.
    pub(crate) header: sframe::Header,
    /// The function containing the PC, if any: (its index, its FDE).
    pub(crate) fde: Option<(u32, sframe::PackedFde)>,
    /// Where the walk of that function's rows may start for the PC.
    pub(crate) mark: Option<sframe::FreMark>,
}

/// What [`SframeMm::lookup`] found for a PC, in generation `gen` of the
/// registry.
pub(crate) struct Lookup {
    /// The registration covering the PC and its function, if any.
    pub(crate) found: Option<Found>,
    /// The generation the lookup saw, for [`SframeMm::remember`].
    pub(crate) gen: u64,
}

/// A table slot: the section and whether an unwind found it malformed.
struct Entry {
    section: Section,
    /// Unique in its address space: tells this registration from a later
    /// one of the same section at the same addresses.
    id: u64,
    /// Shared by the tables the entry is copied into.
    fdes: Arc<Fdes>,
    /// Set by a reader that found the section malformed; readers skip it and
    /// the next writer drops it. Atomic because readers hold no lock.
    dead: Atomic<bool>,
}

/// An immutable, sorted (by `text_start`), non-overlapping set of entries.
///
/// # Invariants
///
/// `entries` is sorted by `text_start` and no two text ranges overlap. Once
/// published it is only read, but for the `dead` flags.
struct Table {
    /// For `call_rcu()`; the table is boxed, so it does not move.
    rcu: Opaque<bindings::callback_head>,
    entries: KVVec<Entry>,
}

impl Table {
    /// Builds a table from live entries of `old` (if any) that `keep` accepts,
    /// plus `add`. Fails with `ENOMEM` only.
    fn rebuild(
        old: Option<&Table>,
        keep: impl Fn(&Section) -> bool,
        add: Option<Entry>,
    ) -> Result<KBox<Table>> {
        let mut entries = KVVec::new();
        let mut add = add;
        for e in old.map(|t| t.entries.as_slice()).unwrap_or(&[]) {
            if e.dead.load(Relaxed) || !keep(&e.section) {
                continue;
            }
            if add
                .as_ref()
                .is_some_and(|a| a.section.text_start < e.section.text_start)
            {
                if let Some(a) = add.take() {
                    entries.push(a, gfp())?;
                }
            }
            entries.push(e.copy(), gfp())?;
        }
        if let Some(a) = add {
            entries.push(a, gfp())?;
        }
        Ok(KBox::new(
            Table {
                rcu: Opaque::uninit(),
                entries,
            },
            gfp(),
        )?)
    }

    /// The live entry whose text contains `pc`, and its index.
    fn find(&self, pc: usize) -> Option<(usize, &Entry)> {
        let i = self
            .entries
            .partition_point(|e| e.section.text_start <= pc)
            .checked_sub(1)?;
        let e = self.entries.get(i)?;
        (pc < e.section.text_end && !e.dead.load(Relaxed)).then_some((i, e))
    }

    fn live(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| !e.dead.load(Relaxed))
    }
}

impl Entry {
    fn new(section: Section, id: u64, fdes: Arc<Fdes>) -> Self {
        Entry {
            section,
            id,
            fdes,
            dead: Atomic::new(false),
        }
    }

    /// The same registration, for a new table.
    fn copy(&self) -> Self {
        Entry::new(self.section, self.id, self.fdes.clone())
    }
}

/// Counters a person debugging can read through `UNWIND_USER_QUERY`.
///
/// Every SFrame lookup ends in exactly one of `sframe_frames`,
/// `fp_fallbacks`, `errors` and `nofault_faults`: their sum is the number
/// of lookups (`unwinds` in the query).
///
/// On cache lines of their own: every walk of every thread adds to them at
/// its end, and none of that traffic should evict the fields every step
/// reads (the table, the generation, the rule cache's address).
#[repr(C, align(64))]
pub(crate) struct Counters {
    pub(crate) sframe_frames: Atomic<u64>,
    pub(crate) fp_fallbacks: Atomic<u64>,
    pub(crate) errors: Atomic<u64>,
    pub(crate) dropped: Atomic<u64>,
    /// Frames unwound with SFrame at NMI or IRQ time.
    pub(crate) nofault_frames: Atomic<u64>,
    /// Walks ended at NMI or IRQ time because a read of the section would
    /// have faulted.
    pub(crate) nofault_faults: Atomic<u64>,
    /// SFrame frames whose rule came from the rule cache.
    pub(crate) cached_frames: Atomic<u64>,
    /// User copies of section bytes, and the bytes, made while unwinding.
    pub(crate) section_reads: Atomic<u64>,
    pub(crate) section_bytes: Atomic<u64>,
}

impl Counters {
    pub(crate) fn inc(c: &Atomic<u64>) {
        c.add(1, Relaxed);
    }

    /// Adds `n`, touching the counter only if `n` is not 0.
    pub(crate) fn add(c: &Atomic<u64>, n: impl Into<u64>) {
        let n = n.into();
        if n != 0 {
            c.add(n, Relaxed);
        }
    }
}

/// The unwinder's state for one address space; `mm->sframe` points to it.
///
/// # Invariants
///
/// `table` is null or points to a [`Table`] owned by this object, replaced
/// only with the mmap write lock held; retired tables are freed after an RCU
/// grace period. The object lives until the mm is freed.
pub(crate) struct SframeMm {
    table: Atomic<*mut Table>,
    /// The id of the next registration; only writers (serialised) use it.
    next_id: Atomic<u64>,
    /// The generation, advanced on every change a cached rule may depend
    /// on, shifted left by one; bit 0 says whether the current table has an
    /// entry. A walk starts with one read of it.
    gen: Atomic<u64>,
    cache: KBox<RuleCache>,
    pub(crate) counters: Counters,
}

/// Preemption off while it lives: `preempt_disable()` to
/// `preempt_enable()`, for a few instructions, in any context.
struct NoPreempt;

impl NoPreempt {
    fn new() -> Self {
        // SAFETY: Only raises the preemption count, which `drop` lowers.
        unsafe { bindings::preempt_disable() };
        NoPreempt
    }
}

impl Drop for NoPreempt {
    fn drop(&mut self) {
        // SAFETY: Paired with the `preempt_disable()` of `new`.
        unsafe { bindings::preempt_enable() };
    }
}

/// `mm->sframe` as an atomic pointer.
///
/// # Safety
///
/// `mm` must point to a live `mm_struct`.
unsafe fn slot<'a>(mm: *mut bindings::mm_struct) -> &'a Atomic<*mut SframeMm> {
    // SAFETY: `mm` is live (the caller's contract); the field is a pointer,
    // only ever accessed atomically, through this function.
    unsafe { Atomic::from_ptr((&raw mut (*mm).__bindgen_anon_1.sframe).cast::<*mut SframeMm>()) }
}

impl SframeMm {
    /// The state of `mm`, if it ever had a registration.
    ///
    /// # Safety
    ///
    /// `mm` must point to a live `mm_struct`, and stay live for `'a`.
    pub(crate) unsafe fn get<'a>(mm: *mut bindings::mm_struct) -> Option<&'a SframeMm> {
        // SAFETY: The caller guarantees `mm` is live.
        let p = unsafe { slot(mm) }.load(Acquire);
        // SAFETY: A non-null `mm->sframe` points to a `SframeMm` that lives as
        // long as the mm (type invariant).
        unsafe { p.as_ref() }
    }

    /// A new state with no registration.
    pub(crate) fn new() -> Result<KBox<SframeMm>> {
        Ok(KBox::new(
            SframeMm {
                table: Atomic::new(core::ptr::null_mut()),
                next_id: Atomic::new(1),
                gen: Atomic::new(0),
                cache: RuleCache::new()?,
                counters: Counters {
                    sframe_frames: Atomic::new(0),
                    fp_fallbacks: Atomic::new(0),
                    errors: Atomic::new(0),
                    dropped: Atomic::new(0),
                    nofault_frames: Atomic::new(0),
                    nofault_faults: Atomic::new(0),
                    cached_frames: Atomic::new(0),
                    section_reads: Atomic::new(0),
                    section_bytes: Atomic::new(0),
                },
            },
            gfp(),
        )?)
    }

    /// The state of `mm`, created if needed.
    ///
    /// # Safety
    ///
    /// `mm` must be live and its mmap write lock held.
    pub(crate) unsafe fn get_or_create<'a>(mm: *mut bindings::mm_struct) -> Result<&'a SframeMm> {
        // SAFETY: The caller guarantees `mm` is live and locked.
        if let Some(s) = unsafe { Self::get(mm) } {
            return Ok(s);
        }
        let p = KBox::into_raw(Self::new()?);
        // SAFETY: `mm` is live; writers are serialised by the mmap lock, so
        // the slot is still null.
        unsafe { slot(mm) }.store(p, Release);
        // SAFETY: Just allocated; freed only with the mm.
        Ok(unsafe { &*p })
    }

    /// The current table, for a reader: it stays live while `_rcu` is held
    /// (a writer that retires it frees it after a grace period).
    fn table<'a>(&'a self, _rcu: &'a rcu::Guard) -> Option<&'a Table> {
        // SAFETY: A non-null table is live until a writer retires it, and a
        // retired table is freed only after an RCU grace period, which cannot
        // end while `_rcu` is held.
        unsafe { self.table.load(Acquire).as_ref() }
    }

    /// The current table, for a writer.
    ///
    /// # Safety
    ///
    /// The caller is the only writer for as long as it uses the table: it
    /// holds the mmap write lock of the mm this state belongs to, or the
    /// state is not shared yet. Only writers retire tables.
    unsafe fn table_exclusive(&self) -> Option<&Table> {
        // SAFETY: No other writer can retire the table while the caller
        // uses it (the caller's contract).
        unsafe { self.table.load(Acquire).as_ref() }
    }

    /// The generation of the registry now, what a walk starts with, if
    /// anything is registered.
    pub(crate) fn walk_gen(&self) -> Option<u64> {
        Some(self.gen()).filter(|g| g & 1 != 0)
    }

    /// The generation word now.
    pub(crate) fn gen(&self) -> u64 {
        self.gen.load(Acquire)
    }

    /// Starts a new generation, with `registered` in bit 0 (`None`: as it
    /// was): no walk that starts later takes a rule cached before, and the
    /// cache is emptied for them.
    fn invalidate(&self, registered: Option<bool>) {
        let mut old = self.gen.load(Relaxed);
        loop {
            let bit = registered.map_or(old & 1, u64::from);
            match self
                .gen
                .cmpxchg(old, (old.wrapping_add(2) & !1) | bit, Full)
            {
                Ok(_) => break,
                Err(cur) => old = cur,
            }
        }
        self.cache.clear();
    }

    /// Publishes `new`, retiring the old table after a grace period.
    fn publish(&self, new: KBox<Table>) {
        let registered = !new.entries.is_empty();
        let old = self.table.xchg(KBox::into_raw(new), Full);
        self.invalidate(Some(registered));
        if !old.is_null() {
            // SAFETY: `old` came from `KBox::into_raw` and is no longer
            // reachable from `self`; `free_table_rcu` frees it after all
            // readers that could have seen it are gone.
            unsafe { bindings::call_rcu((*old).rcu.get(), Some(free_table_rcu)) };
        }
    }

    /// Registers `s`, whose validated header and FDEs are `fdes`. `ENOSPC`
    /// when the address space has [`MAX_SECTIONS`] registrations or their
    /// FDE tables would pass [`MAX_FDE_BYTES`].
    ///
    /// # Safety
    ///
    /// As for [`SframeMm::table_exclusive`]: the caller holds the mmap write
    /// lock, or the state is not shared.
    pub(crate) unsafe fn add(&self, s: Section, fdes: Arc<Fdes>) -> Result {
        // SAFETY: The caller's contract.
        let old = unsafe { self.table_exclusive() };
        let live = || old.into_iter().flat_map(Table::live);
        let bytes = live()
            .map(|e| e.fdes.bytes())
            .fold(fdes.bytes(), usize::saturating_add);
        if live().count() >= MAX_SECTIONS || bytes > MAX_FDE_BYTES {
            return Err(ENOSPC);
        }
        if live().any(|e| e.section.overlaps(s.text_start, s.text_end)) {
            return Err(EEXIST);
        }
        let id = self.next_id.fetch_add(1, Relaxed);
        self.publish(Table::rebuild(
            old,
            |_| true,
            Some(Entry::new(s, id, fdes)),
        )?);
        Ok(())
    }

    /// Removes the registration whose text starts at `text_start`.
    ///
    /// # Safety
    ///
    /// As for [`SframeMm::add`].
    pub(crate) unsafe fn remove(&self, text_start: usize) -> Result {
        // SAFETY: The caller's contract.
        let old = unsafe { self.table_exclusive() }.ok_or(ENOENT)?;
        if !old.live().any(|e| e.section.text_start == text_start) {
            return Err(ENOENT);
        }
        self.publish(Table::rebuild(
            Some(old),
            |e| e.text_start != text_start,
            None,
        )?);
        Ok(())
    }

    /// Removes every registration whose text or section overlaps
    /// `[start, end)`, which is being unmapped. On allocation failure the
    /// affected entries are marked dead instead, so that no reader uses them.
    ///
    /// # Safety
    ///
    /// As for [`SframeMm::add`].
    pub(crate) unsafe fn unmap(&self, start: usize, end: usize) {
        // SAFETY: The caller's contract.
        let Some(old) = (unsafe { self.table_exclusive() }) else {
            return;
        };
        let hit = |e: &Section| {
            let sframe_end = e.sframe_start.saturating_add(e.sframe_len as usize);
            e.overlaps(start, end) || (e.sframe_start < end && start < sframe_end)
        };
        if !old.live().any(|e| hit(&e.section)) {
            return;
        }
        match Table::rebuild(Some(old), |e| !hit(e), None) {
            Ok(t) => self.publish(t),
            Err(_) => {
                old.entries
                    .iter()
                    .filter(|e| hit(&e.section))
                    .for_each(|e| e.dead.store(true, Relaxed));
                self.invalidate(None);
            }
        }
    }

    /// Copies the live registrations that `keep` accepts into `dst`, an
    /// empty state of a new mm (fork), ids included.
    ///
    /// # Safety
    ///
    /// As for [`SframeMm::add`], for both states: the caller holds both mmap
    /// write locks, or the states are not shared.
    pub(crate) unsafe fn copy_to(&self, dst: &SframeMm, keep: impl Fn(&Section) -> bool) -> Result {
        // SAFETY: The caller's contract.
        if let Some(old) = unsafe { self.table_exclusive() } {
            dst.publish(Table::rebuild(Some(old), keep, None)?);
            dst.next_id.store(self.next_id.load(Relaxed), Relaxed);
        }
        Ok(())
    }

    /// Number of live registrations.
    pub(crate) fn len(&self) -> usize {
        let guard = rcu::read_lock();
        self.table(&guard).map(|t| t.live().count()).unwrap_or(0)
    }

    /// The rule cache, read without a lock.
    #[inline(always)]
    pub(crate) fn cached(&self, pc: usize, adj: bool, gen: u64) -> Option<Cached> {
        self.cache.get(pc, adj, gen)
    }

    /// The registration covering `pc` and the function there, copied out
    /// under RCU: no user memory is read.
    pub(crate) fn lookup(&self, pc: usize) -> Lookup {
        let guard = rcu::read_lock();
        // Read before the table: a rule found in this table and cached with
        // this generation is then never newer than its generation says.
        let gen = self.gen();
        let found = self.table(&guard).and_then(|t| t.find(pc)).map(|(_, e)| {
            let off = pc.wrapping_sub(e.section.text_start) as u64;
            let f = e.fdes.find(off);
            Found {
                section: e.section,
                id: e.id,
                header: e.fdes.header,
                fde: f.map(|(i, fde, _)| (i, fde)),
                mark: f.and_then(|(_, _, m)| m),
            }
        });
        Lookup { found, gen }
    }

    /// Is `pc` in the text of a live registration? Such text was one
    /// executable mapping when it was registered, and unmapping any of it
    /// drops the registration. Lock-free.
    pub(crate) fn covers(&self, pc: usize) -> bool {
        let guard = rcu::read_lock();
        self.table(&guard).and_then(|t| t.find(pc)).is_some()
    }

    /// Caches what `pc` (`adj`: a return address minus one) unwinds with,
    /// as found by a lookup in generation `gen`, unless the registry has
    /// changed since (the answer may be stale, and a walk of the new
    /// generation must not take it).
    ///
    /// A slot holds 7 bits of the generation, so a rule stored after 128
    /// changes (or a multiple) since the check would pass for current: the
    /// check and the store are made with preemption off, a few instructions
    /// apart, and a second check takes back a store that a change overtook
    /// (the change emptied the cache before the store landed).
    pub(crate) fn remember(&self, pc: usize, adj: bool, gen: u64, c: Cached) {
        let _no_preempt = NoPreempt::new();
        if self.gen() != gen {
            return;
        }
        if let Some((slot, word)) = self.cache.put(pc, adj, gen, c) {
            // The store before the load: a writer's change and emptying of
            // the cache, seen or not, is ordered with it.
            kernel::sync::barrier::smp_mb();
            if self.gen() != gen {
                // Only if no writer replaced it since; a lost entry only
                // costs a later lookup.
                let _ = slot.cmpxchg(word, 0, Relaxed);
            }
        }
    }

    /// Marks the registration `found` came from dead if it is still
    /// registered: an unwind found its section malformed. Lock-free; the
    /// next writer removes it. A later registration of the same section at
    /// the same place has another id and is left alone.
    pub(crate) fn mark_dead(&self, found: &Found) {
        let guard = rcu::read_lock();
        if let Some((_, e)) = self
            .table(&guard)
            .and_then(|t| t.find(found.section.text_start))
        {
            if e.id == found.id && !e.dead.xchg(true, Relaxed) {
                self.invalidate(None);
                Counters::inc(&self.counters.dropped);
            }
        }
    }

    /// Frees the state of `mm`, which is being destroyed.
    ///
    /// # Safety
    ///
    /// `mm` must be live and have no users left (no reader can run).
    pub(crate) unsafe fn free(mm: *mut bindings::mm_struct) {
        // SAFETY: The caller guarantees `mm` is live.
        let p = unsafe { slot(mm) }.xchg(core::ptr::null_mut(), Full);
        if p.is_null() {
            return;
        }
        // SAFETY: `p` came from `KBox::into_raw` in `get_or_create` and, with
        // the mm gone, nothing else refers to it.
        drop(unsafe { KBox::from_raw(p) });
    }
}

impl Drop for SframeMm {
    /// Frees the current table: when the state goes, no reader can hold it
    /// (the mm has no users left, or the state was never published).
    fn drop(&mut self) {
        let t = self.table.load(Relaxed);
        if !t.is_null() {
            // SAFETY: `t` came from `KBox::into_raw` in `publish` and, per the
            // above, no reader can see it any more.
            drop(unsafe { KBox::from_raw(t) });
        }
    }
}

/// `call_rcu()` callback freeing a retired [`Table`].
///
/// # Safety
///
/// `head` must be the `rcu` field of a `Table` allocated by `KBox`, retired
/// by [`SframeMm::publish`].
unsafe extern "C" fn free_table_rcu(head: *mut bindings::callback_head) {
    // SAFETY: `head` is the `rcu` field of a `Table` (the caller's contract);
    // `Opaque<T>` is `repr(transparent)`.
    let table = unsafe {
        kernel::container_of!(head.cast::<Opaque<bindings::callback_head>>(), Table, rcu)
    };
    // SAFETY: The table came from `KBox::into_raw` and the grace period has
    // passed: no reader holds it.
    drop(unsafe { KBox::from_raw(table) });
}
