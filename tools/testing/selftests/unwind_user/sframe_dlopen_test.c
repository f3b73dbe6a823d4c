// SPDX-License-Identifier: GPL-2.0
/*
 * A dlopen'ed library with a real SFrame section (gas --gsframe), which
 * the kernel does not register by itself: user space registers it the way
 * Documentation/userspace-api/unwind_user.rst shows (dl_iterate_phdr, the
 * library's PT_GNU_SFRAME and executable PT_LOAD, at its load address).
 *
 * Unregistered, the library's frames (no frame pointers) are left to the
 * frame-pointer rule and its stacks are wrong; registered, every stack
 * through it names every frame up to main; dlclose() unmaps it and the
 * registration goes with it; dlopen() again does not bring it back.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../kselftest_harness.h"
#include "unwind_user_test.h"

#define PT_GNU_SFRAME	0x6474e554

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

static void *open_lib(struct __test_metadata *_metadata, struct find *f)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	Dl_info info;
	void *h, *fn;
	unsigned int i;

	if (n <= 0)
		return NULL;
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/libsframe_dl.so", dirname(exe));
	h = dlopen(path, RTLD_NOW);
	if (!h) {
		TH_LOG("dlopen %s: %s", path, dlerror());
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
	t = chain_check(&stacks, chain, ARRAY_SIZE(chain), "main", 0);
	printf("# %s: %u stacks, %d through the library, %d complete; sframe_frames +%llu fp_fallbacks +%llu\n",
	       what, stacks.nr, t.in_chain, t.complete,
	       (unsigned long long)(after->sframe_frames - before->sframe_frames),
	       (unsigned long long)(after->fp_fallbacks - before->fp_fallbacks));
	return t;
}

TEST(dlopen_register_dlclose)
{
	struct unwind_user_info before, after;
	struct tally off, on, t;
	struct find f;
	void *h;

	ASSERT_EQ(0, sym_init());
	ASSERT_EQ(0, unwind_query(&before));
	/* Dynamic executable: its own section (the host ld.so has none). */
	ASSERT_EQ(1, before.nr_sections);
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	ASSERT_NE(0, f.s.sframe_start) TH_LOG("no PT_GNU_SFRAME in the library");
	ASSERT_NE(0, f.s.text_start);
	EXPECT_EQ(1, (unwind_query(&after), after.nr_sections));

	/* Not registered: the library's frames go to the frame-pointer rule. */
	off = sample(h, &before, &after, "not registered");
	ASSERT_GE(off.in_chain, 20);
	EXPECT_LT(off.complete * 4, off.in_chain);
	EXPECT_GE(after.fp_fallbacks - before.fp_fallbacks,
		  (unsigned long long)off.in_chain);

	/* Registered: complete. */
	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&f.s,
				  sizeof(f.s), 0));
	EXPECT_EQ(-EEXIST, unwind_prctl(UNWIND_USER_SFRAME_REGISTER,
					(unsigned long)&f.s, sizeof(f.s), 0));
	on = sample(h, &before, &after, "registered");
	EXPECT_EQ(2, after.nr_sections);
	ASSERT_GE(on.in_chain, 20);
	EXPECT_EQ(on.in_chain, on.complete);
	EXPECT_EQ(after.errors, before.errors);

	/* dlclose unmaps the library: the registration goes. */
	ASSERT_EQ(0, dlclose(h));
	ASSERT_EQ(0, unwind_query(&after));
	EXPECT_EQ(1, after.nr_sections);
	EXPECT_EQ(-ENOENT, unwind_prctl(UNWIND_USER_SFRAME_UNREGISTER,
					f.s.text_start, 0, 0));

	/* Loaded again: nothing registered until user space says so. */
	h = open_lib(_metadata, &f);
	ASSERT_NE(NULL, h);
	ASSERT_EQ(0, unwind_query(&after));
	EXPECT_EQ(1, after.nr_sections);
	ASSERT_EQ(0, unwind_prctl(UNWIND_USER_SFRAME_REGISTER, (unsigned long)&f.s,
				  sizeof(f.s), 0));
	t = sample(h, &before, &after, "loaded and registered again");
	ASSERT_GE(t.in_chain, 20);
	EXPECT_EQ(t.in_chain, t.complete);
	ASSERT_EQ(0, dlclose(h));
	ASSERT_EQ(0, unwind_query(&after));
	EXPECT_EQ(1, after.nr_sections);
}

TEST_HARNESS_MAIN
