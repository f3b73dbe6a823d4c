/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the SFrame unwinder selftests: see user stacks the way perf
 * does (perf_event_open with deferred callchains, reading
 * PERF_RECORD_CALLCHAIN_DEFERRED from the ring buffer) and symbolize them
 * from the ELF symbol table of the test binary itself.
 */
#ifndef UNWIND_USER_TEST_H
#define UNWIND_USER_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <sys/prctl.h>
#include <linux/prctl.h>
#include <linux/unwind_user.h>

#define MAX_STACKS	4096
#define MAX_DEPTH	512

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/*
 * Most entries of a deferred user stack: kernel/unwind/deferred.c keeps
 * them in a 4 KiB cache, (SZ_4K - sizeof(struct unwind_cache)) / 8.
 */
#define UNWIND_MAX_ENTRIES	510

struct ustack {
	uint64_t cookie;
	/* header.misc of the deferred record that brought it, 0 otherwise */
	unsigned int misc;
	unsigned int nr;
	uint64_t ip[MAX_DEPTH];
};

struct stacks {
	unsigned int nr;		/* user stacks read */
	bool sync;			/* from the samples, not deferred */
	unsigned int samples;		/* samples read */
	unsigned int lost;		/* PERF_RECORD_LOST */
	/*
	 * Deferred callchains: user stacks the samples carried (walked whole
	 * at sample time), and those PERF_RECORD_CALLCHAIN_DEFERRED brought.
	 */
	unsigned int whole;
	unsigned int deferred;
	/*
	 * Stacks of samples of user mode that do not start at the sample's
	 * IP: their first frame, the interrupted instruction, is missing.
	 */
	unsigned int not_at_ip;
	struct ustack s[MAX_STACKS];
};

/*
 * Sample this thread every 1/@freq s of its CPU time (cpu-clock), with
 * deferred callchains, while @work runs @arg; the stacks it got go to @out
 * (from the samples where the kernel walked them whole at once, else from
 * deferred records). Returns 0 or -errno.
 */
int sample_stacks(void (*work)(void *), void *arg, int freq, struct stacks *out);
/* sample_stacks()'s event while it runs (a handler may disable it), else -1 */
extern int sampling_fd;
/*
 * The same without deferral: the user stacks are the callchains of the
 * samples themselves, taken at IRQ/NMI time by perf_callchain_user().
 */
int sample_stacks_sync(void (*work)(void *), void *arg, int freq,
		       struct stacks *out);
/*
 * The same as sample_stacks(), with samples of kernel time too (needs
 * CAP_PERFMON or perf_event_paranoid < 2): the user stack of a sample taken
 * in a system call is always deferred, walked by a walk that may sleep.
 */
int sample_stacks_kernel(void (*work)(void *), void *arg, int freq,
			 struct stacks *out);

/*
 * Has the kernel describe this program's file: a moment of its own code,
 * sampled with deferred callchains, whose first walk that may sleep builds
 * the file's table (from its own PT_GNU_SFRAME) and attaches the tables of
 * the files it maps that no registration covers. Then a program exec'ed
 * from the same file has the table from its exec. 0 or -errno.
 */
int settle_self(void);

/* Write @text to the file @path (a sysfs, proc or cgroup knob): 0 or -errno. */
int write_text(const char *path, const char *text);

/* CLOCK_MONOTONIC in seconds. */
double now_seconds(void);

/* Symbol of @ip in /proc/self/exe (NULL if none); 0 for ip == 0. */
const char *sym_name(uint64_t ip);
/* Load the symbol table (once; later calls do nothing), before sym_name(). */
int sym_init(void);
/* Address and size of symbol @name, 0 on success. */
int sym_addr(const char *name, uint64_t *addr, uint64_t *size);
/* Name [@addr, @addr + @size) (generated code); looked up before the ELF. */
void sym_add(const char *name, uint64_t addr, uint64_t size);
/* Forget the names sym_add() gave. */
void sym_clear_added(void);

/*
 * Text and .sframe of this executable (from its program headers; without
 * PT_GNU_SFRAME, as ld.lld writes it, from the section headers), registered
 * through prctl unless something describes that text already. Every test
 * program calls it before main, unless it defines
 * unwind_test_no_self_register as true.
 */
int self_sframe(struct unwind_user_sframe *sec);
/* Whether this executable has a PT_GNU_SFRAME segment (after sym_init()). */
bool self_has_sframe_segment(void);
extern bool unwind_test_no_self_register;

/* prctl(PR_UNWIND_USER, ...): 0 or -errno. */
static inline long unwind_prctl(unsigned long op, unsigned long a3,
				unsigned long a4, unsigned long a5)
{
	return prctl(PR_UNWIND_USER, op, a3, a4, a5) ? -errno : 0;
}

