/*
 * usermem.h - the modelled process address space.
 *
 * Two checks, at two times, as in the kernel:
 *
 * - lk_access_ok() is the kernel's access_ok() on x86-64: it only checks that
 *   a range lies in user space (it ends at or below the top of user space and
 *   does not wrap).  Imports call it; it never looks at the mappings.
 * - The table of live mappings [start, end), each with its protection, plays
 *   the part of the page tables and of the fault handling of copy_to_user()
 *   and copy_from_user(): every piece of user memory the model touches is
 *   looked up here first, and a copy stops at the first byte that is not
 *   mapped with the access it needs (lk_mm_accessible()).
 */
#ifndef LK_USERMEM_H
#define LK_USERMEM_H

#include "lk_common.h"

/*
 * The highest address access_ok() accepts as the end of a range: x86-64's
 * USER_PTR_MAX = TASK_SIZE_MAX = (1 << 47) - PAGE_SIZE with 4-level page
 * tables (the guard page below the non-canonical hole is not user space).
 */
#define LK_USER_PTR_MAX ((uintptr_t)0x7ffffffff000)

/* Protections, numerically as mmap's PROT_READ and PROT_WRITE (PROT_NONE is 0). */
#define LK_PROT_READ 1
#define LK_PROT_WRITE 2

struct lk_mapping {
	uintptr_t start;
	uintptr_t end;	   /* exclusive */
	unsigned int prot; /* LK_PROT_* */
};

struct lk_mm {
	struct lk_mapping *maps; /* sorted by start, non-overlapping */
	size_t nr_maps;
	size_t cap;
	/*
	 * The mapping the last lookup ended in (SIZE_MAX: none): a cache, not
	 * part of the table, so lookups write it through a const table.  Like
	 * every read of the table it happens under the UserMemory's lock.
	 */
	size_t last;
};

/**
 * lk_access_ok - the kernel's access_ok(): does a range lie in user space
 * @addr: the first user address
 * @len: bytes (0 allowed)
 *
 * The kernel's access_ok(addr, len) on x86-64 (arch/x86/include/asm/uaccess_64.h,
 * for a length not known at compile time): addr + len must not wrap and must
 * be at most USER_PTR_MAX.  An empty range is checked too: its address must
 * be at most USER_PTR_MAX.
 *
 * Return: true when the range neither wraps nor ends above LK_USER_PTR_MAX.
 */
static inline bool lk_access_ok(uintptr_t addr, size_t len)
{
	uintptr_t sum = addr + len;

	return sum <= LK_USER_PTR_MAX && sum >= addr;
}

/*
 * Does a mapping with protection prot allow the access need?  As on x86-64,
 * a writable page can always be read (page tables cannot express write-only).
 */
static inline bool lk_prot_allows(unsigned int prot, unsigned int need)
{
	if (need & LK_PROT_WRITE)
		return prot & LK_PROT_WRITE;
	return prot & (LK_PROT_READ | LK_PROT_WRITE);
}

struct lk_mm *lk_mm_new(void);
void lk_mm_free(struct lk_mm *mm);
int lk_mm_add(struct lk_mm *mm, uintptr_t start, size_t len, unsigned int prot);
int lk_mm_remove(struct lk_mm *mm, uintptr_t start);
size_t lk_mm_accessible(const struct lk_mm *mm, uintptr_t addr, size_t len, unsigned int need,
			size_t *hint);
bool lk_mm_mapped(const struct lk_mm *mm, uintptr_t addr, size_t len, unsigned int need);
int lk_mprotect(uintptr_t addr, size_t len, unsigned int prot);

/*
 * lk_mm_accessible() with its common case inline: a piece that lies wholly
 * inside the mapping *hint names (or, with no hint yet, the mapping the
 * table's last lookup ended in), with the access needed, is reachable in
 * full (a few compares, no call); anything else takes the full walk.
 */
static inline size_t lk_mm_reach(const struct lk_mm *mm, uintptr_t addr, size_t len,
				 unsigned int need, size_t *hint)
{
	size_t k = *hint == SIZE_MAX ? mm->last : *hint;

	if (k < mm->nr_maps) {
		const struct lk_mapping *m = &mm->maps[k];

		if (m->start <= addr && addr < m->end && len <= m->end - addr &&
		    lk_prot_allows(m->prot, need)) {
			*hint = k;
			return len;
		}
	}
	return lk_mm_accessible(mm, addr, len, need, hint);
}

#endif
