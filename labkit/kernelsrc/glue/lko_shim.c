// SPDX-License-Identifier: MIT
/*
 * labkit's kernel-source oracle, kernel side: compiled inside a kernel tree
 * by its own kbuild (ARCH=um) beside lib/iov_iter.c, it turns the flat calls
 * of lko.h into the tree's own iov_iter API.  It only calls that API and reads
 * struct iov_iter; it holds no code of the kernel's.
 */
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/version.h>

#include "lko.h"

struct lko {
	struct iov_iter it;
	int valid;
	struct iovec fast[UIO_FASTIOV];
	struct iovec *heap;		/* import_iovec's own allocation */
	struct iovec single;		/* import_single_range's */
	const void *base;		/* the array the iterator started on */
	struct kvec *kv;		/* the constructors' arrays (kmalloc) */
	struct bio_vec *bv;
	struct iov_iter saved;		/* lko_save / lko_restore */
};

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
#define LKO_IOV(i) iter_iov(i)
#else
#define LKO_IOV(i) ((i)->iov)
#endif

void *lko_new(void)
{
	struct lko *o = lkr_alloc(sizeof(*o));

	return o;
}

static void lko_reset(struct lko *o)
{
	kfree(o->heap);
	lkr_free(o->kv);
	lkr_free(o->bv);
	o->heap = NULL;
	o->kv = NULL;
	o->bv = NULL;
	o->valid = 0;
	o->base = NULL;
}

void lko_free(void *h)
{
	if (!h)
		return;
	lko_reset(h);
	lkr_free(h);
}

s64 lko_import_iovec(void *h, int dir, const struct lko_seg *uvec, u64 nr_segs)
{
	struct lko *o = h;
	struct iovec *iov = o->fast;
	ssize_t ret;

	lko_reset(o);
	/* the array is read with copy_from_user(): the runtime lets it through */
	lkr_allow(uvec, nr_segs * sizeof(*uvec));
	ret = import_iovec(dir, (const struct iovec __user *)uvec, nr_segs, UIO_FASTIOV, &iov,
			   &o->it);
	lkr_allow(NULL, 0);
	if (ret < 0)
		return ret;
	o->heap = iov;		/* NULL when the on-stack array (or none, for UBUF) was used */
	o->base = iov ? iov : o->fast;
	o->valid = 1;
	return ret;
}

s64 lko_import_single_range(void *h, int dir, u64 addr, u64 len)
{
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0)
	struct lko *o = h;
	int ret;

	lko_reset(o);
	ret = import_single_range(dir, (void __user *)addr, len, &o->single, &o->it);
	if (ret < 0)
		return ret;
	o->base = &o->single;
	o->valid = 1;
	return 0;
#else
	return -ENOSYS;
#endif
}

s64 lko_import_ubuf(void *h, int dir, u64 addr, u64 len)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0) || defined(LKO_HAVE_IMPORT_UBUF)
	struct lko *o = h;
	int ret;

	lko_reset(o);
	ret = import_ubuf(dir, (void __user *)addr, len, &o->it);
	if (ret < 0)
		return ret;
	o->valid = 1;
	return 0;
#else
	return -ENOSYS;
#endif
}

s64 lko_kvec(void *h, int dir, const struct lko_seg *segs, u64 nr, u64 count)
{
	struct lko *o = h;
	u64 k;

	lko_reset(o);
	o->kv = lkr_alloc((nr ? nr : 1) * sizeof(*o->kv));
	if (!o->kv)
		return -ENOMEM;
	for (k = 0; k < nr; k++) {
		o->kv[k].iov_base = (void *)segs[k].base;
		o->kv[k].iov_len = segs[k].len;
	}
	iov_iter_kvec(&o->it, dir, o->kv, nr, count);
	o->base = o->kv;
	o->valid = 1;
	return 0;
}

s64 lko_bvec(void *h, int dir, const struct lko_bseg *segs, u64 nr, u64 count)
{
	struct lko *o = h;
	u64 k;

	lko_reset(o);
	o->bv = lkr_alloc((nr ? nr : 1) * sizeof(*o->bv));
	if (!o->bv)
		return -ENOMEM;
	for (k = 0; k < nr; k++) {
		o->bv[k].bv_page = virt_to_page((void *)segs[k].page_addr);
		o->bv[k].bv_len = segs[k].len;
		o->bv[k].bv_offset = segs[k].offset;
	}
	iov_iter_bvec(&o->it, dir, o->bv, nr, count);
	o->base = o->bv;
	o->valid = 1;
	return 0;
}

void lko_save(void *h)
{
	struct lko *o = h;

	o->saved = o->it;
}

void lko_restore(void *h)
{
	struct lko *o = h;

	o->it = o->saved;
}

void lko_advance(void *h, u64 n)
{
	iov_iter_advance(&((struct lko *)h)->it, n);
}

void lko_revert(void *h, u64 n)
{
	iov_iter_revert(&((struct lko *)h)->it, n);
}

u64 lko_zero(void *h, u64 n)
{
	return iov_iter_zero(n, &((struct lko *)h)->it);
}

u64 lko_copy_to(void *h, const void *src, u64 n)
{
	return copy_to_iter(src, n, &((struct lko *)h)->it);
}

u64 lko_copy_from(void *h, void *dst, u64 n)
{
	return copy_from_iter(dst, n, &((struct lko *)h)->it);
}

void lko_state(void *h, struct lko_state *out)
{
	struct lko *o = h;
	const struct iov_iter *i = &o->it;

	memset(out, 0, sizeof(*out));
	out->valid = o->valid;
	if (!o->valid)
		return;
	out->data_source = i->data_source;
	out->count = i->count;
	out->iov_offset = i->iov_offset;
	out->nr_segs = i->nr_segs;
	out->heap = o->heap != NULL;
	if (iter_is_ubuf(i)) {
		out->type = 0;
		out->ubuf = (u64)i->ubuf;
	} else if (iter_is_iovec(i)) {
		out->type = 1;
		out->seg = LKO_IOV(i) - (const struct iovec *)o->base;
	} else if (iov_iter_is_kvec(i)) {
		out->type = 2;
		out->seg = i->kvec - o->kv;
	} else if (iov_iter_is_bvec(i)) {
		out->type = 3;
		out->seg = i->bvec - o->bv;
	} else if (iov_iter_is_discard(i)) {
		out->type = 4;
	} else {
		out->type = 9;
	}
}

s64 lko_version(void)
{
	return LINUX_VERSION_CODE;
}

s64 lko_has(int what)
{
	if (what == 1)
		return LINUX_VERSION_CODE < KERNEL_VERSION(6, 7, 0);
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0) || defined(LKO_HAVE_IMPORT_UBUF)
	if (what == 2)
		return 1;
#endif
	return 0;
}
