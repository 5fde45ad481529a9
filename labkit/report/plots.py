"""One plotting style for every labkit figure, and the plots every notebook needs.

* :func:`style` / :func:`apply_style`: the shared matplotlib look (also a
  context manager).
* :func:`ours_vs_published`: labelled bars of our medians with their
  intervals beside the published figures, optionally on a log axis.
* :func:`cost_vs_size`: cost against size on log-log axes, one line per
  group, with a power law fitted per group and its slope in the legend
  (slope 1: linear in size; slope 0: constant).

The helpers take tidy DataFrames and column names, so they serve any
experiment; each returns the Axes it drew on (and the fits, for
:func:`cost_vs_size`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

#: labkit's one colour table, by role: in plots ("ours", "published" and "live" look
#: the same in every notebook) and in the teaching drawings (labkit.teach.viz: bytes
#: consumed, remaining, outside count, the current position, skipped and target bvecs).
COLORS = {
    "ours": "#1f77b4",
    "model": "#1f77b4",
    "published": "#7f7f7f",
    "live": "#d62728",
    "before": "#ff7f0e",
    "after": "#2ca02c",
    "consumed": "#b0b0b0",
    "remaining": "#4c9be8",
    "outside": "#ffffff",
    "position": "#d62728",
    "skipped": "#e0e0e0",
    "target": "#f5a623",
    "current": "#2ca02c",
}

RC = {
    "figure.figsize": (7.0, 4.2),
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "errorbar.capsize": 3,
    "lines.markersize": 5,
}


def apply_style() -> None:
    """Apply labkit's style to matplotlib globally (notebooks call this once)."""
    plt.rcParams.update(RC)


@contextmanager
def style() -> Iterator[None]:
    """labkit's style for the duration of a ``with`` block."""
    with plt.rc_context(RC):
        yield


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    with style():
        _, new = plt.subplots()
    return new


def ours_vs_published(
    ours: pd.DataFrame,
    published: pd.DataFrame | None = None,
    *,
    label: str = "label",
    value: str = "median",
    low: str | None = "ci_low",
    high: str | None = "ci_high",
    published_value: str = "value",
    ylabel: str,
    title: str | None = None,
    log: bool = False,
    ours_name: str = "ours",
    published_name: str = "published",
    ax: Axes | None = None,
) -> Axes:
    """Bars of our figures (with intervals) beside the published ones, per label.

    Args:
        ours: one row per label: ``label``, ``value`` and optionally the
            interval columns ``low``/``high`` (absolute bounds, as
            :func:`labkit.measure.stats.median_ci` returns).
        published: rows with ``label`` and ``published_value``; several rows
            per label (individual published runs) are drawn as points over a
            bar at their mean.
        ylabel: the value axis label, with units (required).
        log: log scale for the value axis (figures spanning decades).
    """
    if not ylabel:
        raise ValueError("ours_vs_published: ylabel (with units) is required")
    ax = _axes(ax)
    labels = list(
        dict.fromkeys(
            [*ours[label].astype(str), *([] if published is None else published[label].astype(str))]
        )
    )
    x = np.arange(len(labels))
    width = 0.38 if published is not None else 0.6
    o = ours.assign(_l=ours[label].astype(str)).set_index("_l")
    xs, ys, err = [], [], []
    for k, lab in enumerate(labels):
        if lab in o.index:
            row = o.loc[lab]
            row = row.iloc[0] if isinstance(row, pd.DataFrame) else row
            v = float(row[value])
            xs.append(x[k] - (width / 2 if published is not None else 0))
            ys.append(v)
            lo = float(row[low]) if low and low in o.columns else v
            hi = float(row[high]) if high and high in o.columns else v
            err.append((max(v - lo, 0.0), max(hi - v, 0.0)))
    ax.bar(xs, ys, width, color=COLORS["ours"], label=ours_name)
    if err:
        e = np.array(err).T
        ax.errorbar(xs, ys, yerr=e, fmt="none", ecolor="black", elinewidth=1)
    if published is not None:
        p = published.assign(_l=published[label].astype(str))
        first, first_points = True, True
        for k, lab in enumerate(labels):
            vals = p.loc[p["_l"] == lab, published_value].astype(float).to_numpy()
            if not len(vals):
                continue
            px = x[k] + width / 2
            ax.bar(
                px,
                vals.mean(),
                width,
                color=COLORS["published"],
                alpha=0.6,
                label=published_name if first else None,
            )
            many = len(vals) > 1
            ax.plot(
                np.full(len(vals), px),
                vals,
                "o",
                color="black",
                ms=3,
                label="published runs" if first_points and many else None,
            )
            first = False
            first_points = first_points and not many
    ax.set_xticks(x)
    ax.set_xticklabels(
        labels,
        rotation=20 if max(map(len, labels), default=0) > 10 else 0,
        ha="right" if max(map(len, labels), default=0) > 10 else "center",
    )
    ax.set_xlabel(label.replace("_", " "))
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    if title:
        ax.set_title(title)
    legend_above_data(ax)
    return ax


