// SPDX-License-Identifier: GPL-2.0

//! SFrame user-space unwinder.
//!
//! Gives `kernel/unwind/user.c` a frame producer for code that has an SFrame
//! section: the executable and its interpreter (registered at exec by
//! `binfmt_elf`) and whatever user space registers with
//! `prctl(PR_UNWIND_USER)` (dlopen'ed libraries, JIT code windows).
//!
//! Entry points for C are the `extern "C"` functions below, declared in
//! `include/linux/unwind_user_sframe.h`. The section bytes are untrusted and
//! may change at any time: they are decoded by the `sframe` crate, which
//! checks every offset, and read with fault-safe user copies.
//!
//! C glue: none of its own. `mmap_write_lock_killable()`/`mmap_write_unlock()`
//! come through rust/helpers since the Rust `mm` abstraction only offers the
//! read lock.

use core::cell::RefCell;
use kernel::{
    bindings,
    error::code::{E2BIG, EFAULT, EINTR, EINVAL, ENOENT, ENOMEM, ENOSPC, ERANGE},
    ffi::{c_int, c_long, c_ulong},
    mm::virt::VmaRef,
    prelude::*,
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    uaccess::{UserPtr, UserSlice},
};

/// Prefix of this crate's log messages (what `module!` would define).
const __LOG_PREFIX: &[u8] = b"unwind_user\0";

mod assist;
mod registry;
mod step;

use registry::{Fdes, FreMark, Section, SframeMm, MAX_SECTION_SIZE};

/// Maps a decoder error found while validating a section to an errno:
/// `EFAULT` (unreadable), `EOPNOTSUPP` (a version, ABI or byte order this
/// kernel does not decode) or `EBADMSG` (malformed).
fn validation_errno(e: &sframe::Error) -> Error {
    let errno = match e {
        sframe::Error::Read => return EFAULT,
        sframe::Error::UnsupportedVersion(_)
        | sframe::Error::UnsupportedAbi(_)
        | sframe::Error::AbiEndianMismatch(_)
        | sframe::Error::ForeignEndian => return eopnotsupp(),
        _ => bindings::EBADMSG,
    };
    // `kernel::error::code` has neither errno.
    Error::from_errno(-(errno as c_int))
}

pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as c_int))
}

/// Says why a registration was refused. User space can make that happen at
/// will, so at most one line every 5 seconds, from a budget of its own:
/// `printk_ratelimit()`'s is shared with the rest of the kernel, which a
/// process must not be able to silence.
fn refuse(why: &str, s: &Section, err: Error) -> Error {
    const INTERVAL_NS: u64 = 5 * bindings::NSEC_PER_SEC as u64;
    static NEXT_NS: Atomic<u64> = Atomic::new(0);

    // `pr_debug!` prints only with debug assertions; skip the clock too.
    if cfg!(debug_assertions) {
        // SAFETY: `ktime_get_mono_fast_ns()` only reads the clock.
        let now = unsafe { bindings::ktime_get_mono_fast_ns() };
        let next = NEXT_NS.load(Relaxed);
        if now >= next && NEXT_NS.cmpxchg(next, now + INTERVAL_NS, Relaxed).is_ok() {
            pr_debug!(
                "refused section {:#x}+{:#x} for text {:#x}-{:#x}: {} ({})\n",
                s.sframe_start,
                s.sframe_len,
                s.text_start,
                s.text_end,
                why,
                err.to_errno()
            );
        }
    }
    err
}

/// Holds the current mm's mmap write lock.
struct MmapWriteGuard(*mut bindings::mm_struct);

impl MmapWriteGuard {
    /// Takes `mm`'s mmap write lock, killably.
    ///
    /// # Safety
    ///
    /// `mm` must be live for as long as the guard (the current task's mm).
    unsafe fn lock(mm: *mut bindings::mm_struct) -> Result<Self> {
        // SAFETY: `mm` is live (the caller's contract).
        if unsafe { bindings::mmap_write_lock_killable(mm) } != 0 {
            return Err(EINTR);
        }
        Ok(MmapWriteGuard(mm))
    }
}

impl Drop for MmapWriteGuard {
    fn drop(&mut self) {
        // SAFETY: Locked in `lock()`, by this task.
        unsafe { bindings::mmap_write_unlock(self.0) };
    }
}

/// Checks that `[start, end)` lies in one VMA that has all of `flags`.
///
/// # Safety
///
/// `mm` must be live with its mmap lock held.
unsafe fn in_one_vma(mm: *mut bindings::mm_struct, start: usize, end: usize, flags: u64) -> bool {
    // SAFETY: The caller holds the mmap lock of the live `mm`.
    let vma = unsafe { bindings::vma_lookup(mm, start) };
    if vma.is_null() {
        return false;
    }
    // SAFETY: `vma` is a VMA of `mm`, stable under the mmap lock we hold.
    let vma = unsafe { VmaRef::from_raw(vma) };
    end <= vma.end() && (vma.flags() as u64) & flags == flags
}

