// SPDX-License-Identifier: GPL-2.0
/*
 * The prctl(PR_UNWIND_USER) ABI of the SFrame unwinder: every operation,
 * every bad argument and the errno it must give (see
 * include/uapi/linux/unwind_user.h and kernel/unwind_user/unwind_user.rs):
 *
 *   EINVAL      unknown op, non-zero unused arguments, struct size < 40 (48
 *               for QUERY; QUERY also > PAGE_SIZE), unknown flags,
 *               UNWIND_USER_SFRAME_F_ADDR in a 40-byte struct, sframe_addr
 *               without it, zero sizes, wrapping ranges, text not in one
 *               executable mapping
 *   EFAULT      unreadable struct, section not in one readable mapping,
 *               unwritable QUERY buffer
 *   E2BIG       section larger than 64 MiB; REGISTER struct larger than a
 *               page or with non-zero bytes past the known fields (as
 *               copy_struct_from_user())
 *   ENOSPC      more than 1024 sections (or 16 MiB of FDE tables)
 *   ERANGE      a function of the section lies outside the registered text
 *   EEXIST      text overlapping a registered text
 *   ENOENT      unregister of a key that is not registered
 *   EOPNOTSUPP  SFrame version, ABI or byte order this kernel does not
 *               decode, a return address not at CFA - 8 (AMD64) or at a
 *               fixed offset (AArch64)
 *   EBADMSG     malformed section
 *
 * Text windows are anonymous executable mappings; their sections are
 * synthetic (sframe_gen.h). Each test runs in its own child of the harness,
 * a fork: it starts with the executable's own section, registered at exec.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "sframe_gen.h"

#ifndef EBADMSG
#define EBADMSG 74
#endif

#define MAX_SFRAME_SIZE		(64ul << 20)
#define MAX_SECTIONS		1024

static size_t page;

static void __attribute__((constructor)) init_page(void)
{
	page = sysconf(_SC_PAGESIZE);
}

/* prctl REGISTER of @s with struct size @size: 0 or -errno. */
static long reg_size(const void *s, unsigned long size)
{
	return unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)s,
			    size, 0);
}

static long reg(const struct unwind_user_sframe *s)
{
	return reg_size(s, sizeof(*s));
}

static long unreg(uint64_t text_start)
{
	return unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, text_start, 0, 0);
}

static uint64_t nr_sections(void)
{
	struct unwind_user_info info;

	if (unwind_query(&info))
		return ~0ull;
	return info.nr_sections;
}

