/*
 * ubuf_model.c - model experiments for the 2023 single-segment UBUF work.
 *
 * R2 (merged for 6.4): import_iovec() of one segment builds an ITER_UBUF
 * instead of an ITER_IOVEC.  The modelled call is a read or readv on
 * /dev/zero: import, then iov_iter_zero() a page at a time (read_iter_zero).
 *
 * R3 (not merged): io_uring turned a one-segment READV into a READ.  Besides
 * iterating a UBUF, a READ that has to be deferred keeps only (addr, len) in
 * the request, where a READV must allocate async state, copy its iterator and
 * iovecs into it, and free it at completion.  The modelled request follows the
 * commit message's account; defer_alloc_ubuf switches to 6.3's -EAGAIN path,
 * where a deferred READ allocates and copies its (UBUF) iterator as well.
 *
 * The per-call functions take a work counter that is NULL in the timed loops;
 * they are always inlined so that the timed code carries no counting.
 */
#include <stdlib.h>
#include <string.h>

#include "lk_timed_loop.h"
#include "ubuf_model.h"

/* Check the arguments; *vectored says whether the variant imports an iovec array. */
static int check_args(const struct lk_ubuf_args *a, bool uring, bool *vectored)
{
	const struct lk_read_variant *v;

	if (!a || !a->mm)
		return -EINVAL;
	v = lk_read_variant(a->variant);
	if (!v)
		return -EINVAL;
	if (uring ? v->ring != LK_RING_READ && v->ring != LK_RING_READV : v->call == LK_CALL_NONE)
		return -EINVAL;
	*vectored = v->layout != LK_IOV_BUF;
	if (*vectored && a->era != 63 && a->era != 64)
		return -EINVAL;
	if (a->op < LK_UBUF_OP_ADVANCE || a->op > LK_UBUF_OP_ZERO)
		return -EINVAL;
	if (a->op == LK_UBUF_OP_COPY && !a->src && a->src_len)
		return -EINVAL;
	if (*vectored) {
		if (a->nr_segs > LK_UBUF_MAX_SEGS)
			return -EINVAL;
		/* the model reads the array in place: it must be aligned for it */
		if (a->uvec % _Alignof(struct lk_iovec))
			return -EINVAL;
		if (!lk_mm_mapped(a->mm, a->uvec, a->nr_segs * sizeof(struct lk_iovec),
				  LK_PROT_READ))
			return -EFAULT;
	}
	return 0;
}

/*
 * readv's import: copy_iovec_from_user() checks the user's array before it is
 * read (in both eras), then the core's import_iovec() of the given era.
 */
LK_ALWAYS_INLINE ssize_t import_user_iovec(const struct lk_ubuf_args *a, int era,
					   struct lk_iovec *fast_iov, struct lk_iovec **iovp,
					   struct lk_iov_iter *it, struct lk_ubuf_work *w)
{
	size_t vbytes = a->nr_segs * sizeof(struct lk_iovec);
	ssize_t ret;

	if (!lk_mm_mapped(a->mm, a->uvec, vbytes, LK_PROT_READ))
		return -EFAULT;
	ret = lk_import_iovec(LK_ITER_DEST, (const struct lk_iovec *)a->uvec, a->nr_segs,
			      LK_UIO_FASTIOV, fast_iov, iovp, it, a->mm, era);
	if (w && ret >= 0) {
		w->imports++;
		w->uvec_bytes_read += vbytes;
		/* the iterator walks a kernel copy of the array: on the stack or allocated */
		if (it->iter_type == LK_ITER_IOVEC &&
		    (it->seg_first == fast_iov || (*iovp && it->seg_first == *iovp)))
			w->iovec_table_bytes += vbytes;
		if (*iovp)
			w->allocs++;
	}
	return ret;
}

/* What the call does with its iterator; returns bytes moved or a negative errno. */
LK_ALWAYS_INLINE ssize_t do_op(const struct lk_ubuf_args *a, struct lk_iov_iter *it,
			       struct lk_ubuf_work *w)
{
	/* the segment index is the work counter's only: not computed in the timed loops */
	unsigned long before = w ? lk_iter_seg_index(it) : 0;
	ssize_t done = 0, n;

