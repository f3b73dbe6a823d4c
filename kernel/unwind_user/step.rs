// SPDX-License-Identifier: GPL-2.0

//! The SFrame unwind step: from the registered section covering an IP to
//! the frame rule (`struct unwind_user_frame`) that `kernel/unwind/user.c`
//! applies. This module only describes frames; the generic step in user.c
//! reads the return address and saved frame pointer, checks that the stack
//! grows and stays aligned, and advances.

use crate::{
    attach_state,
    counters::Counters,
    registry::{Found, SframeMm},
    rule_cache::{rule, Cached, CachedRule, Rule},
    section::KnownRow,
    sigframe::{self, RT_SIGRETURN},
    usermem::{UserMem, UserReader},
    word::NoPreempt,
};
use kernel::{
    bindings,
    error::code::{E2BIG, EFAULT, EINVAL, ENOENT},
    ffi::c_int,
    prelude::*,
};
use sframe::{Base, Error as SfError, RegRule, Row};

/// Most section bytes one frame's lookup may read. A lookup reads at most
/// [`FRE_MARK_EVERY`](crate::section::FRE_MARK_EVERY) rows from the
/// mark registration kept, a few hundred bytes; this bounds it whatever
/// the bytes say now (the walk ends at a frame that would read more).
const FRAME_BYTES: u32 = 4096;
/// Most section bytes one walk may read at NMI or IRQ time: about 200
/// frames of typical lookups. It bounds what a profiled process can make
/// `perf_callchain_user()` do, however its sections are built.
const WALK_BYTES_NOFAULT: u32 = 32 << 10;
/// The same in task context (the deferred unwind), at the task's own cost.
const WALK_BYTES: u32 = 256 << 10;

/// What the next step does first (`state->sframe.hint`, `enum
/// unwind_user_sframe_hint`): probe the rule cache, ...
const NEXT_PROBE: u8 = bindings::unwind_user_sframe_hint_UNWIND_USER_SFRAME_PROBE as u8;
/// ... take the frame-pointer rule (`unwind_user_sframe_fp_known()`, in
/// line in C: no call into the unwinder),
const NEXT_FP: u8 = bindings::unwind_user_sframe_hint_UNWIND_USER_SFRAME_FP as u8;
/// ... or look the PC up ([`next_usual`]).
const NEXT_LOOKUP: u8 = bindings::unwind_user_sframe_hint_UNWIND_USER_SFRAME_LOOKUP as u8;
// The hint is kept in a byte: the casts above lose nothing.
const _: () = assert!(bindings::unwind_user_sframe_hint_UNWIND_USER_SFRAME_LOOKUP <= 0xff);

/// Does the function of `row` keep a frame pointer at this point (CFA based
/// on FP, the caller's FP saved)? Then the frame-pointer rule finds its
/// caller even where the row itself cannot be expressed.
fn keeps_fp(row: &Row) -> bool {
    row.cfa.base == Base::Fp && matches!(row.fp, RegRule::CfaOffset(_))
}

/// Is `ra`, which the frame-pointer rule read in a walk of the current
/// task, in code? In a registered text it is. Elsewhere the deferred walk
/// asks the VMA: %rbp of code built without frame pointers may point at
/// anything, and what lies above it is as likely a saved pointer as a
/// return address. At NMI or IRQ time the VMAs cannot be looked up, and the
/// caller's check (not within the frame being unwound) is all there is.
///
/// A return address that was a PC of this generation's rule cache is known
/// to be code: it was in a registered text, or a walk that may sleep found
/// it in executable memory ([`Cached::FramePointerInCode`]). The steady
/// state of a walk through code no section covers then costs a cache probe
/// a frame, not a VMA lookup. (Unmapping code empties the cache, so that
/// an address that was code, and that the frame-pointer rule read where a
/// return address is, is not taken for code after.)
///
/// The probe is the one the next step would make, `ra` being its IP, a
/// return address, in the same generation: where it finds the
/// frame-pointer rule, the walk keeps the answer for that step
/// (`UNWIND_USER_SFRAME_FP`), which a walk through code no section covers
/// would otherwise probe for twice a frame. The frame-pointer rule kept
/// by a walk that could not tell whether `ra` is code (at NMI or IRQ
/// time) is kept again as code, once it is found to be.
pub(crate) fn fp_ra_in_code(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    ra: usize,
) -> bool {
    if state.nofault {
        return true;
    }
    // Its word, not its `Cached`: what this path compares is the word.
    match mm.cached_word(ra.wrapping_sub(1), true, state.sframe.generation) {
        Some(Cached::FRAME_POINTER_IN_CODE) => {
            state.sframe.hint = NEXT_FP;
            true
        }
        // A rule, or the end of a walk in a section's text: cached, the
        // next step's PC, which it then probes for.
        Some(w) if w != Cached::FRAME_POINTER => {
            state.sframe.hint = NEXT_PROBE;
            true
        }
        w => ra_in_code_uncached(mm, state, ra, w.is_some()),
    }
}

/// [`fp_ra_in_code`] for a return address the rule cache does not know
/// to be code (`fp`: it holds the frame-pointer rule for it); out of line,
/// so that the steady state saves no register for it.
#[inline(never)]
fn ra_in_code_uncached(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    ra: usize,
    fp: bool,
) -> bool {
    let in_code = mm.covers(ra) || in_executable_mapping(ra);
    if !in_code {
        return false;
    }
    if fp {
        mm.remember(
            ra.wrapping_sub(1),
            true,
            state.sframe.generation,
            Cached::FramePointerInCode,
        );
        state.sframe.hint = NEXT_FP;
    } else {
        // Not cached: the next step looks it up at once, as after any
        // return address the cache does not hold (next_usual()).
        state.sframe.hint = NEXT_LOOKUP;
    }
    true
}

/// Is `addr` in an executable mapping of the current task? May sleep.
fn in_executable_mapping(addr: usize) -> bool {
    use kernel::mm::virt::flags::EXEC;
    let task = kernel::current!();
    let Some(umm) = task.mm() else {
        return false;
    };
    // Without the mmap lock when the VMA can be locked alone.
    if let Some(vma) = umm.lock_vma_under_rcu(addr) {
        return vma.flags() & EXEC != 0;
    }
    let mmap = umm.mmap_read_lock();
    let in_code = mmap
        .vma_lookup(addr)
        .is_some_and(|vma| vma.flags() & EXEC != 0);
    in_code
}

/// What one step did.
enum Step {
    /// `frame` describes the frame; the generic step applies it.
    Frame,
    /// The frame was a signal frame: `state` now holds the interrupted
    /// context.
    Signal,
    /// No registration covers the frame, in an address space that is not
    /// settled: for the walk driver ([`Driver`]).
    NeedsTables,
}

/// The walk driver, for a step that needs tables ([`Step::NeedsTables`]):
/// it attaches them (or, at NMI or IRQ time, decides whether the walk
/// ends) and steps again with [`retry`]. A type parameter of the step, so
/// that the step imports nothing above it and still tail-calls it.
pub(crate) trait Driver {
    /// The step of `state`'s frame in `mm`, which needs tables.
    fn needs_tables(
        mm: &SframeMm,
        state: &mut bindings::unwind_user_state,
        frame: &mut bindings::unwind_user_frame,
    ) -> c_int;
}

