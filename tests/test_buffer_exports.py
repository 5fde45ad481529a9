"""No labkit call pattern reaches CPython's memoryview-in-a-cycle crash (gh-77894).

Before CPython 3.12.7, the cycle collector could clear a ``memoryview`` that
still had a buffer export (``ffi.from_buffer`` takes one) and the interpreter
crashed when the export was released.  labkit takes its exports on private
numpy arrays (which the collector never clears) and releases them before
raising.  Each case runs in a child process, so a crash fails the test: before
the fix every one of them ended in SIGSEGV on Python 3.11.
"""

from __future__ import annotations

import numpy as np
import pytest
from childproc import describe, run_code

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter
from labkit.core.iov_iter import buffer_arg

PRELUDE = """
import gc
import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter
"""

CASES = {
    # a refused copy keeps its export in the exception's frame
    "refused-copy": """
it = labkit.IovIter.kvec(labkit.ITER_SOURCE, [bytearray(16)])
def f():
    try: it.copy_to_iter(memoryview(bytearray(b"abc")))
    except labkit.IterMisuseError as e: err = e
f(); gc.collect()
""",
    # an iterator (which keeps its exports for its life) in a cycle with its memoryview
    "iterator-in-a-cycle": """
for _ in range(20):
    mv = memoryview(bytearray(64))
    box = [IovIter.ubuf(ITER_DEST, mv), IovIter.kvec(ITER_SOURCE, [mv, mv[8:16]]), mv]
    box.append(box)
    del mv, box
    gc.collect()
""",
    # a folio refusing memory it exported (not a power-of-two number of pages)
    "refused-folio": """
import mmap
from labkit.core.folio import Folio
mm = mmap.mmap(-1, 8192)
def f():
    try: Folio.of(memoryview(mm)[:3072])
    except ValueError as e: err = e
for _ in range(20):
    f(); gc.collect()
""",
    # a constructor refusing its arguments after it exported some of them
    "refused-bvec": """
def f():
    mv = memoryview(bytearray(64))
    try: IovIter.bvec(ITER_DEST, [(mv, 0, 8), (mv, 60, 8)])
    except ValueError as e: err = e
for _ in range(20):
    f(); gc.collect()
""",
    "refused-kvec-count": """
def f():
    mv = memoryview(bytearray(8))
    try: IovIter.kvec(ITER_SOURCE, [mv, mv], count=99)
    except ValueError as e: err = e
for _ in range(20):
    f(); gc.collect()
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_memoryview_exports_never_crash_the_collector(case):
    proc = run_code(PRELUDE + CASES[case] + "\nprint('survived')\n", timeout=60)
    assert proc.returncode == 0 and "survived" in proc.stdout, describe(proc)
    assert "exported buffer" not in proc.stderr, describe(proc)


def test_no_export_is_taken_on_the_callers_memoryview():
    mv = memoryview(bytearray(32))
    it = IovIter.ubuf(ITER_DEST, mv)
    mv.release()  # would raise BufferError if labkit held an export on mv itself
    assert it.copy_to_iter(b"abc") == 3


def test_a_refused_call_holds_no_export():
    data = bytearray(8)
    with pytest.raises(ValueError):
        IovIter.kvec(ITER_SOURCE, [data], count=99)
    it = IovIter.kvec(ITER_SOURCE, [bytearray(4)])
    with pytest.raises(labkit.IterMisuseError):
        it.copy_to_iter(data)
    data.extend(b"resizable again")  # BufferError while an export is held
    assert len(data) == 23


def test_buffers_of_python_objects_are_refused():
    """An object array's bytes are pointers: writing them would corrupt the interpreter."""
    objs = np.array([object(), "x", 3], dtype=object)
    for make in (
        lambda: IovIter.ubuf(ITER_DEST, objs),
        lambda: IovIter.kvec(ITER_SOURCE, [objs]),
        lambda: IovIter.bvec(ITER_DEST, [(objs, 0, 8)]),
        lambda: IovIter.discard(ITER_DEST, 8).copy_to_iter(memoryview(objs)),
    ):
        with pytest.raises(TypeError, match="Python objects"):
            make()


@pytest.mark.parametrize(
    "buf, writable, message",
    [
        (np.zeros(8, np.uint8)[::2], False, "C-contiguous"),
        (b"read-only", True, "read-only"),
        (np.zeros(4, np.uint8).copy().view(), True, None),
        ("text", False, "buffer"),
    ],
)
def test_buffer_arg_explains_what_it_refuses(buf, writable, message):
    if message is None:
        with buffer_arg(buf, writable) as cb:
            assert len(cb) == 4
        return
    with pytest.raises(TypeError, match=message):
        buffer_arg(buf, writable)
