// SPDX-License-Identifier: GPL-2.0
/*
 * SFrame tables attached to files: prctl(PR_UNWIND_USER,
 * UNWIND_USER_FILE_ATTACH) gives the kernel a section for an ELF file (a
 * file descriptor and the section's bytes), and every address space that
 * maps the file's text gets it, attached by its first walk that may sleep
 * through that text: processes that were running before the attach too,
 * without LD_AUDIT or anything else in them.
 *
 *   libc.already_running  a child (this program, exec'ed) whose hot code is
 *       in libc (qsort() calling back a comparator) is sampled with perf's
 *       deferred callchains: its libc frames are left to the frame-pointer
 *       rule and most stacks are wrong. The parent then attaches to the
 *       libc.so.6 the child maps (found in /proc/PID/maps) the section
 *       sframe-synth made for it (sframe-cache/<build ID>.sframe, next to
 *       this program, as harness/stage-audit.sh stages it); after one walk
 *       that may sleep through libc (samples taken in a system call made in
 *       libc), every stack of the same child whose leaf is in the workload
 *       is complete, as sframe_libc_test defines it, and the child's
 *       unwinder counts no error. Samples of the child by perf alone right
 *       after the attach are reported, not checked: whether they attach the
 *       table depends on how many of them perf defers.
 *   libc.shared  20 running children map libc; one attach, each takes a
 *       walk through libc that uses the table; 80 more started after the
 *       attach have it from exec, before any walk; UNWIND_USER_QUERY's
 *       machine-wide file_tables and file_bytes (when the kernel has them)
 *       count one more table, whose bytes do not grow with the children.
 *       Sampled at NMI/IRQ time in clock_gettime() (the vDSO, described
 *       by the kernel's own section): a child started before the attach
 *       has one walk cut to ask for the tables, and libc attached by the
 *       deferred unwind it asks for; one started after is never cut to
 *       ask, no stack has a wrong frame and 99 % or more are complete,
 *       the vDSO's first instruction included.
 *   libc.fault_injection_exec  exec of a child with libc's table attached,
 *       with each allocation in turn failing (fail-nth): the exec fails
 *       cleanly or the child has the table, from ld.so's mmap or, if the
 *       failure kept mmap from attaching it, from its first walk that may
 *       sleep.
 *   lib.*  the ABI, on a private copy of libsframe_dl.so (next to this
 *       program) with its own .sframe: every errno of the operations
 *       (EPERM for another user, CAP_PERFMON enough; EBADF, EINVAL, E2BIG,
 *       EFAULT, ENOEXEC for what is not one x86-64 ELF file with one
 *       executable segment, ETXTBSY for a file open for writing, ERANGE,
 *       ENOSPC at the machine's budget, EBADMSG and EOPNOTSUPP for broken
 *       sections and random corruption, ENOENT), none leaving a table;
 *       detach and attach again; attaching again replaces the table;
 *       allocation failures (fail-nth) during attach and detach; and the
 *       library's text copied by a second, read-only, mapping of the file
 *       made executable by mprotect(), then moved by mremap() (attached
 *       by each, before any walk): stacks as complete as through the text
 *       dlopen() mapped; a copy with its own .sframe, open for writing
 *       while mapped: no table, and walks at sample time not cut to ask
 *       for it again and again.
 *   stale.*  the copy, with a table, rewritten (in place, truncated and
 *       written again, one byte written, or renamed over): a child that
 *       dlopen()s it afterwards must not get the table. The contents are
 *       the same bytes, so a table used anyway would describe the library
 *       exactly: what tells is that the child's stacks through it are the
 *       frame-pointer rule's (as in sframe_dlopen_test without a
 *       registration) and that nothing was attached to its address space,
 *       whereas before the change the same child program got complete
 *       stacks and one more registration. lib.written_in_the_same_tick:
 *       one byte written in the same tick of the clock as the attach,
 *       which changes the times only because the attach queried them
 *       (the clock set back for it),
 *       and lib.overlay_copied_up: a library on overlayfs rewritten
 *       through the overlay while a child maps it, where a child started
 *       after must get the table of the bytes it maps, not the first
 *       child's. lib.fanotify_listener: a walk that builds a library's
 *       table from its own section raises no fanotify event (a listener
 *       with a permission mark on it, profiled, would wait for itself).
 *       lib.judged_then_rewritten: a file mmap judged to have no section
 *       of its own, rewritten in place with one, is judged again.
 *       lib.container_budget: the tables of a container's users, in a
 *       user namespace an unprivileged user made, come from that user's
 *       share alone.
 *   provider.*  the machine's provider of file tables
 *       (UNWIND_USER_FILE_PROVIDE), this process: its errnos (EPERM for
 *       another user, and for CAP_PERFMON without CAP_SYS_ADMIN, EBUSY for
 *       a second one, EINVAL); a child that maps
 *       the copy (no section of its own), unlinked meanwhile, is walked:
 *       the kernel asks for the file once, with a read-only, close-on-exec
 *       descriptor of it, and until the answer the child's stacks end at
 *       the library's first frame (table_waits), never a wrong frame; the
 *       answer, a section through that descriptor, gives complete stacks
 *       at the next walk. An answer that the file has nothing
 *       (UNWIND_USER_FILE_F_NONE) is remembered across providers; a file
 *       left unanswered by a provider that goes is asked again of one
 *       registered within the grace period, and waited for meanwhile;
 *       after the grace period with no provider, it is not waited for.
 *
 * Needs CAP_PERFMON or CAP_SYS_ADMIN (root in the test guest); the tests
 * skip on a kernel without the operations (EINVAL), and the libc tests
 * without a cached section for this libc. The tables are machine-wide:
 * every test detaches what it attached (libc's from the harness's own
 * process, whatever happens to the test), so that the tests that run
 * after these see libc without a table.
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
#include <poll.h>
#include <pthread.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

#define NOIPA __attribute__((noipa))

#ifndef EBADMSG
#define EBADMSG 74
#endif
#ifndef CAP_PERFMON
#define CAP_PERFMON	38
#endif
#define PT_GNU_SFRAME	0x6474e554
#define MAX_SFRAME_SIZE	(64ull << 20)
#define FREQ		4000
/* argv[1] of the exec'ed children. */
#define CHILD_ARG	"--child"
#define NR_SHARED	20
#define NR_LATE		80
/* The header of an SFrame section (versions 1 to 3), and its fields. */
#define SFH_SIZE	28
#define SFH_VERSION	2
#define SFH_FLAGS	3
#define SFH_ABI		4
#define SFH_AUXHDR_LEN	7
#define SFH_NUM_FDES	8
#define SFH_NUM_FRES	12
#define SFH_FRE_LEN	16
#define SFH_FREOFF	24

/*
 * UNWIND_USER_QUERY's struct with the fields of its version 3, whatever
 * the header says: file_tables and file_bytes after section_bytes.
 */
struct file_info {
	__u64 nr_sections, unwinds, sframe_frames, fp_fallbacks, errors;
	__u64 dropped, nofault_frames, nofault_faults, cached_frames;
	__u64 section_reads, section_bytes;
	__u64 file_tables, file_bytes;
};

#define FILE_INFO_SIZE	104
_Static_assert(sizeof(struct file_info) == FILE_INFO_SIZE, "VER3 is 104 bytes");
#ifdef UNWIND_USER_INFO_SIZE_VER3
_Static_assert(UNWIND_USER_INFO_SIZE_VER3 == FILE_INFO_SIZE, "VER3 is 104 bytes");
_Static_assert(offsetof(struct unwind_user_info, file_tables) ==
	       offsetof(struct file_info, file_tables), "file_tables");
#endif

/*
 * The counters with file_tables and file_bytes: 1 if the kernel wrote
 * them, 0 if it wrote a shorter struct (it writes what it knows, the
 * rest keeps the 0xff it was filled with), or -errno.
 */
static int query_files(struct file_info *fi)
{
	long ret;

	memset(fi, 0xff, sizeof(*fi));
	ret = unwind_prctl(UNWIND_USER_QUERY, (unsigned long)fi, FILE_INFO_SIZE, 0);
	if (ret)
		return ret;
	return fi->file_tables != ~0ull || fi->file_bytes != ~0ull;
}

static long attach_size(const void *f, unsigned long size)
{
	return unwind_prctl(UNWIND_USER_FILE_ATTACH, (unsigned long)f, size, 0);
}

static long file_attach(const struct unwind_user_file *f)
{
	return attach_size(f, sizeof(*f));
}

/*
 * Why the tests cannot run here, or NULL: a kernel without the
 * operations refuses them as any unknown one (EINVAL); one with them
 * refuses an attach with a bad file descriptor, otherwise valid, with
 * EPERM to a caller without the privilege, else EBADF.
 */
static const char *file_ops_missing(void)
{
	struct unwind_user_file f = { .fd = -1 };
	long ret;

	f.sframe_ptr = (uintptr_t)&f;
	f.sframe_size = sizeof(f);
	ret = file_attach(&f);
	if (ret == -EINVAL)
		return "no UNWIND_USER_FILE_ATTACH in this kernel";
	if (ret == -EPERM)
		return "needs CAP_PERFMON or CAP_SYS_ADMIN";
	return NULL;
}

/* Files. */

/* The whole of file @path in a new buffer, its size in @len; NULL on error. */
static void *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !st.st_size)
		goto out;
	buf = malloc(st.st_size);
	while (buf && got < (size_t)st.st_size &&
	       (n = read(fd, buf + got, st.st_size - got)) > 0)
		got += n;
	if (buf && got != (size_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	*len = got;
out:
	close(fd);
	return buf;
}

/* Write @len bytes of @buf to a new file @path (mode 0755): 0 or -1. */
static int write_new(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	int ret;

	if (fd < 0)
		return -1;
	ret = write(fd, buf, len) == (ssize_t)len ? 0 : -1;
	close(fd);
	return ret;
}

/* Remove @dir and the files in it. */
static void remove_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* The directory of this program, and the sframe-synth cache. */
static char here[PATH_MAX / 2], cache_dir[PATH_MAX];

static int find_here(void)
{
	const char *c = getenv("UNWIND_USER_SFRAME_CACHE");
	ssize_t n = readlink("/proc/self/exe", here, sizeof(here) - 1);

	if (n <= 0)
		return -1;
	here[n] = 0;
	dirname(here);
	snprintf(cache_dir, sizeof(cache_dir), "%s/sframe-cache", here);
	if (c && *c)
		snprintf(cache_dir, sizeof(cache_dir), "%s", c);
	return 0;
}

/* The ELF header and program headers of the file @fd: 0 or -1. */
static int read_phdrs(int fd, Elf64_Ehdr *eh, Elf64_Phdr **ph)
{
	size_t len;

	if (pread(fd, eh, sizeof(*eh), 0) != sizeof(*eh) ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || !eh->e_phnum)
		return -1;
	len = eh->e_phnum * sizeof(Elf64_Phdr);
	*ph = malloc(len);
	if (*ph && pread(fd, *ph, len, eh->e_phoff) == (ssize_t)len)
		return 0;
	free(*ph);
	return -1;
}

/* The GNU build ID of the ELF file @fd, in hex in @hex (129 bytes): 0 or -1. */
static int file_build_id(int fd, char *hex)
{
	Elf64_Phdr *ph;
	Elf64_Ehdr eh;
	int i, ret = -1;

	if (read_phdrs(fd, &eh, &ph))
		return -1;
	for (i = 0; i < eh.e_phnum && ret; i++) {
		char *notes, *p, *end;

		if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > 65536)
			continue;
		notes = malloc(ph[i].p_filesz);
		if (!notes || pread(fd, notes, ph[i].p_filesz, ph[i].p_offset) !=
			      (ssize_t)ph[i].p_filesz) {
			free(notes);
			continue;
		}
		end = notes + ph[i].p_filesz;
		for (p = notes; ret && p + sizeof(Elf64_Nhdr) <= end;) {
			Elf64_Nhdr *nh = (Elf64_Nhdr *)p;
			char *name = p + sizeof(*nh);
			uint8_t *desc = (uint8_t *)name + ((nh->n_namesz + 3) & ~3);
			unsigned int k;

			if ((char *)desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz <= 64) {
				for (k = 0; k < nh->n_descsz; k++)
					sprintf(hex + 2 * k, "%02x", desc[k]);
				ret = 0;
			}
			p = (char *)desc + ((nh->n_descsz + 3) & ~3);
		}
		free(notes);
	}
	free(ph);
	return ret;
}

/*
 * The ELF file @fd's own SFrame section: its bytes (the .sframe section,
 * else the PT_GNU_SFRAME segment) in a new buffer, their size in @len and
 * the address the section was linked at in @addr; NULL if none.
 */
static void *file_own_sframe(int fd, size_t *len, uint64_t *addr)
{
	uint64_t off = 0, size = 0;
	Elf64_Shdr *sh = NULL;
	Elf64_Phdr *ph;
	Elf64_Ehdr eh;
	void *buf = NULL;
	int i;

	if (read_phdrs(fd, &eh, &ph))
		return NULL;
	for (i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_GNU_SFRAME) {
			off = ph[i].p_offset;
			size = ph[i].p_filesz;
			*addr = ph[i].p_vaddr;
		}
	}
	free(ph);
	/* The section's own size: ld's segment may run past it. */
	if (eh.e_shnum && eh.e_shentsize == sizeof(*sh) && eh.e_shstrndx < eh.e_shnum)
		sh = calloc(eh.e_shnum, sizeof(*sh));
	if (sh && pread(fd, sh, eh.e_shnum * sizeof(*sh), eh.e_shoff) ==
		  (ssize_t)(eh.e_shnum * sizeof(*sh))) {
		const Elf64_Shdr *str = &sh[eh.e_shstrndx];
		char name[8];

		for (i = 0; i < eh.e_shnum; i++) {
			if (pread(fd, name, sizeof(name), str->sh_offset + sh[i].sh_name) !=
			    sizeof(name) || memcmp(name, ".sframe", sizeof(name)))
				continue;
			off = sh[i].sh_offset;
			size = sh[i].sh_size;
			*addr = sh[i].sh_addr;
		}
	}
	free(sh);
	if (size)
		buf = malloc(size);
	if (buf && pread(fd, buf, size, off) != (ssize_t)size) {
		free(buf);
		buf = NULL;
	}
	*len = size;
	return buf;
}

/*
 * The file mapped executable in process @pid whose path ends in @suffix:
 * its path and inode, from /proc/PID/maps. 0 or -1.
 */
static int maps_find(pid_t pid, const char *suffix, char *path, size_t size,
		     unsigned long *ino)
{
	char name[64], line[PATH_MAX + 128];
	size_t sl = strlen(suffix);
	int ret = -1;
	FILE *f;

	snprintf(name, sizeof(name), "/proc/%d/maps", pid);
	f = fopen(name, "r");
	if (!f)
		return -1;
	while (ret && fgets(line, sizeof(line), f)) {
		unsigned long start, end, off, inode;
		unsigned int maj, min;
		char perms[8], *p;
		size_t pl;
		int n = 0;

		if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end,
			   perms, &off, &maj, &min, &inode, &n) < 7 || !n ||
		    perms[2] != 'x')
			continue;
		p = line + n;
		p[strcspn(p, "\n")] = 0;
		pl = strlen(p);
		if (pl < sl || strcmp(p + pl - sl, suffix))
			continue;
		snprintf(path, size, "%s", p);
		*ino = inode;
		ret = 0;
	}
	fclose(f);
	return ret;
}

/* This process's libc.so.6, as ld.so loaded it. */
static int libc_name(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *n = strrchr(info->dlpi_name, '/');

	(void)size;

	if (!n || strcmp(n, "/libc.so.6"))
		return 0;
	snprintf(arg, PATH_MAX, "%s", info->dlpi_name);
	return 1;
}

/*
 * Attach to @path, the file of inode @ino (the one a child maps), the
 * section sframe-synth made for it (relative to 0 at link time): 0 or
 * -errno (-ESTALE: another file is at @path now; -ENOENT: no section in
 * the cache).
 */
static long attach_cached(const char *path, unsigned long ino)
{
	char id[2 * 64 + 1] = "", cpath[PATH_MAX + 160];
	struct unwind_user_file f = {};
	struct stat st;
	void *sec;
	size_t len;
	long ret;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_ino != ino || file_build_id(fd, id)) {
		close(fd);
		return -ESTALE;
	}
	snprintf(cpath, sizeof(cpath), "%s/%s.sframe", cache_dir, id);
	sec = read_all(cpath, &len);
	if (!sec) {
		close(fd);
		return -ENOENT;
	}
	f.fd = fd;
	f.sframe_ptr = (uintptr_t)sec;
	f.sframe_size = len;
	f.sframe_addr = 0;
	ret = file_attach(&f);
	free(sec);
	close(fd);
	return ret;
}

/* The children: this program exec'ed, sampling itself on command. */

static volatile unsigned long sink;
static struct stacks stacks;
static int zero_fd = -1;
static char zero_buf[1 << 16];

/* The qsort workload of sframe_libc_test: the comparator called by libc. */
#define SORT_N	4096
static unsigned long sort_v[SORT_N];

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

