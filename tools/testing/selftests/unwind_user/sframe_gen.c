// SPDX-License-Identifier: GPL-2.0
/*
 * Synthetic SFrame V2 sections; see sframe_gen.h.
 *
 * Encoding (SFrame format, version 2, with the FDE_FUNC_START_PCREL
 * erratum), all little endian:
 *   header:  u16 magic, u8 version, u8 flags, u8 abi, i8 cfa_fixed_fp_offset,
 *            i8 cfa_fixed_ra_offset, u8 auxhdr_len, u32 num_fdes,
 *            u32 num_fres, u32 fre_len, u32 fdes_off, u32 fres_off (the
 *            offsets count from the end of the header);
 *   FDE:     i32 func_start (from the section start, or from the field
 *            itself with FDE_FUNC_START_PCREL), u32 func_size,
 *            u32 fre_off (in the FRE sub-section), u32 num_fres, u8 info
 *            (bits 0-3 FRE type, bit 4 PC type), u8 rep_size, u16 padding;
 *   FRE:     start offset (1, 2 or 4 bytes by FRE type), u8 info (bit 0 CFA
 *            base SP, bits 1-4 data word count, bits 5-6 word size), then
 *            the words: CFA offset, then the FP offset if saved. On AMD64 the
 *            RA is always at CFA - 8 (header's cfa_fixed_ra_offset). On
 *            AArch64 (no fixed offsets) the RA offset comes between them,
 *            if saved, or 0 (padding) if only the FP is.
 */
#include <string.h>

#include "sframe_gen.h"

static int fits(int32_t v, unsigned int size)
{
	switch (size) {
	case 1:
		return v >= INT8_MIN && v <= INT8_MAX;
	case 2:
		return v >= INT16_MIN && v <= INT16_MAX;
	case 4:
		return 1;
	}
	return 0;
}

static unsigned int word_size(const struct sfg_fre *r)
{
	unsigned int ws;

	if (r->word_size)
		return r->word_size;
	for (ws = 1; ws < 4; ws *= 2)
		if (fits(r->cfa_off, ws) && (!r->fp_saved || fits(r->fp_off, ws)) &&
		    fits(r->ra_off, ws))
			break;
	return ws;
}

static unsigned int addr_size(const struct sfg_func *f)
{
	if (f->addr_size)
		return f->addr_size;
	if (f->size <= 0xff)
		return 1;
	if (f->size <= 0xffff)
		return 2;
	return 4;
}

static void put_word(uint8_t *p, int32_t v, unsigned int ws)
{
	unsigned int i;

	for (i = 0; i < ws; i++)
		p[i] = (uint32_t)v >> (8 * i);
}

/* Encode one FRE at @p (NULL: only size it); returns its size or -1. */
static ssize_t put_fre(uint8_t *p, const struct sfg_fre *r, unsigned int asz)
{
	unsigned int ws = word_size(r), count = 0, info, i;
	int32_t words[3];

	if (asz < 4 && r->start >> (8 * asz))
		return -1;
	if (ws != 1 && ws != 2 && ws != 4)
		return -1;
	if (!r->outermost) {
		words[count++] = r->cfa_off;
		/* No fixed RA offset (AArch64): the RA's, or padding. */
		if (!SFG_FIXED_RA && (r->ra_off || r->fp_saved))
			words[count++] = r->ra_off;
		if (r->fp_saved)
			words[count++] = r->fp_off;
	}
	if (!p)
		return asz + 1 + count * ws;
	info = (r->cfa_fp ? 0 : SFRAME_FRE_CFA_SP) | SFRAME_FRE_COUNT(count) |
	       (ws == 1 ? SFRAME_FRE_WORD1 :
		ws == 2 ? SFRAME_FRE_WORD2 : SFRAME_FRE_WORD4);
	put_word(p, r->start, asz);
	p[asz] = info;
	for (i = 0; i < count; i++)
		put_word(p + asz + 1 + i * ws, words[i], ws);
	return asz + 1 + count * ws;
}

ssize_t sfg_write(void *buf, size_t cap, uint64_t addr, unsigned int opts,
		  const struct sfg_func *funcs, unsigned int nr,
		  struct sfg_layout *layout)
{
	size_t fdes = SFRAME_HDR_SIZE, fres, fre_len = 0, len;
	uint32_t num_fres = 0;
	uint8_t *b = buf;
	unsigned int i, j;

