// SPDX-License-Identifier: GPL-2.0
/*
 * Stacks sampled in a signal handler. The handler (SIGPROF every 2 ms of
 * CPU time) runs a workload of its own while the main loop runs another,
 * both sampled by perf; on the same stack and on an alternate signal
 * stack.
 *
 * A stack sampled in the handler reads sig_work (unless it starts in
 * sig_handler itself), sig_handler, then the signal trampoline (the
 * handler's return address, glibc's __restore_rt: mov $15,%rax; syscall;
 * on arm64, where glibc installs no restorer, the vDSO's
 * __kernel_rt_sigreturn: mov x8,#139; svc #0), then the interrupted code,
 * whose registers the kernel saved in the signal frame on the stack, then
 * its callers up to main.
 *
 * The trampoline has no SFrame (distribution libcs are not built with
 * it), so the unwinder must recognise it (see
 * Documentation/userspace-api/unwind_user.rst, "Signal frames").
 *
 * Built twice: static (sframe_signal_test: __restore_rt lies in the
 * executable's text, which the table of its own section covers) and
 * dynamic (sframe_signal_dynamic_test: __restore_rt is in libc.so, which
 * nothing registers). On arm64 both return to the vDSO.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

static volatile unsigned long sink;
static struct stacks stacks;

static bool is(const struct ustack *st, unsigned int i, const char *name)
{
	const char *s = i < st->nr ? sym_name(st->ip[i]) : NULL;

	return s && !strcmp(s, name);
}

/* Executable mappings of this process, from /proc/self/maps. */
static struct {
	uint64_t start, end;
} xmaps[64];
static int nr_xmaps;

static int read_xmaps(void)
{
	char line[512], perms[8];
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long s, e;

	if (!f)
		return -1;
	nr_xmaps = 0;
	while (fgets(line, sizeof(line), f) && nr_xmaps < 64) {
		if (sscanf(line, "%llx-%llx %7s", &s, &e, perms) == 3 &&
		    perms[2] == 'x') {
			xmaps[nr_xmaps].start = s;
			xmaps[nr_xmaps].end = e;
			nr_xmaps++;
		}
	}
	fclose(f);
	return 0;
}

static bool in_code(uint64_t ip)
{
	int i;

	for (i = 0; i < nr_xmaps; i++)
		if (ip >= xmaps[i].start && ip < xmaps[i].end)
			return true;
	return false;
}

unsigned long __attribute__((noipa)) sig_work(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 20000; i++)
		x = x * 6364136223846793005ul + 1;
	return x;
}

void __attribute__((noipa)) sig_handler(int sig)
{
	sink = sig_work(sink + sig);
}