static void *map(size_t len, int prot)
{
	void *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/*
 * Write at @sec a valid section describing one function that fills
 * [@text, @text + @size) with a single row (CFA = SP + 8), and describe
 * the pair in @s. Returns the section length (> 0) or -1.
 */
static ssize_t one_func_section(void *sec, size_t cap, uint64_t text,
				uint32_t size, struct unwind_user_sframe *s)
{
	static const struct sfg_fre row[] = { SFG_SP(0, 8) };
	struct sfg_func f = {
		.start = text, .size = size, .nr_fres = 1, .fres = row,
	};
	ssize_t len = sfg_write(sec, cap, (uintptr_t)sec, 0, &f, 1, NULL);

	memset(s, 0, sizeof(*s));
	s->text_start = text;
	s->text_size = size;
	s->sframe_start = (uintptr_t)sec;
	s->sframe_size = len;
	return len;
}

/* A page of code and a page for its section, mapped apart. */
struct window {
	uint8_t *text;
	uint8_t *sec;
	struct unwind_user_sframe s;
};

static int window_init(struct window *w)
{
	w->text = map(page, PROT_READ | PROT_EXEC);
	w->sec = map(page, PROT_READ | PROT_WRITE);
	if (!w->text || !w->sec)
		return -1;
	return one_func_section(w->sec, page, (uintptr_t)w->text, page,
				&w->s) > 0 ? 0 : -1;
}

static void window_fini(struct window *w)
{
	munmap(w->text, page);
	munmap(w->sec, page);
}

static volatile unsigned long sink;

static void __attribute__((noipa)) spin(void *arg)
{
	unsigned long i, n = *(unsigned long *)arg, x = 1;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
}

static struct stacks stacks;

/*
 * QUERY: the executable's section was registered at exec (a static
 * executable: exactly one); sampling moves the counters; the struct size
 * and the buffer are checked.
 */
TEST(query)
{
	struct unwind_user_info before, after;
	struct unwind_user_sframe self_sec;
	unsigned long n = 20000000;
	uint8_t *buf, *ro;
	size_t i;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self_sec));
	ASSERT_EQ(0, unwind_query(&before));
	EXPECT_EQ(1, before.nr_sections);
	EXPECT_EQ(0, before.errors);
	EXPECT_EQ(0, before.dropped);

	ASSERT_EQ(0, sample_stacks(spin, &n, 4000, &stacks));
	ASSERT_EQ(0, unwind_query(&after));
	printf("# %u samples, %u stacks; unwinds +%llu sframe_frames +%llu fp_fallbacks +%llu\n",
	       stacks.samples, stacks.nr,
	       (unsigned long long)(after.unwinds - before.unwinds),
	       (unsigned long long)(after.sframe_frames - before.sframe_frames),
	       (unsigned long long)(after.fp_fallbacks - before.fp_fallbacks));
	ASSERT_GT(stacks.nr, 0);
	EXPECT_EQ(1, after.nr_sections);
	/* Most stacks: spin, sample_stacks, the test, the harness, main. */
	EXPECT_GE(after.unwinds - before.unwinds, 2 * stacks.nr);
	EXPECT_GE(after.sframe_frames - before.sframe_frames, stacks.nr);
	EXPECT_LE(after.sframe_frames - before.sframe_frames,
		  after.unwinds - before.unwinds);
	EXPECT_EQ(after.errors, before.errors);
	EXPECT_EQ(after.dropped, before.dropped);

	/* Sizes: at least the 48 known bytes, at most a page. */
	buf = map(2 * page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf, 0, 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf, 47, 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf, page + 1, 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf, ~0ul, 0));
	/*
	 * A larger buffer gets the bytes the kernel knows (those of the
	 * struct this test was built with), no more.
	 */
	memset(buf, 0xa5, 2 * page);
	EXPECT_EQ(0, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf, page, 0));
	EXPECT_EQ(1, ((struct unwind_user_info *)buf)->nr_sections);
	for (i = sizeof(struct unwind_user_info); i < 2 * page; i++)
		if (buf[i] != 0xa5)
			break;
	EXPECT_EQ(2 * page, i);
	/* A caller built against version 0 (48 bytes) gets 48 bytes. */
	memset(buf, 0xa5, 2 * page);
	EXPECT_EQ(0, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf,
				  UNWIND_USER_INFO_SIZE_VER0, 0));
	EXPECT_EQ(1, ((struct unwind_user_info *)buf)->nr_sections);
	EXPECT_EQ(0xa5, buf[UNWIND_USER_INFO_SIZE_VER0]);
	/* Unused argument. */
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)buf,
					sizeof(before), 1));
	/* Unwritable buffers. */
	EXPECT_EQ(-EFAULT, unwind_prctl(UNWIND_USER_QUERY, 0, sizeof(before), 0));
	ro = map(page, PROT_READ);
	ASSERT_NE(NULL, ro);
	EXPECT_EQ(-EFAULT, unwind_prctl(UNWIND_USER_QUERY, (unsigned long)ro,
					sizeof(before), 0));
	/* Straddling the end of a mapping. */
	munmap(buf + page, page);
	EXPECT_EQ(-EFAULT, unwind_prctl(UNWIND_USER_QUERY,
					(unsigned long)buf + page - 24,
					sizeof(before), 0));
	munmap(buf, page);
	munmap(ro, page);
}

