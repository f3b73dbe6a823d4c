// SPDX-License-Identifier: GPL-2.0

//! Benchmark trigger for the user unwinders (debug only).
//!
//! Writing `<unwinder> <iterations>` to `/sys/kernel/debug/unwind_user/bench`
//! unwinds the writer's own user stack, as it was at its `write()` system
//! call, `iterations` times with one unwinder, and times that with the
//! monotonic clock: `sframe` is SFrame with the frame-pointer fallback (what
//! profiling uses), `fp` the frame-pointer walker alone (the kernel without
//! this series), `sframe-nofault` the sample-time walk of
//! `perf_callchain_user()` (`unwind_user_nofault()`, page faults disabled,
//! `copy_from_user_nmi()`). Reading the file gives the last result and the
//! frames found, so that a benchmark can check the unwinders walked the same
//! stack.
//!
//! Nothing here is on any unwind path: the buffer is allocated before the
//! clock starts.

use core::fmt;
use kernel::{
    bindings,
    debugfs::{Dir, File},
    error::to_result,
    ffi::{c_int, c_ulong, c_void},
    new_mutex,
    prelude::*,
    sync::Mutex,
    task::Task,
    time::{Instant, Monotonic},
    uaccess::UserSliceReader,
};

module! {
    type: UnwindUserBench,
    name: "unwind_user_bench",
    authors: ["unwind_user developers"],
    description: "Benchmark trigger for the SFrame and frame-pointer user unwinders",
    license: "GPL",
}

/// Frames kept per unwind, as many as the deferred unwinder's cache holds.
const MAX_FRAMES: usize = 512;
/// Frames shown when the file is read.
const SHOWN_FRAMES: usize = 64;

#[derive(Clone, Copy)]
struct Measurement {
    unwinder: &'static str,
    iterations: u64,
    frames: usize,
    ns: u64,
    ips: [c_ulong; SHOWN_FRAMES],
}

fn show(m: &Mutex<Option<Measurement>>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let Some(m) = *m.lock() else {
        return writeln!(f, "none");
    };
    let unwound = m.iterations.saturating_mul(m.frames as u64).max(1);
    write!(
        f,
        "unwinder {} iterations {} frames {} ns {} ps_per_frame {} ips",
        m.unwinder,
        m.iterations,
        m.frames,
        m.ns,
        m.ns.saturating_mul(1000) / unwound
    )?;
    for ip in m.ips.iter().take(m.frames) {
        write!(f, " {ip:#x}")?;
    }
    writeln!(f)
}

/// Runs `walk` `iterations` times: the frames of the last walk, and the ns.
fn time(iterations: u64, mut walk: impl FnMut() -> Result<usize>) -> Result<(usize, u64)> {
    let mut frames = 0;
    let start = Instant::<Monotonic>::now();
    for _ in 0..iterations {
        frames = walk()?;
    }
    Ok((frames, start.elapsed().as_nanos() as u64))
}

/// `unwind_user_types()`: the deferred unwinder's walk.
fn faultable_walk(entries: &mut [c_ulong], types: u32) -> Result<usize> {
    let mut trace = bindings::unwind_stacktrace {
        nr: 0,
        flags: 0,
        entries: entries.as_mut_ptr(),
    };
    // SAFETY: `trace.entries` has room for `entries.len()` entries; we are in
    // the writer's task context, where user memory may be faulted in.
    to_result(unsafe { bindings::unwind_user_types(&mut trace, entries.len() as u32, types) })?;
    Ok(trace.nr as usize)
}

/// Where `nofault_walk()` collects frames.
struct Frames<'a> {
    entries: &'a mut [c_ulong],
    nr: usize,
}

/// `unwind_user_nofault()`'s store callback: 0 while there is room.
///
/// # Safety
///
/// `data` must point to a `Frames`, used by nothing else during the call.
unsafe extern "C" fn store(data: *mut c_void, ip: c_ulong) -> c_int {
    // SAFETY: The caller's contract.
    let f = unsafe { &mut *data.cast::<Frames<'_>>() };
    match f.entries.get_mut(f.nr) {
        Some(e) => {
            *e = ip;
            f.nr += 1;
            0
        }
        None => -1,
    }
}

/// `unwind_user_nofault()` as `perf_callchain_user()` calls it, on the
/// registers of this task's system call.
fn nofault_walk(entries: &mut [c_ulong]) -> Result<usize> {
    // SAFETY: The current task's registers at its kernel entry.
    let regs = unsafe { bindings::task_pt_regs(Task::current_raw()) };
    // SAFETY: `regs` is valid; entries[0] is the start IP, as perf stores it.
    let ip = unsafe { bindings::instruction_pointer(regs) };
    let (first, rest) = entries.split_first_mut().ok_or(EINVAL)?;
    *first = ip as c_ulong;
    let mut f = Frames {
        entries: rest,
        nr: 0,
    };
    // SAFETY: Faults are disabled around the walk, as perf does; `store`
    // gets `f`, which outlives the call.
    let r = unsafe {
        bindings::pagefault_disable();
        let r = bindings::unwind_user_nofault(regs, Some(store), (&raw mut f).cast());
        bindings::pagefault_enable();
        r
    };
    to_result(r)?;
    Ok(f.nr + 1)
}

fn run(m: &Mutex<Option<Measurement>>, reader: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    let n = reader.len();
    let cmd = buf.get_mut(..n).ok_or(EINVAL)?;
    reader.read_slice(cmd)?;
    let cmd = core::str::from_utf8(cmd).map_err(|_| EINVAL)?;
    let mut words = cmd.split_whitespace();
    // `types` 0: the sample-time walk, which picks its own.
    let (unwinder, types) = match words.next() {
        Some("sframe") => (
            "sframe",
            bindings::unwind_user_type_UNWIND_USER_TYPE_SFRAME
                | bindings::unwind_user_type_UNWIND_USER_TYPE_FP,
        ),
        Some("fp") => ("fp", bindings::unwind_user_type_UNWIND_USER_TYPE_FP),
        Some("sframe-nofault") => ("sframe-nofault", 0),
        _ => return Err(EINVAL),
    };
    let iterations: u64 = words
        .next()
        .and_then(|w| w.parse().ok())
        .filter(|&i| (1..=10_000_000).contains(&i))
        .ok_or(EINVAL)?;

    let mut entries = KVec::from_elem(0 as c_ulong, MAX_FRAMES, GFP_KERNEL)?;
    let frames = if types == 0 {
        time(iterations, || nofault_walk(&mut entries))
    } else {
        time(iterations, || faultable_walk(&mut entries, types))
    };
    let (frames, ns) = frames?;
    let mut ips = [0; SHOWN_FRAMES];
    for (d, s) in ips.iter_mut().zip(entries.iter().take(frames)) {
        *d = *s;
    }
    *m.lock() = Some(Measurement {
        unwinder,
        iterations,
        frames,
        ns,
        ips,
    });
    Ok(())
}

struct UnwindUserBench {
    _file: Pin<KBox<File<Mutex<Option<Measurement>>>>>,
    _dir: Dir,
}

impl kernel::Module for UnwindUserBench {
    fn init(_module: &'static kernel::ThisModule) -> Result<Self> {
        let dir = Dir::new(c"unwind_user");
        let file = KBox::pin_init(
            dir.read_write_callback_file(c"bench", new_mutex!(None), &show, &run),
            GFP_KERNEL,
        )?;
        Ok(Self {
            _file: file,
            _dir: dir,
        })
    }
}
