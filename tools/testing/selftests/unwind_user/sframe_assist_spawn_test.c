// SPDX-License-Identifier: GPL-2.0
/*
 * User-assisted unwinding in a process that does more than run: it spawns
 * programs, blocks signals in some threads, and is profiled by tools that
 * know nothing of the assist records. The process opts in with a real-time
 * signal (default action: terminate) and a handler that answers.
 *
 * - children: sampled by an inherited task-clock event (deferred
 *   callchains, defer_assist), the process spawns children for
 *   SPAWN_SECONDS (default 10) with posix_spawn(), vfork() + execve(),
 *   fork() + the clean-up before exec that posix_spawn() does (block all
 *   signals, reset every handler to SIG_DFL, restore the mask), and
 *   system(). Each child re-executes this program, which exits 0 at once.
 *   None may be killed by a signal, and no child may be asked for its
 *   frames: the opt-in is the thread group's, not its children's.
 * - blocking_thread: a thread that blocks the signal spins, sampled, for a
 *   few seconds: it never has more than one of the signals queued (SigQ
 *   of /proc/self/status, less what it read before).
 * - old_consumer: an event with defer_output but not defer_assist (perf
 *   tools that know nothing of the assist records), beside one with
 *   defer_assist whose unwinds are answered: the old event sees at most one
 *   PERF_RECORD_CALLCHAIN_DEFERRED per cookie, none of them an answer.
 * - restart: a child opted in, whose handler has no SA_RESTART, sits in
 *   poll() over many entries (kernel time, sampled: its deferred unwinds
 *   run on its way out of the kernel) while it is stopped and continued
 *   again and again, each time restarting the poll(): it must never see
 *   EINTR, and some of its deferred unwinds must have run with the
 *   restart pending (records that did not ask for an answer). x86 sets a
 *   restart up after the unwind's task work runs, arm64 before.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

#ifndef PERF_RECORD_CALLCHAIN_DEFERRED
#define PERF_RECORD_CALLCHAIN_DEFERRED 22
#endif
#ifndef PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING
#define PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING	(1 << 13)
#define PERF_RECORD_MISC_CALLCHAIN_ASSISTED		(1 << 14)
#endif

/* The argument that makes this program exit 0 at once (the children). */
#define EXIT0_ARG	"--exit0"

#define MAX_ENTRIES	16
/* Short: a request that is not answered is followed by another soon. */
#define TIMEOUT_MS	10
/* Samples a second of task clock: every 200 us. */
#define FREQ		5000
#define RING_PAGES	256

#define SPAWN_SECONDS	10.0
#define BLOCK_SECONDS	3.0
#define CONSUMER_SECONDS 3.0

static int assist_sig(void)
{
	/* Real-time: queued once per send, and its default action kills. */
	return SIGRTMIN + 2;
}

/* What the handler did, in any thread of this process. */
static int nr_signals, nr_answered, nr_refused;
static __thread int thread_signals;

/* A count the handler keeps: the compiler cannot know it changes. */
static int count(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

/* The frames the handler answers with: two addresses of this program. */
static uint64_t answer[2];

static void on_assist(int sig, siginfo_t *si, void *uc)
{
	struct unwind_user_assist_frames f = {
		.cookie = (uintptr_t)si->si_value.sival_ptr,
		.entries = (uintptr_t)answer,
		.nr = ARRAY_SIZE(answer),
	};
	int saved = errno;

	__atomic_add_fetch(&nr_signals, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&thread_signals, 1, __ATOMIC_RELAXED);
	if (prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_SUBMIT, &f, sizeof(f), 0))
		__atomic_add_fetch(&nr_refused, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&nr_answered, 1, __ATOMIC_RELAXED);
	errno = saved;
}

static long assist_enable(int signo)
{
	struct unwind_user_assist a = {
		.signo = signo, .max_entries = MAX_ENTRIES, .timeout_ms = TIMEOUT_MS,
	};

	return unwind_prctl(UNWIND_USER_ASSIST_ENABLE, (unsigned long)&a,
			    sizeof(a), 0);
}