unsigned long __attribute__((noipa)) main_leaf(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 2000; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

void __attribute__((noipa)) main_loop(void *arg)
{
	double end = now_seconds() + *(double *)arg;
	unsigned long x = 1;
	int i;

	do {
		for (i = 0; i < 64; i++)
			x = main_leaf(x);
	} while (now_seconds() < end);
	sink = x;
}

#ifdef __aarch64__
static uint64_t probe_ra;

static void __attribute__((noipa)) ra_probe(int sig)
{
	probe_ra = (uintptr_t)__builtin_return_address(0);
}

/* Where a handler returns to: what x30 holds when it starts. */
static uint64_t handler_return_address(void)
{
	struct sigaction sa = { .sa_handler = ra_probe }, old;

	if (sigaction(SIGUSR1, &sa, &old))
		return 0;
	raise(SIGUSR1);
	sigaction(SIGUSR1, &old, NULL);
	return probe_ra;
}
#endif

struct sig_result {
	int in_handler;		/* stacks whose first frame is in the handler */
	int right;		/* right up to the trampoline */
	int wrong;
	int ends;		/* of the right ones: nothing after the trampoline */
	int interrupted;	/* main_leaf/main_loop next, then on to main */
	int elsewhere;		/* other code of this process next (libc, vdso) */
	int bogus;		/* an address that is no code next, or a wrong chain */
};

FIXTURE(signal) {
	struct sig_result r;
	uint64_t trampoline;
};

FIXTURE_VARIANT(signal) {
	bool altstack;
};

FIXTURE_VARIANT_ADD(signal, same_stack) { .altstack = false };
FIXTURE_VARIANT_ADD(signal, altstack) { .altstack = true };

static void classify(struct sig_result *r, const struct ustack *st,
		     uint64_t trampoline)
{
	unsigned int h = is(st, 0, "sig_work") ? 1 : 0;
	const char *next;

	if (!is(st, 0, "sig_work") && !is(st, 0, "sig_handler"))
		return;
	r->in_handler++;
	if (!is(st, h, "sig_handler") || h + 1 >= st->nr ||
	    st->ip[h + 1] != trampoline) {
		if (++r->wrong <= 3)
			stack_print("wrong handler stack", st, 10);
		return;
	}
	r->right++;
	if (h + 2 >= st->nr) {
		r->ends++;
		return;
	}
	next = sym_name(st->ip[h + 2]);
	if (next && (!strcmp(next, "main_leaf") || !strcmp(next, "main_loop"))) {
		if (is(st, h + 3, "main_loop") || !strcmp(next, "main_loop")) {
			if (stack_has(st, "sample_stacks") && stack_has(st, "main")) {
				r->interrupted++;
				return;
			}
		}
	} else if (in_code(st->ip[h + 2])) {
		/* Interrupted in libc (clock_gettime, ioctl) or the vdso. */
		r->elsewhere++;
		return;
	}
	if (++r->bogus <= 3)
		stack_print("after the trampoline", st, 10);
}

FIXTURE_SETUP(signal)
{
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	struct sigaction sa = { .sa_handler = sig_handler };
	struct sig_result *r = &self->r;
	double secs = 1.0;
	unsigned int i, total = 0;
	stack_t ss;
	int round;

	ASSERT_EQ(0, sym_init());
	memset(r, 0, sizeof(*r));
	if (variant->altstack) {
		ss.ss_flags = 0;
		ss.ss_size = 64 * 1024;
		ss.ss_sp = malloc(ss.ss_size);
		ASSERT_NE(NULL, ss.ss_sp);
		ASSERT_EQ(0, sigaltstack(&ss, NULL));
		sa.sa_flags |= SA_ONSTACK;
	}
	sa.sa_flags |= SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGPROF, &sa, NULL));
#ifdef __aarch64__
	/*
	 * The kernel's, in the vDSO, which a handler finds in x30: glibc sets
	 * no restorer on arm64 (and leaves sa_restorer undefined).
	 */
	self->trampoline = handler_return_address();
#else
	struct sigaction old;

	/* The trampoline libc installed (SA_RESTORER) is the return address. */
	ASSERT_EQ(0, sigaction(SIGPROF, NULL, &old));
	self->trampoline = (uintptr_t)old.sa_restorer;
#endif
	ASSERT_NE(0, self->trampoline);
	ASSERT_EQ(0, read_xmaps());
	ASSERT_EQ(0, setitimer(ITIMER_PROF, &it, NULL));
	/*
	 * Rounds until enough samples land in the handler: a loaded host
	 * gives the guest fewer samples, and signals, per second.
	 */
	for (round = 0; round < 8 && r->in_handler < 12; round++) {
		ASSERT_EQ(0, sample_stacks(main_loop, &secs, 4000, &stacks));
		for (i = 0; i < stacks.nr; i++)
			classify(r, &stacks.s[i], self->trampoline);
		total += stacks.nr;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_PROF, &it, NULL);

	printf("# trampoline %#llx (%s); %d rounds, %u stacks, %d in the handler: %d right up to the trampoline, %d wrong\n",
	       (unsigned long long)self->trampoline,
	       sym_name(self->trampoline) ?: "not in the executable",
	       round, total, r->in_handler, r->right, r->wrong);
	printf("#   after it: %d end, %d go on with the interrupted main_leaf/main_loop to main, %d with other code, %d bogus\n",
	       r->ends, r->interrupted, r->elsewhere, r->bogus);
}

FIXTURE_TEARDOWN(signal)
{
}

/* The handler's own frames and the trampoline's address are right. */
TEST_F(signal, handler_frames)
{
	ASSERT_GE(self->r.in_handler, 10);
	EXPECT_EQ(0, self->r.wrong);
	EXPECT_EQ(self->r.in_handler, self->r.right);
}

/*
 * After the trampoline comes the interrupted code: main_leaf or main_loop
 * with its callers up to main, or (rarely) libc or vdso code. Not an
 * address that is no code, not a wrong chain; stopping right there would
 * be incomplete but not wrong, and is counted apart.
 */
TEST_F(signal, through_signal_frame)
{
	ASSERT_GE(self->r.right, 10);
	EXPECT_EQ(0, self->r.bogus);
	EXPECT_EQ(0, self->r.ends);
	EXPECT_GT(self->r.interrupted, self->r.right / 2);
}

TEST_HARNESS_MAIN
