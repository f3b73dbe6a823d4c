// SPDX-License-Identifier: GPL-2.0
/* alloca, over-aligned locals and stack realignment: frame-pointer based CFA,
 * and (with stack arguments) a DRAP register, which SFrame V3 describes with
 * flexible FDEs (CFA = r10 + 0, CFA = *(rbp - 24), FP = *(rbp)). */
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) int use(volatile char *p, int n) { return p[n - 1]; }

__attribute__((noinline)) int dyn(int n)
{
	char *p = __builtin_alloca(n);

	memset(p, 1, n);
	return use(p, n);
}

__attribute__((noinline)) int aligned64(int n)
{
	__attribute__((aligned(64))) char buf[128];

	memset(buf, n, sizeof(buf));
	return use(buf, n);
}

__attribute__((noinline)) int drap(int a, int b, int c, int d, int e, int f,
				   int g, int h, int i)
{
	__attribute__((aligned(64))) char buf[128];
	char *p = __builtin_alloca(a);

	memset(p, 3, a);
	memset(buf, i, sizeof(buf));
	return use(buf, h) + use(p, g) + b + c + d + e + f;
}

__attribute__((noinline, force_align_arg_pointer)) int forced(int a, int b, int c,
							      int d, int e, int f,
							      int g, int h)
{
	__attribute__((aligned(32))) char buf[64];

	memset(buf, g, sizeof(buf));
	return use(buf, h) + a + b + c + d + e + f;
}

int main(int argc, char **argv)
{
	int c = argc + 8;

	(void)argv;
	printf("%d\n", dyn(c) + aligned64(c) + drap(c, c, c, c, c, c, c, c, c) +
		       forced(c, c, c, c, c, c, c, c));
	return 0;
}