/* Calls clock_gettime() itself: now_seconds() would be a frame more. */
NOIPA void run_work(void *arg)
{
	double seconds = *(double *)arg, end;
	unsigned long seed = 1;
	struct timespec ts;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	do {
		for (i = 0; i < 4; i++)
			sort_work(seed++);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

/*
 * System calls made in libc (read() of /dev/zero): sampled in the kernel,
 * their user stacks are deferred, walked from libc by a walk that may
 * sleep, which attaches libc's table.
 */
NOIPA void prime_work(void *arg)
{
	double seconds = *(double *)arg, end;
	struct timespec ts;
	int i;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + seconds;
	do {
		for (i = 0; i < 8; i++)
			sink += read(zero_fd, zero_buf, sizeof(zero_buf));
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
}

/*
 * clock_gettime() in a loop: most samples in the vDSO, code no table
 * describes (it keeps frame pointers).
 */
NOIPA void clock_work(void *arg)
{
	double end = now_seconds() + *(double *)arg;
	struct timespec ts;
	int i;

	do {
		for (i = 0; i < 64; i++)
			clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (now_seconds() < end);
}

/* read(2) without libc: the kernel sample's user IP in the caller. */
static __always_inline long raw_read(int fd, void *buf, size_t n)
{
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(n)
		     : "rcx", "r11", "memory");
	return ret;
}

/* Called back from libsframe_dl.so: a loop and a system call. */
NOIPA void spin_cb(void)
{
	unsigned long i, x = sink;

	for (i = 0; i < 1000; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x + raw_read(zero_fd, zero_buf, sizeof(zero_buf));
}

struct dl_run {
	void (*chain)(void (*cb)(void), unsigned long n);
	double seconds;
};

NOIPA void dl_driver(void *arg)
{
	struct dl_run *r = arg;
	double end = now_seconds() + r->seconds;

	do
		r->chain(spin_cb, 16);
	while (now_seconds() < end);
}

/* The library's call chain, up to main. */
static const char *const dl_chain[] = {
	"spin_cb", "dl_level2", "dl_level1", "dl_chain", "dl_driver",
	"sample_stacks", "sample_stacks_kernel", "child_main", "main",
};

/* The same, sampling user space only (op u) and at sample time (op D). */
static const char *const dl_chain_user[] = {
	"spin_cb", "dl_level2", "dl_level1", "dl_chain", "dl_driver",
	"sample_stacks", "child_main", "main",
};

static const char *const dl_chain_sync[] = {
	"spin_cb", "dl_level2", "dl_level1", "dl_chain", "dl_driver",
	"sample_stacks", "sample_stacks_sync", "child_main", "main",
};

/* Its first frames: the callback and the library's functions. */
#define DL_LIB_FRAMES	4

static const char *const lib_syms[] = { "dl_chain", "dl_level1", "dl_level2" };

/* The workloads' program frames, innermost first (see libc_classify()). */
static const struct libc_workload w_qsort = { {
	{ "cmp_cb", false, true }, { "sort_work", true, false },
	{ "run_work", true, false }, { "sample_stacks", true, false },
	{ "child_main", false, false }, { "main", false, false } }, 6, 3 },
w_prime = { {
	{ "prime_work", true, false }, { "sample_stacks", true, false },
	{ "sample_stacks_kernel", false, false }, { "child_main", false, false },
	{ "main", false, false } }, 5, 4 };

/* What a child found in one round, passed back through a pipe. */
struct result {
	int status;			/* 0, or where the child failed */
	unsigned int stacks, lost;
	unsigned int whole, deferred;	/* from samples, from deferred records */
	struct libc_tally t;		/* q, p: the workload's stacks */
	unsigned int in_lib;		/* dl: leaf in the library's chain */
	unsigned int lib_wrong;		/* of those, a frame not the caller */
	unsigned int lib_complete;	/* of those, every frame to main */
	/* v: stacks from clock_work to main, cut short, wrong, without it */
	unsigned int v_complete, v_cut, v_wrong, v_other;
	struct unwind_user_info before, after;
};

/*
 * Stacks whose leaf is in the library's chain, and those complete to main,
 * in a round of @op.
 */
static void classify_dl(const struct ustack *st, struct result *r, char op)
{
	const char *top = st->nr ? sym_name(st->ip[0]) : NULL;
	const char *const *chain = dl_chain;
	int k, m, n = ARRAY_SIZE(dl_chain);
	bool verbose = op != 'D';

	if (op == 'u') {
		chain = dl_chain_user;
		n = ARRAY_SIZE(dl_chain_user);
	} else if (op == 'D') {
		chain = dl_chain_sync;
		n = ARRAY_SIZE(dl_chain_sync);
	}
	for (k = 0; top && k < DL_LIB_FRAMES; k++) {
		if (strcmp(top, chain[k]))
			continue;
		r->in_lib++;
		m = stack_matches(st, chain + k, n - k);
		if (m == 1)
			r->lib_complete++;
		else if (m == -2)
			r->lib_wrong++;
		if (m != 1 && verbose && r->in_lib - r->lib_complete <= 3)
			stack_print("through the library, not complete", st, 16);
		return;
	}
}

/*
 * clock_work's chain, up to main: the vDSO's and libc's frames above it
 * (or above sample_stacks, for the calls it makes into libc itself).
 */
static const char *const clock_chain[] = {
	"clock_work", "sample_stacks", "sample_stacks_sync", "child_main", "main",
};

static void classify_clock(const struct ustack *st, struct result *r)
{
	int n = ARRAY_SIZE(clock_chain);
	int m = stack_matches(st, clock_chain, n);

	if (m == -1)
		m = stack_matches(st, clock_chain + 1, n - 1);

	if (m == 1)
		r->v_complete++;
	else if (m == 0)
		r->v_cut++;
	else if (m == -2)
		r->v_wrong++;
	else
		r->v_other++;
	if (m != 1 && r->v_cut + r->v_wrong + r->v_other <= 3)
		stack_print("clock_gettime(), not complete", st, 12);
}

static void print_clock(const char *what, const struct result *r)
{
	printf("# %s: %u stacks: %u complete, %u cut short, %u wrong, %u with none of main's frames; nofault_faults +%llu, sections %llu -> %llu\n",
	       what, r->stacks, r->v_complete, r->v_cut, r->v_wrong, r->v_other,
	       (unsigned long long)(r->after.nofault_faults - r->before.nofault_faults),
	       (unsigned long long)r->before.nr_sections,
	       (unsigned long long)r->after.nr_sections);
}

/* The executable PT_LOAD of the @n program headers at @ph, or NULL. */
static const ElfW(Phdr) *exec_segment(const ElfW(Phdr) *ph, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X))
			return &ph[i];
	}
	return NULL;
}

/*
 * The library's code as the child runs it: its executable segment where
 * dlopen() mapped it (@text, @len bytes in whole pages, @base the load
 * address), and where the chain runs from now (@at: @text, or a copy).
 */
struct lib_text {
	uintptr_t base, text, len, at;
	off_t offset;	/* the segment's in the file, a page's multiple */
};

static struct lib_text lib_text;

/* @lt from the program headers dlopen() mapped at @base: 0 or -1. */
static int lib_text_init(struct lib_text *lt, uintptr_t base)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;
	const ElfW(Phdr) *p = exec_segment((const ElfW(Phdr) *)(base + eh->e_phoff),
					   eh->e_phnum);
	uintptr_t page = sysconf(_SC_PAGESIZE);

	/* A copy of the file maps the text where dlopen() did. */
	if (!p || p->p_offset != p->p_vaddr)
		return -1;
	lt->base = base;
	lt->text = base + (p->p_vaddr & ~(page - 1));
	lt->len = (base + p->p_vaddr + p->p_memsz + page - 1) & ~(page - 1);
	lt->len -= lt->text;
	lt->offset = p->p_offset & ~(page - 1);
	lt->at = lt->text;
	return 0;
}

/* Names the library's functions in its text at @at: 0 or -1. */
static int lib_syms_at(void *h, const struct lib_text *lt, uintptr_t at)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(lib_syms); i++) {
		ElfW(Sym) *sym = NULL;
		Dl_info info;
		void *fn = dlsym(h, lib_syms[i]);

		if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) ||
		    !sym)
			return -1;
		sym_add(lib_syms[i], (uintptr_t)fn - lt->text + at, sym->st_size);
	}
	return 0;
}

/*
 * A second mapping of the library's file @lib, all of it read-only; then
 * its text made executable by mprotect(). The chain runs from there.
 */
static int lib_copy_mprotect(void *h, const char *lib, struct lib_text *lt)
{
	int fd = open(lib, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *p;

	if (fd < 0 || fstat(fd, &st) || st.st_size < lt->offset + (off_t)lt->len)
		return -1;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED ||
	    mprotect(p + lt->offset, lt->len, PROT_READ | PROT_EXEC))
		return -1;
	lt->at = (uintptr_t)p + lt->offset;
	return lib_syms_at(h, lt, lt->at);
}

/* The copy's text moved elsewhere by mremap(). */
static int lib_copy_mremap(void *h, struct lib_text *lt)
{
	void *to = mmap(NULL, lt->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);

	if (lt->at == lt->text || to == MAP_FAILED)
		return -1;
	if (mremap((void *)lt->at, lt->len, lt->len,
		   MREMAP_MAYMOVE | MREMAP_FIXED, to) != to)
		return -1;
	lt->at = (uintptr_t)to;
	return lib_syms_at(h, lt, lt->at);
}

/* A command to a child: a round of @msec ms of workload @op. */
struct cmd {
	char op;	/* q: qsort, p: prime (libc), d: the library's chain,
			 * D: the same, walked at sample time only,
			 * u: the same, user space's samples, deferred,
			 * x: the same from a copy of the library's text made
			 * executable by mprotect(), r: that copy moved by
			 * mremap() (after x), v: the vDSO at sample time,
			 * n: none */
	int msec;
};

/*
 * A child: main -> child_main, which samples a workload at each command
 * read from fd argv[2] and writes its result to fd argv[3]; argv[4], if
 * not empty, is a copy of libsframe_dl.so to dlopen() first. Ends at the
 * end of its commands.
 */
NOIPA int child_main(int argc, char **argv)
{
	int cmd_fd = atoi(argv[2]), res_fd = atoi(argv[3]);
	const char *lib = argc > 4 ? argv[4] : "";
	struct dl_run dl = {};
	void *h = NULL, *chain = NULL;
	struct cmd m;
	unsigned int i;

	if (sym_init() || libc_init())
		return 2;
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0)
		return 2;
	if (*lib) {
		Dl_info info;

		h = dlopen(lib, RTLD_NOW);
		if (!h) {
			printf("# dlopen %s: %s\n", lib, dlerror());
			return 2;
		}
		chain = dlsym(h, "dl_chain");
		if (!chain || !dladdr(chain, &info) ||
		    lib_text_init(&lib_text, (uintptr_t)info.dli_fbase) ||
		    lib_syms_at(h, &lib_text, lib_text.text))
			return 2;
	}
	while (read(cmd_fd, &m, sizeof(m)) == sizeof(m)) {
		const struct libc_workload *w = NULL;
		double seconds = m.msec / 1000.0;
		struct result r = {};
		int err = -EINVAL;

		/* Before the counts: what the change did before any walk. */
		if (h && ((m.op == 'x' && lib_copy_mprotect(h, lib, &lib_text)) ||
			  (m.op == 'r' && lib_copy_mremap(h, &lib_text))))
			r.status = 5;
		if (h)
			dl.chain = (void *)((uintptr_t)chain - lib_text.text +
					    (strchr("xr", m.op) ? lib_text.at : lib_text.text));
		if (unwind_query(&r.before))
			r.status = 3;
		stacks.nr = 0;
		/* Called here: child_main is on every stack of the chains. */
		if (m.op == 'n') {
			err = 0;
		} else if (m.op == 'q') {
			err = sample_stacks(run_work, &seconds, FREQ, &stacks);
			w = &w_qsort;
		} else if (m.op == 'v') {
			err = sample_stacks_sync(clock_work, &seconds, FREQ, &stacks);
		} else if (m.op == 'p') {
			err = sample_stacks_kernel(prime_work, &seconds, FREQ, &stacks);
			w = &w_prime;
		} else if (strchr("dxr", m.op) && dl.chain) {
			dl.seconds = seconds;
			err = sample_stacks_kernel(dl_driver, &dl, FREQ, &stacks);
		} else if (m.op == 'D' && dl.chain) {
			dl.seconds = seconds;
			err = sample_stacks_sync(dl_driver, &dl, FREQ, &stacks);
		} else if (m.op == 'u' && dl.chain) {
			dl.seconds = seconds;
			err = sample_stacks(dl_driver, &dl, FREQ, &stacks);
		}
		if (err)
			r.status = 4;
		if (unwind_query(&r.after))
			r.status = 3;
		r.stacks = stacks.nr;
		r.lost = stacks.lost;
		r.whole = stacks.whole;
		r.deferred = stacks.deferred;
		for (i = 0; i < stacks.nr; i++) {
			if (w)
				libc_classify(w, &stacks.s[i], &r.t, m.op == 'q');
			else if (strchr("dxrDu", m.op))
				classify_dl(&stacks.s[i], &r, m.op);
			else if (m.op == 'v')
				classify_clock(&stacks.s[i], &r);
		}
		fflush(stdout);
		if (write(res_fd, &r, sizeof(r)) != sizeof(r))
			return 4;
	}
	return 0;
}

/* The parent's side of a child. */
struct child {
	pid_t pid;
	int cmd, res;	/* the parent's ends of its pipes */
};

/*
 * Start a child, with @lib to dlopen() if not NULL, in a mount namespace
 * of its own where the file @over is bind-mounted over @lib if not NULL,
 * as the user @uid if not 0: 0 or -1.
 */
static int child_start_as(struct child *c, const char *lib, const char *over,
			  uid_t uid)
{
	int cmd[2], res[2];

	c->pid = 0;
	if (pipe2(cmd, O_CLOEXEC))
		return -1;
	if (pipe2(res, O_CLOEXEC)) {
		close(cmd[0]);
		close(cmd[1]);
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	c->pid = fork();
	if (!c->pid) {
		char a[16], b[16];

		/* Only its own ends: another child's would keep its EOF away. */
		fcntl(cmd[0], F_SETFD, 0);
		fcntl(res[1], F_SETFD, 0);
		snprintf(a, sizeof(a), "%d", cmd[0]);
		snprintf(b, sizeof(b), "%d", res[1]);
		if (over && (unshare(CLONE_NEWNS) ||
			     mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
			     mount(over, lib, NULL, MS_BIND, NULL)))
			_exit(126);
		if (uid && (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
			    setresuid(uid, uid, uid)))
			_exit(125);
		/* Only the objects the test knows of (run_kselftest's stdbuf). */
		unsetenv("LD_PRELOAD");
		unsetenv("LD_AUDIT");
		execl("/proc/self/exe", "sframe_file_test", CHILD_ARG, a, b,
		      lib ? lib : "", NULL);
		_exit(127);
	}
	close(cmd[0]);
	close(res[1]);
	c->cmd = cmd[1];
	c->res = res[0];
	if (c->pid < 0) {
		close(c->cmd);
		close(c->res);
		c->pid = 0;
		return -1;
	}
	return 0;
}

static int child_start(struct child *c, const char *lib)
{
	return child_start_as(c, lib, NULL, 0);
}

static int child_send(struct child *c, char op, int msec)
{
	struct cmd m = { .op = op, .msec = msec };

	return write(c->cmd, &m, sizeof(m)) == sizeof(m) ? 0 : -1;
}

/* The child's result: 0, or -1 (it died, or failed: r->status). */
static int child_recv(struct child *c, struct result *r)
{
	size_t got = 0;
	ssize_t n;

	while (got < sizeof(*r) &&
	       (n = read(c->res, (char *)r + got, sizeof(*r) - got)) > 0)
		got += n;
	if (got != sizeof(*r)) {
		r->status = -1;
		return -1;
	}
	return r->status ? -1 : 0;
}

static int child_run(struct child *c, char op, int msec, struct result *r)
{
	return child_send(c, op, msec) ? -1 : child_recv(c, r);
}

/* End the child (its commands end) and reap it: its wait status. */
static int child_stop(struct child *c)
{
	int status = -1;

	if (c->pid <= 0)
		return 0;
	close(c->cmd);
	close(c->res);
	if (waitpid(c->pid, &status, 0) != c->pid)
		status = -1;
	c->pid = 0;
	return status;
}

static void print_result(const char *what, const struct result *r)
{
	printf("# %s: %u stacks (%u lost; %u whole at sample time, %u deferred), %u in the workload (%u leaf in libc, %u through libc); %u complete (%.1f%%), %u end in libc, %u wrong, %u cut at a PLT stub\n",
	       what, r->stacks, r->lost, r->whole, r->deferred, r->t.in_work,
	       r->t.libc_leaf, r->t.through_libc, r->t.complete,
	       r->t.in_work ? 100.0 * r->t.complete / r->t.in_work : 0.0,
	       r->t.ends_in_libc, r->t.wrong, r->t.plt_cut);
	printf("#   libc return addresses %u (%u not after a call); sections %llu -> %llu, sframe_frames +%llu, fp_fallbacks +%llu, errors +%llu, dropped %llu\n",
	       r->t.libc_ras, r->t.implausible,
	       (unsigned long long)r->before.nr_sections,
	       (unsigned long long)r->after.nr_sections,
	       (unsigned long long)(r->after.sframe_frames - r->before.sframe_frames),
	       (unsigned long long)(r->after.fp_fallbacks - r->before.fp_fallbacks),
	       (unsigned long long)(r->after.errors - r->before.errors),
	       (unsigned long long)r->after.dropped);
}

static void print_dl(const char *what, const struct result *r)
{
	printf("# %s: %u stacks (%u whole at sample time, %u deferred), %u through the library, %u complete; sections %llu -> %llu, errors +%llu\n",
	       what, r->stacks, r->whole, r->deferred, r->in_lib, r->lib_complete,
	       (unsigned long long)r->before.nr_sections,
	       (unsigned long long)r->after.nr_sections,
	       (unsigned long long)(r->after.errors - r->before.errors));
}

/* libc.so.6, with the section sframe-synth made for it. */

FIXTURE(libc) {
	/* libc as this program maps it, for the teardown (a shared page) */
	char path[PATH_MAX];
};

FIXTURE_SETUP(libc)
{
	const char *why = file_ops_missing();
	char id[2 * 64 + 1] = "", cpath[PATH_MAX + 160];
	long ret;
	int fd;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, find_here());
	ASSERT_EQ(1, dl_iterate_phdr(libc_name, self->path));
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, file_build_id(fd, id)) TH_LOG("no build ID in %s", self->path);
	snprintf(cpath, sizeof(cpath), "%s/%s.sframe", cache_dir, id);
	if (access(cpath, R_OK)) {
		close(fd);
		*self->path = 0;
		SKIP(return, "no section for libc in %.200s (harness/stage-audit.sh makes it)",
		     cache_dir);
	}
	/* Start from a libc without a table, whatever an earlier run left. */
	ret = file_detach(fd);
	if (!ret)
		printf("# libc had a table already: detached\n");
	close(fd);
	ASSERT_TRUE(!ret || ret == -ENOENT) TH_LOG("detach: %s", strerror(-ret));
}

