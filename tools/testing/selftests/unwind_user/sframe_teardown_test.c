// SPDX-License-Identifier: GPL-2.0
/*
 * Teardown of large registrations. A section of 300,000 functions gives a
 * kernel FDE table of about 6 MB (20 bytes a function), past the largest
 * kmalloc(), so the registry allocates it with vmalloc(); a second case
 * fills most of the per-mm budget of 16 MiB of FDE tables. Such a table
 * must not be freed where sleeping is not allowed: the last reference to
 * an exited mm often goes in finish_task_switch(), in atomic context, so
 * a registry freed from __mmdrop() makes vfree() report "BUG: sleeping
 * function called from invalid context"
 * (unwind_user_sframe_mm_free <- __mmdrop).
 *
 * Every way a registry goes is taken: a child of fork() that inherited it
 * and exits; a child that registers and exits; one that registers and
 * execs; one whose inherited table outlives the parent's unregistration;
 * a process whose threads are killed by exit_group() from one of them,
 * and one whose threads were joined; the registrant unregistering, and
 * unmapping the text. The kernel log is read around each (the harness
 * also checks the whole console log): no BUG or WARNING line may appear.
 * Everything runs on one CPU and the children exit while their parent
 * waits for them, so that the last reference to an exited child's mm,
 * lazy TLB reference included, has gone by the time the parent runs
 * again, in the context switch back to it.
 *
 * The functions are 4 bytes each (ret; int3; int3; int3) in one anonymous
 * executable mapping; the section is synthetic (sframe_gen.h), one row a
 * function.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "sframe_gen.h"

/* 300,000 FDEs: a 6 MB table in the kernel, above KMALLOC_MAX_SIZE. */
#define NR_LARGE	300000
/*
 * 800,000 FDEs: 16,000,000 bytes of the 16 MiB (16,777,216) an mm may
 * hold, the rest left for the executable's own section.
 */
#define NR_BUDGET	800000
#define FUNC_SIZE	4
/* Kernel bytes an FDE takes (sframe::PackedFde). */
#define KERNEL_FDE	20
/* Row bytes of a function: 1-byte start, info, 1-byte CFA offset. */
#define FRE_BYTES	3
/* argv[1] of the re-exec'd test binary: exit at once. */
#define EXIT_ARG	"--exit-at-once"
#define NR_THREADS	4

static size_t page;

/* A text of @nr functions, its section, and their registration. */
struct big {
	unsigned int nr;
	uint8_t *text;
	size_t text_len;
	uint8_t *sec;
	size_t sec_cap;
	struct unwind_user_sframe reg;
	double reg_seconds;	/* what the last registration took */
};

static size_t round_page(size_t n)
{
	return (n + page - 1) & ~(page - 1);
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static int big_build(struct big *b, unsigned int nr)
{
	static const struct sfg_fre row[] = { SFG_SP(0, 8) };
	struct sfg_func *f;
	ssize_t len;
	unsigned int i;

	memset(b, 0, sizeof(*b));
	b->nr = nr;
	b->text_len = round_page((size_t)nr * FUNC_SIZE);
	b->sec_cap = round_page(SFRAME_HDR_SIZE +
				(size_t)nr * (SFRAME_FDE_SIZE + FRE_BYTES));
	b->text = map_anon(b->text_len);
	b->sec = map_anon(b->sec_cap);
	f = calloc(nr, sizeof(*f));
	if (!b->text || !b->sec || !f) {
		free(f);
		return -1;
	}
	memset(b->text, 0xcc, b->text_len);		/* int3 */
	for (i = 0; i < nr; i++) {
		b->text[(size_t)i * FUNC_SIZE] = 0xc3;	/* ret */
		f[i].start = (uintptr_t)b->text + (size_t)i * FUNC_SIZE;
		f[i].size = FUNC_SIZE;
		f[i].nr_fres = 1;
		f[i].fres = row;
	}
	len = sfg_write(b->sec, b->sec_cap, (uintptr_t)b->sec, 0, f, nr, NULL);
	free(f);
	if (len < 0 || mprotect(b->text, b->text_len, PROT_READ | PROT_EXEC))
		return -1;
	b->reg = (struct unwind_user_sframe){
		.text_start = (uintptr_t)b->text, .text_size = b->text_len,
		.sframe_start = (uintptr_t)b->sec, .sframe_size = len,
	};
	return 0;
}

static void big_free(struct big *b)
{
	if (b->text)
		munmap(b->text, b->text_len);
	if (b->sec)
		munmap(b->sec, b->sec_cap);
	b->text = NULL;
	b->sec = NULL;
}

static long big_register(struct big *b)
{
	double t = now_seconds();
	long ret = unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
				(unsigned long)&b->reg, sizeof(b->reg), 0);

	b->reg_seconds = now_seconds() - t;
	return ret;
}

