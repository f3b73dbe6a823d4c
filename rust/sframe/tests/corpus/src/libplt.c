// SPDX-License-Identifier: GPL-2.0
/* A shared library: the program below calls it through its PLT. */
#include <string.h>

long lib_add(long a, long b) { return a + b; }
long lib_mul(long a, long b) { return a * b; }
long lib_len(const char *s) { return (long)strlen(s); }
long lib_fold(long (*f)(long, long), long a, long b, long c) { return f(f(a, b), c); }
long lib_one(void) { return 1; }
long lib_two(void) { return 2; }
long lib_three(void) { return 3; }
long lib_four(void) { return 4; }