/* Unknown operations and non-zero unused arguments. */
TEST(bad_op_and_args)
{
	static const unsigned long bad_ops[] = {
		0, 8, 9, 0xff, 0x100, 0x80000001ul, ~0ul,
		/* Known ops with high bits: must not alias the low 32. */
		(1ul << 32) | UNWIND_USER_SFRAME_REGISTER,
		(1ul << 32) | UNWIND_USER_SFRAME_UNREGISTER,
		(1ul << 32) | UNWIND_USER_QUERY,
		(1ul << 32) | UNWIND_USER_ASSIST_ENABLE,
		(1ul << 32) | UNWIND_USER_ASSIST_SUBMIT,
		(1ul << 32) | UNWIND_USER_FILE_ATTACH,
		(1ul << 32) | UNWIND_USER_FILE_DETACH,
	};
	struct unwind_user_info info;
	struct window w;
	unsigned int i;

	ASSERT_EQ(0, window_init(&w));
	for (i = 0; i < ARRAY_SIZE(bad_ops); i++) {
		EXPECT_EQ(-EINVAL, unwind_prctl(bad_ops[i], (unsigned long)&info,
						sizeof(info), 0))
			TH_LOG("op %#lx", bad_ops[i]);
		EXPECT_EQ(-EINVAL, unwind_prctl(bad_ops[i], (unsigned long)&w.s,
						sizeof(w.s), 0))
			TH_LOG("op %#lx", bad_ops[i]);
	}
	EXPECT_EQ(1, nr_sections());
	/* Clean up after a kernel that took a bad op for REGISTER. */
	if (nr_sections() != 1)
		unreg(w.s.text_start);

	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
					(unsigned long)&w.s, sizeof(w.s), 1));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
					(unsigned long)&w.s, sizeof(w.s), ~0ul));
	EXPECT_EQ(1, nr_sections());
	ASSERT_EQ(0, reg(&w.s));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					w.s.text_start, 1, 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					w.s.text_start, 0, 1));
	EXPECT_EQ(2, nr_sections());
	EXPECT_EQ(0, unreg(w.s.text_start));
	EXPECT_EQ(1, nr_sections());
	window_fini(&w);
}

/* The size-versioned struct of REGISTER: its size and unknown bytes. */
TEST(register_struct_size)
{
	uint8_t *buf;
	struct window w;
	size_t i;

	ASSERT_EQ(0, window_init(&w));
	buf = map(page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	memcpy(buf, &w.s, sizeof(w.s));

	EXPECT_EQ(-EINVAL, reg_size(buf, 0));
	EXPECT_EQ(-EINVAL, reg_size(buf, 8));
	EXPECT_EQ(-EINVAL, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER0 - 1));
	EXPECT_EQ(-E2BIG, reg_size(buf, page + 1));
	EXPECT_EQ(-E2BIG, reg_size(buf, ~0ul));
	EXPECT_EQ(1, nr_sections());

	/* Exactly the known size. */
	EXPECT_EQ(0, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER0));
	EXPECT_EQ(0, unreg(w.s.text_start));
	EXPECT_EQ(0, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER1));
	EXPECT_EQ(0, unreg(w.s.text_start));
	/* A later, larger struct whose new fields are zero. */
	EXPECT_EQ(0, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER1 + 8));
	EXPECT_EQ(0, unreg(w.s.text_start));
	EXPECT_EQ(0, reg_size(buf, page));
	EXPECT_EQ(0, unreg(w.s.text_start));
	/* ... and whose new fields are not: every byte is looked at. */
	for (i = UNWIND_USER_SFRAME_SIZE_VER1; i < UNWIND_USER_SFRAME_SIZE_VER1 + 8; i++) {
		buf[i] = 0x80;
		EXPECT_EQ(-E2BIG, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER1 + 8))
			TH_LOG("byte %zu", i);
		buf[i] = 0;
	}
	/* sframe_addr without the flag that gives it meaning. */
	for (i = UNWIND_USER_SFRAME_SIZE_VER0; i < UNWIND_USER_SFRAME_SIZE_VER1; i++) {
		buf[i] = 0x80;
		EXPECT_EQ(-EINVAL, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER1))
			TH_LOG("byte %zu", i);
		/* A VER0 caller's struct ends before it. */
		EXPECT_EQ(0, reg_size(buf, UNWIND_USER_SFRAME_SIZE_VER0));
		EXPECT_EQ(0, unreg(w.s.text_start));
		buf[i] = 0;
	}
	buf[page - 1] = 1;
	EXPECT_EQ(-E2BIG, reg_size(buf, page));
	EXPECT_EQ(0, reg_size(buf, page - 1));
	EXPECT_EQ(0, unreg(w.s.text_start));
	EXPECT_EQ(1, nr_sections());
	munmap(buf, page);
	window_fini(&w);
}

