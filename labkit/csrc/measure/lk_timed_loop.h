/*
 * lk_timed_loop.h - the one timed loop of labkit's timing kernels.
 *
 * LK_TIMED_LOOP(ns, now, iters, k, body...) runs `body` `iters` times (k is
 * the iteration index, declared by the caller) between two reads of the
 * clock `now()`, and sets `ns` to the elapsed time per iteration.  The loop
 * runs in chunks of LK_BUDGET_CHUNK iterations and checks the batch's time
 * budget after each chunk (lk_clock.h): a batch that runs past the budget
 * stops early and `ns` is set to -ETIMEDOUT instead.  `body` may `return`
 * from the enclosing function (that is how a kernel reports a failed
 * operation); iters must be > 0 (each kernel returns -EINVAL before the loop
 * otherwise).
 */
#ifndef LK_TIMED_LOOP_H
#define LK_TIMED_LOOP_H

#include <errno.h>

#include "lk_clock.h"

#define LK_TIMED_LOOP(ns, now, iters, k, ...)                                                      \
	do {                                                                                       \
		uint64_t lk_deadline_ = lk_budget_deadline();                                      \
		uint64_t lk_t0_ = now();                                                           \
		for ((k) = 0; (k) < (iters);) {                                                    \
			for (uint64_t lk_end_ = lk_chunk_end((k), (iters)); (k) < lk_end_;         \
			     (k)++) {                                                              \
				__VA_ARGS__                                                        \
			}                                                                          \
			if (lk_over_budget(lk_deadline_, (k), (iters)))                            \
				break;                                                             \
		}                                                                                  \
		(ns) = (k) < (iters) ? -(double)ETIMEDOUT                                          \
				     : (double)(now() - lk_t0_) / (double)(iters);                 \
	} while (0)

#endif
