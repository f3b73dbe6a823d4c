// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_user_audit.so: an LD_AUDIT module that registers an SFrame section
 * with the kernel for every object ld.so loads, and unregisters it when the
 * object is unloaded.
 *
 * For each object: its own PT_GNU_SFRAME segment if it has one, else the
 * section that sframe-synth (tools/unwind_user/sframe_synth) synthesized
 * from the object's .eh_frame, found in a cache directory under the
 * object's GNU build ID and mapped read-only. See README.md here and
 * Documentation/userspace-api/unwind_user.rst.
 *
 *   LD_AUDIT=/path/to/unwind_user_audit.so program
 *
 * Environment:
 *   UNWIND_USER_SFRAME_CACHE  the cache directory (default below)
 *   UNWIND_USER_AUDIT_DEBUG   1: report every failure on stderr, once
 * both read once, before the program starts, and both ignored if the
 * process runs with AT_SECURE (setuid, setgid, file capabilities): then
 * the cache is the default one and nothing is reported.
 *
 * A cache file is used only if it and the cache directory are trusted
 * (trusted() below): owned by root or by the user the process was started
 * as, and writable by their owner only.
 *
 * The module must never break the program: whatever fails, the object is
 * left unregistered and the program runs as it would without the module.
 * It reads the object's file with plain system calls, allocates nothing
 * and keeps its state in a fixed table.
 *
 * It needs no libc: ld.so would load and relocate a second copy of libc,
 * and run its initialization, for an audit module that does (audit modules
 * live in a namespace of their own), which was most of what the module
 * added to a program's start-up. It makes its system calls itself and
 * links only to ld.so, for __libc_stack_end (the initial stack: the
 * environment and the auxiliary vector).
 */
#define _GNU_SOURCE	/* <link.h>: Lmid_t, LAV_CURRENT */
#include <elf.h>
#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>	/* struct stat: the kernel's on x86_64 */
#include <asm/unistd.h>
#include <linux/auxvec.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/mman.h>
#include <linux/prctl.h>
#include <linux/unwind_user.h>

#define DEFAULT_CACHE	"/var/cache/unwind_user"

/* <linux/prctl.h> of a kernel with the unwinder; the host's may be older. */
#ifndef PR_UNWIND_USER
#define PR_UNWIND_USER	82
#endif

#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME	0x6474e554
#endif

/* Most program headers read; objects have about ten. */
#define MAX_PHDRS	64
/* Bytes of one PT_NOTE segment searched for the build ID. */
#define MAX_NOTES	2048
/* The kernel's limits: registrations per process, bytes per section. */
#define MAX_REGS	1024
#define MAX_SECTION	(64 << 20)

#define EXPORT	__attribute__((visibility("default")))
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * The C library's few pieces the module needs, without it. A call the
 * compiler makes to the C library (memcpy() for a large copy, say) fails
 * the link (--no-undefined): none must creep in.
 */

static void copy_bytes(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
}

static bool bytes_equal(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	while (n--)
		if (*x++ != *y++)
			return false;
	return true;
}

