// SPDX-License-Identifier: GPL-2.0
/*
 * User-assisted unwinding (UNWIND_USER_ASSIST_ENABLE/SUBMIT): a small
 * bytecode interpreter whose functions live in its own frame stack, not on
 * the machine stack, answers the kernel's signal with them. The kernel's
 * deferred walk shows the interpreter's native frames (vm_run, main); the
 * answer, a second deferred record with the same cookie, must name the
 * interpreted functions in their calling order for >= 99% of the samples
 * taken in interpreted code, as one run of the interpreter's loop
 * (UNWIND_USER_ASSIST_LOOP with vm_run's code, UNWIND_USER_ASSIST_RUN).
 * Every refused answer (wrong cookie, twice, late, oversized, a kernel
 * address, another thread's cookie, none asked) gets its documented errno
 * and brings no record; a process that did not opt in, or has no handler
 * for the signal, is not signalled.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

#ifndef PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING
#define PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING	(1 << 13)
#define PERF_RECORD_MISC_CALLCHAIN_ASSISTED		(1 << 14)
#endif

#define ASSIST_SIG	SIGUSR1
#define MAX_ENTRIES	16
#define TIMEOUT_MS	100

/* The interpreter: a function is a list of instructions. */
enum op { OP_SPIN, OP_CALL, OP_RET, OP_LOOP };

struct insn {
	enum op op;
	int arg;
};

enum fn { F_MAIN, F_OUTER, F_MIDDLE, F_LEAF_A, F_LEAF_B, NR_FN };

static const char *const fn_name[NR_FN] = {
	"script_main", "outer", "middle", "leaf_a", "leaf_b",
};

static const struct insn code_main[] = {
	{ OP_CALL, F_OUTER }, { OP_SPIN, 50 }, { OP_LOOP, 0 },
};
static const struct insn code_outer[] = {
	{ OP_CALL, F_MIDDLE }, { OP_SPIN, 200 }, { OP_CALL, F_LEAF_B },
	{ OP_RET, 0 },
};
static const struct insn code_middle[] = {
	{ OP_SPIN, 100 }, { OP_CALL, F_LEAF_A }, { OP_RET, 0 },
};
static const struct insn code_leaf_a[] = { { OP_SPIN, 2000 }, { OP_RET, 0 } };
static const struct insn code_leaf_b[] = { { OP_SPIN, 1000 }, { OP_RET, 0 } };

static const struct insn *const fn_code[NR_FN] = {
	code_main, code_outer, code_middle, code_leaf_a, code_leaf_b,
};

/* Which function calls which: (callee, caller) pairs of a right stack. */
static const int fn_caller[NR_FN] = {
	[F_MAIN] = -1, [F_OUTER] = F_MAIN, [F_MIDDLE] = F_OUTER,
	[F_LEAF_A] = F_MIDDLE, [F_LEAF_B] = F_OUTER,
};

/*
 * The interpreter's frame stack, read by the signal handler: a call writes
 * the slot before it counts it, so the handler sees whole frames only.
 */
#define VM_DEPTH	32
static volatile int vm_fn[VM_DEPTH];
static volatile int vm_depth;
static volatile int vm_stop;
/* Rounds of the main script's loop: the work done. */
static volatile unsigned long vm_rounds;
static volatile unsigned long sink;

/*
 * Each interpreted function has an address of its own in an executable
 * mapping with no code: perf records the mapping and names the addresses
 * from /tmp/perf-PID.map, as for a JIT.
 */
static uint64_t fn_base;
/* vm_run()'s code: the interpreter's loop, whose frame the run replaces. */
static uint64_t loop_start, loop_size;
#define ANSWER_HEAD	4	/* LOOP, start, end, RUN */

static uint64_t fn_addr(int f)
{
	return fn_base + 16 * f + 8;
}

static int addr_fn(uint64_t a)
{
	if (a < fn_base || a >= fn_base + 16 * NR_FN || (a - fn_base) % 16 != 8)
		return -1;
	return (a - fn_base) / 16;
}