	switch (a->op) {
	case LK_UBUF_OP_ADVANCE:
		done = (ssize_t)it->count;
		lk_iter_advance(it, it->count);
		break;
	case LK_UBUF_OP_COPY:
		done = lk_copy_to_iter(a->src, lk_min(it->count, a->src_len), it);
		break;
	default:
		/* /dev/zero's read_iter: a page at a time until the iterator is full */
		while (it->count) {
			n = lk_iov_iter_zero(lk_min(it->count, LK_PAGE_SIZE), it);
			if (n <= 0) {
				if (!done)
					return -EFAULT;
				break;
			}
			done += n;
		}
		break;
	}
	if (w) {
		switch (lk_iter_kind(it)) {
		case LK_ITER_UBUF:
			w->ubuf_iters++;
			break;
		case LK_ITER_IOVEC:
			w->iovec_iters++;
			break;
		case LK_ITER_KVEC:
		case LK_ITER_BVEC:
		case LK_ITER_DISCARD:
		case LK_ITER_XARRAY:
		case LK_ITER_FOLIOQ:
			break; /* imports build only UBUF and IOVEC */
		}
		w->seg_steps += lk_iter_seg_index(it) - before;
		if (done > 0)
			w->bytes_moved += (uint64_t)done;
	}
	return done;
}

LK_ALWAYS_INLINE ssize_t syscall_one(const struct lk_ubuf_args *a, bool vectored,
				     struct lk_ubuf_work *w)
{
	struct lk_iovec fast_iov[LK_UIO_FASTIOV];
	struct lk_iovec *iovp = NULL;
	struct lk_iov_iter it;
	ssize_t ret;

	if (!vectored) {
		ret = lk_import_ubuf(LK_ITER_DEST, a->buf, a->len, &it, a->mm);
		if (w && !ret)
			w->imports++;
	} else {
		ret = import_user_iovec(a, a->era, fast_iov, &iovp, &it, w);
	}
	if (ret < 0)
		return ret;
	ret = do_op(a, &it, w);
	if (iovp) {
		free(iovp);
		if (w)
			w->frees++;
	}
	if (w)
		w->calls++;
	return ret;
}

/* Save a request's iterator for later issue (io_setup_async_rw / io_req_map_rw). */
LK_ALWAYS_INLINE struct lk_async_rw *save_async(struct lk_iov_iter *it, struct lk_iovec **iovp,
						struct lk_ubuf_work *w)
{
	struct lk_async_rw *as = malloc(sizeof(*as));

	if (!as)
		return NULL;
	memcpy(&as->iter, it, sizeof(*it));
	as->free_iovec = *iovp; /* an allocated array moves with the request */
	*iovp = NULL;
	as->bytes_done = 0;
	if (w) {
		w->allocs++;
		w->iter_bytes_copied += sizeof(*it);
	}
	if (it->iter_type == LK_ITER_IOVEC && !as->free_iovec) {
		/* the on-stack iovecs die with this call: copy them into the async state */
		size_t bytes = it->nr_segs * sizeof(struct lk_iovec);

		memcpy(as->fast_iov, it->iov, bytes);
		as->iter.iov = as->fast_iov;
		as->iter.seg_first = as->fast_iov;
		if (w)
			w->iovec_table_bytes += bytes;
	}
	return as;
}

LK_ALWAYS_INLINE ssize_t uring_one(const struct lk_ubuf_args *a, bool vectored, uint64_t n,
				   struct lk_ubuf_work *w)
{
	struct lk_iovec fast_iov[LK_UIO_FASTIOV];
	struct lk_iovec *iovp = NULL;
	struct lk_iov_iter it, *cur = &it;
	struct lk_async_rw *as = NULL;
	bool deferred = a->defer_every && n % a->defer_every == a->defer_every - 1;
	bool is_read = false; /* the request is (now) a READ: addr/len describe it */
	uintptr_t addr = a->buf;
	size_t len = a->len;
	ssize_t ret;

	if (!vectored) {
		/* IORING_OP_READ: a UBUF from the SQE's addr/len */
		ret = lk_import_ubuf(LK_ITER_DEST, addr, len, &it, a->mm);
		if (w && !ret)
			w->imports++;
		is_read = true;
	} else {
		ret = import_user_iovec(a, a->era, fast_iov, &iovp, &it, w);
		/* R3's patch: one IOVEC segment becomes a READ of it (on 6.4 the import
		 * already built a UBUF, and the opcode stays READV) */
		if (a->rewrite && ret >= 0 && it.iter_type == LK_ITER_IOVEC && it.nr_segs == 1 &&
		    !iovp) {
			addr = it.iov->iov_base;
			len = it.iov->iov_len;
			lk_iter_ubuf(&it, LK_ITER_DEST, addr, len);
			it.mm = a->mm; /* checked by the import */
			is_read = true;
			if (w)
				w->rewritten++;
		}
	}
	if (ret < 0)
		return ret;

	if (deferred) {
		if (w)
			w->deferred++;
		if (is_read && !a->defer_alloc_ubuf) {
			/* a READ keeps only addr/len in the request and imports again at issue */
			ret = lk_import_ubuf(LK_ITER_DEST, addr, len, &it, a->mm);
			if (ret < 0)
				goto out;
			if (w)
				w->imports++;
		} else {
			as = save_async(&it, &iovp, w);
			if (!as) {
				ret = -ENOMEM;
				goto out;
			}
			cur = &as->iter;
		}
	}
	ret = do_op(a, cur, w);
out:
	if (as) {
		if (as->free_iovec) {
			free(as->free_iovec);
			if (w)
				w->frees++;
		}
		free(as);
		if (w)
			w->frees++;
	}
	if (iovp) {
		free(iovp);
		if (w)
			w->frees++;
	}
	if (w && ret >= 0)
		w->calls++;
	return ret;
}

