// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_assist: user-assisted unwinding for an unmodified Lua 5.4
 * interpreter (Documentation/userspace-api/unwind_user.rst, "User-assisted
 * unwinding"). Loaded with `lua5.4 -l unwind_assist script.lua`, it opts
 * the process in; on the kernel's signal it walks the interpreter's
 * CallInfo chain and answers with one address per Lua function on it
 * (innermost first), in runs, one for each luaV_execute() on the machine
 * stack, so that perf puts them at the depth they were called from. It
 * names those addresses in /tmp/perf-PID.map as it goes (from a count hook
 * in the interpreter) and when the interpreter closes, so that perf script
 * prints the script's functions, of a script that is still running too.
 *
 * It reads the interpreter's own structures (lstate.h, lobject.h), so it is
 * built against the source of the very Lua release it is loaded into (the
 * Makefile takes Debian's source package of the installed lua5.4).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/prctl.h>
#include <linux/unwind_user.h>

#include "lua.h"
#include "lauxlib.h"
#include "lstate.h"
#include "lobject.h"
#include "lfunc.h"

#ifndef PR_UNWIND_USER
#define PR_UNWIND_USER	82	/* <linux/prctl.h> of a kernel with the series */
#endif

#define EXPORT __attribute__((visibility("default")))

/* One address a function: a page of slots, 16 bytes each, no code. */
#define NR_SLOTS	4096
#define SLOT_SIZE	16
#define MAX_ENTRIES	128

static lua_State *main_L;
/* The thread that runs it: another one's request gets an empty answer. */
static pid_t main_tid;
static uintptr_t base;
/* Which function each slot stands for; 0 if free. Written by the handler. */
static const Proto *volatile slot_proto[NR_SLOTS];
/* Whether its line is in the perf map. */
static bool slot_named[NR_SLOTS];
static volatile int failed;
static int signo;
/* luaV_execute()'s code, [loop_start, loop_end); 0 if not found. */
static uintptr_t loop_start, loop_end;

static void on_count(lua_State *L, lua_Debug *ar);

/*
 * The slot of @p, taken on first sight (open addressing): -1 if full. A
 * slot taken asks the interpreter to name it (a count hook, at its next
 * instruction: lua.c's own signal handler sets hooks so) unless the
 * script has a hook of its own.
 */
static int slot_of(const Proto *p)
{
	unsigned int h = (unsigned int)(((uintptr_t)p >> 4) * 2654435761u);

	for (unsigned int i = 0; i < NR_SLOTS; i++) {
		unsigned int s = (h + i) % NR_SLOTS;
		const Proto *cur = slot_proto[s];

		if (cur == p)
			return s;
		if (!cur) {
			slot_proto[s] = p;
			if (!lua_gethook(main_L))
				lua_sethook(main_L, on_count, LUA_MASKCOUNT, 1);
			return s;
		}
	}
	return -1;
}

/*
 * The kernel's request: async-signal-safe, it reads what the interpreter
 * left in its CallInfo chain (a frame being pushed may show its previous
 * function for a few instructions) and makes two system calls.
 *
 * A run is the Lua frames of one luaV_execute() on the machine stack: the
 * CallInfo that started it is marked CIST_FRESH, and C functions called
 * from Lua (their CallInfos not Lua) are the native frames between runs.
 * A Lua CallInfo not marked so was called by Lua: one called by C and not
 * yet marked (ccall() marks it after luaD_precall() made it current) would
 * join its caller's run, at the wrong depth, so the answer is then empty.
 */
static void on_request(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	uint64_t e[MAX_ENTRIES];
	unsigned int n = 0;
	bool in_run = false;
	CallInfo *ci;

	if (loop_start) {
		e[n++] = UNWIND_USER_ASSIST_LOOP;
		e[n++] = loop_start;
		e[n++] = loop_end;
	}
	/* Another thread of the process: the Lua state is not its stack. */
	if (syscall(SYS_gettid) != main_tid)
		ci = NULL, n = 0;
	else
		ci = main_L->ci;
	for (; ci && ci != &main_L->base_ci; ci = ci->previous) {
		const TValue *f;
		int s;

		if (!isLua(ci))
			continue;
		/* A stack cut short would put its runs at wrong depths. */
		if (n + 2 > MAX_ENTRIES) {
			n = 0;
			break;
		}
		if (loop_start && !in_run)
			e[n++] = UNWIND_USER_ASSIST_RUN;
		in_run = !(ci->callstatus & CIST_FRESH);
		if (in_run && (!ci->previous || !isLua(ci->previous))) {
			n = 0;
			break;
		}
		f = s2v(ci->func);
		if (!ttisLclosure(f))
			continue;
		s = slot_of(clLvalue(f)->p);
		if (s >= 0)
			e[n++] = base + (uintptr_t)s * SLOT_SIZE + SLOT_SIZE / 2;
	}
	struct unwind_user_assist_frames fr = {
		.cookie = (uintptr_t)si->si_value.sival_ptr,
		.entries = (uintptr_t)e,
		.nr = n,
	};
	if (prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_SUBMIT, &fr, sizeof(fr), 0))
		failed = errno;
	errno = saved_errno;
}

/* Name the functions of table @t (at the top of the stack) that were seen. */
static void name_from(lua_State *L, char **names, const char *prefix, int depth)
{
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		if (lua_type(L, -2) == LUA_TSTRING) {
			const char *k = lua_tostring(L, -2);
			const TValue *v = s2v(L->top - 1);

			if (ttisLclosure(v)) {
				const Proto *p = clLvalue(v)->p;

				for (int s = 0; s < NR_SLOTS; s++) {
					if (slot_proto[s] == p && !names[s] &&
					    asprintf(&names[s], "%s%s", prefix, k) < 0)
						names[s] = NULL;
				}
			} else if (lua_istable(L, -1) && depth == 0 &&
				   strcmp(k, "_G") && strcmp(k, "package")) {
				char *pre;

				if (asprintf(&pre, "%s.", k) >= 0) {
					name_from(L, names, pre, 1);
					free(pre);
				}
			}
		}
		lua_pop(L, 1);
	}
}

