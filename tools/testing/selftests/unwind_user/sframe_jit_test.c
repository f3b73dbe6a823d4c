// SPDX-License-Identifier: GPL-2.0
/*
 * JIT-like code: a window of generated code with a synthetic SFrame
 * section, registered with prctl(PR_UNWIND_USER). See jit_code.h for the
 * code: jit_driver (C) -> jit_a -> jit_b -> jit_c -> jit_spin (C), each
 * function spinning a while, so that samples land in all of them, in
 * prologues and epilogues too.
 *
 * Registered, every stack that starts in the chain must name every caller,
 * JIT and C, up to main. Unregistered, the JIT frames are left to the
 * frame-pointer rule: the counters say so and the stacks are no longer
 * complete. Registered again, they are.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "jit_code.h"

#define LOOPS		20000	/* iterations of each function's spin */
#define SECONDS		1.0	/* of sampling per phase */

static struct stacks stacks;

/* Stacks whose first frame is in @name. */
static int tops(const struct stacks *s, const char *name)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < s->nr; i++) {
		const char *top = s->s[i].nr ? sym_name(s->s[i].ip[0]) : NULL;

		n += top && !strcmp(top, name);
	}
	return n;
}

struct phase {
	struct unwind_user_info before, after;
	struct tally t;
	int top[ARRAY_SIZE(jit_chain)];
};

static int sample_phase(struct jit *j, struct phase *p, const char *what,
			int verbose)
{
	struct jit_run r = { .j = j, .seconds = SECONDS };
	unsigned int k;
	int ret;

	if (unwind_query(&p->before))
		return -1;
	ret = sample_stacks(jit_driver, &r, 4000, &stacks);
	if (ret || unwind_query(&p->after))
		return -1;
	p->t = chain_check(&stacks, jit_chain, ARRAY_SIZE(jit_chain), "main", verbose);
	for (k = 0; k < ARRAY_SIZE(jit_chain); k++)
		p->top[k] = tops(&stacks, jit_chain[k]);
	printf("# %s: %lu calls, %u samples, %u stacks, lost %u; in chain %d, complete %d, wrong %d\n",
	       what, r.calls, stacks.samples, stacks.nr, stacks.lost,
	       p->t.in_chain, p->t.complete, p->t.wrong);
	printf("#   first frame in jit_spin %d, jit_c %d, jit_b %d, jit_a %d, jit_driver %d\n",
	       p->top[0], p->top[1], p->top[2], p->top[3], p->top[4]);
	printf("#   counters: unwinds +%llu sframe_frames +%llu fp_fallbacks +%llu errors +%llu\n",
	       (unsigned long long)(p->after.unwinds - p->before.unwinds),
	       (unsigned long long)(p->after.sframe_frames - p->before.sframe_frames),
	       (unsigned long long)(p->after.fp_fallbacks - p->before.fp_fallbacks),
	       (unsigned long long)(p->after.errors - p->before.errors));
	return 0;
}

FIXTURE(jit) {
	struct jit j;
};

FIXTURE_VARIANT(jit) {
	unsigned int opts;
};

/* Code made RX after writing; function starts relative to the section. */
FIXTURE_VARIANT_ADD(jit, rx) {
	.opts = 0,
};

/* Function starts relative to their FDE field (FDE_FUNC_START_PCREL). */
FIXTURE_VARIANT_ADD(jit, rx_pcrel) {
	.opts = SFG_PCREL,
};

/* Code mapped RWX. */
FIXTURE_VARIANT_ADD(jit, rwx) {
	.opts = JIT_RWX,
};

FIXTURE_SETUP(jit)
{
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, jit_build(&self->j, jit_spin, LOOPS, variant->opts));
	jit_add_syms(&self->j);
}

FIXTURE_TEARDOWN(jit)
{
	jit_free(&self->j);
}

TEST_F(jit, unwind_register_unregister)
{
	struct phase on, off, again;
	unsigned int k;

	ASSERT_EQ(0, jit_register(&self->j));
	EXPECT_EQ(-EEXIST, jit_register(&self->j));

	/* Registered: every stack through the JIT code is complete. */
	ASSERT_EQ(0, sample_phase(&self->j, &on, "registered", 3));
	EXPECT_EQ(2, on.after.nr_sections);
	ASSERT_GE(on.t.in_chain, 20);
	EXPECT_EQ(0, on.t.wrong);
	EXPECT_EQ(on.t.in_chain, on.t.complete);
	/* Samples landed in every JIT function. */
	for (k = 1; k <= 3; k++)
		EXPECT_GT(on.top[k], 0) TH_LOG("no sample in %s", jit_chain[k]);
	/* At least the three JIT frames of each stack came from SFrame. */
	EXPECT_GE(on.after.sframe_frames - on.before.sframe_frames,
		  3ull * on.t.in_chain);
	EXPECT_EQ(on.after.errors, on.before.errors);
	EXPECT_EQ(on.after.dropped, on.before.dropped);

	/* Unregistered: JIT frames fall back to the frame-pointer rule. */
	ASSERT_EQ(0, jit_unregister(&self->j));
	ASSERT_EQ(0, sample_phase(&self->j, &off, "unregistered", 0));
	EXPECT_EQ(1, off.after.nr_sections);
	ASSERT_GE(off.t.in_chain, 20);
	/* Each stack through the JIT code: at least one lookup found nothing. */
	EXPECT_GE(off.after.fp_fallbacks - off.before.fp_fallbacks,
		  (unsigned long long)off.t.in_chain);
	/*
	 * jit_c and jit_a keep no frame pointer: the rule skips or misreads
	 * them, so that hardly a stack can be complete.
	 */
	EXPECT_LT(off.t.complete * 4, off.t.in_chain);
	EXPECT_EQ(off.after.errors, off.before.errors);

	/* Registered again: complete again. */
	ASSERT_EQ(0, jit_register(&self->j));
	ASSERT_EQ(0, sample_phase(&self->j, &again, "registered again", 3));
	ASSERT_GE(again.t.in_chain, 20);
	EXPECT_EQ(again.t.in_chain, again.t.complete);
	EXPECT_EQ(0, jit_unregister(&self->j));
}

