/*
 * iov_extract.h - listing the pages under an iterator, as the kernel's
 * iov_iter_extract_pages() (lib/iov_iter.c).
 *
 * A "page" here is the address of the first byte of a 4 KiB page of the
 * model's memory.  Nothing is pinned or referenced: as in the kernel for
 * KVEC, BVEC, FOLIOQ and XARRAY, the pages are merely listed.
 */
#ifndef LK_IOV_EXTRACT_H
#define LK_IOV_EXTRACT_H

#include <sys/types.h>

#include "iov_iter.h"

/*
 * List up to maxpages pages (into pages[], which holds maxpages entries) of at
 * most maxsize bytes from the current position, set *offset0 to the offset of
 * the first byte in pages[0] and *nr_pages to the entries filled, advance the
 * iterator past the bytes listed and return their number; 0 when there is
 * nothing to list, -EFAULT for DISCARD or a user page that is not mapped,
 * -ENOMEM for maxpages == 0, -EIO as the kernel's FOLIOQ check.
 */
ssize_t lk_iter_extract_pages(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
			      unsigned int maxpages, size_t *offset0, unsigned int *nr_pages);

#endif