/* An unreadable REGISTER struct. */
TEST(register_struct_fault)
{
	struct window w;
	uint8_t *buf;

	ASSERT_EQ(0, window_init(&w));
	EXPECT_EQ(-EFAULT, reg_size(NULL, sizeof(w.s)));
	EXPECT_EQ(-EFAULT, reg_size((void *)-4096l, sizeof(w.s)));
	buf = map(2 * page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, buf);
	/* The known fields readable, the zero tail past the mapping's end. */
	memcpy(buf + page - sizeof(w.s), &w.s, sizeof(w.s));
	ASSERT_EQ(0, mprotect(buf + page, page, PROT_NONE));
	EXPECT_EQ(-EFAULT, reg_size(buf + page - sizeof(w.s), sizeof(w.s) + 8));
	EXPECT_EQ(0, reg_size(buf + page - sizeof(w.s), sizeof(w.s)));
	EXPECT_EQ(0, unreg(w.s.text_start));
	/* The known fields themselves cut by the end of the mapping. */
	memcpy(buf + page - 16, &w.s, 16);
	EXPECT_EQ(-EFAULT, reg_size(buf + page - 16, sizeof(w.s)));
	EXPECT_EQ(-EFAULT, reg_size(buf + page, sizeof(w.s)));
	EXPECT_EQ(1, nr_sections());
	munmap(buf, 2 * page);
	window_fini(&w);
}

/* The fields of the struct: flags, sizes, wrapping ranges. */
TEST(register_fields)
{
	struct unwind_user_sframe s;
	struct window w;

	ASSERT_EQ(0, window_init(&w));

	s = w.s;
	s.flags = UNWIND_USER_SFRAME_F_ADDR << 1;
	EXPECT_EQ(-EINVAL, reg(&s));
	s.flags = 1ull << 63;
	EXPECT_EQ(-EINVAL, reg(&s));

	s = w.s;
	s.text_size = 0;
	EXPECT_EQ(-EINVAL, reg(&s));
	s = w.s;
	s.sframe_size = 0;
	EXPECT_EQ(-EINVAL, reg(&s));

	/* Wrapping ranges. */
	s = w.s;
	s.text_start = ~0ull - 10;
	s.text_size = 100;
	EXPECT_EQ(-EINVAL, reg(&s));
	s = w.s;
	s.text_size = ~0ull;
	EXPECT_EQ(-EINVAL, reg(&s));
	s = w.s;
	s.sframe_start = ~0ull - 10;
	s.sframe_size = 100;
	EXPECT_EQ(-EINVAL, reg(&s));
	s = w.s;
	s.sframe_size = ~0ull;
	EXPECT_EQ(-EINVAL, reg(&s));

	/* Sections larger than 64 MiB, wherever they are. */
	s = w.s;
	s.sframe_size = MAX_SFRAME_SIZE + 1;
	EXPECT_EQ(-E2BIG, reg(&s));
	s.sframe_size = 1ull << 32;
	EXPECT_EQ(-E2BIG, reg(&s));
	s.sframe_size = (1ull << 32) + w.s.sframe_size;
	EXPECT_EQ(-E2BIG, reg(&s));
	s.sframe_start = 0;
	s.sframe_size = 1ull << 40;
	EXPECT_EQ(-E2BIG, reg(&s));

	EXPECT_EQ(1, nr_sections());
	EXPECT_EQ(0, reg(&w.s));
	EXPECT_EQ(2, nr_sections());
	window_fini(&w);
}

/* A section of exactly 64 MiB is accepted (it may have trailing bytes). */
TEST(register_max_size)
{
	struct unwind_user_sframe s;
	uint8_t *text, *big;

	text = map(page, PROT_READ | PROT_EXEC);
	big = map(MAX_SFRAME_SIZE + page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, big);
	ASSERT_LT(0, one_func_section(big, page, (uintptr_t)text, page, &s));
	s.sframe_size = MAX_SFRAME_SIZE;
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(0, unreg(s.text_start));
	s.sframe_size = MAX_SFRAME_SIZE + 1;
	EXPECT_EQ(-E2BIG, reg(&s));
	EXPECT_EQ(1, nr_sections());
	munmap(big, MAX_SFRAME_SIZE + page);
	munmap(text, page);
}

