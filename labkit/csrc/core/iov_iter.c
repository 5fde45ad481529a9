/*
 * iov_iter.c - the iterator operations of labkit's model (see iov_iter.h).
 *
 * Semantics follow today's Linux lib/iov_iter.c and include/linux/iov_iter.h.
 * Where the kernel trusts its caller (a segment loop bounded only by count,
 * a revert that BUG()s past the start) this model bounds the loop by nr_segs
 * as well and returns an error instead, so that no misuse can reach memory
 * outside the segments.
 *
 * Constructors are O(1) and trust their arguments, as the kernel's do: the
 * Python layer (labkit/core/iov_iter.py) checks every segment before it calls them.
 */
#include <string.h>

#include "iov_iter.h"
#include "iov_step.h"
#include "iov_folioq.h"
#include "iov_xarray.h"

/* lk_iter_start() after the direction's check; first: the segment array, which bounds revert */
static int iter_setup(struct lk_iov_iter *i, int direction, enum lk_iter_type type, size_t count,
		      unsigned long nr_segs, const void *first)
{
	if (!lk_iter_dir_ok(direction))
		return -EINVAL;
	lk_iter_start(i, direction, type, count, nr_segs);
	i->seg_first = first;
	return 0;
}

/* IOVEC and KVEC: an array of struct lk_iovec (user or kernel addresses). */
static int iter_setup_iovec(struct lk_iov_iter *i, int direction, enum lk_iter_type type,
			    const struct lk_iovec *iov, unsigned long nr_segs, size_t count)
{
	int ret = iter_setup(i, direction, type, count, nr_segs, iov);

	if (ret)
		return ret;
	i->iov = iov;
	return 0;
}

/**
 * lk_iter_ubuf - build an ITER_UBUF iterator, as iov_iter_ubuf()
 * @i: the iterator to set up
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @buf: the user address of the buffer
 * @count: its length
 *
 * Return: 0, or -EINVAL for a bad direction.
 */
int lk_iter_ubuf(struct lk_iov_iter *i, int direction, uintptr_t buf, size_t count)
{
	int ret = iter_setup(i, direction, LK_ITER_UBUF, count, 1, NULL);

	if (ret)
		return ret;
	i->user_backed = true;
	i->ubuf = buf;
	i->ubuf_len = count;
	return 0;
}

/**
 * lk_iter_init - build an ITER_IOVEC iterator over user segments, as iov_iter_init()
 * @i: the iterator to set up
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @iov: the segment array (not copied: it must outlive @i)
 * @nr_segs: its number of entries
 * @count: bytes the iterator covers
 *
 * Return: 0, or -EINVAL for a bad direction.
 */
int lk_iter_init(struct lk_iov_iter *i, int direction, const struct lk_iovec *iov,
		 unsigned long nr_segs, size_t count)
{
	int ret = iter_setup_iovec(i, direction, LK_ITER_IOVEC, iov, nr_segs, count);

	if (!ret)
		i->user_backed = true;
	return ret;
}

/**
 * lk_iter_kvec - build an ITER_KVEC iterator over kernel buffers, as iov_iter_kvec()
 * @i: the iterator to set up
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @kvec: the segment array (not copied: it must outlive @i)
 * @nr_segs: its number of entries
 * @count: bytes the iterator covers
 *
 * Return: 0, or -EINVAL for a bad direction.
 */
int lk_iter_kvec(struct lk_iov_iter *i, int direction, const struct lk_iovec *kvec,
		 unsigned long nr_segs, size_t count)
{
	return iter_setup_iovec(i, direction, LK_ITER_KVEC, kvec, nr_segs, count);
}

/**
 * lk_iter_bvec - build an ITER_BVEC iterator over pages, as iov_iter_bvec()
 * @i: the iterator to set up
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @bvec: the bio_vec array (not copied: it must outlive @i)
 * @nr_segs: its number of entries
 * @count: bytes the iterator covers
 *
 * Return: 0, or -EINVAL for a bad direction.
 */
int lk_iter_bvec(struct lk_iov_iter *i, int direction, const struct lk_bvec *bvec,
		 unsigned long nr_segs, size_t count)
{
	int ret = iter_setup(i, direction, LK_ITER_BVEC, count, nr_segs, bvec);

	if (ret)
		return ret;
	i->bvec = bvec;
	return 0;
}

