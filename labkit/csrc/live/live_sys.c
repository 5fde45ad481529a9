/*
 * live_sys.c - timed loops of read-family system calls (see live_sys.h).
 *
 * The loops call the C library's thin wrappers (read, pread64, readv,
 * preadv, preadv2), each of which is one system call.  The iovec arrays are
 * built once, outside the timed loop, from the variant's layout
 * (lk_rv_iovec, read_variants.h): the kernel copies them in on every call,
 * which is part of what is measured.
 */
#define _GNU_SOURCE
#include "live_sys.h"

#include <errno.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lk_common.h"
#include "lk_timed_loop.h"

static int lk_live_clock = LK_LIVE_CLOCK_WALL;

/**
 * lk_live_set_clock - choose the clock the live loops read
 * @which: LK_LIVE_CLOCK_WALL or LK_LIVE_CLOCK_THREAD_CPU
 *
 * Return: the previous clock, or -EINVAL.
 */
int lk_live_set_clock(int which)
{
	int old = lk_live_clock;

	if (which != LK_LIVE_CLOCK_WALL && which != LK_LIVE_CLOCK_THREAD_CPU)
		return -EINVAL;
	lk_live_clock = which;
	return old;
}

/**
 * lk_live_get_clock - the clock the live loops read
 *
 * Return: LK_LIVE_CLOCK_WALL or LK_LIVE_CLOCK_THREAD_CPU.
 */
int lk_live_get_clock(void)
{
	return lk_live_clock;
}

/**
 * lk_live_now - read the live loops' clock
 *
 * Return: nanoseconds on the chosen clock.
 */
uint64_t lk_live_now(void)
{
	struct timespec ts;

	if (lk_live_clock == LK_LIVE_CLOCK_WALL)
		return lk_clock_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One system call of kind `call` (LK_CALL_*) over `nsegs` segments. */
LK_ALWAYS_INLINE ssize_t lk_sys_call(int call, int rwf, int fd, const struct iovec *iov, int nsegs,
				     int64_t off)
{
	switch (call) {
	case LK_CALL_READ:
		return off < 0 ? read(fd, iov[0].iov_base, iov[0].iov_len)
			       : pread(fd, iov[0].iov_base, iov[0].iov_len, (off_t)off);
	case LK_CALL_READV:
		return off < 0 ? readv(fd, iov, nsegs) : preadv(fd, iov, nsegs, (off_t)off);
	case LK_CALL_PREADV2:
		return preadv2(fd, iov, nsegs, (off_t)off, rwf);
	}
	errno = EINVAL;
	return -1;
}

/*
 * The timed loop.  `call` and `rwf` are compile-time constants at every call
 * site (the per-variant loops below), so the switch in lk_sys_call folds
 * away and each loop body is one system call.
 */
LK_ALWAYS_INLINE double lk_sys_time(int call, int rwf, int variant, int fd, void *buf, size_t len,
				    int64_t off, uint64_t iters)
{
	struct iovec iov[LK_RV_MAX_SEGS] = { { 0 } };
	uint64_t k;
	double ns;
	int nsegs;

	if (len == 0 || len > LK_MAX_RW_COUNT || iters == 0 || off < -1 || buf == NULL)
		return -EINVAL;
	nsegs = lk_rv_iovec(variant, buf, len, iov);
	if (nsegs < 0)
		return nsegs;
	LK_TIMED_LOOP(ns, lk_live_now, iters, k,
		      ssize_t r = lk_sys_call(call, rwf, fd, iov, nsegs, off);
		      if (r != (ssize_t)len) return r < 0 ? -(double)errno : -(double)EIO;);
	return ns;
}

typedef double lk_sys_loop_fn(int fd, void *buf, size_t len, int64_t off, uint64_t iters);

/* One loop per variant, specialised on its call and flags. */
#define LK_SYS_LOOP(ID, name, label, call, ring, layout, rwf)                                      \
	static double lk_sys_loop_##ID(int fd, void *buf, size_t len, int64_t off, uint64_t iters) \
	{                                                                                          \
		return lk_sys_time(call, rwf, LK_RV_##ID, fd, buf, len, off, iters);               \
	}
LK_READ_VARIANTS(LK_SYS_LOOP)
#undef LK_SYS_LOOP

static lk_sys_loop_fn *const lk_sys_loops[LK_RV_COUNT] = {
#define LK_SYS_LOOP_PTR(ID, name, label, call, ring, layout, rwf) [LK_RV_##ID] = lk_sys_loop_##ID,
	LK_READ_VARIANTS(LK_SYS_LOOP_PTR)
#undef LK_SYS_LOOP_PTR
};

/**
 * lk_time_syscall - time a read variant's system call on a descriptor
 * @variant: a read variant with a system call (LK_RV_*)
 * @fd: the descriptor
 * @buf: the buffer (at least @len bytes)
 * @len: bytes per call
 * @off: file offset, or -1 for the file position
 * @iters: calls in the batch
 *
 * Return: nanoseconds per call (clock: lk_live_set_clock()), or -EINVAL, -ETIMEDOUT or
 * the call's -errno.
 */
double lk_time_syscall(int variant, int fd, void *buf, size_t len, int64_t off, uint64_t iters)
{
	const struct lk_read_variant *v = lk_read_variant(variant);

	if (v == NULL || v->call == LK_CALL_NONE)
		return -EINVAL;
	return lk_sys_loops[variant](fd, buf, len, off, iters);
}

/**
 * lk_sys_read_once - one untimed call of a read variant, for correctness checks
 * @variant: a read variant with a system call (LK_RV_*)
 * @fd: the descriptor
 * @buf: the buffer (at least @len bytes)
 * @len: bytes asked for
 * @off: file offset, or -1 for the file position
 *
 * Return: the bytes transferred, or -errno.
 */
int64_t lk_sys_read_once(int variant, int fd, void *buf, size_t len, int64_t off)
{
	const struct lk_read_variant *v = lk_read_variant(variant);
	struct iovec iov[LK_RV_MAX_SEGS] = { { 0 } };
	ssize_t r;
	int nsegs;

	if (v == NULL || v->call == LK_CALL_NONE || buf == NULL || off < -1 ||
	    len > LK_MAX_RW_COUNT)
		return -EINVAL;
	nsegs = lk_rv_iovec(variant, buf, len, iov);
	if (nsegs < 0)
		return nsegs;
	r = lk_sys_call(v->call, v->rwf, fd, iov, nsegs, off);
	return r < 0 ? -(int64_t)errno : (int64_t)r;
}
