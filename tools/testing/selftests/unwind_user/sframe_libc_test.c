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
 * say; without the module the tests are skipped. The children are given a
 * copy of the cache made by this test under $TMPDIR or /tmp: the module
 * uses only files and a directory owned by root or by the process's user
 * and writable by no one else, whoever built and copied the original, and
 * the untrusted tests change the modes and owners of their own copy.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
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

/* The workloads, and their program frames (see libc_classify()). */
static const struct workload {
	const char *name;
	void (*fn)(unsigned long seed);
	struct libc_workload expect;
} workloads[] = {
	{ "qsort", sort_work, { {
		{ "cmp_cb", false, true }, { "sort_work", true },
		{ "run_work", true }, { "sample_stacks", true },
		{ "child_main" }, { "main" } }, 6, 3 } },
	{ "memcpy", copy_work, { {
		{ "copy_work", true }, { "run_work", true },
		{ "sample_stacks", true }, { "child_main" }, { "main" } }, 5, 3 } },
	{ "snprintf", fmt_work, { {
		{ "fmt_work", true }, { "run_work", true },
		{ "sample_stacks", true }, { "child_main" }, { "main" } }, 5, 3 } },
};

/* What a child found, passed back through a pipe. */
struct result {
	unsigned int stacks;
	unsigned int lost;
	struct libc_tally t;		/* the workload's stacks */
	struct unwind_user_info before, after;
	/* dlopen child: sections and cache mappings with libm and after */
	unsigned int dl_sections_open, dl_sections_closed;
	unsigned int dl_maps_open, dl_maps_closed;
	unsigned int libc_text_maps;	/* executable mappings of libc */
	/* query and module children: mappings of cache files, AT_SECURE */
	unsigned int cache_maps;
	unsigned int secure;
};

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

	if (sym_init() || libc_init())
		return 2;
	if (!strcmp(name, "query")) {
		/* What the module registered and mapped, nothing more. */
		const char *cache = getenv("UNWIND_USER_SFRAME_CACHE");

		if (unwind_query(&r.after))
			return 3;
		r.cache_maps = cache ? maps_of(cache, NULL) : 0;
		return write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 4;
	}
	if (!strcmp(name, "module")) {
		/*
		 * The module's hooks called by this program on libc, as ld.so
		 * would call them: what it registers, from which cache, what
		 * it reports, with AT_SECURE or without.
		 */
		const char *cache = getenv("UNWIND_USER_SFRAME_CACHE");
		void *m = dlopen(getenv("UNWIND_USER_AUDIT"), RTLD_NOW);
		void *c = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
		unsigned int (*version)(unsigned int);
		unsigned int (*objopen)(struct link_map *, Lmid_t, uintptr_t *);
		unsigned int (*objclose)(uintptr_t *);
		struct link_map *lm;
		uintptr_t cookie;

		if (!m || !c || dlinfo(c, RTLD_DI_LINKMAP, &lm))
			return 3;
		version = dlsym(m, "la_version");
		objopen = dlsym(m, "la_objopen");
		objclose = dlsym(m, "la_objclose");
		if (!version || !objopen || !objclose)
			return 3;
		r.secure = getauxval(AT_SECURE);
		version(LAV_CURRENT);
		objopen(lm, LM_ID_BASE, &cookie);
		if (unwind_query(&r.after))
			return 3;
		r.cache_maps = cache ? maps_of(cache, NULL) : 0;
		objclose(&cookie);
		return write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 4;
	}
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
		libc_classify(&w->expect, &stacks.s[i], &r.t, true);
	fflush(stdout);
	return write(fd, &r, sizeof(r)) == sizeof(r) ? 0 : 4;
}

/* The parent's side. */

static char audit_so[PATH_MAX], cache_src[PATH_MAX], here[PATH_MAX / 2];
/* The copy of the cache the children use, and an empty one, in tmp_dir. */
static char tmp_dir[PATH_MAX / 4], cache_dir[PATH_MAX / 2];
static char empty_dir[PATH_MAX / 2];
static pid_t main_pid;

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
	snprintf(cache_src, sizeof(cache_src), "%s/sframe-cache", here);
	if (a && *a)
		snprintf(audit_so, sizeof(audit_so), "%s", a);
	if (c && *c)
		snprintf(cache_src, sizeof(cache_src), "%s", c);
	return !access(audit_so, R_OK);
}

