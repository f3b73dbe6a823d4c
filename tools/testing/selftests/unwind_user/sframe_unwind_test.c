// SPDX-License-Identifier: GPL-2.0
/*
 * User stacks of code built without frame pointers, seen through perf's
 * deferred callchains, must be complete and right with the SFrame unwinder.
 *
 * The workload is a chain of calls sample_stacks -> run_chain -> level1 ->
 * ... -> level6 -> leaf, built with -O2 -fomit-frame-pointer and SFrame.
 * Samples land anywhere in it: in leaf's loop, in the levels' prologues and
 * epilogues. Every stack that starts in the chain must name exactly the
 * callers up to sample_stacks, and go on to main through the test harness.
 * agent_fills_the_gaps: a comparator qsort() calls, through the C
 * library's code, which the program's own section leaves out and the
 * agent's section adds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

static volatile unsigned long sink;

/* clang has no noipa; noinline keeps every frame of the chain there. */
#ifdef __clang__
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

NOIPA unsigned long leaf(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 200; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

/* Each level has a frame of its own size and work after the call. */
#define LEVEL(n, next, pad)						\
NOIPA unsigned long level##n(unsigned long x)				\
{									\
	unsigned long buf[pad];						\
									\
	/* Keep the frame: the compiler cannot see through the asm. */	\
	buf[0] = x;							\
	asm volatile("" : : "r"(buf) : "memory");			\
	x = next(buf[0] + (n));						\
	buf[(pad) - 1] = x;						\
	asm volatile("" : : "r"(buf) : "memory");			\
	return buf[(pad) - 1] ^ (n);					\
}

LEVEL(6, leaf, 3)
LEVEL(5, level6, 17)
LEVEL(4, level5, 1)
LEVEL(3, level4, 40)
LEVEL(2, level3, 5)
LEVEL(1, level2, 9)

NOIPA void run_chain(void *arg)
{
	unsigned long n = *(unsigned long *)arg, i, x = 1;

	for (i = 0; i < n; i++)
		x = level1(x);
	sink = x;
}

static const char *const chain[] = {
	"leaf", "level6", "level5", "level4", "level3", "level2", "level1",
	"run_chain", "sample_stacks",
};

#define CHAIN_LEN ((int)ARRAY_SIZE(chain))

static struct tally check(const struct stacks *s, int verbose)
{
	return chain_check(s, chain, CHAIN_LEN, "main", verbose ? 3 : 0);
}

static struct stacks stacks;
/*
 * Stacks read by sample_chain() since the last reset, in all rounds; of
 * those with deferred callchains, the ones the samples carried (walked
 * whole at sample time) and the deferred ones.
 */
static unsigned int stacks_read, stacks_whole, stacks_deferred;
/* Of the stacks the samples carried, those without the sample's IP first. */
static unsigned int stacks_not_at_ip;

/*
 * Sample @work (deferred, or at sample time with @sync) in rounds until at
 * least 20 stacks start in the chain, at most 8 rounds: a loaded host gives
 * the guest fewer samples. The tally covers all rounds.
 */
static struct tally sample_chain(void (*work)(void *), void *arg, bool sync,
				 int verbose, int *err)
{
	struct tally t = {}, r;
	int round;

	*err = 0;
	for (round = 0; round < 8 && t.in_chain < 20; round++) {
		*err = sync ? sample_stacks_sync(work, arg, 4000, &stacks) :
			      sample_stacks(work, arg, 4000, &stacks);
		if (*err)
			break;
		stacks_read += stacks.nr;
		stacks_whole += stacks.whole;
		stacks_deferred += stacks.deferred;
		stacks_not_at_ip += stacks.not_at_ip;
		r = check(&stacks, verbose);
		t.in_chain += r.in_chain;
		t.complete += r.complete;
		t.wrong += r.wrong;
	}
	return t;
}

FIXTURE(unwind) {
	struct unwind_user_sframe sec;
};

FIXTURE_SETUP(unwind)
{
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self->sec));
}

FIXTURE_TEARDOWN(unwind)
{
}