/// Validates `s` in full through `reader` and returns what unwinds will use
/// instead of reading it again: the header and the FDEs, packed relative to
/// the text, and the marks of large functions' rows, kept in the same pass.
/// Every function must lie in the text: a section built for other code, or
/// copied away from its text (its addresses are PC-relative), would
/// otherwise be accepted and describe nothing there.
fn validate(s: &Section, reader: impl sframe::Reader) -> Result<Arc<Fdes>> {
    let mut sec = step::open(s, reader).map_err(|e| refuse(e.name(), s, validation_errno(&e)))?;
    let text_start = s.text_start as u64;
    let text_len = (s.text_end - s.text_start) as u64;
    let header = *sec.header();
    // The header's count is checked against the section's size only: a
    // 64 MiB section could ask for a 64 MiB table before the registry's
    // budget refused it.
    let table_bytes = (header.num_fdes as usize).saturating_mul(size_of::<sframe::PackedFde>());
    if table_bytes > registry::MAX_FDE_BYTES {
        return Err(refuse("FDE table over budget", s, ENOSPC));
    }
    let every = registry::FRE_MARK_EVERY;
    let mut packed = KVVec::with_capacity(sec.num_fdes() as usize, registry::gfp())?;
    // Reserved by the FDE callback, filled by the mark callback, which
    // cannot allocate (nor fail but for the bytes the pass reads).
    let marks = RefCell::new(KVVec::new());
    // Not the section's fault: an allocation that failed stops the pass.
    let mut failed = None;
    // A function outside the text is refused once the section is known to
    // be valid: a malformed section gets the same errno as before.
    let mut outside = false;
    let valid = sec.validate_each(
        every,
        |_, fde| {
            match fde.pack(text_start) {
                Some(p) if p.end() <= text_len => {
                    packed.push(p, registry::gfp()).map_err(|e| {
                        failed = Some(Error::from(e));
                        sframe::Error::CountTooLarge
                    })?;
                }
                _ => outside = true,
            }
            if fde.num_fres > every {
                let mut m = marks
                    .try_borrow_mut()
                    .map_err(|_| sframe::Error::CountTooLarge)?;
                m.reserve(((fde.num_fres - 1) / every) as usize, registry::gfp())
                    .map_err(|e| {
                        failed = Some(Error::from(e));
                        sframe::Error::CountTooLarge
                    })?;
            }
            Ok(())
        },
        |i, mark| {
            marks
                .try_borrow_mut()
                .map_err(|_| sframe::Error::CountTooLarge)?
                .push_within_capacity(FreMark { fde: i, mark })
                .map_err(|_| sframe::Error::CountTooLarge)
        },
    );
    if let Some(e) = failed {
        return Err(e);
    }
    // FDEs out of address order in a section that does not claim to be
    // sorted (ld.lld with several text sections) are valid SFrame that this
    // unwinder, like libsframe, does not support; claiming it is malformed.
    valid.map_err(|e| {
        let errno = match e {
            sframe::Error::FdesUnsorted if !header.fde_sorted() => eopnotsupp(),
            _ => validation_errno(&e),
        };
        refuse(e.name(), s, errno)
    })?;
    if outside {
        return Err(refuse("function outside the text", s, ERANGE));
    }
    Fdes::new(header, packed, marks.into_inner())
}

/// Bytes of section [`add_section`] reads at a time, in two blocks.
const VALIDATION_BLOCKS: usize = 8192;

/// Validates and registers a section for the current task's mm.
fn add_section(s: Section) -> Result {
    let task = kernel::current!();
    let mm = task.mm().ok_or(EINVAL)?.as_raw();
    // The step unwinds 64-bit code only (8-byte words, the 64-bit ucontext).
    // SAFETY: Reads the current task's syscall state; no preconditions.
    if unsafe { bindings::in_compat_syscall() } {
        return Err(eopnotsupp());
    }
    if s.text_start >= s.text_end || s.sframe_len == 0 {
        return Err(refuse("empty range", &s, EINVAL));
    }
    if s.sframe_start.checked_add(s.sframe_len as usize).is_none() {
        return Err(refuse("section wraps", &s, EINVAL));
    }

    // Validate once, in full, before taking the mmap lock: the reads may
    // fault, and the fault handler needs that lock. A fatal signal stops a
    // long validation (up to 64 MiB).
    let mut reader = step::UserReader::new(&s, step::UserMem::Faultable, u32::MAX);
    // In blocks: validation reads every field of the section, several user
    // copies a function otherwise (make bench: 8% less time a function).
    let mut blocks = KVec::from_elem(0u8, VALIDATION_BLOCKS, registry::gfp())?;
    let fdes = validate(
        &s,
        sframe::Blocks::new(&mut reader, &mut blocks, s.sframe_len),
    )
    .map_err(|e| if reader.killed { EINTR } else { e })?;

    // SAFETY: `mm` is the current task's mm, live while it runs.
    let _lock = unsafe { MmapWriteGuard::lock(mm) }?;
    let sframe_end = s.sframe_start + s.sframe_len as usize;
    // SAFETY: `mm` is the current mm, locked above.
    if !unsafe { in_one_vma(mm, s.text_start, s.text_end, bindings::VM_EXEC as u64) } {
        return Err(refuse("text is not in one executable mapping", &s, EINVAL));
    }
    // SAFETY: As above.
    if !unsafe { in_one_vma(mm, s.sframe_start, sframe_end, bindings::VM_READ as u64) } {
        return Err(refuse("section is not in one readable mapping", &s, EFAULT));
    }
    // SAFETY: As above.
    let state = unsafe { SframeMm::get_or_create(mm) }?;
    // SAFETY: We hold the mmap write lock of the mm `state` belongs to.
    unsafe { state.add(s, fdes) }.map_err(|e| refuse("limit or overlap", &s, e))
}

