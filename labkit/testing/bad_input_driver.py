"""Drive labkit's public API with hostile arguments; run as a script in a subprocess.

tests/test_bad_input.py runs this file with ``python -m labkit.testing.bad_input_driver N``
(N = number of hypothesis examples) so that a crash of the C core (a segfault,
an abort, a sanitizer report) fails that test instead of killing pytest.  Each
example builds iterators and address spaces from arbitrary integers (negative,
huge, 2**64, 2**100), wrong types (None, str, float, lists) and unmapped
addresses, then calls operations on whatever it managed to build.  The only
exceptions allowed out are the documented ones: OSError, ValueError (which
includes labkit.IterMisuseError) and TypeError.  Exit status 0 means none
other appeared and the process survived.
"""

from __future__ import annotations

import sys

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import labkit
from labkit import IovIter, UserMemory

ALLOWED = (OSError, ValueError, TypeError)
PAGE = labkit.PAGE_SIZE
EDGES = [
    0,
    1,
    -1,
    7,
    PAGE - 1,
    PAGE,
    PAGE + 1,
    2**31 - 1,
    2**31,
    2**32,
    2**32 + 1,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    2**100,
    -(2**63),
    -(2**64),
    -(2**100),
    labkit.MAX_RW_COUNT,
    labkit.MAX_RW_COUNT + 1,
    labkit.UIO_MAXIOV + 1,
]

ints = st.one_of(st.sampled_from(EDGES), st.integers(-(2**70), 2**70), st.integers(-5, 5000))
junk = st.one_of(
    st.none(),
    st.text(max_size=3),
    st.floats(allow_nan=True),
    st.lists(st.integers(-3, 3), max_size=3),
    st.just(object()),
    st.just(b"xy"),
    st.booleans(),
    st.builds(np.int64, st.integers(-5, 5000)),
    st.just(np.float32(1.5)),
    st.just({}),
)
values = st.one_of(ints, ints, junk)
directions = st.one_of(st.sampled_from([labkit.ITER_DEST, labkit.ITER_SOURCE, 0, 1]), values)


class World:
    """A UserMemory with two live mappings, one unmapped one, and a writable page
    followed by a PROT_NONE hole and a read-only page."""

    def __init__(self) -> None:
        self.mem = UserMemory()
        self.a = self.mem.map(2 * PAGE)
        self.b = self.mem.map(PAGE)
        self.c, self.hole, self.ro = self.mem.map_contiguous(
            [
                (PAGE, labkit.core.memory.PROT_RW),
                (PAGE, labkit.core.memory.PROT_NONE),
                (PAGE, labkit.core.memory.PROT_READ),
            ]
        )
        gone = self.mem.map(PAGE)
        self.mem.unmap(gone)
        self.gone = gone

    def addresses(self):
        return st.one_of(
            st.sampled_from(
                [
                    self.a.addr,
                    self.a.addr + PAGE - 3,
                    self.a.end - 1,
                    self.a.end,
                    self.b.addr,
                    self.gone.addr,
                    self.gone.addr + 10,
                    self.c.end - 3,
                    self.hole.addr,
                    self.ro.addr,
                    self.ro.end - 1,
                    labkit.core.memory.USER_PTR_MAX,
                    0,
                ]
            ),
            st.builds(lambda k: self.a.addr + k, st.integers(-PAGE, 3 * PAGE)),
            values,
        )

    def buffers(self):
        arr = self.a.array
        return st.one_of(
            st.sampled_from(
                [
                    arr,
                    arr[:10],
                    arr[5:5],
                    arr[::2],
                    bytearray(16),
                    bytes(8),
                    memoryview(bytes(4)),
                    memoryview(bytearray(12)),
                    np.zeros((3, 4), np.uint8),
                    np.zeros(4, np.float64),
                    self.gone.array,
                    "text",
                    None,
                    5,
                    [1, 2],
                ]
            ),
            values,
        )


def build(data, w: World):
    """One iterator built from arbitrary arguments, or None if it was refused."""
    which = data.draw(st.integers(0, 10))
    d = data.draw(directions)
    try:
        if which == 0:
            return IovIter.ubuf(d, data.draw(w.buffers()))
        if which in (1, 2):
            bufs = data.draw(st.one_of(st.lists(w.buffers(), max_size=4), values))
            count = data.draw(st.one_of(st.none(), values))
            make = IovIter.iovec if which == 1 else IovIter.kvec
            return make(d, bufs, count=count)
        if which == 3:
            entry = st.one_of(
                st.tuples(w.buffers(), values, values),
                st.tuples(st.just(w.a.array), st.integers(-2, 3 * PAGE), st.integers(-2, 3 * PAGE)),
                values,
            )
            return IovIter.bvec(
                d,
                data.draw(st.lists(entry, max_size=4)),
                count=data.draw(st.one_of(st.none(), values)),
            )
        if which == 4:
            return IovIter.discard(d, data.draw(values))
        if which in (5, 6):
            pair = st.one_of(
                st.tuples(w.addresses(), values),
                values,
                st.tuples(w.addresses(), st.integers(0, 2 * PAGE)),
            )
            mem = data.draw(st.sampled_from([w.mem, None, 3]))
            return labkit.import_iovec(
                d,
                data.draw(st.lists(pair, max_size=10)),
                mem,
                fast_segs=data.draw(st.one_of(st.just(8), values)),
                kernel=data.draw(st.one_of(st.sampled_from(["6.3", "6.4"]), values)),
            )
        if which == 7:
            return labkit.import_ubuf(d, data.draw(w.addresses()), data.draw(values), w.mem)
        if which in (9, 10):
            return build_folio_iter(data, w, d, which == 9)
        return labkit.import_single_range(
            d,
            data.draw(w.addresses()),
            data.draw(values),
            w.mem,
            kernel=data.draw(st.sampled_from(["6.3", "6.4"])),
        )
    except ALLOWED:
        return None


