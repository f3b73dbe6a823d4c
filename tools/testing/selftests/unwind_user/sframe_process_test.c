// SPDX-License-Identifier: GPL-2.0
/*
 * The SFrame unwinder across the life of a process: threads share the
 * registry, fork copies it, exec replaces it with the new executable's
 * section; deep recursion is unwound frame by frame up to the deferred
 * unwinder's limit. Signal frames are in sframe_signal_test.c.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "jit_code.h"

#define LOOPS		10000

static volatile unsigned long sink;

static uint64_t nr_sections(void)
{
	struct unwind_user_info info;

	return unwind_query(&info) ? ~0ull : info.nr_sections;
}

static struct stacks stacks;

/* Sample the JIT code in this thread; the tally of complete stacks. */
static struct tally __attribute__((noipa))
sample_jit(struct jit *j, double seconds, const char *root)
{
	struct jit_run r = { .j = j, .seconds = seconds };
	struct tally t = { .wrong = -1 };

	if (sample_stacks(jit_driver, &r, 4000, &stacks))
		return t;
	return chain_check(&stacks, jit_chain, ARRAY_SIZE(jit_chain), root, 3);
}

/* ---- threads ---- */

struct thread_arg {
	struct jit *j;
	struct tally t;
	struct tally chain_to_thread;
	unsigned int nr;
	uint64_t nr_sections;
};

static const char *const thread_chain[] = {
	"jit_spin", "jit_c", "jit_b", "jit_a", "jit_driver", "sample_stacks",
	"sample_jit", "jit_thread", "start_thread",
};

__attribute__((noipa)) void *jit_thread(void *arg)
{
	struct thread_arg *a = arg;

	a->nr_sections = nr_sections();
	a->t = sample_jit(a->j, 1.0, NULL);
	a->chain_to_thread = chain_check(&stacks, thread_chain,
					 ARRAY_SIZE(thread_chain), NULL, 3);
	a->nr = stacks.nr;
	return NULL;
}

/*
 * The JIT window registered by the main thread unwinds in a second thread,
 * sampled by a perf event of its own: the registry belongs to the address
 * space. Its stacks go through the thread function into start_thread.
 */
TEST(second_thread)
{
	struct thread_arg a = {};
	pthread_t tid;
	struct jit j;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, jit_build(&j, jit_spin, LOOPS, 0));
	jit_add_syms(&j);
	ASSERT_EQ(0, jit_register(&j));
	a.j = &j;
	ASSERT_EQ(0, pthread_create(&tid, NULL, jit_thread, &a));
	ASSERT_EQ(0, pthread_join(tid, NULL));
	printf("# thread: %u stacks, %d through the JIT code, %d complete to jit_thread and start_thread\n",
	       a.nr, a.chain_to_thread.in_chain, a.chain_to_thread.complete);
	EXPECT_EQ(2, a.nr_sections);
	ASSERT_GE(a.chain_to_thread.in_chain, 20);
	EXPECT_EQ(a.chain_to_thread.in_chain, a.chain_to_thread.complete);
	/* Registered in the thread, seen (and removable) in the main thread. */
	ASSERT_EQ(0, jit_unregister(&j));
	EXPECT_EQ(1, nr_sections());
	jit_free(&j);
}

/* ---- fork ---- */

/*
 * Child after fork: reports failures through its exit status (bit per
 * check), prints what it saw.
 */
static int fork_child(struct jit *j, uint64_t parent_nr)
{
	struct unwind_user_sframe self_sec;
	struct tally t;
	int fail = 0;

	if (nr_sections() != parent_nr)
		fail |= 1;
	/* The same keys: the JIT window and the executable. */
	if (jit_unregister(j) != 0)
		fail |= 2;
	if (jit_register(j) != 0)
		fail |= 2;
	if (self_sframe(&self_sec) ||
	    unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&self_sec,
			 sizeof(self_sec), 0) != -EEXIST)
		fail |= 4;
	t = sample_jit(j, 0.8, "main");
	printf("# child: %llu sections, %u stacks, %d through the JIT code, %d complete\n",
	       (unsigned long long)nr_sections(), stacks.nr, t.in_chain,
	       t.complete);
	if (t.in_chain < 20 || t.complete != t.in_chain)
		fail |= 8;
	/* The child's munmap is the child's business. */
	munmap(j->text, j->page);
	if (nr_sections() != parent_nr - 1)
		fail |= 16;
	return fail;
}

