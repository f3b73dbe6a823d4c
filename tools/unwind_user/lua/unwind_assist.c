// SPDX-License-Identifier: GPL-2.0
/*
 * unwind_assist: user-assisted unwinding for an unmodified Lua 5.4
 * interpreter (Documentation/userspace-api/unwind_user.rst, "User-assisted
 * unwinding"). Loaded with `lua5.4 -l unwind_assist script.lua`, it opts
 * the process in; on the kernel's signal it walks the interpreter's
 * CallInfo chain and answers with one address per Lua function on it
 * (innermost first); when the interpreter closes it names those addresses
 * in /tmp/perf-PID.map, so that perf script prints the script's functions.
 *
 * It reads the interpreter's own structures (lstate.h, lobject.h), so it is
 * built against the source of the very Lua release it is loaded into (the
 * Makefile takes Debian's source package of the installed lua5.4).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
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
static uintptr_t base;
/* Which function each slot stands for; 0 if free. Written by the handler. */
static const Proto *volatile slot_proto[NR_SLOTS];
static volatile int failed;
static int signo;

/* The slot of @p, taken on first sight (open addressing): -1 if full. */
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
			return s;
		}
	}
	return -1;
}

/*
 * The kernel's request: async-signal-safe, it reads what the interpreter
 * left in its CallInfo chain (a frame being pushed may show its previous
 * function for a few instructions) and makes one system call.
 */
static void on_request(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	uint64_t e[MAX_ENTRIES];
	unsigned int n = 0;
	CallInfo *ci;

	for (ci = main_L->ci; ci && ci != &main_L->base_ci && n < MAX_ENTRIES;
	     ci = ci->previous) {
		const TValue *f;
		int s;

		if (!isLua(ci))
			continue;
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

/* At lua_close(): write the perf map for the functions seen. */
static int on_close(lua_State *L)
{
	char *names[NR_SLOTS] = { 0 };
	char path[64];
	FILE *f;

	if (signo) {
		struct unwind_user_assist off = { 0 };

		prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_ENABLE, &off, sizeof(off), 0);
	}
	lua_pushglobaltable(L);
	name_from(L, names, "", 0);
	lua_pop(L, 1);

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "a");
	for (int s = 0; f && s < NR_SLOTS; s++) {
		const Proto *p = slot_proto[s];
		const char *src;

		if (!p)
			continue;
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
	for (int s = 0; s < NR_SLOTS; s++)
		free(names[s]);
	if (getenv("UNWIND_ASSIST_DEBUG") && failed)
		fprintf(stderr, "unwind_assist: last answer refused: %s\n",
			strerror(failed));
	return 0;
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
