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
 *
 * The module must never break the program: whatever fails, the object is
 * left unregistered and the program runs as it would without the module.
 * It reads the object's file with plain system calls, allocates nothing
 * and keeps its state in a fixed table.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>
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

static void report(const struct object *o, const char *what, int err)
{
	char buf[512];
	int n;

	if (!debug)
		return;
	n = snprintf(buf, sizeof(buf), "unwind_user_audit: %s: %s: %s (%d)\n",
		     o->path, what, strerror(err), err);
	if (n > (int)sizeof(buf) - 1)
		n = sizeof(buf) - 1;
	if (n > 0 && write(STDERR_FILENO, buf, n) < 0)
		return;
}

static int read_full(int fd, void *buf, size_t len, off_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
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
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
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

			memcpy(&nh, note + off, sizeof(nh));
			desc = name + ((nh.n_namesz + 3) & ~3UL);
			next = desc + ((nh.n_descsz + 3) & ~3UL);
			if (nh.n_namesz > len || nh.n_descsz > len || next > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(note + name, "GNU", 4) && nh.n_descsz &&
			    nh.n_descsz <= sizeof(o->build_id)) {
				memcpy(o->build_id, note + desc, nh.n_descsz);
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
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = read_full(fd, mem, o->build_id_len,
			o->lm->l_addr + o->build_id_vaddr);
	close(fd);
	if (ret)
		return ret;
	return memcmp(mem, o->build_id, o->build_id_len) ? -ESTALE : 0;
}

static int sframe_register(struct unwind_user_sframe *s)
{
	if (prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_REGISTER,
		  (unsigned long)s, sizeof(*s), 0))
		return -errno;
	return 0;
}

/* Map the cached section of @o's build ID: 0, or -errno. */
static int map_cached(struct object *o, void **map, size_t *len)
{
	static const char hex[] = "0123456789abcdef";
	const char *dir = getenv("UNWIND_USER_SFRAME_CACHE");
	char path[4096];
	struct stat st;
	unsigned int i;
	size_t n;
	int fd, err;

	if (!o->build_id_len)
		return -ENODATA;
	if (!dir || !*dir)
		dir = DEFAULT_CACHE;
	n = strlen(dir);
	if (n + 2 + 2 * o->build_id_len + sizeof(".sframe") > sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, n);
	path[n++] = '/';
	for (i = 0; i < o->build_id_len; i++) {
		path[n++] = hex[o->build_id[i] >> 4];
		path[n++] = hex[o->build_id[i] & 15];
	}
	memcpy(path + n, ".sframe", sizeof(".sframe"));

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = errno;
		close(fd);
		return -err;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || st.st_size > MAX_SECTION) {
		close(fd);
		return -EINVAL;
	}
	*len = st.st_size;
	*map = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
	err = errno;
	close(fd);
	return *map == MAP_FAILED ? -err : 0;
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
		report(o, "too many objects", ENOSPC);
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
		report(o, "no executable segment", ENOEXEC);
		return NULL;
	}
	ret = check_mapped(o);
	if (ret) {
		report(o, "file differs from the mapped object", -ret);
		return NULL;
	}

	if (sframe) {
		/*
		 * The kernel registered the executable's and ld.so's at exec:
		 * EEXIST then, and the registration is not ours to undo.
		 */
		s.sframe_start = bias + sframe->p_vaddr;
		s.sframe_size = sframe->p_memsz;
		ret = sframe_register(&s);
		if (ret) {
			if (ret != -EEXIST)
				report(o, "registering PT_GNU_SFRAME", -ret);
			return NULL;
		}
		*r = (struct reg){ s.text_start, NULL, 0, true };
		return r;
	}

	ret = map_cached(o, &map, &len);
	if (ret) {
		report(o, "no synthesized section in the cache", -ret);
		return NULL;
	}
	/* Its addresses are the object's link-time ones: at the load bias. */
	s.sframe_start = (uintptr_t)map;
	s.sframe_size = len;
	s.flags = UNWIND_USER_SFRAME_F_ADDR;
	s.sframe_addr = bias;
	ret = sframe_register(&s);
	if (ret) {
		munmap(map, len);
		report(o, "registering the synthesized section", -ret);
		return NULL;
	}
	*r = (struct reg){ s.text_start, map, len, true };
	return r;
}

EXPORT unsigned int la_version(unsigned int version)
{
	const char *d = getenv("UNWIND_USER_AUDIT_DEBUG");
	struct unwind_user_info info;

	debug = d && *d && strcmp(d, "0");
	/* A kernel without the unwinder: nothing to do for any object. */
	if (prctl(PR_UNWIND_USER, UNWIND_USER_QUERY, (unsigned long)&info,
		  sizeof(info), 0)) {
		struct object o = { .path = "(kernel)" };

		report(&o, "PR_UNWIND_USER", errno);
		disabled = true;
	}
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid,
			       uintptr_t *cookie)
{
	struct object o = { .lm = map };
	struct reg *r;
	int ret;

	*cookie = 0;
	if (disabled)
		return 0;
	/* The vDSO: no file. */
	if (map->l_addr && map->l_addr == getauxval(AT_SYSINFO_EHDR))
		return 0;
	o.path = map->l_name && *map->l_name ? map->l_name : "/proc/self/exe";
	o.fd = open(o.path, O_RDONLY | O_CLOEXEC);
	if (o.fd < 0) {
		report(&o, "open", errno);
		return 0;
	}
	ret = read_object(&o);
	if (ret) {
		report(&o, "reading the ELF headers", -ret);
		close(o.fd);
		return 0;
	}
	close(o.fd);
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
	prctl(PR_UNWIND_USER, UNWIND_USER_SFRAME_UNREGISTER,
	      (unsigned long)r->text_start, 0, 0);
	if (r->map)
		munmap(r->map, r->len);
	r->used = false;
	*cookie = 0;
	return 0;
}
