// SPDX-License-Identifier: GPL-2.0

//! `prctl(PR_UNWIND_USER, op, ...)`: the operations of
//! `include/uapi/linux/unwind_user.h`. Registering a section validates it
//! in full, once, before taking the mmap lock, and adds it to the address
//! space's registry.

use crate::{
    assist, file_table, memory, mmap_lock, provider,
    registry::{RegistryWriter, SframeMm, MAX_SECTION_SIZE},
    section::Section,
    uapi::{eopnotsupp, read_versioned, write_versioned},
    usermem::{UserMem, UserReader},
    validate::{self, refuse},
    vdso,
};
use kernel::{
    alloc::KVec,
    bindings,
    error::code::{E2BIG, EBADF, EFAULT, EINTR, EINVAL, ENOENT},
    ffi::{c_long, c_ulong},
    mm::virt::flags::{EXEC, READ},
    prelude::*,
    sync::atomic::Relaxed,
};

const SFRAME_SIZE_VER0: usize = bindings::UNWIND_USER_SFRAME_SIZE_VER0 as usize;
const SFRAME_SIZE_VER1: usize = bindings::UNWIND_USER_SFRAME_SIZE_VER1 as usize;
const INFO_SIZE_VER0: usize = bindings::UNWIND_USER_INFO_SIZE_VER0 as usize;
const FILE_SIZE_VER0: usize = bindings::UNWIND_USER_FILE_SIZE_VER0 as usize;
const F_ADDR: u64 = bindings::UNWIND_USER_SFRAME_F_ADDR as u64;

/// Bytes of section [`add`] reads at a time, in two blocks.
const VALIDATION_BLOCKS: usize = 8192;

/// Validates `s` and registers it for the current task's address space.
fn add(s: Section) -> Result {
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
    let mut reader = UserReader::new(s.sframe_start, UserMem::Faultable, u32::MAX);
    // In blocks: validation reads every field of the section, several user
    // copies a function otherwise.
    let mut blocks = KVec::from_elem(0u8, VALIDATION_BLOCKS, memory::gfp())?;
    let fdes = validate::validate(
        &s,
        sframe::Blocks::new(&mut reader, &mut blocks, s.sframe_len),
    )
    .map_err(|e| if reader.killed { EINTR } else { e })?
    .shared()?;

    mmap_lock::with_current(|mm| {
        mmap_lock::with_locked(mm, |mm| {
            let sframe_end = s.sframe_start + s.sframe_len as usize;
            if !mm.in_one_vma(s.text_start, s.text_end, EXEC) {
                return Err(refuse("text is not in one executable mapping", &s, EINVAL));
            }
            if !mm.in_one_vma(s.sframe_start, sframe_end, READ) {
                return Err(refuse("section is not in one readable mapping", &s, EFAULT));
            }
            vdso::registry_or_create(mm)?
                .add(s, fdes)
                .map_err(|e| refuse("limit or overlap", &s, e))
        })
    })
}

/// `UNWIND_USER_SFRAME_REGISTER`.
fn register(ptr: c_ulong, size: c_ulong) -> Result {
    let u: bindings::unwind_user_sframe = read_versioned(ptr, size, SFRAME_SIZE_VER0)?;
    if u.flags & !F_ADDR != 0 || u.text_size == 0 || u.sframe_size == 0 {
        return Err(EINVAL);
    }
    // Without the flag the section is where it was linked to be, and
    // `sframe_addr` must be zero; with it, `sframe_addr` says where that
    // would have been, so the struct must be long enough to hold it.
    let sframe_addr = match u.flags & F_ADDR != 0 {
        true if size >= SFRAME_SIZE_VER1 => u.sframe_addr,
        false if u.sframe_addr == 0 => u.sframe_start,
        _ => return Err(EINVAL),
    };
    let text_end = u.text_start.checked_add(u.text_size).ok_or(EINVAL)?;
    if u.sframe_start.checked_add(u.sframe_size).is_none() {
        return Err(EINVAL);
    }
    if u.sframe_size > MAX_SECTION_SIZE as u64 {
        return Err(E2BIG);
    }
    add(Section {
        text_start: usize::try_from(u.text_start).map_err(|_| EINVAL)?,
        text_end: usize::try_from(text_end).map_err(|_| EINVAL)?,
        sframe_start: usize::try_from(u.sframe_start).map_err(|_| EINVAL)?,
        sframe_addr: usize::try_from(sframe_addr).map_err(|_| EINVAL)?,
        sframe_len: u32::try_from(u.sframe_size).map_err(|_| E2BIG)?,
        in_kernel: false,
    })
}

