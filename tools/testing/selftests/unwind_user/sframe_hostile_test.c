// SPDX-License-Identifier: GPL-2.0
/*
 * Hostile SFrame sections and hostile address-space changes.
 *
 * Every section here describes the JIT window of jit_code.h and lives in
 * the window's own section page, so that a section the kernel accepts can
 * also be unwound through while the JIT code runs.
 *
 *  - Malformed sections, one rule broken at a time, and every truncation of
 *    a valid section: REGISTER refuses each with the documented errno
 *    (EBADMSG malformed, EOPNOTSUPP version/ABI/byte order, EINVAL empty).
 *  - Random byte flips of valid sections (fixed seed): each is refused with
 *    EBADMSG, EOPNOTSUPP or ERANGE (a function moved out of the text), or
 *    accepted; a sample of the accepted ones is
 *    then unwound through under perf, and every unwind must end cleanly.
 *  - A registered section rewritten in place, or made unreadable, while the
 *    code it covers is sampled: no crash, the errors are counted, a
 *    malformed section is dropped, an unreadable one is not.
 *  - munmap/mremap/MAP_FIXED of the section or of the text drops the
 *    registration; unmapping something else does not.
 *  - 8 threads registering and unregistering at once, on distinct and on
 *    overlapping windows, while another thread is sampled in the JIT code.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "jit_code.h"

#ifndef EBADMSG
#define EBADMSG 74
#endif

#define LOOPS		5000
#define NR_FLIPS	3000	/* random mutations, over three base sections */
#define MAX_KEPT	24	/* accepted mutations unwound through */

static struct stacks stacks;

static uint64_t rng = 0x5eed5eed12345678ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static long reg(struct jit *j, size_t len)
{
	j->reg.sframe_size = len;
	return jit_register(j);
}

static uint64_t nr_sections(void)
{
	struct unwind_user_info info;

	return unwind_query(&info) ? ~0ull : info.nr_sections;
}

static const char *errname(long r)
{
	switch (r) {
	case 0:
		return "accepted";
	case -EINVAL:
		return "EINVAL";
	case -EFAULT:
		return "EFAULT";
	case -EBADMSG:
		return "EBADMSG";
	case -EOPNOTSUPP:
		return "EOPNOTSUPP";
	case -ERANGE:
		return "ERANGE";
	case -EEXIST:
		return "EEXIST";
	case -E2BIG:
		return "E2BIG";
	case -ENOENT:
		return "ENOENT";
	}
	return "other";
}

/* Write the JIT's section from @f into its page; returns the length. */
static ssize_t write_funcs(struct jit *j, unsigned int opts,
			   const struct sfg_func *f, unsigned int n,
			   struct sfg_layout *l)
{
	struct sfg_layout dummy;

	return sfg_write(j->sec, j->page, (uintptr_t)j->sec, opts, f, n,
			 l ? l : &dummy);
}

/* The valid section, with its layout. */
static ssize_t write_valid(struct jit *j, struct sfg_layout *l)
{
	struct sfg_func f[JIT_NR_FUNCS];

	jit_funcs(j, f);
	return write_funcs(j, 0, f, JIT_NR_FUNCS, l);
}

/*
 * Structured malformations. Each case writes its section into the JIT's
 * section page and returns the length to register (or -1 if it could not
 * be written); @expect is the errno REGISTER must give (0: accepted).
 */
struct hcase {
	const char *name;
	long expect;
	ssize_t (*make)(struct jit *j, long arg);
	long arg;
};

static struct sfg_fre rows_buf[JIT_NR_FUNCS][8];

/* The JIT functions with their rows copied, for editing. */
static void funcs_copy(struct jit *j, struct sfg_func *f)
{
	unsigned int i;

	jit_funcs(j, f);
	for (i = 0; i < JIT_NR_FUNCS; i++) {
		memcpy(rows_buf[i], f[i].fres, f[i].nr_fres * sizeof(rows_buf[i][0]));
		f[i].fres = rows_buf[i];
	}
}

static ssize_t mk_order(struct jit *j, long order)
{
	struct sfg_func f[JIT_NR_FUNCS], g[JIT_NR_FUNCS];
	unsigned int i;

	jit_funcs(j, f);
	for (i = 0; i < JIT_NR_FUNCS; i++)
		g[i] = f[(order >> (4 * i)) & 0xf];
	return write_funcs(j, order >> 16, g, JIT_NR_FUNCS, NULL);
}

/* Function A's size set to @arg. */
static ssize_t mk_size_a(struct jit *j, long size)
{
	struct sfg_func f[JIT_NR_FUNCS];

	jit_funcs(j, f);
	f[JIT_A].size = size;
	return write_funcs(j, 0, f, JIT_NR_FUNCS, NULL);
}

/* Row 2 of function B starts at @arg (rows: 0, JIT_B_ROW1, JIT_B_ROW2, ...). */
static ssize_t mk_row_b2(struct jit *j, long start)
{
	struct sfg_func f[JIT_NR_FUNCS];

	funcs_copy(j, f);
	rows_buf[JIT_B][2].start = start;
	return write_funcs(j, 0, f, JIT_NR_FUNCS, NULL);
}