static size_t str_len(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* A system call: its result, or -errno. */
static long sys(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static int sys_openat(int dirfd, const char *path, int flags)
{
	return sys(__NR_openat, dirfd, (long)path, O_RDONLY | O_CLOEXEC | flags,
		   0, 0, 0);
}

static int sys_open(const char *path)
{
	return sys_openat(AT_FDCWD, path, 0);
}

static int sys_fstat(int fd, struct stat *st)
{
	return sys(__NR_fstat, fd, (long)st, 0, 0, 0, 0);
}

static void sys_close(int fd)
{
	sys(__NR_close, fd, 0, 0, 0, 0, 0);
}

static long sys_prctl(long option, long a, long b, long c)
{
	return sys(__NR_prctl, option, a, b, c, 0, 0);
}

static void sys_munmap(void *addr, size_t len)
{
	sys(__NR_munmap, (long)addr, len, 0, 0, 0, 0);
}

/*
 * ld.so's pointer to the stack the program started with: argc, argv[],
 * NULL, envp[], NULL, the auxiliary vector (the x86_64 ABI; ld.so moves
 * them down together when it is run as a command).
 */
extern void *__libc_stack_end;

static char **initial_env(void)
{
	long *sp = __libc_stack_end;

	return sp ? (char **)(sp + 1 + *sp + 1) : NULL;
}

/* The value of the environment variable @name, or NULL. */
static const char *env(const char *name)
{
	size_t n = str_len(name);
	char **e = initial_env();

	for (; e && *e; e++)
		if (bytes_equal(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/*
 * The auxiliary vector's entry @type, or 0. It starts after the NULL that
 * ends the environment, and after any NULL that follows: under AT_SECURE
 * ld.so removes variables (LD_AUDIT, LD_PRELOAD, ...) by moving the later
 * pointers down, which leaves a NULL more before the vector for each one.
 * No entry of the vector is 0 but the last (the kernel always gives some).
 */
static unsigned long auxval(unsigned long type)
{
	char **e = initial_env();
	unsigned long *av;

	if (!e)
		return 0;
	while (*e)
		e++;
	while (!*e)
		e++;
	for (av = (unsigned long *)e; av[0] != AT_NULL; av += 2)
		if (av[0] == type)
			return av[1];
	return 0;
}

/* What la_objclose() undoes: one registration of ours. */
struct reg {
	uint64_t text_start;
	void *map;		/* the cache file's mapping, or NULL */
	size_t len;
	bool used;
};

static struct reg regs[MAX_REGS];
static bool debug;
static bool disabled;

/*
 * What la_version() read from the initial stack. Under AT_SECURE the
 * environment is that of whoever ran the program, who may be less
 * privileged than the process: none of it is used.
 */
static bool secure;
static unsigned long start_euid;	/* AT_EUID: the uid at exec */
static char cache_dir[4096];

/* The object as read from its file. */
struct object {
	const char *path;
	struct link_map *lm;
	int fd;
	Elf64_Phdr ph[MAX_PHDRS];
	unsigned int phnum;
	uint8_t build_id[64];
	unsigned int build_id_len;
	uint64_t build_id_vaddr;
};

/* One line of a report, cut at its end. */
struct line {
	char buf[512];
	size_t len;
};

static void put(struct line *l, const char *s)
{
	while (*s && l->len < sizeof(l->buf) - 1)
		l->buf[l->len++] = *s++;
}

static void put_num(struct line *l, unsigned int v)
{
	char digits[12];
	unsigned int n = sizeof(digits) - 1;

	digits[n] = 0;
	do {
		digits[--n] = '0' + v % 10;
		v /= 10;
	} while (v);
	put(l, digits + n);
}

/* The errors the module can meet, by name; others by number only. */
static const char *const err_names[] = {
	[EPERM] = "EPERM", [ENOENT] = "ENOENT", [EINTR] = "EINTR",
	[EIO] = "EIO", [E2BIG] = "E2BIG", [ENOEXEC] = "ENOEXEC",
	[EBADF] = "EBADF", [ENOMEM] = "ENOMEM", [EACCES] = "EACCES",
	[EFAULT] = "EFAULT", [EBUSY] = "EBUSY", [EEXIST] = "EEXIST",
	[ENODEV] = "ENODEV", [ENOTDIR] = "ENOTDIR", [EISDIR] = "EISDIR",
	[EINVAL] = "EINVAL", [ENFILE] = "ENFILE", [EMFILE] = "EMFILE",
	[EFBIG] = "EFBIG", [ENOSPC] = "ENOSPC", [ERANGE] = "ERANGE",
	[ENAMETOOLONG] = "ENAMETOOLONG", [ELOOP] = "ELOOP",
	[ENODATA] = "ENODATA", [EOVERFLOW] = "EOVERFLOW",
	[EOPNOTSUPP] = "EOPNOTSUPP", [ESTALE] = "ESTALE",
};

static void put_mode(struct line *l, unsigned int mode)
{
	char digits[] = "0000";
	unsigned int i;

	for (i = 0; i < 4; i++)
		digits[i] = '0' + ((mode >> (9 - 3 * i)) & 7);
	put(l, digits);
}

/* "unwind_user_audit: @path: @what" and, after it, report_end(). */
static void report_start(struct line *l, const char *path, const char *what)
{
	put(l, "unwind_user_audit: ");
	put(l, path);
	put(l, ": ");
	put(l, what);
}

/* ": ENAME (@err)" and the line out on stderr. */
static void report_end(struct line *l, int err)
{
	put(l, ": ");
	if (err > 0 && err < (int)ARRAY_SIZE(err_names) &&
	    err_names[err]) {
		put(l, err_names[err]);
		put(l, " ");
	}
	put(l, "(");
	put_num(l, err);
	put(l, ")");
	l->buf[l->len++] = '\n';
	sys(__NR_write, 2, (long)l->buf, l->len, 0, 0, 0);
}

static void report(const char *path, const char *what, int err)
{
	struct line l = { .len = 0 };

	if (!debug)
		return;
	report_start(&l, path, what);
	report_end(&l, err);
}

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		long n = sys(__NR_pread64, fd, (long)buf + done, len - done,
			     off + done, 0, 0);

		if (n == -EINTR)
			continue;
		if (n < 0)
			return n;
		if (n == 0)
			return -ENODATA;
		done += n;
	}
	return 0;
}

/* The program headers and the GNU build ID of @o's file. */
static int read_object(struct object *o)
{
	unsigned char note[MAX_NOTES];
	Elf64_Ehdr eh;
	unsigned int i;
	int ret;

	ret = read_full(o->fd, &eh, sizeof(eh), 0);
	if (ret)
		return ret;
	if (!bytes_equal(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	if (eh.e_phnum > MAX_PHDRS)
		return -E2BIG;
	o->phnum = eh.e_phnum;
	ret = read_full(o->fd, o->ph, o->phnum * sizeof(Elf64_Phdr), eh.e_phoff);
	if (ret)
		return ret;

	for (i = 0; i < o->phnum && !o->build_id_len; i++) {
		const Elf64_Phdr *p = &o->ph[i];
		size_t len = p->p_filesz < sizeof(note) ? p->p_filesz : sizeof(note);
		size_t off = 0;

		if (p->p_type != PT_NOTE || read_full(o->fd, note, len, p->p_offset))
			continue;
		while (off + sizeof(Elf64_Nhdr) <= len) {
			Elf64_Nhdr nh;
			size_t name = off + sizeof(nh), desc, next;

			copy_bytes(&nh, note + off, sizeof(nh));
			desc = name + ((nh.n_namesz + 3) & ~3UL);
			next = desc + ((nh.n_descsz + 3) & ~3UL);
			if (nh.n_namesz > len || nh.n_descsz > len || next > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    bytes_equal(note + name, "GNU", 4) && nh.n_descsz &&
			    nh.n_descsz <= sizeof(o->build_id)) {
				copy_bytes(o->build_id, note + desc, nh.n_descsz);
				o->build_id_len = nh.n_descsz;
				o->build_id_vaddr = p->p_vaddr + desc;
				break;
			}
			off = next;
		}
	}
	return 0;
}

/*
 * Is the file what ld.so mapped? A file replaced since it was loaded would
 * give program headers, and a section, for other code. The dynamic
 * section must be where ld.so found it, and the build ID in memory must
 * be the file's (read through /proc/self/mem, which fails rather than
 * faults if the address is not mapped).
 */
static int check_mapped(const struct object *o)
{
	uint8_t mem[sizeof(o->build_id)];
	unsigned int i;
	int fd, ret;

	for (i = 0; i < o->phnum; i++)
		if (o->ph[i].p_type == PT_DYNAMIC && o->lm->l_ld &&
		    o->lm->l_addr + o->ph[i].p_vaddr != (uintptr_t)o->lm->l_ld)
			return -ESTALE;
	if (!o->build_id_len)
		return 0;
	fd = sys_open("/proc/self/mem");
	if (fd < 0)
		return fd;
	ret = read_full(fd, mem, o->build_id_len,
			o->lm->l_addr + o->build_id_vaddr);
	sys_close(fd);
	if (ret)
		return ret;
	return bytes_equal(mem, o->build_id, o->build_id_len) ? 0 : -ESTALE;
}

static int sframe_register(struct unwind_user_sframe *s)
{
	return sys_prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER,
			 (long)s, sizeof(*s));
}

/*
 * May the cache directory or file @st be used? Its owner must be root or,
 * unless the process runs with AT_SECURE, the user it was started as: the
 * effective uid at exec (AT_EUID), which outside AT_SECURE is also the
 * real one (the kernel sets AT_SECURE when an exec changes the effective
 * ids). Under AT_SECURE root alone: the real uid is whoever ran the
 * program, and the effective one may be the same user too (a setgid
 * program, file capabilities). The uid at exec, not the one now: a
 * process that changes its ids later trusts no uid it switched to. And
 * no one but the owner may write to it: not its group, not the others.
 */
static bool trusted(const struct stat *st)
{
	if (st->st_uid && (secure || st->st_uid != start_euid))
		return false;
	return !(st->st_mode & 0022);	/* group- or world-writable */
}

/* The debug report of a cache directory or file trusted() refused. */
static void report_refused(const char *obj, const char *what,
			   const char *path, const struct stat *st)
{
	struct line l = { .len = 0 };

	if (!debug)
		return;
	report_start(&l, obj, what);
	put(&l, " ");
	put(&l, path);
	put(&l, " (uid ");
	put_num(&l, st->st_uid);
	put(&l, ", mode ");
	put_mode(&l, st->st_mode & 07777);
	put(&l, ")");
	report_end(&l, EPERM);
}

/*
 * Map the cached section of @o's build ID: 0, or -errno, reported. The
 * directory is opened and checked first, and the file opened from it, so
 * that what is checked is what is read: both checks are fstat()s of the
 * descriptors the file is then opened from and mapped from.
 */
static int map_cached(struct object *o, void **map, size_t *len)
{
	static const char hex[] = "0123456789abcdef";
	char path[sizeof(cache_dir) + 2 * sizeof(o->build_id) + 16];
	const char *name;
	struct stat st;
	unsigned int i;
	int dfd, fd, err;
	size_t n;
	long addr;

	if (!o->build_id_len) {
		err = -ENODATA;
		goto out;
	}
	n = str_len(cache_dir);
	copy_bytes(path, cache_dir, n);
	path[n++] = '/';
	name = path + n;
	for (i = 0; i < o->build_id_len; i++) {
		path[n++] = hex[o->build_id[i] >> 4];
		path[n++] = hex[o->build_id[i] & 15];
	}
	copy_bytes(path + n, ".sframe", sizeof(".sframe"));

	/* O_PATH: searching the directory is enough, as for a path. */
	dfd = sys_openat(AT_FDCWD, cache_dir, O_PATH | O_DIRECTORY);
	if (dfd < 0) {
		err = dfd;
		goto out;
	}
	err = sys_fstat(dfd, &st);
	if (err) {
		sys_close(dfd);
		goto out;
	}
	if (!trusted(&st)) {
		report_refused(o->path, "untrusted cache directory",
			       cache_dir, &st);
		sys_close(dfd);
		return -EPERM;
	}
	/* A symbolic link would lead out of the directory checked: refused. */
	fd = sys_openat(dfd, name, O_NOFOLLOW);
	sys_close(dfd);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	err = sys_fstat(fd, &st);
	if (!err && (!S_ISREG(st.st_mode) || st.st_size <= 0 ||
		     st.st_size > MAX_SECTION))
		err = -EINVAL;
	if (!err && !trusted(&st)) {
		report_refused(o->path, "untrusted cache file", path, &st);
		sys_close(fd);
		return -EPERM;
	}
	if (err) {
		sys_close(fd);
		goto out;
	}
	*len = st.st_size;
	addr = sys(__NR_mmap, 0, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	sys_close(fd);
	/* mmap's errors are the top page of addresses. */
	if ((unsigned long)addr > -4096UL) {
		err = addr;
		goto out;
	}
	*map = (void *)addr;
	return 0;
out:
	report(o->path, "no synthesized section in the cache", -err);
	return err;
}

static struct reg *new_reg(void)
{
	unsigned int i;

	for (i = 0; i < MAX_REGS; i++)
		if (!regs[i].used)
			return &regs[i];
	return NULL;
}

/* Register @o: its own section, else the cached one. */
static struct reg *register_object(struct object *o)
{
	struct unwind_user_sframe s = { 0 };
	const Elf64_Phdr *sframe = NULL;
	struct reg *r = new_reg();
	uint64_t bias = o->lm->l_addr;
	unsigned int i;
	void *map = NULL;
	size_t len = 0;
	int ret;

	if (!r) {
		report(o->path, "too many objects", ENOSPC);
		return NULL;
	}
	for (i = 0; i < o->phnum; i++) {
		const Elf64_Phdr *p = &o->ph[i];

		if (p->p_type == PT_GNU_SFRAME) {
			sframe = p;
		} else if (p->p_type == PT_LOAD && (p->p_flags & PF_X) &&
			   !s.text_start) {
			s.text_start = bias + p->p_vaddr;
			s.text_size = p->p_memsz;
		}
	}
	if (!s.text_start) {
		report(o->path, "no executable segment", ENOEXEC);
		return NULL;
	}
	ret = check_mapped(o);
	if (ret) {
		report(o->path, "file differs from the mapped object", -ret);
		return NULL;
	}

	if (sframe) {
		/*
		 * The kernel may have attached the file's own table first:
		 * EEXIST then, and the registration is not ours to undo.
		 */
		s.sframe_start = bias + sframe->p_vaddr;
		s.sframe_size = sframe->p_memsz;
		ret = sframe_register(&s);
		if (ret) {
			if (ret != -EEXIST)
				report(o->path, "registering PT_GNU_SFRAME", -ret);
			return NULL;
		}
		*r = (struct reg){ s.text_start, NULL, 0, true };
		return r;
	}

	/* map_cached() reports its failures itself. */
	if (map_cached(o, &map, &len))
		return NULL;
	/* Its addresses are the object's link-time ones: at the load bias. */
	s.sframe_start = (uintptr_t)map;
	s.sframe_size = len;
	s.flags = UNWIND_USER_SFRAME_F_ADDR;
	s.sframe_addr = bias;
	ret = sframe_register(&s);
	if (ret) {
		sys_munmap(map, len);
		report(o->path, "registering the synthesized section", -ret);
		return NULL;
	}
	*r = (struct reg){ s.text_start, map, len, true };
	return r;
}

EXPORT unsigned int la_version(unsigned int version)
{
	struct unwind_user_info info;
	const char *d, *dir;
	size_t n;
	long ret;

	/*
	 * The environment once, before the program can change it (some
	 * rewrite the initial stack's strings for their title), and not at
	 * all under AT_SECURE. Without an initial stack there is no
	 * auxiliary vector either: no environment, and root's files only.
	 */
	secure = auxval(AT_SECURE);
	start_euid = auxval(AT_EUID);
	d = secure ? NULL : env("UNWIND_USER_AUDIT_DEBUG");
	dir = secure ? NULL : env("UNWIND_USER_SFRAME_CACHE");
	debug = d && *d && !(d[0] == '0' && !d[1]);
	if (!dir || !*dir)
		dir = DEFAULT_CACHE;
	n = str_len(dir);
	/* Too long to open: no cache at all (""), not the default. */
	if (n < sizeof(cache_dir))
		copy_bytes(cache_dir, dir, n + 1);
	else
		report("UNWIND_USER_SFRAME_CACHE", "too long", ENAMETOOLONG);
	/* A kernel without the unwinder: nothing to do for any object. */
	ret = sys_prctl(PR_UNWIND_USER, UNWIND_USER_QUERY, (long)&info,
			sizeof(info));
	if (ret) {
		report("(kernel)", "PR_UNWIND_USER", -ret);
		disabled = true;
	}
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid,
			       uintptr_t *cookie)
{
	struct object o;
	struct reg *r;
	int ret;

	*cookie = 0;
	if (disabled)
		return 0;
	/* The vDSO: no file. */
	if (map->l_addr && map->l_addr == auxval(AT_SYSINFO_EHDR))
		return 0;
	/* Not the whole object: its 4 KiB of buffers need no clearing. */
	o.lm = map;
	o.phnum = 0;
	o.build_id_len = 0;
	o.build_id_vaddr = 0;
	o.path = map->l_name && *map->l_name ? map->l_name : "/proc/self/exe";
	o.fd = sys_open(o.path);
	if (o.fd < 0) {
		report(o.path, "open", -o.fd);
		return 0;
	}
	ret = read_object(&o);
	sys_close(o.fd);
	if (ret) {
		report(o.path, "reading the ELF headers", -ret);
		return 0;
	}
	r = register_object(&o);
	if (r)
		*cookie = (uintptr_t)r;
	/* No symbol binding to audit: no la_symbind, no PLT trampolines. */
	return 0;
}

EXPORT unsigned int la_objclose(uintptr_t *cookie)
{
	struct reg *r = (struct reg *)*cookie;

	if (!r)
		return 0;
	/* ENOENT: the kernel dropped it already (an unmap, a bad section). */
	sys_prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER,
		  (long)r->text_start, 0);
	if (r->map)
		sys_munmap(r->map, r->len);
	r->used = false;
	*cookie = 0;
	return 0;
}
