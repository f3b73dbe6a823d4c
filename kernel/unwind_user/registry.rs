// SPDX-License-Identifier: GPL-2.0

//! Per-address-space registry of SFrame sections.
//!
//! Each `mm_struct` that has a registry (from the first walk or
//! registration that needs one, or from a mapping of a file whose table
//! describes it) points (`mm->sframe`) to a [`SframeMm`]: an
//! RCU-protected, immutable, sorted [`Table`] of [`Entry`]s keyed by text
//! range, with the address space's rule cache, attach state and counters.
//! Until then `mm->sframe` holds the attach state exec recorded, in one
//! word with bit 0 set ([`Bare`]), or nothing.
//!
//! Writers (exec, prctl, munmap, fork) hold the mmap write lock, which a
//! [`RegistryWriter`] proves, build a new table and publish it; the old one
//! is freed after a grace period. Readers (the unwind step, in task context
//! or at NMI time) take only `rcu_read_lock()` and
//! copy the entry they need out of the table before touching user memory,
//! since a user read may fault and sleep. Each registry also holds the
//! address space's rule cache (`rule_cache.rs`) and its counters.
//!
//! The maple tree would serve as the index too, but its Rust abstraction only
//! loads under the tree's spinlock, which an NMI-time reader must not take;
//! a sorted array searched by binary search under RCU is NMI-safe and, with
//! at most [`MAX_SECTIONS`] entries, cheap to copy on the rare write.

use crate::{
    attach_state::{AttachState, Bare},
    counters::Counters,
    memory::gfp,
    mmap_lock::LockedMm,
    rule_cache::{Cached, RuleCache, GEN_COUNT, GEN_REGISTERED},
    section::{Answer, KnownRow, Section, SectionTable},
    word::{read_acquire, read_once, write_once, NoPreempt},
};
use kernel::{
    alloc::{KBox, KVVec},
    bindings,
    error::code::{EEXIST, ENOENT, ENOSPC},
    mm::MmWithUser,
    prelude::*,
    sync::{
        atomic::{Acquire, Atomic, Full, Relaxed, Release},
        rcu, Arc,
    },
    types::Opaque,
};

/// Most sections one address space may register (`prctl()`).
pub(crate) const MAX_SECTIONS: usize = 1024;

/// Most files' tables one address space may have attached, apart from its
/// registrations: a process that maps a thousand libraries still has room
/// for a JIT's sections.
pub(crate) const MAX_FILE_TABLES: usize = 4096;

/// Largest section, in bytes, that may be registered.
pub(crate) const MAX_SECTION_SIZE: usize = 64 << 20;

/// Most bytes of FDE tables ([`SectionTable`]) one address space may hold: 20
/// bytes a function (and 1 a row of functions with more than
/// [`FRE_MARK_EVERY`] rows), so about 800Ki functions. Everything the registry
/// allocates is charged to the memory cgroup of the task that registers.
pub(crate) const MAX_FDE_BYTES: usize = 16 << 20;

/// What [`SframeMm::lookup`] copies out of the table for one PC.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    /// The registration's section and text.
    pub(crate) section: Section,
    /// Which registration it is, for [`SframeMm::mark_dead`].
    pub(crate) id: u64,
    /// The section's header, as validated at registration.
    pub(crate) header: sframe::Header,
    /// What the section's table knows of the PC's row.
    pub(crate) answer: Answer,
}

impl Found {
    /// The PC's row, if the lookup found it decoded.
    pub(crate) fn known_row(&self) -> Option<sframe::Row> {
        let KnownRow::Row(row) = self.answer.known else {
            return None;
        };
        let (i, f) = self.answer.fde?;
        let fde = f
            .unpack(self.header.version, self.section.text_start as u64, i)
            .ok()?;
        row.unpack(&self.header, &fde)
    }
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
    fdes: Arc<SectionTable>,
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
    /// plus `add`, in text order. Fails with `ENOMEM` only.
    fn rebuild(
        old: Option<&Table>,
        keep: impl Fn(&Section) -> bool,
        add: impl IntoIterator<Item = Entry>,
    ) -> Result<KBox<Table>> {
        let mut entries = KVVec::new();
        let mut add = add.into_iter().peekable();
        for e in old.map(|t| t.entries.as_slice()).unwrap_or(&[]) {
            if e.dead.load(Relaxed) || !keep(&e.section) {
                continue;
            }
            while let Some(a) = add.next_if(|a| a.section.text_start < e.section.text_start) {
                entries.push(a, gfp())?;
            }
            entries.push(e.copy(), gfp())?;
        }
        for a in add {
            entries.push(a, gfp())?;
        }
        // INVARIANT: `old`'s entries are sorted and apart (its invariant),
        // and every caller gives `add` in text order, overlapping neither
        // each other nor `old`'s live entries; the dead ones, which `add` may
        // overlap, are dropped above (an entry never comes back to life):
        // merged in text order, they stay sorted and apart.
        Ok(KBox::new(
            Table {
                rcu: Opaque::uninit(),
                entries,
            },
            gfp(),
        )?)
    }

    /// [`find`](Self::find), trying entry `hint` first: a stack's frames
    /// come in runs of one object's. No two texts overlap, so an entry
    /// whose text contains `pc` is the one `find` would give.
    #[inline(always)]
    fn find_from(&self, hint: usize, pc: usize) -> Option<(usize, &Entry)> {
        match self.entries.get(hint) {
            Some(e) if e.section.contains(pc) && !read_once(&e.dead) => Some((hint, e)),
            _ => self.find(pc),
        }
    }