void __attribute__((noipa)) vm_run(void *arg)
{
	double seconds = *(double *)arg, end = now_seconds() + seconds;
	int pc[VM_DEPTH];
	unsigned long x = sink;

	vm_fn[0] = F_MAIN;
	pc[0] = 0;
	vm_depth = 1;
	while (vm_depth > 0) {
		int d = vm_depth - 1;
		const struct insn *in = &fn_code[vm_fn[d]][pc[d]++];

		switch (in->op) {
		case OP_SPIN:
			for (int i = 0; i < in->arg; i++)
				x = x * 2862933555777941757ul + 3037000493ul;
			break;
		case OP_CALL:
			vm_fn[d + 1] = in->arg;
			pc[d + 1] = 0;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			vm_depth = d + 2;
			break;
		case OP_RET:
			vm_depth = d;
			break;
		case OP_LOOP:
			vm_rounds++;
			if (vm_stop || now_seconds() >= end)
				vm_depth = 0;
			else
				pc[d] = in->arg;
			break;
		}
	}
	sink = x;
}

/* What the handler does with a request. */
enum mode {
	M_ANSWER,	/* answer right */
	M_REFUSALS,	/* wrong cookie, oversized, a kernel address; then right, then twice */
	M_LATE,		/* after the deadline, then again */
	M_STASH,	/* keep the cookie for another thread, do not answer */
	M_FAIL_NTH,	/* answer with the n-th allocation failing, n = 1, 2, ... */
};

static volatile enum mode mode;
static volatile int signals, answered;
static volatile uint64_t stash_cookie;
/* M_FAIL_NTH: injection points met (ENOMEM), and the errno that ended it */
static volatile int nomem, nomem_other, nomem_end = -1;
/* errnos of the refused answers, in the order the handler made them */
#define NR_ERR 8
static volatile int errs[NR_ERR];
static volatile int nr_errs;

static long submit(uint64_t cookie, const uint64_t *e, unsigned int nr)
{
	struct unwind_user_assist_frames f = {
		.cookie = cookie,
		.entries = (uintptr_t)e,
		.nr = nr,
	};

	return unwind_prctl(UNWIND_USER_ASSIST_SUBMIT, (unsigned long)&f,
			    sizeof(f), 0);
}

static void note_err(long r)
{
	if (nr_errs < NR_ERR)
		errs[nr_errs++] = (int)-r;
}

static void on_assist(int sig, siginfo_t *si, void *uc)
{
	uint64_t cookie = (uintptr_t)si->si_value.sival_ptr;
	uint64_t e[MAX_ENTRIES + 1] = {
		UNWIND_USER_ASSIST_LOOP, loop_start, loop_start + loop_size,
		UNWIND_USER_ASSIST_RUN,
	};
	int n = ANSWER_HEAD, d = vm_depth;

	signals++;
	while (d > 0 && n < MAX_ENTRIES)
		e[n++] = fn_addr(vm_fn[--d]);

	switch (mode) {
	case M_ANSWER:
		break;
	case M_REFUSALS:
		if (nr_errs)
			break;
		note_err(submit(cookie ^ 2, e, n));
		e[MAX_ENTRIES] = e[0];
		note_err(submit(cookie, e, MAX_ENTRIES + 1));
		e[n] = 0xffffffff81000000ul;
		note_err(submit(cookie, e, n + 1));
		if (!submit(cookie, e, n))
			answered++;
		note_err(submit(cookie, e, n));
		return;
	case M_LATE:
		if (nr_errs)
			break;
		/*
		 * No sample from here on: once this request has expired, one
		 * would make a new one, and the late answer would get ESTALE
		 * (another cookie pending) instead.
		 */
		ioctl(sampling_fd, PERF_EVENT_IOC_DISABLE, 0);
		nanosleep(&(struct timespec){ .tv_nsec = (TIMEOUT_MS + 100) * 1000000L },
			  NULL);
		note_err(submit(cookie, e, n));
		note_err(submit(cookie, e, n));
		return;
	case M_STASH:
		if (!stash_cookie)
			stash_cookie = cookie;
		return;
	case M_FAIL_NTH:
		if (nomem_end >= 0)
			break;
		for (unsigned int k = 1; k < 100; k++) {
			long r;
			bool hit;

			fail_nth(k);
			r = submit(cookie, e, n);
			hit = fail_nth_hit();
			if (r == -ENOMEM && hit) {
				nomem++;
				continue;
			}
			if (r)
				nomem_other = (int)-r;
			else
				answered++;
			nomem_end = (int)-r;
			break;
		}
		return;
	}
	if (!submit(cookie, e, n))
		answered++;
}

