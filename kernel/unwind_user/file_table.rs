// SPDX-License-Identifier: GPL-2.0

//! SFrame tables of files, one per file, shared by every address space
//! that maps the file's text, now or later.
//!
//! A file's table comes from its own `PT_GNU_SFRAME` segment (a program or
//! library built with `--gsframe`), or from a privileged agent that attaches
//! a section to a file that has none (`UNWIND_USER_FILE_ATTACH`: a file
//! descriptor and the section's bytes). Either way the kernel reads the
//! file's program headers itself, validates the section once, and keeps
//! its FDE table and its rows, decoded, in kernel memory ([`FileTable`]);
//! a file with no section it can use gets a table that says so, so that it
//! is read once.
//!
//! Nothing is read at exec or mmap: mmap attaches the table a file has
//! already ([`attach_mapping`]), a lookup. The first walk that may sleep
//! and meets an IP no registration covers builds the tables of the files
//! the address space maps executable that have none yet, and attaches them
//! all ([`attach_mapped`]), each with its mapping's load bias, as a
//! registration whose rows are read from kernel memory (never a user read,
//! at NMI time neither). A walk at NMI or IRQ time that meets such an IP
//! before ends there and asks for a deferred unwind, which attaches them;
//! and so again once a mapping or a table changed.
//!
//! A table is keyed by the inode whose bytes it was built from (on
//! overlayfs, the layer's that the mapping maps, not the overlay's, whose
//! layer changes at copy-up) and stamped with the inode's size, mtime
//! and ctime when it was built: a file open for writing gets none,
//! and a table whose file changed since (rewritten in place, truncated) is
//! dropped instead of attached. A table built from the file holds no
//! reference to it: it goes when the inode is evicted ([`evict`]), once
//! nothing maps the file and the inode cache lets it go. An agent's table
//! holds the file it was attached with, as an open file descriptor would,
//! until it is detached, or until the file changes or loses its last name
//! and the periodic sweep, or the agent's next attach or detach, finds it
//! so ([`drop_stale_held`]); one attached to a file with no name left, or
//! with `UNWIND_USER_FILE_F_NO_HOLD`, holds nothing, and goes with the
//! inode. The tables' memory is charged to the memory
//! cgroup of the task that built them, and bounded machine-wide by
//! `kernel.unwind_user_file_bytes_max`, until it is freed: a table
//! detached or replaced counts as long as an address space still uses it.
//! Tables of files any user may have made take at most a part of it
//! (`kernel.unwind_user_file_bytes_user_max`, [`max_user_tables()`]), so
//! that the system's own files always find room, and each user at most a
//! share of that part (`kernel.unwind_user_file_bytes_per_user`,
//! [`max_tables_per_user()`]), the user whose task had the table built
//! ([`memory::payer`]), so that no user takes it from the others. A file
//! whose table did not fit is built again once the budget has room, by the
//! next walk after a mapping of it. The number of tables is bounded too
//! (`kernel.unwind_user_file_tables_max`), and at the bound a table that
//! describes nothing (any readable file can be mapped executable) makes
//! room for another ([`insert`]).

use crate::{
    attach_state::{self, advance_files_gen, Bare},
    elf::{self, Segment},
    file_mapping::FileMapping,
    memory::{self, gfp, Account},
    mmap_lock::{self, LockedMm},
    provider,
    registry::{RegistryWriter, SframeMm, MAX_SECTION_SIZE},
    section::{Section, SectionTable},
    usermem,
    usual::TextCode,
    validate, vdso,
};
use core::pin::Pin;
use kernel::{
    alloc::{KVVec, KVec},
    bindings,
    error::code::{E2BIG, EBADF, EEXIST, EINVAL, ENOENT, ENOEXEC, ENOSPC, EPERM, ETXTBSY},
    ffi::{c_int, c_long, c_ulong},
    fs::{File, LocalFile},
    global_lock,
    mm::{virt::VmaRef, MmWithUser},
    prelude::*,
    sync::{
        aref::ARef,
        atomic::{Atomic, Relaxed},
        Arc,
    },
    uaccess::{UserPtr, UserSlice},
};

global_lock! {
    // SAFETY: `unwind_user_files_init()` initialises it, at core_initcall
    // time, before any user process exists to attach or unwind.
    unsafe(uninit) static FILES: Mutex<KVVec<Arc<FileTable>>> = KVVec::new();
}

global_lock! {
    // SAFETY: As `FILES`.
    unsafe(uninit) static BUILDING: Mutex<KVec<usize>> = KVec::new();
}

/// Initialises the locks of the machine's file tables.
///
/// # Safety
///
/// Called once, before any other use of the locks.
pub(crate) unsafe fn init() {
    // SAFETY: The caller's contract.
    unsafe {
        FILES.init();
        BUILDING.init();
        memory::init();
        provider::init();
    }
}

/// How many tables of files root does not own [`FILES`] holds.
static NR_USER_TABLES: Atomic<u64> = Atomic::new(0);
/// How many of the tables [`FILES`] holds describe their file: the count
/// an unprivileged query reads, without the lock.
static NR_DESCRIBED: Atomic<u64> = Atomic::new(0);
/// How many of them hold their file ([`drop_stale_held`] looks at those).
static NR_HELD: Atomic<u64> = Atomic::new(0);
/// How many of them an agent attached ([`agent_tables`]).
static NR_AGENT: Atomic<u64> = Atomic::new(0);

/// The number of files described by a table, and the kernel memory the
/// tables take.
pub(crate) fn usage() -> (u64, u64) {
    (NR_DESCRIBED.load(Relaxed), memory::bytes())
}

/// What identifies the contents of a file: its size, mtime and ctime.
/// Writing to, truncating or replacing the data of a file changes them;
/// a write in the same tick of the coarse clock as the stamp too, on a
/// file system with multigrain timestamps, where reading the stamp flags
/// the ctime as queried, as `stat()` does. (9p and FUSE take what their
/// server says.)
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    size: i64,
    mtime: (i64, c_long),
    ctime: (i64, c_long),
}

impl Stamp {
    /// The stamp of `inode` now.
    ///
    /// # Safety
    ///
    /// `inode` must be live for the call.
    unsafe fn of(inode: *const bindings::inode) -> Stamp {
        let mut mtime = bindings::timespec64::default();
        let mut ctime = bindings::timespec64::default();
        // SAFETY: `inode` is live (the caller's contract); flagging its
        // ctime as queried is an atomic update of its own (no sleep, no
        // lock), racing with writers, which a changed stamp reports.
        unsafe { bindings::unwind_user_inode_times(inode.cast_mut(), &mut mtime, &mut ctime) };
        Stamp {
            // SAFETY: As above; read as `i_size_read()` reads it.
            size: unsafe { core::ptr::read_volatile(&raw const (*inode).i_size) },
            mtime: (mtime.tv_sec, mtime.tv_nsec),
            ctime: (ctime.tv_sec, ctime.tv_nsec),
        }
    }
}

/// Has `inode` no name left: unlinked, or replaced by a rename (a
/// library a package manager upgraded)? Then nothing opens it by a path
/// again, and only what maps it or holds it open still uses it.
///
/// # Safety
///
/// `inode` must be live for the call.
unsafe fn unlinked(inode: *const bindings::inode) -> bool {
    // SAFETY: `inode` is live (the caller's contract); `i_nlink` is read
    // racing with link and unlink, as `stat()` reads it.
    unsafe { core::ptr::read_volatile(&raw const (*inode).__bindgen_anon_1.i_nlink) == 0 }
}

/// What a file's table says of its section, when the kernel can use it.
struct Described {
    text: Segment,
    /// The link-time address the section's own addresses are relative to.
    sframe_addr: u64,
    sframe_len: u32,
    fdes: Arc<SectionTable>,
}

