/*
 * iov_import.c - importing iovecs from the modelled user space.
 *
 * Follows the kernel's import_iovec(), import_ubuf() and import_single_range()
 * (lib/iov_iter.c).  era selects the behaviour before (63) or after (64) the
 * 2023 change that imports a single segment as ITER_UBUF (merged for 6.4).
 *
 * An import checks what the kernel's does and nothing more: every segment's
 * length fits in ssize_t (else -EINVAL), and every segment's range, empty
 * ones included, passes access_ok() (lies in user space, else -EFAULT).
 * Whether the pages are mapped is not checked here: a copy finds that out,
 * and stops at the first byte it cannot reach (iov_iter.c, user_step()).
 * The address space mm is only attached to the iterator for those copies.
 */
#include <stdlib.h>
#include <string.h>

#include "iov_iter.h"

/*
 * Copy nr_segs entries of the user's array into iov and refuse a length
 * negative as ssize_t, as copy_iovec_from_user() (both eras: 6.4's single
 * segment is copied like any array).  That the array is mapped is the
 * caller's check (it plays copy_from_user()'s fault handling).
 *
 * Out of line and not specialised for one segment, as the kernel's: 6.4's
 * __import_iovec_ubuf() calls the same array copy with nr_segs = 1, and the
 * real build keeps it a function of its own (copy_iovec_from_user in the
 * callgrind counts of 6.1 with the change and of 6.12, at -O2 and -Os).
 * Inlined here, the compiler dropped the loop from the model's 6.4 import
 * only, and the model counted that as part of the change's saving.
 */
__attribute__((noinline)) static int
copy_iovec_from_user(struct lk_iovec *iov, const struct lk_iovec *uvec, unsigned long nr_segs)
{
	unsigned long seg;

	for (seg = 0; seg < nr_segs; seg++) {
		if ((ssize_t)uvec[seg].iov_len < 0)
			return -EINVAL;
		iov[seg] = uvec[seg];
	}
	return 0;
}

/*
 * Copy the user's iovec array, as iovec_from_user(): into fast_iov when it
 * holds nr_segs entries, else into a new allocation.
 */