/// Whether a step may ask for tables ([`Step::NeedsTables`]), or is the
/// retry after the walk driver dealt with that.
#[derive(Clone, Copy)]
enum Tables {
    /// The first try.
    MayAsk,
    /// The retry. `later`: only a later walk, one that may sleep, can say
    /// whether a table describes the PC, so this one caches nothing for
    /// it.
    Asked { later: bool },
}

/// Is `state->ip` the signal trampoline? Only asked for IPs no row
/// describes: a return address into `__restore_rt` is its first byte.
/// Code that cannot be read in task context (execute-only, or the end of a
/// mapping) is not the trampoline; at NMI or IRQ time it may be a page not
/// resident, which the deferred unwind can read: `EFAULT`, and the walk
/// ends there as incomplete.
fn at_sigreturn(state: &mut bindings::unwind_user_state, mem: UserMem) -> Result<bool> {
    match mem.read::<{ RT_SIGRETURN.len() }>(state.ip) {
        Ok(code) => Ok(code == RT_SIGRETURN),
        Err(_) if !state.nofault => Ok(false),
        Err(e) => {
            bump(&mut state.sframe.faults);
            state.prefault = true;
            state.incomplete = true;
            Err(e)
        }
    }
}

/// Counts one outcome of this walk (the `sframe_*` counts of the state,
/// added to the address space's counters by [`done`]). A walk takes at most
/// a few hundred steps (as many as the trace it fills holds), so a count
/// never wraps.
fn bump(n: &mut u16) {
    *n = n.wrapping_add(1);
}

/// Adds this walk's counts to the address space's counters, once, at the
/// end of the walk: a few atomics a walk rather than a few a frame, on a
/// cache line every thread of the process shares.
pub(crate) fn done(mm: &SframeMm, state: &bindings::unwind_user_state) {
    let c = &mm.counters;
    let frames = u32::from(state.sframe.frames) + u32::from(state.sframe.cached);
    Counters::add(&c.sframe_frames, frames);
    let counts = [
        (&c.fp_fallbacks, state.sframe.fallbacks),
        (&c.errors, state.sframe.errors),
        (&c.nofault_faults, state.sframe.faults),
    ];
    for (counter, n) in counts {
        Counters::add(counter, n);
    }
    Counters::add(&c.cached_frames, state.sframe.cached);
    Counters::add(&c.section_reads, state.sframe.reads);
    Counters::add(&c.section_bytes, state.sframe.bytes);
    if state.nofault {
        Counters::add(&c.nofault_frames, frames);
    }
}

/// The row of `pc` in function `i` (`fde`) of the section of `found`, read
/// through `reader`: the header and the FDE as registration validated
/// them; only the function's rows are read, each checked as it is.
fn find_row<R: sframe::Reader>(
    found: &Found,
    i: u32,
    fde: &sframe::PackedFde,
    reader: R,
    pc: usize,
) -> core::result::Result<Row, SfError> {
    let s = &found.section;
    let fde = fde.unpack(found.header.version, s.text_start as u64, i)?;
    sframe::Section::with_header(reader, s.sframe_len, s.sframe_addr as u64, found.header)?
        .find_row_from(&fde, found.answer.mark.as_ref(), pc as u64)
}

/// The row of `pc` in the function `found` names, as the lookup found it
/// decoded, else read from the section within this walk's budget; `None`
/// if no row describes `pc`. A section found malformed is dropped.
fn read_row(
    mm: &SframeMm,
    found: &Found,
    state: &mut bindings::unwind_user_state,
    mem: UserMem,
    pc: usize,
) -> Result<Option<Row>> {
    let Some((i, fde)) = found.answer.fde else {
        return Ok(None);
    };
    match found.answer.known {
        KnownRow::Row(_) => {
            if let Some(row) = found.known_row() {
                return Ok(Some(row));
            }
        }
        KnownRow::Uncovered => return Ok(None),
        KnownRow::Read => {}
    }
    let s = &found.section;
    let (r, exhausted) = if s.in_kernel {
        // A file's table: its rows are in kernel memory, read under RCU.
        // A registration gone since the lookup describes nothing now.
        let r = mm.with_section(found, |bytes| find_row(found, i, &fde, bytes, pc));
        (r.unwrap_or(Err(SfError::NotCovered)), false)
    } else {
        let walk_max = if state.nofault {
            WALK_BYTES_NOFAULT
        } else {
            WALK_BYTES
        };
        let allowance = walk_max.saturating_sub(state.sframe.bytes).min(FRAME_BYTES);
        let mut reader = UserReader::new(s.sframe_start, mem, allowance);
        let r = find_row(found, i, &fde, &mut reader, pc);
        state.sframe.bytes = state.sframe.bytes.saturating_add(allowance - reader.left);
        state.sframe.reads = state.sframe.reads.saturating_add(reader.reads);
        (r, reader.exhausted)
    };
    match r {
        Ok(row) => Ok(Some(row)),
        Err(SfError::NotCovered) => Ok(None),
        Err(_) if exhausted => {
            bump(&mut state.sframe.errors);
            // At NMI or IRQ time the budget is smaller than a deferred
            // walk's, which may get further.
            state.incomplete |= state.nofault;
            Err(E2BIG)
        }
        Err(e) if e.is_malformed() => {
            bump(&mut state.sframe.errors);
            mm.mark_dead(found);
            pr_debug!("dropped section at {:#x}: {}\n", s.sframe_start, e.name());
            Err(EINVAL)
        }
        Err(_) => {
            // Not resident at NMI or IRQ time is no fault of the section:
            // the pages are faulted in later.
            if state.nofault {
                bump(&mut state.sframe.faults);
                state.prefault = true;
                state.incomplete = true;
            } else {
                bump(&mut state.sframe.errors);
            }
            Err(EFAULT)
        }
    }
}

/// Notes, at NMI or IRQ time, a frame that no registration covers in an
/// address space whose files' tables are not all attached: the walk asks
/// for a deferred unwind that attaches them where it may sleep
/// (`state->prefault`), and is incomplete, so that a caller that defers
/// user stacks (`perf record --call-graph fp,defer`) takes that unwind's
/// stack instead. `ends`: the walk ends there (counted as a walk ended at
/// what it could not read), where a table may describe the frame once
/// attached, rather than guess its caller with the frame-pointer rule;
/// the walk driver decides. Returns `ends`.
pub(crate) fn attach_pending(state: &mut bindings::unwind_user_state, ends: bool) -> bool {
    state.prefault = true;
    state.incomplete = true;
    if ends {
        bump(&mut state.sframe.faults);
    }
    ends
}

/// Starts the walk of `state` with `mm`'s registry. A walk that finds the
/// rule cache empty (in a process walked for the first time, or since its
/// registry changed) looks its PCs up without probing the cache, the
/// first frame's and the callers' ([`next_usual`]).
pub(crate) fn start(mm: &SframeMm, state: &mut bindings::unwind_user_state) {
    state.sframe.generation = mm.gen();
    if mm.cache_is_empty() {
        state.sframe.hint = NEXT_LOOKUP;
    }
}