/*
 * Registered at exec, the executable's own section unwinds every sample.
 * These samples interrupted user mode: the kernel walks each stack at
 * once, and defers it only when that walk met a page it could not read
 * without faulting (the first samples in this child of fork(), which does
 * not inherit the page tables of file mappings).
 */
TEST_F(unwind, deep_chain_complete)
{
	unsigned long long frames, cached, reads, bytes;
	unsigned long n = 60000;
	struct unwind_user_info before, after;
	struct tally t;
	int err;

	ASSERT_EQ(0, unwind_query(&before));
	ASSERT_EQ(1, before.nr_sections);
	stacks_read = stacks_whole = stacks_deferred = stacks_not_at_ip = 0;
	t = sample_chain(run_chain, &n, false, 1, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, unwind_query(&after));
	printf("# in chain %d, complete %d, wrong %d; stacks walked whole at sample time %u, deferred %u\n",
	       t.in_chain, t.complete, t.wrong, stacks_whole, stacks_deferred);
	EXPECT_GT(stacks_whole, stacks_deferred);
	EXPECT_EQ(0, stacks_not_at_ip) TH_LOG("stacks walked at sample time without their first frame");
	printf("# counters: unwinds %llu sframe_frames %llu fp_fallbacks %llu errors %llu\n",
	       after.unwinds - before.unwinds,
	       after.sframe_frames - before.sframe_frames,
	       after.fp_fallbacks - before.fp_fallbacks,
	       after.errors - before.errors);
	ASSERT_GE(t.in_chain, 20);
	EXPECT_EQ(0, t.wrong);
	EXPECT_EQ(t.in_chain, t.complete);
	EXPECT_GT(after.sframe_frames, before.sframe_frames);
	EXPECT_EQ(after.errors, before.errors);
	/*
	 * Every frame but a stack's first is a return address, and the chain
	 * has few of them: once their rules are kept, those frames read no
	 * section at all. A stack's first frame is the interrupted
	 * instruction, exact, and seldom one seen before where leaf's loop
	 * has many instructions (clang unrolls it): at most one miss a stack
	 * for it, plus one for each of the few return addresses (the chain's,
	 * the harness's, main's: 24 with clang), and a few more for those
	 * that first frames evicted from the cache's sets. A frame that
	 * misses reads its function's rows in one or two copies.
	 */
	frames = after.sframe_frames - before.sframe_frames;
	cached = after.cached_frames - before.cached_frames;
	reads = after.section_reads - before.section_reads;
	bytes = after.section_bytes - before.section_bytes;
	printf("# cost: %llu of %llu SFrame frames cached in %u stacks; %llu section reads, %llu bytes (%.3f reads, %.1f bytes a frame)\n",
	       cached, frames, stacks_read, reads, bytes, (double)reads / frames,
	       (double)bytes / frames);
	EXPECT_LE(frames - cached, stacks_read + 64);
	EXPECT_LE(reads, 2 * (frames - cached));
	EXPECT_LE(bytes, 4096 * reads);
}

/*
 * With SFrame off at sample time (unwind_user_nmi_sframe=0), every stack is
 * deferred and walked at the return to user space, with reads that may
 * fault: the walk kernel-mode samples (system calls, page faults) get.
 */
TEST_F(unwind, deferred_walk_chain_complete)
{
	const char *knob = "/sys/module/kernel/parameters/unwind_user_nmi_sframe";
	unsigned long n = 60000;
	struct unwind_user_info before, after;
	struct tally t;
	int err;

	ASSERT_EQ(0, write_text(knob, "N"));
	ASSERT_EQ(0, unwind_query(&before));
	stacks_read = stacks_whole = stacks_deferred = 0;
	t = sample_chain(run_chain, &n, false, 0, &err);
	ASSERT_EQ(0, unwind_query(&after));
	ASSERT_EQ(0, write_text(knob, "Y"));
	ASSERT_EQ(0, err);
	printf("# in chain %d, complete %d, wrong %d; stacks walked whole at sample time %u, deferred %u; nofault_frames +%llu\n",
	       t.in_chain, t.complete, t.wrong, stacks_whole, stacks_deferred,
	       after.nofault_frames - before.nofault_frames);
	ASSERT_GE(t.in_chain, 20);
	EXPECT_EQ(0, t.wrong);
	EXPECT_EQ(t.in_chain, t.complete);
	EXPECT_EQ(0, stacks_whole);
	EXPECT_EQ(stacks_read, stacks_deferred);
	EXPECT_EQ(after.nofault_frames, before.nofault_frames);
	EXPECT_GT(after.sframe_frames, before.sframe_frames);
	EXPECT_EQ(after.errors, before.errors);
}