    /// The live entry whose text contains `pc`, and its index.
    fn find(&self, pc: usize) -> Option<(usize, &Entry)> {
        let i = self
            .entries
            .partition_point(|e| e.section.text_start <= pc)
            .checked_sub(1)?;
        let e = self.entries.get(i)?;
        (pc < e.section.text_end && !read_once(&e.dead)).then_some((i, e))
    }

    fn live(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| !e.dead.load(Relaxed))
    }

    /// Does the text of a live entry overlap `[start, end)`? A binary
    /// search: texts are sorted and do not overlap, so their ends are
    /// sorted too, and only the entries before `end` that end after
    /// `start` can.
    fn overlaps(&self, start: usize, end: usize) -> bool {
        let before_end = self.entries.partition_point(|e| e.section.text_start < end);
        self.entries
            .get(..before_end)
            .unwrap_or(&[])
            .iter()
            .rev()
            .take_while(|e| e.section.text_end > start)
            .any(|e| !e.dead.load(Relaxed))
    }
}

impl Entry {
    fn new(section: Section, id: u64, fdes: Arc<SectionTable>) -> Self {
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

/// What an address space's registrations take of its limits: one whose
/// section is in user memory counts against [`MAX_SECTIONS`], with its FDE
/// table against [`MAX_FDE_BYTES`]; a file's table (in kernel memory,
/// shared, counted against the machine's budget) against
/// [`MAX_FILE_TABLES`] alone; the vDSO's against nothing.
#[derive(Clone, Copy, Default)]
struct Room {
    sections: usize,
    files: usize,
    bytes: usize,
}

impl Room {
    /// What the live registrations of `table` take.
    fn of(table: Option<&Table>) -> Self {
        table
            .into_iter()
            .flat_map(Table::live)
            .fold(Room::default(), |r, e| r.with(&e.section, &e.fdes))
    }

    /// `self` with `s`, whose table is `fdes`, taken too.
    fn with(self, s: &Section, fdes: &SectionTable) -> Self {
        match (fdes.is_kernel_code(), s.in_kernel) {
            (true, _) => self,
            (false, true) => Room {
                files: self.files + 1,
                ..self
            },
            (false, false) => Room {
                sections: self.sections + 1,
                bytes: self.bytes.saturating_add(fdes.bytes()),
                ..self
            },
        }
    }

    /// Is it within the limits?
    fn fits(&self) -> bool {
        self.sections <= MAX_SECTIONS
            && self.files <= MAX_FILE_TABLES
            && self.bytes <= MAX_FDE_BYTES
    }
}

/// The unwinder's state for one address space; `mm->sframe` points to it.
///
/// # Invariants
///
/// `table` is null or points to a [`Table`] owned by this object, replaced
/// only with the mmap write lock held; retired tables are freed after an RCU
/// grace period. The object lives until the mm has no users left
/// (`__mmput()`), or, in a child of fork whose copy failed, until
/// `unwind_user_sframe_mm_dup()` frees it before any task runs with the mm.
pub(crate) struct SframeMm {
    table: Atomic<*mut Table>,
    /// Whether the address space has the tables of the files it maps.
    pub(crate) attach: AttachState,
    /// The id of the next registration; only writers (serialised) use it.
    next_id: Atomic<u64>,
    /// The generation word ([`GEN_COUNT`], [`GEN_REGISTERED`]). A walk
    /// starts with one read of it.
    gen: Atomic<u64>,
    cache: KBox<RuleCache>,
    /// Not 0 once a rule was stored since `cache` was last emptied: a walk
    /// that starts with it 0 does not probe first (a hint: a racing store
    /// may be missed, which only costs a lookup).
    cache_filled: Atomic<u64>,
    pub(crate) counters: Counters,
}

/// How many address spaces have a registry, machine-wide.
static REGISTRIES: Atomic<u64> = Atomic::new(0);

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
    /// The registry of `mm`, if it has one: it lives as long as `mm` has
    /// users.
    pub(crate) fn of(mm: &MmWithUser) -> Option<&SframeMm> {
        // SAFETY: `mm` is live for the borrow.
        let p = unsafe { slot(mm.as_raw()) }.load(Acquire);
        if Bare::of_word(p as u64).is_some() {
            return None;
        }
        // SAFETY: `mm->sframe` is null, the state of an address space with
        // no registry (bit 0 set: just ruled out), or points to a
        // `SframeMm` that lives until `mm` has no users left (type
        // invariant), and `mm` has users for as long as it is borrowed.
        unsafe { p.as_ref() }
    }

    /// The attach state of `mm` if it has no registry but a state that
    /// exec recorded ([`Bare`]); `None` for one with a registry, and for
    /// one that has neither (its state unknown: a child whose fork could
    /// not copy the registry).
    pub(crate) fn bare(mm: &MmWithUser) -> Option<Bare> {
        // SAFETY: `mm` is live for the borrow.
        Bare::of_word(unsafe { slot(mm.as_raw()) }.load(Relaxed) as u64)
    }

    /// Counts, in the state of `mm` if it has no registry ([`Bare`]), a walk
    /// at NMI or IRQ time that ended to ask for tables. Lock-free, in any
    /// context; a count lost to a racing writer is only a count.
    pub(crate) fn count_bare_ask(mm: &MmWithUser) {
        // SAFETY: `mm` is live for the borrow.
        let slot = unsafe { slot(mm.as_raw()) };
        let old = slot.load(Relaxed);
        if let Some(bare) = Bare::of_word(old as u64) {
            let new = bare.asked().word() as usize as *mut SframeMm;
            // Fails only if a writer changed the word: then its value is.
            let _ = slot.cmpxchg(old, new, Relaxed);
        }
    }

    /// Records `bare` as the attach state of `mm`, which has no registry.
    pub(crate) fn set_bare(mm: &LockedMm<'_>, bare: Bare) {
        // SAFETY: `mm` is live (`LockedMm`'s invariant).
        let slot = unsafe { slot(mm.as_ptr()) };
        // Only writers, serialised by the mmap write lock, store to it.
        if Self::of(mm.mm()).is_none() {
            slot.store(bare.word() as usize as *mut SframeMm, Release);
        }
    }

    /// How many address spaces have a registry, machine-wide.
    pub(crate) fn count() -> u64 {
        REGISTRIES.load(Relaxed)
    }

    /// A new state with no registration.
    pub(crate) fn new() -> Result<KBox<SframeMm>> {
        // INVARIANT: `table` is null. Once `mm->sframe` points to the
        // object, only `free()` frees it: from `__mmput()`, or from
        // `unwind_user_sframe_mm_dup()` for a child no task has run yet.
        Ok(KBox::new(
            SframeMm {
                table: Atomic::new(core::ptr::null_mut()),
                attach: AttachState::new(),
                next_id: Atomic::new(1),
                gen: Atomic::new(0),
                cache: RuleCache::new()?,
                cache_filled: Atomic::new(0),
                counters: Counters {
                    sframe_frames: Atomic::new(0),
                    fp_fallbacks: Atomic::new(0),
                    errors: Atomic::new(0),
                    dropped: Atomic::new(0),
                    nofault_frames: Atomic::new(0),
                    nofault_faults: Atomic::new(0),
                    table_waits: Atomic::new(0),
                    cached_frames: Atomic::new(0),
                    section_reads: Atomic::new(0),
                    section_bytes: Atomic::new(0),
                },
            },
            gfp(),
        )?)
    }

    /// Makes `new` the registry of `mm`.
    ///
    /// # Safety
    ///
    /// `mm` must be live and have no registry; the caller holds its mmap
    /// write lock (writers are serialised by it) for `'a`.
    pub(crate) unsafe fn install<'a>(
        mm: *mut bindings::mm_struct,
        new: KBox<SframeMm>,
    ) -> &'a SframeMm {
        let p = KBox::into_raw(new);
        REGISTRIES.add(1, Relaxed);
        // SAFETY: `mm` is live (the caller's contract).
        unsafe { slot(mm) }.store(p, Release);
        // SAFETY: Just allocated; freed only when the mm has no users left,
        // after `'a`, or by the fork that made the mm if its copy failed,
        // which no longer uses it (`unwind_user_sframe_mm_dup()`).
        unsafe { &*p }
    }

    /// The registry, for its only writer: a registry not shared yet (a
    /// test's).
    #[cfg(CONFIG_KUNIT = "y")]
    pub(crate) fn exclusive(&mut self) -> RegistryWriter<'_> {
        // INVARIANT: `&mut self` is the only reference to the registry for
        // the borrow: its only writer.
        RegistryWriter(self)
    }

    /// The current table, for a reader: it stays live while `_rcu` is held
    /// (a writer that retires it frees it after a grace period).
    fn table<'a>(&'a self, _rcu: &'a rcu::Guard) -> Option<&'a Table> {
        // SAFETY: A non-null table is live until a writer retires it, and a
        // retired table is freed only after an RCU grace period, which cannot
        // end while `_rcu` is held.
        unsafe { self.table_ptr().as_ref() }
    }

    /// The current table's address, read with acquire, in line, as
    /// [`gen`](Self::gen) is.
    #[inline(always)]
    fn table_ptr(&self) -> *mut Table {
        read_acquire(&self.table)
    }

    /// [`table`](Self::table), for a reader with preemption off: since
    /// Linux 4.20 that is an RCU read-side critical section too, which the
    /// grace period `call_rcu()` waits for before a retired table is freed
    /// also ends after (Documentation/RCU/checklist.rst, item 7).
    fn table_no_preempt<'a>(&'a self, _: &'a NoPreempt) -> Option<&'a Table> {
        // SAFETY: As in `table()`: no grace period can end while preemption
        // is off, and it stays off while the borrow of `_` lives.
        unsafe { self.table_ptr().as_ref() }
    }

    /// Empties the rule cache if the machine's file tables changed since
    /// it was filled (`files_gen`, the generation they have now). Lock-free,
    /// in any context.
    pub(crate) fn sync_files(&self, files_gen: u64) {
        if self.attach.cache_outdated(files_gen) {
            self.invalidate(None);
        }
    }

    /// The generation word now.
    #[inline(always)]
    pub(crate) fn gen(&self) -> u64 {
        // `smp_load_acquire()`, in line: every uncached step reads it three
        // times.
        read_acquire(&self.gen)
    }

    /// Starts a new generation, with `registered` (`None`: as it was): no
    /// walk that starts later takes a rule cached before, and the cache is
    /// emptied for them.
    fn invalidate(&self, registered: Option<bool>) {
        let mut old = self.gen.load(Relaxed);
        loop {
            let bit = registered.map_or(GEN_REGISTERED.get(old), u64::from);
            let new = GEN_COUNT.put(GEN_COUNT.get(old) + 1) | GEN_REGISTERED.put(bit);
            match self.gen.cmpxchg(old, new, Full) {
                Ok(_) => break,
                Err(cur) => old = cur,
            }
        }
        self.cache.clear();
        self.cache_filled.store(0, Relaxed);
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

    /// Number of live registrations, the vDSO's not counted (the kernel's
    /// own, in every registry).
    pub(crate) fn len(&self) -> usize {
        let guard = rcu::read_lock();
        self.table(&guard)
            .map(|t| t.live().filter(|e| !e.fdes.is_kernel_code()).count())
            .unwrap_or(0)
    }

    /// The rule cache, read without a lock.
    #[inline(always)]
    pub(crate) fn cached(&self, pc: usize, adj: bool, gen: u64) -> Option<Cached> {
        self.cache.get(pc, adj, gen)
    }

    /// Was nothing stored in the rule cache since it was last emptied?
    /// What a walk starting now would find in it, but for a racing store.
    #[inline(always)]
    pub(crate) fn cache_is_empty(&self) -> bool {
        read_once(&self.cache_filled) == 0
    }

    /// [`cached`](Self::cached)'s answer as its word ([`Cached::word`]).
    #[inline(always)]
    pub(crate) fn cached_word(&self, pc: usize, adj: bool, gen: u64) -> Option<u16> {
        self.cache.get_word(pc, adj, gen)
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
            Found {
                section: e.section,
                id: e.id,
                header: e.fdes.header(),
                answer: e.fdes.answer(off),
            }
        });
        Lookup { found, gen }
    }

    /// What a file's table (or the vDSO's) says of `pc` (`adj`: a return
    /// address minus one) if its usual rows know (see [`UsualRows`]), and
    /// the generation it was found in: a usual row's rule, or
    /// [`Cached::End`] or [`Cached::FramePointerInCode`] where no row
    /// describes `pc` (and the signal trampoline starts neither there nor
    /// at the next byte, the file's code says), which is cached; and
    /// whether it was cached already (the walk meets PCs seen before).
    /// What a cold step takes in nearly every frame of a described file,
    /// in one pass, under the caller's `no_preempt`, which is also the RCU
    /// read-side section the table is read under: the caller holds it from
    /// before the call until it is done with the answer, so that nothing
    /// it keeps in registers is saved around the helpers that turn
    /// preemption off and on. `None` for any other PC, which
    /// [`lookup`](Self::lookup) answers. `entry` is the index of the
    /// registration searched first, and then of the one found.
    pub(crate) fn usual_rule(
        &self,
        no_preempt: &NoPreempt,
        pc: usize,
        adj: bool,
        entry: &mut u16,
    ) -> Option<(u64, Cached, bool)> {
        if pc < kernel::page::PAGE_SIZE {
            return None;
        }
        // Read before the table, as in `lookup()`.
        let gen = self.gen();
        let table = self.table_no_preempt(no_preempt)?;
        let hint = usize::from(*entry);
        let (i, e) = table.find_from(hint, pc)?;
        if i != hint {
            // A table holds at most `MAX_SECTIONS` and the vDSO's.
            *entry = u16::try_from(i).unwrap_or(0);
        }
        let off = pc.wrapping_sub(e.section.text_start) as u64;
        let word = e.fdes.usual().word(off)?;
        let seen = self.store(no_preempt, pc, adj, gen, word);
        Some((gen, Cached::from_word(word), seen))
    }

    /// Calls `f` with the bytes of the file's section `found` came from,
    /// under RCU: `None` if it is not a file's table, if the table keeps
    /// every row decoded and not the bytes, or if it is no longer
    /// registered.
    pub(crate) fn with_section<R>(&self, found: &Found, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        let guard = rcu::read_lock();
        let (_, e) = self.table(&guard)?.find(found.section.text_start)?;
        let bytes = e.fdes.section().filter(|_| e.id == found.id)?;
        Some(f(bytes))
    }

    /// Is `pc` in the text of a live registration? Such text was one
    /// executable mapping when it was registered, and unmapping any of it
    /// drops the registration. Lock-free.
    pub(crate) fn covers(&self, pc: usize) -> bool {
        let guard = rcu::read_lock();
        self.table(&guard).and_then(|t| t.find(pc)).is_some()
    }

    /// Does a registration describe code in `[start, end)`?
    pub(crate) fn overlaps(&self, start: usize, end: usize) -> bool {
        let guard = rcu::read_lock();
        self.table(&guard)
            .is_some_and(|t| t.live().any(|e| e.section.overlaps(start, end)))
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
        let Some(word) = c.word() else {
            return;
        };
        let no_preempt = NoPreempt::new();
        if self.gen() != gen {
            return;
        }
        self.store(&no_preempt, pc, adj, gen, word);
    }

    /// [`remember`](Self::remember)'s store of `word`
    /// ([`Cached::word`]), for a `gen` read with preemption off, now
    /// still off. True if it replaced an entry for `pc` of `gen`.
    #[inline]
    fn store(&self, _: &NoPreempt, pc: usize, adj: bool, gen: u64, word: u16) -> bool {
        let Some((slot, word, replaced)) = self.cache.put(pc, adj, gen, word) else {
            return false;
        };
        if read_once(&self.cache_filled) == 0 {
            write_once(&self.cache_filled, 1);
        }
        // The store into `slot` (a full barrier) before the load: a
        // writer's change and emptying of the cache, seen or not, is
        // ordered with it.
        if self.gen() != gen {
            // Only if no writer replaced it since; a lost entry only costs
            // a later lookup.
            let _ = slot.cmpxchg(word, 0, Relaxed);
        }
        replaced
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

    /// Frees the state of `mm`, which is being destroyed, or whose copy at
    /// fork failed.
    ///
    /// # Safety
    ///
    /// `mm` must be live and no reader of its state can run: it has no users
    /// left, or no task has run with it yet.
    pub(crate) unsafe fn free(mm: *mut bindings::mm_struct) {
        // SAFETY: The caller guarantees `mm` is live.
        let p = unsafe { slot(mm) }.xchg(core::ptr::null_mut(), Full);
        if p.is_null() || Bare::of_word(p as u64).is_some() {
            return;
        }
        REGISTRIES.fetch_sub(1, Relaxed);
        // SAFETY: `p` came from `KBox::into_raw` in `install` and, with
        // the mm gone, nothing else refers to it.
        drop(unsafe { KBox::from_raw(p) });
    }
}

