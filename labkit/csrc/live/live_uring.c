/*
 * live_uring.c - io_uring through raw system calls (see live_uring.h).
 *
 * The ring layout follows the io_uring ABI (include/uapi/linux/io_uring.h):
 * the kernel tells io_uring_setup's caller where the head, tail, mask and
 * arrays sit inside the SQ and CQ ring mappings; user space publishes new
 * SQEs by storing the SQ tail with release semantics and consumes CQEs by
 * loading the CQ tail with acquire semantics and storing the CQ head with
 * release semantics.  labkit's code; liburing is not used.
 */
#define _GNU_SOURCE
#include "live_uring.h"
#include "live_sys.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lk_common.h"
#include "lk_timed_loop.h"

#if defined(__has_include)
#if __has_include(<linux/io_uring.h>)
#include <linux/io_uring.h>
#define LK_HAVE_IO_URING_H 1
#endif
#endif

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif

#ifdef LK_HAVE_IO_URING_H

/* Constants newer than some installed headers (values are ABI). */
#ifndef IORING_FEAT_EXT_ARG
#define IORING_FEAT_EXT_ARG (1U << 8)
#endif
#ifndef IORING_ENTER_EXT_ARG
#define IORING_ENTER_EXT_ARG (1U << 3)
#endif
#ifndef IORING_ENTER_REGISTERED_RING
#define IORING_ENTER_REGISTERED_RING (1U << 4)
#endif
#define LK_REGISTER_PROBE 8
#define LK_REGISTER_RING_FDS 20
#define LK_UNREGISTER_RING_FDS 21
#define LK_OP_SUPPORTED (1U << 0)

/* Same layouts as io_uring_getevents_arg, io_uring_rsrc_update, io_uring_probe. */
struct lk_getevents_arg {
	uint64_t sigmask;
	uint32_t sigmask_sz;
	uint32_t pad;
	uint64_t ts;
};

struct lk_kts {
	int64_t tv_sec;
	long long tv_nsec;
};

struct lk_rsrc_update {
	uint32_t offset;
	uint32_t resv;
	uint64_t data;
};

struct lk_probe_op {
	uint8_t op;
	uint8_t resv;
	uint16_t flags;
	uint32_t resv2;
};

struct lk_probe_hdr {
	uint8_t last_op;
	uint8_t ops_len;
	uint16_t resv;
	uint32_t resv2[3];
	struct lk_probe_op ops[64];
};

#define LK_SETUP_ALLOWED                                                                           \
	(LK_SETUP_CLAMP | LK_SETUP_SUBMIT_ALL | LK_SETUP_COOP_TASKRUN | LK_SETUP_SINGLE_ISSUER |   \
	 LK_SETUP_DEFER_TASKRUN)
#define LK_MAX_ENTRIES 32768u
#define LK_MAX_SCRATCH ((size_t)1 << 30)
#define LK_MAX_REGBUF ((size_t)1 << 31) /* the kernel's own limit (1 GiB) is checked by it */

struct lk_ring {
	int fd;
	int enter_fd;	      /* fd, or the registered ring index */
	unsigned enter_flags; /* IORING_ENTER_REGISTERED_RING when registered */
	struct io_uring_params p;
	int ext_arg;
	int64_t timeout_ns;

	void *sq_map, *cq_map;
	size_t sq_map_len, cq_map_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;

	unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_cqe *cqes;

	unsigned sq_tail_local; /* next SQ tail we publish */
	unsigned unsubmitted;	/* published, not yet consumed by io_uring_enter */
	uint64_t inflight;	/* consumed by the kernel, completion not yet reaped */

	char *scratch;
	size_t scratch_len;
	char *reg;
	size_t reg_len;
	size_t reg_map_len;
	int reg_hugepages;
	unsigned nr_files;
	int registered_ring;

	struct iovec iov[LK_RV_MAX_SEGS]; /* READV segments (stable while requests are in flight) */
};

static long lk_sys_setup(unsigned entries, struct io_uring_params *p)
{
	return syscall(__NR_io_uring_setup, entries, p);
}

static long lk_sys_register(int fd, unsigned opcode, const void *arg, unsigned nr)
{
	return syscall(__NR_io_uring_register, fd, opcode, arg, nr);
}