/// One SFrame step for the current task: describes the frame at
/// `state->ip` in `frame`, or steps over a signal frame. Returns what
/// `unwind_user_sframe_next()` returns to C: 0 with `frame` filled in, 1
/// after a signal frame, or a negative errno.
///
/// `-ENOENT` when no section covers the IP, or when the row cannot be
/// expressed but says the function keeps a frame pointer: the caller falls
/// back to the frame-pointer rule for this frame. Any other error ends the
/// walk, since the code was built without frame pointers: `-EINVAL` when
/// the row cannot be expressed, when no row describes an IP in a section's
/// text (and the section does not say its code keeps frame pointers), or
/// when the section turned out malformed (the registration is then
/// dropped), `-EFAULT` when the section or the code could not be read,
/// `-E2BIG` when the walk has read as much of its sections as it may.
///
/// A PC seen before is answered here, from the rule cache, with no call:
/// that is the steady state of a profiled process, and what keeps a step
/// near the cost of the frame-pointer step. Anything else is left to
/// [`next_usual`], out of line, so that this path saves no register;
/// so is every PC of a walk that the previous step found meeting new
/// return addresses (`UNWIND_USER_SFRAME_LOOKUP`), without the probe.
#[inline(always)]
pub(crate) fn next<D: Driver>(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
) -> c_int {
    if state.sframe.hint == NEXT_LOOKUP {
        return next_usual::<D>(mm, state, frame);
    }
    let (pc, adj) = lookup_pc(state);
    match mm.cached(pc, adj, state.sframe.generation) {
        Some(c) => take_cached(state, frame, c),
        None => next_usual::<D>(mm, state, frame),
    }
}

/// The step for what the rule cache holds, `c`.
#[inline(always)]
fn take_cached(
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
    c: Cached,
) -> c_int {
    match c {
        Cached::Rule(r) => {
            bump(&mut state.sframe.cached);
            *frame = r.frame();
            0
        }
        Cached::FramePointer | Cached::FramePointerInCode => {
            bump(&mut state.sframe.fallbacks);
            ENOENT.to_errno()
        }
        // A frame of the section's, whose answer was kept: cached.
        Cached::End => {
            bump(&mut state.sframe.cached);
            EINVAL.to_errno()
        }
    }
}

/// The PC to look `state->ip` up at, and whether it is a return address
/// minus one. A caller's IP is a return address, which may be the first
/// byte after the function (a call to a noreturn function): look up the
/// call. The top frame's IP, and one a signal interrupted, are exact. The
/// cache holds no PC below the first page: one that wrapped is refused by
/// the lookup.
#[inline(always)]
pub(crate) fn lookup_pc(state: &bindings::unwind_user_state) -> (usize, bool) {
    let adj = !(state.topmost || state.interrupted);
    (state.ip.wrapping_sub(usize::from(adj)), adj)
}

/// Counts a step that `c`, an answer other than a rule, ends, and returns
/// the error that says what it was: `-ENOENT` for the frame-pointer rule,
/// `-EINVAL` for the end of the walk ([`Cached::End`]).
fn not_a_rule(state: &mut bindings::unwind_user_state, c: Cached) -> Error {
    if c == Cached::End {
        bump(&mut state.sframe.frames);
        EINVAL
    } else {
        bump(&mut state.sframe.fallbacks);
        ENOENT
    }
}

/// How this walk reads the task's memory.
fn user_mem(state: &bindings::unwind_user_state) -> UserMem {
    if state.nofault {
        UserMem::NoFault
    } else {
        UserMem::Faultable
    }
}

/// [`next`] for a PC the rule cache does not hold, or was not asked for
/// (`UNWIND_USER_SFRAME_LOOKUP`): a file's table's usual row gives most
/// such PCs their answer at once, and caches it. Anything else is left to
/// [`next_uncached`], which this tail-calls, so that the cold step of a
/// file's PC runs none of the full lookup's prologue. It finds the PC
/// again rather than take it from [`next`], whose probe then saves no
/// register.
///
/// A return address the cache does not hold is a call path not seen
/// before, whose callers are most likely new too (a process sampled a few
/// times in its life, a new code path): on such a path nearly every probe
/// misses, so the next step looks its PC up at once
/// (`UNWIND_USER_SFRAME_LOOKUP`), which caches the rule. (The first
/// frame's PC, where the sample was taken, and one a signal interrupted,
/// are new far more often than their callers: the next step probes,
/// unless this one did not, on a new path or in an empty cache.) The
/// walk probes again from the first PC found cached: a usual row's rule
/// stored over itself, or, when not probed (`UNWIND_USER_SFRAME_LOOKUP`
/// was the hint), any other PC the cache holds, whose cached answer the
/// step then takes, as a probe would have.
#[inline(never)]
fn next_usual<D: Driver>(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
) -> c_int {
    // First: only the arguments live across the call that turns it off.
    let no_preempt = NoPreempt::new();
    let (pc, adj) = lookup_pc(state);
    let hint = next_hint(state.sframe.hint, adj, false);
    let Some((gen, answer, seen)) = mm.usual_rule(&no_preempt, pc, adj, &mut state.sframe.entry)
    else {
        drop(no_preempt);
        return next_uncached::<D>(mm, state, frame);
    };
    state.sframe.hint = if seen { NEXT_PROBE } else { hint };
    // A walk that meets a newer generation goes on with it, as
    // next_uncached() does.
    state.sframe.generation = gen;
    let Cached::Rule(r) = answer else {
        return not_a_rule(state, answer).to_errno();
    };
    bump(&mut state.sframe.frames);
    *frame = r.frame();
    0
}

/// The hint for the step after one with hint `hint`, at a PC that is a
/// return address minus one (`adj`) or not, whose answer was found
/// cached already (`seen`) or not (see [`next_usual`]).
#[inline(always)]
fn next_hint(hint: u8, adj: bool, seen: bool) -> u8 {
    if !seen && (adj || hint == NEXT_LOOKUP) {
        NEXT_LOOKUP
    } else {
        NEXT_PROBE
    }
}

/// [`next_usual`]'s step for a PC no usual row answers.
#[inline(never)]
fn next_uncached<D: Driver>(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
) -> c_int {
    let (pc, adj) = lookup_pc(state);
    let probed = state.sframe.hint != NEXT_LOOKUP;
    state.sframe.hint = next_hint(state.sframe.hint, adj, false);
    // Any other answer the cache holds is the one a probe would have
    // found (and at NMI time, one that needs no read of the code).
    if !probed {
        if let Some(c) = mm.cached(pc, adj, state.sframe.generation) {
            state.sframe.hint = NEXT_PROBE;
            return take_cached(state, frame, c);
        }
    }
    match lookup_step(mm, state, frame, pc, adj, Tables::MayAsk) {
        Ok(Step::NeedsTables) => D::needs_tables(mm, state, frame),
        r => step_result(r),
    }
}

/// [`next`] again for the frame of `state`, for the walk driver after a
/// try that needed tables ([`Driver`]): it attached them (or, at NMI or
/// IRQ time, found that none may come); `later` as in [`Tables::Asked`].
/// It does not ask again.
#[inline(never)]
pub(crate) fn retry(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
    later: bool,
) -> c_int {
    let (pc, adj) = lookup_pc(state);
    step_result(lookup_step(
        mm,
        state,
        frame,
        pc,
        adj,
        Tables::Asked { later },
    ))
}

/// What the step returns for `r`.
fn step_result(r: Result<Step>) -> c_int {
    match r {
        Ok(Step::Frame) => 0,
        Ok(Step::Signal) => 1,
        // Only a first try asks ([`next_uncached`]); a retry never does.
        Ok(Step::NeedsTables) => EINVAL.to_errno(),
        Err(e) => e.to_errno(),
    }
}

