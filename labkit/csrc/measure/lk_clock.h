/*
 * lk_clock.h - the clock every labkit timing kernel uses.
 *
 * Timed loops run in C and read this clock once before and once after a
 * batch; Python only receives the per-operation result.  CLOCK_MONOTONIC_RAW
 * is not slewed by NTP; reading it costs ~20-30 ns through the vDSO, which a
 * batch of thousands of operations makes negligible.
 */
#ifndef LK_CLOCK_H
#define LK_CLOCK_H

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

#endif
