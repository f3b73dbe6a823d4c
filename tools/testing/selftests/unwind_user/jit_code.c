// SPDX-License-Identifier: GPL-2.0
/*
 * A JIT-like code window with its own SFrame section; see jit_code.h.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jit_code.h"
#include "unwind_user_test.h"

static const char *const fn_name[JIT_NR_FUNCS] = { "jit_a", "jit_b", "jit_c" };

#ifdef __aarch64__
/* Offsets of the functions in the code page; the page start is not code. */
static const uint32_t fn_off[JIT_NR_FUNCS] = { 0x100, 0x120, 0x150 };
static const uint32_t fn_size[JIT_NR_FUNCS] = { JIT_A_SIZE, 0x2c, JIT_C_SIZE };

/* Rows; offsets refer to the code generated below. */
static const struct sfg_fre rows_a[] = {
	SFG_SP(0x00, 0),			/* str x30,[sp,#-16]! */
	SFG_SP_RA(0x04, 16, -16),		/* body */
	SFG_SP(0x1c, 0),			/* ret */
};

static const struct sfg_fre rows_b[] = {
	SFG_SP(0x00, 0),			/* stp x29,x30,[sp,#-32]! */
	SFG_SP_RA_FP(JIT_B_ROW1, 32, -24, -32),	/* mov x29,sp */
	SFG_FP_RA(JIT_B_ROW2, 32, -24, -32),	/* body, up to the ldp */
	SFG_SP(0x28, 0),			/* ret */
};

static const struct sfg_fre rows_c[] = {
	SFG_SP(0x00, 0),			/* stp x19,x30,[sp,#-16]! */
	SFG_SP_RA(0x04, 16, -8),		/* body */
	SFG_SP(0x20, 0),			/* ret */
};

static uint8_t *emit32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

/* mov w9,#loops; 1: subs w9,w9,#1; b.ne 1b */
static uint8_t *emit_spin(uint8_t *p, uint32_t loops)
{
	loops = loops ? loops : 1;
	p = emit32(p, 0x52800009 | (loops & 0xffff) << 5);	/* movz w9 */
	p = emit32(p, 0x72a00009 | (loops >> 16) << 5);		/* movk w9, lsl 16 */
	p = emit32(p, 0x71000529);				/* subs w9,w9,#1 */
	return emit32(p, 0x54ffffe1);				/* b.ne .-4 */
}

/* bl @to; @p is where the instruction goes. */
static uint8_t *emit_call(uint8_t *p, const uint8_t *to)
{
	return emit32(p, 0x94000000 | ((uint32_t)((to - p) / 4) & 0x3ffffff));
}

static void gen_code(struct jit *j, void (*callback)(void), uint32_t loops)
{
	uint8_t *a = j->text + fn_off[JIT_A];
	uint8_t *b = j->text + fn_off[JIT_B];
	uint8_t *c = j->text + fn_off[JIT_C];
	uint64_t cb = (uint64_t)(uintptr_t)callback;
	uint8_t *p;
	size_t i;

	for (i = 0; i < j->page; i += 4)	/* brk #0 everywhere else */
		emit32(j->text + i, 0xd4200000);

	p = emit32(a, 0xf81f0ffe);		/* str x30,[sp,#-16]! */
	p = emit_spin(p, loops);
	p = emit_call(p, b);
	p = emit32(p, 0xf84107fe);		/* ldr x30,[sp],#16 */
	emit32(p, 0xd65f03c0);			/* ret */

	p = emit32(b, 0xa9be7bfd);		/* stp x29,x30,[sp,#-32]! */
	p = emit32(p, 0x910003fd);		/* mov x29,sp */
	p = emit32(p, 0xd10043ff);		/* sub sp,sp,#16 */
	p = emit_spin(p, loops);
	p = emit_call(p, c);
	p = emit32(p, 0x910003bf);		/* mov sp,x29 */
	p = emit32(p, 0xa8c27bfd);		/* ldp x29,x30,[sp],#32 */
	emit32(p, 0xd65f03c0);			/* ret */

	p = emit32(c, 0xa9bf7bf3);		/* stp x19,x30,[sp,#-16]! */
	p = emit_spin(p, loops);
	p = emit32(p, 0x58000000 | 5 << 5 | 16);	/* ldr x16,.+20 */
	p = emit32(p, 0xd63f0200);		/* blr x16 */
	p = emit32(p, 0xa8c17bf3);		/* ldp x19,x30,[sp],#16 */
	emit32(p, 0xd65f03c0);			/* ret */
	memcpy(c + 0x28, &cb, 8);		/* the literal */

	__builtin___clear_cache((char *)j->text, (char *)j->text + j->page);
}
#else
/* Offsets of the functions in the code page; the page start is not code. */
static const uint32_t fn_off[JIT_NR_FUNCS] = { 0x100, 0x120, 0x140 };
static const uint32_t fn_size[JIT_NR_FUNCS] = { JIT_A_SIZE, 0x18, JIT_C_SIZE };