/* A new directory (0700) under $TMPDIR or /tmp, in @dir: 0 or -1. */
static int make_tmp_dir(char *dir, size_t size)
{
	const char *t = getenv("TMPDIR");

	snprintf(dir, size, "%s/sframe_libc_test.XXXXXX", t && *t ? t : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

/*
 * Copy @from_dir's file @name to a new file of @to_dir with mode @mode,
 * whatever the umask: 0 or -1.
 */
static int copy_file(int from_dir, int to_dir, const char *name, mode_t mode)
{
	int in = openat(from_dir, name, O_RDONLY | O_CLOEXEC);
	int out = openat(to_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			 0600);
	char buf[65536];
	ssize_t n = -1;

	if (in >= 0 && out >= 0)
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, n) != n) {
				n = -1;
				break;
			}
	if (!n && fchmod(out, mode))
		n = -1;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return n ? -1 : 0;
}

/*
 * Make @to (0755) with a copy of every *.sframe file of @from (0644),
 * owned by this process's user: 0 or -1.
 */
static int copy_cache(const char *from, const char *to)
{
	int from_fd, to_fd, ret = 0;
	struct dirent *de;
	DIR *d;

	if (mkdir(to, 0755) || chmod(to, 0755))
		return -1;
	d = opendir(from);
	to_fd = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!d || to_fd < 0) {
		if (d)
			closedir(d);
		if (to_fd >= 0)
			close(to_fd);
		return -1;
	}
	from_fd = dirfd(d);
	while (!ret && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 7 && !strcmp(de->d_name + n - 7, ".sframe"))
			ret = copy_file(from_fd, to_fd, de->d_name, 0644);
	}
	closedir(d);
	close(to_fd);
	return ret;
}

