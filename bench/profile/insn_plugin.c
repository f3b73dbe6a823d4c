// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for `make profile`: how many guest instructions each
 * kernel instruction executed, counted only between the entry of the
 * function at START and the entry of the one at STOP (per vCPU), so that
 * a profile of unwind_user_types() leaves out the benchmark around it.
 *
 *   -plugin insn_plugin.so,start=HEX,stop=HEX,out=FILE
 *
 * FILE gets "windows N" (how many times START was entered) and one line
 * "ADDRESS COUNT" per kernel instruction executed in a window. Counts are
 * per translation block, which runs whole unless an exception leaves it
 * (a page fault, a user copy's fixup): a block cut short counts whole.
 * A window is per vCPU: an interrupt taken in it counts too, and one
 * that calls STOP ends it early; the totals agree with the guest's own
 * -icount clock within a few instructions a walk (bench/README.md).
 *
 * QEMU does not install qemu-plugin.h (Debian's qemu-system-x86 is built
 * with plugin support, and exports the API): the few declarations used
 * here are those of its plugin API version 1, which QEMU 7.2 (Debian 12)
 * loads; QEMU 9 and later want version 2 and a header of their own.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS };
typedef void (*tb_trans_cb_t)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*vcpu_udata_cb_t)(unsigned int, void *);
typedef void (*udata_cb_t)(qemu_plugin_id_t, void *);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb_t);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, vcpu_udata_cb_t,
					  enum qemu_plugin_cb_flags, void *);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, udata_cb_t, void *);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

#define MAX_VCPUS 64
#define KERNEL_TEXT 0xffffffff80000000ull

/* One translated block: its instructions' addresses and its executions. */
struct block {
	struct block *next;
	uint64_t count;
	size_t n;
	uint64_t insn[];
};

static struct block *blocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t start, stop, windows;
static bool counting[MAX_VCPUS];
static const char *out_path;

static void block_exec(unsigned int vcpu, void *data)
{
	struct block *b = data;
	bool *on = &counting[vcpu % MAX_VCPUS];

	if (b->insn[0] == start) {
		*on = true;
		__atomic_add_fetch(&windows, 1, __ATOMIC_RELAXED);
	} else if (b->insn[0] == stop) {
		*on = false;
	}
	if (*on)
		__atomic_add_fetch(&b->count, 1, __ATOMIC_RELAXED);
}

static void block_translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct block *b;

	(void)id;
	if (!n || qemu_plugin_tb_vaddr(tb) < KERNEL_TEXT)
		return;
	b = calloc(1, sizeof(*b) + n * sizeof(b->insn[0]));
	if (!b)
		abort();
	b->n = n;
	for (i = 0; i < n; i++)
		b->insn[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
	pthread_mutex_lock(&lock);
	b->next = blocks;
	blocks = b;
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_cb(tb, block_exec, QEMU_PLUGIN_CB_NO_REGS, b);
}

static void write_counts(qemu_plugin_id_t id, void *data)
{
	FILE *f = fopen(out_path, "w");
	struct block *b;
	size_t i;

	(void)id;
	(void)data;
	if (!f)
		return;
	fprintf(f, "windows %" PRIu64 "\n", windows);
	for (b = blocks; b; b = b->next)
		for (i = 0; b->count && i < b->n; i++)
			fprintf(f, "%" PRIx64 " %" PRIu64 "\n", b->insn[i], b->count);
	fclose(f);
}

__attribute__((visibility("default"))) int
qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "start=", 6))
			start = strtoull(argv[i] + 6, NULL, 16);
		else if (!strncmp(argv[i], "stop=", 5))
			stop = strtoull(argv[i] + 5, NULL, 16);
		else if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	}
	if (!start || !stop || !out_path) {
		fprintf(stderr, "insn_plugin: start=, stop= and out= are needed\n");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, block_translated);
	qemu_plugin_register_atexit_cb(id, write_counts, NULL);
	return 0;
}
