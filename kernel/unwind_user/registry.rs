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
    alloc::{flags::GFP_KERNEL, KBox, KVec},
    bindings,
    error::code::{E2BIG, EEXIST, EINVAL, ENOENT},
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

/// One registered section: the text it describes and where it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Section {
    /// First byte of the code the section describes.
    pub(crate) text_start: usize,
    /// One past the last byte of that code.
    pub(crate) text_end: usize,
    /// User address of the `.sframe` section.
    pub(crate) sframe_start: usize,
    /// Its size in bytes, at most [`MAX_SECTION_SIZE`].
    pub(crate) sframe_len: u32,
}

impl Section {
    fn overlaps(&self, start: usize, end: usize) -> bool {
        self.text_start < end && start < self.text_end
    }
}

/// Which FDEs can describe a text block: an ORC-style lookup index built
/// at registration, so that a lookup binary-searches a handful of FDEs of
/// the user's table instead of all of them (each probe is a user copy).
///
/// `first[b]` is the index of the first FDE that ends after the start of
/// block `b` (blocks of `1 << shift` bytes from the text start); the FDEs
/// that can contain a PC of block `b` are `first[b]..=first[b + 1]`.
pub(crate) struct BlockIndex {
    shift: u32,
    first: KVec<u32>,
}

impl BlockIndex {
    /// Smallest block: 256 bytes, as ORC's.
    const MIN_SHIFT: u32 = 8;
    /// At most 64Ki blocks (256 KiB): larger texts get larger blocks.
    const MAX_BLOCKS: usize = 1 << 16;

    /// Builds the index of a text of `text_len` bytes from the end offsets
    /// (from the text start) of its FDEs, in address order.
    pub(crate) fn new(
        text_len: usize,
        mut fde_ends: impl Iterator<Item = Result<u64>>,
    ) -> Result<Arc<BlockIndex>> {
        let mut shift = Self::MIN_SHIFT;
        while text_len >> shift >= Self::MAX_BLOCKS {
            shift += 1;
        }
        let blocks = (text_len >> shift) + 1;
        let mut first = KVec::with_capacity(blocks, GFP_KERNEL)?;
        let (mut i, mut end) = (0u32, fde_ends.next().transpose()?);
        for b in 0..blocks {
            let block_start = (b as u64) << shift;
            while end.is_some_and(|e| e <= block_start) {
                i = i.checked_add(1).ok_or(EINVAL)?;
                end = fde_ends.next().transpose()?;
            }
            first.push(i, GFP_KERNEL)?;
        }
        Ok(Arc::new(BlockIndex { shift, first }, GFP_KERNEL)?)
    }

    /// The range of FDE indices that can contain the PC `off` bytes into
    /// the text: a hint for `sframe::Section::find_in()`.
    fn hint(&self, off: usize) -> FdeRange {
        let b = off >> self.shift;
        let lo = self.first.get(b).copied().unwrap_or(0);
        let hi = match self.first.get(b + 1) {
            Some(&n) => n.saturating_add(1),
            None => u32::MAX,
        };
        FdeRange { lo, hi }
    }
}

/// FDE indices `lo..hi` where a lookup searches; all of them without an
/// index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FdeRange {
    pub(crate) lo: u32,
    pub(crate) hi: u32,
}

/// A table slot: the section and whether an unwind found it malformed.
struct Entry {
    section: Section,
    /// Shared by the tables the entry is copied into.
    index: Option<Arc<BlockIndex>>,
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
    entries: KVec<Entry>,
}

impl Table {
    /// Builds a table from live entries of `old` (if any) that `keep` accepts,
    /// plus `add`. Fails with `ENOMEM` only.
    fn rebuild(
        old: Option<&Table>,
        keep: impl Fn(&Section) -> bool,
        add: Option<(Section, Option<Arc<BlockIndex>>)>,
    ) -> Result<KBox<Table>> {
        let mut entries = KVec::new();
        let mut add = add;
        for e in old.map(|t| t.entries.as_slice()).unwrap_or(&[]) {
            if e.dead.load(Relaxed) || !keep(&e.section) {
                continue;
            }
            if add
                .as_ref()
                .is_some_and(|(a, _)| a.text_start < e.section.text_start)
            {
                if let Some((a, index)) = add.take() {
                    entries.push(Entry::new(a, index), GFP_KERNEL)?;
                }
            }
            entries.push(Entry::new(e.section, e.index.clone()), GFP_KERNEL)?;
        }
        if let Some((a, index)) = add {
            entries.push(Entry::new(a, index), GFP_KERNEL)?;
        }
        Ok(KBox::new(
            Table {
                rcu: Opaque::uninit(),
                entries,
            },
            GFP_KERNEL,
        )?)
    }

    /// The live entry whose text contains `pc`.
    fn find(&self, pc: usize) -> Option<&Entry> {
        let i = self
            .entries
            .partition_point(|e| e.section.text_start <= pc)
            .checked_sub(1)?;
        let e = self.entries.get(i)?;
        (pc < e.section.text_end && !e.dead.load(Relaxed)).then_some(e)
    }

    fn live(&self) -> impl Iterator<Item = &Section> {
        self.entries
            .iter()
            .filter(|e| !e.dead.load(Relaxed))
            .map(|e| &e.section)
    }
}