/**
 * lk_iter_discard - build an ITER_DISCARD iterator, as iov_iter_discard()
 * @i: the iterator to set up
 * @direction: must be LK_ITER_DEST
 * @count: bytes it swallows
 *
 * ITER_DISCARD exists only as a destination (the kernel BUG()s otherwise).
 *
 * Return: 0, or -EINVAL for a source.
 */
int lk_iter_discard(struct lk_iov_iter *i, int direction, size_t count)
{
	if (direction != LK_ITER_DEST)
		return -EINVAL;
	return iter_setup(i, direction, LK_ITER_DISCARD, count, 0, NULL);
}

/* ---- advance, revert, truncate, reexpand ---------------------------------- */

static void iovec_advance(struct lk_iov_iter *i, size_t size)
{
	const struct lk_iovec *p = i->iov, *end = p + i->nr_segs;

	if (!i->count)
		return;
	i->count -= size;
	size += i->iov_offset; /* from the start of the current segment */
	for (; p < end; p++) {
		if (size < p->iov_len)
			break;
		size -= p->iov_len; /* zero-length segments are stepped over */
	}
	i->visited = (unsigned long)(p - i->iov) + (p < end);
	i->iov_offset = size;
	i->nr_segs -= p - i->iov;
	i->iov = p;
}

static void bvec_advance(struct lk_iov_iter *i, size_t size)
{
	const struct lk_bvec *p = i->bvec, *end = p + i->nr_segs;

	if (!i->count)
		return;
	i->count -= size;
	size += i->iov_offset;
	for (; p < end; p++) {
		if (size < p->bv_len)
			break;
		size -= p->bv_len;
	}
	i->visited = (unsigned long)(p - i->bvec) + (p < end);
	i->iov_offset = size;
	i->nr_segs -= p - i->bvec;
	i->bvec = p;
}

/**
 * lk_iter_advance - move the iterator forward, as iov_iter_advance()
 * @i: the iterator
 * @size: bytes to skip (clamped to the count)
 */
void lk_iter_advance(struct lk_iov_iter *i, size_t size)
{
	if (unlikely(i->count < size))
		size = i->count;
	i->visited = 0;
	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
	case LK_ITER_XARRAY:
		i->iov_offset += size;
		i->count -= size;
		break;
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		iovec_advance(i, size);
		break;
	case LK_ITER_BVEC:
		bvec_advance(i, size);
		break;
	case LK_ITER_FOLIOQ:
		lk_folioq_advance(i, size);
		break;
	case LK_ITER_DISCARD:
		i->count -= size;
		break;
	}
}

/* Length of the segment k places before the current one (k >= 1). */
static size_t len_before(const struct lk_iov_iter *i, unsigned long k)
{
	switch (lk_iter_kind(i)) {
	case LK_ITER_BVEC:
		return (i->bvec - k)->bv_len;
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		return (i->iov - k)->iov_len;
	case LK_ITER_UBUF:
	case LK_ITER_DISCARD:
	case LK_ITER_XARRAY:
	case LK_ITER_FOLIOQ:
		break; /* no segment array: never called for these */
	}
	return 0;
}

/**
 * lk_iter_revert - walk the iterator back, as iov_iter_revert()
 * @i: the iterator
 * @unroll: bytes to walk back
 *
 * Walk back by unroll bytes.  Returns -EINVAL for more than MAX_RW_COUNT (the
 * kernel WARNs and ignores it), -ERANGE for a revert past the first byte
 * (a BUG in the kernel for UBUF and XARRAY; for the others a walk off the
 * start of the array or queue) and -EOVERFLOW for a DISCARD whose count
 * would wrap (model only); in every case the iterator is left unchanged.
 *
 * Return: 0, or -EINVAL, -ERANGE or -EOVERFLOW as described above.
 */
