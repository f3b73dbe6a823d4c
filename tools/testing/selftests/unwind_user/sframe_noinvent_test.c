// SPDX-License-Identifier: GPL-2.0
/*
 * No invented frames. spin_nofde() below is written in assembly without
 * CFI directives, so gas writes no FDE for it, yet it lies in the text of
 * the executable, whose section was registered at exec. It points %rbp at
 * a fake frame on its stack whose return address slot holds
 *
 *   decoy:     a return address in decoy_caller(), a real function of
 *              this program that never called it;
 *   stack:     the fake frame's own address, a stack address;
 *
 * and spins. Code that a section covers was built without frame pointers
 * (the section's header does not say SFRAME_F_FRAME_POINTER, as gas does
 * not for x86-64 nor AArch64), so %rbp (x29) is just another register
 * there: at a PC inside the registered text that no FDE covers, the walk
 * must end, not follow %rbp to the fake frame. The third case,
 *
 *   unregistered: the same code copied into an anonymous executable
 *              mapping no section describes, with the stack address in
 *              the fake frame,
 *
 * is left to the frame-pointer rule, which must not take an address on
 * the stack, between the walk's first SP and the frame's CFA, for a
 * return address; nor, in the deferred walk, one outside executable
 * memory (the fourth case: a data address in the fake frame).
 *
 * Each case is sampled with deferred callchains (walked whole at sample
 * time), with the deferred walk alone (unwind_user_nmi_sframe=0) and at
 * sample time without deferral. A stack whose first frame is in the
 * spinning function may end there, or go on to its real caller outer()
 * and up the chain; any other frame after it is invented.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "sframe_gen.h"

#define NOIPA __attribute__((noipa))

#define NMI_KNOB	"/sys/module/kernel/parameters/unwind_user_nmi_sframe"
#define SPIN_LOOPS	1000000ul
#define ROUND_SECONDS	0.3
#define MAX_ROUNDS	8
#define MIN_SAMPLES	20

/*
 * spin_nofde(loops, ra): push %rbp, then a fake frame below it, { saved
 * FP 0, return address @ra, or the fake frame's own address if @ra is 0 },
 * %rbp pointed at it, @loops turns of a loop, %rbp restored. No CFI: no
 * FDE. Position independent, so that it can be copied. From its loop to
 * the pop, %rbp points at the fake frame. On arm64 the same with x29 and
 * a frame record above the one that saves x29 and x30.
 */
void spin_nofde(unsigned long loops, unsigned long ra);
extern const char spin_nofde_loop[], spin_nofde_loop_end[];

#ifdef __aarch64__
/*
 * The loop's labels global: the C code reaches them through the GOT, and
 * a GOT entry of a local label (the section's symbol plus an addend,
 * which ld drops) would give both the function's start.
 */
asm(".pushsection .text\n"
	"	.globl	spin_nofde\n"
	"	.globl	spin_nofde_loop\n"
	"	.globl	spin_nofde_loop_end\n"
	"	.type	spin_nofde, %function\n"
	"spin_nofde:\n"
	"	stp	x29, x30, [sp, #-32]!\n"
	"	str	xzr, [sp, #16]\n"
	"	cbnz	x1, 1f\n"
	"	add	x1, sp, #16\n"
	"1:	str	x1, [sp, #24]\n"
	"	add	x29, sp, #16\n"
	"spin_nofde_loop:\n"
	"2:	subs	x0, x0, #1\n"
	"	b.ne	2b\n"
	"spin_nofde_loop_end:\n"
	"	ldp	x29, x30, [sp], #32\n"
	"	ret\n"
	"	.size	spin_nofde, . - spin_nofde\n"
	".popsection\n");
#else
asm(".pushsection .text\n"
	"	.globl	spin_nofde\n"
	"	.type	spin_nofde, @function\n"
	"spin_nofde:\n"
	"	push	%rbp\n"
	"	sub	$16, %rsp\n"
	"	movq	$0, (%rsp)\n"
	"	test	%rsi, %rsi\n"
	"	jnz	1f\n"
	"	mov	%rsp, %rsi\n"
	"1:	mov	%rsi, 8(%rsp)\n"
	"	mov	%rsp, %rbp\n"
	"spin_nofde_loop:\n"
	"2:	dec	%rdi\n"
	"	jnz	2b\n"
	"spin_nofde_loop_end:\n"
	"	add	$16, %rsp\n"
	"	pop	%rbp\n"
	"	ret\n"
	"	.size	spin_nofde, . - spin_nofde\n"
	".popsection\n");
#endif

