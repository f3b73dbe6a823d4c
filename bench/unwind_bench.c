// SPDX-License-Identifier: GPL-2.0
/*
 * Guest side of `make bench`: measures the SFrame and the frame-pointer user
 * unwinders through the kernel's debugfs trigger
 * (/sys/kernel/debug/unwind_user/bench, CONFIG_USERSPACE_UNWINDER_SFRAME_BENCH)
 * and the prctl registration interface. One driver, linked with a call
 * chain: chain_small.c (10 functions) for unwind_bench, a generated file of
 * 10 to 100k functions (gen_funcs.py) for the growth binaries.
 *
 * Every program is built with frame pointers AND SFrame
 * (-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wa,--gsframe), so
 * both unwinders can walk the same stack; the driver checks that they do.
 *
 * Commands (each prints "bench: KEY k=v ..." lines for bench/report.py):
 *   info                          this program's own section (FDEs, bytes)
 *   step DEPTH ITERS ROUNDS       warm: ROUNDS x ("sframe ITERS", "fp ITERS")
 *   uncovered DEPTH ITERS ROUNDS  the same with this program's section
 *                                 unregistered (SFrame's miss path)
 *   cold DEPTH REPS               cold: REPS x (re-register, "sframe 1") and
 *                                 REPS x (re-register, "fp 1"), interleaved
 *   cold_file DEPTH REPS          the same with this program's section
 *                                 attached to its file (rows in kernel
 *                                 memory) instead of registered
 *   reg NFDES REPS                prctl REGISTER time for a synthetic section
 *   mem NFDES K                   kernel memory of K registrations
 *   leak DEPTH ITERS              kernel memory around ITERS SFrame unwinds
 *   loop UNWINDER DEPTH ITERS     one measurement (to profile the kernel)
 *   exec PATH OTHER REPS          fork + execve time of PATH and of OTHER (the
 *                                 same without .sframe), interleaved
 *   first PATH REPS DEPTH         REPS fresh copies of PATH (new files), each
 *                                 exec'ed once to run "walk DEPTH"
 *   walk DEPTH                    nothing registered: the first unwind, which
 *                                 builds this file's table from its own
 *                                 PT_GNU_SFRAME, and the second
 *   nop                           exit at once (what exec runs)
 *
 * DEPTH is the number of chain frames below main(); the unwinders also see
 * the write() wrapper, the trigger, main() and libc's start frames.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <linux/prctl.h>
#include <linux/unwind_user.h>

#include "sframe_gen.h"
#include "bench.h"

#ifndef PR_UNWIND_USER
#define PR_UNWIND_USER 82
#endif
#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554
#endif

#define TRIGGER "/sys/kernel/debug/unwind_user/bench"
#define SHOWN 64

static int trig_fd = -1;
static char trig_cmd[64];
static size_t trig_len;
static long trig_ret;

struct result {
	char unwinder[16];
	unsigned long iterations, frames, ns;
	unsigned int nips;
	unsigned long ips[SHOWN];
};

static void die(const char *what)
{
	fprintf(stdout, "bench: error %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

/*
 * write(2) without libc: static glibc has neither SFrame nor frame
 * pointers, and its wrapper would be the top frame of every unwind.
 * Built with a frame pointer and SFrame like the rest of the chain. GCC 12
 * sets up no frame in a leaf that uses no stack, even with
 * -mno-omit-leaf-frame-pointer; the frame-pointer walker then skips the
 * caller (SFrame does not). Asking for the frame address forces the frame,
 * so that both unwinders see the same frames.
 */
__attribute__((noipa)) long raw_write(int fd, const void *buf, size_t n)
{
	long ret;

	asm volatile("" : : "r"(__builtin_frame_address(0)));
#ifdef __aarch64__
	{
		register long x0 asm("x0") = fd;
		register long x1 asm("x1") = (long)buf;
		register long x2 asm("x2") = n;
		register long x8 asm("x8") = 64;	/* __NR_write */

		asm volatile("svc #0"
			     : "+r"(x0)
			     : "r"(x1), "r"(x2), "r"(x8)
			     : "memory");
		ret = x0;
	}
#else
	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"(1L), "D"((long)fd), "S"(buf), "d"(n)
		     : "rcx", "r11", "memory");
