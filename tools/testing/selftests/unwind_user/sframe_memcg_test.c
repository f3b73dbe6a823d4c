// SPDX-License-Identifier: GPL-2.0
/*
 * What a registration makes the kernel allocate is charged to the memory
 * cgroup of the task that registers: in a cgroup whose memory.max leaves
 * room for two sections' tables, registrations succeed and memory.current
 * grows by about their size, then fail with ENOMEM, cleanly; unregistering
 * gives the memory back, and with room again registering works.
 *
 * Needs root, cgroup2 at /sys/fs/cgroup and CONFIG_MEMCG.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "sframe_gen.h"

#define CGROOT		"/sys/fs/cgroup"
/* Functions a section: its table in the kernel is 20 bytes each, ~1 MB. */
#define NFUNCS		50000
#define FUNC_SIZE	16
#define NSECS		8

/*
 * The number in the file open at @fd. The file is opened once, before the
 * limit is set: at the limit, opening it would need memory the cgroup no
 * longer has (the OOM killer, not ENOMEM, answers a plain open()).
 */
static long long read_ll(int fd)
{
	char buf[64] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	return n > 0 ? atoll(buf) : -1;
}

struct sec {
	uint8_t *text;
	uint8_t *buf;
	struct unwind_user_sframe reg;
};

/* A text of NFUNCS functions and its section, written (so charged) now. */
static int make_sec(struct sec *s)
{
	static struct sfg_func f[NFUNCS];
	static const struct sfg_fre row[] = { SFG_SP(0, 8) };
	size_t cap = (size_t)NFUNCS * 32 + 4096;
	ssize_t len;
	int i;

	s->text = mmap(NULL, (size_t)NFUNCS * FUNC_SIZE, PROT_READ | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s->buf = mmap(NULL, cap, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->text == MAP_FAILED || s->buf == MAP_FAILED)
		return -1;
	for (i = 0; i < NFUNCS; i++)
		f[i] = (struct sfg_func){
			.start = (uintptr_t)s->text + (uint64_t)i * FUNC_SIZE,
			.size = FUNC_SIZE, .nr_fres = 1, .fres = row,
		};
	len = sfg_write(s->buf, cap, (uintptr_t)s->buf, 0, f, NFUNCS, NULL);
	if (len < 0)
		return -1;
	s->reg = (struct unwind_user_sframe){
		.text_start = (uintptr_t)s->text,
		.text_size = (uint64_t)NFUNCS * FUNC_SIZE,
		.sframe_start = (uintptr_t)s->buf,
		.sframe_size = len,
	};
	return 0;
}

static long reg(struct sec *s)
{
	return unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&s->reg,
			    sizeof(s->reg), 0);
}

static long unreg(struct sec *s)
{
	return unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, s->reg.text_start, 0, 0);
}

/* The child, in the cgroup @cg; exit status: 0 or the failed step. */
static int in_cgroup(const char *cg)
{
	char path[256], val[32];
	struct sec s[NSECS];
	long long base, cur, prev;
	int i, current, ok = 0;
	long r = 0;

	for (i = 0; i < NSECS; i++)
		if (make_sec(&s[i]))
			return 10;
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (write_text(path, "0"))
		return 11;
	snprintf(path, sizeof(path), "%s/memory.current", cg);
	current = open(path, O_RDONLY);
	if (current < 0)
		return 11;
	base = read_ll(current);
	/* Room for two tables of ~1 MB, with a margin for the rest. */
	snprintf(val, sizeof(val), "%lld", base + (5ll << 19));
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	if (write_text(path, val))
		return 12;

	prev = read_ll(current);
	for (i = 0; i < NSECS; i++) {
		r = reg(&s[i]);
		cur = read_ll(current);
		printf("# registration %d: %ld, memory.current +%lld bytes\n",
		       i, r, cur - prev);
		if (r)
			break;
		prev = cur;
		ok++;
	}
	/*
	 * The FDE tables, 20 bytes a function, were charged here (give or
	 * take the 256 KiB a CPU's charge stock holds).
	 */
	if (prev - base < (long long)ok * NFUNCS * 20 - (256 << 10))
		return 13;
	if (r != -ENOMEM)
		return 14;
	if (ok < 1 || ok > 3)
		return 15;
	/* The refused registration left nothing behind. */
	if (unreg(&s[ok]) != -ENOENT)
		return 16;

	for (i = 0; i < ok; i++)
		if (unreg(&s[i]))
			return 17;
	/* The tables go after an RCU grace period: let it pass. */
	usleep(200000);
	cur = read_ll(current);
	printf("# all unregistered: memory.current %+lld bytes from before\n", cur - base);
	if (cur - base >= NFUNCS * 20)
		return 18;

	snprintf(path, sizeof(path), "%s/memory.max", cg);
	if (write_text(path, "max"))
		return 19;
	for (i = 0; i < NSECS; i++)
		if (reg(&s[i]))
			return 20;
	for (i = 0; i < NSECS; i++)
		if (unreg(&s[i]))
			return 21;
	return 0;
}

TEST(registry_charged_to_memcg)
{
	char cg[128], controllers[256] = "";
	int fd, status;
	pid_t pid;

	if (getuid())
		SKIP(return, "needs root");
	fd = open(CGROOT "/cgroup.controllers", O_RDONLY);
	if (fd < 0 || read(fd, controllers, sizeof(controllers) - 1) < 0 ||
	    !strstr(controllers, "memory"))
		SKIP(return, "no cgroup2 memory controller at " CGROOT " (CONFIG_MEMCG)");
	close(fd);
	ASSERT_EQ(0, write_text(CGROOT "/cgroup.subtree_control", "+memory"));
	snprintf(cg, sizeof(cg), CGROOT "/sframe_memcg_%d", getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(in_cgroup(cg));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, rmdir(cg));
}

TEST_HARNESS_MAIN
