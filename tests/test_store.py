"""labkit._store: a folder built aside, recorded in a manifest, swapped in, verified by readers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from labkit._files import LinkRefused
from labkit._store import MANIFEST, Store, StoreDamaged

REBUILD = "labkit thing build"


def _store(tmp_path: Path) -> Store:
    return Store(tmp_path / "cache" / "things" / "one", rebuild=REBUILD, root=tmp_path / "cache")


def _build(store: Store, files: dict[str, bytes], record: dict | None = None) -> None:
    with store.building() as stage:
        for rel, data in files.items():
            (stage.path / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage.path / rel).write_bytes(data)
        stage.record = record or {"n": len(files)}


def test_build_then_read_gives_the_record(tmp_path):
    store = _store(tmp_path)
    assert store.read() is None
    _build(store, {"a.so": b"A" * 1000, "sub/b": b"bee"}, {"era": "6.1"})
    assert store.read() == {"era": "6.1"}
    manifest = json.loads((store.folder / MANIFEST).read_text())
    assert manifest["artefacts"]["a.so"]["size"] == 1000
    assert set(manifest["artefacts"]) == {"a.so", "sub/b"}
    # nothing but the store, its locks: no temporary sibling left
    left = sorted(p.name for p in store.folder.parent.iterdir())
    assert left == [".one.build.lock", ".one.lock", "one"]


@pytest.mark.parametrize(
    "damage, words",
    [
        ("truncate", "bytes, the manifest records 1000"),
        ("empty", "bytes, the manifest records 1000"),
        ("garbage", "sha256"),
        ("link", "symbolic link"),
        ("missing", "missing"),
        ("fifo", "not a regular file"),
        ("manifest-garbage", "not a readable manifest"),
        ("manifest-list", "not a manifest"),
        ("manifest-missing", "missing"),
    ],
)
def test_damage_is_one_line_naming_the_file_and_the_rebuild(tmp_path, damage, words):
    store = _store(tmp_path)
    _build(store, {"a.so": b"A" * 1000})
    target = store.folder / "a.so"
    if damage == "truncate":
        os.truncate(target, 500)
    elif damage == "empty":
        os.truncate(target, 0)
    elif damage == "garbage":
        target.write_bytes(b"B" * 1000)
    elif damage == "link":
        (tmp_path / "elsewhere").write_bytes(b"A" * 1000)
        target.unlink()
        target.symlink_to(tmp_path / "elsewhere")
    elif damage == "missing":
        target.unlink()
    elif damage == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif damage == "manifest-garbage":
        target = store.folder / MANIFEST
        target.write_text('{"format": 1, "artef')
    elif damage == "manifest-list":
        target = store.folder / MANIFEST
        target.write_text("[]")
    elif damage == "manifest-missing":
        target = store.folder / MANIFEST
        target.unlink()
    with pytest.raises(StoreDamaged) as info:
        store.read()
    text = str(info.value)
    assert "\n" not in text
    assert str(target) in text and words in text and text.endswith(f"rebuild with: {REBUILD}")


def test_a_link_at_the_store_or_on_the_way_is_refused_and_never_written(tmp_path):
    store = _store(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("mine")
    store.folder.parent.mkdir(parents=True)
    store.folder.symlink_to(victim)
    with pytest.raises(StoreDamaged, match="symbolic link"):
        store.read()
    _build(store, {"a": b"x"})  # the link is swapped out (renamed, removed), never followed
    assert (victim / "keep").read_text() == "mine" and store.read() == {"n": 1}
    # a link on the way from the root
    other = Store(tmp_path / "cache" / "linked" / "one", rebuild=REBUILD, root=tmp_path / "cache")
    (tmp_path / "cache" / "linked").symlink_to(victim)
    with pytest.raises(LinkRefused):
        other.read()
    with pytest.raises(LinkRefused), other.building():
        pass
    assert sorted(p.name for p in victim.iterdir()) == ["keep"]


def test_a_link_planted_at_the_lock_is_refused(tmp_path):
    store = _store(tmp_path)
    _build(store, {"a": b"x"})
    lock = store.folder.parent / ".one.lock"
    lock.unlink()
    lock.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(LinkRefused):
        store.read()
    assert not (tmp_path / "elsewhere").exists()


def test_a_link_made_by_the_builder_is_refused_and_the_store_untouched(tmp_path):
    store = _store(tmp_path)
    _build(store, {"a": b"x"})
    with pytest.raises(LinkRefused), store.building() as stage:
        (stage.path / "a").write_bytes(b"y")
        (stage.path / "l").symlink_to("/etc/passwd")
    assert store.read() == {"n": 1}
    assert (store.folder / "a").read_bytes() == b"x"


def test_a_failed_rebuild_leaves_the_old_store_whole(tmp_path):
    store = _store(tmp_path)
    _build(store, {"a": b"old"})
    with pytest.raises(RuntimeError), store.building() as stage:
        (stage.path / "a").write_bytes(b"half")
        raise RuntimeError("make failed")
    assert store.read() == {"n": 1} and (store.folder / "a").read_bytes() == b"old"
    assert [p for p in store.folder.parent.iterdir() if ".tmp-" in p.name] == []


def test_a_rebuild_swaps_a_new_folder_in(tmp_path):
    store = _store(tmp_path)
    _build(store, {"a": b"old"})
    before = os.stat(store.folder).st_ino
    held = os.open(store.folder / "a", os.O_RDONLY)  # a reader using the old build
    try:
        _build(store, {"a": b"new!"}, {"v": 2})
        assert os.stat(store.folder).st_ino != before  # a new folder, not rewritten in place
        assert os.pread(held, 10, 0) == b"old"  # the reader's file was not rewritten
    finally:
        os.close(held)
    assert store.read() == {"v": 2} and (store.folder / "a").read_bytes() == b"new!"


def test_a_killed_build_is_cleaned_up_by_the_next(tmp_path):
    store = _store(tmp_path)
    script = textwrap.dedent(
        f"""
        import os, sys, time
        from labkit._store import Store
        s = Store({str(store.folder)!r}, rebuild="x", root={str(tmp_path / "cache")!r})
        with s.building() as stage:
            (stage.path / "half").write_bytes(b"h" * 100)
            print("ready", flush=True)
            time.sleep(60)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert store.read() is None  # the half-built stage is never seen as the store
    assert any(".tmp-" in p.name for p in store.folder.parent.iterdir())
    _build(store, {"a": b"x"})
    assert store.read() == {"n": 1}
    assert not any(".tmp-" in p.name for p in store.folder.parent.iterdir())


def test_a_read_only_store_is_read_without_its_lock(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    store = _store(tmp_path)
    _build(store, {"a": b"x"})
    for p in store.folder.parent.glob(".one*lock"):
        p.unlink()
    os.chmod(store.folder.parent, 0o555)
    try:
        assert store.read() == {"n": 1}
    finally:
        os.chmod(store.folder.parent, 0o755)


def test_build_keeps_a_good_store_rebuilds_a_damaged_one_and_force_always(tmp_path):
    store = _store(tmp_path)
    calls = []

    def make(stage):
        calls.append(1)
        (stage.path / "a").write_bytes(b"x" * len(calls))
        stage.record = {"built": len(calls)}

    assert store.build(make) == {"built": 1}
    assert store.build(make) == {"built": 1} and len(calls) == 1
    os.truncate(store.folder / "a", 0)
    assert store.build(make) == {"built": 2}
    assert store.build(make, force=True) == {"built": 3}
