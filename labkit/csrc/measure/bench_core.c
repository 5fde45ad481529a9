/*
 * bench_core.c - timing kernels for the iterator core (see bench_core.h).
 *
 * Each kernel is one LK_TIMED_LOOP: the clock is read once before and once
 * after its batch.  The operation under test is an out-of-line call into
 * iov_iter.c (a separate translation unit, so the compiler cannot fold it
 * away); LK_KEEP and LK_BARRIER stop it from hoisting or deleting work
 * between iterations.
 */
#define _GNU_SOURCE
#include <string.h>

#include "bench_core.h"
#include "lk_timed_loop.h"

/**
 * lk_time_empty - time the timing loop with nothing in it
 * @iters: iterations in the batch
 *
 * Return: nanoseconds per iteration, or -EINVAL or -ETIMEDOUT.
 */
double lk_time_empty(uint64_t iters)
{
	uint64_t k;
	double ns;

	if (!iters)
		return -EINVAL;
	LK_TIMED_LOOP(ns, lk_clock_ns, iters, k, LK_KEEP(k); LK_BARRIER(););
	return ns;
}

/**
 * lk_time_clock - time the clock every timing kernel reads
 * @iters: iterations in the batch
 *
 * Return: nanoseconds per iteration (two clock reads), or -EINVAL or -ETIMEDOUT.
 */
double lk_time_clock(uint64_t iters)
{
	uint64_t k, sink = 0;
	double ns;

	if (!iters)
		return -EINVAL;
	LK_TIMED_LOOP(ns, lk_clock_ns, iters, k, sink += lk_clock_ns(););
	LK_KEEP(sink);
	return ns;
}

/**
 * lk_time_memcpy - time memcpy(), the baseline of every copy
 * @dst: destination (@n bytes)
 * @src: source (@n bytes)
 * @n: bytes per copy
 * @iters: copies in the batch
 *
 * Return: nanoseconds per copy, or -EINVAL or -ETIMEDOUT.
 */
double lk_time_memcpy(void *dst, const void *src, size_t n, uint64_t iters)
{
	uint64_t k;
	double ns;

	if (!iters)
		return -EINVAL;
	LK_TIMED_LOOP(ns, lk_clock_ns, iters, k, memcpy(dst, src, n); LK_KEEP(dst); LK_BARRIER(););
	return ns;
}

#define LK_OP_COPY_TO 0
#define LK_OP_COPY_FROM 1
#define LK_OP_ADVANCE 2

/*
 * One operation on a fresh struct copy of *proto (cheap: the copy does not
 * touch the segments); `op` is a constant at every call site, so the switch
 * folds away.  Returns what keeps the work alive (bytes copied, or the count
 * left).
 */
LK_ALWAYS_INLINE size_t iter_op(int op, const struct lk_iov_iter *proto, void *buf, size_t n)
{
	struct lk_iov_iter it = *proto;

	switch (op) {
	case LK_OP_COPY_TO:
		return (size_t)lk_copy_to_iter(buf, n, &it);
	case LK_OP_COPY_FROM:
		return (size_t)lk_copy_from_iter(buf, n, &it);
	default:
		lk_iter_advance(&it, n);
		return it.count;
	}
}

LK_ALWAYS_INLINE double time_iter_op(int op, const struct lk_iov_iter *proto, void *buf, size_t n,
				     uint64_t iters)
{
	uint64_t k;
	size_t sum = 0;
	double ns;

	if (!iters)
		return -EINVAL;
	LK_TIMED_LOOP(ns, lk_clock_ns, iters, k, sum += iter_op(op, proto, buf, n); LK_BARRIER(););
	LK_KEEP(sum);
	return ns;
}

/**
 * lk_time_copy_to_iter - time copy_to_iter() from a fresh copy of an iterator
 * @proto: the iterator each operation starts from
 * @src: @n bytes to copy
 * @n: bytes per copy
 * @iters: copies in the batch
 *
 * Return: nanoseconds per copy, or -EINVAL or -ETIMEDOUT.
 */
double lk_time_copy_to_iter(const struct lk_iov_iter *proto, const void *src, size_t n,
			    uint64_t iters)
{
	return time_iter_op(LK_OP_COPY_TO, proto, (void *)src, n, iters);
}

/**
 * lk_time_copy_from_iter - time copy_from_iter() from a fresh copy of an iterator
 * @proto: the iterator each operation starts from
 * @dst: room for @n bytes
 * @n: bytes per copy
 * @iters: copies in the batch
 *
 * Return: nanoseconds per copy, or -EINVAL or -ETIMEDOUT.
 */
double lk_time_copy_from_iter(const struct lk_iov_iter *proto, void *dst, size_t n, uint64_t iters)
{
	return time_iter_op(LK_OP_COPY_FROM, proto, dst, n, iters);
}

/**
 * lk_time_advance - time iov_iter_advance() from a fresh copy of an iterator
 * @proto: the iterator each operation starts from
 * @n: bytes per advance
 * @iters: advances in the batch
 *
 * Return: nanoseconds per advance, or -EINVAL or -ETIMEDOUT.
 */
double lk_time_advance(const struct lk_iov_iter *proto, size_t n, uint64_t iters)
{
	return time_iter_op(LK_OP_ADVANCE, proto, NULL, n, iters);
}

/**
 * lk_bench_fill_bvec - fill a bio_vec table for the advance benchmarks
 * @tab: the table
 * @nr: entries to fill
 * @page: the page every entry names
 * @len: bv_len of every entry
 * @offset: bv_offset of every entry
 */
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
