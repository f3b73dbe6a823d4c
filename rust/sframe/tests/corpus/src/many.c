// SPDX-License-Identifier: GPL-2.0
/*
 * Many functions with different frame shapes: leaf functions, small and
 * large stack frames (1-, 2- and 4-byte CFA offsets), callee-saved register
 * spills, frame-pointer functions, varargs, recursion, tail calls and long
 * functions (2-byte FRE start offsets).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define FRAMEPTR __attribute__((optimize("no-omit-frame-pointer")))

volatile long sink;

NOINLINE long use(volatile char *p, long n) { sink += p[0] + n; return sink; }

#define LEAF(n) NOINLINE long leaf##n(long x) { return x * n + (x >> (n % 7)); }
#define FRAME(n, SZ) NOINLINE long frame##n(long x) { \
	volatile char buf[SZ]; buf[0] = (char)x; buf[SZ - 1] = (char)(x >> 1); \
	return use(buf, x) + buf[SZ / 2] + leaf##n(x); }
#define SPILL(n) NOINLINE long spill##n(long a, long b, long c, long d) { \
	long r = frame##n(a); long s = frame##n(b + r); long t = leaf##n(c + s); \
	long u = frame##n(d ^ t); return a + b + c + d + r + s + t + u; }
#define FP(n) FRAMEPTR NOINLINE long fp##n(long x) { \
	volatile char buf[16 * n + 8]; buf[0] = (char)x; return use(buf, x) + spill##n(x, x + 1, x + 2, x + 3); }

#define ALL(n, SZ) LEAF(n) FRAME(n, SZ) SPILL(n) FP(n)

ALL(1, 8) ALL(2, 24) ALL(3, 100) ALL(4, 120) ALL(5, 200) ALL(6, 1000)
ALL(7, 4000) ALL(8, 32000) ALL(9, 40000) ALL(10, 70000) ALL(11, 300000)
ALL(12, 64) ALL(13, 128) ALL(14, 256) ALL(15, 512) ALL(16, 2048)

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

NOINLINE long fib(long n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

NOINLINE long tail(long x) { if (x > 1000) return frame3(x); return leaf4(x + 1); }

/* A long function with a jump table: FRE start offsets above 255. */
NOINLINE long big_switch(long x, long y)
{
	long r = 0;

	for (long i = 0; i < y; i++) {
		switch ((x + i) & 31) {
#define C(k) case k: r += spill##k(x, i, r, k) * (k + 1); break;
		C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11) C(12) C(13) C(14) C(15) C(16)
#undef C
		default: r ^= fp3(r); break;
		}
	}
	return r;
}

int main(int argc, char **argv)
{
	long x = argc > 1 ? atol(argv[1]) : 3;
	long r = sum(4, x, 2L, 3L, 4L) + fib(x) + tail(x) + big_switch(x, 40);
#define C(k) r += fp##k(r & 7);
	C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11) C(12) C(13) C(14) C(15) C(16)
	printf("%ld\n", r);
	return 0;
}