/*
 * In the harness's process, whatever became of the test: no table of libc
 * may outlive this program (the tests after it expect libc without one).
 */
FIXTURE_TEARDOWN_PARENT(libc)
{
	int fd;

	if (!*self->path)
		return;
	fd = open(self->path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		file_detach(fd);
		close(fd);
	}
}

TEST_F_TIMEOUT(libc, already_running, 120)
{
	struct result before, alone, prime, after;
	struct child c;
	char path[PATH_MAX];
	unsigned long ino;
	int fd, status;

	ASSERT_EQ(0, child_start(&c, NULL));

	/* Running, sampled: libc's frames left to the frame-pointer rule. */
	ASSERT_EQ(0, child_run(&c, 'q', 1000, &before));
	print_result("qsort before the attach", &before);
	ASSERT_GE(before.t.in_work, 20u);
	EXPECT_LT(before.t.complete * 2, before.t.in_work);
	EXPECT_GT(before.after.fp_fallbacks - before.before.fp_fallbacks, 0ull);

	/* The libc the child maps, with its section: attached. */
	ASSERT_EQ(0, maps_find(c.pid, "/libc.so.6", path, sizeof(path), &ino));
	printf("# child %d maps %s (inode %lu)\n", c.pid, path, ino);
	ASSERT_EQ(0, attach_cached(path, ino));

	/* perf alone, as a profiler would see the process: reported only. */
	ASSERT_EQ(0, child_run(&c, 'q', 500, &alone));
	print_result("qsort right after the attach, perf alone", &alone);

	/* Samples in system calls made in libc: a walk that may sleep there. */
	ASSERT_EQ(0, child_run(&c, 'p', 200, &prime));
	print_result("system calls in libc, sampled in the kernel", &prime);
	ASSERT_GT(prime.deferred, 0u) TH_LOG("no deferred stack from samples taken in the kernel");
	EXPECT_GT(prime.t.complete_libc_leaf, 0u);

	/* The same child: every stack through libc complete, no error. */
	ASSERT_EQ(0, child_run(&c, 'q', 1000, &after));
	print_result("qsort after the attach", &after);
	ASSERT_GE(after.t.in_work, 20u);
	EXPECT_GT(after.t.through_libc * 2, after.t.in_work);
	EXPECT_EQ(after.t.in_work, after.t.complete);
	EXPECT_EQ(0u, after.t.plt_cut);
	EXPECT_GT(after.t.libc_ras, 0u);
	EXPECT_EQ(0u, after.t.implausible);
	EXPECT_GE(after.after.sframe_frames - after.before.sframe_frames,
		  (unsigned long long)after.t.complete);
	/* libc is one registration more in the child's address space. */
	EXPECT_EQ(before.after.nr_sections + 1, after.after.nr_sections);
	EXPECT_EQ(before.before.errors, after.after.errors);
	EXPECT_EQ(0ull, after.after.dropped);

	/* Detached while the child still has it: the file has no table. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, file_detach(fd));
	EXPECT_EQ(-ENOENT, file_detach(fd));
	close(fd);
	status = child_stop(&c);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
}

/* What `sframe-synth attach --running` did. */
struct agent_run {
	unsigned int attached;		/* files attached */
	unsigned int held;		/* of those, opened by a path: held */
	bool found;			/* a line had what was looked for */
	int status;			/* its wait status */
	char held_paths[256][PATH_MAX];
};

/*
 * Runs `sframe-synth attach --running` into @a (0, or -1 if it could not
 * start): what it attached, the paths of the files it opened by a path
 * (whose tables hold them; at most 256 kept), and whether a line had
 * @want.
 */
static int agent_attach(struct agent_run *a, const char *want)
{
	char cmd[PATH_MAX + 64], line[2 * PATH_MAX];
	FILE *out;

	memset(a, 0, sizeof(*a));
	snprintf(cmd, sizeof(cmd), "%s/sframe-synth attach --running", here);
	out = popen(cmd, "r");
	if (!out)
		return -1;
	while (fgets(line, sizeof(line), out)) {
		char *path = line + strlen("attached "), *end;

		if (strncmp(line, "attached ", strlen("attached ")))
			continue;
		end = strstr(path, " (");
		if (!end)
			continue;
		a->attached++;
		a->found |= strstr(line, want) != NULL;
		*end = 0;
		if (!strncmp(path, "/proc/", strlen("/proc/")) || end - path >= PATH_MAX ||
		    a->held == ARRAY_SIZE(a->held_paths))
			continue;
		memcpy(a->held_paths[a->held++], path, end - path + 1);
	}
	a->status = pclose(out);
	printf("# sframe-synth attach --running: %u attached, %u held, exit %d\n",
	       a->attached, a->held, WIFEXITED(a->status) ? WEXITSTATUS(a->status) : -1);
	return 0;
}

/*
 * Detaches the tables agent_attach() saw holding their file: how many it
 * detached. The others go with their files.
 */
static unsigned int agent_detach(const struct agent_run *a)
{
	unsigned int i, detached = 0;

	for (i = 0; i < a->held; i++) {
		int fd = open(a->held_paths[i], O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			detached += !file_detach(fd);
			close(fd);
		}
	}
	printf("# detached %u of them\n", detached);
	return detached;
}

/* Is sframe-synth staged next to this program? */
static bool have_agent(void)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/sframe-synth", here);
	return !access(path, X_OK);
}

/*
 * The agent as an administrator runs it: sframe-synth attach --running
 * (staged next to this program by harness/stage-audit.sh) attaches a
 * section to every file any process maps executable, this test's child
 * among them, already running. Every file it attached is detached again
 * before anything is checked: the tests after this one expect no table.
 */
TEST_F_TIMEOUT(libc, agent_running, 180)
{
	static struct agent_run a;
	struct result before, prime, after = {};
	char real[PATH_MAX], want[PATH_MAX + 32];
	unsigned int detached;
	struct child c;
	int status;

	if (!have_agent())
		SKIP(return, "no sframe-synth next to this program");
	/*
	 * The agent names a file as its maps line does, with symbolic links
	 * resolved (/lib is one to usr/lib on a merged-/usr root).
	 */
	ASSERT_NE(NULL, realpath(self->path, real));
	snprintf(want, sizeof(want), "attached %s (", real);
	ASSERT_EQ(0, child_start(&c, NULL));
	ASSERT_EQ(0, child_run(&c, 'q', 500, &before));
	print_result("qsort before the agent", &before);

	ASSERT_EQ(0, agent_attach(&a, want));
	if (a.found) {
		/* A walk that may sleep in libc, then perf's samples. */
		child_run(&c, 'p', 200, &prime);
		child_run(&c, 'q', 1000, &after);
		print_result("qsort after the agent", &after);
	}
	/* Every file the agent attached, detached again, checks or not. */
	detached = agent_detach(&a);
	status = child_stop(&c);

	ASSERT_TRUE(WIFEXITED(a.status) && !WEXITSTATUS(a.status))
		TH_LOG("sframe-synth exit %#x", a.status);
	ASSERT_TRUE(a.found) TH_LOG("the agent did not attach %s", real);
	EXPECT_EQ(a.held, detached);
	EXPECT_LT(before.t.complete * 2, before.t.in_work);
	ASSERT_GE(after.t.in_work, 20u);
	EXPECT_EQ(after.t.in_work, after.t.complete);
	EXPECT_EQ(0u, after.t.implausible);
	EXPECT_EQ(before.before.errors, after.after.errors);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
}

TEST_F_TIMEOUT(libc, shared, 120)
{
	struct file_info t0, t1, t2, t3;
	struct child c[NR_SHARED], late[NR_LATE], pre;
	struct result r[NR_SHARED], rl, rv;
	unsigned long long cut;
	unsigned int i, attached = 0, used = 0, late_attached = 0;
	char path[PATH_MAX];
	unsigned long ino;
	int have, fd;

	/*
	 * First a walk that may sleep through code no table describes yet
	 * (libc's), in a child: the files it maps get their tables (this
	 * program's own section) before the count.
	 */
	ASSERT_EQ(0, child_start(&pre, NULL));
	ASSERT_EQ(0, child_run(&pre, 'p', 200, &rv));
	EXPECT_EQ(0, child_stop(&pre));
	have = query_files(&t0);
	ASSERT_LE(0, have);
	if (have)
		printf("# before: %llu file tables, %llu bytes\n",
		       (unsigned long long)t0.file_tables,
		       (unsigned long long)t0.file_bytes);
	/* Started, and running (exec'ed, libc mapped) before the attach. */
	for (i = 0; i < NR_SHARED; i++)
		ASSERT_EQ(0, child_start(&c[i], NULL));
	for (i = 0; i < NR_SHARED; i++)
		ASSERT_EQ(0, child_run(&c[i], 'n', 0, &r[i]));
	ASSERT_EQ(0, child_start(&pre, NULL));
	ASSERT_EQ(0, child_run(&pre, 'n', 0, &rv));

	/* One attach, for all of them. */
	ASSERT_EQ(0, maps_find(c[0].pid, "/libc.so.6", path, sizeof(path), &ino));
	ASSERT_EQ(0, attach_cached(path, ino));
	ASSERT_EQ(have, query_files(&t1));
	if (have) {
		printf("# attached: %llu file tables, %llu bytes\n",
		       (unsigned long long)t1.file_tables,
		       (unsigned long long)t1.file_bytes);
		EXPECT_EQ(t0.file_tables + 1, t1.file_tables);
		EXPECT_LT(t0.file_bytes, t1.file_bytes);
	}

	/* Each takes walks that may sleep through libc, all at once. */
	for (i = 0; i < NR_SHARED; i++)
		ASSERT_EQ(0, child_send(&c[i], 'p', 400));
	for (i = 0; i < NR_SHARED; i++) {
		unsigned int round;

		EXPECT_EQ(0, child_recv(&c[i], &r[i]))
			TH_LOG("child %u: status %d", i, r[i].status);
		if (r[i].status)
			continue;
		attached += r[i].after.nr_sections == r[i].before.nr_sections + 1;
		/*
		 * A child the others starved of CPU time may have had no
		 * sample in its workload (one or two, in ld.so's lazy
		 * binding): it walks again, alone. A child whose stacks in
		 * the workload were not complete does not.
		 */
		for (round = 0; round < 2 && !r[i].t.in_work; round++) {
			print_result("child with no stack in its workload yet", &r[i]);
			if (child_run(&c[i], 'p', 400, &r[i]) || r[i].status)
				break;
		}
		used += r[i].t.complete_libc_leaf > 0;
		if (!r[i].deferred || !r[i].t.complete_libc_leaf)
			print_result("child without a complete stack through libc", &r[i]);
	}
	printf("# %u children: %u got libc attached, %u a complete stack from libc\n",
	       NR_SHARED, attached, used);
	EXPECT_EQ((unsigned int)NR_SHARED, attached);
	EXPECT_EQ((unsigned int)NR_SHARED, used);

	/*
	 * Sampled at NMI/IRQ time only, in code no table describes (the
	 * vDSO): a process that mapped libc before the attach has its first
	 * such walk end there, counted in nofault_faults, and the deferred
	 * unwind that walk asks for attaches libc's table.
	 */
	ASSERT_EQ(0, child_run(&pre, 'v', 300, &rv));
	cut = rv.after.nofault_faults - rv.before.nofault_faults;
	print_clock("started before the attach, sampled at NMI/IRQ time", &rv);
	EXPECT_LE(1, cut);
	EXPECT_EQ(rv.before.nr_sections + 1, rv.after.nr_sections);
	/*
	 * Those cut (to ask, or by the frame-pointer rule in libc before
	 * the attach) end in libc, short of main's frames: never wrong.
	 */
	EXPECT_EQ(0, rv.v_wrong);
	EXPECT_LE(rv.v_other * 50, rv.stacks);
	EXPECT_EQ(0, child_stop(&pre));

	/*
	 * Started after the attach: each has libc's table from its exec
	 * (ld.so's mmap of libc), before any walk, and its walks at NMI/IRQ
	 * time never stop to ask for tables.
	 */
	for (i = 0; i < NR_LATE; i++)
		ASSERT_EQ(0, child_start(&late[i], NULL));
	for (i = 0; i < NR_LATE; i++) {
		ASSERT_EQ(0, child_run(&late[i], 'n', 0, &rl));
		late_attached += rl.before.nr_sections == r[0].after.nr_sections;
	}
	printf("# %u children started after the attach: %u had libc's table from exec\n",
	       NR_LATE, late_attached);
	EXPECT_EQ((unsigned int)NR_LATE, late_attached);
	ASSERT_EQ(0, child_run(&late[0], 'v', 300, &rv));
	print_clock("started after the attach, sampled at NMI/IRQ time", &rv);
	EXPECT_LT(100, rv.stacks);
	EXPECT_EQ(0, rv.after.nofault_faults - rv.before.nofault_faults);
	/* Never a wrong frame; a stack that ends early, once in a while. */
	EXPECT_EQ(0, rv.v_wrong);
	EXPECT_LE((rv.stacks - rv.v_complete) * 100, rv.stacks);

	/* Still one table, of the same size, while they all have it. */
	ASSERT_EQ(have, query_files(&t2));
	if (have) {
		printf("# %u processes with libc's table: %llu file tables, %llu bytes\n",
		       attached + late_attached,
		       (unsigned long long)t2.file_tables,
		       (unsigned long long)t2.file_bytes);
		EXPECT_EQ(t1.file_tables, t2.file_tables);
		EXPECT_EQ(t1.file_bytes, t2.file_bytes);
	}
	for (i = 0; i < NR_SHARED + NR_LATE; i++) {
		int status = child_stop(i < NR_SHARED ? &c[i] : &late[i - NR_SHARED]);

		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("child %u status %#x", i, status);
	}

	/* Detached: back to where it was. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, file_detach(fd));
	close(fd);
	ASSERT_EQ(have, query_files(&t3));
	if (!have) {
		/* Not a skip if something failed: that would hide it. */
		if (_metadata->exit_code == KSFT_PASS)
			SKIP(return, "no file_tables in UNWIND_USER_QUERY: the table was not counted");
		return;
	}
	EXPECT_EQ(t0.file_tables, t3.file_tables);
	EXPECT_EQ(t0.file_bytes, t3.file_bytes);
}

/*
 * exec of this program, with libc's table attached, with the n-th
 * allocation failing (fail-nth survives exec): the exec fails cleanly or
 * succeeds, and the new program (FAULT_CHILD_ARG) has libc's table from
 * ld.so's mmap of libc or, where the failure kept mmap from attaching
 * it, from its first walk that may sleep through libc.
 */
#define FAULT_CHILD_ARG	"--fault-child"
#define MAX_NTH_EXEC	2000

enum fault_child_status {
	FC_CLEAN = 0,		/* no failure met, libc's table from exec */
	FC_EXEC_FAILED = 1,	/* exec itself failed, from the injection */
	FC_ERROR = 3,		/* the test's own set-up failed */
	FC_NO_TABLE = 4,	/* no failure met, but no table: a bug */
	FC_HIT = 5,		/* failure met, libc's table from exec */
	FC_HIT_WALK = 6,	/* failure met, the table from the first walk */
	FC_HIT_NEVER = 7,	/* failure met, the table never attached: a bug */
};

/*
 * The type of the file system @path is on (its mount's, by device
 * number, from /proc/self/mountinfo) into @type, or "" if none matched.
 * Not statfs(): 9p reports the server's file system type.
 */
static void fs_type_of(const char *path, char *type, size_t len)
{
	char line[1024], fstype[64], *dash;
	unsigned int major, minor;
	struct stat st;
	FILE *f;

	type[0] = 0;
	if (stat(path, &st))
		return;
	f = fopen("/proc/self/mountinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*u %*u %u:%u", &major, &minor) != 2 ||
		    makedev(major, minor) != st.st_dev)
			continue;
		/* The last such mount is the one on top. */
		if (sscanf(dash, " - %63s", fstype) == 1)
			snprintf(type, len, "%s", fstype);
	}
	fclose(f);
}

/*
 * Is @path on a network file system, or an overlay that may be over one?
 * Failures injected into a task that opens and releases files there can
 * break the file system's client for every task (9p: see
 * sframe_fault_test's exec case), which is not the unwinder's to test.
 */
static bool on_network_fs(const char *path)
{
	static const char *const network[] = {
		"9p", "nfs", "nfs4", "cifs", "smb3", "ceph", "virtiofs", "fuse", "overlay",
	};
	char type[64];
	unsigned int i;

	fs_type_of(path, type, sizeof(type));
	for (i = 0; i < ARRAY_SIZE(network); i++) {
		if (!strncmp(type, network[i], strlen(network[i])))
			return true;
	}
	return false;
}