static long assist_enable(int signo, unsigned int max, unsigned int timeout)
{
	struct unwind_user_assist a = {
		.signo = signo, .max_entries = max, .timeout_ms = timeout,
	};

	return unwind_prctl(UNWIND_USER_ASSIST_ENABLE, (unsigned long)&a,
			    sizeof(a), 0);
}

static struct stacks stacks;

static void setup(void)
{
	struct sigaction sa = { .sa_sigaction = on_assist, .sa_flags = SA_SIGINFO };
	void *p;

	sym_init();
	if (!loop_start)
		sym_addr("vm_run", &loop_start, &loop_size);
	if (!fn_base) {
		p = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		fn_base = p == MAP_FAILED ? 0 : (uintptr_t)p;
	}
	sigaction(ASSIST_SIG, &sa, NULL);
	mode = M_ANSWER;
	signals = answered = nr_errs = 0;
	stash_cookie = 0;
}

static void run_sampled_at(double seconds, int freq)
{
	vm_stop = 0;
	sample_stacks(vm_run, &seconds, freq, &stacks);
}

static void run_sampled(double seconds)
{
	run_sampled_at(seconds, 500);
}

/* Opted in, the handler in @m: run the interpreter sampled, opt out. */
static long run_assisted(enum mode m, double seconds)
{
	long r;

	mode = m;
	r = assist_enable(ASSIST_SIG, MAX_ENTRIES, TIMEOUT_MS);
	if (r)
		return r;
	run_sampled(seconds);
	return assist_enable(0, 0, 0);
}

/*
 * Is @a, innermost first, a stack the interpreter can have, said to be the
 * one run of vm_run()?
 */
static bool right_order(const struct ustack *a)
{
	int f, prev = -1;

	if (a->nr <= ANSWER_HEAD || a->ip[0] != UNWIND_USER_ASSIST_LOOP ||
	    a->ip[1] != loop_start || a->ip[2] != loop_start + loop_size ||
	    a->ip[3] != UNWIND_USER_ASSIST_RUN || !loop_size)
		return false;
	for (unsigned int i = ANSWER_HEAD; i < a->nr; i++) {
		f = addr_fn(a->ip[i]);
		if (f < 0 || (prev >= 0 && fn_caller[prev] != f))
			return false;
		prev = f;
	}
	return prev == F_MAIN;
}

static const struct ustack *answer_of(uint64_t cookie)
{
	for (unsigned int i = 0; i < stacks.nr; i++)
		if (stacks.s[i].cookie == cookie &&
		    (stacks.s[i].misc & PERF_RECORD_MISC_CALLCHAIN_ASSISTED))
			return &stacks.s[i];
	return NULL;
}

static int count_misc(unsigned int bit)
{
	int n = 0;

	for (unsigned int i = 0; i < stacks.nr; i++)
		n += !!(stacks.s[i].misc & bit);
	return n;
}

TEST(assist_names_in_order)
{
	int in_vm = 0, right = 0, missing = 0, native = 0, shown = 0;

	setup();
	ASSERT_EQ(0, run_assisted(M_ANSWER, 3.0));

	for (unsigned int i = 0; i < stacks.nr; i++) {
		const struct ustack *st = &stacks.s[i], *a;

		if (!(st->misc & PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING))
			continue;
		/* Samples in interpreted code: the kernel's walk says where. */
		if (!stack_has(st, "vm_run"))
			continue;
		in_vm++;
		native += stack_has(st, "sample_stacks");
		a = answer_of(st->cookie);
		if (!a) {
			missing++;
			continue;
		}
		if (right_order(a)) {
			right++;
		} else if (shown++ < 5) {
			for (unsigned int k = 0; k < a->nr; k++) {
				int f = addr_fn(a->ip[k]);

				printf("# wrong: %s %#llx\n", f < 0 ? "?" : fn_name[f],
				       (unsigned long long)a->ip[k]);
			}
		}
	}
	printf("# %d samples in interpreted code: %d answered in order, %d unanswered; %d native walks reach sample_stacks; %d signals, %d answers, %d lost\n",
	       in_vm, right, missing, native, signals, answered, stacks.lost);
	ASSERT_GE(in_vm, 100);
	/* The kernel's own walk is delivered as before. */
	EXPECT_EQ(native, in_vm);
	EXPECT_GE(right * 100, in_vm * 99);
	/* Every answer is a record; there are no others. */
	EXPECT_EQ(answered, count_misc(PERF_RECORD_MISC_CALLCHAIN_ASSISTED));
}