/*
 * Append to the perf map the functions seen since the last call: outside
 * the handler, in the interpreter's own thread (a count hook, and at
 * lua_close()), as their names come from its tables.
 */
static void write_map(lua_State *L)
{
	char *names[NR_SLOTS] = { 0 };
	char path[64];
	FILE *f = NULL;
	int s;

	for (s = 0; s < NR_SLOTS && (slot_named[s] || !slot_proto[s]); s++)
		;
	if (s == NR_SLOTS)
		return;
	lua_pushglobaltable(L);
	name_from(L, names, "", 0);
	lua_pop(L, 1);

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "a");
	for (s = 0; f && s < NR_SLOTS; s++) {
		const Proto *p = slot_proto[s];
		const char *src;

		if (!p || slot_named[s])
			continue;
		slot_named[s] = true;
		src = p->source ? getstr(p->source) : "?";
		if (*src == '@' || *src == '=')
			src++;
		if (strrchr(src, '/'))
			src = strrchr(src, '/') + 1;
		/*
		 * perf script prints a name as "NAME (DSO)": a name of its
		 * own, else where the function is defined, the main chunk as
		 * its file.
		 */
		fprintf(f, "%lx %x ", (unsigned long)(base + (uintptr_t)s * SLOT_SIZE),
			SLOT_SIZE);
		if (names[s])
			fprintf(f, "%s\n", names[s]);
		else if (p->linedefined == 0)
			fprintf(f, "%s\n", src);
		else
			fprintf(f, "%s:%d\n", src, p->linedefined);
	}
	if (f)
		fclose(f);
	for (s = 0; s < NR_SLOTS; s++)
		free(names[s]);
}

/* Asked for by the handler: name what it saw, for a running profile. */
static void on_count(lua_State *L, lua_Debug *ar)
{
	lua_sethook(L, NULL, 0, 0);
	write_map(L);
}

/* At lua_close(): the rest of the perf map. */
static int on_close(lua_State *L)
{
	if (signo) {
		struct unwind_user_assist off = { 0 };

		prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_ENABLE, &off, sizeof(off), 0);
	}
	write_map(L);
	if (getenv("UNWIND_ASSIST_DEBUG") && failed)
		fprintf(stderr, "unwind_assist: last answer refused: %s\n",
			strerror(failed));
	return 0;
}

/*
 * The code range of the function whose frame holds return address @ra,
 * from the .eh_frame FDE that describes it (luaV_execute() is not a
 * dynamic symbol). Assumes the FDE encodings GCC emits on x86-64 and
 * checks what it reads against what the unwinder found.
 */
