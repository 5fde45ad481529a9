"""``IovIter.extract_pages``: the pages under an iterator, as ``iov_iter_extract_pages()``.

The kernel hands a block driver or a network card the pages behind an
iterator: up to ``maxpages`` pages holding up to ``maxsize`` bytes from the
current position, the offset of the first byte in the first page, and the
iterator advanced past those bytes.  A page here is the address of a 4 KiB
page of the model's memory; nothing is pinned (the kernel pins user pages;
for KVEC, BVEC, FOLIOQ and XARRAY it only lists them, as here).

Per type (today's lib/iov_iter.c, BVEC as since Linux 6.13):

* UBUF, IOVEC: the pages under the first non-empty segment; a page that is
  not mapped ends the list (a fault on the first is EFAULT).
* KVEC: the pages under the first non-empty segment.
* BVEC: single-page pieces across bvecs while they join at page boundaries.
* FOLIOQ: page by page through the folios; ends at a cleared slot.
* XARRAY: the pages of consecutive indices; ends at a hole.
* DISCARD: EFAULT (it has no memory).
"""

from __future__ import annotations

import errno
from typing import Any, NamedTuple

from labkit._args import size_arg
from labkit._ffi import ffi, lib, raise_errno

PAGE_SIZE = 4096
MAX_RW_COUNT = int(lib.LK_MAX_RW_COUNT)


class ExtractedPages(NamedTuple):
    """What one ``extract_pages`` call listed.

    Attributes:
        length: bytes listed (the kernel's return value); the iterator moved by it.
        offset: offset of the first byte in ``pages[0]`` (the kernel's ``*offset0``).
        pages: page addresses, as many entries as the kernel fills (one more than
            the bytes need only after a zero-length bvec).
    """

    length: int
    offset: int
    pages: list[int]


def extract_pages(
    c_iter: Any, count: int, discard: bool, maxsize: int, maxpages: int
) -> ExtractedPages:
    """``IovIter.extract_pages`` (see its docstring) on the C iterator ``c_iter``, which
    holds ``count`` bytes (``discard``: a DISCARD iterator); the caller holds its lock."""
    maxsize = size_arg(maxsize, "maxsize")
    maxpages = size_arg(maxpages, "maxpages")
    if maxpages < 1:
        raise ValueError(
            "extract_pages: maxpages must be >= 1 (the kernel WARNs: "
            "'caller should've prevented that')"
        )
    maxpages = min(maxpages, 2**32 - 1)  # the kernel's unsigned int
    # no call lists more than the pages under MAX_RW_COUNT bytes (plus the first
    # page's offset and one entry for a zero-length bvec): size the array to that
    bound = (min(maxsize, count, MAX_RW_COUNT) + 2 * PAGE_SIZE - 1) // PAGE_SIZE + 1
    n = min(maxpages, bound)
    pages = ffi.new("uintptr_t[]", n)
    offset0 = ffi.new("size_t *")
    nr = ffi.new("unsigned int *")
    ret = lib.lk_iter_extract_pages(c_iter, pages, maxsize, n, offset0, nr)
    if ret == -errno.EFAULT:
        what = "a DISCARD iterator has no pages" if discard else "the first page is not mapped"
        raise_errno(errno.EFAULT, f"extract_pages: {what}")
    if ret < 0:
        raise_errno(-ret, "extract_pages")
    return ExtractedPages(int(ret), int(offset0[0]), [int(pages[k]) for k in range(nr[0])])
