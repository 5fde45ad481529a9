/*
 * fixed_buf.c - registered ("fixed") buffers and the four io_import_fixed seeks.
 *
 * Registration follows io_uring's io_sqe_buffer_register() (io_uring/rsrc.c;
 * fs/io_uring.c in 2019): validate the iovec, pin the pages, describe them by
 * a bvec table (coalesced into folios when the memory is made of large
 * folios).  The model's "pages" are the real pages of a UserMemory mapping:
 * bv_page is the address of the page (folio) and bv_offset the offset in it.
 *
 * The seeks (what io_import_fixed() does to reach byte `offset` of the buffer):
 *
 *   walk-2019   iov_iter_bvec() over the whole table, then the iov_iter_advance()
 *               of 2019: for_each_bvec() over a struct bvec_iter, deriving the
 *               single-page piece at the cursor each step and advancing the
 *               cursor by it with bvec_iter_advance() (min of three, wrap at
 *               the bvec end).  One step per page skipped: the cost Hrvoje Zeba
 *               reported (1,039,879 ns at the tail of the buffer).
 *   walk        today's iov_iter_advance() for BVEC: one step per bvec skipped.
 *   shift-2019  commit bd11b3a391e3 "io_uring: don't use iov_iter_advance() for
 *               fixed buffers" (July 2019) with its count repaired by "io_uring:
 *               fix manual setup of iov_iter for fixed buffers" (Aleix Roca
 *               Nonell, Aug 2019): inside the first bvec, advance; otherwise
 *               skip 1 + ((offset - first_len) >> shift) bvecs.
 *   shift       today's: `offset >= first_len` to skip (the `<` boundary of
 *               d6fef34ee4d1 "io_uring: fix off-by-one bvec index", Keith Busch,
 *               Nov 2023), the folio shift of the 2024 multi-hugepage
 *               coalescing, and the exact segment count of 2025 ("send exact
 *               nr_segs for fixed buffer", with the bv_offset term found in
 *               review by Nitesh Shetty).
 *
 * Safety: every seek computes a segment index that is checked against the
 * table; nr_segs never reaches past the table; with a bug switched on, count
 * is clamped to what the segments hold.  A copy is bounded by nr_segs and
 * count, so no seek, buggy or not, can move bytes outside the registered
 * memory.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fixed_buf.h"
#include "lk_timed_loop.h"

/* ---- registration --------------------------------------------------------- */

/**
 * lk_fixed_register - register a buffer for io_uring's fixed reads
 * @mm: the modelled address space (the UserMemory's table)
 * @addr: the user address of the buffer
 * @len: its length
 * @folio_shift: 12 for pages, more for large folios
 * @out: receives the new buffer
 *
 * As io_buffer_validate() + io_sqe_buffer_register(): an empty buffer or one
 * above 1 GiB is EFAULT, a wrapping one EOVERFLOW, an unmapped or read-only
 * range EFAULT (pinning the pages, FOLL_WRITE, fails).  folio_shift > 12 stands for memory made of
 * large folios: every folio the buffer touches must be mapped (EINVAL if not,
 * the model's stand-in for "these pages are not part of one folio").
 *
 * Return: 0, or -EFAULT, -EOVERFLOW, -EINVAL or -ENOMEM.
 */
int lk_fixed_register(const struct lk_mm *mm, uintptr_t addr, size_t len, unsigned int folio_shift,
		      struct lk_fixed_buf **out)
{
	struct lk_fixed_buf *b;
	size_t fsize, fmask, off, size, k, nr;
	uintptr_t page;