/*
 * With the registration of the program's text gone (unregistered through
 * prctl), the kernel describes the same code with the file's table, which
 * the first walk that may sleep builds from the file's own PT_GNU_SFRAME and
 * attaches, rather than leave it to the frame-pointer rule (whose stacks,
 * for code without frame pointers, are mostly wrong); registering the
 * section again is then a duplicate. A program linked by ld.lld 22 has its
 * .sframe section but no PT_GNU_SFRAME segment: nothing describes it then,
 * the frame-pointer rule's stacks are the old kernel's, and registering the
 * section again brings complete stacks back.
 */
TEST_F(unwind, unregistered_file_table_takes_over)
{
	bool own = self_has_sframe_segment();
	unsigned long n = 60000;
	struct unwind_user_info before, after;
	struct tally t;
	int err;

	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
				  self->sec.text_start, 0, 0));
	ASSERT_EQ(0, unwind_query(&before));
	t = sample_chain(run_chain, &n, false, own, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, unwind_query(&after));
	printf("# unregistered, %s: %d/%d complete, %d wrong; sections %llu -> %llu, sframe_frames +%llu, fp_fallbacks +%llu\n",
	       own ? "the file has PT_GNU_SFRAME" : "no PT_GNU_SFRAME",
	       t.complete, t.in_chain, t.wrong,
	       (unsigned long long)before.nr_sections,
	       (unsigned long long)after.nr_sections,
	       (unsigned long long)(after.sframe_frames - before.sframe_frames),
	       (unsigned long long)(after.fp_fallbacks - before.fp_fallbacks));
	ASSERT_GE(t.in_chain, 20);
	if (own) {
		EXPECT_EQ(t.in_chain, t.complete);
		EXPECT_EQ(before.nr_sections + 1, after.nr_sections);
		EXPECT_GT(after.sframe_frames, before.sframe_frames);
		EXPECT_EQ(-EEXIST, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
						(unsigned long)&self->sec,
						sizeof(self->sec), 0));
		return;
	}
	/* The vDSO's section may be there: no frame of the chain. */
	EXPECT_EQ(after.sframe_frames, before.sframe_frames);
	EXPECT_LT(t.complete * 2, t.in_chain);
	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
				  (unsigned long)&self->sec, sizeof(self->sec), 0));
	t = sample_chain(run_chain, &n, false, 1, &err);
	ASSERT_EQ(0, err);
	ASSERT_GE(t.in_chain, 20);
	EXPECT_EQ(t.in_chain, t.complete);
}

/*
 * Without deferral, perf takes the user callchain at sample time
 * (perf_callchain_user(), IRQ or NMI context): SFrame is used there too,
 * with reads that never fault. A read that would fault (a section page not
 * mapped yet: this test runs in a child of fork(), which does not inherit
 * the page tables of file mappings) ends that stack there, counted in
 * nofault_faults, and asks for one deferred unwind that faults the page in
 * for the next samples. Every incomplete stack must be one of those, and
 * truncated, never continued with frame pointers (this code has none: the
 * callers %rbp would give are wrong ones); the others are complete.
 */
