// SPDX-License-Identifier: GPL-2.0

//! The machine's provider of file tables: a privileged agent that the
//! kernel asks for the table of every file a walk meets with none, once a
//! file.
//!
//! The agent registers with `UNWIND_USER_FILE_PROVIDE` and gets a
//! descriptor (`files.c`: an anonymous file, for want of a Rust
//! abstraction of one). When a walk that may sleep meets an executable
//! mapping of a file that has no table and no section of its own the
//! kernel uses, the file is *wanted* ([`want`]): queued with a reference
//! to it, at most [`MAX_WANTS`] files, once however many walks meet it. A
//! read of the descriptor takes the files queued ([`take`]), each as a
//! read-only descriptor installed in the reader, so that the agent reaches
//! files of other mount namespaces, deleted files and memfds the same way.
//! The agent answers with `UNWIND_USER_FILE_ATTACH`, with a section or
//! with `UNWIND_USER_FILE_F_NONE`.
//!
//! A full queue drops the want and says so to the next read
//! (`UNWIND_USER_WANT_F_OVERFLOW`), as fanotify does: the agent then looks
//! at every process's mappings itself. Nothing blocks and nothing grows.
//!
//! A file's table remembers when it was asked for; it is waited for
//! [`ANSWER_MS`] at most, while the provider is registered or has been
//! gone for less than [`GRACE_MS`], and no longer. A provider that is
//! killed and restarted (by systemd, say) within the grace period finds
//! the queue as it was, and no walk meanwhile guesses what the provider
//! was to describe; the files it had read but not answered are asked
//! again ([`crate::file_table::provide`]). A provider that dies for good
//! costs the walks that meet its files that long, and the frame-pointer
//! rule then takes them as it does with no provider; its queue goes.

use crate::uapi;
use kernel::{
    bindings,
    error::code::{EAGAIN, EBUSY, EINVAL},
    fs::{file::FileDescriptorReservation, File},
    global_lock,
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
    },
    uaccess::{UserPtr, UserSlice, UserSliceWriter},
};

/// Most files queued for the provider. Each holds a reference to its file
/// until the provider reads it: a build box maps a few new files a
/// second, an agent answers in milliseconds.
const MAX_WANTS: usize = 1024;

/// How long after a file was asked for a walk that meets its code ends
/// there rather than guess its callers with frame pointers: longer than
/// the agent takes when a whole machine's files come at once. (A boot
/// under systemd in a TCG guest asked for 58 files together, and the
/// agent answered the last 78 s after it was asked; with a cap of 30 s,
/// walks had gone back to the frame-pointer rule for it, and one
/// invented a caller.) Meanwhile a walk is short, never wrong: only a
/// provider that is stuck costs that long.
pub(crate) const ANSWER_MS: u64 = 300_000;

/// A file the kernel wants the table of.
struct Want {
    file: ARef<File>,
    /// Its inode (the key of its table), compared only.
    inode: usize,
    /// Walks that met it since it was queued.
    walks: u32,
    /// When the first asked, in nanoseconds of the monotonic clock.
    asked_ns: u64,
    /// A file any user may have made.
    user: bool,
}

/// The queue of wanted files.
struct Wants {
    queue: KVVec<Want>,
    /// Wants were dropped since the last read: the queue was full.
    overflow: bool,
    /// How many of `queue` are of files any user may have made.
    user: usize,
}

global_lock! {
    // SAFETY: `init()` initialises it at core_initcall time, before any
    // user process exists to provide or unwind.
    unsafe(uninit) static WANTS: Mutex<Wants> = Wants {
        queue: KVVec::new(),
        overflow: false,
        user: 0,
    };
}

/// Most of the queue files any user may have made may take: a user who
/// maps a thousand files of their own and profiles them does not keep the
/// system's files from being asked for.
const MAX_USER_WANTS: usize = MAX_WANTS / 4;

/// Whether the queue has something to read, or overflowed: what the
/// provider's reads wait for and its poll reports, read lock-free (the
/// wait's condition runs with the task no longer running, where it must
/// not sleep on the lock). Written under the lock of [`WANTS`].
static READY: Atomic<bool> = Atomic::new(false);

impl Wants {
    /// Says in [`READY`] whether there is something to read.
    fn update_ready(&self) {
        READY.store(self.overflow || !self.queue.is_empty(), Relaxed);
    }

    /// Takes the want at `i` out of the queue.
    fn take(&mut self, i: usize) -> Option<Want> {
        let want = self.queue.remove(i).ok()?;
        if want.user {
            self.user = self.user.saturating_sub(1);
        }
        self.update_ready();
        Some(want)
    }
}

/// How long after the provider went the kernel still queues wants and
/// waits for answers: time for a service manager to restart it.
const GRACE_MS: u64 = 5_000;

/// [`REGISTERED`] while a provider is registered; within the grace period
/// after it went, when it went in milliseconds, shifted left by one, with
/// bit 0 clear; else 0. Read lock-free, at NMI time too; written under the
/// lock of [`WANTS`].
static PROVIDER: Atomic<u64> = Atomic::new(0);
const REGISTERED: u64 = 1;