int lk_iter_revert(struct lk_iov_iter *i, size_t unroll)
{
	size_t left, n;
	unsigned long back = 0, before = 0;

	i->visited = 0;
	if (!unroll)
		return 0;
	if (unlikely(unroll > LK_MAX_RW_COUNT)) /* the kernel's WARN_ON() */
		return -EINVAL;
	switch (lk_iter_kind(i)) {
	case LK_ITER_DISCARD:
		if (unroll > SIZE_MAX - i->count)
			return -EOVERFLOW;
		i->count += unroll;
		return 0;
	case LK_ITER_FOLIOQ:
		return lk_folioq_revert(i, unroll);
	case LK_ITER_UBUF:
	case LK_ITER_XARRAY:
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
	case LK_ITER_BVEC:
		break;
	}
	if (unroll <= i->iov_offset) {
		i->iov_offset -= unroll;
		i->count += unroll;
		return 0;
	}
	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
	case LK_ITER_XARRAY:
		return -ERANGE; /* the kernel BUG()s: pages before the start are not pinned */
	case LK_ITER_BVEC:
		before = (unsigned long)(i->bvec - (const struct lk_bvec *)i->seg_first);
		break;
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		before = (unsigned long)(i->iov - (const struct lk_iovec *)i->seg_first);
		break;
	case LK_ITER_DISCARD:
	case LK_ITER_FOLIOQ:
		return -EINVAL; /* handled above */
	}

	left = unroll - i->iov_offset;
	for (;;) {
		if (back == before)
			return -ERANGE; /* nothing changed yet */
		n = len_before(i, ++back);
		if (left <= n)
			break;
		left -= n;
	}
	i->count += unroll;
	i->nr_segs += back;
	if (lk_iter_kind(i) == LK_ITER_BVEC) /* only BVEC, IOVEC and KVEC get here */
		i->bvec -= back;
	else
		i->iov -= back;
	i->iov_offset = n - left;
	i->visited = back;
	return 0;
}

/**
 * lk_iter_truncate - lower the iterator's count, as iov_iter_truncate()
 * @i: the iterator
 * @count: the new count, if smaller
 */
void lk_iter_truncate(struct lk_iov_iter *i, size_t count)
{
	if (i->count > count)
		i->count = count;
}

/**
 * lk_iter_capacity - the bytes the segments hold from the position on
 * @i: the iterator
 *
 * Bytes the segments hold from the current position on (model only).
 *
 * Return: that number of bytes.
 */
size_t lk_iter_capacity(const struct lk_iov_iter *i)
{
	size_t total = 0;
	unsigned long k;

	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
		return i->ubuf_len - i->iov_offset;
	case LK_ITER_XARRAY:
		return i->xarray_len - i->iov_offset;
	case LK_ITER_FOLIOQ:
		return lk_folioq_capacity(i->folioq, i->folioq_slot, i->iov_offset);
	case LK_ITER_DISCARD:
		return SIZE_MAX;
	case LK_ITER_BVEC:
		for (k = 0; k < i->nr_segs; k++)
			total += i->bvec[k].bv_len;
		break;
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		for (k = 0; k < i->nr_segs; k++)
			total += i->iov[k].iov_len;
		break;
	}
	return total > i->iov_offset ? total - i->iov_offset : 0;
}

/**
 * lk_iter_reexpand - restore a count lowered by truncation, as iov_iter_reexpand()
 * @i: the iterator
 * @count: the new count
 *
 * The kernel trusts the caller here; the model refuses to grow past the segments.
 *
 * Return: 0, or -ERANGE if the segments do not hold @count bytes.
 */
int lk_iter_reexpand(struct lk_iov_iter *i, size_t count)
{
	if (count > lk_iter_capacity(i))
		return -ERANGE;
	i->count = count;
	return 0;
}

/**
 * lk_iter_single_seg_count - the bytes of the current segment, as
 * iov_iter_single_seg_count()
 * @i: the iterator
 *
 * Return: min(count, bytes left in the current segment); the count for UBUF and
 * DISCARD.
 */
size_t lk_iter_single_seg_count(const struct lk_iov_iter *i)
{
	switch (lk_iter_kind(i)) {
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		if (i->nr_segs > 1)
			return lk_min(i->count, i->iov->iov_len - i->iov_offset);
		break;
	case LK_ITER_BVEC:
		if (i->nr_segs > 1)
			return lk_min(i->count, i->bvec->bv_len - i->iov_offset);
		break;
	case LK_ITER_FOLIOQ:
		return lk_folioq_single_seg_count(i);
	case LK_ITER_UBUF:
	case LK_ITER_XARRAY:
	case LK_ITER_DISCARD:
		break;
	}
	return i->count;
}

/**
 * lk_iter_current - the current segment as (address, length)
 * @i: the iterator
 * @addr: receives the address of the next byte
 * @len: receives the bytes left in the segment
 *
 * The current segment as (address, length): iov_iter_iovec() as proposed in
 * the 2023 UBUF thread, answering for UBUF too, and extended here to KVEC and
 * BVEC, and to XARRAY and FOLIOQ (the rest of the current folio).  -ENODATA
 * when no segment (or no folio) is left, -EINVAL for DISCARD.
 *
 * Return: 0, -ENODATA or -EINVAL as described above.
 */