/*
 * A registration covers its text only: one that ends where jit_c starts,
 * with a section for jit_a and jit_b, leaves jit_c to the frame-pointer
 * rule (which then skips jit_b: jit_c keeps no frame pointer), while
 * stacks that start in jit_b or jit_a stay complete. With jit_c in the
 * section too, the registration is refused: a section may not describe
 * code outside its text.
 */
TEST_F(jit, text_range_bounds_coverage)
{
	static const char *const c_b[] = { "jit_c", "jit_b" };
	struct sfg_func f[JIT_NR_FUNCS];
	struct phase p;
	struct tally in_c, in_ab;
	ssize_t len;

	self->j.reg.text_size = self->j.fn[JIT_C].start - self->j.reg.text_start;
	EXPECT_EQ(-ERANGE, jit_register(&self->j));
	jit_funcs(&self->j, f);
	ASSERT_LT(self->j.fn[JIT_A].start, self->j.fn[JIT_C].start);
	ASSERT_LT(self->j.fn[JIT_B].start, self->j.fn[JIT_C].start);
	len = sfg_write(self->j.sec, self->j.page, (uintptr_t)self->j.sec,
			self->j.opts, f, JIT_C, NULL);
	ASSERT_LT(0, len);
	self->j.reg.sframe_size = len;
	ASSERT_EQ(0, jit_register(&self->j));
	ASSERT_EQ(0, sample_phase(&self->j, &p, "text up to jit_c", 0));
	in_c = chain_check(&stacks, c_b, 2, NULL, 0);
	in_ab = chain_check(&stacks, jit_chain + 2, ARRAY_SIZE(jit_chain) - 2, "main", 3);
	printf("#   in jit_c: %d stacks, %d with jit_b next; in jit_b/jit_a: %d, %d complete\n",
	       in_c.in_chain, in_c.complete, in_ab.in_chain, in_ab.complete);
	ASSERT_GT(in_c.in_chain, 0);
	ASSERT_GT(in_ab.in_chain, 0);
	EXPECT_EQ(0, in_c.complete);
	EXPECT_EQ(in_ab.in_chain, in_ab.complete);
	EXPECT_EQ(0, jit_unregister(&self->j));
}

/*
 * A section kept apart from its code, as one synthesized from .eh_frame
 * and mapped from a cache file is: built for link-time addresses (the
 * section at 0, the code at LINK_TEXT), registered with
 * UNWIND_USER_SFRAME_F_ADDR and the load bias as sframe_addr. Without the
 * flag its functions lie outside the text; with it, stacks are complete.
 */
TEST_F(jit, section_apart_from_code)
{
	const uint64_t link_text = 0x1000;
	uint64_t bias = self->j.reg.text_start - link_text;
	struct sfg_func f[JIT_NR_FUNCS];
	struct phase p;
	ssize_t len;
	int k;

	jit_funcs(&self->j, f);
	for (k = 0; k < JIT_NR_FUNCS; k++)
		f[k].start -= bias;
	len = sfg_write(self->j.sec, self->j.page, 0, self->j.opts, f,
			JIT_NR_FUNCS, NULL);
	ASSERT_LT(0, len);
	self->j.reg.sframe_size = len;

	EXPECT_EQ(-ERANGE, jit_register(&self->j));
	self->j.reg.flags = UNWIND_USER_SFRAME_F_ADDR;
	self->j.reg.sframe_addr = bias;
	/* The flag needs the field: a VER0 struct cannot carry it. */
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
					(unsigned long)&self->j.reg,
					UNWIND_USER_SFRAME_SIZE_VER0, 0));
	self->j.reg.sframe_addr = bias + self->j.page;
	EXPECT_EQ(-ERANGE, jit_register(&self->j));
	self->j.reg.sframe_addr = bias;
	ASSERT_EQ(0, jit_register(&self->j));

	ASSERT_EQ(0, sample_phase(&self->j, &p, "section apart", 3));
	ASSERT_GE(p.t.in_chain, 20);
	EXPECT_EQ(0, p.t.wrong);
	EXPECT_EQ(p.t.in_chain, p.t.complete);
	EXPECT_EQ(p.after.errors, p.before.errors);
	EXPECT_EQ(0, jit_unregister(&self->j));
}

TEST_HARNESS_MAIN
