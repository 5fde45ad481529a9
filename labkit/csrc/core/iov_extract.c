/*
 * iov_extract.c - iov_iter_extract_pages() for every iterator type (see iov_extract.h).
 *
 * Follows today's lib/iov_iter.c: iov_iter_extract_user_pages() for UBUF and
 * IOVEC, _kvec_pages(), _bvec_pages() (the form since Linux 6.13, which lists
 * pages across bvecs as long as they join at page boundaries), and the FOLIOQ
 * and XARRAY walks in iov_folioq.c and iov_xarray.c.  The code is labkit's own.
 */
#include "iov_extract.h"
#include "iov_folioq.h"
#include "iov_xarray.h"

/*
 * first_iovec_segment(): the address of the first byte of the first
 * non-empty segment from the position, and maxsize limited to that segment.
 * 0 if there is none (the kernel BUG()s; count > 0 rules it out).
 */
static uintptr_t first_user_segment(const struct lk_iov_iter *i, size_t *size)
{
	size_t skip = i->iov_offset;
	unsigned long k;

	if (lk_iter_kind(i) == LK_ITER_UBUF)
		return i->ubuf + skip;
	for (k = 0; k < i->nr_segs; k++, skip = 0) {
		size_t len = i->iov[k].iov_len - skip;

		if (!len)
			continue;
		if (*size > len)
			*size = len;
		return i->iov[k].iov_base + skip;
	}
	return 0;
}

/*
 * UBUF and IOVEC: pin_user_pages_fast() of the pages under the first
 * non-empty segment.  The model pins a page when the bytes of the segment in
 * it are mapped (imported memory is checked against its UserMemory; memory
 * given as Python buffers is always there); the pinning stops at the first
 * page that is not (or not writable, for a destination), and a fault on the
 * first page is -EFAULT.
 */
static ssize_t extract_user_pages(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
				  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages)
{
	uintptr_t addr = first_user_segment(i, &maxsize), base;
	size_t offset, hint;
	unsigned int k;

	if (!addr)
		return -EFAULT;
	*offset0 = offset = addr % LK_PAGE_SIZE;
	base = addr - offset;
	maxpages = lk_want_pages(maxsize, offset, maxpages);
	if (!maxpages)
		return -ENOMEM;
	hint = SIZE_MAX;
	for (k = 0; k < maxpages; k++) {
		uintptr_t lo = k ? base + (uintptr_t)k * LK_PAGE_SIZE : addr;
		uintptr_t hi = lk_min(base + ((uintptr_t)k + 1) * LK_PAGE_SIZE, addr + maxsize);

		/* a destination is pinned for writing (FOLL_WRITE), a source for reading */
		if (i->mm && lk_mm_accessible(i->mm, lo, hi - lo,
					      i->data_source ? LK_PROT_READ : LK_PROT_WRITE,
					      &hint) != hi - lo)
			break;
		pages[k] = base + (uintptr_t)k * LK_PAGE_SIZE;
	}
	if (!k)
		return -EFAULT;
	*nr_pages = k;
	maxsize = lk_min(maxsize, (size_t)k * LK_PAGE_SIZE - offset);
	lk_iter_advance(i, maxsize);
	return (ssize_t)maxsize;
}

/* KVEC: the pages under the first non-empty segment (empty ones are stepped over). */
static ssize_t extract_kvec_pages(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
				  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages)
{
	size_t skip = i->iov_offset, offset, size;
	uintptr_t kaddr;
	unsigned int k;

	for (;;) {
		if (i->nr_segs == 0)
			return 0;
		size = lk_min(maxsize, i->iov->iov_len - skip);
		if (size)
			break;
		i->iov_offset = 0;
		i->nr_segs--;
		i->iov++;
		skip = 0;
	}
	kaddr = i->iov->iov_base + skip;
	*offset0 = offset = kaddr % LK_PAGE_SIZE;
	maxpages = lk_want_pages(size, offset, maxpages);
	if (!maxpages)
		return -ENOMEM;
	kaddr -= offset;
	for (k = 0; k < maxpages; k++)
		pages[k] = kaddr + (uintptr_t)k * LK_PAGE_SIZE;
	*nr_pages = maxpages;
	size = lk_min(size, (size_t)maxpages * LK_PAGE_SIZE - offset);
	lk_iter_advance(i, size);
	return (ssize_t)size;
}

