"""One iterator driven from several threads never writes outside its memory.

cffi releases the GIL in every C call, so threads sharing one IovIter really
run the C core at the same time; every operation on one iterator is atomic
(it holds the iterator's lock across its C call).  The hammering runs in a
child process (labkit/testing/iter_threads_driver.py): before the lock, the UBUF over
a numpy array crashed it (SIGSEGV), and the user-backed imports overwrote the
guard regions around their segment with no error.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from childproc import describe, run_python

import labkit
from labkit import ITER_DEST, ITER_SOURCE, IovIter

DRIVER = ["-m", "labkit.testing.iter_threads_driver"]


@pytest.mark.parametrize("kind", ["ubuf", "iovec", "iovec63"])
def test_threads_on_one_iterator_write_nothing_outside_it(kind):
    proc = run_python([*DRIVER, kind, "1.5"])
    assert proc.returncode == 0, describe(proc)
    assert " 0 stray bytes" in proc.stdout


def test_an_operation_waits_for_another_threads_copy():
    """While one thread is inside a copy (holding the iterator), another's revert waits."""
    it = IovIter.kvec(ITER_SOURCE, [bytearray(b"x" * 64)])
    entered, results = threading.Event(), []
    with it._locked():  # what a copy holds across its C call
        t = threading.Thread(target=lambda: (entered.set(), results.append(it.advance(10))))
        t.start()
        entered.wait(5)
        t.join(0.2)
        assert t.is_alive() and it.count == 64  # blocked until the lock is released
    t.join(5)
    assert not t.is_alive() and it.count == 54


def test_user_backed_iterators_share_the_address_space_lock():
    """A user-backed iterator's operations hold its UserMemory's lock (they read its table)."""
    mem = labkit.UserMemory()
    m = mem.map(labkit.PAGE_SIZE)
    it = labkit.import_ubuf(ITER_DEST, m.addr, 100, mem)
    with it._locked():
        assert mem.lock._is_owned()
    assert np.count_nonzero(m.array) == 0
