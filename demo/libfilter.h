/* SPDX-License-Identifier: GPL-2.0 */
/* A tiny image filter library: the hot loop of the demo workload. */
#ifndef LIBFILTER_H
#define LIBFILTER_H

struct image {
	int w, h;
	unsigned char *px, *tmp;
};

enum filter_kind { FILTER_BLUR, FILTER_SHARPEN };

/* Run one 5x5 convolution over @img in place; returns a checksum. */
unsigned long filter_image(struct image *img, enum filter_kind kind);

/* 1 if this library's .sframe section is registered with the kernel. */
int filter_sframe_registered(void);

#endif
