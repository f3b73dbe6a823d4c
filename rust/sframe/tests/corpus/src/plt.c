// SPDX-License-Identifier: GPL-2.0
/* Calls a shared library and libc through the PLT (PC-mask FDEs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long lib_add(long a, long b);
long lib_mul(long a, long b);
long lib_len(const char *s);
long lib_fold(long (*f)(long, long), long a, long b, long c);
long lib_one(void);
long lib_two(void);
long lib_three(void);
long lib_four(void);

int main(int argc, char **argv)
{
	long r = lib_add(argc, 2) + lib_mul(argc, 3) + lib_len(argv[0]);

	r += lib_fold(lib_add, 1, 2, 3) + lib_one() + lib_two() + lib_three() + lib_four();
	r += (long)strlen(argv[0]) + atoi("7");
	printf("%ld\n", r);
	return 0;
}