static struct lk_iovec *iovec_from_user(const struct lk_iovec *uvec, unsigned long nr_segs,
					unsigned int fast_segs, struct lk_iovec *fast_iov, int *err)
{
	struct lk_iovec *iov = fast_iov;

	*err = 0;
	if (nr_segs == 0)
		return iov;
	if (nr_segs > LK_UIO_MAXIOV) {
		*err = -EINVAL;
		return NULL;
	}
	if (nr_segs > fast_segs || !fast_iov) {
		iov = malloc(nr_segs * sizeof(*iov));
		if (!iov) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	*err = copy_iovec_from_user(iov, uvec, nr_segs);
	if (*err) {
		if (iov != fast_iov)
			free(iov);
		return NULL;
	}
	return iov;
}

/**
 * lk_import_ubuf - import one user buffer as ITER_UBUF, as import_ubuf()
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @buf: the user address
 * @len: its length (clamped to MAX_RW_COUNT)
 * @i: the iterator to set up
 * @mm: the modelled address space (the UserMemory's table)
 *
 * Return: 0, -EFAULT when access_ok() refuses the range, or -EINVAL for a bad
 * direction.
 */
int lk_import_ubuf(int direction, uintptr_t buf, size_t len, struct lk_iov_iter *i,
		   const struct lk_mm *mm)
{
	int ret;

	if (len > LK_MAX_RW_COUNT)
		len = LK_MAX_RW_COUNT;
	if (!lk_access_ok(buf, len)) /* the clamped length, as the kernel */
		return -EFAULT;
	ret = lk_iter_ubuf(i, direction, buf, len);
	if (!ret)
		i->mm = mm;
	return ret;
}

/**
 * lk_import_single_range - import one user buffer, as import_single_range()
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @buf: the user address
 * @len: its length (clamped to MAX_RW_COUNT)
 * @iov: the one-entry array an ITER_IOVEC walks (era 63)
 * @i: the iterator to set up
 * @mm: the modelled address space (the UserMemory's table)
 * @era: 63 (ITER_IOVEC) or 64 (ITER_UBUF)
 *
 * Return: 0, -EFAULT when access_ok() refuses the range, or -EINVAL for a bad
 * direction.
 */
int lk_import_single_range(int direction, uintptr_t buf, size_t len, struct lk_iovec *iov,
			   struct lk_iov_iter *i, const struct lk_mm *mm, int era)
{
	int ret;

	if (era >= 64)
		return lk_import_ubuf(direction, buf, len, i, mm);
	if (len > LK_MAX_RW_COUNT)
		len = LK_MAX_RW_COUNT;
	if (!lk_access_ok(buf, len))
		return -EFAULT;
	iov->iov_base = buf;
	iov->iov_len = len;
	ret = lk_iter_init(i, direction, iov, 1, len);
	if (!ret)
		i->mm = mm;
	return ret;
}

/*
 * 6.4+: a single segment becomes ITER_UBUF, as __import_iovec_ubuf(): the
 * segment is first copied from the user's array (into the caller's fast_iov,
 * as the kernel copies into *iovp) and checked, then import_ubuf() checks its
 * range.
 */
static ssize_t import_iovec_ubuf(int direction, const struct lk_iovec *uvec,
				 struct lk_iovec *fast_iov, struct lk_iov_iter *i,
				 const struct lk_mm *mm)
{
	struct lk_iovec one, *iov = fast_iov ? fast_iov : &one;
	int err = copy_iovec_from_user(iov, uvec, 1);

	if (err)
		return err;
	err = lk_import_ubuf(direction, iov->iov_base, iov->iov_len, i, mm);
	return err ? err : (ssize_t)i->count;
}

/**
 * lk_import_iovec - import a user iovec array, as import_iovec()
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @uvec: the user address of the iovec array
 * @nr_segs: its number of entries (at most UIO_MAXIOV)
 * @fast_segs: entries @fast_iov holds
 * @fast_iov: the caller's small array, used when it is large enough
 * @iovp: receives the allocated array, or NULL
 * @i: the iterator to set up
 * @mm: the modelled address space (the UserMemory's table)
 * @era: 63 (Linux 6.3: one segment is ITER_IOVEC) or 64 (6.4+: ITER_UBUF)
 *
 * Returns the total length or a negative errno.  On success *iovp is the
 * allocated array the caller must free(), or NULL when fast_iov (or nothing)
 * was used; on failure *iovp is NULL and nothing is left allocated.
 *
 * Return: the total length (clamped to MAX_RW_COUNT), or -EFAULT, -EINVAL or -ENOMEM.
 */
ssize_t lk_import_iovec(int direction, const struct lk_iovec *uvec, unsigned long nr_segs,
			unsigned int fast_segs, struct lk_iovec *fast_iov, struct lk_iovec **iovp,
			struct lk_iov_iter *i, const struct lk_mm *mm, int era)
{
	size_t total_len = 0;
	unsigned long seg;
	struct lk_iovec *iov;
	int err;

	*iovp = NULL;
	if (direction != LK_ITER_DEST && direction != LK_ITER_SOURCE)
		return -EINVAL;
	if (era >= 64 && nr_segs == 1)
		return import_iovec_ubuf(direction, uvec, fast_iov, i, mm);

	iov = iovec_from_user(uvec, nr_segs, fast_segs, fast_iov, &err);
	if (!iov)
		return err;

	/*
	 * Each segment's whole length is checked, before the total is clamped to
	 * MAX_RW_COUNT (a segment past the clamp is cut, down to 0, but must
	 * still lie in user space), as __import_iovec() does.
	 */
	for (seg = 0; seg < nr_segs; seg++) {
		size_t len = iov[seg].iov_len;

		if (!lk_access_ok(iov[seg].iov_base, len)) {
			if (iov != fast_iov)
				free(iov);
			return -EFAULT;
		}
		if (len > LK_MAX_RW_COUNT - total_len) {
			len = LK_MAX_RW_COUNT - total_len;
			iov[seg].iov_len = len;
		}
		total_len += len;
	}

	lk_iter_init(i, direction, iov, nr_segs, total_len);
	i->mm = mm;
	if (iov != fast_iov)
		*iovp = iov;
	return (ssize_t)total_len;
}