/// What [`next_uncached`] and [`retry`] do, with `?`: the registry's and
/// the section's answer for `pc`.
fn lookup_step(
    mm: &SframeMm,
    state: &mut bindings::unwind_user_state,
    frame: &mut bindings::unwind_user_frame,
    pc: usize,
    adj: bool,
    tables: Tables,
) -> Result<Step> {
    if pc < kernel::page::PAGE_SIZE {
        bump(&mut state.sframe.fallbacks);
        return Err(ENOENT);
    }
    let lookup = mm.lookup(pc);
    // Code no registration covers may be a file's whose table is not
    // attached to this address space yet: unless every file mapped
    // executable had its table attached, in this generation of the tables,
    // and none was mapped unsettled since, the walk driver attaches them
    // (or at NMI or IRQ time asks for that) and comes back, once.
    let attach_later = match tables {
        Tables::MayAsk
            if lookup.found.is_none() && !mm.attach.is_settled(attach_state::files_gen()) =>
        {
            return Ok(Step::NeedsTables);
        }
        Tables::MayAsk => false,
        Tables::Asked { later } => later,
    };
    // A walk that meets a newer generation goes on with it: its rules are
    // as current as the walk.
    state.sframe.generation = lookup.gen;
    let remember = |c| mm.remember(pc, adj, lookup.gen, c);
    let mem = user_mem(state);
    let found = lookup.found;
    // The row for `pc`, or `None` when no section describes it.
    let row = match &found {
        Some(f) => read_row(mm, f, state, mem, pc)?,
        None => None,
    };
    match row.as_ref().filter(|r| !r.signal_frame).and_then(rule) {
        Some(Rule::Frame(f)) => {
            bump(&mut state.sframe.frames);
            if let Some(r) = CachedRule::of_frame(&f) {
                remember(Cached::Rule(r));
            }
            *frame = f;
            Ok(Step::Frame)
        }
        Some(Rule::Outermost) => {
            bump(&mut state.sframe.frames);
            frame.outermost = true;
            Ok(Step::Frame)
        }
        // A signal frame: marked as such (V3), or a return address that is
        // the trampoline (which distribution libcs ship without SFrame, and
        // which may sit in a registered text that has no FDE for it).
        None if row.as_ref().is_some_and(|r| r.signal_frame) || at_sigreturn(state, mem)? => {
            if let Err(e) = sigframe::unwind(state, mem) {
                bump(&mut state.sframe.errors);
                return Err(e);
            }
            bump(&mut state.sframe.frames);
            Ok(Step::Signal)
        }
        // In a section's text that no row describes (code the linker
        // added, static libraries built without SFrame): unless the section
        // says its code keeps frame pointers, %rbp is just another
        // register there, and the frame-pointer rule would report whatever
        // it points at as the caller. The walk ends, as at an outermost
        // row: the section said so, nothing went wrong. (Where it says so,
        // the frame-pointer rule gets the frame.)
        None if row.is_none() && found.is_some() => {
            let c = found.map_or(Cached::End, |f| Cached::no_row(&f.header));
            remember(c);
            Err(not_a_rule(state, c))
        }
        // No section covers the frame, or its row cannot be expressed but
        // has the CFA on a frame pointer the function set up: the
        // frame-pointer rule gets the frame.
        None if row.as_ref().is_none_or(keeps_fp) => {
            // A return address no section covers: in a walk that may
            // sleep, whether it is code is found once, and kept, for the
            // frame-pointer rule that reads it again (fp_ra_in_code()).
            let in_code =
                found.is_some() || (adj && !state.nofault && in_executable_mapping(state.ip));
            let c = if in_code {
                Cached::FramePointerInCode
            } else {
                Cached::FramePointer
            };
            if !attach_later {
                remember(c);
            }
            Err(not_a_rule(state, c))
        }
        // A row the step cannot express for code without a frame pointer:
        // the walk ends rather than guess.
        None => {
            bump(&mut state.sframe.errors);
            Err(EINVAL)
        }
    }
}

#[kunit_tests(unwind_user_step)]
mod tests {
    use super::*;

    /// What [`Ask`]'s step returns where it needs tables.
    const NEEDS_TABLES: c_int = 2;

    /// A walk driver that only says that the step asked.
    struct Ask;

    impl Driver for Ask {
        fn needs_tables(
            _: &SframeMm,
            _: &mut bindings::unwind_user_state,
            _: &mut bindings::unwind_user_frame,
        ) -> c_int {
            NEEDS_TABLES
        }
    }

    /// A walk driver that steps again at once, as one that attached
    /// tables with more to come (`later`).
    struct RetryLater;

    impl Driver for RetryLater {
        fn needs_tables(
            mm: &SframeMm,
            state: &mut bindings::unwind_user_state,
            frame: &mut bindings::unwind_user_frame,
        ) -> c_int {
            retry(mm, state, frame, true)
        }
    }
    use crate::section::fixtures::{row, TEST_SECTION};
    use crate::section::{Section, SectionTable};
    use crate::usual::TextCode;
    use kernel::sync::Arc;
    use sframe::CfaRule;

    /// A frame rule as the tuple [`frame`] gives for a row.
    fn tuple(f: bindings::unwind_user_frame) -> (i32, i32, i32, bool) {
        (f.cfa_off, f.ra_off, f.fp_off, f.use_fp)
    }