/* The text must lie in one executable mapping. */
TEST(register_text_mapping)
{
	struct unwind_user_sframe s;
	uint8_t *two, *rw, *sec;

	sec = map(page, PROT_READ | PROT_WRITE);
	rw = map(page, PROT_READ | PROT_WRITE);
	two = map(3 * page, PROT_READ | PROT_EXEC);
	ASSERT_NE(NULL, sec);
	ASSERT_NE(NULL, rw);
	ASSERT_NE(NULL, two);
	/* Two executable mappings side by side (different flags) and a hole. */
	ASSERT_EQ(0, mprotect(two + page, page,
			      PROT_READ | PROT_WRITE | PROT_EXEC));
	ASSERT_EQ(0, munmap(two + 2 * page, page));

	/* Not executable. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)rw, page, &s));
	EXPECT_EQ(-EINVAL, reg(&s));
	/* Across two executable mappings. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)two + page / 2,
				      page, &s));
	EXPECT_EQ(-EINVAL, reg(&s));
	/* Past the end of the mapping, into the hole. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)two + page + 16,
				      page, &s));
	EXPECT_EQ(-EINVAL, reg(&s));
	/* Not mapped at all. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)two + 2 * page,
				      page, &s));
	EXPECT_EQ(-EINVAL, reg(&s));
	EXPECT_EQ(1, nr_sections());

	/* Each executable page alone is fine, RWX too. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)two, page, &s));
	EXPECT_EQ(0, reg(&s));
	ASSERT_LT(0, one_func_section(sec + 256, page - 256,
				      (uintptr_t)two + page, page, &s));
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(3, nr_sections());
	munmap(two, 2 * page);
	EXPECT_EQ(1, nr_sections());
	munmap(rw, page);
	munmap(sec, page);
}

/*
 * Every function of the section must lie in the registered text: a section
 * for other code (or one copied away from its text, whose addresses are
 * PC-relative) would describe nothing there.
 */
TEST(register_functions_outside_text)
{
	struct unwind_user_sframe s;
	uint8_t *text, *sec;

	text = map(2 * page, PROT_READ | PROT_EXEC);
	sec = map(page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, sec);

	/* A function in the next page, the text being the first. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)text + page, 64, &s));
	s.text_start = (uintptr_t)text;
	s.text_size = page;
	EXPECT_EQ(-ERANGE, reg(&s));
	/* Straddling the end of the text. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)text + page - 16, 32, &s));
	s.text_start = (uintptr_t)text;
	s.text_size = page;
	EXPECT_EQ(-ERANGE, reg(&s));
	/* Starting before it. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)text, 64, &s));
	s.text_start = (uintptr_t)text + 16;
	s.text_size = page;
	EXPECT_EQ(-ERANGE, reg(&s));
	/* Inside it: accepted. */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)text + page, 64, &s));
	s.text_size = page;
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(0, unreg(s.text_start));
	EXPECT_EQ(1, nr_sections());
	munmap(text, 2 * page);
	munmap(sec, page);
}

/*
 * AMD64 sections put the return address at CFA - 8, AArch64 ones at no
 * fixed offset (SFG_FIXED_RA); others are refused.
 */
TEST(register_ra_offset)
{
	struct unwind_user_sframe s;
	struct window w;

	ASSERT_EQ(0, window_init(&w));
	s = w.s;
	w.sec[SFH_FIXED_RA] = (uint8_t)-16;
	EXPECT_EQ(-EOPNOTSUPP, reg(&s));
	/* The other ABI's. */
	w.sec[SFH_FIXED_RA] = SFG_FIXED_RA ? 0 : (uint8_t)-8;
	EXPECT_EQ(-EOPNOTSUPP, reg(&s));
	w.sec[SFH_FIXED_RA] = (uint8_t)SFG_FIXED_RA;
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(0, unreg(s.text_start));
	EXPECT_EQ(1, nr_sections());
	window_fini(&w);
}

