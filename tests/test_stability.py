"""labkit.report.stability and benchmarks/verdict_stability.py: comparing verdicts of runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from labkit.report import stability

ROOT = Path(__file__).resolve().parents[1]


def _summary(verdicts: dict[str, str], estimate: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "result": "R2",
                "quantity": q,
                "verdict": v,
                "estimate": estimate,
                "ci_low": estimate - 0.5,
                "ci_high": estimate + 0.5,
                "n_runs": 3,
            }
            for q, v in verdicts.items()
        ]
    )


def test_outcomes_same_moved_flipped_and_missing():
    a = _summary({"q1": "reproduced", "q2": "reproduced", "q3": "differs", "q4": "inconclusive"})
    b = _summary({"q1": "reproduced", "q2": "inconclusive", "q3": "reproduced"}, estimate=12345.0)
    tab = stability.compare([a, b], names=["A", "B"]).set_index("quantity")
    assert tab["outcome"].to_dict() == {
        "q1": "same",
        "q2": "moved",
        "q3": "flipped",
        "q4": "moved",  # missing from B: not measured there
    }
    assert tab.loc["q4", "B: verdict"] == "not measured"
    assert tab.loc["q4", "B: measured"] == "-"
    assert tab.loc["q1", "A: measured"] == "1 [0.5, 1.5] (3 runs)"
    assert tab.loc["q1", "B: measured"] == "12,345 [12,344, 12,346] (3 runs)"
    assert stability.counts(tab.reset_index()) == {"same": 1, "moved": 2, "flipped": 1}


def test_flip_needs_both_decided_verdicts_across_three():
    runs = [
        _summary({"q": "reproduced"}),
        _summary({"q": "inconclusive"}),
        _summary({"q": "differs"}),
    ]
    assert stability.compare(runs)["outcome"].tolist() == ["flipped"]
    runs[2] = _summary({"q": "inconclusive"})
    assert stability.compare(runs)["outcome"].tolist() == ["moved"]


def test_text_and_markdown_name_every_run_and_count():
    a = _summary({"q1": "reproduced", "q2": "differs"})
    b = _summary({"q1": "reproduced", "q2": "inconclusive"})
    tab = stability.compare([a, b])
    text = stability.format_comparison(tab)
    assert "run 1" in text and "run 2" in text
    assert text.splitlines()[-1].startswith("1/2 verdicts the same in all 2; 1 moved")
    md = stability.format_comparison(tab, markdown=True)
    assert md.splitlines()[0] == "| result | quantity | run 1 | run 2 | outcome |"
    assert "| R2 | q2 | differs: 1 [0.5, 1.5] (3 runs) | inconclusive:" in md


@pytest.mark.parametrize(
    "tables, names, match",
    [
        ([_summary({"q": "reproduced"})], None, "at least two"),
        ([_summary({"q": "reproduced"})] * 2, ["x"], "one per summary"),
        ([_summary({"q": "reproduced"})] * 2, ["x", "x"], "distinct"),
        ([pd.DataFrame({"result": ["R1"]})] * 2, None, "lacks the columns"),
    ],
)
def test_bad_input(tables, names, match):
    with pytest.raises(ValueError, match=match):
        stability.compare(tables, names)


def test_benchmark_compares_stored_summaries_without_running(tmp_path):
    paths = []
    for i, v in enumerate(("reproduced", "differs")):
        p = tmp_path / f"s{i}.csv"
        _summary({"q": v}).to_csv(p, index=False)
        paths.append(p)
    cmd = [sys.executable, str(ROOT / "benchmarks" / "verdict_stability.py"), "--runs", "0"]
    cmd += ["--out", str(tmp_path / "out")]
    for p in paths:
        cmd += ["--with", str(p)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr  # a flip is exit status 1
    assert "0 moved to or from inconclusive; 1 flipped" in done.stdout
    saved = pd.read_csv(tmp_path / "out" / "verdicts.csv")
    assert saved["outcome"].tolist() == ["flipped"]


def test_by_host_compares_sessions_within_each_host(tmp_path):
    from labkit.report import bundle

    def summary(v):
        return pd.DataFrame(
            [("R2", "share", 2.9, 2.5, 3.3, v)],
            columns=["result", "quantity", "estimate", "ci_low", "ci_high", "verdict"],
        )

    def env(model):
        return {"host": {"model_name": "CPU", "family": 6, "model": model, "stepping": 1}}

    found = []
    for k, (model, v) in enumerate([(207, "reproduced"), (207, "differs"), (167, "reproduced")]):
        p = bundle.write(tmp_path / str(k), summary=summary(v), environment=env(model), source="t")
        found.append(bundle.load(p))
    tabs = stability.by_host(found)
    assert set(tabs) == {"CPU fam 6 model 207 stepping 1", "CPU fam 6 model 167 stepping 1"}
    assert stability.counts(tabs["CPU fam 6 model 207 stepping 1"])["flipped"] == 1
    assert tabs["CPU fam 6 model 167 stepping 1"] is None
