// SPDX-License-Identifier: GPL-2.0

//! `prctl(PR_UNWIND_USER, op, ...)`: the operations and structs of
//! `include/uapi/linux/unwind_user.h`, read and written through their
//! bindgen'ed definitions.

use crate::{
    assist, file_table, mm, register,
    registry::{Section, SframeMm, MAX_SECTION_SIZE},
};
use kernel::{
    bindings,
    error::code::{E2BIG, EBADF, EINVAL, ENOENT},
    ffi::{c_int, c_ulong},
    prelude::*,
    sync::atomic::Relaxed,
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice},
};

/// `EOPNOTSUPP`, which `kernel::error::code` does not have.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as c_int))
}

/// A struct of the uapi header, read and written as bytes.
///
/// # Invariants
///
/// `T` is one of the structs of [`uapi_structs!`], whose fields are all
/// integers and take all of its bytes (checked at build time): every bit
/// pattern is a value, and no byte is padding.
#[repr(transparent)]
pub(crate) struct Uapi<T>(T);

/// Makes `Uapi<T>` readable from and writable to user memory for each
/// struct `T`, given with all its fields (a field added to the header
/// without being named here fails to build) and its size in the header.
macro_rules! uapi_structs {
    ($($t:ident { $($f:ident),* } = $size:ident;)*) => {$(
        const _: () = {
            let v = bindings::$t { $($f: 0),* };
            // The fields take all of the struct's bytes: no padding.
            assert!(size_of::<bindings::$t>() == 0 $(+ size_of_val(&v.$f))*);
            assert!(size_of::<bindings::$t>() == bindings::$size as usize);
        };
        // SAFETY: Integer fields only, and no padding (checked above).
        unsafe impl FromBytes for Uapi<bindings::$t> {}
        // SAFETY: As above.
        unsafe impl AsBytes for Uapi<bindings::$t> {}
    )*};
}

uapi_structs! {
    unwind_user_sframe {
        text_start, text_size, sframe_start, sframe_size, flags, sframe_addr
    } = UNWIND_USER_SFRAME_SIZE_VER1;
    unwind_user_info {
        nr_sections, unwinds, sframe_frames, fp_fallbacks, errors, dropped,
        nofault_frames, nofault_faults, cached_frames, section_reads, section_bytes,
        file_tables, file_bytes
    } = UNWIND_USER_INFO_SIZE_VER3;
    unwind_user_file {
        fd, flags, sframe_ptr, sframe_size, sframe_addr
    } = UNWIND_USER_FILE_SIZE_VER0;
    unwind_user_assist { signo, max_entries, timeout_ms, flags } = UNWIND_USER_ASSIST_SIZE_VER0;
    unwind_user_assist_frames { cookie, entries, nr, flags } = UNWIND_USER_ASSIST_FRAMES_SIZE_VER0;
}

/// Reads a size-versioned struct from `ptr`, `size` bytes long, as
/// `copy_struct_from_user()` does for clone3() and openat2(): the fields
/// this kernel knows, zero past `size` (an older caller's struct); shorter
/// than `min` (the first version) is `EINVAL`; larger than a page, or a
/// non-zero byte past the known fields (a newer ABI this kernel does not
/// know), is `E2BIG`.
pub(crate) fn read_versioned<T: Default>(ptr: c_ulong, size: c_ulong, min: usize) -> Result<T>
where
    Uapi<T>: FromBytes + AsBytes,
{
    if size < min {
        return Err(EINVAL);
    }
    if size > kernel::page::PAGE_SIZE {
        return Err(E2BIG);
    }
    let mut r = UserSlice::new(UserPtr::from_addr(ptr), size).reader();
    let mut v = Uapi(T::default());
    let known = v.as_bytes_mut();
    let n = size.min(known.len());
    r.read_slice(known.get_mut(..n).ok_or(EINVAL)?)?;
    let mut tail = [0u8; 64];
    while !r.is_empty() {
        let n = r.len().min(tail.len());
        let chunk = tail.get_mut(..n).ok_or(EINVAL)?;
        r.read_slice(chunk)?;
        if chunk.iter().any(|&b| b != 0) {
            return Err(E2BIG);
        }
    }
    Ok(v.0)
}