int lk_iter_current(const struct lk_iov_iter *i, uintptr_t *addr, size_t *len)
{
	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
		*addr = i->ubuf + i->iov_offset;
		*len = i->count;
		return 0;
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		if (!i->nr_segs)
			return -ENODATA;
		*addr = i->iov->iov_base + i->iov_offset;
		*len = lk_min(i->count, i->iov->iov_len - i->iov_offset);
		return 0;
	case LK_ITER_BVEC:
		if (!i->nr_segs)
			return -ENODATA;
		*addr = i->bvec->bv_page + i->bvec->bv_offset + i->iov_offset;
		*len = lk_min(i->count, i->bvec->bv_len - i->iov_offset);
		return 0;
	case LK_ITER_XARRAY:
		return lk_xarray_current(i, addr, len);
	case LK_ITER_FOLIOQ:
		return lk_folioq_current(i, addr, len);
	case LK_ITER_DISCARD:
		break;
	}
	return -EINVAL;
}

static size_t div_round_up(size_t n, size_t d)
{
	return (n + d - 1) / d;
}

/**
 * lk_iter_npages - the pages the remaining bytes touch, as iov_iter_npages()
 * @i: the iterator
 * @maxpages: the most to count
 *
 * Return: the number of pages, at most @maxpages; 0 for DISCARD or an empty iterator.
 */
int lk_iter_npages(const struct lk_iov_iter *i, int maxpages)
{
	size_t skip = i->iov_offset, size = i->count, npages = 0;
	unsigned long k;

	if (!size || maxpages <= 0)
		return 0;
	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
		npages = div_round_up((i->ubuf + skip) % LK_PAGE_SIZE + size, LK_PAGE_SIZE);
		return (int)lk_min(npages, (size_t)maxpages);
	case LK_ITER_XARRAY: /* the file positions' pages, as for UBUF */
		npages = div_round_up(((size_t)i->xarray_start + skip) % LK_PAGE_SIZE + size,
				      LK_PAGE_SIZE);
		return (int)lk_min(npages, (size_t)maxpages);
	case LK_ITER_FOLIOQ: /* folios are whole pages: the offset in the folio says it all */
		npages = div_round_up(skip % LK_PAGE_SIZE + size, LK_PAGE_SIZE);
		return (int)lk_min(npages, (size_t)maxpages);
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		for (k = 0; size && k < i->nr_segs; k++, skip = 0) {
			const struct lk_iovec *p = &i->iov[k];
			size_t offs = (p->iov_base + skip) % LK_PAGE_SIZE;
			size_t len = lk_min(p->iov_len - skip, size);

			if (len) {
				size -= len;
				npages += div_round_up(offs + len, LK_PAGE_SIZE);
				if (npages > (size_t)maxpages)
					return maxpages;
			}
		}
		return (int)npages;
	case LK_ITER_BVEC: /* as bvec_npages(): an empty bvec is not skipped, unlike an iovec */
		for (k = 0; size && k < i->nr_segs; k++, skip = 0) {
			const struct lk_bvec *p = &i->bvec[k];
			size_t offs = (p->bv_offset + skip) % LK_PAGE_SIZE;
			size_t len = lk_min(p->bv_len - skip, size);

			size -= len;
			npages += div_round_up(offs + len, LK_PAGE_SIZE);
			if (npages > (size_t)maxpages)
				return maxpages;
		}
		return (int)npages;
	case LK_ITER_DISCARD:
		break;
	}
	return 0;
}

/**
 * lk_iter_alignment - the OR of the remaining segments' addresses and lengths
 * @i: the iterator
 *
 * OR of every segment's start and length within count, as iov_iter_alignment().
 *
 * Return: that OR (0 when the count is 0).
 */
unsigned long lk_iter_alignment(const struct lk_iov_iter *i)
{
	unsigned long res = 0;
	size_t size = i->count, skip = i->iov_offset;
	unsigned long k;

	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
		return size ? (unsigned long)(i->ubuf + skip) | size : 0;
	case LK_ITER_XARRAY: /* whole folios: the file position and the count (even 0) */
		return (unsigned long)((uint64_t)i->xarray_start + skip) | size;
	case LK_ITER_FOLIOQ:
		return (unsigned long)skip | size;
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		for (k = 0; k < i->nr_segs; k++, skip = 0) {
			size_t len = i->iov[k].iov_len - skip;

			if (len) {
				res |= (unsigned long)i->iov[k].iov_base + skip;
				if (len > size)
					len = size;
				res |= len;
				size -= len;
			}
			if (!size) /* the kernel's do { } while (size) */
				break;
		}
		return res;
	case LK_ITER_BVEC:
		for (k = 0; k < i->nr_segs; k++, skip = 0) {
			size_t len = i->bvec[k].bv_len - skip;

			res |= (unsigned long)i->bvec[k].bv_offset + skip;
			if (len > size)
				len = size;
			res |= len;
			size -= len;
			if (!size)
				break;
		}
		return res;
	case LK_ITER_DISCARD:
		break;
	}
	return 0;
}