/* Last row of function C starts at @arg (size JIT_C_SIZE). */
static ssize_t mk_row_c_last(struct jit *j, long start)
{
	struct sfg_func f[JIT_NR_FUNCS];

	funcs_copy(j, f);
	rows_buf[JIT_C][f[JIT_C].nr_fres - 1].start = start;
	return write_funcs(j, 0, f, JIT_NR_FUNCS, NULL);
}

/*
 * Function A made PC-mask with repetition size @arg (its rows: 0, 4, and
 * one past 0x10 before JIT_A_SIZE).
 */
static ssize_t mk_pcmask_a(struct jit *j, long rep)
{
	struct sfg_func f[JIT_NR_FUNCS];

	jit_funcs(j, f);
	f[JIT_A].pcmask = 1;
	f[JIT_A].rep_size = rep;
	return write_funcs(j, 0, f, JIT_NR_FUNCS, NULL);
}

/* Last row of function A marks the outermost frame (valid). */
static ssize_t mk_outermost(struct jit *j, long unused)
{
	struct sfg_func f[JIT_NR_FUNCS];

	funcs_copy(j, f);
	rows_buf[JIT_A][f[JIT_A].nr_fres - 1].outermost = 1;
	return write_funcs(j, 0, f, JIT_NR_FUNCS, NULL);
}

/* No functions at all (valid, covers nothing). */
static ssize_t mk_empty(struct jit *j, long unused)
{
	return write_funcs(j, 0, NULL, 0, NULL);
}

/* Valid section, byte at @arg & 0xffff set to @arg >> 16. */
static ssize_t mk_byte(struct jit *j, long arg)
{
	ssize_t len = write_valid(j, NULL);

	j->sec[arg & 0xffff] = arg >> 16;
	return len;
}

/* Valid section, header u32 at @arg & 0xff plus @arg >> 8 (see ADD()). */
static ssize_t mk_hdr_add(struct jit *j, long arg)
{
	ssize_t len = write_valid(j, NULL);
	size_t off = arg & 0xff;

	sfg_put32(j->sec, off, sfg_get32(j->sec, off) + (int32_t)(arg >> 8));
	return len;
}

/* Valid section, u32 at @arg & 0xffff set to 0xffffffff, or @arg >> 16. */
static ssize_t mk_u32(struct jit *j, long arg)
{
	ssize_t len = write_valid(j, NULL);
	uint32_t v = arg >> 16 ? (uint32_t)(arg >> 16) : 0xffffffffu;

	sfg_put32(j->sec, arg & 0xffff, v);
	return len;
}

#define FDE(i, field)	(SFRAME_HDR_SIZE + (i) * SFRAME_FDE_SIZE + (field))
/* Section offset of the info byte of function A's first row. */
#define FRE0_INFO	(SFRAME_HDR_SIZE + JIT_NR_FUNCS * SFRAME_FDE_SIZE + 1)
#define ORDER(a, b, c)	((a) | (b) << 4 | (c) << 8)
/* mk_hdr_add()'s argument: header field @off, plus @d. */
#define ADD(off, d)	((off) + (long)(d) * 256)

