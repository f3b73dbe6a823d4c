// SPDX-License-Identifier: GPL-2.0
/*
 * _unwind_assist: user-assisted unwinding for an unmodified CPython 3.11
 * (Documentation/userspace-api/unwind_user.rst, "User-assisted unwinding").
 *
 * On the kernel's signal, the interrupted thread walks its own _PyCFrame
 * chain (one run a native activation of _PyEval_EvalFrameDefault) and the
 * interpreter frames of each run, gives each distinct function (qualname,
 * filename, first line: by content, never by address) a 16-byte slot of an
 * anonymous PROT_READ|PROT_EXEC mapping, and submits
 *
 *	LOOP, start, end, RUN, frame..., RUN, frame..., ...
 *
 * innermost run first. A writer thread names new slots in /tmp/perf-PID.map.
 *
 * The handler takes no lock and reads nothing that may be freed or unmapped
 * except through process_vm_readv(), which returns short instead of
 * faulting; see README.md for the argument. It reads the interpreter's
 * private structures, so it refuses to run on any other CPython release
 * than the one whose headers built it.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#define Py_BUILD_CORE
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_runtime.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if __has_include(<linux/unwind_user.h>)
#include <linux/unwind_user.h>
#endif

#ifndef PR_UNWIND_USER
#define PR_UNWIND_USER	82	/* <linux/prctl.h> of a kernel with the series */
#endif

#ifndef UNWIND_USER_ASSIST_ENABLE
#define UNWIND_USER_ASSIST_ENABLE	4
#define UNWIND_USER_ASSIST_SUBMIT	5
#define UNWIND_USER_ASSIST_MAX_ENTRIES	256

struct unwind_user_assist {
	__u32 signo;
	__u32 max_entries;
	__u32 timeout_ms;
	__u32 flags;
};

struct unwind_user_assist_frames {
	__u64 cookie;
	__u64 entries;
	__u32 nr;
	__u32 flags;
};
#endif

#ifndef UNWIND_USER_ASSIST_LOOP
#define UNWIND_USER_ASSIST_LOOP		1
#define UNWIND_USER_ASSIST_RUN		2
#endif

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030c0000
#error "built for CPython 3.11 only (its frame and thread-state layouts)"
#endif

#define MAX_ENTRIES	UNWIND_USER_ASSIST_MAX_ENTRIES
#define TIMEOUT_MS	100

/* One address a function: 16-byte slots in a mapping with no code. */
#define NR_SLOTS	4096		/* a power of two */
#define SLOT_SIZE	16
#define QUAL_MAX	128		/* bytes of co_qualname kept (head) */
#define FILE_MAX	160		/* bytes of co_filename kept (tail) */

/* Walk bounds. */
#define MAX_CFRAMES	(MAX_ENTRIES / 2)
#define MAX_CHUNKS	64
#define MAX_WALK	4096		/* frames visited, skipped ones included */
#define BATCH		8		/* code objects read per system call */

#define TEST_COOKIE	((void *)0x7e57c00c1e5ULL)

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_WRITTEN };

struct slot {
	unsigned int state;
	unsigned int hash;
	int line;
	unsigned short qlen;
	unsigned short flen;
	char qual[QUAL_MAX];
	char file[FILE_MAX];
};

/* Why an answer was empty; the index of its counter. */
enum {
	WHY_OK,
	WHY_NO_TSTATE,		/* no Python thread state on this thread */
	WHY_FINALIZING,		/* the interpreter is shutting down */
	WHY_FAULT,		/* a read came back short */
	WHY_INCONSISTENT,		/* a chain did not hold together */
	WHY_TOO_BIG,		/* more than MAX_ENTRIES entries */
	WHY_TABLE_FULL,		/* no free slot */
	NR_REASONS
};

static const char *const reason_name[NR_REASONS] = {
	"ok", "no_tstate", "finalizing", "fault", "inconsistent",
	"too_big", "table_full",
};

static struct slot slots[NR_SLOTS];
static uintptr_t base;			/* the slots' addresses */
static uintptr_t loop_start, loop_end;	/* _PyEval_EvalFrameDefault */
static pthread_key_t tss_key;
static int signo;
static bool installed;

static unsigned long st_answers, st_frames, st_runs, st_submit_errors;
static unsigned long st_tests, st_foreign, st_handler_ns_max, st_handler_ns;
static unsigned long st_empty[NR_REASONS];
static int st_last_submit_errno;

/* The answer the test hook asked for (UNWIND_ASSIST tests, no kernel). */
enum { T_IDLE, T_PENDING, T_COPYING, T_DONE };
static struct {
	pthread_mutex_t lock;	/* one request at a time; never in the handler */
	pid_t tid;
	unsigned int state;
	unsigned int nr;
	int reason;
	uint64_t e[MAX_ENTRIES];
} treq = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t writer;
static bool writer_running;

