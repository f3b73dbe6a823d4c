// SPDX-License-Identifier: GPL-2.0

//! SFrame user-space unwinder.
//!
//! Gives `kernel/unwind/user.c` a frame producer for code that has an SFrame
//! section: every file's own `PT_GNU_SFRAME` (programs and libraries built
//! with `--gsframe`), the sections a privileged agent attaches to files,
//! the vDSO's, and whatever user space registers with
//! `prctl(PR_UNWIND_USER)` (JIT code windows, sections only in memory).
//!
//! This file holds the entry points for C, declared in
//! `include/linux/unwind_user_sframe.h` (`#[export]` checks them against
//! it), each with the one `unsafe` its C contract needs, and the walk
//! driver: where a step needs tables attached, it attaches them (or, at
//! NMI or IRQ time, decides whether the walk ends) and steps again. The
//! jobs behind them each have a file, listed from the top down; no file's
//! code imports a file that imports it:
//!
//! - `prctl.rs`: the `PR_UNWIND_USER` operations, registration among them;
//!   `assist.rs`: user-assisted unwinding;
//! - `file_table.rs`: the tables of files, from their own section or an
//!   agent's, shared by every address space that maps them; `vdso.rs`:
//!   the vDSO's section, registered in every registry;
//! - `step.rs`: one frame of a walk, which reads no file and takes no lock
//!   but, in task context, the mmap or VMA read lock to tell code from
//!   data;
//! - `validate.rs`: validating a section;
//! - `registry.rs`: the sections of an address space, read under RCU;
//!   `rule_cache.rs`: what each PC unwinds with, kept across walks;
//!   `attach_state.rs`: whether an address space has its files' tables;
//! - `section.rs`: a section, and its table as validation kept it;
//!   `usual.rs`: the usual rows of a table, flattened for the cold step;
//! - leaves: `uapi.rs` (the uapi structs in user memory), `elf.rs` (a
//!   file's program headers), `sigframe.rs` (the signal frame),
//!   `usermem.rs` (reading the task's memory, faultable or not),
//!   `mmap_lock.rs` (the mmap write lock, held by the registry's writers),
//!   `file_mapping.rs` (an executable mapping of a file, as the file
//!   tables see it), `memory.rs` (allocation flags, and the budget of file
//!   tables), `counters.rs` (what `UNWIND_USER_QUERY` reads), `word.rs`
//!   (lock-free words and their fields, and preemption, in line).
//!
//! The section bytes are untrusted and may change at any time: they are
//! decoded by the `sframe` crate, which checks every offset, and read with
//! fault-safe user copies.
//!
//! C glue: `files.c` (the sysctl and initcall of the file tables) and
//! `vdso.c` (the vDSO image), for want of Rust abstractions for them.
//! `mmap_write_lock_killable()`/`mmap_write_unlock()` come through
//! rust/helpers since the Rust `mm` abstraction only offers the read lock.

use kernel::{
    bindings,
    error::code::{EAGAIN, ENOENT},
    ffi::{c_char, c_int, c_long, c_uint, c_ulong},
    mm::{virt::VmaRef, MmWithUser},
    prelude::*,
};

/// Prefix of this crate's log messages (what `module!` would define).
const __LOG_PREFIX: &[u8] = b"unwind_user\0";

mod assist;
mod attach_state;
mod counters;
mod elf;
mod file_mapping;
mod file_table;
mod memory;
mod mmap_lock;
mod prctl;
mod provider;
mod registry;
mod rule_cache;
mod section;
mod sigframe;
mod step;
mod uapi;
mod usermem;
mod usual;
mod validate;
mod vdso;
mod word;

use counters::Counters;
use registry::{RegistryWriter, SframeMm};
use section::Section;

/// Initialises the machine's file tables; called once, by the initcall of
/// `kernel/unwind_user/files.c`, before any user process exists.
#[export]
pub extern "C" fn unwind_user_files_init() {
    // SAFETY: The initcall runs once, before anything attaches or unwinds.
    unsafe { file_table::init() };
}

/// `prctl(PR_UNWIND_USER, op, arg3, arg4, arg5)`.
#[export]
pub extern "C" fn unwind_user_sframe_prctl(
    op: c_ulong,
    arg3: c_ulong,
    arg4: c_ulong,
    arg5: c_ulong,
) -> c_long {
    match prctl::prctl(op, arg3, arg4, arg5) {
        Ok(v) => v,
        Err(e) => e.to_errno() as c_long,
    }
}

