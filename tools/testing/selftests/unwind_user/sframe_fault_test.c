// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures in every path that touches the SFrame registry, with
 * sections registered: fork, exec, registration, unregistration and munmap.
 * Each test walks /proc/thread-self/fail-nth from 1 upwards, so that the
 * first, second, ... allocation (slab or page) of the call fails, until a
 * call runs without meeting an injection point. Each failure must give a
 * clean error, leave the registry as it was before the call or as after
 * it, and leave the process working; the harness checks the kernel log.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
 * CONFIG_FAULT_INJECTION_DEBUG_FS, debugfs at /sys/kernel/debug, and root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "jit_code.h"

/* More injection points than any of these calls has. */
#define MAX_NTH		2000

FIXTURE(fault) {
	struct unwind_user_sframe exe;	/* this program's section */
	struct jit j;
};

FIXTURE_SETUP(fault)
{
	const char *why = fail_nth_missing();
	struct unwind_user_info info;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, self_sframe(&self->exe));
	ASSERT_EQ(0, unwind_query(&info));
	/* Registered at exec, or by self_sframe() without PT_GNU_SFRAME. */
	ASSERT_GE(info.nr_sections, 1);
	ASSERT_EQ(0, jit_build(&self->j, jit_spin, 1, 0));
	ASSERT_EQ(0, jit_register(&self->j));
}

static void fail_anywhere(void);

FIXTURE_TEARDOWN(fault)
{
	fail_nth_close();
	fail_anywhere();
}

static unsigned long long nr_sections(void)
{
	struct unwind_user_info info = {};

	return unwind_query(&info) ? ~0ull : info.nr_sections;
}

static struct stacks fork_stacks;

static volatile unsigned long fork_sink;

/*
 * Its time in its own code, not in clock_gettime(): a static libc's has no
 * SFrame rows, and a walk ends there (on arm64 under TCG, where reading the
 * counter is slow, nearly every sample would).
 */
static void __attribute__((noinline)) fork_leaf(void *arg)
{
	double end = now_seconds() + *(double *)arg;
	unsigned long x = fork_sink;
	int i;

	do {
		for (i = 0; i < 20000; i++)
			x = x * 6364136223846793005ul + 1;
	} while (now_seconds() < end);
	fork_sink = x;
}

static void __attribute__((noinline)) fork_work(void *arg)
{
	fork_leaf(arg);
	__asm__ volatile("" ::: "memory");
}

/*
 * In a child whose copy of the registry failed at fork: its walks attach
 * its files' tables again, and its stacks through this program's code are
 * right. 0, or why not.
 */
static int __attribute__((noinline)) fork_child_unwinds(void)
{
	static const char *const chain[] = { "fork_leaf", "fork_work" };
	double seconds = 0.3;
	unsigned int i, whole = 0;

	if (settle_self())
		return 4;
	if (sample_stacks(fork_work, &seconds, 1000, &fork_stacks))
		return 5;
	for (i = 0; i < fork_stacks.nr; i++) {
		int m = stack_matches(&fork_stacks.s[i], chain, ARRAY_SIZE(chain));

		if (m == -2)
			return 6;
		if (m == 1 && stack_has(&fork_stacks.s[i], "main"))
			whole++;
	}
	return whole ? 0 : 7;
}

/*
 * The forked child's exit status: FORK_COPIED if it has the parent's
 * registrations, FORK_DROPPED if it has none (the registry's copy failed)
 * and unwinds right, else why not. The JIT code runs either way: it is
 * still mapped.
 */
enum { FORK_COPIED = 0, FORK_DROPPED = 3 };

static int fork_child(struct jit *j, unsigned long long before)
{
	j->entry();
	if (nr_sections() == before)
		return FORK_COPIED;
	return fork_child_unwinds() ?: FORK_DROPPED;
}

/*
 * Fork with the n-th allocation failing, for every n: fork either fails
 * with ENOMEM (or EAGAIN) and the parent keeps its registry and its memory,
 * or succeeds and the child has the registrations or, if their copy
 * failed, none and unwinds right (fork_child()).
 */
