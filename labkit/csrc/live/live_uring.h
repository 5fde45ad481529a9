/*
 * live_uring.h - io_uring on the running kernel through raw system calls.
 *
 * No liburing: lk_ring_open() calls io_uring_setup(2), maps the SQ and CQ
 * rings and the SQE array, and every submission and wait is one
 * io_uring_enter(2).  A ring owns two memory areas:
 *   - a scratch buffer (page-aligned, `scratch_len` bytes) that READ and
 *     READV operations read into; every (offset, length) is checked against it;
 *   - optionally one registered ("fixed") buffer of up to 1 GiB
 *     (lk_ring_register_buffer) that READ_FIXED reads into.  READ_FIXED
 *     addresses are checked by the kernel against its registered table, so
 *     an out-of-range READ_FIXED is the kernel's -EFAULT, and a fixed read
 *     can only ever write the registered pages.
 *
 * Every wait is bounded by the ring's timeout (IORING_ENTER_EXT_ARG with a
 * timespec, or polling the CQ against a deadline on kernels without it):
 * a request that does not complete in time gives -ETIME, never a hang.
 * A ring whose earlier batch failed is drained before the next operation;
 * if requests are still in flight after the timeout, operations give -EBUSY.
 *
 * All functions return 0 / a count / a time on success and -errno on
 * failure, like the kernel.  A NULL ring is -EBADF.  The timed loops also
 * stop with -ETIMEDOUT when a batch runs past the time budget (lk_clock.h).
 */
#ifndef LK_LIVE_URING_H
#define LK_LIVE_URING_H

#include <stddef.h>
#include <stdint.h>

#include "read_variants.h"

/* Setup flags labkit accepts (values as in <linux/io_uring.h>). */
#define LK_SETUP_CLAMP (1U << 4)
#define LK_SETUP_SUBMIT_ALL (1U << 7)
#define LK_SETUP_COOP_TASKRUN (1U << 8)
#define LK_SETUP_SINGLE_ISSUER (1U << 12)
#define LK_SETUP_DEFER_TASKRUN (1U << 13)

struct lk_uop {
	int op;		  /* a read variant, LK_RV_*, whose `ring` is not LK_RING_NONE */
	int fd;		  /* file descriptor, or registered-file index if fixed_file */
	int fixed_file;	  /* nonzero: IOSQE_FIXED_FILE */
	uint32_t len;	  /* bytes to read (> 0) */
	uint64_t buf_off; /* offset in the scratch buffer (READ/READV) or registered buffer */
	int64_t off;	  /* file offset; -1 = the file's current position */
};

struct lk_ring_info {
	unsigned sq_entries;
	unsigned cq_entries;
	unsigned features;   /* IORING_FEAT_* */
	unsigned flags;	     /* setup flags */
	int ext_arg;	     /* waits bounded in the kernel (IORING_FEAT_EXT_ARG) */
	int registered_ring; /* ring fd registered (IORING_REGISTER_RING_FDS) */
	size_t scratch_len;
	size_t reg_len; /* registered buffer length, 0 if none */
	int reg_hugepages;
	unsigned nr_files; /* registered files */
	uint64_t inflight; /* requests submitted and not yet reaped */
};

struct lk_peak {
	double ns_per_io;     /* wall time per completed IO */
	double cpu_ns_per_io; /* process CPU time (all threads, io-wq included) per IO */
	double ios_per_enter; /* completed IOs per io_uring_enter call */
	uint64_t ios;
	uint64_t enters;
	uint64_t waits; /* extra enter calls made only to wait */
};

struct lk_uring_probe {
	int setup_errno; /* 0 if io_uring_setup worked, else its errno */
	unsigned features;
	int ext_arg;
	int op_read, op_readv,
		op_read_fixed; /* opcode supported (IORING_REGISTER_PROBE); -1 unknown */
	int have_header;       /* built with <linux/io_uring.h> */
};

struct lk_ring;

int lk_uring_probe(struct lk_uring_probe *out);

struct lk_ring *lk_ring_open(unsigned entries, unsigned flags, size_t scratch_len,
			     int64_t timeout_ns, int *err);
void lk_ring_close(struct lk_ring *r);
int lk_ring_get_info(const struct lk_ring *r, struct lk_ring_info *out);
int lk_ring_set_timeout(struct lk_ring *r, int64_t timeout_ns);

int lk_ring_register_buffer(struct lk_ring *r, size_t len, int hugepages);
int lk_ring_register_files(struct lk_ring *r, const int *fds, unsigned n);
int lk_ring_register_ring_fd(struct lk_ring *r);

/* which: 0 = scratch buffer, 1 = registered buffer. */
int lk_ring_fill(struct lk_ring *r, int which, int byte);
int lk_ring_copy_out(const struct lk_ring *r, int which, size_t off, void *dst, size_t n);

/* One operation at queue depth 1: the completion's res, or -errno / -ETIME. */
int64_t lk_ring_do(struct lk_ring *r, const struct lk_uop *op);
/* QD1 round trips: submit one, wait for it, reap it; ns per round trip (clock: lk_live_set_clock). */
double lk_time_uring_qd1(struct lk_ring *r, const struct lk_uop *op, uint64_t iters);
/* Batched peak loop (t/io_uring style): 0 and *out filled, or -errno. */
int lk_time_uring_peak(struct lk_ring *r, const struct lk_uop *op, unsigned depth,
		       unsigned submit_batch, unsigned complete_batch, uint64_t ios,
		       struct lk_peak *out);

#endif
