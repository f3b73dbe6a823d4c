/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _ASM_ARM64_UNWIND_USER_H
#define _ASM_ARM64_UNWIND_USER_H

#ifdef CONFIG_UNWIND_USER

#include <linux/uaccess.h>
#include <asm/compiler.h>
#include <asm/insn.h>
#include <asm/ptrace.h>

static inline int unwind_user_word_size(struct pt_regs *regs)
{
	/* An AArch32 task's stack has no AArch64 frame records. */
	if (compat_user_mode(regs))
		return 0;
	return 8;
}

/*
 * A return address saved by code built with -mbranch-protection=pac-ret
 * (or =standard) carries a pointer authentication code in its upper bits;
 * strip it as perf_callchain_user() does.
 */
static inline unsigned long unwind_user_strip_ra(unsigned long ra)
{
	return ptrauth_strip_user_insn_pac(ra);
}
#define unwind_user_strip_ra unwind_user_strip_ra

/* x30, where a function that has not saved it yet keeps its return address. */
static inline unsigned long unwind_user_ra_reg(struct pt_regs *regs)
{
	return regs->regs[30];
}
#define unwind_user_ra_reg unwind_user_ra_reg

/*
 * arch_do_signal_or_restart() sets a system call's restart up before
 * get_signal() runs task work: it forgets the system call, puts x0 back
 * and moves the PC back onto the SVC. A PC at an SVC is the sign; it is
 * also where an interrupt taken just before an SVC returns to, and a PC
 * that cannot be read is taken alike: both only cost the caller something
 * it could have done.
 */
static inline bool unwind_user_restart_set_up(struct pt_regs *regs)
{
	u32 insn;

	if (compat_user_mode(regs) ||
	    get_user(insn, (u32 __user *)instruction_pointer(regs)))
		return true;
	return aarch64_insn_is_svc(le32_to_cpu(insn));
}
#define unwind_user_restart_set_up unwind_user_restart_set_up

#endif /* CONFIG_UNWIND_USER */

#ifdef CONFIG_HAVE_UNWIND_USER_FP

/*
 * A frame record (AAPCS64): x29 points at the caller's x29, and the return
 * address (the saved x30) is the next word. The CFA is taken as the address
 * just above the record, which a caller's record is never below. It is not
 * the caller's SP: compilers put the record at the bottom of the frame.
 */
#define ARCH_INIT_USER_FP_FRAME(ws)			\
	.cfa_off	= 2 * (ws),			\
	.ra_off		= -1 * (ws),			\
	.fp_off		= -2 * (ws),			\
	.use_fp		= true,

#define unwind_user_fp_cfa_is_sp false

#endif /* CONFIG_HAVE_UNWIND_USER_FP */

#endif /* _ASM_ARM64_UNWIND_USER_H */
