// SPDX-License-Identifier: GPL-2.0
/*
 * Files with their own SFrame section (gas --gsframe), described by the
 * kernel with no help from user space.
 *
 * exec_own_section: a copy of this program, a file whose table nothing
 * built yet, exec'ed and sampled at NMI/IRQ time. Nothing is read at exec:
 * the new program starts with no section; its first walk in its own code
 * ends there and asks for a deferred unwind, which builds the file's table
 * and attaches it; every stack after is complete. Exec'ed again, the
 * program has the table from its first instruction, and no walk stops.
 *
 * dlopen_own_section: a dlopen'ed library, copied
 * to a file of its own so that no table of it exists yet. The kernel
 * describes it by itself: the first walk that may sleep and meets its code
 * reads its PT_GNU_SFRAME segment and builds the file's table; every stack
 * through it then names every frame up to main, and user space registering
 * the same text (the way Documentation/userspace-api/unwind_user.rst shows)
 * is refused as a duplicate. dlclose() unmaps it and the registration goes
 * with it; dlopen() again attaches the table at once (mmap finds it), with
 * no walk; and the table goes when the file's inode does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

#define PT_GNU_SFRAME	0x6474e554

/* The kernel describes this program from its file, with no registration. */
bool unwind_test_no_self_register = true;

static volatile unsigned long sink;
static struct stacks stacks;

/* Called back from the library. */
void __attribute__((noipa)) spin_cb(void)
{
	unsigned long i, x = sink;

	for (i = 0; i < 3000; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	sink = x;
}

static double spin_seconds = 0.1;

/* Spins for *@arg seconds, in this program's code. */
void __attribute__((noipa)) spin_for(void *arg)
{
	double end = now_seconds() + *(double *)arg;

	do
		spin_cb();
	while (now_seconds() < end);
}

struct run {
	void (*chain)(void (*cb)(void), unsigned long n);
	double seconds;
};

void __attribute__((noipa)) dl_driver(void *arg)
{
	struct run *r = arg;
	double end = now_seconds() + r->seconds;

	do
		r->chain(spin_cb, 16);
	while (now_seconds() < end);
}

static const char *const chain[] = {
	"spin_cb", "dl_level2", "dl_level1", "dl_chain", "dl_driver",
	"sample_stacks",
};

static const char *const lib_syms[] = { "dl_chain", "dl_level1", "dl_level2" };

/* The library's section and text, found as the documentation shows. */
struct find {
	ElfW(Addr) base;
	struct unwind_user_sframe s;
};

static int find_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct find *f = arg;
	int i;

	if (info->dlpi_addr != f->base)
		return 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];

		if (p->p_type == PT_GNU_SFRAME) {
			f->s.sframe_start = info->dlpi_addr + p->p_vaddr;
			f->s.sframe_size = p->p_memsz;
		} else if (p->p_type == PT_LOAD && (p->p_flags & PF_X)) {
			f->s.text_start = info->dlpi_addr + p->p_vaddr;
			f->s.text_size = p->p_memsz;
		}
	}
	return 1;
}

/* A copy of libsframe_dl.so, a new file whose table nothing built yet. */
static char lib_copy[PATH_MAX];

/* Copies @from to @to, a new file, closed before anything maps it. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, ret = -1;
	ssize_t n = -1;

	in = open(from, O_RDONLY);
	out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0755);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			break;
	if (in >= 0 && out >= 0 && n == 0)
		ret = 0;
	if (in >= 0)
		close(in);
	/* A file open for writing gets no table. */
	if (out >= 0)
		close(out);
	return ret;
}

static int copy_lib(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/libsframe_dl.so", dirname(exe));
	snprintf(lib_copy, sizeof(lib_copy), "/tmp/libsframe_dl-%d.so", getpid());
	return copy_file(path, lib_copy);
}

