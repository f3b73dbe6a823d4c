// SPDX-License-Identifier: GPL-2.0

//! What the unwinder counts for each address space, for `UNWIND_USER_QUERY`.

use kernel::sync::atomic::{Atomic, Relaxed};

/// Counters a person debugging can read through `UNWIND_USER_QUERY`.
///
/// Every SFrame lookup ends in exactly one of `sframe_frames`,
/// `fp_fallbacks`, `errors`, `nofault_faults` and `table_waits`: their sum
/// is the number of lookups (`unwinds` in the query).
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
    /// Walks ended at NMI or IRQ time for what only a walk that may fault
    /// can do: read a section or code that is not resident, or attach the
    /// tables of the files mapped.
    pub(crate) nofault_faults: Atomic<u64>,
    /// Walks ended at code of a file whose table the provider was asked
    /// for and has not given yet.
    pub(crate) table_waits: Atomic<u64>,
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