static const struct hcase cases[] = {
	{ "valid", 0, mk_order, ORDER(0, 1, 2) },
	{ "valid, FDE_SORTED flag clear", 0, mk_order,
	  ORDER(0, 1, 2) | SFG_UNSORTED_FLAG << 16 },
	{ "valid, FDE_FUNC_START_PCREL", 0, mk_order,
	  ORDER(0, 1, 2) | SFG_PCREL << 16 },
	{ "valid, FRAME_POINTER flag", 0, mk_byte,
	  SFH_FLAGS | (SFRAME_F_FDE_SORTED | SFRAME_F_FRAME_POINTER) << 16 },
	{ "valid, outermost row", 0, mk_outermost, 0 },
	{ "valid, no functions", 0, mk_empty, 0 },
	{ "valid, row at function end", 0, mk_row_c_last, JIT_C_SIZE },
	{ "valid, PC-mask with rows in the block", 0, mk_pcmask_a, JIT_A_SIZE },
	{ "FDEs unsorted", -EBADMSG, mk_order, ORDER(1, 0, 2) },
	{ "FDEs unsorted (last two)", -EBADMSG, mk_order, ORDER(0, 2, 1) },
	/* Valid SFrame (no claim of order), but not supported: EOPNOTSUPP. */
	{ "FDEs reversed, no sorted flag", -EOPNOTSUPP, mk_order,
	  ORDER(2, 1, 0) | SFG_UNSORTED_FLAG << 16 },
	{ "FDE duplicated", -EBADMSG, mk_order, ORDER(0, 0, 2) },
	{ "FDEs overlap", -EBADMSG, mk_size_a, 0x21 },
	{ "FDE overlaps all later ones", -EBADMSG, mk_size_a, 0xffffffff },
	{ "function of size 0 with rows", -EBADMSG, mk_size_a, 0 },
	{ "FREs out of order", -EBADMSG, mk_row_b2, 0 },
	{ "FREs with equal starts", -EBADMSG, mk_row_b2, JIT_B_ROW1 },
	{ "FRE past function end", -EBADMSG, mk_row_c_last, JIT_C_SIZE + 1 },
	{ "FRE far past function end", -EBADMSG, mk_row_c_last, 0xff },
	{ "PC-mask, repetition size 0", -EBADMSG, mk_pcmask_a, 0 },
	{ "PC-mask, repetition larger than function", -EBADMSG, mk_pcmask_a,
	  JIT_A_SIZE + 1 },
	{ "PC-mask, row past repetition block", -EBADMSG, mk_pcmask_a, 0x10 },
	{ "FRE data past sub-section end", -EBADMSG, mk_hdr_add,
	  ADD(SFH_FRE_LEN, -1) },
	{ "FDE's rows start past sub-section end", -EBADMSG, mk_u32,
	  FDE(2, SFD_FRE_OFF) | 32l << 16 },
	{ "FDE's rows at offset 0xffffffff", -EBADMSG, mk_u32, FDE(2, SFD_FRE_OFF) },
	{ "FDE with 0xffffffff rows", -EBADMSG, mk_u32, FDE(0, SFD_NUM_FRES) },
	{ "FDE with 65536 rows", -EBADMSG, mk_u32,
	  FDE(0, SFD_NUM_FRES) | 0x10000l << 16 },
	{ "FDE with one row more", -EBADMSG, mk_u32,
	  FDE(2, SFD_NUM_FRES) | 4l << 16 },
	{ "FDE FRE type 3", -EBADMSG, mk_byte, FDE(0, SFD_INFO) | 3 << 16 },
	{ "FDE FRE type 15", -EBADMSG, mk_byte, FDE(0, SFD_INFO) | 15 << 16 },
	{ "FRE data word size 3", -EBADMSG, mk_byte,
	  FRE0_INFO | (SFRAME_FRE_CFA_SP | SFRAME_FRE_COUNT(1) | 3 << 5) << 16 },
	{ "FRE with 7 data words", -EBADMSG, mk_byte,
	  FRE0_INFO | (SFRAME_FRE_CFA_SP | SFRAME_FRE_COUNT(7)) << 16 },
	{ "FRE with 15 data words", -EBADMSG, mk_byte,
	  FRE0_INFO | (SFRAME_FRE_CFA_SP | SFRAME_FRE_COUNT(15)) << 16 },
#ifdef __aarch64__
	/* The CFA's, the RA's and the FP's: no more. */
	{ "FRE with a fourth data word", -EBADMSG, mk_byte,
	  FRE0_INFO | (SFRAME_FRE_CFA_SP | SFRAME_FRE_COUNT(4)) << 16 },
#else
	{ "FRE with a third data word", -EBADMSG, mk_byte,
	  FRE0_INFO | (SFRAME_FRE_CFA_SP | SFRAME_FRE_COUNT(3)) << 16 },
#endif
	{ "num_fdes 0xffffffff", -EBADMSG, mk_u32, SFH_NUM_FDES },
	{ "num_fdes 0x8000000", -EBADMSG, mk_u32, SFH_NUM_FDES | 0x8000000l << 16 },
	{ "num_fdes + 1 (into the FREs)", -EBADMSG, mk_hdr_add, ADD(SFH_NUM_FDES, 1) },
	{ "num_fdes - 1", -EBADMSG, mk_hdr_add, ADD(SFH_NUM_FDES, -1) },
	{ "num_fdes 0 with FREs", -EBADMSG, mk_hdr_add,
	  ADD(SFH_NUM_FDES, -JIT_NR_FUNCS) },
	{ "num_fres 0xffffffff", -EBADMSG, mk_u32, SFH_NUM_FRES },
	{ "num_fres + 1", -EBADMSG, mk_hdr_add, ADD(SFH_NUM_FRES, 1) },
	{ "num_fres - 1", -EBADMSG, mk_hdr_add, ADD(SFH_NUM_FRES, -1) },
	{ "fre_len 0xffffffff", -EBADMSG, mk_u32, SFH_FRE_LEN },
	{ "fre_len + 1", -EBADMSG, mk_hdr_add, ADD(SFH_FRE_LEN, 1) },
	{ "fdes_off 0xffffffff", -EBADMSG, mk_u32, SFH_FDES_OFF },
	{ "fdes_off + 1", -EBADMSG, mk_hdr_add, ADD(SFH_FDES_OFF, 1) },
	{ "fres_off 0xffffffff", -EBADMSG, mk_u32, SFH_FRES_OFF },
	{ "fres_off 0 (FREs over the FDEs)", -EBADMSG, mk_hdr_add,
	  ADD(SFH_FRES_OFF, -(JIT_NR_FUNCS * SFRAME_FDE_SIZE)) },
	{ "auxhdr_len past the end", -EBADMSG, mk_byte, SFH_AUXHDR_LEN | 255 << 16 },
	{ "unknown flag 0x8", -EBADMSG, mk_byte, SFH_FLAGS | 0x9 << 16 },
	{ "unknown flag 0x80", -EBADMSG, mk_byte, SFH_FLAGS | 0x81 << 16 },
	{ "magic 0", -EBADMSG, mk_u32, SFH_MAGIC | 0x0200l << 16 },
	{ "magic 0xdee3", -EBADMSG, mk_byte, SFH_MAGIC | 0xe3 << 16 },
	{ "magic byte-swapped (big endian)", -EOPNOTSUPP, mk_u32,
	  SFH_MAGIC | 0x0102e2del << 16 },
	{ "version 0", -EOPNOTSUPP, mk_byte, SFH_VERSION | 0 << 16 },
	{ "version 4", -EOPNOTSUPP, mk_byte, SFH_VERSION | 4 << 16 },
	{ "version 255", -EOPNOTSUPP, mk_byte, SFH_VERSION | 255 << 16 },
	{ "version 3 over V2 data", -EBADMSG, mk_byte, SFH_VERSION | 3 << 16 },
	{ "ABI 0", -EOPNOTSUPP, mk_byte, SFH_ABI | 0 << 16 },
	{ "ABI 5", -EOPNOTSUPP, mk_byte, SFH_ABI | 5 << 16 },
	{ "ABI 255", -EOPNOTSUPP, mk_byte, SFH_ABI | 255 << 16 },
};