/// A registry as its writers see it: exec, prctl, munmap and fork change
/// it with the mmap write lock held ([`LockedMm`]), a test with the only
/// reference to a registry it made. The operations that replace the table
/// take `&mut self`, so that the borrow checker keeps a table they may
/// retire from being used after.
///
/// # Invariants
///
/// Writers of the registry are serialised (by the mmap write lock, or by
/// being its only reference) for `'a`: only writers replace or retire its
/// table, so no table is retired while one of them uses it.
pub(crate) struct RegistryWriter<'a>(&'a SframeMm);

impl<'a> RegistryWriter<'a> {
    /// The registry of `mm`, if it has one, for writing.
    pub(crate) fn of(mm: &'a LockedMm<'_>) -> Option<Self> {
        // INVARIANT: `mm`'s mmap write lock is held while it is borrowed
        // (`LockedMm`'s invariant), so for `'a`.
        SframeMm::of(mm.mm()).map(RegistryWriter)
    }

    /// The registry of `mm`, created if it has none (then empty: see
    /// [`crate::vdso::registry_or_create`]); and whether it was.
    pub(crate) fn of_or_new(mm: &'a LockedMm<'_>) -> Result<(Self, bool)> {
        if let Some(r) = Self::of(mm) {
            return Ok((r, false));
        }
        let bare = SframeMm::bare(mm.mm());
        let new = SframeMm::new()?;
        if let Some(bare) = bare {
            new.attach.take_bare(bare);
            new.counters.nofault_faults.add(bare.asks(), Relaxed);
        }
        // SAFETY: `mm` is live (`LockedMm`'s invariant); writers are
        // serialised by the mmap write lock it proves held, so the registry
        // is still unset.
        let r = unsafe { SframeMm::install(mm.as_ptr(), new) };
        // INVARIANT: As in `of()`.
        Ok((RegistryWriter(r), true))
    }