static inline int lk_enter(struct lk_ring *r, unsigned to_submit, unsigned min_complete,
			   unsigned flags, const struct lk_getevents_arg *arg)
{
	long ret;

	flags |= r->enter_flags;
	if (arg)
		ret = syscall(__NR_io_uring_enter, r->enter_fd, to_submit, min_complete,
			      flags | IORING_ENTER_EXT_ARG, arg, sizeof(*arg));
	else
		ret = syscall(__NR_io_uring_enter, r->enter_fd, to_submit, min_complete, flags,
			      NULL, 0);
	return ret < 0 ? -errno : (int)ret;
}

static inline unsigned lk_cq_ready(const struct lk_ring *r)
{
	return __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE) - *r->cq_head;
}

/*
 * Reap every available completion.  A completion whose res is not `expect`
 * records the first error in *err (its res if negative, else -EIO for a
 * short read); expect < 0 accepts anything (draining).
 */
static inline unsigned lk_reap(struct lk_ring *r, int64_t expect, int *err)
{
	unsigned head = *r->cq_head;
	unsigned tail = __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE);
	unsigned mask = *r->cq_mask;
	unsigned n = tail - head;

	if (expect >= 0) {
		for (unsigned h = head; h != tail; h++) {
			int res = r->cqes[h & mask].res;

			if (res != expect && *err == 0)
				*err = res < 0 ? res : -EIO;
		}
	}
	if (n)
		__atomic_store_n(r->cq_head, tail, __ATOMIC_RELEASE);
	r->inflight -= n < r->inflight ? n : r->inflight;
	return n;
}

static void lk_timespec(int64_t ns, struct lk_kts *ts)
{
	if (ns < 0)
		ns = 0;
	ts->tv_sec = ns / 1000000000;
	ts->tv_nsec = ns % 1000000000;
}

/*
 * Wait until at least `want` completions are ready, within the ring's
 * timeout.  0, -ETIME on timeout, or another -errno from io_uring_enter.
 */
static int lk_wait_cqes(struct lk_ring *r, unsigned want, uint64_t *enters)
{
	uint64_t deadline = lk_clock_ns() + (uint64_t)r->timeout_ns;

	for (;;) {
		uint64_t now;

		if (lk_cq_ready(r) >= want)
			return 0;
		now = lk_clock_ns();
		if (now >= deadline)
			return -ETIME;
		if (r->ext_arg) {
			struct lk_kts ts;
			struct lk_getevents_arg arg = { 0 };
			int ret;

			lk_timespec((int64_t)(deadline - now), &ts);
			arg.ts = (uint64_t)(uintptr_t)&ts;
			ret = lk_enter(r, 0, want, IORING_ENTER_GETEVENTS, &arg);
			if (enters)
				(*enters)++;
			if (ret < 0 && ret != -ETIME && ret != -EINTR)
				return ret;
		} else {
			struct timespec nap = { 0, 20000 };

			nanosleep(&nap, NULL);
		}
	}
}

/* Submit what was published and not yet consumed (after an earlier failure). */
static int lk_flush(struct lk_ring *r)
{
	while (r->unsubmitted) {
		int ret = lk_enter(r, r->unsubmitted, 0, 0, NULL);

		if (ret < 0)
			return ret == -EINTR ? -EBUSY : ret;
		if (ret == 0)
			return -EBUSY;
		r->unsubmitted -= (unsigned)ret;
		r->inflight += (unsigned)ret;
	}
	return 0;
}

/* Bring the ring back to empty before an operation: -EBUSY if it cannot. */
static int lk_drain(struct lk_ring *r)
{
	int err = 0;

	if (r->unsubmitted == 0 && r->inflight == 0)
		return 0;
	if (lk_flush(r) < 0)
		return -EBUSY;
	while (r->inflight) {
		lk_reap(r, -1, &err);
		if (!r->inflight)
			break;
		if (lk_wait_cqes(r, 1, NULL) < 0)
			return -EBUSY;
	}
	return 0;
}