impl Entry {
    fn new(section: Section, index: Option<Arc<BlockIndex>>) -> Self {
        Entry {
            section,
            index,
            dead: Atomic::new(false),
        }
    }
}

/// Counters a person debugging can read through `UNWIND_USER_QUERY`.
pub(crate) struct Counters {
    pub(crate) unwinds: Atomic<u64>,
    pub(crate) sframe_frames: Atomic<u64>,
    pub(crate) fp_fallbacks: Atomic<u64>,
    pub(crate) errors: Atomic<u64>,
    pub(crate) dropped: Atomic<u64>,
    /// Frames unwound with SFrame at NMI or IRQ time.
    pub(crate) nofault_frames: Atomic<u64>,
    /// Frames left to frame pointers at NMI or IRQ time because a read of
    /// the section would have faulted.
    pub(crate) nofault_faults: Atomic<u64>,
}

impl Counters {
    pub(crate) fn inc(c: &Atomic<u64>) {
        c.add(1, Relaxed);
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
    pub(crate) counters: Counters,
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
                counters: Counters {
                    unwinds: Atomic::new(0),
                    sframe_frames: Atomic::new(0),
                    fp_fallbacks: Atomic::new(0),
                    errors: Atomic::new(0),
                    dropped: Atomic::new(0),
                    nofault_frames: Atomic::new(0),
                    nofault_faults: Atomic::new(0),
                },
            },
            GFP_KERNEL,
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

    /// The current table. Callers hold the mmap write lock (no grace period
    /// needed: only they replace it) or `rcu_read_lock()`.
    fn table(&self) -> Option<&Table> {
        // SAFETY: A non-null table is live until a writer retires it, which
        // waits for readers (RCU) and is excluded for writers by the lock.
        unsafe { self.table.load(Acquire).as_ref() }
    }

    /// Publishes `new`, retiring the old table after a grace period.
    fn publish(&self, new: KBox<Table>) {
        let old = self.table.xchg(KBox::into_raw(new), Full);
        if !old.is_null() {
            // SAFETY: `old` came from `KBox::into_raw` and is no longer
            // reachable from `self`; `free_table_rcu` frees it after all
            // readers that could have seen it are gone.
            unsafe { bindings::call_rcu((*old).rcu.get(), Some(free_table_rcu)) };
        }
    }

    /// Registers `s`. The caller holds the mmap write lock.
    pub(crate) fn add(&self, s: Section, index: Option<Arc<BlockIndex>>) -> Result {
        let old = self.table();
        let live = old.map(|t| t.live().count()).unwrap_or(0);
        if live >= MAX_SECTIONS {
            return Err(E2BIG);
        }
        if old.is_some_and(|t| t.live().any(|e| e.overlaps(s.text_start, s.text_end))) {
            return Err(EEXIST);
        }
        self.publish(Table::rebuild(old, |_| true, Some((s, index)))?);
        Ok(())
    }

    /// Removes the registration whose text starts at `text_start`.
    /// The caller holds the mmap write lock.
    pub(crate) fn remove(&self, text_start: usize) -> Result {
        let old = self.table().ok_or(ENOENT)?;
        if !old.live().any(|e| e.text_start == text_start) {
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
    /// `[start, end)`, which is being unmapped. The caller holds the mmap
    /// write lock. On allocation failure the affected entries are marked dead
    /// instead, so that no reader uses them.
    pub(crate) fn unmap(&self, start: usize, end: usize) {
        let Some(old) = self.table() else { return };
        let hit = |e: &Section| {
            let sframe_end = e.sframe_start.saturating_add(e.sframe_len as usize);
            e.overlaps(start, end) || (e.sframe_start < end && start < sframe_end)
        };
        if !old.live().any(hit) {
            return;
        }
        match Table::rebuild(Some(old), |e| !hit(e), None) {
            Ok(t) => self.publish(t),
            Err(_) => old
                .entries
                .iter()
                .filter(|e| hit(&e.section))
                .for_each(|e| e.dead.store(true, Relaxed)),
        }
    }

    /// Copies every live registration into `dst`, an empty state of a new mm
    /// (fork). The caller holds `self`'s mmap write lock.
    pub(crate) fn copy_to(&self, dst: &SframeMm) -> Result {
        if let Some(old) = self.table() {
            dst.publish(Table::rebuild(Some(old), |_| true, None)?);
        }
        Ok(())
    }

    /// Number of live registrations.
    pub(crate) fn len(&self) -> usize {
        let _guard = rcu::read_lock();
        self.table().map(|t| t.live().count()).unwrap_or(0)
    }

    /// The registration covering `pc` and where to search its FDEs, copied
    /// out under RCU.
    pub(crate) fn lookup(&self, pc: usize) -> Option<(Section, FdeRange)> {
        let _guard = rcu::read_lock();
        let e = self.table()?.find(pc)?;
        let range = match &e.index {
            Some(index) => index.hint(pc.wrapping_sub(e.section.text_start)),
            None => FdeRange {
                lo: 0,
                hi: u32::MAX,
            },
        };
        Some((e.section, range))
    }

    /// Marks `s` dead if it is still registered: an unwind found it
    /// malformed. Lock-free; the next writer removes it.
    pub(crate) fn mark_dead(&self, s: &Section) {
        let _guard = rcu::read_lock();
        if let Some(e) = self.table().and_then(|t| t.find(s.text_start)) {
            if e.section == *s && !e.dead.xchg(true, Relaxed) {
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