    fn frame(r: &sframe::Row) -> Option<(i32, i32, i32, bool)> {
        match rule(r)? {
            Rule::Frame(f) => Some(tuple(f)),
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
        // The return address not saved: in x30 on arm64 (which the generic
        // step takes for an interrupted frame only); nowhere on x86.
        let leaf = row(sp(0), RegRule::SameValue, RegRule::SameValue);
        #[cfg(target_arch = "aarch64")]
        assert!(matches!(rule(&leaf), Some(Rule::Frame(f)) if f.ra_in_reg && f.cfa_off == 0));
        #[cfg(not(target_arch = "aarch64"))]
        assert!(rule(&leaf).is_none());
        // AArch64's frame record at the bottom of a 32-byte frame: x30
        // above x29, neither at CFA - 8.
        let record = row(sp(32), RegRule::CfaOffset(-24), RegRule::CfaOffset(-32));
        assert_eq!(frame(&record), Some((32, -24, -32, false)));
    }

    /// The test section as a file's table: text 0x11000-0x11100 (its
    /// function 0x11000-0x11020), its rows in kernel memory.
    fn test_file_table() -> Result<(Section, Arc<SectionTable>)> {
        file_table(&TEST_SECTION)
    }

    /// The section `section`, at 0x10000, as a file's table for the text
    /// 0x11000-0x11100, whose code has no trampoline.
    fn file_table(section: &[u8]) -> Result<(Section, Arc<SectionTable>)> {
        file_table_of_code(section, &mut TextCode::zeros(0x100))
    }

    /// [`file_table`], for the text whose code is `code`.
    fn file_table_of_code(
        section: &[u8],
        code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
    ) -> Result<(Section, Arc<SectionTable>)> {
        let s = Section {
            text_start: 0x11000,
            text_end: 0x11100,
            sframe_start: 0x10000,
            sframe_addr: 0x10000,
            sframe_len: u32::try_from(section.len())?,
            in_kernel: true,
        };
        let mut bytes = KVVec::new();
        bytes.extend_from_slice(section, GFP_KERNEL)?;
        let fdes = crate::validate::validate_in_kernel(&s, bytes, code)?.shared()?;
        Ok((s, fdes))
    }

    #[test]
    fn usual_rows_give_their_rule_at_once() -> Result {
        let (s, fdes) = test_file_table()?;
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(s, fdes)?;
        // Every row of the function is a usual one: the frame rule the
        // cold step takes at once is the one the full lookup's row gives,
        // and it is cached.
        for pc in 0x11000..0x11020 {
            // Searched first, a registration that is not there changes
            // nothing.
            let Some((gen, Cached::Rule(r), false)) =
                mm.usual_rule(&NoPreempt::new(), pc, true, &mut 7)
            else {
                return Err(ENOENT);
            };
            let row = mm.lookup(pc).found.ok_or(ENOENT)?.known_row();
            assert_eq!(Some(tuple(r.frame())), row.as_ref().and_then(frame));
            assert_eq!(mm.cached(pc, true, gen), Some(Cached::Rule(r)));
            // Again: the same rule, found cached already.
            assert_eq!(
                mm.usual_rule(&NoPreempt::new(), pc, true, &mut 0),
                Some((gen, Cached::Rule(r), true))
            );
        }
        // In the text, no function: the walk ends there (the section does
        // not say its code keeps frame pointers, and the signal trampoline
        // does not start there, the text's code says), which is cached.
        let gen = mm.gen();
        assert!(mm
            .lookup(0x11020)
            .found
            .is_some_and(|f| f.answer.fde.is_none()));
        assert_eq!(
            mm.usual_rule(&NoPreempt::new(), 0x11020, true, &mut 0),
            Some((gen, Cached::End, false))
        );
        assert_eq!(mm.cached(0x11020, true, gen), Some(Cached::End));
        // No registration: the full lookup answers.
        assert!(mm
            .usual_rule(&NoPreempt::new(), 0x11100, true, &mut 0)
            .is_none());
        Ok(())
    }

    #[test]
    fn a_return_address_not_cached_makes_the_next_step_look_up() -> Result {
        let (s, fdes) = test_file_table()?;
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(s, fdes)?;
        let gen = mm.gen();
        // The step of `ip` as user.c makes it after a step that left
        // `hint`: its result, the frame, what the next step does first,
        // and the frames it counted as cached and as looked up.
        let step = |ip, topmost, nofault, hint: u8| {
            let mut state = bindings::unwind_user_state {
                ip,
                topmost,
                nofault,
                sframe: bindings::unwind_user_sframe_state {
                    generation: gen,
                    hint,
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut frame = bindings::unwind_user_frame::default();
            let r = next::<Ask>(&mm, &mut state, &mut frame);
            let counts = (state.sframe.cached, state.sframe.frames);
            (r, tuple(frame), state.sframe.hint, counts)
        };
        // The usual rows' rule for a return address, as the full lookup's
        // row gives it.
        let rule = |ra: usize| -> Result<_> {
            let row = mm.lookup(ra - 1).found.ok_or(ENOENT)?.known_row();
            row.as_ref().and_then(frame).ok_or(ENOENT)
        };
        let (r5, r9) = (rule(0x11005)?, rule(0x11009)?);
        // A return address seen for the first time: found in the usual
        // rows, and the next step looks its PC up.
        assert_eq!(
            step(0x11005, false, false, NEXT_PROBE),
            (0, r5, NEXT_LOOKUP, (0, 1))
        );
        // Looked up, a new one: the same rule as a probing step finds, and
        // still looking up.
        assert_eq!(
            step(0x11009, false, false, NEXT_LOOKUP),
            (0, r9, NEXT_LOOKUP, (0, 1))
        );
        // Looked up, one cached already: the walk is back among PCs seen
        // before, and probes again.
        assert_eq!(
            step(0x11005, false, false, NEXT_LOOKUP),
            (0, r5, NEXT_PROBE, (0, 1))
        );
        assert_eq!(
            step(0x11009, false, false, NEXT_PROBE),
            (0, r9, NEXT_PROBE, (1, 0))
        );
        // The PC a sample interrupted, new far more often than its
        // callers: the next step probes; unless this step did not (the
        // first of a walk that found the cache empty).
        assert_eq!(step(0x1100c, true, false, NEXT_PROBE).2, NEXT_PROBE);
        assert_eq!(step(0x1100e, true, false, NEXT_LOOKUP).2, NEXT_LOOKUP);
        // Looked up, a PC no section covers, whose answer the cache knows:
        // taken, as a probe would, and the next step probes.
        let none = (0, 0, 0, false);
        mm.remember(0x40000 - 1, true, gen, Cached::FramePointerInCode);
        assert_eq!(
            step(0x40000, false, false, NEXT_LOOKUP),
            (ENOENT.to_errno(), none, NEXT_PROBE, (0, 0))
        );
        // Code in the text that no row describes: the usual rows end the
        // walk, with no read of the code (which a walk at NMI time may
        // not make), found cached already here.
        mm.remember(0x11020, true, gen, Cached::End);
        assert_eq!(
            step(0x11021, false, true, NEXT_LOOKUP),
            (EINVAL.to_errno(), none, NEXT_PROBE, (0, 1))
        );
        Ok(())
    }

    #[test]
    fn code_no_registration_covers_asks_for_tables_once() -> Result {
        let mut mm = SframeMm::new()?;
        let mm = mm.exclusive();
        let gen = mm.gen();
        let pc = 0x40_1000;
        let step = |pc: usize, nofault, tables: Option<bool>| {
            let mut state = bindings::unwind_user_state {
                ip: pc + 1,
                nofault,
                sframe: bindings::unwind_user_sframe_state {
                    generation: gen,
                    ..Default::default()
                },
                ..Default::default()
            };
            let mut frame = bindings::unwind_user_frame::default();
            let r = match tables {
                None => next::<Ask>(&mm, &mut state, &mut frame),
                Some(later) => retry(&mm, &mut state, &mut frame, later),
            };
            (r, state.sframe.fallbacks)
        };
        // Not settled: the step asks the walk driver for tables, at any
        // time, and counts nothing.
        assert_eq!(step(pc, false, None), (NEEDS_TABLES, 0));
        assert_eq!(step(pc, true, None), (NEEDS_TABLES, 0));
        // The retry does not ask again: the frame-pointer rule, cached
        // only if no later walk may find a table there. (At NMI time the
        // step would read the code first, to tell the signal trampoline,
        // which a kthread cannot.)
        assert_eq!(step(pc, false, Some(true)), (ENOENT.to_errno(), 1));
        assert_eq!(mm.cached(pc, true, gen), None);
        assert_eq!(step(pc, false, Some(false)), (ENOENT.to_errno(), 1));
        assert!(mm.cached(pc, true, gen).is_some());
        // Through a driver that steps again: the retry's answer, nothing
        // cached.
        let mut state = bindings::unwind_user_state {
            ip: pc + 0x201,
            sframe: bindings::unwind_user_sframe_state {
                generation: gen,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut frame = bindings::unwind_user_frame::default();
        assert_eq!(
            next::<RetryLater>(&mm, &mut state, &mut frame),
            ENOENT.to_errno()
        );
        assert_eq!(state.sframe.fallbacks, 1);
        assert_eq!(mm.cached(pc + 0x200, true, gen), None);
        // Settled: no question, at a PC not cached either.
        mm.attach
            .set_settled(attach_state::files_gen(), mm.attach.unsettled());
        assert_eq!(step(pc + 0x100, false, None), (ENOENT.to_errno(), 1));
        Ok(())
    }

    #[test]
    fn a_signal_trampolines_row_is_never_taken_as_a_frame_rule() -> Result {
        use crate::section::fixtures::TEST_SECTION_V3_SIGNAL;
        let (s, fdes) = file_table(&TEST_SECTION_V3_SIGNAL)?;
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(s, fdes)?;
        let gen = mm.gen();
        // The function before it has usual rows.
        assert!(matches!(
            mm.usual_rule(&NoPreempt::new(), 0x11005, true, &mut 0),
            Some((_, Cached::Rule(_), _))
        ));
        for pc in 0x11020..0x11030 {
            // The trampoline's row reads CFA = SP + 8, as at any
            // function's entry; but its caller's frame is a signal frame
            // (the FDE says so): the usual rows leave it to the full
            // lookup, whose row says so.
            assert_eq!(mm.usual_rule(&NoPreempt::new(), pc, true, &mut 0), None);
            let row = mm.lookup(pc).found.ok_or(ENOENT)?.known_row();
            assert!(row.is_some_and(|r| r.signal_frame));
            // The step, looking up or probing, steps over the signal frame
            // rather than take the row's rule: it reads the ucontext on the
            // stack, which a kthread cannot, and the walk ends there with
            // an error, nothing cached.
            for hint in [NEXT_LOOKUP, NEXT_PROBE] {
                let mut state = bindings::unwind_user_state {
                    ip: pc + 1,
                    sp: 0x7fff_0000,
                    sframe: bindings::unwind_user_sframe_state {
                        generation: gen,
                        hint,
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let mut frame = bindings::unwind_user_frame::default();
                assert_eq!(next::<Ask>(&mm, &mut state, &mut frame), EFAULT.to_errno());
                assert_eq!((state.sframe.errors, state.sframe.frames), (1, 0));
                assert_eq!(tuple(frame), (0, 0, 0, false));
                assert_eq!(mm.cached(pc, true, gen), None);
            }
        }
        Ok(())
    }

    #[test]
    fn code_no_row_describes_needs_no_read_where_the_file_says() -> Result {
        // A return address into the text past the function, where no row
        // is, at NMI or IRQ time, in a file whose code has no trampoline
        // there: the walk ends, as the section says, with no read of the
        // code (which a kthread's walk could not make), cached.
        let at_nmi = |mm: &SframeMm| {
            let mut state = bindings::unwind_user_state {
                ip: 0x11021,
                sframe: bindings::unwind_user_sframe_state {
                    generation: mm.gen(),
                    ..Default::default()
                },
                nofault: true,
                ..Default::default()
            };
            let mut frame = bindings::unwind_user_frame::default();
            let r = next::<Ask>(mm, &mut state, &mut frame);
            (r, state)
        };
        let (s, fdes) = test_file_table()?;
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(s, fdes)?;
        let (r, state) = at_nmi(&mm);
        assert_eq!(r, EINVAL.to_errno());
        assert!(!state.incomplete);
        assert_eq!((state.sframe.faults, state.sframe.frames), (0, 1));
        assert_eq!(mm.cached(0x11020, true, mm.gen()), Some(Cached::End));
        Ok(())
    }

    #[test]
    fn code_no_row_describes_at_nmi_time_is_left_to_the_deferred_walk() -> Result {
        // A file whose code could not be read when its table was built:
        // whether a PC no row describes is the signal trampoline takes a
        // read of the process's code.
        let unread = &mut TextCode {
            len: 0x100,
            read: |_: &mut [u8], _| Err(EIO),
        };
        let (s, fdes) = file_table_of_code(&TEST_SECTION, unread)?;
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(s, fdes)?;
        let gen = mm.gen();
        // A return address into the text past the function, where no row
        // is: the read of the code is one a kthread's walk cannot make.
        let mut state = bindings::unwind_user_state {
            ip: 0x11021,
            sframe: bindings::unwind_user_sframe_state {
                generation: gen,
                ..Default::default()
            },
            nofault: true,
            ..Default::default()
        };
        let mut frame = bindings::unwind_user_frame::default();
        // At NMI or IRQ time: the walk ends there, incomplete, and asks for
        // the deferred walk; nothing is cached.
        assert_eq!(next::<Ask>(&mm, &mut state, &mut frame), EFAULT.to_errno());
        assert!(state.incomplete && state.prefault);
        assert_eq!((state.sframe.faults, state.sframe.frames), (1, 0));
        assert_eq!(mm.cached(0x11020, true, gen), None);
        // Where a walk may fault: code that cannot be read is not the
        // trampoline, and the walk ends as the section says, cached.
        state.nofault = false;
        state.incomplete = false;
        assert_eq!(next::<Ask>(&mm, &mut state, &mut frame), EINVAL.to_errno());
        assert!(!state.incomplete);
        assert_eq!(state.sframe.frames, 1);
        assert_eq!(mm.cached(0x11020, true, gen), Some(Cached::End));
        Ok(())
    }

    #[test]
    fn the_return_address_check_keeps_the_next_steps_answer() -> Result {
        use crate::section::fixtures::{none, sec};
        let mut mm = SframeMm::new()?;
        let mut mm = mm.exclusive();
        mm.add(sec(0x11000, 0x1000), none()?)?;
        let gen = mm.gen();
        let mut state = bindings::unwind_user_state {
            sframe: bindings::unwind_user_sframe_state {
                generation: gen,
                ..Default::default()
            },
            ..Default::default()
        };
        // Whether `ra` is code, and whether the next step's answer is kept.
        let check = |state: &mut bindings::unwind_user_state, ra| {
            state.sframe.hint = NEXT_PROBE;
            (fp_ra_in_code(&mm, state, ra), state.sframe.hint == NEXT_FP)
        };
        // Cached as code the frame-pointer rule unwinds: code, and the
        // next step, whose PC it is, is the frame-pointer rule's.
        mm.remember(0x20000 - 1, true, gen, Cached::FramePointerInCode);
        assert_eq!(check(&mut state, 0x20000), (true, true));
        // Cached otherwise, as a PC that is not a return address, or not
        // cached: the next step looks for itself.
        mm.remember(0x30000 - 1, true, gen, Cached::End);
        assert_eq!(check(&mut state, 0x30000), (true, false));
        mm.remember(0x40000, false, gen, Cached::FramePointerInCode);
        assert_eq!(check(&mut state, 0x40001), (false, false));
        assert_eq!(check(&mut state, 0x11800), (true, false));
        // Not code: no registration, and a kthread maps nothing.
        assert_eq!(check(&mut state, 0x50000), (false, false));
        // The frame-pointer rule, kept by a walk at NMI time: still not
        // known to be code here; in a registered text it is, and is kept
        // as such.
        mm.remember(0x60000 - 1, true, gen, Cached::FramePointer);
        assert_eq!(check(&mut state, 0x60000), (false, false));
        mm.remember(0x11900 - 1, true, gen, Cached::FramePointer);
        assert_eq!(check(&mut state, 0x11900), (true, true));
        assert_eq!(
            mm.cached(0x11900 - 1, true, gen),
            Some(Cached::FramePointerInCode)
        );
        // At NMI or IRQ time nothing is probed.
        state.nofault = true;
        assert_eq!(check(&mut state, 0x20000), (true, false));
        assert_eq!(check(&mut state, 0x50000), (true, false));
        Ok(())
    }

    #[test]
    fn decoder_in_kernel() {
        let s = sframe::Section::new(&TEST_SECTION[..], TEST_SECTION.len() as u32, 0x10000);
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
        for len in 0..TEST_SECTION.len() {
            let bytes = &TEST_SECTION[..len];
            let ok =
                sframe::Section::new(bytes, len as u32, 0x10000).and_then(|mut s| s.validate());
            assert!(ok.is_err());
        }
    }
}

/// The usual rows against the full lookup, whose rows the step translates
/// into rules ([`rule`]).
#[kunit_tests(unwind_user_usual_rows)]
mod usual_rows_tests {
    use super::rule;
    use crate::rule_cache::{Cached, CachedRule};
    use crate::section::fixtures::*;
    use crate::section::{KnownRow, SectionTable};
    use crate::usual::TextCode;
    use kernel::{alloc::KVVec, error::code::EINVAL, prelude::*};

    /// A function of a made-up table: start, size, PC mask, rows.
    type Func<'a> = (u64, u32, bool, &'a [(u32, &'a sframe::Row)]);

    /// The file table of `funcs` (sorted, none overlapping, as validation
    /// takes them), of a section that says its code keeps frame pointers or
    /// not, for the text whose code is `code`.
    fn table_of(
        funcs: &[Func<'_>],
        keeps_fp: bool,
        code: &mut TextCode<impl FnMut(&mut [u8], u64) -> Result>,
    ) -> Result<SectionTable> {
        let mut hdr = header()?;
        if keeps_fp {
            hdr.flags |= sframe::F_FRAME_POINTER;
        }
        let mut sec_bytes =
            sframe::Section::new(&TEST_SECTION[..], TEST_SECTION.len() as u32, 0x10000)
                .map_err(|_| EINVAL)?;
        let fde = sec_bytes.fde(0).map_err(|_| EINVAL)?;
        let mut packed = KVVec::new();
        let mut row_first = KVVec::new();
        let mut rows = KVVec::new();
        for &(start, size, mask, fn_rows) in funcs {
            let f = sframe::Fde {
                func_start: 0x11000 + start,
                func_size: size,
                num_fres: fn_rows.len() as u32,
                info: if mask { fde.info | 0x10 } else { fde.info },
                rep_size: 16,
                ..fde
            };
            packed.push(f.pack(0x11000).ok_or(EINVAL)?, GFP_KERNEL)?;
            row_first.push(rows.len() as u32, GFP_KERNEL)?;
            for &(at, r) in fn_rows {
                rows.push(sframe::PackedRow::pack(&hdr, at, r), GFP_KERNEL)?;
            }
        }
        SectionTable::from_parts(hdr, packed, KVVec::new()).with_rows(row_first, rows, code)
    }

    /// [`table_of`] `funcs`, with no trampoline in the text's code,
    /// with every offset from 0 to past the last function checked, and
    /// some far past it: its usual rows say what the step gives the full
    /// lookup's answer, where they answer.
    fn usual_rows_of(funcs: &[Func<'_>], keeps_fp: bool) -> Result<SectionTable> {
        let fdes = table_of(funcs, keeps_fp, &mut TextCode::zeros(0x1_0000))?;
        let hdr = fdes.header();
        // What the step gives the full lookup's answer: the rule of its row,
        // if the rule cache can hold it (a PLT's rows are left to the full
        // lookup); where no row describes the PC, the walk's end or the
        // frame-pointer rule, as the header says.
        let no_row = Some(if keeps_fp {
            Cached::FramePointerInCode
        } else {
            Cached::End
        });
        let full = |off| {
            let answer = fdes.answer(off);
            let Some((i, f)) = answer.fde else {
                return no_row;
            };
            if f.pc_type() != sframe::PcType::Inc {
                return None;
            }
            let fde = f.unpack(hdr.version, 0, i).ok()?;
            let row = match answer.known {
                KnownRow::Row(r) => r.unpack(&hdr, &fde)?,
                KnownRow::Uncovered => return no_row,
                KnownRow::Read => return None,
            };
            if row.signal_frame {
                return None;
            }
            let super::Rule::Frame(r) = rule(&row)? else {
                return None;
            };
            let rule = CachedRule::of_frame(&r)?;
            rule.word().map(|_| Cached::Rule(rule))
        };
        let end = funcs
            .iter()
            .map(|f| f.0 + u64::from(f.1))
            .max()
            .unwrap_or(0);
        let far = [0x14000, 0xffff_fff0, 0x1_0000_0000, u64::MAX].map(|off| end.max(off));
        // Twice: the second time, each answer comes from the table's cache
        // of answers, or from the rows if a later offset took its slot.
        for _ in 0..2 {
            for off in Iterator::chain(0..end + 0x40, far) {
                let word = fdes.usual().word(off);
                let (usual, full) = (word.map(Cached::from_word), full(off));
                if usual != full {
                    pr_err!("at {off:#x}: {usual:?}, not {full:?}, in {funcs:?}\n");
                }
                assert_eq!(usual, full);
                // Kept, for an offset the cache holds (below 4 GiB).
                if off >> 32 == 0 {
                    assert_eq!(fdes.usual().kept(off), word);
                }
            }
        }
        Ok(fdes)
    }

    /// The rows of [`usual_rows_of`]'s tests: usual ones, and ones the
    /// rule cache cannot hold or the one pass leaves to the full lookup.
    fn test_rows() -> [sframe::Row; 6] {
        use sframe::{Base, CfaRule, RegRule};
        let row = |base, offset, ra, fp| {
            let cfa = CfaRule {
                base,
                offset,
                deref: false,
            };
            row(cfa, ra, fp)
        };
        let ra = RegRule::CfaOffset(-8);
        [
            row(Base::Sp, 8, ra, RegRule::SameValue),
            row(Base::Sp, 16, ra, RegRule::CfaOffset(-16)),
            row(Base::Fp, 16, ra, RegRule::CfaOffset(-16)),
            row(Base::Sp, 12, ra, RegRule::SameValue),
            row(Base::Sp, 8, RegRule::Undefined, RegRule::SameValue),
            row(Base::Sp, 16, ra, RegRule::CfaOffset(0)),
        ]
    }

    #[test]
    fn usual_rows_are_what_the_full_lookup_finds() -> Result {
        let test_rows = test_rows();
        let [entry, pushed, framed, odd, outer, fp_at_cfa] = &test_rows;
        // (start, size, PC mask, rows): a gap before a function's first
        // row, between functions, after one that ends where a function of
        // size 0 starts, a PLT's repeated rows, a function of size 0 and
        // one with rows starting together, one far away, one of size 0
        // last (validation takes all of these; no two overlap).
        let funcs: [Func<'_>; 9] = [
            (
                0x10,
                0x30,
                false,
                &[(0, entry), (1, pushed), (4, framed), (0x20, odd)],
            ),
            (0x40, 0, false, &[]),
            (0x50, 0x20, false, &[(4, entry), (0x10, outer)]),
            (0x70, 0x40, true, &[(0, entry), (6, pushed)]),
            (0x100, 0x10, false, &[(0, entry)]),
            (0x110, 0, false, &[]),
            (0x110, 0x10, false, &[(0, pushed), (8, fp_at_cfa)]),
            (0x10000, 0x10, false, &[(0, framed)]),
            (0x10010, 0, false, &[]),
        ];
        assert!(usual_rows_of(&funcs, true).is_ok());
        let fdes = usual_rows_of(&funcs, false)?;
        // The usual rules, as the step would take them.
        let rule = |cfa_off, fp_off, use_fp| {
            Some(Cached::Rule(CachedRule {
                cfa_off,
                ra_off: -8,
                fp_off,
                use_fp,
            }))
        };
        let (entry_rule, pushed_rule, framed_rule) =
            (rule(8, 0, false), rule(16, -16, false), rule(16, -16, true));
        let end = Some(Cached::End);
        let at = |off| fdes.usual().word(off).map(Cached::from_word);
        assert_eq!(
            (at(0), at(0x10), at(0x11), at(0x14)),
            (end, entry_rule, pushed_rule, framed_rule)
        );
        // The odd row; after a function, before a function of size 0.
        assert_eq!((at(0x30), at(0x40), at(0x4f)), (None, end, end));
        assert_eq!((at(0x50), at(0x54), at(0x60)), (end, entry_rule, None));
        assert_eq!((at(0x76), at(0xb0), at(0x100)), (None, end, entry_rule));
        assert_eq!((at(0x110), at(0x118), at(0x120)), (pushed_rule, None, end));
        assert_eq!((at(0x10000), at(0x10010)), (framed_rule, end));
        // A section with no function: no row describes its text.
        let empty = usual_rows_of(&[], false)?;
        assert_eq!(empty.usual().word(0x10).map(Cached::from_word), end);
        // No rows kept decoded (a registration's): nothing usual.
        assert_eq!(none()?.usual().word(0x10), None);
        Ok(())
    }

    #[test]
    fn a_trampoline_where_no_row_is_left_to_the_full_lookup() -> Result {
        use crate::sigframe::RT_SIGRETURN;
        let test_rows = test_rows();
        let entry = &test_rows[0];
        // Two functions; no row describes the text before, between and
        // after them.
        let funcs: [Func<'_>; 2] = [
            (0x10, 0x30, false, &[(0, entry)]),
            (0x100, 0x10, false, &[(0, entry)]),
        ];
        let mut text = [0u8; 0x200];
        // A trampoline between them, one in a function, and one starting
        // the second function (a return address into it, minus one, is
        // between them).
        for at in [0x80, 0x20, 0x100] {
            text.get_mut(at..at + RT_SIGRETURN.len())
                .ok_or(EINVAL)?
                .copy_from_slice(&RT_SIGRETURN);
        }
        let read = |buf: &mut [u8], off: u64| -> Result {
            let off = usize::try_from(off)?;
            buf.copy_from_slice(text.get(off..off + buf.len()).ok_or(EINVAL)?);
            Ok(())
        };
        let fdes = table_of(&funcs, false, &mut TextCode { len: 0x200, read })?;
        let at = |off| fdes.usual().word(off).map(Cached::from_word);
        let (end, entry_rule) = (
            Some(Cached::End),
            Some(Cached::Rule(CachedRule {
                cfa_off: 8,
                ra_off: -8,
                fp_off: 0,
                use_fp: false,
            })),
        );
        // Where the trampoline starts, and a byte before: the full lookup,
        // which reads the process's code there. Anywhere else, the end of
        // the walk, with no read.
        assert_eq!((at(0x40), at(0x7e), at(0x7f)), (end, end, None));
        assert_eq!((at(0x80), at(0x81), at(0xfe)), (None, end, end));
        assert_eq!((at(0xff), at(0x100), at(0x110)), (None, entry_rule, end));
        // In a function: its row.
        assert_eq!(
            (at(0x1f), at(0x20), at(0x21)),
            (entry_rule, entry_rule, entry_rule)
        );
        assert_eq!((at(0), at(0x10)), (end, entry_rule));

        // Code that cannot be read: every PC no row describes is left to
        // the full lookup; a fatal signal or no memory, the caller's.
        let fail = |e: Error| TextCode {
            len: 0x200,
            read: move |_: &mut [u8], _| Err(e),
        };
        let fdes = table_of(&funcs, false, &mut fail(EIO))?;
        let at = |off| fdes.usual().word(off).map(Cached::from_word);
        assert_eq!((at(0), at(0x40), at(0x110)), (None, None, None));
        assert_eq!((at(0x10), at(0x100)), (entry_rule, entry_rule));
        for e in [ENOMEM, EINTR] {
            assert_eq!(table_of(&funcs, false, &mut fail(e)).err(), Some(e));
        }
        // A text of 4 GiB or more: no usual rows. One just under, with
        // no function: more code where no row describes it than is read
        // (its first 4 MiB), all left to the full lookup.
        let fdes = table_of(&[], false, &mut TextCode::zeros(u64::MAX))?;
        assert_eq!(fdes.usual().word(0x10), None);
        let fdes = table_of(&[], false, &mut TextCode::zeros(u64::from(u32::MAX)))?;
        assert_eq!(fdes.usual().word(0x10), None);
        let fdes = table_of(&[], false, &mut TextCode::zeros(4 << 20))?;
        assert_eq!(fdes.usual().word(0x10).map(Cached::from_word), end);
        Ok(())
    }

    /// Made-up tables by the hundred: functions of random sizes (0
    /// included), gaps and PC masks, rows of every kind at random
    /// offsets, some of them shared; every offset checked as above.
    #[test]
    fn usual_rows_of_random_tables() -> Result {
        let test_rows = test_rows();
        // xorshift64: the same tables every run.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        for _ in 0..200 {
            // Each function's rows, at most 6: (offset, row).
            let mut all_rows = [[(0u32, &test_rows[0]); 6]; 12];
            let mut shape = [(0u64, 0u32, false, 0usize); 12];
            let mut at = next(3) * 8;
            let nfuncs = 1 + next(12) as usize;
            for (k, f) in shape.iter_mut().enumerate().take(nfuncs) {
                let size = if next(6) == 0 { 0 } else { 1 + next(80) as u32 };
                let mask = size >= 16 && next(8) == 0;
                // A PLT's rows are offsets in its 16-byte block.
                let span = if mask { 16 } else { size.max(1) };
                let n = if size == 0 { 0 } else { next(7) as usize };
                let mut off = next(2) as u32 * next(u64::from(span)) as u32;
                let mut nrows = 0;
                for r in all_rows[k].iter_mut().take(n) {
                    if off >= span {
                        break;
                    }
                    *r = (off, &test_rows[next(6) as usize]);
                    nrows += 1;
                    off += 1 + next(12) as u32;
                }
                *f = (at, size, mask, nrows);
                // The next one where this one ends, or after a gap.
                at += u64::from(size) + if next(2) == 0 { 0 } else { next(40) };
            }
            let mut funcs: KVVec<Func<'_>> = KVVec::new();
            for (k, &(start, size, mask, nrows)) in shape.iter().enumerate().take(nfuncs) {
                let rows = all_rows.get(k).and_then(|r| r.get(..nrows)).ok_or(EINVAL)?;
                funcs.push((start, size, mask, rows), GFP_KERNEL)?;
            }
            usual_rows_of(&funcs, next(2) == 0)?;
        }
        Ok(())
    }
}