typedef void (*spin_fn)(unsigned long loops, unsigned long ra);

/* The decoy: a return address in decoy_caller(), taken once. */
static uint64_t decoy_ra;

NOIPA void decoy_callee(void)
{
	decoy_ra = (uintptr_t)__builtin_return_address(0);
}

NOIPA void decoy_caller(void)
{
	decoy_callee();
	asm volatile("");
}

struct nf_run {
	spin_fn fn;
	unsigned long ra;
	double seconds;
	unsigned long calls;
};

/* The real caller of the spinning function. */
NOIPA void outer(struct nf_run *r)
{
	double end = now_seconds() + r->seconds;

	do {
		r->fn(SPIN_LOOPS, r->ra);
		r->calls++;
	} while (now_seconds() < end);
	asm volatile("");
}

NOIPA void run_case(void *arg)
{
	outer(arg);
	asm volatile("");
}

static struct stacks stacks;

/* Where the stack of this thread is mapped ([stack] in /proc/self/maps). */
static int stack_range(uint64_t *lo, uint64_t *hi)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (strstr(line, "[stack]") &&
		    sscanf(line, "%lx-%lx", &a, &b) == 2) {
			*lo = a;
			*hi = b;
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

static uint32_t get_u32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * The registered section of this executable, read in place: its version
 * and flags, and how many of its FDEs overlap [@addr, @addr + @size).
 */
static int fdes_covering(const struct unwind_user_sframe *sec, uint64_t addr,
			 uint64_t size, int *version, int *flags,
			 unsigned int *nr_fdes)
{
	const uint8_t *s = (const uint8_t *)(uintptr_t)sec->sframe_start;
	unsigned int i, fde_size, n, covering = 0;
	size_t first;

	if (sec->sframe_size < SFRAME_HDR_SIZE ||
	    (s[SFH_MAGIC] | s[SFH_MAGIC + 1] << 8) != SFRAME_MAGIC)
		return -1;
	*version = s[SFH_VERSION];
	*flags = s[SFH_FLAGS];
	switch (*version) {
	case 1:
		fde_size = 17;
		break;
	case 2:
		fde_size = SFRAME_FDE_SIZE;
		break;
	case 3:
		fde_size = 16;
		break;
	default:
		return -1;
	}
	n = get_u32(s + SFH_NUM_FDES);
	*nr_fdes = n;
	first = SFRAME_HDR_SIZE + s[SFH_AUXHDR_LEN] + get_u32(s + SFH_FDES_OFF);
	if (first + (size_t)n * fde_size > sec->sframe_size)
		return -1;
	for (i = 0; i < n; i++) {
		size_t off = first + (size_t)i * fde_size;
		uint64_t base = sec->sframe_start, start;
		int64_t stored;
		uint32_t fsize;

		if (*flags & SFRAME_F_FDE_FUNC_START_PCREL && *version >= 2)
			base += off;
		if (*version == 3) {
			stored = (int64_t)(get_u32(s + off) |
					   (uint64_t)get_u32(s + off + 4) << 32);
			fsize = get_u32(s + off + 8);
		} else {
			stored = (int32_t)get_u32(s + off);
			fsize = get_u32(s + off + 4);
		}
		start = base + stored;
		if (start < addr + size && addr < start + fsize)
			covering++;
	}
	return covering;
}

FIXTURE(noinvent) {
	struct unwind_user_sframe sec;
	uint64_t fn, fn_size;
	uint64_t stack_lo, stack_hi;
	bool knob_off;
};

FIXTURE_VARIANT(noinvent) {
	const char *mode;
	bool sync;		/* sample_stacks_sync(): no deferral */
	bool deferred_walk;	/* unwind_user_nmi_sframe=0 */
};

/* Deferred callchains, the stacks walked whole at sample time. */
FIXTURE_VARIANT_ADD(noinvent, deferred) {
	.mode = "deferred callchains",
};

/* Deferred callchains walked in task context (faultable reads). */
FIXTURE_VARIANT_ADD(noinvent, deferred_walk) {
	.mode = "deferred walk",
	.deferred_walk = true,
};

/* Callchains taken at sample time, no deferral. */
FIXTURE_VARIANT_ADD(noinvent, sample_time) {
	.mode = "sample time",
	.sync = true,
};

FIXTURE_SETUP(noinvent)
{
	int version, flags, covering;
	unsigned int nr_fdes;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self->sec));
	ASSERT_EQ(0, sym_addr("spin_nofde", &self->fn, &self->fn_size));
	ASSERT_EQ((uintptr_t)spin_nofde, self->fn);
	ASSERT_LT(0, self->fn_size);
	ASSERT_EQ(0, stack_range(&self->stack_lo, &self->stack_hi));
	decoy_caller();
	ASSERT_STREQ("decoy_caller", sym_name(decoy_ra));

	/* The premise: registered text, no FDE, no frame-pointer flag. */
	ASSERT_GE(self->fn, self->sec.text_start);
	ASSERT_LE(self->fn + self->fn_size,
		  self->sec.text_start + self->sec.text_size);
	covering = fdes_covering(&self->sec, self->fn, self->fn_size,
				 &version, &flags, &nr_fdes);
	ASSERT_LE(0, covering);
	printf("# spin_nofde at %#llx+%llu, in the registered text %#llx+%#llx; section V%d flags %#x, %u FDEs, %d of them covering it\n",
	       (unsigned long long)self->fn, (unsigned long long)self->fn_size,
	       (unsigned long long)self->sec.text_start,
	       (unsigned long long)self->sec.text_size, version, flags,
	       nr_fdes, covering);
	if (covering)
		SKIP(return, "an FDE covers spin_nofde: nothing to test");
	if (version < 3 && (flags & SFRAME_F_FRAME_POINTER))
		SKIP(return, "the section says SFRAME_F_FRAME_POINTER");

	if (variant->deferred_walk) {
		ASSERT_EQ(0, write_text(NMI_KNOB, "N"));
		self->knob_off = true;
	}
}