#endif
	return ret;
}

/* Bottom of every chain: the kernel unwinds the stack as of this write. */
__attribute__((noipa)) int bench_trigger(void)
{
	trig_ret = raw_write(trig_fd, trig_cmd, trig_len);
	return 1;
}

static void read_result(struct result *r)
{
	char buf[4096], *p, *tok;
	ssize_t n = pread(trig_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		die("read " TRIGGER);
	buf[n] = 0;
	memset(r, 0, sizeof(*r));
	if (sscanf(buf, "unwinder %15s iterations %lu frames %lu ns %lu",
		   r->unwinder, &r->iterations, &r->frames, &r->ns) != 4) {
		fprintf(stdout, "bench: error cannot parse trigger output: %s\n", buf);
		exit(1);
	}
	p = strstr(buf, " ips");
	if (!p)
		return;
	p += 4;
	while ((tok = strsep(&p, " \n")) && r->nips < SHOWN) {
		if (*tok)
			r->ips[r->nips++] = strtoul(tok, NULL, 16);
	}
}

/* Unwind the stack at DEPTH chain frames with @unwinder, @iters times. */
static void trigger(const char *unwinder, int depth, unsigned long iters,
		    struct result *r)
{
	trig_len = snprintf(trig_cmd, sizeof(trig_cmd), "%s %lu", unwinder, iters);
	trig_ret = 0;
	chain_entry(depth);
	if (trig_ret != (long)trig_len) {
		errno = trig_ret < 0 ? -trig_ret : EIO;
		die("write " TRIGGER);
	}
	read_result(r);
}

static int same_stack(const struct result *a, const struct result *b)
{
	return a->frames == b->frames && a->nips == b->nips &&
	       !memcmp(a->ips, b->ips, a->nips * sizeof(a->ips[0]));
}

static void print_ips(const char *key, int depth, const struct result *r)
{
	unsigned int i;

	printf("bench: stack key=%s depth=%d unwinder=%s frames=%lu ips=", key,
	       depth, r->unwinder, r->frames);
	for (i = 0; i < r->nips; i++)
		printf("%s%lx", i ? "," : "", r->ips[i]);
	printf("\n");
}

static struct unwind_user_info query(void)
{
	struct unwind_user_info info = { 0 };

	if (prctl(PR_UNWIND_USER, UNWIND_USER_QUERY, &info, sizeof(info), 0))
		die("prctl QUERY");
	return info;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * This executable's section. The copies the guest runs have their
 * PT_GNU_SFRAME header made PT_NULL (run-bench.sh's hide_sframe.py), its
 * place and size kept: the kernel would otherwise describe the file by
 * itself with its own table, and each measurement wants its own
 * registrations only. main() registers the section through prctl, as the
 * kernel once did at exec.
 */
#define PT_HIDDEN_SFRAME(p)	((p)->p_type == PT_NULL && (p)->p_memsz)

/* The executable's load bias, which find_self() finds. */
static uintptr_t self_bias;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	struct unwind_user_sframe *s = data;
	int i;

	(void)size;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0;	/* the main program has an empty name */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_GNU_SFRAME || PT_HIDDEN_SFRAME(p)) {
			self_bias = info->dlpi_addr;
			s->sframe_start = info->dlpi_addr + p->p_vaddr;
			s->sframe_size = p->p_memsz;
		} else if (p->p_type == PT_LOAD && (p->p_flags & PF_X) &&
			   !s->text_start) {
			s->text_start = info->dlpi_addr + p->p_vaddr;
			s->text_size = p->p_memsz;
		}
	}
	return 1;
}

static struct unwind_user_sframe self_section(void)
{
	struct unwind_user_sframe s = { 0 };