FIXTURE(hostile) {
	struct jit j;
	struct unwind_user_info base;
};

FIXTURE_SETUP(hostile)
{
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, jit_build(&self->j, jit_spin, LOOPS, 0));
	jit_add_syms(&self->j);
	ASSERT_EQ(0, unwind_query(&self->base));
	ASSERT_EQ(1, self->base.nr_sections);
}

FIXTURE_TEARDOWN(hostile)
{
	jit_free(&self->j);
}

/* Register the JIT's section page as it is: result, unregistering if it took. */
static long try_reg(struct __test_metadata *_metadata, struct jit *j,
		    size_t len, const char *what)
{
	long r = reg(j, len);

	if (!r)
		EXPECT_EQ(0, jit_unregister(j)) TH_LOG("%s", what);
	return r;
}

TEST_F(hostile, malformed_cases)
{
	unsigned int i, tried = 0;
	struct sfg_layout l;
	ssize_t len, n;
	long r;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		len = cases[i].make(&self->j, cases[i].arg);
		ASSERT_LT(0, len) TH_LOG("%s: not written", cases[i].name);
		r = try_reg(_metadata, &self->j, len, cases[i].name);
		EXPECT_EQ(cases[i].expect, r)
			TH_LOG("%s: %s, expected %s", cases[i].name, errname(r),
			       errname(cases[i].expect));
		tried++;
	}

	/* Every truncation of the valid section, and some trailing bytes. */
	len = write_valid(&self->j, &l);
	ASSERT_LT(0, len);
	r = try_reg(_metadata, &self->j, 0, "length 0");
	EXPECT_EQ(-EINVAL, r);
	for (n = 1; n < len; n++) {
		r = try_reg(_metadata, &self->j, n, "truncated");
		EXPECT_EQ(-EBADMSG, r)
			TH_LOG("truncated to %zd of %zd: %s", n, len, errname(r));
	}
	tried += len;
	for (n = len; n <= len + 64; n += 8) {
		r = try_reg(_metadata, &self->j, n, "trailing bytes");
		EXPECT_EQ(0, r) TH_LOG("length %zd of %zd: %s", n, len, errname(r));
		tried++;
	}
	EXPECT_EQ(1, nr_sections());
	printf("# %u cases tried: %zu named, %zd truncations, 9 with trailing bytes\n",
	       tried, ARRAY_SIZE(cases), len);
}

/* Sections unwound through by unwind_accepted(). */
static uint8_t kept[MAX_KEPT][512];
static size_t kept_len[MAX_KEPT];
static unsigned int nr_kept;

static void flip(uint8_t *b, size_t len)
{
	unsigned int k, n = 1 + rnd() % 4;

	for (k = 0; k < n; k++) {
		uint8_t x = rnd();

		b[rnd() % len] ^= x ? x : 0x80;
	}
}

/*
 * Random mutations of three valid sections (the JIT's, the same with
 * FDE_FUNC_START_PCREL, the same with 4-byte FRE starts and data words):
 * 1 to 4 bytes xor'ed with random values, fixed seed. The kernel must
 * refuse each with EBADMSG, EOPNOTSUPP or ERANGE, or accept it; accepted ones
 * must unregister. A sample of the accepted ones is then registered in
 * turn and the JIT code sampled through it: every unwind must end
 * (at most UNWIND_MAX_ENTRIES frames), and a section found malformed on
 * the way must be dropped and counted.
 */