FIXTURE_TEARDOWN(noinvent)
{
	if (self->knob_off)
		write_text(NMI_KNOB, "Y");
}

struct verdict {
	int in_fn;		/* stacks whose first frame is in the function */
	int in_loop;		/* of those, in its loop (%rbp at the fake frame) */
	int counted;		/* the stacks checked (see sample_case()) */
	int ended;		/* of those, ending at the function */
	int to_outer;		/* going on to outer() and up the chain */
	int invented;		/* with any other frame after the function */
	int decoy;		/* of those, naming decoy_caller */
	int on_stack;		/* of those, with a stack address */
};

/*
 * Sample @fn (a copy of spin_nofde() at [@start, @start + @size), named
 * @name) spinning with @ra in its fake frame, in rounds until
 * MIN_SAMPLES stacks are checked. With @loop_only, only stacks whose first
 * frame is in its loop are checked: elsewhere in the function %rbp is
 * whatever the caller left in it, which the frame-pointer rule (the
 * unregistered case) may follow.
 */
static struct verdict sample_case(struct __test_metadata *_metadata,
				  FIXTURE_DATA(noinvent) *self,
				  const FIXTURE_VARIANT(noinvent) *variant,
				  spin_fn fn, unsigned long ra, uint64_t start,
				  uint64_t size, const char *name,
				  bool loop_only)
{
	const char *const chain[] = { name, "outer", "run_case", "sample_stacks" };
	uint64_t loop = start + (spin_nofde_loop - (const char *)spin_nofde);
	uint64_t loop_end = start +
			    (spin_nofde_loop_end - (const char *)spin_nofde);
	struct nf_run r = { .fn = fn, .ra = ra, .seconds = ROUND_SECONDS };
	struct verdict v = {};
	int round, printed = 0;
	unsigned int i, k;

	for (round = 0; round < MAX_ROUNDS && v.counted < MIN_SAMPLES; round++) {
		int err = variant->sync ?
			  sample_stacks_sync(run_case, &r, 4000, &stacks) :
			  sample_stacks(run_case, &r, 4000, &stacks);

		ASSERT_EQ(0, err) TH_LOG("sampling: %s", strerror(-err));
		for (i = 0; i < stacks.nr; i++) {
			const struct ustack *st = &stacks.s[i];
			bool decoy = false, on_stack = false, in_loop;
			int m;

			if (!st->nr || st->ip[0] < start ||
			    st->ip[0] >= start + size)
				continue;
			v.in_fn++;
			in_loop = st->ip[0] >= loop && st->ip[0] < loop_end;
			v.in_loop += in_loop;
			if (loop_only && !in_loop)
				continue;
			v.counted++;
			for (k = 1; k < st->nr; k++) {
				const char *s = sym_name(st->ip[k]);

				if (s && !strcmp(s, "decoy_caller"))
					decoy = true;
				if (st->ip[k] >= self->stack_lo &&
				    st->ip[k] < self->stack_hi)
					on_stack = true;
			}
			m = stack_matches(st, chain, ARRAY_SIZE(chain));
			if (st->nr == 1 && !decoy && !on_stack) {
				v.ended++;
				continue;
			}
			if ((m == 1 || m == 0) && !decoy && !on_stack) {
				v.to_outer++;
				continue;
			}
			v.invented++;
			v.decoy += decoy;
			v.on_stack += on_stack;
			if (printed++ < 3)
				stack_print("invented", st, 8);
		}
	}
	return v;
}