	dl_iterate_phdr(find_self, &s);
	if (!s.sframe_start || !s.text_start) {
		errno = ENOENT;
		die("no PT_GNU_SFRAME in this executable");
	}
	return s;
}

static void cmd_info(void)
{
	struct unwind_user_sframe s = self_section();
	const uint8_t *h = (const uint8_t *)(uintptr_t)s.sframe_start;
	struct unwind_user_info info = query();

	printf("bench: info version=%u fdes=%u fres=%u sframe_bytes=%llu text_bytes=%llu registered=%llu\n",
	       h[2], sfg_get32(h, 8), sfg_get32(h, 12),
	       (unsigned long long)s.sframe_size, (unsigned long long)s.text_size,
	       (unsigned long long)info.nr_sections);
}

static struct unwind_user_sframe self_section(void);

/*
 * For "uncovered": this executable's section registered for another text,
 * an executable mapping of the same size, with UNWIND_USER_SFRAME_F_ADDR
 * moving its functions there. The address space keeps a registration of
 * as many functions, which no frame of the stack is in: a walk looks up
 * every frame and finds nothing (an address space with no registration at
 * all is not looked up in).
 */
static void register_elsewhere(const struct unwind_user_sframe *self,
			       struct unwind_user_sframe *other)
{
	struct unwind_user_sframe s = *self;
	void *text = mmap(NULL, s.text_size, PROT_READ | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (text == MAP_FAILED)
		die("mmap (other text)");
	s.text_start = (uintptr_t)text;
	s.flags = UNWIND_USER_SFRAME_F_ADDR;
	s.sframe_addr = self->sframe_start + (s.text_start - self->text_start);
	if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, &s, sizeof(s), 0))
		die("prctl REGISTER (other text)");
	*other = s;
}

/*
 * UNWIND_BENCH_ONLY=sframe: the measurements walk with SFrame only, so
 * that make profile counts the instructions of those walks alone.
 */
static int skip_unwinder(int w)
{
	const char *only = getenv("UNWIND_BENCH_ONLY");

	return only && !strcmp(only, "sframe") && w != 0;
}

/*
 * @key is "step", or "uncovered": the same with this executable's section
 * registered for another text only (register_elsewhere()), so that the
 * SFrame unwinder finds no section for any frame and falls back to the
 * frame-pointer rule for each (its miss path).
 */
static void cmd_step(const char *key, int depth, unsigned long iters, int rounds)
{
	struct result r, first[2] = { 0 };
	struct unwind_user_info a, b;
	static const char *const u[2] = { "sframe", "fp" };
	struct unwind_user_sframe self = self_section();
	int round, k;

	if (!strcmp(key, "uncovered")) {
		if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER, self.text_start, 0, 0))
			die("prctl UNREGISTER (self)");
		register_elsewhere(&self, &(struct unwind_user_sframe){ 0 });
	}
	for (round = 0; round < rounds; round++) {
		/* Alternate the order so that drift hits both alike. */
		for (k = 0; k < 2; k++) {
			int w = (round & 1) ? 1 - k : k;

			if (skip_unwinder(w))
				continue;
			a = query();
			trigger(u[w], depth, iters, &r);
			b = query();
			printf("bench: %s depth=%d round=%d unwinder=%s iters=%lu frames=%lu ns=%lu sframe_frames=%llu fp_fallbacks=%llu errors=%llu\n",
			       key, depth, round, u[w], r.iterations, r.frames, r.ns,
			       (unsigned long long)(b.sframe_frames - a.sframe_frames),
			       (unsigned long long)(b.fp_fallbacks - a.fp_fallbacks),
			       (unsigned long long)(b.errors - a.errors));
			if (round == 0)
				first[w] = r;
			else if (!same_stack(&r, &first[w]))
				printf("bench: warning %s depth=%d %s stack changed between rounds\n",
				       key, depth, u[w]);
		}
	}
	if (!strcmp(key, "uncovered") &&
	    prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, &self, sizeof(self), 0))
		die("prctl REGISTER (self)");
	if (skip_unwinder(1)) {
		print_ips(key, depth, &first[0]);
		fflush(stdout);
		return;
	}
	printf("bench: ips key=%s depth=%d match=%d frames_sframe=%lu frames_fp=%lu\n",
	       key, depth, same_stack(&first[0], &first[1]), first[0].frames,
	       first[1].frames);
	if (!same_stack(&first[0], &first[1]))
		print_ips(key, depth, &first[1]);
	print_ips(key, depth, &first[0]);
	fflush(stdout);
}