static void *open_lib(struct __test_metadata *_metadata, struct find *f)
{
	Dl_info info;
	void *h, *fn;
	unsigned int i;

	h = dlopen(lib_copy, RTLD_NOW);
	if (!h) {
		TH_LOG("dlopen %s: %s", lib_copy, dlerror());
		return NULL;
	}
	sym_clear_added();
	for (i = 0; i < ARRAY_SIZE(lib_syms); i++) {
		ElfW(Sym) *sym = NULL;

		fn = dlsym(h, lib_syms[i]);
		if (!fn || !dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
			return NULL;
		sym_add(lib_syms[i], (uintptr_t)fn, sym->st_size);
	}
	memset(f, 0, sizeof(*f));
	f->base = (ElfW(Addr))info.dli_fbase;
	dl_iterate_phdr(find_lib, f);
	return h;
}

static struct tally sample(void *h, struct unwind_user_info *before,
			   struct unwind_user_info *after, const char *what)
{
	struct run r = { .chain = dlsym(h, "dl_chain"), .seconds = 1.0 };
	struct tally t = { .wrong = -1 };

	unwind_query(before);
	if (!r.chain || sample_stacks(dl_driver, &r, 4000, &stacks))
		return t;
	unwind_query(after);
	t = chain_check(&stacks, chain, ARRAY_SIZE(chain), "main", 3);
	printf("# %s: %u stacks, %d through the library, %d complete, %d wrong; sframe_frames +%llu fp_fallbacks +%llu nofault_faults +%llu\n",
	       what, stacks.nr, t.in_chain, t.complete, t.wrong,
	       (unsigned long long)(after->sframe_frames - before->sframe_frames),
	       (unsigned long long)(after->fp_fallbacks - before->fp_fallbacks),
	       (unsigned long long)(after->nofault_faults - before->nofault_faults));
	return t;
}

TEST(dlopen_own_section)
{
	struct unwind_user_info t0, before, after;
	struct tally first, again;
	struct find f;
	void *h;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, copy_lib());
	/* A walk that may sleep attaches the program's own table. */
	ASSERT_EQ(0, sample_stacks(spin_for, &spin_seconds, 1000, &stacks));
	ASSERT_EQ(0, unwind_query(&t0));
	/* Dynamic executable: its own section (ld.so and libc have none). */
	ASSERT_EQ(1, t0.nr_sections);
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	ASSERT_NE(0, f.s.sframe_start) TH_LOG("no PT_GNU_SFRAME in the library");
	ASSERT_NE(0, f.s.text_start);
	/* A file never seen: nothing attached before a walk reads it. */
	EXPECT_EQ(1, (unwind_query(&after), after.nr_sections));

	/* Described by its own section, from the first walk that may sleep. */
	first = sample(h, &before, &after, "first dlopen, table built by a walk");
	EXPECT_EQ(2, after.nr_sections);
	EXPECT_EQ(t0.file_tables + 1, after.file_tables);
	EXPECT_LT(t0.file_bytes, after.file_bytes);
	ASSERT_GE(first.in_chain, 20);
	EXPECT_EQ(0, first.wrong);
	EXPECT_EQ(first.in_chain, first.complete);
	EXPECT_EQ(after.errors, before.errors);
	/* Its text is described: user space's registration is a duplicate. */
	EXPECT_EQ(-EEXIST, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
					(unsigned long)&f.s, sizeof(f.s), 0));

	/* dlclose unmaps the library: the registration goes, the table stays. */
	ASSERT_EQ(0, dlclose(h));
	ASSERT_EQ(0, unwind_query(&after));
	EXPECT_EQ(1, after.nr_sections);
	EXPECT_EQ(t0.file_tables + 1, after.file_tables);
	EXPECT_EQ(-ENOENT, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					f.s.text_start, 0, 0));

	/* Loaded again: mmap attaches the file's table, before any walk. */
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, unwind_query(&after));
	EXPECT_EQ(2, after.nr_sections);
	again = sample(h, &before, &after, "loaded again, attached by mmap");
	ASSERT_GE(again.in_chain, 20);
	EXPECT_EQ(again.in_chain, again.complete);
	/*
	 * dlclose() unmapped all of the text, which left nothing to attach,
	 * and mmap attached the table again: hardly a walk stops to ask, and
	 * none attaches anything new.
	 */
	EXPECT_LE(after.nofault_faults - before.nofault_faults, 4);
	EXPECT_EQ(2, after.nr_sections);
	ASSERT_EQ(0, dlclose(h));

	/*
	 * The file's inode goes with its last reference: so does the table.
	 * Its memory is freed after the RCU grace period that retires the
	 * registry's old array.
	 */
	ASSERT_EQ(0, unlink(lib_copy));
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, unwind_query(&after));
		if (after.file_bytes == t0.file_bytes)
			break;
		usleep(10000);
	}
	EXPECT_EQ(1, after.nr_sections);
	EXPECT_EQ(t0.file_tables, after.file_tables);
	EXPECT_EQ(t0.file_bytes, after.file_bytes);
}

#define BUDGET_MAX "/proc/sys/kernel/unwind_user_file_bytes_max"
#define BUDGET_USER_MAX "/proc/sys/kernel/unwind_user_file_bytes_user_max"