/* ---- moving bytes ------------------------------------------------------------ */

/* A step (lk_step_f, iov_step.h) moves bytes and returns how many it could NOT move. */

/*
 * User memory imported from a UserMemory is checked here, at copy time, as
 * the kernel's copy_to_user()/copy_from_user() fault here and not at import:
 * each piece is looked up in the address space before it is touched (for
 * writing into a destination, for reading out of a source), and only the
 * prefix that is mapped with that access is moved; the rest is returned as
 * not moved, so the copy stops at the first byte that would fault.  hint
 * caches the mapping the last piece ended in (see lk_mm_accessible()).
 *
 * lk_user_piece() is the model's stand-in for the kernel's user copy of one
 * piece (clear_user(), copy_to_user(), ...): one out-of-line call per piece,
 * as those are in the kernel, so that the iterator's own code around it is
 * the kernel iterator's, and an instruction count can leave the stand-in out
 * by its name as it leaves out the real code's (labkit.kernelsrc.reconcile).
 */
__attribute__((noinline)) static size_t lk_user_piece(const struct lk_mm *mm, unsigned int need,
						      uintptr_t base, size_t progress, size_t len,
						      void *priv, lk_step_f step, size_t *hint)
{
	size_t ok = lk_mm_reach(mm, base, len, need, hint);
	size_t remain = len - ok;

	if (ok)
		remain += step((void *)base, progress, ok, priv);
	return remain;
}

static inline size_t user_step(const struct lk_iov_iter *i, uintptr_t base, size_t progress,
			       size_t len, void *priv, lk_step_f step, size_t *hint)
{
	if (!i->mm)
		return step((void *)base, progress, len, priv);
	return lk_user_piece(i->mm, i->data_source ? LK_PROT_READ : LK_PROT_WRITE, base, progress,
			     len, priv, step, hint);
}

LK_ALWAYS_INLINE size_t iterate_ubuf(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step)
{
	size_t hint = SIZE_MAX;
	size_t remain = user_step(i, i->ubuf + i->iov_offset, 0, len, priv, step, &hint);

	len -= remain;
	i->iov_offset += len;
	i->count -= len;
	return len;
}

LK_ALWAYS_INLINE size_t iterate_iovec(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step,
				      bool user)
{
	const struct lk_iovec *p = i->iov;
	unsigned long left = i->nr_segs; /* model only: the walk never passes the last segment */
	size_t progress = 0, skip = i->iov_offset, hint = SIZE_MAX;

	while (left) {
		size_t part = lk_min(len, p->iov_len - skip);

		if (likely(part)) {
			uintptr_t base = p->iov_base + skip;

			part -= user ? user_step(i, base, progress, part, priv, step, &hint)
				     : step((void *)base, progress, part, priv);
			progress += part;
			skip += part;
			len -= part;
			if (skip < p->iov_len)
				break;
		}
		p++;
		left--;
		skip = 0;
		if (!len)
			break;
	}
	i->nr_segs = left;
	i->iov = p;
	i->iov_offset = skip;
	i->count -= progress;
	return progress;
}

/* A bvec is moved a page at a time, as the kernel maps one page at a time. */
LK_ALWAYS_INLINE size_t iterate_bvec(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step)
{
	const struct lk_bvec *p = i->bvec, *end = p + i->nr_segs;
	size_t progress = 0, skip = i->iov_offset;

	while (len && p < end) {
		size_t offset = p->bv_offset + skip;
		size_t part = lk_min3(len, p->bv_len - skip, LK_PAGE_SIZE - offset % LK_PAGE_SIZE);
		size_t remain = step((void *)(p->bv_page + offset), progress, part, priv);
		size_t consumed = part - remain;

		len -= consumed;
		progress += consumed;
		skip += consumed;
		if (skip >= p->bv_len) {
			skip = 0;
			p++;
		}
		if (remain)
			break;
	}
	i->nr_segs -= p - i->bvec;
	i->bvec = p;
	i->iov_offset = skip;
	i->count -= progress;
	return progress;
}

