/*
 * fixed_buf.h - registered ("fixed") buffers and io_import_fixed(), four ways.
 *
 * A registered buffer is described, as io_uring's io_mapped_ubuf, by a table
 * of bvecs over the real memory of the modelled address space: the first bvec
 * starts at the buffer's offset inside its page (or folio of 2^folio_shift
 * bytes) and runs to the page (folio) end or the buffer end, the others are
 * whole pages (folios), the last may be short.
 *
 * lk_import_fixed() builds a BVEC iterator over len bytes at a user address
 * inside the buffer, seeking to that address in one of four ways (see
 * fixed_buf.c, and the history in labkit/core/fixed.py's docstring).  The
 * kernel code these follow is GPL; this is labkit's own code.
 *
 * The timing kernels return ns per operation, or -errno: -EINVAL for
 * iters 0 or an unknown seek, -EFAULT for a range outside the buffer,
 * -ETIMEDOUT when the batch runs past the time budget (lk_clock.h).
 */
#ifndef LK_FIXED_BUF_H
#define LK_FIXED_BUF_H

#include "lk_common.h"
#include "iov_iter.h"
#include "usermem.h"

/* io_uring's arbitrary cap on one registered buffer (SZ_1G). */
#define LK_FIXED_MAX_LEN ((size_t)1 << 30)
#define LK_FIXED_MIN_FOLIO_SHIFT 12
#define LK_FIXED_MAX_FOLIO_SHIFT 30

enum lk_fixed_seek {
	LK_SEEK_WALK_2019 = 0,	/* iov_iter_advance() of 2019: a bvec_iter walk, page by page */
	LK_SEEK_WALK = 1,	/* today's iov_iter_advance(): a loop over whole bvecs */
	LK_SEEK_SHIFT_2019 = 2, /* the fix as merged in 2019 (bd11b3a391e3 + 5.3 count fix) */
	LK_SEEK_SHIFT = 3,	/* today's io_import_fixed(): folio shift, exact nr_segs */
};

/* Historical bugs, switchable for teaching (bit flags). */
#define LK_FIXED_BUG_COUNT_2019 1      /* shift-2019: count assumed a full first page */
#define LK_FIXED_BUG_OFF_BY_ONE_2023 2 /* shift: offset <= first_len keeps an empty bvec */

struct lk_fixed_buf {
	uintptr_t ubuf; /* user address of the first byte */
	size_t len;
	unsigned long nr_bvecs;
	unsigned int folio_shift;
	struct lk_bvec *bvec; /* nr_bvecs entries, owned */
};

int lk_fixed_register(const struct lk_mm *mm, uintptr_t addr, size_t len, unsigned int folio_shift,
		      struct lk_fixed_buf **out);
void lk_fixed_unregister(struct lk_fixed_buf *buf);

int lk_import_fixed(int direction, const struct lk_fixed_buf *buf, uint64_t buf_addr, size_t len,
		    int seek, unsigned int bugs, struct lk_iov_iter *i);

double lk_time_fixed_seek(const struct lk_fixed_buf *buf, size_t offset, size_t len, int seek,
			  uint64_t iters);
double lk_time_fixed_submit(const struct lk_fixed_buf *buf, size_t offset, size_t len, int seek,
			    const void *src, uint64_t iters);

#endif