TEST_F_TIMEOUT(hostile, random_flips, 120)
{
	struct sfg_func f[JIT_NR_FUNCS];
	uint8_t base[3][512];
	size_t base_len[3];
	unsigned int i, k, hist[8] = {};
	unsigned int unwound = 0, stacks_seen = 0, dropped = 0, complete = 0;
	long r;

	/* The three base sections. */
	jit_funcs(&self->j, f);
	for (k = 0; k < 3; k++) {
		ssize_t len;

		if (k == 2) {
			funcs_copy(&self->j, f);
			for (i = 0; i < JIT_NR_FUNCS; i++) {
				unsigned int m;

				f[i].addr_size = 4;
				for (m = 0; m < f[i].nr_fres; m++)
					rows_buf[i][m].word_size = 4;
			}
		}
		len = write_funcs(&self->j, k == 1 ? SFG_PCREL : 0, f,
				  JIT_NR_FUNCS, NULL);
		ASSERT_LT(0, len);
		ASSERT_GE(sizeof(base[k]), (size_t)len);
		memcpy(base[k], self->j.sec, len);
		base_len[k] = len;
		ASSERT_EQ(0, reg(&self->j, len)) TH_LOG("base %u", k);
		ASSERT_EQ(0, jit_unregister(&self->j));
	}

	for (i = 0; i < NR_FLIPS; i++) {
		size_t len = base_len[i % 3];

		memcpy(self->j.sec, base[i % 3], len);
		flip(self->j.sec, len);
		r = reg(&self->j, len);
		switch (r) {
		case 0:
			hist[0]++;
			if (nr_kept < MAX_KEPT && rnd() % 4 == 0) {
				memcpy(kept[nr_kept], self->j.sec, len);
				kept_len[nr_kept++] = len;
			}
			EXPECT_EQ(0, jit_unregister(&self->j)) TH_LOG("flip %u", i);
			break;
		case -EBADMSG:
			hist[1]++;
			break;
		case -EOPNOTSUPP:
			hist[2]++;
			break;
		case -ERANGE:
			hist[4]++;
			break;
		default:
			hist[3]++;
			EXPECT_EQ(-EBADMSG, r) TH_LOG("flip %u: %s", i, errname(r));
		}
	}
	EXPECT_EQ(1, nr_sections());
	printf("# %u random mutations: %u accepted, %u EBADMSG, %u EOPNOTSUPP, %u ERANGE, %u other\n",
	       NR_FLIPS, hist[0], hist[1], hist[2], hist[4], hist[3]);
	ASSERT_GT(hist[0], 0);
	ASSERT_GT(hist[1], 0);

	for (k = 0; k < nr_kept; k++) {
		struct unwind_user_info before, after;
		struct jit_run run = { .j = &self->j, .seconds = 0.15 };
		struct tally t;
		unsigned int s;

		memcpy(self->j.sec, kept[k], kept_len[k]);
		ASSERT_EQ(0, reg(&self->j, kept_len[k]));
		ASSERT_EQ(0, unwind_query(&before));
		ASSERT_EQ(0, sample_stacks(jit_driver, &run, 4000, &stacks));
		ASSERT_EQ(0, unwind_query(&after));
		EXPECT_GT(stacks.nr, 0) TH_LOG("kept %u", k);
		for (s = 0; s < stacks.nr; s++)
			EXPECT_GE(UNWIND_MAX_ENTRIES, stacks.s[s].nr);
		t = chain_check(&stacks, jit_chain, ARRAY_SIZE(jit_chain), "main", 0);
		complete += t.complete;
		stacks_seen += stacks.nr;
		unwound++;
		/* Dropped only for a malformed section, and then counted. */
		EXPECT_LE(after.dropped - before.dropped, 1);
		EXPECT_LE(after.dropped - before.dropped,
			  after.errors - before.errors);
		r = jit_unregister(&self->j);
		if (after.dropped > before.dropped) {
			dropped++;
			EXPECT_EQ(-ENOENT, r) TH_LOG("kept %u", k);
		} else {
			EXPECT_EQ(0, r) TH_LOG("kept %u", k);
		}
		EXPECT_EQ(1, nr_sections());
	}
	printf("# %u accepted mutations unwound through: %u stacks (%u complete), %u sections dropped\n",
	       unwound, stacks_seen, complete, dropped);
}

/* Sample the JIT code for @seconds: counters before and after, tally. */
static void sample_jit(struct jit *j, double seconds,
		       struct unwind_user_info *before,
		       struct unwind_user_info *after, struct tally *t)
{
	struct jit_run run = { .j = j, .seconds = seconds };

	unwind_query(before);
	sample_stacks(jit_driver, &run, 4000, &stacks);
	unwind_query(after);
	*t = chain_check(&stacks, jit_chain, ARRAY_SIZE(jit_chain), "main", 0);
}

FIXTURE_VARIANT(rewrite) {
	int how;
	/* Rewrites the header or the FDEs, which the kernel keeps a copy of. */
	bool kept;
};

enum { GARBAGE, MAGIC, FRE_ORDER, COUNTS, FRE_TYPE };

FIXTURE(rewrite) {
	struct jit j;
};

FIXTURE_VARIANT_ADD(rewrite, garbage) { .how = GARBAGE };
FIXTURE_VARIANT_ADD(rewrite, magic) { .how = MAGIC, .kept = true };
FIXTURE_VARIANT_ADD(rewrite, fre_order) { .how = FRE_ORDER };
FIXTURE_VARIANT_ADD(rewrite, counts) { .how = COUNTS, .kept = true };
FIXTURE_VARIANT_ADD(rewrite, fre_type) { .how = FRE_TYPE, .kept = true };

FIXTURE_SETUP(rewrite)
{
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, jit_build(&self->j, jit_spin, LOOPS, 0));
	jit_add_syms(&self->j);
}

FIXTURE_TEARDOWN(rewrite)
{
	jit_free(&self->j);
}

/*
 * Empty the kernel's rule cache: any registry change starts a new one
 * (unregistering and registering this program's own section again).
 */
static int new_rule_cache(void)
{
	struct unwind_user_sframe exe;

	if (self_sframe(&exe))
		return -1;
	if (unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, exe.text_start, 0, 0))
		return -1;
	return unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&exe,
			    sizeof(exe), 0);
}

