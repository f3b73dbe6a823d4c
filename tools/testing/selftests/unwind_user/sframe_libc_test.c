// SPDX-License-Identifier: GPL-2.0
/*
 * Stacks through the distribution's own libc, which has neither SFrame nor
 * frame pointers, with and without the LD_AUDIT module of
 * tools/unwind_user/audit, which registers for libc.so.6 and ld.so the
 * sections sframe-synth (tools/unwind_user/sframe_synth) synthesized from
 * their .eh_frame.
 *
 * Three workloads, built like the other tests (-O2 -fomit-frame-pointer,
 * SFrame) but linked dynamically, whose hot code is in libc:
 *   qsort:    qsort() calling back cmp_cb(): the leaf in the program, libc
 *             frames between it and its caller sort_work();
 *   memcpy:   memcpy() and memmove() of 1 MiB: the leaf in libc;
 *   snprintf: snprintf() of integers, floats and strings: the leaf in libc.
 *
 * Each runs in a child that this test execs with LD_AUDIT (and the cache
 * directory) or without, sampled by perf's deferred callchains. A stack
 * counts if its leaf is in the workload: one of its functions or libc. It
 * is complete if its program frames are exactly the workload's callers, in
 * order, up to main, and the frames between them are in libc's text where
 * the program calls libc, each one a return address right after a call
 * instruction.
 *
 * With the module, every such stack must be complete and the kernel must
 * report no unwind error; without it (or with an empty cache) fewer than
 * half are: libc's frames are left to the frame-pointer rule. The module and the
 * cache are found next to this program (unwind_user_audit.so,
 * sframe-cache/), or where UNWIND_USER_AUDIT and UNWIND_USER_SFRAME_CACHE
 * say; without the module the tests are skipped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

#define NOIPA __attribute__((noipa))

static volatile unsigned long sink;
static struct stacks stacks;

/* The workloads. */

#define SORT_N	4096
#define COPY_N	(1 << 20)

static unsigned long sort_v[SORT_N];
static char *copy_a, *copy_b;
/* Not static: the compiler cannot know the size and inline the copy. */
size_t copy_n = COPY_N;
static char fmt_buf[256];

