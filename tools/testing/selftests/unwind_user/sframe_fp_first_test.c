// SPDX-License-Identifier: GPL-2.0
/*
 * A frame-pointer distribution's program (built with frame pointers, no
 * .sframe, as Fedora and Ubuntu build theirs), sampled the way plain
 * `perf record -g` samples it: callchains taken at sample time, no
 * deferred unwind to complete them. Its stacks must be at least as
 * complete as mainline's frame-pointer walk gives them, from the first
 * sample of a new process on: the SFrame unwinder may end a walk at
 * sample time only where a deferred unwind is coming to do better.
 *
 * Each round copies this program to a new file (a memfd), so that no
 * table of it exists yet (the kernel keeps one per file, once it has
 * looked), execs the copy and has it sample itself spinning at the end of
 * a chain of functions with frame pointers: its first sample comes before
 * any deferred unwind could have attached anything. It counts the stacks
 * whose first frame is in the chain that end before main.
 * Rounds run with the SFrame unwinder's sample-time walk (the default) and
 * without it (unwind_user_nmi_sframe=0: mainline's frame-pointer walk),
 * which is the bar.
 *
 * On a machine where an agent attached tables, the walk ends at code a
 * table may soon describe instead: the test expects none.
 *
 * no_registry_before_unwound: new processes nobody unwinds cost the
 * unwinder no registry (UNWIND_USER_QUERY's machine-wide count).
 *
 * This file is built with frame pointers and without --gsframe (Makefile).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "fp_chain.h"

#define NMI_KNOB	"/sys/module/kernel/parameters/unwind_user_nmi_sframe"
/* Samples of each new process: the first ones are the point. */
#define FREQ		1000
#define SPIN_SECONDS	0.2
#define ROUNDS		3
/* A round whose program got fewer stacks in the chain is run again. */
#define MIN_IN_CHAIN	10
#define MAX_TRIES	4

/* No section of this program to register: it has none, by design. */
bool unwind_test_no_self_register = true;

static const char *const chain[] = {
	FP_CHAIN, "sample_stacks", "sample_stacks_sync",
};

enum child_status {
	CHILD_WHOLE = 0,	/* every stack in the chain went up to main */
	CHILD_CUT = 1,		/* one did not */
	CHILD_FEW = 2,		/* too few stacks in the chain: run again */
	CHILD_ERROR = 3,	/* could not sample */
	CHILD_HAS_SFRAME = 4,	/* built with a .sframe section after all */
};

/* The new program: samples itself, prints its counts (enum child_status). */
static int child(void)
{
	struct stacks *st = malloc(sizeof(*st));
	double seconds = SPIN_SECONDS;
	unsigned int i, first = 0, cut = 0;
	struct tally t;

	if (!st || sym_init())
		return CHILD_ERROR;
	if (self_has_sframe_segment())
		return CHILD_HAS_SFRAME;
	if (sample_stacks_sync(fp_work, &seconds, FREQ, st))
		return CHILD_ERROR;
	t = chain_check(st, chain, ARRAY_SIZE(chain), "main", 3);
	/* The first sample in the chain, which a new process gets first. */
	for (i = 0; i < st->nr; i++) {
		if (stack_matches(&st->s[i], chain, ARRAY_SIZE(chain)) != -1) {
			first = st->s[i].nr;
			break;
		}
	}
	/*
	 * Cut: ended before main. A stack that skips a frame of the chain
	 * (a sample at a function's first instruction, before it pushed
	 * %rbp: the frame-pointer rule's blind spot, mainline's too) still
	 * goes on to main, and is printed above, not counted.
	 */
	for (i = 0; i < st->nr; i++)
		cut += stack_matches(&st->s[i], chain, ARRAY_SIZE(chain)) != -1 &&
		       !stack_has(&st->s[i], "main");
	printf("#   %u samples, %d in the chain, %d whole, %d not, %u of them cut before main; the first in the chain has %u frames\n",
	       st->nr, t.in_chain, t.complete, t.in_chain - t.complete, cut, first);
	if (cut)
		return CHILD_CUT;
	return t.in_chain < MIN_IN_CHAIN ? CHILD_FEW : CHILD_WHOLE;
}

/* A copy of this program in a new memfd, or -1. */
static int new_copy(void)
{
	int in = open("/proc/self/exe", O_RDONLY), fd = -1;
	struct stat sb;

	if (in < 0)
		return -1;
	if (!fstat(in, &sb))
		fd = memfd_create("sframe_fp_first_test", 0);
	if (fd >= 0 && sendfile(fd, in, NULL, sb.st_size) != sb.st_size) {
		close(fd);
		fd = -1;
	}
	close(in);
	return fd;
}

/* Runs one new copy: its enum child_status. */
static int run_copy(void)
{
	char *argv[] = { "sframe_fp_first_test", "--child", NULL };
	int fd = new_copy(), status;
	pid_t pid;

	if (fd < 0)
		return CHILD_ERROR;
	pid = fork();
	if (!pid) {
		fexecve(fd, argv, environ);
		_exit(CHILD_ERROR);
	}
	close(fd);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return CHILD_ERROR;
	return WEXITSTATUS(status);
}

FIXTURE(fp_first) {
	bool knob_set;
};

