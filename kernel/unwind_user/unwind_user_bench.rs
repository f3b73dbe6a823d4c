// SPDX-License-Identifier: GPL-2.0

//! Benchmark trigger for the user unwinders (debug only).
//!
//! Writing `<unwinder> <iterations>` to `/sys/kernel/debug/unwind_user/bench`
//! unwinds the writer's own user stack, as it was at its `write()` system
//! call, `iterations` times with one unwinder, and times that with the
//! monotonic clock: `sframe` is SFrame with the frame-pointer fallback (what
//! profiling uses), `fp` the frame-pointer walker alone (the kernel without
//! this series). Reading the file gives the last result and the frames found,
//! so that a benchmark can check both unwinders walked the same stack.
//!
//! Nothing here is on any unwind path: the buffer is allocated before the
//! clock starts.

use core::fmt;
use kernel::{
    bindings,
    debugfs::{Dir, File},
    ffi::c_ulong,
    new_mutex,
    prelude::*,
    sync::Mutex,
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

fn run(m: &Mutex<Option<Measurement>>, reader: &mut UserSliceReader) -> Result {
    let mut buf = [0u8; 64];
    let n = reader.len();
    let cmd = buf.get_mut(..n).ok_or(EINVAL)?;
    reader.read_slice(cmd)?;
    let cmd = core::str::from_utf8(cmd).map_err(|_| EINVAL)?;
    let mut words = cmd.split_whitespace();
    let (unwinder, types) = match words.next() {
        Some("sframe") => (
            "sframe",
            bindings::unwind_user_type_UNWIND_USER_TYPE_SFRAME
                | bindings::unwind_user_type_UNWIND_USER_TYPE_FP,
        ),
        Some("fp") => ("fp", bindings::unwind_user_type_UNWIND_USER_TYPE_FP),
        _ => return Err(EINVAL),
    };
    let iterations: u64 = words
        .next()
        .and_then(|w| w.parse().ok())
        .filter(|&i| (1..=10_000_000).contains(&i))
        .ok_or(EINVAL)?;

    let mut entries = KVec::from_elem(0 as c_ulong, MAX_FRAMES, GFP_KERNEL)?;
    let mut trace = bindings::unwind_stacktrace {
        nr: 0,
        entries: entries.as_mut_ptr(),
    };
    let start = Instant::<Monotonic>::now();
    for _ in 0..iterations {
        // SAFETY: `trace.entries` has room for `MAX_FRAMES` entries; we are
        // in the writer's task context, where user memory may be faulted in.
        unsafe { bindings::unwind_user_types(&mut trace, MAX_FRAMES as u32, types) };
    }
    let ns = start.elapsed().as_nanos() as u64;

    let frames = trace.nr as usize;
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
