// SPDX-License-Identifier: GPL-2.0
/*
 * The call chain of unwind_bench: ten functions calling each other in a
 * ring, so that consecutive frames are different functions (different FDEs)
 * as in real stacks. noipa: no inlining, cloning or recursion-to-loop;
 * the "+ 1" after each call keeps it from being a tail call.
 */
#include "bench.h"

#define RING(name, next)						\
	int next(int d);						\
	__attribute__((noipa)) int name(int d)				\
	{								\
		if (d <= 1)						\
			return bench_trigger() + d;				\
		return next(d - 1) + 1;					\
	}

RING(ring0, ring1)
RING(ring1, ring2)
RING(ring2, ring3)
RING(ring3, ring4)
RING(ring4, ring5)
RING(ring5, ring6)
RING(ring6, ring7)
RING(ring7, ring8)
RING(ring8, ring9)
RING(ring9, ring0)

int chain_entry(int depth)
{
	return ring0(depth);
}