TEST_F_TIMEOUT(libc, fault_injection_exec, 300)
{
	unsigned int n, failed = 0, hit = 0, walk = 0, startup = 0;
	const char *why = fail_nth_missing();
	char path[PATH_MAX];
	unsigned long ino;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, maps_find(getpid(), "/libc.so.6", path, sizeof(path), &ino));
	/*
	 * What the new program opens and releases with the failures
	 * injected: itself, libc (ld.so beside it) and /etc/ld.so.preload.
	 */
	const char *const opened[] = { "/proc/self/exe", path, "/etc" };

	for (n = 0; n < ARRAY_SIZE(opened); n++) {
		if (on_network_fs(opened[n]))
			SKIP(return, "%s is on a network file system, whose client an injected failure can break for every task",
			     opened[n]);
	}
	ASSERT_EQ(0, attach_cached(path, ino));

	for (n = 1; n < MAX_NTH_EXEC; n++) {
		int status, pipefd[2];
		char r = 0;
		pid_t pid;

		ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
		fflush(stdout);
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			unsetenv("LD_PRELOAD");
			unsetenv("LD_AUDIT");
			/* The inherited file is the parent thread's. */
			fail_nth_close();
			if (fail_nth_open() || fail_nth(n))
				_exit(FC_ERROR);
			execl("/proc/self/exe", "sframe_file_test", FAULT_CHILD_ARG, NULL);
			r = fail_nth_hit() ? 'f' : 'e';
			if (write(pipefd[1], &r, 1) != 1)
				_exit(FC_ERROR);
			_exit(FC_EXEC_FAILED);
		}
		close(pipefd[1]);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		if (read(pipefd[0], &r, 1) != 1)
			r = 0;
		close(pipefd[0]);
		status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		switch (status) {
		case FC_EXEC_FAILED:
			ASSERT_EQ('f', r) TH_LOG("exec failed without the injection (%u)", n);
			failed++;
			continue;
		case FC_HIT:
			hit++;
			continue;
		case FC_HIT_WALK:
			walk++;
			continue;
		case FC_CLEAN:
			break;
		default:
			ASSERT_NE(FC_NO_TABLE, status) TH_LOG("no table without a failure (%u)", n);
			ASSERT_NE(FC_HIT_NEVER, status)
				TH_LOG("allocation %u failing: libc's table never attached", n);
			ASSERT_NE(FC_ERROR, status);
			/* Killed, or ld.so or libc gave up: user space's business. */
			startup++;
			continue;
		}
		break;
	}
	printf("# exec with libc's table: %u injection points, %u execs failed cleanly, %u met it and had the table, %u got it from their first walk, %u did not start\n",
	       n - 1, failed, hit, walk, startup);
	ASSERT_LT(n, (unsigned int)MAX_NTH_EXEC);
	EXPECT_GT(failed + walk, 0u);
}

/*
 * A private copy of libsframe_dl.so whose PT_GNU_SFRAME program header is
 * made PT_NULL: the kernel would otherwise build the file's table from that
 * segment itself, and the tests of the ABI want the agent's table alone.
 * Its .sframe section is still there for the agent to attach.
 */

struct lib_copy {
	char tmp[PATH_MAX / 4];
	char path[PATH_MAX / 2];
	void *elf;		/* the library's bytes */
	size_t elf_len;
	int fd;			/* the copy, read-only */
	void *sec;		/* its .sframe */
	size_t len;
	uint64_t addr;		/* where .sframe was linked */
};

/* Makes the PT_GNU_SFRAME header of the ELF file @elf PT_NULL: 0 or -1. */
static int hide_own_sframe(void *elf, size_t len)
{
	const Elf64_Ehdr *eh = elf;
	Elf64_Phdr *ph;
	int i, hidden = 0;

	if (len < sizeof(*eh) || eh->e_phentsize != sizeof(*ph) ||
	    eh->e_phoff > len || (len - eh->e_phoff) / sizeof(*ph) < eh->e_phnum)
		return -1;
	ph = (Elf64_Phdr *)((char *)elf + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_GNU_SFRAME) {
			ph[i].p_type = PT_NULL;
			hidden++;
		}
	}
	return hidden == 1 ? 0 : -1;
}

/* 0, 1 if there is no library to copy, -1 on error. */
static int lib_copy_init(struct lib_copy *lc)
{
	const char *t = getenv("TMPDIR");
	char src[PATH_MAX];

	lc->fd = -1;
	if (find_here())
		return -1;
	snprintf(src, sizeof(src), "%s/libsframe_dl.so", here);
	lc->elf = read_all(src, &lc->elf_len);
	if (!lc->elf)
		return 1;
	if (hide_own_sframe(lc->elf, lc->elf_len))
		return -1;
	snprintf(lc->tmp, sizeof(lc->tmp), "%s/sframe_file_test.XXXXXX",
		 t && *t ? t : "/tmp");
	if (!mkdtemp(lc->tmp)) {
		*lc->tmp = 0;
		return -1;
	}
	snprintf(lc->path, sizeof(lc->path), "%s/libsframe_dl.so", lc->tmp);
	if (write_new(lc->path, lc->elf, lc->elf_len))
		return -1;
	lc->fd = open(lc->path, O_RDONLY | O_CLOEXEC);
	if (lc->fd < 0)
		return -1;
	lc->sec = file_own_sframe(lc->fd, &lc->len, &lc->addr);
	return lc->sec ? 0 : -1;
}

static void lib_copy_fini(struct lib_copy *lc)
{
	if (lc->fd >= 0) {
		file_detach(lc->fd);
		close(lc->fd);
	}
	if (*lc->tmp)
		remove_dir(lc->tmp);
	free(lc->sec);
	free(lc->elf);
	memset(lc, 0, sizeof(*lc));
	lc->fd = -1;
}

static struct unwind_user_file file_of(const struct lib_copy *lc)
{
	struct unwind_user_file f = {
		.fd = lc->fd,
		.sframe_ptr = (uintptr_t)lc->sec,
		.sframe_size = lc->len,
		.sframe_addr = lc->addr,
	};

	return f;
}

/*
 * The setup of the fixtures with a copy: skip without the operations or
 * the library, else the copy in @lc, and whether the kernel counts the
 * machine's tables in @have (those it has now in @t0).
 */
static void lib_fixture_setup(struct __test_metadata *_metadata,
			      struct lib_copy *lc, int *have,
			      struct file_info *t0)
{
	const char *why = file_ops_missing();
	int ret;

	lc->fd = -1;
	if (why)
		SKIP(return, "%s", why);
	ret = lib_copy_init(lc);
	if (ret)
		lib_copy_fini(lc);
	if (ret == 1)
		SKIP(return, "no libsframe_dl.so next to this program");
	ASSERT_EQ(0, ret) TH_LOG("copy of libsframe_dl.so: %s", strerror(errno));
	*have = query_files(t0);
	ASSERT_LE(0, *have);
}

FIXTURE(lib) {
	struct lib_copy lc;
	struct file_info t0;	/* the machine's tables before the test */
	int have;		/* whether the kernel counts them */
};

FIXTURE_SETUP(lib)
{
	lib_fixture_setup(_metadata, &self->lc, &self->have, &self->t0);
}

FIXTURE_TEARDOWN(lib)
{
	lib_copy_fini(&self->lc);
}

/* The machine's tables: @tables more than before the test, if counted. */
static void expect_tables(struct __test_metadata *_metadata,
			  FIXTURE_DATA(lib) *self, unsigned long long tables)
{
	struct file_info now;

	ASSERT_EQ(self->have, query_files(&now));
	if (self->have)
		EXPECT_EQ(self->t0.file_tables + tables, now.file_tables);
}

/* Every argument that is wrong, and what it must give; no table after. */
TEST_F(lib, errors)
{
	const struct unwind_user_file f = file_of(&self->lc);
	const char *max_path = "/proc/sys/kernel/unwind_user_file_bytes_max";
	size_t page = sysconf(_SC_PAGESIZE);
	struct unwind_user_file g;
	char *big, *none, old[32] = "";
	int fd, rw;
	long ret;

	/* File descriptors. */
	g = f;
	g.fd = -1;
	EXPECT_EQ(-EBADF, file_attach(&g));
	fd = dup(f.fd);
	ASSERT_LE(0, fd);
	close(fd);
	g.fd = fd;
	EXPECT_EQ(-EBADF, file_attach(&g));
	EXPECT_EQ(-EBADF, file_detach(fd));
	EXPECT_EQ(-EBADF, file_detach(-1));

	/* Flags, unused arguments. */
	g = f;
	g.flags = UNWIND_USER_FILE_F_NO_HOLD << 1;
	EXPECT_EQ(-EINVAL, file_attach(&g));
	g.flags = 1u << 31;
	EXPECT_EQ(-EINVAL, file_attach(&g));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_FILE_ATTACH, (unsigned long)&f,
					sizeof(f), 1));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_FILE_DETACH, f.fd, 1, 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_FILE_DETACH, f.fd, 0, 1));

	/* The struct's size, as copy_struct_from_user(). */
	EXPECT_EQ(-EINVAL, attach_size(&f, 0));
	EXPECT_EQ(-EINVAL, attach_size(&f, 24));
	EXPECT_EQ(-EINVAL, attach_size(&f, UNWIND_USER_FILE_SIZE_VER0 - 1));
	big = calloc(1, 2 * page);
	ASSERT_NE(NULL, big);
	memcpy(big, &f, sizeof(f));
	EXPECT_EQ(-E2BIG, attach_size(big, page + 8));
	big[sizeof(f) + 3] = 1;
	EXPECT_EQ(-E2BIG, attach_size(big, sizeof(f) + 8));
	expect_tables(_metadata, self, 0);
	/* A longer struct with zeros past the fields, up to a page: taken. */
	big[sizeof(f) + 3] = 0;
	EXPECT_EQ(0, attach_size(big, sizeof(f) + 8));
	EXPECT_EQ(0, file_detach(f.fd));
	EXPECT_EQ(0, attach_size(big, page));
	EXPECT_EQ(0, file_detach(f.fd));
	free(big);

	/* The section's size. */
	g = f;
	g.sframe_size = 0;
	EXPECT_EQ(-EINVAL, file_attach(&g));
	g.sframe_size = MAX_SFRAME_SIZE + 1;
	EXPECT_EQ(-E2BIG, file_attach(&g));
	g.sframe_size = ~0ull;
	EXPECT_EQ(-E2BIG, file_attach(&g));

	/*
	 * Bytes that cannot be read: the section (in a page without access,
	 * at 0, or running from a readable page into one), the struct.
	 */
	none = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, none);
	ASSERT_EQ(0, mprotect(none + page, page, PROT_NONE));
	memcpy(none + page - f.sframe_size, (void *)(uintptr_t)f.sframe_ptr,
	       f.sframe_size);
	g = f;
	g.sframe_ptr = (uintptr_t)none + page;
	EXPECT_EQ(-EFAULT, file_attach(&g));
	g.sframe_ptr = 0;
	EXPECT_EQ(-EFAULT, file_attach(&g));
	g.sframe_ptr = (uintptr_t)none + page - f.sframe_size;
	g.sframe_size = f.sframe_size + 1;
	EXPECT_EQ(-EFAULT, file_attach(&g));
	EXPECT_EQ(-EFAULT, attach_size(none + page, sizeof(f)));
	munmap(none, 2 * page);

	/* Functions outside the file's executable segment. */
	g = f;
	g.sframe_addr = f.sframe_addr + (1ull << 30);
	EXPECT_EQ(-ERANGE, file_attach(&g));

	/* Open for writing: here, or by itself. */
	rw = open(self->lc.path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, rw);
	EXPECT_EQ(-ETXTBSY, file_attach(&f));
	g = f;
	g.fd = rw;
	EXPECT_EQ(-ETXTBSY, file_attach(&g));
	close(rw);
	rw = open(self->lc.path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, rw);
	EXPECT_EQ(-ETXTBSY, file_attach(&f));
	close(rw);
	expect_tables(_metadata, self, 0);
	/* The writer gone: taken. */
	EXPECT_EQ(0, file_attach(&f));
	expect_tables(_metadata, self, 1);
	EXPECT_EQ(0, file_detach(f.fd));

	/* The machine's budget (this implementation's sysctl, if there). */
	fd = open(max_path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && pread(fd, old, sizeof(old) - 1, 0) > 0) {
		ASSERT_EQ(0, write_text(max_path, "1"));
		ret = file_attach(&f);
		ASSERT_EQ(0, write_text(max_path, old));
		EXPECT_EQ(-ENOSPC, ret);
	} else {
		printf("# no %s: ENOSPC not checked\n", max_path);
	}
	if (fd >= 0)
		close(fd);

	/* None of these left a table. */
	EXPECT_EQ(-ENOENT, file_detach(f.fd));
	expect_tables(_metadata, self, 0);
}

/* A file made from the library's bytes, changed by @patch: ENOEXEC. */
static long attach_modified(struct lib_copy *lc, const char *name, size_t len,
			    void (*patch)(char *elf))
{
	struct unwind_user_file f = file_of(lc);
	char path[PATH_MAX], *buf = malloc(lc->elf_len);
	long ret = -EIO;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, lc->elf, lc->elf_len);
	if (patch)
		patch(buf);
	snprintf(path, sizeof(path), "%s/%s", lc->tmp, name);
	/* Written, and closed: a writer would make it ETXTBSY. */
	if (!write_new(path, buf, len)) {
		f.fd = open(path, O_RDONLY | O_CLOEXEC);
		ret = f.fd < 0 ? -EIO : file_attach(&f);
		if (!ret)
			file_detach(f.fd);
		if (f.fd >= 0)
			close(f.fd);
	}
	free(buf);
	return ret;
}

static Elf64_Phdr *phdr(char *elf, int i)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;

	return (Elf64_Phdr *)(elf + eh->e_phoff) + i;
}

/* The executable PT_LOAD (@x), or the first other one. */
static int load_index(char *elf, bool x)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
	int i;

	for (i = 0; i < eh->e_phnum; i++)
		if (phdr(elf, i)->p_type == PT_LOAD &&
		    !!(phdr(elf, i)->p_flags & PF_X) == x)
			return i;
	return 0;
}

static void elf32(char *elf)
{
	elf[EI_CLASS] = ELFCLASS32;
}

static void big_endian(char *elf)
{
	elf[EI_DATA] = ELFDATA2MSB;
}

static void aarch64(char *elf)
{
	((Elf64_Ehdr *)elf)->e_machine = EM_AARCH64;
}

static void relocatable(char *elf)
{
	((Elf64_Ehdr *)elf)->e_type = ET_REL;
}

static void no_exec_load(char *elf)
{
	phdr(elf, load_index(elf, true))->p_flags &= ~PF_X;
}

static void two_exec_loads(char *elf)
{
	phdr(elf, load_index(elf, false))->p_flags |= PF_X;
}

static void phdrs_past_end(char *elf)
{
	((Elf64_Ehdr *)elf)->e_phoff = 1ull << 40;
}

/* What is not one regular x86-64 ELF64 file with one executable segment. */
TEST_F(lib, not_elf)
{
	static const struct {
		const char *name;
		void (*patch)(char *elf);
		size_t len;	/* or the whole library */
	} bad[] = {
		{ "elf32", elf32, 0 },
		{ "big-endian", big_endian, 0 },
		{ "aarch64", aarch64, 0 },
		{ "relocatable", relocatable, 0 },
		{ "no-exec-load", no_exec_load, 0 },
		{ "two-exec-loads", two_exec_loads, 0 },
		{ "phdrs-past-end", phdrs_past_end, 0 },
		{ "half-ehdr", NULL, sizeof(Elf64_Ehdr) / 2 },
		{ "ehdr-only", NULL, sizeof(Elf64_Ehdr) },
	};
	struct unwind_user_file f = file_of(&self->lc);
	char path[PATH_MAX];
	unsigned int i;
	int p[2];

	/* A text file, an empty one; a directory, a device, a pipe. */
	snprintf(path, sizeof(path), "%s/text", self->lc.tmp);
	ASSERT_EQ(0, write_new(path, "not an ELF file\n", 16));
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f.fd);
	EXPECT_EQ(-ENOEXEC, file_attach(&f));
	/* A regular file without a table. */
	EXPECT_EQ(-ENOENT, file_detach(f.fd));
	close(f.fd);
	snprintf(path, sizeof(path), "%s/empty", self->lc.tmp);
	ASSERT_EQ(0, write_new(path, "", 0));
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f.fd);
	EXPECT_EQ(-ENOEXEC, file_attach(&f));
	close(f.fd);
	f.fd = open(self->lc.tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_LE(0, f.fd);
	EXPECT_EQ(-ENOEXEC, file_attach(&f));
	close(f.fd);
	f.fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f.fd);
	EXPECT_EQ(-ENOEXEC, file_attach(&f));
	close(f.fd);
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	f.fd = p[0];
	EXPECT_EQ(-ENOEXEC, file_attach(&f));
	close(p[0]);
	close(p[1]);

	/* The library with its headers changed, the section unchanged. */
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		const char *name = bad[i].name;
		long ret = attach_modified(&self->lc, name,
					   bad[i].len ?: self->lc.elf_len,
					   bad[i].patch);

		EXPECT_EQ(-ENOEXEC, ret) TH_LOG("%s", name);
	}
	/* And unchanged: taken (the section is right for it). */
	EXPECT_EQ(0, attach_modified(&self->lc, "unchanged", self->lc.elf_len, NULL));
	expect_tables(_metadata, self, 0);
}