LK_ALWAYS_INLINE size_t iterate_and_advance(struct lk_iov_iter *i, size_t len, void *priv,
					    lk_step_f step)
{
	if (unlikely(i->count < len))
		len = i->count;
	if (unlikely(!len))
		return 0;
	switch (lk_iter_kind(i)) {
	case LK_ITER_UBUF:
		return iterate_ubuf(i, len, priv, step);
	case LK_ITER_IOVEC:
		return iterate_iovec(i, len, priv, step, true);
	case LK_ITER_KVEC:
		return iterate_iovec(i, len, priv, step, false);
	case LK_ITER_BVEC:
		return iterate_bvec(i, len, priv, step);
	case LK_ITER_XARRAY:
		return lk_xarray_iterate(i, len, priv, step);
	case LK_ITER_FOLIOQ:
		return lk_folioq_iterate(i, len, priv, step);
	case LK_ITER_DISCARD:
		i->count -= len;
		return len;
	}
	return 0;
}

static size_t step_copy_to(void *base, size_t progress, size_t len, void *priv)
{
	memcpy(base, (const char *)priv + progress, len);
	return 0;
}

static size_t step_copy_from(void *base, size_t progress, size_t len, void *priv)
{
	memcpy((char *)priv + progress, base, len);
	return 0;
}

static size_t step_zero(void *base, size_t progress, size_t len, void *priv)
{
	(void)progress;
	(void)priv;
	memset(base, 0, len);
	return 0;
}

/**
 * lk_copy_to_iter - copy bytes into a destination iterator, as copy_to_iter()
 * @src: the bytes to copy
 * @bytes: how many
 * @i: a destination iterator
 *
 * Copy into a destination iterator; -EINVAL for a source (the kernel WARNs).
 *
 * Return: the bytes copied (short at the first unmapped user byte), or -EINVAL.
 */
ssize_t lk_copy_to_iter(const void *src, size_t bytes, struct lk_iov_iter *i)
{
	if (unlikely(i->data_source)) /* the kernel's WARN_ON_ONCE() */
		return -EINVAL;
	return (ssize_t)iterate_and_advance(i, bytes, (void *)src, step_copy_to);
}

/**
 * lk_copy_from_iter - copy bytes out of a source iterator, as copy_from_iter()
 * @dst: where the bytes go
 * @bytes: how many
 * @i: a source iterator
 *
 * Copy out of a source iterator; -EINVAL for a destination (the kernel WARNs).
 *
 * Return: the bytes copied (short at the first unmapped user byte), or -EINVAL.
 */
ssize_t lk_copy_from_iter(void *dst, size_t bytes, struct lk_iov_iter *i)
{
	if (unlikely(!i->data_source)) /* the kernel's WARN_ON_ONCE() */
		return -EINVAL;
	return (ssize_t)iterate_and_advance(i, bytes, dst, step_copy_from);
}

/**
 * lk_iov_iter_zero - zero-fill a destination iterator, as iov_iter_zero()
 * @bytes: how many bytes to zero
 * @i: a destination iterator
 *
 * Zero-fill a destination iterator.  The kernel's iov_iter_zero() does not
 * check the direction; every caller uses it on a destination, and the model
 * refuses a source so that zeroing never writes into data meant to be read.
 *
 * Return: the bytes zeroed, or -EINVAL for a source.
 */
ssize_t lk_iov_iter_zero(size_t bytes, struct lk_iov_iter *i)
{
	if (i->data_source)
		return -EINVAL;
	return (ssize_t)iterate_and_advance(i, bytes, NULL, step_zero);
}

/**
 * lk_iter_seg_index - the index of the current segment
 * @i: the iterator
 *
 * Index of the current segment in the array the iterator was built on (model only).
 *
 * Return: the index (0 for types with no segment array).
 */
unsigned long lk_iter_seg_index(const struct lk_iov_iter *i)
{
	switch (lk_iter_kind(i)) {
	case LK_ITER_BVEC:
		return (unsigned long)(i->bvec - (const struct lk_bvec *)i->seg_first);
	case LK_ITER_IOVEC:
	case LK_ITER_KVEC:
		return (unsigned long)(i->iov - (const struct lk_iovec *)i->seg_first);
	case LK_ITER_FOLIOQ: /* slots from the first one: the folio the position is in */
		return lk_folioq_seg_index(i);
	case LK_ITER_UBUF:
	case LK_ITER_XARRAY: /* one range: the position is all in iov_offset */
	case LK_ITER_DISCARD:
		break;
	}
	return 0;
}