/* Remove @dir, its files and its directories' files. */
static void remove_tree(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			remove_tree(path);
		else
			unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* At the end of the test program, not of its forked tests. */
static void remove_tmp_dir(void)
{
	if (getpid() == main_pid && *tmp_dir)
		remove_tree(tmp_dir);
}

/*
 * The cache the children use: a copy in a new directory, with an empty
 * directory next to it: 0, or -1 (the tests that need it fail).
 */
static int setup_cache(void)
{
	main_pid = getpid();
	if (make_tmp_dir(tmp_dir, sizeof(tmp_dir))) {
		*tmp_dir = 0;
		return -1;
	}
	atexit(remove_tmp_dir);
	snprintf(cache_dir, sizeof(cache_dir), "%s/cache", tmp_dir);
	snprintf(empty_dir, sizeof(empty_dir), "%s/empty", tmp_dir);
	if (mkdir(empty_dir, 0755) || chmod(empty_dir, 0755))
		*empty_dir = 0;
	if (copy_cache(cache_src, cache_dir))
		*cache_dir = 0;
	return *empty_dir && *cache_dir ? 0 : -1;
}

/* libc's GNU build ID in hex, from its notes in memory. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *n = strrchr(info->dlpi_name, '/');
	char *hex = arg;
	int i;

	if (!n || strcmp(n, "/libc.so.6"))
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		const char *note = (const char *)(info->dlpi_addr + p->p_vaddr);
		const char *end = note + p->p_memsz;

		while (p->p_type == PT_NOTE && note + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)note;
			const char *name = note + sizeof(*nh);
			const uint8_t *desc = (const uint8_t *)name +
					      ((nh->n_namesz + 3) & ~3);
			unsigned int k;

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz <= 64) {
				for (k = 0; k < nh->n_descsz; k++)
					sprintf(hex + 2 * k, "%02x", desc[k]);
				return 1;
			}
			note = (const char *)desc + ((nh->n_descsz + 3) & ~3);
		}
	}
	return 0;
}

enum mode { NO_AUDIT, AUDIT, AUDIT_EMPTY_CACHE, MODULE_BY_HAND };

static const char *const mode_name[] = {
	"without the audit module", "with the audit module",
	"with the audit module and an empty cache",
	"with the audit module's hooks called by the program",
};

/* How else to run a child. */
struct child_opts {
	const char *cache;	/* the module's cache, not the copy */
	const char *exe;	/* the program, not this one */
	uid_t uid;		/* the real and effective uid and gid, not 0 */
};

/*
 * Run workload @name in a child exec'ed in @mode (AUDIT, MODULE_BY_HAND:
 * with the copy of the cache, unless @o says), with what @o says if not
 * NULL; its result in @r, what it wrote on stderr (the module's reports)
 * in @err. 0 or -1.
 */
static int run_child_opts(const char *name, enum mode mode,
			  const struct child_opts *o, struct result *r,
			  char *err, size_t err_len)
{
	const char *cache = o && o->cache ? o->cache : cache_dir;
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
		/*
		 * Symbols bound before main: a sample in lazy binding (an
		 * IFUNC resolver in libc called from ld.so's _dl_fixup) is
		 * neither the workload's nor libc's stack.
		 */
		setenv("LD_BIND_NOW", "1", 1);
		if (mode != NO_AUDIT) {
			if (mode == MODULE_BY_HAND)
				setenv("UNWIND_USER_AUDIT", audit_so, 1);
			else
				setenv("LD_AUDIT", audit_so, 1);
			setenv("UNWIND_USER_SFRAME_CACHE",
			       mode == AUDIT_EMPTY_CACHE ? empty_dir : cache, 1);
			setenv("UNWIND_USER_AUDIT_DEBUG", "1", 1);
		}
		if (o && o->uid && (setgroups(0, NULL) || setgid(o->uid) ||
				    setuid(o->uid)))
			_exit(126);
		execl(o && o->exe ? o->exe : "/proc/self/exe",
		      "sframe_libc_test", "--child", name, fdarg, NULL);
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

static int run_child(const char *name, enum mode mode, struct result *r,
		     char *err, size_t err_len)
{
	return run_child_opts(name, mode, NULL, r, err, err_len);
}

static void print_result(const char *name, enum mode mode, const struct result *r)
{
	printf("# %s, %s: %u stacks (%u lost), %u in the workload (%u leaf in libc, %u in a PLT stub, %u through libc); %u reach main (%.1f%%), %u cut at a libc PLT stub, %u end in libc, %u wrong\n",
	       name, mode_name[mode], r->stacks, r->lost, r->t.in_work,
	       r->t.libc_leaf, r->t.plt_leaf, r->t.through_libc, r->t.complete,
	       r->t.in_work ? 100.0 * r->t.complete / r->t.in_work : 0.0,
	       r->t.plt_cut, r->t.ends_in_libc, r->t.wrong);
	printf("#   libc return addresses %u (%u not after a call), up to %u libc frames in a row; sections %llu, sframe_frames +%llu, fp_fallbacks +%llu, errors +%llu, dropped %llu\n",
	       r->t.libc_ras, r->t.implausible, r->t.max_libc_run,
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
	ASSERT_NE(0, *cache_dir) TH_LOG("no copy of %s", cache_src);
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
	ASSERT_GE(r->t.in_work, 20);
	EXPECT_GT(r->t.through_libc * 2, r->t.in_work);
	/* Complete, with a leaf in one of libc's PLT stubs too. */
	EXPECT_EQ(r->t.in_work, r->t.complete);
	EXPECT_EQ(0, r->t.plt_cut);
	if (variant->nested)
		EXPECT_GT(r->t.libc_ras, 0);
	EXPECT_EQ(0, r->t.implausible);
	EXPECT_GE(r->after.sframe_frames - r->before.sframe_frames,
		  (unsigned long long)r->t.complete);
	EXPECT_EQ(r->before.errors, r->after.errors);
	EXPECT_EQ(0, r->after.dropped);
}

/*
 * Without it, the same workload: the stacks stop in libc. Not all of them:
 * qsort_r() keeps a frame pointer (for its alloca), so the frame-pointer
 * rule, from a leaf that leaves %rbp alone (memcpy in the outer merge),
 * lands on its caller and goes on to main, skipping the libc frames
 * between, for some of qsort's stacks.
 */
TEST_F(libc, without_audit)
{
	struct result *r = &self->r;

	ASSERT_EQ(0, run_child(variant->name, NO_AUDIT, r, self->err,
			       sizeof(self->err)));
	print_result(variant->name, NO_AUDIT, r);
	EXPECT_EQ(1, r->after.nr_sections);
	ASSERT_GE(r->t.in_work, 20);
	EXPECT_LT(r->t.complete * 2, r->t.in_work);
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
	ASSERT_NE(0, *empty_dir);
	ASSERT_EQ(0, run_child("qsort", AUDIT_EMPTY_CACHE, &r, err, sizeof(err)));
	print_result("qsort", AUDIT_EMPTY_CACHE, &r);
	EXPECT_EQ(1, r.after.nr_sections);
	ASSERT_GE(r.t.in_work, 20);
	EXPECT_LT(r.t.complete * 2, r.t.in_work);
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
	ASSERT_NE(0, *cache_dir) TH_LOG("no copy of %s", cache_src);
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

/*
 * A cache the module must not use: libc's file, or the directory, made
 * writable by others or given to another user. The module leaves libc
 * unregistered (and the directory's ld.so too), maps nothing it refused
 * and says why; with the mode and owner restored, it registers both again.
 */
FIXTURE(untrusted) {
	char tmp[PATH_MAX / 4];
	char cache[PATH_MAX / 2];
	char path[PATH_MAX];	/* what the variant changes */
	struct stat st;		/* its mode and owner before */
	bool changed;
};

FIXTURE_VARIANT(untrusted) {
	bool dir;		/* the directory, else libc's file */
	mode_t mode;		/* the new mode, or 0 */
	uid_t uid;		/* the new owner, or 0 */
};

FIXTURE_VARIANT_ADD(untrusted, file_group_writable) { .mode = 0664 };
FIXTURE_VARIANT_ADD(untrusted, file_world_writable) { .mode = 0646 };
FIXTURE_VARIANT_ADD(untrusted, file_other_owner) { .uid = 12345 };
FIXTURE_VARIANT_ADD(untrusted, dir_group_writable) { .dir = true, .mode = 0775 };
FIXTURE_VARIANT_ADD(untrusted, dir_sticky_world_writable) {
	.dir = true, .mode = 01777 };
FIXTURE_VARIANT_ADD(untrusted, dir_other_owner) { .dir = true, .uid = 12345 };

static void restore(struct __test_metadata *_metadata,
		    FIXTURE_DATA(untrusted) *self)
{
	if (!self->changed)
		return;
	EXPECT_EQ(0, chown(self->path, self->st.st_uid, -1));
	EXPECT_EQ(0, chmod(self->path, self->st.st_mode & 07777));
	self->changed = false;
}

/* The copy is made in the test: teardown removes what a failure leaves. */
FIXTURE_SETUP(untrusted)
{
	if (!find_audit())
		SKIP(return, "no %.200s", audit_so);
	ASSERT_EQ(0, make_tmp_dir(self->tmp, sizeof(self->tmp)));
}

FIXTURE_TEARDOWN(untrusted)
{
	restore(_metadata, self);
	if (*self->tmp)
		remove_tree(self->tmp);
}

TEST_F(untrusted, not_registered)
{
	const char *what = variant->dir ? "directory" : "file";
	const struct child_opts o = { .cache = self->cache };
	char err[4096], expect[PATH_MAX + 128], id[2 * 64 + 1];
	struct result r;

	snprintf(self->cache, sizeof(self->cache), "%s/cache", self->tmp);
	ASSERT_EQ(0, copy_cache(cache_src, self->cache));
	ASSERT_EQ(1, dl_iterate_phdr(find_build_id, id));
	if (variant->dir)
		snprintf(self->path, sizeof(self->path), "%s", self->cache);
	else
		snprintf(self->path, sizeof(self->path), "%s/%s.sframe",
			 self->cache, id);
	ASSERT_EQ(0, stat(self->path, &self->st)) TH_LOG("%s", self->path);
	if (variant->uid && (geteuid() == variant->uid ||
			     chown(self->path, variant->uid, -1)))
		SKIP(return, "cannot give %.200s to uid %u", self->path,
		     variant->uid);
	self->changed = true;
	if (variant->mode)
		ASSERT_EQ(0, chmod(self->path, variant->mode));

	ASSERT_EQ(0, run_child_opts("query", AUDIT, &o, &r, err, sizeof(err)));
	printf("# untrusted cache %s: %llu sections, %u mappings of the cache\n",
	       what, (unsigned long long)r.after.nr_sections, r.cache_maps);
	/* The executable's own at exec; ld.so's unless the directory is refused. */
	EXPECT_EQ(variant->dir ? 1 : 2, r.after.nr_sections);
	EXPECT_EQ(variant->dir ? 0 : 1, r.cache_maps);
	snprintf(expect, sizeof(expect), "/libc.so.6: untrusted cache %s %s (",
		 what, self->path);
	EXPECT_NE(NULL, strstr(err, expect)) TH_LOG("expected \"%s\"", expect);
	/* ld.so's: refused with the directory, else registered silently. */
	EXPECT_EQ(variant->dir, !!strstr(err, "ld-linux-x86-64.so.2"));
	EXPECT_EQ(variant->dir,
		  !!strstr(err, "ld-linux-x86-64.so.2: untrusted cache directory "));

	/* Restored: both registered again, nothing to report. */
	restore(_metadata, self);
	ASSERT_EQ(0, run_child_opts("query", AUDIT, &o, &r, err, sizeof(err)));
	printf("# restored: %llu sections, %u mappings of the cache\n",
	       (unsigned long long)r.after.nr_sections, r.cache_maps);
	EXPECT_EQ(3, r.after.nr_sections);
	EXPECT_EQ(2, r.cache_maps);
	EXPECT_STREQ("", err);
}

/*
 * AT_SECURE: the module must ignore its environment. A setuid-root copy of
 * this program, run by another user, loads the module and calls its hooks
 * on libc (ld.so loads LD_AUDIT modules into such a process only from a
 * system directory, which the test leaves alone), with the copy of the
 * cache and the debug switch in its environment: the module must use
 * neither (no mapping of the copy, nothing on stderr; the default
 * directory, /var/cache/unwind_user, instead). Without AT_SECURE, the same
 * calls register libc from the copy.
 */
FIXTURE(secure) {
	char tmp[PATH_MAX / 4];
	char exe[PATH_MAX / 2];
};

FIXTURE_SETUP(secure)
{
	if (!find_audit())
		SKIP(return, "no %.200s", audit_so);
	if (geteuid())
		SKIP(return, "not root: no setuid-root copy of this program");
	ASSERT_NE(0, *cache_dir) TH_LOG("no copy of %s", cache_src);
	ASSERT_EQ(0, make_tmp_dir(self->tmp, sizeof(self->tmp)));
}

FIXTURE_TEARDOWN(secure)
{
	if (*self->tmp)
		remove_tree(self->tmp);
}

TEST_F(secure, environment_ignored)
{
	const struct child_opts o = { .exe = self->exe, .uid = 65534 };
	bool default_cache = !access("/var/cache/unwind_user", F_OK);
	struct result r;
	char err[4096];
	int from, to;

	/* Without AT_SECURE: libc from the copy of the cache, silently. */
	ASSERT_EQ(0, run_child_opts("module", MODULE_BY_HAND, NULL, &r, err,
				    sizeof(err)));
	printf("# AT_SECURE %u: %llu sections, %u mappings of the cache\n",
	       r.secure, (unsigned long long)r.after.nr_sections, r.cache_maps);
	EXPECT_EQ(0, r.secure);
	EXPECT_EQ(2, r.after.nr_sections);
	EXPECT_EQ(1, r.cache_maps);
	EXPECT_STREQ("", err);

	/* A setuid-root copy, in a directory the other user can search. */
	snprintf(self->exe, sizeof(self->exe), "%s/sframe_libc_test", self->tmp);
	ASSERT_EQ(0, chmod(self->tmp, 0755));
	from = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	to = open(self->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, from);
	ASSERT_LE(0, to);
	ASSERT_EQ(0, copy_file(from, to, "exe", 0755));
	ASSERT_EQ(0, renameat(to, "exe", to, "sframe_libc_test"));
	close(from);
	close(to);
	ASSERT_EQ(0, chmod(self->exe, 04755));

	ASSERT_EQ(0, run_child_opts("module", MODULE_BY_HAND, &o, &r, err,
				    sizeof(err)));
	printf("# AT_SECURE %u: %llu sections, %u mappings of the cache\n",
	       r.secure, (unsigned long long)r.after.nr_sections, r.cache_maps);
	if (!r.secure)
		SKIP(return, "no AT_SECURE for %.200s (a nosuid mount?)",
		     self->tmp);
	EXPECT_EQ(0, r.cache_maps);
	/* Not even ENOENT for the default directory: no report at all. */
	EXPECT_STREQ("", err);
	if (!default_cache)
		EXPECT_EQ(1, r.after.nr_sections);
}

int main(int argc, char **argv)
{
	/* A call, not a jump: main stays on the child's stacks. */
	if (argc == 4 && !strcmp(argv[1], "--child"))
		exit(child_main(argv[2], atoi(argv[3])));
	if (find_audit() && setup_cache())
		printf("# cannot copy %s to %s\n", cache_src, tmp_dir);
	return test_harness_run(argc, argv);
}