static uint32_t get32(const uint8_t *b, size_t off)
{
	uint32_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static void put32(uint8_t *b, size_t off, uint32_t v)
{
	memcpy(b + off, &v, sizeof(v));
}

/* The section in @b, @len bytes long: the errno of its attach. */
static long attach_bytes(const struct lib_copy *lc, const void *b, size_t len)
{
	struct unwind_user_file f = file_of(lc);
	long ret;

	f.sframe_ptr = (uintptr_t)b;
	f.sframe_size = len;
	ret = file_attach(&f);
	if (!ret)
		file_detach(f.fd);
	return ret;
}

/* Malformed sections: refused for what they are, and never a crash. */
TEST_F(lib, malformed)
{
	const uint8_t *sec = self->lc.sec;
	size_t len = self->lc.len, end, i;
	unsigned int taken = 0, refused = 0, k;
	uint8_t *b = malloc(len);
	long ret;

	ASSERT_NE(NULL, b);
	ASSERT_GE(len, (size_t)SFH_SIZE);
	/* Where the section ends by its header. */
	end = SFH_SIZE + sec[SFH_AUXHDR_LEN] + get32(sec, SFH_FREOFF) +
	      get32(sec, SFH_FRE_LEN);
	ASSERT_EQ(len, end);
	EXPECT_EQ(0, attach_bytes(&self->lc, sec, len));

#define TRY(err, what) do {						\
		EXPECT_EQ(err, attach_bytes(&self->lc, b, len)) TH_LOG("%s", what); \
		memcpy(b, sec, len);					\
	} while (0)
	memcpy(b, sec, len);
	b[0] = 0;
	b[1] = 0;
	TRY(-EBADMSG, "no magic");
	b[0] = sec[1];
	b[1] = sec[0];
	TRY(-EOPNOTSUPP, "magic of the other byte order");
	b[SFH_VERSION] = 99;
	TRY(-EOPNOTSUPP, "version 99");
	b[SFH_ABI] = 99;
	TRY(-EOPNOTSUPP, "ABI 99");
	b[SFH_FLAGS] |= 0x80;
	TRY(-EBADMSG, "an unknown flag");
	put32(b, SFH_NUM_FDES, 0x7fffffff);
	TRY(-EBADMSG, "too many FDEs");
	put32(b, SFH_NUM_FRES, 0x7fffffff);
	TRY(-EBADMSG, "too many FREs");
	put32(b, SFH_FRE_LEN, get32(sec, SFH_FRE_LEN) + 1000);
	TRY(-EBADMSG, "FRE area past the end");
	put32(b, SFH_FREOFF, 0xfffffff0);
	TRY(-EBADMSG, "FRE offset past the end");
#undef TRY
	/* Truncated: in the header, in the FDEs, by one byte. */
	EXPECT_EQ(-EBADMSG, attach_bytes(&self->lc, sec, 1));
	EXPECT_EQ(-EBADMSG, attach_bytes(&self->lc, sec, SFH_SIZE - 1));
	EXPECT_EQ(-EBADMSG, attach_bytes(&self->lc, sec, SFH_SIZE + 4));
	EXPECT_EQ(-EBADMSG, attach_bytes(&self->lc, sec, len / 2));
	EXPECT_EQ(-EBADMSG, attach_bytes(&self->lc, sec, len - 1));

	/*
	 * Random bytes changed: whatever the kernel makes of them, a table
	 * or a refusal for what the section is, never anything else.
	 */
	srandom(1);
	for (k = 0; k < 500; k++) {
		unsigned int n = 1 + random() % 4;

		memcpy(b, sec, len);
		while (n--) {
			i = random() % len;
			b[i] ^= 1 + random() % 255;
		}
		ret = attach_bytes(&self->lc, b, len);
		if (!ret) {
			taken++;
			continue;
		}
		refused++;
		EXPECT_TRUE(ret == -EBADMSG || ret == -EOPNOTSUPP || ret == -ERANGE)
			TH_LOG("mutation %u: %s", k, strerror(-ret));
	}
	printf("# 500 random mutations of the section: %u taken, %u refused\n",
	       taken, refused);
	free(b);
	EXPECT_EQ(-ENOENT, file_detach(self->lc.fd));
	expect_tables(_metadata, self, 0);
}

/* Exit statuses of the unprivileged children: which check failed. */
enum {
	DROP_FAILED = 10,
	ATTACH_NOT_EPERM,
	DETACH_NOT_EPERM,
	PERFMON_DETACH,
	PERFMON_ATTACH,
	QUERY_SHOWS_TABLES,
	PERFMON_QUERY,
};

/* This process as uid and gid 65534, with capabilities @caps_lo, @caps_hi. */
static int drop_to_nobody_caps(uint32_t caps_lo, uint32_t caps_hi)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2] = {};

	if ((caps_lo || caps_hi) && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		return -1;
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534))
		return -1;
	if (!caps_lo && !caps_hi)
		return 0;
	data[0].effective = caps_lo;
	data[0].permitted = caps_lo;
	data[1].effective = caps_hi;
	data[1].permitted = caps_hi;
	return syscall(SYS_capset, &hdr, data);
}

/* This process as uid and gid 65534, with capabilities 32 to 63 @caps_hi. */
static int drop_to_nobody(uint32_t caps_hi)
{
	return drop_to_nobody_caps(0, caps_hi);
}

/*
 * Another user can neither attach nor detach (EPERM), not even a table
 * root attached, nor count the machine's tables (UNWIND_USER_QUERY gives
 * 0); CAP_PERFMON alone is enough for all three.
 */
TEST_F(lib, unprivileged)
{
	const struct unwind_user_file f = file_of(&self->lc);
	struct file_info fi;
	int status;
	pid_t pid;

	if (geteuid())
		SKIP(return, "not root: no other user to become");
	ASSERT_EQ(0, file_attach(&f));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* The uid change clears the capabilities. */
		if (drop_to_nobody(0))
			_exit(DROP_FAILED);
		if (file_attach(&f) != -EPERM)
			_exit(ATTACH_NOT_EPERM);
		if (file_detach(f.fd) != -EPERM)
			_exit(DETACH_NOT_EPERM);
		/* What other users run is not another user's to count. */
		if (self->have && (query_files(&fi) != 1 || fi.file_tables || fi.file_bytes))
			_exit(QUERY_SHOWS_TABLES);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("status %#x", status);
	/* Still attached. */
	expect_tables(_metadata, self, 1);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (drop_to_nobody(1u << (CAP_PERFMON - 32)))
			_exit(DROP_FAILED);
		if (file_detach(f.fd))
			_exit(PERFMON_DETACH);
		if (file_attach(&f))
			_exit(PERFMON_ATTACH);
		if (self->have && (query_files(&fi) != 1 || !fi.file_tables))
			_exit(PERFMON_QUERY);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("status %#x", status);
	EXPECT_EQ(0, file_detach(f.fd));
	EXPECT_EQ(-ENOENT, file_detach(f.fd));
	expect_tables(_metadata, self, 0);
}

/* Detach, attach again; attach again replaces; one table per file. */
TEST_F(lib, detach_attach_again)
{
	const struct unwind_user_file f = file_of(&self->lc);
	struct unwind_user_file g = f;
	struct file_info one, now;
	int fd;

	EXPECT_EQ(-ENOENT, file_detach(f.fd));
	ASSERT_EQ(0, file_attach(&f));
	ASSERT_EQ(self->have, query_files(&one));
	if (self->have) {
		printf("# libsframe_dl.so's table: %llu bytes\n",
		       (unsigned long long)(one.file_bytes - self->t0.file_bytes));
		EXPECT_EQ(self->t0.file_tables + 1, one.file_tables);
		EXPECT_LT(self->t0.file_bytes, one.file_bytes);
	}
	EXPECT_EQ(0, file_detach(f.fd));
	expect_tables(_metadata, self, 0);
	EXPECT_EQ(-ENOENT, file_detach(f.fd));

	ASSERT_EQ(0, file_attach(&f));
	/* Again, and through another open file of the same file: replaced. */
	ASSERT_EQ(0, file_attach(&f));
	fd = open(self->lc.path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	g.fd = fd;
	ASSERT_EQ(0, file_attach(&g));
	ASSERT_EQ(self->have, query_files(&now));
	if (self->have) {
		EXPECT_EQ(one.file_tables, now.file_tables);
		EXPECT_EQ(one.file_bytes, now.file_bytes);
	}
	/* One table for the file, whichever open file names it. */
	EXPECT_EQ(0, file_detach(fd));
	EXPECT_EQ(-ENOENT, file_detach(f.fd));
	close(fd);
	expect_tables(_metadata, self, 0);
}

/*
 * The library's code run from a second mapping of its file, read-only when
 * mapped and then made executable by mprotect(), in an address space whose
 * files are all attached already: the copy gets the file's table at
 * mprotect(), before any walk, and its stacks are as complete as those
 * through the text dlopen() mapped. Then the copy's text moved by
 * mremap(): its registration goes with the old place, and the table is
 * attached at the new one, at mremap() too.
 */
TEST_F_TIMEOUT(lib, remapped, 120)
{
	const struct unwind_user_file f = file_of(&self->lc);
	struct result d, x, r;
	struct child c;
	int status, ret;

	ASSERT_EQ(0, file_attach(&f));
	ASSERT_EQ(0, child_start(&c, self->lc.path));
	ret = child_run(&c, 'd', 300, &d);
	if (!ret)
		ret = child_run(&c, 'x', 500, &x);
	if (!ret)
		ret = child_run(&c, 'r', 500, &r);
	status = child_stop(&c);
	ASSERT_EQ(0, ret) TH_LOG("child: status %d, %d, %d", d.status,
				 x.status, r.status);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	print_dl("dlopen()'s text", &d);
	print_dl("a copy made executable by mprotect()", &x);
	print_dl("the copy moved by mremap()", &r);

	ASSERT_GE(d.in_lib, 20u);
	EXPECT_EQ(d.in_lib, d.lib_complete);
	EXPECT_EQ(d.after.nr_sections + 1, x.before.nr_sections);
	ASSERT_GE(x.in_lib, 20u);
	EXPECT_EQ(x.in_lib, x.lib_complete);
	EXPECT_EQ(x.before.nr_sections, x.after.nr_sections);
	EXPECT_EQ(x.after.nr_sections, r.before.nr_sections);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(r.in_lib, r.lib_complete);
	EXPECT_EQ(x.after.nr_sections, r.after.nr_sections);
	EXPECT_EQ(d.before.errors, r.after.errors);
}

/*
 * A library with its own .sframe, mapped while a file descriptor has it
 * open for writing: no table can be built for it (ETXTBSY), and the
 * address space is settled without it. Nothing is attached, and walks at
 * sample time through it are not cut to ask for its table again and
 * again (nofault_faults): its frames are the frame-pointer rule's, as for
 * any code no table describes.
 */
TEST_F_TIMEOUT(lib, open_for_writing, 120)
{
	char src[PATH_MAX], path[PATH_MAX];
	struct result d, s;
	struct child c;
	int wfd, status, ret;
	size_t len;
	void *elf;

	snprintf(src, sizeof(src), "%s/libsframe_dl.so", here);
	elf = read_all(src, &len);
	ASSERT_NE(NULL, elf);
	snprintf(path, sizeof(path), "%s/libsframe_dl_own.so", self->lc.tmp);
	ret = write_new(path, elf, len);
	free(elf);
	ASSERT_EQ(0, ret);
	wfd = open(path, O_WRONLY | O_CLOEXEC);
	ASSERT_LE(0, wfd);
	ASSERT_EQ(0, child_start(&c, path));
	ret = child_run(&c, 'd', 300, &d);
	if (!ret)
		ret = child_run(&c, 'D', 500, &s);
	status = child_stop(&c);
	close(wfd);
	ASSERT_EQ(0, ret) TH_LOG("child: status %d, %d", d.status, s.status);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	print_dl("open for writing, deferred", &d);
	print_dl("open for writing, at sample time", &s);
	printf("# nofault_faults +%llu at sample time\n",
	       (unsigned long long)(s.after.nofault_faults -
				    s.before.nofault_faults));
	ASSERT_GE(s.in_lib, 20u);
	EXPECT_LE(s.after.nofault_faults - s.before.nofault_faults, 4);
	EXPECT_EQ(d.before.nr_sections, s.after.nr_sections);
}

/*
 * mmap judges from its program headers whether a file with no table may
 * have a section of its own, and each CPU remembers the files it judged
 * to have none. The copy with its section hidden, mapped by a first
 * child, then rewritten in place (the same inode) with the section: a
 * second child that maps it, sampled at sample time only (plain perf
 * record -g), must have its first walk end to ask for the table, and
 * get complete stacks through the library.
 * Both children run on one CPU, the one that remembered the judgement.
 */
TEST_F_TIMEOUT(lib, judged_then_rewritten, 120)
{
	char src[PATH_MAX], path[PATH_MAX];
	struct result a, first, r;
	cpu_set_t all, one;
	struct child c;
	int cpu, fd, st_a, st_b, ret;
	size_t len;
	void *own;

	snprintf(path, sizeof(path), "%s/libsframe_dl_judged.so", self->lc.tmp);
	ASSERT_EQ(0, write_new(path, self->lc.elf, self->lc.elf_len));
	snprintf(src, sizeof(src), "%s/libsframe_dl.so", here);
	own = read_all(src, &len);
	ASSERT_NE(NULL, own);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	for (cpu = 0; !CPU_ISSET(cpu, &all); cpu++)
		;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));

	/*
	 * This program's own table, built by a walk of a child that does not
	 * map the library: the next children's only file a table may come
	 * for is the library.
	 */
	ret = child_start(&c, NULL) || child_run(&c, 'q', 100, &a);
	st_a = child_stop(&c);
	/* Its answer to a command that does nothing: it mapped the library. */
	if (!ret && WIFEXITED(st_a) && !WEXITSTATUS(st_a))
		ret = child_start(&c, path) || child_run(&c, 'n', 0, &a);
	st_a = child_stop(&c);
	/* The section, written in place: the same inode, new contents. */
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, own, len) != (ssize_t)len)
		ret = -1;
	if (fd >= 0)
		close(fd);
	free(own);
	if (!ret)
		ret = child_start(&c, path) || child_run(&c, 'D', 300, &first) ||
		      child_run(&c, 'D', 500, &r);
	st_b = child_stop(&c);
	sched_setaffinity(0, sizeof(all), &all);
	ASSERT_EQ(0, ret) TH_LOG("children: %d, %d, %d", a.status, first.status, r.status);
	ASSERT_TRUE(WIFEXITED(st_a) && !WEXITSTATUS(st_a));
	ASSERT_TRUE(WIFEXITED(st_b) && !WEXITSTATUS(st_b));
	print_dl("rewritten with its section, at sample time, first round", &first);
	print_dl("rewritten with its section, at sample time", &r);
	printf("# walks that ended to ask for the table: %llu\n",
	       (unsigned long long)(first.after.nofault_faults -
				    first.before.nofault_faults));
	/*
	 * Judged to have none, the library would have its first samples'
	 * walks take the frame-pointer rule through it until some walk's
	 * attach pass builds its table.
	 */
	EXPECT_LE(1, first.after.nofault_faults - first.before.nofault_faults);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(0u, r.lib_wrong);
	EXPECT_EQ(r.in_lib, r.lib_complete);
}

/*
 * A tmpfs of this test's own at @dir (made), in a mount namespace of its
 * own: its free blocks move with what the test does only. 0 or -1.
 */
static int private_tmpfs(const char *dir)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -1;
	if (mkdir(dir, 0700))
		return -1;
	return mount("tmpfs", dir, "tmpfs", 0, "size=16m");
}

/*
 * Waits up to @ms for the file system at @dir to have at least @want free
 * blocks: a file's blocks are freed when its inode goes, and a mount's
 * last reference may be put by a worker a little later. 1 if it has them.
 */
static int wait_free(const char *dir, unsigned long long want, int ms)
{
	struct statfs st;

	for (; ms >= 0; ms -= 20) {
		if (!statfs(dir, &st) && st.f_bfree >= want)
			return 1;
		usleep(20000);
	}
	return 0;
}

/* The free blocks of the file system at @dir, or 0. */
static unsigned long long free_blocks(const char *dir)
{
	struct statfs st;

	return statfs(dir, &st) ? 0 : st.f_bfree;
}

/*
 * An attached file replaced as a package manager upgrades one (a new file
 * renamed over it): the old file, which nothing opens or maps any more, is
 * held by its table only until the kernel's periodic sweep (every 10 s)
 * finds it has no name left, with no attach or detach meanwhile, so that
 * its blocks are freed and it no longer counts. Then a file with no name
 * left (a library a running process still maps after the upgrade)
 * attached: its table holds nothing, and goes with the inode when the
 * file's last user closes it.
 */
TEST_F_TIMEOUT(lib, replaced_while_attached, 60)
{
	char priv[PATH_MAX], path[PATH_MAX + 16], other[PATH_MAX + 16];
	struct unwind_user_file f = file_of(&self->lc);
	unsigned long long before, pages = (self->lc.elf_len + 4095) / 4096;
	double t0;
	int fd, gone;

	if (!self->have)
		SKIP(return, "the kernel does not count its file tables");
	snprintf(priv, sizeof(priv), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(priv)) TH_LOG("tmpfs at %s: %s", priv, strerror(errno));
	snprintf(path, sizeof(path), "%s/lib.so", priv);
	snprintf(other, sizeof(other), "%s/new.so", priv);
	ASSERT_EQ(0, write_new(path, self->lc.elf, self->lc.elf_len));
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f.fd);
	ASSERT_EQ(0, file_attach(&f));
	expect_tables(_metadata, self, 1);
	ASSERT_EQ(0, write_new(other, self->lc.elf, self->lc.elf_len));
	before = free_blocks(priv);
	ASSERT_EQ(0, rename(other, path));
	close(f.fd);
	t0 = now_seconds();
	/* Only the table holds the old file now: its blocks stay used. */
	EXPECT_EQ(0, wait_free(priv, before + pages, 100));

	/* The sweep lets it go, with no attach or detach meanwhile. */
	gone = wait_free(priv, before + pages, 25000);
	printf("# free blocks: %llu with the old file held, %llu %.1f s later (%llu pages of file)\n",
	       before, free_blocks(priv), now_seconds() - t0, pages);
	EXPECT_EQ(1, gone);
	expect_tables(_metadata, self, 0);

	/* The agent attaches the new file. */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fd);
	f.fd = fd;
	ASSERT_EQ(0, file_attach(&f));
	expect_tables(_metadata, self, 1);

	/* Unlinked, then attached: held by nothing but this descriptor. */
	EXPECT_EQ(0, file_detach(fd));
	ASSERT_EQ(0, unlink(path));
	ASSERT_EQ(0, file_attach(&f));
	expect_tables(_metadata, self, 1);
	close(fd);
	expect_tables(_metadata, self, 0);
	umount2(priv, MNT_DETACH);
}

