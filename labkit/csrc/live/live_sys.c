/*
 * live_sys.c - timed loops of read-family system calls (see live_sys.h).
 *
 * The loops call the C library's thin wrappers (read, pread64, readv,
 * preadv, preadv2), each of which is one system call.  The iovec arrays are
 * built once, outside the timed loop: the kernel copies them in on every call,
 * which is part of what is measured.
 */
#define _GNU_SOURCE
#include "live_sys.h"

#include <errno.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lk_clock.h"
#include "lk_common.h"

static int lk_live_clock = LK_LIVE_CLOCK_WALL;

int lk_live_set_clock(int which)
{
	int old = lk_live_clock;

	if (which != LK_LIVE_CLOCK_WALL && which != LK_LIVE_CLOCK_THREAD_CPU)
		return -EINVAL;
	lk_live_clock = which;
	return old;
}

int lk_live_get_clock(void)
{
	return lk_live_clock;
}

uint64_t lk_live_now(void)
{
	struct timespec ts;

	if (lk_live_clock == LK_LIVE_CLOCK_WALL)
		return lk_clock_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int lk_sys_args_ok(const void *buf, size_t len, int64_t off, uint64_t iters)
{
	if (len == 0 || len > LK_MAX_RW_COUNT || iters == 0 || off < -1)
		return 0;
	return buf != NULL;
}

static inline ssize_t lk_sys_call(int variant, int fd, const struct iovec *iov, int64_t off)
{
	switch (variant) {
	case LK_SYS_READ:
		return off < 0 ? read(fd, iov[0].iov_base, iov[0].iov_len)
			       : pread(fd, iov[0].iov_base, iov[0].iov_len, (off_t)off);
	case LK_SYS_READV1:
		return off < 0 ? readv(fd, iov, 1) : preadv(fd, iov, 1, (off_t)off);
	case LK_SYS_READV_EMPTY:
	case LK_SYS_READV_SPLIT:
		return off < 0 ? readv(fd, iov, 2) : preadv(fd, iov, 2, (off_t)off);
	case LK_SYS_PREADV2:
		return preadv2(fd, iov, 1, (off_t)off, 0);
	}
	errno = EINVAL;
	return -1;
}

/* The iovec array a variant passes (two entries at most). */
static void lk_sys_iov(int variant, void *buf, size_t len, struct iovec iov[2])
{
	char *p = buf;

	iov[0].iov_base = p;
	iov[0].iov_len = len;
	iov[1].iov_base = p + len;
	iov[1].iov_len = 0;
	if (variant == LK_SYS_READV_SPLIT) {
		iov[0].iov_len = len / 2;
		iov[1].iov_base = p + len / 2;
		iov[1].iov_len = len - len / 2;
	}
}

/*
 * The timed loop.  `variant` is a compile-time constant at every call site
 * below, so the switch in lk_sys_call folds away and each loop is one call.
 */
static inline double lk_sys_time(int variant, int fd, void *buf, size_t len, int64_t off,
				 uint64_t iters)
{
	struct iovec iov[2];
	uint64_t t0, t1, k;

	if (!lk_sys_args_ok(buf, len, off, iters))
		return -EINVAL;
	if (variant == LK_SYS_READV_SPLIT && len < 2)
		return -EINVAL;
	lk_sys_iov(variant, buf, len, iov);
	t0 = lk_live_now();
	for (k = 0; k < iters; k++) {
		ssize_t r = lk_sys_call(variant, fd, iov, off);

		if (r != (ssize_t)len)
			return r < 0 ? -(double)errno : -(double)EIO;
	}
	t1 = lk_live_now();
	return (double)(t1 - t0) / (double)iters;
}

double lk_time_read(int fd, void *buf, size_t len, int64_t off, uint64_t iters)
{
	return lk_sys_time(LK_SYS_READ, fd, buf, len, off, iters);
}

double lk_time_readv1(int fd, void *buf, size_t len, int64_t off, uint64_t iters)
{
	return lk_sys_time(LK_SYS_READV1, fd, buf, len, off, iters);
}

double lk_time_readv_empty(int fd, void *buf, size_t len, int64_t off, uint64_t iters)
{
	return lk_sys_time(LK_SYS_READV_EMPTY, fd, buf, len, off, iters);
}

double lk_time_readv_split(int fd, void *buf, size_t len, int64_t off, uint64_t iters)
{
	return lk_sys_time(LK_SYS_READV_SPLIT, fd, buf, len, off, iters);
}

double lk_time_preadv2(int fd, void *buf, size_t len, int64_t off, uint64_t iters)
{
	return lk_sys_time(LK_SYS_PREADV2, fd, buf, len, off, iters);
}

int64_t lk_sys_read_once(int variant, int fd, void *buf, size_t len, int64_t off)
{
	struct iovec iov[2];
	ssize_t r;

	if (variant < LK_SYS_READ || variant > LK_SYS_PREADV2 || buf == NULL || off < -1 ||
	    len > LK_MAX_RW_COUNT || (variant == LK_SYS_READV_SPLIT && len < 2))
		return -EINVAL;
	lk_sys_iov(variant, buf, len, iov);
	r = lk_sys_call(variant, fd, iov, off);
	return r < 0 ? -(int64_t)errno : (int64_t)r;
}