/// The SFrame table of one file: its section, or the answer that it has
/// none the kernel can use.
///
/// A table that holds a file (an agent's) is dropped in process context
/// only, where `fput()` may run: it lives in [`FILES`] and in the locals of
/// task-context functions (registrations share its [`SectionTable`], not the
/// table); inode eviction, in reclaim too, drops only tables that hold no
/// file.
pub(crate) struct FileTable {
    /// The inode of the file's bytes (a layer's on overlayfs), the
    /// table's key. Live
    /// while the table is in [`FILES`]: a table that holds `file` keeps it,
    /// and any other is removed when the inode is evicted, before it is
    /// freed ([`evict`]).
    inode: usize,
    /// The file an agent attached the table with, while it had a name. Its
    /// section is not in the file, so the table keeps the file until it
    /// is detached (the file system cannot be unmounted meanwhile, as with
    /// an open file), or swept once the file changed or lost its name.
    file: Option<ARef<File>>,
    stamp: Stamp,
    /// `None`: the file has no section the kernel uses (none, or one it
    /// refused), remembered so that neither mmap nor a walk reads the file
    /// again.
    described: Option<Described>,
    /// Not 0: the bytes the table of the file's section needed when the
    /// budget had no room for them. Such a table is built again once the
    /// budget has room ([`FileTable::retry`]).
    over_budget: usize,
    /// Built from a file any user may have made (not root's, or on a file
    /// system a user mounted): it counts against the users' part of the
    /// budget and [`max_user_tables()`].
    user: bool,
    /// The account of the user who had it built, for such a file: it
    /// counts against that user's share of that part and [`max_tables_per_user()`].
    payer: Option<Arc<Account>>,
    /// Attached by an agent (`UNWIND_USER_FILE_ATTACH`), not built from
    /// the file's own section.
    agent: bool,
    /// When the provider was asked for the file's table, in milliseconds;
    /// 0 if it was not ([`provider::want`]).
    asked_ms: Atomic<u64>,
}

impl FileTable {
    fn key(&self) -> usize {
        self.inode
    }

    /// Does the table hold its file (an agent's, attached while the file
    /// had a name)?
    fn holds_file(&self) -> bool {
        self.file.is_some()
    }

    /// Has the file changed since the table was built?
    ///
    /// # Safety
    ///
    /// The table's inode must be live: the table is in [`FILES`] and its
    /// lock held, or a mapping of the file is known to exist.
    unsafe fn stale(&self) -> bool {
        // SAFETY: The caller's contract.
        unsafe { Stamp::of(self.inode as *const bindings::inode) != self.stamp }
    }

    /// Is the provider's answer for the file waited for? Then a walk that
    /// meets its code ends there, and an address space that maps it is not
    /// settled.
    fn waiting(&self) -> bool {
        provider::waiting(self.asked_ms.load(Relaxed))
    }

    /// Was the provider asked for the file's table?
    fn asked(&self) -> bool {
        self.asked_ms.load(Relaxed) != 0
    }

    /// Is this table, asked for and no longer waited for, still its file's
    /// current one? An answer replaces a table that was waited for
    /// without making every address space look at its files again
    /// ([`insert`]): one that found the table no longer waited for (its
    /// deadline passed meanwhile) must not take it for the file's answer
    /// unless it is still there. [`insert`] judged the table it replaced
    /// waited for before this one was judged not to be, under the lock
    /// [`find`] takes: a replacement this misses advanced the generation.
    fn still_current(&self) -> bool {
        !self.asked() || find(self.inode as *const _).is_some_and(|t| core::ptr::eq(&*t, self))
    }

    /// A table that says the kernel found no section of its own in the
    /// file, which a provider may be asked for.
    fn askable(&self) -> bool {
        self.described.is_none() && self.over_budget == 0 && !self.agent
    }

    /// Is it a table that did not fit the budget, which now has room for
    /// it? Then it is built again.
    fn retry(&self) -> bool {
        // Not the payer's share: another user's walk builds it again, at
        // that user's expense (a table of another's file that one user could
        // not pay for is not to keep it from the others).
        self.over_budget != 0 && memory::room_for(self.over_budget, self.user, None)
    }

    /// May it go to make room for another ([`insert`])? A table that
    /// describes nothing is the memory that reading the file gave nothing,
    /// which reading it again gives back; unless the provider's answer
    /// for it is waited for, or it is a system file's that did not fit the
    /// budget, which address spaces settled on and would not look at again
    /// when the budget has room ([`insert`]).
    fn evictable(&self) -> bool {
        self.described.is_none() && !self.waiting() && (self.over_budget == 0 || self.user)
    }

    /// The registration of this table for `m`, a mapping of its file, and
    /// the table it shares; `None` if it describes nothing there.
    fn section_in(&self, m: &FileMapping) -> Option<(Section, &Arc<SectionTable>)> {
        let d = self.described.as_ref()?;
        let text = d.text.placed(m.start, m.end, m.offset)?;
        Some((
            Section::in_kernel_memory(&text, d.sframe_addr, d.sframe_len)?,
            &d.fdes,
        ))
    }
}

/// How the kernel reads a file to build its table.
#[derive(Clone, Copy)]
enum FileRead {
    /// A file the current task maps, which its walk reads: from the page
    /// cache, not as the task reads it (`unwind_user_file_read()` says
    /// why).
    Mapped,
    /// The file descriptor a caller of `UNWIND_USER_FILE_ATTACH` gave: as
    /// it reads it itself (`kernel_read()`, with its credentials and its
    /// file's mode). Not every file reads through the page cache: on the
    /// vng guest's 9p root, an agent's descriptor of libc did not.
    Given,
}

/// Reads `buf.len()` bytes of `file` at `pos` the way `how` says;
/// `ENOEXEC` if it has fewer, or no page cache to read; `EINTR` for a
/// fatal signal (not the file's fault: its table is not to say it has
/// none).
fn read_at(file: &LocalFile, how: FileRead, buf: &mut [u8], pos: u64) -> Result {
    let mut pos = i64::try_from(pos).map_err(|_| ENOEXEC)?;
    let (ptr, len) = (buf.as_mut_ptr().cast(), buf.len());
    let ret = match how {
        // SAFETY: `file` is a live file; `buf` is valid for writes of its
        // length.
        FileRead::Mapped => unsafe {
            bindings::unwind_user_file_read(file.as_ptr(), ptr, len, pos)
        },
        FileRead::Given => {
            // SAFETY: As above. `kernel_read()` checks that the file was
            // opened for reading.
            match unsafe { bindings::kernel_read(file.as_ptr(), ptr, len, &mut pos) } {
                n if n >= 0 && n as usize == len => 0,
                n if n >= 0 => -(bindings::ENOEXEC as c_int),
                n => n as c_int,
            }
        }
    };
    match ret {
        0 => Ok(()),
        _ if usermem::killed() => Err(EINTR),
        e => Err(Error::from_errno(e)),
    }
}

/// The one executable `PT_LOAD` segment of `file`, an ELF64 executable or
/// shared object of this architecture; `ENOEXEC` for anything else.
fn text_segment(file: &LocalFile) -> Result<Segment> {
    elf::layout(|buf, pos| read_at(file, FileRead::Given, buf, pos)).map(|l| l.text)
}

/// May the caller attach and detach tables: `CAP_PERFMON` or
/// `CAP_SYS_ADMIN`, as for system-wide perf events.
pub(crate) fn privileged() -> Result {
    // SAFETY: Checks the current task's credentials; no preconditions.
    if unsafe { bindings::unwind_user_perfmon_capable() } {
        Ok(())
    } else {
        Err(EPERM)
    }
}

/// The file behind `fd`, which must be a regular file.
fn regular_file(fd: i32) -> Result<ARef<LocalFile>> {
    let fd = u32::try_from(fd).map_err(|_| EBADF)?;
    let file = LocalFile::fget(fd)?;
    // SAFETY: A live file's inode is set when it is opened and lives as
    // long as the file.
    let mode = unsafe { (*(*file.as_ptr()).f_inode).i_mode };
    if u32::from(mode) & bindings::S_IFMT != bindings::S_IFREG {
        return Err(ENOEXEC);
    }
    Ok(file)
}

