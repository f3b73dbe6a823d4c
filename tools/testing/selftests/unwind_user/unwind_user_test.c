// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers for the SFrame unwinder selftests; see unwind_user_test.h.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "unwind_user_test.h"

#ifndef PERF_RECORD_CALLCHAIN_DEFERRED
#define PERF_RECORD_CALLCHAIN_DEFERRED 22
#endif
/* PERF_CONTEXT_USER, as a constant older headers cannot lack. */
#define CONTEXT_USER ((uint64_t)-512)

/* 4 MiB: room for about a thousand stacks of the deepest kind. */
#define RING_PAGES 1024

static void drain(struct perf_event_mmap_page *meta, char *data, size_t size,
		  struct stacks *out)
{
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;

	while (tail < head) {
		struct perf_event_header hdr;
		char rec[65536];
		size_t off = tail % size, i;

		for (i = 0; i < sizeof(hdr); i++)
			((char *)&hdr)[i] = data[(off + i) % size];
		if (hdr.size < sizeof(hdr))
			break;
		for (i = 0; i < hdr.size; i++)
			rec[i] = data[(off + i) % size];
		tail += hdr.size;

		if (hdr.type == PERF_RECORD_SAMPLE) {
			/* ip, pid/tid, then the callchain: nr, ips[nr] */
			uint64_t *p = (uint64_t *)(rec + sizeof(hdr));
			uint64_t nr = p[2], k;
			bool user = false;

			out->samples++;
			/*
			 * The sample carries its user stack (PERF_CONTEXT_USER)
			 * when taken at sample time, and with deferred
			 * callchains when the kernel walked the whole stack at
			 * once; otherwise a deferred record brings it.
			 */
			for (k = 0; k < nr; k++)
				user |= p[3 + k] == CONTEXT_USER;
			if (user && out->nr < MAX_STACKS) {
				struct ustack *st = &out->s[out->nr++];

				st->misc = 0;
				st->nr = 0;
				for (k = 0; k < nr && st->nr < MAX_DEPTH; k++)
					if (p[3 + k] < (uint64_t)PERF_CONTEXT_MAX)
						st->ip[st->nr++] = p[3 + k];
				if ((hdr.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
				    PERF_RECORD_MISC_USER && (!st->nr || st->ip[0] != p[0]))
					out->not_at_ip++;
				if (!out->sync)
					out->whole++;
			}
		} else if (hdr.type == PERF_RECORD_LOST) {
			out->lost++;
		} else if (hdr.type == PERF_RECORD_CALLCHAIN_DEFERRED &&
			   out->nr < MAX_STACKS) {
			uint64_t *p = (uint64_t *)(rec + sizeof(hdr));
			struct ustack *st = &out->s[out->nr++];
			uint64_t nr = p[1];

			out->deferred++;
			st->cookie = p[0];
			st->misc = hdr.misc;
			if (nr > MAX_DEPTH)
				nr = MAX_DEPTH;
			st->nr = nr;
			memcpy(st->ip, &p[2], nr * sizeof(uint64_t));
		}
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

/* Set by sample_stacks_sync(): take the callchains of the samples. */
static bool at_sample_time;
/* Set by sample_stacks_kernel(): sample kernel time too. */
static bool with_kernel;

/* The event sample_stacks() samples with while it runs, else -1. */
int sampling_fd = -1;

/*
 * The tests' call chains end at this frame (whichever helper they used),
 * so it must not be inlined.
 */
__attribute__((noinline))
int sample_stacks(void (*work)(void *), void *arg, int freq, struct stacks *out)
{
	bool sync = at_sample_time;

	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/*
		 * A fixed period of task clock (ns), not perf's adaptive
		 * frequency, whose estimate swings when the emulated timer
		 * interrupts come late on a loaded host.
		 */
		.sample_period = 1000000000 / freq,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_CALLCHAIN,
		.exclude_kernel = !with_kernel,
		.exclude_callchain_kernel = 1,
		.disabled = 1,
		.defer_callchain = !sync,
		.defer_output = !sync,
		/* and the frames of a process that adds its own */
		.defer_assist = !sync,
		.sample_id_all = 1,
		.wakeup_events = 1,
	};
	size_t psz = sysconf(_SC_PAGESIZE);
	size_t len = (RING_PAGES + 1) * psz;
	struct perf_event_mmap_page *meta;
	int fd;

	memset(out, 0, sizeof(*out));
	out->sync = sync;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		return -errno;
	meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (meta == MAP_FAILED) {
		close(fd);
		return -errno;
	}
	sampling_fd = fd;
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	work(arg);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	sampling_fd = -1;
	drain(meta, (char *)meta + psz, RING_PAGES * psz, out);
	munmap(meta, len);
	close(fd);
	return 0;
}

int sample_stacks_sync(void (*work)(void *), void *arg, int freq,
		       struct stacks *out)
{
	int ret;

	at_sample_time = true;
	ret = sample_stacks(work, arg, freq, out);
	at_sample_time = false;
	return ret;
}

static volatile unsigned long settle_sink;

/* Spins in this program's code for *@arg seconds. */
static void __attribute__((noipa)) settle_spin(void *arg)
{
	double end = now_seconds() + *(double *)arg;

	do
		settle_sink = settle_sink * 6364136223846793005ul + 1;
	while (now_seconds() < end);
}

int settle_self(void)
{
	struct stacks *st = malloc(sizeof(*st));
	double seconds = 0.05;
	int ret;

	if (!st)
		return -ENOMEM;
	ret = sample_stacks(settle_spin, &seconds, 1000, st);
	free(st);
	return ret;
}

/* A frame of its own on the stacks, as sample_stacks(). */
__attribute__((noinline))
int sample_stacks_kernel(void (*work)(void *), void *arg, int freq,
			 struct stacks *out)
{
	int ret;

	with_kernel = true;
	ret = sample_stacks(work, arg, freq, out);
	with_kernel = false;
	return ret;
}

int write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, len);
	if (n < 0)
		n = -errno;
	close(fd);
	return n < 0 ? n : n == (ssize_t)len ? 0 : -EIO;
}