/*
 * BVEC: single-page pieces from the position on, across bvecs, as long as
 * each piece ends at a page end and the next starts at a page start (only
 * the first page may have an offset).  A bvec finished exactly at the
 * position is stepped over first.  As in the kernel, a zero-length bvec met
 * after a page end adds an entry that holds no byte, and ends the listing.
 */
static ssize_t extract_bvec_pages(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
				  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages)
{
	size_t skip = i->iov_offset, size = 0, left = maxsize, done;
	unsigned long idx = 0;
	unsigned int k = 0;

	if (i->nr_segs == 0)
		return 0;
	if (i->iov_offset == i->bvec->bv_len) {
		i->iov_offset = 0;
		i->nr_segs--;
		i->bvec++;
		skip = 0;
	}
	done = skip;
	maxpages = lk_want_pages(maxsize, skip, maxpages);
	while (left && idx < i->nr_segs) { /* bvec_iter_bvec(), one page at a time */
		const struct lk_bvec *bv = &i->bvec[idx];
		size_t mp_offset = bv->bv_offset + done;
		size_t offset = mp_offset % LK_PAGE_SIZE;
		size_t len = lk_min3(left, bv->bv_len - done, LK_PAGE_SIZE - offset);

		if (k) {
			if (offset)
				break;
		} else {
			*offset0 = offset;
		}
		pages[k++] = bv->bv_page + mp_offset / LK_PAGE_SIZE * LK_PAGE_SIZE;
		size += len;
		if (k >= maxpages)
			break;
		if (offset + len != LK_PAGE_SIZE)
			break;
		done += len; /* bvec_iter_advance_single() */
		if (done == bv->bv_len) {
			done = 0;
			idx++;
		}
		left -= len;
	}
	*nr_pages = k;
	lk_iter_advance(i, size);
	return (ssize_t)size;
}

/**
 * lk_iter_extract_pages - list the pages under the next bytes, as
 * iov_iter_extract_pages()
 * @i: the iterator
 * @pages: receives page addresses (@maxpages entries)
 * @maxsize: the most bytes to list
 * @maxpages: the most pages to list
 * @offset0: receives the offset of the first byte in pages[0]
 * @nr_pages: receives the entries filled
 *
 * Return: the bytes listed (the iterator moved past them), or -EFAULT, -ENOMEM or -EIO
 * as described above.
 */
ssize_t lk_iter_extract_pages(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
			      unsigned int maxpages, size_t *offset0, unsigned int *nr_pages)
{
	ssize_t ret;

	*offset0 = 0;
	*nr_pages = 0;
	maxsize = lk_min3(maxsize, i->count, LK_MAX_RW_COUNT);
	if (!maxsize)
		return 0;
	if (!maxpages)
		return -ENOMEM; /* the kernel's BVEC walk would fill one entry regardless */
	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
	case LK_ITER_IOVEC:
		return extract_user_pages(i, pages, maxsize, maxpages, offset0, nr_pages);
	case LK_ITER_KVEC:
		return extract_kvec_pages(i, pages, maxsize, maxpages, offset0, nr_pages);
	case LK_ITER_BVEC:
		return extract_bvec_pages(i, pages, maxsize, maxpages, offset0, nr_pages);
	case LK_ITER_FOLIOQ:
		return lk_folioq_extract(i, pages, maxsize, maxpages, offset0, nr_pages);
	case LK_ITER_XARRAY:
		ret = lk_xarray_extract(i, pages, maxsize, maxpages, offset0, nr_pages);
		if (ret > 0) /* iov_iter_extract_xarray_pages() advances at its end */
			lk_iter_advance(i, (size_t)ret);
		return ret;
	case LK_ITER_DISCARD:
		break;
	}
	return -EFAULT; /* DISCARD has no content */
}
