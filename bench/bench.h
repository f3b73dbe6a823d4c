/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Between the bench driver (unwind_bench.c) and its call chain
 * (chain_small.c, or a file gen_funcs.py generated).
 */
#ifndef UNWIND_BENCH_H
#define UNWIND_BENCH_H

/*
 * Descend @depth frames through the chain, then call bench_trigger() from
 * the bottom. Every frame is a real call (no inlining, no tail calls).
 */
int chain_entry(int depth);

/* Write the prepared command to the debugfs trigger (unwind_bench.c). */
int bench_trigger(void);

#endif
