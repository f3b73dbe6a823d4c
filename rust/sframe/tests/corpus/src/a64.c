// SPDX-License-Identifier: GPL-2.0
/*
 * AArch64 freestanding program (no libc): leaf functions, frame records,
 * large frames, alloca (CFA on the frame pointer), varargs, tail calls and
 * callee-saved register spills. Built with and without return address
 * signing (-mbranch-protection=pac-ret, A and B keys).
 */
#include <stdarg.h>

#define NOINLINE __attribute__((noinline))

volatile long sink;

NOINLINE void consume(volatile char *p) { sink += p[0]; }
NOINLINE long leaf(long a) { return a * 3 + 1; }
NOINLINE long small(long a) { volatile char buf[64]; buf[0] = (char)a; consume(buf); return leaf(a) + buf[1]; }
NOINLINE long large(long a) { volatile char buf[5000]; buf[0] = (char)a; consume(buf); return small(a) + buf[5]; }
NOINLINE long huge(long a) { volatile char buf[70000]; buf[0] = (char)a; consume(buf); return large(a) + buf[7]; }
NOINLINE long dyn(long n) { volatile char *p = __builtin_alloca(n); p[0] = (char)n; consume(p); return p[n - 1]; }
NOINLINE long tail(long a) { if (a > 100) return small(a); return leaf(a + 1); }

NOINLINE long sum(int n, ...)
{
	va_list ap;
	long s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, long);
	va_end(ap);
	return s;
}

NOINLINE long spill(long a, long b, long c, long d)
{
	long r = small(a), s = small(b + r), t = leaf(c + s), u = large(d ^ t);

	return a + b + c + d + r + s + t + u;
}

__attribute__((noreturn)) void _start(void)
{
	sink = huge(1) + dyn(32) + tail(5) + sum(3, 1L, 2L, 3L) + spill(1, 2, 3, 4);
	for (;;)
		__asm__ volatile("wfi");
}