/// Files wanted since boot, and wants dropped because the queue was full.
static NR_WANTED: Atomic<u64> = Atomic::new(0);
static NR_DROPPED: Atomic<u64> = Atomic::new(0);

/// Initialises the lock of the queue.
///
/// # Safety
///
/// Called once, before any other use of the lock.
pub(crate) unsafe fn init() {
    // SAFETY: The caller's contract.
    unsafe { WANTS.init() };
}

/// Is a provider registered, or gone for less than [`GRACE_MS`]? Then
/// files are asked for, and their answers waited for.
pub(crate) fn accepting() -> bool {
    let p = PROVIDER.load(Relaxed);
    p == REGISTERED || (p != 0 && now_ms().wrapping_sub(p >> 1) < GRACE_MS)
}

/// Files wanted since boot and wants dropped, machine-wide.
pub(crate) fn counts() -> (u64, u64) {
    (NR_WANTED.load(Relaxed), NR_DROPPED.load(Relaxed))
}

/// The monotonic clock, in nanoseconds.
fn now_ns() -> u64 {
    // SAFETY: `ktime_get_mono_fast_ns()` only reads the clock, in any
    // context.
    unsafe { bindings::ktime_get_mono_fast_ns() }
}

/// The monotonic clock, in milliseconds.
fn now_ms() -> u64 {
    now_ns() / 1_000_000
}

/// What a table's `asked_ms` holds once the provider's answer for it
/// failed: asked, and waited for no more.
pub(crate) const GAVE_UP: u64 = u64::MAX;

/// Is a table asked for at `asked_ms` (0: never) still waited for?
pub(crate) fn waiting(asked_ms: u64) -> bool {
    asked_ms != 0
        && asked_ms != GAVE_UP
        && accepting()
        && now_ms().wrapping_sub(asked_ms) < ANSWER_MS
}

/// The registration state before [`register`], for [`unregister_failed`].
pub(crate) struct Before(u64);

/// Makes the caller the provider; `EBUSY` if there is one. What the last
/// provider left in the queue within its grace period is the new one's.
pub(crate) fn register() -> Result<Before> {
    // Wants are queued with no allocation: the queue's room is allocated
    // here, out of the lock, if it has none (the first provider, or one
    // after [`expire`]).
    let mut spare = KVVec::new();
    loop {
        let mut w = WANTS.lock();
        let before = PROVIDER.load(Relaxed);
        if before == REGISTERED {
            return Err(EBUSY);
        }
        if w.queue.capacity() == 0 {
            if spare.capacity() == 0 {
                drop(w);
                spare = KVVec::with_capacity(MAX_WANTS, GFP_KERNEL)?;
                continue;
            }
            core::mem::swap(&mut w.queue, &mut spare);
        }
        PROVIDER.store(REGISTERED, Relaxed);
        return Ok(Before(before));
    }
}

/// [`register`] succeeded but the provider's descriptor could not be made:
/// the state is as it was.
pub(crate) fn unregister_failed(before: Before) {
    let _w = WANTS.lock();
    PROVIDER.store(before.0, Relaxed);
}

/// The provider's descriptor was released: the queue stays for
/// [`GRACE_MS`], after which [`expire`] empties it unless a provider
/// registered meanwhile. Returns [`GRACE_MS`].
pub(crate) fn unregister() -> u64 {
    let _w = WANTS.lock();
    PROVIDER.store(now_ms().max(1) << 1, Relaxed);
    GRACE_MS
}

/// The grace period after the provider went is over (`files.c`'s delayed
/// work, queued by its release): unless a provider registered meanwhile,
/// nothing is asked for or waited for any more, and the wanted files are
/// let go.
pub(crate) fn expire() {
    let queue = {
        let mut w = WANTS.lock();
        if PROVIDER.load(Relaxed) == REGISTERED {
            return;
        }
        PROVIDER.store(0, Relaxed);
        w.overflow = false;
        w.user = 0;
        READY.store(false, Relaxed);
        core::mem::take(&mut w.queue)
    };
    // Out of the lock: the last references to the files.
    drop(queue);
}

/// Asks the provider for the table of `file`, whose table key is `inode`
/// (`user`: a file any user may have made). Returns when it was asked
/// (never 0), or `None` if there is no provider or the queue is full. A
/// file queued already only counts the walk.
pub(crate) fn want(file: &File, inode: usize, user: bool) -> Option<u64> {
    let mut w = WANTS.lock();
    if !accepting() {
        return None;
    }
    let asked = now_ms().max(1);
    if let Some(q) = w.queue.iter_mut().find(|q| q.inode == inode) {
        q.walks = q.walks.saturating_add(1);
        return Some(asked);
    }
    if user && w.user >= MAX_USER_WANTS {
        w.overflow = true;
        w.update_ready();
        NR_DROPPED.add(1, Relaxed);
        return None;
    }
    let want = Want {
        file: file.into(),
        inode,
        walks: 1,
        asked_ns: now_ns(),
        user,
    };
    if let Err(want) = w.queue.push_within_capacity(want) {
        w.overflow = true;
        w.update_ready();
        NR_DROPPED.add(1, Relaxed);
        drop(w);
        drop(want);
        return None;
    }
    if user {
        w.user += 1;
    }
    w.update_ready();
    NR_WANTED.add(1, Relaxed);
    drop(w);
    // SAFETY: Wakes the provider's readers; no lock held.
    unsafe { bindings::unwind_user_provider_wake() };
    Some(asked)
}