TEST_F(fault, fork)
{
	unsigned long long before = nr_sections();
	unsigned int n, failed = 0, dropped = 0;

	for (n = 1; n < MAX_NTH; n++) {
		pid_t pid;
		int status, hit;

		ASSERT_EQ(0, fail_nth(n));
		pid = fork();
		/* (fork gives the child a disarmed fail-nth) */
		if (pid == 0)
			_exit(fork_child(&self->j, before));
		hit = fail_nth_hit();
		if (pid < 0) {
			ASSERT_TRUE(errno == ENOMEM || errno == EAGAIN);
			ASSERT_TRUE(hit);
			failed++;
		} else {
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
			ASSERT_TRUE(WIFEXITED(status));
			if (WEXITSTATUS(status) == FORK_DROPPED)
				dropped++;
			else
				ASSERT_EQ(FORK_COPIED, WEXITSTATUS(status));
		}
		/* The parent's address space and registry are intact. */
		ASSERT_EQ(before, nr_sections());
		self->j.entry();
		if (!hit)
			break;
	}
	printf("# fork: %u injection points, %u forks failed cleanly, %u children without the registrations unwound right\n",
	       n - 1, failed, dropped);
	ASSERT_LT(n, MAX_NTH);
	EXPECT_GT(n, 1);
}

/*
 * Only the allocations made under @func (its call stack, by the fault
 * injection's stack trace filter) count for fail-nth: @func's address
 * range from /proc/kallsyms, up to the next symbol. 0 or -errno.
 */
static int fail_only_under(const char *func)
{
	static const char *const attrs[] = { "failslab", "fail_page_alloc" };
	unsigned long long addr, start = 0, end = 0;
	char type, name[256], path[128], val[32];
	unsigned int i;
	FILE *f = fopen("/proc/kallsyms", "r");

	if (!f)
		return -errno;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, name) == 3) {
		if (start && addr > start) {
			end = addr;
			break;
		}
		if (!start && !strcmp(name, func))
			start = addr;
	}
	fclose(f);
	if (!start || !end)
		return -ENOENT;
	for (i = 0; i < ARRAY_SIZE(attrs); i++) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/require-start", attrs[i]);
		snprintf(val, sizeof(val), "%llu", start);
		if (write_text(path, val))
			return -ENOENT;
		snprintf(path, sizeof(path), "/sys/kernel/debug/%s/require-end", attrs[i]);
		snprintf(val, sizeof(val), "%llu", end);
		if (write_text(path, val))
			return -ENOENT;
	}
	return 0;
}

/* The filter's defaults: every allocation counts. */
static void fail_anywhere(void)
{
	write_text("/sys/kernel/debug/failslab/require-start", "0");
	write_text("/sys/kernel/debug/failslab/require-end", "18446744073709551615");
	write_text("/sys/kernel/debug/fail_page_alloc/require-start", "0");
	write_text("/sys/kernel/debug/fail_page_alloc/require-end",
		   "18446744073709551615");
}

/*
 * The registry's own copy at fork failing, each of its allocations in
 * turn (the other allocations of fork left alone): profiling state never
 * fails a fork. The child has the parent's registrations, or none, and
 * then its first walks attach its files' tables again: its stacks are
 * whole and right.
 */
TEST_F(fault, fork_copy_fails)
{
	unsigned long long before = nr_sections();
	unsigned int n, dropped = 0;
	int err = fail_only_under("unwind_user_sframe_mm_dup");

	if (err == -ENOENT) {
		fail_anywhere();
		SKIP(return, "no unwind_user_sframe_mm_dup in /proc/kallsyms, or no CONFIG_FAULT_INJECTION_STACKTRACE_FILTER");
	}
	ASSERT_EQ(0, err);
	for (n = 1; n < MAX_NTH; n++) {
		int status;
		bool hit;
		pid_t pid;

		ASSERT_EQ(0, fail_nth(n));
		pid = fork();
		if (pid == 0)
			_exit(fork_child(&self->j, before));
		hit = fail_nth_hit();
		ASSERT_LE(0, pid) TH_LOG("fork failed at the registry's allocation %u: %s",
					 n, strerror(errno));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		if (WEXITSTATUS(status) == FORK_DROPPED)
			dropped++;
		else
			ASSERT_EQ(FORK_COPIED, WEXITSTATUS(status))
				TH_LOG("child of injection point %u", n);
		/* Without a failure, the child has every registration. */
		if (!hit) {
			ASSERT_EQ(FORK_COPIED, WEXITSTATUS(status));
			break;
		}
		ASSERT_EQ(before, nr_sections());
	}
	fail_anywhere();
	printf("# fork: %u injection points in the registry's copy, %u children without it unwound right\n",
	       n - 1, dropped);
	ASSERT_LT(n, MAX_NTH);
	EXPECT_GT(dropped, 0);
}