static long big_unregister(struct big *b)
{
	return unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER, b->reg.text_start,
			    0, 0);
}

static uint64_t nr_sections(void)
{
	struct unwind_user_info info;

	return unwind_query(&info) ? ~0ull : info.nr_sections;
}

/*
 * The kernel log from here on: opened at its end, after a pause of more
 * than a second, since might_sleep() reports at most once a second and
 * the previous test may just have used that second.
 */
static int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	usleep(1100 * 1000);
	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/*
 * Read what the kernel logged since kmsg_open(): print its BUG and WARNING
 * lines and the frames that name the registry or the mm teardown, and
 * return how many BUG and WARNING lines there were.
 */
static int kmsg_splats(int fd, const char *what)
{
	char rec[2048];
	int splats = 0;

	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec) - 1);
		char *msg, *end;

		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		rec[n] = 0;
		msg = strchr(rec, ';');
		if (!msg)
			continue;
		msg++;
		end = strchr(msg, '\n');
		if (end)
			*end = 0;
		if (!strncmp(msg, "BUG:", 4) || strstr(msg, "WARNING:")) {
			splats++;
			printf("# %s: kernel log: %s\n", what, msg);
		} else if (strstr(msg, "sframe") || strstr(msg, "mmdrop") ||
			   strstr(msg, "finish_task_switch")) {
			printf("# %s: kernel log: %s\n", what, msg);
		}
	}
	close(fd);
	return splats;
}

