/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A writer of synthetic SFrame version 2 sections for the ABI of the
 * machine the selftests are built for (AMD64, or little-endian AArch64),
 * for the unwinder selftests: JIT-like code windows and hostile inputs.
 *
 * The writer encodes exactly what it is given, in the order given: it does
 * not sort, merge or check. Unsorted functions, FREs out of order or past
 * the function end therefore come out as asked, which is what the hostile
 * tests want; the valid sections the other tests need are simply written
 * from valid descriptions.
 *
 * Layout written: the 28-byte header (no auxiliary header), the FDE array
 * right after it, then the FRE sub-section, nothing after that.
 */
#ifndef SFRAME_GEN_H
#define SFRAME_GEN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SFRAME_MAGIC			0xdee2
#define SFRAME_VERSION_2		2
#define SFRAME_F_FDE_SORTED		0x1
#define SFRAME_F_FRAME_POINTER		0x2
#define SFRAME_F_FDE_FUNC_START_PCREL	0x4
#define SFRAME_ABI_AARCH64_ENDIAN_BIG	1
#define SFRAME_ABI_AARCH64_ENDIAN_LITTLE 2
#define SFRAME_ABI_AMD64_ENDIAN_LITTLE	3
#define SFRAME_ABI_S390X_ENDIAN_BIG	4

/*
 * The ABI sfg_write() writes, this machine's, and its header's fixed
 * return address offset: AMD64's call leaves it at CFA - 8, AArch64's bl
 * in the link register, which each row says where the function saved.
 */
#ifdef __aarch64__
#define SFG_ABI			SFRAME_ABI_AARCH64_ENDIAN_LITTLE
#define SFG_FIXED_RA		0
#else
#define SFG_ABI			SFRAME_ABI_AMD64_ENDIAN_LITTLE
#define SFG_FIXED_RA		(-8)
#endif

/* Byte offsets of the header fields. */
#define SFH_MAGIC		0
#define SFH_VERSION		2
#define SFH_FLAGS		3
#define SFH_ABI			4
#define SFH_FIXED_FP		5
#define SFH_FIXED_RA		6
#define SFH_AUXHDR_LEN		7
#define SFH_NUM_FDES		8
#define SFH_NUM_FRES		12
#define SFH_FRE_LEN		16
#define SFH_FDES_OFF		20
#define SFH_FRES_OFF		24
#define SFRAME_HDR_SIZE		28

/* Byte offsets of the fields of a V2 FDE. */
#define SFD_START		0
#define SFD_SIZE		4
#define SFD_FRE_OFF		8
#define SFD_NUM_FRES		12
#define SFD_INFO		16
#define SFD_REP_SIZE		17
#define SFRAME_FDE_SIZE		20

/* FDE info byte: FRE type (start address width) and PC type. */
#define SFRAME_FRE_TYPE_ADDR1	0
#define SFRAME_FRE_TYPE_ADDR2	1
#define SFRAME_FRE_TYPE_ADDR4	2
#define SFRAME_FDE_TYPE_PCMASK	0x10

/* FRE info byte: CFA base, data word count and size. */
#define SFRAME_FRE_CFA_SP	0x1
#define SFRAME_FRE_COUNT(n)	((n) << 1)
#define SFRAME_FRE_WORD1	(0 << 5)
#define SFRAME_FRE_WORD2	(1 << 5)
#define SFRAME_FRE_WORD4	(2 << 5)

/* Writer options (sfg_write()'s @opts). */
#define SFG_PCREL		0x1	/* FDE starts relative to their field */
#define SFG_UNSORTED_FLAG	0x2	/* leave FDE_SORTED out of the flags */

/*
 * One frame row: from @start (offset in the function) on, until the next.
 * The return address: on AMD64 always at CFA - 8 (the header's fixed
 * offset); on AArch64 at CFA + @ra_off, or still in the link register
 * (@ra_off 0: a leaf, a prologue before it is saved).
 */