/* The section must lie in one readable mapping. */
TEST(register_section_mapping)
{
	struct unwind_user_sframe s;
	uint8_t *text, *two, *none, *xo;
	ssize_t len;

	text = map(page, PROT_READ | PROT_EXEC);
	two = map(2 * page, PROT_READ | PROT_WRITE);
	none = map(page, PROT_READ | PROT_WRITE);
	xo = map(page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, two);
	ASSERT_NE(NULL, none);
	ASSERT_NE(NULL, xo);

	/* Unreadable. */
	ASSERT_LT(0, one_func_section(none, page, (uintptr_t)text, page, &s));
	ASSERT_EQ(0, mprotect(none, page, PROT_NONE));
	EXPECT_EQ(-EFAULT, reg(&s));
	/* Executable but not readable (no VM_READ). */
	ASSERT_LT(0, one_func_section(xo, page, (uintptr_t)text, page, &s));
	ASSERT_EQ(0, mprotect(xo, page, PROT_EXEC));
	EXPECT_EQ(-EFAULT, reg(&s));
	/* Not mapped. */
	ASSERT_EQ(0, munmap(none, page));
	s.sframe_start = (uintptr_t)none;
	EXPECT_EQ(-EFAULT, reg(&s));
	/* Readable, but across two mappings (RW, then R). */
	len = one_func_section(two + page - 20, 2 * page, (uintptr_t)text,
			       page, &s);
	ASSERT_LT(20, len);
	ASSERT_EQ(0, mprotect(two + page, page, PROT_READ));
	EXPECT_EQ(-EFAULT, reg(&s));
	/* Running past the end of its mapping. */
	ASSERT_EQ(0, mprotect(two + page, page, PROT_READ | PROT_WRITE));
	ASSERT_LT(0, one_func_section(two, page, (uintptr_t)text, page, &s));
	s.sframe_size = 2 * page + 1;
	EXPECT_EQ(-EFAULT, reg(&s));
	EXPECT_EQ(1, nr_sections());
	/* Read-only is enough. */
	s.sframe_size = page;
	ASSERT_EQ(0, mprotect(two, 2 * page, PROT_READ));
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(2, nr_sections());
	munmap(two, 2 * page);
	munmap(xo, page);
	munmap(text, page);
}

/* Overlapping texts: EEXIST; touching ones are fine. */
TEST(register_overlap)
{
	struct unwind_user_sframe s, self_sec;
	uint8_t *text, *sec;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self_sec));
	text = map(4 * page, PROT_READ | PROT_EXEC);
	sec = map(4 * page, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, sec);

	/* [text + page, text + 2 * page) */
	ASSERT_LT(0, one_func_section(sec, page, (uintptr_t)text + page,
				      page, &s));
	ASSERT_EQ(0, reg(&s));
	EXPECT_EQ(-EEXIST, reg(&s));
	/* Overlapping from below, from above, inside, around. */
	ASSERT_LT(0, one_func_section(sec + page, page,
				      (uintptr_t)text + page / 2, page, &s));
	EXPECT_EQ(-EEXIST, reg(&s));
	ASSERT_LT(0, one_func_section(sec + page, page,
				      (uintptr_t)text + 2 * page - 1, page, &s));
	EXPECT_EQ(-EEXIST, reg(&s));
	ASSERT_LT(0, one_func_section(sec + page, page,
				      (uintptr_t)text + page + 8, 8, &s));
	EXPECT_EQ(-EEXIST, reg(&s));
	ASSERT_LT(0, one_func_section(sec + page, page, (uintptr_t)text,
				      3 * page, &s));
	EXPECT_EQ(-EEXIST, reg(&s));
	/* The executable's own section again. */
	EXPECT_EQ(-EEXIST, reg(&self_sec));
	EXPECT_EQ(2, nr_sections());
	/* Touching below and above. */
	ASSERT_LT(0, one_func_section(sec + page, page, (uintptr_t)text,
				      page, &s));
	EXPECT_EQ(0, reg(&s));
	ASSERT_LT(0, one_func_section(sec + 2 * page, page,
				      (uintptr_t)text + 2 * page, page, &s));
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(4, nr_sections());
	EXPECT_EQ(0, unreg((uintptr_t)text));
	EXPECT_EQ(0, unreg((uintptr_t)text + page));
	EXPECT_EQ(0, unreg((uintptr_t)text + 2 * page));
	EXPECT_EQ(1, nr_sections());
	munmap(text, 4 * page);
	munmap(sec, 4 * page);
}

static const char *const spin_chain[] = { "spin", "sample_stacks" };

