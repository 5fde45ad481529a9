#!/usr/bin/env python3
"""The spread between stored reproductions on one host, per claim (not part of CI).

Every full reproduction committed as ``data/reproduction/summary.csv`` (one per commit
in git history) gives each timed claim an interval over its own sessions (a t with
S - 1 df over S sessions minutes apart).  This script pools, per claim, host and
estimator (:mod:`labkit.report.estimators`: only rows of one estimator are pooled), the
reproductions' figures in a random-effects model
(:func:`labkit.measure.stats.between_reproductions`: DerSimonian-Laird tau, Hartung-Knapp
interval, the prediction interval of the next reproduction) and prints them beside each
reproduction's own interval.

Usage::

    python benchmarks/replication_from_git.py [--out data/reproduction/replication.csv]
        [--claim R2.saved_ns ...] [--markdown]
"""

from __future__ import annotations

import argparse
import io
import math
import re
import subprocess
import sys

import pandas as pd

from labkit.measure.stats import between_reproductions, se_of_interval
from labkit.report import estimators

PATH = "data/reproduction/summary.csv"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def stored() -> pd.DataFrame:
    """Every committed reproduction's rows, with ``commit`` and ``host`` columns."""
    frames = []
    for line in git("log", "--format=%h", "--", PATH).split():
        df = pd.read_csv(io.StringIO(git("show", f"{line}:{PATH}")))
        if "claim" not in df.columns or "scope" not in df.columns:
            continue  # before claim ids and scopes: the host is not recorded per row
        df["commit"] = line
        df["host"] = [re.sub(r"^on (.*?), (one session|over \d+ sessions).*$", r"\1", str(s))
                      for s in df["scope"]]  # fmt: skip
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def pool(rows: pd.DataFrame, claims: list[str] | None = None) -> pd.DataFrame:
    """One line per (claim, host, estimator) with 2+ full-mode reproductions."""
    out = []
    rows = rows[~rows["quick"].astype(str).isin(["True", "true", "1"])]
    rows = rows.assign(estimator=[estimators.of_row(r).id for _, r in rows.iterrows()])
    for (claim, host, est), g in rows.groupby(["claim", "host", "estimator"], sort=True):
        if claims and claim not in claims:
            continue
        g = g.dropna(subset=["estimate", "ci_low", "ci_high"])
        if len(g) < 2 or est == "count" or not est.startswith("sessions"):
            continue
        kind = estimators.of_row(g.iloc[0])
        conf = kind.confidence or 0.95
        bounds = list(zip(g["ci_low"], g["ci_high"], strict=True))
        ses = [se_of_interval(lo, hi, kind.df, conf) for lo, hi in bounds]
        rep = between_reproductions(list(g["estimate"]), ses, conf)
        p = rep.pooled
        per_run = "; ".join(
            f"{c}: {e:.3g} [{lo:.3g}, {hi:.3g}]"
            for c, e, lo, hi in zip(
                g["commit"], g["estimate"], g["ci_low"], g["ci_high"], strict=True
            )
        )
        out.append({
            "claim": claim, "host": host, "estimator": est, "unit": g["unit"].iloc[0],
            "reproductions": p.k, "per_reproduction": per_run,
            "half_widths": ", ".join(f"{(hi - lo) / 2:.3g}" for lo, hi in bounds),
            "pooled": p.estimate, "pooled_low": p.ci_low, "pooled_high": p.ci_high,
            "tau": p.tau, "i2": p.i2, "next_low": rep.pred_low, "next_high": rep.pred_high,
            "band_low": g["band_low"].iloc[0], "band_high": g["band_high"].iloc[0],
            "method": p.method,
        })  # fmt: skip
    return pd.DataFrame(out)


def markdown(t: pd.DataFrame) -> str:
    lines = [
        "| claim | reproductions (own 95% intervals) | pooled [95%] | tau | next [95% PI] | band |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in t.iterrows():
        nxt = (f"[{r['next_low']:.3g}, {r['next_high']:.3g}]" if math.isfinite(r["next_low"])
               else "-")  # fmt: skip
        lines.append(
            f"| {r['claim']} | {r['per_reproduction']} | {r['pooled']:.3g} "
            f"[{r['pooled_low']:.3g}, {r['pooled_high']:.3g}] {r['unit']} | {r['tau']:.3g} | "
            f"{nxt} | [{r['band_low']:.4g}, {r['band_high']:.4g}] |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="")
    ap.add_argument("--claim", action="append", default=[])
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    t = pool(stored(), a.claim or None)
    if a.out:
        t.to_csv(a.out, index=False, float_format="%.6g")
    print(markdown(t) if a.markdown else t.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
