// SPDX-License-Identifier: GPL-2.0
/*
 * C++ code through the SFrame unwinder: a chain of calls through a class
 * template (Stage<N>::run, N = 3..0), a virtual member function
 * (Square::step, called through Shape *), a lambda inside it and a function
 * template (churn<unsigned long>), built -O2 -fomit-frame-pointer with
 * SFrame (see build.sh). Every stack sampled in the chain, deferred and at
 * sample time, must name each caller, by its mangled symbol from the
 * executable's symbol table, up to sample_stacks and then main.
 *
 * Prints TAP (kselftest format); exit status 0 only if every test passed.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>

extern "C" {
#include "unwind_user_test.h"
}

#define NOIPA __attribute__((noipa))

static volatile unsigned long sink;

template <typename T>
NOIPA T churn(T x)
{
	for (int i = 0; i < 200; i++)
		x = x * 2862933555777941757ul + 3037000493ul;
	return x;
}

struct Shape {
	virtual ~Shape() = default;
	virtual unsigned long step(unsigned long x) = 0;
};

struct Square : Shape {
	unsigned long side = 3;
	unsigned long step(unsigned long x) override;
};

NOIPA unsigned long Square::step(unsigned long x)
{
	unsigned long buf[7];
	auto mix = [this](unsigned long y) NOIPA {
		unsigned long pad[2] = { y, side };

		asm volatile("" : : "r"(pad) : "memory");
		y = churn<unsigned long>(pad[0] + pad[1]);
		pad[1] = y;
		asm volatile("" : : "r"(pad) : "memory");
		return pad[1] ^ side;
	};

	buf[0] = x;
	asm volatile("" : : "r"(buf) : "memory");
	x = mix(buf[0]);
	buf[6] = x;
	asm volatile("" : : "r"(buf) : "memory");
	return buf[6] + side;
}

/* Each stage has a frame of its own size and work after the call. */
template <int N>
struct Stage {
	NOIPA static unsigned long run(Shape *s, unsigned long x)
	{
		unsigned long buf[N * 5 + 1];

		buf[0] = x;
		asm volatile("" : : "r"(buf) : "memory");
		x = Stage<N - 1>::run(s, buf[0] + N);
		buf[N * 5] = x;
		asm volatile("" : : "r"(buf) : "memory");
		return buf[N * 5] ^ N;
	}
};

template <>
struct Stage<0> {
	NOIPA static unsigned long run(Shape *s, unsigned long x)
	{
		x = s->step(x);
		sink = sink + 1;
		return x;
	}
};

static Square square;
/* Opaque to the compiler: the call in Stage<0> stays virtual. */
static Shape *volatile shape = &square;

NOIPA void run_cxx_chain(void *arg)
{
	unsigned long n = *static_cast<unsigned long *>(arg), x = 1;

	for (unsigned long i = 0; i < n; i++)
		x = Stage<3>::run(shape, x);
	sink = x;
}

/* Innermost first; the Itanium C++ ABI names, as in .symtab. */
static const char *const chain[] = {
	"_Z5churnImET_S0_",			/* churn<unsigned long> */
	"_ZZN6Square4stepEmENKUlmE_clEm",	/* lambda in Square::step */
	"_ZN6Square4stepEm",			/* Square::step */
	"_ZN5StageILi0EE3runEP5Shapem",		/* Stage<0>::run */
	"_ZN5StageILi1EE3runEP5Shapem",
	"_ZN5StageILi2EE3runEP5Shapem",
	"_ZN5StageILi3EE3runEP5Shapem",
	"_Z13run_cxx_chainPv",			/* run_cxx_chain */
	"sample_stacks",
};

#define CHAIN_LEN ((int)ARRAY_SIZE(chain))

static struct stacks stacks;
static int test_nr, failed;

static void result(bool ok, const char *name)
{
	printf("%sok %d %s\n", ok ? "" : "not ", ++test_nr, name);
	if (!ok)
		failed++;
}