/* Rows; offsets refer to the code generated below. */
static const struct sfg_fre rows_a[] = {
	SFG_SP(0x00, 8),		/* sub $8,%rsp */
	SFG_SP(0x04, 16),		/* body */
	SFG_SP(0x16, 8),		/* ret */
};

static const struct sfg_fre rows_b[] = {
	SFG_SP(0x00, 8),		/* push %rbp */
	SFG_SP_FP(JIT_B_ROW1, 16, -16),	/* mov %rsp,%rbp */
	SFG_FP(JIT_B_ROW2, 16, -16),	/* body, up to leave */
	SFG_SP(0x17, 8),		/* ret */
};

static const struct sfg_fre rows_c[] = {
	SFG_SP(0x00, 8),		/* push %rbx */
	SFG_SP(0x01, 16),		/* body */
	SFG_SP(0x17, 8),		/* ret */
};

static uint8_t *emit(uint8_t *p, const void *bytes, size_t n)
{
	memcpy(p, bytes, n);
	return p + n;
}

static uint8_t *emit32(uint8_t *p, uint32_t v)
{
	return emit(p, &v, 4);
}

/* mov $loops,%ecx; 1: dec %ecx; jnz 1b */
static uint8_t *emit_spin(uint8_t *p, uint32_t loops)
{
	static const uint8_t loop[] = { 0xff, 0xc9, 0x75, 0xfc };

	*p++ = 0xb9;
	p = emit32(p, loops ? loops : 1);
	return emit(p, loop, sizeof(loop));
}

/* call rel32 to @to; @p is where the call instruction starts. */
static uint8_t *emit_call(uint8_t *p, const uint8_t *to)
{
	*p++ = 0xe8;
	return emit32(p, (uint32_t)(to - (p + 4)));
}

static void gen_code(struct jit *j, void (*callback)(void), uint32_t loops)
{
	uint8_t *a = j->text + fn_off[JIT_A];
	uint8_t *b = j->text + fn_off[JIT_B];
	uint8_t *c = j->text + fn_off[JIT_C];
	uint64_t cb = (uint64_t)(uintptr_t)callback;
	uint8_t *p;

	memset(j->text, 0xcc, j->page);		/* int3 everywhere else */

	p = emit(a, "\x48\x83\xec\x08", 4);	/* sub $8,%rsp */
	p = emit_spin(p, loops);
	p = emit_call(p, b);
	p = emit(p, "\x48\x83\xc4\x08\xc3", 5);	/* add $8,%rsp; ret */

	p = emit(b, "\x55\x48\x89\xe5", 4);	/* push %rbp; mov %rsp,%rbp */
	p = emit(p, "\x48\x83\xec\x10", 4);	/* sub $16,%rsp */
	p = emit_spin(p, loops);
	p = emit_call(p, c);
	p = emit(p, "\xc9\xc3", 2);		/* leave; ret */

	p = emit(c, "\x53", 1);			/* push %rbx */
	p = emit_spin(p, loops);
	p = emit(p, "\x48\xb8", 2);		/* movabs $callback,%rax */
	p = emit(p, &cb, 8);
	p = emit(p, "\xff\xd0\x5b\xc3", 4);	/* call *%rax; pop %rbx; ret */
}

