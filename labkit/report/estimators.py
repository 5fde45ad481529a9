"""Which estimator gave a summary row's figure: only rows of one estimator are the same quantity.

Two rows with one claim id can hold different estimators: R2's live time saved was
the raw proxy (readv(4K+empty) against readv(1)) before it was corrected for the
proxy's extra empty iovec (readv(4K+2 empty) measured in the same loop), its
interval was over the runs of one session or over sessions, and its confidence
was 95%, 98.75% (Bonferroni over looks) or 99%.  :func:`of_row` reads a row's
estimator from what the row itself recorded (its method and its reason), never
from what it should have been:

* ``pooling``: ``sessions`` ("mean of S sessions", a t interval with S - 1 df),
  ``runs`` (an interval over the runs of one session) or ``count`` (callgrind);
* ``correction``: for R2's live rows (:data:`CORRECTED`), ``proxy-corrected`` or
  ``uncorrected`` (the raw proxy, which overstates the gap); "" for other claims;
* ``confidence``: the level the row itself states: its reason ("the 99% interval") or its
  method ("95% t interval"); None (shown "?") where it states none.

Its ``id`` joins the three; :func:`labkit.report.gallery.compare` pools and sets
side by side only rows of one id, and shows the others apart, labelled.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from labkit.measure.stats import Estimate

#: Claims whose live figure is the readv(4K+empty) proxy, corrected or not.
CORRECTED = ("R2.saved_share", "R2.saved_ns", "R2.live_ratio")
#: The confidence as a row states it: "the 95% interval" (reason) or "95% t interval" (method).
_CONF = re.compile(r"(?:the (\d+(?:\.\d+)?)% interval|(\d+(?:\.\d+)?)% t interval)")
_SESSIONS = re.compile(r"mean of (\d+) sessions")


@dataclass(frozen=True)
class Estimator:
    """How a row's figure and interval were computed, as the row recorded it."""

    pooling: str  #: "sessions", "runs" or "count"
    correction: str  #: "proxy-corrected", "uncorrected" or ""
    confidence: float | None  #: 0.95, 0.99, ...; None where the row does not say
    sessions: int = 1  #: sessions behind a "sessions" interval

    @property
    def id(self) -> str:
        """``"sessions/proxy-corrected@95%"``, ``"runs@99%"``, ``"count"``."""
        base = self.pooling + (f"/{self.correction}" if self.correction else "")
        if self.pooling == "count":
            return base
        conf = "?" if self.confidence is None else f"{100 * self.confidence:g}%"
        return f"{base}@{conf}"

    @property
    def df(self) -> int | None:
        """The degrees of freedom of the row's interval: S - 1 over S sessions, else None
        (a bootstrap over runs: read as normal)."""
        return self.sessions - 1 if self.pooling == "sessions" and self.sessions >= 2 else None


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def of_row(r: Any) -> Estimator:
    """The estimator a summary row (a dict or a pandas row) recorded."""
    method, reason = _text(r.get("method")), _text(r.get("reason"))
    unit = _text(r.get("unit"))
    if unit == "instructions" or "instruction count" in method:
        return Estimator("count", "", None)
    m = _SESSIONS.search(method)
    pooling, sessions = ("sessions", int(m.group(1))) if m else ("runs", 1)
    c = _CONF.search(reason) or _CONF.search(method)
    conf = float(c.group(1) or c.group(2)) / 100 if c else None
    correction = ""
    if _text(r.get("claim")) in CORRECTED:
        correction = "proxy-corrected" if "corrected for the proxy" in reason else "uncorrected"
    return Estimator(pooling, correction, conf, sessions)


def confidence_of(r: Any, default: float = math.nan) -> float:
    """The confidence a row's reason states (``default`` where it states none)."""
    c = of_row(r).confidence
    return default if c is None else c


__all__: list[str] = []  # internal: labkit.report.gallery's estimator ids


def one_estimator(seen: list[tuple[str, Any, Any]]) -> tuple[list[Any], list[Any]]:
    """Split (host label, row, bundle) triples into (the rows of the estimator most hosts
    used, the rows of any other): only the first are the same quantity; on a tie, the
    latest (last) one's estimator."""
    ids = [of_row(r).id for _, r, _ in seen]
    if len(set(ids)) <= 1:
        return list(seen), []
    main = max(dict.fromkeys(reversed(ids)), key=ids.count)
    keep = [x for x, i in zip(seen, ids, strict=True) if i == main]
    return keep, [x for x, i in zip(seen, ids, strict=True) if i != main]


def lacks_correction(bundle: Any) -> bool:
    """Whether a bundle's live R2 samples have no readv(4K+2 empty) to correct the proxy."""
    for name in ("ubuf-live-syscalls", "live-syscalls"):
        try:
            df = bundle.samples(name)
        except (OSError, ValueError, KeyError):
            continue
        if len(df) and "variant" in df.columns:
            return "readv_empty2" not in set(df["variant"])
    return True


def apart(seen: list[tuple[str, Any, Any]], hosts: dict[str, str], shown: Any) -> str:
    """The measured rows shown apart from the pooled ones (:func:`one_estimator`), each
    labelled with its estimator and ``shown(row)`` (its estimate as text); "" for none."""
    found = [(lab, r, b) for lab, r, b in seen if math.isfinite(_float(r.get("estimate")))]
    said = []
    for lab, r, b in one_estimator(found)[1]:
        e = of_row(r)
        why = ""
        if e.correction == "uncorrected":
            why = " (the raw proxy" + (
                ", and its samples have no readv(4K+2 empty) to correct it)"
                if lacks_correction(b)
                else ")"
            )
        said.append(f"{hosts.get(lab, lab)}: estimator {e.id}{why}, {shown(r)}")
    return "; ".join(said)


def _float(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def estimate_of(r: Any) -> Estimate | None:
    """A summary row's figure as an Estimate, at the confidence the row states (never
    relabelled; 0.95 where it states none); None without a figure."""
    est, lo, hi = _float(r.get("estimate")), _float(r.get("ci_low")), _float(r.get("ci_high"))
    if not math.isfinite(est):
        return None
    n, noise = _float(r.get("n_runs")), _float(r.get("noise"))
    return Estimate(
        str(r.get("quantity")), est, lo, hi, confidence_of(r, 0.95), str(r.get("method") or ""),
        int(n) if math.isfinite(n) else 1, 1, noise, noise,
    )  # fmt: skip