NOIPA int cmp_cb(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

NOIPA void sort_work(unsigned long seed)
{
	unsigned long i, x = seed;

	for (i = 0; i < SORT_N; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		sort_v[i] = x >> 20;
	}
	qsort(sort_v, SORT_N, sizeof(sort_v[0]), cmp_cb);
	sink += sort_v[SORT_N / 2];
}

NOIPA void copy_work(unsigned long seed)
{
	copy_a[seed % COPY_N] = seed;
	memcpy(copy_b, copy_a, copy_n);
	memmove(copy_a + 1, copy_a, copy_n - 1);
	sink += copy_b[seed % COPY_N];
}

NOIPA void fmt_work(unsigned long seed)
{
	int n = snprintf(fmt_buf, sizeof(fmt_buf), "%lu %f %s %#lx %e %-12s|%g",
			 seed, seed / 3.0, "libc", seed * 7, seed * 1e-3,
			 "snprintf", seed * 0.25);

	sink += n + fmt_buf[n / 2];
}

struct run {
	void (*fn)(unsigned long seed);
	double seconds;
};

/* Calls clock_gettime() itself: now_seconds() would be a frame more. */
NOIPA void run_work(void *arg)
{
	struct run *r = arg;
	unsigned long seed = 1;
	struct timespec ts;
	double end;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + r->seconds;
	do {
		for (i = 0; i < 4; i++)
			r->fn(seed++);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

/*
 * The program frames a stack must name, innermost first: whether a
 * function calls libc (so that libc frames may come before it), and
 * whether libc calls it back (so that libc frames must come after it).
 */
struct frame {
	const char *name;
	bool calls_libc;
	bool called_by_libc;
};

#define WORK_MAX 8

static const struct workload {
	const char *name;
	void (*fn)(unsigned long seed);
	struct frame chain[WORK_MAX];
	int n;
} workloads[] = {
	{ "qsort", sort_work, {
		{ "cmp_cb", false, true }, { "sort_work", true },
		{ "run_work", true }, { "sample_stacks", true },
		{ "child_main" }, { "main" } }, 6 },
	{ "memcpy", copy_work, {
		{ "copy_work", true }, { "run_work", true },
		{ "sample_stacks", true }, { "child_main" }, { "main" } }, 5 },
	{ "snprintf", fmt_work, {
		{ "fmt_work", true }, { "run_work", true },
		{ "sample_stacks", true }, { "child_main" }, { "main" } }, 5 },
};

/* What a child found, passed back through a pipe. */
struct result {
	unsigned int stacks;
	unsigned int lost;
	unsigned int in_work;		/* leaf in the workload or in libc */
	unsigned int libc_leaf;		/* of those, leaf in libc */
	unsigned int plt_leaf;		/* of those, leaf in a PLT stub */
	unsigned int through_libc;	/* of those, with a libc frame */
	unsigned int complete;		/* program frames right up to main */
	unsigned int ends_in_libc;	/* the others: last frame in libc */
	unsigned int wrong;		/* the others: a wrong frame */
	unsigned int plt_cut;		/* the others: cut at a libc PLT stub */
	unsigned int libc_ras;		/* libc return addresses in complete ones */
	unsigned int implausible;	/* of those, not right after a call */
	unsigned int max_libc_run;	/* most libc frames in a row */
	struct unwind_user_info before, after;
	/* dlopen child: sections and cache mappings with libm and after */
	unsigned int dl_sections_open, dl_sections_closed;
	unsigned int dl_maps_open, dl_maps_closed;
	unsigned int libc_text_maps;	/* executable mappings of libc */
};

/* libc's executable PT_LOAD, and its load bias. */
static uint64_t libc_start, libc_end, libc_base;

/*
 * PLT stubs (.plt, .plt.got, .plt.sec) of the program and of libc. ld
 * gives the program's SFrame entries for its .plt; sframe-synth gives
 * libc's, from the CFA expression of their .eh_frame FDE (a PC-mask FDE,
 * as ld writes), so a stack whose leaf is in one of libc's goes on too.
 */
static struct {
	uint64_t start, end;
} plts[8];
static unsigned int nr_plts;

static void add_plts(const char *path, uint64_t bias)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	const Elf64_Shdr *sh;
	const Elf64_Ehdr *eh;
	const char *names;
	struct stat st;
	char *map;
	int i;

	if (fd < 0 || fstat(fd, &st))
		goto out;
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	eh = (const Elf64_Ehdr *)map;
	sh = (const Elf64_Shdr *)(map + eh->e_shoff);
	names = map + sh[eh->e_shstrndx].sh_offset;
	for (i = 0; i < eh->e_shnum && nr_plts < ARRAY_SIZE(plts); i++) {
		if (!(sh[i].sh_flags & SHF_EXECINSTR) ||
		    strncmp(names + sh[i].sh_name, ".plt", 4))
			continue;
		plts[nr_plts].start = bias + sh[i].sh_addr;
		plts[nr_plts].end = bias + sh[i].sh_addr + sh[i].sh_size;
		nr_plts++;
	}
	munmap(map, st.st_size);
out:
	if (fd >= 0)
		close(fd);
}

static bool in_plt(uint64_t ip)
{
	unsigned int i;

	for (i = 0; i < nr_plts; i++)
		if (ip >= plts[i].start && ip < plts[i].end)
			return true;
	return false;
}

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *n = strrchr(info->dlpi_name, '/');
	int i;

	/* The program comes first, without a name. */
	if (!*info->dlpi_name && !nr_plts)
		add_plts("/proc/self/exe", info->dlpi_addr);
	if (!n || strcmp(n, "/libc.so.6"))
		return 0;
	add_plts(info->dlpi_name, info->dlpi_addr);
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			libc_base = info->dlpi_addr;
			libc_start = info->dlpi_addr + p->p_vaddr;
			libc_end = libc_start + p->p_memsz;
			return 1;
		}
	}
	return 0;
}

static bool in_libc(uint64_t ip)
{
	return ip >= libc_start && ip < libc_end;
}