/* One modelled call: `uring` is a constant at every call site, so this folds away. */
LK_ALWAYS_INLINE ssize_t model_one(const struct lk_ubuf_args *a, bool uring, bool vectored,
				   uint64_t n, struct lk_ubuf_work *w)
{
	return uring ? uring_one(a, vectored, n, w) : syscall_one(a, vectored, w);
}

LK_ALWAYS_INLINE double time_model(const struct lk_ubuf_args *a, bool uring, uint64_t iters)
{
	uint64_t k;
	size_t sum = 0;
	ssize_t r;
	double ns;
	bool vectored;
	int err = check_args(a, uring, &vectored);

	if (err)
		return err;
	if (!iters)
		return -EINVAL;
	/* untimed: one call of each kind the batch will see (a bad argument is an
	 * error, not a sample) */
	r = model_one(a, uring, vectored, 0, NULL);
	if (r >= 0 && uring && a->defer_every)
		r = model_one(a, uring, vectored, a->defer_every - 1, NULL);
	if (r < 0)
		return (double)r;
	LK_TIMED_LOOP(ns, lk_clock_ns, iters, k, r = model_one(a, uring, vectored, k, NULL);
		      if (r < 0) return (double)r; sum += (size_t)r;);
	LK_KEEP(sum);
	return ns;
}

LK_ALWAYS_INLINE int count_model(const struct lk_ubuf_args *a, bool uring, uint64_t calls,
				 struct lk_ubuf_work *w)
{
	uint64_t k, deadline = lk_budget_deadline();
	ssize_t r;
	bool vectored;
	int err;

	if (!w)
		return -EINVAL;
	memset(w, 0, sizeof(*w));
	err = check_args(a, uring, &vectored);
	if (err)
		return err;
	for (k = 0; k < calls; k++) {
		/* counting is bounded by the time budget as timing is (lk_clock.h) */
		if (k % LK_BUDGET_CHUNK == 0 && lk_over_budget(deadline, k, calls))
			return -ETIMEDOUT;
		r = model_one(a, uring, vectored, k, w);
		if (r < 0)
			return (int)r;
	}
	return 0;
}

/**
 * lk_time_ubuf_syscall - time the modelled read/readv calls of R2
 * @a: the modelled call (variant, era, operation, buffers)
 * @iters: calls in the batch
 *
 * Return: nanoseconds per call, or -errno (-EFAULT, -EINVAL, -ENOMEM, -ETIMEDOUT).
 */
double lk_time_ubuf_syscall(const struct lk_ubuf_args *a, uint64_t iters)
{
	return time_model(a, false, iters);
}

/**
 * lk_ubuf_syscall_work - count the work of modelled read/readv calls (untimed)
 * @a: the modelled call
 * @calls: how many calls
 * @w: receives the work, summed over the calls
 *
 * Return: 0 or -errno.
 */
int lk_ubuf_syscall_work(const struct lk_ubuf_args *a, uint64_t calls, struct lk_ubuf_work *w)
{
	return count_model(a, false, calls, w);
}

/**
 * lk_time_ubuf_uring - time the modelled io_uring requests of R3
 * @a: the modelled request (variant, rewrite, deferral)
 * @iters: requests in the batch
 *
 * Return: nanoseconds per request, or -errno (-EFAULT, -EINVAL, -ENOMEM, -ETIMEDOUT).
 */
double lk_time_ubuf_uring(const struct lk_ubuf_args *a, uint64_t iters)
{
	return time_model(a, true, iters);
}

/**
 * lk_ubuf_uring_work - count the work of modelled io_uring requests (untimed)
 * @a: the modelled request
 * @calls: how many requests
 * @w: receives the work, summed over the requests
 *
 * Return: 0 or -errno.
 */
int lk_ubuf_uring_work(const struct lk_ubuf_args *a, uint64_t calls, struct lk_ubuf_work *w)
{
	return count_model(a, true, calls, w);
}

/**
 * lk_ubuf_async_size - the size of the modelled io_uring async state
 *
 * Return: sizeof(struct lk_async_rw).
 */
size_t lk_ubuf_async_size(void)
{
	return sizeof(struct lk_async_rw);
}

/**
 * lk_ubuf_iter_size - the size of the modelled iterator
 *
 * Return: sizeof(struct lk_iov_iter).
 */
size_t lk_ubuf_iter_size(void)
{
	return sizeof(struct lk_iov_iter);
}
