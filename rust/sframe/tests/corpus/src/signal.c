// SPDX-License-Identifier: GPL-2.0
/* Signal handlers (plain and SA_SIGINFO), an alternate signal stack, and a
 * nested signal raised from inside a handler. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t hits;
static volatile long deep;

__attribute__((noinline)) static long work(long n)
{
	volatile char buf[256];

	buf[0] = (char)n;
	return n > 0 ? work(n - 1) + buf[0] : 0;
}

static void on_usr1(int sig)
{
	hits++;
	deep += work(sig);
}

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	hits += si->si_signo == sig;
	raise(SIGUSR1); /* nested signal */
}

int main(void)
{
	static char altstack[1 << 16];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;

	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK | SA_NODEFER;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR2, &sa, NULL);
	raise(SIGUSR1);
	raise(SIGUSR2);
	printf("%d %ld\n", (int)hits, deep);
	return 0;
}