def legend_above_data(ax: Axes, *, share: float = 0.15, **kwargs: Any) -> Any:
    """The legend in one row in a band at the top of ``ax`` that holds no data: the value
    axis is extended (on its own scale, linear or log) so that the top ``share`` of the axes
    is above every bar and point drawn so far.  ``kwargs`` go to ``ax.legend``."""
    lo, hi = ax.get_ylim()
    scale = ax.yaxis.get_transform()
    a, b = scale.transform([lo, hi])
    top = scale.inverted().transform([b + (b - a) * share / (1 - share)])[0]
    ax.set_ylim(lo, top)
    handles, _ = ax.get_legend_handles_labels()
    kwargs.setdefault("loc", "upper left")
    kwargs.setdefault("ncols", max(1, len(handles)))
    return ax.legend(**kwargs)


@dataclass(frozen=True)
class PowerFit:
    """``y = 10**intercept * x**slope``, fitted by least squares on log10 of both."""

    slope: float
    intercept: float
    n: int

    def predict(self, x: Sequence[float] | np.ndarray) -> np.ndarray:
        """The fitted y at ``x``."""
        return 10**self.intercept * np.asarray(x, dtype=float) ** self.slope


def fit_power_law(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> PowerFit:
    """Fit ``log10 y = intercept + slope * log10 x``; needs two distinct positive x.

    Raises:
        ValueError: for non-positive values or fewer than two distinct x.
    """
    xa = np.asarray(x, dtype=float)
    ya = np.asarray(y, dtype=float)
    if xa.shape != ya.shape:
        raise ValueError("fit_power_law: x and y differ in length")
    if np.any(xa <= 0) or np.any(ya <= 0):
        raise ValueError("fit_power_law: x and y must be > 0 for log axes")
    if len(np.unique(xa)) < 2:
        raise ValueError("fit_power_law: needs at least two distinct x values")
    slope, intercept = np.polyfit(np.log10(xa), np.log10(ya), 1)
    return PowerFit(float(slope), float(intercept), int(xa.size))


def cost_vs_size(
    df: pd.DataFrame,
    *,
    x: str,
    y: str,
    group: str | None = None,
    low: str | None = None,
    high: str | None = None,
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    fit: bool = True,
    colors: Mapping[str, str] | None = None,
    ax: Axes | None = None,
) -> tuple[Axes, dict[str, PowerFit]]:
    """Cost ``y`` against size ``x`` on log-log axes, one line per ``group``, with fitted slopes.

    Args:
        df: tidy rows (several per x are summarised by their median).
        low, high: optional interval columns (absolute bounds) drawn as error bars.
        xlabel, ylabel: axis labels with units (required).
        fit: fit a power law per group (needs two distinct sizes) and show
            its slope in the legend, with the fitted line dashed.

    Returns:
        The Axes and {group: PowerFit} for the groups that could be fitted.
    """
    if not xlabel or not ylabel:
        raise ValueError("cost_vs_size: xlabel and ylabel (with units) are required")
    ax = _axes(ax)
    fits: dict[str, PowerFit] = {}
    groups: list[tuple[str, pd.DataFrame]] = (
        [(str(k), g) for k, g in df.groupby(group, sort=False)] if group else [("", df)]
    )
    cycle = plt.rcParams["axes.prop_cycle"].by_key().get("color", ["C0"])
    for k, (name, g) in enumerate(groups):
        color = (colors or {}).get(name, cycle[k % len(cycle)])
        agg = {y: "median"}
        if low:
            agg[low] = "median"
        if high:
            agg[high] = "median"
        s = g.groupby(x, sort=True).agg(agg).reset_index()
        label = name or y
        if fit and s[x].nunique() >= 2 and (s[x] > 0).all() and (s[y] > 0).all():
            pf = fit_power_law(s[x], s[y])
            fits[name] = pf
            label = f"{label} (slope {pf.slope:.2f})"
            xx = np.geomspace(s[x].min(), s[x].max(), 50)
            ax.plot(xx, pf.predict(xx), "--", color=color, alpha=0.6, lw=1)
        if low and high:
            yerr = np.vstack([(s[y] - s[low]).clip(lower=0), (s[high] - s[y]).clip(lower=0)])
            ax.errorbar(s[x], s[y], yerr=yerr, fmt="o-", color=color, label=label)
        else:
            ax.plot(s[x], s[y], "o-", color=color, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend()
    return ax, fits


def skipped(why: str) -> Figure:
    """A figure that says why it could not be drawn here (io_uring refused, ...)."""
    fig = Figure(figsize=(7, 1.2))
    ax = fig.subplots()
    ax.axis("off")
    ax.text(0.5, 0.5, f"not measured: {why}", ha="center", va="center")
    return fig


#: Font size (points) of the value written at the end of each bar of :func:`saving_bars`.
BAR_LABEL_SIZE = 8


def saving_bars(ax: Axes, table: object, title: str, *, log: bool = False) -> Axes:
    """Horizontal bars of instructions saved per call by function (``table``: ``function``
    and ``saved`` columns, before - after; a negative bar is work the change adds), the
    net saving in the title; ``log`` for savings of several orders of magnitude.  Each bar
    carries its value at its end, inside the axes: the x-axis leaves room for the labels on
    both sides, so a negative bar's label never runs into the function names."""
    t = table.sort_values("saved")  # type: ignore[attr-defined]
    colors = [COLORS["after"] if v >= 0 else COLORS["before"] for v in t["saved"]]
    ax.barh(t["function"], t["saved"], color=colors)
    labels = [f"{v:+,.0f}" for v in t["saved"]]
    for y, (v, text) in enumerate(zip(t["saved"], labels, strict=True)):
        ax.annotate(text, (v, y), xytext=(3 if v >= 0 else -3, 0),
                    textcoords="offset points", va="center", ha="left" if v >= 0 else "right",
                    fontsize=BAR_LABEL_SIZE)  # fmt: skip
    ax.axvline(0, color="black", lw=0.8)
    if log:
        ax.set_xscale("symlog", linthresh=10)
    neg = [text for v, text in zip(t["saved"], labels, strict=True) if v < 0]
    pos = [text for v, text in zip(t["saved"], labels, strict=True) if v >= 0]
    _room_for_labels(ax, min(0.0, t["saved"].min()), max(0.0, t["saved"].max()), neg, pos)
    ax.set_xlabel("guest instructions saved per call\n(before - after; < 0: the change adds)")
    ax.set_title(f"{title}\nnet {t['saved'].sum():+,.0f} per call", fontsize=10)
    return ax


def _room_for_labels(ax: Axes, lo: float, hi: float, left: list[str], right: list[str]) -> None:
    """Set the x-axis to span ``lo`` .. ``hi`` plus room for the longest of ``left`` (the
    labels left of their bars) and of ``right``, measured on the axis's own scale (linear or
    symlog) from the axes' width, less a fifth for the tick labels tight_layout makes room for."""
    if lo == hi:
        lo, hi = lo - 1.0, hi + 1.0
    width_pt = ax.figure.get_figwidth() * 72 * ax.get_position().width * 0.8
    per_char = 0.62 * BAR_LABEL_SIZE  # DejaVu Sans digits and signs, in points

    def share(texts: list[str]) -> float:
        if not texts:
            return 0.0
        return min(0.35, (max(map(len, texts)) * per_char + 6) / width_pt)

    f_lo, f_hi = share(left), share(right)
    scale = ax.xaxis.get_transform()
    a, b = scale.transform([lo, hi])
    span = (b - a) / (1 - f_lo - f_hi)
    x0, x1 = scale.inverted().transform([a - f_lo * span, b + f_hi * span])
    ax.set_xlim(x0, x1)


def errorbars(d: object, col: str = "median") -> list[object]:
    """``yerr`` for matplotlib from a table with ``col``, ``ci_low`` and ``ci_high``."""
    return [d[col] - d["ci_low"], d["ci_high"] - d[col]]  # type: ignore[index]


__all__ = [
    "COLORS",
    "apply_style",
    "errorbars",
    "fit_power_law",
    "legend_above_data",
    "ours_vs_published",
    "saving_bars",
    "skipped",
    "style",
]
