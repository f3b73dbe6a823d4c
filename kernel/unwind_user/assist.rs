// SPDX-License-Identifier: GPL-2.0

//! User-assisted unwinding: the prctl ABI (`UNWIND_USER_ASSIST_ENABLE`,
//! `UNWIND_USER_ASSIST_SUBMIT`) and what `kernel/unwind/deferred.c` asks of
//! it at each deferred unwind.
//!
//! The opt-in belongs to the thread group that made it: one word in its
//! `signal_struct`, which threads share and nothing else does. A child that
//! is not a thread (fork, vfork, `posix_spawn()`, `system()`, a `CLONE_VM`
//! child with handlers of its own) starts with a zeroed `signal_struct`,
//! and exec clears the word: no image that did not install the handler is
//! ever sent the signal.

use crate::{
    memory,
    uapi::{eopnotsupp, read_versioned},
    word::Bits,
};
use kernel::{
    bindings,
    error::code::{E2BIG, EFAULT, EINVAL, ENOENT},
    ffi::{c_int, c_uint, c_ulong},
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    task::Task,
    uaccess::{UserPtr, UserSlice},
};

const _: () = assert!(Bits::disjoint(&[
    Assist::SIGNO,
    Assist::MAX_ENTRIES,
    Assist::TIMEOUT_MS
]));

const ASSIST_SIZE: usize = bindings::UNWIND_USER_ASSIST_SIZE_VER0 as usize;
const FRAMES_SIZE: usize = bindings::UNWIND_USER_ASSIST_FRAMES_SIZE_VER0 as usize;

/// What a process asked for with `UNWIND_USER_ASSIST_ENABLE`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Assist {
    /// The signal sent with each deferred unwind's cookie.
    signo: u8,
    /// Most frames an answer may hold.
    max_entries: u16,
    /// How long an answer is taken after the signal.
    timeout_ms: u16,
}

impl Assist {
    /// The fields of its [`word`](Self::word); no signal (0): no opt-in.
    const SIGNO: Bits = Bits::new(0, 8);
    const MAX_ENTRIES: Bits = Bits::new(16, 16);
    const TIMEOUT_MS: Bits = Bits::new(32, 16);

    /// One word, so that it is read and written whole, without a lock.
    fn word(self) -> u64 {
        Self::SIGNO.put(self.signo.into())
            | Self::MAX_ENTRIES.put(self.max_entries.into())
            | Self::TIMEOUT_MS.put(self.timeout_ms.into())
    }

    fn from_word(w: u64) -> Option<Assist> {
        // The casts lose nothing: each field is as wide as its type.
        Some(Assist {
            signo: Self::SIGNO.get(w) as u8,
            max_entries: Self::MAX_ENTRIES.get(w) as u16,
            timeout_ms: Self::TIMEOUT_MS.get(w) as u16,
        })
        .filter(|a| a.signo != 0)
    }

    /// What the current thread group asked for, if anything.
    fn current() -> Option<Assist> {
        Assist::from_word(with_word(|w| w.load(Relaxed)))
    }
}

/// Calls `f` with the current thread group's opt-in word,
/// `current->signal->unwind_assist`, which is read and written whole.
fn with_word<R>(f: impl FnOnce(&Atomic<u64>) -> R) -> R {
    // SAFETY: `current` is live while it runs, and so is its
    // `signal_struct` (freed only once the task is reaped); the field is
    // aligned and only accessed atomically, through this function and
    // `WRITE_ONCE()` at exec. `f` cannot keep the reference.
    let word = unsafe { Atomic::from_ptr(&raw mut (*(*Task::current_raw()).signal).unwind_assist) };
    f(word)
}