/// A read of the provider's descriptor (`files.c`): what it copied to
/// `buf`, or a negative errno (`-EAGAIN`: nothing queued).
#[export]
pub extern "C" fn unwind_user_provider_take(buf: *mut c_char, len: usize) -> isize {
    match provider::take(buf as usize, len) {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// Has the provider something to read? For its descriptor's poll and
/// blocking read (`files.c`).
#[export]
pub extern "C" fn unwind_user_provider_ready() -> bool {
    provider::ready()
}

/// The provider's descriptor was released: there is no provider any more.
/// Returns in how many milliseconds `unwind_user_provider_expire()` is to
/// let its queue go.
#[export]
pub extern "C" fn unwind_user_provider_gone() -> c_ulong {
    provider::unregister() as c_ulong
}

/// The periodic sweep of the file tables (`files.c`): drops the tables
/// that hold a file that changed or lost its last name. Returns whether
/// tables that hold a file remain, to be swept again later.
#[export]
pub extern "C" fn unwind_user_files_sweep() -> bool {
    file_table::sweep()
}

/// The grace period after the provider went is over (`files.c`).
#[export]
pub extern "C" fn unwind_user_provider_expire() {
    provider::expire();
}

/// The signal to send to the current thread with each deferred unwind's
/// cookie, and in `*timeout_ms` how long its answer is taken; 0 if its
/// thread group did not ask for user-assisted unwinding. Called from
/// `kernel/unwind/deferred.c`, at NMI time too: one atomic read.
///
/// # Safety
///
/// `timeout_ms` must be valid for writes.
#[export]
pub unsafe extern "C" fn unwind_user_assist_signal(timeout_ms: *mut c_uint) -> c_int {
    let Some((signo, ms)) = assist::signal() else {
        return 0;
    };
    // SAFETY: The caller's contract.
    unsafe { *timeout_ms = ms };
    signo
}

/// Does the SFrame unwinder take part in a walk at NMI or IRQ time of the
/// current task, whose mm is `mm`? Not in an address space with no
/// registry where no table may come: that walk is the caller's own
/// frame-pointer walk, at its cost, asked before any set-up of the walk
/// and leaving no state behind (a frame-pointer distribution's programs
/// under plain `perf record -g`).
///
/// # Safety
///
/// `mm` must be the current task's mm, in any context.
#[export]
pub unsafe extern "C" fn unwind_user_sframe_walks_nofault(mm: *mut bindings::mm_struct) -> bool {
    // SAFETY: `mm` is the current task's mm (the caller's contract), which
    // has users while the task runs.
    let mm = unsafe { MmWithUser::from_raw(mm) };
    SframeMm::of(mm).is_some() || tables_may_come_bare(mm)
}

/// Prepares `state`, a walk of the current task, for SFrame steps: finds
/// the registry of `mm` once for the walk. Any walk may meet code a file's
/// table describes, so it takes part: one that may sleep attaches the
/// tables of the files it meets; one at NMI or IRQ time asks for a
/// deferred unwind that attaches them, and ends at code a table not
/// attached yet may describe ([`WalkDriver`]); unless
/// [`unwind_user_sframe_walks_nofault`] said there is nothing to take
/// part in.
///
/// # Safety
///
/// `mm` must be the current task's mm and `state` a valid pointer, to the
/// state of a walk of the current task, in any context.
#[export]
pub unsafe extern "C" fn unwind_user_sframe_start(
    mm: *mut bindings::mm_struct,
    state: *mut bindings::unwind_user_state,
) -> bool {
    // SAFETY: Valid (the caller's contract), not aliased during the call.
    let state = unsafe { &mut *state };
    // SAFETY: `mm` is the current task's mm (the caller's contract), which
    // has users while the task runs.
    let mm = unsafe { MmWithUser::from_raw(mm) };
    let Some(smm) = SframeMm::of(mm) else {
        // The first step creates the registry (`unwind_user_sframe_next()`);
        // at NMI or IRQ time, `unwind_user_sframe_walks_nofault()` said a
        // table may come.
        state.sframe.mm = core::ptr::null_mut();
        return true;
    };
    smm.sync_files(attach_state::files_gen());
    state.sframe.mm = core::ptr::from_ref(smm).cast_mut().cast();
    step::start(smm, state);
    true
}

/// The registry `unwind_user_sframe_start()` found for the walk of `state`.
///
/// # Safety
///
/// `state` must be valid, and its `sframe.mm` null or set by
/// `unwind_user_sframe_start()` for this walk of the current task.
unsafe fn walk_registry<'a>(state: &bindings::unwind_user_state) -> Option<&'a SframeMm> {
    // SAFETY: Null, or the registry of the current task's mm, which lives
    // as long as the mm, longer than the walk (the caller's contract).
    unsafe { state.sframe.mm.cast::<SframeMm>().as_ref() }
}

/// Creates the registry of the current task's address space for the walk
/// of `state`, which may sleep, and points `state` to it.
fn walk_create_registry(state: &mut bindings::unwind_user_state) -> bool {
    let task = kernel::current!();
    let Some(mm) = task.mm() else {
        return false;
    };
    if file_table::registry_for_walk(mm).is_err() {
        return false;
    }
    let Some(smm) = SframeMm::of(mm) else {
        return false;
    };
    state.sframe.mm = core::ptr::from_ref(smm).cast_mut().cast();
    step::start(smm, state);
    true
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
#[export]
pub unsafe extern "C" fn unwind_user_sframe_next(
    state: *mut bindings::unwind_user_state,
    frame: *mut bindings::unwind_user_frame,
) -> c_int {
    // SAFETY: Valid pointers (the caller's contract), not aliased during the
    // call.
    let (state, frame) = unsafe { (&mut *state, &mut *frame) };
    // SAFETY: Set up by `unwind_user_sframe_start()` (the caller's contract).
    match unsafe { walk_registry(state) } {
        Some(smm) => step::next::<WalkDriver>(smm, state, frame),
        None => first_step(state, frame),
    }
}

/// Does a walk at NMI or IRQ time in an address space that is not
/// settled end at code no registration covers? Where a table may describe
/// it once attached: `pending`, a mapping of a file that has a table or a
/// section of its own is pending, or an agent attaches tables (which may
/// describe any file). Elsewhere the frame-pointer rule takes the frame,
/// as for code no table describes: a caller that takes this walk's stack
/// (plain `perf record -g`, `bpf_get_stack()`) has nothing better coming,
/// and a frame-pointer distribution's new process gets from its first
/// sample the stacks mainline's walk gives.
fn tables_may_come(pending: bool) -> bool {
    pending || file_table::agent_tables() || provider::accepting()
}

/// [`tables_may_come`] for `mm`, which has no registry: never in one
/// that exec found settled (every file it maps had a table that does not
/// describe it, in this generation of the tables), always in one whose
/// state is unknown.
fn tables_may_come_bare(mm: &MmWithUser) -> bool {
    match SframeMm::bare(mm) {
        Some(b) if b.is_settled(attach_state::files_gen()) => false,
        Some(b) => tables_may_come(b.tables_pending()),
        None => true,
    }
}

/// The walk driver of the step ([`step::Driver`]).
struct WalkDriver;

impl step::Driver for WalkDriver {
    /// The step of `state` that found no registration for its frame in
    /// `smm`, an address space that is not settled: a walk that may sleep
    /// attaches the tables of the files it maps; one at NMI or IRQ time
    /// asks for a deferred unwind that does, and ends where a table may
    /// come. Then the step again. Never in line: the cold path of the step.
    #[inline(never)]
    fn needs_tables(
        smm: &SframeMm,
        state: &mut bindings::unwind_user_state,
        frame: &mut bindings::unwind_user_frame,
    ) -> c_int {
        let later = if state.nofault {
            if step::attach_pending(state, tables_may_come(smm.attach.tables_pending())) {
                return EAGAIN.to_errno();
            }
            true
        } else {
            let files_gen = attach_state::files_gen();
            let task = kernel::current!();
            let Some(mm) = task.mm() else {
                return step::retry(smm, state, frame, false);
            };
            match file_table::attach_mapped(mm, smm, files_gen, step::lookup_pc(state).0) {
                file_table::Attach::Later => true,
                // Its table is on its way: no guess of its callers meanwhile.
                file_table::Attach::Waiting => {
                    Counters::inc(&smm.counters.table_waits);
                    return EAGAIN.to_errno();
                }
                _ => false,
            }
        };
        step::retry(smm, state, frame, later)
    }
}

/// [`unwind_user_sframe_next`] in a walk that found no registry: out of
/// line, so that the step of every other walk, which calls nothing but
/// the lookup it may tail-call, saves no register.
#[inline(never)]
fn first_step(
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
) -> c_int {
    // A walk that may meet file tables, in an address space with no
    // registry yet: one that may sleep makes one for what it finds; one at
    // NMI or IRQ time took part only where a table may come
    // (`unwind_user_sframe_start()`), and ends here.
    if state.nofault {
        step::attach_pending(state, true);
        if let Some(mm) = kernel::current!().mm() {
            SframeMm::count_bare_ask(mm);
        }
        return EAGAIN.to_errno();
    }
    if !walk_create_registry(state) {
        return ENOENT.to_errno();
    }
    // SAFETY: Set by `walk_create_registry()` for this walk.
    match unsafe { walk_registry(state) } {
        Some(smm) => step::next::<WalkDriver>(smm, state, frame),
        None => ENOENT.to_errno(),
    }
}

/// May `ra`, which the frame-pointer rule read in the walk of `state`, be
/// taken as a return address? In a walk that has SFrame sections, only if
/// it is in code (see [`step::fp_ra_in_code`]); in any other walk, yes.
///
/// # Safety
///
/// `state` must be a valid pointer, to the state of a walk of the current
/// task, not aliased during the call; in task context, the walk must be
/// one that may sleep (`state->nofault` clear).
#[export]
pub unsafe extern "C" fn unwind_user_sframe_ra_ok(
    state: *mut bindings::unwind_user_state,
    ra: c_ulong,
) -> bool {
    // SAFETY: Valid and not aliased during the call (the caller's
    // contract).
    let state = unsafe { &mut *state };
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
#[export]
pub unsafe extern "C" fn unwind_user_sframe_done(state: *const bindings::unwind_user_state) {
    // SAFETY: Valid (the caller's contract), only read.
    let state = unsafe { &*state };
    // SAFETY: Null, or set up by `unwind_user_sframe_start()`.
    if let Some(smm) = unsafe { walk_registry(state) } {
        step::done(smm, state);
    }
}

/// Attaches to `vma`'s address space the table of the file it maps, if
/// it is executable and the file has one: called by mmap for a new file
/// mapping, so that a process started after the table was attached is
/// described from its first instruction, by mprotect for a file mapping
/// it makes executable, and by mremap for one it moves or grows. One
/// lookup of the file's table (none for a file that never had one), no
/// read of the file or of user memory, no allocation unless a table
/// describes the mapping; a mapping it could not settle is left to the
/// first walk that meets it. A new program's first executable mapping
/// says that its mappings are settled, in the registry or, with none, in
/// the word `mm->sframe` holds: its walks at NMI time never stop to ask
/// for tables that cannot come.
///
/// # Safety
///
/// `vma` must be a VMA of the current task's mm, which has users, in
/// place, with the mmap write lock held.
#[export]
pub unsafe extern "C" fn unwind_user_sframe_mm_mmap(vma: *mut bindings::vm_area_struct) {
    // SAFETY: `vma` is live and in its mm, whose write lock is held (the
    // caller's contract), for the call.
    let (mm, vma) = unsafe {
        (
            mmap_lock::LockedMm::assume_locked((*vma).vm_mm),
            VmaRef::from_raw(vma),
        )
    };
    let task = kernel::current!();
    // SAFETY: The current task is live; `in_execve` is its own, set and
    // cleared by the task itself around `execve()`'s loading of the
    // program (whose mappings are in its new mm from the point of no
    // return on).
    let in_exec = unsafe { (*task.as_ptr()).in_execve() } != 0;
    file_table::attach_mapping(&mm, vma, in_exec);
}

/// Forgets the table of the file whose inode `evict()` is freeing: nothing
/// maps it, and it would be built again from the file. `inode` is only
/// compared, never dereferenced.
#[export]
pub extern "C" fn unwind_user_sframe_inode_evict(inode: *const bindings::inode) {
    file_table::evict(inode);
}

/// Validates the vDSO's SFrame section, once, at boot (`vdso.c`'s
/// initcall).
#[export]
pub extern "C" fn unwind_user_vdso_init() {
    // SAFETY: `vdso.c`'s `core_initcall` calls this, before the vDSO's
    // `subsys_initcall` applies the alternatives to its image.
    unsafe { vdso::init() };
}

/// Registers the vDSO's SFrame section in `mm`, whose vDSO `map_vdso()`
/// has just mapped, if it has a registry (one made earlier in the same
/// exec: a file's table, or the executable's own section).
///
/// # Safety
///
/// `mm` must be a live mm with users, its mmap write lock held.
#[export]
pub unsafe extern "C" fn unwind_user_sframe_mm_vdso(mm: *mut bindings::mm_struct) {
    // SAFETY: The caller's contract, for the call.
    let mm = unsafe { mmap_lock::LockedMm::assume_locked(mm) };
    vdso::register(&mm);
}

/// Copies the registrations of `oldmm` into `mm` at fork, once `dup_mmap()`
/// has copied every VMA (with both mmap write locks held): those whose text
/// or section was not copied (`VM_DONTCOPY`) stay behind. Profiling state
/// never fails a fork: if the copy cannot be allocated, the child starts
/// with no registry, as a process that never had one, and its first walk
/// attaches the tables of the files it maps; what the parent registered
/// with `prctl()` alone (a JIT's sections) is lost to it.
///
/// # Safety
///
/// Both pointers must be live mms with users, their mmap write locks held.
#[export]
pub unsafe extern "C" fn unwind_user_sframe_mm_dup(
    mm: *mut bindings::mm_struct,
    oldmm: *mut bindings::mm_struct,
) {
    // SAFETY: The caller's contract, for both, for the whole call.
    let (new, old) = unsafe {
        (
            mmap_lock::LockedMm::assume_locked(mm),
            mmap_lock::LockedMm::assume_locked(oldmm),
        )
    };
    let Some(old) = RegistryWriter::of(&old) else {
        // No registry: the child maps what the parent does, in the state
        // exec recorded, if any.
        if let Some(bare) = SframeMm::bare(old.mm()) {
            SframeMm::set_bare(&new, bare);
        }
        return;
    };
    // All of the text, and of the section unless its rows are in kernel
    // memory, was copied: a VMA split since registration (by mprotect(),
    // say) is no reason to drop it, but a hole is (a page MADV_DONTFORK),
    // where the child could map other code.
    let mapped = |s: &Section| {
        let sframe_end = s.sframe_start.saturating_add(s.sframe_len as usize);
        new.maps_all(s.text_start, s.text_end)
            && (s.in_kernel || new.maps_all(s.sframe_start, sframe_end))
    };
    // A new registry: the copy has the vDSO's registration among the
    // parent's.
    if RegistryWriter::of_or_new(&new)
        .and_then(|(mut r, _)| old.copy_to(&mut r, mapped))
        .is_err()
    {
        // SAFETY: `mm` is live (the caller's contract), and no reader can
        // run: no task has run with it yet (the child of this fork is not
        // woken before `dup_mmap()` returns), and `new`, the only writer,
        // is not used again.
        unsafe { SframeMm::free(mm) };
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
#[export]
pub unsafe extern "C" fn unwind_user_sframe_mm_free(mm: *mut bindings::mm_struct) {
    // SAFETY: The caller's contract.
    unsafe { SframeMm::free(mm) };
}

/// Drops the registrations whose text or section overlaps `[start, end)`,
/// which is being unmapped; `exec`: executable pages among them.
///
/// # Safety
///
/// `mm` must be a live mm with users, its mmap write lock held.
#[export]
pub unsafe extern "C" fn unwind_user_sframe_mm_unmap(
    mm: *mut bindings::mm_struct,
    start: c_ulong,
    end: c_ulong,
    exec: bool,
) {
    // SAFETY: The caller's contract.
    let mm = unsafe { mmap_lock::LockedMm::assume_locked(mm) };
    if let Some(mut r) = RegistryWriter::of(&mm) {
        r.unmap(start, end, exec);
    }
}