/// A walk met `inode`'s file again while it was waited for: counted, if
/// it is still queued.
pub(crate) fn met(inode: usize) {
    let mut w = WANTS.lock();
    if let Some(q) = w.queue.iter_mut().find(|q| q.inode == inode) {
        q.walks = q.walks.saturating_add(1);
    }
}

/// The file of `inode` was answered: it is wanted no more.
pub(crate) fn answered(inode: usize) {
    let old = {
        let mut w = WANTS.lock();
        let Some(i) = w.queue.iter().position(|q| q.inode == inode) else {
            return;
        };
        w.take(i)
    };
    drop(old);
}

/// Is there something for the provider to read? Lock-free: the
/// condition of its blocking read's wait, and its poll.
pub(crate) fn ready() -> bool {
    READY.load(Relaxed)
}

const WANT_SIZE: usize = core::mem::size_of::<bindings::unwind_user_file_want>();

/// The record of `want` for the reader, with a read-only descriptor of its
/// file installed in the reader (the file opened again with the reader's
/// credentials; `fd` is a negative errno if it may not read it, and the
/// file then waits for its answer until [`ANSWER_MS`]).
fn record(want: &Want, out: &mut UserSliceWriter) -> Result {
    let reservation = FileDescriptorReservation::get_unused_fd_flags(bindings::O_CLOEXEC)?;
    // SAFETY: `want.file` is a live file, held by `want`.
    let reopened = unsafe { bindings::unwind_user_file_reopen(want.file.as_ptr()) };
    let (fd, file) = match kernel::error::from_err_ptr(reopened) {
        Ok(f) => {
            // SAFETY: `unwind_user_file_reopen()` returned a new reference
            // to a file, which this takes over.
            let file =
                unsafe { ARef::from_raw(core::ptr::NonNull::new_unchecked(f.cast::<File>())) };
            (reservation.reserved_fd() as i32, Some(file))
        }
        Err(e) => (e.to_errno(), None),
    };
    let mut flags = 0;
    if want.user {
        flags |= bindings::UNWIND_USER_WANT_F_USER;
    }
    let rec = bindings::unwind_user_file_want {
        size: WANT_SIZE as u32,
        fd,
        flags,
        walks: want.walks,
        asked_ns: want.asked_ns,
    };
    uapi::write(out, rec)?;
    // Installed only once the record is written: a failed copy leaves the
    // reader no descriptor it does not know of.
    if let Some(file) = file {
        reservation.fd_install(file);
    }
    Ok(())
}

/// A read of the provider's descriptor: as many records
/// (`struct unwind_user_file_want`) as fit in `len` bytes at `buf`, or
/// `EAGAIN` if nothing is queued. A want whose record could not be
/// written goes back to the queue.
pub(crate) fn take(buf: usize, len: usize) -> Result<usize> {
    if len < WANT_SIZE {
        return Err(EINVAL);
    }
    let mut out = UserSlice::new(UserPtr::from_addr(buf), len).writer();
    let mut done = 0;
    while len - done >= WANT_SIZE {
        let want = {
            let mut w = WANTS.lock();
            if w.overflow {
                w.overflow = false;
                w.update_ready();
                None
            } else if w.queue.is_empty() {
                break;
            } else {
                w.take(0)
            }
        };
        let written = match &want {
            None => uapi::write(
                &mut out,
                bindings::unwind_user_file_want {
                    size: WANT_SIZE as u32,
                    fd: -1,
                    flags: bindings::UNWIND_USER_WANT_F_OVERFLOW,
                    walks: 0,
                    asked_ns: 0,
                },
            ),
            Some(want) => record(want, &mut out),
        };
        if let Err(e) = written {
            let mut w = WANTS.lock();
            match want {
                // Back at the head of the queue, if it has room.
                Some(want) => {
                    let user = want.user;
                    if w.queue.insert_within_capacity(0, want).is_err() {
                        // Full again meanwhile: dropped, and said so.
                        w.overflow = true;
                    } else if user {
                        w.user += 1;
                    }
                }
                None => w.overflow = true,
            }
            w.update_ready();
            drop(w);
            return if done == 0 { Err(e) } else { Ok(done) };
        }
        done += WANT_SIZE;
    }
    if done == 0 {
        return Err(EAGAIN);
    }
    Ok(done)
}
