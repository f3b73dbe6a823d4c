// SPDX-License-Identifier: GPL-2.0

//! The signal frame as the kernel builds it for a handler
//! (`arch/x86/kernel/signal_64.c`, `arch/arm64/kernel/signal.c`): the
//! trampoline a handler returns to, and the interrupted registers in the
//! `ucontext` the kernel saved.

use crate::usermem::UserMem;
use core::mem::offset_of;
use kernel::{
    bindings,
    error::code::{EFAULT, EINVAL},
    prelude::*,
};

/// x86-64 `rt_sigreturn` trampoline, `mov $15,%rax; syscall`: glibc's and
/// musl's `__restore_rt`, where a signal handler returns to.
#[cfg(target_arch = "x86_64")]
pub(crate) const RT_SIGRETURN: [u8; 9] = [0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05];

/// arm64 `rt_sigreturn` trampoline, `mov x8, #139; svc #0`: the vDSO's
/// `__kernel_rt_sigreturn`, where a handler returns to (glibc gives no
/// restorer of its own on arm64).
#[cfg(target_arch = "aarch64")]
pub(crate) const RT_SIGRETURN: [u8; 8] = [0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4];

/// Where the interrupted registers are, from the stack pointer at the
/// trampoline, and their offsets in it: on x86-64 the handler's return
/// popped `pretcode`, so the stack pointer is the address of the
/// `ucontext`.
#[cfg(target_arch = "x86_64")]
mod layout {
    use super::*;

    pub(super) const MCONTEXT: usize = offset_of!(bindings::ucontext, uc_mcontext);
    pub(super) const IP: usize = offset_of!(bindings::sigcontext_64, ip);
    pub(super) const SP: usize = offset_of!(bindings::sigcontext_64, sp);
    pub(super) const FP: usize = offset_of!(bindings::sigcontext_64, bp);
}

/// ... on arm64 the stack pointer is the address of `struct rt_sigframe`,
/// the `siginfo` and then the `ucontext` (`arch/arm64/kernel/signal.c`);
/// x29 is the frame pointer.
#[cfg(target_arch = "aarch64")]
mod layout {
    use super::*;

    /// `struct rt_sigframe` of `arch/arm64/kernel/signal.c`.
    #[repr(C)]
    struct RtSigframe {
        info: bindings::siginfo,
        uc: bindings::ucontext,
    }

    const REGS: usize = offset_of!(bindings::sigcontext, regs);
    const WORD: usize = size_of::<u64>();

    pub(super) const MCONTEXT: usize =
        offset_of!(RtSigframe, uc) + offset_of!(bindings::ucontext, uc_mcontext);
    pub(super) const IP: usize = offset_of!(bindings::sigcontext, pc);
    pub(super) const SP: usize = offset_of!(bindings::sigcontext, sp);
    pub(super) const FP: usize = REGS + 29 * WORD;
    pub(super) const LR: usize = REGS + 30 * WORD;
}

/// Steps over a signal frame: when the handler returned into the
/// trampoline, the stack pointer locates the `ucontext` the kernel saved,
/// whose `uc_mcontext` holds the interrupted registers.
pub(crate) fn unwind(state: &mut bindings::unwind_user_state, mem: UserMem) -> Result {
    // After a frame-pointer step on arm64 the SP is the frame record's
    // address plus 16, not the handler's caller's SP: the `rt_sigframe` is
    // not there, and what would be read as its registers is the handler's
    // own frame. The record cannot say where the signal frame is (its
    // size varies with the CPU's extra state).
    #[cfg(target_arch = "aarch64")]
    if state.sp_unknown {
        return Err(EINVAL);
    }
    let mc = state.sp.checked_add(layout::MCONTEXT).ok_or(EFAULT)?;
    let reg = |off: usize| mem.read_word(mc.checked_add(off).ok_or(EFAULT)?);
    let ip = reg(layout::IP)?;
    let sp = reg(layout::SP)?;
    let fp = reg(layout::FP)?;
    if ip == 0 || sp == state.sp {
        return Err(EINVAL);
    }
    // Where the interrupted function keeps its return address until it
    // saves it (`ra_in_reg` rows).
    #[cfg(target_arch = "aarch64")]
    {
        state.ra_reg = reg(layout::LR)?;
    }
    state.ip = ip;
    state.sp = sp;
    state.fp = fp;
    // The next IP was interrupted, not called from: look it up as is.
    state.interrupted = true;
    Ok(())
}
