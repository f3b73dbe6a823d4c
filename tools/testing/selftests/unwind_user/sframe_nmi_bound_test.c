// SPDX-License-Identifier: GPL-2.0
/*
 * What a profiled process can make the sample-time walk do: the worst
 * section it can build is one function with 65535 rows. Rows have
 * variable sizes, so they can only be searched in order; registration
 * keeps a mark every 16 rows of such a function, and a lookup walks from
 * the last mark below its PC. A walk through that function must cost
 * about what one through an ordinary function costs, and be complete.
 * Whatever the marks, each frame may read at most 4 KiB of section, each
 * walk 32 KiB at NMI time (256 KiB in the deferred walk), after which the
 * walk ends at that frame, truncated, never continued with a guess.
 *
 * The stack is unwound by the benchmark trigger
 * (CONFIG_USERSPACE_UNWINDER_SFRAME_BENCH: /sys/kernel/debug/unwind_user/
 * bench) at a write() made from inside a JIT function with such a section,
 * and from an ordinary function for comparison; the time of each walk is
 * printed, the frames are checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"
#include "sframe_gen.h"

#define TRIGGER		"/sys/kernel/debug/unwind_user/bench"
#define MAX_FRES	65535
/* NOPs before the call: every byte of them a row of its own. */
#define SLED		65536
#ifdef __aarch64__
/* str x30,[sp,#-16]!; ldr x16,=leaf; blr x16; ldr x30,[sp],#16; ret */
#define HUGE_SIZE	(SLED + 32)
#else
/* sub $8,%rsp; mov $leaf,%rax; call *%rax; add $8,%rsp; ret */
#define HUGE_SIZE	(SLED + 21)
#endif
#define ITERS		50

static int trig_fd = -1;
static const char *trig_cmd;
static volatile long trig_ret;

/* The write the trigger unwinds from: no libc frame (libc has no SFrame). */
__attribute__((noipa)) long raw_write(int fd, const void *buf, size_t n)
{
#ifdef __aarch64__
	register long x0 asm("x0") = fd;
	register long x1 asm("x1") = (long)buf;
	register long x2 asm("x2") = n;
	register long x8 asm("x8") = __NR_write;

	asm volatile("svc #0"
		     : "+r"(x0)
		     : "r"(x1), "r"(x2), "r"(x8)
		     : "memory");
	return x0;
#else
	long ret;

	asm volatile("syscall"
		     : "=a"(ret)
		     : "0"(1L), "D"((long)fd), "S"(buf), "d"(n)
		     : "rcx", "r11", "memory");
	return ret;
#endif
}

/* Nanoseconds leaf() spins instead of calling the trigger, when set. */
static long spin_ns;

static long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noipa)) void leaf(void)
{
	long end;

	if (spin_ns) {
		end = now_ns() + spin_ns;
		while (now_ns() < end)
			;
		return;
	}
	trig_ret = raw_write(trig_fd, trig_cmd, strlen(trig_cmd));
}

__attribute__((noipa)) void ordinary(void)
{
	leaf();
	asm volatile("");
}

struct walk {
	unsigned long frames, ns, nips;
	uint64_t ips[8];
};