/// The inode whose bytes reading `file` gives (an overlayfs file's layer
/// below, as [`FileMapping`] has it); live as long as the file.
fn inode_of(file: &LocalFile) -> *const bindings::inode {
    // SAFETY: `file` is live for the call.
    unsafe { bindings::unwind_user_file_inode(file.as_ptr()) }
}

/// What reading a file gives its table.
enum Built {
    /// Its section, as [`describe`] keeps it.
    Described(Described),
    /// Nothing the kernel uses: no section, or one it refused.
    Nothing,
    /// A section whose table, this many bytes, the budget had no room for.
    OverBudget(usize),
}

/// Validates `bytes`, a section for `text` whose addresses are relative to
/// `sframe_addr` at link time, into what a file's table keeps of it: the
/// FDEs relative to the text, whatever its load bias, and its rows,
/// counted against the machine's budget ([`Built::OverBudget`] past it),
/// with the text's code read from `file` as `how` says where no row
/// describes it (a read error there, other than a fatal signal, leaves
/// those PCs to the full lookup, for the table's life: [`crate::usual`]).
/// `user`: of a file root does not own, paid for by `payer`.
fn describe(
    file: &LocalFile,
    how: FileRead,
    text: Segment,
    sframe_addr: u64,
    bytes: KVVec<u8>,
    user: bool,
    payer: Option<&Arc<Account>>,
) -> Result<Built> {
    let s = Section {
        text_start: usize::try_from(text.vaddr).map_err(|_| ENOEXEC)?,
        text_end: usize::try_from(text.vaddr + text.size).map_err(|_| ENOEXEC)?,
        sframe_start: 0,
        sframe_addr: usize::try_from(sframe_addr).map_err(|_| EINVAL)?,
        sframe_len: u32::try_from(bytes.len()).map_err(|_| E2BIG)?,
        in_kernel: true,
    };
    // Refused before it is built if what its header counts cannot fit: a
    // file's section asks for up to 64 MiB of FDEs and rows.
    let least = validate::in_kernel_bytes(&s, &bytes);
    if least != 0 && !memory::room_for(least, user, payer.map(|a| &**a)) {
        return Ok(Built::OverBudget(least));
    }
    let code = &mut TextCode {
        len: text.size,
        read: |buf: &mut [u8], off: u64| {
            read_at(file, how, buf, text.offset.checked_add(off).ok_or(ENOEXEC)?)
        },
    };
    let fdes = validate::validate_in_kernel(&s, bytes, code)?;
    let n = fdes.bytes();
    let Ok(fdes) = fdes.charge_files(user, payer.cloned()) else {
        return Ok(Built::OverBudget(n));
    };
    Ok(Built::Described(Described {
        text,
        sframe_addr,
        sframe_len: s.sframe_len,
        fdes: fdes.shared()?,
    }))
}

/// Who a file's table is of, and who has it built.
struct Origin {
    /// The file's inode, which the caller's reference to the file keeps
    /// live.
    inode: *const bindings::inode,
    /// Attached by an agent (or the provider's answer).
    agent: bool,
    /// A file any user may have made.
    user: bool,
    /// Who pays for it if `user`.
    payer: Option<Arc<Account>>,
}

impl Origin {
    /// The origin of a table of `file` that the current task has built
    /// (`agent`: attaches): a user's file's is paid for by the user a walk
    /// runs for; an agent's from the users' part alone (the provider
    /// chooses which users' files it answers: `UNWIND_USER_WANT_F_USER`).
    fn of(file: &LocalFile, agent: bool) -> Result<Origin> {
        let inode = inode_of(file);
        // SAFETY: `file` keeps its inode live.
        let user = unsafe { bindings::unwind_user_inode_users(inode) };
        let payer = if user && !agent {
            memory::payer()?
        } else {
            None
        };
        Ok(Origin {
            inode,
            agent,
            user,
            payer,
        })
    }

    /// Marks the inode as one with a table, before the table is in
    /// [`FILES`] and before the caller drops its reference to the file: so
    /// before any eviction of the inode, which then tells [`evict`]. Set
    /// once for the inode's life, whether a table is made or not. The
    /// caller holds no lock (it takes the inode's).
    fn mark(&self) {
        // SAFETY: `inode` is live (see its field); only the mapping's flag
        // word is written, under the inode's lock.
        unsafe { bindings::unwind_user_inode_mark_table(self.inode.cast_mut()) };
    }

    /// The inode's stamp now.
    fn stamp(&self) -> Stamp {
        // SAFETY: `inode` is live (see its field).
        unsafe { Stamp::of(self.inode) }
    }

    /// The table of what reading the file at `stamp` gave.
    fn table(self, stamp: Stamp, built: Built, file: Option<ARef<File>>) -> Result<Arc<FileTable>> {
        let (described, over_budget) = match built {
            Built::Described(d) => (Some(d), 0),
            Built::Nothing => (None, 0),
            Built::OverBudget(n) => (None, n),
        };
        Ok(Arc::new(
            FileTable {
                inode: self.inode as usize,
                file,
                stamp,
                described,
                over_budget,
                user: self.user,
                payer: if self.user { self.payer } else { None },
                agent: self.agent,
                asked_ms: Atomic::new(0),
            },
            gfp(),
        )?)
    }
}

/// Builds the table of a file of `origin` with `build`, which reads it,
/// keeping `agent_file` if an agent attaches it; `ETXTBSY` if the file is
/// open for writing, or was written to meanwhile: a table never describes
/// contents other than its stamp's.
fn build_table(
    origin: Origin,
    agent_file: Option<ARef<File>>,
    build: impl FnOnce(&Origin) -> Result<Built>,
) -> Result<Arc<FileTable>> {
    // SAFETY: `inode` is live (see `Origin::inode`).
    let open_for_write = || unsafe { bindings::unwind_user_inode_open_for_write(origin.inode) };
    if open_for_write() {
        return Err(ETXTBSY);
    }
    origin.mark();
    let stamp = origin.stamp();
    let built = build(&origin)?;
    if open_for_write() || origin.stamp() != stamp {
        return Err(ETXTBSY);
    }
    origin.table(stamp, built, agent_file)
}

/// The provider's answer that the file of `origin` has nothing to give,
/// as its table for its current version. The file may be open for
/// writing: a table that describes nothing has no contents to go stale,
/// and a write changes the stamp, after which the file is asked for
/// again. (A JIT's memfd is open for writing while its code runs.)
fn nothing_table(origin: Origin) -> Result<Arc<FileTable>> {
    origin.mark();
    let stamp = origin.stamp();
    origin.table(stamp, Built::Nothing, None)
}