struct sfg_fre {
	uint32_t start;
	uint8_t cfa_fp;		/* CFA = FP + cfa_off (else SP + cfa_off) */
	uint8_t fp_saved;	/* caller's FP saved at CFA + fp_off */
	uint8_t outermost;	/* no data words: RA undefined, last frame */
	uint8_t word_size;	/* 1, 2 or 4; 0 picks the smallest that fits */
	int32_t cfa_off;
	int32_t fp_off;
	int32_t ra_off;		/* AArch64 only */
};

/* Rows of the two usual kinds. */
#define SFG_SP(s, off)		{ .start = (s), .cfa_off = (off) }
#define SFG_SP_FP(s, off, fp)	{ .start = (s), .cfa_off = (off), \
				  .fp_saved = 1, .fp_off = (fp) }
#define SFG_FP(s, off, fp)	{ .start = (s), .cfa_fp = 1, .cfa_off = (off), \
				  .fp_saved = 1, .fp_off = (fp) }
/* AArch64: the same with the return address saved at CFA + @ra. */
#define SFG_SP_RA(s, off, ra)	{ .start = (s), .cfa_off = (off), .ra_off = (ra) }
#define SFG_SP_RA_FP(s, off, ra, fp) \
				{ .start = (s), .cfa_off = (off), .ra_off = (ra), \
				  .fp_saved = 1, .fp_off = (fp) }
#define SFG_FP_RA(s, off, ra, fp) \
				{ .start = (s), .cfa_fp = 1, .cfa_off = (off), \
				  .ra_off = (ra), .fp_saved = 1, .fp_off = (fp) }

struct sfg_func {
	uint64_t start;		/* absolute address of the function */
	uint32_t size;
	uint8_t pcmask;		/* SFRAME_FDE_TYPE_PCMASK, with @rep_size */
	uint8_t rep_size;
	uint8_t addr_size;	/* FRE start width 1, 2 or 4; 0: fit @size */
	unsigned int nr_fres;
	const struct sfg_fre *fres;
};

/* Where the writer put things, as section offsets. */
struct sfg_layout {
	size_t len;		/* bytes written */
	size_t fdes;		/* first FDE */
	size_t fres;		/* FRE sub-section */
	size_t fre_len;		/* its length */
};

/*
 * Write the section describing @funcs[0..@nr) into @buf (@cap bytes), for
 * a section that will live at user address @addr. Returns the length, or
 * -1 if @cap is too small or a row cannot be encoded.
 */
ssize_t sfg_write(void *buf, size_t cap, uint64_t addr, unsigned int opts,
		  const struct sfg_func *funcs, unsigned int nr,
		  struct sfg_layout *layout);

/*
 * Write a section for one function filling [@text, @text + @size) with a
 * single row (CFA = SP + 8; on AArch64 the return address in the link
 * register), for a section at @buf itself. Returns the length or -1.
 */
ssize_t sfg_one_func(void *buf, size_t cap, uint64_t text, uint32_t size);

/* Section offset of FRE @j of function @i, as written (for patching). */
ssize_t sfg_fre_offset(const void *buf, const struct sfg_layout *layout,
		       unsigned int i, unsigned int j);

/* Little-endian accessors for patching sections. */
static inline void sfg_put16(void *p, size_t off, uint16_t v)
{
	uint8_t *b = (uint8_t *)p + off;

	b[0] = v;
	b[1] = v >> 8;
}

static inline void sfg_put32(void *p, size_t off, uint32_t v)
{
	uint8_t *b = (uint8_t *)p + off;

	b[0] = v;
	b[1] = v >> 8;
	b[2] = v >> 16;
	b[3] = v >> 24;
}

static inline uint32_t sfg_get32(const void *p, size_t off)
{
	const uint8_t *b = (const uint8_t *)p + off;

	return b[0] | b[1] << 8 | b[2] << 16 | (uint32_t)b[3] << 24;
}

#endif