/*
 * A library written in place in the same tick of the coarse clock as its
 * table was attached: without the attach's query of the timestamps, the
 * write would leave size, mtime and ctime as the table recorded them.
 * tmpfs has multigrain timestamps: the attach flags the ctime as queried,
 * so that the write takes a fine-grained one. A mapping of the file made
 * after the write must not get the table. Each round sets the clock to
 * the same time before each write of one byte (the one it was): twice
 * before the attach, so that the file's times are the coarse tick's (the
 * first write takes a fine-grained time, as an earlier round queried
 * them; the second, not queried, the coarse one), then once more after
 * the attach, in the same tick (settime() sets the coarse clock). The
 * control rounds leave out the write after the attach. The clock is set
 * back after. A round whose write leaves the times as they were (the
 * fine-grained clock read the same nanosecond, which only setting the
 * clock back makes possible) tells nothing of the unwinder: it is
 * counted apart, and must be rare.
 */
static int rewrite_byte_at(const struct timespec *at, const char *path,
			   const char *elf, size_t off)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = -1;

	if (fd < 0)
		return -1;
	if (!clock_settime(CLOCK_REALTIME, at))
		ret = pwrite(fd, elf + off, 1, off) == 1 ? 0 : -1;
	close(fd);
	return ret;
}

static bool same_stamp(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

TEST_F(lib, written_in_the_same_tick)
{
	enum { ROUNDS = 32 };
	char priv[PATH_MAX], path[PATH_MAX + 16];
	struct unwind_user_file f = file_of(&self->lc);
	Elf64_Phdr *text = phdr(self->lc.elf, load_index(self->lc.elf, true));
	size_t len = self->lc.elf_len, mid = len / 2;
	unsigned int i, used = 0, control = 0, unchanged = 0;
	struct timespec real0, mono0, mono1;
	struct stat attached, mapped;
	char *map;

	snprintf(priv, sizeof(priv), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(priv)) TH_LOG("tmpfs at %s: %s", priv, strerror(errno));
	snprintf(path, sizeof(path), "%s/lib.so", priv);
	ASSERT_EQ(0, write_new(path, self->lc.elf, len));
	f.fd = open(path, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, f.fd);
	ASSERT_EQ(0, clock_gettime(CLOCK_REALTIME, &real0));
	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &mono0));
	for (i = 0; i < 2 * ROUNDS; i++) {
		bool change = i >= ROUNDS, registered;

		if (rewrite_byte_at(&real0, path, self->lc.elf, mid) ||
		    rewrite_byte_at(&real0, path, self->lc.elf, mid) ||
		    file_attach(&f) || fstat(f.fd, &attached) ||
		    (change && rewrite_byte_at(&real0, path, self->lc.elf, mid)) ||
		    fstat(f.fd, &mapped))
			break;
		map = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, f.fd, 0);
		if (map == MAP_FAILED)
			break;
		/* Registered at mmap if the table was attached: unregistered. */
		registered = !unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					   (uintptr_t)map + text->p_offset, 0, 0);
		if (!change)
			control += registered;
		else if (same_stamp(&attached, &mapped))
			unchanged++;
		else
			used += registered;
		munmap(map, len);
		file_detach(f.fd);
	}
	/* The clock as it would be. */
	clock_gettime(CLOCK_MONOTONIC, &mono1);
	real0.tv_sec += mono1.tv_sec - mono0.tv_sec;
	real0.tv_nsec += mono1.tv_nsec - mono0.tv_nsec;
	if (real0.tv_nsec < 0) {
		real0.tv_nsec += 1000000000;
		real0.tv_sec--;
	} else if (real0.tv_nsec >= 1000000000) {
		real0.tv_nsec -= 1000000000;
		real0.tv_sec++;
	}
	EXPECT_EQ(0, clock_settime(CLOCK_REALTIME, &real0));
	close(f.fd);
	umount2(priv, MNT_DETACH);
	ASSERT_EQ(2 * ROUNDS, i) TH_LOG("round %u: %s", i, strerror(errno));
	printf("# %u of %u unchanged files got their table at mmap, %u of %u written after the attach (%u writes left the times as they were)\n",
	       control, ROUNDS, used, ROUNDS - unchanged, unchanged);
	EXPECT_EQ(ROUNDS, control);
	EXPECT_EQ(0, used);
	EXPECT_GE(2, unchanged);
}

/*
 * A library on overlayfs, a container's image, rewritten through the
 * overlay while a process maps it: the rewrite copies it up, and the
 * process keeps mapping the lower layer's bytes, which have no section
 * here; a process started after maps the upper layer's, the library with
 * its own section. Each must get the table of the bytes it maps: the
 * first process's walks build the table of the old bytes (nothing), the
 * second's that of the new, and every stack of the second through the
 * library is complete. (A table keyed by the overlay's inode would give
 * the second process the first's answer.)
 */
TEST_F_TIMEOUT(lib, overlay_copied_up, 120)
{
	char dir[PATH_MAX], opts[4 * PATH_MAX], lower[PATH_MAX + 16];
	char merged[PATH_MAX + 16], lib[PATH_MAX + 32], src[PATH_MAX];
	struct result a, first, r;
	struct child ca, cb;
	size_t own_len;
	void *own;
	int fd, st_a, st_b, ret;

	snprintf(dir, sizeof(dir), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(dir)) TH_LOG("tmpfs at %s: %s", dir, strerror(errno));
	snprintf(lower, sizeof(lower), "%s/lower", dir);
	snprintf(merged, sizeof(merged), "%s/merged", dir);
	ASSERT_EQ(0, mkdir(lower, 0755));
	snprintf(opts, sizeof(opts), "%s/upper", dir);
	ASSERT_EQ(0, mkdir(opts, 0755));
	snprintf(opts, sizeof(opts), "%s/work", dir);
	ASSERT_EQ(0, mkdir(opts, 0755));
	ASSERT_EQ(0, mkdir(merged, 0755));
	snprintf(lib, sizeof(lib), "%s/libsframe_dl.so", lower);
	/* The old bytes: the library with its section hidden. */
	ASSERT_EQ(0, write_new(lib, self->lc.elf, self->lc.elf_len));
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s/upper,workdir=%s/work",
		 lower, dir, dir);
	if (mount("overlay", merged, "overlay", 0, opts)) {
		ret = errno;
		umount2(dir, MNT_DETACH);
		if (ret == ENODEV)
			SKIP(return, "no overlayfs in this kernel");
		ASSERT_EQ(0, ret) TH_LOG("overlay: %s", strerror(ret));
	}
	snprintf(lib, sizeof(lib), "%s/libsframe_dl.so", merged);
	/* Its answer to a command that does nothing: it mapped the library. */
	ASSERT_EQ(0, child_start(&ca, lib));
	ASSERT_EQ(0, child_run(&ca, 'n', 0, &a));

	/* The new bytes, written through the overlay: copied up. */
	snprintf(src, sizeof(src), "%s/libsframe_dl.so", here);
	own = read_all(src, &own_len);
	ASSERT_NE(NULL, own);
	fd = open(lib, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ((ssize_t)own_len, write(fd, own, own_len));
	close(fd);
	free(own);

	/* The first process's walks build the table of what it maps. */
	ret = child_run(&ca, 'd', 300, &a);
	st_a = child_stop(&ca);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(WIFEXITED(st_a) && !WEXITSTATUS(st_a));
	print_dl("mapped before the copy-up", &a);
	/* The old bytes, no section: not described, and never wrongly. */
	EXPECT_EQ(0u, a.lib_wrong);

	ASSERT_EQ(0, child_start(&cb, lib));
	ret = child_run(&cb, 'd', 300, &first) || child_run(&cb, 'd', 500, &r);
	st_b = child_stop(&cb);
	umount2(dir, MNT_DETACH);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(WIFEXITED(st_b) && !WEXITSTATUS(st_b));
	print_dl("mapped after the copy-up, first round", &first);
	print_dl("mapped after the copy-up", &r);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(0u, r.lib_wrong);
	EXPECT_EQ(r.in_lib, r.lib_complete);
}

/*
 * Another user's walks: a process of @uid maps the files @dir/@prefix<@i>
 * for @i from @first to @n - 1 executable, 64 at a time, and has each 64 walked
 * (its own samples, deferred, through libc: code no table describes,
 * which has a walk build the tables of the files it maps). 0, or -1 if
 * it failed.
 */
static int walk_files_as(uid_t uid, const char *dir, const char *prefix,
			 unsigned int first, unsigned int n)
{
	enum { BATCH = 64 };
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		void *map[BATCH];
		unsigned int i, k, nr;
		double seconds = 0.01;
		char path[PATH_MAX];

		if (setgroups(0, NULL) || setresgid(uid, uid, uid) ||
		    setresuid(uid, uid, uid))
			_exit(2);
		for (i = first; i < n; i += nr) {
			for (nr = 0; nr < BATCH && i + nr < n; nr++) {
				int fd;

				snprintf(path, sizeof(path), "%s/%s%u", dir, prefix, i + nr);
				fd = open(path, O_RDONLY | O_CLOEXEC);
				if (fd < 0)
					_exit(3);
				map[nr] = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
					       MAP_PRIVATE, fd, 0);
				close(fd);
				if (map[nr] == MAP_FAILED)
					_exit(4);
			}
			if (sample_stacks(run_work, &seconds, FREQ, &stacks))
				_exit(5);
			for (k = 0; k < nr; k++)
				munmap(map[k], 4096);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("# walker as %u: status %#x\n", uid, status);
		return -1;
	}
	return 0;
}

/* Sets the sysctl @name to @val, the value it had in @old if not NULL. */
static int sysctl_set(const char *name, unsigned long val, unsigned long *old)
{
	char path[128], buf[32];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	if (old) {
		f = fopen(path, "r");
		if (!f || fscanf(f, "%lu", old) != 1) {
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
	}
	snprintf(buf, sizeof(buf), "%lu", val);
	return write_text(path, buf);
}

/*
 * A child of @uid (0: this one's) mapping @lib, stacks through it in two
 * rounds of workload @op: a first, then the one measured.
 */
static int lib_rounds_op(uid_t uid, char op, const char *lib,
			 struct result *first, struct result *r)
{
	struct child c;
	int status, ret;

	if (child_start_as(&c, lib, NULL, uid))
		return -1;
	ret = child_run(&c, op, 300, first) || child_run(&c, op, 500, r) ? -1 : 0;
	status = child_stop(&c);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("# child status %#x\n", status);
		ret = -1;
	}
	return ret;
}

/*
 * Users of the budget tests; each test its own, since the tables of one
 * test's files may outlive it until their inodes go.
 */
enum { USER_A = 60001, USER_B = 60002, USER_C = 60003, USER_D = 60004 };

/*
 * Writes @n copies of the library with its own section, @dir/@prefix<i>,
 * owned by @uid: 0 or -1.
 */
static int copies_of(const void *elf, size_t len, const char *dir,
		     const char *prefix, unsigned int n, uid_t uid)
{
	char path[PATH_MAX + 32];
	unsigned int i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s%u", dir, prefix, i);
		if (write_new(path, elf, len) || chown(path, uid, uid))
			return -1;
	}
	return 0;
}

static int own_copies(const char *dir, const char *prefix, unsigned int n,
		      uid_t uid)
{
	char src[PATH_MAX];
	size_t len;
	void *elf;
	int ret;

	snprintf(src, sizeof(src), "%s/libsframe_dl.so", here);
	elf = read_all(src, &len);
	if (!elf)
		return -1;
	ret = copies_of(elf, len, dir, prefix, n, uid);
	free(elf);
	return ret;
}

/*
 * The budget tests' users and limits: @a's @n libraries and @b's one in a
 * private tmpfs (@bud->dir, which the other users reach), what one table
 * takes (@bud->one: @a's second library's; the first walk also has the
 * tables of this program and its libraries built), with @bud->t0 and
 * @bud->t1 the machine's tables before and after it; then the users' part
 * of the budget made ten tables' worth and a user's share five
 * (budget_end() puts them back).
 */
struct budget {
	char dir[PATH_MAX];
	struct file_info t0, t1;
	__u64 one;
	unsigned long pool, share;
	bool have_share;
};

static void budget_start(struct __test_metadata *_metadata,
			 FIXTURE_DATA(lib) *self, struct budget *bud,
			 uid_t a, unsigned int n, uid_t b)
{
	snprintf(bud->dir, sizeof(bud->dir), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(bud->dir))
		TH_LOG("tmpfs at %s: %s", bud->dir, strerror(errno));
	/* Reached by the other users. */
	ASSERT_EQ(0, chmod(self->lc.tmp, 0755));
	ASSERT_EQ(0, chmod(bud->dir, 0755));
	ASSERT_EQ(0, own_copies(bud->dir, "a", n, a));
	ASSERT_EQ(0, own_copies(bud->dir, "b", 1, b));
	ASSERT_EQ(0, walk_files_as(a, bud->dir, "a", 0, 1));
	ASSERT_EQ(1, query_files(&bud->t0));
	ASSERT_EQ(0, walk_files_as(a, bud->dir, "a", 1, 2));
	ASSERT_EQ(1, query_files(&bud->t1));
	bud->one = bud->t1.file_bytes - bud->t0.file_bytes;
	ASSERT_LT(0, bud->one);
	ASSERT_EQ(0, sysctl_set("unwind_user_file_bytes_user_max", 10 * bud->one,
				&bud->pool));
	bud->have_share = !sysctl_set("unwind_user_file_bytes_per_user",
				      5 * bud->one, &bud->share);
}

static void budget_end(struct budget *bud)
{
	sysctl_set("unwind_user_file_bytes_user_max", bud->pool, NULL);
	if (bud->have_share)
		sysctl_set("unwind_user_file_bytes_per_user", bud->share, NULL);
	umount2(bud->dir, MNT_DETACH);
}

/*
 * One user fills the users' part of the budget of file tables with the
 * tables of their own libraries (each a copy with its own section, which
 * their process's walks have the kernel build); another user's library must
 * still be described: each user takes at most their share
 * (kernel.unwind_user_file_bytes_per_user), half of the users' part here,
 * which the test makes ten tables' worth.
 */
TEST_F_TIMEOUT(lib, user_budget_shared, 180)
{
	char lib_b[PATH_MAX + 16];
	struct result first, r;
	struct budget bud;
	struct file_info t2;
	int ret;

	if (geteuid())
		SKIP(return, "not root: no other user to become");
	if (!self->have)
		SKIP(return, "the kernel does not count its file tables");
	budget_start(_metadata, self, &bud, USER_A, 17, USER_B);
	/* A's two tables are the only users' tables: room for 8 more. */
	ret = walk_files_as(USER_A, bud.dir, "a", 2, 17);
	query_files(&t2);
	printf("# one table %llu bytes; user A's 15 more libraries: %llu tables, %llu bytes more\n",
	       (unsigned long long)bud.one,
	       (unsigned long long)(t2.file_tables - bud.t0.file_tables),
	       (unsigned long long)(t2.file_bytes - bud.t0.file_bytes));
	snprintf(lib_b, sizeof(lib_b), "%s/b0", bud.dir);
	if (!ret)
		/* Its own samples: the test guest lets no user sample the kernel. */
		ret = lib_rounds_op(USER_B, 'u', lib_b, &first, &r);
	budget_end(&bud);
	ASSERT_EQ(0, ret) TH_LOG("child: %d, %d", first.status, r.status);
	print_dl("user B's library", &r);
	EXPECT_TRUE(bud.have_share) TH_LOG("no kernel.unwind_user_file_bytes_per_user");
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(0u, r.lib_wrong);
	EXPECT_EQ(r.in_lib, r.lib_complete);
}

/* Ids of a container's users, in the initial namespace. */
enum { CONTAINER_IDS = 200000, CONTAINER_NR = 2000 };

/* Writes @map to the file /proc/@pid/@what: 0 or -1. */
static int write_id_map(pid_t pid, const char *what, const char *map)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	return write_text(path, map);
}

/* The parent's side of a container: its process and its pipes. */
struct container {
	pid_t pid;
	int go, ready;
};

/*
 * Starts a container of @owner: a process that user starts in a user
 * namespace of its own (ids 0 to CONTAINER_NR - 1 there are CONTAINER_IDS
 * on), and a mount namespace where it mounts a tmpfs at @dir and writes
 * @n copies of the library with its own section for each of two of its
 * users, root and 1000, whose walks have their tables built. Returns when
 * they are, with the container waiting for container_stop() (its tmpfs,
 * and so the tables of its files, go with it): 0 or -1.
 */