/*
 * UNREGISTER takes the text start of a registration; anything else is
 * ENOENT. The executable's own section can go and come back, and unwinds
 * with SFrame again once it is back.
 */
TEST(unregister_and_reregister_self)
{
	struct unwind_user_info before, after;
	struct unwind_user_sframe self_sec;
	unsigned long n = 15000000;
	struct window w;
	struct tally t;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self_sec));
	ASSERT_EQ(0, window_init(&w));

	EXPECT_EQ(-ENOENT, unreg(0));
	EXPECT_EQ(-ENOENT, unreg(w.s.text_start));
	EXPECT_EQ(-ENOENT, unreg(~0ul));
	ASSERT_EQ(0, reg(&w.s));
	EXPECT_EQ(-ENOENT, unreg(w.s.text_start + 1));
	EXPECT_EQ(-ENOENT, unreg(w.s.text_start - 1));
	EXPECT_EQ(-ENOENT, unreg(self_sec.text_start + 1));
	EXPECT_EQ(0, unreg(w.s.text_start));
	EXPECT_EQ(-ENOENT, unreg(w.s.text_start));

	/* The executable's section is keyed by its text start. */
	EXPECT_EQ(0, unreg(self_sec.text_start));
	EXPECT_EQ(0, nr_sections());
	EXPECT_EQ(-ENOENT, unreg(self_sec.text_start));
	ASSERT_EQ(0, reg(&self_sec));
	EXPECT_EQ(1, nr_sections());

	ASSERT_EQ(0, unwind_query(&before));
	ASSERT_EQ(0, sample_stacks(spin, &n, 4000, &stacks));
	ASSERT_EQ(0, unwind_query(&after));
	t = chain_check(&stacks, spin_chain, ARRAY_SIZE(spin_chain), "main", 3);
	printf("# re-registered: %d stacks in spin, %d complete\n",
	       t.in_chain, t.complete);
	ASSERT_GE(t.in_chain, 5);
	EXPECT_EQ(t.in_chain, t.complete);
	EXPECT_GT(after.sframe_frames, before.sframe_frames);
	window_fini(&w);
}

/*
 * Sections of versions, ABIs and byte orders this kernel does not decode:
 * EOPNOTSUPP; a broken magic: EBADMSG.
 */
TEST(unsupported_sections)
{
	static const uint8_t versions[] = { 0, 4, 5, 0x80, 0xff };
	static const uint8_t abis[] = { 0, 5, 6, 0x83, 0xff };
	struct window w;
	uint8_t hdr[SFRAME_HDR_SIZE];
	unsigned int i;

	ASSERT_EQ(0, window_init(&w));
	memcpy(hdr, w.sec, sizeof(hdr));

	for (i = 0; i < ARRAY_SIZE(versions); i++) {
		w.sec[SFH_VERSION] = versions[i];
		EXPECT_EQ(-EOPNOTSUPP, reg(&w.s)) TH_LOG("version %u", versions[i]);
	}
	memcpy(w.sec, hdr, sizeof(hdr));
	for (i = 0; i < ARRAY_SIZE(abis); i++) {
		w.sec[SFH_ABI] = abis[i];
		EXPECT_EQ(-EOPNOTSUPP, reg(&w.s)) TH_LOG("abi %u", abis[i]);
	}
	memcpy(w.sec, hdr, sizeof(hdr));
	/* Big-endian magic: a section for a big-endian target. */
	w.sec[0] = 0xde;
	w.sec[1] = 0xe2;
	EXPECT_EQ(-EOPNOTSUPP, reg(&w.s));
	w.sec[0] = 0xe2;
	w.sec[1] = 0xdf;
	EXPECT_EQ(-EBADMSG, reg(&w.s));
	w.sec[1] = 0;
	EXPECT_EQ(-EBADMSG, reg(&w.s));
	EXPECT_EQ(1, nr_sections());
	memcpy(w.sec, hdr, sizeof(hdr));
	EXPECT_EQ(0, reg(&w.s));
	window_fini(&w);
}

