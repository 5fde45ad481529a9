"""labkit.report: summary rows, the summary table and its text form, figures."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from labkit import report  # noqa: E402
from labkit.run import index_page, reproduce  # noqa: E402


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    for var in ("LABKIT_OUT", "LABKIT_NOTEBOOK"):
        monkeypatch.delenv(var, raising=False)


def fake_rows(out: Path) -> None:
    report.record(
        "R2",
        "readv(1) gain",
        published=3.0,
        model=2.1,
        live=None,
        unit="%",
        verdict="consistent",
        reason="model gain is a share of the published call",
        out=out,
    )
    report.record(
        "R1",
        "tail/head ratio",
        published=755,
        model=812.5,
        live=1.04,
        unit="x",
        verdict="reproduced",
        reason="walk-2019 at the tail of 1 GiB",
        out=out,
    )
    report.record(
        "R3",
        "READV IOPS gain",
        published="+5.8%",
        model=float("nan"),
        live=None,
        verdict="not measured",
        reason="no NVMe array here " * 5,
        out=out,
    )


def test_record_writes_one_json_row_per_quantity(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_NOTEBOOK", "02-fixed-buffer-seek.ipynb")
    row = report.record(
        "R1",
        "tail/head ratio",
        published=755,
        model=800,
        unit="x",
        verdict="reproduced",
        reason="first",
        out=tmp_path,
    )
    files = list((tmp_path / "summary").glob("*.json"))
    assert len(files) == 1
    on_disk = json.loads(files[0].read_text())
    assert on_disk == row
    assert (row["published"], row["model"], row["live"]) == (755.0, 800.0, None)
    assert row["notebook"] == "02-fixed-buffer-seek.ipynb"
    # the same quantity again replaces its row
    report.record(
        "R1",
        "tail/head ratio",
        model=900,
        verdict="differs (explained)",
        reason="second",
        out=tmp_path,
    )
    df = report.summary_table(tmp_path)
    assert len(df) == 1 and df.iloc[0].model == 900.0 and df.iloc[0].reason == "second"


def test_out_dir_follows_labkit_out(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_OUT", str(tmp_path / "o"))
    assert report.out_dir() == tmp_path / "o"
    report.record("R9", "x", verdict="v", reason="r")
    assert (tmp_path / "o" / "summary").is_dir()
    assert len(report.summary_table()) == 1
    monkeypatch.delenv("LABKIT_OUT")
    monkeypatch.delenv("LABKIT_DATA", raising=False)
    # a notebook run on its own records into the user's results folder, never into data/
    assert report.out_dir().parts[-2:] == ("labkit-results", "results")


def test_record_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError):
        report.record("", "q", verdict="v", reason="r", out=tmp_path)
    with pytest.raises(ValueError):
        report.record("R1", "q", verdict=" ", reason="r", out=tmp_path)
    with pytest.raises(ValueError):
        report.record("R1", "q", verdict="v", reason="", out=tmp_path)
    with pytest.raises(TypeError):
        report.record("R1", "q", model=[1, 2], verdict="v", reason="r", out=tmp_path)
    assert not (tmp_path / "summary").exists() or not list((tmp_path / "summary").iterdir())


def test_summary_table_sorted_with_columns(tmp_path):
    fake_rows(tmp_path)
    (tmp_path / "summary" / "broken.json").write_text("{not json")
    df = report.summary_table(tmp_path)
    assert list(df.columns) == report.COLUMNS
    assert list(df["result"]) == ["R1", "R2", "R3"]
    assert df.attrs["skipped"] == ["broken.json"]
    assert pd.isna(df.iloc[2].model) and df.iloc[2].published == "+5.8%"
    # the summary folder itself works too
    assert len(report.summary_table(tmp_path / "summary")) == 3
    empty = report.summary_table(tmp_path / "nothing")
    assert empty.empty and list(empty.columns) == report.COLUMNS


def test_format_summary_from_fake_rows(tmp_path):
    fake_rows(tmp_path)
    text = report.format_summary(report.summary_table(tmp_path), width=30)
    lines = text.splitlines()
    # first what 95% means over the run's timed verdicts (TOST, no multiplicity correction)
    assert lines[0].startswith("what 95% means here: ") and "alpha = 0.025" in lines[0]
    # rows recorded here say where they hold (host fingerprint, one session): one line next
    assert lines[2].startswith("where these verdicts hold: on ") and "one session" in lines[2]
    lines = lines[4:]
    assert lines[0].split() == [
        "result",
        "quantity",
        "published",
        "model",
        "live",
        "measured",
        "[95%",
        "CI]",
        "band",
        "runs",
        "noise",
        "verdict",
    ]
    assert set(lines[1]) <= {"-", " "}
    r1 = next(line for line in lines if line.startswith("R1"))
    assert "755 x" in r1 and "812.5 x" in r1 and "1.04 x" in r1 and "reproduced" in r1
    r2 = next(line for line in lines if line.startswith("R2"))
    assert "3 %" in r2 and " - " in r2 and "consistent" in r2
    r3 = lines.index(next(line for line in lines if line.startswith("R3")))
    assert "+5.8%" in lines[r3] and "not measured" in lines[r3]
    # the reason is wrapped on the following lines, never cut
    reason = [lines[r3 + 1].split("reason: ", 1)[1]]
    reason += [line.strip() for line in lines[r3 + 2 :]]
    assert " ".join(reason) == ("no NVMe array here " * 5).strip()
    assert "..." not in text
    assert report.format_summary(pd.DataFrame(columns=report.COLUMNS)) == "(no results recorded)"


def test_summary_html_escapes_and_keeps_the_whole_reason(tmp_path):
    fake_rows(tmp_path)
    report.record("R9", "a <b> & c", verdict="differs", reason="x < y " * 40, out=tmp_path)
    page = report.summary_html(report.summary_table(tmp_path))
    assert page.startswith("<table class='summary'>") and page.endswith("</table>")
    assert "a &lt;b&gt; &amp; c" in page and ("x &lt; y " * 40).strip() in page
    assert "class='verdict-reproduced'" in page and "class='verdict-not-measured'" in page
    assert report.summary_html(pd.DataFrame(columns=report.COLUMNS)).startswith("<p>")


@pytest.mark.parametrize(
    "value, shown",
    [
        (None, "-"),
        (math.nan, "-"),
        (1039879, "1,039,879"),
        (3.96, "3.96"),
        (1e-5, "1e-05"),
        (72.54e6, "72,540,000"),
        (1377.4, "1,377"),
        (0.86, "0.86"),
        ("n/a", "n/a"),
    ],
)
def test_format_number(value, shown):
    assert report.format_number(value) == shown


def test_print_reproduction_with_fake_rows(tmp_path, capsys):
    fake_rows(tmp_path)
    rep = reproduce.Reproduction(
        out=tmp_path,
        quick=True,
        seconds=12.5,
        runs=[
            reproduce.NotebookRun("01-a.ipynb", "ran", 3.0, "h1"),
            reproduce.NotebookRun(
                "02-b.ipynb", "up to date", 4.0, "h2", finished="2026-01-02T03:04:05+00:00"
            ),
            reproduce.NotebookRun(
                "03-c.ipynb",
                "failed",
                1.0,
                "h3",
                cell=5,
                exec_count=4,
                error="ValueError: bad",
                source="x = f(1)",
            ),
        ],
    )
    rep.summary = report.summary_table(tmp_path)
    out = io.StringIO()
    reproduce.print_reproduction(rep, out)
    text = out.getvalue()
    assert "quick mode" in text and "3 notebooks" in text
    assert "up to date   02-b.ipynb" in text and "produced 2026-01-02 03:04" in text
    assert "--force" in text
    assert "R1" in text and "755 x" in text and "verdict" in text
    err = capsys.readouterr().err
    assert "FAILED 03-c.ipynb: cell 5 (In [4]): `x = f(1)`: ValueError: bad" in err
    assert not rep.ok and [r.name for r in rep.failed] == ["03-c.ipynb"]
    assert rep.exit_status == 1


def test_index_html_lists_rows_notebooks_and_figures(tmp_path):
    fake_rows(tmp_path)
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "r1-cost.png").write_bytes(b"\x89PNG")
    (tmp_path / "figures" / "r1-cost.svg").write_text("<svg/>")
    rep = reproduce.Reproduction(
        out=tmp_path,
        quick=False,
        runs=[
            reproduce.NotebookRun(
                "02-fixed.ipynb", "ran", 3.0, "h", finished="2026-01-02T03:04:05+00:00"
            )
        ],
        finished="2026-01-02T03:04:06+00:00",
    )
    rep.summary = report.summary_table(tmp_path)
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "02-fixed.html").write_text("<html></html>")
    page = index_page.index_html(rep)
    assert "produced on 2026-01-02 03:04 UTC" in page
    assert "full mode" in page and "html/02-fixed.html" in page
    assert "<table" in page and "walk-2019 at the tail" in page and "1.04" in page
    assert "figures/r1-cost.png" in page and "figures/r1-cost.svg" in page


def test_savefig_only_with_labkit_out(tmp_path, monkeypatch):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    assert report.savefig(fig, "line") == []
    monkeypatch.setenv("LABKIT_OUT", str(tmp_path))
    paths = report.savefig(fig, "line")
    assert [p.name for p in paths] == ["line.png", "line.svg"]
    assert paths[0].read_bytes().startswith(b"\x89PNG")
    assert "<svg" in paths[1].read_text()
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [
        "line.json",
        "line.png",
        "line.svg",
    ]
    sidecar = json.loads((tmp_path / "figures" / "line.json").read_text())
    assert sidecar["caption"] == "" and sidecar["axes"][0]["legend"] == []
    report.savefig(fig, "line", caption="a line, ours only")
    assert "ours only" in (tmp_path / "figures" / "line.json").read_text()
    with pytest.raises(ValueError):
        report.savefig(fig, "../escape")
    plt.close(fig)
