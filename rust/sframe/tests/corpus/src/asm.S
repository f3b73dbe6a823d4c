// SPDX-License-Identifier: GPL-2.0
/*
 * Hand-written x86-64 assembly with CFI directives, linked without libc
 * (-nostdlib -static): an outermost _start (RA undefined), a signal
 * trampoline, CFA in a general register (OpenSSL style), RA and FP kept in
 * registers, remember/restore state, a CFA expression (no SFrame FDE: a
 * gap), frames needing 2- and 4-byte offsets and a function over 64 KiB
 * (4-byte FRE start offsets).
 */
	.file	"asm.S"
	.text

	.globl	_start
	.type	_start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp
	movq	%rsp, %rdi
	andq	$-16, %rsp
	call	fpframe
	call	bigframe
	call	midframe
	call	remember
	call	cfa_r9
	call	huge
	movl	$60, %eax
	xorl	%edi, %edi
	syscall
	hlt
	.cfi_endproc
	.size	_start, .-_start

	/* A signal trampoline: its caller's frame is the interrupted one. */
	.globl	sigtramp
	.type	sigtramp, @function
	nop
sigtramp:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_def_cfa rsp, 160
	.cfi_offset rip, -8
	movl	$15, %eax
	syscall
	hlt
	.cfi_endproc
	.size	sigtramp, .-sigtramp

	.globl	fpframe
	.type	fpframe, @function
fpframe:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register rbp
	pushq	%rbx
	.cfi_offset rbx, -24
	subq	$40, %rsp
	movq	%rdi, (%rsp)
	movq	-8(%rbp), %rbx
	leave
	.cfi_def_cfa rsp, 8
	.cfi_restore rbp
	ret
	.cfi_endproc
	.size	fpframe, .-fpframe

	/* 4-byte CFA offsets. */
	.globl	bigframe
	.type	bigframe, @function
bigframe:
	.cfi_startproc
	subq	$0x30008, %rsp
	.cfi_def_cfa_offset 0x30010
	movq	$1, (%rsp)
	addq	$0x30008, %rsp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	bigframe, .-bigframe

	/* 2-byte CFA offsets, FP saved far from the CFA. */
	.globl	midframe
	.type	midframe, @function
midframe:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	subq	$0x1000, %rsp
	.cfi_def_cfa_offset 0x1010
	movq	%rbp, 0x800(%rsp)
	.cfi_offset rbp, -0x810
	addq	$0x1000, %rsp
	.cfi_def_cfa_offset 16
	popq	%rbp
	.cfi_def_cfa_offset 8
	.cfi_restore rbp
	ret
	.cfi_endproc
	.size	midframe, .-midframe

	/* Early return in the middle of a function. */
	.globl	remember
	.type	remember, @function
remember:
	.cfi_startproc
	pushq	%r12
	.cfi_def_cfa_offset 16
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.cfi_offset rbp, -24
	testq	%rdi, %rdi
	jz	1f
	.cfi_remember_state
	popq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_restore rbp
	popq	%r12
	.cfi_def_cfa_offset 8
	ret
1:
	.cfi_restore_state
	movq	%rdi, %rax
	popq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_restore rbp
	popq	%r12
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	remember, .-remember

	/* CFA in a general register, as OpenSSL's assembly does. */
	.globl	cfa_r9
	.type	cfa_r9, @function
cfa_r9:
	.cfi_startproc
	movq	%rsp, %r9
	.cfi_def_cfa_register r9
	subq	$64, %rsp
	andq	$-64, %rsp
	movq	%r9, (%rsp)
	movq	%r9, %rsp
	.cfi_def_cfa_register rsp
	ret
	.cfi_endproc
	.size	cfa_r9, .-cfa_r9

	/* RA and FP copied to registers. */
	.globl	in_regs
	.type	in_regs, @function
in_regs:
	.cfi_startproc
	movq	%rbp, %r12
	.cfi_register rbp, r12
	popq	%r11
	.cfi_def_cfa_offset 0
	.cfi_register rip, r11
	movq	%r12, %rbp
	.cfi_restore rbp
	jmp	*%r11
	.cfi_endproc
	.size	in_regs, .-in_regs

	/* A CFA expression: assemblers emit no SFrame FDE for it (a gap). */
	.globl	cfa_expr
	.type	cfa_expr, @function
cfa_expr:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	/* DW_CFA_def_cfa_expression: DW_OP_breg6 (rbp) -8; DW_OP_deref */
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
	popq	%rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size	cfa_expr, .-cfa_expr

#ifndef NO_HUGE
	/* A function larger than 64 KiB: 4-byte FRE start offsets. */
	.globl	huge
	.type	huge, @function
huge:
	.cfi_startproc
	pushq	%rbx
	.cfi_def_cfa_offset 16
	.fill	33000, 1, 0x90
	pushq	%rbp
	.cfi_def_cfa_offset 24
	.fill	33000, 1, 0x90
	popq	%rbp
	.cfi_def_cfa_offset 16
	popq	%rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	huge, .-huge
#else
huge:
	ret
#endif

	/* Empty FDE body after the big function: a 1-instruction leaf. */
	.globl	tiny
	.type	tiny, @function
tiny:
	.cfi_startproc
	ret
	.cfi_endproc
	.size	tiny, .-tiny

	.section .note.GNU-stack,"",@progbits
