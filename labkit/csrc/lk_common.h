/*
 * lk_common.h - constants and small helpers shared by labkit's C core.
 *
 * labkit models the Linux kernel's iov_iter machinery in user space.  The
 * constants mirror the kernel's (x86-64, 4 KiB pages); the code is labkit's.
 */
#ifndef LK_COMMON_H
#define LK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define LK_PAGE_SHIFT 12
#define LK_PAGE_SIZE ((size_t)1 << LK_PAGE_SHIFT)
#define LK_PAGE_MASK (~(LK_PAGE_SIZE - 1))

/* INT_MAX rounded down to a page, as the kernel's MAX_RW_COUNT. */
#define LK_MAX_RW_COUNT ((size_t)0x7fffffff & LK_PAGE_MASK)

/* The kernel's UIO_MAXIOV and UIO_FASTIOV. */
#define LK_UIO_MAXIOV 1024
#define LK_UIO_FASTIOV 8

/* Directions, numerically as the kernel's ITER_DEST (READ) / ITER_SOURCE (WRITE). */
#define LK_ITER_DEST 0
#define LK_ITER_SOURCE 1

/*
 * Branch hints and forced inlining, as the kernel's likely()/unlikely()
 * (include/linux/compiler.h) and __always_inline; used where the kernel
 * uses them.
 */
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
#define LK_ALWAYS_INLINE static inline __attribute__((always_inline))

static inline size_t lk_min(size_t a, size_t b)
{
	return a < b ? a : b;
}
static inline size_t lk_min3(size_t a, size_t b, size_t c)
{
	return lk_min(lk_min(a, b), c);
}

/*
 * How many page entries a listing of size bytes starting start bytes into its
 * first page may fill, at most maxpages: the kernel's want_pages_array() count.
 */
static inline unsigned int lk_want_pages(size_t size, size_t start, unsigned int maxpages)
{
	size_t count = (size + start + LK_PAGE_SIZE - 1) / LK_PAGE_SIZE;

	return count > maxpages ? maxpages : (unsigned int)count;
}

/*
 * Open a free slot at index k of a growable array of *nr entries of `size`
 * bytes (capacity *cap, doubled when full): the entries from k on move up one,
 * *nr grows by one.  0, or -ENOMEM (the array is then unchanged).
 */
static inline int lk_array_insert_slot(void **array, size_t *nr, size_t *cap, size_t k, size_t size)
{
	char *base;

	if (*nr == *cap) {
		size_t grown = *cap ? 2 * *cap : 16;
		void *p = realloc(*array, grown * size);

		if (!p)
			return -ENOMEM;
		*array = p;
		*cap = grown;
	}
	base = *array;
	memmove(base + (k + 1) * size, base + k * size, (*nr - k) * size);
	(*nr)++;
	return 0;
}

/*
 * Insert into a sorted table of non-overlapping entries at index k (where a
 * lower-bound search put it): -EEXIST if `overlaps` (the entry at k overlaps
 * the new one), else lk_array_insert_slot().
 */
#define LK_TABLE_INSERT(array, nr, cap, k, overlaps)                                               \
	((overlaps)                                                                                \
		 ? -EEXIST                                                                         \
		 : lk_array_insert_slot((void **)&(array), &(nr), &(cap), (k), sizeof(*(array))))

/*
 * The index of the first of n sorted entries for which `below` is false (a
 * binary search; n when there is none).  `below` is an expression of `mid`,
 * the index looked at, true while entry mid lies wholly below what is sought.
 */
#define LK_LOWER_BOUND(n, mid, below)                                                              \
	({                                                                                         \
		size_t lo_ = 0, hi_ = (n);                                                         \
		while (lo_ < hi_) {                                                                \
			size_t mid = lo_ + (hi_ - lo_) / 2;                                        \
			if (below)                                                                 \
				lo_ = mid + 1;                                                     \
			else                                                                       \
				hi_ = mid;                                                         \
		}                                                                                  \
		lo_;                                                                               \
	})

#endif
