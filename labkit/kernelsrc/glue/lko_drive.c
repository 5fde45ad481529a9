// SPDX-License-Identifier: MIT
/*
 * The callgrind (and clock) driver of labkit's kernel-source oracle: one
 * program per era and optimisation level, linked with the era's real
 * lib/iov_iter.o.  It repeats one call pattern ITERS times; callgrind is run
 * with --collect-atstart=no and --toggle-collect on the lko_* entry points
 * whose work is counted, and labkit keeps only the cost of the functions the
 * kernel object defines (labkit.kernelsrc.counts).
 *
 *   lko-drive readv ITERS NSEGS    import_iovec of {4 KiB, then NSEGS-1 empty}
 *                                  segments, iov_iter_zero(4 KiB) (a read of
 *                                  /dev/zero), as readv() does
 *   lko-drive copy ITERS           copy_to_iter() of 4 KiB into an iterator
 *                                  imported from one 4 KiB segment
 *   lko-drive advance ITERS PAGES  iov_iter_advance() by PAGES * 4 KiB over a
 *                                  1 GiB bvec table of 4 KiB pages (R1's walk)
 *   lko-drive time-advance ITERS PAGES...
 *                                  prints "PAGES NS" per line: nanoseconds per
 *                                  advance (from a kept iterator), best of 5 runs
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "lko.h"

#define PAGE 4096UL
#define GIB_PAGES (1UL << 18)

static char *buffer(void)
{
	char *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(p, 1, 2 * PAGE);
	return p;
}

static void readv_like(void *h, char *buf, long nsegs)
{
	struct lko_seg segs[4] = { { (uint64_t)buf, PAGE }, { (uint64_t)buf + PAGE, 0 },
				   { (uint64_t)buf + PAGE, 0 }, { (uint64_t)buf + PAGE, 0 } };
	int64_t ret = lko_import_iovec(h, 0 /* ITER_DEST */, segs, nsegs);

	if (ret != (int64_t)PAGE || lko_zero(h, PAGE) != PAGE) {
		fprintf(stderr, "readv pattern failed: %lld\n", (long long)ret);
		exit(3);
	}
}

static struct lko_bseg *gib_table(void)
{
	struct lko_bseg *t = calloc(GIB_PAGES, sizeof(*t));
	unsigned long k;

	if (!t)
		exit(2);
	/* pages are never touched by an advance: any page-aligned address will do */
	for (k = 0; k < GIB_PAGES; k++) {
		t[k].page_addr = (1UL << 40) + k * PAGE;
		t[k].len = PAGE;
		t[k].offset = 0;
	}
	return t;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	void *h = lko_new();
	long iters, k;

	if (argc < 3 || !h) {
		fprintf(stderr, "usage: lko-drive readv|copy|advance|time-advance ITERS [ARG...]\n");
		return 2;
	}
	iters = atol(argv[2]);
	if (!strcmp(argv[1], "readv") && argc == 4) {
		char *buf = buffer();
		long nsegs = atol(argv[3]);

		for (k = 0; k < iters; k++)
			readv_like(h, buf, nsegs);
	} else if (!strcmp(argv[1], "copy")) {
		char *buf = buffer();
		static char src[PAGE];
		struct lko_seg seg = { (uint64_t)buf, PAGE };

		for (k = 0; k < iters; k++) {
			if (lko_import_iovec(h, 0, &seg, 1) != (int64_t)PAGE ||
			    lko_copy_to(h, src, PAGE) != PAGE)
				return 3;
		}
	} else if (!strcmp(argv[1], "advance") && argc == 4) {
		struct lko_bseg *t = gib_table();
		unsigned long pages = strtoul(argv[3], NULL, 0);

		lko_bvec(h, 0, t, GIB_PAGES, GIB_PAGES * PAGE);
		lko_save(h);
		for (k = 0; k < iters; k++) {
			lko_restore(h);
			lko_advance(h, pages * PAGE);
		}
	} else if (!strcmp(argv[1], "time-advance")) {
		struct lko_bseg *t = gib_table();
		int a;

		lko_bvec(h, 0, t, GIB_PAGES, GIB_PAGES * PAGE);
		lko_save(h);
		for (a = 3; a < argc; a++) {
			unsigned long pages = strtoul(argv[a], NULL, 0);
			double best = 1e300;
			int r;

			for (r = 0; r < 5; r++) {
				double t0 = now_ns(), dt;

				for (k = 0; k < iters; k++) {
					lko_restore(h);
					lko_advance(h, pages * PAGE);
				}
				dt = (now_ns() - t0) / iters;
				if (dt < best)
					best = dt;
			}
			printf("%lu %.3f\n", pages, best);
		}
	} else {
		fprintf(stderr, "lko-drive: unknown pattern %s\n", argv[1]);
		return 2;
	}
	lko_free(h);
	return 0;
}
