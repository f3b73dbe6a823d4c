// SPDX-License-Identifier: GPL-2.0

//! What the unwinder's kernel memory costs, and who pays for it: the
//! flags it allocates with (charged to the memory cgroup of the task that
//! registers, forks or walks), and the machine's budget of file tables
//! (`kernel.unwind_user_file_bytes_max` and its part for files root does
//! not own), which a [`Charge`] holds bytes of.

use kernel::{
    alloc::{
        flags::{__GFP_NOWARN, __GFP_RETRY_MAYFAIL, GFP_KERNEL_ACCOUNT},
        Flags,
    },
    bindings,
    error::code::ENOSPC,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
};

/// How the unwinder allocates: charged to the memory cgroup of the task
/// that registers (or forks), and failing with `ENOMEM` rather than
/// invoking the OOM killer when that cgroup is at its limit. Quietly: a
/// process can make these fail at will, and `ENOMEM` is its answer, not a
/// warning with a stack trace in the kernel log.
pub(crate) fn gfp() -> Flags {
    GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN
}

/// Bytes of kernel memory the file tables hold: those the machine's
/// tables hold, and those detached or replaced that an address space
/// still uses. Every byte is held by a [`Charge`].
static TABLE_BYTES: Atomic<u64> = Atomic::new(0);
/// The part of [`TABLE_BYTES`] that tables of files root does not own
/// hold.
static USER_BYTES: Atomic<u64> = Atomic::new(0);

/// The budget of file tables, `kernel.unwind_user_file_bytes_max`.
fn budget() -> u64 {
    // SAFETY: A plain `unsigned long` the sysctl writes; a torn read is
    // impossible for an aligned word.
    unsafe { core::ptr::read_volatile(&raw const bindings::unwind_user_file_bytes_max) as u64 }
}

/// The part of it for files root does not own,
/// `kernel.unwind_user_file_bytes_user_max`.
fn user_budget() -> u64 {
    // SAFETY: As in `budget()`.
    unsafe { core::ptr::read_volatile(&raw const bindings::unwind_user_file_bytes_user_max) as u64 }
}

/// `cur` bytes and `n` more, if that is at most `max`.
fn within(cur: u64, n: usize, max: u64) -> Option<u64> {
    cur.checked_add(n as u64).filter(|&t| t <= max)
}

/// Counts `n` more bytes in `counter`; `ENOSPC` past `max`.
fn charge_to(counter: &Atomic<u64>, n: usize, max: u64) -> Result {
    let mut cur = counter.load(Relaxed);
    loop {
        let new = within(cur, n, max).ok_or(ENOSPC)?;
        match counter.cmpxchg(cur, new, Relaxed) {
            Ok(_) => return Ok(()),
            Err(now) => cur = now,
        }
    }
}

/// Would `n` more bytes of a file's table (of a file root does not own if
/// `user`) fit the budget now?
pub(crate) fn room_for(n: usize, user: bool) -> bool {
    let fits = |c: &Atomic<u64>, max| within(c.load(Relaxed), n, max).is_some();
    fits(&TABLE_BYTES, budget()) && (!user || fits(&USER_BYTES, user_budget()))
}

/// Bytes the file tables hold now.
pub(crate) fn bytes() -> u64 {
    TABLE_BYTES.load(Relaxed)
}

/// Bytes of a file's table counted against the machine's budget, given
/// back when dropped (in any context: the last user of a table may drop
/// it in an RCU callback).
///
/// # Invariants
///
/// `n` bytes are counted in [`TABLE_BYTES`], and in [`USER_BYTES`] too if
/// `user`, for this value alone.
#[derive(Debug)]
pub(crate) struct Charge {
    n: usize,
    user: bool,
}

impl Charge {
    /// Counts `n` bytes of a file's table, of a file root does not own if
    /// `user`; `ENOSPC` past the budget, or past the part of it for such
    /// files.
    pub(crate) fn new(n: usize, user: bool) -> Result<Charge> {
        if user {
            charge_to(&USER_BYTES, n, user_budget())?;
        }
        if let Err(e) = charge_to(&TABLE_BYTES, n, budget()) {
            if user {
                USER_BYTES.fetch_sub(n as u64, Relaxed);
            }
            return Err(e);
        }
        // INVARIANT: Both counters were charged `n` bytes above, the second
        // only if `user`.
        Ok(Charge { n, user })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        // By the type's invariant, these bytes were counted for `self`.
        TABLE_BYTES.fetch_sub(self.n as u64, Relaxed);
        if self.user {
            USER_BYTES.fetch_sub(self.n as u64, Relaxed);
        }
    }
}
