// SPDX-License-Identifier: GPL-2.0

//! Reads of the current task's memory: the section bytes that registration
//! validates and that the step reads rows from, and the words of a signal
//! frame. One reader for both contexts: faultable in task context, never
//! faulting at NMI or IRQ time.

use kernel::{
    bindings,
    error::code::EFAULT,
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};
use sframe::Error as SfError;

/// Is the current task being killed (a fatal signal pending)? Long work
/// done on its behalf stops then.
pub(crate) fn killed() -> bool {
    // SAFETY: `current` is a live task; the function only reads its
    // signal state.
    unsafe { bindings::fatal_signal_pending(kernel::task::Task::current_raw()) != 0 }
}

/// Fills `buf` from the current task's memory at `addr` if every byte is
/// resident, in any context: `copy_from_user_nmi()` on x86, which checks
/// the range and never faults; elsewhere `copy_from_user_nofault()`, the
/// same with page faults disabled around the copy.
#[inline(always)]
fn copy_nofault(addr: usize, buf: &mut [u8]) -> bool {
    let src = UserPtr::from_addr(addr).as_const_ptr();
    // SAFETY: `buf` is valid for `buf.len()` bytes of writes; the function
    // checks the user range and never faults.
    #[cfg(target_arch = "x86_64")]
    let left = unsafe { bindings::copy_from_user_nmi(buf.as_mut_ptr().cast(), src, buf.len()) };
    // SAFETY: As above.
    #[cfg(not(target_arch = "x86_64"))]
    let left = unsafe { bindings::copy_from_user_nofault(buf.as_mut_ptr().cast(), src, buf.len()) };
    left == 0
}

/// How the current task's memory is read: one unwinder, two readers.
#[derive(Clone, Copy)]
pub(crate) enum UserMem {
    /// `copy_from_user()`: may fault pages in and sleep; task context (the
    /// deferred unwind at return to user space, registration).
    Faultable,
    /// [`copy_nofault`]: fails instead of faulting; NMI or IRQ time
    /// (`perf_callchain_user()`).
    NoFault,
}

impl UserMem {
    /// Fills `buf` from the current task's memory at `addr`.
    pub(crate) fn copy(self, addr: usize, buf: &mut [u8]) -> Result {
        // Resident pages, the common case, need no fault handling: try the
        // copy that cannot fault first, in both contexts. It also skips
        // might_fault()'s checks, which debug kernels make costly on every
        // one of the dozen small reads of a lookup.
        let resident = copy_nofault(addr, buf);
        match self {
            _ if resident => Ok(()),
            UserMem::Faultable => UserSlice::new(UserPtr::from_addr(addr), buf.len())
                .reader()
                .read_slice(buf),
            UserMem::NoFault => Err(EFAULT),
        }
    }

    /// `N` bytes at `addr`.
    pub(crate) fn read<const N: usize>(self, addr: usize) -> Result<[u8; N]> {
        let mut b = [0u8; N];
        self.copy(addr, &mut b)?;
        Ok(b)
    }

    /// The word at `addr`.
    pub(crate) fn read_word(self, addr: usize) -> Result<usize> {
        Ok(usize::from_ne_bytes(self.read::<8>(addr)?))
    }
}

/// Reads a section from the current task's memory, through `mem`, at most
/// `left` bytes (`u32::MAX`: the whole section, at registration).
pub(crate) struct UserReader {
    /// User address of the section's first byte.
    base: usize,
    mem: UserMem,
    /// Bytes this reader may still read.
    pub(crate) left: u32,
    /// A read was refused because `left` ran out.
    pub(crate) exhausted: bool,
    /// Faultable reads: bytes until the next point where the task may be
    /// rescheduled or stop for a fatal signal.
    until_resched: u32,
    /// A read was refused because the task has a fatal signal pending.
    pub(crate) killed: bool,
    /// User copies made.
    pub(crate) reads: u16,
}

impl UserReader {
    /// Bytes read between two rescheduling points in task context: the
    /// validation of a large section must not hog the CPU.
    const RESCHED_BYTES: u32 = 64 << 10;

    /// A reader of the section at user address `sframe_start` through
    /// `mem` that may read `left` bytes.
    pub(crate) fn new(sframe_start: usize, mem: UserMem, left: u32) -> Self {
        UserReader {
            base: sframe_start,
            mem,
            left,
            exhausted: false,
            until_resched: Self::RESCHED_BYTES,
            killed: false,
            reads: 0,
        }
    }

    /// In task context, every [`Self::RESCHED_BYTES`]: a rescheduling
    /// point, and `false` if the task is being killed.
    fn may_go_on(&mut self, n: u32) -> bool {
        if !matches!(self.mem, UserMem::Faultable) {
            return true;
        }
        if let Some(rest) = self.until_resched.checked_sub(n) {
            self.until_resched = rest;
            return true;
        }
        self.until_resched = Self::RESCHED_BYTES;
        kernel::task::might_sleep();
        self.killed = killed();
        !self.killed
    }
}

impl sframe::Reader for UserReader {
    fn read(&mut self, offset: u32, buf: &mut [u8]) -> core::result::Result<(), SfError> {
        let n = u32::try_from(buf.len()).map_err(|_| SfError::Read)?;
        let Some(left) = self.left.checked_sub(n) else {
            self.exhausted = true;
            return Err(SfError::Read);
        };
        self.left = left;
        if !self.may_go_on(n) {
            return Err(SfError::Read);
        }
        let addr = self
            .base
            .checked_add(offset as usize)
            .ok_or(SfError::Read)?;
        self.reads = self.reads.saturating_add(1);
        self.mem.copy(addr, buf).map_err(|_| SfError::Read)
    }
}
