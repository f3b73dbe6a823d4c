// SPDX-License-Identifier: GPL-2.0

//! The system calls of `attach`, `prctl(PR_UNWIND_USER, ...)`: the only
//! `unsafe` code of `sframe-synth`, each block proved sound where it is.

use std::ffi::{c_int, c_ulong};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// `PR_UNWIND_USER` (<linux/prctl.h>, `patches/prctl-unwind-user.patch`).
const PR_UNWIND_USER: c_int = 82;
/// Operations of `PR_UNWIND_USER` (<linux/unwind_user.h>).
const UNWIND_USER_QUERY: c_ulong = 3;
const UNWIND_USER_FILE_ATTACH: c_ulong = 6;
/// The table does not hold the file: it goes with the inode.
const UNWIND_USER_FILE_F_NO_HOLD: u32 = 1;
const UNWIND_USER_FILE_DETACH: c_ulong = 7;
const UNWIND_USER_FILE_PROVIDE: c_ulong = 8;
/// The provider's answer that the file has no section to give.
const UNWIND_USER_FILE_F_NONE: u32 = 2;
/// `struct unwind_user_info` as far as `UNWIND_USER_INFO_SIZE_VER0`: six
/// counters.
type InfoVer0 = [u64; 6];
const INFO_SIZE_VER0: c_ulong = 48;
const _: () = assert!(size_of::<InfoVer0>() == 48);
/// `EINVAL` (asm-generic/errno-base.h).
pub const EINVAL: i32 = 22;

/// `struct unwind_user_file` (<linux/unwind_user.h>).
#[repr(C)]
struct UnwindUserFile {
    fd: i32,
    flags: u32,
    sframe_ptr: u64,
    sframe_size: u64,
    sframe_addr: u64,
}

/// `UNWIND_USER_FILE_SIZE_VER0`: the layout above is the ABI's.
const FILE_SIZE_VER0: c_ulong = 32;
const _: () = assert!(size_of::<UnwindUserFile>() == 32);

#[allow(unsafe_code)]
unsafe extern "C" {
    /// glibc's `int prctl(int option, ...)`: it takes exactly four
    /// `unsigned long` arguments after `option` (`va_arg` four times) and
    /// passes them to the system call.
    fn prctl(option: c_int, ...) -> c_int;
}

/// `c_ulong` zero, for the arguments an operation does not take.
const ZERO: c_ulong = 0;

/// The address of `p` for the kernel, which will access what it points to:
/// its provenance is exposed.
fn addr<T>(p: *const T) -> io::Result<c_ulong> {
    c_ulong::try_from(p.expose_provenance()).map_err(|_| io::Error::from_raw_os_error(EINVAL))
}

/// `prctl(PR_UNWIND_USER, UNWIND_USER_FILE_ATTACH)`: make `section`
/// (its addresses relative to link-time address `sframe_addr`) the SFrame
/// table of `file`, for every process that maps it; held by the kernel
/// (`hold`) or gone with the inode, once nothing maps the file. The
/// `errno` of a
/// failure is in the error (`raw_os_error()`).
pub fn file_attach(file: &File, section: &[u8], sframe_addr: u64, hold: bool) -> io::Result<()> {
    let flags = if hold { 0 } else { UNWIND_USER_FILE_F_NO_HOLD };
    attach_op(file, flags, section, sframe_addr)
}

/// `prctl(PR_UNWIND_USER, UNWIND_USER_FILE_ATTACH)` with
/// `UNWIND_USER_FILE_F_NONE`: the provider's answer that `file` has no
/// section to give, which the kernel remembers for this version of it.
pub fn file_answer_none(file: &File) -> io::Result<()> {
    attach_op(file, UNWIND_USER_FILE_F_NONE, &[], 0)
}