static int lk_check_uop(const struct lk_ring *r, const struct lk_uop *op)
{
	const struct lk_read_variant *v;
	struct lk_rv_seg seg[LK_RV_MAX_SEGS];

	if (op == NULL || op->len == 0 || op->off < -1 || op->len > LK_MAX_RW_COUNT)
		return -EINVAL;
	v = lk_read_variant(op->op);
	if (v == NULL || v->ring == LK_RING_NONE)
		return -EINVAL;
	if (op->fixed_file && (op->fd < 0 || (unsigned)op->fd >= r->nr_files))
		return -EBADF;
	if (v->ring == LK_RING_READ_FIXED) {
		/* The kernel checks the range against its registered table. */
		if (r->reg == NULL || op->buf_off > LK_MAX_REGBUF)
			return -EFAULT;
		return 0;
	}
	if (op->buf_off > r->scratch_len || op->len > r->scratch_len - op->buf_off)
		return -EFAULT;
	return lk_rv_segments(op->op, op->len, seg) < 0 ? -EINVAL : 0;
}

/* The SQE an operation submits; READV segments are stored in the ring. */
static void lk_template(struct lk_ring *r, const struct lk_uop *op, struct io_uring_sqe *sqe)
{
	const struct lk_read_variant *v = lk_read_variant(op->op);
	char *p = r->scratch + op->buf_off;

	memset(sqe, 0, sizeof(*sqe));
	sqe->fd = op->fd;
	sqe->flags = op->fixed_file ? IOSQE_FIXED_FILE : 0;
	sqe->off = (uint64_t)op->off;
	sqe->rw_flags = (__kernel_rwf_t)v->rwf;
	sqe->user_data = 0x6c6b;
	switch (v->ring) {
	case LK_RING_READ:
		sqe->opcode = IORING_OP_READ;
		sqe->addr = (uint64_t)(uintptr_t)p;
		sqe->len = op->len;
		break;
	case LK_RING_READV:
		sqe->opcode = IORING_OP_READV;
		sqe->len = (uint32_t)lk_rv_iovec(op->op, p, op->len, r->iov);
		sqe->addr = (uint64_t)(uintptr_t)r->iov;
		break;
	case LK_RING_READ_FIXED:
		sqe->opcode = IORING_OP_READ_FIXED;
		/* Address arithmetic only: the kernel validates it. */
		sqe->addr = (uint64_t)(uintptr_t)r->reg + op->buf_off;
		sqe->len = op->len;
		sqe->buf_index = 0;
		break;
	}
}

static inline void lk_push(struct lk_ring *r, const struct io_uring_sqe *tmpl)
{
	unsigned idx = r->sq_tail_local & *r->sq_mask;

	r->sqes[idx] = *tmpl;
	r->sq_tail_local++;
}

static inline void lk_publish(struct lk_ring *r, unsigned n)
{
	__atomic_store_n(r->sq_tail, r->sq_tail_local, __ATOMIC_RELEASE);
	r->unsubmitted += n;
}

/* Account for io_uring_enter's return: SQEs consumed. */
static inline int lk_account_submit(struct lk_ring *r, int ret, unsigned n)
{
	if (ret < 0)
		return ret;
	r->unsubmitted -= (unsigned)ret < r->unsubmitted ? (unsigned)ret : r->unsubmitted;
	r->inflight += (unsigned)ret;
	return (unsigned)ret == n ? 0 : -EAGAIN;
}

/**
 * lk_uring_probe - whether io_uring can be set up here, and which reads it supports
 * @out: receives the probe
 *
 * Return: 0 (the outcome is in @out), or -EINVAL for no @out.
 */