static int read_walk(struct walk *w)
{
	char buf[4096], *p, *tok;
	char name[32];
	unsigned long iters;
	ssize_t n = pread(trig_fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	memset(w, 0, sizeof(*w));
	if (sscanf(buf, "unwinder %31s iterations %lu frames %lu ns %lu",
		   name, &iters, &w->frames, &w->ns) != 4)
		return -1;
	p = strstr(buf, " ips");
	if (!p)
		return -1;
	p += 4;
	while ((tok = strsep(&p, " \n")) && w->nips < ARRAY_SIZE(w->ips))
		if (*tok)
			w->ips[w->nips++] = strtoull(tok, NULL, 16);
	return 0;
}

#ifdef __aarch64__
/* The JIT function's call, after its sled of NOPs (the last word). */
static const uint32_t arm64_call[] = {
	0xf81f0ffe,	/* str x30,[sp,#-16]! */
	0x580000b0,	/* ldr x16,.+20 (the literal at +24: leaf) */
	0xd63f0200,	/* blr x16 */
	0xf84107fe,	/* ldr x30,[sp],#16 */
	0xd65f03c0,	/* ret */
	0xd503201f,	/* nop */
};
#endif

FIXTURE(bound) {
	uint8_t *text;
	uint8_t *sec;
	size_t sec_cap;
	struct unwind_user_sframe reg;
};

/* The JIT function and its section: 65535 rows, all of them valid. */
FIXTURE_SETUP(bound)
{
	static struct sfg_fre rows[MAX_FRES];
	struct sfg_func f = {
		.size = HUGE_SIZE, .nr_fres = MAX_FRES, .fres = rows,
	};
	uint64_t target = (uintptr_t)leaf;
	uint8_t *c;
	ssize_t len;
	long r;
	int i;

	trig_fd = open(TRIGGER, O_RDWR);
	if (trig_fd < 0)
		SKIP(return, "no %s (CONFIG_USERSPACE_UNWINDER_SFRAME_BENCH)", TRIGGER);
	ASSERT_EQ(0, sym_init());

	self->text = mmap(NULL, HUGE_SIZE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->text);
#ifdef __aarch64__
	for (i = 0; i < SLED; i += 4)
		memcpy(self->text + i, &arm64_call[5], 4);
	c = self->text + SLED;
	memcpy(c, arm64_call, sizeof(arm64_call));
	memcpy(c + 24, &target, 8);
	__builtin___clear_cache((char *)self->text, (char *)self->text + HUGE_SIZE);
#else
	memset(self->text, 0x90, SLED);
	c = self->text + SLED;
	memcpy(c, "\x48\x83\xec\x08\x48\xb8", 6);
	memcpy(c + 6, &target, 8);
	memcpy(c + 14, "\xff\xd0\x48\x83\xc4\x08\xc3", 7);
#endif
	ASSERT_EQ(0, mprotect(self->text, HUGE_SIZE, PROT_READ | PROT_EXEC));

#ifdef __aarch64__
	/*
	 * CFA = SP on the sled and at ret (the return address in x30), SP +
	 * 16 around the call.
	 */
	for (i = 0; i < MAX_FRES - 2; i++)
		rows[i] = (struct sfg_fre)SFG_SP(i, 0);
	rows[MAX_FRES - 2] = (struct sfg_fre)SFG_SP_RA(SLED + 4, 16, -16);
	rows[MAX_FRES - 1] = (struct sfg_fre)SFG_SP(SLED + 16, 0);
#else
	/* CFA = SP + 8 on the sled, SP + 16 around the call, SP + 8 at ret. */
	for (i = 0; i < MAX_FRES - 2; i++)
		rows[i] = (struct sfg_fre)SFG_SP(i, 8);
	rows[MAX_FRES - 2] = (struct sfg_fre)SFG_SP(SLED + 4, 16);
	rows[MAX_FRES - 1] = (struct sfg_fre)SFG_SP(SLED + 20, 8);
#endif
	f.start = (uintptr_t)self->text;

	self->sec_cap = 8 * MAX_FRES + 4096;
	self->sec = mmap(NULL, self->sec_cap, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->sec);
	len = sfg_write(self->sec, self->sec_cap, (uintptr_t)self->sec, 0, &f, 1, NULL);
	ASSERT_LT(0, len);
	self->reg = (struct unwind_user_sframe){
		.text_start = (uintptr_t)self->text, .text_size = HUGE_SIZE,
		.sframe_start = (uintptr_t)self->sec, .sframe_size = len,
	};
	r = unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&self->reg,
			 sizeof(self->reg), 0);
	ASSERT_EQ(0, r);
	printf("# one function of %d bytes, %d rows, section %zd bytes\n",
	       HUGE_SIZE, MAX_FRES, len);
}

FIXTURE_TEARDOWN(bound)
{
	if (trig_fd >= 0)
		close(trig_fd);
}

static bool in_huge(const uint8_t *text, uint64_t ip)
{
	return ip > (uintptr_t)text && ip <= (uintptr_t)text + HUGE_SIZE;
}

/*
 * Unwind with @unwinder from leaf() called by the JIT function and by an
 * ordinary one, both called from here: both walks reach main, with the
 * same callers.
 */
