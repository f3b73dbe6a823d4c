// SPDX-License-Identifier: GPL-2.0
/*
 * The demo workload: filter a synthetic image again and again.
 *
 *   main -> run_jobs -> process_image -> apply_filters -> [libfilter.so]
 *        filter_image -> filter_pass -> filter_row -> convolve_pixel
 *   main -> run_jobs -> process_image -> compute_stats -> histogram
 *
 * Built with -O2 -fomit-frame-pointer -Wa,--gsframe: no frame pointers
 * anywhere, SFrame everywhere.  Usage: imgdemo [SECONDS]  (default 10).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libfilter.h"

#define NOINLINE __attribute__((noinline, noclone))

static volatile unsigned long sink;

static NOINLINE void histogram(const struct image *img, unsigned int *bins)
{
	size_t i, n = (size_t)img->w * img->h;

	memset(bins, 0, 256 * sizeof(*bins));
	for (i = 0; i < n; i++)
		bins[img->px[i]]++;
}

static NOINLINE unsigned long compute_stats(const struct image *img)
{
	unsigned int bins[256];
	unsigned long median = 0, seen = 0;
	int v;

	histogram(img, bins);
	for (v = 0; v < 256; v++) {
		seen += bins[v];
		if (!median && seen * 2 >= (unsigned long)img->w * img->h)
			median = v;
	}
	return median;
}

static NOINLINE unsigned long apply_filters(struct image *img)
{
	unsigned long sum;

	sum = filter_image(img, FILTER_BLUR);
	sum += filter_image(img, FILTER_SHARPEN);
	return sum;
}

static NOINLINE unsigned long process_image(struct image *img)
{
	unsigned long sum = apply_filters(img);

	return sum + compute_stats(img);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Images processed for at least @seconds; *@took: how long they took. */
static NOINLINE unsigned long run_jobs(struct image *img, double seconds,
				       double *took)
{
	double start = now(), t;
	unsigned long sum = 0, jobs = 0;

	do {
		sum += process_image(img);
		jobs++;
		t = now();
	} while (t < start + seconds);
	sink = sum;
	*took = t - start;
	return jobs;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10, took;
	struct image img = { .w = 256, .h = 256 };
	unsigned long jobs;
	size_t i;

	img.px = malloc((size_t)img.w * img.h);
	img.tmp = calloc((size_t)img.w, img.h);
	if (!img.px || !img.tmp)
		return 1;
	srand(1);
	for (i = 0; i < (size_t)img.w * img.h; i++)
		img.px[i] = rand() & 255;
	jobs = run_jobs(&img, seconds, &took);
	/* The time the images took, not the time asked for: a rate to the us. */
	printf("imgdemo: %lu images in %.6f s, libfilter sframe %s\n", jobs,
	       took, filter_sframe_registered() ? "registered" : "NOT registered");
	return 0;
}
