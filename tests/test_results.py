"""Results on disk: CSV round trip, environment record, atomic writes, merging."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labkit.measure import results, runner

ENV = {
    "hostname": "hostA",
    "cpu_model": "Test CPU",
    "kernel_release": "6.9.0",
    "quick_mode": True,
    "labkit_version": "0.1.0",
    "git_commit": None,
}


def sample_frame():
    df = runner.run(
        "exp",
        {"a": lambda: [0.1, 1 / 3], "b": lambda: 12345.678901234567},
        repeats=2,
        warmup=0,
        params={"size": 4096, "kind": "ubuf"},
    )
    return df


def test_csv_round_trip(tmp_path):
    df = sample_frame()
    path = results.save("exp", df, env=ENV, data_dir=tmp_path, timestamp="20240101T000000Z")
    assert path == tmp_path / "results" / "exp" / "20240101T000000Z-hostA.csv"
    back, env = results.load_run(path)
    pd.testing.assert_frame_equal(back, df)
    assert env == ENV
    meta = json.loads(path.with_suffix(".json").read_text())
    assert meta["rows"] == len(df) and meta["experiment"] == "exp"


def test_default_data_dir_follows_labkit_data(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_DATA", str(tmp_path))
    path = results.save("exp", sample_frame(), env=ENV)
    assert path.parent == tmp_path / "results" / "exp"
    assert len(results.load("exp")) == len(sample_frame())


def test_save_all_outside_any_clone(tmp_path, monkeypatch):
    # A reproduction from an installed wheel (or with --out elsewhere) writes outside the
    # clone: saving must not assume one (notebook 04 once printed paths relative to it).
    out = tmp_path / "elsewhere"
    monkeypatch.setenv("LABKIT_DATA", str(out))
    monkeypatch.chdir(tmp_path)
    said = results.save_all(
        {"exp": sample_frame(), "skipped": None, "exp2": sample_frame()}, env=ENV
    )
    assert said == f"saved 2 result files under {out / 'results'}: exp, exp2"
    assert len(results.runs("exp", out)) == 1 and len(results.runs("exp2", out)) == 1
    assert not (out / "results" / "skipped").exists()


def test_same_second_runs_do_not_overwrite(tmp_path):
    a = results.save("exp", sample_frame(), env=ENV, data_dir=tmp_path, timestamp="T")
    b = results.save("exp", sample_frame(), env=ENV, data_dir=tmp_path, timestamp="T")
    assert a != b and a.exists() and b.exists()


def test_same_second_saves_racing_do_not_overwrite(tmp_path, monkeypatch):
    """Two notebooks side by side saving one experiment in the same second: each checks
    the name is free before the other has written it; the name is reserved atomically."""
    monkeypatch.setattr(Path, "exists", lambda self: False)  # neither sees the other's file
    a = results.save("exp", sample_frame(), env=ENV, data_dir=tmp_path, timestamp="T")
    b = results.save("exp", sample_frame(), env=ENV, data_dir=tmp_path, timestamp="T")
    monkeypatch.undo()
    assert a != b and a.is_file() and b.is_file()
    assert a.with_suffix(".json").stat().st_size > 0 and b.with_suffix(".json").stat().st_size > 0


def test_merge_across_machines(tmp_path):
    df = sample_frame()
    results.save("exp", df, env=ENV, data_dir=tmp_path / "m1", timestamp="20240101T000000Z")
    results.save(
        "exp",
        df,
        env={**ENV, "hostname": "hostB", "cpu_model": "Other"},
        data_dir=tmp_path / "m2",
        timestamp="20240102T000000Z",
    )
    merged = results.load("exp", [tmp_path / "m1", tmp_path / "m2"])
    assert len(merged) == 2 * len(df)
    assert sorted(set(merged["host"])) == ["hostA", "hostB"]
    assert set(merged["env_cpu_model"]) == {"Test CPU", "Other"}
    assert merged.groupby("saved_run").size().tolist() == [len(df), len(df)]
    assert results.load("nothing", tmp_path).empty


def test_interrupted_write_leaves_no_file(tmp_path):
    target = tmp_path / "out.csv"

    def half_then_die(f):
        f.write("experiment,variant\nx,")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        results.atomic_write(target, half_then_die)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_interrupted_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "out.csv"
    results.atomic_write(target, lambda f: f.write("old\n"))
    with pytest.raises(ZeroDivisionError):
        results.atomic_write(target, lambda f: (f.write("new, half"), 1 / 0))
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_interrupted_save_leaves_no_csv(tmp_path, monkeypatch):
    class Boom(Exception):
        pass

    def broken_to_csv(self, f, **kw):
        f.write("experiment,variant,rep")
        raise Boom

    monkeypatch.setattr(pd.DataFrame, "to_csv", broken_to_csv)
    with pytest.raises(Boom):
        results.save("exp", sample_frame(), env=ENV, data_dir=tmp_path, timestamp="T")
    assert results.runs("exp", tmp_path) == []
    assert not list((tmp_path / "results" / "exp").glob("*.csv"))
    assert not list((tmp_path / "results" / "exp").glob(".*"))


def test_hidden_temporary_files_are_not_loaded(tmp_path):
    d = tmp_path / "results" / "exp"
    d.mkdir(parents=True)
    (d / ".x.csv.abc.tmp").write_text("half")
    (d / ".y.csv").write_text("a,b\n1,")
    assert results.runs("exp", tmp_path) == []


def test_bad_names_and_frames(tmp_path):
    with pytest.raises(ValueError):
        results.save("///", sample_frame(), env=ENV, data_dir=tmp_path)
    with pytest.raises(TypeError):
        results.save("exp", np.zeros(3), env=ENV, data_dir=tmp_path)
    assert results.results_dir("a b/c", tmp_path).name == "a-b-c"
