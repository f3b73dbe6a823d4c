// SPDX-License-Identifier: GPL-2.0
/*
 * A shared library built like a distribution's (no frame pointers, with
 * SFrame from gas), dlopen'ed by sframe_dlopen_test: a chain of calls
 * dl_chain -> dl_level1 -> dl_level2 -> the caller's callback.
 *
 * Its code refers to nothing outside its text (linked with -Bsymbolic,
 * its calls are direct; no data): a copy of the text runs anywhere, so
 * that sframe_file_test can run it from a mapping made executable by
 * mprotect() or moved by mremap().
 */
#define NOIPA __attribute__((noipa))

NOIPA unsigned long dl_level2(void (*cb)(void), unsigned long x)
{
	unsigned long buf[5];

	buf[0] = x;
	asm volatile("" : : "r"(buf) : "memory");
	cb();
	buf[4] = buf[0] * 3;
	asm volatile("" : : "r"(buf) : "memory");
	return buf[4];
}

NOIPA unsigned long dl_level1(void (*cb)(void), unsigned long x)
{
	unsigned long buf[11], i;

	buf[0] = x;
	for (i = 0; i < 500; i++)
		buf[0] = buf[0] * 6364136223846793005ul + 1;
	asm volatile("" : : "r"(buf) : "memory");
	x = dl_level2(cb, buf[0]);
	buf[10] = x;
	asm volatile("" : : "r"(buf) : "memory");
	return buf[10] + 1;
}

NOIPA void dl_chain(void (*cb)(void), unsigned long n)
{
	unsigned long i, x = 1;

	for (i = 0; i < n; i++)
		x = dl_level1(cb, x);
	asm volatile("" : : "r"(x));
}