/* Length of ModRM (+ SIB, displacement) of ff /2, call indirect; else 0. */
static int call_modrm_len(const uint8_t *m)
{
	int mod = m[0] >> 6, reg = (m[0] >> 3) & 7, rm = m[0] & 7, n = 1;

	if (reg != 2)
		return 0;
	if (mod == 3)
		return n;
	if (rm == 4) {
		n++;
		if (mod == 0 && (m[1] & 7) == 5)
			n += 4;
	} else if (mod == 0 && rm == 5) {
		n += 4;
	}
	return n + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

/* Is @ra in libc's text, right after a call (e8 rel32, or ff /2)? */
static bool after_call(uint64_t ra)
{
	const uint8_t *p = (const uint8_t *)(uintptr_t)ra;
	int len;

	if (!in_libc(ra) || ra - 7 < libc_start)
		return false;
	if (p[-5] == 0xe8)
		return true;
	for (len = 2; len <= 7; len++)
		if (p[-len] == 0xff && call_modrm_len(p - len + 1) == len - 1)
			return true;
	return false;
}

/* Print @st: the program's symbols, libc's offsets, other addresses. */
static void print_stack(const char *prefix, const struct ustack *st)
{
	unsigned int i;

	printf("# %s (%u frames):", prefix, st->nr);
	for (i = 0; i < st->nr && i < 24; i++) {
		const char *s = sym_name(st->ip[i]);

		if (in_libc(st->ip[i]))
			printf(" libc+%#llx",
			       (unsigned long long)(st->ip[i] - libc_base));
		else if (s)
			printf(" %s", s);
		else
			printf(" %#llx", (unsigned long long)st->ip[i]);
	}
	printf("%s\n", st->nr > i ? " ..." : "");
}

static int chain_index(const struct workload *w, uint64_t ip)
{
	const char *s = sym_name(ip);
	int k;

	for (k = 0; s && k < w->n; k++)
		if (!strcmp(s, w->chain[k].name))
			return k;
	return -1;
}

static void classify(const struct workload *w, const struct ustack *st,
		     struct result *r)
{
	unsigned int i = 0, run, ras = 0, bad = 0, lead;
	bool plt = st->nr && in_plt(st->ip[0]);
	int k;

	/* Leading frames on the way into libc: a PLT stub, libc's code. */
	if (plt && !in_libc(st->ip[0]))
		i = 1;
	while (i < st->nr && in_libc(st->ip[i]))
		i++;
	lead = i;
	k = i < st->nr ? chain_index(w, st->ip[i]) : -1;
	/*
	 * Or the leaf is one of the workload's functions: not one of their
	 * callers (the last three: sample_stacks, child_main, main).
	 */
	if (!lead && (k < 0 || k >= w->n - 3))
		return;
	r->in_work++;
	r->plt_leaf += plt;
	if (st->nr && in_libc(st->ip[0]))
		r->libc_leaf++;
	if (lead > (plt && !in_libc(st->ip[0])))
		r->through_libc++;
	if (lead && (k < 0 || !w->chain[k].calls_libc))
		goto wrong;
	for (run = 1; run < lead; run++, ras++)
		bad += !after_call(st->ip[run]);
	if (lead > r->max_libc_run)
		r->max_libc_run = lead;
	while (strcmp(w->chain[k].name, "main")) {
		i++;
		if (w->chain[k].called_by_libc) {
			run = 0;
			while (i < st->nr && in_libc(st->ip[i])) {
				bad += !after_call(st->ip[i]);
				ras++;
				run++;
				i++;
			}
			if (run && !lead)
				r->through_libc++;
			if (run > r->max_libc_run)
				r->max_libc_run = run;
			if (!run)
				goto wrong;
		}
		if (i >= st->nr)
			goto wrong;
		if (chain_index(w, st->ip[i]) != ++k)
			goto wrong;
	}
	r->complete++;
	r->libc_ras += ras;
	r->implausible += bad;
	if (bad && r->implausible - bad < 3)
		print_stack("libc frame not after a call", st);
	return;
wrong:
	if (plt && st->nr == 1 && in_libc(st->ip[0])) {
		r->plt_cut++;
	} else if (st->nr && in_libc(st->ip[st->nr - 1])) {
		if (++r->ends_in_libc <= 3)
			print_stack("ends in libc", st);
	} else {
		if (++r->wrong <= 3)
			print_stack("wrong stack", st);
	}
}

/*
 * Mappings of files whose path contains @name, from /proc/self/maps; only
 * those with permissions @perms if not NULL.
 */
static unsigned int maps_of(const char *name, const char *perms)
{
	char line[PATH_MAX + 128];
	unsigned int n = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name) && (!perms || strstr(line, perms)))
			n++;
	fclose(f);
	return n;
}

