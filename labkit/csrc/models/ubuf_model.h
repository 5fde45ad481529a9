/*
 * ubuf_model.h - model experiments for the 2023 single-segment ITER_UBUF work
 * (R2: generic import_iovec, merged for 6.4; R3: io_uring READV -> READ).
 *
 * Two kinds of entry point, over the same per-call code:
 *   lk_time_ubuf_*()  timing kernels: the loop and its clock in C, returning
 *                     nanoseconds per call for one batch (negative errno on
 *                     a bad argument);
 *   lk_ubuf_*_work()  the same calls, counted instead of timed: iterator types
 *                     built, segment-table steps, iovec bytes copied,
 *                     allocations.  Deterministic, for tests and notebooks.
 * Both are bounded by the time budget (lk_clock.h): past it, -ETIMEDOUT.
 *
 * Every user address (the data buffer and the user's iovec array) lives in a
 * struct lk_mm and is access-checked before it is touched.
 *
 * What a modelled call imports is a read variant of read_variants.h (the
 * table the live loops use): one whose layout is LK_IOV_BUF imports the
 * buffer (import_ubuf), any other imports the user's iovec array
 * (import_iovec) in the given era.  The syscall model takes any variant with
 * a system call; the io_uring model a READ or a READV, where `rewrite`
 * applies R3's patch (a one-segment READV becomes a READ).
 */
#ifndef LK_UBUF_MODEL_H
#define LK_UBUF_MODEL_H

#include "lk_common.h"
#include "usermem.h"
#include "iov_iter.h"
#include "read_variants.h"

/* What the call then does with the iterator. */
#define LK_UBUF_OP_ADVANCE 0 /* iov_iter_advance over the whole count: mechanics only */
#define LK_UBUF_OP_COPY 1    /* copy_to_iter from a kernel buffer */
#define LK_UBUF_OP_ZERO 2    /* iov_iter_zero a page at a time, as /dev/zero's read_iter */

#define LK_UBUF_MAX_SEGS LK_UIO_MAXIOV

struct lk_ubuf_args {
	const struct lk_mm *mm;
	int variant;   /* LK_RV_*: what the call imports (see above) */
	int era;       /* 63 or 64: the import_iovec era (iovec layouts) */
	int op;	       /* LK_UBUF_OP_* */
	int rewrite;   /* io_uring: R3's READV -> READ rewrite (on READV) */
	uintptr_t buf; /* read / READ: the user buffer */
	size_t len;
	uintptr_t uvec; /* iovec layouts: user address of the iovec array */
	unsigned long nr_segs;
	const void *src;      /* OP_COPY: kernel source buffer ... */
	size_t src_len;	      /* ... and its length (copies at most this) */
	uint64_t defer_every; /* io_uring: every k-th request is deferred (0: none) */
	int defer_alloc_ubuf; /* io_uring: a deferred UBUF request also allocates
					   and copies the iterator (6.3's -EAGAIN path) */
};

/* Work done, summed over calls; every field is counted from what the calls did. */
struct lk_ubuf_work {
	uint64_t calls;
	uint64_t ubuf_iters;	    /* calls whose data moved through an ITER_UBUF */
	uint64_t iovec_iters;	    /* ... through an ITER_IOVEC */
	uint64_t seg_steps;	    /* segment-table entries stepped over while moving data */
	uint64_t uvec_bytes_read;   /* bytes of the user's iovec array read (copy_from_user) */
	uint64_t iovec_table_bytes; /* bytes of iovec copied into tables the iterator walks */
	uint64_t iter_bytes_copied; /* bytes of iterator state saved for a deferred request */
	uint64_t imports;	    /* import_* calls (a deferred READ imports again) */
	uint64_t allocs;
	uint64_t frees;
	uint64_t deferred;
	uint64_t rewritten; /* READV requests turned into READ (R3) */
	uint64_t bytes_moved;
};

/* The modelled io_uring async state (io_async_rw): saved iovecs and iterator. */
struct lk_async_rw {
	struct lk_iovec fast_iov[LK_UIO_FASTIOV];
	struct lk_iov_iter iter;
	struct lk_iovec *free_iovec;
	size_t bytes_done;
};

double lk_time_ubuf_syscall(const struct lk_ubuf_args *a, uint64_t iters);
int lk_ubuf_syscall_work(const struct lk_ubuf_args *a, uint64_t calls, struct lk_ubuf_work *w);
double lk_time_ubuf_uring(const struct lk_ubuf_args *a, uint64_t iters);
int lk_ubuf_uring_work(const struct lk_ubuf_args *a, uint64_t calls, struct lk_ubuf_work *w);
size_t lk_ubuf_async_size(void);
size_t lk_ubuf_iter_size(void);

#endif