/// `UNWIND_USER_FILE_ATTACH`: builds the table of the file `u.fd` from the
/// section at `u.sframe_ptr` and makes it the file's table.
///
/// With `UNWIND_USER_FILE_F_NONE`, the answer that the file has no
/// section to give: remembered as its table, which holds nothing.
pub(crate) fn attach(u: &bindings::unwind_user_file) -> Result {
    privileged()?;
    let no_hold = bindings::UNWIND_USER_FILE_F_NO_HOLD;
    let none = bindings::UNWIND_USER_FILE_F_NONE;
    if u.flags & !(no_hold | none) != 0 {
        return Err(EINVAL);
    }
    if u.flags & none != 0 {
        if u.sframe_ptr != 0 || u.sframe_size != 0 || u.sframe_addr != 0 {
            return Err(EINVAL);
        }
        let file = regular_file(u.fd)?;
        let origin = Origin::of(&file, true)?;
        let inode = origin.inode as usize;
        let old = insert(nothing_table(origin)?, true)?;
        provider::answered(inode);
        drop(old);
        return Ok(());
    }
    if u.sframe_size == 0 {
        return Err(EINVAL);
    }
    if u.sframe_size > MAX_SECTION_SIZE as u64 {
        return Err(E2BIG);
    }
    let file = regular_file(u.fd)?;
    // What it frees may be what this attach needs.
    drop_stale_held();
    let inode = inode_of(&file);
    // A file any user may have made (a memfd, a user's program the agent
    // found mapped) counts against the users' part of the budget, as a
    // table built from its own section does.
    let origin = Origin::of(&file, true)?;
    let build = |o: &Origin| {
        let text = text_segment(&file)?;
        let len = usize::try_from(u.sframe_size).map_err(|_| E2BIG)?;
        let mut bytes = KVVec::from_elem(0u8, len, gfp())?;
        UserSlice::new(UserPtr::from_addr(u.sframe_ptr as usize), len)
            .reader()
            .read_slice(&mut bytes)?;
        match describe(
            &file,
            FileRead::Given,
            text,
            u.sframe_addr,
            bytes,
            o.user,
            o.payer.as_ref(),
        )? {
            Built::OverBudget(_) => Err(ENOSPC),
            built => Ok(built),
        }
    };
    // Unless asked to, or for a file with no name left (still mapped by
    // processes started before it was replaced), or of a stacking file
    // system (overlayfs: the table is of the layer below, and after a
    // copy-up the overlay file's path leads to another inode, so that the
    // held file would never be found stale by [`drop_stale_held`]), the
    // table holds the file; else it goes when the inode is evicted (once
    // nothing maps or holds the file open, when the inode cache lets it
    // go), as a table built from the file's own section does.
    // SAFETY: `file` keeps its inodes live.
    let stacked = unsafe { (*file.as_ptr()).f_inode } != inode.cast_mut();
    // SAFETY: As above.
    let held = if u.flags & no_hold != 0 || stacked || unsafe { unlinked(inode) } {
        None
    } else {
        // SAFETY: `fget()` in this system call; prctl() takes no
        // `fdget_pos()`.
        Some(unsafe { LocalFile::assume_no_fdget_pos(file.clone()) })
    };
    let attached = build_table(origin, held, build).and_then(|table| {
        // Copied up meanwhile (overlayfs): what was read may be the upper
        // layer's, which is another inode.
        if inode_of(&file) != inode {
            return Err(ETXTBSY);
        }
        insert(table, true)
    });
    provider::answered(inode as usize);
    match attached {
        // Dropped out of the lock: `fput()` of the last reference.
        Ok(old) => {
            drop(old);
            Ok(())
        }
        Err(e) => {
            give_up_waiting(inode);
            Err(e)
        }
    }
}

/// The provider's answer for the file whose inode is `inode` failed: walks
/// that meet its code do not wait for it any more (the provider may
/// attach it again).
fn give_up_waiting(inode: *const bindings::inode) {
    if let Some(t) = find(inode).filter(|t| t.waiting()) {
        t.asked_ms.store(provider::GAVE_UP, Relaxed);
    }
}

/// `UNWIND_USER_FILE_PROVIDE`: makes the caller the machine's provider of
/// file tables, and returns its descriptor. The files the kernel found no
/// section in before (while no provider was registered, or one that went
/// away had not answered) are forgotten, and every address space looks
/// at its files again: the provider is asked for them as walks meet them.
///
/// Needs `CAP_SYS_ADMIN`, as fanotify's listeners do: the provider is
/// given read descriptors of files it may have no other way to open
/// (memfds, files of other mount namespaces, files with no name left).
pub(crate) fn provide() -> Result<i32> {
    // SAFETY: Checks the current task's credentials; no preconditions.
    if !unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as i32) } {
        return Err(EPERM);
    }
    let before = provider::register()?;
    // SAFETY: Creates a file and installs it in the current task's table;
    // no preconditions.
    let fd = unsafe { bindings::unwind_user_provider_open() };
    if fd < 0 {
        provider::unregister_failed(before);
        return Err(Error::from_errno(fd));
    }
    // Such a table holds no file and no rows: freed under the lock.
    FILES.lock().retain(|t| {
        let keep = !t.askable();
        if !keep {
            count(t, false);
        }
        keep
    });
    advance_files_gen();
    Ok(fd)
}

/// The periodic sweep of the tables (`unwind_user_files_sweep()`): drops
/// those that hold a file that changed or lost its last name
/// ([`drop_stale_held`]); returns whether tables that hold a file remain.
pub(crate) fn sweep() -> bool {
    drop_stale_held();
    NR_HELD.load(Relaxed) != 0
}

/// Removes the tables that hold their file (an agent's) whose file changed
/// since, or lost its last name: a library a package manager replaced,
/// which a process that maps it from now on reaches only by a descriptor
/// (unlinking moved its ctime: [`find`] would drop the table for such a
/// process all the same; the agent attaches the file again, unheld,
/// through the maps of the processes that still map it). Nothing else
/// removes them while no address space maps the old file again
/// ([`find`]), and they would hold it, its blocks, and their budget,
/// until detached, which its path no longer can: the agent's next attach
/// or detach (a package manager's trigger) sweeps them, and so does the
/// periodic sweep ([`sweep`]) while tables hold files. Address spaces
/// that attached them keep them.
fn drop_stale_held() {
    if NR_HELD.load(Relaxed) == 0 {
        return;
    }
    // One table a pass, dropped out of the lock (`fput()`, freeing its
    // rows), from where the last pass stopped: the tables before it were
    // looked at (any added since is new).
    let mut from = 0;
    loop {
        let old = {
            let mut files = FILES.lock();
            let gone = files.iter().skip(from).position(|t| {
                // SAFETY: The table is in `FILES`, whose lock we hold, and
                // holds its file: its inode is live.
                t.holds_file() && unsafe { t.stale() || unlinked(t.inode as *const _) }
            });
            let Some(i) = gone.map(|k| from + k) else {
                return;
            };
            from = i;
            let Ok(old) = files.remove(i) else {
                return;
            };
            count(&old, false);
            old
        };
        drop(old);
    }
}

/// The table of `file` built from its own `PT_GNU_SFRAME` segment, or one
/// that says it has none the kernel uses (a malformed or unsupported
/// section: until the inode goes; one past the budget: until the budget
/// has room). `Err` for what may not last (no memory, a read error, a
/// fatal signal, a file open for writing): that is not remembered.
fn build_own(file: &File) -> Result<Arc<FileTable>> {
    build_table(Origin::of(file, false)?, None, |o| {
        let layout = match elf::layout(|buf, pos| read_at(file, FileRead::Mapped, buf, pos)) {
            Ok(l) => l,
            Err(e) if e == ENOEXEC => return Ok(Built::Nothing),
            Err(e) => return Err(e),
        };
        let Some(sf) = layout.sframe else {
            return Ok(Built::Nothing);
        };
        let len = match usize::try_from(sf.size) {
            Ok(len) if len != 0 && len <= MAX_SECTION_SIZE => len,
            _ => return Ok(Built::Nothing),
        };
        let mut bytes = KVVec::from_elem(0u8, len, gfp())?;
        match read_at(file, FileRead::Mapped, &mut bytes, sf.offset) {
            Ok(()) => {}
            Err(e) if e == ENOEXEC => return Ok(Built::Nothing),
            Err(e) => return Err(e),
        }
        match describe(
            file,
            FileRead::Mapped,
            layout.text,
            sf.vaddr,
            bytes,
            o.user,
            o.payer.as_ref(),
        ) {
            Ok(built) => Ok(built),
            Err(e) if e == ENOMEM || e == EINTR => Err(e),
            // Malformed or unsupported: not described, until the file or
            // its inode goes.
            Err(_) => Ok(Built::Nothing),
        }
    })
}

/// Most tables [`FILES`] holds, described files and others
/// (`kernel.unwind_user_file_tables_max`): one pointer each in the array,
/// and an answer that saves reading the file again.
fn max_tables() -> u64 {
    // SAFETY: A plain `unsigned long` the sysctl writes; a torn read is
    // impossible for an aligned word.
    unsafe { core::ptr::read_volatile(&raw const bindings::unwind_user_file_tables_max) as u64 }
}

/// Most of them that may be of files root does not own, which any user
/// can have the kernel read: the rest stay for the system's files.
fn max_user_tables() -> u64 {
    max_tables() / 4
}