static unsigned long sink;

/* Work in user mode for @seconds (of wall time). */
static void spin_for(double seconds)
{
	double end = now_seconds() + seconds;
	unsigned long x = sink;

	do {
		for (int i = 0; i < 1000; i++)
			x = x * 2862933555777941757ul + 3037000493ul;
	} while (now_seconds() < end);
	sink = x;
}

struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	char *data;
	size_t size, len;
};

/* One event, or one a CPU: an inherited per-task event cannot be mmap'ed. */
#define MAX_CPUS	64

struct sampler {
	int nr;
	struct ring ring[MAX_CPUS];
};

static int ring_open(struct ring *r, struct perf_event_attr *attr, int cpu,
		     bool assist)
{
	size_t psz = sysconf(_SC_PAGESIZE);

	attr->defer_assist = assist;
	r->fd = syscall(SYS_perf_event_open, attr, 0, cpu, -1,
			PERF_FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -errno;
	r->size = RING_PAGES * psz;
	r->len = r->size + psz;
	r->meta = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, 0);
	if (r->meta == MAP_FAILED) {
		close(r->fd);
		return -errno;
	}
	r->data = (char *)r->meta + psz;
	return 0;
}

static void sampler_close(struct sampler *s)
{
	while (s->nr > 0) {
		s->nr--;
		munmap(s->ring[s->nr].meta, s->ring[s->nr].len);
		close(s->ring[s->nr].fd);
	}
}

/*
 * Sample this thread (and, with @inherit, the threads and children it
 * makes from now on: then one event a CPU, as perf record does) every
 * 1/@freq s of task clock, kernel time included (a sample in a system call
 * asks for a deferred unwind too), with deferred callchains written to the
 * ring, and with defer_assist if @assist.
 * Disabled. 0 or -errno.
 */
static int sampler_open(struct sampler *s, int freq, bool inherit, bool assist)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.sample_period = 1000000000 / freq,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_CALLCHAIN,
		.exclude_callchain_kernel = 1,
		.disabled = 1,
		.inherit = inherit,
		.defer_callchain = 1,
		.defer_output = 1,
		.sample_id_all = 1,
	};
	long cpus = inherit ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
	int err;

	if (cpus < 1 || cpus > MAX_CPUS)
		return -ERANGE;
	for (s->nr = 0; s->nr < cpus; s->nr++) {
		err = ring_open(&s->ring[s->nr], &attr, inherit ? s->nr : -1,
				assist);
		if (err) {
			sampler_close(s);
			return err;
		}
	}
	return 0;
}

/* What a ring brought. "Other" is a process that is not this one. */
struct counts {
	unsigned long samples, other_samples, tid_samples;
	unsigned long deferred, pending, assisted, lost;
	unsigned long other_deferred, other_pending, other_assisted;
	pid_t pid, tid;			/* this process; a thread of interest */
	uint64_t *cookies;		/* of the deferred records, if not NULL */
	size_t nr_cookies, max_cookies;
};