#define inc(p)		__atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#define add(p, v)	__atomic_fetch_add((p), (v), __ATOMIC_RELAXED)

/* Copy @n ranges of this process that may be unmapped: false if any fault. */
static bool read_safe(struct iovec *local, struct iovec *remote,
		      unsigned long n)
{
	size_t want = 0;
	ssize_t got;

	for (unsigned long i = 0; i < n; i++)
		want += local[i].iov_len;
	got = syscall(SYS_process_vm_readv, getpid(), local, n, remote, n, 0);
	return got >= 0 && (size_t)got == want;
}

static bool read_one(void *dst, uintptr_t src, size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)src, len };

	return read_safe(&l, &r, 1);
}

/* The live part of one chunk of the thread's data stack. */
struct range {
	uintptr_t lo, live, hi;		/* [lo, live) live, [lo, hi) mapped */
};

struct walk {
	struct range chunk[MAX_CHUNKS];
	unsigned int nr_chunks;
	uint64_t *e;			/* the answer */
	unsigned int nr;
	uintptr_t prev_instr[MAX_ENTRIES];
	char owner[MAX_ENTRIES];
};

static unsigned int fnv(unsigned int h, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		h = (h ^ *c++) * 16777619u;
	return h;
}

/* The slot of a function, claimed on first sight: -1 if the table is full. */
static int slot_of(const char *q, unsigned int ql, const char *f,
		   unsigned int fl, int line)
{
	unsigned int h = fnv(fnv(fnv(2166136261u, q, ql), "\n", 1), f, fl);

	h = fnv(h, &line, sizeof(line));
	for (unsigned int i = 0; i < NR_SLOTS; i++) {
		unsigned int idx = (h + i) & (NR_SLOTS - 1);
		struct slot *s = &slots[idx];
		unsigned int st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);

		if (st == SLOT_FREE) {
			if (__atomic_compare_exchange_n(&s->state, &st,
							SLOT_BUSY, false,
							__ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				s->hash = h;
				s->line = line;
				s->qlen = ql;
				s->flen = fl;
				memcpy(s->qual, q, ql);
				memcpy(s->file, f, fl);
				__atomic_store_n(&s->state, SLOT_READY,
						 __ATOMIC_RELEASE);
				return idx;
			}
		}
		/*
		 * Another thread is filling it: look further. At worst the
		 * function gets two slots, both named alike.
		 */
		if (st == SLOT_BUSY)
			continue;
		if (s->hash == h && s->line == line && s->qlen == ql &&
		    s->flen == fl && !memcmp(s->qual, q, ql) &&
		    !memcmp(s->file, f, fl))
			return idx;
	}
	return -1;
}

/*
 * Code objects seen before, and their slots, so that a frame whose code
 * object was named once costs no read of its strings: keyed by what the
 * code object's header says (itself, its name and file objects, its first
 * line), which its reuse by another function would change. Handlers of
 * several threads share it: an entry is written under its sequence count
 * (odd while written), and read only if the count was even and unchanged.
 */
#define NR_CACHE	1024		/* a power of two */

struct cached {
	unsigned int seq;
	int line;
	int slot;
	uintptr_t code, qual, file;
};

static struct cached cache[NR_CACHE];

static struct cached *cache_entry(uintptr_t code)
{
	return &cache[(code >> 4) * 2654435761u & (NR_CACHE - 1)];
}

#define load(p)		__atomic_load_n((p), __ATOMIC_RELAXED)
#define store(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)

static int cache_find(uintptr_t code, uintptr_t qual, uintptr_t file, int line)
{
	struct cached *c = cache_entry(code);
	unsigned int seq = __atomic_load_n(&c->seq, __ATOMIC_ACQUIRE);
	struct cached v = {
		.code = load(&c->code), .qual = load(&c->qual),
		.file = load(&c->file), .line = load(&c->line),
		.slot = load(&c->slot),
	};

	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if ((seq & 1) || load(&c->seq) != seq)
		return -1;
	if (v.code != code || v.qual != qual || v.file != file || v.line != line)
		return -1;
	return v.slot;
}

