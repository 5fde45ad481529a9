"""results.load validates every file, names a bad one, and refuses or skips it as asked."""

from __future__ import annotations

import json
import os

import pytest

from labkit.measure import results, runner

ENV = {"hostname": "hostA", "cpu_model": "Test CPU"}


def _save(tmp_path, stamp: str, rows: int = 3) -> object:
    df = runner.run("exp", {"a": lambda: [1.5] * rows}, repeats=1, warmup=0, params={"size": 4096})
    return results.save("exp", df, env=ENV, data_dir=tmp_path, timestamp=stamp)


def _damage(path, how: str) -> None:
    text = path.read_text()
    if how == "empty":
        path.write_text("")
    elif how == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    elif how == "truncated-mid-row":
        path.write_text(text[: text.rindex(",") + 2])  # the last number cut short
    elif how == "truncated-at-row":
        path.write_text("".join(text.splitlines(keepends=True)[:-1]))
    elif how == "json-list":
        path.with_suffix(".json").write_text("[1, 2, 3]")
    elif how == "json-garbage":
        path.with_suffix(".json").write_text("{not json")
    elif how == "other-schema":
        path.write_text("tool,variant,instructions_per_call\ncallgrind,a,12\n")
        path.with_suffix(".json").unlink()
    elif how == "other-experiment":
        record = json.loads(path.with_suffix(".json").read_text())
        record["experiment"] = "something-else"
        path.with_suffix(".json").write_text(json.dumps(record))
    elif how in ("fifo-csv", "fifo-json"):
        target = path if how == "fifo-csv" else path.with_suffix(".json")
        target.unlink()
        os.mkfifo(target)  # opened for reading, a FIFO would wait for a writer forever
    elif how in ("dev-zero-csv", "dev-zero-json"):
        target = path if how == "dev-zero-csv" else path.with_suffix(".json")
        target.unlink()
        target.symlink_to("/dev/zero")  # endless: read whole, a MemoryError
    elif how == "huge-csv":
        os.truncate(path, results.MAX_CSV_BYTES + 1)  # sparse: no disk used
    elif how == "deep-json":
        path.with_suffix(".json").write_text("[" * 100_000 + "]" * 100_000)
    elif how == "host-list":
        record = json.loads(path.with_suffix(".json").read_text())
        record["env"]["hostname"] = ["a", "b"]
        path.with_suffix(".json").write_text(json.dumps(record))
    elif how == "saved-run-column":
        lines = text.splitlines(keepends=True)
        lines = [lines[0].rstrip("\n") + ",saved_run\n"] + [
            x.rstrip("\n") + ",x\n" for x in lines[1:]
        ]
        path.write_text("".join(lines))
        path.with_suffix(".json").unlink()
    elif how == "bad-numbers":
        lines = text.splitlines(keepends=True)
        lines[1] = lines[1].replace("1.5", "fast", 1)
        path.write_text("".join(lines))
    else:
        raise AssertionError(how)


DAMAGE = [
    "empty",
    "binary",
    "truncated-mid-row",
    "truncated-at-row",
    "json-list",
    "json-garbage",
    "other-schema",
    "other-experiment",
    "bad-numbers",
    "fifo-csv",
    "fifo-json",
    "dev-zero-csv",
    "dev-zero-json",
    "huge-csv",
    "deep-json",
    "host-list",
    "saved-run-column",
]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_bad_file_is_refused_by_name(tmp_path, how):
    good = _save(tmp_path, "20240101T000000Z")
    bad = _save(tmp_path, "20240102T000000Z")
    _damage(bad, how)
    with pytest.raises(results.ResultFileError) as exc:
        results.load("exp", tmp_path)
    assert exc.value.path.stem == bad.stem and str(bad.stem) in str(exc.value)
    assert isinstance(exc.value, ValueError)
    assert len(results.load_run(good)[0]) == 3


@pytest.mark.parametrize("how", DAMAGE)
def test_a_bad_file_can_be_skipped(tmp_path, how):
    _save(tmp_path, "20240101T000000Z")
    bad = _save(tmp_path, "20240102T000000Z")
    _damage(bad, how)
    with pytest.warns(results.ResultFileWarning, match=bad.stem):
        merged = results.load("exp", tmp_path, bad="skip")
    assert len(merged) == 3 and set(merged["saved_run"]) == {"20240101T000000Z-hostA"}
    assert [p.stem for p, _ in merged.attrs["skipped"]] == [bad.stem]


def test_good_files_load_as_before(tmp_path):
    _save(tmp_path, "20240101T000000Z")
    _save(tmp_path, "20240102T000000Z", rows=2)
    merged = results.load("exp", tmp_path)
    assert len(merged) == 5 and merged.attrs["skipped"] == []
    with pytest.raises(ValueError):
        results.load("exp", tmp_path, bad="ignore")


def test_a_run_without_its_record_still_loads(tmp_path):
    path = _save(tmp_path, "20240101T000000Z")
    path.with_suffix(".json").unlink()
    df, env = results.load_run(path)
    assert len(df) == 3 and env == {}