static int container_start(struct container *ct, uid_t owner,
			   const char *dir, unsigned int n)
{
	char map[64], src[PATH_MAX], c;
	int go[2], ready[2];
	size_t len;
	void *elf;

	ct->pid = -1;
	ct->go = ct->ready = -1;
	/* Read here: the container's users may not reach this directory. */
	snprintf(src, sizeof(src), "%s/libsframe_dl.so", here);
	elf = read_all(src, &len);
	if (!elf)
		return -1;
	if (pipe2(go, O_CLOEXEC)) {
		free(elf);
		return -1;
	}
	if (pipe2(ready, O_CLOEXEC)) {
		close(go[0]);
		close(go[1]);
		free(elf);
		return -1;
	}
	fflush(stdout);
	ct->pid = fork();
	if (!ct->pid) {
		close(go[1]);
		close(ready[0]);
		if (setgroups(0, NULL) || setresgid(owner, owner, owner) ||
		    setresuid(owner, owner, owner) ||
		    unshare(CLONE_NEWUSER | CLONE_NEWNS))
			_exit(2);
		/* The initial namespace's root writes the id maps. */
		if (write(ready[1], "u", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		if (setresgid(0, 0, 0) || setresuid(0, 0, 0) ||
		    mount("tmpfs", dir, "tmpfs", 0, "mode=0755"))
			_exit(4);
		if (copies_of(elf, len, dir, "r", n, 0) ||
		    copies_of(elf, len, dir, "u", n, 1000))
			_exit(5);
		if (walk_files_as(0, dir, "r", 0, n) ||
		    walk_files_as(1000, dir, "u", 0, n))
			_exit(6);
		if (write(ready[1], "d", 1) != 1)
			_exit(7);
		/* Until the parent is done: EOF of its end. */
		_exit(read(go[0], &c, 1) < 0 ? 8 : 0);
	}
	free(elf);
	close(go[0]);
	close(ready[1]);
	ct->go = go[1];
	ct->ready = ready[0];
	if (ct->pid < 0)
		return -1;
	snprintf(map, sizeof(map), "0 %u %u\n", CONTAINER_IDS, CONTAINER_NR);
	if (read(ct->ready, &c, 1) != 1 || write_id_map(ct->pid, "uid_map", map) ||
	    write_id_map(ct->pid, "gid_map", map) || write(ct->go, "g", 1) != 1)
		return -1;
	return read(ct->ready, &c, 1) == 1 ? 0 : -1;
}

/* Ends the container: 0 if it did all it was to, else -1. */
static int container_stop(struct container *ct)
{
	int status = -1;

	close(ct->go);
	close(ct->ready);
	if (ct->pid > 0 && waitpid(ct->pid, &status, 0) == ct->pid &&
	    WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	printf("# container: status %#x\n", status);
	return -1;
}

/*
 * A container, a user and a mount namespace an unprivileged user made,
 * has many users: its tables are all paid for by the user who made it,
 * as ucounts charges a namespace's users to its creator, whatever ids
 * the container's processes run as. Here user C's container runs two of
 * them, each with 8 libraries of its own on the container's tmpfs; C
 * already has two tables. With the users' part ten tables' worth and a
 * user's share five, the container gets three more tables, not thirteen,
 * and user D's library is still described. (Charged to each id, the
 * container's two users would take eight and leave B nothing.)
 */
TEST_F_TIMEOUT(lib, container_budget, 300)
{
	char cdir[PATH_MAX + 8], lib_b[PATH_MAX + 16];
	struct result first, r;
	struct container ct = { .pid = -1, .go = -1, .ready = -1 };
	struct budget bud;
	struct file_info t2;
	int ret;

	if (geteuid())
		SKIP(return, "not root: no other user to become");
	if (!self->have)
		SKIP(return, "the kernel does not count its file tables");
	if (access("/proc/self/uid_map", F_OK))
		SKIP(return, "no user namespaces in this kernel");
	budget_start(_metadata, self, &bud, USER_C, 2, USER_D);
	snprintf(cdir, sizeof(cdir), "%s/c", bud.dir);
	ret = mkdir(cdir, 0755) ? -1 : container_start(&ct, USER_C, cdir, 8);
	query_files(&t2);
	printf("# one table %llu bytes; user C's container, 16 libraries: %llu tables, %llu bytes more\n",
	       (unsigned long long)bud.one,
	       (unsigned long long)(t2.file_tables - bud.t1.file_tables),
	       (unsigned long long)(t2.file_bytes - bud.t1.file_bytes));
	snprintf(lib_b, sizeof(lib_b), "%s/b0", bud.dir);
	if (!ret)
		ret = lib_rounds_op(USER_D, 'u', lib_b, &first, &r);
	if (container_stop(&ct))
		ret = -1;
	budget_end(&bud);
	ASSERT_EQ(0, ret) TH_LOG("child: %d, %d", first.status, r.status);
	print_dl("user D's library", &r);
	EXPECT_TRUE(bud.have_share) TH_LOG("no kernel.unwind_user_file_bytes_per_user");
	/* C's share: its two tables and three of the container's. */
	EXPECT_GE(5 * bud.one, t2.file_bytes - bud.t0.file_bytes + bud.one);
	EXPECT_LT(0u, t2.file_tables - bud.t1.file_tables);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(0u, r.lib_wrong);
	EXPECT_EQ(r.in_lib, r.lib_complete);
}

/* A fanotify listener that allows everything and counts @pid's events. */
struct listener {
	int fan;
	pid_t pid;
	volatile int stop;
	unsigned int access, perm, other;
};

static void *listen_events(void *arg)
{
	struct listener *l = arg;
	char buf[4096] __attribute__((aligned(8)));
	struct fanotify_event_metadata *m;
	struct pollfd p = { .fd = l->fan, .events = POLLIN };
	ssize_t n;

	while (!l->stop) {
		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(l->fan, buf, sizeof(buf));
		for (m = (void *)buf; n > 0 && FAN_EVENT_OK(m, n);
		     m = FAN_EVENT_NEXT(m, n)) {
			if (m->mask & FAN_ACCESS_PERM) {
				struct fanotify_response r = {
					.fd = m->fd, .response = FAN_ALLOW,
				};

				if (write(l->fan, &r, sizeof(r)) != sizeof(r))
					l->other++;
			}
			if (m->pid == l->pid) {
				l->access += !!(m->mask & FAN_ACCESS);
				l->perm += !!(m->mask & FAN_ACCESS_PERM);
			} else {
				l->other++;
			}
			if (m->fd >= 0)
				close(m->fd);
		}
	}
	return NULL;
}

/*
 * A fanotify listener (a virus scanner, an auditor) with a permission mark
 * on a library with its own section is profiled: the walks that build the
 * library's table read it in the listener's own task_work, and an event
 * raised there would have it wait for its own answer. Here a thread of
 * this process answers, for the child that maps the library: after its
 * dlopen(), its walks must raise no event, access or permission, and
 * still have the table built (complete stacks through the library).
 */
TEST_F_TIMEOUT(lib, fanotify_listener, 120)
{
	struct listener l = { .fan = -1 };
	char dir[PATH_MAX], lib[PATH_MAX + 16];
	struct result a, first, r;
	struct child c;
	pthread_t t;
	int st, ret;

	snprintf(dir, sizeof(dir), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(dir)) TH_LOG("tmpfs at %s: %s", dir, strerror(errno));
	ASSERT_EQ(0, own_copies(dir, "f", 1, 0));
	snprintf(lib, sizeof(lib), "%s/f0", dir);
	l.fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
			      O_RDONLY | O_LARGEFILE);
	if (l.fan >= 0 &&
	    fanotify_mark(l.fan, FAN_MARK_ADD, FAN_ACCESS | FAN_ACCESS_PERM,
			  AT_FDCWD, lib)) {
		close(l.fan);
		l.fan = -1;
	}
	if (l.fan < 0) {
		ret = errno;
		umount2(dir, MNT_DETACH);
		SKIP(return, "no fanotify permission events: %s", strerror(ret));
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, listen_events, &l));

	/* Its answer to a command that does nothing: it mapped the library. */
	ret = child_start(&c, lib) || child_run(&c, 'n', 0, &a);
	/* ld.so's reads before that were the child's own. */
	usleep(200 * 1000);
	l.pid = c.pid;
	if (!ret)
		ret = child_run(&c, 'u', 300, &first) || child_run(&c, 'u', 500, &r);
	st = child_stop(&c);
	usleep(200 * 1000);
	l.stop = 1;
	pthread_join(t, NULL);
	close(l.fan);
	umount2(dir, MNT_DETACH);
	ASSERT_EQ(0, ret) TH_LOG("child: %d, %d, %d", a.status, first.status, r.status);
	ASSERT_TRUE(WIFEXITED(st) && !WEXITSTATUS(st));
	print_dl("the listened-to library, second round", &r);
	printf("# the child's events after dlopen(): %u access, %u permission\n",
	       l.access, l.perm);
	EXPECT_EQ(0u, l.access);
	EXPECT_EQ(0u, l.perm);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(0u, r.lib_wrong);
	EXPECT_EQ(r.in_lib, r.lib_complete);
}

/*
 * One user maps more files root owns that are not ELF (empty files: any
 * readable file can be mapped executable) than the machine keeps tables
 * of, 64 at a time, while their own walks have the kernel look at them:
 * each leaves a table that says the file has nothing. A library with its
 * own section, mapped after by another process, must still be described:
 * a table that describes nothing makes room for it. The limit is made
 * 1,024 tables (kernel.unwind_user_file_tables_max) for the test to be
 * short; a kernel without the sysctl holds 65,536, and the test maps
 * 65,600 files there (4 minutes in the test guest).
 */
TEST_F_TIMEOUT(lib, user_fills_tables, 600)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct file_info t0, t1, t2;
	unsigned long max = 0, files;
	struct result first, r;
	bool have_max;
	double t_start;
	unsigned int i;
	int fd, ret;

	if (geteuid())
		SKIP(return, "not root: no other user to become");
	have_max = !access("/proc/sys/kernel/unwind_user_file_tables_max", W_OK);
	files = have_max ? 1100 : 65600;
	snprintf(dir, sizeof(dir), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(dir)) TH_LOG("tmpfs at %s: %s", dir, strerror(errno));
	/* Reached by the other users. */
	ASSERT_EQ(0, chmod(self->lc.tmp, 0755));
	ASSERT_EQ(0, chmod(dir, 0755));
	for (i = 0; i < files; i++) {
		snprintf(path, sizeof(path), "%s/z%u", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
		close(fd);
	}
	ASSERT_EQ(0, own_copies(dir, "own", 1, 0));
	ASSERT_EQ(self->have, query_files(&t0));
	/* Restored below before any assertion. */
	if (have_max)
		ASSERT_EQ(0, sysctl_set("unwind_user_file_tables_max", 1024, &max));
	t_start = now_seconds();
	ret = walk_files_as(USER_A, dir, "z", 0, files);
	query_files(&t1);
	printf("# %lu empty files walked by another user in %.1f s: described files %llu -> %llu\n",
	       files, now_seconds() - t_start, (unsigned long long)t0.file_tables,
	       (unsigned long long)t1.file_tables);
	snprintf(path, sizeof(path), "%s/own0", dir);
	if (!ret)
		ret = lib_rounds_op(0, 'u', path, &first, &r);
	query_files(&t2);
	umount2(dir, MNT_DETACH);
	if (have_max)
		sysctl_set("unwind_user_file_tables_max", max, NULL);
	ASSERT_EQ(0, ret) TH_LOG("child: %d, %d", first.status, r.status);
	print_dl("a library mapped after", &r);
	if (self->have)
		printf("# described files after it: %llu\n", (unsigned long long)t2.file_tables);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(0u, r.lib_wrong);
	EXPECT_EQ(r.in_lib, r.lib_complete);
}

/*
 * What a test that had the agent attach the library its child maps
 * checks: the agent ran and attached it (@a), the tables that hold their
 * file were all @detached; the child's stacks through the library were
 * mostly incomplete before (@first) and all complete after (@r); the
 * child exited cleanly (@status).
 */
static void expect_agent_described(struct __test_metadata *_metadata,
				   const struct agent_run *a, unsigned int detached,
				   const struct result *first, const struct result *r,
				   int status)
{
	ASSERT_TRUE(WIFEXITED(a->status) && !WEXITSTATUS(a->status))
		TH_LOG("sframe-synth exit %#x", a->status);
	ASSERT_TRUE(a->found) TH_LOG("the agent did not attach the child's library");
	EXPECT_EQ(a->held, detached);
	ASSERT_GE(first->in_lib, 20u);
	EXPECT_LT(first->lib_complete * 4, first->in_lib);
	ASSERT_GE(r->in_lib, 20u);
	EXPECT_EQ(r->in_lib, r->lib_complete);
	EXPECT_EQ(first->before.errors, r->after.errors);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
}

/*
 * The agent's round in a test of the library @c maps: the agent run into
 * @a, looking for @want; if it found it, @c's stacks through the library
 * into @r (printed as @label); then what the agent attached detached
 * (*@detached) and @c stopped: its wait status.
 */
static int agent_round(struct __test_metadata *_metadata, struct child *c,
		       struct agent_run *a, const char *want, const char *label,
		       struct result *r, unsigned int *detached)
{
	EXPECT_EQ(0, agent_attach(a, want));
	if (a->found) {
		child_run(c, 'd', 500, r);
		print_dl(label, r);
	}
	*detached = agent_detach(a);
	return child_stop(c);
}

/*
 * A library replaced while a process that mapped it runs (a package
 * upgrade under a running service): the process's maps say "(deleted)",
 * and `sframe-synth attach --running` attaches the file it maps, opened
 * through /proc/PID/map_files; the process's stacks through the library
 * are then complete. Everything the agent attached is detached again.
 */
TEST_F_TIMEOUT(lib, agent_replaced, 180)
{
	char other[PATH_MAX], want[PATH_MAX + 32];
	static struct agent_run a;
	struct result first, r = {};
	unsigned int detached;
	struct child c;
	int status;

	if (!have_agent())
		SKIP(return, "no sframe-synth next to this program");
	ASSERT_EQ(0, child_start(&c, self->lc.path));
	ASSERT_EQ(0, child_run(&c, 'd', 300, &first));
	print_dl("no table", &first);
	snprintf(other, sizeof(other), "%s/new.so", self->lc.tmp);
	ASSERT_EQ(0, write_new(other, self->lc.elf, self->lc.elf_len));
	ASSERT_EQ(0, rename(other, self->lc.path));

	snprintf(want, sizeof(want), "; mapped as %s (deleted))", self->lc.path);
	status = agent_round(_metadata, &c, &a, want, "the replaced file attached", &r,
			     &detached);

	expect_agent_described(_metadata, &a, detached, &first, &r, status);
}

/*
 * A container's library: a child in a mount namespace of its own maps,
 * at the library's path, another file bind-mounted there. The path names
 * another file in the agent's namespace: `sframe-synth attach --running`
 * attaches the child's file through /proc/PID/map_files, without the
 * table holding it (UNWIND_USER_FILE_F_NO_HOLD), and the child's stacks
 * through it are complete. Once the child and its namespace are gone and
 * the file is deleted, its table goes with it, undetached.
 */
TEST_F_TIMEOUT(lib, agent_other_namespace, 180)
{
	char priv[PATH_MAX], other[PATH_MAX + 16], want[PATH_MAX + 32];
	unsigned long long before, pages = (self->lc.elf_len + 4095) / 4096;
	static struct agent_run a;
	struct result first, r = {};
	unsigned int detached;
	struct child c;
	int status, gone;

	if (!have_agent())
		SKIP(return, "no sframe-synth next to this program");
	snprintf(priv, sizeof(priv), "%s/priv", self->lc.tmp);
	ASSERT_EQ(0, private_tmpfs(priv)) TH_LOG("tmpfs at %s: %s", priv, strerror(errno));
	snprintf(other, sizeof(other), "%s/other.so", priv);
	ASSERT_EQ(0, write_new(other, self->lc.elf, self->lc.elf_len));
	ASSERT_EQ(0, child_start_as(&c, self->lc.path, other, 0));
	ASSERT_EQ(0, child_run(&c, 'd', 300, &first));
	print_dl("no table", &first);

	snprintf(want, sizeof(want), "; mapped as %s)", self->lc.path);
	status = agent_round(_metadata, &c, &a, want, "the other namespace's file attached", &r,
			     &detached);
	/*
	 * Unlinked, unmapped, its namespace's mount gone (a worker's mntput(),
	 * a little later): the file goes, which a table that held it would
	 * keep.
	 */
	before = free_blocks(priv);
	ASSERT_EQ(0, unlink(other));
	gone = wait_free(priv, before + pages, 5000);
	printf("# the child's file %s (free blocks %llu, then %llu)\n",
	       gone ? "gone" : "still there after 5 s", before, free_blocks(priv));
	umount2(priv, MNT_DETACH);

	expect_agent_described(_metadata, &a, detached, &first, &r, status);
	EXPECT_EQ(1, gone);
}

/* More injection points than an attach has. */
#define MAX_NTH		2000

/*
 * Attach and detach with the n-th allocation failing, for every n: a
 * failed attach is ENOMEM and leaves no table; a detach fails cleanly or
 * succeeds. See sframe_fault_test for fail-nth.
 */
TEST_F_TIMEOUT(lib, fault_injection, 120)
{
	const struct unwind_user_file f = file_of(&self->lc);
	const char *why = fail_nth_missing();
	unsigned int n, failed = 0;
	long ret;

	if (why)
		SKIP(return, "%s", why);

	for (n = 1; n < MAX_NTH; n++) {
		bool hit;

		ASSERT_EQ(0, fail_nth(n));
		ret = file_attach(&f);
		hit = fail_nth_hit();
		if (!ret) {
			if (!hit)
				break;
			/* A failure the call got over: its table is whole. */
			ASSERT_EQ(0, file_detach(f.fd));
			continue;
		}
		ASSERT_TRUE(hit) TH_LOG("attach: %s without a failure", strerror(-ret));
		ASSERT_EQ(-ENOMEM, ret) TH_LOG("attach, allocation %u failing", n);
		ASSERT_EQ(-ENOENT, file_detach(f.fd))
			TH_LOG("a table after a failed attach (%u)", n);
		expect_tables(_metadata, self, 0);
		failed++;
	}
	printf("# attach: %u injection points, %u failed cleanly\n", n - 1, failed);
	ASSERT_LT(n, (unsigned int)MAX_NTH);
	EXPECT_GT(failed, 0u);
	expect_tables(_metadata, self, 1);

	for (n = 1; n < MAX_NTH; n++) {
		bool hit;

		ASSERT_EQ(0, fail_nth(n));
		ret = file_detach(f.fd);
		hit = fail_nth_hit();
		if (ret) {
			ASSERT_TRUE(hit) TH_LOG("detach: %s without a failure", strerror(-ret));
			ASSERT_EQ(-ENOMEM, ret);
			expect_tables(_metadata, self, 1);
			continue;
		}
		expect_tables(_metadata, self, 0);
		if (!hit)
			break;
		ASSERT_EQ(0, file_attach(&f));
	}
	printf("# detach: %u injection points\n", n - 1);
	ASSERT_LT(n, (unsigned int)MAX_NTH);
	fail_nth_close();
	/* And usable as ever. */
	EXPECT_EQ(-ENOENT, file_detach(f.fd));
	EXPECT_EQ(0, file_attach(&f));
	EXPECT_EQ(0, file_detach(f.fd));
	expect_tables(_metadata, self, 0);
}

/* The copy changed after its table was made: the table must not be used. */

FIXTURE(stale) {
	struct lib_copy lc;
	int have;
};

enum change { REWRITE, TRUNCATE, WRITE_BYTE, RENAME };

FIXTURE_VARIANT(stale) {
	enum change change;
};

/* Opened with O_TRUNC and written again, the same bytes. */
FIXTURE_VARIANT_ADD(stale, rewritten) { .change = REWRITE };
/* Truncated to nothing, then the same bytes written again. */
FIXTURE_VARIANT_ADD(stale, truncated) { .change = TRUNCATE };
/* One byte written in place, the one it was. */
FIXTURE_VARIANT_ADD(stale, byte_written) { .change = WRITE_BYTE };
/* Another file (the same bytes) renamed over it. */
FIXTURE_VARIANT_ADD(stale, renamed_over) { .change = RENAME };

FIXTURE_SETUP(stale)
{
	struct file_info t;

	lib_fixture_setup(_metadata, &self->lc, &self->have, &t);
}

FIXTURE_TEARDOWN(stale)
{
	lib_copy_fini(&self->lc);
}

/* Change the copy at @path, bytes @elf: 0 or -1. */
static int change_file(enum change how, const char *path, const char *tmp,
		       const char *elf, size_t len)
{
	char other[PATH_MAX];
	int fd = -1, ret = -1;

	switch (how) {
	case REWRITE:
		fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
		if (fd >= 0)
			ret = write(fd, elf, len) == (ssize_t)len ? 0 : -1;
		break;
	case TRUNCATE:
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0 && !ftruncate(fd, 0))
			ret = pwrite(fd, elf, len, 0) == (ssize_t)len ? 0 : -1;
		break;
	case WRITE_BYTE:
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd >= 0)
			ret = pwrite(fd, elf + len / 2, 1, len / 2) == 1 ? 0 : -1;
		break;
	case RENAME:
		snprintf(other, sizeof(other), "%s/new.so", tmp);
		if (write_new(other, elf, len) || rename(other, path))
			return -1;
		return 0;
	}
	if (fd >= 0)
		close(fd);
	return ret;
}