static void cache_put(uintptr_t code, uintptr_t qual, uintptr_t file, int line,
		      int slot)
{
	struct cached *c = cache_entry(code);
	unsigned int seq = load(&c->seq);

	/* Another thread writing it: leave it to that one. */
	if ((seq & 1) ||
	    !__atomic_compare_exchange_n(&c->seq, &seq, seq + 1, false,
					 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	store(&c->code, code);
	store(&c->qual, qual);
	store(&c->file, file);
	store(&c->line, line);
	store(&c->slot, slot);
	__atomic_store_n(&c->seq, seq + 2, __ATOMIC_RELEASE);
}

static bool in_chunk(const struct walk *w, uintptr_t p, size_t len,
		     bool live)
{
	for (unsigned int i = 0; i < w->nr_chunks; i++) {
		const struct range *r = &w->chunk[i];
		uintptr_t end = live ? r->live : r->hi;

		if (p >= r->lo && p <= end && len <= end - p)
			return true;
	}
	return false;
}

/* The thread's data-stack chunks: only this thread frees them. */
static int read_chunks(struct walk *w, const PyThreadState *ts)
{
	uintptr_t c = (uintptr_t)ts->datastack_chunk;
	uintptr_t top = (uintptr_t)ts->datastack_top;
	size_t data = offsetof(_PyStackChunk, data);

	for (w->nr_chunks = 0; c; w->nr_chunks++) {
		_PyStackChunk hdr;
		struct range *r = &w->chunk[w->nr_chunks];

		if (w->nr_chunks == MAX_CHUNKS)
			return WHY_INCONSISTENT;
		/*
		 * Mapped: a chunk is published (tstate->datastack_chunk, a
		 * newer chunk's ->previous) once allocated, and unmapped only
		 * by this thread after it was unlinked.
		 */
		memcpy(&hdr, (void *)c, data);
		if (hdr.size < data || hdr.size > (1UL << 30))
			return WHY_INCONSISTENT;
		r->lo = c + data;
		r->hi = c + hdr.size;
		/* The innermost chunk's top is the thread's; the others keep theirs. */
		r->live = w->nr_chunks ? r->lo + hdr.top * sizeof(PyObject *) : top;
		if (r->live < r->lo || r->live > r->hi)
			return WHY_INCONSISTENT;
		c = (uintptr_t)hdr.previous;
	}
	return WHY_OK;
}

/*
 * One run: the frames from @f through the entry frame, whose ->previous must
 * be @outer (the enclosing run's current frame). Appends the frames' code
 * objects to w->e (resolved to slots later).
 */
static int walk_run(struct walk *w, uintptr_t f, uintptr_t outer,
		    unsigned int *budget)
{
	bool first = true;

	for (;;) {
		_PyInterpreterFrame fr;
		size_t hdr = offsetof(_PyInterpreterFrame, localsplus);

		if (!f || !(*budget)--)
			return WHY_INCONSISTENT;
		if (in_chunk(w, f, hdr, true)) {
			/* Live: mapped while this thread is interrupted. */
			memcpy(&fr, (void *)f, hdr);
			if (fr.owner != FRAME_OWNED_BY_THREAD)
				return WHY_INCONSISTENT;
		} else if (in_chunk(w, f, hdr, false)) {
			/*
			 * Popped (pop_frame() ran, the run's current_frame not
			 * yet moved on): only the innermost, and not named.
			 */
			if (!first)
				return WHY_INCONSISTENT;
			memcpy(&fr, (void *)f, hdr);
			if (fr.is_entry)
				return WHY_INCONSISTENT;
			f = (uintptr_t)fr.previous;
			first = false;
			continue;
		} else {
			/* A generator's frame, in its object: may be freed. */
			if (!read_one(&fr, f, hdr))
				return WHY_FAULT;
			if (fr.owner != FRAME_OWNED_BY_GENERATOR)
				return WHY_INCONSISTENT;
		}
		first = false;
		if (w->nr >= MAX_ENTRIES)
			return WHY_TOO_BIG;
		w->prev_instr[w->nr] = (uintptr_t)fr.prev_instr;
		w->owner[w->nr] = fr.owner;
		w->e[w->nr++] = (uintptr_t)fr.f_code;
		if (fr.is_entry)
			return (uintptr_t)fr.previous == outer ? WHY_OK :
								  WHY_INCONSISTENT;
		f = (uintptr_t)fr.previous;
	}
}

/* A str's UTF-8 bytes (head or tail @max of them) into @buf; "?" else. */
struct str {
	uintptr_t obj;
	PyCompactUnicodeObject h;
	uintptr_t data;
	size_t len;
};

static void str_plan(struct str *s, size_t max, bool tail)
{
	PyASCIIObject *a = &s->h._base;

	s->len = 0;
	if (!s->obj || a->ob_base.ob_type != &PyUnicode_Type ||
	    !a->state.compact || !a->state.ready)
		return;
	if (a->state.ascii) {
		s->len = a->length;
		s->data = s->obj + sizeof(PyASCIIObject);
	} else if (s->h.utf8) {
		s->len = s->h.utf8_length;
		s->data = (uintptr_t)s->h.utf8;
	}
	if (s->len > max) {
		if (tail)
			s->data += s->len - max;
		s->len = max;
	}
}

/* Resolve the code objects of w->e[from, to) to slot addresses in place. */
static int resolve(struct walk *w, unsigned int from, unsigned int to)
{
	size_t lo = offsetof(PyObject, ob_type);
	size_t hi = offsetof(PyCodeObject, co_code_adaptive);
	char code[BATCH][sizeof(PyCodeObject)];
	struct str s[BATCH][2];
	char q[BATCH][QUAL_MAX], f[BATCH][FILE_MAX];
	struct iovec l[2 * BATCH], r[2 * BATCH];
	int slot[BATCH];
	unsigned int n = to - from, k;

	for (unsigned int i = 0; i < n; i++) {
		l[i] = (struct iovec){ code[i] + lo, hi - lo };
		r[i] = (struct iovec){ (void *)(w->e[from + i] + lo), hi - lo };
	}
	if (!read_safe(l, r, n))
		return WHY_FAULT;
	/* The strings of the code objects not seen before. */
	k = 0;
	for (unsigned int i = 0; i < n; i++) {
		PyCodeObject *co = (PyCodeObject *)code[i];

		if (co->ob_base.ob_base.ob_type != &PyCode_Type)
			return WHY_INCONSISTENT;
		s[i][0].obj = (uintptr_t)co->co_qualname;
		s[i][1].obj = (uintptr_t)co->co_filename;
		slot[i] = cache_find(w->e[from + i], s[i][0].obj, s[i][1].obj,
				     co->co_firstlineno);
		for (int j = 0; j < 2; j++) {
			memset(&s[i][j].h, 0, sizeof(s[i][j].h));
			if (slot[i] >= 0)
				continue;
			l[k] = (struct iovec){ &s[i][j].h, sizeof(PyASCIIObject) };
			r[k++] = (struct iovec){ (void *)s[i][j].obj,
						 sizeof(PyASCIIObject) };
		}
	}
	if (k && !read_safe(l, r, k))
		return WHY_FAULT;
	/* Non-ASCII: the cached UTF-8 pointer, if any. */
	k = 0;
	for (unsigned int i = 0; i < 2 * n; i++) {
		struct str *t = &s[i / 2][i % 2];
		PyASCIIObject *a = &t->h._base;

		if (a->ob_base.ob_type != &PyUnicode_Type || a->state.ascii ||
		    !a->state.compact)
			continue;
		l[k] = (struct iovec){ &t->h.utf8_length, 2 * sizeof(void *) };
		r[k++] = (struct iovec){ (void *)(t->obj + sizeof(PyASCIIObject)),
					 2 * sizeof(void *) };
	}
	if (k && !read_safe(l, r, k))
		return WHY_FAULT;
	k = 0;
	for (unsigned int i = 0; i < n; i++) {
		str_plan(&s[i][0], QUAL_MAX, false);
		str_plan(&s[i][1], FILE_MAX, true);
		if (s[i][0].len) {
			l[k] = (struct iovec){ q[i], s[i][0].len };
			r[k++] = (struct iovec){ (void *)s[i][0].data, s[i][0].len };
		}
		if (s[i][1].len) {
			l[k] = (struct iovec){ f[i], s[i][1].len };
			r[k++] = (struct iovec){ (void *)s[i][1].data, s[i][1].len };
		}
	}
	if (k && !read_safe(l, r, k))
		return WHY_FAULT;
	for (unsigned int i = 0; i < n; i++) {
		PyCodeObject *co = (PyCodeObject *)code[i];
		uintptr_t first = w->e[from + i] + hi +
				  co->_co_firsttraceable * sizeof(_Py_CODEUNIT);

		/* _PyFrame_IsIncomplete(): not started; sys._getframe() skips it. */
		if (w->owner[from + i] != FRAME_OWNED_BY_GENERATOR &&
		    w->prev_instr[from + i] < first) {
			w->e[from + i] = 0;
			continue;
		}
		if (slot[i] < 0) {
			/*
			 * Only ASCII names are kept with the code object: a
			 * UTF-8 buffer is filled lazily by another thread,
			 * perhaps as it was read, and "?" is no name.
			 */
			bool keep = s[i][0].len && s[i][1].len &&
				    s[i][0].h._base.state.ascii &&
				    s[i][1].h._base.state.ascii;

			if (!s[i][0].len)
				s[i][0].len = 1, q[i][0] = '?';
			if (!s[i][1].len)
				s[i][1].len = 1, f[i][0] = '?';
			slot[i] = slot_of(q[i], s[i][0].len, f[i], s[i][1].len,
					  co->co_firstlineno);
			if (slot[i] < 0)
				return WHY_TABLE_FULL;
			if (keep)
				cache_put(w->e[from + i], s[i][0].obj,
					  s[i][1].obj, co->co_firstlineno,
					  slot[i]);
		}
		w->e[from + i] = base + (uintptr_t)slot[i] * SLOT_SIZE + SLOT_SIZE / 2;
	}
	return WHY_OK;
}

/* Build the answer in @e: its length in *nr, or why it is empty. */
static int build(uint64_t *e, unsigned int *nr)
{
	struct walk w = { .e = e };
	uintptr_t cur[MAX_CFRAMES + 1];
	unsigned int ncf = 0, budget = MAX_WALK, out = 0;
	PyThreadState *t, ts;
	uintptr_t c, root;
	int err;

	*nr = 0;
	t = pthread_getspecific(tss_key);
	if (!t)
		return WHY_NO_TSTATE;
	if (_Py_atomic_load_relaxed(&_PyRuntime._finalizing))
		return WHY_FINALIZING;
	/*
	 * This thread's own state: it clears the key before it frees it
	 * (tstate_delete_common()), and nothing else frees it while it runs.
	 */
	memcpy(&ts, t, sizeof(ts));
	if (ts.thread_id != (unsigned long)pthread_self())
		return WHY_INCONSISTENT;
	err = read_chunks(&w, &ts);
	if (err)
		return err;

	/* The cframe chain, innermost first, down to the root (no run). */
	root = (uintptr_t)t + offsetof(PyThreadState, root_cframe);
	for (c = (uintptr_t)ts.cframe; c != root; ncf++) {
		_PyCFrame cfr;

		if (!c || ncf == MAX_CFRAMES)
			return c ? WHY_TOO_BIG : WHY_INCONSISTENT;
		/*
		 * A cframe is a local of a _PyEval_EvalFrameDefault() on this
		 * stack, and tstate->cframe always one: the innermost is read
		 * directly. Its ->previous may not be stored yet (the compiler
		 * may publish tstate->cframe first), so the others are read
		 * safely, a garbage link giving a short read or a chain that
		 * does not hold together.
		 */
		if (!ncf)
			memcpy(&cfr, (void *)c, sizeof(cfr));
		else if (!read_one(&cfr, c, sizeof(cfr)))
			return WHY_FAULT;
		cur[ncf] = (uintptr_t)cfr.current_frame;
		c = (uintptr_t)cfr.previous;
	}
	cur[ncf] = (uintptr_t)ts.root_cframe.current_frame;

	/* LOOP, start, end; then RUN, its code objects, for each run. */
	e[w.nr++] = UNWIND_USER_ASSIST_LOOP;
	e[w.nr++] = loop_start;
	e[w.nr++] = loop_end;
	for (unsigned int i = 0; i < ncf; i++) {
		if (w.nr >= MAX_ENTRIES)
			return WHY_TOO_BIG;
		w.owner[w.nr] = 0;
		e[w.nr++] = UNWIND_USER_ASSIST_RUN;
		err = walk_run(&w, cur[i], cur[i + 1], &budget);
		if (err)
			return err;
	}

	/* Name the code objects, BATCH at a time, and drop skipped frames. */
	for (unsigned int i = 3; i < w.nr;) {
		unsigned int j;

		if (e[i] == UNWIND_USER_ASSIST_RUN) {
			i++;
			continue;
		}
		for (j = i; j < w.nr && j - i < BATCH &&
		     e[j] != UNWIND_USER_ASSIST_RUN; j++)
			;
		err = resolve(&w, i, j);
		if (err)
			return err;
		i = j;
	}
	for (unsigned int i = 0; i < w.nr; i++) {
		if (i < 3 || e[i])
			e[out++] = e[i];
	}
	*nr = out;
	add(&st_runs, ncf);
	add(&st_frames, out - 3 - ncf);
	return WHY_OK;
}

static unsigned long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000UL + t.tv_nsec;
}

/*
 * The kernel's request: async-signal-safe, no lock, no allocation. Not
 * SA_NODEFER: the signal stays blocked while it runs, so it never nests
 * in one thread; threads run it concurrently (atomic slot claims).
 */
static void on_request(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	unsigned long t0 = now_ns(), dt, max;
	uint64_t e[MAX_ENTRIES];
	unsigned int nr, st = T_PENDING;
	bool test;
	int why;

	if (si->si_code != SI_QUEUE) {
		inc(&st_foreign);
		errno = saved_errno;
		return;
	}
	test = si->si_pid == getpid() && si->si_value.sival_ptr == TEST_COOKIE;
	why = build(e, &nr);
	if (why)
		nr = 0;
	inc(&st_empty[why]);
	if (test) {
		inc(&st_tests);
		if (treq.tid == syscall(SYS_gettid) &&
		    __atomic_compare_exchange_n(&treq.state, &st, T_COPYING,
						false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			memcpy(treq.e, e, nr * sizeof(e[0]));
			treq.nr = nr;
			treq.reason = why;
			__atomic_store_n(&treq.state, T_DONE, __ATOMIC_RELEASE);
		}
	} else {
		struct unwind_user_assist_frames fr = {
			.cookie = (uintptr_t)si->si_value.sival_ptr,
			.entries = (uintptr_t)e,
			.nr = nr,
		};

		inc(&st_answers);
		if (prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_SUBMIT, &fr,
			  sizeof(fr), 0)) {
			inc(&st_submit_errors);
			st_last_submit_errno = errno;
		}
	}
	dt = now_ns() - t0;
	add(&st_handler_ns, dt);
	max = __atomic_load_n(&st_handler_ns_max, __ATOMIC_RELAXED);
	while (dt > max &&
	       !__atomic_compare_exchange_n(&st_handler_ns_max, &max, dt, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	errno = saved_errno;
}

/* The perf map: "START SIZE qualname (file:line)" for each new slot. */
static void flush_map(void)
{
	static char buf[65536];
	size_t len = 0;
	char path[64];
	int fd = -1;

	pthread_mutex_lock(&flush_lock);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	for (unsigned int i = 0; i < NR_SLOTS; i++) {
		struct slot *s = &slots[i];
		char q[QUAL_MAX + 1], f[FILE_MAX + 1], *b;

		if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != SLOT_READY)
			continue;
		if (len + QUAL_MAX + FILE_MAX + 64 > sizeof(buf)) {
			if (fd < 0)
				fd = open(path, O_WRONLY | O_CREAT | O_APPEND |
					  O_CLOEXEC, 0644);
			if (fd >= 0 && write(fd, buf, len) < 0)
				break;
			len = 0;
		}
		memcpy(q, s->qual, s->qlen);
		q[s->qlen] = 0;
		memcpy(f, s->file, s->flen);
		f[s->flen] = 0;
		for (char *p = q; *p; p++)
			if ((unsigned char)*p < ' ')
				*p = '?';
		for (char *p = f; *p; p++)
			if ((unsigned char)*p < ' ')
				*p = '?';
		b = strrchr(f, '/');
		len += snprintf(buf + len, sizeof(buf) - len, "%lx %x %s (%s:%d)\n",
				(unsigned long)(base + (uintptr_t)i * SLOT_SIZE),
				SLOT_SIZE, q, b ? b + 1 : f, s->line);
		__atomic_store_n(&s->state, SLOT_WRITTEN, __ATOMIC_RELEASE);
	}
	if (len) {
		if (fd < 0)
			fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
				  0644);
		if (fd >= 0 && write(fd, buf, len) < 0)
			len = 0;
	}
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&flush_lock);
}