/* This process and its children on one CPU (see the top comment). */
static int one_cpu(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Wait for child @pid: its exit status, or -1 if it did not exit. */
static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

FIXTURE(teardown) {
	struct big b;
	bool registered;
	uint64_t base;		/* sections before ours: the executable's */
	int kmsg;
};

FIXTURE_VARIANT(teardown) {
	unsigned int nr;
};

FIXTURE_VARIANT_ADD(teardown, large) {
	.nr = NR_LARGE,
};

FIXTURE_VARIANT_ADD(teardown, budget) {
	.nr = NR_BUDGET,
};

FIXTURE_SETUP(teardown)
{
	self->kmsg = -1;
	page = sysconf(_SC_PAGESIZE);
	ASSERT_EQ(0, one_cpu());
	ASSERT_EQ(0, big_build(&self->b, variant->nr));
	self->base = nr_sections();
	ASSERT_NE(~0ull, self->base);
	self->kmsg = kmsg_open();
	ASSERT_LE(0, self->kmsg);
}

FIXTURE_TEARDOWN(teardown)
{
	if (self->registered)
		big_unregister(&self->b);
	big_free(&self->b);
	if (self->kmsg >= 0)
		close(self->kmsg);
}

/* Register in this process and check that it took. */
static void reg_here(struct __test_metadata *_metadata,
		     FIXTURE_DATA(teardown) *self)
{
	long ret = big_register(&self->b);

	ASSERT_EQ(0, ret) TH_LOG("registering %u functions: %s",
				 self->b.nr, strerror(-ret));
	self->registered = true;
	ASSERT_EQ(self->base + 1, nr_sections());
	printf("# registered %u functions (section %llu bytes, FDE table ~%u bytes) in %.2f s\n",
	       self->b.nr, (unsigned long long)self->b.reg.sframe_size,
	       self->b.nr * KERNEL_FDE, self->b.reg_seconds);
}

/* No BUG or WARNING in the kernel log since the fixture's setup. */
static void check_log(struct __test_metadata *_metadata,
		      FIXTURE_DATA(teardown) *self, const char *what)
{
	int splats = kmsg_splats(self->kmsg, what);

	self->kmsg = -1;
	printf("# %s: %d BUG/WARNING lines in the kernel log\n", what, splats);
	EXPECT_EQ(0, splats);
}

/*
 * In a child: take the registry over, whether inherited or not: the
 * child's own table, with no reference to the parent's left (the budget
 * case leaves no room for a second one). Returns 0 or an exit status.
 */
static int child_own_registration(struct big *b, bool inherited)
{
	if (inherited && big_unregister(b))
		return 10;
	if (big_register(b))
		return 11;
	return 0;
}

/* A child of fork() inherits the registration and exits. */
TEST_F_TIMEOUT(teardown, fork_child_exits, 120)
{
	uint64_t want;
	pid_t pid;

	reg_here(_metadata, self);
	want = nr_sections();
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(nr_sections() == want ? 0 : 1);
	EXPECT_EQ(0, reap(pid));
	check_log(_metadata, self, "fork, child exits");
}

/*
 * A child registers its own table (in the budget case, where there is
 * room for one table only, it takes over the inherited one), then exits,
 * or with @then_exec execs, which drops the old mm at exec.
 */
static void child_registers(struct __test_metadata *_metadata,
			    FIXTURE_DATA(teardown) *self,
			    const FIXTURE_VARIANT(teardown) *variant,
			    bool then_exec, const char *what)
{
	char *const argv[] = { "sframe_teardown_test", EXIT_ARG, NULL };
	char *const envp[] = { NULL };
	bool inherited = variant->nr == NR_BUDGET;
	pid_t pid;

	if (inherited)
		reg_here(_metadata, self);
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int err = child_own_registration(&self->b, inherited);

		if (err)
			_exit(err);
		if (nr_sections() != self->base + 1)
			_exit(12);
		if (!then_exec)
			_exit(0);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	EXPECT_EQ(0, reap(pid));
	check_log(_metadata, self, what);
}

TEST_F_TIMEOUT(teardown, child_registers_exits, 120)
{
	child_registers(_metadata, self, variant, false,
			"child registers and exits");
}

TEST_F_TIMEOUT(teardown, child_registers_execs, 120)
{
	child_registers(_metadata, self, variant, true,
			"child registers and execs");
}

/*
 * The parent unregisters while a child still holds the inherited table;
 * the child exits afterwards, with the last reference to it.
 */
TEST_F_TIMEOUT(teardown, inherited_outlives_registrant, 120)
{
	int go[2], done[2];
	char c = 0;
	pid_t pid;

	reg_here(_metadata, self);
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(done));
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		bool ok = nr_sections() == self->base + 1;

		if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(2);
		/* Exit once the parent waits for it, as the others do. */
		usleep(200 * 1000);
		_exit(ok ? 0 : 1);
	}
	ASSERT_EQ(1, read(done[0], &c, 1));
	ASSERT_EQ(0, big_unregister(&self->b));
	self->registered = false;
	ASSERT_EQ(self->base, nr_sections());
	/*
	 * Time for a grace period and the callback that frees the table the
	 * parent retired (with its reference): the child's is then the last.
	 */
	sleep(1);
	ASSERT_EQ(1, write(go[1], &c, 1));
	EXPECT_EQ(0, reap(pid));
	close(go[0]);
	close(go[1]);
	close(done[0]);
	close(done[1]);
	check_log(_metadata, self, "inherited table outlives the registrant");
}

struct threads {
	pthread_barrier_t ready;
	uint64_t want;
	int bad;
};