static int cmp_ul(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/*
 * What makes the next unwind cold: registration @s dropped and made again,
 * which empties the rule cache. For "cold", this executable's own section
 * (its rows are then read from user memory); for "cold_file", a
 * registration for another text (register_elsewhere()), which leaves the
 * file's table attached (rows in kernel memory).
 */
static void reregister(const struct unwind_user_sframe *s)
{
	if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER, s->text_start, 0, 0))
		die("prctl UNREGISTER (cold)");
	if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, s, sizeof(*s), 0))
		die("prctl REGISTER (cold)");
}

static void cmd_cold(const char *key, const struct unwind_user_sframe *recold, int depth,
		     int reps)
{
	static const char *const u[2] = { "sframe", "fp" };
	unsigned long *ns[2], frames[2] = { 0, 0 };
	struct result r, first[2] = { 0 };
	double reg_ns = 0;
	int i, k, mismatch = 0, nreg = 0;

	ns[0] = calloc(reps, sizeof(unsigned long));
	ns[1] = calloc(reps, sizeof(unsigned long));
	if (!ns[0] || !ns[1])
		die("calloc");
	for (i = 0; i < reps; i++) {
		for (k = 0; k < 2; k++) {
			int w = (i & 1) ? 1 - k : k;
			double t0;

			if (skip_unwinder(w))
				continue;

			/*
			 * The first unwind after the rule cache was emptied.
			 * Done before the frame-pointer unwind too, so that
			 * both follow the same work.
			 */
			t0 = now_ns();
			reregister(recold);
			reg_ns += now_ns() - t0;
			nreg++;
			trigger(u[w], depth, 1, &r);
			ns[w][i] = r.ns;
			if (i == 0)
				first[w] = r;
			else if (!same_stack(&r, &first[w]))
				mismatch++;
			frames[w] = r.frames;
		}
	}
	for (k = 0; k < 2; k++) {
		double sum = 0;

		if (skip_unwinder(k))
			continue;
		for (i = 0; i < reps; i++)
			sum += ns[k][i];
		qsort(ns[k], reps, sizeof(unsigned long), cmp_ul);
		printf("bench: %s depth=%d unwinder=%s reps=%d frames=%lu mean_ns=%.0f median_ns=%lu min_ns=%lu max_ns=%lu\n",
		       key, depth, u[k], reps, frames[k], sum / reps, ns[k][reps / 2],
		       ns[k][0], ns[k][reps - 1]);
	}
	printf("bench: %s_check depth=%d match=%d changed=%d reregister_us=%.1f\n",
	       key, depth, skip_unwinder(1) || same_stack(&first[0], &first[1]),
	       mismatch, reg_ns / nreg / 1e3);
	fflush(stdout);
	free(ns[0]);
	free(ns[1]);
}

/* UNWIND_USER_FILE_ATTACH of @path's file, with @len bytes at @sec. */
static void attach_file(const char *path, const void *sec, size_t len, uint64_t addr)
{
	struct unwind_user_file f = {
		.sframe_ptr = (uintptr_t)sec,
		.sframe_size = len,
		.sframe_addr = addr,
	};

	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f.fd < 0)
		die(path);
	if (prctl(PR_UNWIND_USER, UNWIND_USER_FILE_ATTACH, &f, sizeof(f), 0))
		die("prctl UNWIND_USER_FILE_ATTACH");
	close(f.fd);
}