static void *writer_main(void *arg)
{
	struct timespec t = { 0, 100 * 1000 * 1000 };

	for (;;) {
		nanosleep(&t, NULL);
		flush_map();
	}
	return NULL;
}

static int start_writer(void)
{
	sigset_t all, old;
	int err;

	/* Not a Python thread; only the kernel's signal may reach it. */
	sigfillset(&all);
	sigdelset(&all, signo);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&writer, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		writer_running = true;
	return err;
}

/* A real-time signal nobody handles, SIGRTMIN+4 first. */
static int pick_signal(void)
{
	for (int s = SIGRTMIN + 4; s <= SIGRTMAX; s++) {
		struct sigaction old;

		if (sigaction(s, NULL, &old))
			continue;
		if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == on_request)
			return s;
		if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
			return s;
	}
	return -1;
}

static PyObject *ua_install(PyObject *self, PyObject *unused)
{
	struct sigaction sa = { .sa_sigaction = on_request,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	void *p;
	int s;

	if (installed)
		return PyLong_FromLong(signo);
	if ((Py_Version >> 8) != (PY_VERSION_HEX >> 8)) {
		PyErr_Format(PyExc_RuntimeError,
			     "built for CPython %s, running %s", PY_VERSION,
			     Py_GetVersion());
		return NULL;
	}
	if (!_PyRuntime.gilstate.autoTSSkey._is_initialized) {
		PyErr_SetString(PyExc_RuntimeError, "no autoTSSkey");
		return NULL;
	}
	tss_key = _PyRuntime.gilstate.autoTSSkey._key;
	if (!dladdr1((void *)_PyEval_EvalFrameDefault, &info, (void **)&sym,
		     RTLD_DL_SYMENT) || !sym || !sym->st_size) {
		PyErr_SetString(PyExc_RuntimeError,
				"no size for _PyEval_EvalFrameDefault");
		return NULL;
	}
	loop_start = (uintptr_t)_PyEval_EvalFrameDefault;
	loop_end = loop_start + sym->st_size;

	p = mmap(NULL, NR_SLOTS * SLOT_SIZE, PROT_READ | PROT_EXEC,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return PyErr_SetFromErrno(PyExc_OSError);
	s = pick_signal();
	if (s < 0) {
		munmap(p, NR_SLOTS * SLOT_SIZE);
		PyErr_SetString(PyExc_RuntimeError, "no free real-time signal");
		return NULL;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(s, &sa, NULL)) {
		munmap(p, NR_SLOTS * SLOT_SIZE);
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	base = (uintptr_t)p;
	signo = s;
	installed = true;
	return PyLong_FromLong(signo);
}

static int assist(int s)
{
	struct unwind_user_assist a = {
		.signo = s, .max_entries = MAX_ENTRIES, .timeout_ms = TIMEOUT_MS,
	};

	return prctl(PR_UNWIND_USER, UNWIND_USER_ASSIST_ENABLE, &a, sizeof(a),
		     0) ? errno : 0;
}

/* opt_in() -> 0 or the errno of UNWIND_USER_ASSIST_ENABLE. */
static PyObject *ua_opt_in(PyObject *self, PyObject *unused)
{
	long probe = 0, copy = -1;
	int err;

	errno = 0;
	if (!installed) {
		PyErr_SetString(PyExc_RuntimeError, "not installed");
		return NULL;
	}
	/*
	 * Every read of the handler goes through process_vm_readv(): without
	 * it (a kernel without CONFIG_CROSS_MEMORY_ATTACH, a seccomp filter)
	 * every answer would be empty, so do not opt in.
	 */
	if (!read_one(&copy, (uintptr_t)&probe, sizeof(probe)) || copy != probe)
		return PyLong_FromLong(errno ? errno : EIO);
	err = assist(signo);
	/* The writer only where answers go out: not on every refusing kernel. */
	if (!err && !writer_running)
		err = start_writer();
	return PyLong_FromLong(err);
}

static PyObject *ua_opt_out(PyObject *self, PyObject *unused)
{
	return PyLong_FromLong(assist(0));
}

static PyObject *ua_flush(PyObject *self, PyObject *unused)
{
	if (installed) {
		Py_BEGIN_ALLOW_THREADS
		flush_map();
		Py_END_ALLOW_THREADS
	}
	Py_RETURN_NONE;
}

/*
 * In a fork child: its own map file (every slot again); opt_in() starts its
 * writer.
 */
static PyObject *ua_after_fork_child(PyObject *self, PyObject *unused)
{
	if (!installed)
		Py_RETURN_NONE;
	pthread_mutex_init(&flush_lock, NULL);
	pthread_mutex_init(&treq.lock, NULL);
	treq.state = T_IDLE;
	for (unsigned int i = 0; i < NR_SLOTS; i++)
		if (slots[i].state == SLOT_WRITTEN)
			slots[i].state = SLOT_READY;
	/* The parent's writer is not in the child: opt_in() starts one. */
	writer_running = false;
	Py_RETURN_NONE;
}

static PyObject *slot_name(uint64_t a)
{
	unsigned long i = (a - base) / SLOT_SIZE;
	const struct slot *s;
	const char *f;

	if (a < base || i >= NR_SLOTS)
		return PyUnicode_FromFormat("<bad %llx>", (unsigned long long)a);
	s = &slots[i];
	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) < SLOT_READY)
		return PyUnicode_FromString("<unready>");
	f = memrchr(s->file, '/', s->flen);
	f = f ? f + 1 : s->file;
	char buf[QUAL_MAX + FILE_MAX + 32];
	int n = snprintf(buf, sizeof(buf), "%.*s (%.*s:%d)", (int)s->qlen,
			 s->qual, (int)(s->file + s->flen - f), f, s->line);

	return PyUnicode_DecodeUTF8(buf, n, "replace");
}

/*
 * _answer(native_id=None) -> list of runs (innermost first), each a list
 * of names (innermost first), or None for an empty answer. The test hook:
 * the thread runs the real handler for a test cookie and the answer is
 * captured instead of submitted.
 */
static PyObject *ua_answer(PyObject *self, PyObject *args)
{
	long tid = 0;
	PyObject *res = NULL, *run = NULL;
	unsigned int st, nr = 0;
	uint64_t e[MAX_ENTRIES];
	int err = 0, why = WHY_OK;

	if (!PyArg_ParseTuple(args, "|l", &tid))
		return NULL;
	if (!installed) {
		PyErr_SetString(PyExc_RuntimeError, "not installed");
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	pthread_mutex_lock(&treq.lock);
	if (!tid)
		tid = syscall(SYS_gettid);
	treq.tid = tid;
	__atomic_store_n(&treq.state, T_PENDING, __ATOMIC_RELEASE);
	{
		siginfo_t si = { .si_signo = signo, .si_code = SI_QUEUE };

		si.si_pid = getpid();
		si.si_uid = getuid();
		si.si_value.sival_ptr = TEST_COOKIE;
		if (syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &si))
			err = errno;
	}
	for (int i = 0; !err && i < 200000; i++) {
		st = __atomic_load_n(&treq.state, __ATOMIC_ACQUIRE);
		if (st == T_DONE)
			break;
		if (i > 100) {
			struct timespec t = { 0, 10000 };

			nanosleep(&t, NULL);
		}
	}
	st = T_PENDING;
	if (err || __atomic_compare_exchange_n(&treq.state, &st, T_IDLE, false,
					       __ATOMIC_ACQ_REL,
					       __ATOMIC_ACQUIRE)) {
		if (!err)
			err = ETIMEDOUT;
	} else {
		while (__atomic_load_n(&treq.state, __ATOMIC_ACQUIRE) != T_DONE)
			;
		nr = treq.nr;
		why = treq.reason;
		memcpy(e, treq.e, nr * sizeof(e[0]));
		__atomic_store_n(&treq.state, T_IDLE, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&treq.lock);
	Py_END_ALLOW_THREADS
	if (err) {
		errno = err;
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	if (!nr)
		return Py_BuildValue("(Os)", Py_None, reason_name[why]);
	res = PyList_New(0);
	for (unsigned int i = 0; res && i < nr; i++) {
		PyObject *name;

		if (e[i] == UNWIND_USER_ASSIST_LOOP) {
			i += 2;
			continue;
		}
		if (e[i] == UNWIND_USER_ASSIST_RUN) {
			run = PyList_New(0);
			if (!run || PyList_Append(res, run))
				Py_CLEAR(res);
			Py_XDECREF(run);
			continue;
		}
		name = slot_name(e[i]);
		if (!name || !run || PyList_Append(run, name))
			Py_CLEAR(res);
		Py_XDECREF(name);
	}
	if (!res)
		return NULL;
	return Py_BuildValue("(Ns)", res, reason_name[why]);
}

static PyObject *ua_stats(PyObject *self, PyObject *unused)
{
	PyObject *d = Py_BuildValue(
		"{s:k,s:k,s:k,s:k,s:k,s:k,s:k,s:k,s:i,s:i}",
		"answers", st_answers, "frames", st_frames, "runs", st_runs,
		"submit_errors", st_submit_errors, "test_answers", st_tests,
		"foreign_signals", st_foreign,
		"handler_ns_max", st_handler_ns_max,
		"handler_ns_total", st_handler_ns,
		"last_submit_errno", st_last_submit_errno, "signo", signo);

	for (int i = 0; d && i < NR_REASONS; i++) {
		char k[32];
		PyObject *v = PyLong_FromUnsignedLong(st_empty[i]);

		snprintf(k, sizeof(k), i ? "empty_%s" : "built", reason_name[i]);
		if (!v || PyDict_SetItemString(d, k, v))
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	return d;
}

static PyObject *ua_info(PyObject *self, PyObject *unused)
{
	unsigned int used = 0;

	for (unsigned int i = 0; i < NR_SLOTS; i++)
		used += slots[i].state != SLOT_FREE;
	return Py_BuildValue("{s:k,s:k,s:k,s:I,s:I}", "base", (unsigned long)base,
			     "loop_start", (unsigned long)loop_start,
			     "loop_end", (unsigned long)loop_end,
			     "slots", NR_SLOTS, "slots_used", used);
}

static PyMethodDef methods[] = {
	{ "install", ua_install, METH_NOARGS,
	  "Map the slots, install the handler: the signal" },
	{ "opt_in", ua_opt_in, METH_NOARGS,
	  "UNWIND_USER_ASSIST_ENABLE, then the writer: 0 or an errno" },
	{ "opt_out", ua_opt_out, METH_NOARGS, "Turn it off: 0 or errno" },
	{ "flush", ua_flush, METH_NOARGS, "Write new names to the perf map" },
	{ "after_fork_child", ua_after_fork_child, METH_NOARGS,
	  "A fork child: its own map file; opt_in() starts its writer" },
	{ "_answer", ua_answer, METH_VARARGS,
	  "Test hook: (runs or None, reason) of a thread (native id)" },
	{ "stats", ua_stats, METH_NOARGS, "Counters" },
	{ "info", ua_info, METH_NOARGS, "Addresses and table use" },
	{ NULL, NULL, 0, NULL }
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_unwind_assist", NULL, -1, methods,
};

PyMODINIT_FUNC PyInit__unwind_assist(void)
{
	PyObject *m = PyModule_Create(&module);

	if (!m)
		return NULL;
	if (PyModule_AddObject(m, "BUILT_FOR",
			       Py_BuildValue("(iii)", PY_MAJOR_VERSION,
					     PY_MINOR_VERSION,
					     PY_MICRO_VERSION)) ||
	    PyModule_AddObject(m, "LOOP", PyLong_FromUnsignedLongLong(
					      UNWIND_USER_ASSIST_LOOP)) ||
	    PyModule_AddObject(m, "RUN", PyLong_FromUnsignedLongLong(
					     UNWIND_USER_ASSIST_RUN)) ||
	    PyModule_AddIntConstant(m, "MAX_ENTRIES", MAX_ENTRIES) ||
	    PyModule_AddIntConstant(m, "NR_SLOTS", NR_SLOTS)) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
