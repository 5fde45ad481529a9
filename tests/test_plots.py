"""Plot helpers: labelled axes, log scales, fitted slopes."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from labkit.report import plots  # noqa: E402


def test_fit_power_law_recovers_slope():
    x = np.array([1, 10, 100, 1000.0])
    fit = plots.fit_power_law(x, 3 * x**0.5)
    assert fit.slope == pytest.approx(0.5) and 10**fit.intercept == pytest.approx(3)
    assert fit.predict([100]) == pytest.approx([30])
    with pytest.raises(ValueError):
        plots.fit_power_law([1, 1], [2, 3])
    with pytest.raises(ValueError):
        plots.fit_power_law([1, 2], [0, 3])


def test_cost_vs_size_log_axes_labels_and_fits():
    sizes = [64, 4096, 65536, 1 << 20]
    df = pd.DataFrame(
        [
            {"size": s, "ns": 0.02 * s * f, "kind": k, "rep": r}
            for s in sizes
            for k, f in (("copy", 1.0), ("walk", 0.5))
            for r in range(3)
        ]
    )
    ax, fits = plots.cost_vs_size(
        df, x="size", y="ns", group="kind", xlabel="size (bytes)", ylabel="time (ns)"
    )
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "size (bytes)" and ax.get_ylabel() == "time (ns)"
    assert set(fits) == {"copy", "walk"}
    assert fits["copy"].slope == pytest.approx(1.0)
    assert any("slope 1.00" in t.get_text() for t in ax.get_legend().get_texts())
    plt.close("all")
    with pytest.raises(ValueError):
        plots.cost_vs_size(df, x="size", y="ns", xlabel="", ylabel="time")


def test_ours_vs_published_bars_intervals_and_points():
    ours = pd.DataFrame(
        {
            "label": ["head", "tail"],
            "median": [100.0, 200.0],
            "ci_low": [90.0, 180.0],
            "ci_high": [110.0, 230.0],
        }
    )
    pub = pd.DataFrame({"label": ["head", "tail", "tail"], "value": [120.0, 210.0, 220.0]})
    with plots.style():
        fig, ax = plt.subplots()
        out = plots.ours_vs_published(ours, pub, ylabel="time per read (ns)", ax=ax, log=True)
    assert out is ax
    assert ax.get_ylabel() == "time per read (ns)" and ax.get_xlabel() == "label"
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["head", "tail"]
    heights = sorted(round(p.get_height(), 6) for p in ax.patches)
    assert heights == [100.0, 120.0, 200.0, 215.0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"ours", "published", "published runs"} <= set(legend)
    plt.close(fig)
    with pytest.raises(ValueError):
        plots.ours_vs_published(ours, pub, ylabel="")


def test_style_is_scoped():
    before = plt.rcParams["axes.spines.top"]
    with plots.style():
        assert plt.rcParams["axes.spines.top"] is False
    assert plt.rcParams["axes.spines.top"] == before


def _drawn(fig):
    """The Agg renderer of ``fig``, drawn (text extents are known once drawn)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def test_saving_bars_keep_every_value_label_inside_the_axes():
    """A negative bar's value sits left of its bar: inside the axes, clear of the function
    names (on a linear and a symlog axis, and with no positive bar at all)."""
    import pandas as pd
    from matplotlib.figure import Figure

    from labkit.report.plots import saving_bars

    tables = [
        (
            pd.DataFrame(
                {
                    "function": ["__import_iovec_ubuf", "iov_iter_zero", "a"],
                    "saved": [-44.0, 22.0, 41.0],
                }
            ),
            False,
        ),  # fmt: skip
        (pd.DataFrame({"function": ["__import_iovec"], "saved": [-6.0]}), False),
        (
            pd.DataFrame(
                {"function": ["iov_iter_advance", "other"], "saved": [2_097_181.0, -166.0]}
            ),
            True,
        ),  # fmt: skip
    ]
    for table, log in tables:
        fig = Figure(figsize=(4.3, 3.6))
        ax = fig.subplots()
        saving_bars(ax, table, "t", log=log)
        renderer = _drawn(fig)
        fig.tight_layout()
        renderer = _drawn(fig)
        box = ax.get_window_extent(renderer)
        for text in ax.texts:
            t = text.get_window_extent(renderer)
            assert box.x0 <= t.x0 and t.x1 <= box.x1 + 0.5, (text.get_text(), t, box)
        names = [t.get_window_extent(renderer) for t in ax.get_yticklabels()]
        assert all(n.x1 <= box.x0 for n in names)


def test_the_oracle_vs_booted_legend_covers_no_bar():
    from matplotlib.patches import Rectangle

    from labkit.results.r2 import figures

    fig = figures.oracle_vs_booted(None)
    renderer = _drawn(fig)
    legend = fig.axes[0].get_legend().get_window_extent(renderer)
    bars = [p.get_window_extent(renderer) for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert bars and not any(legend.overlaps(b) for b in bars)


@pytest.mark.parametrize("log", [False, True])
def test_ours_vs_published_keeps_its_legend_above_every_bar(log):
    """The legend sits in a band at the top that holds no bar and no published point."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    ours = pd.DataFrame({"label": ["read", "readv -> UBUF", "readv -> IOVEC", "readv 2 x 2K"],
                         "median": [136.0, 174.0, 179.0, 199.0]})  # fmt: skip
    pub = pd.DataFrame({"label": ["read", "read", "readv -> UBUF"],
                        "value": [85.0, 86.0, 178.0]})  # fmt: skip
    fig = Figure(figsize=(6, 4.2))
    ax = fig.subplots()
    plots.ours_vs_published(ours, pub, ylabel="ns per call", ax=ax, log=log, title="t")
    renderer = _drawn(fig)
    legend = ax.get_legend().get_window_extent(renderer)
    drawn = [p.get_window_extent(renderer) for p in ax.patches if isinstance(p, Rectangle)]
    drawn += [line.get_window_extent(renderer) for line in ax.lines if len(line.get_xdata())]
    assert drawn and not any(legend.overlaps(b) for b in drawn)
