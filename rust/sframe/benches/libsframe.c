// SPDX-License-Identifier: GPL-2.0
/*
 * Time libsframe's sframe_find_fre on the V1 sections written by
 * `cargo run --release --example bench -- --write-v1 DIR`.
 * The host's libsframe is 2.40 (V1 only) and ships no header, so the two
 * functions used are declared here with their 2.40 signatures.
 *
 * Usage: libsframe DIR/v1-N.sframe DIR/v1-N.pcs
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct fre240 {
	uint32_t start;
	unsigned char offsets[12];
	unsigned char info;
};

void *sframe_decode(const char *buf, size_t size, int *err);
int sframe_find_fre(void *ctx, int32_t pc, struct fre240 *fre);

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;

	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	*len = ftell(f);
	rewind(f);
	buf = malloc(*len + 1);
	if (fread(buf, 1, *len, f) != *len)
		exit(1);
	buf[*len] = 0;
	fclose(f);
	return buf;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	size_t len, plen, n = 0;
	char *sec, *list, *p;
	int32_t *pcs;
	void *ctx;
	int err = 0;
	long rounds = 0;
	double t0, t;
	volatile uint32_t sink = 0;

	if (argc != 3)
		return 2;
	sec = slurp(argv[1], &len);
	list = slurp(argv[2], &plen);
	pcs = malloc(sizeof(*pcs) * (plen / 2 + 1));
	for (p = strtok(list, "\n"); p; p = strtok(NULL, "\n"))
		pcs[n++] = (int32_t)strtol(p, NULL, 0);
	ctx = sframe_decode(sec, len, &err);
	if (!ctx) {
		fprintf(stderr, "sframe_decode: %d\n", err);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		struct fre240 fre;

		if (sframe_find_fre(ctx, pcs[i], &fre)) {
			fprintf(stderr, "sframe_find_fre(%#x) failed\n", pcs[i]);
			return 1;
		}
	}
	t0 = now();
	do {
		for (size_t i = 0; i < n; i++) {
			struct fre240 fre;

			sframe_find_fre(ctx, pcs[i], &fre);
			sink += fre.start;
		}
		rounds++;
		t = now();
	} while (t - t0 < 0.3);
	printf("%.1f\n", (t - t0) * 1e9 / ((double)rounds * n));
	return 0;
}
