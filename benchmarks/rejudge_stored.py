#!/usr/bin/env python3
"""A stored reproduction's rows judged again by today's rule, evidence and bands (not CI).

Reads a ``summary.csv`` (default: the stored reference run, ``data/reproduction/``),
rebuilds each row's interval as it was recorded (its confidence and sessions,
:mod:`labkit.report.estimators`), and judges it as :func:`labkit.report.summary.record`
would today (:func:`labkit.report.summary.judge_row`): the evidence behind the row, checks
of the method, a product with its factors (R1's tail speed-up: the walk per page from
the same summary, F from the run's bundle samples ``fixed-F``), amended bands and setups.
Prints one line per claim: estimand, evidence, the verdict recorded, the verdict today.

Usage::

    python benchmarks/rejudge_stored.py [--summary CSV] [--bundle DIR] [--markdown]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pandas as pd

from labkit.measure import ledgers, stats
from labkit.measure.stats import over_sessions
from labkit.measure.verdicts import Factor
from labkit.report import bundle, estimators

GALLERY_RUN = "data/gallery/2026-12-03-amd-epyc-fam-25-model-1-stepping-1-kvm-ucode-0x1000065"


def _estimate(r: pd.Series):
    e = estimators.estimate_of(r)
    if e is None:
        return None
    kind = estimators.of_row(r)
    noise = float(r["noise"]) if pd.notna(r.get("noise")) else float("nan")
    return dataclasses.replace(e, n_sessions=kind.sessions, between_session=noise)


def _f_factor(bundle_dir: str | None) -> Factor | None:
    """F from the run's own samples, pooled over its sessions as the verdicts are."""
    if not bundle_dir or not Path(bundle_dir).is_dir():
        return None
    d = bundle.load(bundle_dir).samples("fixed-F")
    if d["session"].nunique() > 1:
        est, _ = over_sessions(d, lambda x: stats.median(x, "F", confidence=0.95))
    else:
        est = stats.median(d, "F")
    b = ledgers.claim_band("R1.round_trip_ns")
    return Factor("F", est.estimate, est.ci_low, est.ci_high, b.published, b.low, b.high, "ns")


def rejudge(summary: pd.DataFrame, bundle_dir: str | None) -> pd.DataFrame:
    rows = []
    by_claim = {r["claim"]: r for _, r in summary.iterrows() if isinstance(r["claim"], str)}
    factors = []
    if "R1.ns_per_page" in by_claim:
        w, b = by_claim["R1.ns_per_page"], ledgers.claim_band("R1.ns_per_page")
        factors.append(Factor("walk-2019 per page", w["estimate"], w["ci_low"], w["ci_high"],
                              b.published, b.low, b.high, "ns"))  # fmt: skip
    f = _f_factor(bundle_dir)
    if f is not None:
        factors.append(f)
    for cid, r in by_claim.items():
        band = ledgers.claim_band(cid)
        est = _estimate(r)
        noise = float(r["noise"]) if pd.notna(r.get("noise")) else None
        v, extra = summary.judge_row(
            cid, est, band, noise=noise, quick=bool(r.get("quick")) and str(r["quick"]) != "False",
            factors=factors if cid == "R1.tail_speedup" else None,
        )  # fmt: skip
        rows.append({
            "claim": cid, "estimand": extra["estimand"], "evidence": extra["evidence"],
            "before": r["verdict"], "after": v.verdict if band is not None else r["verdict"],
            "amended": extra["amended"], "reason": v.reason,
        })  # fmt: skip
    return pd.DataFrame(rows).sort_values("claim").reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", default="data/reproduction/summary.csv")
    ap.add_argument("--bundle", default=GALLERY_RUN)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--reasons", action="store_true")
    a = ap.parse_args(argv)
    t = rejudge(pd.read_csv(a.summary), a.bundle)
    if a.markdown:
        print("| claim | estimand | evidence | before | after | amended |")
        print("|---|---|---|---|---|---|")
        for _, r in t.iterrows():
            print(f"| {r['claim']} | {r['estimand']} | {r['evidence']} | {r['before']} | "
                  f"{r['after']} | {r['amended']} |")  # fmt: skip
    else:
        for _, r in t.iterrows():
            print(f"{r['claim']:30} {r['before']:16} -> {r['after']}")
            if a.reasons:
                print(f"    {r['reason']}")
                if r["amended"]:
                    print(f"    amended: {r['amended']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