/*
 * After fork, the child has the parent's registrations (same count, same
 * keys) and unwinds through them; what the child does to its copy does not
 * touch the parent's.
 */
TEST(fork_copies_registry)
{
	uint64_t parent_nr;
	struct tally t;
	struct jit j;
	int status;
	pid_t pid;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, jit_build(&j, jit_spin, LOOPS, SFG_PCREL));
	jit_add_syms(&j);
	ASSERT_EQ(0, jit_register(&j));
	parent_nr = nr_sections();
	ASSERT_EQ(2, parent_nr);

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(fork_child(&j, parent_nr));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("child failed checks %#x (1 count, 2 JIT key, 4 exe key, 8 unwind, 16 munmap)",
		       WEXITSTATUS(status));

	/* The parent still has both, and unwinds as before. */
	EXPECT_EQ(2, nr_sections());
	t = sample_jit(&j, 0.5, "main");
	EXPECT_GE(t.in_chain, 10);
	EXPECT_EQ(t.in_chain, t.complete);
	EXPECT_EQ(0, jit_unregister(&j));
	jit_free(&j);
}

/*
 * What a child forked now has of the registration of the text at @text:
 * 0 if only this program's own section, not that one (unregistering it
 * fails with ENOENT); else bit 0 (another count), bit 1 (registered); -1
 * if the child could not run or did not exit.
 */
static int child_lacks(unsigned long text)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit((nr_sections() == 1 ? 0 : 1) |
		      (unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, text, 0, 0) ==
		       -ENOENT ? 0 : 2));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * A child does not inherit MADV_DONTFORK mappings, nor the registrations
 * of their text.
 */
TEST(fork_dontfork_text)
{
	struct jit j;
	int ret;

	ASSERT_EQ(0, jit_build(&j, jit_spin, LOOPS, 0));
	ASSERT_EQ(0, jit_register(&j));
	if (madvise(j.text, j.page, MADV_DONTFORK)) {
		jit_free(&j);
		SKIP(return, "madvise: %s", strerror(errno));
	}
	ret = child_lacks(j.reg.text_start);
	EXPECT_EQ(0, ret) TH_LOG("child failed checks %#x (1 count, 2 JIT key)", ret);
	EXPECT_EQ(2, nr_sections());
	EXPECT_EQ(0, jit_unregister(&j));
	jit_free(&j);
}

/*
 * Nor a registration whose text it maps only in part: a page in the middle
 * of a three-page text is MADV_DONTFORK, a hole where the child could map
 * other code. The text's ends are copied; the registration is not.
 */
TEST(fork_dontfork_text_hole)
{
	struct sfg_func f[JIT_NR_FUNCS];
	struct unwind_user_sframe reg;
	uint8_t *text;
	struct jit j;
	int ret, i;

	ASSERT_EQ(0, jit_build(&j, jit_spin, LOOPS, 0));
	text = mmap(NULL, 3 * j.page, PROT_READ | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, text);
	/* The JIT's functions, as if at the start of the larger text. */
	jit_funcs(&j, f);
	for (i = 0; i < JIT_NR_FUNCS; i++)
		f[i].start += (uintptr_t)text - (uintptr_t)j.text;
	reg = j.reg;
	reg.text_start = (uintptr_t)text;
	reg.text_size = 3 * j.page;
	reg.sframe_size = sfg_write(j.sec, j.page, (uintptr_t)j.sec, 0, f,
				    JIT_NR_FUNCS, NULL);
	ASSERT_LT(0, (long)reg.sframe_size);
	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
				  (unsigned long)&reg, sizeof(reg), 0));
	if (madvise(text + j.page, j.page, MADV_DONTFORK)) {
		unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, reg.text_start, 0, 0);
		jit_free(&j);
		SKIP(return, "madvise: %s", strerror(errno));
	}
	ret = child_lacks(reg.text_start);
	EXPECT_EQ(0, ret) TH_LOG("child failed checks %#x (1 count, 2 text key)", ret);
	EXPECT_EQ(2, nr_sections());
	EXPECT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
				  reg.text_start, 0, 0));
	munmap(text, 3 * j.page);
	jit_free(&j);
}

/* ---- exec ---- */

#define EXEC_ENV	"UNWIND_USER_EXEC_CHILD"

static const char *const exec_chain[] = {
	"exec_leaf", "exec_work", "sample_stacks", "exec_child",
};

