/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A JIT-like code window for the unwinder selftests: three generated
 * functions that call each other, the last one calling back into C, and a
 * synthetic SFrame section (sframe_gen.h) that describes them. On x86-64:
 *
 *   jit_a:  sub $8,%rsp; spin; call jit_b; add $8,%rsp; ret
 *   jit_b:  push %rbp; mov %rsp,%rbp; sub $16,%rsp; spin; call jit_c;
 *           leave; ret
 *   jit_c:  push %rbx; spin; movabs $callback,%rax; call *%rax; pop %rbx; ret
 *
 * ("spin" is mov $loops,%ecx; 1: dec %ecx; jnz 1b.) On AArch64:
 *
 *   jit_a:  str x30,[sp,#-16]!; spin; bl jit_b; ldr x30,[sp],#16; ret
 *   jit_b:  stp x29,x30,[sp,#-32]!; mov x29,sp; sub sp,sp,#16; spin;
 *           bl jit_c; mov sp,x29; ldp x29,x30,[sp],#32; ret
 *   jit_c:  stp x19,x30,[sp,#-16]!; spin; ldr x16,=callback; blr x16;
 *           ldp x19,x30,[sp],#16; ret
 *
 * ("spin" is mov w9,#loops; 1: subs w9,w9,#1; b.ne 1b.) jit_a's frame is
 * SP based, jit_b's FP based with the caller's FP saved, jit_c's SP based
 * again: the section has a row for every instruction boundary where the
 * CFA, the FP or (AArch64) the RA rule changes. On AArch64 the return
 * address is in the link register at each function's first instruction
 * and at its ret, where the kernel takes it from x30 if that frame is the
 * interrupted one.
 *
 * The window is two pages mapped together: the code page (written RW, then
 * made RX) and the page after it (RW) holding the section, so that the
 * section's 32-bit function offsets reach the code.
 */
#ifndef JIT_CODE_H
#define JIT_CODE_H

#include <stdint.h>
#include <linux/unwind_user.h>

#include "sframe_gen.h"

/* jit_build() option, next to the sframe_gen ones: map the code RWX. */
#define JIT_RWX		0x100

#define JIT_NR_FUNCS	3
#define JIT_A		0
#define JIT_B		1
#define JIT_C		2

/*
 * What the hostile tests edit: the sizes of jit_a (jit_b starts 0x20
 * after it) and of jit_c, the starts of jit_b's rows 1 and 2 (of 4; the
 * other functions have 3).
 */
#ifdef __aarch64__
#define JIT_A_SIZE	0x20
#define JIT_C_SIZE	0x30
#define JIT_B_ROW1	0x04
#define JIT_B_ROW2	0x08
#else
#define JIT_A_SIZE	0x17
#define JIT_C_SIZE	0x18
#define JIT_B_ROW1	0x01
#define JIT_B_ROW2	0x04
#endif

struct jit_fn {
	const char *name;
	uint64_t start;
	uint32_t size;
};

struct jit {
	uint8_t *map;			/* both pages */
	uint8_t *text;			/* code page, RX */
	uint8_t *sec;			/* section page, RW */
	size_t page;
	ssize_t sec_len;
	unsigned int opts;		/* sframe_gen options */
	struct jit_fn fn[JIT_NR_FUNCS];
	struct unwind_user_sframe reg;	/* whole code page + the section */
	void (*entry)(void);		/* jit_a */
};

/*
 * Map a window, generate the code (each function spins @loops times before
 * its call; @callback is what jit_c calls), write the section with the
 * sframe_gen options in @opts and fill in @j->reg. The code page is mapped
 * RW and made RX once written, or mapped RWX with JIT_RWX. Returns 0 or -1.
 */
int jit_build(struct jit *j, void (*callback)(void), uint32_t loops,
	      unsigned int opts);

/* The functions and rows the section describes (@out has 3 entries). */
void jit_funcs(const struct jit *j, struct sfg_func *out);

/* Rewrite the section from jit_funcs() (e.g. after a test scribbled on it). */
int jit_write_section(struct jit *j);

/*
 * What the tests have jit_c call back: spins @jit_spin_loops times (twice
 * the @loops of the last jit_build()), so that samples land in C code
 * called from the window.
 */
extern unsigned long jit_spin_loops;
void jit_spin(void);

/* Run the window's entry (jit_a) for @seconds, or until *@stop. */
struct jit_run {
	struct jit *j;
	double seconds;
	volatile int *stop;
	unsigned long calls;		/* entries run */
};
void jit_driver(void *jit_run);

/* The frames of a stack sampled in jit_spin under jit_driver. */
extern const char *const jit_chain[6];

/* prctl REGISTER / UNREGISTER of the window: 0 or -errno. */
long jit_register(struct jit *j);
long jit_unregister(struct jit *j);

/* Add the JIT functions to the symbolizer (sym_name()). */
void jit_add_syms(const struct jit *j);

void jit_free(struct jit *j);

#endif
