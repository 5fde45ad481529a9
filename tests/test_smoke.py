"""A first end-to-end check: build info and one import, copy and revert."""

import labkit


def test_build_is_optimised():
    info = labkit.build_info()
    assert info["optimised"], info


def test_import_copy_revert_roundtrip():
    mem = labkit.UserMemory()
    m = mem.map(3 * labkit.PAGE_SIZE)
    it = labkit.import_iovec(
        labkit.ITER_DEST, [(m.addr, 100), (m.addr + 5000, 0), (m.addr + 4096, 200)], mem
    )
    assert (it.iter_type, it.count, it.nr_segs) == ("IOVEC", 300, 3)
    assert it.copy_to_iter(bytes(range(250))) == 250
    assert bytes(m.array[:100]) == bytes(range(100))
    assert bytes(m.array[4096:4246]) == bytes(range(100, 250))
    assert (it.count, it.iov_offset, it.seg_index) == (50, 150, 2)
    it.revert(250)
    assert (it.count, it.iov_offset, it.seg_index, it.nr_segs) == (300, 0, 0, 3)
