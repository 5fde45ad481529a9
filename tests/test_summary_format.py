"""The summary as a reader sees it: text and HTML, read back from summary.csv, never "nan"."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from labkit.report import summary

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED_RUN = ROOT / "data" / "reproduction" / "summary.csv"
NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def _with_gaps(tmp_path: Path) -> pd.DataFrame:
    """A summary written to CSV and read back: an empty unit, no explanation, no band, no
    model figure, as ``pd.read_csv`` returns them (NaN)."""
    row = {c: None for c in summary.COLUMNS}
    row.update(
        result="R9",
        quantity="a quantity without a unit",
        model=0.7625,
        estimate=0.7625,
        ci_low=-9.4,
        ci_high=7.0,
        n_runs=3,
        noise=1.22,
        verdict="not measured",
        method="bootstrap",
        reason="no declared band",
    )
    path = tmp_path / "summary.csv"
    pd.DataFrame([row], columns=summary.COLUMNS).to_csv(path, index=False)
    return pd.read_csv(path)


@pytest.fixture(params=["published run", "gaps"])
def table(request, tmp_path) -> pd.DataFrame:
    if request.param == "gaps":
        return _with_gaps(tmp_path)
    if not PUBLISHED_RUN.is_file():
        pytest.skip("no data/reproduction/summary.csv")
    return pd.read_csv(PUBLISHED_RUN)


def test_read_back_renders_without_nan(table):
    assert table.isna().any().any()  # the CSV does have missing values to render
    for text in (
        summary.format_summary(table),
        summary.summary_html(table),
        summary.summary_html(table, layout="notebook"),
        repr(summary.SummaryView(table)),
        summary.SummaryView(table)._repr_html_(),
    ):
        assert not NAN.search(text), NAN.search(text)


def test_a_missing_unit_adds_nothing_and_missing_text_is_empty(tmp_path):
    df = _with_gaps(tmp_path)
    text = summary.format_summary(df)
    assert "0.7625 [-9.4, 7]" in text and "1.22 " in text
    page = summary.summary_html(df, layout="notebook")
    assert "<td class='verdict-not-measured'" in page
    assert "explained:" not in page  # no measured cause: no line for it


def test_notebook_layout_keeps_every_figure_and_the_whole_reason(tmp_path):
    if not PUBLISHED_RUN.is_file():
        pytest.skip("no data/reproduction/summary.csv")
    df = pd.read_csv(PUBLISHED_RUN)
    page = summary.summary_html(df, layout="notebook")
    import html

    for _, r in df.iterrows():
        cells = summary.row_cells(r)
        for col in summary.NOTEBOOK_COLUMNS:
            assert html.escape(cells[col]) in page, (col, cells[col])
        assert html.escape(cells["reason"]) in page
    assert page.count("<tr>") == 1 + 2 * len(df)  # the head, then a figures row and a reason row
    with pytest.raises(ValueError, match="layout"):
        summary.summary_html(df, layout="tall")


def test_the_headline_layout_prints_each_intervals_confidence():
    """One row per claim: published, measured with the confidence its reason states, verdict,
    evidence; the reason and method behind a <details> of the row."""
    rows = [
        {
            "claim": "R2.live_ratio",
            "result": "R2",
            "quantity": "q",
            "unit": "x",
            "estimate": 1.009,
            "ci_low": 1.007,
            "ci_high": 1.011,
            "verdict": "differs",
            "evidence": "a stand-in",
            "method": "bootstrap",
            "reason": "the 97.5% interval [1.007, 1.011]x lies wholly below the band",
        },
        {
            "claim": "R2.instr_saved",
            "result": "R2",
            "quantity": "instructions",
            "unit": "instructions",
            "estimate": 30.0,
            "ci_low": 30.0,
            "ci_high": 30.0,
            "verdict": "reproduced",
            "method": "instruction count (callgrind)",
            "reason": "the 95% interval [30, 30] instructions lies inside the band",
        },
    ]
    page = summary.summary_html(pd.DataFrame(rows), layout="headline")
    assert page.count("<tr>") == 3 and page.count("<details>") == 2
    assert "1.009 [1.007, 1.011] x (97.5% CI)" in page
    assert "30 instructions (count)" in page and "[30, 30]" not in page.split("<details>")[0]
    heads = re.findall(r"<th>([^<]*)</th>", page)
    assert heads == ["claim", "published", "measured", "verdict", "evidence"]


def test_a_caption_ends_with_a_whole_sentence():
    from labkit.run.index_page import whole_sentences

    text = "Counted in full mode. In quick mode it records the counts as not measured:"
    assert whole_sentences(text) == "Counted in full mode."
    assert whole_sentences("The table below:") == "The table below."
    assert whole_sentences("Whole.") == "Whole."
