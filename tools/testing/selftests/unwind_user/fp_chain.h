/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The call chain of the frame-pointer tests (programs built with frame
 * pointers and no .sframe): fp_work() calls fp_top(), fp_mid() and
 * fp_leaf(), which spins for a time fp_clock() measures. None is inlined
 * and none tail-calls, so that a stack through them has each.
 */
#ifndef FP_CHAIN_H
#define FP_CHAIN_H

#include "unwind_user_test.h"

#define NOIPA		__attribute__((noipa))

/* The names of the chain's functions, innermost first. */
#define FP_CHAIN	"fp_leaf", "fp_mid", "fp_top", "fp_work"

static volatile unsigned long fp_sink;

/* What fp_leaf() times its spin with: wall-clock seconds unless set. */
static double (*fp_clock)(void) = now_seconds;

static NOIPA void fp_leaf(double seconds)
{
	double end = fp_clock() + seconds;

	do {
		for (int i = 0; i < 100000; i++)
			fp_sink = fp_sink * 6364136223846793005ul + 1;
	} while (fp_clock() < end);
}

static NOIPA void fp_mid(double seconds)
{
	fp_leaf(seconds);
	fp_sink++;
}

static NOIPA void fp_top(double seconds)
{
	fp_mid(seconds);
	fp_sink++;
}

/* For sample_stacks(): @arg points at the seconds to spin. */
static NOIPA void fp_work(void *arg)
{
	fp_top(*(double *)arg);
	fp_sink++;
}

#endif /* FP_CHAIN_H */