/* The child, exec'ed with or without LD_AUDIT: main -> child_main. */
NOIPA int child_main(const char *name, int fd)
{
	struct result r = {};
	const struct workload *w = NULL;
	struct run run = { .seconds = 1.0 };
	struct unwind_user_info info;
	unsigned int i;

	if (sym_init() || !dl_iterate_phdr(find_libc, NULL))
		return 2;
	if (!strcmp(name, "dlopen")) {
		/* libm, not linked: its synthesized section comes and goes. */
		const char *cache = getenv("UNWIND_USER_SFRAME_CACHE");
		void *h = dlopen("libm.so.6", RTLD_NOW);

		if (!h || unwind_query(&info))
			return 3;
		r.dl_sections_open = info.nr_sections;
		r.dl_maps_open = cache ? maps_of(cache, NULL) : 0;
		if (dlclose(h) || unwind_query(&info))
			return 3;
		r.dl_sections_closed = info.nr_sections;
		r.dl_maps_closed = cache ? maps_of(cache, NULL) : 0;
		r.libc_text_maps = maps_of("/libc.so.6", " r-xp ");
		return write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 4;
	}
	for (i = 0; i < ARRAY_SIZE(workloads); i++)
		if (!strcmp(name, workloads[i].name))
			w = &workloads[i];
	if (!w)
		return 2;
	run.fn = w->fn;
	copy_a = calloc(1, COPY_N);
	copy_b = calloc(1, COPY_N);
	if (!copy_a || !copy_b || unwind_query(&r.before))
		return 3;
	if (sample_stacks(run_work, &run, 4000, &stacks))
		return 3;
	if (unwind_query(&r.after))
		return 3;
	r.stacks = stacks.nr;
	r.lost = stacks.lost;
	for (i = 0; i < stacks.nr; i++)
		classify(w, &stacks.s[i], &r);
	fflush(stdout);
	return write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 4;
}

/* The parent's side. */

static char audit_so[PATH_MAX], cache_dir[PATH_MAX], here[PATH_MAX / 2];

/* The module and the cache: next to this program unless the env says. */
static bool find_audit(void)
{
	const char *a = getenv("UNWIND_USER_AUDIT");
	const char *c = getenv("UNWIND_USER_SFRAME_CACHE");
	ssize_t n = readlink("/proc/self/exe", here, sizeof(here) - 1);

	if (n <= 0)
		return false;
	here[n] = 0;
	dirname(here);
	snprintf(audit_so, sizeof(audit_so), "%s/unwind_user_audit.so", here);
	snprintf(cache_dir, sizeof(cache_dir), "%s/sframe-cache", here);
	if (a && *a)
		snprintf(audit_so, sizeof(audit_so), "%s", a);
	if (c && *c)
		snprintf(cache_dir, sizeof(cache_dir), "%s", c);
	return !access(audit_so, R_OK);
}

enum mode { NO_AUDIT, AUDIT, AUDIT_EMPTY_CACHE };

static const char *const mode_name[] = {
	"without the audit module", "with the audit module",
	"with the audit module and an empty cache",
};

/*
 * Run workload @name in a child exec'ed in @mode; its result in @r, what
 * it wrote on stderr (the module's reports) in @err. 0 or -1.
 */