    /// The current table.
    fn table(&self) -> Option<&Table> {
        // SAFETY: A non-null table is live until a writer retires it, which
        // needs `&mut self` (or another writer, which the type invariant
        // rules out) while this borrow lasts.
        unsafe { self.0.table.load(Acquire).as_ref() }
    }

    /// Publishes `new`, retiring the current table after a grace period.
    fn publish(&mut self, new: KBox<Table>) {
        self.0.publish(new)
    }

    /// Registers `s`, whose validated header and FDEs are `fdes`. `ENOSPC`
    /// past the address space's limits ([`Room`]).
    pub(crate) fn add(&mut self, s: Section, fdes: Arc<SectionTable>) -> Result {
        let old = self.table();
        if !Room::of(old).with(&s, &fdes).fits() {
            return Err(ENOSPC);
        }
        if old.is_some_and(|t| t.overlaps(s.text_start, s.text_end)) {
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

    /// Registers those of `new` that fit, as [`add`](Self::add) would one
    /// by one, leaving out one that overlaps another or would pass the
    /// limits, but publishing one new table: attaching the tables of an
    /// address space's files registers up to every file it maps, and one
    /// table a registration would copy the table, empty the rule cache
    /// and leave an old table to RCU that many times. Returns how many it
    /// registered; fails with `ENOMEM` only, registering none.
    pub(crate) fn add_all(&mut self, new: &mut [(Section, Arc<SectionTable>)]) -> Result<usize> {
        new.sort_unstable_by_key(|(s, _)| s.text_start);
        let old = self.table();
        let mut room = Room::of(old);
        let mut added: KVec<Entry> = KVec::with_capacity(new.len(), gfp())?;
        for (s, fdes) in new.iter() {
            let more = room.with(s, fdes);
            // `added` is sorted and without overlaps, as a table is: only
            // its last entry, which ends last, can overlap `s`.
            if !more.fits()
                || old.is_some_and(|t| t.overlaps(s.text_start, s.text_end))
                || added
                    .last()
                    .is_some_and(|e| e.section.overlaps(s.text_start, s.text_end))
            {
                continue;
            }
            let id = self.next_id.fetch_add(1, Relaxed);
            // Cannot fail: room for all of `new` was reserved above.
            added
                .push_within_capacity(Entry::new(*s, id, fdes.clone()))
                .map_err(|_| ENOMEM)?;
            room = more;
        }
        let n = added.len();
        if n != 0 {
            self.publish(Table::rebuild(old, |_| true, added)?);
        }
        Ok(n)
    }

    /// Removes the registration whose text starts at `text_start`.
    pub(crate) fn remove(&mut self, text_start: usize) -> Result {
        let old = self.table().ok_or(ENOENT)?;
        if !old.live().any(|e| e.section.text_start == text_start) {
            return Err(ENOENT);
        }
        self.publish(Table::rebuild(
            Some(old),
            |e| e.text_start != text_start,
            None,
        )?);
        // Its text, still mapped, may be a file's with a table to attach.
        self.attach.mapping_unsettled(true);
        Ok(())
    }

    /// Removes every registration whose text or section overlaps
    /// `[start, end)`, which is being unmapped (`exec`: executable pages
    /// among them). On allocation failure the affected entries are marked
    /// dead instead, so that no reader uses them.
    pub(crate) fn unmap(&mut self, start: usize, end: usize, exec: bool) {
        let hit = |e: &Section| e.unmapped_by(start, end);
        let Some(old) = self.table().filter(|t| t.live().any(|e| hit(&e.section))) else {
            // Code no registration described: the cache may say it is
            // code the frame-pointer rule unwinds (a JIT's, or a library
            // without a table), which the return-address check takes
            // without looking at the mappings again. Not once it is gone:
            // whatever is mapped there next is not that code.
            if exec {
                self.invalidate(None);
            }
            return;
        };
        // A registration whose section went, or part of whose text, may
        // leave text mapped, a file's with a table to attach. One whose
        // text went whole (dlclose(), a MAP_FIXED mapping over it, which
        // mmap attaches) leaves nothing; text that mremap() moved is
        // attached at its new place by mremap().
        let text_stays = old
            .live()
            .filter(|e| hit(&e.section))
            .any(|e| !(start <= e.section.text_start && e.section.text_end <= end));
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
        if text_stays {
            self.attach.mapping_unsettled(true);
        }
    }

    /// Copies the live registrations that `keep` accepts into `dst`, an
    /// empty registry of a new mm (fork), ids and attached files included.
    pub(crate) fn copy_to(
        &self,
        dst: &mut RegistryWriter<'_>,
        keep: impl Fn(&Section) -> bool,
    ) -> Result {
        let mut dropped = false;
        if let Some(old) = self.table() {
            dropped = old.live().any(|e| !keep(&e.section));
            dst.publish(Table::rebuild(Some(old), keep, None)?);
            dst.next_id.store(self.next_id.load(Relaxed), Relaxed);
        }
        // The child maps what the parent did, or less: what was attached
        // for the parent's mappings is for the child's, unless a
        // registration stayed behind whose text the child maps.
        dst.attach.copy_from(&self.attach);
        if dropped {
            dst.attach.mapping_unsettled(true);
        }
        Ok(())
    }

    /// Counts a new mapping mmap could not settle
    /// ([`AttachState::mapping_unsettled`]), and empties the rule cache: it
    /// may hold what an earlier mapping of the same addresses, unmapped
    /// since, unwound with (the frame-pointer rule for a library no table
    /// described, say), which would otherwise shadow the new mapping's
    /// code, never looked up again. (The other callers changed the
    /// registry, which emptied it.) `tables`: a table may describe it once
    /// attached.
    pub(crate) fn new_mapping_unsettled(&self, tables: bool) {
        self.attach.mapping_unsettled(tables);
        self.invalidate(None);
    }
}

impl core::ops::Deref for RegistryWriter<'_> {
    type Target = SframeMm;

    fn deref(&self) -> &SframeMm {
        self.0
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

#[kunit_tests(unwind_user_registry)]
mod tests {
    use super::*;
    use crate::section::fixtures::*;
    use crate::section::FreMark;
    use kernel::error::code::EINVAL;

    /// What a lookup of `pc` found.
    fn found(mm: &SframeMm, pc: usize) -> Option<Found> {
        mm.lookup(pc).found
    }

    /// The registration covering `pc`.
    fn at(mm: &SframeMm, pc: usize) -> Option<Section> {
        found(mm, pc).map(|f| f.section)
    }

    #[test]
    fn registry_add_lookup_remove() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(sec(0x3000, 0x1000), none()?)?;
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.add(sec(0x5000, 0x100), none()?)?;
        assert_eq!(mm.len(), 3);
        assert_eq!(at(&mm, 0x1000), Some(sec(0x1000, 0x1000)));
        assert_eq!(at(&mm, 0x1fff), Some(sec(0x1000, 0x1000)));
        assert_eq!(at(&mm, 0x2000), None);
        assert_eq!(at(&mm, 0x3800), Some(sec(0x3000, 0x1000)));
        assert_eq!(at(&mm, 0x50ff), Some(sec(0x5000, 0x100)));
        assert_eq!(at(&mm, 0x5100), None);
        assert_eq!(at(&mm, 0), None);
        // Overlap at either end, or containing another, is refused.
        assert_eq!(mm.add(sec(0x1fff, 2), none()?), Err(EEXIST));
        assert_eq!(mm.add(sec(0x0, 0x1001), none()?), Err(EEXIST));
        assert_eq!(mm.add(sec(0x2800, 0x4000), none()?), Err(EEXIST));
        mm.add(sec(0x2000, 0x1000), none()?)?;
        assert_eq!(mm.remove(0x2800), Err(ENOENT));
        mm.remove(0x2000)?;
        assert_eq!(mm.remove(0x2000), Err(ENOENT));
        assert_eq!(at(&mm, 0x2000), None);
        assert_eq!(mm.len(), 3);
        Ok(())
    }

    #[test]
    fn add_all_registers_what_fits_in_one_table() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(sec(0x3000, 0x1000), none()?)?;
        let gen = mm.gen();
        let mut new = KVec::new();
        // Out of order; one overlapping the registration, one overlapping
        // another of the batch (the first in text order stays).
        for (start, len) in [
            (0x5000, 0x100),
            (0x1000, 0x1000),
            (0x3800, 0x10),
            (0x1800, 0x10),
        ] {
            new.push((sec(start, len), none()?), GFP_KERNEL)?;
        }
        assert_eq!(mm.add_all(&mut new)?, 2);
        // One table published: the generation moved once.
        assert_eq!(mm.gen(), gen + 2);
        assert_eq!(mm.len(), 3);
        assert_eq!(at(&mm, 0x1800), Some(sec(0x1000, 0x1000)));
        assert_eq!(at(&mm, 0x3800), Some(sec(0x3000, 0x1000)));
        assert_eq!(at(&mm, 0x5000), Some(sec(0x5000, 0x100)));
        // Nothing that fits: nothing published.
        assert_eq!(mm.add_all(&mut new)?, 0);
        assert_eq!(mm.gen(), gen + 2);
        Ok(())
    }

    #[test]
    fn a_search_from_any_entry_finds_the_same() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        for start in [0x1000, 0x3000, 0x4000] {
            mm.add(sec(start, 0x1000), none()?)?;
        }
        let t = mm.table().ok_or(ENOENT)?;
        let pcs = [
            0, 0xfff, 0x1000, 0x1fff, 0x2000, 0x3fff, 0x4000, 0x4fff, 0x5000,
        ];
        let index = |r: Option<(usize, &Entry)>| r.map(|(i, _)| i);
        for dead in [false, true] {
            // The middle registration found malformed is no one's answer.
            if let Some(e) = t.entries.get(1) {
                e.dead.store(dead, Relaxed);
            }
            for pc in pcs {
                for hint in 0..5 {
                    assert_eq!(index(t.find_from(hint, pc)), index(t.find(pc)));
                }
            }
            assert_eq!(index(t.find_from(1, 0x3000)), (!dead).then_some(1));
            // The binary search of overlaps against a scan of every entry.
            for (start, end) in [
                (0, 0x1000),
                (0x2800, 0x3001),
                (0x3800, 0x4800),
                (0x2000, 0x3000),
            ] {
                let scan = t.live().any(|e| e.section.overlaps(start, end));
                assert_eq!(t.overlaps(start, end), scan);
            }
            assert_eq!(t.overlaps(0x3800, 0x3900), !dead);
            assert!(t.overlaps(0x2800, 0x4001));
        }
        Ok(())
    }