/*
 * Registered valid, then rewritten in place while the code runs. The
 * header and the FDEs were validated at registration and the kernel
 * unwinds with its own copy of them: rewriting them changes nothing. The
 * rows (FREs) are read by unwinds that do not find the PC's rule in the
 * kernel's cache, which any registry change empties: after one, the
 * unwinds that read bad rows count an error, the section is dropped
 * (once), the registration is gone, and a valid section registers and
 * unwinds again.
 */
TEST_F(rewrite, after_registration)
{
	struct unwind_user_info before, after;
	struct sfg_layout l;
	struct tally t;
	ssize_t len, off;
	size_t i;

	len = write_valid(&self->j, &l);
	ASSERT_LT(0, len);
	ASSERT_EQ(0, reg(&self->j, len));
	sample_jit(&self->j, 0.3, &before, &after, &t);
	ASSERT_GT(t.in_chain, 5);
	ASSERT_EQ(t.in_chain, t.complete);

	switch (variant->how) {
	case GARBAGE:
		for (i = 0; i < (size_t)len; i++)
			self->j.sec[i] = rnd();
		self->j.sec[SFH_MAGIC] = 0;
		break;
	case MAGIC:
		self->j.sec[SFH_MAGIC + 1] = 0xad;
		break;
	case FRE_ORDER:
		/* jit_b's rows 1 and 2 swap their starts. */
		off = sfg_fre_offset(self->j.sec, &l, JIT_B, 1);
		ASSERT_LT(0, off);
		self->j.sec[off] = JIT_B_ROW2;
		off = sfg_fre_offset(self->j.sec, &l, JIT_B, 2);
		ASSERT_LT(0, off);
		self->j.sec[off] = JIT_B_ROW1;
		break;
	case COUNTS:
		sfg_put32(self->j.sec, SFH_NUM_FDES, 0xffffffff);
		break;
	case FRE_TYPE:
		/* Every FDE gets an undefined FRE type. */
		for (i = 0; i < JIT_NR_FUNCS; i++)
			self->j.sec[FDE(i, SFD_INFO)] = 0xf;
		break;
	}
	ASSERT_EQ(0, new_rule_cache());
	sample_jit(&self->j, 0.5, &before, &after, &t);
	printf("# %u stacks, %d through the JIT code, %d complete; errors +%llu dropped +%llu fp_fallbacks +%llu\n",
	       stacks.nr, t.in_chain, t.complete,
	       (unsigned long long)(after.errors - before.errors),
	       (unsigned long long)(after.dropped - before.dropped),
	       (unsigned long long)(after.fp_fallbacks - before.fp_fallbacks));
	ASSERT_GT(stacks.nr, 0);
	if (variant->kept) {
		EXPECT_GT(t.in_chain, 5);
		EXPECT_EQ(t.in_chain, t.complete);
		EXPECT_EQ(after.errors, before.errors);
		EXPECT_EQ(after.dropped, before.dropped);
		EXPECT_EQ(2, after.nr_sections);
		EXPECT_EQ(0, jit_unregister(&self->j));
		return;
	}
	EXPECT_GE(after.errors - before.errors, 1);
	EXPECT_EQ(1, after.dropped - before.dropped);
	EXPECT_EQ(1, after.nr_sections);
	EXPECT_EQ(-ENOENT, jit_unregister(&self->j));
	/* Later unwinds do not look at it again. */
	sample_jit(&self->j, 0.2, &before, &after, &t);
	EXPECT_EQ(after.errors, before.errors);
	EXPECT_EQ(after.dropped, before.dropped);

	/* Written again, registered again: complete stacks again. */
	ASSERT_EQ(len, write_valid(&self->j, NULL));
	ASSERT_EQ(0, reg(&self->j, len));
	sample_jit(&self->j, 0.3, &before, &after, &t);
	EXPECT_GT(t.in_chain, 5);
	EXPECT_EQ(t.in_chain, t.complete);
	EXPECT_EQ(0, jit_unregister(&self->j));
}

/*
 * A registered section made unreadable is an error of the read, not of the
 * section: counted, not dropped; readable again, it unwinds again.
 */
TEST_F(hostile, unreadable_after_registration)
{
	struct unwind_user_info before, after;
	struct tally t, driver;
	ssize_t len;
	int jit, whole;

	len = write_valid(&self->j, NULL);
	ASSERT_EQ(0, reg(&self->j, len));
	ASSERT_EQ(0, mprotect(self->j.sec, self->j.page, PROT_NONE));
	sample_jit(&self->j, 0.4, &before, &after, &t);
	/*
	 * Samples in jit_driver, between two calls of the JIT code, have no
	 * JIT frame to unwind: whole stacks, and not what this test is about.
	 */
	driver = chain_check(&stacks, jit_chain + 4, 2, "main", 0);
	jit = t.in_chain - driver.in_chain;
	whole = t.complete - driver.complete;
	printf("# unreadable: %u stacks, %d with JIT frames (%d whole), %d in jit_driver (%d whole), %d with a wrong caller; errors +%llu dropped +%llu\n",
	       stacks.nr, jit, whole, driver.in_chain, driver.complete,
	       t.invented, (unsigned long long)(after.errors - before.errors),
	       (unsigned long long)(after.dropped - before.dropped));
	ASSERT_GT(jit, 5);
	/*
	 * Every one truncated at the JIT frame, never continued with a
	 * guess, and counted, once a stack.
	 */
	EXPECT_EQ(0, t.invented);
	EXPECT_EQ(0, whole);
	EXPECT_GE(after.errors - before.errors, (unsigned long long)jit);
	EXPECT_EQ(after.dropped, before.dropped);
	EXPECT_EQ(2, after.nr_sections);
	ASSERT_EQ(0, mprotect(self->j.sec, self->j.page, PROT_READ | PROT_WRITE));
	sample_jit(&self->j, 0.3, &before, &after, &t);
	ASSERT_GT(t.in_chain, 5);
	EXPECT_EQ(t.in_chain, t.complete);
	EXPECT_EQ(after.errors, before.errors);
	EXPECT_EQ(0, jit_unregister(&self->j));
}