/// Most of those one user may have had built ([`Account`]).
fn max_tables_per_user() -> u64 {
    max_tables() / 16
}

/// How many tables that described nothing [`insert`] let go to make room
/// for others.
static NR_EVICTED: Atomic<u64> = Atomic::new(0);

/// A limit of the number of tables, the strictest first.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Limit {
    /// [`max_tables_per_user()`], of the table's payer.
    PerUser,
    /// [`max_user_tables()`].
    Users,
    /// [`max_tables()`].
    All,
}

/// The strictest limit `table` would pass in place of `cur` (or in a place
/// of its own), with `len` tables in [`FILES`]; under its lock.
fn limit_passed(len: usize, table: &FileTable, cur: Option<&FileTable>) -> Option<Limit> {
    let same_payer = |c: &FileTable| match (&table.payer, &c.payer) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    if let Some(p) = &table.payer {
        if !cur.is_some_and(same_payer) && p.tables.load(Relaxed) >= max_tables_per_user() {
            return Some(Limit::PerUser);
        }
    }
    if table.user
        && !cur.is_some_and(|c| c.user)
        && NR_USER_TABLES.load(Relaxed) >= max_user_tables()
    {
        return Some(Limit::Users);
    }
    if cur.is_none() && len as u64 >= max_tables() {
        return Some(Limit::All);
    }
    None
}

/// Removes from `files` a table that describes nothing and counts against
/// `limit` as `table` would (another file's), to make room for `table`;
/// returns it, or `None` if there is none. Under the lock of [`FILES`].
fn evict_for(
    files: &mut KVVec<Arc<FileTable>>,
    table: &FileTable,
    limit: Limit,
) -> Option<Arc<FileTable>> {
    let counts = |t: &FileTable| match limit {
        Limit::PerUser => match (&t.payer, &table.payer) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        },
        Limit::Users => t.user,
        Limit::All => true,
    };
    // From where the last eviction was: the tables before it were looked
    // at last time, so that a flood of new tables does not scan them all
    // again each time.
    static FROM: Atomic<usize> = Atomic::new(0);
    let n = files.len();
    let from = FROM.load(Relaxed) % n.max(1);
    let i = (0..n).map(|k| (from + k) % n).find(|&i| {
        files
            .get(i)
            .is_some_and(|t| t.key() != table.key() && t.evictable() && counts(t))
    })?;
    let old = files.remove(i).ok()?;
    FROM.store(i, Relaxed);
    count(&old, false);
    NR_EVICTED.add(1, Relaxed);
    Some(old)
}

/// Counts `table` in (`added`) or out of [`NR_DESCRIBED`],
/// [`NR_USER_TABLES`], [`NR_HELD`] and its payer's account; under the lock
/// of [`FILES`].
fn count(table: &FileTable, added: bool) {
    let update = |n: &Atomic<u64>| {
        if added {
            n.add(1, Relaxed);
        } else {
            n.fetch_sub(1, Relaxed);
        }
    };
    if table.described.is_some() {
        update(&NR_DESCRIBED);
    }
    if table.user {
        update(&NR_USER_TABLES);
    }
    if let Some(p) = &table.payer {
        update(&p.tables);
    }
    if table.holds_file() {
        update(&NR_HELD);
        if added {
            // SAFETY: Schedules a delayed work, in any context; no
            // preconditions.
            unsafe { bindings::unwind_user_files_sweep_later() };
        }
    }
    // Not an answer that the file has nothing: that describes nothing.
    if table.agent && table.described.is_some() {
        update(&NR_AGENT);
    }
}

/// Does an agent attach tables on this machine (do the machine's files
/// have tables an agent attached)? Then a file with no table and no
/// section of its own may get one, and a walk at NMI or IRQ time that
/// meets code no table attached describes yet has something better coming
/// than the frame-pointer rule: the deferred unwind that attaches it (the
/// walk driver's `tables_may_come()`, `unwind_user.rs`).
pub(crate) fn agent_tables() -> bool {
    NR_AGENT.load(Relaxed) != 0
}

/// Makes `table` its file's table, unless `replace` is false and the file
/// has one already (a described table replaces one that did not fit the
/// budget all the same); returns the table it replaces. Past a limit of
/// the number of tables ([`max_tables()`], and for a user's file
/// [`max_user_tables()`] and [`max_tables_per_user()`]), a table that
/// describes nothing goes to make room ([`evict_for`]); `ENOSPC` if none
/// can.
///
/// A table that replaces another advances the generation: address spaces
/// that attached the old one, or found their file had none, are not
/// settled any more. But not the answer to a file the provider was asked
/// for, which no address space settled on; nor a table a walk built for a
/// user's file in place of one that did not fit the budget: no user is to
/// empty the rule cache of every address space on the machine, and those
/// that settled on the old one keep it until they map the file again. A
/// new file's table does not either, as mmap leaves a mapping of a file
/// with no table unsettled ([`attach_mapping`]); but an agent's does once
/// a table was let go, which address spaces may have settled on.
///
/// Allocates nothing with the lock held: inode eviction takes it
/// ([`evict`]), in reclaim too.
fn insert(table: Arc<FileTable>, replace: bool) -> Result<Option<Arc<FileTable>>> {
    let mut spare: KVVec<Arc<FileTable>> = KVVec::new();
    // Dropped out of the lock, as the caller drops what this returns.
    let mut evicted: Option<Arc<FileTable>> = None;
    loop {
        let mut files = FILES.lock();
        let found = files.binary_search_by_key(&table.key(), |t| t.key());
        let cur = found.ok().and_then(|i| files.get(i));
        // Whether replacing `cur` leaves the generation as it is.
        let mut quiet = false;
        if let Some(c) = cur {
            // A table that did not fit the budget gives way to the file's
            // table built since (`described`); or to one that did not fit
            // either, built once the budget had room for what the first
            // said it needed, and which needed more (`needs_more`): that
            // figure is kept, so that the file is not read again before
            // the budget has room for it, and says nothing new to address
            // spaces: the generation stays.
            let over = c.over_budget != 0;
            let described = over && table.described.is_some();
            let needs_more = over && table.described.is_none() && table.over_budget > c.over_budget;
            if !(replace || described || needs_more) {
                return Ok(None);
            }
            // The answer to a file the provider was asked for: no address
            // space that maps it was settled since it was asked, nor cached
            // its PCs (its walks ended there), and each attaches the new
            // table at its next walk; every other address space keeps its
            // rule cache. So does a user's walk.
            quiet = needs_more || c.waiting() || (!replace && table.user);
        }
        if let Some(limit) = limit_passed(files.len(), &table, cur.map(|c| &**c)) {
            if evicted.is_some() {
                return Err(ENOSPC);
            }
            evicted = Some(evict_for(&mut files, &table, limit).ok_or(ENOSPC)?);
            continue;
        }
        let i = match found {
            Ok(i) => {
                let Some(cur) = files.get_mut(i) else {
                    return Err(EINVAL);
                };
                count(&table, true);
                let old = core::mem::replace(cur, table);
                count(&old, false);
                if !quiet {
                    advance_files_gen();
                }
                return Ok(Some(old));
            }
            Err(i) => i,
        };
        if files.len() < files.capacity() {
            let agents = replace && NR_EVICTED.load(Relaxed) != 0 && table.described.is_some();
            files.insert_within_capacity(i, table).map_err(|_| EINVAL)?;
            if let Some(t) = files.get(i) {
                count(t, true);
            }
            if agents {
                advance_files_gen();
            }
            return Ok(None);
        }
        if spare.capacity() > files.len() {
            // The array grown out of the lock: move the tables over. Cannot
            // fail: `spare` is empty, with room for them all.
            for t in files.drain_all() {
                spare.push_within_capacity(t).map_err(|_| EINVAL)?;
            }
            core::mem::swap(&mut *files, &mut spare);
            continue;
        }
        let want = files.len().saturating_mul(2).max(16);
        drop(files);
        spare.reserve(want, GFP_KERNEL)?;
    }
}