/* UNWIND_USER_FILE_DETACH of the file @fd: 0 or -errno. */
static inline long file_detach(int fd)
{
	return unwind_prctl(UNWIND_USER_FILE_DETACH, (unsigned long)(long)fd, 0, 0);
}

/*
 * Does @st, read from the top, contain the frames @names in order starting
 * at its first frame whose symbol is @names[0]? Returns 1 if it has all of
 * them in sequence, 0 if it ends before the last (truncated), -2 if a frame
 * after the first differs (a caller that is not the caller), -1 if no frame
 * is @names[0].
 */
int stack_matches(const struct ustack *st, const char *const *names, int n);

/* Does some frame of @st have the symbol @name? */
bool stack_has(const struct ustack *st, const char *name);

/* Print the symbols of @st's first @max frames after @prefix. */
void stack_print(const char *prefix, const struct ustack *st, unsigned int max);

struct tally {
	int in_chain;	/* stacks whose first frame is in the chain */
	int complete;	/* of those, right to the chain's end and @root */
	int wrong;	/* the others */
	int invented;	/* of those, with a frame that is not the next caller */
};

/*
 * Check the stacks of @s against the call chain @chain[0..@n) (innermost
 * first). A stack counts if its first frame is in one of @chain[0..n-1);
 * from there each frame must be the next caller of the chain, to its end,
 * and (unless @root is NULL) some later frame must be @root. On arm64 too,
 * a first frame whose return address is still in x30 (a leaf, a prologue
 * before the save, an epilogue after the restore) must go on to its
 * caller. Up to @verbose wrong stacks are printed.
 */
struct tally chain_check(const struct stacks *s, const char *const *chain,
			 int n, const char *root, int verbose);

/*
 * Stacks through the process's libc.so.6, which has neither SFrame nor
 * frame pointers (sframe_libc_test, sframe_file_test). A program frame such
 * a stack must have: whether the function calls libc (so that libc frames
 * may come before it), and whether libc calls it back (so that libc frames
 * must come after it).
 */
struct libc_frame {
	const char *name;
	bool calls_libc;
	bool called_by_libc;
};

#define LIBC_WORK_MAX	8

/* A workload's program frames, innermost first, up to main. */
struct libc_workload {
	struct libc_frame chain[LIBC_WORK_MAX];
	int n;
	int callers;	/* the last frames: the workload's callers, not its own */
};

/* What libc_classify() found. */
struct libc_tally {
	unsigned int in_work;		/* leaf in the workload or in libc */
	unsigned int libc_leaf;		/* of those, leaf in libc */
	unsigned int plt_leaf;		/* of those, leaf in a PLT stub */
	unsigned int through_libc;	/* of those, with a libc frame */
	unsigned int complete;		/* program frames right up to main */
	unsigned int complete_libc_leaf;/* of those, leaf in libc */
	unsigned int ends_in_libc;	/* the others: last frame in libc */
	unsigned int wrong;		/* the others: a wrong frame */
	unsigned int plt_cut;		/* the others: cut at a libc PLT stub */
	unsigned int libc_ras;		/* libc return addresses in complete ones */
	unsigned int implausible;	/* of those, not right after a call */
	unsigned int max_libc_run;	/* most libc frames in a row */
};

/*
 * Find libc's text and the PLT stubs of libc and of this program, which
 * libc_classify() needs: 0, or -1 if this process has no libc.so.6.
 */
int libc_init(void);

/*
 * Count @st in @t if its leaf is in workload @w: one of its functions, or
 * libc (through a PLT stub or not). It is complete if its program frames
 * are exactly @w's chain, in order, up to main, and the frames between
 * them are in libc's text where the program calls libc, each one a return
 * address right after a call instruction. With @verbose, the first few
 * stacks that are not (or whose libc frames are not after a call) are
 * printed.
 */
void libc_classify(const struct libc_workload *w, const struct ustack *st,
		   struct libc_tally *t, bool verbose);

/*
 * Fault injection: make /proc/thread-self/fail-nth fail sleeping
 * allocations of any order too, quietly (0 or -errno: no debugfs knobs).
 */
int fault_injection_setup(void);
/* Open this thread's fail-nth (0 or -errno); close it (disarmed). */
int fail_nth_open(void);
void fail_nth_close(void);
/* The @n-th injection point of this thread from now fails (0: disarm). */
int fail_nth(unsigned int n);
/* After the call: did the failure happen? Disarms it. */
bool fail_nth_hit(void);
/*
 * Root's fault_injection_setup() and fail_nth_open(): NULL, or why the
 * tests of allocation failures cannot run (what they skip with).
 */
const char *fail_nth_missing(void);

/* prctl(PR_UNWIND_USER, UNWIND_USER_QUERY): 0 or -errno. */
static inline long unwind_query(struct unwind_user_info *info)
{
	return unwind_prctl(UNWIND_USER_QUERY, (unsigned long)info,
			    sizeof(*info), 0);
}

#endif
