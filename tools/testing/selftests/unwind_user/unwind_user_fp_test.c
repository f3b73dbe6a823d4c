// SPDX-License-Identifier: GPL-2.0
/*
 * The deferred user unwinder's frame-pointer type on its own, on any
 * architecture that has one: a program built with frame pointers and no
 * .sframe (as frame-pointer distributions build theirs) samples itself
 * with deferred callchains (perf record --call-graph fp,defer) while it
 * spins at the end of a chain of functions. Every stack whose first frame
 * is in the chain must reach main through each of its callers.
 *
 * On arm64 the program is also built with -mbranch-protection=standard:
 * the return addresses it saves are signed (on a CPU with pointer
 * authentication, which the test needs there), and a walk that did not
 * strip the signature would end at the first one it read.
 *
 * Every stack must come from a deferred record: with the SFrame unwinder
 * built, its walk at sample time can tell it saw a whole stack, and perf
 * would keep such a stack at once, so it is turned off for the test
 * (unwind_user_nmi_sframe=0); without it, no walk at sample time can tell,
 * and perf defers them all. A kernel without the deferred unwinder's
 * support for the architecture takes them at sample time instead.
 *
 * The same program's stacks taken at sample time (the architecture's own
 * perf_callchain_user()) are printed beside them for comparison.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#ifdef __aarch64__
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

#include "../kselftest_harness.h"
#include "fp_chain.h"

#define FREQ		1000
#define SPIN_SECONDS	1.0
/* Fewer stacks in the chain than this says nothing. */
#define MIN_IN_CHAIN	100
#define MAX_ROUNDS	20

/* No section of this program to register: it has none, by design. */
bool unwind_test_no_self_register = true;

/* The thread's CPU time, which the samples come every 1/FREQ s of. */
static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *const chain[] = {
	FP_CHAIN, "sample_stacks",
};

static struct stacks st;

/* The stacks of @s in the chain, checked and printed. */
static struct tally check(const char *what, const struct stacks *s)
{
	struct tally t = chain_check(s, chain, ARRAY_SIZE(chain), "main", 3);

	printf("# %s: %u samples, %u stacks (%u deferred), %d in the chain, %d complete, %d wrong (%d with a frame that is not the caller)\n",
	       what, s->samples, s->nr, s->deferred, t.in_chain, t.complete, t.wrong,
	       t.invented);
	return t;
}

#define NMI_KNOB "/sys/module/kernel/parameters/unwind_user_nmi_sframe"

TEST(deferred_stacks_reach_main)
{
	double seconds = SPIN_SECONDS;
	bool knob = !access(NMI_KNOB, F_OK);
	bool all_deferred = true;
	struct tally t = {};

#ifdef __aarch64__
	if (!(getauxval(AT_HWCAP) & HWCAP_PACA))
		SKIP(return, "no pointer authentication: nothing to strip");
#endif
	ASSERT_EQ(0, sym_init());
	fp_clock = cpu_seconds;
	/*
	 * Rounds until enough stacks: a guest vCPU the host does not run
	 * misses timer interrupts, and so samples.
	 */
	if (knob)
		ASSERT_EQ(0, write_text(NMI_KNOB, "N"));
	for (int round = 0; round < MAX_ROUNDS && t.in_chain < MIN_IN_CHAIN; round++) {
		struct tally r;

		if (sample_stacks(fp_work, &seconds, FREQ, &st))
			break;
		r = check("deferred", &st);
		t.in_chain += r.in_chain;
		t.complete += r.complete;
		all_deferred &= st.nr == st.deferred;
	}
	if (knob)
		ASSERT_EQ(0, write_text(NMI_KNOB, "Y"));
	EXPECT_TRUE(all_deferred);
	ASSERT_GE(t.in_chain, MIN_IN_CHAIN);
	/*
	 * A sample in a function's first instructions, before it stored its
	 * frame record, misses its caller (the frame-pointer rule's blind
	 * spot); the spin loop is far longer.
	 */
	EXPECT_GE(t.complete * 100, t.in_chain * 95);

	ASSERT_EQ(0, sample_stacks_sync(fp_work, &seconds, FREQ, &st));
	check("at sample time", &st);
}

TEST_HARNESS_MAIN