/*
 * "cold_file": this executable's own section attached to its file (the
 * program is static: every frame of the stack is in it), its registration
 * dropped, so that the first walk attaches the file's table;
 * then "cold" with the rows in kernel memory. Detached at the end.
 */
static void cmd_cold_file(int depth, int reps)
{
	struct unwind_user_sframe self = self_section(), other;
	struct unwind_user_info before, after;
	int fd;

	if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER, self.text_start, 0, 0))
		die("prctl UNREGISTER (self)");
	attach_file("/proc/self/exe", (void *)(uintptr_t)self.sframe_start,
		    self.sframe_size, self.sframe_start - self_bias);
	before = query();
	register_elsewhere(&self, &other);
	trigger("sframe", depth, 1, &(struct result){ 0 });
	after = query();
	printf("bench: cold_file_setup sections_before=%llu sections_after=%llu file_tables=%llu file_bytes=%llu\n",
	       (unsigned long long)before.nr_sections,
	       (unsigned long long)after.nr_sections,
	       (unsigned long long)after.file_tables,
	       (unsigned long long)after.file_bytes);
	cmd_cold("cold_file", &other, depth, reps);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || prctl(PR_UNWIND_USER, UNWIND_USER_FILE_DETACH, fd, 0, 0))
		die("prctl UNWIND_USER_FILE_DETACH");
	close(fd);
}

/*
 * Synthetic sections: @n functions of FUNC_SIZE bytes at @text, each with
 * the three rows of a frame-pointer function (entry, after push %rbp, after
 * mov %rsp,%rbp), written for a section at @sec_addr into @buf.
 */
#define FUNC_SIZE 32
static const struct sfg_fre fp_rows[] = {
	SFG_SP(0, 8), SFG_SP_FP(1, 16, -16), SFG_FP(4, 16, -16),
};

static size_t section_bytes(unsigned int n)
{
	/* FREs: 3 + 4 + 4 bytes (1-byte start, info, 1-byte offsets). */
	return SFRAME_HDR_SIZE + (size_t)n * (SFRAME_FDE_SIZE + 11);
}

static ssize_t make_section(void *buf, size_t cap, uint64_t sec_addr,
			    uint64_t text, unsigned int n)
{
	struct sfg_func *f = calloc(n, sizeof(*f));
	ssize_t len;
	unsigned int i;

	if (!f)
		die("calloc");
	for (i = 0; i < n; i++) {
		f[i].start = text + (uint64_t)i * FUNC_SIZE;
		f[i].size = FUNC_SIZE;
		f[i].nr_fres = 3;
		f[i].fres = fp_rows;
	}
	len = sfg_write(buf, cap, sec_addr, 0, f, n, NULL);
	free(f);
	return len;
}

static size_t page_round(size_t n)
{
	size_t pg = sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static void cmd_reg(unsigned int n, int reps)
{
	size_t cap = page_round(section_bytes(n));
	size_t tsize = page_round((size_t)n * FUNC_SIZE);
	void *text = mmap(NULL, tsize, PROT_READ | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *sec = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct unwind_user_sframe s = { 0 };
	unsigned long *ns = calloc(reps, sizeof(*ns));
	double sum = 0;
	ssize_t len;
	int i;

	if (text == MAP_FAILED || sec == MAP_FAILED || !ns)
		die("mmap");
	len = make_section(sec, cap, (uintptr_t)sec, (uintptr_t)text, n);
	if (len < 0)
		die("sfg_write");
	s.text_start = (uintptr_t)text;
	s.text_size = (uint64_t)n * FUNC_SIZE;
	s.sframe_start = (uintptr_t)sec;
	s.sframe_size = len;
	for (i = 0; i < reps; i++) {
		double t0 = now_ns();

		if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, &s, sizeof(s), 0))
			die("prctl REGISTER");
		ns[i] = now_ns() - t0;
		sum += ns[i];
		if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER, s.text_start, 0, 0))
			die("prctl UNREGISTER");
	}
	qsort(ns, reps, sizeof(*ns), cmp_ul);
	printf("bench: reg fdes=%u sframe_bytes=%zd reps=%d median_ns=%lu mean_ns=%.0f min_ns=%lu\n",
	       n, len, reps, ns[reps / 2], sum / reps, ns[0]);
	fflush(stdout);
	munmap(text, tsize);
	munmap(sec, cap);
	free(ns);
}

