/*
 * lk_clock.h - the clock every labkit timing kernel uses, and its time budget.
 *
 * Timed loops run in C and read this clock once before and once after a
 * batch; Python only receives the per-operation result.  CLOCK_MONOTONIC_RAW
 * is not slewed by NTP; reading it costs ~20-30 ns through the vDSO, which a
 * batch of thousands of operations makes negligible.
 */
#ifndef LK_CLOCK_H
#define LK_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t lk_clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Keep the compiler from optimising a value (or the memory behind it) away. */
#define LK_KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")
#define LK_BARRIER() __asm__ volatile("" : : : "memory")

/*
 * The time budget of one batch.  Python regains control (and handles Ctrl-C)
 * only when a C call returns, so every timing loop is bounded by wall time as
 * well as by its iteration count: it runs in chunks of LK_BUDGET_CHUNK
 * iterations, reads lk_clock_ns() after each chunk (one clock read per chunk,
 * inside the timed region: ~25 ns per 1024 operations), and once the batch
 * has lasted longer than the budget it stops and returns -ETIMEDOUT.
 * The budget is process-wide, LK_BUDGET_DEFAULT_NS unless set.
 * lk_set_time_budget_ns returns the previous budget, or -EINVAL for ns <= 0.
 */
#define LK_BUDGET_CHUNK 1024u
#define LK_BUDGET_DEFAULT_NS 10000000000ll /* 10 s */
int64_t lk_time_budget_ns(void);
int64_t lk_set_time_budget_ns(int64_t ns);

/* The wall-clock deadline of a batch starting now. */
static inline uint64_t lk_budget_deadline(void)
{
	return lk_clock_ns() + (uint64_t)lk_time_budget_ns();
}

/* Where the chunk that starts at iteration k ends. */
static inline uint64_t lk_chunk_end(uint64_t k, uint64_t iters)
{
	return iters - k > LK_BUDGET_CHUNK ? k + LK_BUDGET_CHUNK : iters;
}

/* True when iterations are left after k and the deadline has passed. */
static inline bool lk_over_budget(uint64_t deadline, uint64_t k, uint64_t iters)
{
	return k < iters && lk_clock_ns() > deadline;
}

#endif