/// `UNWIND_USER_SFRAME_UNREGISTER`.
fn unregister(text_start: c_ulong) -> Result {
    mmap_lock::with_current(|mm| {
        mmap_lock::with_locked(mm, |mm| {
            RegistryWriter::of(mm).ok_or(ENOENT)?.remove(text_start)
        })
    })
}

/// `UNWIND_USER_QUERY`.
fn query(ptr: c_ulong, size: c_ulong) -> Result {
    if !(INFO_SIZE_VER0..=kernel::page::PAGE_SIZE).contains(&size) {
        return Err(EINVAL);
    }
    // Machine-wide: what other users run shows in them (a table more when
    // a program starts), so only to those who may profile the machine.
    let ((file_tables, file_bytes), (files_wanted, wants_dropped), registries) =
        if file_table::privileged().is_ok() {
            (file_table::usage(), provider::counts(), SframeMm::count())
        } else {
            ((0, 0), (0, 0), 0)
        };
    let info = mmap_lock::with_current(|mm| {
        let Some(r) = SframeMm::of(mm) else {
            return Ok(bindings::unwind_user_info {
                file_tables,
                file_bytes,
                files_wanted,
                wants_dropped,
                registries,
                ..Default::default()
            });
        };
        let c = &r.counters;
        let (frames, fallbacks, errors, faults, waits) = (
            c.sframe_frames.load(Relaxed),
            c.fp_fallbacks.load(Relaxed),
            c.errors.load(Relaxed),
            c.nofault_faults.load(Relaxed),
            c.table_waits.load(Relaxed),
        );
        Ok(bindings::unwind_user_info {
            nr_sections: r.len() as u64,
            // Every lookup ends in exactly one of those.
            unwinds: frames
                .wrapping_add(fallbacks)
                .wrapping_add(errors)
                .wrapping_add(faults)
                .wrapping_add(waits),
            sframe_frames: frames,
            fp_fallbacks: fallbacks,
            errors,
            dropped: c.dropped.load(Relaxed),
            nofault_frames: c.nofault_frames.load(Relaxed),
            nofault_faults: faults,
            cached_frames: c.cached_frames.load(Relaxed),
            section_reads: c.section_reads.load(Relaxed),
            section_bytes: c.section_bytes.load(Relaxed),
            file_tables,
            file_bytes,
            table_waits: waits,
            files_wanted,
            wants_dropped,
            registries,
        })
    })?;
    write_versioned(ptr, size, info)
}

/// `prctl(PR_UNWIND_USER, op, arg3, arg4, arg5)`; arguments an operation
/// does not take must be 0.
pub(crate) fn prctl(op: c_ulong, arg3: c_ulong, arg4: c_ulong, arg5: c_ulong) -> Result<c_long> {
    // Compare all of `op`: one with high bits set is not a known op.
    const REGISTER: c_ulong = bindings::UNWIND_USER_SFRAME_REGISTER as c_ulong;
    const UNREGISTER: c_ulong = bindings::UNWIND_USER_SFRAME_UNREGISTER as c_ulong;
    const QUERY: c_ulong = bindings::UNWIND_USER_QUERY as c_ulong;
    const ASSIST_ENABLE: c_ulong = bindings::UNWIND_USER_ASSIST_ENABLE as c_ulong;
    const ASSIST_SUBMIT: c_ulong = bindings::UNWIND_USER_ASSIST_SUBMIT as c_ulong;
    const FILE_ATTACH: c_ulong = bindings::UNWIND_USER_FILE_ATTACH as c_ulong;
    const FILE_DETACH: c_ulong = bindings::UNWIND_USER_FILE_DETACH as c_ulong;
    const FILE_PROVIDE: c_ulong = bindings::UNWIND_USER_FILE_PROVIDE as c_ulong;
    let r = match op {
        REGISTER if arg5 == 0 => register(arg3, arg4),
        UNREGISTER if arg4 == 0 && arg5 == 0 => unregister(arg3),
        QUERY if arg5 == 0 => query(arg3, arg4),
        ASSIST_ENABLE if arg5 == 0 => assist::enable(arg3, arg4),
        ASSIST_SUBMIT if arg5 == 0 => assist::submit(arg3, arg4),
        FILE_ATTACH if arg5 == 0 => {
            file_table::attach(&read_versioned(arg3, arg4, FILE_SIZE_VER0)?)
        }
        FILE_DETACH if arg4 == 0 && arg5 == 0 => {
            file_table::detach(i32::try_from(arg3).map_err(|_| EBADF)?)
        }
        FILE_PROVIDE if arg3 == 0 && arg4 == 0 && arg5 == 0 => {
            return file_table::provide().map(|fd| fd as c_long);
        }
        _ => Err(EINVAL),
    };
    r.map(|()| 0)
}