unsigned long __attribute__((noipa)) exec_leaf(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 1000; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

void __attribute__((noipa)) exec_work(void *arg)
{
	double end = now_seconds() + *(double *)arg;
	unsigned long x = 1;

	do
		x = exec_leaf(x);
	while (now_seconds() < end);
	sink = x;
}

/*
 * The new image, before the harness starts: exactly its own section is
 * registered (none of what the old image had), keyed by its text start,
 * and it unwinds.
 */
int __attribute__((noipa)) exec_child(void)
{
	struct unwind_user_sframe self_sec;
	double secs = 0.5;
	struct tally t;
	int fail = 0;

	if (sym_init() || self_sframe(&self_sec))
		return 64;
	if (nr_sections() != 1)
		fail |= 1;
	if (unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, self_sec.text_start, 0, 0))
		fail |= 2;
	if (nr_sections() != 0)
		fail |= 1;
	if (unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&self_sec,
			 sizeof(self_sec), 0))
		fail |= 2;
	if (sample_stacks(exec_work, &secs, 4000, &stacks))
		fail |= 4;
	t = chain_check(&stacks, exec_chain, ARRAY_SIZE(exec_chain), NULL, 3);
	printf("# exec'd image: %u stacks, %d in exec_work, %d complete\n",
	       stacks.nr, t.in_chain, t.complete);
	if (t.in_chain < 10 || t.complete != t.in_chain)
		fail |= 8;
	return fail;
}

static void __attribute__((constructor)) exec_child_ctor(void)
{
	if (getenv(EXEC_ENV)) {
		fflush(stdout);
		_exit(exec_child());
	}
}

/*
 * exec drops every registration of the old image (here a JIT window and
 * the old executable's section) and registers the new executable's.
 */
TEST(exec_replaces_registry)
{
	char *const argv[] = { "sframe_process_test", NULL };
	char *const envp[] = { EXEC_ENV "=1", NULL };
	struct jit j;
	int status;
	pid_t pid;

	ASSERT_EQ(0, jit_build(&j, jit_spin, LOOPS, 0));
	ASSERT_EQ(0, jit_register(&j));
	ASSERT_EQ(2, nr_sections());
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("exec'd child failed checks %#x (1 count, 2 own key, 4 perf, 8 unwind, 64 setup, 127 exec)",
		       WEXITSTATUS(status));
	EXPECT_EQ(2, nr_sections());
	jit_free(&j);
}

/* ---- recursion ---- */