/* Rounds until at least 20 stacks start in the chain, at most 8. */
static struct tally sample_chain(bool sync, int *err)
{
	unsigned long n = 60000;
	struct tally t = {}, r;

	*err = 0;
	for (int round = 0; round < 8 && t.in_chain < 20; round++) {
		*err = sync ? sample_stacks_sync(run_cxx_chain, &n, 4000, &stacks) :
			      sample_stacks(run_cxx_chain, &n, 4000, &stacks);
		if (*err)
			break;
		r = chain_check(&stacks, chain, CHAIN_LEN, "main", 3);
		t.in_chain += r.in_chain;
		t.complete += r.complete;
		t.wrong += r.wrong;
	}
	return t;
}

/* Every name of the chain is a function of this executable. */
static void symbols_present(void)
{
	bool ok = true;

	for (int k = 0; k < CHAIN_LEN; k++) {
		uint64_t addr, size;
		int status;
		char *d = abi::__cxa_demangle(chain[k], nullptr, nullptr, &status);

		if (sym_addr(chain[k], &addr, &size)) {
			printf("# missing symbol %s\n", chain[k]);
			ok = false;
		} else {
			printf("# %#llx %4llu %s\n", (unsigned long long)addr,
			       (unsigned long long)size, d ? d : chain[k]);
		}
		free(d);
	}
	result(ok, "symbols_present");
}

/* Deferred unwinding (at return to user space), faultable reads. */
static void deferred_chain_complete(void)
{
	struct unwind_user_info before, after;
	struct tally t;
	int err;

	if (unwind_query(&before)) {
		result(false, "deferred_chain_complete");
		return;
	}
	t = sample_chain(false, &err);
	unwind_query(&after);
	printf("# sections %llu; in chain %d, complete %d, wrong %d; sframe_frames +%llu fp_fallbacks +%llu errors +%llu\n",
	       (unsigned long long)before.nr_sections, t.in_chain, t.complete, t.wrong,
	       (unsigned long long)(after.sframe_frames - before.sframe_frames),
	       (unsigned long long)(after.fp_fallbacks - before.fp_fallbacks),
	       (unsigned long long)(after.errors - before.errors));
	result(!err && before.nr_sections == 1 && t.in_chain >= 20 &&
	       !t.wrong && t.complete == t.in_chain &&
	       after.sframe_frames > before.sframe_frames &&
	       after.errors == before.errors, "deferred_chain_complete");
}

/*
 * At sample time (perf_callchain_user(), reads that never fault): a stack
 * may only be incomplete where a read of the section would have faulted.
 */
static void sample_time_chain_complete(void)
{
	struct unwind_user_info before, after;
	unsigned long long faults;
	struct tally t;
	int err;

	if (unwind_query(&before)) {
		result(false, "sample_time_chain_complete");
		return;
	}
	t = sample_chain(true, &err);
	unwind_query(&after);
	faults = after.nofault_faults - before.nofault_faults;
	printf("# in chain %d, complete %d, incomplete %d; nofault_frames +%llu nofault_faults +%llu errors +%llu\n",
	       t.in_chain, t.complete, t.wrong,
	       (unsigned long long)(after.nofault_frames - before.nofault_frames),
	       faults, (unsigned long long)(after.errors - before.errors));
	result(!err && t.in_chain >= 20 && (unsigned long long)t.wrong <= faults &&
	       faults * 2 <= (unsigned long long)t.in_chain &&
	       after.nofault_frames > before.nofault_frames &&
	       after.errors == before.errors, "sample_time_chain_complete");
}

int main(void)
{
	struct unwind_user_sframe sec;

	printf("TAP version 13\n1..3\n");
	if (sym_init() || self_sframe(&sec)) {
		printf("Bail out! no symbol table or no .sframe in /proc/self/exe\n");
		return 1;
	}
	symbols_present();
	deferred_chain_complete();
	sample_time_chain_complete();
	printf("# Totals: pass:%d fail:%d\n", test_nr - failed, failed);
	return failed ? 1 : 0;
}
