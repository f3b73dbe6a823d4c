// SPDX-License-Identifier: GPL-2.0
/* Functions in several text sections: an explicit .text.other section,
 * hot/cold attributes and (with -freorder-blocks-and-partition) functions
 * split into a hot part and a .cold part with their own FDEs. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline, section(".text.other"))) long other1(long x) { return x * 7 + 1; }
__attribute__((noinline, section(".text.other"))) long other2(long x)
{
	volatile char buf[64];

	buf[3] = (char)x;
	return other1(x) + buf[3];
}

__attribute__((noinline, cold)) void fail(const char *what, long v)
{
	fprintf(stderr, "fail: %s %ld\n", what, v);
	exit(2);
}

__attribute__((noinline, hot)) long hot(long x) { return x * x + other2(x); }

__attribute__((noinline)) long split(long x, long n)
{
	long r = 0;

	for (long i = 0; i < n; i++) {
		if (__builtin_expect(x + i == 123456789, 0)) {
			volatile char buf[512];

			buf[0] = (char)i;
			fail("split", buf[0] + r);
		}
		r += hot(x + i);
	}
	return r;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;

	if (n < 0)
		fail("main", n);
	printf("%ld\n", split(n, 100) + other2(n));
	return 0;
}