/* The /proc/meminfo fields that kernel allocations show in, in kB. */
struct mem {
	long memfree, slab, sunreclaim, pagetables;
};

static struct mem meminfo(void)
{
	struct mem m = { 0 };
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		die("/proc/meminfo");
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "MemFree: %ld", &m.memfree);
		sscanf(line, "Slab: %ld", &m.slab);
		sscanf(line, "SUnreclaim: %ld", &m.sunreclaim);
		sscanf(line, "PageTables: %ld", &m.pagetables);
	}
	fclose(f);
	return m;
}

/*
 * Let RCU free the retired registry tables before reading meminfo: every
 * registration retires the previous table, freed after a grace period,
 * which takes a while under TCG. At least a second, then until three
 * readings 250 ms apart agree (at most 10 s).
 */
static struct mem settled_meminfo(void)
{
	struct mem m, p;
	int i, same = 0;

	usleep(1000 * 1000);
	m = meminfo();
	for (i = 0; i < 36 && same < 2; i++) {
		usleep(250 * 1000);
		p = m;
		m = meminfo();
		same = m.sunreclaim == p.sunreclaim ? same + 1 : 0;
	}
	return m;
}

/*
 * K registrations of sections of N FDEs each. All K sections are the same
 * bytes (one memfd mapped K times): a section locates its functions relative
 * to its own address, so mapping k, followed by its own executable text
 * mapping, describes that text. The kernel validates and registers each one
 * separately; user memory stays at one copy.
 */