/*
 * exec of a program whose file has a table (this one, built from its own
 * section) with the n-th allocation failing: exec fails cleanly or
 * succeeds; a table exec could not attach never fails the exec itself. The
 * new program tells by its exit status whether it met the failure
 * (fail-nth survives exec) and has a section.
 */
enum exec_child_status {
	EXEC_CLEAN = 0,		/* no failure met, the file's table attached */
	EXEC_FAILED = 1,	/* exec itself failed, from the injection */
	EXEC_NO_SECTION = 4,	/* no failure met, but no section: a bug */
	EXEC_HIT = 5,		/* failure met, the table attached */
	EXEC_HIT_NO_SECTION = 6,/* failure met, the table not attached */
};

/*
 * The new program may also meet the failure in its own start-up (libc's
 * TLS setup, say) or when it opens fail-nth, and exit or die of it: that
 * is user space's business; the kernel log is checked by the harness.
 */

/*
 * A copy of this program in a memfd, mapped executable here, so that the
 * walk that settles this address space builds its table too: the memfd,
 * or -1.
 *
 * The execs under fail-nth run the copy, not /proc/self/exe: the new
 * program opens, maps and, at its exit, releases its file in the task the
 * failures are injected into, so that file must be one the test owns. On
 * 9p (make vng's root), a failure injected into the clunk of a file
 * released at exit (p9_tag_alloc() in p9_client_clunk()) makes the client
 * forget a fid the server still holds; the client hands that fid out
 * again, the server refuses it (EINVAL), and no task can open a file of
 * that mount any more. Mainline 7.2 without this series does the same.
 */