/* Unmapping (or replacing) the section or the text drops the registration. */
TEST_F(hostile, unmap_drops_registration)
{
	const size_t page = self->j.page;
	struct jit *j = &self->j;
	uint8_t *other, *big, *p;
	ssize_t len;

	len = write_valid(j, NULL);
	ASSERT_LT(0, len);

	/* Unmapping something else, even next door, changes nothing. */
	other = mmap(j->map + 2 * page, page, PROT_READ,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	ASSERT_EQ(0, reg(j, len));
	if (other != MAP_FAILED)
		EXPECT_EQ(0, munmap(other, page));
	/* Nor does changing the protection of the text. */
	EXPECT_EQ(0, mprotect(j->text, page, PROT_READ));
	EXPECT_EQ(0, mprotect(j->text, page, PROT_READ | PROT_EXEC));
	EXPECT_EQ(2, nr_sections());
	EXPECT_EQ(0, jit_unregister(j));

	/* The section. */
	ASSERT_EQ(0, reg(j, len));
	ASSERT_EQ(0, munmap(j->sec, page));
	EXPECT_EQ(1, nr_sections());
	EXPECT_EQ(-ENOENT, jit_unregister(j));
	jit_free(j);

	/* The text. */
	ASSERT_EQ(0, jit_build(j, jit_spin, LOOPS, 0));
	ASSERT_EQ(0, reg(j, len));
	ASSERT_EQ(0, munmap(j->text, page));
	EXPECT_EQ(1, nr_sections());
	EXPECT_EQ(-ENOENT, jit_unregister(j));
	jit_free(j);

	/* The text moved by mremap. */
	ASSERT_EQ(0, jit_build(j, jit_spin, LOOPS, 0));
	ASSERT_EQ(0, reg(j, len));
	p = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, p);
	p = mremap(j->text, page, page, MREMAP_MAYMOVE | MREMAP_FIXED, p);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(1, nr_sections());
	EXPECT_EQ(-ENOENT, jit_unregister(j));
	munmap(p, page);
	jit_free(j);

	/* The section replaced by a MAP_FIXED mapping. */
	ASSERT_EQ(0, jit_build(j, jit_spin, LOOPS, 0));
	ASSERT_EQ(0, reg(j, len));
	p = mmap(j->sec, page, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(j->sec, p);
	EXPECT_EQ(1, nr_sections());
	EXPECT_EQ(-ENOENT, jit_unregister(j));
	jit_free(j);

	/* One page in the middle of a three-page text. */
	big = mmap(NULL, 4 * page, PROT_READ | PROT_EXEC,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, big);
	ASSERT_EQ(0, jit_build(j, jit_spin, LOOPS, 0));
	ASSERT_LT(0, sfg_one_func(j->sec, page, (uintptr_t)big, 3 * page));
	j->reg.text_start = (uintptr_t)big;
	j->reg.text_size = 3 * page;
	ASSERT_EQ(0, reg(j, page));
	EXPECT_EQ(2, nr_sections());
	ASSERT_EQ(0, munmap(big + page, page));
	EXPECT_EQ(1, nr_sections());
	EXPECT_EQ(-ENOENT, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					(uintptr_t)big, 0, 0));
	/* The page after the text: no registration to drop. */
	ASSERT_LT(0, sfg_one_func(j->sec, page, (uintptr_t)big, page));
	j->reg.text_size = page;
	ASSERT_EQ(0, reg(j, page));
	ASSERT_EQ(0, munmap(big + 3 * page, page));
	EXPECT_EQ(2, nr_sections());
	EXPECT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
				  (uintptr_t)big, 0, 0));
	munmap(big, 3 * page);
}

#define NR_THREADS	8
#define ROUNDS		200
#define SLOT		256

struct reg_thread {
	pthread_t tid;
	int idx;
	uint8_t *text, *secs;
	unsigned int ok, eexist, bad;
};

static volatile int holders;	/* overlapping windows registered now */
static volatile int violations;

