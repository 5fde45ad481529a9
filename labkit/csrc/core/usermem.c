/*
 * usermem.c - the modelled process address space (see usermem.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "usermem.h"

_Static_assert(LK_PROT_READ == PROT_READ && LK_PROT_WRITE == PROT_WRITE,
	       "labkit's protections are mmap's (labkit/core/memory.py relies on it)");

/**
 * lk_mm_new - a new, empty modelled address space
 *
 * Return: the table, or NULL when out of memory.
 */
struct lk_mm *lk_mm_new(void)
{
	struct lk_mm *mm = calloc(1, sizeof(struct lk_mm));

	if (mm)
		mm->last = SIZE_MAX;
	return mm;
}

/**
 * lk_mm_free - free an address space made by lk_mm_new()
 * @mm: the table (NULL is allowed)
 */
void lk_mm_free(struct lk_mm *mm)
{
	if (mm)
		free(mm->maps);
	free(mm); /* free(NULL) does nothing */
}

/* Index of the first mapping whose end lies above addr (binary search). */
static size_t first_ending_after(const struct lk_mm *mm, uintptr_t addr)
{
	return LK_LOWER_BOUND(mm->nr_maps, mid, mm->maps[mid].end <= addr);
}

/**
 * lk_mm_add - enter a mapping into the address space
 * @mm: the modelled address space (the UserMemory's table)
 * @start: its first address
 * @len: its length in bytes
 * @prot: LK_PROT_READ and/or LK_PROT_WRITE, or 0 (PROT_NONE)
 *
 * Add [start, start + len) with protection prot; -EINVAL for an empty or
 * wrapping range or an unknown protection, -EEXIST on overlap.
 *
 * Return: 0, -EINVAL or -EEXIST as described above, -ENOMEM when the table cannot grow.
 */
int lk_mm_add(struct lk_mm *mm, uintptr_t start, size_t len, unsigned int prot)
{
	size_t k;
	int ret;

	if (!mm || len == 0 || start + len < start || (prot & ~(LK_PROT_READ | LK_PROT_WRITE)))
		return -EINVAL;
	k = first_ending_after(mm, start);
	ret = LK_TABLE_INSERT(mm->maps, mm->nr_maps, mm->cap, k,
			      k < mm->nr_maps && mm->maps[k].start < start + len);
	if (ret)
		return ret;
	mm->maps[k] = (struct lk_mapping){ .start = start, .end = start + len, .prot = prot };
	mm->last = SIZE_MAX; /* indices moved */
	return 0;
}

/**
 * lk_mm_remove - remove a mapping from the address space
 * @mm: the modelled address space (the UserMemory's table)
 * @start: the first address of the mapping
 *
 * Remove the mapping that starts at start; -EINVAL if there is none.
 *
 * Return: 0, or -EINVAL if no mapping starts there.
 */
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
	mm->last = SIZE_MAX;
	return 0;
}

/**
 * lk_mm_accessible - the bytes a user copy can reach before it faults
 * @mm: the modelled address space (the UserMemory's table)
 * @addr: the first user address
 * @len: bytes wanted
 * @need: LK_PROT_READ or LK_PROT_WRITE
 * @hint: the mapping cache described above, or NULL
 *
 * How many bytes from addr, up to len, lie in mappings that allow the access
 * need (LK_PROT_READ or LK_PROT_WRITE), without a hole: the bytes a
 * copy_from_user()/copy_to_user() of [addr, addr + len) moves before it
 * faults.  Adjacent mappings count as contiguous, as they do for a real
 * process.
 *
 * hint, if not NULL, is a cache of the index of the mapping the last call
 * ended in (start it at SIZE_MAX): a copy that walks many segments of one
 * mapping then looks the mapping up once, not once per segment.  It is only
 * valid while the table does not change (callers hold the table's lock for
 * the whole copy).  The table keeps the same cache across calls (mm->last).
 *
 * Return: the number of bytes from @addr that can be accessed, 0 to @len.
 */
size_t lk_mm_accessible(const struct lk_mm *mm, uintptr_t addr, size_t len, unsigned int need,
			size_t *hint)
{
	size_t k, done = 0;

	if (!mm || len == 0)
		return 0;
	if (addr + len < addr) /* wraps: only up to the top counts */
		len = UINTPTR_MAX - addr;
	k = hint && *hint != SIZE_MAX ? *hint : mm->last;
	if (k >= mm->nr_maps || mm->maps[k].start > addr || mm->maps[k].end <= addr)
		k = first_ending_after(mm, addr);
	while (k < mm->nr_maps) {
		const struct lk_mapping *m = &mm->maps[k];
		uintptr_t at = addr + done;

		if (m->start > at || !lk_prot_allows(m->prot, need))
			break;
		done += lk_min(len - done, m->end - at);
		if (done == len)
			break;
		k++;
	}
	if (hint)
		*hint = k;
	((struct lk_mm *)mm)->last = k; /* the cache only: see struct lk_mm */
	return done;
}

/**
 * lk_mm_mapped - whether a whole range is mapped for an access
 * @mm: the modelled address space (the UserMemory's table)
 * @addr: the first user address
 * @len: bytes
 * @need: LK_PROT_READ or LK_PROT_WRITE
 *
 * True if all of [addr, addr + len) is mapped for the access need (an empty range is).
 *
 * Return: true if every byte can be accessed (an empty range always can).
 */
bool lk_mm_mapped(const struct lk_mm *mm, uintptr_t addr, size_t len, unsigned int need)
{
	if (len == 0)
		return true;
	if (addr + len < addr)
		return false;
	return lk_mm_accessible(mm, addr, len, need, NULL) == len;
}

/**
 * lk_mprotect - change the protection of real pages
 * @addr: page-aligned address
 * @len: bytes
 * @prot: LK_PROT_* bits
 *
 * mprotect() of the real pages [addr, addr + len) (addr page-aligned, len
 * rounded up to pages by the kernel); 0 or a negative errno.  The Python layer
 * calls it only on memory its UserMemory mapped, before the mapping is
 * entered into the table.
 *
 * Return: 0 or a negative errno.
 */
int lk_mprotect(uintptr_t addr, size_t len, unsigned int prot)
{
	int real = PROT_NONE;

	if (prot & ~(LK_PROT_READ | LK_PROT_WRITE))
		return -EINVAL;
	if (prot & LK_PROT_READ)
		real |= PROT_READ;
	if (prot & LK_PROT_WRITE)
		real |= PROT_WRITE;
	if (mprotect((void *)addr, len, real))
		return -errno;
	return 0;
}