static void ring_drain(struct ring *r, struct counts *c)
{
	static uint64_t rec[65536 / sizeof(uint64_t)];
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;

	while (tail < head) {
		struct perf_event_header hdr;
		uint64_t *p = rec + 1, nr, id;
		size_t off = tail % r->size, i;
		bool other;

		for (i = 0; i < sizeof(hdr); i++)
			((char *)&hdr)[i] = r->data[(off + i) % r->size];
		if (hdr.size < sizeof(hdr))
			break;
		for (i = 0; i < hdr.size; i++)
			((char *)rec)[i] = r->data[(off + i) % r->size];
		tail += hdr.size;

		if (hdr.type == PERF_RECORD_LOST) {
			c->lost++;
		} else if (hdr.type == PERF_RECORD_SAMPLE) {
			/* ip, pid/tid, nr, ips[nr] */
			other = (pid_t)(uint32_t)p[1] != c->pid;
			c->samples++;
			c->other_samples += other;
			c->tid_samples += (pid_t)(p[1] >> 32) == c->tid;
		} else if (hdr.type == PERF_RECORD_CALLCHAIN_DEFERRED) {
			/* cookie, nr, ips[nr], then sample_id_all's pid/tid */
			nr = p[1];
			if ((3 + nr + 1) * sizeof(uint64_t) > hdr.size)
				continue;
			id = p[2 + nr];
			other = (pid_t)(uint32_t)id != c->pid;
			c->deferred++;
			c->other_deferred += other;
			if (hdr.misc & PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING) {
				c->pending++;
				c->other_pending += other;
			}
			if (hdr.misc & PERF_RECORD_MISC_CALLCHAIN_ASSISTED) {
				c->assisted++;
				c->other_assisted += other;
			}
			if (c->cookies && c->nr_cookies < c->max_cookies)
				c->cookies[c->nr_cookies++] = p[0];
		}
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static void sampler_drain(struct sampler *s, struct counts *c)
{
	for (int i = 0; i < s->nr; i++)
		ring_drain(&s->ring[i], c);
}

static void sampler_enable(struct sampler *s, bool on)
{
	for (int i = 0; i < s->nr; i++)
		ioctl(s->ring[i].fd,
		      on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* This program, and how the children run it. */
static char self_exe[PATH_MAX];
static char exit0_arg[] = EXIT0_ARG;
static char *child_argv[] = { self_exe, exit0_arg, NULL };
static char shell_cmd[PATH_MAX + 32];

enum method { M_POSIX_SPAWN, M_VFORK, M_FORK, M_SYSTEM, NR_METHODS };

static const char *const method_name[NR_METHODS] = {
	"posix_spawn", "vfork+execve", "fork+sigreset+execve", "system",
};

/*
 * What a careful fork() child does before exec (what posix_spawn() does
 * in its child): with every signal blocked, reset every handler to
 * SIG_DFL, then restore the mask and exec.
 */
static void reset_and_exec(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t all, old;
	int sig;

	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	/* glibc refuses SIGKILL, SIGSTOP and its own two: they stay as they are */
	for (sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	execve(self_exe, child_argv, environ);
	_exit(127);
}

/* Spawn a child with @m and wait for it: its wait status, or -1. */
static int spawn_one(enum method m)
{
	int status;
	pid_t pid;

	switch (m) {
	case M_POSIX_SPAWN:
		if (posix_spawn(&pid, self_exe, NULL, NULL, child_argv, environ))
			return -1;
		break;
	case M_VFORK:
		pid = vfork();
		if (!pid) {
			execve(self_exe, child_argv, environ);
			_exit(127);
		}
		break;
	case M_FORK:
		pid = fork();
		if (!pid)
			reset_and_exec();
		break;
	default:
		return system(shell_cmd);
	}
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return status;
}

struct outcome {
	unsigned int spawned, ok, killed, failed;
	int last_sig, last_status;
};

static void tally(struct outcome *o, enum method m, int status)
{
	o->spawned++;
	if (status == -1) {
		o->failed++;
		o->last_status = -1;
	} else if (WIFSIGNALED(status)) {
		o->killed++;
		o->last_sig = WTERMSIG(status);
	} else if (WIFEXITED(status) && !WEXITSTATUS(status)) {
		o->ok++;
	} else if (m == M_SYSTEM && WIFEXITED(status) &&
		   WEXITSTATUS(status) > 128) {
		/* The shell says its child was killed by signal N (128 + N). */
		o->killed++;
		o->last_sig = WEXITSTATUS(status) - 128;
	} else {
		o->failed++;
		o->last_status = status;
	}
}

static double env_seconds(const char *name, double def, double max)
{
	const char *s = getenv(name);
	double v = s ? strtod(s, NULL) : def;

	return v > 0 && v <= max ? v : def;
}

FIXTURE(assist) {
	struct sampler s;
	struct counts c;
};

FIXTURE_SETUP(assist)
{
	struct sigaction sa = {
		.sa_sigaction = on_assist,
		.sa_flags = SA_SIGINFO | SA_RESTART,
	};

	answer[0] = (uintptr_t)spin_for;
	answer[1] = (uintptr_t)spawn_one;
	memset(&self->c, 0, sizeof(self->c));
	self->c.pid = getpid();
	self->s.nr = 0;
	ASSERT_EQ(0, sigaction(assist_sig(), &sa, NULL));
	ASSERT_EQ(0, assist_enable(assist_sig()));
}

FIXTURE_TEARDOWN(assist)
{
	assist_enable(0);
}

TEST_F_TIMEOUT(assist, children, 180)
{
	double seconds = env_seconds("SPAWN_SECONDS", SPAWN_SECONDS, 120);
	struct outcome o[NR_METHODS] = {};
	struct counts *c = &self->c;
	double end;
	int m;

	ASSERT_EQ(0, sampler_open(&self->s, FREQ, true, true));
	sampler_enable(&self->s, true);
	end = now_seconds() + seconds;
	while (now_seconds() < end) {
		for (m = 0; m < NR_METHODS; m++) {
			/* Busy between spawns, so that the parent is sampled too. */
			spin_for(0.001);
			tally(&o[m], m, spawn_one(m));
		}
		sampler_drain(&self->s, c);
	}
	sampler_enable(&self->s, false);
	sampler_drain(&self->s, c);
	sampler_close(&self->s);

	printf("# %.1f s of spawning, sampled every %d us of task clock, inherited\n",
	       seconds, 1000000 / FREQ);
	for (m = 0; m < NR_METHODS; m++) {
		printf("# %s: %u children spawned, %u exited 0, %u killed by a signal",
		       method_name[m], o[m].spawned, o[m].ok, o[m].killed);
		if (o[m].killed)
			printf(" (the last by %d)", o[m].last_sig);
		printf(", %u failed", o[m].failed);
		if (o[m].failed)
			printf(" (the last with status %#x)", o[m].last_status);
		printf("\n");
	}
	printf("# this process: %lu samples, %lu deferred records, %lu asked, %lu answers\n",
	       c->samples - c->other_samples, c->deferred - c->other_deferred,
	       c->pending - c->other_pending, c->assisted - c->other_assisted);
	printf("# its children: %lu samples, %lu deferred records, %lu asked, %lu answers\n",
	       c->other_samples, c->other_deferred, c->other_pending,
	       c->other_assisted);
	printf("# %lu records lost\n", c->lost);
	printf("# handler (here, in CLONE_VM children): %d requests, %d answered, %d refused\n",
	       count(&nr_signals), count(&nr_answered), count(&nr_refused));

	for (m = 0; m < NR_METHODS; m++) {
		EXPECT_GT(o[m].spawned, 0);
		EXPECT_EQ(0, o[m].killed) TH_LOG("%s: children killed", method_name[m]);
		EXPECT_EQ(0, o[m].failed) TH_LOG("%s: children failed", method_name[m]);
	}
	/* The opt-in is this thread group's: no child is asked. */
	EXPECT_EQ(0, c->other_pending);
}

/* Queued signals of this user: SigQ's first figure. -1 if unreadable. */
static long sigq(void)
{
	char buf[4096], *s;
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	s = strstr(buf, "\nSigQ:");
	return s ? strtol(s + 6, NULL, 10) : -1;
}

/* Has thread @tid the assist signal pending (SigPnd)? */
static bool thread_pending(pid_t tid)
{
	char path[64], buf[4096], *s;
	unsigned long long pnd;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	s = strstr(buf, "\nSigPnd:");
	if (!s)
		return false;
	pnd = strtoull(s + 8, NULL, 16);
	return pnd & 1ull << (assist_sig() - 1);
}

enum { B_START, B_SPINNING, B_SPUN, B_RELEASED, B_DONE };

struct blocker {
	int state;
	pid_t tid;
	double seconds;
	int delivered;		/* handler runs once it unblocked the signal */
};

static void *blocker_main(void *arg)
{
	struct blocker *b = arg;
	sigset_t set;
	double end;

	sigemptyset(&set);
	sigaddset(&set, assist_sig());
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	b->tid = gettid();
	__atomic_store_n(&b->state, B_SPINNING, __ATOMIC_RELEASE);
	end = now_seconds() + b->seconds;
	while (now_seconds() < end) {
		spin_for(0.001);
		getppid();	/* and samples in the kernel */
	}
	__atomic_store_n(&b->state, B_SPUN, __ATOMIC_RELEASE);
	while (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) != B_RELEASED)
		usleep(1000);
	__atomic_store_n(&thread_signals, 0, __ATOMIC_SEQ_CST);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	b->delivered = count(&thread_signals);
	__atomic_store_n(&b->state, B_DONE, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F_TIMEOUT(assist, blocking_thread, 60)
{
	struct blocker b = { .seconds = BLOCK_SECONDS };
	long base, q, max = 0, after;
	int reads = 0, pending = 0;
	struct counts *c = &self->c;
	pthread_t t;

	base = sigq();
	ASSERT_LE(0, base);
	ASSERT_EQ(0, sampler_open(&self->s, FREQ, true, true));
	sampler_enable(&self->s, true);
	ASSERT_EQ(0, pthread_create(&t, NULL, blocker_main, &b));
	while (__atomic_load_n(&b.state, __ATOMIC_ACQUIRE) == B_START)
		usleep(1000);
	c->tid = b.tid;
	while (__atomic_load_n(&b.state, __ATOMIC_ACQUIRE) == B_SPINNING) {
		usleep(20000);
		q = sigq() - base;
		if (q > max)
			max = q;
		pending += thread_pending(b.tid);
		reads++;
		sampler_drain(&self->s, c);
	}
	/* After: the thread still blocks the signal, and no longer runs. */
	usleep(100000);
	after = sigq() - base;
	pending += thread_pending(b.tid);
	reads++;
	if (after > max)
		max = after;
	sampler_enable(&self->s, false);
	__atomic_store_n(&b.state, B_RELEASED, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	sampler_drain(&self->s, c);
	sampler_close(&self->s);

	printf("# a thread blocking signal %d spun %.1f s: %lu samples of it\n",
	       assist_sig(), b.seconds, c->tid_samples);
	printf("# SigQ above its %ld before: at most %ld while it spun, %ld after\n",
	       base, max, after);
	printf("# pending in the thread in %d of %d reads; %d handled once it unblocked\n",
	       pending, reads, b.delivered);
	printf("# process: %lu samples, %lu deferred records, %lu asked, %lu answers\n",
	       c->samples, c->deferred, c->pending, c->assisted);
	ASSERT_GT(c->tid_samples, 0);
	EXPECT_LE(max, 1);
	EXPECT_LE(after, 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

TEST_F_TIMEOUT(assist, old_consumer, 60)
{
	struct counts old = { .pid = self->c.pid, .max_cookies = 1 << 20 };
	struct counts *c = &self->c;
	size_t i, run = 0, most = 0, dup = 0;
	struct sampler old_s;
	double end;

	old.cookies = malloc(old.max_cookies * sizeof(*old.cookies));
	ASSERT_NE(NULL, old.cookies);
	/* The old consumer: perf record --call-graph fp,defer, say. */
	ASSERT_EQ(0, sampler_open(&old_s, FREQ / 5, false, false));
	/* The one that knows the assist records, and asks for them. */
	ASSERT_EQ(0, sampler_open(&self->s, FREQ, false, true));
	sampler_enable(&old_s, true);
	sampler_enable(&self->s, true);
	end = now_seconds() + CONSUMER_SECONDS;
	while (now_seconds() < end) {
		spin_for(0.005);
		sampler_drain(&old_s, &old);
		sampler_drain(&self->s, c);
	}
	sampler_enable(&self->s, false);
	sampler_enable(&old_s, false);
	sampler_drain(&old_s, &old);
	sampler_drain(&self->s, c);
	sampler_close(&self->s);
	sampler_close(&old_s);

	qsort(old.cookies, old.nr_cookies, sizeof(*old.cookies), cmp_u64);
	for (i = 0; i < old.nr_cookies; i++) {
		run = i && old.cookies[i] == old.cookies[i - 1] ? run + 1 : 1;
		if (run > most)
			most = run;
		dup += run == 2;
	}
	printf("# old consumer (no defer_assist): %lu samples, %lu deferred records, %lu lost\n",
	       old.samples, old.deferred, old.lost);
	printf("# old consumer: at most %zu records a cookie, %zu cookies with more than one\n",
	       most, dup);
	printf("# old consumer: %lu records marked ASSISTED, %lu ASSIST_PENDING\n",
	       old.assisted, old.pending);
	printf("# assisting consumer (defer_assist): %lu samples, %lu deferred records\n",
	       c->samples, c->deferred);
	printf("# assisting consumer: %lu records marked ASSISTED, %lu ASSIST_PENDING\n",
	       c->assisted, c->pending);
	printf("# handler: %d requests, %d answered, %d refused\n",
	       count(&nr_signals), count(&nr_answered), count(&nr_refused));
	free(old.cookies);

	ASSERT_GT(old.deferred, 0);
	/* The assisted unwinding worked, for the event that asked for it. */
	EXPECT_GT(count(&nr_answered), 0);
	EXPECT_GT(c->assisted, 0);
	/* And the old consumer saw none of it. */
	EXPECT_EQ(0, old.assisted);
	EXPECT_LE(most, 1);
}

/*
 * poll() entries: each pass over them keeps the child in the kernel long
 * enough for samples to land there, and each sample there asks for a
 * deferred unwind that runs when the child leaves the kernel, stopped.
 */
#define RESTART_FDS	20000
#define RESTART_STOPS	50

/* What a child that polled through the stops saw, in its poll() loop. */
struct restart_report {
	int nfds, eintr, errors, signals;
	unsigned long deferred, pending;
};

/*
 * The child: opted in, with a handler without SA_RESTART, and sampled in
 * the kernel too, it polls RESTART_FDS entries of @go (readable once the
 * parent is done) with @timeout_ms, reports on @out and exits: it never
 * returns.
 */
static void restart_child(int go, int out, int timeout_ms)
{
	struct sigaction sa = {
		.sa_sigaction = on_assist,
		.sa_flags = SA_SIGINFO,
	};
	struct restart_report r = { .nfds = RESTART_FDS };
	struct counts before = { .pid = getpid() }, c;
	struct pollfd *fds;
	struct sampler s;
	struct rlimit rl;
	int ret, i;

	/* poll() takes no more entries than RLIMIT_NOFILE; root may raise it. */
	if (getrlimit(RLIMIT_NOFILE, &rl))
		_exit(2);
	if (rl.rlim_max < (rlim_t)r.nfds) {
		struct rlimit want = { r.nfds, r.nfds };

		if (!setrlimit(RLIMIT_NOFILE, &want))
			rl = want;
		else
			r.nfds = rl.rlim_max;
	}
	rl.rlim_cur = rl.rlim_max;
	fds = calloc(r.nfds, sizeof(*fds));
	if (setrlimit(RLIMIT_NOFILE, &rl) || !fds)
		_exit(2);
	for (i = 0; i < r.nfds; i++)
		fds[i] = (struct pollfd){ .fd = go, .events = POLLIN };

	if (sigaction(assist_sig(), &sa, NULL) || assist_enable(assist_sig()))
		_exit(3);
	/* Every 1 ms: fewer records than the ring holds while nobody reads it. */
	if (sampler_open(&s, FREQ / 5, false, true))
		_exit(4);
	sampler_enable(&s, true);
	sampler_drain(&s, &before);
	c = before;
	for (;;) {
		ret = poll(fds, r.nfds, timeout_ms);
		if (ret > 0)
			break;
		if (ret < 0 && errno == EINTR) {
			r.eintr++;
		} else {
			r.errors++;
			break;
		}
	}
	sampler_enable(&s, false);
	sampler_drain(&s, &c);
	r.deferred = c.deferred - before.deferred;
	r.pending = c.pending - before.pending;
	r.signals = count(&nr_signals);
	_exit(write(out, &r, sizeof(r)) == sizeof(r) ? 0 : 5);
}

/*
 * Stop and continue a restart_child() polling with @timeout_ms
 * RESTART_STOPS times, then let it go: 0 and its report, or -1.
 */
static int restart_run(int timeout_ms, struct restart_report *r, int *stops)
{
	int go[2], out[2], status = 0;
	ssize_t n = 0;
	pid_t pid;

	if (pipe(go))
		return -1;
	if (pipe(out)) {
		close(go[0]);
		close(go[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(out[0]);
		restart_child(go[0], out[1], timeout_ms);
	}
	close(go[0]);
	close(out[1]);
	for (*stops = 0; pid > 0 && *stops < RESTART_STOPS; ++*stops) {
		/* Time to pass over the entries again, in the kernel. */
		usleep(20000);
		if (kill(pid, SIGSTOP) || waitpid(pid, &status, WUNTRACED) != pid ||
		    !WIFSTOPPED(status))
			break;
		if (kill(pid, SIGCONT) || waitpid(pid, &status, WCONTINUED) != pid ||
		    !WIFCONTINUED(status))
			break;
	}
	if (write(go[1], "", 1) == 1)
		n = read(out[0], r, sizeof(*r));
	close(go[1]);
	close(out[0]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	if (n != sizeof(*r) || !WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# the polling child: status %#x, %zd bytes of report\n",
		       status, n);
		return -1;
	}
	return 0;
}

TEST_F_TIMEOUT(assist, restart, 120)
{
	/*
	 * Without and with a timeout (each restarted through
	 * restart_syscall()).
	 */
	static const int timeouts[] = { -1, 3600 * 1000 };
	struct restart_report r;
	int i, stops;

	for (i = 0; i < ARRAY_SIZE(timeouts); i++) {
		ASSERT_EQ(0, restart_run(timeouts[i], &r, &stops));
		printf("# poll() of %d entries, timeout %d ms, %d stops: %d EINTR, %d errors\n",
		       r.nfds, timeouts[i], stops, r.eintr, r.errors);
		printf("#   %lu deferred records, %lu asking, %lu not; %d requests handled\n",
		       r.deferred, r.pending, r.deferred - r.pending, r.signals);
		EXPECT_EQ(RESTART_STOPS, stops);
		EXPECT_EQ(0, r.eintr);
		EXPECT_EQ(0, r.errors);
		/* The unwinds ran with the restart pending: the case happened. */
		EXPECT_GT(r.deferred - r.pending, 0);
	}
}

int main(int argc, char **argv)
{
	ssize_t n;

	/* A child of the children test. */
	if (argc > 1 && !strcmp(argv[1], EXIT0_ARG))
		return 0;
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0) {
		printf("# readlink /proc/self/exe: %s\n", strerror(errno));
		return 1;
	}
	self_exe[n] = 0;
	snprintf(shell_cmd, sizeof(shell_cmd), "'%s' %s", self_exe, EXIT0_ARG);
	return test_harness_run(argc, argv);
}