/*
 * Sections of the other architectures SFrame knows. An AArch64
 * little-endian section is well formed, but its rules (return address in
 * the link register, x29 as frame pointer) do not describe x86-64 code:
 * this kernel cannot use it and must say EOPNOTSUPP rather than unwind
 * x86-64 frames with it; the same for an AMD64 section (return address at
 * CFA - 8) on arm64. A big-endian ABI under a little-endian magic is
 * either unsupported or inconsistent: EOPNOTSUPP or EBADMSG.
 */
TEST(foreign_abi)
{
	static const uint8_t be_abis[] = {
		SFRAME_ABI_AARCH64_ENDIAN_BIG, SFRAME_ABI_S390X_ENDIAN_BIG,
	};
	struct window w;
	unsigned int i;
	long r;

	ASSERT_EQ(0, window_init(&w));
#ifdef __aarch64__
	w.sec[SFH_ABI] = SFRAME_ABI_AMD64_ENDIAN_LITTLE;
	w.sec[SFH_FIXED_RA] = (uint8_t)-8;
	r = reg(&w.s);
	EXPECT_EQ(-EOPNOTSUPP, r) TH_LOG("AMD64 section registered for arm64 code");
#else
	w.sec[SFH_ABI] = SFRAME_ABI_AARCH64_ENDIAN_LITTLE;
	r = reg(&w.s);
	EXPECT_EQ(-EOPNOTSUPP, r) TH_LOG("AArch64 section registered for x86-64 code");
#endif
	if (!r)
		EXPECT_EQ(0, unreg(w.s.text_start));
	for (i = 0; i < ARRAY_SIZE(be_abis); i++) {
		w.sec[SFH_ABI] = be_abis[i];
		r = reg(&w.s);
		EXPECT_TRUE(r == -EOPNOTSUPP || r == -EBADMSG)
			TH_LOG("abi %u: %ld", be_abis[i], r);
		if (!r)
			EXPECT_EQ(0, unreg(w.s.text_start));
	}
	EXPECT_EQ(1, nr_sections());
	window_fini(&w);
}

/*
 * At most 1024 sections per address space. The executable's own section
 * is unregistered first, so that 1024 windows of one executable mapping
 * fill the registry; the 1025th gets ENOSPC until one goes.
 */
TEST(limit_1024_sections)
{
	const size_t win = 16, slot = 64;
	struct unwind_user_sframe s, self_sec;
	uint8_t *text, *secs;
	unsigned int i;
	long r;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self_sec));
	text = map((MAX_SECTIONS + 1) * win, PROT_READ | PROT_EXEC);
	secs = map((MAX_SECTIONS + 1) * slot, PROT_READ | PROT_WRITE);
	ASSERT_NE(NULL, text);
	ASSERT_NE(NULL, secs);
	ASSERT_EQ(0, unreg(self_sec.text_start));

	for (i = 0; i < MAX_SECTIONS; i++) {
		ASSERT_LT(0, one_func_section(secs + i * slot, slot,
					      (uintptr_t)text + i * win, win, &s));
		r = reg(&s);
		if (r) {
			EXPECT_EQ(0, r) TH_LOG("window %u", i);
			break;
		}
	}
	EXPECT_EQ(MAX_SECTIONS, nr_sections());
	ASSERT_LT(0, one_func_section(secs + i * slot, slot,
				      (uintptr_t)text + i * win, win, &s));
	EXPECT_EQ(-ENOSPC, reg(&s));
	EXPECT_EQ(-ENOSPC, reg(&self_sec));
	EXPECT_EQ(MAX_SECTIONS, nr_sections());
	/* One goes, one comes. */
	EXPECT_EQ(0, unreg((uintptr_t)text));
	EXPECT_EQ(0, reg(&s));
	EXPECT_EQ(-ENOSPC, reg(&self_sec));
	EXPECT_EQ(0, unreg(s.text_start));

	for (i = 1; i < MAX_SECTIONS; i++) {
		r = unreg((uintptr_t)text + i * win);
		if (r) {
			EXPECT_EQ(0, r) TH_LOG("window %u", i);
			break;
		}
	}
	EXPECT_EQ(0, nr_sections());
	EXPECT_EQ(0, reg(&self_sec));
	EXPECT_EQ(1, nr_sections());
	munmap(text, (MAX_SECTIONS + 1) * win);
	munmap(secs, (MAX_SECTIONS + 1) * slot);
}

TEST_HARNESS_MAIN