static void report(struct __test_metadata *_metadata,
		   const FIXTURE_VARIANT(noinvent) *variant, const char *what,
		   const struct verdict *v)
{
	printf("# %s, %s: %d samples in the function (%d in its loop), %d checked: %d end there, %d go on to outer, %d with an invented frame (%d naming decoy_caller, %d with a stack address)\n",
	       what, variant->mode, v->in_fn, v->in_loop, v->counted, v->ended,
	       v->to_outer, v->invented, v->decoy, v->on_stack);
	EXPECT_GE(v->counted, MIN_SAMPLES);
	EXPECT_EQ(0, v->invented);
}

/*
 * spin_nofde() copied into a page of an anonymous executable mapping that
 * no section covers, named spin_nofde_copy; NULL if that failed.
 */
static uint8_t *unregistered_copy(FIXTURE_DATA(noinvent) *self, size_t page)
{
	uint8_t *code = mmap(NULL, page, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (code == MAP_FAILED)
		return NULL;
	memset(code, 0xcc, page);
	memcpy(code, (const void *)spin_nofde, self->fn_size);
	__builtin___clear_cache((char *)code, (char *)code + page);
	if (mprotect(code, page, PROT_READ | PROT_EXEC)) {
		munmap(code, page);
		return NULL;
	}
	sym_add("spin_nofde_copy", (uintptr_t)code, self->fn_size);
	return code;
}

/* Case A: the fake frame names decoy_caller(), which never called. */
TEST_F(noinvent, decoy_return_address)
{
	struct verdict v;

	v = sample_case(_metadata, self, variant, spin_nofde, decoy_ra,
			self->fn, self->fn_size, "spin_nofde", false);
	report(_metadata, variant, "decoy_caller in the fake frame", &v);
}

/* Case B: the fake frame's return address is a stack address. */
TEST_F(noinvent, stack_address)
{
	struct verdict v;

	v = sample_case(_metadata, self, variant, spin_nofde, 0,
			self->fn, self->fn_size, "spin_nofde", false);
	report(_metadata, variant, "stack address in the fake frame", &v);
}

/*
 * Case C: the same code in an anonymous executable mapping no section
 * covers, the stack address in its fake frame.
 */
TEST_F(noinvent, unregistered_code)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct unwind_user_info before, after;
	struct verdict v;
	uint8_t *code = unregistered_copy(self, page);

	ASSERT_NE(NULL, code);
	ASSERT_EQ(0, unwind_query(&before));

	v = sample_case(_metadata, self, variant, (spin_fn)(uintptr_t)code, 0,
			(uintptr_t)code, self->fn_size, "spin_nofde_copy",
			true);
	ASSERT_EQ(0, unwind_query(&after));
	printf("# counters: fp_fallbacks +%llu errors +%llu\n",
	       after.fp_fallbacks - before.fp_fallbacks,
	       after.errors - before.errors);
	report(_metadata, variant,
	       "unregistered copy, stack address in the fake frame", &v);
	sym_clear_added();
	munmap(code, page);
}

/*
 * Case D: the same unregistered copy, the fake frame's return address in a
 * mapping that is readable but not executable (not on the stack either).
 * Only a walk that may look VMAs up, the deferred one, can tell it is no
 * code: at sample time the frame-pointer rule has nothing better to go by,
 * so only the deferred walk is checked.
 */
TEST_F(noinvent, unregistered_noexec_address)
{
	size_t page = sysconf(_SC_PAGESIZE);
	struct verdict v;
	uint8_t *code, *data;

	if (!variant->deferred_walk)
		SKIP(return, "only the deferred walk looks up the VMA");
	code = unregistered_copy(self, page);
	ASSERT_NE(NULL, code);
	data = mmap(NULL, page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, data);

	v = sample_case(_metadata, self, variant, (spin_fn)(uintptr_t)code,
			(uintptr_t)data + 64, (uintptr_t)code, self->fn_size,
			"spin_nofde_copy", true);
	report(_metadata, variant,
	       "unregistered copy, a data address in the fake frame", &v);
	sym_clear_added();
	munmap(data, page);
	munmap(code, page);
}

TEST_HARNESS_MAIN