	*out = NULL;
	if (!addr || !len)
		return -EFAULT;
	if (len > LK_FIXED_MAX_LEN)
		return -EFAULT;
	if (addr + len + (LK_PAGE_SIZE - 1) < addr)
		return -EOVERFLOW;
	if (folio_shift < LK_FIXED_MIN_FOLIO_SHIFT || folio_shift > LK_FIXED_MAX_FOLIO_SHIFT)
		return -EINVAL;
	if (!lk_mm_mapped(mm, addr, len, LK_PROT_WRITE))
		return -EFAULT;
	fsize = (size_t)1 << folio_shift;
	fmask = fsize - 1;
	if (folio_shift > LK_PAGE_SHIFT) {
		uintptr_t start = addr & ~(uintptr_t)fmask;
		uintptr_t end = (addr + len + fmask) & ~(uintptr_t)fmask;

		if (end < start || !lk_mm_mapped(mm, start, end - start, LK_PROT_READ))
			return -EINVAL;
	}
	off = addr & fmask;
	nr = (off + len + fmask) >> folio_shift;

	b = malloc(sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->bvec = malloc(nr * sizeof(*b->bvec));
	if (!b->bvec) {
		free(b);
		return -ENOMEM;
	}
	page = addr & ~(uintptr_t)fmask;
	size = len;
	for (k = 0; k < nr; k++) {
		size_t vec_len = lk_min(size, fsize - off);

		b->bvec[k].bv_page = page;
		b->bvec[k].bv_len = (unsigned int)vec_len;
		b->bvec[k].bv_offset = (unsigned int)off;
		page += fsize;
		off = 0;
		size -= vec_len;
	}
	b->ubuf = addr;
	b->len = len;
	b->nr_bvecs = nr;
	b->folio_shift = folio_shift;
	*out = b;
	return 0;
}

/**
 * lk_fixed_unregister - free a buffer made by lk_fixed_register()
 * @b: the buffer (NULL is allowed)
 */
void lk_fixed_unregister(struct lk_fixed_buf *b)
{
	if (!b)
		return;
	free(b->bvec);
	free(b);
}

/* ---- the 2019 advance -------------------------------------------------------- */

/*
 * iov_iter_advance() for BVEC as in Linux 5.2 (iterate_and_advance ->
 * iterate_bvec -> for_each_bvec): a struct bvec_iter cursor (bytes left,
 * index, bytes done in this bvec) walked one single-page piece at a time.
 * Returns the steps taken (pieces examined).
 */
static inline unsigned long walk2019_advance(struct lk_iov_iter *i, size_t size)
{
	const struct lk_bvec *bv = i->bvec;
	unsigned int bi_size, bi_idx = 0, bi_done;
	unsigned long steps = 0;

	if (i->count < size)
		size = i->count;
	if (!size)
		return 0;
	bi_size = (unsigned int)size;
	bi_done = (unsigned int)i->iov_offset;
	while (bi_size) {
		const struct lk_bvec *cur;
		size_t mp_off, mp_len;
		unsigned int piece_off, piece_len, bytes;

		if (bi_idx >= i->nr_segs) /* model only: never past the table */
			break;
		/* bvec_iter_bvec(): the single-page piece under the cursor */
		cur = &bv[bi_idx];
		mp_off = cur->bv_offset + (size_t)bi_done;
		mp_len = lk_min(bi_size, cur->bv_len - bi_done);
		piece_off = (unsigned int)(mp_off & ~LK_PAGE_MASK);
		piece_len = (unsigned int)lk_min(mp_len, LK_PAGE_SIZE - piece_off);
		steps++;
		if (!piece_len) /* the kernel would spin here; no table has one */
			break;
		/* bvec_iter_advance(bv, &iter, piece_len) */
		bytes = piece_len;
		while (bytes) {
			unsigned int len;

			cur = &bv[bi_idx];
			len = (unsigned int)lk_min3(bytes, bi_size, cur->bv_len - bi_done);
			bytes -= len;
			bi_size -= len;
			bi_done += len;
			if (bi_done == cur->bv_len) {
				bi_done = 0;
				bi_idx++;
				if (bi_idx >= i->nr_segs)
					break;
			}
		}
	}
	i->bvec += bi_idx;
	i->nr_segs -= bi_idx;
	i->iov_offset = bi_done;
	i->count -= size;
	return steps;
}

/* ---- io_import_fixed ----------------------------------------------------------- */

/* validate_fixed_range(): overflow, outside the buffer, or above MAX_RW_COUNT. */
static inline int fixed_range_ok(const struct lk_fixed_buf *b, uint64_t buf_addr, size_t len)
{
	uint64_t end = buf_addr + len;

	if (end < buf_addr)
		return 0;
	if (buf_addr < b->ubuf || end > (uint64_t)b->ubuf + b->len)
		return 0;
	return len <= LK_MAX_RW_COUNT;
}

static inline int fixed_seek(int direction, const struct lk_fixed_buf *b, size_t offset, size_t len,
			     int seek, unsigned int bugs, struct lk_iov_iter *i)
{
	const struct lk_bvec *first = b->bvec;
	unsigned int shift = b->folio_shift;
	size_t fmask = ((size_t)1 << shift) - 1;
	size_t idx, seg_skip, nr_segs;
	int ret;

	switch (seek) {
	case LK_SEEK_WALK_2019:
		ret = lk_iter_bvec(i, direction, first, b->nr_bvecs, offset + len);
		if (ret)
			return ret;
		i->visited = offset ? walk2019_advance(i, offset) : 0;
		return 0;

	case LK_SEEK_WALK:
		ret = lk_iter_bvec(i, direction, first, b->nr_bvecs, offset + len);
		if (ret)
			return ret;
		if (offset)
			lk_iter_advance(i, offset);
		return 0;

	case LK_SEEK_SHIFT_2019:
		ret = lk_iter_bvec(i, direction, first, b->nr_bvecs, offset + len);
		if (ret || !offset)
			return ret;
		if (offset <= first->bv_len) {
			/* iov_iter_advance() inside the first bvec: at most two looked at */
			lk_iter_advance(i, offset);
			return 0;
		}
		offset -= first->bv_len;
		seg_skip = 1 + (offset >> shift);
		if (seg_skip > b->nr_bvecs)
			return -EFAULT;
		i->bvec = first + seg_skip;
		i->nr_segs -= seg_skip;
		if (bugs & LK_FIXED_BUG_COUNT_2019) {
			/* bd11b3a391e3 as first merged: the first bvec counted as a full page */
			i->count -= seg_skip << shift;
			i->iov_offset = offset & fmask;
			if (i->iov_offset)
				i->count -= i->iov_offset;
		} else {
			i->count -= first->bv_len + offset;
			i->iov_offset = offset & fmask;
		}
		i->visited = 1;
		return 0;

	case LK_SEEK_SHIFT:
		idx = 0;
		if ((bugs & LK_FIXED_BUG_OFF_BY_ONE_2023) ? offset > first->bv_len
							  : offset >= first->bv_len) {
			offset -= first->bv_len;
			idx = 1 + (offset >> shift);
			offset &= fmask;
		}
		if (idx > b->nr_bvecs)
			return -EFAULT;
		if (idx == b->nr_bvecs) {
			/* only a zero-length read at the very end: the kernel would read
			 * bv_offset one past the table; the model does not */
			nr_segs = 0;
		} else {
			nr_segs = (offset + len + b->bvec[idx].bv_offset + fmask) >> shift;
			if (nr_segs > b->nr_bvecs - idx) /* model only */
				nr_segs = b->nr_bvecs - idx;
		}
		ret = lk_iter_bvec(i, direction, b->bvec + idx, nr_segs, len);
		if (ret)
			return ret;
		i->seg_first = first;
		i->iov_offset = offset;
		i->visited = 1;
		return 0;
	}
	return -EINVAL;
}

/**
 * lk_import_fixed - point an iterator at part of a registered buffer, as
 * io_import_fixed()
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @b: the registered buffer
 * @buf_addr: the user address of the first byte to read into
 * @len: bytes
 * @seek: how to seek there: LK_SEEK_WALK_2019, _WALK, _SHIFT_2019 or _SHIFT
 * @bugs: LK_FIXED_BUG_* switches of historical bugs (0: none)
 * @i: the iterator to set up
 *
 * Return: 0, or -EFAULT for a range outside the buffer, -EINVAL for a bad direction or
 * seek.
 */
int lk_import_fixed(int direction, const struct lk_fixed_buf *b, uint64_t buf_addr, size_t len,
		    int seek, unsigned int bugs, struct lk_iov_iter *i)
{
	int ret;

	if (!fixed_range_ok(b, buf_addr, len))
		return -EFAULT;
	ret = fixed_seek(direction, b, (size_t)(buf_addr - b->ubuf), len, seek, bugs, i);
	if (ret)
		return ret;
	if (bugs) {
		/* a buggy count may exceed (or wrap past) what the segments hold */
		size_t cap = lk_iter_capacity(i);

		if (i->count > cap)
			i->count = cap;
	}
	return 0;
}

/* ---- timing kernels ------------------------------------------------------------ */

/* Both kernels: -EINVAL for iters 0 or an unknown seek, -EFAULT for a range outside the buffer. */
static int fixed_time_args_ok(const struct lk_fixed_buf *b, size_t offset, size_t len,
			      uint64_t iters)
{
	if (!iters)
		return -EINVAL;
	if (offset > b->len || !fixed_range_ok(b, (uint64_t)b->ubuf + offset, len))
		return -EFAULT;
	return 0;
}

/*
 * The two kernels' one loop: import (seek), then, with a source, copy len bytes
 * from it into the buffer.  `src == NULL` is a constant at one call site, so
 * the copy folds away there.
 */
LK_ALWAYS_INLINE double time_fixed(const struct lk_fixed_buf *b, size_t offset, size_t len,
				   int seek, const void *src, uint64_t iters)
{
	struct lk_iov_iter it;
	uint64_t k;
	double ns;
	int ret = fixed_time_args_ok(b, offset, len, iters);

	if (ret)
		return ret;
	LK_TIMED_LOOP(ns, lk_clock_ns, iters, k,
		      ret = fixed_seek(LK_ITER_DEST, b, offset, len, seek, 0, &it);
		      if (ret) return ret;
		      if (src && lk_copy_to_iter(src, len, &it) != (ssize_t)len) return -EFAULT;
		      LK_KEEP(&it););
	return ns;
}

/**
 * lk_time_fixed_seek - time io_import_fixed() at one offset
 * @b: the registered buffer
 * @offset: byte offset in the buffer
 * @len: bytes of the read
 * @seek: the LK_SEEK_* way to seek
 * @iters: imports in the batch
 *
 * ns per io_import_fixed() (range check + seek) at byte offset of the buffer.
 *
 * Return: nanoseconds per import, or -EINVAL, -EFAULT or -ETIMEDOUT.
 */
double lk_time_fixed_seek(const struct lk_fixed_buf *b, size_t offset, size_t len, int seek,
			  uint64_t iters)
{
	return time_fixed(b, offset, len, seek, NULL, iters);
}

/**
 * lk_time_fixed_submit - time a modelled fixed-buffer submission
 * @b: the registered buffer
 * @offset: byte offset in the buffer
 * @len: bytes copied per submission
 * @seek: the LK_SEEK_* way to seek
 * @src: @len bytes to copy
 * @iters: submissions in the batch
 *
 * ns per modelled submission: import (seek) + copy of len bytes from src into the buffer.
 *
 * Return: nanoseconds per submission, or -EINVAL, -EFAULT or -ETIMEDOUT.
 */
double lk_time_fixed_submit(const struct lk_fixed_buf *b, size_t offset, size_t len, int seek,
			    const void *src, uint64_t iters)
{
	if (src == NULL)
		return -EINVAL;
	return time_fixed(b, offset, len, seek, src, iters);
}