static int exec_copy(void)
{
	int in = open("/proc/self/exe", O_RDONLY), fd = -1;
	struct stat sb;
	void *map;

	if (in < 0 || fstat(in, &sb))
		goto out;
	fd = memfd_create("sframe_fault_test", MFD_CLOEXEC);
	if (fd < 0)
		goto out;
	if (sendfile(fd, in, NULL, sb.st_size) != sb.st_size)
		goto fail;
	map = mmap(NULL, sb.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (map != MAP_FAILED)
		goto out;
fail:
	close(fd);
	fd = -1;
out:
	if (in >= 0)
		close(in);
	return fd;
}

/* Can this task still open and read @path? */
static bool file_readable(const char *path)
{
	int fd = open(path, O_RDONLY);
	char c;
	bool ok = fd >= 0 && read(fd, &c, 1) == 1;

	if (fd >= 0)
		close(fd);
	return ok;
}

/*
 * Each of the 200-odd injection points is a fork and an exec: close to the
 * harness's default timeout on a debug kernel, past it with KASAN.
 */
TEST_F_TIMEOUT(fault, exec, 120)
{
	unsigned int n, failed = 0, died = 0;
	int copy = exec_copy();

	ASSERT_LE(0, copy);
	/*
	 * This file's and the copy's tables: built by a walk once the
	 * registration is gone.
	 */
	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
				  self->exe.text_start, 0, 0));
	ASSERT_EQ(0, settle_self());

	for (n = 1; n < MAX_NTH; n++) {
		int status, pipefd[2];
		char r = 0;
		pid_t pid;

		ASSERT_EQ(0, pipe(pipefd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			char *argv[] = { "sframe_fault_test", "--exec-child", NULL };

			close(pipefd[0]);
			dup2(pipefd[1], 3);
			/* The inherited file is the parent thread's. */
			fail_nth_close();
			if (fail_nth_open() || fail_nth(n))
				_exit(3);
			fexecve(copy, argv, environ);
			/* exec failed: did the injection cause it? */
			r = fail_nth_hit() ? 'f' : 'e';
			if (write(3, &r, 1) != 1)
				_exit(3);
			_exit(EXEC_FAILED);
		}
		close(pipefd[1]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (read(pipefd[0], &r, 1) != 1)
			r = 0;
		close(pipefd[0]);
		if (!WIFEXITED(status)) {
			died++;
			continue;
		}
		status = WEXITSTATUS(status);
		if (status == EXEC_FAILED) {
			ASSERT_EQ('f', r);
			failed++;
			continue;
		}
		/* Without a failure, exec attaches the file's table. */
		ASSERT_NE(EXEC_NO_SECTION, status);
		if (status == EXEC_CLEAN)
			break;
	}
	close(copy);
	printf("# exec: %u injection points, %u execs failed cleanly, %u new programs died of a failure in their start-up\n",
	       n - 1, failed, died);
	ASSERT_LT(n, MAX_NTH);
	/* What failed in the new programs failed there only. */
	EXPECT_TRUE(file_readable("/proc/self/exe"));
}

/*
 * Registration and unregistration through prctl: each fails with ENOMEM
 * and changes nothing, or succeeds.
 */
TEST_F(fault, register_unregister)
{
	unsigned long long before = nr_sections();
	unsigned int n, reg_fail = 0, unreg_fail = 0;
	long ret;

	ASSERT_EQ(0, jit_unregister(&self->j));
	for (n = 1; n < MAX_NTH; n++) {
		ASSERT_EQ(0, fail_nth(n));
		ret = jit_register(&self->j);
		if (!fail_nth_hit()) {
			ASSERT_EQ(0, ret);
			break;
		}
		if (ret) {
			ASSERT_EQ(-ENOMEM, ret);
			ASSERT_EQ(before - 1, nr_sections());
			reg_fail++;
		} else {
			ASSERT_EQ(before, nr_sections());
			ASSERT_EQ(0, jit_unregister(&self->j));
		}
	}
	printf("# register: %u injection points, %u failed cleanly\n", n - 1, reg_fail);
	ASSERT_LT(n, MAX_NTH);
	ASSERT_EQ(before, nr_sections());

	for (n = 1; n < MAX_NTH; n++) {
		bool hit;

		ASSERT_EQ(0, fail_nth(n));
		ret = jit_unregister(&self->j);
		hit = fail_nth_hit();
		if (ret) {
			ASSERT_EQ(-ENOMEM, ret);
			ASSERT_TRUE(hit);
			ASSERT_EQ(before, nr_sections());
			unreg_fail++;
			continue;
		}
		ASSERT_EQ(before - 1, nr_sections());
		if (!hit)
			break;
		ASSERT_EQ(0, jit_register(&self->j));
	}
	printf("# unregister: %u injection points, %u failed cleanly\n", n - 1, unreg_fail);
	ASSERT_LT(n, MAX_NTH);
}

/*
 * munmap of the registered text with the n-th allocation failing: the
 * registration goes whether or not munmap itself succeeds in full, or
 * stays with its text; never a registration without its text.
 */
TEST_F(fault, munmap)
{
	unsigned long long before = nr_sections();
	unsigned int n;

	for (n = 1; n < MAX_NTH; n++) {
		int ret;
		bool hit;

		/* Unmap the text page (the JIT window's first VMA). */
		ASSERT_EQ(0, fail_nth(n));
		ret = munmap(self->j.text, self->j.page);
		hit = fail_nth_hit();
		if (ret) {
			ASSERT_EQ(ENOMEM, errno);
			ASSERT_TRUE(hit);
			/* Nothing unmapped: the registration may stay. */
			ASSERT_TRUE(nr_sections() == before || nr_sections() == before - 1);
		} else {
			ASSERT_EQ(before - 1, nr_sections());
		}
		jit_free(&self->j);
		ASSERT_EQ(0, jit_build(&self->j, jit_spin, 1, 0));
		if (nr_sections() == before - 1)
			ASSERT_EQ(0, jit_register(&self->j));
		ASSERT_EQ(before, nr_sections());
		if (!ret && !hit)
			break;
	}
	printf("# munmap: %u injection points\n", n - 1);
	ASSERT_LT(n, MAX_NTH);
}

int main(int argc, char **argv)
{
	/* The exec test's new program (enum exec_child_status). */
	if (argc > 1 && !strcmp(argv[1], "--exec-child")) {
		struct unwind_user_info info = {};
		bool section;

		section = !unwind_query(&info) && info.nr_sections;
		if (fail_nth_open())	/* the failure met open() */
			return section ? EXEC_HIT : EXEC_HIT_NO_SECTION;
		if (fail_nth_hit())
			return section ? EXEC_HIT : EXEC_HIT_NO_SECTION;
		return section ? EXEC_CLEAN : EXEC_NO_SECTION;
	}
	return test_harness_run(argc, argv);
}
