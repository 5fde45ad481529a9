"""Nothing trusted that was not checked: arguments and settings, measured rows, bundles,
compare's hosts and outputs, worker rows and result tables read back.

(The kernel oracle's cache has its own file, tests/test_kernel_cache.py.)
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings

import pandas as pd
import pytest
import worker_targets  # noqa: F401 - registers the test.* worker targets
from test_gallery import _env, _summary, _two
from test_reproduce import make_notebook

from labkit.claims import schedule, stored
from labkit.cli import main
from labkit.measure import results, workers
from labkit.report import bundle, gallery

# ---- arguments and settings: one rule, checked before any work -----------------------


def _usage_error(capsys, argv: list[str], *words: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]  # argparse: the usage, then one error line
    for w in words:
        assert w in last, last


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e308", "soon"])
def test_kernel_boot_timeout_is_checked(capsys, value):
    _usage_error(capsys, ["kernel", "boot", "--timeout", value], "--timeout", repr(value))


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf"])
def test_reproduce_timeout_is_checked(capsys, value):
    _usage_error(capsys, ["reproduce", "--timeout", value], "--timeout", repr(value))


def test_fractional_timeout_is_allowed():
    from labkit._options import seconds

    assert seconds()("1.5") == 1.5  # and a notebook runs under it: see the planted-link test


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "--sessions", "1e23"],
        ["reproduce", "--sessions", "100000000000000000000000"],
        ["reproduce", "--sessions", "0"],
        ["bench", "copy", "--runs", "100000000"],
        ["bench", "copy", "--runs", "0"],
        ["kernel", "diff", "--sequences", "0"],
    ],
)
def test_counts_have_sane_bounds(capsys, argv):
    _usage_error(capsys, argv, argv[-2], repr(argv[-1]))


@pytest.mark.parametrize("value", ["abc", "-1", "1e-6", "nan"])
def test_a_bad_time_budget_is_one_line_before_any_work(capsys, monkeypatch, value):
    monkeypatch.setenv("LABKIT_TIME_BUDGET", value)
    assert main(["bench", "copy", "--quick", "--no-save", "--no-progress"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing measured
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and "LABKIT_TIME_BUDGET" in err and value in err


def test_boot_save_with_labkit_data_a_file_is_refused_before_the_boot(
    capsys, monkeypatch, tmp_path
):
    afile = tmp_path / "afile"
    afile.write_text("x")
    monkeypatch.setenv("LABKIT_DATA", str(afile))
    assert main(["kernel", "boot", "--save"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "LABKIT_DATA" in err


# ---- the measuring phase degrades; its rows are verified when read -------------------


def test_a_failing_experiment_stops_only_itself():
    calls = {"good": 0}

    def good():
        calls["good"] += 1
        return pd.DataFrame({"ns_per_op": [1.0]})

    def bad():
        raise OSError(28, "No space left on device")

    jobs = [schedule.Job("bad", bad, runs=3), schedule.Job("good", good, runs=3)]
    schedule.interleave(jobs)
    assert jobs[0].failed == "OSError: [Errno 28] No space left on device"
    assert calls["good"] == 3 and len(jobs[1].data()) == 3


def test_a_failed_experiment_is_recorded_and_its_reader_told_why(tmp_path):
    rows = pd.DataFrame({"ns_per_op": [1.0, 2.0], "run": [0, 1]})
    stored.write(tmp_path, True, ["s1"], [("ok", "k", rows, 0.95, "")], failed={("x", "k"): "E"})
    assert len(stored.load("ok", "k", True, tmp_path).data) == 2
    with pytest.raises(stored.MeasurementFailed, match="x: the measuring phase's runs failed: E"):
        stored.load("x", "k", True, tmp_path)


def test_a_link_planted_at_measured_is_an_output_error_then_the_notebooks_go_on(tmp_path, capsys):
    from labkit.run.reproduce import main as reproduce

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    make_notebook(nbs / "01-a.ipynb", "import labkit.claims\nx = 1")
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (out / "measured").symlink_to(tmp_path / "elsewhere")

    def measure(out_path, quick, **_):
        stored.clear(out_path)  # what the phase does first: through the planted link
        stored.write(out_path, quick, [], [])

    code = reproduce(  # a fractional per-cell limit, as --timeout 60.5 gives
        measure=measure, quick=True, out=str(out), notebooks=str(nbs), progress=False, timeout=60.5
    )
    err = capsys.readouterr().err
    assert code == 3, err
    assert err.count("OUTPUT ERROR") == 1 and "the measuring phase" in err
    assert "Traceback" not in err and list((tmp_path / "elsewhere").iterdir()) == []
    assert (out / "notebooks" / "01-a.ipynb").is_file()  # the notebook ran, and completed:
    assert "FAILED" not in err and "TraitError" not in err


def _stored(tmp_path, n=400):
    rows = pd.DataFrame({"variant": ["readv1", "read"] * (n // 2), "ns_per_op": [10.0] * n})
    where = stored.write(tmp_path, False, ["s1"], [("R2.live_ab", "k", rows, 0.95, "")])
    entry = json.loads((where / stored.INDEX).read_text())["entries"][0]
    return where, where / entry["file"]


def test_tampered_measured_rows_are_refused(tmp_path):
    where, path = _stored(tmp_path)
    text = path.read_text().replace('"ns_per_op":10.0', '"ns_per_op":30.0', 1)
    path.write_text(text)  # readv1 multiplied by 3
    with pytest.raises(stored.StoredRowsError, match="sha256"):
        stored.load("R2.live_ab", "k", False, tmp_path)


def test_dropped_measured_rows_are_refused_even_with_a_matching_hash(tmp_path):
    where, path = _stored(tmp_path)
    data = json.loads(path.read_text())
    data["data"] = data["data"][:200]  # half the rows dropped
    raw = json.dumps(data).encode()
    path.write_bytes(raw)
    index = json.loads((where / stored.INDEX).read_text())
    index["entries"][0]["sha256"] = hashlib.sha256(raw).hexdigest()  # the hash forged too
    (where / stored.INDEX).write_text(json.dumps(index))
    with pytest.raises(stored.StoredRowsError, match="200 rows where the index records 400"):
        stored.load("R2.live_ab", "k", False, tmp_path)


# ---- compare: hostile bundles, one host per fingerprint, outputs checked first --------


def _hostile(tmp_path, kind):
    a, _ = _two(tmp_path)
    man = a / "manifest.json"
    if kind == "fifo":
        man.unlink()
        os.mkfifo(man)
    elif kind == "dev-zero":
        man.unlink()
        man.symlink_to("/dev/zero")
    elif kind == "deep":
        man.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "list":
        man.write_text("[]")
    elif kind == "files-list":
        man.write_text(json.dumps({"format": bundle.FORMAT, "files": [1, 2]}))
    return a


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep", "list", "files-list"])
def test_hostile_bundles_are_one_line(tmp_path, capsys, kind):
    a = _hostile(tmp_path, kind)
    result = []
    t = threading.Thread(target=lambda: result.append(main(["compare", str(a), str(a)])))
    t.daemon = True
    t.start()
    t.join(60)
    assert not t.is_alive(), "compare hangs on a hostile bundle"
    err = capsys.readouterr().err.strip()
    assert result == [2] and len(err.splitlines()) == 1 and str(a) in err, err


def test_the_same_bundle_twice_is_one_host_with_a_warning(tmp_path, capsys):
    a, b = _two(tmp_path)
    with pytest.warns(bundle.HostsWarning, match="same bundle"):
        c = gallery.compare([bundle.load(a), bundle.load(a), bundle.load(b)])
    assert len(c.labels) == 2
    assert set(c.table["pooled_hosts"].dropna()) <= {2}
    assert main(["compare", str(a), str(a)]) == 0
    out = capsys.readouterr()
    assert "hosts compared: 1" in out.out and "over 2 hosts" not in out.out
    assert "warning:" in out.err and "counted once" in out.err


def test_two_bundles_of_one_host_pool_as_one_host(tmp_path):
    a, _ = _two(tmp_path)
    rows = _summary([("R2", "time saved", "%", 2.0, 1.5, 2.5, 2.5, 3.5, "differs")])
    again = bundle.write(
        tmp_path / "again", summary=rows, environment=_env("Intel Xeon", 6, 207), source="t"
    )
    with pytest.warns(bundle.HostsWarning, match="pooled as one host"):
        c = gallery.compare([bundle.load(a), bundle.load(again)])
    r2 = c.table[c.table["result"] == "R2"].iloc[0]
    assert r2["not_pooled"] == "measured on fewer than two hosts"


def test_output_options_are_checked_before_anything_is_read(tmp_path, capsys):
    a, b = _two(tmp_path)
    assert main(["compare", str(a), str(b), "--figure", str(tmp_path / "x.xyz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--figure" in err and "'xyz'" in err
    assert main(["compare", str(a), str(b), "--csv", "/nonexistent/x.csv"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--csv /nonexistent/x.csv" in err and "does not exist" in err
    folder = tmp_path / "figs"
    folder.mkdir()
    assert main(["compare", str(a), str(b), "--figure", f"{folder}/"]) == 0
    assert [p.name for p in folder.iterdir()] == ["compare.png"]


# ---- worker rows and result tables -----------------------------------------------------


def test_worker_rows_keep_every_key():
    df = workers.run_in_workers("test.uneven_rows", runs=1)
    assert list(df["a"]) == [1, 2] and "b" in df.columns
    assert pd.isna(df["b"].iloc[0]) and df["b"].iloc[1] == 3


def test_a_csv_with_more_fields_than_its_header_is_refused(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2,3,4\n")
    with pytest.raises(results.ResultFileError, match="line 2 has 4 fields, its header 2"):
        results.load_run(path)


def test_the_untrusted_reader_refuses_what_results_load_refuses(tmp_path):
    from labkit import _untrusted

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    lst = tmp_path / "list.json"
    lst.write_text("[1]")
    for path, words in ((fifo, "not a regular file"), (deep, "deeper"), (lst, "not an object")):
        with pytest.raises(_untrusted.UntrustedFileError, match=words):
            _untrusted.read_json(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(_untrusted.UntrustedFileError, match="/dev/zero"):
            _untrusted.read_json("/dev/zero")