int lk_uring_probe(struct lk_uring_probe *out)
{
	struct io_uring_params p;
	struct lk_probe_hdr probe;
	long fd;

	if (out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->have_header = 1;
	out->op_read = out->op_readv = out->op_read_fixed = -1;
	memset(&p, 0, sizeof(p));
	fd = lk_sys_setup(4, &p);
	if (fd < 0) {
		out->setup_errno = errno;
		return 0;
	}
	out->features = p.features;
	out->ext_arg = (p.features & IORING_FEAT_EXT_ARG) != 0;
	memset(&probe, 0, sizeof(probe));
	if (lk_sys_register((int)fd, LK_REGISTER_PROBE, &probe, 64) == 0) {
		int last = probe.last_op;

		out->op_read = IORING_OP_READ <= last &&
			       (probe.ops[IORING_OP_READ].flags & LK_OP_SUPPORTED) != 0;
		out->op_readv = IORING_OP_READV <= last &&
				(probe.ops[IORING_OP_READV].flags & LK_OP_SUPPORTED) != 0;
		out->op_read_fixed = IORING_OP_READ_FIXED <= last &&
				     (probe.ops[IORING_OP_READ_FIXED].flags & LK_OP_SUPPORTED) != 0;
	}
	close((int)fd);
	return 0;
}

/**
 * lk_ring_open - set up an io_uring instance with a scratch buffer
 * @entries: submission queue entries
 * @flags: IORING_SETUP_* flags labkit accepts (LK_SETUP_*)
 * @scratch_len: bytes of the buffer READ and READV read into
 * @timeout_ns: the bound of every wait
 * @err: receives 0 or the negative errno of a failure (may be NULL)
 *
 * Return: the ring, or NULL (the reason in *@err).
 */
struct lk_ring *lk_ring_open(unsigned entries, unsigned flags, size_t scratch_len,
			     int64_t timeout_ns, int *err)
{
	struct lk_ring *r;
	long fd;
	int dummy;
	size_t sq_len, cq_len;

	if (err == NULL)
		err = &dummy;
	*err = 0;
	if (entries == 0 || entries > LK_MAX_ENTRIES || (flags & ~LK_SETUP_ALLOWED) ||
	    scratch_len == 0 || scratch_len > LK_MAX_SCRATCH || timeout_ns <= 0) {
		*err = -EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	r->fd = -1;
	r->timeout_ns = timeout_ns;
	r->sq_map = r->cq_map = MAP_FAILED;
	r->sqes = MAP_FAILED;
	r->p.flags = flags;
	fd = lk_sys_setup(entries, &r->p);
	if (fd < 0) {
		*err = -errno;
		goto fail;
	}
	r->fd = r->enter_fd = (int)fd;
	r->ext_arg = (r->p.features & IORING_FEAT_EXT_ARG) != 0;

	sq_len = r->p.sq_off.array + r->p.sq_entries * sizeof(unsigned);
	cq_len = r->p.cq_off.cqes + r->p.cq_entries * sizeof(struct io_uring_cqe);
	if (r->p.features & IORING_FEAT_SINGLE_MMAP) {
		if (cq_len > sq_len)
			sq_len = cq_len;
		cq_len = sq_len;
	}
	r->sq_map_len = sq_len;
	r->sq_map = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			 IORING_OFF_SQ_RING);
	if (r->sq_map == MAP_FAILED) {
		*err = -errno;
		goto fail;
	}
	if (r->p.features & IORING_FEAT_SINGLE_MMAP) {
		r->cq_map = r->sq_map;
	} else {
		r->cq_map_len = cq_len;
		r->cq_map = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
				 r->fd, IORING_OFF_CQ_RING);
		if (r->cq_map == MAP_FAILED) {
			*err = -errno;
			goto fail;
		}
	}
	r->sqes_len = r->p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED) {
		*err = -errno;
		goto fail;
	}
	r->sq_head = (unsigned *)((char *)r->sq_map + r->p.sq_off.head);
	r->sq_tail = (unsigned *)((char *)r->sq_map + r->p.sq_off.tail);
	r->sq_mask = (unsigned *)((char *)r->sq_map + r->p.sq_off.ring_mask);
	r->sq_array = (unsigned *)((char *)r->sq_map + r->p.sq_off.array);
	r->cq_head = (unsigned *)((char *)r->cq_map + r->p.cq_off.head);
	r->cq_tail = (unsigned *)((char *)r->cq_map + r->p.cq_off.tail);
	r->cq_mask = (unsigned *)((char *)r->cq_map + r->p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_map + r->p.cq_off.cqes);
	/* Identity mapping of SQ array slots to SQEs, set once. */
	for (unsigned i = 0; i < r->p.sq_entries; i++)
		r->sq_array[i] = i;
	r->sq_tail_local = *r->sq_tail;

	r->scratch_len = scratch_len;
	r->scratch = mmap(NULL, scratch_len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (r->scratch == MAP_FAILED) {
		r->scratch = NULL;
		*err = -errno;
		goto fail;
	}
	return r;
fail:
	lk_ring_close(r);
	return NULL;
}

