/*
 * usermem.c - the modelled process address space (see usermem.h).
 */
#include <stdlib.h>
#include <string.h>

#include "usermem.h"

struct lk_mm *lk_mm_new(void)
{
	return calloc(1, sizeof(struct lk_mm));
}

void lk_mm_free(struct lk_mm *mm)
{
	if (!mm)
		return;
	free(mm->maps);
	free(mm);
}

/* Index of the first mapping whose end lies above addr (binary search). */
static size_t first_ending_after(const struct lk_mm *mm, uintptr_t addr)
{
	size_t lo = 0, hi = mm->nr_maps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mm->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Add [start, start + len); -EINVAL for an empty or wrapping range, -EEXIST on overlap. */
int lk_mm_add(struct lk_mm *mm, uintptr_t start, size_t len)
{
	size_t k;

	if (!mm || len == 0 || start + len < start)
		return -EINVAL;
	k = first_ending_after(mm, start);
	if (k < mm->nr_maps && mm->maps[k].start < start + len)
		return -EEXIST;
	if (mm->nr_maps == mm->cap) {
		size_t cap = mm->cap ? 2 * mm->cap : 16;
		struct lk_mapping *m = realloc(mm->maps, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		mm->maps = m;
		mm->cap = cap;
	}
	memmove(&mm->maps[k + 1], &mm->maps[k], (mm->nr_maps - k) * sizeof(mm->maps[0]));
	mm->maps[k].start = start;
	mm->maps[k].end = start + len;
	mm->nr_maps++;
	return 0;
}

/* Remove the mapping that starts at start; -EINVAL if there is none. */
int lk_mm_remove(struct lk_mm *mm, uintptr_t start)
{
	size_t k;

	if (!mm)
		return -EINVAL;
	k = first_ending_after(mm, start);
	if (k >= mm->nr_maps || mm->maps[k].start != start)
		return -EINVAL;
	memmove(&mm->maps[k], &mm->maps[k + 1], (mm->nr_maps - k - 1) * sizeof(mm->maps[0]));
	mm->nr_maps--;
	return 0;
}

/*
 * How many bytes from addr, up to len, lie in mappings without a hole.
 * Adjacent mappings count as contiguous, as they do for a real process.
 */
size_t lk_mm_accessible(const struct lk_mm *mm, uintptr_t addr, size_t len)
{
	size_t k, done = 0;

	if (!mm || len == 0)
		return 0;
	if (addr + len < addr)		/* wraps: only up to the top counts */
		len = UINTPTR_MAX - addr;
	k = first_ending_after(mm, addr);
	while (done < len && k < mm->nr_maps) {
		uintptr_t at = addr + done;

		if (mm->maps[k].start > at)
			break;
		done += lk_min(len - done, mm->maps[k].end - at);
		k++;
	}
	return done;
}

/* The model's access_ok(): an empty range is always fine, as in the kernel. */
bool lk_mm_access_ok(const struct lk_mm *mm, uintptr_t addr, size_t len)
{
	if (len == 0)
		return true;
	if (addr + len < addr)
		return false;
	return lk_mm_accessible(mm, addr, len) == len;
}