/// Removes `inode`'s table (only `only` if given: a table found stale is
/// not to take a newer one with it); returns it, to be dropped out of the
/// lock. The generation stays: address spaces that attached the table
/// keep it, and any that maps the file from now on finds no table, and is
/// not settled until a walk has built the file's own.
fn remove(inode: usize, only: Option<&Arc<FileTable>>) -> Option<Arc<FileTable>> {
    let mut files = FILES.lock();
    let i = files.binary_search_by_key(&inode, |t| t.key()).ok()?;
    let cur = files.get(i)?;
    if only.is_some_and(|o| !Arc::ptr_eq(o, cur)) {
        return None;
    }
    let old = files.remove(i).ok()?;
    count(&old, false);
    Some(old)
}

/// `UNWIND_USER_FILE_DETACH`: the file `fd` has no table any more (the
/// kernel builds one from the file's own section again, if it has one).
/// Address spaces that attached it keep it until they unmap the text.
pub(crate) fn detach(fd: i32) -> Result {
    privileged()?;
    let file = regular_file(fd)?;
    drop_stale_held();
    let old = remove(inode_of(&file) as usize, None).ok_or(ENOENT)?;
    // Address spaces that map the file without the agent's table (it did
    // not fit their mapping, or the budget) may attach its own now. Only
    // here: a table removed because its file changed (`find()`) must not
    // let any user that can rewrite a file of their own empty every
    // address space's rule cache on the machine.
    advance_files_gen();
    drop(old);
    Ok(())
}

/// Forgets the table of `inode`, which is being evicted: no address space
/// maps it, and the table would be built again from the file. Called by
/// `evict()`, in reclaim too, only for the inodes [`build_table`] marked
/// (`AS_SFRAME_TABLE`): whoever builds a table holds a reference to its
/// file until it is in [`FILES`], so the mark is set before the last
/// reference goes, before the eviction that tests it. `inode` is only
/// compared.
pub(crate) fn evict(inode: *const bindings::inode) {
    let old = {
        let mut files = FILES.lock();
        let Ok(i) = files.binary_search_by_key(&(inode as usize), |t| t.key()) else {
            return;
        };
        let old = files.remove(i).ok();
        if let Some(old) = &old {
            count(old, false);
        }
        // Nothing maps the file: no address space needs to know.
        old
    };
    drop(old);
}

/// The current table of the file whose inode is `inode`, if it has one: a
/// table whose file changed is removed instead, and one that did not fit
/// the budget and now would is not returned. `inode` is compared only.
fn find(inode: *const bindings::inode) -> Option<Arc<FileTable>> {
    let files = FILES.lock();
    let i = files
        .binary_search_by_key(&(inode as usize), |t| t.key())
        .ok()?;
    let table = files.get(i)?.clone();
    // SAFETY: The table is in `FILES`, whose lock we hold: its inode is
    // live (see `FileTable::inode`).
    if unsafe { table.stale() } {
        drop(files);
        drop(remove(table.key(), Some(&table)));
        return None;
    }
    // A table that did not fit the budget, which now has room: the file
    // is as one with no table yet, whose table a walk builds, to take its
    // place ([`insert`]).
    if table.retry() {
        return None;
    }
    Some(table)
}

/// What [`attach_mapped`] did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Attach {
    /// Every table it found was attached, at least one.
    Attached,
    /// Nothing to attach: no table for the files, or none that fits its
    /// mapping or this address space. A walk may cache that.
    None,
    /// Not all now (out of memory, a fatal signal, a mapping or the tables
    /// changed meanwhile): a later walk may attach the rest. Nothing to
    /// cache.
    Later,
    /// The PC the walk asked for is in a file whose table the provider was
    /// asked for and has not given yet: the walk ends there.
    Waiting,
}

/// A file's table, and where to register it in an address space: found
/// from mappings seen under the mmap read lock, checked again under the
/// mmap write lock.
struct Candidate {
    mapping: FileMapping,
    table: Arc<FileTable>,
    section: Section,
}

/// The tables of the files in `mappings` that describe their mapping, and
/// whether a file has no table yet (none of those `given_up`).
fn candidates(
    mappings: &[FileMapping],
    given_up: &[*const bindings::inode],
) -> Result<(KVec<Candidate>, bool)> {
    let mut found = KVec::new();
    let mut missing = false;
    for m in mappings {
        let Some(table) = find(m.inode) else {
            // Nothing to wait for from a file given up on: as if it had
            // nothing to describe.
            missing |= !given_up.contains(&m.inode);
            continue;
        };
        let Some((section, _)) = table.section_in(m) else {
            // Its provider's answer may come, or came.
            missing |= table.waiting() || !table.still_current();
            continue;
        };
        found.push(
            Candidate {
                mapping: *m,
                table,
                section,
            },
            GFP_KERNEL,
        )?;
    }
    Ok((found, missing))
}

/// Attaches to `mm`, the current task's address space, the tables of the
/// files it maps executable at `mappings`, where nothing is registered. In
/// task context, where the walk may sleep: takes the mmap locks and the
/// tables' mutex, never nested. Returns what it did, and whether it
/// settled every mapping (attached its table, or found it has none, or
/// that something else is registered there, or that it is of a file
/// `given_up`).
fn attach_tables(
    mm: &MmWithUser,
    smm: &SframeMm,
    mappings: &[FileMapping],
    given_up: &[*const bindings::inode],
) -> (Attach, bool) {
    // Compared as a value only: the write lock below checks each mapping
    // again.
    let files_gen = attach_state::files_gen();
    let Ok((mut found, mut later)) = candidates(mappings, given_up) else {
        return (Attach::Later, false);
    };
    // What is registered already (by mmap, most often) needs no lock.
    found.retain(|c| !smm.covers(c.section.text_start));
    if found.is_empty() {
        return if later {
            (Attach::Later, false)
        } else {
            (Attach::None, true)
        };
    }
    let mut batch = match KVec::with_capacity(found.len(), GFP_KERNEL) {
        Ok(b) => b,
        Err(_) => return (Attach::Later, false),
    };
    let added = mmap_lock::with_locked(mm, |l| {
        for c in &found {
            // The same mapping of the same file as when the candidates were
            // found, and still its current, unchanged table: the same
            // table, not one of an evicted inode whose address a new one
            // took.
            if l.exec_file_mapping(c.mapping.start) != Some(c.mapping)
                || attach_state::files_gen() != files_gen
                || !find(c.mapping.inode).is_some_and(|t| Arc::ptr_eq(&t, &c.table))
            {
                later = true;
                continue;
            }
            let Some((_, fdes)) = c.table.section_in(&c.mapping) else {
                continue;
            };
            // Cannot fail: room for every candidate.
            batch
                .push_within_capacity((c.section, fdes.clone()))
                .map_err(|_| ENOMEM)?;
        }
        // One new registry table for them all. Those left out overlap
        // another registration or pass the address space's limits.
        Ok(!batch.is_empty() && vdso::registry_or_create(l)?.add_all(&mut batch)? != 0)
    });
    match added {
        Ok(_) if later => (Attach::Later, false),
        Ok(true) => (Attach::Attached, true),
        Ok(false) => (Attach::None, true),
        Err(_) => (Attach::Later, false),
    }
}

/// Most files one attach pass reads for tables they have not got yet.
const MAX_BUILDS: usize = 64;

/// A walk's claim on building the table of a file, by its inode's address
/// (in [`BUILDING`], for as long as the claim lives): the walks of other
/// threads and processes that meet the file meanwhile leave it to a later
/// walk, which finds its table, rather than each read and validate it
/// too (up to 64 MiB of section, and its code).
struct Building(usize);

impl Building {
    /// The claim on the file of `inode`; `None` if another walk has it, or
    /// if there was no memory to record it (the file is left for later
    /// then too).
    fn claim(inode: *const bindings::inode) -> Option<Building> {
        let key = inode as usize;
        let mut building = BUILDING.lock();
        if building.contains(&key) {
            return None;
        }
        building.push(key, GFP_KERNEL).ok()?;
        Some(Building(key))
    }
}

