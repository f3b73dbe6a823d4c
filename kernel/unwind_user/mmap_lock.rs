// SPDX-License-Identifier: GPL-2.0

//! The mmap write lock, in the type system.
//!
//! Every change to an address space's registry happens with that address
//! space's mmap write lock held: registration and unregistration through
//! prctl (and exec), munmap, fork. [`LockedMm`] is the proof that it is
//! held, and the operations that need it are its methods, as those that
//! need the read lock are `MmapReadGuard`'s in `rust/kernel/mm.rs` (whose
//! `mm` abstraction offers no write lock). The lock is taken killably by
//! [`with_locked`], or was taken by C (`dup_mmap()`,
//! `vms_complete_munmap_vmas()`), which says so once, at the boundary,
//! with [`LockedMm::assume_locked`].

use crate::file_mapping::FileMapping;
use core::{marker::PhantomData, ptr::NonNull};
use kernel::{
    bindings,
    error::code::{EINTR, EINVAL},
    mm::{
        virt::{vm_flags_t, VmaRef},
        MmWithUser,
    },
    prelude::*,
};

/// An address space whose mmap write lock is held while this value lives.
///
/// # Invariants
///
/// `mm` points to a `mm_struct` that has users (`mm_users > 0`, so its
/// registry is not freed) for `'a`, and whose mmap write lock is held for
/// as long as this value lives (which is at most `'a`).
pub(crate) struct LockedMm<'a> {
    mm: NonNull<bindings::mm_struct>,
    _lock: PhantomData<&'a MmWithUser>,
}

impl<'a> LockedMm<'a> {
    /// An address space whose write lock C holds.
    ///
    /// # Safety
    ///
    /// `mm` must point to a `mm_struct` with users for `'a`, whose mmap
    /// write lock the caller holds for as long as the value lives.
    pub(crate) unsafe fn assume_locked(mm: *mut bindings::mm_struct) -> Self {
        // INVARIANT: `mm` has users for `'a` and its write lock is held for
        // as long as the value lives: the caller's contract.
        LockedMm {
            // SAFETY: Live, so not null (the caller's contract).
            mm: unsafe { NonNull::new_unchecked(mm) },
            _lock: PhantomData,
        }
    }

    /// The address space.
    pub(crate) fn as_ptr(&self) -> *mut bindings::mm_struct {
        self.mm.as_ptr()
    }

    /// The address space.
    pub(crate) fn mm(&self) -> &MmWithUser {
        // SAFETY: `mm` is live and has users for `'a` (type invariant),
        // which outlives the borrow of `self`.
        unsafe { MmWithUser::from_raw(self.mm.as_ptr()) }
    }

    /// The VMA containing `addr`, if any.
    fn vma(&self, addr: usize) -> Option<&VmaRef> {
        // SAFETY: `mm` is live and its mmap lock held (type invariant).
        let vma = unsafe { bindings::vma_lookup(self.mm.as_ptr(), addr) };
        if vma.is_null() {
            return None;
        }
        // SAFETY: `vma` is a VMA of `mm`, which cannot change while we hold
        // its mmap write lock, as long as `self` is borrowed.
        Some(unsafe { VmaRef::from_raw(vma) })
    }

    /// The file mapping containing `addr`, if it is executable.
    pub(crate) fn exec_file_mapping(&self, addr: usize) -> Option<FileMapping> {
        self.vma(addr).and_then(FileMapping::of)
    }

    /// Is all of `[start, end)` mapped, by one VMA or several, with no
    /// hole?
    pub(crate) fn maps_all(&self, start: usize, end: usize) -> bool {
        let mut addr = start;
        while addr < end {
            let Some(vma) = self.vma(addr) else {
                return false;
            };
            addr = vma.end();
        }
        true
    }

    /// Does `[start, end)` lie in one VMA that has all of `flags`?
    pub(crate) fn in_one_vma(&self, start: usize, end: usize, flags: vm_flags_t) -> bool {
        self.vma(start)
            .is_some_and(|vma| end <= vma.end() && vma.flags() & flags == flags)
    }
}

/// The mmap write lock of an address space with users, taken killably by
/// [`MmapWriteGuard::lock`] and released when the guard is dropped.
///
/// # Invariants
///
/// `locked`'s lock was taken by this guard.
struct MmapWriteGuard<'a> {
    locked: LockedMm<'a>,
}

impl<'a> MmapWriteGuard<'a> {
    /// Takes `mm`'s mmap write lock; `EINTR` if a fatal signal came first.
    fn lock(mm: &'a MmWithUser) -> Result<Self> {
        // SAFETY: `mm` is live with users for `'a` (the reference).
        if unsafe { bindings::mmap_write_lock_killable(mm.as_raw()) } != 0 {
            return Err(EINTR);
        }
        // INVARIANT: The lock was taken just above, and only `drop()`
        // releases it.
        Ok(MmapWriteGuard {
            // SAFETY: `mm` has users for `'a`, and we hold its mmap write
            // lock until `drop()`.
            locked: unsafe { LockedMm::assume_locked(mm.as_raw()) },
        })
    }
}

impl Drop for MmapWriteGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: Taken in `lock()` (type invariant), by this task.
        unsafe { bindings::mmap_write_unlock(self.locked.mm.as_ptr()) };
    }
}

/// Calls `f` with the current task's address space; `EINVAL` for a task
/// without one (a kernel thread).
pub(crate) fn with_current<R>(f: impl FnOnce(&MmWithUser) -> Result<R>) -> Result<R> {
    let task = kernel::current!();
    f(task.mm().ok_or(EINVAL)?)
}

/// Calls `f` with `mm`'s mmap write lock held; `EINTR` if a fatal signal
/// came while waiting for it.
pub(crate) fn with_locked<R>(
    mm: &MmWithUser,
    f: impl FnOnce(&LockedMm<'_>) -> Result<R>,
) -> Result<R> {
    let guard = MmapWriteGuard::lock(mm)?;
    f(&guard.locked)
}