static void *thread_fn(void *arg)
{
	struct threads *t = arg;
	unsigned long x = 0;
	int i;

	if (nr_sections() != t->want)
		__atomic_add_fetch(&t->bad, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&t->ready);
	for (i = 0; i < 1000000; i++) {
		x = x * 6364136223846793005ul + 1;
		asm volatile("" : "+r"(x));
	}
	/* Still running when another thread ends the process. */
	for (;;)
		pause();
	return NULL;
}

static void *exiting_thread_fn(void *arg)
{
	struct threads *t = arg;

	pthread_barrier_wait(&t->ready);
	usleep(50 * 1000);
	_exit(t->bad ? 3 : 0);		/* exit_group() */
}

/*
 * A child with several threads registers its own table; one of the threads
 * ends the process while the others run: the last of them to go takes the
 * mm down.
 */
TEST_F_TIMEOUT(teardown, threads_exit_group, 120)
{
	bool inherited = variant->nr == NR_BUDGET;
	pid_t pid;

	if (inherited)
		reg_here(_metadata, self);
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		static struct threads t;
		pthread_t th;
		int i, err;

		err = child_own_registration(&self->b, inherited);
		if (err)
			_exit(err);
		t.want = self->base + 1;
		if (pthread_barrier_init(&t.ready, NULL, NR_THREADS + 1))
			_exit(20);
		for (i = 0; i < NR_THREADS - 1; i++)
			if (pthread_create(&th, NULL, thread_fn, &t))
				_exit(21);
		if (pthread_create(&th, NULL, exiting_thread_fn, &t))
			_exit(22);
		pthread_barrier_wait(&t.ready);
		for (;;)
			pause();
	}
	EXPECT_EQ(0, reap(pid));
	check_log(_metadata, self, "threads, exit_group");
}

static void *query_fn(void *arg)
{
	return (void *)(uintptr_t)nr_sections();
}

/*
 * The same, threads joined first: the main thread is the last user.
 */
TEST_F_TIMEOUT(teardown, threads_joined, 120)
{
	bool inherited = variant->nr == NR_BUDGET;
	pid_t pid;

	if (inherited)
		reg_here(_metadata, self);
	fflush(stdout);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		pthread_t th[NR_THREADS];
		int i, err;

		err = child_own_registration(&self->b, inherited);
		if (err)
			_exit(err);
		for (i = 0; i < NR_THREADS; i++)
			if (pthread_create(&th[i], NULL, query_fn, NULL))
				_exit(21);
		for (i = 0; i < NR_THREADS; i++) {
			void *seen;

			if (pthread_join(th[i], &seen) ||
			    (uintptr_t)seen != self->base + 1)
				err = 1;
		}
		if (nr_sections() != self->base + 1)
			err = 1;
		_exit(err);
	}
	EXPECT_EQ(0, reap(pid));
	check_log(_metadata, self, "threads joined, exit");
}

/* The registrant unregisters: the table goes after a grace period. */
TEST_F_TIMEOUT(teardown, unregister, 120)
{
	reg_here(_metadata, self);
	ASSERT_EQ(0, big_unregister(&self->b));
	self->registered = false;
	ASSERT_EQ(self->base, nr_sections());
	/* Register and unregister again, then let RCU free both tables. */
	reg_here(_metadata, self);
	ASSERT_EQ(0, big_unregister(&self->b));
	self->registered = false;
	usleep(500 * 1000);
	check_log(_metadata, self, "unregister");
}

/* The registrant munmaps the text: the registration goes with it. */
TEST_F_TIMEOUT(teardown, munmap_text, 120)
{
	reg_here(_metadata, self);
	ASSERT_EQ(0, munmap(self->b.text, self->b.text_len));
	self->b.text = NULL;
	self->registered = false;
	ASSERT_EQ(self->base, nr_sections());
	usleep(500 * 1000);
	check_log(_metadata, self, "munmap");
}

/*
 * The re-exec'd test binary (child_registers_execs) exits at once; any
 * other argument list is the harness's.
 */
int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], EXIT_ARG))
		return 0;
	return test_harness_run(argc, argv);
}
