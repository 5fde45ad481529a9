/*
 * iov_xarray.c - the model's XArray of folios and ITER_XARRAY (see iov_xarray.h).
 *
 * The table plays the part of a page-cache mapping's i_pages: lookups by page
 * index find the folio that covers it (a folio of order n covers 2^n indices
 * from a multiple of 2^n), by binary search.
 *
 * One difference from the kernel, at a hole (an index with no folio): the
 * kernel's iterate_xarray() walks with xas_for_each(), which skips missing
 * indices and goes on with the next folio present, placing the bytes at
 * offset_in_folio() of the position, which that folio does not hold (the
 * caller must have populated and pinned the whole range).  The model stops
 * there instead, as the kernel does when no folio follows: a copy returns the
 * bytes done up to the hole and leaves the iterator there.  The kernel's
 * page-listing walk, iov_iter_extract_xarray_pages(), stops at a hole too.
 */
#include <stdlib.h>
#include <string.h>

#include "iov_xarray.h"

static inline uint64_t entry_pages(const struct lk_xa_entry *e)
{
	return (uint64_t)1 << e->order;
}

/**
 * lk_xa_new - a new, empty page cache (the XArray of a mapping)
 *
 * Return: the table, or NULL when out of memory.
 */
struct lk_xarray *lk_xa_new(void)
{
	return calloc(1, sizeof(struct lk_xarray));
}

/**
 * lk_xa_free - free a page cache made by lk_xa_new()
 * @xa: the table (NULL is allowed)
 */
void lk_xa_free(struct lk_xarray *xa)
{
	if (xa)
		free(xa->entries);
	free(xa); /* free(NULL) does nothing */
}

/* Index in the table of the first entry whose last page index is >= index. */
static size_t first_ending_at_or_after(const struct lk_xarray *xa, uint64_t index)
{
	return LK_LOWER_BOUND(xa->nr, mid,
			      xa->entries[mid].index + entry_pages(&xa->entries[mid]) <= index);
}

/* The entry that covers page index, or NULL for a hole. */
static const struct lk_xa_entry *xa_lookup(const struct lk_xarray *xa, uint64_t index)
{
	size_t k = first_ending_at_or_after(xa, index);

	if (k < xa->nr && xa->entries[k].index <= index)
		return &xa->entries[k];
	return NULL;
}

/* The entry after e if it starts where e ends (no hole between them), else NULL. */
static const struct lk_xa_entry *xa_next_contiguous(const struct lk_xarray *xa,
						    const struct lk_xa_entry *e)
{
	const struct lk_xa_entry *n = e + 1;

	if (n < xa->entries + xa->nr && n->index == e->index + entry_pages(e))
		return n;
	return NULL;
}

/**
 * lk_xa_store - store a folio in the page cache
 * @xa: the page cache
 * @index: its first page index
 * @addr: its first byte
 * @order: its size, 2^order pages
 *
 * Store a folio of 2^order pages at page index (a multiple of 2^order), as
 * filemap_add_folio() would.  -EINVAL for an order above MAX_PAGECACHE_ORDER,
 * a misaligned index or address, or an index past the largest file position;
 * -EEXIST if any index it covers holds a folio already.
 *
 * Return: 0, -EINVAL or -EEXIST as described above, -ENOMEM when the table cannot grow.
 */
int lk_xa_store(struct lk_xarray *xa, uint64_t index, uintptr_t addr, unsigned int order)
{
	uint64_t npages;
	size_t k;
	int ret;

	if (!xa || order > LK_MAX_PAGECACHE_ORDER || addr % LK_PAGE_SIZE || !addr)
		return -EINVAL;
	npages = (uint64_t)1 << order;
	if (index % npages || index > ((uint64_t)LK_MAX_LFS_FILESIZE >> LK_PAGE_SHIFT) + 1 - npages)
		return -EINVAL;
	k = first_ending_at_or_after(xa, index);
	ret = LK_TABLE_INSERT(xa->entries, xa->nr, xa->cap, k,
			      k < xa->nr && xa->entries[k].index < index + npages);
	if (ret)
		return ret;
	xa->entries[k] = (struct lk_xa_entry){ .index = index, .addr = addr, .order = order };
	return 0;
}

/**
 * lk_xa_erase - remove a folio from the page cache
 * @xa: the page cache
 * @index: any page index the folio covers
 * @first: receives the folio's first index
 *
 * Remove the folio that covers page index (its first index in *first); -ENOENT if none.
 *
 * Return: 0, or -ENOENT.
 */
int lk_xa_erase(struct lk_xarray *xa, uint64_t index, uint64_t *first)
{
	const struct lk_xa_entry *e;
	size_t k;

	if (!xa)
		return -EINVAL;
	e = xa_lookup(xa, index);
	if (!e)
		return -ENOENT;
	k = (size_t)(e - xa->entries);
	*first = e->index;
	memmove(&xa->entries[k], &xa->entries[k + 1], (xa->nr - k - 1) * sizeof(xa->entries[0]));
	xa->nr--;
	return 0;
}

/**
 * lk_xa_load - look a folio up in the page cache
 * @xa: the page cache
 * @index: any page index the folio covers
 * @first: receives its first index
 * @addr: receives its first byte
 * @order: receives its order
 *
 * The folio that covers page index: its first index, address and order; -ENOENT if none.
 *
 * Return: 0, or -ENOENT.
 */