static void walk_both(struct __test_metadata *_metadata, FIXTURE_DATA(bound) *self,
		      const char *unwinder)
{
	struct unwind_user_info before, first, after;
	struct walk jit, ord;
	char cmd[64];
	unsigned int i;

	/*
	 * One faultable walk first, so that the sample-time walk finds the
	 * pages of this program's section resident (a child of fork(), it
	 * has no page tables for them yet; the walk would end at once). It
	 * is the one that reads the section: the rules it finds are cached
	 * for the walks after it.
	 */
	ASSERT_EQ(0, unwind_query(&before));
	trig_cmd = "sframe 1";
	ordinary();
	((void (*)(void))self->text)();
	ASSERT_EQ(0, unwind_query(&first));
	snprintf(cmd, sizeof(cmd), "%s %d", unwinder, ITERS);
	trig_cmd = cmd;

	ordinary();
	ASSERT_EQ((long)strlen(cmd), trig_ret);
	ASSERT_EQ(0, read_walk(&ord));

	((void (*)(void))self->text)();
	ASSERT_EQ((long)strlen(cmd), trig_ret);
	ASSERT_EQ(0, read_walk(&jit));
	ASSERT_EQ(0, unwind_query(&after));

	printf("# %s: ordinary stack %lu frames, %lu ns a walk; through the 65535-row function %lu frames, %lu ns a walk (%.2fx)\n",
	       unwinder, ord.frames, ord.ns / ITERS, jit.frames, jit.ns / ITERS,
	       (double)jit.ns / (ord.ns ? ord.ns : 1));
	printf("# first walks, nothing cached: %llu section reads, %llu bytes\n",
	       first.section_reads - before.section_reads,
	       first.section_bytes - before.section_bytes);
	/* raw_write, leaf, ordinary, this function, ... main. */
	ASSERT_GE(ord.nips, 4);
	EXPECT_STREQ("ordinary", sym_name(ord.ips[2]));
	/* raw_write, leaf, the JIT function, this function, ... main. */
	EXPECT_EQ(ord.frames, jit.frames);
	ASSERT_GE(jit.nips, 4);
	EXPECT_STREQ("raw_write", sym_name(jit.ips[0]));
	EXPECT_STREQ("leaf", sym_name(jit.ips[1]));
	EXPECT_TRUE(in_huge(self->text, jit.ips[2]));
	for (i = 3; i < jit.nips && i < ord.nips; i++)
		EXPECT_STREQ(sym_name(ord.ips[i]), sym_name(jit.ips[i]));
	/*
	 * No walk gave up, and the first ones read a few rows a frame: from
	 * the last mark in the JIT function, not its 65535 rows (without the
	 * marks that frame alone would read its 4 KiB and end the walk).
	 */
	EXPECT_EQ(after.errors, before.errors);
	EXPECT_LT(first.section_bytes - before.section_bytes, 4096);
	EXPECT_EQ(after.dropped, before.dropped);
	EXPECT_EQ(2, after.nr_sections);
}

/* The sample-time walk (perf_callchain_user()). */
TEST_F(bound, nofault_walk_complete)
{
	walk_both(_metadata, self, "sframe-nofault");
}

/* The deferred walk. */
TEST_F(bound, deferred_walk_complete)
{
	walk_both(_metadata, self, "sframe");
}

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/*
 * Is this CPU emulated? arm64: MIDR_EL1's implementer 0 is reserved for
 * software, which QEMU's TCG CPUs (-cpu max) give.
 */
static bool emulated_cpu(void)
{
#ifdef __aarch64__
	char buf[32] = "";
	int fd = open("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
		      O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && !((strtoull(buf, NULL, 16) >> 24) & 0xff);
#else
	return false;
#endif
}

/*
 * At NMI time perf times the handling of every hardware PMU sample, and
 * when it takes too long it lowers perf_event_max_sample_rate for every
 * user and logs "perf: interrupt took too long". A program whose stack
 * goes through the 65535-row function, sampled with user callchains at
 * the highest rate allowed for 2 seconds, must not make that happen.
 * This needs a hardware PMU (bare metal, KVM): under QEMU's TCG there is
 * none on x86, and the software clock events perf falls back to are not
 * timed that way; on arm64 TCG emulates one, whose interrupts take as
 * long to handle as any code does there, an ordinary stack's walk alone
 * far more than perf allows a sample at that rate. The test is skipped
 * there; the walk's own time is what the two tests above print.
 */
TEST_F(bound, pmu_rate_not_lowered)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_HARDWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_HW_CPU_CYCLES,
		.freq = 1,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN,
		.exclude_kernel = 1,
		.exclude_hv = 1,
		.exclude_callchain_kernel = 1,
		.disabled = 1,
	};
	const char *rate_path = "/proc/sys/kernel/perf_event_max_sample_rate";
	long rate = read_long(rate_path), after;
	char line[1024];
	bool took_too_long = false;
	long page = sysconf(_SC_PAGESIZE);
	void *ring;
	ssize_t n;
	int fd, kmsg;

	if (emulated_cpu())
		SKIP(return, "an emulated CPU (QEMU's TCG): its PMU's samples are as slow as all its code");
	ASSERT_LT(0, rate);
	attr.sample_freq = rate;
	fd = syscall(__NR_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0)
		SKIP(return, "no hardware PMU (%s): perf's NMI-time throttling cannot be exercised",
		     strerror(errno));
	ring = mmap(NULL, 9 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, ring);
	/* Only what the kernel logs from now on. */
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, kmsg);
	lseek(kmsg, 0, SEEK_END);

	spin_ns = 2000000000L;
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_ENABLE, 0));
	((void (*)(void))self->text)();
	ASSERT_EQ(0, ioctl(fd, PERF_EVENT_IOC_DISABLE, 0));
	spin_ns = 0;

	after = read_long(rate_path);
	while ((n = read(kmsg, line, sizeof(line) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		line[n] = 0;
		if (strstr(line, "perf: interrupt took too long"))
			took_too_long = true;
	}
	printf("# sampled at %ld Hz for 2 s: perf_event_max_sample_rate %ld -> %ld\n",
	       rate, rate, after);
	EXPECT_EQ(rate, after);
	EXPECT_FALSE(took_too_long);
	close(kmsg);
	munmap(ring, 9 * page);
	close(fd);
}

TEST_HARNESS_MAIN