#define DEBUGFS		"/sys/kernel/debug"

/*
 * The defaults spare sleeping allocations; a stack dump per injected
 * failure would drown the kernel log the harness reads.
 */
int fault_injection_setup(void)
{
	static const char *const knobs[][2] = {
		{ DEBUGFS "/failslab/ignore-gfp-wait", "N" },
		{ DEBUGFS "/failslab/verbose", "0" },
		{ DEBUGFS "/fail_page_alloc/ignore-gfp-wait", "N" },
		{ DEBUGFS "/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ DEBUGFS "/fail_page_alloc/min-order", "0" },
		{ DEBUGFS "/fail_page_alloc/verbose", "0" },
	};
	unsigned int i;
	int err;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		err = write_text(knobs[i][0], knobs[i][1]);
		if (err)
			return err;
	}
	return 0;
}

/* fail-nth of this thread, opened once. */
static int nth_fd = -1;

int fail_nth_open(void)
{
	nth_fd = open("/proc/thread-self/fail-nth", O_RDWR);
	return nth_fd < 0 ? -errno : 0;
}

void fail_nth_close(void)
{
	if (nth_fd >= 0) {
		fail_nth(0);
		close(nth_fd);
		nth_fd = -1;
	}
}

int fail_nth(unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	return pwrite(nth_fd, buf, len, 0) == len ? 0 : -errno;
}

/* fail-nth reads 0 once it has been injected, the count still to go otherwise. */
bool fail_nth_hit(void)
{
	char buf[16] = "";
	bool hit;

	if (pread(nth_fd, buf, sizeof(buf) - 1, 0) <= 0)
		return false;
	hit = atoi(buf) == 0;
	fail_nth(0);
	return hit;
}