impl Drop for Building {
    fn drop(&mut self) {
        let mut building = BUILDING.lock();
        if let Some(i) = building.iter().position(|&k| k == self.0) {
            let _ = building.remove(i);
        }
    }
}

/// Attaches to `mm`, the current task's address space whose registry is
/// `smm`, the tables of every file it maps executable, building those of
/// files that have none yet from their own `PT_GNU_SFRAME` segment: what a
/// walk that may sleep does when it meets code no registration covers, so
/// that the walks at NMI or IRQ time that come after find them all.
/// Returns what it did, or [`Attach::Waiting`] if `pc`, where the walk is,
/// is in a file the provider is asked for; when it settled every mapping,
/// it says so in `smm` for generation `files_gen` of the tables (read
/// before it looked). Files with no section of their own are asked for
/// here, once a file.
///
/// Never in line: with [`registry_for_walk`], it is where a walk may
/// allocate (in task context only), the boundary `bench/noalloc.py` checks
/// the rest of the unwind path up to.
#[inline(never)]
pub(crate) fn attach_mapped(mm: &MmWithUser, smm: &SframeMm, files_gen: u64, pc: usize) -> Attach {
    kernel::task::might_sleep();
    let mut mappings = KVec::new();
    // Files with no table yet: those of mappings to attach, then those a
    // registration covers, built after them.
    let mut unknown: KVec<ARef<File>> = KVec::new();
    let mut covered: KVec<ARef<File>> = KVec::new();
    let unsettled = {
        let _mmap = mm.mmap_read_lock();
        let mut addr = 0;
        loop {
            // SAFETY: `mm` has users (the reference) and its mmap read lock
            // is held by `_mmap`: its VMAs stay as they are.
            let vma = unsafe { bindings::find_vma(mm.as_raw(), addr as c_ulong) };
            if vma.is_null() {
                break;
            }
            // SAFETY: A VMA of `mm`, under its mmap read lock, for as long as
            // `_mmap` lives.
            let vma = unsafe { VmaRef::from_raw(vma) };
            addr = vma.end();
            let Some(m) = FileMapping::of(vma) else {
                continue;
            };
            // A mapping whose code a registration describes (the prctl's, or
            // its table attached already) needs no table attached. Its
            // file's is built all the same: the next exec of a program that
            // registers its own code (or of one whose objects LD_AUDIT
            // registers) then finds its table at mmap and starts settled.
            let is_covered = smm.overlaps(m.start, m.end);
            if !is_covered && mappings.push(m, GFP_KERNEL).is_err() {
                return Attach::Later;
            }
            let list = if is_covered {
                &mut covered
            } else {
                &mut unknown
            };
            if list.len() >= MAX_BUILDS
                || find(m.inode).is_some()
                || Iterator::chain(unknown.iter(), covered.iter()).any(|f| inode_of(f) == m.inode)
            {
                continue;
            }
            // SAFETY: `FileMapping::of()` found a file; the VMA holds a
            // reference to it while the mmap lock is held.
            let file = unsafe { File::from_raw_file((*vma.as_ptr()).vm_file) };
            let list = if is_covered {
                &mut covered
            } else {
                &mut unknown
            };
            if list.push(file.into(), GFP_KERNEL).is_err() {
                return Attach::Later;
            }
        }
        // Stable: mmap counts under the write lock.
        smm.attach.unsettled()
    };
    // Read and validated with no lock held, once for the machine. Inserted
    // while the file is held: its inode cannot be evicted before the table
    // is in the array, where eviction finds it.
    //
    // A file whose table cannot be built now (open for writing, a read
    // error, out of memory, no room left for tables) is given up on in
    // this address space, which is settled without it, rather than read
    // again by every walk, and cut at every walk at NMI time: its code is
    // unwound as code no table describes. Its next mapping here, or a
    // change of the tables (an agent's attach or detach), tries again;
    // another address space tries for itself.
    let mut given_up = KVec::new();
    let mut asked = false;
    for file in Iterator::chain(unknown.into_iter(), covered).take(MAX_BUILDS) {
        // Being built by another walk: not given up, the next walk finds
        // its table. Claimed until it is in `FILES`.
        let Some(_claim) = Building::claim(inode_of(&file)) else {
            continue;
        };
        let built = build_own(&file).inspect(|t| asked |= t.askable() && ask(t, &file));
        // Not inserted because a table appeared meanwhile: that one.
        if built.and_then(|t| insert(t, false)).is_err() {
            // Given up here; unless remembering it failed (out of
            // memory), and then the next walk tries again.
            let _ = given_up.push(inode_of(&file), GFP_KERNEL);
        }
        drop(file);
    }
    let waiting = mappings
        .iter()
        .find(|m| (m.start..m.end).contains(&pc))
        .and_then(|m| find(m.inode))
        .filter(|t| t.waiting());
    if let Some(t) = &waiting {
        if !asked {
            provider::met(t.key());
        }
    }
    let (attached, settled) = attach_tables(mm, smm, &mappings, &given_up);
    if settled {
        smm.attach.set_settled(files_gen, unsettled);
    }
    if waiting.is_some() {
        return Attach::Waiting;
    }
    attached
}

/// Asks the provider, if one is registered, for the table of `file`, which
/// `table` says has no section of its own; returns whether it did.
fn ask(table: &FileTable, file: &File) -> bool {
    let Some(asked) = provider::want(file, table.key(), table.user) else {
        return false;
    };
    table.asked_ms.store(asked, Relaxed);
    true
}

/// Attaches to `mm` the table of the file `vma` maps, if it is executable
/// and the file's table describes it (`unwind_user_sframe_mm_mmap()`). One
/// lookup, no read of the file, and for a file that never had a table (its
/// inode unmarked) not even the lookup: a bit test. A file with no table yet
/// leaves the mapping unsettled, for the next walk that meets uncovered
/// code to build and attach, as does a mapping whose table could not be
/// attached.
///
/// Only a table that describes the mapping creates a registry. Otherwise
/// an address space with none records its attach state in one word
/// ([`Bare`]), set at exec's first executable mapping (`in_exec`): a
/// process started after its files' tables were built is described from
/// its first instruction, its walks at NMI time stop to ask for tables only
/// where a table may come, and a process nobody unwinds costs nothing.
pub(crate) fn attach_mapping(mm: &LockedMm<'_>, vma: &VmaRef, in_exec: bool) {
    let Some(m) = FileMapping::of(vma) else {
        return;
    };
    let files_gen = attach_state::files_gen();
    // SAFETY: The VMA holds a reference to the file, so to its inode, while
    // the mmap lock is held.
    let table = if unsafe { bindings::unwind_user_inode_marked(m.inode) } {
        find(m.inode)
    } else {
        None
    };
    let fit = table.as_ref().and_then(|t| t.section_in(&m));
    let registry = RegistryWriter::of(mm);
    let bare = SframeMm::bare(mm.mm());
    // The program's first executable mapping, in the new address space of
    // an exec, which has neither a registry nor a state yet.
    let first = in_exec && registry.is_none() && bare.is_none();
    let settled = match (&table, fit) {
        (_, Some(_)) => true,
        // A table that says the file has nothing, or does not fit this
        // mapping: neither would a walk attach one; unless the provider's
        // answer for the file is waited for.
        (Some(t), None) => !t.waiting() && t.still_current(),
        (None, None) => false,
    };
    // A mapping a table may describe once attached: not one of a file
    // that has no table and no section of its own, which only an agent's
    // table can describe.
    let tables = || {
        // SAFETY: `FileMapping::of()` found a file; the VMA holds a
        // reference to it while the mmap lock is held.
        table.is_some() || may_have_own_section(unsafe { (*vma.as_ptr()).vm_file }, m.inode)
    };
    let mut r = match (registry, fit) {
        (Some(r), _) => r,
        (None, Some(_)) => {
            let Ok(r) = vdso::registry_or_create(mm) else {
                // No registry: a walk that meets uncovered code creates it
                // and attaches.
                return;
            };
            if first {
                r.attach.set_settled(files_gen, r.attach.unsettled());
            }
            r
        }
        (None, None) => {
            let bare = match bare {
                _ if first => Bare::settled(files_gen),
                Some(bare) => bare,
                // Its state unknown: every walk asks as it is.
                None => return,
            };
            let bare = if settled {
                bare
            } else {
                bare.mapping_unsettled(tables())
            };
            SframeMm::set_bare(mm, bare);
            return;
        }
    };
    let settled = match fit {
        Some((s, fdes)) => match r.add(s, fdes.clone()) {
            Ok(()) => true,
            Err(e) => e == EEXIST || e == ENOSPC,
        },
        None => settled,
    };
    if !settled {
        r.new_mapping_unsettled(tables());
    }
}

