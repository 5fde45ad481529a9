"""labkit.teach.stepper: steps run the model; widgets where they can run, a drawing elsewhere."""

from __future__ import annotations

import base64

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

import labkit  # noqa: E402
from labkit.teach import stepper as st  # noqa: E402
from labkit.teach import viz  # noqa: E402

PAGE = labkit.PAGE_SIZE


def iovec(mem):
    m = mem.map(3 * PAGE)
    a = m.addr
    segs = [(a, 100), (a + 2000, 0), (a + PAGE, 200), (a + 2 * PAGE + 16, 150)]
    return labkit.import_iovec(labkit.ITER_DEST, segs, mem), m


def test_steps_run_the_model():
    mem = labkit.UserMemory()
    it, m = iovec(mem)
    twin, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    s.apply("advance", 150)
    twin.advance(150)
    assert s.state == viz.iter_state(twin)
    step = s.apply("copy", 120)
    assert step.returned == "120" and "copy_to_iter(120 bytes of value 255)" == step.label
    assert bytes(m.array[PAGE + 50 : PAGE + 170]) == b"\xff" * 120  # real bytes in the mapping
    twin.copy_to_iter(b"\0" * 120)
    s.apply("revert", 180)
    twin.revert(180)
    assert s.state == viz.iter_state(twin) and s.consumed() == 90
    s.apply("start")
    assert s.state.count == 450 and s.consumed() == 0
    assert [x.label for x in s.steps][0] == "start" and len(s.steps) == 5


def test_a_refused_step_says_why_and_changes_nothing():
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it)
    s.apply("advance", 30)
    before = s.state
    step = s.apply("revert", 1000)
    assert step.refused.startswith("IterMisuseError") and s.state == before
    assert "refused" in s.describe()
    assert s.apply("explode", 1).refused.startswith("ValueError: unknown operation")


def test_source_iterator_copies_out():
    k0 = bytearray(b"\x01" * 64)
    it = labkit.IovIter.kvec(labkit.ITER_SOURCE, [k0])
    s = st.stepper(it, nbytes=40)
    step = s.apply("copy")
    assert step.label == "copy_from_iter(40)" and step.returned == "40 bytes"
    assert s.state.count == 24


def test_without_widgets_it_shows_the_static_drawing(monkeypatch):
    monkeypatch.setattr(st, "widgets_available", lambda: False)
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    bundle = s._repr_mimebundle_()
    assert set(bundle) == {"image/png", "text/plain"}
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle["text/plain"].startswith("Stepper: start: IOVEC ITER_DEST count=450")
    assert s.widget() is None
    shown = _displayed(monkeypatch, s)
    assert [set(b) for b, _ in shown] == [{"image/png", "text/plain"}]


def _displayed(monkeypatch, s):
    """What ``s._ipython_display_()`` displays: [(bundle, handle or None)], and each handle's
    updates in ``handle.updates``."""
    import IPython.display as ipd

    shown = []

    class Handle:
        def __init__(self):
            self.updates = []

        def update(self, obj, **kwargs):
            assert kwargs.get("raw") is True
            self.updates.append(obj)

    def display(obj, raw=False, display_id=None):
        assert raw is True
        handle = Handle() if display_id else None
        shown.append((obj, handle))
        return handle

    monkeypatch.setattr(ipd, "display", display)
    s._ipython_display_()
    return shown


def test_with_widgets_the_buttons_step_and_redraw_the_drawing_in_place(monkeypatch):
    pytest.importorskip("ipywidgets")
    monkeypatch.setattr(st, "widgets_available", lambda: True)
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    shown = _displayed(monkeypatch, s)
    # the controls (a widget view, with a line of text where it cannot be shown), then the
    # drawing: an ordinary PNG output with a display id, which the notebook keeps when saved
    (controls, no_handle), (drawing, handle) = shown
    assert "application/vnd.jupyter.widget-view+json" in controls and no_handle is None
    assert controls["text/plain"] == st.CONTROLS_TEXT
    assert set(drawing) == {"image/png", "text/plain"} and handle is not None
    panel = s.widget()
    bar, line = panel.children
    slider, advance, revert, copy, start = bar.children
    assert copy.description == "copy_to_iter"
    slider.value = 150
    advance.click()
    assert s.state.count == 300 and s.state.seg == 2 and s.state.iov_offset == 50
    assert "advance(150)" in line.value
    assert len(handle.updates) == 1 and handle.updates[0]["image/png"] != drawing["image/png"]
    assert handle.updates[0]["text/plain"].startswith("Stepper: advance(150): IOVEC")
    revert.click()
    revert.click()  # past the start: refused, shown in red
    assert "refused" in line.value and "#b00020" in line.value and s.state.count == 450
    assert len(handle.updates) == 3 and "refused" in handle.updates[-1]["text/plain"]


def test_a_refused_step_fits_the_drawing():
    """The title of a refused step (a long reason) is wrapped inside the figure's width."""
    import matplotlib.pyplot as plt

    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    s.apply("revert", 1000)
    assert len(s.describe()) > st.TITLE_CHARS_PER_INCH * s.width  # long enough to need it
    fig = s.figure()
    try:
        from matplotlib.text import Text

        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ticks = {t for ax in fig.axes for a in (ax.xaxis, ax.yaxis) for t in a.get_ticklabels()}
        texts = [
            t
            for t in fig.findobj(Text)
            if t.get_text().strip() and t.get_visible() and t not in ticks
        ]
        assert any("refused" in t.get_text() and "\n" in t.get_text() for t in texts)
        for t in texts:  # no text runs off the figure, the title included
            box = t.get_window_extent(renderer)
            assert box.x0 >= 0 and box.x1 <= fig.bbox.x1, (t.get_text(), box, fig.bbox)
    finally:
        plt.close(fig)


def test_the_copy_label_names_the_byte_value():
    mem = labkit.UserMemory()
    it, _ = iovec(mem)
    s = st.stepper(it, contents=mem)
    assert s.apply("copy", 169).label == "copy_to_iter(169 bytes of value 255)"
    assert s.apply("copy", 10).label == "copy_to_iter(10 bytes of value 195)"