/*
 * The budget's sysctls as they were, put back however the test ends; a new
 * copy of the library (removed then too) and the tables before the test,
 * this program's own attached by a walk.
 */
FIXTURE(budget) {
	char max[32], user_max[32];
	struct unwind_user_info t0;
};

static void read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? pread(fd, buf, len - 1, 0) : -1;

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

FIXTURE_SETUP(budget)
{
	read_text(BUDGET_MAX, self->max, sizeof(self->max));
	read_text(BUDGET_USER_MAX, self->user_max, sizeof(self->user_max));
	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, copy_lib());
	ASSERT_EQ(0, sample_stacks(spin_for, &spin_seconds, 1000, &stacks));
	ASSERT_EQ(0, unwind_query(&self->t0));
}

FIXTURE_TEARDOWN(budget)
{
	if (self->max[0])
		write_text(BUDGET_MAX, self->max);
	if (self->user_max[0])
		write_text(BUDGET_USER_MAX, self->user_max);
	unlink(lib_copy);
}

/*
 * The machine's budget of file tables reached: a file's own section is
 * not described (no table attached, the library left to the frame-pointer
 * rule), and is described once the budget has room again, by the next
 * mapping of the file and the walk after it, without the file changing.
 */
TEST_F(budget, own_section_over_budget)
{
	struct unwind_user_info t0, before, after;
	struct tally t;
	struct find f;
	void *h;

	if (!self->max[0])
		SKIP(return, "no %s", BUDGET_MAX);
	t0 = self->t0;
	/* No room for any table more. */
	ASSERT_EQ(0, write_text(BUDGET_MAX, "1"));

	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	t = sample(h, &before, &after, "over the budget, not described");
	EXPECT_EQ(t0.nr_sections, after.nr_sections);
	EXPECT_EQ(t0.file_tables, after.file_tables);
	EXPECT_EQ(t0.file_bytes, after.file_bytes);
	ASSERT_GE(t.in_chain, 20);
	ASSERT_EQ(0, dlclose(h));

	/* Room again: the next mapping of the file has it built. */
	ASSERT_EQ(0, write_text(BUDGET_MAX, self->max));
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	t = sample(h, &before, &after, "the budget has room again");
	EXPECT_EQ(t0.nr_sections + 1, after.nr_sections);
	EXPECT_EQ(t0.file_tables + 1, after.file_tables);
	ASSERT_GE(t.in_chain, 20);
	EXPECT_EQ(0, t.wrong);
	EXPECT_EQ(t.in_chain, t.complete);
	ASSERT_EQ(0, dlclose(h));
	ASSERT_EQ(0, unlink(lib_copy));
}

/*
 * Files root does not own have a part of the budget of their own: with it
 * spent, such a file (any user's program) is not described, while a file
 * root owns still is; with room again, the next mapping has it built.
 */
TEST_F(budget, own_section_user_budget)
{
	struct unwind_user_info t0, before, after;
	char users[PATH_MAX];
	struct tally t;
	struct find f;
	void *h;

	if (!self->user_max[0])
		SKIP(return, "no %s", BUDGET_USER_MAX);
	t0 = self->t0;
	/* A copy owned by nobody, beside the one root owns. */
	snprintf(users, sizeof(users), "%s", lib_copy);
	ASSERT_EQ(0, chown(users, 65534, 65534));
	ASSERT_EQ(0, write_text(BUDGET_USER_MAX, "1"));

	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	t = sample(h, &before, &after, "nobody's file, its part spent");
	EXPECT_EQ(t0.nr_sections, after.nr_sections);
	EXPECT_EQ(t0.file_tables, after.file_tables);
	ASSERT_GE(t.in_chain, 20);
	ASSERT_EQ(0, dlclose(h));

	snprintf(lib_copy, sizeof(lib_copy), "/tmp/libsframe_dl-%d-root.so", getpid());
	ASSERT_EQ(0, copy_file(users, lib_copy));
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	t = sample(h, &before, &after, "root's copy, meanwhile");
	EXPECT_EQ(t0.nr_sections + 1, after.nr_sections);
	EXPECT_EQ(t0.file_tables + 1, after.file_tables);
	EXPECT_EQ(t.in_chain, t.complete);
	ASSERT_EQ(0, dlclose(h));
	ASSERT_EQ(0, unlink(lib_copy));

	ASSERT_EQ(0, write_text(BUDGET_USER_MAX, self->user_max));
	snprintf(lib_copy, sizeof(lib_copy), "%s", users);
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	t = sample(h, &before, &after, "nobody's file, room again");
	EXPECT_EQ(t0.nr_sections + 1, after.nr_sections);
	ASSERT_GE(t.in_chain, 20);
	EXPECT_EQ(0, t.wrong);
	EXPECT_EQ(t.in_chain, t.complete);
	ASSERT_EQ(0, dlclose(h));
	ASSERT_EQ(0, unlink(lib_copy));
}

