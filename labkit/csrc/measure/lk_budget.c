/*
 * lk_budget.c - the process-wide time budget of a timing batch (see lk_clock.h).
 */
#include <errno.h>

#include "lk_clock.h"

static int64_t lk_budget_ns = LK_BUDGET_DEFAULT_NS;

/**
 * lk_time_budget_ns - the time budget of one timing batch
 *
 * Return: the budget in nanoseconds.
 */
int64_t lk_time_budget_ns(void)
{
	return __atomic_load_n(&lk_budget_ns, __ATOMIC_RELAXED);
}

/**
 * lk_set_time_budget_ns - set the time budget of every later timing batch
 * @ns: the budget in nanoseconds (> 0)
 *
 * Return: the previous budget, or -EINVAL for @ns <= 0.
 */
int64_t lk_set_time_budget_ns(int64_t ns)
{
	if (ns <= 0)
		return -EINVAL;
	return __atomic_exchange_n(&lk_budget_ns, ns, __ATOMIC_RELAXED);
}
