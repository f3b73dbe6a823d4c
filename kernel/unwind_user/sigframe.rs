// SPDX-License-Identifier: GPL-2.0

//! The x86-64 signal frame as the kernel builds it for a handler
//! (`arch/x86/kernel/signal_64.c`): the trampoline a handler returns to,
//! and the interrupted registers in the `ucontext` above it.

use crate::usermem::UserMem;
use kernel::{
    bindings,
    error::code::{EFAULT, EINVAL},
    prelude::*,
};

/// x86-64 `rt_sigreturn` trampoline, `mov $15,%rax; syscall`: glibc's and
/// musl's `__restore_rt`, where a signal handler returns to.
pub(crate) const RT_SIGRETURN: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];

/// Steps over a signal frame: when the handler returned into the
/// trampoline it popped `pretcode`, so the stack pointer is the address of
/// the `ucontext` the kernel saved, whose `uc_mcontext` holds the
/// interrupted registers.
pub(crate) fn unwind(state: &mut bindings::unwind_user_state, mem: UserMem) -> Result {
    use core::mem::offset_of;
    let mc = state
        .sp
        .checked_add(offset_of!(bindings::ucontext, uc_mcontext))
        .ok_or(EFAULT)?;
    let reg = |off: usize| mem.read_word(mc.checked_add(off).ok_or(EFAULT)?);
    let ip = reg(offset_of!(bindings::sigcontext_64, ip))?;
    let sp = reg(offset_of!(bindings::sigcontext_64, sp))?;
    let fp = reg(offset_of!(bindings::sigcontext_64, bp))?;
    if ip == 0 || sp == state.sp {
        return Err(EINVAL);
    }
    state.ip = ip;
    state.sp = sp;
    state.fp = fp;
    // The next IP was interrupted, not called from: look it up as is.
    state.interrupted = true;
    Ok(())
}
