/*
 * iov_xarray.h - ITER_XARRAY: an iterator over a page-cache mapping.
 *
 * The kernel's page cache keeps a file's folios in an XArray indexed by page
 * index; a folio of order n (2^n pages) sits at an index that is a multiple
 * of 2^n and covers 2^n indices.  The model's XArray is a sorted table of
 * such folios over real memory.  The iterator follows today's kernel
 * (iov_iter_xarray(), iterate_xarray(), iov_iter_extract_xarray_pages() in
 * lib/iov_iter.c and include/linux/iov_iter.h); the code is labkit's own.
 */
#ifndef LK_IOV_XARRAY_H
#define LK_IOV_XARRAY_H

#include <sys/types.h>

#include "iov_iter.h"
#include "iov_step.h"

/* MAX_PAGECACHE_ORDER on x86-64 (the PMD order: 2 MiB folios). */
#define LK_MAX_PAGECACHE_ORDER 9
/* The largest file position (loff_t), the kernel's MAX_LFS_FILESIZE. */
#define LK_MAX_LFS_FILESIZE INT64_MAX

struct lk_xa_entry {
	uint64_t index; /* first page index of the folio (a multiple of 2^order) */
	uintptr_t addr; /* address of its first byte (page-aligned) */
	unsigned int order;
};

struct lk_xarray {
	struct lk_xa_entry *entries; /* sorted by index, never overlapping */
	size_t nr;
	size_t cap;
};

struct lk_xarray *lk_xa_new(void);
void lk_xa_free(struct lk_xarray *xa);
int lk_xa_store(struct lk_xarray *xa, uint64_t index, uintptr_t addr, unsigned int order);
int lk_xa_erase(struct lk_xarray *xa, uint64_t index, uint64_t *first);
int lk_xa_load(const struct lk_xarray *xa, uint64_t index, uint64_t *first, uintptr_t *addr,
	       unsigned int *order);

int lk_iter_xarray(struct lk_iov_iter *i, int direction, const struct lk_xarray *xa, int64_t start,
		   size_t count);

/* Per-type steps called from iov_iter.c and iov_extract.c. */
size_t lk_xarray_iterate(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step);
int lk_xarray_current(const struct lk_iov_iter *i, uintptr_t *addr, size_t *len);
ssize_t lk_xarray_extract(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
			  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages);

#endif
