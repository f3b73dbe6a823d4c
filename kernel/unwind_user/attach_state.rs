// SPDX-License-Identifier: GPL-2.0

//! Whether an address space has the tables of the files it maps: its
//! attach state, and the generation of the machine's file tables it is
//! judged against.
//!
//! An address space is *settled* when every file it maps executable had
//! its table attached, or was found to have none, in the current
//! generation of the file tables, and no executable mapping was left
//! *unsettled* since. Its events: mmap settles a new mapping or leaves it
//! unsettled (`file_table::attach_mapping()`), munmap, unregistration and
//! fork may leave one unsettled (`registry.rs`), and a walk that may sleep
//! and meets code no registration covers attaches the tables and settles
//! the address space (`file_table::attach_mapped()`). A walk at NMI time
//! only reads it, lock-free.
//!
//! An address space with no registry keeps its state in one word instead
//! ([`Bare`]), which a registry takes over when it is made.

use crate::word::Bits;
use kernel::{
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

/// Advanced when a file's table is replaced or detached: a registry whose
/// rule cache was filled before may have cached the file's PCs as no
/// section's, or attached the old table. (Not when a file gets its first
/// table: mmap leaves a mapping of a file with none unsettled; nor when a
/// table goes with its inode, or because its file changed.)
static FILES_GEN: Atomic<u64> = Atomic::new(0);

/// The generation of the machine's file tables.
pub(crate) fn files_gen() -> u64 {
    FILES_GEN.load(Relaxed)
}

/// Starts a new generation of the machine's file tables.
pub(crate) fn advance_files_gen() {
    FILES_GEN.add(1, Relaxed);
}

/// What [`AttachState::unsettled`] counts, taken under the mmap lock.
#[derive(Clone, Copy)]
pub(crate) struct Unsettled {
    all: u32,
    tables: u32,
}

/// [`AttachState::settled`] for generation `files_gen` of the file tables
/// and `unsettled` mappings: one word, read at NMI time untorn; never 0.
/// Generations 2^31 apart compare equal, which would take as many
/// attaches between two walks of one process.
fn settled_word(files_gen: u64, unsettled: u32) -> u64 {
    SETTLED_MARK.put(1) | SETTLED_GEN.put(files_gen) | SETTLED_UNSETTLED.put(unsettled.into())
}

/// The fields of [`settled_word`]: how many mappings are unsettled, the
/// generation's low bits, and a bit always set.
const SETTLED_UNSETTLED: Bits = Bits::new(0, 32);
const SETTLED_GEN: Bits = Bits::new(32, 31);
const SETTLED_MARK: Bits = Bits::new(63, 1);
const _: () = assert!(Bits::disjoint(&[
    SETTLED_UNSETTLED,
    SETTLED_GEN,
    SETTLED_MARK
]));

/// The attach state of an address space that has no registry, in the one
/// word `mm->sframe` holds then: exec records it at the program's first
/// executable mapping instead of allocating a registry, so that a process
/// nobody unwinds costs that word and nothing else. Its fields are
/// [`Bare::MARK`], set (no registry's address has bit 0 set);
/// [`Bare::UNSETTLED`], a mapping is unsettled; [`Bare::TABLES`], one a
/// table may describe once attached; [`Bare::ASKS`], how many walks at NMI
/// or IRQ time ended to ask for tables (at most 255), for the registry's
/// counters once it exists; [`Bare::GEN`], the generation of the file
/// tables it was settled in (its low 53 bits).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Bare(u64);

const _: () = assert!(Bits::disjoint(&[
    Bare::MARK,
    Bare::UNSETTLED,
    Bare::TABLES,
    Bare::ASKS,
    Bare::GEN
]));

impl Bare {
    const MARK: Bits = Bits::new(0, 1);
    const UNSETTLED: Bits = Bits::new(1, 1);
    const TABLES: Bits = Bits::new(2, 1);
    const ASKS: Bits = Bits::new(3, 8);
    const GEN: Bits = Bits::new(11, 53);

    /// The state of an address space whose mappings are settled in
    /// generation `files_gen` of the file tables.
    pub(crate) fn settled(files_gen: u64) -> Self {
        Bare(Self::GEN.put(files_gen) | Self::MARK.put(1))
    }

    /// The state `word` (of `mm->sframe`) holds, if it holds one rather
    /// than a registry's address or nothing.
    pub(crate) fn of_word(word: u64) -> Option<Self> {
        (Self::MARK.get(word) != 0).then_some(Bare(word))
    }

    /// The word for `mm->sframe`: never 0, bit 0 set.
    pub(crate) fn word(self) -> u64 {
        self.0
    }

    /// The generation of the file tables it was settled in (its low bits).
    fn files_gen(self) -> u64 {
        Self::GEN.get(self.0)
    }

    /// Was a mapping left unsettled?
    fn unsettled(self) -> bool {
        Self::UNSETTLED.get(self.0) != 0
    }

    /// With one more executable file mapping that is not settled, which a
    /// table may describe once attached if `tables`.
    pub(crate) fn mapping_unsettled(self, tables: bool) -> Self {
        Bare(self.0 | Self::UNSETTLED.put(1) | Self::TABLES.put(tables.into()))
    }

    /// With one more walk that ended to ask for tables counted.
    pub(crate) fn asked(self) -> Self {
        let asks = self.asks();
        if !Self::ASKS.fits(asks + 1) {
            return self;
        }
        Bare(self.0 & !Self::ASKS.mask() | Self::ASKS.put(asks + 1))
    }

    /// How many walks ended to ask for tables.
    pub(crate) fn asks(self) -> u64 {
        Self::ASKS.get(self.0)
    }

    /// Is the address space settled in generation `files_gen`?
    pub(crate) fn is_settled(self, files_gen: u64) -> bool {
        !self.unsettled() && self.files_gen() == Self::GEN.low(files_gen)
    }

    /// Was a mapping left unsettled that a table may describe once
    /// attached? As [`AttachState::tables_pending`].
    pub(crate) fn tables_pending(self) -> bool {
        Self::TABLES.get(self.0) != 0
    }
}

/// The attach state of one address space. Its counts are written under
/// the mmap write lock and read lock-free, in any context.
pub(crate) struct AttachState {
    /// The generation of the machine's file tables the registry's rule
    /// cache was filled in: a PC cached as no section's may be a newly
    /// attached file's.
    cache_files_gen: Atomic<u64>,
    /// When the address space was last settled: the tables' generation
    /// then and [`unsettled`](Self::unsettled), as [`settled_word`] packs
    /// them; 0 before.
    settled: Atomic<u64>,
    /// How many executable file mappings mmap could not settle since the
    /// registry was created.
    unsettled: Atomic<u32>,
    /// Of those, how many a table may describe once attached: all but the
    /// mappings of files that have no table and no section of their own,
    /// which only an agent's table can describe.
    unsettled_tables: Atomic<u32>,
    /// [`unsettled_tables`](Self::unsettled_tables) when the address
    /// space was last settled.
    settled_tables: Atomic<u32>,
}

impl AttachState {
    /// The state of a new registry: not settled, its rule cache empty in
    /// the current generation.
    pub(crate) fn new() -> Self {
        AttachState {
            cache_files_gen: Atomic::new(files_gen()),
            settled: Atomic::new(0),
            unsettled: Atomic::new(0),
            unsettled_tables: Atomic::new(0),
            settled_tables: Atomic::new(0),
        }
    }

    /// Did the machine's file tables change since the rule cache was
    /// filled, `files_gen` being their generation now? Says so once: the
    /// caller empties the cache.
    pub(crate) fn cache_outdated(&self, files_gen: u64) -> bool {
        let seen = self.cache_files_gen.load(Relaxed);
        seen != files_gen
            && self
                .cache_files_gen
                .cmpxchg(seen, files_gen, Relaxed)
                .is_ok()
    }

    /// Is the address space settled in generation `files_gen` of the
    /// machine's file tables?
    pub(crate) fn is_settled(&self, files_gen: u64) -> bool {
        self.settled.load(Relaxed) == settled_word(files_gen, self.unsettled.load(Relaxed))
    }

    /// Says that it was settled in generation `files_gen`, when `unsettled`
    /// (what [`unsettled`](Self::unsettled) was then) mappings were not.
    pub(crate) fn set_settled(&self, files_gen: u64, unsettled: Unsettled) {
        self.settled_tables.store(unsettled.tables, Relaxed);
        self.settled
            .store(settled_word(files_gen, unsettled.all), Relaxed);
    }

    /// Since the address space was last settled (or ever, if it never
    /// was), was a mapping left unsettled that a table may describe once
    /// attached? A walk at NMI or IRQ time that meets code no registration
    /// covers in an address space that is not settled tells by it whether
    /// the deferred unwind may describe that code.
    pub(crate) fn tables_pending(&self) -> bool {
        self.settled.load(Relaxed) == 0
            || self.unsettled_tables.load(Relaxed) != self.settled_tables.load(Relaxed)
    }

    /// How many executable file mappings mmap left unsettled, and of those
    /// how many a table may describe: stable under the mmap lock, which
    /// their writers hold.
    pub(crate) fn unsettled(&self) -> Unsettled {
        Unsettled {
            all: self.unsettled.load(Relaxed),
            tables: self.unsettled_tables.load(Relaxed),
        }
    }

    /// Counts an executable file mapping that is not settled, one a table
    /// may describe once attached if `tables`: the next walk that meets
    /// uncovered code attaches the tables again.
    pub(crate) fn mapping_unsettled(&self, tables: bool) {
        self.unsettled.add(1, Relaxed);
        if tables {
            self.unsettled_tables.add(1, Relaxed);
        }
    }

    /// Takes `bare`, the state of the address space before it had a
    /// registry (a new registry's).
    pub(crate) fn take_bare(&self, bare: Bare) {
        self.set_settled(bare.files_gen(), self.unsettled());
        if bare.unsettled() {
            self.mapping_unsettled(bare.tables_pending());
        }
    }

    /// Takes the state of `src`, the registry of the address space a child
    /// was forked from: the child maps what the parent did, or less.
    pub(crate) fn copy_from(&self, src: &AttachState) {
        for (d, s) in [
            (&self.unsettled, &src.unsettled),
            (&self.unsettled_tables, &src.unsettled_tables),
            (&self.settled_tables, &src.settled_tables),
        ] {
            d.store(s.load(Relaxed), Relaxed);
        }
        self.settled.store(src.settled.load(Relaxed), Relaxed);
    }
}

#[kunit_tests(unwind_user_attach_state)]
mod tests {
    use super::*;

    #[test]
    fn settled_state() {
        let s = AttachState::new();
        assert!(!s.is_settled(0) && s.tables_pending());
        s.set_settled(7, s.unsettled());
        assert!(s.is_settled(7) && !s.tables_pending());
        // Another generation of the file tables: not settled.
        assert!(!s.is_settled(8));
        s.mapping_unsettled(true);
        assert!(!s.is_settled(7) && s.tables_pending());
        s.set_settled(8, s.unsettled());
        assert!(s.is_settled(8));
        // Generations 2^31 apart look the same; the word is never 0.
        assert!(s.is_settled(8 + (1 << 31)));
        assert_ne!(settled_word(0, 0), 0);
        // The count wraps without a panic.
        s.unsettled.store(u32::MAX, Relaxed);
        s.mapping_unsettled(false);
        assert_eq!(s.unsettled().all, 0);
        // A mapping only an agent's table may describe: unsettled, but no
        // table pending.
        s.set_settled(3, s.unsettled());
        s.mapping_unsettled(false);
        assert!(!s.is_settled(3) && !s.tables_pending());
        // A child gets its parent's state.
        let child = AttachState::new();
        child.copy_from(&s);
        assert!(!child.is_settled(3) && !child.tables_pending());
        s.set_settled(3, s.unsettled());
        child.set_settled(3, child.unsettled());
        assert!(child.is_settled(3));
    }

    #[test]
    fn bare_state() {
        let b = Bare::settled(5);
        assert!(Bare::of_word(b.word()) == Some(b) && b.word() & 1 == 1);
        // A registry's address is not a state.
        assert!(Bare::of_word(0x1000).is_none());
        assert!(b.is_settled(5) && !b.is_settled(6) && !b.tables_pending());
        // Generations compare by their low 53 bits.
        assert!(Bare::settled(u64::MAX).is_settled(u64::MAX));
        let only_agents = b.mapping_unsettled(false);
        assert!(!only_agents.is_settled(5) && !only_agents.tables_pending());
        let tables = only_agents.mapping_unsettled(true);
        assert!(!tables.is_settled(5) && tables.tables_pending());
        // Walks that asked, counted up to 255, the rest kept.
        let asked = (0..300).fold(tables, |b, _| b.asked());
        assert_eq!((asked.asks(), tables.asks()), (255, 0));
        assert!(asked.tables_pending() && !asked.is_settled(5));
        assert!(b.asked().is_settled(5));
        // A registry made then takes it over.
        for (bare, settled, pending) in [
            (b, true, false),
            (only_agents, false, false),
            (tables, false, true),
        ] {
            let s = AttachState::new();
            s.take_bare(bare);
            assert_eq!((s.is_settled(5), s.tables_pending()), (settled, pending));
        }
    }
}
