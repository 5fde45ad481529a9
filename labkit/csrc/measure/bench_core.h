/*
 * bench_core.h - timing kernels for labkit's iterator core.
 *
 * Convention (see lk_timed_loop.h): every lk_time_<what>() runs its whole
 * timed loop in C, reads lk_clock_ns() once before and once after the batch,
 * and returns nanoseconds per operation (elapsed / iters).  Python calls once
 * per batch.  iters == 0 is -EINVAL; a batch that runs past the time budget
 * (lk_clock.h) is -ETIMEDOUT.  The callers (labkit/measure/timers.py) check
 * every buffer and length before calling: these kernels trust their
 * arguments, as the rest of the C core's fast paths do.
 */
#ifndef LK_BENCH_CORE_H
#define LK_BENCH_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "iov_iter.h"

/* The loop alone: what the harness adds to every operation it times. */
double lk_time_empty(uint64_t iters);

/* Two clock reads per iteration: the clock's own cost, for the record. */
double lk_time_clock(uint64_t iters);

/* memcpy(dst, src, n) per operation: the baseline every copy is compared with. */
double lk_time_memcpy(void *dst, const void *src, size_t n, uint64_t iters);

/*
 * Each operation starts from a fresh struct copy of *proto (cheap: the copy
 * does not touch the segments), so every operation does the same work.
 */
double lk_time_copy_to_iter(const struct lk_iov_iter *proto, const void *src, size_t n,
			    uint64_t iters);
double lk_time_copy_from_iter(const struct lk_iov_iter *proto, void *dst, size_t n, uint64_t iters);
double lk_time_advance(const struct lk_iov_iter *proto, size_t n, uint64_t iters);

/* Fill nr bvecs with (page, len, offset): a table for advance benchmarks. */
void lk_bench_fill_bvec(struct lk_bvec *tab, size_t nr, uintptr_t page, unsigned int len,
			unsigned int offset);

#endif