/* The bytes of libsframe_dl.so, and where its PT_GNU_SFRAME segment is. */
static char *lib_bytes;
static size_t lib_len, sf_off, sf_len;

static int lib_read(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const ElfW(Ehdr) *eh;
	const ElfW(Phdr) *ph;
	struct stat st;
	int fd, i;

	if (n <= 0)
		return -1;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/libsframe_dl.so", dirname(exe));
	fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st))
		return -1;
	lib_len = st.st_size;
	lib_bytes = malloc(lib_len);
	if (!lib_bytes || read(fd, lib_bytes, lib_len) != (ssize_t)lib_len)
		return -1;
	close(fd);
	eh = (const ElfW(Ehdr) *)lib_bytes;
	ph = (const ElfW(Phdr) *)(lib_bytes + eh->e_phoff);
	for (i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_GNU_SFRAME) {
			sf_off = ph[i].p_offset;
			sf_len = ph[i].p_filesz;
		}
	}
	return sf_len && sf_off + sf_len <= lib_len ? 0 : -1;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0755);
	int ret = fd >= 0 && write(fd, buf, len) == (ssize_t)len ? 0 : -1;

	if (fd >= 0)
		close(fd);
	return ret;
}

/*
 * A hostile file: copies of the library whose own section has random bytes
 * changed, each a new file the kernel reads when a walk first meets it.
 * Whatever the bytes, a clean answer: the section is taken (a change that
 * keeps it valid) or the file gets no table, with no oops, warning or leak
 * (the harness checks the kernel log). The stacks are counted, not judged:
 * a refused section leaves the library to the frame-pointer rule, and a
 * taken one may describe its functions wrongly, as its bytes say.
 */
TEST(own_section_mutated)
{
	struct unwind_user_info t0, now;
	unsigned int round, taken = 0, refused = 0, invented = 0;
	char *buf;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, lib_read());
	buf = malloc(lib_len);
	ASSERT_NE(NULL, buf);
	srand(1);
	for (round = 0; round < 40; round++) {
		struct run r = { .seconds = 0.05 };
		struct tally t;
		unsigned int k;
		void *h;

		memcpy(buf, lib_bytes, lib_len);
		for (k = 0; k < 1 + round % 4; k++)
			buf[sf_off + rand() % sf_len] ^= 1 << (rand() % 8);
		snprintf(lib_copy, sizeof(lib_copy), "/tmp/libsframe_dl-%d-%u.so",
			 getpid(), round);
		ASSERT_EQ(0, write_file(lib_copy, buf, lib_len));
		ASSERT_EQ(0, unwind_query(&t0));
		h = dlopen(lib_copy, RTLD_NOW);
		ASSERT_NE(NULL, h);
		r.chain = dlsym(h, "dl_chain");
		ASSERT_NE(NULL, r.chain);
		ASSERT_EQ(0, sample_stacks(dl_driver, &r, 1000, &stacks));
		ASSERT_EQ(0, unwind_query(&now));
		t = chain_check(&stacks, chain, ARRAY_SIZE(chain), "main", 0);
		invented += t.invented;
		if (now.file_tables > t0.file_tables)
			taken++;
		else
			refused++;
		ASSERT_EQ(0, dlclose(h));
		ASSERT_EQ(0, unlink(lib_copy));
	}
	printf("# %u mutated copies of the library's own section: %u taken, %u refused; %u stacks with an invented caller\n",
	       round, taken, refused, invented);
	EXPECT_GT(refused, 0);
	free(buf);
}

/* The exec'ed copy's chain, in its own code. */
void __attribute__((noipa)) exec_level2(unsigned long n)
{
	while (n--)
		spin_cb();
	sink++;
}

void __attribute__((noipa)) exec_level1(unsigned long n)
{
	exec_level2(n);
	sink++;
}

void __attribute__((noipa)) exec_driver(void *arg)
{
	double end = now_seconds() + *(double *)arg;

	do
		exec_level1(16);
	while (now_seconds() < end);
}