/// `UNWIND_USER_ASSIST_ENABLE`: the signal, answer size and deadline the
/// calling thread group wants, or signal 0 for none.
pub(crate) fn enable(ptr: c_ulong, size: c_ulong) -> Result {
    let bindings::unwind_user_assist {
        signo,
        max_entries,
        timeout_ms,
        flags,
    } = read_versioned(ptr, size, ASSIST_SIZE)?;
    if flags != 0 {
        return Err(EINVAL);
    }
    let assist = if signo == 0 {
        None
    } else {
        // A signal with no other meaning: SIGUSR1, SIGUSR2 or a real-time
        // one. Queueing a stop signal discards a pending SIGCONT, SIGCONT
        // ends a group stop; SIGKILL and SIGSTOP have no handler.
        let free = signo == bindings::SIGUSR1
            || signo == bindings::SIGUSR2
            || (bindings::SIGRTMIN..=bindings::_NSIG).contains(&signo);
        if !free
            || !(1..=bindings::UNWIND_USER_ASSIST_MAX_ENTRIES).contains(&max_entries)
            || !(1..=bindings::UNWIND_USER_ASSIST_MAX_TIMEOUT_MS).contains(&timeout_ms)
        {
            return Err(EINVAL);
        }
        Some(Assist {
            signo: u8::try_from(signo).map_err(|_| EINVAL)?,
            max_entries: u16::try_from(max_entries).map_err(|_| EINVAL)?,
            timeout_ms: u16::try_from(timeout_ms).map_err(|_| EINVAL)?,
        })
    };
    // The cookie is a 64-bit si_value.
    // SAFETY: Reads the current task's syscall state; no preconditions.
    if unsafe { bindings::in_compat_syscall() } {
        return Err(eopnotsupp());
    }
    with_word(|w| w.store(assist.map_or(0, Assist::word), Relaxed));
    Ok(())
}

/// `UNWIND_USER_ASSIST_SUBMIT`: the calling thread's own frames for the
/// cookie it was sent.
pub(crate) fn submit(ptr: c_ulong, size: c_ulong) -> Result {
    let bindings::unwind_user_assist_frames {
        cookie,
        entries,
        nr,
        flags,
    } = read_versioned(ptr, size, FRAMES_SIZE)?;
    if flags != 0 {
        return Err(EINVAL);
    }
    let assist = Assist::current().ok_or(ENOENT)?;
    if nr > u32::from(assist.max_entries) {
        return Err(E2BIG);
    }
    // The ABI's entries are `__u64`, read straight into the C side's array.
    const _: () = assert!(core::mem::size_of::<c_ulong>() == 8);
    let mut frames = KVec::<c_ulong>::from_elem(0, nr as usize, memory::gfp())?;
    let buf = frames.as_mut_slice().as_mut_bytes();
    let entries = usize::try_from(entries).map_err(|_| EFAULT)?;
    UserSlice::new(UserPtr::from_addr(entries), buf.len())
        .reader()
        .read_slice(buf)?;
    // SAFETY: `frames` holds `nr` entries and outlives the call, which only
    // reads them.
    let r = unsafe { bindings::unwind_deferred_assist_submit(cookie, frames.as_mut_ptr(), nr) };
    match r {
        0 => Ok(()),
        e => Err(Error::from_errno(e)),
    }
}

/// The signal to send to the current thread with each deferred unwind's
/// cookie and how long its answer is taken, in ms, if its thread group
/// asked for user-assisted unwinding. One atomic read, in any context.
pub(crate) fn signal() -> Option<(c_int, c_uint)> {
    Assist::current().map(|a| (c_int::from(a.signo), c_uint::from(a.timeout_ms)))
}

#[kunit_tests(unwind_user_assist)]
mod tests {
    use super::*;

    #[test]
    fn opt_in_is_one_word() {
        // The largest values the prctl takes survive the packing.
        let a = Assist {
            signo: bindings::_NSIG as u8,
            max_entries: bindings::UNWIND_USER_ASSIST_MAX_ENTRIES as u16,
            timeout_ms: bindings::UNWIND_USER_ASSIST_MAX_TIMEOUT_MS as u16,
        };
        assert_eq!(Assist::from_word(a.word()), Some(a));
        let b = Assist {
            signo: bindings::SIGUSR1 as u8,
            max_entries: 1,
            timeout_ms: 1,
        };
        assert_eq!(Assist::from_word(b.word()), Some(b));
        // Signal 0 is no opt-in, whatever the rest says.
        assert_eq!(Assist::from_word(0), None);
        assert_eq!(Assist::from_word(b.word() & !0xff), None);
    }
}
