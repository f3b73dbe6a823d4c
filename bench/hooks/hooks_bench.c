// SPDX-License-Identifier: GPL-2.0
/*
 * What exec, mmap and fork cost (make bench-hooks): run on the production
 * kernel with the SFrame unwinder and on the same kernel without it, with
 * nobody profiling, so that the cost of the unwinder's hooks to a machine
 * that does not profile is their ratio.
 *
 *   hooks_bench spawn N PROG   posix_spawn() + waitpid() of PROG (a dynamic
 *                              program: exec, then ld.so maps its libraries)
 *   hooks_bench mmap N FILE    mmap() of FILE's first 64 KiB executable,
 *                              then munmap()
 *   hooks_bench fork N         fork() + _exit() + waitpid() of a process
 *                              that maps the C library
 *
 * Prints "hooks: op=OP n=N ns=NS": nanoseconds per operation by
 * CLOCK_MONOTONIC (under QEMU's -icount, instructions).
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "hooks_bench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die("child failed");
}

int main(int argc, char **argv)
{
	double t0, t;
	long n, i;

	if (argc < 3) {
		fprintf(stderr, "usage: hooks_bench spawn|mmap|fork N [PROG|FILE]\n");
		return 2;
	}
	n = atol(argv[2]);
	if (!strcmp(argv[1], "spawn") && argc == 4) {
		char *args[] = { argv[3], NULL };

		t0 = now_ns();
		for (i = 0; i < n; i++) {
			pid_t pid;

			errno = posix_spawn(&pid, argv[3], NULL, NULL, args, environ);
			if (errno)
				die("posix_spawn");
			reap(pid);
		}
	} else if (!strcmp(argv[1], "mmap") && argc == 4) {
		int fd = open(argv[3], O_RDONLY);

		if (fd < 0)
			die(argv[3]);
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			void *p = mmap(NULL, 65536, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);

			if (p == MAP_FAILED)
				die("mmap");
			munmap(p, 65536);
		}
	} else if (!strcmp(argv[1], "fork")) {
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			pid_t pid = fork();

			if (pid < 0)
				die("fork");
			if (!pid)
				_exit(0);
			reap(pid);
		}
	} else {
		fprintf(stderr, "hooks_bench: unknown operation %s\n", argv[1]);
		return 2;
	}
	t = now_ns() - t0;
	printf("hooks: op=%s n=%ld ns=%.0f\n", argv[1], n, t / n);
	return 0;
}