unsigned long __attribute__((noipa)) rec_leaf(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 3000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

unsigned long __attribute__((noipa)) rec(int depth, unsigned long x)
{
	unsigned long buf[3];

	buf[0] = x;
	asm volatile("" : : "r"(buf) : "memory");
	if (depth > 1)
		x = rec(depth - 1, buf[0] + depth);
	else
		x = rec_leaf(buf[0]);
	buf[2] = x;
	asm volatile("" : : "r"(buf) : "memory");
	return buf[2] ^ depth;
}

struct rec_arg {
	int depth;
	double seconds;
};

void __attribute__((noipa)) rec_driver(void *arg)
{
	struct rec_arg *a = arg;
	double end = now_seconds() + a->seconds;
	unsigned long x = 1;

	do
		x = rec(a->depth, x);
	while (now_seconds() < end);
	sink = x;
}

static bool is(const struct ustack *st, unsigned int i, const char *name)
{
	const char *s = i < st->nr ? sym_name(st->ip[i]) : NULL;

	return s && !strcmp(s, name);
}

struct rec_tally {
	int leaf, leaf_exact, leaf_capped, in_rec, in_rec_ok, wrong, longest;
};

/*
 * Every stack that starts in rec_leaf or rec: rec frames only, then
 * rec_driver, sample_stacks and on to main; one that starts in rec_leaf
 * has exactly @depth rec frames. Stacks longer than the deferred
 * unwinder keeps end after UNWIND_MAX_ENTRIES frames, all of them rec.
 */
static struct rec_tally check_rec(const struct stacks *s, int depth)
{
	struct rec_tally t = {};
	unsigned int i, k;

	for (i = 0; i < s->nr; i++) {
		const struct ustack *st = &s->s[i];
		bool leaf = is(st, 0, "rec_leaf"), ok, capped;
		unsigned int first = leaf ? 1 : 0, recs;

		if ((int)st->nr > t.longest)
			t.longest = st->nr;
		if (!leaf && !is(st, 0, "rec"))
			continue;
		for (k = first; k < st->nr && is(st, k, "rec"); k++)
			;
		recs = k - first;
		capped = st->nr == UNWIND_MAX_ENTRIES;
		if (k == st->nr) {
			/* Cut by the limit among the rec frames. */
			ok = capped && (!leaf || recs < (unsigned int)depth);
			t.leaf_capped += leaf && ok;
		} else {
			/* rec_driver, sample_stacks, ... main, unless cut. */
			ok = is(st, k, "rec_driver") &&
			     (k + 1 == st->nr ? capped : is(st, k + 1, "sample_stacks")) &&
			     (capped || stack_has(st, "main"));
			if (leaf)
				ok = ok && recs == (unsigned int)depth;
			else
				ok = ok && recs >= 1 && recs <= (unsigned int)depth;
			t.leaf_exact += leaf && ok;
		}
		if (leaf)
			t.leaf++;
		else
			t.in_rec++;
		t.in_rec_ok += !leaf && ok;
		if (!ok && ++t.wrong <= 3)
			stack_print("wrong stack", st, 12);
	}
	return t;
}

FIXTURE(recursion) {
};

FIXTURE_VARIANT(recursion) {
	int depth;
};

/* 300 frames deep: below the limit, every stack is whole. */
FIXTURE_VARIANT_ADD(recursion, depth_300) { .depth = 300 };
/* 600 frames deep: stacks of the leaf are cut at the limit. */
FIXTURE_VARIANT_ADD(recursion, depth_600) { .depth = 600 };

FIXTURE_SETUP(recursion)
{
	ASSERT_EQ(0, sym_init());
}

FIXTURE_TEARDOWN(recursion)
{
}

TEST_F(recursion, every_frame)
{
	struct rec_arg a = { .depth = variant->depth, .seconds = 1.0 };
	struct unwind_user_info before, after;
	struct rec_tally t = {};
	char max_stack[32] = "?";
	int round;
	FILE *f;

	f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");
	if (f) {
		if (!fgets(max_stack, sizeof(max_stack), f))
			snprintf(max_stack, sizeof(max_stack), "?");
		fclose(f);
	}
	ASSERT_EQ(0, unwind_query(&before));
	/*
	 * Rounds of a second until enough stacks start in the leaf: a loaded
	 * host gives the guest fewer samples per second.
	 */
	for (round = 0; round < 8 && t.leaf < 10; round++) {
		struct rec_tally r;

		ASSERT_EQ(0, sample_stacks(rec_driver, &a, 1000, &stacks));
		r = check_rec(&stacks, variant->depth);
		t.leaf += r.leaf;
		t.leaf_exact += r.leaf_exact;
		t.leaf_capped += r.leaf_capped;
		t.in_rec += r.in_rec;
		t.in_rec_ok += r.in_rec_ok;
		t.wrong += r.wrong;
		if (r.longest > t.longest)
			t.longest = r.longest;
	}
	ASSERT_EQ(0, unwind_query(&after));
	printf("# depth %d: %d rounds, last %u samples, %u stacks (lost %u), longest %d (limit %d, perf_event_max_stack %.*s)\n",
	       variant->depth, round, stacks.samples, stacks.nr, stacks.lost, t.longest,
	       UNWIND_MAX_ENTRIES, (int)strcspn(max_stack, "\n"), max_stack);
	printf("#   in rec_leaf %d (%d exact, %d capped), in rec %d (%d right), wrong %d; sframe_frames +%llu errors +%llu\n",
	       t.leaf, t.leaf_exact, t.leaf_capped, t.in_rec, t.in_rec_ok, t.wrong,
	       (unsigned long long)(after.sframe_frames - before.sframe_frames),
	       (unsigned long long)(after.errors - before.errors));
	ASSERT_GE(t.leaf, 10);
	EXPECT_EQ(0, t.wrong);
	EXPECT_LE(t.longest, UNWIND_MAX_ENTRIES);
	if (variant->depth + 4 < UNWIND_MAX_ENTRIES) {
		EXPECT_EQ(t.leaf, t.leaf_exact);
	} else {
		EXPECT_EQ(t.leaf, t.leaf_capped);
		EXPECT_EQ(UNWIND_MAX_ENTRIES, t.longest);
	}
	EXPECT_EQ(after.errors, before.errors);
}

TEST_HARNESS_MAIN