/// Writes `v` to `ptr`, at most `size` bytes of it (an older caller's
/// struct is shorter).
fn write_versioned<T>(ptr: c_ulong, size: c_ulong, v: T) -> Result
where
    Uapi<T>: AsBytes,
{
    let v = Uapi(v);
    let bytes = v.as_bytes();
    let n = size.min(bytes.len());
    UserSlice::new(UserPtr::from_addr(ptr), n)
        .writer()
        .write_slice(bytes.get(..n).ok_or(EINVAL)?)
}

const SFRAME_SIZE_VER0: usize = bindings::UNWIND_USER_SFRAME_SIZE_VER0 as usize;
const SFRAME_SIZE_VER1: usize = bindings::UNWIND_USER_SFRAME_SIZE_VER1 as usize;
const INFO_SIZE_VER0: usize = bindings::UNWIND_USER_INFO_SIZE_VER0 as usize;
const FILE_SIZE_VER0: usize = bindings::UNWIND_USER_FILE_SIZE_VER0 as usize;
const F_ADDR: u64 = bindings::UNWIND_USER_SFRAME_F_ADDR as u64;

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
    register::add(Section {
        text_start: usize::try_from(u.text_start).map_err(|_| EINVAL)?,
        text_end: usize::try_from(text_end).map_err(|_| EINVAL)?,
        sframe_start: usize::try_from(u.sframe_start).map_err(|_| EINVAL)?,
        sframe_addr: usize::try_from(sframe_addr).map_err(|_| EINVAL)?,
        sframe_len: u32::try_from(u.sframe_size).map_err(|_| E2BIG)?,
        resident: false,
    })
}

/// `UNWIND_USER_SFRAME_UNREGISTER`.
fn unregister(text_start: c_ulong) -> Result {
    mm::with_current(|mm| mm::with_locked(mm, |mm| mm.registry().ok_or(ENOENT)?.remove(text_start)))
}

/// `UNWIND_USER_QUERY`.
fn query(ptr: c_ulong, size: c_ulong) -> Result {
    if !(INFO_SIZE_VER0..=kernel::page::PAGE_SIZE).contains(&size) {
        return Err(EINVAL);
    }
    let (file_tables, file_bytes) = file_table::usage();
    let info = mm::with_current(|mm| {
        let Some(r) = SframeMm::of(mm) else {
            return Ok(bindings::unwind_user_info {
                file_tables,
                file_bytes,
                ..Default::default()
            });
        };
        let c = &r.counters;
        let (frames, fallbacks, errors, faults) = (
            c.sframe_frames.load(Relaxed),
            c.fp_fallbacks.load(Relaxed),
            c.errors.load(Relaxed),
            c.nofault_faults.load(Relaxed),
        );
        Ok(bindings::unwind_user_info {
            nr_sections: r.len() as u64,
            // Every lookup ends in exactly one of those.
            unwinds: frames
                .wrapping_add(fallbacks)
                .wrapping_add(errors)
                .wrapping_add(faults),
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
        })
    })?;
    write_versioned(ptr, size, info)
}

/// `prctl(PR_UNWIND_USER, op, arg3, arg4, arg5)`; arguments an operation
/// does not take must be 0.
pub(crate) fn prctl(op: c_ulong, arg3: c_ulong, arg4: c_ulong, arg5: c_ulong) -> Result {
    // Compare all of `op`: one with high bits set is not a known op.
    const REGISTER: c_ulong = bindings::UNWIND_USER_SFRAME_REGISTER as c_ulong;
    const UNREGISTER: c_ulong = bindings::UNWIND_USER_SFRAME_UNREGISTER as c_ulong;
    const QUERY: c_ulong = bindings::UNWIND_USER_QUERY as c_ulong;
    const ASSIST_ENABLE: c_ulong = bindings::UNWIND_USER_ASSIST_ENABLE as c_ulong;
    const ASSIST_SUBMIT: c_ulong = bindings::UNWIND_USER_ASSIST_SUBMIT as c_ulong;
    const FILE_ATTACH: c_ulong = bindings::UNWIND_USER_FILE_ATTACH as c_ulong;
    const FILE_DETACH: c_ulong = bindings::UNWIND_USER_FILE_DETACH as c_ulong;
    match op {
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
        _ => Err(EINVAL),
    }
}