#endif

void jit_funcs(const struct jit *j, struct sfg_func *out)
{
	static const struct sfg_fre *const rows[] = { rows_a, rows_b, rows_c };
	static const unsigned int nr[] = {
		ARRAY_SIZE(rows_a), ARRAY_SIZE(rows_b), ARRAY_SIZE(rows_c),
	};
	int i;

	for (i = 0; i < JIT_NR_FUNCS; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].start = j->fn[i].start;
		out[i].size = j->fn[i].size;
		out[i].nr_fres = nr[i];
		out[i].fres = rows[i];
	}
}

int jit_write_section(struct jit *j)
{
	struct sfg_func f[JIT_NR_FUNCS];

	jit_funcs(j, f);
	j->sec_len = sfg_write(j->sec, j->page, (uintptr_t)j->sec, j->opts,
			       f, JIT_NR_FUNCS, NULL);
	if (j->sec_len < 0)
		return -1;
	j->reg.sframe_size = j->sec_len;
	return 0;
}

int jit_build(struct jit *j, void (*callback)(void), uint32_t loops,
	      unsigned int opts)
{
	int i;

	memset(j, 0, sizeof(*j));
	j->page = sysconf(_SC_PAGESIZE);
	j->opts = opts & ~JIT_RWX;
	j->map = mmap(NULL, 2 * j->page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (j->map == MAP_FAILED)
		return -1;
	if ((opts & JIT_RWX) &&
	    mprotect(j->map, j->page, PROT_READ | PROT_WRITE | PROT_EXEC))
		return -1;
	j->text = j->map;
	j->sec = j->map + j->page;
	for (i = 0; i < JIT_NR_FUNCS; i++) {
		j->fn[i].name = fn_name[i];
		j->fn[i].start = (uintptr_t)j->text + fn_off[i];
		j->fn[i].size = fn_size[i];
	}
	gen_code(j, callback, loops);
	jit_spin_loops = 2 * (unsigned long)loops;
	if (!(opts & JIT_RWX) &&
	    mprotect(j->text, j->page, PROT_READ | PROT_EXEC))
		return -1;
	j->entry = (void (*)(void))(j->text + fn_off[JIT_A]);
	j->reg.text_start = (uintptr_t)j->text;
	j->reg.text_size = j->page;
	j->reg.sframe_start = (uintptr_t)j->sec;
	return jit_write_section(j);
}

long jit_register(struct jit *j)
{
	return unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&j->reg,
			    sizeof(j->reg), 0);
}

long jit_unregister(struct jit *j)
{
	return unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, j->reg.text_start,
			    0, 0);
}

void jit_add_syms(const struct jit *j)
{
	unsigned int i;

	for (i = 0; i < JIT_NR_FUNCS; i++)
		sym_add(j->fn[i].name, j->fn[i].start, j->fn[i].size);
}

void jit_free(struct jit *j)
{
	if (j->map && j->map != MAP_FAILED)
		munmap(j->map, 2 * j->page);
	j->map = NULL;
}

unsigned long jit_spin_loops;
static volatile unsigned long jit_sink;

void __attribute__((noipa)) jit_spin(void)
{
	unsigned long i, x = jit_sink;

	for (i = 0; i < jit_spin_loops; i++)
		x = x * 6364136223846793005ul + 1;
	jit_sink = x;
}

void __attribute__((noipa)) jit_driver(void *arg)
{
	struct jit_run *r = arg;
	double end = now_seconds() + r->seconds;

	r->calls = 0;
	do {
		r->j->entry();
		r->calls++;
	} while (r->stop ? !*r->stop : now_seconds() < end);
}

const char *const jit_chain[6] = {
	"jit_spin", "jit_c", "jit_b", "jit_a", "jit_driver", "sample_stacks",
};