FIXTURE_SETUP(fp_first)
{
	if (getuid())
		SKIP(return, "needs root for %s", NMI_KNOB);
	/* Without the knob (the SFrame unwinder off): mainline's walk only. */
	if (access(NMI_KNOB, W_OK))
		SKIP(return, "no %s", NMI_KNOB);
}

FIXTURE_TEARDOWN(fp_first)
{
	if (self->knob_set)
		write_text(NMI_KNOB, "Y");
}

/*
 * Runs ROUNDS new copies, with the SFrame unwinder's walk at sample time
 * or without: how many had a stack cut short.
 */
static int rounds(struct __test_metadata *_metadata,
		  FIXTURE_DATA(fp_first) *self, bool sframe_walk)
{
	int r, tries, cut = 0;

	ASSERT_EQ(0, write_text(NMI_KNOB, sframe_walk ? "Y" : "N"));
	self->knob_set = true;
	for (r = 0; r < ROUNDS; r++) {
		int status = CHILD_FEW;

		for (tries = 0; status == CHILD_FEW && tries < MAX_TRIES; tries++)
			status = run_copy();
		if (status == CHILD_HAS_SFRAME)
			SKIP(return 0, "this program has a .sframe section (the toolchain's default?)");
		ASSERT_NE(CHILD_ERROR, status);
		ASSERT_NE(CHILD_FEW, status);
		cut += status == CHILD_CUT;
	}
	return cut;
}

/* Mainline's frame-pointer walk, the bar: every stack whole. */
TEST_F(fp_first, frame_pointer_walk)
{
	EXPECT_EQ(0, rounds(_metadata, self, false));
}

/* The SFrame unwinder's walk, in a new process: no worse. */
TEST_F(fp_first, sframe_walk_from_first_sample)
{
	EXPECT_EQ(0, rounds(_metadata, self, true));
}

/* Processes a program starts that nobody profiles. */
#define IDLE_CHILDREN	32

/*
 * The new program, idle: says on descriptor 3 that it runs, and waits to
 * be killed; if @sampled, it first samples itself with deferred
 * callchains, whose walks may sleep: someone unwinds it.
 */
/*
 * An idle child of no_registry_before_unwound: it says on fd 3 whether it
 * is ready (1) or could not sample (0), then waits to be killed. With 32
 * of them spinning on a slow guest, a round of sampling may get no sample:
 * it samples again, for 2 s at most.
 */
static int idle(bool sampled)
{
	struct stacks *st = sampled ? malloc(sizeof(*st)) : NULL;
	char ready = !sampled;

	for (int i = 0; st && i < 40 && !ready; i++) {
		double seconds = 0.05;

		if (sample_stacks(fp_work, &seconds, FREQ, st))
			break;
		ready = st->nr > 0;
	}
	free(st);
	if (write(3, &ready, 1) != 1)
		return CHILD_ERROR;
	pause();
	return 0;
}

/* The machine's count of address spaces with a registry. */
static long registries(void)
{
	struct unwind_user_info info = {};

	if (unwind_query(&info))
		return -1;
	return info.registries;
}

/*
 * Nothing per process before someone unwinds it: programs started with
 * posix_spawn() on a machine where nobody profiles get no registry; the
 * same programs sampling themselves get one each, freed with them.
 */
TEST(no_registry_before_unwound)
{
	static const char *const modes[] = { "--idle", "--idle-sampled" };
	unsigned int m;

	if (getuid())
		SKIP(return, "the count is machine-wide: needs CAP_PERFMON");
	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		char *argv[] = { "sframe_fp_first_test", (char *)modes[m], NULL };
		posix_spawn_file_actions_t fa;
		pid_t pids[IDLE_CHILDREN];
		long before, during, after;
		int p[2], i, tries, ready;
		char c;

		ASSERT_EQ(0, pipe(p));
		ASSERT_EQ(0, posix_spawn_file_actions_init(&fa));
		ASSERT_EQ(0, posix_spawn_file_actions_adddup2(&fa, p[1], 3));
		before = registries();
		ASSERT_LE(0, before);
		for (i = 0; i < IDLE_CHILDREN; i++)
			ASSERT_EQ(0, posix_spawn(&pids[i], "/proc/self/exe", &fa, NULL,
						 argv, environ));
		close(p[1]);
		/* Every child answers, ready or not: none is left waiting. */
		for (i = 0, ready = 0; i < IDLE_CHILDREN; i++)
			if (read(p[0], &c, 1) == 1 && c == 1)
				ready++;
		during = registries();
		for (i = 0; i < IDLE_CHILDREN; i++) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
		close(p[0]);
		posix_spawn_file_actions_destroy(&fa);
		/* Freed with the children's address spaces, or before. */
		for (tries = 0; (after = registries()) > before && tries < 50; tries++)
			usleep(10000);
		ksft_print_msg("%s: registries %ld before, %ld with %d children (%d ready), %ld after\n",
			       modes[m], before, during, IDLE_CHILDREN, ready, after);
		ASSERT_EQ(IDLE_CHILDREN, ready);
		EXPECT_EQ(m ? before + IDLE_CHILDREN : before, during);
		EXPECT_LE(after, before);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child();
	if (argc > 1 && !strncmp(argv[1], "--idle", 6))
		return idle(!strcmp(argv[1], "--idle-sampled"));
	return test_harness_run(argc, argv);
}