int lk_xa_load(const struct lk_xarray *xa, uint64_t index, uint64_t *first, uintptr_t *addr,
	       unsigned int *order)
{
	const struct lk_xa_entry *e = xa ? xa_lookup(xa, index) : NULL;

	if (!e)
		return -ENOENT;
	*first = e->index;
	*addr = e->addr;
	*order = e->order;
	return 0;
}

/**
 * lk_iter_xarray - build an ITER_XARRAY iterator, as iov_iter_xarray()
 * @i: the iterator to set up
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @xa: the page cache
 * @start: the file position of the first byte
 * @count: bytes the iterator covers
 *
 * iov_iter_xarray(): the count bytes of the mapping from file position start.
 * The kernel BUG()s on a bad direction; the model also refuses a range that
 * runs past the largest file position (-EINVAL).  Folios need not be present.
 *
 * Return: 0, or -EINVAL.
 */
int lk_iter_xarray(struct lk_iov_iter *i, int direction, const struct lk_xarray *xa, int64_t start,
		   size_t count)
{
	if (!lk_iter_dir_ok(direction) || !xa || start < 0 ||
	    count > (uint64_t)LK_MAX_LFS_FILESIZE - (uint64_t)start)
		return -EINVAL;
	lk_iter_start(i, direction, LK_ITER_XARRAY, count, 0);
	i->xarray = xa;
	i->xarray_start = start; /* shares nr_segs' storage, as in the kernel */
	i->xarray_len = count;
	return 0;
}

/*
 * iterate_xarray(): from the folio that covers the current position, a page
 * at a time (the kernel maps one page at a time), folio after folio; stops at
 * a hole (see the top of this file).
 */
size_t lk_xarray_iterate(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step)
{
	const struct lk_xarray *xa = i->xarray;
	uint64_t start = (uint64_t)i->xarray_start + i->iov_offset;
	const struct lk_xa_entry *e = xa_lookup(xa, start >> LK_PAGE_SHIFT);
	size_t progress = 0;

	while (e) {
		size_t fsize = LK_PAGE_SIZE << e->order;
		size_t offset = (size_t)((start + progress) & (fsize - 1)); /* offset_in_folio() */
		size_t flen = lk_min(fsize - offset, len);

		while (flen) {
			size_t part = lk_min(flen, LK_PAGE_SIZE - offset % LK_PAGE_SIZE);
			size_t remain = step((void *)(e->addr + offset), progress, part, priv);
			size_t consumed = part - remain;

			progress += consumed;
			len -= consumed;
			if (remain || len == 0)
				goto out;
			flen -= consumed;
			offset += consumed;
		}
		e = xa_next_contiguous(xa, e);
	}
out:
	i->iov_offset += progress;
	i->count -= progress;
	return progress;
}

/* The rest of the folio that holds the current byte; -ENODATA at a hole. */
int lk_xarray_current(const struct lk_iov_iter *i, uintptr_t *addr, size_t *len)
{
	uint64_t pos = (uint64_t)i->xarray_start + i->iov_offset;
	const struct lk_xa_entry *e = xa_lookup(i->xarray, pos >> LK_PAGE_SHIFT);
	size_t fsize, offset;

	if (!e)
		return -ENODATA;
	fsize = LK_PAGE_SIZE << e->order;
	offset = (size_t)(pos & (fsize - 1));
	*addr = e->addr + offset;
	*len = lk_min(i->count, fsize - offset);
	return 0;
}

/*
 * iov_iter_extract_xarray_pages(): the pages of consecutive indices from the
 * current position's, up to the first hole.  maxsize is already clamped to
 * count and MAX_RW_COUNT by the caller.  When the very first index is a hole
 * the model lists nothing and returns 0; the kernel returns maxsize there if
 * the position is not page-aligned (its nr * PAGE_SIZE - offset wraps), with
 * no page listed.  The caller (lk_iter_extract_pages) advances the iterator
 * past the bytes listed, so that this file never calls back into iov_iter.c.
 */
ssize_t lk_xarray_extract(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
			  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages)
{
	const struct lk_xarray *xa = i->xarray;
	uint64_t pos = (uint64_t)i->xarray_start + i->iov_offset;
	uint64_t index = pos >> LK_PAGE_SHIFT;
	size_t offset = (size_t)(pos & ~LK_PAGE_MASK);
	const struct lk_xa_entry *e;
	unsigned int nr = 0;

	*offset0 = offset;
	maxpages = lk_want_pages(maxsize, offset, maxpages);
	if (!maxpages)
		return -ENOMEM;
	for (e = xa_lookup(xa, index); e && nr < maxpages; index++) {
		if (index >= e->index + entry_pages(e)) {
			e = xa_next_contiguous(xa, e);
			if (!e)
				break;
		}
		pages[nr++] = e->addr + (uintptr_t)(index - e->index) * LK_PAGE_SIZE;
	}
	*nr_pages = nr;
	if (!nr)
		return 0;
	return (ssize_t)lk_min((size_t)nr * LK_PAGE_SIZE - offset, maxsize);
}