TEST(assist_refused_answers)
{
	setup();
	ASSERT_EQ(0, run_assisted(M_REFUSALS, 0.5));
	ASSERT_EQ(4, nr_errs);
	EXPECT_EQ(ESTALE, errs[0]);	/* not the pending cookie */
	EXPECT_EQ(E2BIG, errs[1]);	/* more than max_entries */
	EXPECT_EQ(EINVAL, errs[2]);	/* not a user address */
	EXPECT_EQ(EALREADY, errs[3]);	/* answered already */
	/* The refused answers changed nothing: the right one went through. */
	EXPECT_EQ(answered, count_misc(PERF_RECORD_MISC_CALLCHAIN_ASSISTED));
	EXPECT_GE(answered, 1);
}

TEST(assist_late_answer)
{
	setup();
	ASSERT_EQ(0, run_assisted(M_LATE, 0.5));
	ASSERT_EQ(2, nr_errs);
	EXPECT_EQ(ETIMEDOUT, errs[0]);	/* after the deadline */
	EXPECT_EQ(ENOENT, errs[1]);	/* the request is gone */
	EXPECT_EQ(answered, count_misc(PERF_RECORD_MISC_CALLCHAIN_ASSISTED));
}

static void *submit_stashed(void *arg)
{
	uint64_t e = fn_addr(F_MAIN);

	return (void *)(intptr_t)submit(stash_cookie, &e, 1);
}

TEST(assist_other_thread_and_unasked)
{
	uint64_t e = fn_addr(F_MAIN);
	pthread_t t;
	void *r;

	setup();
	/* Not opted in: nothing can be pending. */
	EXPECT_EQ(-ENOENT, submit(1, &e, 1));
	ASSERT_EQ(0, assist_enable(ASSIST_SIG, MAX_ENTRIES, TIMEOUT_MS));
	/* Opted in, nothing asked. */
	EXPECT_EQ(-ENOENT, submit(1, &e, 1));
	mode = M_STASH;
	run_sampled(0.3);
	ASSERT_NE(0, stash_cookie);
	/* This thread's cookie, answered by another thread. */
	ASSERT_EQ(0, pthread_create(&t, NULL, submit_stashed, NULL));
	pthread_join(t, &r);
	EXPECT_EQ(-ENOENT, (long)(intptr_t)r);
	ASSERT_EQ(0, assist_enable(0, 0, 0));
	EXPECT_EQ(0, count_misc(PERF_RECORD_MISC_CALLCHAIN_ASSISTED));
}

/*
 * What the assisted path costs the interpreted workload, sampled at
 * 1000 Hz as perf record -F 1000 would: its work in a fixed time without
 * and with it, alternating (the figures are printed, not judged: the
 * emulator's timing is noisy).
 */
static void on_nothing(int sig)
{
}

TEST(assist_cost)
{
	struct sigaction sa = { .sa_handler = on_nothing };
	unsigned long rounds[2] = { 0, 0 };
	int sigs = 0, n = 2000;
	double t;

	setup();
	for (int i = 0; i < 4; i++) {
		bool on = i % 2;

		if (on)
			ASSERT_EQ(0, assist_enable(ASSIST_SIG, MAX_ENTRIES, TIMEOUT_MS));
		signals = 0;
		vm_rounds = 0;
		run_sampled_at(1.0, 1000);
		rounds[on] += vm_rounds;
		sigs += on ? signals : 0;
		ASSERT_EQ(0, assist_enable(0, 0, 0));
	}
	printf("# -F 1000, 2 x 1 s each: %lu rounds without, %lu with (%.1f%% slower), %d requests: %.1f us each\n",
	       rounds[0], rounds[1], 100.0 * (1.0 - (double)rounds[1] / rounds[0]),
	       sigs, sigs ? 2e6 * (1.0 - (double)rounds[1] / rounds[0]) / sigs : 0.0);
	/* The floor: a signal to itself and one system call, in the same run. */
	sigaction(SIGUSR2, &sa, NULL);
	t = now_seconds();
	for (int i = 0; i < n; i++) {
		raise(SIGUSR2);
		getppid();
	}
	t = now_seconds() - t;
	printf("# a signal delivered to itself and a system call, unsampled: %.1f us\n", 1e6 * t / n);
	ASSERT_GT(sigs, 0);
	ASSERT_GT(rounds[1], 0);
}