/**
 * lk_ring_close - tear down a ring made by lk_ring_open()
 * @r: the ring (NULL is allowed)
 */
void lk_ring_close(struct lk_ring *r)
{
	uint64_t pending;

	if (r == NULL)
		return;
	pending = r->inflight + r->unsubmitted;
	if (r->registered_ring) {
		/*
		 * The registered descriptor lives in this thread's io_uring context
		 * (at most 16 of them) and holds the ring until that thread exits:
		 * give it back, or close(fd) frees neither the slot nor the ring.
		 */
		struct lk_rsrc_update up = { .offset = (uint32_t)r->enter_fd };

		lk_sys_register(r->fd, LK_UNREGISTER_RING_FDS, &up, 1);
		r->registered_ring = 0;
	}
	if (r->sqes != MAP_FAILED && r->sqes != NULL)
		munmap(r->sqes, r->sqes_len);
	if (r->cq_map != MAP_FAILED && r->cq_map != r->sq_map)
		munmap(r->cq_map, r->cq_map_len);
	if (r->sq_map != MAP_FAILED)
		munmap(r->sq_map, r->sq_map_len);
	if (r->fd >= 0)
		close(r->fd);
	/* Registered pages are held by the kernel until its teardown: unmapping is safe. */
	if (r->reg)
		munmap(r->reg, r->reg_map_len);
	/*
	 * Requests still in flight may write the scratch buffer until the
	 * kernel has cancelled them (ring teardown is asynchronous); keep that
	 * mapping rather than let its address be reused.  Only after a timeout.
	 */
	if (r->scratch && pending == 0)
		munmap(r->scratch, r->scratch_len);
	free(r);
}

/**
 * lk_ring_get_info - what a ring was set up with, and its state
 * @r: the ring
 * @out: receives the information
 *
 * Return: 0, or -EBADF for no ring, -EINVAL for no @out.
 */