/* One child's rounds with the library: a first, then the one measured. */
static int lib_rounds(const char *lib, struct result *first, struct result *r)
{
	return lib_rounds_op(0, 'd', lib, first, r);
}

TEST_F_TIMEOUT(stale, not_used, 120)
{
	const struct unwind_user_file f = file_of(&self->lc);
	struct file_info t0, t1, t2;
	struct result first, r;
	__u64 with_table;
	long ret;

	ASSERT_EQ(self->have, query_files(&t0));
	ASSERT_EQ(0, file_attach(&f));

	/*
	 * The table as made: a child gets it when it maps the library, and
	 * every stack through the library is complete.
	 */
	ASSERT_EQ(0, lib_rounds(self->lc.path, &first, &r));
	print_dl("with the table, first round", &first);
	print_dl("with the table", &r);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_EQ(r.in_lib, r.lib_complete);
	EXPECT_EQ(first.before.errors, r.after.errors);
	with_table = r.after.nr_sections;

	/* The file changed; a new child maps it. */
	ASSERT_EQ(0, change_file(variant->change, self->lc.path, self->lc.tmp,
				 self->lc.elf, self->lc.elf_len));
	ASSERT_EQ(self->have, query_files(&t1));
	ASSERT_EQ(0, lib_rounds(self->lc.path, &first, &r));
	ASSERT_EQ(self->have, query_files(&t2));
	print_dl("changed, first round", &first);
	print_dl("changed", &r);
	if (self->have)
		printf("# file tables: %llu before the attach, %llu after the change, %llu after the child\n",
		       (unsigned long long)t0.file_tables,
		       (unsigned long long)t1.file_tables,
		       (unsigned long long)t2.file_tables);
	/*
	 * Not attached: nothing registered in the child, and its stacks
	 * through the library are the frame-pointer rule's, mostly wrong
	 * (code built without frame pointers), as with no table at all.
	 */
	EXPECT_EQ(first.before.nr_sections, r.after.nr_sections);
	EXPECT_EQ(with_table, r.after.nr_sections + 1);
	ASSERT_GE(r.in_lib, 20u);
	EXPECT_LT(r.lib_complete * 4, r.in_lib);
	EXPECT_EQ(first.before.errors, r.after.errors);
	if (self->have)
		EXPECT_GE(t0.file_tables + 1, t2.file_tables);

	/*
	 * The table of the file that was renamed over, which has no name
	 * left, is swept by this detach before it looks; one of a file
	 * changed in place may have been dropped already, or is swept too.
	 */
	ret = file_detach(self->lc.fd);
	if (variant->change == RENAME) {
		EXPECT_EQ(-ENOENT, ret);
	} else {
		EXPECT_TRUE(!ret || ret == -ENOENT) TH_LOG("detach: %s", strerror(-ret));
	}
}

/* The start of libc's text, where its table is registered. */
static int libc_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *n = strrchr(info->dlpi_name, '/');
	const ElfW(Phdr) *p;

	(void)size;
	if (!n || strcmp(n, "/libc.so.6"))
		return 0;
	p = exec_segment(info->dlpi_phdr, info->dlpi_phnum);
	if (!p)
		return 0;
	*(uint64_t *)arg = info->dlpi_addr + p->p_vaddr;
	return 1;
}

/* Is libc's table registered here? Unregistered if it is. */
static bool libc_table_taken(uint64_t text)
{
	return text && !unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, text, 0, 0);
}

/*
 * The new program of libc.fault_injection_exec, which met the n-th
 * allocation failing during its exec and start-up or not (fail-nth
 * survives exec): does it have libc's table?
 */
static int fault_child(void)
{
	double seconds = 0.2;
	uint64_t text = 0;
	bool table;

	dl_iterate_phdr(libc_text, &text);
	table = libc_table_taken(text);
	if (!fail_nth_open() && !fail_nth_hit())
		return table ? FC_CLEAN : FC_NO_TABLE;
	if (table)
		return FC_HIT;
	/* Left to the first walk that may sleep through libc. */
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0 || sample_stacks_kernel(prime_work, &seconds, FREQ, &stacks))
		return FC_ERROR;
	return libc_table_taken(text) ? FC_HIT_WALK : FC_HIT_NEVER;
}

/* The machine's provider of file tables: this process. */

static long provide(void)
{
	long fd = prctl(PR_UNWIND_USER, UNWIND_USER_FILE_PROVIDE, 0, 0, 0);

	return fd < 0 ? -errno : fd;
}

/*
 * Other files the provider tests were asked for (libc, ld.so, ...), which
 * they answer "nothing": their walks are not to wait for them. Each is
 * detached at the fixture's end.
 */
struct others {
	int fd[64];
	int nr;
};

static void answer_none(struct others *o, int fd)
{
	struct unwind_user_file f = { .fd = fd, .flags = UNWIND_USER_FILE_F_NONE };

	if (o->nr < (int)ARRAY_SIZE(o->fd) && !file_attach(&f)) {
		o->fd[o->nr++] = fd;
		return;
	}
	close(fd);
}

static void others_fini(struct others *o)
{
	while (o->nr > 0) {
		o->nr--;
		file_detach(o->fd[o->nr]);
		close(o->fd[o->nr]);
	}
}

/*
 * The want of the file @st names, read from the provider @pfd within
 * @msec ms: 0 with it in @w (its descriptor open), or -1. Other files
 * asked for meanwhile are answered "nothing" (@o).
 */
static int want_of(int pfd, const struct stat *st, struct unwind_user_file_want *w,
		   int msec, struct others *o)
{
	struct unwind_user_file_want recs[8];
	struct pollfd p = { .fd = pfd, .events = POLLIN };
	double end = now_seconds() + msec / 1000.0;
	int found = -1;

	while (found && now_seconds() < end) {
		ssize_t n, i;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(pfd, recs, sizeof(recs));
		for (i = 0; i < n / (ssize_t)sizeof(recs[0]); i++) {
			struct stat fst;

			if (recs[i].fd < 0)
				continue;
			if (found && !fstat(recs[i].fd, &fst) &&
			    fst.st_dev == st->st_dev && fst.st_ino == st->st_ino) {
				*w = recs[i];
				found = 0;
				continue;
			}
			answer_none(o, recs[i].fd);
		}
	}
	return found;
}

FIXTURE(provider) {
	struct lib_copy lc;
	struct file_info t0;
	int have;
	int fd;			/* the provider's descriptor */
	struct stat st;		/* the copy's */
	struct others o;
};

FIXTURE_SETUP(provider)
{
	long fd;

	self->fd = -1;
	lib_fixture_setup(_metadata, &self->lc, &self->have, &self->t0);
	ASSERT_EQ(0, fstat(self->lc.fd, &self->st));
	fd = provide();
	if (fd == -EINVAL)
		SKIP(return, "no UNWIND_USER_FILE_PROVIDE in this kernel");
	if (fd == -EBUSY)
		SKIP(return, "another provider of file tables is registered");
	ASSERT_LE(0, fd) TH_LOG("UNWIND_USER_FILE_PROVIDE: %s", strerror(-fd));
	self->fd = fd;
}

FIXTURE_TEARDOWN(provider)
{
	if (self->fd >= 0)
		close(self->fd);
	others_fini(&self->o);
	lib_copy_fini(&self->lc);
}

/* Closes the provider's descriptor and registers again: the new one, or -errno. */
static long provider_again(FIXTURE_DATA(provider) *self)
{
	long fd;

	close(self->fd);
	self->fd = -1;
	fd = provide();
	if (fd >= 0)
		self->fd = fd;
	return fd;
}

static void print_waits(const char *what, const struct result *r)
{
	print_dl(what, r);
	printf("# %s: %u wrong, table_waits +%llu\n", what, r->lib_wrong,
	       (unsigned long long)(r->after.table_waits - r->before.table_waits));
}

/* Every errno of the registration; its descriptor. */
TEST_F(provider, abi)
{
	char small[8];
	int status, fl;
	pid_t pid;

	EXPECT_EQ(-EBUSY, provide());
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_FILE_PROVIDE, 1, 0, 0));
	EXPECT_EQ(-EINVAL, unwind_prctl(UNWIND_USER_FILE_PROVIDE, 0, 0, 1));
	fl = fcntl(self->fd, F_GETFD);
	EXPECT_TRUE(fl >= 0 && (fl & FD_CLOEXEC));
	EXPECT_EQ(-1, read(self->fd, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);

	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (drop_to_nobody(0))
			_exit(1);
		if (provide() != -EPERM)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("status %#x", status);
	/*
	 * CAP_PERFMON is not enough; CAP_SYS_ADMIN is, refused only because
	 * one is registered.
	 */
	for (int i = 0; i < 2; i++) {
		uint32_t lo = i ? 0 : 1u << CAP_SYS_ADMIN;

		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			if (drop_to_nobody_caps(lo, 1u << (CAP_PERFMON - 32)))
				_exit(1);
			_exit(provide() == (i ? -EPERM : -EBUSY) ? 0 : 2);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("caps %#x: status %#x", lo, status);
	}

	/* Closing the descriptor ends the registration. */
	ASSERT_LE(0, provider_again(self));
}

/*
 * Asked once, with a descriptor of the mapped file that works when the file
 * has no name left; stacks end at the library meanwhile; the answer is
 * used at the next walk.
 */
TEST_F_TIMEOUT(provider, asked_once_then_attached, 120)
{
	struct unwind_user_file f = file_of(&self->lc);
	struct result n, d1, d2, d3;
	struct unwind_user_file_want w, w2;
	struct timespec now;
	struct stat fst;
	struct child c;
	int status, ret;

	ASSERT_EQ(0, child_start(&c, self->lc.path));
	ret = child_run(&c, 'n', 0, &n);
	/* Mapped by the child: unlinked, the file is reached by descriptor. */
	ASSERT_EQ(0, unlink(self->lc.path));
	if (!ret)
		ret = child_run(&c, 'd', 1000, &d1);
	ASSERT_EQ(0, ret) TH_LOG("child: status %d", d1.status);
	print_waits("before the answer", &d1);
	ASSERT_EQ(0, want_of(self->fd, &self->st, &w, 2000, &self->o));
	EXPECT_LE(1u, w.walks);
	EXPECT_EQ(sizeof(w), w.size);
	ASSERT_EQ(0, clock_gettime(CLOCK_MONOTONIC, &now));
	EXPECT_LT(0, w.asked_ns);
	EXPECT_GE(now.tv_sec * 1000000000ull + now.tv_nsec, w.asked_ns);
	EXPECT_EQ(O_RDONLY, fcntl(w.fd, F_GETFL) & O_ACCMODE);
	EXPECT_TRUE(fcntl(w.fd, F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(0, fstat(w.fd, &fst));
	EXPECT_EQ(0, fst.st_nlink);
	ASSERT_GE(d1.in_lib, 20u);
	EXPECT_EQ(0, d1.lib_complete);
	EXPECT_EQ(0, d1.lib_wrong);
	EXPECT_LT(d1.before.table_waits, d1.after.table_waits);

	/* Still not answered: the same, and not asked again. */
	ret = child_run(&c, 'd', 300, &d2);
	ASSERT_EQ(0, ret);
	print_waits("still not answered", &d2);
	EXPECT_EQ(0, d2.lib_wrong);
	EXPECT_EQ(0, d2.lib_complete);
	EXPECT_LT(d2.before.table_waits, d2.after.table_waits);
	EXPECT_EQ(-1, want_of(self->fd, &self->st, &w2, 300, &self->o));

	/* The answer, through the descriptor the kernel gave. */
	f.fd = w.fd;
	ASSERT_EQ(0, file_attach(&f));
	ret = child_run(&c, 'd', 500, &d3);
	status = child_stop(&c);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	print_waits("answered", &d3);
	ASSERT_GE(d3.in_lib, 20u);
	EXPECT_EQ(d3.in_lib, d3.lib_complete);
	EXPECT_EQ(d3.before.table_waits, d3.after.table_waits);
	EXPECT_EQ(0, file_detach(w.fd));
	close(w.fd);
}

/*
 * "Nothing for this file": taken while the file is open for writing,
 * remembered, also by the next provider.
 */
TEST_F_TIMEOUT(provider, answered_none, 120)
{
	struct unwind_user_file f = { .flags = UNWIND_USER_FILE_F_NONE };
	struct unwind_user_file_want w;
	struct result d1, d2, d3;
	struct child c;
	int status, ret, writer;

	ASSERT_EQ(0, child_start(&c, self->lc.path));
	ret = child_run(&c, 'd', 300, &d1);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, want_of(self->fd, &self->st, &w, 2000, &self->o));
	f.fd = w.fd;
	f.sframe_size = 1;
	EXPECT_EQ(-EINVAL, file_attach(&f));
	f.sframe_size = 0;
	/* Open for writing, as a JIT's memfd is: "nothing" is still taken. */
	writer = open(self->lc.path, O_WRONLY);
	ASSERT_LE(0, writer);
	ASSERT_EQ(0, file_attach(&f));
	close(writer);
	ret = child_run(&c, 'd', 300, &d2);
	ASSERT_EQ(0, ret);
	print_waits("answered none", &d2);
	ASSERT_GE(d2.in_lib, 20u);
	EXPECT_EQ(d2.before.table_waits, d2.after.table_waits);

	ASSERT_LE(0, provider_again(self));
	ret = child_run(&c, 'd', 300, &d3);
	status = child_stop(&c);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	EXPECT_EQ(d3.before.table_waits, d3.after.table_waits);
	EXPECT_EQ(-1, want_of(self->fd, &self->st, &w, 300, &self->o));
	EXPECT_EQ(0, file_detach(f.fd));
	close(f.fd);
}

/*
 * A provider that goes without answering: a new one registered within the
 * grace period is asked again, and walks wait meanwhile; once no provider
 * has been registered for the grace period (5 s), nothing is waited for.
 */
TEST_F_TIMEOUT(provider, provider_restarted_then_gone, 120)
{
	struct unwind_user_file_want w;
	struct result d1, d2, d3;
	struct child c;
	int status, ret;

	ASSERT_EQ(0, child_start(&c, self->lc.path));
	ret = child_run(&c, 'd', 300, &d1);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, want_of(self->fd, &self->st, &w, 2000, &self->o));
	close(w.fd);

	/* Killed and restarted: asked again, and waited for meanwhile. */
	ASSERT_LE(0, provider_again(self));
	ret = child_run(&c, 'd', 300, &d2);
	ASSERT_EQ(0, ret);
	print_waits("a restarted provider", &d2);
	EXPECT_EQ(0, d2.lib_wrong);
	EXPECT_LT(d2.before.table_waits, d2.after.table_waits);
	ASSERT_EQ(0, want_of(self->fd, &self->st, &w, 2000, &self->o));
	close(w.fd);

	/* Gone for good: after the grace period, the frame-pointer rule. */
	close(self->fd);
	self->fd = -1;
	usleep(5500 * 1000);
	ret = child_run(&c, 'd', 300, &d3);
	status = child_stop(&c);
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	print_waits("provider gone", &d3);
	ASSERT_GE(d3.in_lib, 20u);
	EXPECT_EQ(d3.before.table_waits, d3.after.table_waits);
}

int main(int argc, char **argv)
{
	/* A call, not a jump: main stays on the children's stacks. */
	if (argc >= 4 && !strcmp(argv[1], CHILD_ARG))
		exit(child_main(argc, argv));
	if (argc == 2 && !strcmp(argv[1], FAULT_CHILD_ARG))
		return fault_child();
	return test_harness_run(argc, argv);
}