/*
 * The answer's allocations failing one after the other: each fails with
 * ENOMEM and leaves the request to be answered; then the answer goes
 * through.
 */
TEST(assist_submit_fail_nth)
{
	setup();
	if (getuid() || fault_injection_setup() || fail_nth_open())
		SKIP(return, "no fault injection (root, CONFIG_FAULT_INJECTION_DEBUG_FS, CONFIG_FAILSLAB)");
	ASSERT_EQ(0, run_assisted(M_FAIL_NTH, 0.5));
	fail_nth_close();
	printf("# submit: %d injection points failed with ENOMEM, then %d\n", nomem, nomem_end);
	EXPECT_GE(nomem, 1);
	EXPECT_EQ(0, nomem_end);
	EXPECT_EQ(0, nomem_other);
	EXPECT_EQ(answered, count_misc(PERF_RECORD_MISC_CALLCHAIN_ASSISTED));
}

TEST(assist_enable_errors)
{
	struct unwind_user_assist a = { ASSIST_SIG, MAX_ENTRIES, TIMEOUT_MS, 0 };
	char big[sizeof(a) + 8] = { 0 };

	EXPECT_EQ(-EINVAL, assist_enable(SIGKILL, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(SIGSTOP, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(65, MAX_ENTRIES, TIMEOUT_MS));
	/* Signals with a meaning of their own: stop, continue, a child's. */
	EXPECT_EQ(-EINVAL, assist_enable(SIGTSTP, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(SIGCONT, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(SIGCHLD, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(0, assist_enable(SIGUSR2, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(0, assist_enable(SIGRTMAX, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(0, assist_enable(0, MAX_ENTRIES, TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(ASSIST_SIG, 0, TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(ASSIST_SIG,
					 UNWIND_USER_ASSIST_MAX_ENTRIES + 1,
					 TIMEOUT_MS));
	EXPECT_EQ(-EINVAL, assist_enable(ASSIST_SIG, MAX_ENTRIES, 0));
	EXPECT_EQ(-EINVAL, assist_enable(ASSIST_SIG, MAX_ENTRIES,
					 UNWIND_USER_ASSIST_MAX_TIMEOUT_MS + 1));
	a.flags = 1;
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_ASSIST_ENABLE,
					(unsigned long)&a, sizeof(a), 0));
	a.flags = 0;
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_ASSIST_ENABLE,
					(unsigned long)&a, sizeof(a) - 1, 0));
	memcpy(big, &a, sizeof(a));
	big[sizeof(a)] = 1;
	EXPECT_EQ(-E2BIG, unwind_prctl(UNWIND_USER_ASSIST_ENABLE,
				       (unsigned long)big, sizeof(big), 0));
	EXPECT_EQ(-EFAULT, unwind_prctl(UNWIND_USER_ASSIST_ENABLE, 8,
					sizeof(a), 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_ASSIST_SUBMIT, 0, 8, 0));
}

/* A child: sampled with @enable, with or without a handler. */
static int child_run(bool enable, bool handler)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		setup();
		if (!handler)
			signal(ASSIST_SIG, SIG_DFL);
		if (enable &&
		    assist_enable(ASSIST_SIG, MAX_ENTRIES, TIMEOUT_MS) != 0)
			_exit(2);
		run_sampled(0.5);
		/* Not signalled, and no record asks for an answer. */
		_exit(signals || count_misc(PERF_RECORD_MISC_CALLCHAIN_ASSIST_PENDING) ||
		      stacks.nr == 0 ? 3 : 0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

TEST(assist_not_asked)
{
	/* Not opted in: as before. */
	EXPECT_EQ(0, child_run(false, true));
	/* Opted in with the signal's default action: not killed, not asked. */
	EXPECT_EQ(0, child_run(true, false));
}

TEST_HARNESS_MAIN