	/* Size the FRE sub-section first. */
	for (i = 0; i < nr; i++) {
		for (j = 0; j < funcs[i].nr_fres; j++) {
			ssize_t n = put_fre(NULL, &funcs[i].fres[j],
					    addr_size(&funcs[i]));

			if (n < 0)
				return -1;
			fre_len += n;
		}
		num_fres += funcs[i].nr_fres;
	}
	fres = fdes + (size_t)nr * SFRAME_FDE_SIZE;
	len = fres + fre_len;
	if (len > cap)
		return -1;
	memset(buf, 0, len);

	sfg_put16(b, SFH_MAGIC, SFRAME_MAGIC);
	b[SFH_VERSION] = SFRAME_VERSION_2;
	b[SFH_FLAGS] = (opts & SFG_UNSORTED_FLAG ? 0 : SFRAME_F_FDE_SORTED) |
		       (opts & SFG_PCREL ? SFRAME_F_FDE_FUNC_START_PCREL : 0);
	b[SFH_ABI] = SFG_ABI;
	b[SFH_FIXED_FP] = 0;
	b[SFH_FIXED_RA] = (uint8_t)SFG_FIXED_RA;
	b[SFH_AUXHDR_LEN] = 0;
	sfg_put32(b, SFH_NUM_FDES, nr);
	sfg_put32(b, SFH_NUM_FRES, num_fres);
	sfg_put32(b, SFH_FRE_LEN, fre_len);
	sfg_put32(b, SFH_FDES_OFF, 0);
	sfg_put32(b, SFH_FRES_OFF, fres - SFRAME_HDR_SIZE);

	fre_len = 0;
	for (i = 0; i < nr; i++) {
		const struct sfg_func *f = &funcs[i];
		size_t fde = fdes + (size_t)i * SFRAME_FDE_SIZE;
		unsigned int asz = addr_size(f);
		uint64_t base = addr + (opts & SFG_PCREL ? fde + SFD_START : 0);
		int64_t rel = (int64_t)(f->start - base);

		if (rel < INT32_MIN || rel > INT32_MAX)
			return -1;
		sfg_put32(b, fde + SFD_START, (uint32_t)(f->start - base));
		sfg_put32(b, fde + SFD_SIZE, f->size);
		sfg_put32(b, fde + SFD_FRE_OFF, fre_len);
		sfg_put32(b, fde + SFD_NUM_FRES, f->nr_fres);
		b[fde + SFD_INFO] = (asz == 1 ? SFRAME_FRE_TYPE_ADDR1 :
				     asz == 2 ? SFRAME_FRE_TYPE_ADDR2 :
				     SFRAME_FRE_TYPE_ADDR4) |
				    (f->pcmask ? SFRAME_FDE_TYPE_PCMASK : 0);
		b[fde + SFD_REP_SIZE] = f->rep_size;
		for (j = 0; j < f->nr_fres; j++)
			fre_len += put_fre(b + fres + fre_len, &f->fres[j], asz);
	}
	if (layout) {
		layout->len = len;
		layout->fdes = fdes;
		layout->fres = fres;
		layout->fre_len = fre_len;
	}
	return len;
}

ssize_t sfg_one_func(void *buf, size_t cap, uint64_t text, uint32_t size)
{
	static const struct sfg_fre row[] = { SFG_SP(0, 8) };
	struct sfg_func f = {
		.start = text, .size = size, .nr_fres = 1, .fres = row,
	};

	return sfg_write(buf, cap, (uintptr_t)buf, 0, &f, 1, NULL);
}

ssize_t sfg_fre_offset(const void *buf, const struct sfg_layout *layout,
		       unsigned int i, unsigned int j)
{
	const uint8_t *b = buf;
	size_t fde = layout->fdes + (size_t)i * SFRAME_FDE_SIZE, off;
	unsigned int asz, k;

	switch (b[fde + SFD_INFO] & 0xf) {
	case SFRAME_FRE_TYPE_ADDR1:
		asz = 1;
		break;
	case SFRAME_FRE_TYPE_ADDR2:
		asz = 2;
		break;
	default:
		asz = 4;
		break;
	}
	off = layout->fres + sfg_get32(b, fde + SFD_FRE_OFF);
	for (k = 0; k < j; k++) {
		uint8_t info = b[off + asz];
		unsigned int ws = 1u << ((info >> 5) & 3);

		off += asz + 1 + ((info >> 1) & 0xf) * ws;
		if (off >= layout->len)
			return -1;
	}
	return off;
}
