// SPDX-License-Identifier: GPL-2.0
/*
 * Per-PC lookup oracle: ask libsframe's sframe_find_fre about every PC of
 * every function of a .sframe section (from one byte before the function to
 * its end inclusive) and print the answers as ranges of PCs with the same
 * answer:
 *
 *   LO HI -                      no FRE found
 *   LO HI START INFO W0,W1,...   the FRE found (start offset, info byte,
 *                                data words as unsigned hex)
 *
 * Built against sid's libsframe 2.47 (SFrame V3), with -DLIBSFRAME_244
 * against trixie's libsframe 2.44 (V2) or with -DLIBSFRAME_240 against the
 * host's libsframe 2.40 (V1); the older two have no header here, so the
 * entry points used are declared below. Each version reads what its own
 * binutils wrote.
 *
 * Usage: findfre SECTION_FILE SECTION_ADDR
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(LIBSFRAME_240) || defined(LIBSFRAME_244)
/* No public header for these versions: declare what is used. */
typedef struct {
	uint32_t fre_start_addr;
	unsigned char fre_offsets[12];
	unsigned char fre_info;
} fre_t;
void *sframe_decode(const char *buf, size_t size, int *err);
int sframe_find_fre(void *ctx, int32_t pc, fre_t *fre);
unsigned int sframe_decoder_get_num_fidx(void *ctx);
int sframe_decoder_get_funcdesc(void *ctx, unsigned int i, uint32_t *num_fres,
				uint32_t *func_size, int32_t *start,
				unsigned char *info);
int sframe_decoder_get_funcdesc_v2(void *ctx, unsigned int i, uint32_t *num_fres,
				   uint32_t *func_size, int32_t *start,
				   unsigned char *info, uint8_t *rep);
#define WORDS(f) ((f)->fre_offsets)
#else
#include <sframe-api.h>
typedef sframe_frame_row_entry fre_t;
#define WORDS(f) ((f)->fre_datawords)
#endif

static char last[256];
static int64_t run_lo = -1, run_hi;

static void emit(int64_t pc, const char *what)
{
	if (run_lo >= 0 && pc == run_hi + 1 && !strcmp(what, last)) {
		run_hi = pc;
		return;
	}
	if (run_lo >= 0)
		printf("%" PRIx64 " %" PRIx64 " %s\n", run_lo, run_hi, last);
	run_lo = run_hi = pc;
	snprintf(last, sizeof(last), "%s", what);
}

static void describe(const fre_t *f, char *buf, size_t len)
{
	unsigned int count = (f->fre_info >> 1) & 0xf;
	unsigned int size = 1u << ((f->fre_info >> 5) & 3);
	int n = snprintf(buf, len, "%x %x ", f->fre_start_addr, f->fre_info);

	for (unsigned int i = 0; i < count; i++) {
		uint32_t w = 0;

		memcpy(&w, WORDS(f) + i * size, size);
		n += snprintf(buf + n, len - n, "%s%x", i ? "," : "", w);
	}
	if (!count)
		snprintf(buf + n, len - n, "none");
}

int main(int argc, char **argv)
{
	static char sec[1 << 22];
	FILE *fp;
	size_t len;
	int err = 0;
	uint64_t addr;

	if (argc != 3)
		return 2;
	fp = fopen(argv[1], "rb");
	if (!fp)
		return 1;
	len = fread(sec, 1, sizeof(sec), fp);
	fclose(fp);
	addr = strtoull(argv[2], NULL, 16);
	void *ctx = sframe_decode(sec, len, &err);
	if (!ctx) {
		fprintf(stderr, "sframe_decode: error %d\n", err);
		return 1;
	}
	unsigned int n = sframe_decoder_get_num_fidx(ctx);
	for (unsigned int i = 0; i < n; i++) {
		uint32_t num_fres, size;
		int64_t start;
#if defined(LIBSFRAME_240)
		int32_t s32;
		unsigned char info;

		sframe_decoder_get_funcdesc(ctx, i, &num_fres, &size, &s32, &info);
		start = s32;
#elif defined(LIBSFRAME_244)
		int32_t s32;
		unsigned char info;
		uint8_t rep;

		sframe_decoder_get_funcdesc_v2(ctx, i, &num_fres, &size, &s32, &info, &rep);
		start = s32;
#else
		unsigned char info, info2;
		uint8_t rep;

		if (sframe_decoder_get_version(ctx) == SFRAME_VERSION_3) {
			sframe_decoder_get_funcdesc_v3(ctx, i, &num_fres, &size, &start,
						       &info, &info2, &rep);
		} else {
			int32_t s32;

			sframe_decoder_get_funcdesc_v2(ctx, i, &num_fres, &size, &s32,
						       &info, &rep);
			start = s32;
		}
		if (sframe_decoder_get_flags(ctx) & SFRAME_F_FDE_FUNC_START_PCREL)
			start += sframe_decoder_get_offsetof_fde_start_addr(ctx, i, NULL);
#endif
		for (int64_t rel = start - 1; rel <= start + (int64_t)size; rel++) {
			fre_t fre;
			char buf[256];

			memset(&fre, 0, sizeof(fre));
			if (sframe_find_fre(ctx, rel, &fre))
				snprintf(buf, sizeof(buf), "-");
			else
				describe(&fre, buf, sizeof(buf));
			emit((int64_t)addr + rel, buf);
		}
	}
	emit(-10, "");
	return 0;
}
