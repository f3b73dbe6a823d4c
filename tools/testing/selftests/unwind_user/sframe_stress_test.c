// SPDX-License-Identifier: GPL-2.0
/*
 * Everything at once, for a while: two threads run JIT code with a
 * registered section under perf (one with deferred callchains, one with
 * sample-time ones) while two others, on every round, register and
 * unregister those threads' sections, make them unreadable and readable
 * again, build, register and unmap windows of their own, fork children
 * that run JIT code and exit, and exec this program. The kernel must stay
 * up with a clean log (the harness checks it, and kmemleak), every call
 * must give a documented result, and the registry must end as it began.
 *
 * STRESS_SECONDS in the environment sets the duration (default 20).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "jit_code.h"

#define NSAMPLERS	2
#define NMUTATORS	2

static double seconds;
static volatile int stop;

struct sampler {
	pthread_t tid;
	bool sync;
	struct jit j;
	struct stacks *stacks;
	int err;
};

struct mutator {
	pthread_t tid;
	unsigned int seed;
	struct sampler *victims;
	unsigned long rounds, unexpected;
};

static void run_jit(void *arg)
{
	struct jit *j = arg;
	double end = now_seconds() + seconds;

	while (now_seconds() < end)
		j->entry();
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;

	s->err = s->sync ? sample_stacks_sync(run_jit, &s->j, 2000, s->stacks)
			 : sample_stacks(run_jit, &s->j, 2000, s->stacks);
	return NULL;
}

/* A result that is not one the ABI documents for what was done. */
static bool odd(long r, long ok1, long ok2, long ok3)
{
	if (r && r != ok1 && r != ok2 && r != ok3) {
		printf("# unexpected %ld\n", r);
		return true;
	}
	return false;
}

static void *mutator_main(void *arg)
{
	struct mutator *m = arg;

	while (!stop) {
		struct sampler *v = &m->victims[rand_r(&m->seed) % NSAMPLERS];
		struct jit own;
		pid_t pid;
		long r;

		switch (rand_r(&m->seed) % 6) {
		case 0:	/* the victim's registration goes and comes back */
			r = jit_unregister(&v->j);
			m->unexpected += odd(r, -ENOENT, 0, 0);
			/* EFAULT: the other mutator made the section unreadable. */
			r = jit_register(&v->j);
			m->unexpected += odd(r, -EEXIST, -EFAULT, 0);
			break;
		case 1:	/* its section unreadable for a moment */
			mprotect(v->j.sec, v->j.page, PROT_NONE);
			usleep(1000);
			mprotect(v->j.sec, v->j.page, PROT_READ | PROT_WRITE);
			break;
		case 2:	/* a window of our own: register, run, unmap */
			if (jit_build(&own, jit_spin, 10, 0))
				break;
			r = jit_register(&own);
			m->unexpected += odd(r, 0, 0, 0);
			own.entry();
			jit_free(&own);
			break;
		case 3:	/* a child that runs the victim's code */
			pid = fork();
			if (pid == 0) {
				v->j.entry();
				_exit(0);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
			break;
		case 4:	/* a child that execs this program */
			pid = fork();
			if (pid == 0) {
				execl("/proc/self/exe", "sframe_stress_test", "--exit", NULL);
				_exit(1);
			}
			if (pid > 0)
				waitpid(pid, NULL, 0);
			break;
		case 5:	/* the query, from another thread */
			{
				struct unwind_user_info info;

				m->unexpected += odd(unwind_query(&info), 0, 0, 0);
			}
			break;
		}
		m->rounds++;
	}
	return NULL;
}

FIXTURE(stress) {
};

FIXTURE_SETUP(stress)
{
}

FIXTURE_TEARDOWN(stress)
{
}

/* STRESS_SECONDS may be up to the guest's 300 s a test program. */
TEST_F_TIMEOUT(stress, everything_at_once, 290)
{
	struct sampler s[NSAMPLERS] = {};
	struct mutator m[NMUTATORS] = {};
	struct unwind_user_info before, after;
	const char *env = getenv("STRESS_SECONDS");
	unsigned long rounds = 0, unexpected = 0;
	int i;

	seconds = env ? atof(env) : 20;
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, unwind_query(&before));
	for (i = 0; i < NSAMPLERS; i++) {
		s[i].sync = i % 2;
		s[i].stacks = malloc(sizeof(*s[i].stacks));
		ASSERT_NE(NULL, s[i].stacks);
		ASSERT_EQ(0, jit_build(&s[i].j, jit_spin, 200, 0));
		ASSERT_EQ(0, jit_register(&s[i].j));
		ASSERT_EQ(0, pthread_create(&s[i].tid, NULL, sampler_main, &s[i]));
	}
	for (i = 0; i < NMUTATORS; i++) {
		m[i].seed = 1234 + i;
		m[i].victims = s;
		ASSERT_EQ(0, pthread_create(&m[i].tid, NULL, mutator_main, &m[i]));
	}
	for (i = 0; i < NSAMPLERS; i++)
		pthread_join(s[i].tid, NULL);
	stop = 1;
	for (i = 0; i < NMUTATORS; i++) {
		pthread_join(m[i].tid, NULL);
		rounds += m[i].rounds;
		unexpected += m[i].unexpected;
	}
	ASSERT_EQ(0, unwind_query(&after));
	printf("# %.0f s: %lu mutations, %u + %u stacks sampled; unwinds +%llu errors +%llu dropped +%llu\n",
	       seconds, rounds, s[0].stacks->nr, s[1].stacks->nr,
	       (unsigned long long)(after.unwinds - before.unwinds),
	       (unsigned long long)(after.errors - before.errors),
	       (unsigned long long)(after.dropped - before.dropped));
	EXPECT_EQ(0, unexpected);
	for (i = 0; i < NSAMPLERS; i++) {
		EXPECT_EQ(0, s[i].err);
		EXPECT_GT(s[i].stacks->nr, 0);
		jit_unregister(&s[i].j);
		jit_free(&s[i].j);
		free(s[i].stacks);
	}
	/* As it began: the program's own section only. */
	ASSERT_EQ(0, unwind_query(&after));
	EXPECT_EQ(before.nr_sections, after.nr_sections);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--exit"))
		return 0;
	return test_harness_run(argc, argv);
}