/// `UNWIND_USER_FILE_ATTACH` of `file` with `flags` and `section` (none:
/// a null pointer and size 0, as `UNWIND_USER_FILE_F_NONE` wants them).
fn attach_op(file: &File, flags: u32, section: &[u8], sframe_addr: u64) -> io::Result<()> {
    let arg = UnwindUserFile {
        fd: file.as_raw_fd(),
        flags,
        sframe_ptr: if section.is_empty() {
            0
        } else {
            addr(section.as_ptr())?
        },
        sframe_size: u64::try_from(section.len())
            .map_err(|_| io::Error::from_raw_os_error(EINVAL))?,
        sframe_addr,
    };
    let ptr = addr(&raw const arg)?;
    // SAFETY: `prctl` is glibc's variadic wrapper, called with the four
    // `c_ulong` variadic arguments it reads. The kernel reads
    // `FILE_SIZE_VER0` bytes at `ptr`: `arg`, a live, initialized
    // `repr(C)` struct of exactly that size (asserted above); and
    // `sframe_size` bytes at `sframe_ptr`: `section`, borrowed for the
    // whole call (none when it is empty). Both addresses carry exposed
    // provenance. The kernel copies what it reads and keeps no pointer
    // past the call, and writes no memory of ours. The descriptor belongs
    // to `file`, borrowed for the call, so it stays open. A kernel without
    // the operation (or without `PR_UNWIND_USER`) returns `EINVAL`
    // touching nothing.
    #[allow(unsafe_code)]
    let r = unsafe {
        prctl(
            PR_UNWIND_USER,
            UNWIND_USER_FILE_ATTACH,
            ptr,
            FILE_SIZE_VER0,
            ZERO,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `prctl(PR_UNWIND_USER, UNWIND_USER_FILE_PROVIDE)`: this process is the
/// machine's provider of file tables; the descriptor whose reads give the
/// files the kernel wants (`EBUSY`: another provider is registered).
pub fn file_provide() -> io::Result<File> {
    // SAFETY: As above, four `c_ulong` variadic arguments, none a pointer.
    #[allow(unsafe_code)]
    let r = unsafe { prctl(PR_UNWIND_USER, UNWIND_USER_FILE_PROVIDE, ZERO, ZERO, ZERO) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: The kernel installed a new descriptor `r` in this process
    // for the caller; nothing else owns it.
    #[allow(unsafe_code)]
    Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(r) })
}

/// `prctl(PR_UNWIND_USER, UNWIND_USER_FILE_DETACH)`: `file` has no table
/// any more (`ENOENT` if it had none). The `errno` of a failure is in the
/// error.
pub fn file_detach(file: &File) -> io::Result<()> {
    let fd =
        c_ulong::try_from(file.as_raw_fd()).map_err(|_| io::Error::from_raw_os_error(EINVAL))?;
    // SAFETY: As above, four `c_ulong` variadic arguments, none a pointer:
    // the kernel reads and writes no memory of ours. The descriptor belongs
    // to `file`, borrowed for the call, so it stays open.
    #[allow(unsafe_code)]
    let r = unsafe { prctl(PR_UNWIND_USER, UNWIND_USER_FILE_DETACH, fd, ZERO, ZERO) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the kernel has `PR_UNWIND_USER` at all (`UNWIND_USER_QUERY`
/// answers), to say why `UNWIND_USER_FILE_ATTACH` got `EINVAL`.
pub fn has_pr_unwind_user() -> bool {
    let mut info: InfoVer0 = [0; 6];
    let Ok(ptr) = addr(info.as_mut_ptr().cast_const()) else {
        return false;
    };
    // SAFETY: As above, four `c_ulong` variadic arguments. The kernel
    // writes at most `INFO_SIZE_VER0` bytes at `ptr`: `info`, exclusively
    // borrowed, of that size (asserted above), valid for any bytes; its
    // address carries exposed provenance. It reads nothing of ours and
    // keeps no pointer. Without `PR_UNWIND_USER` it returns `EINVAL`
    // touching nothing.
    #[allow(unsafe_code)]
    let r = unsafe { prctl(PR_UNWIND_USER, UNWIND_USER_QUERY, ptr, INFO_SIZE_VER0, ZERO) };
    r == 0 || io::Error::last_os_error().raw_os_error() != Some(EINVAL)
}

/// `struct unwind_user_info` up to `UNWIND_USER_INFO_SIZE_VER4`: sixteen
/// counters, the machine-wide ones from index 11 on.
type InfoVer4 = [u64; 16];
const INFO_SIZE_VER4: c_ulong = 128;
const _: () = assert!(size_of::<InfoVer4>() == 128);

/// The kernel's machine-wide counts of file tables (`UNWIND_USER_QUERY`):
/// `None` for what an older kernel does not report.
#[derive(Debug, Default)]
pub struct FileCounts {
    /// Files described by a table.
    pub tables: Option<u64>,
    /// Kernel memory those tables take, in bytes.
    pub bytes: Option<u64>,
    /// Files the provider was asked for.
    pub wanted: Option<u64>,
    /// Files not asked for because the provider's queue was full.
    pub dropped: Option<u64>,
}

/// Reads [`FileCounts`].
pub fn file_counts() -> io::Result<FileCounts> {
    // What the kernel does not write stays all ones: no counter gets there.
    let mut info: InfoVer4 = [u64::MAX; 16];
    let ptr = addr(info.as_mut_ptr().cast_const())?;
    // SAFETY: As in `has_pr_unwind_user()`: the kernel writes at most
    // `INFO_SIZE_VER4` bytes at `ptr`, `info`, exclusively borrowed, of
    // that size (asserted above) and valid for any bytes.
    #[allow(unsafe_code)]
    let r = unsafe { prctl(PR_UNWIND_USER, UNWIND_USER_QUERY, ptr, INFO_SIZE_VER4, ZERO) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let at = |i: usize| info.get(i).copied().filter(|&v| v != u64::MAX);
    Ok(FileCounts {
        tables: at(11),
        bytes: at(12),
        wanted: at(14),
        dropped: at(15),
    })
}

/// `struct unwind_user_file_want` (<linux/unwind_user.h>): its first
/// fields, `UNWIND_USER_FILE_WANT_SIZE_VER0` bytes; a later kernel's
/// records are longer (`size`).
const WANT_SIZE_VER0: usize = 24;
/// Wants were dropped: the kernel's queue was full.
pub const WANT_F_OVERFLOW: u32 = 1;

/// A file the kernel wants the table of.
pub struct Want {
    /// The file, read-only, or the `errno` the kernel could not open it
    /// with (`None` with [`WANT_F_OVERFLOW`]).
    pub file: Result<File, i32>,
    pub flags: u32,
    /// How many walks met it before it was read.
    pub walks: u32,
    /// When the first of them asked for it: `CLOCK_MONOTONIC`, in ns.
    pub asked_ns: u64,
}

/// Reads the wants the kernel queued for the provider `provider`, waiting
/// for one if none is queued.
pub fn read_wants(provider: &File) -> io::Result<Vec<Want>> {
    let mut buf = [0u8; 64 * WANT_SIZE_VER0];
    let n = io::Read::read(&mut &*provider, &mut buf)?;
    let mut wants = Vec::new();
    let mut rest = buf.get(..n).unwrap_or_default();
    while let Some(rec) = rest.get(..WANT_SIZE_VER0) {
        let word = |i: usize| {
            rec.get(i * 4..i * 4 + 4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, u32::from_ne_bytes)
        };
        let (size, fd, flags, walks) = (word(0) as usize, word(1) as i32, word(2), word(3));
        let asked_ns = u64::from(word(4)) | u64::from(word(5)) << 32;
        let file = if fd >= 0 {
            // SAFETY: The kernel installed descriptor `fd` in this process
            // for this record, which is read once: nothing else owns it.
            #[allow(unsafe_code)]
            Ok(unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
        } else {
            Err(-fd)
        };
        wants.push(Want {
            file,
            flags,
            walks,
            asked_ns,
        });
        rest = rest.get(size.max(WANT_SIZE_VER0)..).unwrap_or_default();
    }
    Ok(wants)
}

/// `CLOCK_MONOTONIC` now, in ns: what a want's `asked_ns` is measured by.
pub fn monotonic_ns() -> u64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    #[allow(unsafe_code)]
    unsafe extern "C" {
        fn clock_gettime(clock: c_int, ts: *mut Timespec) -> c_int;
    }
    const CLOCK_MONOTONIC: c_int = 1;
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: glibc's clock_gettime() writes one `struct timespec` (two
    // 64-bit fields on x86_64, as `Timespec`) at the pointer, to `ts`,
    // exclusively borrowed for the call.
    #[allow(unsafe_code)]
    let r = unsafe { clock_gettime(CLOCK_MONOTONIC, &raw mut ts) };
    if r != 0 {
        return 0;
    }
    (ts.sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.nsec as u64)
}
