// SPDX-License-Identifier: GPL-2.0

//! The structs of `include/uapi/linux/unwind_user.h` as user memory holds
//! them: read and written as bytes through their bindgen'ed definitions,
//! with the size-versioning of `copy_struct_from_user()`; and the errno
//! the ABI returns that `kernel::error::code` lacks.

use kernel::{
    bindings,
    error::code::{E2BIG, EINVAL},
    ffi::{c_int, c_ulong},
    prelude::*,
    transmute::{AsBytes, FromBytes},
    uaccess::{UserPtr, UserSlice, UserSliceWriter},
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
        file_tables, file_bytes, table_waits, files_wanted, wants_dropped, registries
    } = UNWIND_USER_INFO_SIZE_VER5;
    unwind_user_file {
        fd, flags, sframe_ptr, sframe_size, sframe_addr
    } = UNWIND_USER_FILE_SIZE_VER0;
    unwind_user_file_want { size, fd, flags, walks, asked_ns } = UNWIND_USER_FILE_WANT_SIZE_VER0;
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

/// Writes `v` whole at `out`.
pub(crate) fn write<T>(out: &mut UserSliceWriter, v: T) -> Result
where
    Uapi<T>: AsBytes,
{
    out.write(&Uapi(v))
}

/// Writes `v` to `ptr`, at most `size` bytes of it (an older caller's
/// struct is shorter).
pub(crate) fn write_versioned<T>(ptr: c_ulong, size: c_ulong, v: T) -> Result
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