const char *fail_nth_missing(void)
{
	static char why[256];
	int err;

	if (getuid())
		return "needs root for debugfs";
	err = fault_injection_setup();
	if (err) {
		snprintf(why, sizeof(why),
			 "no fault injection (%s): CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_DEBUG_FS",
			 strerror(-err));
		return why;
	}
	if (fail_nth_open())
		return "no /proc/thread-self/fail-nth";
	return NULL;
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The executable's symbol table: FUNC symbols sorted by address. */
struct sym {
	uint64_t addr, size;
	const char *name;
};

static struct sym *syms;
static size_t nsyms;
static char *strtab_copy;
static Elf64_Ehdr ehdr;
static Elf64_Phdr *phdrs;
/* The .sframe section, from the section headers (see self_sframe()). */
static uint64_t sframe_sh_addr, sframe_sh_size;

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int sym_init(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	struct stat stt;
	Elf64_Shdr *sh;
	char *map;
	size_t i;

	if (nsyms) {		/* loaded already */
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if (fd < 0 || fstat(fd, &stt))
		return -1;
	map = mmap(NULL, stt.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	memcpy(&ehdr, map, sizeof(ehdr));
	phdrs = malloc(ehdr.e_phnum * sizeof(*phdrs));
	memcpy(phdrs, map + ehdr.e_phoff, ehdr.e_phnum * sizeof(*phdrs));
	sh = (Elf64_Shdr *)(map + ehdr.e_shoff);
	for (i = 0; i < ehdr.e_shnum; i++) {
		const char *shstr = map + sh[ehdr.e_shstrndx].sh_offset;
		Elf64_Sym *st;
		size_t n, j;

		if (!strcmp(shstr + sh[i].sh_name, ".sframe")) {
			sframe_sh_addr = sh[i].sh_addr;
			sframe_sh_size = sh[i].sh_size;
		}
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		st = (Elf64_Sym *)(map + sh[i].sh_offset);
		n = sh[i].sh_size / sizeof(*st);
		strtab_copy = malloc(sh[sh[i].sh_link].sh_size);
		memcpy(strtab_copy, map + sh[sh[i].sh_link].sh_offset,
		       sh[sh[i].sh_link].sh_size);
		syms = calloc(n, sizeof(*syms));
		for (j = 0; j < n; j++) {
			if (ELF64_ST_TYPE(st[j].st_info) != STT_FUNC || !st[j].st_value)
				continue;
			syms[nsyms].addr = st[j].st_value;
			syms[nsyms].size = st[j].st_size;
			syms[nsyms].name = strtab_copy + st[j].st_name;
			nsyms++;
		}
	}
	munmap(map, stt.st_size);
	qsort(syms, nsyms, sizeof(*syms), cmp_sym);
	return nsyms ? 0 : -1;
}

/* Names of generated code, by sym_add(). */
#define MAX_ADDED 64
static struct sym added[MAX_ADDED];
static unsigned int nadded;

void sym_add(const char *name, uint64_t addr, uint64_t size)
{
	if (nadded < MAX_ADDED)
		added[nadded++] = (struct sym){ addr, size, name };
}

void sym_clear_added(void)
{
	nadded = 0;
}

const char *sym_name(uint64_t ip)
{
	size_t lo = 0, hi = nsyms;
	unsigned int i;

	for (i = 0; i < nadded; i++)
		if (ip >= added[i].addr && ip < added[i].addr + added[i].size)
			return added[i].name;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].addr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (ip >= syms[lo - 1].addr + (syms[lo - 1].size ? syms[lo - 1].size : 1))
		return NULL;
	return syms[lo - 1].name;
}

int sym_addr(const char *name, uint64_t *addr, uint64_t *size)
{
	size_t i;

	for (i = 0; i < nsyms; i++) {
		if (!strcmp(syms[i].name, name)) {
			*addr = syms[i].addr;
			*size = syms[i].size;
			return 0;
		}
	}
	return -1;
}

bool self_has_sframe_segment(void)
{
	int i;

	for (i = 0; i < ehdr.e_phnum; i++)
		if (phdrs[i].p_type == 0x6474e554)	/* PT_GNU_SFRAME */
			return true;
	return false;
}

int self_sframe(struct unwind_user_sframe *sec)
{
	int i;

	memset(sec, 0, sizeof(*sec));
	for (i = 0; i < ehdr.e_phnum; i++) {
		Elf64_Phdr *p = &phdrs[i];

		if (p->p_type == 0x6474e554) {	/* PT_GNU_SFRAME */
			sec->sframe_start = p->p_vaddr;
			sec->sframe_size = p->p_memsz;
		} else if (p->p_type == PT_LOAD && (p->p_flags & PF_X) &&
			   !sec->text_start) {
			sec->text_start = p->p_vaddr;
			sec->text_size = p->p_memsz;
		}
	}
	/*
	 * Linkers that keep .sframe but write no PT_GNU_SFRAME (ld.lld 22):
	 * the section found in the section headers.
	 */
	if (!sec->sframe_start && sframe_sh_size) {
		sec->sframe_start = sframe_sh_addr;
		sec->sframe_size = sframe_sh_size;
	}
	/*
	 * Registered through prctl, as a loader would: the tests of the
	 * registry want the program's code described by a registration of its
	 * own, whose rows are read from the process's memory, from the start.
	 * (The kernel would otherwise describe the program with its file's
	 * table, built by its first walk that may sleep.) -EEXIST: registered
	 * already (by an earlier call, inherited, or the file's table attached
	 * at exec).
	 */
	if (sec->sframe_start && sec->text_start) {
		long ret = unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
					(unsigned long)sec, sizeof(*sec), 0);

		if (ret && ret != -EEXIST) {
			printf("# registering .sframe (%#llx+%#llx): %s\n",
			       (unsigned long long)sec->sframe_start,
			       (unsigned long long)sec->sframe_size, strerror(-ret));
			return -1;
		}
	}
	/* The tests are static, non-PIE executables: no load bias. */
	return sec->sframe_start && sec->text_start ? 0 : -1;
}

/*
 * Every test program registers its own section through prctl before main,
 * as the kernel did at exec before it described files by their own
 * sections: the tests of the registry want the program's code described
 * from its start, by a registration whose rows are read from its memory.
 * A program that tests the kernel's own description of its file defines
 * unwind_test_no_self_register as true.
 */
__attribute__((weak)) bool unwind_test_no_self_register;

__attribute__((constructor)) static void register_self(void)
{
	struct unwind_user_sframe sec;

	if (!unwind_test_no_self_register && !sym_init())
		self_sframe(&sec);
}

int stack_matches(const struct ustack *st, const char *const *names, int n)
{
	unsigned int i;
	int k;

	for (i = 0; i < st->nr; i++) {
		const char *s = sym_name(st->ip[i]);

		if (!s || strcmp(s, names[0]))
			continue;
		for (k = 1; k < n; k++) {
			if (i + k >= st->nr)
				return 0;
			s = sym_name(st->ip[i + k]);
			if (!s || strcmp(s, names[k]))
				return -2;
		}
		return 1;
	}
	return -1;
}

bool stack_has(const struct ustack *st, const char *name)
{
	unsigned int i;

	for (i = 0; i < st->nr; i++) {
		const char *s = sym_name(st->ip[i]);

		if (s && !strcmp(s, name))
			return true;
	}
	return false;
}

void stack_print(const char *prefix, const struct ustack *st, unsigned int max)
{
	unsigned int i;

	printf("# %s (%u frames):", prefix, st->nr);
	for (i = 0; i < st->nr && i < max; i++) {
		const char *s = sym_name(st->ip[i]);

		Dl_info dl;

		if (s)
			printf(" %s", s);
		else if (dladdr((void *)(uintptr_t)st->ip[i], &dl) && dl.dli_fname)
			/* Which object, for a stack sampled in this process. */
			printf(" %#llx(%s+%#lx)", (unsigned long long)st->ip[i],
			       strrchr(dl.dli_fname, '/') ? strrchr(dl.dli_fname, '/') + 1 :
			       dl.dli_fname,
			       (unsigned long)(st->ip[i] - (uintptr_t)dl.dli_fbase));
		else
			printf(" %#llx", (unsigned long long)st->ip[i]);
	}
	printf("%s\n", st->nr > max ? " ..." : "");
}

struct tally chain_check(const struct stacks *s, const char *const *chain,
			 int n, const char *root, int verbose)
{
	struct tally t = {};
	unsigned int i;
	int k;

	for (i = 0; i < s->nr; i++) {
		const struct ustack *st = &s->s[i];
		const char *top = st->nr ? sym_name(st->ip[0]) : NULL;
		int r = -1;

		for (k = 0; top && k < n - 1; k++) {
			if (!strcmp(top, chain[k])) {
				r = stack_matches(st, chain + k, n - k);
				break;
			}
		}
		if (r == -1)
			continue;
		t.in_chain++;
		if (r == -2)
			t.invented++;
		if (r == 1 && (!root || stack_has(st, root))) {
			t.complete++;
		} else {
			t.wrong++;
			if (t.wrong <= verbose)
				stack_print("wrong stack", st, 16);
		}
	}
	return t;
}

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

	(void)size;
	(void)arg;

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

int libc_init(void)
{
	return dl_iterate_phdr(find_libc, NULL) ? 0 : -1;
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
static void libc_stack_print(const char *prefix, const struct ustack *st)
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

static int chain_index(const struct libc_workload *w, uint64_t ip)
{
	const char *s = sym_name(ip);
	int k;

	for (k = 0; s && k < w->n; k++)
		if (!strcmp(s, w->chain[k].name))
			return k;
	return -1;
}

void libc_classify(const struct libc_workload *w, const struct ustack *st,
		   struct libc_tally *t, bool verbose)
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
	/* Or the leaf is one of the workload's functions, not their callers. */
	if (!lead && (k < 0 || k >= w->n - w->callers))
		return;
	t->in_work++;
	t->plt_leaf += plt;
	if (st->nr && in_libc(st->ip[0]))
		t->libc_leaf++;
	if (lead > (plt && !in_libc(st->ip[0])))
		t->through_libc++;
	if (lead && (k < 0 || !w->chain[k].calls_libc))
		goto wrong;
	for (run = 1; run < lead; run++, ras++)
		bad += !after_call(st->ip[run]);
	if (lead > t->max_libc_run)
		t->max_libc_run = lead;
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
				t->through_libc++;
			if (run > t->max_libc_run)
				t->max_libc_run = run;
			if (!run)
				goto wrong;
		}
		if (i >= st->nr)
			goto wrong;
		if (chain_index(w, st->ip[i]) != ++k)
			goto wrong;
	}
	t->complete++;
	if (in_libc(st->ip[0]))
		t->complete_libc_leaf++;
	t->libc_ras += ras;
	t->implausible += bad;
	if (bad && verbose && t->implausible - bad < 3)
		libc_stack_print("libc frame not after a call", st);
	return;
wrong:
	if (plt && st->nr == 1 && in_libc(st->ip[0])) {
		t->plt_cut++;
	} else if (st->nr && in_libc(st->ip[st->nr - 1])) {
		if (++t->ends_in_libc <= 3 && verbose)
			libc_stack_print("ends in libc", st);
	} else {
		if (++t->wrong <= 3 && verbose)
			libc_stack_print("wrong stack", st);
	}
}