static int run_child(const char *name, enum mode mode, struct result *r,
		     char *err, size_t err_len)
{
	int res[2], errp[2], status;
	const char *line, *end;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(res) || pipe(errp))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		char fdarg[16];

		close(res[0]);
		close(errp[0]);
		dup2(errp[1], STDERR_FILENO);
		snprintf(fdarg, sizeof(fdarg), "%d", res[1]);
		/*
		 * Only the objects the test knows of: run_kselftest.sh runs
		 * tests under stdbuf, whose LD_PRELOAD would load one more.
		 */
		unsetenv("LD_AUDIT");
		unsetenv("LD_PRELOAD");
		if (mode != NO_AUDIT) {
			setenv("LD_AUDIT", audit_so, 1);
			setenv("UNWIND_USER_SFRAME_CACHE",
			       mode == AUDIT ? cache_dir : here, 1);
			setenv("UNWIND_USER_AUDIT_DEBUG", "1", 1);
		}
		execl("/proc/self/exe", "sframe_libc_test", "--child", name,
		      fdarg, NULL);
		_exit(127);
	}
	close(res[1]);
	close(errp[1]);
	/* stderr to its end (the child's exit), then the result. */
	while (got + 1 < err_len &&
	       (n = read(errp[0], err + got, err_len - 1 - got)) > 0)
		got += n;
	err[got] = 0;
	n = read(res[0], r, sizeof(*r));
	close(res[0]);
	close(errp[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("# child %s %s: status %#x\n", name, mode_name[mode], status);
		return -1;
	}
	for (line = err; *line; line = end + !!*end) {
		end = strchrnul(line, '\n');
		printf("# child's stderr: %.*s\n", (int)(end - line), line);
	}
	return n == sizeof(*r) ? 0 : -1;
}

static void print_result(const char *name, enum mode mode, const struct result *r)
{
	printf("# %s, %s: %u stacks (%u lost), %u in the workload (%u leaf in libc, %u in a PLT stub, %u through libc); %u reach main (%.1f%%), %u cut at a libc PLT stub, %u end in libc, %u wrong\n",
	       name, mode_name[mode], r->stacks, r->lost, r->in_work,
	       r->libc_leaf, r->plt_leaf, r->through_libc, r->complete,
	       r->in_work ? 100.0 * r->complete / r->in_work : 0.0,
	       r->plt_cut, r->ends_in_libc, r->wrong);
	printf("#   libc return addresses %u (%u not after a call), up to %u libc frames in a row; sections %llu, sframe_frames +%llu, fp_fallbacks +%llu, errors +%llu, dropped %llu\n",
	       r->libc_ras, r->implausible, r->max_libc_run,
	       (unsigned long long)r->after.nr_sections,
	       (unsigned long long)(r->after.sframe_frames - r->before.sframe_frames),
	       (unsigned long long)(r->after.fp_fallbacks - r->before.fp_fallbacks),
	       (unsigned long long)(r->after.errors - r->before.errors),
	       (unsigned long long)r->after.dropped);
}

FIXTURE(libc) {
	struct result r;
	char err[4096];
};

FIXTURE_VARIANT(libc) {
	const char *name;
	bool nested;		/* libc frames that are return addresses */
};

FIXTURE_VARIANT_ADD(libc, qsort) { .name = "qsort", .nested = true };
FIXTURE_VARIANT_ADD(libc, memcpy) { .name = "memcpy" };
FIXTURE_VARIANT_ADD(libc, snprintf) { .name = "snprintf", .nested = true };

FIXTURE_SETUP(libc)
{
	ASSERT_EQ(0, sym_init());
	if (!find_audit())
		SKIP(return, "no %.200s (make check builds it: tools/unwind_user/audit)",
		     audit_so);
}

FIXTURE_TEARDOWN(libc)
{
}

/*
 * With the module: libc and ld.so registered from the cache, every stack
 * complete, every libc frame after a call, no unwind error.
 */