/// Registers the `.sframe` at `[sframe_start, sframe_end)` for the text at
/// `[text_start, text_end)` of the current task; called by `binfmt_elf` at
/// exec for the executable and its interpreter. Returns 0 or a negative
/// errno (which the caller ignores: exec never fails for this).
#[no_mangle]
pub extern "C" fn sframe_add_section(
    sframe_start: c_ulong,
    sframe_end: c_ulong,
    text_start: c_ulong,
    text_end: c_ulong,
) -> c_int {
    let len = match sframe_end.checked_sub(sframe_start) {
        Some(l) if l <= MAX_SECTION_SIZE => l,
        _ => return E2BIG.to_errno(),
    };
    let Ok(sframe_len) = u32::try_from(len) else {
        return E2BIG.to_errno();
    };
    match add_section(Section {
        text_start,
        text_end,
        sframe_start,
        sframe_addr: sframe_start,
        sframe_len,
    }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Reads a size-versioned struct from `ptr`, `size` bytes long, as
/// `copy_struct_from_user()` does for clone3() and openat2(): the `N` bytes
/// this kernel knows, zero past `size` (an older caller's struct); shorter
/// than `min` (the first version) is `EINVAL`; larger than a page, or a
/// non-zero byte past the known fields (a newer ABI this kernel does not
/// know), is `E2BIG`.
pub(crate) fn read_versioned<const N: usize>(
    ptr: c_ulong,
    size: c_ulong,
    min: usize,
) -> Result<[u8; N]> {
    if size < min {
        return Err(EINVAL);
    }
    if size > kernel::page::PAGE_SIZE {
        return Err(E2BIG);
    }
    let mut r = UserSlice::new(UserPtr::from_addr(ptr), size).reader();
    let mut buf = [0u8; N];
    r.read_slice(buf.get_mut(..size.min(N)).ok_or(EINVAL)?)?;
    let mut tail = [0u8; 64];
    while !r.is_empty() {
        let n = r.len().min(tail.len());
        let chunk = tail.get_mut(..n).ok_or(EINVAL)?;
        r.read_slice(chunk)?;
        if chunk.iter().any(|&b| b != 0) {
            return Err(E2BIG);
        }
    }
    Ok(buf)
}

pub(crate) fn u64_at(buf: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(b) = buf.get(i * 8..i * 8 + 8) {
        w.copy_from_slice(b);
    }
    u64::from_ne_bytes(w)
}

const SFRAME_SIZE_VER0: usize = bindings::UNWIND_USER_SFRAME_SIZE_VER0 as usize;
const SFRAME_SIZE: usize = bindings::UNWIND_USER_SFRAME_SIZE_VER1 as usize;
const INFO_SIZE_VER0: usize = bindings::UNWIND_USER_INFO_SIZE_VER0 as usize;
const INFO_SIZE: usize = bindings::UNWIND_USER_INFO_SIZE_VER2 as usize;
const F_ADDR: u64 = bindings::UNWIND_USER_SFRAME_F_ADDR as u64;

fn prctl_register(ptr: c_ulong, size: c_ulong) -> Result {
    let b = read_versioned::<SFRAME_SIZE>(ptr, size, SFRAME_SIZE_VER0)?;
    let (text_start, text_size, sframe_start, sframe_size, flags, sframe_addr) = (
        u64_at(&b, 0),
        u64_at(&b, 1),
        u64_at(&b, 2),
        u64_at(&b, 3),
        u64_at(&b, 4),
        u64_at(&b, 5),
    );
    if flags & !F_ADDR != 0 || text_size == 0 || sframe_size == 0 {
        return Err(EINVAL);
    }
    // Without the flag the section is where it was linked to be, and
    // `sframe_addr` must be zero; with it, `sframe_addr` says where that
    // would have been, so the struct must be long enough to hold it.
    let sframe_addr = match flags & F_ADDR != 0 {
        true if size >= SFRAME_SIZE => sframe_addr,
        false if sframe_addr == 0 => sframe_start,
        _ => return Err(EINVAL),
    };
    let text_end = text_start.checked_add(text_size).ok_or(EINVAL)?;
    if sframe_start.checked_add(sframe_size).is_none() {
        return Err(EINVAL);
    }
    if sframe_size > MAX_SECTION_SIZE as u64 {
        return Err(E2BIG);
    }
    let s = Section {
        text_start: usize::try_from(text_start).map_err(|_| EINVAL)?,
        text_end: usize::try_from(text_end).map_err(|_| EINVAL)?,
        sframe_start: usize::try_from(sframe_start).map_err(|_| EINVAL)?,
        sframe_addr: usize::try_from(sframe_addr).map_err(|_| EINVAL)?,
        sframe_len: u32::try_from(sframe_size).map_err(|_| E2BIG)?,
    };
    add_section(s)
}

fn prctl_unregister(text_start: c_ulong) -> Result {
    let task = kernel::current!();
    let mm = task.mm().ok_or(EINVAL)?.as_raw();
    // SAFETY: `mm` is the current task's mm, live while it runs.
    let _lock = unsafe { MmapWriteGuard::lock(mm) }?;
    // SAFETY: `mm` is the current mm, locked above.
    let state = unsafe { SframeMm::get(mm) }.ok_or(ENOENT)?;
    // SAFETY: We hold the mmap write lock of the mm `state` belongs to.
    unsafe { state.remove(text_start) }
}

fn prctl_query(ptr: c_ulong, size: c_ulong) -> Result {
    if !(INFO_SIZE_VER0..=kernel::page::PAGE_SIZE).contains(&size) {
        return Err(EINVAL);
    }
    let task = kernel::current!();
    let mm = task.mm().ok_or(EINVAL)?.as_raw();
    let mut vals = [0u64; INFO_SIZE / 8];
    // SAFETY: `mm` is the current task's mm, live while it runs.
    if let Some(s) = unsafe { SframeMm::get(mm) } {
        let c = &s.counters;
        let (frames, fallbacks, errors, faults) = (
            c.sframe_frames.load(Relaxed),
            c.fp_fallbacks.load(Relaxed),
            c.errors.load(Relaxed),
            c.nofault_faults.load(Relaxed),
        );
        // Every lookup ends in exactly one of those.
        let unwinds = frames
            .wrapping_add(fallbacks)
            .wrapping_add(errors)
            .wrapping_add(faults);
        vals = [
            s.len() as u64,
            unwinds,
            frames,
            fallbacks,
            errors,
            c.dropped.load(Relaxed),
            c.nofault_frames.load(Relaxed),
            faults,
            c.cached_frames.load(Relaxed),
            c.section_reads.load(Relaxed),
            c.section_bytes.load(Relaxed),
        ];
    }
    let mut out = [0u8; INFO_SIZE];
    for (chunk, v) in out.chunks_exact_mut(8).zip(vals) {
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
    let n = size.min(INFO_SIZE);
    let bytes = out.get(..n).ok_or(EINVAL)?;
    UserSlice::new(UserPtr::from_addr(ptr), n)
        .writer()
        .write_slice(bytes)
}

/// `prctl(PR_UNWIND_USER, op, arg3, arg4, arg5)`.
#[no_mangle]
pub extern "C" fn sframe_prctl(op: c_ulong, arg3: c_ulong, arg4: c_ulong, arg5: c_ulong) -> c_long {
    // Compare all of `op`: one with high bits set is not a known op.
    const REGISTER: c_ulong = bindings::UNWIND_USER_SFRAME_REGISTER as c_ulong;
    const UNREGISTER: c_ulong = bindings::UNWIND_USER_SFRAME_UNREGISTER as c_ulong;
    const QUERY: c_ulong = bindings::UNWIND_USER_QUERY as c_ulong;
    const ASSIST_ENABLE: c_ulong = bindings::UNWIND_USER_ASSIST_ENABLE as c_ulong;
    const ASSIST_SUBMIT: c_ulong = bindings::UNWIND_USER_ASSIST_SUBMIT as c_ulong;
    let r = match op {
        ASSIST_ENABLE if arg5 == 0 => assist::enable(arg3, arg4),
        ASSIST_SUBMIT if arg5 == 0 => assist::submit(arg3, arg4),
        REGISTER if arg5 == 0 => prctl_register(arg3, arg4),
        UNREGISTER if arg4 == 0 && arg5 == 0 => prctl_unregister(arg3),
        QUERY if arg5 == 0 => prctl_query(arg3, arg4),
        _ => Err(EINVAL),
    };
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno() as c_long,
    }
}

/// Prepares `state`, a walk of the current task, for SFrame steps: finds
/// the registry of `mm` once for the walk. Returns `false` when `mm` has no
/// section registered: the walk then uses frame pointers alone.
///
/// # Safety
///
/// `mm` must be the current task's mm and `state` a valid pointer, to the
/// state of a walk of the current task, in any context.
#[no_mangle]
pub unsafe extern "C" fn unwind_user_sframe_start(
    mm: *mut bindings::mm_struct,
    state: *mut bindings::unwind_user_state,
) -> bool {
    // SAFETY: `mm` is the current task's mm (the caller's contract), live
    // while it runs.
    let Some(smm) = (unsafe { SframeMm::get(mm) }) else {
        return false;
    };
    let Some(gen) = smm.walk_gen() else {
        return false;
    };
    // SAFETY: Valid (the caller's contract), not aliased during the call.
    let state = unsafe { &mut *state };
    state.sframe_mm = core::ptr::from_ref(smm).cast_mut().cast();
    state.sframe_gen = gen;
    true
}

/// The registry `unwind_user_sframe_start()` found for the walk of `state`.
///
/// # Safety
///
/// `state` must be valid, and its `sframe_mm` null or set by
/// `unwind_user_sframe_start()` for this walk of the current task.
unsafe fn walk_registry<'a>(state: &bindings::unwind_user_state) -> Option<&'a SframeMm> {
    // SAFETY: Null, or the registry of the current task's mm, which lives
    // as long as the mm, longer than the walk (the caller's contract).
    unsafe { state.sframe_mm.cast::<SframeMm>().as_ref() }
}

/// The SFrame step of `kernel/unwind/user.c` for the current task. Returns
/// 0 with `frame` filled in, 1 when it stepped over a signal frame itself
/// (`state` then holds the interrupted context), or a negative errno:
/// `-ENOENT` when no registered section covers the IP.
///
/// # Safety
///
/// `state` and `frame` must be valid pointers, to the state of a walk of
/// the current task that `unwind_user_sframe_start()` prepared. The caller
/// runs in task context where user memory may be faulted in, or, with
/// `state->nofault` set, in any context with page faults disabled (NMI or
/// IRQ time): the reads then never fault and the registry is only read
/// under RCU.
#[no_mangle]
pub unsafe extern "C" fn unwind_user_sframe_next(
    state: *mut bindings::unwind_user_state,
    frame: *mut bindings::unwind_user_frame,
) -> c_int {
    // SAFETY: Valid pointers (the caller's contract), not aliased during the
    // call.
    let (state, frame) = unsafe { (&mut *state, &mut *frame) };
    // SAFETY: Set up by `unwind_user_sframe_start()` (the caller's contract).
    let Some(smm) = (unsafe { walk_registry(state) }) else {
        return ENOENT.to_errno();
    };
    step::next(smm, state, frame)
}

/// May `ra`, which the frame-pointer rule read in the walk of `state`, be
/// taken as a return address? In a walk that has SFrame sections, only if
/// it is in code (see [`step::fp_ra_in_code`]); in any other walk, yes.
///
/// # Safety
///
/// As for `unwind_user_sframe_done()`; in task context, the walk must be
/// one that may sleep (`state->nofault` clear).
#[no_mangle]
pub unsafe extern "C" fn unwind_user_sframe_ra_ok(
    state: *const bindings::unwind_user_state,
    ra: c_ulong,
) -> bool {
    // SAFETY: Valid (the caller's contract), only read.
    let state = unsafe { &*state };
    // SAFETY: Null, or set up by `unwind_user_sframe_start()`.
    match unsafe { walk_registry(state) } {
        Some(smm) => step::fp_ra_in_code(smm, state, ra),
        None => true,
    }
}

/// Ends a walk that `unwind_user_sframe_next()` took part in: adds its
/// counts to the address space's counters.
///
/// # Safety
///
/// `state` must be a valid pointer, to the state of a walk of the current
/// task.
#[no_mangle]
pub unsafe extern "C" fn unwind_user_sframe_done(state: *const bindings::unwind_user_state) {
    // SAFETY: Valid (the caller's contract), only read.
    let state = unsafe { &*state };
    // SAFETY: Null, or set up by `unwind_user_sframe_start()`.
    if let Some(smm) = unsafe { walk_registry(state) } {
        step::done(smm, state);
    }
}

/// Copies the registrations of `oldmm` into `mm` at fork, once `dup_mmap()`
/// has copied every VMA (with both mmap write locks held): those whose text
/// or section was not copied (`VM_DONTCOPY`) stay behind. On failure,
/// `dup_mmap()` tears the new mm down as for any other.
///
/// # Safety
///
/// Both pointers must be live mms, locked as above.
#[no_mangle]
pub unsafe extern "C" fn sframe_mm_dup(
    mm: *mut bindings::mm_struct,
    oldmm: *mut bindings::mm_struct,
) -> c_int {
    // SAFETY: The caller's contract.
    let Some(old) = (unsafe { SframeMm::get(oldmm) }) else {
        return 0;
    };
    // Both ends of the text and of the section were copied (a VMA split
    // since registration, by mprotect() say, is no reason to drop it).
    let mapped = |s: &Section| {
        let sframe_last = s
            .sframe_start
            .saturating_add((s.sframe_len as usize).saturating_sub(1));
        let text_last = s.text_end.saturating_sub(1);
        [s.text_start, text_last, s.sframe_start, sframe_last]
            .into_iter()
            // SAFETY: `mm` is live and its mmap write lock held (the
            // caller's contract).
            .all(|addr| !unsafe { bindings::vma_lookup(mm, addr) }.is_null())
    };
    // SAFETY: The caller's contract.
    let r = unsafe { SframeMm::get_or_create(mm) }.and_then(|new| {
        // SAFETY: `dup_mmap()` holds both mmap write locks (the caller's
        // contract).
        unsafe { old.copy_to(new, mapped) }
    });
    match r {
        Ok(()) => 0,
        Err(_) => ENOMEM.to_errno(),
    }
}

/// Frees the registry of `mm`, which has no users left: called from
/// `__mmput()`, in process context, since freeing a table larger than
/// kmalloc's largest size is a `vfree()`, which may sleep (`__mmdrop()`
/// may run in atomic context, at a context switch).
///
/// # Safety
///
/// `mm` must be live and have no users left: no task runs with it, so no
/// walk can read its registry.
#[no_mangle]
pub unsafe extern "C" fn sframe_mm_free(mm: *mut bindings::mm_struct) {
    // SAFETY: The caller's contract.
    unsafe { SframeMm::free(mm) };
}

/// Drops the registrations whose text or section overlaps `[start, end)`,
/// which is being unmapped. The caller holds the mmap write lock.
///
/// # Safety
///
/// `mm` must be live and its mmap write lock held.
#[no_mangle]
pub unsafe extern "C" fn sframe_mm_unmap(
    mm: *mut bindings::mm_struct,
    start: c_ulong,
    end: c_ulong,
) {
    // SAFETY: The caller's contract.
    if let Some(s) = unsafe { SframeMm::get(mm) } {
        // SAFETY: The caller holds the mmap write lock.
        unsafe { s.unmap(start, end) };
    }
}

#[kunit_tests(unwind_user_sframe)]
mod tests {
    use super::registry::{
        Cached, CachedRule, Fdes, Found, FreMark, RuleCache, Section, SframeMm, MAX_SECTIONS,
    };
    use super::step::{rule, Rule};
    use kernel::{
        error::code::{EEXIST, EINVAL, ENOENT, ENOSPC},
        prelude::*,
        sync::Arc,
    };
    use sframe::{Base, CfaRule, RegRule};

    /// A registry state private to one test: never published in an mm, so
    /// the test is its only writer.
    struct Private(KBox<SframeMm>);

    impl Private {
        fn new() -> Result<Self> {
            Ok(Private(SframeMm::new()?))
        }

        fn add(&self, s: Section, fdes: Arc<Fdes>) -> Result {
            // SAFETY: The state is private to this test (type invariant).
            unsafe { self.0.add(s, fdes) }
        }

        fn remove(&self, text_start: usize) -> Result {
            // SAFETY: As above.
            unsafe { self.0.remove(text_start) }
        }

        fn unmap(&self, start: usize, end: usize) {
            // SAFETY: As above.
            unsafe { self.0.unmap(start, end) }
        }

        fn copy_to(&self, dst: &Private, keep: impl Fn(&Section) -> bool) -> Result {
            // SAFETY: As above, for both states.
            unsafe { self.0.copy_to(&dst.0, keep) }
        }
    }

    impl core::ops::Deref for Private {
        type Target = SframeMm;

        fn deref(&self) -> &SframeMm {
            &self.0
        }
    }

    /// What a lookup of `pc` found.
    fn found(mm: &SframeMm, pc: usize) -> Option<Found> {
        mm.lookup(pc).found
    }

    /// The registration covering `pc`.
    fn at(mm: &SframeMm, pc: usize) -> Option<Section> {
        found(mm, pc).map(|f| f.section)
    }

    /// The header of [`SECTION`].
    fn header() -> Result<sframe::Header> {
        let s = sframe::Section::new(&SECTION[..], SECTION.len() as u32, 0x10000);
        s.map(|s| *s.header()).map_err(|_| EINVAL)
    }

    /// A table without functions, for registry tests.
    fn none() -> Result<Arc<Fdes>> {
        Fdes::new(header()?, KVVec::new(), KVVec::new())
    }

    fn sec(text_start: usize, len: usize) -> Section {
        Section {
            text_start,
            text_end: text_start + len,
            sframe_start: 0x7000_0000 + text_start,
            sframe_addr: 0x7000_0000 + text_start,
            sframe_len: 64,
        }
    }

    #[test]
    fn registry_add_lookup_remove() -> Result {
        let mm = Private::new()?;
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
    fn registry_limit() -> Result {
        let mm = Private::new()?;
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
        Ok(())
    }

    #[test]
    fn registry_unmap_and_dead() -> Result {
        let mm = Private::new()?;
        mm.add(sec(0x1000, 0x1000), none()?)?;
        mm.add(sec(0x3000, 0x1000), none()?)?;
        mm.add(sec(0x5000, 0x1000), none()?)?;
        // Unmapping part of the text drops the registration...
        mm.unmap(0x3fff, 0x4000);
        assert_eq!(at(&mm, 0x3000), None);
        // ... and so does unmapping its section.
        let s = sec(0x5000, 0x1000);
        mm.unmap(s.sframe_start + 8, s.sframe_start + 9);
        assert_eq!(at(&mm, 0x5000), None);
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
        let child = Private::new()?;
        mm.copy_to(&child, |s| s.text_start != 0x8000)?;
        assert_eq!(at(&child, 0x1800), Some(sec(0x1000, 0x1000)));
        assert_eq!(at(&child, 0x8000), None);
        assert_eq!(child.len(), 1);
        Ok(())
    }

    #[test]
    fn fde_table_lookup() -> Result {
        // SECTION's one function, [0x11000, 0x11020), in a text from 0x11000.
        let mut sec_bytes = sframe::Section::new(&SECTION[..], SECTION.len() as u32, 0x10000)
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
        let fdes = Fdes::new(header()?, table, marks)?;
        assert_eq!(fdes.bytes(), 20 + 3 * 16);
        let mm = Private::new()?;
        mm.add(sec(0x11000, 0x100), fdes)?;
        let fde_at = |pc| found(&mm, pc).map(|f| f.fde);
        assert_eq!(fde_at(0x11000), Some(Some((0, packed))));
        assert_eq!(fde_at(0x1101f), Some(Some((0, packed))));
        // Registered text, no function there; no registration.
        assert_eq!(fde_at(0x11020), Some(None));
        assert_eq!(fde_at(0x11100), None);
        // What the lookup kept unpacks to the FDE the section gave.
        let f = found(&mm, 0x11010).ok_or(ENOENT)?;
        let (i, p) = f.fde.ok_or(ENOENT)?;
        assert_eq!(p.unpack(f.header.version, 0x11000, i), Ok(fde));
        let mark_at = |pc| found(&mm, pc).and_then(|f| f.mark).map(|m| m.index);
        assert_eq!(mark_at(0x11007), None);
        assert_eq!(mark_at(0x11008), Some(16));
        assert_eq!(mark_at(0x1100f), Some(16));
        assert_eq!(mark_at(0x1101f), Some(32));
        assert_eq!(mark_at(0x11020), None);
        Ok(())
    }

    #[test]
    fn rule_cache() -> Result {
        let mm = Private::new()?;
        mm.add(sec(0x1000, 0x1000), none()?)?;
        // The frame-pointer rule's return addresses in a registered text
        // need no VMA lookup.
        assert!(mm.covers(0x1000) && mm.covers(0x1fff));
        assert!(!mm.covers(0xfff) && !mm.covers(0x2000));
        let rule = CachedRule {
            cfa_off: 16,
            fp_off: -16,
            use_fp: true,
        };
        // What a walk starting now finds cached for `pc`.
        let cached = |pc| mm.cached(pc, true, mm.gen());
        let remember = |pc, c| mm.remember(pc, true, mm.lookup(pc).gen, c);
        // Remembered for its PC only, and for return addresses only.
        remember(0x1800, Cached::Rule(rule));
        assert_eq!(cached(0x1800), Some(Cached::Rule(rule)));
        assert_eq!(cached(0x1801), None);
        assert_eq!(cached(0x1800 + (1 << 32)), None);
        assert_eq!(mm.cached(0x1800, false, mm.gen()), None);
        // Negative and largest offsets survive the packing; what does not
        // fit is not cached.
        for r in [
            CachedRule {
                cfa_off: -2048,
                fp_off: -256,
                use_fp: false,
            },
            CachedRule {
                cfa_off: 2040,
                fp_off: 248,
                use_fp: true,
            },
            CachedRule {
                cfa_off: 8,
                fp_off: 0,
                use_fp: false,
            },
        ] {
            remember(0x1900, Cached::Rule(r));
            assert_eq!(cached(0x1900), Some(Cached::Rule(r)));
        }
        for r in [
            CachedRule {
                cfa_off: 2048,
                fp_off: 0,
                use_fp: false,
            },
            CachedRule {
                cfa_off: 20,
                fp_off: 0,
                use_fp: false,
            },
            CachedRule {
                cfa_off: 16,
                fp_off: -12,
                use_fp: true,
            },
            // CFA = SP: the step refuses it; the slot means "no section".
            CachedRule {
                cfa_off: 0,
                fp_off: 0,
                use_fp: false,
            },
        ] {
            remember(0x1a00, Cached::Rule(r));
            assert_eq!(cached(0x1a00), None);
        }
        remember(0x9000, Cached::FramePointer);
        assert_eq!(cached(0x9000), Some(Cached::FramePointer));
        remember(0x9100, Cached::End);
        assert_eq!(cached(0x9100), Some(Cached::End));
        remember(0x9180, Cached::FramePointerInCode);
        assert_eq!(cached(0x9180), Some(Cached::FramePointerInCode));
        // A rule with a CFA of FP + 0 does not fit: it cannot be taken for
        // the end of a walk (its bits would read as one).
        remember(
            0x9200,
            Cached::Rule(CachedRule {
                cfa_off: 0,
                fp_off: 0,
                use_fp: true,
            }),
        );
        assert_eq!(cached(0x9200), None);
        // Any registry change starts a new generation: what was cached, or
        // found before it, is not taken by walks that start after it, and
        // the cache is emptied for them.
        let gen = mm.lookup(0x1800).gen;
        remember(0x1800, Cached::Rule(rule));
        mm.add(sec(0x8000, 0x1000), none()?)?;
        assert_eq!(cached(0x1800), None);
        assert_eq!(mm.cached(0x1800, true, gen), None);
        mm.remember(0x1800, true, gen, Cached::Rule(rule));
        assert_eq!(cached(0x1800), None);
        assert_eq!(mm.cached(0x1800, true, gen), None);
        // A walk that started before keeps to its own generation.
        remember(0x1800, Cached::Rule(rule));
        assert_eq!(mm.cached(0x1800, true, gen), None);
        assert_eq!(cached(0x1800), Some(Cached::Rule(rule)));
        mm.remove(0x8000)?;
        assert_eq!(cached(0x1800), None);

        // In the cache this change emptied: four PCs of one set are all
        // kept, a fifth evicts the oldest; one stored again keeps one
        // place, the first.
        let mut same_set =
            (0x2000..0x100000).filter(|&p| RuleCache::set(p) == RuleCache::set(0x1800));
        let mut p = [0x1800; 6];
        for q in p.iter_mut().skip(1) {
            *q = same_set.next().ok_or(ENOENT)?;
        }
        for &q in &p[..4] {
            remember(q, Cached::FramePointer);
        }
        remember(p[1], Cached::Rule(rule));
        assert_eq!(cached(p[0]), Some(Cached::FramePointer));
        assert_eq!(cached(p[1]), Some(Cached::Rule(rule)));
        remember(p[4], Cached::FramePointer);
        assert_eq!(cached(p[0]), None);
        for &q in &p[1..5] {
            assert!(cached(q).is_some());
        }
        remember(p[5], Cached::FramePointer);
        assert_eq!(cached(p[2]), None);
        assert_eq!(cached(p[1]), Some(Cached::Rule(rule)));
        Ok(())
    }

    fn row(cfa: CfaRule, ra: RegRule, fp: RegRule) -> sframe::Row {
        sframe::Row {
            cfa,
            ra,
            fp,
            signal_frame: false,
            outermost: false,
            ra_mangled: false,
            func_start: 0x1000,
            func_size: 0x20,
            fre_start: 0,
        }
    }

    fn frame(r: &sframe::Row) -> Option<(i32, i32, i32, bool)> {
        match rule(r)? {
            Rule::Frame(f) => Some((f.cfa_off, f.ra_off, f.fp_off, f.use_fp)),
            Rule::Outermost => Some((0, 0, 0, false)),
        }
    }

    #[test]
    fn rows_to_frames() {
        let sp = |offset| CfaRule {
            base: Base::Sp,
            offset,
            deref: false,
        };
        let fp = CfaRule {
            base: Base::Fp,
            offset: 16,
            deref: false,
        };
        // Function entry: CFA = SP + 8, FP not saved.
        let entry = row(sp(8), RegRule::CfaOffset(-8), RegRule::SameValue);
        assert_eq!(frame(&entry), Some((8, -8, 0, false)));
        // After push %rbp; mov %rsp,%rbp.
        let body = row(fp, RegRule::CfaOffset(-8), RegRule::CfaOffset(-16));
        assert_eq!(frame(&body), Some((16, -8, -16, true)));
        // RA undefined: the outermost frame.
        let outer = row(sp(8), RegRule::Undefined, RegRule::SameValue);
        assert!(matches!(rule(&outer), Some(Rule::Outermost)));
        // What the generic step cannot express goes to frame pointers.
        let drap = CfaRule {
            base: Base::Fp,
            offset: -8,
            deref: true,
        };
        assert!(rule(&row(drap, RegRule::CfaOffset(-8), RegRule::SameValue)).is_none());
        let r10 = CfaRule {
            base: Base::Reg(10),
            offset: 0,
            deref: false,
        };
        assert!(rule(&row(r10, RegRule::CfaOffset(-8), RegRule::SameValue)).is_none());
    }

    /// A V2 section at 0x10000 for one function at 0x11000, 0x20 bytes:
    /// entry, after `push %rbp`, after `mov %rsp,%rbp`, at `ret`.
    #[rustfmt::skip]
    const SECTION: [u8; 62] = [
        0xe2, 0xde, 2, 1,
        3, 0, 0xf8, 0,
        1, 0, 0, 0, 4, 0, 0, 0, 14, 0, 0, 0,
        0, 0, 0, 0, 20, 0, 0, 0,
        0x00, 0x10, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0,
        0x00, 0x03, 0x08,
        0x01, 0x05, 0x10, 0xf0,
        0x04, 0x04, 0x10, 0xf0,
        0x1f, 0x03, 0x08,
    ];

    #[test]
    fn decoder_in_kernel() {
        let s = sframe::Section::new(&SECTION[..], SECTION.len() as u32, 0x10000);
        assert!(s.is_ok());
        let Ok(mut s) = s else { return };
        assert!(s.validate().is_ok());
        let f = |s: &mut sframe::Section<&[u8]>, pc| s.find(pc).ok().as_ref().and_then(frame);
        assert_eq!(f(&mut s, 0x11000), Some((8, -8, 0, false)));
        assert_eq!(f(&mut s, 0x11003), Some((16, -8, -16, false)));
        assert_eq!(f(&mut s, 0x11010), Some((16, -8, -16, true)));
        assert_eq!(f(&mut s, 0x1101f), Some((8, -8, 0, false)));
        assert_eq!(s.find(0x11020), Err(sframe::Error::NotCovered));
        // Given its FDE, as the registry keeps it.
        let row = s.fde(0).and_then(|fde| s.find_row(&fde, 0x11010));
        assert_eq!(row, s.find(0x11010));
        assert_eq!(s.find(0x10fff), Err(sframe::Error::NotCovered));
        // Every truncation is refused or found malformed, never a panic.
        for len in 0..SECTION.len() {
            let bytes = &SECTION[..len];
            let ok =
                sframe::Section::new(bytes, len as u32, 0x10000).and_then(|mut s| s.validate());
            assert!(ok.is_err());
        }
    }
}
