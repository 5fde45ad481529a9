/*
 * iov_iter.h - labkit's model of the kernel's struct iov_iter.
 *
 * The state and the operations follow today's kernel (lib/iov_iter.c,
 * include/linux/uio.h, include/linux/iov_iter.h); the code is labkit's own.
 * A few fields marked "model only" are not in the kernel: they let every
 * operation check its bounds so that misuse is an error, never a stray write.
 */
#ifndef LK_IOV_ITER_H
#define LK_IOV_ITER_H

#include <string.h>
#include <sys/types.h>

#include "lk_common.h"
#include "usermem.h"

enum lk_iter_type {
	LK_ITER_UBUF = 0,
	LK_ITER_IOVEC = 1,
	LK_ITER_KVEC = 2,
	LK_ITER_BVEC = 3,
	LK_ITER_DISCARD = 4,
	LK_ITER_XARRAY = 5,
	LK_ITER_FOLIOQ = 6,
};

struct lk_xarray; /* iov_xarray.h */
struct lk_folioq; /* iov_folioq.h */

/* struct iovec and struct kvec share this layout, as in the kernel. */
struct lk_iovec {
	uintptr_t iov_base;
	size_t iov_len;
};

/* struct bio_vec: bv_page is the address of the (first) page of a folio. */
struct lk_bvec {
	uintptr_t bv_page;
	unsigned int bv_len;
	unsigned int bv_offset;
};

struct lk_iov_iter {
	uint8_t iter_type;
	bool data_source; /* LK_ITER_SOURCE: a write drains it */
	bool user_backed;
	uint8_t first_slot; /* model only: FOLIOQ's first slot, in seg_first */
	size_t iov_offset;
	union {
		const struct lk_iovec *iov; /* IOVEC and KVEC */
		const struct lk_bvec *bvec;
		uintptr_t ubuf;
		const struct lk_folioq *folioq; /* FOLIOQ: the current queue segment */
		const struct lk_xarray *xarray;
	};
	size_t count;
	union { /* as in the kernel: XARRAY and FOLIOQ have no array */
		unsigned long nr_segs;
		unsigned int folioq_slot; /* FOLIOQ: slot in the current segment */
		int64_t xarray_start;	  /* XARRAY: file position of the first byte (loff_t) */
	};

	/* model only */
	const void *seg_first; /* first segment (FOLIOQ: queue segment), to bound revert */
	union {
		size_t ubuf_len;    /* UBUF: the buffer's length, to bound reexpand */
		size_t xarray_len;  /* XARRAY: the count given at construction, likewise */
		size_t folioq_done; /* FOLIOQ: bytes moved past the first byte, to bound revert */
	};
	const struct lk_mm *mm; /* user-backed import: check at copy time */
	unsigned long visited;	/* segments examined by the last advance/revert/seek */
};

/* The type as the enum, for switches: -Wswitch then names any type left out. */
static inline enum lk_iter_type lk_iter_kind(const struct lk_iov_iter *i)
{
	return (enum lk_iter_type)i->iter_type;
}

/*
 * What every constructor shares (model helpers, used by iov_iter.c,
 * iov_xarray.c and iov_folioq.c).  A constructor first checks the direction
 * (the kernel WARNs or BUGs on any other) with its other arguments, so that a
 * refused one leaves i untouched; then lk_iter_start() zeroes the state and
 * sets type, direction, count and nr_segs, and the constructor its own fields.
 */
static inline bool lk_iter_dir_ok(int direction)
{
	return direction == LK_ITER_DEST || direction == LK_ITER_SOURCE;
}

static inline void lk_iter_start(struct lk_iov_iter *i, int direction, enum lk_iter_type type,
				 size_t count, unsigned long nr_segs)
{
	memset(i, 0, sizeof(*i));
	i->iter_type = type;
	i->data_source = direction;
	i->count = count;
	i->nr_segs = nr_segs;
}

int lk_iter_ubuf(struct lk_iov_iter *i, int direction, uintptr_t buf, size_t count);
int lk_iter_init(struct lk_iov_iter *i, int direction, const struct lk_iovec *iov,
		 unsigned long nr_segs, size_t count);
int lk_iter_kvec(struct lk_iov_iter *i, int direction, const struct lk_iovec *kvec,
		 unsigned long nr_segs, size_t count);
int lk_iter_bvec(struct lk_iov_iter *i, int direction, const struct lk_bvec *bvec,
		 unsigned long nr_segs, size_t count);
int lk_iter_discard(struct lk_iov_iter *i, int direction, size_t count);

void lk_iter_advance(struct lk_iov_iter *i, size_t size);
int lk_iter_revert(struct lk_iov_iter *i, size_t unroll);
void lk_iter_truncate(struct lk_iov_iter *i, size_t count);
int lk_iter_reexpand(struct lk_iov_iter *i, size_t count);
size_t lk_iter_capacity(const struct lk_iov_iter *i);
size_t lk_iter_single_seg_count(const struct lk_iov_iter *i);
int lk_iter_current(const struct lk_iov_iter *i, uintptr_t *addr, size_t *len);
int lk_iter_npages(const struct lk_iov_iter *i, int maxpages);
unsigned long lk_iter_alignment(const struct lk_iov_iter *i);
unsigned long lk_iter_seg_index(const struct lk_iov_iter *i);

ssize_t lk_copy_to_iter(const void *src, size_t bytes, struct lk_iov_iter *i);
ssize_t lk_copy_from_iter(void *dst, size_t bytes, struct lk_iov_iter *i);
ssize_t lk_iov_iter_zero(size_t bytes, struct lk_iov_iter *i);

/* Imports from the modelled user space; era is 63 (Linux 6.3) or 64 (6.4+). */
ssize_t lk_import_iovec(int direction, const struct lk_iovec *uvec, unsigned long nr_segs,
			unsigned int fast_segs, struct lk_iovec *fast_iov, struct lk_iovec **iovp,
			struct lk_iov_iter *i, const struct lk_mm *mm, int era);
int lk_import_ubuf(int direction, uintptr_t buf, size_t len, struct lk_iov_iter *i,
		   const struct lk_mm *mm);
int lk_import_single_range(int direction, uintptr_t buf, size_t len, struct lk_iovec *iov,
			   struct lk_iov_iter *i, const struct lk_mm *mm, int era);

#endif