/// May `file`, mapped with no table yet, have a section of its own that
/// its table will describe? Judged from its program headers if they lie
/// in its first page and the page cache holds that page, as it does for
/// a file exec or the dynamic loader just read them from: no read, no
/// sleep, with the mmap write lock held. `false` only for a file that is
/// not an ELF object of this architecture, or one with no `PT_GNU_SFRAME`,
/// whose code only an agent's table can describe. This
/// CPU remembers the judgement for `inode`, the file's, until its
/// contents change (`unwind_user_file_judged()`), so that the libraries
/// every process maps are judged once.
fn may_have_own_section(file: *mut bindings::file, inode: *const bindings::inode) -> bool {
    let mut may = false;
    // SAFETY: `inode` is the file's, live while the caller's VMA holds the
    // file; `may` is written only.
    if unsafe { bindings::unwind_user_file_judged(inode, &mut may) } {
        return may;
    }
    let mut judged = bindings::unwind_user_judged::default();
    // SAFETY: As above; `judged` is written only.
    let remember = unsafe { bindings::unwind_user_file_judge_begin(inode.cast_mut(), &mut judged) };
    let mut folio = core::ptr::null_mut();
    // SAFETY: `file` is live (the caller's VMA holds it).
    let page = unsafe { bindings::unwind_user_file_first_page(file, &mut folio) };
    if page.is_null() {
        // Not in the page cache: it may, until it is.
        return true;
    }
    // SAFETY: `page` maps the file's first page, `PAGE_SIZE` bytes, until
    // `unwind_user_file_page_done()` below, and is only read. A write to
    // the file may change them meanwhile: `elf::layout_in()` copies out
    // each value it uses once and checks it, as the untrusted bytes they
    // are.
    let bytes = unsafe { core::slice::from_raw_parts(page.cast::<u8>(), kernel::page::PAGE_SIZE) };
    let layout = elf::layout_in(bytes);
    // SAFETY: As returned above, released once; `bytes` is not used again.
    unsafe { bindings::unwind_user_file_page_done(folio, page) };
    judged.may = match layout {
        Ok(layout) => layout.sframe.is_some(),
        Err(e) => e != ENOEXEC,
    };
    if remember {
        // SAFETY: Filled by `unwind_user_file_judge_begin()` for the live
        // `inode`.
        unsafe { bindings::unwind_user_file_judge_end(&judged) };
    }
    judged.may
}

/// Creates the registry of `mm`, the current task's, where a walk that may
/// sleep will find file tables to attach and cache what it finds.
/// Never in line (see [`attach_mapped`]).
#[inline(never)]
pub(crate) fn registry_for_walk(mm: &MmWithUser) -> Result {
    mmap_lock::with_locked(mm, |l| vdso::registry_or_create(l).map(|_| ()))
}

#[kunit_tests(unwind_user_file_table)]
mod tests {
    use super::*;

    #[test]
    fn one_walk_builds_a_file_at_a_time() {
        // Keys no inode has: this test's own statics.
        static A: u8 = 0;
        static B: u8 = 0;
        let (a, b) = (
            core::ptr::from_ref(&A).cast::<bindings::inode>(),
            core::ptr::from_ref(&B).cast::<bindings::inode>(),
        );
        let first = Building::claim(a);
        assert!(first.is_some());
        // Another walk meets the same file: left to it.
        assert!(Building::claim(a).is_none());
        // Another file is built meanwhile.
        let other = Building::claim(b);
        assert!(other.is_some());
        drop(first);
        // Built (or not): the next walk may try again.
        let again = Building::claim(a);
        assert!(again.is_some());
        drop(other);
        drop(again);
        assert!(Building::claim(b).is_some());
    }

    #[test]
    fn a_table_over_budget_keeps_the_larger_need() -> Result {
        // A key no inode has: this test's own static.
        static KEY: u8 = 0;
        let key = core::ptr::from_ref(&KEY) as usize;
        let over = |n| {
            Arc::new(
                FileTable {
                    inode: key,
                    file: None,
                    stamp: Stamp {
                        size: 0,
                        mtime: (0, 0),
                        ctime: (0, 0),
                    },
                    described: None,
                    over_budget: n,
                    user: false,
                    payer: None,
                    agent: false,
                    asked_ms: Atomic::new(0),
                },
                GFP_KERNEL,
            )
        };
        let need = || {
            let files = FILES.lock();
            let i = files.binary_search_by_key(&key, |t| t.key()).ok();
            i.and_then(|i| files.get(i)).map(|t| t.over_budget)
        };
        let gen0 = attach_state::files_gen();
        assert!(insert(over(100)?, false)?.is_none());
        // Built again once the budget had room for 100, needing 200: kept,
        // so that retry() waits for room for 200.
        assert!(insert(over(200)?, false)?.is_some());
        assert_eq!(need(), Some(200));
        // An estimate below it changes nothing.
        assert!(insert(over(150)?, false)?.is_none());
        assert_eq!(need(), Some(200));
        assert_eq!(attach_state::files_gen(), gen0);
        assert!(remove(key, None).is_some());
        assert_eq!(need(), None);
        Ok(())
    }

    #[test]
    fn a_users_walk_in_place_of_a_placeholder_keeps_the_generation() -> Result {
        // Keys no inode has: this test's own statics.
        static USERS: u8 = 0;
        static SYSTEMS: u8 = 0;
        let table = |key: &u8, user: bool, described: bool| -> Result<Arc<FileTable>> {
            let described = if described {
                Some(Described {
                    text: Segment {
                        vaddr: 0x1000,
                        offset: 0x1000,
                        size: 0x1000,
                    },
                    sframe_addr: 0x10000,
                    sframe_len: 64,
                    fdes: crate::section::fixtures::none()?,
                })
            } else {
                None
            };
            Ok(Arc::new(
                FileTable {
                    inode: core::ptr::from_ref(key) as usize,
                    file: None,
                    stamp: Stamp {
                        size: 0,
                        mtime: (0, 0),
                        ctime: (0, 0),
                    },
                    over_budget: if described.is_some() { 0 } else { 100 },
                    described,
                    user,
                    payer: None,
                    agent: false,
                    asked_ms: Atomic::new(0),
                },
                GFP_KERNEL,
            )?)
        };
        // A user's file: the table a walk built in place of its
        // placeholder leaves every address space's rule cache as it is.
        assert!(insert(table(&USERS, true, false)?, false)?.is_none());
        let gen0 = attach_state::files_gen();
        assert!(insert(table(&USERS, true, true)?, false)?.is_some());
        assert_eq!(attach_state::files_gen(), gen0);
        // A system file's advances the generation: those that settled on
        // the placeholder look again.
        assert!(insert(table(&SYSTEMS, false, false)?, false)?.is_none());
        let gen1 = attach_state::files_gen();
        assert!(insert(table(&SYSTEMS, false, true)?, false)?.is_some());
        assert_ne!(attach_state::files_gen(), gen1);
        assert!(remove(core::ptr::from_ref(&USERS) as usize, None).is_some());
        assert!(remove(core::ptr::from_ref(&SYSTEMS) as usize, None).is_some());
        Ok(())
    }
}