static void sample_time_check(struct __test_metadata *_metadata,
			      void (*work)(void *), void *arg, int min_faults)
{
	struct unwind_user_info before, after;
	unsigned long long faults;
	struct tally t;
	int err;

	ASSERT_EQ(0, unwind_query(&before));
	stacks_not_at_ip = 0;
	t = sample_chain(work, arg, true, 1, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, unwind_query(&after));
	faults = after.nofault_faults - before.nofault_faults;
	printf("# in chain %d, complete %d, incomplete %d (with a wrong caller %d); nofault_frames +%llu nofault_faults +%llu\n",
	       t.in_chain, t.complete, t.wrong, t.invented,
	       after.nofault_frames - before.nofault_frames, faults);
	ASSERT_GE(t.in_chain, 20);
	/* The interrupted instruction first: the stack's frame 0. */
	EXPECT_EQ(0, stacks_not_at_ip) TH_LOG("stacks without their first frame");
	EXPECT_EQ(0, t.invented);
	EXPECT_LE(t.wrong, faults);
	EXPECT_GE(faults, min_faults);
	/* The pages come back: most stacks find them resident. */
	EXPECT_LE(faults * 2, t.in_chain);
	EXPECT_GT(after.nofault_frames, before.nofault_frames);
	EXPECT_EQ(after.errors, before.errors);
	EXPECT_EQ(after.dropped, before.dropped);
}

TEST_F(unwind, sample_time_chain_complete)
{
	unsigned long n = 60000;

	sample_time_check(_metadata, run_chain, &n, 0);
}

static struct unwind_user_sframe *dropped_sec;

/* Drop the section's page table entries, then run the chain. */
static void dontneed_then_chain(void *arg)
{
	unsigned long page = sysconf(_SC_PAGESIZE);
	unsigned long start = dropped_sec->sframe_start & ~(page - 1);
	unsigned long end = dropped_sec->sframe_start + dropped_sec->sframe_size;

	/* A private, never written file mapping: only the PTEs go. */
	if (madvise((void *)start, end - start, MADV_DONTNEED))
		abort();
	run_chain(arg);
}

/*
 * The same with the section's pages dropped just before the chain runs:
 * the first samples cannot read it and fall back, without a fault, WARN or
 * splat (the harness checks the kernel log), and the pages come back.
 */
TEST_F(unwind, sample_time_nonresident_falls_back)
{
	unsigned long n = 60000;

	dropped_sec = &self->sec;
	sample_time_check(_metadata, dontneed_then_chain, &n, 1);
}

/*
 * qsort() calling back cmp_leaf(), which runs the chain's leaf: between
 * them the C library's frames, which this static program's own section
 * does not describe (libc.a was not assembled with --gsframe) and its
 * .eh_frame does.
 */
static NOIPA int cmp_leaf(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	sink += leaf(x);
	return (x > y) - (x < y);
}

NOIPA void run_qsort(void *arg)
{
	unsigned long n = *(unsigned long *)arg, v[64], i, k;

	for (k = 0; k < n; k++) {
		for (i = 0; i < ARRAY_SIZE(v); i++)
			v[i] = (i * 37 + k) % ARRAY_SIZE(v);
		qsort(v, ARRAY_SIZE(v), sizeof(v[0]), cmp_leaf);
	}
}

/*
 * The stacks of @s sampled in cmp_leaf() (or leaf() under it): complete if
 * the frames after cmp_leaf are named functions of the program (the C
 * library's), one of them qsort's, up to run_qsort, then sample_stacks,
 * and main after; wrong if they reach run_qsort otherwise.
 */
static void qsort_check(const struct stacks *s, struct tally *t, int verbose)
{
	static const char *const tail[] = { "run_qsort", "sample_stacks" };
	unsigned int i, k;

	for (i = 0; i < s->nr; i++) {
		const struct ustack *st = &s->s[i];
		const char *top = st->nr ? sym_name(st->ip[0]) : NULL;
		bool named = true, in_qsort = false;

		if (!top || (strcmp(top, "leaf") && strcmp(top, "cmp_leaf")))
			continue;
		t->in_chain++;
		k = strcmp(top, "leaf") ? 1 : 2;
		if (k == 2 && !(st->nr > 1 && sym_name(st->ip[1]) &&
				!strcmp(sym_name(st->ip[1]), "cmp_leaf"))) {
			t->wrong++;
			continue;
		}
		for (; k < st->nr; k++) {
			const char *name = sym_name(st->ip[k]);

			if (name && !strcmp(name, "run_qsort"))
				break;
			named &= name && strcmp(name, "cmp_leaf") && strcmp(name, "leaf");
			/* qsort, qsort_r, msort_with_tmp: glibc's names. */
			in_qsort |= name && strstr(name, "sort");
		}
		if (k == st->nr)
			continue;	/* ends before run_qsort */
		if (named && in_qsort && stack_matches(st, tail, 2) == 1 &&
		    stack_has(st, "main")) {
			t->complete++;
		} else {
			t->wrong++;
			if (verbose-- > 0)
				stack_print("wrong", st, 24);
		}
	}
}