    #[test]
    fn attach_state_follows_the_registry() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        // A new registry has attached nothing, in no generation.
        assert!(!mm.attach.is_settled(0));
        mm.attach.set_settled(7, mm.attach.unsettled());
        assert!(mm.attach.is_settled(7));
        // A table attached since, or a mapping mmap could not settle.
        assert!(!mm.attach.is_settled(8));
        mm.attach.mapping_unsettled(true);
        assert!(!mm.attach.is_settled(7));
        mm.attach.set_settled(8, mm.attach.unsettled());
        assert!(mm.attach.is_settled(8));
        // A child after fork starts where its parent is.
        let mut child = SframeMm::new()?;
        let mut child = child.exclusive();
        mm.attach.set_settled(9, mm.attach.unsettled());
        mm.copy_to(&mut child, |_| true)?;
        assert!(child.attach.is_settled(9));
        // A registration that goes may uncover a file's text.
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.attach.set_settled(9, mm.attach.unsettled());
        mm.remove(0x1000)?;
        assert!(!mm.attach.is_settled(9));
        // Its section unmapped, its text left: unsettled.
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.attach.set_settled(9, mm.attach.unsettled());
        mm.unmap(0x7000_1000, 0x7000_2000, false);
        assert!(!mm.attach.is_settled(9));
        // Part of its text unmapped, the rest left: unsettled.
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.attach.set_settled(9, mm.attach.unsettled());
        mm.unmap(0x1000, 0x1800, true);
        assert!(!mm.attach.is_settled(9));
        // All of its text unmapped (dlclose()): nothing left to attach.
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.attach.set_settled(9, mm.attach.unsettled());
        mm.unmap(0x1000, 0x2000, true);
        assert!(mm.attach.is_settled(9));
        // So may one a fork leaves behind.
        let mut other = SframeMm::new()?;
        let mut other = other.exclusive();
        mm.add(sec(0x3000, 0x1000), none()?)?;
        mm.attach.set_settled(9, mm.attach.unsettled());
        mm.copy_to(&mut other, |_| false)?;
        assert!(!other.attach.is_settled(9));
        Ok(())
    }

    #[test]
    fn tables_pending_only_for_what_a_table_may_describe() -> Result {
        let mut mm = SframeMm::new()?;
        let mm = mm.exclusive();
        // Never settled: whatever it maps may have a table.
        assert!(mm.attach.tables_pending());
        mm.attach.set_settled(3, mm.attach.unsettled());
        assert!(!mm.attach.tables_pending());
        // A file with no table and no section of its own: unsettled, but
        // nothing a table describes is pending.
        mm.new_mapping_unsettled(false);
        assert!(!mm.attach.is_settled(3) && !mm.attach.tables_pending());
        // One that may have its own section, or a table already.
        mm.new_mapping_unsettled(true);
        assert!(mm.attach.tables_pending());
        mm.attach.set_settled(3, mm.attach.unsettled());
        assert!(mm.attach.is_settled(3) && !mm.attach.tables_pending());
        // Any other change that unsettles: pending.
        mm.attach.mapping_unsettled(true);
        assert!(mm.attach.tables_pending());
        // A child after fork starts where its parent is.
        let mut child = SframeMm::new()?;
        let mut child = child.exclusive();
        mm.copy_to(&mut child, |_| true)?;
        assert!(child.attach.tables_pending());
        mm.attach.set_settled(3, mm.attach.unsettled());
        let mut child = SframeMm::new()?;
        let mut child = child.exclusive();
        mm.copy_to(&mut child, |_| true)?;
        assert!(!child.attach.tables_pending());
        Ok(())
    }

    #[test]
    fn registry_limit() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        for i in 0..MAX_SECTIONS {
            mm.add(sec(0x1000 * (i + 1), 0x1000), none()?)?;
        }
        assert_eq!(
            mm.add(sec(0x1000 * (MAX_SECTIONS + 1), 0x1000), none()?),
            Err(ENOSPC)
        );
        mm.remove(0x1000)?;
        mm.add(sec(0x1000 * (MAX_SECTIONS + 1), 0x1000), none()?)?;
        assert_eq!(mm.len(), MAX_SECTIONS);
        // Files' tables have their own limit: the registrations leave
        // them room, and they leave none to registrations past theirs.
        let file = |i: usize| Section {
            in_kernel: true,
            ..sec(0x1000 * (MAX_SECTIONS + 2 + i), 0x1000)
        };
        let mut files = KVec::new();
        for i in 0..=MAX_FILE_TABLES {
            files.push((file(i), none()?), GFP_KERNEL)?;
        }
        assert_eq!(mm.add_all(&mut files)?, MAX_FILE_TABLES);
        assert_eq!(mm.add(file(MAX_FILE_TABLES), none()?), Err(ENOSPC));
        mm.remove(0x2000)?;
        mm.add(sec(0x2000, 0x1000), none()?)?;
        assert_eq!(mm.len(), MAX_SECTIONS + MAX_FILE_TABLES);
        Ok(())
    }

    #[test]
    fn registry_unmap_and_dead() -> Result {
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.add(sec(0x3000, 0x1000), none()?)?;
        mm.add(sec(0x5000, 0x1000), none()?)?;
        // Unmapping part of the text drops the registration...
        mm.unmap(0x3fff, 0x4000, true);
        assert_eq!(at(&mm, 0x3000), None);
        // ... and so does unmapping its section.
        let s = sec(0x5000, 0x1000);
        mm.unmap(s.sframe_start + 8, s.sframe_start + 9, false);
        assert_eq!(at(&mm, 0x5000), None);
        assert_eq!(mm.len(), 1);
        // Code no registration describes, cached as the frame-pointer
        // rule's: forgotten when executable pages are unmapped, not when
        // data is.
        let gen = mm.gen();
        mm.remember(0x9000, true, gen, Cached::FramePointerInCode);
        mm.unmap(0x20_0000, 0x20_1000, false);
        assert_eq!(
            mm.cached(0x9000, true, mm.gen()),
            Some(Cached::FramePointerInCode)
        );
        mm.unmap(0x9000, 0xa000, true);
        assert_eq!(mm.cached(0x9000, true, mm.gen()), None);
        assert_eq!(mm.len(), 1);
        // A section found malformed is skipped at once, counted, and
        // pruned by the next writer.
        let stale = found(&mm, 0x1000).ok_or(ENOENT)?;
        mm.mark_dead(&stale);
        mm.mark_dead(&stale);
        assert_eq!(at(&mm, 0x1000), None);
        assert_eq!(mm.counters.dropped.load(kernel::sync::atomic::Relaxed), 1);
        mm.add(sec(0x1000, 0x1000), none()?)?;
        assert_eq!(at(&mm, 0x1000), Some(sec(0x1000, 0x1000)));
        // A lookup of the old registration, marked late, spares the new one.
        mm.mark_dead(&stale);
        assert_eq!(at(&mm, 0x1000), Some(sec(0x1000, 0x1000)));
        // Fork copies the live registrations that the child has mapped.
        mm.add(sec(0x8000, 0x1000), none()?)?;
        let mut child = SframeMm::new()?;
        let mut child = child.exclusive();
        mm.copy_to(&mut child, |s| s.text_start != 0x8000)?;
        assert_eq!(at(&child, 0x1800), Some(sec(0x1000, 0x1000)));
        assert_eq!(at(&child, 0x8000), None);
        assert_eq!(child.len(), 1);
        Ok(())
    }

    #[test]
    fn fde_table_lookup() -> Result {
        // TEST_SECTION's one function, [0x11000, 0x11020), in a text from 0x11000.
        let mut sec_bytes =
            sframe::Section::new(&TEST_SECTION[..], TEST_SECTION.len() as u32, 0x10000)
                .map_err(|_| EINVAL)?;
        let fde = sec_bytes.fde(0).map_err(|_| EINVAL)?;
        let packed = fde.pack(0x11000).ok_or(EINVAL)?;
        let mut table = KVVec::new();
        table.push(packed, GFP_KERNEL)?;
        // Marks as registration makes them for large functions: the lookup
        // keeps the last one at or below the PC, of its own function only.
        let mark = |fde, index, start| FreMark {
            fde,
            mark: sframe::FreMark {
                index,
                offset: index * 3,
                start,
            },
        };
        let mut marks = KVVec::new();
        for m in [mark(0, 16, 0x8), mark(0, 32, 0x10), mark(1, 16, 0x4)] {
            marks.push(m, GFP_KERNEL)?;
        }
        let fdes = SectionTable::new(header()?, table, marks)?;
        assert_eq!(fdes.bytes(), 20 + 3 * 16);
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(sec(0x11000, 0x100), fdes)?;
        let fde_at = |pc| found(&mm, pc).map(|f| f.answer.fde);
        assert_eq!(fde_at(0x11000), Some(Some((0, packed))));
        assert_eq!(fde_at(0x1101f), Some(Some((0, packed))));
        // Registered text, no function there; no registration.
        assert_eq!(fde_at(0x11020), Some(None));
        assert_eq!(fde_at(0x11100), None);
        // What the lookup kept unpacks to the FDE the section gave.
        let f = found(&mm, 0x11010).ok_or(ENOENT)?;
        let (i, p) = f.answer.fde.ok_or(ENOENT)?;
        assert_eq!(p.unpack(f.header.version, 0x11000, i), Ok(fde));
        let mark_at = |pc| found(&mm, pc).and_then(|f| f.answer.mark).map(|m| m.index);
        assert_eq!(mark_at(0x11007), None);
        assert_eq!(mark_at(0x11008), Some(16));
        assert_eq!(mark_at(0x1100f), Some(16));
        assert_eq!(mark_at(0x1101f), Some(32));
        assert_eq!(mark_at(0x11020), None);
        Ok(())
    }
}