static const char *const exec_chain[] = {
	"spin_cb", "exec_level2", "exec_level1", "exec_driver", "sample_stacks",
};

#define EXEC_CHILD_ARG	"--exec-child"

/* What the exec'ed copy saw, written to its descriptor 3. */
struct exec_report {
	unsigned long long sections_at_start, sections_after, faults;
	int in_chain, complete, invented;
};

/* The exec'ed copy: samples its chain at NMI/IRQ time for 0.5 s. */
static int exec_child(void)
{
	struct unwind_user_info start, after;
	struct exec_report r = {};
	double seconds = 0.5;
	struct tally t;

	if (unwind_query(&start) || sym_init())
		return 2;
	if (sample_stacks_sync(exec_driver, &seconds, 1000, &stacks) ||
	    unwind_query(&after))
		return 3;
	t = chain_check(&stacks, exec_chain, ARRAY_SIZE(exec_chain), "main", 3);
	r.sections_at_start = start.nr_sections;
	r.sections_after = after.nr_sections;
	r.faults = after.nofault_faults - start.nofault_faults;
	r.in_chain = t.in_chain;
	r.complete = t.complete;
	r.invented = t.invented;
	return write(3, &r, sizeof(r)) == sizeof(r) ? 0 : 4;
}

static int run_exec_child(const char *path, struct exec_report *r)
{
	int fd[2], status;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(fd[1], 3);
		execl(path, path, EXEC_CHILD_ARG, NULL);
		_exit(1);
	}
	close(fd[1]);
	if (read(fd[0], r, sizeof(*r)) != sizeof(*r))
		r->in_chain = -1;
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) || r->in_chain < 0)
		return -1;
	return 0;
}

static void exec_print(const char *what, const struct exec_report *r)
{
	printf("# %s: sections %llu at start, %llu after; %d stacks in its chain, %d complete, %d with an invented caller; nofault_faults +%llu\n",
	       what, r->sections_at_start, r->sections_after, r->in_chain,
	       r->complete, r->invented, r->faults);
}

TEST(exec_own_section)
{
	char exe[PATH_MAX], copy[PATH_MAX];
	struct exec_report first, again;
	struct unwind_user_info t0, now;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	ASSERT_LT(0, n);
	exe[n] = 0;
	snprintf(copy, sizeof(copy), "/tmp/sframe_exec-%d", getpid());
	ASSERT_EQ(0, copy_file(exe, copy));
	ASSERT_EQ(0, unwind_query(&t0));

	ASSERT_EQ(0, run_exec_child(copy, &first));
	exec_print("first exec of a new file", &first);
	/* Nothing read at exec; the first walk that may sleep builds it. */
	EXPECT_EQ(0, first.sections_at_start);
	EXPECT_EQ(1, first.sections_after);
	ASSERT_GE(first.in_chain, 50);
	EXPECT_EQ(0, first.invented);
	EXPECT_GE(first.faults, 1);
	/* The walks that stopped to ask, and no other, are incomplete. */
	EXPECT_LE((unsigned long long)(first.in_chain - first.complete), first.faults);
	EXPECT_GE(first.complete * 100, first.in_chain * 95);

	ASSERT_EQ(0, run_exec_child(copy, &again));
	exec_print("exec'ed again", &again);
	/* The file's table, attached at exec: no walk stops. */
	EXPECT_EQ(1, again.sections_at_start);
	EXPECT_EQ(0, again.faults);
	ASSERT_GE(again.in_chain, 50);
	EXPECT_EQ(0, again.invented);
	EXPECT_EQ(again.in_chain, again.complete);

	/* One table for the file, while it exists; none once it is gone. */
	ASSERT_EQ(0, unwind_query(&now));
	EXPECT_EQ(t0.file_tables + 1, now.file_tables);
	ASSERT_EQ(0, unlink(copy));
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, unwind_query(&now));
		if (now.file_bytes == t0.file_bytes)
			break;
		usleep(10000);
	}
	EXPECT_EQ(t0.file_tables, now.file_tables);
	EXPECT_EQ(t0.file_bytes, now.file_bytes);
}

int main(int argc, char **argv)
{
	/*
	 * exit(), not return: a tail call would leave main off the stacks
	 * the child checks (whether GCC makes one depends on the sizes of
	 * exec_child's locals, the uapi structs among them).
	 */
	if (argc == 2 && !strcmp(argv[1], EXEC_CHILD_ARG))
		exit(exec_child());
	return test_harness_run(argc, argv);
}