/* run_qsort sampled (deferred) until 20 stacks are in it, at most 8 rounds. */
static struct tally sample_qsort(int verbose, int *err)
{
	unsigned long n = 200;
	struct tally t = {};
	int round;

	*err = 0;
	for (round = 0; round < 8 && t.in_chain < 20; round++) {
		*err = sample_stacks(run_qsort, &n, 4000, &stacks);
		if (*err)
			break;
		qsort_check(&stacks, &t, verbose);
	}
	return t;
}

/*
 * The agent fills the gaps of a file's own section: sframe-synth attach
 * (next to this program, as the guest stages it) gives the kernel this
 * program's own section with the functions of .eh_frame it leaves out
 * added, the C library's. With the program's registration gone, its file's
 * table (from its own section) leaves qsort()'s frames undescribed and the
 * stacks end there; with the agent's table, attached by the first walk
 * after that table's registration is dropped too, every stack goes through
 * them to main. The file is detached again at the end.
 */
/* UNWIND_USER_FILE_DETACH of @path's file: 0 or -errno. */
static long detach_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long ret;

	if (fd < 0)
		return -errno;
	ret = file_detach(fd);
	close(fd);
	return ret;
}

TEST_F_TIMEOUT(unwind, agent_fills_the_gaps, 120)
{
	char exe[PATH_MAX], cmd[2 * PATH_MAX + 32], line[PATH_MAX + 128];
	struct tally before, after;
	bool filled = false;
	ssize_t len;
	long ret;
	FILE *out;
	int err, rc;

	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_GT(len, 0);
	exe[len] = 0;
	snprintf(cmd, sizeof(cmd), "%.*s/sframe-synth", (int)(strrchr(exe, '/') - exe), exe);
	if (access(cmd, X_OK))
		SKIP(return, "no sframe-synth next to this program");
	if (strchr(exe, '\''))
		SKIP(return, "a quote in this program's path");
	/* What an earlier run cut short may have left. */
	ret = detach_file(exe);
	if (ret == -EPERM || ret == -EINVAL)
		SKIP(return, "UNWIND_USER_FILE_DETACH: %s", strerror((int)-ret));

	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, self->sec.text_start, 0, 0));
	before = sample_qsort(0, &err);
	ASSERT_EQ(0, err);
	printf("# the file's own section: %d/%d complete, %d wrong\n",
	       before.complete, before.in_chain, before.wrong);

	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " attach '%s'", exe);
	out = popen(cmd, "r");
	ASSERT_NE(NULL, out);
	while (fgets(line, sizeof(line), out)) {
		printf("# %s", line);
		filled |= !strncmp(line, "attached ", 9) && strstr(line, "(own .sframe + ");
	}
	rc = pclose(out);
	/*
	 * The table attached to this address space goes (none without
	 * PT_GNU_SFRAME: ENOENT): the agent's comes.
	 */
	ret = unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, self->sec.text_start, 0, 0);
	after = sample_qsort(3, &err);
	printf("# the agent's section: %d/%d complete, %d wrong\n",
	       after.complete, after.in_chain, after.wrong);
	EXPECT_EQ(0, detach_file(exe));

	ASSERT_TRUE(WIFEXITED(rc) && !WEXITSTATUS(rc)) TH_LOG("sframe-synth exit %#x", rc);
	ASSERT_TRUE(ret == 0 || ret == -ENOENT) TH_LOG("UNREGISTER: %s", strerror((int)-ret));
	ASSERT_TRUE(filled) TH_LOG("the agent did not fill the gaps of %s", exe);
	ASSERT_EQ(0, err);
	ASSERT_GE(before.in_chain, 20);
	EXPECT_LT(before.complete * 2, before.in_chain);
	ASSERT_GE(after.in_chain, 20);
	EXPECT_EQ(0, after.wrong);
	EXPECT_EQ(after.in_chain, after.complete);
}

TEST_HARNESS_MAIN