static void cmd_mem(unsigned int n, int k)
{
	size_t slen = page_round(section_bytes(n));
	size_t tlen = page_round((size_t)n * FUNC_SIZE);
	size_t stride = slen + tlen;
	struct mem m0, m1, m2;
	struct unwind_user_info info;
	ssize_t len;
	char *base, *sec;
	int fd, i;

	fd = memfd_create("sframe", 0);
	if (fd < 0 || ftruncate(fd, slen))
		die("memfd");
	sec = mmap(NULL, slen, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (sec == MAP_FAILED)
		die("mmap memfd");
	/* Functions start right after the section's pages. */
	len = make_section(sec, slen, (uintptr_t)sec, (uintptr_t)sec + slen, n);
	if (len < 0)
		die("sfg_write");
	base = mmap(NULL, stride * k, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		die("mmap reserve");
	for (i = 0; i < k; i++) {
		char *s = base + stride * i;

		if (mmap(s, slen, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
		    mmap(s + slen, tlen, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			die("mmap fixed");
		/* Fault the section's pages in now, not while measuring. */
		for (size_t o = 0; o < slen; o += 4096)
			(void)*(volatile char *)(s + o);
	}
	m0 = settled_meminfo();
	double t0 = now_ns();
	for (i = 0; i < k; i++) {
		char *s = base + stride * i;
		struct unwind_user_sframe r = {
			.text_start = (uintptr_t)s + slen,
			.text_size = (uint64_t)n * FUNC_SIZE,
			.sframe_start = (uintptr_t)s,
			.sframe_size = len,
		};

		if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, &r, sizeof(r), 0))
			die("prctl REGISTER");
	}
	double t1 = now_ns();
	info = query();
	m1 = settled_meminfo();
	for (i = 0; i < k; i++)
		if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER,
			  (uintptr_t)(base + stride * i + slen), 0, 0))
			die("prctl UNREGISTER");
	m2 = settled_meminfo();
	printf("bench: mem fdes=%u sframe_bytes=%zd k=%d registered=%llu reg_ns_each=%.0f d_sunreclaim_kb=%ld d_slab_kb=%ld d_memfree_kb=%ld d_pagetables_kb=%ld after_unreg_d_sunreclaim_kb=%ld after_unreg_d_memfree_kb=%ld\n",
	       n, len, k, (unsigned long long)info.nr_sections, (t1 - t0) / k,
	       m1.sunreclaim - m0.sunreclaim, m1.slab - m0.slab,
	       m0.memfree - m1.memfree, m1.pagetables - m0.pagetables,
	       m2.sunreclaim - m0.sunreclaim, m0.memfree - m2.memfree);
	fflush(stdout);
	munmap(base, stride * k);
	munmap(sec, slen);
	close(fd);
}

/* One measurement with one unwinder, for profiling the kernel under it. */
static void cmd_loop(const char *unwinder, int depth, unsigned long iters)
{
	struct result r;

	trigger(unwinder, depth, iters, &r);
	printf("bench: loop unwinder=%s depth=%d iters=%lu frames=%lu ns=%lu\n",
	       r.unwinder, depth, r.iterations, r.frames, r.ns);
}

/* Kernel memory before and after many SFrame unwinds: nothing may stay. */
static void cmd_leak(int depth, unsigned long iters)
{
	struct result r;
	struct mem m0, m1;

	trigger("sframe", depth, 1, &r);	/* everything faulted in once */
	m0 = settled_meminfo();
	trigger("sframe", depth, iters, &r);
	m1 = settled_meminfo();
	printf("bench: leak depth=%d unwinds=%lu frames=%lu d_sunreclaim_kb=%ld d_memfree_kb=%ld\n",
	       depth, iters, r.frames, m1.sunreclaim - m0.sunreclaim,
	       m0.memfree - m1.memfree);
	fflush(stdout);
}

/*
 * exec cost: REPS times, fork and execve @path with the command "nop",
 * interleaved with @other (the same program with its .sframe section
 * header removed, so that binfmt_elf finds an empty PT_GNU_SFRAME and
 * registers nothing); the median time from fork to the child's exit.
 */
static void cmd_exec(const char *path, const char *other, int reps)
{
	const char *const bins[2] = { path, other };
	unsigned long *ns[2];
	int i, k;

	ns[0] = calloc(reps, sizeof(unsigned long));
	ns[1] = calloc(reps, sizeof(unsigned long));
	if (!ns[0] || !ns[1])
		die("calloc");
	for (i = 0; i < reps; i++) {
		for (k = 0; k < 2; k++) {
			int w = (i & 1) ? 1 - k : k, status;
			double t0 = now_ns();
			pid_t pid = fork();

			if (pid < 0)
				die("fork");
			if (!pid) {
				execl(bins[w], bins[w], "nop", (char *)NULL);
				_exit(127);
			}
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
			    WEXITSTATUS(status))
				die("exec child");
			ns[w][i] = now_ns() - t0;
		}
	}
	for (k = 0; k < 2; k++)
		qsort(ns[k], reps, sizeof(unsigned long), cmp_ul);
	printf("bench: exec binary=%s reps=%d sframe_median_ns=%lu nosframe_median_ns=%lu\n",
	       path, reps, ns[0][reps / 2], ns[1][reps / 2]);
	free(ns[0]);
	free(ns[1]);
}

/*
 * "walk DEPTH", run by "first" in a fresh copy of a program: nothing is
 * registered, so the first unwind (in task context, where it may sleep)
 * meets code no registration covers and builds the table of this file from
 * its own PT_GNU_SFRAME, once for the machine, and attaches it; the second
 * finds it attached, its rule cache empty of these frames but for the
 * first's.
 */
static void cmd_walk(int depth, const char *label)
{
	struct unwind_user_info before = query(), mid, after;
	struct result first, second;

	trigger("sframe", depth, 1, &first);
	mid = query();
	trigger("sframe", depth, 1, &second);
	after = query();
	printf("bench: first_walk binary=%s frames=%lu first_ns=%lu second_ns=%lu sections_before=%llu sections_after=%llu file_tables=%llu file_bytes=%llu fallbacks=%llu\n",
	       label, first.frames, first.ns, second.ns,
	       (unsigned long long)before.nr_sections, (unsigned long long)mid.nr_sections,
	       (unsigned long long)after.file_tables, (unsigned long long)after.file_bytes,
	       (unsigned long long)(after.fp_fallbacks - before.fp_fallbacks));
}