int lk_ring_get_info(const struct lk_ring *r, struct lk_ring_info *out)
{
	if (r == NULL)
		return -EBADF;
	if (out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->sq_entries = r->p.sq_entries;
	out->cq_entries = r->p.cq_entries;
	out->features = r->p.features;
	out->flags = r->p.flags;
	out->ext_arg = r->ext_arg;
	out->registered_ring = r->registered_ring;
	out->scratch_len = r->scratch_len;
	out->reg_len = r->reg_len;
	out->reg_hugepages = r->reg_hugepages;
	out->nr_files = r->nr_files;
	out->inflight = r->inflight + r->unsubmitted;
	return 0;
}

/**
 * lk_ring_set_timeout - change the bound of a ring's waits
 * @r: the ring
 * @timeout_ns: nanoseconds (> 0)
 *
 * Return: 0, -EBADF or -EINVAL.
 */
int lk_ring_set_timeout(struct lk_ring *r, int64_t timeout_ns)
{
	if (r == NULL)
		return -EBADF;
	if (timeout_ns <= 0)
		return -EINVAL;
	r->timeout_ns = timeout_ns;
	return 0;
}

/**
 * lk_ring_register_buffer - map and register a buffer for READ_FIXED (up to 1 GiB)
 * @r: the ring
 * @len: bytes
 * @hugepages: nonzero: back it with huge pages
 *
 * Return: 0 or a negative errno.
 */
int lk_ring_register_buffer(struct lk_ring *r, size_t len, int hugepages)
{
	struct iovec iov;
	size_t map_len;
	char *buf;

	if (r == NULL)
		return -EBADF;
	if (r->reg)
		return -EBUSY;
	if (len == 0 || len > LK_MAX_REGBUF)
		return len == 0 ? -EINVAL : -EFAULT;
	map_len = (len + LK_PAGE_SIZE - 1) & LK_PAGE_MASK;
	/* Reserve only: the kernel checks the size before pinning (faulting in) pages. */
	buf = mmap(NULL, map_len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (buf == MAP_FAILED)
		return -errno;
	madvise(buf, map_len, hugepages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	iov.iov_base = buf;
	iov.iov_len = len;
	if (lk_sys_register(r->fd, IORING_REGISTER_BUFFERS, &iov, 1) < 0) {
		int e = errno;

		munmap(buf, map_len);
		return -e;
	}
	r->reg = buf;
	r->reg_len = len;
	r->reg_map_len = map_len;
	r->reg_hugepages = hugepages != 0;
	return 0;
}

/**
 * lk_ring_register_files - register files (IORING_REGISTER_FILES)
 * @r: the ring
 * @fds: the descriptors (-1: a sparse slot)
 * @n: how many
 *
 * Return: 0 or a negative errno.
 */
int lk_ring_register_files(struct lk_ring *r, const int *fds, unsigned n)
{
	if (r == NULL)
		return -EBADF;
	if (fds == NULL || n == 0 || n > 1024)
		return -EINVAL;
	if (r->nr_files)
		return -EBUSY;
	if (lk_sys_register(r->fd, IORING_REGISTER_FILES, fds, n) < 0)
		return -errno;
	r->nr_files = n;
	return 0;
}

/**
 * lk_ring_register_ring_fd - register the ring's own descriptor
 * (IORING_REGISTER_RING_FDS)
 * @r: the ring
 *
 * Return: 0 or a negative errno.
 */
int lk_ring_register_ring_fd(struct lk_ring *r)
{
	struct lk_rsrc_update up = { .offset = (uint32_t)-1, .data = 0 };

	if (r == NULL)
		return -EBADF;
	if (r->registered_ring)
		return 0;
	up.data = (uint64_t)r->fd;
	if (lk_sys_register(r->fd, LK_REGISTER_RING_FDS, &up, 1) != 1)
		return errno ? -errno : -EIO;
	r->enter_fd = (int)up.offset;
	r->enter_flags = IORING_ENTER_REGISTERED_RING;
	r->registered_ring = 1;
	return 0;
}

static int lk_area(const struct lk_ring *r, int which, char **base, size_t *len)
{
	if (r == NULL)
		return -EBADF;
	if (which == 0) {
		*base = r->scratch;
		*len = r->scratch_len;
	} else if (which == 1) {
		*base = r->reg;
		*len = r->reg_len;
		if (*base == NULL)
			return -ENOENT;
	} else {
		return -EINVAL;
	}
	return 0;
}

/**
 * lk_ring_fill - fill a ring's buffer with one byte value
 * @r: the ring
 * @which: 0: the scratch buffer, 1: the registered buffer
 * @byte: the value
 *
 * Return: 0, or -EBADF or -EINVAL.
 */
int lk_ring_fill(struct lk_ring *r, int which, int byte)
{
	char *base;
	size_t len;
	int ret = lk_area(r, which, &base, &len);

	if (ret)
		return ret;
	memset(base, byte, len);
	return 0;
}

/**
 * lk_ring_copy_out - copy bytes out of a ring's buffer
 * @r: the ring
 * @which: 0: the scratch buffer, 1: the registered buffer
 * @off: offset in it
 * @dst: where the bytes go
 * @n: how many
 *
 * Return: 0, or -EBADF or -EINVAL for a range outside the buffer.
 */
int lk_ring_copy_out(const struct lk_ring *r, int which, size_t off, void *dst, size_t n)
{
	char *base;
	size_t len;
	int ret = lk_area(r, which, &base, &len);

	if (ret)
		return ret;
	if (dst == NULL || off > len || n > len - off)
		return -EFAULT;
	memcpy(dst, base + off, n);
	return 0;
}

/* The start of every operation and batch: check it, drain the ring, build the SQE. */
static int lk_batch_start(struct lk_ring *r, const struct lk_uop *op, struct io_uring_sqe *tmpl)
{
	int ret;

	if (r == NULL)
		return -EBADF;
	ret = lk_check_uop(r, op);
	if (ret)
		return ret;
	if (lk_drain(r))
		return -EBUSY;
	lk_template(r, op, tmpl);
	return 0;
}

/**
 * lk_ring_do - one request at queue depth 1
 * @r: the ring
 * @op: the request
 *
 * Return: the completion's result, or -errno (-ETIME when the wait timed out).
 */
int64_t lk_ring_do(struct lk_ring *r, const struct lk_uop *op)
{
	struct io_uring_sqe tmpl;
	int ret, err = 0;
	unsigned head;

	ret = lk_batch_start(r, op, &tmpl);
	if (ret)
		return ret;
	lk_push(r, &tmpl);
	lk_publish(r, 1);
	ret = lk_account_submit(r, lk_enter(r, 1, 0, 0, NULL), 1);
	if (ret)
		return ret;
	ret = lk_wait_cqes(r, 1, NULL);
	if (ret)
		return ret;
	head = *r->cq_head;
	ret = r->cqes[head & *r->cq_mask].res;
	lk_reap(r, -1, &err);
	return ret;
}

/* One QD1 round trip: push, submit (and wait, with ext_arg), reap; 0 or -errno. */
LK_ALWAYS_INLINE int lk_qd1_once(struct lk_ring *r, const struct io_uring_sqe *tmpl, uint32_t len,
				 unsigned min_complete, unsigned flags,
				 const struct lk_getevents_arg *argp)
{
	int ret, err = 0;

	lk_push(r, tmpl);
	lk_publish(r, 1);
	ret = lk_account_submit(r, lk_enter(r, 1, min_complete, flags, argp), 1);
	if (ret == -EINTR)
		ret = lk_flush(r);
	if (ret)
		return ret;
	if (lk_cq_ready(r) == 0) {
		ret = lk_wait_cqes(r, 1, NULL);
		if (ret)
			return ret;
	}
	lk_reap(r, len, &err);
	return err;
}

/**
 * lk_time_uring_qd1 - time round trips at queue depth 1
 * @r: the ring
 * @op: the request
 * @iters: round trips in the batch (submit one, wait, reap)
 *
 * Return: nanoseconds per round trip (clock: lk_live_set_clock()), or -errno.
 */
double lk_time_uring_qd1(struct lk_ring *r, const struct lk_uop *op, uint64_t iters)
{
	struct io_uring_sqe tmpl;
	struct lk_kts ts;
	struct lk_getevents_arg arg = { 0 };
	const struct lk_getevents_arg *argp = NULL;
	unsigned min_complete = 0, flags = 0;
	uint64_t k;
	double ns;
	int ret;

	if (iters == 0)
		return r == NULL ? -EBADF : -EINVAL;
	ret = lk_batch_start(r, op, &tmpl);
	if (ret)
		return ret;
	if (r->ext_arg) {
		/* Submit and wait in one call, the wait bounded by the timeout. */
		lk_timespec(r->timeout_ns, &ts);
		arg.ts = (uint64_t)(uintptr_t)&ts;
		argp = &arg;
		min_complete = 1;
		flags = IORING_ENTER_GETEVENTS;
	}
	LK_TIMED_LOOP(ns, lk_live_now, iters, k,
		      ret = lk_qd1_once(r, &tmpl, op->len, min_complete, flags, argp);
		      if (ret) return ret;);
	return ns;
}

static uint64_t lk_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/**
 * lk_time_uring_peak - the batched peak loop, in the spirit of fio's t/io_uring
 * @r: the ring
 * @op: the request every slot repeats
 * @depth: requests kept in flight
 * @submit_batch: requests submitted per enter
 * @complete_batch: completions waited for per enter
 * @ios: requests in all
 * @out: receives the rates
 *
 * Return: 0 (rates in @out), or -errno.
 */
int lk_time_uring_peak(struct lk_ring *r, const struct lk_uop *op, unsigned depth,
		       unsigned submit_batch, unsigned complete_batch, uint64_t ios,
		       struct lk_peak *out)
{
	struct io_uring_sqe tmpl;
	struct lk_kts ts;
	struct lk_getevents_arg arg = { 0 };
	uint64_t submitted = 0, completed = 0, enters = 0, waits = 0, checked = 0;
	uint64_t t0, t1, c0, c1, deadline;
	int ret, err = 0;

	if (r == NULL)
		return -EBADF;
	if (out == NULL || ios == 0 || depth == 0 || depth > r->p.sq_entries ||
	    depth > r->p.cq_entries || submit_batch == 0 || submit_batch > depth ||
	    complete_batch == 0 || complete_batch > depth)
		return -EINVAL;
	ret = lk_batch_start(r, op, &tmpl);
	if (ret)
		return ret;
	lk_timespec(r->timeout_ns, &ts);
	arg.ts = (uint64_t)(uintptr_t)&ts;

	deadline = lk_budget_deadline();
	c0 = lk_cpu_ns();
	t0 = lk_clock_ns();
	while (completed < ios) {
		uint64_t room = depth - r->inflight;
		uint64_t left = ios - submitted;
		unsigned n = (unsigned)lk_min3(room, submit_batch, left);
		unsigned want = 0;

		for (unsigned i = 0; i < n; i++)
			lk_push(r, &tmpl);
		if (n)
			lk_publish(r, n);
		/* Wait when the queue is full or nothing is left to submit. */
		if (r->inflight + n >= depth || submitted + n == ios)
			want = (unsigned)lk_min(complete_batch, r->inflight + n);
		if (n || want) {
			if (want && r->ext_arg)
				ret = lk_enter(r, n, want, IORING_ENTER_GETEVENTS, &arg);
			else
				ret = lk_enter(r, n, 0, 0, NULL);
			enters++;
			if (ret == -EINTR && n)
				ret = lk_flush(r);
			else if (ret == -EINTR || ret == -ETIME)
				ret = 0;
			else
				ret = lk_account_submit(r, ret, n);
			if (ret)
				return ret;
			submitted += n;
		}
		if (want && lk_cq_ready(r) < want) {
			ret = lk_wait_cqes(r, want, &waits);
			if (ret)
				return ret;
		}
		completed += lk_reap(r, op->len, &err);
		if (err)
			return err;
		/* the time budget, checked every LK_BUDGET_CHUNK completions (lk_clock.h) */
		if (completed - checked >= LK_BUDGET_CHUNK) {
			checked = completed;
			if (lk_over_budget(deadline, completed, ios))
				return -ETIMEDOUT;
		}
	}
	t1 = lk_clock_ns();
	c1 = lk_cpu_ns();
	out->ios = completed;
	out->enters = enters + waits;
	out->waits = waits;
	out->ns_per_io = (double)(t1 - t0) / (double)completed;
	out->cpu_ns_per_io = (double)(c1 - c0) / (double)completed;
	out->ios_per_enter = (double)completed / (double)(enters + waits);
	return 0;
}

#else /* no <linux/io_uring.h>: every entry point reports ENOSYS */

struct lk_ring {
	int unused;
};

int lk_uring_probe(struct lk_uring_probe *out)
{
	if (out == NULL)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->setup_errno = ENOSYS;
	out->op_read = out->op_readv = out->op_read_fixed = -1;
	return 0;
}

struct lk_ring *lk_ring_open(unsigned entries, unsigned flags, size_t scratch_len,
			     int64_t timeout_ns, int *err)
{
	if (err)
		*err = -ENOSYS;
	return NULL;
}

void lk_ring_close(struct lk_ring *r)
{
}
int lk_ring_get_info(const struct lk_ring *r, struct lk_ring_info *out)
{
	return -ENOSYS;
}
int lk_ring_set_timeout(struct lk_ring *r, int64_t timeout_ns)
{
	return -ENOSYS;
}
int lk_ring_register_buffer(struct lk_ring *r, size_t len, int hugepages)
{
	return -ENOSYS;
}
int lk_ring_register_files(struct lk_ring *r, const int *fds, unsigned n)
{
	return -ENOSYS;
}
int lk_ring_register_ring_fd(struct lk_ring *r)
{
	return -ENOSYS;
}
int lk_ring_fill(struct lk_ring *r, int which, int byte)
{
	return -ENOSYS;
}
int lk_ring_copy_out(const struct lk_ring *r, int which, size_t off, void *dst, size_t n)
{
	return -ENOSYS;
}
int64_t lk_ring_do(struct lk_ring *r, const struct lk_uop *op)
{
	return -ENOSYS;
}
double lk_time_uring_qd1(struct lk_ring *r, const struct lk_uop *op, uint64_t iters)
{
	return -ENOSYS;
}
int lk_time_uring_peak(struct lk_ring *r, const struct lk_uop *op, unsigned depth,
		       unsigned submit_batch, unsigned complete_batch, uint64_t ios,
		       struct lk_peak *out)
{
	return -ENOSYS;
}

#endif
