/*
 * lk_budget.c - the process-wide time budget of a timing batch (see lk_clock.h).
 */
#include <errno.h>

#include "lk_clock.h"

static int64_t lk_budget_ns = LK_BUDGET_DEFAULT_NS;

int64_t lk_time_budget_ns(void)
{
	return __atomic_load_n(&lk_budget_ns, __ATOMIC_RELAXED);
}

int64_t lk_set_time_budget_ns(int64_t ns)
{
	if (ns <= 0)
		return -EINVAL;
	return __atomic_exchange_n(&lk_budget_ns, ns, __ATOMIC_RELAXED);
}
