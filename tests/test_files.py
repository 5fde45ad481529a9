"""labkit._files: writes that refuse planted links, FIFOs and a second holder of a folder."""

from __future__ import annotations

import errno
import multiprocessing
import os

import pytest

from labkit import _files


def test_atomic_write_refuses_a_link_at_the_name(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("mine\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "row.json").symlink_to(precious)
    with pytest.raises(_files.LinkRefused, match="row.json"):
        _files.atomic_write(out / "row.json", "theirs", root=out)
    assert precious.read_text() == "mine\n"
    assert [p.name for p in out.iterdir()] == ["row.json"]  # no temporary file left


def test_atomic_write_refuses_a_linked_folder_below_the_root(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary").symlink_to(victim)
    with pytest.raises(_files.LinkRefused) as info:
        _files.atomic_write(out / "summary" / "tour--q.json", "{}", root=out)
    assert str(out / "summary") in str(info.value) and info.value.errno == errno.ELOOP
    assert list(victim.iterdir()) == []


def test_make_dirs_refuses_a_dangling_link(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "figures").symlink_to(tmp_path / "nowhere")
    with pytest.raises(_files.LinkRefused, match="figures"):
        _files.make_dirs(out / "figures" / "sub", out)
    assert not (tmp_path / "nowhere").exists()


def test_atomic_write_text_bytes_and_writer(tmp_path):
    _files.atomic_write(tmp_path / "a" / "b.txt", "é\n", root=tmp_path)
    _files.atomic_write(tmp_path / "c.bin", b"\0\1")
    _files.atomic_write(tmp_path / "d.txt", lambda f: f.write("x"))
    assert (tmp_path / "a" / "b.txt").read_text(encoding="utf-8") == "é\n"
    assert (tmp_path / "c.bin").read_bytes() == b"\0\1"
    assert (tmp_path / "d.txt").read_text() == "x"
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "d.txt").stat().st_mode & 0o777 == 0o666 & ~umask


def test_atomic_write_failure_leaves_the_old_file(tmp_path):
    (tmp_path / "f").write_text("old")

    def boom(f):
        f.write("half")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        _files.atomic_write(tmp_path / "f", boom)
    assert (tmp_path / "f").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_open_file_refuses_links_and_fifos(tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_text("data\n" * 100)
    (tmp_path / "kernel.log").symlink_to(precious)
    for mode in ("wb", "ab"):
        with pytest.raises(_files.LinkRefused, match="kernel.log"):
            _files.open_file(tmp_path / "kernel.log", mode)
    assert precious.read_text() == "data\n" * 100
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        _files.open_file(tmp_path / "fifo", "ab")  # returns at once, never waits for a reader
    with _files.open_file(tmp_path / "new.log", "wb") as f:
        f.write(b"x")
    with _files.open_file(tmp_path / "new.log", "ab") as f:
        f.write(b"y")
    assert (tmp_path / "new.log").read_bytes() == b"xy"
    with pytest.raises(FileExistsError):
        _files.open_file(tmp_path / "new.log", "xb")


def test_read_regular_refuses_fifo_device_and_large(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(OSError, match="not a regular file"):
        _files.read_regular(tmp_path / "fifo", 100)
    (tmp_path / "zero").symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        _files.read_regular(tmp_path / "zero", 100)
    (tmp_path / "big").write_bytes(b"x" * 101)
    with pytest.raises(OSError) as info:
        _files.read_regular(tmp_path / "big", 100)
    assert info.value.errno == errno.EFBIG
    assert _files.read_regular(tmp_path / "big", 101) == b"x" * 101


def test_remove_does_not_follow(tmp_path):
    target = tmp_path / "t"
    target.write_text("keep")
    (tmp_path / "l").symlink_to(target)
    assert _files.remove(tmp_path / "l")
    assert target.read_text() == "keep" and not _files.remove(tmp_path / "l")


def _hold(folder, ready, done):
    with _files.FolderLock(folder):
        ready.set()
        done.wait(30)


def test_folder_lock_names_the_holder_and_is_freed_on_exit(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(tmp_path, ready, done))
    proc.start()
    try:
        assert ready.wait(30)
        with pytest.raises(_files.FolderLocked) as info:
            _files.FolderLock(tmp_path).acquire()
        assert f"pid {proc.pid}" in str(info.value) and str(tmp_path) in str(info.value)
    finally:
        done.set()
        proc.join(30)
    with _files.FolderLock(tmp_path):  # free again once the holder is gone
        pass


def test_folder_lock_refuses_a_planted_link(tmp_path):
    (tmp_path / ".lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(_files.LinkRefused):
        _files.FolderLock(tmp_path).acquire()
    assert not (tmp_path / "elsewhere").exists()


def test_same_or_inside(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert _files.same_or_inside(tmp_path / "a" / "b", tmp_path / "a")
    assert _files.same_or_inside(tmp_path / "a", tmp_path / "a")
    assert not _files.same_or_inside(tmp_path / "a", tmp_path / "a" / "b")