TEST_F(libc, with_audit)
{
	struct result *r = &self->r;

	ASSERT_EQ(0, run_child(variant->name, AUDIT, r, self->err,
			       sizeof(self->err)));
	print_result(variant->name, AUDIT, r);
	/* The executable (at exec), ld.so and libc (by the module). */
	EXPECT_EQ(3, r->after.nr_sections);
	/* Nothing failed that the module would report. */
	EXPECT_STREQ("", self->err);
	ASSERT_GE(r->in_work, 20);
	EXPECT_GT(r->through_libc * 2, r->in_work);
	/* Complete, with a leaf in one of libc's PLT stubs too. */
	EXPECT_EQ(r->in_work, r->complete);
	EXPECT_EQ(0, r->plt_cut);
	if (variant->nested)
		EXPECT_GT(r->libc_ras, 0);
	EXPECT_EQ(0, r->implausible);
	EXPECT_GE(r->after.sframe_frames - r->before.sframe_frames,
		  (unsigned long long)r->complete);
	EXPECT_EQ(r->before.errors, r->after.errors);
	EXPECT_EQ(0, r->after.dropped);
}

/*
 * Without it, the same workload: the stacks stop in libc. Not all of them:
 * qsort_r() keeps a frame pointer (for its alloca), so the frame-pointer
 * rule, from a leaf that leaves %rbp alone (memcpy in the outer merge),
 * lands on its caller and goes on to main, skipping the libc frames
 * between (4 to 21% of qsort's stacks in our runs).
 */
TEST_F(libc, without_audit)
{
	struct result *r = &self->r;

	ASSERT_EQ(0, run_child(variant->name, NO_AUDIT, r, self->err,
			       sizeof(self->err)));
	print_result(variant->name, NO_AUDIT, r);
	EXPECT_EQ(1, r->after.nr_sections);
	ASSERT_GE(r->in_work, 20);
	EXPECT_LT(r->complete * 2, r->in_work);
	EXPECT_GT(r->after.fp_fallbacks - r->before.fp_fallbacks, 0);
}

/*
 * The module with nothing in its cache: the program runs unchanged, its
 * stacks stop in libc as without the module, and the module says why.
 */
TEST(empty_cache)
{
	struct result r;
	char err[4096];

	ASSERT_EQ(0, sym_init());
	if (!find_audit())
		SKIP(return, "no %.200s", audit_so);
	ASSERT_EQ(0, run_child("qsort", AUDIT_EMPTY_CACHE, &r, err, sizeof(err)));
	print_result("qsort", AUDIT_EMPTY_CACHE, &r);
	EXPECT_EQ(1, r.after.nr_sections);
	ASSERT_GE(r.in_work, 20);
	EXPECT_LT(r.complete * 2, r.in_work);
	EXPECT_NE(NULL, strstr(err, "libc.so.6: no synthesized section in the cache"));
	EXPECT_NE(NULL, strstr(err, "ld-linux-x86-64.so.2: no synthesized section"));
}

/*
 * dlopen() of a library without SFrame (libm, in the cache too): the
 * module registers its synthesized section; dlclose() unregisters it and
 * unmaps the cache file. libc is mapped once: the module needs none.
 */
TEST(dlopen_dlclose)
{
	struct result r;
	char err[4096];

	ASSERT_EQ(0, sym_init());
	if (!find_audit())
		SKIP(return, "no %.200s", audit_so);
	ASSERT_EQ(0, run_child("dlopen", AUDIT, &r, err, sizeof(err)));
	printf("# libm: %u sections and %u mappings of the cache after dlopen, %u and %u after dlclose; libc's text mapped %u times\n",
	       r.dl_sections_open, r.dl_maps_open, r.dl_sections_closed,
	       r.dl_maps_closed, r.libc_text_maps);
	EXPECT_STREQ("", err);
	EXPECT_EQ(4, r.dl_sections_open);
	EXPECT_EQ(3, r.dl_maps_open);
	EXPECT_EQ(3, r.dl_sections_closed);
	EXPECT_EQ(2, r.dl_maps_closed);
	/*
	 * The module brings no libc of its own into its audit namespace:
	 * loading and relocating a second one was most of its start-up cost.
	 */
	EXPECT_EQ(1, r.libc_text_maps);
}

int main(int argc, char **argv)
{
	/* A call, not a jump: main stays on the child's stacks. */
	if (argc == 4 && !strcmp(argv[1], "--child"))
		exit(child_main(argv[2], atoi(argv[3])));
	return test_harness_run(argc, argv);
}