def folio_arg(data, w: World):
    """A folio or an order, or junk: fresh memory, pages of a mapping (aligned or not)."""
    arr = w.a.array
    return data.draw(
        st.one_of(
            st.sampled_from([0, 1, 2]),
            values,
            st.builds(
                lambda k, n: arr[k : k + n],
                st.sampled_from([0, 1, PAGE]),
                st.sampled_from([PAGE, 2 * PAGE, PAGE - 1, 0]),
            ),
            st.just(w.gone.array),
        )
    )


def build_folio_iter(data, w: World, d, xarray: bool):
    """An XARRAY over a PageCache or a FOLIOQ over a FolioQueue, from arbitrary arguments."""
    if xarray:
        cache = labkit.PageCache()
        for _ in range(data.draw(st.integers(0, 4))):
            folio = folio_arg(data, w)
            try:
                cache.add(
                    data.draw(st.one_of(st.integers(0, 8), values)),
                    folio if isinstance(folio, int) else labkit.Folio.of(folio),
                )
            except ALLOWED:
                pass
        for call in (lambda: cache.erase(data.draw(values)), lambda: cache.load(data.draw(values))):
            try:
                call()
            except ALLOWED:
                pass
        return IovIter.xarray(
            d, data.draw(st.one_of(st.just(cache), values)), data.draw(values), data.draw(values)
        )
    queue = labkit.FolioQueue()
    for _ in range(data.draw(st.one_of(st.integers(0, 4), st.integers(30, 34)))):
        folio = folio_arg(data, w)
        try:
            queue.append(folio if isinstance(folio, int) else labkit.Folio.of(folio))
        except ALLOWED:
            pass
    try:
        queue.clear(data.draw(values), data.draw(values))
    except ALLOWED:
        pass
    it = IovIter.folio_queue(
        d,
        data.draw(st.one_of(st.just(queue), values)),
        data.draw(st.one_of(st.integers(0, 31), values)),
        data.draw(st.one_of(st.integers(0, PAGE), values)),
        data.draw(st.one_of(st.none(), values)),
        segment=data.draw(st.one_of(st.just(0), values)),
    )
    if data.draw(st.booleans()):
        queue.free()
    return it


def poke(data, it) -> None:
    """Random operations with arbitrary arguments on a built iterator."""
    for _ in range(data.draw(st.integers(0, 12))):
        op = data.draw(
            st.sampled_from(
                [
                    "advance",
                    "revert",
                    "truncate",
                    "reexpand",
                    "copy_to",
                    "copy_from",
                    "zero",
                    "npages",
                    "query",
                    "extract",
                ]
            )
        )
        arg = data.draw(values)
        try:
            if op == "advance":
                it.advance(arg)
            elif op == "revert":
                it.revert(arg)
            elif op == "truncate":
                it.truncate(arg)
            elif op == "reexpand":
                it.reexpand(arg)
            elif op == "copy_to":
                it.copy_to_iter(data.draw(st.one_of(st.binary(max_size=300), values)))
            elif op == "copy_from":
                if it.count <= 2**24:  # the result is a real bytes object
                    it.copy_from_iter(arg)
            elif op == "zero":
                if it.iter_type == "DISCARD" or it.count <= 2**24:
                    it.zero(arg)
            elif op == "npages":
                it.npages(arg)
            elif op == "extract":
                it.extract_pages(arg, data.draw(values))
            else:
                repr(it)
                it.state()
                it.single_seg_count()
                it.alignment()
                it.iovec()
        except ALLOWED:
            pass


def memory_calls(data, w: World) -> None:
    a, b = data.draw(values), data.draw(values)
    for call in (
        lambda: w.mem.is_mapped(a, b),
        lambda: w.mem.accessible(a, b, write=True),
        lambda: labkit.core.memory.access_ok(a, b),
        lambda: w.mem.view(a, b),
        lambda: w.mem.find(a),
        lambda: w.mem.unmap(data.draw(st.one_of(values, st.just(w.gone)))),
        lambda: labkit.kernel_era(data.draw(values)),
    ):
        try:
            call()
        except ALLOWED:
            pass
    try:
        size = data.draw(values)
        m = w.mem.map(
            size,
            align=data.draw(st.one_of(st.just(PAGE), values)),
            prot=data.draw(st.one_of(st.sampled_from([0, 1, 3]), values)),
        )
    except ALLOWED:
        return
    w.mem.unmap(m)
    try:
        pieces = data.draw(
            st.lists(st.tuples(values, st.one_of(st.sampled_from([0, 1, 3]), values)), max_size=3)
        )
        ms = w.mem.map_contiguous(pieces)
    except ALLOWED:
        return
    for m in ms:
        w.mem.unmap(m)


def main(examples: int) -> int:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def hostile(data):
        w = World()
        memory_calls(data, w)
        it = build(data, w)
        if it is not None:
            poke(data, it)
            if data.draw(st.booleans()):  # unmap what the iterator points into, then copy
                for m in (w.a, w.b):
                    w.mem.unmap(m)
                poke(data, it)

    hostile()
    print(f"bad_input_driver: {examples} examples, only documented exceptions")
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