struct dwarf_eh_bases {
	void *tbase;
	void *dbase;
	void *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

static int fde_range(uintptr_t ra, uintptr_t *start, uintptr_t *end)
{
	struct dwarf_eh_bases bases;
	const uint8_t *fde = _Unwind_Find_FDE((void *)(ra - 1), &bases);
	int32_t begin;
	uint32_t range;

	if (!fde)
		return -1;
	/* length, CIE pointer, pc_begin and pc_range as pcrel|sdata4, udata4 */
	memcpy(&begin, fde + 8, 4);
	memcpy(&range, fde + 12, 4);
	if ((uintptr_t)(fde + 8) + begin != (uintptr_t)bases.func)
		return -1;
	*start = (uintptr_t)bases.func;
	*end = *start + range;
	return ra > *start && ra <= *end ? 0 : -1;
}

static void *probe_ips[16];
static int probe_nr;

static int probe(lua_State *L)
{
	probe_nr = backtrace(probe_ips, 16);
	return 0;
}

/*
 * Find luaV_execute(): call a Lua function that calls probe() through
 * lua_callk(), a dynamic symbol of known size. In Lua 5.4 the machine
 * stack is then probe <- luaD_precall <- luaV_execute <- luaD_callnoyield
 * <- lua_callk: the loop's frame is two above the probe and two below
 * lua_callk. Anything else (another build, inlining), and the answers
 * carry no runs: better frames above the walk than at a wrong depth.
 */
static void find_loop(lua_State *L)
{
	Dl_info info;
	const ElfW(Sym) *sym;
	uintptr_t callk, s, e;
	int k;

	if (luaL_loadstring(L, "local probe = ...; probe()")) {
		lua_pop(L, 1);
		return;
	}
	lua_pushcfunction(L, probe);
	lua_call(L, 1, 0);
	callk = (uintptr_t)&lua_callk;
	if (!dladdr1((void *)callk, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return;
	for (k = 1; k < probe_nr; k++) {
		uintptr_t ip = (uintptr_t)probe_ips[k];

		if (ip > callk && ip <= callk + sym->st_size)
			break;
	}
	if (k != 4 || fde_range((uintptr_t)probe_ips[2], &s, &e))
		return;
	loop_start = s;
	loop_end = e;
}

EXPORT int luaopen_unwind_assist(lua_State *L)
{
	/*
	 * Without SA_NODEFER: the handler blocks its signal while it runs, so
	 * the samples taken in it (the cost of answering) are not asked about,
	 * and no answer ever leads to another.
	 */
	struct sigaction sa = { .sa_sigaction = on_request,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	struct unwind_user_assist a = {
		.max_entries = MAX_ENTRIES, .timeout_ms = 100,
	};
	void *p;

	main_L = G(L)->mainthread;
	main_tid = syscall(SYS_gettid);
	find_loop(L);
	if (!loop_start && getenv("UNWIND_ASSIST_DEBUG"))
		fprintf(stderr, "unwind_assist: luaV_execute not found: frames go above the walk\n");
	else if (getenv("UNWIND_ASSIST_DEBUG"))
		fprintf(stderr, "unwind_assist: loop at %#lx-%#lx\n", (unsigned long)loop_start, (unsigned long)loop_end);
	p = mmap(NULL, NR_SLOTS * SLOT_SIZE, PROT_READ | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return luaL_error(L, "unwind_assist: mmap: %s", strerror(errno));
	base = (uintptr_t)p;

	a.signo = SIGRTMIN + 3;
	sigaction(a.signo, &sa, NULL);
	if (prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_ENABLE, &a, sizeof(a), 0)) {
		/* A kernel without it: the program runs as before. */
		if (getenv("UNWIND_ASSIST_DEBUG"))
			fprintf(stderr, "unwind_assist: not enabled: %s\n",
				strerror(errno));
	} else {
		signo = a.signo;
	}

	/* The sentinel whose finalizer runs at lua_close(). */
	lua_newuserdata(L, 1);
	lua_newtable(L);
	lua_pushcfunction(L, on_close);
	lua_setfield(L, -2, "__gc");
	lua_setmetatable(L, -2);
	lua_setfield(L, LUA_REGISTRYINDEX, "unwind_assist.sentinel");
	lua_pushboolean(L, signo != 0);
	return 1;
}
