/*
 * bench_core.c - timing kernels for the iterator core (see bench_core.h).
 *
 * Each kernel reads the clock once before and once after its batch.  The
 * operation under test is an out-of-line call into iov_iter.c (a separate
 * translation unit, so the compiler cannot fold it away); LK_KEEP and
 * LK_BARRIER stop it from hoisting or deleting work between iterations.
 */
#define _GNU_SOURCE
#include <string.h>

#include "bench_core.h"
#include "lk_clock.h"

static double per_op(uint64_t t0, uint64_t t1, uint64_t iters)
{
	return iters ? (double)(t1 - t0) / (double)iters : 0.0;
}

double lk_time_empty(uint64_t iters)
{
	uint64_t t0, t1, k;

	t0 = lk_clock_ns();
	for (k = 0; k < iters; k++) {
		LK_KEEP(k);
		LK_BARRIER();
	}
	t1 = lk_clock_ns();
	return per_op(t0, t1, iters);
}

double lk_time_clock(uint64_t iters)
{
	uint64_t t0, t1, k, sink = 0;

	t0 = lk_clock_ns();
	for (k = 0; k < iters; k++)
		sink += lk_clock_ns();
	t1 = lk_clock_ns();
	LK_KEEP(sink);
	return per_op(t0, t1, iters);
}

double lk_time_memcpy(void *dst, const void *src, size_t n, uint64_t iters)
{
	uint64_t t0, t1, k;

	t0 = lk_clock_ns();
	for (k = 0; k < iters; k++) {
		memcpy(dst, src, n);
		LK_KEEP(dst);
		LK_BARRIER();
	}
	t1 = lk_clock_ns();
	return per_op(t0, t1, iters);
}

double lk_time_copy_to_iter(const struct lk_iov_iter *proto, const void *src, size_t n,
			    uint64_t iters)
{
	struct lk_iov_iter it;
	uint64_t t0, t1, k;
	ssize_t done = 0;

	t0 = lk_clock_ns();
	for (k = 0; k < iters; k++) {
		it = *proto;
		done += lk_copy_to_iter(src, n, &it);
		LK_BARRIER();
	}
	t1 = lk_clock_ns();
	LK_KEEP(done);
	return per_op(t0, t1, iters);
}

double lk_time_copy_from_iter(const struct lk_iov_iter *proto, void *dst, size_t n,
			      uint64_t iters)
{
	struct lk_iov_iter it;
	uint64_t t0, t1, k;
	ssize_t done = 0;

	t0 = lk_clock_ns();
	for (k = 0; k < iters; k++) {
		it = *proto;
		done += lk_copy_from_iter(dst, n, &it);
		LK_BARRIER();
	}
	t1 = lk_clock_ns();
	LK_KEEP(done);
	return per_op(t0, t1, iters);
}

double lk_time_advance(const struct lk_iov_iter *proto, size_t n, uint64_t iters)
{
	struct lk_iov_iter it;
	uint64_t t0, t1, k;
	size_t left = 0;

	t0 = lk_clock_ns();
	for (k = 0; k < iters; k++) {
		it = *proto;
		lk_iter_advance(&it, n);
		left += it.count;
		LK_BARRIER();
	}
	t1 = lk_clock_ns();
	LK_KEEP(left);
	return per_op(t0, t1, iters);
}

void lk_bench_fill_bvec(struct lk_bvec *tab, size_t nr, uintptr_t page, unsigned int len,
			unsigned int offset)
{
	size_t k;

	for (k = 0; k < nr; k++) {
		tab[k].bv_page = page;
		tab[k].bv_len = len;
		tab[k].bv_offset = offset;
	}
}