static void *reg_thread_fn(void *arg)
{
	struct reg_thread *t = arg;
	struct unwind_user_sframe own = {}, shared = {};
	uint8_t *own_sec = t->secs + t->idx * 2 * SLOT;
	uint8_t *shared_sec = own_sec + SLOT;
	struct unwind_user_info info;
	int i;

	/* A window of its own, and one that overlaps every other thread's. */
	own.text_start = (uintptr_t)t->text + t->idx * SLOT;
	own.text_size = SLOT;
	own.sframe_start = (uintptr_t)own_sec;
	own.sframe_size = sfg_one_func(own_sec, SLOT, own.text_start, SLOT);
	shared.text_start = (uintptr_t)t->text + 32 * SLOT + t->idx * 64;
	shared.text_size = 2 * SLOT;
	shared.sframe_start = (uintptr_t)shared_sec;
	shared.sframe_size = sfg_one_func(shared_sec, SLOT, shared.text_start,
					  2 * SLOT);

	for (i = 0; i < ROUNDS; i++) {
		long r;

		r = unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&own,
				 sizeof(own), 0);
		r ? t->bad++ : t->ok++;
		r = unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
				 (unsigned long)&shared, sizeof(shared), 0);
		if (!r) {
			t->ok++;
			if (__atomic_add_fetch(&holders, 1, __ATOMIC_SEQ_CST) != 1)
				__atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST);
			/* The executable, the JIT, its own window and this. */
			if (unwind_query(&info) || info.nr_sections < 4)
				t->bad++;
			__atomic_sub_fetch(&holders, 1, __ATOMIC_SEQ_CST);
			if (unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					 shared.text_start, 0, 0))
				t->bad++;
		} else if (r == -EEXIST) {
			t->eexist++;
		} else {
			t->bad++;
		}
		if (unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, own.text_start, 0, 0))
			t->bad++;
	}
	return NULL;
}

struct joinctx {
	struct reg_thread *t;
	volatile int *stop;
};

static void *join_workers(void *arg)
{
	struct joinctx *jc = arg;
	int i;

	for (i = 0; i < NR_THREADS; i++)
		pthread_join(jc->t[i].tid, NULL);
	*jc->stop = 1;
	return NULL;
}

/*
 * 8 threads x 200 rounds of register/unregister, each on a window of its
 * own and on one that overlaps all the others' (so at most one thread holds
 * it at a time), while this thread runs the JIT code under perf: the
 * registry is rebuilt thousands of times under the unwinder's feet.
 */
TEST_F_TIMEOUT(hostile, threads_register_unregister, 120)
{
	struct reg_thread t[NR_THREADS];
	struct jit_run run = { .j = &self->j };
	volatile int stop = 0;
	struct joinctx jc;
	pthread_t joiner;
	unsigned int ok = 0, eexist = 0, bad = 0;
	uint8_t *text, *secs;
	struct tally tl;
	double t0;
	int i;

	text = mmap(NULL, 64 * SLOT, PROT_READ | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	secs = mmap(NULL, NR_THREADS * 2 * SLOT, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, text);
	ASSERT_NE(MAP_FAILED, secs);
	ASSERT_EQ(0, reg(&self->j, write_valid(&self->j, NULL)));
	/*
	 * sample_stacks() clears its 16 MiB of stacks first, pages this
	 * process has not touched: fault them in now. Where page faults are
	 * slow (arm64 under emulation) the workers' rounds would otherwise be
	 * over before the sampling starts.
	 */
	memset(&stacks, 0, sizeof(stacks));

	t0 = now_seconds();
	for (i = 0; i < NR_THREADS; i++) {
		t[i] = (struct reg_thread){ .idx = i, .text = text, .secs = secs };
		ASSERT_EQ(0, pthread_create(&t[i].tid, NULL, reg_thread_fn, &t[i]));
	}
	/* Sample the JIT code until a helper has joined the workers. */
	jc.t = t;
	jc.stop = &stop;
	run.stop = &stop;
	ASSERT_EQ(0, pthread_create(&joiner, NULL, join_workers, &jc));
	ASSERT_EQ(0, sample_stacks(jit_driver, &run, 4000, &stacks));
	pthread_join(joiner, NULL);
	for (i = 0; i < NR_THREADS; i++) {
		ok += t[i].ok;
		eexist += t[i].eexist;
		bad += t[i].bad;
	}
	tl = chain_check(&stacks, jit_chain, ARRAY_SIZE(jit_chain), "main", 3);
	printf("# %d threads x %d rounds in %.1f s: %u registrations, %u EEXIST, %u unexpected; %d overlaps held twice\n",
	       NR_THREADS, ROUNDS, now_seconds() - t0, ok, eexist, bad, violations);
	printf("# meanwhile: %u stacks, %d through the JIT code, %d complete\n",
	       stacks.nr, tl.in_chain, tl.complete);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, violations);
	/* Each round: its own window registered, the shared one or EEXIST. */
	EXPECT_EQ(2 * NR_THREADS * ROUNDS, ok + eexist);
	EXPECT_GT(ok, NR_THREADS * ROUNDS);
	EXPECT_EQ(2, nr_sections());
	EXPECT_GT(tl.in_chain, 5);
	EXPECT_EQ(tl.in_chain, tl.complete);
	EXPECT_EQ(0, jit_unregister(&self->j));
	EXPECT_EQ(1, nr_sections());
	munmap(text, 64 * SLOT);
	munmap(secs, NR_THREADS * 2 * SLOT);
}

TEST_HARNESS_MAIN