/* "first PATH REPS DEPTH": see cmd_walk(). */
static void cmd_first(const char *path, int reps, int depth)
{
	char copy[64], d[16], buf[65536];
	int i, in, out, status;
	ssize_t n;
	pid_t pid;

	snprintf(d, sizeof(d), "%d", depth);
	for (i = 0; i < reps; i++) {
		snprintf(copy, sizeof(copy), "/tmp/first-%d-%d", getpid(), i);
		in = open(path, O_RDONLY);
		out = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0755);
		if (in < 0 || out < 0)
			die("copy");
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, n) != n)
				die("copy");
		/* A file open for writing gets no table. */
		close(out);
		close(in);
		pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			execl(copy, copy, "walk", d, path, (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			die("first child");
		unlink(copy);
	}
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	long a = argc > 2 ? strtol(argv[2], NULL, 0) : 0;
	long b = argc > 3 ? strtol(argv[3], NULL, 0) : 0;
	long c = argc > 4 ? strtol(argv[4], NULL, 0) : 0;

	/* What exec runs: registers nothing, as exec reads nothing. */
	if (!strcmp(cmd, "nop"))
		return 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* "walk" measures what it costs to describe this program unregistered. */
	if (strcmp(cmd, "exec") && strcmp(cmd, "first") && strcmp(cmd, "walk")) {
		struct unwind_user_sframe self = self_section();

		if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER, &self,
			  sizeof(self), 0) && errno != EEXIST)
			die("prctl REGISTER (self)");
	}
	trig_fd = open(TRIGGER, O_RDWR);
	if (trig_fd < 0 && strcmp(cmd, "reg") && strcmp(cmd, "mem") && strcmp(cmd, "info") &&
	    strcmp(cmd, "first"))
		die("open " TRIGGER);

	if (!strcmp(cmd, "info"))
		cmd_info();
	else if ((!strcmp(cmd, "step") || !strcmp(cmd, "uncovered")) && a > 0 && b > 0 && c > 0)
		cmd_step(cmd, a, b, c);
	else if (!strcmp(cmd, "cold") && a > 0 && b > 0) {
		struct unwind_user_sframe self = self_section();

		cmd_cold("cold", &self, a, b);
	} else if (!strcmp(cmd, "cold_file") && a > 0 && b > 0)
		cmd_cold_file(a, b);
	else if (!strcmp(cmd, "reg") && a > 0 && b > 0)
		cmd_reg(a, b);
	else if (!strcmp(cmd, "mem") && a > 0 && b > 0)
		cmd_mem(a, b);
	else if (!strcmp(cmd, "loop") && argc == 5 && b > 0 && c > 0)
		cmd_loop(argv[2], b, c);
	else if (!strcmp(cmd, "leak") && a > 0 && b > 0)
		cmd_leak(a, b);
	else if (!strcmp(cmd, "exec") && argc == 5 && c > 0)
		cmd_exec(argv[2], argv[3], c);
	else if (!strcmp(cmd, "first") && argc == 5 && b > 0 && c > 0)
		cmd_first(argv[2], b, c);
	else if (!strcmp(cmd, "walk") && argc == 4 && a > 0)
		cmd_walk(a, argv[3]);
	else {
		fprintf(stderr, "usage: %s info | step|uncovered DEPTH ITERS ROUNDS | cold DEPTH REPS | cold_file DEPTH REPS | reg NFDES REPS | mem NFDES K | leak DEPTH ITERS | loop sframe|fp DEPTH ITERS | exec PATH NOSFRAME_PATH REPS | first PATH REPS DEPTH | walk DEPTH LABEL | nop\n",
			argv[0]);
		return 2;
	}
	return 0;
}
