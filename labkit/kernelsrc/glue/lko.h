/* SPDX-License-Identifier: MIT */
/*
 * labkit's kernel-source oracle: the flat interface between the kernel's own
 * lib/iov_iter.c (compiled by the tree's kbuild, ARCH=um) and user space.
 *
 * lko_shim.c is compiled inside the kernel tree (it sees struct iov_iter);
 * lko_runtime.c is ordinary user-space C and stands in for what the kernel
 * object needs from the rest of a kernel (user copies, kmalloc, printk, WARN).
 * Only fixed-width types cross this interface, so Python (cffi, ABI mode) and
 * the callgrind driver need no kernel header.  Both sides include this file:
 * inside the kernel tree <linux/types.h> defines the same fixed-width names.
 */
#ifndef LKO_H
#define LKO_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdint.h>
#endif

struct lko_seg {		/* an iovec or kvec: same layout as struct iovec */
	uint64_t base;
	uint64_t len;
};

struct lko_bseg {		/* a bio_vec, by the address of its page */
	uint64_t page_addr;	/* page-aligned host address */
	uint32_t len;
	uint32_t offset;
};

enum lko_type { LKO_UBUF = 0, LKO_IOVEC = 1, LKO_KVEC = 2, LKO_BVEC = 3, LKO_DISCARD = 4,
		LKO_OTHER = 9 };

struct lko_state {
	int64_t valid;		/* 0 until a constructor or an import succeeded */
	int64_t type;		/* enum lko_type */
	int64_t data_source;	/* 1 for ITER_SOURCE */
	uint64_t count;
	uint64_t iov_offset;
	uint64_t nr_segs;
	int64_t seg;		/* index of the current segment in the array (0 for UBUF) */
	int64_t heap;		/* import_iovec allocated the array */
	uint64_t ubuf;		/* UBUF: the buffer's address */
};

/* kernel side (lko_shim.c) */
void *lko_new(void);
void lko_free(void *h);
int64_t lko_import_iovec(void *h, int dir, const struct lko_seg *uvec, uint64_t nr_segs);
int64_t lko_import_single_range(void *h, int dir, uint64_t addr, uint64_t len);
int64_t lko_import_ubuf(void *h, int dir, uint64_t addr, uint64_t len);
int64_t lko_kvec(void *h, int dir, const struct lko_seg *segs, uint64_t nr, uint64_t count);
int64_t lko_bvec(void *h, int dir, const struct lko_bseg *segs, uint64_t nr, uint64_t count);
void lko_advance(void *h, uint64_t n);
void lko_save(void *h);		/* keep the iterator as it is */
void lko_restore(void *h);	/* back to the kept iterator */
void lko_revert(void *h, uint64_t n);
uint64_t lko_zero(void *h, uint64_t n);
uint64_t lko_copy_to(void *h, const void *src, uint64_t n);
uint64_t lko_copy_from(void *h, void *dst, uint64_t n);
void lko_state(void *h, struct lko_state *out);
int64_t lko_version(void);	/* LINUX_VERSION_CODE of the tree */
int64_t lko_has(int what);	/* 1: import_single_range, 2: import_ubuf */

/* user side (lko_runtime.c) */
typedef uint64_t (*lkr_access_fn)(const void *ctx, uint64_t addr, uint64_t len, unsigned int need,
				  uint64_t *hint);
void lkr_set_access(lkr_access_fn fn, const void *ctx, unsigned int need_read,
		    unsigned int need_write);
void lkr_allow(const void *addr, uint64_t len);
void *lkr_alloc(uint64_t size);
void lkr_free(const void *p);
int64_t lkr_warnings(void);
int64_t lkr_user_accesses(void);

#endif
