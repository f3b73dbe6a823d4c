// SPDX-License-Identifier: GPL-2.0
/*
 * The demo's shared library: a 5x5 convolution, four call levels deep
 * (filter_image -> filter_pass -> filter_row -> convolve_pixel).
 *
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe like the program.  The
 * kernel registers the .sframe sections of the executable and of ld.so at
 * exec, but not those of libraries that ld.so maps later: a constructor
 * registers this library's own PT_GNU_SFRAME through
 * prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, ...).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "libfilter.h"

/* From include/uapi/linux/{prctl,unwind_user}.h of the patched kernel. */
#ifndef PR_UNWIND_USER
#define PR_UNWIND_USER			82
#endif
#define UNWIND_USER_SFRAME_REGISTER	1
#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME			0x6474e554
#endif

struct unwind_user_sframe {
	uint64_t text_start, text_size, sframe_start, sframe_size, flags;
};

#define NOINLINE __attribute__((noinline, noclone))

static const int kernels[2][5][5] = {
	[FILTER_BLUR] = {
		{ 1, 4, 6, 4, 1 }, { 4, 16, 24, 16, 4 }, { 6, 24, 36, 24, 6 },
		{ 4, 16, 24, 16, 4 }, { 1, 4, 6, 4, 1 },
	},
	[FILTER_SHARPEN] = {
		{ 0, 0, -1, 0, 0 }, { 0, -1, -2, -1, 0 }, { -1, -2, 17, -2, -1 },
		{ 0, -1, -2, -1, 0 }, { 0, 0, -1, 0, 0 },
	},
};
static const int shift[2] = { 8, 0 };

static int registered;

/* Level 4, the hot loop: one output pixel. */
static NOINLINE int convolve_pixel(const struct image *img, int x, int y,
				   const int (*k)[5], int sh)
{
	int dx, dy, acc = 0;

	for (dy = -2; dy <= 2; dy++) {
		const unsigned char *row = img->px + (size_t)(y + dy) * img->w;

		for (dx = -2; dx <= 2; dx++)
			acc += k[dy + 2][dx + 2] * row[x + dx];
	}
	acc >>= sh;
	return acc < 0 ? 0 : acc > 255 ? 255 : acc;
}

/* Level 3: one row into the scratch buffer. */
static NOINLINE unsigned long filter_row(struct image *img, int y,
					 const int (*k)[5], int sh)
{
	unsigned char *out = img->tmp + (size_t)y * img->w;
	unsigned long sum = 0;
	int x;

	for (x = 2; x < img->w - 2; x++) {
		out[x] = convolve_pixel(img, x, y, k, sh);
		sum += out[x];
	}
	return sum;
}

/* Level 2: all rows, then copy back. */
static NOINLINE unsigned long filter_pass(struct image *img, enum filter_kind kind)
{
	unsigned long sum = 0;
	int y;

	for (y = 2; y < img->h - 2; y++)
		sum += filter_row(img, y, kernels[kind], shift[kind]);
	memcpy(img->px, img->tmp, (size_t)img->w * img->h);
	return sum;
}

/* Level 1, the library's entry point. */
NOINLINE unsigned long filter_image(struct image *img, enum filter_kind kind)
{
	unsigned long sum = filter_pass(img, kind);

	/* Work after the call: no tail call, filter_image keeps its frame. */
	return sum ^ (unsigned long)kind;
}

int filter_sframe_registered(void)
{
	return registered;
}

/* Find the program headers of the object that holds this function. */
static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	struct unwind_user_sframe *sec = data;
	uintptr_t self = (uintptr_t)&find_self;
	const ElfW(Phdr) *text = NULL, *sframe = NULL;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_GNU_SFRAME)
			sframe = p;
		else if (p->p_type == PT_LOAD && (p->p_flags & PF_X) &&
			 self >= info->dlpi_addr + p->p_vaddr &&
			 self < info->dlpi_addr + p->p_vaddr + p->p_memsz)
			text = p;
	}
	if (!text)
		return 0;		/* not us: go on */
	if (!sframe)
		return -1;		/* us, but built without --gsframe */
	sec->text_start = info->dlpi_addr + text->p_vaddr;
	sec->text_size = text->p_memsz;
	sec->sframe_start = info->dlpi_addr + sframe->p_vaddr;
	sec->sframe_size = sframe->p_memsz;
	sec->flags = 0;
	return 1;
}

/*
 * Register our .sframe with the kernel's unwinder.  Harmless elsewhere: an
 * older kernel fails the prctl with EINVAL and stacks through this library
 * are then left to frame pointers.  LIBFILTER_NO_REGISTER: not registered,
 * for a kernel that describes the library by its file's table (make demo's
 * per-file row).
 */
__attribute__((constructor)) static void register_sframe(void)
{
	struct unwind_user_sframe sec;

	if (getenv("LIBFILTER_NO_REGISTER"))
		return;
	memset(&sec, 0, sizeof(sec));
	if (dl_iterate_phdr(find_self, &sec) != 1)
		return;
	/* EEXIST: registered already, by an LD_AUDIT module for one. */
	if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER,
		  (unsigned long)&sec, sizeof(sec), 0) == 0 || errno == EEXIST)
		registered = 1;
	else if (getenv("LIBFILTER_VERBOSE"))
		perror("libfilter: prctl(PR_UNWIND_USER)");
}
